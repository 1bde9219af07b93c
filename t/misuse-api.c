/*
 * misuse-api.c - what the API does when it is used wrongly, as
 * include/shardpipe.h documents it: NULL handles and arguments are refused
 * with SHARDPIPE_ERR_INVALID_ARGUMENT (close and reader_close accept
 * NULL); zero-length appends change nothing; one append larger than the
 * staging batch writes the same bytes as many small ones; appending past a
 * bounded dim 0 keeps what fits and the stream still closes; flush after
 * a failure returns the failure; a second stream on the same path is
 * refused with SHARDPIPE_ERR_EXISTS and leaves the first intact.
 *
 * Not testable, by design, and so not in the plan: close frees the
 * stream, so "close twice" and "append after close" are uses of freed
 * memory, exactly as free() twice is; and calls on one stream from two
 * threads at once are documented as not allowed (the header's first
 * paragraph).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fault-check.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

static char *tmp;

static void describe(shardpipe_desc *d, uint64_t rows, uint64_t cols)
{
	shardpipe_desc_init(d);
	d->rank = 2;
	d->dtype = SHARDPIPE_DTYPE_UINT8;
	d->codec = SHARDPIPE_CODEC_ZSTD;
	d->level = 1;
	d->backend = "cpu";
	d->threads = 2;
	d->dims[0] = (shardpipe_dim){ "t", rows, 64, 2 };
	d->dims[1] = (shardpipe_dim){ "x", cols, 256, 2 };
}

static const uint8_t *g_input;
static size_t g_row_bytes, g_rows;

static const uint8_t *input_row(void *user, uint64_t r)
{
	(void)user;
	return r < g_rows ? g_input + r * g_row_bytes : NULL;
}

static void null_handles(void)
{
	shardpipe_desc d;
	shardpipe_stream *s = (shardpipe_stream *)&d; /* must be reset */
	shardpipe_reader *r = (shardpipe_reader *)&d;
	shardpipe_stats st;
	shardpipe_array_info info;
	shardpipe_sink nosink = test_sink(NULL, NULL, NULL), zero = { 0 };
	char path[1100];
	uint64_t start[1] = { 0 }, count[1] = { 1 };
	int bad = 0;

	describe(&d, 0, 300);
	snprintf(path, sizeof(path), "%s/null.zarr", tmp);
#define EXPECT(expr, want)                                                    \
	do {                                                                  \
		int got_ = (expr);                                            \
		if (got_ != (want)) {                                         \
			diag("%s returned %d, expected %d", #expr, got_,      \
			     (int)(want));                                    \
			bad++;                                                \
		}                                                             \
	} while (0)
	EXPECT(shardpipe_stream_open(NULL, path, &d),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_stream_open(&s, NULL, &d),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(s == NULL, 1);
	s = (shardpipe_stream *)&d;
	EXPECT(shardpipe_stream_open(&s, path, NULL),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(s == NULL, 1);
	EXPECT(shardpipe_stream_open_sink(&s, NULL, &d),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_stream_open_sink(&s, &nosink, &d),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_stream_open_sink(&s, &zero, &d),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(s == NULL, 1);
	EXPECT(access(path, F_OK) != 0, 1);
	EXPECT(shardpipe_stream_append(NULL, "x", 1),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_stream_append(NULL, NULL, 0),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_stream_flush(NULL), SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_stream_close(NULL), SHARDPIPE_OK);
	EXPECT(shardpipe_stream_stats(NULL, &st),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_stream_message(NULL) != NULL, 1);
	EXPECT(shardpipe_stream_backend(NULL) == NULL, 1);
	EXPECT(shardpipe_reader_open(NULL, path),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_reader_open(&r, NULL),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(r == NULL, 1);
	EXPECT(shardpipe_reader_info(NULL, &info),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_reader_read(NULL, start, count, &info, sizeof(info)),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_reader_check(NULL), SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_reader_message(NULL) != NULL, 1);
	shardpipe_reader_close(NULL);
	shardpipe_desc_init(NULL);
	EXPECT(shardpipe_strerror(-1) != NULL, 1);
	EXPECT(shardpipe_strerror(SHARDPIPE_ERR_COUNT_ + 100) != NULL, 1);
	EXPECT(shardpipe_last_error_message() != NULL, 1);

	/* A live stream: NULL out-pointers of its own calls. */
	EXPECT(shardpipe_stream_open(&s, path, &d), SHARDPIPE_OK);
	EXPECT(shardpipe_stream_stats_sized(s, NULL, sizeof(st)),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_stream_close(s), SHARDPIPE_OK);
	EXPECT(shardpipe_reader_open(&r, path), SHARDPIPE_OK);
	EXPECT(shardpipe_reader_info_sized(r, NULL, sizeof(info)),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	EXPECT(shardpipe_reader_read(r, NULL, count, &info, sizeof(info)),
	       SHARDPIPE_ERR_INVALID_ARGUMENT);
	shardpipe_reader_close(r);
#undef EXPECT
	ok(bad == 0, "NULL handles and arguments are refused with "
	   "INVALID_ARGUMENT; close(NULL) and reader_close(NULL) do nothing");
}

/* Write input with the given span sizes (0-length spans included). */
static int write_spans(const char *path, const shardpipe_desc *d,
		       const uint8_t *in, size_t n, size_t span, int zeros)
{
	shardpipe_stream *s;
	size_t at = 0;
	int rc = shardpipe_stream_open(&s, path, d);

	if (rc != SHARDPIPE_OK)
		return rc;
	while (rc == SHARDPIPE_OK && at < n) {
		size_t k = span < n - at ? span : n - at;

		if (zeros) {
			rc = shardpipe_stream_append(s, NULL, 0);
			if (rc == SHARDPIPE_OK)
				rc = shardpipe_stream_append(s, in + at, 0);
		}
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_append(s, in + at, k);
		at += k;
	}
	if (rc != SHARDPIPE_OK) {
		shardpipe_stream_close(s);
		return rc;
	}
	return shardpipe_stream_close(s);
}

int main(int argc, char **argv)
{
	uint64_t rng;
	const size_t cols = 1000, rows = 300; /* 300 KB */
	/* 64-row epochs of 1000 bytes: 256 of them fill the 16 MiB batch. */
	const size_t big_rows = 17000;
	uint8_t *in, *big;
	shardpipe_desc d;
	shardpipe_stream *s;
	char a[1100], b[1100];
	struct fc_geom g;
	struct fc_report rep;
	int rc;

	(void)argc;
	fc_passive_omp(argv);
	alarm(fc_timeout(300));
	rng = test_seed();
	tmp = test_tmpdir("misuse");
	plan(11);

	null_handles();

	in = malloc(rows * cols);
	if (in == NULL)
		bail("out of memory");
	test_fill(in, rows * cols, 3, &rng);
	g_input = in;
	g_row_bytes = cols;
	g_rows = rows;

	/* Zero-length appends, with and without a buffer. */
	describe(&d, 0, cols);
	snprintf(a, sizeof(a), "%s/ref.zarr", tmp);
	snprintf(b, sizeof(b), "%s/zeros.zarr", tmp);
	rc = write_spans(a, &d, in, rows * cols, 4099, 0);
	ok(rc == SHARDPIPE_OK && write_spans(b, &d, in, rows * cols, 4099, 1) ==
					 SHARDPIPE_OK &&
		   test_same_tree(a, b, NULL),
	   "zero-length appends (NULL or not) between spans change nothing");

	/* One append far larger than the staging batch. */
	big = malloc(big_rows * cols);
	if (big == NULL)
		bail("out of memory");
	test_fill(big, big_rows * cols, 3, &rng);
	snprintf(a, sizeof(a), "%s/big1.zarr", tmp);
	snprintf(b, sizeof(b), "%s/bigN.zarr", tmp);
	rc = write_spans(a, &d, big, big_rows * cols, big_rows * cols, 0);
	ok(rc == SHARDPIPE_OK &&
		   write_spans(b, &d, big, big_rows * cols, 65537, 0) ==
			   SHARDPIPE_OK &&
		   test_same_tree(a, b, NULL),
	   "one append of %zu MB (over the 16 MiB batch) writes the same "
	   "bytes as spans of 64 KiB + 1", big_rows * cols >> 20);
	g_input = big;
	g_rows = big_rows;
	fc_geom_from_desc(&g, &d);
	ok(fc_check_store(a, &g, input_row, NULL, 0, &rep) == 0 &&
		   rep.shape0 == big_rows,
	   "and that store holds the input (%s)", rep.why);
	test_rmtree(a);
	test_rmtree(b);
	free(big);
	g_input = in;
	g_rows = rows;

	/* NULL data with a length: refused, nothing consumed. */
	snprintf(a, sizeof(a), "%s/nulldata.zarr", tmp);
	rc = shardpipe_stream_open(&s, a, &d);
	shardpipe_stats st0, st1;
	shardpipe_stream_append(s, in, 1000);
	shardpipe_stream_stats(s, &st0);
	rc = shardpipe_stream_append(s, NULL, 10);
	shardpipe_stream_stats(s, &st1);
	ok(rc == SHARDPIPE_ERR_INVALID_ARGUMENT &&
		   st1.bytes_in == st0.bytes_in,
	   "append(NULL, 10) is refused with INVALID_ARGUMENT and consumes "
	   "nothing (%s)", shardpipe_stream_message(s));
	{
		int later = shardpipe_stream_append(s, in + 1000, 1000);
		int closed = shardpipe_stream_close(s);

		ok((later == SHARDPIPE_OK && closed == SHARDPIPE_OK) ||
			   (later == rc && closed == rc),
		   "after it the stream either goes on or stays failed "
		   "(append %d, close %d)", later, closed);
		if (later == SHARDPIPE_OK)
			diag("NULL data is not sticky: the stream went on");
		else
			diag("NULL data is sticky, as \"any other failure\" in "
			     "the header says");
	}

	/* Past a bounded dim 0: what fits is kept, and it still closes. */
	describe(&d, 100, cols);
	snprintf(a, sizeof(a), "%s/bounded.zarr", tmp);
	rc = shardpipe_stream_open(&s, a, &d);
	int r1 = shardpipe_stream_append(s, in, 130 * cols);
	int r2 = shardpipe_stream_append(s, in, cols);
	int r3 = shardpipe_stream_flush(s);
	int r4 = shardpipe_stream_close(s);
	fc_geom_from_desc(&g, &d);
	ok(rc == SHARDPIPE_OK && r1 == SHARDPIPE_ERR_BEYOND_END &&
		   r2 == SHARDPIPE_ERR_BEYOND_END && r3 == SHARDPIPE_OK &&
		   r4 == SHARDPIPE_OK,
	   "appending past a bounded dim 0: BEYOND_END (twice), then flush "
	   "and close succeed (%d %d %d %d)", r1, r2, r3, r4);
	ok(fc_check_store(a, &g, input_row, NULL, 0, &rep) == 0 &&
		   rep.shape0 == 100,
	   "the 100 rows that fit are all there (%s)", rep.why);

	/* A second stream on the same path. */
	describe(&d, 0, cols);
	snprintf(a, sizeof(a), "%s/twice.zarr", tmp);
	shardpipe_stream *s2 = NULL;
	rc = shardpipe_stream_open(&s, a, &d);
	shardpipe_stream_append(s, in, rows * cols);
	int r5 = shardpipe_stream_open(&s2, a, &d);
	r4 = shardpipe_stream_close(s);
	fc_geom_from_desc(&g, &d);
	ok(r5 == SHARDPIPE_ERR_EXISTS && s2 == NULL && r4 == SHARDPIPE_OK &&
		   fc_check_store(a, &g, input_row, NULL, 0, &rep) == 0 &&
		   rep.shape0 == rows,
	   "a second stream on a path in use is refused with EXISTS; the "
	   "first completes (%s)", rep.why);

	/* Flush with nothing new, twice; close right after open. */
	snprintf(a, sizeof(a), "%s/empty.zarr", tmp);
	rc = shardpipe_stream_open(&s, a, &d);
	r1 = shardpipe_stream_flush(s);
	r2 = shardpipe_stream_flush(s);
	r3 = shardpipe_stream_close(s);
	g_rows = 0;
	ok(rc == SHARDPIPE_OK && r1 == SHARDPIPE_OK && r2 == SHARDPIPE_OK &&
		   r3 == SHARDPIPE_OK &&
		   fc_check_store(a, &g, input_row, NULL, 0, &rep) == 0 &&
		   rep.shape0 == 0 && rep.shards == 0,
	   "flush twice with no data, then close: an empty array (%s)",
	   rep.why);
	g_rows = rows;

	/* A partial row, then flush, then the rest. */
	snprintf(a, sizeof(a), "%s/partial.zarr", tmp);
	rc = shardpipe_stream_open(&s, a, &d);
	r1 = shardpipe_stream_append(s, in, 64 * cols + 17);
	r2 = shardpipe_stream_flush(s);
	r3 = shardpipe_stream_append(s, in + 64 * cols + 17,
				     rows * cols - 64 * cols - 17);
	r4 = shardpipe_stream_close(s);
	ok(rc == SHARDPIPE_OK && r1 == SHARDPIPE_OK && r2 == SHARDPIPE_OK &&
		   r3 == SHARDPIPE_OK && r4 == SHARDPIPE_OK &&
		   fc_check_store(a, &g, input_row, NULL, 0, &rep) == 0 &&
		   rep.shape0 == rows,
	   "flush in the middle of a row keeps the partial row for later "
	   "(%s)", rep.why);

	/* That no call above corrupted memory is asserted by the runs of
	 * this program under valgrind (t/fault-valgrind.sh) and
	 * AddressSanitizer (scripts/run-sanitizers). */

	free(in);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
