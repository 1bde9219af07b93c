/*
 * gzip-encode.c - the gzip kernel (backends/kernels/deflate.h) compiled as
 * C and run as the reference executor runs it: every member decodes with
 * zlib and libdeflate to its input, stays within the slot capacity, and
 * carries the right CRC-32; edge cases of the partition (empty, tiny,
 * 32 KiB and 64 KiB +-1, runs crossing segment and block boundaries, the
 * largest chunk the encoder takes, SP_DEFL_MAX_CHUNK) at every level
 * (the largest at level 1); merged blocks pay; the sort of phase 1 against
 * a serial insertion; the same chunks encoded in one launch over several
 * groups equal the chunks encoded one by one.
 */
#include <stdio.h>

#include "gzip-kernel.h"
#include "testutil.h"

static uint64_t rng;

/* Check src[0..n) at `level`; returns the member's size. */
static uint64_t check(const char *what, const uint8_t *src, uint64_t n,
		      int level)
{
	uint64_t cap = gz_codec_bound(n);
	uint8_t *enc = test_xmalloc(cap);
	uint64_t size;
	char label[160];

	/* Bytes past the bound must stay untouched: a canary. */
	memset(enc, 0xA5, cap);
	size = gz_encode(src, n, level, enc, cap);
	snprintf(label, sizeof(label), "%s, level %d", what, level);
	gz_check_member(label, src, n, enc, size);
	for (uint64_t i = size; i < cap; i++)
		if (enc[i] != 0xA5) {
			ok(0, "%s: byte %llu past the member's end written",
			   label, (unsigned long long)i);
			break;
		}
	free(enc);
	return size;
}

static void fill_runs(uint8_t *b, uint64_t n)
{
	/* Runs of 1..20000 equal bytes: many cross 4 KiB segments and
	 * 32 KiB blocks, some start right at a boundary. */
	uint64_t i = 0;

	while (i < n) {
		uint64_t len = 1 + test_rand(&rng) % 20000;
		uint8_t v = (uint8_t)test_rand(&rng);

		if (test_rand(&rng) % 4 == 0)
			len = SP_DEFL_SEG - i % SP_DEFL_SEG + 7;
		for (uint64_t k = 0; k < len && i < n; k++)
			b[i++] = v;
	}
}

/* Text-like: words from a small vocabulary, so matches of every length
 * and distance. */
static void fill_words(uint8_t *b, uint64_t n)
{
	static const char *const words[] = {
		"shard", "chunk", "zarr ", "array", "deflate ", "gzip", "\n",
		"the ", "of ", "index ", "epoch", "0123456789", " ", ", ",
	};
	uint64_t i = 0;

	while (i < n) {
		const char *w = words[test_rand(&rng) % 14];

		for (; *w && i < n; w++)
			b[i++] = (uint8_t)*w;
	}
}

/*
 * Phase 1 sorts the positions by hash, stably: each position's entry
 * follows the latest earlier position of its hash, if any, as a serial
 * insertion into a head table (computed here) finds it; and the order is
 * a permutation with hashes in increasing order.
 */
static void check_sort(const char *what, const uint8_t *src, uint64_t n)
{
	const uint64_t np = n >= 4 ? n - 3 : 0;
	const uint32_t bits = defl_hash_bits(n);
	uint16_t *hsh = test_xmalloc(2 * (np + 1));
	uint32_t *tmp = test_xmalloc(4 * (np + 1));
	uint32_t *srt = test_xmalloc(4 * (np + 1));
	uint64_t *cnt = test_xmalloc(SP_DEFL_CNT_BYTES(np));
	uint64_t red[1];
	uint32_t *head = test_xmalloc(4u << bits);
	uint32_t *latest = test_xmalloc(4 * (np + 1));
	uint8_t *seen = test_xmalloc(np + 1);
	uint64_t bad = 0, first = 0;

	sp_ref_item.group = 0;
	sp_ref_item.groups = 1;
	defl_sort(src, np, bits, hsh, tmp, srt, cnt, red);
	memset(head, 0xFF, 4u << bits);
	memset(seen, 0, np + 1);
	for (uint64_t p = 0; p < np; p++) {
		uint32_t h = defl_hash(src + p, bits);

		latest[p] = head[h];
		head[h] = (uint32_t)p;
	}
	for (uint64_t i = 0; i < np; i++) {
		uint32_t p = srt[i], want;

		if (p >= np || seen[p]) {
			bad++;
			first = bad == 1 ? i : first;
			continue;
		}
		seen[p] = 1;
		want = i > 0 && hsh[srt[i - 1]] == hsh[p] ?
			       srt[i - 1] : 0xFFFFFFFFu;
		if (hsh[p] != defl_hash(src + p, bits) || want != latest[p] ||
		    (i > 0 && hsh[srt[i - 1]] > hsh[p])) {
			bad++;
			first = bad == 1 ? i : first;
		}
	}
	ok(bad == 0, "%s: %llu bytes: positions sorted by hash, each after "
	   "its latest earlier one (%llu wrong, the first at %llu)", what,
	   (unsigned long long)n, (unsigned long long)bad,
	   (unsigned long long)first);
	free(hsh);
	free(tmp);
	free(srt);
	free(cnt);
	free(head);
	free(latest);
	free(seen);
}

/*
 * The length limiter: frequencies that make Huffman's tree deeper than
 * the limit (Fibonacci-like, and one symbol far above the rest) still give
 * a complete code (Kraft sum exactly 1, as zlib requires of a litlen or
 * distance code) of no length beyond the limit, and every symbol used
 * gets a code.
 */
static void check_limit(const char *what, const uint32_t *freq, uint32_t nsym,
			uint32_t limit)
{
	uint32_t *f = test_xmalloc(4 * nsym), *work = test_xmalloc(12 * nsym);
	uint64_t *key = test_xmalloc(8 * nsym);
	uint8_t *len = test_xmalloc(nsym);
	uint64_t kraft = 0, cap = (uint64_t)1 << limit;
	uint32_t longest = 0, missing = 0;

	memcpy(f, freq, 4 * nsym);
	defl_huff_lengths(f, nsym, limit, len, key, work);
	for (uint32_t i = 0; i < nsym; i++) {
		if (len[i] > longest)
			longest = len[i];
		if (len[i] != 0 && len[i] <= limit)
			kraft += cap >> len[i];
		if (freq[i] != 0 && len[i] == 0)
			missing++;
	}
	ok(longest <= limit && kraft == cap && missing == 0,
	   "%s: %u symbols, limit %u: longest %u, Kraft sum %llu/%llu, "
	   "%u used symbols without a code", what, nsym, limit, longest,
	   (unsigned long long)kraft, (unsigned long long)cap, missing);
	free(f);
	free(work);
	free(key);
	free(len);
}

static void check_limits(void)
{
	uint32_t freq[286];
	uint32_t a = 1, b = 1;

	/* 1, 1, 2, 3, 5, ... up to what a 32 KiB block can hold. */
	memset(freq, 0, sizeof(freq));
	for (uint32_t i = 0; i < 24; i++) {
		freq[i * 11] = a;
		b += a;
		a = b - a;
	}
	check_limit("Fibonacci litlen", freq, 286, 15);
	a = b = 1;
	for (uint32_t i = 0; i < 19; i++) {
		freq[i] = a;
		b += a;
		a = b - a;
	}
	check_limit("Fibonacci code-length code", freq, 19, 7);
	check_limit("Fibonacci distance", freq, 30, 15);
	for (uint32_t i = 0; i < 286; i++)
		freq[i] = i == 7 ? 32768 : 1;
	check_limit("one frequent litlen, 285 rare", freq, 286, 15);
	check_limit("one frequent distance, 29 rare", freq, 30, 15);
	check_limit("one frequent code-length symbol", freq, 19, 7);
	for (uint32_t i = 0; i < 286; i++)
		freq[i] = 1 + (uint32_t)(test_rand(&rng) % 1000) *
			(uint32_t)(test_rand(&rng) % 1000);
	check_limit("random litlen", freq, 286, 15);
}

int main(void)
{
	static const uint64_t sizes[] = {
		0, 1, 2, 3, 4, 5, 17, 258, 259, 4095, 4096, 4097,
		32767, 32768, 32769, 65535, 65536, 65537, 100000,
	};
	const uint64_t nsizes = sizeof(sizes) / sizeof(sizes[0]);
	const uint64_t big = 3 * 65536 + 12345;
	uint8_t *buf = test_xmalloc(big), *buf2 = test_xmalloc(big);
	char what[120];

	plan_lazy();
	rng = test_seed();
	check_limits();

	/* Every size of the list, four patterns, every level. */
	for (uint64_t k = 0; k < nsizes; k++)
		for (int pat = 0; pat < 4; pat++) {
			uint64_t n = sizes[k];

			test_fill(buf, n, pat, &rng);
			snprintf(what, sizeof(what), "%llu bytes, pattern %d",
				 (unsigned long long)n, pat);
			for (int level = 0; level <= 9; level++)
				if (n <= 4097 || pat != 0 || level % 3 == 0)
					check(what, buf, n, level);
		}

	/* All-equal bytes; every byte value; incompressible. */
	memset(buf, 'x', big);
	for (int level = 0; level <= 9; level++) {
		uint64_t s = check("all-equal bytes", buf, big, level);

		if (level != 0)
			ok(s < big / 100, "all-equal: level %d: %llu bytes "
			   "is under 1%%", level, (unsigned long long)s);
	}
	for (uint64_t i = 0; i < 256; i++)
		buf[i] = (uint8_t)i;
	for (int level = 0; level <= 9; level++)
		check("every byte value once", buf, 256, level);
	for (uint64_t i = 0; i < big; i++)
		buf[i] = (uint8_t)(i * 167 + (i >> 8));
	for (int level = 0; level <= 9; level += 3)
		check("every byte value, shuffled", buf, big, level);
	test_fill(buf, big, 0, &rng);
	for (int level = 0; level <= 9; level++) {
		uint64_t s = check("random bytes", buf, big, level);

		ok(s <= big + 5 * SP_DEFL_NBLK(big) + 19,
		   "random: level %d falls back to stored blocks (%llu bytes)",
		   level, (unsigned long long)s);
	}

	/* Runs across segment and block boundaries; text-like data. */
	fill_runs(buf, big);
	for (int level = 0; level <= 9; level++)
		check("runs across boundaries", buf, big, level);
	fill_words(buf, big);
	for (int level = 0; level <= 9; level++)
		check("text-like", buf, big, level);
	/* Matches reaching back exactly 32 KiB and just beyond. */
	test_fill(buf, 40000, 0, &rng);
	memcpy(buf + 32768, buf, 4000);
	memcpy(buf2, buf, 40000);
	buf2[0] ^= 1;
	for (int level = 1; level <= 9; level += 4) {
		check("a copy 32768 bytes back", buf, 36768, level);
		check("a copy 32768 bytes back, first byte differs", buf2,
		      36768, level);
	}

	/* Mixed content over many merged and unmerged blocks, and the
	 * largest chunk the encoder takes (SP_DEFL_MAX_CHUNK): words, runs
	 * crossing segments, random and smooth stretches. */
	{
		const uint64_t sizes2[] = { 16u << 20, SP_DEFL_MAX_CHUNK };
		uint8_t *huge = test_xmalloc(SP_DEFL_MAX_CHUNK);

		for (int k = 0; k < 2; k++) {
			const uint64_t n = sizes2[k];

			for (uint64_t off = 0; off < n; off += big) {
				uint64_t len = n - off < big ? n - off : big;

				switch ((off / big) % 4) {
				case 0: fill_words(huge + off, len); break;
				case 1: fill_runs(huge + off, len); break;
				case 2: test_fill(huge + off, len, 0, &rng); break;
				default: test_fill(huge + off, len, 3, &rng); break;
				}
			}
			snprintf(what, sizeof(what), "%s: %llu bytes mixed",
				 k ? "the largest chunk" : "16 MiB",
				 (unsigned long long)n);
			check(what, huge, n, 1);
			if (k == 0)
				check(what, huge, n, 6);
		}
		free(huge);
	}

	/* Block merging: 256 KiB of 12-bit noise is one dynamic block, so
	 * its member is smaller than its eight 32 KiB units coded alone
	 * (each with its own code and 18 bytes of gzip framing). */
	{
		const uint64_t n = 8 * 32768, cap = gz_codec_bound(n);
		uint8_t *enc = test_xmalloc(cap), *noise = test_xmalloc(n);
		uint64_t whole, parts = 0;

		for (uint64_t i = 0; i < n; i += 2) {
			uint64_t v = test_rand(&rng) & 0xFFF;

			noise[i] = (uint8_t)v;
			noise[i + 1] = (uint8_t)(v >> 8);
		}
		whole = check("12-bit noise, 8 units", noise, n, 1);
		for (uint64_t u = 0; u < 8; u++)
			parts += gz_encode(noise + u * 32768, 32768, 1, enc,
					   cap) - 18;
		ok(whole - 18 < parts, "12-bit noise: one member of 8 units "
		   "(%llu bytes of deflate) beats 8 members of one (%llu)",
		   (unsigned long long)(whole - 18), (unsigned long long)parts);
		free(noise);
		free(enc);
	}

	/* Phase 1 on chunks sorted in one pass (8-bit hashes) and two. */
	for (int pat = 0; pat < 4; pat++) {
		test_fill(buf, big, pat, &rng);
		check_sort("pattern", buf, pat == 0 ? 5 : big - pat);
	}
	fill_runs(buf, big);
	check_sort("runs", buf, big);
	fill_words(buf, 70000);
	check_sort("text-like", buf, 70000);
	check_sort("text-like", buf, 1000);
	check_sort("text-like", buf, 200);

	/* Several chunks in one launch, groups striding over them, equal
	 * the chunks encoded alone. */
	{
		const uint64_t n = 70001, count = 5, cap = gz_codec_bound(n);
		uint8_t *in = test_xmalloc(n * count);
		uint8_t *many = test_xmalloc(cap * count);
		uint8_t *one = test_xmalloc(cap);
		uint64_t sz[5], alone;
		int same = 1;

		for (uint64_t j = 0; j < count; j++)
			test_fill(in + j * n, n, (int)(j % 4), &rng);
		gz_encode_chunks(in, n, count, 6, 2, many, cap, sz);
		for (uint64_t j = 0; j < count; j++) {
			alone = gz_encode(in + j * n, n, 6, one, cap);
			if (alone != sz[j] || memcmp(one, many + j * cap, alone))
				same = 0;
		}
		ok(same, "5 chunks over 2 groups equal the chunks alone");
		free(in);
		free(many);
		free(one);
	}
	free(buf);
	free(buf2);
	return done_testing();
}
