/*
 * abi-sizes.c - arrays larger than 4 GiB in total, and sizes that overflow.
 *
 * A bounded array of 48 GB (3e9 rows of 16 bytes) is opened, a few rows are
 * appended and the stream is closed: only the first shard is written, and
 * zarr.json, the reader and the byte offsets of rows far past 4 GiB must
 * all agree.  Nothing near that size is ever in memory.  Sizes whose
 * products overflow 64 bits are refused at open with nothing written; on a
 * host whose size_t has 32 bits, a batch that cannot fit in memory is
 * refused the same way.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define ROWS 3000000000ull /* 48e9 bytes: above 4 GiB, 2^32 and 2^35 */
#define COLS 16

static void big_desc(shardpipe_desc *d)
{
	shardpipe_desc_init(d);
	d->rank = 2;
	d->dtype = SHARDPIPE_DTYPE_UINT8;
	d->codec = SHARDPIPE_CODEC_ZSTD;
	d->backend = "cpu";
	d->threads = 1;
	d->dims[0].size = ROWS;
	d->dims[0].chunk = 4;
	d->dims[0].chunks_per_shard = 2;
	d->dims[1].size = COLS;
	d->dims[1].chunk = 8;
	d->dims[1].chunks_per_shard = 2;
}

static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

int main(void)
{
	uint64_t rng = test_seed();
	char *tmp = test_tmpdir("abi-sizes");
	char path[1024], key[1200];
	uint8_t in[5 * COLS], back[5 * COLS], tail[2 * COLS];
	shardpipe_desc d;
	shardpipe_stream *s = NULL;
	shardpipe_reader *r = NULL;
	shardpipe_array_info info;
	shardpipe_stats st;
	int rc;

	/* The last two exist only where size_t has 32 bits. */
	plan(SIZE_MAX > UINT32_MAX ? 15 : 17);
	if (tmp == NULL)
		bail("no scratch directory");
	test_fill(in, sizeof(in), 0, &rng);

	/* 48 GB declared, 80 bytes appended. */
	snprintf(path, sizeof(path), "%s/big.zarr", tmp);
	big_desc(&d);
	rc = shardpipe_stream_open(&s, path, &d);
	if (!is_int(rc, SHARDPIPE_OK, "open a bounded array of %llu bytes",
		    ROWS * COLS))
		diag("%s", shardpipe_last_error_message());
	is_int(shardpipe_stream_append(s, in, sizeof(in)), SHARDPIPE_OK,
	       "append 5 rows");
	is_int(shardpipe_stream_stats(s, &st), SHARDPIPE_OK, "stats");
	is_int((long long)st.bytes_in, (long long)sizeof(in),
	       "bytes_in counts what was appended");
	rc = shardpipe_stream_close(s);
	if (!is_int(rc, SHARDPIPE_OK, "close writes the first shard only"))
		diag("%s", shardpipe_last_error_message());
	snprintf(key, sizeof(key), "%s/c/0/0", path);
	ok(exists(key), "shard c/0/0 exists");
	snprintf(key, sizeof(key), "%s/c/1/0", path);
	ok(!exists(key), "shard c/1/0 (rows 8..15, never appended) does not");

	rc = shardpipe_reader_open(&r, path);
	if (!is_int(rc, SHARDPIPE_OK, "the reader opens it"))
		diag("%s", shardpipe_last_error_message());
	shardpipe_reader_info(r, &info);
	ok(info.rank == 2 && info.shape[0] == ROWS && info.shape[1] == COLS,
	   "zarr.json keeps the declared shape %llu x %d",
	   (unsigned long long)ROWS, COLS);
	{
		const uint64_t start[2] = { 0, 0 }, count[2] = { 5, COLS };

		memset(back, 0xa5, sizeof(back));
		is_int(shardpipe_reader_read(r, start, count, back, sizeof(back)),
		       SHARDPIPE_OK, "read the 5 rows back");
		is_blob(back, in, sizeof(in), "they hold the input");
	}
	{
		/* Byte offset 47999999968: far past 2^32 and 2^35. */
		const uint64_t start[2] = { ROWS - 2, 0 }, count[2] = { 2, COLS };
		uint8_t zero[sizeof(tail)];

		memset(tail, 0xa5, sizeof(tail));
		memset(zero, 0, sizeof(zero));
		is_int(shardpipe_reader_read(r, start, count, tail, sizeof(tail)),
		       SHARDPIPE_OK, "read the last 2 rows (bytes above 44 GiB)");
		is_blob(tail, zero, sizeof(tail), "they hold the fill value");
	}
	shardpipe_reader_close(r);

	/* Products that overflow 64 bits are refused with nothing written. */
	snprintf(path, sizeof(path), "%s/overflow.zarr", tmp);
	shardpipe_desc_init(&d);
	d.rank = 3;
	d.backend = "cpu";
	for (int i = 0; i < 3; i++) {
		d.dims[i].size = 1ull << 30;
		d.dims[i].chunk = 1;
		d.dims[i].chunks_per_shard = 1;
	}
	d.dims[0].size = 1ull << 40; /* 2^100 bytes */
	rc = shardpipe_stream_open(&s, path, &d);
	is_int(rc, SHARDPIPE_ERR_OVERFLOW, "2^100 bytes are refused: %s",
	       shardpipe_last_error_message());
	ok(!exists(path), "and nothing was created");

	/* One row of 6 GiB: a batch is at least a row, which must fit in
	 * memory.  On a 32-bit host it is refused.  On a 64-bit one the
	 * plan is valid and opening it would allocate 6 GiB: nothing to
	 * check there, so it is not in the plan. */
	snprintf(path, sizeof(path), "%s/row.zarr", tmp);
	shardpipe_desc_init(&d);
	d.rank = 2;
	d.backend = "cpu";
	d.dims[0].size = 2;
	d.dims[0].chunk = 1;
	d.dims[0].chunks_per_shard = 1;
	d.dims[1].size = 6ull << 30;
	d.dims[1].chunk = 6ull << 30;
	d.dims[1].chunks_per_shard = 1;
	if (SIZE_MAX <= UINT32_MAX) {
		rc = shardpipe_stream_open(&s, path, &d);
		is_int(rc, SHARDPIPE_ERR_OVERFLOW,
		       "a 6 GiB row is refused where size_t has 32 bits: %s",
		       shardpipe_last_error_message());
		ok(!exists(path), "and nothing was created");
	}
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
