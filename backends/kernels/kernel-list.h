/*
 * kernel-list.h - every kernel of kernels.h, declared once: its name and
 * its arguments.  From this one declaration come the kernel's entry
 * signature (SP_KERNEL_ENTRY, in the kernel body's file), the reference
 * executor's unpacker (reference-kernels.c), the OpenCL and CUDA kernel
 * tables (opencl.c, kernels.cu) and the driver's typed argument packer
 * (driver.c), so changing a kernel's arguments is an edit here plus its
 * body, and a body, packer or launch that disagrees fails to compile.
 * Plain preprocessor text: the OpenCL compiler reads it (embedded), the
 * CUDA plugin includes it from C++, the others from C.
 *
 * SP_ARGS_<name>(B, U) lists the arguments in order: B(type, arg) a device
 * buffer of `type` elements, U(arg) a 64-bit value.  Every argument is 8
 * bytes (struct kdev_arg).
 */
#ifndef SP_KERNEL_LIST_H
#define SP_KERNEL_LIST_H

#define SP_ARGS_sp_scatter(B, U) B(const u8, in), B(u8, pool), B(const u64, geo)
#define SP_ARGS_sp_codec_none(B, U)                                           \
	B(const u8, pool), B(u8, slots), B(u64, sizes), U(n), U(chunk_bytes), \
		U(capacity)
#define SP_ARGS_sp_agg_permute(B, U)                                          \
	B(const u64, sizes), B(const u32, perm), B(u64, psizes), U(M), U(n)
#define SP_ARGS_sp_agg_scan(B, U) B(const u64, psizes), B(u64, offsets), U(n)
#define SP_ARGS_sp_agg_gather(B, U)                                           \
	B(const u8, slots), B(const u64, sizes), B(const u32, perm),          \
		B(const u64, offsets), B(u8, out), U(M), U(n), U(capacity)
/* gzip in two kernels (doc/design.md §13.2): every 128 KiB part of a
 * batch's chunks as its own unit, its matches, parse and segment CRCs
 * into its chunk's results `res`, then each chunk's member from them. */
#define SP_ARGS_sp_gzip_units(B, U)                                           \
	B(const u8, pool), B(u8, res), B(u8, scratch), U(n), U(chunk_bytes),  \
		U(level)
#define SP_ARGS_sp_codec_gzip(B, U)                                           \
	B(const u8, pool), B(u8, slots), B(u64, sizes), B(u8, res),           \
		B(u8, scratch), U(n), U(chunk_bytes), U(capacity), U(level)
/* zstd and blosc in two kernels (doc/design.md §13.1): every block of a
 * batch's zstd frames as its own unit (the zstd level; blosc's element
 * size, shuffle and block size, or 1, 0, 0 for zstd), then the frames or
 * containers stitched from the units' `out` and usizes (the level word:
 * zstd's with the checksum bit SPZ_ARG_CHECKSUM_BIT, blosc's clevel). */
#define SP_ARGS_sp_zstd_units(B, U)                                           \
	B(const u8, pool), B(u8, out), B(u64, usizes), B(u8, scratch), U(n),  \
		U(chunk_bytes), U(level), U(typesize), U(mode), U(blocksize)
#define SP_ARGS_sp_codec_zstd(B, U)                                           \
	B(const u8, pool), B(u8, slots), B(u64, sizes), B(const u8, out),     \
		B(u64, usizes), U(n), U(chunk_bytes), U(capacity), U(level)
#define SP_ARGS_sp_codec_blosc(B, U)                                          \
	SP_ARGS_sp_codec_zstd(B, U), U(typesize), U(mode), U(blocksize)
#define SP_ARGS_sp_empty_chunks(B, U)                                         \
	B(const u8, pool), B(u64, sizes), B(const u64, geo), U(n),            \
		U(chunk_bytes)
/* One pyramid level's rows into the next's (reduce.h): g the table of
 * reduce_layout.h; carried (0 or 1) rows of carry before nrows of rows;
 * tail one of SP_RD_TAIL_*; nout output elements. */
#define SP_ARGS_sp_reduce(B, U)                                               \
	B(const u8, rows), B(const u8, carry), B(u8, out), B(const u64, g),   \
		U(nrows), U(carried), U(tail), U(nout)

/* X(name, args) for each kernel, in a fixed order (the kernel ids of
 * driver.h); args is SP_ARGS_<name>. */
#define SP_KERNEL_LIST(X)                                                     \
	X(sp_scatter, SP_ARGS_sp_scatter)                                     \
	X(sp_codec_none, SP_ARGS_sp_codec_none)                               \
	X(sp_agg_permute, SP_ARGS_sp_agg_permute)                             \
	X(sp_agg_scan, SP_ARGS_sp_agg_scan)                                   \
	X(sp_agg_gather, SP_ARGS_sp_agg_gather)                               \
	X(sp_gzip_units, SP_ARGS_sp_gzip_units)                               \
	X(sp_codec_gzip, SP_ARGS_sp_codec_gzip)                               \
	X(sp_zstd_units, SP_ARGS_sp_zstd_units)                               \
	X(sp_codec_zstd, SP_ARGS_sp_codec_zstd)                               \
	X(sp_codec_blosc, SP_ARGS_sp_codec_blosc)                             \
	X(sp_empty_chunks, SP_ARGS_sp_empty_chunks)                           \
	X(sp_reduce, SP_ARGS_sp_reduce)

/* A kernel body's entry, in the prelude's dialect:
 *     SP_KERNEL_ENTRY(sp_scatter) { ... } */
#define SP_KERNEL_PARAM_B(type, arg) GLOBAL type *arg
#define SP_KERNEL_PARAM_U(arg) u64 arg
#define SP_KERNEL_ENTRY(name)                                                 \
	KERNEL name(SP_ARGS_##name(SP_KERNEL_PARAM_B, SP_KERNEL_PARAM_U))
/* The same for the encoders: ENCODER_KERNEL carries CUDA's launch
 * bounds, which hold each to 128 registers (t/cuda-resources.sh). */
#define SP_ENCODER_ENTRY(name)                                                \
	ENCODER_KERNEL name(SP_ARGS_##name(SP_KERNEL_PARAM_B, SP_KERNEL_PARAM_U))

#endif
