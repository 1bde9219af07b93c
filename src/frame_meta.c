/*
 * frame_meta.c - per-frame metadata (doc/design.md §28.9): each field a
 * 1-D Zarr v3 array beside an OME-NGFF image's levels, chunked to level
 * 0's shard rows, uncompressed; its chunks and zarr.json written after
 * the image's zarr.json in the same publish step, so it never
 * advertises a row the image does not.
 */
#include "frame_meta.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "zarr_meta.h"

#define NAN_BITS 0x7ff8000000000000ull

static uint64_t fill_of(shardpipe_dtype t)
{
	return t == SHARDPIPE_DTYPE_FLOAT64 ? NAN_BITS : 0;
}

static int check_name(const char *name, size_t i, const char *path,
		      struct sp_err *err)
{
	size_t n, digits = 0;

	SP_RETURN_IF(name == NULL || *name == '\0', err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: frame field %zu: "
		     "the name is empty", path, i);
	n = strlen(name);
	SP_RETURN_IF(n > 63, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "%s: frame field %zu: the name is %zu bytes long, above "
		     "63", path, i, n);
	for (size_t k = 0; k < n; k++) {
		unsigned char c = (unsigned char)name[k];

		SP_RETURN_IF(!((c >= 'a' && c <= 'z') ||
			       (c >= 'A' && c <= 'Z') ||
			       (c >= '0' && c <= '9') || c == '_'), err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: frame field "
			     "%zu \"%s\": byte %zu (0x%02x) is not one of "
			     "A-Z a-z 0-9 _", path, i, name, k, c);
		digits += c >= '0' && c <= '9';
	}
	SP_RETURN_IF(digits == n, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "%s: frame field %zu \"%s\": a name of digits only is an "
		     "image level's", path, i, name);
	SP_RETURN_IF(strcmp(name, "skipped") == 0, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: frame field %zu: "
		     "\"skipped\" is the field the library adds", path, i);
	return SHARDPIPE_OK;
}

int frame_meta_init(struct frame_meta **out, const shardpipe_desc *desc,
		    const struct plan *p, int image, const char *path,
		    struct sp_err *err)
{
	struct frame_meta *fm;
	size_t n;

	*out = NULL;
	if (!SHARDPIPE_HAS_FIELD(desc, n_frame_fields) ||
	    desc->n_frame_fields == 0)
		return SHARDPIPE_OK;
	n = desc->n_frame_fields;
	SP_RETURN_IF(path == NULL && n > 0, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "frame metadata needs an image: a sink without an "
		     "object callback receives one array, which cannot hold "
		     "the fields' arrays; write an OME-NGFF image (ngff, or "
		     "downsample) to a directory or an object sink");
	SP_RETURN_IF(desc->frame_fields == NULL, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: n_frame_fields %zu "
		     "with frame_fields NULL", path, n);
	SP_RETURN_IF(n > SHARDPIPE_MAX_FRAME_FIELDS, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: %zu frame fields, "
		     "above %d", path, n, SHARDPIPE_MAX_FRAME_FIELDS);
	SP_RETURN_IF(!image, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "frame metadata needs an image: %s is one array, which "
		     "cannot hold the fields' arrays; write an OME-NGFF image "
		     "(ngff, or downsample) to keep them beside its levels",
		     path);
	SP_RETURN_IF(p->names[0][0] == '\0', err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: frame metadata "
		     "needs dim 0 named, the dimension its arrays share with "
		     "the image", path);
	for (size_t i = 0; i < n; i++) {
		const shardpipe_frame_field *f = &desc->frame_fields[i];

		SP_FORWARD(check_name(f->name, i, path, err));
		SP_RETURN_IF(f->dtype != SHARDPIPE_DTYPE_FLOAT64 &&
			     f->dtype != SHARDPIPE_DTYPE_INT64 &&
			     f->dtype != SHARDPIPE_DTYPE_BOOL, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: frame field "
			     "\"%s\": dtype %d; a field is float64, int64 or "
			     "bool", path, f->name, (int)f->dtype);
		for (size_t j = 0; j < i; j++)
			SP_RETURN_IF(strcmp(desc->frame_fields[j].name,
					    f->name) == 0, err,
				     SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: frame "
				     "fields %zu and %zu are both \"%s\"",
				     path, j, i, f->name);
	}
	fm = calloc(1, sizeof(*fm));
	SP_RETURN_IF(fm == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	fm->n = (int)n + 1;
	for (size_t i = 0; i < n; i++) {
		snprintf(fm->names[i], sizeof(fm->names[i]), "%s",
			 desc->frame_fields[i].name);
		fm->dtype[i] = desc->frame_fields[i].dtype;
	}
	snprintf(fm->names[n], sizeof(fm->names[n]), "skipped");
	fm->dtype[n] = SHARDPIPE_DTYPE_BOOL;
	fm->chunk = p->chunk[0] * p->cps[0];
	snprintf(fm->dim0, sizeof(fm->dim0), "%s", p->names[0]);
	*out = fm;
	return SHARDPIPE_OK;
}

int frame_meta_stores(struct frame_meta *fm, const struct store *group,
		      const char *path, struct attrs *attrs,
		      struct sp_err *err)
{
	char json[FRAME_META_N * 140 + 64];
	size_t len;

	len = (size_t)snprintf(json, sizeof(json), "{\"frame_meta\": {");
	for (int i = 0; i < fm->n; i++) {
		SP_FORWARD(store_child(group, path, fm->names[i],
				       &fm->store[i], err));
		len += (size_t)snprintf(json + len, sizeof(json) - len,
					"%s\"%s\": \"%s\"", i ? ", " : "",
					fm->names[i], fm->names[i]);
	}
	snprintf(json + len, sizeof(json) - len, "}, \"dimension\": \"%s\"}",
		 fm->dim0);
	SP_FORWARD(attrs_set(attrs, "shardpipe", json, err));
	len = (size_t)snprintf(json, sizeof(json), "\"");
	for (int i = 0; i < fm->n; i++)
		len += (size_t)snprintf(json + len, sizeof(json) - len, "%s%s",
					i ? " " : "", fm->names[i]);
	snprintf(json + len, sizeof(json) - len, "\"");
	return attrs_set(&fm->level0, "coordinates", json, err);
}

int frame_meta_create(struct frame_meta *fm, struct sp_err *err)
{
	for (int i = 0; i < fm->n; i++)
		SP_FORWARD(fm->store[i]->ops->create(fm->store[i], err));
	return SHARDPIPE_OK;
}

uint64_t frame_meta_rows(const struct frame_meta *fm)
{
	return fm->first + fm->rows;
}

void frame_meta_truncate(struct frame_meta *fm, uint64_t rows)
{
	if (rows >= fm->first && rows < fm->first + fm->rows)
		fm->rows = rows - fm->first;
}

int frame_meta_check(const struct frame_meta *fm,
		     const shardpipe_frame_value *vals, uint64_t k,
		     uint64_t row0, struct sp_err *err)
{
	int nf = fm->n - 1;

	for (uint64_t r = 0; r < k; r++)
		for (int i = 0; i < nf; i++) {
			const shardpipe_frame_value *v = &vals[r * nf + i];

			SP_RETURN_IF(fm->dtype[i] == SHARDPIPE_DTYPE_BOOL &&
				     v->b != 0 && v->b != 1, err,
				     SHARDPIPE_ERR_INVALID_ARGUMENT,
				     "append_meta: row %llu, field \"%s\" "
				     "(bool): %d is not 0 or 1; nothing "
				     "appended",
				     (unsigned long long)(row0 + r),
				     fm->names[i], v->b);
		}
	return SHARDPIPE_OK;
}

int frame_meta_add(struct frame_meta *fm, const shardpipe_frame_value *vals,
		   uint64_t k, struct sp_err *err)
{
	int nf = fm->n - 1;

	if (fm->rows + k > fm->cap) {
		uint64_t cap = fm->cap ? fm->cap : fm->chunk;
		uint64_t *nv;

		while (cap < fm->rows + k)
			cap *= 2;
		nv = realloc(fm->vals, cap * (uint64_t)fm->n * sizeof(*nv));
		SP_RETURN_IF(nv == NULL, err, SHARDPIPE_ERR_NOMEM,
			     "out of memory for frame metadata");
		fm->vals = nv;
		fm->cap = cap;
	}
	for (uint64_t r = 0; r < k; r++) {
		uint64_t *row = &fm->vals[(fm->rows + r) * (uint64_t)fm->n];

		for (int i = 0; i < nf; i++) {
			const shardpipe_frame_value *v;

			if (vals == NULL) {
				row[i] = fill_of(fm->dtype[i]);
				continue;
			}
			v = &vals[r * nf + i];
			if (fm->dtype[i] == SHARDPIPE_DTYPE_FLOAT64)
				memcpy(&row[i], &v->f64, 8);
			else if (fm->dtype[i] == SHARDPIPE_DTYPE_INT64)
				memcpy(&row[i], &v->i64, 8);
			else
				row[i] = v->b != 0;
		}
		row[nf] = vals == NULL;
	}
	fm->rows += k;
	return SHARDPIPE_OK;
}

static int write_field_meta(struct frame_meta *fm, int i, uint64_t rows,
			    struct sp_err *err)
{
	char json[1024];
	const char *fill;
	int n;

	fill = fm->dtype[i] == SHARDPIPE_DTYPE_FLOAT64 ? "\"NaN\""
	       : fm->dtype[i] == SHARDPIPE_DTYPE_INT64 ? "0" : "false";
	n = snprintf(json, sizeof(json),
		     "{\n  \"zarr_format\": 3,\n  \"node_type\": \"array\",\n"
		     "  \"shape\": [%llu],\n  \"data_type\": \"%s\",\n"
		     "  \"chunk_grid\": {\"name\": \"regular\", "
		     "\"configuration\": {\"chunk_shape\": [%llu]}},\n"
		     "  \"chunk_key_encoding\": {\"name\": \"default\", "
		     "\"configuration\": {\"separator\": \"/\"}},\n"
		     "  \"fill_value\": %s,\n"
		     "  \"codecs\": [{\"name\": \"bytes\", \"configuration\": "
		     "{\"endian\": \"little\"}}],\n"
		     "  \"attributes\": {},\n"
		     "  \"dimension_names\": [\"%s\"]\n}\n",
		     (unsigned long long)rows, zarr_dtype_name(fm->dtype[i]),
		     (unsigned long long)fm->chunk, fill, fm->dim0);
	return fm->store[i]->ops->write_meta(fm->store[i], json, (size_t)n,
					     err);
}

/* Chunk c of every field from rows (bit patterns, n a row, of rows
 * c * chunk ..), have of them known, the rest fill; of those, the ones
 * before `in` (advertised, never appended: a bounded dim 0 closed short,
 * §14.2) are "skipped", as the fill the image holds there. */
static int write_chunk(struct frame_meta *fm, uint64_t c, const uint64_t *v,
		       uint64_t have, uint64_t in, uint8_t *buf,
		       struct sp_err *err)
{
	char key[32];

	snprintf(key, sizeof(key), "c/%llu", (unsigned long long)c);
	for (int i = 0; i < fm->n; i++) {
		unsigned w = fm->dtype[i] == SHARDPIPE_DTYPE_BOOL ? 1 : 8;
		struct iovec part = { buf, (size_t)(fm->chunk * w) };

		for (uint64_t r = 0; r < fm->chunk; r++) {
			uint64_t x = r < have ? v[r * (uint64_t)fm->n + i]
				     : i == fm->n - 1 && r < in
					     ? 1 : fill_of(fm->dtype[i]);

			for (unsigned b = 0; b < w; b++)
				buf[r * w + b] = (uint8_t)(x >> (8 * b));
		}
		SP_FORWARD(fm->store[i]->ops->write(fm->store[i], key, &part,
						    1, err));
	}
	return SHARDPIPE_OK;
}

int frame_meta_write(struct frame_meta *fm, pthread_mutex_t *mu,
		     uint64_t rows, struct sp_err *err)
{
	uint64_t first, have, *copy = NULL, n = (uint64_t)fm->n;
	uint8_t *buf = NULL;
	int rc = SHARDPIPE_OK;

	pthread_mutex_lock(mu);
	first = fm->first;
	have = fm->rows;
	if (rows > first) {
		uint64_t known = rows - first < have ? rows - first : have;

		copy = malloc((known ? known : 1) * n * sizeof(*copy));
		if (copy != NULL)
			memcpy(copy, fm->vals, known * n * sizeof(*copy));
		have = known;
	}
	pthread_mutex_unlock(mu);
	if (rows <= first)
		return SHARDPIPE_OK;
	buf = malloc(fm->chunk * 8);
	if (copy == NULL || buf == NULL)
		rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
				"out of memory for frame metadata");
	for (uint64_t c = first / fm->chunk;
	     rc == SHARDPIPE_OK && c * fm->chunk < rows; c++) {
		uint64_t off = c * fm->chunk - first;
		uint64_t in = rows - c * fm->chunk < fm->chunk
			      ? rows - c * fm->chunk : fm->chunk;
		uint64_t known = have > off ? have - off : 0;

		rc = write_chunk(fm, c, known > 0 ? copy + off * n : copy,
				 known < in ? known : in, in, buf, err);
	}
	free(buf);
	free(copy);
	/* On disk before level 0's zarr.json advertises the rows: a
	 * continued image reads them back from here (§29). */
	for (int i = 0; i < fm->n && rc == SHARDPIPE_OK; i++)
		rc = store_sync(fm->store[i], err);
	return rc;
}

int frame_meta_publish(struct frame_meta *fm, pthread_mutex_t *mu,
		       uint64_t rows, struct sp_err *err)
{
	uint64_t n = (uint64_t)fm->n;
	int rc = SHARDPIPE_OK;

	for (int i = 0; i < fm->n && rc == SHARDPIPE_OK; i++) {
		rc = write_field_meta(fm, i, rows, err);
		if (rc == SHARDPIPE_OK)
			rc = store_sync(fm->store[i], err);
	}
	SP_FORWARD(rc);
	/* Whole chunks are written for good: their values go. */
	pthread_mutex_lock(mu);
	if (rows > fm->first + fm->rows)
		rows = fm->first + fm->rows;
	if (rows / fm->chunk * fm->chunk > fm->first) {
		uint64_t drop = rows / fm->chunk * fm->chunk - fm->first;

		memmove(fm->vals, fm->vals + drop * n,
			(fm->rows - drop) * n * sizeof(*fm->vals));
		fm->rows -= drop;
		fm->first += drop;
	}
	pthread_mutex_unlock(mu);
	return SHARDPIPE_OK;
}

int frame_meta_resume(struct frame_meta *fm, uint64_t first,
		      const uint64_t *bits, uint64_t k, struct sp_err *err)
{
	const uint64_t n = (uint64_t)fm->n;

	fm->first = first;
	fm->rows = 0;
	if (k > fm->cap) {
		uint64_t cap = fm->cap ? fm->cap : fm->chunk;
		uint64_t *nv;

		while (cap < k)
			cap *= 2;
		nv = realloc(fm->vals, cap * n * sizeof(*nv));
		SP_RETURN_IF(nv == NULL, err, SHARDPIPE_ERR_NOMEM,
			     "out of memory for frame metadata");
		fm->vals = nv;
		fm->cap = cap;
	}
	if (k > 0)
		memcpy(fm->vals, bits, k * n * sizeof(*bits));
	fm->rows = k;
	return SHARDPIPE_OK;
}

void frame_meta_free(struct frame_meta *fm)
{
	if (fm == NULL)
		return;
	for (int i = 0; i < fm->n; i++)
		store_free(fm->store[i]);
	free(fm->vals);
	attrs_free(&fm->level0);
	free(fm);
}
