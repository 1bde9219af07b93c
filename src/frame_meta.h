/*
 * frame_meta.h - per-frame metadata (frame_meta.c, doc/design.md §28.9):
 * named values a row of dim 0, each field a 1-D array beside an image's
 * levels, written and advertised with the image's rows.
 */
#ifndef SHARDPIPE_FRAME_META_H
#define SHARDPIPE_FRAME_META_H

#include <pthread.h>

#include "attrs.h"
#include "common.h"
#include "plan.h"
#include "store.h"

#define FRAME_META_N (SHARDPIPE_MAX_FRAME_FIELDS + 1)

struct frame_meta {
	int n;                         /* fields, "skipped" the last */
	char names[FRAME_META_N][64];
	shardpipe_dtype dtype[FRAME_META_N];
	struct store *store[FRAME_META_N];
	uint64_t chunk;                /* rows a chunk: level 0's shard rows */
	/* Level 0's attributes: the CF "coordinates" naming the fields,
	 * which xarray's zarr engine makes coordinates of dim 0. */
	struct attrs level0;
	char dim0[64];                 /* level 0's dim 0 name */
	/* Under the stream's mutex: the values (bit patterns, n a row) of
	 * rows first .. first + rows - 1; first starts a chunk, and the
	 * chunks before it are written whole. */
	uint64_t *vals;
	uint64_t first, rows, cap;
};

/*
 * Check desc's frame fields against the stream about to open (an image,
 * p its level 0's plan) and copy them into *out (NULL when there are
 * none), nothing written.  image: the stream is an OME-NGFF group;
 * path names it in refusals.
 */
SP_INTERNAL int frame_meta_init(struct frame_meta **out,
				const shardpipe_desc *desc,
				const struct plan *p, int image,
				const char *path, struct sp_err *err);

/* Each field's store, a child of the image's group, and the attribute
 * that lists them (the group's "shardpipe": {"frame_meta": ...}). */
SP_INTERNAL int frame_meta_stores(struct frame_meta *fm,
				  const struct store *group, const char *path,
				  struct attrs *attrs, struct sp_err *err);
SP_INTERNAL int frame_meta_create(struct frame_meta *fm, struct sp_err *err);

/* Record k rows' values (vals k * (n - 1), the caller's), skipped 0;
 * with vals NULL, k skipped rows of fill.  Under mu. */
SP_INTERNAL int frame_meta_add(struct frame_meta *fm,
			       const shardpipe_frame_value *vals, uint64_t k,
			       struct sp_err *err);
/* Check k rows' values before any is recorded. */
SP_INTERNAL int frame_meta_check(const struct frame_meta *fm,
				 const shardpipe_frame_value *vals, uint64_t k,
				 uint64_t row0, struct sp_err *err);
/* Rows recorded (under mu). */
SP_INTERNAL uint64_t frame_meta_rows(const struct frame_meta *fm);
/* Drop the rows from `rows` on (an append that failed). Under mu. */
SP_INTERNAL void frame_meta_truncate(struct frame_meta *fm, uint64_t rows);

/*
 * Before the image's zarr.json advertises rows: every field's chunks up
 * to rows (the last partial one rewritten, rows never recorded as fill),
 * synced.  After it, frame_meta_publish: each field's zarr.json
 * advertising rows, and the whole chunks' values dropped.  mu guards the
 * values.
 */
SP_INTERNAL int frame_meta_write(struct frame_meta *fm, pthread_mutex_t *mu,
				 uint64_t rows, struct sp_err *err);
SP_INTERNAL int frame_meta_publish(struct frame_meta *fm, pthread_mutex_t *mu,
				   uint64_t rows, struct sp_err *err);

/* A continued image (doc/design.md §29): the values start at row first
 * (a chunk's first), with k rows of bits (n a row, "skipped" included)
 * read back from the store.  Before the stream's threads publish. */
SP_INTERNAL int frame_meta_resume(struct frame_meta *fm, uint64_t first,
				  const uint64_t *bits, uint64_t k,
				  struct sp_err *err);

SP_INTERNAL void frame_meta_free(struct frame_meta *fm);

#endif
