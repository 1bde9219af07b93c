/*
 * reduce.c - the pyramid reduction on the cpu backend's threads
 * (doc/design.md §28.2).  The rules are the kernels' (reduce_methods.h,
 * compiled here as C), so that cpu and the kernel backends cannot differ;
 * what is the cpu's own is how a block is found: once per row of outputs,
 * its elements then read at pointers that step along the row and gathered
 * into an array, where a kernel work-item locates every output alone.
 * Each method and element type gets its own copy of the loop, with the
 * rest of the rules compiled away.
 */
#include "../kernels/prelude-c.h"
#include "../kernels/reduce_block.h"

#include "cpu_reduce.h"

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
 * compiler drops the other methods' and types' branches. */
#define ROW(name, M, K, E)                                                    \
	__attribute__((flatten)) static void name(const struct row *w)        \
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
ROW_TYPES(mean, SP_RD_MEAN)
ROW_TYPES(min, SP_RD_MIN)
ROW_TYPES(max, SP_RD_MAX)
ROW_TYPES(median, SP_RD_MEDIAN)
ROW_TYPES(decimate, SP_RD_DECIMATE)

#define ROW_ROW(m)                                                            \
	{ m##_u1, m##_u2, m##_u4, m##_u8, m##_s1, m##_s2, m##_s4, m##_s8,     \
	  m##_f2, m##_f4, m##_f8 }
static const row_fn rows_of[5][11] = {
	ROW_ROW(mean), ROW_ROW(min), ROW_ROW(max), ROW_ROW(median),
	ROW_ROW(decimate)
};

/*
 * The commonest block by far, 2 x 2 of a plane (y and x halving, dim 0
 * not), for the integer mean, min and max: whole rows in a plain loop over
 * typed elements that the compiler vectorises.  The rules are those of
 * reduce_methods.h, restated for this one shape (the sum of four 32-bit
 * values fits 64 bits; signed values offset by the sign bit, an even
 * offset); the tests hold this to the kernels' bytes.  Little-endian
 * hosts only: the elements are read as words.
 */
typedef int8_t __attribute__((__may_alias__)) a_s8;
typedef int16_t __attribute__((__may_alias__)) a_s16;
typedef int32_t __attribute__((__may_alias__)) a_s32;
typedef uint8_t __attribute__((__may_alias__)) a_u8;
typedef uint16_t __attribute__((__may_alias__)) a_u16;
typedef uint32_t __attribute__((__may_alias__)) a_u32;

#define QUAD(name, T, U, W, SIGN)                                             \
	static void name(const u8 *r0, const u8 *r1, u8 *out, u64 count,      \
			 u64 method)                                          \
	{                                                                     \
		const T *a = (const T *)r0, *b = (const T *)r1;               \
		T *o = (T *)out;                                              \
                                                                              \
		if (method == SP_RD_MEAN)                                     \
			for (u64 i = 0; i < count; i++) {                     \
				W q = (W)((U)a[2 * i] ^ (U)(SIGN)) +          \
				      (W)((U)a[2 * i + 1] ^ (U)(SIGN)) +      \
				      (W)((U)b[2 * i] ^ (U)(SIGN)) +          \
				      (W)((U)b[2 * i + 1] ^ (U)(SIGN));       \
				W r = q & 3;                                  \
                                                                              \
				/* Half to even: up past a half, or at one    \
				 * onto an even quotient. */                  \
				q >>= 2;                                      \
				q += (r + (q & 1)) > 2;                       \
				o[i] = (T)((U)q ^ (U)(SIGN));                 \
			}                                                     \
		else if (method == SP_RD_MIN)                                 \
			for (u64 i = 0; i < count; i++) {                     \
				T x = a[2 * i] < a[2 * i + 1] ? a[2 * i]      \
							      : a[2 * i + 1]; \
				T y = b[2 * i] < b[2 * i + 1] ? b[2 * i]      \
							      : b[2 * i + 1]; \
				o[i] = x < y ? x : y;                         \
			}                                                     \
		else                                                          \
			for (u64 i = 0; i < count; i++) {                     \
				T x = a[2 * i] > a[2 * i + 1] ? a[2 * i]      \
							      : a[2 * i + 1]; \
				T y = b[2 * i] > b[2 * i + 1] ? b[2 * i]      \
							      : b[2 * i + 1]; \
				o[i] = x > y ? x : y;                         \
			}                                                     \
	}
QUAD(quad_u8, a_u8, uint8_t, uint32_t, 0)
QUAD(quad_u16, a_u16, uint16_t, uint32_t, 0)
QUAD(quad_u32, a_u32, uint32_t, uint64_t, 0)
QUAD(quad_s8, a_s8, uint8_t, uint32_t, 0x80)
QUAD(quad_s16, a_s16, uint16_t, uint32_t, 0x8000)
QUAD(quad_s32, a_s32, uint32_t, uint64_t, 0x80000000u)

typedef void (*quad_fn)(const u8 *, const u8 *, u8 *, u64, u64);

/* The quad loop for a row, or NULL where its shape or rules differ. */
static quad_fn quad_for(const struct row *w)
{
	static const quad_fn fns[2][3] = {
		{ quad_u8, quad_u16, quad_u32 },
		{ quad_s8, quad_s16, quad_s32 },
	};
	const struct rd_src *s = w->s;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return NULL;
#endif
	if (s->n != 4 || s->ks != 2 || w->step != 2 || s->d0 != 1 ||
	    s->fill0 || w->kind == SP_RD_FLOAT || w->esize > 4 ||
	    w->method != w->append ||
	    (w->method != SP_RD_MEAN && w->method != SP_RD_MIN &&
	     w->method != SP_RD_MAX))
		return NULL;
	return fns[w->kind == SP_RD_SINT][w->esize == 1 ? 0 :
					  w->esize == 2 ? 1 : 2];
}

/* The index of a kind and size in a row of rows_of[]. */
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
	const int inner = (int)g[SP_RGEO_RANK] - 1;
	const u64 osz = g[SP_RGEO_OUT_SIZE(inner)];
	const u64 f = g[SP_RGEO_FACTOR(inner)];
	const u64 method = g[SP_RGEO_METHOD], append = g[SP_RGEO_APPEND];
	const u64 kind = g[SP_RGEO_KIND], esize = g[SP_RGEO_ESIZE];
	/* The last output of a row whose pair the edge cuts. */
	const int cut = f == 2 && g[SP_RGEO_IN_SIZE(inner)] % 2 != 0;
	const u64 carried = carry != NULL;
	row_fn fn = append == method ? rows_of[method][type_index(kind, esize)]
				     : row_outputs;

	(void)sp_ref_item;
	for (u64 o = o0; o < o1;) {
		struct rd_src s;
		struct row w;
		quad_fn quad;
		u64 y, here, fast;

		rd_locate(g, rows, carry, nrows, carried, (u64)tail, o, &s, &y);
		here = osz - y < o1 - o ? osz - y : o1 - o;
		fast = cut && y + here == osz ? here - 1 : here;
		w = (struct row){ &s, out + o * esize, fast, f, method,
				  append, kind, esize };
		if (fast > 0 && (quad = quad_for(&w)) != NULL)
			quad(s.row0 + s.base * esize,
			     s.row0 + (s.base + s.d1) * esize, w.out, fast,
			     method);
		else if (fast > 0)
			fn(&w);
		if (fast < here)
			rd_run(g, rows, carry, out, nrows, carried, (u64)tail,
			       o + fast, 1, method, append, kind, esize);
		o += here;
	}
}
