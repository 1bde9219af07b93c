/*
 * aggregate.h - stage 4 of doc/design.md §3, in the order of §3.2:
 * the n = K*M compressed chunks of a batch, slot j = e*M + i holding chunk
 * i of epoch e, packed densely in shard-major order, epoch by epoch:
 * chunk (e, i) goes to position e*M + perm[i].
 *
 *   sp_agg_permute  sizes into position order          (any launch)
 *   sp_agg_scan     exclusive scan into offsets[0..n]  (one work-group)
 *   sp_agg_gather   bytes of each chunk to its offset  (any launch)
 *
 * The gather moves 8-byte words whatever the offsets (copy.h's
 * lane_copy_bytes): compressed sizes are any number of bytes, and a copy
 * in units of their common divisor would mostly be a byte copy.
 */
#ifndef SP_KERNEL_AGGREGATE_H
#define SP_KERNEL_AGGREGATE_H

#include "kernel-list.h"

SP_KERNEL_ENTRY(sp_agg_permute)
{
	for (u64 j = GLOBAL_ID(); j < n; j += GLOBAL_SIZE()) {
		u64 e = j / M, i = j - e * M;

		WORK(1);
		psizes[e * M + perm[i]] = sizes[j];
	}
}

/* Only group 0 works: a launch of more groups gives the same result. */
SP_KERNEL_ENTRY(sp_agg_scan)
{
	LOCAL_ARRAY(u64, scratch, SP_WG_MAX);

	if (GROUP_ID() == 0)
		wg_scan_array_u64(psizes, offsets, n, scratch);
}

SP_KERNEL_ENTRY(sp_agg_gather)
{
	for (u64 j = GROUP_ID(); j < n; j += NUM_GROUPS()) {
		u64 e = j / M, i = j - e * M;
		u64 dst = offsets[e * M + perm[i]], len = sizes[j];

		UNIT();
		lane_copy_bytes(out, dst, slots, j * capacity, n * capacity,
				len, LOCAL_ID(), LOCAL_SIZE());
	}
}

#endif
