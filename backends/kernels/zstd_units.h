/*
 * zstd_units.h - stage 3's first kernel for codecs "zstd" and "blosc":
 * every block of every zstd frame of a batch, encoded as its own work unit
 * (doc/design.md §13.1, §13.3).
 *
 * A chunk's frames are the chunk itself (zstd, blocksize 0) or its blosc
 * streams: each whole blosc block of `blocksize` bytes cut into
 * SPB_NSPLIT byte planes, the last partial block one stream
 * (blosc_layout.h).  Each frame is cut into blocks of SPZ_BLOCK bytes.
 * Unit u of the batch is block u mod SPB_UNITS of chunk u / SPB_UNITS; the
 * work-groups stride over the units, each with its own scratch, so a
 * batch of 32 chunks of 576 KiB offers 160 units where it offered 32
 * chunks.
 *
 * A unit stages its bytes (shuffled, for blosc) into its group's scratch,
 * then encodes them (zstd_block.h) into its area of `out`: the same bytes
 * of the same chunk's region, the unit's content never being longer than
 * its input; usizes[u] receives the block's type and content size.  The
 * frame kernels then stitch each chunk's blocks after a scan of their
 * sizes (sp_codec_zstd, sp_codec_blosc).
 *
 * Arguments: the chunk pool (n chunks of chunk_bytes), `out` (n times
 * chunk_bytes), usizes (n times SPB_UNITS), the scratch
 * (SPZ_SCRATCH_BYTES per launched group), the zstd level, and the blosc
 * geometry: element size, shuffle and block size (1, SPB_NOSHUFFLE and 0
 * for zstd).
 */
#ifndef SP_KERNEL_ZSTD_UNITS_H
#define SP_KERNEL_ZSTD_UNITS_H

#include "kernel-list.h"
#include "blosc_shuffle.h"
#include "zstd_block.h"

/* Where unit k of a chunk of n bytes lies. */
struct spz_unit {
	u64 bstart;  /* its blosc block (for zstd, the chunk) */
	u64 bbl;     /* that block's bytes */
	u64 off;     /* the unit's first byte in the shuffled block */
	u32 len;     /* the unit's bytes */
	u32 first;   /* the first block of its frame (zstd_seq.h's repeats) */
};

DEVICE_FN struct spz_unit spz_unit_of(u64 k, u64 n, u64 ts, u64 bs)
{
	struct spz_unit u;
	u64 fo = 0, fl, z = k;  /* the frame's offset, bytes; the block */

	u.bstart = 0;
	u.bbl = n;
	fl = n;
	if (bs != 0) {
		u64 full = n / bs, per = SPB_UNITS_FULL(bs, ts);

		if (k < full * per) {
			u64 ns = SPB_NSPLIT(bs, ts), zb = per / ns, r = k % per;

			u.bstart = k / per * bs;
			u.bbl = bs;
			fl = bs / ns;
			fo = r / zb * fl;
			z = r % zb;
		} else {
			u.bstart = full * bs;
			u.bbl = n - u.bstart;
			fl = u.bbl;
			z = k - full * per;
		}
	}
	u.off = fo + z * SPZ_BLOCK;
	u.len = (u32)spz_min(SPZ_BLOCK, fl - z * SPZ_BLOCK);
	u.first = z == 0;
	return u;
}

/*
 * Stage bl bytes of a unit into ws (SPZ_OFF_IN), zero-padded: byte i is
 * byte o + i of the block src (bbl bytes of ts-byte elements) after the
 * shuffle `mode`, and count them into freq (cleared first).
 */
DEVICE_FN void spz_stage(GLOBAL const u8 *src, u64 bbl, u64 ts, u32 mode,
			 u64 o, u32 bl, GLOBAL u8 *ws, LOCAL u32 *freq)
{
	GLOBAL u8 *in = ws + SPZ_OFF_IN;

	PHASE("stage");
	for (u32 s = (u32)LOCAL_ID(); s < 256; s += (u32)LOCAL_SIZE()) {
		WORK(1);
		freq[s] = 0;
	}
	BARRIER();
	for (u32 i = (u32)LOCAL_ID(); i < bl; i += (u32)LOCAL_SIZE()) {
		u8 v = mode == SPB_NOSHUFFLE ? src[o + i]
					     : spb_shuffled(src, bbl, ts, mode,
							    o + i);

		WORK(1);
		in[i] = v;
		LOCAL_ADD(freq + v, 1u);
	}
	for (u32 i = (u32)LOCAL_ID(); i < SPZ_PAD; i += (u32)LOCAL_SIZE())
		in[bl + i] = 0;
}

SP_ENCODER_ENTRY(sp_zstd_units)
{
	SPZ_LOCAL_ARRAYS();
	struct spz_params prm = spz_params_of((i64)level);
	GLOBAL u8 *ws = scratch + GROUP_ID() * (u64)SPZ_SCRATCH_BYTES;
	u64 upc = SPB_UNITS(chunk_bytes, typesize, blocksize);

	PHASE("setup");
	if (LOCAL_ID() == 0)
		spz_ft_predefined(ft);
	BARRIER();
	for (u64 u = GROUP_ID(); u < n * upc; u += NUM_GROUPS()) {
		u64 j = u / upc;
		struct spz_unit un = spz_unit_of(u % upc, chunk_bytes, typesize,
						 blocksize);

		UNIT();
		spz_stage(pool + j * chunk_bytes + un.bstart, un.bbl, typesize,
			  (u32)mode, un.off, un.len, ws, freq);
		BARRIER();
		spz_block(ws, un.len, un.first, prm,
			  out + j * chunk_bytes + un.bstart + un.off, usizes + u,
			  tab, sh, freq, lcost, hlen, hcode, ft);
	}
}

#endif
