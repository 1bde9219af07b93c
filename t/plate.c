/*
 * plate.c - OME-NGFF 0.5 plates (shardpipe_plate, doc/design.md §28.8):
 * fields written in any order, two of them streaming at once from two
 * threads, a pyramid field, wells left empty; every field read back by
 * the library's reader equal to its input; the same fields written in
 * another order give the same files, byte for byte; the plate's wells
 * listed in row-major order whatever the order; and every refusal with
 * its code and message, before anything is written.
 *
 * With --keep DIR the plate is left at DIR/p.zarr, each field's input at
 * DIR/ROW_COL_F.bin, for t/python/readers_plate.py.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

static const char *const rows[] = { "A", "B", "C" };
static const char *const cols[] = { "1", "2", "3", "4" };
static const char *const acqs[] = { "first", "second" };

/* The fields written: row, column, field, acquisition, a pyramid. */
struct field {
	const char *row, *col;
	int f, acq, pyramid;
	uint8_t *data;
	size_t bytes;
	uint64_t rows;
	shardpipe_stream *s;
	uint64_t seed;
	int rc;
};

static struct field fields[] = {
	{ .row = "C", .col = "4", .f = 0, .acq = 1 },
	{ .row = "A", .col = "1", .f = 0, .acq = 0 },
	{ .row = "B", .col = "2", .f = 0, .acq = -1, .pyramid = 1 },
	{ .row = "A", .col = "1", .f = 1, .acq = 1 },
	{ .row = "A", .col = "3", .f = 0, .acq = 0 },
};
#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static uint64_t ny, nx;

static void field_desc(shardpipe_desc *d, const struct field *f)
{
	shardpipe_desc_init(d);
	d->rank = 3;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->backend = "cpu";
	d->dims[0] = (shardpipe_dim){ .size = 0, .chunk = 2,
				      .chunks_per_shard = 2, .name = "t" };
	d->dims[1] = (shardpipe_dim){ .size = ny, .chunk = 8,
				      .chunks_per_shard = 2, .name = "y" };
	d->dims[2] = (shardpipe_dim){ .size = nx, .chunk = 8,
				      .chunks_per_shard = 2, .name = "x" };
	if (f->pyramid) {
		d->downsample = 6;     /* y and x */
		d->max_levels = 3;
	}
}

static void *append_all(void *arg)
{
	struct field *f = arg;
	uint64_t rng = f->seed;
	size_t at = 0;
	int rc = SHARDPIPE_OK, c;

	while (rc == SHARDPIPE_OK && at < f->bytes) {
		size_t n = 1 + (size_t)(test_rand(&rng) % 2000);

		if (n > f->bytes - at)
			n = f->bytes - at;
		rc = shardpipe_stream_append(f->s, f->data + at, n);
		at += n;
	}
	if (rc != SHARDPIPE_OK)
		diag("%s/%s/%d: %s", f->row, f->col, f->f,
		     shardpipe_stream_message(f->s));
	c = shardpipe_stream_close(f->s);
	f->s = NULL;
	f->rc = rc != SHARDPIPE_OK ? rc : c;
	return NULL;
}

static shardpipe_plate *make_plate(const char *path)
{
	shardpipe_plate_desc pd;
	shardpipe_plate *p;

	shardpipe_plate_desc_init(&pd);
	pd.rows = rows;
	pd.nrows = 3;
	pd.columns = cols;
	pd.ncolumns = 4;
	pd.field_count = 2;
	pd.name = "screen";
	pd.acquisitions = acqs;
	pd.nacquisitions = 2;
	if (shardpipe_plate_create(&p, path, &pd, 2) != SHARDPIPE_OK)
		bail("plate %s: %s", path, shardpipe_last_error_message());
	return p;
}

/* Open fields order[0..n) of one plate; the first two stream at once
 * from two threads, the rest one after another. */
static int write_plate(const char *path, const int *order)
{
	shardpipe_plate *p = make_plate(path);
	pthread_t th[2];
	int fine = 1;

	for (size_t k = 0; k < NFIELDS; k++) {
		struct field *f = &fields[order[k]];
		shardpipe_desc d;
		int rc;

		field_desc(&d, f);
		rc = shardpipe_plate_field(&f->s, p, f->row, f->col, f->f,
					   f->acq, &d);
		if (rc != SHARDPIPE_OK) {
			diag("field %s/%s/%d: %s", f->row, f->col, f->f,
			     shardpipe_last_error_message());
			return 0;
		}
		if (k < 2) {
			pthread_create(&th[k], NULL, append_all, f);
		} else {
			append_all(f);
			fine &= f->rc == SHARDPIPE_OK;
		}
		if (k == 1) {
			pthread_join(th[0], NULL);
			pthread_join(th[1], NULL);
			fine &= fields[order[0]].rc == SHARDPIPE_OK &&
				fields[order[1]].rc == SHARDPIPE_OK;
		}
	}
	shardpipe_plate_close(p);
	return fine;
}

static char *text_of(const char *root, const char *rel)
{
	char *path, *t;
	size_t n;

	if (asprintf(&path, "%s/%s/zarr.json", root, rel) < 0)
		bail("out of memory");
	t = test_slurp(path, &n);
	free(path);
	if (t == NULL)
		return NULL;
	t = realloc(t, n + 1);
	t[n] = '\0';
	return t;
}

static void check_listing(const char *root)
{
	/* Row-major over the plate, from the fields' wells alone. */
	static const char *const want[] = {
		"{\"path\": \"A/1\", \"rowIndex\": 0, \"columnIndex\": 0}",
		"{\"path\": \"A/3\", \"rowIndex\": 0, \"columnIndex\": 2}",
		"{\"path\": \"B/2\", \"rowIndex\": 1, \"columnIndex\": 1}",
		"{\"path\": \"C/4\", \"rowIndex\": 2, \"columnIndex\": 3}",
	};
	char *t = text_of(root, ".");
	const char *at = t;
	int fine = t != NULL;

	for (size_t i = 0; fine && i < 4; i++) {
		const char *w = strstr(at, want[i]);

		if (w == NULL)
			diag("wells: %s missing or out of order", want[i]);
		fine &= w != NULL;
		at = w != NULL ? w : at;
	}
	ok(fine && strstr(t, "A/2") == NULL && strstr(t, "B/1") == NULL,
	   "the plate lists the 4 wells with fields, row-major, and no "
	   "empty one");
	free(t);
	t = text_of(root, "A/1");
	ok(t != NULL && strstr(t, "{\"path\": \"0\", \"acquisition\": 0},\n"
				  "          {\"path\": \"1\", "
				  "\"acquisition\": 1}") != NULL,
	   "well A/1 lists fields 0 and 1 with their acquisitions");
	free(t);
	t = text_of(root, "B/2");
	ok(t != NULL && strstr(t, "{\"path\": \"0\"}") != NULL,
	   "well B/2 lists field 0, with no acquisition");
	free(t);
}

static void check_data(const char *root)
{
	int fine = 1;

	for (size_t i = 0; i < NFIELDS; i++) {
		struct field *f = &fields[i];
		char *path;

		if (asprintf(&path, "%s/%s/%s/%d", root, f->row, f->col,
			     f->f) < 0)
			bail("out of memory");
		fine &= test_reads_back(path, f->rows, f->data, f->bytes);
		free(path);
	}
	ok(fine, "every field reads back equal to its input (%zu fields, "
		 "one a pyramid)", NFIELDS);
}

/* A plate description refused with code, naming word, nothing made. */
static void create_refused(const char *tmp, const shardpipe_plate_desc *pd,
			   int code, const char *word, const char *what)
{
	shardpipe_plate *p = (shardpipe_plate *)1;
	char *path;
	struct stat st;
	int rc;

	if (asprintf(&path, "%s/bad.zarr", tmp) < 0)
		bail("out of memory");
	rc = shardpipe_plate_create(&p, path, pd, 1);
	ok(rc == code && p == NULL && stat(path, &st) != 0 &&
	   strstr(shardpipe_last_error_message(), word) != NULL,
	   "refused (%s): %s", shardpipe_strerror(code), what);
	if (rc != code || strstr(shardpipe_last_error_message(), word) == NULL)
		diag("got %d: %s", rc, shardpipe_last_error_message());
	free(path);
}

static void create_refusals(const char *tmp)
{
	static const char *const dup[] = { "A", "B", "A" };
	static const char *const dash[] = { "A-1" };
	static const char *const empty[] = { "" };
	static const char *const bad_utf8[] = { "ok", "caf\xc3" };
	shardpipe_plate_desc pd;

	shardpipe_plate_desc_init(&pd);
	pd.rows = rows;
	pd.columns = cols;
	pd.ncolumns = 4;
	create_refused(tmp, &pd, SHARDPIPE_ERR_INVALID_ARGUMENT, "0 rows",
		       "a plate of 0 rows");
	pd.nrows = 3;
	pd.ncolumns = 0;
	create_refused(tmp, &pd, SHARDPIPE_ERR_INVALID_ARGUMENT, "0 columns",
		       "a plate of 0 columns");
	pd.ncolumns = 4;
	pd.rows = dup;
	create_refused(tmp, &pd, SHARDPIPE_ERR_NAME, "row 2 \"A\" repeats "
		       "row 0", "a repeated row name");
	pd.rows = rows;
	pd.columns = dash;
	pd.ncolumns = 1;
	create_refused(tmp, &pd, SHARDPIPE_ERR_NAME, "byte 1 (0x2d)",
		       "a column name with '-'");
	pd.columns = empty;
	create_refused(tmp, &pd, SHARDPIPE_ERR_NAME, "column 0: the name is "
		       "empty", "an empty column name");
	pd.columns = cols;
	pd.ncolumns = 4;
	pd.field_count = 0;
	create_refused(tmp, &pd, SHARDPIPE_ERR_INVALID_ARGUMENT,
		       "field_count 0", "field_count 0");
	pd.field_count = 1;
	pd.acquisitions = bad_utf8;
	pd.nacquisitions = 2;
	create_refused(tmp, &pd, SHARDPIPE_ERR_INVALID_ARGUMENT,
		       "acquisition 1", "an acquisition name that is not UTF-8");
}

/* A field refused with code, naming word, and nothing new in the plate. */
static void field_refused(shardpipe_plate *p, const char *root,
			  const char *row, const char *col, int f, int acq,
			  const shardpipe_desc *d, int code, const char *word,
			  const char *what)
{
	shardpipe_stream *s = (shardpipe_stream *)1;
	char *before = text_of(root, "."), *after;
	int entries = test_entries(root), rc;

	rc = shardpipe_plate_field(&s, p, row, col, f, acq, d);
	after = text_of(root, ".");
	ok(rc == code && s == NULL && test_entries(root) == entries &&
	   before != NULL && after != NULL && strcmp(before, after) == 0 &&
	   strstr(shardpipe_last_error_message(), word) != NULL,
	   "field refused (%s): %s", shardpipe_strerror(code), what);
	if (rc != code || strstr(shardpipe_last_error_message(), word) == NULL)
		diag("got %d: %s", rc, shardpipe_last_error_message());
	free(before);
	free(after);
}

static void field_refusals(const char *tmp)
{
	char *root, *file, *arr;
	shardpipe_plate *p;
	shardpipe_desc d, bad;
	struct field f = { .row = "A", .col = "1", .acq = -1 };
	FILE *fh;

	if (asprintf(&root, "%s/r.zarr", tmp) < 0 ||
	    asprintf(&file, "%s/B", root) < 0 ||
	    asprintf(&arr, "%s/C", root) < 0)
		bail("out of memory");
	p = make_plate(root);
	field_desc(&d, &f);
	field_refused(p, root, "D", "1", 0, -1, &d, SHARDPIPE_ERR_NAME,
		      "well D/1 is outside the plate: row \"D\"",
		      "a row outside the plate");
	field_refused(p, root, "A", "5", 0, -1, &d, SHARDPIPE_ERR_NAME,
		      "column \"5\" is not one of its 4 columns",
		      "a column outside the plate");
	field_refused(p, root, "A", "1", 2, -1, &d,
		      SHARDPIPE_ERR_INVALID_ARGUMENT, "field 2 is outside 0..1",
		      "a field beyond field_count");
	field_refused(p, root, "A", "1", -1, -1, &d,
		      SHARDPIPE_ERR_INVALID_ARGUMENT, "field -1 is outside",
		      "a negative field");
	field_refused(p, root, "A", "1", 0, 2, &d,
		      SHARDPIPE_ERR_INVALID_ARGUMENT,
		      "acquisition 2 is not one of the plate's 2",
		      "an acquisition the plate lacks");
	bad = d;
	bad.rank = 1;
	field_refused(p, root, "A", "1", 0, -1, &bad,
		      SHARDPIPE_ERR_INVALID_ARGUMENT, "2 to 5 dims",
		      "a field that is no OME-NGFF image (rank 1): no row or "
		      "well made");
	fh = fopen(file, "w");
	if (fh == NULL || fputs("mine\n", fh) < 0 || fclose(fh) != 0)
		bail("cannot write %s", file);
	field_refused(p, root, "B", "1", 0, -1, &d, SHARDPIPE_ERR_EXISTS,
		      "not a directory, not the plate's row group",
		      "a row path that is the user's file");
	{
		shardpipe_desc a;
		shardpipe_stream *s;
		char *well;

		test_small_desc(&a, SHARDPIPE_CODEC_NONE);
		if (asprintf(&well, "%s/2", arr) < 0 || mkdir(arr, 0777) != 0)
			bail("cannot make %s", arr);
		uint16_t ten[100] = { 0 };

		if (shardpipe_stream_open(&s, well, &a) != SHARDPIPE_OK ||
		    shardpipe_stream_append(s, ten, sizeof(ten)) !=
			    SHARDPIPE_OK ||
		    shardpipe_stream_close(s) != SHARDPIPE_OK)
			bail("array %s: %s", well,
			     shardpipe_last_error_message());
		field_refused(p, root, "C", "2", 0, -1, &d,
			      SHARDPIPE_ERR_EXISTS, "its zarr.json is an array",
			      "a well path that holds an array");
		free(well);
	}
	{
		shardpipe_stream *s;
		size_t n = (size_t)(ny * nx * 2);
		uint8_t *row = calloc(1, n);

		ok(shardpipe_plate_field(&s, p, "A", "1", 0, -1, &d) ==
			   SHARDPIPE_OK &&
		   shardpipe_stream_append(s, row, n) ==
			   SHARDPIPE_OK && shardpipe_stream_close(s) ==
			   SHARDPIPE_OK, "field A/1/0 written") ||
		(diag("%s", shardpipe_last_error_message()), 0);
		d.overwrite = 1;
		field_refused(p, root, "A", "1", 0, -1, &d,
			      SHARDPIPE_ERR_EXISTS, "written already",
			      "a field written twice, even with overwrite");
		d.overwrite = 0;
		free(row);
	}
	{
		/* A field is written at its first row: one closed with none
		 * is opened again; one still open is its stream's. */
		shardpipe_stream *s, *s2 = (shardpipe_stream *)1;
		size_t n = (size_t)(ny * nx * 2);
		uint8_t *row = calloc(1, n);
		int rc;

		ok(shardpipe_plate_field(&s, p, "A", "2", 0, -1, &d) ==
			   SHARDPIPE_OK && shardpipe_stream_close(s) ==
			   SHARDPIPE_OK, "field A/2/0 opened and closed with "
		   "no row") || (diag("%s", shardpipe_last_error_message()), 0);
		rc = shardpipe_plate_field(&s, p, "A", "2", 0, -1, &d);
		if (!ok(rc == SHARDPIPE_OK, "a field with no row is opened "
			"again"))
			diag("got %d: %s", rc, shardpipe_last_error_message());
		if (rc == SHARDPIPE_OK) {
			rc = shardpipe_plate_field(&s2, p, "A", "2", 0, -1,
						   &d);
			if (!ok(rc == SHARDPIPE_ERR_EXISTS && s2 == NULL &&
				strstr(shardpipe_last_error_message(),
				       "written already") != NULL,
				"while it is open, a second open is refused: "
				"written already"))
				diag("got %d: %s", rc,
				     shardpipe_last_error_message());
			ok(shardpipe_stream_append(s, row, n) == SHARDPIPE_OK &&
			   shardpipe_stream_close(s) == SHARDPIPE_OK,
			   "the reopened field takes its row");
		} else {
			skip(2, "no reopened field");
		}
		field_refused(p, root, "A", "2", 0, -1, &d,
			      SHARDPIPE_ERR_EXISTS, "written already",
			      "a field with a row is written already");
		free(row);
	}
	{
		size_t n;
		char *mine = test_slurp(file, &n);

		ok(mine != NULL && n == 5 && memcmp(mine, "mine\n", 5) == 0,
		   "the user's file B is as it was");
		free(mine);
	}
	shardpipe_plate_close(p);
	{
		shardpipe_group *g;
		shardpipe_plate *q = (shardpipe_plate *)1;
		char *gp;

		if (asprintf(&gp, "%s/g.zarr", tmp) < 0 ||
		    shardpipe_group_create(&g, gp, 1) != SHARDPIPE_OK)
			bail("group");
		shardpipe_group_close(g);
		ok(shardpipe_plate_open(&q, gp, 1) == SHARDPIPE_ERR_PATH &&
		   q == NULL && strstr(shardpipe_last_error_message(),
				       "no attributes.ome.plate") != NULL,
		   "plate_open of a plain group: SHARDPIPE_ERR_PATH");
		q = (shardpipe_plate *)1;
		ok(shardpipe_plate_create(&q, root, NULL, 1) ==
			   SHARDPIPE_ERR_INVALID_ARGUMENT && q == NULL,
		   "plate_create with no description refused");
		free(gp);
	}
	free(root);
	free(file);
	free(arr);
}

static void keep(const char *dir)
{
	for (size_t i = 0; i < NFIELDS; i++) {
		char *bin;
		FILE *fh;

		if (asprintf(&bin, "%s/%s_%s_%d.bin", dir, fields[i].row,
			     fields[i].col, fields[i].f) < 0)
			bail("out of memory");
		fh = fopen(bin, "wb");
		if (fh == NULL ||
		    fwrite(fields[i].data, 1, fields[i].bytes, fh) !=
			    fields[i].bytes || fclose(fh) != 0)
			bail("cannot write %s", bin);
		free(bin);
	}
}

int main(int argc, char **argv)
{
	static const int order1[] = { 0, 1, 2, 3, 4 };
	static const int order2[] = { 4, 2, 3, 1, 0 };
	const char *keep_dir = argc == 3 && strcmp(argv[1], "--keep") == 0
				       ? argv[2] : NULL;
	uint64_t rng = test_seed();
	char *tmp = test_tmpdir("plate"), *a, *b;
	int files = 0, same;
	uint64_t nt;

	plan(32);
	ny = (uint64_t)test_sized("plate y", 37, 13);
	nx = (uint64_t)test_sized("plate x", 41, 11);
	/* One shape for every field: ome-zarr stitches a plate's wells
	 * into one array, which takes tiles of one shape. */
	nt = 3 + test_rand(&rng) % 9;
	for (size_t i = 0; i < NFIELDS; i++) {
		struct field *f = &fields[i];

		f->rows = nt;
		f->bytes = (size_t)(f->rows * ny * nx * 2);
		f->data = test_xmalloc(f->bytes);
		test_fill(f->data, f->bytes, (int)(test_rand(&rng) % 4), &rng);
		f->seed = test_rand(&rng);
	}
	if (asprintf(&a, "%s/a.zarr", keep_dir ? keep_dir : tmp) < 0 ||
	    asprintf(&b, "%s/b.zarr", tmp) < 0)
		bail("out of memory");
	ok(write_plate(a, order1), "a plate of %zu fields, the first two "
	   "streaming at once from two threads", NFIELDS);
	check_listing(a);
	check_data(a);
	ok(write_plate(b, order2), "the same fields in another order");
	same = test_same_tree(a, b, &files);
	ok(same && files > 10, "both orders give the same files, byte for "
	   "byte (%d files)", files);
	create_refusals(tmp);
	field_refusals(tmp);
	if (keep_dir != NULL)
		keep(keep_dir);
	test_rmtree(tmp);
	free(tmp);
	free(a);
	free(b);
	for (size_t i = 0; i < NFIELDS; i++)
		free(fields[i].data);
	return done_testing();
}
