/*
 * prelude-c.h - the kernel dialect mapped onto plain C: the kernel
 * reference executor (doc/design.md §12 "The reference executor").
 *
 * Every work-group runs with a single work-item, one group after the
 * other, so LOCAL_ID() is 0, LOCAL_SIZE() is 1, barriers have nothing to
 * wait for and a local array is an ordinary automatic one.  The executor
 * sets the group coordinates before each call (reference-kernels.c).
 * With SP_REF_PROFILE defined, the same kernels are built for the
 * profiling executor instead (reference-profile.c): groups of many
 * work-items, and their work counted.
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

/* Words read from byte buffers, in little-endian order on any host, and
 * the index of the lowest (highest) set bit of a nonzero word, counted
 * from the low (high) end. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LE64(x) ((u64)__builtin_bswap64(x))
#else
#define LE64(x) ((u64)(x))
#endif
#define CTZ64(x) ((u32)__builtin_ctzll(x))
#define CLZ64(x) ((u32)__builtin_clzll(x))

#define KERNEL static void
#define ENCODER_KERNEL static void
#define DEVICE_FN static inline
#define DEVICE_FN_OUTLINED static inline /* out of line for nvcc only */
#define GLOBAL
#define LOCAL
#define CONSTANT_DATA static const

#ifndef SP_REF_PROFILE
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
#define LOCAL_ARRAY(type, name, n) type name[n]
#else
/*
 * The profiling executor (reference-profile.c, doc/design.md §12.1): a
 * group runs as LOCAL_SIZE() work-items, each a coroutine of its own that
 * BARRIER() suspends until every item of the group has reached it.  Local
 * arrays are the group's, in one arena: every item declares the same ones
 * in the same order and gets the same addresses.
 */
struct sp_ref_item {
	u64 group;
	u64 groups;
	u64 lid;          /* the item running */
	u64 ls;           /* items in the group */
	u64 work;         /* the running item's work since its last barrier */
	const char *phase; /* the group's phase, named by PHASE() */
};
static _Thread_local struct sp_ref_item sp_ref_item;

static void sp_prof_barrier(void);
static void sp_prof_unit(void);
static void *sp_prof_local(u64 bytes);

#define LOCAL_ID() (sp_ref_item.lid)
#define LOCAL_SIZE() (sp_ref_item.ls)
#define GROUP_ID() (sp_ref_item.group)
#define NUM_GROUPS() (sp_ref_item.groups)
#define GLOBAL_ID() (sp_ref_item.group * sp_ref_item.ls + sp_ref_item.lid)
#define GLOBAL_SIZE() (sp_ref_item.groups * sp_ref_item.ls)

#define BARRIER() sp_prof_barrier()
#define LOCAL_ARRAY(type, name, n)                                            \
	type *name = (type *)sp_prof_local(sizeof(type) * (u64)(n))
#endif

/*
 * The work profile's marks (doc/design.md §12.1); nothing in the other
 * preludes.  WORK(n): the running item did n units of work (§12.2 says
 * what one unit is).  PHASE(name): the work from the last barrier on
 * belongs to the phase of that name (a string literal).  UNIT(): every
 * item of the group begins one independent unit of work, such as one
 * chunk of a group-stride loop.
 */
#ifdef SP_REF_PROFILE
#define WORK(n) ((void)(sp_ref_item.work += (u64)(n)))
#define PHASE(name) ((void)(sp_ref_item.phase = (name)))
#define UNIT() sp_prof_unit()
#else
#define WORK(n) ((void)0)
#define PHASE(name) ((void)0)
#define UNIT() ((void)0)
#endif

/* Atomic updates of a u32 in local memory: plain ones, since the items of
 * a group run one at a time (in the profile, taking turns at barriers). */
#define LOCAL_ADD(p, v) ((void)(*(p) += (v)))
#define LOCAL_MAX(p, v) ((void)(*(p) < (v) ? *(p) = (v) : 0))

#endif
