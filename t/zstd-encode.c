/*
 * zstd-encode.c - the zstd kernel (backends/kernels/zstd_encode.h) built as C
 * and run as the reference executor runs it: every frame decodes with
 * libzstd to its input, announces its content size and stays within the
 * slot capacity (ZSTD_COMPRESSBOUND); the edge cases of issue 6; the
 * literals-section forms chosen at the single/four-stream threshold and
 * for alphabets that need FSE-compressed Huffman weights; a randomized
 * run over several distributions; frames with the content checksum; and
 * `zstd -d` on the command line over the edge-case frames.
 */
#define _GNU_SOURCE
#include "zstd-common.h"

#include <unistd.h>
#include <zstd_errors.h>

static const int levels[] = { 1, 3, 5 };
#define NLEVELS (int)(sizeof(levels) / sizeof(levels[0]))

/* Frames of the edge cases, concatenated, for the zstd command. */
static uint8_t *cli_frames, *cli_data;
static size_t cli_nframes, cli_ndata, cli_cap_frames, cli_cap_data;

static void cli_add(const uint8_t *frame, size_t fn, const uint8_t *src,
		    size_t n)
{
	if (cli_frames == NULL || cli_nframes + fn > cli_cap_frames) {
		cli_cap_frames = 2 * (cli_nframes + fn);
		cli_frames = realloc(cli_frames, cli_cap_frames);
	}
	if (cli_data == NULL || cli_ndata + n > cli_cap_data) {
		cli_cap_data = 2 * (cli_ndata + n) + 1;
		cli_data = realloc(cli_data, cli_cap_data);
	}
	if (cli_frames == NULL || cli_data == NULL)
		bail("out of memory");
	memcpy(cli_frames + cli_nframes, frame, fn);
	memcpy(cli_data + cli_ndata, src, n);
	cli_nframes += fn;
	cli_ndata += n;
}

/* One chunk at one level (and with the checksum when cs): decodes, fits,
 * guard intact.  One test. */
static int check_one_cs(const char *what, const uint8_t *src, uint64_t n,
			int level, int cs, int to_cli, struct zt_lits *lits)
{
	uint8_t *slot = test_xmalloc(zt_bound(n) + ZT_GUARD);
	int guard, good;
	uint64_t size = zt_encode_word(src, n, slot, zt_word(level, cs),
				       &guard);

	good = size <= zt_bound(n) && guard &&
	       zt_check(what, src, n, slot, size);
	if (size > zt_bound(n) || !guard)
		diag("%s: frame of %llu bytes, bound %llu, guard %s", what,
		     (unsigned long long)size,
		     (unsigned long long)zt_bound(n), guard ? "intact" : "hit");
	if (good && to_cli)
		cli_add(slot, size, src, n);
	if (lits != NULL)
		*lits = zt_inspect(slot);
	ok(good, "%s, level %d%s: %llu -> %llu bytes", what, level,
	   cs ? ", checksum" : "", (unsigned long long)n,
	   (unsigned long long)size);
	free(slot);
	return good;
}

static int check_one(const char *what, const uint8_t *src, uint64_t n,
		     int level, int to_cli, struct zt_lits *lits)
{
	return check_one_cs(what, src, n, level, 0, to_cli, lits);
}

static void edge_cases(uint64_t *rng)
{
	static const uint64_t sizes[] = {
		0, 1, 2, 31, 32, 33, 255, 256, 4095, 4096, 65791, 65792,
		131071, 131072, 131073, 4 * 131072 + 1,
	};
	const size_t big = 4 * 131072 + 1;
	uint8_t *buf = test_xmalloc(big);
	char what[96];

	for (int li = 0; li < NLEVELS; li++) {
		int lv = levels[li];

		for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
			uint64_t n = sizes[k];

			test_fill(buf, n, 0, rng);
			snprintf(what, sizeof(what), "random %llu",
				 (unsigned long long)n);
			check_one(what, buf, n, lv, 1, NULL);
			test_fill(buf, n, 1, rng);
			snprintf(what, sizeof(what), "constant %llu",
				 (unsigned long long)n);
			check_one(what, buf, n, lv, 1, NULL);
			test_fill(buf, n, 3, rng);
			snprintf(what, sizeof(what), "smooth %llu",
				 (unsigned long long)n);
			check_one(what, buf, n, lv, 1, NULL);
		}
		/* Every byte value, once and in long runs of shuffles. */
		for (size_t i = 0; i < big; i++)
			buf[i] = (uint8_t)(i * 167 + (i >> 8) * 13);
		check_one("all 256 values, 256 bytes", buf, 256, lv, 1, NULL);
		check_one("all 256 values, 4x128K+1 bytes", buf, big, lv, 1,
			  NULL);
		/* Constant blocks between others: RLE in the middle. */
		test_fill(buf, big, 3, rng);
		memset(buf + 131072, 7, 131072);
		check_one("RLE block between compressed ones", buf, big, lv, 1,
			  NULL);
	}
	free(buf);
}

/*
 * Literal sections just below and above the single/four-stream threshold
 * (256 literals), the 10/14-bit size fields (1024, 16384) and a last
 * stream one literal short of a packing part (4097, 8193): a block of
 * n bytes from a 12-letter alphabet with no repeat of 5 bytes, so every
 * byte is a literal and Huffman pays.
 */
static void stream_forms(void)
{
	static const uint32_t ns[] = { 255, 256, 1023, 1024, 4097, 8193, 16383,
				       16384 };
	uint8_t *buf = test_xmalloc(16384), *seen = test_xmalloc(248832 / 8 + 1);
	char what[96];

	for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
		uint32_t n = ns[k];
		struct zt_lits l = { 0 };
		uint64_t rng = 99 + n;

		/* 12 letters, each 5-gram new (greedy choice among the
		 * letters), so no match of 5 bytes exists. */
		memset(seen, 0, 248832 / 8 + 1);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t tries = 0, c, g;

			do {
				c = (uint32_t)(test_rand(&rng) % 12);
				g = 0;
				if (i >= 4)
					for (uint32_t j = i - 4; j < i; j++)
						g = g * 12 + (buf[j] - 'A');
				g = g * 12 + c;
			} while (i >= 4 && (seen[g / 8] >> (g % 8) & 1) &&
				 ++tries < 200);
			if (i >= 4)
				seen[g / 8] |= (uint8_t)(1u << (g % 8));
			buf[i] = (uint8_t)('A' + c);
		}
		snprintf(what, sizeof(what), "%u literals", n);
		check_one(what, buf, n, 1, 1, &l);
		if (l.block_type == 2 && l.lit_type == 2)
			is_int(l.streams, n < 256 ? 1 : 4,
			       "%u literals (%u in the section): %d stream(s)",
			       n, l.regen, l.streams);
		else
			ok(0, "%u literals: block type %d, literals type %d",
			   n, l.block_type, l.lit_type);
	}
	free(seen);
	free(buf);
}

/* Alphabets that force FSE-compressed weights (a symbol above 128) and
 * ones that allow direct weights. */
static void weight_forms(uint64_t *rng)
{
	const size_t n = 60000;
	uint8_t *buf = test_xmalloc(n);
	struct zt_lits l;

	/* Skewed over 0..255: Huffman pays, the last symbol is > 128. */
	zt_fill(buf, n, 2, rng);
	check_one("skewed bytes up to 255", buf, n, 1, 1, &l);
	ok(l.lit_type == 2 && l.fse_weights,
	   "symbols up to 255: FSE-compressed weights (literals type %d, "
	   "fse %d)", l.lit_type, l.fse_weights);
	/* Skewed over 0..127 only. */
	for (size_t i = 0; i < n; i++)
		buf[i] &= 0x7F;
	check_one("skewed bytes up to 127", buf, n, 1, 1, &l);
	ok(l.lit_type == 2, "symbols up to 127: Huffman literals (type %d, "
	   "fse weights %d)", l.lit_type, l.fse_weights);
	/* Six symbols 0..5, skewed: three weights or fewer, so the
	 * weights are written directly. */
	for (size_t i = 0; i < n; i++) {
		unsigned v = 0;

		while (v < 5 && test_rand(rng) % 3 == 0)
			v++;
		buf[i] = (uint8_t)v;
	}
	check_one("six skewed symbols 0..5", buf, n, 1, 1, &l);
	ok(l.lit_type == 2 && !l.fse_weights,
	   "symbols 0..5: direct weights (literals type %d, fse %d)",
	   l.lit_type, l.fse_weights);
	/* Two symbols far apart: 0 and 250. */
	for (size_t i = 0; i < n; i++)
		buf[i] = test_rand(rng) % 3 ? 0 : 250;
	check_one("two symbols, 0 and 250", buf, n, 1, 1, &l);
	/* 12-bit noise: 256 low-byte values and 16 high-byte values. */
	zt_noise12(buf, n, rng);
	check_one("12-bit noise", buf, n, 1, 1, &l);
	ok(l.lit_type == 2, "12-bit noise: Huffman literals (type %d, fse "
	   "weights %d)", l.lit_type, l.fse_weights);
	free(buf);
}

/*
 * The content checksum (Zarr's zstd "checksum": true): the frame carries
 * the descriptor's checksum flag and 4 more bytes, and is otherwise the
 * frame without it; libzstd verifies the checksum when it decodes, and
 * refuses the frame once the checksum's last byte is flipped.  Sizes
 * around XXH64's 32-byte stripes, its 8- and 4-byte tails, and blocks.
 */
static void checksums(uint64_t *rng)
{
	static const uint64_t sizes[] = {
		0, 1, 3, 4, 7, 8, 12, 31, 32, 33, 39, 63, 64, 100, 1000,
		131073, 4 * 131072 + 1,
	};
	static const int lv[] = { 1, 5, 9 };
	const size_t big = 4 * 131072 + 1;
	uint8_t *buf = test_xmalloc(big);
	uint8_t *a = test_xmalloc(zt_bound(big) + ZT_GUARD);
	uint8_t *b = test_xmalloc(zt_bound(big) + ZT_GUARD);
	char what[96];

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint64_t n = sizes[k];
		int level = lv[k % 3], ga, gb, good;
		uint64_t sa, sb;

		zt_fill(buf, n, (int)(k % ZT_DISTS), rng);
		sa = zt_encode_word(buf, n, a, zt_word(level, 1), &ga);
		sb = zt_encode_word(buf, n, b, zt_word(level, 0), &gb);
		snprintf(what, sizeof(what), "checksum, %llu bytes, level %d",
			 (unsigned long long)n, level);
		good = ga && sa <= zt_bound(n) && zt_check(what, buf, n, a, sa);
		ok(good, "%s: decodes, checksum verified by libzstd (%llu "
		   "bytes)", what, (unsigned long long)sa);
		if (good)
			cli_add(a, sa, buf, n);
		ok(sa == sb + 4 && (a[4] & 0x04) && !(b[4] & 0x04) &&
			   a[4] == (b[4] | 0x04) && memcmp(a, b, 4) == 0 &&
			   memcmp(a + 5, b + 5, sb - 5) == 0,
		   "%s: the frame without checksum plus the flag and 4 bytes "
		   "(%llu vs %llu)", what, (unsigned long long)sa,
		   (unsigned long long)sb);
		a[sa - 1] ^= 0x01;
		{
			uint8_t *back = test_xmalloc(n + 1);
			size_t r = ZSTD_decompress(back, n + 1, a, sa);

			ok(ZSTD_isError(r) &&
				   ZSTD_getErrorCode(r) ==
					   ZSTD_error_checksum_wrong,
			   "%s: a flipped checksum bit is refused (%s)", what,
			   ZSTD_isError(r) ? ZSTD_getErrorName(r) : "accepted");
			free(back);
		}
	}
	free(buf);
	free(a);
	free(b);
}

static void randomized(uint64_t *rng, int rounds)
{
	const size_t maxn = 600000;
	uint8_t *buf = test_xmalloc(maxn);
	char what[96];

	for (int r = 0; r < rounds; r++) {
		int kind = (int)(test_rand(rng) % ZT_DISTS);
		int lv = levels[test_rand(rng) % NLEVELS];
		int cs = test_rand(rng) % 4 == 0;
		uint64_t n;

		switch (test_rand(rng) % 4) {
		case 0:
			n = test_rand(rng) % 300;
			break;
		case 1:
			n = test_rand(rng) % 20000;
			break;
		case 2:
			n = 131072 * (1 + test_rand(rng) % 4) +
			    (test_rand(rng) % 65) - 32;
			break;
		default:
			n = test_rand(rng) % maxn;
			break;
		}
		zt_fill(buf, n, kind, rng);
		snprintf(what, sizeof(what), "random round %d, kind %d", r,
			 kind);
		check_one_cs(what, buf, n, lv, cs, 0, NULL);
	}
	free(buf);
}

/* The edge-case frames, concatenated, through `zstd -d`. */
static void command_line(void)
{
	char *dir = test_tmpdir("zstd-encode"), *cmd;
	char *in, *out;
	size_t got = 0;
	uint8_t *back;
	FILE *f;
	int rc;

	if (system("zstd --version > /dev/null 2>&1") != 0) {
		skip(1, "no zstd command");
		test_rmtree(dir);
		free(dir);
		return;
	}
	if (asprintf(&in, "%s/frames.zst", dir) < 0 ||
	    asprintf(&out, "%s/frames", dir) < 0)
		bail("out of memory");
	f = fopen(in, "wb");
	if (f == NULL || fwrite(cli_frames, 1, cli_nframes, f) != cli_nframes ||
	    fclose(f) != 0)
		bail("writing %s", in);
	if (asprintf(&cmd, "zstd -q -d -f -o '%s' '%s'", out, in) < 0)
		bail("out of memory");
	rc = system(cmd);
	back = rc == 0 ? test_slurp(out, &got) : NULL;
	ok(rc == 0 && back != NULL && got == cli_ndata &&
		   memcmp(back, cli_data, got) == 0,
	   "zstd -d decodes %zu concatenated frames' %zu bytes (rc %d, got "
	   "%zu)", cli_nframes, cli_ndata, rc, got);
	free(back);
	free(cmd);
	free(in);
	free(out);
	test_rmtree(dir);
	free(dir);
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;
	const char *env = getenv("SHARDPIPE_ZSTD_ROUNDS");
	int rounds = env != NULL && *env != '\0' ? atoi(env)
					     : (int)test_sized("rounds", 60, 15);

	plan_lazy();
	edge_cases(&rng);
	stream_forms();
	weight_forms(&rng);
	checksums(&rng);
	command_line();
	randomized(&rng, rounds);
	free(zt_scratch);
	free(cli_frames);
	free(cli_data);
	return done_testing();
}
