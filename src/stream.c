/*
 * stream.c - the public stream: staging of appended spans into batches,
 * the calls to the backend's stages, shard emission and zarr.json updates.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "attrs.h"
#include "backend.h"
#include "group.h"
#include "lanes.h"
#include "plan.h"
#include "pool.h"
#include "shard_index.h"
#include "store.h"
#include "trace.h"
#include "zarr_meta.h"

/*
 * Threads (doc/design.md §17).  The caller's thread stages appended
 * bytes into one of two batch buffers and queues each full batch.  The
 * pipeline thread hands each batch to the backend and adds its epochs to
 * the shard set being filled; a finished shard epoch goes to the writer
 * thread, which serializes and stores its shards and then zarr.json.  A
 * staging buffer is free again once its batch is scattered (uploaded), a
 * shard set once written: two buffers and nsets sets bound the memory, and
 * waiting for one is the back-pressure that append feels.
 *
 * On a kernel backend the pipeline keeps two batches in the backend: it
 * issues batch k+1 (upload and kernels) before it fetches batch k, so the
 * device computes k+1 while k's chunks come back and are indexed
 * (doc/design.md §14.4).  A fused backend (run_batch) runs one batch at a
 * time, reading its buffer until the batch is compressed.
 *
 * One mutex guards the hand-over state below and the stats; one condition
 * variable is broadcast on every change (a few times per batch), and each
 * waiter rechecks its own predicate.  A failure on either thread is kept in
 * async_rc/async_err; the thread then drains its queue without working, so
 * nobody waits forever, and the caller reports it on its next call.
 */
/* Two staging buffers: the caller fills one while the backend reads the
 * other (an upload, or a fused batch until it is compressed). */
#define NSTAGE 2
#define QCAP (NSTAGE + 1)
/* Batches a backend with stage entries holds between scatter and fetch
 * (backend.h). */
#define DEPTH 2

struct batch_job {
	const uint8_t *data;     /* a staging buffer or the caller's span */
	int buf;                 /* staging index, -1 for the caller's span */
	uint64_t epochs;         /* complete epochs (the rest is fill) */
	uint64_t rows_in;        /* rows appended when it was queued */
	uint64_t seq;            /* the batch's number, from 0 */
};

struct set_job {
	int set;
	uint64_t shard_epoch;
	uint64_t rows;           /* rows zarr.json may advertise after it */
};

struct shardpipe_stream {
	struct plan plan;
	const struct backend_ops *be;
	void *bctx;
	struct store *store;     /* NULL when writing to a sink */
	shardpipe_sink sink;

	struct trace *trace;     /* SHARDPIPE_TRACE, or NULL */

	/* Caller's thread. */
	uint8_t *staging[NSTAGE]; /* plan.batch_bytes each, from the backend */
	int cur;                 /* staging buffer being filled, or -1 */
	size_t staged;           /* bytes of the current batch received */
	int sticky;              /* first failure, returned ever after */
	int direct;              /* the last span was taken straight */
	struct sp_err err;
	double waited;           /* seconds this append waited (under mu) */

	/* Pipeline thread. */
	struct batch_job flight[DEPTH]; /* in the backend, oldest first */
	unsigned nflight;
	struct batch_range *ranges; /* K * S, where fetched chunks go */
	/* A fused batch: where each chunk goes (a slot in a shard set) and
	 * its size, K * M each. */
	uint8_t **dst;
	uint64_t *sizes;
	struct shard_set *sets;  /* nsets (nsets_for) */
	int nsets;
	int fill_set;            /* set receiving epochs */
	int *ahead;              /* sets taken for the epochs after it */
	int nahead;
	uint64_t epochs_done;    /* epochs through the backend */
	uint64_t shard_epochs;   /* shard epochs handed to the writer */
	struct sp_err perr;

	/* Writer thread. */
	struct sp_err werr;
	struct iovec *parts;     /* chunks_per_shard + 1: a shard's bytes */
	shardpipe_part *sink_parts;

	/* Shared, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t pipe_thread, writer_thread;
	int threads_started;
	int stage_free[NSTAGE];
	struct batch_job q[QCAP];
	unsigned q_head, q_len;
	uint64_t queued, scattered, processed; /* batch counters */
	int *set_free;           /* nsets */
	struct set_job *wq;      /* nsets */
	unsigned wq_head, wq_len;
	uint64_t sets_queued, sets_written;
	int stop;                /* no more batches will come */
	int in_append;           /* the caller is inside append or skip */
	/* Half of the caller's staging copy, handed to the pipeline thread
	 * while it has no batch: 1 posted, 2 done, 0 none. */
	const uint8_t *cp_src;
	uint8_t *cp_dst;
	size_t cp_n;
	int cp_state;
	int pipe_done;           /* the pipeline has handed over its last set */
	int async_rc;
	struct sp_err async_err;
	shardpipe_stats stats;
	/* Set by the caller's thread, rendered by whichever thread writes
	 * zarr.json. */
	struct attrs attrs;
	uint8_t *fill_block;     /* FILL_BLOCK bytes of fill, for skip */
};

/* Bytes of fill value that skip appends at a time: a multiple of every
 * element size. */
#define FILL_BLOCK (64u << 10)

/* Fill n bytes with the element pattern (n a multiple of esize). */
static void fill_pattern(uint8_t *dst, size_t n, const uint8_t *elem,
			 unsigned esize)
{
	size_t done;

	if (n == 0)
		return;
	memcpy(dst, elem, esize < n ? esize : n);
	for (done = esize; done < n; done *= 2)
		memcpy(dst + done, dst, done < n - done ? done : n - done);
}

static __thread char last_error[512];

void sp_last_error_set(const char *msg)
{
	snprintf(last_error, sizeof(last_error), "%s", msg);
}

const char *shardpipe_last_error_message(void)
{
	return last_error;
}

void shardpipe_desc_init_sized(shardpipe_desc *desc, size_t size)
{
	shardpipe_desc d;

	if (desc == NULL)
		return;
	memset(&d, 0, sizeof(d));
	d.dtype = SHARDPIPE_DTYPE_UINT8;
	d.codec = SHARDPIPE_CODEC_ZSTD;
	d.level = 1;
	d.index_location = SHARDPIPE_INDEX_END;
	d.backend = "auto";
	d.blosc_cname = SHARDPIPE_BLOSC_ZSTD;
	d.blosc_shuffle = SHARDPIPE_BLOSC_SHUFFLE;
	/* A caller built against an older header owns fewer bytes. */
	sp_struct_copy(desc, size, &d, sizeof(d));
}

/* The symbol behind the macro, for callers that bind it by name. */
void (shardpipe_desc_init)(shardpipe_desc *desc)
{
	shardpipe_desc_init_sized(desc, sizeof(*desc));
}

/* Rows of dim 0 that the data appended so far reaches into. */
static uint64_t rows_appended(const struct shardpipe_stream *s)
{
	return sp_ceil_div(s->stats.bytes_in, s->plan.row_bytes);
}

/* Called by the writer thread, or by the caller's while the writer is idle
 * or gone: never by both at once. */
static int publish_meta(struct shardpipe_stream *s, uint64_t rows,
			struct sp_err *err)
{
	char *json;
	size_t len;
	int rc;

	pthread_mutex_lock(&s->mu);
	rc = zarr_meta_render(&s->plan, rows, &s->attrs, &json, &len, err);
	pthread_mutex_unlock(&s->mu);
	SP_FORWARD(rc);
	if (s->store != NULL)
		rc = s->store->ops->write_meta(s->store, json, len, err);
	else if (s->sink.metadata != NULL &&
		 s->sink.metadata(s->sink.user, json, len) != 0)
		rc = sp_err_set(err, SHARDPIPE_ERR_SINK,
				"the sink refused zarr.json");
	else
		rc = SHARDPIPE_OK;
	free(json);
	return rc;
}

/* Writer thread: hand shard k of set to the sink, as parts when it takes
 * them (no copy of chunks that lie in their slots), else in one buffer. */
static int sink_shard(struct shardpipe_stream *s, struct shard_set *set,
		      uint64_t k, const uint64_t *coords, const uint8_t *idx)
{
	const struct plan *p = &s->plan;
	const struct shard_buf *b = &set->shards[k];

	if (s->sink.shard_parts != NULL) {
		size_t n = shard_set_parts(set, k, s->parts);

		for (size_t i = 0; i < n; i++)
			s->sink_parts[i] = (shardpipe_part){
				s->parts[i].iov_base, s->parts[i].iov_len
			};
		return s->sink.shard_parts(s->sink.user, coords, p->rank,
					   s->sink_parts, n, idx,
					   p->index_bytes);
	}
	return s->sink.shard(s->sink.user, coords, p->rank,
			     shard_set_packed(set, k), b->len, idx,
			     p->index_bytes);
}

/* Write the shards of shard epoch `se` held by `set`, then advertise rows
 * in zarr.json: the shards are all written before the rows are. */
static int emit_shards(struct shardpipe_stream *s, struct shard_set *set,
		       uint64_t se, uint64_t rows, struct sp_err *err)
{
	const struct plan *p = &s->plan;
	uint64_t coords[SHARDPIPE_MAX_RANK];
	double t0 = sp_now(), t1;

	uint64_t chunks = 0;

	for (uint64_t k = 0; k < p->S; k++) {
		const struct shard_buf *b = &set->shards[k];
		const uint8_t *idx;
		int rc = SHARDPIPE_OK;

		/* A shard of empty chunks only is left out: readers
		 * return the fill value for a missing shard. */
		if (b->stored == 0)
			continue;
		chunks += b->stored;
		idx = shard_set_index(set, k);
		plan_shard_coords(p, se, k, coords);
		if (s->store != NULL) {
			/* The index first or last, the chunks as they lie:
			 * one vectored write. */
			struct iovec ix = { (void *)idx, p->index_bytes };
			size_t n = p->index_location == SHARDPIPE_INDEX_START;

			if (n)
				s->parts[0] = ix;
			n += shard_set_parts(set, k, s->parts + n);
			if (p->index_location != SHARDPIPE_INDEX_START)
				s->parts[n++] = ix;
			rc = store_write_shard(s->store, coords, p->rank,
					       s->parts, n, err);
		} else if (sink_shard(s, set, k, coords, idx) != 0) {
			char key[32 * SHARDPIPE_MAX_RANK];
			size_t n = 0;

			for (int d = 0; d < p->rank; d++)
				n += (size_t)snprintf(key + n, sizeof(key) - n,
						      "/%llu",
						      (unsigned long long)coords[d]);
			rc = sp_err_set(err, SHARDPIPE_ERR_SINK,
					"the sink refused shard c%s", key);
		}
		SP_FORWARD(rc);
		pthread_mutex_lock(&s->mu);
		s->stats.shards_written++;
		s->stats.bytes_out += b->len + p->index_bytes;
		pthread_mutex_unlock(&s->mu);
	}
	pthread_mutex_lock(&s->mu);
	s->stats.chunks_written += chunks;
	s->stats.rows_written = rows;
	pthread_mutex_unlock(&s->mu);
	shard_set_reset(set);
	t1 = sp_now();
	trace_span(s->trace, TRACE_WRITER, "shard write", "shard epoch", se, t0,
		   t1);
	SP_FORWARD(publish_meta(s, rows, err));
	trace_span(s->trace, TRACE_WRITER, "zarr.json", "shard epoch", se, t1,
		   sp_now());
	pthread_mutex_lock(&s->mu);
	s->stats.seconds_write += sp_now() - t0;
	pthread_mutex_unlock(&s->mu);
	return SHARDPIPE_OK;
}

/* Keep the first failure of any thread for the caller (under mu). */
static void async_fail_locked(struct shardpipe_stream *s, int rc,
			      const struct sp_err *err)
{
	if (rc != SHARDPIPE_OK && s->async_rc == SHARDPIPE_OK) {
		s->async_rc = rc;
		s->async_err = *err;
	}
}

/* Pipeline thread: a free set, waiting for the writer when none is. */
static int take_set(struct shardpipe_stream *s)
{
	int k;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		for (k = 0; k < s->nsets && !s->set_free[k]; k++)
			;
		if (k < s->nsets) {
			s->set_free[k] = 0;
			break;
		}
		pthread_cond_wait(&s->cv, &s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return k;
}

/*
 * Pipeline thread: hand the fill set to the writer as shard epoch
 * s->shard_epochs; the next fill set is the first taken ahead, or a free
 * one, waiting for the writer if none is.
 */
static void hand_over_set(struct shardpipe_stream *s, uint64_t rows_in)
{
	const struct plan *p = &s->plan;
	uint64_t rows = (s->shard_epochs + 1) * p->cps[0] * p->chunk[0];
	struct set_job *j;

	if (rows > rows_in)
		rows = rows_in;
	pthread_mutex_lock(&s->mu);
	j = &s->wq[(s->wq_head + s->wq_len) % (unsigned)s->nsets];
	j->set = s->fill_set;
	j->shard_epoch = s->shard_epochs++;
	j->rows = rows;
	s->wq_len++;
	s->sets_queued++;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	if (s->nahead > 0) {
		s->fill_set = s->ahead[0];
		memmove(s->ahead, s->ahead + 1,
			(size_t)--s->nahead * sizeof(*s->ahead));
	} else {
		s->fill_set = take_set(s);
	}
}

/* Pipeline thread: the batch's input is consumed, its buffer (or the
 * caller's span) is free again. */
static void release_input(struct shardpipe_stream *s,
			  const struct batch_job *job)
{
	pthread_mutex_lock(&s->mu);
	if (job->buf >= 0)
		s->stage_free[job->buf] = 1;
	s->scattered++;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Pipeline thread: `epochs` more epochs are in the fill set; hand it over
 * when its shard epoch, or the array, is complete. */
static void epochs_added(struct shardpipe_stream *s, uint64_t epochs,
			 uint64_t rows_in)
{
	const struct plan *p = &s->plan;

	s->epochs_done += epochs;
	if (s->sets[s->fill_set].epochs == p->cps[0] ||
	    s->epochs_done == p->chunk_count[0])
		hand_over_set(s, rows_in);
}

static void add_stage_times(struct shardpipe_stream *s, double scatter,
			    double compress, double aggregate, double write)
{
	pthread_mutex_lock(&s->mu);
	s->stats.seconds_scatter += scatter;
	s->stats.seconds_compress += compress;
	s->stats.seconds_aggregate += aggregate;
	s->stats.seconds_write += write;
	pthread_mutex_unlock(&s->mu);
}

/*
 * Pipeline thread: fetch the oldest batch in the backend straight into
 * the shard sets (doc/design.md §14.2): its offsets first, then, for the
 * epochs that go into one set, that set's index and the ranges of packed
 * bytes its shards take, fetched to their place before the set may be
 * handed over.
 */
static int collect_batch(struct shardpipe_stream *s,
			 const struct batch_job *job)
{
	const struct plan *p = &s->plan;
	const struct batch_span *sp;
	const uint64_t *off;
	double t0 = sp_now(), tw = 0;
	size_t nsp;

	SP_FORWARD(s->be->fetch_offsets(s->bctx, &off, &s->perr));
	for (uint64_t e = 0; e < job->epochs;) {
		struct shard_set *set = &s->sets[s->fill_set];
		uint64_t n = job->epochs - e;
		double ti = sp_now(), tf;
		size_t nr;

		if (n > p->cps[0] - set->epochs)
			n = p->cps[0] - set->epochs;
		SP_FORWARD(shard_set_place(set, off + e * p->M, n, s->ranges,
					   &nr, &s->perr));
		tf = sp_now();
		tw += tf - ti;
		trace_span(s->trace, TRACE_PIPELINE, "shard index", "batch",
			   job->seq, ti, tf);
		SP_FORWARD(s->be->fetch_ranges(s->bctx, s->ranges, nr,
					       &s->perr));
		e += n;
		epochs_added(s, n, job->rows_in);
	}
	trace_span(s->trace, TRACE_PIPELINE, "fetch", "batch", job->seq, t0,
		   sp_now());
	nsp = s->trace != NULL && s->be->spans != NULL
		      ? s->be->spans(s->bctx, &sp)
		      : 0;
	for (size_t i = 0; i < nsp; i++)
		trace_span(s->trace, trace_queue(sp[i].queue), sp[i].name,
			   "batch", job->seq, sp[i].start, sp[i].end);
	add_stage_times(s, 0, 0, sp_now() - t0 - tw, tw);
	return SHARDPIPE_OK;
}

/*
 * Pipeline thread: one batch through a fused backend, each chunk
 * compressed straight into its slot in its shard set (doc/design.md §6.2):
 * the sets the batch's epochs reach are taken first, then the sizes
 * recorded epoch by epoch, handing each set over once complete.
 */
static int run_fused(struct shardpipe_stream *s, const struct batch_job *job)
{
	const struct plan *p = &s->plan;
	struct batch_times f = { 0 };
	int set = s->fill_set;
	uint64_t w = s->sets[set].epochs;
	double t0 = sp_now();
	int rc;

	for (uint64_t e = 0; e < job->epochs; e++, w++) {
		if (w == p->cps[0]) {
			set = s->ahead[s->nahead++] = take_set(s);
			w = 0;
		}
		shard_set_slots(&s->sets[set], w, s->dst + e * p->M);
	}
	rc = s->be->run_batch(s->bctx, job->data, job->epochs, s->dst,
			      s->sizes, &f, &s->perr);
	release_input(s, job);
	SP_FORWARD(rc);
	trace_span(s->trace, TRACE_PIPELINE, "run batch", "batch", job->seq,
		   t0, sp_now());
	add_stage_times(s, f.seconds_scatter, f.seconds_compress, 0, 0);
	for (uint64_t e = 0; e < job->epochs; e++) {
		SP_FORWARD(shard_set_sized(&s->sets[s->fill_set],
					   s->sizes + e * p->M, &s->perr));
		epochs_added(s, 1, job->rows_in);
	}
	return SHARDPIPE_OK;
}

/*
 * Pipeline thread: issue a batch on the backend (upload and kernels; only
 * the upload is waited for, and the input is free once this returns).
 * The stage times of an asynchronous device are those of issuing; fetch
 * counts the wait (SHARDPIPE_KERNEL_DEBUG=sync times each stage).
 */
static int submit_batch(struct shardpipe_stream *s,
			const struct batch_job *job)
{
	double t0 = sp_now(), t1, t2, t3;
	int rc;

	rc = s->be->scatter(s->bctx, job->data, &s->perr);
	release_input(s, job);
	SP_FORWARD(rc);
	t1 = sp_now();
	SP_FORWARD(s->be->compress(s->bctx, &s->perr));
	t2 = sp_now();
	SP_FORWARD(s->be->aggregate(s->bctx, &s->perr));
	t3 = sp_now();
	trace_span(s->trace, TRACE_PIPELINE, "submit", "batch", job->seq, t0,
		   t3);
	trace_span(s->trace, TRACE_PIPELINE, "scatter", "batch", job->seq, t0,
		   t1);
	trace_span(s->trace, TRACE_PIPELINE, "compress", "batch", job->seq, t1,
		   t2);
	trace_span(s->trace, TRACE_PIPELINE, "aggregate", "batch", job->seq,
		   t2, t3);
	add_stage_times(s, t1 - t0, t2 - t1, t3 - t2, 0);
	return SHARDPIPE_OK;
}

/* Pipeline thread, under mu: a batch is through (or dropped after a
 * failure). */
static void batch_done(struct shardpipe_stream *s, int rc,
		       const struct sp_err *err)
{
	async_fail_locked(s, rc, err);
	s->processed++;
	pthread_cond_broadcast(&s->cv);
}

/*
 * Pipeline thread, without mu: take a batch from the queue into the
 * backend.  A fused backend runs it whole; otherwise it is submitted and
 * stays in flight.  After a failure its input is only released.
 */
static void take_batch(struct shardpipe_stream *s, const struct batch_job *job,
		       int failed)
{
	int rc = SHARDPIPE_OK;

	if (failed)
		release_input(s, job);
	else if (s->be->run_batch != NULL)
		rc = run_fused(s, job);
	else if ((rc = submit_batch(s, job)) == SHARDPIPE_OK) {
		s->flight[s->nflight++] = *job;
		return;
	}
	pthread_mutex_lock(&s->mu);
	batch_done(s, rc, &s->perr);
	pthread_mutex_unlock(&s->mu);
}

/* Pipeline thread, without mu: fetch the oldest batch in flight (or, after
 * a failure, drop it). */
static void collect_oldest(struct shardpipe_stream *s, int failed)
{
	struct batch_job job = s->flight[0];
	int rc = failed ? SHARDPIPE_OK : collect_batch(s, &job);

	memmove(s->flight, s->flight + 1, --s->nflight * sizeof(*s->flight));
	pthread_mutex_lock(&s->mu);
	batch_done(s, rc, &s->perr);
	pthread_mutex_unlock(&s->mu);
}

/*
 * The pipeline thread.  With a batch in flight it fetches that batch as
 * soon as the next one is submitted.  With none queued it waits for one
 * while the caller is inside append (whose data is about to complete the
 * next batch: the start of a stream, a caller faster than the device),
 * and otherwise fetches at once, so that a batch never waits on a caller
 * who has stopped appending (flush, close, a slow producer).
 */
static void *pipeline_main(void *arg)
{
	struct shardpipe_stream *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct batch_job job;
		int take, failed;

		while (s->q_len == 0 && !s->stop && s->cp_state != 1 &&
		       (s->nflight == 0 || s->in_append))
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->cp_state == 1 && s->nflight == 0) {
			double t0 = sp_now();

			pthread_mutex_unlock(&s->mu);
			memcpy(s->cp_dst, s->cp_src, s->cp_n);
			pthread_mutex_lock(&s->mu);
			trace_span(s->trace, TRACE_PIPELINE, "stage", "batch",
				   s->queued, t0, sp_now());
			s->cp_state = 2;
			pthread_cond_broadcast(&s->cv);
			continue;
		}
		take = s->q_len > 0 && s->nflight < DEPTH;
		if (!take && s->nflight == 0)
			break;
		if (take) {
			job = s->q[s->q_head];
			s->q_head = (s->q_head + 1) % QCAP;
			s->q_len--;
		}
		failed = s->async_rc != SHARDPIPE_OK;
		pthread_mutex_unlock(&s->mu);
		if (take)
			take_batch(s, &job, failed);
		if (s->nflight == DEPTH || (!take && s->nflight > 0))
			collect_oldest(s, failed);
		trace_flush(s->trace, TRACE_PIPELINE);
		pthread_mutex_lock(&s->mu);
	}
	s->pipe_done = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void *writer_main(void *arg)
{
	struct shardpipe_stream *s = arg;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		struct set_job job;
		int rc = SHARDPIPE_OK;

		while (s->wq_len == 0 && !s->pipe_done)
			pthread_cond_wait(&s->cv, &s->mu);
		if (s->wq_len == 0)
			break;
		job = s->wq[s->wq_head];
		s->wq_head = (s->wq_head + 1) % (unsigned)s->nsets;
		s->wq_len--;
		if (s->async_rc == SHARDPIPE_OK) {
			pthread_mutex_unlock(&s->mu);
			rc = emit_shards(s, &s->sets[job.set], job.shard_epoch,
					 job.rows, &s->werr);
			pthread_mutex_lock(&s->mu);
		}
		if (rc != SHARDPIPE_OK)
			async_fail_locked(s, rc, &s->werr);
		/* A set a failure left unwritten is emptied for reuse. */
		if (s->sets[job.set].epochs > 0)
			shard_set_reset(&s->sets[job.set]);
		s->set_free[job.set] = 1;
		s->sets_written++;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Caller's thread: adopt a failure of the other threads as the stream's
 * sticky error, with its message. */
static int check_async(struct shardpipe_stream *s)
{
	int rc;

	if (s->sticky != SHARDPIPE_OK)
		return s->sticky;
	pthread_mutex_lock(&s->mu);
	rc = s->async_rc;
	if (rc != SHARDPIPE_OK)
		s->err = s->async_err;
	pthread_mutex_unlock(&s->mu);
	s->sticky = rc;
	return rc;
}

static int fail(struct shardpipe_stream *s, int rc)
{
	if (rc != SHARDPIPE_OK && s->sticky == SHARDPIPE_OK)
		s->sticky = rc;
	return rc;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN 1
#else
#define HOST_BIG_ENDIAN 0
#endif

/*
 * Elements are little-endian in the store on every host
 * (doc/design.md §20).  On a big-endian host the staged elements are swapped in
 * place before the backend sees them, so that no backend knows the host's
 * byte order; spans are then always staged, never scattered from the
 * caller's (read-only) memory.
 */
static void to_little_endian(uint8_t *p, uint64_t nbytes, unsigned esize)
{
	if (!HOST_BIG_ENDIAN || esize == 1)
		return;
	for (uint64_t i = 0; i + esize <= nbytes; i += esize)
		for (unsigned a = 0, b = esize - 1; a < b; a++, b--) {
			uint8_t t = p[i + a];

			p[i + a] = p[i + b];
			p[i + b] = t;
		}
}

/* Caller's thread, under mu: wait on the condition variable, counting
 * the time as this append's back-pressure. */
static void caller_wait(struct shardpipe_stream *s)
{
	double t0 = sp_now(), t1;

	pthread_cond_wait(&s->cv, &s->mu);
	t1 = sp_now();
	s->waited += t1 - t0;
	trace_span(s->trace, TRACE_CALLER, "wait", "batch", s->queued, t0, t1);
}

/* Caller's thread: queue a batch of `epochs` complete epochs; returns its
 * ticket (the value of `scattered` once its input is consumed). */
static uint64_t submit(struct shardpipe_stream *s, const uint8_t *data,
		       int buf, uint64_t epochs)
{
	struct batch_job *j;
	uint64_t ticket;

	if (buf >= 0)
		to_little_endian(s->staging[buf], epochs * s->plan.epoch_bytes,
				 s->plan.esize);

	pthread_mutex_lock(&s->mu);
	while (s->q_len == QCAP)
		caller_wait(s);
	j = &s->q[(s->q_head + s->q_len) % QCAP];
	j->data = data;
	j->buf = buf;
	j->epochs = epochs;
	j->rows_in = rows_appended(s);
	j->seq = s->queued;
	s->q_len++;
	ticket = ++s->queued;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	return ticket;
}

/* Caller's thread: a free staging buffer, waiting for one if `wait`;
 * -1 when none is free and not waiting. */
static int take_buffer(struct shardpipe_stream *s, int wait)
{
	int k = -1;

	pthread_mutex_lock(&s->mu);
	for (;;) {
		for (k = 0; k < NSTAGE && !s->stage_free[k]; k++)
			;
		if (k < NSTAGE) {
			s->stage_free[k] = 0;
			break;
		}
		k = -1;
		if (!wait)
			break;
		caller_wait(s);
	}
	pthread_mutex_unlock(&s->mu);
	return k;
}

/* Caller's thread: wait until every queued batch is through the pipeline
 * and every shard set handed over is written. */
static void wait_idle(struct shardpipe_stream *s)
{
	pthread_mutex_lock(&s->mu);
	while (s->processed != s->queued || s->sets_written != s->sets_queued)
		pthread_cond_wait(&s->cv, &s->mu);
	pthread_mutex_unlock(&s->mu);
}

static void stop_threads(struct shardpipe_stream *s)
{
	if (!s->threads_started)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	pthread_join(s->pipe_thread, NULL);
	pthread_join(s->writer_thread, NULL);
	s->threads_started = 0;
}

/* Staging memory comes from the backend that reads it (pinned on a GPU,
 * doc/design.md §14.1), or from the pools that outlive streams (§27). */
static uint8_t *staging_alloc(struct shardpipe_stream *s)
{
	uint64_t n = s->plan.batch_bytes;

	if (s->be->host_alloc != NULL)
		return s->be->host_alloc(s->bctx, n);
	return pool_take(n);
}

static void stream_free(struct shardpipe_stream *s)
{
	stop_threads(s);
	/* Staging first: the backend may own its memory. */
	for (int k = 0; k < NSTAGE; k++) {
		if (s->staging[k] == NULL)
			continue;
		if (s->be->host_free != NULL)
			s->be->host_free(s->bctx, s->staging[k]);
		else
			pool_give(s->staging[k], s->plan.batch_bytes);
	}
	if (s->bctx != NULL)
		s->be->close(s->bctx);
	for (int k = 0; s->sets != NULL && k < s->nsets; k++)
		if (s->sets[k].plan != NULL)
			shard_set_free(&s->sets[k]);
	free(s->sets);
	free(s->set_free);
	free(s->wq);
	free(s->parts);
	free(s->sink_parts);
	free(s->dst);
	free(s->sizes);
	free(s->ahead);
	store_free(s->store);
	free(s->ranges);
	free(s->fill_block);
	attrs_free(&s->attrs);
	trace_close(s->trace, NULL);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	lanes_unref(s->plan.lanes);
	plan_free(&s->plan);
	free(s);
}

static int start_threads(struct shardpipe_stream *s)
{
	int e = pthread_create(&s->pipe_thread, NULL, pipeline_main, s);

	SP_RETURN_IF(e != 0, &s->err, SHARDPIPE_ERR_NOMEM,
		     "cannot start the pipeline thread (%s)", strerror(e));
	e = pthread_create(&s->writer_thread, NULL, writer_main, s);
	if (e != 0) {
		pthread_mutex_lock(&s->mu);
		s->stop = 1;
		s->pipe_done = 1;
		pthread_cond_broadcast(&s->cv);
		pthread_mutex_unlock(&s->mu);
		pthread_join(s->pipe_thread, NULL);
		return sp_err_set(&s->err, SHARDPIPE_ERR_NOMEM,
				  "cannot start the writer thread (%s)",
				  strerror(e));
	}
	s->threads_started = 1;
	return SHARDPIPE_OK;
}

/*
 * The shard sets a stream keeps (doc/design.md §14.2): one filling and one
 * being written; with a fused backend, every set a batch's epochs can
 * reach (a batch of K epochs starting anywhere in a shard epoch of cps[0])
 * and one being written, since the batch compresses into all of them at
 * once.
 */
static int nsets_for(const struct plan *p, const struct backend_ops *be)
{
	if (be == NULL || be->run_batch == NULL)
		return 2;
	return (int)(2 + sp_ceil_div(p->K - 1, p->cps[0]));
}

/* Staging buffers, the backend's pools (as it reports them, or chunks,
 * compressed slots and aggregated), and the shard sets at their worst
 * case: every chunk of a shard epoch at slot capacity.  bctx NULL: the
 * generic estimate, before the backend is open. */
static uint64_t pools(const struct shardpipe_stream *s)
{
	const struct plan *p = &s->plan;
	uint64_t n = NSTAGE * p->batch_bytes +
		     (uint64_t)nsets_for(p, s->be) * shard_set_bytes(p);

	n += store_pool_bytes(s->store);
	if (s->bctx != NULL && s->be->pool_bytes != NULL)
		return n + s->be->pool_bytes(s->bctx);
	return n + p->K * p->M * (p->chunk_bytes + 2 * p->slot_capacity);
}

/* Lower the epochs per batch until the generic estimate of the pools fits
 * the plan's max_memory (backends size their pools from K). */
static void cap_batch(struct shardpipe_stream *s)
{
	struct plan *p = &s->plan;

	while (p->max_memory != 0 && p->K > 1 &&
	       pools(s) > p->max_memory) {
		p->K = (p->K + 1) / 2;
		p->batch_bytes = p->K * p->epoch_bytes;
	}
}

/* The shard sets and what the pipeline and the writer need to fill and
 * write them. */
static int open_sets(struct shardpipe_stream *s)
{
	const struct plan *p = &s->plan;
	const int fused = s->be->run_batch != NULL;
	const size_t n = (size_t)(p->K * p->M);

	s->nsets = nsets_for(p, s->be);
	s->sets = calloc((size_t)s->nsets, sizeof(*s->sets));
	s->set_free = calloc((size_t)s->nsets, sizeof(*s->set_free));
	s->wq = calloc((size_t)s->nsets, sizeof(*s->wq));
	s->ahead = calloc((size_t)s->nsets, sizeof(*s->ahead));
	s->parts = malloc((size_t)(p->chunks_per_shard + 1) *
			  sizeof(*s->parts));
	s->sink_parts = malloc((size_t)p->chunks_per_shard *
			       sizeof(*s->sink_parts));
	if (fused) {
		s->dst = malloc(n * sizeof(*s->dst));
		s->sizes = malloc(n * sizeof(*s->sizes));
	} else {
		s->ranges = malloc((size_t)(p->K * p->S) * sizeof(*s->ranges));
	}
	SP_RETURN_IF(s->sets == NULL || s->set_free == NULL || s->wq == NULL ||
		     s->ahead == NULL || s->parts == NULL ||
		     s->sink_parts == NULL ||
		     (fused ? s->dst == NULL || s->sizes == NULL
			    : s->ranges == NULL),
		     &s->err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for %d shard sets", s->nsets);
	for (int k = 0; k < s->nsets; k++) {
		SP_FORWARD(shard_set_init(&s->sets[k], p, fused, &s->err));
		s->set_free[k] = k > 0;
	}
	return SHARDPIPE_OK;
}

/* SHARDPIPE_TRACE: the stream is named by its backend and store. */
static int open_trace(struct shardpipe_stream *s, const char *path)
{
	char label[400];

	snprintf(label, sizeof(label), "shardpipe %s -> %s", s->be->name,
		 path != NULL ? path : "(sink)");
	return trace_open(&s->trace, label, &s->err);
}

/* The description's attributes, refused (naming the key) before anything
 * is written. */
static int open_attrs(struct shardpipe_stream *s, const shardpipe_desc *desc)
{
	if (!DESC_HAS(desc, nattributes) || desc->nattributes == 0)
		return SHARDPIPE_OK;
	SP_RETURN_IF(desc->attributes == NULL, &s->err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "nattributes is %zu but attributes is NULL",
		     desc->nattributes);
	for (size_t k = 0; k < desc->nattributes; k++)
		SP_FORWARD(attrs_set(&s->attrs, desc->attributes[k].key,
				     desc->attributes[k].json, &s->err));
	return SHARDPIPE_OK;
}

static int stream_open(shardpipe_stream **out, const char *path,
		       const shardpipe_sink *sink, const shardpipe_desc *desc,
		       struct lanes *lanes)
{
	struct shardpipe_stream *s;
	shardpipe_sink own = { 0 };
	const char *backend;
	int rc;

	if (out != NULL)
		*out = NULL;
	if (out == NULL || desc == NULL || (path == NULL && sink == NULL)) {
		sp_last_error_set("a required argument is NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	/* Only the callbacks inside the caller's struct_size are read; the
	 * rest of own stays NULL. */
	if (sink != NULL &&
	    (sp_struct_copy(&own, sizeof(own), sink, sink->struct_size) !=
		     SHARDPIPE_OK || !SHARDPIPE_HAS_FIELD(&own, shard))) {
		char msg[128];

		snprintf(msg, sizeof(msg), "sink not initialised with "
			 "shardpipe_sink_init(): struct_size %zu does not "
			 "hold the shard callback", sink->struct_size);
		sp_last_error_set(msg);
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	if (sink != NULL && own.shard == NULL && own.shard_parts == NULL) {
		sp_last_error_set("the sink's shard and shard_parts callbacks "
				  "are both NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		sp_last_error_set("out of memory");
		return SHARDPIPE_ERR_NOMEM;
	}
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->cur = -1;
	backend = getenv("SHARDPIPE_BACKEND");
	if (backend == NULL || *backend == '\0')
		backend = desc->backend;

	/* Everything that can refuse runs before the first write. */
	rc = plan_init(&s->plan, desc, &s->err);
	s->plan.trace = trace_wanted();
	if (rc == SHARDPIPE_OK)
		rc = pool_configure(&s->err);
	if (lanes != NULL)
		s->plan.lanes = lanes_ref(lanes);
	if (rc == SHARDPIPE_OK && path != NULL)
		rc = store_check(&s->store, path, desc->overwrite,
				 s->plan.durable, &s->err);
	if (rc == SHARDPIPE_OK)
		rc = open_attrs(s, desc);
	if (rc == SHARDPIPE_OK)
		rc = backend_find(backend, &s->be, &s->err);
	if (rc == SHARDPIPE_OK)
		cap_batch(s);
	if (rc == SHARDPIPE_OK)
		rc = s->be->open(&s->plan, &s->bctx, &s->err);
	if (rc == SHARDPIPE_OK)
		rc = open_sets(s);
	if (rc == SHARDPIPE_OK && s->plan.max_memory != 0 &&
	    pools(s) > s->plan.max_memory)
		rc = sp_err_set(&s->err, SHARDPIPE_ERR_NOMEM,
				"max_memory %llu bytes: the pools need %llu "
				"bytes even with %llu epoch(s) of %llu bytes a "
				"batch",
				(unsigned long long)s->plan.max_memory,
				(unsigned long long)pools(s),
				(unsigned long long)s->plan.K,
				(unsigned long long)s->plan.epoch_bytes);
	for (int k = 0; k < NSTAGE && rc == SHARDPIPE_OK; k++) {
		s->staging[k] = staging_alloc(s);
		s->stage_free[k] = 1;
		if (s->staging[k] == NULL)
			rc = sp_err_set(&s->err, SHARDPIPE_ERR_NOMEM,
					"out of memory for a batch of %llu bytes",
					(unsigned long long)s->plan.batch_bytes);
	}
	if (rc == SHARDPIPE_OK) {
		s->fill_block = malloc(FILL_BLOCK);
		if (s->fill_block == NULL)
			rc = sp_err_set(&s->err, SHARDPIPE_ERR_NOMEM,
					"out of memory for the fill value");
		else
			fill_pattern(s->fill_block, FILL_BLOCK, s->plan.fill,
				     s->plan.esize);
	}
	if (rc == SHARDPIPE_OK)
		rc = open_trace(s, path);
	if (rc == SHARDPIPE_OK && s->store != NULL)
		rc = s->store->ops->create(s->store, &s->err);
	if (rc == SHARDPIPE_OK && sink != NULL)
		s->sink = own;
	if (rc == SHARDPIPE_OK)
		rc = publish_meta(s, 0, &s->err);
	if (rc == SHARDPIPE_OK && s->store != NULL)
		rc = store_sync(s->store, &s->err);
	if (rc == SHARDPIPE_OK)
		rc = start_threads(s);
	if (rc != SHARDPIPE_OK) {
		sp_last_error_set(s->err.msg);
		stream_free(s);
		return rc;
	}
	s->stats.pool_bytes = pools(s);
	*out = s;
	return SHARDPIPE_OK;
}

int shardpipe_stream_open(shardpipe_stream **out, const char *path,
			  const shardpipe_desc *desc)
{
	if (path == NULL) {
		if (out != NULL)
			*out = NULL;
		sp_last_error_set("store path is NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	return stream_open(out, path, NULL, desc, NULL);
}

int shardpipe_stream_open_sink(shardpipe_stream **out,
			       const shardpipe_sink *sink,
			       const shardpipe_desc *desc)
{
	if (sink == NULL) {
		if (out != NULL)
			*out = NULL;
		sp_last_error_set("sink is NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	return stream_open(out, NULL, sink, desc, NULL);
}

int stream_open_lanes(shardpipe_stream **out, const char *path,
		      const shardpipe_desc *desc, struct lanes *lanes)
{
	return stream_open(out, path, NULL, desc, lanes);
}

/* Caller's thread: whether a batch is queued or in the backend. */
static int pipeline_busy(struct shardpipe_stream *s)
{
	int busy;

	pthread_mutex_lock(&s->mu);
	busy = s->processed != s->queued;
	pthread_mutex_unlock(&s->mu);
	return busy;
}

/*
 * A span that holds a whole batch, arriving while the pipeline is busy, is
 * scattered straight from the caller's memory instead of being copied: the
 * batch could not start before the one in the backend ends anyway, so the
 * caller waits about as long as back-pressure would make it (never more
 * than one batch) and the copy, a tenth of the work of a fast codec on a
 * machine of few cores, is saved.  A fused backend, which reads only the
 * epochs it is given, takes whole epochs so too, as a batch of its own,
 * once they hold two chunks a thread.  When the pipeline is idle the span
 * is copied and append returns at once, unless the last span was taken
 * straight: the pipeline went idle only because that append waited for
 * it, and a caller that keeps up with the pipeline gains nothing from the
 * copy.  Returns the epochs to take straight from a span of n bytes, or 0
 * to copy it.
 */
static uint64_t direct_epochs(struct shardpipe_stream *s, const uint8_t *src,
			      size_t n)
{
	const struct plan *p = &s->plan;
	uint64_t e = n / p->epoch_bytes;

	/* Big-endian elements are swapped in staging (doc/design.md §20);
	 * the backend reads elements in place, aligned. */
	if (HOST_BIG_ENDIAN || s->cur >= 0 || s->staged != 0 || e == 0 ||
	    (uintptr_t)src % p->esize != 0)
		return 0;
	if (e >= p->K)
		e = p->K;
	else if (s->be->run_batch == NULL || e * p->M < 2 * (uint64_t)p->threads)
		return 0;
	return s->direct || pipeline_busy(s) ? e : 0;
}

/* The span's first `epochs` epochs as a batch of their own; the span is
 * not used once this returns. */
static int append_direct(struct shardpipe_stream *s, const uint8_t *src,
			 uint64_t epochs)
{
	uint64_t ticket;

	pthread_mutex_lock(&s->mu);
	s->stats.bytes_in += epochs * s->plan.epoch_bytes;
	pthread_mutex_unlock(&s->mu);
	ticket = submit(s, src, -1, epochs);
	pthread_mutex_lock(&s->mu);
	while (s->scattered < ticket)
		caller_wait(s);
	pthread_mutex_unlock(&s->mu);
	return check_async(s);
}

/*
 * Caller's thread: copy a span into staging.  While the pipeline has no
 * batch (it is waiting for this one: the start of a stream, or a codec
 * that compresses faster than one thread copies) its thread is idle and
 * copies the second half, so the copy no longer runs on one core alone.
 * With a batch in the backend the caller copies alone: every core is
 * compressing then.  Small spans are not worth the hand-over.
 */
#define STAGE_SPLIT_MIN (1u << 20)

static void stage_copy(struct shardpipe_stream *s, uint8_t *dst,
		       const uint8_t *src, size_t n)
{
	size_t half = n / 2;
	int split = 0;

	if (n >= STAGE_SPLIT_MIN && s->plan.threads > 1) {
		pthread_mutex_lock(&s->mu);
		if (s->processed == s->queued && s->q_len == 0 &&
		    !s->stop) {
			s->cp_src = src + half;
			s->cp_dst = dst + half;
			s->cp_n = n - half;
			s->cp_state = 1;
			split = 1;
			pthread_cond_broadcast(&s->cv);
		}
		pthread_mutex_unlock(&s->mu);
	}
	if (!split) {
		memcpy(dst, src, n);
		return;
	}
	memcpy(dst, src, half);
	pthread_mutex_lock(&s->mu);
	while (s->cp_state != 2)
		pthread_cond_wait(&s->cv, &s->mu);
	s->cp_state = 0;
	pthread_mutex_unlock(&s->mu);
}

static int append_span(shardpipe_stream *s, const void *data, size_t nbytes)
{
	const struct plan *p;
	const uint8_t *src = data;
	size_t n = nbytes;
	int beyond = 0;

	if (s == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	if (check_async(s) != SHARDPIPE_OK)
		return s->sticky;
	if (n == 0)
		return SHARDPIPE_OK;
	if (data == NULL)
		return sp_err_set(&s->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				  "append of %zu bytes from NULL", nbytes);
	p = &s->plan;
	if (p->size[0] != 0) {
		uint64_t room = p->size[0] * p->row_bytes - s->stats.bytes_in;

		if (n > room) {
			n = (size_t)room;
			beyond = 1;
		}
	}
	while (n > 0) {
		size_t take = (size_t)p->batch_bytes - s->staged;
		uint64_t direct = direct_epochs(s, src, n);
		double t0;

		s->direct = direct > 0;
		if (direct > 0) {
			int rc = append_direct(s, src, direct);

			src += direct * p->epoch_bytes;
			n -= (size_t)(direct * p->epoch_bytes);
			if (rc != SHARDPIPE_OK)
				return rc;
			continue;
		}
		if (s->cur < 0)
			s->cur = take_buffer(s, 1);
		t0 = sp_now();
		if (take > n)
			take = n;
		stage_copy(s, s->staging[s->cur] + s->staged, src, take);
		s->staged += take;
		src += take;
		n -= take;
		pthread_mutex_lock(&s->mu);
		s->stats.bytes_in += take;
		s->stats.bytes_staged += take;
		s->stats.seconds_stage += sp_now() - t0;
		pthread_mutex_unlock(&s->mu);
		trace_span(s->trace, TRACE_CALLER, "stage", "batch", s->queued,
			   t0, sp_now());
		if (s->staged == p->batch_bytes) {
			submit(s, s->staging[s->cur], s->cur, p->K);
			s->cur = -1;
			s->staged = 0;
			if (check_async(s) != SHARDPIPE_OK)
				return s->sticky;
		}
	}
	if (beyond)
		return sp_err_set(&s->err, SHARDPIPE_ERR_BEYOND_END,
				  "dim 0: append reaches past its size %llu; "
				  "the last %zu bytes were not written",
				  (unsigned long long)p->size[0],
				  nbytes - (size_t)(src - (const uint8_t *)data));
	return SHARDPIPE_OK;
}

/*
 * Queue the complete epochs in staging (and, when pad_last, the partial
 * one after them, padded with fill).  The bytes of a partial epoch that is
 * not queued are set aside and put back once the buffer is free again.
 */
static int drain(struct shardpipe_stream *s, int pad_last)
{
	const struct plan *p = &s->plan;
	uint64_t full = s->staged / p->epoch_bytes;
	size_t tail_at = (size_t)(full * p->epoch_bytes);
	size_t tail = s->staged - tail_at;
	uint64_t n = full;
	uint8_t *buf, *keep = NULL;

	if (pad_last && tail > 0) {
		n++;
		tail_at = s->staged;
		tail = 0;
	}
	if (n == 0)
		return SHARDPIPE_OK;
	buf = s->staging[s->cur];
	if (tail > 0) {
		keep = malloc(tail);
		SP_RETURN_IF(keep == NULL, &s->err, SHARDPIPE_ERR_NOMEM,
			     "out of memory for %zu bytes of a partial epoch",
			     tail);
		memcpy(keep, buf + tail_at, tail);
	}
	/* In the host's order: submit swaps the batch to little-endian. */
	fill_pattern(buf + tail_at, (size_t)p->batch_bytes - tail_at,
		     p->fill, p->esize);
	submit(s, buf, s->cur, n);
	s->cur = -1;
	s->staged = 0;
	if (keep != NULL) {
		s->cur = take_buffer(s, 1);
		memcpy(s->staging[s->cur], keep, tail);
		s->staged = tail;
		free(keep);
	}
	return SHARDPIPE_OK;
}

/* Count an append or skip that waited for the pipeline. */
/* An append or skip begins: while it runs, a batch it is about to queue
 * is worth the pipeline's wait (pipeline_main). */
static void begin_append(struct shardpipe_stream *s)
{
	pthread_mutex_lock(&s->mu);
	s->in_append = 1;
	pthread_mutex_unlock(&s->mu);
}

/* An append or skip ends; count it if it waited for the pipeline. */
static void count_wait(struct shardpipe_stream *s)
{
	pthread_mutex_lock(&s->mu);
	if (s->waited > 0) {
		s->stats.appends_blocked++;
		s->stats.seconds_blocked += s->waited;
		s->waited = 0;
	}
	s->in_append = 0;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

int shardpipe_stream_append(shardpipe_stream *s, const void *data,
			    size_t nbytes)
{
	int rc;

	if (s == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	begin_append(s);
	rc = append_span(s, data, nbytes);
	count_wait(s);
	return rc;
}

int shardpipe_stream_skip(shardpipe_stream *s, uint64_t nbytes)
{
	const struct plan *p;
	uint64_t n = nbytes, in;

	if (s == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	if (check_async(s) != SHARDPIPE_OK)
		return s->sticky;
	p = &s->plan;
	pthread_mutex_lock(&s->mu);
	in = s->stats.bytes_in;
	pthread_mutex_unlock(&s->mu);
	if (nbytes % p->esize != 0 || in % p->esize != 0)
		return sp_err_set(&s->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				  "skip of %llu bytes at byte %llu: both must "
				  "be multiples of the element size %u",
				  (unsigned long long)nbytes,
				  (unsigned long long)in, p->esize);
	if (p->size[0] != 0 && n > p->size[0] * p->row_bytes - in)
		n = p->size[0] * p->row_bytes - in;
	begin_append(s);
	while (n > 0) {
		size_t take = n < FILL_BLOCK ? (size_t)n : FILL_BLOCK;
		int rc = append_span(s, s->fill_block, take);

		if (rc != SHARDPIPE_OK) {
			count_wait(s);
			return rc;
		}
		n -= take;
	}
	count_wait(s);
	if (p->size[0] != 0 && nbytes > p->size[0] * p->row_bytes - in)
		return sp_err_set(&s->err, SHARDPIPE_ERR_BEYOND_END,
				  "dim 0: skip reaches past its size %llu; "
				  "the last %llu bytes were not skipped",
				  (unsigned long long)p->size[0],
				  (unsigned long long)(nbytes -
						       (p->size[0] * p->row_bytes -
							in)));
	return SHARDPIPE_OK;
}

int shardpipe_stream_set_attribute(shardpipe_stream *s, const char *key,
				   const char *json)
{
	int rc;

	if (s == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	if (check_async(s) != SHARDPIPE_OK)
		return s->sticky;
	/* A refusal is the caller's, not the stream's: not sticky. */
	pthread_mutex_lock(&s->mu);
	rc = attrs_set(&s->attrs, key, json, &s->err);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

int shardpipe_stream_flush(shardpipe_stream *s)
{
	uint64_t rows;
	int rc;

	if (s == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	if (check_async(s) != SHARDPIPE_OK)
		return s->sticky;
	rc = drain(s, 0);
	if (rc != SHARDPIPE_OK)
		return fail(s, rc);
	wait_idle(s);
	rc = check_async(s);
	if (rc != SHARDPIPE_OK)
		return rc;
	/* The writer is idle: zarr.json can be written from here. */
	pthread_mutex_lock(&s->mu);
	rows = s->stats.rows_written;
	pthread_mutex_unlock(&s->mu);
	rc = publish_meta(s, rows, &s->err);
	/* A store that uploads in the background has it all once synced. */
	if (rc == SHARDPIPE_OK && s->store != NULL)
		rc = store_sync(s->store, &s->err);
	return fail(s, rc);
}

int shardpipe_stream_close(shardpipe_stream *s)
{
	struct sp_err terr;
	int rc;

	if (s == NULL)
		return SHARDPIPE_OK;
	rc = check_async(s);
	if (rc == SHARDPIPE_OK && s->staged > 0)
		rc = fail(s, drain(s, 1));
	stop_threads(s);
	if (rc == SHARDPIPE_OK)
		rc = check_async(s);
	/* The threads are gone: what they owned is the caller's now. */
	if (rc == SHARDPIPE_OK && s->sets[s->fill_set].epochs > 0)
		rc = emit_shards(s, &s->sets[s->fill_set], s->shard_epochs,
				 rows_appended(s), &s->err);
	if (rc == SHARDPIPE_OK) {
		/* A bounded array keeps its declared shape; rows never
		 * appended read as the fill value. */
		uint64_t rows = s->plan.size[0] ? s->plan.size[0]
						: rows_appended(s);

		s->stats.rows_written = rows;
		rc = publish_meta(s, rows, &s->err);
	}
	if (rc == SHARDPIPE_OK && s->store != NULL)
		rc = store_sync(s->store, &s->err);
	/* The threads are gone: the trace is complete.  Failing to write
	 * it is reported when nothing else failed. */
	if (trace_close(s->trace, &terr) != SHARDPIPE_OK &&
	    rc == SHARDPIPE_OK) {
		s->err = terr;
		rc = terr.code;
	}
	s->trace = NULL;
	if (rc != SHARDPIPE_OK)
		sp_last_error_set(s->err.msg);
	stream_free(s);
	return rc;
}

int shardpipe_stream_stats_sized(const shardpipe_stream *s,
				 shardpipe_stats *out, size_t size)
{
	struct shardpipe_stream *m = (struct shardpipe_stream *)s;
	shardpipe_stats st;

	if (s == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	pthread_mutex_lock(&m->mu);
	st = s->stats;
	pthread_mutex_unlock(&m->mu);
	return sp_struct_copy(out, size, &st, sizeof(st));
}

const char *shardpipe_stream_backend(const shardpipe_stream *s)
{
	return s != NULL ? s->be->name : NULL;
}

const char *shardpipe_stream_message(const shardpipe_stream *s)
{
	return s != NULL ? s->err.msg : "";
}
