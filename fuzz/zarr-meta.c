/*
 * zarr-meta.c - libFuzzer target: the reader's whole metadata path
 * (zarr.json size cap, JSON limits, every member's checks, the geometry's
 * overflow checks) on any bytes as zarr.json, then info, check and a
 * small read of a store that holds no shards.
 */
#include <stdint.h>

#include "fuzz-common.h"
#include "shardpipe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char store[600], meta[700];
	shardpipe_reader *r;
	shardpipe_array_info info;

	if (store[0] == '\0') {
		snprintf(store, sizeof(store), "%s/meta.zarr", fuzz_scratch());
		mkdir(store, 0755);
		snprintf(meta, sizeof(meta), "%s/zarr.json", store);
	}
	fuzz_write(meta, data, size);
	if (shardpipe_reader_open(&r, store) != SHARDPIPE_OK)
		return 0;
	shardpipe_reader_info(r, &info);
	shardpipe_reader_check(r);
	{
		/* One element at the origin: missing chunks read as fill. */
		uint64_t start[SHARDPIPE_MAX_RANK] = { 0 };
		uint64_t count[SHARDPIPE_MAX_RANK];
		uint64_t out[1];
		int empty = 0;

		for (int d = 0; d < info.rank; d++) {
			count[d] = 1;
			empty |= info.shape[d] == 0;
		}
		if (!empty)
			shardpipe_reader_read(r, start, count, out, sizeof(out));
	}
	shardpipe_reader_close(r);
	return 0;
}
