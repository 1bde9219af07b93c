/*
 * kernels.cu - the portable kernels (backends/kernels/) compiled by nvcc
 * for the cuda plugin, and the table through which the host adapter
 * (cuda.c, plain C) finds them: the host stubs nvcc generates, in the
 * order of SP_KERNEL_LIST.  Nothing else CUDA-specific lives here.
 */
#include "prelude-cuda.h"
#include "kernels.h"
#include "kernel-list.h"

#define SP_CUDA_ENTRY(name, args) (const void *)name,

extern "C" __attribute__((visibility("hidden")))
const void *const sp_cuda_kernel_table[] = { SP_KERNEL_LIST(SP_CUDA_ENTRY) };

extern "C" __attribute__((visibility("hidden")))
const unsigned sp_cuda_kernel_count =
	sizeof(sp_cuda_kernel_table) / sizeof(sp_cuda_kernel_table[0]);
