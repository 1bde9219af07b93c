/*
 * blosc-roundtrip.c - arrays written with the blosc codec on the cpu
 * backend come back exactly, decoded by c-blosc itself.
 *
 * For every element size (1, 2, 4, 8 bytes), every shuffle mode, chunks
 * below one blosc block (some below c-blosc's 128-byte minimum, which it
 * stores) and chunks of many blocks (automatic and forced block sizes),
 * with random, constant and ramp-like data, and levels 0..9 over every
 * compressor this c-blosc has:
 *   1  the stream writes the store (appends of odd sizes, 1..4 threads)
 *   2  zarr.json carries the blosc configuration the spec describes
 *   3  every shard is parsed here and every chunk decoded by
 *      blosc_decompress_ctx() to the chunk cut from the input by this
 *      test's own indexing; each blosc1 header is checked (typesize,
 *      sizes, compressor, shuffle flags, block size)
 *   4  the library's reader returns the input and its check passes
 * Then the same input written on 1 and on 4 threads gives identical
 * shards (c-blosc's output depends on the chunk alone).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#ifdef HAVE_BLOSC
#include <blosc.h>

#define RANK 3

struct geometry {
	const char *what;
	int rank;
	uint64_t size[RANK], chunk[RANK], cps[RANK];
	uint64_t rows;     /* rows appended when size[0] == 0 */
	uint32_t blocksize;
};

struct run {
	const struct geometry *g;
	shardpipe_dtype dtype;
	shardpipe_blosc_cname cname;
	shardpipe_blosc_shuffle shuffle;
	int level;
	int pattern;       /* 0 random, 1 constant, 2 ramp with noise */
	int threads;
	shardpipe_index_location loc;
};

static const char *const cname_text[] = {
	"zstd", "lz4", "lz4hc", "blosclz", "zlib",
};
static const char *const shuffle_text[] = {
	"noshuffle", "shuffle", "bitshuffle",
};

/* The blosc1 header's compressor format code (flags >> 5). */
static int format_code(shardpipe_blosc_cname c)
{
	switch (c) {
	case SHARDPIPE_BLOSC_LZ4:
	case SHARDPIPE_BLOSC_LZ4HC:
		return BLOSC_LZ4_FORMAT;
	case SHARDPIPE_BLOSC_BLOSCLZ:
		return BLOSC_BLOSCLZ_FORMAT;
	case SHARDPIPE_BLOSC_ZLIB:
		return BLOSC_ZLIB_FORMAT;
	default:
		return BLOSC_ZSTD_FORMAT;
	}
}

/* Elements of es bytes: random, one constant value, or a ramp along the
 * last dim plus a little noise in the low byte (what byte shuffle is
 * for: high bytes change slowly). */
static void make_input(uint8_t *p, uint64_t n, size_t es, int pattern,
		       uint64_t *rng)
{
	if (pattern == 0 || pattern == 1) {
		test_fill(p, (size_t)(n * es), pattern, rng);
		return;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t v = (i * 5 + (test_rand(rng) & 7));

		memcpy(p + i * es, (const uint8_t *)&v +
				     (test_host_big() ? 8 - es : 0), es);
	}
}

/* What is wrong with one chunk's blosc1 header, or NULL. */
static const char *check_header(const struct run *r, const uint8_t *h,
				uint64_t nb, size_t chunk_bytes, size_t es)
{
	static char why[200];
	const uint8_t flags = h[2];
	const int memcpyed = flags & BLOSC_MEMCPYED;
	const uint32_t bs = test_le32(h + 8);

	if (nb < 16)
		return "shorter than a blosc header";
	if (h[0] < 1 || h[0] > BLOSC_VERSION_FORMAT) {
		snprintf(why, sizeof(why), "format version %u", h[0]);
		return why;
	}
	if (h[3] != es) {
		snprintf(why, sizeof(why), "typesize %u, expected %zu", h[3],
			 es);
		return why;
	}
	if (test_le32(h + 4) != chunk_bytes || test_le32(h + 12) != nb) {
		snprintf(why, sizeof(why), "nbytes %u cbytes %u, expected "
			 "%zu and %llu", test_le32(h + 4), test_le32(h + 12),
			 chunk_bytes, (unsigned long long)nb);
		return why;
	}
	if (r->level == 0 && !memcpyed)
		return "level 0 but not stored (memcpyed flag clear)";
	if (memcpyed && nb != chunk_bytes + 16)
		return "memcpyed, but cbytes is not nbytes + 16";
	if (!memcpyed && (flags >> 5) != format_code(r->cname)) {
		snprintf(why, sizeof(why), "compressor format %d, expected %d",
			 flags >> 5, format_code(r->cname));
		return why;
	}
	if ((flags & BLOSC_DOSHUFFLE) && r->shuffle != SHARDPIPE_BLOSC_SHUFFLE)
		return "byte-shuffle flag set without byte shuffle";
	if ((flags & BLOSC_DOBITSHUFFLE) &&
	    r->shuffle != SHARDPIPE_BLOSC_BITSHUFFLE)
		return "bit-shuffle flag set without bit shuffle";
	if (!memcpyed && es > 1 && r->shuffle == SHARDPIPE_BLOSC_SHUFFLE &&
	    !(flags & BLOSC_DOSHUFFLE))
		return "byte shuffle asked, flag clear";
	if (!memcpyed && r->shuffle == SHARDPIPE_BLOSC_BITSHUFFLE &&
	    !(flags & BLOSC_DOBITSHUFFLE))
		return "bit shuffle asked, flag clear";
	if (r->g->blocksize == 0 && chunk_bytes < 32768 && !memcpyed &&
	    bs < chunk_bytes) {
		snprintf(why, sizeof(why), "block size %u splits a %zu-byte "
			 "chunk", bs, chunk_bytes);
		return why;
	}
	/* zstd's automatic block is the whole chunk up to 1 MiB
	 * (backends/cpu/blosc.c), not c-blosc's 32 KiB. */
	if (r->g->blocksize == 0 && r->cname == SHARDPIPE_BLOSC_ZSTD &&
	    !memcpyed &&
	    bs != (chunk_bytes < (1u << 20) ? chunk_bytes : (1u << 20)) /
			  es * es) {
		snprintf(why, sizeof(why), "automatic zstd block size %u for "
			 "a %zu-byte chunk", bs, chunk_bytes);
		return why;
	}
	/* A forced block is used as asked (rounded down to whole
	 * elements) by zstd; the codecs c-blosc splits into byte streams
	 * (lz4, lz4hc, blosclz, zlib) get larger blocks at levels > 0. */
	if (r->g->blocksize != 0 &&
	    (r->cname == SHARDPIPE_BLOSC_ZSTD || r->level == 0
		     ? bs != r->g->blocksize / es * es
		     : bs < r->g->blocksize / es * es)) {
		snprintf(why, sizeof(why), "block size %u, forced %u", bs,
			 r->g->blocksize);
		return why;
	}
	return NULL;
}

/* Parse every shard, decode every chunk with c-blosc; 1 when all match. */
static int check_chunks(const struct run *r, const char *root,
			const uint64_t *shape, const uint8_t *in, size_t es,
			int *blocks_max)
{
	const struct geometry *g = r->g;
	uint64_t ccount[RANK], scount[RANK], nsh = 1, per = 1, elems = 1;
	size_t chunk_bytes;
	uint8_t *want, *got;
	int good = 1;

	for (int d = 0; d < g->rank; d++) {
		ccount[d] = test_cdiv(shape[d], g->chunk[d]);
		scount[d] = test_cdiv(ccount[d], g->cps[d]);
		nsh *= scount[d];
		per *= g->cps[d];
		elems *= g->chunk[d];
	}
	chunk_bytes = (size_t)(elems * es);
	want = malloc(chunk_bytes);
	got = malloc(chunk_bytes);
	if (want == NULL || got == NULL)
		bail("out of memory");
	for (uint64_t k = 0; k < nsh && good; k++) {
		uint64_t s[RANK];
		size_t ib = (size_t)(16 * per + 4), len;
		char path[600];
		uint8_t *shard, *index;

		test_shard_path(path, sizeof(path), root, g->rank, scount, k,
				s);
		shard = test_slurp(path, &len);
		if (shard == NULL || len < ib) {
			diag("%s: missing or shorter than its index", path);
			free(shard);
			good = 0;
			break;
		}
		index = r->loc == SHARDPIPE_INDEX_END ? shard + len - ib : shard;
		for (uint64_t slot = 0; slot < per && good; slot++) {
			uint64_t off = test_le64(index + 16 * slot);
			uint64_t nb = test_le64(index + 16 * slot + 8);
			uint64_t cc[RANK], w = slot;
			const char *why;
			int in_grid = 1, dec;

			for (int d = g->rank - 1; d >= 0; d--) {
				cc[d] = s[d] * g->cps[d] + w % g->cps[d];
				w /= g->cps[d];
				in_grid &= cc[d] < ccount[d];
			}
			if (!in_grid)
				continue;
			if (off > len || nb > len - off || nb < 16) {
				diag("%s slot %llu: entry (%llu, %llu) out of "
				     "bounds", path, (unsigned long long)slot,
				     (unsigned long long)off,
				     (unsigned long long)nb);
				good = 0;
				break;
			}
			why = check_header(r, shard + off, nb, chunk_bytes, es);
			if (why != NULL) {
				diag("%s slot %llu: %s", path,
				     (unsigned long long)slot, why);
				good = 0;
				break;
			}
			if (!(shard[off + 2] & BLOSC_MEMCPYED)) {
				int nbk = (int)test_cdiv(chunk_bytes,
						    test_le32(shard + off + 8));

				if (nbk > *blocks_max)
					*blocks_max = nbk;
			}
			test_cut_chunk(g->rank, shape, g->chunk, in, cc, es,
				       want);
			dec = blosc_decompress_ctx(shard + off, got, chunk_bytes,
						   1);
			if (dec != (int)chunk_bytes) {
				diag("%s slot %llu: c-blosc returns %d, "
				     "expected %zu", path,
				     (unsigned long long)slot, dec, chunk_bytes);
				good = 0;
			} else if (!test_same_bytes(got, want, chunk_bytes,
						    "%s slot %llu", path,
						    (unsigned long long)slot)) {
				good = 0;
			}
		}
		free(shard);
	}
	free(want);
	free(got);
	return good;
}

static void fill_desc(shardpipe_desc *d, const struct run *r)
{
	shardpipe_desc_init(d);
	d->rank = r->g->rank;
	d->dtype = r->dtype;
	d->codec = SHARDPIPE_CODEC_BLOSC;
	d->level = r->level;
	d->blosc_cname = r->cname;
	d->blosc_shuffle = r->shuffle;
	d->blosc_blocksize = r->g->blocksize;
	d->index_location = r->loc;
	d->backend = "cpu";
	d->threads = r->threads;
	/* Every chunk's header is checked, so none may be left out: a
	 * constant input is all fill value when its random byte is 0. */
	d->write_empty_chunks = 1;
	for (int k = 0; k < r->g->rank; k++) {
		d->dims[k].size = r->g->size[k];
		d->dims[k].chunk = r->g->chunk[k];
		d->dims[k].chunks_per_shard = r->g->cps[k];
	}
}

/* Stream `total` bytes in odd-sized appends; the close's code. */
static int write_store(const shardpipe_desc *d, const char *root,
		       const uint8_t *in, size_t total, uint64_t *rng)
{
	shardpipe_stream *s;
	int rc = shardpipe_stream_open(&s, root, d);

	if (rc != SHARDPIPE_OK) {
		diag("open: %s", shardpipe_last_error_message());
		return rc;
	}
	for (size_t at = 0; at < total && rc == SHARDPIPE_OK;) {
		size_t n = 1 + (size_t)(test_rand(rng) % 70001);

		if (n > total - at)
			n = total - at;
		rc = shardpipe_stream_append(s, in + at, n);
		at += n;
	}
	if (rc != SHARDPIPE_OK)
		diag("append: %s", shardpipe_stream_message(s));
	if (rc == SHARDPIPE_OK && (rc = shardpipe_stream_close(s)) !=
					  SHARDPIPE_OK)
		diag("close: %s", shardpipe_last_error_message());
	else if (rc != SHARDPIPE_OK)
		shardpipe_stream_close(s);
	return rc;
}

static int read_back(const char *root, const uint64_t *shape, int rank,
		     const uint8_t *in, size_t total, const char *label)
{
	shardpipe_reader *rd;
	uint64_t start[RANK] = { 0 };
	uint8_t *back = malloc(total + 1);
	int rc;

	rc = shardpipe_reader_open(&rd, root);
	if (rc != SHARDPIPE_OK) {
		diag("reader: %s", shardpipe_last_error_message());
		free(back);
		return ok(0, "library reader returns the input %s", label);
	}
	rc = shardpipe_reader_read(rd, start, shape, back, total + 1);
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_reader_check(rd);
	if (rc != SHARDPIPE_OK)
		diag("reader: %s", shardpipe_reader_message(rd));
	shardpipe_reader_close(rd);
	(void)rank;
	rc = rc == SHARDPIPE_OK
		     ? is_blob(back, in, total,
			       "library reader returns the input %s", label)
		     : ok(0, "library reader returns the input %s", label);
	free(back);
	return rc;
}

static int run_one(const struct run *r, const char *tmp, int no,
		   uint64_t *rng)
{
	const struct geometry *g = r->g;
	size_t es = shardpipe_dtype_size(r->dtype), total = es;
	uint64_t shape[RANK], elems = 1;
	char root[600], label[300], want[300];
	shardpipe_desc d;
	uint8_t *in;
	char *meta;
	size_t mlen;
	int rc, good = 1, blocks_max = 0;

	for (int k = 0; k < g->rank; k++) {
		shape[k] = k == 0 && g->size[0] == 0 ? g->rows : g->size[k];
		elems *= shape[k];
	}
	total = (size_t)(elems * es);
	snprintf(label, sizeof(label),
		 "#%d %s %s blosc:%s:%d:%s blocksize %u, %s data, %d threads",
		 no, g->what, shardpipe_dtype_name(r->dtype),
		 cname_text[r->cname], r->level, shuffle_text[r->shuffle],
		 g->blocksize, (const char *[]){ "random", "constant",
						 "ramp" }[r->pattern],
		 r->threads);
	snprintf(root, sizeof(root), "%s/s%d.zarr", tmp, no);
	in = malloc(total + 1);
	if (in == NULL)
		bail("out of memory");
	make_input(in, elems, es, r->pattern, rng);
	fill_desc(&d, r);

	rc = write_store(&d, root, in, total, rng);
	good &= is_int(rc, SHARDPIPE_OK, "write %s", label);

	snprintf(root + strlen(root), sizeof(root) - strlen(root), "/zarr.json");
	meta = test_slurp(root, &mlen);
	root[strlen(root) - strlen("/zarr.json")] = '\0';
	snprintf(want, sizeof(want),
		 "{\"name\": \"blosc\", \"configuration\": {\"cname\": \"%s\", "
		 "\"clevel\": %d, \"shuffle\": \"%s\", \"typesize\": %zu, "
		 "\"blocksize\": %u}}",
		 cname_text[r->cname], r->level, shuffle_text[r->shuffle], es,
		 g->blocksize);
	if (!ok(meta != NULL && strstr(meta, want) != NULL,
		"zarr.json records the blosc configuration %s", label)) {
		good = 0;
		diag("wanted %s", want);
		diag("in %s", meta ? meta : "(no zarr.json)");
	}
	free(meta);

	if (rc == SHARDPIPE_OK) {
		int c = check_chunks(r, root, shape, in, es, &blocks_max);

		good &= ok(c, "c-blosc decodes every chunk to the input, "
			   "headers as asked (up to %d blocks) %s", blocks_max,
			   label);
		good &= read_back(root, shape, g->rank, in, total, label);
	} else {
		ok(0, "c-blosc decodes every chunk %s: the store was not "
		   "written", label);
		ok(0, "the store reads back %s: it was not written", label);
		good = 0;
	}
	test_rmtree(root);
	free(in);
	return good;
}

/* The same chunks on 1 and on 4 threads: identical shard files. */
static void same_on_any_threads(const char *tmp, uint64_t *rng)
{
	static const struct geometry g = {
		"unbounded t,y,x", 3, { 0, 96, 80 }, { 4, 32, 32 },
		{ 2, 2, 2 }, 13, 0
	};
	struct run r = { &g, SHARDPIPE_DTYPE_UINT16, SHARDPIPE_BLOSC_ZSTD,
			 SHARDPIPE_BLOSC_SHUFFLE, 1, 2, 1,
			 SHARDPIPE_INDEX_END };
	size_t total = 13 * 96 * 80 * 2, la, lb;
	uint8_t *in = malloc(total);
	char a[600], b[600], fa[700], fb[700];
	shardpipe_desc d;
	int same = 1;

	make_input(in, total / 2, 2, 2, rng);
	snprintf(a, sizeof(a), "%s/t1.zarr", tmp);
	snprintf(b, sizeof(b), "%s/t4.zarr", tmp);
	fill_desc(&d, &r);
	same &= write_store(&d, a, in, total, rng) == SHARDPIPE_OK;
	r.threads = 4;
	fill_desc(&d, &r);
	same &= write_store(&d, b, in, total, rng) == SHARDPIPE_OK;
	for (int t = 0; t < 2 && same; t++)
		for (int y = 0; y < 2 && same; y++)
			for (int x = 0; x < 2 && same; x++) {
				uint8_t *pa, *pb;

				snprintf(fa, sizeof(fa), "%s/c/%d/%d/%d", a, t,
					 y, x);
				snprintf(fb, sizeof(fb), "%s/c/%d/%d/%d", b, t,
					 y, x);
				pa = test_slurp(fa, &la);
				pb = test_slurp(fb, &lb);
				same = pa && pb && la == lb &&
				       memcmp(pa, pb, la) == 0;
				if (!same)
					diag("%s and %s differ", fa, fb);
				free(pa);
				free(pb);
			}
	ok(same, "blosc shards are identical on 1 and on 4 threads");
	test_rmtree(a);
	test_rmtree(b);
	free(in);
}

int main(void)
{
	static const struct geometry geos[] = {
		/* 35 elements: 35..280 bytes, one block (below 128 bytes
		 * c-blosc stores the chunk). */
		{ "37x23 chunks 5x7 (below one block)", 2, { 37, 23 },
		  { 5, 7 }, { 2, 2 }, 0, 0 },
		/* 32 Ki elements: 32..256 KiB, several automatic blocks at
		 * the higher levels and sizes. */
		{ "150x700 chunks 64x512 (automatic blocks)", 2, { 150, 700 },
		  { 64, 512 }, { 2, 1 }, 0, 0 },
		/* Forced blocks: 8..64 blocks per chunk; 3000 is not a
		 * multiple of 8, and c-blosc rounds it down. */
		{ "unbounded 0x700 chunks 64x512 (3000-byte blocks)", 2,
		  { 0, 700 }, { 64, 512 }, { 1, 2 }, 150, 3000 },
	};
	static const shardpipe_dtype dtypes[] = {
		SHARDPIPE_DTYPE_UINT8, SHARDPIPE_DTYPE_INT16,
		SHARDPIPE_DTYPE_FLOAT32, SHARDPIPE_DTYPE_UINT64,
	};
	static const int levels[] = { 1, 5, 9, 0, 3 };
	uint64_t rng = test_seed();
	char *tmp = test_tmpdir("blosc-roundtrip");
	int no = 0, good = 0, cnames[SHARDPIPE_BLOSC_CNAME_COUNT_], nc = 0;

	if (tmp == NULL)
		bail("no scratch directory");
	for (int c = 0; c < SHARDPIPE_BLOSC_CNAME_COUNT_; c++)
		if (blosc_compname_to_compcode(cname_text[c]) >= 0)
			cnames[nc++] = c;
	diag("c-blosc %s, compressors %s", blosc_get_version_string(),
	     blosc_list_compressors());
	plan_lazy();
	for (size_t t = 0; t < sizeof(dtypes) / sizeof(dtypes[0]); t++)
		for (int sh = 0; sh < SHARDPIPE_BLOSC_SHUFFLE_COUNT_; sh++)
			for (size_t gi = 0; gi < sizeof(geos) / sizeof(geos[0]);
			     gi++)
				for (int pat = 0; pat < 3; pat++) {
					struct run r;

					no++;
					/* zstd at level 1 (the default) every
					 * third run; the rest cycle. */
					r.g = &geos[gi];
					r.dtype = dtypes[t];
					r.shuffle = (shardpipe_blosc_shuffle)sh;
					r.pattern = pat;
					r.cname = no % 3 == 0 ? SHARDPIPE_BLOSC_ZSTD
						  : (shardpipe_blosc_cname)
							    cnames[no % nc];
					r.level = no % 3 == 0 ? 1
						  : levels[(no / 3) % 5];
					/* zstd 9 is libzstd's level 22:
					 * only on the small geometry. */
					if (gi > 0 && r.level == 9 &&
					    r.cname == SHARDPIPE_BLOSC_ZSTD)
						r.level = 7;
					r.threads = 1 + no % 4;
					r.loc = (shardpipe_index_location)(no % 2);
					good += run_one(&r, tmp, no, &rng);
				}
	diag("%d of %d blosc configurations round-trip", good, no);
	same_on_any_threads(tmp, &rng);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}

#else

int main(void)
{
	skip_all("shardpipe was built without c-blosc");
}

#endif
