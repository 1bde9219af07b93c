/*
 * kernels-stages.c - stage-level checks of the kernel backends, batch by
 * batch on the same plan: the scatter output (the chunk pool) equals an
 * element-by-element model and the cpu backend's pool; the aggregate
 * output (offsets and bytes) equals the cpu backend's; aggregate over
 * compressed sizes no codec produces yet (0, odd, full) equals a plain
 * gather; the chunks left out as all fill value (compressed size 0) are
 * exactly those whose cells inside the array all hold it, on the kernel
 * backend and on both of the cpu backend's paths.  Both batches are in
 * the backend before the first is fetched, as a stream has them, and a
 * third scatter is refused.  Built three times: t/kernels-stages runs
 * `reference`,
 * t/opencl-stages (SP_TEST_OPENCL) runs `opencl` and t/cuda-stages
 * (SP_TEST_CUDA) runs `cuda` at several local sizes.
 */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "driver.h"
#include "kernels-configs.h"
#include "plan.h"
#include "plugin-under-test.h"
#include "stages.h"
#include "tap.h"
#include "testutil.h"

#define BATCHES 2

#ifdef SP_TEST_PLUGIN
static const unsigned local_sizes[] = { 1, 7, 64, 256 };
#else
static const unsigned local_sizes[] = { 0 };
#endif
#define N_LOCAL (sizeof(local_sizes) / sizeof(local_sizes[0]))

/* Cell c of the chunk of epoch e with this box: whether it lies inside
 * the array, and its input offset in bytes into the batch. */
static int cell_src(const struct plan *p, uint64_t e, const uint64_t *origin,
		    const uint64_t *extent, uint64_t c, uint64_t *src)
{
	uint64_t rest = c;
	int inside = 1;

	*src = e * p->epoch_bytes;
	for (int d = p->rank - 1; d >= 0; d--) {
		uint64_t n = rest % p->chunk[d];

		rest /= p->chunk[d];
		inside &= n < extent[d];
		*src += (origin[d] + n) * p->in_stride[d] * p->esize;
	}
	return inside;
}

/* The chunk pool of one batch, cell by cell from the plan's definition:
 * the input's cells, the fill value past the edge. */
static void model_pool(const struct plan *p, const uint8_t *batch,
		       uint8_t *pool)
{
	uint64_t origin[SHARDPIPE_MAX_RANK], extent[SHARDPIPE_MAX_RANK];

	for (uint64_t e = 0; e < p->K; e++)
		for (uint64_t i = 0; i < p->M; i++) {
			uint8_t *chunk = pool + (e * p->M + i) * p->chunk_bytes;

			plan_chunk_box(p, i, origin, extent);
			for (uint64_t c = 0; c < p->chunk_elems; c++) {
				uint64_t src;

				if (cell_src(p, e, origin, extent, c, &src))
					memcpy(chunk + c * p->esize, batch + src,
					       p->esize);
				else    /* padding: the fill value (§22.1) */
					memcpy(chunk + c * p->esize,
					       p->fill_le, p->esize);
			}
		}
}

/* Aggregate of slots (each `cap` apart) with the given sizes. */
static void model_aggregate(const struct plan *p, const uint8_t *slots,
			    uint64_t cap, const uint64_t *sizes, uint8_t *out,
			    uint64_t *offsets)
{
	uint64_t n = p->K * p->M;
	uint64_t *by_pos = test_xmalloc(n * sizeof(*by_pos));

	for (uint64_t j = 0; j < n; j++)
		by_pos[(j / p->M) * p->M + p->perm[j % p->M]] = j;
	offsets[0] = 0;
	for (uint64_t q = 0; q < n; q++) {
		uint64_t j = by_pos[q];

		memcpy(out + offsets[q], slots + j * cap, sizes[j]);
		offsets[q + 1] = offsets[q] + sizes[j];
	}
	free(by_pos);
}

/* A batch of random rows; rows past a bounded array's end are zero. */
static void make_batch(const struct plan *p, uint64_t b, uint8_t *batch,
		       uint64_t *rng)
{
	uint64_t first_row = b * p->K * p->chunk[0];

	test_fill(batch, p->batch_bytes, 0, rng);
	for (uint64_t r = 0; r < p->K * p->chunk[0]; r++)
		if (p->size[0] != 0 && first_row + r >= p->size[0])
			/* Past a bounded end: fill, as the host pads. */
			for (uint64_t x = 0; x < p->row_bytes; x++)
				batch[r * p->row_bytes + x] =
					p->fill_le[x % p->esize];
}

struct cpu_out {
	uint8_t *pool;     /* the cpu's pool, recovered from its aggregate */
	uint8_t *data;
	uint64_t *offsets;
	uint64_t bytes;
};

static void run_cpu(const struct plan *p, const uint8_t *batch,
		    struct cpu_out *o)
{
	struct sp_err err;
	struct fetched res;
	void *ctx;
	uint64_t n = p->K * p->M;

	sp_err_clear(&err);
	if (sp_backend_cpu.open(p, &ctx, &err) != SHARDPIPE_OK ||
	    sp_backend_cpu.scatter(ctx, batch, &err) != SHARDPIPE_OK ||
	    sp_backend_cpu.compress(ctx, &err) != SHARDPIPE_OK ||
	    sp_backend_cpu.aggregate(ctx, &err) != SHARDPIPE_OK ||
	    fetch_batch(&sp_backend_cpu, ctx, n, &res, &err) != SHARDPIPE_OK)
		bail("cpu backend: %s", err.msg);
	o->bytes = res.offsets[n];
	o->data = res.data;
	o->offsets = res.offsets;
	o->pool = test_xmalloc(n * p->chunk_bytes);
	for (uint64_t j = 0; j < n; j++) {
		uint64_t q = (j / p->M) * p->M + p->perm[j % p->M];

		memcpy(o->pool + j * p->chunk_bytes, o->data + o->offsets[q],
		       p->chunk_bytes);
	}
	sp_backend_cpu.close(ctx);
}

static void free_cpu(struct cpu_out *o)
{
	free(o->pool);
	free(o->data);
	free(o->offsets);
}

/* Aggregate over random sizes, compared with the plain gather. */
static void check_ragged_aggregate(const struct backend_ops *ops, void *ctx,
				   const struct plan *p, const char *label,
				   uint64_t *rng)
{
	uint64_t n = p->K * p->M, cap = p->slot_capacity;
	uint8_t *slots = test_xmalloc(n * cap), *want = test_xmalloc(n * cap);
	uint64_t *sizes = test_xmalloc(n * sizeof(*sizes));
	uint64_t *want_off = test_xmalloc((n + 1) * sizeof(*want_off));
	struct fetched res = { 0 };
	struct sp_err err;

	sp_err_clear(&err);
	test_fill(slots, n * cap, 0, rng);
	for (uint64_t j = 0; j < n; j++) {
		uint64_t r = test_rand(rng) % 4;

		sizes[j] = r == 0 ? 0 : r == 1 ? cap : test_rand(rng) % (cap + 1);
	}
	model_aggregate(p, slots, cap, sizes, want, want_off);
	if (!ok(kdrv_debug_set_slots(ctx, slots, sizes, &err) == SHARDPIPE_OK &&
		ops->aggregate(ctx, &err) == SHARDPIPE_OK &&
		fetch_batch(ops, ctx, n, &res, &err) == SHARDPIPE_OK,
		"%s: aggregate of ragged sizes runs", label)) {
		diag("%s", err.msg);
	} else {
		is_blob(res.offsets, want_off, (n + 1) * sizeof(*want_off),
			"%s: ragged offsets", label);
		is_blob(res.data, want, want_off[n], "%s: ragged bytes", label);
	}
	fetched_free(&res);
	free(slots);
	free(want);
	free(sizes);
	free(want_off);
}

/* The input offsets (bytes into the batch) of the cells of chunk i of
 * epoch e that lie inside the array; returns how many. */
static uint64_t inside_cells(const struct plan *p, uint64_t e, uint64_t i,
			     uint64_t *offs)
{
	uint64_t origin[SHARDPIPE_MAX_RANK], extent[SHARDPIPE_MAX_RANK];
	uint64_t k = 0;

	plan_chunk_box(p, i, origin, extent);
	for (uint64_t c = 0; c < p->chunk_elems; c++)
		if (cell_src(p, e, origin, extent, c, &offs[k]))
			k++;
	return k;
}

/* Compressed sizes by chunk (batch order) from sizes by position. */
static void sizes_by_chunk(const struct plan *p, const uint64_t *by_pos,
			   uint64_t *out)
{
	for (uint64_t j = 0; j < p->K * p->M; j++)
		out[j] = by_pos[(j / p->M) * p->M + p->perm[j % p->M]];
}

/*
 * Chunks of fill value only: a batch where each chunk is all fill inside
 * the array, all fill but one byte of one inside cell, or random (rows
 * past a bounded end are fill, as the host pads them), with a random
 * fill value, which scatter pads edge chunks with.  The sizes of
 * the kernel backend's batch, of the cpu backend's stage entries and of
 * its fused pass must be 0 exactly where the model finds only fill.
 */
static void check_empty(const struct backend_ops *ops, const struct kcfg *c,
			const char *label, uint64_t *rng)
{
	shardpipe_desc desc;
	struct plan p;
	struct sp_err err;
	void *ctx = NULL, *cctx = NULL;
	uint64_t n, *cells, *want, *got, *pos, empties = 0;
	uint8_t *batch;
	struct fetched res = { 0 };
	struct batch_times fused;

	kcfg_desc(c, &desc);
	for (size_t b = 0; b < shardpipe_dtype_size(c->dtype); b++)
		desc.fill_value[b] = (uint8_t)(1 + test_rand(rng) % 255);
	sp_err_clear(&err);
	if (plan_init(&p, &desc, &err) != SHARDPIPE_OK)
		bail("plan for %s: %s", c->what, err.msg);
	p.K = 3;
	p.batch_bytes = p.K * p.epoch_bytes;
	n = p.K * p.M;
	batch = test_xmalloc(p.batch_bytes);
	cells = test_xmalloc(p.chunk_elems * sizeof(*cells));
	want = test_xmalloc(n * sizeof(*want));
	got = test_xmalloc(n * sizeof(*got));
	pos = test_xmalloc(n * sizeof(*pos));

	test_fill(batch, p.batch_bytes, 0, rng);
	for (uint64_t r = 0; r < p.K * p.chunk[0]; r++)
		if (p.size[0] != 0 && r >= p.size[0])
			for (uint64_t x = 0; x < p.row_bytes; x++)
				batch[r * p.row_bytes + x] =
					p.fill_le[x % p.esize];
	for (uint64_t j = 0; j < n; j++) {
		uint64_t e = j / p.M, k = inside_cells(&p, e, j % p.M, cells);
		uint64_t kind = test_rand(rng) % 4;

		for (uint64_t q = 0; q < k && kind < 3; q++)
			memcpy(batch + cells[q], p.fill_le, p.esize);
		if (kind == 1)
			batch[cells[test_rand(rng) % k] +
			      test_rand(rng) % p.esize] ^= 0x10;
	}
	for (uint64_t j = 0; j < n; j++) {
		uint64_t k = inside_cells(&p, j / p.M, j % p.M, cells), q;

		for (q = 0; q < k; q++)
			if (memcmp(batch + cells[q], p.fill_le, p.esize) != 0)
				break;
		want[j] = q == k ? 0 : p.chunk_bytes;
		empties += q == k;
	}

	if (!ok(ops->open(&p, &ctx, &err) == SHARDPIPE_OK &&
		ops->scatter(ctx, batch, &err) == SHARDPIPE_OK &&
		ops->compress(ctx, &err) == SHARDPIPE_OK &&
		ops->aggregate(ctx, &err) == SHARDPIPE_OK &&
		fetch_batch(ops, ctx, n, &res, &err) == SHARDPIPE_OK,
		"%s: a batch with chunks of fill value runs", label)) {
		diag("%s", err.msg);
	} else {
		for (uint64_t q = 0; q < n; q++)
			pos[q] = res.offsets[q + 1] - res.offsets[q];
		sizes_by_chunk(&p, pos, got);
		is_blob(got, want, n * sizeof(*want),
			"%s: sizes 0 exactly for the %llu chunks of fill "
			"value only", label, (unsigned long long)empties);
	}
	if (ctx != NULL)
		ops->close(ctx);
	fetched_free(&res);

	if (sp_backend_cpu.open(&p, &cctx, &err) != SHARDPIPE_OK ||
	    sp_backend_cpu.scatter(cctx, batch, &err) != SHARDPIPE_OK ||
	    sp_backend_cpu.compress(cctx, &err) != SHARDPIPE_OK ||
	    sp_backend_cpu.aggregate(cctx, &err) != SHARDPIPE_OK ||
	    fetch_batch(&sp_backend_cpu, cctx, n, &res, &err) != SHARDPIPE_OK)
		bail("cpu backend: %s", err.msg);
	for (uint64_t q = 0; q < n; q++)
		pos[q] = res.offsets[q + 1] - res.offsets[q];
	sizes_by_chunk(&p, pos, got);
	fetched_free(&res);
	is_blob(got, want, n * sizeof(*want),
		"cpu stage entries: %s: the same sizes 0", c->what);
	{
		uint8_t *slots = test_xmalloc(n * p.slot_capacity);
		uint8_t **dst = test_xmalloc(n * sizeof(*dst));

		for (uint64_t q = 0; q < n; q++)
			dst[q] = slots + q * p.slot_capacity;
		if (sp_backend_cpu.run_batch(cctx, batch, p.K, 0, dst, pos,
					     &fused, &err) != SHARDPIPE_OK)
			bail("cpu backend: %s", err.msg);
		free(dst);
		free(slots);
	}
	sizes_by_chunk(&p, pos, got);
	is_blob(got, want, n * sizeof(*want),
		"cpu fused pass: %s: the same sizes 0", c->what);
	sp_backend_cpu.close(cctx);
	free(batch);
	free(cells);
	free(want);
	free(got);
	free(pos);
	plan_free(&p);
}

static void run_config(const struct backend_ops *ops, const struct kcfg *c,
		       unsigned local, uint64_t seed)
{
	shardpipe_desc desc;
	struct plan p;
	struct sp_err err;
	void *ctx = NULL;
	char label[160];
	uint64_t rng = seed, n, b;
	uint8_t *batch, *pool, *got_pool;
	struct cpu_out cpu[BATCHES];

	if (local != 0)
		snprintf(label, sizeof(label), "%s local %u: %s", ops->name,
			 local, c->what);
	else
		snprintf(label, sizeof(label), "%s: %s", ops->name, c->what);
	kcfg_desc(c, &desc);
	/* A nonzero fill value, so that the padding of edge chunks is
	 * seen; its bytes differ, so that an element's byte order is. */
	for (size_t k = 0; k < shardpipe_dtype_size(c->dtype); k++)
		desc.fill_value[k] = (uint8_t)(0x31 + 0x22 * k);
	sp_err_clear(&err);
	if (plan_init(&p, &desc, &err) != SHARDPIPE_OK)
		bail("plan for %s: %s", c->what, err.msg);
	/* A few epochs per batch keep the model cheap and still cross
	 * epoch boundaries inside a batch.  Every chunk is stored, so that
	 * the pool can be read back from cpu's aggregate; check_empty tests
	 * what is left out. */
	p.K = 3;
	p.write_empty_chunks = 1;
	p.batch_bytes = p.K * p.epoch_bytes;
	n = p.K * p.M;
	batch = test_xmalloc(p.batch_bytes);
	pool = test_xmalloc(n * p.chunk_bytes);
	got_pool = test_xmalloc(n * p.chunk_bytes);

	if (ops->open(&p, &ctx, &err) != SHARDPIPE_OK) {
		/* A device whose work-groups are smaller than the size
		 * asked for cannot run it; that is no fault of the kernels. */
		if (local != 0 && strstr(err.msg, "SHARDPIPE_KERNEL_DEBUG"))
			skip(1, "%s: %s", label, err.msg);
		else if (!ok(0, "%s: open", label))
			diag("%s", err.msg);
		goto out;
	}
	/* Both batches go in before the first comes out, as a stream
	 * issues batch k+1 before it fetches batch k. */
	for (b = 0; b < BATCHES; b++) {
		make_batch(&p, b, batch, &rng);
		model_pool(&p, batch, pool);
		run_cpu(&p, batch, &cpu[b]);
		is_blob(cpu[b].pool, pool, n * p.chunk_bytes,
			"cpu: %s: batch %llu pool equals the model", c->what,
			(unsigned long long)b);
		if (!ok(ops->scatter(ctx, batch, &err) == SHARDPIPE_OK &&
			kdrv_debug_read_pool(ctx, got_pool, &err) ==
				SHARDPIPE_OK,
			"%s: batch %llu scatter", label, (unsigned long long)b)) {
			diag("%s", err.msg);
			break;
		}
		is_blob(got_pool, cpu[b].pool, n * p.chunk_bytes,
			"%s: batch %llu pool equals cpu's", label,
			(unsigned long long)b);
		if (!ok(ops->compress(ctx, &err) == SHARDPIPE_OK &&
			ops->aggregate(ctx, &err) == SHARDPIPE_OK,
			"%s: batch %llu compress, aggregate", label,
			(unsigned long long)b)) {
			diag("%s", err.msg);
			break;
		}
	}
	if (b == BATCHES) {
		int rc = ops->scatter(ctx, batch, &err);

		if (!ok(rc == SHARDPIPE_ERR_INVALID_ARGUMENT,
			"%s: a third batch before any fetch is refused",
			label))
			diag("scatter returned %d: %s", rc, err.msg);
	}
	for (uint64_t f = 0; f < b; f++) {
		struct fetched res;

		if (!ok(fetch_batch(ops, ctx, n, &res, &err) == SHARDPIPE_OK,
			"%s: batch %llu fetch", label, (unsigned long long)f))
			diag("%s", err.msg);
		else if (is_blob(res.offsets, cpu[f].offsets,
				 (n + 1) * sizeof(uint64_t),
				 "%s: batch %llu offsets equal cpu's", label,
				 (unsigned long long)f))
			is_blob(res.data, cpu[f].data, cpu[f].bytes,
				"%s: batch %llu aggregate equals cpu's", label,
				(unsigned long long)f);
		fetched_free(&res);
	}
	for (uint64_t f = 0; f <= b && f < BATCHES; f++)
		free_cpu(&cpu[f]);
	if (b < BATCHES)
		goto out;
	check_ragged_aggregate(ops, ctx, &p, label, &rng);
	check_empty(ops, c, label, &rng);
out:
	if (ctx != NULL)
		ops->close(ctx);
	free(batch);
	free(pool);
	free(got_pool);
	plan_free(&p);
}

int main(void)
{
	const struct backend_ops *ops;
	uint64_t seed = test_seed();

#ifdef SP_TEST_PLUGIN
	ops = plugin_under_test();
#else
	ops = &sp_backend_reference;
#endif
	plan_lazy();
	for (size_t l = 0; l < N_LOCAL; l++) {
		char buf[32];

		if (local_sizes[l] != 0) {
			snprintf(buf, sizeof(buf), "local=%u", local_sizes[l]);
			setenv("SHARDPIPE_KERNEL_DEBUG", buf, 1);
		}
		for (size_t i = 0; i < N_KCFGS; i++)
			run_config(ops, &kcfgs[i], local_sizes[l], seed + i);
	}
	return done_testing();
}
