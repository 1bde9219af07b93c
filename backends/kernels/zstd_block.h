/*
 * zstd_block.h - one block of a zstd frame (RFC 8878 3.1.1.2), encoded by
 * one work-group as an independent work unit (doc/design.md §13.1): its
 * content goes to the unit's area, which holds as many bytes as the
 * block, and its type and content size to one u64 (SPZ_U_TYPE_SHIFT).
 * Placing the blocks into frames, headers included, is the frame kernels'
 * work (zstd_encode.h, blosc_encode.h).
 *
 * A block is RLE when constant, else compressed when that is smaller than
 * raw, else raw.  Compressed: literals raw, RLE or Huffman (1 stream below
 * 256 literals, else 4), sequences with predefined, RLE or fitted FSE
 * tables and offsets explicit or, when one of the three repeat offsets the block
 * knows, its repeat code (zstd_seq.h).
 *
 * Phases, separated by barriers, each spread over the whole group:
 *   1. (the caller's) the block's bytes staged in scratch, followed by
 *      SPZ_PAD zeros, and counted into freq;
 *   2. literal costs for the parse, the hash table cleared;
 *   3. match candidates, round by round (zstd_match.h);
 *   4. the parse, one item per segment, then one item settling where
 *      each segment starts;
 *   5. scans over the segments: where their literals and sequences go,
 *      the literals their first sequence carries from earlier ones;
 *   6. the gather: each segment's literals and sequences into the block's
 *      lists, with the literals' histogram;
 *   7. the literals section: the Huffman code (zstd_huf.h), the streams
 *      packed by parts;
 *   8. the sequences section (zstd_seq.h): repeat codes, each symbol
 *      type's table chosen (one item per type), the state chain, then
 *      the bitstream packed by parts;
 *   9. the block's type; the bytes of an RLE or raw block.
 * Only the merge of the Huffman queues, the tree description, the repeat
 * offsets, each symbol type's table choice and the FSE state chain run
 * on one item, each a walk over at most 256 symbols or the block's
 * sequences.
 */
#ifndef SP_KERNEL_ZSTD_BLOCK_H
#define SP_KERNEL_ZSTD_BLOCK_H

#include "zstd_layout.h"
#include "zstd_bits.h"
#include "zstd_huf.h"
#include "zstd_match.h"
#include "zstd_seq.h"

#define SPZ_LIT_RAW 0
#define SPZ_LIT_RLE 1
#define SPZ_LIT_HUF 2

/* Blocks shorter than this are stored raw: no section headers pay. */
#define SPZ_MIN_COMPRESS 32u

/*
 * Where the segments' state lives in the table's local memory once the
 * candidates are found: nseq, nlit and last match end per segment (each
 * scanned in place, inclusive), the scan's spare copy of the three, and
 * the parse's and the settling's words (spz_parse, spz_settle); the
 * Huffman construction's words follow.
 */
#define SPZ_T_NSEQ 0u
#define SPZ_T_NLIT SPZ_NSUB
#define SPZ_T_LAST (2u * SPZ_NSUB)
#define SPZ_T_SPARE (3u * SPZ_NSUB)
#define SPZ_T_NEXT (6u * SPZ_NSUB)   /* where the previous parse left off */
#define SPZ_T_MATCHED (7u * SPZ_NSUB + 1u) /* bytes its matches cover */
#define SPZ_T_FIN (8u * SPZ_NSUB + 1u)     /* where it starts for good */
#define SPZ_T_DROP (9u * SPZ_NSUB + 2u)    /* sequences it drops */
#define SPZ_T_HUF (10u * SPZ_NSUB + 2u)
#define SPZ_T_SEQFIT (SPZ_T_HUF + SPZ_HUF_TMP_WORDS) /* zstd_seq.h */
/* The parse's seeds, three repeats a segment (zstd_match.h), in the
 * Huffman words: those are free until the literals are gathered. */
#define SPZ_T_REPS SPZ_T_HUF

/* The work-group memory of the block encoder, declared by each kernel
 * that runs it: local arrays live in kernel scope. */
#define SPZ_LOCAL_ARRAYS()                                                    \
	LOCAL_ARRAY(u32, tab, SPZ_TAB_WORDS);                                 \
	LOCAL_ARRAY(u64, sh, SPZ_SH_WORDS);                                   \
	LOCAL_ARRAY(u32, freq, 256);                                          \
	LOCAL_ARRAY(u16, lcost, 256);                                         \
	LOCAL_ARRAY(u8, hlen, 256);                                           \
	LOCAL_ARRAY(u16, hcode, 256);                                         \
	LOCAL_ARRAY(u32, ft_area, SPZ_FT_AREA_WORDS);                         \
	LOCAL u8 *ft = (LOCAL u8 *)ft_area

/* Header of a raw or RLE literals section (type 0 or 1) of n bytes. */
DEVICE_FN u32 spz_lit_rawhdr_len(u32 n)
{
	return n < 32 ? 1 : n < 4096 ? 2 : 3;
}

DEVICE_FN void spz_lit_rawhdr(GLOBAL u8 *dst, u32 type, u32 n)
{
	if (n < 32)
		dst[0] = (u8)(type | n << 3);
	else if (n < 4096)
		spz_put_le(dst, type | 1u << 2 | n << 4, 2);
	else
		spz_put_le(dst, type | 3u << 2 | n << 4, 3);
}

/* Header length of a Huffman literals section (4.2... "Size_Format"). */
DEVICE_FN u32 spz_lit_hufhdr_len(u32 nstreams, u32 regen, u32 csize)
{
	u32 big = regen > csize ? regen : csize;

	if (nstreams == 1 || big < 1024)
		return 3;
	return big < 16384 ? 4 : 5;
}

DEVICE_FN void spz_lit_hufhdr(GLOBAL u8 *dst, u32 nstreams, u32 regen,
			      u32 csize)
{
	u32 len = spz_lit_hufhdr_len(nstreams, regen, csize);
	u32 sf = nstreams == 1 ? 0 : len - 2;
	u32 bits = len == 3 ? 10 : len == 4 ? 14 : 18;

	spz_put_le(dst, (u64)2 | (u64)sf << 2 | (u64)regen << 4 |
				(u64)csize << (4 + bits), len);
}

/*
 * The literals section at dst[0..), from the nlit literals at
 * SPZ_OFF_LITS whose histogram is freq: Huffman code, plan, streams.  All
 * items call it and meet every barrier (uniform control flow, no early
 * return); `active` 0 only keeps the barriers company.  Sets
 * SPZ_SH_LITSEC, or SPZ_SH_FAIL when no form fits budget bytes.
 */
DEVICE_FN void spz_literals(u32 active, GLOBAL u8 *dst, u32 budget,
			    GLOBAL u8 *ws, u32 nlit, LOCAL u64 *sh,
			    LOCAL u32 *freq, LOCAL u8 *hlen, LOCAL u16 *hcode,
			    LOCAL u8 *ft, LOCAL u32 *tmp)
{
	GLOBAL const u8 *lits = ws + SPZ_OFF_LITS;
	GLOBAL u32 *pbits = (GLOBAL u32 *)(ws + SPZ_OFF_PARTS);
	u32 mode, ns, huf, per, pps;

	PHASE("huf-build");
	if (LOCAL_ID() == 0) {
		u32 distinct = 0, maxsym = 0;

		WORK(256);
		for (u32 s = 0; s < 256; s++)
			if (freq[s] != 0) {
				distinct++;
				maxsym = s;
			}
		sh[SPZ_SH_HUF] = active && distinct > 1 && nlit >= 16;
		sh[SPZ_SH_MAXSYM] = maxsym;
		sh[SPZ_SH_LITMODE] = distinct == 1 ? SPZ_LIT_RLE : SPZ_LIT_RAW;
	}
	BARRIER();
	spz_huf_build((u32)sh[SPZ_SH_HUF], freq, hlen, hcode, tmp);
	if (LOCAL_ID() == 0) {
		u32 size = spz_lit_rawhdr_len(nlit) +
			   (sh[SPZ_SH_LITMODE] == SPZ_LIT_RLE ? 1 : nlit);
		u32 desc = 0;

		ns = 1;
		if (sh[SPZ_SH_HUF]) {
			u64 bits = 0;

			WORK(256);
			desc = spz_huf_describe(hlen, tmp[SPZ_HT_MAXBITS],
						(u32)sh[SPZ_SH_MAXSYM],
						ws + SPZ_OFF_DESC, ft);
			for (u32 s = 0; s < 256; s++)
				bits += (u64)freq[s] * hlen[s];
			if (desc != 0) {
				u32 n4 = nlit < 256 ? 1 : 4;
				/* Each stream adds its end mark and
				 * padding. */
				u32 upper = desc + (n4 == 4 ? 6 : 0) +
					    (u32)((bits + 8 * n4 + 7) / 8);
				u32 total = spz_lit_hufhdr_len(n4, nlit, upper) +
					    upper;

				if (total < size) {
					sh[SPZ_SH_LITMODE] = SPZ_LIT_HUF;
					size = total;
					ns = n4;
				}
			}
		}
		sh[SPZ_SH_NSTREAMS] = ns;
		sh[SPZ_SH_DESC] = desc;
		sh[SPZ_SH_FAIL] = !active || size > budget;
	}
	BARRIER();
	mode = (u32)sh[SPZ_SH_LITMODE];
	ns = (u32)sh[SPZ_SH_NSTREAMS];
	huf = sh[SPZ_SH_FAIL] == 0 && mode == SPZ_LIT_HUF;
	per = ns == 1 ? nlit : (nlit + 3) / 4;
	pps = (per + SPZ_HUF_PART - 1) / SPZ_HUF_PART;
	/* Bits per part of every stream (parts of stream k at k * pps). */
	PHASE("huf-bits");
	for (u32 g = (u32)LOCAL_ID(); huf && g < ns * pps;
	     g += (u32)LOCAL_SIZE()) {
		u32 k = g / pps, a = k * per;
		u32 b = (u32)spz_min((u64)a + per, nlit);

		pbits[g] = spz_huf_part_bits(lits, a, b, g % pps, hlen);
	}
	BARRIER();
	PHASE("huf-scan");
	if (LOCAL_ID() == 0 && huf) {
		u32 desc = (u32)sh[SPZ_SH_DESC], csize = desc, hl;
		u64 pos;

		/* Scan: each part's first bit; stream sizes with the end
		 * mark and padding. */
		for (u32 k = 0; k < ns; k++) {
			u32 run = 0;

			for (u32 j = 0; j < pps; j++) {
				u32 nb = pbits[k * pps + j];

				WORK(1);
				pbits[k * pps + j] = run;
				run += nb;
			}
			sh[SPZ_SH_SBITS + k] = run + 1;
			sh[SPZ_SH_SSIZE + k] = (run + 1 + 7) / 8;
			csize += (u32)sh[SPZ_SH_SSIZE + k];
		}
		if (ns == 4)
			csize += 6;
		hl = spz_lit_hufhdr_len(ns, nlit, csize);
		/* The plan's bound holds; this only guards it. */
		sh[SPZ_SH_FAIL] = hl + csize > budget;
		sh[SPZ_SH_LITSEC] = hl + csize;
		if (sh[SPZ_SH_FAIL] == 0) {
			spz_lit_hufhdr(dst, ns, nlit, csize);
			WORK(desc);
			for (u32 i = 0; i < desc; i++)
				dst[hl + i] = ws[SPZ_OFF_DESC + i];
			pos = hl + desc;
			if (ns == 4) {
				for (u32 k = 0; k < 3; k++)
					spz_put_le(dst + pos + 2 * k,
						   sh[SPZ_SH_SSIZE + k], 2);
				pos += 6;
			}
			for (u32 k = 0; k < ns; k++) {
				sh[SPZ_SH_SPOS + k] = pos;
				pos += sh[SPZ_SH_SSIZE + k];
			}
		}
	}
	BARRIER();
	PHASE("lit-write");
	if (huf && sh[SPZ_SH_FAIL] == 0) {
		for (u32 g = (u32)LOCAL_ID(); g < ns * pps;
		     g += (u32)LOCAL_SIZE()) {
			u32 k = g / pps, j = g % pps, a = k * per;
			u32 b = (u32)spz_min((u64)a + per, nlit);
			u64 o = pbits[g];
			u64 e = j + 1 < pps ? pbits[g + 1] : sh[SPZ_SH_SBITS + k];

			spz_huf_part_write(lits, a, b, j, o, e, hlen, hcode,
					   dst + sh[SPZ_SH_SPOS + k]);
		}
	} else if (sh[SPZ_SH_FAIL] == 0) {
		u32 hl = spz_lit_rawhdr_len(nlit);

		if (LOCAL_ID() == 0) {
			spz_lit_rawhdr(dst, mode, nlit);
			sh[SPZ_SH_LITSEC] = hl + (mode == SPZ_LIT_RLE ? 1 : nlit);
			if (mode == SPZ_LIT_RLE)
				dst[hl] = lits[0];
		}
		for (u32 i = (u32)LOCAL_ID(); mode == SPZ_LIT_RAW && i < nlit;
		     i += (u32)LOCAL_SIZE()) {
			WORK(1);
			dst[hl + i] = lits[i];
		}
	}
	BARRIER();
}

/*
 * The block of bl bytes staged at ws (freq its histogram, a barrier
 * since), `first` when it opens its frame (the decoder's repeat offsets
 * are then known, zstd_seq.h):
 * its content to dst (bl bytes), its type and size to *usize.  All items
 * meet every barrier whatever the block becomes; the kind of block only
 * gates work.
 */
DEVICE_FN void spz_block(GLOBAL u8 *ws, u32 bl, u32 first,
			 struct spz_params prm,
			 GLOBAL u8 *dst, GLOBAL u64 *usize, LOCAL u32 *tab,
			 LOCAL u64 *sh, LOCAL u32 *freq, LOCAL u16 *lcost,
			 LOCAL u8 *hlen, LOCAL u16 *hcode, LOCAL u8 *ft)
{
	GLOBAL const u8 *in = ws + SPZ_OFF_IN;
	GLOBAL u32 *cand = (GLOBAL u32 *)(ws + SPZ_OFF_CAND);
	GLOBAL u32 *subseq = (GLOBAL u32 *)(ws + SPZ_OFF_SUBSEQ);
	GLOBAL u32 *seq = (GLOBAL u32 *)(ws + SPZ_OFF_SEQ);
	GLOBAL u8 *lits = ws + SPZ_OFF_LITS;
	LOCAL u32 *nseq = tab + SPZ_T_NSEQ, *nlit = tab + SPZ_T_NLIT;
	LOCAL u32 *last = tab + SPZ_T_LAST, *spare = tab + SPZ_T_SPARE;
	LOCAL u32 *next = tab + SPZ_T_NEXT;
	LOCAL u32 *matched = tab + SPZ_T_MATCHED, *fin = tab + SPZ_T_FIN;
	LOCAL u32 *drop = tab + SPZ_T_DROP, *fit = tab + SPZ_T_SEQFIT;
	LOCAL u32 *reps = tab + SPZ_T_REPS;
	GLOBAL u16 *codes = (GLOBAL u16 *)(ws + SPZ_OFF_SEQCODE);
	u32 rle = bl >= 2 && freq[in[0]] == bl;
	u32 comp = !rle && bl >= SPZ_MIN_COMPRESS, raw;
	u32 rounds = comp ? (bl + SPZ_ROUND - 1) / SPZ_ROUND : 0;

	PHASE("costs");
	for (u32 s = (u32)LOCAL_ID(); s < 256; s += (u32)LOCAL_SIZE()) {
		WORK(1);
		lcost[s] = (u16)spz_lit_cost(freq[s], bl);
	}
	for (u32 i = (u32)LOCAL_ID(); comp && !prm.depth && i < SPZ_TAB_WORDS;
	     i += (u32)LOCAL_SIZE()) {
		WORK(1);
		tab[i] = 0;
	}
	BARRIER();
	PHASE("candidates");
	/* The sort's second buffer is the parse's sequences, not yet
	 * written. */
	if (prm.depth)
		spz_chains(in, comp ? bl : 0, prm, cand, subseq, tab);
	for (u32 r = 0; !prm.depth && r < rounds; r++) {
		spz_round_lookup(in, bl, r, prm, tab, cand);
		BARRIER();
		spz_round_insert(in, bl, r, prm, tab);
		BARRIER();
	}
	PHASE("parse");
	/* The table's memory now holds the segments' state.  Every segment
	 * parses from its first byte, then one item settles where each
	 * starts for good (zstd_match.h).  From level 3 a dry run over the
	 * end of each segment first leaves the repeats the next one starts
	 * from: segments were each starting from none, their first rows of
	 * a labelled run paying explicit offsets (labels 0.870 -> 0.932 of
	 * libzstd's ratio at level 5 with the chained candidates,
	 * bench/zstd_corpus.py). */
	if (prm.seed) {
		for (u32 k = (u32)LOCAL_ID(); k < SPZ_NSUB;
		     k += (u32)LOCAL_SIZE()) {
			WORK(1);
			if (comp)
				spz_parse(in, bl, k, prm, lcost, cand, subseq,
					  nseq, matched, last, next, reps, 1);
		}
		BARRIER();
	}
	for (u32 k = (u32)LOCAL_ID(); k < SPZ_NSUB; k += (u32)LOCAL_SIZE()) {
		WORK(1);
		nseq[k] = matched[k] = last[k] = 0;
		next[k + 1] = spz_seg_start(k + 1, bl);
		if (comp)
			spz_parse(in, bl, k, prm, lcost, cand,
				  subseq + 2 * SPZ_SEQ_PER_SUB * k, nseq,
				  matched, last, next, reps, 0);
	}
	BARRIER();
	PHASE("settle");
	if (LOCAL_ID() == 0)
		spz_settle(bl, subseq, next, nseq, matched, last, fin, drop,
			   nlit);
	BARRIER();
	/* Inclusive scans: sums of nseq and nlit, the latest match end. */
	PHASE("scan");
	for (u32 off = 1; off < SPZ_NSUB; off <<= 1) {
		for (u32 k = (u32)LOCAL_ID(); k < SPZ_NSUB;
		     k += (u32)LOCAL_SIZE()) {
			u32 b = k >= off;

			WORK(1);
			spare[k] = nseq[k] + (b ? nseq[k - off] : 0);
			spare[SPZ_NSUB + k] = nlit[k] + (b ? nlit[k - off] : 0);
			spare[2 * SPZ_NSUB + k] =
				b && last[k - off] > last[k] ? last[k - off]
							     : last[k];
		}
		BARRIER();
		for (u32 k = (u32)LOCAL_ID(); k < 3 * SPZ_NSUB;
		     k += (u32)LOCAL_SIZE()) {
			WORK(1);
			tab[k] = spare[k];
		}
		BARRIER();
	}
	for (u32 s = (u32)LOCAL_ID(); s < 256; s += (u32)LOCAL_SIZE()) {
		WORK(1);
		freq[s] = 0;
		if (s < 3 * SPZ_FT_SYMS)
			SPZ_SF_COUNTS(fit, s / SPZ_FT_SYMS)[s % SPZ_FT_SYMS] = 0;
	}
	BARRIER();
	PHASE("gather");
	/* The gather: segment k's literals from the latest literal offset,
	 * its kept sequences from the latest sequence number, the first one
	 * carrying the literals since the last match before the segment.
	 * Its first kept sequence's literals count from where it starts for
	 * good (spz_settle).  The literal-length and match-length codes are
	 * stored and counted here, for zstd_seq.h. */
	for (u32 k = (u32)LOCAL_ID(); k < SPZ_NSUB; k += (u32)LOCAL_SIZE()) {
		GLOBAL const u32 *ss = subseq + 2 * SPZ_SEQ_PER_SUB * k;
		u32 base = k ? nseq[k - 1] : 0, n = nseq[k] - base, d = drop[k];
		u32 o = k ? nlit[k - 1] : 0, pos = fin[k], p = pos;
		u32 carry = pos - (k ? last[k - 1] : 0);

		for (u32 i = 0; i < n; i++) {
			u32 w = ss[2 * (d + i)], ml = w >> 16;

			p += w & 0xFFFFu;
			WORK(1 + p - pos);
			u32 ll = p - pos + (i == 0 ? carry : 0), b, x;
			u32 llc = spz_ll_code(ll, &b, &x);
			u32 mlc = spz_ml_code(ml, &b, &x);

			seq[2 * (base + i)] = ll;
			seq[2 * (base + i) + 1] =
				ml | (ss[2 * (d + i) + 1] + 3) << SPZ_SEQ_OFV_SHIFT;
			codes[base + i] = (u16)(llc | mlc << 8);
			LOCAL_ADD(SPZ_SF_COUNTS(fit, SPZ_FT_LL) + llc, 1u);
			LOCAL_ADD(SPZ_SF_COUNTS(fit, SPZ_FT_ML) + mlc, 1u);
			for (; pos < p; pos++) {
				u8 v = in[pos];

				lits[o++] = v;
				LOCAL_ADD(freq + v, 1u);
			}
			p = pos = p + ml;
		}
		WORK(fin[k + 1] > pos ? fin[k + 1] - pos : 0);
		for (; pos < fin[k + 1]; pos++) {
			u8 v = in[pos];

			lits[o++] = v;
			LOCAL_ADD(freq + v, 1u);
		}
	}
	BARRIER();
	if (LOCAL_ID() == 0) {
		sh[SPZ_SH_NSEQ] = nseq[SPZ_NSUB - 1];
		sh[SPZ_SH_NLIT] = nlit[SPZ_NSUB - 1];
	}
	BARRIER();
	/* The compressed content must stay below bl bytes; leave at least
	 * one byte for the sequences header. */
	spz_literals(comp, dst, bl >= 2 ? bl - 2 : 0, ws, (u32)sh[SPZ_SH_NLIT],
		     sh, freq, hlen, hcode, ft, tab + SPZ_T_HUF);
	PHASE("seq-repeats");
	if (LOCAL_ID() == 0 && comp && sh[SPZ_SH_FAIL] == 0)
		spz_seq_repeats(ws, (u32)sh[SPZ_SH_NSEQ], first,
				SPZ_SF_COUNTS(fit, SPZ_FT_OF));
	BARRIER();
	/* One item per symbol type chooses its table. */
	PHASE("seq-fit");
	for (u32 k = (u32)LOCAL_ID();
	     k < 3 && comp && sh[SPZ_SH_FAIL] == 0 && sh[SPZ_SH_NSEQ] != 0;
	     k += (u32)LOCAL_SIZE())
		spz_seq_fit(ws, (u32)sh[SPZ_SH_NSEQ], k, ft, fit, sh);
	BARRIER();
	PHASE("seq-plan");
	if (LOCAL_ID() == 0 && comp && sh[SPZ_SH_FAIL] == 0) {
		u64 end = spz_seq_plan(dst, sh[SPZ_SH_LITSEC], bl - 1, ws,
				       (u32)sh[SPZ_SH_NSEQ], ft, fit, sh);

		sh[SPZ_SH_SEQEND] = end;
		sh[SPZ_SH_FAIL] = end == 0;
	}
	BARRIER();
	PHASE("seq-write");
	if (comp && sh[SPZ_SH_FAIL] == 0 && sh[SPZ_SH_NSEQ] != 0) {
		u32 ns = (u32)sh[SPZ_SH_NSEQ];
		u32 nparts = (ns + SPZ_SEQ_PART - 1) / SPZ_SEQ_PART;
		GLOBAL const u32 *pbits =
			(GLOBAL const u32 *)(ws + SPZ_OFF_SEQPARTS);

		for (u32 j = (u32)LOCAL_ID(); j < nparts;
		     j += (u32)LOCAL_SIZE())
			spz_seq_part_write(ws, ns, j, pbits[j],
					   j + 1 < nparts ? pbits[j + 1]
							  : sh[SPZ_SH_SEQBITS],
					   ft, fit, sh,
					   dst + sh[SPZ_SH_SEQAT]);
	}
	BARRIER();
	PHASE("raw");
	raw = !rle && sh[SPZ_SH_FAIL] != 0;
	for (u32 i = (u32)LOCAL_ID(); raw && i < bl; i += (u32)LOCAL_SIZE()) {
		WORK(1);
		dst[i] = in[i];
	}
	if (LOCAL_ID() == 0) {
		if (rle)
			dst[0] = in[0];
		*usize = rle ? (u64)1 << SPZ_U_TYPE_SHIFT | 1 :
			 raw ? bl : (u64)2 << SPZ_U_TYPE_SHIFT |
					    sh[SPZ_SH_SEQEND];
	}
	BARRIER();
}

#endif
