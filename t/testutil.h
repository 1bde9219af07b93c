/*
 * testutil.h - what several tests share: the seeded random source, byte
 * order helpers, a bitwise CRC-32C, and encoders and decoders independent
 * of the library (libzstd, zlib) to build and check chunks.
 */
#ifndef SHARDPIPE_TESTUTIL_H
#define SHARDPIPE_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "shardpipe.h"

/* The test's seed: SHARDPIPE_TEST_SEED if set, else from the clock.  It is
 * printed as a TAP comment so a failure can be replayed. */
uint64_t test_seed(void);
/*
 * The suite's size, SHARDPIPE_TEST_SIZE: "full" (the default) or "small",
 * which the sanitizer build and distcheck ask for, the whole suite having
 * run at full size on the same sources (.ci/run).  A long matrix runs the
 * same checks over fewer random cases or rounds: test_sized(full, small)
 * is the count for the size in force, printed as a TAP comment.  Anything
 * else in the variable bails out rather than run a size nobody asked for.
 */
long test_sized(const char *what, long full, long small);
/* splitmix64 */
uint64_t test_rand(uint64_t *state);
/* Fill buf with one of the patterns: 0 random, 1 constant, 2 sparse,
 * 3 smooth (compressible). */
void test_fill(void *buf, size_t n, int pattern, uint64_t *state);

/* A scratch directory under the build tree (or TMPDIR), removed by
 * test_rmtree.  Returns a malloc'd path. */
char *test_tmpdir(const char *tag);
int test_rmtree(const char *path);
/* malloc that bails instead of returning NULL (n 0 gives one byte). */
void *test_xmalloc(size_t n);
/* Read a whole file; NULL if it cannot be read. */
void *test_slurp(const char *path, size_t *n);
/* How many entries dir holds besides . and ..; -1 if it cannot be read. */
int test_entries(const char *dir);
/*
 * The threads this process runs now, counted in /proc/self/task; -1
 * without it.  The first call starts and joins a thread first, so that a
 * runtime which starts a helper with the process's first thread (TSan's)
 * has it before the count a test takes as its baseline.
 */
int test_threads_now(void);
/*
 * 1 when every file under a has a byte-equal file at the same place under
 * b and the other way round; the first differences go to diag.  *files,
 * when files is not NULL, gets how many files the two trees hold together.
 */
int test_same_tree(const char *a, const char *b, int *files);
/*
 * Open a stream on dir with desc, append data[0..n) in spans of random
 * sizes drawn from seed (so batches never line up with appends) and close
 * it.  Returns the first error; open and append errors go to diag.
 */
int test_write_spans(const char *dir, const shardpipe_desc *desc,
		     const uint8_t *data, size_t n, uint64_t seed);
/* The same with spans of `span` bytes (0: one append of all n). */
int test_write_in(const char *dir, const shardpipe_desc *desc,
		  const uint8_t *data, size_t n, size_t span);
/*
 * 1 when the store at dir, read whole through the library's reader, has
 * `rows` rows along dim 0 and equals data[0..n) (the whole array, so n is
 * the bytes those rows hold); otherwise 0, the reason going to diag.
 */
int test_reads_back(const char *dir, uint64_t rows, const uint8_t *data,
		    size_t n);

/*
 * The skip policy (doc/design.md §18.1; t/lib.sh's backend_usable): may a
 * test skip backend `name`, which its probe found not usable for `why`?
 * Returns 1 (skip, with `why` as the reason) when this build lacks the
 * backend (SHARDPIPE_TEST_BACKENDS, from the test environment, lists the
 * plugins configure built) or `why` is the documented absence of a
 * device ("no CUDA device", "no OpenCL platform", "no OpenCL device");
 * otherwise bails, failing the test: a plugin that does not load or a
 * probe that fails must not pass as a skip.
 */
int test_may_skip(const char *name, const char *why);
/*
 * Whether the library's backend `name` is usable here, by its public
 * probe.  0 when it is not and test_may_skip() allows that, `why` (n
 * bytes) then holding the reason for the skip.
 */
int test_backend_usable(const char *name, char *why, size_t n);

/* A sink initialised by shardpipe_sink_init() with these fields. */
shardpipe_sink test_sink(void *user,
			 int (*shard)(void *, const uint64_t *, int,
				      const void *, size_t, const void *,
				      size_t),
			 int (*metadata)(void *, const char *, size_t));

/* A small description for the refusal tests: 10x10 uint16 in 4x4 chunks,
 * 2x2 chunks a shard, on the cpu backend, with `codec`; the rest (level 1)
 * as shardpipe_desc_init leaves it. */
void test_small_desc(shardpipe_desc *d, shardpipe_codec codec);
/* A rank-3 uint16 array of `shape`, chunked by `chunk`, `cps` chunks per
 * shard per dim: codec none, the cpu backend on 2 threads, overwrite. */
void test_desc3(shardpipe_desc *d, const uint64_t shape[3],
		const uint64_t chunk[3], const uint64_t cps[3]);
/*
 * Two tests: opening tmp/store.zarr with d fails with `code`, and leaves
 * the handle NULL, tmp empty and a message containing `word`.
 */
void test_refused(const char *tmp, const shardpipe_desc *d, int code,
		  const char *word, const char *what);

/*
 * CRC-32C one bit at a time (reflected polynomial 0x82F63B78), written from
 * the spec: the tests' reference, independent of the library's crc32c.
 */
uint32_t test_crc32c(const void *p, size_t n);

/* Little-endian loads and stores, whatever the host's byte order. */
uint32_t test_le32(const void *p);
uint64_t test_le64(const void *p);
/* Store the low n bytes of v, least significant first (n <= 8). */
void test_put_le(void *p, uint64_t v, size_t n);
/* Nonzero on a big-endian host. */
int test_host_big(void);
/* The box lo..hi (hi exclusive, rank dims) of the row-major array data
 * of the given size and es-byte elements, row-major, into out. */
void test_extract_box(const uint8_t *data, const uint64_t *size, int rank,
		      size_t es, const uint64_t *lo, const uint64_t *hi,
		      uint8_t *out);
/*
 * A file no writer of an array made, planted in its chunk tree before a
 * writer continues it: test_plant_foreign writes it (0 when it cannot);
 * test_foreign_kept says whether it still holds exactly what was planted,
 * and removes it.
 */
int test_plant_foreign(const char *path);
int test_foreign_kept(const char *path);
/* Whether a writer child that was sent SIGKILL died of it or, having
 * finished first, exited 0; a diag names any other end. */
int test_child_clean(int status);
/* a / b rounded up (b > 0). */
uint64_t test_cdiv(uint64_t a, uint64_t b);

/*
 * The bytes a store must hold for chunk cc (chunk-grid coordinates) of a
 * C-order array of the given shape, cut in chunks of the given extents:
 * elements of es bytes, in the host's order in `in`, little-endian in
 * `out`, 0 beyond the array's edge.
 */
void test_cut_chunk(int rank, const uint64_t *shape, const uint64_t *chunk,
		    const uint8_t *in, const uint64_t *cc, size_t es,
		    uint8_t *out);
/*
 * Shard k, counted in C order over a grid of scount shards: its grid
 * coordinates into s, and root/c/s0/s1/... into path.
 */
void test_shard_path(char *path, size_t cap, const char *root, int rank,
		     const uint64_t *scount, uint64_t k, uint64_t *s);
/* 1 when got and want hold the same n bytes; otherwise 0, and a diag
 * naming the first differing byte after the place fmt describes. */
int test_same_bytes(const void *got, const void *want, size_t n,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/*
 * Encode one chunk with an independent encoder: codec 0 none (a copy),
 * 1 zstd (libzstd, level 3), 2 gzip (zlib, level 6, one gzip member).
 * Returns the encoded size; bails when it does not fit in cap.
 */
size_t test_encode(int codec, const void *src, size_t n, void *dst,
		   size_t cap);
/*
 * Decode one chunk with an independent decoder: codec 0 none, 1 zstd
 * (libzstd), 2 gzip (zlib).  Returns the decoded size, or (size_t)-1 when
 * the chunk does not decode or its size differs from cap.
 */
size_t test_decode(int codec, const void *src, size_t n, void *dst, size_t cap);

#endif
