/*
 * copy.h - byte moves in words of `unit` bytes (1, 2, 4 or 8), chosen by
 * the caller so that both addresses and the length are multiples of it.
 * item_ variants are one work-item's private loop; wg_ variants spread the
 * words over the work-group with a stride of the local size.
 */
#ifndef SP_KERNEL_COPY_H
#define SP_KERNEL_COPY_H

DEVICE_FN void item_copy(GLOBAL u8 *dst, GLOBAL const u8 *src, u64 nbytes,
			 u64 unit)
{
	u64 n = nbytes / unit;

	WORK(n);
	switch (unit) {
	case 8:
		for (u64 k = 0; k < n; k++)
			((GLOBAL w64 *)dst)[k] = ((GLOBAL const w64 *)src)[k];
		break;
	case 4:
		for (u64 k = 0; k < n; k++)
			((GLOBAL w32 *)dst)[k] = ((GLOBAL const w32 *)src)[k];
		break;
	case 2:
		for (u64 k = 0; k < n; k++)
			((GLOBAL w16 *)dst)[k] = ((GLOBAL const w16 *)src)[k];
		break;
	default:
		for (u64 k = 0; k < n; k++)
			dst[k] = src[k];
		break;
	}
}

DEVICE_FN void item_zero(GLOBAL u8 *dst, u64 nbytes, u64 unit)
{
	u64 n = nbytes / unit;

	WORK(n);
	switch (unit) {
	case 8:
		for (u64 k = 0; k < n; k++)
			((GLOBAL w64 *)dst)[k] = 0;
		break;
	case 4:
		for (u64 k = 0; k < n; k++)
			((GLOBAL w32 *)dst)[k] = 0;
		break;
	case 2:
		for (u64 k = 0; k < n; k++)
			((GLOBAL w16 *)dst)[k] = 0;
		break;
	default:
		for (u64 k = 0; k < n; k++)
			dst[k] = 0;
		break;
	}
}

DEVICE_FN void wg_copy(GLOBAL u8 *dst, GLOBAL const u8 *src, u64 nbytes,
		       u64 unit)
{
	u64 n = nbytes / unit, k0 = LOCAL_ID(), step = LOCAL_SIZE();

	WORK(n > k0 ? (n - k0 - 1) / step + 1 : 0);
	switch (unit) {
	case 8:
		for (u64 k = k0; k < n; k += step)
			((GLOBAL w64 *)dst)[k] = ((GLOBAL const w64 *)src)[k];
		break;
	case 4:
		for (u64 k = k0; k < n; k += step)
			((GLOBAL w32 *)dst)[k] = ((GLOBAL const w32 *)src)[k];
		break;
	case 2:
		for (u64 k = k0; k < n; k += step)
			((GLOBAL w16 *)dst)[k] = ((GLOBAL const w16 *)src)[k];
		break;
	default:
		for (u64 k = k0; k < n; k += step)
			dst[k] = src[k];
		break;
	}
}

/* The widest unit that divides every one of the values or-ed into bits. */
DEVICE_FN u64 copy_unit(u64 bits)
{
	if ((bits & 7) == 0)
		return 8;
	if ((bits & 3) == 0)
		return 4;
	if ((bits & 1) == 0)
		return 2;
	return 1;
}

#endif
