/*
 * laid-staging.c - streams on the cpu backend whose staging is laid out as
 * chunks (doc/design.md §14.7) write the stores the reference backend
 * writes from the same appends, byte for byte with codec none (same files,
 * same empty chunks left out), and read back equal to their input with
 * zstd and gzip.  The appends are hostile to the deal: spans of random
 * sizes that cut rows of dim 0 anywhere, spans of exactly one row, skips
 * (rows of fill, which are left out) in the middle, a flush that leaves a
 * partial epoch to be kept, and a last epoch cut short.  Geometries: edge
 * chunks along every dim, a view of rank 2 (dims merged into dim 0 and
 * into the last), a 4-d view, and 1- to 8-byte elements, with fill value
 * 0 and a fill value whose bytes differ.  In half the cases the data
 * themselves hold the fill value over a run of elements from the start to
 * inside a row (a flush among them or after) and from inside a row to the
 * end:
 * batches of fill appended are left out without being dealt, and the fill
 * before the first element that is not is dealt when it comes, at any
 * byte of a unit.  Data are random from the printed seed.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

struct geo {
	const char *what;
	int rank;
	shardpipe_dtype dtype;
	unsigned esize;
	uint64_t size[4], chunk[4], cps[4];
};

static const struct geo geos[] = {
	{ "uint16, edges along every dim", 3, SHARDPIPE_DTYPE_UINT16, 2,
	  { 37, 50, 130 }, { 8, 16, 32 }, { 2, 2, 2 } },
	/* Dim 1 merges into dim 0 and dim 3 into dim 2: a view of rank 2,
	 * three units a row. */
	{ "uint8, a view of rank 2", 4, SHARDPIPE_DTYPE_UINT8, 1,
	  { 21, 3, 40, 64 }, { 4, 3, 8, 64 }, { 2, 1, 2, 1 } },
	{ "uint32, a view of rank 4", 4, SHARDPIPE_DTYPE_UINT32, 4,
	  { 13, 5, 6, 70 }, { 3, 2, 4, 16 }, { 2, 2, 1, 3 } },
	{ "float64, edges", 3, SHARDPIPE_DTYPE_FLOAT64, 8,
	  { 10, 9, 33 }, { 4, 4, 8 }, { 1, 2, 2 } },
};

#define N_GEOS (sizeof(geos) / sizeof(geos[0]))

enum { SPANS_RANDOM, SPANS_ROW, N_SPANS };

static void describe(shardpipe_desc *d, const struct geo *g,
		     const char *backend, shardpipe_codec codec, int odd_fill)
{
	shardpipe_desc_init(d);
	d->rank = g->rank;
	d->dtype = g->dtype;
	d->codec = codec;
	d->level = 1;
	d->backend = backend;
	d->threads = 2;
	d->overwrite = 1;
	for (int i = 0; i < g->rank; i++) {
		d->dims[i].size = g->size[i];
		d->dims[i].chunk = g->chunk[i];
		d->dims[i].chunks_per_shard = g->cps[i];
	}
	/* Bytes that differ: a fill the deal must not take for zeros. */
	if (odd_fill)
		for (unsigned b = 0; b < g->esize; b++)
			d->fill_value[b] = (unsigned char)(0x11 * (b + 1));
}

/*
 * Append data (n bytes, rows of row bytes) to a stream on dir: spans of
 * random sizes or of one row each, rows skip0..skip1 skipped (their
 * expected bytes are the fill value), a flush after row flush_at.
 */
static int write_store(const char *dir, const shardpipe_desc *d,
		       const uint8_t *data, size_t n, size_t row, int spans,
		       uint64_t skip0, uint64_t skip1, uint64_t flush_at,
		       uint64_t seed)
{
	shardpipe_stream *s;
	uint64_t rng = seed;
	size_t at = 0;
	int rc = shardpipe_stream_open(&s, dir, d), flushed = 0;

	if (rc != SHARDPIPE_OK) {
		diag("open %s: %s", d->backend, shardpipe_last_error_message());
		return rc;
	}
	while (at < n && rc == SHARDPIPE_OK) {
		size_t k = spans == SPANS_ROW ? row
					      : 1 + test_rand(&rng) % (3 * row);
		size_t lo = (size_t)skip0 * row, hi = (size_t)skip1 * row;

		if (at >= lo && at < hi) {
			rc = shardpipe_stream_skip(s, hi - at);
			at = hi;
			continue;
		}
		if (at < lo && k > lo - at)
			k = lo - at;
		if (k > n - at)
			k = n - at;
		rc = shardpipe_stream_append(s, data + at, k);
		at += k;
		if (rc == SHARDPIPE_OK && !flushed && at >= flush_at * row) {
			rc = shardpipe_stream_flush(s);
			flushed = 1;
		}
	}
	if (rc != SHARDPIPE_OK)
		diag("append %s: %s", d->backend, shardpipe_stream_message(s));
	if (shardpipe_stream_close(s) != SHARDPIPE_OK && rc == SHARDPIPE_OK) {
		diag("close: %s", shardpipe_last_error_message());
		rc = SHARDPIPE_ERR_IO;
	}
	return rc;
}

/* Elements e0..e1 of data set to the fill element. */
static void fill_elems(uint8_t *data, const shardpipe_desc *d, unsigned es,
		       size_t e0, size_t e1)
{
	for (size_t e = e0; e < e1; e++)
		memcpy(data + e * es, d->fill_value, es);
}

static void check(const char *tmp, const struct geo *g, int spans,
		  int odd_fill, int fill_runs, uint64_t *rng)
{
	static const shardpipe_codec codecs[] = {
		SHARDPIPE_CODEC_NONE, SHARDPIPE_CODEC_ZSTD,
		SHARDPIPE_CODEC_GZIP,
	};
	size_t row = g->esize, n;
	uint8_t *data, *want;
	uint64_t skip0, skip1, flush_at, seed = test_rand(rng);
	shardpipe_desc d;

	for (int i = 1; i < g->rank; i++)
		row *= (size_t)g->size[i];
	n = row * (size_t)g->size[0];
	data = test_xmalloc(n);
	want = test_xmalloc(n);
	test_fill(data, n, 3, rng);
	/* Rows of fill, whole epochs among them where there is room; a
	 * flush inside an epoch. */
	skip0 = 1 + test_rand(rng) % (g->size[0] / 2);
	skip1 = skip0 + 1 + test_rand(rng) % (2 * g->chunk[0]);
	if (skip1 > g->size[0] - 1)
		skip1 = g->size[0] - 1;
	flush_at = 1 + test_rand(rng) % (g->size[0] - 1);
	describe(&d, g, "cpu", SHARDPIPE_CODEC_NONE, odd_fill);
	if (fill_runs) {
		size_t elems = n / g->esize, per_row = row / g->esize;
		size_t e0 = per_row * (g->size[0] / 2) +
			    test_rand(rng) % per_row;
		size_t e1 = elems - 1 - test_rand(rng) % (elems / 3);

		fill_elems(data, &d, g->esize, 0, e0);
		fill_elems(data, &d, g->esize, e1, elems);
		/* The flush among the first run's rows, or after it. */
		flush_at = test_rand(rng) % 2 ? 1 + test_rand(rng) %
							    (g->size[0] / 2)
					      : g->size[0] - 1;
		skip0 = skip1 = 0;
	}
	memcpy(want, data, n);
	for (size_t k = skip0 * row; k < skip1 * row; k += g->esize)
		memcpy(want + k, d.fill_value, g->esize);

	for (size_t c = 0; c < sizeof(codecs) / sizeof(codecs[0]); c++) {
		char dir[2][600];
		const char *be[2] = { "cpu", "reference" };
		int nb = codecs[c] == SHARDPIPE_CODEC_NONE ? 2 : 1;
		int rc = SHARDPIPE_OK, good, files = 0;

		for (int b = 0; b < nb && rc == SHARDPIPE_OK; b++) {
			snprintf(dir[b], sizeof(dir[b]), "%s/%s.zarr", tmp,
				 be[b]);
			describe(&d, g, be[b], codecs[c], odd_fill);
			rc = write_store(dir[b], &d, data, n, row, spans,
					 skip0, skip1, flush_at, seed);
		}
		good = rc == SHARDPIPE_OK &&
		       test_reads_back(dir[0], g->size[0], want, n);
		if (good && nb == 2)
			good = test_same_tree(dir[0], dir[1], &files);
		ok(good,
		   "%s, %s, %s, fill %s%s, rows %llu..%llu skipped, flush "
		   "after row %llu: reads back%s", g->what,
		   shardpipe_codec_name(codecs[c]),
		   spans == SPANS_ROW ? "spans of a row" : "random spans",
		   odd_fill ? "0x11.." : "0",
		   fill_runs ? " (also appended: a run from the start, one "
			       "to the end)" : "",
		   (unsigned long long)skip0,
		   (unsigned long long)skip1, (unsigned long long)flush_at,
		   nb == 2 ? ", the reference backend's very files" : "");
		if (nb == 2 && good)
			diag("%d files alike", files);
		for (int b = 0; b < nb; b++)
			test_rmtree(dir[b]);
	}
	free(data);
	free(want);
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;
	char *tmp = test_tmpdir("laid-staging");

	plan((int)(N_GEOS * N_SPANS * 2 * 2 * 3));
	diag("seed %llu (SHARDPIPE_TEST_SEED)", (unsigned long long)seed);
	for (size_t g = 0; g < N_GEOS; g++)
		for (int sp = 0; sp < N_SPANS; sp++)
			for (int f = 0; f < 2; f++)
				for (int runs = 0; runs < 2; runs++)
					check(tmp, &geos[g], sp, f, runs,
					      &rng);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
