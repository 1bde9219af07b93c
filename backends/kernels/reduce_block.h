/*
 * reduce_block.h - pyramid levels (doc/design.md §28.2): each block of 2^k
 * elements of one level, k the dims that halve, reduced to one element of
 * the next level.
 *
 * The rules are exact, so that every compiler and device gives the same
 * bits: integer arithmetic only, floats included (their mean is computed
 * on the bit patterns, never by the device's floating-point unit, whose
 * NaN payloads, flushing of subnormals and fused multiply-adds differ).
 *
 *   mean      integers: the exact sum shifted right by k, rounded half to
 *             even (bool: true when more than half are true).  Floats: a
 *             fixed pairwise tree over the block in its order, each node
 *             (a + b) / 2 rounded once to nearest even in the element's
 *             own format.  A block holding a NaN gives its first NaN,
 *             bits unchanged; +inf with -inf gives the quiet NaN.
 *   min, max  by value; floats: -0 below +0, a NaN in the block gives its
 *             first NaN.
 *   median    the lower of the two middle elements of the block sorted by
 *             value (floats: -0 below +0, NaNs above +inf), equal values
 *             in block order.
 *   decimate  the block's first element.
 *
 * Block order is row-major over the halving dims, dim 0 slowest.  An edge
 * block, where the level has no element 2y + 1 along a halving dim, takes
 * element 2y again (the edge replicates).  With an append method different
 * from the method, each of the block's two rows (dim 0) is reduced by the
 * method and the two results by the append method.
 *
 * Rows come from up to three places: a carried row (the last row of the
 * previous call, left over when its rows were odd), the call's rows, and
 * a tail (the last row again where the array ends, or a row of the fill
 * value where a bounded array's rows were never appended).
 *
 * Work: one output element per work-item on a GPU (consecutive items read
 * consecutive pairs, coalesced), SP_RGEO_PER_ITEM consecutive ones on a
 * CPU device; no shared memory, no barriers, no indexed private arrays.
 * Divisions are 32-bit where the values fit.
 *
 * Functions only: the kernel entry is reduce.h's, and the cpu backend
 * compiles these for its own threads (backends/cpu/reduce.c).
 */
#ifndef SP_KERNEL_REDUCE_BLOCK_H
#define SP_KERNEL_REDUCE_BLOCK_H

#include "reduce_layout.h"

/* a / b in 32 bits when both fit, as they do but for huge rows. */
DEVICE_FN u64 rd_div(u64 a, u64 b)
{
	if (((a | b) >> 32) == 0)
		return (u64)((u32)a / (u32)b);
	return a / b;
}

/* Elements are little-endian in every buffer, whatever the host. */
DEVICE_FN u64 rd_load(GLOBAL const u8 *p, u64 esize)
{
	switch (esize) {
	case 1:
		return p[0];
	case 2:
		return (u64)p[0] | (u64)p[1] << 8;
	case 4:
		return (u64)p[0] | (u64)p[1] << 8 | (u64)p[2] << 16 |
		       (u64)p[3] << 24;
	default:
		return (u64)p[0] | (u64)p[1] << 8 | (u64)p[2] << 16 |
		       (u64)p[3] << 24 | (u64)p[4] << 32 | (u64)p[5] << 40 |
		       (u64)p[6] << 48 | (u64)p[7] << 56;
	}
}

DEVICE_FN void rd_store(GLOBAL u8 *p, u64 v, u64 esize)
{
	for (u64 i = 0; i < esize; i++)
		p[i] = (u8)(v >> (8 * i));
}

/* IEEE formats by element size: fraction and exponent bits. */
DEVICE_FN u64 rd_fbits(u64 esize)
{
	return esize == 2 ? 10 : esize == 4 ? 23 : 52;
}

DEVICE_FN u64 rd_ebits(u64 esize)
{
	return esize == 2 ? 5 : esize == 4 ? 8 : 11;
}

DEVICE_FN int rd_isnan(u64 b, u64 esize)
{
	u64 fb = rd_fbits(esize), emax = ((u64)1 << rd_ebits(esize)) - 1;

	return ((b >> fb) & emax) == emax && (b & (((u64)1 << fb) - 1)) != 0;
}

/* The quiet NaN: positive, no payload (0x7e00, 0x7fc00000, ...). */
DEVICE_FN u64 rd_qnan(u64 esize)
{
	u64 fb = rd_fbits(esize), emax = ((u64)1 << rd_ebits(esize)) - 1;

	return emax << fb | (u64)1 << (fb - 1);
}

/*
 * A key whose unsigned order is the order of values: integers offset by
 * their sign bit; floats with the sign bit flipped (negatives inverted),
 * so -0 < +0, and every NaN above +inf.
 */
DEVICE_FN u64 rd_key(u64 b, u64 kind, u64 esize)
{
	u64 sign = (u64)1 << (8 * esize - 1), mask = sign | (sign - 1);

	if (kind == SP_RD_UINT)
		return b;
	if (kind == SP_RD_SINT)
		return b ^ sign;
	if (rd_isnan(b, esize))
		return ~(u64)0;
	return (b & sign) != 0 ? ~b & mask : b | sign;
}

/* x >> n with every bit shifted out or-ed into bit 0 (sticky). */
DEVICE_FN u64 rd_jam(u64 x, u64 n)
{
	if (n == 0)
		return x;
	if (n >= 64)
		return x != 0;
	return x >> n | ((x & (((u64)1 << n) - 1)) != 0);
}

/*
 * (a + b) / 2 of two IEEE values of esize bytes, rounded once to nearest
 * even.  Significands carry three extra bits (guard, round, sticky), so
 * that the exact sum, halved, rounds as the exact value would; the
 * halving can make it subnormal, never overflow.  A NaN operand gives the
 * quiet NaN (the block passes its own NaNs on before it averages).
 */
DEVICE_FN u64 rd_avg2f(u64 a, u64 b, u64 esize)
{
	const u64 fb = rd_fbits(esize), ebits = rd_ebits(esize);
	const u64 emax = ((u64)1 << ebits) - 1, fmask = ((u64)1 << fb) - 1;
	const u64 sign = (u64)1 << (fb + ebits), hidden = (u64)1 << fb;
	u64 ea = (a >> fb) & emax, eb = (b >> fb) & emax;
	u64 ma = a & fmask, mb = b & fmask, sa = a & sign, sb = b & sign;
	u64 m, s, low;
	i64 e;

	if ((ea == emax && ma != 0) || (eb == emax && mb != 0))
		return rd_qnan(esize);
	if (ea == emax || eb == emax) {
		if (ea == emax && eb == emax && sa != sb)
			return rd_qnan(esize);
		return ea == emax ? a : b;
	}
	/* Subnormals have exponent 1 and no hidden bit. */
	if (ea != 0)
		ma |= hidden;
	else
		ea = 1;
	if (eb != 0)
		mb |= hidden;
	else
		eb = 1;
	ma <<= 3;
	mb <<= 3;
	/* a the larger in magnitude. */
	if (eb > ea || (eb == ea && mb > ma)) {
		u64 t = ea;

		ea = eb;
		eb = t;
		t = ma;
		ma = mb;
		mb = t;
		t = sa;
		sa = sb;
		sb = t;
	}
	mb = rd_jam(mb, ea - eb);
	m = sa == sb ? ma + mb : ma - mb;
	if (m == 0)
		return sa == sb ? sa : 0; /* -0 + -0 = -0, x - x = +0 */
	s = sa;
	/* The value is m * 2^(e - bias - fb - 3); halving lowers e. */
	e = (i64)ea - 1;
	if (m >= hidden << 4) {
		m = rd_jam(m, 1);
		e++;
	}
	while (m < hidden << 3 && e > 1) {
		m <<= 1;
		e--;
	}
	if (e < 1) {
		m = rd_jam(m, (u64)(1 - e));
		e = 1;
	}
	low = m & 7;
	m >>= 3;
	if (low > 4 || (low == 4 && (m & 1) != 0))
		m++;
	/* A subnormal m lacks the hidden bit and packs with exponent 0; a
	 * carry out of the fraction raises the exponent by itself. */
	return s | ((((u64)e - 1) << fb) + m);
}

/*
 * Where a block's elements lie: one or two rows (dim 0), each read at
 * `base` plus the element's offsets along the other halving dims (d0 the
 * innermost; 0 where the edge replicates), or the fill value for a row
 * that is fill.  In value mode the block is v0, v1: two rows' results,
 * reduced by the append method.
 */
struct rd_src {
	GLOBAL const u8 *row0;
	GLOBAL const u8 *row1;
	u64 base, d0, d1, d2;
	u64 ks;              /* halving dims besides dim 0 */
	u64 n;               /* elements: rows * 2^ks */
	u64 esize, fill;
	int fill0, fill1;
	int values;
	u64 v0, v1;
};

DEVICE_FN u64 rd_get(const struct rd_src *s, u64 e)
{
	u64 r = e >> s->ks, j = e & (((u64)1 << s->ks) - 1), off;

	if (s->values)
		return e != 0 ? s->v1 : s->v0;
	if (r != 0 ? s->fill1 : s->fill0)
		return s->fill;
	off = s->base + (j & 1) * s->d0 + ((j >> 1) & 1) * s->d1 +
	      ((j >> 2) & 1) * s->d2;
	return rd_load((r != 0 ? s->row1 : s->row0) + off * s->esize,
		       s->esize);
}

#define RD_SRC const struct rd_src *
#define RD_GET(s, e) rd_get(s, e)
#define RD_N(s) ((s)->n)
#define RD_ESIZE(s) ((s)->esize)
#define RD_FN(name) name
#include "reduce_methods.h"
#undef RD_SRC
#undef RD_GET
#undef RD_N
#undef RD_ESIZE
#undef RD_FN

/*
 * Set *s to output element o's block: its row r and place in the row, the
 * block's rows (virtual rows f0 * r and f0 * r + f0 - 1 of carry, rows,
 * tail) and, along each halving dim, the first input coordinate 2y and
 * whether 2y + 1 exists.  *y_in is the coordinate along the innermost dim,
 * for stepping along it.
 */
DEVICE_FN void rd_locate(GLOBAL const u64 *g, GLOBAL const u8 *rows,
			 GLOBAL const u8 *carry, u64 nrows, u64 carried,
			 u64 tail, u64 o, struct rd_src *s, u64 *y_in)
{
	const int rank = (int)g[SP_RGEO_RANK];
	const u64 esize = g[SP_RGEO_ESIZE], f0 = g[SP_RGEO_F0];
	const u64 out_row = g[SP_RGEO_OUT_ROW], vrows = carried + nrows;
	u64 r = rd_div(o, out_row), w = o - r * out_row, k = 0;

	s->base = 0;
	s->d0 = s->d1 = s->d2 = 0;
	*y_in = 0;
	for (int d = rank - 1; d >= 1; d--) {
		u64 osz = g[SP_RGEO_OUT_SIZE(d)], q = rd_div(w, osz);
		u64 y = w - q * osz, f = g[SP_RGEO_FACTOR(d)], x = y * f;

		w = q;
		if (d == rank - 1)
			*y_in = y;
		s->base += x * g[SP_RGEO_IN_STRIDE(d)];
		if (f == 2) {
			u64 step = x + 1 < g[SP_RGEO_IN_SIZE(d)] ?
					   g[SP_RGEO_IN_STRIDE(d)] : 0;

			if (k == 0)
				s->d0 = step;
			else if (k == 1)
				s->d1 = step;
			else
				s->d2 = step;
			k++;
		}
	}
	s->ks = k;
	s->n = f0 << k;
	s->esize = esize;
	s->fill = g[SP_RGEO_FILL];
	s->values = 0;
	s->v0 = s->v1 = 0;
	for (u64 h = 0; h < f0; h++) {
		u64 v = r * f0 + h;
		GLOBAL const u8 *p = rows;
		int fill = 0;

		if (v >= vrows && tail == SP_RD_TAIL_FILL)
			fill = 1;
		else if (v >= vrows)
			v = vrows - 1;
		if (!fill && carried != 0 && v == 0)
			p = carry;
		else if (!fill)
			p = rows + (v - carried) * g[SP_RGEO_IN_ROW] * esize;
		if (h == 0) {
			s->row0 = p;
			s->fill0 = fill;
		}
		s->row1 = p;
		s->fill1 = fill;
	}
}

/* The block of *s reduced: at once, or row by row and then across, one
 * working copy of the source reused (a GPU keeps it in registers). */
DEVICE_FN u64 rd_reduce(const struct rd_src *s, u64 method, u64 append,
			u64 kind)
{
	struct rd_src w;
	u64 first;

	if (s->n == ((u64)1 << s->ks) || append == method)
		return rd_block(s, method, kind);
	w = *s;
	w.n = (u64)1 << s->ks;
	first = rd_block(&w, method, kind);
	w.row0 = s->row1;
	w.fill0 = s->fill1;
	w.v1 = rd_block(&w, method, kind);
	w.v0 = first;
	w.values = 1;
	w.ks = 0;
	w.n = 2;
	return rd_block(&w, append, kind);
}

/*
 * count consecutive outputs from o: located once, then stepped along the
 * innermost dim (its base and edge), located again where a row of it
 * ends.  method, append, kind and esize are the table's; a caller that
 * passes them as constants gets code specialised for them.
 */
DEVICE_FN void rd_run(GLOBAL const u64 *g, GLOBAL const u8 *rows,
		      GLOBAL const u8 *carry, GLOBAL u8 *out, u64 nrows,
		      u64 carried, u64 tail, u64 o, u64 count, u64 method,
		      u64 append, u64 kind, u64 esize)
{
	const int inner = (int)g[SP_RGEO_RANK] - 1;
	const u64 osz = inner > 0 ? g[SP_RGEO_OUT_SIZE(inner)] : 1;
	const u64 f = inner > 0 ? g[SP_RGEO_FACTOR(inner)] : 1;
	const u64 isz = inner > 0 ? g[SP_RGEO_IN_SIZE(inner)] : 1;
	/* A storage order (design §3.3) may move the innermost dim off the
	 * input's contiguous one: step by its stride. */
	const u64 sx = inner > 0 ? g[SP_RGEO_IN_STRIDE(inner)] : 1;
	struct rd_src s;
	u64 y = 0;

	rd_locate(g, rows, carry, nrows, carried, tail, o, &s, &y);
	s.esize = esize;
	for (u64 i = 0; i < count; i++) {
		rd_store(out + (o + i) * esize,
			 rd_reduce(&s, method, append, kind), esize);
		if (++y < osz && inner > 0) {
			s.base += f * sx;
			if (f == 2)
				s.d0 = 2 * y + 1 < isz ? sx : 0;
		} else if (i + 1 < count) {
			rd_locate(g, rows, carry, nrows, carried, tail,
				  o + i + 1, &s, &y);
			s.esize = esize;
		}
	}
}

#endif
