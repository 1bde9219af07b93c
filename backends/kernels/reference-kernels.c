/*
 * reference-kernels.c - the kernels compiled by the C compiler
 * (doc/design.md §7, §12): this file is the only C-specific
 * part, a table of calls that unpack the driver's arguments, each
 * generated from the kernel's declaration in kernel-list.h.
 */
#include "prelude-c.h"
#include "kernels.h"

#include "reference-kernels.h"

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

int ref_kernel_run(unsigned id, const struct kdev_arg *args, uint64_t groups,
		   struct sp_err *err)
{
	SP_RETURN_IF(id >= KDEV_NKERNELS, err, SHARDPIPE_ERR_DEVICE,
		     "reference: no kernel %u", id);
	for (uint64_t g = 0; g < groups; g++) {
		sp_ref_item.group = g;
		sp_ref_item.groups = groups;
		calls[id](args);
	}
	return SHARDPIPE_OK;
}
