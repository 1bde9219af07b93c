/*
 * blosc_encode.h - stage 3's second kernel for codec "blosc": each chunk
 * becomes one blosc1 container (the format c-blosc 1.x reads) in its
 * slot, with zstd as the internal compressor; sizes[i] its length.  The
 * choices the format leaves open (block size, streams, fallbacks, level
 * mapping) are in blosc_layout.h.
 *
 * Every stream's zstd blocks were encoded by sp_zstd_units, one unit
 * each (zstd_units.h).  Here one work-group per chunk (groups stride over
 * the chunks) stitches them: item 0 scans the streams in order, sizing
 * each stream's frame from its blocks, choosing between the frame and
 * the stream stored as it is, and writing every header (container, block
 * starts, stream lengths, frame and block headers) where the scan puts
 * it, and each unit's destination over its usizes word; then the whole
 * group copies the units' contents, or a stored stream's shuffled bytes,
 * into place.  The container is a function of the chunk and the units'
 * output alone.
 *
 * Arguments: those of sp_codec_zstd, the level being blosc's clevel, then
 * the element size, the shuffle (SPB_NOSHUFFLE..SPB_BITSHUFFLE) and the
 * block size (SPB_BLOCKSIZE, computed by the driver); usizes holds
 * SPB_UNITS words per chunk.  capacity is at least SPB_BOUND(chunk_bytes).
 */
#ifndef SP_KERNEL_BLOSC_ENCODE_H
#define SP_KERNEL_BLOSC_ENCODE_H

#include "kernel-list.h"
#include "blosc_layout.h"
#include "blosc_shuffle.h"
#include "zstd_encode.h"
#include "zstd_units.h"

/* A unit's destination, as spb_plan leaves it in the unit's word: its
 * place in the slot, its length, and whether it is stored shuffled bytes
 * rather than a block's content. */
#define SPB_U_LEN_SHIFT 32
#define SPB_U_STORED_BIT 63

DEVICE_FN void spb_put32(GLOBAL u8 *p, u64 v)
{
	spz_put_le(p, v, 4);
}

/*
 * One item: the layout of the container of a chunk of n bytes into dst
 * and us (see above).  Returns the container's bytes, or 0 when the chunk
 * is stored whole.
 */
DEVICE_FN u64 spb_plan(GLOBAL u8 *dst, u64 n, u64 ts, u64 bs, u64 level,
		       GLOBAL u64 *us)
{
	u64 nblocks = (n + bs - 1) / bs, limit = SPB_BOUND(n), k = 0;
	u64 at = SPB_HEADER + 4 * nblocks;

	if (level == 0 || n < SPB_MIN_BYTES || at >= limit)
		return 0;
	for (u64 b = 0; b < nblocks; b++) {
		u64 bl = spz_min(bs, n - b * bs);
		u64 ns = bl == bs ? SPB_NSPLIT(bs, ts) : 1, neb = bl / ns;
		u64 zb = SPZ_NBLOCKS(neb);

		spb_put32(dst + SPB_HEADER + 4 * b, at);
		for (u64 s = 0; s < ns; s++, k += zb) {
			u64 flen = spz_frame_header_len(neb), slen, pos;

			WORK(2 * zb);
			for (u64 z = 0; z < zb; z++)
				flen += 3 + (u32)us[k + z];
			slen = flen < neb ? flen : neb;
			if (at + 4 + slen >= limit)
				return 0;
			spb_put32(dst + at, slen);
			pos = at + 4;
			if (flen < neb)
				pos += spz_frame_header(dst + pos, neb, 0);
			for (u64 z = 0; z < zb; z++) {
				u64 len;

				if (flen < neb) {
					len = spz_block_header(dst + pos, neb,
							       z, us[k + z]);
					pos += 3;
					us[k + z] = pos | len << SPB_U_LEN_SHIFT;
				} else {
					len = spz_min(SPZ_BLOCK,
						      neb - z * SPZ_BLOCK);
					us[k + z] = pos |
						    len << SPB_U_LEN_SHIFT |
						    (u64)1 << SPB_U_STORED_BIT;
				}
				pos += len;
			}
			at += 4 + slen;
		}
	}
	return at;
}

SP_ENCODER_ENTRY(sp_codec_blosc)
{
	LOCAL_ARRAY(u64, bsh, 1);
	u64 upc = SPB_UNITS(chunk_bytes, typesize, blocksize);

	for (u64 j = GROUP_ID(); j < n; j += NUM_GROUPS()) {
		GLOBAL const u8 *src = pool + j * chunk_bytes;
		GLOBAL const u8 *from = out + j * chunk_bytes;
		GLOBAL u8 *dst = slots + j * capacity;
		GLOBAL u64 *us = usizes + j * upc;
		u32 flags = SPB_COMP_ZSTD << 5;
		u64 size;

		UNIT();
		PHASE("plan");
		if (LOCAL_ID() == 0)
			bsh[0] = spb_plan(dst, chunk_bytes, typesize, blocksize,
					  level, us);
		BARRIER();
		PHASE("copy");
		size = bsh[0];
		for (u64 k = 0; size != 0 && k < upc; k++) {
			u64 w = us[k], pos = (u32)w;
			u32 len = (u32)(w >> SPB_U_LEN_SHIFT) & 0x7FFFFFFFu;
			struct spz_unit un = spz_unit_of(k, chunk_bytes,
							 typesize, blocksize);

			for (u32 x = (u32)LOCAL_ID(); x < len;
			     x += (u32)LOCAL_SIZE()) {
				WORK(1);
				dst[pos + x] = w >> SPB_U_STORED_BIT
					? spb_shuffled(src + un.bstart, un.bbl,
						       typesize, (u32)mode,
						       un.off + x)
					: from[un.bstart + un.off + x];
			}
		}
		if (size == 0) {
			for (u64 i = LOCAL_ID(); i < chunk_bytes;
			     i += LOCAL_SIZE()) {
				WORK(1);
				dst[SPB_HEADER + i] = src[i];
			}
			size = SPB_BOUND(chunk_bytes);
			flags |= SPB_FLAG_MEMCPYED;
		}
		if (mode == SPB_SHUFFLE)
			flags |= SPB_FLAG_SHUFFLE;
		if (mode == SPB_BITSHUFFLE)
			flags |= SPB_FLAG_BITSHUFFLE;
		if (LOCAL_ID() == 0) {
			dst[0] = (u8)SPB_VERSION;
			dst[1] = (u8)SPB_ZSTD_VERSION;
			dst[2] = (u8)flags;
			dst[3] = (u8)typesize;
			spb_put32(dst + 4, chunk_bytes);
			spb_put32(dst + 8, blocksize);
			spb_put32(dst + 12, size);
			sizes[j] = size;
		}
		BARRIER();
	}
}

#endif
