/*
 * cpu_gather.h - the cpu backend's gather: chunks out of an epoch's rows,
 * in work items of several chunks (doc/design.md §6), and the check that
 * leaves a chunk of fill value out (§22.2).
 */
#ifndef SHARDPIPE_CPU_GATHER_H
#define SHARDPIPE_CPU_GATHER_H

#include "plan.h"

/*
 * Scatter geometry, simplified once at open.  Adjacent dims merge when the
 * chunk spans the inner one whole (chunk == size: one chunk along it, no
 * padding), so runs get as long as the layout allows; dim 0 spans the
 * epoch, so a chunk that spans every other dim is one memcpy.  The chunk
 * index over the view's dims equals the plan's, since every dim merged away
 * has one chunk.
 */
struct view {
	int rank;
	uint64_t size[SHARDPIPE_MAX_RANK];   /* view dim 0: chunk[0] rows */
	uint64_t chunk[SHARDPIPE_MAX_RANK];
	uint64_t count[SHARDPIPE_MAX_RANK];  /* chunks along each dim */
	uint64_t in_stride[SHARDPIPE_MAX_RANK];
	/* in_stride is row-major over the view's sizes: no storage order
	 * (design §3.3) that the merging did not undo. */
	int dense;
	/* A work item gathers H x A x G chunks: G along the last dim (1 or
	 * all of them), A along the second-last (1, or all when G is all)
	 * and H along dim hd, the interleaved channels of a planarising
	 * storage order (design §3.3; H = 1 and hd = -1 otherwise), whose
	 * chunks lie hstride apart in the chunk numbering. */
	uint64_t A, G, H;
	int hd;
	uint64_t hstride;
	uint64_t items;      /* work items per epoch */
};

/* The view of plan p for the stage entries (fused 0) or run_batch (1). */
SP_INTERNAL void view_init(struct view *v, const struct plan *p, int fused);
/* The chunk index of work item `item`'s first chunk. */
SP_INTERNAL uint64_t item_first(const struct view *v, uint64_t item);
/* The chunk index of chunk j (h*A*G+a*G+g for chunk h, a, g) of the work
 * item whose first chunk is `first`. */
static inline uint64_t item_chunk(const struct view *v, uint64_t first,
				  uint64_t j)
{
	const uint64_t per = v->A * v->G;

	/* With H = 1, j < per: the item's chunks are consecutive. */
	return first + j / per * v->hstride + j % per;
}
/* Gather work item `item` of an epoch: its H x A x G chunks, chunk
 * (h*A+a)*G+g at out + ((h*A+a)*G+g)*cs. */
SP_INTERNAL void gather_item(const struct plan *p, const struct view *v,
			     const uint8_t *epoch, uint8_t *out, size_t cs,
			     uint64_t item);
/* gather_item for the epoch's view dim-0 rows r0..r1 only, `rows` pointing
 * at row r0 of the epoch: the deal of whole rows into chunk-laid staging;
 * past: whole runs go past the cache, unfenced (copy_run_past). */
SP_INTERNAL void gather_rows(const struct plan *p, const struct view *v,
			     const uint8_t *rows, uint8_t *out, size_t cs,
			     uint64_t item, uint64_t r0, uint64_t r1,
			     int past);
/* Whether every cell of work item `item` of an epoch is the fill value,
 * read in the epoch's rows (view rank 2 or more). */
SP_INTERNAL int item_is_fill(const struct plan *p, const struct view *v,
			     const uint8_t *epoch, uint64_t item);
/* The build of the channel dealers the loader picked for this CPU
 * ("x86-64-v4", "x86-64-v3" or "default"), or "none (built once)" where
 * they are not cloned (configure's cpu dispatch); for the tests. */
SP_INTERNAL const char *gather_dealer_clone(void);
/* Whether a gathered chunk is not to be stored: all fill (§22.2). */
SP_INTERNAL int left_out(const struct plan *p, const uint8_t *chunk);

#endif
