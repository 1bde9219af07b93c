/*
 * plate.c - OME-NGFF 0.5 high-content screening plates
 * (doc/design.md §28.8): a group with "plate" metadata, a group per row and per well, and
 * each well's fields of view OME-NGFF images written by streams on the
 * plate's shared threads, as a group's arrays are (§26.2).
 */
#define _GNU_SOURCE
#include "group.h"
#include "zarr_node.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "lanes.h"
#include "store.h"
#include "store_fs.h"
#include "zarr_meta.h"

/* Far beyond any plate (1536 wells, a few dozen fields); a bound so that
 * a hostile plate's zarr.json cannot make a field's open scan for long. */
#define PLATE_MAX_NAMES 4096
#define PLATE_MAX_FIELDS 65536
#define PLATE_MAX_ACQUISITIONS 65536

struct shardpipe_plate {
	char *path;
	int threads;
	pthread_mutex_t mu;      /* lanes, and one field's open at a time */
	struct lanes *lanes;     /* started by the first field */
	char **rows, **cols;
	size_t nrows, ncols;
	int field_count;
	int64_t *acq_ids;
	size_t nacq;
};

/* Rows, columns, well and field paths: the schema's ^[A-Za-z0-9]+$,
 * which also keeps them plain names on every file system. */
static int check_part(const char *what, size_t i, const char *name,
		      struct sp_err *err)
{
	size_t n;

	SP_RETURN_IF(name == NULL || *name == '\0', err, SHARDPIPE_ERR_NAME,
		     "plate: %s %zu: the name is empty", what, i);
	n = strlen(name);
	SP_RETURN_IF(n > 255, err, SHARDPIPE_ERR_NAME,
		     "plate: %s %zu: the name is %zu bytes long, above 255",
		     what, i, n);
	for (size_t k = 0; k < n; k++) {
		unsigned char c = (unsigned char)name[k];

		SP_RETURN_IF(!((c >= 'a' && c <= 'z') ||
			       (c >= 'A' && c <= 'Z') ||
			       (c >= '0' && c <= '9')), err,
			     SHARDPIPE_ERR_NAME, "plate: %s %zu \"%s\": byte "
			     "%zu (0x%02x) is not one of A-Z a-z 0-9, which "
			     "OME-NGFF allows in a %s name", what, i, name, k,
			     c, what);
	}
	return SHARDPIPE_OK;
}

static int check_names(const char *what, const char *const *names,
		       size_t n, struct sp_err *err)
{
	SP_RETURN_IF(n == 0 || names == NULL, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "plate: 0 %ss: a plate has at least one row and one "
		     "column", what);
	SP_RETURN_IF(n > PLATE_MAX_NAMES, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "plate: %zu %ss, above %d", n, what, PLATE_MAX_NAMES);
	for (size_t i = 0; i < n; i++) {
		SP_FORWARD(check_part(what, i, names[i], err));
		for (size_t j = 0; j < i; j++)
			SP_RETURN_IF(strcmp(names[i], names[j]) == 0, err,
				     SHARDPIPE_ERR_NAME, "plate: %s %zu \"%s\" "
				     "repeats %s %zu; the names are distinct",
				     what, i, names[i], what, j);
	}
	return SHARDPIPE_OK;
}

/* s as a JSON string to f; 0 when it is not UTF-8. */
static int put_str(FILE *f, const char *s)
{
	size_t n = strlen(s), bad;
	char *q = malloc(JSON_QUOTE_MAX(n));
	size_t len = q != NULL ? json_quote(q, s, n, &bad) : 0;

	if (len != 0)
		fwrite(q, 1, len, f);
	free(q);
	return len != 0;
}

static void put_names(FILE *f, const char *const *names, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s{\"name\": \"%s\"}", i ? ", " : "", names[i]);
	fputc(']', f);
}

/* The new plate's zarr.json: its wells come with its fields. */
static int render_new(const shardpipe_plate_desc *d, char **out,
		      size_t *len, struct sp_err *err)
{
	FILE *f = open_memstream(out, len);
	int ok = 1;

	SP_RETURN_IF(f == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	fputs("{\n  \"zarr_format\": 3,\n  \"node_type\": \"group\",\n"
	      "  \"attributes\": {\n    \"ome\": {\n      \"version\": "
	      "\"0.5\",\n      \"plate\": {\n        \"name\": ", f);
	ok &= put_str(f, d->name != NULL ? d->name : "plate");
	fputs(",\n        \"rows\": ", f);
	put_names(f, d->rows, d->nrows);
	fputs(",\n        \"columns\": ", f);
	put_names(f, d->columns, d->ncolumns);
	fprintf(f, ",\n        \"field_count\": %d", d->field_count);
	if (d->nacquisitions > 0) {
		fputs(",\n        \"acquisitions\": [", f);
		for (size_t i = 0; i < d->nacquisitions; i++) {
			fprintf(f, "%s\n          {\"id\": %zu, \"name\": ",
				i ? "," : "", i);
			ok &= put_str(f, d->acquisitions[i]);
			fprintf(f, ", \"maximumfieldcount\": %d}",
				d->field_count);
		}
		fputs("\n        ]", f);
	}
	fputs(",\n        \"wells\": []\n      }\n    }\n  }\n}\n", f);
	if (fclose(f) != 0 || *out == NULL) {
		free(*out);
		*out = NULL;
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	(void)ok;
	return SHARDPIPE_OK;
}

static int check_desc(const shardpipe_plate_desc *d, struct sp_err *err)
{
	SP_FORWARD(check_names("row", d->rows, d->nrows, err));
	SP_FORWARD(check_names("column", d->columns, d->ncolumns, err));
	SP_RETURN_IF(d->field_count < 1 || d->field_count > PLATE_MAX_FIELDS,
		     err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "plate: field_count %d is outside 1..%d", d->field_count,
		     PLATE_MAX_FIELDS);
	SP_RETURN_IF(d->nacquisitions > PLATE_MAX_ACQUISITIONS ||
		     (d->nacquisitions > 0 && d->acquisitions == NULL), err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "plate: %zu acquisitions%s", d->nacquisitions,
		     d->acquisitions == NULL ? " and no names for them"
					     : ", above 65536");
	for (size_t i = 0; i < d->nacquisitions; i++)
		SP_RETURN_IF(d->acquisitions[i] == NULL, err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "plate: acquisition %zu has no name", i);
	return SHARDPIPE_OK;
}

/* Whether s is well-formed UTF-8 (json_quote's own test). */
static int is_utf8(const char *s)
{
	size_t n = strlen(s), bad;
	char *q = malloc(JSON_QUOTE_MAX(n));
	int ok = q != NULL && json_quote(q, s, n, &bad) != 0;

	free(q);
	return ok;
}

static void plate_free(struct shardpipe_plate *p)
{
	for (size_t i = 0; i < p->nrows; i++)
		free(p->rows[i]);
	for (size_t i = 0; i < p->ncols; i++)
		free(p->cols[i]);
	free(p->rows);
	free(p->cols);
	free(p->acq_ids);
	lanes_unref(p->lanes);
	pthread_mutex_destroy(&p->mu);
	free(p->path);
	free(p);
}

/* The names of a plate's "rows" or "columns", checked as at create. */
static int take_names(const struct json_value *list, const char *what,
		      char ***out, size_t *n, struct sp_err *err)
{
	const char **names;
	size_t k = 0;
	int rc;

	SP_RETURN_IF(list == NULL || list->type != JSON_ARRAY, err,
		     SHARDPIPE_ERR_PATH, "plate: its %ss are no list", what);
	SP_RETURN_IF(list->len > PLATE_MAX_NAMES, err, SHARDPIPE_ERR_PATH,
		     "plate: %zu %ss, above %d", list->len, what,
		     PLATE_MAX_NAMES);
	names = calloc(list->len + 1, sizeof(*names));
	SP_RETURN_IF(names == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	for (const struct json_value *v = list->child; v != NULL; v = v->next) {
		const struct json_value *nm = json_get(v, "name");

		names[k++] = nm != NULL && nm->type == JSON_STRING &&
				     strlen(nm->str) == nm->len ? nm->str : "";
	}
	rc = check_names(what, names, k, err);
	*out = rc == SHARDPIPE_OK ? calloc(k, sizeof(**out)) : NULL;
	if (rc == SHARDPIPE_OK && *out == NULL)
		rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	for (size_t i = 0; rc == SHARDPIPE_OK && i < k; i++) {
		(*out)[i] = strdup(names[i]);
		*n = i + 1;
		if ((*out)[i] == NULL)
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
	}
	free(names);
	return rc;
}

/* The plate's description from its zarr.json: what a field's open checks
 * against. */
static int read_plate(struct shardpipe_plate *p, struct sp_err *err)
{
	struct json_doc *doc;
	const struct json_value *ome, *plate, *fc, *acq;
	char *text;
	int rc = SHARDPIPE_OK;

	SP_FORWARD(zarr_json_load(p->path, &text, &doc, err));
	ome = json_get(json_get(doc ? json_root(doc) : NULL, "attributes"),
		       "ome");
	plate = json_get(ome, "plate");
	fc = json_get(plate, "field_count");
	if (text == NULL || plate == NULL)
		rc = sp_err_set(err, SHARDPIPE_ERR_PATH,
				"%s: %s, so it is no plate", p->path,
				text == NULL ? "no zarr.json there"
					     : "zarr.json holds no "
					       "attributes.ome.plate");
	else if (!json_is_str(json_get(ome, "version"), "0.5"))
		rc = sp_err_set(err, SHARDPIPE_ERR_PATH,
				"%s: the plate is not OME-NGFF 0.5 (its "
				"ome.version is not \"0.5\")", p->path);
	else if (fc == NULL || !(fc->num_flags & JSON_INT_I64) || fc->i < 1 ||
		 fc->i > PLATE_MAX_FIELDS)
		rc = sp_err_set(err, SHARDPIPE_ERR_PATH,
				"%s: the plate has no field_count of 1..%d, "
				"which a field's index is checked against",
				p->path, PLATE_MAX_FIELDS);
	if (rc == SHARDPIPE_OK)
		p->field_count = (int)fc->i;
	if (rc == SHARDPIPE_OK)
		rc = take_names(json_get(plate, "rows"), "row", &p->rows,
				&p->nrows, err);
	if (rc == SHARDPIPE_OK)
		rc = take_names(json_get(plate, "columns"), "column",
				&p->cols, &p->ncols, err);
	acq = json_get(plate, "acquisitions");
	if (rc == SHARDPIPE_OK && acq != NULL && acq->type == JSON_ARRAY &&
	    acq->len > 0) {
		p->acq_ids = calloc(acq->len, sizeof(*p->acq_ids));
		if (p->acq_ids == NULL)
			rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					"out of memory");
		for (const struct json_value *a = acq->child;
		     rc == SHARDPIPE_OK && a != NULL; a = a->next) {
			const struct json_value *id = json_get(a, "id");

			if (id != NULL && (id->num_flags & JSON_INT_I64))
				p->acq_ids[p->nacq++] = id->i;
		}
	}
	json_free(doc);
	free(text);
	return rc;
}

static int plate_new(struct shardpipe_plate **out, const char *path,
		     int threads, struct sp_err *err)
{
	struct shardpipe_plate *p = calloc(1, sizeof(*p));

	SP_RETURN_IF(p == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	p->path = strdup(path);
	if (p->path == NULL) {
		free(p);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	pthread_mutex_init(&p->mu, NULL);
	if (threads == 0)
		threads = sp_cores();
	p->threads = threads;
	*out = p;
	return SHARDPIPE_OK;
}

static int check_common(shardpipe_plate **out, const char *path,
			int threads, struct sp_err *err)
{
	if (out != NULL)
		*out = NULL;
	SP_RETURN_IF(out == NULL || path == NULL, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "a required argument is NULL");
	SP_RETURN_IF(threads < 0 || threads > SHARDPIPE_MAX_THREADS, err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "thread count %d is outside 0..%d", threads,
		     SHARDPIPE_MAX_THREADS);
	SP_RETURN_IF(store_is_s3(path), err, SHARDPIPE_ERR_UNSUPPORTED,
		     "%s: plates are written to directories only, not to S3",
		     path);
	return SHARDPIPE_OK;
}

/* Refuse what a new plate cannot be, then write its zarr.json as a new
 * group's (group.c's group_write, with the plate's attributes). */
static int plate_write(const char *path, const shardpipe_plate_desc *d,
		       struct sp_err *err)
{
	enum zarr_node node;
	struct store *st;
	char *json = NULL;
	size_t len;
	int rc;

	SP_FORWARD(check_desc(d, err));
	SP_RETURN_IF(d->name != NULL && !is_utf8(d->name), err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "plate: the name is not UTF-8");
	for (size_t i = 0; i < d->nacquisitions; i++)
		SP_RETURN_IF(!is_utf8(d->acquisitions[i]), err,
			     SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "plate: acquisition %zu: the name is not UTF-8",
			     i);
	SP_FORWARD(zarr_node_of(path, &node, err));
	SP_RETURN_IF(node != ZARR_NODE_NONE, err, SHARDPIPE_ERR_EXISTS,
		     "%s: already holds a store (zarr.json); nothing was "
		     "touched", path);
	SP_FORWARD(render_new(d, &json, &len, err));
	rc = store_check(&st, path, 0, 1, err);
	if (rc == SHARDPIPE_OK) {
		rc = st->ops->create(st, err);
		if (rc == SHARDPIPE_OK)
			rc = st->ops->write_meta(st, json, len, err);
		if (rc == SHARDPIPE_OK)
			rc = store_sync(st, err);
		store_free(st);
	}
	free(json);
	return rc;
}

void shardpipe_plate_desc_init_sized(shardpipe_plate_desc *desc, size_t size)
{
	shardpipe_plate_desc d;

	if (desc == NULL)
		return;
	memset(&d, 0, sizeof(d));
	d.field_count = 1;
	sp_struct_copy(desc, size, &d, sizeof(d));
}

static int plate_open(shardpipe_plate **out, const char *path,
		      const shardpipe_plate_desc *desc, int threads)
{
	struct sp_err err = { 0 };
	struct shardpipe_plate *p = NULL;
	shardpipe_plate_desc d;
	int rc = check_common(out, path, threads, &err);

	if (rc == SHARDPIPE_OK && desc != NULL) {
		shardpipe_plate_desc_init(&d);
		if (sp_struct_copy(&d, sizeof(d), desc, desc->struct_size) !=
		    SHARDPIPE_OK)
			rc = sp_err_set(&err, SHARDPIPE_ERR_INVALID_ARGUMENT,
					"plate desc not initialised with "
					"shardpipe_plate_desc_init()");
		else
			rc = plate_write(path, &d, &err);
	}
	if (rc == SHARDPIPE_OK)
		rc = plate_new(&p, path, threads, &err);
	if (rc == SHARDPIPE_OK)
		rc = read_plate(p, &err);
	if (rc != SHARDPIPE_OK) {
		if (p != NULL)
			plate_free(p);
		sp_last_error_set(err.msg);
		return rc;
	}
	*out = p;
	return SHARDPIPE_OK;
}

int shardpipe_plate_create(shardpipe_plate **out, const char *path,
			   const shardpipe_plate_desc *desc, int threads)
{
	if (desc == NULL) {
		if (out != NULL)
			*out = NULL;
		sp_last_error_set("a required argument is NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	return plate_open(out, path, desc, threads);
}

int shardpipe_plate_open(shardpipe_plate **out, const char *path,
			 int threads)
{
	return plate_open(out, path, NULL, threads);
}

void shardpipe_plate_close(shardpipe_plate *p)
{
	if (p != NULL)
		plate_free(p);
}

/* ------------------------------------------------------------ fields */

/*
 * A well's fields as its zarr.json lists them: acq[f] the acquisition of
 * field f (-1: none given), or -2 when it is not listed.  *is_well 0 when
 * there is no zarr.json; a zarr.json that is no well of this plate's is
 * SHARDPIPE_ERR_EXISTS: not ours to change.
 */
static int read_well(const struct shardpipe_plate *p, const char *dir,
		     int64_t *acq, int *is_well, struct sp_err *err)
{
	struct json_doc *doc;
	const struct json_value *images = NULL;
	char *text;
	int rc = SHARDPIPE_OK;

	for (int f = 0; f < p->field_count; f++)
		acq[f] = -2;
	*is_well = 0;
	SP_FORWARD(zarr_json_load(dir, &text, &doc, err));
	if (text == NULL)
		return SHARDPIPE_OK;
	if (doc != NULL) {
		const struct json_value *root = json_root(doc);

		if (json_is_str(json_get(root, "node_type"), "group"))
			images = json_get(json_get(json_get(json_get(root,
				"attributes"), "ome"), "well"), "images");
	}
	if (images == NULL || images->type != JSON_ARRAY)
		rc = sp_err_set(err, SHARDPIPE_ERR_EXISTS,
				"%s: its zarr.json is no OME-NGFF well group, "
				"not the plate's to change; nothing was "
				"touched", dir);
	for (const struct json_value *im = images ? images->child : NULL;
	     rc == SHARDPIPE_OK && im != NULL; im = im->next) {
		const struct json_value *path = json_get(im, "path");
		const struct json_value *a = json_get(im, "acquisition");
		char *end;
		long f = -1;

		if (path != NULL && path->type == JSON_STRING &&
		    path->len > 0 && path->len < 8 &&
		    store_is_key_part(path->str, path->len))
			f = strtol(path->str, &end, 10);
		if (f < 0 || f >= p->field_count)
			rc = sp_err_set(err, SHARDPIPE_ERR_EXISTS,
					"%s: its zarr.json lists a field that "
					"is not 0..%d, not the plate's to "
					"change; nothing was touched", dir,
					p->field_count - 1);
		else
			acq[f] = a != NULL && (a->num_flags & JSON_INT_I64)
					 ? a->i : -1;
	}
	if (rc == SHARDPIPE_OK)
		*is_well = 1;
	json_free(doc);
	free(text);
	return rc;
}

static int render_well(const struct shardpipe_plate *p, const int64_t *acq,
		       char **out, size_t *len, struct sp_err *err)
{
	FILE *f = open_memstream(out, len);
	int n = 0;

	SP_RETURN_IF(f == NULL, err, SHARDPIPE_ERR_NOMEM, "out of memory");
	fputs("{\n  \"zarr_format\": 3,\n  \"node_type\": \"group\",\n"
	      "  \"attributes\": {\n    \"ome\": {\n      \"version\": "
	      "\"0.5\",\n      \"well\": {\n        \"images\": [", f);
	for (int i = 0; i < p->field_count; i++) {
		if (acq[i] == -2)
			continue;
		fprintf(f, "%s\n          {\"path\": \"%d\"", n++ ? "," : "",
			i);
		if (acq[i] >= 0)
			fprintf(f, ", \"acquisition\": %lld",
				(long long)acq[i]);
		fputc('}', f);
	}
	fputs("\n        ]\n      }\n    }\n  }\n}\n", f);
	if (fclose(f) != 0 || *out == NULL) {
		free(*out);
		*out = NULL;
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	return SHARDPIPE_OK;
}

/* Emit an object's members as written, but for the one named `skip`. */
static void put_raw_members(FILE *f, const struct json_value *obj,
			    const char *skip, const char *indent, int *n)
{
	for (const struct json_value *m = obj->child; m != NULL; m = m->next) {
		if (m->key_len == strlen(skip) &&
		    memcmp(m->key, skip, m->key_len) == 0)
			continue;
		/* The key as written sits just before its value's text;
		 * quoted again from its bytes, which the parse decoded. */
		fprintf(f, "%s\n%s", (*n)++ ? "," : "", indent);
		{
			size_t bad;
			char *q = malloc(JSON_QUOTE_MAX(m->key_len));

			if (q != NULL)
				fwrite(q, 1, json_quote(q, m->key, m->key_len,
							&bad), f);
			free(q);
		}
		fprintf(f, ": %.*s", (int)m->raw_len, m->raw);
	}
}

/*
 * The plate's zarr.json again, every member as it was but "wells": those
 * whose group lists a field, found on disk in row-major order, so that
 * the same fields give the same bytes whatever order they came in and
 * whichever process wrote them.
 */
static int render_plate(const struct shardpipe_plate *p, int64_t *acq,
			char **out, size_t *len, struct sp_err *err)
{
	struct json_doc *doc;
	const struct json_value *root, *attrs, *ome, *plate;
	char *text;
	FILE *f;
	int rc = SHARDPIPE_OK, n = 0, w = 0;

	SP_FORWARD(zarr_json_load(p->path, &text, &doc, err));
	root = doc != NULL ? json_root(doc) : NULL;
	attrs = json_get(root, "attributes");
	ome = json_get(attrs, "ome");
	plate = json_get(ome, "plate");
	if (plate == NULL || plate->type != JSON_OBJECT ||
	    ome->type != JSON_OBJECT) {
		json_free(doc);
		free(text);
		return sp_err_set(err, SHARDPIPE_ERR_FORMAT,
				  "%s: the plate's zarr.json changed under "
				  "it: no attributes.ome.plate", p->path);
	}
	f = open_memstream(out, len);
	if (f == NULL) {
		json_free(doc);
		free(text);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	fputs("{\n  \"zarr_format\": 3,\n  \"node_type\": \"group\",\n"
	      "  \"attributes\": {", f);
	put_raw_members(f, attrs, "ome", "    ", &n);
	fprintf(f, "%s\n    \"ome\": {", n ? "," : "");
	n = 0;
	put_raw_members(f, ome, "plate", "      ", &n);
	fprintf(f, "%s\n      \"plate\": {", n ? "," : "");
	n = 0;
	put_raw_members(f, plate, "wells", "        ", &n);
	fprintf(f, "%s\n        \"wells\": [", n ? "," : "");
	for (size_t r = 0; rc == SHARDPIPE_OK && r < p->nrows; r++)
		for (size_t c = 0; rc == SHARDPIPE_OK && c < p->ncols; c++) {
			char *dir;
			int is_well, any = 0;

			if (asprintf(&dir, "%s/%s/%s", p->path, p->rows[r],
				     p->cols[c]) < 0) {
				rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
						"out of memory");
				break;
			}
			rc = read_well(p, dir, acq, &is_well, err);
			free(dir);
			/* Someone else's node at a well's place is no
			 * well of the plate's: not listed, and left. */
			if (rc == SHARDPIPE_ERR_EXISTS) {
				rc = SHARDPIPE_OK;
				is_well = 0;
			}
			for (int i = 0; is_well && i < p->field_count; i++)
				any |= acq[i] != -2;
			if (rc != SHARDPIPE_OK || !any)
				continue;
			fprintf(f, "%s\n          {\"path\": \"%s/%s\", "
				"\"rowIndex\": %zu, \"columnIndex\": %zu}",
				w++ ? "," : "", p->rows[r], p->cols[c], r, c);
		}
	fputs("\n        ]\n      }\n    }\n  }\n}\n", f);
	json_free(doc);
	free(text);
	if (fclose(f) != 0 || *out == NULL)
		rc = rc != SHARDPIPE_OK ? rc : sp_err_set(err,
			SHARDPIPE_ERR_NOMEM, "out of memory");
	if (rc != SHARDPIPE_OK) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

static int index_of(char *const *names, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return (int)i;
	return -1;
}

/* A row's or a well's directory: absent, or one holding no zarr.json or
 * a group's; anything else is not the plate's. */
static int check_node_dir(const char *dir, const char *what,
			  struct sp_err *err)
{
	enum zarr_node node;
	struct stat st;

	if (lstat(dir, &st) != 0)
		return SHARDPIPE_OK;
	SP_RETURN_IF(!S_ISDIR(st.st_mode), err, SHARDPIPE_ERR_EXISTS,
		     "%s: is %s, not the plate's %s group; nothing was "
		     "touched", dir, S_ISLNK(st.st_mode) ? "a symbolic link"
							 : "not a directory",
		     what);
	SP_FORWARD(zarr_node_of(dir, &node, err));
	SP_RETURN_IF(node != ZARR_NODE_NONE && node != ZARR_NODE_GROUP, err,
		     SHARDPIPE_ERR_EXISTS, "%s: its zarr.json is %s, not the "
		     "plate's %s group; nothing was touched", dir,
		     node == ZARR_NODE_ARRAY ? "an array"
		     : node == ZARR_NODE_IMAGE ? "an image" : "no group",
		     what);
	return SHARDPIPE_OK;
}

/* The plate's lock, held across processes while a field is added: a
 * blocking flock on its directory, which each writer's own store lock
 * (on the field's directory) does not touch. */
static int lock_plate(const char *path, int *fd, struct sp_err *err)
{
	*fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	SP_RETURN_IF(*fd < 0, err, store_fs_errno_code(errno), "%s: %s",
		     path, strerror(errno));
	while (flock(*fd, LOCK_EX) != 0) {
		int e = errno;

		if (e == EINTR)
			continue;
		close(*fd);
		*fd = -1;
		return sp_err_set(err, store_fs_errno_code(e),
				  "%s: cannot lock the plate: %s", path,
				  strerror(e));
	}
	return SHARDPIPE_OK;
}

/* The image at dir advertises no row: level 0 (and so every level)
 * of shape 0 along dim 0, read by the library's reader, which refuses
 * an image shardpipe did not write. */
static int field_is_empty(const char *dir)
{
	shardpipe_reader *r;
	shardpipe_array_info info = { 0 };
	int empty;

	if (shardpipe_reader_open(&r, dir) != SHARDPIPE_OK)
		return 0;
	empty = shardpipe_reader_info(r, &info) == SHARDPIPE_OK &&
		info.rank > 0 && info.shape[0] == 0;
	shardpipe_reader_close(r);
	return empty;
}

struct field_paths {
	char *row, *well, *field;
	int made_row, made_well;
};

/* Every refusal, then the field's image opened: the row's and well's
 * directories made for it and removed again when it is refused. */
static int open_field(shardpipe_stream **out, struct shardpipe_plate *p,
		      struct field_paths *fp, int field, int64_t acq_id,
		      int64_t *acq, const shardpipe_desc *desc,
		      struct sp_err *err)
{
	enum zarr_node node;
	shardpipe_desc d;
	int is_well, empty, rc;

	SP_FORWARD(check_node_dir(fp->row, "row", err));
	SP_FORWARD(check_node_dir(fp->well, "well", err));
	SP_FORWARD(read_well(p, fp->well, acq, &is_well, err));
	SP_FORWARD(zarr_node_of(fp->field, &node, err));
	empty = node == ZARR_NODE_IMAGE && field_is_empty(fp->field);
	SP_RETURN_IF(!empty && (node != ZARR_NODE_NONE ||
				(is_well && acq[field] != -2)),
		     err, SHARDPIPE_ERR_EXISTS, "%s: field %d of the well is "
		     "written already; a field is written once, and nothing "
		     "was touched", fp->field, field);
	shardpipe_desc_init(&d);
	SP_RETURN_IF(sp_struct_copy(&d, sizeof(d), desc, desc->struct_size) !=
		     SHARDPIPE_OK, err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "desc not initialised with shardpipe_desc_init()");
	d.threads = p->threads;
	d.ngff = 1;
	/* A field is written at its first row: an image holding none (its
	 * stream closed before an append succeeded) is opened again over,
	 * under its own store lock, so one still open is refused by it
	 * (design §28.8). */
	d.overwrite = empty;
	if (p->lanes == NULL)
		SP_FORWARD(lanes_create(&p->lanes, p->threads, err));
	rc = store_fs_mkdir(fp->row, &fp->made_row, err);
	if (rc == SHARDPIPE_OK)
		rc = store_fs_mkdir(fp->well, &fp->made_well, err);
	if (rc == SHARDPIPE_OK) {
		rc = stream_open_lanes(out, fp->field, &d, p->lanes);
		if (rc == SHARDPIPE_ERR_BUSY && empty)
			rc = sp_err_set(err, SHARDPIPE_ERR_EXISTS, "%s: field "
					"%d of the well is written already, by "
					"a stream still open; nothing was "
					"touched", fp->field, field);
		else if (rc != SHARDPIPE_OK)
			sp_err_set(err, rc, "%s", shardpipe_last_error_message());
	}
	if (rc != SHARDPIPE_OK) {
		if (fp->made_well)
			rmdir(fp->well);
		if (fp->made_row)
			rmdir(fp->row);
		return rc;
	}
	acq[field] = acq_id;
	return SHARDPIPE_OK;
}

/* After the field's image: the row group when new, the well listing the
 * field, the plate listing the well, each durable before the next names
 * it (doc/design.md §28.8). */
static int list_field(struct shardpipe_plate *p, struct field_paths *fp,
		      int64_t *acq, struct sp_err *err)
{
	enum zarr_node node;
	char *json = NULL;
	size_t len;
	int rc;

	SP_FORWARD(zarr_node_of(fp->row, &node, err));
	if (node == ZARR_NODE_NONE) {
		SP_FORWARD(zarr_meta_group(NULL, NULL, NULL, &json, &len, err));
		rc = store_fs_put_meta(fp->row, json, len, err);
		free(json);
		SP_FORWARD(rc);
	}
	SP_FORWARD(render_well(p, acq, &json, &len, err));
	rc = store_fs_put_meta(fp->well, json, len, err);
	free(json);
	SP_FORWARD(rc);
	SP_FORWARD(render_plate(p, acq, &json, &len, err));
	rc = store_fs_put_meta(p->path, json, len, err);
	free(json);
	return rc;
}

int shardpipe_plate_field(shardpipe_stream **out, shardpipe_plate *p,
			  const char *row, const char *column, int field,
			  int acquisition, const shardpipe_desc *desc)
{
	struct sp_err err = { 0 };
	struct field_paths fp = { 0 };
	int64_t *acq = NULL;
	int r, c, fd = -1, rc = SHARDPIPE_OK;

	if (out != NULL)
		*out = NULL;
	if (out == NULL || p == NULL || row == NULL || column == NULL ||
	    desc == NULL) {
		sp_last_error_set("a required argument is NULL");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	r = index_of(p->rows, p->nrows, row);
	c = index_of(p->cols, p->ncols, column);
	if (r < 0 || c < 0)
		rc = sp_err_set(&err, SHARDPIPE_ERR_NAME,
				"plate: well %s/%s is outside the plate: %s "
				"\"%s\" is not one of its %zu %ss", row, column,
				r < 0 ? "row" : "column", r < 0 ? row : column,
				r < 0 ? p->nrows : p->ncols,
				r < 0 ? "row" : "column");
	else if (field < 0 || field >= p->field_count)
		rc = sp_err_set(&err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				"plate: well %s/%s: field %d is outside "
				"0..%d (field_count %d)", row, column, field,
				p->field_count - 1, p->field_count);
	else if (acquisition < -1)
		rc = sp_err_set(&err, SHARDPIPE_ERR_INVALID_ARGUMENT,
				"plate: acquisition %d: an id is >= 0, or -1 "
				"for none", acquisition);
	else if (acquisition >= 0) {
		size_t i = 0;

		while (i < p->nacq && p->acq_ids[i] != acquisition)
			i++;
		if (i == p->nacq)
			rc = sp_err_set(&err, SHARDPIPE_ERR_INVALID_ARGUMENT,
					"plate: acquisition %d is not one of "
					"the plate's %zu", acquisition,
					p->nacq);
	}
	if (rc == SHARDPIPE_OK &&
	    (asprintf(&fp.row, "%s/%s", p->path, row) < 0 ||
	     asprintf(&fp.well, "%s/%s", fp.row, column) < 0 ||
	     asprintf(&fp.field, "%s/%d", fp.well, field) < 0 ||
	     (acq = calloc((size_t)p->field_count, sizeof(*acq))) == NULL))
		rc = sp_err_set(&err, SHARDPIPE_ERR_NOMEM, "out of memory");
	if (rc == SHARDPIPE_OK) {
		pthread_mutex_lock(&p->mu);
		rc = lock_plate(p->path, &fd, &err);
		if (rc == SHARDPIPE_OK)
			rc = open_field(out, p, &fp, field, acquisition, acq,
					desc, &err);
		if (rc == SHARDPIPE_OK) {
			rc = list_field(p, &fp, acq, &err);
			/* Not listed, so not left open: the image stays,
			 * as any stream's closed after a failure. */
			if (rc != SHARDPIPE_OK) {
				shardpipe_stream_close(*out);
				*out = NULL;
			}
		}
		if (fd >= 0)
			close(fd);
		pthread_mutex_unlock(&p->mu);
	}
	free(acq);
	free(fp.row);
	free(fp.well);
	free(fp.field);
	if (rc != SHARDPIPE_OK)
		sp_last_error_set(err.msg);
	return rc;
}
