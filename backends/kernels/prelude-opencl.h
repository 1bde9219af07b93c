/*
 * prelude-opencl.h - the kernel dialect mapped onto OpenCL C 1.2.
 *
 * Kernel bodies under backends/kernels/ are written against these names
 * only; prelude-cuda.h and prelude-c.h give the same names for the other
 * two compilers.  Only 1-dimensional NDRanges are used.
 */
#ifndef SP_PRELUDE_H
#define SP_PRELUDE_H

#define SP_TARGET_OPENCL 1

typedef uchar u8;
typedef ushort u16;
typedef uint u32;
typedef ulong u64;
typedef int i32;
typedef long i64;
/* Word types for copies that reinterpret byte buffers. */
typedef ushort w16;
typedef uint w32;
typedef ulong w64;

/* Words read from byte buffers, in little-endian order on any device, and
 * the index of the lowest set bit of a nonzero word (OpenCL 1.2 has clz
 * only). */
#ifdef __ENDIAN_LITTLE__
#define LE64(x) ((u64)(x))
#else
#define LE64(x) as_ulong(as_uchar8((u64)(x)).s76543210)
#endif
#define CTZ64(x) ((u32)(63 - clz((u64)(x) & (0 - (u64)(x)))))
#define CLZ64(x) ((u32)clz((u64)(x)))

#define KERNEL __kernel void
#define ENCODER_KERNEL __kernel void
/* Every device function inlined by the front end, as nvcc's
 * __forceinline__ does: left to the optimiser's inliner, PoCL 3.1 (LLVM
 * 15) segfaulted compiling the zstd encoder once its parse grew (the
 * seeded segments and chained candidates of zstd_match.h; bench/README.md,
 * issue 22), in LLVM's legacy inliner cloning a callee, wherever the code
 * changed.  With nothing left to inline there, it compiles. */
#define DEVICE_FN static inline __attribute__((always_inline))
#define DEVICE_FN_OUTLINED static inline /* out of line for nvcc only */
#define GLOBAL __global
#define LOCAL __local
#define CONSTANT_DATA __constant
/* Local memory must be declared at kernel scope (OpenCL C 6.5.2). */
#define LOCAL_ARRAY(type, name, n) __local type name[n]

#define GLOBAL_ID() ((u64)get_global_id(0))
#define GLOBAL_SIZE() ((u64)get_global_size(0))
#define LOCAL_ID() ((u64)get_local_id(0))
#define LOCAL_SIZE() ((u64)get_local_size(0))
#define GROUP_ID() ((u64)get_group_id(0))
#define NUM_GROUPS() ((u64)get_num_groups(0))

/* Every barrier fences both address spaces: phases of a work-group hand
 * data over through either. */
#define BARRIER() barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE)

/* Atomic updates of a u32 in local memory (OpenCL C 1.1 core). */
#define LOCAL_ADD(p, v) ((void)atomic_add((volatile __local uint *)(p), (v)))
#define LOCAL_MAX(p, v) ((void)atomic_max((volatile __local uint *)(p), (v)))

/* The work profile's marks count only in the reference executor's
 * profiling build (prelude-c.h). */
#define WORK(n) ((void)0)
#define PHASE(name) ((void)0)
#define UNIT() ((void)0)

#endif
