/*
 * zstd_xxh64.h - XXH64 (seed 0) of a chunk, for the zstd frame's
 * Content_Checksum (RFC 8878 3.1.1: the low 4 bytes of XXH64 of the
 * decompressed content, little-endian), computed on the device.
 *
 * XXH64 keeps four accumulators, each fed one 8-byte lane of every 32-byte
 * stripe; they only meet at the end.  So the four lanes are four
 * independent serial walks: items 0..3 (strided by the local size, so a
 * single item walks all four) each run one, and item 0 merges them with
 * the tail.  The result is the same whatever the local size.
 *
 * Constants are built from two 32-bit halves: OpenCL C gives `ull`
 * literals a width of its own (see zstd_match.h).
 */
#ifndef SP_KERNEL_ZSTD_XXH64_H
#define SP_KERNEL_ZSTD_XXH64_H

#define SPZ_XP1 ((u64)0x9E3779B1u << 32 | 0x85EBCA87u)
#define SPZ_XP2 ((u64)0xC2B2AE3Du << 32 | 0x27D4EB4Fu)
#define SPZ_XP3 ((u64)0x165667B1u << 32 | 0x9E3779F9u)
#define SPZ_XP4 ((u64)0x85EBCA77u << 32 | 0xC2B2AE63u)
#define SPZ_XP5 ((u64)0x27D4EB2Fu << 32 | 0x165667C5u)

DEVICE_FN u64 spz_rotl64(u64 x, u32 r)
{
	return x << r | x >> (64 - r);
}

DEVICE_FN u64 spz_rd64(GLOBAL const u8 *p)
{
	u64 v = 0;

	WORK(1);
	for (u32 i = 0; i < 8; i++)
		v |= (u64)p[i] << (8 * i);
	return v;
}

DEVICE_FN u64 spz_xround(u64 acc, u64 lane)
{
	acc += lane * SPZ_XP2;
	return spz_rotl64(acc, 31) * SPZ_XP1;
}

/* Accumulator k (0..3) after every whole stripe of src[0..n), n >= 32. */
DEVICE_FN u64 spz_xxh64_lane(GLOBAL const u8 *src, u64 n, u32 k)
{
	u64 acc = k == 0 ? SPZ_XP1 + SPZ_XP2 : k == 1 ? SPZ_XP2 :
		  k == 2 ? 0 : (u64)0 - SPZ_XP1;

	for (u64 s = 0; s + 32 <= n; s += 32)
		acc = spz_xround(acc, spz_rd64(src + s + 8 * k));
	return acc;
}

/* The digest from the four lanes (ignored when n < 32) and the tail. */
DEVICE_FN u64 spz_xxh64_finish(GLOBAL const u8 *src, u64 n,
			       LOCAL const u64 *lane)
{
	u64 h, p = n & ~(u64)31;

	if (n >= 32) {
		h = spz_rotl64(lane[0], 1) + spz_rotl64(lane[1], 7) +
		    spz_rotl64(lane[2], 12) + spz_rotl64(lane[3], 18);
		for (u32 k = 0; k < 4; k++) {
			h ^= spz_xround(0, lane[k]);
			h = h * SPZ_XP1 + SPZ_XP4;
		}
	} else {
		h = SPZ_XP5;
	}
	h += n;
	for (; p + 8 <= n; p += 8) {
		h ^= spz_xround(0, spz_rd64(src + p));
		h = spz_rotl64(h, 27) * SPZ_XP1 + SPZ_XP4;
	}
	if (p + 4 <= n) {
		u64 w = (u64)src[p] | (u64)src[p + 1] << 8 |
			(u64)src[p + 2] << 16 | (u64)src[p + 3] << 24;

		h ^= w * SPZ_XP1;
		h = spz_rotl64(h, 23) * SPZ_XP2 + SPZ_XP3;
		p += 4;
	}
	for (; p < n; p++) {
		WORK(1);
		h ^= (u64)src[p] * SPZ_XP5;
		h = spz_rotl64(h, 11) * SPZ_XP1;
	}
	h ^= h >> 33;
	h *= SPZ_XP2;
	h ^= h >> 29;
	h *= SPZ_XP3;
	h ^= h >> 32;
	return h;
}

#endif
