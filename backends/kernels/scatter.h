/*
 * scatter.h - stage 2: a batch of K epochs of row-major input into K*M
 * chunk slots, each chunk row-major inside, cells beyond the array edge
 * the fill value, as along dim 0, where the host pads the last epoch's
 * rows (doc/design.md §22.1): an edge chunk's bytes then do not depend on
 * which dims its edges cut, so a storage order (§3.3) gives the bytes of
 * the permuted array written directly, and a chunk is empty when all its
 * bytes are fill (empty_chunks.h).
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
 * dimension.  A storage order (design §3.3) lives in those strides only;
 * when it moves the innermost dim, a run's elements lie in_stride[D-1]
 * apart and are copied one by one.
 *
 * A run is copied by a team of SP_GEO_RUN_LANES work-items, word k by
 * lane k mod lanes, so that a GPU's neighbouring items move neighbouring
 * words (coalesced); a team takes SP_GEO_RUNS_PER_ITEM consecutive runs.
 * A GPU gets one run per team of up to 16 lanes; a CPU device one lane
 * that copies many runs, saving divisions (driver.c, run_lanes).  Every lane locates its run
 * itself, with divisions, one dimension at a time, keeping no coordinate
 * arrays: indexed private arrays would live on a GPU's stack
 * (t/cuda-resources.sh).  The divisions are 32-bit when the geometry
 * fits (SP_GEO_DIV32): a GPU divides 64-bit integers in software, several
 * times slower.  The output depends on none of these choices.
 *
 * geo: the table of geometry.h.  in: the batch; pool: K*M chunks.
 */
#ifndef SP_KERNEL_SCATTER_H
#define SP_KERNEL_SCATTER_H

#include "kernel-list.h"

/* a / b, in 32 bits when the geometry fits them (SP_GEO_DIV32). */
DEVICE_FN u64 geo_div(u64 a, u64 b, u64 narrow)
{
	return narrow ? (u64)((u32)a / (u32)b) : a / b;
}

/*
 * Run r's first input element (*src) and how many of its elements lie
 * inside the array (*valid).  Pool order makes r (epoch e, chunk
 * coordinates t[1..inner], within-chunk coordinates n[0..inner-1]); both
 * are unravelled innermost first, in one pass.
 */
DEVICE_FN void scatter_locate(GLOBAL const u64 *geo, u64 r, u64 *src,
			      u64 *valid)
{
	const int inner = (int)geo[SP_GEO_RANK] - 1;
	const u64 narrow = geo[SP_GEO_DIV32];
	u64 rpc = geo[SP_GEO_RUNS_PER_CHUNK], M = geo[SP_GEO_M];
	u64 slot = geo_div(r, rpc, narrow), q = r - slot * rpc;
	u64 e = geo_div(slot, M, narrow), i = slot - e * M;
	u64 v = geo[SP_GEO_CHUNK(inner)], at = e * geo[SP_GEO_EPOCH_ELEMS];

	for (int d = inner; d >= 0; d--) {
		u64 t = 0, n = 0, x;

		WORK(1);
		if (d >= 1) {
			u64 cnt = geo[SP_GEO_COUNT(d)], y = geo_div(i, cnt, narrow);

			t = i - y * cnt;
			i = y;
		}
		if (d < inner) {
			u64 ch = geo[SP_GEO_CHUNK(d)], y = geo_div(q, ch, narrow);

			n = q - y * ch;
			q = y;
		}
		/* Dim 0 needs no check: an epoch's rows past the array end
		 * are already fill in the input. */
		if (d == 0) {
			at += n * geo[SP_GEO_IN_STRIDE(0)];
			continue;
		}
		x = t * geo[SP_GEO_CHUNK(d)] + n;
		if (d == inner) {
			u64 left = geo[SP_GEO_SIZE(d)] - x;

			if (left < v)
				v = left;
		} else if (x >= geo[SP_GEO_SIZE(d)]) {
			v = 0;
		}
		at += x * geo[SP_GEO_IN_STRIDE(d)];
	}
	*src = at;
	*valid = v;
}

SP_KERNEL_ENTRY(sp_scatter)
{
	const int inner = (int)geo[SP_GEO_RANK] - 1;
	const u64 run_bytes = geo[SP_GEO_CHUNK(inner)] * geo[SP_GEO_ESIZE];
	const u64 nruns = geo[SP_GEO_NRUNS];
	const u64 per = geo[SP_GEO_RUNS_PER_ITEM];
	const u64 lanes = geo[SP_GEO_RUN_LANES];
	const u64 esize = geo[SP_GEO_ESIZE], unit = geo[SP_GEO_UNIT];
	const u64 items = (nruns + per - 1) / per;
	const u64 lane = GLOBAL_ID() % lanes, teams = GLOBAL_SIZE() / lanes;
	const u64 sx = geo[SP_GEO_IN_STRIDE(inner)];
	GLOBAL const u8 *fill = (GLOBAL const u8 *)(geo + SP_GEO_FILL);

	for (u64 it = GLOBAL_ID() / lanes; it < items; it += teams) {
		u64 r = it * per, end = r + per < nruns ? r + per : nruns;

		for (; r < end; r++) {
			GLOBAL u8 *dst = pool + r * run_bytes;
			u64 src, valid;

			scatter_locate(geo, r, &src, &valid);
			if (sx != 1) {
				/* A storage order moved the innermost dim
				 * (design §3.3): element by element. */
				lane_gather(dst, in + src * esize, valid, sx,
					    esize, lane, lanes);
				lane_fill(dst + valid * esize,
					  run_bytes - valid * esize, esize,
					  fill, lane, lanes);
				continue;
			}
			lane_copy(dst, in + src * esize, valid * esize, unit,
				  lane, lanes);
			lane_fill(dst + valid * esize,
				  run_bytes - valid * esize, unit, fill, lane,
				  lanes);
		}
	}
}

#endif
