/*
 * stream_open.c - opening a stream: its plan, the backend, the pools and
 * their bound (max_memory), the store or sink, pyramids' levels, and the
 * threads; and freeing it all (doc/design.md §14, §27, §28).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "copy.h"
#include "reader_impl.h"
#include "reopen.h"
#include "stream_impl.h"

void stream_stop_threads(struct shardpipe_stream *s)
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

/* A staging buffer's bytes: K epochs, laid out as rows or as chunks
 * (§14.7). */
static uint64_t stream_stage_bytes(const struct shardpipe_stream *s)
{
	return s->laid != 0 ? s->plan.K * s->laid : s->plan.batch_bytes;
}

/* Staging memory comes from the backend that reads it (pinned on a GPU,
 * doc/design.md §14.1), or from the pools that outlive streams (§27).
 * It is touched by the first batches that use it, not here: a stream fed
 * whole epochs (direct spans, all-fill batches) never does (§14.7). */
static uint8_t *staging_alloc(struct shardpipe_stream *s)
{
	uint64_t n = stream_stage_bytes(s);

	if (s->be->host_alloc != NULL)
		return s->be->host_alloc(s->bctx, n);
	return pool_take(n);
}

void stream_free(struct shardpipe_stream *s)
{
	if (s == NULL)
		return;
	stream_stop_threads(s);
	/* The next level is fed by this one's pipeline, gone now. */
	stream_free(s->next);
	/* Staging first: the backend may own its memory. */
	for (int k = 0; k < NSTAGE; k++) {
		if (s->staging[k] == NULL)
			continue;
		if (s->be->host_free != NULL)
			s->be->host_free(s->bctx, s->staging[k]);
		else
			pool_give(s->staging[k], stream_stage_bytes(s));
	}
	free(s->part);
	if (s->bctx != NULL)
		s->be->close(s->bctx);
	for (int k = 0; s->sets != NULL && k < s->nsets; k++)
		if (s->sets[k].plan != NULL)
			shard_set_free(&s->sets[k]);
	free(s->sets);
	free(s->set_free);
	free(s->wq);
	free(s->parts);
	free(s->dst);
	free(s->sizes);
	free(s->ahead);
	store_free(s->store);
	store_free(s->group);
	free(s->ranges);
	free(s->fill_block);
	free(s->red);
	free(s->carry);
	if (s->levels != NULL)
		plan_levels_free(s->levels);
	free(s->levels);
	attrs_free(&s->attrs);
	frame_meta_free(s->fm);
	trace_close(s->trace, NULL);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	lanes_unref(s->plan.lanes);
	plan_free(&s->plan);
	free(s);
}

static int start_threads(struct shardpipe_stream *s)
{
	int e = pthread_create(&s->pipe_thread, NULL, stream_pipeline_main, s);

	SP_RETURN_IF(e != 0, &s->err, SHARDPIPE_ERR_NOMEM,
		     "cannot start the pipeline thread (%s)", strerror(e));
	e = pthread_create(&s->writer_thread, NULL, stream_writer_main, s);
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
 * compressed slots and aggregated), the shard sets at their worst case
 * (every chunk of a shard epoch at slot capacity), and below a pyramid's
 * last level one batch of the next level's rows and a carried row.  bctx
 * NULL: the generic estimate, before the backend is open. */
static uint64_t pools(const struct shardpipe_stream *s)
{
	const struct plan *p = &s->plan;
	uint64_t n = NSTAGE * stream_stage_bytes(s) +
		     (uint64_t)nsets_for(p, s->be) * shard_set_bytes(p);

	if (p->reduce_geo[SP_RGEO_F0] != 0)
		n += p->K * p->chunk[0] * p->reduce_geo[SP_RGEO_OUT_ROW] *
			     p->esize + p->row_bytes;
	n += store_pool_bytes(s->store);
	if (s->bctx != NULL && s->be->pool_bytes != NULL)
		return n + s->be->pool_bytes(s->bctx);
	return n + p->K * p->M * (p->chunk_bytes + 2 * p->slot_capacity);
}

/* Every level's pools (doc/design.md §28.3). */
static uint64_t all_pools(const struct shardpipe_stream *s)
{
	uint64_t n = 0;

	for (; s != NULL; s = s->next)
		n += pools(s);
	return n;
}

/* Lower the epochs per batch, every level's alike, until the generic
 * estimate of the pools fits the plan's max_memory (backends size their
 * pools from K). */
static void cap_batch(struct shardpipe_stream *s)
{
	struct plan *p = &s->plan;

	while (p->max_memory != 0 && p->K > 1 &&
	       all_pools(s) > p->max_memory) {
		uint64_t k = (p->K + 1) / 2;

		for (struct shardpipe_stream *l = s; l != NULL; l = l->next)
			plan_set_epochs(&l->plan, k);
	}
}

/* The shard sets and what the pipeline and the writer need to fill and
 * write them. */
static int open_sets(struct shardpipe_stream *s)
{
	const struct plan *p = &s->plan;
	const int fused = s->be->run_batch != NULL;
	/* A moved append dim's chunks arrive out of slot order (design
	 * §3.3): each goes to its slot, as a fused backend's do. */
	const int by_slot = fused || p->sdim[0] != 0;
	const size_t n = (size_t)(p->K * p->M);

	s->nsets = nsets_for(p, s->be);
	s->sets = calloc((size_t)s->nsets, sizeof(*s->sets));
	s->set_free = calloc((size_t)s->nsets, sizeof(*s->set_free));
	s->wq = calloc((size_t)s->nsets, sizeof(*s->wq));
	s->ahead = calloc((size_t)s->nsets, sizeof(*s->ahead));
	s->parts = malloc((size_t)(p->chunks_per_shard + 1) *
			  sizeof(*s->parts));
	if (fused) {
		s->dst = malloc(n * sizeof(*s->dst));
		s->sizes = malloc(n * sizeof(*s->sizes));
	} else {
		s->ranges = malloc((size_t)(p->K * (by_slot ? p->M : p->S)) *
				   sizeof(*s->ranges));
	}
	SP_RETURN_IF(s->sets == NULL || s->set_free == NULL || s->wq == NULL ||
		     s->ahead == NULL || s->parts == NULL ||
		     (fused ? s->dst == NULL || s->sizes == NULL
			    : s->ranges == NULL),
		     &s->err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for %d shard sets", s->nsets);
	for (int k = 0; k < s->nsets; k++) {
		SP_FORWARD(shard_set_init(&s->sets[k], p, by_slot, &s->err));
		s->set_free[k] = k > 0;
	}
	return SHARDPIPE_OK;
}

/* SHARDPIPE_TRACE: the stream is named by its backend and store. */
static int open_trace(struct shardpipe_stream *s, const char *path)
{
	char label[400];

	/* A pyramid level's trace names its array below the group. */
	if (s->plan.scale_level > 0)
		snprintf(label, sizeof(label), "shardpipe %s -> %s/%d",
			 s->be->name, path, s->plan.scale_level);
	else
		snprintf(label, sizeof(label), "shardpipe %s -> %s",
			 s->be->name, path != NULL ? path : "(sink)");
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

static struct shardpipe_stream *stream_alloc(void)
{
	struct shardpipe_stream *s = calloc(1, sizeof(*s));

	if (s == NULL)
		return NULL;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->cur = -1;
	return s;
}

/*
 * The levels above level 0 (doc/design.md §28.3), each a stream taking
 * over its plan from s->levels, and the directories they will write: the
 * group's at the store's path, each level's below it (level 0's too).
 * Nothing is written yet.
 */
static int open_levels(struct shardpipe_stream *s, const char *path,
		       struct sp_err *err)
{
	struct plan_levels *pl = s->levels;
	struct shardpipe_stream *prev = s;
	char name[16];

	s->group = s->store;
	s->store = NULL;
	SP_FORWARD(store_child(s->group, path, "0", &s->store, err));
	for (int L = 1; L < pl->n; L++) {
		struct shardpipe_stream *l = stream_alloc();

		SP_RETURN_IF(l == NULL, err, SHARDPIPE_ERR_NOMEM,
			     "out of memory for pyramid level %d", L);
		prev->next = l;
		l->plan = pl->level[L];
		memset(&pl->level[L], 0, sizeof(pl->level[L]));
		l->be = s->be;
		/* A region writer's level writes the box's shards of it
		 * (§30.5), every level's box aligned to its shards. */
		l->region = s->region;
		for (int d = 0; s->region && d < l->plan.rank; d++)
			l->shard_offset[d] = pl->origin[L][d] /
					     l->plan.chunk[d] / l->plan.cps[d];
		snprintf(name, sizeof(name), "%d", L);
		SP_FORWARD(store_child(s->group, path, name, &l->store, err));
		prev = l;
	}
	return SHARDPIPE_OK;
}

/*
 * A pyramid on a backend that computes on the host's threads (cpu) runs
 * every level's fused pass and reduction on one set of lanes
 * (doc/design.md §28.3): the group's when the stream is in one, else a
 * set of `threads` lanes started here, so that at most `threads` threads
 * compute at once across the levels instead of a crew per level.  Each
 * level holds a reference.  Every level's plan copies level 0's threads
 * (plan_levels_init), the lanes' count, which the backend shapes its
 * work and per-lane contexts by.
 */
static int share_lanes(struct shardpipe_stream *s, struct sp_err *err)
{
	if (s->next == NULL || s->be->run_batch == NULL)
		return SHARDPIPE_OK;
	if (s->plan.lanes == NULL)
		SP_FORWARD(lanes_create(&s->plan.lanes, s->plan.threads, err));
	for (struct shardpipe_stream *l = s->next; l != NULL; l = l->next)
		l->plan.lanes = lanes_ref(s->plan.lanes);
	return SHARDPIPE_OK;
}

/* One level's memory: the backend's context, the shard sets, staging,
 * fetch ranges, the fill block, its trace, and when there is a next level
 * that level's rows of one batch and a carried row. */
static int open_memory(struct shardpipe_stream *s, struct sp_err *err)
{
	const struct plan *p = &s->plan;

	plan_backend_view(p, &s->bplan);
	SP_FORWARD(s->be->open(&s->bplan, &s->bctx, err));
	SP_FORWARD(open_sets(s));
	s->past_cache = copy_past_cache(p->batch_bytes);
	/*
	 * Chunk-laid staging (§14.7) where the backend lays out this plan's
	 * epochs in more than one unit each; not below a next pyramid level,
	 * whose reduction reads the rows, nor on a big-endian host, which
	 * swaps the rows in staging (§20).
	 */
	if (!HOST_BIG_ENDIAN && s->next == NULL && s->be->run_batch != NULL &&
	    s->be->laid_bytes != NULL && s->be->deal != NULL) {
		uint64_t unit = 0, laid = s->be->laid_bytes(s->bctx, &unit);

		if (laid != 0 && unit != 0 && p->epoch_bytes % unit == 0 &&
		    p->epoch_bytes / unit > 1) {
			s->laid = laid;
			s->unit = unit;
		}
	}
	s->check_fill = s->be->run_batch != NULL && !p->write_empty_chunks;
	for (int k = 0; k < NSTAGE; k++) {
		s->staging[k] = staging_alloc(s);
		s->stage_free[k] = 1;
		SP_RETURN_IF(s->staging[k] == NULL, err, SHARDPIPE_ERR_NOMEM,
			     "out of memory for a batch of %llu bytes",
			     (unsigned long long)stream_stage_bytes(s));
	}
	s->fill_block = malloc(FILL_BLOCK);
	SP_RETURN_IF(s->fill_block == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for the fill value");
	copy_fill(s->fill_block, FILL_BLOCK, p->fill, p->esize);
	if (p->reduce_geo[SP_RGEO_F0] != 0) {
		uint64_t out = p->K * p->chunk[0] *
			       p->reduce_geo[SP_RGEO_OUT_ROW] * p->esize;

		s->red = malloc(out ? (size_t)out : 1);
		s->carry = malloc((size_t)p->row_bytes);
		SP_RETURN_IF(s->red == NULL || s->carry == NULL, err,
			     SHARDPIPE_ERR_NOMEM,
			     "out of memory for %llu bytes of pyramid level %d",
			     (unsigned long long)out, p->scale_level + 1);
	}
	return SHARDPIPE_OK;
}

/* The group's zarr.json (doc/design.md §28.4), with the stream's user
 * attributes. */
int stream_publish_group(struct shardpipe_stream *s, struct sp_err *err)
{
	char *json;
	size_t len;
	int rc;

	/* A region writer's caller publishes it (§30.5). */
	if (s->region)
		return SHARDPIPE_OK;
	pthread_mutex_lock(&s->mu);
	rc = zarr_meta_group(s->levels, &s->plan, &s->attrs, &json, &len,
			     err);
	s->attrs_changed = 0;
	pthread_mutex_unlock(&s->mu);
	SP_FORWARD(rc);
	rc = s->group->ops->write_meta(s->group, json, len, err);
	free(json);
	return rc;
}

/* The first writes: the store's directory (emptied of an old store when
 * overwriting), and zarr.json of every array with no rows, then the
 * group's, which names them. */
static int create_store(struct shardpipe_stream *s, struct sp_err *err)
{
	if (s->group != NULL)
		SP_FORWARD(s->group->ops->create(s->group, err));
	if (s->fm != NULL)
		SP_FORWARD(frame_meta_create(s->fm, err));
	for (struct shardpipe_stream *l = s; l != NULL; l = l->next) {
		if (l->store != NULL)
			SP_FORWARD(l->store->ops->create(l->store, err));
		SP_FORWARD(stream_publish_meta(l, 0, err));
		if (l->store != NULL)
			SP_FORWARD(store_sync(l->store, err));
	}
	if (s->group != NULL) {
		SP_FORWARD(stream_publish_group(s, err));
		SP_FORWARD(store_sync(s->group, err));
	}
	return SHARDPIPE_OK;
}

/* A continued image's frame fields (doc/design.md §29): the values of
 * rows b..R-1, read back from their chunks, recorded from row b. */
static int resume_fields(struct shardpipe_stream *s, const struct reopen *ro,
			 uint64_t b)
{
	const uint64_t r = ro->rows, k = r > b ? r - b : 0;
	uint64_t *bits = malloc((k ? k : 1) * (uint64_t)s->fm->n *
				sizeof(*bits));
	int rc;

	SP_RETURN_IF(bits == NULL, &s->err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for %llu rows of frame metadata",
		     (unsigned long long)k);
	rc = reopen_field_values(ro, b, r, bits, &s->err);
	if (rc == SHARDPIPE_OK) {
		pthread_mutex_lock(&s->mu);
		rc = frame_meta_resume(s->fm, b, bits, k, &s->err);
		pthread_mutex_unlock(&s->mu);
	}
	free(bits);
	return rc;
}

/*
 * n rows read back from the store, in storage order (the append dim's n
 * rows at storage dim sdim[0], §3.3), into `out` in the append order the
 * stream's rows take: storage element x goes to the input offset the
 * plan's in_stride gives it, the scatter's inverse.
 */
static void rows_to_append_order(const struct plan *p, const uint8_t *in,
				 uint8_t *out, uint64_t n)
{
	uint64_t x[SHARDPIPE_MAX_RANK] = { 0 }, size[SHARDPIPE_MAX_RANK];
	uint64_t stride[SHARDPIPE_MAX_RANK], total = 1;
	const size_t es = p->esize;

	for (int w = 0; w < p->rank; w++) {
		size[p->sdim[w]] = w == 0 ? n : p->size[w];
		stride[p->sdim[w]] = p->in_stride[w];
		total *= size[p->sdim[w]];
	}
	for (uint64_t k = 0; k < total; k++) {
		uint64_t off = 0;

		for (int d = 0; d < p->rank; d++)
			off += x[d] * stride[d];
		memcpy(out + off * es, in + k * es, es);
		for (int d = p->rank - 1; d >= 0; d--) {
			if (++x[d] < size[d])
				break;
			x[d] = 0;
		}
	}
}

/*
 * A continued array (doc/design.md §29), once its threads run: every
 * level counts from row b (reopen_base), the rows b.. of level 0 the store
 * advertises are read back (decoded) and appended, so that every level
 * rebuilds its rows from there; with none to read back, level 0's last
 * whole shard row is decoded as a check, so that a damaged last shard
 * refuses the open before anything is written (no shard epoch completes
 * inside one shard row); then each level's orphans past its advertised
 * rows are removed.
 */
static int resume(struct shardpipe_stream *s, const struct reopen *ro)
{
	const struct plan *p = &s->plan;
	const uint64_t sr = p->chunk[0] * p->cps[0], r = ro->rows;
	const uint64_t b = reopen_base(ro);
	const int a = p->sdim[0];
	uint64_t start[SHARDPIPE_MAX_RANK] = { 0 }, count[SHARDPIPE_MAX_RANK];
	uint64_t from = r > b ? b : r >= sr ? r - sr : r;
	struct shardpipe_stream *l;
	uint8_t *buf, *abuf = NULL;
	int rc = SHARDPIPE_OK, L;

	for (l = s, L = 0; l != NULL; l = l->next, L++) {
		uint64_t lsr = l->plan.chunk[0] * l->plan.cps[0];

		/* A bound clamps a level's dim-0 chunk or shard to what is
		 * left (plan.c, level_plan): its shard rows would move. */
		SP_RETURN_IF(L >= ro->levels || lsr != ro->level_sr[L],
			     &s->err, SHARDPIPE_ERR_UNSUPPORTED,
			     "level %d: a shard row of %llu rows in the store, "
			     "%llu with this bound; continue it unbounded; "
			     "nothing was touched", L,
			     (unsigned long long)ro->level_sr[L],
			     (unsigned long long)lsr);
		l->base_rows = b >> ro->level_shift[L];
		l->shard_offset[0] = l->base_rows / lsr;
		l->adv_rows = ro->level_rows[L];
		l->resume_row = ro->truncated ||
				ro->level_rows[L] > l->base_rows;
	}
	/* The reader's boxes are in storage order, the rows along storage
	 * dim a (§3.3). */
	for (int w = 1; w < p->rank; w++)
		count[p->sdim[w]] = p->size[w];
	/* The frame fields' values of the rows read back, all of them
	 * before any row: a shard row they complete publishes them. */
	if (s->fm != NULL)
		SP_FORWARD(resume_fields(s, ro, b));
	buf = malloc((size_t)(p->chunk[0] * p->row_bytes));
	/* A storage order: the rows read back are transposed back into
	 * the order appends give them. */
	if (buf != NULL && p->permuted &&
	    (abuf = malloc((size_t)(p->chunk[0] * p->row_bytes))) == NULL) {
		free(buf);
		buf = NULL;
	}
	SP_RETURN_IF(buf == NULL, &s->err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for %llu rows of the store",
		     (unsigned long long)p->chunk[0]);
	for (uint64_t row = from; row < r && rc == SHARDPIPE_OK;
	     row += count[a]) {
		size_t n;

		start[a] = row;
		count[a] = r - row < p->chunk[0] ? r - row : p->chunk[0];
		n = (size_t)(count[a] * p->row_bytes);
		rc = shardpipe_reader_read(ro->r, start, count, buf, n);
		if (rc != SHARDPIPE_OK)
			rc = sp_err_set(&s->err, rc, "cannot continue it: %s; "
					"nothing was touched", ro->r->err.msg);
		else if (row >= b) {
			const uint8_t *rows = buf;

			if (abuf != NULL) {
				rows_to_append_order(p, buf, abuf, count[a]);
				rows = abuf;
			}
			stream_begin_append(s);
			rc = stream_append_span(s, rows, n);
			stream_count_wait(s);
		}
	}
	free(buf);
	free(abuf);
	SP_FORWARD(rc);
	pthread_mutex_lock(&s->mu);
	s->refed = s->stats.bytes_in;
	s->refed_staged = s->stats.bytes_staged;
	pthread_mutex_unlock(&s->mu);
	for (l = s, L = 0; l != NULL && rc == SHARDPIPE_OK; l = l->next, L++) {
		uint64_t lsr = ro->level_sr[L];

		rc = l->store->ops->drop_rows(l->store, a, l->base_rows / lsr,
					      sp_ceil_div(ro->level_rows[L], lsr),
					      &s->err);
	}
	/* A field's chunks past the rows: one run's would end there. */
	for (int i = 0; s->fm != NULL && i < s->fm->n && rc == SHARDPIPE_OK;
	     i++)
		rc = s->fm->store[i]->ops->drop_rows(s->fm->store[i], 0,
						     b / s->fm->chunk,
						     sp_ceil_div(r,
								 s->fm->chunk),
						     &s->err);
	/* An image's group: the temporary of a zarr.json being replaced
	 * when its writer was killed. */
	if (rc == SHARDPIPE_OK && s->group != NULL)
		rc = s->group->ops->drop_rows(s->group, 0, UINT64_MAX,
					      UINT64_MAX, &s->err);
	return rc;
}

static int stream_open(shardpipe_stream **out, const char *path,
		       const shardpipe_sink *sink, const shardpipe_desc *desc,
		       struct lanes *lanes, struct reopen *ro,
		       const struct region_box *region)
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
	if (sink != NULL && own.shard == NULL && own.shard_parts == NULL &&
	    own.object == NULL) {
		sp_last_error_set("the sink's shard, shard_parts and object "
				  "callbacks are all NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	/* A sink that takes objects by key takes an image as a directory
	 * does; the messages name it so. */
	if (sink != NULL && own.object != NULL)
		path = "(sink)";
	s = stream_alloc();
	if (s == NULL || (s->levels = calloc(1, sizeof(*s->levels))) == NULL) {
		free(s);
		sp_last_error_set("out of memory");
		return SHARDPIPE_ERR_NOMEM;
	}
	backend = getenv("SHARDPIPE_BACKEND");
	if (backend == NULL || *backend == '\0')
		backend = desc->backend;

	/* Everything that can refuse runs before the first write. */
	rc = plan_init(&s->plan, desc, &s->err);
	s->plan.trace = trace_wanted();
	/* A store at numcodecs' zstd level 0 keeps saying so (§29); the
	 * levels' plans are copied from this one. */
	s->plan.level_default = ro != NULL &&
				ro->desc.codec == SHARDPIPE_CODEC_ZSTD &&
				ro->desc.level == 0;
	/* A box's rows and shards count along storage dim 0 (§30); a
	 * continued store refuses it in reopen_merge. */
	if (rc == SHARDPIPE_OK)
		rc = pool_configure(&s->err);
	if (rc == SHARDPIPE_OK && region != NULL && region->whole != NULL)
		rc = plan_levels_box(s->levels, &s->plan, region->whole,
				     region->whole0, region->lo, region->hi,
				     &s->err);
	else if (rc == SHARDPIPE_OK)
		rc = plan_levels_init(s->levels, &s->plan, desc, &s->err);
	if (rc == SHARDPIPE_OK)
		rc = ome_axes_init(s->levels, &s->plan, desc, &s->err);
	/* A continued image's fields are its store's (reopen_merge). */
	if (rc == SHARDPIPE_OK)
		rc = frame_meta_init(&s->fm, desc, &s->plan,
				     s->levels->group, path, &s->err);
	/* After the levels' plans are made, which copy level 0's: each
	 * level takes its own reference in share_lanes. */
	if (lanes != NULL)
		s->plan.lanes = lanes_ref(lanes);
	if (rc == SHARDPIPE_OK && ro != NULL) {
		s->store = ro->store;
		ro->store = NULL;
	} else if (rc == SHARDPIPE_OK && region != NULL) {
		rc = store_region(&s->store, path, s->plan.durable,
				  s->plan.rank, region->lo, region->hi, 0,
				  s->levels->group ? s->levels->n : 0,
				  &s->err);
		s->region = 1;
		memcpy(s->shard_offset, region->shards,
		       sizeof(s->shard_offset));
	} else if (rc == SHARDPIPE_OK && sink != NULL)
		rc = store_sink_open(&s->store, &own,
				     s->plan.index_location ==
					     SHARDPIPE_INDEX_START,
				     &s->err);
	else if (rc == SHARDPIPE_OK)
		rc = store_check(&s->store, path, desc->overwrite,
				 s->plan.durable, &s->err);
	/* A continued array keeps its attributes; desc's go over them. */
	if (rc == SHARDPIPE_OK && ro != NULL)
		rc = reopen_attrs(ro, &s->attrs, &s->err);
	if (rc == SHARDPIPE_OK)
		rc = open_attrs(s, desc);
	if (rc == SHARDPIPE_OK)
		rc = backend_find(backend, &s->be, &s->err);
	if (rc == SHARDPIPE_OK && s->levels->n > 1 && s->be->reduce == NULL)
		rc = sp_err_set(&s->err, SHARDPIPE_ERR_BACKEND,
				"backend %s cannot build pyramids (it has no "
				"reduce entry)", s->be->name);
	if (rc == SHARDPIPE_OK && s->levels->group)
		rc = open_levels(s, path, &s->err);
	if (rc == SHARDPIPE_OK && s->fm != NULL)
		rc = frame_meta_stores(s->fm, s->group, path, &s->attrs,
				       &s->err);
	if (rc == SHARDPIPE_OK)
		rc = share_lanes(s, &s->err);
	if (rc == SHARDPIPE_OK)
		cap_batch(s);
	for (struct shardpipe_stream *l = s; l != NULL && rc == SHARDPIPE_OK;
	     l = l->next) {
		rc = open_memory(l, &s->err);
		if (rc == SHARDPIPE_OK)
			rc = open_trace(l, path);
		if (rc != SHARDPIPE_OK && l != s)
			s->err = l->err;
	}
	if (rc == SHARDPIPE_OK && s->plan.max_memory != 0 &&
	    all_pools(s) > s->plan.max_memory)
		rc = sp_err_set(&s->err, SHARDPIPE_ERR_NOMEM,
				"max_memory %llu bytes: the pools need %llu "
				"bytes even with %llu epoch(s) of %llu bytes a "
				"batch%s",
				(unsigned long long)s->plan.max_memory,
				(unsigned long long)all_pools(s),
				(unsigned long long)s->plan.K,
				(unsigned long long)s->plan.epoch_bytes,
				s->next != NULL ? ", every level's" : "");
	if (rc == SHARDPIPE_OK && ro == NULL && region == NULL)
		rc = create_store(s, &s->err);
	for (struct shardpipe_stream *l = s; l != NULL && rc == SHARDPIPE_OK;
	     l = l->next) {
		rc = start_threads(l);
		if (rc != SHARDPIPE_OK)
			s->err = l->err;
	}
	if (rc == SHARDPIPE_OK && ro != NULL)
		rc = resume(s, ro);
	if (rc != SHARDPIPE_OK) {
		sp_last_error_set(s->err.msg);
		stream_free(s);
		return rc;
	}
	for (struct shardpipe_stream *l = s; l != NULL; l = l->next)
		l->stats.pool_bytes = pools(l);
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
	return stream_open(out, path, NULL, desc, NULL, NULL, NULL);
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
	return stream_open(out, NULL, sink, desc, NULL, NULL, NULL);
}

int stream_open_box(shardpipe_stream **out, const char *path,
		    const shardpipe_desc *box, const struct region_box *where)
{
	return stream_open(out, path, NULL, box, NULL, NULL, where);
}

int stream_open_lanes(shardpipe_stream **out, const char *path,
		      const shardpipe_desc *desc, struct lanes *lanes)
{
	return stream_open(out, path, NULL, desc, lanes, NULL, NULL);
}


/*
 * The store's last shard row dropped (truncate_to_advertised): rows from
 * the first row of the shard row read back, or with none read back of
 * the last whole one, are no longer advertised, at level 0 and at every
 * level above it, and the open runs again, taking the lock again (the
 * failed open released it).
 */
static int truncate_and_open(shardpipe_stream **out, const char *path,
			     const shardpipe_desc *desc, shardpipe_desc *eff,
			     struct reopen *ro)
{
	const uint64_t sr = ro->level_sr[0], b = reopen_base(ro);
	uint64_t keep = ro->rows > b ? b : b >= sr ? b - sr : 0;
	struct sp_err err;
	int rc;

	sp_err_clear(&err);
	rc = store_reopen(&ro->store, path,
			  desc != NULL && DESC_HAS(desc, durable) &&
				  desc->durable,
			  &err);
	if (rc != SHARDPIPE_OK) {
		sp_last_error_set(err.msg);
		return rc;
	}
	ro->rows = keep;
	for (int L = 0; L < ro->levels; L++)
		if (ro->level_rows[L] > keep >> ro->level_shift[L])
			ro->level_rows[L] = keep >> ro->level_shift[L];
	ro->truncated = 1;
	if (eff->dims[ro->append_dim].size != 0)
		eff->dims[ro->append_dim].size += b - reopen_base(ro);
	return stream_open(out, path, NULL, eff, NULL, ro, NULL);
}

int shardpipe_stream_reopen(shardpipe_stream **out, const char *path,
			    const shardpipe_desc *desc)
{
	struct reopen ro;
	struct sp_err err;
	shardpipe_desc eff;
	int rc;

	if (out != NULL)
		*out = NULL;
	if (out == NULL || path == NULL) {
		sp_last_error_set("shardpipe_stream_reopen: NULL argument");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	sp_err_clear(&err);
	memset(&ro, 0, sizeof(ro));
	rc = reopen_load(&ro, path, 1,
			 desc != NULL && DESC_HAS(desc, durable) && desc->durable,
			 desc, &err);
	if (rc == SHARDPIPE_OK)
		rc = reopen_merge(&ro, path, desc, &eff, &err);
	if (rc != SHARDPIPE_OK) {
		reopen_free(&ro);
		sp_last_error_set(err.msg);
		return rc;
	}
	/* The stream counts from the first row of the store's last partial
	 * shard row (§29), along the append dim wherever it is stored. */
	if (eff.dims[ro.append_dim].size != 0)
		eff.dims[ro.append_dim].size -= reopen_base(&ro);
	rc = stream_open(out, path, NULL, &eff, NULL, &ro, NULL);
	/* A damaged last shard row, which the caller asked to drop: nothing
	 * was written, so open again as if the store advertised only the
	 * rows before it (§29). */
	if ((rc == SHARDPIPE_ERR_CORRUPT || rc == SHARDPIPE_ERR_FORMAT) &&
	    DESC_HAS(&eff, truncate_to_advertised) &&
	    eff.truncate_to_advertised && ro.store == NULL)
		rc = truncate_and_open(out, path, desc, &eff, &ro);
	reopen_free(&ro);
	return rc;
}
