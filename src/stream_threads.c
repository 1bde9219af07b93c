/*
 * stream_threads.c - the stream's pipeline thread (batches through the
 * backend, epochs into shard sets, a level's rows reduced for the next)
 * and its writer thread (shards and zarr.json into the store or sink);
 * doc/design.md §14, §17.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>

#include "copy.h"
#include "store_fs.h"
#include "stream_impl.h"


/* Rows of dim 0 that the data appended so far reaches into. */
uint64_t stream_rows_appended(const struct shardpipe_stream *s)
{
	return sp_ceil_div(s->stats.bytes_in, s->plan.row_bytes);
}

/* Called by the writer thread, or by the caller's while the writer is idle
 * or gone: never by both at once. */
int stream_publish_meta(struct shardpipe_stream *s, uint64_t rows,
			struct sp_err *err)
{
	char *json;
	size_t len;
	int rc;

	/* A region writer's zarr.json is published by its caller (§30); its
	 * claim records how far it got, for that publish to check. */
	if (s->region)
		return store_fs_region_progress(s->store, rows, err);
	/* A continued array's rows after the ones kept (§29). */
	rows += s->base_rows;
	if (rows < s->adv_rows)
		rows = s->adv_rows;
	/* A pyramid's user attributes are its group's (§28.4). */
	pthread_mutex_lock(&s->mu);
	rc = zarr_meta_render(&s->plan, rows,
			      s->group == NULL ? &s->attrs
			      : s->fm != NULL ? &s->fm->level0 : NULL,
			      &json, &len, err);
	pthread_mutex_unlock(&s->mu);
	SP_FORWARD(rc);
	/* The fields' chunks before the rows, their zarr.json after
	 * (§28.9). */
	if (s->fm != NULL)
		rc = frame_meta_write(s->fm, &s->mu, rows, err);
	if (rc != SHARDPIPE_OK)
		free(json);
	SP_FORWARD(rc);
	rc = s->store->ops->write_meta(s->store, json, len, err);
	free(json);
	/* After the image's rows, never before them (§28.9). */
	if (rc == SHARDPIPE_OK && s->fm != NULL)
		rc = frame_meta_publish(s->fm, &s->mu, rows, err);
	return rc;
}

/* Write the shards of shard epoch `se` held by `set`, then advertise rows
 * in zarr.json: the shards are all written before the rows are. */
int stream_emit_shards(struct shardpipe_stream *s, struct shard_set *set,
		       uint64_t se, uint64_t rows, struct sp_err *err)
{
	const struct plan *p = &s->plan;
	uint64_t coords[SHARDPIPE_MAX_RANK];
	double t0 = sp_now(), t1;

	uint64_t chunks = 0;

	for (uint64_t k = 0; k < p->S; k++) {
		const struct shard_buf *b = &set->shards[k];
		struct iovec ix = { NULL, p->index_bytes };
		size_t n = p->index_location == SHARDPIPE_INDEX_START;

		plan_shard_coords(p, se, k, coords);
		for (int d = 0; d < p->rank; d++)
			coords[d] += s->shard_offset[d];
		/* Keys name shards in storage order (design §3.3). */
		plan_to_storage(p, coords, coords);
		/* A shard of empty chunks only is left out: readers
		 * return the fill value for a missing shard.  In the
		 * shard row a continued array rewrites, the old one goes
		 * (§29). */
		if (b->stored == 0 && s->resume_row && se == 0)
			SP_FORWARD(store_remove_shard(s->store, coords, p->rank,
						      err));
		if (b->stored == 0)
			continue;
		chunks += b->stored;
		/* The index first or last, the chunks as they lie: one
		 * vectored write. */
		ix.iov_base = (void *)shard_set_index(set, k);
		if (n)
			s->parts[0] = ix;
		n += shard_set_parts(set, k, s->parts + n);
		if (p->index_location != SHARDPIPE_INDEX_START)
			s->parts[n++] = ix;
		SP_FORWARD(store_write_shard(s->store, coords, p->rank,
					     s->parts, n, err));
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
	SP_FORWARD(stream_publish_meta(s, rows, err));
	if (s->group != NULL && s->attrs_changed)
		SP_FORWARD(stream_publish_group(s, err));
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

/* Where the row after `next_row` comes from when none will be appended:
 * the fill value inside a bounded array, the last row again past its end
 * (doc/design.md §28.2). */
int stream_tail_after(const struct plan *p, uint64_t next_row)
{
	return p->size[0] != 0 && next_row < p->size[0] ? SP_RD_TAIL_FILL
						      : SP_RD_TAIL_REPEAT;
}

/*
 * Pipeline thread, before the batch's input is released: its rows
 * reduced into the next level's (s->red), *out_rows of them.  The rows are
 * those the array has: the appended ones, and in a bounded array the fill
 * after them up to its size.  When dim 0 halves, pairs of rows reduce; an
 * odd row is carried to pair with the next batch's first, unless no rows
 * follow (the last batch), when the tail pairs it.
 */
static int reduce_rows(struct shardpipe_stream *s, const struct batch_job *job,
		       uint64_t *out_rows)
{
	const struct plan *p = &s->plan;
	uint64_t first = s->rows_reduced, rows = job->epochs * p->chunk[0];
	uint64_t end = p->size[0] != 0 ? p->size[0] : job->rows_in;
	uint64_t valid = end > first ? end - first : 0;
	int tail = SP_RD_TAIL_NONE, odd;

	*out_rows = 0;
	if (s->next == NULL)
		return SHARDPIPE_OK;
	if (valid > rows)
		valid = rows;
	if (job->last)
		tail = stream_tail_after(p, first + valid);
	*out_rows = plan_reduce_rows(p, (uint64_t)s->carried, valid, tail);
	if (*out_rows > 0)
		SP_FORWARD(s->be->reduce(s->bctx, job->data, valid,
					 s->carried ? s->carry : NULL, tail,
					 s->red, *out_rows, &s->perr));
	s->rows_reduced += valid;
	odd = p->reduce_geo[SP_RGEO_F0] == 2 && tail == SP_RD_TAIL_NONE &&
	      ((uint64_t)s->carried + valid) % 2 != 0;
	if (odd && valid > 0)
		memcpy(s->carry, job->data + (valid - 1) * p->row_bytes,
		       (size_t)p->row_bytes);
	s->carried = odd;
	return SHARDPIPE_OK;
}


/* Hand the next level `rows` rows reduced from this one: its caller's
 * append. */
int stream_feed_next(struct shardpipe_stream *s, uint64_t rows,
		     struct sp_err *err)
{
	struct shardpipe_stream *n = s->next;
	int rc;

	if (rows == 0)
		return SHARDPIPE_OK;
	stream_begin_append(n);
	rc = stream_append_span(n, s->red, (size_t)(rows * n->plan.row_bytes));
	stream_count_wait(n);
	if (rc != SHARDPIPE_OK)
		*err = n->err;
	return rc;
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
	uint64_t w = s->sets[set].epochs, red_rows = 0;
	double t0 = sp_now();
	int rc;

	for (uint64_t e = 0; e < job->epochs; e++, w++) {
		if (w == p->cps[0]) {
			set = s->ahead[s->nahead++] = take_set(s);
			w = 0;
		}
		shard_set_slots(&s->sets[set], w, s->dst + e * p->M);
	}
	/* A batch the staging copies found all fill: every chunk is left
	 * out, as the backend would find (§22.2), without reading it. */
	if (job->all_fill) {
		memset(s->sizes, 0, (size_t)(job->epochs * p->M) *
					    sizeof(*s->sizes));
		rc = SHARDPIPE_OK;
	} else {
		rc = s->be->run_batch(s->bctx, job->data, job->epochs,
				      job->buf >= 0 && s->laid != 0, s->dst,
				      s->sizes, &f, &s->perr);
	}
	if (rc == SHARDPIPE_OK)
		rc = reduce_rows(s, job, &red_rows);
	release_input(s, job);
	SP_FORWARD(rc);
	SP_FORWARD(stream_feed_next(s, red_rows, &s->perr));
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
	uint64_t red_rows = 0;
	int rc;

	rc = s->be->scatter(s->bctx, job->data, &s->perr);
	if (rc == SHARDPIPE_OK)
		rc = reduce_rows(s, job, &red_rows);
	release_input(s, job);
	SP_FORWARD(rc);
	SP_FORWARD(stream_feed_next(s, red_rows, &s->perr));
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
void *stream_pipeline_main(void *arg)
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
			if (s->cp_laid)
				stream_deal(s, s->cp_dst, s->cp_u, s->cp_src,
					    s->cp_n, 1, 2);
			else if (s->cp_fill)
				s->cp_fill = copy_staging_fill(
					s->cp_dst, s->cp_src, s->cp_n,
					s->past_cache, s->cp_elem,
					s->plan.esize, s->cp_phase);
			else
				copy_staging(s->cp_dst, s->cp_src, s->cp_n,
					     s->past_cache);
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

void *stream_writer_main(void *arg)
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
			rc = stream_emit_shards(s, &s->sets[job.set], job.shard_epoch,
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
