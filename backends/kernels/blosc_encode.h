/*
 * blosc_encode.h - stage 3 for codec "blosc": each chunk becomes one blosc1
 * container (the format c-blosc 1.x reads) in its slot, with zstd as the
 * internal compressor; sizes[i] its length.  The choices the format
 * leaves open (block size, streams, fallbacks, level mapping) are in
 * blosc_layout.h.
 *
 * One work-group per chunk (groups stride over the chunks).  Per block,
 * in order: all items shuffle (or bitshuffle) the block into scratch, one
 * output byte each; then each stream of the block is one zstd frame from
 * the zstd encoder (zstd_encode.h's spz_chunk, the whole group), copied
 * behind its length, or the stream itself when the frame is not smaller.
 * Every partition is fixed (blosc_layout.h), so the output does not depend
 * on the local size.
 *
 * Arguments: those of sp_codec_zstd, the level being blosc's clevel, then
 * the element size, the shuffle (SPB_NOSHUFFLE..SPB_BITSHUFFLE) and the
 * block size (SPB_BLOCKSIZE, computed by the driver).  scratch holds
 * SPB_SCRATCH_BYTES(SPZ_HLOG_OF_LEVEL(SPB_ZSTD_LEVEL(level)), blocksize)
 * bytes per launched group; capacity is at least SPB_BOUND(chunk_bytes).
 */
#ifndef SP_KERNEL_BLOSC_ENCODE_H
#define SP_KERNEL_BLOSC_ENCODE_H

#include "kernel-list.h"
#include "blosc_layout.h"
#include "zstd_encode.h"

/* Byte o of block src (bl bytes of ts-byte elements) after the shuffle. */
DEVICE_FN u8 spb_shuffled(GLOBAL const u8 *src, u64 bl, u64 ts, u32 mode,
			  u64 o)
{
	u64 q = bl / ts;

	if (o >= q * ts || mode == SPB_NOSHUFFLE)
		return src[o];
	if (mode == SPB_SHUFFLE)
		return src[(o % q) * ts + o / q];
	/* Bitshuffle, c-blosc 1.x: only blocks of a multiple of 8 elements.
	 * Rows of q/8 bytes, byte j of the element major, bit k minor; bit
	 * e of a row's byte m is bit k of byte j of element 8m + e. */
	if (q % 8 != 0)
		return src[o];
	{
		u64 row = o / (q / 8), m = o % (q / 8);
		u64 j = row / 8, k = row % 8;
		u32 v = 0;

		WORK(8);
		for (u32 e = 0; e < 8; e++)
			v |= (u32)((src[(8 * m + e) * ts + j] >> k) & 1u) << e;
		return (u8)v;
	}
}

DEVICE_FN void spb_put32(GLOBAL u8 *p, u64 v)
{
	for (u32 i = 0; i < 4; i++)
		p[i] = (u8)(v >> (8 * i));
}

/* The container of one chunk of n bytes; all items of the group. */
DEVICE_FN void spb_chunk(GLOBAL const u8 *src, u64 n, GLOBAL u8 *dst,
			 GLOBAL u8 *ws, u64 ts, u32 mode, u64 bsz,
			 u64 level, struct spz_params prm, LOCAL u64 *red,
			 LOCAL u64 *sh, LOCAL u32 *freq, LOCAL u16 *lcost,
			 LOCAL u8 *hlen, LOCAL u16 *hcode, LOCAL u8 *ft,
			 GLOBAL u64 *size)
{
	GLOBAL u8 *shuf = ws + SPB_OFF_SHUF(prm.hlog);
	GLOBAL u8 *frame = ws + SPB_OFF_FRAME(prm.hlog, bsz);
	GLOBAL u64 *fsize = (GLOBAL u64 *)(ws + SPB_OFF_SIZE(prm.hlog, bsz));
	u64 nblocks = (n + bsz - 1) / bsz;
	u64 limit = SPB_BOUND(n);
	u64 out = SPB_HEADER + 4 * nblocks;
	/* Every item follows the same decisions: out and stored are
	 * computed alike by all from values read after barriers. */
	u32 stored = level == 0 || n < SPB_MIN_BYTES || out >= limit;
	u32 flags = SPB_COMP_ZSTD << 5;

	for (u64 b = 0; !stored && b < nblocks; b++) {
		u64 bs = b * bsz, bl = spz_min(bsz, n - bs);
		u64 nsplit = bl == bsz && ts <= SPB_MAX_SPLITS &&
					     bl / ts >= SPB_MIN_SPLIT_ELEMS
				     ? ts : 1;
		u64 neb = bl / nsplit;

		PHASE("shuffle");
		for (u64 i = LOCAL_ID(); i < bl; i += LOCAL_SIZE()) {
			WORK(1);
			shuf[i] = spb_shuffled(src + bs, bl, ts, mode, i);
		}
		if (LOCAL_ID() == 0)
			spb_put32(dst + SPB_HEADER + 4 * b, out);
		BARRIER();
		for (u64 s = 0; !stored && s < nsplit; s++) {
			u64 flen, slen;
			GLOBAL const u8 *from;

			spz_chunk(shuf + s * neb, neb, frame, ws, prm, red, sh,
				  freq, lcost, hlen, hcode, ft, fsize);
			flen = sh[SPZ_SH_OUT];
			BARRIER();
			slen = flen < neb ? flen : neb;
			from = flen < neb ? frame : shuf + s * neb;
			if (out + 4 + slen >= limit) {
				stored = 1;
				break;
			}
			PHASE("copy");
			if (LOCAL_ID() == 0)
				spb_put32(dst + out, slen);
			for (u64 i = LOCAL_ID(); i < slen; i += LOCAL_SIZE()) {
				WORK(1);
				dst[out + 4 + i] = from[i];
			}
			out += 4 + slen;
			/* The next frame or block reuses the scratch. */
			BARRIER();
		}
	}
	if (stored) {
		PHASE("stored");
		for (u64 i = LOCAL_ID(); i < n; i += LOCAL_SIZE()) {
			WORK(1);
			dst[SPB_HEADER + i] = src[i];
		}
		out = limit;
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
		dst[3] = (u8)ts;
		spb_put32(dst + 4, n);
		spb_put32(dst + 8, bsz);
		spb_put32(dst + 12, out);
		*size = out;
	}
	BARRIER();
}

SP_ENCODER_ENTRY(sp_codec_blosc)
{
	SPZ_LOCAL_ARRAYS();
	u64 zlevel = level == 0 ? 1 : SPB_ZSTD_LEVEL(level);
	struct spz_params prm = spz_params_of((i64)zlevel);
	GLOBAL u8 *ws = scratch + GROUP_ID() *
			(u64)SPB_SCRATCH_BYTES(prm.hlog, blocksize);

	PHASE("setup");
	if (LOCAL_ID() == 0)
		spz_ft_predefined(ft);
	BARRIER();
	for (u64 j = GROUP_ID(); j < n; j += NUM_GROUPS()) {
		UNIT();
		spb_chunk(pool + j * chunk_bytes, chunk_bytes,
			  slots + j * capacity, ws, typesize, (u32)mode,
			  blocksize, level, prm, red, sh, freq, lcost, hlen,
			  hcode, ft, sizes + j);
	}
}

#endif
