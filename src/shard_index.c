#include "shard_index.h"

#include <stdlib.h>

#include "crc32c.h"
#include "pool.h"

/* The sharding_indexed spec's marker of a chunk that is not stored. */
#define EMPTY UINT64_MAX

int shard_set_init(struct shard_set *set, const struct plan *p,
		   struct sp_err *err)
{
	uint64_t slots;

	memset(set, 0, sizeof(*set));
	set->plan = p;
	set->shards = calloc(p->S, sizeof(*set->shards));
	set->index_bytes = malloc(p->index_bytes);
	SP_RETURN_IF(set->shards == NULL || set->index_bytes == NULL, err,
		     SHARDPIPE_ERR_NOMEM, "out of memory for %llu shards",
		     (unsigned long long)p->S);
	/* The worst case, mapped once: pages are touched only as shards
	 * fill, and a buffer that never moves can be reused whole by the
	 * next shard epoch and the next stream (pool.c). */
	SP_RETURN_IF(!sp_mul_ok(p->cps[0], p->M, &slots) ||
		     !sp_mul_ok(slots, p->slot_capacity, &set->mem_bytes),
		     err, SHARDPIPE_ERR_OVERFLOW,
		     "a shard epoch's worst case overflows 64 bits");
	set->mem = pool_take(set->mem_bytes);
	SP_RETURN_IF(set->mem == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for a shard epoch of %llu bytes at most",
		     (unsigned long long)set->mem_bytes);
	for (uint64_t k = 0; k < p->S; k++) {
		uint64_t at = p->cps[0] * p->shard_first[k] * p->slot_capacity;

		set->shards[k].data = set->mem + at;
		set->shards[k].cap = (size_t)(p->cps[0] * p->slot_capacity *
					      (p->shard_first[k + 1] -
					       p->shard_first[k]));
		set->shards[k].index =
			malloc(2 * p->chunks_per_shard * sizeof(uint64_t));
		SP_RETURN_IF(set->shards[k].index == NULL, err,
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
			free(set->shards[k].index);
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
		for (uint64_t j = 0; j < 2 * p->chunks_per_shard; j++)
			set->shards[k].index[j] = EMPTY;
	}
	set->epochs = 0;
}

/* Room for `more` bytes: a backend's chunks never exceed their slots. */
static int reserve(const struct shard_buf *b, size_t more, struct sp_err *err)
{
	SP_RETURN_IF(more > b->cap - b->len, err, SHARDPIPE_ERR_BACKEND,
		     "the backend's chunks exceed their slot capacity: %zu "
		     "bytes more for a shard holding %zu of %zu", more, b->len,
		     b->cap);
	return SHARDPIPE_OK;
}

int shard_set_place(struct shard_set *set, const uint64_t *offsets,
		    uint64_t epochs, struct batch_range *r, size_t *n,
		    struct sp_err *err)
{
	const struct plan *p = set->plan;

	*n = 0;
	/* Check every shard's room for all the epochs first, so that
	 * nothing is placed when a shard would overflow. */
	for (uint64_t k = 0; k < p->S; k++) {
		uint64_t first = p->shard_first[k], last = p->shard_first[k + 1];
		size_t more = 0;

		for (uint64_t e = 0; e < epochs; e++)
			more += (size_t)(offsets[e * p->M + last] -
					 offsets[e * p->M + first]);
		SP_FORWARD(reserve(&set->shards[k], more, err));
	}
	for (uint64_t e = 0; e < epochs; e++, set->epochs++) {
		const uint64_t *off = offsets + e * p->M;
		uint64_t slot0 = set->epochs * p->chunks_per_shard_inner;

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
				uint64_t slot = slot0 + p->pos_slot[j];
				uint64_t len = off[j + 1] - off[j];

				if (len == 0)
					continue;
				b->index[2 * slot] =
					b->len + (off[j] - off[first]);
				b->index[2 * slot + 1] = len;
				b->stored++;
			}
			b->len += (size_t)bytes;
		}
	}
	return SHARDPIPE_OK;
}

const uint8_t *shard_set_index(struct shard_set *set, uint64_t k)
{
	const struct plan *p = set->plan;
	const uint64_t *idx = set->shards[k].index;
	uint64_t shift = p->index_location == SHARDPIPE_INDEX_START ?
				 p->index_bytes : 0;
	uint8_t *out = set->index_bytes;

	for (uint64_t j = 0; j < p->chunks_per_shard; j++) {
		uint64_t off = idx[2 * j], len = idx[2 * j + 1];

		sp_put_le64(out + 16 * j, off == EMPTY ? EMPTY : off + shift);
		sp_put_le64(out + 16 * j + 8, len);
	}
	sp_put_le32(out + 16 * p->chunks_per_shard,
		    crc32c(0, out, 16 * p->chunks_per_shard));
	return out;
}
