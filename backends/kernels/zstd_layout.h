/*
 * zstd_layout.h - the zstd encoder's fixed partition of the work and its
 * global scratch, shared by the kernels (zstd_units.h, zstd_encode.h,
 * blosc_encode.h) and the host driver, so it holds only macros.
 *
 * The work unit is one block of at most SPZ_BLOCK bytes
 * (doc/design.md §13.1): every block of every frame of a batch is encoded by its own
 * work-group, independently of the others, and the frames are stitched
 * afterwards.  Inside a block every partition is a constant (§7.2): match
 * candidates are looked up in rounds of SPZ_ROUND positions, the parse
 * runs over SPZ_NSUB segments of SPZ_SUB bytes, the Huffman streams are
 * cut into parts of SPZ_HUF_PART literals and the sequences bitstream into
 * parts of SPZ_SEQ_PART sequences.  None of them depends on the local
 * size.
 *
 * The driver gives each launched work-group of sp_zstd_units
 * SPZ_SCRATCH_BYTES of global scratch (group g at g times that); the
 * kernel rewrites what it reads there for every block, so which group
 * encodes a block does not change a byte.  No line continuations here:
 * embed.awk does not keep them.
 */
#ifndef SP_KERNEL_ZSTD_LAYOUT_H
#define SP_KERNEL_ZSTD_LAYOUT_H

#define SPZ_BLOCK 131072u        /* RFC 8878 Block_Maximum_Size */
#define SPZ_ROUND 256u           /* positions looked up between insertions */
#define SPZ_SUB 1024u            /* one work-item parses one segment */
#define SPZ_NSUB (SPZ_BLOCK / SPZ_SUB)
/* Level 1's hash table: 1 << SPZ_TAB_LOG u32 entries of local memory,
 * 32 KiB, which the other levels' hash chains and the later phases use
 * for their own counts. */
#define SPZ_TAB_LOG 13u
#define SPZ_TAB_WORDS (1u << SPZ_TAB_LOG)
/* From level 3, the hash chains (zstd_match.h): a hash of SPZ_CH_HLOG
 * bits sorted in SPZ_CH_PASSES passes (an even number) of SPZ_CH_DBITS
 * bits over SPZ_CH_TILES tiles, SP_WG_MAX, so that every item of the
 * largest work-group deals one out (with half as many, PoCL 3.1 crashed
 * in the sort above 128 items); matches compared up to SPZ_CH_CAP bytes
 * when choosing a candidate.  The tiles' counts fit the table's local
 * memory. */
#define SPZ_CH_HLOG 16u
#define SPZ_CH_DBITS 4u
#define SPZ_CH_PASSES 4u
#define SPZ_CH_TILE 512u
#define SPZ_CH_TILES (SPZ_BLOCK / SPZ_CH_TILE)
#define SPZ_CH_CAP 32u
/* A match covers at least 4 bytes and starts inside its segment; it may
 * run on for up to SPZ_MATCH_MAX bytes, which bounds a segment's work. */
#define SPZ_MATCH_MAX 8191u
#define SPZ_SEQ_PER_SUB (SPZ_SUB / 4u)
#define SPZ_MAX_SEQ (SPZ_NSUB * SPZ_SEQ_PER_SUB)
#define SPZ_HUF_PART 1024u       /* literals per Huffman packing part */
#define SPZ_SEQ_PART 64u         /* sequences per packing part */
/* One word per Huffman part: four streams of a quarter block each. */
#define SPZ_PART_WORDS (4u * (SPZ_BLOCK / 4u / SPZ_HUF_PART + 1u))
#define SPZ_SEQPART_WORDS (SPZ_MAX_SEQ / SPZ_SEQ_PART + 1u)
#define SPZ_DESC_CAP 256u        /* Huffman tree description */
/* Input bytes past a block's end that the word loads may touch; the
 * staged copy keeps them zero. */
#define SPZ_PAD 64u

/*
 * Byte offsets inside one group's scratch; all multiples of 64:
 *   IN       the block's bytes (shuffled, for blosc), then SPZ_PAD zeros;
 *   CAND     per position, its match candidate + 1 (0: none), u32;
 *            once the parse is done, per sequence its literal-length and
 *            match-length codes (SEQCODE, u16) and after them its offset
 *            code (OFCODE, u8), in block order;
 *   SUBSEQ   per segment, its sequences as the parse found them: two u32
 *            each, literal length | match length << 16, and the offset;
 *   SEQ      the block's sequences in order, two u32 each: literal
 *            length (with the literals carried from earlier segments) and
 *            match length | Offset_Value << SPZ_SEQ_OFV_SHIFT;
 *   LITS     the block's literals in order;
 *   PARTS    bits of each Huffman packing part;
 *   DESC     the Huffman tree description;
 *   SEQST    the three FSE states after each sequence;
 *   SEQPARTS bits of each sequences packing part;
 *   SEQDESC  the fitted FSE tables' descriptions, SPZ_SEQDESC_CAP
 *            bytes per symbol type (zstd_seq.h).
 */
#define SPZ_R64(x) (((x) + 63u) / 64u * 64u)
#define SPZ_OFF_IN 0u
#define SPZ_OFF_CAND SPZ_R64(SPZ_BLOCK + SPZ_PAD)
#define SPZ_OFF_SEQCODE SPZ_OFF_CAND
#define SPZ_OFF_OFCODE (SPZ_OFF_CAND + 2u * SPZ_MAX_SEQ)
#define SPZ_OFF_SUBSEQ (SPZ_OFF_CAND + 4u * SPZ_BLOCK)
#define SPZ_OFF_SEQ (SPZ_OFF_SUBSEQ + 8u * SPZ_MAX_SEQ)
#define SPZ_OFF_LITS (SPZ_OFF_SEQ + 8u * SPZ_MAX_SEQ)
#define SPZ_OFF_PARTS (SPZ_OFF_LITS + SPZ_BLOCK)
#define SPZ_OFF_DESC SPZ_R64(SPZ_OFF_PARTS + 4u * SPZ_PART_WORDS)
#define SPZ_OFF_SEQST SPZ_R64(SPZ_OFF_DESC + SPZ_DESC_CAP)
#define SPZ_OFF_SEQPARTS SPZ_R64(SPZ_OFF_SEQST + 3u * SPZ_MAX_SEQ)
#define SPZ_OFF_SEQDESC SPZ_R64(SPZ_OFF_SEQPARTS + 4u * SPZ_SEQPART_WORDS)
/* A fitted table's description: at most 53 symbols of at most 10 bits
 * each (a log of 8), the 4-bit log and the zero-run flags. */
#define SPZ_SEQDESC_CAP 96u
/* One group's scratch: about 1.3 MiB, whatever the level. */
#define SPZ_SCRATCH_BYTES SPZ_R64(SPZ_OFF_SEQDESC + 3u * SPZ_SEQDESC_CAP)
/* Match lengths stay below 1 << 13 (SPZ_MATCH_MAX); Offset_Value (at
 * most 18 bits) above. */
#define SPZ_SEQ_OFV_SHIFT 13

/* Shared scalars of the work-group encoding a block, a local u64 array
 * (zstd_block.h). */
#define SPZ_SH_LITMODE 0  /* SPZ_LIT_* */
#define SPZ_SH_NSTREAMS 1
#define SPZ_SH_DESC 2     /* Huffman tree description bytes */
#define SPZ_SH_LITSEC 3   /* literals section bytes */
#define SPZ_SH_NLIT 4
#define SPZ_SH_NSEQ 5
#define SPZ_SH_FAIL 6     /* the block is stored raw */
#define SPZ_SH_SEQEND 7   /* end of the sequences section */
#define SPZ_SH_SSIZE 8    /* 4 words: Huffman stream sizes */
#define SPZ_SH_SPOS 12    /* 4 words: where each stream goes */
#define SPZ_SH_SBITS 16   /* 4 words: Huffman stream bits */
#define SPZ_SH_SEQAT 20   /* where the sequences bitstream starts */
#define SPZ_SH_SEQBITS 21 /* its bits, end mark included */
#define SPZ_SH_HUF 22     /* Huffman coding is worth trying */
#define SPZ_SH_MAXSYM 23
#define SPZ_SH_SEQMODE 24 /* 3 words: how each symbol type is coded */
#define SPZ_SH_WORDS 27

/* Blocks of a frame of n bytes (an empty frame has one empty block). */
#define SPZ_NBLOCKS(n) ((n) == 0 ? 1u : ((n) + SPZ_BLOCK - 1u) / SPZ_BLOCK)

/*
 * What sp_zstd_units reports per block, one u64: the block's type
 * (Block_Type: 0 raw, 1 RLE, 2 compressed) at SPZ_U_TYPE_SHIFT and the
 * bytes of its content in the unit area, which for raw blocks are the
 * block's bytes and for RLE blocks its one byte.
 */
#define SPZ_U_TYPE_SHIFT 32

/*
 * Worst case of one frame of n bytes: the frame header (4 magic, 1
 * descriptor, up to 8 content size), per block a 3-byte header and at
 * most the block's bytes (a raw block when nothing smaller exists), and a
 * 4-byte checksum.  Within ZSTD_COMPRESSBOUND (src/codec.c) for every n.
 */
#define SPZ_WORST_CASE(n) ((n) + 17u + 3u * ((n) / SPZ_BLOCK + 1u))

/* The frame kernel's level word: the level in the low 32 bits, bit
 * SPZ_ARG_CHECKSUM_BIT set for a frame checksum (Zarr's zstd "checksum":
 * true).  A bit number, not a mask: the host and the kernel dialects
 * spell 64-bit types differently. */
#define SPZ_ARG_CHECKSUM_BIT 32

#endif
