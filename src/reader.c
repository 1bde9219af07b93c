/*
 * reader.c - read a Zarr v3 array from a store: a directory or an S3
 * prefix, through the source interface of store.h (doc/design.md §19).
 *
 * Every byte of the store is untrusted.  This file opens and closes a
 * reader, assembles a region from chunks (reader_shard.c decodes them,
 * reader_meta.c parsed zarr.json) and walks the store for check.  Every
 * size product is checked for overflow; memory held at any time is one
 * shard index, one encoded chunk and one decoded chunk, each bounded by
 * the metadata's geometry and by the size of the file at hand.
 */
#define _GNU_SOURCE
#include "config.h"
#include "reader_impl.h"
#include "reader_levels.h"

#include <stdlib.h>

struct shardpipe_reader *reader_alloc(void)
{
	struct shardpipe_reader *r = calloc(1, sizeof(*r));

	if (r != NULL)
		pthread_mutex_init(&r->io_mu, NULL);
	return r;
}

int shardpipe_reader_open(shardpipe_reader **out, const char *path)
{
	struct shardpipe_reader *r;
	int rc;

	if (out == NULL || path == NULL) {
		sp_last_error_set("shardpipe_reader_open: NULL argument");
		if (out != NULL)
			*out = NULL;
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	*out = NULL;
	r = reader_alloc();
	if (r == NULL) {
		sp_last_error_set("out of memory opening a reader");
		return SHARDPIPE_ERR_NOMEM;
	}
	/* A multiscale image reads as its level 0. */
	rc = reader_levels_find(path, &r->levels, &r->err);
	if (rc == SHARDPIPE_OK) {
		r->path = strdup(r->levels != NULL
					 ? reader_levels_path(r->levels, 0)
					 : path);
		if (r->path == NULL)
			rc = sp_err_set(&r->err, SHARDPIPE_ERR_NOMEM,
					"out of memory opening a reader");
	}
	if (rc == SHARDPIPE_OK)
		rc = reader_open_store(r);
	if (rc != SHARDPIPE_OK) {
		sp_last_error_set(r->err.msg);
		shardpipe_reader_close(r);
		return rc;
	}
	*out = r;
	return SHARDPIPE_OK;
}

int shardpipe_reader_info_sized(const shardpipe_reader *r,
				shardpipe_array_info *out, size_t size)
{
	shardpipe_array_info info;

	if (r == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	memset(&info, 0, sizeof(info));
	info.rank = r->rank;
	info.dtype = r->dtype;
	for (int d = 0; d < r->rank; d++) {
		info.shape[d] = r->shape[d];
		info.chunk[d] = r->chunk[d];
		info.shard[d] = r->shard[d];
		memcpy(info.dim_names[d], r->names[d], sizeof(info.dim_names[d]));
	}
	info.levels = r->levels != NULL ? reader_levels_count(r->levels) : 0;
	info.levels_recomputed = r->recomputed;
	return sp_struct_copy(out, size, &info, sizeof(info));
}

const char *shardpipe_reader_message(const shardpipe_reader *r)
{
	return r ? r->err.msg : "";
}

void shardpipe_reader_close(shardpipe_reader *r)
{
	if (r == NULL)
		return;
	reader_pool_free(r);
	if (r->src != NULL)
		r->src->ops->free(r->src);
	free(r->sorted);
	reader_scratch_free(&r->scratch);
	pthread_mutex_destroy(&r->io_mu);
	free(r->path);
	reader_levels_free(r->levels);
	if (r->meta != NULL)
		json_free(r->meta);
	free(r->meta_text);
	free(r);
}

int shardpipe_reader_set_threads(shardpipe_reader *r, int threads)
{
	if (r == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	sp_err_clear(&r->err);
	SP_RETURN_IF(threads < 0 || threads > 4096, &r->err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "threads = %d: not in 0..4096", threads);
	r->threads = threads;
	return SHARDPIPE_OK;
}

int shardpipe_reader_stats_sized(const shardpipe_reader *r,
				 shardpipe_read_stats *out, size_t size)
{
	shardpipe_read_stats st;

	if (r == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	memset(&st, 0, sizeof(st));
	st.bytes_read = __atomic_load_n(&r->bytes_read, __ATOMIC_RELAXED);
	st.requests = __atomic_load_n(&r->requests, __ATOMIC_RELAXED);
	st.chunks_decoded = __atomic_load_n(&r->chunks_decoded,
					    __ATOMIC_RELAXED);
	return sp_struct_copy(out, size, &st, sizeof(st));
}

/* ----------------------------------------------------------------- check */

/* A decimal key component without sign or leading zeros, below lim. */
static int parse_coord(const char *p, size_t n, uint64_t lim, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || (n > 1 && p[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	if (v >= lim)
		return -1;
	*out = v;
	return 0;
}

static int check_object(struct shardpipe_reader *r, const uint64_t *s)
{
	struct reader_shard sh;
	int rc = reader_shard_open(r, &sh, s, &r->err);

	if (rc == SHARDPIPE_OK)
		rc = reader_check_shard(r, &sh);
	reader_shard_close(r, &sh);
	return rc;
}

/*
 * Check the object at key when it is a key of the array's grid: "c/1/2"
 * or "c.1.2" (default), "1/2" or "1.2" (v2).  Other names (zarr.json, a
 * writer's temporary files, shards beyond the advertised shape) are not
 * part of the array and are passed over.
 */
static int check_key(void *user, const char *key)
{
	struct shardpipe_reader *r = user;
	uint64_t s[SHARDPIPE_MAX_RANK];
	const char *p = key;

	if (!r->key_v2) {
		if (p[0] != 'c' || p[1] != r->sep)
			return SHARDPIPE_OK;
		p += 2;
	}
	for (int d = 0; d < r->rank; d++) {
		const char *q = strchr(p, r->sep);
		size_t n = q ? (size_t)(q - p) : strlen(p);

		if (parse_coord(p, n, r->grid[d], &s[d]) != 0 ||
		    (d + 1 < r->rank) != (q != NULL))
			return SHARDPIPE_OK;
		p = q ? q + 1 : p + n;
	}
	return check_object(r, s);
}

int shardpipe_reader_check(shardpipe_reader *r)
{
	int rc;

	if (r == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	sp_err_clear(&r->err);
	/* Keys with "/" are a tree of rank levels (below c/ by default);
	 * keys with "." lie side by side at the top. */
	if (r->sep == '/')
		rc = r->src->ops->list(r->src, r->key_v2 ? "" : "c", r->rank,
				       check_key, r, &r->err);
	else
		rc = r->src->ops->list(r->src, "", 1, check_key, r, &r->err);
	if (rc != SHARDPIPE_OK || r->levels == NULL)
		return rc;
	return reader_levels_check(r->levels, &r->recomputed, &r->err);
}
