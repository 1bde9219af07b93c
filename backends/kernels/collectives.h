/*
 * collectives.h - work-group collectives shared by the kernels: scans and
 * reductions over the work-items of one group, and a scan of a whole
 * array by one group.
 *
 * Every work-item of the group must call a collective (uniform control
 * flow): they contain barriers.  `scratch` is a local array of at least
 * LOCAL_SIZE() entries, free for the collective's use during the call and
 * free again when it returns.  Results are exact integer sums, so they do
 * not depend on the local size (doc/design.md §7.2 "Determinism").
 */
#ifndef SP_KERNEL_COLLECTIVES_H
#define SP_KERNEL_COLLECTIVES_H

/* Exclusive prefix sum of x in local-id order; *total receives the sum
 * over the group.  Hillis-Steele: log2(local size) rounds. */
DEVICE_FN u64 wg_scan_excl_u64(LOCAL u64 *scratch, u64 x, u64 *total)
{
	u64 lid = LOCAL_ID(), n = LOCAL_SIZE(), incl;

	scratch[lid] = x;
	BARRIER();
	for (u64 off = 1; off < n; off <<= 1) {
		u64 add = lid >= off ? scratch[lid - off] : 0;

		WORK(1);
		BARRIER();
		scratch[lid] += add;
		BARRIER();
	}
	incl = scratch[lid];
	*total = scratch[n - 1];
	BARRIER();
	return incl - x;
}

/* Sum of x over the group, returned to every work-item. */
DEVICE_FN u64 wg_reduce_add_u64(LOCAL u64 *scratch, u64 x)
{
	u64 lid = LOCAL_ID(), n = LOCAL_SIZE(), r;

	scratch[lid] = x;
	BARRIER();
	for (u64 s = 1; s < n; s <<= 1) {
		WORK(1);
		if ((lid & (2 * s - 1)) == 0 && lid + s < n)
			scratch[lid] += scratch[lid + s];
		BARRIER();
	}
	r = scratch[0];
	BARRIER();
	return r;
}

/* Largest x over the group, returned to every work-item. */
DEVICE_FN u64 wg_reduce_max_u64(LOCAL u64 *scratch, u64 x)
{
	u64 lid = LOCAL_ID(), n = LOCAL_SIZE(), r;

	scratch[lid] = x;
	BARRIER();
	for (u64 s = 1; s < n; s <<= 1) {
		WORK(1);
		if ((lid & (2 * s - 1)) == 0 && lid + s < n &&
		    scratch[lid + s] > scratch[lid])
			scratch[lid] = scratch[lid + s];
		BARRIER();
	}
	r = scratch[0];
	BARRIER();
	return r;
}

/*
 * Exclusive scan of in[0..n) into out[0..n], out[n] being the total, by
 * one work-group: each work-item sums a contiguous segment, the segment
 * sums are scanned across the group, then each work-item writes its
 * segment.  in and out may be the same array (a scan in place), or must
 * not overlap.
 */
DEVICE_FN void wg_scan_array_u64(GLOBAL const u64 *in, GLOBAL u64 *out, u64 n,
				 LOCAL u64 *scratch)
{
	u64 per = (n + LOCAL_SIZE() - 1) / LOCAL_SIZE();
	u64 begin = LOCAL_ID() * per, end = begin + per, sum = 0, total, run;

	if (begin > n)
		begin = n;
	if (end > n)
		end = n;
	for (u64 j = begin; j < end; j++) {
		WORK(1);
		sum += in[j];
	}
	run = wg_scan_excl_u64(scratch, sum, &total);
	for (u64 j = begin; j < end; j++) {
		u64 x = in[j];

		WORK(1);
		out[j] = run;
		run += x;
	}
	if (LOCAL_ID() == 0)
		out[n] = total;
}

#endif
