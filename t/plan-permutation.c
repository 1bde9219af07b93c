/*
 * plan-permutation.c - the shard permutation P on random shapes: a
 * bijection on 0..M-1 that lists each shard's chunks contiguously, shards in
 * row-major order of their grid coordinates and chunks in row-major order
 * inside each shard; index slots and chunk boxes, checked against a direct
 * computation written here.
 */
#include <stdlib.h>

#include "plan.h"
#include "tap.h"
#include "testutil.h"

static int check(const struct plan *p, const shardpipe_desc *d)
{
	uint64_t M = 1, S = 1, cc[SHARDPIPE_MAX_RANK], sc[SHARDPIPE_MAX_RANK];
	char *seen;
	int good = 1;
	uint64_t prev_key = 0;

	for (int k = 1; k < d->rank; k++) {
		cc[k] = (d->dims[k].size + d->dims[k].chunk - 1) / d->dims[k].chunk;
		sc[k] = (cc[k] + d->dims[k].chunks_per_shard - 1) /
			d->dims[k].chunks_per_shard;
		M *= cc[k];
		S *= sc[k];
	}
	if (p->M != M || p->S != S) {
		diag("M %llu S %llu, expected %llu %llu",
		     (unsigned long long)p->M, (unsigned long long)p->S,
		     (unsigned long long)M, (unsigned long long)S);
		return 0;
	}
	seen = calloc(M, 1);
	/* Walk positions in order: (shard, within-shard row-major) keys must
	 * increase strictly and each position's chunk must be in the shard
	 * whose range holds it. */
	uint64_t *chunk_at = malloc(M * sizeof(*chunk_at));
	for (uint64_t i = 0; i < M; i++) {
		if (p->perm[i] >= M || seen[p->perm[i]]) {
			diag("perm[%llu] = %u repeats or is out of range",
			     (unsigned long long)i, p->perm[i]);
			good = 0;
			break;
		}
		seen[p->perm[i]] = 1;
		chunk_at[p->perm[i]] = i;
	}
	for (uint64_t j = 0; good && j < M; j++) {
		uint64_t i = chunk_at[j], t[SHARDPIPE_MAX_RANK], rest = i;
		uint64_t shard = 0, within = 0, slot = 0, key;

		for (int k = d->rank - 1; k >= 1; k--) {
			t[k] = rest % cc[k];
			rest /= cc[k];
		}
		for (int k = 1; k < d->rank; k++) {
			uint64_t c = d->dims[k].chunks_per_shard;

			shard = shard * sc[k] + t[k] / c;
			within = within * c + t[k] % c;
			slot = slot * c + t[k] % c;
		}
		key = shard * (p->chunks_per_shard_inner + 1) + within;
		if (j > 0 && key <= prev_key) {
			diag("position %llu is out of shard-major order",
			     (unsigned long long)j);
			good = 0;
		}
		prev_key = key;
		if (j < p->shard_first[shard] || j >= p->shard_first[shard + 1]) {
			diag("position %llu lies outside shard %llu's range",
			     (unsigned long long)j, (unsigned long long)shard);
			good = 0;
		}
		if (p->pos_slot[j] != slot) {
			diag("slot of position %llu is %u, expected %llu",
			     (unsigned long long)j, p->pos_slot[j],
			     (unsigned long long)slot);
			good = 0;
		}
		uint64_t origin[SHARDPIPE_MAX_RANK], extent[SHARDPIPE_MAX_RANK];
		plan_chunk_box(p, i, origin, extent);
		for (int k = 1; k < d->rank; k++) {
			uint64_t o = t[k] * d->dims[k].chunk;
			uint64_t e = d->dims[k].size - o < d->dims[k].chunk ?
					     d->dims[k].size - o : d->dims[k].chunk;

			if (origin[k] != o || extent[k] != e) {
				diag("chunk %llu dim %d box (%llu,+%llu), "
				     "expected (%llu,+%llu)",
				     (unsigned long long)i, k,
				     (unsigned long long)origin[k],
				     (unsigned long long)extent[k],
				     (unsigned long long)o,
				     (unsigned long long)e);
				good = 0;
			}
		}
	}
	if (good && p->shard_first[S] != M) {
		diag("shard ranges end at %llu, not M",
		     (unsigned long long)p->shard_first[S]);
		good = 0;
	}
	free(seen);
	free(chunk_at);
	return good;
}

int main(void)
{
	uint64_t rng = test_seed();
	int good = 1, edge = 0;

	plan(3);
	for (int n = 0; n < 400; n++) {
		shardpipe_desc d;
		struct plan p;
		struct sp_err err;

		shardpipe_desc_init(&d);
		d.rank = 1 + (int)(test_rand(&rng) % 6);
		d.codec = SHARDPIPE_CODEC_NONE;
		for (int k = 0; k < d.rank; k++) {
			d.dims[k].size = 1 + test_rand(&rng) % 30;
			d.dims[k].chunk = 1 + test_rand(&rng) % 8;
			d.dims[k].chunks_per_shard = 1 + test_rand(&rng) % 4;
			edge |= k > 0 && d.dims[k].size % d.dims[k].chunk != 0;
		}
		if (plan_init(&p, &d, &err) != SHARDPIPE_OK) {
			diag("plan_init: %s", err.msg);
			good = 0;
			break;
		}
		if (!check(&p, &d)) {
			diag("in shape %d-d case %d", d.rank, n);
			good = 0;
		}
		plan_free(&p);
	}
	ok(good, "400 random shapes: P is a bijection, shard-major, with "
		 "the right slots and chunk boxes");
	ok(edge, "the random shapes include edge chunks");

	/* A known case: dims (y,x) chunk counts (3,5), 2x2 chunks per shard:
	 * shards of 4,2 / 2,1 chunks; chunk (0,4) is the 5th chunk of shard
	 * (0,2)'s... computed by hand: shard sizes 4,4,2,2,2,1. */
	{
		shardpipe_desc d;
		struct plan p;
		struct sp_err err;
		static const uint64_t want_first[7] = { 0, 4, 8, 10, 12, 14, 15 };
		int same = 1;

		shardpipe_desc_init(&d);
		d.rank = 3;
		d.codec = SHARDPIPE_CODEC_NONE;
		uint64_t size[3] = { 1, 3, 5 };
		for (int k = 0; k < 3; k++) {
			d.dims[k].size = size[k];
			d.dims[k].chunk = 1;
			d.dims[k].chunks_per_shard = 2;
		}
		plan_init(&p, &d, &err);
		for (int k = 0; k < 7; k++)
			same &= p.shard_first[k] == want_first[k];
		/* chunk (y=2,x=4) is alone in shard (1,2): position 14 */
		same &= p.perm[2 * 5 + 4] == 14;
		/* chunk (y=1,x=3) is the last of shard (0,1): position 7 */
		same &= p.perm[1 * 5 + 3] == 7;
		ok(same, "hand-computed 3x5 grid with 2x2 shards");
		plan_free(&p);
	}
	return done_testing();
}
