/*
 * abi-structs.c - the public structs that may grow (doc/design.md §16.3)
 * as programs built against other releases see them.
 *
 * An older program owns fewer bytes of each struct: its size is simulated
 * by passing the offset of a later field, with canary bytes after it, and
 * the library must write nothing past that size (nor read a sink callback
 * past it).  A newer program owns more: bytes past the library's own
 * struct must stay untouched, and struct_size tells which fields were
 * filled.  A size of 0 or one too small to hold struct_size is refused.
 * The fields that were written are checked against a full-size call.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define CANARY 0xa5
#define EXTRA 64 /* bytes a newer release might have appended */

/* Room for any of the structs and EXTRA more bytes, suitably aligned. */
union room {
	shardpipe_stats stats;
	shardpipe_array_info info;
	shardpipe_backend_info backend;
	shardpipe_sink sink;
	unsigned char bytes[sizeof(shardpipe_array_info) + EXTRA];
};

/* Whether bytes[from, to) all hold the canary; diag names the first that
 * does not. */
static int untouched(const union room *r, size_t from, size_t to,
		     const char *what)
{
	for (size_t i = from; i < to; i++) {
		if (r->bytes[i] != CANARY) {
			diag("%s: byte %zu was written (0x%02x)", what, i,
			     r->bytes[i]);
			return 0;
		}
	}
	return 1;
}

/* A getter under test: fill `size` bytes at out, return the code. */
typedef int (*getter)(void *ctx, void *out, size_t size);

static int get_stats(void *ctx, void *out, size_t size)
{
	return shardpipe_stream_stats_sized(ctx, out, size);
}

static int get_info(void *ctx, void *out, size_t size)
{
	return shardpipe_reader_info_sized(ctx, out, size);
}

static int get_backend(void *ctx, void *out, size_t size)
{
	(void)ctx;
	/* cpu: usable everywhere, with a detail that is never empty */
	for (int i = 0; i < shardpipe_backend_count(); i++) {
		shardpipe_backend_info b;

		if (shardpipe_backend_probe(i, &b) == SHARDPIPE_OK &&
		    strcmp(b.name, "cpu") == 0)
			return shardpipe_backend_probe_sized(i, out, size);
	}
	return -1;
}

/*
 * Seven tests for one output struct of full size `full`, of which an older
 * caller holds `older` bytes (the offset of a later field): the older, the
 * newer and the two refused sizes.  `whole` is a full-size result to
 * compare the written bytes with (struct_size aside).
 */
static void check_getter(const char *name, getter get, void *ctx,
			 size_t full, size_t older, const void *whole)
{
	union room r;
	size_t sz;

	memset(&r, CANARY, sizeof(r));
	is_int(get(ctx, &r, older), SHARDPIPE_OK, "%s: an older caller's %zu "
	       "bytes (of %zu) are filled", name, older, full);
	memcpy(&sz, r.bytes, sizeof(sz));
	ok(sz == older && untouched(&r, older, sizeof(r), name) &&
	   memcmp(r.bytes + sizeof(sz), (const unsigned char *)whole +
		  sizeof(sz), older - sizeof(sz)) == 0,
	   "%s: struct_size %zu, the fields inside it as a full call gives, "
	   "nothing written past it", name, sz);

	memset(&r, CANARY, sizeof(r));
	is_int(get(ctx, &r, full + EXTRA), SHARDPIPE_OK,
	       "%s: a newer caller's %zu bytes", name, full + EXTRA);
	memcpy(&sz, r.bytes, sizeof(sz));
	ok(sz == full && untouched(&r, full, full + EXTRA, name) &&
	   memcmp(r.bytes + sizeof(sz), (const unsigned char *)whole +
		  sizeof(sz), full - sizeof(sz)) == 0,
	   "%s: struct_size %zu (this library's), the %d bytes it does not "
	   "know untouched", name, sz, EXTRA);

	memset(&r, CANARY, sizeof(r));
	is_int(get(ctx, &r, 0), SHARDPIPE_ERR_INVALID_ARGUMENT,
	       "%s: size 0 is refused", name);
	is_int(get(ctx, &r, sizeof(size_t) - 1),
	       SHARDPIPE_ERR_INVALID_ARGUMENT,
	       "%s: a size that cannot hold struct_size is refused", name);
	ok(untouched(&r, 0, sizeof(r), name), "%s: refusals write nothing",
	   name);
}

/* What the sink tests count. */
struct counts {
	int shards, metas;
};

static int on_shard(void *user, const uint64_t *coords, int rank,
		    const void *data, size_t data_bytes, const void *index,
		    size_t index_bytes)
{
	(void)coords;
	(void)rank;
	(void)data;
	(void)data_bytes;
	(void)index;
	(void)index_bytes;
	((struct counts *)user)->shards++;
	return 0;
}

static int on_meta(void *user, const char *json, size_t n)
{
	(void)json;
	(void)n;
	((struct counts *)user)->metas++;
	return 0;
}

/* Open a sink stream on the caller's sink bytes, append 16 rows, close. */
static int run_sink(const shardpipe_sink *sink)
{
	shardpipe_desc d;
	shardpipe_stream *s;
	uint8_t in[16 * 4];
	int rc;

	memset(in, 7, sizeof(in));
	shardpipe_desc_init(&d);
	d.rank = 2;
	d.backend = "cpu";
	d.codec = SHARDPIPE_CODEC_NONE;
	d.dims[0].size = 16;
	d.dims[0].chunk = 4;
	d.dims[0].chunks_per_shard = 2;
	d.dims[1].size = 4;
	d.dims[1].chunk = 4;
	d.dims[1].chunks_per_shard = 1;
	rc = shardpipe_stream_open_sink(&s, sink, &d);
	if (rc != SHARDPIPE_OK)
		return rc;
	rc = shardpipe_stream_append(s, in, sizeof(in));
	if (rc != SHARDPIPE_OK) {
		shardpipe_stream_close(s);
		return rc;
	}
	return shardpipe_stream_close(s);
}

static void check_sink(void)
{
	union room r;
	struct counts c = { 0 };
	size_t older = offsetof(shardpipe_sink, metadata), sz;
	shardpipe_sink *k = &r.sink;

	/* shardpipe_sink_init() of an older caller: nothing past its size. */
	memset(&r, CANARY, sizeof(r));
	shardpipe_sink_init_sized(k, older);
	memcpy(&sz, r.bytes, sizeof(sz));
	ok(sz == older && untouched(&r, older, sizeof(r), "sink init"),
	   "sink: init of an older caller's %zu bytes sets struct_size and "
	   "writes nothing past it", older);

	/* Before metadata existed: the canary where it would be is a
	 * pointer the library must never call. */
	k->user = &c;
	k->shard = on_shard;
	is_int(run_sink(k), SHARDPIPE_OK,
	       "sink: an older caller's sink (no metadata callback) streams");
	ok(c.shards == 2 && c.metas == 0,
	   "sink: its 2 shards arrive, and the bytes past its size are not "
	   "read as a callback (%d shards, %d metadata)", c.shards, c.metas);

	/* A newer caller: bytes past this library's struct are ignored. */
	memset(&r, CANARY, sizeof(r));
	shardpipe_sink_init_sized(k, sizeof(*k) + EXTRA);
	memcpy(&sz, r.bytes, sizeof(sz));
	ok(sz == sizeof(*k) && k->user == NULL && k->shard == NULL &&
	   k->metadata == NULL &&
	   untouched(&r, sizeof(*k), sizeof(*k) + EXTRA, "sink init"),
	   "sink: init of a newer caller's struct fills this library's "
	   "%zu bytes and leaves the rest", sizeof(*k));
	k->struct_size = sizeof(*k) + EXTRA;
	k->user = &c;
	k->shard = on_shard;
	k->metadata = on_meta;
	c.shards = c.metas = 0;
	is_int(run_sink(k), SHARDPIPE_OK, "sink: a newer caller's sink "
	       "(struct_size %zu) streams", k->struct_size);
	ok(c.shards == 2 && c.metas >= 2, "sink: both callbacks are called "
	   "(%d shards, %d metadata)", c.shards, c.metas);

	/* Too small to hold the shard callback, or never initialised. */
	k->struct_size = offsetof(shardpipe_sink, shard);
	is_int(run_sink(k), SHARDPIPE_ERR_INVALID_ARGUMENT,
	       "sink: struct_size %zu (no shard callback) is refused: %s",
	       k->struct_size, shardpipe_last_error_message());
	k->struct_size = 0;
	is_int(run_sink(k), SHARDPIPE_ERR_INVALID_ARGUMENT,
	       "sink: struct_size 0 (not initialised) is refused: %s",
	       shardpipe_last_error_message());
}

int main(void)
{
	uint64_t rng = test_seed();
	char *tmp = test_tmpdir("abi-structs");
	char path[1024];
	uint8_t in[24 * 5];
	shardpipe_desc d;
	shardpipe_stream *s;
	shardpipe_reader *r;
	shardpipe_stats st;
	shardpipe_array_info info;
	shardpipe_backend_info be;
	int rc;

	if (tmp == NULL)
		bail("no scratch directory");
	plan(3 * 7 + 5 + 8 + 2);
	test_fill(in, sizeof(in), 0, &rng);

	/* A live stream with counters past zero, for stats. */
	snprintf(path, sizeof(path), "%s/a.zarr", tmp);
	shardpipe_desc_init(&d);
	d.rank = 2;
	d.backend = "cpu";
	d.dims[0].size = 24;
	d.dims[0].chunk = 4;
	d.dims[0].chunks_per_shard = 2;
	d.dims[1].size = 5;
	d.dims[1].chunk = 2;
	d.dims[1].chunks_per_shard = 3;
	d.dims[1].name = "x";
	if (shardpipe_stream_open(&s, path, &d) != SHARDPIPE_OK)
		bail("open: %s", shardpipe_last_error_message());
	if (shardpipe_stream_append(s, in, sizeof(in)) != SHARDPIPE_OK ||
	    shardpipe_stream_flush(s) != SHARDPIPE_OK)
		bail("append: %s", shardpipe_stream_message(s));
	memset(&st, 0, sizeof(st));
	is_int(shardpipe_stream_stats(s, &st), SHARDPIPE_OK, "stats");
	ok(st.struct_size == sizeof(st) && st.bytes_in == sizeof(in) &&
	   st.shards_written > 0,
	   "stats through the macro: struct_size %zu, bytes_in %llu, "
	   "%llu shards", st.struct_size, (unsigned long long)st.bytes_in,
	   (unsigned long long)st.shards_written);
	/* An older caller: up to rows_written, before the stage times. */
	check_getter("stats", get_stats, s, sizeof(st),
		     offsetof(shardpipe_stats, seconds_stage), &st);
	if (shardpipe_stream_close(s) != SHARDPIPE_OK)
		bail("close: %s", shardpipe_last_error_message());

	if (shardpipe_reader_open(&r, path) != SHARDPIPE_OK)
		bail("reader: %s", shardpipe_last_error_message());
	memset(&info, 0, sizeof(info));
	is_int(shardpipe_reader_info(r, &info), SHARDPIPE_OK, "array info");
	ok(info.struct_size == sizeof(info) && info.rank == 2 &&
	   info.shape[0] == 24 && info.shard[1] == 6 &&
	   strcmp(info.dim_names[1], "x") == 0,
	   "array info through the macro: struct_size %zu, rank %d, "
	   "shape[0] %llu, shard[1] %llu, name \"%s\"", info.struct_size,
	   info.rank, (unsigned long long)info.shape[0],
	   (unsigned long long)info.shard[1], info.dim_names[1]);
	/* An older caller: before the dimension names. */
	check_getter("array info", get_info, r, sizeof(info),
		     offsetof(shardpipe_array_info, dim_names), &info);
	shardpipe_reader_close(r);

	memset(&be, 0, sizeof(be));
	rc = get_backend(NULL, &be, sizeof(be));
	ok(rc == SHARDPIPE_OK && be.struct_size == sizeof(be) && be.usable &&
	   be.detail[0] != '\0',
	   "backend info of cpu through the macro: struct_size %zu, usable, "
	   "\"%s\"", be.struct_size, be.detail);
	/* An older caller: before the detail. */
	check_getter("backend info", get_backend, NULL, sizeof(be),
		     offsetof(shardpipe_backend_info, detail), &be);

	check_sink();

	/* A caller's struct_size says which fields the library filled. */
	st.struct_size = offsetof(shardpipe_stats, seconds_stage);
	ok(SHARDPIPE_HAS_FIELD(&st, rows_written) &&
	   !SHARDPIPE_HAS_FIELD(&st, seconds_stage) &&
	   !SHARDPIPE_HAS_FIELD(&st, seconds_blocked),
	   "SHARDPIPE_HAS_FIELD: rows_written inside %zu bytes, the stage "
	   "times not", st.struct_size);
	st.struct_size = 0;
	ok(!SHARDPIPE_HAS_FIELD(&st, bytes_in),
	   "SHARDPIPE_HAS_FIELD: nothing inside struct_size 0");
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
