/*
 * prelude-cuda.h - the kernel dialect mapped onto CUDA C++ (nvcc).
 *
 * Kernels are extern "C", so that their names in the fat binary are the
 * plain names of kernel-list.h (t/cuda-kernels.sh reads them there); the
 * cuda plugin launches them through the host stubs that
 * backends/cuda/kernels.cu lists in the same order.
 */
#ifndef SP_PRELUDE_H
#define SP_PRELUDE_H

#define SP_TARGET_CUDA 1

typedef unsigned char u8;
typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
typedef int i32;
typedef long long i64;
/* Word types for copies that reinterpret byte buffers. */
typedef unsigned short w16;
typedef unsigned int w32;
typedef unsigned long long w64;

/* Words read from byte buffers (NVIDIA GPUs are little-endian), and the
 * index of the lowest set bit of a nonzero word. */
#define LE64(x) ((u64)(x))
#define CTZ64(x) ((u32)(__ffsll((long long)(x)) - 1))
#define CLZ64(x) ((u32)__clzll((long long)(x)))

#define KERNEL extern "C" __global__ void
/* An encoder: two groups of SP_WG_MAX (256) items per SM hold at most 128
 * registers each, which ptxas must then meet without spilling
 * (t/cuda-resources.sh). */
#define ENCODER_KERNEL extern "C" __global__ void __launch_bounds__(256, 2)
#define DEVICE_FN static __device__ __forceinline__
/* A function kept out of line.  CUDA 13's cicc, inlining the zstd table
 * build into its callers with the predefined distributions as constants,
 * gave different PTX from identical runs (a load vectorised or not), so
 * the CUDA plugin's package did not build reproducibly (design §25.4). */
#define DEVICE_FN_OUTLINED static __device__ __noinline__
#define GLOBAL
#define LOCAL
#define CONSTANT_DATA __constant__
#define LOCAL_ARRAY(type, name, n) __shared__ type name[n]

#define LOCAL_ID() ((u64)threadIdx.x)
#define LOCAL_SIZE() ((u64)blockDim.x)
#define GROUP_ID() ((u64)blockIdx.x)
#define NUM_GROUPS() ((u64)gridDim.x)
#define GLOBAL_ID() (GROUP_ID() * LOCAL_SIZE() + LOCAL_ID())
#define GLOBAL_SIZE() (NUM_GROUPS() * LOCAL_SIZE())

#define BARRIER() __syncthreads()

/* Atomic updates of a u32 in local (shared) memory. */
#define LOCAL_ADD(p, v) ((void)atomicAdd((p), (v)))
#define LOCAL_MAX(p, v) ((void)atomicMax((p), (v)))

/* The work profile's marks count only in the reference executor's
 * profiling build (prelude-c.h). */
#define WORK(n) ((void)0)
#define PHASE(name) ((void)0)
#define UNIT() ((void)0)

#endif
