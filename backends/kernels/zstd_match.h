/*
 * zstd_match.h - the zstd encoder's match finder: one work-item parses one
 * segment (SPZ_SEG bytes of a block) greedily, with a hash table of its
 * own in global scratch.
 *
 * Determinism (doc/design.md §7.2): the table is cleared, then primed with the
 * positions of the `reach` bytes before the segment, in order, before the
 * segment is parsed, so a segment's sequences are a function of the chunk
 * bytes and the level only -- not of the local size, of which item parses
 * it, or of what the table held before.  Matches may reach back into
 * earlier segments and blocks of the chunk; they end inside their own
 * segment.
 */
#ifndef SP_KERNEL_ZSTD_MATCH_H
#define SP_KERNEL_ZSTD_MATCH_H

/* Parameters that depend on the level alone. */
struct spz_params {
	u32 hlog;     /* hash table entries: 1 << hlog */
	u32 ways;     /* entries per bucket: candidates tried per position */
	u32 mm;       /* minimum match, also the bytes hashed */
	u32 reach;    /* bytes before a segment primed into its table */
	u32 dense;    /* insert every position inside a match */
	u32 lazy;     /* try the next position before taking a match */
};

DEVICE_FN struct spz_params spz_params_of(i64 level)
{
	struct spz_params p;

	p.hlog = SPZ_HLOG_OF_LEVEL(level);
	p.ways = 1;
	p.mm = 5;
	p.reach = 16384;
	p.dense = 0;
	p.lazy = 0;
	if (level >= 2)
		p.reach = 32768;
	if (level >= 3) {
		p.ways = 4;
		p.dense = 1;
	}
	if (level >= 5) {
		p.mm = 4;
		p.lazy = 1;
		p.ways = 8;
	}
	if (level >= 9) {
		p.ways = 16;
		p.reach = 131072;
	}
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

/* Multiplicative hash of the mm bytes at p (no integer suffixes beyond u:
 * OpenCL C gives `ull` literals a width of its own). */
DEVICE_FN u32 spz_hash(GLOBAL const u8 *p, u32 mm, u32 hlog)
{
	u64 v = 0;

	WORK(1);
	for (u32 i = 0; i < mm; i++)
		v |= (u64)p[i] << (8 * i);
	return (u32)((v * ((u64)0x9E3779B1u << 32 | 0x85EBCA87u)) >> (64 - hlog));
}

DEVICE_FN u32 spz_match_len(GLOBAL const u8 *src, u64 q, u64 p, u64 end)
{
	u64 n = 0;

	while (p + n < end && src[q + n] == src[p + n]) {
		WORK(1);
		n++;
	}
	return (u32)n;
}

/* Insert position value v (position - window + 1) into its bucket,
 * newest first. */
DEVICE_FN void spz_insert(GLOBAL u32 *tab, u32 h, u32 ways, u32 v)
{
	GLOBAL u32 *b = tab + h * ways;

	WORK(ways);
	for (u32 w = ways - 1; w > 0; w--)
		b[w] = b[w - 1];
	b[0] = v;
}

/*
 * The best match at p among its bucket's candidates: the longest, the
 * nearest on ties (buckets hold the newest first).  Returns its length
 * (0 if none reaches mm), *q its source.
 */
DEVICE_FN u32 spz_best(GLOBAL const u8 *src, GLOBAL const u32 *bucket,
		       u32 ways, u64 win, u64 p, u64 end, u32 mm, u64 *q)
{
	u32 best = 0;

	for (u32 w = 0; w < ways; w++) {
		u32 c = bucket[w], l;
		u64 cq;

		WORK(1);
		if (c == 0)
			break;
		cq = win + c - 1;
		if (best > 0 && (p + best >= end ||
				 src[cq + best] != src[p + best]))
			continue;
		l = spz_match_len(src, cq, p, end);
		if (l > best) {
			best = l;
			*q = cq;
		}
	}
	return best >= mm ? best : 0;
}

/* Cost of the literals src[p..p+len). */
DEVICE_FN u32 spz_lits_cost(GLOBAL const u8 *src, u64 p, u32 len,
			    LOCAL const u16 *lcost)
{
	u32 c = 0;

	WORK(len);
	for (u32 i = 0; i < len; i++)
		c += lcost[src[p + i]];
	return c;
}

/*
 * Parse src[s0..s1) of a chunk of clen bytes.  Sequences (literal length,
 * match length, offset) go to seq, three words each; meta receives the
 * SPZ_SM_* counts.  lcost: literal costs of the block (spz_lit_cost).
 */
DEVICE_FN void spz_parse(GLOBAL const u8 *src, u64 clen, u64 s0, u64 s1,
			 struct spz_params prm, LOCAL const u16 *lcost,
			 GLOBAL u32 *tab, GLOBAL u32 *seq, GLOBAL u32 *meta)
{
	u32 hsize = (1u << prm.hlog) / prm.ways, nseq = 0, matched = 0;
	u32 hlog = prm.hlog - spz_highbit(prm.ways);
	u64 win = s0 > prm.reach ? s0 - prm.reach : 0, p, lit;

	WORK(hsize * prm.ways);
	for (u32 i = 0; i < hsize * prm.ways; i++)
		tab[i] = 0;
	for (p = win; p < s0 && p + prm.mm <= clen; p++)
		spz_insert(tab, spz_hash(src + p, prm.mm, hlog), prm.ways,
			   (u32)(p - win + 1));
	p = lit = s0;
	while (p + prm.mm <= s1) {
		u32 h = spz_hash(src + p, prm.mm, hlog), len;
		u64 q = 0;

		len = spz_best(src, tab + h * prm.ways, prm.ways, win, p, s1,
			       prm.mm, &q);
		spz_insert(tab, h, prm.ways, (u32)(p - win + 1));
		if (len != 0 && prm.lazy && p + 1 + prm.mm <= s1) {
			/* One step of lazy evaluation: a longer match
			 * starting at the next byte wins. */
			u32 h1 = spz_hash(src + p + 1, prm.mm, hlog), l1;
			u64 q1 = 0;

			l1 = spz_best(src, tab + h1 * prm.ways, prm.ways, win,
				      p + 1, s1, prm.mm, &q1);
			if (l1 > len + 1) {
				spz_insert(tab, h1, prm.ways,
					   (u32)(p + 1 - win + 1));
				p++;
				q = q1;
				len = l1;
			}
		}
		if (len != 0) {
			u64 b = p, bq = q;
			u32 blen = len;

			while (b > lit && bq > 0 && src[b - 1] == src[bq - 1]) {
				WORK(1);
				b--;
				bq--;
				blen++;
			}
			if (spz_lits_cost(src, b, blen, lcost) <=
			    spz_seq_cost(blen, (u32)(p - q)))
				len = 0;
			else {
				p = b;
				q = bq;
				len = blen;
			}
		}
		if (len != 0) {
			u64 e;

			seq[3 * nseq] = (u32)(p - lit);
			seq[3 * nseq + 1] = len;
			seq[3 * nseq + 2] = (u32)(p - q);
			nseq++;
			matched += len;
			e = p + len;
			if (prm.dense) {
				for (u64 r = p + 1; r < e && r + prm.mm <= s1; r++)
					spz_insert(tab, spz_hash(src + r, prm.mm,
								 hlog),
						   prm.ways, (u32)(r - win + 1));
			} else {
				if (p + 1 + prm.mm <= s1)
					spz_insert(tab, spz_hash(src + p + 1,
								 prm.mm, hlog),
						   prm.ways,
						   (u32)(p + 1 - win + 1));
				if (e >= 2 && e - 2 > p + 1 && e - 2 + prm.mm <= s1)
					spz_insert(tab, spz_hash(src + e - 2,
								 prm.mm, hlog),
						   prm.ways,
						   (u32)(e - 2 - win + 1));
			}
			p = lit = e;
			continue;
		}
		p++;
	}
	meta[SPZ_SM_NSEQ] = nseq;
	meta[SPZ_SM_NLIT] = (u32)(s1 - s0) - matched;
	meta[SPZ_SM_TAIL] = (u32)(s1 - lit);
}

#endif
