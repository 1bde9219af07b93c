/*
 * pool.h - the large buffers of streams (staging, the cpu backend's slots
 * and scratch, the shard sets): mapped untouched, so that a page costs its
 * first touch only once it is written, and kept after a stream closes for
 * the next stream that asks for a buffer of the same size, up to a bound
 * for the whole process (doc/design.md §27).
 */
#ifndef SHARDPIPE_POOL_H
#define SHARDPIPE_POOL_H

#include "common.h"

/* The variable that bounds the cache, in bytes (0: keep nothing). */
#define POOL_CACHE_ENV "SHARDPIPE_POOL_CACHE"

/*
 * Read POOL_CACHE_ENV (unset or empty: an eighth of physical memory) and
 * make it the bound, trimming what is cached beyond it.  A value that is
 * not a decimal number of bytes is refused, naming it.
 */
SP_INTERNAL int pool_configure(struct sp_err *err);

/*
 * A buffer of exactly `bytes` (>= 1): one a closed stream left of that
 * size, or a new mapping whose pages are touched only as they are written.
 * Its contents are undefined.  NULL when out of memory (or address space).
 */
SP_INTERNAL void *pool_take(uint64_t bytes);

/* Give back a buffer pool_take returned for `bytes` (NULL: nothing): kept
 * for a later pool_take of the same size while the cache stays within its
 * bound, the least recently given dropped first, else unmapped. */
SP_INTERNAL void pool_give(void *p, uint64_t bytes);

/* What the cache did so far, for tests and measurements. */
struct pool_stats {
	uint64_t taken, reused;   /* pool_take calls, those the cache served */
	uint64_t in_use_bytes;    /* taken and not given back */
	uint64_t cached_bytes, cached_buffers, bound;
};

SP_INTERNAL void pool_stats(struct pool_stats *out);

/* Unmap everything cached (tests start from an empty cache). */
SP_INTERNAL void pool_drop_all(void);

#endif
