/*
 * shard-index.c - per-shard accumulation and index serialization: offsets
 * and sizes of each slot, empty slots as 2^64-1 (slots never filled and
 * chunks a backend left out with size 0), the shift when the index comes
 * first, and the CRC32C (checked with the bitwise one of t/testutil.c).
 */
#include <stdlib.h>
#include <string.h>

#include "shard_index.h"
#include "tap.h"
#include "testutil.h"

int main(void)
{
	plan(2 * 7);
	for (int loc = 0; loc < 2; loc++) {
		shardpipe_desc d;
		struct plan p;
		struct shard_set set;
		struct sp_err err;
		/* dims (t, x): x has 3 chunks, 2 per shard -> shards of 2
		 * and 1 chunks; t has 2 chunks per shard. */
		uint8_t data[64];
		uint64_t offs[4] = { 0, 5, 12, 13 }; /* positions 0,1 | 2 */
		/* Epoch 1: position 1 left out (size 0). */
		uint64_t offs1[4] = { 0, 4, 4, 6 };
		const uint8_t *idx;
		uint64_t shift;

		shardpipe_desc_init(&d);
		d.rank = 2;
		d.codec = SHARDPIPE_CODEC_NONE;
		d.index_location = (shardpipe_index_location)loc;
		d.dims[0].size = 0;
		d.dims[0].chunk = 1;
		d.dims[0].chunks_per_shard = 2;
		d.dims[1].size = 3;
		d.dims[1].chunk = 1;
		d.dims[1].chunks_per_shard = 2;
		if (plan_init(&p, &d, &err) || shard_set_init(&set, &p, &err))
			bail("%s", err.msg);
		for (int i = 0; i < 64; i++)
			data[i] = (uint8_t)i;
		shard_set_add_epoch(&set, data, offs, &err);
		shift = loc ? p.index_bytes : 0;

		/* shard 0 holds chunks 0 (5 bytes) and 1 (7 bytes) of epoch
		 * 0 in slots 0 and 1; epoch 1 never came: slots 2, 3 empty */
		idx = shard_set_index(&set, 0);
		ok(test_le64(idx) == 0 + shift && test_le64(idx + 8) == 5 &&
			   test_le64(idx + 16) == 5 + shift &&
			   test_le64(idx + 24) == 7,
		   "index %s: shard 0 slots 0 and 1", loc ? "start" : "end");
		ok(test_le64(idx + 32) == UINT64_MAX &&
			   test_le64(idx + 40) == UINT64_MAX &&
			   test_le64(idx + 48) == UINT64_MAX &&
			   test_le64(idx + 56) == UINT64_MAX,
		   "index %s: slots of the missing epoch are empty",
		   loc ? "start" : "end");
		ok(test_crc32c(idx, 64) == test_le32(idx + 64),
		   "index %s: CRC32C of the pairs follows them",
		   loc ? "start" : "end");
		is_blob(set.shards[0].data, data, 12,
			"index %s: shard 0 holds its chunks' bytes",
			loc ? "start" : "end");
		/* shard 1 is an edge shard: its only chunk is slot 0; slot 1
		 * lies beyond the array and stays empty */
		idx = shard_set_index(&set, 1);
		ok(test_le64(idx) == shift && test_le64(idx + 8) == 1 &&
			   test_le64(idx + 16) == UINT64_MAX &&
			   test_le64(idx + 24) == UINT64_MAX,
		   "index %s: edge shard", loc ? "start" : "end");

		/* Epoch 1 fills slots 2 and 3 of shard 0 and slot 1 of
		 * shard 1; its position 1 has size 0: not stored. */
		shard_set_add_epoch(&set, data + 20, offs1, &err);
		idx = shard_set_index(&set, 0);
		ok(test_le64(idx + 32) == 12 + shift &&
			   test_le64(idx + 40) == 4 &&
			   test_le64(idx + 48) == UINT64_MAX &&
			   test_le64(idx + 56) == UINT64_MAX &&
			   set.shards[0].stored == 3 && set.shards[0].len == 16,
		   "index %s: a chunk of size 0 is left out",
		   loc ? "start" : "end");
		ok(memcmp(set.shards[0].data + 12, data + 20, 4) == 0,
		   "index %s: the chunk after it keeps its bytes",
		   loc ? "start" : "end");
		shard_set_free(&set);
		plan_free(&p);
	}
	return done_testing();
}
