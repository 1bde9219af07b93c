/*
 * s3-config.c - s3:// paths and the S3 environment, without a server: a
 * URL or a variable the store cannot use is refused at open, naming it,
 * before any request; a server that does not answer fails the open with
 * the key and the connection error; and whatever happens, an s3:// path
 * never becomes a directory named "s3:".  In a build without S3 support
 * every s3:// path is refused with SHARDPIPE_ERR_UNSUPPORTED, saying so.
 */
#define _GNU_SOURCE
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

static char *creds;

/* A clean slate: nothing from the user's own AWS setup, a port that
 * refuses connections, one try per request. */
static void baseline(void)
{
	static const char *const vars[] = {
		"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
		"AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION",
		"AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
		"SHARDPIPE_S3_ADDRESSING", "SHARDPIPE_S3_PART_SIZE",
		"SHARDPIPE_S3_UPLOADS", "SHARDPIPE_S3_RETRY_SECONDS",
		"AWS_CA_BUNDLE", "http_proxy", "HTTP_PROXY", "all_proxy",
		"ALL_PROXY",
	};

	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
	setenv("SHARDPIPE_S3_ENDPOINT", "http://127.0.0.1:1", 1);
	setenv("AWS_MAX_ATTEMPTS", "1", 1);
	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	setenv("AWS_SHARED_CREDENTIALS_FILE", creds, 1);
	setenv("AWS_CONFIG_FILE", "/dev/null", 1);
}

/* Opening a stream and a reader at url both fail with code, their
 * messages naming word. */
static void refused(const char *url, int code, const char *word,
		    const char *what)
{
	shardpipe_desc d;
	shardpipe_stream *s = (shardpipe_stream *)1;
	shardpipe_reader *r = (shardpipe_reader *)1;
	int rc;

	test_small_desc(&d, SHARDPIPE_CODEC_ZSTD);
	rc = shardpipe_stream_open(&s, url, &d);
	is_int(rc, code, "%s: write refused with %s", what,
	       shardpipe_strerror(code));
	ok(s == NULL && strstr(shardpipe_last_error_message(), word) != NULL,
	   "%s: the message names \"%s\" (%s)", what, word,
	   shardpipe_last_error_message());
	rc = shardpipe_reader_open(&r, url);
	ok(rc == code && r == NULL &&
		   strstr(shardpipe_last_error_message(), word) != NULL,
	   "%s: read refused the same way (%s)", what,
	   shardpipe_last_error_message());
}

/* One variable set (or, value NULL, unset) after baseline() or two, and
 * what opening must say. */
static const struct env_case {
	struct {
		const char *var, *value;
	} set[2];
	int code;
	const char *word, *what;
} env_cases[] = {
	{ { { "SHARDPIPE_S3_PART_SIZE", "12x" } },
	  SHARDPIPE_ERR_INVALID_ARGUMENT, "SHARDPIPE_S3_PART_SIZE=12x",
	  "a part size with a bad suffix" },
	{ { { "SHARDPIPE_S3_PART_SIZE", "100" } },
	  SHARDPIPE_ERR_INVALID_ARGUMENT, "out of range 1024..",
	  "a part size below 1 KiB" },
	{ { { "SHARDPIPE_S3_PART_SIZE", "6g" } },
	  SHARDPIPE_ERR_INVALID_ARGUMENT, "SHARDPIPE_S3_PART_SIZE=6g",
	  "a part size above 5 GiB" },
	{ { { "SHARDPIPE_S3_UPLOADS", "0" } },
	  SHARDPIPE_ERR_INVALID_ARGUMENT, "SHARDPIPE_S3_UPLOADS=0",
	  "zero uploads" },
	{ { { "AWS_MAX_ATTEMPTS", "-3" } },
	  SHARDPIPE_ERR_INVALID_ARGUMENT, "AWS_MAX_ATTEMPTS=-3",
	  "a negative attempt count" },
	{ { { "SHARDPIPE_S3_ENDPOINT", "ftp://127.0.0.1" } },
	  SHARDPIPE_ERR_INVALID_ARGUMENT, "not an http:// or https:// URL",
	  "an ftp endpoint" },
	{ { { "SHARDPIPE_S3_ENDPOINT", NULL }, { "AWS_ENDPOINT_URL", "http://" } },
	  SHARDPIPE_ERR_INVALID_ARGUMENT, "AWS_ENDPOINT_URL=http://: no host",
	  "an endpoint without host" },
	{ { { "AWS_CA_BUNDLE", "no-such-ca.pem" } },
	  SHARDPIPE_ERR_INVALID_ARGUMENT,
	  "AWS_CA_BUNDLE=no-such-ca.pem: No such file",
	  "a CA bundle that does not exist" },
	{ { { "SHARDPIPE_S3_ADDRESSING", "sideways" } },
	  SHARDPIPE_ERR_INVALID_ARGUMENT, "SHARDPIPE_S3_ADDRESSING=sideways",
	  "an unknown addressing" },
	{ { { "AWS_REGION", "us east" } },
	  SHARDPIPE_ERR_INVALID_ARGUMENT, "region \"us east\"",
	  "a region with a space" },
	{ { { "AWS_SECRET_ACCESS_KEY", NULL } },
	  SHARDPIPE_ERR_ACCESS, "AWS_SECRET_ACCESS_KEY is not",
	  "a key id without its secret" },
};

int main(void)
{
	char *dir = test_tmpdir("s3-config");
	struct stat st;
	FILE *f;

	plan_lazy();
	/* Relative paths below: a store path mistaken for a directory
	 * would appear here as "s3:". */
	if (chdir(dir) != 0)
		bail("chdir %s", dir);
	creds = "credentials";
	f = fopen(creds, "w");
	if (f == NULL)
		bail("cannot write %s/%s", dir, creds);
	fputs("# the tests' own\n[half]\naws_access_key_id = AKIDHALF\n"
	      "[other]\naws_access_key_id=AKIDOTHER\n"
	      "aws_secret_access_key=x\n", f);
	fclose(f);
	baseline();
#ifndef HAVE_S3
	refused("s3://bkt/a.zarr", SHARDPIPE_ERR_UNSUPPORTED, "no S3 support",
		"a build without S3 support");
#else
	refused("s3://", SHARDPIPE_ERR_PATH, "no bucket", "s3:// alone");
	refused("s3:///a.zarr", SHARDPIPE_ERR_PATH, "no bucket",
		"an empty bucket name");
	refused("s3://my bucket/a.zarr", SHARDPIPE_ERR_PATH,
		"' ' cannot be in a bucket name", "a space in the bucket");
	refused("s3://bkt/a//b.zarr", SHARDPIPE_ERR_PATH, "empty component",
		"an empty component in the prefix");
	refused("s3://../bkt/a.zarr", SHARDPIPE_ERR_PATH,
		"begins and ends with a letter or digit",
		"the bucket \"..\" (path-style, another bucket)");
	refused("s3://bkt./a.zarr", SHARDPIPE_ERR_PATH,
		"begins and ends with a letter or digit",
		"a bucket name ending in a dot");
	refused("s3://bkt/../other/a.zarr", SHARDPIPE_ERR_PATH,
		"\"..\" component", "a \"..\" component (another bucket)");
	refused("s3://bkt/a/./b.zarr", SHARDPIPE_ERR_PATH, "\".\" component",
		"a \".\" component");
	refused("s3://bkt/a.zarr/..", SHARDPIPE_ERR_PATH, "\"..\" component",
		"a \"..\" component at the end");
	refused("s3://bkt/a\tb.zarr", SHARDPIPE_ERR_PATH, "control character",
		"a tab in the prefix");
	{
		char url[700] = "s3://bkt/";

		memset(url + 9, 'k', 600);
		url[609] = '\0';
		refused(url, SHARDPIPE_ERR_PATH, "512 allowed",
			"a 600-byte prefix");
	}
	for (size_t i = 0; i < sizeof(env_cases) / sizeof(env_cases[0]); i++) {
		const struct env_case *c = &env_cases[i];

		baseline();
		for (int k = 0; k < 2 && c->set[k].var != NULL; k++) {
			if (c->set[k].value != NULL)
				setenv(c->set[k].var, c->set[k].value, 1);
			else
				unsetenv(c->set[k].var);
		}
		refused("s3://bkt/a.zarr", c->code, c->word, c->what);
	}
	baseline();
	unsetenv("AWS_SECRET_ACCESS_KEY");
	unsetenv("AWS_ACCESS_KEY_ID");
	setenv("AWS_PROFILE", "ghost", 1);
	refused("s3://bkt/a.zarr", SHARDPIPE_ERR_ACCESS,
		"AWS_PROFILE=ghost: no such profile in credentials",
		"a profile the credentials file lacks");
	setenv("AWS_PROFILE", "half", 1);
	refused("s3://bkt/a.zarr", SHARDPIPE_ERR_ACCESS,
		"profile [half] lacks", "a profile without its secret");
	/* No credentials anywhere: a write is refused before any request,
	 * a read goes out unsigned (public buckets) and finds nobody. */
	unsetenv("AWS_PROFILE");
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null", 1);
	{
		shardpipe_desc d;
		shardpipe_stream *s = (shardpipe_stream *)1;
		shardpipe_reader *r = (shardpipe_reader *)1;
		int rc;

		test_small_desc(&d, SHARDPIPE_CODEC_ZSTD);
		rc = shardpipe_stream_open(&s, "s3://bkt/a.zarr", &d);
		ok(rc == SHARDPIPE_ERR_ACCESS && s == NULL &&
			   strstr(shardpipe_last_error_message(),
				  "no credentials to write with") != NULL,
		   "no credentials: a write is refused (%s)",
		   shardpipe_last_error_message());
		rc = shardpipe_reader_open(&r, "s3://bkt/a.zarr");
		ok(rc == SHARDPIPE_ERR_IO && r == NULL,
		   "no credentials: a read goes out unsigned (%s)",
		   shardpipe_last_error_message());
	}
	setenv("AWS_SHARED_CREDENTIALS_FILE", creds, 1);
	/* Everything in order, and nobody listening. */
	setenv("AWS_PROFILE", "other", 1);
	setenv("SHARDPIPE_S3_PART_SIZE", "5m", 1);
	refused("s3://bkt/a.zarr", SHARDPIPE_ERR_IO,
		"after 1 attempt", "a server that refuses connections");
	{
		shardpipe_desc d;
		shardpipe_stream *s;

		test_small_desc(&d, SHARDPIPE_CODEC_ZSTD);
		shardpipe_stream_open(&s, "s3://bkt/a.zarr", &d);
		ok(strstr(shardpipe_last_error_message(), "s3://bkt/") != NULL &&
			   strstr(shardpipe_last_error_message(), "connect") !=
				   NULL,
		   "and the message names the bucket and the connection (%s)",
		   shardpipe_last_error_message());
		shardpipe_stream_close(s);
	}
#endif
	ok(lstat("s3:", &st) != 0,
	   "no s3:// path was taken for a directory (no \"s3:\" created)");
	if (chdir("/") != 0)
		bail("chdir /");
	test_rmtree(dir);
	free(dir);
	return done_testing();
}
