/*
 * demo.c - shardpipe demo: a synthetic microscopy time series (smooth
 * blobs drifting over a background, with shot noise), uint16, streamed
 * frame by frame into a store, then read back and compared.  The frames
 * are bench's "micro" fill, so that the demo and `shardpipe bench` measure
 * the same kind of data.
 */
#define _XOPEN_SOURCE 700
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "bench.h"

#define SIDE 2048
#define PATTERN_FRAMES 16   /* distinct frames, generated before timing */

static uint64_t total;

static int add_size(const char *p, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	(void)p;
	(void)ftw;
	if (flag == FTW_F)
		total += (uint64_t)sb->st_size;
	return 0;
}

/* Bytes of every file in the store: shards, indexes and zarr.json. */
static uint64_t store_bytes(const char *path)
{
	total = 0;
	if (nftw(path, add_size, 16, FTW_PHYS) != 0)
		return 0;
	return total;
}

int cli_demo(int argc, char **argv)
{
	const char *out = NULL, *backend = "auto";
	const char *codec = "zstd:1";
	uint64_t frames_arg = 128, threads = 0;
	int frames, overwrite = 0;
	struct cli_seen seen;
	shardpipe_desc desc;
	shardpipe_stream *s;
	shardpipe_reader *r;
	struct bench_pattern pat;
	const uint16_t *pattern;
	uint16_t *back;
	size_t frame_bytes = (size_t)SIDE * SIDE * 2;
	double t0, t1, in_lib;
	int rc;

	cli_seen_init(&seen, "demo");
	for (int i = 1; i < argc; i++) {
		int *const flag_slots[] = { &overwrite };
		const char *const flags[] = { "--overwrite" };
		const char *a = argv[i];
		int bad = 0;

		if (strcmp(a, "--help") == 0) {
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
			return CLI_EXIT_OK;
		} else if (strcmp(a, "--frames") == 0) {
			bad = cli_take_u64(&seen, argc, argv, &i, INT_MAX,
					 &frames_arg);
		} else if (strcmp(a, "--codec") == 0) {
			bad = cli_take(&seen, argc, argv, &i, &codec);
		} else if (strcmp(a, "--backend") == 0) {
			bad = cli_take(&seen, argc, argv, &i, &backend);
		} else if (strcmp(a, "--threads") == 0) {
			bad = cli_take_u64(&seen, argc, argv, &i, 4096, &threads);
		} else if ((bad = cli_flag(&seen, a, flags, flag_slots,
					   CLI_NFLAGS(flags))) != 0) {
			bad = bad < 0;
		} else if (a[0] == '-') {
			cli_error("demo: unknown option %s", a);
			return CLI_EXIT_USAGE;
		} else if (out != NULL) {
			cli_error("demo: one output store only: %s and %s",
				  out, a);
			return CLI_EXIT_USAGE;
		} else {
			out = a;
		}
		if (bad)
			return CLI_EXIT_USAGE;
	}
	if (out == NULL)
		out = "shardpipe-demo.zarr";
	frames = (int)frames_arg;
	if (frames < 1) {
		cli_error("demo: --frames must be at least 1");
		return CLI_EXIT_USAGE;
	}
	shardpipe_desc_init(&desc);
	desc.rank = 3;
	desc.dtype = SHARDPIPE_DTYPE_UINT16;
	desc.backend = backend;
	desc.threads = (int)threads;
	desc.overwrite = overwrite; /* write's rule */
	if (cli_parse_codec(codec, &desc) != 0)
		return CLI_EXIT_USAGE;
	const char *names[3] = { "t", "y", "x" };
	const uint64_t chunk[3] = { 4, 256, 256 }, cps[3] = { 8, 4, 4 };
	for (int d = 0; d < 3; d++) {
		desc.dims[d].name = names[d];
		desc.dims[d].size = d == 0 ? 0 : SIDE;
		desc.dims[d].chunk = chunk[d];
		desc.dims[d].chunks_per_shard = cps[d];
	}

	/* Open first: a bad description or backend is refused before the
	 * frames are generated. */
	rc = shardpipe_stream_open(&s, out, &desc);
	if (rc != SHARDPIPE_OK) {
		cli_error("demo: %s: %s", shardpipe_strerror(rc),
			  shardpipe_last_error_message());
		return cli_exit_status(rc);
	}
	fprintf(stderr, "generating %d distinct frames...\n", PATTERN_FRAMES);
	back = malloc(frame_bytes);
	if (back == NULL ||
	    bench_pattern_make(&pat, FILL_MICRO, &desc, PATTERN_FRAMES) != 0) {
		cli_error("demo: out of memory");
		free(back);
		shardpipe_stream_close(s);
		return CLI_EXIT_FAIL;
	}
	pattern = (const uint16_t *)pat.data;
	fprintf(stderr, "writing %d frames (%.2f GiB) to %s with backend %s, "
		"codec %s\n", frames, (double)frames * frame_bytes / (1 << 30),
		out, shardpipe_stream_backend(s), codec);
	t0 = cli_now();
	for (int t = 0; t < frames && rc == SHARDPIPE_OK; t++)
		rc = shardpipe_stream_append(
			s, pattern + (size_t)(t % PATTERN_FRAMES) * SIDE * SIDE,
			frame_bytes);
	if (rc != SHARDPIPE_OK)
		cli_error("demo: %s: %s", shardpipe_strerror(rc),
			  shardpipe_stream_message(s));
	int crc = shardpipe_stream_close(s);
	t1 = cli_now();
	in_lib = t1 - t0;
	if (rc == SHARDPIPE_OK && crc != SHARDPIPE_OK) {
		cli_error("demo: %s: %s", shardpipe_strerror(crc),
			  shardpipe_last_error_message());
		rc = crc;
	}
	if (rc != SHARDPIPE_OK) {
		bench_pattern_free(&pat);
		free(back);
		return CLI_EXIT_FAIL;
	}
	{
		uint64_t in = (uint64_t)frames * frame_bytes;
		uint64_t stored = store_bytes(out);

		printf("wrote %.2f GiB in %.2f s: %.2f GB/s, ratio %.2f "
		       "(%.1f MiB stored), ",
		       (double)in / (1 << 30), in_lib, (double)in / 1e9 / in_lib,
		       stored ? (double)in / (double)stored : 0.0,
		       (double)stored / (1 << 20));
		fflush(stdout);
	}

	rc = shardpipe_reader_open(&r, out);
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_reader_check(r);
	if (rc != SHARDPIPE_OK) {
		printf("\n");
		cli_error("demo: verify: %s: %s", shardpipe_strerror(rc),
			  r ? shardpipe_reader_message(r)
			    : shardpipe_last_error_message());
		shardpipe_reader_close(r);
		bench_pattern_free(&pat);
		free(back);
		return CLI_EXIT_FAIL;
	}
	{
		shardpipe_array_info info;
		const uint64_t slab = chunk[0] * cps[0];
		uint64_t start[3] = { 0, 0, 0 }, count[3] = { slab, SIDE, SIDE };
		uint16_t *got = malloc(frame_bytes * slab);
		int status = CLI_EXIT_OK;

		shardpipe_reader_info(r, &info);
		if (got == NULL) {
			cli_error("demo: verify: out of memory");
			status = CLI_EXIT_FAIL;
		} else if (info.shape[0] != (uint64_t)frames) {
			cli_error("demo: verify: wrong shape");
			status = CLI_EXIT_MISMATCH;
		}
		for (uint64_t t = 0; t < (uint64_t)frames &&
				     status == CLI_EXIT_OK; t += slab) {
			start[0] = t;
			count[0] = (uint64_t)frames - t < slab ?
					   (uint64_t)frames - t : slab;
			rc = shardpipe_reader_read(r, start, count, got,
						   frame_bytes * slab);
			if (rc != SHARDPIPE_OK) {
				cli_error("demo: verify: %s: %s",
					  shardpipe_strerror(rc),
					  shardpipe_reader_message(r));
				status = CLI_EXIT_FAIL;
			}
			for (uint64_t k = 0; k < count[0] &&
					     status == CLI_EXIT_OK; k++)
				if (memcmp(got + k * SIDE * SIDE,
					   pattern + ((t + k) % PATTERN_FRAMES) *
							     SIDE * SIDE,
					   frame_bytes) != 0) {
					cli_error("demo: verify: frame %llu "
						  "differs",
						  (unsigned long long)(t + k));
					status = CLI_EXIT_MISMATCH;
				}
		}
		shardpipe_reader_close(r);
		free(got);
		bench_pattern_free(&pat);
		free(back);
		if (status != CLI_EXIT_OK) {
			printf("\n");
			return status;
		}
	}
	printf("verified %d frames\n", frames);
	return CLI_EXIT_OK;
}
