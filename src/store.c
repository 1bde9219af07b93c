/*
 * store.c - the store a path names, and what every store shares: the
 * chunk key encoding of shards written (doc/design.md §15.2).
 */
#include "config.h"
#include "store.h"
#include "store_fs.h"
#ifdef HAVE_S3
#include "store_s3.h"
#endif

#include <stdlib.h>

#ifndef HAVE_S3
static int no_s3(const char *path, struct sp_err *err)
{
	return sp_err_set(err, SHARDPIPE_ERR_UNSUPPORTED,
			  "%s: this build of shardpipe has no S3 support "
			  "(configure found no libcurl, or --with-s3=no)",
			  path);
}
#endif

int store_check(struct store **out, const char *path, int overwrite,
		int durable, struct sp_err *err)
{
	*out = NULL;
	if (store_is_s3(path)) {
#ifdef HAVE_S3
		return store_s3_check(out, path, overwrite, err);
#else
		return no_s3(path, err);
#endif
	}
	return store_fs_check(out, path, overwrite, durable, err);
}

int source_open(struct source **out, const char *path, struct sp_err *err)
{
	*out = NULL;
	if (store_is_s3(path)) {
#ifdef HAVE_S3
		return source_s3_open(out, path, err);
#else
		return no_s3(path, err);
#endif
	}
	return source_fs_open(out, path, err);
}

/* "c" + rank * "/<20 digits>", the default chunk key encoding. */
#define KEY_MAX (2 + SHARDPIPE_MAX_RANK * 21)

static void shard_key(char *key, const uint64_t *coords, int rank)
{
	size_t n = 1;

	key[0] = 'c';
	key[1] = '\0';
	for (int d = 0; d < rank; d++)
		n += (size_t)snprintf(key + n, KEY_MAX - n, "/%llu",
				      (unsigned long long)coords[d]);
}

int store_write_shard(struct store *s, const uint64_t *coords, int rank,
		      const struct iovec *parts, size_t n_parts,
		      struct sp_err *err)
{
	char key[KEY_MAX];

	shard_key(key, coords, rank);
	return s->ops->write(s, key, parts, n_parts, err);
}

int store_remove_shard(struct store *s, const uint64_t *coords, int rank,
		       struct sp_err *err)
{
	char key[KEY_MAX];

	if (s->ops->remove == NULL)
		return SHARDPIPE_OK;
	shard_key(key, coords, rank);
	return s->ops->remove(s, key, err);
}

int store_reopen(struct store **out, const char *path, int durable,
		 struct sp_err *err)
{
	*out = NULL;
	if (store_is_s3(path)) {
#ifdef HAVE_S3
		return store_s3_reopen(out, path, err);
#else
		return no_s3(path, err);
#endif
	}
	return store_fs_reopen(out, path, durable, err);
}

int store_region(struct store **out, const char *path, int durable,
		 int rank, const uint64_t *lo, const uint64_t *hi,
		 uint64_t rows, int levels, struct sp_err *err)
{
	*out = NULL;
	if (store_is_s3(path)) {
#ifdef HAVE_S3
		return store_s3_region(out, path, lo == NULL, err);
#else
		return no_s3(path, err);
#endif
	}
	return store_fs_region(out, path, durable, rank, lo, hi, rows, levels,
			       err);
}

int store_child(const struct store *s, const char *path, const char *name,
		struct store **out, struct sp_err *err)
{
	*out = NULL;
	SP_RETURN_IF(s->ops->child == NULL, err, SHARDPIPE_ERR_UNSUPPORTED,
		     "%s: this kind of store holds one array; a pyramid or an "
		     "OME-NGFF image (downsample, ngff) needs a directory "
		     "store", path);
	return s->ops->child(s, name, out, err);
}

int store_sync(struct store *s, struct sp_err *err)
{
	return s->ops->sync != NULL ? s->ops->sync(s, err) : SHARDPIPE_OK;
}

uint64_t store_pool_bytes(const struct store *s)
{
	return s != NULL && s->ops->pool_bytes != NULL ? s->ops->pool_bytes(s)
						       : 0;
}

void store_free(struct store *s)
{
	if (s != NULL)
		s->ops->free(s);
}

int store_is_key_part(const char *name, size_t n)
{
	if (n == 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (name[i] < '0' || name[i] > '9')
			return 0;
	return 1;
}
