/*
 * plan.h - the geometry of a stream, computed once from the description.
 *
 * Vocabulary (doc/design.md §2): an epoch is every chunk sharing one chunk
 * coordinate along dim 0; M chunks per epoch; a batch is K consecutive
 * epochs handed to a backend at once; a shard epoch is chunks_per_shard[0]
 * epochs, after which S shards are complete.  Backends execute the plan and
 * compute none of it themselves.
 */
#ifndef SHARDPIPE_PLAN_H
#define SHARDPIPE_PLAN_H

#include <stdint.h>

#include "common.h"
#include "../backends/kernels/reduce_layout.h"

struct plan {
	int rank;
	shardpipe_dtype dtype;
	shardpipe_codec codec;
	int level;
	shardpipe_index_location index_location;
	int threads;              /* resolved: >= 1 */
	unsigned esize;           /* bytes per element: 1, 2, 4 or 8 */

	uint64_t size[SHARDPIPE_MAX_RANK];  /* size[0] == 0: unbounded */
	uint64_t chunk[SHARDPIPE_MAX_RANK];
	uint64_t cps[SHARDPIPE_MAX_RANK];   /* chunks per shard */
	char names[SHARDPIPE_MAX_RANK][64]; /* "" = unnamed */

	/* chunk_count[0] and shard_count[0] are 0 when dim 0 is unbounded. */
	uint64_t chunk_count[SHARDPIPE_MAX_RANK];
	uint64_t shard_count[SHARDPIPE_MAX_RANK];

	uint64_t M;               /* chunks per epoch: prod_{d>0} chunk_count */
	uint64_t S;               /* shards per shard epoch */
	uint64_t K;               /* epochs per batch */
	uint64_t chunk_elems;     /* prod chunk[d] */
	uint64_t chunk_bytes;
	uint64_t row_bytes;       /* one dim-0 row: prod_{d>0} size[d] * esize */
	uint64_t epoch_bytes;     /* chunk[0] rows */
	uint64_t batch_bytes;     /* K epochs */
	uint64_t slot_capacity;   /* worst-case compressed chunk, bytes */
	uint64_t chunks_per_shard;       /* prod cps[d], index entries */
	uint64_t chunks_per_shard_inner; /* prod_{d>0} cps[d] */
	uint64_t index_bytes;     /* 16 * chunks_per_shard + 4 */

	/*
	 * Scatter geometry in elements, per dim d (dim 0 indexes rows inside
	 * one epoch, 0..chunk[0]-1).  An element at epoch coordinate x has
	 * input offset sum x[d] * in_stride[d]; with t = x / chunk, n = x %
	 * chunk its chunk-pool offset is sum t[d] * tile_stride[d] +
	 * n[d] * elem_stride[d] (tile_stride[0] = 0 inside an epoch).
	 * Cells with x[d] >= size[d] are padding and hold the fill value.
	 * Epoch e of a batch starts at e * epoch_bytes in the input and at
	 * e * M chunks in the pool.
	 */
	uint64_t in_stride[SHARDPIPE_MAX_RANK];
	uint64_t tile_stride[SHARDPIPE_MAX_RANK];
	uint64_t elem_stride[SHARDPIPE_MAX_RANK];

	/*
	 * The shard permutation, a bijection on 0..M-1: perm[i] is the
	 * shard-major position of chunk i (chunks in row-major order of
	 * their coordinates along dims 1..).  Positions list shard 0's chunks
	 * first, each shard's in row-major order of its own chunks; edge
	 * shards hold fewer chunks, so shard k occupies positions
	 * shard_first[k] .. shard_first[k+1]-1 (S+1 entries).  pos_slot[j] is
	 * the index slot (row-major over dims 1.. of the full shard grid) of
	 * the chunk at position j; epoch w0 of a shard epoch adds
	 * w0 * chunks_per_shard_inner.
	 */
	uint32_t *perm;
	uint32_t *pos_slot;
	uint64_t *shard_first;

	/* Codec blosc only (zero otherwise): the compressor, the shuffle
	 * (over elements of esize bytes) and the forced block size in bytes
	 * (0 = c-blosc's choice).  Appended last, so a plugin built before
	 * them reads every field above unchanged. */
	shardpipe_blosc_cname blosc_cname;
	shardpipe_blosc_shuffle blosc_shuffle;
	uint32_t blosc_blocksize;
	/* Codec zstd only: a content checksum ends every frame.  After the
	 * blosc fields for the same reason. */
	int zstd_checksum;
	/* The fill value, one element: fill in the host's byte order (for
	 * padding staged input), fill_le as the store holds it (backends
	 * compare chunks with it, doc/design.md §22.2).  A plugin built
	 * before ABI 3 does not know that it must. */
	uint8_t fill[8];
	uint8_t fill_le[8];
	/* Zero: backends give a chunk whose cells inside the array all
	 * equal fill_le the size 0 (not stored). */
	int write_empty_chunks;
	/* Only the host reads these. */
	int durable;
	uint64_t max_memory;      /* 0: no cap */
	/* SHARDPIPE_TRACE is set: kernel backends time their device work
	 * and report it through backend_ops.spans (doc/design.md §23). */
	int trace;
	/* A group's shared worker threads (doc/design.md §26.2), borrowed
	 * from the stream, or NULL: the cpu backend's fused pass runs on
	 * these instead of starting its own; threads == their count. */
	struct lanes *lanes;
	/*
	 * Pyramids (doc/design.md §28): the array's pyramid level, 0 at
	 * full resolution, and how its rows reduce into the next level's: the
	 * table of reduce_layout.h, reduce_geo[SP_RGEO_F0] == 0 when there
	 * is no next level.  Read by a backend's reduce entry, which a plugin
	 * built before these fields lacks.
	 */
	int scale_level;
	uint64_t reduce_geo[SP_RGEO_WORDS];
	/* zarr.json says zstd level 0 (libzstd's default, numcodecs'): a
	 * continued store another writer made (doc/design.md §29), which
	 * the encoders write at level, ZSTD_LEVEL_DEFAULT.  Read by the
	 * host only, so appended without an ABI bump (§5.3). */
	int level_default;
	/* Storage order (doc/design.md §3.3): every per-dim field above is
	 * in plan order, the append dim first and then the other storage
	 * dims in storage order; plan dim w is append dim order[w] and
	 * storage dim sdim[w]; permuted when storage order is not append
	 * order.  in_stride already holds it, so backends read nothing
	 * here (a moved append dim, sdim[0] != 0, hands them the view of
	 * plan_backend_view); the host's.  A shard's epoch w0 adds
	 * w0 * epoch_slots to pos_slot (chunks_per_shard_inner when the
	 * append dim is storage dim 0). */
	int order[SHARDPIPE_MAX_RANK];
	int permuted;
	int sdim[SHARDPIPE_MAX_RANK];
	uint64_t epoch_slots;
};

/*
 * The arrays a stream writes (doc/design.md §28.1): without a pyramid one,
 * level 0; with one, levels 1 .. n-1 above it, each a complete plan whose
 * perm, pos_slot and shard_first it owns until a level's stream takes them
 * over.  The rest is for the OME-NGFF group's zarr.json, the host's only.
 */
/*
 * A pyramid's fields.  Those per dim (downsample's bits, stop, scale,
 * translation, axis_type, unit) are indexed by storage dim, as the
 * description and zarr.json give them; the levels' plans, sizes and
 * reduction tables by plan dim (design §3.3), sdim[w] naming the storage
 * dim of plan dim w (level 0's, which every level shares).
 */
struct plan_levels {
	int n;                    /* arrays, level 0 included */
	int group;                /* OME-NGFF layout: a group of arrays 0.. */
	uint32_t downsample;      /* bit d: storage dim d may halve */
	int method;               /* SHARDPIPE_METHOD_* */
	int append_method;        /* along the append dim: -1 = method */
	int sdim[SHARDPIPE_MAX_RANK];
	/* Per dim: the levels it halves through (max_levels_dim), 0 none. */
	int stop[SHARDPIPE_MAX_RANK];
	struct plan level[SHARDPIPE_MAX_LEVELS]; /* [0] unused: the stream's */
	/* Each level's coordinate transformations, per dim: the physical
	 * size of one element, and where element 0's centre lies. */
	double scale[SHARDPIPE_MAX_LEVELS][SHARDPIPE_MAX_RANK];
	double translation[SHARDPIPE_MAX_LEVELS][SHARDPIPE_MAX_RANK];
	/* OME-NGFF axis types ("time", "channel", "space") and units ("" =
	 * none), set by ome_axes_init (ome_meta.c). */
	char axis_type[SHARDPIPE_MAX_RANK][8];
	char unit[SHARDPIPE_MAX_RANK][16];
	/* A region writer's box (§30.5): its first element at each level,
	 * in that level's elements; 0 for a whole array. */
	uint64_t origin[SHARDPIPE_MAX_LEVELS][SHARDPIPE_MAX_RANK];
};

/*
 * Validate desc and fill *p.  A refusal names the dimension or value at
 * fault in err and returns its code; nothing is allocated then.
 */
SP_INTERNAL int plan_init(struct plan *p, const shardpipe_desc *desc,
			  struct sp_err *err);
SP_INTERNAL void plan_free(struct plan *p);

/*
 * The pyramid of description desc over its level-0 plan p0
 * (doc/design.md §28.1): refuse what cannot be (a halving flag on a dim of
 * size 1 or past the rank, an unknown method, more levels than the dims
 * can halve, an
 * append method without dim 0 halving, ...), naming the field and value;
 * then every level's plan, p0's reduction table and the coordinate
 * transformations.  pl->n is 1 and pl->group 0 for a description without
 * pyramid or ngff fields.  On failure nothing is left allocated.
 */
SP_INTERNAL int plan_levels_init(struct plan_levels *pl, struct plan *p0,
				 const shardpipe_desc *desc,
				 struct sp_err *err);
SP_INTERNAL void plan_levels_free(struct plan_levels *pl);

/* How many times dim d of level L halved from level 0's, as the levels'
 * reduction tables say (so also along an unbounded dim 0). */
SP_INTERNAL int plan_levels_shift(const struct plan_levels *pl,
				  const struct plan *p0, int L, int d);

/*
 * A region writer's levels (doc/design.md §30.5): the whole array's
 * (whole over its level 0 w0) cut to the box lo..hi of level 0, whose
 * level-0 plan p0 is the box's; lo and hi aligned to every level's shard
 * (or hi the array's edge).  Level count, chunk and shard shapes and the
 * halving dims are the whole array's; pl->origin says where the box
 * starts at each level.
 */
SP_INTERNAL int plan_levels_box(struct plan_levels *pl, struct plan *p0,
				const struct plan_levels *whole,
				const struct plan *w0, const uint64_t *lo,
				const uint64_t *hi, struct sp_err *err);

/*
 * Rows of the next level that reducing `carried` (0 or 1) rows of carry,
 * nrows rows and `tail` (SP_RD_TAIL_*) gives: every row when dim 0 does
 * not halve, else every pair, and an odd last row when a tail pairs it.
 */
SP_INTERNAL uint64_t plan_reduce_rows(const struct plan *p, uint64_t carried,
				      uint64_t nrows, int tail);

/* Epochs per batch: k, or the epochs a bounded dim 0 has if fewer, and
 * the batch's bytes.  Every level of a stream gets the same k
 * (doc/design.md §28.3). */
SP_INTERNAL void plan_set_epochs(struct plan *p, uint64_t k);

/*
 * The box of chunk i (0 <= i < M) inside one epoch: origin[d] is its first
 * epoch coordinate, extent[d] how many of its cells lie inside the array
 * (the rest is padding).  Dim 0 spans the whole epoch.
 */
SP_INTERNAL void plan_chunk_box(const struct plan *p, uint64_t i,
				uint64_t origin[SHARDPIPE_MAX_RANK],
				uint64_t extent[SHARDPIPE_MAX_RANK]);

/*
 * What the backends are handed (doc/design.md §3.3): the plan itself,
 * unless a storage order moved the append dim from storage dim 0.  They
 * write every chunk row-major over their dims, the first being an
 * epoch's rows; so then they see one dim more: dim 0 counts epochs (a
 * chunk of 1 row, the epoch), then the storage dims in storage order, the
 * append dim as one chunk of an epoch's rows.  Chunks come out row-major
 * in storage order, numbered as the plan numbers them (its dims 1.., the
 * storage dims but the append dim, in order): perm, the tables and the
 * shard sets are the plan's, shared, not owned by v.
 */
SP_INTERNAL void plan_backend_view(const struct plan *p, struct plan *v);

/* Coordinates in plan order (a shard's, say) into storage order. */
/* The plan dim that storage dim s is (design §3.3). */
SP_INTERNAL int plan_dim_of(const struct plan *p, int s);
SP_INTERNAL void plan_to_storage(const struct plan *p, const uint64_t *in,
				 uint64_t *out);

/* Coordinates of shard k (0 <= k < S) of shard epoch s0 in the shard grid,
 * in plan order. */
SP_INTERNAL void plan_shard_coords(const struct plan *p, uint64_t s0,
				   uint64_t k,
				   uint64_t coords[SHARDPIPE_MAX_RANK]);

#endif
