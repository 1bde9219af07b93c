/*
 * s3.h - an S3 client on libcurl (doc/design.md §24): where a bucket is
 * and who we are, read from the environment the way S3 tools read it
 * (s3_config.c); one signed request with retries, and the few pieces of
 * S3's XML answers the stores need (s3.c).  Compiled only with S3
 * support (configure --with-s3).
 */
#ifndef SHARDPIPE_S3_H
#define SHARDPIPE_S3_H

#include "common.h"

/* S3 limits on multipart uploads: parts are numbered 1..10000, and each
 * part but the last must hold at least 5 MiB on AWS (other servers may
 * allow less, which the tests use) and at most 5 GiB. */
#define S3_MAX_PARTS 10000u
#define S3_MAX_PART_BYTES ((uint64_t)5 << 30)
#define S3_MIN_PART_BYTES 1024u
/* An ETag as S3 writes it, quotes included, is 34 bytes (48 for a
 * multipart object); other servers' may be longer, but not this long. */
#define S3_ETAG_MAX 128

struct s3_config {
	char *url;          /* "s3://bucket/prefix", as given, for messages */
	char *bucket;
	char *prefix;       /* key prefix without a trailing '/', or "" */
	char *region;
	/* "scheme://host[:port]" and a path below it ("" or "/path"). */
	char *scheme, *host, *base_path;
	int path_style;     /* 1: /bucket/key; 0: bucket.host/key */
	char *key_id, *secret, *token; /* key_id NULL: anonymous requests */
	char *ca_bundle;    /* AWS_CA_BUNDLE, or NULL: the system's CAs */
	char creds_from[300]; /* where the credentials came from */
	int attempts;       /* tries per request, >= 1 */
	double retry_seconds; /* no retry starts later than this after the
			       * first try */
	uint64_t part_size; /* bytes per multipart part */
	int uploads;        /* concurrent upload requests */
	int reads;          /* concurrent read requests (§24.4) */
	uint64_t read_size; /* the most bytes one ranged GET coalesces */
};

/*
 * Parse url and read the environment (doc/design.md §24.2).  Every
 * refusal names the variable or file and the value at fault.
 */
SP_INTERNAL int s3_config_load(struct s3_config *c, const char *url,
			       struct sp_err *err);
SP_INTERNAL void s3_config_free(struct s3_config *c);

/* One connection's worth of state (a libcurl easy handle): used by one
 * thread at a time, kept so that connections are reused. */
struct s3_conn;

SP_INTERNAL int s3_conn_new(struct s3_conn **out, const struct s3_config *c,
			    struct sp_err *err);
SP_INTERNAL void s3_conn_free(struct s3_conn *c);

struct s3_req {
	const char *method;  /* GET, HEAD, PUT, POST, DELETE */
	const char *key;     /* full key below the bucket, unescaped; NULL:
			      * the bucket itself */
	const char *query;   /* canonical: names sorted, values escaped */
	const void *body;
	size_t body_len;
	int ranged;          /* ask for range_len bytes at range_off */
	uint64_t range_off, range_len;
	/* With ranged: the last range_len bytes (the whole object when it
	 * is smaller), wherever they are: a shard's index at its end and
	 * the object's size in one request. */
	int suffix;
	const char *if_match; /* an ETag the object must still have */
	/* "*": write only when no object has the key (a region writer's
	 * shard, doc/design.md §30.4); the server answers 412 if one has. */
	const char *if_none_match;
	/* A successful response's body goes here when out is set (at most
	 * out_cap bytes, more is an error), else into s3_resp.text. */
	void *out;
	size_t out_cap;
	/* Retry for the whole retry_seconds whatever the attempts: for the
	 * abort that cleans up after a failure. */
	int persist;
	/* These statuses are answers, not failures (404 for a HEAD that
	 * asks whether an object exists). */
	long ok_status;
};

struct s3_resp {
	long status;
	char etag[S3_ETAG_MAX];
	uint64_t total;      /* the object's size (Content-Range or -Length) */
	size_t out_len;      /* bytes written to s3_req.out */
	char *text;          /* the body when not in out (NUL-terminated) */
	size_t text_len;
	char code[64];       /* S3's error Code, or "" */
	int attempts;        /* tries it took */
};

/*
 * Sign and send one request, retrying connection errors, 5xx, 429 and
 * S3's RequestTimeout with exponential backoff and jitter, within the
 * configured attempts and time.  Returns SHARDPIPE_OK for a 2xx answer
 * (or rq->ok_status); otherwise a library code, with a message naming
 * the S3 URL of the key, the method, the HTTP status and S3's error code
 * and message.  rs->text is freed by s3_resp_free.
 */
SP_INTERNAL int s3_request(struct s3_conn *c, const struct s3_req *rq,
			   struct s3_resp *rs, struct sp_err *err);
SP_INTERNAL void s3_resp_free(struct s3_resp *rs);

/*
 * The text of the next <tag>...</tag> in xml[*pos, len), XML entities
 * decoded, into out (cap bytes, NUL-terminated); *pos moves past it.
 * Returns 1 when found, 0 when not, -1 when it does not fit in out.
 */
SP_INTERNAL int s3_xml_next(const char *xml, size_t len, size_t *pos,
			    const char *tag, char *out, size_t cap);

/* key, escaped for a URL path or query value the way SigV4 canonicalises
 * it ('/' kept when keep_slash).  Returns a malloc'ed string or NULL. */
SP_INTERNAL char *s3_escape(const char *key, int keep_slash);

/* The full key of a store's key: "prefix/key", or key when the store is
 * the bucket's root.  A malloc'ed string or NULL. */
SP_INTERNAL char *s3_key(const struct s3_config *c, const char *key);

/*
 * Call each(user, key) for every key below prefix (a full key prefix, ""
 * for the whole bucket), pages of up to max_keys (1..1000) with
 * ListObjectsV2; max_keys below 1000 stops after the first page.  Stops
 * at each's first nonzero return and returns it.
 */
SP_INTERNAL int s3_list(struct s3_conn *conn, const char *prefix,
			int max_keys, int (*each)(void *, const char *),
			void *user, struct sp_err *err);

/*
 * As s3_list, one level down only (ListObjectsV2 with the delimiter "/"):
 * each(user, name) for every key directly below prefix and for every
 * common prefix one level down, the latter ending in '/'.  Every page.
 */
SP_INTERNAL int s3_list_level(struct s3_conn *conn, const char *prefix,
			      int (*each)(void *, const char *), void *user,
			      struct sp_err *err);

/*
 * Call each(user, key, upload_id) for every multipart upload begun and
 * neither completed nor aborted whose key starts with prefix
 * (ListMultipartUploads, every page).  Stops at each's first nonzero
 * return and returns it.
 */
SP_INTERNAL int s3_list_uploads(struct s3_conn *conn, const char *prefix,
				int (*each)(void *, const char *,
					    const char *),
				void *user, struct sp_err *err);

#endif
