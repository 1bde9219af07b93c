/*
 * prelude-c.h - the kernel dialect mapped onto plain C: the kernel
 * reference executor (doc/design.md §12 "The reference executor").
 *
 * Every work-group runs with a single work-item, one group after the
 * other, so LOCAL_ID() is 0, LOCAL_SIZE() is 1, barriers have nothing to
 * wait for and a local array is an ordinary automatic one.  The executor
 * sets the group coordinates before each call (reference-kernels.c).
 */
#ifndef SP_PRELUDE_H
#define SP_PRELUDE_H

#include <stdint.h>

#define SP_TARGET_C 1

typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t i32;
typedef int64_t i64;
/* Word types for copies that reinterpret byte buffers: may_alias keeps
 * the C compiler's type-based alias analysis from reordering them. */
typedef uint16_t __attribute__((__may_alias__)) w16;
typedef uint32_t __attribute__((__may_alias__)) w32;
typedef uint64_t __attribute__((__may_alias__)) w64;

#define KERNEL static void
#define ENCODER_KERNEL static void
#define DEVICE_FN static inline
#define GLOBAL
#define LOCAL
#define CONSTANT_DATA static const
#define LOCAL_ARRAY(type, name, n) type name[n]

/* The group being run; per thread, so that independent streams may run
 * the reference backend concurrently. */
struct sp_ref_item {
	u64 group;
	u64 groups;
};
static _Thread_local struct sp_ref_item sp_ref_item;

#define LOCAL_ID() ((u64)0)
#define LOCAL_SIZE() ((u64)1)
#define GROUP_ID() (sp_ref_item.group)
#define NUM_GROUPS() (sp_ref_item.groups)
#define GLOBAL_ID() (sp_ref_item.group)
#define GLOBAL_SIZE() (sp_ref_item.groups)

#define BARRIER() ((void)0)

/* Bit counts of a nonzero 64-bit word. */
#define CLZ64(x) ((u32)__builtin_clzll(x))
#define CTZ64(x) ((u32)__builtin_ctzll(x))
/* Kernels read words out of byte buffers as little-endian, as the
 * devices store them; on a big-endian host the C build swaps. */
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LE64(x) __builtin_bswap64(x)
#else
#define LE64(x) (x)
#endif
/* Atomic updates of a u32 in local memory: plain ones, since the items of
 * a group run one at a time. */
#define LOCAL_ADD(p, v) ((void)(*(p) += (v)))
#define LOCAL_MAX(p, v) ((void)(*(p) < (v) ? *(p) = (v) : 0))

#endif
