#include "shard_index.h"

#include <stdlib.h>

#include "crc32c.h"
#include "pool.h"

/* The sharding_indexed spec's marker of a chunk that is not stored. */
#define EMPTY UINT64_MAX

uint64_t shard_set_bytes(const struct plan *p)
{
	uint64_t slots, bytes;

	if (!sp_mul_ok(p->S, p->chunks_per_shard, &slots) ||
	    !sp_mul_ok(slots, p->slot_capacity, &bytes) || bytes > SIZE_MAX)
		return 0;
	return bytes;
}

int shard_set_init(struct shard_set *set, const struct plan *p, int by_slot,
		   struct sp_err *err)
{
	memset(set, 0, sizeof(*set));
	set->plan = p;
	set->by_slot = by_slot;
	set->shards = calloc(p->S, sizeof(*set->shards));
	set->index_bytes = malloc(p->index_bytes);
	SP_RETURN_IF(set->shards == NULL || set->index_bytes == NULL, err,
		     SHARDPIPE_ERR_NOMEM, "out of memory for %llu shards",
		     (unsigned long long)p->S);
	/* The worst case, mapped once: pages are touched only as shards
	 * fill, and a region that never moves can be reused whole by the
	 * next shard epoch and the next stream (doc/design.md §27). */
	set->mem_bytes = shard_set_bytes(p);
	SP_RETURN_IF(set->mem_bytes == 0, err, SHARDPIPE_ERR_OVERFLOW,
		     "a shard epoch of %llu shards at %llu bytes a chunk "
		     "does not fit this host's memory",
		     (unsigned long long)p->S,
		     (unsigned long long)p->slot_capacity);
	set->mem = pool_take(set->mem_bytes);
	SP_RETURN_IF(set->mem == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for a shard epoch of %llu bytes at most",
		     (unsigned long long)set->mem_bytes);
	for (uint64_t k = 0; k < p->S; k++) {
		set->shards[k].data =
			set->mem + k * p->chunks_per_shard * p->slot_capacity;
		set->shards[k].nbytes =
			malloc(p->chunks_per_shard * sizeof(uint64_t));
		SP_RETURN_IF(set->shards[k].nbytes == NULL, err,
			     SHARDPIPE_ERR_NOMEM,
			     "out of memory for shard indexes");
	}
	shard_set_reset(set);
	return SHARDPIPE_OK;
}

void shard_set_free(struct shard_set *set)
{
	if (set->shards != NULL)
		for (uint64_t k = 0; k < set->plan->S; k++)
			free(set->shards[k].nbytes);
	pool_give(set->mem, set->mem_bytes);
	free(set->shards);
	free(set->index_bytes);
	memset(set, 0, sizeof(*set));
}

void shard_set_reset(struct shard_set *set)
{
	const struct plan *p = set->plan;

	for (uint64_t k = 0; k < p->S; k++) {
		set->shards[k].len = 0;
		set->shards[k].stored = 0;
		set->shards[k].packed = !set->by_slot;
		for (uint64_t j = 0; j < p->chunks_per_shard; j++)
			set->shards[k].nbytes[j] = EMPTY;
	}
	set->epochs = 0;
}

/* shard_set_place for a set laid out by slot: each chunk fetched to its
 * own slot, one range a chunk. */
static int place_by_slot(struct shard_set *set, const uint64_t *offsets,
			 uint64_t epochs, struct batch_range *r, size_t *n,
			 struct sp_err *err)
{
	const struct plan *p = set->plan;

	for (uint64_t j = 0; j < epochs * p->M; j++) {
		uint64_t len = offsets[j + 1] - offsets[j];

		SP_RETURN_IF(len > p->slot_capacity, err,
			     SHARDPIPE_ERR_BACKEND,
			     "the backend's chunk at position %llu has %llu "
			     "bytes, over its slot capacity %llu",
			     (unsigned long long)j, (unsigned long long)len,
			     (unsigned long long)p->slot_capacity);
	}
	for (uint64_t e = 0; e < epochs; e++, set->epochs++) {
		const uint64_t *off = offsets + e * p->M;
		uint64_t slot0 = set->epochs * p->epoch_slots;

		for (uint64_t k = 0; k < p->S; k++) {
			struct shard_buf *b = &set->shards[k];

			for (uint64_t j = p->shard_first[k];
			     j < p->shard_first[k + 1]; j++) {
				uint64_t len = off[j + 1] - off[j];
				uint64_t slot = slot0 + p->pos_slot[j];

				if (len == 0)
					continue;
				r[(*n)++] = (struct batch_range){
					b->data + slot * p->slot_capacity,
					off[j], len
				};
				b->nbytes[slot] = len;
				b->len += (size_t)len;
				b->stored++;
			}
		}
	}
	return SHARDPIPE_OK;
}

int shard_set_place(struct shard_set *set, const uint64_t *offsets,
		    uint64_t epochs, struct batch_range *r, size_t *n,
		    struct sp_err *err)
{
	const struct plan *p = set->plan;
	const uint64_t cap = p->chunks_per_shard * p->slot_capacity;

	*n = 0;
	if (set->by_slot)
		return place_by_slot(set, offsets, epochs, r, n, err);
	/* Check every shard's room for all the epochs first, so that
	 * nothing is placed when a shard would overflow. */
	for (uint64_t k = 0; k < p->S; k++) {
		uint64_t first = p->shard_first[k], last = p->shard_first[k + 1];
		uint64_t more = 0;

		for (uint64_t e = 0; e < epochs; e++)
			more += offsets[e * p->M + last] -
				offsets[e * p->M + first];
		SP_RETURN_IF(more > cap - set->shards[k].len, err,
			     SHARDPIPE_ERR_BACKEND,
			     "the backend's chunks exceed their slot capacity: "
			     "%llu bytes more for shard %llu, holding %zu of "
			     "%llu", (unsigned long long)more,
			     (unsigned long long)k, set->shards[k].len,
			     (unsigned long long)cap);
	}
	for (uint64_t e = 0; e < epochs; e++, set->epochs++) {
		const uint64_t *off = offsets + e * p->M;
		uint64_t slot0 = set->epochs * p->epoch_slots;

		for (uint64_t k = 0; k < p->S; k++) {
			struct shard_buf *b = &set->shards[k];
			uint64_t first = p->shard_first[k];
			uint64_t last = p->shard_first[k + 1];
			uint64_t bytes = off[last] - off[first];

			/* A shard's chunks are contiguous in the packed
			 * bytes (the shard permutation's purpose), empty
			 * ones as nothing: one range per shard. */
			if (bytes > 0)
				r[(*n)++] = (struct batch_range){
					b->data + b->len, off[first], bytes
				};
			for (uint64_t j = first; j < last; j++) {
				uint64_t len = off[j + 1] - off[j];

				if (len == 0)
					continue;
				b->nbytes[slot0 + p->pos_slot[j]] = len;
				b->stored++;
			}
			b->len += (size_t)bytes;
		}
	}
	return SHARDPIPE_OK;
}

void shard_set_slots(const struct shard_set *set, uint64_t w, uint8_t **dst)
{
	const struct plan *p = set->plan;
	uint64_t slot0 = w * p->epoch_slots;

	for (uint64_t k = 0; k < p->S; k++)
		for (uint64_t j = p->shard_first[k]; j < p->shard_first[k + 1];
		     j++)
			dst[j] = set->shards[k].data +
				 (slot0 + p->pos_slot[j]) * p->slot_capacity;
}

int shard_set_sized(struct shard_set *set, const uint64_t *sizes,
		    struct sp_err *err)
{
	const struct plan *p = set->plan;
	uint64_t slot0 = set->epochs * p->epoch_slots;

	for (uint64_t j = 0; j < p->M; j++)
		SP_RETURN_IF(sizes[j] > p->slot_capacity, err,
			     SHARDPIPE_ERR_BACKEND,
			     "the backend's chunk at position %llu has %llu "
			     "bytes, over its slot capacity %llu",
			     (unsigned long long)j,
			     (unsigned long long)sizes[j],
			     (unsigned long long)p->slot_capacity);
	for (uint64_t k = 0; k < p->S; k++) {
		struct shard_buf *b = &set->shards[k];

		for (uint64_t j = p->shard_first[k]; j < p->shard_first[k + 1];
		     j++) {
			if (sizes[j] == 0)
				continue;
			b->nbytes[slot0 + p->pos_slot[j]] = sizes[j];
			b->len += (size_t)sizes[j];
			b->stored++;
		}
	}
	set->epochs++;
	return SHARDPIPE_OK;
}

size_t shard_set_parts(const struct shard_set *set, uint64_t k,
		       struct iovec *parts)
{
	const struct plan *p = set->plan;
	const struct shard_buf *b = &set->shards[k];
	size_t n = 0;

	if (b->packed) {
		parts[0] = (struct iovec){ b->data, b->len };
		return b->len > 0;
	}
	for (uint64_t j = 0; j < p->chunks_per_shard; j++)
		if (b->nbytes[j] != EMPTY)
			parts[n++] = (struct iovec){
				b->data + j * p->slot_capacity,
				(size_t)b->nbytes[j]
			};
	return n;
}

const uint8_t *shard_set_index(struct shard_set *set, uint64_t k)
{
	const struct plan *p = set->plan;
	const uint64_t *len = set->shards[k].nbytes;
	uint64_t off = p->index_location == SHARDPIPE_INDEX_START ?
			       p->index_bytes : 0;
	uint8_t *out = set->index_bytes;

	/* The chunks lie in slot order, back to back as written. */
	for (uint64_t j = 0; j < p->chunks_per_shard; j++) {
		sp_put_le64(out + 16 * j, len[j] == EMPTY ? EMPTY : off);
		sp_put_le64(out + 16 * j + 8, len[j]);
		if (len[j] != EMPTY)
			off += len[j];
	}
	sp_put_le32(out + 16 * p->chunks_per_shard,
		    crc32c(0, out, 16 * p->chunks_per_shard));
	return out;
}
