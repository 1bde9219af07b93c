/*
 * empty_chunks.h - the chunks that hold nothing but the fill value
 * (doc/design.md §22.2).  Launched after the encoder unless the plan
 * writes empty chunks: a chunk whose cells inside the array all equal the
 * fill value, byte for byte, gets the compressed size 0, which
 * aggregation packs as nothing and the host reads as "not stored" (no
 * codec makes a chunk of zero bytes).
 *
 * One work-group per chunk, groups striding over the chunks.  The group
 * reads its chunk from the pool in rounds: in each, word k of the round
 * goes to work-item k mod the local size (neighbouring items read
 * neighbouring words), then the group takes the largest of its items'
 * findings and stops at the first round that found a difference.  Rounds
 * start at one word per item and double up to SP_EMPTY_ROUND_MAX, so a
 * chunk of data costs a word or so per item and a chunk of fill one pass
 * with few reductions.  The answer is exact whatever the local size.
 *
 * Only cells inside the array count, but every cell outside it is fill
 * too: the host pads the rows past the array's end with the fill value,
 * and scatter pads the chunks cut by the edge of the other dims with it
 * (scatter.h, §22.1).  So a chunk is empty when every word of it equals
 * the fill word, with no look at where its edge lies.  Words are
 * SP_GEO_UNIT bytes, which divides every chunk's start and is at least
 * an element, so a word holds whole elements and equals the fill word's
 * first bytes when every element in it is the fill value.
 *
 * geo: the table of geometry.h (SP_GEO_FILL: the fill value repeated to
 * eight bytes, as the store holds it).  pool: the K*M scattered chunks;
 * sizes: the encoder's sizes, n of them.
 */
#ifndef SP_KERNEL_EMPTY_CHUNKS_H
#define SP_KERNEL_EMPTY_CHUNKS_H

#include "kernel-list.h"

#define SP_EMPTY_ROUND_MAX 64

/* Word w of a chunk differs from the fill word.  The fill word is read
 * through the same word type as the pool, so both are bytes in memory:
 * the device's byte order does not matter. */
DEVICE_FN u64 empty_word_differs(GLOBAL const u8 *c, u64 w, u64 unit,
				 GLOBAL const u8 *fill)
{
	switch (unit) {
	case 8:
		return ((GLOBAL const w64 *)c)[w] !=
		       ((GLOBAL const w64 *)fill)[0];
	case 4:
		return ((GLOBAL const w32 *)c)[w] !=
		       ((GLOBAL const w32 *)fill)[0];
	case 2:
		return ((GLOBAL const w16 *)c)[w] !=
		       ((GLOBAL const w16 *)fill)[0];
	default:
		return c[w] != fill[0];
	}
}

SP_KERNEL_ENTRY(sp_empty_chunks)
{
	LOCAL_ARRAY(u64, scratch, SP_WG_MAX);
	const u64 unit = geo[SP_GEO_UNIT];
	const u64 words = chunk_bytes / unit, lsize = LOCAL_SIZE();
	GLOBAL const u8 *fill = (GLOBAL const u8 *)(geo + SP_GEO_FILL);

	for (u64 j = GROUP_ID(); j < n; j += NUM_GROUPS()) {
		GLOBAL const u8 *c = pool + j * chunk_bytes;
		u64 differs = 0, per = 1, base = 0;

		UNIT();
		while (base < words && differs == 0) {
			u64 end = base + per * lsize, mine = 0;

			if (end > words)
				end = words;
			for (u64 w = base + LOCAL_ID(); w < end; w += lsize) {
				WORK(1);
				mine |= empty_word_differs(c, w, unit, fill);
			}
			differs = wg_reduce_max_u64(scratch, mine);
			/* The verdict is stored in the last round, not after
			 * the loop: PoCL 3.1 lost a store placed after this
			 * loop of barriers at local sizes below 8. */
			if (differs == 0 && end == words && LOCAL_ID() == 0)
				sizes[j] = 0;
			base = end;
			if (per < SP_EMPTY_ROUND_MAX)
				per *= 2;
		}
	}
}

#endif
