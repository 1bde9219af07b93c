/*
 * blosc_shuffle.h - the byte and bit shuffles of c-blosc 1.x, one output
 * byte at a time, so that any work-item may compute any byte: the zstd
 * units read their blosc stream through it (zstd_units.h), and the blosc
 * kernel copies a stream it stores (blosc_encode.h).
 */
#ifndef SP_KERNEL_BLOSC_SHUFFLE_H
#define SP_KERNEL_BLOSC_SHUFFLE_H

#include "blosc_layout.h"

/* Byte o of block src (bl bytes of ts-byte elements) after the shuffle.
 * 32-bit arithmetic: a blosc chunk stays below 2^31 bytes (the driver
 * refuses larger ones), and a device divides 64-bit words slowly. */
DEVICE_FN u8 spb_shuffled(GLOBAL const u8 *src, u64 bl, u64 ts, u32 mode,
			  u64 o)
{
	u32 t = (u32)ts, q = (u32)bl / t, x = (u32)o;

	if (x >= q * t || mode == SPB_NOSHUFFLE)
		return src[x];
	if (mode == SPB_SHUFFLE)
		return src[(x % q) * t + x / q];
	/* Bitshuffle, c-blosc 1.x: only blocks of a multiple of 8 elements.
	 * Rows of q/8 bytes, byte j of the element major, bit k minor; bit
	 * e of a row's byte m is bit k of byte j of element 8m + e. */
	if (q % 8 != 0)
		return src[x];
	{
		u32 row = x / (q / 8), m = x % (q / 8);
		u32 j = row / 8, k = row % 8;
		u32 v = 0;

		WORK(8);
		for (u32 e = 0; e < 8; e++)
			v |= (u32)((src[(8 * m + e) * t + j] >> k) & 1u) << e;
		return (u8)v;
	}
}

#endif
