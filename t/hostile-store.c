/*
 * hostile-store.c - `shardpipe verify` and `cat` treat a store as
 * untrusted input.
 *
 * A valid store is written, then broken one way at a time: shards
 * truncated, index entries pointing outside the shard or overlapping or
 * overflowing, CRC mismatches, chunks that decode to the wrong size or not
 * at all, objects that are directories, FIFOs or devices, and zarr.json
 * documents that are malformed or hostile (deep nesting, huge numbers,
 * wrong types, missing keys, absurd geometry, a 20 MB file).  For each:
 * verify and cat exit 1 (not a signal, not a timeout, within a 1 GiB
 * address space), their message names zarr.json, or the shard, and for
 * chunk faults the chunk; the library's reader refuses it in this process
 * too (so that valgrind and the sanitizers see the reader's own code).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


#include "fault-check.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

enum level { AT_META, AT_SHARD, AT_CHUNK };

static const char *sp_prog;
static char *tmp;
static int cases, refused;

#define ROWS 16
#define COLS 24
#define SLOTS 4                      /* 2 x 2 chunks per shard */
#define INDEX_BYTES (16 * SLOTS + 4)
#define CHUNK_BYTES (4 * 8 * 2)      /* int16 chunk of 4 x 8 */

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");

	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0)
		bail("cannot write %s: %s", path, strerror(errno));
}

static void copy_tree(const char *from, const char *to)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -R '%s' '%s'", to, from,
		 to);
	if (system(cmd) != 0)
		bail("%s failed", cmd);
}

/* A valid store: 16 x 24 int16, chunks 4 x 8, 2 x 2 chunks per shard. */
static void make_store(const char *path, int codec, int loc, uint64_t *rng)
{
	shardpipe_desc d;
	shardpipe_stream *s;
	uint8_t buf[ROWS * COLS * 2];

	shardpipe_desc_init(&d);
	d.rank = 2;
	d.dtype = SHARDPIPE_DTYPE_INT16;
	d.codec = (shardpipe_codec)codec;
	d.level = 3;
	d.index_location = (shardpipe_index_location)loc;
	d.backend = "cpu";
	d.threads = 1;
	d.dims[0] = (shardpipe_dim){ "y", ROWS, 4, 2 };
	d.dims[1] = (shardpipe_dim){ "x", COLS, 8, 2 };
	test_fill(buf, sizeof(buf), 3, rng);
	if (shardpipe_stream_open(&s, path, &d) != SHARDPIPE_OK ||
	    shardpipe_stream_append(s, buf, sizeof(buf)) != SHARDPIPE_OK ||
	    shardpipe_stream_close(s) != SHARDPIPE_OK)
		bail("cannot write the base store %s", path);
}

/* The reader in this process: it must refuse the store.  Returns its
 * code (SHARDPIPE_OK when it accepted the store). */
static int library_code(const char *store, char *msg, size_t n)
{
	shardpipe_reader *r;
	uint64_t start[2] = { 0, 0 }, count[2] = { ROWS, COLS };
	static int16_t out[ROWS * COLS];
	int rc = shardpipe_reader_open(&r, store);

	if (rc != SHARDPIPE_OK) {
		snprintf(msg, n, "%s", shardpipe_last_error_message());
		return rc;
	}
	rc = shardpipe_reader_check(r);
	if (rc != SHARDPIPE_OK)
		snprintf(msg, n, "%s", shardpipe_reader_message(r));
	/* The read path checks too, whatever check said. */
	shardpipe_array_info info;
	shardpipe_reader_info(r, &info);
	if (info.rank == 2 && info.shape[0] <= ROWS && info.shape[1] <= COLS) {
		count[0] = info.shape[0];
		count[1] = info.shape[1];
		int rr = shardpipe_reader_read(r, start, count, out,
					       sizeof(out));
		if (rc == SHARDPIPE_OK)
			rc = rr;
	}
	shardpipe_reader_close(r);
	return rc;
}

static int run_cli(const char *cmd, const char *store, char *err, size_t n)
{
	char errp[1100], outp[1100];
	int rc;

	snprintf(errp, sizeof(errp), "%s/cli.err", tmp);
	snprintf(outp, sizeof(outp), "%s/cli.out", tmp);
	if (strcmp(cmd, "cat") == 0) {
		char *argv[] = { (char *)sp_prog, "cat", (char *)store, "-o",
				 outp, NULL };
		rc = fc_run(argv, errp, fc_timeout(30));
	} else {
		char *argv[] = { (char *)sp_prog, "verify", (char *)store,
				 NULL };
		rc = fc_run(argv, errp, fc_timeout(30));
	}
	size_t len;
	char *e = test_slurp(errp, &len);

	snprintf(err, n, "%s", e ? e : "");
	free(e);
	if (n > 0 && strlen(err) > 0 && err[strlen(err) - 1] == '\n')
		err[strlen(err) - 1] = '\0';
	return rc;
}

/* Check that every tool refuses the store; the message names what. */
static void expect_refused(const char *store, enum level lv, const char *key,
			   const char *what)
{
	char ev[1024], ec[1024], el[600];
	const char *need = lv == AT_META ? "zarr.json" : key;
	int rv = 0, rc = 0, lib, code, want_exit;
	int good;

	code = library_code(store, el, sizeof(el));
	lib = code != SHARDPIPE_OK;
	/* A store that uses a feature shardpipe lacks is not corrupt: the
	 * CLI documents exit 4 for it. */
	want_exit = code == SHARDPIPE_ERR_UNSUPPORTED ? 4 : 1;
	if (sp_prog != NULL) {
		rv = run_cli("verify", store, ev, sizeof(ev));
		rc = run_cli("cat", store, ec, sizeof(ec));
	}
	good = lib && strstr(el, need) != NULL &&
	       (lv != AT_CHUNK || strstr(el, "chunk") != NULL);
	if (sp_prog != NULL)
		good = good && rv == want_exit && rc == want_exit && strstr(ev, need) != NULL &&
		       strstr(ec, need) != NULL &&
		       (lv != AT_CHUNK || (strstr(ev, "chunk") != NULL &&
					   strstr(ec, "chunk") != NULL));
	cases++;
	refused += good;
	ok(good, "%s: refused (%s), naming %s%s", what,
	   shardpipe_strerror(code), need, lv == AT_CHUNK ? " and the chunk" : "");
	if (!good) {
		diag("  library: %s (%s)", lib ? "refused" : "ACCEPTED", el);
		if (sp_prog != NULL) {
			diag("  verify exit %d: %s", rv, ev);
			diag("  cat exit %d: %s", rc, ec);
		}
	}
}

/* ---------------------------------------------------- shard mutations */

static uint8_t *shard_load(const char *store, size_t *n)
{
	char p[1200];
	uint8_t *b;

	snprintf(p, sizeof(p), "%s/c/0/0", store);
	b = test_slurp(p, n);
	if (b == NULL)
		bail("cannot read %s", p);
	return b;
}

static void shard_save(const char *store, const void *b, size_t n)
{
	char p[1200];

	snprintf(p, sizeof(p), "%s/c/0/0", store);
	write_file(p, b, n);
}

static void fix_crc(uint8_t *idx)
{
	test_put_le(idx + 16 * SLOTS, test_crc32c(idx, 16 * SLOTS), 4);
}

/* Apply an index edit to a fresh copy of base and expect a refusal. */
struct edit {
	const char *what;
	enum level lv;
	int slot;
	int field;      /* 0 offset, 1 nbytes */
	int rel;        /* value relative to: 0 absolute, 1 file size,
			 * 2 entry 0's offset */
	int64_t value;
	int keep_crc;   /* leave the CRC stale */
};

static void index_edit(const char *base, int loc, const struct edit *e)
{
	char store[1100], what[200];
	size_t n;
	uint8_t *b;

	snprintf(store, sizeof(store), "%s/case.zarr", tmp);
	copy_tree(base, store);
	b = shard_load(store, &n);
	uint8_t *idx = loc ? b : b + n - INDEX_BYTES;
	uint64_t v = (uint64_t)e->value;

	if (e->rel == 1)
		v += n;
	else if (e->rel == 2)
		v += test_le64(idx);
	test_put_le(idx + 16 * e->slot + 8 * e->field, v, 8);
	if (!e->keep_crc)
		fix_crc(idx);
	shard_save(store, b, n);
	free(b);
	snprintf(what, sizeof(what), "index %s: %s", loc ? "start" : "end",
		 e->what);
	expect_refused(store, e->lv, "c/0/0", what);
}

/* Replace chunk 0 by `frame` appended to the body (entry 0 moved). */
static void replace_chunk(const char *base, int loc, const void *frame,
			  size_t fn, const char *what)
{
	char store[1100];
	size_t n;
	uint8_t *b, *nb;

	snprintf(store, sizeof(store), "%s/case.zarr", tmp);
	copy_tree(base, store);
	b = shard_load(store, &n);
	nb = malloc(n + fn);
	if (nb == NULL)
		bail("out of memory");
	if (loc) {
		/* index, body, frame */
		memcpy(nb, b, n);
		memcpy(nb + n, frame, fn);
		test_put_le(nb, n, 8);
		test_put_le(nb + 8, fn, 8);
		fix_crc(nb);
	} else {
		/* body, frame, index */
		memcpy(nb, b, n - INDEX_BYTES);
		memcpy(nb + n - INDEX_BYTES, frame, fn);
		memcpy(nb + n - INDEX_BYTES + fn, b + n - INDEX_BYTES,
		       INDEX_BYTES);
		uint8_t *idx = nb + n + fn - INDEX_BYTES;
		test_put_le(idx, n - INDEX_BYTES, 8);
		test_put_le(idx + 8, fn, 8);
		fix_crc(idx);
	}
	shard_save(store, nb, n + fn);
	free(b);
	free(nb);
	expect_refused(store, AT_CHUNK, "c/0/0", what);
}

static void shard_cases(const char *base, int codec, int loc)
{
	char store[1100], what[200], p[1200];
	const char *ln = loc ? "start" : "end";
	size_t n;
	uint8_t *b;
	static const struct edit edits[] = {
		{ "offset beyond the file", AT_CHUNK, 1, 0, 1, 100, 0 },
		{ "length beyond the file", AT_CHUNK, 1, 1, 0, 1ll << 40, 0 },
		{ "offset + length overflows", AT_CHUNK, 2, 0, 0, -16, 0 },
		{ "zero length", AT_CHUNK, 1, 1, 0, 0, 0 },
		{ "half-empty entry", AT_CHUNK, 3, 0, 0, -1, 0 },
		{ "two chunks share bytes", AT_CHUNK, 1, 0, 2, 0, 0 },
		{ "chunks overlap by a byte", AT_CHUNK, 1, 0, 2, 1, 0 },
		{ "CRC mismatch", AT_SHARD, 1, 1, 0, 3, 1 },
	};

	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		struct edit e = edits[i];

		/* Offsets into the index itself are outside the body. */
		index_edit(base, loc, &e);
	}
	{
		struct edit e = { "offset inside the index", AT_CHUNK, 0, 0, 0,
				  0, 0 };
		if (!loc) {
			e.rel = 1;
			e.value = -INDEX_BYTES + 4;
		}
		index_edit(base, loc, &e);
	}

	/* Truncations. */
	snprintf(store, sizeof(store), "%s/case.zarr", tmp);
	static const size_t cuts[] = { 0, 1, INDEX_BYTES - 1, INDEX_BYTES };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		copy_tree(base, store);
		b = shard_load(store, &n);
		shard_save(store, loc ? b : b + (n - cuts[i]), cuts[i]);
		free(b);
		snprintf(what, sizeof(what), "index %s: shard cut to %zu bytes",
			 ln, cuts[i]);
		expect_refused(store, cuts[i] < INDEX_BYTES ? AT_SHARD : AT_CHUNK,
			       "c/0/0", what);
	}
	/* The body cut in half: the index is intact, offsets point past. */
	copy_tree(base, store);
	b = shard_load(store, &n);
	if (loc) {
		shard_save(store, b, INDEX_BYTES + (n - INDEX_BYTES) / 2);
	} else {
		size_t half = (n - INDEX_BYTES) / 2;

		memmove(b + half, b + n - INDEX_BYTES, INDEX_BYTES);
		shard_save(store, b, half + INDEX_BYTES);
	}
	free(b);
	snprintf(what, sizeof(what), "index %s: body cut in half", ln);
	expect_refused(store, AT_CHUNK, "c/0/0", what);

	/* Chunks that decode to the wrong size, or not at all. */
	uint8_t raw[CHUNK_BYTES + 16], frame[512];
	for (size_t i = 0; i < sizeof(raw); i++)
		raw[i] = (uint8_t)(i * 7);
	static const int sizes[] = { CHUNK_BYTES - 2, CHUNK_BYTES + 2, 0 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t fn;

		if (codec == SHARDPIPE_CODEC_NONE && sizes[i] == 0)
			continue; /* an empty chunk is a zero length */
		fn = test_encode(codec, raw, (size_t)sizes[i], frame,
				 sizeof(frame));
		snprintf(what, sizeof(what), "index %s: %s chunk of %d bytes, "
			 "%d expected", ln,
			 shardpipe_codec_name((shardpipe_codec)codec), sizes[i],
			 CHUNK_BYTES);
		replace_chunk(base, loc, frame, fn, what);
	}
	if (codec != SHARDPIPE_CODEC_NONE) {
		static const uint8_t junk[] = { 0x28, 0xb5, 0x2f, 0xfd, 0xff,
						0xff, 0xff, 0xff, 0x00, 0x01 };
		snprintf(what, sizeof(what), "index %s: %s chunk of garbage",
			 ln, shardpipe_codec_name((shardpipe_codec)codec));
		replace_chunk(base, loc, junk + (codec == SHARDPIPE_CODEC_GZIP),
			      sizeof(junk) - 1, what);
		/* A valid frame followed by trailing bytes. */
		size_t fn = test_encode(codec, raw, CHUNK_BYTES, frame,
					sizeof(frame));
		memcpy(frame + fn, "\0\0\0\0junk", 8);
		snprintf(what, sizeof(what), "index %s: %s chunk with 8 bytes "
			 "after its frame", ln,
			 shardpipe_codec_name((shardpipe_codec)codec));
		replace_chunk(base, loc, frame, fn + 8, what);
	}

	if (codec != SHARDPIPE_CODEC_ZSTD || loc != 0)
		return;
	/* Objects that are not regular files: no hang, no endless read. */
	copy_tree(base, store);
	snprintf(p, sizeof(p), "%s/c/0/0", store);
	unlink(p);
	mkdir(p, 0755);
	expect_refused(store, AT_SHARD, "c/0/0", "the shard is a directory");
	copy_tree(base, store);
	unlink(p);
	if (mkfifo(p, 0644) == 0)
		expect_refused(store, AT_SHARD, "c/0/0", "the shard is a FIFO");
	else
		skip(1, "mkfifo: %s", strerror(errno));
	copy_tree(base, store);
	unlink(p);
	if (symlink("/dev/zero", p) == 0)
		expect_refused(store, AT_SHARD, "c/0/0",
			       "the shard is a link to /dev/zero");
	else
		skip(1, "symlink: %s", strerror(errno));
}

/* -------------------------------------------------- zarr.json cases */

enum { M_FMT, M_NODE, M_SHAPE, M_DTYPE, M_GRID, M_KEYS, M_FILL, M_CODECS,
       M_COUNT };
static const char *const meta_key[M_COUNT] = {
	"zarr_format", "node_type", "shape", "data_type", "chunk_grid",
	"chunk_key_encoding", "fill_value", "codecs"
};
static const char *const meta_good[M_COUNT] = {
	"3", "\"array\"", "[16, 24]", "\"int16\"",
	"{\"name\": \"regular\", \"configuration\": {\"chunk_shape\": [8, 16]}}",
	"{\"name\": \"default\", \"configuration\": {\"separator\": \"/\"}}",
	"0",
	"[{\"name\": \"sharding_indexed\", \"configuration\": {"
	"\"chunk_shape\": [4, 8], \"codecs\": [{\"name\": \"bytes\", "
	"\"configuration\": {\"endian\": \"little\"}}, {\"name\": \"zstd\", "
	"\"configuration\": {\"level\": 3, \"checksum\": false}}], "
	"\"index_codecs\": [{\"name\": \"bytes\", \"configuration\": "
	"{\"endian\": \"little\"}}, {\"name\": \"crc32c\"}], "
	"\"index_location\": \"end\"}}]",
};

/* zarr.json from the good members, member `which` replaced by `value`
 * (NULL: left out), with `extra` text before the closing brace. */
static char *meta_with(int which, const char *value, const char *extra)
{
	size_t cap = 4096 + (value ? strlen(value) : 0) +
		     (extra ? strlen(extra) : 0);
	char *t = malloc(cap);
	size_t n = 0;
	int first = 1;

	if (t == NULL)
		bail("out of memory");
	n += (size_t)snprintf(t + n, cap - n, "{");
	for (int k = 0; k < M_COUNT; k++) {
		const char *v = k == which ? value : meta_good[k];

		if (v == NULL)
			continue;
		n += (size_t)snprintf(t + n, cap - n, "%s\"%s\": %s",
				      first ? "" : ", ", meta_key[k], v);
		first = 0;
	}
	n += (size_t)snprintf(t + n, cap - n, "%s}", extra ? extra : "");
	return t;
}

static void meta_case(const char *base, const char *text, size_t len,
		      const char *what)
{
	char store[1100], p[1200];

	snprintf(store, sizeof(store), "%s/case.zarr", tmp);
	copy_tree(base, store);
	snprintf(p, sizeof(p), "%s/zarr.json", store);
	write_file(p, text, len);
	expect_refused(store, AT_META, NULL, what);
}

static char *repeat(const char *a, size_t times, const char *mid,
		    const char *b)
{
	size_t la = strlen(a), lb = strlen(b), lm = strlen(mid);
	char *t = malloc(times * (la + lb) + lm + 1), *p = t;

	if (t == NULL)
		bail("out of memory");
	for (size_t i = 0; i < times; i++, p += la)
		memcpy(p, a, la);
	memcpy(p, mid, lm);
	p += lm;
	for (size_t i = 0; i < times; i++, p += lb)
		memcpy(p, b, lb);
	*p = '\0';
	return t;
}

static void meta_cases(const char *base)
{
	static const struct {
		int which;
		const char *value, *what;
	} sub[] = {
		{ M_FMT, "\"3\"", "zarr_format is a string" },
		{ M_FMT, "2", "zarr_format 2" },
		{ M_NODE, "\"group\"", "node_type group" },
		{ M_NODE, "7", "node_type is a number" },
		{ M_SHAPE, "\"16,24\"", "shape is a string" },
		{ M_SHAPE, "{}", "shape is an object" },
		{ M_SHAPE, "[]", "shape is empty" },
		{ M_SHAPE, "[16]", "shape of the wrong rank" },
		{ M_SHAPE, "[-1, 24]", "a negative extent" },
		{ M_SHAPE, "[1.5, 24]", "a fractional extent" },
		{ M_SHAPE, "[1e999999, 24]", "an extent of 1e999999" },
		{ M_SHAPE, "[18446744073709551616, 24]", "an extent of 2^64" },
		{ M_SHAPE, "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]", "rank 17" },
		{ M_SHAPE, "[null, 24]", "a null extent" },
		{ M_DTYPE, "5", "data_type is a number" },
		{ M_DTYPE, "\"int128\"", "an unknown data_type" },
		{ M_DTYPE, "{\"name\": \"x\"}", "an extension data_type" },
		{ M_GRID, "[]", "chunk_grid is an array" },
		{ M_GRID, "{\"name\": \"rectilinear\"}", "an unknown grid" },
		{ M_GRID, "{\"name\": \"regular\"}", "a grid without shape" },
		{ M_GRID, "{\"name\": \"regular\", \"configuration\": "
			  "{\"chunk_shape\": [0, 16]}}", "a shard extent of 0" },
		{ M_GRID, "{\"name\": \"regular\", \"configuration\": "
			  "{\"chunk_shape\": [4294967296, 4294967296]}}",
		  "2^64 chunks per shard" },
		{ M_GRID, "{\"name\": \"regular\", \"configuration\": "
			  "{\"chunk_shape\": [8, 12]}}",
		  "inner chunks that do not divide the shard" },
		{ M_KEYS, "\"default\"", "chunk_key_encoding is a string" },
		{ M_KEYS, "{\"name\": \"default\", \"configuration\": "
			  "{\"separator\": \"\\\\\"}}", "a backslash separator" },
		{ M_FILL, "\"zero\"", "fill_value is a word" },
		{ M_FILL, "70000", "fill_value beyond int16" },
		{ M_FILL, "[0]", "fill_value is an array" },
		{ M_CODECS, "{}", "codecs is an object" },
		{ M_CODECS, "[]", "codecs is empty" },
		{ M_CODECS, "[\"zstd\"]", "codecs without bytes" },
		{ M_CODECS, "[{\"name\": \"blosc\"}]", "an unknown codec" },
		{ M_CODECS, "[{\"name\": \"sharding_indexed\"}]",
		  "sharding without configuration" },
		{ M_CODECS, "[{\"name\": \"sharding_indexed\", "
			    "\"configuration\": {\"chunk_shape\": [4, 8], "
			    "\"codecs\": [{\"name\": \"bytes\"}], "
			    "\"index_codecs\": [{\"name\": \"zstd\"}]}}]",
		  "a compressed index" },
	};
	char *t;

	for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++) {
		t = meta_with(sub[i].which, sub[i].value, NULL);
		meta_case(base, t, strlen(t), sub[i].what);
		free(t);
	}
	for (int k = 0; k < M_COUNT; k++) {
		char what[64];

		t = meta_with(k, NULL, NULL);
		snprintf(what, sizeof(what), "missing \"%s\"", meta_key[k]);
		meta_case(base, t, strlen(t), what);
		free(t);
	}
	t = meta_with(-1, NULL, ", \"shape\": [16, 24]");
	meta_case(base, t, strlen(t), "a repeated member");
	free(t);
	t = meta_with(-1, NULL, ", \"future\": {\"must_understand\": true}");
	meta_case(base, t, strlen(t), "an extension that must be understood");
	free(t);

	static const char *const raw[] = {
		"", "{", "[]", "null", "\"array\"", "{\"zarr_format\": 3,}",
		"{\"zarr_format\": 3} {}", "\xff\xfe{}", "{\"a\": \"\\ud800\"",
	};
	for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "malformed zarr.json #%zu", i);
		meta_case(base, raw[i], strlen(raw[i]), what);
	}
	t = meta_with(-1, NULL, NULL);
	t[10] = '\0';
	meta_case(base, t, strlen(t) + 5, "a NUL byte inside zarr.json");
	free(t);

	t = repeat("[", 100000, "", "]");
	meta_case(base, t, strlen(t), "arrays nested 100000 deep");
	free(t);
	t = repeat("{\"a\": ", 20000, "1", "}");
	meta_case(base, t, strlen(t), "objects nested 20000 deep");
	free(t);
	{
		char *digits = repeat("9", 5000, "", "");
		char *v = malloc(strlen(digits) + 16);

		sprintf(v, "[%s, 24]", digits);
		t = meta_with(M_SHAPE, v, NULL);
		meta_case(base, t, strlen(t), "an extent of 5000 digits");
		free(t);
		free(v);
		free(digits);
	}
	{
		/* 20 MB: past any believable zarr.json. */
		size_t big = 20u << 20;
		char *pad = malloc(big + 1);

		memset(pad, ' ', big);
		pad[big] = '\0';
		t = meta_with(-1, NULL, pad);
		meta_case(base, t, strlen(t), "a 20 MB zarr.json");
		free(t);
		free(pad);
	}
	{
		/* A million tiny values: the tree, not the text, is big. */
		char *many = repeat("0,", 1000000, "0", "");
		char *extra = malloc(strlen(many) + 64);

		sprintf(extra, ", \"attributes\": {\"a\": [%s]}, \"x\": 1", many);
		t = meta_with(-1, NULL, extra);
		meta_case(base, t, strlen(t),
			  "a million array elements, then an unknown member");
		free(t);
		free(extra);
		free(many);
	}

	char store[1100], p[1200];
	snprintf(store, sizeof(store), "%s/case.zarr", tmp);
	snprintf(p, sizeof(p), "%s/zarr.json", store);
	copy_tree(base, store);
	unlink(p);
	mkdir(p, 0755);
	expect_refused(store, AT_META, NULL, "zarr.json is a directory");
	copy_tree(base, store);
	unlink(p);
	if (mkfifo(p, 0644) == 0)
		expect_refused(store, AT_META, NULL, "zarr.json is a FIFO");
	else
		skip(1, "mkfifo: %s", strerror(errno));
	copy_tree(base, store);
	unlink(p);
	if (symlink("/dev/zero", p) == 0)
		expect_refused(store, AT_META, NULL,
			       "zarr.json is a link to /dev/zero");
	else
		skip(1, "symlink: %s", strerror(errno));
	copy_tree(base, store);
	unlink(p);
	expect_refused(store, AT_META, NULL, "zarr.json is missing");
}

int main(int argc, char **argv)
{
	uint64_t rng;
	char base[1100];

	(void)argc;
	fc_passive_omp(argv);
	alarm(fc_timeout(300));
	rng = test_seed();
	sp_prog = getenv("SHARDPIPE");
	if (sp_prog != NULL && access(sp_prog, X_OK) != 0)
		sp_prog = NULL;
	if (sp_prog == NULL)
		diag("SHARDPIPE does not name the built program: only the "
		     "library's reader is tried");
	/* AddressSanitizer reserves terabytes of address space. */
	if (getenv("SHARDPIPE_TEST_NO_RLIMIT_AS") == NULL)
		fc_run_mem_limit = 1ull << 30;
	tmp = test_tmpdir("hostile");
	plan_lazy();

	snprintf(base, sizeof(base), "%s/base-zstd-end.zarr", tmp);
	make_store(base, SHARDPIPE_CODEC_ZSTD, 0, &rng);
	if (sp_prog != NULL) {
		char err[600];
		ok(run_cli("verify", base, err, sizeof(err)) == 0,
		   "the untouched store verifies (%s)", err);
	}
	meta_cases(base);
	for (int codec = 0; codec < 3; codec++)
		for (int loc = 0; loc < 2; loc++) {
			snprintf(base, sizeof(base), "%s/base-%d-%d.zarr", tmp,
				 codec, loc);
			make_store(base, codec, loc, &rng);
			shard_cases(base, codec, loc);
		}
	diag("hostile stores refused cleanly: %d of %d", refused, cases);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
