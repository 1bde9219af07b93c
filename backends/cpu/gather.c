/*
 * gather.c - the cpu backend's gather (doc/design.md §6): the view that
 * merges dims and groups chunks into work items, the copy of each item's
 * runs out of the epoch's rows, and the check for chunks of fill value.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "copy.h"
#include "cpu_gather.h"

/*
 * Work items.  Gathering chunk by chunk reads each input row in pieces of
 * one chunk's run: when runs are short (the cube workload's 1-element
 * channel dim) every cache line is fetched once per chunk, and even 128-byte
 * runs touch a new page per line (the stack workload's 64^3 chunks).  So an
 * item takes every chunk along the last dim, dealing each input row out in
 * one pass, and, when those rows are short, every chunk along the
 * second-last dim too, so that consecutive lines are consecutive in memory.
 * Grouping stops where it would leave fewer than ITEMS_PER_THREAD items per
 * thread in a batch.
 */
#define SHORT_RUN_BYTES 256
#define SHORT_ROW_BYTES 2048
#define ITEMS_PER_THREAD 4

/*
 * The fused pass gathers each item just before compressing it, so an item
 * should be small (a thread that finishes its last item early idles until
 * the batch ends) yet read input runs long enough to use whole cache lines
 * and pages: the fewest chunks along the last dims (a divisor of their
 * count, so items tile the epoch) that make runs of this many bytes, or
 * one chunk when its own runs reach half of it.  Measured, as CPU time
 * against memcpy: 512 -> 1024 took the cube workload's scatter from 0.19
 * to 0.25 of memcpy and the stack's from 0.33 to 0.38, 2048 (with runs
 * copied inline) the stack's from 0.48 to 0.51-0.58; the frames
 * workload's 1152-byte runs kept one chunk per item.  4096, a page, which
 * for both is a whole row of the array, so that every page an item reads
 * it reads whole and in order: `stack`'s scatter went from 0.87-0.90 of
 * memcpy to 1.11-1.34, `frames`' (4 chunks an item, 8 items a batch) from
 * 1.0-1.3 to 1.7-2.1, for a scratch item per thread twice or four times
 * as large (bench/README.md, "Items that read whole rows").
 */
#define FUSED_RUN_BYTES 4096
/*
 * Items spanning interleaved channels (channel_items) read input runs of
 * up to this many bytes, whole rows where the rows are shorter: planarising
 * `frames` (2 channels, rows of 9216 bytes), the scatter ran at 0.56-0.63
 * of memcpy with one chunk along x an item (2304-byte runs), 0.61-0.64 with
 * two, 0.70-0.78 with the whole row (four), for a scratch item of 8 chunks,
 * 4.7 MB, a thread.
 */
#define CHANNEL_RUN_BYTES 16384

static uint64_t least_divisor_reaching(uint64_t n, uint64_t unit,
				       uint64_t want)
{
	for (uint64_t g = 1; g < n; g++)
		if (n % g == 0 && g * unit >= want)
			return g;
	return n;
}

typedef void (*deal_fn)(uint8_t *, size_t, const uint8_t *, uint64_t);
static deal_fn deal_pick(size_t es, uint64_t ng);

/*
 * Planarising, (t, y, x, c) appended and stored (t, c, y, x) (design
 * §3.3), leaves the channels interleaved along the input's last dim: a
 * work item gathering one channel's chunk reads every input line once
 * per channel and picks one element in ng.  An item of the fused pass
 * spans the channel dim instead when a dealer can split its lines: dim
 * hd (neither of the last two) of ng = 2..4 elements in chunks of one,
 * adjacent in the input, the last dim ng apart.  Its chunks lie at
 * strides of hstride chunk indices, the chunks along the dims after hd.
 */
static void channel_items(struct view *v, size_t es)
{
	const int last = v->rank - 1;

	for (int d = 1; d < last - 1; d++) {
		uint64_t ng = v->size[d];

		if (v->chunk[d] != 1 || v->in_stride[d] != 1 ||
		    v->in_stride[last] != ng || v->chunk[last] < 2 ||
		    deal_pick(es, ng) == NULL)
			continue;
		v->H = ng;
		v->hd = d;
		v->hstride = 1;
		for (int e = d + 1; e < v->rank; e++)
			v->hstride *= v->count[e];
		return;
	}
}

void view_init(struct view *v, const struct plan *p, int fused)
{
	uint64_t s = 1, want = ITEMS_PER_THREAD * (uint64_t)p->threads;
	int r = 0, last;

	memset(v, 0, sizeof(*v));
	v->size[0] = v->chunk[0] = p->chunk[0];
	v->in_stride[0] = p->in_stride[0];
	/* A storage order (design §3.3) permutes the plan's in_stride: a
	 * dim merges only where the input's strides agree with it. */
	for (int d = 1; d < p->rank; d++) {
		if (p->chunk[d] == p->size[d] &&
		    v->in_stride[r] == p->in_stride[d] * p->size[d]) {
			v->size[r] *= p->size[d];
			v->chunk[r] *= p->chunk[d];
			v->in_stride[r] = p->in_stride[d];
		} else {
			r++;
			v->size[r] = p->size[d];
			v->chunk[r] = p->chunk[d];
			v->in_stride[r] = p->in_stride[d];
		}
	}
	v->rank = r + 1;
	v->dense = 1;
	for (int d = v->rank - 1; d >= 0; d--) {
		v->count[d] = sp_ceil_div(v->size[d], v->chunk[d]);
		v->dense &= v->in_stride[d] == s;
		s *= v->size[d];
	}
	v->A = v->G = v->H = 1;
	v->hd = -1;
	last = v->rank - 1;
	if (v->rank > 1 && fused) {
		const int sec = last - 1;
		uint64_t unit;

		channel_items(v, p->esize);
		/* An input row segment holds the H chunks' runs interleaved. */
		unit = v->chunk[last] * p->esize * v->H;
		if (v->H > 1)
			v->G = least_divisor_reaching(v->count[last], unit,
						      CHANNEL_RUN_BYTES);
		else
			v->G = unit >= FUSED_RUN_BYTES / 2 ? 1 :
			       least_divisor_reaching(v->count[last], unit,
						      FUSED_RUN_BYTES);
		if (v->G == v->count[last] &&
		    v->size[last] * p->esize * v->H < FUSED_RUN_BYTES)
			v->A = least_divisor_reaching(
				v->count[sec],
				v->chunk[sec] * v->size[last] * p->esize *
					v->H,
				FUSED_RUN_BYTES);
	} else if (v->rank > 1) {
		uint64_t per_last = p->K * p->M / v->count[last];

		if (v->chunk[last] * p->esize < SHORT_RUN_BYTES ||
		    per_last >= want)
			v->G = v->count[last];
		if (v->G > 1 && v->size[last] * p->esize < SHORT_ROW_BYTES &&
		    per_last / v->count[last - 1] >= want)
			v->A = v->count[last - 1];
	}
	v->items = p->M / (v->H * v->A * v->G);
}

/*
 * Copy one run of a chunk's row.  Runs of 32 to 64 elements are common
 * (the stack workload's are 128 bytes) and a call to memcpy costs about as
 * much as the copy; constant sizes become a few vector moves inline.
 */
static inline void copy_run(uint8_t *o, const uint8_t *in, size_t n)
{
	switch (n) {
	case 64:
		memcpy(o, in, 64);
		break;
	case 128:
		memcpy(o, in, 128);
		break;
	case 256:
		memcpy(o, in, 256);
		break;
	default:
		memcpy(o, in, n);
		break;
	}
}

/* Copy n elements of es bytes from src, `stride` elements apart, to dst. */
static inline void copy_strided(uint8_t *dst, const uint8_t *src, uint64_t n,
				uint64_t stride, size_t es)
{
	switch (es) {
	case 1:
		for (uint64_t j = 0; j < n; j++)
			dst[j] = src[j * stride];
		break;
	case 2:
		for (uint64_t j = 0; j < n; j++)
			memcpy(dst + 2 * j, src + 2 * j * stride, 2);
		break;
	case 4:
		for (uint64_t j = 0; j < n; j++)
			memcpy(dst + 4 * j, src + 4 * j * stride, 4);
		break;
	default:
		for (uint64_t j = 0; j < n; j++)
			memcpy(dst + 8 * j, src + 8 * j * stride, 8);
		break;
	}
}

/*
 * Deal n rows of NG interleaved elements out to NG chunks, row j's element
 * g to chunk g's element j (a chunk extent of 1 along a dim of NG elements,
 * like colour channels).  One restrict-qualified pointer per chunk, so the
 * compiler knows the outputs do not overlap and vectorises the loads and
 * shuffles: measured 2-3x the speed of an inner loop over an array of
 * output pointers at -O2 (about 0.6 of memcpy instead of 0.25).
 */
/* GCC's -O2 cost model leaves the interleaved loads scalar; -O3's
 * vectorises them (clang does at -O2 already). */
#if defined(__GNUC__) && !defined(__clang__)
#define DEAL_O3 __attribute__((optimize("O3")))
#else
#define DEAL_O3
#endif
/* A distribution's build targets SSE2, whose shuffles take several
 * instructions per element dealt; AVX2's and AVX-512's permutes take
 * one per vector.  Built for all three, the one the CPU runs picked at
 * load (configure's cpu dispatch): on `cube` the dealing went from 0.30
 * to 0.23 s of each thread's time and its xor row from 0.86-0.88 of the
 * bound to 0.88-0.89 (bench/README.md, "Channels dealt with the CPU's
 * own vectors"). */
/* Not under ThreadSanitizer: the loader runs the clones' resolver before
 * the sanitizer's runtime is up, and its instrumented entry faults. */
#if defined(__SANITIZE_THREAD__)
#define DEAL_NO_CLONES
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define DEAL_NO_CLONES
#endif
#endif
#if defined(HAVE_TARGET_CLONES) && !defined(DEAL_NO_CLONES)
#define DEAL_CLONES __attribute__((target_clones("arch=x86-64-v4", \
						   "arch=x86-64-v3", \
						   "default")))
#else
#define DEAL_CLONES
#endif
#define DEAL_ATTR DEAL_O3 DEAL_CLONES

const char *gather_dealer_clone(void)
{
#if defined(HAVE_TARGET_CLONES) && !defined(DEAL_NO_CLONES)
	/* GCC's resolver tests these levels, best first. */
	__builtin_cpu_init();
	if (__builtin_cpu_supports("x86-64-v4"))
		return "x86-64-v4";
	if (__builtin_cpu_supports("x86-64-v3"))
		return "x86-64-v3";
	return "default";
#else
	return "none (built once)";
#endif
}

#define DEAL2(name, T)                                                        \
	DEAL_ATTR static void name(uint8_t *dst, size_t cb, const uint8_t *src,         \
			 uint64_t n)                                          \
	{                                                                     \
		const T *restrict s = (const T *)(const void *)src;           \
		T *restrict d0 = (T *)(void *)dst;                            \
		T *restrict d1 = (T *)(void *)(dst + cb);                     \
		for (uint64_t j = 0; j < n; j++) {                            \
			d0[j] = s[2 * j];                                     \
			d1[j] = s[2 * j + 1];                                 \
		}                                                             \
	}
#define DEAL3(name, T)                                                        \
	DEAL_ATTR static void name(uint8_t *dst, size_t cb, const uint8_t *src,         \
			 uint64_t n)                                          \
	{                                                                     \
		const T *restrict s = (const T *)(const void *)src;           \
		T *restrict d0 = (T *)(void *)dst;                            \
		T *restrict d1 = (T *)(void *)(dst + cb);                     \
		T *restrict d2 = (T *)(void *)(dst + 2 * cb);                 \
		for (uint64_t j = 0; j < n; j++) {                            \
			d0[j] = s[3 * j];                                     \
			d1[j] = s[3 * j + 1];                                 \
			d2[j] = s[3 * j + 2];                                 \
		}                                                             \
	}
#define DEAL4(name, T)                                                        \
	DEAL_ATTR static void name(uint8_t *dst, size_t cb, const uint8_t *src,         \
			 uint64_t n)                                          \
	{                                                                     \
		const T *restrict s = (const T *)(const void *)src;           \
		T *restrict d0 = (T *)(void *)dst;                            \
		T *restrict d1 = (T *)(void *)(dst + cb);                     \
		T *restrict d2 = (T *)(void *)(dst + 2 * cb);                 \
		T *restrict d3 = (T *)(void *)(dst + 3 * cb);                 \
		for (uint64_t j = 0; j < n; j++) {                            \
			d0[j] = s[4 * j];                                     \
			d1[j] = s[4 * j + 1];                                 \
			d2[j] = s[4 * j + 2];                                 \
			d3[j] = s[4 * j + 3];                                 \
		}                                                             \
	}
DEAL2(deal_1x2, uint8_t)
DEAL2(deal_2x2, uint16_t)
DEAL2(deal_4x2, uint32_t)
DEAL3(deal_2x3, uint16_t)
DEAL4(deal_2x4, uint16_t)
DEAL3(deal_1x3, uint8_t)
DEAL4(deal_1x4, uint8_t)
DEAL3(deal_4x3, uint32_t)
DEAL4(deal_4x4, uint32_t)

/*
 * One of every S elements of src to dst: a run of a storage order that
 * moved the innermost dim (design §3.3), S the stride of the input's
 * (t, y, x, c) rows stored (t, c, y, x).  A constant stride lets the
 * compiler use the dealers' shuffles instead of a load per element.
 */
#define PICK(name, T, S)                                                      \
	DEAL_ATTR static void name(uint8_t *dst, const uint8_t *src,          \
				   uint64_t n)                                \
	{                                                                     \
		const T *restrict s = (const T *)(const void *)src;           \
		T *restrict d = (T *)(void *)dst;                             \
		for (uint64_t j = 0; j < n; j++)                              \
			d[j] = s[S * j];                                      \
	}
PICK(pick_1x2, uint8_t, 2)
PICK(pick_1x3, uint8_t, 3)
PICK(pick_1x4, uint8_t, 4)
PICK(pick_2x2, uint16_t, 2)
PICK(pick_2x3, uint16_t, 3)
PICK(pick_2x4, uint16_t, 4)
PICK(pick_4x2, uint32_t, 2)
PICK(pick_4x3, uint32_t, 3)
PICK(pick_4x4, uint32_t, 4)

typedef void (*pick_fn)(uint8_t *, const uint8_t *, uint64_t);

/* The specialised picker for es-byte elements `stride` apart, or NULL. */
static pick_fn pick_pick(size_t es, uint64_t stride)
{
	static const pick_fn t[3][3] = {
		{ pick_1x2, pick_1x3, pick_1x4 },
		{ pick_2x2, pick_2x3, pick_2x4 },
		{ pick_4x2, pick_4x3, pick_4x4 },
	};
	int e = es == 1 ? 0 : es == 2 ? 1 : es == 4 ? 2 : -1;

	if (e < 0 || stride < 2 || stride > 4)
		return NULL;
	return t[e][stride - 2];
}

/* The specialised dealer for es-byte elements in rows of ng, or NULL. */
static deal_fn deal_pick(size_t es, uint64_t ng)
{
	if (es == 2)
		return ng == 2 ? deal_2x2 : ng == 3 ? deal_2x3 :
		       ng == 4 ? deal_2x4 : NULL;
	if (es == 1)
		return ng == 2 ? deal_1x2 : ng == 3 ? deal_1x3 :
		       ng == 4 ? deal_1x4 : NULL;
	if (es == 4)
		return ng == 2 ? deal_4x2 : ng == 3 ? deal_4x3 :
		       ng == 4 ? deal_4x4 : NULL;
	return NULL;
}

/*
 * The first cell of work item `item` (its first chunk's origin) and, per
 * dim, how many of that chunk's cells lie inside the array; returns the
 * first chunk's index.  Items number the chunk grid row-major, A x G
 * chunks an item, with dim hd's chunks all in every item.
 */
static uint64_t item_box(const struct view *v, uint64_t item,
			 uint64_t *origin, uint64_t *ext)
{
	uint64_t rest = item * v->A * v->G, first = 0, step = 1;

	for (int d = v->rank - 1; d >= 0; d--) {
		uint64_t n = d == v->hd ? 1 : v->count[d];
		uint64_t t = rest % n;

		rest /= n;
		origin[d] = t * v->chunk[d];
		ext[d] = v->size[d] - origin[d];
		if (ext[d] > v->chunk[d])
			ext[d] = v->chunk[d];
		first += t * step;
		step *= v->count[d];
	}
	return first;
}

uint64_t item_first(const struct view *v, uint64_t item)
{
	uint64_t origin[SHARDPIPE_MAX_RANK], ext[SHARDPIPE_MAX_RANK];

	return v->H == 1 ? item * v->A * v->G : item_box(v, item, origin, ext);
}

/*
 * Gather work item `item` of an epoch to `out`: its H x A x G chunks,
 * chunk (h*A+a)*G+g at out + ((h*A+a)*G+g)*cs (cs >= chunk_bytes: the
 * pool's chunk spacing, or a compressed slot's).  Lines run over view
 * dims 0..R-3 inside the chunks; each line of a chunk is a tile of
 * chunk[R-2] x chunk[R-1] elements, read from consecutive input rows.
 * Padding cells hold the fill value, as the kernels' scatter pads them
 * (design §22.1).
 */
void gather_item(const struct plan *p, const struct view *v,
		 const uint8_t *epoch, uint8_t *out, size_t cs, uint64_t item)
{
	gather_rows(p, v, epoch, out, cs, item, 0, v->chunk[0], 0);
}

/*
 * gather_item for view dim-0 rows r0..r1 of the epoch only, `rows` pointing
 * at row r0: the deal into chunk-laid staging of a span of whole rows.
 * Dim 0 is outermost in a chunk, so the rows written are one range of
 * each chunk.  past: whole runs of a multiple of 64 bytes go past the cache
 * (copy_run_past; the caller fences).
 */
void gather_rows(const struct plan *p, const struct view *v,
		 const uint8_t *rows_in, uint8_t *out, size_t cs,
		 uint64_t item, uint64_t r0, uint64_t r1, int past)
{
	const int R = v->rank, last = R - 1, sec = R - 2;
	const size_t es = p->esize;
	uint64_t origin[SHARDPIPE_MAX_RANK], ext[SHARDPIPE_MAX_RANK];
	uint64_t n[SHARDPIPE_MAX_RANK] = { 0 };
	uint64_t lines = 1;
	const uint64_t cl = v->chunk[last], C1 = v->chunk[sec];
	const uint64_t row = v->in_stride[sec], sl = v->in_stride[last];
	const size_t tile = (size_t)(C1 * cl) * es;
	/* Rows that hold exactly the item's chunks, one element each. */
	deal_fn deal = cl == 1 && sl == 1 && v->G == row ?
			       deal_pick(es, v->G) : NULL;
	pick_fn pick = sl != 1 ? pick_pick(es, sl) : NULL;
	/* The H channels' chunks, dealt from each input line at once. */
	deal_fn hdeal = v->H > 1 ? deal_pick(es, v->H) : NULL;
	const size_t hcs = (size_t)(v->A * v->G) * cs;

	/* Rank 2: dim 0 is the tile's rows (j0..j1); else the lines' outer
	 * dim (l0..lines). */
	const uint64_t j0 = sec == 0 ? r0 : 0;
	uint64_t l0 = 0, j1 = v->chunk[sec];
	/* Element offsets are the epoch's; rows_in holds them from row r0. */
	const uint64_t base = r0 * v->in_stride[0];
	const uint8_t *epoch = rows_in;
	/* Every run's place is then 16-byte aligned. */
	const int nt = past && (cl * es) % 64 == 0 && cs % 16 == 0 &&
		       ((uintptr_t)out & 15) == 0;

	item_box(v, item, origin, ext);
	if (sec == 0) {
		j1 = r1;
	} else {
		for (int d = 1; d < sec; d++)
			lines *= v->chunk[d];
		l0 = r0 * lines;
		lines *= r1;
		n[0] = r0;
	}

	for (uint64_t l = l0; l < lines; l++) {
		uint64_t off = origin[last] * sl;
		int inside = 1;

		for (int d = 0; d < sec; d++) {
			inside &= n[d] < ext[d];
			off += (origin[d] + n[d]) * v->in_stride[d];
		}
		/* Rank 2 starts its rows at j0 instead. */
		off -= sec > 0 ? base : 0;
		for (uint64_t a = 0; a < v->A; a++) {
			uint64_t os = origin[sec] + a * C1;
			uint64_t rows = v->size[sec] - os;
			const uint8_t *src = epoch + (off + os * row) * es;
			/* A > 1 only when G is the whole last dim. */
			uint8_t *dst = out + a * v->G * cs + l * tile;

			if (rows > C1)
				rows = C1;
			if (!inside)
				rows = 0;
			if (rows > j1)
				rows = j1;
			if (deal != NULL && rows > j0)
				deal(dst + j0 * es, cs, src, rows - j0);
			for (uint64_t g = 0; g < v->G && cl == 1 && !deal; g++)
				/* One element per input row and chunk:
				 * typed loads down the rows. */
				copy_strided(dst + g * cs + j0 * es,
					     src + g * sl * es,
					     rows > j0 ? rows - j0 : 0, row, es);
			for (uint64_t j = j0; j < rows && cl > 1; j++) {
				/* Each input row once, dealt out. */
				const uint8_t *in = src + (j - j0) * row * es;

				for (uint64_t g = 0; g < v->G; g++) {
					uint64_t gl = origin[last] + g * cl;
					uint64_t e = v->size[last] - gl;
					uint8_t *o = dst + g * cs + j * cl * es;

					if (e > cl)
						e = cl;
					if (hdeal != NULL) {
						hdeal(o, hcs, in + g * cl *
							      sl * es, e);
						for (uint64_t h = 0;
						     h < v->H && e < cl; h++)
							copy_fill(o + h * hcs +
									  e * es,
								  (size_t)((cl -
									    e) *
									   es),
								  p->fill_le,
								  (unsigned)es);
						continue;
					}
					if (pick != NULL) {
						pick(o, in + g * cl * sl * es,
						     e);
					} else if (sl != 1) {
						/* A permuted last dim
						 * (design §3.3). */
						copy_strided(o, in + g * cl *
								 sl * es,
							     e, sl, es);
					} else if (e == cl && nt) {
						copy_run_past(o, in + g * cl *
								 es,
							      (size_t)(cl *
								       es));
						continue;
					} else if (e == cl) {
						copy_run(o, in + g * cl * es,
							 (size_t)(cl * es));
						continue;
					} else {
						memcpy(o, in + g * cl * es,
						       (size_t)(e * es));
					}
					if (e == cl)
						continue;
					copy_fill(o + e * es,
						  (size_t)((cl - e) * es),
						  p->fill_le, (unsigned)es);
				}
			}
			/* Padding rows: those of the range past the edge. */
			if (rows < j0)
				rows = j0;
			for (uint64_t hg = 0; hg < v->H * v->G && rows < j1;
			     hg++)
				copy_fill(dst + hg / v->G * hcs + hg % v->G * cs +
						  rows * cl * es,
					  (size_t)((j1 - rows) * cl) * es,
					  p->fill_le, (unsigned)es);
		}
		for (int d = sec - 1; d >= 0; d--) {
			if (++n[d] < v->chunk[d])
				break;
			n[d] = 0;
		}
	}
}

/* Whether n bytes (n >= es) are all the fill value. */
static inline int run_is_fill(const struct plan *p, const uint8_t *run,
			      size_t n)
{
	return copy_is_fill(run, n, p->fill_le, (unsigned)p->esize, 0);
}

/*
 * Whether every cell of work item `item` of an epoch holds the fill value,
 * read where the cells lie in the epoch's rows, before any gather: an item
 * of fill is then left out without being gathered (a dark frame, a masked
 * region: the gather's copy was all the work they cost, design §22.2).
 * The cells are those gather_item copies, so the answer is the one
 * left_out gives for each of the item's gathered chunks together.  Along
 * the last dim the item's chunks are adjacent, so each input row gives
 * one run; when they span the last dim whole, the rows of one a-block run
 * on into each other and make one.
 */
int item_is_fill(const struct plan *p, const struct view *v,
		 const uint8_t *epoch, uint64_t item)
{
	const int R = v->rank, last = R - 1, sec = R - 2;
	const size_t es = p->esize;
	const uint64_t row = v->in_stride[sec];
	uint64_t origin[SHARDPIPE_MAX_RANK], ext[SHARDPIPE_MAX_RANK];
	uint64_t n[SHARDPIPE_MAX_RANK] = { 0 };
	uint64_t xn, yn, runs;
	size_t run;

	/* Permuted input (design §3.3) has no runs to read in place: the
	 * gathered chunks are checked one by one (left_out) instead. */
	if (!v->dense)
		return 0;
	item_box(v, item, origin, ext);
	xn = v->G * v->chunk[last];
	if (xn > v->size[last] - origin[last])
		xn = v->size[last] - origin[last];
	yn = v->A * v->chunk[sec];
	if (yn > v->size[sec] - origin[sec])
		yn = v->size[sec] - origin[sec];
	if (xn == v->size[last]) {
		run = (size_t)(yn * row) * es;
		runs = 1;
	} else {
		run = (size_t)xn * es;
		runs = yn;
	}
	for (;;) {
		uint64_t off = origin[last] + origin[sec] * row;
		int d;

		for (d = 0; d < sec; d++)
			off += (origin[d] + n[d]) * v->in_stride[d];
		for (uint64_t j = 0; j < runs; j++)
			if (!run_is_fill(p, epoch + (off + j * row) * es, run))
				return 0;
		for (d = sec - 1; d >= 0; d--) {
			if (++n[d] < ext[d])
				break;
			n[d] = 0;
		}
		if (d < 0)
			return 1;
	}
}

/*
 * Whether a gathered chunk is not to be stored: it holds
 * the fill value in every cell inside the array (doc/design.md §22.2).
 * gather_item pads the cells outside it with the fill value, so that is
 * every byte of the chunk, one run however the edge cuts it.
 */
int left_out(const struct plan *p, const uint8_t *chunk)
{
	return !p->write_empty_chunks &&
	       run_is_fill(p, chunk, (size_t)p->chunk_bytes);
}
