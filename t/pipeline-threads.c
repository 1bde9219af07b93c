/*
 * pipeline-threads.c - the threaded pipeline writes the same bytes however
 * the work is cut: for several geometries (a 1-element innermost chunk,
 * dims the chunk spans whole, partial edge chunks, bounded and unbounded
 * dim 0), the shards a sink receives, in order, with their coordinates,
 * are identical across backend thread counts, append span sizes (one byte
 * short of a batch, whole batches handed over without a copy, odd sizes)
 * and flushes, with spans small and large enough that the idle pipeline
 * thread copies half of each into staging.  Every zarr.json a sink receives advertises only rows whose
 * shards it already has; flush hands over exactly the complete shard
 * epochs; close the partial last one; a failing sink is reported on a
 * later call and by close.  Content is checked once per geometry through
 * the library's reader.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

struct geometry {
	const char *name;
	int rank;
	uint64_t size[5], chunk[5], cps[5];
	uint64_t rows;            /* rows appended */
	shardpipe_dtype dtype;
	shardpipe_codec codec;
	int level;
	shardpipe_index_location loc;
};

static const struct geometry geometries[] = {
	{ "cube-like, 1-element channel chunks", 5, { 0, 12, 10, 16, 3 },
	  { 2, 4, 5, 8, 1 }, { 2, 2, 1, 2, 3 }, 151, SHARDPIPE_DTYPE_UINT16,
	  SHARDPIPE_CODEC_ZSTD, 1, SHARDPIPE_INDEX_END },
	{ "frames-like, partial edge chunks", 4, { 0, 2, 40, 36 },
	  { 1, 1, 16, 12 }, { 1, 1, 2, 2 }, 130, SHARDPIPE_DTYPE_UINT16,
	  SHARDPIPE_CODEC_NONE, 0, SHARDPIPE_INDEX_END },
	{ "stack-like, bounded, index first", 3, { 39, 100, 200 },
	  { 4, 8, 8 }, { 2, 2, 4 }, 39, SHARDPIPE_DTYPE_UINT8,
	  SHARDPIPE_CODEC_ZSTD, 3, SHARDPIPE_INDEX_START },
	{ "4 channels of uint32", 3, { 0, 50, 4 }, { 3, 7, 1 }, { 2, 3, 4 },
	  250, SHARDPIPE_DTYPE_UINT32, SHARDPIPE_CODEC_GZIP, 1,
	  SHARDPIPE_INDEX_END },
	{ "chunks spanning every dim but 0", 3, { 0, 6, 40 }, { 2, 6, 40 },
	  { 3, 1, 1 }, 4201, SHARDPIPE_DTYPE_UINT64, SHARDPIPE_CODEC_ZSTD, 1,
	  SHARDPIPE_INDEX_END },
	/* Rows of 1 MiB: spans of a row and more are big enough for the
	 * caller to hand half of each staging copy to the idle pipeline
	 * thread (stream.c stage_copy), at odd offsets too. */
	{ "1 MiB rows, split staging copies", 3, { 0, 256, 2048 },
	  { 4, 64, 256 }, { 2, 2, 4 }, 37, SHARDPIPE_DTYPE_UINT16,
	  SHARDPIPE_CODEC_ZSTD, 1, SHARDPIPE_INDEX_END },
};

/* What a sink received, in order. */
struct record {
	uint64_t coords[5];
	size_t len;
	unsigned char *bytes;     /* data then index */
};

struct capture {
	const struct geometry *g;
	uint64_t shard_rows;      /* rows per shard epoch */
	uint64_t S;               /* shards per shard epoch */
	struct record *recs;
	size_t n, cap;
	uint64_t *per_epoch;      /* shards received per shard epoch */
	uint64_t metas, last_shape0;
	int meta_ahead;           /* a zarr.json advertised unwritten rows */
	int fail_at;              /* shard call that fails (0: none) */
	int calls;
	int slow;                 /* sleep in each call: back-pressure */
};

static uint64_t cdiv(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

static void capture_init(struct capture *c, const struct geometry *g)
{
	memset(c, 0, sizeof(*c));
	c->g = g;
	c->shard_rows = g->chunk[0] * g->cps[0];
	c->S = 1;
	for (int d = 1; d < g->rank; d++)
		c->S *= cdiv(cdiv(g->size[d], g->chunk[d]), g->cps[d]);
	c->per_epoch = calloc(cdiv(g->rows, c->shard_rows) + 1,
			      sizeof(*c->per_epoch));
}

static void capture_free(struct capture *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->recs[i].bytes);
	free(c->recs);
	free(c->per_epoch);
}

static int on_shard(void *user, const uint64_t *coords, int rank,
		    const void *data, size_t data_bytes, const void *index,
		    size_t index_bytes)
{
	struct capture *c = user;
	struct record *r;

	if (++c->calls == c->fail_at)
		return -1;
	if (c->slow) {
		struct timespec ts = { 0, 200000 };

		nanosleep(&ts, NULL);
	}
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->recs = realloc(c->recs, c->cap * sizeof(*c->recs));
	}
	r = &c->recs[c->n++];
	memset(r->coords, 0, sizeof(r->coords));
	memcpy(r->coords, coords, (size_t)rank * sizeof(*coords));
	r->len = data_bytes + index_bytes;
	r->bytes = malloc(r->len + 1);
	memcpy(r->bytes, data, data_bytes);
	memcpy(r->bytes + data_bytes, index, index_bytes);
	if (coords[0] <= cdiv(c->g->rows, c->shard_rows))
		c->per_epoch[coords[0]]++;
	return 0;
}

/* Every zarr.json may only advertise rows whose shards are all here. */
static int on_meta(void *user, const char *json, size_t n)
{
	struct capture *c = user;
	const char *at = memmem(json, n, "\"shape\": [", 10);
	uint64_t rows;

	c->metas++;
	if (at == NULL) {
		c->meta_ahead = 1;
		return 0;
	}
	rows = strtoull(at + 10, NULL, 10);
	c->last_shape0 = rows;
	/* A bounded array's final zarr.json states its declared size. */
	if (c->g->size[0] != 0 && rows == c->g->size[0] &&
	    c->n == cdiv(c->g->rows, c->shard_rows) * c->S)
		return 0;
	for (uint64_t se = 0; se < cdiv(rows, c->shard_rows); se++)
		if (c->per_epoch[se] != c->S)
			c->meta_ahead = 1;
	return 0;
}

static void describe(shardpipe_desc *d, const struct geometry *g, int threads)
{
	shardpipe_desc_init(d);
	d->rank = g->rank;
	d->dtype = g->dtype;
	d->codec = g->codec;
	d->level = g->codec == SHARDPIPE_CODEC_NONE ? 1 : g->level;
	d->index_location = g->loc;
	d->backend = "cpu";
	d->threads = threads;
	for (int k = 0; k < g->rank; k++) {
		d->dims[k].size = g->size[k];
		d->dims[k].chunk = g->chunk[k];
		d->dims[k].chunks_per_shard = g->cps[k];
	}
}

/* Stream input in spans of `span` bytes (flushing after every
 * flush_every-th append when nonzero) into c. */
static int stream(const struct geometry *g, int threads, const uint8_t *input,
		  size_t total, size_t span, int flush_every, struct capture *c)
{
	shardpipe_desc d;
	shardpipe_stream *s;
	shardpipe_sink sink = test_sink(c, on_shard, on_meta);
	size_t at = 0;
	int rc, k = 0;

	describe(&d, g, threads);
	rc = shardpipe_stream_open_sink(&s, &sink, &d);
	if (rc != SHARDPIPE_OK) {
		diag("open: %s", shardpipe_last_error_message());
		return rc;
	}
	while (at < total && rc == SHARDPIPE_OK) {
		size_t n = total - at < span ? total - at : span;

		rc = shardpipe_stream_append(s, input + at, n);
		at += n;
		if (rc == SHARDPIPE_OK && flush_every && ++k % flush_every == 0)
			rc = shardpipe_stream_flush(s);
	}
	if (rc != SHARDPIPE_OK) {
		diag("append: %s", shardpipe_stream_message(s));
		shardpipe_stream_close(s);
		return rc;
	}
	return shardpipe_stream_close(s);
}

/* The first difference between two captures, or NULL. */
static const char *compare(const struct capture *a, const struct capture *b,
			   size_t *where)
{
	if (a->n != b->n) {
		*where = a->n < b->n ? a->n : b->n;
		return "shard count";
	}
	for (size_t i = 0; i < a->n; i++) {
		*where = i;
		if (memcmp(a->recs[i].coords, b->recs[i].coords,
			   sizeof(a->recs[i].coords)) != 0)
			return "coordinates (order)";
		if (a->recs[i].len != b->recs[i].len ||
		    memcmp(a->recs[i].bytes, b->recs[i].bytes,
			   a->recs[i].len) != 0)
			return "bytes";
	}
	return NULL;
}

static size_t row_bytes(const struct geometry *g)
{
	size_t n = shardpipe_dtype_size(g->dtype);

	for (int d = 1; d < g->rank; d++)
		n *= (size_t)g->size[d];
	return n;
}

static void check_geometry(const struct geometry *g, uint64_t *rng,
			   const char *tmp, int gi)
{
	size_t rb = row_bytes(g), total = rb * g->rows;
	uint8_t *input = malloc(total);
	struct capture base;
	struct plan p;
	struct sp_err err;
	shardpipe_desc d;
	size_t batch;

	test_fill(input, total, 3, rng);
	describe(&d, g, 2);
	if (plan_init(&p, &d, &err) != SHARDPIPE_OK)
		bail("%s: %s", g->name, err.msg);
	batch = (size_t)p.batch_bytes;
	plan_free(&p);
	/* Whole batches are handed over without a copy: have several. */
	if (2 * batch >= total)
		diag("%s: a batch is %zu of %zu bytes", g->name, batch, total);

	capture_init(&base, g);
	is_int(stream(g, 1, input, total, total, 0, &base), SHARDPIPE_OK,
	       "%s: one thread, one append", g->name);
	ok(base.n == cdiv(g->rows, base.shard_rows) * base.S &&
		   !base.meta_ahead && base.last_shape0 ==
			   (g->size[0] ? g->size[0] : g->rows),
	   "%s: %zu shards, final shape %llu, no zarr.json ahead of its "
	   "shards", g->name, base.n, (unsigned long long)base.last_shape0);

	{
		const struct {
			int threads;
			size_t span;
			int flush_every;
			int slow;
		} v[] = {
			{ 2, total, 0, 0 },
			{ 3, rb, 0, 0 },
			{ 2, 7919, 0, 0 },
			{ 2, batch, 0, 0 },            /* handed over whole */
			{ 3, 2 * batch + 3, 0, 0 },
			{ 2, batch > 1 ? batch - 1 : 1, 0, 0 },
			{ 2, rb, 3, 0 },               /* flushes */
			{ 1, 3 * rb + 5, 1, 0 },
			{ 2, batch, 0, 1 },            /* a slow sink */
		};

		for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
			struct capture c;
			const char *bad;
			size_t where = 0;
			int rc;

			capture_init(&c, g);
			c.slow = v[i].slow;
			rc = stream(g, v[i].threads, input, total, v[i].span,
				    v[i].flush_every, &c);
			bad = rc == SHARDPIPE_OK ? compare(&base, &c, &where)
						 : "return code";
			if (bad != NULL)
				diag("first difference: %s at shard %zu", bad,
				     where);
			ok(bad == NULL && !c.meta_ahead,
			   "%s: %d threads, spans of %zu bytes%s%s: the same "
			   "shards in the same order", g->name, v[i].threads,
			   v[i].span, v[i].flush_every ? ", flushing" : "",
			   v[i].slow ? ", slow sink" : "");
			capture_free(&c);
		}
	}

	/* Flush hands over exactly the complete shard epochs; close the
	 * partial last one. */
	if (g->size[0] == 0) {
		struct capture c;
		shardpipe_sink sink = test_sink(&c, on_shard, on_meta);
		shardpipe_stream *s;
		uint64_t part = g->rows / 2 + 1;
		uint64_t whole = part / base.shard_rows;
		int rc;

		capture_init(&c, g);
		describe(&d, g, 2);
		shardpipe_stream_open_sink(&s, &sink, &d);
		rc = shardpipe_stream_append(s, input, part * rb);
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_flush(s);
		ok(rc == SHARDPIPE_OK && c.n == whole * base.S &&
			   c.last_shape0 == whole * base.shard_rows,
		   "%s: flush after %llu rows: %zu shards, zarr.json shape "
		   "%llu", g->name, (unsigned long long)part, c.n,
		   (unsigned long long)c.last_shape0);
		rc = shardpipe_stream_append(s, input + part * rb,
					     total - part * rb);
		rc = rc == SHARDPIPE_OK ? shardpipe_stream_close(s)
					: (shardpipe_stream_close(s), rc);
		ok(rc == SHARDPIPE_OK && compare(&base, &c, &(size_t){ 0 }) ==
					   NULL && c.last_shape0 == g->rows &&
			   !c.meta_ahead,
		   "%s: close writes the partial last shard epoch", g->name);
		capture_free(&c);
	}

	/* The bytes mean the input: read back through the library. */
	{
		char path[512];
		shardpipe_stream *s;
		shardpipe_reader *r;
		uint64_t start[5] = { 0 }, count[5];
		uint8_t *back = malloc(total);
		int rc;

		snprintf(path, sizeof(path), "%s/g%d.zarr", tmp, gi);
		describe(&d, g, 2);
		rc = shardpipe_stream_open(&s, path, &d);
		for (size_t at = 0; rc == SHARDPIPE_OK && at < total;
		     at += 7919)
			rc = shardpipe_stream_append(
				s, input + at, total - at < 7919 ? total - at : 7919);
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_close(s);
		for (int k = 0; k < g->rank; k++)
			count[k] = k ? g->size[k] : g->rows;
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_reader_open(&r, path);
		if (rc == SHARDPIPE_OK) {
			rc = shardpipe_reader_read(r, start, count, back, total);
			shardpipe_reader_close(r);
		}
		is_int(rc, SHARDPIPE_OK, "%s: the store reads back", g->name);
		is_blob(back, input, total, "%s: it holds the input", g->name);
		free(back);
	}
	capture_free(&base);
	free(input);
}

/* A sink failing on the writer thread: the error reaches the caller on a
 * later call, stays, and close returns it; no zarr.json runs ahead. */
static void check_failure(uint64_t *rng)
{
	const struct geometry *g = &geometries[0];
	size_t rb = row_bytes(g), total = rb * g->rows;
	uint8_t *input = malloc(total);
	struct capture c;
	shardpipe_sink sink = test_sink(&c, on_shard, on_meta);
	shardpipe_desc d;
	shardpipe_stream *s;
	int first = SHARDPIPE_OK, later, closed;

	test_fill(input, total, 0, rng);
	capture_init(&c, g);
	c.fail_at = 3;
	describe(&d, g, 2);
	shardpipe_stream_open_sink(&s, &sink, &d);
	for (size_t at = 0; at < total && first == SHARDPIPE_OK; at += rb)
		first = shardpipe_stream_append(s, input + at, rb);
	if (first == SHARDPIPE_OK)
		first = shardpipe_stream_flush(s);
	later = shardpipe_stream_append(s, input, rb);
	closed = shardpipe_stream_close(s);
	ok(first == SHARDPIPE_ERR_SINK && later == SHARDPIPE_ERR_SINK &&
		   closed == SHARDPIPE_ERR_SINK && !c.meta_ahead &&
		   c.n == 2,
	   "a sink failing on its 3rd shard: SINK reported (%d), sticky "
	   "(%d), by close (%d), %zu shards before it", first, later, closed,
	   c.n);
	capture_free(&c);
	free(input);
}

int main(void)
{
	uint64_t rng = test_seed();
	char *tmp = test_tmpdir("pipeline-threads");
	int n = (int)(sizeof(geometries) / sizeof(geometries[0]));

	plan_lazy();
	for (int i = 0; i < n; i++)
		check_geometry(&geometries[i], &rng, tmp, i);
	check_failure(&rng);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
