/*
 * gzip-kernel.h - what the gzip tests share: the deflate kernel compiled
 * as C (the kernel reference executor's dialect) and called directly, one
 * work-group of one work-item per chunk, and the checks of one member
 * against the independent decoders.
 */
#ifndef SHARDPIPE_T_GZIP_KERNEL_H
#define SHARDPIPE_T_GZIP_KERNEL_H

#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>
#include <zlib.h>

#include "prelude-c.h"
#include "geometry.h"
#include "deflate.h"

#include "tap.h"
#include "testutil.h"

/* The project's slot capacity for gzip (src/codec.c, codec_bound). */
static inline uint64_t gz_codec_bound(uint64_t n)
{
	return n + 5 * (n / 4096 + 1) + 18 + 16;
}

/*
 * Encode `count` chunks of n bytes from src with the kernels as the
 * reference executor runs them, over `groups` work-groups each, one
 * scratch serving both; member j goes to out + j * cap, its size to
 * sizes[j].
 */
static inline void gz_encode_chunks(const uint8_t *src, uint64_t n,
				    uint64_t count, int level, uint64_t groups,
				    uint8_t *out, uint64_t cap, uint64_t *sizes)
{
	uint64_t uper = SP_DEFL_USCRATCH_BYTES(n);
	uint64_t cper = SP_DEFL_SCRATCH_BYTES(n);
	uint8_t *scratch = test_xmalloc((uper > cper ? uper : cper) * groups);
	uint8_t *res = test_xmalloc(SP_DEFL_RES_BYTES(n) * count);
	uint8_t *copy = NULL;

	/* The kernel reads its input a word at a time from a base that is
	 * 8-byte aligned, as device buffers are: a chunk taken from the
	 * middle of a caller's buffer is encoded from an aligned copy. */
	if ((uintptr_t)src & 7) {
		copy = test_xmalloc(n * count);
		memcpy(copy, src, n * count);
		src = copy;
	}
	sp_ref_item.groups = groups;
	for (uint64_t g = 0; g < groups; g++) {
		sp_ref_item.group = g;
		sp_gzip_units(src, res, scratch, count, n, (u64)level);
	}
	for (uint64_t g = 0; g < groups; g++) {
		sp_ref_item.group = g;
		sp_codec_gzip(src, out, sizes, res, scratch, count, n, cap,
			      (u64)level);
	}
	free(copy);
	free(res);
	free(scratch);
}

/* One chunk; returns the member's size. */
static inline uint64_t gz_encode(const uint8_t *src, uint64_t n, int level,
				 uint8_t *out, uint64_t cap)
{
	uint64_t size = 0;

	gz_encode_chunks(src, n, 1, level, 1, out, cap, &size);
	return size;
}

/*
 * The member in enc[0..size) against its input: within both bounds, a
 * plain RFC 1952 header, decoded equal by zlib and by libdeflate with no
 * byte left over, and its trailer's CRC-32 equal to zlib's.  One TAP test.
 */
static inline int gz_check_member(const char *label, const uint8_t *in,
				  uint64_t n, const uint8_t *enc,
				  uint64_t size)
{
	static const uint8_t head[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255 };
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	uint8_t *back = test_xmalloc(n + 1);
	size_t in_used = 0, got = 0;
	enum libdeflate_result r;
	const char *why = NULL;
	uint32_t crc;

	if (d == NULL)
		bail("out of memory for a libdeflate decompressor");
	if (size > SP_DEFL_BOUND(n))
		why = "larger than SP_DEFL_BOUND";
	else if (size > gz_codec_bound(n))
		why = "larger than codec_bound";
	else if (size < 20 || memcmp(enc, head, 10) != 0)
		why = "bad gzip header";
	if (why == NULL && test_decode(2, enc, size, back, n) != n)
		why = "zlib: does not decode to the input's length";
	if (why == NULL && memcmp(back, in, n) != 0)
		why = "zlib: decodes to other bytes";
	if (why == NULL) {
		memset(back, 0, n);
		r = libdeflate_gzip_decompress_ex(d, enc, size, back, n,
						  &in_used, &got);
		if (r != LIBDEFLATE_SUCCESS || got != n || in_used != size)
			why = "libdeflate: does not decode";
		else if (memcmp(back, in, n) != 0)
			why = "libdeflate: decodes to other bytes";
	}
	crc = (uint32_t)crc32(0L, in, (uInt)n);
	if (why == NULL &&
	    (enc[size - 8] | enc[size - 7] << 8 | enc[size - 6] << 16 |
	     (uint32_t)enc[size - 5] << 24) != crc)
		why = "trailer CRC-32 differs from zlib's";
	libdeflate_free_decompressor(d);
	free(back);
	if (!ok(why == NULL, "%s: %llu -> %llu bytes decode", label,
		(unsigned long long)n, (unsigned long long)size))
		diag("%s", why);
	return why == NULL;
}

#endif
