/*
 * scatter.h - stage 2: a batch of K epochs of row-major input into K*M
 * chunk slots, each chunk row-major inside, cells beyond the array edge
 * zero (the fill value).
 *
 * The unit of work is a *run*: one row of a chunk along the innermost
 * dimension, chunk[D-1] elements contiguous in the pool and, up to the
 * array edge, contiguous in the input.  A work-item copies whole runs,
 * never element by element.  Runs are numbered in pool order (epoch,
 * chunk, row inside the chunk), so run r starts at element r * chunk[D-1]
 * of the pool, and every pool cell is written exactly once, padding
 * included: no separate clear, no race.  The input offset of a run is the
 * dot product of its epoch coordinate with the plan's in_stride, the
 * coordinate being lifted from (chunk index, within-chunk index) per
 * dimension.
 *
 * A work-item takes SP_GEO_RUNS_PER_ITEM consecutive runs: it unravels the
 * first with divisions and steps to the next ones like an odometer.  A GPU
 * takes one run per work-item for parallelism; a CPU device may take more
 * to save the divisions (on PoCL the gain measured within noise: its
 * scatter is bound elsewhere).  The output does not depend on it.
 *
 * geo: the table of geometry.h.  in: the batch; pool: K*M chunks.
 */
#ifndef SP_KERNEL_SCATTER_H
#define SP_KERNEL_SCATTER_H

#include "kernel-list.h"

/* Coordinates of a run: epoch e, chunk coordinates t[1..inner], within-
 * chunk coordinates n[0..inner-1] (n[inner] is always 0). */
DEVICE_FN void scatter_unravel(GLOBAL const u64 *geo, u64 r, u64 *e, u64 *t,
			       u64 *n)
{
	const int inner = (int)geo[SP_GEO_RANK] - 1;
	u64 rpc = geo[SP_GEO_RUNS_PER_CHUNK], M = geo[SP_GEO_M];
	u64 slot = r / rpc, q = r - slot * rpc, i;

	*e = slot / M;
	i = slot - *e * M;
	for (int d = inner; d >= 1; d--) {
		u64 cnt = geo[SP_GEO_COUNT(d)];

		t[d] = i % cnt;
		i /= cnt;
	}
	for (int d = inner - 1; d >= 0; d--) {
		u64 ch = geo[SP_GEO_CHUNK(d)];

		n[d] = q % ch;
		q /= ch;
	}
}

/* The run after (e, t, n) in pool order. */
DEVICE_FN void scatter_step(GLOBAL const u64 *geo, u64 *e, u64 *t, u64 *n)
{
	const int inner = (int)geo[SP_GEO_RANK] - 1;

	for (int d = inner - 1; d >= 0; d--) {
		if (++n[d] < geo[SP_GEO_CHUNK(d)])
			return;
		n[d] = 0;
	}
	for (int d = inner; d >= 1; d--) {
		if (++t[d] < geo[SP_GEO_COUNT(d)])
			return;
		t[d] = 0;
	}
	++*e;
}

DEVICE_FN void scatter_run(GLOBAL const u8 *in, GLOBAL u8 *dst,
			   GLOBAL const u64 *geo, u64 e, const u64 *t,
			   const u64 *n)
{
	const int inner = (int)geo[SP_GEO_RANK] - 1;
	const u64 esize = geo[SP_GEO_ESIZE], unit = geo[SP_GEO_UNIT];
	const u64 run = geo[SP_GEO_CHUNK(inner)];
	u64 src = e * geo[SP_GEO_EPOCH_ELEMS], valid = run;

	/* Dim 0 needs no check: an epoch's rows past the array end are
	 * already fill in the input. */
	if (inner > 0)
		src += n[0] * geo[SP_GEO_IN_STRIDE(0)];
	for (int d = 1; d <= inner; d++) {
		u64 x = t[d] * geo[SP_GEO_CHUNK(d)] + (d < inner ? n[d] : 0);

		if (d == inner) {
			u64 left = geo[SP_GEO_SIZE(d)] - x;

			if (left < valid)
				valid = left;
		} else if (x >= geo[SP_GEO_SIZE(d)]) {
			valid = 0;
		}
		src += x * geo[SP_GEO_IN_STRIDE(d)];
	}
	item_copy(dst, in + src * esize, valid * esize, unit);
	item_zero(dst + valid * esize, (run - valid) * esize, unit);
}

SP_KERNEL_ENTRY(sp_scatter)
{
	const int inner = (int)geo[SP_GEO_RANK] - 1;
	const u64 run_bytes = geo[SP_GEO_CHUNK(inner)] * geo[SP_GEO_ESIZE];
	const u64 nruns = geo[SP_GEO_NRUNS];
	const u64 per = geo[SP_GEO_RUNS_PER_ITEM];
	const u64 items = (nruns + per - 1) / per;

	for (u64 it = GLOBAL_ID(); it < items; it += GLOBAL_SIZE()) {
		u64 r = it * per, end = r + per < nruns ? r + per : nruns;
		u64 e, t[SP_GEO_MAX_RANK], n[SP_GEO_MAX_RANK];

		scatter_unravel(geo, r, &e, t, n);
		for (; r < end; r++) {
			scatter_run(in, pool + r * run_bytes, geo, e, t, n);
			scatter_step(geo, &e, t, n);
		}
	}
}

#endif
