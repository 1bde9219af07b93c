/*
 * reopen-frame-meta.c - continuing an OME-NGFF image that carries
 * per-frame metadata (doc/design.md §28.9, §29).
 *
 * The reference is the same frames and values written in one run: an
 * image written as frames 0..k-1 (a skipped frame among them), closed,
 * reopened and given frames k..N-1 must hold the same files, byte for
 * byte, the field arrays included, for every k, unbounded and bounded,
 * as one level and as a pyramid (with and without dim 0 halving); so must
 * one whose writer was killed with SIGKILL at a random moment, continued
 * from what level 0's zarr.json advertises, with orphan chunks planted in
 * every field past it and a foreign file in a field's chunk tree.  Then
 * what the reopen refuses (a field of another dtype, an extra or a
 * missing one, one renamed, a field's chunk gone), each with its code, a
 * message naming the field or the chunk, and the store as it was.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define N 26                 /* frames of the whole image */
#define NY 8
#define NX 6
#define ROW_BYTES (NY * NX * 2)
#define SR 4                 /* level 0's shard row: chunk 2, 2 a shard */
#define NF 3

static const shardpipe_frame_field fields[NF] = {
	{ "time", SHARDPIPE_DTYPE_FLOAT64 },
	{ "n", SHARDPIPE_DTYPE_INT64 },
	{ "flag", SHARDPIPE_DTYPE_BOOL },
};
static const char *const field_dirs[NF + 1] = { "time", "n", "flag",
						"skipped" };

static uint8_t input[N * ROW_BYTES];
static shardpipe_frame_value vals[N][NF];
static char *tmp;

/* Frames a skip completes instead of an append: their rows are the fill
 * value (0) and "skipped" true. */
static int skipped(uint64_t r)
{
	return r == 5 || r == 17;
}

/* kind 0: one level; 1: y and x halving, 3 levels; 2: t too. */
static void image_desc(shardpipe_desc *d, int kind, uint64_t bound)
{
	shardpipe_desc_init(d);
	d->rank = 3;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->backend = "cpu";
	d->threads = 2;
	d->codec = SHARDPIPE_CODEC_ZSTD;
	d->level = 1;
	d->ngff = 1;
	d->dims[0] = (shardpipe_dim){ .size = bound, .chunk = 2,
				      .chunks_per_shard = 2, .name = "t" };
	d->dims[1] = (shardpipe_dim){ .size = NY, .chunk = 4,
				      .chunks_per_shard = 2, .name = "y" };
	d->dims[2] = (shardpipe_dim){ .size = NX, .chunk = 3,
				      .chunks_per_shard = 2, .name = "x" };
	if (kind > 0) {
		d->downsample = 1u << 1 | 1u << 2 | (kind == 2 ? 1u : 0u);
		d->max_levels = 3;
	}
	d->frame_fields = fields;
	d->n_frame_fields = NF;
}

static char *path_of(const char *leaf)
{
	char *p;

	if (asprintf(&p, "%s/%s", tmp, leaf) < 0)
		bail("out of memory");
	return p;
}

/* Frames [from, to): appends of 1..3 frames with their values, a skip at
 * each skipped frame; a flush now and then when flushes. */
static int frames(shardpipe_stream *s, uint64_t from, uint64_t to,
		  uint64_t *rng, int flushes)
{
	uint64_t r = from;

	while (r < to) {
		uint64_t k = 1 + test_rand(rng) % 3;
		int rc;

		if (skipped(r)) {
			rc = shardpipe_stream_skip(s, ROW_BYTES);
			k = 1;
		} else {
			uint64_t j = 1;

			while (j < k && r + j < to && !skipped(r + j))
				j++;
			k = j;
			rc = shardpipe_stream_append_meta(
				s, input + r * ROW_BYTES, k * ROW_BYTES,
				vals[r]);
		}
		if (rc != SHARDPIPE_OK) {
			diag("frame %llu: %s", (unsigned long long)r,
			     shardpipe_stream_message(s));
			return rc;
		}
		r += k;
		if (flushes && test_rand(rng) % 4 == 0)
			shardpipe_stream_flush(s);
	}
	return SHARDPIPE_OK;
}

/* Open (or reopen, d then the description given to it) dir, frames
 * [from, to), close. */
static int run(const char *dir, const shardpipe_desc *d, int reopen,
	       uint64_t from, uint64_t to, uint64_t *rng)
{
	shardpipe_stream *s;
	int rc;

	if (!reopen)
		test_rmtree(dir);
	rc = reopen ? shardpipe_stream_reopen(&s, dir, d)
		    : shardpipe_stream_open(&s, dir, d);
	if (rc != SHARDPIPE_OK) {
		diag("%s %s: %s", reopen ? "reopen" : "open", dir,
		     shardpipe_last_error_message());
		return rc;
	}
	rc = frames(s, from, to, rng, 0);
	if (shardpipe_stream_close(s) != SHARDPIPE_OK && rc == SHARDPIPE_OK) {
		diag("close: %s", shardpipe_last_error_message());
		rc = SHARDPIPE_ERR_IO;
	}
	return rc;
}

static void copy_tree(const char *from, const char *to)
{
	char *cmd;

	if (asprintf(&cmd, "rm -rf '%s' && cp -a '%s' '%s'", to, from, to) < 0 ||
	    system(cmd) != 0)
		bail("cannot copy %s", from);
	free(cmd);
}

/* ------------------------------------------------- close, then continue */

static void closed(int kind, int bounded, uint64_t *rng)
{
	static const char *const kinds[] = { "image", "pyramid",
					     "pyramid halving t" };
	char *a = path_of("whole.zarr"), *b = path_of("parts.zarr");
	shardpipe_desc d, first, more;
	int good = 1, tried = 0;

	image_desc(&d, kind, bounded ? N : 0);
	if (run(a, &d, 0, 0, N, rng) != SHARDPIPE_OK)
		bail("the one-run image");
	for (uint64_t k = 0; k < N; k++) {
		int rc, files = 0;

		/* y and x halving alone: the edges of a shard row and of
		 * a chunk suffice (t halving, kind 2, takes every k). */
		if (kind == 1 && k % SR != 0 && k % SR != SR - 1)
			continue;
		first = d;
		first.dims[0].size = 0;
		/* The fields given every other time, else the store's. */
		shardpipe_desc_init(&more);
		more.backend = "cpu";
		more.threads = 1 + (int)(k % 3);
		if (k % 2) {
			more.frame_fields = fields;
			more.n_frame_fields = NF;
		}
		if (bounded)
			more = d;
		rc = run(b, &first, 0, 0, k, rng);
		if (rc == SHARDPIPE_OK)
			rc = run(b, &more, 1, k, N, rng);
		tried++;
		if (rc != SHARDPIPE_OK || !test_same_tree(a, b, &files) ||
		    !test_reads_back(b, N, input, sizeof(input))) {
			diag("k %llu: not the one-run files",
			     (unsigned long long)k);
			good = 0;
		}
	}
	ok(good, "%s %s with frame fields: frames 0..k-1, close, reopen, "
	   "the rest, for %d k in 0..%d: the one-run files, fields "
	   "included", kinds[kind], bounded ? "bounded" : "unbounded", tried,
	   N - 1);
	free(a);
	free(b);
}

/* -------------------------------------------------- killed, then continue */

static void child_write(const char *dir, const shardpipe_desc *d,
			uint64_t seed)
{
	shardpipe_stream *s;
	uint64_t rng = seed;
	uint64_t r = 0;

	if (shardpipe_stream_open(&s, dir, d) != SHARDPIPE_OK)
		_exit(2);
	while (r < N) {
		if (frames(s, r, r + 1, &rng, 1) != SHARDPIPE_OK)
			_exit(3);
		r++;
		usleep(1500);
	}
	shardpipe_stream_close(s);
	_exit(0);
}

/* Garbage at every chunk key of every field from chunk `first` on, one
 * past the image's, and a file no writer made in a field's chunk tree. */
static int plant(const char *dir, uint64_t first, uint64_t *rng)
{
	int planted = 0;
	char p[600];

	for (int i = 0; i <= NF; i++) {
		snprintf(p, sizeof(p), "%s/%s/c", dir, field_dirs[i]);
		mkdir(p, 0777);
		for (uint64_t c = first; c < test_cdiv(N, SR) + 2; c++) {
			uint8_t junk[24];
			FILE *f;

			snprintf(p, sizeof(p), "%s/%s/c/%llu", dir,
				 field_dirs[i], (unsigned long long)c);
			test_fill(junk, sizeof(junk), 0, rng);
			f = fopen(p, "wb");
			if (f != NULL) {
				fwrite(junk, 1, sizeof(junk), f);
				planted += fclose(f) == 0;
			}
		}
	}
	return planted;
}

static void killed(int kind, long rounds, uint64_t *rng)
{
	char *a = path_of("whole-k.zarr"), *b = path_of("killed.zarr");
	char *note = path_of("killed.zarr/time/c/NOTES");
	shardpipe_desc d;

	image_desc(&d, kind, 0);
	if (run(a, &d, 0, 0, N, rng) != SHARDPIPE_OK)
		bail("the one-run image");
	for (long r = 0; r < rounds; r++) {
		uint64_t seed = test_rand(rng), rows = 0;
		shardpipe_desc got;
		int status, files = 0, planted, rc, same;
		pid_t pid;

		test_rmtree(b);
		pid = fork();
		if (pid < 0)
			bail("fork: %s", strerror(errno));
		if (pid == 0)
			child_write(b, &d, seed);
		usleep((useconds_t)(10000 + test_rand(rng) % 60000));
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		shardpipe_desc_init(&got);
		rc = shardpipe_desc_from_store(&got, b, &rows);
		if (rc != SHARDPIPE_OK) {
			ok(1, "round %ld: killed before zarr.json (%s)", r,
			   shardpipe_last_error_message());
			continue;
		}
		planted = plant(b, test_cdiv(rows, SR), rng);
		test_plant_foreign(note);
		rc = run(b, NULL, 1, rows, N, rng);
		if (!test_foreign_kept(note) || !test_child_clean(status))
			rc = SHARDPIPE_ERR_IO;
		same = rc == SHARDPIPE_OK && test_same_tree(a, b, &files) &&
		       test_reads_back(b, N, input, sizeof(input)) &&
		       got.n_frame_fields == NF &&
		       strcmp(got.frame_fields[2].name, "flag") == 0 &&
		       got.frame_fields[2].dtype == SHARDPIPE_DTYPE_BOOL;
		ok(same, "%s round %ld: a writer %s after %llu advertised "
		   "frames, %d field orphans planted, continued: the one-run "
		   "files (%d), the foreign file kept",
		   kind ? "pyramid" : "image", r,
		   WIFSIGNALED(status) ? "killed by SIGKILL"
				       : "(not killed: it had finished)",
		   (unsigned long long)rows, planted, files);
	}
	free(a);
	free(b);
	free(note);
}

/* ---------------------------------------------------------- refusals */

static void refused(const char *dir, const char *copy,
		    const shardpipe_desc *d, int code, const char *word,
		    const char *what)
{
	shardpipe_stream *s = (shardpipe_stream *)1;
	int rc = shardpipe_stream_reopen(&s, dir, d), files = 0, same;
	const char *m = shardpipe_last_error_message();

	same = test_same_tree(dir, copy, &files);
	if (!ok(rc == code && s == NULL && strstr(m, word) != NULL && same,
		"%s: refused with %s, the store as it was (%d files): %s",
		what, shardpipe_strerror(code), files, m))
		diag("got %s; wanted the message to hold \"%s\"",
		     shardpipe_strerror(rc), word);
}

/* A writer killed between level 0's zarr.json and a field's leaves the
 * field advertising fewer rows: its chunks hold them all (§28.9). */
static void lagging(uint64_t *rng)
{
	char *a = path_of("lag-whole.zarr"), *b = path_of("lag.zarr");
	char *zj = path_of("lag.zarr/time/zarr.json"), *text, *at;
	shardpipe_desc d;
	int files = 0, same, rc;
	size_t n;
	FILE *f;

	image_desc(&d, 0, 0);
	if (run(a, &d, 0, 0, N, rng) != SHARDPIPE_OK ||
	    run(b, &d, 0, 0, 10, rng) != SHARDPIPE_OK)
		bail("the lagging image");
	text = test_slurp(zj, &n);
	at = text != NULL ? strstr(text, "\"shape\": [10]") : NULL;
	if (at == NULL)
		bail("%s advertises no 10 rows", zj);
	memcpy(at, "\"shape\": [ 8]", 13);
	f = fopen(zj, "w");
	if (f == NULL || fwrite(text, 1, n, f) != n || fclose(f) != 0)
		bail("cannot write %s", zj);
	rc = run(b, NULL, 1, 10, N, rng);
	same = rc == SHARDPIPE_OK && test_same_tree(a, b, &files);
	ok(same, "a field advertising 8 rows, the image 10, continued: the "
	   "one-run files (%d)", files);
	free(text);
	free(a);
	free(b);
	free(zj);
}

/* Byte r of field dir's chunks (w bytes a row, little-endian), decoded
 * here; 0 when unreadable. */
static int field_row(const char *root, const char *dir, uint64_t r,
		     unsigned w, uint64_t *out)
{
	char *path;
	uint8_t *buf;
	size_t n;

	if (asprintf(&path, "%s/%s/c/%llu", root, dir,
		     (unsigned long long)(r / SR)) < 0)
		bail("out of memory");
	buf = test_slurp(path, &n);
	free(path);
	if (buf == NULL || n != SR * w) {
		free(buf);
		return 0;
	}
	*out = 0;
	for (unsigned b = 0; b < w; b++)
		*out |= (uint64_t)buf[(r % SR) * w + b] << (8 * b);
	free(buf);
	return 1;
}

/* A bounded image closed short advertises all of its rows (§14.2): the
 * rows never appended are the fill value, and "skipped" says so. */
static void closed_short(uint64_t *rng)
{
	char *a = path_of("short.zarr");
	shardpipe_desc d;
	int good = 1;

	image_desc(&d, 0, N);
	if (run(a, &d, 0, 0, 10, rng) != SHARDPIPE_OK)
		bail("the image closed short");
	for (uint64_t r = 0; r < N; r++) {
		uint64_t sk = 2, t = 0, n = 1;
		double x = 0;

		good &= field_row(a, "skipped", r, 1, &sk) &&
			field_row(a, "time", r, 8, &t) &&
			field_row(a, "n", r, 8, &n);
		memcpy(&x, &t, 8);
		if (r >= 10 || skipped(r))
			good &= sk == 1 && x != x && n == 0;
		else
			good &= sk == 0 &&
				memcmp(&t, &vals[r][0].f64, 8) == 0 &&
				n == (uint64_t)vals[r][1].i64;
	}
	ok(good, "a bounded image of %d frames closed after 10: rows 10.. "
	   "read skipped true, NaN and 0, the rows before as given", N);
	free(a);
}

static void refusals(uint64_t *rng)
{
	char *a = path_of("ref.zarr"), *c = path_of("ref-copy.zarr");
	char *chunk = path_of("ref.zarr/n/c/2");
	shardpipe_frame_field f[NF + 1];
	shardpipe_desc d, g;

	image_desc(&d, 0, 0);
	if (run(a, &d, 0, 0, 10, rng) != SHARDPIPE_OK)
		bail("the image to refuse");
	copy_tree(a, c);
	shardpipe_desc_init(&g);
	memcpy(f, fields, sizeof(fields));
	g.frame_fields = f;
	g.n_frame_fields = NF;
	f[1].dtype = SHARDPIPE_DTYPE_FLOAT64;
	refused(a, c, &g, SHARDPIPE_ERR_INVALID_ARGUMENT,
		"frame field \"n\": the store has dtype int64, the "
		"description float64", "a field of another dtype");
	memcpy(f, fields, sizeof(fields));
	f[NF] = (shardpipe_frame_field){ "z", SHARDPIPE_DTYPE_INT64 };
	g.n_frame_fields = NF + 1;
	refused(a, c, &g, SHARDPIPE_ERR_INVALID_ARGUMENT,
		"frame field 3 \"z\": the store has 3 field(s), and not this "
		"one", "an extra field");
	g.n_frame_fields = NF - 1;
	refused(a, c, &g, SHARDPIPE_ERR_INVALID_ARGUMENT,
		"frame field 2 \"flag\": the store has it, the description "
		"does not", "a missing field");
	g.n_frame_fields = NF;
	f[0].name = "stamp";
	refused(a, c, &g, SHARDPIPE_ERR_INVALID_ARGUMENT,
		"frame field 0: the store has \"time\", the description "
		"\"stamp\"", "a field renamed");
	/* Rows 8..9 are read back from chunk 2 of every field. */
	unlink(chunk);
	copy_tree(a, c);
	refused(a, c, NULL, SHARDPIPE_ERR_FORMAT, "n/c/2: missing",
		"a field's chunk of the rows read back gone");
	test_rmtree(a);
	test_rmtree(c);
	free(a);
	free(c);
	free(chunk);
}

int main(void)
{
	uint64_t rng = test_seed();
	long rounds = 6;

	tmp = test_tmpdir("reopen-frame-meta");
	test_fill(input, sizeof(input), 1, &rng);
	for (int r = 0; r < N; r++) {
		uint64_t x = test_rand(&rng);

		vals[r][0].f64 = (double)(int64_t)x / 7.0;
		vals[r][1].i64 = (int64_t)test_rand(&rng);
		vals[r][2].b = (int)(x >> 7 & 1);
		if (skipped((uint64_t)r))
			memset(input + (size_t)r * ROW_BYTES, 0, ROW_BYTES);
	}
	plan(4 + 2 * (int)rounds + 7);
	closed(0, 0, &rng);
	closed(0, 1, &rng);
	closed(1, 0, &rng);
	closed(2, 0, &rng);
	killed(0, rounds, &rng);
	killed(2, rounds, &rng);
	lagging(&rng);
	closed_short(&rng);
	refusals(&rng);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
