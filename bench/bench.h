/*
 * bench.h - what the parts of `shardpipe bench` share: the array being
 * measured, the fill patterns appended to it, and the compress-only bound.
 * `shardpipe demo` streams the micro fill too.  Only the public API is
 * used, plus libzstd and libdeflate for the bound.
 */
#ifndef SHARDPIPE_BENCH_H
#define SHARDPIPE_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shardpipe.h"

enum bench_fill { FILL_MICRO, FILL_NOISE12, FILL_XOR, FILL_ZEROS };

/*
 * A fill pattern: `frames` distinct dim-0 rows ("frames") generated before
 * timing starts; row r of the array is frame r % frames.
 */
struct bench_pattern {
	enum bench_fill fill;
	int rank;
	uint64_t size[SHARDPIPE_MAX_RANK]; /* size[0] unused */
	size_t esize;
	shardpipe_dtype dtype;
	uint64_t frames;
	size_t row_bytes;
	uint8_t *data;                     /* frames * row_bytes */
};

/* "micro", "noise12", "xor", "zeros"; -1 when unknown. */
int bench_fill_from_name(const char *name);
const char *bench_fill_name(enum bench_fill f);

/* The number of distinct frames a fill repeats (micro 4, noise12 and xor
 * 16, zeros 1). */
uint64_t bench_fill_frames(enum bench_fill f);

/* Generate the pattern for desc's geometry; 0 on success, -1 out of
 * memory. */
int bench_pattern_make(struct bench_pattern *pat, enum bench_fill fill,
		       const shardpipe_desc *desc, uint64_t frames);
void bench_pattern_free(struct bench_pattern *pat);

/* What the bound measured. */
struct bench_bound {
	uint64_t sample_bytes;    /* chunk bytes in the sample */
	uint64_t sample_packed;   /* their compressed size */
	uint64_t bytes;           /* chunk bytes compressed in total */
	double seconds;           /* wall time of the compression */
	double cpu_seconds;       /* process CPU time (all threads) meanwhile */
	int threads;
};

/* Process CPU time so far, user and system, all threads. */
double bench_cpu_seconds(void);

/*
 * memcpy bandwidth on `threads` threads at once, each copying its share of
 * n bytes from src to a scratch buffer, in GB/s of bytes copied; the
 * figure the scatter stage is held against.  0 when out of memory.
 */
double bench_memcpy_gbps(const uint8_t *src, uint64_t n, int threads);

/*
 * Compress the chunks the stream compresses (the first epochs of the
 * `rows` rows appended, up to one period of the pattern and at most max_sample_bytes,
 * compressed again and again until at least `work` bytes went through) with
 * desc's codec and level on `threads` threads, and nothing else.  Returns 0,
 * or -1 with a message printed.
 */
int bench_bound_run(const struct bench_pattern *pat, const shardpipe_desc *desc,
		    uint64_t rows, int threads, uint64_t work, uint64_t max_sample_bytes,
		    struct bench_bound *out);

/*
 * --local and --profile: SHARDPIPE_KERNEL_DEBUG extended with local=N
 * (local != 0) and, with profile, profile=FILE of a new temporary file
 * (doc/design.md §12.1), whose path p keeps.  Returns 0, or -1 after
 * printing why.
 */
struct bench_profile {
	char path[4096];
};

int bench_kernel_debug(struct bench_profile *p, int profile, uint64_t local);

/* Print the profile the runs wrote, or say why there is none (-1). */
int bench_profile_print(const struct bench_profile *p, const char *backend);

/* Remove the temporary file, if any. */
void bench_profile_done(struct bench_profile *p);

#endif
