/*
 * zstd-tables.c - how the zstd kernel codes sequences (issue 22): repeat
 * offsets and the per-block choice of predefined, RLE or fitted FSE
 * tables for literal lengths, offsets and match lengths.
 *
 * - Repeat codes: spz_seq_repeats rewrites random sequence lists (a few
 *   offsets recurring, literal lengths often 0); this test's own reading
 *   of RFC 8878 3.1.1.5, started from the decoder's true repeat offsets
 *   (1, 4, 8 for a frame's first block, arbitrary ones for any other,
 *   which the encoder cannot know), must give back every offset, and
 *   repeat codes must occur.
 * - Table modes: inputs built to call for each mode (segmentation-like
 *   labels: fitted tables; four copies of one length: RLE; three of
 *   different lengths: predefined) are encoded at
 *   levels 1, 3, 5 and 9, every frame decoded by libzstd and compared,
 *   and the modes bytes of its blocks read back: the mode the input calls
 *   for must be there.
 * - Repeats in the parse: volumes of labelled ellipsoids (bench/
 *   zstd_corpus.py's labels, small) whose rows cycle through three
 *   offsets (the background's, the run's period, the row above's).  At
 *   levels 1 and 3 the kernel's frames must be no more than 1/0.97 of
 *   libzstd's at the same level (issue 22's target): a parse that keeps
 *   two repeat offsets wrote 0.92-0.95 of libzstd's ratio here over 25
 *   seeds, the one that keeps three 1.02-1.06.  At level 5 at least
 *   0.95 (the target there): the parse without seeded segments and
 *   chained candidates wrote 0.87-0.90, with them 0.93-0.96 over 43
 *   seeds, with the hash chains 1.08-1.12 over 8.
 * - Matches far back: CT-like volumes (bench/zstd_corpus.py's ct,
 *   small).  At levels 5 and 9 the kernel must reach 0.95 of libzstd's
 *   ratio, 0.97 at level 3: the table of 8192 entries wrote 0.922 and
 *   0.930 at 5 and 9, the hash chains 0.962 and 0.971 (seeds 1-6).
 */
#include "zstd-common.h"

static const int levels[] = { 1, 3, 5, 9 };
#define NLEVELS (int)(sizeof(levels) / sizeof(levels[0]))

/* ------------------------------------------------------- repeat codes */

/* Offset_Value ov after literal length ll, with the decoder's repeat
 * offsets rep[3]: the offset it means, rep[] updated (RFC 8878
 * 3.1.1.5). */
static uint32_t rfc_offset(uint32_t ov, uint32_t ll, uint32_t rep[3])
{
	uint32_t off, idx;

	if (ov > 3) {
		off = ov - 3;
		rep[2] = rep[1];
		rep[1] = rep[0];
		rep[0] = off;
		return off;
	}
	idx = ov - 1 + (ll == 0);
	if (idx == 0)
		return rep[0];
	off = idx == 3 ? rep[0] - 1 : rep[idx];
	if (idx != 1)
		rep[2] = rep[1];
	rep[1] = rep[0];
	rep[0] = off;
	return off;
}

static void repeat_codes(uint64_t *rng)
{
	uint8_t *ws = test_xmalloc(SPZ_SCRATCH_BYTES);
	u32 *s = (u32 *)(ws + SPZ_OFF_SEQ);
	uint32_t *want = test_xmalloc(4096 * sizeof(*want));

	for (int round = 0; round < 8; round++) {
		uint32_t nseq = 1 + (uint32_t)(test_rand(rng) % 4096);
		uint32_t pool[5], rep[3], bad = 0, reps = 0;
		u32 ofcnt[SPZ_FT_SYMS], mine[SPZ_FT_SYMS] = { 0 };
		int first = round % 2 == 0;

		for (int k = 0; k < 5; k++)
			pool[k] = 1 + (uint32_t)(test_rand(rng) % 200);
		pool[0] = 4;  /* the initial repeat 2 of a frame */
		for (uint32_t i = 0; i < nseq; i++) {
			uint32_t r = (uint32_t)(test_rand(rng) % 16);

			want[i] = r < 12 ? pool[r % 5] :
				  1 + (uint32_t)(test_rand(rng) % 100000);
			s[2 * i] = test_rand(rng) % 3 == 0 ?
					   0 : (u32)(test_rand(rng) % 50);
			s[2 * i + 1] = (u32)(3 + test_rand(rng) % 100) |
				       (want[i] + 3) << SPZ_SEQ_OFV_SHIFT;
		}
		memset(ofcnt, 0, sizeof(ofcnt));
		spz_seq_repeats(ws, nseq, (u32)first, ofcnt);
		if (first) {
			rep[0] = 1;
			rep[1] = 4;
			rep[2] = 8;
		} else {
			for (int k = 0; k < 3; k++)
				rep[k] = 1 + (uint32_t)(test_rand(rng) % 300);
		}
		for (uint32_t i = 0; i < nseq; i++) {
			uint32_t ov = s[2 * i + 1] >> SPZ_SEQ_OFV_SHIFT;
			uint32_t got = rfc_offset(ov, s[2 * i], rep);

			uint32_t code = 31 - (uint32_t)__builtin_clz(ov);

			reps += ov <= 3;
			/* The offset code stored and counted for the
			 * tables (zstd_seq.h). */
			mine[code]++;
			if (ws[SPZ_OFF_OFCODE + i] != code && !bad++)
				diag("sequence %u: offset code %u stored as %u",
				     i, code, ws[SPZ_OFF_OFCODE + i]);
			if (got != want[i] && !bad++)
				diag("sequence %u: offset %u read as %u", i,
				     want[i], got);
		}
		ok(bad == 0 && memcmp(mine, ofcnt, sizeof(mine)) == 0 &&
			   (nseq < 16 || reps > 0),
		   "repeat codes, %s block, %u sequences: every offset read "
		   "back, its code stored and counted (%u repeat codes)",
		   first ? "first" : "later", nseq, reps);
	}
	free(want);
	free(ws);
}

/* -------------------------------------------------------- table modes */

/* seen[type][mode] |= 1 for every compressed block of a kernel frame;
 * types in the modes byte's order: literal lengths, offsets, match
 * lengths.  Returns 0 when the frame does not parse. */
static int seq_modes(const uint8_t *f, uint64_t size, int seen[3][4])
{
	static const int fcs_len[4] = { 1, 2, 4, 8 };
	uint64_t p = 5 + fcs_len[f[4] >> 6];

	for (;;) {
		uint32_t h, bt, bs, lt, sf, q;
		const uint8_t *c;

		if (p + 3 > size)
			return 0;
		h = f[p] | f[p + 1] << 8 | (uint32_t)f[p + 2] << 16;
		bt = (h >> 1) & 3;
		bs = h >> 3;
		c = f + p + 3;
		p += 3 + (bt == 1 ? 1 : bs);
		if (p > size)
			return 0;
		if (bt == 2) {
			lt = c[0] & 3;
			sf = (c[0] >> 2) & 3;
			if (lt < 2) {
				uint32_t hl = sf == 1 ? 2 : sf == 3 ? 3 : 1;
				uint32_t n = sf == 1 ? (c[0] >> 4) | c[1] << 4 :
					     sf == 3 ? (c[0] >> 4) | c[1] << 4 |
							       c[2] << 12 :
						       c[0] >> 3u;

				q = hl + (lt == 1 ? 1 : n);
			} else {
				uint32_t hl = sf <= 1 ? 3 : sf == 2 ? 4 : 5;
				uint32_t bits = hl == 3 ? 10 : hl == 4 ? 14 : 18;
				uint64_t v = 0;

				for (uint32_t i = 0; i < hl; i++)
					v |= (uint64_t)c[i] << (8 * i);
				q = hl + (uint32_t)(v >> (4 + bits));
			}
			if (q >= bs)
				return 0;
			if (c[q] != 0) {
				q += c[q] < 128 ? 1 : c[q] < 255 ? 2 : 3;
				for (int k = 0; k < 3; k++)
					seen[k][(c[q] >> (6 - 2 * k)) & 3] = 1;
			}
		}
		if (h & 1)
			return p == size || p + 4 == size;
	}
}

/* Encode at every level, decode with libzstd, and require mode `mode`
 * for each type of `types` (bit k: type k of seq_modes) in some block. */
static void modes_case(const char *what, const uint8_t *src, uint64_t n,
		       int mode, int types)
{
	static const char *const tname[3] = { "literal lengths", "offsets",
					      "match lengths" };
	static const char *const mname[4] = { "predefined", "RLE", "fitted",
					      "repeat" };
	uint8_t *slot = test_xmalloc(zt_bound(n) + ZT_GUARD);

	for (int li = 0; li < NLEVELS; li++) {
		int seen[3][4] = { { 0 } }, guard, parsed, got = 1;
		uint64_t size = zt_encode(src, n, slot, levels[li], &guard);
		char desc[160];

		snprintf(desc, sizeof(desc), "%s, level %d", what, levels[li]);
		ok(size <= zt_bound(n) && guard &&
			   zt_check(desc, src, n, slot, size),
		   "%s: %llu -> %llu bytes, libzstd decodes it", desc,
		   (unsigned long long)n, (unsigned long long)size);
		parsed = seq_modes(slot, size, seen);
		for (int k = 0; k < 3; k++)
			if ((types >> k & 1) && !seen[k][mode]) {
				diag("%s: no block codes %s %s (modes seen "
				     "%d%d%d%d)", desc, tname[k], mname[mode],
				     seen[k][0], seen[k][1], seen[k][2],
				     seen[k][3]);
				got = 0;
			}
		ok(parsed && got, "%s: %s tables where the input calls for them",
		   desc, mname[mode]);
	}
	free(slot);
}

/* n bytes of buf from src to dst, the bytes around the copy made to
 * differ from those around its source, so the match is n bytes long. */
static void copy(uint8_t *buf, uint64_t dst, uint64_t src, uint64_t n)
{
	memcpy(buf + dst, buf + src, n);
	if (src > 0)
		buf[dst - 1] = (uint8_t)(buf[src - 1] ^ 1);
	buf[dst + n] = (uint8_t)(buf[src + n] ^ 1);
}

static void table_modes(uint64_t *rng)
{
	uint64_t n = 512 << 10;
	uint8_t *buf = test_xmalloc(n);
	uint64_t i;

	/* Labels: thousands of sequences a block, codes skewed. */
	zt_fill(buf, n, 9, rng);
	modes_case("uint32 labels", buf, n, SPZ_SEQ_FSE, 7);

	/* A few copies, their sources in earlier rounds of the match
	 * finder's table (zstd_match.h), where every level finds them. */
	for (i = 0; i < 1500; i++)
		buf[i] = (uint8_t)test_rand(rng);
	/* Four of one length: one match-length code, RLE's one byte is
	 * cheaper than the predefined table's state bits. */
	for (uint64_t k = 0; k < 4; k++)
		copy(buf, 300 * (k + 1), 40 * k, 20);
	modes_case("four 20-byte matches", buf, 1500, SPZ_SEQ_RLE, 4);
	/* Three of different lengths: too few sequences for a fitted
	 * table's description to pay. */
	for (i = 0; i < 1200; i++)
		buf[i] = (uint8_t)test_rand(rng);
	copy(buf, 300, 0, 11);
	copy(buf, 600, 20, 26);
	copy(buf, 900, 50, 40);
	modes_case("three matches", buf, 1200, SPZ_SEQ_PREDEF, 4);
	free(buf);
}

/* ------------------------------------------------- repeats in the parse */

static double unit(uint64_t *rng)
{
	return (double)(test_rand(rng) >> 11) / 9007199254740992.0;
}

/* A z, y, x volume of uint32 labels: ne ellipsoids of radii 2-6 along z
 * and 4-20 along y and x, each of one id below 2^20, over zeros. */
static void ellipsoids(uint32_t *v, int nz, int ny, int nx, int ne,
		       uint64_t *rng)
{
	memset(v, 0, (size_t)nz * ny * nx * sizeof(*v));
	for (int e = 0; e < ne; e++) {
		double cz = unit(rng) * nz, cy = unit(rng) * ny;
		double cx = unit(rng) * nx, rz = 2 + 4 * unit(rng);
		double ry = 4 + 16 * unit(rng), rx = 4 + 16 * unit(rng);
		uint32_t id = 1 + (uint32_t)(test_rand(rng) % ((1u << 20) - 1));

		for (int z = 0; z < nz; z++)
			for (int y = 0; y < ny; y++)
				for (int x = 0; x < nx; x++) {
					double a = (z - cz) / rz;
					double b = (y - cy) / ry;
					double c = (x - cx) / rx;

					if (a * a + b * b + c * c <= 1)
						v[((size_t)z * ny + y) * nx +
						  x] = id;
				}
	}
}

/*
 * `chunks` chunks of n bytes, each made by gen, encoded at three levels by
 * the kernel and by libzstd: one check that every frame decodes to its
 * chunk, then one a level that the kernel's ratio over the chunks is at
 * least least[k] of libzstd's.
 */
static void ratio_against_libzstd(const char *what,
				  void (*gen)(void *, uint64_t *), uint64_t n,
				  int chunks, const int lv[3],
				  const double least[3], uint64_t *rng)
{
	uint8_t *v = test_xmalloc(n);
	uint8_t *slot = test_xmalloc(zt_bound(n) + ZT_GUARD);
	size_t zcap = ZSTD_compressBound(n);
	uint8_t *z = test_xmalloc(zcap);
	uint64_t ours[3] = { 0, 0, 0 }, lib[3] = { 0, 0, 0 };
	int good = 1;

	for (int c = 0; c < chunks; c++) {
		gen(v, rng);
		for (int k = 0; k < 3; k++) {
			int guard;
			uint64_t size = zt_encode(v, n, slot, lv[k], &guard);
			size_t zs = ZSTD_compress(z, zcap, v, n, lv[k]);

			good &= guard && zt_check(what, v, n, slot, size) &&
				!ZSTD_isError(zs);
			ours[k] += size;
			lib[k] += zs;
		}
	}
	ok(good, "%s, %d chunks of %llu bytes: every frame decodes", what,
	   chunks, (unsigned long long)n);
	for (int k = 0; k < 3; k++)
		ok(lib[k] >= least[k] * ours[k],
		   "%s at level %d: %llu bytes, libzstd's %llu, %.3f of its "
		   "ratio (at least %.2f)", what, lv[k],
		   (unsigned long long)ours[k], (unsigned long long)lib[k],
		   (double)lib[k] / ours[k], least[k]);
	free(v);
	free(slot);
	free(z);
}

enum { VOL_Z = 8, VOL_Y = 128, VOL_X = 128 };

static void labels_chunk(void *v, uint64_t *rng)
{
	ellipsoids(v, VOL_Z, VOL_Y, VOL_X, 40, rng);
}

static void parse_repeats(uint64_t *rng)
{
	static const int lv[3] = { 1, 3, 5 };
	static const double least[3] = { 0.97, 0.97, 0.95 };

	ratio_against_libzstd("labelled ellipsoids", labels_chunk,
			      (uint64_t)VOL_Z * VOL_Y * VOL_X * 4, 8, lv,
			      least, rng);
}

/* ------------------------------------------------ matches far back */

/* A z, y, x volume of 12-bit CT-like samples (bench/zstd_corpus.py's
 * ct, small): air, a body, soft tissue and two lungs, Gaussian noise of
 * 12 on top.  Its matches are 5- and 6-byte coincidences in the noise,
 * many of them over 32 KiB back. */
static void ct_volume(uint16_t *v, int nz, int ny, int nx, uint64_t *rng)
{
	double sx = 0.3 * unit(rng) - 0.15;

	for (int z = 0; z < nz; z++)
		for (int y = 0; y < ny; y++)
			for (int x = 0; x < nx; x++) {
				double a = 2.0 * x / nx - 1 - sx;
				double b = 2.0 * y / ny - 1;
				double hu = -1000, g, u1, u2;

				if (a * a / 0.81 + b * b / 0.49 <= 1)
					hu = -100;
				if (a * a / 0.64 + b * b / 0.36 <= 1)
					hu = 40;
				for (int l = -1; l <= 1; l += 2) {
					double c = (a - 0.4 * l) / 0.3;

					if (c * c + b * b / 0.16 <= 1)
						hu = -850;
				}
				u1 = unit(rng);
				u2 = unit(rng);
				g = sqrt(-2 * log(u1 + 1e-300)) *
				    cos(6.283185307179586 * u2);
				hu = rint(hu + 1024 + 12 * g);
				v[((size_t)z * ny + y) * nx + x] =
					(uint16_t)(hu < 0 ? 0 : hu > 4095 ? 4095 : hu);
			}
}

static void ct_chunk(void *v, uint64_t *rng)
{
	ct_volume(v, VOL_Z, VOL_Y, VOL_X, rng);
}

static void far_matches(uint64_t *rng)
{
	static const int lv[3] = { 3, 5, 9 };
	static const double least[3] = { 0.97, 0.95, 0.95 };

	ratio_against_libzstd("CT-like volumes", ct_chunk,
			      (uint64_t)VOL_Z * VOL_Y * VOL_X * 2, 4, lv, least,
			      rng);
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;

	plan_lazy();
	repeat_codes(&rng);
	table_modes(&rng);
	parse_repeats(&rng);
	far_matches(&rng);
	free(zt_scratch);
	return done_testing();
}
