/*
 * reference-calls.h - the C build's table of kernel calls, one unpacker per
 * kernel generated from its declaration in kernel-list.h, for the file
 * that includes it after a C prelude and kernels.h: the reference
 * executor (reference-kernels.c) and its profiling build
 * (reference-profile.c) each have their own.
 */
#ifndef SHARDPIPE_REFERENCE_CALLS_H
#define SHARDPIPE_REFERENCE_CALLS_H

#include "driver.h"

/* An argument's position is an enumerator named for it, local to its
 * unpacker, so the unpacking follows the declared order. */
#define REF_POS_B(type, arg) ref_pos_##arg
#define REF_POS_U(arg) ref_pos_##arg
#define REF_GET_B(type, arg) (GLOBAL type *)a[ref_pos_##arg].buf
#define REF_GET_U(arg) a[ref_pos_##arg].u64
#define REF_CALL(name, args)                                                  \
	static void call_##name(const struct kdev_arg *a)                     \
	{                                                                     \
		enum { args(REF_POS_B, REF_POS_U) };                          \
		name(args(REF_GET_B, REF_GET_U));                             \
	}
SP_KERNEL_LIST(REF_CALL)

#define REF_ENTRY(name, args) call_##name,
static void (*const calls[KDEV_NKERNELS])(const struct kdev_arg *) = {
	SP_KERNEL_LIST(REF_ENTRY)
};

#endif
