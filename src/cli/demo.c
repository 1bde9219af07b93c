/*
 * demo.c - shardpipe demo: a synthetic microscopy time series (smooth
 * blobs drifting over a background, with shot noise), uint16, streamed
 * frame by frame into a store, then read back and compared.  The frames
 * are bench's "micro" fill (bench/fill.h), so that the demo and
 * `shardpipe bench` measure the same kind of data.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "bench.h"

#define SIDE 2048
#define PATTERN_FRAMES 16   /* distinct frames, generated before timing */
#define FRAME_BYTES ((size_t)SIDE * SIDE * 2)

/* The series: t, y, x of 2048 x 2048 frames, 4-frame chunks of 256 x 256,
 * shards of 8 x 4 x 4 chunks; dim 0 grows as frames arrive. */
static const uint64_t demo_chunk[3] = { 4, 256, 256 };
static const uint64_t demo_cps[3] = { 8, 4, 4 };

struct demo_args {
	const char *out, *backend, *codec;
	int frames, threads, overwrite;
};

static void demo_usage(void)
{
	printf("usage: shardpipe demo [--frames N] [--codec C] "
	       "[--backend B] [--threads N]\n"
	       "                      [--overwrite] [OUT.zarr]\n\n"
	       "Writes N (default 128, 1 GiB) synthetic 2048x2048 "
	       "uint16 microscopy frames\nto OUT.zarr (default "
	       "shardpipe-demo.zarr; an existing store only with "
	       "--overwrite),\n"
	       "prints throughput and compression ratio, then "
	       "reads the store back and\ncompares every "
	       "element.\n");
}

/* Returns -1 to go on, or the exit status (--help, a bad option). */
static int parse_args(struct demo_args *a, int argc, char **argv)
{
	const char *const flags[] = { "--overwrite" };
	int *const flag_slots[] = { &a->overwrite };
	uint64_t frames = 128, threads = 0;
	struct cli_seen seen;

	a->out = NULL;
	a->backend = "auto";
	a->codec = "zstd:1";
	cli_seen_init(&seen, "demo");
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i];
		int bad = 0;

		if (strcmp(arg, "--help") == 0) {
			demo_usage();
			return CLI_EXIT_OK;
		} else if (strcmp(arg, "--frames") == 0) {
			bad = cli_take_u64(&seen, argc, argv, &i, INT_MAX,
					   &frames);
		} else if (strcmp(arg, "--codec") == 0) {
			bad = cli_take(&seen, argc, argv, &i, &a->codec);
		} else if (strcmp(arg, "--backend") == 0) {
			bad = cli_take(&seen, argc, argv, &i, &a->backend);
		} else if (strcmp(arg, "--threads") == 0) {
			bad = cli_take_u64(&seen, argc, argv, &i,
					   SHARDPIPE_MAX_THREADS, &threads);
		} else if ((bad = cli_flag(&seen, arg, flags, flag_slots,
					   CLI_NFLAGS(flags))) != 0) {
			bad = bad < 0;
		} else if (arg[0] == '-') {
			cli_error("demo: unknown option %s", arg);
			return CLI_EXIT_USAGE;
		} else if (a->out != NULL) {
			cli_error("demo: one output store only: %s and %s",
				  a->out, arg);
			return CLI_EXIT_USAGE;
		} else {
			a->out = arg;
		}
		if (bad)
			return CLI_EXIT_USAGE;
	}
	if (a->out == NULL)
		a->out = "shardpipe-demo.zarr";
	a->frames = (int)frames;
	a->threads = (int)threads;
	if (a->frames < 1) {
		cli_error("demo: --frames must be at least 1");
		return CLI_EXIT_USAGE;
	}
	return -1;
}

/* 0, or -1 after printing the codec's refusal. */
static int demo_desc(const struct demo_args *a, shardpipe_desc *desc)
{
	static const char *const names[3] = { "t", "y", "x" };

	shardpipe_desc_init(desc);
	desc->rank = 3;
	desc->dtype = SHARDPIPE_DTYPE_UINT16;
	desc->backend = a->backend;
	desc->threads = a->threads;
	desc->overwrite = a->overwrite; /* write's rule */
	if (cli_parse_codec(a->codec, desc) != 0)
		return -1;
	for (int d = 0; d < 3; d++) {
		desc->dims[d].name = names[d];
		desc->dims[d].size = d == 0 ? 0 : SIDE;
		desc->dims[d].chunk = demo_chunk[d];
		desc->dims[d].chunks_per_shard = demo_cps[d];
	}
	return 0;
}

static const uint16_t *frame_of(const struct bench_pattern *pat, uint64_t t)
{
	return (const uint16_t *)pat->data +
	       (size_t)(t % PATTERN_FRAMES) * SIDE * SIDE;
}

/* Append the frames and close the stream; prints the rate and ratio.
 * Returns CLI_EXIT_OK or, after saying why, CLI_EXIT_FAIL. */
static int write_frames(shardpipe_stream *s, const struct demo_args *a,
			const struct bench_pattern *pat)
{
	int rc = SHARDPIPE_OK, crc;
	double t0, secs;

	fprintf(stderr, "writing %d frames (%.2f GiB) to %s with backend %s, "
		"codec %s\n", a->frames,
		(double)a->frames * FRAME_BYTES / (1 << 30), a->out,
		shardpipe_stream_backend(s), a->codec);
	t0 = cli_now();
	for (int t = 0; t < a->frames && rc == SHARDPIPE_OK; t++)
		rc = shardpipe_stream_append(s, frame_of(pat, (uint64_t)t),
					     FRAME_BYTES);
	if (rc != SHARDPIPE_OK)
		cli_error("demo: %s: %s", shardpipe_strerror(rc),
			  shardpipe_stream_message(s));
	crc = shardpipe_stream_close(s);
	secs = cli_now() - t0;
	if (rc == SHARDPIPE_OK && crc != SHARDPIPE_OK) {
		cli_error("demo: %s: %s", shardpipe_strerror(crc),
			  shardpipe_last_error_message());
		rc = crc;
	}
	if (rc != SHARDPIPE_OK)
		return CLI_EXIT_FAIL;

	uint64_t in = (uint64_t)a->frames * FRAME_BYTES;
	uint64_t stored = bench_store_bytes(a->out);

	printf("wrote %.2f GiB in %.2f s: %.2f GB/s, ",
	       (double)in / (1 << 30), secs, (double)in / 1e9 / secs);
	/* An object store (s3://) has no files to add up. */
	if (stored > 0)
		printf("ratio %.2f (%.1f MiB stored), ",
		       (double)in / (double)stored, (double)stored / (1 << 20));
	fflush(stdout);
	return CLI_EXIT_OK;
}

/* Compare the store, one shard epoch of frames at a time, with the
 * pattern. */
static int compare_frames(shardpipe_reader *r, const struct demo_args *a,
			  const struct bench_pattern *pat)
{
	shardpipe_array_info info;
	const uint64_t slab = demo_chunk[0] * demo_cps[0];
	const uint64_t frames = (uint64_t)a->frames;
	uint64_t start[3] = { 0, 0, 0 }, count[3] = { slab, SIDE, SIDE };
	uint16_t *got = malloc(FRAME_BYTES * slab);
	int status = CLI_EXIT_OK;

	shardpipe_reader_info(r, &info);
	if (got == NULL) {
		cli_error("demo: verify: out of memory");
		status = CLI_EXIT_FAIL;
	} else if (info.shape[0] != frames) {
		cli_error("demo: verify: wrong shape");
		status = CLI_EXIT_MISMATCH;
	}
	for (uint64_t t = 0; t < frames && status == CLI_EXIT_OK; t += slab) {
		int rc;

		start[0] = t;
		count[0] = frames - t < slab ? frames - t : slab;
		rc = shardpipe_reader_read(r, start, count, got,
					   FRAME_BYTES * slab);
		if (rc != SHARDPIPE_OK) {
			cli_error("demo: verify: %s: %s", shardpipe_strerror(rc),
				  shardpipe_reader_message(r));
			status = CLI_EXIT_FAIL;
		}
		for (uint64_t k = 0; k < count[0] && status == CLI_EXIT_OK; k++)
			if (memcmp(got + k * SIDE * SIDE, frame_of(pat, t + k),
				   FRAME_BYTES) != 0) {
				cli_error("demo: verify: frame %llu differs",
					  (unsigned long long)(t + k));
				status = CLI_EXIT_MISMATCH;
			}
	}
	free(got);
	return status;
}

/* Read the store back: its indexes and chunks checked, then every frame
 * compared. */
static int verify_frames(const struct demo_args *a,
			 const struct bench_pattern *pat)
{
	shardpipe_reader *r;
	int rc, status;

	rc = shardpipe_reader_open(&r, a->out);
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_reader_check(r);
	if (rc != SHARDPIPE_OK) {
		printf("\n");
		cli_error("demo: verify: %s: %s", shardpipe_strerror(rc),
			  r ? shardpipe_reader_message(r)
			    : shardpipe_last_error_message());
		shardpipe_reader_close(r);
		return CLI_EXIT_FAIL;
	}
	status = compare_frames(r, a, pat);
	shardpipe_reader_close(r);
	if (status != CLI_EXIT_OK) {
		printf("\n");
		return status;
	}
	printf("verified %d frames\n", a->frames);
	return CLI_EXIT_OK;
}

int cli_demo(int argc, char **argv)
{
	struct demo_args a = { 0 };
	shardpipe_desc desc;
	shardpipe_stream *s;
	struct bench_pattern pat;
	int rc = parse_args(&a, argc, argv);

	if (rc >= 0)
		return rc;
	if (demo_desc(&a, &desc) != 0)
		return CLI_EXIT_USAGE;
	/* Open first: a bad description or backend is refused before the
	 * frames are generated. */
	rc = shardpipe_stream_open(&s, a.out, &desc);
	if (rc != SHARDPIPE_OK) {
		cli_error("demo: %s: %s", shardpipe_strerror(rc),
			  shardpipe_last_error_message());
		return cli_exit_status(rc);
	}
	fprintf(stderr, "generating %d distinct frames...\n", PATTERN_FRAMES);
	if (bench_pattern_make(&pat, FILL_MICRO, &desc, PATTERN_FRAMES) != 0) {
		cli_error("demo: out of memory");
		shardpipe_stream_close(s);
		return CLI_EXIT_FAIL;
	}
	rc = write_frames(s, &a, &pat);
	if (rc == CLI_EXIT_OK)
		rc = verify_frames(&a, &pat);
	bench_pattern_free(&pat);
	return rc;
}
