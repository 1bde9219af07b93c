/*
 * blosc-ratio.c - compression ratio of the blosc kernel (backends/kernels/
 * blosc_encode.h, run as the reference executor runs it) next to c-blosc
 * called as the cpu backend calls it, on the data of `shardpipe bench`
 * (bench/fill.c): the `frames` workload's chunks (512 x 576 uint16) and
 * stack-like 64 x 64 x 64 chunks, of the microscopy-like fill and of
 * uniform 12-bit noise, for each shuffle at clevel 1 (and 5 for the
 * microscopy-like fill).  Reported as
 * TAP comments, not asserted: the tests assert that every kernel chunk
 * decodes with c-blosc to its input; issue 11's target (kernel ratio at
 * least 0.95 of the cpu backend's) is printed with each line.  Also reports
 * both encoders' speed on one thread (the kernel as C, one work-item).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tap.h"
#include "testutil.h"

#ifdef HAVE_BLOSC
#include <blosc.h>

#include "../bench/fill.h"
#include "prelude-c.h"
#include "geometry.h"
#include "blosc_encode.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* One chunk through the kernels, one group of one work-item: the zstd
 * units of its streams, then the container.  scratch: SPZ_SCRATCH_BYTES,
 * units: n bytes, usizes: SPB_UNITS words. */
static uint64_t kernel_blosc(const uint8_t *src, uint64_t n, int level,
			     unsigned ts, unsigned shuffle, uint8_t *scratch,
			     uint8_t *units, uint64_t *usizes, uint8_t *out)
{
	uint64_t size = 0, bs = SPB_BLOCKSIZE(n, ts, 0);

	sp_ref_item.group = 0;
	sp_ref_item.groups = 1;
	sp_zstd_units(src, units, usizes, scratch, 1, n,
		      SPB_ZSTD_LEVEL(level == 0 ? 1u : (unsigned)level), ts,
		      shuffle, bs);
	sp_codec_blosc(src, out, &size, units, usizes, 1, n, SPB_BOUND(n),
		       (u64)level, ts, shuffle, bs);
	return size;
}

/* The cpu backend's call (backends/cpu/blosc.c): whole chunk blocks up
 * to 1 MiB for zstd. */
static uint64_t cblosc(const uint8_t *src, uint64_t n, int level,
		       unsigned ts, unsigned shuffle, uint8_t *out)
{
	static const int doshuffle[] = { BLOSC_NOSHUFFLE, BLOSC_SHUFFLE,
					 BLOSC_BITSHUFFLE };
	size_t block = n < ((uint64_t)1 << 20) ? n : (size_t)1 << 20;
	int r = blosc_compress_ctx(level, doshuffle[shuffle], ts, n, src, out,
				   SPB_BOUND(n), "zstd", block, 1);

	return r > 0 ? (uint64_t)r : 0;
}

struct set {
	const char *what;
	uint64_t dims[4];     /* pattern: frames, c/z?, y, x */
	int rank;
	uint64_t chunk[3];    /* chunk's z (or 1), y, x */
};

/* Cut every chunk of the pattern's frames (rank 4: one frame of c planes;
 * rank 3: chunk[0] frames deep) into pool; returns the count. */
static uint64_t cut(const struct bench_pattern *pat, const struct set *s,
		    uint8_t *pool)
{
	uint64_t y = s->dims[s->rank - 2], x = s->dims[s->rank - 1];
	uint64_t planes = s->rank == 4 ? s->dims[1] : 1;
	uint64_t cz = s->chunk[0], cy = s->chunk[1], cx = s->chunk[2], k = 0;
	uint8_t *p = pool;

	for (uint64_t pl = 0; pl < planes; pl++)
		for (uint64_t y0 = 0; y0 < y; y0 += cy)
			for (uint64_t x0 = 0; x0 < x; x0 += cx, k++)
				for (uint64_t z = 0; z < cz; z++)
					for (uint64_t r = 0; r < cy; r++) {
						memcpy(p, pat->data + z * pat->row_bytes +
							       ((pl * y + y0 + r) * x + x0) * 2,
						       cx * 2);
						p += cx * 2;
					}
	return k;
}

int main(void)
{
	static const char *const fills[] = { "micro", "noise12" };
	static const char *const shuffles[] = { "noshuffle", "shuffle",
						"bitshuffle" };
	static const struct set sets[] = {
		{ "frames 512x576", { 1, 2, 2048, 2304 }, 4, { 1, 512, 576 } },
		{ "stack 64x64x64", { 64, 512, 512, 0 }, 3, { 64, 64, 64 } },
	};
	static const int levels[] = { 1, 5 };
	/* The small size encodes every fourth chunk: the same kinds of
	 * chunk, the ratios over fewer of them. */
	const uint64_t step = (uint64_t)test_sized("chunks stride", 1, 4);

	/* blosc_encode.h brings the zstd frame kernel along, unused here. */
	(void)sp_codec_zstd;
	plan_lazy();
	for (size_t si = 0; si < sizeof(sets) / sizeof(sets[0]); si++)
	for (int f = 0; f < 2; f++) {
		const struct set *s = &sets[si];
		shardpipe_desc desc;
		struct bench_pattern pat;
		uint64_t chunk = s->chunk[0] * s->chunk[1] * s->chunk[2] * 2;
		uint64_t nchunks, total;
		uint8_t *pool, *enc, *back, *scratch, *units;
		uint64_t *usizes;

		shardpipe_desc_init(&desc);
		desc.rank = s->rank;
		desc.dtype = SHARDPIPE_DTYPE_UINT16;
		for (int d = 0; d < s->rank; d++)
			desc.dims[d].size = s->dims[d];
		if (bench_pattern_make(&pat, (enum bench_fill)
				       bench_fill_from_name(fills[f]), &desc,
				       s->rank == 4 ? 1 : s->chunk[0]) != 0)
			bail("out of memory for the %s pattern", fills[f]);
		pool = test_xmalloc(s->rank == 4 ? pat.row_bytes
					    : pat.row_bytes * s->chunk[0]);
		nchunks = cut(&pat, s, pool);
		total = (nchunks + step - 1) / step * chunk;
		enc = test_xmalloc(SPB_BOUND(chunk));
		back = test_xmalloc(chunk);
		scratch = test_xmalloc(SPZ_SCRATCH_BYTES);
		units = test_xmalloc(chunk);
		usizes = test_xmalloc(8 * SPB_UNITS(chunk, 2u, SPB_BLOCKSIZE(
							    chunk, 2u, 0u)));
		diag("%s, %s: %llu chunks of %llu bytes", s->what, fills[f],
		     (unsigned long long)nchunks, (unsigned long long)chunk);
		diag("%-10s clevel  kernel  c-blosc  kernel/c-blosc  MB/s "
		     "kernel, c-blosc (1 thread)", "shuffle");
		for (int sh = 0; sh < 3; sh++)
		for (size_t l = 0; l < (f == 0 ? 2u : 1u); l++) {
			uint64_t kp = 0, cp = 0;
			double tk = 0, tc = 0, t0;
			int good = 1;

			for (uint64_t j = 0; j < nchunks; j += step) {
				const uint8_t *src = pool + j * chunk;
				uint64_t n;

				t0 = now();
				n = kernel_blosc(src, chunk, levels[l], 2,
						 (unsigned)sh, scratch, units,
						 usizes, enc);
				tk += now() - t0;
				kp += n;
				if (blosc_decompress_ctx(enc, back, chunk, 1) !=
					    (int)chunk ||
				    memcmp(back, src, chunk) != 0)
					good = 0;
				t0 = now();
				cp += cblosc(src, chunk, levels[l], 2,
					     (unsigned)sh, enc);
				tc += now() - t0;
			}
			diag("%-10s %6d %7.4f %8.4f %8.4f%s %9.1f %7.1f",
			     shuffles[sh], levels[l], (double)total / kp,
			     (double)total / cp, (double)cp / kp,
			     (double)cp / kp >= 0.95 ? "      " : " (<.95)",
			     total / tk / 1e6, total / tc / 1e6);
			ok(good, "%s %s %s clevel %d: every kernel chunk "
			   "decodes with c-blosc", s->what, fills[f],
			   shuffles[sh], levels[l]);
		}
		free(pool);
		free(enc);
		free(back);
		free(scratch);
		free(units);
		free(usizes);
		bench_pattern_free(&pat);
	}
	return done_testing();
}

#else

int main(void)
{
	skip_all("built without c-blosc: nothing to compare with");
}

#endif
