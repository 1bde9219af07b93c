/*
 * reader_levels.h - multiscale images on the reader's side
 * (doc/design.md §28.6): the levels an OME-NGFF group names, and each
 * level recomputed from the one below it by code of the reader's own.
 */
#ifndef SHARDPIPE_READER_LEVELS_H
#define SHARDPIPE_READER_LEVELS_H

#include "common.h"

struct reader_levels;

/*
 * Whether path's zarr.json is a group: then *out lists the levels of its
 * first OME-NGFF multiscale image, and a group that is not one (or names
 * a dataset path that could leave the group) is refused.  *out is NULL
 * when path holds no group: the caller reads it as an array.
 */
SP_INTERNAL int reader_levels_find(const char *path,
				   struct reader_levels **out,
				   struct sp_err *err);

SP_INTERNAL int reader_levels_count(const struct reader_levels *lv);

/* Level i's array: the group's path and the dataset's. */
SP_INTERNAL const char *reader_levels_path(const struct reader_levels *lv,
					   int i);

/*
 * Check every level above 0 as shardpipe_reader_check() does, and, when
 * the image's "type" is a method shardpipe knows, every level above 0
 * against the one below it reduced by that method, element by element.
 * *recomputed is set when they were.  The first difference is
 * SHARDPIPE_ERR_CORRUPT, naming the level, the element and both values.
 */
SP_INTERNAL int reader_levels_check(const struct reader_levels *lv,
				    int *recomputed, struct sp_err *err);

SP_INTERNAL void reader_levels_free(struct reader_levels *lv);

#endif
