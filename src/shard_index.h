/*
 * shard_index.h - the shards of a shard epoch while they fill: their chunk
 * bytes and index, and their serialization in the sharding_indexed format
 * (index of little-endian uint64 pairs followed by its CRC32C, at the end
 * or the start of the shard).
 *
 * A set holds its chunks in one of two layouts (doc/design.md §14.2).
 * Packed: a kernel backend's chunks are fetched back to back into each
 * shard's buffer.  By slot: a fused backend compresses each chunk straight
 * into its own slot of slot_capacity bytes, at its index slot in the
 * shard's region, and the shard is written from the slots (one part per
 * chunk) without copying them together.  Either way a shard's chunks lie
 * in the order of their index slots, so the offsets the index records are
 * the running sum of the stored chunks' sizes in slot order.
 */
#ifndef SHARDPIPE_SHARD_INDEX_H
#define SHARDPIPE_SHARD_INDEX_H

#include <sys/uio.h>

#include "backend.h"
#include "plan.h"

struct shard_buf {
	uint8_t *data;        /* its region of the set's mem, never moving */
	size_t len;           /* bytes of the stored chunks */
	uint64_t *nbytes;     /* chunks_per_shard sizes, 2^64-1: not stored */
	uint64_t stored;      /* chunks stored (not left empty) */
	int packed;           /* the chunks lie back to back from data */
};

struct shard_set {
	const struct plan *plan;
	struct shard_buf *shards; /* plan->S */
	uint8_t *mem;             /* every shard's region, from pool.c */
	uint64_t mem_bytes;       /* shard_set_bytes() */
	uint8_t *index_bytes;     /* serialization scratch */
	uint64_t epochs;          /* epochs added to this shard epoch */
	int by_slot;              /* the layout, for the set's life */
};

/* The bytes a set maps: every slot of every shard at slot capacity (its
 * worst case), or 0 when that overflows. */
SP_INTERNAL uint64_t shard_set_bytes(const struct plan *p);

SP_INTERNAL int shard_set_init(struct shard_set *set, const struct plan *p,
			       int by_slot, struct sp_err *err);
SP_INTERNAL void shard_set_free(struct shard_set *set);

/*
 * Place `epochs` consecutive epochs of a fetched batch
 * (doc/design.md §14.2): offsets holds epochs * M + 1 entries of the
 * batch's packed chunks (each epoch's M chunks in shard-major order).  A
 * chunk of size 0 is one the backend left out (all fill value,
 * doc/design.md §22.2): its slot stays empty.  The ranges of packed bytes
 * that belong in the shard buffers are written to r (room for epochs * S
 * entries, epochs * M for a set laid out by slot; *n gets how many), so
 * the backend fetches them straight to their place: one range a shard,
 * or by slot one a chunk (a moved append dim's chunks arrive out of slot
 * order, design §3.3).  Chunks that would not fit their shard's slots are refused
 * before anything is placed.
 */
SP_INTERNAL int shard_set_place(struct shard_set *set, const uint64_t *offsets,
				uint64_t epochs, struct batch_range *r,
				size_t *n, struct sp_err *err);

/*
 * By slot: where the chunks of the set's epoch w (counted from the start
 * of its shard epoch) go: dst[j], slot_capacity bytes, for each of the M
 * shard-major positions j.
 */
SP_INTERNAL void shard_set_slots(const struct shard_set *set, uint64_t w,
				 uint8_t **dst);

/*
 * By slot: the sizes of the next epoch's chunks, by position (0: left
 * out, its slot stays empty), whose bytes lie in the slots shard_set_slots
 * named.  A size over slot_capacity is refused.
 */
SP_INTERNAL int shard_set_sized(struct shard_set *set, const uint64_t *sizes,
				struct sp_err *err);

/*
 * Serialize shard k's index for the placement the plan asks for (offsets
 * shifted past the index when it comes first).  Returns a pointer to
 * plan->index_bytes bytes, valid until the next call.
 */
SP_INTERNAL const uint8_t *shard_set_index(struct shard_set *set, uint64_t k);

/*
 * Shard k's chunk bytes in the order the shard holds them, as parts (room
 * for chunks_per_shard); returns how many.  A packed shard is one part.
 */
SP_INTERNAL size_t shard_set_parts(const struct shard_set *set, uint64_t k,
				   struct iovec *parts);

/* Forget every shard's chunks and mark every slot empty. */
SP_INTERNAL void shard_set_reset(struct shard_set *set);

#endif
