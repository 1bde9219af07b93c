/*
 * zstd_match.h - the zstd encoder's match finder over one block
 * (doc/design.md §13.1), in two phases that every work-item shares:
 *
 * 1. Candidates.  At level 1 positions are taken in fixed rounds of
 *    SPZ_ROUND: every position of a round looks its hash up in a table in
 *    local memory, then, after a barrier, every position of the round is
 *    inserted, the larger position winning an entry (an atomic max).  So
 *    a position sees the latest earlier position of its entry as of the
 *    end of the previous round, whichever work-item looked or inserted
 *    what: the candidates are a function of the block and the level alone
 *    (§7.2).  From level 3 every position is on a hash chain over the
 *    whole block instead (spz_chains), a stable sort, so again a function
 *    of the block alone.  Nothing from before the block is seen, so
 *    blocks are independent work units.  Per position the candidate
 *    whose first bytes match (the longest over a few words, then the
 *    nearest) is kept.
 * 2. Parse.  Each segment of SPZ_SUB bytes is parsed greedily by one
 *    work-item (one step lazy at higher levels), each match extended
 *    forward, up to SPZ_MATCH_MAX bytes and past the segment's end, and
 *    backward over the segment's pending literals, and kept only when
 *    cheaper than its literals.  Every segment parses from its first
 *    byte, independently; then one item walks the segments in order
 *    (spz_settle), each starting where the previous one's last match
 *    ended: the sequences that a match running in from the previous
 *    segment covers are dropped, the one it cuts into loses its front.
 *    Measured on shuffled and bitshuffled planes, this keeps within 0.1%
 *    the ratio of parsing every segment from exactly where the previous
 *    one ends, which takes a chain of passes as long as the block.  From
 *    level 3 a dry run over each segment's tail first leaves the repeat
 *    offsets the next segment starts from (spz_params.seed).
 *
 * Compares load words (little-endian, LE64) and count the equal bytes with
 * CTZ64 rather than looping over bytes.  The block is read from its staged
 * copy in scratch, 8-byte aligned and followed by SPZ_PAD zero bytes, so
 * a word load never leaves it.
 */
#ifndef SP_KERNEL_ZSTD_MATCH_H
#define SP_KERNEL_ZSTD_MATCH_H

/* Parameters that depend on the level alone.  Level 1 looks candidates
 * up in rounds in a table of SPZ_TAB_WORDS entries of local memory;
 * from level 3 every position of the block is on a hash chain
 * (spz_chains), which reaches as far back as the block does. */
struct spz_params {
	u32 mm;       /* minimum match, also the bytes hashed */
	u32 lazy;     /* try the next position before taking a match */
	u32 seed;     /* segments start from the previous one's repeats */
	u32 chain;    /* candidates' candidates the parse follows */
	u32 depth;    /* hash chain steps per position, 0: the table */
};

DEVICE_FN struct spz_params spz_params_of(i64 level)
{
	struct spz_params p;

	p.mm = 5;
	p.lazy = 0;
	p.seed = 0;
	p.chain = 0;
	p.depth = 0;
	if (level >= 3) {
		p.seed = 1;
		p.chain = 4;
		p.depth = 4;
	}
	if (level >= 5) {
		p.lazy = 1;
		p.chain = 8;
		p.depth = 16;
	}
	if (level >= 9) {
		p.chain = 32;
		p.depth = 32;
	}
	return p;
}

/*
 * Costs in 1/16 bit.  A literal costs what its frequency in the block
 * predicts under Huffman coding; a sequence 8 bits for its three codes'
 * state transitions plus the offset's extra bits (and the match
 * length's past 34).  The tables fitted to each block (zstd_seq.h)
 * charge 6 to 10 bits for the codes of a block's common sequences, the
 * predefined ones 14 to 15; 8 was measured best over bench/zstd_corpus.py
 * (15 before fitted tables: the kernel's ratio over libzstd's at level
 * 1, micro 0.990 -> 1.022, 12-bit noise 0.944 -> 0.982; 6 loses on the
 * noise).  A match is kept only when it is cheaper than the literals it
 * replaces, so short matches in noisy data (16-bit samples with noise in
 * the low byte) do not cost more than they save.
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
	u32 bits = 8 + spz_highbit(off + 3);

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

		WORK(1);
		if (x != 0) {
			n += CTZ64(x) >> 3;
			break;
		}
		n += 8;
	}
	return n < max ? n : max;
}

/* The table entry of position p. */
DEVICE_FN u32 spz_bucket(GLOBAL const u8 *in, u32 p, struct spz_params prm)
{
	return spz_hash(spz_ld64(in, p), prm.mm, SPZ_TAB_LOG);
}

/* Positions just before p tried besides the table's or the chain's:
 * p - SPZ_NEAR and every power of two below it. */
#define SPZ_NEAR 4u

/* The bytes at the end of a segment parsed (and thrown away) for the
 * repeats the next segment starts from (spz_parse's dry run). */
#define SPZ_SEED_TAIL 256u

/* Position p's candidate: best (+ 1, 0: none), a match of blen bytes,
 * or one of the positions 4, 2 and 1 before it if as long.  They catch
 * runs and repeated 16- and 32-bit samples that the table or the chain
 * may have lost (4 took segmentation labels from 0.52 to 0.87 of
 * libzstd's ratio at level 1, bench/zstd_corpus.py). */
DEVICE_FN u32 spz_near(GLOBAL const u8 *in, u32 p, u32 e,
		       struct spz_params prm, u32 best, u32 blen)
{
	for (u32 d = SPZ_NEAR; d >= 1; d >>= 1) {
		u32 l;

		WORK(1);
		if (d > p)
			continue;
		l = spz_match_len(in, p - d, p, e);
		if (l >= prm.mm && l >= blen) {
			best = p - d + 1;
			blen = l;
		}
	}
	return best;
}

/*
 * Level 1, round r's lookups: for each of this item's positions p of the
 * round (of a block of bl bytes), cand[p] = the best candidate + 1, or 0:
 * the table's, or a nearer one as long (spz_near).  The round hides its
 * own earlier positions from the table; the near ones stand in for them.
 */
DEVICE_FN void spz_round_lookup(GLOBAL const u8 *in, u32 bl, u32 r,
				struct spz_params prm, LOCAL const u32 *tab,
				GLOBAL u32 *cand)
{
	for (u32 i = (u32)LOCAL_ID(); i < SPZ_ROUND; i += (u32)LOCAL_SIZE()) {
		u32 p = r * SPZ_ROUND + i, best = 0, blen = 0, e, c;

		if (p + prm.mm > bl)
			break;
		WORK(2);
		e = bl - p < 8u ? bl - p : 8u;
		c = tab[spz_bucket(in, p, prm)];
		if (c != 0) {
			u32 l = spz_match_len(in, c - 1, p, e);

			if (l >= prm.mm) {
				best = c;
				blen = l;
			}
		}
		cand[p] = spz_near(in, p, e, prm, best, blen);
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
		WORK(1);
		LOCAL_MAX(tab + spz_bucket(in, p, prm), p + 1);
	}
}

/* Digit d (SPZ_CH_DBITS bits) of position p's chain hash. */
DEVICE_FN u32 spz_chain_digit(GLOBAL const u8 *in, u32 p,
			      struct spz_params prm, u32 d)
{
	return spz_hash(spz_ld64(in, p), prm.mm, SPZ_CH_HLOG) >>
		       (d * SPZ_CH_DBITS) &
	       ((1u << SPZ_CH_DBITS) - 1);
}

/*
 * From level 3: cand[p] for every position p of a block of bl bytes from
 * its hash chain, the earlier positions whose first mm bytes hash as
 * its own, nearest first.  The chains are a stable sort of the positions
 * by hash: a least-significant-digit radix sort, SPZ_CH_DBITS bits a
 * pass, over tiles of SPZ_CH_TILE positions, each counted and then dealt
 * out in order by one item, so the order within a hash is the
 * positions' and does not depend on the local size.  A position's
 * predecessor in the sorted order is its chain's next link.  cand[p] is
 * then the longest match among the first prm.depth links (the nearest
 * on ties), or a near one as long (spz_near).  Nothing is lost to a
 * table's collisions or its size, so a match is found however far back
 * in the block it lies: the kernel's ratio over libzstd's at levels 3,
 * 5 and 9 went from 0.979, 0.924 and 0.931 to 1.020, 0.963 and 0.971 on
 * the CT-like kind, from 0.957, 0.938 and 0.940 to 0.981, 0.961 and
 * 0.964 on the microscopy fill (bench/zstd_corpus.py): libzstd's own
 * parse, priced alike, had found a third more matched bytes, a third of
 * its matches over 32 KiB back, where the table had forgotten them.
 *
 * Memory: the sort alternates between cand and alt (SPZ_BLOCK words
 * each, an even number of passes ending in cand), the links then go to
 * alt; cnt, SPZ_CH_TILES << SPZ_CH_DBITS words of local memory plus
 * 1 << SPZ_CH_DBITS, holds the tiles' counts.
 */
DEVICE_FN void spz_chains(GLOBAL const u8 *in, u32 bl, struct spz_params prm,
			  GLOBAL u32 *cand, GLOBAL u32 *alt, LOCAL u32 *cnt)
{
	u32 n = bl >= prm.mm ? bl - prm.mm + 1 : 0;
	u32 nd = 1u << SPZ_CH_DBITS;
	LOCAL u32 *tot = cnt + (SPZ_CH_TILES << SPZ_CH_DBITS);

	for (u32 d = 0; d < SPZ_CH_PASSES; d++) {
		GLOBAL u32 *dst = (SPZ_CH_PASSES - 1 - d) & 1 ? alt : cand;
		GLOBAL const u32 *src = dst == cand ? alt : cand;

		/* Counts per digit and tile, digit-major: the order the
		 * positions are dealt out in. */
		for (u32 t = (u32)LOCAL_ID(); t < SPZ_CH_TILES;
		     t += (u32)LOCAL_SIZE()) {
			u32 e = (t + 1) * SPZ_CH_TILE;

			for (u32 x = 0; x < nd; x++)
				cnt[x * SPZ_CH_TILES + t] = 0;
			for (u32 i = t * SPZ_CH_TILE; i < n && i < e; i++) {
				u32 q = d == 0 ? i : src[i];

				WORK(1);
				cnt[spz_chain_digit(in, q, prm, d) *
					    SPZ_CH_TILES + t]++;
			}
		}
		BARRIER();
		for (u32 x = (u32)LOCAL_ID(); x < nd; x += (u32)LOCAL_SIZE()) {
			u32 s = 0;

			WORK(SPZ_CH_TILES);
			for (u32 t = 0; t < SPZ_CH_TILES; t++)
				s += cnt[x * SPZ_CH_TILES + t];
			tot[x] = s;
		}
		BARRIER();
		for (u32 x = (u32)LOCAL_ID(); x < nd; x += (u32)LOCAL_SIZE()) {
			u32 s = 0;

			WORK(x + SPZ_CH_TILES);
			for (u32 y = 0; y < x; y++)
				s += tot[y];
			for (u32 t = 0; t < SPZ_CH_TILES; t++) {
				u32 c = cnt[x * SPZ_CH_TILES + t];

				cnt[x * SPZ_CH_TILES + t] = s;
				s += c;
			}
		}
		BARRIER();
		for (u32 t = (u32)LOCAL_ID(); t < SPZ_CH_TILES;
		     t += (u32)LOCAL_SIZE()) {
			u32 e = (t + 1) * SPZ_CH_TILE;

			for (u32 i = t * SPZ_CH_TILE; i < n && i < e; i++) {
				u32 q = d == 0 ? i : src[i];
				LOCAL u32 *o = cnt + spz_chain_digit(in, q, prm, d) *
							     SPZ_CH_TILES + t;

				WORK(1);
				dst[*o] = q;
				*o += 1;
			}
		}
		BARRIER();
	}
	/* The links: each position's predecessor of the same hash. */
	for (u32 i = (u32)LOCAL_ID(); i < n; i += (u32)LOCAL_SIZE()) {
		u32 q = cand[i], h = spz_hash(spz_ld64(in, q), prm.mm,
					      SPZ_CH_HLOG);

		WORK(1);
		alt[q] = i != 0 && spz_hash(spz_ld64(in, cand[i - 1]), prm.mm,
					    SPZ_CH_HLOG) == h ?
				 cand[i - 1] + 1 : 0;
	}
	BARRIER();
	for (u32 p = (u32)LOCAL_ID(); p < n; p += (u32)LOCAL_SIZE()) {
		u32 e = bl - p < SPZ_CH_CAP ? bl - p : SPZ_CH_CAP;
		u32 best = 0, blen = 0, x = alt[p];

		WORK(1);
		for (u32 h = 0; h < prm.depth && x != 0 && blen < e; h++) {
			u32 l;

			WORK(1);
			l = spz_match_len(in, x - 1, p, e);
			if (l >= prm.mm && l > blen) {
				best = x;
				blen = l;
			}
			x = alt[x - 1];
		}
		cand[p] = spz_near(in, p, e, prm, best, blen);
	}
	BARRIER();
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

/* Whether the literals in[p..p+len) cost more than bound: summed only
 * until they do, so a long match does not pay for pricing its bytes. */
DEVICE_FN u32 spz_lits_exceed(GLOBAL const u8 *in, u32 p, u32 len,
			      LOCAL const u16 *lcost, u32 bound)
{
	u32 c = 0;

	for (u32 i = 0; i < len && c <= bound; i++) {
		WORK(1);
		c += lcost[in[p + i]];
	}
	return c > bound;
}

/*
 * Parse segment k of a block of bl bytes from its first byte: matches
 * start inside the segment and may run past its end, up to SPZ_MATCH_MAX
 * bytes.  Its
 * sequences go to seq, two words each (literal length | match length <<
 * 16, offset); nseq[k], matched[k] and last[k] receive their count, the
 * bytes their matches cover and the end of the last one (0 when there is
 * none), next[k + 1] where the parse left off: that end when it passes the
 * segment's, else the segment's end.  lcost: literal costs of the block
 * (spz_lit_cost).  With prm.seed the segment starts from the repeats
 * reps[3k..3k+2] (none for k = 0).  dry: parse only the segment's last
 * SPZ_SEED_TAIL bytes, from no repeats, and leave the repeats it ends
 * with in reps[3k+3..3k+5] for segment k + 1, writing nothing else.
 */
DEVICE_FN void spz_parse(GLOBAL const u8 *in, u32 bl, u32 k,
			 struct spz_params prm, LOCAL const u16 *lcost,
			 GLOBAL const u32 *cand, GLOBAL u32 *seq,
			 LOCAL u32 *nseq, LOCAL u32 *matched, LOCAL u32 *last,
			 LOCAL u32 *next, LOCAL u32 *reps, u32 dry)
{
	u32 e = spz_seg_end(k, bl), p = spz_seg_start(k, bl), lit = p, n = 0;
	u32 covered = 0, end = 0, rej_off = 0, rej_end = 0;
	u32 rep = 0, rep2 = 0, rep3 = 0;

	if (dry) {
		p = e - p > SPZ_SEED_TAIL ? e - SPZ_SEED_TAIL : p;
		lit = p;
	} else if (prm.seed && k != 0) {
		rep = reps[3 * k];
		rep2 = reps[3 * k + 1];
		rep3 = reps[3 * k + 2];
	}

	while (p < e && p + prm.mm <= bl) {
		u32 c = cand[p], len = 0, q = 0, max = bl - p, rl;

		WORK(1);
		if (max > SPZ_MATCH_MAX)
			max = SPZ_MATCH_MAX;
		/* Inside a match just found too dear, the same offset finds
		 * the same match again (extended back to the same literal):
		 * skip it rather than pay for it at every position. */
		if (c != 0 && (p + 1 - c != rej_off || p >= rej_end)) {
			q = c - 1;
			len = spz_match_len(in, q, p, max);
		}
		/* From level 3, deeper: the candidate's own candidate, and
		 * so on (cand[] chains each position to the best earlier
		 * match the table found for it). */
		for (u32 h = 0, x = c; h < prm.chain && x != 0; h++) {
			u32 l;

			x = cand[x - 1];
			if (x == 0 || (p + 1 - x == rej_off && p < rej_end))
				continue;
			l = spz_match_len(in, x - 1, p, max);
			if (l > len) {
				q = x - 1;
				len = l;
			}
		}
		/* The segment's repeats, as the decoder will hold them, which
		 * the table may have lost (a label repeated within one round,
		 * the row above it): coded as repeats (zstd_seq.h) they cost
		 * almost no offset bits, so they win unless the table's match
		 * is longer by a word.  The second took segmentation labels
		 * from 0.872 to 0.918 of libzstd's ratio at level 1, the third
		 * to 1.004 (bench/zstd_corpus.py): a labelled run's rows cycle
		 * through three offsets (the background's, the run's period
		 * and the row above's), and with two the row above's was gone
		 * by the next row, an explicit offset a row. */
		for (u32 r = 0; r < 3; r++) {
			u32 o = r == 0 ? rep : r == 1 ? rep2 : rep3;

			if (o == 0 || o > p || (o == rej_off && p < rej_end))
				continue;
			rl = spz_match_len(in, p - o, p, max);
			if (rl >= 4 && rl + 8 > len) {
				q = p - o;
				len = rl;
			}
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
			u32 b = p, bq = q, blen = len, o = p - q;

			while (b > lit && bq > 0 && blen < SPZ_MATCH_MAX &&
			       in[b - 1] == in[bq - 1]) {
				WORK(1);
				b--;
				bq--;
				blen++;
			}
			if (!spz_lits_exceed(in, b, blen, lcost,
					     spz_seq_cost(blen, o == rep ||
								o == rep2 ||
								o == rep3 ?
								0 : o))) {
				rej_off = o;
				rej_end = b + blen;
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
		if (!dry)
			seq[2 * n] = (p - lit) | len << 16;
		/* Shifted as RFC 8878 3.1.2.5 shifts them: a repeat moves to
		 * the front, a new offset pushes the last one out. */
		if (p - q != rep) {
			if (p - q != rep2)
				rep3 = rep2;
			rep2 = rep;
			rep = p - q;
		}
		if (!dry)
			seq[2 * n + 1] = rep;
		n++;
		covered += len;
		p += len;
		lit = end = p;
	}
	if (dry) {
		reps[3 * k + 3] = rep;
		reps[3 * k + 4] = rep2;
		reps[3 * k + 5] = rep3;
	} else {
		nseq[k] = n;
		matched[k] = covered;
		last[k] = end;
		next[k + 1] = lit > e ? lit : e;
	}
}

/*
 * One item, after the parses: where each segment starts for good.  The
 * segments are walked in order, each from where the previous one's
 * matches end (a).  A segment drops its sequences ending by a and cuts the
 * front off one that crosses it (same offset, at least 3 bytes left, else
 * dropped too), and its first kept sequence's literal length is rewritten
 * to count from a.  Leaves fin[k] the segment's start, drop[k] the
 * sequences it drops, nseq[k] those it keeps, last[k] the end of its last
 * match (0: none) and nlit[k] its literal bytes up to the next segment's
 * start (fin[SPZ_NSUB] = bl).  next[k + 1]: where the segment's parse
 * left off (spz_parse).
 */
DEVICE_FN void spz_settle(u32 bl, GLOBAL u32 *subseq, LOCAL const u32 *next,
			  LOCAL u32 *nseq, LOCAL const u32 *matched,
			  LOCAL u32 *last, LOCAL u32 *fin, LOCAL u32 *drop,
			  LOCAL u32 *nlit)
{
	u32 a = 0;

	for (u32 k = 0; k < SPZ_NSUB; k++) {
		GLOBAL u32 *ss = subseq + 2 * SPZ_SEQ_PER_SUB * k;
		u32 p = spz_seg_start(k, bl), d = 0, m = matched[k];
		u32 x = next[k + 1], s;

		WORK(1);
		for (; d < nseq[k]; d++) {
			u32 ms = p + (ss[2 * d] & 0xFFFFu), ml = ss[2 * d] >> 16;

			WORK(1);
			if (ms >= a) {
				/* Kept: its literals count from a. */
				ss[2 * d] = (ms - a) | ml << 16;
				break;
			}
			if (ms + ml >= a + 3) {
				ss[2 * d] = (ms + ml - a) << 16;
				m -= a - ms;
				break;
			}
			m -= ml;
			p = ms + ml;
		}
		if (d == nseq[k]) {
			u32 e = spz_seg_end(k, bl);

			x = a > e ? a : e;
			last[k] = 0;
		}
		fin[k] = a;
		drop[k] = d;
		nseq[k] -= d;
		s = spz_seg_start(k + 1, bl);
		x = x > s ? x : s;
		nlit[k] = x - a - m;
		a = x;
	}
	fin[SPZ_NSUB] = bl;
}

#endif
