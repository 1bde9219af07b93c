/*
 * s3_config.c - an s3:// URL and the environment S3 tools share: the
 * endpoint, region, addressing style, credentials (variables, then the
 * shared credentials file) and shardpipe's own upload settings
 * (doc/design.md §24.2).  The environment is read with secure_getenv, so
 * a set-uid program using the library cannot be pointed elsewhere.
 */
#define _GNU_SOURCE
#include "s3.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* A credentials or config file is a few lines; more is not one. */
#define INI_MAX_BYTES (1u << 20)
#define DEFAULT_PART_SIZE ((uint64_t)8 << 20)
#define DEFAULT_UPLOADS 4
#define MAX_UPLOADS 64
#define DEFAULT_READS 8
#define MAX_READS 64
#define DEFAULT_READ_SIZE (8u << 20)
#define MAX_READ_SIZE (256u << 20)
#define DEFAULT_ATTEMPTS 5
#define DEFAULT_RETRY_SECONDS 60

/* The first of the variables that is set and not empty. */
static const char *env_first(const char *const *names, const char **which)
{
	for (; *names != NULL; names++) {
		const char *v = secure_getenv(*names);

		if (v != NULL && *v != '\0') {
			if (which != NULL)
				*which = *names;
			return v;
		}
	}
	return NULL;
}

static const char *env(const char *name)
{
	const char *names[] = { name, NULL };

	return env_first(names, NULL);
}

static int dup_to(char **dst, const char *src, size_t n, struct sp_err *err)
{
	free(*dst);
	*dst = strndup(src, n);
	SP_RETURN_IF(*dst == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	return SHARDPIPE_OK;
}

/*
 * A whole number from variable `name`, optionally followed by k, m or g
 * (powers of 1024) when `suffix`; between lo and hi.  Unset: dflt.
 */
static int env_u64(const char *name, uint64_t dflt, uint64_t lo, uint64_t hi,
		   int suffix, uint64_t *out, struct sp_err *err)
{
	const char *v = env(name), *p;
	uint64_t x = 0;
	int shift = 0;

	*out = dflt;
	if (v == NULL)
		return SHARDPIPE_OK;
	for (p = v; *p >= '0' && *p <= '9'; p++) {
		SP_RETURN_IF(x > (UINT64_MAX - 9) / 10, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "%s=%s: too large (at most %llu)", name, v,
			     (unsigned long long)hi);
		x = x * 10 + (uint64_t)(*p - '0');
	}
	if (suffix && p > v && p[0] != '\0' && p[1] == '\0') {
		switch (*p | 0x20) {
		case 'k': shift = 10; p++; break;
		case 'm': shift = 20; p++; break;
		case 'g': shift = 30; p++; break;
		default: break;
		}
	}
	SP_RETURN_IF(p == v || *p != '\0', err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "%s=%s: not a whole number%s", name, v,
		     suffix ? " of bytes (a k, m or g suffix multiplies by "
			      "1024, 1024^2, 1024^3)" : "");
	SP_RETURN_IF(shift > 0 && x > (UINT64_MAX >> shift), err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s=%s: too large", name,
		     v);
	x <<= shift;
	SP_RETURN_IF(x < lo || x > hi, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "%s=%s: out of range %llu..%llu", name, v,
		     (unsigned long long)lo, (unsigned long long)hi);
	*out = x;
	return SHARDPIPE_OK;
}

/* s3://BUCKET[/PREFIX]: a bucket name a URL host can carry, a prefix
 * without empty components (they would make keys no tool lists back) and
 * without "." or ".." ones, which libcurl, as any HTTP client, resolves
 * in the request's path: s3://bkt/../other/x would write into the bucket
 * "other" after listing "../other/x/" in bkt. */
static int parse_url(struct s3_config *c, const char *url, struct sp_err *err)
{
	const char *b = url + 5, *slash = strchr(b, '/');
	size_t blen = slash ? (size_t)(slash - b) : strlen(b), plen;
	const char *p = slash ? slash + 1 : "";

	SP_RETURN_IF(blen == 0, err, SHARDPIPE_ERR_PATH,
		     "%s: no bucket (s3://BUCKET/PREFIX)", url);
	for (size_t i = 0; i < blen; i++)
		SP_RETURN_IF(!isalnum((unsigned char)b[i]) && b[i] != '.' &&
				     b[i] != '-' && b[i] != '_',
			     err, SHARDPIPE_ERR_PATH,
			     "%s: bucket \"%.*s\": '%c' cannot be in a bucket "
			     "name", url, (int)blen, b, b[i]);
	/* As S3's rules say; and "." or ".." would be resolved away in a
	 * path-style URL, taking the request to another bucket. */
	SP_RETURN_IF(!isalnum((unsigned char)b[0]) ||
			     !isalnum((unsigned char)b[blen - 1]),
		     err, SHARDPIPE_ERR_PATH,
		     "%s: bucket \"%.*s\": a bucket name begins and ends "
		     "with a letter or digit", url, (int)blen, b);
	plen = strlen(p);
	while (plen > 0 && p[plen - 1] == '/')
		plen--;
	for (size_t i = 0; i < plen; i++) {
		SP_RETURN_IF((unsigned char)p[i] < 0x20 || p[i] == 0x7f, err,
			     SHARDPIPE_ERR_PATH,
			     "%s: control character in the key prefix", url);
		SP_RETURN_IF(p[i] == '/' && (i == 0 || p[i - 1] == '/'), err,
			     SHARDPIPE_ERR_PATH,
			     "%s: empty component in the key prefix", url);
	}
	for (size_t i = 0, n; i < plen; i += n + 1) {
		n = strcspn(p + i, "/");
		SP_RETURN_IF(p[i] == '.' && (n == 1 || (n == 2 &&
							p[i + 1] == '.')),
			     err, SHARDPIPE_ERR_PATH,
			     "%s: a \"%.*s\" component in the key prefix (an "
			     "HTTP path would resolve it to other keys)", url,
			     (int)n, p + i);
	}
	/* S3 keys are at most 1024 bytes; "/c/<coords>" must still fit. */
	SP_RETURN_IF(plen > 512, err, SHARDPIPE_ERR_PATH,
		     "s3://%.*s/...: key prefix of %zu bytes, more than the 512 "
		     "allowed", (int)blen, b, plen);
	SP_FORWARD(dup_to(&c->url, url, strlen(url), err));
	SP_FORWARD(dup_to(&c->bucket, b, blen, err));
	return dup_to(&c->prefix, p, plen, err);
}

static int parse_endpoint(struct s3_config *c, const char *ep,
			  const char *var, struct sp_err *err)
{
	const char *host = strstr(ep, "://"), *path;
	size_t n;

	SP_RETURN_IF(host == NULL ||
			     !((host - ep == 4 && strncmp(ep, "http", 4) == 0) ||
			       (host - ep == 5 && strncmp(ep, "https", 5) == 0)),
		     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "%s=%s: not an http:// or https:// URL", var, ep);
	host += 3;
	path = host + strcspn(host, "/?#");
	SP_RETURN_IF(path == host, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "%s=%s: no host", var, ep);
	SP_RETURN_IF(strpbrk(path, "?#") != NULL, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "%s=%s: a query or fragment cannot be part of an endpoint",
		     var, ep);
	SP_FORWARD(dup_to(&c->scheme, ep, (size_t)(host - 3 - ep), err));
	SP_FORWARD(dup_to(&c->host, host, (size_t)(path - host), err));
	n = strlen(path);
	while (n > 0 && path[n - 1] == '/')
		n--;
	return dup_to(&c->base_path, path, n, err);
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

/*
 * Look up keys[0..n) in section `section` of the INI file at path (the
 * shared credentials and config files): vals[i] set (malloc'ed) for each
 * key found.  *have is 1 when the section exists.  A missing file is no
 * error; an unreadable one is, naming it.
 */
static int ini_lookup(const char *path, const char *section,
		      const char *const *keys, char **vals, int n, int *have,
		      struct sp_err *err)
{
	char line[4096];
	int in = 0, rc = SHARDPIPE_OK;
	struct stat st;
	FILE *f;
	/* O_NONBLOCK: a FIFO named here must not hang the open. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);

	*have = 0;
	if (fd < 0) {
		SP_RETURN_IF(errno != ENOENT, err, SHARDPIPE_ERR_ACCESS,
			     "%s: %s", path, strerror(errno));
		return SHARDPIPE_OK;
	}
	/* /dev/null is how one says "no such file". */
	if (fstat(fd, &st) == 0 && S_ISCHR(st.st_mode)) {
		close(fd);
		return SHARDPIPE_OK;
	}
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > INI_MAX_BYTES || (f = fdopen(fd, "r")) == NULL) {
		close(fd);
		return sp_err_set(err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				  "%s: not a regular file of at most %u bytes",
				  path, INI_MAX_BYTES);
	}
	while (rc == SHARDPIPE_OK && fgets(line, sizeof(line), f) != NULL) {
		char *s = trim(line), *eq;

		if (*s == '#' || *s == ';' || *s == '\0')
			continue;
		if (*s == '[') {
			char *end = strchr(s, ']');

			if (end != NULL) {
				*end = '\0';
				in = strcmp(trim(s + 1), section) == 0;
				*have |= in;
			}
			continue;
		}
		eq = strchr(s, '=');
		if (!in || eq == NULL)
			continue;
		*eq = '\0';
		s = trim(s);
		for (int i = 0; i < n; i++)
			if (strcmp(s, keys[i]) == 0) {
				char *v = trim(eq + 1);

				rc = dup_to(&vals[i], v, strlen(v), err);
			}
	}
	fclose(f);
	return rc;
}

/* "$HOME/.aws/NAME", or the file a variable names instead. */
static char *aws_file(const char *var, const char *name)
{
	const char *v = env(var), *home;
	char *p = NULL;

	if (v != NULL)
		return strdup(v);
	home = env("HOME");
	if (home == NULL)
		return NULL;
	if (asprintf(&p, "%s/.aws/%s", home, name) < 0)
		return NULL;
	return p;
}

/* Credentials: the variables, else the profile's in the shared
 * credentials file, else none (anonymous requests). */
static int load_credentials(struct s3_config *c, const char *profile,
			    int profile_set, struct sp_err *err)
{
	const char *id = env("AWS_ACCESS_KEY_ID");
	const char *secret = env("AWS_SECRET_ACCESS_KEY");
	const char *token = env("AWS_SESSION_TOKEN");
	static const char *const keys[] = {
		"aws_access_key_id", "aws_secret_access_key",
		"aws_session_token",
	};
	char *vals[3] = { NULL, NULL, NULL }, *path;
	int have = 0, rc;

	if (id != NULL || secret != NULL) {
		SP_RETURN_IF(id == NULL || secret == NULL, err,
			     SHARDPIPE_ERR_ACCESS,
			     "%s is set but %s is not; set both or neither",
			     id ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
			     id ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
		SP_FORWARD(dup_to(&c->key_id, id, strlen(id), err));
		SP_FORWARD(dup_to(&c->secret, secret, strlen(secret), err));
		if (token != NULL)
			SP_FORWARD(dup_to(&c->token, token, strlen(token), err));
		snprintf(c->creds_from, sizeof(c->creds_from),
			 "AWS_ACCESS_KEY_ID");
		return SHARDPIPE_OK;
	}
	path = aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials");
	if (path == NULL) {
		snprintf(c->creds_from, sizeof(c->creds_from),
			 "no credentials (no AWS_ACCESS_KEY_ID, no HOME)");
		return SHARDPIPE_OK;
	}
	rc = ini_lookup(path, profile, keys, vals, 3, &have, err);
	if (rc == SHARDPIPE_OK && have && (vals[0] == NULL || vals[1] == NULL))
		rc = sp_err_set(err, SHARDPIPE_ERR_ACCESS,
				"%s: profile [%s] lacks aws_access_key_id or "
				"aws_secret_access_key", path, profile);
	else if (rc == SHARDPIPE_OK && !have && profile_set)
		rc = sp_err_set(err, SHARDPIPE_ERR_ACCESS,
				"AWS_PROFILE=%s: no such profile in %s", profile,
				path);
	if (rc == SHARDPIPE_OK && have) {
		c->key_id = vals[0];
		c->secret = vals[1];
		c->token = vals[2];
		vals[0] = vals[1] = vals[2] = NULL;
		snprintf(c->creds_from, sizeof(c->creds_from), "%s [%s]",
			 path, profile);
	} else if (rc == SHARDPIPE_OK) {
		snprintf(c->creds_from, sizeof(c->creds_from),
			 "no credentials (no AWS_ACCESS_KEY_ID, no %s)", path);
	}
	for (int i = 0; i < 3; i++)
		free(vals[i]);
	free(path);
	return rc;
}

/* The region: the variables, else the profile's in the config file. */
static int load_region(struct s3_config *c, const char *profile,
		       struct sp_err *err)
{
	static const char *const names[] = { "AWS_REGION",
					     "AWS_DEFAULT_REGION", NULL };
	static const char *const keys[] = { "region" };
	const char *r = env_first(names, NULL);
	char *val = NULL, *path, *section = NULL;
	int have, rc;

	if (r != NULL)
		return dup_to(&c->region, r, strlen(r), err);
	path = aws_file("AWS_CONFIG_FILE", "config");
	if (path != NULL &&
	    (strcmp(profile, "default") == 0
		     ? (section = strdup(profile)) != NULL
		     : asprintf(&section, "profile %s", profile) >= 0)) {
		rc = ini_lookup(path, section, keys, &val, 1, &have, err);
		free(section);
		free(path);
		SP_FORWARD(rc);
		if (val != NULL) {
			c->region = val;
			return SHARDPIPE_OK;
		}
	} else {
		free(path);
	}
	return dup_to(&c->region, "us-east-1", 9, err);
}

static int check_region(const struct s3_config *c, struct sp_err *err)
{
	for (const char *p = c->region; *p; p++)
		SP_RETURN_IF(!isalnum((unsigned char)*p) && *p != '-', err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "region \"%s\" (AWS_REGION): '%c' cannot be in a "
			     "region name", c->region, *p);
	SP_RETURN_IF(*c->region == '\0', err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "empty region");
	return SHARDPIPE_OK;
}

static int load(struct s3_config *c, const char *url, struct sp_err *err)
{
	static const char *const endpoints[] = {
		"SHARDPIPE_S3_ENDPOINT", "AWS_ENDPOINT_URL_S3",
		"AWS_ENDPOINT_URL", NULL,
	};
	const char *profile = env("AWS_PROFILE"), *ep, *var = NULL, *style;
	int profile_set = profile != NULL;
	uint64_t v;

	if (profile == NULL)
		profile = "default";
	SP_FORWARD(parse_url(c, url, err));
	SP_FORWARD(load_region(c, profile, err));
	SP_FORWARD(check_region(c, err));
	ep = env_first(endpoints, &var);
	if (ep != NULL) {
		SP_FORWARD(parse_endpoint(c, ep, var, err));
		c->path_style = 1;
	} else {
		char *aws = NULL;
		int rc;

		if (asprintf(&aws, "https://s3.%s.amazonaws.com", c->region) < 0)
			return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "out of memory");
		rc = parse_endpoint(c, aws, "AWS_REGION", err);
		free(aws);
		SP_FORWARD(rc);
		/* A bucket name with dots does not match the certificate of
		 * *.s3.amazonaws.com as a host name. */
		c->path_style = strchr(c->bucket, '.') != NULL;
	}
	style = env("SHARDPIPE_S3_ADDRESSING");
	if (style != NULL && strcmp(style, "path") == 0)
		c->path_style = 1;
	else if (style != NULL && strcmp(style, "virtual") == 0)
		c->path_style = 0;
	else
		SP_RETURN_IF(style != NULL && strcmp(style, "auto") != 0, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "SHARDPIPE_S3_ADDRESSING=%s: not path, virtual or "
			     "auto", style);
	SP_FORWARD(load_credentials(c, profile, profile_set, err));
	if ((ep = env("AWS_CA_BUNDLE")) != NULL) {
		struct stat st;

		/* Checked here: curl would only say "problem with the SSL CA
		 * cert" at the first request. */
		SP_RETURN_IF(stat(ep, &st) != 0, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "AWS_CA_BUNDLE=%s: %s", ep, strerror(errno));
		SP_RETURN_IF(!S_ISREG(st.st_mode), err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "AWS_CA_BUNDLE=%s: not a file of certificates", ep);
		SP_FORWARD(dup_to(&c->ca_bundle, ep, strlen(ep), err));
	}
	SP_FORWARD(env_u64("SHARDPIPE_S3_PART_SIZE", DEFAULT_PART_SIZE,
			   S3_MIN_PART_BYTES, S3_MAX_PART_BYTES, 1,
			   &c->part_size, err));
	SP_FORWARD(env_u64("SHARDPIPE_S3_UPLOADS", DEFAULT_UPLOADS, 1,
			   MAX_UPLOADS, 0, &v, err));
	c->uploads = (int)v;
	SP_FORWARD(env_u64("SHARDPIPE_S3_READS", DEFAULT_READS, 1, MAX_READS,
			   0, &v, err));
	c->reads = (int)v;
	SP_FORWARD(env_u64("SHARDPIPE_S3_READ_SIZE", DEFAULT_READ_SIZE, 1,
			   MAX_READ_SIZE, 1, &c->read_size, err));
	SP_FORWARD(env_u64("AWS_MAX_ATTEMPTS", DEFAULT_ATTEMPTS, 1, 100, 0, &v,
			   err));
	c->attempts = (int)v;
	SP_FORWARD(env_u64("SHARDPIPE_S3_RETRY_SECONDS", DEFAULT_RETRY_SECONDS,
			   0, 3600, 0, &v, err));
	c->retry_seconds = (double)v;
	return SHARDPIPE_OK;
}

int s3_config_load(struct s3_config *c, const char *url, struct sp_err *err)
{
	int rc;

	memset(c, 0, sizeof(*c));
	rc = load(c, url, err);
	if (rc != SHARDPIPE_OK)
		s3_config_free(c);
	return rc;
}

void s3_config_free(struct s3_config *c)
{
	free(c->url);
	free(c->bucket);
	free(c->prefix);
	free(c->region);
	free(c->scheme);
	free(c->host);
	free(c->base_path);
	free(c->key_id);
	if (c->secret != NULL)
		explicit_bzero(c->secret, strlen(c->secret));
	free(c->secret);
	free(c->token);
	free(c->ca_bundle);
	memset(c, 0, sizeof(*c));
}
