/*
 * zstd_encode.h - stage 3's second kernel for codec "zstd": each chunk
 * becomes one zstd frame (RFC 8878) in its slot, and sizes[i] its length,
 * from the blocks sp_zstd_units encoded (zstd_units.h).  One work-group
 * per chunk (groups stride over the chunks).
 *
 * Frame: Single_Segment, Frame_Content_Size always present, no
 * dictionary, the Content_Checksum (XXH64's low 32 bits, zstd_xxh64.h)
 * only when the codec configuration asks for it.  Blocks of SPZ_BLOCK
 * bytes in order, each with its header.
 *
 * The stitch, per window of up to SP_WG_MAX blocks: item 0 scans the
 * blocks' sizes, writing each block's header where the scan puts it;
 * then the whole group copies the blocks' contents into place.  The
 * frame's bytes are a function of the units' output alone.
 *
 * Arguments: the chunk pool (for the checksum), the slots and sizes, the
 * units' `out` and usizes (SPZ_NBLOCKS(chunk_bytes) per chunk), and the
 * codec word last: the level in its low 32 bits, bit SPZ_ARG_CHECKSUM_BIT
 * set for a frame checksum.  capacity must be at least
 * SPZ_WORST_CASE(chunk_bytes); the driver checks that at open.
 */
#ifndef SP_KERNEL_ZSTD_ENCODE_H
#define SP_KERNEL_ZSTD_ENCODE_H

#include "kernel-list.h"
#include "zstd_layout.h"
#include "zstd_bits.h"
#include "zstd_xxh64.h"

/* The frame header's length for n bytes: magic, descriptor, content
 * size. */
DEVICE_FN u32 spz_frame_header_len(u64 n)
{
	return n < 256 ? 6 : n < 65536 + 256 ? 7 : n <= (u64)0xFFFFFFFFu ? 9
									   : 13;
}

/* Magic, descriptor and content size; returns the header's length. */
DEVICE_FN u32 spz_frame_header(GLOBAL u8 *dst, u64 n, u32 checksum)
{
	/* Frame_Header_Descriptor: FCS flag in bits 7-6, Single_Segment
	 * (bit 5), Content_Checksum_Flag (bit 2); no dictionary. */
	u32 len = spz_frame_header_len(n);
	u8 cs = checksum ? 0x04 : 0;

	spz_put_le(dst, 0xFD2FB528u, 4);
	dst[4] = (u8)((len == 6 ? 0x20 : len == 7 ? 0x60 : len == 9 ? 0xA0
								      : 0xE0) |
		      cs);
	if (len == 6)
		dst[5] = (u8)n;
	else
		spz_put_le(dst + 5, len == 7 ? n - 256 : n, len - 5);
	return len;
}

/* The 3-byte header of block b of a frame of n bytes from its unit's
 * word (SPZ_U_TYPE_SHIFT); returns the content's length. */
DEVICE_FN u32 spz_block_header(GLOBAL u8 *dst, u64 n, u64 b, u64 word)
{
	u32 type = (u32)(word >> SPZ_U_TYPE_SHIFT), len = (u32)word;
	u64 size = type == 1 ? spz_min(SPZ_BLOCK, n - b * SPZ_BLOCK) : len;
	u64 last = b + 1 == SPZ_NBLOCKS(n);

	spz_put_le(dst, last | (u64)type << 1 | size << 3, 3);
	return len;
}

/* The frames' local memory: a window's block places and lengths, the
 * write position, XXH64's lanes. */
#define SPZ_FRAME_LOCALS()                                                    \
	LOCAL_ARRAY(u64, at, SP_WG_MAX);                                      \
	LOCAL_ARRAY(u32, clen, SP_WG_MAX);                                    \
	LOCAL_ARRAY(u64, fsh, 4)

SP_ENCODER_ENTRY(sp_codec_zstd)
{
	SPZ_FRAME_LOCALS();
	u32 checksum = (u32)(level >> SPZ_ARG_CHECKSUM_BIT) & 1;
	u64 nb = SPZ_NBLOCKS(chunk_bytes);

	for (u64 j = GROUP_ID(); j < n; j += NUM_GROUPS()) {
		GLOBAL u8 *dst = slots + j * capacity;
		GLOBAL const u8 *from = out + j * chunk_bytes;
		GLOBAL const u64 *us = usizes + j * nb;

		UNIT();
		PHASE("stitch");
		if (LOCAL_ID() == 0)
			fsh[0] = spz_frame_header(dst, chunk_bytes, checksum);
		BARRIER();
		for (u64 w = 0; w < nb; w += SP_WG_MAX) {
			u32 wn = (u32)spz_min(SP_WG_MAX, nb - w);

			if (LOCAL_ID() == 0) {
				u64 pos = fsh[0];

				for (u32 i = 0; i < wn; i++) {
					WORK(1);
					clen[i] = spz_block_header(
						dst + pos, chunk_bytes, w + i,
						us[w + i]);
					at[i] = pos + 3;
					pos += 3 + clen[i];
				}
				fsh[0] = pos;
			}
			BARRIER();
			for (u32 i = 0; i < wn; i++)
				for (u32 x = (u32)LOCAL_ID(); x < clen[i];
				     x += (u32)LOCAL_SIZE()) {
					WORK(1);
					dst[at[i] + x] =
						from[(w + i) * SPZ_BLOCK + x];
				}
			BARRIER();
		}
		/* XXH64's four lanes, one per item, then the tail and the
		 * merge (zstd_xxh64.h); the frame ends with the digest's low
		 * 4 bytes. */
		PHASE("checksum");
		for (u32 k = (u32)LOCAL_ID(); checksum && k < 4;
		     k += (u32)LOCAL_SIZE())
			at[k] = chunk_bytes >= 32
					? spz_xxh64_lane(pool + j * chunk_bytes,
							 chunk_bytes, k)
					: 0;
		BARRIER();
		if (LOCAL_ID() == 0) {
			u64 end = fsh[0];

			if (checksum) {
				spz_put_le(dst + end,
					   spz_xxh64_finish(pool + j * chunk_bytes,
							    chunk_bytes, at),
					   4);
				end += 4;
			}
			sizes[j] = end;
		}
		BARRIER();
	}
}

#endif
