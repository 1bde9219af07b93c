/*
 * copy.h - byte moves spread over `lanes` work-items, lane k taking words
 * k, k + lanes, ...: adjacent items touch adjacent words, which a GPU
 * reads and writes in whole transactions (coalesced).  lanes 1 is one
 * item's private loop; LOCAL_SIZE() spreads a copy over the group.
 *
 * lane_copy and lane_fill move words of `unit` bytes (1, 2, 4 or 8),
 * chosen by the caller so that both addresses and the length are
 * multiples of it.  lane_copy_bytes takes any alignments and still moves
 * 8-byte words: a byte head and tail, and between them each destination
 * word built from the two aligned source words it straddles.
 */
#ifndef SP_KERNEL_COPY_H
#define SP_KERNEL_COPY_H

/* Words lane, lane + lanes, ... of the n of a copy. */
DEVICE_FN u64 lane_words(u64 n, u64 lane, u64 lanes)
{
	return n > lane ? (n - lane - 1) / lanes + 1 : 0;
}

DEVICE_FN void lane_copy(GLOBAL u8 *dst, GLOBAL const u8 *src, u64 nbytes,
			 u64 unit, u64 lane, u64 lanes)
{
	u64 n = nbytes / unit;

	WORK(lane_words(n, lane, lanes));
	switch (unit) {
	case 8:
		for (u64 k = lane; k < n; k += lanes)
			((GLOBAL w64 *)dst)[k] = ((GLOBAL const w64 *)src)[k];
		break;
	case 4:
		for (u64 k = lane; k < n; k += lanes)
			((GLOBAL w32 *)dst)[k] = ((GLOBAL const w32 *)src)[k];
		break;
	case 2:
		for (u64 k = lane; k < n; k += lanes)
			((GLOBAL w16 *)dst)[k] = ((GLOBAL const w16 *)src)[k];
		break;
	default:
		for (u64 k = lane; k < n; k += lanes)
			dst[k] = src[k];
		break;
	}
}

/* Elements lane, lane + lanes, ... of n, of esize bytes, `stride`
 * elements apart in src, to consecutive ones in dst: a run of a storage
 * order that moves the innermost dim (design §3.3). */
DEVICE_FN void lane_gather(GLOBAL u8 *dst, GLOBAL const u8 *src, u64 n,
			   u64 stride, u64 esize, u64 lane, u64 lanes)
{
	WORK(lane_words(n, lane, lanes));
	switch (esize) {
	case 8:
		for (u64 k = lane; k < n; k += lanes)
			((GLOBAL w64 *)dst)[k] =
				((GLOBAL const w64 *)src)[k * stride];
		break;
	case 4:
		for (u64 k = lane; k < n; k += lanes)
			((GLOBAL w32 *)dst)[k] =
				((GLOBAL const w32 *)src)[k * stride];
		break;
	case 2:
		for (u64 k = lane; k < n; k += lanes)
			((GLOBAL w16 *)dst)[k] =
				((GLOBAL const w16 *)src)[k * stride];
		break;
	default:
		for (u64 k = lane; k < n; k += lanes)
			dst[k] = src[k * stride];
		break;
	}
}

/* Padding: words of `unit` bytes, each the first `unit` bytes of the fill
 * word (the fill value repeated to eight bytes, as the store holds it).
 * dst starts at an element and unit is a whole number of elements, so
 * every word starts at one too.  Both are read and written as memory,
 * so the device's byte order does not matter. */
DEVICE_FN void lane_fill(GLOBAL u8 *dst, u64 nbytes, u64 unit,
			 GLOBAL const u8 *fill, u64 lane, u64 lanes)
{
	u64 n = nbytes / unit;

	WORK(lane_words(n, lane, lanes));
	switch (unit) {
	case 8: {
		const w64 f = ((GLOBAL const w64 *)fill)[0];

		for (u64 k = lane; k < n; k += lanes)
			((GLOBAL w64 *)dst)[k] = f;
		break;
	}
	case 4: {
		const w32 f = ((GLOBAL const w32 *)fill)[0];

		for (u64 k = lane; k < n; k += lanes)
			((GLOBAL w32 *)dst)[k] = f;
		break;
	}
	case 2: {
		const w16 f = ((GLOBAL const w16 *)fill)[0];

		for (u64 k = lane; k < n; k += lanes)
			((GLOBAL w16 *)dst)[k] = f;
		break;
	}
	default:
		for (u64 k = lane; k < n; k += lanes)
			dst[k] = fill[0];
		break;
	}
}

/*
 * The 8 bytes at base[off..off + 8) as a little-endian word, base being
 * 8-byte aligned (device buffers are) and off + 8 <= end, from the aligned
 * words that hold them; an aligned word reaching past `end` is not read:
 * its bytes are.
 */
DEVICE_FN u64 load_le64(GLOBAL const u8 *base, u64 off, u64 end)
{
	GLOBAL const w64 *w = (GLOBAL const w64 *)base;
	u64 k = off >> 3, sh = (off & 7) * 8, lo, hi = 0;

	lo = LE64(w[k]);
	if (sh == 0)
		return lo;
	if (8 * k + 16 <= end) {
		hi = LE64(w[k + 1]);
	} else {
		for (u64 i = 8 * k + 8; i < off + 8; i++)
			hi |= (u64)base[i] << (8 * (i - 8 * k - 8));
	}
	return lo >> sh | hi << (64 - sh);
}

/*
 * n bytes from sbase + soff to dbase + doff, both bases 8-byte aligned,
 * the source readable up to send bytes from sbase.  Destination words are
 * written whole only where all their bytes are the copy's, so copies to
 * neighbouring ranges may run at once.
 */
DEVICE_FN void lane_copy_bytes(GLOBAL u8 *dbase, u64 doff,
			       GLOBAL const u8 *sbase, u64 soff, u64 send,
			       u64 n, u64 lane, u64 lanes)
{
	u64 head = (8 - (doff & 7)) & 7, words, tail;

	if (head > n)
		head = n;
	words = (n - head) / 8;
	tail = n - head - 8 * words;
	WORK(lane_words(head, lane, lanes) + lane_words(words, lane, lanes) +
	     lane_words(tail, lane, lanes));
	for (u64 i = lane; i < head; i += lanes)
		dbase[doff + i] = sbase[soff + i];
	for (u64 k = lane; k < words; k += lanes)
		((GLOBAL w64 *)dbase)[(doff + head) / 8 + k] =
			LE64(load_le64(sbase, soff + head + 8 * k, send));
	for (u64 i = lane; i < tail; i += lanes)
		dbase[doff + head + 8 * words + i] =
			sbase[soff + head + 8 * words + i];
}

/* The widest unit that divides every one of the values or-ed into bits. */
DEVICE_FN u64 copy_unit(u64 bits)
{
	if ((bits & 7) == 0)
		return 8;
	if ((bits & 3) == 0)
		return 4;
	if ((bits & 1) == 0)
		return 2;
	return 1;
}

#endif
