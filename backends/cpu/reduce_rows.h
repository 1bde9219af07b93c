/*
 * reduce_rows.h - the cpu backend's row loops of the pyramid reduction
 * (doc/design.md §28.2), shared by reduce.c and the seven reduce_METHOD.c
 * files.  Each method's eleven element types are compiled in a file of
 * their own: with every call flattened into them, the 55 loops took one
 * compiler 3.5 minutes as one file, the tail of every build tree; one
 * method a file, they compile side by side.  The generated code is the same.
 */
#ifndef SHARDPIPE_REDUCE_ROWS_H
#define SHARDPIPE_REDUCE_ROWS_H

#include "../kernels/prelude-c.h"
#include "../kernels/reduce_block.h"

#include "plan.h"

/* A block gathered into an array. */
struct rd_vals {
	const u64 *v;
	u64 n, esize;
};

#define RD_SRC const struct rd_vals *
#define RD_GET(s, e) ((s)->v[e])
#define RD_N(s) ((s)->n)
#define RD_ESIZE(s) ((s)->esize)
#define RD_FN(name) name##_v
#include "../kernels/reduce_methods.h"

/* The block reduced: whole, or (an append method along dim 0) each of
 * its two rows and then the pair, as rd_reduce does where it lies. */
static inline u64 reduce_vals(const u64 *v, u64 n, u64 rows, u64 method,
			      u64 append, u64 kind, u64 esize)
{
	struct rd_vals b = { v, n, esize }, h0, h1, t;
	u64 two[2];

	if (rows == 1 || append == method)
		return rd_block_v(&b, method, kind);
	h0 = (struct rd_vals){ v, n / 2, esize };
	h1 = (struct rd_vals){ v + n / 2, n / 2, esize };
	t = (struct rd_vals){ two, 2, esize };
	two[0] = rd_block_v(&h0, method, kind);
	two[1] = rd_block_v(&h1, method, kind);
	return rd_block_v(&t, append, kind);
}

struct row {
	const struct rd_src *s;     /* the block of the row's first output */
	u8 *out;                    /* its place in the output */
	u64 count, step;            /* outputs; input elements between them */
	u64 method, append, kind, esize;
};

/* count outputs whose blocks of n elements lie step elements apart,
 * none cut by the innermost dim's edge. */
static inline void row_blocks(const struct row *w, u64 n)
{
	const struct rd_src *s = w->s;
	const u8 *p[SP_RD_MAX_BLOCK];
	u64 v[SP_RD_MAX_BLOCK];
	const u64 mask = ((u64)1 << s->ks) - 1, rows = n >> s->ks;

	for (u64 e = 0; e < n; e++) {
		u64 r = e >> s->ks, j = e & mask;
		u64 off = s->base + (j & 1) * s->d0 + ((j >> 1) & 1) * s->d1 +
			  ((j >> 2) & 1) * s->d2;

		p[e] = (r != 0 ? s->fill1 : s->fill0) ? NULL :
		       (r != 0 ? s->row1 : s->row0) + off * w->esize;
	}
	for (u64 i = 0; i < w->count; i++) {
		for (u64 e = 0; e < n; e++)
			v[e] = p[e] != NULL ?
				       rd_load(p[e] + i * w->step * w->esize,
					       w->esize) :
				       s->fill;
		rd_store(w->out + i * w->esize,
			 reduce_vals(v, n, rows, w->method, w->append,
				     w->kind, w->esize),
			 w->esize);
	}
}

/* The block size as a constant, for the compiler to unroll by. */
static inline void row_outputs(const struct row *w)
{
	switch (w->s->n) {
	case 2:
		row_blocks(w, 2);
		break;
	case 4:
		row_blocks(w, 4);
		break;
	case 8:
		row_blocks(w, 8);
		break;
	case 16:
		row_blocks(w, 16);
		break;
	default:
		row_blocks(w, w->s->n);
		break;
	}
}

typedef void (*row_fn)(const struct row *w);

/* One method and element type with everything inlined, so that the
 * compiler drops the other methods' and types' branches.  Not under a
 * sanitizer: flattening is for speed alone, and instrumented, each file
 * of these loops took the sanitizer build's compiler 200 s (0.3 s
 * without); what the loops compute and read is the same either way. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RD_FLATTEN
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RD_FLATTEN
#endif
#endif
#ifndef RD_FLATTEN
#define RD_FLATTEN __attribute__((flatten))
#endif
#define ROW(name, M, K, E)                                                    \
	RD_FLATTEN void name(const struct row *w)                             \
	{                                                                     \
		struct row c = *w;                                            \
                                                                              \
		c.method = c.append = (M);                                    \
		c.kind = (K);                                                 \
		c.esize = (E);                                                \
		row_outputs(&c);                                              \
	}
#define ROW_TYPES(m, M)                                                       \
	ROW(m##_u1, M, SP_RD_UINT, 1) ROW(m##_u2, M, SP_RD_UINT, 2)           \
	ROW(m##_u4, M, SP_RD_UINT, 4) ROW(m##_u8, M, SP_RD_UINT, 8)           \
	ROW(m##_s1, M, SP_RD_SINT, 1) ROW(m##_s2, M, SP_RD_SINT, 2)           \
	ROW(m##_s4, M, SP_RD_SINT, 4) ROW(m##_s8, M, SP_RD_SINT, 8)           \
	ROW(m##_f2, M, SP_RD_FLOAT, 2) ROW(m##_f4, M, SP_RD_FLOAT, 4)         \
	ROW(m##_f8, M, SP_RD_FLOAT, 8)

/* The declarations of one method's eleven loops, cpu_rows_METHOD_TYPE. */
#define ROW_DECL(name) SP_INTERNAL void name(const struct row *w);
#define ROW_DECLS(m)                                                          \
	ROW_DECL(cpu_rows_##m##_u1) ROW_DECL(cpu_rows_##m##_u2)               \
	ROW_DECL(cpu_rows_##m##_u4) ROW_DECL(cpu_rows_##m##_u8)               \
	ROW_DECL(cpu_rows_##m##_s1) ROW_DECL(cpu_rows_##m##_s2)               \
	ROW_DECL(cpu_rows_##m##_s4) ROW_DECL(cpu_rows_##m##_s8)               \
	ROW_DECL(cpu_rows_##m##_f2) ROW_DECL(cpu_rows_##m##_f4)               \
	ROW_DECL(cpu_rows_##m##_f8)
ROW_DECLS(mean)
ROW_DECLS(min)
ROW_DECLS(max)
ROW_DECLS(median)
ROW_DECLS(decimate)
ROW_DECLS(second_max)
ROW_DECLS(second_min)

/* A reduce_METHOD.c file: RD_ROWS_METHOD(mean, SP_RD_MEAN). */
#define RD_ROWS_METHOD(m, M)                                                  \
	ROW_TYPES(cpu_rows_##m, M)                                            \
	/* prelude-c.h's executor state, unused by these loops. */            \
	SP_INTERNAL void cpu_rows_##m##_unused(void);                         \
	void cpu_rows_##m##_unused(void) { (void)sp_ref_item; }

#endif

