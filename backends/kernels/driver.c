/*
 * driver.c - the kernel pipeline's host side, written once for every
 * kernel backend against struct kdev_ops (driver.h).
 *
 * Per batch: upload the rows, scatter, compress, mark the chunks of fill
 * value only, permute sizes, scan, gather, download offsets; then, once
 * offsets[K*M] is known, download the ranges of exactly those bytes that
 * the host asks for, straight to where they belong.  Only scatter (for
 * the caller's rows) and fetch (for the results) block; the stages
 * between are merely issued.  The driver keeps two buffer sets and
 * alternates them per batch, so the host issues batch k+1 before it
 * fetches batch k and the device always has work queued
 * (doc/design.md §9).
 */
#include "driver.h"

#include <errno.h>
#include <stdlib.h>

#include "blosc_layout.h"
#include "deflate-layout.h"
#include "geometry.h"
#include "reduce_layout.h"
#include "zstd_layout.h"

/* The zstd kernel's hash chains (zstd_match.h): a tile per item of the
 * largest group, and the tiles' counts inside the table's local memory. */
_Static_assert(SPZ_CH_TILES == SP_WG_MAX, "one tile per work-item");
_Static_assert((SPZ_CH_TILES << SPZ_CH_DBITS) + (1u << SPZ_CH_DBITS) <=
		       SPZ_TAB_WORDS,
	       "chain counts fit the table");
_Static_assert(SPZ_CH_PASSES % 2 == 0 &&
		       SPZ_CH_PASSES * SPZ_CH_DBITS == SPZ_CH_HLOG,
	       "the sort ends in the candidates' array");

#define KDEV_KERNEL_ENTRY(name, args) { #name },
const struct kdev_kernel kdev_kernels[KDEV_NKERNELS] = {
	SP_KERNEL_LIST(KDEV_KERNEL_ENTRY)
};

/*
 * pack_<name>(arg...): a launch of kernel <name> with its arguments, one
 * C parameter per declared argument (kdev_buf for a buffer, uint64_t for a
 * value), so a launch with arguments missing, extra or of the wrong kind
 * does not compile.
 */
#define PACK_PARAM_B(type, arg) kdev_buf arg
#define PACK_PARAM_U(arg) uint64_t arg
#define PACK_PUT_B(type, arg)                                                 \
	(l.args[l.nargs++] = (struct kdev_arg){ .kind = KDEV_ARG_BUF,         \
						.buf = (arg) })
#define PACK_PUT_U(arg)                                                       \
	(l.args[l.nargs++] = (struct kdev_arg){ .kind = KDEV_ARG_U64,         \
						.u64 = (arg) })
#define PACK_ONE(...) 1
#define PACKER(name, args)                                                    \
	_Static_assert(sizeof((char[]){ args(PACK_ONE, PACK_ONE) }) <=        \
			       KDEV_MAX_ARGS,                                 \
		       #name " takes more than KDEV_MAX_ARGS arguments");     \
	static struct kdev_launch pack_##name(args(PACK_PARAM_B,              \
						   PACK_PARAM_U))             \
	{                                                                     \
		struct kdev_launch l = { .id = KDEV_K_##name };               \
                                                                              \
		args(PACK_PUT_B, PACK_PUT_U);                                 \
		return l;                                                     \
	}
SP_KERNEL_LIST(PACKER)

/* A set's batch: scattered, compressed, aggregated (issued, not
 * necessarily run), then fetched; a fetched set is free for the next
 * scatter. */
enum kstate { KS_FREE, KS_SCATTERED, KS_COMPRESSED, KS_AGGREGATED,
	      KS_FETCHED };

/* An operation issued and not yet waited for: the offsets' download and,
 * with tracing, every launch, kept so that its span can be taken once it
 * has run.  t0..t1 is the call that issued it. */
struct kpending {
	const char *name, *queue;
	double t0, t1;
	kdev_event ev;
};

/* Launches of a batch (scatter, reduce, compress, empty chunks, permute,
 * scan, gather) and the offsets' download. */
#define KSET_PENDING 8
#define KDRV_PLAIN 8

struct kset {
	kdev_buf in, pool, slots, sizes, psizes, offsets, agg;
	uint64_t *h_off;
	enum kstate state;
	uint64_t seq;          /* the batch's number, for fetch order */
	struct kpending pend[KSET_PENDING];
	unsigned npend;
	/* With tracing: the spans of the batch's device work so far. */
	struct batch_span *spans;
	size_t nspans, spans_cap;
};

struct kdrv {
	const struct kdev_ops *ops;
	void *dev;
	struct kdev_limits lim;
	const struct plan *plan;
	uint64_t local;
	uint64_t copy_local;   /* for the kernels that only move bytes */
	uint64_t n;            /* chunks per batch: K * M */
	uint64_t nruns;        /* scatter runs per batch */
	uint64_t run_lanes;    /* work-items per run (geometry.h) */
	kdev_buf geo, perm;
	/* The codec's encoder: its groups and their scratch (deflate-layout.h,
	 * zstd_layout.h, blosc_layout.h), one for both buffer sets since
	 * launches run in issue order; for zstd and blosc, the units' output
	 * and sizes (zstd_units.h), for gzip the chunks' results
	 * (deflate-layout.h); the units per chunk, the groups of gzip's
	 * kernel per chunk and blosc's block size (0 for zstd). */
	kdev_buf enc_scratch, enc_out, enc_usizes;
	uint64_t enc_groups, enc_upc, enc_cgroups, bl_blocksize;
	/* Pyramids: the reduction table, a carried row, and the next
	 * level's rows of one batch (doc/design.md §28.2). */
	kdev_buf rgeo, carry, red;
	uint64_t red_rows, red_in_row; /* rows a batch; one row's bytes */
	struct kset set[2];
	struct kset *last;     /* scattered last: compress and aggregate it */
	struct kset *fetched;  /* fetched last: fetch_ranges reads it */
	uint64_t seq;          /* batches scattered */
	/* Finish every stage before returning (SHARDPIPE_KERNEL_DEBUG=sync):
	 * stage timings of an asynchronous device only mean something so. */
	int sync;
	/* host_alloc's blocks from malloc where the adapter had none left
	 * (the offsets of both sets, the stream's two staging buffers,
	 * room to spare). */
	void *plain[KDRV_PLAIN];
	/* Where the work profile goes (SHARDPIPE_KERNEL_DEBUG=profile=FILE),
	 * rewritten after every batch aggregated; NULL: none. */
	char *profile;
	uint64_t batches;
};

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* The widest copy word (<= 8 bytes) dividing every value or-ed into v. */
static uint64_t unit_of(uint64_t v)
{
	uint64_t u = 8;

	while (u > 1 && (v & (u - 1)) != 0)
		u >>= 1;
	return u;
}

/* Keep a span of s's batch (tracing only). */
static int add_span(struct kset *s, const char *name, const char *queue,
		    double start, double end, struct sp_err *err)
{
	if (s->nspans == s->spans_cap) {
		size_t cap = s->spans_cap ? 2 * s->spans_cap : 16;
		struct batch_span *n = realloc(s->spans, cap * sizeof(*n));

		SP_RETURN_IF(n == NULL, err, SHARDPIPE_ERR_NOMEM,
			     "out of memory for the trace's device spans");
		s->spans = n;
		s->spans_cap = cap;
	}
	s->spans[s->nspans++] = (struct batch_span){ name, queue, start, end };
	return SHARDPIPE_OK;
}

/*
 * Wait for an operation issued between t0 and t1 (ev NULL: complete) and,
 * with tracing, keep its span: the device's own times where the adapter
 * has them, else the call's, which are the operation's on an adapter that
 * completes each one before returning.
 */
static int settle(struct kdrv *k, struct kset *s, const struct kpending *o,
		  struct sp_err *err)
{
	double a = o->t0, b = o->t1;

	if (k->plan->trace && o->ev != NULL && k->ops->profile != NULL)
		SP_FORWARD(k->ops->profile(k->dev, o->ev, &a, &b, err));
	else
		SP_FORWARD(k->ops->wait(k->dev, o->ev, err));
	return k->plan->trace ? add_span(s, o->name, o->queue, a, b, err)
			      : SHARDPIPE_OK;
}

/* Settle s's pending operations in issue order; after a failure the rest
 * are only released. */
static int settle_pending(struct kdrv *k, struct kset *s, struct sp_err *err)
{
	int rc = SHARDPIPE_OK;

	for (unsigned i = 0; i < s->npend; i++) {
		if (rc == SHARDPIPE_OK)
			rc = settle(k, s, &s->pend[i], err);
		else
			k->ops->wait(k->dev, s->pend[i].ev, NULL);
	}
	s->npend = 0;
	return rc;
}

/* Launch kernel l on s's batch; with tracing its event is kept. */
static int launch(struct kdrv *k, struct kset *s, struct kdev_launch l,
		  uint64_t global, uint64_t local, struct sp_err *err)
{
	struct kpending *o = &s->pend[s->npend];

	SP_RETURN_IF(s->npend == KSET_PENDING, err, SHARDPIPE_ERR_DEVICE,
		     "more than %d operations pending on one batch",
		     KSET_PENDING);
	*o = (struct kpending){ kdev_kernels[l.id].name, "compute", sp_now(),
				0, NULL };
	SP_FORWARD(k->ops->launch(k->dev, &l, global, local,
				  k->plan->trace ? &o->ev : NULL, err));
	o->t1 = sp_now();
	if (k->plan->trace)
		s->npend++;
	return SHARDPIPE_OK;
}

/* A launch for `items` independent work-items (grid-stride kernels). */
static int launch_items(struct kdrv *k, struct kset *s, struct kdev_launch l,
			uint64_t items, struct sp_err *err)
{
	uint64_t groups = (items + k->local - 1) / k->local;

	groups = min_u64(groups ? groups : 1, k->lim.max_groups);
	return launch(k, s, l, groups * k->local, k->local, err);
}

/* A launch of one work-group of `local` items per unit of work (groups
 * stride over the units). */
static int launch_groups(struct kdrv *k, struct kset *s, struct kdev_launch l,
			 uint64_t units, uint64_t local, struct sp_err *err)
{
	uint64_t groups = min_u64(units ? units : 1, k->lim.max_groups);

	return launch(k, s, l, groups * local, local, err);
}

static int alloc_buf(struct kdrv *k, uint64_t bytes, kdev_buf *out,
		     const char *what, struct sp_err *err)
{
	int rc = k->ops->alloc(k->dev, bytes ? bytes : 1, out, err);

	if (rc != SHARDPIPE_OK && err != NULL) {
		char why[sizeof(err->msg)];

		snprintf(why, sizeof(why), "%s", err->msg);
		sp_err_set(err, rc, "allocating %s (%llu bytes): %s", what,
			   (unsigned long long)bytes, why);
	}
	return rc;
}

/*
 * SHARDPIPE_KERNEL_DEBUG, the driver's one test and bench hook, read once
 * per open: comma-separated words, "local=N" running every kernel at local
 * size N (tests run each kernel at several), "sync" making every stage
 * complete before it returns (per-stage timings, bench), "profile=FILE"
 * counting the kernels' work (doc/design.md §12.1) into FILE.
 */
static int read_debug(struct kdrv *k, uint64_t cap, struct sp_err *err)
{
	const char *env = getenv("SHARDPIPE_KERNEL_DEBUG");
	const char *w = env;

	while (w != NULL && *w != '\0') {
		size_t len = strcspn(w, ",");

		if (len == 4 && strncmp(w, "sync", 4) == 0) {
			k->sync = 1;
		} else if (len > 6 && strncmp(w, "local=", 6) == 0) {
			char *end;
			unsigned long long v = strtoull(w + 6, &end, 10);

			SP_RETURN_IF(end != w + len || v < 1 || v > cap, err,
				     SHARDPIPE_ERR_INVALID_ARGUMENT,
				     "SHARDPIPE_KERNEL_DEBUG=%s: %.*s is not a "
				     "local size in 1..%llu", env, (int)len - 6,
				     w + 6, (unsigned long long)cap);
			k->local = k->copy_local = v;
		} else if (len > 8 && strncmp(w, "profile=", 8) == 0) {
			free(k->profile);
			k->profile = malloc(len - 7);
			SP_RETURN_IF(k->profile == NULL, err,
				     SHARDPIPE_ERR_NOMEM,
				     "out of memory for a profile path");
			memcpy(k->profile, w + 8, len - 8);
			k->profile[len - 8] = '\0';
		} else {
			SP_RETURN_IF(len > 0, err,
				     SHARDPIPE_ERR_INVALID_ARGUMENT,
				     "SHARDPIPE_KERNEL_DEBUG=%s: unknown word "
				     "\"%.*s\" (known: local=N, sync, "
				     "profile=FILE)", env,
				     (int)len, w);
		}
		w += len + (w[len] == ',');
	}
	return SHARDPIPE_OK;
}

static int pick_local(struct kdrv *k, struct sp_err *err)
{
	uint64_t cap = min_u64(k->lim.max_local, SP_WG_MAX);

	if (cap == 0)
		cap = 1;
	k->local = min_u64(k->lim.local ? k->lim.local : 1, cap);
	k->copy_local = k->lim.copy_local ? min_u64(k->lim.copy_local, cap)
					  : k->local;
	if (k->lim.max_groups == 0)
		k->lim.max_groups = 1;
	return read_debug(k, cap, err);
}

/* Write the work profile counted so far to its file, replacing it. */
static int write_profile(struct kdrv *k, struct sp_err *err)
{
	FILE *f = fopen(k->profile, "w");
	int bad;

	SP_RETURN_IF(f == NULL, err, SHARDPIPE_ERR_IO,
		     "SHARDPIPE_KERNEL_DEBUG: profile=%s: %s", k->profile,
		     strerror(errno));
	bad = k->ops->work_write(k->dev, f, k->local, k->batches) != 0;
	bad |= fclose(f) != 0;
	SP_RETURN_IF(bad, err, SHARDPIPE_ERR_IO,
		     "SHARDPIPE_KERNEL_DEBUG: profile=%s: writing failed: %s",
		     k->profile, strerror(errno));
	return SHARDPIPE_OK;
}

/* A profile asked for: the device must count work, and the file is
 * written at once, so that a path it cannot write fails the open. */
static int open_profile(struct kdrv *k, struct sp_err *err)
{
	SP_RETURN_IF(k->ops->work_start == NULL, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "SHARDPIPE_KERNEL_DEBUG: profile=%s: this backend does "
		     "not count work (the reference backend does)",
		     k->profile);
	SP_FORWARD(k->ops->work_start(k->dev, err));
	/* Counting work per item, the device runs every item of a group. */
	k->lim.one_item_groups = 0;
	return write_profile(k, err);
}

/*
 * Work-items copying one scatter run together (scatter.h): where each
 * item takes one run (a GPU), a power of two that divides the local size,
 * up to 16 (16 words of 8 bytes make a 128-byte transaction) and with 4
 * words of the run or more each, since every lane locates the run again;
 * where items take many runs (a CPU device), one.
 */
static uint64_t run_lanes(uint64_t local, uint64_t run_words,
			  uint64_t per_item)
{
	uint64_t lanes = 1;

	while (per_item <= 1 && lanes < 16 && 8 * lanes <= run_words &&
	       local % (2 * lanes) == 0)
		lanes *= 2;
	return lanes;
}

/* Whether scatter's divisions fit 32 bits: every quotient and divisor of
 * a run's coordinates does (scatter_locate). */
static int fits_div32(const struct plan *p, uint64_t nruns)
{
	int fits = nruns <= UINT32_MAX && p->M <= UINT32_MAX;

	for (int d = 0; d < p->rank; d++)
		fits &= p->chunk[d] <= UINT32_MAX &&
			p->chunk_count[d] <= UINT32_MAX;
	return fits;
}

/* local: the work-items a group runs with (1 where each runs one). */
static void fill_geometry(const struct plan *p, uint64_t nruns,
			  uint64_t per_item, uint64_t local,
			  uint64_t geo[SP_GEO_WORDS])
{
	int inner = p->rank - 1;
	uint64_t bits = p->esize * p->chunk[inner];
	uint8_t fill[8];

	memset(geo, 0, SP_GEO_WORDS * sizeof(*geo));
	/* Runs are whole inner chunk rows; with rank > 1 input rows are
	 * size[inner] elements apart, so both lengths bound the word. */
	if (inner > 0)
		bits |= p->esize * p->size[inner];
	/* A storage order (design §3.3) may give outer dims strides that
	 * are no multiple of size[inner]; runs start at their multiples. */
	for (int d = 0; d < inner; d++)
		bits |= p->esize * p->in_stride[d];
	geo[SP_GEO_RANK] = (uint64_t)p->rank;
	geo[SP_GEO_ESIZE] = p->esize;
	geo[SP_GEO_UNIT] = unit_of(bits);
	geo[SP_GEO_M] = p->M;
	geo[SP_GEO_EPOCH_ELEMS] = p->epoch_bytes / p->esize;
	geo[SP_GEO_RUNS_PER_CHUNK] = p->chunk_elems / p->chunk[inner];
	geo[SP_GEO_NRUNS] = nruns;
	geo[SP_GEO_RUNS_PER_ITEM] = per_item ? per_item : 1;
	geo[SP_GEO_RUN_LANES] = run_lanes(local, p->chunk[inner] * p->esize /
						 geo[SP_GEO_UNIT], per_item);
	geo[SP_GEO_DIV32] = (uint64_t)fits_div32(p, nruns);
	for (unsigned b = 0; b < 8; b++)
		fill[b] = p->fill_le[b % p->esize];
	memcpy(&geo[SP_GEO_FILL], fill, 8);
	for (int d = 0; d < p->rank; d++) {
		geo[SP_GEO_SIZE(d)] = p->size[d];
		geo[SP_GEO_CHUNK(d)] = p->chunk[d];
		geo[SP_GEO_COUNT(d)] = p->chunk_count[d];
		geo[SP_GEO_IN_STRIDE(d)] = p->in_stride[d];
	}
}

/*
 * Host memory that uploads read and downloads write: the adapter's where
 * it has its own (pinned), else malloc's.  Pinned memory is a scarcer
 * resource than memory: when the adapter has none left, malloc's serves,
 * only slower, and is remembered so that it goes back to free.
 */
static void *host_alloc(struct kdrv *k, uint64_t bytes)
{
	void *p;

	if (bytes > SIZE_MAX)
		return NULL;
	if (k->ops->host_alloc == NULL)
		return malloc((size_t)bytes);
	p = k->ops->host_alloc(k->dev, bytes);
	for (int i = 0; p == NULL && i < KDRV_PLAIN; i++)
		if (k->plain[i] == NULL)
			return k->plain[i] = malloc((size_t)bytes);
	return p;
}

static void host_free(struct kdrv *k, void *p)
{
	if (p == NULL)
		return;
	for (int i = 0; i < KDRV_PLAIN; i++)
		if (k->plain[i] == p) {
			k->plain[i] = NULL;
			free(p);
			return;
		}
	if (k->ops->host_free != NULL)
		k->ops->host_free(k->dev, p);
	else
		free(p);
}

static int open_set(struct kdrv *k, struct kset *s, struct sp_err *err)
{
	const struct plan *p = k->plan;
	uint64_t cap = k->n * p->slot_capacity;

	SP_FORWARD(alloc_buf(k, p->batch_bytes, &s->in, "the input batch", err));
	SP_FORWARD(alloc_buf(k, k->n * p->chunk_bytes, &s->pool,
			     "the chunk pool", err));
	SP_FORWARD(alloc_buf(k, cap, &s->slots, "the compressed slots", err));
	SP_FORWARD(alloc_buf(k, k->n * 8, &s->sizes, "the chunk sizes", err));
	SP_FORWARD(alloc_buf(k, k->n * 8, &s->psizes, "the permuted sizes",
			     err));
	SP_FORWARD(alloc_buf(k, (k->n + 1) * 8, &s->offsets, "the offsets",
			     err));
	SP_FORWARD(alloc_buf(k, cap, &s->agg, "the aggregated chunks", err));
	s->h_off = host_alloc(k, (k->n + 1) * sizeof(*s->h_off));
	SP_RETURN_IF(s->h_off == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of host memory for %llu offsets",
		     (unsigned long long)(k->n + 1));
	return SHARDPIPE_OK;
}

static void close_set(struct kdrv *k, struct kset *s)
{
	kdev_buf *bufs[] = { &s->in, &s->pool, &s->slots, &s->sizes,
			     &s->psizes, &s->offsets, &s->agg };

	settle_pending(k, s, NULL);
	for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
		if (*bufs[i] != NULL)
			k->ops->free(k->dev, *bufs[i]);
	host_free(k, s->h_off);
	free(s->spans);
	memset(s, 0, sizeof(*s));
}

/* The plan's slots must hold the encoder's worst case for a chunk. */
static int check_slots(const struct plan *p, uint64_t bound, const char *codec,
		       struct sp_err *err)
{
	SP_RETURN_IF(p->slot_capacity < bound, err, SHARDPIPE_ERR_CODEC,
		     "%s slot capacity %llu is below the encoder's bound %llu",
		     codec, (unsigned long long)p->slot_capacity,
		     (unsigned long long)bound);
	return SHARDPIPE_OK;
}

/* What the gzip encoder takes, checked before anything is allocated. */
static int check_gzip(const struct plan *p, struct sp_err *err)
{
	SP_RETURN_IF(p->chunk_bytes > SP_DEFL_MAX_CHUNK, err,
		     SHARDPIPE_ERR_CODEC,
		     "gzip kernels take chunks of at most %llu bytes, not %llu",
		     (unsigned long long)SP_DEFL_MAX_CHUNK,
		     (unsigned long long)p->chunk_bytes);
	return check_slots(p, SP_DEFL_BOUND(p->chunk_bytes), "gzip", err);
}

/*
 * Every encoder strides its groups over its units (gzip: parts, then
 * chunks; zstd and blosc: blocks, zstd_units.h), each group with its own
 * scratch.  The scratch of all groups is bounded by the device's budget
 * (kdev_limits, else DEFAULT_SCRATCH_BUDGET), which bounds the groups
 * launched; groups of one work-item run one after the other, so one
 * suffices there.
 */
#define DEFAULT_SCRATCH_BUDGET ((uint64_t)256 << 20)

static uint64_t scratch_groups(const struct kdrv *k, uint64_t units,
			       uint64_t per)
{
	uint64_t budget = k->lim.scratch_budget ? k->lim.scratch_budget
						: DEFAULT_SCRATCH_BUDGET;
	uint64_t groups = min_u64(min_u64(units ? units : 1,
					  k->lim.max_groups),
				  budget / per);

	return groups == 0 || k->lim.one_item_groups ? 1 : groups;
}

static int open_scratch(struct kdrv *k, uint64_t units, uint64_t per,
			const char *what, struct sp_err *err)
{
	k->enc_groups = scratch_groups(k, units, per);
	return alloc_buf(k, k->enc_groups * per, &k->enc_scratch, what, err);
}

/*
 * gzip's two kernels (deflate.h): every part of the batch's chunks as a
 * unit, then a group per chunk.  Each has its groups and their scratch,
 * one buffer serving both since the second runs after the first; the
 * parts' results, per chunk in flight, are what passes between them.
 */
static int open_gzip(struct kdrv *k, struct sp_err *err)
{
	uint64_t cb = k->plan->chunk_bytes;
	uint64_t uper = SP_DEFL_USCRATCH_BYTES(cb);
	uint64_t cper = SP_DEFL_SCRATCH_BYTES(cb);

	SP_FORWARD(alloc_buf(k, k->n * SP_DEFL_RES_BYTES(cb), &k->enc_out,
			     "the gzip parts' results", err));
	k->enc_upc = SP_DEFL_NPART(cb);
	k->enc_groups = scratch_groups(k, k->n * k->enc_upc, uper);
	k->enc_cgroups = scratch_groups(k, k->n, cper);
	return alloc_buf(k,
			 k->enc_groups * uper > k->enc_cgroups * cper ?
				 k->enc_groups * uper : k->enc_cgroups * cper,
			 &k->enc_scratch, "the gzip encoder's scratch", err);
}

/* The zstd units of a batch (zstd and blosc): their output, as large as
 * the chunk pool, one size word each, and the groups' scratch. */
static int open_units(struct kdrv *k, uint64_t ts, uint64_t bs,
		      struct sp_err *err)
{
	const struct plan *p = k->plan;

	k->enc_upc = SPB_UNITS(p->chunk_bytes, ts, bs);
	SP_FORWARD(alloc_buf(k, k->n * p->chunk_bytes, &k->enc_out,
			     "the zstd blocks", err));
	SP_FORWARD(alloc_buf(k, k->n * k->enc_upc * 8, &k->enc_usizes,
			     "the zstd block sizes", err));
	return open_scratch(k, k->n * k->enc_upc, SPZ_SCRATCH_BYTES,
			    "the zstd encoder's scratch", err);
}

static int open_zstd(struct kdrv *k, struct sp_err *err)
{
	SP_FORWARD(check_slots(k->plan, SPZ_WORST_CASE(k->plan->chunk_bytes),
			       "zstd", err));
	return open_units(k, 1, 0, err);
}

static int open_blosc(struct kdrv *k, struct sp_err *err)
{
	const struct plan *p = k->plan;
	uint64_t bs;

	SP_RETURN_IF(p->blosc_cname != SHARDPIPE_BLOSC_ZSTD, err,
		     SHARDPIPE_ERR_CODEC,
		     "the blosc kernels compress with zstd only: use "
		     "blosc:zstd or the cpu backend");
	SP_RETURN_IF((unsigned)p->blosc_shuffle > SPB_BITSHUFFLE, err,
		     SHARDPIPE_ERR_CODEC, "unknown blosc shuffle %d",
		     (int)p->blosc_shuffle);
	SP_RETURN_IF(p->level < 0 || p->level > 9, err, SHARDPIPE_ERR_LEVEL,
		     "blosc level %d is outside 0..9", p->level);
	SP_RETURN_IF(p->chunk_bytes > (uint64_t)INT32_MAX - SPB_HEADER, err,
		     SHARDPIPE_ERR_OVERFLOW,
		     "a chunk of %llu bytes exceeds blosc's limit",
		     (unsigned long long)p->chunk_bytes);
	SP_FORWARD(check_slots(p, SPB_BOUND(p->chunk_bytes), "blosc", err));
	bs = SPB_BLOCKSIZE(p->chunk_bytes, (uint64_t)p->esize,
			   (uint64_t)p->blosc_blocksize);
	k->bl_blocksize = bs;
	return open_units(k, p->esize, bs, err);
}

/* What the reduce kernel needs, when the plan has a next level: at most
 * one output row per input row of a batch (pairs and a carried row make
 * fewer).  Its rows are the append dim's, as the reduction table counts
 * them: the plan's rows, not the rows of a moved append dim's view, whose
 * rows are epochs (plan_backend_view, design §3.3). */
static int open_reduce(struct kdrv *k, struct sp_err *err)
{
	const struct plan *p = k->plan;
	uint64_t g[SP_RGEO_WORDS], out_row_bytes;
	kdev_event ev = NULL;

	if (p->reduce_geo[SP_RGEO_F0] == 0)
		return SHARDPIPE_OK;
	memcpy(g, p->reduce_geo, sizeof(g));
	g[SP_RGEO_PER_ITEM] = k->lim.runs_per_item ? k->lim.runs_per_item : 1;
	out_row_bytes = g[SP_RGEO_OUT_ROW] * p->esize;
	k->red_in_row = g[SP_RGEO_IN_ROW] * p->esize;
	k->red_rows = p->K * (p->epoch_bytes / k->red_in_row);
	SP_FORWARD(alloc_buf(k, sizeof(g), &k->rgeo, "the reduction table",
			     err));
	SP_FORWARD(alloc_buf(k, k->red_in_row, &k->carry, "the carried row",
			     err));
	SP_FORWARD(alloc_buf(k, k->red_rows * out_row_bytes, &k->red,
			     "the next level's rows", err));
	SP_FORWARD(k->ops->upload(k->dev, k->rgeo, 0, g, sizeof(g), &ev, err));
	return k->ops->wait(k->dev, ev, err);
}

static int open_pools(struct kdrv *k, struct sp_err *err)
{
	const struct plan *p = k->plan;
	uint64_t geo[SP_GEO_WORDS];
	kdev_event ev = NULL;

	/* No call into the public library here: the driver is also linked
	 * into plugins, which see none of it. */
	SP_RETURN_IF(p->codec != SHARDPIPE_CODEC_NONE &&
		     p->codec != SHARDPIPE_CODEC_GZIP &&
		     p->codec != SHARDPIPE_CODEC_ZSTD &&
		     p->codec != SHARDPIPE_CODEC_BLOSC, err, SHARDPIPE_ERR_CODEC,
		     "codec %s has no kernel encoder yet: use codec none or "
		     "the cpu backend",
		     p->codec == SHARDPIPE_CODEC_ZSTD ? "zstd" :
		     p->codec == SHARDPIPE_CODEC_GZIP ? "gzip" :
		     p->codec == SHARDPIPE_CODEC_BLOSC ? "blosc" : "(unknown)");
	SP_RETURN_IF(p->rank < 1 || p->rank > SP_GEO_MAX_RANK, err,
		     SHARDPIPE_ERR_RANK, "rank %d", p->rank);
	if (p->codec == SHARDPIPE_CODEC_GZIP)
		SP_FORWARD(check_gzip(p, err));
	SP_FORWARD(pick_local(k, err));
	if (k->profile != NULL)
		SP_FORWARD(open_profile(k, err));
	k->n = p->K * p->M;
	k->nruns = k->n * (p->chunk_elems / p->chunk[p->rank - 1]);
	fill_geometry(p, k->nruns, k->lim.runs_per_item,
		      k->lim.one_item_groups ? 1 : k->local, geo);
	k->run_lanes = geo[SP_GEO_RUN_LANES];

	SP_FORWARD(alloc_buf(k, sizeof(geo), &k->geo, "the geometry table",
			     err));
	SP_FORWARD(alloc_buf(k, p->M * sizeof(*p->perm), &k->perm,
			     "the shard permutation", err));
	SP_FORWARD(k->ops->upload(k->dev, k->geo, 0, geo, sizeof(geo), &ev,
				  err));
	SP_FORWARD(k->ops->wait(k->dev, ev, err));
	SP_FORWARD(k->ops->upload(k->dev, k->perm, 0, p->perm,
				  p->M * sizeof(*p->perm), &ev, err));
	SP_FORWARD(k->ops->wait(k->dev, ev, err));

	for (int i = 0; i < 2; i++)
		SP_FORWARD(open_set(k, &k->set[i], err));
	if (p->codec == SHARDPIPE_CODEC_GZIP)
		SP_FORWARD(open_gzip(k, err));
	if (p->codec == SHARDPIPE_CODEC_ZSTD)
		SP_FORWARD(open_zstd(k, err));
	if (p->codec == SHARDPIPE_CODEC_BLOSC)
		SP_FORWARD(open_blosc(k, err));
	return open_reduce(k, err);
}

int kdrv_open(const struct kdev_ops *ops, void *dev,
	      const struct kdev_limits *lim, const struct plan *plan,
	      struct kdrv **out, struct sp_err *err)
{
	struct kdrv *k = calloc(1, sizeof(*k));
	int rc;

	*out = NULL;
	if (k == NULL) {
		ops->close(dev);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
				  "out of memory for the kernel driver");
	}
	k->ops = ops;
	k->dev = dev;
	k->lim = *lim;
	k->plan = plan;
	rc = open_pools(k, err);
	if (rc != SHARDPIPE_OK) {
		kdrv_close(k);
		return rc;
	}
	*out = k;
	return SHARDPIPE_OK;
}

void kdrv_close(struct kdrv *k)
{
	if (k == NULL)
		return;
	/* Nothing may be freed while the device may still use it. */
	k->ops->finish(k->dev, NULL);
	for (int i = 0; i < 2; i++)
		close_set(k, &k->set[i]);
	if (k->geo != NULL)
		k->ops->free(k->dev, k->geo);
	if (k->perm != NULL)
		k->ops->free(k->dev, k->perm);
	if (k->enc_scratch != NULL)
		k->ops->free(k->dev, k->enc_scratch);
	if (k->enc_out != NULL)
		k->ops->free(k->dev, k->enc_out);
	if (k->enc_usizes != NULL)
		k->ops->free(k->dev, k->enc_usizes);
	if (k->rgeo != NULL)
		k->ops->free(k->dev, k->rgeo);
	if (k->carry != NULL)
		k->ops->free(k->dev, k->carry);
	if (k->red != NULL)
		k->ops->free(k->dev, k->red);
	k->ops->close(k->dev);
	free(k->profile);
	free(k);
}

uint64_t kdrv_local_size(const struct kdrv *k)
{
	return k->local;
}

int kdrv_scatter(struct kdrv *k, const void *batch, struct sp_err *err)
{
	const struct plan *p = k->plan;
	struct kset *s = &k->set[k->seq % 2];
	struct kpending up = { "upload", "upload", sp_now(), 0, NULL };
	uint64_t per_item = k->lim.runs_per_item ? k->lim.runs_per_item : 1;
	int rc;

	SP_RETURN_IF(s->state != KS_FREE && s->state != KS_FETCHED, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "scatter called with two batches not yet fetched");
	SP_FORWARD(settle_pending(k, s, err));
	s->state = KS_FREE;
	s->nspans = 0;
	s->seq = k->seq++;
	k->last = s;
	if (k->fetched == s)
		k->fetched = NULL;
	SP_FORWARD(k->ops->upload(k->dev, s->in, 0, batch, p->batch_bytes,
				  &up.ev, err));
	up.t1 = sp_now();
	rc = launch_items(k, s, pack_sp_scatter(s->in, s->pool, k->geo),
			  (k->nruns + per_item - 1) / per_item * k->run_lanes,
			  err);
	/* The caller's rows may be reused once this returns, whatever the
	 * launch did. */
	if (rc != SHARDPIPE_OK)
		k->ops->wait(k->dev, up.ev, NULL);
	else
		rc = settle(k, s, &up, err);
	SP_FORWARD(rc);
	if (k->sync)
		SP_FORWARD(k->ops->finish(k->dev, err));
	s->state = KS_SCATTERED;
	return SHARDPIPE_OK;
}

/*
 * zstd and blosc: every block of the batch's frames as its own unit, then
 * one group per chunk stitching its frame or container
 * (doc/design.md §9, §13.1).  The units run at the zstd level (blosc's clevel mapped,
 * SPB_ZSTD_LEVEL); zstd's units see the chunk as one frame (element size
 * 1, no shuffle, block size 0).
 */
static int compress_units(struct kdrv *k, struct kset *s, uint64_t level,
			  struct sp_err *err)
{
	const struct plan *p = k->plan;
	int blosc = p->codec == SHARDPIPE_CODEC_BLOSC;
	uint64_t ts = blosc ? p->esize : 1;
	uint64_t mode = blosc ? (uint64_t)p->blosc_shuffle : SPB_NOSHUFFLE;
	uint64_t zlevel = !blosc ? (uint64_t)p->level
		: SPB_ZSTD_LEVEL(p->level == 0 ? 1u : (unsigned)p->level);
	struct kdev_launch l;

	l = pack_sp_zstd_units(s->pool, k->enc_out, k->enc_usizes,
			       k->enc_scratch, k->n, p->chunk_bytes, zlevel,
			       ts, mode, k->bl_blocksize);
	/* copy_local: a CPU device runs best with one work-item per group,
	 * the groups giving the parallelism; a GPU gets the full local
	 * size. */
	SP_FORWARD(launch(k, s, l, k->enc_groups * k->copy_local, k->copy_local,
			  err));
	if (blosc)
		l = pack_sp_codec_blosc(s->pool, s->slots, s->sizes,
					k->enc_out, k->enc_usizes, k->n,
					p->chunk_bytes, p->slot_capacity,
					level, ts, mode, k->bl_blocksize);
	else
		l = pack_sp_codec_zstd(s->pool, s->slots, s->sizes, k->enc_out,
				       k->enc_usizes, k->n, p->chunk_bytes,
				       p->slot_capacity, level);
	return launch_groups(k, s, l, k->n, k->copy_local, err);
}

/*
 * gzip: every 128 KiB part of the batch's chunks as its own unit (its
 * chains, matches, parse and segment CRCs), then one group per chunk
 * coding and packing its member (doc/design.md §13.2).  copy_local: a CPU
 * device runs best with one work-item per group, the groups giving the
 * parallelism, as for the copies; a GPU gets the full local size.
 */
static int compress_gzip(struct kdrv *k, struct kset *s, uint64_t level,
			 struct sp_err *err)
{
	const struct plan *p = k->plan;
	struct kdev_launch l;

	l = pack_sp_gzip_units(s->pool, k->enc_out, k->enc_scratch, k->n,
			       p->chunk_bytes, level);
	SP_FORWARD(launch(k, s, l, k->enc_groups * k->copy_local,
			  k->copy_local, err));
	l = pack_sp_codec_gzip(s->pool, s->slots, s->sizes, k->enc_out,
			       k->enc_scratch, k->n, p->chunk_bytes,
			       p->slot_capacity, level);
	return launch(k, s, l, k->enc_cgroups * k->copy_local, k->copy_local,
		      err);
}

int kdrv_compress(struct kdrv *k, struct sp_err *err)
{
	const struct plan *p = k->plan;
	struct kset *s = k->last;
	/* The level word; zstd's carries the checksum bit. */
	uint64_t level = (uint64_t)(uint32_t)p->level |
			 (uint64_t)(p->codec == SHARDPIPE_CODEC_ZSTD &&
				    p->zstd_checksum)
				 << SPZ_ARG_CHECKSUM_BIT;
	struct kdev_launch l;

	SP_RETURN_IF(s == NULL || s->state != KS_SCATTERED, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "compress called before scatter");
	if (p->codec == SHARDPIPE_CODEC_NONE) {
		l = pack_sp_codec_none(s->pool, s->slots, s->sizes, k->n,
				       p->chunk_bytes, p->slot_capacity);
		SP_FORWARD(launch_groups(k, s, l, k->n, k->copy_local, err));
	} else if (p->codec == SHARDPIPE_CODEC_GZIP) {
		SP_FORWARD(compress_gzip(k, s, level, err));
	} else {
		SP_FORWARD(compress_units(k, s, level, err));
	}
	/* A chunk of fill value only gets size 0: not stored
	 * (doc/design.md §22.2).  It reads like a copy, so it runs like
	 * one. */
	if (!p->write_empty_chunks)
		SP_FORWARD(launch_groups(k, s,
					 pack_sp_empty_chunks(s->pool, s->sizes,
							      k->geo, k->n,
							      p->chunk_bytes),
					 k->n, k->copy_local, err));
	if (k->sync)
		SP_FORWARD(k->ops->finish(k->dev, err));
	s->state = KS_COMPRESSED;
	return SHARDPIPE_OK;
}

int kdrv_aggregate(struct kdrv *k, struct sp_err *err)
{
	const struct plan *p = k->plan;
	struct kset *s = k->last;
	struct kpending *o;

	SP_RETURN_IF(s == NULL || s->state != KS_COMPRESSED, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "aggregate called before compress");
	SP_FORWARD(launch_items(k, s, pack_sp_agg_permute(s->sizes, k->perm,
							   s->psizes, p->M,
							   k->n),
				k->n, err));
	SP_FORWARD(launch_groups(k, s, pack_sp_agg_scan(s->psizes, s->offsets,
							k->n),
				 1, k->local, err));
	SP_FORWARD(launch_groups(k, s, pack_sp_agg_gather(s->slots, s->sizes,
							  k->perm, s->offsets,
							  s->agg, p->M, k->n,
							  p->slot_capacity),
				 k->n, k->copy_local, err));
	/* The offsets' download is waited for by fetch, traced or not. */
	SP_RETURN_IF(s->npend == KSET_PENDING, err, SHARDPIPE_ERR_DEVICE,
		     "more than %d operations pending on one batch",
		     KSET_PENDING);
	o = &s->pend[s->npend];
	*o = (struct kpending){ "download offsets", "download", sp_now(), 0,
				NULL };
	SP_FORWARD(k->ops->download(k->dev, s->h_off, s->offsets, 0,
				    (k->n + 1) * sizeof(*s->h_off), &o->ev,
				    err));
	o->t1 = sp_now();
	s->npend++;
	if (k->sync)
		SP_FORWARD(k->ops->finish(k->dev, err));
	s->state = KS_AGGREGATED;
	/* A device that counts work runs each launch as it is issued: the
	 * batch's count is complete. */
	k->batches++;
	if (k->profile != NULL)
		SP_FORWARD(write_profile(k, err));
	return SHARDPIPE_OK;
}

int kdrv_fetch_offsets(struct kdrv *k, const uint64_t **offsets,
		       struct sp_err *err)
{
	struct kset *s = NULL;
	uint64_t total, cap = k->n * k->plan->slot_capacity;

	/* The oldest batch not yet fetched. */
	for (int i = 0; i < 2; i++) {
		struct kset *c = &k->set[i];

		if (c->state != KS_FREE && c->state != KS_FETCHED &&
		    (s == NULL || c->seq < s->seq))
			s = c;
	}
	SP_RETURN_IF(s == NULL || s->state != KS_AGGREGATED, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "fetch called before aggregate");
	s->state = KS_FETCHED;
	k->fetched = s;
	SP_FORWARD(settle_pending(k, s, err));
	total = s->h_off[k->n];
	SP_RETURN_IF(s->h_off[0] != 0 || total > cap, err, SHARDPIPE_ERR_DEVICE,
		     "aggregate produced offsets 0x%llx .. 0x%llx outside a "
		     "pool of %llu bytes", (unsigned long long)s->h_off[0],
		     (unsigned long long)total, (unsigned long long)cap);
	*offsets = s->h_off;
	return SHARDPIPE_OK;
}

int kdrv_fetch_ranges(struct kdrv *k, const struct batch_range *r, size_t n,
		      struct sp_err *err)
{
	struct kset *s = k->fetched;
	struct kpending first = { "download chunks", "download", sp_now(), 0,
				  NULL };
	struct kpending last = first;
	int trace = k->plan->trace && k->ops->profile != NULL;
	double start = -1, a;
	uint64_t total;
	size_t end = n;
	int rc = SHARDPIPE_OK;

	SP_RETURN_IF(s == NULL, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "fetch_ranges called before fetch_offsets");
	total = s->h_off[k->n];
	for (size_t i = 0; i < n; i++)
		SP_RETURN_IF(r[i].off > total || r[i].len > total - r[i].off,
			     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "range %zu (%llu bytes at %llu) lies outside the "
			     "%llu bytes of the batch", i,
			     (unsigned long long)r[i].len,
			     (unsigned long long)r[i].off,
			     (unsigned long long)total);
	while (end > 0 && r[end - 1].len == 0)
		end--;
	for (size_t i = 0; i < end && rc == SHARDPIPE_OK; i++) {
		kdev_event *ev = i + 1 == end ? &last.ev :
				 trace && first.ev == NULL ? &first.ev : NULL;

		if (r[i].len > 0)
			rc = k->ops->download(k->dev, r[i].dst, s->agg,
					      r[i].off, r[i].len, ev, err);
	}
	last.t1 = sp_now();
	/* Downloads from one buffer run in issue order: the last one's
	 * completion is every one's, and the first one's start the span's. */
	if (first.ev != NULL) {
		double b;

		if (rc == SHARDPIPE_OK)
			rc = k->ops->profile(k->dev, first.ev, &start, &b,
					     err);
		else
			k->ops->wait(k->dev, first.ev, NULL);
	}
	if (rc != SHARDPIPE_OK || end == 0) {
		k->ops->wait(k->dev, last.ev, NULL);
		return rc;
	}
	if (!k->plan->trace)
		return k->ops->wait(k->dev, last.ev, err);
	if (last.ev != NULL && k->ops->profile != NULL)
		SP_FORWARD(k->ops->profile(k->dev, last.ev,
					   start < 0 ? &start : &a, &last.t1,
					   err));
	else
		SP_FORWARD(k->ops->wait(k->dev, last.ev, err));
	return add_span(s, last.name, last.queue, start < 0 ? last.t0 : start,
			last.t1, err);
}

size_t kdrv_op_spans(void *ctx, const struct batch_span **out)
{
	struct kdrv *k = ctx;

	*out = k->fetched != NULL ? k->fetched->spans : NULL;
	return k->fetched != NULL ? k->fetched->nspans : 0;
}

void *kdrv_op_host_alloc(void *ctx, uint64_t bytes)
{
	return host_alloc(ctx, bytes);
}

void kdrv_op_host_free(void *ctx, void *p)
{
	host_free(ctx, p);
}

/* The batch scattered last is still in its input buffer: the next
 * level's rows are made from it on the device and only they come back. */
int kdrv_reduce(struct kdrv *k, uint64_t nrows, const void *carry, int tail,
		void *out, uint64_t out_rows, struct sp_err *err)
{
	const struct plan *p = k->plan;
	/* The set scattered last keeps its input until the next scatter;
	 * a carried row alone reads none (and may come before any). */
	struct kset *s = k->last != NULL ? k->last : &k->set[0];
	uint64_t per = k->lim.runs_per_item ? k->lim.runs_per_item : 1;
	uint64_t nout = out_rows * p->reduce_geo[SP_RGEO_OUT_ROW];
	kdev_event ev = NULL;

	SP_RETURN_IF(nrows > 0 && k->last == NULL, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "reduce called before scatter");
	SP_RETURN_IF(p->reduce_geo[SP_RGEO_F0] == 0, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "reduce: level %d is the pyramid's last",
		     p->scale_level);
	SP_RETURN_IF(nrows > k->red_rows || out_rows > k->red_rows, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "reduce: %llu rows into %llu, beyond a batch of %llu",
		     (unsigned long long)nrows, (unsigned long long)out_rows,
		     (unsigned long long)k->red_rows);
	if (nout == 0)
		return SHARDPIPE_OK;
	if (carry != NULL) {
		SP_FORWARD(k->ops->upload(k->dev, k->carry, 0, carry,
					  k->red_in_row, &ev, err));
		SP_FORWARD(k->ops->wait(k->dev, ev, err));
	}
	SP_FORWARD(launch_items(k, s, pack_sp_reduce(s->in, k->carry, k->red,
						  k->rgeo, nrows,
						  carry != NULL, (uint64_t)tail,
						  nout),
				(nout + per - 1) / per, err));
	SP_FORWARD(k->ops->download(k->dev, out, k->red, 0, nout * p->esize,
				    &ev, err));
	return k->ops->wait(k->dev, ev, err);
}

int kdrv_debug_read_pool(struct kdrv *k, void *dst, struct sp_err *err)
{
	struct kset *s = k->last;
	kdev_event ev = NULL;

	SP_FORWARD(k->ops->download(k->dev, dst, s->pool, 0,
				    k->n * k->plan->chunk_bytes, &ev, err));
	return k->ops->wait(k->dev, ev, err);
}

int kdrv_debug_set_slots(struct kdrv *k, const void *slots,
			 const uint64_t *sizes, struct sp_err *err)
{
	struct kset *s = k->last;
	kdev_event ev = NULL;

	SP_FORWARD(k->ops->upload(k->dev, s->slots, 0, slots,
				  k->n * k->plan->slot_capacity, &ev, err));
	SP_FORWARD(k->ops->wait(k->dev, ev, err));
	SP_FORWARD(k->ops->upload(k->dev, s->sizes, 0, sizes,
				  k->n * sizeof(*sizes), &ev, err));
	SP_FORWARD(k->ops->wait(k->dev, ev, err));
	s->state = KS_COMPRESSED;
	return SHARDPIPE_OK;
}

int kdrv_finish(struct kdrv *k, struct sp_err *err)
{
	return k->ops->finish(k->dev, err);
}

int kdrv_op_scatter(void *ctx, const void *batch, struct sp_err *err)
{
	return kdrv_scatter(ctx, batch, err);
}

int kdrv_op_compress(void *ctx, struct sp_err *err)
{
	return kdrv_compress(ctx, err);
}

int kdrv_op_aggregate(void *ctx, struct sp_err *err)
{
	return kdrv_aggregate(ctx, err);
}

int kdrv_op_fetch_offsets(void *ctx, const uint64_t **offsets,
			  struct sp_err *err)
{
	return kdrv_fetch_offsets(ctx, offsets, err);
}

int kdrv_op_fetch_ranges(void *ctx, const struct batch_range *r, size_t n,
			 struct sp_err *err)
{
	return kdrv_fetch_ranges(ctx, r, n, err);
}

int kdrv_op_reduce(void *ctx, const void *batch, uint64_t nrows,
		   const void *carry, int tail, void *out, uint64_t out_rows,
		   struct sp_err *err)
{
	(void)batch;
	return kdrv_reduce(ctx, nrows, carry, tail, out, out_rows, err);
}

void kdrv_op_close(void *ctx)
{
	kdrv_close(ctx);
}
