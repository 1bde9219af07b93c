/*
 * gzip-ratio.c - compression ratio of the gzip kernel at every level next
 * to libdeflate's levels 1 and 6, on the data sets of `shardpipe bench`
 * (bench/fill.c): the `frames` workload's chunks (512 x 576 uint16) of the
 * microscopy-like fill and of uniform 12-bit noise.  Reported as TAP
 * comments, not asserted: the tests check that every member decodes; the
 * targets of issue 5 (level 1 at least 0.97 of libdeflate level 1, level 6
 * at least libdeflate level 1) are printed with the table.  Also reports
 * the kernel's speed as the reference executor runs it and libdeflate's,
 * both on one thread, and their quotient (less noisy than either on a
 * shared machine).
 */
#include <stdio.h>
#include <time.h>

#include "../bench/fill.h"
#include "gzip-kernel.h"

#define CH_Y 512
#define CH_X 576

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Cut one frame (c, y, x) of the pattern into chunks 1 x CH_Y x CH_X. */
static uint64_t cut_chunks(const struct bench_pattern *pat, uint8_t *pool)
{
	uint64_t c = pat->size[1], y = pat->size[2], x = pat->size[3], k = 0;

	for (uint64_t ci = 0; ci < c; ci++)
		for (uint64_t y0 = 0; y0 < y; y0 += CH_Y)
			for (uint64_t x0 = 0; x0 < x; x0 += CH_X, k++)
				for (uint64_t r = 0; r < CH_Y; r++)
					memcpy(pool + (k * CH_Y + r) * CH_X * 2,
					       pat->data + ((ci * y + y0 + r) * x +
							    x0) * 2,
					       CH_X * 2);
	return k;
}

int main(void)
{
	static const char *const fills[] = { "micro", "noise12" };
	const uint64_t chunk = (uint64_t)CH_Y * CH_X * 2;
	const uint64_t cap = gz_codec_bound(chunk);
	/* One group's scratch, for both kernels in turn. */
	const uint64_t scratch_bytes =
		SP_DEFL_USCRATCH_BYTES(chunk) > SP_DEFL_SCRATCH_BYTES(chunk) ?
			SP_DEFL_USCRATCH_BYTES(chunk) :
			SP_DEFL_SCRATCH_BYTES(chunk);
	struct libdeflate_compressor *ld[2];
	uint8_t *enc = test_xmalloc(cap);
	int failures = 0;
	/* The small size: the first quarter of the chunks, of each fill. */
	const uint64_t part = (uint64_t)test_sized("chunks divisor", 1, 4);

	plan_lazy();
	ld[0] = libdeflate_alloc_compressor(1);
	ld[1] = libdeflate_alloc_compressor(6);
	if (ld[0] == NULL || ld[1] == NULL)
		bail("out of memory for libdeflate compressors");
	for (int f = 0; f < 2; f++) {
		shardpipe_desc desc;
		struct bench_pattern pat;
		uint64_t nchunks, total, lib[2] = { 0, 0 };
		uint8_t *pool, *slots, *scratch, *res, *back;
		uint64_t *sizes;
		double ratio[10], mbs[10], ld_mbs[2];

		shardpipe_desc_init(&desc);
		desc.rank = 4;
		desc.dtype = SHARDPIPE_DTYPE_UINT16;
		desc.dims[0].size = 1;
		desc.dims[1].size = 2;
		desc.dims[2].size = 2048;
		desc.dims[3].size = 2304;
		if (bench_pattern_make(&pat, (enum bench_fill)
				       bench_fill_from_name(fills[f]), &desc,
				       1) != 0)
			bail("out of memory for the %s pattern", fills[f]);
		pool = test_xmalloc(pat.row_bytes);
		nchunks = cut_chunks(&pat, pool) / part;
		total = nchunks * chunk;
		slots = test_xmalloc(nchunks * cap);
		sizes = test_xmalloc(nchunks * sizeof(*sizes));
		scratch = test_xmalloc(scratch_bytes);
		res = test_xmalloc(nchunks * SP_DEFL_RES_BYTES(chunk));
		back = test_xmalloc(chunk);
		memset(scratch, 0, scratch_bytes);
		for (int l = 0; l < 2; l++) {
			double t0 = now();

			for (uint64_t j = 0; j < nchunks; j++)
				lib[l] += libdeflate_gzip_compress(
					ld[l], pool + j * chunk, chunk, enc, cap);
			ld_mbs[l] = (double)total / (now() - t0) / 1e6;
		}
		diag("%s: %llu chunks of %llu bytes; libdeflate level 1 "
		     "ratio %.4f (%.1f MB/s, 1 thread), level 6 %.4f "
		     "(%.1f MB/s)", fills[f],
		     (unsigned long long)nchunks, (unsigned long long)chunk,
		     (double)total / (double)lib[0], ld_mbs[0],
		     (double)total / (double)lib[1], ld_mbs[1]);
		diag("%-7s level  ratio   /ld1    /ld6   MB/s (reference, "
		     "1 thread)", fills[f]);
		for (int level = 0; level <= 9; level++) {
			uint64_t packed = 0;
			int good = 1;
			double t0, t;

			/* One launch of each kernel over every chunk, as the
			 * driver makes them (their scratch allocated once,
			 * outside the time). */
			sp_ref_item.group = 0;
			sp_ref_item.groups = 1;
			t0 = now();
			sp_gzip_units(pool, res, scratch, nchunks, chunk,
				      (u64)level);
			sp_codec_gzip(pool, slots, sizes, res, scratch, nchunks,
				      chunk, cap, (u64)level);
			t = now() - t0;
			for (uint64_t j = 0; j < nchunks; j++) {
				packed += sizes[j];
				if (test_decode(2, slots + j * cap, sizes[j],
						back, chunk) != chunk ||
				    memcmp(back, pool + j * chunk, chunk) != 0)
					good = 0;
			}
			ratio[level] = (double)total / (double)packed;
			mbs[level] = (double)total / t / 1e6;
			diag("%-7s %5d %7.4f %7.4f %7.4f %6.1f", fills[f], level,
			     ratio[level], ratio[level] * (double)lib[0] / total,
			     ratio[level] * (double)lib[1] / total, mbs[level]);
			if (!ok(good, "%s level %d: every chunk decodes",
				fills[f], level))
				failures++;
		}
		diag("%s targets: level 1 / libdeflate 1 = %.4f (>= 0.97), "
		     "level 6 / libdeflate 1 = %.4f (>= 1)", fills[f],
		     ratio[1] * (double)lib[0] / total,
		     ratio[6] * (double)lib[0] / total);
		diag("%s speed, one thread each, the kernel as C (the bytes of "
		     "every kernel backend) over libdeflate: level 1 %.2f, "
		     "level 6 %.2f", fills[f], mbs[1] / ld_mbs[0],
		     mbs[6] / ld_mbs[1]);
		free(pool);
		free(slots);
		free(sizes);
		free(scratch);
		free(res);
		free(back);
		bench_pattern_free(&pat);
	}
	libdeflate_free_compressor(ld[0]);
	libdeflate_free_compressor(ld[1]);
	free(enc);
	return done_testing();
}
