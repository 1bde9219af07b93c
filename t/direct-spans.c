/*
 * direct-spans.c - spans of whole epochs taken straight from the caller's
 * memory on the cpu backend (doc/design.md §14.1) write the same store,
 * byte for byte, as the same rows appended one at a time through staging:
 * spans of one epoch, of several, of a whole batch, of everything at once;
 * spans that start part way into an epoch; a last epoch that is partial;
 * a span at an address that is not aligned to the element (always
 * copied).  Each store also reads back as the input, and the stream's
 * bytes_staged says what was copied.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define Y 37
#define X 29
#define ROW_BYTES ((size_t)Y * X * 2)
#define EPOCH_ROWS 2
#define EPOCH_BYTES (EPOCH_ROWS * ROW_BYTES)

static char *tmp;

/* 4 x 3 chunks an epoch, edges in y and x, one shard of 7 epochs, which
 * no batch of the plan's (85 epochs, or fewer with max_memory) divides. */
static void geometry(shardpipe_desc *d, shardpipe_codec codec, int threads,
		     uint64_t bounded_rows, uint64_t max_memory)
{
	shardpipe_desc_init(d);
	d->rank = 3;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->codec = codec;
	d->backend = "cpu";
	d->threads = threads;
	d->max_memory = max_memory;
	d->dims[0].size = bounded_rows;
	d->dims[0].chunk = EPOCH_ROWS;
	d->dims[0].chunks_per_shard = 7;
	d->dims[1].size = Y;
	d->dims[1].chunk = 12;
	d->dims[1].chunks_per_shard = 4;
	d->dims[2].size = X;
	d->dims[2].chunk = 10;
	d->dims[2].chunks_per_shard = 3;
}

/* Append n bytes from src to the store at path in spans: first `head`
 * bytes, then `span` bytes at a time.  *st gets the stream's stats. */
static int write_store(const char *path, const shardpipe_desc *d,
		       const uint8_t *src, size_t n, size_t head, size_t span,
		       shardpipe_stats *st)
{
	shardpipe_stream *s;
	size_t at = 0;
	int rc;

	rc = shardpipe_stream_open(&s, path, d);
	if (rc != SHARDPIPE_OK) {
		diag("open %s: %s", path, shardpipe_last_error_message());
		return rc;
	}
	if (head > n)
		head = n;
	if (head > 0)
		rc = shardpipe_stream_append(s, src, head);
	at = head;
	while (rc == SHARDPIPE_OK && at < n) {
		size_t take = n - at < span ? n - at : span;

		rc = shardpipe_stream_append(s, src + at, take);
		at += take;
	}
	memset(st, 0, sizeof(*st));
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_stream_stats(s, st);
	if (rc != SHARDPIPE_OK)
		diag("append %s: %s", path, shardpipe_last_error_message());
	if (shardpipe_stream_close(s) != SHARDPIPE_OK && rc == SHARDPIPE_OK) {
		diag("close %s: %s", path, shardpipe_last_error_message());
		rc = SHARDPIPE_ERR_IO;
	}
	return rc;
}

struct shape_case {
	const char *name;
	size_t head, span;   /* bytes */
	int misalign;        /* the input one byte past an aligned address */
	int staged;          /* 1: all copied; -1: some not; 0: no claim */
};

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;
	/* 1361 rows: 680 whole epochs (8 batches of 85) and a partial one. */
	const uint64_t rows = 1361;
	const size_t n = (size_t)rows * ROW_BYTES;
	const size_t batch = 85 * EPOCH_BYTES;
	const struct shape_case cases[] = {
		{ "spans of one epoch", 0, EPOCH_BYTES, 0, 0 },
		{ "spans of three epochs and a row", 0,
		  3 * EPOCH_BYTES + ROW_BYTES, 0, 0 },
		{ "half an epoch, then spans of five epochs",
		  EPOCH_BYTES / 2, 5 * EPOCH_BYTES, 0, 0 },
		{ "spans of a whole batch", 0, batch, 0, 0 },
		{ "spans of a batch and a half epoch", 0,
		  batch + EPOCH_BYTES / 2, 0, 0 },
		{ "everything in one append", 0, n, 0, -1 },
		{ "everything in one append, at an odd address", 0, n, 1, 1 },
		{ "spans of one epoch, at an odd address", 0, EPOCH_BYTES, 1,
		  1 },
	};
	const shardpipe_codec codecs[] = { SHARDPIPE_CODEC_ZSTD,
					   SHARDPIPE_CODEC_GZIP,
					   SHARDPIPE_CODEC_NONE };
	const size_t ncases = sizeof(cases) / sizeof(cases[0]);
	uint8_t *data = test_xmalloc(n), *odd = test_xmalloc(n + 1);
	char base[1200], path[1200];

	if (test_host_big())
		skip_all("a big-endian host copies every span into staging "
			 "to swap it (doc/design.md §20)");
	plan((int)(ncases * 3 + 2));
	tmp = test_tmpdir("direct-spans");
	test_fill(data, n, 3, &rng);
	/* Some noise, so that chunks differ in size and shards are ragged. */
	for (size_t i = 0; i < n; i += 97)
		data[i] = (uint8_t)test_rand(&rng);
	memcpy(odd + 1, data, n);

	for (size_t c = 0; c < ncases; c++) {
		const struct shape_case *k = &cases[c];
		shardpipe_codec codec = codecs[c % 3];
		int threads = 1 + (int)(c % 3);
		/* Bounded every other case: the last epoch is then partial
		 * in the array too, not just in the input. */
		uint64_t bounded = c % 2 ? rows : 0;
		shardpipe_desc d;
		shardpipe_stats st, bst;
		int files = 0, same;

		geometry(&d, codec, threads, bounded, 0);
		snprintf(base, sizeof(base), "%s/base%zu", tmp, c);
		snprintf(path, sizeof(path), "%s/case%zu", tmp, c);
		if (write_store(base, &d, data, n, 0, ROW_BYTES, &bst) !=
		    SHARDPIPE_OK)
			bail("the staged store of case %zu was not written", c);
		if (bst.bytes_staged != n)
			bail("appends of one row were not all staged (%llu of "
			     "%zu bytes)", (unsigned long long)bst.bytes_staged,
			     n);
		is_int(write_store(path, &d, k->misalign ? odd + 1 : data, n,
				   k->head, k->span, &st),
		       SHARDPIPE_OK, "%s (%s, %d threads, %s): written",
		       k->name, shardpipe_codec_name(codec), threads,
		       bounded ? "bounded" : "unbounded");
		same = test_same_tree(path, base, &files) &&
		       test_reads_back(path, rows, data, n);
		ok(same && files > 0, "%s: the same %d files as appends of one row, reading "
		   "back as the input (%llu of %zu bytes staged)", k->name,
		   files, (unsigned long long)st.bytes_staged, n);
		ok(st.bytes_in == n &&
		   (k->staged == 1 ? st.bytes_staged == n
		    : k->staged == -1 ? st.bytes_staged < n
				      : st.bytes_staged <= n),
		   "%s: bytes_in %llu, bytes_staged %llu%s", k->name,
		   (unsigned long long)st.bytes_in,
		   (unsigned long long)st.bytes_staged,
		   k->staged == 1 ? ": all copied, unaligned"
		   : k->staged == -1 ? ": batches after the first are "
				       "taken straight"
				     : "");
	}

	/* max_memory small enough to lower the batch to a few epochs:
	 * spans of whole epochs still land in the right slots. */
	{
		shardpipe_desc d;
		shardpipe_stats st, bst;
		int files = 0, same;

		geometry(&d, SHARDPIPE_CODEC_ZSTD, 2, 0, 0);
		d.max_memory = 2u << 20;
		snprintf(base, sizeof(base), "%s/base-small", tmp);
		snprintf(path, sizeof(path), "%s/case-small", tmp);
		if (write_store(base, &d, data, n, 0, ROW_BYTES, &bst) !=
		    SHARDPIPE_OK)
			bail("the staged store under max_memory was not "
			     "written");
		is_int(write_store(path, &d, data, n, 0, 7 * EPOCH_BYTES, &st),
		       SHARDPIPE_OK, "max_memory 2 MiB, spans of 7 epochs: "
		       "written (pools %llu bytes)",
		       (unsigned long long)st.pool_bytes);
		same = test_same_tree(path, base, &files) &&
		       test_reads_back(path, rows, data, n);
		ok(same && files > 0, "max_memory 2 MiB: the same %d files as appends of one "
		   "row", files);
	}
	test_rmtree(tmp);
	free(data);
	free(odd);
	return done_testing();
}
