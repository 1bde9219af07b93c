/*
 * s3-region-box.c - what t/s3-region.sh asks of the library, one call a
 * run, on any store path (an s3:// URL or a directory): not a test of its
 * own.
 *
 *   s3-region-box DTYPE CODEC SHAPE CHUNK CPS RAW boxes SEED
 *       a random splitting of the array into shard-aligned boxes (cuts at
 *       random shard multiples along every dim), one "LO HI" line each
 *       (comma lists), in a random order drawn from SEED;
 *   ... write PATH LO HI
 *       the box LO..HI of the array in the file RAW (the whole array,
 *       row-major), through a region writer, in appends of random sizes;
 *   ... publish PATH ROWS      (RAW is not read: "-")
 *   ... stream PATH
 *       the whole array in RAW through one ordinary stream: the reference.
 *
 * SHAPE, CHUNK and CPS are comma lists (dims from 0); the backend is cpu.
 * The exit status is 0, or the library's error code (SHARDPIPE_ERR_*, its
 * values stable), its message on stderr.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe.h"
#include "testutil.h"

static int rank;
static uint64_t size[SHARDPIPE_MAX_RANK], chunk[SHARDPIPE_MAX_RANK],
	cps[SHARDPIPE_MAX_RANK];

static void die(const char *what, const char *arg)
{
	fprintf(stderr, "s3-region-box: %s: %s\n", what, arg);
	exit(125);
}

/* A comma list of rank numbers; sets rank at the first. */
static void parse_list(const char *text, uint64_t *out)
{
	const char *p = text;
	int n = 0;

	for (;;) {
		char *end;
		unsigned long long v = strtoull(p, &end, 10);

		if (end == p || n == SHARDPIPE_MAX_RANK)
			die("not a list of numbers", text);
		out[n++] = v;
		if (*end == '\0')
			break;
		if (*end != ',')
			die("not a list of numbers", text);
		p = end + 1;
	}
	if (rank == 0)
		rank = n;
	if (n != rank)
		die("not as many entries as SHAPE", text);
}

static void describe(shardpipe_desc *d, const char *dtype, const char *codec)
{
	shardpipe_desc_init(d);
	d->rank = rank;
	for (int k = 0; k < rank; k++) {
		d->dims[k].size = size[k];
		d->dims[k].chunk = chunk[k];
		d->dims[k].chunks_per_shard = cps[k];
	}
	if (shardpipe_dtype_from_name(dtype, &d->dtype) != SHARDPIPE_OK)
		die("not a data type", dtype);
	if (shardpipe_desc_set_codec(d, codec) != SHARDPIPE_OK)
		die("not a codec", codec);
	d->backend = "cpu";
	d->threads = 2;
}

static int failed(int rc, const char *what)
{
	fprintf(stderr, "%s: %s (code %d)\n", what,
		shardpipe_last_error_message(), rc);
	return rc;
}

/* Cuts at 0, random shard multiples and the end of every dim, the boxes
 * between them printed in a random order. */
static int boxes(uint64_t seed)
{
	uint64_t cut[SHARDPIPE_MAX_RANK][64], rng = seed;
	int ncut[SHARDPIPE_MAX_RANK], nbox = 1, *order;

	for (int d = 0; d < rank; d++) {
		uint64_t sh = chunk[d] * cps[d];

		ncut[d] = 0;
		cut[d][ncut[d]++] = 0;
		for (uint64_t x = sh; x < size[d] && ncut[d] < 63; x += sh)
			if (test_rand(&rng) % 2)
				cut[d][ncut[d]++] = x;
		cut[d][ncut[d]++] = size[d];
		nbox *= ncut[d] - 1;
	}
	order = test_xmalloc(sizeof(*order) * (size_t)nbox);
	for (int i = 0; i < nbox; i++)
		order[i] = i;
	for (int i = nbox - 1; i > 0; i--) {
		int j = (int)(test_rand(&rng) % (uint64_t)(i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	for (int i = 0; i < nbox; i++) {
		uint64_t rest = (uint64_t)order[i], lo[SHARDPIPE_MAX_RANK],
			 hi[SHARDPIPE_MAX_RANK];

		for (int d = rank - 1; d >= 0; d--) {
			uint64_t c = rest % (uint64_t)(ncut[d] - 1);

			rest /= (uint64_t)(ncut[d] - 1);
			lo[d] = cut[d][c];
			hi[d] = cut[d][c + 1];
		}
		for (int d = 0; d < rank; d++)
			printf("%s%llu", d ? "," : "", (unsigned long long)lo[d]);
		printf(" ");
		for (int d = 0; d < rank; d++)
			printf("%s%llu", d ? "," : "", (unsigned long long)hi[d]);
		printf("\n");
	}
	free(order);
	return 0;
}

static int write_box(const char *path, const shardpipe_desc *d,
		     const uint8_t *data, const uint64_t *lo,
		     const uint64_t *hi)
{
	size_t es = shardpipe_dtype_size(d->dtype), n = es, at = 0;
	uint64_t rng = lo[0] * 31 + hi[rank - 1];
	shardpipe_stream *s;
	uint8_t *box;
	int rc;

	for (int k = 0; k < rank; k++)
		n *= (size_t)(hi[k] - lo[k]);
	box = test_xmalloc(n);
	test_extract_box(data, size, rank, es, lo, hi, box);
	rc = shardpipe_stream_open_region(&s, path, d, lo, hi);
	if (rc != SHARDPIPE_OK) {
		free(box);
		return failed(rc, "open_region");
	}
	while (rc == SHARDPIPE_OK && at < n) {
		size_t k = 1 + (size_t)(test_rand(&rng) % (n / 3 + 1));

		if (k > n - at)
			k = n - at;
		rc = shardpipe_stream_append(s, box + at, k);
		at += k;
	}
	if (rc != SHARDPIPE_OK)
		fprintf(stderr, "append: %s\n", shardpipe_stream_message(s));
	free(box);
	{
		int cr = shardpipe_stream_close(s);

		if (cr != SHARDPIPE_OK)
			return failed(cr, "close");
	}
	return rc;
}

int main(int argc, char **argv)
{
	shardpipe_desc d;
	uint64_t lo[SHARDPIPE_MAX_RANK], hi[SHARDPIPE_MAX_RANK];
	uint8_t *data = NULL;
	size_t n = 0, want;
	const char *cmd;
	int rc;

	if (argc < 9)
		die("usage", "DTYPE CODEC SHAPE CHUNK CPS RAW COMMAND ARGS");
	parse_list(argv[3], size);
	parse_list(argv[4], chunk);
	parse_list(argv[5], cps);
	describe(&d, argv[1], argv[2]);
	cmd = argv[7];
	if (strcmp(cmd, "boxes") == 0)
		return boxes(strtoull(argv[8], NULL, 10));
	if (strcmp(cmd, "publish") == 0 && argc == 10) {
		rc = shardpipe_array_publish(argv[8], &d,
					     strtoull(argv[9], NULL, 10));
		return rc != SHARDPIPE_OK ? failed(rc, "publish") : 0;
	}
	want = shardpipe_dtype_size(d.dtype);
	for (int k = 0; k < rank; k++)
		want *= (size_t)size[k];
	data = test_slurp(argv[6], &n);
	if (data == NULL || n != want)
		die("RAW does not hold the array", argv[6]);
	if (strcmp(cmd, "write") == 0 && argc == 11) {
		parse_list(argv[9], lo);
		parse_list(argv[10], hi);
		rc = write_box(argv[8], &d, data, lo, hi);
	} else if (strcmp(cmd, "stream") == 0 && argc == 9) {
		rc = test_write_in(argv[8], &d, data, n, 0);
		if (rc != SHARDPIPE_OK)
			failed(rc, "stream");
	} else {
		die("unknown command or arguments", cmd);
	}
	free(data);
	return rc;
}
