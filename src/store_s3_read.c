/*
 * store_s3_read.c - reading an S3 store (doc/design.md §24.4): objects
 * opened with a GET of their first byte, read with ranged GETs pinned to
 * the ETag seen at open, fetched ahead when read through; listing for
 * check.
 */
#define _GNU_SOURCE
#include "store_s3.h"
#include "s3.h"

#include <stdlib.h>

/* A reader reading an object from where it last stopped is reading it
 * through (check, cat): fetch this much ahead instead of chunk by chunk. */
#define READ_AHEAD (4u << 20)

/* Each store defines its own open object; the reader holds only the
 * pointer. */
struct source_obj {
	char *key;
	uint64_t size;
	char etag[S3_ETAG_MAX];
	uint64_t next;          /* where the last read ended */
	uint8_t *ahead;         /* bytes [ahead_off, +ahead_len) */
	uint64_t ahead_off;
	size_t ahead_len;
};

struct source_s3 {
	struct source base;
	struct s3_config cfg;
	struct s3_conn *conn;
};

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
 * A GET of the first byte rather than a HEAD: it costs the same, gives
 * the size (Content-Range) and ETag, and on a 404 a body that tells a
 * missing bucket from a missing key.
 */
static int s3src_open(struct source *base, const char *key,
		      struct source_obj **obj, uint64_t *size,
		      struct sp_err *err)
{
	struct source_s3 *src = (struct source_s3 *)base;
	struct source_obj *o = calloc(1, sizeof(*o));
	struct s3_resp rs;
	uint8_t first;
	int rc;

	*obj = NULL;
	SP_RETURN_IF(o == NULL || (o->key = s3_key(&src->cfg, key)) == NULL,
		     err, SHARDPIPE_ERR_NOMEM, "out of memory");
	rc = s3_request(src->conn, &(struct s3_req){ .method = "GET",
						     .key = o->key,
						     .ranged = 1,
						     .range_len = 1,
						     .out = &first,
						     .out_cap = 1,
						     .ok_status = 404 },
			&rs, err);
	s3_resp_free(&rs);
	/* No first byte to give: the object is empty. */
	if (rc != SHARDPIPE_OK && rs.status == 416) {
		rc = SHARDPIPE_OK;
		rs.status = 200;
		rs.total = 0;
	}
	if (rc == SHARDPIPE_OK && strcmp(rs.code, "NoSuchBucket") == 0)
		rc = sp_err_set(err, SHARDPIPE_ERR_PATH,
				"bucket %s does not exist (NoSuchBucket)",
				src->cfg.bucket);
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

/* n bytes at off into buf, from the object as it was when opened. */
static int get_range(struct source_s3 *src, struct source_obj *o, void *buf,
		     size_t n, uint64_t off, struct sp_err *err)
{
	struct s3_resp rs;
	int rc = s3_request(src->conn,
			    &(struct s3_req){ .method = "GET", .key = o->key,
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

static int s3src_read(struct source *base, struct source_obj *o, void *buf,
		      size_t n, uint64_t off, struct sp_err *err)
{
	struct source_s3 *src = (struct source_s3 *)base;
	int sequential = off == o->next && o->next != 0;

	SP_RETURN_IF(off > o->size || n > o->size - off, err, SHARDPIPE_ERR_IO,
		     "bytes %llu..+%zu lie beyond its %llu",
		     (unsigned long long)off, n, (unsigned long long)o->size);
	o->next = off + n;
	if (n == 0)
		return SHARDPIPE_OK;
	if (o->ahead != NULL && off >= o->ahead_off &&
	    off + n <= o->ahead_off + o->ahead_len) {
		memcpy(buf, o->ahead + (off - o->ahead_off), n);
		return SHARDPIPE_OK;
	}
	if (!sequential || n >= READ_AHEAD)
		return get_range(src, o, buf, n, off, err);
	/* Reading on from where the last read stopped: fetch ahead. */
	size_t len = o->size - off < READ_AHEAD ? (size_t)(o->size - off)
						: READ_AHEAD;
	if (o->ahead == NULL && (o->ahead = malloc(READ_AHEAD)) == NULL)
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	o->ahead_len = 0;
	SP_FORWARD(get_range(src, o, o->ahead, len, off, err));
	o->ahead_off = off;
	o->ahead_len = len;
	memcpy(buf, o->ahead, n);
	return SHARDPIPE_OK;
}

static void s3src_close(struct source *base, struct source_obj *o)
{
	(void)base;
	if (o == NULL)
		return;
	free(o->ahead);
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
	rc = s3_list(src->conn, prefix, 1000, list_filter, &l, err);
	free(prefix);
	return rc;
}

static void s3src_free(struct source *base)
{
	struct source_s3 *src = (struct source_s3 *)base;

	s3_conn_free(src->conn);
	s3_config_free(&src->cfg);
	free(src);
}

static const struct source_ops s3_source_ops = {
	.open = s3src_open,
	.read = s3src_read,
	.close = s3src_close,
	.list = s3src_list,
	.free = s3src_free,
};

int source_s3_open(struct source **out, const char *url, struct sp_err *err)
{
	struct source_s3 *src = calloc(1, sizeof(*src));
	int rc;

	*out = NULL;
	SP_RETURN_IF(src == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	src->base.ops = &s3_source_ops;
	rc = s3_config_load(&src->cfg, url, err);
	if (rc == SHARDPIPE_OK)
		rc = s3_conn_new(&src->conn, &src->cfg, err);
	if (rc != SHARDPIPE_OK) {
		s3src_free(&src->base);
		return rc;
	}
	*out = &src->base;
	return SHARDPIPE_OK;
}
