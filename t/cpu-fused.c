/*
 * cpu-fused.c - the cpu backend's fused batch (run_batch: gather and
 * compress per work item, each chunk straight to the place named for its
 * position) writes, for every shard-major position, exactly the bytes its
 * stage entries (scatter, compress, aggregate, fetch) produce for the same
 * batch, and reads no more than the epochs it is given: for
 * codecs none, zstd and gzip, element sizes 1 to 8, thread counts 1 to 3,
 * and geometries whose work items group some but not all chunks along the
 * last dim, all of a 1-element channel dim and some chunks along the dim
 * before it, with edge chunks inside items.  Batches are sparse or
 * structured bytes from the printed seed, each through both paths.
 */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "plan.h"
#include "stages.h"
#include "tap.h"
#include "testutil.h"

struct geo {
	const char *what;
	int rank;
	shardpipe_dtype dtype;
	uint64_t size[4], chunk[4], cps[4];
};

static const struct geo geos[] = {
	/* 160-byte runs: items of 16 of the 32 chunks along x (runs of
	 * 2 KiB at least), the last one partial. */
	{ "uint32, items of part of the last dim", 3, SHARDPIPE_DTYPE_UINT32,
	  { 6, 5, 1270 }, { 3, 4, 40 }, { 2, 2, 4 } },
	/* A 1-element channel dim: items of all 3 channels and 48 of the
	 * 96 chunks along x, the last one partial. */
	{ "uint16, 1-element channels, items across x", 4,
	  SHARDPIPE_DTYPE_UINT16, { 4, 3, 766, 3 }, { 2, 2, 8, 1 },
	  { 1, 2, 4, 3 } },
	/* 1152-byte runs: one chunk per item, the last one partial. */
	{ "uint16, frames-like runs", 4, SHARDPIPE_DTYPE_UINT16,
	  { 3, 2, 9, 1200 }, { 1, 1, 4, 576 }, { 1, 1, 2, 2 } },
	{ "uint8, 1-element channels of 4", 3, SHARDPIPE_DTYPE_UINT8,
	  { 5, 33, 4 }, { 2, 7, 1 }, { 2, 2, 2 } },
	{ "uint64, long runs, one chunk per item", 3, SHARDPIPE_DTYPE_UINT64,
	  { 4, 10, 300 }, { 2, 3, 100 }, { 1, 2, 3 } },
	{ "float32, chunks span every dim but 0", 3, SHARDPIPE_DTYPE_FLOAT32,
	  { 7, 6, 40 }, { 2, 6, 40 }, { 3, 1, 1 } },
	{ "uint16, stack-like 3-d, no edges", 3, SHARDPIPE_DTYPE_UINT16,
	  { 8, 32, 256 }, { 4, 8, 8 }, { 1, 2, 8 } },
};

#define N_GEOS (sizeof(geos) / sizeof(geos[0]))

static const struct {
	shardpipe_codec codec;
	int level;
} codecs[] = {
	{ SHARDPIPE_CODEC_NONE, 0 },
	{ SHARDPIPE_CODEC_ZSTD, 1 },
	{ SHARDPIPE_CODEC_GZIP, 1 },
};

#define N_CODECS (sizeof(codecs) / sizeof(codecs[0]))
#define BATCHES 2

/*
 * Deal a batch's first `epochs` epochs into laid staging at out (laid bytes
 * an epoch, units of `unit` input bytes) as a stream does: ranges of units
 * of random lengths, each in one or two parts, and the last epoch's units
 * from fill_from on as fill (NULL).
 */
static void deal_batch(void *ctx, const struct plan *p, const uint8_t *batch,
		       uint64_t epochs, uint64_t laid, uint64_t unit,
		       uint64_t fill_from, uint8_t *out, uint64_t *rng)
{
	const uint64_t per = p->epoch_bytes / unit;

	for (uint64_t e = 0; e < epochs; e++) {
		const int last = e + 1 == epochs;

		for (uint64_t u = 0; u < per;) {
			uint64_t end = u + 1 + test_rand(rng) % per;
			unsigned parts = 1 + (unsigned)(test_rand(rng) % 2);
			const uint8_t *src = batch + e * p->epoch_bytes +
					     u * unit;

			if (end > per)
				end = per;
			if (last && u < fill_from && end > fill_from)
				end = fill_from;
			if (last && u >= fill_from)
				src = NULL;
			for (unsigned part = 0; part < parts; part++)
				sp_backend_cpu.deal(ctx, src, u, end,
						    out + e * laid, part, parts);
			u = end;
		}
	}
}

/* The first of the first n positions whose bytes differ, or -1. */
static long long first_difference(const struct plan *p,
				  const struct fetched *r, uint64_t n,
				  uint8_t *const *dst, const uint64_t *sizes)
{
	for (uint64_t j = 0; j < n; j++) {
		uint64_t len = r->offsets[j + 1] - r->offsets[j];

		if (sizes[j] != len ||
		    memcmp(dst[j], r->data + r->offsets[j], (size_t)len) != 0)
			return (long long)j;
	}
	(void)p;
	return -1;
}

static void check(const struct geo *g, shardpipe_codec codec, int level,
		  int threads, uint64_t *rng)
{
	const struct backend_ops *cpu = &sp_backend_cpu;
	shardpipe_desc d;
	struct plan p;
	struct sp_err err = { 0 };
	void *staged = NULL, *fused = NULL;
	uint8_t *batch, *laid_in = NULL;
	long long bad = -1, bad_laid = -1;
	uint64_t laid = 0, unit = 0;
	uint8_t **dst, *slots;
	uint64_t *sizes;
	int rc;

	shardpipe_desc_init(&d);
	d.rank = g->rank;
	d.dtype = g->dtype;
	d.codec = codec;
	d.level = level;
	d.threads = threads;
	for (int i = 0; i < g->rank; i++) {
		d.dims[i].size = g->size[i];
		d.dims[i].chunk = g->chunk[i];
		d.dims[i].chunks_per_shard = g->cps[i];
	}
	if (plan_init(&p, &d, &err) != SHARDPIPE_OK)
		bail("%s: plan refused: %s", g->what, err.msg);
	batch = test_xmalloc((size_t)p.batch_bytes);
	/* Slots in reverse order of position, as far from the stages'
	 * packing as the contract allows. */
	slots = test_xmalloc((size_t)(p.K * p.M * p.slot_capacity));
	dst = test_xmalloc((size_t)(p.K * p.M) * sizeof(*dst));
	sizes = test_xmalloc((size_t)(p.K * p.M) * sizeof(*sizes));
	for (uint64_t j = 0; j < p.K * p.M; j++)
		dst[j] = slots + (p.K * p.M - 1 - j) * p.slot_capacity;
	rc = cpu->open(&p, &staged, &err);
	if (rc == SHARDPIPE_OK)
		rc = cpu->open(&p, &fused, &err);
	if (rc == SHARDPIPE_OK)
		laid = cpu->laid_bytes(fused, &unit);
	if (laid != 0)
		laid_in = test_xmalloc((size_t)(p.K * laid));
	for (int b = 0; b < BATCHES && rc == SHARDPIPE_OK && bad < 0; b++) {
		struct fetched r = { 0 };
		struct batch_times t;
		/* The second batch compresses its first epochs only. */
		uint64_t epochs = b == 0 ? p.K : (p.K + 1) / 2;

		/* Sparse, then structured with noise: compressed chunks
		 * of many sizes. */
		uint64_t fill_from = 0;

		test_fill(batch, (size_t)p.batch_bytes, 2 + b, rng);
		/* The last epoch's units from fill_from on are fill (the
		 * plan's is 0), as a stream pads the rows past its end. */
		if (laid != 0) {
			uint64_t per = p.epoch_bytes / unit;

			fill_from = b == 0 ? per : test_rand(rng) % per;
			memset(batch + (epochs - 1) * p.epoch_bytes +
				       fill_from * unit, 0,
			       (size_t)((per - fill_from) * unit));
		}
		rc = cpu->scatter(staged, batch, &err);
		if (rc == SHARDPIPE_OK)
			rc = cpu->compress(staged, &err);
		if (rc == SHARDPIPE_OK)
			rc = cpu->aggregate(staged, &err);
		if (rc == SHARDPIPE_OK)
			rc = fetch_batch(cpu, staged, p.K * p.M, &r, &err);
		for (uint64_t j = 0; j < p.K * p.M; j++)
			sizes[j] = UINT64_MAX;
		if (rc == SHARDPIPE_OK)
			rc = cpu->run_batch(fused, batch, epochs, 0, dst, sizes,
					    &t, &err);
		if (rc == SHARDPIPE_OK) {
			bad = first_difference(&p, &r, epochs * p.M, dst,
					       sizes);
			for (uint64_t j = epochs * p.M; j < p.K * p.M; j++)
				if (sizes[j] != UINT64_MAX && bad < 0)
					bad = (long long)j;
		}
		/* The same batch dealt into laid staging, whose bytes not
		 * dealt hold garbage. */
		if (rc == SHARDPIPE_OK && laid != 0) {
			memset(laid_in, 0xa5, (size_t)(p.K * laid));
			deal_batch(fused, &p, batch, epochs, laid, unit,
				   fill_from, laid_in, rng);
			for (uint64_t j = 0; j < p.K * p.M; j++)
				sizes[j] = UINT64_MAX;
			rc = cpu->run_batch(fused, laid_in, epochs, 1, dst,
					    sizes, &t, &err);
		}
		if (rc == SHARDPIPE_OK && laid != 0 && bad_laid < 0) {
			bad_laid = first_difference(&p, &r, epochs * p.M, dst,
						    sizes);
			for (uint64_t j = epochs * p.M; j < p.K * p.M; j++)
				if (sizes[j] != UINT64_MAX && bad_laid < 0)
					bad_laid = (long long)j;
		}
		fetched_free(&r);
	}
	if (rc != SHARDPIPE_OK)
		diag("%s", err.msg);
	if (bad >= 0)
		diag("first difference at position %lld", bad);
	if (bad_laid >= 0)
		diag("laid: first difference at position %lld", bad_laid);
	ok(rc == SHARDPIPE_OK && bad < 0,
	   "%s, %s:%d, %d threads (K %llu, M %llu): fused chunks equal the "
	   "stages' at every position, a batch of fewer epochs too",
	   g->what, shardpipe_codec_name(codec), level, threads,
	   (unsigned long long)p.K, (unsigned long long)p.M);
	if (laid == 0)
		skip(1, "%s: the cpu backend keeps rows in staging (an "
		     "epoch of one chunk, or a storage order)", g->what);
	else
		ok(rc == SHARDPIPE_OK && bad_laid < 0,
		   "%s, %s:%d, %d threads: laid staging, dealt in ranges of "
		   "rows, its tail as fill, compresses to the same chunks",
		   g->what, shardpipe_codec_name(codec), level, threads);
	free(laid_in);
	cpu->close(staged);
	cpu->close(fused);
	free(batch);
	free(slots);
	free(dst);
	free(sizes);
	plan_free(&p);
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;

	plan((int)(N_GEOS * N_CODECS * 3 * 2));
	diag("seed %llu (SHARDPIPE_TEST_SEED)", (unsigned long long)seed);
	if (sp_backend_cpu.run_batch == NULL)
		bail("the cpu backend has no fused batch");
	for (size_t g = 0; g < N_GEOS; g++)
		for (size_t c = 0; c < N_CODECS; c++)
			for (int t = 1; t <= 3; t++)
				check(&geos[g], codecs[c].codec,
				      codecs[c].level, t, &rng);
	return done_testing();
}
