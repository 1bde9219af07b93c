/*
 * max-memory.c - desc.max_memory caps the pools a stream plans: a cap
 * below what the default batch needs lowers the batch until pool_bytes
 * fits, and the store still reads back the input; a cap that not even one
 * epoch a batch fits is refused at open with SHARDPIPE_ERR_NOMEM, a
 * message naming max_memory, and nothing written.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define ROWS 300
#define WIDTH 1000

static void describe(shardpipe_desc *d, uint64_t max_memory)
{
	shardpipe_desc_init(d);
	d->rank = 2;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->backend = "cpu";
	d->dims[0].chunk = 1;
	d->dims[0].chunks_per_shard = 4;
	d->dims[1].size = WIDTH;
	d->dims[1].chunk = 256;
	d->dims[1].chunks_per_shard = 2;
	d->max_memory = max_memory;
}

static uint64_t planned(const char *dir, const shardpipe_desc *d, int *rc)
{
	shardpipe_stream *s = NULL;
	shardpipe_stats st;

	*rc = shardpipe_stream_open(&s, dir, d);
	if (*rc != SHARDPIPE_OK)
		return 0;
	shardpipe_stream_stats(s, &st);
	shardpipe_stream_close(s);
	return st.pool_bytes;
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed, full, capped;
	char *tmp = test_tmpdir("max-memory");
	char dir[512], sub[512];
	size_t n = (size_t)ROWS * WIDTH * 2;
	uint8_t *data = test_xmalloc(n);
	shardpipe_desc d;
	int rc;

	plan_lazy();
	test_fill(data, n, 0, &rng);
	snprintf(dir, sizeof(dir), "%s/full.zarr", tmp);
	describe(&d, 0);
	full = planned(dir, &d, &rc);
	is_int(rc, SHARDPIPE_OK, "without a cap the stream plans %llu bytes",
	       (unsigned long long)full);

	snprintf(dir, sizeof(dir), "%s/capped.zarr", tmp);
	describe(&d, full / 4);
	d.overwrite = 1;
	capped = planned(dir, &d, &rc);
	is_int(rc, SHARDPIPE_OK, "a cap of a quarter of that opens");
	ok(capped > 0 && capped <= full / 4,
	   "pool_bytes %llu within the cap %llu",
	   (unsigned long long)capped, (unsigned long long)(full / 4));
	is_int(test_write_spans(dir, &d, data, n, seed), SHARDPIPE_OK,
	       "the capped stream writes %d rows", ROWS);
	ok(test_reads_back(dir, ROWS, data, n),
	   "the capped store reads back the input");

	snprintf(sub, sizeof(sub), "%s/refused", tmp);
	mkdir(sub, 0777);
	describe(&d, 1000);
	test_refused(sub, &d, SHARDPIPE_ERR_NOMEM, "max_memory",
		     "a cap of 1000 bytes");
	free(data);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
