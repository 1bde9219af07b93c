/*
 * kernel-list.h - every kernel of kernels.h, once: its name and its
 * argument signature ('b' a device buffer, 'u' a 64-bit value; every
 * argument is 8 bytes, see struct kdev_arg).  The OpenCL and CUDA plugins
 * and the reference executor build their kernel tables from this list, so
 * a new kernel is one line here plus its body.  Plain preprocessor text:
 * the CUDA plugin includes it from C++, the others from C.
 */
#ifndef SP_KERNEL_LIST_H
#define SP_KERNEL_LIST_H

/* X(name, signature) for each kernel, in a fixed order. */
#define SP_KERNEL_LIST(X)                                                     \
	X(sp_scatter, "bbb")                                                  \
	X(sp_codec_none, "bbbuuu")                                            \
	X(sp_agg_permute, "bbbuu")                                            \
	X(sp_agg_scan, "bbu")                                                 \
	X(sp_agg_gather, "bbbbbuuu")                                          \
	X(sp_codec_gzip, "bbbbuuuu")                                          \
	X(sp_codec_zstd, "bbbbuuuu")                                          \
	X(sp_codec_blosc, "bbbbuuuuuuu")

#endif
