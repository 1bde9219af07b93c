/*
 * blosc-decode.c - the reader's blosc decoder (codec_decode) on hostile
 * input.  Stores are untrusted and c-blosc 1.x's decoder takes no source
 * length, so every header field that could send it past the chunk must
 * be refused first: truncated and padded chunks, sizes that disagree with
 * the store or the array, block sizes of 0 or 1, stored (memcpyed) chunks
 * of the wrong length, block starts past the end.  Then random mutations
 * of valid chunks (seeded) must each decode or be refused as corrupt,
 * never crash or read out of bounds (run it under valgrind or ASan to see
 * the latter).  Valid chunks come from c-blosc itself, every compressor,
 * shuffle and split mode.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "tap.h"
#include "testutil.h"

#ifdef HAVE_BLOSC
#include <blosc.h>

#define N 100000 /* bytes per chunk: 25 blocks of 4096 */

static int decode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
		  struct sp_err *e)
{
	sp_err_clear(e);
	return codec_decode(SHARDPIPE_CODEC_BLOSC, src, n, dst, cap, e);
}

/* A hostile variant of chunk c (n bytes) must be refused as corrupt. */
static void refused(const uint8_t *c, size_t n, size_t cap, const char *what,
		    void (*mutate)(uint8_t *, size_t *))
{
	uint8_t *m = malloc(n + 64), *out = malloc(cap + 64);
	size_t mn = n;
	struct sp_err e;
	int rc;

	memcpy(m, c, n);
	memset(m + n, 0xab, 64);
	mutate(m, &mn);
	rc = decode(m, mn, out, cap, &e);
	if (!is_int(rc, SHARDPIPE_ERR_CORRUPT, "refused: %s", what))
		diag("message: %s", e.msg);
	else
		ok(e.msg[0] != '\0', "  with a message (%s)", e.msg);
	free(m);
	free(out);
}

static void cut_one(uint8_t *m, size_t *n) { (void)m; *n -= 1; }
static void add_one(uint8_t *m, size_t *n) { (void)m; *n += 1; }
static void nbytes_more(uint8_t *m, size_t *n)
{
	(void)n;
	test_put_le(m + 4, N + 1, 4);
}
static void cbytes_more(uint8_t *m, size_t *n)
{
	test_put_le(m + 12, (uint32_t)*n + 64, 4);
}
static void both_bigger(uint8_t *m, size_t *n)
{
	/* cbytes and the stored size agree, but the chunk claims more data
	 * than the array's chunk holds. */
	test_put_le(m + 4, N * 2, 4);
	(void)n;
}
static void block_zero(uint8_t *m, size_t *n)
{
	(void)n;
	test_put_le(m + 8, 0, 4);
}
static void block_one(uint8_t *m, size_t *n)
{
	(void)n;
	test_put_le(m + 8, 1, 4);
}
static void bstart_far(uint8_t *m, size_t *n)
{
	(void)n;
	test_put_le(m + 16 + 4, 0x7fffff00u, 4);
}
static void bstart_back(uint8_t *m, size_t *n)
{
	(void)n;
	test_put_le(m + 16 + 8, 3, 4);
}
static void memcpyed_short(uint8_t *m, size_t *n)
{
	(void)n;
	m[2] |= BLOSC_MEMCPYED;
}
static void csize_huge(uint8_t *m, size_t *n)
{
	uint32_t b0 = (uint32_t)m[16] | (uint32_t)m[17] << 8 |
		      (uint32_t)m[18] << 16 | (uint32_t)m[19] << 24;

	(void)n;
	test_put_le(m + 16 + b0, 0x7ffffff0u, 4);
}
static void version_future(uint8_t *m, size_t *n) { (void)n; m[0] = 200; }

/* Compressible 16-bit data: a ramp with noise in the low bits. */
static void make_data(uint8_t *p, size_t n, uint64_t *rng)
{
	for (size_t i = 0; i + 1 < n; i += 2) {
		uint16_t v = (uint16_t)(i / 64 + (test_rand(rng) & 15));

		p[i] = (uint8_t)v;
		p[i + 1] = (uint8_t)(v >> 8);
	}
}

int main(void)
{
	static const char *const cnames[] = {
		"zstd", "lz4", "lz4hc", "blosclz", "zlib",
	};
	uint64_t rng = test_seed();
	uint8_t *data = malloc(N), *c = malloc(N + 16), *out = malloc(N + 64);
	uint8_t *m = malloc(N + 16);
	struct sp_err e;
	int n, bad = 0, decoded = 0, refused_n = 0;

	if (!data || !c || !out || !m)
		bail("out of memory");
	plan_lazy();
	make_data(data, N, &rng);

	/* Valid chunks of every compressor, shuffle and block size. */
	for (size_t k = 0; k < sizeof(cnames) / sizeof(cnames[0]); k++) {
		if (blosc_compname_to_compcode(cnames[k]) < 0) {
			skip(3, "c-blosc has no %s", cnames[k]);
			continue;
		}
		for (int sh = 0; sh < 3; sh++) {
			n = blosc_compress_ctx(5, sh, 2, N, data, c, N + 16,
					       cnames[k], k % 2 ? 0 : 4096, 1);
			if (n <= 0) {
				ok(0, "c-blosc compresses with %s", cnames[k]);
				continue;
			}
			memset(out, 0, N);
			if (!is_int(decode(c, (size_t)n, out, N, &e),
				    SHARDPIPE_OK, "a %s chunk with shuffle %d "
				    "(%d bytes, block %u) decodes", cnames[k],
				    sh, n, c[8] | c[9] << 8 | c[10] << 16))
				diag("%s", e.msg);
			else
				is_blob(out, data, N, "  to its input");
		}
	}
	/* Stored chunks: level 0, and incompressible data. */
	n = blosc_compress_ctx(0, 1, 2, N, data, c, N + 16, "zstd", 0, 1);
	ok(n == N + 16 && (c[2] & BLOSC_MEMCPYED), "level 0 stores the chunk");
	is_int(decode(c, (size_t)n, out, N, &e), SHARDPIPE_OK,
	       "a stored chunk decodes");
	is_blob(out, data, N, "  to its input");
	n = blosc_compress_ctx(1, 0, 1, 100, data, c, 116, "zstd", 0, 1);
	is_int(decode(c, (size_t)n, out, 100, &e), SHARDPIPE_OK,
	       "a 100-byte chunk (below c-blosc's minimum) decodes");

	/* Hostile headers on a zstd, shuffled, 25-block chunk. */
	n = blosc_compress_ctx(5, 1, 2, N, data, c, N + 16, "zstd", 4096, 1);
	if (n <= 0 || (c[2] & BLOSC_MEMCPYED))
		bail("c-blosc did not compress the test chunk");
	for (size_t len = 0; len < 16; len++) {
		sp_err_clear(&e);
		if (decode(c, len, out, N, &e) != SHARDPIPE_ERR_CORRUPT)
			bad++;
	}
	is_int(bad, 0, "chunks of 0..15 bytes are refused");
	is_int(decode(c, (size_t)n, out, N - 1, &e), SHARDPIPE_ERR_CORRUPT,
	       "a chunk larger than the array's chunk is refused");
	is_int(decode(c, (size_t)n, out, N + 1, &e), SHARDPIPE_ERR_CORRUPT,
	       "a chunk smaller than the array's chunk is refused");
	refused(c, (size_t)n, N, "one byte short", cut_one);
	refused(c, (size_t)n, N, "one byte of trailing garbage", add_one);
	refused(c, (size_t)n, N, "nbytes one more than the chunk",
		nbytes_more);
	refused(c, (size_t)n, N, "cbytes beyond the stored chunk",
		cbytes_more);
	refused(c, (size_t)n, N, "nbytes twice the array's chunk",
		both_bigger);
	refused(c, (size_t)n, N, "block size 0", block_zero);
	refused(c, (size_t)n, N, "block size 1 (block starts beyond cbytes)",
		block_one);
	refused(c, (size_t)n, N, "a block start far past the end",
		bstart_far);
	refused(c, (size_t)n, N, "a block start inside the header",
		bstart_back);
	refused(c, (size_t)n, N, "the stored flag on a compressed chunk",
		memcpyed_short);
	refused(c, (size_t)n, N, "a block's compressed size past the end",
		csize_huge);
	refused(c, (size_t)n, N, "format version 200", version_future);

	/* Random mutations: decode or refuse, nothing else.  Half keep the
	 * header's sizes right so that c-blosc itself meets the damage. */
	for (int it = 0; it < 4000; it++) {
		size_t mn = (size_t)n;
		int flips = 1 + (int)(test_rand(&rng) % 8), rc;

		memcpy(m, c, (size_t)n);
		for (int f = 0; f < flips; f++) {
			size_t at = (size_t)(test_rand(&rng) % (uint64_t)n);

			if (it % 2 && at < 16)
				at += 16;
			m[at] ^= (uint8_t)(1 + test_rand(&rng) % 255);
		}
		if (it % 2) {
			test_put_le(m + 4, N, 4);
			test_put_le(m + 12, (uint32_t)mn, 4);
		}
		rc = decode(m, mn, out, N, &e);
		if (rc == SHARDPIPE_OK)
			decoded++;
		else if (rc == SHARDPIPE_ERR_CORRUPT)
			refused_n++;
		else if (bad++ == 0)
			diag("mutation %d: code %d (%s)", it, rc, e.msg);
	}
	diag("4000 mutated chunks: %d decoded, %d refused", decoded,
	     refused_n);
	is_int(bad, 0, "4000 mutated chunks each decode or are refused as "
	       "corrupt");
	/* Pure noise with a believable header. */
	bad = 0;
	for (int it = 0; it < 2000; it++) {
		size_t mn = 16 + (size_t)(test_rand(&rng) % 3000);
		int rc;

		test_fill(m, mn, 0, &rng);
		m[0] = 2;
		m[3] = 2;
		test_put_le(m + 4, N, 4);
		test_put_le(m + 8, 1u << (8 + test_rand(&rng) % 10), 4);
		test_put_le(m + 12, (uint32_t)mn, 4);
		rc = decode(m, mn, out, N, &e);
		if (rc != SHARDPIPE_OK && rc != SHARDPIPE_ERR_CORRUPT)
			bad++;
	}
	is_int(bad, 0, "2000 noise chunks with believable headers each decode "
	       "or are refused as corrupt");
	free(data);
	free(c);
	free(out);
	free(m);
	return done_testing();
}

#else

int main(void)
{
	uint8_t chunk[32] = { 2, 1, 0x81, 2 }, out[64];
	struct sp_err e;

	plan(1);
	sp_err_clear(&e);
	is_int(codec_decode(SHARDPIPE_CODEC_BLOSC, chunk, sizeof(chunk), out,
			    16, &e) != SHARDPIPE_OK, 1,
	       "without c-blosc, blosc chunks are not decoded (%s)", e.msg);
	return done_testing();
}

#endif
