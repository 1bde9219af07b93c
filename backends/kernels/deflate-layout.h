/*
 * deflate-layout.h - the partition of a chunk for the gzip encoder
 * (deflate.h) and the layout of its global scratch: one region per
 * work-group of each of its two kernels, and one per chunk in flight for
 * what the first hands the second.  Read by the kernels in all three
 * dialects and by the host driver (which allocates the scratch), so it
 * holds only macros of the chunk size n in bytes.
 *
 * The partition is a fixed function of n (doc/design.md §7.2 "Determinism"):
 * segments of SP_DEFL_SEG bytes are parsed independently (one work-item
 * each); SP_DEFL_BLK_SEGS consecutive segments form one unit, which is
 * a deflate block with its own Huffman codes unless it is merged with
 * its neighbours into one block (deflate.h, phase 4); SP_DEFL_PART bytes
 * (whole units) form a part, the work unit of sp_gzip_units.  None
 * depends on the level or on the work-group size.  "Block" below means
 * unit.  (The sort's tiles of phase 1 follow the local size, but a stable
 * sort's result does not.)
 */
#ifndef SP_KERNEL_DEFLATE_LAYOUT_H
#define SP_KERNEL_DEFLATE_LAYOUT_H

#include "geometry.h"

#define SP_DEFL_SEG 4096          /* bytes per segment (parse unit) */
#define SP_DEFL_BLK_SEGS 8        /* segments per deflate block: 32 KiB */
#define SP_DEFL_PART 131072       /* bytes per part: four units */
#define SP_DEFL_WINDOW 32768      /* the farthest a match reaches back */
#define SP_DEFL_HASH_BITS 15      /* largest hash; smaller chunks use less */
#define SP_DEFL_TILE 1024         /* fewest positions per tile of the sort */
#define SP_DEFL_NSYM 320          /* histogram: 288 litlen, then 32 dist */
#define SP_DEFL_DIST0 288
#define SP_DEFL_CLEN0 320         /* per-block lengths: then 19 clen */
#define SP_DEFL_BSYM 352          /* per-block length and code entries */
#define SP_DEFL_NKEY 316          /* per-block sort keys: 286 + 30 */
#define SP_DEFL_KEY_STRIDE 320    /* two buffers of them per block */
/* Staging words of one segment: at most 15 bits per input byte (a
 * dynamic code's longest literal; a match costs less per byte), the end
 * of block code, and up to 31 bits of alignment. */
#define SP_DEFL_SEG_WORDS (SP_DEFL_SEG / 2 + 4)
/* Staging words of one block header: at most 3 + 14 + 19 * 3 bits and
 * 316 code-length codes of at most 7 + 7 bits, plus alignment. */
#define SP_DEFL_HDR_WORDS 160
#define SP_DEFL_WORK 1536         /* u32 of Huffman work per block */
#define SP_DEFL_INFO 64           /* u64 of bookkeeping per block */
/* Consecutive 32 KiB units merged into one dynamic block at most: its
 * symbol counts stay far below the 2^23 the Huffman builder takes. */
#define SP_DEFL_MERGE_MAX 32
/* The largest chunk the encoder takes, in bytes (positions are 32-bit;
 * the results and one group's scratch below are about 7.1 bytes per input
 * byte, so the limit is set by memory, and it is the size t/gzip-encode
 * tests). */
#define SP_DEFL_MAX_CHUNK 268435456u

/* No line continuations below: embed.awk keeps a backslash single. */
#define SP_DEFL_R8(x) (((x) + 7) / 8 * 8)
#define SP_DEFL_NSEG(n) (((n) + SP_DEFL_SEG - 1) / SP_DEFL_SEG)
#define SP_DEFL_NBLK(n) ((SP_DEFL_NSEG(n) + SP_DEFL_BLK_SEGS - 1) / SP_DEFL_BLK_SEGS)
#define SP_DEFL_NPART(n) (((n) + SP_DEFL_PART - 1) / SP_DEFL_PART)
/* Per-block slots: one per block, then one per block for the candidate
 * merged block it may lead (deflate.h, phase 4). */
#define SP_DEFL_NSLOT(n) (2 * SP_DEFL_NBLK(n))
/* Tiles of a sort of n positions at most: one per work-item, none under
 * SP_DEFL_TILE positions. */
#define SP_DEFL_NTILE(n) (((n) + SP_DEFL_TILE - 1) / SP_DEFL_TILE < SP_WG_MAX ? ((n) + SP_DEFL_TILE - 1) / SP_DEFL_TILE : SP_WG_MAX)
/* The sort's counts over n positions, or the head table of a serial
 * insertion. */
#define SP_DEFL_CNT_BYTES(n) (8 * (256 * SP_DEFL_NTILE(n) + 1) > (4 << SP_DEFL_HASH_BITS) ? 8 * (256 * SP_DEFL_NTILE(n) + 1) : (4 << SP_DEFL_HASH_BITS))

/* What sp_gzip_units leaves for sp_codec_gzip, per chunk in flight, byte
 * offsets each a multiple of 8: a u32 per position (its match, then the
 * parse's decision there), each segment's histogram, then its CRC-32 and
 * (written by sp_codec_gzip) its bits. */
#define SP_DEFL_O_MATCH(n) 0
#define SP_DEFL_O_SHIST(n) SP_DEFL_R8(4 * (n))
#define SP_DEFL_O_SEGV(n) (SP_DEFL_O_SHIST(n) + SP_DEFL_R8(2 * SP_DEFL_NSYM * SP_DEFL_NSEG(n)))
#define SP_DEFL_RES_BYTES(n) (SP_DEFL_O_SEGV(n) + 8 * 2 * SP_DEFL_NSEG(n))

/* Positions one part sorts at most: its own and the window before it. */
#define SP_DEFL_UPOS(n) ((n) < SP_DEFL_PART + SP_DEFL_WINDOW ? (n) : SP_DEFL_PART + SP_DEFL_WINDOW)
/* One sp_gzip_units group's scratch, for m = SP_DEFL_UPOS(n) positions:
 * a u16 hash each, region 1 (a u32 each, the sort's first pass, then the
 * chains as u16), region 2 (the sorted positions), the counts. */
#define SP_DEFL_U_R1(n) SP_DEFL_R8(2 * SP_DEFL_UPOS(n))
#define SP_DEFL_U_R2(n) (SP_DEFL_U_R1(n) + SP_DEFL_R8(4 * SP_DEFL_UPOS(n)))
#define SP_DEFL_U_CNT(n) (SP_DEFL_U_R2(n) + SP_DEFL_R8(4 * SP_DEFL_UPOS(n)))
/* At most 1.5 MiB plus the counts, up to 321 KiB. */
#define SP_DEFL_USCRATCH_BYTES(n) (SP_DEFL_U_CNT(n) + SP_DEFL_CNT_BYTES(SP_DEFL_UPOS(n)))

/* One sp_codec_gzip group's scratch: the segments' staging words, then
 * the blocks' bookkeeping, byte offsets each what the previous one
 * starts at plus its size, a multiple of 8. */
#define SP_DEFL_STAGE_BYTES(n) (4 * SP_DEFL_SEG_WORDS * SP_DEFL_NSEG(n))
#define SP_DEFL_O_SCAN(n) SP_DEFL_STAGE_BYTES(n)
#define SP_DEFL_O_BHIST(n) (SP_DEFL_O_SCAN(n) + 8 * (SP_DEFL_NSEG(n) + 1))
#define SP_DEFL_O_KEYS(n) (SP_DEFL_O_BHIST(n) + 4 * SP_DEFL_NSYM * SP_DEFL_NSLOT(n))
#define SP_DEFL_O_BLEN(n) (SP_DEFL_O_KEYS(n) + 8 * 2 * SP_DEFL_KEY_STRIDE * SP_DEFL_NSLOT(n))
#define SP_DEFL_O_BCODE(n) (SP_DEFL_O_BLEN(n) + SP_DEFL_BSYM * SP_DEFL_NSLOT(n))
#define SP_DEFL_O_BRLE(n) (SP_DEFL_O_BCODE(n) + 2 * SP_DEFL_BSYM * SP_DEFL_NBLK(n))
#define SP_DEFL_O_BINFO(n) (SP_DEFL_O_BRLE(n) + 2 * SP_DEFL_NSYM * SP_DEFL_NSLOT(n))
#define SP_DEFL_O_HSTAGE(n) (SP_DEFL_O_BINFO(n) + 8 * SP_DEFL_INFO * SP_DEFL_NSLOT(n))
#define SP_DEFL_O_WORK(n) (SP_DEFL_O_HSTAGE(n) + 4 * SP_DEFL_HDR_WORDS * SP_DEFL_NBLK(n))
#define SP_DEFL_O_PIECE(n) (SP_DEFL_O_WORK(n) + 4 * SP_DEFL_WORK * SP_DEFL_NSLOT(n))

/* About 2.9 n. */
#define SP_DEFL_SCRATCH_BYTES(n) (SP_DEFL_O_PIECE(n) + 8 * (SP_DEFL_NBLK(n) + SP_DEFL_NSEG(n) + 1))

/*
 * Worst-case gzip member for n input bytes: 10 bytes of header, 8 of
 * trailer, and each block at most its stored size (3 bits, up to 7 of
 * padding, 32 of LEN/NLEN, then the bytes), rounded up to a byte.  It
 * stays below codec_bound() in src/codec.c, the slot capacity.
 */
#define SP_DEFL_BOUND(n) (18 + ((n) == 0 ? 2 : (n) + (42 * SP_DEFL_NBLK(n) + 7) / 8))

#endif
