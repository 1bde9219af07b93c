/*
 * kernels-configs.h - the configurations every kernel test runs: element
 * sizes 1/2/4/8, ranks 1-4, edge chunks on every dimension, an innermost
 * chunk extent of 1, chunks larger than the array, and an unbounded dim 0
 * whose last epoch is partial.
 */
#ifndef SHARDPIPE_T_KERNELS_CONFIGS_H
#define SHARDPIPE_T_KERNELS_CONFIGS_H

#include <stdint.h>

#include "shardpipe.h"

struct kcfg {
	const char *what;
	int rank;
	shardpipe_dtype dtype;
	uint64_t size[4], chunk[4], cps[4];
	uint64_t rows;       /* rows appended when dim 0 is unbounded */
};

static const struct kcfg kcfgs[] = {
	{ "rank 1 uint8, partial last chunk", 1, SHARDPIPE_DTYPE_UINT8,
	  { 1000 }, { 64 }, { 4 }, 0 },
	{ "rank 2 uint16, edge chunks on dim 1", 2, SHARDPIPE_DTYPE_UINT16,
	  { 37, 50 }, { 8, 16 }, { 2, 2 }, 0 },
	{ "rank 3 float32, edges everywhere", 3, SHARDPIPE_DTYPE_FLOAT32,
	  { 10, 19, 23 }, { 4, 5, 7 }, { 2, 3, 2 }, 0 },
	{ "rank 4 uint64, edges everywhere", 4, SHARDPIPE_DTYPE_UINT64,
	  { 6, 5, 7, 9 }, { 2, 2, 3, 4 }, { 1, 2, 2, 3 }, 0 },
	{ "rank 3 int32, innermost chunk extent 1", 3, SHARDPIPE_DTYPE_INT32,
	  { 9, 6, 5 }, { 3, 4, 1 }, { 2, 1, 5 }, 0 },
	{ "rank 3 uint8, unbounded dim 0, partial last epoch", 3,
	  SHARDPIPE_DTYPE_UINT8, { 0, 12, 30 }, { 5, 8, 16 }, { 2, 2, 1 },
	  23 },
	{ "rank 2 int8, odd extents", 2, SHARDPIPE_DTYPE_INT8,
	  { 13, 101 }, { 4, 33 }, { 3, 2 }, 0 },
	{ "rank 2 float64, chunks larger than the array", 2,
	  SHARDPIPE_DTYPE_FLOAT64, { 7, 3 }, { 4, 8 }, { 2, 1 }, 0 },
	{ "rank 3 uint16, no edges", 3, SHARDPIPE_DTYPE_UINT16,
	  { 8, 16, 32 }, { 4, 8, 16 }, { 2, 2, 2 }, 0 },
	{ "rank 4 float16, unbounded dim 0, inner extent 1", 4,
	  SHARDPIPE_DTYPE_FLOAT16, { 0, 3, 4, 5 }, { 2, 2, 3, 1 },
	  { 3, 1, 2, 2 }, 7 },
};

#define N_KCFGS (sizeof(kcfgs) / sizeof(kcfgs[0]))

static inline void kcfg_desc(const struct kcfg *c, shardpipe_desc *d)
{
	shardpipe_desc_init(d);
	d->rank = c->rank;
	d->dtype = c->dtype;
	d->codec = SHARDPIPE_CODEC_NONE;
	d->level = 0;
	d->threads = 2;
	for (int i = 0; i < c->rank; i++) {
		d->dims[i].size = c->size[i];
		d->dims[i].chunk = c->chunk[i];
		d->dims[i].chunks_per_shard = c->cps[i];
	}
}

/* Rows of input the tests append. */
static inline uint64_t kcfg_rows(const struct kcfg *c)
{
	return c->size[0] != 0 ? c->size[0] : c->rows;
}

#endif
