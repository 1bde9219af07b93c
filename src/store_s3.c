/*
 * store_s3.c - writing an S3 store (doc/design.md §24.3): uploads on the
 * store's own threads, multipart uploads and their clean-up, zarr.json
 * ordered after every object it advertises, the overwrite policy of the
 * directory store; and continuing one (§29): what a killed writer left
 * past the advertised rows removed, its unfinished uploads aborted.
 */
#define _GNU_SOURCE
#include "store_s3.h"
#include "crc32c.h"
#include "s3.h"

#include <pthread.h>
#include <stdlib.h>

enum up_state { UP_NEW, UP_CREATING, UP_OPEN, UP_FAILED };

/* One object being written as a multipart upload. */
struct upload {
	char *key;
	uint32_t nparts;
	uint32_t finished;      /* part jobs done, well or not */
	enum up_state state;
	int failed;             /* a part failed: abort */
	char *id;
	char **etags;           /* by part number - 1 */
	uint64_t bytes;
	/* A region writer's (exclusive): each part's CRC-32C, to compare
	 * with an object found at the key once the parts are freed. */
	uint32_t *crcs;
	uint64_t part_len;
};

/* One request's worth of work for an upload thread. */
struct job {
	struct job *next;
	struct upload *up;      /* NULL: one PUT of key */
	char *key;
	uint32_t part;          /* 1.. within up */
	uint8_t *buf;           /* NULL: skip (the object already failed) */
	size_t len;
	uint64_t gen;           /* zarr.json writes queued before it */
};

struct store_s3 {
	struct store base;
	struct s3_config cfg;
	int overwrite;
	int store_exists;
	/* A region writer's (doc/design.md §30.4): every shard is written
	 * only where no object has its key (If-None-Match: *). */
	int exclusive;
	/* The opening thread's; also the writer's, which removes the old
	 * shards a continued store no longer has: one at a time. */
	pthread_mutex_t conn_mu;
	struct s3_conn *conn;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t *threads;
	struct s3_conn **conns;
	int nthreads;
	int conns_taken;
	struct job *head, *tail;
	uint64_t budget;        /* bytes of parts in flight, at most */
	uint64_t inflight;
	/* zarr.json waits for every job queued before it: those are the
	 * jobs tagged with a generation below gen, undone_old of them still
	 * running or queued; undone_new were queued after the last one. */
	uint64_t gen;
	uint64_t undone_old, undone_new;
	char *meta;             /* the latest zarr.json not yet written */
	size_t meta_len;
	int meta_busy;
	int stop;
	int failed;             /* first failure, sticky */
	struct sp_err err;
};

/* Keep the first failure (under mu); everyone waiting rechecks. */
static void fail_locked(struct store_s3 *s, const struct sp_err *e)
{
	if (!s->failed) {
		s->failed = 1;
		s->err = *e;
	}
	pthread_cond_broadcast(&s->cv);
}

static int sticky_locked(const struct store_s3 *s, struct sp_err *err)
{
	if (!s->failed)
		return SHARDPIPE_OK;
	*err = s->err;
	return s->err.code;
}

static int do_put(struct s3_conn *c, const char *key, const void *body,
		  size_t len, struct sp_err *err)
{
	struct s3_resp rs;
	int rc = s3_request(c, &(struct s3_req){ .method = "PUT", .key = key,
						 .body = body,
						 .body_len = len },
			    &rs, err);

	s3_resp_free(&rs);
	return rc;
}

static int do_delete(struct s3_conn *c, const char *key, struct sp_err *err)
{
	struct s3_resp rs;
	int rc = s3_request(c, &(struct s3_req){ .method = "DELETE",
						 .key = key },
			    &rs, err);

	s3_resp_free(&rs);
	return rc;
}

/*
 * A region writer found an object at key where it wrote with
 * If-None-Match (doc/design.md §30.4): success when the object holds what
 * this writer meant to store, total bytes (a retried task, a re-run, a
 * retried request whose first answer was lost), else SHARDPIPE_ERR_EXISTS
 * naming the shard, as a directory's claims refuse a box meeting one
 * written before (§30.3).  Read in ranges of part_len bytes, each compared with
 * bytes when the writer still holds them (one PUT), else by its CRC-32C
 * (a multipart upload's parts are freed once sent); every range after the
 * first with If-Match on the first one's ETag, so that an object replaced
 * meanwhile is not judged by two versions.
 */
static int check_taken(struct store_s3 *s, struct s3_conn *c, const char *key,
		       uint64_t total, uint64_t part_len, const uint8_t *bytes,
		       const uint32_t *crcs, struct sp_err *err)
{
	uint8_t *buf = malloc(part_len ? (size_t)part_len : 1);
	char etag[S3_ETAG_MAX] = "";
	int same = 1, rc = SHARDPIPE_OK;

	SP_RETURN_IF(buf == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	for (uint64_t off = 0; same && rc == SHARDPIPE_OK && off < total;
	     off += part_len) {
		size_t n = (size_t)(total - off < part_len ? total - off
							   : part_len);
		struct s3_resp rs;

		/* 416: an empty object, which no shard is. */
		rc = s3_request(c, &(struct s3_req){
					.method = "GET", .key = key,
					.ranged = 1, .range_off = off,
					.range_len = n, .out = buf,
					.out_cap = n,
					.if_match = etag[0] ? etag : NULL,
					.ok_status = 416 },
				&rs, err);
		if (rc == SHARDPIPE_OK)
			same = rs.status != 416 && rs.total == total &&
			       rs.out_len == n &&
			       (bytes != NULL
					? memcmp(buf, bytes + off, n) == 0
					: crc32c(0, buf, n) ==
						  crcs[off / part_len]);
		if (rc == SHARDPIPE_OK && !etag[0])
			memcpy(etag, rs.etag, sizeof(etag));
		s3_resp_free(&rs);
	}
	free(buf);
	SP_FORWARD(rc);
	SP_RETURN_IF(!same, err, SHARDPIPE_ERR_EXISTS,
		     "s3://%s/%s: another writer stored this shard with other "
		     "bytes (a region writer of a box that overlaps this "
		     "one); it was not replaced", s->cfg.bucket, key);
	return SHARDPIPE_OK;
}

/* A region writer's shard in one PUT: only where no object has the key,
 * else the object there must be this one (check_taken). */
static int put_new(struct store_s3 *s, struct s3_conn *c,
		   const struct job *j, struct sp_err *err)
{
	struct s3_resp rs;
	int rc = s3_request(c, &(struct s3_req){ .method = "PUT",
						 .key = j->key,
						 .body = j->buf,
						 .body_len = j->len,
						 .if_none_match = "*",
						 .ok_status = 412 },
			    &rs, err);
	long status = rs.status;

	s3_resp_free(&rs);
	if (rc != SHARDPIPE_OK || status != 412)
		return rc;
	return check_taken(s, c, j->key, j->len, j->len, j->buf, NULL, err);
}

static int mp_create(const struct s3_config *cfg, struct s3_conn *c,
		     struct upload *up, struct sp_err *err)
{
	struct s3_resp rs;
	char id[1024];
	size_t pos = 0;
	int rc = s3_request(c, &(struct s3_req){ .method = "POST",
						 .key = up->key,
						 .query = "uploads=" },
			    &rs, err);

	if (rc == SHARDPIPE_OK &&
	    s3_xml_next(rs.text, rs.text_len, &pos, "UploadId", id,
			sizeof(id)) != 1)
		rc = sp_err_set(err, SHARDPIPE_ERR_FORMAT,
				"s3://%s/%s: the answer to creating a multipart "
				"upload holds no UploadId", cfg->bucket,
				up->key);
	if (rc == SHARDPIPE_OK && (up->id = strdup(id)) == NULL)
		rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	s3_resp_free(&rs);
	return rc;
}

/* "partNumber=N&uploadId=ID" or "uploadId=ID". */
static char *mp_query(const struct upload *up, uint32_t part)
{
	char *id = s3_escape(up->id, 0), *q = NULL;
	int n;

	if (id == NULL)
		return NULL;
	n = part ? asprintf(&q, "partNumber=%u&uploadId=%s", part, id)
		 : asprintf(&q, "uploadId=%s", id);
	free(id);
	return n < 0 ? NULL : q;
}

static int mp_part(const struct s3_config *cfg, struct s3_conn *c,
		   struct upload *up, const struct job *j, struct sp_err *err)
{
	struct s3_resp rs;
	char *q = mp_query(up, j->part);
	int rc;

	SP_RETURN_IF(q == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	rc = s3_request(c, &(struct s3_req){ .method = "PUT", .key = up->key,
					     .query = q, .body = j->buf,
					     .body_len = j->len },
			&rs, err);
	free(q);
	/* The ETag goes back into XML: refuse one that would break it. */
	if (rc == SHARDPIPE_OK &&
	    (rs.etag[0] == '\0' || strpbrk(rs.etag, "<>&") != NULL))
		rc = sp_err_set(err, SHARDPIPE_ERR_FORMAT,
				"s3://%s/%s: part %u: the server sent no usable "
				"ETag", cfg->bucket, up->key, j->part);
	if (rc == SHARDPIPE_OK &&
	    (up->etags[j->part - 1] = strdup(rs.etag)) == NULL)
		rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	s3_resp_free(&rs);
	return rc;
}

/* Whether key now holds the whole object: a Complete whose answer was
 * lost and whose retry found the upload gone had succeeded. */
static int mp_landed(struct s3_conn *c, const struct upload *up)
{
	struct s3_resp rs;
	struct sp_err e;
	char tail[16];
	int rc = s3_request(c, &(struct s3_req){ .method = "HEAD",
						 .key = up->key },
			    &rs, &e);
	size_t n = strlen(rs.etag);

	s3_resp_free(&rs);
	snprintf(tail, sizeof(tail), "-%u\"", up->nparts);
	return rc == SHARDPIPE_OK && rs.total == up->bytes &&
	       n > strlen(tail) && strcmp(rs.etag + n - strlen(tail), tail) == 0;
}

/*
 * Complete the upload.  A region writer's (exclusive) completes only
 * where no object has the key (If-None-Match on the Complete, §30.4):
 * when one has, *open says that the upload is still there to abort, and
 * the object must be this one (check_taken); so must the object found
 * after a retry finds the upload gone, which may be another writer's.
 */
static int mp_complete(struct store_s3 *s, struct s3_conn *c,
		       struct upload *up, int *open, struct sp_err *err)
{
	size_t cap = 64 + (size_t)up->nparts * (64 + S3_ETAG_MAX), n;
	char *xml = malloc(cap), *q = mp_query(up, 0);
	struct s3_resp rs;
	int rc;

	if (xml == NULL || q == NULL) {
		free(xml);
		free(q);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	n = (size_t)snprintf(xml, cap, "<CompleteMultipartUpload>");
	for (uint32_t k = 0; k < up->nparts; k++)
		n += (size_t)snprintf(xml + n, cap - n,
				      "<Part><PartNumber>%u</PartNumber>"
				      "<ETag>%s</ETag></Part>",
				      k + 1, up->etags[k]);
	n += (size_t)snprintf(xml + n, cap - n, "</CompleteMultipartUpload>");
	rc = s3_request(c, &(struct s3_req){ .method = "POST", .key = up->key,
					     .query = q, .body = xml,
					     .body_len = n,
					     .if_none_match = s->exclusive
							      ? "*" : NULL,
					     .ok_status = s->exclusive ? 412
								       : 0 },
			&rs, err);
	*open = rc == SHARDPIPE_OK && rs.status == 412;
	if (rc != SHARDPIPE_OK && rs.attempts > 1 &&
	    strcmp(rs.code, "NoSuchUpload") == 0)
		rc = s->exclusive ? check_taken(s, c, up->key, up->bytes,
						up->part_len, NULL, up->crcs,
						err)
		     : mp_landed(c, up) ? SHARDPIPE_OK : rc;
	else if (*open)
		rc = check_taken(s, c, up->key, up->bytes, up->part_len, NULL,
				 up->crcs, err);
	s3_resp_free(&rs);
	free(xml);
	free(q);
	return rc;
}

/* Remove the parts of an upload that will not complete.  Retried for the
 * whole retry time: parts left behind cost storage until a lifecycle
 * rule removes them. */
static void mp_abort(struct store_s3 *s, struct s3_conn *c, struct upload *up)
{
	struct s3_resp rs;
	struct sp_err e;
	char *q = mp_query(up, 0);
	int rc = q == NULL ? sp_err_set(&e, SHARDPIPE_ERR_NOMEM,
					"out of memory")
			   : s3_request(c, &(struct s3_req){
						.method = "DELETE",
						.key = up->key, .query = q,
						.persist = 1,
						/* NoSuchUpload: gone already */
						.ok_status = 404 },
					&rs, &e);

	if (q != NULL)
		s3_resp_free(&rs);
	free(q);
	if (rc == SHARDPIPE_OK)
		return;
	pthread_mutex_lock(&s->mu);
	/* The failure that made us abort stays the stream's error; say
	 * what is left behind as well. */
	size_t n = strlen(s->err.msg);
	snprintf(s->err.msg + n, sizeof(s->err.msg) - n,
		 "; aborting the multipart upload of s3://%s/%s failed too, so "
		 "its parts remain (%s)", s->cfg.bucket, up->key, e.msg);
	pthread_mutex_unlock(&s->mu);
}

static void upload_free(struct upload *up)
{
	if (up->etags != NULL)
		for (uint32_t k = 0; k < up->nparts; k++)
			free(up->etags[k]);
	free(up->etags);
	free(up->crcs);
	free(up->id);
	free(up->key);
	free(up);
}

/* Upload thread: one part of a multipart upload, creating the upload
 * first if no part has, completing or aborting it after its last part. */
static void run_part(struct store_s3 *s, struct s3_conn *c, struct job *j)
{
	struct upload *up = j->up;
	struct sp_err e;
	int rc = SHARDPIPE_OK, skip, last, ok, open = 0;

	pthread_mutex_lock(&s->mu);
	while (up->state == UP_CREATING)
		pthread_cond_wait(&s->cv, &s->mu);
	if (up->state == UP_NEW && !s->failed && j->buf != NULL) {
		up->state = UP_CREATING;
		pthread_mutex_unlock(&s->mu);
		rc = mp_create(&s->cfg, c, up, &e);
		pthread_mutex_lock(&s->mu);
		up->state = rc == SHARDPIPE_OK ? UP_OPEN : UP_FAILED;
		if (rc != SHARDPIPE_OK)
			fail_locked(s, &e);
		pthread_cond_broadcast(&s->cv);
	}
	skip = j->buf == NULL || up->state != UP_OPEN || up->failed ||
	       s->failed;
	pthread_mutex_unlock(&s->mu);
	if (!skip && up->crcs != NULL)
		up->crcs[j->part - 1] = crc32c(0, j->buf, j->len);
	if (!skip)
		rc = mp_part(&s->cfg, c, up, j, &e);
	pthread_mutex_lock(&s->mu);
	if (skip || rc != SHARDPIPE_OK)
		up->failed = 1;
	if (rc != SHARDPIPE_OK)
		fail_locked(s, &e);
	last = ++up->finished == up->nparts;
	ok = !up->failed && !s->failed;
	pthread_mutex_unlock(&s->mu);
	if (!last)
		return;
	if (up->state == UP_OPEN && ok) {
		rc = mp_complete(s, c, up, &open, &e);
		if (rc != SHARDPIPE_OK) {
			pthread_mutex_lock(&s->mu);
			fail_locked(s, &e);
			pthread_mutex_unlock(&s->mu);
		}
	}
	if (up->state == UP_OPEN && (!ok || rc != SHARDPIPE_OK || open))
		mp_abort(s, c, up);
	upload_free(up);
}

static void run_job(struct store_s3 *s, struct s3_conn *c, struct job *j)
{
	struct sp_err e;
	int rc, failed;

	if (j->up != NULL) {
		run_part(s, c, j);
		return;
	}
	pthread_mutex_lock(&s->mu);
	failed = s->failed;
	pthread_mutex_unlock(&s->mu);
	if (failed)
		return;
	rc = s->exclusive ? put_new(s, c, j, &e)
			  : do_put(c, j->key, j->buf, j->len, &e);
	if (rc != SHARDPIPE_OK) {
		pthread_mutex_lock(&s->mu);
		fail_locked(s, &e);
		pthread_mutex_unlock(&s->mu);
	}
}

/* Upload thread: zarr.json when everything before it is stored, else the
 * next job. */
static void *uploader(void *arg)
{
	struct store_s3 *s = arg;
	struct s3_conn *c;

	pthread_mutex_lock(&s->mu);
	c = s->conns[s->conns_taken++];
	for (;;) {
		if (s->meta != NULL && s->failed) {
			/* Never advertise what may be missing. */
			free(s->meta);
			s->meta = NULL;
			pthread_cond_broadcast(&s->cv);
			continue;
		}
		if (s->meta != NULL && s->undone_old == 0 && !s->meta_busy) {
			char *json = s->meta, *key = s3_key(&s->cfg,
							      "zarr.json");
			size_t len = s->meta_len;
			struct sp_err e;
			int rc;

			s->meta = NULL;
			s->meta_busy = 1;
			pthread_mutex_unlock(&s->mu);
			rc = key == NULL ? sp_err_set(&e, SHARDPIPE_ERR_NOMEM,
						      "out of memory")
					 : do_put(c, key, json, len, &e);
			free(key);
			free(json);
			pthread_mutex_lock(&s->mu);
			s->meta_busy = 0;
			if (rc != SHARDPIPE_OK)
				fail_locked(s, &e);
			pthread_cond_broadcast(&s->cv);
			continue;
		}
		if (s->head != NULL) {
			struct job *j = s->head;

			s->head = j->next;
			if (s->head == NULL)
				s->tail = NULL;
			pthread_mutex_unlock(&s->mu);
			run_job(s, c, j);
			free(j->buf);
			free(j->key);
			pthread_mutex_lock(&s->mu);
			if (j->gen < s->gen)
				s->undone_old--;
			else
				s->undone_new--;
			s->inflight -= j->buf != NULL ? j->len : 0;
			free(j);
			pthread_cond_broadcast(&s->cv);
			continue;
		}
		if (s->stop)
			break;
		pthread_cond_wait(&s->cv, &s->mu);
	}
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

/* Queue a job (under mu). */
static void enqueue_locked(struct store_s3 *s, struct job *j)
{
	j->gen = s->gen;
	s->undone_new++;
	if (s->tail != NULL)
		s->tail->next = j;
	else
		s->head = j;
	s->tail = j;
	pthread_cond_broadcast(&s->cv);
}

/* Copy bytes [off, off + len) of the concatenation of the n parts to
 * dst. */
static void copy_range(uint8_t *dst, const struct iovec *parts, size_t n,
		       uint64_t off, size_t len)
{
	for (size_t i = 0; i < n && len > 0; i++) {
		size_t k;

		if (off >= parts[i].iov_len) {
			off -= parts[i].iov_len;
			continue;
		}
		k = parts[i].iov_len - off < len ? (size_t)(parts[i].iov_len - off)
						 : len;
		memcpy(dst, (const uint8_t *)parts[i].iov_base + off, k);
		dst += k;
		len -= k;
		off = 0;
	}
}

/*
 * A buffer of n bytes for a job, once the bytes in flight leave room
 * (back-pressure on the caller); NULL with the error when the store
 * failed meanwhile or memory ran out.  Under mu; unlocks to allocate.
 */
static uint8_t *take_buffer_locked(struct store_s3 *s, size_t n,
				   struct sp_err *err)
{
	uint8_t *buf;

	while (!s->failed && s->inflight != 0 && s->inflight + n > s->budget)
		pthread_cond_wait(&s->cv, &s->mu);
	if (sticky_locked(s, err) != SHARDPIPE_OK)
		return NULL;
	s->inflight += n;
	pthread_mutex_unlock(&s->mu);
	buf = malloc(n ? n : 1);
	pthread_mutex_lock(&s->mu);
	if (buf == NULL) {
		s->inflight -= n;
		sp_err_set(err, SHARDPIPE_ERR_NOMEM,
			   "out of memory for %zu bytes of an upload", n);
		fail_locked(s, err);
	}
	return buf;
}

static int s3_write(struct store *base, const char *key,
		    const struct iovec *parts, size_t n, struct sp_err *err)
{
	struct store_s3 *s = (struct store_s3 *)base;
	uint64_t total = 0, part = s->cfg.part_size;
	struct upload *up = NULL;
	struct job **jobs;
	uint32_t nparts = 1;
	char *k = s3_key(&s->cfg, key);
	int rc = SHARDPIPE_OK;

	for (size_t i = 0; i < n; i++)
		total += parts[i].iov_len;
	if (total > part) {
		/* Parts grow for objects S3's 10000 parts could not hold. */
		if (sp_ceil_div(total, part) > S3_MAX_PARTS)
			part = sp_ceil_div(total, S3_MAX_PARTS);
		nparts = (uint32_t)sp_ceil_div(total, part);
		up = calloc(1, sizeof(*up));
		if (up != NULL) {
			up->key = k;
			up->nparts = nparts;
			up->bytes = total;
			up->etags = calloc(nparts, sizeof(char *));
			up->part_len = part;
			if (s->exclusive)
				up->crcs = calloc(nparts, sizeof(uint32_t));
			k = NULL;
		}
	}
	/* Every part gets a job, so that the last to finish completes or
	 * aborts the upload: all of them exist before the first is queued. */
	jobs = calloc(nparts, sizeof(*jobs));
	for (uint32_t i = 0; jobs != NULL && i < nparts; i++)
		if ((jobs[i] = calloc(1, sizeof(**jobs))) == NULL)
			rc = SHARDPIPE_ERR_NOMEM;
	if (jobs == NULL || rc != SHARDPIPE_OK ||
	    (nparts > 1 ? up == NULL || up->etags == NULL ||
			  (s->exclusive && up->crcs == NULL)
			: k == NULL)) {
		for (uint32_t i = 0; jobs != NULL && i < nparts; i++)
			free(jobs[i]);
		free(jobs);
		if (up != NULL)
			upload_free(up);
		free(k);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	jobs[0]->key = k;
	pthread_mutex_lock(&s->mu);
	for (uint32_t i = 0; i < nparts; i++) {
		struct job *j = jobs[i];
		uint64_t off = (uint64_t)i * part;

		j->up = up;
		j->part = i + 1;
		j->len = (size_t)(total - off < part ? total - off : part);
		/* Once the store has failed, the rest of an upload's parts
		 * go without bytes: the last one aborts it. */
		if (rc == SHARDPIPE_OK &&
		    (j->buf = take_buffer_locked(s, j->len, err)) == NULL)
			rc = err->code;
		if (j->buf != NULL) {
			pthread_mutex_unlock(&s->mu);
			copy_range(j->buf, parts, n, off, j->len);
			pthread_mutex_lock(&s->mu);
		}
		if (up == NULL && j->buf == NULL) {
			free(j->key);
			free(j);
			break;
		}
		enqueue_locked(s, j);
	}
	pthread_mutex_unlock(&s->mu);
	free(jobs);
	return rc;
}

static int s3_write_meta(struct store *base, const char *json, size_t len,
			 struct sp_err *err)
{
	struct store_s3 *s = (struct store_s3 *)base;
	char *copy = malloc(len ? len : 1);
	int rc;

	SP_RETURN_IF(copy == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	memcpy(copy, json, len);
	pthread_mutex_lock(&s->mu);
	rc = sticky_locked(s, err);
	if (rc == SHARDPIPE_OK) {
		/* A newer zarr.json replaces one still waiting: it
		 * advertises at least as much. */
		free(s->meta);
		s->meta = copy;
		s->meta_len = len;
		copy = NULL;
		s->undone_old += s->undone_new;
		s->undone_new = 0;
		s->gen++;
		pthread_cond_broadcast(&s->cv);
	}
	pthread_mutex_unlock(&s->mu);
	free(copy);
	return rc;
}

static int s3_sync(struct store *base, struct sp_err *err)
{
	struct store_s3 *s = (struct store_s3 *)base;
	int rc;

	pthread_mutex_lock(&s->mu);
	while (s->head != NULL || s->undone_old != 0 || s->undone_new != 0 ||
	       s->meta != NULL || s->meta_busy)
		pthread_cond_wait(&s->cv, &s->mu);
	rc = sticky_locked(s, err);
	pthread_mutex_unlock(&s->mu);
	return rc;
}

static uint64_t s3_pool_bytes(const struct store *base)
{
	return ((const struct store_s3 *)base)->budget;
}

static void stop_uploaders(struct store_s3 *s)
{
	pthread_mutex_lock(&s->mu);
	s->stop = 1;
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	for (int i = 0; i < s->nthreads; i++)
		pthread_join(s->threads[i], NULL);
	s->nthreads = 0;
}

static void s3_free(struct store *base)
{
	struct store_s3 *s = (struct store_s3 *)base;
	struct sp_err e;

	/* What is queued still runs (a failed stream's jobs only release
	 * their memory and abort their uploads). */
	if (s->nthreads > 0)
		s3_sync(base, &e);
	stop_uploaders(s);
	for (int i = 0; s->conns != NULL && i < s->cfg.uploads; i++)
		s3_conn_free(s->conns[i]);
	free(s->conns);
	free(s->threads);
	s3_conn_free(s->conn);
	s3_config_free(&s->cfg);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->conn_mu);
	pthread_mutex_destroy(&s->mu);
	free(s);
}

struct delete_ctx {
	struct store_s3 *s;
	struct sp_err *err;
};

/* key below the store's prefix; the listings' keys all start with it. */
static const char *rel_key(const struct store_s3 *s, const char *key)
{
	return key + (*s->cfg.prefix ? strlen(s->cfg.prefix) + 1 : 0);
}

/* Whether rel is a key a store of ours writes below c/: every component
 * after "c" a decimal number, as the directory store's overwrite has it. */
static int is_chunk_key(const char *rel)
{
	const char *p = rel + 2;

	if (strncmp(rel, "c/", 2) != 0)
		return 0;
	for (;;) {
		size_t n = strcspn(p, "/");

		if (!store_is_key_part(p, n))
			return 0;
		if (p[n] == '\0')
			return 1;
		p += n + 1;
	}
}

static int delete_shard_key(void *user, const char *key)
{
	struct delete_ctx *d = user;

	if (!is_chunk_key(rel_key(d->s, key)))
		return SHARDPIPE_OK;
	return do_delete(d->s->conn, key, d->err);
}

static int s3_create(struct store *base, struct sp_err *err)
{
	struct store_s3 *s = (struct store_s3 *)base;
	int n = s->cfg.uploads;

	if (s->overwrite && s->store_exists) {
		/* The old metadata first, so that no reader pairs it with
		 * the new shards; then the shards it had. */
		char *meta = s3_key(&s->cfg, "zarr.json");
		char *c = s3_key(&s->cfg, "c/");
		struct delete_ctx d = { s, err };
		int rc = meta == NULL || c == NULL
				 ? sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					      "out of memory")
				 : do_delete(s->conn, meta, err);

		if (rc == SHARDPIPE_OK)
			rc = s3_list(s->conn, c, 1000, delete_shard_key, &d,
				       err);
		free(meta);
		free(c);
		SP_FORWARD(rc);
	}
	s->threads = calloc((size_t)n, sizeof(*s->threads));
	s->conns = calloc((size_t)n, sizeof(*s->conns));
	SP_RETURN_IF(s->threads == NULL || s->conns == NULL, err,
		     SHARDPIPE_ERR_NOMEM, "out of memory");
	for (int i = 0; i < n; i++)
		SP_FORWARD(s3_conn_new(&s->conns[i], &s->cfg, err));
	pthread_mutex_lock(&s->mu);
	for (int i = 0; i < n; i++) {
		int e = pthread_create(&s->threads[i], NULL, uploader, s);

		if (e != 0) {
			pthread_mutex_unlock(&s->mu);
			stop_uploaders(s);
			return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "cannot start an upload thread (%s)",
					  strerror(e));
		}
		s->nthreads = i + 1;
	}
	pthread_mutex_unlock(&s->mu);
	return SHARDPIPE_OK;
}

/* A shard of the rewritten shard row left empty (doc/design.md §29): the
 * old object goes.  On the writer thread, after every write queued before
 * it and before the zarr.json that follows them; no write of this key is
 * queued in this run.  A 404 means it was not there. */
static int s3_remove(struct store *base, const char *key, struct sp_err *err)
{
	struct store_s3 *s = (struct store_s3 *)base;
	char *k = s3_key(&s->cfg, key);
	struct s3_resp rs;
	int rc;

	SP_RETURN_IF(k == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	pthread_mutex_lock(&s->conn_mu);
	rc = s3_request(s->conn, &(struct s3_req){ .method = "DELETE",
						   .key = k,
						   .ok_status = 404 },
			&rs, err);
	pthread_mutex_unlock(&s->conn_mu);
	s3_resp_free(&rs);
	free(k);
	return rc;
}

/* An unfinished multipart upload of this array (zarr.json or a chunk key,
 * never a key beside them): aborted, its parts gone.  NoSuchUpload (404):
 * done meanwhile. */
static int abort_left_upload(void *user, const char *key, const char *id)
{
	struct delete_ctx *d = user;
	const char *rel = rel_key(d->s, key);
	struct s3_resp rs;
	char *eid, *q = NULL;
	int rc;

	if (strcmp(rel, "zarr.json") != 0 && !is_chunk_key(rel))
		return SHARDPIPE_OK;
	eid = s3_escape(id, 0);
	if (eid == NULL || asprintf(&q, "uploadId=%s", eid) < 0) {
		free(eid);
		return sp_err_set(d->err, SHARDPIPE_ERR_NOMEM,
				  "out of memory");
	}
	free(eid);
	rc = s3_request(d->s->conn, &(struct s3_req){ .method = "DELETE",
						      .key = key, .query = q,
						      .ok_status = 404 },
			&rs, d->err);
	s3_resp_free(&rs);
	free(q);
	return rc;
}

/* The first coordinate a shard key's first component (after "c/") gives,
 * or UINT64_MAX for one too large for it; -1 when it is none. */
static int first_coord(const char *name, size_t n, uint64_t *out)
{
	uint64_t i = 0;

	if (!store_is_key_part(name, n))
		return -1;
	for (size_t k = 0; k < n; k++) {
		if (i > (UINT64_MAX - 9) / 10) {
			*out = UINT64_MAX;
			return 0;
		}
		i = i * 10 + (uint64_t)(name[k] - '0');
	}
	*out = i;
	return 0;
}

struct orphans {
	struct delete_ctx d;
	uint64_t shards;
	size_t skip;            /* the length of the prefix listed */
	int depth, dim;         /* its level of the chunk tree; the rows' */
};

/* One name below the level listed (a shard key, or a common prefix
 * "N/"): above the append dim's level `dim` (doc/design.md §3.3) a
 * prefix is listed one level further down; at it, the name is gone when
 * its row N is `shards` or more. */
static int drop_row(void *user, const char *name)
{
	struct orphans *o = user;
	const char *rel = name + o->skip;
	size_t n = strcspn(rel, "/"), skip = o->skip;
	uint64_t row;
	int rc;

	if (first_coord(rel, n, &row) != 0)
		return SHARDPIPE_OK;
	if (o->depth < o->dim) {
		if (rel[n] != '/' || rel[n + 1] != '\0')
			return SHARDPIPE_OK;
		o->skip = strlen(name);
		o->depth++;
		rc = s3_list_level(o->d.s->conn, name, drop_row, o, o->d.err);
		o->depth--;
		o->skip = skip;
		return rc;
	}
	if (row < o->shards)
		return SHARDPIPE_OK;
	if (rel[n] == '\0')
		return do_delete(o->d.s->conn, name, o->d.err);
	/* A row's keys: only chunk keys go, as in an overwrite. */
	return s3_list(o->d.s->conn, name, 1000, delete_shard_key, &o->d,
		       o->d.err);
}

/*
 * What a writer killed mid-stream left (doc/design.md §29): its
 * unfinished multipart uploads of this array, which a killed process
 * could not abort, and every shard whose coordinate along storage dim
 * `dim` is `shards` or more, past what zarr.json advertises.  `temps`
 * has no meaning here: objects appear whole, an unfinished upload is no
 * object.  The tree is listed a level at a time (the delimiter "/"), so
 * only the keys of the rows removed are listed, not every shard of the
 * array (with the append dim stored as dim a, the prefixes of the dims
 * before it as well).
 */
static int s3_drop_rows(struct store *base, int dim, uint64_t temps,
			uint64_t shards, struct sp_err *err)
{
	struct store_s3 *s = (struct store_s3 *)base;
	struct orphans o = { { s, err }, shards, 0, 0, dim };
	char *root = s3_key(&s->cfg, ""), *c = s3_key(&s->cfg, "c/");
	int rc;

	(void)temps;
	if (root == NULL || c == NULL) {
		free(root);
		free(c);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	o.skip = strlen(c);
	pthread_mutex_lock(&s->conn_mu);
	rc = s3_list_uploads(s->conn, root, abort_left_upload, &o.d, err);
	if (rc != SHARDPIPE_OK) {
		char was[sizeof(err->msg)];

		memcpy(was, err->msg, sizeof(was));
		sp_err_set(err, rc, "cannot abort the multipart uploads a "
			   "killed writer may have left (continuing needs "
			   "s3:ListBucketMultipartUploads and "
			   "s3:AbortMultipartUpload): %s", was);
	}
	if (rc == SHARDPIPE_OK)
		rc = s3_list_level(s->conn, c, drop_row, &o, err);
	pthread_mutex_unlock(&s->conn_mu);
	free(root);
	free(c);
	return rc;
}

static const struct store_ops s3_ops = {
	.create = s3_create,
	.write = s3_write,
	.write_meta = s3_write_meta,
	.sync = s3_sync,
	.pool_bytes = s3_pool_bytes,
	.remove = s3_remove,
	.drop_rows = s3_drop_rows,
	.free = s3_free,
};

static int any_key(void *user, const char *key)
{
	(void)key;
	*(int *)user = 1;
	return SHARDPIPE_OK;
}

/* Whether the prefix holds a store, other objects, or nothing. */
static int survey(struct store_s3 *s, struct sp_err *err)
{
	char *dir = s3_key(&s->cfg, ""), *meta;
	struct s3_resp rs;
	int rc, found = 0;

	SP_RETURN_IF(dir == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	/* Listing first: a missing bucket or refused credentials say so
	 * here, in a body (a HEAD's 404 cannot). */
	rc = s3_list(s->conn, *s->cfg.prefix ? dir : "", 1, any_key, &found,
		       err);
	free(dir);
	SP_FORWARD(rc);
	if (!found)
		return SHARDPIPE_OK;
	meta = s3_key(&s->cfg, "zarr.json");
	SP_RETURN_IF(meta == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	rc = s3_request(s->conn, &(struct s3_req){ .method = "HEAD",
						   .key = meta,
						   .ok_status = 404 },
			&rs, err);
	free(meta);
	s3_resp_free(&rs);
	SP_FORWARD(rc);
	s->store_exists = rs.status == 200;
	SP_RETURN_IF(s->store_exists && !s->overwrite, err,
		     SHARDPIPE_ERR_EXISTS,
		     "%s: already holds a store (zarr.json); choose another "
		     "prefix or overwrite", s->cfg.url);
	/* Objects and no zarr.json: they are the user's, not a store's. */
	SP_RETURN_IF(!s->store_exists, err, SHARDPIPE_ERR_EXISTS,
		     "%s: holds objects and no zarr.json, so it is not a "
		     "store; nothing was touched", s->cfg.url);
	return SHARDPIPE_OK;
}

/* A writing store at url, its configuration read and its first
 * connection made, nothing sent yet. */
static int store_s3_new(struct store_s3 **out, const char *url,
			int overwrite, struct sp_err *err)
{
	struct store_s3 *s = calloc(1, sizeof(*s));
	int rc;

	*out = NULL;
	SP_RETURN_IF(s == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	pthread_mutex_init(&s->mu, NULL);
	pthread_mutex_init(&s->conn_mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->base.ops = &s3_ops;
	s->overwrite = overwrite;
	rc = s3_config_load(&s->cfg, url, err);
	/* Buckets that anyone may write are rare enough that a write with
	 * no credentials is a mistake to report, not a request to send. */
	if (rc == SHARDPIPE_OK && s->cfg.key_id == NULL)
		rc = sp_err_set(err, SHARDPIPE_ERR_ACCESS,
				"%s: no credentials to write with (%s): set "
				"AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
				"AWS_PROFILE and a shared credentials file",
				s->cfg.url, s->cfg.creds_from);
	if (rc == SHARDPIPE_OK) {
		/* Two parts per upload thread: one being sent, one being
		 * filled. */
		s->budget = 2 * (uint64_t)s->cfg.uploads * s->cfg.part_size;
		rc = s3_conn_new(&s->conn, &s->cfg, err);
	}
	if (rc != SHARDPIPE_OK) {
		s3_free(&s->base);
		return rc;
	}
	*out = s;
	return SHARDPIPE_OK;
}

int store_s3_check(struct store **out, const char *url, int overwrite,
		   struct sp_err *err)
{
	struct store_s3 *s;
	int rc;

	*out = NULL;
	SP_FORWARD(store_s3_new(&s, url, overwrite, err));
	rc = survey(s, err);
	if (rc != SHARDPIPE_OK) {
		s3_free(&s->base);
		return rc;
	}
	*out = &s->base;
	return SHARDPIPE_OK;
}

int store_s3_reopen(struct store **out, const char *url, struct sp_err *err)
{
	struct store_s3 *s;
	int rc;

	*out = NULL;
	SP_FORWARD(store_s3_new(&s, url, 0, err));
	/* The array is there (the reader's to say): no survey, nothing
	 * removed; only the upload threads, which create would start. */
	s->store_exists = 1;
	rc = s3_create(&s->base, err);
	if (rc != SHARDPIPE_OK) {
		s3_free(&s->base);
		return rc;
	}
	*out = &s->base;
	return SHARDPIPE_OK;
}

/* The top level of a region writer's prefix: the array's zarr.json and
 * its c/ tree, nothing of the user's. */
static int array_only(void *user, const char *name)
{
	struct delete_ctx *d = user;
	const char *rel = rel_key(d->s, name);

	if (strcmp(rel, "zarr.json") == 0 || strcmp(rel, "c/") == 0)
		return SHARDPIPE_OK;
	return sp_err_set(d->err, SHARDPIPE_ERR_EXISTS,
			  "%s: holds %s, not an array's object; nothing was "
			  "touched", d->s->cfg.url, rel);
}

int store_s3_region(struct store **out, const char *url, int publish,
		    struct sp_err *err)
{
	struct store_s3 *s;
	struct delete_ctx d;
	char *dir;
	int rc;

	*out = NULL;
	SP_FORWARD(store_s3_new(&s, url, 0, err));
	d = (struct delete_ctx){ s, err };
	/* Listing first, as survey does: a missing bucket or refused
	 * credentials say so here, in S3's words. */
	dir = s3_key(&s->cfg, "");
	rc = dir == NULL ? sp_err_set(err, SHARDPIPE_ERR_NOMEM,
				      "out of memory")
			 : s3_list_level(s->conn, dir, array_only, &d, err);
	free(dir);
	s->exclusive = !publish;
	s->store_exists = 1;
	if (rc == SHARDPIPE_OK)
		rc = s3_create(&s->base, err);
	if (rc != SHARDPIPE_OK) {
		s3_free(&s->base);
		return rc;
	}
	*out = &s->base;
	return SHARDPIPE_OK;
}
