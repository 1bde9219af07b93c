/*
 * live-readers.c - a reader opening the store again and again while a
 * writer thread streams into it always sees a valid array whose shape
 * covers only complete shards (a multiple of the shard's rows until close)
 * and whose every cell equals the input, with empty chunks left out and
 * a non-zero fill value.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define ROWS 96
#define D1 24
#define D2 20
#define SHARD_ROWS 4 /* chunk 2 along dim 0, 2 chunks a shard */

struct writer {
	const char *dir;
	const uint16_t *data;
	int rc;
	volatile int done;
	pthread_mutex_t mu;
};

static void *write_main(void *arg)
{
	struct writer *w = arg;
	shardpipe_desc d;
	shardpipe_stream *s = NULL;
	const size_t row = (size_t)D1 * D2 * sizeof(uint16_t);
	struct timespec pause = { 0, 2000000 };
	int rc;

	shardpipe_desc_init(&d);
	d.rank = 3;
	d.dtype = SHARDPIPE_DTYPE_UINT16;
	d.backend = "cpu";
	d.threads = 1;
	d.dims[0].chunk = 2;
	d.dims[0].chunks_per_shard = 2;
	d.dims[1].size = D1;
	d.dims[1].chunk = 8;
	d.dims[1].chunks_per_shard = 2;
	d.dims[2].size = D2;
	d.dims[2].chunk = 8;
	d.dims[2].chunks_per_shard = 1;
	d.fill_value[0] = 5;
	d.fill_value[1] = 5;
	rc = shardpipe_stream_open(&s, w->dir, &d);
	for (int r = 0; r < ROWS && rc == SHARDPIPE_OK; r++) {
		rc = shardpipe_stream_append(s, w->data + (size_t)r * D1 * D2,
					     row);
		/* One frame at a time, as a camera delivers them. */
		nanosleep(&pause, NULL);
	}
	if (s != NULL && shardpipe_stream_close(s) != SHARDPIPE_OK &&
	    rc == SHARDPIPE_OK)
		rc = SHARDPIPE_ERR_IO;
	pthread_mutex_lock(&w->mu);
	w->rc = rc;
	w->done = 1;
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static int writer_done(struct writer *w)
{
	int done;

	pthread_mutex_lock(&w->mu);
	done = w->done;
	pthread_mutex_unlock(&w->mu);
	return done;
}

/* One look at the store: 1 valid (rows into *rows), 0 not yet there, -1
 * wrong (the reason to diag). */
static int look(const char *dir, const uint16_t *want, int final,
		uint64_t *rows, uint16_t *buf)
{
	shardpipe_reader *r = NULL;
	shardpipe_array_info info;
	uint64_t start[3] = { 0, 0, 0 }, count[3];
	int rc = shardpipe_reader_open(&r, dir), good = 1;

	if (rc != SHARDPIPE_OK) {
		/* The store's zarr.json exists from open on; any failure
		 * to open it is a fault. */
		diag("reader_open: %s", shardpipe_last_error_message());
		return -1;
	}
	shardpipe_reader_info(r, &info);
	*rows = info.shape[0];
	if (!final && *rows % SHARD_ROWS != 0) {
		diag("advertised %llu rows: not whole shards",
		     (unsigned long long)*rows);
		good = 0;
	}
	if (*rows > ROWS) {
		diag("advertised %llu rows of %d", (unsigned long long)*rows,
		     ROWS);
		good = 0;
	}
	count[0] = *rows;
	count[1] = D1;
	count[2] = D2;
	if (good && *rows > 0) {
		rc = shardpipe_reader_read(r, start, count, buf,
					   (size_t)ROWS * D1 * D2 * sizeof(*buf));
		if (rc != SHARDPIPE_OK) {
			diag("read of %llu rows: %s", (unsigned long long)*rows,
			     shardpipe_reader_message(r));
			good = 0;
		} else if (!test_same_bytes(buf, want,
					    (size_t)*rows * D1 * D2 * 2,
					    "%llu rows",
					    (unsigned long long)*rows)) {
			good = 0;
		}
	}
	shardpipe_reader_close(r);
	return good ? 1 : -1;
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;
	char *tmp = test_tmpdir("live-readers");
	char dir[512];
	size_t n = (size_t)ROWS * D1 * D2;
	uint16_t *data = test_xmalloc(n * sizeof(uint16_t));
	uint16_t *buf = test_xmalloc(n * sizeof(uint16_t));
	struct writer w = { 0 };
	pthread_t th;
	int looks = 0, bad = 0, shapes = 0;
	uint64_t rows = 0, last = UINT64_MAX;

	plan(4);
	for (size_t i = 0; i < n; i++)
		data[i] = (uint16_t)(test_rand(&rng) % 4096);
	/* Rows 8..15 all fill (two shards' worth left out), and chunk
	 * (10, 1, 0) too. */
	for (size_t i = 8 * D1 * D2; i < 16 * D1 * D2; i++)
		data[i] = 0x0505;
	for (int t = 20; t < 22; t++)
		for (int y = 8; y < 16; y++)
			for (int x = 0; x < 8; x++)
				data[((size_t)t * D1 + y) * D2 + x] = 0x0505;
	snprintf(dir, sizeof(dir), "%s/live.zarr", tmp);
	w.dir = dir;
	w.data = data;
	pthread_mutex_init(&w.mu, NULL);
	/* The writer's open creates zarr.json before the first look: wait
	 * for it, so that a missing store is a fault below. */
	if (pthread_create(&th, NULL, write_main, &w) != 0)
		bail("cannot start the writer thread");
	for (;;) {
		char meta[600];
		FILE *f;

		snprintf(meta, sizeof(meta), "%s/zarr.json", dir);
		f = fopen(meta, "r");
		if (f != NULL) {
			fclose(f);
			break;
		}
		if (writer_done(&w))
			break;
		nanosleep(&(struct timespec){ 0, 1000000 }, NULL);
	}
	while (!writer_done(&w)) {
		int k = look(dir, data, 0, &rows, buf);

		looks++;
		if (k < 0)
			bad++;
		if (rows != last)
			shapes++;
		last = rows;
	}
	pthread_join(th, NULL);
	is_int(w.rc, SHARDPIPE_OK, "the writer streamed %d frames and closed",
	       ROWS);
	ok(bad == 0, "%d looks while writing, every one valid, whole shards, "
	   "equal to the input (%d distinct shapes seen)", looks, bad == 0 ?
	   shapes : bad);
	bad = look(dir, data, 1, &rows, buf) != 1;
	ok(!bad && rows == ROWS,
	   "after close: %llu rows, equal to the input",
	   (unsigned long long)rows);
	ok(looks > 0, "the reader looked at the store while it was written "
	   "(%d times)", looks);
	free(data);
	free(buf);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
