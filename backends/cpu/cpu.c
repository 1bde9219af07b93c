/*
 * cpu.c - the cpu backend: OpenMP threads over chunks, libzstd and
 * libdeflate with one context per thread (DESIGN.md "Compression kernels").
 */
#include <stdlib.h>

#include <libdeflate.h>
#include <zstd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"

struct cpu_ctx {
	const struct plan *plan;
	uint64_t nchunks;       /* K * M */
	uint8_t *chunks;        /* nchunks * chunk_bytes */
	uint8_t *packed;        /* nchunks * slot_capacity */
	uint64_t *sizes;        /* per chunk */
	uint64_t *offsets;      /* nchunks + 1, by position */
	uint8_t *aggregated;
	ZSTD_CCtx **zctx;       /* one per thread */
	struct libdeflate_compressor **dctx;
	int failed_chunk;       /* first chunk a compressor failed on */
};

static int thread_id(void)
{
#ifdef _OPENMP
	return omp_get_thread_num();
#else
	return 0;
#endif
}

static int cpu_probe(shardpipe_backend_info *info)
{
	int n = 1;

#ifdef _OPENMP
	n = omp_get_num_procs();
#endif
	info->usable = 1;
	info->gpu = 0;
	snprintf(info->detail, sizeof(info->detail),
		 "%d cores, libzstd %s, libdeflate %s%s", n,
		 ZSTD_versionString(), LIBDEFLATE_VERSION_STRING,
#ifdef _OPENMP
		 ", OpenMP"
#else
		 ", no OpenMP"
#endif
	);
	return SHARDPIPE_OK;
}

static void cpu_close(void *vctx)
{
	struct cpu_ctx *c = vctx;

	if (c == NULL)
		return;
	for (int t = 0; c->zctx && t < c->plan->threads; t++)
		ZSTD_freeCCtx(c->zctx[t]);
	for (int t = 0; c->dctx && t < c->plan->threads; t++)
		libdeflate_free_compressor(c->dctx[t]);
	free(c->zctx);
	free(c->dctx);
	free(c->chunks);
	free(c->packed);
	free(c->sizes);
	free(c->offsets);
	free(c->aggregated);
	free(c);
}

static int cpu_open(const struct plan *p, void **out, struct sp_err *err)
{
	struct cpu_ctx *c = calloc(1, sizeof(*c));
	int nt = p->threads, ok = 1;

	SP_RETURN_IF(c == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	c->plan = p;
	c->nchunks = p->K * p->M;
	c->chunks = malloc(c->nchunks * p->chunk_bytes);
	c->sizes = malloc(c->nchunks * sizeof(*c->sizes));
	c->offsets = malloc((c->nchunks + 1) * sizeof(*c->offsets));
	c->aggregated = malloc(c->nchunks * p->slot_capacity);
	ok = c->chunks && c->sizes && c->offsets && c->aggregated;
	/* Codec none aggregates straight from the chunk pool. */
	if (ok && p->codec != SHARDPIPE_CODEC_NONE) {
		c->packed = malloc(c->nchunks * p->slot_capacity);
		ok = c->packed != NULL;
	}
	if (ok && p->codec == SHARDPIPE_CODEC_ZSTD) {
		c->zctx = calloc((size_t)nt, sizeof(*c->zctx));
		for (int t = 0; c->zctx && t < nt && ok; t++)
			ok = (c->zctx[t] = ZSTD_createCCtx()) != NULL;
		ok = ok && c->zctx;
	}
	if (ok && p->codec == SHARDPIPE_CODEC_GZIP) {
		c->dctx = calloc((size_t)nt, sizeof(*c->dctx));
		for (int t = 0; c->dctx && t < nt && ok; t++)
			ok = (c->dctx[t] = libdeflate_alloc_compressor(
				      p->level)) != NULL;
		ok = ok && c->dctx;
		/* The slot must hold libdeflate's own worst case. */
		if (ok && libdeflate_gzip_compress_bound(c->dctx[0],
							 p->chunk_bytes) >
				  p->slot_capacity) {
			cpu_close(c);
			return sp_err_set(err, SHARDPIPE_ERR_CODEC,
					  "libdeflate's bound exceeds the "
					  "planned slot capacity");
		}
	}
	if (!ok) {
		cpu_close(c);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
				  "out of memory for cpu pools of %llu chunks",
				  (unsigned long long)c->nchunks);
	}
	*out = c;
	return SHARDPIPE_OK;
}

/*
 * Gather chunk ci of the batch into its slot: contiguous runs of the
 * innermost dimension are copied whole, padding cells are zeroed.
 */
static void gather_chunk(const struct plan *p, const uint8_t *batch,
			 uint8_t *dst, uint64_t ci)
{
	uint64_t origin[SHARDPIPE_MAX_RANK], extent[SHARDPIPE_MAX_RANK];
	uint64_t n[SHARDPIPE_MAX_RANK] = { 0 };
	uint64_t e = ci / p->M, i = ci % p->M;
	const int last = p->rank - 1;
	const size_t es = p->esize;
	const uint8_t *src = batch + e * p->epoch_bytes;

	plan_chunk_box(p, i, origin, extent);
	size_t run_bytes = (size_t)extent[last] * es;
	size_t row_bytes = (size_t)p->chunk[last] * es;
	uint64_t rows = p->chunk_elems / p->chunk[last];

	for (uint64_t r = 0; r < rows; r++) {
		uint8_t *out = dst + r * row_bytes;
		int inside = 1;
		uint64_t off = origin[last];

		for (int d = 0; d < last; d++) {
			inside &= n[d] < extent[d];
			off += (origin[d] + n[d]) * p->in_stride[d];
		}
		if (inside) {
			memcpy(out, src + off * es, run_bytes);
			memset(out + run_bytes, 0, row_bytes - run_bytes);
		} else {
			memset(out, 0, row_bytes);
		}
		/* Next row: odometer over dims 0..last-1 of the chunk. */
		for (int d = last - 1; d >= 0; d--) {
			if (++n[d] < p->chunk[d])
				break;
			n[d] = 0;
		}
	}
}

static int cpu_scatter(void *vctx, const void *batch, struct sp_err *err)
{
	struct cpu_ctx *c = vctx;
	const struct plan *p = c->plan;
	int64_t nc = (int64_t)c->nchunks;

#pragma omp parallel for num_threads(p->threads) schedule(dynamic)
	for (int64_t ci = 0; ci < nc; ci++)
		gather_chunk(p, batch, c->chunks + (uint64_t)ci * p->chunk_bytes,
			     (uint64_t)ci);
	return SHARDPIPE_OK;
}

static int cpu_compress(void *vctx, struct sp_err *err)
{
	struct cpu_ctx *c = vctx;
	const struct plan *p = c->plan;
	int64_t nc = (int64_t)c->nchunks;
	int failed = -1;

	if (p->codec == SHARDPIPE_CODEC_NONE) {
		for (uint64_t ci = 0; ci < c->nchunks; ci++)
			c->sizes[ci] = p->chunk_bytes;
		return SHARDPIPE_OK;
	}
#pragma omp parallel for num_threads(p->threads) schedule(dynamic)
	for (int64_t ci = 0; ci < nc; ci++) {
		const uint8_t *src = c->chunks + (uint64_t)ci * p->chunk_bytes;
		uint8_t *dst = c->packed + (uint64_t)ci * p->slot_capacity;
		size_t r;

		if (p->codec == SHARDPIPE_CODEC_ZSTD) {
			r = ZSTD_compressCCtx(c->zctx[thread_id()], dst,
					      p->slot_capacity, src,
					      p->chunk_bytes, p->level);
			if (ZSTD_isError(r))
				r = 0;
		} else {
			r = libdeflate_gzip_compress(c->dctx[thread_id()], src,
						     p->chunk_bytes, dst,
						     p->slot_capacity);
		}
		c->sizes[ci] = r;
		if (r == 0) {
#pragma omp critical
			if (failed < 0 || ci < failed)
				failed = (int)ci;
		}
	}
	SP_RETURN_IF(failed >= 0, err, SHARDPIPE_ERR_CODEC_FAILED,
		     "%s failed on chunk %d of the batch",
		     p->codec == SHARDPIPE_CODEC_ZSTD ? "zstd" : "gzip",
		     failed);
	return SHARDPIPE_OK;
}

static int cpu_aggregate(void *vctx, struct sp_err *err)
{
	struct cpu_ctx *c = vctx;
	const struct plan *p = c->plan;
	const uint8_t *src = p->codec == SHARDPIPE_CODEC_NONE ? c->chunks
							       : c->packed;
	uint64_t stride = p->codec == SHARDPIPE_CODEC_NONE ? p->chunk_bytes
							   : p->slot_capacity;
	int64_t nc = (int64_t)c->nchunks;

	/* Pass 1 and 2: sizes by position, exclusive scan. */
	for (uint64_t ci = 0; ci < c->nchunks; ci++) {
		uint64_t pos = (ci / p->M) * p->M + p->perm[ci % p->M];

		c->offsets[pos + 1] = c->sizes[ci];
	}
	c->offsets[0] = 0;
	for (uint64_t j = 0; j < c->nchunks; j++)
		c->offsets[j + 1] += c->offsets[j];
	/* Pass 3: gather. */
#pragma omp parallel for num_threads(p->threads) schedule(dynamic)
	for (int64_t ci = 0; ci < nc; ci++) {
		uint64_t u = (uint64_t)ci;
		uint64_t pos = (u / p->M) * p->M + p->perm[u % p->M];

		memcpy(c->aggregated + c->offsets[pos], src + u * stride,
		       c->sizes[u]);
	}
	return SHARDPIPE_OK;
}

static int cpu_fetch(void *vctx, struct batch_result *out, struct sp_err *err)
{
	struct cpu_ctx *c = vctx;

	out->data = c->aggregated;
	out->offsets = c->offsets;
	return SHARDPIPE_OK;
}

const struct backend_ops sp_backend_cpu = {
	.name = "cpu",
	.probe = cpu_probe,
	.open = cpu_open,
	.scatter = cpu_scatter,
	.compress = cpu_compress,
	.aggregate = cpu_aggregate,
	.fetch = cpu_fetch,
	.close = cpu_close,
};
