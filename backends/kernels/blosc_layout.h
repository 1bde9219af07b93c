/*
 * blosc_layout.h - the blosc1 encoder's fixed choices and its global
 * scratch, shared by the kernel (blosc_encode.h) and the host driver, so it holds
 * only macros.  No line continuations: embed.awk does not keep them.
 *
 * The blosc1 container (c-blosc 1.x, README_CHUNK_FORMAT): a 16-byte
 * header (version 2, compressor version, flags, typesize, then
 * little-endian u32 nbytes, blocksize, cbytes), one u32 start per block
 * (from the container's first byte), and per block its streams, each a
 * u32 length followed by that many bytes: a zstd frame, or the stream's
 * bytes themselves when the length equals the stream's size.
 *
 * What the format leaves to the encoder, and what we choose (every choice
 * a function of the chunk size, typesize, shuffle and level alone, never
 * of the local size or device):
 *   - block size: the description's blosc_blocksize when set (the
 *     smaller of it and the chunk, rounded down to whole elements, as
 *     c-blosc does), else SPB_AUTO_BLOCK = 256 KiB (or the whole chunk
 *     when smaller).  c-blosc's own automatic block for zstd at clevel 1
 *     is 32 KiB; larger blocks compress better and give each zstd frame
 *     more work, and every reader takes any block size from the header.
 *   - streams: blocks are split into typesize streams (one per shuffled
 *     byte plane) whenever the format lets a decoder split (typesize <=
 *     16, at least 128 elements in the block, not the chunk's last
 *     partial block), so the split flag (0x10) is never set.  This is the
 *     "byte planes compressed separately" that the issue measured, and
 *     the one layout every c-blosc 1.x reads: decoders before the flag
 *     existed split by exactly this rule.
 *   - a stream is stored (length = its size) when its zstd frame would not
 *     be smaller;
 *   - the whole chunk is stored behind the header (flag MEMCPYED, cbytes =
 *     nbytes + 16) at clevel 0, for chunks below 128 bytes (as c-blosc),
 *     and when the framed container would not be smaller than that.
 *   - zstd level: clevel c maps to zstd level 2c - 1 for c < 9 and 22 for
 *     c = 9, c-blosc's own mapping, so level numbers mean what they mean
 *     to c-blosc.
 *   - bitshuffle follows c-blosc 1.x: the elements of a block are bit
 *     transposed when their count is a multiple of 8, the block is left
 *     as it is otherwise; bytes beyond the last whole element stay in
 *     place.  Byte shuffle transposes the whole elements and leaves the
 *     remainder in place.
 */
#ifndef SP_KERNEL_BLOSC_LAYOUT_H
#define SP_KERNEL_BLOSC_LAYOUT_H

#include "zstd_layout.h"

#define SPB_HEADER 16u
#define SPB_VERSION 2u          /* BLOSC_VERSION_FORMAT of c-blosc 1.x */
#define SPB_ZSTD_VERSION 1u     /* BLOSC_ZSTD_VERSION_FORMAT */
#define SPB_FLAG_SHUFFLE 0x01u
#define SPB_FLAG_MEMCPYED 0x02u
#define SPB_FLAG_BITSHUFFLE 0x04u
#define SPB_FLAG_NOSPLIT 0x10u
#define SPB_COMP_ZSTD 4u        /* compressor code, flags bits 5-7 */
#define SPB_MIN_BYTES 128u      /* smaller chunks are stored */
#define SPB_MAX_SPLITS 16u
#define SPB_MIN_SPLIT_ELEMS 128u
#define SPB_AUTO_BLOCK 262144u

/* The shuffle argument: shardpipe_blosc_shuffle's values. */
#define SPB_NOSHUFFLE 0u
#define SPB_SHUFFLE 1u
#define SPB_BITSHUFFLE 2u

/* The zstd level of blosc clevel c (1..9). */
#define SPB_ZSTD_LEVEL(c) ((c) >= 9 ? 22u : 2u * (c) - 1u)

/* The block size for a chunk of n bytes of ts-byte elements; forced = 0
 * for the automatic one. */
#define SPB_BS_RAW(n, f) ((f) == 0 ? ((n) < SPB_AUTO_BLOCK ? (n) : SPB_AUTO_BLOCK) : ((f) < (n) ? (f) : (n)))
#define SPB_BLOCKSIZE(n, ts, f) (SPB_BS_RAW(n, f) > (ts) ? SPB_BS_RAW(n, f) / (ts) * (ts) : SPB_BS_RAW(n, f))

/* The largest container: the stored chunk. */
#define SPB_BOUND(n) ((n) + SPB_HEADER)

/*
 * The work units of one chunk (doc/design.md §13.3): a whole block of bs
 * bytes is cut into SPB_NSPLIT streams and each stream, a zstd frame, into
 * blocks of SPZ_BLOCK bytes, each block one unit of sp_zstd_units; the
 * last partial block is one stream.  bs = 0 stands for codec zstd, whose
 * chunk is one frame: its units are that frame's blocks.  The kernel
 * (zstd_units.h) and the driver both count with SPB_UNITS.
 */
#define SPB_NSPLIT(bs, ts) ((ts) <= SPB_MAX_SPLITS && (bs) / (ts) >= SPB_MIN_SPLIT_ELEMS ? (ts) : 1u)
#define SPB_UNITS_FULL(bs, ts) (SPB_NSPLIT(bs, ts) * SPZ_NBLOCKS((bs) / SPB_NSPLIT(bs, ts)))
#define SPB_UNITS(n, ts, bs) ((bs) == 0 ? SPZ_NBLOCKS(n) : (n) / (bs) * SPB_UNITS_FULL(bs, ts) + ((n) % (bs) != 0 ? SPZ_NBLOCKS((n) % (bs)) : 0u))

#endif
