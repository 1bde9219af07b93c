/*
 * zstd_layout.h - the zstd encoder's fixed partition of the work and its
 * global scratch, shared by the kernel (zstd_encode.h) and the host
 * driver, so it holds only macros.
 *
 * Every partition here is a constant (doc/design.md §7.2): blocks of
 * SPZ_BLOCK bytes, match-finding segments of SPZ_SEG bytes inside a block,
 * SPZ_HIST_PARTS histogram parts, at most four Huffman streams cut into
 * parts of SPZ_HUF_PART literals.  None of
 * them depends on the local size.
 *
 * The driver gives each launched work-group SPZ_SCRATCH_BYTES(hl) of
 * global scratch (group g at g times that); the kernel rewrites what it
 * reads there for every chunk, so which group encodes a chunk does not
 * change a byte.
 */
#ifndef SP_KERNEL_ZSTD_LAYOUT_H
#define SP_KERNEL_ZSTD_LAYOUT_H

#define SPZ_BLOCK 131072u        /* RFC 8878 Block_Maximum_Size */
#define SPZ_SEG 16384u           /* one work-item parses one segment */
#define SPZ_NSEG (SPZ_BLOCK / SPZ_SEG)
#define SPZ_HLOG_MAX 16u         /* largest table log of any level */
#define SPZ_SEQ_PER_SEG (SPZ_SEG / 4u + 2u) /* a match covers >= 4 bytes */
#define SPZ_HIST_PARTS 16u
/* Huffman bit packing: one word per part of 1024 literals (zstd_huf.h). */
#define SPZ_PART_WORDS 256u
/* Sequences bit packing: one word per part of 512 sequences. */
#define SPZ_SEQPART_WORDS 128u
#define SPZ_HUF_TMP_WORDS 1536u  /* Huffman tree construction */
#define SPZ_DESC_CAP 256u        /* Huffman tree description */

/*
 * Byte offsets inside one group's scratch; all multiples of 64.  The hash
 * tables come last: their size depends on the level, through the table
 * log SPZ_HLOG_OF_LEVEL (the match finder's parameters, zstd_match.h,
 * use the same macro).  No line continuations here: embed.awk does not
 * keep them.
 */
#define SPZ_HLOG_OF_LEVEL(l) ((l) >= 9 ? 16u : (l) >= 2 ? 14u : 13u)
#define SPZ_R64(x) (((x) + 63u) / 64u * 64u)
#define SPZ_OFF_SEQS 0u
#define SPZ_OFF_SEGMETA SPZ_R64(SPZ_NSEG * SPZ_SEQ_PER_SEG * 12u)
#define SPZ_OFF_LITS (SPZ_OFF_SEGMETA + 64u * SPZ_NSEG)
#define SPZ_OFF_HIST (SPZ_OFF_LITS + SPZ_BLOCK)
#define SPZ_OFF_PARTS (SPZ_OFF_HIST + SPZ_HIST_PARTS * 256u * 4u)
#define SPZ_OFF_HUF (SPZ_OFF_PARTS + 4u * SPZ_PART_WORDS)
#define SPZ_OFF_DESC (SPZ_OFF_HUF + 4u * SPZ_HUF_TMP_WORDS)
/* Sequences packing: three state bytes per sequence, a word per part. */
#define SPZ_OFF_SEQST SPZ_R64(SPZ_OFF_DESC + SPZ_DESC_CAP)
#define SPZ_SEQST_BYTES (3u * SPZ_NSEG * SPZ_SEQ_PER_SEG)
#define SPZ_OFF_SEQPARTS SPZ_R64(SPZ_OFF_SEQST + SPZ_SEQST_BYTES)
#define SPZ_OFF_TABLES (SPZ_OFF_SEQPARTS + 4u * SPZ_SEQPART_WORDS)
/* One group's scratch at table log hl: about 1.0 MiB at level 1, 1.2 MiB
 * at levels 2-8, 2.7 MiB from level 9. */
#define SPZ_SCRATCH_BYTES(hl) (SPZ_OFF_TABLES + SPZ_NSEG * (4u << (hl)))

/* Per segment words at SPZ_OFF_SEGMETA + 64 * s (u32 each). */
#define SPZ_SM_NSEQ 0     /* sequences found */
#define SPZ_SM_NLIT 1     /* literal bytes in the segment */
#define SPZ_SM_TAIL 2     /* literals after the last sequence */
#define SPZ_SM_LITOFF 3   /* first literal's index in the block's literals */
#define SPZ_SM_CARRY 4    /* literals pending from earlier segments */

/*
 * Worst case of one chunk of n bytes: the frame header (4 magic, 1
 * descriptor, up to 8 content size), per block a 3-byte header and at
 * most the block's bytes (a raw block when nothing smaller exists), and a
 * 4-byte checksum.  Within ZSTD_COMPRESSBOUND (src/codec.c) for every n.
 */
#define SPZ_WORST_CASE(n) ((n) + 17u + 3u * ((n) / SPZ_BLOCK + 1u))

/* The kernel's last argument: the level in the low 32 bits, bit
 * SPZ_ARG_CHECKSUM_BIT set for a frame checksum (Zarr's zstd "checksum":
 * true).  A bit number, not a mask: the host and the kernel dialects
 * spell 64-bit types differently. */
#define SPZ_ARG_CHECKSUM_BIT 32

#endif
