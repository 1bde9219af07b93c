/*
 * store_sink.c - a caller's shardpipe_sink as a store (doc/design.md §15.2):
 * the stream writes to it as to a directory, and each object reaches the
 * callbacks the sink names, by key (object) or as a shard with its
 * coordinates and index apart (shard, shard_parts), zarr.json through
 * metadata.  Only a sink with object() has children: the others take one
 * array.
 */
#include "store.h"

#include <pthread.h>
#include <stdlib.h>

/* What a sink's stores share: a pyramid's levels write from a writer
 * thread each, and the callbacks run one at a time (shardpipe.h). */
struct sink_shared {
	pthread_mutex_t mu;
	int refs;
	shardpipe_sink cb;
	int index_start;          /* the index is a shard's first part */
	shardpipe_part *parts;    /* the pieces handed over, under mu */
	size_t cap;
	uint8_t *packed;          /* a shard copied together for shard() */
	size_t packed_cap;
};

struct store_sink {
	struct store base;
	struct sink_shared *sh;
	char prefix[160];         /* "", or a level's or field's "1/" */
};

static int grow(void **buf, size_t *cap, size_t want, size_t elem)
{
	void *p;

	if (want <= *cap)
		return 0;
	p = realloc(*buf, want * elem);
	if (p == NULL)
		return -1;
	*buf = p;
	*cap = want;
	return 0;
}

static int sink_create(struct store *s, struct sp_err *err)
{
	(void)s;
	(void)err;
	return SHARDPIPE_OK;
}

/* The object's pieces as the caller's parts. */
static int as_parts(struct sink_shared *sh, const struct iovec *v, size_t n,
		    struct sp_err *err)
{
	SP_RETURN_IF(grow((void **)&sh->parts, &sh->cap, n ? n : 1,
			  sizeof(*sh->parts)) != 0, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for %zu parts", n);
	for (size_t i = 0; i < n; i++)
		sh->parts[i] = (shardpipe_part){ v[i].iov_base, v[i].iov_len };
	return SHARDPIPE_OK;
}

/* A shard to shard() or shard_parts(): its key's coordinates, and its
 * index apart from its chunks (one piece, first or last, as
 * stream_emit_shards lays it).  *cb: what the callback returned. */
static int to_shard(struct sink_shared *sh, const char *key,
		    const struct iovec *v, size_t n, int *cb,
		    struct sp_err *err)
{
	uint64_t coords[SHARDPIPE_MAX_RANK];
	const struct iovec *ix = sh->index_start ? &v[0] : &v[n - 1];
	const struct iovec *data = v + sh->index_start;
	size_t nd = n - 1, bytes = 0;
	int rank = 0;

	for (const char *c = key + 1; *c == '/' && rank < SHARDPIPE_MAX_RANK;
	     rank++)
		coords[rank] = strtoull(c + 1, (char **)&c, 10);
	if (sh->cb.shard_parts != NULL) {
		SP_FORWARD(as_parts(sh, data, nd, err));
		*cb = sh->cb.shard_parts(sh->cb.user, coords, rank, sh->parts,
					 nd, ix->iov_base, ix->iov_len);
		return SHARDPIPE_OK;
	}
	for (size_t i = 0; i < nd; i++)
		bytes += data[i].iov_len;
	/* One piece is handed over where it lies. */
	if (nd == 1) {
		*cb = sh->cb.shard(sh->cb.user, coords, rank, data[0].iov_base,
				   bytes, ix->iov_base, ix->iov_len);
		return SHARDPIPE_OK;
	}
	SP_RETURN_IF(grow((void **)&sh->packed, &sh->packed_cap, bytes, 1) != 0,
		     err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for shard %s (%zu bytes)", key, bytes);
	bytes = 0;
	for (size_t i = 0; i < nd; i++) {
		memcpy(sh->packed + bytes, data[i].iov_base, data[i].iov_len);
		bytes += data[i].iov_len;
	}
	*cb = sh->cb.shard(sh->cb.user, coords, rank, sh->packed, bytes,
			   ix->iov_base, ix->iov_len);
	return SHARDPIPE_OK;
}

static int sink_write(struct store *base, const char *key,
		      const struct iovec *parts, size_t n, struct sp_err *err)
{
	struct store_sink *s = (struct store_sink *)base;
	struct sink_shared *sh = s->sh;
	char full[sizeof(s->prefix) + 40 + 21 * SHARDPIPE_MAX_RANK];
	int rc = SHARDPIPE_OK, cb = 0;

	snprintf(full, sizeof(full), "%s%s", s->prefix, key);
	pthread_mutex_lock(&sh->mu);
	if (sh->cb.object != NULL) {
		rc = as_parts(sh, parts, n, err);
		if (rc == SHARDPIPE_OK)
			cb = sh->cb.object(sh->cb.user, full, sh->parts, n);
	} else if (strcmp(key, "zarr.json") == 0) {
		cb = sh->cb.metadata != NULL &&
		     sh->cb.metadata(sh->cb.user, parts[0].iov_base,
				     parts[0].iov_len);
	} else {
		rc = to_shard(sh, key, parts, n, &cb, err);
	}
	pthread_mutex_unlock(&sh->mu);
	SP_FORWARD(rc);
	SP_RETURN_IF(cb != 0, err, SHARDPIPE_ERR_SINK, "the sink refused %s%s",
		     key[0] == 'c' && key[1] == '/' ? "shard " : "", full);
	return SHARDPIPE_OK;
}

static int sink_write_meta(struct store *s, const char *json, size_t len,
			   struct sp_err *err)
{
	struct iovec v = { (void *)json, len };

	return sink_write(s, "zarr.json", &v, 1, err);
}

static const struct store_ops sink_ops;

static int sink_child(const struct store *base, const char *name,
		      struct store **out, struct sp_err *err)
{
	const struct store_sink *parent = (const struct store_sink *)base;
	struct store_sink *s;

	*out = NULL;
	SP_RETURN_IF(parent->sh->cb.object == NULL, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "a sink without an object callback receives one array: "
		     "a pyramid or an OME-NGFF image (downsample, ngff) needs "
		     "the object callback or a directory store");
	/* Names are a level's number or a field's (at most 63). */
	SP_RETURN_IF(strlen(parent->prefix) + strlen(name) + 2 >
			     sizeof(s->prefix), err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "the sink's key prefix %s%s/ is too long", parent->prefix,
		     name);
	s = calloc(1, sizeof(*s));
	SP_RETURN_IF(s == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	s->base.ops = &sink_ops;
	s->sh = parent->sh;
	memcpy(s->prefix, parent->prefix, strlen(parent->prefix));
	strcat(strcat(s->prefix, name), "/");
	pthread_mutex_lock(&s->sh->mu);
	s->sh->refs++;
	pthread_mutex_unlock(&s->sh->mu);
	*out = &s->base;
	return SHARDPIPE_OK;
}

static void sink_free(struct store *base)
{
	struct store_sink *s = (struct store_sink *)base;
	struct sink_shared *sh = s->sh;
	int last;

	pthread_mutex_lock(&sh->mu);
	last = --sh->refs == 0;
	pthread_mutex_unlock(&sh->mu);
	if (last) {
		pthread_mutex_destroy(&sh->mu);
		free(sh->parts);
		free(sh->packed);
		free(sh);
	}
	free(s);
}

static const struct store_ops sink_ops = {
	.create = sink_create,
	.write = sink_write,
	.write_meta = sink_write_meta,
	.child = sink_child,
	.free = sink_free,
};

int store_sink_open(struct store **out, const shardpipe_sink *sink,
		    int index_start, struct sp_err *err)
{
	struct store_sink *s = calloc(1, sizeof(*s));
	struct sink_shared *sh = calloc(1, sizeof(*sh));

	*out = NULL;
	if (s == NULL || sh == NULL) {
		free(s);
		free(sh);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_init(&sh->mu, NULL);
	sh->refs = 1;
	sh->cb = *sink;
	sh->index_start = index_start;
	s->base.ops = &sink_ops;
	s->sh = sh;
	*out = &s->base;
	return SHARDPIPE_OK;
}
