/*
 * pool-reuse.c - the pools a closed stream leaves serve the next stream of
 * the same geometry (doc/design.md §27).  A stream reopened with the same
 * geometry takes every buffer from the cache and, on memory that still
 * holds another stream's bytes, writes the same files as one on fresh
 * memory; two streams open at once never share a buffer; another geometry
 * takes none; a stream never holds more than the pools it planned; the
 * cache keeps no more than SHARDPIPE_POOL_CACHE, dropping the buffers
 * given back longest ago first; a value that is not a number is refused
 * at open, naming it.  Stores are checked through the library's reader.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pool.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define ROWS 24

static char *tmp;

static void geometry(shardpipe_desc *d, uint64_t y, uint64_t x)
{
	const uint64_t shape[3] = { 0, y, x }, chunk[3] = { 4, 16, 16 },
		       cps[3] = { 2, 2, 2 };

	test_desc3(d, shape, chunk, cps);
	d->codec = SHARDPIPE_CODEC_ZSTD;
}

static size_t bytes_of(const shardpipe_desc *d)
{
	return (size_t)(ROWS * d->dims[1].size * d->dims[2].size * 2);
}

/* Write data to tmp/name; 1 when the store reads back as data. */
static int write_store(const char *name, const shardpipe_desc *d,
		       const uint8_t *data, uint64_t seed)
{
	char path[1200];

	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	if (test_write_spans(path, d, data, bytes_of(d), seed) != SHARDPIPE_OK)
		return 0;
	return test_reads_back(path, ROWS, data, bytes_of(d));
}

static int same_store(const char *a, const char *b)
{
	char pa[1200], pb[1200];

	snprintf(pa, sizeof(pa), "%s/%s", tmp, a);
	snprintf(pb, sizeof(pb), "%s/%s", tmp, b);
	return test_same_tree(pa, pb, NULL);
}

/* The cache itself: exact sizes, the bound, the oldest dropped first. */
static void cache_rules(void)
{
	long page = sysconf(_SC_PAGESIZE);
	struct pool_stats st;
	struct sp_err err;
	uint8_t *a, *b, *c, *d;

	setenv(POOL_CACHE_ENV, "0", 1);
	pool_configure(&err);
	pool_drop_all();
	{
		char v[32];

		snprintf(v, sizeof(v), "%ld", 3 * page);
		setenv(POOL_CACHE_ENV, v, 1);
	}
	pool_configure(&err);
	a = pool_take((uint64_t)page);
	b = pool_take(2 * (uint64_t)page);
	c = pool_take(2 * (uint64_t)page);
	if (a == NULL || b == NULL || c == NULL)
		bail("pool_take failed");
	memset(b, 0x5a, 2 * (size_t)page);
	pool_give(a, (uint64_t)page);
	pool_give(b, 2 * (uint64_t)page);
	d = pool_take(3 * (uint64_t)page);
	ok(pool_take(2 * (uint64_t)page) == b && d != a && d != NULL,
	   "a buffer is taken again only for its own size");
	pool_stats(&st);
	ok(st.cached_buffers == 1 && st.cached_bytes == (uint64_t)page,
	   "what is taken leaves the cache (%llu buffers, %llu bytes)",
	   (unsigned long long)st.cached_buffers,
	   (unsigned long long)st.cached_bytes);
	pool_give(d, 3 * (uint64_t)page);
	pool_give(b, 2 * (uint64_t)page);
	pool_give(c, 2 * (uint64_t)page);
	pool_stats(&st);
	/* a (1 page), d (3), b (2), c (2) against 3 pages: c stays; b, d
	 * and a, given back before it, go. */
	ok(st.cached_buffers == 1 && st.cached_bytes == 2 * (uint64_t)page &&
		   pool_take(2 * (uint64_t)page) == c,
	   "over the bound, the buffers given back longest ago are dropped");
	pool_give(c, 2 * (uint64_t)page);
	setenv(POOL_CACHE_ENV, "0", 1);
	pool_configure(&err);
	pool_stats(&st);
	ok(st.cached_bytes == 0 && st.cached_buffers == 0,
	   "a bound of 0 drops everything cached");
}

int main(void)
{
	uint64_t rng = test_seed();
	shardpipe_desc g1, g2;
	struct pool_stats s0, s1;
	uint8_t *x, *y, *z;
	size_t n;

	plan(22);
	tmp = test_tmpdir("pool-reuse");
	cache_rules();

	geometry(&g1, 40, 50);
	/* No buffer of this one has the size of one of g1's. */
	geometry(&g2, 64, 112);
	n = bytes_of(&g1);
	x = test_xmalloc(n);
	y = test_xmalloc(n);
	z = test_xmalloc(bytes_of(&g2));
	test_fill(x, n, 0, &rng);
	test_fill(y, n, 3, &rng);
	test_fill(z, bytes_of(&g2), 0, &rng);

	setenv(POOL_CACHE_ENV, "1000000000", 1);
	pool_stats(&s0);
	ok(write_store("fresh.zarr", &g1, x, rng), "a stream on fresh pools");
	pool_stats(&s1);
	ok(s1.reused == s0.reused && s1.taken > s0.taken,
	   "takes every buffer new (%llu)",
	   (unsigned long long)(s1.taken - s0.taken));
	ok(s1.in_use_bytes == 0 && s1.cached_buffers == s1.taken - s0.taken,
	   "and gives them all back at close");

	s0 = s1;
	ok(write_store("other.zarr", &g1, y, rng ^ 1),
	   "the same geometry, other data, on the first stream's pools");
	pool_stats(&s1);
	ok(s1.taken - s0.taken == s1.reused - s0.reused && s1.reused > s0.reused,
	   "takes every buffer from the cache (%llu)",
	   (unsigned long long)(s1.reused - s0.reused));
	ok(write_store("again.zarr", &g1, x, rng) &&
		   same_store("fresh.zarr", "again.zarr"),
	   "on memory holding the other data, the same files as on fresh "
	   "pools");

	/* Two at once: the first takes the cached set, the second new
	 * buffers; interleaved appends would mix if any were shared. */
	{
		char pa[1200], pb[1200];
		shardpipe_stream *a, *b;
		uint64_t per;
		int rc;

		snprintf(pa, sizeof(pa), "%s/both-a.zarr", tmp);
		snprintf(pb, sizeof(pb), "%s/both-b.zarr", tmp);
		pool_stats(&s0);
		rc = shardpipe_stream_open(&a, pa, &g1);
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_open(&b, pb, &g1);
		if (rc != SHARDPIPE_OK)
			bail("open: %s", shardpipe_last_error_message());
		for (size_t at = 0; at < n && rc == SHARDPIPE_OK;) {
			size_t k = 1 + (size_t)(test_rand(&rng) % 7001);

			if (k > n - at)
				k = n - at;
			rc = shardpipe_stream_append(a, x + at, k);
			if (rc == SHARDPIPE_OK)
				rc = shardpipe_stream_append(b, y + at, k);
			at += k;
		}
		/* Both run a batch while both are open. */
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_flush(a);
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_flush(b);
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_close(a);
		if (rc == SHARDPIPE_OK)
			rc = shardpipe_stream_close(b);
		if (rc != SHARDPIPE_OK)
			bail("two streams: %s", shardpipe_strerror(rc));
		pool_stats(&s1);
		per = (s1.taken - s0.taken) / 2;
		ok(s1.reused - s0.reused == per && per > 0,
		   "two streams at once: %llu buffers from the cache, %llu new",
		   (unsigned long long)(s1.reused - s0.reused),
		   (unsigned long long)per);
		ok(test_reads_back(pa, ROWS, x, n) &&
			   test_reads_back(pb, ROWS, y, n),
		   "each holds its own data");
		ok(same_store("fresh.zarr", "both-a.zarr") &&
			   same_store("other.zarr", "both-b.zarr"),
		   "byte for byte");
	}

	pool_stats(&s0);
	ok(write_store("g2.zarr", &g2, z, rng), "another geometry");
	pool_stats(&s1);
	ok(s1.reused == s0.reused, "takes nothing from the cache");

	/* A stream holds no more than it plans. */
	{
		char path[1200];
		shardpipe_stream *s;
		shardpipe_stats ss;
		struct pool_stats mid;

		snprintf(path, sizeof(path), "%s/planned.zarr", tmp);
		if (shardpipe_stream_open(&s, path, &g1) != SHARDPIPE_OK ||
		    shardpipe_stream_append(s, x, n) != SHARDPIPE_OK ||
		    shardpipe_stream_flush(s) != SHARDPIPE_OK)
			bail("planned: %s", shardpipe_last_error_message());
		pool_stats(&mid);
		shardpipe_stream_stats(s, &ss);
		ok(mid.in_use_bytes > 0 && mid.in_use_bytes <= ss.pool_bytes,
		   "an open stream holds %llu bytes of pools, within the %llu "
		   "it plans", (unsigned long long)mid.in_use_bytes,
		   (unsigned long long)ss.pool_bytes);
		if (shardpipe_stream_close(s) != SHARDPIPE_OK)
			bail("close: %s", shardpipe_last_error_message());
	}

	/* The bound. */
	{
		char v[32];

		pool_stats(&s0);
		snprintf(v, sizeof(v), "%llu",
			 (unsigned long long)(s0.cached_bytes / 3));
		setenv(POOL_CACHE_ENV, v, 1);
		ok(write_store("bounded.zarr", &g1, x, rng),
		   "a stream under a smaller bound");
		pool_stats(&s1);
		ok(s1.cached_bytes <= s0.cached_bytes / 3 && s1.bound ==
			   s0.cached_bytes / 3,
		   "the cache keeps %llu bytes, within its bound of %s",
		   (unsigned long long)s1.cached_bytes, v);
		setenv(POOL_CACHE_ENV, "0", 1);
		ok(write_store("none.zarr", &g1, y, rng ^ 1) &&
			   same_store("other.zarr", "none.zarr"),
		   "a bound of 0: the same files");
		pool_stats(&s1);
		ok(s1.cached_bytes == 0, "and nothing kept");
	}

	{
		char path[1200];
		shardpipe_stream *s = (shardpipe_stream *)1;
		int rc;

		snprintf(path, sizeof(path), "%s/refused.zarr", tmp);
		setenv(POOL_CACHE_ENV, "12x", 1);
		rc = shardpipe_stream_open(&s, path, &g1);
		is_int(rc, SHARDPIPE_ERR_INVALID_ARGUMENT,
		       "SHARDPIPE_POOL_CACHE=12x is refused at open");
		ok(s == NULL && access(path, F_OK) != 0 &&
			   strstr(shardpipe_last_error_message(),
				  "SHARDPIPE_POOL_CACHE=\"12x\"") != NULL,
		   "naming it, before anything is created (%s)",
		   shardpipe_last_error_message());
	}
	free(x);
	free(y);
	free(z);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
