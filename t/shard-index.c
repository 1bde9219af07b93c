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

/* What a backend's fetch_ranges does: copy each range of the packed
 * bytes to where the set placed it.  Returns the number of ranges. */
static size_t place(struct shard_set *set, const uint8_t *packed,
		    const uint64_t *offs, uint64_t epochs)
{
	struct batch_range r[16];
	struct sp_err err;
	size_t n = 0;

	if (shard_set_place(set, offs, epochs, r, &n, &err) != SHARDPIPE_OK)
		bail("%s", err.msg);
	for (size_t i = 0; i < n; i++)
		memcpy(r[i].dst, packed + r[i].off, r[i].len);
	return n;
}

/* 1 when shard k's index slot holds (off, len), or is empty for len 0. */
static int slot_is(struct shard_set *set, uint64_t k, uint64_t slot,
		   uint64_t off, uint64_t len)
{
	const uint8_t *idx = shard_set_index(set, k);

	if (len == 0)
		return test_le64(idx + 16 * slot) == UINT64_MAX &&
		       test_le64(idx + 16 * slot + 8) == UINT64_MAX;
	return test_le64(idx + 16 * slot) == off &&
	       test_le64(idx + 16 * slot + 8) == len;
}

/*
 * Two epochs placed at once, the first chunk of the second left out (size
 * 0): each shard's chunks come in one range per epoch, land at the offsets
 * its index gives, and the buffers grown for both epochs do not move under
 * the first epoch's ranges.
 */
static void two_epochs(const struct plan *p)
{
	/* Sizes 5, 7, 1 then 0, 4, 2, by position (shard 0: 0, 1;
	 * shard 1: 2). */
	uint64_t offs[7] = { 0, 5, 12, 13, 13, 17, 19 };
	uint8_t packed[19], want0[16], want1[3];
	struct shard_set set;
	struct sp_err err;
	size_t n;

	for (int i = 0; i < 19; i++)
		packed[i] = (uint8_t)(0x40 + i);
	memcpy(want0, packed, 12);
	memcpy(want0 + 12, packed + 13, 4);
	want1[0] = packed[12];
	memcpy(want1 + 1, packed + 17, 2);
	if (shard_set_init(&set, p, 0, &err))
		bail("%s", err.msg);
	n = place(&set, packed, offs, 2);
	ok(n == 4, "two epochs: one range per shard and epoch (%zu ranges)",
	   n);
	ok(slot_is(&set, 0, 0, 0, 5) && slot_is(&set, 0, 1, 5, 7) &&
		   slot_is(&set, 0, 2, 0, 0) && slot_is(&set, 0, 3, 12, 4),
	   "two epochs: shard 0's index skips the chunk left out");
	ok(slot_is(&set, 1, 0, 0, 1) && slot_is(&set, 1, 1, 0, 0) &&
		   slot_is(&set, 1, 2, 1, 2) && slot_is(&set, 1, 3, 0, 0),
	   "two epochs: edge shard 1's index");
	ok(set.shards[0].len == 16 && set.shards[1].len == 3 &&
		   memcmp(set.shards[0].data, want0, 16) == 0 &&
		   memcmp(set.shards[1].data, want1, 3) == 0 &&
		   set.shards[0].stored == 3 && set.shards[1].stored == 2,
	   "two epochs: every stored chunk's bytes are where its index says");
	shard_set_free(&set);
}

/*
 * The same two epochs by slot: each chunk written where shard_set_slots
 * names, its size given after.  The shards' parts, one after the other,
 * the shard packed in place and the index equal the packed set's.
 */
static void by_slot(const struct plan *p)
{
	const uint64_t sizes[6] = { 5, 7, 1, 0, 4, 2 };
	uint64_t offs[7] = { 0, 5, 12, 13, 13, 17, 19 };
	uint8_t packed[19], got[64], idx[2][100];
	struct shard_set ps, ss;
	struct iovec parts[8];
	struct sp_err err;
	int same_parts = 1, same_index = 1;

	for (int i = 0; i < 19; i++)
		packed[i] = (uint8_t)(0x40 + i);
	if (shard_set_init(&ps, p, 0, &err) || shard_set_init(&ss, p, 1, &err))
		bail("%s", err.msg);
	place(&ps, packed, offs, 2);
	for (uint64_t e = 0; e < 2; e++) {
		uint8_t *dst[3];

		shard_set_slots(&ss, e, dst);
		for (int j = 0; j < 3; j++) {
			/* Leave a mark past each chunk: a part must not
			 * reach it. */
			memset(dst[j], 0xee, (size_t)p->slot_capacity);
			memcpy(dst[j], packed + offs[3 * e + (uint64_t)j],
			       (size_t)sizes[3 * e + (uint64_t)j]);
		}
		if (shard_set_sized(&ss, sizes + 3 * e, &err) != SHARDPIPE_OK)
			bail("%s", err.msg);
	}
	for (uint64_t k = 0; k < 2; k++) {
		size_t n = shard_set_parts(&ss, k, parts), at = 0;

		for (size_t i = 0; i < n; i++) {
			memcpy(got + at, parts[i].iov_base, parts[i].iov_len);
			at += parts[i].iov_len;
		}
		same_parts &= at == ps.shards[k].len && at == ss.shards[k].len &&
			      memcmp(got, ps.shards[k].data, at) == 0 &&
			      n == ss.shards[k].stored;
		memcpy(idx[0], shard_set_index(&ps, k), (size_t)p->index_bytes);
		memcpy(idx[1], shard_set_index(&ss, k), (size_t)p->index_bytes);
		same_index &= memcmp(idx[0], idx[1], (size_t)p->index_bytes) == 0;
	}
	ok(same_parts, "by slot: the shards' parts, one after the other, are "
	   "the packed shards' bytes, one part a stored chunk");
	ok(same_index, "by slot: the same indexes");
	shard_set_free(&ps);
	shard_set_free(&ss);
}

/* A backend that reports more bytes than a shard's slots hold is refused
 * before anything is placed, rather than written past the shard. */
static void too_big(const struct plan *p)
{
	uint64_t big = 2 * 2 * p->slot_capacity + 1; /* cps[0] x 2 slots */
	uint64_t offs[4] = { 0, 2, 2 + big, 3 + big };
	struct batch_range r[2];
	struct shard_set set;
	struct sp_err err;
	size_t n = 99;
	int rc;

	if (shard_set_init(&set, p, 0, &err))
		bail("%s", err.msg);
	rc = shard_set_place(&set, offs, 1, r, &n, &err);
	is_int(rc, SHARDPIPE_ERR_BACKEND,
	       "chunks over their shard's slots are refused");
	ok(set.epochs == 0 && set.shards[0].stored == 0 &&
		   set.shards[0].len == 0 && n == 0,
	   "and nothing is placed (%s)", err.msg);
	shard_set_free(&set);
}

int main(void)
{
	plan(2 * 7 + 4 + 2 + 2);
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
		/* 8-byte chunks: the sizes placed below fit their slots. */
		d.dims[0].chunk = 8;
		d.dims[0].chunks_per_shard = 2;
		d.dims[1].size = 3;
		d.dims[1].chunk = 1;
		d.dims[1].chunks_per_shard = 2;
		if (plan_init(&p, &d, &err) || shard_set_init(&set, &p, 0, &err))
			bail("%s", err.msg);
		for (int i = 0; i < 64; i++)
			data[i] = (uint8_t)i;
		place(&set, data, offs, 1);
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
		place(&set, data + 20, offs1, 1);
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
		if (loc == 0) {
			two_epochs(&p);
			too_big(&p);
			by_slot(&p);
		}
		shard_set_free(&set);
		plan_free(&p);
	}
	return done_testing();
}
