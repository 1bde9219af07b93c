/*
 * reopen_image.c - continuing an OME-NGFF image shardpipe wrote
 * (doc/design.md §29): the pyramid's fields read back from its group's
 * zarr.json, where §28.4 put them (the method, the append method and the
 * halving dims in multiscales[0].metadata.kwargs, the axes, level 0's
 * scale), and every level's advertised rows.
 */
#define _GNU_SOURCE
#include "reopen.h"

#include <stdlib.h>

#include "json.h"
#include "ome.h"
#include "reader_impl.h"

/* path/zarr.json, parsed with the reader's limits. */
static int read_group(const char *path, struct json_doc **out,
		      char **kept, struct sp_err *err)
{
	static const struct json_limits limits = {
		.max_depth = META_MAX_DEPTH,
		.max_bytes = META_MAX_TREE,
		.max_number_len = 1024,
	};
	struct source *src = NULL;
	struct source_obj *o = NULL;
	struct json_error je;
	uint64_t size = 0;
	char *text = NULL;
	int rc;

	*out = NULL;
	rc = source_open(&src, path, err);
	if (rc == SHARDPIPE_OK)
		rc = src->ops->open(src, "zarr.json", &o, &size, err);
	if (rc == SHARDPIPE_OK && (o == NULL || size > META_MAX_BYTES))
		rc = sp_err_set(err, SHARDPIPE_ERR_FORMAT,
				"%s/zarr.json: %s", path,
				o == NULL ? "missing" : "too large");
	if (rc == SHARDPIPE_OK && (text = malloc(size ? size : 1)) == NULL)
		rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	if (rc == SHARDPIPE_OK)
		rc = src->ops->read(src, o, text, size, 0, err);
	if (rc == SHARDPIPE_OK) {
		*out = json_parse(text, size, &limits, &je);
		if (*out == NULL)
			rc = sp_err_set(err, SHARDPIPE_ERR_FORMAT,
					"%s/zarr.json: line %d column %d: %s",
					path, je.line, je.col, je.msg);
	}
	/* The tree's values point into the text (json_value.raw). */
	if (*out != NULL)
		*kept = text;
	else
		free(text);
	if (o != NULL)
		src->ops->close(src, o);
	if (src != NULL)
		src->ops->free(src);
	return rc;
}

/* Level L's advertised rows and rows a shard row, from its zarr.json. */
static int level_rows(const char *path, int L, uint64_t *rows, uint64_t *sr,
		      struct sp_err *err)
{
	struct shardpipe_reader *r = reader_alloc();
	int rc;

	SP_RETURN_IF(r == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	if (asprintf(&r->path, "%s/%d", path, L) < 0) {
		r->path = NULL;
		shardpipe_reader_close(r);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	rc = reader_open_store(r);
	if (rc != SHARDPIPE_OK)
		*err = r->err;
	*rows = r->shape[0];
	*sr = r->chunk[0] * r->cps[0];
	shardpipe_reader_close(r);
	return rc;
}

static int method_of(const struct json_value *v)
{
	for (int m = 0; m < SHARDPIPE_METHOD_COUNT_; m++)
		if (json_is_str(v, ome_method_name(m)))
			return m;
	return -1;
}

static int refuse(const char *path, const char *why, struct sp_err *err)
{
	return sp_err_set(err, SHARDPIPE_ERR_UNSUPPORTED,
			  "%s: cannot be continued: %s; nothing was touched",
			  path, why);
}

/* The pyramid's fields from multiscales[0] into ro->desc. */
static int pyramid_fields(struct reopen *ro, const char *path,
			  const struct json_value *ms, struct sp_err *err)
{
	shardpipe_desc *d = &ro->desc;
	const struct json_value *kw, *v, *ds, *scale;
	int m, am;

	kw = json_get(json_get(ms, "metadata"), "kwargs");
	m = method_of(json_get(kw, "method"));
	am = method_of(json_get(kw, "append_method"));
	if (m < 0 || am < 0)
		return refuse(path, "its multiscales metadata names no method "
			      "shardpipe knows", err);
	d->method = (shardpipe_method)m;
	/* §28.4 writes the method itself for "none given" (-1), and the
	 * reduction treats the two alike (plan.c, SP_RGEO_APPEND). */
	d->append_method = am == m ? -1 : am;
	v = json_get(kw, "downsample");
	for (v = v != NULL && v->type == JSON_ARRAY ? v->child : NULL;
	     v != NULL; v = v->next) {
		int k = 0;

		while (k < d->rank && !json_is_str(v, ro->names[k]))
			k++;
		if (k == d->rank)
			return refuse(path, "its metadata halves a dim the "
				      "image does not have", err);
		d->downsample |= 1u << k;
	}
	/* The dims' own stops (§28.4 writes them only where there are
	 * any); plan_levels_init checks them as any description's. */
	v = json_get(kw, "stop");
	for (v = v != NULL && v->type == JSON_OBJECT ? v->child : NULL;
	     v != NULL; v = v->next) {
		int k = 0;

		while (k < d->rank && (strlen(ro->names[k]) != v->key_len ||
				       memcmp(ro->names[k], v->key,
					      v->key_len) != 0))
			k++;
		if (k == d->rank || v->type != JSON_NUMBER || v->num < 2 ||
		    v->num > SHARDPIPE_MAX_LEVELS || v->num != (int)v->num)
			return refuse(path, "its metadata stops a dim the "
				      "image does not have, or at no level",
				      err);
		d->max_levels_dim[k] = (int)v->num;
	}
	/* Dim 0 halves at every level of an unbounded image up to its stop
	 * (§28.1): level L's row r is level 0's rows r·2^L.. (a bound,
	 * which stops the halving early, is refused in reopen_merge). */
	for (int L = 0; L < SHARDPIPE_MAX_LEVELS; L++) {
		int top = d->max_levels_dim[0] != 0 ? d->max_levels_dim[0] - 1
						    : L;

		ro->level_shift[L] = d->downsample & 1u ? (L < top ? L : top)
							: 0;
	}
	v = json_get(ms, "axes");
	for (int k = 0; k < d->rank; k++) {
		const struct json_value *ax = json_at(v, (size_t)k);
		const struct json_value *t = json_get(ax, "type");
		const struct json_value *u = json_get(ax, "unit");

		d->axis_type[k] = json_is_str(t, "time") ? SHARDPIPE_AXIS_TIME
				: json_is_str(t, "channel")
					  ? SHARDPIPE_AXIS_CHANNEL
					  : SHARDPIPE_AXIS_SPACE;
		if (u != NULL && u->type == JSON_STRING &&
		    u->len < sizeof(ro->units[k])) {
			memcpy(ro->units[k], u->str, u->len + 1);
			d->unit[k] = ro->units[k];
		}
	}
	ds = json_get(ms, "datasets");
	if (ds == NULL || ds->type != JSON_ARRAY || ds->len < 1 ||
	    ds->len > SHARDPIPE_MAX_LEVELS)
		return refuse(path, "its multiscales have no datasets shardpipe "
			      "writes", err);
	ro->levels = (int)ds->len;
	d->max_levels = ro->levels;
	d->ngff = 1;
	scale = json_get(json_at(json_get(ds->child,
					  "coordinateTransformations"), 0),
			 "scale");
	for (int k = 0; k < d->rank; k++) {
		v = json_at(scale, (size_t)k);
		d->scale[k] = v != NULL && v->type == JSON_NUMBER ? v->num : 0;
	}
	for (int L = 0; L < ro->levels; L++) {
		char name[16];

		snprintf(name, sizeof(name), "%d", L);
		if (!json_is_str(json_get(json_at(ds, (size_t)L), "path"), name))
			return refuse(path, "its levels are not 0, 1, ... in "
				      "order", err);
	}
	return SHARDPIPE_OK;
}

int reopen_load_image(struct reopen *ro, const char *path, struct sp_err *err)
{
	const struct json_value *ms;
	struct shardpipe_reader *r;

	SP_FORWARD(read_group(path, &ro->group, &ro->group_text, err));
	ms = json_at(json_get(json_get(json_get(json_root(ro->group),
						"attributes"), "ome"),
			      "multiscales"), 0);
	if (!json_is_str(json_get(json_get(ms, "metadata"), "method"),
			 "shardpipe"))
		return refuse(path, "it is an OME-NGFF image shardpipe did "
			      "not write (its levels' reduction is unknown)",
			      err);
	/* Its frame fields' partial chunks are not rebuilt (§28.9). */
	SP_RETURN_IF(json_get(json_get(json_get(json_root(ro->group),
						"attributes"), "shardpipe"),
			      "frame_meta") != NULL, err,
		     SHARDPIPE_ERR_UNSUPPORTED, "%s: the image has frame "
		     "metadata (attributes.shardpipe.frame_meta), which a "
		     "continued stream does not extend; nothing was touched",
		     path);
	r = reader_alloc();
	SP_RETURN_IF(r == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	ro->r = r;
	r->keep_meta = 1;
	if (asprintf(&r->path, "%s/0", path) < 0) {
		r->path = NULL;
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	if (reader_open_store(r) != SHARDPIPE_OK) {
		*err = r->err;
		return err->code;
	}
	SP_FORWARD(reopen_array_fields(ro, r->path, err));
	SP_FORWARD(pyramid_fields(ro, path, ms, err));
	ro->level_rows[0] = ro->rows;
	ro->level_sr[0] = r->chunk[0] * r->cps[0];
	for (int L = 1; L < ro->levels; L++)
		SP_FORWARD(level_rows(path, L, &ro->level_rows[L],
				      &ro->level_sr[L], err));
	return SHARDPIPE_OK;
}
