/*
 * cpu.c - the cpu backend (doc/design.md §6): a fused pass on its own worker
 * threads, stage entries on OpenMP, libzstd and libdeflate with one context
 * per thread.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <libdeflate.h>
#include <zstd.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#include "backend.h"
#include "copy.h"
#include "cpu_blosc.h"
#include "cpu_gather.h"
#include "cpu_reduce.h"
#include "pool.h"
#include "lanes.h"


/*
 * Pools.  The stage entries use chunks (scattered), packed (compressed
 * slots) and aggregated; the fused run_batch uses only packed and one
 * scratch item per thread: each thread gathers an item where it is about
 * to compress it, so the scattered bytes are still in cache, and the host
 * copies the compressed chunks straight out of their slots.  Pools are
 * allocated on first use, so a stream that runs fused never touches the
 * others (first touch of a page costs more than its copy on a VM).
 */
/*
 * The fused pass's threads: plan->threads - 1 workers that sleep on a
 * condition variable between batches, and the caller of run_batch as
 * lane 0.  Not OpenMP: libgomp's idle threads spin at the end of every
 * parallel region, and on 2 cores that spinning took a fifth of all cycles
 * from the stream's other threads (the caller staging the next batch, the
 * writer) in `shardpipe bench frames`.  Items are taken from one atomic
 * counter, so a thread that a busy machine slows takes fewer.
 */
struct lane {
	double sg, sc;          /* CPU seconds gathering, compressing */
	int64_t failed;         /* first chunk a compressor failed on */
	char pad[64];           /* keep lanes off each other's lines */
};

struct cpu_ctx;

struct crew {
	pthread_mutex_t mu;
	pthread_cond_t go, done;
	pthread_t *tid;
	int n;                  /* workers running */
	int busy;               /* workers not done with this job */
	int quit;
	uint64_t gen;           /* jobs started */
	/* The job: each lane calls it, and it takes units from next
	 * (atomic) until total. */
	void (*job)(struct cpu_ctx *c, int lane);
	uint64_t next, total;
	/* A fused pass: its batch (chunk-laid staging when laid, §14.7),
	 * and where its chunks and sizes go. */
	const uint8_t *in;
	int laid;
	uint8_t *const *dst;
	uint64_t *sizes;
};

/* A reduction's arguments, for the lanes (backend_ops.reduce). */
struct reduce_job {
	const uint8_t *rows, *carry;
	uint64_t nrows;
	int tail;
	uint8_t *out;
	uint64_t nout;          /* output elements */
};

struct cpu_ctx {
	const struct plan *plan;
	uint64_t nchunks;       /* K * M */
	uint8_t *chunks;        /* nchunks * chunk_bytes */
	uint8_t *packed;        /* nchunks * slot_capacity */
	uint64_t *sizes;        /* per chunk */
	uint64_t *offsets;      /* nchunks + 1, by position */
	uint8_t *aggregated;
	uint8_t **scratch;      /* per thread: one item, A*G chunks */
	ZSTD_CCtx **zctx;       /* one per thread */
	struct libdeflate_compressor **dctx;
	struct view view;       /* items of the stage entries */
	struct view fview;      /* items of run_batch */
	int deal_past;          /* laid staging is written past the cache */
	struct crew crew;       /* started by the first run_batch */
	int crew_started;
	struct reduce_job red;
	struct lane *lanes;     /* plan->threads */
};


static int thread_id(void)
{
#ifdef _OPENMP
	return omp_get_thread_num();
#else
	return 0;
#endif
}

static int cpu_probe(struct backend_probe *info)
{
	/* The same count the plan resolves threads from; not asked of
	 * OpenMP, whose runtime (LLVM's) would start up here, in every
	 * stream, though only the stage entries use it. */
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	info->usable = 1;
	info->gpu = 0;
	snprintf(info->detail, sizeof(info->detail),
		 "%ld cores, libzstd %s, libdeflate %s%s", n,
		 ZSTD_versionString(), LIBDEFLATE_VERSION_STRING,
#ifdef _OPENMP
		 ", OpenMP"
#else
		 ", no OpenMP"
#endif
	);
	return SHARDPIPE_OK;
}

/* One work item of the fused pass, gathered by one thread. */
static uint64_t scratch_bytes(const struct cpu_ctx *c)
{
	return c->fview.H * c->fview.A * c->fview.G * c->plan->chunk_bytes;
}

static void cpu_close(void *vctx)
{
	struct cpu_ctx *c = vctx;

	if (c == NULL)
		return;
	if (c->crew_started) {
		pthread_mutex_lock(&c->crew.mu);
		c->crew.quit = 1;
		pthread_cond_broadcast(&c->crew.go);
		pthread_mutex_unlock(&c->crew.mu);
		for (int w = 0; w < c->crew.n; w++)
			pthread_join(c->crew.tid[w], NULL);
		pthread_cond_destroy(&c->crew.go);
		pthread_cond_destroy(&c->crew.done);
		pthread_mutex_destroy(&c->crew.mu);
	}
	free(c->crew.tid);
	free(c->lanes);
	for (int t = 0; c->zctx && t < c->plan->threads; t++)
		ZSTD_freeCCtx(c->zctx[t]);
	for (int t = 0; c->dctx && t < c->plan->threads; t++)
		libdeflate_free_compressor(c->dctx[t]);
	free(c->zctx);
	free(c->dctx);
	pool_give(c->chunks, c->nchunks * c->plan->chunk_bytes);
	pool_give(c->packed, c->nchunks * c->plan->slot_capacity);
	pool_give(c->aggregated, c->nchunks * c->plan->slot_capacity);
	free(c->sizes);
	free(c->offsets);
	for (int t = 0; c->scratch && t < c->plan->threads; t++)
		pool_give(c->scratch[t], scratch_bytes(c));
	free(c->scratch);
	free(c);
}

/* Take *pool of n bytes on first use, from the pools that outlive the
 * stream (doc/design.md §27). */
static int pool_get(uint8_t **pool, uint64_t n, const char *what,
		    struct sp_err *err)
{
	if (*pool == NULL)
		*pool = pool_take(n);
	SP_RETURN_IF(*pool == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for the cpu %s pool of %llu bytes", what,
		     (unsigned long long)n);
	return SHARDPIPE_OK;
}

static int cpu_open(const struct plan *p, void **out, struct sp_err *err)
{
	struct cpu_ctx *c = calloc(1, sizeof(*c));
	int nt = p->threads, ok = 1;

	SP_RETURN_IF(c == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	c->plan = p;
	view_init(&c->view, p, 0);
	view_init(&c->fview, p, 1);
	c->nchunks = p->K * p->M;
	c->sizes = malloc(c->nchunks * sizeof(*c->sizes));
	c->offsets = malloc((c->nchunks + 1) * sizeof(*c->offsets));

	c->scratch = calloc((size_t)nt, sizeof(*c->scratch));
	c->lanes = calloc((size_t)nt, sizeof(*c->lanes));
	ok = c->sizes && c->offsets &&
	     c->scratch && c->lanes;
	if (ok && p->codec == SHARDPIPE_CODEC_ZSTD) {
		c->zctx = calloc((size_t)nt, sizeof(*c->zctx));
		for (int t = 0; c->zctx && t < nt && ok; t++)
			ok = (c->zctx[t] = ZSTD_createCCtx()) != NULL &&
			     (!p->zstd_checksum ||
			      (!ZSTD_isError(ZSTD_CCtx_setParameter(
				       c->zctx[t], ZSTD_c_compressionLevel,
				       p->level)) &&
			       !ZSTD_isError(ZSTD_CCtx_setParameter(
				       c->zctx[t], ZSTD_c_checksumFlag, 1))));
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
	if (ok && p->codec == SHARDPIPE_CODEC_BLOSC) {
		int rc = cpu_blosc_open(p, err);

		if (rc != SHARDPIPE_OK) {
			cpu_close(c);
			return rc;
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


static int cpu_scatter(void *vctx, const void *batch, struct sp_err *err)
{
	struct cpu_ctx *c = vctx;
	const struct plan *p = c->plan;
	const struct view *v = &c->view;
	const uint8_t *in = batch;
	int64_t n = (int64_t)(p->K * v->items);

	SP_FORWARD(pool_get(&c->chunks, c->nchunks * p->chunk_bytes,
			    "chunk", err));
	if (v->rank == 1) {
		/* Every dim merged: each epoch is one contiguous chunk. */
		memcpy(c->chunks, batch, (size_t)(p->K * p->chunk_bytes));
		return SHARDPIPE_OK;
	}
#pragma omp parallel for num_threads(p->threads) schedule(dynamic)
	for (int64_t k = 0; k < n; k++) {
		uint64_t e = (uint64_t)k / v->items, it = (uint64_t)k % v->items;

		gather_item(p, v, in + e * p->epoch_bytes,
			    c->chunks + (e * p->M + it * v->A * v->G) *
						p->chunk_bytes,
			    (size_t)p->chunk_bytes, it);
	}
	return SHARDPIPE_OK;
}

/* Compress one chunk into its slot with thread t's context; 0 on failure. */
static size_t compress_one(struct cpu_ctx *c, int t, const uint8_t *src,
			   uint8_t *dst)
{
	const struct plan *p = c->plan;
	size_t r;

	switch (p->codec) {
	case SHARDPIPE_CODEC_ZSTD:
		/* The checksum needs the advanced API (its level and flag are
		 * set on the context at open); without it the plain call keeps
		 * the historical bytes. */
		if (p->zstd_checksum)
			r = ZSTD_compress2(c->zctx[t], dst, p->slot_capacity,
					   src, p->chunk_bytes);
		else
			r = ZSTD_compressCCtx(c->zctx[t], dst, p->slot_capacity,
					      src, p->chunk_bytes, p->level);
		return ZSTD_isError(r) ? 0 : r;
	case SHARDPIPE_CODEC_BLOSC:
		return cpu_blosc_compress(p, src, dst);
	case SHARDPIPE_CODEC_GZIP:
		return libdeflate_gzip_compress(c->dctx[t], src, p->chunk_bytes,
						dst, p->slot_capacity);
	default:
		memcpy(dst, src, p->chunk_bytes);
		return p->chunk_bytes;
	}
}

static int cpu_compress(void *vctx, struct sp_err *err)
{
	struct cpu_ctx *c = vctx;
	const struct plan *p = c->plan;
	int64_t nc = (int64_t)c->nchunks;
	int failed = -1;

	SP_RETURN_IF(c->chunks == NULL, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "compress before any scatter");
	if (p->codec == SHARDPIPE_CODEC_NONE) {
		for (uint64_t ci = 0; ci < c->nchunks; ci++)
			c->sizes[ci] = left_out(p, c->chunks +
							   ci * p->chunk_bytes)
					       ? 0
					       : p->chunk_bytes;
		return SHARDPIPE_OK;
	}
	SP_FORWARD(pool_get(&c->packed, c->nchunks * p->slot_capacity,
			    "compressed", err));
#pragma omp parallel for num_threads(p->threads) schedule(dynamic)
	for (int64_t ci = 0; ci < nc; ci++) {
		const uint8_t *src = c->chunks + (uint64_t)ci * p->chunk_bytes;
		size_t r;

		if (left_out(p, src)) {
			c->sizes[ci] = 0;
			continue;
		}
		r = compress_one(c, thread_id(), src,
				 c->packed + (uint64_t)ci * p->slot_capacity);
		c->sizes[ci] = r;
		if (r == 0) {
#pragma omp critical
			if (failed < 0 || ci < failed)
				failed = (int)ci;
		}
	}
	SP_RETURN_IF(failed >= 0, err, SHARDPIPE_ERR_CODEC_FAILED,
		     "%s failed on chunk %d of the batch",
		     shardpipe_codec_name(p->codec), failed);
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

	SP_RETURN_IF(src == NULL, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "aggregate before any compress");
	SP_FORWARD(pool_get(&c->aggregated, c->nchunks * p->slot_capacity,
			    "aggregated", err));
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

/* CPU time of the calling thread: what a stage costs, whatever else the
 * machine runs meanwhile. */
static double thread_cpu(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
		return sp_now();
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Lane t's share of the fused pass: items until the counter runs out. */
static void fused_items(struct cpu_ctx *c, int t)
{
	const struct plan *p = c->plan;
	const struct view *v = &c->fview;
	const uint64_t per = v->H * v->A * v->G;   /* chunks per item */
	struct lane *ln = &c->lanes[t];

	for (;;) {
		uint64_t k = __atomic_fetch_add(&c->crew.next, 1,
						__ATOMIC_RELAXED);
		uint64_t e, it, first;
		const uint8_t *src;
		double a, b;

		if (k >= c->crew.total)
			break;
		e = k / v->items;
		it = k % v->items;
		src = c->crew.in + e * p->epoch_bytes;
		first = item_first(v, it);
		a = thread_cpu();
		/* Laid staging holds the item's chunks as the gather would
		 * (cpu_deal); left_out still finds the fill ones. */
		if (c->crew.laid) {
			src = c->crew.in + k * per * p->chunk_bytes;
		} else if (v->rank > 1 && !p->write_empty_chunks &&
			   item_is_fill(p, v, src, it)) {
			/* An item all of fill is left out before it is
			 * gathered. */
			for (uint64_t j = 0; j < per; j++)
				c->crew.sizes[e * p->M +
					      p->perm[item_chunk(v, first, j)]] = 0;
			ln->sg += thread_cpu() - a;
			continue;
		}
		/* With every dim merged the epoch is the chunk, contiguous
		 * already. */
		if (v->rank > 1 && !c->crew.laid) {
			gather_item(p, v, src, c->scratch[t],
				    (size_t)p->chunk_bytes, it);
			src = c->scratch[t];
		}
		b = thread_cpu();
		/* Laid, the deal was the gather, on the host's threads. */
		if (!c->crew.laid)
			ln->sg += b - a;
		for (uint64_t j = 0; j < per; j++) {
			const uint8_t *chunk = src + j * p->chunk_bytes;
			const uint64_t ci = item_chunk(v, first, j);
			uint64_t pos = e * p->M + p->perm[ci];
			size_t r = 0;

			if (!left_out(p, chunk) &&
			    (r = compress_one(c, t, chunk,
					      c->crew.dst[pos])) == 0 &&
			    (ln->failed < 0 || (int64_t)pos < ln->failed))
				ln->failed = (int64_t)pos;
			c->crew.sizes[pos] = r;
		}
		ln->sc += thread_cpu() - b;
	}
}

struct worker_arg {
	struct cpu_ctx *c;
	int lane;
};

static void *worker_main(void *varg)
{
	struct worker_arg arg = *(struct worker_arg *)varg;
	struct crew *w = &arg.c->crew;
	void (*job)(struct cpu_ctx *, int);
	uint64_t seen = 0;

	free(varg);
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->gen == seen && !w->quit)
			pthread_cond_wait(&w->go, &w->mu);
		if (w->quit)
			break;
		seen = w->gen;
		job = w->job;
		pthread_mutex_unlock(&w->mu);
		job(arg.c, arg.lane);
		pthread_mutex_lock(&w->mu);
		if (--w->busy == 0)
			pthread_cond_signal(&w->done);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* Start the workers; with fewer than asked for, the lanes left over are
 * simply never used. */
static int crew_start(struct cpu_ctx *c, struct sp_err *err)
{
	struct crew *w = &c->crew;
	int want = c->plan->threads - 1;

	w->tid = calloc((size_t)(want > 0 ? want : 1), sizeof(*w->tid));
	SP_RETURN_IF(w->tid == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for %d worker threads", want);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->go, NULL);
	pthread_cond_init(&w->done, NULL);
	c->crew_started = 1;
	for (int k = 0; k < want; k++) {
		struct worker_arg *a = malloc(sizeof(*a));

		if (a == NULL)
			break;
		a->c = c;
		a->lane = k + 1;
		if (pthread_create(&w->tid[w->n], NULL, worker_main, a) != 0) {
			free(a);
			break;
		}
		w->n++;
	}
	return SHARDPIPE_OK;
}

/* A lane of a group's shared threads (doc/design.md §26.2): the job this
 * context's crew would run. */
static void group_lane(void *arg, int lane)
{
	struct cpu_ctx *c = arg;

	c->crew.job(c, lane);
}

/* Run job on every lane over `total` items taken from one counter, the
 * caller as lane 0, and return once all are done: on the group's threads
 * when the stream has them (lanes_run waits for another stream's batch
 * first), else on this context's own. */
static int crew_run(struct cpu_ctx *c, void (*job)(struct cpu_ctx *, int),
		    uint64_t total, struct sp_err *err)
{
	struct crew *w = &c->crew;

	if (c->plan->lanes != NULL) {
		w->job = job;
		w->next = 0;
		w->total = total;
		lanes_run(c->plan->lanes, group_lane, c);
		return SHARDPIPE_OK;
	}
	if (!c->crew_started)
		SP_FORWARD(crew_start(c, err));
	pthread_mutex_lock(&w->mu);
	w->job = job;
	w->next = 0;
	w->total = total;
	w->busy = w->n;
	w->gen++;
	pthread_cond_broadcast(&w->go);
	pthread_mutex_unlock(&w->mu);
	job(c, 0);
	pthread_mutex_lock(&w->mu);
	while (w->busy > 0)
		pthread_cond_wait(&w->done, &w->mu);
	pthread_mutex_unlock(&w->mu);
	return SHARDPIPE_OK;
}

/* Outputs a reduction item takes: long enough to amortise locating its
 * first, short enough that every lane gets several. */
#define REDUCE_ITEM_OUTPUTS 16384

static void reduce_items(struct cpu_ctx *c, int lane)
{
	const struct reduce_job *r = &c->red;

	(void)lane;
	for (;;) {
		uint64_t k = __atomic_fetch_add(&c->crew.next, 1,
						__ATOMIC_RELAXED);
		uint64_t o = k * REDUCE_ITEM_OUTPUTS;

		if (k >= c->crew.total)
			break;
		cpu_reduce_outputs(c->plan, r->rows, r->carry, r->nrows,
				   r->tail, r->out, o,
				   r->nout - o < REDUCE_ITEM_OUTPUTS ?
					   r->nout : o + REDUCE_ITEM_OUTPUTS);
	}
}

static int cpu_reduce(void *vctx, const void *batch, uint64_t nrows,
		      const void *carry, int tail, void *out,
		      uint64_t out_rows, struct sp_err *err)
{
	struct cpu_ctx *c = vctx;
	const struct plan *p = c->plan;

	SP_RETURN_IF(p->reduce_geo[SP_RGEO_F0] == 0, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "reduce: level %d is the pyramid's last",
		     p->scale_level);
	c->red = (struct reduce_job){
		.rows = batch, .carry = carry, .nrows = nrows, .tail = tail,
		.out = out, .nout = out_rows * p->reduce_geo[SP_RGEO_OUT_ROW],
	};
	return crew_run(c, reduce_items,
			sp_ceil_div(c->red.nout, REDUCE_ITEM_OUTPUTS), err);
}

/*
 * Scatter and compress in one parallel pass: each thread gathers a work
 * item into its scratch and compresses its chunks at once, while they are
 * in cache, each straight into the place the host named for it (its slot
 * in its shard, doc/design.md §6.2): nothing is aggregated or copied
 * after.
 */
static int cpu_run_batch(void *vctx, const void *batch, uint64_t epochs,
			 int laid, uint8_t *const *dst, uint64_t *sizes,
			 struct batch_times *out, struct sp_err *err)
{
	struct cpu_ctx *c = vctx;
	const struct plan *p = c->plan;
	const struct view *v = &c->fview;
	double sg = 0, sc = 0;
	int64_t failed = -1;

	SP_RETURN_IF(epochs > p->K, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "a batch of %llu epochs, over the plan's %llu",
		     (unsigned long long)epochs, (unsigned long long)p->K);
	SP_RETURN_IF(laid && v->rank < 2, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "laid staging of a plan whose epoch is one chunk");
	for (int t = 0; t < p->threads; t++) {
		if (v->rank > 1 && !laid)
			SP_FORWARD(pool_get(&c->scratch[t], scratch_bytes(c),
					    "scratch", err));
		c->lanes[t].sg = c->lanes[t].sc = 0;
		c->lanes[t].failed = -1;
	}
	c->crew.in = batch;
	c->crew.laid = laid;
	c->crew.dst = dst;
	c->crew.sizes = sizes;
	SP_FORWARD(crew_run(c, fused_items, epochs * v->items, err));

	for (int t = 0; t < p->threads; t++) {
		sg += c->lanes[t].sg;
		sc += c->lanes[t].sc;
		if (c->lanes[t].failed >= 0 &&
		    (failed < 0 || c->lanes[t].failed < failed))
			failed = c->lanes[t].failed;
	}
	SP_RETURN_IF(failed >= 0, err, SHARDPIPE_ERR_CODEC_FAILED,
		     "%s failed on the chunk at position %lld of the batch",
		     shardpipe_codec_name(p->codec), (long long)failed);
	/* CPU time over threads: the wall time each stage would take on
	 * the threads alone, not moved by other processes. */
	out->seconds_scatter = sg / p->threads;
	out->seconds_compress = sc / p->threads;
	return SHARDPIPE_OK;
}

/* The stage entries hold one batch: tests run them one batch at a time,
 * and a stream on cpu runs the fused pass instead. */
static int cpu_fetch_offsets(void *vctx, const uint64_t **offsets,
			     struct sp_err *err)
{
	struct cpu_ctx *c = vctx;

	SP_RETURN_IF(c->aggregated == NULL, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "fetch before any aggregate");
	*offsets = c->offsets;
	return SHARDPIPE_OK;
}

static int cpu_fetch_ranges(void *vctx, const struct batch_range *r, size_t n,
			    struct sp_err *err)
{
	struct cpu_ctx *c = vctx;
	uint64_t total = c->offsets[c->nchunks];

	SP_RETURN_IF(c->aggregated == NULL, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "fetch before any aggregate");
	for (size_t i = 0; i < n; i++) {
		SP_RETURN_IF(r[i].off > total || r[i].len > total - r[i].off,
			     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "range %zu lies outside the %llu bytes of the "
			     "batch", i, (unsigned long long)total);
		memcpy(r[i].dst, c->aggregated + r[i].off, (size_t)r[i].len);
	}
	return SHARDPIPE_OK;
}

/* A stream runs fused: one item of scratch per thread; the chunks go
 * straight to the host's shard sets. */
static uint64_t cpu_pool_bytes(void *vctx)
{
	struct cpu_ctx *c = vctx;

	return c->fview.rank > 1 ? (uint64_t)c->plan->threads * scratch_bytes(c)
				 : 0;
}

/*
 * Chunk-laid staging (doc/design.md §14.7): an epoch laid out as the fused
 * pass's work items, item it's chunk j at (it * per + j) * chunk_bytes, as
 * gather_item would leave them in scratch.  A unit is one row of the view's
 * dim 0, which is outermost in each chunk, so units u0..u1 are one range of
 * every chunk.  Only where the input is row-major (no storage order left
 * after merging) and an epoch is more than one chunk.
 */
static uint64_t cpu_laid_bytes(void *vctx, uint64_t *unit)
{
	struct cpu_ctx *c = vctx;
	const struct view *v = &c->fview;

	if (v->rank < 2 || !v->dense)
		return 0;
	*unit = v->in_stride[0] * c->plan->esize;
	/* As the host's copy into row staging (design §14.1). */
	c->deal_past = copy_past_cache(c->plan->K * c->plan->M *
				       c->plan->chunk_bytes);
	return c->plan->M * c->plan->chunk_bytes;
}

static void cpu_deal(void *vctx, const void *rows, uint64_t u0, uint64_t u1,
		     void *out, unsigned part, unsigned parts)
{
	struct cpu_ctx *c = vctx;
	const struct plan *p = c->plan;
	const struct view *v = &c->fview;
	const uint64_t per = v->H * v->A * v->G;
	const size_t cb = (size_t)p->chunk_bytes;
	const size_t ub = cb / v->chunk[0];     /* a unit's bytes in a chunk */

	const uint64_t i0 = v->items * part / parts;
	const uint64_t i1 = v->items * (part + 1) / parts;

	for (uint64_t it = i0; it < i1; it++) {
		uint8_t *o = (uint8_t *)out + it * per * cb;

		if (rows != NULL) {
			gather_rows(p, v, rows, o, cb, it, u0, u1,
				    c->deal_past);
			continue;
		}
		for (uint64_t j = 0; j < per; j++)
			copy_fill(o + j * cb + u0 * ub, (size_t)(u1 - u0) * ub,
				  p->fill_le, p->esize);
	}
	/* The host hands the batch to other threads under a lock, which
	 * orders only stores that are complete. */
	if (c->deal_past)
		copy_fence();
}

const struct backend_ops sp_backend_cpu = {
	.name = "cpu",
	.probe = cpu_probe,
	.open = cpu_open,
	.scatter = cpu_scatter,
	.compress = cpu_compress,
	.aggregate = cpu_aggregate,
	.fetch_offsets = cpu_fetch_offsets,
	.fetch_ranges = cpu_fetch_ranges,
	.close = cpu_close,
	.run_batch = cpu_run_batch,
	.pool_bytes = cpu_pool_bytes,
	.reduce = cpu_reduce,
	.laid_bytes = cpu_laid_bytes,
	.deal = cpu_deal,
};
