/*
 * reduce.h - the reduce kernel (doc/design.md §28.2): outputs of the
 * next pyramid level from one level's rows, by the rules of
 * reduce_block.h, SP_RGEO_PER_ITEM consecutive outputs per work-item
 * (one on a GPU).
 */
#ifndef SP_KERNEL_REDUCE_H
#define SP_KERNEL_REDUCE_H

#include "kernel-list.h"
#include "reduce_block.h"

SP_KERNEL_ENTRY(sp_reduce)
{
	const u64 per = g[SP_RGEO_PER_ITEM], items = (nout + per - 1) / per;
	const u64 method = g[SP_RGEO_METHOD], append = g[SP_RGEO_APPEND];
	const u64 kind = g[SP_RGEO_KIND], esize = g[SP_RGEO_ESIZE];

	for (u64 it = GLOBAL_ID(); it < items; it += GLOBAL_SIZE()) {
		u64 o = it * per, n = nout - o < per ? nout - o : per;

		rd_run(g, rows, carry, out, nrows, carried, tail, o, n, method,
		       append, kind, esize);
	}
}

#endif
