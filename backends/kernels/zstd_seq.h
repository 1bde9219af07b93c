/*
 * zstd_seq.h - the sequences section of a compressed block (RFC 8878
 * 3.1.1.3.2), from the block's sequences in scratch (SPZ_OFF_SEQ, in
 * block order, two words each: literal length, match length |
 * Offset_Value << SPZ_SEQ_OFV_SHIFT).  Separate from the match finder:
 * what the sequences are and how they are coded are two stages.
 *
 * The bitstream holds, in writing order, the sequences from the last to
 * the first, each as: the FSE state transitions for its offset,
 * match-length and literal-length codes (none for the last sequence,
 * whose codes pick the starting states), then its extra bits for literal
 * length, match length, offset; after the first sequence the three final
 * states (match length, offset, literal length) and the end mark.  The
 * decoder reads it backwards.
 *
 * The FSE states form a chain, so one item walks it once (spz_seq_plan),
 * keeping each sequence's states and the bit count of each part of
 * SPZ_SEQ_PART sequences; a scan places the parts, and every part then
 * writes the bytes that start inside its bits (spz_seq_part_write), as
 * the Huffman streams do.  Before the chain, offsets become repeat codes
 * (spz_seq_repeats) and each symbol type gets the cheapest of the
 * predefined, an RLE and a fitted table (spz_seq_fit, one item per type;
 * doc/design.md §13.5).  These three walks are the serial work left in a
 * block: their steps are table lookups, and many blocks run at once.
 */
#ifndef SP_KERNEL_ZSTD_SEQ_H
#define SP_KERNEL_ZSTD_SEQ_H

/* Sequence t in writing order (0: the block's last): literal length,
 * match length, Offset_Value. */
DEVICE_FN void spz_seq_get(GLOBAL const u8 *ws, u32 nseq, u32 t, u32 *ll,
			   u32 *ml, u32 *ofv)
{
	GLOBAL const u32 *s =
		(GLOBAL const u32 *)(ws + SPZ_OFF_SEQ) + 2 * (nseq - 1 - t);

	*ll = s[0];
	*ml = s[1] & ((1u << SPZ_SEQ_OFV_SHIFT) - 1);
	*ofv = s[1] >> SPZ_SEQ_OFV_SHIFT;
}

/*
 * Symbol compression modes (RFC 8878 3.1.1.3.2.2) the encoder writes:
 * Repeat_Mode would name the previous block's table, which a block that
 * is a unit of its own does not know.
 */
#define SPZ_SEQ_PREDEF 0u
#define SPZ_SEQ_RLE 1u
#define SPZ_SEQ_FSE 2u

/*
 * Per symbol type, the work-group memory of its fitted table (words of
 * the match finder's table, free once the parse is done; zstd_block.h):
 * the codes' counts, the normalised distribution, the spread's cells and
 * the table itself, whose states reach 255 at SPZ_SEQ_MAXLOG (u8 states).
 */
#define SPZ_SF_CNT 0u
#define SPZ_SF_NORM SPZ_FT_SYMS
#define SPZ_SF_CELLS (2u * SPZ_FT_SYMS)
#define SPZ_SF_TAB (3u * SPZ_FT_SYMS)
#define SPZ_SF_WORDS (SPZ_SF_TAB + (4u + 2u * SPZ_FT_SYMS + 256u) / 4u)
#define SPZ_SEQ_MAXLOG 8u

/* Literal-length, match-length or offset code (type k, SPZ_FT_LL, _ML,
 * _OF) of sequence t in writing order, as the gather (LL, ML) and
 * spz_seq_repeats (OF) stored it. */
DEVICE_FN u32 spz_seq_code(GLOBAL const u8 *ws, u32 nseq, u32 t, u32 k)
{
	u32 i = nseq - 1 - t;

	if (k == SPZ_FT_OF)
		return ws[SPZ_OFF_OFCODE + i];
	return ((GLOBAL const u16 *)(ws + SPZ_OFF_SEQCODE))[i] >> (8 * k) &
	       0xFFu;
}

/* Where type k's code counts are kept (spz_seq_fit's area). */
#define SPZ_SF_COUNTS(fit, k) ((fit) + (k) * SPZ_SF_WORDS + SPZ_SF_CNT)

/* The table that codes type k, as spz_seq_fit chose it. */
DEVICE_FN LOCAL const u8 *spz_seq_tab(LOCAL const u8 *ft,
				      LOCAL const u32 *fit,
				      LOCAL const u64 *sh, u32 k)
{
	if ((sh[SPZ_SH_SEQMODE + k] & 3) == SPZ_SEQ_PREDEF)
		return ft + k * SPZ_FT_BYTES;
	return (LOCAL const u8 *)(fit + k * SPZ_SF_WORDS + SPZ_SF_TAB);
}

/*
 * One item per symbol type k, after the repeats, the codes counted (the
 * LL and ML codes by the gather, the OF codes by the repeats): how the
 * block codes it,
 * whichever of the predefined table, RLE (one code only) and a table
 * fitted to the block's codes costs the fewest bits, counted exactly:
 * both tables' state chains are walked over the block's codes, the
 * fitted one charged its description too.  The fitted table is
 * normalised at the log libzstd's FSE_optimalTableLog would pick, at most
 * SPZ_SEQ_MAXLOG.  Leaves sh[SPZ_SH_SEQMODE + k]: the mode in bits 0-1,
 * the RLE symbol or the description's bytes from bit 8.
 */
DEVICE_FN void spz_seq_fit(GLOBAL u8 *ws, u32 nseq, u32 k,
			   LOCAL const u8 *ft, LOCAL u32 *fit, LOCAL u64 *sh)
{
	LOCAL u32 *f = fit + k * SPZ_SF_WORDS;
	LOCAL u32 *cnt = f + SPZ_SF_CNT;
	LOCAL i32 *norm = (LOCAL i32 *)(f + SPZ_SF_NORM);
	LOCAL u8 *cells = (LOCAL u8 *)(f + SPZ_SF_CELLS);
	LOCAL u8 *tf = (LOCAL u8 *)(f + SPZ_SF_TAB);
	LOCAL const u8 *tp = ft + k * SPZ_FT_BYTES;
	GLOBAL u8 *desc = ws + SPZ_OFF_SEQDESC + k * SPZ_SEQDESC_CAP;
	u32 maxsym = 0, distinct = 0, c, sp, sf = 0, n, v, dlen = 0;
	u64 cpre, cfit = ~(u64)0;

	WORK(SPZ_FT_SYMS);
	for (u32 s = 0; s < SPZ_FT_SYMS; s++)
		if (cnt[s] != 0) {
			distinct++;
			maxsym = s;
		}
	if (distinct == 1) {
		/* RLE: a table of one cell, no state bits at all. */
		for (u32 s = 0; s <= maxsym; s++)
			norm[s] = s == maxsym;
		spz_ft_build(tf, norm, maxsym + 1, 0, cells);
		sh[SPZ_SH_SEQMODE + k] = SPZ_SEQ_RLE | (u64)maxsym << 8;
		return;
	}
	if (nseq >= 8) {
		/* FSE_optimalTableLog: enough cells for the codes, no more
		 * than the sequences justify. */
		u32 lmax = spz_highbit(nseq - 1) - 2;
		u32 lmin = spz_highbit(nseq) + 1, lsym = spz_highbit(maxsym) + 2;
		u32 log = lmax < SPZ_SEQ_MAXLOG ? lmax : SPZ_SEQ_MAXLOG;
		struct spz_bw b;

		lmin = lmin < lsym ? lmin : lsym;
		log = lmin > log ? lmin : log;
		log = log < 5 ? 5 : log > SPZ_SEQ_MAXLOG ? SPZ_SEQ_MAXLOG : log;
		spz_fse_normalize(norm, cnt, maxsym + 1, nseq, log);
		spz_ft_build(tf, norm, maxsym + 1, log, cells);
		spz_bw_init(&b, 0, SPZ_SEQDESC_CAP);
		spz_ncount_write(&b, desc, norm, maxsym + 1, log);
		dlen = (u32)b.pos;
		if (!b.over)
			cfit = 8 * (u64)dlen + log;
	}
	/* Both chains as spz_seq_plan walks them: the last sequence's code
	 * picks the starting state, every other one steps. */
	c = spz_seq_code(ws, nseq, 0, k);
	sp = spz_ft_first(tp, c);
	cpre = SPZ_FT_LOG(tp);
	if (cfit != ~(u64)0)
		sf = spz_ft_first(tf, c);
	WORK(nseq);
	for (u32 t = 1; t < nseq; t++) {
		c = spz_seq_code(ws, nseq, t, k);
		sp = spz_ft_step(tp, sp, c, &n, &v);
		cpre += n;
		if (cfit != ~(u64)0) {
			sf = spz_ft_step(tf, sf, c, &n, &v);
			cfit += n;
		}
	}
	sh[SPZ_SH_SEQMODE + k] = cfit < cpre ? SPZ_SEQ_FSE | (u64)dlen << 8 :
					       SPZ_SEQ_PREDEF;
}

/*
 * One item, before the chain: every offset equal to one of the decoder's
 * three repeat offsets becomes its repeat code (RFC 8878 3.1.1.5), in
 * place, walking the sequences in block order as the decoder does.  The
 * block is a unit of its own (doc/design.md §13.5), so it cannot know the
 * offsets the blocks before it leave: 0 stands for "unknown" and matches
 * nothing, and only the frame's first block starts from the known 1, 4,
 * 8.  The unknown ones shift as the decoder's real ones do, so from the
 * block's third offset on all three are known.  An offset that is no
 * repeat, or whose repeat code the literal length forbids, stays
 * explicit, which is always valid.  Stores each offset code and counts
 * them into ofcnt.
 */
DEVICE_FN void spz_seq_repeats(GLOBAL u8 *ws, u32 nseq, u32 first,
				LOCAL u32 *ofcnt)
{
	GLOBAL u32 *s = (GLOBAL u32 *)(ws + SPZ_OFF_SEQ);
	u32 r0 = first ? 1 : 0, r1 = first ? 4 : 0, r2 = first ? 8 : 0;

	WORK(nseq);
	for (u32 i = 0; i < nseq; i++) {
		u32 ml = s[2 * i + 1] & ((1u << SPZ_SEQ_OFV_SHIFT) - 1);
		u32 off = (s[2 * i + 1] >> SPZ_SEQ_OFV_SHIFT) - 3, ov, u;
		u32 lit = s[2 * i] != 0;

		/* With literals, codes 1-3 name repeats 1-3; without, 1-2
		 * name repeats 2-3 and 3 names repeat 1 less one. */
		if (lit)
			ov = off == r0 ? 1 : off == r1 ? 2 : off == r2 ? 3 : 0;
		else
			ov = off == r1 ? 1 : off == r2 ? 2 :
			     r0 > 1 && off == r0 - 1 ? 3 : 0;
		/* The decoder's update: repeat 1 stays, repeat 2 swaps with
		 * it, anything else pushes the three down. */
		u = ov == 0 ? 2 : ov - lit;
		if (u >= 2)
			r2 = r1;
		if (u >= 1) {
			r1 = r0;
			r0 = off;
		}
		ov = ov != 0 ? ov : off + 3;
		s[2 * i + 1] = ml | ov << SPZ_SEQ_OFV_SHIFT;
		ws[SPZ_OFF_OFCODE + i] = (u8)spz_highbit(ov);
		ofcnt[spz_highbit(ov)]++;
	}
}

/*
 * One item: the section header at dst[at..], then the state chain: per
 * sequence its states after it (offset, match length, literal length) and
 * per part its bits; then the scan.  Returns the section's end, or 0 when
 * it would pass end; sh[SPZ_SH_SEQAT] and sh[SPZ_SH_SEQBITS] receive where
 * the bitstream starts and its bits, end mark included.
 */
DEVICE_FN u64 spz_seq_plan(GLOBAL u8 *dst, u64 at, u64 end, GLOBAL u8 *ws,
			   u32 nseq, LOCAL const u8 *ft, LOCAL const u32 *fit,
			   LOCAL u64 *sh)
{
	LOCAL const u8 *tll = spz_seq_tab(ft, fit, sh, SPZ_FT_LL);
	LOCAL const u8 *tml = spz_seq_tab(ft, fit, sh, SPZ_FT_ML);
	LOCAL const u8 *tof = spz_seq_tab(ft, fit, sh, SPZ_FT_OF);
	GLOBAL u8 *st = ws + SPZ_OFF_SEQST;
	GLOBAL u32 *pbits = (GLOBAL u32 *)(ws + SPZ_OFF_SEQPARTS);
	u32 sll = 0, sml = 0, sof = 0, nparts, run = 0, mode = 0;
	u64 bits = 0;

	if (at + 4 > end)
		return 0;
	if (nseq < 128) {
		dst[at++] = (u8)nseq;
	} else if (nseq < 0x7F00) {
		dst[at++] = (u8)((nseq >> 8) + 0x80);
		dst[at++] = (u8)nseq;
	} else {
		dst[at++] = 0xFF;
		spz_put_le(dst + at, nseq - 0x7F00, 2);
		at += 2;
	}
	sh[SPZ_SH_SEQAT] = at;
	if (nseq == 0)
		return at;
	/* The modes byte, then the tables' descriptions in the order
	 * literal lengths, offsets, match lengths. */
	for (u32 i = 0; i < 3; i++) {
		u32 k = i == 0 ? SPZ_FT_LL : i == 1 ? SPZ_FT_OF : SPZ_FT_ML;
		u64 m = sh[SPZ_SH_SEQMODE + k];
		u32 len = (m & 3) == SPZ_SEQ_FSE ? (u32)(m >> 8) :
			  (m & 3) == SPZ_SEQ_RLE ? 1 : 0;

		mode |= (u32)(m & 3) << (6 - 2 * i);
		if (at + 1 + len > end)
			return 0;
		WORK(len);
		for (u32 j = 0; j < len; j++)
			dst[at + 1 + j] = (m & 3) == SPZ_SEQ_RLE ? (u8)(m >> 8) :
				ws[SPZ_OFF_SEQDESC + k * SPZ_SEQDESC_CAP + j];
		at += len;
	}
	dst[sh[SPZ_SH_SEQAT]] = (u8)mode;
	at++;
	sh[SPZ_SH_SEQAT] = at;
	nparts = (nseq + SPZ_SEQ_PART - 1) / SPZ_SEQ_PART;
	WORK(2 * nparts);
	for (u32 j = 0; j < nparts; j++)
		pbits[j] = 0;
	for (u32 t = 0; t < nseq; t++) {
		u32 llc = spz_seq_code(ws, nseq, t, SPZ_FT_LL);
		u32 mlc = spz_seq_code(ws, nseq, t, SPZ_FT_ML);
		u32 ofc = spz_seq_code(ws, nseq, t, SPZ_FT_OF);
		u32 nb = spz_ll_xbits(llc) + spz_ml_xbits(mlc) + ofc, v;

		WORK(1);
		if (t == 0) {
			sll = spz_ft_first(tll, llc);
			sml = spz_ft_first(tml, mlc);
			sof = spz_ft_first(tof, ofc);
		} else {
			u32 n;

			sof = spz_ft_step(tof, sof, ofc, &n, &v);
			nb += n;
			sml = spz_ft_step(tml, sml, mlc, &n, &v);
			nb += n;
			sll = spz_ft_step(tll, sll, llc, &n, &v);
			nb += n;
		}
		st[3 * t] = (u8)sof;
		st[3 * t + 1] = (u8)sml;
		st[3 * t + 2] = (u8)sll;
		pbits[t / SPZ_SEQ_PART] += nb;
		bits += nb;
	}
	/* Final states and the end mark belong to the last part. */
	bits += SPZ_FT_LOG(tml) + SPZ_FT_LOG(tof) + SPZ_FT_LOG(tll) + 1;
	if (at + (bits + 7) / 8 > end)
		return 0;
	for (u32 j = 0; j < nparts; j++) {
		u32 nbits = pbits[j];

		pbits[j] = run;
		run += nbits;
	}
	sh[SPZ_SH_SEQBITS] = bits;
	return at + (bits + 7) / 8;
}

/* Field q of sequence t's bits in writing order, or of the tail (t ==
 * nseq): the value and *len. */
DEVICE_FN u32 spz_seq_field(GLOBAL const u8 *ws, u32 t, u32 nseq, u32 q,
			    LOCAL const u8 *tll, LOCAL const u8 *tml,
			    LOCAL const u8 *tof, u32 *len)
{
	GLOBAL const u8 *st = ws + SPZ_OFF_SEQST;
	u32 ll, ml, ofv, x, v = 0;

	if (t == nseq) {
		GLOBAL const u8 *last = st + 3 * (nseq - 1);

		*len = q == 0 ? SPZ_FT_LOG(tml) : q == 1 ? SPZ_FT_LOG(tof) :
		       q == 2 ? SPZ_FT_LOG(tll) : 1;
		return q == 0 ? last[1] : q == 1 ? last[0] : q == 2 ? last[2] : 1;
	}
	spz_seq_get(ws, nseq, t, &ll, &ml, &ofv);
	*len = 0;
	switch (q) {
	case 0: /* transitions: none before the block's last sequence */
		if (t > 0)
			spz_ft_step(tof, st[3 * t - 3],
				    spz_seq_code(ws, nseq, t, SPZ_FT_OF), len,
				    &v);
		return v;
	case 1:
		if (t > 0)
			spz_ft_step(tml, st[3 * t - 2],
				    spz_seq_code(ws, nseq, t, SPZ_FT_ML), len,
				    &v);
		return v;
	case 2:
		if (t > 0)
			spz_ft_step(tll, st[3 * t - 1],
				    spz_seq_code(ws, nseq, t, SPZ_FT_LL), len,
				    &v);
		return v;
	case 3:
		spz_ll_code(ll, len, &x);
		return x;
	case 4:
		spz_ml_code(ml, len, &x);
		return x;
	default:
		*len = spz_highbit(ofv);
		return ofv - (1u << *len);
	}
}

/*
 * Part j of the sequences bitstream, bits [o, e), into out: the bytes
 * starting inside it, completed from the following parts' fields.
 */
DEVICE_FN void spz_seq_part_write(GLOBAL const u8 *ws, u32 nseq, u32 j,
				  u64 o, u64 e, LOCAL const u8 *ft,
				  LOCAL const u32 *fit, LOCAL const u64 *sh,
				  GLOBAL u8 *out)
{
	LOCAL const u8 *tll = spz_seq_tab(ft, fit, sh, SPZ_FT_LL);
	LOCAL const u8 *tml = spz_seq_tab(ft, fit, sh, SPZ_FT_ML);
	LOCAL const u8 *tof = spz_seq_tab(ft, fit, sh, SPZ_FT_OF);
	u32 q = 0, t = j * SPZ_SEQ_PART;
	struct spz_pw w;

	spz_pw_init(&w, o, e);
	if (w.byte * 8 >= e)
		return;
	while (w.byte < w.end) {
		u32 l, v;

		WORK(1);
		if (t > nseq) {
			v = 0;
			l = 8; /* padding after the end mark */
		} else {
			v = spz_seq_field(ws, t, nseq, q, tll, tml, tof,
					  &l);
			if (++q == (t == nseq ? 4u : 6u)) {
				q = 0;
				t++;
			}
		}
		spz_pw_put(&w, out, v, l);
	}
}

#endif
