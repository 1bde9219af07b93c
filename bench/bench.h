/*
 * bench.h - the measurement behind `shardpipe bench`, a small library that
 * the program calls (src/cli/bench.c parses the command line and picks the
 * workload): stream a fill pattern (fill.h) through the library, time each
 * run and its compress-only bound, sample memory and append latency, and
 * print the report.  It uses the public API, plus libzstd, libdeflate and
 * c-blosc for the bound, and never the program's own headers: the
 * dependency runs from src/cli/ to bench/ only.
 */
#ifndef SHARDPIPE_BENCH_H
#define SHARDPIPE_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "shardpipe.h"
#include "fill.h"

/* What one measurement streams and how. */
struct bench_setup {
	shardpipe_desc desc;   /* dims[0].size: rows, or 0 when unbounded */
	enum bench_fill fill;
	uint64_t rows;         /* rows of dim 0 appended */
	uint64_t span;         /* bytes per append; 0: one row */
	uint64_t frames;       /* distinct rows of the pattern; 0: the fill's */
	const char *output;    /* a real store, or NULL: a counting sink */
	int repeat;            /* runs, each followed by its bound; >= 1 */
	/* desc asks for a pyramid (downsample or ngff): each run is
	 * followed by the same input without one, to the same kind of store
	 * (output, or a temporary directory bench removes), and the report
	 * gives both and their ratio. */
	int bound;             /* also measure the compress-only bound */
	/* Rows of a store written before each run (untimed) and closed: the
	 * run reopens it (doc/design.md §29) and appends the rest; 0: a
	 * fresh store.  Needs output. */
	uint64_t resume_at;
	int quiet;             /* no progress notes on stderr */
	const char *workload;  /* the report's names for what ran */
	const char *codec_text;
};

/* What the bound measured. */
struct bench_bound {
	uint64_t sample_bytes;    /* chunk bytes in the sample */
	uint64_t sample_packed;   /* their compressed size */
	uint64_t bytes;           /* chunk bytes compressed in total */
	double seconds;           /* wall time of the compression */
	double cpu_seconds;       /* process CPU time (all threads) meanwhile */
	int threads;
};

/* Per-append latency of the fastest run: p50/p99/max of the appends'
 * wall times, and from the library the appends that waited for the
 * pipeline. */
struct bench_latency {
	uint64_t n, span;
	double p50, p99, max;
	uint64_t blocked;
	double seconds_blocked;
};

/* The fastest of the runs (and of the bounds), and the first run's
 * memory. */
struct bench_result {
	const char *workload, *fill, *codec_text, *backend, *output;
	shardpipe_desc desc;
	int threads;
	uint64_t rows, bytes_in, bytes_out, shards;
	double seconds, cpu_seconds;
	double memcpy_gbps;       /* same threads, same process */
	shardpipe_stats st;
	uint64_t rss_base, rss_peak, rss_early, rss_mid, pattern_bytes;
	int have_bound, repeat;
	struct bench_bound bound;
	struct bench_latency lat;
	/* A pyramid's runs: its levels (0: none), and the fastest run of the
	 * same input without one. */
	int levels;
	double plain_seconds, plain_cpu_seconds;
	uint64_t plain_pool_bytes;
	/* With --bound, the coarser levels' own bounds: their bytes and the
	 * seconds (wall, and CPU of all threads) the bound's rate on each
	 * level's chunks, read back from the first run's store, takes for
	 * them; what compressing every level costs at least is the level-0
	 * bound's time for bytes_in plus these (issue 43). */
	uint64_t levels_bytes;
	double levels_bound_seconds, levels_bound_cpu_seconds;
	/* A run that reopened a store (resume_at): that row, and the
	 * fastest reopen (the rows of its partial shard row read back and
	 * appended again). */
	uint64_t resume_at;
	double reopen_seconds;
	char message[1024];       /* why bench_run failed */
};

/*
 * Generate the pattern, run the stream setup->repeat times (each run
 * followed by its bound when asked) and fill *r.  Returns SHARDPIPE_OK, or
 * the code of what failed with r->message saying what: the library's
 * refusal or failure ("<strerror>: <message>"), or bench's own ("out of
 * memory for ...", "the bound's compressor failed").
 */
int bench_run(const struct bench_setup *setup, struct bench_result *r);

/* The report on stdout: a table with the terms it uses, or one JSON
 * object. */
void bench_report_text(const struct bench_result *r);
void bench_report_json(const struct bench_result *r);

/* The table of every workload and fill (bench --all, bench/README.md): its
 * head, and one row per result. */
void bench_report_row_head(void);
void bench_report_row(const struct bench_result *r);

/* Bytes of every file under path (shards, indexes, zarr.json): what a
 * store takes, for the ratio bench, demo and write print; 0 when the
 * path cannot be walked, as an s3:// store cannot. */
uint64_t bench_store_bytes(const char *path);

/* The parts bench_run is made of, in bound.c. */

/* Monotonic wall time in seconds. */
double bench_now(void);

/* Process CPU time so far, user and system, all threads. */
double bench_cpu_seconds(void);

/*
 * memcpy bandwidth on `threads` threads at once, each copying its share of
 * n bytes (the src_bytes at src, repeated) to a scratch buffer, in GB/s of
 * bytes copied; the figure the scatter stage is held against.  0 when out
 * of memory.
 */
double bench_memcpy_gbps(const uint8_t *src, uint64_t src_bytes, uint64_t n,
			 int threads);

/*
 * Compress the chunks the stream compresses (the first epochs of the
 * `rows` rows appended, up to one period of the pattern and at most
 * max_sample_bytes, compressed again and again until at least `work` bytes
 * went through) with desc's codec and level on `threads` threads, and
 * nothing else.  Returns SHARDPIPE_OK, or SHARDPIPE_ERR_NOMEM or
 * SHARDPIPE_ERR_CODEC_FAILED with msg saying what failed.
 */
int bench_bound_run(const struct bench_pattern *pat, const shardpipe_desc *desc,
		    uint64_t rows, int threads, uint64_t work,
		    uint64_t max_sample_bytes, struct bench_bound *out,
		    char *msg, size_t msg_size);

/*
 * The kernel backends' switches for a measurement (`bench --local`,
 * `--profile`): SHARDPIPE_KERNEL_DEBUG extended with local=N (local != 0)
 * and, with profile, profile=FILE of a new temporary file whose path p
 * keeps, for the reference backend's work profile (doc/design.md §12.1).
 * Returns SHARDPIPE_OK, or a code with msg saying what failed.
 */
struct bench_profile {
	char path[4096];
};

int bench_kernel_debug(struct bench_profile *p, int profile, uint64_t local,
		       char *msg, size_t msg_size);

/* Copy the profile the runs wrote to stdout; SHARDPIPE_ERR_IO with msg
 * when it cannot be read or is empty (the backend counted no work). */
int bench_profile_print(const struct bench_profile *p, const char *backend,
			char *msg, size_t msg_size);

/* Remove the temporary file, if any. */
void bench_profile_done(struct bench_profile *p);

#endif
