/*
 * blosc-stages.c - the blosc kernel (backends/kernels/blosc_encode.h) through the
 * kernel driver, batch by batch, for element sizes 1, 2, 4 and 8, each
 * shuffle mode and levels 0, 1, 4 and 9: chunks below c-blosc's 128-byte
 * minimum, below one block, of one block split into byte planes, of many
 * blocks (automatic and forced block sizes, last blocks partial, blocks
 * whose element count is not a multiple of 8), with mixed, constant and
 * incompressible content.  Every compressed chunk must be decoded by
 * c-blosc (blosc_decompress_ctx) to the chunk pool the scatter made, pass
 * blosc_cbuffer_validate, and carry the header the format and
 * blosc_layout.h's documented choices ask for (version, compressor,
 * shuffle flags, typesize, sizes, block size, stored only when it must).
 *
 * Built twice: t/blosc-stages runs `reference`; t/blosc-opencl
 * (SP_TEST_OPENCL) also runs `opencl` at local sizes 1, 7 and 64 and
 * requires its offsets and aggregated bytes to equal reference's exactly.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "driver.h"
#include "plan.h"
#include "plugin-under-test.h"
#include "stages.h"
#include "tap.h"
#include "testutil.h"

#ifdef HAVE_BLOSC
#include <blosc.h>

#define BATCHES 2

#ifdef SP_TEST_OPENCL
static const unsigned local_sizes[] = { 1, 7, 64 };
#define N_LOCAL (sizeof(local_sizes) / sizeof(local_sizes[0]))
#endif

enum { MIXED = -1, RANDOM = 0, CONSTANT = 1 };

struct bcfg {
	const char *what;
	int rank;
	shardpipe_dtype dtype;
	uint64_t size[3], chunk[3], cps[3];
	uint64_t rows;       /* rows appended when dim 0 is unbounded */
	uint32_t blocksize;  /* 0: automatic */
	int pattern;         /* MIXED: test_fill pattern by row */
};

static const struct bcfg cfgs[] = {
	{ "uint8, 100-byte chunks (stored)", 1, SHARDPIPE_DTYPE_UINT8,
	  { 1000 }, { 100 }, { 4 }, 0, 0, MIXED },
	{ "uint8, 129-byte chunks", 1, SHARDPIPE_DTYPE_UINT8, { 700 },
	  { 129 }, { 3 }, 0, 0, MIXED },
	{ "uint16, 256-byte chunks (128 elements, split)", 2,
	  SHARDPIPE_DTYPE_UINT16, { 37, 50 }, { 8, 16 }, { 2, 2 }, 0, 0,
	  MIXED },
	{ "uint16, 96000-byte chunks, one block", 2, SHARDPIPE_DTYPE_UINT16,
	  { 40, 3000 }, { 16, 3000 }, { 1, 1 }, 0, 0, MIXED },
	{ "uint16, 96000-byte chunks, 4096-byte blocks", 2,
	  SHARDPIPE_DTYPE_UINT16, { 40, 3000 }, { 16, 3000 }, { 1, 1 }, 0,
	  4096, MIXED },
	{ "float32, 320000-byte chunks, automatic blocks (one partial)", 2,
	  SHARDPIPE_DTYPE_FLOAT32, { 20, 5000 }, { 16, 5000 }, { 1, 1 }, 0,
	  0, MIXED },
	{ "uint64, 1000-byte blocks (125 elements)", 2,
	  SHARDPIPE_DTYPE_UINT64, { 9, 700 }, { 4, 700 }, { 1, 2 }, 0, 1000,
	  MIXED },
	{ "int16, 130-byte blocks, 124-byte last block", 2,
	  SHARDPIPE_DTYPE_INT16, { 16, 999 }, { 8, 999 }, { 1, 1 }, 0, 130,
	  MIXED },
	{ "int8, unbounded, partial last epoch", 3, SHARDPIPE_DTYPE_INT8,
	  { 0, 12, 300 }, { 5, 8, 160 }, { 2, 2, 1 }, 23, 0, MIXED },
	{ "uint32, constant", 2, SHARDPIPE_DTYPE_UINT32, { 16, 4096 },
	  { 8, 4096 }, { 1, 1 }, 0, 0, CONSTANT },
	{ "float64, incompressible", 2, SHARDPIPE_DTYPE_FLOAT64, { 8, 3000 },
	  { 4, 3000 }, { 1, 1 }, 0, 16384, RANDOM },
};
#define N_CFGS (sizeof(cfgs) / sizeof(cfgs[0]))

static const int levels[] = { 0, 1, 4, 9 };
#define N_LEVELS (sizeof(levels) / sizeof(levels[0]))

/* The block size blosc_layout.h documents, written out again here. */
static uint64_t expected_blocksize(uint64_t n, uint64_t ts, uint64_t forced)
{
	uint64_t b = forced == 0 ? (n < 262144 ? n : 262144)
				 : (forced < n ? forced : n);

	return b > ts ? b / ts * ts : b;
}

static void make_batch(const struct plan *p, int pattern, uint64_t b,
		       uint8_t *batch, uint64_t *rng)
{
	uint64_t rows = p->K * p->chunk[0], first = b * rows;

	for (uint64_t r = 0; r < rows; r++) {
		uint8_t *row = batch + r * p->row_bytes;

		test_fill(row, p->row_bytes,
			  pattern == MIXED ? (int)((first + r) % 7 % 4)
					   : pattern, rng);
	}
	if (pattern == CONSTANT)
		memset(batch, 0x5a, p->batch_bytes);
}

/* What is wrong with container c (len bytes) for pool chunk in, or NULL. */
static const char *check_chunk(const struct plan *p, const uint8_t *c,
			       uint64_t len, const uint8_t *in, uint8_t *back)
{
	uint64_t n = p->chunk_bytes;
	uint8_t want_flags = 4 << 5;
	size_t nbytes = 0;
	int stored;

	if (len < 16 || len > n + 16)
		return "size outside 16..nbytes + 16";
	stored = (c[2] & BLOSC_MEMCPYED) != 0;
	if (p->blosc_shuffle == SHARDPIPE_BLOSC_SHUFFLE)
		want_flags |= BLOSC_DOSHUFFLE;
	if (p->blosc_shuffle == SHARDPIPE_BLOSC_BITSHUFFLE)
		want_flags |= BLOSC_DOBITSHUFFLE;
	if (c[0] != 2 || c[1] != 1)
		return "not format version 2 with zstd format version 1";
	if ((c[2] & ~BLOSC_MEMCPYED) != want_flags)
		return "flags other than compressor zstd, the shuffle asked "
		       "and no 'do not split'";
	if (c[3] != p->esize)
		return "typesize is not the element size";
	if (test_le32(c + 4) != n || test_le32(c + 12) != len)
		return "nbytes or cbytes differ from the chunk's sizes";
	if (test_le32(c + 8) != expected_blocksize(n, p->esize,
						   p->blosc_blocksize))
		return "block size is not the documented choice";
	if (stored != (p->level == 0 || n < 128 || len == n + 16))
		return "stored when it need not be, or not when it must";
	if (blosc_cbuffer_validate(c, len, &nbytes) != 0 || nbytes != n)
		return "blosc_cbuffer_validate refuses it";
	memset(back, 0xee, n);
	if (blosc_decompress_ctx(c, back, n, 1) != (int)n)
		return "blosc_decompress_ctx does not decode it";
	if (memcmp(back, in, n) != 0)
		return "c-blosc decodes it to other bytes";
	return NULL;
}

struct result {
	uint64_t *offsets;
	uint8_t *data;
};

static void run_backend(const struct backend_ops *ops, const struct plan *p,
			int pattern, const char *label, uint64_t seed,
			struct result *out, int keep)
{
	uint64_t n = p->K * p->M, rng = seed, stored = 0;
	uint8_t *batch = test_xmalloc(p->batch_bytes);
	uint8_t *pool = test_xmalloc(n * p->chunk_bytes);
	uint8_t *back = test_xmalloc(p->chunk_bytes);
	struct sp_err err;
	void *ctx = NULL;

	sp_err_clear(&err);
	if (ops->open(p, &ctx, &err) != SHARDPIPE_OK) {
		if (!ok(0, "%s: open", label))
			diag("%s", err.msg);
		goto out;
	}
	for (uint64_t b = 0; b < BATCHES; b++) {
		struct fetched res = { 0 };
		const char *why = NULL;
		uint64_t bad = n;

		make_batch(p, pattern, b, batch, &rng);
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
		for (uint64_t j = 0; j < n && why == NULL; j++) {
			uint64_t q = (j / p->M) * p->M + p->perm[j % p->M];
			uint64_t at = res.offsets[q];

			why = check_chunk(p, res.data + at,
					  res.offsets[q + 1] - at,
					  pool + j * p->chunk_bytes, back);
			stored += res.data[at + 2] & BLOSC_MEMCPYED ? 1 : 0;
			bad = j;
		}
		if (!ok(why == NULL, "%s: batch %llu: %llu chunks decode with "
			"c-blosc, headers as documented", label,
			(unsigned long long)b, (unsigned long long)n))
			diag("chunk %llu: %s", (unsigned long long)bad, why);
		if (keep) {
			out[b].offsets =
				test_xmalloc((n + 1) * sizeof(uint64_t));
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
	if (keep && p->level == 1)
		diag("%s: %llu of %llu chunks stored", label,
		     (unsigned long long)stored,
		     (unsigned long long)(BATCHES * n));
out:
	if (ctx != NULL)
		ops->close(ctx);
	free(batch);
	free(pool);
	free(back);
}

static void run_config(const struct backend_ops *ocl, const struct bcfg *c,
		       shardpipe_blosc_shuffle shuffle, int level,
		       uint64_t seed)
{
	static const char *const shuffles[] = { "noshuffle", "shuffle",
						"bitshuffle" };
	shardpipe_desc desc;
	struct plan p;
	struct sp_err err;
	struct result ref[BATCHES];
	char label[200];

	memset(ref, 0, sizeof(ref));
	shardpipe_desc_init(&desc);
	desc.rank = c->rank;
	desc.dtype = c->dtype;
	desc.codec = SHARDPIPE_CODEC_BLOSC;
	desc.level = level;
	desc.blosc_cname = SHARDPIPE_BLOSC_ZSTD;
	desc.blosc_shuffle = shuffle;
	desc.blosc_blocksize = c->blocksize;
	for (int i = 0; i < c->rank; i++) {
		desc.dims[i].size = c->size[i];
		desc.dims[i].chunk = c->chunk[i];
		desc.dims[i].chunks_per_shard = c->cps[i];
	}
	sp_err_clear(&err);
	if (plan_init(&p, &desc, &err) != SHARDPIPE_OK)
		bail("plan for %s: %s", c->what, err.msg);
	/* Every chunk stored, so that each decodes (kernels-stages tests
	 * what is left out). */
	p.K = 2;
	p.write_empty_chunks = 1;
	p.batch_bytes = p.K * p.epoch_bytes;
	snprintf(label, sizeof(label), "reference: blosc:zstd:%d:%s: %s",
		 level, shuffles[shuffle], c->what);
	run_backend(&sp_backend_reference, &p, c->pattern, label, seed, ref,
		    1);
#ifdef SP_TEST_OPENCL
	for (size_t l = 0; l < N_LOCAL; l++) {
		char buf[16];

		snprintf(buf, sizeof(buf), "local=%u", local_sizes[l]);
		setenv("SHARDPIPE_KERNEL_DEBUG", buf, 1);
		snprintf(label, sizeof(label),
			 "opencl local %u: blosc:zstd:%d:%s: %s",
			 local_sizes[l], level, shuffles[shuffle], c->what);
		run_backend(ocl, &p, c->pattern, label, seed, ref, 0);
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

int main(void)
{
	const struct backend_ops *ocl = NULL;
	uint64_t seed = test_seed();

#ifdef SP_TEST_OPENCL
	ocl = plugin_under_test();
#endif
	plan_lazy();
	for (size_t i = 0; i < N_CFGS; i++)
		for (int sh = 0; sh < SHARDPIPE_BLOSC_SHUFFLE_COUNT_; sh++)
			for (size_t l = 0; l < N_LEVELS; l++)
				run_config(ocl, &cfgs[i],
					   (shardpipe_blosc_shuffle)sh,
					   levels[l], seed + 10 * i + sh);
	return done_testing();
}

#else /* !HAVE_BLOSC */

int main(void)
{
	skip_all("built without c-blosc: no independent blosc decoder");
}

#endif
