/*
 * zstd_bits.h - bit-level pieces of the zstd encoder (RFC 8878): a forward
 * little-endian bit writer into global memory, FSE encoding tables built
 * from a normalized distribution (section 4.1.1), the FSE table
 * description writer (4.1.1, used for Huffman weights) and the
 * literal-length / match-length / offset code mappings (3.1.1.3.2.1).
 *
 * Everything here is one work-item's private work; the callers decide
 * which item runs it.
 */
#ifndef SP_KERNEL_ZSTD_BITS_H
#define SP_KERNEL_ZSTD_BITS_H

DEVICE_FN u64 spz_min(u64 a, u64 b)
{
	return a < b ? a : b;
}

/* The n low bytes of v at p, little-endian. */
DEVICE_FN void spz_put_le(GLOBAL u8 *p, u64 v, u32 n)
{
	for (u32 i = 0; i < n; i++)
		p[i] = (u8)(v >> (8 * i));
}

/* ----------------------------------------------------------- bit writer */

/*
 * Bits go to dst[pos..cap) least significant first.  A write past cap is
 * dropped and sets `over`: callers size cap as the most they accept and
 * give up on the representation when over is set.
 */
struct spz_bw {
	u64 acc;
	u32 nacc;
	u32 over;
	u64 pos;
	u64 cap;
};

DEVICE_FN void spz_bw_init(struct spz_bw *b, u64 pos, u64 cap)
{
	b->acc = 0;
	b->nacc = 0;
	b->over = 0;
	b->pos = pos;
	b->cap = cap;
}

/* Append the nb (<= 32) low bits of v. */
DEVICE_FN void spz_bw_add(struct spz_bw *b, GLOBAL u8 *dst, u64 v, u32 nb)
{
	if (nb == 0)
		return;
	b->acc |= (v & ((((u64)1) << nb) - 1)) << b->nacc;
	b->nacc += nb;
	while (b->nacc >= 8) {
		WORK(1);
		if (b->pos < b->cap)
			dst[b->pos] = (u8)b->acc;
		else
			b->over = 1;
		b->pos++;
		b->acc >>= 8;
		b->nacc -= 8;
	}
}

/* Flush a partial byte, zero-padded; returns the end position. */
DEVICE_FN u64 spz_bw_pad(struct spz_bw *b, GLOBAL u8 *dst)
{
	if (b->nacc > 0)
		spz_bw_add(b, dst, 0, 8 - b->nacc);
	return b->pos;
}

/* End a backward-read bitstream: the 1-bit end mark, then padding. */
DEVICE_FN u64 spz_bw_close(struct spz_bw *b, GLOBAL u8 *dst)
{
	spz_bw_add(b, dst, 1, 1);
	return spz_bw_pad(b, dst);
}

/*
 * A part writer: a bitstream cut in parts written in parallel, each part
 * (bits [o, e)) writing the bytes that start inside it.  The owner is fed
 * the stream's fields in order from bit o on, and past e until its last
 * byte is complete; bits below its first byte belong to the previous part
 * and are skipped, so no byte has two writers.  Used for the Huffman
 * literals (spz_huf_part_write) and the sequences (spz_seq_part_write).
 */
struct spz_pw {
	u64 at;      /* stream bit position of the next field */
	u64 byte;    /* next byte to write */
	u64 end;     /* one past the last byte owned */
	u64 acc;
	u32 nacc;
};

DEVICE_FN void spz_pw_init(struct spz_pw *w, u64 o, u64 e)
{
	w->at = o;
	w->byte = (o + 7) / 8;
	w->end = (e + 7) / 8;
	w->acc = 0;
	w->nacc = 0;
}

/* Feed the l (<= 32) low bits of v, the field at bit w->at. */
DEVICE_FN void spz_pw_put(struct spz_pw *w, GLOBAL u8 *out, u32 v, u32 l)
{
	if (w->at + l <= w->byte * 8) {
		w->at += l;
		return;
	}
	if (w->at < w->byte * 8) {
		u32 drop = (u32)(w->byte * 8 - w->at);

		v >>= drop;
		l -= drop;
		w->at += drop;
	}
	w->acc |= (u64)v << w->nacc;
	w->nacc += l;
	w->at += l;
	while (w->nacc >= 8 && w->byte < w->end) {
		WORK(1);
		out[w->byte++] = (u8)w->acc;
		w->acc >>= 8;
		w->nacc -= 8;
	}
}

/* floor(log2(v)), 0 for v <= 1. */
DEVICE_FN u32 spz_highbit(u64 v)
{
	return v > 1 ? 63u - CLZ64(v) : 0u;
}

/* ---------------------------------------------------------- FSE tables */

/*
 * One FSE table in local memory as the encoder needs it: for symbol s,
 * its cnt[s] states (cells of the decoding table holding s) in increasing
 * order at states[start[s] ..].  The k-th of them is the state whose
 * next-state counter is cnt[s] + k (section 4.1.1, "sort all occurrences
 * of each symbol in state order").
 */
#define SPZ_FT_SYMS 64u
#define SPZ_FT_BYTES (4u + 3u * SPZ_FT_SYMS)
#define SPZ_FT_LOG(t) ((t)[0])
#define SPZ_FT_START(t) ((t) + 4)
#define SPZ_FT_CNT(t) ((t) + 4 + SPZ_FT_SYMS)
#define SPZ_FT_STATES(t) ((t) + 4 + 2 * SPZ_FT_SYMS)

/* Tables kept by the zstd kernel, each SPZ_FT_BYTES apart. */
#define SPZ_FT_LL 0
#define SPZ_FT_ML 1
#define SPZ_FT_OF 2
#define SPZ_FT_HW 3   /* Huffman weights, rebuilt per block */
#define SPZ_FT_COUNT 4

/*
 * After the tables, the building item's scratch: a normalised
 * distribution of up to SPZ_FT_SYMS symbols, then the 64 cells of a
 * symbol spread.  In local memory because indexed private arrays would
 * live on a GPU's stack (t/cuda-resources.sh).  A kernel declares the
 * whole area as SPZ_FT_AREA_WORDS words: the i32 view needs alignment.
 */
#define SPZ_FT_NORM(ft) ((LOCAL i32 *)((ft) + SPZ_FT_COUNT * SPZ_FT_BYTES))
#define SPZ_FT_CELLS(ft) ((ft) + SPZ_FT_COUNT * SPZ_FT_BYTES + 4 * SPZ_FT_SYMS)
#define SPZ_FT_AREA_WORDS ((SPZ_FT_COUNT * SPZ_FT_BYTES) / 4 + SPZ_FT_SYMS + 16)

/*
 * Build from norm[0..nsym) (sum 1 << log, -1 meaning "less than 1") the
 * decoding table's symbol spread, then the per-symbol state lists.
 * cells is scratch of 1 << log bytes.  Out of line: see prelude-cuda.h.
 */
DEVICE_FN_OUTLINED void spz_ft_build(LOCAL u8 *t, LOCAL const i32 *norm,
				     u32 nsym, u32 log, LOCAL u8 *cells)
{
	u32 size = 1u << log, high = size - 1, pos = 0;
	u32 step = (size >> 1) + (size >> 3) + 3, at = 0;

	WORK(nsym + 2 * size + SPZ_FT_SYMS);
	SPZ_FT_LOG(t) = (u8)log;
	for (u32 s = 0; s < nsym; s++)
		if (norm[s] == -1)
			cells[high--] = (u8)s;
	for (u32 s = 0; s < nsym; s++)
		for (i32 k = 0; k < norm[s]; k++) {
			cells[pos] = (u8)s;
			do
				pos = (pos + step) & (size - 1);
			while (pos > high);
		}
	for (u32 s = 0; s < SPZ_FT_SYMS; s++) {
		SPZ_FT_START(t)[s] = (u8)at;
		SPZ_FT_CNT(t)[s] = 0;
		if (s < nsym && norm[s] != 0)
			at += norm[s] < 0 ? 1u : (u32)norm[s];
	}
	/* The cells in increasing order, each appended to its symbol's
	 * list; CNT counts them in and ends as the symbol's count. */
	for (u32 u = 0; u < size; u++) {
		u32 s = cells[u];

		SPZ_FT_STATES(t)[SPZ_FT_START(t)[s] + SPZ_FT_CNT(t)[s]++] =
			(u8)u;
	}
}

/*
 * A distribution of 1 << log cells from the counts cnt[0..nsym) of total
 * occurrences: each symbol present gets its share rounded down but at
 * least one cell; the cells that rounding up to one took are taken back
 * from the symbols holding the most, one at a time, and whatever is left
 * goes to the most frequent symbol.  No "less than one" (-1) cells: the
 * tables' users need none.  1 << log must exceed the symbols present.
 */
DEVICE_FN void spz_fse_normalize(LOCAL i32 *norm, LOCAL const u32 *cnt,
				 u32 nsym, u32 total, u32 log)
{
	i32 size = 1 << log, sum = 0;
	u32 top = 0;

	WORK(nsym);
	for (u32 s = 0; s < nsym; s++) {
		norm[s] = 0;
		if (cnt[s] != 0) {
			norm[s] = (i32)(((u64)cnt[s] << log) / total);
			if (norm[s] < 1)
				norm[s] = 1;
			if (cnt[s] > cnt[top])
				top = s;
		}
		sum += norm[s];
	}
	while (sum > size) {
		u32 big = top;

		WORK(nsym);
		for (u32 s = 0; s < nsym; s++)
			if (norm[s] > norm[big])
				big = s;
		norm[big]--;
		sum--;
	}
	norm[top] += size - sum;
}

/* A starting state for s: its first cell, whose update reads >= 1 bit
 * unless s holds the whole table. */
DEVICE_FN u32 spz_ft_first(LOCAL const u8 *t, u32 s)
{
	return SPZ_FT_STATES(t)[SPZ_FT_START(t)[s]];
}

/*
 * Encoding s from `state` (the state that decodes the following symbol):
 * the *nb bits *val the decoder reads to return to it, and the state of s
 * it leaves from, returned.
 */
DEVICE_FN u32 spz_ft_step(LOCAL const u8 *t, u32 state, u32 s, u32 *nb,
			  u32 *val)
{
	u32 log = SPZ_FT_LOG(t), c = SPZ_FT_CNT(t)[s];
	u32 v = state + (1u << log);
	u32 n = log - spz_highbit(c), x = v >> n;

	if (x < c) {
		n--;
		x = v >> n;
	}
	*nb = n;
	*val = v & ((1u << n) - 1);
	return SPZ_FT_STATES(t)[SPZ_FT_START(t)[s] + (x - c)];
}

/* The same, the bits appended to b. */
DEVICE_FN u32 spz_ft_encode(LOCAL const u8 *t, struct spz_bw *b,
			    GLOBAL u8 *dst, u32 state, u32 s)
{
	u32 nb, val, next = spz_ft_step(t, state, s, &nb, &val);

	spz_bw_add(b, dst, val, nb);
	return next;
}

/*
 * The FSE table description (section 4.1.1) of norm[0..nsym), no
 * probability below 1 used.  Written byte-aligned through b.
 */
DEVICE_FN void spz_ncount_write(struct spz_bw *b, GLOBAL u8 *dst,
				LOCAL const i32 *norm, u32 nsym, u32 log)
{
	i32 remaining = (1 << log) + 1, threshold = 1 << log;
	u32 nbits = log + 1, s = 0, prev0 = 0;

	spz_bw_add(b, dst, log - 5, 4);
	while (remaining > 1 && s < nsym) {
		i32 count, max, v;

		WORK(1);
		if (prev0) {
			u32 run = 0;

			while (s < nsym && norm[s] == 0) {
				s++;
				run++;
			}
			while (run >= 3) {
				spz_bw_add(b, dst, 3, 2);
				run -= 3;
			}
			spz_bw_add(b, dst, run, 2);
		}
		count = norm[s++];
		max = 2 * threshold - 1 - remaining;
		remaining -= count < 0 ? -count : count;
		v = count + 1;
		if (v >= threshold)
			v += max;
		spz_bw_add(b, dst, (u64)v, v < max ? nbits - 1 : nbits);
		prev0 = count == 0;
		while (remaining < threshold) {
			nbits--;
			threshold >>= 1;
		}
	}
	spz_bw_pad(b, dst);
}

/* --------------------------------------------- predefined distributions */

/* RFC 8878 3.1.1.3.2.2, default distributions. */
CONSTANT_DATA i32 spz_ll_norm[36] = {
	4, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1,
	2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 2, 1, 1, 1, 1, 1,
	-1, -1, -1, -1
};
CONSTANT_DATA i32 spz_ml_norm[53] = {
	1, 4, 3, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1, -1,
	-1, -1, -1, -1, -1
};
CONSTANT_DATA i32 spz_of_norm[29] = {
	1, 1, 1, 1, 1, 1, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1,
	1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1
};

/* Literal-length codes 16..35 and match-length codes 32..52: baselines
 * and extra bits (3.1.1.3.2.1.1 and .2). */
CONSTANT_DATA u32 spz_ll_base[20] = {
	16, 18, 20, 22, 24, 28, 32, 40, 48, 64, 128, 256, 512, 1024, 2048,
	4096, 8192, 16384, 32768, 65536
};
CONSTANT_DATA u32 spz_ll_bits[20] = {
	1, 1, 1, 1, 2, 2, 3, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
};
CONSTANT_DATA u32 spz_ml_base[21] = {
	35, 37, 39, 41, 43, 47, 51, 59, 67, 83, 99, 131, 259, 515, 1027,
	2051, 4099, 8195, 16387, 32771, 65539
};
CONSTANT_DATA u32 spz_ml_bits[21] = {
	1, 1, 1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16
};

/* Build the three predefined tables (ft: the whole area). */
DEVICE_FN void spz_ft_predefined(LOCAL u8 *ft)
{
	LOCAL i32 *norm = SPZ_FT_NORM(ft);
	LOCAL u8 *cells = SPZ_FT_CELLS(ft);

	WORK(36 + 53 + 29);
	for (u32 s = 0; s < 36; s++)
		norm[s] = spz_ll_norm[s];
	spz_ft_build(ft + SPZ_FT_LL * SPZ_FT_BYTES, norm, 36, 6, cells);
	for (u32 s = 0; s < 53; s++)
		norm[s] = spz_ml_norm[s];
	spz_ft_build(ft + SPZ_FT_ML * SPZ_FT_BYTES, norm, 53, 6, cells);
	for (u32 s = 0; s < 29; s++)
		norm[s] = spz_of_norm[s];
	spz_ft_build(ft + SPZ_FT_OF * SPZ_FT_BYTES, norm, 29, 5, cells);
}

/* Extra bits of a literal-length and of a match-length code. */
DEVICE_FN u32 spz_ll_xbits(u32 c)
{
	return c < 16 ? 0 : spz_ll_bits[c - 16];
}

DEVICE_FN u32 spz_ml_xbits(u32 c)
{
	return c < 32 ? 0 : spz_ml_bits[c - 32];
}

/* Code, extra-bit count and extra value of a literal length. */
DEVICE_FN u32 spz_ll_code(u32 ll, u32 *nb, u32 *extra)
{
	u32 c;

	if (ll < 16) {
		*nb = 0;
		*extra = 0;
		return ll;
	}
	/* From 64 on, the codes are powers of two (as zstd's ZSTD_LLcode). */
	c = ll >= 64 ? spz_highbit(ll) + 3 : 8;
	if (c > 19)
		c = 19;
	while (c > 0 && spz_ll_base[c] > ll) {
		WORK(1);
		c--;
	}
	*nb = spz_ll_bits[c];
	*extra = ll - spz_ll_base[c];
	return 16 + c;
}

/* The same for a match length (>= 3). */
DEVICE_FN u32 spz_ml_code(u32 ml, u32 *nb, u32 *extra)
{
	u32 c;

	if (ml < 35) {
		*nb = 0;
		*extra = 0;
		return ml - 3;
	}
	c = ml >= 131 ? spz_highbit(ml - 3) + 4 : 10;
	if (c > 20)
		c = 20;
	while (c > 0 && spz_ml_base[c] > ml) {
		WORK(1);
		c--;
	}
	*nb = spz_ml_bits[c];
	*extra = ml - spz_ml_base[c];
	return 32 + c;
}

#endif
