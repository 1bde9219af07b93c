/*
 * s3.c - one S3 request over libcurl, signed with libcurl's own AWS
 * Signature V4, retried when S3 or the network says to try again, the
 * pieces of S3's XML the stores read, and listing objects and multipart
 * uploads (doc/design.md §24.1, §24.3, §29).
 */
#define _GNU_SOURCE
#include "s3.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

/* Error and listing bodies: a page of 1000 keys is about 300 KiB. */
#define TEXT_MAX (4u << 20)
/* Backoff before retry k (from 0): BASE * 2^k, at most CAP, of which a
 * random half is waited ("equal jitter"), so that the uploads that fail
 * together do not retry together. */
#define BACKOFF_BASE 0.1
#define BACKOFF_CAP 5.0
/* A connection that moves less than 1 byte/s for this long is dead. */
#define STALL_SECONDS 60L
#define CONNECT_SECONDS 10L

struct s3_conn {
	CURL *h;
	const struct s3_config *cfg;
	char sigv4[96];
	char errbuf[CURL_ERROR_SIZE];
	unsigned seed;
};

/* The transfer in progress: where the body comes from and goes to. */
struct xfer {
	const struct s3_req *rq;
	struct s3_resp *rs;
	CURL *h;
	size_t sent;
	int overflow;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

/* libcurl's global state, set up once before any handle and never torn
 * down: the library cannot know whether its host program still uses
 * libcurl. */
static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int s3_conn_new(struct s3_conn **out, const struct s3_config *cfg,
		struct sp_err *err)
{
	struct s3_conn *c;

	*out = NULL;
	pthread_once(&curl_once, curl_init);
	SP_RETURN_IF(curl_init_rc != CURLE_OK, err, SHARDPIPE_ERR_IO,
		     "libcurl cannot start: %s",
		     curl_easy_strerror(curl_init_rc));
	c = calloc(1, sizeof(*c));
	SP_RETURN_IF(c == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	c->h = curl_easy_init();
	if (c->h == NULL) {
		free(c);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
				  "libcurl cannot make a handle");
	}
	c->cfg = cfg;
	snprintf(c->sigv4, sizeof(c->sigv4), "aws:amz:%s:s3", cfg->region);
	c->seed = (unsigned)(uintptr_t)c ^ (unsigned)time(NULL);
	*out = c;
	return SHARDPIPE_OK;
}

void s3_conn_free(struct s3_conn *c)
{
	if (c == NULL)
		return;
	curl_easy_cleanup(c->h);
	free(c);
}

void s3_resp_free(struct s3_resp *rs)
{
	free(rs->text);
	rs->text = NULL;
	rs->text_len = 0;
}

char *s3_escape(const char *key, int keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(key);
	char *out = malloc(3 * n + 1), *o = out;

	if (out == NULL)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		/* SigV4's unreserved set; everything else is %XX. */
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' ||
		    *p == '_' || *p == '~' || (keep_slash && *p == '/')) {
			*o++ = (char)*p;
		} else {
			*o++ = '%';
			*o++ = hex[*p >> 4];
			*o++ = hex[*p & 15];
		}
	}
	*o = '\0';
	return out;
}

/* The request's URL: path-style puts the bucket in the path, virtual-
 * hosted style in the host name. */
static char *make_url(const struct s3_config *c, const struct s3_req *rq)
{
	char *key = s3_escape(rq->key != NULL ? rq->key : "", 1), *url = NULL;
	const char *q = rq->query != NULL ? rq->query : "";
	int n;

	if (key == NULL)
		return NULL;
	if (c->path_style)
		n = asprintf(&url, "%s://%s%s/%s%s%s%s", c->scheme, c->host,
			     c->base_path, c->bucket,
			     rq->key != NULL ? "/" : "", key, *q ? "?" : "");
	else
		n = asprintf(&url, "%s://%s.%s%s/%s%s", c->scheme, c->bucket,
			     c->host, c->base_path, key, *q ? "?" : "");
	free(key);
	if (n < 0)
		return NULL;
	if (*q) {
		char *full = NULL;

		n = asprintf(&full, "%s%s", url, q);
		free(url);
		url = n < 0 ? NULL : full;
	}
	return url;
}

static size_t on_read(char *buf, size_t size, size_t nitems, void *arg)
{
	struct xfer *x = arg;
	size_t n = size * nitems, left = x->rq->body_len - x->sent;

	if (n > left)
		n = left;
	memcpy(buf, (const uint8_t *)x->rq->body + x->sent, n);
	x->sent += n;
	return n;
}

static size_t on_write(char *buf, size_t size, size_t nitems, void *arg)
{
	struct xfer *x = arg;
	struct s3_resp *rs = x->rs;
	size_t n = size * nitems;
	long status = 0;

	curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &status);
	if (status / 100 == 2 && x->rq->out != NULL) {
		if (n > x->rq->out_cap - rs->out_len) {
			x->overflow = 1;
			return 0;
		}
		memcpy((uint8_t *)x->rq->out + rs->out_len, buf, n);
		rs->out_len += n;
		return n;
	}
	if (n > TEXT_MAX - rs->text_len) {
		x->overflow = 1;
		return 0;
	}
	char *t = realloc(rs->text, rs->text_len + n + 1);
	if (t == NULL) {
		x->overflow = 1;
		return 0;
	}
	memcpy(t + rs->text_len, buf, n);
	rs->text = t;
	rs->text_len += n;
	t[rs->text_len] = '\0';
	return n;
}

/* The value of header line `line` when it is header `name`, else NULL. */
static const char *header_value(const char *line, size_t n, const char *name,
				size_t *vlen)
{
	size_t k = strlen(name);
	const char *v, *e = line + n;

	if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
		return NULL;
	for (v = line + k + 1; v < e && (*v == ' ' || *v == '\t'); v++)
		;
	while (e > v && (e[-1] == '\r' || e[-1] == '\n' || e[-1] == ' '))
		e--;
	*vlen = (size_t)(e - v);
	return v;
}

static size_t on_header(char *buf, size_t size, size_t nitems, void *arg)
{
	struct xfer *x = arg;
	struct s3_resp *rs = x->rs;
	size_t n = size * nitems, vlen;
	const char *v;

	/* A status line starts a new response (after 100 Continue). */
	if (n >= 5 && strncmp(buf, "HTTP/", 5) == 0) {
		rs->etag[0] = '\0';
		rs->total = 0;
	} else if ((v = header_value(buf, n, "ETag", &vlen)) != NULL) {
		if (vlen < sizeof(rs->etag)) {
			memcpy(rs->etag, v, vlen);
			rs->etag[vlen] = '\0';
		}
	} else if ((v = header_value(buf, n, "Content-Range", &vlen)) != NULL) {
		const char *slash = memchr(v, '/', vlen);

		if (slash != NULL && slash[1] != '*')
			rs->total = strtoull(slash + 1, NULL, 10);
	} else if ((v = header_value(buf, n, "Content-Length", &vlen)) != NULL) {
		if (rs->total == 0)
			rs->total = strtoull(v, NULL, 10);
	}
	return n;
}

int s3_xml_next(const char *xml, size_t len, size_t *pos, const char *tag,
		char *out, size_t cap)
{
	char open[72], close[72];
	const char *a, *b, *end = xml + len;
	size_t o = 0;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	if (*pos >= len)
		return 0;
	a = memmem(xml + *pos, len - *pos, open, strlen(open));
	if (a == NULL)
		return 0;
	a += strlen(open);
	b = memmem(a, (size_t)(end - a), close, strlen(close));
	if (b == NULL)
		return 0;
	*pos = (size_t)(b - xml) + strlen(close);
	/* The five entities and numeric references below 128: S3 escapes
	 * nothing else in keys, ids and messages. */
	for (const char *p = a; p < b; p++) {
		char c = *p;

		if (c == '&') {
			static const struct {
				const char *name;
				char c;
			} ent[] = { { "&amp;", '&' }, { "&lt;", '<' },
				    { "&gt;", '>' }, { "&quot;", '"' },
				    { "&apos;", '\'' } };
			size_t k;

			for (k = 0; k < sizeof(ent) / sizeof(ent[0]); k++) {
				size_t l = strlen(ent[k].name);

				if ((size_t)(b - p) >= l &&
				    memcmp(p, ent[k].name, l) == 0) {
					c = ent[k].c;
					p += l - 1;
					break;
				}
			}
			if (k == sizeof(ent) / sizeof(ent[0]) && p + 2 < b &&
			    p[1] == '#') {
				char *e;
				unsigned long v = p[2] == 'x'
					? strtoul(p + 3, &e, 16)
					: strtoul(p + 2, &e, 10);

				if (e < b && *e == ';' && v > 0 && v < 128) {
					c = (char)v;
					p = e;
				}
			}
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = c;
	}
	out[o] = '\0';
	return 1;
}

/* S3's error code and message from an error body. */
static void error_code(struct s3_resp *rs, char *msg, size_t cap)
{
	size_t pos = 0;

	rs->code[0] = '\0';
	msg[0] = '\0';
	if (rs->text == NULL)
		return;
	if (s3_xml_next(rs->text, rs->text_len, &pos, "Code", rs->code,
			sizeof(rs->code)) != 1)
		rs->code[0] = '\0';
	pos = 0;
	if (s3_xml_next(rs->text, rs->text_len, &pos, "Message", msg, cap) != 1)
		msg[0] = '\0';
}

static int retryable_curl(CURLcode e)
{
	switch (e) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
		return 1;
	default:
		return 0;
	}
}

/* 409 ConditionalRequestConflict: a conditional write met another
 * write of the key in flight; AWS asks for a retry, which then finds the
 * key taken (412) or free. */
static int retryable_status(long status, const char *code)
{
	return status >= 500 || status == 429 ||
	       (status == 400 && strcmp(code, "RequestTimeout") == 0) ||
	       (status == 409 && strcmp(code, "ConditionalRequestConflict") == 0);
}

/* The library code for a final HTTP failure. */
static int status_code(long status, const char *code)
{
	if (status == 401 || status == 403 ||
	    strcmp(code, "InvalidToken") == 0 ||
	    strcmp(code, "ExpiredToken") == 0)
		return SHARDPIPE_ERR_ACCESS;
	if (strcmp(code, "NoSuchBucket") == 0 ||
	    strcmp(code, "InvalidBucketName") == 0 ||
	    strcmp(code, "PermanentRedirect") == 0 || status == 301)
		return SHARDPIPE_ERR_PATH;
	return SHARDPIPE_ERR_IO;
}

/* What to add to the message so that the user knows what to change. */
static const char *hint(const struct s3_config *c, long status,
			const char *code)
{
	if (strcmp(code, "NoSuchBucket") == 0)
		return " (the bucket does not exist)";
	if (status == 301 || strcmp(code, "PermanentRedirect") == 0 ||
	    strcmp(code, "AuthorizationHeaderMalformed") == 0)
		return " (the bucket is in another region: set AWS_REGION)";
	if ((status == 401 || status == 403) && c->key_id == NULL)
		return " (no credentials were found: set AWS_ACCESS_KEY_ID "
		       "and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE)";
	if (status == 412)
		return " (the object changed while it was being read)";
	if (strcmp(code, "ExpiredToken") == 0)
		return " (the temporary credentials have expired)";
	if (strcmp(code, "InvalidAccessKeyId") == 0 ||
	    strcmp(code, "SignatureDoesNotMatch") == 0 ||
	    strcmp(code, "InvalidToken") == 0)
		return " (check the credentials)";
	return "";
}

static struct curl_slist *headers(const struct s3_conn *c,
				  const struct s3_req *rq, int *bad)
{
	struct curl_slist *h = NULL, *t;
	char line[256];
	/* The payload is not hashed: curl could hash only bodies it holds
	 * whole, and TLS already protects it on the way.  (No "Expect:" to
	 * turn 100-continue off: curl would sign the header it then leaves
	 * out.) */
	const char *fixed[] = { "x-amz-content-sha256: UNSIGNED-PAYLOAD" };

	*bad = 0;
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		t = curl_slist_append(h, fixed[i]);
		*bad |= t == NULL;
		h = t ? t : h;
	}
	if (c->cfg->token != NULL) {
		char *tok = NULL;

		if (asprintf(&tok, "x-amz-security-token: %s",
			     c->cfg->token) < 0)
			tok = NULL;
		t = tok ? curl_slist_append(h, tok) : NULL;
		free(tok);
		*bad |= t == NULL;
		h = t ? t : h;
	}
	if (rq->ranged && rq->suffix) {
		snprintf(line, sizeof(line), "Range: bytes=-%llu",
			 (unsigned long long)rq->range_len);
		t = curl_slist_append(h, line);
		*bad |= t == NULL;
		h = t ? t : h;
	} else if (rq->ranged) {
		snprintf(line, sizeof(line), "Range: bytes=%llu-%llu",
			 (unsigned long long)rq->range_off,
			 (unsigned long long)(rq->range_off + rq->range_len - 1));
		t = curl_slist_append(h, line);
		*bad |= t == NULL;
		h = t ? t : h;
	}
	if (rq->if_match != NULL) {
		snprintf(line, sizeof(line), "If-Match: %s", rq->if_match);
		t = curl_slist_append(h, line);
		*bad |= t == NULL;
		h = t ? t : h;
	}
	if (rq->if_none_match != NULL) {
		snprintf(line, sizeof(line), "If-None-Match: %s",
			 rq->if_none_match);
		t = curl_slist_append(h, line);
		*bad |= t == NULL;
		h = t ? t : h;
	}
	return h;
}

static void set_method(CURL *h, const struct s3_req *rq)
{
	if (strcmp(rq->method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(rq->method, "PUT") == 0 ||
		   strcmp(rq->method, "POST") == 0) {
		curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
		curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE,
				 (curl_off_t)rq->body_len);
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
	} else if (strcmp(rq->method, "GET") != 0) {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
	}
}

/* One attempt.  Returns the curl result; rs holds the answer. */
static CURLcode attempt(struct s3_conn *c, const struct s3_req *rq,
			const char *url, struct curl_slist *hdr,
			struct s3_resp *rs, int *overflow)
{
	struct xfer x = { .rq = rq, .rs = rs, .h = c->h };
	CURL *h = c->h;
	CURLcode e;

	s3_resp_free(rs);
	memset(rs, 0, sizeof(*rs));
	curl_easy_reset(h);
	c->errbuf[0] = '\0';
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, CONNECT_SECONDS);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, STALL_SECONDS);
	curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
	curl_easy_setopt(h, CURLOPT_READDATA, &x);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, &x);
	if (c->cfg->ca_bundle != NULL)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->cfg->ca_bundle);
	if (c->cfg->key_id != NULL) {
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, c->sigv4);
		curl_easy_setopt(h, CURLOPT_USERNAME, c->cfg->key_id);
		curl_easy_setopt(h, CURLOPT_PASSWORD, c->cfg->secret);
	}
	set_method(h, rq);
	e = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &rs->status);
	*overflow = x.overflow;
	return e;
}

/* Whether the answer is the one asked for. */
static int answered(const struct s3_req *rq, const struct s3_resp *rs)
{
	return rs->status / 100 == 2 ||
	       (rq->ok_status != 0 && rs->status == rq->ok_status);
}

/* Seconds to wait before try k + 1. */
static double backoff(struct s3_conn *c, int k)
{
	double cap = BACKOFF_BASE * (double)(1u << (k < 16 ? k - 1 : 15));

	if (cap > BACKOFF_CAP)
		cap = BACKOFF_CAP;
	return cap / 2 + cap / 2 * (double)rand_r(&c->seed) / RAND_MAX;
}

/* The outcome of the last try, as the library's code and message. */
static int outcome(struct s3_conn *c, const struct s3_req *rq,
		   const struct s3_resp *rs, CURLcode e, int overflow,
		   const char *msg, double secs, struct sp_err *err)
{
	const struct s3_config *cfg = c->cfg;
	const char *key = rq->key != NULL ? rq->key : "";
	int k = rs->attempts;

	/* Reads must get what they asked for, not a whole object from a
	 * server that ignored the range. */
	if (e == CURLE_OK && answered(rq, rs))
		return rq->out != NULL && rs->status == 200 && rq->ranged &&
				       rq->range_off != 0 && !rq->suffix
			       ? sp_err_set(err, SHARDPIPE_ERR_IO,
					    "s3://%s/%s: %s: the server ignored "
					    "the byte range", cfg->bucket, key,
					    rq->method)
			       : SHARDPIPE_OK;
	if (overflow)
		return sp_err_set(err, SHARDPIPE_ERR_FORMAT,
				  "s3://%s/%s: %s: the answer is larger than "
				  "asked", cfg->bucket, key, rq->method);
	if (e != CURLE_OK)
		return sp_err_set(err, SHARDPIPE_ERR_IO,
				  "s3://%s/%s: %s: %s%s%s%s after %d attempt%s "
				  "in %.1f s", cfg->bucket, key, rq->method,
				  curl_easy_strerror(e),
				  c->errbuf[0] ? " (" : "", c->errbuf,
				  c->errbuf[0] ? ")" : "", k, k == 1 ? "" : "s",
				  secs);
	return sp_err_set(err, status_code(rs->status, rs->code),
			  "s3://%s/%s: %s: HTTP %ld%s%s%s%s%s%s after %d "
			  "attempt%s in %.1f s", cfg->bucket, key, rq->method,
			  rs->status, rs->code[0] ? " " : "", rs->code,
			  msg[0] ? " (" : "", msg, msg[0] ? ")" : "",
			  hint(cfg, rs->status, rs->code), k,
			  k == 1 ? "" : "s", secs);
}

int s3_request(struct s3_conn *c, const struct s3_req *rq,
	       struct s3_resp *rs, struct sp_err *err)
{
	const struct s3_config *cfg = c->cfg;
	char *url = make_url(cfg, rq), msg[256] = "";
	struct curl_slist *hdr;
	double t0 = now();
	int bad, overflow = 0, rc, k;
	CURLcode e;

	memset(rs, 0, sizeof(*rs));
	hdr = headers(c, rq, &bad);
	if (url == NULL || bad) {
		free(url);
		curl_slist_free_all(hdr);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	for (k = 1;; k++) {
		double delay;
		int again;

		e = attempt(c, rq, url, hdr, rs, &overflow);
		if (e == CURLE_OK) {
			error_code(rs, msg, sizeof(msg));
			/* CompleteMultipartUpload may fail after its 200. */
			if (rs->status / 100 == 2 && rs->code[0] != '\0' &&
			    rq->out == NULL)
				rs->status = 500;
			if (answered(rq, rs))
				break;
			again = retryable_status(rs->status, rs->code);
		} else {
			again = !overflow && retryable_curl(e);
		}
		/* No try starts after the time allowed. */
		delay = backoff(c, k);
		if (!again || (k >= cfg->attempts && !rq->persist) ||
		    now() + delay - t0 > cfg->retry_seconds)
			break;
		struct timespec ts = {
			(time_t)delay,
			(long)((delay - (double)(time_t)delay) * 1e9)
		};
		nanosleep(&ts, NULL);
	}
	rs->attempts = k;
	rc = outcome(c, rq, rs, e, overflow, msg, now() - t0, err);
	curl_slist_free_all(hdr);
	free(url);
	return rc;
}

char *s3_key(const struct s3_config *c, const char *key)
{
	char *k = NULL;

	if (*c->prefix == '\0')
		return strdup(key);
	if (asprintf(&k, "%s/%s", c->prefix, key) < 0)
		return NULL;
	return k;
}

/*
 * The next <tag> element of xml[*pos, len) as the range of its raw text
 * between the tags, [*a, *b): for elements holding elements, whose
 * entities s3_xml_next must decode once, in the inner one.  1 when
 * found, 0 when not.
 */
static int xml_element(const char *xml, size_t len, size_t *pos,
		       const char *tag, size_t *a, size_t *b)
{
	char open[72], close[72];
	const char *s, *e;

	snprintf(open, sizeof(open), "<%s>", tag);
	snprintf(close, sizeof(close), "</%s>", tag);
	if (xml == NULL || *pos >= len)
		return 0;
	s = memmem(xml + *pos, len - *pos, open, strlen(open));
	if (s == NULL)
		return 0;
	s += strlen(open);
	e = memmem(s, (size_t)(xml + len - s), close, strlen(close));
	if (e == NULL)
		return 0;
	*a = (size_t)(s - xml);
	*b = (size_t)(e - xml);
	*pos = *b + strlen(close);
	return 1;
}

/* Whether a listing's answer says there is more: "true" in IsTruncated. */
static int truncated(const struct s3_resp *rs)
{
	char v[8];
	size_t pos = 0;

	return s3_xml_next(rs->text, rs->text_len, &pos, "IsTruncated", v,
			   sizeof(v)) == 1 &&
	       strcmp(v, "true") == 0;
}

/*
 * ListObjectsV2 below prefix: each(user, key) for every key, and with
 * level (the delimiter "/") for every common prefix one level down too.
 * Pages of max_keys; below 1000, the first page only.
 */
static int list_objects(struct s3_conn *conn, const char *prefix,
			int max_keys, int level,
			int (*each)(void *, const char *), void *user,
			struct sp_err *err)
{
	char *token = NULL, *eprefix = s3_escape(prefix, 0);
	char key[1200];
	int rc = SHARDPIPE_OK;

	SP_RETURN_IF(eprefix == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory");
	for (;;) {
		struct s3_resp rs;
		char *query = NULL, *etoken = NULL;
		size_t pos = 0, a, b;
		int found;

		/* SigV4 wants the parameters sorted by name. */
		if (token != NULL && (etoken = s3_escape(token, 0)) == NULL)
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
		else if (asprintf(&query, "%s%s%s%slist-type=2&max-keys=%d&"
				  "prefix=%s",
				  etoken ? "continuation-token=" : "",
				  etoken ? etoken : "", etoken ? "&" : "",
				  level ? "delimiter=%2F&" : "", max_keys,
				  eprefix) < 0)
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
		free(etoken);
		if (rc != SHARDPIPE_OK)
			break;
		rc = s3_request(conn, &(struct s3_req){ .method = "GET",
							 .query = query },
				&rs, err);
		free(query);
		while (rc == SHARDPIPE_OK &&
		       (found = s3_xml_next(rs.text, rs.text_len, &pos, "Key",
					    key, sizeof(key))) != 0) {
			if (found < 0)
				rc = sp_err_set(err, SHARDPIPE_ERR_FORMAT,
						"listing %s: a key longer than "
						"S3 allows", prefix);
			else
				rc = each(user, key);
		}
		/* The answer's own <Prefix> echoes the request: only those
		 * inside <CommonPrefixes> are names. */
		pos = 0;
		while (rc == SHARDPIPE_OK && level &&
		       xml_element(rs.text, rs.text_len, &pos,
				   "CommonPrefixes", &a, &b)) {
			size_t in = 0;

			found = s3_xml_next(rs.text + a, b - a, &in, "Prefix",
					    key, sizeof(key));
			if (found < 0)
				rc = sp_err_set(err, SHARDPIPE_ERR_FORMAT,
						"listing %s: a prefix longer "
						"than S3 allows", prefix);
			else if (found > 0)
				rc = each(user, key);
		}
		if (rc == SHARDPIPE_OK && max_keys == 1000 && truncated(&rs)) {
			free(token);
			token = malloc(1200);
			pos = 0;
			if (token == NULL ||
			    s3_xml_next(rs.text, rs.text_len, &pos,
					"NextContinuationToken", token,
					1200) != 1)
				rc = sp_err_set(err, SHARDPIPE_ERR_FORMAT,
						"listing %s: truncated without "
						"a continuation token", prefix);
			s3_resp_free(&rs);
			if (rc != SHARDPIPE_OK)
				break;
			continue;
		}
		s3_resp_free(&rs);
		break;
	}
	free(token);
	free(eprefix);
	return rc;
}

int s3_list(struct s3_conn *conn, const char *prefix, int max_keys,
	    int (*each)(void *, const char *), void *user, struct sp_err *err)
{
	return list_objects(conn, prefix, max_keys, 0, each, user, err);
}

int s3_list_level(struct s3_conn *conn, const char *prefix,
		  int (*each)(void *, const char *), void *user,
		  struct sp_err *err)
{
	return list_objects(conn, prefix, 1000, 1, each, user, err);
}

/* key-marker and upload-id-marker, escaped, for the page after rs; an
 * error when a truncated answer names no place to go on from. */
static int next_markers(const struct s3_resp *rs, const char *prefix,
			char **key, char **id, struct sp_err *err)
{
	char k[1200], u[1024];
	size_t pos = 0, pos2 = 0;

	free(*key);
	free(*id);
	*key = *id = NULL;
	/* An empty NextKeyMarker would start over: stop instead of
	 * listing the same page for ever. */
	SP_RETURN_IF(s3_xml_next(rs->text, rs->text_len, &pos,
				 "NextKeyMarker", k, sizeof(k)) != 1 ||
			     k[0] == '\0',
		     err, SHARDPIPE_ERR_FORMAT,
		     "listing the multipart uploads below %s: truncated "
		     "without a NextKeyMarker", prefix);
	if (s3_xml_next(rs->text, rs->text_len, &pos2, "NextUploadIdMarker",
			u, sizeof(u)) != 1)
		u[0] = '\0';
	*key = s3_escape(k, 0);
	*id = s3_escape(u, 0);
	SP_RETURN_IF(*key == NULL || *id == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory");
	return SHARDPIPE_OK;
}

int s3_list_uploads(struct s3_conn *conn, const char *prefix,
		    int (*each)(void *, const char *, const char *),
		    void *user, struct sp_err *err)
{
	char *eprefix = s3_escape(prefix, 0), *kmark = NULL, *imark = NULL;
	char key[1200], id[1024];
	int rc = SHARDPIPE_OK;

	SP_RETURN_IF(eprefix == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory");
	for (;;) {
		struct s3_resp rs;
		char *query = NULL;
		size_t pos = 0, a, b;

		/* Sorted by name, as SigV4 wants them; "uploads" last
		 * ('-' sorts before 's'). */
		if (asprintf(&query, "%s%s%sprefix=%s%s%s&uploads=",
			     kmark ? "key-marker=" : "", kmark ? kmark : "",
			     kmark ? "&" : "", eprefix,
			     imark && *imark ? "&upload-id-marker=" : "",
			     imark && *imark ? imark : "") < 0) {
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
			break;
		}
		rc = s3_request(conn, &(struct s3_req){ .method = "GET",
							 .query = query },
				&rs, err);
		free(query);
		while (rc == SHARDPIPE_OK &&
		       xml_element(rs.text, rs.text_len, &pos, "Upload", &a,
				   &b)) {
			size_t in = 0, in2 = 0;

			if (s3_xml_next(rs.text + a, b - a, &in, "Key", key,
					sizeof(key)) != 1 ||
			    s3_xml_next(rs.text + a, b - a, &in2, "UploadId",
					id, sizeof(id)) != 1)
				rc = sp_err_set(err, SHARDPIPE_ERR_FORMAT,
						"listing the multipart uploads "
						"below %s: an upload without a "
						"key or an id that fits",
						prefix);
			else
				rc = each(user, key, id);
		}
		if (rc == SHARDPIPE_OK && truncated(&rs))
			rc = next_markers(&rs, prefix, &kmark, &imark, err);
		else if (rc == SHARDPIPE_OK) {
			s3_resp_free(&rs);
			break;
		}
		s3_resp_free(&rs);
		if (rc != SHARDPIPE_OK)
			break;
	}
	free(kmark);
	free(imark);
	free(eprefix);
	return rc;
}
