/*
 * reduce.c - the pyramid reduction on the cpu backend's threads
 * (doc/design.md §28.2).  The rules are the kernels' (reduce_methods.h,
 * compiled here as C), so that cpu and the kernel backends cannot differ;
 * what is the cpu's own is how a block is found: once per row of outputs,
 * its elements then read at pointers that step along the row and gathered
 * into an array, where a kernel work-item locates every output alone.
 * Each method and element type gets its own copy of the loop, with the
 * rest of the rules compiled away (reduce_rows.h, reduce_METHOD.c).
 */
#include "reduce_rows.h"

#include "cpu_reduce.h"

#define ROW_ROW(m)                                                            \
	{ cpu_rows_##m##_u1, cpu_rows_##m##_u2, cpu_rows_##m##_u4,             \
	  cpu_rows_##m##_u8, cpu_rows_##m##_s1, cpu_rows_##m##_s2,             \
	  cpu_rows_##m##_s4, cpu_rows_##m##_s8, cpu_rows_##m##_f2,             \
	  cpu_rows_##m##_f4, cpu_rows_##m##_f8 }
static const row_fn rows_of[][11] = {
	ROW_ROW(mean), ROW_ROW(min), ROW_ROW(max), ROW_ROW(median),
	ROW_ROW(decimate), ROW_ROW(second_max), ROW_ROW(second_min)
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
		/* Blocks f elements apart along the innermost dim, which
		 * a storage order may have made strided (design §3.3). */
		w = (struct row){ &s, out + o * esize, fast,
				  f * g[SP_RGEO_IN_STRIDE(inner)], method,
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
