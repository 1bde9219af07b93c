/*
 * fill.h - synthetic arrays: the fill patterns `shardpipe bench` appends,
 * `shardpipe demo` streams (micro) and the ratio tests compress.  Only the
 * public API's types are used.
 */
#ifndef SHARDPIPE_BENCH_FILL_H
#define SHARDPIPE_BENCH_FILL_H

#include <stddef.h>
#include <stdint.h>

#include "shardpipe.h"

enum bench_fill { FILL_MICRO, FILL_NOISE12, FILL_XOR, FILL_ZEROS };

/*
 * A fill pattern: `frames` distinct dim-0 rows ("frames") generated before
 * timing starts; row r of the array is frame r % frames.  data holds
 * `rows` rows (at least frames), row r being frame r % frames, so that a
 * span of up to rows - frames + 1 rows starting anywhere in the period is
 * contiguous.
 */
struct bench_pattern {
	enum bench_fill fill;
	int rank;
	uint64_t size[SHARDPIPE_MAX_RANK]; /* size[0] unused */
	size_t esize;
	shardpipe_dtype dtype;
	uint64_t frames;
	uint64_t rows;                     /* held in data, >= frames */
	size_t row_bytes;
	uint8_t *data;                     /* rows * row_bytes */
};

/* "micro", "noise12", "xor", "zeros"; -1 when unknown. */
int bench_fill_from_name(const char *name);
const char *bench_fill_name(enum bench_fill f);

/* The number of distinct frames a fill repeats (micro 4, the others 16). */
uint64_t bench_fill_frames(enum bench_fill f);

/* Generate the pattern for desc's geometry: SHARDPIPE_OK (0),
 * SHARDPIPE_ERR_INVALID_ARGUMENT when `frames` rows of the dims after the
 * first do not fit in size_t, or SHARDPIPE_ERR_NOMEM. */
int bench_pattern_make(struct bench_pattern *pat, enum bench_fill fill,
		       const shardpipe_desc *desc, uint64_t frames);
void bench_pattern_free(struct bench_pattern *pat);

/* Hold `rows` rows (more than frames: the first ones repeated after the
 * period); 0 on success, -1 out of memory (the pattern left as it was). */
int bench_pattern_hold(struct bench_pattern *pat, uint64_t rows);

/* splitmix64: the generator behind every synthetic value, so that a seed
 * names the same data wherever it is used. */
uint64_t bench_splitmix(uint64_t *state);

#endif
