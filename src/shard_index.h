/*
 * shard_index.h - the shards of the current shard epoch while they fill:
 * their chunk bytes and (offset, nbytes) index, and their serialization in
 * the sharding_indexed format (index of little-endian uint64 pairs followed
 * by its CRC32C, at the end or the start of the shard).
 */
#ifndef SHARDPIPE_SHARD_INDEX_H
#define SHARDPIPE_SHARD_INDEX_H

#include "backend.h"
#include "plan.h"

struct shard_buf {
	uint8_t *data;        /* chunk bytes, back to back, in the set's mem */
	size_t len, cap;      /* cap: every chunk of the shard at its slot
			       * capacity, so the buffer never moves */
	uint64_t *index;      /* 2 * chunks_per_shard entries */
	uint64_t stored;      /* chunks stored (not left empty) */
};

struct shard_set {
	const struct plan *plan;
	struct shard_buf *shards; /* plan->S */
	uint8_t *mem;             /* every shard's buffer, from pool.c */
	uint64_t mem_bytes;       /* cps[0] * M * slot_capacity */
	uint8_t *index_bytes;     /* serialization scratch */
	uint64_t epochs;          /* epochs added to this shard epoch */
};

SP_INTERNAL int shard_set_init(struct shard_set *set, const struct plan *p,
			       struct sp_err *err);
SP_INTERNAL void shard_set_free(struct shard_set *set);

/*
 * Place `epochs` consecutive epochs of a fetched batch
 * (doc/design.md §14.2): offsets holds epochs * M + 1 entries of the
 * batch's packed chunks (each epoch's M chunks in shard-major order).  A
 * chunk of size 0 is one the backend left out (all fill value,
 * doc/design.md §22.2): its index entry stays 2^64 - 1.  Each shard's
 * index is filled and its buffer grown; the ranges of packed bytes that
 * belong in the shard buffers are written to r (room for epochs * S
 * entries; *n gets how many), so the backend fetches them straight to
 * their place.  The buffers do not move again before the next call on
 * this set.
 */
SP_INTERNAL int shard_set_place(struct shard_set *set, const uint64_t *offsets,
				uint64_t epochs, struct batch_range *r,
				size_t *n, struct sp_err *err);

/*
 * Serialize shard k's index for the placement the plan asks for (offsets
 * shifted past the index when it comes first).  Returns a pointer to
 * plan->index_bytes bytes, valid until the next call.
 */
SP_INTERNAL const uint8_t *shard_set_index(struct shard_set *set, uint64_t k);

/* Forget every shard's chunks and mark every slot empty. */
SP_INTERNAL void shard_set_reset(struct shard_set *set);

#endif
