/*
 * reduce.c - the pyramid reduction on the cpu backend's threads
 * (doc/design.md §26.2): the kernels' element code (reduce_block.h)
 * compiled as C, so that cpu and the kernel backends cannot differ, and
 * specialised here per method and element type, which the kernels take
 * from their table at run time.
 */
#include "../kernels/prelude-c.h"
#include "../kernels/reduce_block.h"

#include "cpu_reduce.h"

struct run {
	const u64 *g;
	const u8 *rows, *carry;
	u8 *out;
	u64 nrows, carried, tail, o, n;
};

typedef void (*run_fn)(const struct run *r);

/* One method and element type with everything inlined, so that the
 * compiler drops the other methods' and types' branches. */
#define RUN(name, method, kind, esize)                                        \
	__attribute__((flatten)) static void name(const struct run *r)        \
	{                                                                     \
		rd_run(r->g, r->rows, r->carry, r->out, r->nrows, r->carried, \
		       r->tail, r->o, r->n, method, method, kind, esize);    \
	}
#define RUN_TYPES(m, M)                                                       \
	RUN(m##_u1, M, SP_RD_UINT, 1) RUN(m##_u2, M, SP_RD_UINT, 2)           \
	RUN(m##_u4, M, SP_RD_UINT, 4) RUN(m##_u8, M, SP_RD_UINT, 8)           \
	RUN(m##_s1, M, SP_RD_SINT, 1) RUN(m##_s2, M, SP_RD_SINT, 2)           \
	RUN(m##_s4, M, SP_RD_SINT, 4) RUN(m##_s8, M, SP_RD_SINT, 8)           \
	RUN(m##_f2, M, SP_RD_FLOAT, 2) RUN(m##_f4, M, SP_RD_FLOAT, 4)         \
	RUN(m##_f8, M, SP_RD_FLOAT, 8)
RUN_TYPES(mean, SP_RD_MEAN)
RUN_TYPES(min, SP_RD_MIN)
RUN_TYPES(max, SP_RD_MAX)
RUN_TYPES(median, SP_RD_MEDIAN)
RUN_TYPES(decimate, SP_RD_DECIMATE)

#define RUN_ROW(m)                                                            \
	{ m##_u1, m##_u2, m##_u4, m##_u8, m##_s1, m##_s2, m##_s4, m##_s8,     \
	  m##_f2, m##_f4, m##_f8 }
static const run_fn runs[5][11] = {
	RUN_ROW(mean), RUN_ROW(min), RUN_ROW(max), RUN_ROW(median),
	RUN_ROW(decimate)
};

/* Index of a kind and size in a row of runs[]. */
static int type_index(u64 kind, u64 esize)
{
	int lg = esize == 1 ? 0 : esize == 2 ? 1 : esize == 4 ? 2 : 3;

	if (kind == SP_RD_FLOAT)
		return 8 + lg - 1;
	return (kind == SP_RD_SINT ? 4 : 0) + lg;
}

void cpu_reduce_outputs(const struct plan *p, const uint8_t *rows,
			const uint8_t *carry, uint64_t nrows, int tail,
			uint8_t *out, uint64_t o0, uint64_t o1)
{
	const u64 *g = p->reduce_geo;
	struct run r = {
		.g = g, .rows = rows, .carry = carry, .out = out,
		.nrows = nrows, .carried = carry != NULL, .tail = (u64)tail,
		.o = o0, .n = o1 - o0,
	};

	(void)sp_ref_item;
	if (o1 <= o0)
		return;
	/* A different method along dim 0: the general code. */
	if (g[SP_RGEO_APPEND] != g[SP_RGEO_METHOD]) {
		rd_run(g, rows, carry, out, nrows, r.carried, r.tail, o0,
		       o1 - o0, g[SP_RGEO_METHOD], g[SP_RGEO_APPEND],
		       g[SP_RGEO_KIND], g[SP_RGEO_ESIZE]);
		return;
	}
	runs[g[SP_RGEO_METHOD]][type_index(g[SP_RGEO_KIND],
					  g[SP_RGEO_ESIZE])](&r);
}
