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
	r = calloc(1, sizeof(*r));
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
	reader_close_shard(r);
	if (r->src != NULL)
		r->src->ops->free(r->src);
	free(r->index);
	free(r->sorted);
	free(r->enc);
	free(r->dec);
	free(r->path);
	reader_levels_free(r->levels);
	if (r->meta != NULL)
		json_free(r->meta);
	free(r->meta_text);
	free(r);
}

/* ------------------------------------------------------------------ read */

/* Fill n bytes with the fill element, doubling the filled prefix. */
static void fill_run(const struct shardpipe_reader *r, uint8_t *dst, size_t n)
{
	size_t done;

	if (r->fill_zero) {
		memset(dst, 0, n);
		return;
	}
	if (n == 0)
		return;
	memcpy(dst, r->fill, r->esize);
	for (done = r->esize; done < n; done *= 2)
		memcpy(dst + done, dst, done < n - done ? done : n - done);
}

/*
 * Copy the box ext[] from src (strides sstride, in bytes) to dst (strides
 * dstride), or fill it when src is NULL.  The last dimension is
 * contiguous on both sides.
 */
static void copy_box(const struct shardpipe_reader *r, uint8_t *dst,
		     const uint64_t *dstride, const uint8_t *src,
		     const uint64_t *sstride, const uint64_t *ext)
{
	uint64_t i[SHARDPIPE_MAX_RANK] = { 0 };
	int rank = r->rank;
	size_t run = (size_t)ext[rank - 1] * r->esize;

	for (;;) {
		uint64_t doff = 0, soff = 0;
		int d;

		for (d = 0; d < rank - 1; d++) {
			doff += i[d] * dstride[d];
			soff += i[d] * sstride[d];
		}
		if (src != NULL)
			memcpy(dst + doff, src + soff, run);
		else
			fill_run(r, dst + doff, run);
		for (d = rank - 2; d >= 0; d--) {
			if (++i[d] < ext[d])
				break;
			i[d] = 0;
		}
		if (d < 0)
			return;
	}
}

/* Advance the counter c over the box lo..hi (inclusive); 0 at the end. */
static int next_coord(uint64_t *c, const uint64_t *lo, const uint64_t *hi,
		      int rank)
{
	for (int d = rank - 1; d >= 0; d--) {
		if (c[d] < hi[d]) {
			c[d]++;
			return 1;
		}
		c[d] = lo[d];
	}
	return 0;
}

int shardpipe_reader_read(shardpipe_reader *r, const uint64_t *start,
			  const uint64_t *count, void *out, size_t out_bytes)
{
	uint64_t total = 1, ostride[SHARDPIPE_MAX_RANK];
	uint64_t cstride[SHARDPIPE_MAX_RANK];
	uint64_t slo[SHARDPIPE_MAX_RANK], shi[SHARDPIPE_MAX_RANK];
	uint64_t s[SHARDPIPE_MAX_RANK];
	int rank, rc = SHARDPIPE_OK;

	if (r == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	sp_err_clear(&r->err);
	rank = r->rank;
	SP_RETURN_IF(start == NULL || count == NULL, &r->err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT, "NULL start or count");
	for (int d = 0; d < rank; d++) {
		uint64_t end;

		SP_RETURN_IF(!sp_add_ok(start[d], count[d], &end) ||
				     end > r->shape[d],
			     &r->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "dimension %d: %llu+%llu is beyond the extent %llu",
			     d, (unsigned long long)start[d],
			     (unsigned long long)count[d],
			     (unsigned long long)r->shape[d]);
		if (!sp_mul_ok(total, count[d], &total))
			return sp_err_set(&r->err, SHARDPIPE_ERR_OVERFLOW,
					  "the region's size overflows");
	}
	SP_RETURN_IF(!sp_mul_ok(total, r->esize, &total) || total > SIZE_MAX,
		     &r->err, SHARDPIPE_ERR_OVERFLOW,
		     "the region's size overflows");
	/* The caller's buffer bounds every write below. */
	SP_RETURN_IF(total > out_bytes, &r->err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "the region holds %llu bytes, the output buffer %zu",
		     (unsigned long long)total, out_bytes);
	if (total == 0)
		return SHARDPIPE_OK;
	SP_RETURN_IF(out == NULL, &r->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "NULL output buffer");

	ostride[rank - 1] = r->esize;
	cstride[rank - 1] = r->esize;
	for (int d = rank - 2; d >= 0; d--) {
		ostride[d] = ostride[d + 1] * count[d + 1];
		cstride[d] = cstride[d + 1] * r->chunk[d + 1];
	}
	for (int d = 0; d < rank; d++) {
		slo[d] = start[d] / r->shard[d];
		shi[d] = (start[d] + count[d] - 1) / r->shard[d];
		s[d] = slo[d];
	}
	do {
		uint64_t clo[SHARDPIPE_MAX_RANK], chi[SHARDPIPE_MAX_RANK];
		uint64_t c[SHARDPIPE_MAX_RANK];

		rc = reader_open_shard(r, s);
		if (rc != SHARDPIPE_OK)
			break;
		/* Inner chunks of this shard that meet the region, in
		 * shard-local coordinates. */
		for (int d = 0; d < rank; d++) {
			uint64_t base = s[d] * r->cps[d];
			uint64_t a = start[d] / r->chunk[d];
			uint64_t b = (start[d] + count[d] - 1) / r->chunk[d];

			clo[d] = (a > base ? a : base) - base;
			chi[d] = (b < base + r->cps[d] - 1 ? b
							   : base + r->cps[d] - 1) -
				 base;
			c[d] = clo[d];
		}
		do {
			uint64_t lin = 0, off, nb, doff = 0, soff = 0;
			uint64_t ext[SHARDPIPE_MAX_RANK];
			uint8_t *src = NULL;

			for (int d = 0; d < rank; d++) {
				uint64_t o = (s[d] * r->cps[d] + c[d]) *
					     r->chunk[d];
				uint64_t lo = o > start[d] ? o : start[d];
				uint64_t hi = o + r->chunk[d] <
							start[d] + count[d]
						      ? o + r->chunk[d]
						      : start[d] + count[d];

				lin = lin * r->cps[d] + c[d];
				ext[d] = hi - lo;
				doff += (lo - start[d]) * ostride[d];
				soff += (lo - o) * cstride[d];
			}
			if (reader_chunk_extent(r, lin, &off, &nb)) {
				rc = reader_load_chunk(r, lin, &src);
				if (rc != SHARDPIPE_OK)
					break;
				src += soff;
			}
			copy_box(r, (uint8_t *)out + doff, ostride, src,
				 cstride, ext);
		} while (next_coord(c, clo, chi, rank));
	} while (rc == SHARDPIPE_OK && next_coord(s, slo, shi, rank));
	reader_close_shard(r);
	return rc;
}

/* ----------------------------------------------------------------- check */

/* Check every chunk of the open shard. */
static int check_shard(struct shardpipe_reader *r)
{
	for (uint64_t lin = 0; lin < r->n_inner; lin++) {
		uint64_t off, nb;
		uint8_t *p;

		if (reader_chunk_extent(r, lin, &off, &nb))
			SP_FORWARD(reader_load_chunk(r, lin, &p));
	}
	return SHARDPIPE_OK;
}

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
	int rc = reader_open_shard(r, s);

	if (rc == SHARDPIPE_OK && r->obj != NULL)
		rc = check_shard(r);
	reader_close_shard(r);
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
