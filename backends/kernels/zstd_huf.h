/*
 * zstd_huf.h - Huffman coding of a block's literals (RFC 8878 4.2): code
 * lengths limited to 11 bits, the zstd canonical code, the tree
 * description (weights direct, or FSE-compressed when a symbol above 128
 * is present or that is smaller), and one backward Huffman stream.
 *
 * Construction is shared by the group, one item merging the queues (at
 * most 255 steps); the streams are cut into parts that the items pack
 * independently.
 */
#ifndef SP_KERNEL_ZSTD_HUF_H
#define SP_KERNEL_ZSTD_HUF_H

#define SPZ_HUF_MAXBITS 11u

/*
 * Code lengths for freq[0..256) into len (0 for absent symbols) and the
 * canonical codes into code, by the whole group (every item calls it; it
 * holds barriers; `active` 0 only keeps them company), for at least two
 * present symbols:
 *   1. every item ranks its symbols by (frequency, symbol), a total
 *      order, so the tree depends on the counts alone;
 *   2. item 0 merges two queues, the leaves in rank order and the
 *      internal nodes in creation order (their weights never decrease; a
 *      leaf wins ties), takes the depths, clamps them to SPZ_HUF_MAXBITS
 *      and repairs the Kraft sum on the count of codes per length;
 *   3. every item gives its ranks their lengths, the rarest the longest
 *      (which never costs more than the tree's own assignment);
 *   4. item 0 numbers the canonical codes, in symbol order.
 * tmp: SPZ_HUF_TMP_WORDS local words; the longest length is left in
 * tmp[SPZ_HT_MAXBITS].
 */
#define SPZ_HT_ORDER 0u      /* present symbols, rarest first */
#define SPZ_HT_WT 256u       /* node weights, then depths */
#define SPZ_HT_PARENT 768u
#define SPZ_HT_CNT 1280u     /* codes per length */
#define SPZ_HT_START 1296u   /* first canonical code per length */
#define SPZ_HT_MAXBITS 1312u
#define SPZ_HT_M 1313u       /* present symbols */
#define SPZ_HUF_TMP_WORDS 1314u

DEVICE_FN void spz_huf_build(u32 active, LOCAL const u32 *freq, LOCAL u8 *len,
			     LOCAL u16 *code, LOCAL u32 *tmp)
{
	LOCAL u32 *order = tmp + SPZ_HT_ORDER, *wt = tmp + SPZ_HT_WT;
	LOCAL u32 *parent = tmp + SPZ_HT_PARENT, *cnt = tmp + SPZ_HT_CNT;
	LOCAL u32 *start = tmp + SPZ_HT_START;
	const i32 full = 1 << SPZ_HUF_MAXBITS;

	for (u32 s = (u32)LOCAL_ID(); s < 256; s += (u32)LOCAL_SIZE()) {
		u32 f = freq[s], r = 0;

		WORK(1);
		len[s] = 0;
		if (!active || f == 0)
			continue;
		WORK(256);
		for (u32 t = 0; t < 256; t++) {
			u32 g = freq[t];

			r += g != 0 && (g < f || (g == f && t < s));
		}
		order[r] = s;
	}
	BARRIER();
	if (LOCAL_ID() == 0 && active) {
		u32 m = 0, li = 0, ni, nn, maxbits = 0, next = 0;
		i32 kraft = 0;

		WORK(256);
		for (u32 s = 0; s < 256; s++)
			m += freq[s] != 0;
		WORK(m);
		for (u32 i = 0; i < m; i++)
			wt[i] = freq[order[i]];
		ni = nn = m;
		while (nn < 2 * m - 1) {
			u32 p0, p1;

			WORK(1);
			if (li < m && (ni >= nn || wt[li] <= wt[ni]))
				p0 = li++;
			else
				p0 = ni++;
			if (li < m && (ni >= nn || wt[li] <= wt[ni]))
				p1 = li++;
			else
				p1 = ni++;
			wt[nn] = wt[p0] + wt[p1];
			parent[p0] = parent[p1] = nn;
			nn++;
		}
		/* Depths from the root down; a parent's index exceeds its
		 * children's. */
		wt[2 * m - 2] = 0;
		WORK(2 * m);
		for (u32 i = 2 * m - 2; i-- > 0;)
			wt[i] = wt[parent[i]] + 1;
		for (u32 l = 0; l <= SPZ_HUF_MAXBITS; l++)
			cnt[l] = 0;
		WORK(m);
		for (u32 i = 0; i < m; i++) {
			u32 d = wt[i] < SPZ_HUF_MAXBITS ? wt[i] : SPZ_HUF_MAXBITS;

			cnt[d]++;
			kraft += full >> d;
		}
		/* Clamping made the code over-full: lengthen the longest
		 * codes still below the limit until it fits. */
		while (kraft > full) {
			u32 l = SPZ_HUF_MAXBITS - 1;

			WORK(1);
			while (cnt[l] == 0) {
				WORK(1);
				l--;
			}
			cnt[l]--;
			cnt[l + 1]++;
			kraft -= full >> (l + 1);
		}
		/* Under-full: shorten the shortest codes whose gain fits,
		 * until the code is complete (weights must sum to a power of
		 * 2).  The longest codes always fit the deficit, which is a
		 * multiple of their weight. */
		while (kraft < full) {
			u32 l = 2;

			WORK(1);
			while (cnt[l] == 0 || (full >> l) > full - kraft) {
				WORK(1);
				l++;
			}
			cnt[l]--;
			cnt[l - 1]++;
			kraft += full >> l;
		}
		for (u32 l = 1; l <= SPZ_HUF_MAXBITS; l++)
			if (cnt[l] != 0)
				maxbits = l;
		/* Canonical order of section 4.2.1.4: longest codes first,
		 * numbered from 0; symbols of one length in increasing
		 * value. */
		for (u32 l = maxbits; l >= 1; l--) {
			start[l] = next;
			next = (next + cnt[l]) >> 1;
		}
		tmp[SPZ_HT_MAXBITS] = maxbits;
		tmp[SPZ_HT_M] = m;
	}
	BARRIER();
	for (u32 r = (u32)LOCAL_ID(); active && r < tmp[SPZ_HT_M];
	     r += (u32)LOCAL_SIZE()) {
		u32 l = tmp[SPZ_HT_MAXBITS], acc = cnt[l];

		WORK(1);
		while (r >= acc) {
			WORK(1);
			acc += cnt[--l];
		}
		len[order[r]] = (u8)l;
	}
	BARRIER();
	if (LOCAL_ID() == 0 && active) {
		WORK(256);
		for (u32 s = 0; s < 256; s++)
			if (len[s] != 0)
				code[s] = (u16)start[len[s]]++;
	}
	BARRIER();
}

/*
 * The tree description of section 4.2.1 into desc (global, at least
 * SPZ_DESC_CAP bytes): weights of symbols 0..maxsym-1, directly when
 * maxsym <= 128, FSE-compressed when that is possible and smaller.
 * ft: the FSE table area (zstd_bits.h); the weights' table is built in
 * its SPZ_FT_HW slot.  Returns the description's size, 0 when neither
 * form can describe this tree.
 */
DEVICE_FN u32 spz_huf_describe(LOCAL const u8 *len, u32 maxbits, u32 maxsym,
			       GLOBAL u8 *desc, LOCAL u8 *area)
{
	LOCAL u8 *ft = area + SPZ_FT_HW * SPZ_FT_BYTES;
	/* Weight counts after the distribution in the area's scratch. */
	LOCAL i32 *norm = SPZ_FT_NORM(area);
	LOCAL u32 *wcount = (LOCAL u32 *)norm + 32;
	u32 direct = 0, fse = 0, nw = maxsym, distinct = 0;

	if (nw <= 128)
		direct = 1 + (nw + 1) / 2;
	WORK(nw);
	for (u32 w = 0; w <= SPZ_HUF_MAXBITS; w++)
		wcount[w] = 0;
	for (u32 s = 0; s < nw; s++)
		wcount[len[s] ? maxbits + 1 - len[s] : 0]++;
	for (u32 w = 0; w <= SPZ_HUF_MAXBITS; w++)
		distinct += wcount[w] != 0;
	/* FSE needs two distinct weights: the decoder learns how many
	 * weights there are only by running out of bits when it leaves the
	 * next-to-last one's state, and with one symbol no state reads any
	 * bit.  And three weights or more (RFC 8878 4.2.1.2). */
	if (distinct >= 2 && nw >= 3) {
		u32 nsym = 0;
		struct spz_bw b;
		u32 st1, st2;

		for (u32 w = 0; w <= SPZ_HUF_MAXBITS; w++)
			if (wcount[w] != 0)
				nsym = w + 1;
		spz_fse_normalize(norm, wcount, nsym, nw, 6);
		spz_ft_build(ft, norm, nsym, 6, SPZ_FT_CELLS(area));
		spz_bw_init(&b, 1, SPZ_DESC_CAP < 128 ? SPZ_DESC_CAP : 128);
		spz_ncount_write(&b, desc, norm, nsym, 6);
		/*
		 * State 1 decodes the even weights, state 2 the odd ones,
		 * alternately; decoding stops when the update after the
		 * next-to-last weight runs out of bits, so the last two
		 * weights are starting states and every other weight is
		 * encoded from the last down.
		 */
		{
			u32 last = nw - 1;
			u32 wl = len[last] ? maxbits + 1 - len[last] : 0;
			u32 wp = len[last - 1] ? maxbits + 1 - len[last - 1]
					       : 0;
			u32 fl = spz_ft_first(ft, wl), fp = spz_ft_first(ft, wp);

			/* No pointers to the states: private variables
			 * whose address is taken go to a GPU's stack. */
			st1 = (last & 1) ? fp : fl;
			st2 = (last & 1) ? fl : fp;
		}
		for (u32 i = nw - 2; i-- > 0;) {
			u32 w = len[i] ? maxbits + 1 - len[i] : 0;

			WORK(1);
			if (i & 1)
				st2 = spz_ft_encode(ft, &b, desc, st2, w);
			else
				st1 = spz_ft_encode(ft, &b, desc, st1, w);
		}
		spz_bw_add(&b, desc, st2, 6);
		spz_bw_add(&b, desc, st1, 6);
		fse = (u32)spz_bw_close(&b, desc);
		if (b.over || fse > 128)
			fse = 0;
	}
	if (fse != 0 && (direct == 0 || fse < direct)) {
		desc[0] = (u8)(fse - 1);
		return fse;
	}
	if (direct == 0)
		return 0;
	desc[0] = (u8)(127 + nw);
	WORK((nw + 1) / 2);
	for (u32 i = 0; i < nw; i += 2) {
		u32 a = len[i] ? maxbits + 1 - len[i] : 0;
		u32 c = 0;

		if (i + 1 < nw && len[i + 1])
			c = maxbits + 1 - len[i + 1];
		desc[1 + i / 2] = (u8)(a << 4 | c);
	}
	return direct;
}

/*
 * Parallel bit packing of one Huffman stream, lits[a..b): the stream
 * holds the codes of lits[b-1], lits[b-2], ... lits[a] (a backward
 * reader meets lits[a] first), then the 1-bit end mark and zero padding.
 * In that encoding order the stream is cut into fixed parts of
 * SPZ_HUF_PART literals; a part's bit count (spz_huf_part_bits), an
 * exclusive scan of the counts, and each part writes the bytes that
 * start inside its bits (spz_huf_part_write), reading on into the next
 * parts' codes to complete its last byte.  No byte has two writers, and
 * the bytes do not depend on how parts are spread over work-items.
 */
DEVICE_FN u32 spz_huf_part_bits(GLOBAL const u8 *lits, u32 a, u32 b, u32 j,
				LOCAL const u8 *len)
{
	u32 t0 = j * SPZ_HUF_PART, n = b - a, bits = 0;

	for (u32 t = t0; t < n && t < t0 + SPZ_HUF_PART; t++) {
		WORK(1);
		bits += len[lits[b - 1 - t]];
	}
	return bits;
}

/*
 * Part j, whose bits start at o and end at e (the end mark counted in the
 * last part), into out (the stream's first byte).
 */
DEVICE_FN void spz_huf_part_write(GLOBAL const u8 *lits, u32 a, u32 b,
				  u32 j, u64 o, u64 e, LOCAL const u8 *len,
				  LOCAL const u16 *code, GLOBAL u8 *out)
{
	u32 n = b - a, t = j * SPZ_HUF_PART;
	struct spz_pw w;

	spz_pw_init(&w, o, e);
	if (w.byte * 8 >= e)
		return;
	if (t > n)
		t = n; /* an empty trailing part holds only the end mark */
	while (w.byte < w.end) {
		u32 c = 0, l;

		WORK(1);
		if (t < n) {
			u32 s = lits[b - 1 - t];

			c = code[s];
			l = len[s];
		} else if (t == n) {
			c = 1;
			l = 1;
		} else {
			l = 8; /* zero padding after the end mark */
		}
		t++;
		spz_pw_put(&w, out, c, l);
	}
}

#endif
