/*
 * store_fs.h - a store as a directory: shards under c/i/j/..., zarr.json at
 * the top, each object written under a hidden temporary name (readers skip
 * names starting with '.') and renamed into place, so a reader or a crash
 * never sees a partial object.
 */
#ifndef SHARDPIPE_STORE_FS_H
#define SHARDPIPE_STORE_FS_H

#include <sys/uio.h>

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
/* Create the directory, removing an old store's objects if overwriting. */
SP_INTERNAL int store_fs_create(struct store_fs *s, struct sp_err *err);
/* Write a shard, the concatenation of n parts (its index among them), in
 * vectored writes. */
SP_INTERNAL int store_fs_write_shard(struct store_fs *s,
				     const uint64_t *coords, int rank,
				     const struct iovec *parts, size_t n,
				     struct sp_err *err);
SP_INTERNAL int store_fs_write_meta(struct store_fs *s, const char *json,
				    size_t len, struct sp_err *err);
SP_INTERNAL void store_fs_free(struct store_fs *s);

/* The library error code for an errno value from a write. */
SP_INTERNAL int store_fs_errno_code(int e);

#endif
