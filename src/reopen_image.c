/*
 * reopen_image.c - continuing an OME-NGFF image shardpipe wrote
 * (doc/design.md §29): the pyramid's fields read back from its group's
 * zarr.json, where §28.4 put them (the method, the append method and the
 * halving dims in multiscales[0].metadata.kwargs, the axes, level 0's
 * scale), and every level's advertised rows.
 */
#define _GNU_SOURCE
#include "reopen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Level L's advertised rows and rows a shard row along storage dim a,
 * the append dim's, from its zarr.json. */
static int level_rows(const char *path, int L, int a, uint64_t *rows,
		      uint64_t *sr, struct sp_err *err)
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
	*rows = rc == SHARDPIPE_OK && a < r->rank ? r->shape[a] : 0;
	*sr = rc == SHARDPIPE_OK && a < r->rank ? r->chunk[a] * r->cps[a] : 0;
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
	/* The append dim halves at every level of an unbounded image up to
	 * its stop (§28.1): level L's row r is level 0's rows r·2^L.. (a
	 * bound, which stops the halving early, is refused in
	 * reopen_merge). */
	for (int L = 0; L < SHARDPIPE_MAX_LEVELS; L++) {
		const int a = ro->append_dim;
		int top = d->max_levels_dim[a] != 0 ? d->max_levels_dim[a] - 1
						    : L;

		ro->level_shift[L] = d->downsample >> a & 1u
					     ? (L < top ? L : top) : 0;
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

/* A name frame_meta.c writes: 1..63 of A-Z a-z 0-9 _ (frame_meta_init
 * checks the rest), so path/name stays inside the image. */
static int plain_name(const char *s, size_t n)
{
	if (n == 0 || n > 63)
		return 0;
	for (size_t k = 0; k < n; k++) {
		unsigned char c = (unsigned char)s[k];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			return 0;
	}
	return 1;
}

/* Field i's array at path/name: one shardpipe writes (§28.9), 1-D,
 * unsharded, bytes little-endian alone, chunked by level 0's shard
 * rows along level 0's dim 0. */
static int load_field(struct reopen *ro, const char *path, int i,
		      struct sp_err *err)
{
	struct shardpipe_reader *r = reader_alloc();
	const char *why = NULL;

	SP_RETURN_IF(r == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	ro->fr[i] = r;
	if (asprintf(&r->path, "%s/%s", path, ro->field_names[i]) < 0) {
		r->path = NULL;
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	if (reader_open_store(r) != SHARDPIPE_OK) {
		*err = r->err;
		return sp_err_set(err, err->code, "%s (frame field \"%s\"); "
				  "nothing was touched", r->err.msg,
				  ro->field_names[i]);
	}
	if (r->rank != 1 || r->sharded || r->chain.n != 0 ||
	    r->key_v2 || r->sep != '/')
		why = "it is not a 1-D array of bytes alone, unsharded, "
		      "with \"/\" chunk keys";
	else if (r->dtype != SHARDPIPE_DTYPE_FLOAT64 &&
		 r->dtype != SHARDPIPE_DTYPE_INT64 &&
		 r->dtype != SHARDPIPE_DTYPE_BOOL)
		why = "its dtype is not float64, int64 or bool";
	else if (r->chain.big_endian && r->dtype != SHARDPIPE_DTYPE_BOOL)
		why = "it is big-endian";
	else if (r->shard[0] != ro->level_sr[0])
		why = "its chunk is not level 0's shard row";
	else if (strcmp(r->names[0], ro->names[ro->append_dim]) != 0)
		why = "its dimension is not level 0's append dim";
	else if (i == ro->n_fields - 1 && r->dtype != SHARDPIPE_DTYPE_BOOL)
		why = "\"skipped\" is not bool";
	if (why != NULL)
		return sp_err_set(err, SHARDPIPE_ERR_UNSUPPORTED,
				  "%s: frame field \"%s\": cannot be "
				  "continued: %s, which shardpipe does not "
				  "write; nothing was touched", r->path,
				  ro->field_names[i], why);
	if (i < ro->n_fields - 1) {
		ro->fields[i].name = ro->field_names[i];
		ro->fields[i].dtype = r->dtype;
	}
	return SHARDPIPE_OK;
}

/* The image's frame fields (§28.9), as its group lists them. */
static int load_fields(struct reopen *ro, const char *path,
		       struct sp_err *err)
{
	const struct json_value *sp, *fm, *v;
	int n = 0;

	sp = json_get(json_get(json_root(ro->group), "attributes"),
		      "shardpipe");
	fm = json_get(sp, "frame_meta");
	if (fm == NULL)
		return SHARDPIPE_OK;
	if (fm->type != JSON_OBJECT)
		return refuse(path, "its attributes.shardpipe.frame_meta is "
			      "not an object of fields", err);
	for (v = fm->child; v != NULL; v = v->next, n++) {
		if (n == SHARDPIPE_MAX_FRAME_FIELDS + 1 ||
		    !plain_name(v->key, v->key_len) ||
		    v->type != JSON_STRING || v->len != v->key_len ||
		    memcmp(v->str, v->key, v->len) != 0)
			return refuse(path, "its attributes.shardpipe."
				      "frame_meta lists a field shardpipe "
				      "does not write (a name of A-Z a-z 0-9 "
				      "_ at its own path, 33 at most)", err);
		memcpy(ro->field_names[n], v->key, v->key_len);
		ro->field_names[n][v->key_len] = '\0';
	}
	if (n == 0 || strcmp(ro->field_names[n - 1], "skipped") != 0)
		return refuse(path, "its attributes.shardpipe.frame_meta does "
			      "not end with \"skipped\"", err);
	if (!json_is_str(json_get(sp, "dimension"), ro->names[ro->append_dim]))
		return refuse(path, "its attributes.shardpipe.dimension is "
			      "not level 0's append dim (a storage order that "
			      "moved it, design §3.3, is given again to "
			      "continue the image)", err);
	ro->n_fields = n;
	for (int i = 0; i < n; i++)
		SP_FORWARD(load_field(ro, path, i, err));
	ro->desc.frame_fields = ro->fields;
	ro->desc.n_frame_fields = (size_t)n - 1;
	return SHARDPIPE_OK;
}

int reopen_load_image(struct reopen *ro, const char *path,
		      const shardpipe_desc *given, struct sp_err *err)
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
	SP_FORWARD(reopen_array_fields(ro, r->path, given, err));
	SP_FORWARD(pyramid_fields(ro, path, ms, err));
	ro->level_rows[0] = ro->rows;
	ro->level_sr[0] = r->chunk[ro->append_dim] * r->cps[ro->append_dim];
	for (int L = 1; L < ro->levels; L++)
		SP_FORWARD(level_rows(path, L, ro->append_dim,
				      &ro->level_rows[L], &ro->level_sr[L],
				      err));
	return load_fields(ro, path, err);
}

int reopen_field_values(const struct reopen *ro, uint64_t from, uint64_t to,
			uint64_t *bits, struct sp_err *err)
{
	const uint64_t ch = ro->level_sr[0], n = (uint64_t)ro->n_fields;
	uint8_t *buf = malloc(ch * 8);
	int rc = SHARDPIPE_OK;

	SP_RETURN_IF(buf == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	for (int i = 0; i < ro->n_fields && rc == SHARDPIPE_OK; i++) {
		struct shardpipe_reader *r = ro->fr[i];
		const unsigned w = r->dtype == SHARDPIPE_DTYPE_BOOL ? 1 : 8;

		for (uint64_t c = from / ch; rc == SHARDPIPE_OK && c * ch < to;
		     c++) {
			struct source_obj *o = NULL;
			uint64_t size = 0;
			char key[32];

			snprintf(key, sizeof(key), "c/%llu",
				 (unsigned long long)c);
			rc = r->src->ops->open(r->src, key, &o, &size, err);
			if (rc == SHARDPIPE_OK && (o == NULL || size != ch * w))
				rc = sp_err_set(err, SHARDPIPE_ERR_FORMAT,
						"%s/%s: %s, where the image "
						"advertises rows %llu..%llu; "
						"cannot continue it; nothing "
						"was touched", r->path, key,
						o == NULL ? "missing"
							  : "not one chunk's "
							    "bytes",
						(unsigned long long)(c * ch),
						(unsigned long long)to - 1);
			if (rc == SHARDPIPE_OK)
				rc = r->src->ops->read(r->src, o, buf,
						       (size_t)(ch * w), 0,
						       err);
			for (uint64_t row = c * ch;
			     rc == SHARDPIPE_OK && row < (c + 1) * ch &&
			     row < to; row++) {
				uint64_t x = 0;

				if (row < from)
					continue;
				for (unsigned b = 0; b < w; b++)
					x |= (uint64_t)buf[(row - c * ch) * w +
							   b] << (8 * b);
				if (w == 1 && x > 1)
					rc = sp_err_set(err,
							SHARDPIPE_ERR_FORMAT,
							"%s: row %llu holds "
							"%llu, not a bool; "
							"nothing was touched",
							r->path,
							(unsigned long long)row,
							(unsigned long long)x);
				bits[(row - from) * n + (uint64_t)i] = x;
			}
			if (o != NULL)
				r->src->ops->close(r->src, o);
		}
	}
	free(buf);
	return rc;
}
