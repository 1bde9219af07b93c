/*
 * zstd_match.h - the zstd encoder's match finder over one block
 * (doc/design.md §13.1), in two phases that every work-item shares:
 *
 * 1. Candidates.  Positions are taken in fixed rounds of SPZ_ROUND: every
 *    position of a round looks its hash up in a table in local memory,
 *    then, after a barrier, every position of the round is inserted, the
 *    larger position winning a bucket way (an atomic max).  So a position
 *    sees the latest earlier position of each way as of the end of the
 *    previous round, whichever work-item looked or inserted what: the
 *    candidates are a function of the block and the level alone (§7.2).
 *    Nothing from before the block is inserted: every block starts from an
 *    empty table, so blocks are independent work units.  Per position the
 *    candidate whose first bytes match (the longest over a few words, then
 *    the nearest) is kept.
 * 2. Parse.  Each segment of SPZ_SUB bytes is parsed greedily by one
 *    work-item (one step lazy at higher levels), each match extended
 *    forward, up to SPZ_MATCH_MAX bytes and past the segment's end, and
 *    backward over the segment's pending literals, and kept only when
 *    cheaper than its literals.  A segment starts where the previous
 *    segment's last match ends, which only the previous segment's parse
 *    tells; so every segment first parses from its first byte, then those
 *    whose start moved parse again, until no start moves (zstd_block.h).
 *    The starts of segments 0..i are final after i rounds of this, so the
 *    result is one fixed point whatever the order of the work.
 *
 * Compares load words (little-endian, LE64) and count the equal bytes with
 * CTZ64 rather than looping over bytes.  The block is read from its staged
 * copy in scratch, 8-byte aligned and followed by SPZ_PAD zero bytes, so
 * a word load never leaves it.
 */
#ifndef SP_KERNEL_ZSTD_MATCH_H
#define SP_KERNEL_ZSTD_MATCH_H

/* Parameters that depend on the level alone.  The table has the same
 * SPZ_TAB_WORDS entries at every level, cut into buckets of 1 << wlog
 * ways; way w of a bucket holds the latest position of the rounds r
 * with r mod ways = w, so a bucket remembers that many rounds back. */
struct spz_params {
	u32 wlog;     /* log2 of the ways per bucket */
	u32 mm;       /* minimum match, also the bytes hashed */
	u32 lazy;     /* try the next position before taking a match */
};

DEVICE_FN struct spz_params spz_params_of(i64 level)
{
	struct spz_params p;

	p.wlog = 0;
	p.mm = 5;
	p.lazy = 0;
	if (level >= 3)
		p.wlog = 1;
	if (level >= 5) {
		p.wlog = 2;
		p.mm = 4;
		p.lazy = 1;
	}
	if (level >= 9)
		p.wlog = 3;
	return p;
}

/*
 * Costs in 1/16 bit.  A literal costs what its frequency in the block
 * predicts under Huffman coding; a sequence what the predefined tables
 * roughly charge (RFC 8878 default distributions: about 4 bits for the
 * literal-length code, 5 to 6 for the match-length code, 5 for the offset
 * code, plus the extra bits).  A match is kept only when it is cheaper
 * than the literals it replaces, so short matches in noisy data (16-bit
 * samples with noise in the low byte) do not cost more than they save.
 */
DEVICE_FN u32 spz_log2q4(u32 x)
{
	u32 hb = spz_highbit(x);

	return hb * 16 + (((x << 4) >> hb) & 15);
}

DEVICE_FN u32 spz_lit_cost(u32 freq, u32 total)
{
	u32 c;

	if (freq == 0)
		return 16 * 12;
	c = spz_log2q4(total) - spz_log2q4(freq);
	return c < 4 ? 4 : c;
}

DEVICE_FN u32 spz_seq_cost(u32 len, u32 off)
{
	u32 bits = 15 + spz_highbit(off + 3);

	if (len >= 35)
		bits += spz_highbit(len - 3) - 1;
	return 16 * bits;
}

/* The 8 bytes at in[p..], little-endian, from two aligned words. */
DEVICE_FN u64 spz_ld64(GLOBAL const u8 *in, u32 p)
{
	GLOBAL const w64 *w = (GLOBAL const w64 *)in + (p >> 3);
	u32 sh = (p & 7u) * 8u;
	u64 lo = LE64(w[0]);

	return sh == 0 ? lo : lo >> sh | LE64(w[1]) << (64u - sh);
}

/* Multiplicative hash of the low mm bytes of v into hbits bits (no
 * integer suffixes beyond u: OpenCL C gives `ull` literals a width of its
 * own). */
DEVICE_FN u32 spz_hash(u64 v, u32 mm, u32 hbits)
{
	if (mm < 8)
		v &= ((u64)1 << (8 * mm)) - 1;
	return (u32)((v * ((u64)0x9E3779B1u << 32 | 0x85EBCA87u)) >>
		     (64 - hbits));
}

/* Bytes equal at q and p (q < p), at most max, a word at a time. */
DEVICE_FN u32 spz_match_len(GLOBAL const u8 *in, u32 q, u32 p, u32 max)
{
	u32 n = 0;

	while (n < max) {
		u64 x = spz_ld64(in, q + n) ^ spz_ld64(in, p + n);

		if (x != 0) {
			n += CTZ64(x) >> 3;
			break;
		}
		n += 8;
	}
	return n < max ? n : max;
}

/* The bucket of position p: its first entry. */
DEVICE_FN u32 spz_bucket(GLOBAL const u8 *in, u32 p, struct spz_params prm)
{
	return spz_hash(spz_ld64(in, p), prm.mm, SPZ_TAB_LOG - prm.wlog)
	       << prm.wlog;
}

/* Positions just before p tried besides the table's. */
#define SPZ_NEAR 2u

/*
 * Round r's lookups: for each of this item's positions p of the round
 * (of a block of bl bytes), cand[p] = the best candidate + 1, or 0: the
 * longest match, told apart by up to one word of match (one way) or four
 * (several), the nearest on ties.
 */
DEVICE_FN void spz_round_lookup(GLOBAL const u8 *in, u32 bl, u32 r,
				struct spz_params prm, LOCAL const u32 *tab,
				GLOBAL u32 *cand)
{
	u32 ways = 1u << prm.wlog, cap = ways == 1 ? 8u : 32u;

	for (u32 i = (u32)LOCAL_ID(); i < SPZ_ROUND; i += (u32)LOCAL_SIZE()) {
		u32 p = r * SPZ_ROUND + i, best = 0, blen = 0, e;
		LOCAL const u32 *b;

		if (p + prm.mm > bl)
			break;
		e = bl - p < cap ? bl - p : cap;
		b = tab + spz_bucket(in, p, prm);
		for (u32 w = 0; w < ways; w++) {
			u32 c = b[w], l;

			if (c == 0)
				continue;
			l = spz_match_len(in, c - 1, p, e);
			if (l >= prm.mm && (l > blen || (l == blen && c > best))) {
				best = c;
				blen = l;
			}
		}
		/* The round hides its own earlier positions from the table:
		 * the nearest two stand in for them, which catches runs and
		 * repeated 16-bit samples. */
		for (u32 d = SPZ_NEAR; d >= 1; d--) {
			u32 l;

			if (d > p)
				continue;
			l = spz_match_len(in, p - d, p, e);
			if (l >= prm.mm && l >= blen) {
				best = p - d + 1;
				blen = l;
			}
		}
		cand[p] = best;
	}
}

/* Round r's insertions, after every lookup of the round. */
DEVICE_FN void spz_round_insert(GLOBAL const u8 *in, u32 bl, u32 r,
				struct spz_params prm, LOCAL u32 *tab)
{
	for (u32 i = (u32)LOCAL_ID(); i < SPZ_ROUND; i += (u32)LOCAL_SIZE()) {
		u32 p = r * SPZ_ROUND + i;

		if (p + prm.mm > bl)
			break;
		LOCAL_MAX(tab + (spz_bucket(in, p, prm) |
				 (r & ((1u << prm.wlog) - 1))),
			  p + 1);
	}
}

/* The first byte of segment k of a block of bl bytes, and its end. */
DEVICE_FN u32 spz_seg_start(u32 k, u32 bl)
{
	return k * SPZ_SUB < bl ? k * SPZ_SUB : bl;
}

DEVICE_FN u32 spz_seg_end(u32 k, u32 bl)
{
	return k * SPZ_SUB + SPZ_SUB < bl ? k * SPZ_SUB + SPZ_SUB : bl;
}

/* Cost of the literals in[p..p+len). */
DEVICE_FN u32 spz_lits_cost(GLOBAL const u8 *in, u32 p, u32 len,
			    LOCAL const u16 *lcost)
{
	u32 c = 0;

	for (u32 i = 0; i < len; i++)
		c += lcost[in[p + i]];
	return c;
}

/*
 * Parse segment k of a block of bl bytes from position t (its first byte,
 * or where the previous segment's last match ended): matches start inside
 * the segment and may run past its end, up to SPZ_MATCH_MAX bytes.  Its
 * sequences go to seq, two words each (literal length | match length <<
 * 16, offset); nseq[k], nlit[k] and last[k] receive their count, the
 * segment's literal bytes and the end of its last match (0 when it has
 * none), next[k + 1] where the next segment starts: that end when it
 * passes this segment's, else this segment's end.  lcost: literal costs
 * of the block (spz_lit_cost).
 */
DEVICE_FN void spz_parse(GLOBAL const u8 *in, u32 bl, u32 k, u32 t,
			 struct spz_params prm, LOCAL const u16 *lcost,
			 GLOBAL const u32 *cand, GLOBAL u32 *seq,
			 LOCAL u32 *nseq, LOCAL u32 *nlit, LOCAL u32 *last,
			 LOCAL u32 *next)
{
	u32 e = spz_seg_end(k, bl), p = t, lit = t, n = 0, lits = 0, end = 0;

	while (p < e && p + prm.mm <= bl) {
		u32 c = cand[p], len = 0, q = 0, max = bl - p;

		if (max > SPZ_MATCH_MAX)
			max = SPZ_MATCH_MAX;
		if (c != 0) {
			q = c - 1;
			len = spz_match_len(in, q, p, max);
		}
		if (len != 0 && prm.lazy && p + 1 < e &&
		    p + 1 + prm.mm <= bl && cand[p + 1] != 0) {
			/* One step of lazy evaluation: a longer match
			 * starting at the next byte wins. */
			u32 q1 = cand[p + 1] - 1;
			u32 l1 = spz_match_len(in, q1, p + 1, max - 1);

			if (l1 > len + 1) {
				p++;
				q = q1;
				len = l1;
			}
		}
		if (len != 0) {
			u32 b = p, bq = q, blen = len;

			while (b > lit && bq > 0 && blen < SPZ_MATCH_MAX &&
			       in[b - 1] == in[bq - 1]) {
				b--;
				bq--;
				blen++;
			}
			if (spz_lits_cost(in, b, blen, lcost) <=
			    spz_seq_cost(blen, p - q)) {
				len = 0;
			} else {
				p = b;
				q = bq;
				len = blen;
			}
		}
		if (len == 0) {
			p++;
			continue;
		}
		seq[2 * n] = (p - lit) | len << 16;
		seq[2 * n + 1] = p - q;
		n++;
		lits += p - lit;
		p += len;
		lit = end = p;
	}
	nseq[k] = n;
	nlit[k] = lits + (lit < e ? e - lit : 0);
	last[k] = end;
	if (k + 1 < SPZ_NSUB)
		next[k + 1] = lit > e ? lit : e;
}

#endif
