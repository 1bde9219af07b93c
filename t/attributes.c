/*
 * attributes.c - user attributes through the public API: what zarr.json
 * holds after shardpipe_stream_set_attribute (each member as written out
 * here by hand, the whole text valid JSON by t/fault-check.c's own
 * parser), when it holds it (not before the next metadata update), keys
 * replaced, removed and escaped, every refusal with its exact code and a
 * message naming the key, the stream usable after each, the bounds at
 * their edges, attributes in the description (checked at open, before
 * anything is written), a failed stream's error, a sink's zarr.json, and
 * a store
 * with large, deep attributes read back by the library's reader.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fault-check.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

/* Enough rows to fill a batch, so that the writer publishes before
 * close. */
#define ROWS 4096
#define COLS 16

static void describe(shardpipe_desc *d)
{
	shardpipe_desc_init(d);
	d->rank = 2;
	d->backend = "cpu";
	d->dims[0].size = 0;
	d->dims[0].chunk = 2;
	d->dims[0].chunks_per_shard = 2;
	d->dims[1].size = COLS;
	d->dims[1].chunk = 8;
	d->dims[1].chunks_per_shard = 2;
}

static char *meta(const char *dir, size_t *n)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/zarr.json", dir);
	return test_slurp(path, n);
}

/* zarr.json parses as JSON (independently of the library) with the
 * shape {rows, COLS} (rows UINT64_MAX: any rows but 0), and holds each of
 * the `want` texts. */
static int meta_holds(const char *dir, uint64_t rows, const char *const *want,
		      int nwant)
{
	size_t n = 0;
	char *j = meta(dir, &n);
	uint64_t shape[SHARDPIPE_MAX_RANK];
	int good = j != NULL;

	if (good && (fc_json_shape(j, n, shape) != 2 || shape[1] != COLS ||
		     (rows == UINT64_MAX ? shape[0] == 0 : shape[0] != rows))) {
		diag("zarr.json is not JSON of shape {%llu, %d}",
		     (unsigned long long)rows, COLS);
		good = 0;
	}
	for (int k = 0; good && k < nwant; k++)
		if (strstr(j, want[k]) == NULL) {
			diag("zarr.json lacks %s", want[k]);
			good = 0;
		}
	if (!good && j != NULL)
		diag("zarr.json: %.2000s", j);
	free(j);
	return good;
}

static int meta_lacks(const char *dir, const char *text)
{
	size_t n = 0;
	char *j = meta(dir, &n);
	int lacks = j != NULL && strstr(j, text) == NULL;

	free(j);
	return lacks;
}

/* A JSON value nested `depth` arrays deep. */
static char *nested(int depth)
{
	char *s = test_xmalloc(2 * (size_t)depth + 2);

	memset(s, '[', (size_t)depth);
	s[depth] = '1';
	memset(s + depth + 1, ']', (size_t)depth);
	s[2 * depth + 1] = '\0';
	return s;
}

/* A JSON string value of n bytes in all, quotes included. */
static char *long_string(size_t n)
{
	char *s = test_xmalloc(n + 1);

	memset(s, 'a', n);
	s[0] = s[n - 1] = '"';
	s[n] = '\0';
	return s;
}

static void refused(shardpipe_stream *s, const char *key, const char *json,
		    const char *word, const char *what)
{
	int rc = shardpipe_stream_set_attribute(s, key, json);

	is_int(rc, SHARDPIPE_ERR_INVALID_ARGUMENT, "%s is refused", what);
	ok(strstr(shardpipe_stream_message(s), word) != NULL,
	   "%s: the message says \"%s\": %s", what, word,
	   shardpipe_stream_message(s));
}

static void published(const char *tmp, const uint8_t *data)
{
	char dir[600];
	shardpipe_desc d;
	shardpipe_stream *s = NULL;
	/* Each member as zarr.json must hold it: the key quoted and
	 * escaped by the spec's rules, the value as given. */
	static const char *const first[] = {
		"\"name\": \"cam 0\"",
		"\"exposure_ms\": 12.50",
		"\"roi\": {\"x\": [0, 16], \"meta\": {\"by\": null}}",
		"\"flag\": true",
		"\"big\": 123456789012345678901234567890",
		"\"q\\\"uo\\\\te\\u000a\\u0001\xc3\xa9\": \"\xe2\x82\xac\"",
	};
	static const char *const second[] = {
		"\"name\": \"cam 1\"",
		"\"exposure_ms\": 12.50",
	};
	int rc;

	snprintf(dir, sizeof(dir), "%s/published.zarr", tmp);
	describe(&d);
	rc = shardpipe_stream_open(&s, dir, &d);
	is_int(rc, SHARDPIPE_OK, "open");
	if (rc != SHARDPIPE_OK)
		bail("open: %s", shardpipe_last_error_message());
	is_int(shardpipe_stream_set_attribute(s, "name", "\"cam 0\""),
	       SHARDPIPE_OK, "a string");
	is_int(shardpipe_stream_set_attribute(s, "exposure_ms", " 12.50\n"),
	       SHARDPIPE_OK, "a number with whitespace around it");
	is_int(shardpipe_stream_set_attribute(
		       s, "roi", "{\"x\": [0, 16], \"meta\": {\"by\": null}}"),
	       SHARDPIPE_OK, "an object");
	is_int(shardpipe_stream_set_attribute(s, "flag", "true"), SHARDPIPE_OK,
	       "true");
	is_int(shardpipe_stream_set_attribute(s, "big",
					      "123456789012345678901234567890"),
	       SHARDPIPE_OK, "an integer beyond 64 bits");
	is_int(shardpipe_stream_set_attribute(s, "q\"uo\\te\n\x01\xc3\xa9",
					      "\"\xe2\x82\xac\""),
	       SHARDPIPE_OK, "a key with a quote, a backslash, controls and "
	       "UTF-8");
	is_int(shardpipe_stream_set_attribute(s, "gone", "[]"), SHARDPIPE_OK,
	       "an attribute removed later");
	ok(meta_lacks(dir, "cam 0"),
	   "not in zarr.json before the next metadata update");
	is_int(shardpipe_stream_set_attribute(s, "gone", NULL), SHARDPIPE_OK,
	       "removing it");
	is_int(shardpipe_stream_set_attribute(s, "never-set", NULL),
	       SHARDPIPE_OK, "removing a key never set does nothing");
	is_int(shardpipe_stream_flush(s), SHARDPIPE_OK, "flush");
	ok(meta_holds(dir, 0, first, 6),
	   "after flush zarr.json holds every attribute as set");
	ok(meta_lacks(dir, "\"gone\""), "the removed key is not there");

	/* The writer publishes after each shard epoch it writes. */
	is_int(shardpipe_stream_set_attribute(s, "name", "\"cam 1\""),
	       SHARDPIPE_OK, "replacing a value");
	is_int(shardpipe_stream_append(s, data, ROWS / 2 * COLS), SHARDPIPE_OK,
	       "append a batch's worth of rows");
	for (int k = 0; k < 30000; k++) {
		shardpipe_stats st;
		struct timespec ms = { 0, 1000000 };

		shardpipe_stream_stats(s, &st);
		if (st.rows_written > 0)
			break;
		nanosleep(&ms, NULL);
	}
	ok(meta_holds(dir, UINT64_MAX, second, 2),
	   "the zarr.json the writer publishes holds the new value");
	{
		size_t n = 0;
		char *j = meta(dir, &n);
		char *a = j ? strstr(j, "\"name\"") : NULL;
		char *b = j ? strstr(j, "\"exposure_ms\"") : NULL;

		ok(a != NULL && b != NULL && a < b,
		   "a replaced key keeps its place");
		free(j);
	}
	is_int(shardpipe_stream_append(s, data + ROWS / 2 * COLS,
				       ROWS / 2 * COLS),
	       SHARDPIPE_OK, "append the rest");
	is_int(shardpipe_stream_close(s), SHARDPIPE_OK, "close");
	ok(meta_holds(dir, ROWS, second, 2), "the final zarr.json holds them");
	ok(test_reads_back(dir, ROWS, data, ROWS * COLS),
	   "the library's reader reads the store with attributes");
}

static void refusals(const char *tmp, const uint8_t *data)
{
	char dir[600];
	shardpipe_desc d;
	shardpipe_stream *s = NULL;
	char *deep = nested(SHARDPIPE_MAX_ATTRIBUTE_DEPTH + 1);
	char *huge = long_string(SHARDPIPE_MAX_ATTRIBUTES_BYTES);
	char *half = long_string(SHARDPIPE_MAX_ATTRIBUTES_BYTES / 2);
	int rc;

	snprintf(dir, sizeof(dir), "%s/refusals.zarr", tmp);
	describe(&d);
	rc = shardpipe_stream_open(&s, dir, &d);
	if (rc != SHARDPIPE_OK)
		bail("open: %s", shardpipe_last_error_message());
	is_int(shardpipe_stream_set_attribute(s, "keep", "1"), SHARDPIPE_OK,
	       "an attribute before the refusals");
	refused(s, NULL, "1", "key", "a NULL key");
	refused(s, "", "1", "key", "an empty key");
	refused(s, "ome", "{}", "reserved", "the key \"ome\"");
	refused(s, "k", "[1,", "\"k\"", "unterminated JSON");
	refused(s, "k", "{\"a\": 1} 2", "byte 9", "two values");
	refused(s, "k", "", "byte 0", "empty text");
	refused(s, "k", " \t\n", "\"k\"", "whitespace only");
	refused(s, "k", "NaN", "\"k\"", "NaN, which JSON has not");
	refused(s, "k", "'single'", "\"k\"", "single quotes");
	refused(s, "k", "{\"a\": 1, \"a\": 2}", "twice", "a repeated member");
	refused(s, "k", "\"a\x01b\"", "control", "a raw control character "
		"in a string");
	refused(s, "k", "\"\xc3\x28\"", "UTF-8", "invalid UTF-8 in a string");
	refused(s, "\xff", "1", "UTF-8", "a key that is not UTF-8");
	refused(s, "k", deep, "\"k\"", "a value nested deeper than "
		"SHARDPIPE_MAX_ATTRIBUTE_DEPTH");
	refused(s, "k", huge, "exceed", "a value as large as "
		"SHARDPIPE_MAX_ATTRIBUTES_BYTES");
	is_int(shardpipe_stream_set_attribute(s, "h1", half), SHARDPIPE_OK,
	       "half the bound");
	refused(s, "h2", half, "more than", "a second half that passes the "
		"bound");
	is_int(shardpipe_stream_set_attribute(s, "h1", "0"), SHARDPIPE_OK,
	       "replacing the large value frees its room");
	is_int(shardpipe_stream_set_attribute(s, "h2", half), SHARDPIPE_OK,
	       "then the second fits");
	free(deep);
	deep = nested(SHARDPIPE_MAX_ATTRIBUTE_DEPTH);
	is_int(shardpipe_stream_set_attribute(s, "deep", deep), SHARDPIPE_OK,
	       "a value exactly SHARDPIPE_MAX_ATTRIBUTE_DEPTH deep");
	/* A few rows: every shard epoch rewrites a zarr.json of 1 MiB. */
	is_int(shardpipe_stream_append(s, data, 8 * COLS), SHARDPIPE_OK,
	       "the stream takes data after the refusals");
	is_int(shardpipe_stream_close(s), SHARDPIPE_OK, "and closes");
	{
		static const char *const want[] = { "\"keep\": 1",
						     "\"h1\": 0" };

		ok(meta_holds(dir, 8, want, 2),
		   "zarr.json of near 1 MiB and deep values is JSON with the "
		   "attributes set");
		ok(meta_lacks(dir, "\"k\""), "no refused attribute is in it");
	}
	ok(test_reads_back(dir, 8, data, 8 * COLS),
	   "the library's reader reads it back");

	free(deep);
	free(huge);
	free(half);
}

struct sink_log {
	char *last_meta;
	int shards;
};

static int sink_shard(void *user, const uint64_t *coords, int rank,
		      const void *data, size_t data_bytes, const void *index,
		      size_t index_bytes)
{
	struct sink_log *l = user;

	(void)coords, (void)rank, (void)data, (void)data_bytes, (void)index,
		(void)index_bytes;
	return l->shards++ == 0 ? 0 : 1; /* the second shard fails */
}

static int sink_meta(void *user, const char *json, size_t n)
{
	struct sink_log *l = user;

	free(l->last_meta);
	l->last_meta = strndup(json, n);
	return 0;
}

/*
 * The description's attributes: in the first zarr.json, a later key
 * replacing an earlier one; a bad one (or a total past the bound, which
 * no single attribute reaches) refuses the open before anything exists.
 */
static void at_open(const char *tmp)
{
	char dir[600], sub[600];
	shardpipe_desc d;
	shardpipe_stream *s = NULL;
	char *quarter = long_string(SHARDPIPE_MAX_ATTRIBUTES_BYTES / 4);
	shardpipe_attribute good[] = {
		{ "camera", "{\"id\": 3}" },
		{ "unit", "\"ms\"" },
		{ "camera", "{\"id\": 4}" },
	};
	shardpipe_attribute bad[] = { { "fine", "1" }, { "broken", "[1," } };
	shardpipe_attribute big[] = {
		{ "a", quarter }, { "b", quarter }, { "c", quarter }, { "d", quarter },
	};
	static const char *const want[] = { "\"camera\": {\"id\": 4}",
					     "\"unit\": \"ms\"" };

	snprintf(dir, sizeof(dir), "%s/at-open.zarr", tmp);
	describe(&d);
	d.attributes = good;
	d.nattributes = 3;
	is_int(shardpipe_stream_open(&s, dir, &d), SHARDPIPE_OK,
	       "open with attributes in the description");
	ok(meta_holds(dir, 0, want, 2),
	   "the first zarr.json holds them, the later key replacing");
	is_int(shardpipe_stream_close(s), SHARDPIPE_OK, "close");

	snprintf(sub, sizeof(sub), "%s/open-refusals", tmp);
	mkdir(sub, 0777);
	d.attributes = bad;
	d.nattributes = 2;
	test_refused(sub, &d, SHARDPIPE_ERR_INVALID_ARGUMENT, "\"broken\"",
		     "a description attribute that is not JSON");
	d.attributes = big;
	d.nattributes = 4;
	test_refused(sub, &d, SHARDPIPE_ERR_INVALID_ARGUMENT, "\"d\"",
		     "description attributes past the bound together");
	d.attributes = NULL;
	d.nattributes = 1;
	test_refused(sub, &d, SHARDPIPE_ERR_INVALID_ARGUMENT, "NULL",
		     "nattributes without attributes");
	free(quarter);
}

/* A sink receives the attributes in its zarr.json; after the sink fails,
 * set_attribute returns the stream's error. */
static void sink_and_failure(const uint8_t *data)
{
	struct sink_log log = { 0 };
	shardpipe_sink sk;
	shardpipe_desc d;
	shardpipe_stream *s = NULL;

	shardpipe_sink_init(&sk);
	sk.user = &log;
	sk.shard = sink_shard;
	sk.metadata = sink_meta;
	describe(&d);
	d.dims[1].chunks_per_shard = 1;
	if (shardpipe_stream_open_sink(&s, &sk, &d) != SHARDPIPE_OK)
		bail("open_sink: %s", shardpipe_last_error_message());
	is_int(shardpipe_stream_set_attribute(s, "via", "\"sink\""),
	       SHARDPIPE_OK, "sink: set");
	is_int(shardpipe_stream_flush(s), SHARDPIPE_OK, "sink: flush");
	ok(log.last_meta != NULL &&
		   strstr(log.last_meta, "\"via\": \"sink\"") != NULL,
	   "the sink's zarr.json holds the attribute");
	shardpipe_stream_append(s, data, ROWS * COLS);
	shardpipe_stream_flush(s);
	is_int(shardpipe_stream_set_attribute(s, "late", "1"),
	       SHARDPIPE_ERR_SINK,
	       "after the sink failed, set_attribute returns its error");
	is_int(shardpipe_stream_close(s), SHARDPIPE_ERR_SINK,
	       "close returns it too");
	free(log.last_meta);
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;
	char *tmp = test_tmpdir("attributes");
	uint8_t *data = test_xmalloc(ROWS * COLS);

	test_fill(data, ROWS * COLS, 0, &rng);
	plan_lazy();
	published(tmp, data);
	refusals(tmp, data);
	at_open(tmp);
	sink_and_failure(data);
	test_rmtree(tmp);
	free(tmp);
	free(data);
	return done_testing();
}
