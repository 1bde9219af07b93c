/*
 * gzip-stages.c - the gzip kernel through the kernel driver, batch by
 * batch on the conformance matrix (kernels-configs.h) and on chunks large
 * enough to hold several segments and blocks, at every level: every
 * compressed chunk decodes with zlib and with libdeflate to the chunk pool
 * the scatter made, within the slot capacity.
 * Built three times: t/gzip-stages runs `reference`; t/gzip-opencl
 * (SP_TEST_OPENCL) and t/cuda-gzip (SP_TEST_CUDA) also run that plugin at
 * local sizes 1, 7, 64 and 256 and
 * requires its offsets and aggregated bytes to equal reference's exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "backend.h"
#include "driver.h"
#include "deflate-layout.h"
#include "kernels-configs.h"
#include "plan.h"
#include "plugin-under-test.h"
#include "stages.h"
#include "tap.h"
#include "testutil.h"

#define BATCHES 2

#ifdef SP_TEST_PLUGIN
static const unsigned local_sizes[] = { 1, 7, 64, 256 };
#define N_LOCAL (sizeof(local_sizes) / sizeof(local_sizes[0]))
#endif

/* Larger chunks: several 4 KiB segments and 32 KiB blocks per chunk,
 * partial last segments, edge chunks. */
static const struct kcfg big_cfgs[] = {
	{ "rank 2 uint16, 76800-byte chunks", 2, SHARDPIPE_DTYPE_UINT16,
	  { 130, 700 }, { 64, 600 }, { 2, 2 }, 0 },
	{ "rank 3 uint8, 69993-byte chunks, unbounded", 3,
	  SHARDPIPE_DTYPE_UINT8, { 0, 9, 7777 }, { 3, 3, 7777 }, { 1, 2, 1 },
	  5 },
};
#define N_BIG (sizeof(big_cfgs) / sizeof(big_cfgs[0]))

/* libdeflate's gzip decoder: the member decodes to exactly n bytes, with
 * nothing after it. */
static int libdeflate_decodes(const uint8_t *src, uint64_t len, uint8_t *dst,
			      uint64_t n)
{
	static struct libdeflate_decompressor *d;
	size_t used = 0, got = 0;

	if (d == NULL && (d = libdeflate_alloc_decompressor()) == NULL)
		bail("out of memory for a libdeflate decompressor");
	return libdeflate_gzip_decompress_ex(d, src, len, dst, n, &used,
					     &got) == LIBDEFLATE_SUCCESS &&
	       got == n && used == len;
}

/* Rows of mixed content: smooth, sparse, constant and random stretches,
 * so that every block type shows up. */
static void make_batch(const struct plan *p, uint64_t b, uint8_t *batch,
		       uint64_t *rng)
{
	uint64_t rows = p->K * p->chunk[0], first = b * rows;

	for (uint64_t r = 0; r < rows; r++) {
		uint8_t *row = batch + r * p->row_bytes;

		if (p->size[0] != 0 && first + r >= p->size[0])
			memset(row, 0, p->row_bytes);
		else
			test_fill(row, p->row_bytes, (int)((first + r) % 7 % 4),
				  rng);
	}
}

/* One batch's results, kept to compare backends. */
struct result {
	uint64_t *offsets;
	uint8_t *data;
};

/*
 * Run BATCHES batches of plan p through ops; every chunk must decode to
 * its pool bytes.  With keep, results are stored in out[b]; else they are
 * compared with out[b].  Returns 0 when the backend could not open.
 */
static int run_backend(const struct backend_ops *ops, const struct plan *p,
		       const char *label, uint64_t seed, struct result *out,
		       int keep)
{
	uint64_t n = p->K * p->M, rng = seed;
	uint8_t *batch = test_xmalloc(p->batch_bytes);
	uint8_t *pool = test_xmalloc(n * p->chunk_bytes);
	uint8_t *back = test_xmalloc(p->chunk_bytes + 1);
	struct sp_err err;
	void *ctx = NULL;
	int opened = 1;

	sp_err_clear(&err);
	if (ops->open(p, &ctx, &err) != SHARDPIPE_OK) {
		if (strstr(err.msg, "SHARDPIPE_KERNEL_DEBUG"))
			skip(1, "%s: %s", label, err.msg);
		else if (!ok(0, "%s: open", label))
			diag("%s", err.msg);
		opened = 0;
		goto out;
	}
	for (uint64_t b = 0; b < BATCHES; b++) {
		struct fetched res = { 0 };
		uint64_t bad = n;

		make_batch(p, b, batch, &rng);
		if (!ok(ops->scatter(ctx, batch, &err) == SHARDPIPE_OK &&
			kdrv_debug_read_pool(ctx, pool, &err) == SHARDPIPE_OK &&
			ops->compress(ctx, &err) == SHARDPIPE_OK &&
			ops->aggregate(ctx, &err) == SHARDPIPE_OK &&
			fetch_batch(ops, ctx, n, &res, &err) == SHARDPIPE_OK,
			"%s: batch %llu runs", label, (unsigned long long)b)) {
			diag("%s", err.msg);
			fetched_free(&res);
			break;
		}
		/* Chunk j sits at shard-major position perm[j % M]. */
		for (uint64_t j = 0; j < n && bad == n; j++) {
			uint64_t q = (j / p->M) * p->M + p->perm[j % p->M];
			uint64_t at = res.offsets[q];
			uint64_t len = res.offsets[q + 1] - at;

			if (len > p->slot_capacity ||
			    test_decode(2, res.data + at, len, back,
					p->chunk_bytes) != p->chunk_bytes ||
			    memcmp(back, pool + j * p->chunk_bytes,
				   p->chunk_bytes) != 0)
				bad = j;
			else if (!libdeflate_decodes(res.data + at, len, back,
						     p->chunk_bytes) ||
				 memcmp(back, pool + j * p->chunk_bytes,
					p->chunk_bytes) != 0)
				bad = j;
		}
		if (!ok(bad == n, "%s: batch %llu: %llu chunks decode to the "
			"pool (zlib, libdeflate)", label, (unsigned long long)b,
			(unsigned long long)n))
			diag("chunk %llu does not", (unsigned long long)bad);
		if (keep) {
			out[b].offsets = test_xmalloc((n + 1) * sizeof(uint64_t));
			memcpy(out[b].offsets, res.offsets,
			       (n + 1) * sizeof(uint64_t));
			out[b].data = test_xmalloc(res.offsets[n]);
			memcpy(out[b].data, res.data, res.offsets[n]);
		} else if (out[b].offsets != NULL) {
			if (is_blob(res.offsets, out[b].offsets,
				    (n + 1) * sizeof(uint64_t),
				    "%s: batch %llu offsets equal reference's",
				    label, (unsigned long long)b))
				is_blob(res.data, out[b].data, res.offsets[n],
					"%s: batch %llu bytes equal reference's",
					label, (unsigned long long)b);
		}
		fetched_free(&res);
	}
out:
	if (ctx != NULL)
		ops->close(ctx);
	free(batch);
	free(pool);
	free(back);
	return opened;
}

static void run_config(const struct backend_ops *ocl, const struct kcfg *c,
		       int level, uint64_t seed)
{
	shardpipe_desc desc;
	struct plan p;
	struct sp_err err;
	struct result ref[BATCHES];
	char label[200];

	memset(ref, 0, sizeof(ref));
	kcfg_desc(c, &desc);
	desc.codec = SHARDPIPE_CODEC_GZIP;
	desc.level = level;
	sp_err_clear(&err);
	if (plan_init(&p, &desc, &err) != SHARDPIPE_OK)
		bail("plan for %s: %s", c->what, err.msg);
	/* A few epochs per batch: several chunks, cheap to check.  Every
	 * chunk is stored, so that each decodes (rows past a bounded end
	 * are zero: whole chunks of fill); kernels-stages tests what is
	 * left out. */
	p.K = 2;
	p.write_empty_chunks = 1;
	p.batch_bytes = p.K * p.epoch_bytes;
	snprintf(label, sizeof(label), "reference: gzip:%d: %s", level,
		 c->what);
	run_backend(&sp_backend_reference, &p, label, seed, ref, 1);
#ifdef SP_TEST_PLUGIN
	for (size_t l = 0; l < N_LOCAL; l++) {
		char buf[16];

		snprintf(buf, sizeof(buf), "local=%u", local_sizes[l]);
		setenv("SHARDPIPE_KERNEL_DEBUG", buf, 1);
		snprintf(label, sizeof(label), "%s local %u: gzip:%d: %s",
			 ocl->name, local_sizes[l], level, c->what);
		run_backend(ocl, &p, label, seed, ref, 0);
	}
	unsetenv("SHARDPIPE_KERNEL_DEBUG");
#else
	(void)ocl;
#endif
	for (int b = 0; b < BATCHES; b++) {
		free(ref[b].offsets);
		free(ref[b].data);
	}
	plan_free(&p);
}

/* A chunk one byte over SP_DEFL_MAX_CHUNK is refused at open, before the
 * backend allocates its pools. */
static void check_refusal(const struct backend_ops *ops, const char *name)
{
	shardpipe_desc desc;
	struct plan p;
	struct sp_err err;
	void *ctx = NULL;
	int rc;

	shardpipe_desc_init(&desc);
	desc.rank = 1;
	desc.dtype = SHARDPIPE_DTYPE_UINT8;
	desc.dims[0].size = 0;
	desc.dims[0].chunk = (uint64_t)SP_DEFL_MAX_CHUNK + 1;
	desc.dims[0].chunks_per_shard = 1;
	desc.codec = SHARDPIPE_CODEC_GZIP;
	desc.level = 1;
	sp_err_clear(&err);
	if (plan_init(&p, &desc, &err) != SHARDPIPE_OK)
		bail("plan for a chunk of %llu bytes: %s",
		     (unsigned long long)desc.dims[0].chunk, err.msg);
	rc = ops->open(&p, &ctx, &err);
	if (!ok(rc == SHARDPIPE_ERR_CODEC && strstr(err.msg, "at most"),
		"%s: gzip refuses chunks of SP_DEFL_MAX_CHUNK + 1 bytes", name))
		diag("open returned %d: %s", rc, err.msg);
	if (rc == SHARDPIPE_OK)
		ops->close(ctx);
	plan_free(&p);
}

int main(void)
{
	const struct backend_ops *ocl = NULL;
	uint64_t seed = test_seed();

#ifdef SP_TEST_PLUGIN
	ocl = plugin_under_test();
#endif
	plan_lazy();
	check_refusal(&sp_backend_reference, "reference");
#ifdef SP_TEST_OPENCL
	check_refusal(ocl, "opencl");
#endif
	for (int level = 0; level <= 9; level++) {
		for (size_t i = 0; i < N_KCFGS; i++)
			run_config(ocl, &kcfgs[i], level, seed + i);
		for (size_t i = 0; i < N_BIG; i++)
			run_config(ocl, &big_cfgs[i], level, seed + 100 + i);
	}
	return done_testing();
}
