/*
 * fault-check.h - an independent checker of stores and shards for the
 * reliability tests (t/fault-*, t/crash-*, t/hostile-*, t/concurrent-*).
 *
 * Nothing here calls the library: the shard index is parsed by hand, its
 * CRC32C is computed bit by bit (testutil's test_crc32c), chunks are
 * decoded with libzstd or zlib (testutil's test_decode) and zarr.json is
 * read by a small JSON parser of its own.  A fault in the library's
 * serializer, reader or JSON parser can therefore not hide itself from
 * these checks.
 */
#ifndef SHARDPIPE_FAULT_CHECK_H
#define SHARDPIPE_FAULT_CHECK_H

#include <stddef.h>
#include <stdint.h>

#include "shardpipe.h"

/* The geometry a writer was given (what its zarr.json should say). */
struct fc_geom {
	int rank;
	uint64_t size[SHARDPIPE_MAX_RANK]; /* size[0] == 0: unbounded */
	uint64_t chunk[SHARDPIPE_MAX_RANK];
	uint64_t cps[SHARDPIPE_MAX_RANK];
	size_t esize;
	int codec;       /* 0 none, 1 zstd, 2 gzip (shardpipe_codec values) */
	int index_start; /* index at the start of each shard */
};

/* Fill a geometry from a description. */
void fc_geom_from_desc(struct fc_geom *g, const shardpipe_desc *d);

/*
 * The bytes the writer was given, row by row: row(user, r) returns the
 * row_bytes bytes of dim-0 row r, or NULL when row r was never appended
 * (its cells must then hold the fill value, 0).
 */
typedef const uint8_t *(*fc_row_fn)(void *user, uint64_t r);

uint64_t fc_row_bytes(const struct fc_geom *g);

/*
 * An input of `rows` dim-0 rows of g, each filled with a test_fill pattern
 * drawn from rng, so that rows differ in how well they compress (and
 * shards in size).  *row_bytes and *bytes get the sizes; free() it.
 */
uint8_t *fc_rows_input(const struct fc_geom *g, int rows, uint64_t *rng,
		       size_t *row_bytes, size_t *bytes);

/*
 * Check one shard object (the whole stored file) at shard-grid coords:
 * size, index CRC32C, every entry inside the body and none overlapping,
 * every chunk decodes to exactly its size and, when row is not NULL,
 * holds the bytes the writer was given.  Returns 0, or -1 with the reason
 * in why.
 */
int fc_check_shard(const struct fc_geom *g, const uint64_t *coords,
		   const uint8_t *obj, size_t n, fc_row_fn row, void *user,
		   char *why, size_t why_len);

/* What fc_check_store found. */
struct fc_report {
	int has_meta;     /* zarr.json exists */
	int meta_ok;      /* it parses and matches the geometry */
	uint64_t shape0;  /* its shape[0] */
	int shards;       /* shard objects present */
	int bad;          /* of which invalid */
	int missing;      /* shards below shape[0] that are absent */
	int hidden;       /* names starting with '.' (temporaries) */
	int stray;        /* any other name that is neither key nor dir */
	char why[512];    /* the first fault */
};

/*
 * Walk the store at dir: every shard present must be valid (and hold the
 * writer's bytes when row is not NULL); zarr.json, when present, must parse
 * and advertise only rows whose shards are all present; names other than
 * zarr.json, shard keys and hidden temporaries are strays.  Returns 0 when
 * the store is consistent (zarr.json may be absent only if allow_no_meta).
 */
int fc_check_store(const char *dir, const struct fc_geom *g, fc_row_fn row,
		   void *user, int allow_no_meta, struct fc_report *rep);

/*
 * Parse JSON text (RFC 8259 grammar, depth <= 64) and, when the root is an
 * object, take its "shape" member as an array of unsigned integers.
 * Returns the number of shape entries (0..SHARDPIPE_MAX_RANK), or -1 when
 * the text is not JSON or the shape is missing or malformed.
 */
int fc_json_shape(const char *text, size_t n, uint64_t *shape);

/*
 * Run argv with stdout and stderr to err_path (when not NULL), killed
 * after timeout_s seconds.  Returns the exit status, 128+signal when it
 * died of a signal, or -1 when it could not run.
 */
int fc_run(char *const argv[], const char *err_path, unsigned timeout_s);

/* When not 0, fc_run limits the program's address space to this many
 * bytes (RLIMIT_AS), so that a reader that would allocate without bound
 * fails instead.  Left 0 under AddressSanitizer, which reserves terabytes
 * of address space. */
extern unsigned long long fc_run_mem_limit;

/*
 * Seconds a test may run before SIGALRM ends it (a hang fails instead of
 * stalling CI): dflt, times SHARDPIPE_TEST_TIMEOUT_SCALE when set (the
 * sanitizer and valgrind runs are slower).
 */
unsigned fc_timeout(unsigned dflt);

/*
 * libgomp's idle threads spin by default; on a shared 2-core machine that
 * makes each of a test's hundreds of short streams hundreds of times
 * slower.  The policy is read when libgomp loads, before main, so when
 * OMP_WAIT_POLICY is unset this sets it and runs the program again
 * (argv[0] as /proc/self/exe); it returns only when it did not.
 */
void fc_passive_omp(char **argv);

#endif
