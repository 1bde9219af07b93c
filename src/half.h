/*
 * half.h - IEEE binary16 to and from double, exactly and with rounding to
 * nearest even, in plain C (no compiler float16 type).  The host's only:
 * zarr.json's fill value and the reader's own recomputation of pyramid
 * levels (doc/design.md §28.6).
 */
#ifndef SHARDPIPE_HALF_H
#define SHARDPIPE_HALF_H

#include <math.h>
#include <stdint.h>

/* Every binary16 value is a double exactly. */
static inline double sp_half_to_double(uint16_t h)
{
	int e = (h >> 10) & 0x1f;
	double m = h & 0x3ff;
	double x;

	if (e == 0x1f)
		x = m != 0 ? NAN : INFINITY;
	else
		x = e == 0 ? ldexp(m, -24) : ldexp(m + 1024, e - 25);
	return h & 0x8000 ? -x : x;
}

/* The binary16 nearest to x, ties to even; the quiet NaN (0x7e00) for a
 * NaN. */
static inline uint16_t sp_double_to_half(double x)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	double a = fabs(x), q;
	int e;

	if (isnan(x))
		return 0x7e00;
	if (a >= 65520.0)	/* halfway to 2^16 and beyond: infinity */
		return sign | 0x7c00;
	if (a < ldexp(1, -14))	/* subnormal: multiples of 2^-24 */
		return sign | (uint16_t)nearbyint(ldexp(a, 24));
	frexp(a, &e);		/* a = f * 2^e, f in [0.5, 1) */
	q = nearbyint(ldexp(a, 11 - e));	/* 11 significant bits */
	/* A significand rounding up to 2^11 carries into the exponent. */
	return sign | (uint16_t)(((unsigned)(e + 14) << 10) +
				 (unsigned)q - 1024);
}

#endif
