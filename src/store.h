/*
 * store.h - where a stream's objects go and where a reader's come from: a
 * directory (store_fs.c, doc/design.md §15.2) or a bucket and key prefix
 * on S3 (store_s3.c, §24), chosen by the path's form.  The stream and the
 * reader see only these two small interfaces.
 */
#ifndef SHARDPIPE_STORE_H
#define SHARDPIPE_STORE_H

#include <sys/uio.h>

#include "common.h"

/* Whether a store path names an S3 store. */
static inline int store_is_s3(const char *path)
{
	return path != NULL && strncmp(path, "s3://", 5) == 0;
}

/* ------------------------------------------------------------- writing */

struct store;

struct store_ops {
	/* Make the store: create its root, remove an old store's objects
	 * when overwriting.  Runs after every refusal has had its chance. */
	int (*create)(struct store *s, struct sp_err *err);
	/* Write the object at key (below the store's root), the
	 * concatenation of n parts (a shard's index and its chunks where
	 * they lie, doc/design.md §14.2).  May return before the object is
	 * stored: the bytes are copied first. */
	int (*write)(struct store *s, const char *key,
		     const struct iovec *parts, size_t n, struct sp_err *err);
	/* Write zarr.json once every object written before it is stored. */
	int (*write_meta)(struct store *s, const char *json, size_t len,
			  struct sp_err *err);
	/* Wait until everything written is stored; the first failure.  NULL
	 * when writes are done when they return. */
	int (*sync)(struct store *s, struct sp_err *err);
	/* Memory the store holds for objects in flight, at most. */
	uint64_t (*pool_bytes)(const struct store *s);
	/* A store for the array `name` below this one's root (a pyramid
	 * level, doc/design.md §28.5): made by its own create, never
	 * overwriting (this store's create removes the old levels).  NULL
	 * when the store holds one array only. */
	int (*child)(const struct store *s, const char *name,
		     struct store **out, struct sp_err *err);
	/* A continued store (doc/design.md §29): remove the object at key
	 * when it is there; remove every shard whose coordinate along
	 * storage dim `dim` (the append dim's, §3.3) is `shards` or more,
	 * and a killed writer's temporaries from shard row `temps` on.
	 * NULL when the store cannot be continued. */
	int (*remove)(struct store *s, const char *key, struct sp_err *err);
	int (*drop_rows)(struct store *s, int dim, uint64_t temps,
			 uint64_t shards, struct sp_err *err);
	void (*free)(struct store *s);
};

struct store {
	const struct store_ops *ops;
};

/*
 * Check that path can hold a new store (or, with overwrite, replace the
 * one there) without writing anything: a directory, or "s3://BUCKET/
 * PREFIX" when the library has S3 support (SHARDPIPE_ERR_UNSUPPORTED
 * otherwise).  durable: see store_fs.h.
 */
SP_INTERNAL int store_check(struct store **out, const char *path,
			    int overwrite, int durable, struct sp_err *err);
/* A caller's sink as a store (store_sink.c): index_start says a shard's
 * index is its first part, for the shard and shard_parts callbacks. */
SP_INTERNAL int store_sink_open(struct store **out, const shardpipe_sink *sink,
				int index_start, struct sp_err *err);
/* Continue the array at path: a directory, locked against other writers,
 * or "s3://BUCKET/PREFIX", which has no lock (doc/design.md §29). */
SP_INTERNAL int store_reopen(struct store **out, const char *path,
			     int durable, struct sp_err *err);
/* A region writer's store (doc/design.md §30): store_fs_region's
 * directory (durable, its claim of the box lo..hi; lo NULL: publish of
 * rows; levels > 0: an image's root), or "s3://BUCKET/PREFIX"
 * (store_s3_region: no claims, conditional shard writes instead; one
 * array only). */
SP_INTERNAL int store_region(struct store **out, const char *path,
			     int durable, int rank, const uint64_t *lo,
			     const uint64_t *hi, uint64_t rows, int levels,
			     struct sp_err *err);
/* Remove the shard at coords, when it is there (s->ops->remove). */
SP_INTERNAL int store_remove_shard(struct store *s, const uint64_t *coords,
				   int rank, struct sp_err *err);
/* Write a shard under its chunk key ("c/1/0/3", the default encoding). */
SP_INTERNAL int store_write_shard(struct store *s, const uint64_t *coords,
				  int rank, const struct iovec *parts,
				  size_t n, struct sp_err *err);
/* s->ops->child, or SHARDPIPE_ERR_UNSUPPORTED naming path when the store
 * has none. */
SP_INTERNAL int store_child(const struct store *s, const char *path,
			    const char *name, struct store **out,
			    struct sp_err *err);
SP_INTERNAL int store_sync(struct store *s, struct sp_err *err);
SP_INTERNAL uint64_t store_pool_bytes(const struct store *s);
SP_INTERNAL void store_free(struct store *s);

/* Whether name is a part of a chunk key: decimal digits only. */
SP_INTERNAL int store_is_key_part(const char *name, size_t n);

/* ------------------------------------------------------------- reading */

struct source;
struct source_obj;

struct source_ops {
	/* Open key for reading: *obj NULL when there is no such object;
	 * SHARDPIPE_ERR_FORMAT when the key names something that is not
	 * an object (a directory). */
	int (*open)(struct source *src, const char *key,
		    struct source_obj **obj, uint64_t *size,
		    struct sp_err *err);
	/* Exactly n bytes at off of an open object: fewer is an error (the
	 * object changed since it was opened). */
	int (*read)(struct source *src, struct source_obj *obj, void *buf,
		    size_t n, uint64_t off, struct sp_err *err);
	void (*close)(struct source *src, struct source_obj *obj);
	/*
	 * Call each(user, key) for every object whose key is dir (or the
	 * root when dir is "") followed by exactly depth more components,
	 * all but the last of them decimal numbers: the keys a chunk key
	 * tree can hold.  Stops at each's first nonzero return.
	 */
	int (*list)(struct source *src, const char *dir, int depth,
		    int (*each)(void *user, const char *key), void *user,
		    struct sp_err *err);
	void (*free)(struct source *src);
	/* Optional: open key as open does and read its first n bytes, or
	 * its last n when at_end, into buf, in one request (a shard and
	 * its index, doc/design.md §24.4).  An object smaller than n
	 * leaves buf undefined: the caller refuses it by its size. */
	int (*open_read)(struct source *src, const char *key,
			 struct source_obj **obj, uint64_t *size, void *buf,
			 size_t n, int at_end, struct sp_err *err);
	/* Optional: read as read does, the bytes scattered over the cnt
	 * buffers of iov in order (a raw chunk straight into the rows of
	 * its place in the output, doc/design.md §19.1).  iov is used up. */
	int (*readv)(struct source *src, struct source_obj *obj,
		     struct iovec *iov, size_t cnt, uint64_t off,
		     struct sp_err *err);
	/* read may run on several threads at once (the reader's pool,
	 * doc/design.md §19.1); else the reader's reads take turns. */
	int concurrent_reads;
};

struct source {
	const struct source_ops *ops;
	/* Requests worth having in flight at once: the reader runs at
	 * least this many threads (0: as many as it decodes on). */
	int io_threads;
	/* > 0: a request costs more than its bytes, so the reader fetches
	 * the chunks it needs that lie next to each other in a shard with
	 * one read of up to this many bytes (doc/design.md §24.4). */
	uint64_t coalesce;
};

/* Open the store at path (a directory or an S3 URL) for reading. */
SP_INTERNAL int source_open(struct source **out, const char *path,
			    struct sp_err *err);

#endif
