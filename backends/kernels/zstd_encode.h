/*
 * zstd_encode.h - stage 3 for codec "zstd": each chunk becomes one zstd frame
 * (RFC 8878) in its slot, and sizes[i] its length.  One work-group per
 * chunk (groups stride over the chunks); blocks of a chunk in order.
 *
 * Frame: Single_Segment, Frame_Content_Size always present, no dictionary,
 * the Content_Checksum (XXH64's low 32 bits, zstd_xxh64.h) only when the
 * codec configuration asks for it.  Block: RLE when constant, else compressed when smaller
 * than raw, else raw.  Compressed block: literals raw, RLE or Huffman (1
 * stream below 256 literals, else 4), sequences with the predefined FSE
 * tables and explicit offsets only (Offset_Value = offset + 3, never a
 * repeat code).
 *
 * Work of one block, phases separated by barriers:
 *   1. constant test (all items);
 *   2. match finding, one segment per item (zstd_match.h);
 *   3. literal offsets of the segments (item 0), gathering (one item per
 *      segment);
 *   4. histogram over SPZ_HIST_PARTS fixed parts, then per symbol;
 *   5. Huffman code and tree description (item 0);
 *   6. the Huffman streams: bits per fixed part of 1024 literals, a
 *      scan (item 0), each part's bytes written in place;
 *   7. the sequences: the FSE state chain (item 0), then the bitstream
 *      packed by parts of 512 sequences;
 *   8. raw fallback copy (all items) and the block header.
 * Every partition is fixed (zstd_layout.h), so the output does not depend
 * on the local size.
 *
 * Arguments: those of sp_codec_none with, as for sp_codec_gzip, `scratch`
 * after the buffers (SPZ_SCRATCH_BYTES(SPZ_HLOG_OF_LEVEL(level)) bytes per
 * launched group) and the codec word last: the level in its low 32 bits,
 * bit SPZ_ARG_CHECKSUM_BIT set for a frame checksum.  capacity must be at
 * least SPZ_WORST_CASE(chunk_bytes); the driver checks that at open.
 */
#ifndef SP_KERNEL_ZSTD_ENCODE_H
#define SP_KERNEL_ZSTD_ENCODE_H

#include "kernel-list.h"
#include "zstd_layout.h"
#include "zstd_bits.h"
#include "zstd_huf.h"
#include "zstd_match.h"
#include "zstd_xxh64.h"

/* Shared scalars of one work-group (a local u64 array). */
#define SPZ_SH_OUT 0      /* frame bytes written so far */
#define SPZ_SH_LITMODE 1  /* SPZ_LIT_* */
#define SPZ_SH_NSTREAMS 2
#define SPZ_SH_DESC 3     /* Huffman tree description bytes */
#define SPZ_SH_LITSEC 4   /* literals section bytes */
#define SPZ_SH_NLIT 5
#define SPZ_SH_NSEQ 6
#define SPZ_SH_FAIL 7     /* the block is stored raw */
#define SPZ_SH_SEQEND 8   /* end of the sequences section in the slot */
#define SPZ_SH_SSIZE 9    /* 4 words: Huffman stream sizes */
#define SPZ_SH_SPOS 13    /* 4 words: where each stream goes */
#define SPZ_SH_DIFF 17    /* the block is not constant */
#define SPZ_SH_SBITS 18   /* 4 words: Huffman stream bits */
#define SPZ_SH_SEQAT 22   /* where the sequences bitstream starts */
#define SPZ_SH_SEQBITS 23 /* its bits, end mark included */
#define SPZ_SH_WORDS 24

#define SPZ_LIT_RAW 0
#define SPZ_LIT_RLE 1
#define SPZ_LIT_HUF 2

/* Blocks shorter than this are stored raw: no section headers pay. */
#define SPZ_MIN_COMPRESS 32u

DEVICE_FN u64 spz_min(u64 a, u64 b)
{
	return a < b ? a : b;
}

DEVICE_FN void spz_put_le(GLOBAL u8 *p, u64 v, u32 n)
{
	for (u32 i = 0; i < n; i++)
		p[i] = (u8)(v >> (8 * i));
}

/* Magic, descriptor and content size; returns the header's length. */
DEVICE_FN u64 spz_frame_header(GLOBAL u8 *dst, u64 n, u32 checksum)
{
	/* Frame_Header_Descriptor: FCS flag in bits 7-6, Single_Segment
	 * (bit 5), Content_Checksum_Flag (bit 2); no dictionary. */
	u8 cs = checksum ? 0x04 : 0;

	spz_put_le(dst, 0xFD2FB528u, 4);
	if (n < 256) {
		dst[4] = 0x20 | cs;
		dst[5] = (u8)n;
		return 6;
	}
	if (n < 65536 + 256) {
		dst[4] = 0x60 | cs;
		spz_put_le(dst + 5, n - 256, 2);
		return 7;
	}
	if (n <= (u64)0xFFFFFFFFu) {
		dst[4] = 0xA0 | cs;
		spz_put_le(dst + 5, n, 4);
		return 9;
	}
	dst[4] = 0xE0 | cs;
	spz_put_le(dst + 5, n, 8);
	return 13;
}

/* Block_Type: 0 raw, 1 RLE, 2 compressed. */
DEVICE_FN void spz_block_header(GLOBAL u8 *dst, u32 last, u32 type, u64 size)
{
	spz_put_le(dst, (u64)last | (u64)type << 1 | size << 3, 3);
}

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
 * Item 0: choose how to store the block's nlit literals (counts in freq)
 * within budget bytes; builds the Huffman code when it is chosen.
 */
DEVICE_FN void spz_lit_plan(u32 nlit, u32 budget, GLOBAL u8 *ws,
			    LOCAL const u32 *freq, LOCAL u8 *hlen,
			    LOCAL u16 *hcode, LOCAL u8 *ft, LOCAL u64 *sh)
{
	u32 distinct = 0, maxsym = 0, mode = SPZ_LIT_RAW, ns = 1, desc = 0;
	u32 size = spz_lit_rawhdr_len(nlit) + nlit;

	WORK(256);
	for (u32 s = 0; s < 256; s++)
		if (freq[s] != 0) {
			distinct++;
			maxsym = s;
		}
	if (distinct == 1) {
		mode = SPZ_LIT_RLE;
		size = spz_lit_rawhdr_len(nlit) + 1;
	} else if (distinct > 1 && nlit >= 16) {
		u32 maxbits = spz_huf_build(freq, hlen, hcode,
					    (GLOBAL u32 *)(ws + SPZ_OFF_HUF));
		u64 bits = 0;

		desc = spz_huf_describe(hlen, maxbits, maxsym,
					ws + SPZ_OFF_DESC, ft);
		WORK(256);
		for (u32 s = 0; s < 256; s++)
			bits += (u64)freq[s] * hlen[s];
		if (desc != 0) {
			u32 n4 = nlit < 256 ? 1 : 4;
			/* Each stream adds its end mark and padding. */
			u32 upper = desc + (n4 == 4 ? 6 : 0) +
				    (u32)((bits + 8 * n4 + 7) / 8);
			u32 total = spz_lit_hufhdr_len(n4, nlit, upper) + upper;

			if (total < size) {
				mode = SPZ_LIT_HUF;
				size = total;
				ns = n4;
			}
		}
	}
	sh[SPZ_SH_LITMODE] = mode;
	sh[SPZ_SH_NSTREAMS] = ns;
	sh[SPZ_SH_DESC] = desc;
	sh[SPZ_SH_FAIL] = size > budget;
}

/*
 * Byte histogram of p[0..n): this item's share of SPZ_HIST_PARTS fixed
 * parts, counted into global scratch; after a barrier spz_hist_sum adds
 * the parts per symbol, so counts are exact whatever the local size.
 * Neither contains a barrier: PoCL mishandles barriers inside functions
 * it does not inline, and these are called from two places.
 */
DEVICE_FN void spz_hist_parts(GLOBAL const u8 *p, u32 n, GLOBAL u32 *hist)
{
	u32 plen = (n + SPZ_HIST_PARTS - 1) / SPZ_HIST_PARTS;

	for (u32 k = (u32)LOCAL_ID(); k < SPZ_HIST_PARTS;
	     k += (u32)LOCAL_SIZE()) {
		GLOBAL u32 *h = hist + 256 * k;
		u32 a = k * plen, b = (u32)spz_min((u64)a + plen, n);

		WORK(256 + (b > a ? b - a : 0));
		for (u32 s = 0; s < 256; s++)
			h[s] = 0;
		for (u32 i = a; i < b; i++)
			h[p[i]]++;
	}
}

DEVICE_FN void spz_hist_sum(GLOBAL const u32 *hist, LOCAL u32 *freq)
{
	for (u32 s = (u32)LOCAL_ID(); s < 256; s += (u32)LOCAL_SIZE()) {
		u32 sum = 0;

		WORK(SPZ_HIST_PARTS);
		for (u32 k = 0; k < SPZ_HIST_PARTS; k++)
			sum += hist[256 * k + s];
		freq[s] = sum;
	}
}

/*
 * The literals section at dst[at..): histogram, plan, streams.  All items
 * call it and meet every barrier (uniform control flow, no early return);
 * `active` 0 only keeps the barriers company.  Sets SPZ_SH_LITSEC, or
 * SPZ_SH_FAIL when no form fits budget.
 */
DEVICE_FN void spz_literals(u32 active, GLOBAL u8 *dst, u64 at, u32 budget,
			    GLOBAL u8 *ws, u32 nlit, LOCAL u64 *sh,
			    LOCAL u32 *freq, LOCAL u8 *hlen, LOCAL u16 *hcode,
			    LOCAL u8 *ft)
{
	GLOBAL const u8 *lits = ws + SPZ_OFF_LITS;
	GLOBAL u32 *hist = (GLOBAL u32 *)(ws + SPZ_OFF_HIST);
	GLOBAL u32 *pbits = (GLOBAL u32 *)(ws + SPZ_OFF_PARTS);
	u32 mode, ns, huf, per, pps;

	PHASE("lit-hist");
	spz_hist_parts(lits, active ? nlit : 0, hist);
	BARRIER();
	spz_hist_sum(hist, freq);
	BARRIER();
	PHASE("huf-build");
	if (LOCAL_ID() == 0) {
		if (active)
			spz_lit_plan(nlit, budget, ws, freq, hlen, hcode, ft,
				     sh);
		else
			sh[SPZ_SH_FAIL] = 1;
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
			spz_lit_hufhdr(dst + at, ns, nlit, csize);
			WORK(desc);
			for (u32 i = 0; i < desc; i++)
				dst[at + hl + i] = ws[SPZ_OFF_DESC + i];
			pos = at + hl + desc;
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
			spz_lit_rawhdr(dst + at, mode, nlit);
			sh[SPZ_SH_LITSEC] = hl + (mode == SPZ_LIT_RLE ? 1 : nlit);
			if (mode == SPZ_LIT_RLE)
				dst[at + hl] = lits[0];
		}
		for (u32 i = (u32)LOCAL_ID(); mode == SPZ_LIT_RAW && i < nlit;
		     i += (u32)LOCAL_SIZE()) {
			WORK(1);
			dst[at + hl + i] = lits[i];
		}
	}
	BARRIER();
}

/*
 * The sequences section.  The bitstream holds, in writing order, the
 * sequences from the last to the first, each as: the FSE state
 * transitions for its offset, match-length and literal-length codes
 * (none for the last sequence, whose codes pick the starting states),
 * then its extra bits for literal length, match length, offset; after the
 * first sequence the three final states (match length, offset, literal
 * length) and the end mark.  The decoder reads it backwards.
 *
 * The FSE states form a chain, so item 0 walks it once (spz_seq_plan),
 * keeping each sequence's states and the bit count of each part of
 * SPZ_SEQ_PART sequences; a scan places the parts, and every part then
 * writes the bytes that start inside its bits (spz_seq_part_write), as
 * the Huffman streams do.
 */
#define SPZ_SEQ_PART 512u

/* Sequence t in writing order (0: the block's last).  A cursor over the
 * segments' lists, moved by one per call in either direction. */
struct spz_seqcur {
	u32 seg;     /* segment of the current sequence */
	u32 k;       /* its index in the segment */
	u32 t;       /* its writing-order index */
};

DEVICE_FN void spz_seq_at(GLOBAL const u8 *ws, u32 nseg, u32 nseq, u32 t,
			  struct spz_seqcur *c)
{
	u32 i = nseq - 1 - t, s = 0;

	for (;;) {
		GLOBAL const u32 *meta =
			(GLOBAL const u32 *)(ws + SPZ_OFF_SEGMETA + 64 * s);

		WORK(1);
		if (i < meta[SPZ_SM_NSEQ] || s + 1 == nseg)
			break;
		i -= meta[SPZ_SM_NSEQ];
		s++;
	}
	c->seg = s;
	c->k = i;
	c->t = t;
}

/* Step to writing-order index t + 1 (one sequence earlier in the block). */
DEVICE_FN void spz_seq_next(GLOBAL const u8 *ws, struct spz_seqcur *c)
{
	c->t++;
	while (c->k == 0 && c->seg > 0) {
		c->seg--;
		c->k = ((GLOBAL const u32 *)(ws + SPZ_OFF_SEGMETA +
					     64 * c->seg))[SPZ_SM_NSEQ];
	}
	c->k--;
}

/* The values of the cursor's sequence: literal length (with the literals
 * pending from earlier segments), match length, offset value. */
DEVICE_FN void spz_seq_get(GLOBAL const u8 *ws, const struct spz_seqcur *c,
			   u32 *ll, u32 *ml, u32 *ofv)
{
	GLOBAL const u32 *meta =
		(GLOBAL const u32 *)(ws + SPZ_OFF_SEGMETA + 64 * c->seg);
	GLOBAL const u32 *seq = (GLOBAL const u32 *)(ws + SPZ_OFF_SEQS) +
				3 * SPZ_SEQ_PER_SEG * c->seg + 3 * c->k;

	*ll = seq[0] + (c->k == 0 ? meta[SPZ_SM_CARRY] : 0);
	*ml = seq[1];
	*ofv = seq[2] + 3;
}

/*
 * Item 0: walk the state chain; store per sequence its states after it
 * (offset, match length, literal length) and per part its bits; then the
 * scan.  Writes the section header at dst[at..].  Returns the section's
 * end, or 0 when it would pass end.
 */
DEVICE_FN u64 spz_seq_plan(GLOBAL u8 *dst, u64 at, u64 end, GLOBAL u8 *ws,
			   u32 nseg, u32 nseq, LOCAL const u8 *ft,
			   LOCAL u64 *sh)
{
	LOCAL const u8 *tll = ft + SPZ_FT_LL * SPZ_FT_BYTES;
	LOCAL const u8 *tml = ft + SPZ_FT_ML * SPZ_FT_BYTES;
	LOCAL const u8 *tof = ft + SPZ_FT_OF * SPZ_FT_BYTES;
	GLOBAL u8 *st = ws + SPZ_OFF_SEQST;
	GLOBAL u32 *pbits = (GLOBAL u32 *)(ws + SPZ_OFF_SEQPARTS);
	struct spz_seqcur c;
	u32 sll = 0, sml = 0, sof = 0, nparts, run = 0;
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
	sh[SPZ_SH_SEQAT] = at + 1;
	if (nseq == 0)
		return at;
	dst[at++] = 0; /* all three symbol types in Predefined_Mode */
	nparts = (nseq + SPZ_SEQ_PART - 1) / SPZ_SEQ_PART;
	WORK(2 * nparts);
	for (u32 j = 0; j < nparts; j++)
		pbits[j] = 0;
	spz_seq_at(ws, nseg, nseq, 0, &c);
	for (u32 t = 0; t < nseq; t++) {
		u32 ll, ml, ofv, llb, llx, mlb, mlx, llc, mlc, ofc, v, nb;

		WORK(1);
		if (t > 0)
			spz_seq_next(ws, &c);
		spz_seq_get(ws, &c, &ll, &ml, &ofv);
		llc = spz_ll_code(ll, &llb, &llx);
		mlc = spz_ml_code(ml, &mlb, &mlx);
		ofc = spz_highbit(ofv);
		nb = llb + mlb + ofc;
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
DEVICE_FN u32 spz_seq_field(GLOBAL const u8 *ws, const struct spz_seqcur *c,
			    u32 nseq, u32 q, LOCAL const u8 *ft, u32 *len)
{
	LOCAL const u8 *tll = ft + SPZ_FT_LL * SPZ_FT_BYTES;
	LOCAL const u8 *tml = ft + SPZ_FT_ML * SPZ_FT_BYTES;
	LOCAL const u8 *tof = ft + SPZ_FT_OF * SPZ_FT_BYTES;
	GLOBAL const u8 *st = ws + SPZ_OFF_SEQST;
	u32 ll, ml, ofv, b, x, v = 0, t = c->t;

	if (t == nseq) {
		GLOBAL const u8 *last = st + 3 * (nseq - 1);

		*len = q == 0 ? SPZ_FT_LOG(tml) : q == 1 ? SPZ_FT_LOG(tof) :
		       q == 2 ? SPZ_FT_LOG(tll) : 1;
		return q == 0 ? last[1] : q == 1 ? last[0] : q == 2 ? last[2] : 1;
	}
	spz_seq_get(ws, c, &ll, &ml, &ofv);
	*len = 0;
	switch (q) {
	case 0: /* transitions: none before the block's last sequence */
		if (t > 0)
			spz_ft_step(tof, st[3 * t - 3], spz_highbit(ofv), len,
				    &v);
		return v;
	case 1:
		if (t > 0)
			spz_ft_step(tml, st[3 * t - 2],
				    spz_ml_code(ml, &b, &x), len, &v);
		return v;
	case 2:
		if (t > 0)
			spz_ft_step(tll, st[3 * t - 1],
				    spz_ll_code(ll, &b, &x), len, &v);
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
DEVICE_FN void spz_seq_part_write(GLOBAL const u8 *ws, u32 nseg, u32 nseq,
				  u32 j, u64 o, u64 e, LOCAL const u8 *ft,
				  GLOBAL u8 *out)
{
	u32 q = 0;
	struct spz_seqcur c;
	struct spz_pw w;

	spz_pw_init(&w, o, e);
	if (w.byte * 8 >= e)
		return;
	spz_seq_at(ws, nseg, nseq, j * SPZ_SEQ_PART, &c);
	while (w.byte < w.end) {
		u32 l, v;

		WORK(1);
		if (c.t > nseq || (c.t == nseq && q == 4)) {
			v = 0;
			l = 8; /* padding after the end mark */
		} else {
			v = spz_seq_field(ws, &c, nseq, q, ft, &l);
			if (++q == (c.t == nseq ? 4u : 6u)) {
				q = 0;
				if (c.t + 1 < nseq)
					spz_seq_next(ws, &c);
				else
					c.t++;
			}
		}
		if (c.t > nseq)
			q = 4; /* stay on the padding */
		spz_pw_put(&w, out, v, l);
	}
}

/*
 * One block of bl bytes at src[bs..]: its frame bytes after sh[OUT].  All
 * items meet every barrier whatever the block becomes; the kind of block
 * only gates work.
 */
DEVICE_FN void spz_block(GLOBAL const u8 *src, u64 clen, u64 bs, u32 bl,
			 u32 last, GLOBAL u8 *dst, GLOBAL u8 *ws,
			 struct spz_params prm, LOCAL u64 *red, LOCAL u64 *sh,
			 LOCAL u32 *freq, LOCAL u16 *lcost, LOCAL u8 *hlen,
			 LOCAL u16 *hcode, LOCAL u8 *ft)
{
	u64 out = sh[SPZ_SH_OUT], diff = 0;
	u32 nseg = (bl + SPZ_SEG - 1) / SPZ_SEG, rle, comp, raw;

	/* Constant block?  Each item's verdict in red[], folded by item 0:
	 * inline rather than a collective, because functions holding
	 * barriers must be inlined for PoCL and a collective shared by
	 * several kernels may not be. */
	PHASE("constant");
	for (u64 i = LOCAL_ID(); i < bl; i += LOCAL_SIZE()) {
		WORK(1);
		diff |= src[bs + i] != src[bs];
	}
	red[LOCAL_ID()] = diff;
	BARRIER();
	if (LOCAL_ID() == 0) {
		WORK(LOCAL_SIZE());
		for (u64 k = 1; k < LOCAL_SIZE(); k++)
			diff |= red[k];
		sh[SPZ_SH_DIFF] = diff;
	}
	BARRIER();
	diff = sh[SPZ_SH_DIFF];
	rle = bl >= 2 && diff == 0;
	comp = !rle && bl >= SPZ_MIN_COMPRESS;
	/* Literal costs for the match finder, from the block's bytes. */
	PHASE("hist");
	spz_hist_parts(src + bs, comp ? bl : 0,
		       (GLOBAL u32 *)(ws + SPZ_OFF_HIST));
	BARRIER();
	spz_hist_sum((GLOBAL u32 *)(ws + SPZ_OFF_HIST), freq);
	BARRIER();
	for (u32 s = (u32)LOCAL_ID(); s < 256; s += (u32)LOCAL_SIZE()) {
		WORK(1);
		lcost[s] = (u16)spz_lit_cost(freq[s], bl);
	}
	BARRIER();
	PHASE("match");
	for (u32 s = (u32)LOCAL_ID(); comp && s < nseg; s += (u32)LOCAL_SIZE())
		spz_parse(src, clen, bs + (u64)s * SPZ_SEG,
			  bs + spz_min((u64)(s + 1) * SPZ_SEG, bl), prm, lcost,
			  (GLOBAL u32 *)(ws + SPZ_OFF_TABLES) +
				  ((u64)s << prm.hlog),
			  (GLOBAL u32 *)(ws + SPZ_OFF_SEQS) +
				  3 * SPZ_SEQ_PER_SEG * s,
			  (GLOBAL u32 *)(ws + SPZ_OFF_SEGMETA + 64 * s));
	BARRIER();
	PHASE("lit-offsets");
	if (LOCAL_ID() == 0) {
		u32 lits = 0, seqs = 0, carry = 0;

		for (u32 s = 0; comp && s < nseg; s++) {
			GLOBAL u32 *meta =
				(GLOBAL u32 *)(ws + SPZ_OFF_SEGMETA + 64 * s);

			WORK(1);
			meta[SPZ_SM_LITOFF] = lits;
			meta[SPZ_SM_CARRY] = carry;
			lits += meta[SPZ_SM_NLIT];
			seqs += meta[SPZ_SM_NSEQ];
			carry = meta[SPZ_SM_TAIL] +
				(meta[SPZ_SM_NSEQ] ? 0 : carry);
		}
		sh[SPZ_SH_NLIT] = lits;
		sh[SPZ_SH_NSEQ] = seqs;
	}
	BARRIER();
	PHASE("lit-gather");
	for (u32 s = (u32)LOCAL_ID(); comp && s < nseg; s += (u32)LOCAL_SIZE()) {
		GLOBAL const u32 *meta =
			(GLOBAL const u32 *)(ws + SPZ_OFF_SEGMETA + 64 * s);
		GLOBAL const u32 *seq = (GLOBAL const u32 *)(ws + SPZ_OFF_SEQS) +
					3 * SPZ_SEQ_PER_SEG * s;
		GLOBAL u8 *lits = ws + SPZ_OFF_LITS + meta[SPZ_SM_LITOFF];
		u64 pos = bs + (u64)s * SPZ_SEG;
		u64 end = bs + spz_min((u64)(s + 1) * SPZ_SEG, bl);
		u32 o = 0;

		for (u32 k = 0; k < meta[SPZ_SM_NSEQ]; k++) {
			WORK(1 + seq[3 * k]);
			for (u32 i = 0; i < seq[3 * k]; i++)
				lits[o++] = src[pos + i];
			pos += seq[3 * k] + seq[3 * k + 1];
		}
		WORK(end > pos ? end - pos : 0);
		while (pos < end)
			lits[o++] = src[pos++];
	}
	BARRIER();
	/* The compressed content must stay below bl bytes; leave at least
	 * one byte for the sequences header. */
	spz_literals(comp, dst, out + 3, bl >= 2 ? bl - 2 : 0, ws,
		     (u32)sh[SPZ_SH_NLIT], sh, freq, hlen, hcode, ft);
	PHASE("seq-plan");
	if (LOCAL_ID() == 0 && comp && sh[SPZ_SH_FAIL] == 0) {
		u64 end = spz_seq_plan(dst, out + 3 + sh[SPZ_SH_LITSEC],
				       out + 3 + bl - 1, ws, nseg,
				       (u32)sh[SPZ_SH_NSEQ], ft, sh);

		sh[SPZ_SH_SEQEND] = end;
		sh[SPZ_SH_FAIL] = end == 0;
	}
	BARRIER();
	PHASE("seq-write");
	if (comp && sh[SPZ_SH_FAIL] == 0 && sh[SPZ_SH_NSEQ] != 0) {
		u32 nseq = (u32)sh[SPZ_SH_NSEQ];
		u32 nparts = (nseq + SPZ_SEQ_PART - 1) / SPZ_SEQ_PART;
		GLOBAL const u32 *pbits =
			(GLOBAL const u32 *)(ws + SPZ_OFF_SEQPARTS);

		for (u32 j = (u32)LOCAL_ID(); j < nparts;
		     j += (u32)LOCAL_SIZE())
			spz_seq_part_write(ws, nseg, nseq, j, pbits[j],
					   j + 1 < nparts ? pbits[j + 1]
							  : sh[SPZ_SH_SEQBITS],
					   ft, dst + sh[SPZ_SH_SEQAT]);
	}
	BARRIER();
	PHASE("raw");
	raw = !rle && sh[SPZ_SH_FAIL] != 0;
	for (u64 i = LOCAL_ID(); raw && i < bl; i += LOCAL_SIZE()) {
		WORK(1);
		dst[out + 3 + i] = src[bs + i];
	}
	if (LOCAL_ID() == 0) {
		if (rle) {
			spz_block_header(dst + out, last, 1, bl);
			dst[out + 3] = src[bs];
			sh[SPZ_SH_OUT] = out + 4;
		} else if (raw) {
			spz_block_header(dst + out, last, 0, bl);
			sh[SPZ_SH_OUT] = out + 3 + bl;
		} else {
			u64 end = sh[SPZ_SH_SEQEND];

			spz_block_header(dst + out, last, 2, end - out - 3);
			sh[SPZ_SH_OUT] = end;
		}
	}
	BARRIER();
}

/*
 * The frame of one chunk, with the content checksum when `checksum`; all
 * items of the group.  red must hold at least 4 words.
 */
DEVICE_FN void spz_chunk_cs(GLOBAL const u8 *src, u64 clen, GLOBAL u8 *dst,
			    GLOBAL u8 *ws, struct spz_params prm, u32 checksum,
			    LOCAL u64 *red, LOCAL u64 *sh, LOCAL u32 *freq,
			    LOCAL u16 *lcost, LOCAL u8 *hlen, LOCAL u16 *hcode,
			    LOCAL u8 *ft, GLOBAL u64 *size)
{
	u64 nblocks = clen == 0 ? 1 : (clen + SPZ_BLOCK - 1) / SPZ_BLOCK;

	if (LOCAL_ID() == 0)
		sh[SPZ_SH_OUT] = spz_frame_header(dst, clen, checksum);
	BARRIER();
	for (u64 b = 0; b < nblocks; b++) {
		u64 bs = b * SPZ_BLOCK;

		spz_block(src, clen, bs, (u32)spz_min(SPZ_BLOCK, clen - bs),
			  b + 1 == nblocks, dst, ws, prm, red, sh, freq, lcost,
			  hlen, hcode, ft);
	}
	/* XXH64's four lanes, one per item, then the tail and the merge
	 * (zstd_xxh64.h); the frame ends with the digest's low 4 bytes. */
	PHASE("checksum");
	for (u32 k = (u32)LOCAL_ID(); checksum && k < 4;
	     k += (u32)LOCAL_SIZE())
		red[k] = clen >= 32 ? spz_xxh64_lane(src, clen, k) : 0;
	BARRIER();
	if (LOCAL_ID() == 0) {
		u64 out = sh[SPZ_SH_OUT];

		if (checksum) {
			spz_put_le(dst + out,
				   spz_xxh64_finish(src, clen, red), 4);
			out += 4;
		}
		*size = out;
	}
	BARRIER();
}

/* The frame of one chunk without a checksum (the interface other
 * encoders, blosc's, call per block). */
DEVICE_FN void spz_chunk(GLOBAL const u8 *src, u64 clen, GLOBAL u8 *dst,
			 GLOBAL u8 *ws, struct spz_params prm,
			 LOCAL u64 *red, LOCAL u64 *sh, LOCAL u32 *freq,
			 LOCAL u16 *lcost, LOCAL u8 *hlen, LOCAL u16 *hcode,
			 LOCAL u8 *ft, GLOBAL u64 *size)
{
	spz_chunk_cs(src, clen, dst, ws, prm, 0, red, sh, freq, lcost, hlen,
		     hcode, ft, size);
}

/* The work-group memory of one stream's encoder, declared by each kernel
 * that runs it (zstd, blosc): local arrays live in kernel scope. */
#define SPZ_LOCAL_ARRAYS()                                                    \
	LOCAL_ARRAY(u64, red, SP_WG_MAX);                                     \
	LOCAL_ARRAY(u64, sh, SPZ_SH_WORDS);                                   \
	LOCAL_ARRAY(u32, freq, 256);                                          \
	LOCAL_ARRAY(u16, lcost, 256);                                         \
	LOCAL_ARRAY(u8, hlen, 256);                                           \
	LOCAL_ARRAY(u16, hcode, 256);                                         \
	LOCAL_ARRAY(u32, ft_area, SPZ_FT_AREA_WORDS);                         \
	LOCAL u8 *ft = (LOCAL u8 *)ft_area

SP_ENCODER_ENTRY(sp_codec_zstd)
{
	SPZ_LOCAL_ARRAYS();
	struct spz_params prm = spz_params_of((i64)(level & 0xFFFFFFFFu));
	u32 checksum = (u32)(level >> SPZ_ARG_CHECKSUM_BIT) & 1;
	GLOBAL u8 *ws = scratch + GROUP_ID() * (u64)SPZ_SCRATCH_BYTES(prm.hlog);

	PHASE("setup");
	if (LOCAL_ID() == 0)
		spz_ft_predefined(ft);
	BARRIER();
	for (u64 j = GROUP_ID(); j < n; j += NUM_GROUPS()) {
		UNIT();
		spz_chunk_cs(pool + j * chunk_bytes, chunk_bytes,
			     slots + j * capacity, ws, prm, checksum, red, sh,
			     freq, lcost, hlen, hcode, ft, sizes + j);
	}
}

#endif
