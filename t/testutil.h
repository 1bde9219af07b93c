/*
 * testutil.h - what several tests share: the seeded random source, and
 * decoders independent of the library (libzstd, zlib) to check chunks.
 */
#ifndef SHARDPIPE_TESTUTIL_H
#define SHARDPIPE_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

/* The test's seed: SHARDPIPE_TEST_SEED if set, else from the clock.  It is
 * printed as a TAP comment so a failure can be replayed. */
uint64_t test_seed(void);
/* splitmix64 */
uint64_t test_rand(uint64_t *state);
/* Fill buf with one of the patterns: 0 random, 1 constant, 2 sparse,
 * 3 smooth (compressible). */
void test_fill(void *buf, size_t n, int pattern, uint64_t *state);

/* A scratch directory under the build tree (or TMPDIR), removed by
 * test_rmtree.  Returns a malloc'd path. */
char *test_tmpdir(const char *tag);
int test_rmtree(const char *path);
/* Read a whole file; NULL if it cannot be read. */
void *test_slurp(const char *path, size_t *n);

/*
 * Decode one chunk with an independent decoder: codec 0 none, 1 zstd
 * (libzstd), 2 gzip (zlib).  Returns the decoded size, or (size_t)-1 when
 * the chunk does not decode or its size differs from cap.
 */
size_t test_decode(int codec, const void *src, size_t n, void *dst, size_t cap);

#endif
