/*
 * copy.c - the staging copy: with stores past the cache and without, every
 * length from 0 to a few KiB and then past the size where streaming
 * stores start, from and to every alignment, equals memcpy's result, and
 * writes nothing outside its destination; and a stream whose batches
 * (128 MiB) are written past the cache, appended in spans of odd sizes
 * that start anywhere, reads back equal to its input; arrays of fill
 * with one byte changed, whose other batches the copies find all fill,
 * read back equal.  Random bytes from the seed.
 */
#include <stdlib.h>
#include <sys/types.h>
#include <string.h>

#include "copy.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define GUARD 64

static int one(const uint8_t *src, size_t n, size_t dst_off, int past,
	       uint8_t *dst, uint8_t *want)
{
	memset(dst, 0xa5, n + dst_off + 2 * GUARD);
	memset(want, 0xa5, n + dst_off + 2 * GUARD);
	memcpy(want + GUARD + dst_off, src, n);
	copy_staging(dst + GUARD + dst_off, src, n, past);
	return memcmp(dst, want, n + dst_off + 2 * GUARD) == 0;
}

/* 8 rows of 2048 x 4096 uint16 in one epoch of 128 MiB, codec none, in
 * spans of 3 MiB + 13 bytes: the caller's copy, and the pipeline thread's
 * half of it while it waits, both write past the cache. */
static void stream_past_cache(uint64_t *rng)
{
	enum { T = 8, Y = 2048, X = 4096 };
	const size_t n = (size_t)T * Y * X * 2, span = (3u << 20) + 13;
	uint64_t *in = test_xmalloc(n);
	uint8_t *bytes = (uint8_t *)in;
	char *tmp = test_tmpdir("copy"), dir[600];
	const uint64_t shape[3] = { T, Y, X }, chunk[3] = { T, 256, 256 };
	const uint64_t cps[3] = { 1, 8, 16 };
	shardpipe_desc d;
	int rc;

	for (size_t i = 0; i < n / 8; i++)
		in[i] = test_rand(rng);
	diag("an epoch of %zu bytes is %swritten past the cache here", n,
	     copy_past_cache(n) ? "" : "not ");
	snprintf(dir, sizeof(dir), "%s/past.zarr", tmp);
	test_desc3(&d, shape, chunk, cps);
	rc = test_write_in(dir, &d, bytes, n, span);
	ok(rc == SHARDPIPE_OK && test_reads_back(dir, T, bytes, n),
	   "a stream of 128 MiB epochs, appended in spans of %zu bytes, "
	   "reads back equal", span);
	test_rmtree(tmp);
	free(tmp);
	free(in);
}

/*
 * Batches that the staging copies find all fill are left out without the
 * backend reading them.  A 6 x 512 x 1024 uint16 array of the fill 0x1234
 * in epochs of 2 MiB, appended in spans of 1.5 MiB + 1 byte (so that
 * spans end inside an element, and the pipeline thread copies and checks
 * the second half of some), with one byte changed at a chosen place: the
 * first byte, either side of a 64 KiB check block, in the second half of
 * a span, the last byte of an epoch, the first of the next, the last of
 * the array; and none changed.  Each store reads back equal to its input.
 */
static void stream_one_byte(void)
{
	enum { T = 6, Y = 512, X = 1024 };
	const size_t n = (size_t)T * Y * X * 2, epoch = (size_t)2 * Y * X * 2;
	const size_t span = (3u << 19) + 1;
	const size_t at[] = { 0, 1, 65535, 65536, 65537, span / 2 + 1001,
			      span + 3, epoch - 1, epoch, 2 * epoch + 77,
			      n - 1, SIZE_MAX };
	uint8_t *a = test_xmalloc(n);
	char *tmp = test_tmpdir("copy-fill"), dir[600];
	int good = 1;

	for (size_t i = 0; i < n; i += 2) {
		a[i] = 0x34;
		a[i + 1] = 0x12;
	}
	snprintf(dir, sizeof(dir), "%s/one.zarr", tmp);
	for (size_t k = 0; good && k < sizeof(at) / sizeof(at[0]); k++) {
		const uint64_t shape[3] = { T, Y, X }, chunk[3] = { 2, 128, 256 };
		const uint64_t cps[3] = { 1, 4, 4 };
		shardpipe_desc d;
		int rc;

		if (at[k] != SIZE_MAX)
			a[at[k]] ^= 0x01;
		test_desc3(&d, shape, chunk, cps);
		d.fill_value[0] = 0x34;
		d.fill_value[1] = 0x12;
		rc = test_write_in(dir, &d, a, n, span);
		good = rc == SHARDPIPE_OK && test_reads_back(dir, T, a, n);
		if (!good)
			diag("byte %zd changed: %s", at[k] == SIZE_MAX ? -1 :
			     (ssize_t)at[k], rc == SHARDPIPE_OK ?
			     "reads back wrong" : "not written");
		if (at[k] != SIZE_MAX)
			a[at[k]] ^= 0x01;
	}
	ok(good, "arrays of fill with one byte changed at %zu places, and "
	   "none, appended in spans of %zu bytes, read back equal",
	   sizeof(at) / sizeof(at[0]) - 1, span);
	test_rmtree(tmp);
	free(tmp);
	free(a);
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;
	const size_t big = (1u << 20) + 77;
	uint8_t *src = test_xmalloc(big + 64);
	uint8_t *dst = test_xmalloc(big + 64 + 2 * GUARD);
	uint8_t *want = test_xmalloc(big + 64 + 2 * GUARD);
	static const size_t lengths[] = { 0, 1, 15, 16, 17, 63, 64, 65, 4095,
					  (256u << 10) - 1, 256u << 10,
					  (256u << 10) + 1, (512u << 10) + 33,
					  (1u << 20) + 77 };
	int small = 1;

	plan(4 + 2 * (int)(sizeof(lengths) / sizeof(lengths[0])));
	for (size_t i = 0; i < big + 64; i++)
		src[i] = (uint8_t)test_rand(&rng);
	for (int past = 0; past < 2; past++)
		for (size_t n = 0; n <= 4096; n += 1 + n / 8)
			for (size_t so = 0; so < 16; so += 5)
				for (size_t d = 0; d < 16; d += 3)
					small &= one(src + so, n, d, past,
						     dst, want);
	ok(small, "lengths 0 to 4096 from and to odd alignments equal "
	   "memcpy's, nothing written outside");
	for (int past = 0; past < 2; past++)
		for (size_t k = 0; k < sizeof(lengths) / sizeof(lengths[0]);
		     k++) {
			int good = 1;

			for (size_t so = 0; so < 64; so += 21)
				for (size_t d = 0; d < 64; d += 13)
					good &= one(src + so, lengths[k], d,
						    past, dst, want);
			ok(good, "%zu bytes, %s: equal to memcpy's",
			   lengths[k], past ? "stores past the cache"
					    : "memcpy");
		}
#if defined(__SSE2__)
	ok(copy_past_cache(1ull << 40) && !copy_past_cache(1u << 20),
	   "a terabyte batch is written past the cache, a mebibyte one is "
	   "not");
#else
	ok(!copy_past_cache(1ull << 40),
	   "without SSE2 no batch is written past the cache");
#endif
	stream_past_cache(&rng);
	stream_one_byte();
	free(src);
	free(dst);
	free(want);
	return done_testing();
}
