/*
 * reduce_methods.h - the methods of reduce_block.h (doc/design.md §28.2)
 * over one kind of block, included once per kind: RD_SRC is the block's
 * type, RD_GET(s, e) its element e in block order, RD_N(s) its count (a
 * power of two, at most SP_RD_MAX_BLOCK), RD_ESIZE(s) the element size,
 * and RD_FN(name) the name the methods take for that kind.  The kernels
 * read a block where it lies in device memory (struct rd_src, no private
 * array); the cpu backend gathers it into an array first.  The rules are
 * written here once.  No include guard: each inclusion defines them again
 * under its own names.
 */

/* The first NaN of the block's elements, or n. */
DEVICE_FN u64 RD_FN(rd_first_nan)(RD_SRC s)
{
	for (u64 e = 0; e < RD_N(s); e++)
		if (rd_isnan(RD_GET(s, e), RD_ESIZE(s)))
			return e;
	return RD_N(s);
}

DEVICE_FN u64 RD_FN(rd_extreme)(RD_SRC s, u64 kind, int want_max)
{
	u64 best = RD_GET(s, 0), bk = rd_key(best, kind, RD_ESIZE(s));

	for (u64 e = 1; e < RD_N(s); e++) {
		u64 v = RD_GET(s, e), k = rd_key(v, kind, RD_ESIZE(s));

		if (want_max ? k > bk : k < bk) {
			best = v;
			bk = k;
		}
	}
	return best;
}

/* The element of rank n/2 - 1 in (key, position) order: the lower middle.
 * n <= 16, so counting beats sorting and needs no private array. */
DEVICE_FN u64 RD_FN(rd_median)(RD_SRC s, u64 kind)
{
	const u64 want = RD_N(s) / 2 - (RD_N(s) > 1);

	for (u64 i = 0; i < RD_N(s); i++) {
		u64 v = RD_GET(s, i), k = rd_key(v, kind, RD_ESIZE(s)), below = 0;

		for (u64 j = 0; j < RD_N(s); j++) {
			u64 kj = rd_key(RD_GET(s, j), kind, RD_ESIZE(s));

			below += kj < k || (kj == k && j < i);
		}
		if (below == want)
			return v;
	}
	return RD_GET(s, 0); /* not reached: the ranks are a permutation */
}

/*
 * The element of rank n - 2 (want_max) or 1 in (key, position) order, the
 * median's order: the second-highest or second-lowest, duplicates counted
 * ({5, 5, 3, 1} gives 5 and 3), NaNs the greatest; a block of one gives
 * its element.  One pass keeping the two extremes (doc/design.md §28.2):
 * a later element of an equal key ranks above an earlier one.
 */
DEVICE_FN u64 RD_FN(rd_second)(RD_SRC s, u64 kind, int want_max)
{
	u64 v1 = RD_GET(s, 0), k1 = rd_key(v1, kind, RD_ESIZE(s));
	u64 v2 = v1, k2 = k1;

	for (u64 e = 1; e < RD_N(s); e++) {
		u64 v = RD_GET(s, e), k = rd_key(v, kind, RD_ESIZE(s));
		int over1 = want_max ? k >= k1 : k < k1;
		int over2 = want_max ? k >= k2 : k < k2;

		if (over1) {
			v2 = v1;
			k2 = k1;
			v1 = v;
			k1 = k;
		} else if (over2 || e == 1) {
			/* At e == 1 the second is still element 0 itself. */
			v2 = v;
			k2 = k;
		}
	}
	return v2;
}

/* Integer mean: the exact sum, in two words for 64-bit elements, offset
 * so that signed values add as unsigned (an even offset, so rounding
 * commutes with it). */
DEVICE_FN u64 RD_FN(rd_mean_int)(RD_SRC s, u64 kind)
{
	const u64 w = 8 * RD_ESIZE(s);
	const u64 off = kind == SP_RD_SINT ? (u64)1 << (w - 1) : 0;
	u64 lo = 0, hi = 0, k = 0, q, rem, mid;

	while (((u64)1 << k) < RD_N(s))
		k++;
	for (u64 e = 0; e < RD_N(s); e++) {
		u64 v = RD_GET(s, e) ^ off;

		lo += v;
		/* 16 elements of 32 bits or less cannot carry. */
		if (w == 64)
			hi += lo < v;
	}
	if (k == 0)
		return lo ^ off;
	q = hi << (64 - k) | lo >> k;
	rem = lo & (((u64)1 << k) - 1);
	mid = (u64)1 << (k - 1);
	if (rem > mid || (rem == mid && (q & 1) != 0))
		q++;
	return (q ^ off) & (w == 64 ? ~(u64)0 : ((u64)1 << w) - 1);
}

/* The pairwise tree of the float mean, unrolled: 2^m elements from i. */
DEVICE_FN u64 RD_FN(rd_avg_2)(RD_SRC s, u64 i)
{
	return rd_avg2f(RD_GET(s, i), RD_GET(s, i + 1), RD_ESIZE(s));
}

DEVICE_FN u64 RD_FN(rd_avg_4)(RD_SRC s, u64 i)
{
	return rd_avg2f(RD_FN(rd_avg_2)(s, i), RD_FN(rd_avg_2)(s, i + 2), RD_ESIZE(s));
}

DEVICE_FN u64 RD_FN(rd_avg_8)(RD_SRC s, u64 i)
{
	return rd_avg2f(RD_FN(rd_avg_4)(s, i), RD_FN(rd_avg_4)(s, i + 4), RD_ESIZE(s));
}

DEVICE_FN u64 RD_FN(rd_mean_float)(RD_SRC s)
{
	switch (RD_N(s)) {
	case 1:
		return RD_GET(s, 0);
	case 2:
		return RD_FN(rd_avg_2)(s, 0);
	case 4:
		return RD_FN(rd_avg_4)(s, 0);
	case 8:
		return RD_FN(rd_avg_8)(s, 0);
	default:
		return rd_avg2f(RD_FN(rd_avg_8)(s, 0), RD_FN(rd_avg_8)(s, 8), RD_ESIZE(s));
	}
}

DEVICE_FN u64 RD_FN(rd_block)(RD_SRC s, u64 method, u64 kind)
{
	if (kind == SP_RD_FLOAT && method <= SP_RD_MAX) {
		u64 first = RD_FN(rd_first_nan)(s);

		if (first < RD_N(s))
			return RD_GET(s, first);
	}
	switch (method) {
	case SP_RD_MIN:
		return RD_FN(rd_extreme)(s, kind, 0);
	case SP_RD_MAX:
		return RD_FN(rd_extreme)(s, kind, 1);
	case SP_RD_MEDIAN:
		return RD_FN(rd_median)(s, kind);
	case SP_RD_DECIMATE:
		return RD_GET(s, 0);
	case SP_RD_SECOND_MAX:
		return RD_FN(rd_second)(s, kind, 1);
	case SP_RD_SECOND_MIN:
		return RD_FN(rd_second)(s, kind, 0);
	default:
		return kind == SP_RD_FLOAT ? RD_FN(rd_mean_float)(s)
					   : RD_FN(rd_mean_int)(s, kind);
	}
}

