/*
 * bound.c - the compress-only bound of `shardpipe bench --bound`: the same
 * chunks the stream compresses, with the same codec, level and thread
 * count, and nothing else (no staging, scatter, aggregation or writes).
 * The pipeline's throughput over this figure is what the benchmark quotes,
 * because a shared machine's absolute numbers drift from run to run while
 * both figures drift together.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <libdeflate.h>
#include <zstd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef HAVE_BLOSC
#include <blosc.h>
#endif

#include "bench.h"

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double bench_cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
	       (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

double bench_memcpy_gbps(const uint8_t *src, uint64_t src_bytes, uint64_t n,
			 int threads)
{
	uint8_t *dst = malloc(n ? (size_t)n : 1), *in = malloc(n ? (size_t)n : 1);
	uint64_t passes = 0;
	double t0, cpu = 0;

	if (dst == NULL || in == NULL) {
		free(dst);
		free(in);
		return 0;
	}
	/* Fault the scratch in first: the stream's pools are warm too.  The
	 * source is the pattern repeated to n bytes: a pattern of a row or
	 * two fits in the last-level cache, where the staging the scatter
	 * reads does not (copied from the zeros pattern's one row, memcpy
	 * seemed to run at 70 GB/s). */
	memset(dst, 0, (size_t)n);
	for (uint64_t o = 0; o < n; o += src_bytes)
		memcpy(in + o, src, (size_t)(n - o < src_bytes ? n - o :
							       src_bytes));
	t0 = bench_now();
	/* Timed in CPU time of the copying threads over threads, as the cpu
	 * backend times its scatter, so that other processes move neither. */
	do {
#pragma omp parallel for num_threads(threads) schedule(static) \
	reduction(+ : cpu)
		for (int k = 0; k < threads; k++) {
			uint64_t a = n * (uint64_t)k / (uint64_t)threads;
			uint64_t b = n * (uint64_t)(k + 1) / (uint64_t)threads;
			struct timespec x, y;

			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &x);
			memcpy(dst + a, in + a, (size_t)(b - a));
			clock_gettime(CLOCK_THREAD_CPUTIME_ID, &y);
			cpu += (double)(y.tv_sec - x.tv_sec) +
			       1e-9 * (double)(y.tv_nsec - x.tv_nsec);
		}
		passes++;
	} while (bench_now() - t0 < 0.25 || passes < 3);
	free(dst);
	free(in);
	return cpu > 0 ? (double)(passes * n) / 1e9 / (cpu / threads) : 0;
}

/* Cut chunk (epoch e, chunk i of the epoch) from the repeated pattern,
 * padding with zeros beyond the array. */
static void cut_chunk(const struct bench_pattern *pat, const shardpipe_desc *desc,
		      uint64_t rows, uint64_t e, uint64_t i, uint8_t *out)
{
	const int rank = desc->rank, last = rank - 1;
	uint64_t origin[SHARDPIPE_MAX_RANK], ext[SHARDPIPE_MAX_RANK];
	uint64_t stride[SHARDPIPE_MAX_RANK], n[SHARDPIPE_MAX_RANK] = { 0 };
	uint64_t lines = 1, s = 1;
	const size_t es = pat->esize;
	const uint64_t size0 = rows;

	for (int d = rank - 1; d >= 1; d--) {
		uint64_t cnt = (pat->size[d] + desc->dims[d].chunk - 1) /
			       desc->dims[d].chunk;

		origin[d] = (i % cnt) * desc->dims[d].chunk;
		i /= cnt;
		ext[d] = pat->size[d] - origin[d];
		if (ext[d] > desc->dims[d].chunk)
			ext[d] = desc->dims[d].chunk;
		stride[d] = s;
		s *= pat->size[d];
	}
	origin[0] = e * desc->dims[0].chunk;
	ext[0] = desc->dims[0].chunk;
	if (origin[0] + ext[0] > size0)
		ext[0] = size0 > origin[0] ? size0 - origin[0] : 0;
	for (int d = 0; d < last; d++)
		lines *= desc->dims[d].chunk;

	/* Rank >= 2 (bench refuses rank 1): lines run along the last dim. */
	size_t run = (size_t)ext[last] * es;
	size_t line_bytes = (size_t)desc->dims[last].chunk * es;
	for (uint64_t l = 0; l < lines; l++) {
		uint8_t *dst = out + l * line_bytes;
		int inside = 1;
		uint64_t off = origin[last];

		for (int d = 0; d < last; d++)
			inside &= n[d] < ext[d];
		if (inside) {
			uint64_t row = origin[0] + n[0];
			const uint8_t *src = pat->data +
					     (row % pat->frames) * pat->row_bytes;

			for (int d = 1; d < last; d++)
				off += (origin[d] + n[d]) * stride[d];
			memcpy(dst, src + off * es, run);
			memset(dst + run, 0, line_bytes - run);
		} else {
			memset(dst, 0, line_bytes);
		}
		for (int d = last - 1; d >= 0; d--) {
			if (++n[d] < desc->dims[d].chunk)
				break;
			n[d] = 0;
		}
	}
}

#ifdef HAVE_BLOSC
/* The blosc call of the cpu backend (backends/cpu/blosc.c), settings and
 * automatic block size included: c-blosc's context API, one internal
 * thread.  0 on failure. */
static size_t bound_blosc(const shardpipe_desc *desc, size_t esize,
			  const uint8_t *src, size_t n, uint8_t *dst,
			  size_t cap)
{
	static const char *const cnames[] = { "zstd", "lz4", "lz4hc",
					      "blosclz", "zlib" };
	static const int shuffles[] = { BLOSC_NOSHUFFLE, BLOSC_SHUFFLE,
					BLOSC_BITSHUFFLE };
	size_t block = desc->blosc_blocksize;
	int r;

	if (block == 0 && desc->blosc_cname == SHARDPIPE_BLOSC_ZSTD)
		block = n < ((size_t)1 << 20) ? n : (size_t)1 << 20;
	r = blosc_compress_ctx(desc->level, shuffles[desc->blosc_shuffle],
			       esize, n, src, dst, cap,
			       cnames[desc->blosc_cname], block, 1);
	return r > 0 ? (size_t)r : 0;
}
#endif

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

int bench_bound_run(const struct bench_pattern *pat, const shardpipe_desc *desc,
		    uint64_t rows, int threads, uint64_t work,
		    uint64_t max_sample_bytes, struct bench_bound *out,
		    char *msg, size_t msg_size)
{
	uint64_t chunk_bytes = pat->esize, M = 1, chunk0 = desc->dims[0].chunk;
	uint64_t period, nchunks, passes, packed = 0;
	uint8_t *sample;
	size_t *sizes;
	int failed = 0;
	double t0 = 0, t1 = 0, c0 = 0, c1 = 0;

	for (int d = 0; d < desc->rank; d++) {
		chunk_bytes *= desc->dims[d].chunk;
		if (d > 0)
			M *= (pat->size[d] + desc->dims[d].chunk - 1) /
			     desc->dims[d].chunk;
	}
	/* The array repeats every lcm(frames, chunk0) rows, that is every
	 * frames / gcd(frames, chunk0) epochs. */
	period = pat->frames / gcd(pat->frames, chunk0) * M;
	if (period > (rows + chunk0 - 1) / chunk0 * M)
		period = (rows + chunk0 - 1) / chunk0 * M;
	nchunks = max_sample_bytes / chunk_bytes;
	if (nchunks < 1)
		nchunks = 1;
	if (nchunks > period)
		nchunks = period;
	sample = malloc(nchunks * chunk_bytes);
	sizes = calloc(nchunks, sizeof(*sizes));
	if (sample == NULL || sizes == NULL) {
		free(sample);
		free(sizes);
		snprintf(msg, msg_size, "out of memory for a bound sample of "
			 "%llu chunks", (unsigned long long)nchunks);
		return SHARDPIPE_ERR_NOMEM;
	}
	for (uint64_t c = 0; c < nchunks; c++)
		cut_chunk(pat, desc, rows, c / M, c % M, sample + c * chunk_bytes);
	passes = (work + nchunks * chunk_bytes - 1) / (nchunks * chunk_bytes);
	if (passes < 1)
		passes = 1;

#pragma omp parallel num_threads(threads) reduction(|| : failed)
	{
		size_t cap = desc->codec == SHARDPIPE_CODEC_ZSTD ?
				     ZSTD_compressBound(chunk_bytes) :
				     chunk_bytes + chunk_bytes / 8 + 1024;
		uint8_t *dst = malloc(cap);
		ZSTD_CCtx *z = desc->codec == SHARDPIPE_CODEC_ZSTD ?
				       ZSTD_createCCtx() : NULL;
		struct libdeflate_compressor *g =
			desc->codec == SHARDPIPE_CODEC_GZIP ?
				libdeflate_alloc_compressor(desc->level) : NULL;
		int64_t total = (int64_t)(passes * nchunks);

		if (g != NULL)
			cap = libdeflate_gzip_compress_bound(g, chunk_bytes);
		if (g != NULL) {
			free(dst);
			dst = malloc(cap);
		}
		if (dst == NULL)
			failed = 1;
#pragma omp barrier
#pragma omp single
		{
			t0 = bench_now();
			c0 = bench_cpu_seconds();
		}
#pragma omp for schedule(dynamic)
		for (int64_t k = 0; k < total; k++) {
			uint64_t c = (uint64_t)k % nchunks;
			const uint8_t *src = sample + c * chunk_bytes;
			size_t r = 0;

			if (dst == NULL)
				continue;
			switch (desc->codec) {
			case SHARDPIPE_CODEC_ZSTD:
				r = ZSTD_compressCCtx(z, dst, cap, src,
						      chunk_bytes, desc->level);
				if (ZSTD_isError(r))
					r = 0;
				break;
			case SHARDPIPE_CODEC_GZIP:
				r = libdeflate_gzip_compress(g, src, chunk_bytes,
							     dst, cap);
				break;
#ifdef HAVE_BLOSC
			case SHARDPIPE_CODEC_BLOSC:
				r = bound_blosc(desc, pat->esize, src,
						chunk_bytes, dst, cap);
				break;
#endif
			default:
				memcpy(dst, src, chunk_bytes);
				r = chunk_bytes;
				break;
			}
			if (r == 0)
				failed = 1;
			if ((uint64_t)k < nchunks)
				sizes[c] = r;
		}
#pragma omp single
		{
			t1 = bench_now();
			c1 = bench_cpu_seconds();
		}
		ZSTD_freeCCtx(z);
		if (g != NULL)
			libdeflate_free_compressor(g);
		free(dst);
	}
	for (uint64_t c = 0; c < nchunks; c++)
		packed += sizes[c];
	free(sample);
	free(sizes);
	if (failed) {
		snprintf(msg, msg_size, "the bound's compressor failed");
		return SHARDPIPE_ERR_CODEC_FAILED;
	}
	out->sample_bytes = nchunks * chunk_bytes;
	out->sample_packed = packed;
	out->bytes = passes * nchunks * chunk_bytes;
	out->seconds = t1 - t0;
	out->cpu_seconds = c1 - c0;
	out->threads = threads;
	return SHARDPIPE_OK;
}
