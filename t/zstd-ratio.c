/*
 * zstd-ratio.c - compression ratio of the zstd kernel (reference build)
 * next to libzstd's levels 1 and 3, per data set and chunk size: reported
 * as TAP comments, not asserted (issue 6 targets).  Each data set is one
 * test: every kernel frame decodes to its chunk.
 */
#include "zstd-common.h"

#include <time.h>

static const int our_levels[] = { 1, 3, 5, 9 };
#define NOURS (int)(sizeof(our_levels) / sizeof(our_levels[0]))

static void row(const char *name, const uint8_t *data, size_t total,
		size_t chunk)
{
	uint64_t cap = zt_bound(chunk);
	uint8_t *slot = zt_malloc(cap + ZT_GUARD);
	size_t zcap = ZSTD_compressBound(chunk);
	uint8_t *z = zt_malloc(zcap);
	double ours[NOURS], lib[2], secs = 0;
	size_t sum;
	int good = 1;
	char line[512];
	int at;

	for (int li = 0; li < NOURS; li++) {
		struct timespec t0, t1;

		sum = 0;
		for (size_t off = 0; off < total; off += chunk) {
			int guard;
			uint64_t n;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			n = zt_encode(data + off, chunk, slot, our_levels[li],
				      &guard);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			if (li == 0)
				secs += (t1.tv_sec - t0.tv_sec) +
					(t1.tv_nsec - t0.tv_nsec) * 1e-9;

			good &= guard && zt_check(name, data + off, chunk,
						  slot, n);
			sum += n;
		}
		ours[li] = (double)total / sum;
	}
	for (int k = 0; k < 2; k++) {
		sum = 0;
		for (size_t off = 0; off < total; off += chunk)
			sum += ZSTD_compress(z, zcap, data + off, chunk,
					     k == 0 ? 1 : 3);
		lib[k] = (double)total / sum;
	}
	at = snprintf(line, sizeof(line), "| %-26s | %7zu |", name, chunk);
	for (int li = 0; li < NOURS; li++)
		at += snprintf(line + at, sizeof(line) - at, " %6.3f |",
			       ours[li]);
	snprintf(line + at, sizeof(line) - at,
		 " %6.3f | %6.3f | %5.3f | %5.1f |", lib[0], lib[1],
		 ours[0] / lib[0], total / secs / 1e6);
	diag("%s", line);
	ok(good, "%s, %zu-byte chunks: every frame decodes", name, chunk);
	free(slot);
	free(z);
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;
	const int side = 1024;
	size_t frame = (size_t)side * side * 2;
	uint8_t *buf = zt_malloc(4 * frame);

	plan_lazy();
	diag("| data set                   |   chunk |  ours1 |  ours3 |  "
	     "ours5 |  ours9 |  zstd1 |  zstd3 | o1/z1 |  MB/s |");
	diag("(ours: the kernel's C build, levels 1 3 5 9; MB/s: level 1, "
	     "one work-item, this host)");
	for (int t = 0; t < 2; t++)
		zt_microscopy((uint16_t *)(buf + t * frame), side, t);
	row("microscopy uint16", buf, 2 * frame, 128 * 1024);
	row("microscopy uint16", buf, 2 * frame, 512 * 1024);
	row("microscopy uint16", buf, 2 * frame, 2 * 1024 * 1024);
	zt_noise12(buf, 2 * frame, &rng);
	row("12-bit uniform noise", buf, 2 * frame, 128 * 1024);
	row("12-bit uniform noise", buf, 2 * frame, 1024 * 1024);
	zt_fill(buf, 2 * frame, 3, &rng);
	row("text-like words", buf, 2 * frame, 512 * 1024);
	zt_fill(buf, 2 * frame, 4, &rng);
	row("mutated repeats", buf, 2 * frame, 512 * 1024);
	zt_fill(buf, 2 * frame, 7, &rng);
	row("random walk uint16", buf, 2 * frame, 512 * 1024);
	free(buf);
	free(zt_scratch);
	return done_testing();
}
