/*
 * cpu-deal.c - arrays whose last dim interleaves 2 to 4 channels, each
 * chunk one channel wide, read back equal to their input through the
 * library's reader.  These are the geometries the cpu backend deals out
 * with its specialised loops (backends/cpu/gather.c), which configure may
 * build for several instruction sets, the CPU picking one at load: every
 * element size and channel count that has a dealer, with chunk rows of
 * 77 and 203 elements (a vector's worth and a tail at any vector width)
 * and an edge chunk of 13 rows; and, beside them, the size dealt out
 * element by element (uint64), which must agree too.
 * The data are random bytes from the printed seed, appended in spans of
 * random sizes.  A diagnostic names the dealers' clone the CPU selects, so
 * that t/cpu-deal-clones.sh can tell that an emulated CPU ran the one it
 * was meant to.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_gather.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

static const struct {
	shardpipe_dtype dtype;
	const char *name;
	uint64_t ng;
} cases[] = {
	{ SHARDPIPE_DTYPE_UINT8, "uint8", 2 },
	{ SHARDPIPE_DTYPE_UINT8, "uint8", 3 },
	{ SHARDPIPE_DTYPE_UINT8, "uint8", 4 },
	{ SHARDPIPE_DTYPE_UINT16, "uint16", 2 },
	{ SHARDPIPE_DTYPE_UINT16, "uint16", 3 },
	{ SHARDPIPE_DTYPE_UINT16, "uint16", 4 },
	{ SHARDPIPE_DTYPE_UINT32, "uint32", 2 },
	{ SHARDPIPE_DTYPE_UINT32, "uint32", 3 },
	{ SHARDPIPE_DTYPE_UINT32, "uint32", 4 },
	/* No dealer: one element at a time. */
	{ SHARDPIPE_DTYPE_UINT64, "uint64", 2 },
	{ SHARDPIPE_DTYPE_UINT64, "uint64", 3 },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))
#define ROWS 4
#define EDGE 13

static const uint64_t chunk_rows[] = { 77, 203 };

int main(void)
{
	uint64_t seed = test_seed();
	char *tmp = test_tmpdir("cpu-deal");

	plan(N_CASES * 2);
	diag("dealer clone: %s", gather_dealer_clone());
	for (size_t c = 0; c < N_CASES; c++) {
		for (size_t k = 0; k < 2; k++) {
			const uint64_t c1 = chunk_rows[k];
			const uint64_t y = 2 * c1 + EDGE, ng = cases[c].ng;
			const size_t n = (size_t)(ROWS * y * ng) *
					 shardpipe_dtype_size(cases[c].dtype);
			uint64_t rng = seed ^ (c * 2 + k + 1);
			shardpipe_desc d;
			uint8_t *data = test_xmalloc(n);
			char *dir;
			int same;

			shardpipe_desc_init(&d);
			d.rank = 3;
			d.dtype = cases[c].dtype;
			d.codec = SHARDPIPE_CODEC_NONE;
			d.backend = "cpu";
			d.threads = 2;
			d.dims[0].size = ROWS;
			d.dims[0].chunk = 2;
			d.dims[0].chunks_per_shard = 1;
			d.dims[1].size = y;
			d.dims[1].chunk = c1;
			d.dims[1].chunks_per_shard = 2;
			d.dims[2].size = ng;
			d.dims[2].chunk = 1;
			d.dims[2].chunks_per_shard = ng;
			test_fill(data, n, 0, &rng);
			if (asprintf(&dir, "%s/%s-%llu-%llu.zarr", tmp,
				     cases[c].name, (unsigned long long)ng,
				     (unsigned long long)c1) < 0)
				bail("out of memory");
			same = test_write_spans(dir, &d, data, n, rng) ==
				     SHARDPIPE_OK &&
			     test_reads_back(dir, ROWS, data, n);
			ok(same, "%s, %llu channels, chunk rows of %llu (edge "
				"%d): read back equal", cases[c].name,
			    (unsigned long long)ng, (unsigned long long)c1,
			    EDGE);
			free(dir);
			free(data);
		}
	}
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
