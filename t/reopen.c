/*
 * reopen.c - continuing a store (doc/design.md §29).
 *
 * The reference is the same rows written in one run by the same backend:
 * a store written as rows 0..k-1, closed, then reopened and given rows
 * k..N-1, must hold the same files, byte for byte (zarr.json included),
 * for many k (0, inside a chunk, at a chunk edge, at a shard edge, all of
 * them), every codec and every usable backend; likewise a store whose
 * writer was killed with SIGKILL at a random moment, continued from what
 * its zarr.json advertises, with orphan shards planted past it.  The
 * library's reader then reads the input back.  Then what reopen refuses,
 * each with its code, its message and the store left as it was.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define N 40                 /* rows of the whole array */
#define ROW (10 * 12)        /* elements of one row */
#define ES 2                 /* uint16 */
#define ROW_BYTES (ROW * ES)

static uint8_t input[N * ROW_BYTES];
static char *tmp;

/* 40 x 10 x 12 uint16, chunks 3 x 4 x 5, 2 x 2 x 2 chunks a shard: a
 * shard row is 6 rows, and dims 1 and 2 end in partial chunks. */
static void desc_for(shardpipe_desc *d, const char *backend,
		     const char *codec, int index_start, uint64_t bound)
{
	static const uint64_t size[3] = { 0, 10, 12 }, chunk[3] = { 3, 4, 5 };

	shardpipe_desc_init(d);
	d->rank = 3;
	for (int k = 0; k < 3; k++) {
		d->dims[k].size = k == 0 ? bound : size[k];
		d->dims[k].chunk = chunk[k];
		d->dims[k].chunks_per_shard = 2;
	}
	d->dims[0].name = "t";
	d->dims[2].name = "x";
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->backend = backend;
	d->threads = 2;
	d->index_location = index_start ? SHARDPIPE_INDEX_START
					: SHARDPIPE_INDEX_END;
	if (shardpipe_desc_set_codec(d, codec) != SHARDPIPE_OK)
		bail("codec %s: %s", codec, shardpipe_last_error_message());
}

static char *path_of(const char *leaf)
{
	char *p;

	if (asprintf(&p, "%s/%s", tmp, leaf) < 0)
		bail("out of memory");
	return p;
}

/* Append rows [from, to) of the input in spans of random sizes. */
static int append_rows(shardpipe_stream *s, uint64_t from, uint64_t to,
		       uint64_t *rng)
{
	size_t at = (size_t)from * ROW_BYTES, end = (size_t)to * ROW_BYTES;

	while (at < end) {
		size_t n = 1 + (size_t)(test_rand(rng) % (3 * ROW_BYTES));
		int rc;

		if (n > end - at)
			n = end - at;
		rc = shardpipe_stream_append(s, input + at, n);
		if (rc != SHARDPIPE_OK) {
			diag("append at byte %zu: %s", at,
			     shardpipe_stream_message(s));
			return rc;
		}
		at += n;
	}
	return SHARDPIPE_OK;
}

/* The one-run reference: rows [0, N) into dir. */
static int write_whole(const char *dir, const shardpipe_desc *d,
		       uint64_t *rng)
{
	shardpipe_stream *s;
	int rc;

	test_rmtree(dir);
	rc = shardpipe_stream_open(&s, dir, d);
	if (rc != SHARDPIPE_OK) {
		diag("open %s: %s", dir, shardpipe_last_error_message());
		return rc;
	}
	rc = append_rows(s, 0, N, rng);
	if (shardpipe_stream_close(s) != SHARDPIPE_OK && rc == SHARDPIPE_OK) {
		diag("close: %s", shardpipe_last_error_message());
		rc = SHARDPIPE_ERR_IO;
	}
	return rc;
}

/* Continue dir with rows [from, N): desc `more` (NULL: the store's). */
static int continue_rows(const char *dir, const shardpipe_desc *more,
			 uint64_t from, uint64_t *rng)
{
	shardpipe_stream *s;
	shardpipe_stats st;
	int rc = shardpipe_stream_reopen(&s, dir, more);

	if (rc != SHARDPIPE_OK) {
		diag("reopen %s: %s", dir, shardpipe_last_error_message());
		return rc;
	}
	rc = append_rows(s, from, N, rng);
	shardpipe_stream_stats(s, &st);
	if (rc == SHARDPIPE_OK && st.bytes_in != (N - from) * ROW_BYTES) {
		diag("stats count %llu bytes in, the run appended %llu",
		     (unsigned long long)st.bytes_in,
		     (unsigned long long)(N - from) * ROW_BYTES);
		rc = SHARDPIPE_ERR_IO;
	}
	if (shardpipe_stream_close(s) != SHARDPIPE_OK && rc == SHARDPIPE_OK) {
		diag("close: %s", shardpipe_last_error_message());
		rc = SHARDPIPE_ERR_IO;
	}
	return rc;
}

/* Rows [0, k) into dir and close, unbounded. */
static int write_first(const char *dir, const shardpipe_desc *d, uint64_t k,
		       uint64_t *rng)
{
	shardpipe_desc u = *d;
	shardpipe_stream *s;
	int rc;

	u.dims[0].size = 0;
	test_rmtree(dir);
	rc = shardpipe_stream_open(&s, dir, &u);
	if (rc != SHARDPIPE_OK) {
		diag("open %s: %s", dir, shardpipe_last_error_message());
		return rc;
	}
	rc = append_rows(s, 0, k, rng);
	if (shardpipe_stream_close(s) != SHARDPIPE_OK && rc == SHARDPIPE_OK)
		rc = SHARDPIPE_ERR_IO;
	return rc;
}

/* ------------------------------------------------- close, then continue */

static void closed_matrix(const char *backend, const char *const *codecs,
			  size_t ncodecs, int nlocs, const uint64_t *ks,
			  size_t nk, uint64_t *rng)
{
	char *a = path_of("whole.zarr"), *b = path_of("parts.zarr");

	for (size_t c = 0; c < ncodecs; c++)
		for (int loc = 0; loc < nlocs; loc++)
			for (int bounded = 0; bounded < 2; bounded++) {
				shardpipe_desc d, more;
				int rc;

				desc_for(&d, backend, codecs[c], loc,
					 bounded ? N : 0);
				rc = write_whole(a, &d, rng);
				if (rc != SHARDPIPE_OK) {
					ok(0, "%s %s: the one-run store",
					   backend, codecs[c]);
					continue;
				}
				for (size_t i = 0; i < nk; i++) {
					int files = 0, same;

					rc = write_first(b, &d, ks[i], rng);
					/* Unbounded: the store's fields, only
					 * the backend given; bounded: the
					 * whole description, bound N. */
					shardpipe_desc_init(&more);
					more.backend = backend;
					more.threads = 1 + (int)(i % 3);
					if (bounded && ks[i] == N)
						continue; /* full: refusals() */
					if (rc == SHARDPIPE_OK)
						rc = continue_rows(
							b, bounded ? &d : &more,
							ks[i], rng);
					same = rc == SHARDPIPE_OK &&
					       test_same_tree(a, b, &files) &&
					       test_reads_back(b, N, input,
							       sizeof(input));
					ok(same,
					   "%s %s index %s %s: rows 0..%llu, "
					   "close, reopen, the rest: the "
					   "one-run files (%d)",
					   backend, codecs[c],
					   loc ? "start" : "end",
					   bounded ? "bounded" : "unbounded",
					   (unsigned long long)ks[i], files);
				}
			}
	free(a);
	free(b);
}

/* -------------------------------------------------- killed, then continue */

/* The child: the whole array in random spans, slowly, until killed. */
/* from > 0: the store holds rows 0..from-1 already, and the child
 * continues it (a resume killed in its turn). */
static void child_write(const char *dir, const shardpipe_desc *d,
			uint64_t seed, uint64_t from)
{
	shardpipe_stream *s;
	uint64_t rng = seed;
	size_t at = (size_t)from * ROW_BYTES;

	if ((from > 0 ? shardpipe_stream_reopen(&s, dir, NULL)
		      : shardpipe_stream_open(&s, dir, d)) != SHARDPIPE_OK)
		_exit(2);
	while (at < sizeof(input)) {
		size_t n = 1 + (size_t)(test_rand(&rng) % (2 * ROW_BYTES));

		if (n > sizeof(input) - at)
			n = sizeof(input) - at;
		if (shardpipe_stream_append(s, input + at, n) != SHARDPIPE_OK)
			_exit(3);
		at += n;
		if (test_rand(&rng) % 4 == 0)
			shardpipe_stream_flush(s);
		usleep(200);
	}
	shardpipe_stream_close(s);
	_exit(0);
}

/* Orphans a killed writer might have left: a file at every shard key
 * from shard row `first` on, and one row past the array, holding
 * garbage. */
static int plant_orphans(const char *dir, uint64_t first, uint64_t *rng)
{
	int planted = 0;

	for (uint64_t i = first; i < test_cdiv(N, 6) + 2; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 2; k++) {
				char p[512];
				uint8_t junk[64];
				FILE *f;

				snprintf(p, sizeof(p), "%s/c", dir);
				mkdir(p, 0777);
				snprintf(p, sizeof(p), "%s/c/%llu", dir,
					 (unsigned long long)i);
				mkdir(p, 0777);
				snprintf(p, sizeof(p), "%s/c/%llu/%d", dir,
					 (unsigned long long)i, j);
				mkdir(p, 0777);
				snprintf(p, sizeof(p), "%s/c/%llu/%d/%d", dir,
					 (unsigned long long)i, j, k);
				test_fill(junk, sizeof(junk), 0, rng);
				f = fopen(p, "wb");
				if (f != NULL) {
					fwrite(junk, 1, sizeof(junk), f);
					planted += fclose(f) == 0;
				}
			}
	return planted;
}

static int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return 0;
	fputs(text, f);
	return fclose(f) == 0;
}

/* image: an OME-NGFF image of three levels (y and x halving; 2: t too),
 * each level with its orphans. */
static void killed_rounds(const char *codec, long rounds, int image,
			  int resumed, uint64_t *rng)
{
	char *a = path_of("whole-k.zarr"), *b = path_of("killed.zarr");
	char *note = path_of(image ? "killed.zarr/0/c/NOTES"
				   : "killed.zarr/c/NOTES");
	shardpipe_desc d;

	desc_for(&d, "cpu", codec, 0, 0);
	if (image) {
		d.dims[1].name = "y";
		d.downsample = 1u << 1 | 1u << 2 | (image == 2 ? 1u : 0u);
		d.max_levels = 3;
	}
	if (write_whole(a, &d, rng) != SHARDPIPE_OK)
		bail("the one-run store for %s", codec);
	for (long r = 0; r < rounds; r++) {
		uint64_t seed = test_rand(rng), rows = 0;
		shardpipe_desc got;
		int status, files = 0, planted, rc, same;
		pid_t pid;

		uint64_t first = resumed ? 1 + test_rand(rng) % (N - 1) : 0;

		test_rmtree(b);
		if (first > 0 && write_first(b, &d, first, rng) != SHARDPIPE_OK)
			bail("the %llu rows before the resume",
			     (unsigned long long)first);
		pid = fork();
		if (pid < 0)
			bail("fork: %s", strerror(errno));
		if (pid == 0)
			child_write(b, &d, seed, first);
		usleep((useconds_t)(2000 + test_rand(rng) % 60000));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		shardpipe_desc_init(&got);
		rc = shardpipe_desc_from_store(&got, b, &rows);
		if (rc != SHARDPIPE_OK) {
			/* Killed before its first zarr.json. */
			ok(1, "%s round %ld: killed before zarr.json (%s)",
			   codec, r, shardpipe_last_error_message());
			continue;
		}
		if (image) {
			char lv[600];

			planted = 0;
			for (int L = 0; L < 3; L++) {
				snprintf(lv, sizeof(lv), "%s/%d", b, L);
				planted += plant_orphans(lv, test_cdiv(rows, 6),
							 rng);
			}
		} else {
			planted = plant_orphans(b, test_cdiv(rows, 6), rng);
		}
		/* A file no writer of the array made, in its chunk tree. */
		test_plant_foreign(note);
		rc = continue_rows(b, NULL, rows, rng);
		if (!test_foreign_kept(note) || !test_child_clean(status))
			rc = SHARDPIPE_ERR_IO;
		same = rc == SHARDPIPE_OK && test_same_tree(a, b, &files) &&
		       test_reads_back(b, N, input, sizeof(input));
		ok(same, "%s%s round %ld: %s killed %s after %llu advertised "
		   "rows, %d orphans planted, continued: the one-run files "
		   "(%d), the foreign file kept", codec,
		   image == 2 ? " image halving t" : image ? " image" : "", r,
		   resumed ? "a resume after a close" : "a writer",
		   WIFSIGNALED(status) ? "by SIGKILL" : "(no: it had finished)",
		   (unsigned long long)rows, planted, files);
	}
	free(a);
	free(b);
	free(note);
}

/* ----------------------------------------------------------- pyramids */

/* An OME-NGFF image over t, y, x, y and x halving, three levels: every
 * level continued, the group's zarr.json too, the one run's files. */
static void pyramid_matrix(const char *backend, const char *codec,
			   int halve_t, const uint64_t *ks, size_t nk,
			   uint64_t *rng)
{
	char *a = path_of("img-whole.zarr"), *b = path_of("img-parts.zarr");
	shardpipe_desc d, more;

	desc_for(&d, backend, codec, 0, 0);
	d.dims[1].name = "y";
	/* With t halving too, level L's rows are blocks of 2^L of level
	 * 0's: the restart row is a multiple of 2^L shard rows. */
	d.downsample = 1u << 1 | 1u << 2 | (halve_t ? 1u : 0u);
	d.max_levels = 3;
	d.method = SHARDPIPE_METHOD_MEAN;
	d.unit[2] = "micrometer";
	d.scale[2] = 0.25;
	if (write_whole(a, &d, rng) != SHARDPIPE_OK) {
		ok(0, "%s %s: the one-run image", backend, codec);
		return;
	}
	for (size_t i = 0; i < nk; i++) {
		int rc, files = 0, same;

		rc = write_first(b, &d, ks[i], rng);
		shardpipe_desc_init(&more);
		more.backend = backend;
		if (rc == SHARDPIPE_OK)
			rc = continue_rows(b, &more, ks[i], rng);
		same = rc == SHARDPIPE_OK && test_same_tree(a, b, &files) &&
		       test_reads_back(b, N, input, sizeof(input));
		ok(same, "%s %s image of 3 levels%s: rows 0..%llu, close, "
		   "reopen the image, the rest: the one-run files (%d)",
		   backend, codec, halve_t ? ", t halving" : "",
		   (unsigned long long)ks[i], files);
	}
	free(a);
	free(b);
}

/* ---------------------------------------------------------- refusals */

static int holds(const char *msg, const char *word)
{
	if (strstr(msg, word) != NULL)
		return 1;
	diag("message \"%s\" lacks \"%s\"", msg, word);
	return 0;
}

static void refused(const char *dir, const shardpipe_desc *d, int code,
		    const char *w1, const char *w2, const char *what)
{
	shardpipe_stream *s = (shardpipe_stream *)1;
	int rc = shardpipe_stream_reopen(&s, dir, d);
	const char *m = shardpipe_last_error_message();

	if (rc == SHARDPIPE_OK)
		shardpipe_stream_close(s);
	ok(rc == code && s == NULL && holds(m, w1) &&
		   (w2 == NULL || holds(m, w2)),
	   "%s: refused with %s (got %s): %s", what, shardpipe_strerror(code),
	   shardpipe_strerror(rc), m);
}

static void copy_tree(const char *from, const char *to)
{
	char *cmd;

	if (asprintf(&cmd, "rm -rf '%s' && cp -a '%s' '%s'", to, from, to) < 0 ||
	    system(cmd) != 0)
		bail("cannot copy %s", from);
	free(cmd);
}

/* Flip one byte of the file at off from its end. */
static void damage(const char *path, long from_end)
{
	FILE *f = fopen(path, "r+b");
	int c;

	if (f == NULL || fseek(f, -from_end, SEEK_END) != 0)
		bail("cannot damage %s", path);
	c = fgetc(f);
	fseek(f, -from_end, SEEK_END);
	fputc(c ^ 0x5a, f);
	fclose(f);
}

static void refusals(uint64_t *rng)
{
	char *st = path_of("st.zarr"), *kept = path_of("kept.zarr");
	char *none = path_of("none"), *shard = path_of("st.zarr/c/2/0/0");
	char *meta;
	shardpipe_desc d, g;
	shardpipe_stream *s, *s2;
	int rc, files;

	desc_for(&d, "cpu", "zstd:3", 0, 0);
	mkdir(none, 0777);
	refused(none, NULL, SHARDPIPE_ERR_PATH, none, "no zarr.json",
		"a directory without a store");
	test_rmtree(none);
	refused(none, NULL, SHARDPIPE_ERR_PATH, "no zarr.json", NULL,
		"a path that does not exist");

	/* 13 rows: shard row 2 holds row 12 only. */
	if (write_first(st, &d, 13, rng) != SHARDPIPE_OK)
		bail("the store to refuse");
	copy_tree(st, kept);
	g = d;
	g.dtype = SHARDPIPE_DTYPE_INT16;
	refused(st, &g, SHARDPIPE_ERR_INVALID_ARGUMENT, "dtype",
		"\"uint16\"", "another dtype");
	g = d;
	g.dims[1].chunk = 5;
	refused(st, &g, SHARDPIPE_ERR_INVALID_ARGUMENT, "dim 1 chunk",
		"the store has 4, the description 5", "another chunk");
	g = d;
	g.level = 4;
	refused(st, &g, SHARDPIPE_ERR_INVALID_ARGUMENT, "codec level",
		"the store has 3", "another level");
	g = d;
	g.dims[2].name = "y";
	refused(st, &g, SHARDPIPE_ERR_INVALID_ARGUMENT, "dim 2 name",
		"\"x\"", "another name");
	g = d;
	g.fill_value[0] = 7;
	refused(st, &g, SHARDPIPE_ERR_INVALID_ARGUMENT, "fill value",
		"0x0007", "another fill value");
	g = d;
	g.dims[0].size = 13;
	refused(st, &g, SHARDPIPE_ERR_BEYOND_END, "holds 13 rows", NULL,
		"a bound the store has reached");
	g = d;
	g.overwrite = 1;
	refused(st, &g, SHARDPIPE_ERR_INVALID_ARGUMENT, "overwrite", NULL,
		"overwrite with reopen");
	g = d;
	g.downsample = 6;
	refused(st, &g, SHARDPIPE_ERR_UNSUPPORTED, "pyramid", NULL,
		"a pyramid");
	rc = test_same_tree(st, kept, &files);
	ok(rc, "the refused store is as it was (%d files)", files);

	/* One writer at a time, fresh or continuing. */
	rc = shardpipe_stream_reopen(&s, st, NULL);
	ok(rc == SHARDPIPE_OK, "reopened: %s",
	   rc ? shardpipe_last_error_message() : "");
	if (rc == SHARDPIPE_OK) {
		refused(st, NULL, SHARDPIPE_ERR_BUSY, "another stream", NULL,
			"a second reopen while the first writes");
		g = d;
		g.overwrite = 1;
		rc = shardpipe_stream_open(&s2, st, &g);
		ok(rc == SHARDPIPE_ERR_BUSY && s2 == NULL,
		   "an overwrite while it is continued: %s (%s)",
		   shardpipe_strerror(rc), shardpipe_last_error_message());
		if (rc == SHARDPIPE_OK)
			shardpipe_stream_close(s2);
		shardpipe_stream_close(s);
	}
	rc = test_same_tree(st, kept, &files);
	ok(rc, "reopened and closed with nothing appended: the same files "
	   "(%d)", files);
	rc = shardpipe_stream_open(&s, none, &d);
	if (rc == SHARDPIPE_OK) {
		refused(none, NULL, SHARDPIPE_ERR_BUSY, "another stream", NULL,
			"a reopen while a fresh stream writes");
		shardpipe_stream_close(s);
	}

	/* A damaged shard in the row read back; then in the last whole
	 * row when there is no partial one. */
	damage(shard, 2);
	refused(st, NULL, SHARDPIPE_ERR_CORRUPT, "c/2/0/0", NULL,
		"the last shard row's index CRC damaged");
	/* Asked to, it drops that row and continues after row 12: the
	 * rest appended from there gives the one run's files. */
	{
		char *whole = path_of("trunc-whole.zarr");
		int same;

		g = d;
		g.truncate_to_advertised = 1;
		rc = write_whole(whole, &d, rng);
		if (rc == SHARDPIPE_OK)
			rc = continue_rows(st, &g, 12, rng);
		same = rc == SHARDPIPE_OK && test_same_tree(whole, st, &files);
		ok(same, "truncate_to_advertised: the damaged shard row "
		   "dropped, rows 12.. appended: the one run's files (%d)",
		   files);
		test_rmtree(whole);
		free(whole);
	}
	copy_tree(kept, st);
	if (truncate(shard, 10) != 0)
		bail("truncate: %s", strerror(errno));
	copy_tree(st, kept);
	rc = shardpipe_stream_reopen(&s, st, NULL);
	ok(rc == SHARDPIPE_ERR_FORMAT || rc == SHARDPIPE_ERR_CORRUPT,
	   "a truncated shard in the last row: %s (%s)",
	   shardpipe_strerror(rc), shardpipe_last_error_message());
	if (rc == SHARDPIPE_OK)
		shardpipe_stream_close(s);
	ok(holds(shardpipe_last_error_message(), "c/2/0/0") &&
		   test_same_tree(st, kept, &files),
	   "it names the shard, and the store is as it was");
	if (write_first(st, &d, 12, rng) != SHARDPIPE_OK)
		bail("the store of 12 rows");
	{
		char *c110 = path_of("st.zarr/c/1/1/0");

		damage(c110, 20);
		free(c110);
	}
	copy_tree(st, kept);
	rc = shardpipe_stream_reopen(&s, st, NULL);
	ok(rc == SHARDPIPE_ERR_CORRUPT || rc == SHARDPIPE_ERR_FORMAT,
	   "12 rows, a chunk of c/1/1/0 damaged: %s (%s)",
	   shardpipe_strerror(rc), shardpipe_last_error_message());
	if (rc == SHARDPIPE_OK)
		shardpipe_stream_close(s);
	ok(test_same_tree(st, kept, &files), "the store is as it was");

	/* A level of an image alone; an image whose dim 0 halves. */
	{
		char *img = path_of("img.zarr"), *lvl = path_of("img.zarr/0");

		g = d;
		g.dims[1].name = "y";
		g.downsample = 1u << 1 | 1u << 2;
		g.max_levels = 2;
		if (write_first(img, &g, 8, rng) != SHARDPIPE_OK)
			bail("the image to refuse");
		refused(lvl, NULL, SHARDPIPE_ERR_UNSUPPORTED,
			"a level of the OME-NGFF image", NULL,
			"a level of an image alone");
		g.downsample |= 1u;
		if (write_first(img, &g, 8, rng) != SHARDPIPE_OK)
			bail("the image halving t");
		g.dims[0].size = 30;
		refused(img, &g, SHARDPIPE_ERR_UNSUPPORTED, "unbounded only",
			NULL, "a bound on an image whose dim 0 halves");
		free(img);
		free(lvl);
	}

	/* Layouts shardpipe does not write. */
	meta = path_of("st.zarr/zarr.json");
	test_rmtree(st);
	mkdir(st, 0777);
	write_file(meta,
		   "{\"zarr_format\": 3, \"node_type\": \"array\", "
		   "\"shape\": [4, 4], \"data_type\": \"uint8\", "
		   "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
		   "{\"chunk_shape\": [2, 2]}}, \"chunk_key_encoding\": "
		   "{\"name\": \"default\"}, \"fill_value\": 0, \"codecs\": "
		   "[{\"name\": \"bytes\"}]}");
	refused(st, NULL, SHARDPIPE_ERR_UNSUPPORTED, "not sharded", NULL,
		"an unsharded array");
	write_file(meta,
		   "{\"zarr_format\": 3, \"node_type\": \"group\"}");
	refused(st, NULL, SHARDPIPE_ERR_PATH, "group", NULL, "a group");
	free(meta);
	free(st);
	free(kept);
	free(none);
	free(shard);
}

/* Attributes: the store's kept as written, digits and all, the
 * description's set over them; the one-run store with both is the same. */
static void attributes(uint64_t *rng)
{
	static const shardpipe_attribute first[] = {
		{ "gain", "1.50" }, { "who", "\"op\"" },
	};
	static const shardpipe_attribute later[] = {
		{ "who", "\"night shift\"" }, { "resumed", "true" },
	};
	static const shardpipe_attribute all[] = {
		{ "gain", "1.50" }, { "who", "\"night shift\"" },
		{ "resumed", "true" },
	};
	char *a = path_of("attrs-whole.zarr"), *b = path_of("attrs.zarr");
	shardpipe_desc d, more;
	int files = 0, rc;

	desc_for(&d, "cpu", "zstd:1", 0, 0);
	d.attributes = all;
	d.nattributes = 3;
	rc = write_whole(a, &d, rng);
	d.attributes = first;
	d.nattributes = 2;
	if (rc == SHARDPIPE_OK)
		rc = write_first(b, &d, 8, rng);
	shardpipe_desc_init(&more);
	more.attributes = later;
	more.nattributes = 2;
	if (rc == SHARDPIPE_OK)
		rc = continue_rows(b, &more, 8, rng);
	rc = rc == SHARDPIPE_OK && test_same_tree(a, b, &files);
	ok(rc, "attributes kept and set over: the files of one run (%d)", files);
	free(a);
	free(b);
}

int main(void)
{
	static const char *const cpu_codecs[] = {
		"none", "zstd:1", "zstd:5:checksum", "gzip:1",
		"blosc:zstd:1:shuffle", "blosc:lz4:3:bitshuffle",
	};
	static const char *const kernel_codecs[] = { "zstd:1", "gzip:1" };
	static const uint64_t ks[] = { 0, 1, 3, 6, 8, 13, 24, 39, 40 };
	static const uint64_t few[] = { 0, 5, 12, 31 };
	static const char *const kernels[] = { "reference", "opencl" };
	uint64_t seed = test_seed(), rng = seed;
	size_t ncodecs = sizeof(cpu_codecs) / sizeof(*cpu_codecs);
	shardpipe_desc probe;
	shardpipe_stream *s;
	char why[256], *probe_dir;

	plan_lazy();
	tmp = test_tmpdir("reopen");
	/* Smooth rows with holes of zeros: some chunks and shards are
	 * empty (the fill value), the rest compress. */
	test_fill(input, sizeof(input), 3, &rng);
	for (size_t r = 0; r < N; r++)
		if (r % 7 == 2 || r % 11 == 5)
			memset(input + r * ROW_BYTES, 0, ROW_BYTES);

	/* blosc only when this build has c-blosc. */
	desc_for(&probe, "cpu", "blosc:zstd:1:shuffle", 0, 0);
	probe_dir = path_of("probe.zarr");
	if (shardpipe_stream_open(&s, probe_dir, &probe) == SHARDPIPE_OK) {
		shardpipe_stream_close(s);
	} else {
		diag("no c-blosc in this build (%s): blosc cases left out",
		     shardpipe_last_error_message());
		ncodecs -= 2;
	}
	test_rmtree(probe_dir);
	free(probe_dir);
	closed_matrix("cpu", cpu_codecs, ncodecs, 2, ks,
		      sizeof(ks) / sizeof(*ks), &rng);
	for (size_t b = 0; b < 2; b++) {
		if (!test_backend_usable(kernels[b], why, sizeof(why))) {
			skip(1, "%s: %s", kernels[b], why);
			continue;
		}
		/* Each stream opens a device context: fewer cases. */
		closed_matrix(kernels[b], kernel_codecs, 2, 1, few,
			      sizeof(few) / sizeof(*few), &rng);
	}
	pyramid_matrix("cpu", "zstd:1", 0, ks, sizeof(ks) / sizeof(*ks), &rng);
	pyramid_matrix("cpu", "zstd:1", 1, ks, sizeof(ks) / sizeof(*ks), &rng);
	pyramid_matrix("cpu", "none", 0, few, sizeof(few) / sizeof(*few), &rng);
	if (test_backend_usable("reference", why, sizeof(why)))
		pyramid_matrix("reference", "zstd:1", 1, few,
			       sizeof(few) / sizeof(*few), &rng);
	killed_rounds("zstd:1", test_sized("killed rounds", 8, 3), 0, 0, &rng);
	killed_rounds("gzip:1", test_sized("killed rounds", 4, 2), 0, 0, &rng);
	killed_rounds("zstd:1", test_sized("killed rounds", 4, 2), 1, 0, &rng);
	killed_rounds("zstd:1", test_sized("killed rounds", 4, 2), 2, 0, &rng);
	/* A resume killed in its turn, then resumed again. */
	killed_rounds("zstd:1", test_sized("killed rounds", 6, 2), 0, 1, &rng);
	killed_rounds("zstd:1", test_sized("killed rounds", 3, 1), 2, 1, &rng);
	attributes(&rng);
	refusals(&rng);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
