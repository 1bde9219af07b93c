/*
 * zstd-common.h - what the zstd kernel tests share: the kernel compiled as
 * C (the reference executor's dialect) run in-process on one chunk, a
 * decoder check against libzstd, a look inside a frame's first literals
 * section, and the data generators.  Included by one test program each.
 */
#ifndef SHARDPIPE_T_ZSTD_COMMON_H
#define SHARDPIPE_T_ZSTD_COMMON_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "prelude-c.h"
#include "geometry.h"
#include "zstd_units.h"
#include "zstd_encode.h"

#include "tap.h"
#include "testutil.h"

/* ZSTD_COMPRESSBOUND as src/codec.c writes it: the slot capacity. */
static inline uint64_t zt_bound(uint64_t n)
{
	return n + (n >> 8) + (n < (128u << 10) ? ((128u << 10) - n) >> 11 : 0);
}

static uint8_t *zt_scratch;

/* The kernel's codec word: the level, and the checksum bit. */
static inline uint64_t zt_word(int level, int checksum)
{
	return (uint64_t)(uint32_t)level |
	       (uint64_t)(checksum != 0) << SPZ_ARG_CHECKSUM_BIT;
}

/*
 * Encode n bytes as the reference executor does (one group, one item):
 * the blocks as units (sp_zstd_units), then the frame (sp_codec_zstd),
 * into a slot of bound(n) bytes followed by a guard zone that must stay
 * untouched.  word: zt_word().  Returns the frame size; *guard_ok tells
 * the guard's fate.
 */
#define ZT_GUARD 4096
static inline uint64_t zt_encode_word(const uint8_t *src, uint64_t n,
				      uint8_t *slot, uint64_t word,
				      int *guard_ok)
{
	uint64_t size = 0, cap = zt_bound(n);
	/* The chunk and the units' output alone in their allocations, so
	 * that a sanitizer or valgrind sees any access past their ends. */
	uint8_t *chunk = test_xmalloc(n), *out = test_xmalloc(n);
	uint64_t *usizes = test_xmalloc(SPZ_NBLOCKS(n) * sizeof(*usizes));

	if (zt_scratch == NULL)
		zt_scratch = test_xmalloc(SPZ_SCRATCH_BYTES);
	memcpy(chunk, src, n);
	memset(slot + cap, 0xA5, ZT_GUARD);
	sp_ref_item.group = 0;
	sp_ref_item.groups = 1;
	sp_zstd_units(chunk, out, usizes, zt_scratch, 1, n,
		      (u64)(uint32_t)word, 1, SPB_NOSHUFFLE, 0);
	sp_codec_zstd(chunk, slot, &size, out, usizes, 1, n, cap, (u64)word);
	free(chunk);
	free(out);
	free(usizes);
	*guard_ok = 1;
	for (size_t i = 0; i < ZT_GUARD; i++)
		if (slot[cap + i] != 0xA5)
			*guard_ok = 0;
	return size;
}

static inline uint64_t zt_encode(const uint8_t *src, uint64_t n,
				 uint8_t *slot, int level, int *guard_ok)
{
	return zt_encode_word(src, n, slot, zt_word(level, 0), guard_ok);
}

/* Decode with libzstd and compare; 1 when the frame is exact. */
static inline int zt_check(const char *what, const uint8_t *src,
			   uint64_t n, const uint8_t *frame, uint64_t size)
{
	uint8_t *back = test_xmalloc(n + 1);
	unsigned long long fcs = ZSTD_getFrameContentSize(frame, size);
	size_t r = ZSTD_decompress(back, n + 1, frame, size);
	int good = 1;

	if (fcs != n) {
		diag("%s: frame content size %llu, want %llu", what, fcs,
		     (unsigned long long)n);
		good = 0;
	} else if (ZSTD_isError(r)) {
		diag("%s: libzstd: %s", what, ZSTD_getErrorName(r));
		good = 0;
	} else if (r != n) {
		diag("%s: decoded %zu bytes, want %llu", what, r,
		     (unsigned long long)n);
		good = 0;
	} else if (n > 0 && memcmp(back, src, n) != 0) {
		for (size_t i = 0; i < n; i++)
			if (back[i] != src[i]) {
				diag("%s: first difference at %zu: got 0x%02x, "
				     "want 0x%02x", what, i, back[i], src[i]);
				break;
			}
		good = 0;
	}
	free(back);
	return good;
}

/* What the first block's literals section says (compressed blocks). */
struct zt_lits {
	int block_type;   /* 0 raw, 1 RLE, 2 compressed */
	int lit_type;     /* 0 raw, 1 RLE, 2 Huffman */
	int streams;      /* 1 or 4 (Huffman) */
	unsigned regen;   /* literals */
	int fse_weights;  /* Huffman weights FSE-compressed */
};

static inline struct zt_lits zt_inspect(const uint8_t *f)
{
	struct zt_lits l = { -1, -1, 0, 0, 0 };
	static const int fcs_len[4] = { 1, 2, 4, 8 };
	const uint8_t *b = f + 5 + fcs_len[f[4] >> 6];
	const uint8_t *h = b + 3;
	int sf;

	l.block_type = (b[0] >> 1) & 3;
	if (l.block_type != 2)
		return l;
	l.lit_type = h[0] & 3;
	sf = (h[0] >> 2) & 3;
	if (l.lit_type < 2) {
		l.regen = sf == 1 ? (h[0] >> 4) | h[1] << 4 :
			  sf == 3 ? (h[0] >> 4) | h[1] << 4 | h[2] << 12 :
				    h[0] >> 3;
		return l;
	}
	l.streams = sf == 0 ? 1 : 4;
	if (sf <= 1) {
		l.regen = ((h[0] >> 4) | h[1] << 4) & 0x3FF;
		l.fse_weights = h[3] < 128;
	} else if (sf == 2) {
		l.regen = ((h[0] >> 4) | h[1] << 4 | h[2] << 12) & 0x3FFF;
		l.fse_weights = h[4] < 128;
	} else {
		l.regen = ((h[0] >> 4) | h[1] << 4 | h[2] << 12) & 0x3FFFF;
		l.fse_weights = h[5] < 128;
	}
	return l;
}

/* --------------------------------------------------------- generators */

/*
 * Microscopy-like uint16 frames: Gaussian blobs over a background, with
 * shot noise.  Not bench's "micro" fill (bench/fill.c), which the demo
 * uses: that one scales its blobs with the frame and drifts them
 * differently, and the ratios shardpipe(1) quotes for the zstd kernel were
 * measured on these bytes, so they stay as they are.
 */
static inline void zt_microscopy(uint16_t *f, int side, int t)
{
	uint64_t rng = 0x5eed0000ull + 977;
	float *acc = calloc((size_t)side * side, sizeof(float));

	if (acc == NULL)
		bail("out of memory");
	for (int b = 0; b < 40; b++) {
		double cx = (double)(test_rand(&rng) % side) + 3.0 * t;
		double cy = (double)(test_rand(&rng) % side) + 1.5 * t;
		double r = 20.0 + (double)(test_rand(&rng) % 60);
		double amp = 300.0 + (double)(test_rand(&rng) % 2000);

		for (int y = (int)(cy - 3 * r) < 0 ? 0 : (int)(cy - 3 * r);
		     y < side && y <= (int)(cy + 3 * r); y++)
			for (int x = (int)(cx - 3 * r) < 0 ? 0 : (int)(cx - 3 * r);
			     x < side && x <= (int)(cx + 3 * r); x++) {
				double dx = x - cx, dy = y - cy;

				acc[(size_t)y * side + x] += (float)(amp *
					exp(-(dx * dx + dy * dy) / (2 * r * r)));
			}
	}
	rng = 0xc0ffee00ull + (uint64_t)t;
	for (size_t i = 0; i < (size_t)side * side; i++) {
		double s = 100.0 + acc[i];
		uint64_t u = test_rand(&rng);
		double g = ((double)(u & 0xffff) + (double)((u >> 16) & 0xffff) +
			    (double)((u >> 32) & 0xffff) + (double)(u >> 48)) /
				   65536.0 - 2.0;
		double v = s + g * 1.732 * sqrt(s);

		f[i] = (uint16_t)(v < 0 ? 0 : v > 65535 ? 65535 : v);
	}
	free(acc);
}

/* Uniform 12-bit samples in uint16 little-endian. */
static inline void zt_noise12(uint8_t *p, size_t n, uint64_t *rng)
{
	for (size_t i = 0; i + 1 < n; i += 2) {
		uint16_t v = (uint16_t)(test_rand(rng) & 0xFFF);

		p[i] = (uint8_t)v;
		p[i + 1] = (uint8_t)(v >> 8);
	}
	if (n & 1)
		p[n - 1] = (uint8_t)test_rand(rng);
}

/*
 * Random data of one of ZT_DISTS kinds: 0 uniform bytes, 1 small
 * alphabet, 2 skewed (geometric) bytes over 0..255, 3 text-like words,
 * 4 repeats of earlier data with mutations, 5 runs, 6 sparse, 7 smooth
 * uint16, 8 12-bit noise, 9 segmentation-like uint32 labels (runs of zero
 * and of one 24-bit id, each run's id drawn from a few recent ones): many
 * short sequences, most at one offset, which fitted tables and repeat
 * codes are for.
 */
#define ZT_DISTS 10
static inline void zt_fill(uint8_t *p, size_t n, int kind, uint64_t *rng)
{
	static const char *const words[] = {
		"shard ", "chunk ", "zarr ", "array ", "the ", "of ", "and ",
		"index ", "offset ", "codec ", "block ", "stream ", "epoch ",
	};
	unsigned alpha = 2 + (unsigned)(test_rand(rng) % 40);
	size_t i = 0;

	switch (kind) {
	case 0:
		for (; i < n; i++)
			p[i] = (uint8_t)test_rand(rng);
		break;
	case 1:
		for (; i < n; i++)
			p[i] = (uint8_t)('a' + test_rand(rng) % alpha);
		break;
	case 2:
		for (; i < n; i++) {
			unsigned v = 0;

			while (v < 255 && test_rand(rng) % 8 != 0)
				v += 1 + (unsigned)(test_rand(rng) % 4);
			p[i] = (uint8_t)(v > 255 ? 255 : v);
		}
		break;
	case 3:
		while (i < n) {
			const char *w = words[test_rand(rng) % 13];

			for (; *w && i < n; w++)
				p[i++] = (uint8_t)*w;
		}
		break;
	case 4:
		for (; i < n && i < 64; i++)
			p[i] = (uint8_t)test_rand(rng);
		while (i < n) {
			size_t back = 1 + test_rand(rng) % (i < 70000 ? i : 70000);
			size_t len = 3 + test_rand(rng) % 300;

			for (size_t k = 0; k < len && i < n; k++, i++)
				p[i] = test_rand(rng) % 50 == 0 ?
					       (uint8_t)test_rand(rng) :
					       p[i - back];
		}
		break;
	case 5:
		while (i < n) {
			uint8_t v = (uint8_t)test_rand(rng);
			size_t len = 1 + test_rand(rng) % 2000;

			for (size_t k = 0; k < len && i < n; k++)
				p[i++] = v;
		}
		break;
	case 6:
		for (; i < n; i++)
			p[i] = test_rand(rng) % 61 == 0 ? (uint8_t)test_rand(rng)
							: 0;
		break;
	case 7: {
		double x = 1000;

		for (; i + 1 < n; i += 2) {
			x += (double)(test_rand(rng) % 21) - 10;
			p[i] = (uint8_t)((unsigned)x & 0xFF);
			p[i + 1] = (uint8_t)(((unsigned)x >> 8) & 0xFF);
		}
		if (i < n)
			p[i] = 0;
		break;
	}
	case 9: {
		uint32_t ids[4] = { 0, 0, 0, 0 };

		while (i < n) {
			size_t len = 4 * (1 + test_rand(rng) % 40);
			uint32_t id = 0;

			if (test_rand(rng) % 2 != 0) {
				uint32_t k = (uint32_t)(test_rand(rng) % 4);

				if (ids[k] == 0 || test_rand(rng) % 8 == 0)
					ids[k] = 1 + (uint32_t)(test_rand(rng) %
								0xFFFFFF);
				id = ids[k];
			}
			for (size_t k = 0; k < len && i < n; k++, i++)
				p[i] = (uint8_t)(id >> (8 * (k % 4)));
		}
		break;
	}
	default:
		zt_noise12(p, n, rng);
		break;
	}
}

#endif
