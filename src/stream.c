/*
 * stream.c - the public stream: staging of appended spans into batches,
 * the calls to the backend's stages, shard emission and zarr.json updates.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <time.h>

#include "backend.h"
#include "plan.h"
#include "shard_index.h"
#include "store_fs.h"
#include "zarr_meta.h"

struct shardpipe_stream {
	struct plan plan;
	const struct backend_ops *be;
	void *bctx;
	struct shard_set shards;
	struct store_fs *fs;     /* NULL when writing to a sink */
	shardpipe_sink sink;

	uint8_t *staging;        /* plan.batch_bytes */
	size_t staged;           /* bytes of the current batch received */
	uint64_t epochs_done;    /* epochs through the backend */
	uint64_t shard_epochs;   /* shard epochs emitted */

	int sticky;              /* first failure, returned ever after */
	struct sp_err err;
	shardpipe_stats stats;
};

static __thread char last_error[512];

void sp_last_error_set(const char *msg)
{
	snprintf(last_error, sizeof(last_error), "%s", msg);
}

const char *shardpipe_last_error_message(void)
{
	return last_error;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void shardpipe_desc_init(shardpipe_desc *desc)
{
	if (desc == NULL)
		return;
	memset(desc, 0, sizeof(*desc));
	desc->struct_size = sizeof(*desc);
	desc->dtype = SHARDPIPE_DTYPE_UINT8;
	desc->codec = SHARDPIPE_CODEC_ZSTD;
	desc->level = 1;
	desc->index_location = SHARDPIPE_INDEX_END;
	desc->backend = "auto";
}

/* Rows of dim 0 that the data appended so far reaches into. */
static uint64_t rows_appended(const struct shardpipe_stream *s)
{
	return sp_ceil_div(s->stats.bytes_in, s->plan.row_bytes);
}

static int publish_meta(struct shardpipe_stream *s, uint64_t rows)
{
	char *json;
	size_t len;
	int rc;

	SP_FORWARD(zarr_meta_render(&s->plan, rows, &json, &len, &s->err));
	if (s->fs != NULL)
		rc = store_fs_write_meta(s->fs, json, len, &s->err);
	else if (s->sink.metadata != NULL &&
		 s->sink.metadata(s->sink.user, json, len) != 0)
		rc = sp_err_set(&s->err, SHARDPIPE_ERR_SINK,
				"the sink refused zarr.json");
	else
		rc = SHARDPIPE_OK;
	free(json);
	return rc;
}

/* Write the shards of the current shard epoch and advertise their rows. */
static int emit_shards(struct shardpipe_stream *s)
{
	const struct plan *p = &s->plan;
	uint64_t coords[SHARDPIPE_MAX_RANK], rows;
	double t0 = now();

	for (uint64_t k = 0; k < p->S; k++) {
		const struct shard_buf *b = &s->shards.shards[k];
		const uint8_t *idx = shard_set_index(&s->shards, k);
		const void *first = b->data, *second = idx;
		size_t first_len = b->len, second_len = p->index_bytes;
		int rc = SHARDPIPE_OK;

		if (p->index_location == SHARDPIPE_INDEX_START) {
			first = idx;
			first_len = p->index_bytes;
			second = b->data;
			second_len = b->len;
		}
		plan_shard_coords(p, s->shard_epochs, k, coords);
		if (s->fs != NULL) {
			rc = store_fs_write_shard(s->fs, coords, p->rank, first,
						  first_len, second, second_len,
						  &s->err);
		} else if (s->sink.shard(s->sink.user, coords, p->rank,
					 b->data, b->len, idx,
					 p->index_bytes) != 0) {
			char key[32 * SHARDPIPE_MAX_RANK];
			size_t n = 0;

			for (int d = 0; d < p->rank; d++)
				n += (size_t)snprintf(key + n, sizeof(key) - n,
						      "/%llu",
						      (unsigned long long)coords[d]);
			rc = sp_err_set(&s->err, SHARDPIPE_ERR_SINK,
					"the sink refused shard c%s", key);
		}
		SP_FORWARD(rc);
		s->stats.shards_written++;
		s->stats.bytes_out += b->len + p->index_bytes;
	}
	s->stats.chunks_written += s->shards.epochs * p->M;
	s->shard_epochs++;
	shard_set_reset(&s->shards);

	rows = s->shard_epochs * p->cps[0] * p->chunk[0];
	if (rows > rows_appended(s))
		rows = rows_appended(s);
	s->stats.rows_written = rows;
	SP_FORWARD(publish_meta(s, rows));
	s->stats.seconds_write += now() - t0;
	return SHARDPIPE_OK;
}

/* The batch in staging holds n complete epochs (n <= K; what follows them
 * is fill): run it through the backend and hand its epochs to the shards. */
static int run_batch(struct shardpipe_stream *s, uint64_t n)
{
	const struct plan *p = &s->plan;
	struct batch_result r;
	double t0 = now(), t1, t2, t3;

	SP_FORWARD(s->be->scatter(s->bctx, s->staging, &s->err));
	t1 = now();
	SP_FORWARD(s->be->compress(s->bctx, &s->err));
	t2 = now();
	SP_FORWARD(s->be->aggregate(s->bctx, &s->err));
	SP_FORWARD(s->be->fetch(s->bctx, &r, &s->err));
	t3 = now();
	s->stats.seconds_scatter += t1 - t0;
	s->stats.seconds_compress += t2 - t1;
	s->stats.seconds_aggregate += t3 - t2;

	for (uint64_t e = 0; e < n; e++) {
		double tw = now();

		SP_FORWARD(shard_set_add_epoch(&s->shards, r.data,
					       r.offsets + e * p->M, &s->err));
		s->stats.seconds_write += now() - tw;
		s->epochs_done++;
		if (s->shards.epochs == p->cps[0] ||
		    s->epochs_done == p->chunk_count[0])
			SP_FORWARD(emit_shards(s));
	}
	return SHARDPIPE_OK;
}

static int fail(struct shardpipe_stream *s, int rc)
{
	if (rc != SHARDPIPE_OK && s->sticky == SHARDPIPE_OK)
		s->sticky = rc;
	return rc;
}

static void stream_free(struct shardpipe_stream *s)
{
	if (s->bctx != NULL)
		s->be->close(s->bctx);
	shard_set_free(&s->shards);
	store_fs_free(s->fs);
	free(s->staging);
	plan_free(&s->plan);
	free(s);
}

static int stream_open(shardpipe_stream **out, const char *path,
		       const shardpipe_sink *sink, const shardpipe_desc *desc)
{
	struct shardpipe_stream *s;
	const char *backend;
	int rc;

	if (out != NULL)
		*out = NULL;
	if (out == NULL || desc == NULL || (path == NULL && sink == NULL) ||
	    (sink != NULL && sink->shard == NULL)) {
		sp_last_error_set("a required argument is NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	s = calloc(1, sizeof(*s));
	if (s == NULL) {
		sp_last_error_set("out of memory");
		return SHARDPIPE_ERR_NOMEM;
	}
	backend = getenv("SHARDPIPE_BACKEND");
	if (backend == NULL || *backend == '\0')
		backend = desc->backend;

	/* Everything that can refuse runs before the first write. */
	rc = plan_init(&s->plan, desc, &s->err);
	if (rc == SHARDPIPE_OK && path != NULL)
		rc = store_fs_check(&s->fs, path, desc->overwrite, &s->err);
	if (rc == SHARDPIPE_OK)
		rc = backend_find(backend, &s->be, &s->err);
	if (rc == SHARDPIPE_OK)
		rc = s->be->open(&s->plan, &s->bctx, &s->err);
	if (rc == SHARDPIPE_OK)
		rc = shard_set_init(&s->shards, &s->plan, &s->err);
	if (rc == SHARDPIPE_OK) {
		s->staging = malloc(s->plan.batch_bytes);
		if (s->staging == NULL)
			rc = sp_err_set(&s->err, SHARDPIPE_ERR_NOMEM,
					"out of memory for a batch of %llu bytes",
					(unsigned long long)s->plan.batch_bytes);
	}
	if (rc == SHARDPIPE_OK && s->fs != NULL)
		rc = store_fs_create(s->fs, &s->err);
	if (rc == SHARDPIPE_OK && sink != NULL)
		s->sink = *sink;
	if (rc == SHARDPIPE_OK)
		rc = publish_meta(s, 0);
	if (rc != SHARDPIPE_OK) {
		sp_last_error_set(s->err.msg);
		stream_free(s);
		return rc;
	}
	s->stats.pool_bytes = s->plan.batch_bytes +
			      s->plan.K * s->plan.M *
				      (s->plan.chunk_bytes +
				       2 * s->plan.slot_capacity);
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
	return stream_open(out, path, NULL, desc);
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
	return stream_open(out, NULL, sink, desc);
}

int shardpipe_stream_append(shardpipe_stream *s, const void *data,
			    size_t nbytes)
{
	const struct plan *p;
	const uint8_t *src = data;
	size_t n = nbytes;
	int beyond = 0;

	if (s == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	if (s->sticky != SHARDPIPE_OK)
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
		double t0 = now();

		if (take > n)
			take = n;
		memcpy(s->staging + s->staged, src, take);
		s->staged += take;
		s->stats.bytes_in += take;
		src += take;
		n -= take;
		s->stats.seconds_stage += now() - t0;
		if (s->staged == p->batch_bytes) {
			int rc = run_batch(s, p->K);

			if (rc != SHARDPIPE_OK)
				return fail(s, rc);
			s->staged = 0;
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
 * Run the complete epochs in staging (and, when pad_last, the partial one
 * after them, padded with fill).  The bytes of a partial epoch that is not
 * run are kept for later appends.
 */
static int drain(struct shardpipe_stream *s, int pad_last)
{
	const struct plan *p = &s->plan;
	uint64_t full = s->staged / p->epoch_bytes;
	size_t tail_at = (size_t)(full * p->epoch_bytes);
	size_t tail = s->staged - tail_at;
	uint8_t *keep = NULL;
	uint64_t n = full;
	int rc;

	if (pad_last && tail > 0) {
		n++;
		tail_at = s->staged;
		tail = 0;
	}
	if (n == 0)
		return SHARDPIPE_OK;
	if (tail > 0) {
		keep = malloc(tail);
		SP_RETURN_IF(keep == NULL, &s->err, SHARDPIPE_ERR_NOMEM,
			     "out of memory");
		memcpy(keep, s->staging + tail_at, tail);
	}
	memset(s->staging + tail_at, 0, (size_t)p->batch_bytes - tail_at);
	rc = run_batch(s, n);
	s->staged = tail;
	if (keep != NULL) {
		memcpy(s->staging, keep, tail);
		free(keep);
	}
	return rc;
}

int shardpipe_stream_flush(shardpipe_stream *s)
{
	if (s == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	if (s->sticky != SHARDPIPE_OK)
		return s->sticky;
	int rc = drain(s, 0);
	if (rc == SHARDPIPE_OK)
		rc = publish_meta(s, s->stats.rows_written);
	return fail(s, rc);
}

int shardpipe_stream_close(shardpipe_stream *s)
{
	int rc;

	if (s == NULL)
		return SHARDPIPE_OK;
	rc = s->sticky;
	if (rc == SHARDPIPE_OK)
		rc = drain(s, 1);
	if (rc == SHARDPIPE_OK && s->shards.epochs > 0)
		rc = emit_shards(s);
	if (rc == SHARDPIPE_OK) {
		/* A bounded array keeps its declared shape; rows never
		 * appended read as the fill value. */
		uint64_t rows = s->plan.size[0] ? s->plan.size[0]
						: rows_appended(s);

		s->stats.rows_written = rows;
		rc = publish_meta(s, rows);
	}
	if (rc != SHARDPIPE_OK)
		sp_last_error_set(s->err.msg);
	stream_free(s);
	return rc;
}

int shardpipe_stream_stats(const shardpipe_stream *s, shardpipe_stats *out)
{
	if (s == NULL || out == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	*out = s->stats;
	return SHARDPIPE_OK;
}

const char *shardpipe_stream_backend(const shardpipe_stream *s)
{
	return s != NULL ? s->be->name : NULL;
}

const char *shardpipe_stream_message(const shardpipe_stream *s)
{
	return s != NULL ? s->err.msg : "";
}
