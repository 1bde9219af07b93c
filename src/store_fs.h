/*
 * store_fs.h - a store as a directory: shards under c/i/j/..., zarr.json at
 * the top, each object written under a hidden temporary name (readers skip
 * names starting with '.') and renamed into place, so a reader or a crash
 * never sees a partial object.
 */
#ifndef SHARDPIPE_STORE_FS_H
#define SHARDPIPE_STORE_FS_H

#include "common.h"

struct store_fs;

/*
 * Check that path can hold a new store (or, with overwrite, replace the one
 * there) without writing anything.  On success *out is ready for
 * store_fs_create().
 */
SP_INTERNAL int store_fs_check(struct store_fs **out, const char *path,
			       int overwrite, struct sp_err *err);
/*
 * With durable set, every object is fsync'ed, then renamed into place,
 * then its directory fsync'ed (and each directory created, then its
 * parent), before the write returns: once a later zarr.json is durable,
 * everything it advertises is too.
 */
SP_INTERNAL void store_fs_set_durable(struct store_fs *s, int durable);
/*
 * A store for the array `name` below parent's directory (a pyramid level,
 * doc/design.md §26.5): the same durability, never overwriting (parent's
 * creation removed the old levels), created by store_fs_create.
 */
SP_INTERNAL int store_fs_child(const struct store_fs *parent,
			       const char *name, struct store_fs **out,
			       struct sp_err *err);
/* The store's directory, as given. */
SP_INTERNAL const char *store_fs_root(const struct store_fs *s);
/* Create the directory, removing an old store's objects if overwriting:
 * a single array's, or a pyramid's group and the levels below it. */
SP_INTERNAL int store_fs_create(struct store_fs *s, struct sp_err *err);
SP_INTERNAL int store_fs_write_shard(struct store_fs *s,
				     const uint64_t *coords, int rank,
				     const void *first, size_t first_len,
				     const void *second, size_t second_len,
				     struct sp_err *err);
SP_INTERNAL int store_fs_write_meta(struct store_fs *s, const char *json,
				    size_t len, struct sp_err *err);
SP_INTERNAL void store_fs_free(struct store_fs *s);

/* The library error code for an errno value from a write. */
SP_INTERNAL int store_fs_errno_code(int e);

#endif
