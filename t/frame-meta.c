/*
 * frame-meta.c - per-frame metadata (issue 42 item 2, design §28.9):
 * an OME-NGFF image appended frame by frame with random values
 * of a float64, an int64 and a bool field, and a skipped frame; each
 * field's zarr.json never advertises more rows than the image's (read
 * after every frame) and as many after each flush; every chunk decoded
 * here, raw little-endian as the zarr.json says, equal to the values
 * given, a skipped frame's NaN, 0, false with "skipped" true; and every
 * refusal with its exact code and nothing written.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define NY 12
#define NX 10
#define SR 4            /* rows a shard row: chunk 2, 2 chunks a shard */
#define FRAMES 11       /* two whole shard rows and a partial one */
#define SKIPPED 5

static const shardpipe_frame_field fields[] = {
	{ "time", SHARDPIPE_DTYPE_FLOAT64 },
	{ "n", SHARDPIPE_DTYPE_INT64 },
	{ "flag", SHARDPIPE_DTYPE_BOOL },
};

static void image_desc(shardpipe_desc *d)
{
	shardpipe_desc_init(d);
	d->rank = 3;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->backend = "cpu";
	d->codec = SHARDPIPE_CODEC_NONE;
	d->ngff = 1;
	d->dims[0] = (shardpipe_dim){ .size = 0, .chunk = 2,
				      .chunks_per_shard = 2, .name = "t" };
	d->dims[1] = (shardpipe_dim){ .size = NY, .chunk = 4,
				      .chunks_per_shard = 3, .name = "y" };
	d->dims[2] = (shardpipe_dim){ .size = NX, .chunk = 5,
				      .chunks_per_shard = 2, .name = "x" };
	d->frame_fields = fields;
	d->n_frame_fields = 3;
}

/* shape[0] of dir/zarr.json; -1 when unreadable. */
static long long rows_of(const char *root, const char *dir)
{
	char *path, *text, *at;
	long long rows = -1;
	size_t n;

	if (asprintf(&path, "%s/%s/zarr.json", root, dir) < 0)
		bail("out of memory");
	text = test_slurp(path, &n);
	free(path);
	if (text == NULL)
		return -1;
	at = strstr(text, "\"shape\"");
	if (at != NULL && (at = strchr(at, '[')) != NULL)
		rows = strtoll(at + 1, NULL, 10);
	free(text);
	return rows;
}

/* Row r of a field, from its chunks decoded here (w bytes an element,
 * little-endian); a missing chunk is the fill value. */
static int field_row(const char *root, const char *field, uint64_t r,
		     unsigned w, uint64_t fill, uint64_t *out)
{
	char *path;
	uint8_t *buf;
	size_t n;

	if (asprintf(&path, "%s/%s/c/%llu", root, field,
		     (unsigned long long)(r / SR)) < 0)
		bail("out of memory");
	buf = test_slurp(path, &n);
	free(path);
	if (buf == NULL) {
		*out = fill;
		return 1;
	}
	if (n != SR * w) {
		free(buf);
		return 0;
	}
	*out = 0;
	for (unsigned b = 0; b < w; b++)
		*out |= (uint64_t)buf[(r % SR) * w + b] << (8 * b);
	free(buf);
	return 1;
}

int main(void)
{
	uint64_t rng = test_seed();
	char *tmp = test_tmpdir("frame-meta"), *root;
	shardpipe_frame_value vals[FRAMES][3];
	shardpipe_stream *s;
	shardpipe_desc d;
	size_t fb = NY * NX * 2;
	uint16_t *frames = test_xmalloc(FRAMES * fb);
	int monotone = 1, rc;

	plan(34);
	if (asprintf(&root, "%s/img.zarr", tmp) < 0)
		bail("out of memory");
	test_fill(frames, FRAMES * fb, 1, &rng);
	for (int f = 0; f < FRAMES; f++) {
		uint64_t x = test_rand(&rng);

		vals[f][0].f64 = (double)(int64_t)x / 3.0;
		vals[f][1].i64 = (int64_t)test_rand(&rng);
		vals[f][2].b = (int)(x & 1);
	}
	image_desc(&d);
	rc = shardpipe_stream_open(&s, root, &d);
	if (rc != SHARDPIPE_OK)
		bail("open: %s", shardpipe_last_error_message());
	is_int(rows_of(root, "time"), 0, "time advertises 0 rows at open");
	ok(rows_of(root, "skipped") == 0, "the skipped field is there");
	rc = shardpipe_stream_append(s, frames, fb);
	is_int(rc, SHARDPIPE_ERR_INVALID_ARGUMENT,
	       "append without values is refused: the stream has fields");
	{
		shardpipe_frame_value bad[3] = { vals[0][0], vals[0][1] };

		bad[2].b = 2;
		is_int(shardpipe_stream_append_meta(s, frames, fb, bad),
		       SHARDPIPE_ERR_INVALID_ARGUMENT, "a bool of 2 is refused");
		if (!ok(strstr(shardpipe_stream_message(s), "\"flag\"") !=
			NULL, "the message names the field"))
			diag("%s", shardpipe_last_error_message());
		is_int(shardpipe_stream_append_meta(s, frames, fb / 2, vals[0]),
		       SHARDPIPE_ERR_INVALID_ARGUMENT, "half a frame is refused");
	}
	for (int f = 0; f < FRAMES; f++) {
		long long m, im;

		if (f == SKIPPED)
			rc = shardpipe_stream_skip(s, fb);
		else
			rc = shardpipe_stream_append_meta(s, frames + f * fb / 2,
							  fb, vals[f]);
		if (rc != SHARDPIPE_OK)
			bail("frame %d: %s", f, shardpipe_last_error_message());
		/* The field first: it can only lag the image. */
		m = rows_of(root, "time");
		im = rows_of(root, "0");
		if (m < 0 || im < 0 || m > im) {
			monotone = 0;
			diag("frame %d: time %lld rows, image %lld", f, m, im);
		}
		if (f == 6) {
			/* A flush advertises the whole shard rows: 4. */
			if (!ok(shardpipe_stream_flush(s) == SHARDPIPE_OK &&
				rows_of(root, "0") == 7 / SR * SR &&
				rows_of(root, "time") == 7 / SR * SR &&
				rows_of(root, "flag") == 7 / SR * SR &&
				rows_of(root, "skipped") == 7 / SR * SR,
				"after a flush at 7 rows, every field "
				"advertises the image's 4"))
				diag("image %lld time %lld: %s",
				     rows_of(root, "0"), rows_of(root, "time"),
				     shardpipe_stream_message(s));
		}
	}
	ok(monotone, "no field ever advertised a row the image did not");
	if (!ok(shardpipe_stream_close(s) == SHARDPIPE_OK, "closed"))
		diag("%s", shardpipe_last_error_message());
	is_int(rows_of(root, "0"), FRAMES, "the image has every frame");
	is_int(rows_of(root, "time"), FRAMES, "time has every frame");
	is_int(rows_of(root, "n"), FRAMES, "n has every frame");
	is_int(rows_of(root, "flag"), FRAMES, "flag has every frame");
	is_int(rows_of(root, "skipped"), FRAMES, "skipped has every frame");
	{
		int tgood = 1, ngood = 1, fgood = 1, sgood = 1;

		for (uint64_t r = 0; r < FRAMES; r++) {
			uint64_t t, n, fl, sk, want_t, want_n, want_f;

			if (!field_row(root, "time", r, 8, 0, &t) ||
			    !field_row(root, "n", r, 8, 0, &n) ||
			    !field_row(root, "flag", r, 1, 0, &fl) ||
			    !field_row(root, "skipped", r, 1, 0, &sk))
				bail("row %llu: a chunk of the wrong size",
				     (unsigned long long)r);
			if (r == SKIPPED) {
				double x;

				memcpy(&x, &t, 8);
				tgood &= isnan(x);
				ngood &= n == 0;
				fgood &= fl == 0;
				sgood &= sk == 1;
				continue;
			}
			memcpy(&want_t, &vals[r][0].f64, 8);
			want_n = (uint64_t)vals[r][1].i64;
			want_f = (uint64_t)vals[r][2].b;
			tgood &= t == want_t;
			ngood &= n == want_n;
			fgood &= fl == want_f;
			sgood &= sk == 0;
		}
		ok(tgood, "time decodes to the values given, NaN when skipped");
		ok(ngood, "n decodes to the values given, 0 when skipped");
		ok(fgood, "flag decodes to the values given, false when skipped");
		ok(sgood, "skipped is true at the skipped frame only");
	}
	{
		shardpipe_reader *r;
		shardpipe_array_info info = { 0 };
		uint16_t *got = test_xmalloc(FRAMES * fb);
		uint64_t st[3] = { 0, 0, 0 }, ct[3] = { FRAMES, NY, NX };

		memset(frames + SKIPPED * fb / 2, 0, fb);
		ok(shardpipe_reader_open(&r, root) == SHARDPIPE_OK &&
		   shardpipe_reader_info(r, &info) == SHARDPIPE_OK &&
		   shardpipe_reader_read(r, st, ct, got, FRAMES * fb) ==
			   SHARDPIPE_OK && memcmp(got, frames, FRAMES * fb) == 0,
		   "the image reads back its frames, the skipped one zero");
		shardpipe_reader_close(r);
		free(got);
	}
	{
		char *attrs;
		size_t n;
		char *zj;

		if (asprintf(&zj, "%s/zarr.json", root) < 0)
			bail("out of memory");
		attrs = test_slurp(zj, &n);
		ok(attrs != NULL && strstr(attrs, "\"frame_meta\"") != NULL &&
		   strstr(attrs, "\"skipped\": \"skipped\"") != NULL,
		   "the image's attributes list the fields");
		free(attrs);
		free(zj);
	}
	{
		/* Continued, closed with nothing appended: the same
		 * files (t/reopen-frame-meta continues it further). */
		shardpipe_stream *r2 = NULL;
		char *copy, *cmd;
		int files = 0, same;

		if (asprintf(&copy, "%s/copy.zarr", tmp) < 0 ||
		    asprintf(&cmd, "cp -a '%s' '%s'", root, copy) < 0)
			bail("out of memory");
		if (system(cmd) != 0)
			bail("cannot copy %s", root);
		free(cmd);
		rc = shardpipe_stream_reopen(&r2, root, NULL);
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_close(r2);
		same = rc == SHARDPIPE_OK && test_same_tree(copy, root, &files);
		if (!ok(same,
			"reopen of an image with frame metadata, closed: the "
			"same files (%d)", files))
			diag("got %d: %s", rc, shardpipe_last_error_message());
		test_rmtree(copy);
		free(copy);
	}
	{
		/* An array continued with fields given: refused first. */
		shardpipe_stream *r2 = (shardpipe_stream *)1;
		char *plain;

		if (asprintf(&plain, "%s/plain.zarr", tmp) < 0)
			bail("out of memory");
		image_desc(&d);
		d.ngff = 0;
		d.n_frame_fields = 0;
		if (shardpipe_stream_open(&s, plain, &d) != SHARDPIPE_OK ||
		    shardpipe_stream_close(s) != SHARDPIPE_OK)
			bail("plain: %s", shardpipe_last_error_message());
		image_desc(&d);
		d.ngff = 0;
		rc = shardpipe_stream_reopen(&r2, plain, &d);
		if (!ok(rc == SHARDPIPE_ERR_INVALID_ARGUMENT && r2 == NULL &&
			strstr(shardpipe_last_error_message(), "frame field 0 "
			       "\"time\": the store has 0 field(s)"),
			"reopen of an array given frame fields: refused"))
			diag("got %d: %s", rc, shardpipe_last_error_message());
		free(plain);
	}
	/* Refusals, nothing written (each two tests). */
	{
		shardpipe_frame_field bad[2] = { { "time",
						   SHARDPIPE_DTYPE_FLOAT64 } };
		char *t2 = test_tmpdir("frame-meta-refused");

		image_desc(&d);
		d.ngff = 0;
		test_refused(t2, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "frame metadata needs an image",
			     "fields on a plain array");
		image_desc(&d);
		d.frame_fields = bad;
		d.n_frame_fields = 1;
		bad[0].dtype = SHARDPIPE_DTYPE_FLOAT32;
		test_refused(t2, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "float64, int64 or bool", "a float32 field");
		bad[0] = (shardpipe_frame_field){ "skipped",
						  SHARDPIPE_DTYPE_BOOL };
		test_refused(t2, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "the field the library adds",
			     "a field named skipped");
		bad[0] = (shardpipe_frame_field){ "12", SHARDPIPE_DTYPE_INT64 };
		test_refused(t2, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "digits only", "a field named like a level");
		bad[0] = (shardpipe_frame_field){ "a/b", SHARDPIPE_DTYPE_INT64 };
		test_refused(t2, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "is not one of", "a field named with a slash");
		bad[0] = (shardpipe_frame_field){ "z", SHARDPIPE_DTYPE_INT64 };
		bad[1] = bad[0];
		d.n_frame_fields = 2;
		test_refused(t2, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "are both \"z\"", "two fields of one name");
		test_rmtree(t2);
		free(t2);
	}
	test_rmtree(tmp);
	free(tmp);
	free(root);
	free(frames);
	return done_testing();
}
