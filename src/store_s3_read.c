/*
 * store_s3_read.c - reading an S3 store (doc/design.md §24.4): objects
 * opened with a ranged GET that brings a shard's index (or one byte),
 * read with ranged GETs pinned to the ETag seen at open, on as many
 * connections as SHARDPIPE_S3_READS allows at once; listing for check.
 */
#define _GNU_SOURCE
#include "store_s3.h"
#include "s3.h"

#include <pthread.h>
#include <stdlib.h>

/* Each store defines its own open object; the reader holds only the
 * pointer.  Nothing in it changes after open: reads of one object may
 * run on several threads at once. */
struct source_obj {
	char *key;
	uint64_t size;
	char etag[S3_ETAG_MAX];
};

/* Connections are made as reads need them, up to cfg.reads, and kept
 * for the next read (libcurl reuses the TCP connection). */
struct source_s3 {
	struct source base;
	struct s3_config cfg;
	pthread_mutex_t mu;
	pthread_cond_t freed;
	struct s3_conn **idle;
	int nidle, made;
};

static int take_conn(struct source_s3 *src, struct s3_conn **c,
		     struct sp_err *err)
{
	int rc = SHARDPIPE_OK;

	pthread_mutex_lock(&src->mu);
	while (src->nidle == 0 && src->made == src->cfg.reads)
		pthread_cond_wait(&src->freed, &src->mu);
	if (src->nidle > 0) {
		*c = src->idle[--src->nidle];
	} else {
		src->made++;
		pthread_mutex_unlock(&src->mu);
		rc = s3_conn_new(c, &src->cfg, err);
		pthread_mutex_lock(&src->mu);
		if (rc != SHARDPIPE_OK) {
			src->made--;
			pthread_cond_signal(&src->freed);
		}
	}
	pthread_mutex_unlock(&src->mu);
	return rc;
}

static void give_conn(struct source_s3 *src, struct s3_conn *c)
{
	pthread_mutex_lock(&src->mu);
	src->idle[src->nidle++] = c;
	pthread_cond_signal(&src->freed);
	pthread_mutex_unlock(&src->mu);
}

static int request(struct source_s3 *src, const struct s3_req *rq,
		   struct s3_resp *rs, struct sp_err *err)
{
	struct s3_conn *c;
	int rc;

	memset(rs, 0, sizeof(*rs));
	SP_FORWARD(take_conn(src, &c, err));
	rc = s3_request(c, rq, rs, err);
	give_conn(src, c);
	return rc;
}

/* The reader names the store and key itself: keep only what S3 said. */
static int src_err(const struct source_s3 *src, const char *key, int rc,
		   struct sp_err *err)
{
	char head[1400];
	size_t n = (size_t)snprintf(head, sizeof(head), "s3://%s/%s: ",
				    src->cfg.bucket, key);

	if (rc != SHARDPIPE_OK && strncmp(err->msg, head, n) == 0)
		memmove(err->msg, err->msg + n, strlen(err->msg + n) + 1);
	return rc;
}

/*
 * A GET of the first n bytes, or the last n when at_end, rather than a
 * HEAD: it costs the same, gives the size (Content-Range) and ETag and,
 * for a shard, its index; and on a 404 a body that tells a missing
 * bucket from a missing key.
 */
static int s3src_open_read(struct source *base, const char *key,
			   struct source_obj **obj, uint64_t *size, void *buf,
			   size_t n, int at_end, struct sp_err *err)
{
	struct source_s3 *src = (struct source_s3 *)base;
	struct source_obj *o = calloc(1, sizeof(*o));
	struct s3_resp rs;
	int rc;

	*obj = NULL;
	SP_RETURN_IF(o == NULL || (o->key = s3_key(&src->cfg, key)) == NULL,
		     err, SHARDPIPE_ERR_NOMEM, "out of memory");
	rc = request(src, &(struct s3_req){ .method = "GET", .key = o->key,
					    .ranged = 1, .suffix = at_end,
					    .range_len = n, .out = buf,
					    .out_cap = n, .ok_status = 404 },
		     &rs, err);
	s3_resp_free(&rs);
	/* No byte to give: the object is empty. */
	if (rc != SHARDPIPE_OK && rs.status == 416) {
		rc = SHARDPIPE_OK;
		rs.status = 200;
		rs.total = 0;
	}
	if (rc == SHARDPIPE_OK && strcmp(rs.code, "NoSuchBucket") == 0)
		rc = sp_err_set(err, SHARDPIPE_ERR_PATH,
				"bucket %s does not exist (NoSuchBucket)",
				src->cfg.bucket);
	/* A whole object is its own first and last n bytes. */
	if (rc == SHARDPIPE_OK && rs.status == 200)
		rs.total = rs.out_len;
	if (rc != SHARDPIPE_OK || rs.status == 404) {
		src_err(src, o->key, rc, err);
		free(o->key);
		free(o);
		return rc;
	}
	o->size = rs.total;
	snprintf(o->etag, sizeof(o->etag), "%s", rs.etag);
	*size = o->size;
	*obj = o;
	return SHARDPIPE_OK;
}

static int s3src_open(struct source *base, const char *key,
		      struct source_obj **obj, uint64_t *size,
		      struct sp_err *err)
{
	uint8_t first;

	return s3src_open_read(base, key, obj, size, &first, 1, 0, err);
}

/* n bytes at off into buf, from the object as it was when opened. */
static int s3src_read(struct source *base, struct source_obj *o, void *buf,
		      size_t n, uint64_t off, struct sp_err *err)
{
	struct source_s3 *src = (struct source_s3 *)base;
	struct s3_resp rs;
	int rc;

	SP_RETURN_IF(off > o->size || n > o->size - off, err, SHARDPIPE_ERR_IO,
		     "bytes %llu..+%zu lie beyond its %llu",
		     (unsigned long long)off, n, (unsigned long long)o->size);
	if (n == 0)
		return SHARDPIPE_OK;
	rc = request(src, &(struct s3_req){ .method = "GET", .key = o->key,
					    .ranged = 1, .range_off = off,
					    .range_len = n,
					    .if_match = o->etag[0] ? o->etag
								   : NULL,
					    .out = buf, .out_cap = n },
		     &rs, err);
	s3_resp_free(&rs);
	if (rc == SHARDPIPE_OK && rs.out_len != n)
		rc = sp_err_set(err, SHARDPIPE_ERR_IO,
				"%zu bytes at %llu asked, %zu came", n,
				(unsigned long long)off, rs.out_len);
	return src_err(src, o->key, rc, err);
}

static void s3src_close(struct source *base, struct source_obj *o)
{
	(void)base;
	if (o == NULL)
		return;
	free(o->key);
	free(o);
}

struct list_ctx {
	size_t skip;            /* bytes of the store's prefix and "/" */
	size_t dir_len;         /* bytes of dir and "/" after that */
	int depth;
	int (*each)(void *, const char *);
	void *user;
};

/* Pass on the keys a chunk key tree of that depth can hold. */
static int list_filter(void *user, const char *key)
{
	struct list_ctx *l = user;
	const char *rel = key + l->skip, *p = rel + l->dir_len;

	if (strlen(key) < l->skip + l->dir_len)
		return SHARDPIPE_OK;
	for (int d = 1; d < l->depth; d++) {
		size_t n = strcspn(p, "/");

		if (p[n] != '/' || !store_is_key_part(p, n))
			return SHARDPIPE_OK;
		p += n + 1;
	}
	if (*p == '\0' || strchr(p, '/') != NULL)
		return SHARDPIPE_OK;
	return l->each(l->user, rel);
}

static int s3src_list(struct source *base, const char *dir, int depth,
		      int (*each)(void *, const char *), void *user,
		      struct sp_err *err)
{
	struct source_s3 *src = (struct source_s3 *)base;
	struct list_ctx l = { .depth = depth, .each = each, .user = user };
	char *rel = NULL, *prefix;
	int rc;

	SP_RETURN_IF(asprintf(&rel, "%s%s", dir, *dir ? "/" : "") < 0, err,
		     SHARDPIPE_ERR_NOMEM, "out of memory");
	prefix = s3_key(&src->cfg, rel);
	l.skip = *src->cfg.prefix ? strlen(src->cfg.prefix) + 1 : 0;
	l.dir_len = strlen(rel);
	free(rel);
	SP_RETURN_IF(prefix == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory");
	{
		struct s3_conn *c;

		rc = take_conn(src, &c, err);
		if (rc == SHARDPIPE_OK) {
			rc = s3_list(c, prefix, 1000, list_filter, &l, err);
			give_conn(src, c);
		}
	}
	free(prefix);
	return rc;
}

static void s3src_free(struct source *base)
{
	struct source_s3 *src = (struct source_s3 *)base;

	for (int i = 0; i < src->nidle; i++)
		s3_conn_free(src->idle[i]);
	free(src->idle);
	pthread_mutex_destroy(&src->mu);
	pthread_cond_destroy(&src->freed);
	s3_config_free(&src->cfg);
	free(src);
}

static const struct source_ops s3_source_ops = {
	.open = s3src_open,
	.read = s3src_read,
	.close = s3src_close,
	.list = s3src_list,
	.free = s3src_free,
	.open_read = s3src_open_read,
	.concurrent_reads = 1,
};

int source_s3_open(struct source **out, const char *url, struct sp_err *err)
{
	struct source_s3 *src = calloc(1, sizeof(*src));
	int rc;

	*out = NULL;
	SP_RETURN_IF(src == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	src->base.ops = &s3_source_ops;
	pthread_mutex_init(&src->mu, NULL);
	pthread_cond_init(&src->freed, NULL);
	rc = s3_config_load(&src->cfg, url, err);
	if (rc == SHARDPIPE_OK) {
		src->base.io_threads = src->cfg.reads;
		src->base.coalesce = src->cfg.read_size;
		src->idle = calloc((size_t)src->cfg.reads, sizeof(*src->idle));
		if (src->idle == NULL)
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
	}
	if (rc != SHARDPIPE_OK) {
		s3src_free(&src->base);
		return rc;
	}
	*out = &src->base;
	return SHARDPIPE_OK;
}
