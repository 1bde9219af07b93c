/*
 * sink.c - a caller's sink receives the same shards, byte for byte, as the
 * filesystem store writes, with their coordinates, and each zarr.json,
 * through shard() and, as parts that lie apart, through shard_parts(); a
 * sink that fails makes the stream fail with a sticky SHARDPIPE_ERR_SINK;
 * a sink with neither callback is refused.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

struct collect {
	const char *root;
	shardpipe_index_location loc;
	int shards, mismatches, metas, fail_at, calls, parts;
	char last_meta[4096];
};

static int on_shard(void *user, const uint64_t *coords, int rank,
		    const void *data, size_t data_bytes, const void *index,
		    size_t index_bytes)
{
	struct collect *c = user;
	char path[512];
	size_t n, len;
	unsigned char *file;

	if (++c->calls == c->fail_at)
		return -1;
	n = (size_t)snprintf(path, sizeof(path), "%s/c", c->root);
	for (int d = 0; d < rank; d++)
		n += (size_t)snprintf(path + n, sizeof(path) - n, "/%llu",
				      (unsigned long long)coords[d]);
	file = test_slurp(path, &len);
	c->shards++;
	if (file == NULL || len != data_bytes + index_bytes) {
		diag("%s: missing or of another size", path);
		c->mismatches++;
	} else {
		const unsigned char *first = c->loc ? index : data;
		size_t first_n = c->loc ? index_bytes : data_bytes;
		const unsigned char *second = c->loc ? data : index;

		if (memcmp(file, first, first_n) != 0 ||
		    memcmp(file + first_n, second, len - first_n) != 0) {
			diag("%s differs from the sink's shard", path);
			c->mismatches++;
		}
	}
	free(file);
	return 0;
}

/* The parts one after the other, checked as shard() checks its data. */
static int on_parts(void *user, const uint64_t *coords, int rank,
		    const shardpipe_part *parts, size_t nparts,
		    const void *index, size_t index_bytes)
{
	struct collect *c = user;
	size_t n = 0, at = 0;
	unsigned char *data;
	int rc;

	for (size_t i = 0; i < nparts; i++)
		n += parts[i].bytes;
	data = test_xmalloc(n);
	for (size_t i = 0; i < nparts; i++) {
		memcpy(data + at, parts[i].data, parts[i].bytes);
		at += parts[i].bytes;
	}
	c->parts += (int)nparts;
	rc = on_shard(user, coords, rank, data, n, index, index_bytes);
	free(data);
	return rc;
}

static int on_meta(void *user, const char *json, size_t n)
{
	struct collect *c = user;

	c->metas++;
	snprintf(c->last_meta, sizeof(c->last_meta), "%.*s", (int)n, json);
	return 0;
}

static void describe(shardpipe_desc *d, int loc)
{
	shardpipe_desc_init(d);
	d->rank = 3;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->backend = "cpu";
	d->index_location = (shardpipe_index_location)loc;
	uint64_t chunk[3] = { 2, 8, 5 }, cps[3] = { 2, 2, 3 };
	for (int k = 0; k < 3; k++) {
		d->dims[k].size = k ? 20 + 3 * (uint64_t)k : 0;
		d->dims[k].chunk = chunk[k];
		d->dims[k].chunks_per_shard = cps[k];
	}
}

int main(void)
{
	uint64_t rng = test_seed();
	char *tmp = test_tmpdir("sink");
	size_t rows = 11, total = rows * 23 * 26 * 2;
	unsigned char *input = malloc(total);

	plan(18);
	test_fill(input, total, 3, &rng);
	for (int loc = 0; loc < 2; loc++) {
		shardpipe_desc d;
		shardpipe_stream *s;
		char root[512];
		struct collect c = { .loc = (shardpipe_index_location)loc };
		shardpipe_sink sink = test_sink(&c, on_shard, on_meta);

		snprintf(root, sizeof(root), "%s/fs%d.zarr", tmp, loc);
		describe(&d, loc);
		shardpipe_stream_open(&s, root, &d);
		shardpipe_stream_append(s, input, total);
		is_int(shardpipe_stream_close(s), SHARDPIPE_OK,
		       "index %s: store written", loc ? "start" : "end");

		c.root = root;
		is_int(shardpipe_stream_open_sink(&s, &sink, &d), SHARDPIPE_OK,
		       "index %s: sink stream opens", loc ? "start" : "end");
		shardpipe_stream_append(s, input, total);
		is_int(shardpipe_stream_close(s), SHARDPIPE_OK,
		       "index %s: sink stream closes", loc ? "start" : "end");
		/* 11 rows in chunks of 2, 2 per shard: 3 shard epochs; dims
		 * 1, 2 have 2 x 2 shards. */
		ok(c.shards == 12 && c.mismatches == 0,
		   "index %s: %d shards equal to the files written",
		   loc ? "start" : "end", c.shards);
		ok(c.metas >= 2 && strstr(c.last_meta, "\"shape\": [11, 23, 26]"),
		   "index %s: last zarr.json has the final shape",
		   loc ? "start" : "end");

		memset(&c, 0, sizeof(c));
		c.loc = (shardpipe_index_location)loc;
		c.root = root;
		sink = test_sink(&c, NULL, NULL);
		sink.shard_parts = on_parts;
		if (shardpipe_stream_open_sink(&s, &sink, &d) != SHARDPIPE_OK)
			bail("%s", shardpipe_last_error_message());
		shardpipe_stream_append(s, input, total);
		is_int(shardpipe_stream_close(s), SHARDPIPE_OK,
		       "index %s: a sink of parts only", loc ? "start" : "end");
		/* 3 x 6 chunks an epoch, 6 epochs: the cpu backend's lie
		 * apart, one part each. */
		ok(c.shards == 12 && c.mismatches == 0 && c.parts == 108,
		   "index %s: %d shards in %d parts, equal to the files",
		   loc ? "start" : "end", c.shards, c.parts);
	}
	{
		shardpipe_desc d;
		shardpipe_stream *s = (shardpipe_stream *)1;
		shardpipe_sink sink = test_sink(NULL, NULL, on_meta);

		describe(&d, 0);
		is_int(shardpipe_stream_open_sink(&s, &sink, &d),
		       SHARDPIPE_ERR_INVALID_ARGUMENT,
		       "a sink with neither shard nor shard_parts is refused");
		ok(s == NULL && strstr(shardpipe_last_error_message(),
				       "shard_parts") != NULL,
		   "saying so (%s)", shardpipe_last_error_message());
	}
	{
		shardpipe_desc d;
		shardpipe_stream *s;
		struct collect c = { .fail_at = 2, .root = "/nonexistent" };
		shardpipe_sink sink = test_sink(&c, on_shard, NULL);
		int rc1, rc2;

		describe(&d, 0);
		shardpipe_stream_open_sink(&s, &sink, &d);
		shardpipe_stream_append(s, input, total);
		rc1 = shardpipe_stream_flush(s);
		rc2 = shardpipe_stream_append(s, input, 2);
		ok(rc1 == SHARDPIPE_ERR_SINK && rc2 == SHARDPIPE_ERR_SINK &&
			   strstr(shardpipe_stream_message(s), "c/0/0/1"),
		   "a failing sink: sticky SHARDPIPE_ERR_SINK naming the "
		   "shard (%s)", shardpipe_stream_message(s));
		is_int(shardpipe_stream_close(s), SHARDPIPE_ERR_SINK,
		       "close reports the sink's failure");
	}
	free(input);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
