/*
 * stream.c - the public stream on the caller's thread: appended spans
 * staged into batches (or taken straight from the caller's memory), skips,
 * flush, close and stats (doc/design.md §14, §17).  The threads are in
 * stream_threads.c, opening in stream_open.c.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>

#include "copy.h"
#include "store_fs.h"
#include "stream_impl.h"

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
	d.method = SHARDPIPE_METHOD_MEAN;
	d.append_method = -1;
	/* A caller built against an older header owns fewer bytes. */
	sp_struct_copy(desc, size, &d, sizeof(d));
}

/* The symbol behind the macro, for callers that bind it by name. */
void (shardpipe_desc_init)(shardpipe_desc *desc)
{
	shardpipe_desc_init_sized(desc, sizeof(*desc));
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
		       int buf, uint64_t epochs, int last)
{
	struct batch_job *j;
	uint64_t ticket;

	/* A pyramid level's rows come from the level below, little-endian
	 * already. */
	if (buf >= 0 && s->plan.scale_level == 0)
		to_little_endian(s->staging[buf], epochs * s->plan.epoch_bytes,
				 s->plan.esize);

	pthread_mutex_lock(&s->mu);
	while (s->q_len == QCAP)
		caller_wait(s);
	j = &s->q[(s->q_head + s->q_len) % QCAP];
	j->data = data;
	j->buf = buf;
	j->epochs = epochs;
	j->rows_in = stream_rows_appended(s);
	j->seq = s->queued;
	j->last = last;
	j->all_fill = buf >= 0 && s->cur_fill;
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
	ticket = submit(s, src, -1, epochs, 0);
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

/* Caller's thread: whether the pipeline thread may take half of a copy
 * of n bytes now (it has no batch); if so, with mu held for the caller to
 * post the half's fields, and half_post to hand it over. */
static int half_free(struct shardpipe_stream *s, uint64_t n)
{
	if (n < STAGE_SPLIT_MIN || s->plan.threads < 2)
		return 0;
	pthread_mutex_lock(&s->mu);
	if (s->processed == s->queued && s->q_len == 0 && !s->stop)
		return 1;
	pthread_mutex_unlock(&s->mu);
	return 0;
}

static void half_post(struct shardpipe_stream *s)
{
	s->cp_state = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
}

/* Wait for the half handed over; with mu held, released by the caller. */
static void half_wait(struct shardpipe_stream *s)
{
	pthread_mutex_lock(&s->mu);
	while (s->cp_state != 2)
		pthread_cond_wait(&s->cv, &s->mu);
	s->cp_state = 0;
}

static int stage_copy(struct shardpipe_stream *s, uint8_t *dst,
		      const uint8_t *src, size_t n)
{
	const struct plan *p = &s->plan;
	const uint8_t *fill = p->scale_level == 0 ? p->fill : p->fill_le;
	unsigned phase = (unsigned)(s->staged % p->esize);
	size_t half = n / 2;
	int split = half_free(s, n), all = 0;

	if (split) {
		s->cp_laid = 0;
		s->cp_src = src + half;
		s->cp_dst = dst + half;
		s->cp_n = n - half;
		s->cp_fill = s->cur_fill;
		s->cp_elem = fill;
		s->cp_phase = (unsigned)((s->staged + half) % p->esize);
		half_post(s);
	}
	if (!split) {
		if (!s->cur_fill) {
			copy_staging(dst, src, n, s->past_cache);
			return 0;
		}
		return copy_staging_fill(dst, src, n, s->past_cache, fill,
					 p->esize, phase);
	}
	if (s->cur_fill)
		all = copy_staging_fill(dst, src, half, s->past_cache, fill,
					p->esize, phase);
	else
		copy_staging(dst, src, half, s->past_cache);
	half_wait(s);
	all = s->cur_fill && all && s->cp_fill;
	pthread_mutex_unlock(&s->mu);
	return all;
}

/*
 * Chunk-laid staging (doc/design.md §14.7): n units of input from unit u of
 * the batch on (src NULL: fill) dealt into the batch's laid epochs, share
 * `part` of `parts` of each.
 */
void stream_deal(struct shardpipe_stream *s, uint8_t *batch, uint64_t u,
		 const uint8_t *src, uint64_t n, unsigned part, unsigned parts)
{
	const uint64_t per = s->plan.epoch_bytes / s->unit;

	while (n > 0) {
		uint64_t e = u / per, u0 = u % per, k = per - u0;

		if (k > n)
			k = n;
		s->be->deal(s->bctx, src, u0, u0 + k, batch + e * s->laid,
			    part, parts);
		if (src != NULL)
			src += k * s->unit;
		u += k;
		n -= k;
	}
}

/* Whole units dealt, the idle pipeline thread taking half of each epoch's
 * chunks as it takes half of a copy (stage_copy). */
static void deal_split(struct shardpipe_stream *s, uint8_t *batch, uint64_t u,
		       const uint8_t *src, uint64_t n)
{
	int split = half_free(s, n * s->unit);

	if (split) {
		s->cp_laid = 1;
		s->cp_src = src;
		s->cp_dst = batch;
		s->cp_u = u;
		s->cp_n = (size_t)n;
		half_post(s);
	}
	stream_deal(s, batch, u, src, n, 0, split ? 2 : 1);
	if (!split)
		return;
	half_wait(s);
	pthread_mutex_unlock(&s->mu);
}

/* The unit buffer of a laid batch, taken on first use: most streams
 * never cut a unit. */
static int laid_part(struct shardpipe_stream *s)
{
	if (s->part == NULL)
		s->part = malloc((size_t)s->unit);
	SP_RETURN_IF(s->part == NULL, &s->err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for %llu bytes of a partial row",
		     (unsigned long long)s->unit);
	return SHARDPIPE_OK;
}

/* The fill that a laid batch's bytes from unit u0 up to byte `at` stand
 * for but were not dealt (stage_laid), dealt now: whole units into their
 * places, the start of a cut unit into `part`. */
static int laid_unskip(struct shardpipe_stream *s, uint8_t *batch,
		       uint64_t u0, uint64_t at)
{
	uint64_t in = at % s->unit;

	if (at / s->unit > u0)
		deal_split(s, batch, u0, NULL, at / s->unit - u0);
	if (in == 0)
		return SHARDPIPE_OK;
	SP_FORWARD(laid_part(s));
	copy_fill(s->part, (size_t)in, s->plan.fill_le, s->plan.esize);
	return SHARDPIPE_OK;
}

/*
 * Caller's thread: a span into laid staging at byte `staged` of the batch:
 * whole units dealt from the caller's memory, the pieces of a unit that
 * spans cut gathered in `part` first, and dealt once it is whole.  While
 * every byte of the batch is fill (cur_fill) nothing is dealt: the batch
 * is left out whole (§22.2) unless a span that is not fill comes, which
 * deals the fill skipped so far first.
 */
static int stage_laid(struct shardpipe_stream *s, const uint8_t *src,
		      size_t n)
{
	const struct plan *p = &s->plan;
	uint8_t *batch = s->staging[s->cur];
	uint64_t at = s->staged;

	if (s->cur_fill) {
		if (copy_is_fill(src, n, p->fill_le, p->esize,
				 (unsigned)(at % p->esize)))
			return SHARDPIPE_OK;
		s->cur_fill = 0;
		SP_FORWARD(laid_unskip(s, batch, 0, at));
	}
	while (n > 0) {
		uint64_t in = at % s->unit, k = s->unit - in;

		if (in != 0 || n < s->unit) {
			SP_FORWARD(laid_part(s));
			if (k > n)
				k = n;
			memcpy(s->part + in, src, (size_t)k);
			if (in + k == s->unit)
				stream_deal(s, batch, at / s->unit, s->part, 1,
					    0, 1);
		} else {
			k = n / s->unit * s->unit;
			deal_split(s, batch, at / s->unit, src, k / s->unit);
		}
		at += k;
		src += k;
		n -= (size_t)k;
	}
	return SHARDPIPE_OK;
}

/* Laid staging's rows from byte `staged` to the end of epoch n-1 as fill,
 * as drain pads the rows of a batch. */
static void pad_laid(struct shardpipe_stream *s, uint8_t *batch, uint64_t n)
{
	const struct plan *p = &s->plan;
	uint64_t at = s->staged, end = n * p->epoch_bytes, in = at % s->unit;

	if (in != 0) {
		copy_fill_at(s->part + in, (size_t)(s->unit - in), p->fill_le,
			     p->esize, (unsigned)(in % p->esize));
		stream_deal(s, batch, at / s->unit, s->part, 1, 0, 1);
		at += s->unit - in;
	}
	if (at < end)
		stream_deal(s, batch, at / s->unit, NULL,
			    (end - at) / s->unit, 0, 1);
}

int stream_append_span(shardpipe_stream *s, const void *data, size_t nbytes)
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
		if (s->cur < 0) {
			s->cur = take_buffer(s, 1);
			s->cur_fill = s->check_fill;
		}
		t0 = sp_now();
		if (take > n)
			take = n;
		if (s->laid != 0) {
			int rc = stage_laid(s, src, take);

			if (rc != SHARDPIPE_OK)
				return fail(s, rc);
		} else {
			s->cur_fill = stage_copy(s, s->staging[s->cur] +
						     s->staged, src, take);
		}
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
			submit(s, s->staging[s->cur], s->cur, p->K, 0);
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
	size_t tail = s->staged - tail_at, kept;
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
	kept = tail;
	/* Laid, the partial epoch is its whole laid place, the units not
	 * yet dealt included (§14.7). */
	if (s->laid != 0 && tail > 0) {
		kept = (size_t)s->laid;
		/* Fill not dealt (stage_laid) is dealt where it is kept. */
		if (s->cur_fill)
			SP_FORWARD(laid_unskip(s, buf, full * (p->epoch_bytes /
							      s->unit),
					       s->staged));
	}
	if (tail > 0) {
		keep = malloc(kept);
		SP_RETURN_IF(keep == NULL, &s->err, SHARDPIPE_ERR_NOMEM,
			     "out of memory for %zu bytes of a partial epoch",
			     kept);
		memcpy(keep, s->laid != 0 ? buf + full * s->laid
					  : buf + tail_at, kept);
	}
	/* In the host's order: submit swaps level 0's to little-endian.
	 * Laid staging is read for its n epochs only. */
	if (s->laid == 0)
		copy_fill_at(buf + tail_at, (size_t)p->batch_bytes - tail_at,
			     p->scale_level == 0 ? p->fill : p->fill_le,
			     p->esize, (unsigned)(tail_at % p->esize));
	else if (pad_last && !s->cur_fill)
		pad_laid(s, buf, n);
	submit(s, buf, s->cur, n, pad_last);
	s->cur = -1;
	s->staged = 0;
	if (keep != NULL) {
		s->cur = take_buffer(s, 1);
		memcpy(s->staging[s->cur], keep, kept);
		s->staged = tail;
		/* Not checked: the buffer's batch goes through the backend. */
		s->cur_fill = 0;
		free(keep);
	}
	return SHARDPIPE_OK;
}

/* Count an append or skip that waited for the pipeline. */
/* An append or skip begins: while it runs, a batch it is about to queue
 * is worth the pipeline's wait (stream_pipeline_main). */
void stream_begin_append(struct shardpipe_stream *s)
{
	pthread_mutex_lock(&s->mu);
	s->in_append = 1;
	pthread_mutex_unlock(&s->mu);
}

/* An append or skip ends; count it if it waited for the pipeline. */
void stream_count_wait(struct shardpipe_stream *s)
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
	if (s->fm != NULL && nbytes > 0)
		return sp_err_set(&s->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				  "the stream has frame fields: append with "
				  "shardpipe_stream_append_meta(), each "
				  "frame's values with it; nothing appended");
	stream_begin_append(s);
	rc = stream_append_span(s, data, nbytes);
	stream_count_wait(s);
	return rc;
}

/* Rows of dim 0 appended, whole or not, counting from row 0 of the
 * array. */
static uint64_t bytes_in(struct shardpipe_stream *s)
{
	uint64_t in;

	pthread_mutex_lock(&s->mu);
	in = s->stats.bytes_in;
	pthread_mutex_unlock(&s->mu);
	return in;
}

int shardpipe_stream_append_meta(shardpipe_stream *s, const void *data,
				 size_t nbytes,
				 const shardpipe_frame_value *values)
{
	const struct plan *p;
	uint64_t in, k, row0, room;
	int rc;

	if (s == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	if (check_async(s) != SHARDPIPE_OK)
		return s->sticky;
	p = &s->plan;
	if (s->fm == NULL)
		return sp_err_set(&s->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				  "append_meta: the stream has no frame "
				  "fields (desc.frame_fields); nothing "
				  "appended");
	in = bytes_in(s);
	if (p->row_bytes == 0 || nbytes % p->row_bytes != 0 ||
	    in % p->row_bytes != 0)
		return sp_err_set(&s->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				  "append_meta: %zu bytes at byte %llu: both "
				  "must be whole rows of dim 0 (%llu bytes "
				  "each); nothing appended", nbytes,
				  (unsigned long long)in,
				  (unsigned long long)p->row_bytes);
	if (nbytes == 0)
		return SHARDPIPE_OK;
	if (data == NULL || values == NULL)
		return sp_err_set(&s->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				  "append_meta: %s is NULL", data == NULL ?
				  "data" : "values");
	k = nbytes / p->row_bytes;
	row0 = in / p->row_bytes;
	SP_FORWARD(frame_meta_check(s->fm, values, k, row0, &s->err));
	/* A bounded dim 0 takes the rows that fit, as append does. */
	room = p->size[0] != 0 ? p->size[0] - row0 : k;
	pthread_mutex_lock(&s->mu);
	rc = frame_meta_add(s->fm, values, k < room ? k : room, &s->err);
	pthread_mutex_unlock(&s->mu);
	SP_FORWARD(rc);
	stream_begin_append(s);
	rc = stream_append_span(s, data, nbytes);
	stream_count_wait(s);
	if (rc != SHARDPIPE_OK) {
		/* Only the rows taken keep their values. */
		uint64_t taken = bytes_in(s) / p->row_bytes;

		pthread_mutex_lock(&s->mu);
		frame_meta_truncate(s->fm, s->base_rows + taken);
		pthread_mutex_unlock(&s->mu);
	}
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
	/* Each row the skip completes is a skipped frame, its values
	 * recorded before its bytes can be published (§28.9). */
	if (s->fm != NULL && p->row_bytes > 0) {
		uint64_t done = (in + n) / p->row_bytes, had;
		int rc;

		pthread_mutex_lock(&s->mu);
		/* A continued image's rows count from its base (§29). */
		had = frame_meta_rows(s->fm) - s->base_rows;
		rc = done > had ? frame_meta_add(s->fm, NULL, done - had,
						 &s->err) : SHARDPIPE_OK;
		pthread_mutex_unlock(&s->mu);
		SP_FORWARD(rc);
	}
	stream_begin_append(s);
	while (n > 0) {
		size_t take = n < FILL_BLOCK ? (size_t)n : FILL_BLOCK;
		int rc = stream_append_span(s, s->fill_block, take);

		if (rc != SHARDPIPE_OK) {
			stream_count_wait(s);
			if (s->fm != NULL) {
				uint64_t taken = bytes_in(s) / p->row_bytes;

				pthread_mutex_lock(&s->mu);
				frame_meta_truncate(s->fm, s->base_rows + taken);
				pthread_mutex_unlock(&s->mu);
			}
			return rc;
		}
		n -= take;
	}
	stream_count_wait(s);
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
	/* The fields' listing is the library's (§28.9). */
	if (s->fm != NULL && key != NULL && strcmp(key, "shardpipe") == 0)
		return sp_err_set(&s->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				  "attribute \"shardpipe\": it lists the "
				  "stream's frame fields; nothing was changed");
	/* A refusal is the caller's, not the stream's: not sticky. */
	pthread_mutex_lock(&s->mu);
	rc = attrs_set(&s->attrs, key, json, &s->err);
	s->attrs_changed |= rc == SHARDPIPE_OK;
	pthread_mutex_unlock(&s->mu);
	return rc;
}

/* A failure of the next level, s's own from now on (its message with
 * it). */
static int adopt(struct shardpipe_stream *s, const struct shardpipe_stream *n,
		 int rc)
{
	if (rc != SHARDPIPE_OK && s->sticky == SHARDPIPE_OK) {
		s->err = n->err;
		s->sticky = rc;
	}
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
	rc = stream_publish_meta(s, rows, &s->err);
	/* A store that uploads in the background has it all once synced. */
	if (rc == SHARDPIPE_OK && s->store != NULL)
		rc = store_sync(s->store, &s->err);
	rc = fail(s, rc);
	/* This level's pipeline is idle too, so the next level has every
	 * row it will get from the batches so far. */
	if (rc == SHARDPIPE_OK && s->next != NULL)
		rc = adopt(s, s->next, shardpipe_stream_flush(s->next));
	if (rc == SHARDPIPE_OK && s->group != NULL)
		rc = fail(s, stream_publish_group(s, &s->err));
	if (rc == SHARDPIPE_OK && s->group != NULL)
		rc = fail(s, store_sync(s->group, &s->err));
	return rc;
}

/*
 * Close one level without freeing it: the partial last batch, its odd
 * row paired with the tail (doc/design.md §28.2), the partial shard epoch,
 * the final zarr.json and the trace; then the next level, which has its
 * last rows by then.
 */
static int finish(struct shardpipe_stream *s)
{
	struct sp_err terr;
	int rc = check_async(s);

	if (rc == SHARDPIPE_OK && s->staged > 0)
		rc = fail(s, drain(s, 1));
	stream_stop_threads(s);
	if (rc == SHARDPIPE_OK)
		rc = check_async(s);
	/* The threads are gone: what they owned is the caller's now. */
	if (rc == SHARDPIPE_OK && s->carried) {
		const struct plan *p = &s->plan;
		int tail = stream_tail_after(p, s->rows_reduced);
		uint64_t rows = plan_reduce_rows(p, 1, 0, tail);

		rc = fail(s, s->be->reduce(s->bctx, NULL, 0, s->carry, tail,
					   s->red, rows, &s->err));
		s->carried = 0;
		if (rc == SHARDPIPE_OK)
			rc = fail(s, stream_feed_next(s, rows, &s->err));
	}
	if (rc == SHARDPIPE_OK && s->sets[s->fill_set].epochs > 0)
		rc = stream_emit_shards(s, &s->sets[s->fill_set], s->shard_epochs,
				 stream_rows_appended(s), &s->err);
	if (rc == SHARDPIPE_OK) {
		/* A bounded array keeps its declared shape; rows never
		 * appended read as the fill value. */
		uint64_t rows = s->plan.size[0] ? s->plan.size[0]
						: stream_rows_appended(s);

		s->stats.rows_written = rows;
		rc = stream_publish_meta(s, rows, &s->err);
	}
	if (rc == SHARDPIPE_OK && s->store != NULL)
		rc = store_sync(s->store, &s->err);
	/* Every shard of a region writer's box is written (§30.3). */
	if (rc == SHARDPIPE_OK && s->region)
		rc = fail(s, store_fs_region_done(s->store, s->plan.rank,
						  s->stats.rows_written,
						  &s->err));
	/* The threads are gone: the trace is complete.  Failing to write
	 * it is reported when nothing else failed. */
	if (trace_close(s->trace, &terr) != SHARDPIPE_OK &&
	    rc == SHARDPIPE_OK) {
		s->err = terr;
		rc = terr.code;
	}
	s->trace = NULL;
	if (rc == SHARDPIPE_OK && s->next != NULL)
		rc = adopt(s, s->next, finish(s->next));
	return rc;
}

int shardpipe_stream_close(shardpipe_stream *s)
{
	int rc;

	if (s == NULL)
		return SHARDPIPE_OK;
	rc = finish(s);
	/* The group last, once every level says what it holds. */
	if (rc == SHARDPIPE_OK && s->group != NULL)
		rc = stream_publish_group(s, &s->err);
	if (rc == SHARDPIPE_OK && s->group != NULL)
		rc = store_sync(s->group, &s->err);
	if (rc != SHARDPIPE_OK)
		sp_last_error_set(s->err.msg);
	stream_free(s);
	return rc;
}

int shardpipe_stream_stats_sized(const shardpipe_stream *s,
				 shardpipe_stats *out, size_t size)
{
	shardpipe_stats st;

	if (s == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	/* Level 0's, with what every level wrote and planned. */
	for (const struct shardpipe_stream *l = s; l != NULL; l = l->next) {
		struct shardpipe_stream *m = (struct shardpipe_stream *)l;

		pthread_mutex_lock(&m->mu);
		if (l == s) {
			/* A continued array's: its rows, this run's bytes
			 * (doc/design.md §29). */
			st = l->stats;
			st.rows_written += l->base_rows;
			if (st.rows_written < l->adv_rows)
				st.rows_written = l->adv_rows;
			st.bytes_in -= l->refed;
			st.bytes_staged -= l->refed_staged;
		} else {
			st.bytes_out += l->stats.bytes_out;
			st.shards_written += l->stats.shards_written;
			st.chunks_written += l->stats.chunks_written;
			st.seconds_scatter += l->stats.seconds_scatter;
			st.seconds_compress += l->stats.seconds_compress;
			st.seconds_aggregate += l->stats.seconds_aggregate;
			st.seconds_write += l->stats.seconds_write;
			st.pool_bytes += l->stats.pool_bytes;
		}
		pthread_mutex_unlock(&m->mu);
	}
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
