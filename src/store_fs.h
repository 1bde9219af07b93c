/*
 * store_fs.h - a store as a directory: shards under c/i/j/..., zarr.json at
 * the top, each object written under a hidden temporary name (readers skip
 * names starting with '.') and renamed into place, so a reader or a crash
 * never sees a partial object; and the same directories read back.
 */
#ifndef SHARDPIPE_STORE_FS_H
#define SHARDPIPE_STORE_FS_H

#include "store.h"

/*
 * Check that path can hold a new store (or, with overwrite, replace the one
 * there) without writing anything.  With durable set, every object is
 * fsync'ed, then renamed into place, then its directory fsync'ed (and each
 * directory created, then its parent), before the write returns: once a
 * later zarr.json is durable, everything it advertises is too.
 */
SP_INTERNAL int store_fs_check(struct store **out, const char *path,
			       int overwrite, int durable, struct sp_err *err);

/* The array at path, which the caller has read, to be continued
 * (doc/design.md §29): locked against other writers (SHARDPIPE_ERR_BUSY),
 * never created or emptied. */
SP_INTERNAL int store_fs_reopen(struct store **out, const char *path,
				int durable, struct sp_err *err);

/* A region writer's store (doc/design.md §30): the existing directory at
 * path, holding nothing but an array's files, locked shared (an ordinary
 * stream's exclusive lock refuses it: SHARDPIPE_ERR_BUSY); each shard is
 * written through a temporary of its own, locked while written.  lo..hi
 * (rank dims, hi[0] 0: to the end): the box it claims, refused (BUSY)
 * while another writer's claim overlaps it; lo NULL (publish of rows):
 * every live claim must start at or past rows or have written its shards
 * of the rows below it (store_fs_region_progress), and a killed writer's
 * is removed.  levels > 0: an OME-NGFF image's root (§30.5), which may
 * also hold the level directories 0 .. levels-1, each an array's files;
 * its children (store_child) write their shards as a region writer's. */
SP_INTERNAL int store_fs_region(struct store **out, const char *path,
				int durable, int rank, const uint64_t *lo,
				const uint64_t *hi, uint64_t rows, int levels,
				struct sp_err *err);

/* A region writer records in its claim that every shard of its box's
 * first rows rows is written (§30.3), where a publish of those rows
 * reads it; nothing for any other store. */
SP_INTERNAL int store_fs_region_progress(struct store *s, uint64_t rows,
					 struct sp_err *err);

/* The region writer wrote its whole box, its first rows rows: the claim
 * stays after it is freed, unlocked, until publish removes it, so that a
 * later writer of a box meeting it is refused (§30.3); refused itself
 * (SHARDPIPE_ERR_EXISTS) when such a box meets the rows it wrote. */
SP_INTERNAL int store_fs_region_done(struct store *s, int rank,
				     uint64_t rows, struct sp_err *err);

/* Open the directory at path for reading. */
SP_INTERNAL int source_fs_open(struct source **out, const char *path,
			       struct sp_err *err);

/* Make directory dir when it is absent (*made: whether this call made
 * it), its parent synced; and write dir/zarr.json durably, replacing one
 * there at once (doc/design.md §28.8). */
SP_INTERNAL int store_fs_mkdir(const char *dir, int *made,
			       struct sp_err *err);
SP_INTERNAL int store_fs_put_meta(const char *dir, const char *json,
				  size_t len, struct sp_err *err);

/* The library error code for an errno value from a write. */
SP_INTERNAL int store_fs_errno_code(int e);
/* The directory holding path ("." for a bare name, "/" for a top-level
 * one), trailing slashes ignored: a malloc'ed string, or NULL. */
SP_INTERNAL char *store_fs_parent(const char *path);

#endif
