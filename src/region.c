/*
 * region.c - many writers of one array (doc/design.md §30): a region
 * writer's box checked against the array's shard grid and turned into
 * the description of an ordinary stream over the box, and the one
 * zarr.json its caller publishes once every box is written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attrs.h"
#include "ome.h"
#include "plan.h"
#include "store.h"
#include "store_fs.h"
#include "stream_impl.h"
#include "zarr_meta.h"

/* What a region writer or publish cannot do yet (§30). */
static int check_kind(const char *path, const shardpipe_desc *desc,
		      const char *what, struct sp_err *err)
{
	SP_RETURN_IF(store_is_s3(path) &&
			     ((DESC_HAS(desc, downsample) &&
			       desc->downsample != 0) ||
			      (DESC_HAS(desc, ngff) && desc->ngff != 0)),
		     err, SHARDPIPE_ERR_UNSUPPORTED,
		     "%s: %s of a pyramid or OME-NGFF image on an s3:// "
		     "store is not supported yet; write it to a directory",
		     path, what);
	SP_RETURN_IF(DESC_HAS(desc, n_frame_fields) &&
			     desc->n_frame_fields != 0,
		     err, SHARDPIPE_ERR_UNSUPPORTED,
		     "%s: %s of an image with frame_fields is not supported "
		     "yet", path, what);
	/* A box's lo and hi are storage dims, its rows append order: not
	 * yet reconciled (§30.6).  All zero is the identity (§3.3). */
	for (int d = 0; DESC_HAS(desc, storage_order) && d < desc->rank &&
			d < SHARDPIPE_MAX_RANK; d++)
		SP_RETURN_IF(desc->storage_order[d] != 0 &&
				     desc->storage_order[d] != d,
			     err, SHARDPIPE_ERR_UNSUPPORTED,
			     "%s: %s of a store in another storage order "
			     "(storage_order[%d] = %d) is not supported yet",
			     path, what, d, desc->storage_order[d]);
	return SHARDPIPE_OK;
}

/* The description's user attributes, as zarr.json renders them. */
static int desc_attrs(const shardpipe_desc *desc, struct attrs *attrs,
		      struct sp_err *err)
{
	SP_RETURN_IF(DESC_HAS(desc, nattributes) && desc->nattributes != 0 &&
			     desc->attributes == NULL,
		     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "nattributes is %zu but attributes is NULL",
		     desc->nattributes);
	for (size_t k = 0; DESC_HAS(desc, nattributes) &&
			   k < desc->nattributes; k++)
		SP_FORWARD(attrs_set(attrs, desc->attributes[k].key,
				     desc->attributes[k].json, err));
	return SHARDPIPE_OK;
}

/*
 * Whether the store at path holds a zarr.json (*found) and, when json is
 * given, whether it is exactly those n bytes (*same), through the store's
 * source: a directory's file or an S3 object alike.  A directory that is
 * not there holds none; store_fs_region then refuses it, saying who
 * makes it.
 */
static int stored_meta(const char *path, const char *json, size_t n,
		       int *found, int *same, struct sp_err *err)
{
	struct source *src = NULL;
	struct source_obj *o = NULL;
	uint64_t size = 0;
	char *buf = NULL;
	int rc = source_open(&src, path, err);

	*found = *same = 0;
	if (rc == SHARDPIPE_ERR_PATH && !store_is_s3(path))
		return SHARDPIPE_OK;
	if (rc == SHARDPIPE_OK)
		rc = src->ops->open(src, "zarr.json", &o, &size, err);
	*found = rc == SHARDPIPE_OK && o != NULL;
	if (*found && json != NULL && size == n) {
		buf = malloc(n ? n : 1);
		rc = buf == NULL ? sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					      "out of memory")
				 : src->ops->read(src, o, buf, n, 0, err);
		*same = rc == SHARDPIPE_OK && memcmp(buf, json, n) == 0;
	}
	if (o != NULL)
		src->ops->close(src, o);
	if (src != NULL)
		src->ops->free(src);
	free(buf);
	if (rc != SHARDPIPE_OK) {
		char was[sizeof(err->msg)];

		memcpy(was, err->msg, sizeof(was));
		return sp_err_set(err, rc, "%s: cannot read its zarr.json: %s",
				  path, was);
	}
	return SHARDPIPE_OK;
}

/*
 * The zarr.json at path, when there is one, must be the array p plans:
 * rank, data type, the shape (along dim 0 no more rows than a bounded
 * dim 0 holds: zarr.json advertises the rows published so far), chunk
 * and shard shapes, each named when it differs; and then the very text
 * publish would write for the rows it advertises, so that a codec, fill
 * value, name or attribute of another array is refused too (§30.2).
 */
static int check_meta(const char *path, const struct plan *p,
		      const struct attrs *attrs, struct sp_err *err)
{
	shardpipe_array_info info = { 0 };
	shardpipe_reader *r;
	int rc = SHARDPIPE_OK, found, same;

	SP_FORWARD(stored_meta(path, NULL, 0, &found, &same, err));
	if (!found)
		return SHARDPIPE_OK;
	if (shardpipe_reader_open(&r, path) != SHARDPIPE_OK)
		return sp_err_set(err, SHARDPIPE_ERR_EXISTS,
				  "%s: holds a zarr.json that is not an array "
				  "shardpipe reads (%s); nothing was touched",
				  path, shardpipe_last_error_message());
	rc = shardpipe_reader_info(r, &info);
	shardpipe_reader_close(r);
	SP_RETURN_IF(rc != SHARDPIPE_OK, err, rc, "%s: cannot read its zarr.json",
		     path);
	SP_RETURN_IF(info.levels > 0, err, SHARDPIPE_ERR_EXISTS,
		     "%s: holds an OME-NGFF image, not one array; nothing was "
		     "touched", path);
	SP_RETURN_IF(info.rank != p->rank, err, SHARDPIPE_ERR_EXISTS,
		     "%s: holds an array of rank %d, not %d (field rank); "
		     "nothing was touched", path, info.rank, p->rank);
	SP_RETURN_IF(info.dtype != p->dtype, err, SHARDPIPE_ERR_EXISTS,
		     "%s: holds an array of data type %s, not %s (field "
		     "data_type); nothing was touched", path,
		     shardpipe_dtype_name(info.dtype),
		     shardpipe_dtype_name(p->dtype));
	for (int d = 0; d < p->rank; d++) {
		uint64_t shard = p->chunk[d] * p->cps[d];

		/* Dim 0 advertises the rows published so far. */
		SP_RETURN_IF(d == 0 ? p->size[0] != 0 &&
					      info.shape[0] > p->size[0]
				    : info.shape[d] != p->size[d],
			     err, SHARDPIPE_ERR_EXISTS,
			     "%s: holds an array of shape[%d] %llu, not %llu "
			     "(field shape); nothing was touched", path, d,
			     (unsigned long long)info.shape[d],
			     (unsigned long long)p->size[d]);
		SP_RETURN_IF(info.chunk[d] != p->chunk[d], err,
			     SHARDPIPE_ERR_EXISTS,
			     "%s: holds an array of chunk[%d] %llu, not %llu "
			     "(field chunk_shape); nothing was touched", path,
			     d, (unsigned long long)info.chunk[d],
			     (unsigned long long)p->chunk[d]);
		SP_RETURN_IF(info.shard[d] != shard, err, SHARDPIPE_ERR_EXISTS,
			     "%s: holds an array of shard[%d] %llu, not %llu "
			     "(field shard shape); nothing was touched", path,
			     d, (unsigned long long)info.shard[d],
			     (unsigned long long)shard);
	}
	{
		char *json = NULL;
		size_t len = 0;

		SP_FORWARD(zarr_meta_render(p, info.shape[0], attrs, &json,
					    &len, err));
		rc = stored_meta(path, json, len, &found, &same, err);
		free(json);
		SP_FORWARD(rc);
	}
	SP_RETURN_IF(!same, err, SHARDPIPE_ERR_EXISTS,
		     "%s: holds an array of this shape whose zarr.json is not "
		     "this description's (its codec, fill value, dimension "
		     "names or attributes differ); nothing was touched", path);
	return SHARDPIPE_OK;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * What a box must be aligned to along each dim (doc/design.md §30.5): one
 * array's shard shape; an image's every level's shard shape in level-0
 * elements (level L's shard times 2^h, h the times the dim halved up to
 * L), their least common multiple, so that every shard of every level in
 * the box is made of the box's elements alone.  Past the dim's size (a
 * level with one shard along it) it is the size: the box spans the dim.
 */
static void box_alignment(const struct plan *p0, const struct plan_levels *pl,
			  uint64_t *align)
{
	for (int d = 0; d < p0->rank; d++) {
		uint64_t a = p0->chunk[d] * p0->cps[d];

		for (int L = 1; L < pl->n; L++) {
			const struct plan *q = &pl->level[L];
			uint64_t sh = (q->chunk[d] * q->cps[d])
				      << plan_levels_shift(pl, p0, L, d);
			uint64_t m = a / gcd(a, sh);

			/* a * sh / gcd, saturating at the dim's size. */
			if (p0->size[d] != 0 && m > p0->size[d] / sh)
				a = p0->size[d];
			else
				a = m * sh;
		}
		align[d] = a;
	}
}

/*
 * The box lo..hi against the alignment align: lo a multiple of it, hi
 * too or the array's edge (an unbounded dim 0: hi 0, to the end).  A
 * refusal names the dim and the nearest aligned box, lo rounded down and
 * hi up.  box gets the box's sizes, shards the box's first shard along
 * each dim.
 */
static int check_box(const struct plan *p, const uint64_t *align,
		     int image, const uint64_t *lo, const uint64_t *hi,
		     shardpipe_desc *box, uint64_t *shards, struct sp_err *err)
{
	char near[32 * SHARDPIPE_MAX_RANK * 2];
	size_t n = 0;
	int bad = -1;
	const char *why = "";

	for (int d = 0; d < p->rank; d++) {
		uint64_t sh = align[d], size = p->size[d];
		uint64_t top = d == 0 && size == 0 ? 0 : hi[d];

		if (d == 0 && size == 0) {
			if (hi[0] != 0 && bad < 0)
				bad = 0, why = "hi must be 0 (to the end) on "
					       "an unbounded dim 0";
		} else if (hi[d] > size && bad < 0) {
			bad = d, why = "hi is beyond the array's extent";
		} else if (lo[d] >= hi[d] && bad < 0) {
			bad = d, why = "lo is not below hi";
		} else if (hi[d] % sh != 0 && hi[d] != size && bad < 0) {
			bad = d, why = image ? "hi is neither a multiple of "
					       "the alignment nor the array's "
					       "edge"
					     : "hi is neither a multiple of "
					       "the shard shape nor the "
					       "array's edge";
		}
		if (lo[d] % sh != 0 && bad < 0)
			bad = d, why = image ? "lo is not a multiple of the "
					       "alignment"
					     : "lo is not a multiple of the "
					       "shard shape";
		shards[d] = lo[d] / (p->chunk[d] * p->cps[d]);
		box->dims[d].size = d == 0 && size == 0 ? 0 : hi[d] - lo[d];
		if (top != 0) {
			if (top <= lo[d])
				top = lo[d] / sh * sh + 1;
			top = sp_ceil_div(top, sh) * sh;
			if (top > size)
				top = size;
		}
		n += (size_t)snprintf(near + n, sizeof(near) - n, "%s%llu..%llu",
				      d ? "," : "",
				      (unsigned long long)(lo[d] / sh * sh),
				      (unsigned long long)top);
	}
	if (bad < 0)
		return SHARDPIPE_OK;
	return sp_err_set(err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			  "region %llu..%llu of dim %d (%s, size %llu, %s "
			  "%llu%s): %s; the nearest aligned box is %s; nothing "
			  "was written",
			  (unsigned long long)lo[bad],
			  (unsigned long long)hi[bad], bad,
			  p->names[bad][0] ? p->names[bad] : "unnamed",
			  (unsigned long long)p->size[bad],
			  image ? "alignment" : "shard",
			  (unsigned long long)align[bad],
			  image ? ", every level's shard in level-0 elements"
				: "",
			  why, near);
}

/* The caller's description, every field it holds, in the library's own. */
static void desc_copy(shardpipe_desc *dst, const shardpipe_desc *src)
{
	shardpipe_desc_init(dst);
	sp_struct_copy(dst, sizeof(*dst), src, src->struct_size);
}

/*
 * An image's zarr.json files (doc/design.md §30.5): the group's at path,
 * when there is one, must be the very text publish renders, so that
 * another image (its levels, axes, method or attributes) or one array is
 * refused; and each level's is checked as check_meta checks one array's.
 */
static int check_image(const char *path, const struct plan *p0,
		       const struct plan_levels *pl, const struct attrs *attrs,
		       struct sp_err *err)
{
	char *json = NULL;
	size_t len = 0;
	int found = 0, same = 0;
	int rc = zarr_meta_group(pl, p0, attrs, &json, &len, err);

	if (rc == SHARDPIPE_OK)
		rc = stored_meta(path, json, len, &found, &same, err);
	if (rc == SHARDPIPE_OK && found && !same) {
		shardpipe_array_info info = { 0 };
		shardpipe_reader *r;
		int one = 0;

		if (shardpipe_reader_open(&r, path) == SHARDPIPE_OK) {
			one = shardpipe_reader_info(r, &info) == SHARDPIPE_OK &&
			      info.levels == 0;
			shardpipe_reader_close(r);
		}
		rc = sp_err_set(err, SHARDPIPE_ERR_EXISTS,
				"%s: holds %s; nothing was touched", path,
				one ? "one array, not an OME-NGFF image"
				    : "an image whose zarr.json is not this "
				      "description's (its levels, axes, "
				      "method or attributes differ)");
	}
	free(json);
	for (int L = 0; L < pl->n && rc == SHARDPIPE_OK; L++) {
		char *dir;

		if (asprintf(&dir, "%s/%d", path, L) < 0)
			return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "out of memory");
		rc = check_meta(dir, L == 0 ? p0 : &pl->level[L], NULL, err);
		free(dir);
	}
	return rc;
}

/*
 * The whole array's plan and levels, and its user attributes: what both
 * calls check the store against.  pl->group says it is an image.
 */
static int plan_whole(struct plan *p, struct plan_levels *pl,
		      struct attrs *attrs, const char *path,
		      const shardpipe_desc *desc, const char *what,
		      struct sp_err *err)
{
	SP_FORWARD(plan_init(p, desc, err));
	SP_FORWARD(check_kind(path, desc, what, err));
	SP_FORWARD(plan_levels_init(pl, p, desc, err));
	SP_FORWARD(ome_axes_init(pl, p, desc, err));
	return desc_attrs(desc, attrs, err);
}

/* The whole array's files against the description (§30.2, §30.5). */
static int check_store(const char *path, const struct plan *p,
		       const struct plan_levels *pl, const struct attrs *attrs,
		       struct sp_err *err)
{
	return pl->group ? check_image(path, p, pl, attrs, err)
			 : check_meta(path, p, attrs, err);
}

int shardpipe_stream_open_region(shardpipe_stream **out, const char *path,
				 const shardpipe_desc *desc,
				 const uint64_t *lo, const uint64_t *hi)
{
	uint64_t align[SHARDPIPE_MAX_RANK];
	struct region_box where;
	struct attrs attrs = { 0 };
	struct plan_levels *pl = NULL;
	shardpipe_desc box;
	struct plan p;
	struct sp_err err;
	int rc;

	memset(&where, 0, sizeof(where));
	memset(&p, 0, sizeof(p));
	if (out != NULL)
		*out = NULL;
	if (out == NULL || path == NULL || desc == NULL || lo == NULL ||
	    hi == NULL) {
		sp_last_error_set("shardpipe_stream_open_region: a required "
				  "argument is NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	sp_err_clear(&err);
	pl = calloc(1, sizeof(*pl));
	rc = pl == NULL ? sp_err_set(&err, SHARDPIPE_ERR_NOMEM, "out of memory")
			: plan_whole(&p, pl, &attrs, path, desc,
				     "a region writer", &err);
	if (rc == SHARDPIPE_OK && DESC_HAS(desc, overwrite) && desc->overwrite)
		rc = sp_err_set(&err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				"%s: a region writer never overwrites: remove "
				"the old array first, once", path);
	if (rc == SHARDPIPE_OK) {
		desc_copy(&box, desc);
		box_alignment(&p, pl, align);
		rc = check_box(&p, align, pl->group, lo, hi, &box,
			       where.shards, &err);
		memcpy(where.lo, lo, sizeof(lo[0]) * (size_t)p.rank);
		memcpy(where.hi, hi, sizeof(hi[0]) * (size_t)p.rank);
	}
	if (rc == SHARDPIPE_OK)
		rc = check_store(path, &p, pl, &attrs, &err);
	/* An image's box is cut from the whole image's levels (§30.5). */
	if (rc == SHARDPIPE_OK && pl->group) {
		where.whole = pl;
		where.whole0 = &p;
	}
	if (rc == SHARDPIPE_OK)
		rc = stream_open_box(out, path, &box, &where);
	else
		sp_last_error_set(err.msg);
	if (pl != NULL)
		plan_levels_free(pl);
	free(pl);
	plan_free(&p);
	attrs_free(&attrs);
	return rc;
}

/* An image's levels' zarr.json, then its group's, which names them
 * (§28.4): level L advertises the rows its level-0 rows reduce to. */
static int publish_image(const char *path, const struct plan *p0,
			 const struct plan_levels *pl,
			 const struct attrs *attrs, uint64_t rows,
			 struct sp_err *err)
{
	char *json = NULL;
	size_t len = 0;
	int rc = SHARDPIPE_OK;

	for (int L = 0; L < pl->n && rc == SHARDPIPE_OK; L++) {
		int h = plan_levels_shift(pl, p0, L, 0);
		uint64_t r = (rows >> h) + ((rows & ((1ull << h) - 1)) != 0);
		char *dir;

		if (asprintf(&dir, "%s/%d", path, L) < 0)
			return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "out of memory");
		if (mkdir(dir, 0777) != 0 && errno != EEXIST)
			rc = sp_err_set(err, store_fs_errno_code(errno),
					"%s: %s", dir, strerror(errno));
		if (rc == SHARDPIPE_OK)
			rc = zarr_meta_render(L == 0 ? p0 : &pl->level[L], r,
					      NULL, &json, &len, err);
		if (rc == SHARDPIPE_OK)
			rc = store_fs_put_meta(dir, json, len, err);
		free(json);
		json = NULL;
		free(dir);
	}
	if (rc == SHARDPIPE_OK)
		rc = zarr_meta_group(pl, p0, attrs, &json, &len, err);
	if (rc == SHARDPIPE_OK)
		rc = store_fs_put_meta(path, json, len, err);
	free(json);
	return rc;
}

int shardpipe_array_publish(const char *path, const shardpipe_desc *desc,
			    uint64_t rows)
{
	struct store *store = NULL;
	struct attrs attrs = { 0 };
	struct plan_levels *pl = NULL;
	struct plan p;
	struct sp_err err;
	char *json = NULL;
	size_t len = 0;
	int rc;

	if (path == NULL || desc == NULL) {
		sp_last_error_set("shardpipe_array_publish: a required "
				  "argument is NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	memset(&p, 0, sizeof(p));
	sp_err_clear(&err);
	pl = calloc(1, sizeof(*pl));
	rc = pl == NULL ? sp_err_set(&err, SHARDPIPE_ERR_NOMEM, "out of memory")
			: plan_whole(&p, pl, &attrs, path, desc, "publishing",
				     &err);
	if (rc == SHARDPIPE_OK && p.size[0] != 0 && rows > p.size[0])
		rc = sp_err_set(&err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				"%s: %llu rows to publish, but dim 0 has %llu",
				path, (unsigned long long)rows,
				(unsigned long long)p.size[0]);
	if (rc == SHARDPIPE_OK)
		rc = check_store(path, &p, pl, &attrs, &err);
	/* On a directory shared, like the region writers': not under an
	 * ordinary stream writing the array, nor while a region writer
	 * holds its box and has not written the rows (§30.3); a killed
	 * writer's claim is removed.  S3 has no lock to take (§30.4). */
	if (rc == SHARDPIPE_OK)
		rc = store_region(&store, path, 1, p.rank, NULL, NULL, rows,
				  pl->group ? pl->n : 0, &err);
	if (rc == SHARDPIPE_OK && pl->group) {
		rc = publish_image(path, &p, pl, &attrs, rows, &err);
	} else if (rc == SHARDPIPE_OK) {
		rc = zarr_meta_render(&p, rows, &attrs, &json, &len, &err);
		if (rc == SHARDPIPE_OK)
			rc = store->ops->write_meta(store, json, len, &err);
	}
	if (rc == SHARDPIPE_OK)
		rc = store_sync(store, &err);
	free(json);
	store_free(store);
	attrs_free(&attrs);
	if (pl != NULL)
		plan_levels_free(pl);
	free(pl);
	plan_free(&p);
	if (rc != SHARDPIPE_OK)
		sp_last_error_set(err.msg);
	return rc;
}
