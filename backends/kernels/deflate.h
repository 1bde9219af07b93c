/*
 * deflate.h - stage 3 for codec "gzip": each chunk becomes one gzip member
 * (RFC 1952: 10-byte header without optional fields, a deflate stream per
 * RFC 1951, CRC-32 and ISIZE), in two kernels.  sp_gzip_units runs
 * phases 1 to 3 over every part of SP_DEFL_PART bytes of every chunk of
 * the batch as a unit of its own (groups stride over the units), leaving
 * each position's parse and each segment's histogram and CRC in the
 * chunk's results (deflate-layout.h); sp_codec_gzip then runs phases 4 to
 * 7, one work-group per chunk (groups stride over the chunks).  Every
 * phase below spreads its work over the group with a stride of the local
 * size and ends at a barrier, so a group of one work-item (the reference
 * executor) runs it as well.
 *
 * The output is a pure function of the chunk and the level
 * (doc/design.md §7.2 "Determinism"):
 *
 *  1. chains: prev[p] is the distance to the latest earlier position q
 *     with hash(q) == hash(p) (4 bytes hashed), 0 when there is none
 *     within 32 KiB: from a stable radix sort of the positions by hash,
 *     tiles of positions spread over the items, or by one item's serial
 *     insertion; both give the one function.  A part sorts its own
 *     positions and the 32 KiB before them: a chain reaching further
 *     back is cut where the match search stops anyway, so a part's
 *     chains, matches and parse are the chunk's.
 *  2. matches: every position's match, found along its chain up to the
 *     level's depth, the positions spread over the items; each compared a
 *     word at a time, and only up to SP_DEFL_SHORT bytes here: a longer
 *     one is searched in full where the parse meets it.  (One item leaves
 *     every position to the parse.)  Matches reach back into earlier
 *     segments of the chunk, up to 32 KiB, but end inside their own
 *     segment of SP_DEFL_SEG bytes (deflate-layout.h).
 *  3. parse: each segment, by one work-item, greedy or lazy over the
 *     matches of phase 2, one step per symbol: what a serial encoder
 *     following the same chains emits.  The work-item counts its
 *     segment's symbols and computes its segment's CRC-32.
 *  4. blocks: SP_DEFL_BLK_SEGS segments (32 KiB) form a unit.  Its
 *     histogram is the sum of its segments'; dynamic Huffman code
 *     lengths, limited to 15 bits (7 for the code-length code), are built
 *     from it, every unit's symbols sorted at once by the whole group
 *     (a merge sort), each tree then by one item.  Then units merge
 *     pairwise, as a binary tree over the
 *     chunk's units: two neighbouring nodes that are each one block
 *     become one dynamic block when its code (built from the summed
 *     histogram) costs fewer bits than the two apart, up to
 *     SP_DEFL_MERGE_MAX units; every pair of a tree level is decided
 *     independently, so the result does not depend on the local size.
 *     A block of one unit is coded stored, fixed or dynamic, whichever is
 *     shortest by exact bit count (ties: fixed over dynamic, stored only
 *     when strictly shorter); a merged block is dynamic.  (The merge
 *     decisions count a stored unit's byte-alignment padding as 7 bits,
 *     its most; the final choice counts it exactly.)
 *  5. the CRC-32 of the chunk joins the segments' CRCs pairwise, as a
 *     tree; one item then places the blocks (a stored block's padding
 *     depends on where it starts).
 *  6. packing: every segment's bit length follows from its histogram and
 *     its block's code; a work-group scan of those lengths places every
 *     segment and block header in the stream;
 *  7. each segment packs its bits into a staging area aligned like its
 *     place in the output, and each 32-bit output word is then assembled
 *     by one work-item from the pieces that overlap it.
 *
 * Levels (effort of the match finder; the block choice is the same at
 * every level but 0):
 *   0  stored blocks only
 *   1  greedy, 2 candidates, stop at 16 bytes
 *   2  greedy, 4 candidates, stop at 24 bytes
 *   3  greedy, 8 candidates, stop at 32 bytes
 *   4  lazy, 8 candidates, stop at 32 bytes
 *   5  lazy, 16 candidates, stop at 64 bytes
 *   6  lazy, 32 candidates, stop at 128 bytes
 *   7  lazy, 64 candidates, stop at 192 bytes
 *   8  lazy, 128 candidates, stop at 258 bytes
 *   9  lazy, 256 candidates, stop at 258 bytes
 *
 * Output never exceeds SP_DEFL_BOUND(n) bytes: a block of one unit costs
 * at most its stored form, and a merged block less than its units stored
 * with the most padding, which is what the bound counts.  Scratch: one
 * region of SP_DEFL_USCRATCH_BYTES(n) per work-group of sp_gzip_units and
 * of SP_DEFL_SCRATCH_BYTES(n) per work-group of sp_codec_gzip, at
 * GROUP_ID() times that size, and SP_DEFL_RES_BYTES(n) per chunk.
 */
#ifndef SP_KERNEL_DEFLATE_H
#define SP_KERNEL_DEFLATE_H

#include "kernel-list.h"
#include "collectives.h"
#include "copy.h"
#include "crc32.h"
#include "deflate-layout.h"

/* Per-block bookkeeping words (SP_DEFL_INFO per block). */
#define DEFL_I_TYPE 0   /* 0 stored, 1 fixed, 2 dynamic (BTYPE) */
#define DEFL_I_START 1  /* first bit of the block in the deflate stream */
#define DEFL_I_HDR 2    /* header bits: BFINAL, BTYPE and what follows */
#define DEFL_I_FIXED 3  /* whole block, fixed codes */
#define DEFL_I_DYN 4    /* whole block, dynamic codes */
#define DEFL_I_DYNHDR 5
#define DEFL_I_HLIT 6
#define DEFL_I_HDIST 7
#define DEFL_I_HCLEN 8
#define DEFL_I_NRLE 9
#define DEFL_I_TOTAL 10 /* block 0 only: bits of the deflate stream */
#define DEFL_I_CRC 11   /* block 0 only: CRC-32 of the chunk */
#define DEFL_I_RUN 12   /* units of the block this unit leads; 0: inside
			 * the block of an earlier unit */
#define DEFL_I_LEAD 13  /* the unit leading this unit's block */
#define DEFL_I_COST 14  /* the led block's bits, stored counted at most */

/* RFC 1951 3.2.7: the order code-length code lengths are sent in. */
CONSTANT_DATA u8 defl_clen_order[19] = {
	16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15
};

struct defl_effort {
	u32 depth; /* candidates tried per position */
	u32 nice;  /* a match this long ends the search */
	u32 lazy;  /* try the next position before taking a match */
};

DEVICE_FN struct defl_effort defl_effort_of(u64 level)
{
	struct defl_effort e;

	e.lazy = level >= 4;
	switch (level) {
	case 1: e.depth = 2; e.nice = 16; break;
	case 2: e.depth = 4; e.nice = 24; break;
	case 3: e.depth = 8; e.nice = 32; break;
	case 4: e.depth = 8; e.nice = 32; break;
	case 5: e.depth = 16; e.nice = 64; break;
	case 6: e.depth = 32; e.nice = 128; break;
	case 7: e.depth = 64; e.nice = 192; break;
	case 8: e.depth = 128; e.nice = 258; break;
	default: e.depth = 256; e.nice = 258; break;
	}
	return e;
}

/* Length symbol 257 + i (RFC 1951 3.2.5): length - 3 of its first
 * length, and its extra bits. */
DEVICE_FN u32 defl_len_base(u32 i)
{
	if (i < 8)
		return i;
	if (i >= 28)
		return 255;
	return (4 + (i & 3)) << (i / 4 - 1);
}

DEVICE_FN u32 defl_len_extra(u32 i)
{
	return (i < 8 || i >= 28) ? 0 : i / 4 - 1;
}

/* Distance code c: distance - 1 of its first distance, its extra bits. */
DEVICE_FN u32 defl_dist_base(u32 c)
{
	return c < 4 ? c : (2 + (c & 1)) << (c / 2 - 1);
}

DEVICE_FN u32 defl_dist_extra(u32 c)
{
	return c < 4 ? 0 : c / 2 - 1;
}

/* Fixed code lengths (RFC 1951 3.2.6), litlen then distance. */
DEVICE_FN u32 defl_fixed_len(u32 s)
{
	if (s >= SP_DEFL_DIST0)
		return 5;
	return s < 144 ? 8 : s < 256 ? 9 : s < 280 ? 7 : 8;
}

/*
 * Local lookup tables: len_code[length - 3] = length symbol - 257;
 * distance code of d - 1 = dist_lo[d - 1] below 256, else
 * dist_hi[(d - 1) >> 7] (codes from 16 on start at multiples of 128).
 */
DEVICE_FN void defl_tables_build(LOCAL u8 *len_code, LOCAL u8 *dist_lo,
				 LOCAL u8 *dist_hi)
{
	for (u64 x = LOCAL_ID(); x < 256; x += LOCAL_SIZE()) {
		u32 i = 0, c = 0, h = 0;

		while (i < 28 && defl_len_base(i + 1) <= x)
			i++;
		while (c < 29 && defl_dist_base(c + 1) <= x)
			c++;
		while (h < 29 && defl_dist_base(h + 1) <= (u32)(x << 7))
			h++;
		WORK(1 + i + c + h);
		len_code[x] = (u8)i;
		dist_lo[x] = (u8)c;
		dist_hi[x] = (u8)h;
	}
	BARRIER();
}

DEVICE_FN u32 defl_dist_code(LOCAL const u8 *dist_lo, LOCAL const u8 *dist_hi,
			     u32 d1)
{
	return d1 < 256 ? dist_lo[d1] : dist_hi[d1 >> 7];
}

/* ------------------------------------------------------------ chains */

DEVICE_FN u32 defl_hash_bits(u64 n)
{
	u32 b = 8;

	while (b < SP_DEFL_HASH_BITS && ((u64)1 << b) < n)
		b++;
	return b;
}

DEVICE_FN u32 defl_hash(GLOBAL const u8 *p, u32 bits)
{
	u32 v = (u32)p[0] | ((u32)p[1] << 8) | ((u32)p[2] << 16) |
		((u32)p[3] << 24);

	return (v * 0x9E3779B1u) >> (32 - bits);
}

/*
 * Phase 1: prev[p] is the distance to the latest earlier position with
 * the same hash as p (the 4 bytes at p hashed), 0 when there is none
 * within 32 KiB: the hash chains.  A group of one work-item inserts the
 * positions in order into a head table (defl_chains_serial); a larger
 * group sorts the positions that have a hash (the np = n - 3 whose four
 * bytes lie in the chunk) by hash, stably, so that each one follows the
 * latest earlier position of its hash (defl_sort, defl_link_step).  Both
 * compute the same function (t/gzip-encode checks the sort against a
 * serial insertion), so the output does not depend on the way.
 *
 * The sort is an LSD radix sort of one or two passes (8 bits, then the
 * hash's other bits): each work-item counts the digits of one tile of
 * positions into its column of cnt (digit-major), a scan turns the counts
 * into first places, and each item moves its tile's positions there in
 * order.  The tiles follow the local size; the sorted order, being
 * stable, does not.
 */
DEVICE_FN u64 defl_tiles(u64 np)
{
	u64 t = (np + SP_DEFL_TILE - 1) / SP_DEFL_TILE;

	return t < LOCAL_SIZE() ? t : LOCAL_SIZE();
}

/* Digits of pass `pass` (0: the low 8 bits, 1: the rest). */
DEVICE_FN u32 defl_digits(u32 bits, u32 pass)
{
	return pass == 0 ? 256u : 1u << (bits - 8);
}

DEVICE_FN u32 defl_digit(u32 h, u32 pass)
{
	return pass == 0 ? h & 255u : h >> 8;
}

/* One item's tile of the sort's input: from[a..b), or positions a..b. */
DEVICE_FN void defl_tile(u64 np, u64 t, u64 *a, u64 *b)
{
	u64 nt = defl_tiles(np);

	*a = t * np / nt;
	*b = (t + 1) * np / nt;
}

/* Counting; pass 0 hashes each position first. */
DEVICE_FN void defl_sort_count(GLOBAL const u8 *src, u64 np, u32 bits,
			       u32 pass, GLOBAL u16 *hsh,
			       GLOBAL const u32 *from, GLOBAL u64 *cnt)
{
	u64 t = LOCAL_ID(), nt = defl_tiles(np), a, b;
	u32 nd = defl_digits(bits, pass);

	if (t >= nt)
		return;
	defl_tile(np, t, &a, &b);
	WORK(nd);
	for (u32 d = 0; d < nd; d++)
		cnt[d * nt + t] = 0;
	for (u64 i = a; i < b; i++) {
		u32 h;

		WORK(1);
		if (pass == 0) {
			h = defl_hash(src + i, bits);
			hsh[i] = (u16)h;
		} else {
			h = hsh[from[i]];
		}
		cnt[defl_digit(h, pass) * nt + t]++;
	}
}

DEVICE_FN void defl_sort_move(u64 np, u32 pass, GLOBAL const u16 *hsh,
			      GLOBAL const u32 *from, GLOBAL u64 *cnt,
			      GLOBAL u32 *to)
{
	u64 t = LOCAL_ID(), nt = defl_tiles(np), a, b;

	if (t >= nt)
		return;
	defl_tile(np, t, &a, &b);
	for (u64 i = a; i < b; i++) {
		u32 p = pass == 0 ? (u32)i : from[i];

		WORK(1);
		to[cnt[defl_digit(hsh[p], pass) * nt + t]++] = p;
	}
}

/*
 * The sort, all items: hsh[p] for every p < np, and srt[0..np) the
 * positions sorted by hash (of `bits`, the chunk's); tmp holds the first
 * of two passes.  red: the group's reduction scratch (LOCAL_SIZE()
 * words).
 */
DEVICE_FN void defl_sort(GLOBAL const u8 *src, u64 np, u32 bits,
			 GLOBAL u16 *hsh, GLOBAL u32 *tmp, GLOBAL u32 *srt,
			 GLOBAL u64 *cnt, LOCAL u64 *red)
{
	const u32 npass = bits > 8 ? 2 : 1;

	for (u32 pass = 0; np != 0 && pass < npass; pass++) {
		defl_sort_count(src, np, bits, pass, hsh, tmp, cnt);
		BARRIER();
		wg_scan_array_u64(cnt, cnt, defl_digits(bits, pass) *
						  defl_tiles(np), red);
		BARRIER();
		defl_sort_move(np, pass, hsh, tmp, cnt,
			       pass + 1 == npass ? srt : tmp);
		BARRIER();
	}
}

/* The chains from the sort: each of the np positions links to the one
 * before it in sorted order when that has its hash and lies within
 * 32 KiB; the positions from np to n have no hash. */
DEVICE_FN void defl_link_step(u64 np, u64 n, GLOBAL const u16 *hsh,
			      GLOBAL const u32 *srt, GLOBAL u16 *prev)
{
	for (u64 i = LOCAL_ID(); i < np; i += LOCAL_SIZE()) {
		u32 p = srt[i], q = i > 0 ? srt[i - 1] : p;

		WORK(1);
		prev[p] = (u16)(q < p && hsh[q] == hsh[p] && p - q <= 32768 ?
					p - q : 0);
	}
	for (u64 p = np + LOCAL_ID(); p < n; p += LOCAL_SIZE()) {
		WORK(1);
		prev[p] = 0;
	}
}

/* The same chains by one work-item: serial insertion, position order. */
DEVICE_FN void defl_chains_serial(GLOBAL const u8 *src, u64 np, u64 n,
				  u32 bits, GLOBAL u32 *head, GLOBAL u16 *prev)
{
	const u32 none = (u32)1 << bits;

	WORK(none);
	for (u32 i = 0; i < none; i++)
		head[i] = 0xFFFFFFFFu;
	for (u64 p = 0; p < n; p++) {
		u32 h, q;

		WORK(1);
		if (p >= np) {
			prev[p] = 0;
			continue;
		}
		h = defl_hash(src + p, bits);
		q = head[h];
		prev[p] = (u16)(q != 0xFFFFFFFFu && p - q <= 32768 ? p - q : 0);
		head[h] = (u32)p;
	}
}

/* ------------------------------------------------------------ matches */

/*
 * How many bytes src[x..) and src[y..) have in common, at most max
 * (x + max, y + max <= n): a word at a time, the first difference found
 * by its lowest set bit.  src - skew is 8-byte aligned, skew being the
 * chunk's offset in its buffer modulo 8 (device buffers are aligned).
 */
DEVICE_FN u32 defl_common(GLOBAL const u8 *src, u64 skew, u64 n, u64 x,
			  u64 y, u32 max)
{
	GLOBAL const u8 *base = src - skew;
	u32 l = 0;

	while (l + 8 <= max) {
		u64 d = load_le64(base, skew + x + l, skew + n) ^
			load_le64(base, skew + y + l, skew + n);

		WORK(1);
		if (d != 0)
			return l + CTZ64(d) / 8;
		l += 8;
	}
	while (l < max && src[x + l] == src[y + l]) {
		WORK(1);
		l++;
	}
	return l;
}

DEVICE_FN u32 defl_min_u32(u64 a, u64 b)
{
	return (u32)(a < b ? a : b);
}

/* The longest match a position of the chunk may take: up to 258 bytes,
 * ending inside its own segment. */
DEVICE_FN u32 defl_maxlen(u64 n, u64 p)
{
	u64 e = (p / SP_DEFL_SEG + 1) * SP_DEFL_SEG;

	return defl_min_u32(258, (e < n ? e : n) - p);
}

/*
 * The match at p: its candidates along the chain, latest first, up to
 * `depth` of them and 32 KiB back, the longest kept (the nearest on ties),
 * each compared up to `cap` bytes.  Returns 0 or length << 16 | distance.
 * A 3-byte match only pays when its distance is short.
 */
DEVICE_FN u32 defl_match(GLOBAL const u8 *src, u64 skew, u64 n,
			 GLOBAL const u16 *prev, u64 p, u32 depth, u32 cap)
{
	u32 best = 0, dist = 0, tries = depth;
	u64 c = p;

	while (cap >= 3 && tries-- > 0) {
		u32 d = prev[c], l;

		WORK(1);
		if (d == 0)
			break;
		c -= d;
		if (p - c > 32768)
			break;
		if (src[c + best] != src[p + best])
			continue;
		l = defl_common(src, skew, n, p, c, cap);
		if (l > best) {
			best = l;
			dist = (u32)(p - c);
			if (l >= cap)
				break;
		}
	}
	if (best < 3 || (best == 3 && dist > 4096))
		return 0;
	return best << 16 | dist;
}

/* What a position's match is compared to: the level's nice length, or
 * less where its segment ends. */
DEVICE_FN u32 defl_cap(u64 n, u64 p, struct defl_effort ef)
{
	u32 maxlen = defl_maxlen(n, p);

	return maxlen < ef.nice ? maxlen : ef.nice;
}

/*
 * Phase 2 at every position compares up to SP_DEFL_SHORT bytes only: a
 * match that reaches them (when the level would compare further) is
 * marked DEFL_LONG, and searched again in full only where the parse
 * meets it (defl_resolve).  Long runs of repeats then cost the group a
 * few words per byte, not a whole match per byte.
 */
#define SP_DEFL_SHORT 16u
#define DEFL_LONG 0xFFFFFFFFu

DEVICE_FN u32 defl_match_short(GLOBAL const u8 *src, u64 skew, u64 n,
			       GLOBAL const u16 *prev, u64 p,
			       struct defl_effort ef)
{
	u32 full = defl_cap(n, p, ef);
	u32 cap = full < SP_DEFL_SHORT ? full : SP_DEFL_SHORT;
	u32 m = defl_match(src, skew, n, prev, p, ef.depth, cap);

	return (m >> 16) == cap && cap < full ? DEFL_LONG : m;
}

/* The match at p as the level defines it, a long one searched again in
 * full and stored back. */
DEVICE_FN u32 defl_resolve(GLOBAL const u8 *src, u64 skew, u64 n,
			   GLOBAL u32 *match, GLOBAL const u16 *prev, u64 p,
			   struct defl_effort ef)
{
	u32 m = match[p];

	if (m == DEFL_LONG) {
		m = defl_match(src, skew, n, prev, p, ef.depth,
			       defl_cap(n, p, ef));
		match[p] = m;
	}
	return m;
}

/* A match taken at p of `len` (the nice length it was compared to) and
 * distance d, compared on to its whole length. */
DEVICE_FN u32 defl_extend(GLOBAL const u8 *src, u64 skew, u64 n, u64 p,
			  u32 d, u32 len)
{
	u32 maxlen = defl_maxlen(n, p);

	if (len >= maxlen)
		return len;
	return len + defl_common(src, skew, n, p + len, p + len - d,
				 maxlen - len);
}

/* ------------------------------------------------------------- parse */

/*
 * Phase 3 for segment [a, e): the greedy or lazy parse over the matches
 * of phase 2, one step per symbol, counted into the segment's histogram.
 * Its decisions are written over the matches: match[p] is the match taken
 * at p, or 0 for a literal, at each position the parse visits, so that
 * packing (defl_pack_segment) walks the same symbols again.
 */
DEVICE_FN void defl_parse(GLOBAL const u8 *src, u64 skew, u64 n, u64 a,
			  u64 e, GLOBAL u32 *match, GLOBAL const u16 *prev,
			  struct defl_effort ef,
			  GLOBAL u16 *hist, LOCAL const u8 *len_code,
			  LOCAL const u8 *dist_lo, LOCAL const u8 *dist_hi)
{
	u64 p = a;

	WORK(SP_DEFL_NSYM);
	for (u32 s = 0; s < SP_DEFL_NSYM; s++)
		hist[s] = 0;
	while (p < e) {
		u32 m = defl_resolve(src, skew, n, match, prev, p, ef);
		u32 len = m >> 16;

		/* Lazy: a longer match at the next byte wins. */
		while (len != 0 && ef.lazy && len < ef.nice && p + 1 < e &&
		       (defl_resolve(src, skew, n, match, prev, p + 1, ef) >>
			16) > len) {
			WORK(1);
			match[p] = 0;
			hist[src[p]]++;
			p++;
			m = match[p];
			len = m >> 16;
		}
		WORK(1);
		if (len != 0) {
			u32 d = m & 0xFFFFu;

			if (len == ef.nice)
				len = defl_extend(src, skew, n, p, d, len);
			match[p] = len << 16 | d;
			hist[257 + len_code[len - 3]]++;
			hist[SP_DEFL_DIST0 +
			     defl_dist_code(dist_lo, dist_hi, d - 1)]++;
			p += len;
		} else {
			match[p] = 0;
			hist[src[p]]++;
			p++;
		}
	}
}

/* ----------------------------------------------------------- Huffman */

/*
 * A code's symbols in the order Huffman's construction takes them, by
 * (frequency, symbol): keys freq << 9 | symbol in the low 32 bits (counts
 * stay below 2^23), and above them DEFL_KEY_DIST for a distance symbol,
 * so that one sort orders a block's literal/length symbols and, after
 * them, its distance symbols; an unused symbol is DEFL_KEY_NONE and
 * sorts last.  Phase 4 sorts every block's keys at once, a bottom-up
 * merge sort whose merges the whole group shares (defl_keys_merge), in
 * two buffers per slot (defl_keys).
 */
#define DEFL_KEY_DIST ((u64)1 << 40)
#define DEFL_KEY_NONE (~(u64)0)

/* Merge levels of the sort: runs of 1, 2, ... 256 keys of SP_DEFL_NKEY. */
#define DEFL_KEY_LEVELS 9

/*
 * Lengths of a complete prefix code of at most `limit` bits for the m
 * symbols of key[0..m), sorted, out of nsym; 0 for the others, and at
 * least two symbols get a code, as decoders expect.  Huffman's
 * construction, then lengths beyond the limit are cut and the Kraft sum
 * restored by lengthening the rarest codes that are still short enough,
 * and any slack given back to the most frequent symbols.  One work-item;
 * work holds 3 * nsym entries.
 */
DEVICE_FN void defl_huff_build(GLOBAL const u64 *key, u32 m, u32 nsym,
			       u32 limit, GLOBAL u8 *len, GLOBAL u32 *work)
{
	GLOBAL u32 *lpar = work, *node = work + nsym, *npar = work + 2 * nsym;
	const u32 cap = (u32)1 << limit;
	u32 li = 0, ni = 0, kraft = 0;

	WORK(nsym);
	for (u32 s = 0; s < nsym; s++)
		len[s] = 0;
	if (m < 2) {
		u32 s = m != 0 ? (u32)key[0] & 511 : 0;

		len[s] = 1;
		len[s == 0 ? 1 : 0] = 1;
		return;
	}
	/* Two queues: leaves in key order, internal nodes in creation
	 * order (their weights never decrease). */
	for (u32 t = 0; t + 1 < m; t++) {
		u32 w = 0;

		WORK(1);
		for (int pick = 0; pick < 2; pick++) {
			if (li < m && (ni >= t ||
				       ((u32)key[li] >> 9) <= node[ni])) {
				w += (u32)key[li] >> 9;
				lpar[li++] = t;
			} else {
				w += node[ni];
				npar[ni++] = t;
			}
		}
		node[t] = w;
	}
	/* Depths, root (the last node made) first. */
	node[m - 2] = 0;
	WORK(2 * m);
	for (u32 t = m - 2; t-- > 0;)
		node[t] = node[npar[t]] + 1;
	for (u32 i = 0; i < m; i++) {
		u32 d = node[lpar[i]] + 1;

		lpar[i] = d < limit ? d : limit;
		kraft += cap >> lpar[i];
	}
	while (kraft > cap) {
		u32 bi = 0, bl = 0;

		WORK(m);
		for (u32 i = 0; i < m; i++)
			if (lpar[i] < limit && lpar[i] > bl) {
				bl = lpar[i];
				bi = i;
			}
		lpar[bi]++;
		kraft -= cap >> (bl + 1);
	}
	while (kraft < cap) {
		u32 bi = m;

		for (u32 i = m; i-- > 0;) {
			WORK(1);
			if (lpar[i] > 1 && (cap >> lpar[i]) <= cap - kraft) {
				bi = i;
				break;
			}
		}
		if (bi == m)
			break;
		kraft += cap >> lpar[bi];
		lpar[bi]--;
	}
	WORK(m);
	for (u32 i = 0; i < m; i++)
		len[(u32)key[i] & 511] = (u8)lpar[i];
}

/*
 * The code of a small alphabet, freq[0..nsym), by one work-item: its keys
 * sorted by insertion into key[0..nsym), then built.  For the 19 symbols
 * of the code-length code (and the tests of the limit).
 */
DEVICE_FN void defl_huff_lengths(GLOBAL const u32 *freq, u32 nsym, u32 limit,
				 GLOBAL u8 *len, GLOBAL u64 *key,
				 GLOBAL u32 *work)
{
	u32 m = 0;

	for (u32 s = 0; s < nsym; s++) {
		u64 k = (u64)freq[s] << 9 | s;
		u32 i = m;

		WORK(1);
		if (freq[s] == 0)
			continue;
		while (i > 0 && key[i - 1] > k) {
			WORK(1);
			key[i] = key[i - 1];
			i--;
		}
		key[i] = k;
		m++;
	}
	defl_huff_build(key, m, nsym, limit, len, work);
}

DEVICE_FN u32 defl_reverse(u32 v, u32 nb)
{
	u32 r = 0;

	WORK(nb);
	for (u32 i = 0; i < nb; i++) {
		r = (r << 1) | (v & 1);
		v >>= 1;
	}
	return r;
}

/*
 * Sixteen 16-bit counters in four words, indexed by selects: an indexed
 * private array would live on a GPU's stack (t/cuda-resources.sh).  No
 * counter here exceeds 1 << 15, so no carry crosses into the next.
 */
struct defl_c16 {
	u64 w0, w1, w2, w3;
};

DEVICE_FN u32 defl_c16_get(const struct defl_c16 *c, u32 i)
{
	u64 w = i < 4 ? c->w0 : i < 8 ? c->w1 : i < 12 ? c->w2 : c->w3;

	return (u32)(w >> (16 * (i & 3))) & 0xFFFFu;
}

DEVICE_FN void defl_c16_add(struct defl_c16 *c, u32 i, u32 v)
{
	u64 d = (u64)v << (16 * (i & 3));

	c->w0 += i < 4 ? d : 0;
	c->w1 += i >= 4 && i < 8 ? d : 0;
	c->w2 += i >= 8 && i < 12 ? d : 0;
	c->w3 += i >= 12 ? d : 0;
}

/* Canonical codes (RFC 1951 3.2.2), bit-reversed for LSB-first output. */
DEVICE_FN void defl_codes(GLOBAL const u8 *len, u32 nsym, GLOBAL u16 *code)
{
	struct defl_c16 count = { 0, 0, 0, 0 }, next = { 0, 0, 0, 0 };
	u32 c = 0;

	WORK(2 * nsym + 15);
	for (u32 s = 0; s < nsym; s++)
		if (len[s] != 0)
			defl_c16_add(&count, len[s], 1);
	for (u32 b = 1; b < 16; b++) {
		c = (c + defl_c16_get(&count, b - 1)) << 1;
		defl_c16_add(&next, b, c);
	}
	for (u32 s = 0; s < nsym; s++) {
		u32 l = len[s];

		if (l != 0) {
			code[s] = (u16)defl_reverse(defl_c16_get(&next, l), l);
			defl_c16_add(&next, l, 1);
		} else {
			code[s] = 0;
		}
	}
}

DEVICE_FN u32 defl_cl_at(GLOBAL const u8 *blen, u32 hlit, u32 i)
{
	return i < hlit ? blen[i] : blen[SP_DEFL_DIST0 + i - hlit];
}

/* The code-length sequence of a dynamic header, run-length coded with
 * symbols 16/17/18 (RFC 1951 3.2.7); entries are symbol | extra << 5. */
DEVICE_FN u32 defl_rle(GLOBAL const u8 *blen, u32 hlit, u32 hdist,
		       GLOBAL u16 *rle)
{
	u32 total = hlit + hdist, i = 0, k = 0;

	while (i < total) {
		u32 v = defl_cl_at(blen, hlit, i), run = 1;

		while (i + run < total && defl_cl_at(blen, hlit, i + run) == v)
			run++;
		WORK(run);
		if (v == 0) {
			while (run >= 11) {
				u32 r = run < 138 ? run : 138;

				rle[k++] = (u16)(18 | ((r - 11) << 5));
				i += r;
				run -= r;
			}
			if (run >= 3) {
				rle[k++] = (u16)(17 | ((run - 3) << 5));
				i += run;
				run = 0;
			}
		} else {
			rle[k++] = (u16)v;
			i++;
			run--;
			while (run >= 3) {
				u32 r = run < 6 ? run : 6;

				rle[k++] = (u16)(16 | ((r - 3) << 5));
				i += r;
				run -= r;
			}
		}
		for (; run > 0; run--, i++)
			rle[k++] = (u16)v;
	}
	return k;
}

DEVICE_FN u32 defl_clen_extra(u32 sym)
{
	return sym == 16 ? 2 : sym == 17 ? 3 : sym == 18 ? 7 : 0;
}

/* Bits of the symbols counted in hist (litlen, then distance at
 * SP_DEFL_DIST0) under lengths len, extra bits included. */
DEVICE_FN u64 defl_hist_bits(GLOBAL const u32 *hist32,
			     GLOBAL const u16 *hist16, GLOBAL const u8 *len,
			     int fixed)
{
	u64 bits = 0;

	WORK(286 + 30);
	for (u32 s = 0; s < 286; s++) {
		u64 f = hist32 ? hist32[s] : hist16[s];
		u32 l = fixed ? defl_fixed_len(s) : len[s];

		if (f != 0)
			bits += f * (l + (s > 256 ? defl_len_extra(s - 257) : 0));
	}
	for (u32 c = 0; c < 30; c++) {
		u32 s = SP_DEFL_DIST0 + c;
		u64 f = hist32 ? hist32[s] : hist16[s];
		u32 l = fixed ? 5 : len[s];

		if (f != 0)
			bits += f * (l + defl_dist_extra(c));
	}
	return bits;
}

/* ----------------------------------------------------------- packing */

struct defl_bits {
	GLOBAL u32 *out;
	u64 acc;
	u32 n;
};

DEVICE_FN void defl_put(struct defl_bits *w, u32 v, u32 nb)
{
	w->acc |= (u64)v << w->n;
	w->n += nb;
	if (w->n >= 32) {
		*w->out++ = (u32)w->acc;
		w->acc >>= 32;
		w->n -= 32;
	}
}

DEVICE_FN void defl_flush(struct defl_bits *w)
{
	if (w->n > 0)
		*w->out++ = (u32)w->acc;
}

/*
 * Pointers into one sp_codec_gzip group's scratch and the chunk's results
 * for a chunk of n bytes.  Each step of the chunk makes its own from
 * (scratch, res, n): a GPU then keeps no map of the whole scratch live
 * from one phase to the next (t/cuda-resources.sh).
 */
struct defl_ws {
	GLOBAL u32 *stage;
	GLOBAL u32 *match;               /* the results */
	GLOBAL u16 *shist;
	GLOBAL u64 *scrc, *sbits, *scan;
	GLOBAL u32 *bhist;
	GLOBAL u64 *keys;
	GLOBAL u8 *blen;
	GLOBAL u16 *bcode;
	GLOBAL u16 *brle;
	GLOBAL u64 *binfo;
	GLOBAL u32 *hstage;
	GLOBAL u32 *work;
	GLOBAL u64 *piece;
	u64 nseg, nblk;
};

DEVICE_FN struct defl_ws defl_ws_of(GLOBAL u8 *base, GLOBAL u8 *res, u64 n)
{
	struct defl_ws ws;

	ws.nseg = SP_DEFL_NSEG(n);
	ws.nblk = SP_DEFL_NBLK(n);
	ws.stage = (GLOBAL u32 *)base;
	ws.match = (GLOBAL u32 *)(res + SP_DEFL_O_MATCH(n));
	ws.shist = (GLOBAL u16 *)(res + SP_DEFL_O_SHIST(n));
	ws.scrc = (GLOBAL u64 *)(res + SP_DEFL_O_SEGV(n));
	ws.sbits = ws.scrc + ws.nseg;
	ws.scan = (GLOBAL u64 *)(base + SP_DEFL_O_SCAN(n));
	ws.bhist = (GLOBAL u32 *)(base + SP_DEFL_O_BHIST(n));
	ws.keys = (GLOBAL u64 *)(base + SP_DEFL_O_KEYS(n));
	ws.blen = base + SP_DEFL_O_BLEN(n);
	ws.bcode = (GLOBAL u16 *)(base + SP_DEFL_O_BCODE(n));
	ws.brle = (GLOBAL u16 *)(base + SP_DEFL_O_BRLE(n));
	ws.binfo = (GLOBAL u64 *)(base + SP_DEFL_O_BINFO(n));
	ws.hstage = (GLOBAL u32 *)(base + SP_DEFL_O_HSTAGE(n));
	ws.work = (GLOBAL u32 *)(base + SP_DEFL_O_WORK(n));
	ws.piece = (GLOBAL u64 *)(base + SP_DEFL_O_PIECE(n));
	return ws;
}

/* A slot's keys after `level` merge levels (buffer level & 1). */
DEVICE_FN GLOBAL u64 *defl_keys(const struct defl_ws *ws, u64 slot, u32 level)
{
	return ws->keys + (2 * slot + (level & 1)) * SP_DEFL_KEY_STRIDE;
}

/*
 * Phase 4, one slot: dynamic code lengths from its sorted keys, the
 * header, both costs.
 */
DEVICE_FN void defl_block_codes(const struct defl_ws *ws, u64 b)
{
	GLOBAL const u32 *hist = ws->bhist + b * SP_DEFL_NSYM;
	GLOBAL u64 *key = defl_keys(ws, b, DEFL_KEY_LEVELS);
	GLOBAL u8 *blen = ws->blen + b * SP_DEFL_BSYM;
	GLOBAL u16 *rle = ws->brle + b * SP_DEFL_NSYM;
	GLOBAL u64 *info = ws->binfo + b * SP_DEFL_INFO;
	GLOBAL u32 *work = ws->work + b * SP_DEFL_WORK;
	GLOBAL u32 *cfreq = work + 1200;
	u32 hlit = 286, hdist = 30, hclen = 19, nrle, nlit = 0, ndist = 0;
	u64 hdr;

	while (nlit < 286 && key[nlit] < DEFL_KEY_DIST)
		nlit++;
	while (ndist < 30 && key[nlit + ndist] != DEFL_KEY_NONE)
		ndist++;
	WORK(nlit + ndist);
	defl_huff_build(key, nlit, 286, 15, blen, work);
	defl_huff_build(key + nlit, ndist, 30, 15, blen + SP_DEFL_DIST0, work);
	blen[286] = blen[287] = 0;
	blen[SP_DEFL_DIST0 + 30] = blen[SP_DEFL_DIST0 + 31] = 0;
	while (hlit > 257 && blen[hlit - 1] == 0)
		hlit--;
	while (hdist > 1 && blen[SP_DEFL_DIST0 + hdist - 1] == 0)
		hdist--;
	nrle = defl_rle(blen, hlit, hdist, rle);
	WORK(19 + 2 * nrle + 316);
	for (u32 s = 0; s < 19; s++)
		cfreq[s] = 0;
	for (u32 i = 0; i < nrle; i++)
		cfreq[rle[i] & 31]++;
	/* The keys are spent: they hold the code-length code's now. */
	defl_huff_lengths(cfreq, 19, 7, blen + SP_DEFL_CLEN0, key, work);
	while (hclen > 4 && blen[SP_DEFL_CLEN0 + defl_clen_order[hclen - 1]] == 0)
		hclen--;
	hdr = 3 + 5 + 5 + 4 + 3 * (u64)hclen;
	for (u32 i = 0; i < nrle; i++) {
		u32 s = rle[i] & 31;

		hdr += blen[SP_DEFL_CLEN0 + s] + defl_clen_extra(s);
	}
	info[DEFL_I_DYNHDR] = hdr;
	info[DEFL_I_DYN] = hdr + defl_hist_bits(hist, 0, blen, 0);
	info[DEFL_I_FIXED] = 3 + defl_hist_bits(hist, 0, blen, 1);
	info[DEFL_I_HLIT] = hlit;
	info[DEFL_I_HDIST] = hdist;
	info[DEFL_I_HCLEN] = hclen;
	info[DEFL_I_NRLE] = nrle;
}

/* Bits of unit b stored, its alignment padding counted at its most. */
DEVICE_FN u64 defl_stored_most(u64 b, u64 n)
{
	u64 bytes = n - b * SP_DEFL_SEG * SP_DEFL_BLK_SEGS;

	if (bytes > SP_DEFL_SEG * SP_DEFL_BLK_SEGS)
		bytes = SP_DEFL_SEG * SP_DEFL_BLK_SEGS;
	return 3 + 7 + 32 + 8 * bytes;
}

/*
 * Phase 4 works in levels: level 0 builds every unit's own code (slot b
 * for unit b); level span = 2, 4, ... merges pairwise, as a binary tree:
 * the node of `span` units led by unit l, from its halves led by l and
 * l + span / 2, is a candidate when both halves are whole blocks, its
 * code built in slot nblk + l.  Item i of a level is slot i of level 0,
 * or the pair of l = i * span; *live says whether it builds a code.
 */
DEVICE_FN u64 defl_slot(const struct defl_ws *ws, u64 i, u64 span, int *live)
{
	const u64 l = i * span, r = l + span / 2;
	u64 rlen;

	if (span == 1) {
		*live = i < ws->nblk;
		return i;
	}
	rlen = r < ws->nblk && ws->nblk - r < span / 2 ? ws->nblk - r
						       : span / 2;
	*live = r < ws->nblk &&
		ws->binfo[l * SP_DEFL_INFO + DEFL_I_RUN] == span / 2 &&
		ws->binfo[r * SP_DEFL_INFO + DEFL_I_RUN] == rlen;
	return ws->nblk + l;
}

/* Items of a level. */
DEVICE_FN u64 defl_slots(const struct defl_ws *ws, u64 span)
{
	return (ws->nblk + span - 1) / span;
}

/*
 * Phase 4, one pair of the merge tree whose candidate code was built:
 * when one dynamic block over both halves costs fewer bits than the two
 * apart, l leads that block, and the candidate's code is copied to l.
 */
DEVICE_FN void defl_merge_pair(const struct defl_ws *ws, u64 l, u64 span)
{
	const u64 r = l + span / 2, c = ws->nblk + l;
	GLOBAL u64 *il = ws->binfo + l * SP_DEFL_INFO;
	GLOBAL u64 *ir = ws->binfo + r * SP_DEFL_INFO;
	GLOBAL u64 *ic = ws->binfo + c * SP_DEFL_INFO;
	GLOBAL u32 *hl = ws->bhist + l * SP_DEFL_NSYM;
	GLOBAL const u32 *hc = ws->bhist + c * SP_DEFL_NSYM;

	if (ic[DEFL_I_DYN] >= il[DEFL_I_COST] + ir[DEFL_I_COST])
		return;
	WORK(2 * SP_DEFL_NSYM + SP_DEFL_BSYM);
	for (u32 x = 0; x < SP_DEFL_NSYM; x++)
		hl[x] = hc[x];
	for (u32 x = 0; x < SP_DEFL_BSYM; x++)
		ws->blen[l * SP_DEFL_BSYM + x] = ws->blen[c * SP_DEFL_BSYM + x];
	for (u32 x = 0; x < SP_DEFL_NSYM; x++)
		ws->brle[l * SP_DEFL_NSYM + x] = ws->brle[c * SP_DEFL_NSYM + x];
	for (u32 x = DEFL_I_DYN; x <= DEFL_I_NRLE; x++)
		il[x] = ic[x];
	il[DEFL_I_RUN] += ir[DEFL_I_RUN];
	ir[DEFL_I_RUN] = 0;
	il[DEFL_I_COST] = ic[DEFL_I_DYN];
}

/* Phase 6, one block: the chosen code, and its header packed. */
DEVICE_FN void defl_block_header(const struct defl_ws *ws, u64 b, u64 n)
{
	GLOBAL u8 *blen = ws->blen + b * SP_DEFL_BSYM;
	GLOBAL u16 *code = ws->bcode + b * SP_DEFL_BSYM;
	GLOBAL const u16 *rle = ws->brle + b * SP_DEFL_NSYM;
	GLOBAL const u64 *info = ws->binfo + b * SP_DEFL_INFO;
	u64 start = info[DEFL_I_START], type = info[DEFL_I_TYPE];
	u64 bytes = n - b * SP_DEFL_SEG * SP_DEFL_BLK_SEGS;
	struct defl_bits w;

	if (info[DEFL_I_RUN] == 0) {
		/* Inside an earlier unit's block: no header, an empty piece
		 * whose one staging word the gather may OR in. */
		ws->hstage[b * SP_DEFL_HDR_WORDS] = 0;
		return;
	}
	if (bytes > SP_DEFL_SEG * SP_DEFL_BLK_SEGS)
		bytes = SP_DEFL_SEG * SP_DEFL_BLK_SEGS;
	if (type == 1) {
		WORK(SP_DEFL_CLEN0);
		for (u32 s = 0; s < SP_DEFL_CLEN0; s++)
			blen[s] = (u8)defl_fixed_len(s);
	}
	if (type != 0) {
		defl_codes(blen, SP_DEFL_DIST0, code);
		defl_codes(blen + SP_DEFL_DIST0, 32, code + SP_DEFL_DIST0);
	}
	w.out = ws->hstage + b * SP_DEFL_HDR_WORDS;
	w.acc = 0;
	w.n = (u32)(start & 31);
	defl_put(&w, (b + info[DEFL_I_RUN] == ws->nblk ? 1u : 0u) |
			     ((u32)type << 1), 3);
	if (type == 0) {
		defl_put(&w, 0, (u32)((8 - (start + 3) % 8) % 8));
		defl_put(&w, (u32)bytes, 16);
		defl_put(&w, (u32)bytes ^ 0xFFFFu, 16);
	} else if (type == 2) {
		u32 hclen = (u32)info[DEFL_I_HCLEN];
		u32 nrle = (u32)info[DEFL_I_NRLE];

		defl_codes(blen + SP_DEFL_CLEN0, 19, code + SP_DEFL_CLEN0);
		defl_put(&w, (u32)info[DEFL_I_HLIT] - 257, 5);
		defl_put(&w, (u32)info[DEFL_I_HDIST] - 1, 5);
		defl_put(&w, hclen - 4, 4);
		WORK(hclen + nrle);
		for (u32 i = 0; i < hclen; i++)
			defl_put(&w, blen[SP_DEFL_CLEN0 + defl_clen_order[i]],
				 3);
		for (u32 i = 0; i < nrle; i++) {
			u32 s = rle[i] & 31;

			defl_put(&w, code[SP_DEFL_CLEN0 + s],
				 blen[SP_DEFL_CLEN0 + s]);
			defl_put(&w, (u32)rle[i] >> 5, defl_clen_extra(s));
		}
	}
	defl_flush(&w);
}

/* Whether segment s is the last of its deflate block (end code after). */
DEVICE_FN int defl_seg_ends_block(const struct defl_ws *ws, u64 s)
{
	u64 u = s / SP_DEFL_BLK_SEGS + 1;

	if (s + 1 == ws->nseg)
		return 1;
	return (s + 1) % SP_DEFL_BLK_SEGS == 0 &&
	       ws->binfo[u * SP_DEFL_INFO + DEFL_I_RUN] != 0;
}

/* Phase 7, one segment: its symbols (or bytes) at its place. */
DEVICE_FN void defl_pack_segment(const struct defl_ws *ws, u64 s,
				 GLOBAL const u8 *src, u64 n,
				 LOCAL const u8 *len_code,
				 LOCAL const u8 *dist_lo,
				 LOCAL const u8 *dist_hi)
{
	u64 b = ws->binfo[s / SP_DEFL_BLK_SEGS * SP_DEFL_INFO + DEFL_I_LEAD];
	GLOBAL const u8 *len = ws->blen + b * SP_DEFL_BSYM;
	GLOBAL const u16 *code = ws->bcode + b * SP_DEFL_BSYM;
	u64 type = ws->binfo[b * SP_DEFL_INFO + DEFL_I_TYPE];
	u64 a = s * SP_DEFL_SEG, e = a + SP_DEFL_SEG;
	u64 start = ws->piece[s + s / SP_DEFL_BLK_SEGS + 1];
	struct defl_bits w;

	if (e > n)
		e = n;
	w.out = ws->stage + s * SP_DEFL_SEG_WORDS;
	w.acc = 0;
	w.n = (u32)(start & 31);
	if (type == 0) {
		WORK(e - a);
		for (u64 p = a; p < e; p++)
			defl_put(&w, src[p], 8);
		defl_flush(&w);
		return;
	}
	for (u64 p = a; p < e;) {
		u32 m = ws->match[p];

		WORK(1);
		if (m == 0) {
			defl_put(&w, code[src[p]], len[src[p]]);
			p++;
		} else {
			u32 l = (m >> 16) - 3, d = (m & 0xFFFF) - 1;
			u32 i = len_code[l], c = defl_dist_code(dist_lo, dist_hi, d);

			u32 ll = len[257 + i], dl = len[SP_DEFL_DIST0 + c];

			/* Each code with its extra bits in one put (at most
			 * 15 + 5 and 15 + 13 bits): fewer flush checks, less
			 * live state on a GPU (t/cuda-resources.sh). */
			defl_put(&w, code[257 + i] |
					     (l - defl_len_base(i)) << ll,
				 ll + defl_len_extra(i));
			defl_put(&w, code[SP_DEFL_DIST0 + c] |
					     (d - defl_dist_base(c)) << dl,
				 dl + defl_dist_extra(c));
			p += l + 3;
		}
	}
	if (defl_seg_ends_block(ws, s))
		defl_put(&w, code[256], len[256]);
	defl_flush(&w);
}

/* Piece k of the stream: block k / 9's header when k % 9 == 0, else
 * one of its segments; its staging words. */
DEVICE_FN GLOBAL const u32 *defl_piece_words(const struct defl_ws *ws, u64 k)
{
	u64 b = k / (SP_DEFL_BLK_SEGS + 1), r = k % (SP_DEFL_BLK_SEGS + 1);

	if (r == 0)
		return ws->hstage + b * SP_DEFL_HDR_WORDS;
	return ws->stage + (b * SP_DEFL_BLK_SEGS + r - 1) * SP_DEFL_SEG_WORDS;
}

/* ------------------------------------------------------------- chunk */

/*
 * The steps of one chunk, in order; the stages below run them with a
 * barrier after each, and none holds a barrier itself.  Every step
 * spreads its work over the group with a stride of the local size.
 */

/* The member's header (RFC 1952 2.3: no flags, no time stamp, OS
 * unknown), or the whole member of an empty chunk: one final fixed block
 * holding only its end code; the CRC and length of nothing are 0. */
DEVICE_FN void defl_member_head(GLOBAL u8 *out, u64 n, GLOBAL u64 *size)
{
	const u8 hdr[10] = { 0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255 };

	if (LOCAL_ID() != 0)
		return;
	for (int i = 0; i < 10; i++)
		out[i] = hdr[i];
	if (n == 0) {
		out[10] = 0x03;
		for (int i = 11; i < 20; i++)
			out[i] = 0;
		*size = 20;
	}
}

/* ------------------------------------------------------------- parts */

/*
 * Part k of a chunk of n bytes, as sp_gzip_units sees it: the bytes from
 * lo, the window of up to SP_DEFL_WINDOW bytes before the part (whole
 * segments, and 8-byte aligned like the chunk), then the part to its end.
 * Its steps take the chunk from lo as a chunk of its own, positions
 * counted from lo: its segments and their ends are the chunk's, and its
 * matches are compared up to the chunk's end.
 */
DEVICE_FN u64 defl_part_lo(u64 k)
{
	return k == 0 ? 0 : k * SP_DEFL_PART - SP_DEFL_WINDOW;
}

DEVICE_FN u64 defl_part_end(u64 n, u64 k)
{
	u64 e = (k + 1) * SP_DEFL_PART;

	return e < n ? e : n;
}

/* The positions from lo that have a hash (their four bytes in the chunk)
 * and lie before the part's end. */
DEVICE_FN u64 defl_part_np(u64 n, u64 k)
{
	u64 np = n >= 4 ? n - 3 : 0, e = defl_part_end(n, k);
	u64 lo = defl_part_lo(k);

	if (np > e)
		np = e;
	return np > lo ? np - lo : 0;
}

/*
 * Phase 1 for part k of the chunk at src: the chains of its window and
 * its positions, in the group's scratch, indexed from lo.  A chain at a
 * window position may stop short where the chunk's goes on before lo,
 * but only to positions more than 32 KiB before any of the part's, where
 * the match search stops anyway.
 */
DEVICE_FN void defl_chains_step(GLOBAL const u8 *src, u64 n, u64 k,
				GLOBAL u8 *scratch, LOCAL u64 *red)
{
	const u64 lo = defl_part_lo(k);
	GLOBAL u16 *hsh = (GLOBAL u16 *)scratch;
	GLOBAL u32 *tmp = (GLOBAL u32 *)(scratch + SP_DEFL_U_R1(n));
	GLOBAL u32 *srt = (GLOBAL u32 *)(scratch + SP_DEFL_U_R2(n));
	GLOBAL u64 *cnt = (GLOBAL u64 *)(scratch + SP_DEFL_U_CNT(n));

	if (LOCAL_SIZE() == 1) {
		defl_chains_serial(src + lo, defl_part_np(n, k),
				   defl_part_end(n, k) - lo, defl_hash_bits(n),
				   (GLOBAL u32 *)cnt, (GLOBAL u16 *)tmp);
		return;
	}
	defl_sort(src + lo, defl_part_np(n, k), defl_hash_bits(n), hsh, tmp,
		  srt, cnt, red);
	defl_link_step(defl_part_np(n, k), defl_part_end(n, k) - lo, hsh, srt,
		       (GLOBAL u16 *)tmp);
}

/*
 * Phase 2: the match at every position of part k.  A group of one
 * work-item leaves every position to be searched where the parse meets
 * it, as a serial encoder does: it would otherwise search the positions
 * inside matches too, with no other item to share the work.
 */
DEVICE_FN void defl_match_step(GLOBAL const u8 *src, u64 skew, u64 n, u64 k,
			       GLOBAL u8 *res, GLOBAL const u8 *scratch,
			       u64 level)
{
	const u64 lo = defl_part_lo(k), e = defl_part_end(n, k) - lo;
	const struct defl_effort ef = defl_effort_of(level);
	GLOBAL const u16 *prev =
		(GLOBAL const u16 *)(scratch + SP_DEFL_U_R1(n));
	GLOBAL u32 *match = (GLOBAL u32 *)(res + SP_DEFL_O_MATCH(n)) + lo;

	for (u64 p = k * SP_DEFL_PART - lo + LOCAL_ID(); p < e;
	     p += LOCAL_SIZE()) {
		WORK(LOCAL_SIZE() == 1);
		match[p] = LOCAL_SIZE() == 1 ?
				   DEFL_LONG :
				   defl_match_short(src + lo, skew, n - lo,
						    prev, p, ef);
	}
}

/* Phase 3: parse and CRC, one segment of part k per work-item. */
DEVICE_FN void defl_parse_step(GLOBAL const u8 *src, u64 skew, u64 n, u64 k,
			       GLOBAL u8 *res, GLOBAL const u8 *scratch,
			       u64 level, LOCAL const u32 *crc_tab,
			       LOCAL const u8 *len_code,
			       LOCAL const u8 *dist_lo, LOCAL const u8 *dist_hi)
{
	const u64 lo = defl_part_lo(k), end = defl_part_end(n, k);
	GLOBAL const u16 *prev =
		(GLOBAL const u16 *)(scratch + SP_DEFL_U_R1(n));
	GLOBAL u32 *match = (GLOBAL u32 *)(res + SP_DEFL_O_MATCH(n)) + lo;
	GLOBAL u16 *shist = (GLOBAL u16 *)(res + SP_DEFL_O_SHIST(n));
	GLOBAL u64 *scrc = (GLOBAL u64 *)(res + SP_DEFL_O_SEGV(n));

	for (u64 s = k * SP_DEFL_PART / SP_DEFL_SEG + LOCAL_ID();
	     s < SP_DEFL_NSEG(end); s += LOCAL_SIZE()) {
		u64 a = s * SP_DEFL_SEG, e = a + SP_DEFL_SEG;

		if (e > n)
			e = n;
		if (level != 0)
			defl_parse(src + lo, skew, n - lo, a - lo, e - lo,
				   match, prev, defl_effort_of(level),
				   shist + s * SP_DEFL_NSYM, len_code, dist_lo,
				   dist_hi);
		scrc[s] = crc32_bytes(crc_tab, src + a, e - a);
	}
}

/*
 * Phase 4, level span, step 1: each live slot's histogram: a unit's, the
 * sum of its segments' (level 0); a candidate's, the sum of its halves'.
 * The end-of-block code counts once.
 */
DEVICE_FN void defl_level_hist_step(GLOBAL u8 *scratch, GLOBAL u8 *res, u64 n,
				     u64 span)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);

	for (u64 x = LOCAL_ID(); x < defl_slots(&ws, span) * SP_DEFL_NSYM;
	     x += LOCAL_SIZE()) {
		u64 i = x / SP_DEFL_NSYM, sym = x % SP_DEFL_NSYM, slot;
		u64 s0 = i * SP_DEFL_BLK_SEGS, s1 = s0 + SP_DEFL_BLK_SEGS;
		u32 f = sym == 256;
		int live;

		slot = defl_slot(&ws, i, span, &live);
		WORK(1);
		if (!live || sym == 256) {
			if (live)
				ws.bhist[slot * SP_DEFL_NSYM + sym] = f;
			continue;
		}
		if (span > 1) {
			f = ws.bhist[i * span * SP_DEFL_NSYM + sym] +
			    ws.bhist[(i * span + span / 2) * SP_DEFL_NSYM + sym];
		} else {
			if (s1 > ws.nseg)
				s1 = ws.nseg;
			WORK(s1 - s0);
			for (u64 s = s0; s < s1; s++)
				f += ws.shist[s * SP_DEFL_NSYM + sym];
		}
		ws.bhist[slot * SP_DEFL_NSYM + sym] = f;
	}
}

/* Step 2: each live slot's keys (DEFL_KEY_DIST), unsorted, in the
 * first buffer. */
DEVICE_FN void defl_keys_step(GLOBAL u8 *scratch, GLOBAL u8 *res, u64 n,
			       u64 span)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);

	for (u64 x = LOCAL_ID(); x < defl_slots(&ws, span) * SP_DEFL_NKEY;
	     x += LOCAL_SIZE()) {
		u64 k = x % SP_DEFL_NKEY, key = DEFL_KEY_NONE;
		int live;
		u64 slot = defl_slot(&ws, x / SP_DEFL_NKEY, span, &live);
		GLOBAL const u32 *hist = ws.bhist + slot * SP_DEFL_NSYM;

		WORK(1);
		if (!live)
			continue;
		if (k < 286 && hist[k] != 0)
			key = (u64)hist[k] << 9 | k;
		else if (k >= 286 && hist[SP_DEFL_DIST0 + k - 286] != 0)
			key = DEFL_KEY_DIST |
			      (u64)hist[SP_DEFL_DIST0 + k - 286] << 9 | (k - 286);
		defl_keys(&ws, slot, 0)[k] = key;
	}
}

/*
 * Step 3, merge level `level` (runs of w = 2^level keys into runs of
 * 2w) of every live slot's keys, from buffer level & 1 to the other: each
 * merge one item's, all slots' merges spread over the group.
 */
DEVICE_FN void defl_keys_merge(GLOBAL u8 *scratch, GLOBAL u8 *res, u64 n,
			       u64 span, u32 level)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);
	const u32 w = 1u << level, per = (SP_DEFL_NKEY + 2 * w - 1) / (2 * w);

	for (u64 t = LOCAL_ID(); t < defl_slots(&ws, span) * per;
	     t += LOCAL_SIZE()) {
		int live;
		u64 slot = defl_slot(&ws, t / per, span, &live);
		GLOBAL const u64 *from = defl_keys(&ws, slot, level);
		GLOBAL u64 *to = defl_keys(&ws, slot, level + 1);
		u32 lo = (u32)(t % per) * 2 * w, i = lo, j, mid, hi;

		if (!live)
			continue;
		mid = lo + w < SP_DEFL_NKEY ? lo + w : SP_DEFL_NKEY;
		hi = lo + 2 * w < SP_DEFL_NKEY ? lo + 2 * w : SP_DEFL_NKEY;
		j = mid;
		WORK(hi - lo);
		for (u32 o = lo; o < hi; o++)
			to[o] = j >= hi || (i < mid && from[i] <= from[j]) ?
					from[i++] : from[j++];
	}
}

/*
 * Step 4, one work-item per live slot: its code from the sorted keys;
 * at level 0 each unit's cheapest form alone, at the others whether the
 * pair merges.
 */
DEVICE_FN void defl_level_codes_step(GLOBAL u8 *scratch, GLOBAL u8 *res,
				      u64 n, u64 span)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);

	for (u64 i = LOCAL_ID(); i < defl_slots(&ws, span); i += LOCAL_SIZE()) {
		int live;
		u64 slot = defl_slot(&ws, i, span, &live);
		GLOBAL u64 *info = ws.binfo + slot * SP_DEFL_INFO;

		WORK(1);
		if (!live)
			continue;
		defl_block_codes(&ws, slot);
		if (span > 1) {
			defl_merge_pair(&ws, i * span, span);
			continue;
		}
		info[DEFL_I_COST] = defl_stored_most(slot, n);
		if (info[DEFL_I_FIXED] < info[DEFL_I_COST])
			info[DEFL_I_COST] = info[DEFL_I_FIXED];
		if (info[DEFL_I_DYN] < info[DEFL_I_COST])
			info[DEFL_I_COST] = info[DEFL_I_DYN];
		info[DEFL_I_RUN] = 1;
	}
}

/* Level 0 of a chunk stored whole: every unit a block of its own. */
DEVICE_FN void defl_stored_units_step(GLOBAL u8 *scratch, GLOBAL u8 *res,
				       u64 n)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);

	for (u64 b = LOCAL_ID(); b < ws.nblk; b += LOCAL_SIZE()) {
		WORK(1);
		ws.binfo[b * SP_DEFL_INFO + DEFL_I_RUN] = 1;
	}
}

/* Phase 5: one level of the CRC tree: the CRC of segments l.. joins that
 * of the `span` segments from r = l + span. */
DEVICE_FN void defl_crc_step(GLOBAL u8 *scratch, GLOBAL u8 *res, u64 n,
			     u64 span, LOCAL const u32 *crc_pow)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);

	for (u64 i = LOCAL_ID(); (2 * i + 1) * span < ws.nseg;
	     i += LOCAL_SIZE()) {
		u64 l = 2 * i * span, r = l + span;
		u64 len = n - r * SP_DEFL_SEG;

		if (len > span * SP_DEFL_SEG)
			len = span * SP_DEFL_SEG;
		ws.scrc[l] = crc32_join((u32)ws.scrc[l], (u32)ws.scrc[r],
					crc32_shift(crc_pow, len));
	}
}

/*
 * Phase 5, one work-item: block types and places.  Each block's stored
 * cost depends on where it starts, so this walk is serial, over blocks
 * (one per 32 KiB): O(n / 32768) steps.
 */
DEVICE_FN void defl_place(GLOBAL u8 *scratch, GLOBAL u8 *res, u64 n,
			  u64 level)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);
	const u64 blk_bytes = (u64)SP_DEFL_SEG * SP_DEFL_BLK_SEGS;
	u64 bit = 0, lead = 0;

	for (u64 b = 0; b < ws.nblk; b++) {
		GLOBAL u64 *info = ws.binfo + b * SP_DEFL_INFO;
		u64 bytes = n - b * blk_bytes;
		u64 pad = (8 - (bit + 3) % 8) % 8, type = 0, cost, hdr;

		WORK(1);
		if (info[DEFL_I_RUN] == 0) {
			/* Inside the block `lead` began. */
			info[DEFL_I_TYPE] = 2;
			info[DEFL_I_START] = bit;
			info[DEFL_I_HDR] = 0;
			info[DEFL_I_LEAD] = lead;
			continue;
		}
		lead = b;
		info[DEFL_I_LEAD] = b;
		if (bytes > blk_bytes)
			bytes = blk_bytes;
		cost = 3 + pad + 32 + 8 * bytes;
		hdr = 3 + pad + 32;
		if (info[DEFL_I_RUN] > 1) {
			/* A merged block is dynamic. */
			cost = info[DEFL_I_DYN];
			type = 2;
			hdr = info[DEFL_I_DYNHDR];
		} else if (level != 0) {
			u64 best = info[DEFL_I_DYN], bt = 2;
			u64 bh = info[DEFL_I_DYNHDR];

			if (info[DEFL_I_FIXED] <= best) {
				best = info[DEFL_I_FIXED];
				bt = 1;
				bh = 3;
			}
			if (best <= cost) {
				cost = best;
				type = bt;
				hdr = bh;
			}
		}
		info[DEFL_I_TYPE] = type;
		info[DEFL_I_START] = bit;
		info[DEFL_I_HDR] = hdr;
		bit += cost;
	}
	ws.binfo[DEFL_I_TOTAL] = bit;
	ws.binfo[DEFL_I_CRC] = ws.scrc[0];
}

/* Phase 6: each block's codes and packed header. */
DEVICE_FN void defl_headers_step(GLOBAL u8 *scratch, GLOBAL u8 *res, u64 n)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);

	for (u64 b = LOCAL_ID(); b < ws.nblk; b += LOCAL_SIZE())
		defl_block_header(&ws, b, n);
}

/* Phase 6: each segment's bits under its block's code. */
DEVICE_FN void defl_seg_bits_step(GLOBAL u8 *scratch, GLOBAL u8 *res, u64 n)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);

	for (u64 s = LOCAL_ID(); s < ws.nseg; s += LOCAL_SIZE()) {
		u64 b = ws.binfo[s / SP_DEFL_BLK_SEGS * SP_DEFL_INFO +
				 DEFL_I_LEAD], bits;
		u64 type = ws.binfo[b * SP_DEFL_INFO + DEFL_I_TYPE];
		u64 len = n - s * SP_DEFL_SEG;

		if (len > SP_DEFL_SEG)
			len = SP_DEFL_SEG;
		if (type == 0) {
			bits = 8 * len;
		} else {
			GLOBAL const u8 *bl = ws.blen + b * SP_DEFL_BSYM;

			bits = defl_hist_bits(0, ws.shist + s * SP_DEFL_NSYM, bl,
					      0);
			if (defl_seg_ends_block(&ws, s))
				bits += bl[256];
		}
		ws.sbits[s] = bits;
	}
}

/* Phase 6: where each piece (a block's header, a segment) starts. */
DEVICE_FN void defl_pieces_step(GLOBAL u8 *scratch, GLOBAL u8 *res, u64 n)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);
	const u64 npieces = ws.nblk + ws.nseg;

	for (u64 k = LOCAL_ID(); k < npieces; k += LOCAL_SIZE()) {
		u64 b = k / (SP_DEFL_BLK_SEGS + 1), r = k % (SP_DEFL_BLK_SEGS + 1);
		u64 lead = ws.binfo[b * SP_DEFL_INFO + DEFL_I_LEAD];
		GLOBAL const u64 *info = ws.binfo + lead * SP_DEFL_INFO;
		u64 at = info[DEFL_I_START];

		WORK(1);
		/* A segment, or the empty header of a unit inside a merged
		 * block, sits after its block's header and the segments
		 * before it in the block. */
		if (r != 0 || lead != b) {
			u64 s = b * SP_DEFL_BLK_SEGS + (r != 0 ? r - 1 : 0);

			at += info[DEFL_I_HDR] + ws.scan[s] -
			      ws.scan[lead * SP_DEFL_BLK_SEGS];
		}
		ws.piece[k] = at;
	}
	if (LOCAL_ID() == 0)
		ws.piece[npieces] = ws.binfo[DEFL_I_TOTAL];
}

/* Phase 7: every segment's bits into its staging words. */
DEVICE_FN void defl_pack_step(GLOBAL const u8 *src, u64 n,
			      GLOBAL u8 *scratch, GLOBAL u8 *res,
			      LOCAL const u8 *len_code,
			      LOCAL const u8 *dist_lo, LOCAL const u8 *dist_hi)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);

	for (u64 s = LOCAL_ID(); s < ws.nseg; s += LOCAL_SIZE())
		defl_pack_segment(&ws, s, src, n, len_code, dist_lo, dist_hi);
}

/* Phase 7: every 32-bit word of the deflate stream, OR-ed from the
 * pieces that overlap it, then the trailer. */
DEVICE_FN void defl_gather_step(u64 n, GLOBAL u8 *scratch, GLOBAL u8 *res,
				GLOBAL u8 *out, GLOBAL u64 *size)
{
	const struct defl_ws ws = defl_ws_of(scratch, res, n);
	const u64 npieces = ws.nblk + ws.nseg;
	const u64 total = ws.binfo[DEFL_I_TOTAL];
	const u64 nbytes = (total + 7) / 8, nwords = (total + 31) / 32;

	for (u64 wi = LOCAL_ID(), lo = 0; wi < nwords; wi += LOCAL_SIZE()) {
		u64 hi = npieces, bit = wi * 32, step = 0;
		u32 word = 0;

		/* lo: the last piece starting at or before the word.  Words
		 * only move forward, so the last word's lo is a lower bound:
		 * a few steps from it, then a binary search if still short. */
		while (step < 8 && lo + 1 < npieces && ws.piece[lo + 1] <= bit) {
			lo++;
			step++;
		}
		WORK(1 + step);
		if (step < 8)
			hi = lo + 1;
		while (hi - lo > 1) {
			u64 mid = (lo + hi) / 2;

			WORK(1);
			if (ws.piece[mid] <= bit)
				lo = mid;
			else
				hi = mid;
		}
		for (u64 k = lo; k < npieces && ws.piece[k] < bit + 32; k++) {
			WORK(1);
			word |= defl_piece_words(&ws, k)[wi - ws.piece[k] / 32];
		}
		for (u64 i = 0; i < 4 && wi * 4 + i < nbytes; i++)
			out[10 + wi * 4 + i] = (u8)(word >> (8 * i));
	}
	if (LOCAL_ID() == 0) {
		u32 crc = (u32)ws.binfo[DEFL_I_CRC], isize = (u32)n;

		for (int i = 0; i < 4; i++) {
			out[10 + nbytes + i] = (u8)(crc >> (8 * i));
			out[14 + nbytes + i] = (u8)(isize >> (8 * i));
		}
		*size = 18 + nbytes;
	}
}

/*
 * The stages of a part and of a chunk.  A stage is a run of steps, each
 * step ending at a barrier met by every item of the group; a stage is
 * entered by all items and leaves them all past its last barrier.  Each
 * is called once, from defl_part or defl_chunk, so the compilers inline
 * it (PoCL must: it mishandles a barrier in a function it does not
 * inline).  Each step is given the chunk's size as read from local memory
 * (cn[0]) after the barrier before it: with the size a GPU compiler could
 * prove constant, it would compute the scratch map once and keep all of
 * it live through every step, spilling (doc/design.md §13.2,
 * t/cuda-resources.sh).
 */

/* Phases 1 and 2 of part k: the hash chains, then every position's
 * match. */
DEVICE_FN void defl_find_matches(GLOBAL const u8 *src, u64 skew,
				 LOCAL const u64 *cn, u64 k, GLOBAL u8 *res,
				 GLOBAL u8 *scratch, u64 level, LOCAL u64 *red)
{
	PHASE("chains");
	defl_chains_step(src, cn[0], k, scratch, red);
	BARRIER();
	PHASE("match");
	defl_match_step(src, skew, cn[0], k, res, scratch, level);
	BARRIER();
}

/*
 * Phase 4: every unit's code, then, level by level of the merge tree,
 * each candidate's: its histogram, its keys, their sort (a barrier per
 * merge level) and its code and cost.  Level 0 stores every unit.
 */
DEVICE_FN void defl_choose_blocks(LOCAL const u64 *cn, GLOBAL u8 *scratch,
				  GLOBAL u8 *res, u64 level)
{
	const u64 nblk = SP_DEFL_NBLK(cn[0]);

	if (level == 0) {
		PHASE("unit-codes");
		defl_stored_units_step(scratch, res, cn[0]);
		BARRIER();
		return;
	}
	for (u64 span = 1; span == 1 || (span <= SP_DEFL_MERGE_MAX &&
					 span / 2 < nblk);
	     span *= 2) {
		PHASE(span == 1 ? "unit-hist" : "merge-hist");
		defl_level_hist_step(scratch, res, cn[0], span);
		BARRIER();
		defl_keys_step(scratch, res, cn[0], span);
		BARRIER();
		PHASE(span == 1 ? "unit-sort" : "merge-sort");
		for (u32 lv = 0; lv < DEFL_KEY_LEVELS; lv++) {
			defl_keys_merge(scratch, res, cn[0], span, lv);
			BARRIER();
		}
		PHASE(span == 1 ? "unit-codes" : "merge");
		defl_level_codes_step(scratch, res, cn[0], span);
		BARRIER();
	}
}

/* Phase 5: the chunk's CRC-32 from the segments' (a tree of joins), then
 * each block's type and first bit, by one item. */
DEVICE_FN void defl_place_blocks(LOCAL const u64 *cn, GLOBAL u8 *scratch,
				 GLOBAL u8 *res, u64 level,
				 LOCAL const u32 *crc_pow)
{
	const u64 nseg = SP_DEFL_NSEG(cn[0]);

	PHASE("crc");
	for (u64 span = 1; span < nseg; span *= 2) {
		defl_crc_step(scratch, res, cn[0], span, crc_pow);
		BARRIER();
	}
	PHASE("place");
	if (LOCAL_ID() == 0)
		defl_place(scratch, res, cn[0], level);
	BARRIER();
}

/* Phase 6: the blocks' headers and where every piece of the stream (a
 * header, a segment's symbols) starts, from a scan of the segments'
 * bits. */
DEVICE_FN void defl_place_pieces(LOCAL const u64 *cn, GLOBAL u8 *scratch,
				 GLOBAL u8 *res, LOCAL u64 *red)
{
	PHASE("headers");
	defl_headers_step(scratch, res, cn[0]);
	BARRIER();
	PHASE("seg-bits");
	defl_seg_bits_step(scratch, res, cn[0]);
	BARRIER();
	PHASE("seg-scan");
	{
		const struct defl_ws ws = defl_ws_of(scratch, res, cn[0]);

		wg_scan_array_u64(ws.sbits, ws.scan, ws.nseg, red);
	}
	BARRIER();
	PHASE("pieces");
	defl_pieces_step(scratch, res, cn[0]);
	BARRIER();
}

/* Phase 7: the pieces packed, then gathered into the member's words. */
DEVICE_FN void defl_write_member(GLOBAL const u8 *src, LOCAL const u64 *cn,
				 GLOBAL u8 *scratch, GLOBAL u8 *res,
				 GLOBAL u8 *out, GLOBAL u64 *size,
				 LOCAL const u8 *len_code,
				 LOCAL const u8 *dist_lo,
				 LOCAL const u8 *dist_hi)
{
	PHASE("pack");
	defl_pack_step(src, cn[0], scratch, res, len_code, dist_lo, dist_hi);
	BARRIER();
	PHASE("gather");
	defl_gather_step(cn[0], scratch, res, out, size);
	BARRIER();
}

/*
 * Part k of the chunk of cn[0] bytes at src, at offset `skew` modulo 8 of
 * an aligned buffer: phases 1 to 3 of its positions and segments, into
 * the chunk's results res.  All items of the group.
 */
DEVICE_FN void defl_part(GLOBAL const u8 *src, u64 skew, LOCAL const u64 *cn,
			 u64 k, GLOBAL u8 *res, GLOBAL u8 *scratch, u64 level,
			 LOCAL const u32 *crc_tab, LOCAL const u8 *len_code,
			 LOCAL const u8 *dist_lo, LOCAL const u8 *dist_hi,
			 LOCAL u64 *red)
{
	if (level != 0)
		defl_find_matches(src, skew, cn, k, res, scratch, level, red);
	PHASE("parse");
	defl_parse_step(src, skew, cn[0], k, res, scratch, level, crc_tab,
			len_code, dist_lo, dist_hi);
	/* The next part's chains overwrite those the parse read. */
	BARRIER();
}

/*
 * One chunk of cn[0] bytes at src, its parts done (res); the member to
 * out, its size to *size.  All items of the group.
 */
DEVICE_FN void defl_chunk(GLOBAL const u8 *src, LOCAL const u64 *cn,
			  GLOBAL u8 *out, GLOBAL u64 *size, GLOBAL u8 *res,
			  GLOBAL u8 *scratch, u64 level,
			  LOCAL const u32 *crc_pow, LOCAL const u8 *len_code,
			  LOCAL const u8 *dist_lo, LOCAL const u8 *dist_hi,
			  LOCAL u64 *red)
{
	PHASE("head");
	defl_member_head(out, cn[0], size);
	if (cn[0] == 0) {
		BARRIER();
		return;
	}
	defl_choose_blocks(cn, scratch, res, level);
	defl_place_blocks(cn, scratch, res, level, crc_pow);
	defl_place_pieces(cn, scratch, res, red);
	defl_write_member(src, cn, scratch, res, out, size, len_code, dist_lo,
			  dist_hi);
}

/*
 * The gzip codec's first kernel over n chunks of chunk_bytes in `pool`
 * (8-byte aligned, as device buffers are): part u % SP_DEFL_NPART of chunk
 * u / SP_DEFL_NPART is unit u, the groups striding over the units; chunk
 * j's results go to res + j * SP_DEFL_RES_BYTES(chunk_bytes).  scratch
 * holds SP_DEFL_USCRATCH_BYTES(chunk_bytes) per work-group launched.
 */
SP_ENCODER_ENTRY(sp_gzip_units)
{
	LOCAL_ARRAY(u32, crc_tab, SP_CRC32_TABLE);
	LOCAL_ARRAY(u8, len_code, 256);
	LOCAL_ARRAY(u8, dist_lo, 256);
	LOCAL_ARRAY(u8, dist_hi, 256);
	LOCAL_ARRAY(u64, red, SP_WG_MAX);
	LOCAL_ARRAY(u64, cn, 1);
	GLOBAL u8 *mine = scratch + GROUP_ID() *
				    (u64)SP_DEFL_USCRATCH_BYTES(chunk_bytes);
	const u64 npart = SP_DEFL_NPART(chunk_bytes);

	PHASE("setup");
	if (LOCAL_ID() == 0)
		cn[0] = chunk_bytes;
	crc32_table_build(crc_tab);
	defl_tables_build(len_code, dist_lo, dist_hi);
	for (u64 u = GROUP_ID(); u < n * npart; u += NUM_GROUPS()) {
		u64 j = u / npart;

		UNIT();
		defl_part(pool + j * chunk_bytes, (j * chunk_bytes) & 7, cn,
			  u % npart,
			  res + j * (u64)SP_DEFL_RES_BYTES(chunk_bytes), mine,
			  level, crc_tab, len_code, dist_lo, dist_hi, red);
	}
}

/*
 * The gzip codec's second kernel, after sp_gzip_units over the same
 * arguments: chunk j's member goes to slots + j * capacity (capacity >=
 * SP_DEFL_BOUND(chunk_bytes)), its length to sizes[j].  scratch holds
 * SP_DEFL_SCRATCH_BYTES(chunk_bytes) per work-group launched.
 * chunk_bytes <= SP_DEFL_MAX_CHUNK.
 */
SP_ENCODER_ENTRY(sp_codec_gzip)
{
	LOCAL_ARRAY(u32, crc_pow, SP_CRC32_POWS);
	LOCAL_ARRAY(u8, len_code, 256);
	LOCAL_ARRAY(u8, dist_lo, 256);
	LOCAL_ARRAY(u8, dist_hi, 256);
	LOCAL_ARRAY(u64, red, SP_WG_MAX);
	LOCAL_ARRAY(u64, cn, 1);
	GLOBAL u8 *mine = scratch + GROUP_ID() *
				    (u64)SP_DEFL_SCRATCH_BYTES(chunk_bytes);

	PHASE("setup");
	if (LOCAL_ID() == 0) {
		cn[0] = chunk_bytes;
		crc32_pow_build(crc_pow);
	}
	defl_tables_build(len_code, dist_lo, dist_hi);
	for (u64 j = GROUP_ID(); j < n; j += NUM_GROUPS()) {
		UNIT();
		defl_chunk(pool + j * chunk_bytes, cn, slots + j * capacity,
			   sizes + j,
			   res + j * (u64)SP_DEFL_RES_BYTES(chunk_bytes), mine,
			   level, crc_pow, len_code, dist_lo, dist_hi, red);
	}
}

#endif
