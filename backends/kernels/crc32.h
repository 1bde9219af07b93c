/*
 * crc32.h - CRC-32 of RFC 1952 (the gzip trailer's), in the kernel
 * dialect: a byte-at-a-time table in local memory for the segments one
 * work-item checks, and the polynomial arithmetic that joins the CRCs of
 * consecutive segments into the CRC of the whole chunk, pairwise as a
 * tree (the shifts of powers of two tabulated once).
 *
 * Polynomials are kept in the reflected order the gzip CRC uses: bit 31
 * holds the coefficient of x^0, bit 0 that of x^31.
 */
#ifndef SP_KERNEL_CRC32_H
#define SP_KERNEL_CRC32_H

#define SP_CRC32_POLY 0xEDB88320u /* x^32 + x^26 + ... + 1, reflected */

/* Entries of the table crc32_bytes takes: four of 256 (slicing by 4). */
#define SP_CRC32_TABLE (4 * 256)

/*
 * Every work-item of the group calls it.  table[0..256) is the byte-at-a-
 * time table; table[k * 256 + b] is the register after byte b followed by
 * k zero bytes, so four bytes are folded in with four look-ups.
 */
DEVICE_FN void crc32_table_build(LOCAL u32 *table)
{
	for (u64 i = LOCAL_ID(); i < 256; i += LOCAL_SIZE()) {
		u32 c = (u32)i;

		WORK(8);
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ SP_CRC32_POLY : c >> 1;
		table[i] = c;
	}
	BARRIER();
	for (u64 i = LOCAL_ID(); i < 256; i += LOCAL_SIZE()) {
		u32 c = table[i];

		WORK(3);
		for (int k = 1; k < 4; k++) {
			c = (c >> 8) ^ table[c & 0xFF];
			table[k * 256 + i] = c;
		}
	}
	BARRIER();
}

/* The CRC-32 of src[0..n), one work-item. */
DEVICE_FN u32 crc32_bytes(LOCAL const u32 *table, GLOBAL const u8 *src,
			  u64 n)
{
	u32 c = 0xFFFFFFFFu;
	u64 i = 0;

	WORK(n / 4 + n % 4);
	for (; i + 4 <= n; i += 4) {
		c ^= (u32)src[i] | ((u32)src[i + 1] << 8) |
		     ((u32)src[i + 2] << 16) | ((u32)src[i + 3] << 24);
		c = table[768 + (c & 0xFF)] ^ table[512 + ((c >> 8) & 0xFF)] ^
		    table[256 + ((c >> 16) & 0xFF)] ^ table[c >> 24];
	}
	for (; i < n; i++)
		c = table[(c ^ src[i]) & 0xFF] ^ (c >> 8);
	return ~c;
}

/* a * b modulo the CRC polynomial. */
DEVICE_FN u32 crc32_mulmod(u32 a, u32 b)
{
	u32 p = 0;

	WORK(32);
	/* Walk a's coefficients from x^0 up while b runs through b * x^i. */
	for (u32 bit = 0x80000000u; bit != 0; bit >>= 1) {
		if (a & bit)
			p ^= b;
		b = (b & 1) ? (b >> 1) ^ SP_CRC32_POLY : b >> 1;
	}
	return p;
}

/* Entries of the table crc32_pow_build fills: shifts of 2^k bytes for
 * every k a chunk's length needs (SP_DEFL_MAX_CHUNK is 2^28). */
#define SP_CRC32_POWS 29

/* pow[k] = x^(8 * 2^k) modulo the polynomial: the shift 2^k more bytes
 * apply.  One work-item's work, SP_CRC32_POWS products. */
DEVICE_FN void crc32_pow_build(LOCAL u32 *pow)
{
	u32 sq = 0x00800000u; /* x^8 */

	for (u32 k = 0; k < SP_CRC32_POWS; k++) {
		pow[k] = sq;
		sq = crc32_mulmod(sq, sq);
	}
}

/* x^(8 n) modulo the polynomial, the shift n more bytes apply: one
 * product per bit set in n. */
DEVICE_FN u32 crc32_shift(LOCAL const u32 *pow, u64 n)
{
	u32 r = 0x80000000u; /* x^0 */

	for (u32 k = 0; n != 0; k++, n >>= 1) {
		WORK(1);
		if (n & 1)
			r = crc32_mulmod(r, pow[k]);
	}
	return r;
}

/*
 * CRC of A followed by B from crc(A), crc(B) and the shift for |B|
 * (crc32_shift): the register is linear in the message, and the
 * initial and final inversions cancel between the two terms.
 */
DEVICE_FN u32 crc32_join(u32 crc_a, u32 crc_b, u32 shift_b)
{
	return crc32_mulmod(crc_a, shift_b) ^ crc_b;
}

#endif
