/*
 * cpu_reduce.h - the cpu backend's pyramid reduction (doc/design.md §28.2).
 */
#ifndef SHARDPIPE_CPU_REDUCE_H
#define SHARDPIPE_CPU_REDUCE_H

#include "plan.h"

/*
 * Outputs o0 .. o1-1 of reducing carry (NULL: none), the first nrows rows
 * of `rows` and tail (SP_RD_TAIL_*) by p->reduce_geo into out, exactly as
 * the reduce kernel computes them: the same element code, compiled here.
 */
SP_INTERNAL void cpu_reduce_outputs(const struct plan *p, const uint8_t *rows,
				    const uint8_t *carry, uint64_t nrows,
				    int tail, uint8_t *out, uint64_t o0,
				    uint64_t o1);

#endif
