/*
 * t/reader.c - the store reader against stores built here by hand.
 *
 * Every store is written by this file alone: zarr.json as text, chunks
 * encoded with libzstd and zlib, shard indexes checksummed by a bitwise
 * CRC-32C (both from t/testutil.c), so the reader is never checked against
 * the library's own writer.  Random geometries come from test_seed().
 */
#define _GNU_SOURCE
#include "config.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#define MAXR SHARDPIPE_MAX_RANK

static uint64_t rng;
static char *root;

static void put_be(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[n - 1 - i] = (uint8_t)(v >> (8 * i));
}

/* An element value given as bits, in the host's byte order. */
static void put_native(uint8_t *p, uint64_t v, size_t n)
{
	if (test_host_big())
		put_be(p, v, n);
	else
		test_put_le(p, v, n);
}

static void swap_all(uint8_t *p, size_t n, size_t esize)
{
	for (size_t i = 0; i + esize <= n; i += esize)
		for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
			uint8_t t = p[i + a];

			p[i + a] = p[i + b];
			p[i + b] = t;
		}
}

static void write_file(const char *dir, const char *key, const void *data,
		       size_t n)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, key);
	for (char *s = path + strlen(dir) + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			if (mkdir(path, 0755) != 0 && errno != EEXIST)
				bail("mkdir %s: %s", path, strerror(errno));
			*s = '/';
		}
	f = fopen(path, "wb");
	if (f == NULL || fwrite(data, 1, n, f) != n || fclose(f) != 0)
		bail("write %s: %s", path, strerror(errno));
}

static void write_text(const char *dir, const char *key, const char *text)
{
	write_file(dir, key, text, strlen(text));
}

/* ------------------------------------------------------------ the writer */

struct spec {
	int rank;
	uint64_t shape[MAXR], shard[MAXR], chunk[MAXR];
	int dtype;        /* shardpipe_dtype */
	int sharded;
	int index_start, index_crc, index_big;
	int codec;        /* 0 none, 1 zstd, 2 gzip */
	int inner_crc;
	int big;          /* bytes codec endian */
	int key;          /* 0 "c/1/2", 1 "c.1.2", 2 "1.2", 3 "1/2" */
	int empty_pct, missing_pct, gaps;
	/* One chunk written wrong on purpose: the shard's linear number
	 * in the grid and the chunk's within it; how (SAB_*). */
	int sab, sab_shard, sab_chunk;
};

enum { SAB_NONE, SAB_SHORT, SAB_MAGIC, SAB_CRC };

static const char *const dnames[] = {
	"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
	"uint32", "uint64", "float16", "float32", "float64",
};
static const size_t dsizes[] = { 1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8 };

/* A non-zero fill for each type and its bits. */
static const char *fill_json(int t, uint64_t *bits)
{
	switch (t) {
	case SHARDPIPE_DTYPE_BOOL: *bits = 1; return "true";
	case SHARDPIPE_DTYPE_INT8: *bits = 0x80; return "-128";
	case SHARDPIPE_DTYPE_FLOAT16: *bits = 0x3c00; return "\"0x3c00\"";
	case SHARDPIPE_DTYPE_FLOAT32: *bits = 0xff800000u; return "\"-Infinity\"";
	case SHARDPIPE_DTYPE_FLOAT64: *bits = 0x3ff8000000000000ull; return "1.5";
	default: *bits = 5; return "5";
	}
}

static size_t list(char *o, size_t cap, const uint64_t *v, int n)
{
	size_t k = 0;

	for (int d = 0; d < n; d++)
		k += (size_t)snprintf(o + k, cap - k, "%s%llu", d ? "," : "",
				      (unsigned long long)v[d]);
	return k;
}

static void write_meta(const char *dir, const struct spec *sp)
{
	char shape[400], shard[400], chunk[400], inner[400], codecs[1200];
	char text[4096], names[400];
	uint64_t bits;
	const char *keyenc[] = {
		"{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}}",
		"{\"name\":\"default\",\"configuration\":{\"separator\":\".\"}}",
		"{\"name\":\"v2\"}",
		"{\"name\":\"v2\",\"configuration\":{\"separator\":\"/\"}}",
	};
	size_t k;

	list(shape, sizeof(shape), sp->shape, sp->rank);
	list(shard, sizeof(shard), sp->shard, sp->rank);
	list(chunk, sizeof(chunk), sp->chunk, sp->rank);
	k = (size_t)snprintf(inner, sizeof(inner),
			     "{\"name\":\"bytes\",\"configuration\":"
			     "{\"endian\":\"%s\"}}", sp->big ? "big" : "little");
	if (sp->codec == 1)
		k += (size_t)snprintf(inner + k, sizeof(inner) - k,
				      ",{\"name\":\"zstd\",\"configuration\":"
				      "{\"level\":3,\"checksum\":false}}");
	if (sp->codec == 2)
		k += (size_t)snprintf(inner + k, sizeof(inner) - k,
				      ",{\"name\":\"gzip\",\"configuration\":"
				      "{\"level\":6}}");
	if (sp->inner_crc)
		snprintf(inner + k, sizeof(inner) - k, ",{\"name\":\"crc32c\"}");
	if (sp->sharded)
		snprintf(codecs, sizeof(codecs),
			 "{\"name\":\"sharding_indexed\",\"configuration\":{"
			 "\"chunk_shape\":[%s],\"codecs\":[%s],"
			 "\"index_codecs\":[{\"name\":\"bytes\",\"configuration\":"
			 "{\"endian\":\"%s\"}}%s],\"index_location\":\"%s\"}}",
			 chunk, inner, sp->index_big ? "big" : "little",
			 sp->index_crc ? ",{\"name\":\"crc32c\"}" : "",
			 sp->index_start ? "start" : "end");
	else
		snprintf(codecs, sizeof(codecs), "%s", inner);
	k = 0;
	for (int d = 0; d < sp->rank; d++)
		k += (size_t)snprintf(names + k, sizeof(names) - k,
				      d % 2 ? "%s\"d%d\"" : "%snull",
				      d ? "," : "", d);
	snprintf(text, sizeof(text),
		 "{\n  \"zarr_format\": 3,\n  \"node_type\": \"array\",\n"
		 "  \"shape\": [%s],\n  \"data_type\": \"%s\",\n"
		 "  \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
		 "{\"chunk_shape\": [%s]}},\n  \"chunk_key_encoding\": %s,\n"
		 "  \"fill_value\": %s,\n  \"codecs\": [%s],\n"
		 "  \"attributes\": {\"note\": \"written by t/reader.c\"},\n"
		 "  \"dimension_names\": [%s]\n}\n",
		 shape, dnames[sp->dtype], shard, keyenc[sp->key],
		 fill_json(sp->dtype, &bits), codecs, names);
	write_text(dir, "zarr.json", text);
}

static void key_of(const struct spec *sp, const uint64_t *s, char *key,
		   size_t cap)
{
	char sep = (sp->key == 0 || sp->key == 3) ? '/' : '.';
	size_t k = 0;

	if (sp->key < 2)
		k = (size_t)snprintf(key, cap, "c%c", sep);
	for (int d = 0; d < sp->rank; d++)
		k += (size_t)snprintf(key + k, cap - k, "%s%llu",
				      d ? (char[]){ sep, 0 } : "",
				      (unsigned long long)s[d]);
}

static int next_in(uint64_t *c, const uint64_t *hi, int rank)
{
	for (int d = rank - 1; d >= 0; d--) {
		if (++c[d] < hi[d])
			return 1;
		c[d] = 0;
	}
	return 0;
}

static uint64_t prod(const uint64_t *v, int n)
{
	uint64_t p = 1;

	for (int d = 0; d < n; d++)
		p *= v[d];
	return p;
}

/*
 * Copy between the chunk at global chunk coordinates g and the reference
 * array: to_chunk fills the chunk (cells beyond the array get junk, as
 * writers may leave anything there), otherwise the reference's cells
 * under the chunk are set to the fill value.
 */
static void chunk_cells(const struct spec *sp, const uint64_t *g, uint8_t *ref,
			uint8_t *chunk, const uint8_t *fill, int to_chunk)
{
	size_t es = dsizes[sp->dtype];
	uint64_t c[MAXR] = { 0 };
	size_t i = 0;

	do {
		uint64_t lin = 0;
		int inside = 1;

		for (int d = 0; d < sp->rank; d++) {
			uint64_t x = g[d] * sp->chunk[d] + c[d];

			inside &= x < sp->shape[d];
			lin = lin * sp->shape[d] + x;
		}
		if (to_chunk && inside)
			memcpy(chunk + i * es, ref + lin * es, es);
		else if (to_chunk)
			memset(chunk + i * es, 0xa5, es);
		else if (inside)
			memcpy(ref + lin * es, fill, es);
		i++;
	} while (next_in(c, sp->chunk, sp->rank));
}

/* Write the whole store for reference array ref, setting in ref the
 * cells that empty chunks and missing shards leave at the fill value. */
static void write_store(const char *dir, const struct spec *sp, uint8_t *ref)
{
	size_t es = dsizes[sp->dtype];
	uint64_t grid[MAXR], cps[MAXR], s[MAXR] = { 0 }, bits;
	uint64_t n_inner, cbytes = prod(sp->chunk, sp->rank) * es;
	size_t cap = ZSTD_compressBound(cbytes) + 1024;
	uint8_t fill[8], *raw = malloc(cbytes), *shard_buf;
	uint8_t **enc;
	size_t *enc_n, body_cap;
	int shard_no = 0;

	fill_json(sp->dtype, &bits);
	put_native(fill, bits, es);
	write_meta(dir, sp);
	for (int d = 0; d < sp->rank; d++) {
		grid[d] = (sp->shape[d] + sp->shard[d] - 1) / sp->shard[d];
		cps[d] = sp->shard[d] / sp->chunk[d];
		if (grid[d] == 0) {
			free(raw);
			return;
		}
	}
	n_inner = prod(cps, sp->rank);
	enc = calloc(n_inner, sizeof(*enc));
	enc_n = calloc(n_inner, sizeof(*enc_n));
	body_cap = n_inner * (cap + 8) + 16 * n_inner + 4;
	shard_buf = malloc(body_cap);
	if (raw == NULL || enc == NULL || enc_n == NULL || shard_buf == NULL)
		bail("out of memory");
	do {
		int missing = (int)(test_rand(&rng) % 100) < sp->missing_pct;
		uint64_t c[MAXR] = { 0 }, lin = 0;
		char key[400];

		key_of(sp, s, key, sizeof(key));
		do {
			uint64_t g[MAXR];
			int beyond = 0, sab;

			enc[lin] = NULL;
			for (int d = 0; d < sp->rank; d++) {
				g[d] = s[d] * cps[d] + c[d];
				beyond |= g[d] * sp->chunk[d] >= sp->shape[d];
			}
			sab = sp->sab && shard_no == sp->sab_shard &&
			      (int)lin == sp->sab_chunk ? sp->sab : SAB_NONE;
			if (beyond) {
				lin++;
				continue;
			}
			if (!sab && (missing || (int)(test_rand(&rng) % 100) <
							sp->empty_pct)) {
				chunk_cells(sp, g, ref, NULL, fill, 0);
				lin++;
				continue;
			}
			chunk_cells(sp, g, ref, raw, fill, 1);
			if (sp->big != test_host_big())
				swap_all(raw, cbytes, es);
			enc[lin] = malloc(cap + 4);
			if (enc[lin] == NULL)
				bail("out of memory");
			enc_n[lin] = test_encode(sp->codec, raw,
						 sab == SAB_SHORT ? cbytes - es
								  : cbytes,
						 enc[lin], cap);
			if (sab == SAB_MAGIC)
				enc[lin][0] ^= 0xff;
			if (sp->inner_crc) {
				test_put_le(enc[lin] + enc_n[lin],
				       test_crc32c(enc[lin], enc_n[lin]), 4);
				if (sab == SAB_CRC)
					enc[lin][enc_n[lin]] ^= 1;
				enc_n[lin] += 4;
			}
			lin++;
		} while (next_in(c, cps, sp->rank));

		if (!sp->sharded) {
			if (enc[0] != NULL)
				write_file(dir, key, enc[0], enc_n[0]);
		} else if (!missing) {
			/* Chunks in a random order with junk between. */
			size_t ibytes = 16 * n_inner + (sp->index_crc ? 4 : 0);
			size_t pos = sp->index_start ? ibytes : 0;
			uint64_t *order = malloc(n_inner * sizeof(*order));
			uint8_t *ix;

			for (uint64_t i = 0; i < n_inner; i++)
				order[i] = i;
			for (uint64_t i = n_inner; sp->gaps && i > 1; i--) {
				uint64_t j = test_rand(&rng) % i, t = order[i - 1];

				order[i - 1] = order[j];
				order[j] = t;
			}
			ix = sp->index_start ? shard_buf : NULL;
			for (uint64_t i = 0; i < n_inner; i++) {
				uint64_t ch = order[i];

				if (sp->gaps) {
					size_t gap = test_rand(&rng) % 8;

					memset(shard_buf + pos, 0x5a, gap);
					pos += gap;
				}
				if (enc[ch] == NULL)
					continue;
				memcpy(shard_buf + pos, enc[ch], enc_n[ch]);
				/* Its offset goes in the high half. */
				enc_n[ch] = (enc_n[ch] & 0xffffffffu) |
					    ((uint64_t)pos << 32);
				pos += enc_n[ch] & 0xffffffffu;
			}
			if (!sp->index_start)
				ix = shard_buf + pos;
			for (uint64_t i = 0; i < n_inner; i++) {
				uint64_t off = UINT64_MAX, nb = UINT64_MAX;

				if (enc[i] != NULL) {
					off = enc_n[i] >> 32;
					nb = enc_n[i] & 0xffffffffu;
				}
				if (sp->index_big) {
					put_be(ix + 16 * i, off, 8);
					put_be(ix + 16 * i + 8, nb, 8);
				} else {
					test_put_le(ix + 16 * i, off, 8);
					test_put_le(ix + 16 * i + 8, nb, 8);
				}
			}
			if (sp->index_crc)
				test_put_le(ix + 16 * n_inner,
				       test_crc32c(ix, 16 * n_inner), 4);
			write_file(dir, key, shard_buf,
				   sp->index_start ? pos : pos + ibytes);
			free(order);
		}
		for (uint64_t i = 0; i < n_inner; i++)
			free(enc[i]);
		shard_no++;
	} while (next_in(s, grid, sp->rank));
	free(enc);
	free(enc_n);
	free(shard_buf);
	free(raw);
}

/* ---------------------------------------------------------- comparison */

static void extract(const struct spec *sp, const uint8_t *ref,
		    const uint64_t *start, const uint64_t *count, uint8_t *out)
{
	size_t es = dsizes[sp->dtype], i = 0;
	uint64_t c[MAXR] = { 0 };

	do {
		uint64_t lin = 0;

		for (int d = 0; d < sp->rank; d++)
			lin = lin * sp->shape[d] + start[d] + c[d];
		memcpy(out + i * es, ref + lin * es, es);
		i++;
	} while (next_in(c, count, sp->rank));
}

/* The elements start + k * step (k < count) of ref, to out at the byte
 * strides os (packed row-major when os is NULL). */
static void extract_strided(const struct spec *sp, const uint8_t *ref,
			    const uint64_t *start, const uint64_t *count,
			    const uint64_t *step, const int64_t *os,
			    uint8_t *out)
{
	size_t es = dsizes[sp->dtype], i = 0;
	uint64_t c[MAXR] = { 0 };

	if (prod(count, sp->rank) == 0)
		return;
	do {
		uint64_t lin = 0, o = 0;

		for (int d = 0; d < sp->rank; d++) {
			lin = lin * sp->shape[d] + start[d] + c[d] * step[d];
			o += c[d] * (uint64_t)(os != NULL ? os[d] : 0);
		}
		memcpy(out + (os != NULL ? o : i * es), ref + lin * es, es);
		i++;
	} while (next_in(c, count, sp->rank));
}

/* Random strided selections, packed and into a buffer whose dims lie in
 * reverse order with a gap between elements, on 1 to 4 threads. */
static void strided_regions(shardpipe_reader *r, const struct spec *sp,
			    const uint8_t *ref, int regions)
{
	size_t es = dsizes[sp->dtype];

	for (int k = 0; k < regions; k++) {
		uint64_t st[MAXR], cnt[MAXR], step[MAXR];
		int64_t os[MAXR];
		size_t m, span;
		uint8_t *got, *want;
		int threads = 1 + (int)(test_rand(&rng) % 4), rc;

		for (int d = 0; d < sp->rank; d++) {
			st[d] = test_rand(&rng) % sp->shape[d];
			step[d] = 1 + test_rand(&rng) % 7;
			cnt[d] = 1 + test_rand(&rng) %
					     ((sp->shape[d] - 1 - st[d]) /
						      step[d] + 1);
		}
		m = prod(cnt, sp->rank) * es;
		/* Reversed dims, every element 2 elements apart. */
		span = 2 * es;
		for (int d = 0; d < sp->rank; d++) {
			os[d] = (int64_t)span;
			span *= cnt[d];
		}
		got = calloc(1, span);
		want = calloc(1, span);
		if (got == NULL || want == NULL)
			bail("out of memory");
		shardpipe_reader_set_threads(r, threads);
		extract_strided(sp, ref, st, cnt, step, NULL, want);
		rc = shardpipe_reader_read_strided(r, st, cnt, step, got, NULL,
						   m);
		if (rc != SHARDPIPE_OK)
			diag("strided read: %s", shardpipe_reader_message(r));
		is_blob(got, want, m,
			"strided region %d on %d threads equals the reference",
			k, threads);
		memset(got, 0, span);
		memset(want, 0, span);
		extract_strided(sp, ref, st, cnt, step, os, want);
		rc = shardpipe_reader_read_strided(r, st, cnt, step, got, os,
						   span);
		if (rc != SHARDPIPE_OK)
			diag("strided read: %s", shardpipe_reader_message(r));
		is_blob(got, want, span,
			"strided region %d at output strides equals the "
			"reference", k);
		free(got);
		free(want);
	}
	shardpipe_reader_set_threads(r, 0);
}

static uint8_t *make_ref(const struct spec *sp, size_t *bytes)
{
	size_t n = prod(sp->shape, sp->rank) * dsizes[sp->dtype];
	uint8_t *ref = malloc(n ? n : 1);

	if (ref == NULL)
		bail("out of memory");
	test_fill(ref, n, (int)(test_rand(&rng) % 4), &rng);
	*bytes = n;
	return ref;
}

static char *new_store(const char *tag)
{
	static int serial;
	char *p;

	if (asprintf(&p, "%s/%s-%d", root, tag, serial++) < 0 ||
	    mkdir(p, 0755) != 0)
		bail("mkdir store");
	return p;
}

static void describe(const struct spec *sp, char *buf, size_t cap)
{
	char sh[200], sd[200], ch[200];

	list(sh, sizeof(sh), sp->shape, sp->rank);
	list(sd, sizeof(sd), sp->shard, sp->rank);
	list(ch, sizeof(ch), sp->chunk, sp->rank);
	snprintf(buf, cap,
		 "%s shape [%s] %s [%s] chunk [%s] codec %d%s%s%s key %d%s",
		 dnames[sp->dtype], sh, sp->sharded ? "shard" : "grid", sd, ch,
		 sp->codec, sp->big ? " big" : "", sp->inner_crc ? " crc" : "",
		 sp->sharded ? (sp->index_start ? " index@start"
						: " index@end")
			     : "",
		 sp->key, sp->index_big ? " index-big" : "");
}

/* Write, open, compare info, whole read, random regions, check. */
static void roundtrip(const struct spec *sp, int regions)
{
	size_t n;
	uint8_t *ref = make_ref(sp, &n), *got, *want;
	char *dir = new_store("rt"), what[1024];
	shardpipe_reader *r;
	shardpipe_array_info info;
	uint64_t zero[MAXR] = { 0 };
	int rc, info_ok;

	describe(sp, what, sizeof(what));
	write_store(dir, sp, ref);
	rc = shardpipe_reader_open(&r, dir);
	if (!is_int(rc, SHARDPIPE_OK, "open %s", what)) {
		diag("%s", shardpipe_last_error_message());
		free(ref);
		free(dir);
		return;
	}
	shardpipe_reader_info(r, &info);
	info_ok = info.rank == sp->rank && (int)info.dtype == sp->dtype;
	for (int d = 0; d < sp->rank; d++) {
		info_ok &= info.shape[d] == sp->shape[d] &&
			   info.shard[d] == sp->shard[d] &&
			   info.chunk[d] == (sp->sharded ? sp->chunk[d]
							 : sp->shard[d]);
		if (d % 2 == 1) {
			char nm[16];

			snprintf(nm, sizeof(nm), "d%d", d);
			info_ok &= strcmp(info.dim_names[d], nm) == 0;
		} else {
			info_ok &= info.dim_names[d][0] == '\0';
		}
	}
	ok(info_ok, "info matches");
	got = malloc(n + 1);
	want = malloc(n + 1);
	rc = shardpipe_reader_read(r, zero, sp->shape, got, n + 1);
	if (!is_int(rc, SHARDPIPE_OK, "whole read"))
		diag("%s", shardpipe_reader_message(r));
	is_blob(got, ref, n, "whole array equals the reference");
	for (int k = 0; k < regions && n > 0; k++) {
		uint64_t st[MAXR], cnt[MAXR];
		size_t m;

		for (int d = 0; d < sp->rank; d++) {
			st[d] = test_rand(&rng) % sp->shape[d];
			cnt[d] = 1 + test_rand(&rng) % (sp->shape[d] - st[d]);
		}
		m = prod(cnt, sp->rank) * dsizes[sp->dtype];
		extract(sp, ref, st, cnt, want);
		rc = shardpipe_reader_read(r, st, cnt, got, n + 1);
		if (rc != SHARDPIPE_OK)
			diag("region read: %s", shardpipe_reader_message(r));
		is_blob(got, want, m, "region %d equals the reference", k);
	}
	if (n > 0)
		strided_regions(r, sp, ref, regions);
	rc = shardpipe_reader_check(r);
	if (!is_int(rc, SHARDPIPE_OK, "check passes"))
		diag("%s", shardpipe_reader_message(r));
	shardpipe_reader_close(r);
	test_rmtree(dir);
	free(dir);
	free(ref);
	free(got);
	free(want);
}

static void set_dims(struct spec *sp, int rank, const uint64_t *shape,
		     const uint64_t *shard, const uint64_t *chunk)
{
	sp->rank = rank;
	for (int d = 0; d < rank; d++) {
		sp->shape[d] = shape[d];
		sp->shard[d] = shard[d];
		sp->chunk[d] = chunk[d];
	}
}

static void test_fixed(void)
{
	struct spec sp;

	memset(&sp, 0, sizeof(sp));
	set_dims(&sp, 3, (uint64_t[]){ 10, 7, 9 }, (uint64_t[]){ 4, 4, 6 },
		 (uint64_t[]){ 2, 2, 3 });
	sp.dtype = SHARDPIPE_DTYPE_UINT16;
	sp.sharded = 1;
	sp.index_crc = 1;
	sp.codec = 1;
	sp.empty_pct = 20;
	sp.missing_pct = 10;
	sp.gaps = 1;
	roundtrip(&sp, 8);

	sp.index_start = 1;
	sp.big = 1;
	sp.codec = 2;
	sp.inner_crc = 1;
	sp.dtype = SHARDPIPE_DTYPE_INT32;
	roundtrip(&sp, 8);

	/* No compression, big-endian index without checksum. */
	sp.codec = 0;
	sp.index_big = 1;
	sp.index_crc = 0;
	sp.dtype = SHARDPIPE_DTYPE_FLOAT64;
	sp.key = 1;
	roundtrip(&sp, 4);

	memset(&sp, 0, sizeof(sp));
	set_dims(&sp, 2, (uint64_t[]){ 13, 11 }, (uint64_t[]){ 5, 4 },
		 (uint64_t[]){ 5, 4 });
	sp.dtype = SHARDPIPE_DTYPE_FLOAT32;
	sp.codec = 1;
	sp.big = 1;
	sp.key = 1;
	sp.empty_pct = 25;
	roundtrip(&sp, 6);

	sp.dtype = SHARDPIPE_DTYPE_INT64;
	sp.codec = 2;
	sp.big = 0;
	sp.key = 2;
	sp.inner_crc = 1;
	roundtrip(&sp, 6);

	sp.dtype = SHARDPIPE_DTYPE_FLOAT16;
	sp.codec = 0;
	sp.key = 3;
	roundtrip(&sp, 6);

	memset(&sp, 0, sizeof(sp));
	set_dims(&sp, 1, (uint64_t[]){ 1000 }, (uint64_t[]){ 256 },
		 (uint64_t[]){ 16 });
	sp.dtype = SHARDPIPE_DTYPE_BOOL;
	sp.sharded = 1;
	sp.index_crc = 1;
	sp.codec = 1;
	sp.empty_pct = 30;
	sp.gaps = 1;
	sp.key = 2;
	roundtrip(&sp, 6);

	sp.dtype = SHARDPIPE_DTYPE_UINT8;
	sp.key = 3;
	sp.index_start = 1;
	roundtrip(&sp, 6);

	/* A zero extent: nothing to read, nothing to check. */
	memset(&sp, 0, sizeof(sp));
	set_dims(&sp, 2, (uint64_t[]){ 0, 5 }, (uint64_t[]){ 4, 4 },
		 (uint64_t[]){ 2, 2 });
	sp.dtype = SHARDPIPE_DTYPE_UINT32;
	sp.sharded = 1;
	sp.index_crc = 1;
	sp.codec = 1;
	roundtrip(&sp, 0);
}

static void test_random(int iterations)
{
	for (int it = 0; it < iterations; it++) {
		struct spec sp;

		memset(&sp, 0, sizeof(sp));
		sp.rank = 1 + (int)(test_rand(&rng) % 4);
		for (int d = 0; d < sp.rank; d++) {
			sp.chunk[d] = 1 + test_rand(&rng) % 5;
			sp.shard[d] = sp.chunk[d] * (1 + test_rand(&rng) % 3);
			sp.shape[d] = 1 + test_rand(&rng) % (3 * sp.shard[d]);
		}
		sp.dtype = (int)(test_rand(&rng) % SHARDPIPE_DTYPE_COUNT_);
		sp.sharded = (int)(test_rand(&rng) % 3) != 0;
		sp.index_start = (int)(test_rand(&rng) % 2);
		sp.index_crc = (int)(test_rand(&rng) % 4) != 0;
		sp.index_big = (int)(test_rand(&rng) % 5) == 0;
		sp.codec = (int)(test_rand(&rng) % 3);
		sp.inner_crc = (int)(test_rand(&rng) % 3) == 0;
		sp.big = (int)(test_rand(&rng) % 2);
		sp.key = (int)(test_rand(&rng) % 4);
		sp.empty_pct = (int)(test_rand(&rng) % 40);
		sp.missing_pct = (int)(test_rand(&rng) % 20);
		sp.gaps = (int)(test_rand(&rng) % 2);
		if (!sp.sharded)
			for (int d = 0; d < sp.rank; d++)
				sp.chunk[d] = sp.shard[d];
		roundtrip(&sp, 3);
	}
}

/* ------------------------------------------------------------ fill value */

static void test_fill_values(void)
{
	static const struct {
		const char *dtype, *json;
		uint64_t bits;
		int code;
	} cases[] = {
		{ "bool", "true", 1, SHARDPIPE_OK },
		{ "bool", "false", 0, SHARDPIPE_OK },
		{ "bool", "1", 0, SHARDPIPE_ERR_FORMAT },
		{ "int8", "-128", 0x80, SHARDPIPE_OK },
		{ "int8", "128", 0, SHARDPIPE_ERR_FORMAT },
		{ "int16", "-2", 0xfffe, SHARDPIPE_OK },
		{ "int32", "1.5", 0, SHARDPIPE_ERR_FORMAT },
		/* Integral floats, as real writers store them: read as
		 * the integer they name; the rest refused. */
		{ "int32", "1e3", 1000, SHARDPIPE_OK },
		{ "uint16", "0.0", 0, SHARDPIPE_OK },
		{ "int8", "-0.0", 0, SHARDPIPE_OK },
		{ "int16", "-2.0", 0xfffe, SHARDPIPE_OK },
		{ "uint8", "-1.0", 0, SHARDPIPE_ERR_FORMAT },
		{ "uint8", "256.0", 0, SHARDPIPE_ERR_FORMAT },
		{ "int64", "1e300", 0, SHARDPIPE_ERR_FORMAT },
		{ "uint64", "9007199254740992.0", 0, SHARDPIPE_ERR_FORMAT },
		{ "int64", "-9223372036854775808", 0x8000000000000000ull,
		  SHARDPIPE_OK },
		{ "int64", "9223372036854775808", 0, SHARDPIPE_ERR_FORMAT },
		{ "uint8", "255", 0xff, SHARDPIPE_OK },
		{ "uint8", "-1", 0, SHARDPIPE_ERR_FORMAT },
		{ "uint16", "65536", 0, SHARDPIPE_ERR_FORMAT },
		{ "uint32", "4294967295", 0xffffffffu, SHARDPIPE_OK },
		{ "uint64", "18446744073709551615", UINT64_MAX, SHARDPIPE_OK },
		{ "uint64", "18446744073709551616", 0, SHARDPIPE_ERR_FORMAT },
		{ "uint8", "\"0x01\"", 0, SHARDPIPE_ERR_FORMAT },
		{ "uint8", "null", 0, SHARDPIPE_ERR_FORMAT },
		{ "float16", "1.0", 0x3c00, SHARDPIPE_OK },
		{ "float16", "-2", 0xc000, SHARDPIPE_OK },
		{ "float16", "65504", 0x7bff, SHARDPIPE_OK },
		{ "float16", "65519", 0x7bff, SHARDPIPE_OK },
		{ "float16", "65520", 0, SHARDPIPE_ERR_FORMAT },
		{ "float16", "5.960464477539063e-08", 0x0001, SHARDPIPE_OK },
		{ "float16", "0.333333333", 0x3555, SHARDPIPE_OK },
		{ "float16", "\"NaN\"", 0x7e00, SHARDPIPE_OK },
		{ "float16", "\"-Infinity\"", 0xfc00, SHARDPIPE_OK },
		{ "float16", "\"0x7c01\"", 0x7c01, SHARDPIPE_OK },
		{ "float32", "\"NaN\"", 0x7fc00000u, SHARDPIPE_OK },
		{ "float32", "\"Infinity\"", 0x7f800000u, SHARDPIPE_OK },
		{ "float32", "\"0x3F800000\"", 0x3f800000u, SHARDPIPE_OK },
		{ "float32", "\"0x3f8000\"", 0, SHARDPIPE_ERR_FORMAT },
		{ "float32", "\"0x3f80000g\"", 0, SHARDPIPE_ERR_FORMAT },
		{ "float32", "0.1", 0x3dcccccdu, SHARDPIPE_OK },
		{ "float32", "-0.0", 0x80000000u, SHARDPIPE_OK },
		{ "float32", "1e39", 0, SHARDPIPE_ERR_FORMAT },
		{ "float32", "1e999999", 0, SHARDPIPE_ERR_FORMAT },
		{ "float32", "\"nan\"", 0, SHARDPIPE_ERR_FORMAT },
		{ "float32", "true", 0, SHARDPIPE_ERR_FORMAT },
		{ "float64", "\"NaN\"", 0x7ff8000000000000ull, SHARDPIPE_OK },
		{ "float64", "1e-310", 0x000012688b70e62bull, SHARDPIPE_OK },
		{ "float64", "\"0x7ff0000000000001\"", 0x7ff0000000000001ull,
		  SHARDPIPE_OK },
		{ "float64", "3", 0x4008000000000000ull, SHARDPIPE_OK },
		{ "float64", "1.7976931348623157e308", 0x7fefffffffffffffull,
		  SHARDPIPE_OK },
		{ "float64", "1.8e308", 0, SHARDPIPE_ERR_FORMAT },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *dir = new_store("fill"), text[1024];
		shardpipe_reader *r;
		size_t es = 0;
		uint8_t got[3 * 8], want[8];
		int rc;

		for (int t = 0; t < SHARDPIPE_DTYPE_COUNT_; t++)
			if (strcmp(dnames[t], cases[i].dtype) == 0)
				es = dsizes[t];
		snprintf(text, sizeof(text),
			 "{\"zarr_format\":3,\"node_type\":\"array\","
			 "\"shape\":[3],\"data_type\":\"%s\",\"chunk_grid\":"
			 "{\"name\":\"regular\",\"configuration\":"
			 "{\"chunk_shape\":[2]}},\"chunk_key_encoding\":"
			 "{\"name\":\"default\"},\"fill_value\":%s,"
			 "\"codecs\":[{\"name\":\"bytes\",\"configuration\":"
			 "{\"endian\":\"big\"}}]}",
			 cases[i].dtype, cases[i].json);
		write_text(dir, "zarr.json", text);
		rc = shardpipe_reader_open(&r, dir);
		is_int(rc, cases[i].code, "%s fill %s: open gives %d",
		       cases[i].dtype, cases[i].json, cases[i].code);
		if (rc == SHARDPIPE_OK) {
			uint64_t st = 0, cnt = 3;

			put_native(want, cases[i].bits, es);
			memset(got, 0xee, sizeof(got));
			rc = shardpipe_reader_read(r, &st, &cnt, got, sizeof(got));
			ok(rc == SHARDPIPE_OK &&
			   memcmp(got, want, es) == 0 &&
			   memcmp(got + es, want, es) == 0 &&
			   memcmp(got + 2 * es, want, es) == 0,
			   "  every element holds bits %#llx",
			   (unsigned long long)cases[i].bits);
			shardpipe_reader_close(r);
		} else {
			ok(r == NULL && strstr(shardpipe_last_error_message(),
					       "fill_value") != NULL,
			   "  the message names fill_value: %s",
			   shardpipe_last_error_message());
		}
		test_rmtree(dir);
		free(dir);
	}
}

/* ------------------------------------------------------------ metadata */

#define SHARDING                                                              \
	"[{\"name\":\"sharding_indexed\",\"configuration\":{"                 \
	"\"chunk_shape\":[2,2],\"codecs\":[{\"name\":\"bytes\","              \
	"\"configuration\":{\"endian\":\"little\"}},{\"name\":\"zstd\","      \
	"\"configuration\":{\"level\":1}}],\"index_codecs\":[{\"name\":"      \
	"\"bytes\",\"configuration\":{\"endian\":\"little\"}},{\"name\":"     \
	"\"crc32c\"}],\"index_location\":\"end\"}}]"
#define SHARD_WITH(inner, index, loc)                                         \
	"[{\"name\":\"sharding_indexed\",\"configuration\":{"                 \
	"\"chunk_shape\":[2,2],\"codecs\":" inner ",\"index_codecs\":"        \
	index ",\"index_location\":" loc "}}]"
#define BYTES_LE "{\"name\":\"bytes\",\"configuration\":{\"endian\":\"little\"}}"
#define IDX_OK "[" BYTES_LE ",{\"name\":\"crc32c\"}]"
/* A blosc codec entry; a store that uses one opens when shardpipe has
 * c-blosc, and is refused as unsupported when it has not. */
#define BLOSC_CONF(cname, clevel, shuffle, typesize)                          \
	"{\"name\":\"blosc\",\"configuration\":{\"cname\":" cname             \
	",\"clevel\":" clevel ",\"shuffle\":" shuffle ",\"typesize\":"          \
	typesize ",\"blocksize\":0}}"
#ifdef HAVE_BLOSC
#define BLOSC_OK SHARDPIPE_OK
#else
#define BLOSC_OK SHARDPIPE_ERR_UNSUPPORTED
#endif

static const char *const meta_keys[] = {
	"zarr_format", "node_type", "shape", "data_type", "chunk_grid",
	"chunk_key_encoding", "fill_value", "codecs", "attributes",
	"dimension_names",
};
static const char *const meta_defaults[] = {
	"3", "\"array\"", "[8,8]", "\"uint32\"",
	"{\"name\":\"regular\",\"configuration\":{\"chunk_shape\":[4,4]}}",
	"{\"name\":\"default\",\"configuration\":{\"separator\":\"/\"}}", "0",
	SHARDING, "{}", "[\"y\",\"x\"]",
};

/* The default zarr.json with member `key` replaced by `value` (dropped
 * when value is NULL; appended when key is not a default member). */
static char *meta_with(const char *key, const char *value)
{
	size_t cap = 4096 + (value ? strlen(value) : 0), n = 0;
	char *t = malloc(cap);
	int found = 0;

	if (t == NULL)
		bail("out of memory");
	n += (size_t)snprintf(t + n, cap - n, "{");
	for (size_t i = 0; i < sizeof(meta_keys) / sizeof(meta_keys[0]); i++) {
		const char *v = meta_defaults[i];

		if (key != NULL && strcmp(key, meta_keys[i]) == 0) {
			found = 1;
			v = value;
		}
		if (v != NULL)
			n += (size_t)snprintf(t + n, cap - n, "%s\"%s\":%s",
					      n > 1 ? "," : "", meta_keys[i], v);
	}
	if (key != NULL && !found)
		n += (size_t)snprintf(t + n, cap - n, ",\"%s\":%s", key, value);
	snprintf(t + n, cap - n, "}");
	return t;
}

static void expect_open(const char *text, int code, const char *what)
{
	char *dir = new_store("meta");
	shardpipe_reader *r = (shardpipe_reader *)&r;
	int rc;

	write_text(dir, "zarr.json", text);
	rc = shardpipe_reader_open(&r, dir);
	if (!is_int(rc, code, "%s", what))
		diag("message: %s", shardpipe_last_error_message());
	if (rc != SHARDPIPE_OK)
		ok(r == NULL && strstr(shardpipe_last_error_message(),
				       "zarr.json") != NULL,
		   "  refused with NULL and a message: %s",
		   shardpipe_last_error_message());
	shardpipe_reader_close(rc == SHARDPIPE_OK ? r : NULL);
	test_rmtree(dir);
	free(dir);
}

static void test_metadata(void)
{
	static const struct {
		const char *key, *value;
		int code;
	} cases[] = {
		{ NULL, NULL, SHARDPIPE_OK },
		{ "zarr_format", NULL, SHARDPIPE_ERR_FORMAT },
		{ "zarr_format", "2", SHARDPIPE_ERR_FORMAT },
		{ "zarr_format", "\"3\"", SHARDPIPE_ERR_FORMAT },
		{ "node_type", "\"group\"", SHARDPIPE_ERR_FORMAT },
		{ "node_type", NULL, SHARDPIPE_ERR_FORMAT },
		{ "shape", NULL, SHARDPIPE_ERR_FORMAT },
		{ "shape", "\"8\"", SHARDPIPE_ERR_FORMAT },
		{ "shape", "[]", SHARDPIPE_ERR_UNSUPPORTED },
		{ "shape", "[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1]",
		  SHARDPIPE_ERR_UNSUPPORTED },
		{ "shape", "[-1,8]", SHARDPIPE_ERR_FORMAT },
		{ "shape", "[8.0,8]", SHARDPIPE_ERR_FORMAT },
		{ "shape", "[1e400,8]", SHARDPIPE_ERR_FORMAT },
		{ "shape", "[18446744073709551616,8]", SHARDPIPE_ERR_FORMAT },
		{ "shape", "[18446744073709551615,8]", SHARDPIPE_OK },
		{ "shape", "[8]", SHARDPIPE_ERR_FORMAT },
		{ "shape", "[8,null]", SHARDPIPE_ERR_FORMAT },
		{ "data_type", NULL, SHARDPIPE_ERR_FORMAT },
		{ "data_type", "\"complex64\"", SHARDPIPE_ERR_UNSUPPORTED },
		{ "data_type", "5", SHARDPIPE_ERR_FORMAT },
		{ "data_type", "{\"name\":\"x\"}", SHARDPIPE_ERR_UNSUPPORTED },
		{ "chunk_grid", NULL, SHARDPIPE_ERR_FORMAT },
		{ "chunk_grid", "[]", SHARDPIPE_ERR_FORMAT },
		{ "chunk_grid", "{\"name\":\"rectilinear\",\"configuration\":"
				"{\"chunk_shape\":[4,4]}}",
		  SHARDPIPE_ERR_UNSUPPORTED },
		{ "chunk_grid", "{\"name\":\"regular\"}", SHARDPIPE_ERR_FORMAT },
		{ "chunk_grid", "{\"name\":\"regular\",\"configuration\":"
				"{\"chunk_shape\":[0,4]}}",
		  SHARDPIPE_ERR_FORMAT },
		{ "chunk_grid", "{\"name\":\"regular\",\"configuration\":"
				"{\"chunk_shape\":[4]}}",
		  SHARDPIPE_ERR_FORMAT },
		{ "chunk_key_encoding", NULL, SHARDPIPE_ERR_FORMAT },
		{ "chunk_key_encoding", "{\"name\":\"default\",\"configuration\":"
					"{\"separator\":\"-\"}}",
		  SHARDPIPE_ERR_FORMAT },
		{ "chunk_key_encoding", "{\"name\":\"foo\"}",
		  SHARDPIPE_ERR_UNSUPPORTED },
		{ "chunk_key_encoding", "{\"name\":\"v2\",\"configuration\":7}",
		  SHARDPIPE_ERR_FORMAT },
		{ "chunk_key_encoding", "{\"name\":\"v2\"}", SHARDPIPE_OK },
		{ "fill_value", NULL, SHARDPIPE_ERR_FORMAT },
		{ "fill_value", "\"x\"", SHARDPIPE_ERR_FORMAT },
		{ "fill_value", "4294967296", SHARDPIPE_ERR_FORMAT },
		{ "codecs", NULL, SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[]", SHARDPIPE_ERR_FORMAT },
		{ "codecs", "{}", SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[7]", SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[{\"configuration\":{}}]", SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[{\"name\":\"transpose\",\"configuration\":"
			    "{\"order\":[1,0]}}," BYTES_LE "]",
		  SHARDPIPE_ERR_UNSUPPORTED },
		{ "codecs", "[{\"name\":\"zstd\"}]", SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[{\"name\":\"bytes\",\"configuration\":"
			    "{\"endian\":\"middle\"}}]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[{\"name\":\"bytes\"}]", SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[" BYTES_LE ",{\"name\":\"zstd\"},{\"name\":\"gzip\"}]",
		  SHARDPIPE_ERR_UNSUPPORTED },
		/* blosc (codec spec v1.0): configuration checked before
		 * anything else, so these hold with or without c-blosc. */
		{ "codecs", "[" BYTES_LE ",{\"name\":\"blosc\"}]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[" BYTES_LE "," BLOSC_CONF("\"zstd\"", "10",
							"\"shuffle\"", "2") "]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[" BYTES_LE "," BLOSC_CONF("\"zstd\"", "1",
							"1", "2") "]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[" BYTES_LE "," BLOSC_CONF("\"brotli\"", "1",
							"\"shuffle\"", "2") "]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[" BYTES_LE "," BLOSC_CONF("\"zstd\"", "1",
							"\"shuffle\"", "0") "]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[" BYTES_LE ",{\"name\":\"blosc\",\"configuration\":"
			    "{\"cname\":\"lz4\",\"clevel\":5,\"shuffle\":"
			    "\"shuffle\"}}]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[" BYTES_LE ",{\"name\":\"blosc\",\"configuration\":"
			    "{\"cname\":\"lz4\",\"clevel\":5,\"shuffle\":"
			    "\"noshuffle\"}}]",
		  BLOSC_OK },
		{ "codecs", "[" BYTES_LE "," BLOSC_CONF("\"zstd\"", "1",
							"\"bitshuffle\"", "2")
			    ",{\"name\":\"crc32c\"}]",
		  BLOSC_OK },
		{ "codecs", "[" BYTES_LE "," BLOSC_CONF("\"zstd\"", "1",
							"\"shuffle\"", "2")
			    ",{\"name\":\"zstd\"}]",
		  SHARDPIPE_ERR_UNSUPPORTED },
		{ "codecs", "[" BLOSC_CONF("\"zstd\"", "1", "\"shuffle\"", "2")
			    "]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[" BYTES_LE "," BYTES_LE "]", SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[" BYTES_LE ",{\"name\":\"crc32c\",\"configuration\":"
			    "{\"a\":1}}]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[" BYTES_LE ",{\"name\":\"zstd\",\"configuration\":"
			    "{\"level\":\"x\"}}]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[" BYTES_LE ",\"crc32c\"]", SHARDPIPE_OK },
		{ "codecs", "[" BYTES_LE ",{\"name\":\"crc32c\"},{\"name\":"
			    "\"gzip\"},{\"name\":\"crc32c\"}]",
		  SHARDPIPE_OK },
		{ "codecs", SHARD_WITH("[{\"name\":\"sharding_indexed\"}]",
				       IDX_OK, "\"end\""),
		  SHARDPIPE_ERR_UNSUPPORTED },
		{ "codecs", "[{\"name\":\"sharding_indexed\",\"configuration\":{"
			    "\"chunk_shape\":[3,4],\"codecs\":[" BYTES_LE "],"
			    "\"index_codecs\":" IDX_OK "}}]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", SHARD_WITH("[" BYTES_LE "]", IDX_OK, "\"middle\""),
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", SHARD_WITH("[" BYTES_LE "]", IDX_OK, "\"start\""),
		  SHARDPIPE_OK },
		{ "codecs", SHARD_WITH("[" BYTES_LE "]",
				       "[" BYTES_LE ",{\"name\":\"zstd\"}]",
				       "\"end\""),
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", SHARD_WITH("[" BYTES_LE "]",
				       "[" BYTES_LE ",{\"name\":\"blosc\"}]",
				       "\"end\""),
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", SHARD_WITH("[" BYTES_LE "," BLOSC_CONF("\"lz4\"",
							"9", "\"shuffle\"",
							"2") "]",
				       IDX_OK, "\"start\""),
		  BLOSC_OK },
		{ "codecs", SHARD_WITH("[" BYTES_LE "]", "[]", "\"end\""),
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", SHARD_WITH("[]", IDX_OK, "\"end\""),
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[{\"name\":\"sharding_indexed\"}]",
		  SHARDPIPE_ERR_FORMAT },
		{ "codecs", "[{\"name\":\"sharding_indexed\",\"configuration\":{"
			    "\"chunk_shape\":[2,2],\"codecs\":[" BYTES_LE "],"
			    "\"index_codecs\":" IDX_OK "}},{\"name\":\"crc32c\"}]",
		  SHARDPIPE_ERR_UNSUPPORTED },
		{ "attributes", "[]", SHARDPIPE_ERR_FORMAT },
		{ "dimension_names", "[\"a\"]", SHARDPIPE_ERR_FORMAT },
		{ "dimension_names", "[1,2]", SHARDPIPE_ERR_FORMAT },
		{ "dimension_names", "[null,null]", SHARDPIPE_OK },
		{ "dimension_names", "null", SHARDPIPE_OK },
		{ "foo", "1", SHARDPIPE_ERR_UNSUPPORTED },
		{ "foo", "{\"must_understand\":false}", SHARDPIPE_OK },
		{ "foo", "{\"must_understand\":true}", SHARDPIPE_ERR_UNSUPPORTED },
		{ "storage_transformers", "[]", SHARDPIPE_OK },
		{ "storage_transformers", "[{\"name\":\"x\"}]",
		  SHARDPIPE_ERR_UNSUPPORTED },
		{ "zarr_format", "3,\"zarr_format\":3", SHARDPIPE_ERR_FORMAT },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = meta_with(cases[i].key, cases[i].value);
		char what[400];

		snprintf(what, sizeof(what), "zarr.json with %s = %.120s",
			 cases[i].key ? cases[i].key : "(defaults)",
			 cases[i].value ? cases[i].value : "(absent)");
		expect_open(t, cases[i].code, what);
		free(t);
	}

	/* Whole documents. */
	expect_open("", SHARDPIPE_ERR_FORMAT, "empty zarr.json");
	expect_open("[]", SHARDPIPE_ERR_FORMAT, "zarr.json holds an array");
	expect_open("{", SHARDPIPE_ERR_FORMAT, "truncated zarr.json");
	{
		size_t n = 100000;
		char *deep = malloc(n + 2), *t;

		memset(deep, '[', n);
		deep[n] = '\0';
		t = meta_with("attributes", deep);
		expect_open(t, SHARDPIPE_ERR_FORMAT,
			    "100000 nested arrays in the attributes");
		free(t);
		memset(deep, '1', 5000);
		deep[5000] = '\0';
		t = meta_with("fill_value", deep);
		expect_open(t, SHARDPIPE_ERR_FORMAT, "a 5000-digit fill_value");
		free(t);
		free(deep);
	}
	{
		char *dir = new_store("meta"), path[4096];
		shardpipe_reader *r;
		FILE *f;

		snprintf(path, sizeof(path), "%s/zarr.json", dir);
		f = fopen(path, "wb");
		if (f == NULL || fseek(f, 17 << 20, SEEK_SET) != 0 ||
		    fputc(' ', f) == EOF || fclose(f) != 0)
			bail("cannot make a big zarr.json");
		is_int(shardpipe_reader_open(&r, dir), SHARDPIPE_ERR_FORMAT,
		       "a 17 MiB zarr.json is refused");
		unlink(path);
		is_int(shardpipe_reader_open(&r, dir), SHARDPIPE_ERR_FORMAT,
		       "a directory without zarr.json is refused");
		mkdir(path, 0755);
		is_int(shardpipe_reader_open(&r, dir), SHARDPIPE_ERR_FORMAT,
		       "a zarr.json directory is refused");
		rmdir(path);
		write_text(dir, ".zarray", "{}");
		is_int(shardpipe_reader_open(&r, dir),
		       SHARDPIPE_ERR_UNSUPPORTED, "a Zarr v2 array is refused");
		ok(strstr(shardpipe_last_error_message(), "v2") != NULL,
		   "  saying it is Zarr v2");
		snprintf(path, sizeof(path), "%s/nonexistent", dir);
		is_int(shardpipe_reader_open(&r, path), SHARDPIPE_ERR_PATH,
		       "a missing path is refused");
		is_int(shardpipe_reader_open(NULL, dir),
		       SHARDPIPE_ERR_INVALID_ARGUMENT, "NULL out is refused");
		test_rmtree(dir);
		free(dir);
	}
}

/* ------------------------------------------------------------- hostile */

/* The base store: 8x8 uint32, shards 4x4, chunks 2x2, zstd, index at the
 * end with its CRC32C, chunks stored densely in order.  Shard c/0/1 is the
 * one the cases below break. */
static struct spec base_spec(void)
{
	struct spec sp;

	memset(&sp, 0, sizeof(sp));
	set_dims(&sp, 2, (uint64_t[]){ 8, 8 }, (uint64_t[]){ 4, 4 },
		 (uint64_t[]){ 2, 2 });
	sp.dtype = SHARDPIPE_DTYPE_UINT32;
	sp.sharded = 1;
	sp.index_crc = 1;
	sp.codec = 1;
	return sp;
}

#define N_INNER 4
#define IBYTES (16 * N_INNER + 4)

struct shard_file {
	uint8_t *data;
	size_t n;
};

static struct shard_file load_shard(const char *dir, const char *key)
{
	char path[4096];
	struct shard_file f;

	snprintf(path, sizeof(path), "%s/%s", dir, key);
	f.data = test_slurp(path, &f.n);
	if (f.data == NULL)
		bail("cannot read %s", path);
	return f;
}

static void set_entry(struct shard_file *f, int i, uint64_t off, uint64_t nb,
		      int fix_crc)
{
	uint8_t *ix = f->data + f->n - IBYTES;

	test_put_le(ix + 16 * i, off, 8);
	test_put_le(ix + 16 * i + 8, nb, 8);
	if (fix_crc)
		test_put_le(ix + 16 * N_INNER,
			    test_crc32c(ix, 16 * N_INNER), 4);
}

static uint64_t get_entry(const struct shard_file *f, int i, int which)
{
	const uint8_t *p = f->data + f->n - IBYTES + 16 * i + 8 * which;
	uint64_t v = 0;

	for (int k = 7; k >= 0; k--)
		v = v << 8 | p[k];
	return v;
}

/*
 * Both a whole read and a check must fail with `code`, with a message
 * holding each needle; a read of shard c/0/0 alone must still succeed.
 */
static void expect_fault(const char *dir, int code, const char *n1,
			 const char *n2, const char *what)
{
	shardpipe_reader *r;
	uint64_t start[2] = { 0, 0 }, count[2] = { 8, 8 }, small[2] = { 4, 4 };
	uint32_t out[64];
	int rc = shardpipe_reader_open(&r, dir);
	const char *m;

	if (!is_int(rc, SHARDPIPE_OK, "%s: the store opens", what))
		return;
	rc = shardpipe_reader_read(r, start, count, out, sizeof(out));
	m = shardpipe_reader_message(r);
	is_int(rc, code, "%s: read fails with %d", what, code);
	ok(strstr(m, n1) != NULL && (n2 == NULL || strstr(m, n2) != NULL),
	   "  read message names %s%s%s: %s", n1, n2 ? " and " : "",
	   n2 ? n2 : "", m);
	rc = shardpipe_reader_check(r);
	m = shardpipe_reader_message(r);
	is_int(rc, code, "%s: check fails with %d", what, code);
	ok(strstr(m, n1) != NULL && (n2 == NULL || strstr(m, n2) != NULL),
	   "  check message names %s%s%s: %s", n1, n2 ? " and " : "",
	   n2 ? n2 : "", m);
	is_int(shardpipe_reader_read(r, start, small, out, sizeof(out)), SHARDPIPE_OK,
	       "  a read that misses the damaged shard works");
	shardpipe_reader_close(r);
}

/* A fresh base store, with spec changes applied by the caller. */
static char *base_store(const struct spec *sp)
{
	char *dir = new_store("bad");
	size_t n;
	uint8_t *ref = make_ref(sp, &n);

	write_store(dir, sp, ref);
	free(ref);
	return dir;
}

/* expect_fault on a fresh store written from sp, removed afterwards. */
static void fresh_fault(const struct spec *sp, int code, const char *n1,
			const char *n2, const char *what)
{
	char *dir = base_store(sp);

	expect_fault(dir, code, n1, n2, what);
	test_rmtree(dir);
	free(dir);
}

static void test_hostile(void)
{
	struct spec sp = base_spec();
	struct shard_file f;
	char *dir;

	/* Shard c/0/1 is shard number 1 in the grid. */
	sp.sab_shard = 1;

	dir = base_store(&sp);
	f = load_shard(dir, "c/0/1");
	write_file(dir, "c/0/1", f.data, 10);
	expect_fault(dir, SHARDPIPE_ERR_FORMAT, "shard c/0/1", "index",
		     "a shard shorter than its index");
	/* Drop the first 5 bytes: the index survives, the offsets now point
	 * past the body's end for the last chunk. */
	write_file(dir, "c/0/1", f.data + 5, f.n - 5);
	expect_fault(dir, SHARDPIPE_ERR_FORMAT, "shard c/0/1, chunk (1,1)",
		     "outside", "a shard truncated at its start");

	set_entry(&f, 2, (uint64_t)1 << 40, get_entry(&f, 2, 1), 1);
	write_file(dir, "c/0/1", f.data, f.n);
	expect_fault(dir, SHARDPIPE_ERR_FORMAT, "shard c/0/1, chunk (1,0)",
		     "outside", "an offset beyond the file");
	set_entry(&f, 2, UINT64_MAX - 3, 8, 1);
	write_file(dir, "c/0/1", f.data, f.n);
	expect_fault(dir, SHARDPIPE_ERR_FORMAT, "chunk (1,0)", "outside",
		     "an offset whose end wraps around 2^64");
	free(f.data);
	test_rmtree(dir);
	free(dir);

	dir = base_store(&sp);
	f = load_shard(dir, "c/0/1");
	set_entry(&f, 3, get_entry(&f, 2, 0), get_entry(&f, 3, 1), 1);
	write_file(dir, "c/0/1", f.data, f.n);
	expect_fault(dir, SHARDPIPE_ERR_FORMAT, "shard c/0/1, chunk (1,", "overlap",
		     "two chunks sharing bytes");
	free(f.data);

	f = load_shard(dir, "c/0/0");
	write_file(dir, "c/0/1", f.data, f.n);
	f.data[f.n - IBYTES + 3] ^= 0x10;
	write_file(dir, "c/0/1", f.data, f.n);
	expect_fault(dir, SHARDPIPE_ERR_CORRUPT, "shard c/0/1", "checksum",
		     "an index whose CRC32C does not match");
	f.data[f.n - IBYTES + 3] ^= 0x10;
	{
		uint64_t off1 = get_entry(&f, 1, 0);

		set_entry(&f, 1, UINT64_MAX, 5, 1);
		write_file(dir, "c/0/1", f.data, f.n);
		expect_fault(dir, SHARDPIPE_ERR_FORMAT,
			     "shard c/0/1, chunk (0,1)", "neither",
			     "an entry half empty");
		set_entry(&f, 1, off1, 0, 1);
	}
	write_file(dir, "c/0/1", f.data, f.n);
	expect_fault(dir, SHARDPIPE_ERR_FORMAT, "shard c/0/1, chunk (0,1)",
		     NULL, "an entry of 0 bytes");
	free(f.data);

	/* 1000 bytes of padding up front, so a chunk can claim more bytes
	 * than zstd could ever make of a 16-byte chunk. */
	f = load_shard(dir, "c/0/0");
	{
		struct shard_file g;

		g.n = f.n + 1000;
		g.data = calloc(1, g.n);
		memcpy(g.data + 1000, f.data, f.n);
		for (int i = 0; i < N_INNER; i++)
			set_entry(&g, i, get_entry(&g, i, 0) + 1000,
				  get_entry(&g, i, 1), 1);
		set_entry(&g, 0, 0, 900, 1);
		write_file(dir, "c/0/1", g.data, g.n);
		expect_fault(dir, SHARDPIPE_ERR_FORMAT,
			     "shard c/0/1, chunk (0,0)", "more than",
			     "an entry larger than the codec bound");
		free(g.data);
	}
	free(f.data);

	/* A directory where the shard should be. */
	{
		char path[4096];

		snprintf(path, sizeof(path), "%s/c/0/1", dir);
		unlink(path);
		mkdir(path, 0755);
		expect_fault(dir, SHARDPIPE_ERR_FORMAT, "shard c/0/1",
			     "regular", "a directory in place of a shard");
	}
	test_rmtree(dir);
	free(dir);

	/* Chunks that do not decode to their size. */
	sp.sab_chunk = 1;
	sp.sab = SAB_SHORT;
	fresh_fault(&sp, SHARDPIPE_ERR_CORRUPT, "shard c/0/1, chunk (0,1)",
		    "expected", "a chunk 4 bytes short (zstd)");
	sp.codec = 2;
	fresh_fault(&sp, SHARDPIPE_ERR_CORRUPT, "shard c/0/1, chunk (0,1)",
		    NULL, "a chunk 4 bytes short (gzip)");
	sp.codec = 0;
	fresh_fault(&sp, SHARDPIPE_ERR_CORRUPT, "shard c/0/1, chunk (0,1)",
		    "expected", "a chunk 4 bytes short (uncompressed)");
	sp.codec = 1;
	sp.sab = SAB_MAGIC;
	fresh_fault(&sp, SHARDPIPE_ERR_CORRUPT, "shard c/0/1, chunk (0,1)",
		    "zstd", "a chunk with a broken zstd magic");
	sp.sab = SAB_CRC;
	sp.inner_crc = 1;
	sp.index_start = 1;
	fresh_fault(&sp, SHARDPIPE_ERR_CORRUPT, "shard c/0/1, chunk (0,1)",
		    "crc32c", "a chunk failing its crc32c (index at start)");

	/* Unsharded: every chunk is its own file. */
	sp = base_spec();
	sp.sharded = 0;
	set_dims(&sp, 2, (uint64_t[]){ 8, 8 }, (uint64_t[]){ 4, 4 },
		 (uint64_t[]){ 4, 4 });
	sp.sab_shard = 1;
	sp.sab = SAB_SHORT;
	dir = base_store(&sp);
	expect_fault(dir, SHARDPIPE_ERR_CORRUPT, "chunk c/0/1", "expected",
		     "an unsharded chunk 4 bytes short");
	{
		uint8_t junk[4096];

		memset(junk, 1, sizeof(junk));
		write_file(dir, "c/0/1", junk, sizeof(junk));
		expect_fault(dir, SHARDPIPE_ERR_FORMAT, "chunk c/0/1",
			     "more than", "an unsharded chunk too large");
		write_file(dir, "c/0/1", junk, 0);
		expect_fault(dir, SHARDPIPE_ERR_CORRUPT, "chunk c/0/1", NULL,
			     "an empty unsharded chunk file");
	}
	test_rmtree(dir);
	free(dir);
}

/* Random damage to a good store: any outcome but a crash, a hang or a
 * success that returns wrong data is fine. */
static void test_damage(int iterations)
{
	int failed = 0, passed = 0, wrong = 0;

	for (int it = 0; it < iterations; it++) {
		struct spec sp = base_spec();
		struct shard_file f;
		shardpipe_reader *r;
		size_t n;
		uint8_t *ref = make_ref(&sp, &n);
		char *dir = new_store("dmg");
		uint64_t start[2] = { 0, 0 };
		uint32_t out[64];
		int rc;

		sp.index_start = (int)(test_rand(&rng) % 2);
		sp.inner_crc = (int)(test_rand(&rng) % 2);
		sp.codec = (int)(test_rand(&rng) % 3);
		write_store(dir, &sp, ref);
		f = load_shard(dir, "c/1/0");
		for (int k = 1 + (int)(test_rand(&rng) % 3); k > 0; k--)
			f.data[test_rand(&rng) % f.n] ^=
				(uint8_t)(1 + test_rand(&rng) % 255);
		if (test_rand(&rng) % 4 == 0)
			f.n -= test_rand(&rng) % f.n;
		write_file(dir, "c/1/0", f.data, f.n);
		free(f.data);
		if (shardpipe_reader_open(&r, dir) != SHARDPIPE_OK)
			bail("open: %s", shardpipe_last_error_message());
		rc = shardpipe_reader_read(r, start, sp.shape, out, sizeof(out));
		if (rc == SHARDPIPE_OK) {
			/* Damage to a payload without its own checksum may
			 * go unseen; with one, wrong data is a failure. */
			passed++;
			if (memcmp(out, ref, n) != 0 && sp.inner_crc)
				wrong++;
		} else {
			failed++;
			if (strstr(shardpipe_reader_message(r), "c/1/0") == NULL)
				wrong++;
		}
		shardpipe_reader_check(r);
		shardpipe_reader_close(r);
		test_rmtree(dir);
		free(dir);
		free(ref);
	}
	ok(wrong == 0,
	   "%d damaged shards: %d refused naming the shard, %d read", iterations,
	   failed, passed);
}

/* ------------------------------------------------------------- corpus */

/*
 * t/data/reader holds zarr.json files in the forms other writers use:
 * ok-*.json must open (and read as the fill value, having no chunks),
 * bad-format-*.json and bad-unsupported-*.json must be refused so.
 */
static void test_corpus(void)
{
	const char *top = getenv("top_srcdir");
	char path[4096];
	struct dirent *e;
	DIR *d;
	int seen = 0;

	snprintf(path, sizeof(path), "%s/t/data/reader", top ? top : ".");
	d = opendir(path);
	if (d == NULL) {
		skip(1, "no corpus at %s", path);
		return;
	}
	while ((e = readdir(d)) != NULL) {
		const char *n = e->d_name;
		int code;
		char file[4400], *dir;
		void *text;
		size_t len;
		shardpipe_reader *r;

		if (strncmp(n, "ok-", 3) == 0)
			code = SHARDPIPE_OK;
		else if (strncmp(n, "bad-format-", 11) == 0)
			code = SHARDPIPE_ERR_FORMAT;
		else if (strncmp(n, "bad-unsupported-", 16) == 0)
			code = SHARDPIPE_ERR_UNSUPPORTED;
		else
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, n);
		text = test_slurp(file, &len);
		if (text == NULL)
			bail("cannot read %s", file);
		dir = new_store("corpus");
		write_file(dir, "zarr.json", text, len);
		free(text);
		if (!is_int(shardpipe_reader_open(&r, dir), code, "corpus %s", n))
			diag("%s", shardpipe_last_error_message());
		if (code == SHARDPIPE_OK && r != NULL) {
			shardpipe_array_info info;
			uint64_t st[MAXR] = { 0 }, cnt[MAXR];
			uint8_t out[64];

			shardpipe_reader_info(r, &info);
			for (int k = 0; k < info.rank; k++)
				cnt[k] = info.shape[k] ? 1 : 0;
			ok(shardpipe_reader_read(r, st, cnt, out, sizeof(out)) == SHARDPIPE_OK &&
			   shardpipe_reader_check(r) == SHARDPIPE_OK,
			   "  reads its first element and checks clean");
			shardpipe_reader_close(r);
		}
		test_rmtree(dir);
		free(dir);
		seen++;
	}
	closedir(d);
	ok(seen >= 6, "the corpus held %d documents", seen);
}

/* Mutated zarr.json over a store with real shards: open may refuse it,
 * or open and then read and check whatever geometry it now claims; none
 * of it may crash or hang. */
static void test_meta_fuzz(int iterations)
{
	struct spec sp = base_spec();
	static const char alphabet[] = "{}[]\",:0123456789-.e \\";
	char *dir = base_store(&sp), path[4096];
	size_t len;
	char *text, *buf;
	int opened = 0;
	uint64_t *out = malloc(8 * 8 * 8 * sizeof(uint64_t));

	snprintf(path, sizeof(path), "%s/zarr.json", dir);
	text = test_slurp(path, &len);
	buf = malloc(len + 1);
	if (text == NULL || buf == NULL || out == NULL)
		bail("out of memory");
	for (int it = 0; it < iterations; it++) {
		shardpipe_reader *r;
		size_t n = len;

		memcpy(buf, text, len);
		for (int k = 1 + (int)(test_rand(&rng) % 3); k > 0 && n; k--) {
			size_t at = (size_t)(test_rand(&rng) % n);

			if (test_rand(&rng) % 2)
				buf[at] = alphabet[test_rand(&rng) %
						   (sizeof(alphabet) - 1)];
			else
				memmove(buf + at, buf + at + 1, --n - at);
		}
		write_file(dir, "zarr.json", buf, n);
		if (shardpipe_reader_open(&r, dir) != SHARDPIPE_OK)
			continue;
		opened++;
		{
			shardpipe_array_info info;
			uint64_t st[MAXR] = { 0 }, cnt[MAXR];

			shardpipe_reader_info(r, &info);
			if (info.rank <= 3) {
				for (int d = 0; d < info.rank; d++)
					cnt[d] = info.shape[d] < 8 ? info.shape[d]
								   : 8;
				shardpipe_reader_read(r, st, cnt, out,
						      8 * 8 * 8 * sizeof(uint64_t));
			}
			shardpipe_reader_check(r);
		}
		shardpipe_reader_close(r);
	}
	/* Reaching here is the assertion (a crash fails the test); the
	 * count shows the mutations were not all refused at open. */
	ok(opened > 0 && opened < iterations,
	   "%d mutated zarr.json files: %d opened, the rest refused, none "
	   "crashed", iterations, opened);
	free(text);
	free(buf);
	free(out);
	test_rmtree(dir);
	free(dir);
}

/* Each bad selection or output is refused with its code before anything
 * is read, the output untouched. */
static void test_strided_refusals(void)
{
	struct spec sp = base_spec();
	char *dir = base_store(&sp);
	shardpipe_reader *r;
	uint32_t out[64];
	static const struct {
		uint64_t start[2], count[2], step[2];
		int64_t stride[2];
		int use_stride, code;
		size_t bytes;
		const char *what;
	} cases[] = {
		{ { 0, 0 }, { 2, 2 }, { 0, 1 }, { 0 }, 0,
		  SHARDPIPE_ERR_INVALID_ARGUMENT, 256, "a step of 0" },
		{ { 2, 0 }, { 4, 1 }, { 2, 1 }, { 0 }, 0,
		  SHARDPIPE_ERR_INVALID_ARGUMENT, 256,
		  "4 elements from 2 by 2 reach 8, beyond 8" },
		{ { 0, 0 }, { 5, 1 }, { 2, 1 }, { 0 }, 0,
		  SHARDPIPE_ERR_INVALID_ARGUMENT, 256,
		  "5 elements by 2 reach 8, beyond 8" },
		{ { 0, 0 }, { 1, 1 }, { UINT64_MAX, 1 }, { 0 }, 0,
		  SHARDPIPE_OK, 256, "a huge step over one element" },
		{ { 0, 0 }, { 2, 1 }, { UINT64_MAX, 1 }, { 0 }, 0,
		  SHARDPIPE_ERR_INVALID_ARGUMENT, 256,
		  "a huge step over two elements" },
		{ { 0, 0 }, { 2, 2 }, { 1, 1 }, { 8, -4 }, 1,
		  SHARDPIPE_ERR_INVALID_ARGUMENT, 256, "a negative stride" },
		{ { 0, 0 }, { 2, 2 }, { 1, 1 }, { 4, 4 }, 1,
		  SHARDPIPE_ERR_INVALID_ARGUMENT, 256, "overlapping strides" },
		{ { 0, 0 }, { 2, 2 }, { 1, 1 }, { 8, 2 }, 1,
		  SHARDPIPE_ERR_INVALID_ARGUMENT, 256,
		  "a stride shorter than an element" },
		{ { 0, 0 }, { 2, 2 }, { 1, 1 }, { 4, 8 }, 1,
		  SHARDPIPE_OK, 16, "transposed, exactly 16 bytes" },
		{ { 0, 0 }, { 2, 2 }, { 1, 1 }, { 4, 8 }, 1,
		  SHARDPIPE_ERR_INVALID_ARGUMENT, 15,
		  "transposed, one byte short" },
		{ { 0, 0 }, { 2, 2 }, { 1, 1 }, { 0 }, 0,
		  SHARDPIPE_ERR_INVALID_ARGUMENT, 15, "packed, one byte short" },
		{ { 0, 0 }, { 4, 2 }, { 1, 1 }, { INT64_MAX, 4 }, 1,
		  SHARDPIPE_ERR_OVERFLOW, 256, "strides that overflow" },
	};

	if (!is_int(shardpipe_reader_open(&r, dir), SHARDPIPE_OK,
		    "open a store for the strided refusals"))
		bail("%s", shardpipe_last_error_message());
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc;

		memset(out, 0xa5, sizeof(out));
		rc = shardpipe_reader_read_strided(
			r, cases[i].start, cases[i].count, cases[i].step, out,
			cases[i].use_stride ? cases[i].stride : NULL,
			cases[i].bytes);
		is_int(rc, cases[i].code, "strided read, %s: %s",
		       cases[i].what, shardpipe_reader_message(r));
		if (cases[i].code != SHARDPIPE_OK) {
			int untouched = 1;

			for (size_t k = 0; k < 64; k++)
				untouched &= out[k] == 0xa5a5a5a5u;
			ok(untouched, "strided read, %s: output untouched",
			   cases[i].what);
		}
	}
	is_int(shardpipe_reader_set_threads(r, -1),
	       SHARDPIPE_ERR_INVALID_ARGUMENT, "threads -1 refused");
	is_int(shardpipe_reader_set_threads(r, 4097),
	       SHARDPIPE_ERR_INVALID_ARGUMENT, "threads 4097 refused");
	shardpipe_reader_close(r);
	test_rmtree(dir);
	free(dir);
}

/*
 * Reads that end early in a chunk decode only its prefix (design §24.2):
 * zstd chunks of 512 KiB, four or more blocks each.  A read of a chunk's
 * first rows, or of a box ending inside it, equals the reference.  A
 * chunk cut to half its frame still gives the rows its first blocks hold,
 * and fails, naming the chunk, for any read (and check) that needs more;
 * a frame that declares another size fails even for its first row.
 */
static void prefix_read(shardpipe_reader *r, const uint8_t *ref,
			uint64_t y0, uint64_t ny, uint64_t x0, uint64_t nx,
			int code, const char *what)
{
	uint64_t start[2] = { y0, x0 }, count[2] = { ny, nx };
	uint16_t *out = test_xmalloc(ny * nx * 2);
	int rc = shardpipe_reader_read(r, start, count, out, ny * nx * 2);
	int same = 1;

	is_int(rc, code, "%s: rows %llu..%llu, cols %llu..%llu: %s", what,
	       (unsigned long long)y0, (unsigned long long)(y0 + ny - 1),
	       (unsigned long long)x0, (unsigned long long)(x0 + nx - 1),
	       code == SHARDPIPE_OK ? "read" : "refused");
	if (rc != code)
		diag("%s", shardpipe_reader_message(r));
	if (code != SHARDPIPE_OK) {
		ok(strstr(shardpipe_reader_message(r), "chunk (0,0)") != NULL,
		   "  the message names the chunk: %s",
		   shardpipe_reader_message(r));
	} else {
		for (uint64_t y = 0; y < ny && same; y++)
			same = memcmp(out + y * nx,
				      ref + ((y0 + y) * 1024 + x0) * 2,
				      nx * 2) == 0;
		ok(rc == SHARDPIPE_OK && same, "  equals the reference");
	}
	free(out);
}

static void put_chunk(const char *dir, const uint8_t *frame, size_t n)
{
	uint8_t *b = test_xmalloc(n + 20);

	memcpy(b, frame, n);
	test_put_le(b + n, 0, 8);
	test_put_le(b + n + 8, n, 8);
	test_put_le(b + n + 16, test_crc32c(b + n, 16), 4);
	write_file(dir, "c/0/0", b, n + 20);
	free(b);
}

static void test_prefix(void)
{
	struct spec sp = base_spec();
	char *dir;
	size_t n, fn, cap = ZSTD_compressBound(512 * 512 * 2 + 4);
	uint8_t *ref, *frame = test_xmalloc(cap), *chunk;
	shardpipe_reader *r;

	set_dims(&sp, 2, (uint64_t[]){ 512, 1024 }, (uint64_t[]){ 512, 512 },
		 (uint64_t[]){ 512, 512 });
	sp.dtype = SHARDPIPE_DTYPE_UINT16;
	dir = new_store("prefix");
	ref = make_ref(&sp, &n);
	/* Random bytes: zstd's blocks then stay raw, 128 KiB each, so half
	 * the frame holds the first rows whatever the seed. */
	test_fill(ref, n, 0, &rng);
	write_store(dir, &sp, ref);
	if (!is_int(shardpipe_reader_open(&r, dir), SHARDPIPE_OK,
		    "prefix: the store opens"))
		bail("%s", shardpipe_last_error_message());
	prefix_read(r, ref, 0, 3, 0, 1024, SHARDPIPE_OK, "prefix");
	prefix_read(r, ref, 100, 57, 300, 500, SHARDPIPE_OK, "prefix");
	prefix_read(r, ref, 0, 512, 0, 1024, SHARDPIPE_OK, "prefix");
	shardpipe_reader_close(r);

	/* Chunk (0,0) as its own frame, cut in half. */
	chunk = test_xmalloc(512 * 512 * 2);
	for (uint64_t y = 0; y < 512; y++)
		memcpy(chunk + y * 1024, ref + y * 2048, 1024);
	fn = ZSTD_compress(frame, cap, chunk, 512 * 512 * 2, 1);
	if (ZSTD_isError(fn))
		bail("zstd: %s", ZSTD_getErrorName(fn));
	put_chunk(dir, frame, fn / 2);
	if (!is_int(shardpipe_reader_open(&r, dir), SHARDPIPE_OK,
		    "prefix, frame cut in half: the store opens"))
		bail("%s", shardpipe_last_error_message());
	prefix_read(r, ref, 0, 2, 0, 512, SHARDPIPE_OK, "frame cut in half");
	prefix_read(r, ref, 500, 12, 0, 10, SHARDPIPE_ERR_CORRUPT,
		    "frame cut in half");
	prefix_read(r, ref, 0, 512, 0, 1024, SHARDPIPE_ERR_CORRUPT,
		    "frame cut in half");
	is_int(shardpipe_reader_check(r), SHARDPIPE_ERR_CORRUPT,
	       "frame cut in half: check refuses it");
	shardpipe_reader_close(r);

	/* A whole frame of two bytes fewer. */
	fn = ZSTD_compress(frame, cap, chunk, 512 * 512 * 2 - 2, 1);
	put_chunk(dir, frame, fn);
	if (!is_int(shardpipe_reader_open(&r, dir), SHARDPIPE_OK,
		    "prefix, short frame: the store opens"))
		bail("%s", shardpipe_last_error_message());
	prefix_read(r, ref, 0, 1, 0, 4, SHARDPIPE_ERR_CORRUPT,
		    "a frame declaring 2 bytes fewer");
	shardpipe_reader_close(r);
	free(chunk);
	free(frame);
	free(ref);
	test_rmtree(dir);
	free(dir);
}

/*
 * Raw chunks whose rows are long enough are read straight into their
 * rows of the output (one scattered read a chunk): more rows than one
 * such read takes (1100 > IOV_MAX's 1024), rows of exactly the shortest
 * length it takes, ragged edges, empty and missing chunks, and the
 * stores it must leave to the usual path (big-endian, a crc32c).  A raw
 * chunk of the wrong size is refused, naming it.
 */
static void test_place_raw(void)
{
	struct spec sp = base_spec();
	char *dir;
	size_t n;
	uint8_t *ref, *bad;
	shardpipe_reader *r;

	sp.codec = 0;
	sp.dtype = SHARDPIPE_DTYPE_UINT16;
	set_dims(&sp, 2, (uint64_t[]){ 1100, 1024 }, (uint64_t[]){ 1100, 512 },
		 (uint64_t[]){ 1100, 256 });
	roundtrip(&sp, 6);
	set_dims(&sp, 3, (uint64_t[]){ 5, 40, 600 }, (uint64_t[]){ 2, 16, 256 },
		 (uint64_t[]){ 1, 8, 128 });
	sp.empty_pct = 10;
	sp.missing_pct = 10;
	roundtrip(&sp, 12);
	sp.big = 1;
	roundtrip(&sp, 4);
	sp.big = 0;
	sp.inner_crc = 1;
	roundtrip(&sp, 4);

	/* Chunk (0,0), a shard of its own: 4 rows of 512 bytes, 2 short. */
	sp = base_spec();
	sp.codec = 0;
	sp.dtype = SHARDPIPE_DTYPE_UINT16;
	set_dims(&sp, 2, (uint64_t[]){ 8, 512 }, (uint64_t[]){ 4, 256 },
		 (uint64_t[]){ 4, 256 });
	dir = new_store("place");
	ref = make_ref(&sp, &n);
	write_store(dir, &sp, ref);
	bad = test_xmalloc(4 * 512);
	memset(bad, 7, 4 * 512);
	put_chunk(dir, bad, 4 * 512 - 2);
	if (!is_int(shardpipe_reader_open(&r, dir), SHARDPIPE_OK,
		    "place, a raw chunk 2 bytes short: the store opens"))
		bail("%s", shardpipe_last_error_message());
	{
		uint64_t st[2] = { 0, 0 }, cnt[2] = { 8, 512 };
		uint8_t *out = test_xmalloc(n);
		int rc = shardpipe_reader_read(r, st, cnt, out, n);

		is_int(rc, SHARDPIPE_ERR_CORRUPT,
		       "a raw chunk 2 bytes short: the read is refused");
		ok(strstr(shardpipe_reader_message(r), "chunk (0,0)") != NULL,
		   "  the message names the chunk: %s",
		   shardpipe_reader_message(r));
		free(out);
	}
	shardpipe_reader_close(r);
	free(bad);
	free(ref);
	test_rmtree(dir);
	free(dir);
}

int main(void)
{
	rng = test_seed();
	root = test_tmpdir("reader");
	plan_lazy();
	test_fixed();
	test_random(40);
	test_fill_values();
	test_strided_refusals();
	test_metadata();
	test_corpus();
	test_hostile();
	test_prefix();
	test_place_raw();
	test_damage(200);
	test_meta_fuzz(1000);
	test_rmtree(root);
	free(root);
	return done_testing();
}
