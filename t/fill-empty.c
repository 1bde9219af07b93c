/*
 * fill-empty.c - a settable fill value, shardpipe_stream_skip() and the
 * omission of empty chunks: zarr.json holds the fill value in the spec's
 * encoding; chunks that are all fill value have index entries 2^64 - 1
 * and a shard of only such chunks is not written, unless
 * write_empty_chunks; every read equals the input with skipped spans as
 * fill; the cpu and reference backends write the same bytes; durable
 * stores read back the same.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

/* 3-d float32, unbounded dim 0: chunk 2,8,5, 2,2,3 chunks a shard, dims
 * 1 and 2 with edge chunks. */
#define D1 19
#define D2 23
static const uint64_t chunk[3] = { 2, 8, 5 }, cps[3] = { 2, 2, 3 };

static void describe(shardpipe_desc *d, const char *backend, float fill,
		     shardpipe_codec codec)
{
	shardpipe_desc_init(d);
	d->rank = 3;
	d->dtype = SHARDPIPE_DTYPE_FLOAT32;
	d->codec = codec;
	d->backend = backend;
	d->dims[0].size = 0;
	d->dims[1].size = D1;
	d->dims[2].size = D2;
	for (int k = 0; k < 3; k++) {
		d->dims[k].chunk = chunk[k];
		d->dims[k].chunks_per_shard = cps[k];
	}
	memcpy(d->fill_value, &fill, sizeof(fill));
}

/* The zarr.json "fill_value" member's text, up to the comma. */
static char *fill_text(const char *dir, char *buf, size_t cap)
{
	char path[700];
	char *json, *p;
	size_t n;

	snprintf(path, sizeof(path), "%s/zarr.json", dir);
	json = test_slurp(path, &n);
	buf[0] = '\0';
	if (json != NULL && (p = strstr(json, "\"fill_value\": ")) != NULL) {
		p += strlen("\"fill_value\": ");
		n = strcspn(p, ",\n");
		snprintf(buf, cap, "%.*s", (int)(n < cap ? n : cap - 1), p);
	}
	free(json);
	return buf;
}

/* Check one fill value of one dtype: its zarr.json text, and that a
 * never-written region reads back as its bytes. */
static void check_fill(const char *tmp, shardpipe_dtype t, const void *v,
		       const char *want, const char *what)
{
	char dir[600], text[64];
	shardpipe_desc d;
	shardpipe_stream *s = NULL;
	shardpipe_reader *r = NULL;
	size_t es = shardpipe_dtype_size(t);
	uint64_t start[1] = { 0 }, count[1] = { 4 };
	unsigned char got[32], expect[32];
	int rc;

	snprintf(dir, sizeof(dir), "%s/fill-%d-%s.zarr", tmp, (int)t, what);
	shardpipe_desc_init(&d);
	d.rank = 1;
	d.dtype = t;
	d.backend = "cpu";
	d.dims[0].size = 8;
	d.dims[0].chunk = 4;
	d.dims[0].chunks_per_shard = 1;
	memcpy(d.fill_value, v, es);
	rc = shardpipe_stream_open(&s, dir, &d);
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_stream_close(s);
	is_int(rc, SHARDPIPE_OK, "%s %s: written", shardpipe_dtype_name(t),
	       what);
	ok(strcmp(fill_text(dir, text, sizeof(text)), want) == 0,
	   "%s %s: zarr.json fill_value %s (want %s)",
	   shardpipe_dtype_name(t), what, text, want);
	for (int i = 0; i < 4; i++)
		memcpy(expect + i * es, v, es);
	rc = shardpipe_reader_open(&r, dir);
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_reader_read(r, start, count, got, sizeof(got));
	ok(rc == SHARDPIPE_OK && memcmp(got, expect, 4 * es) == 0,
	   "%s %s: unwritten cells read as the fill value",
	   shardpipe_dtype_name(t), what);
	shardpipe_reader_close(r);
}

static void fill_values(const char *tmp)
{
	float f;
	double x;
	uint32_t u32;
	uint16_t h;
	int8_t i8 = -5;
	int64_t i64 = INT64_MIN;
	uint64_t u64 = UINT64_MAX;
	unsigned char b = 1;

	check_fill(tmp, SHARDPIPE_DTYPE_BOOL, &b, "true", "true");
	check_fill(tmp, SHARDPIPE_DTYPE_INT8, &i8, "-5", "neg");
	check_fill(tmp, SHARDPIPE_DTYPE_INT64, &i64, "-9223372036854775808",
		   "min");
	check_fill(tmp, SHARDPIPE_DTYPE_UINT64, &u64, "18446744073709551615",
		   "max");
	f = NAN;
	u32 = 0x7fc00000u; /* the spec's NaN */
	memcpy(&f, &u32, 4);
	check_fill(tmp, SHARDPIPE_DTYPE_FLOAT32, &f, "\"NaN\"", "nan");
	u32 = 0xffc00001u; /* another NaN: its exact bits */
	memcpy(&f, &u32, 4);
	check_fill(tmp, SHARDPIPE_DTYPE_FLOAT32, &f, "\"0xffc00001\"",
		   "nan-payload");
	f = -INFINITY;
	check_fill(tmp, SHARDPIPE_DTYPE_FLOAT32, &f, "\"-Infinity\"", "-inf");
	x = INFINITY;
	check_fill(tmp, SHARDPIPE_DTYPE_FLOAT64, &x, "\"Infinity\"", "inf");
	x = -0.0;
	check_fill(tmp, SHARDPIPE_DTYPE_FLOAT64, &x, "-0.0", "negzero");
	x = 0.1;
	check_fill(tmp, SHARDPIPE_DTYPE_FLOAT64, &x, "0.10000000000000001",
		   "tenth");
	h = 0x3e00; /* 1.5 */
	check_fill(tmp, SHARDPIPE_DTYPE_FLOAT16, &h, "1.5", "half");
	h = 0x7c00; /* float16's own infinity, not 65536 */
	check_fill(tmp, SHARDPIPE_DTYPE_FLOAT16, &h, "\"Infinity\"",
		   "half-inf");
	h = 0xfc00;
	check_fill(tmp, SHARDPIPE_DTYPE_FLOAT16, &h, "\"-Infinity\"",
		   "half-neginf");
}

/*
 * The input: NT rows of D1 x D2 floats, random, with the fill value in
 * whole chunks (epoch 1, chunk (1, 0) and edge chunk (2, 4)), in the whole
 * epochs 2..5 (shard epochs 1 and 2 empty, so their shards are not
 * written) and in rows that a skip covers (12..14).
 */
#define NT 17
#define SKIP_AT 12
#define SKIP_ROWS 3

static void make_input(float *a, float fill, uint64_t *rng)
{
	for (size_t i = 0; i < (size_t)NT * D1 * D2; i++)
		a[i] = (float)(test_rand(rng) % 1000) - 500.0f;
	for (int t = 2; t < 4; t++)
		for (int y = 8; y < 16; y++)
			for (int x = 0; x < 5; x++)
				a[((size_t)t * D1 + y) * D2 + x] = fill;
	for (int t = 2; t < 4; t++)
		for (int y = 16; y < D1; y++)
			for (int x = 20; x < D2; x++)
				a[((size_t)t * D1 + y) * D2 + x] = fill;
	for (int t = 4; t < 12; t++)
		for (int k = 0; k < D1 * D2; k++)
			a[(size_t)t * D1 * D2 + k] = fill;
	for (int t = SKIP_AT; t < SKIP_AT + SKIP_ROWS; t++)
		for (int k = 0; k < D1 * D2; k++)
			a[(size_t)t * D1 * D2 + k] = fill;
}

/* Write a: rows before SKIP_AT appended, then a skip, then the rest. */
static int write_store(const char *dir, const shardpipe_desc *d,
		       const float *a)
{
	shardpipe_stream *s = NULL;
	size_t row = (size_t)D1 * D2 * sizeof(float);
	int rc = shardpipe_stream_open(&s, dir, d);

	if (rc != SHARDPIPE_OK) {
		diag("open: %s", shardpipe_last_error_message());
		return rc;
	}
	rc = shardpipe_stream_append(s, a, SKIP_AT * row);
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_stream_skip(s, SKIP_ROWS * row);
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_stream_append(s, a + (SKIP_AT + SKIP_ROWS) *
						     (size_t)D1 * D2,
					     (NT - SKIP_AT - SKIP_ROWS) * row);
	if (rc != SHARDPIPE_OK)
		diag("write: %s", shardpipe_stream_message(s));
	if (shardpipe_stream_close(s) != SHARDPIPE_OK && rc == SHARDPIPE_OK)
		rc = SHARDPIPE_ERR_IO;
	return rc;
}

/* Whether chunk (t, y, x) of a (in chunk coordinates) is all fill. */
static int chunk_empty(const float *a, float fill, uint64_t t, uint64_t y,
		       uint64_t x)
{
	for (uint64_t i = t * 2; i < t * 2 + 2 && i < NT; i++)
		for (uint64_t j = y * 8; j < y * 8 + 8 && j < D1; j++)
			for (uint64_t k = x * 5; k < x * 5 + 5 && k < D2; k++)
				if (memcmp(&a[(i * D1 + j) * D2 + k], &fill,
					   4) != 0)
					return 0;
	/* The last epoch's rows past NT are padding with the fill. */
	return 1;
}

/*
 * Walk the store's shards with our own parsing: every chunk that is all
 * fill in the input must have the entry (2^64-1, 2^64-1) unless
 * write_empty, every other an entry; a shard of only empty chunks must be
 * absent.  Counts what it saw into *stored, *omitted, *absent.
 */
static int check_layout(const char *dir, const float *a, float fill,
			int write_empty, int *stored, int *omitted,
			int *absent)
{
	const uint64_t cc[3] = { (NT + 1) / 2, (D1 + 7) / 8, (D2 + 4) / 5 };
	const uint64_t sc[3] = { (cc[0] + 1) / 2, (cc[1] + 1) / 2,
				 (cc[2] + 2) / 3 };
	const size_t nidx = 2 * 2 * 3;
	int good = 1;

	*stored = *omitted = *absent = 0;
	for (uint64_t s0 = 0; s0 < sc[0]; s0++)
		for (uint64_t s1 = 0; s1 < sc[1]; s1++)
			for (uint64_t s2 = 0; s2 < sc[2]; s2++) {
				char path[700];
				size_t n;
				unsigned char *f;
				int all_empty = 1;

				snprintf(path, sizeof(path),
					 "%s/c/%llu/%llu/%llu", dir,
					 (unsigned long long)s0,
					 (unsigned long long)s1,
					 (unsigned long long)s2);
				for (uint64_t w = 0; w < nidx; w++) {
					uint64_t t = s0 * 2 + w / 6;
					uint64_t y = s1 * 2 + w / 3 % 2;
					uint64_t x = s2 * 3 + w % 3;

					if (t < cc[0] && y < cc[1] &&
					    x < cc[2] &&
					    !chunk_empty(a, fill, t, y, x))
						all_empty = 0;
				}
				f = test_slurp(path, &n);
				if (f == NULL) {
					(*absent)++;
					if (!all_empty || write_empty) {
						diag("%s missing", path);
						good = 0;
					}
					continue;
				}
				if (n < 16 * nidx + 4 ||
				    test_crc32c(f + n - 16 * nidx - 4,
						16 * nidx) !=
					    test_le32(f + n - 4)) {
					diag("%s: bad index", path);
					good = 0;
					free(f);
					continue;
				}
				for (uint64_t w = 0; w < nidx; w++) {
					const unsigned char *e =
						f + n - 16 * nidx - 4 + 16 * w;
					uint64_t t = s0 * 2 + w / 6;
					uint64_t y = s1 * 2 + w / 3 % 2;
					uint64_t x = s2 * 3 + w % 3;
					int miss = test_le64(e) == UINT64_MAX &&
						   test_le64(e + 8) ==
							   UINT64_MAX;
					int in = t < cc[0] && y < cc[1] &&
						 x < cc[2];
					int want_miss =
						!in || (!write_empty &&
							chunk_empty(a, fill, t,
								    y, x));

					if (in && miss)
						(*omitted)++;
					else if (in)
						(*stored)++;
					if (miss != want_miss) {
						diag("%s entry %llu: %s, want "
						     "%s", path,
						     (unsigned long long)w,
						     miss ? "empty" : "stored",
						     want_miss ? "empty"
							       : "stored");
						good = 0;
					}
				}
				free(f);
			}
	return good;
}

/*
 * The same bytes on every backend: cpu and reference with codec none
 * (their zstd encoders differ, libzstd against the kernels'), reference
 * and opencl (one kernel source) with zstd, opencl at every local size
 * the kernel tests use: each backend finds the empty chunks itself.
 */
static void same_across(const char *tmp, const float *a, float fill, int we,
			int fi)
{
	static const struct {
		const char *a, *b, *local;
	} pairs[] = { { "cpu", "reference", NULL },
		      { "reference", "opencl", "1" },
		      { "reference", "opencl", "7" },
		      { "reference", "opencl", "64" },
		      { "reference", "opencl", "256" } };

	for (size_t k = 0; k < sizeof(pairs) / sizeof(pairs[0]); k++) {
		shardpipe_codec codec = k ? SHARDPIPE_CODEC_ZSTD
					  : SHARDPIPE_CODEC_NONE;
		const char *name[2] = { pairs[k].a, pairs[k].b };
		char dir[2][600], dbg[32];
		int files = 0, rc = SHARDPIPE_OK, stored, omitted, absent;
		char why[256];

		if (!test_backend_usable(pairs[k].b, why, sizeof(why))) {
			skip(1, "%s", why);
			continue;
		}
		for (int b = 0; b < 2; b++) {
			shardpipe_desc d;

			snprintf(dir[b], sizeof(dir[b]), "%s/x%d%d%zu-%s.zarr",
				 tmp, fi, we, k, name[b]);
			describe(&d, name[b], fill, codec);
			d.write_empty_chunks = we;
			if (b == 1 && pairs[k].local != NULL) {
				snprintf(dbg, sizeof(dbg), "local=%s",
					 pairs[k].local);
				setenv("SHARDPIPE_KERNEL_DEBUG", dbg, 1);
			}
			if (rc == SHARDPIPE_OK)
				rc = write_store(dir[b], &d, a);
			unsetenv("SHARDPIPE_KERNEL_DEBUG");
		}
		if (rc == SHARDPIPE_OK)
			rc = test_same_tree(dir[0], dir[1], &files) &&
				     check_layout(dir[1], a, fill, we, &stored,
						  &omitted, &absent)
				     ? SHARDPIPE_OK
				     : SHARDPIPE_ERR_IO;
		ok(rc == SHARDPIPE_OK,
		   "fill %g, write_empty_chunks %d, codec %s: %s and %s%s%s "
		   "write the same bytes (%d files)", fill, we,
		   shardpipe_codec_name(codec), name[0], name[1],
		   pairs[k].local ? " at local size " : "",
		   pairs[k].local ? pairs[k].local : "", files);
		test_rmtree(dir[1]);
	}
}

/*
 * Bytes, not values: with fill 0.0 a chunk of -0.0 is stored; with the
 * spec's NaN, a chunk of another NaN is stored; a chunk differing in its
 * last cell only is stored.  On every backend, with codec none, the same
 * entries and the same bytes.
 */
static void bytes_not_values(const char *tmp)
{
	static const uint32_t zero[16] = {
		0, 0, 0, 0,
		0x80000000u, 0x80000000u, 0x80000000u, 0x80000000u,
		0, 0, 0, 0x80000000u,
		0x3f800000u, 0, 0, 0,
	};
	static const uint32_t nan[16] = {
		0x7fc00000u, 0x7fc00000u, 0x7fc00000u, 0x7fc00000u,
		0x7fc00001u, 0x7fc00001u, 0x7fc00001u, 0x7fc00001u,
		0xffc00000u, 0xffc00000u, 0xffc00000u, 0xffc00000u,
		0x7fc00000u, 0x7fc00000u, 0x7fc00000u, 0x7fc00001u,
	};
	static const char *const backends[] = { "cpu", "reference", "opencl" };

	for (int f = 0; f < 2; f++) {
		const uint32_t *data = f ? nan : zero;
		char dir[3][600];
		int good = 1, ran = 0;

		for (int b = 0; b < 3; b++) {
			shardpipe_desc d;
			unsigned char *shard;
			size_t n;
			char path[700], why[256];
			uint64_t one = 1, at;
			int rc;

			/* A backend built but broken fails here (the skip
			 * policy, §18.1); one without a device is left out of
			 * the count the check reports. */
			if (!test_backend_usable(backends[b], why, sizeof(why)))
				continue;
			snprintf(dir[b], sizeof(dir[b]), "%s/bytes%d-%s.zarr",
				 tmp, f, backends[b]);
			shardpipe_desc_init(&d);
			d.rank = 1;
			d.dtype = SHARDPIPE_DTYPE_FLOAT32;
			d.codec = SHARDPIPE_CODEC_NONE;
			d.backend = backends[b];
			d.dims[0].size = 16;
			d.dims[0].chunk = 4;
			d.dims[0].chunks_per_shard = 4;
			memcpy(d.fill_value, data, 4);
			rc = test_write_in(dir[b], &d, (const uint8_t *)data, 64,
					   0);
			test_shard_path(path, sizeof(path), dir[b], 1, &one, 0,
					&at);
			shard = rc == SHARDPIPE_OK ? test_slurp(path, &n) : NULL;
			if (shard == NULL || n != 3 * 16 + 4 * 16 + 4) {
				diag("%s: %s", backends[b],
				     shard ? "wrong shard size" : "no shard");
				good = 0;
			} else {
				const unsigned char *idx = shard + 48;

				/* Chunk 0 left out, 1..3 stored in order. */
				good &= test_le64(idx) == UINT64_MAX &&
					test_le64(idx + 8) == UINT64_MAX &&
					test_le64(idx + 16) == 0 &&
					test_le64(idx + 32) == 16 &&
					test_le64(idx + 48) == 32 &&
					memcmp(shard, data + 4, 48) == 0;
			}
			free(shard);
			if (ran > 0 && !test_same_tree(dir[0], dir[b], NULL))
				good = 0;
			ran++;
		}
		ok(good && ran >= 2,
		   "fill %s: only the chunk of its exact bytes is left out "
		   "(-0.0, other NaNs and a last cell kept), the same on %d "
		   "backends", f ? "NaN" : "0.0", ran);
	}
}

static void empty_chunks(const char *tmp, uint64_t *rng)
{
	const float fills[2] = { 0.0f, -1.5f };
	size_t n = (size_t)NT * D1 * D2;
	float *a = test_xmalloc(n * sizeof(float));

	for (int fi = 0; fi < 2; fi++) {
		float fill = fills[fi];

		make_input(a, fill, rng);
		for (int we = 0; we < 2; we++) {
			char dir[512], ref[512];
			shardpipe_desc d;
			int stored, omitted, absent, good;

			snprintf(dir, sizeof(dir), "%s/e%d%d-cpu.zarr", tmp, fi,
				 we);
			snprintf(ref, sizeof(ref), "%s/e%d%d-ref.zarr", tmp, fi,
				 we);
			describe(&d, "cpu", fill, SHARDPIPE_CODEC_ZSTD);
			d.write_empty_chunks = we;
			is_int(write_store(dir, &d, a), SHARDPIPE_OK,
			       "fill %g, write_empty_chunks %d: written", fill,
			       we);
			ok(test_reads_back(dir, NT, (const uint8_t *)a,
					   n * sizeof(float)),
			   "fill %g, write_empty_chunks %d: reads back the "
			   "input, skipped rows as fill", fill, we);
			good = check_layout(dir, a, fill, we, &stored, &omitted,
					    &absent);
			ok(good,
			   "fill %g, write_empty_chunks %d: every index entry "
			   "as the input asks (%d stored, %d omitted, %d "
			   "shards absent)", fill, we, stored, omitted, absent);
			if (we)
				ok(omitted == 0 && absent == 0,
				   "fill %g: write_empty_chunks stores every "
				   "chunk", fill);
			else
				ok(omitted >= 4 && absent >= 8,
				   "fill %g: empty chunks and whole shards are "
				   "left out (%d chunks, %d shards)", fill,
				   omitted, absent);
			same_across(tmp, a, fill, we, fi);
		}
	}
	free(a);
}

/* A skip writes the same store as appending the fill bytes it stands for:
 * so the readers' checks of stores with fill regions (t/readers-fill.sh)
 * cover skipped spans too. */
static void skip_same_as_fill(const char *tmp, uint64_t *rng)
{
	size_t n = (size_t)NT * D1 * D2;
	float *a = test_xmalloc(n * sizeof(float));
	char dir[2][512];
	shardpipe_desc d;
	int rc, files = 0;

	make_input(a, -1.5f, rng);
	snprintf(dir[0], sizeof(dir[0]), "%s/skip-a.zarr", tmp);
	snprintf(dir[1], sizeof(dir[1]), "%s/skip-b.zarr", tmp);
	describe(&d, "cpu", -1.5f, SHARDPIPE_CODEC_ZSTD);
	rc = write_store(dir[0], &d, a);
	if (rc == SHARDPIPE_OK)
		rc = test_write_in(dir[1], &d, (const uint8_t *)a,
				   n * sizeof(float), 0);
	if (rc == SHARDPIPE_OK && !test_same_tree(dir[0], dir[1], &files))
		rc = SHARDPIPE_ERR_IO;
	ok(rc == SHARDPIPE_OK,
	   "a skip writes the same store as appending its fill bytes (%d "
	   "files)", files);
	free(a);
}

static void skips(const char *tmp)
{
	char dir[512];
	shardpipe_desc d;
	shardpipe_stream *s = NULL;
	unsigned char one = 3;
	uint16_t v[4] = { 1, 2, 3, 4 };
	int rc;

	snprintf(dir, sizeof(dir), "%s/skip.zarr", tmp);
	shardpipe_desc_init(&d);
	d.rank = 1;
	d.dtype = SHARDPIPE_DTYPE_UINT16;
	d.backend = "cpu";
	d.dims[0].size = 10;
	d.dims[0].chunk = 4;
	d.dims[0].chunks_per_shard = 1;
	d.fill_value[test_host_big()] = 9;
	rc = shardpipe_stream_open(&s, dir, &d);
	is_int(rc, SHARDPIPE_OK, "skip: open");
	if (rc != SHARDPIPE_OK)
		return;
	is_int(shardpipe_stream_skip(s, 3), SHARDPIPE_ERR_INVALID_ARGUMENT,
	       "skip of an odd byte count in uint16 is refused");
	is_int(shardpipe_stream_append(s, &one, 1), SHARDPIPE_OK,
	       "the stream still takes data after the refusal");
	is_int(shardpipe_stream_skip(s, 2), SHARDPIPE_ERR_INVALID_ARGUMENT,
	       "skip from the middle of an element is refused");
	ok(strstr(shardpipe_stream_message(s), "element size 2") != NULL,
	   "the message names the element size: %s",
	   shardpipe_stream_message(s));
	is_int(shardpipe_stream_append(s, &one, 1), SHARDPIPE_OK,
	       "completing the element");
	is_int(shardpipe_stream_append(s, v, sizeof(v)), SHARDPIPE_OK,
	       "append after refusals");
	is_int(shardpipe_stream_skip(s, 20), SHARDPIPE_ERR_BEYOND_END,
	       "skip past the bounded end reports BEYOND_END");
	is_int(shardpipe_stream_close(s), SHARDPIPE_OK,
	       "the stream closes after the skip past the end");
	{
		/* The host's order, as appended; the first element is
		 * the two bytes 3, 3. */
		uint16_t want[10] = { 0x0303, 1, 2, 3, 4, 9, 9, 9, 9, 9 };

		ok(test_reads_back(dir, 10, (const uint8_t *)want,
				   sizeof(want)),
		   "skipped cells read as the fill value 9");
	}
}

static void refusals(const char *tmp)
{
	shardpipe_desc d;
	char sub[512];

	snprintf(sub, sizeof(sub), "%s/refusals", tmp);
	mkdir(sub, 0777);
	test_small_desc(&d, SHARDPIPE_CODEC_ZSTD);
	d.dtype = SHARDPIPE_DTYPE_BOOL;
	d.fill_value[0] = 2;
	test_refused(sub, &d, SHARDPIPE_ERR_INVALID_ARGUMENT, "bool",
		     "a bool fill value of 2");
}

static void durable(const char *tmp, uint64_t *rng)
{
	char dir[512];
	size_t n = (size_t)NT * D1 * D2;
	float *a = test_xmalloc(n * sizeof(float));
	shardpipe_desc d;

	make_input(a, 0.0f, rng);
	snprintf(dir, sizeof(dir), "%s/durable.zarr", tmp);
	describe(&d, "cpu", 0.0f, SHARDPIPE_CODEC_ZSTD);
	d.durable = 1;
	is_int(write_store(dir, &d, a), SHARDPIPE_OK, "durable: written");
	ok(test_reads_back(dir, NT, (const uint8_t *)a, n * sizeof(float)),
	   "durable: reads back the input");
	free(a);
}

/*
 * One cell decides: arrays of the fill value in which some chunks get one
 * cell changed (one bit of one byte, anywhere inside the array) and the
 * rest none.  Exactly the untouched chunks are omitted, on every backend,
 * whatever the chunk's shape: a last dim of one element (an interleaved
 * channel), chunks cut by the edge along any dim, whose padding (the
 * fill value, design §22.1) is not the array's.  Codec none; every read
 * equals the input.
 */
static void one_cell(const char *tmp, uint64_t *rng, unsigned sparse)
{
	static const struct {
		int rank;
		shardpipe_dtype dtype;
		size_t es;
		uint64_t shape[5], chunk[5], cps[5];
	} g[] = {
		{ 4, SHARDPIPE_DTYPE_UINT16, 2,
		  { 6, 5, 7, 3 }, { 2, 2, 4, 1 }, { 1, 2, 2, 3 } },
		{ 3, SHARDPIPE_DTYPE_UINT16, 2,
		  { 4, 9, 70 }, { 2, 4, 32 }, { 2, 1, 2 } },
		{ 5, SHARDPIPE_DTYPE_UINT8, 1,
		  { 2, 3, 4, 5, 2 }, { 1, 2, 2, 2, 2 }, { 1, 1, 2, 2, 1 } },
		{ 2, SHARDPIPE_DTYPE_FLOAT64, 8,
		  { 5, 33 }, { 2, 8 }, { 1, 3 } },
		/* The cpu backend's work items here are 16 chunks along
		 * x (runs of 128 bytes grouped to 2 KiB), cut by the edge
		 * along y and x. */
		{ 3, SHARDPIPE_DTYPE_UINT16, 2,
		  { 6, 15, 2008 }, { 1, 8, 64 }, { 2, 2, 8 } },
	};
	static const char *const backends[] = { "cpu", "reference", "opencl" };

	for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
		const int R = g[k].rank;
		const size_t es = g[k].es;
		uint64_t cc[5], sc[5], nchunks = 1, nshards = 1, n = 1;
		uint64_t per = 1;
		uint8_t *a, *touched;

		for (int d = 0; d < R; d++) {
			cc[d] = test_cdiv(g[k].shape[d], g[k].chunk[d]);
			sc[d] = test_cdiv(cc[d], g[k].cps[d]);
			nchunks *= cc[d];
			nshards *= sc[d];
			per *= g[k].cps[d];
			n *= g[k].shape[d];
		}
		a = test_xmalloc((size_t)n * es);
		touched = test_xmalloc((size_t)nchunks);
		memset(a, 0x5a, (size_t)n * es);
		for (uint64_t c = 0; c < nchunks; c++) {
			uint64_t at = 0, rest = c;
			uint64_t pos[5];

			/* Dense: two chunks in three; sparse: one in ten, so
			 * that work items of several chunks with none
			 * touched, left out before any gather, are common. */
			touched[c] = sparse ? test_rand(rng) % 10 == 0
					    : test_rand(rng) % 3 != 0;
			if (!touched[c])
				continue;
			/* A random cell of chunk c inside the array. */
			for (int d = R - 1; d >= 0; d--) {
				uint64_t o = rest % cc[d] * g[k].chunk[d];
				uint64_t e = g[k].shape[d] - o < g[k].chunk[d]
						     ? g[k].shape[d] - o
						     : g[k].chunk[d];

				rest /= cc[d];
				pos[d] = o + test_rand(rng) % e;
			}
			for (int d = 0; d < R; d++)
				at = at * g[k].shape[d] + pos[d];
			a[at * es + test_rand(rng) % es] ^=
				(uint8_t)(1u << test_rand(rng) % 8);
		}
		for (size_t b = 0; b < sizeof(backends) / sizeof(*backends);
		     b++) {
			shardpipe_desc d;
			char dir[600], why[256];
			int good = 1, omitted = 0, rc;

			if (!test_backend_usable(backends[b], why,
						 sizeof(why))) {
				skip(1, "%s", why);
				continue;
			}
			shardpipe_desc_init(&d);
			d.rank = R;
			d.dtype = g[k].dtype;
			d.codec = SHARDPIPE_CODEC_NONE;
			d.backend = backends[b];
			for (int j = 0; j < R; j++) {
				d.dims[j].size = g[k].shape[j];
				d.dims[j].chunk = g[k].chunk[j];
				d.dims[j].chunks_per_shard = g[k].cps[j];
			}
			memset(d.fill_value, 0x5a, es);
			snprintf(dir, sizeof(dir), "%s/cell%zu%s-%s.zarr", tmp,
				 k, sparse ? "s" : "", backends[b]);
			rc = test_write_in(dir, &d, a, (size_t)n * es, 0);
			if (rc != SHARDPIPE_OK)
				good = 0;
			for (uint64_t sh = 0; good && sh < nshards; sh++) {
				char path[700];
				uint64_t s0[5];
				unsigned char *f;
				size_t fn;

				test_shard_path(path, sizeof(path), dir, R, sc,
						sh, s0);
				f = test_slurp(path, &fn);
				if (f != NULL && (fn < 16 * per + 4 ||
						  test_crc32c(f + fn - 16 * per - 4,
							      16 * per) !=
							  test_le32(f + fn - 4))) {
					diag("%s: bad index", path);
					good = 0;
				}
				for (uint64_t w = 0; good && w < per; w++) {
					uint64_t rest = w, c = 0, x[5];
					int in = 1, miss;

					for (int j = R - 1; j >= 0; j--) {
						x[j] = s0[j] * g[k].cps[j] +
						       rest % g[k].cps[j];
						rest /= g[k].cps[j];
						in = in && x[j] < cc[j];
					}
					if (!in)
						continue;
					for (int j = 0; j < R; j++)
						c = c * cc[j] + x[j];
					miss = f == NULL ||
					       (test_le64(f + fn - 16 * per - 4 +
							  16 * w) == UINT64_MAX &&
						test_le64(f + fn - 16 * per - 4 +
							  16 * w + 8) ==
							UINT64_MAX);
					omitted += miss;
					if (miss == touched[c]) {
						diag("%s: chunk %llu %s, want %s",
						     dir, (unsigned long long)c,
						     miss ? "omitted" : "stored",
						     touched[c] ? "stored"
								: "omitted");
						good = 0;
					}
				}
				free(f);
			}
			if (good)
				good = test_reads_back(dir, g[k].shape[0], a,
						       (size_t)n * es);
			ok(good, "rank %d, chunk last dim %llu, %s: %s omits "
			   "exactly the %d chunks with no cell changed",
			   R, (unsigned long long)g[k].chunk[R - 1],
			   sparse ? "sparse" : "dense", backends[b], omitted);
			test_rmtree(dir);
		}
		free(a);
		free(touched);
	}
}

/*
 * One chunk decides: for every chunk of a 3-d uint16 array of fill cut by
 * the edge along y and x, a store in which only that chunk has a cell
 * changed, at its first cell inside the array and then at its last.  The
 * cpu backend leaves out work items of several chunks that are all fill
 * before gathering them; a changed cell at an item's first or last cell,
 * at the array's edge or not, must keep its chunk.  Items here: 32 chunks
 * along x, half a row (runs of 128 bytes grouped to 4 KiB, the second item
 * of each row cut by the edge); 32 chunks that span x whole; and 2 x 19
 * chunks that span x whole, whose rows the check reads as one run.  Each
 * store reads back equal to its input.
 */
static void one_chunk(const char *tmp)
{
	static const struct {
		uint64_t t, y, x, cy, cx, cpsx;
	} g[] = {
		{ 2, 15, 4040, 8, 64, 32 },
		{ 2, 15, 2008, 8, 64, 32 },
		{ 2, 7, 300, 2, 16, 19 },
	};
	/* Every chunk at full size; at the small one every third, from a
	 * start that moves with k, so that every place in a row is met. */
	const uint64_t step = (uint64_t)test_sized("one_chunk: chunks stride",
						    1, 3);

	for (size_t k = 0; k < sizeof(g) / sizeof(g[0]); k++) {
		const uint64_t T = g[k].t, Y = g[k].y, X = g[k].x;
		const uint64_t CY = g[k].cy, CX = g[k].cx;
		const uint64_t cc[3] = { T, (Y + CY - 1) / CY,
					 (X + CX - 1) / CX };
		const size_t n = (size_t)(T * Y * X);
		uint16_t *a = test_xmalloc(n * 2);
		int good = 1, stores = 0;
		char dir[600];

		for (size_t i = 0; i < n; i++)
			a[i] = 7;
		snprintf(dir, sizeof(dir), "%s/one-chunk%zu.zarr", tmp, k);
		for (uint64_t c = k % step; good && c < cc[0] * cc[1] * cc[2];
		     c += step)
			for (int corner = 0; good && corner < 2; corner++) {
				uint64_t t = c / (cc[1] * cc[2]);
				uint64_t y = c / cc[2] % cc[1] * CY;
				uint64_t x = c % cc[2] * CX;
				const uint64_t shape[3] = { T, Y, X };
				const uint64_t ch[3] = { 1, CY, CX };
				const uint64_t per[3] = { 2, 2, g[k].cpsx };
				size_t at;
				shardpipe_desc d;
				int rc;

				if (corner) {
					y = (y + CY < Y ? y + CY : Y) - 1;
					x = (x + CX < X ? x + CX : X) - 1;
				}
				at = (size_t)((t * Y + y) * X + x);
				test_desc3(&d, shape, ch, per);
				memcpy(d.fill_value, &a[0], 2);
				a[at] = 8;
				rc = test_write_in(dir, &d, (const uint8_t *)a,
						   n * 2, 0);
				good = rc == SHARDPIPE_OK &&
				       test_reads_back(dir, T,
						       (const uint8_t *)a,
						       n * 2);
				if (!good)
					diag("chunk %llu, cell (%llu, %llu, "
					     "%llu): %s",
					     (unsigned long long)c,
					     (unsigned long long)t,
					     (unsigned long long)y,
					     (unsigned long long)x,
					     rc == SHARDPIPE_OK
						     ? "reads back wrong"
						     : "not written");
				a[at] = 7;
				stores++;
			}
		ok(good, "%llu x %llu x %llu, chunk 1 x %llu x %llu: cpu keeps "
		   "the one chunk with a cell changed, at its first or its "
		   "last cell, in each of %d stores",
		   (unsigned long long)T, (unsigned long long)Y,
		   (unsigned long long)X, (unsigned long long)CY,
		   (unsigned long long)CX, stores);
		test_rmtree(dir);
		free(a);
	}
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;
	char *tmp = test_tmpdir("fill-empty");

	plan_lazy();
	fill_values(tmp);
	empty_chunks(tmp, &rng);
	bytes_not_values(tmp);
	one_cell(tmp, &rng, 0);
	one_cell(tmp, &rng, 1);
	one_chunk(tmp);
	skips(tmp);
	skip_same_as_fill(tmp, &rng);
	refusals(tmp);
	durable(tmp, &rng);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
