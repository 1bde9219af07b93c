/*
 * pyramid-stores.c - pyramids (doc/design.md §28) through the public API:
 * for every method on every dtype, over geometries with odd and even
 * extents, dim 0 halving or not, bounded and unbounded, a partial last
 * block, a row carried across batches and a flush between appends:
 *
 *   - the reader, which recomputes every level from the one below by its
 *     own code (src/reader_levels.c), finds each level equal to it;
 *   - level 0 is byte for byte the store written without a pyramid;
 *   - on cpu the levels share level 0's worker threads;
 *   - a kernel backend writes the cpu backend's files byte for byte with
 *     codec none (L2, §18), and opencl the reference's with zstd, gzip and
 *     blosc at every local size.
 *
 * Built twice: t/pyramid-stores checks `reference`; t/pyramid-opencl
 * (SP_TEST_OPENCL) checks `opencl` (two levels a store, each level
 * costing a device context), its local size rotating over 1, 7, 64 and
 * 256.  Inputs are random (the seed is printed; SHARDPIPE_TEST_SEED
 * fixes it), floats salted with NaNs of any payload, infinities, zeros of
 * both signs, subnormals and extremes, integers with repeats for the
 * median's ties.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#ifdef SP_TEST_OPENCL
#define KERNEL_BACKEND "opencl"
static const char *const locals[] = { "1", "7", "64", "256" };
#else
#define KERNEL_BACKEND "reference"
static const char *const locals[] = { NULL };
#endif
#define N_LOCALS (sizeof(locals) / sizeof(locals[0]))

struct geo {
	const char *what;
	int rank;
	const char *names[4];
	uint64_t size[4], chunk[4], cps[4];
	uint32_t downsample;
	int levels;          /* max_levels, 0: the default */
	uint64_t rows;       /* rows appended */
	uint64_t flush_at;   /* rows, then a flush; 0: none */
	int stop[4];         /* max_levels_dim; 0: none */
	uint64_t top[4];     /* with stops: the top level's shape */
};

static const struct geo geos[] = {
	{ "t,y,x unbounded, y and x halve (odd)", 3, { "t", "y", "x" },
	  { 0, 13, 11 }, { 2, 4, 4 }, { 2, 2, 1 }, 6, 0, 5, 0, { 0 }, { 0 } },
	{ "z,y,x bounded, all halve", 3, { "z", "y", "x" },
	  { 9, 7, 6 }, { 3, 3, 4 }, { 2, 1, 1 }, 7, 3, 9, 0, { 0 }, { 0 } },
	{ "t,c,y,x unbounded, t y x halve, odd chunk, partial block, flush", 4,
	  { "t", "c", "y", "x" }, { 0, 2, 9, 10 }, { 3, 1, 4, 4 },
	  { 1, 2, 1, 2 }, 13, 3, 11, 4, { 0 }, { 0 } },
	{ "y,x bounded (even), 7 of 12 rows appended", 2, { "y", "x" },
	  { 12, 16 }, { 4, 4 }, { 2, 2 }, 3, 0, 7, 0, { 0 }, { 0 } },
};
#define N_GEOS (sizeof(geos) / sizeof(geos[0]))

/* Anisotropic pyramids (doc/design.md §28.1): a dim stops halving at its
 * own level while the others go on, so a level halves some of its dims
 * and the reduction table has factor 1 on the others; with dim 0 stopped,
 * a level's rows pair and the next's do not.  Three levels on opencl
 * too: the factors change only from the second reduction on. */
static const struct geo stop_geos[] = {
	{ "z,y,x bounded, z halves once (stop 2), y and x go on", 3,
	  { "z", "y", "x" }, { 9, 13, 11 }, { 3, 4, 4 }, { 2, 1, 1 }, 7, 0,
	  9, 0, { 2, 0, 0 }, { 5, 4, 3 } },
	{ "t,y,x unbounded, t halves once (stop 2), odd chunk, flush", 3,
	  { "t", "y", "x" }, { 0, 13, 10 }, { 3, 4, 4 }, { 2, 1, 2 }, 7, 3,
	  9, 4, { 2, 0, 0 }, { 5, 4, 3 } },
};

static void describe(shardpipe_desc *d, const struct geo *g,
		     shardpipe_dtype t, int method, int append,
		     const char *backend)
{
	shardpipe_desc_init(d);
	d->rank = g->rank;
	d->dtype = t;
	d->codec = SHARDPIPE_CODEC_NONE;
	d->level = 0;
	d->threads = 2;
	d->backend = backend;
	d->overwrite = 1;
	d->write_empty_chunks = 1;
	for (int k = 0; k < g->rank; k++) {
		d->dims[k].name = g->names[k];
		d->dims[k].size = g->size[k];
		d->dims[k].chunk = g->chunk[k];
		d->dims[k].chunks_per_shard = g->cps[k];
	}
	d->downsample = g->downsample;
	d->method = (shardpipe_method)method;
	d->append_method = append;
	d->max_levels = g->levels;
	for (int k = 0; k < g->rank; k++)
		d->max_levels_dim[k] = g->stop[k];
#ifdef SP_TEST_OPENCL
	/* Each level opens a context on the device: one reduction (two
	 * levels) keeps every case's edges, carries and tails, and the
	 * test's time within bounds; an anisotropic one keeps its three. */
	if (g->top[0] == 0)
		d->max_levels = 2;
#endif
}

/* A float's special bits: NaNs (any payload and sign), infinities, zeros,
 * the smallest subnormal and the largest finite value. */
static uint64_t special(uint64_t r, size_t size)
{
	int fb = size == 2 ? 10 : size == 4 ? 23 : 52;
	int eb = size == 2 ? 5 : size == 4 ? 8 : 11;
	uint64_t sign = (uint64_t)1 << (fb + eb);
	uint64_t inf = (((uint64_t)1 << eb) - 1) << fb;
	uint64_t frac = ((uint64_t)1 << fb) - 1;
	uint64_t s = (r >> 32 & 1) ? sign : 0;

	switch (r % 6) {
	case 0:
		return s | inf | (((r >> 8) & frac) | 1);  /* a NaN */
	case 1:
		return s | inf;
	case 2:
		return s;
	case 3:
		return s | 1;
	case 4:
		return s | (inf - ((uint64_t)1 << fb)) | frac;
	default:
		return s | ((r >> 4) & frac);   /* subnormal */
	}
}

/* n bytes of elements of t: random, with repeats, and for floats a
 * special value in one element of ten. */
static void fill(uint8_t *p, size_t n, shardpipe_dtype t, uint64_t *rng)
{
	size_t size = shardpipe_dtype_size(t);
	uint64_t pool[4];

	for (int k = 0; k < 4; k++)
		pool[k] = test_rand(rng);
	for (size_t i = 0; i + size <= n; i += size) {
		uint64_t r = test_rand(rng), v;

		if (t == SHARDPIPE_DTYPE_BOOL)
			v = r & 1;
		else if (r % 5 == 0)
			v = pool[(r >> 8) % 4];   /* ties for the median */
		else if (t >= SHARDPIPE_DTYPE_FLOAT16 && r % 10 == 1)
			v = special(test_rand(rng), size);
		else
			v = test_rand(rng);
		if (t == SHARDPIPE_DTYPE_FLOAT16 && r % 10 > 1) {
			/* Finite halves mostly: a random exponent. */
			v &= 0xbfff;
		}
		test_put_le(p + i, v, size);
	}
}

/* Open, append (a flush after flush_at rows), close. */
static int write_store(const char *dir, const shardpipe_desc *d,
		       const struct geo *g, const uint8_t *data,
		       uint64_t row_bytes)
{
	shardpipe_stream *s;
	uint64_t first = g->flush_at ? g->flush_at : g->rows;
	int rc = shardpipe_stream_open(&s, dir, d);

	if (rc != SHARDPIPE_OK) {
		diag("open %s: %s", d->backend, shardpipe_last_error_message());
		return rc;
	}
	rc = shardpipe_stream_append(s, data, first * row_bytes);
	if (rc == SHARDPIPE_OK && g->flush_at)
		rc = shardpipe_stream_flush(s);
	if (rc == SHARDPIPE_OK && g->rows > first)
		rc = shardpipe_stream_append(s, data + first * row_bytes,
					     (g->rows - first) * row_bytes);
	if (rc != SHARDPIPE_OK)
		diag("%s: %s", d->backend, shardpipe_stream_message(s));
	if (shardpipe_stream_close(s) != SHARDPIPE_OK && rc == SHARDPIPE_OK) {
		diag("close %s: %s", d->backend,
		     shardpipe_last_error_message());
		rc = SHARDPIPE_ERR_IO;
	}
	return rc;
}

/* The reader checks every level and recomputes it from the one below. */
static void verified(const char *dir, const char *what)
{
	shardpipe_reader *r;
	shardpipe_array_info info;
	int rc = shardpipe_reader_open(&r, dir);

	if (rc != SHARDPIPE_OK) {
		ok(0, "%s: the reader opens the image (%s)", what,
		   shardpipe_last_error_message());
		return;
	}
	rc = shardpipe_reader_check(r);
	shardpipe_reader_info(r, &info);
	ok(rc == SHARDPIPE_OK && info.levels > 1 && info.levels_recomputed,
	   "%s: every level equals the one below it reduced (%d levels)%s%s",
	   what, info.levels, rc ? ": " : "",
	   rc ? shardpipe_reader_message(r) : "");
	shardpipe_reader_close(r);
}

static void set_local(const char *local)
{
	char dbg[32];

	if (local == NULL) {
		unsetenv("SHARDPIPE_KERNEL_DEBUG");
		return;
	}
	snprintf(dbg, sizeof(dbg), "local=%s", local);
	setenv("SHARDPIPE_KERNEL_DEBUG", dbg, 1);
}

static const char *const method_names[] = {
	"mean", "min", "max", "median", "decimate", "second_max", "second_min"
};

/*
 * Every method on every dtype on reference.  On opencl, whose cases cost
 * the most of the suite (doc/design.md §18.2), second_max and second_min
 * on five dtypes between them, each element size and kind once: the
 * kernel reads size and kind from the table, one code for all of them.
 */
static int sampled(int t, int m)
{
#ifdef SP_TEST_OPENCL
	if (m == SHARDPIPE_METHOD_SECOND_MAX)
		return t == SHARDPIPE_DTYPE_UINT8 ||
		       t == SHARDPIPE_DTYPE_INT32 ||
		       t == SHARDPIPE_DTYPE_FLOAT16;
	if (m == SHARDPIPE_METHOD_SECOND_MIN)
		return t == SHARDPIPE_DTYPE_INT16 ||
		       t == SHARDPIPE_DTYPE_FLOAT64;
#endif
	(void)t;
	(void)m;
	return 1;
}

/* The top level's shape is the geometry's, worked out by hand: the
 * reader's recomputation takes which dims halved from the shapes. */
static void top_shape(const char *dir, const struct geo *g, const char *what)
{
	char *top;
	shardpipe_reader *r;
	shardpipe_array_info info;
	int same;

	if (asprintf(&top, "%s/%d", dir, 2) < 0)
		bail("out of memory");
	if (shardpipe_reader_open(&r, top) != SHARDPIPE_OK) {
		ok(0, "%s: level 2 opens (%s)", what,
		   shardpipe_last_error_message());
		free(top);
		return;
	}
	shardpipe_reader_info(r, &info);
	same = info.rank == g->rank;
	for (int k = 0; same && k < g->rank; k++)
		same = info.shape[k] == g->top[k];
	ok(same, "%s: level 2 is %llu x %llu x %llu", what,
	   (unsigned long long)g->top[0], (unsigned long long)g->top[1],
	   (unsigned long long)g->top[2]);
	shardpipe_reader_close(r);
	free(top);
}

/* One case: cpu's store, verified; the kernel backend's, equal to it. */
static void one_case(const char *root, int n, const struct geo *g,
		     shardpipe_dtype t, int method, int append,
		     const char *local, uint64_t seed)
{
	uint64_t row_bytes = shardpipe_dtype_size(t), rng = seed;
	shardpipe_desc d;
	char *cpu, *kern, what[200];
	uint8_t *data;
	int files;

	for (int k = 1; k < g->rank; k++)
		row_bytes *= g->size[k];
	data = test_xmalloc((size_t)(g->rows * row_bytes));
	fill(data, (size_t)(g->rows * row_bytes), t, &rng);
	snprintf(what, sizeof(what), "%s %s%s%s, %s", shardpipe_dtype_name(t),
		 method_names[method], append >= 0 ? " then " : "",
		 append >= 0 ? method_names[append] : "", g->what);
	if (asprintf(&cpu, "%s/cpu-%d", root, n) < 0 ||
	    asprintf(&kern, "%s/kern-%d", root, n) < 0)
		bail("out of memory");
	describe(&d, g, t, method, append, "cpu");
	if (ok(write_store(cpu, &d, g, data, row_bytes) == SHARDPIPE_OK,
	       "cpu writes %s", what))
		verified(cpu, what);
	if (g->top[0] != 0)
		top_shape(cpu, g, what);
	set_local(local);
	describe(&d, g, t, method, append, KERNEL_BACKEND);
	ok(write_store(kern, &d, g, data, row_bytes) == SHARDPIPE_OK &&
	   test_same_tree(cpu, kern, &files),
	   "%s%s%s writes cpu's files byte for byte: %s", KERNEL_BACKEND,
	   local ? " local=" : "", local ? local : "", what);
	set_local(NULL);
	test_rmtree(kern);
	test_rmtree(cpu);
	free(cpu);
	free(kern);
	free(data);
}

/* Level 0 of a pyramid is the store written without one. */
static void level0_unchanged(const char *root, uint64_t seed)
{
	const struct geo *g = &geos[2];
	uint64_t row_bytes = 2 * 2 * 9 * 10, rng = seed;
	uint8_t *data = test_xmalloc((size_t)(g->rows * row_bytes));
	shardpipe_desc d;
	char *pyr, *plain, *zero;
	int files = 0, same;

	fill(data, (size_t)(g->rows * row_bytes), SHARDPIPE_DTYPE_UINT16,
	     &rng);
	if (asprintf(&pyr, "%s/pyr", root) < 0 ||
	    asprintf(&plain, "%s/plain", root) < 0 ||
	    asprintf(&zero, "%s/pyr/0", root) < 0)
		bail("out of memory");
	describe(&d, g, SHARDPIPE_DTYPE_UINT16, SHARDPIPE_METHOD_MEAN, -1,
		 "cpu");
	d.codec = SHARDPIPE_CODEC_ZSTD;
	d.level = 3;
	d.write_empty_chunks = 0;
	ok(write_store(pyr, &d, g, data, row_bytes) == SHARDPIPE_OK,
	   "cpu writes a zstd pyramid");
	d.downsample = 0;
	d.max_levels = 0;
	ok(write_store(plain, &d, g, data, row_bytes) == SHARDPIPE_OK,
	   "cpu writes the same array without one");
	same = test_same_tree(zero, plain, &files);
	ok(same && files > 2,
	   "level 0 is the plain store byte for byte (%d files)", files);
	test_rmtree(pyr);
	test_rmtree(plain);
	free(pyr);
	free(plain);
	free(zero);
	free(data);
}

#ifdef SP_TEST_OPENCL
/* opencl writes the reference's bytes with every codec too, at every
 * local size: the encoders' work-groups split differently at each. */
static void codecs_match(const char *root, uint64_t seed)
{
	static const char *const codecs[] = { "zstd:3", "gzip:5",
					      "blosc:zstd:2:bitshuffle" };
	const struct geo *g = &geos[0];
	uint64_t row_bytes = 4 * 13 * 11, rng = seed;
	uint8_t *data = test_xmalloc((size_t)(g->rows * row_bytes));

	fill(data, (size_t)(g->rows * row_bytes), SHARDPIPE_DTYPE_FLOAT32,
	     &rng);
	for (size_t c = 0; c < sizeof(codecs) / sizeof(*codecs); c++) {
		shardpipe_desc d;
		char *a, *b;

		if (asprintf(&a, "%s/ref-%zu", root, c) < 0 ||
		    asprintf(&b, "%s/ocl-%zu", root, c) < 0)
			bail("out of memory");
		describe(&d, g, SHARDPIPE_DTYPE_FLOAT32, SHARDPIPE_METHOD_MEAN,
			 -1, "reference");
		if (shardpipe_desc_set_codec(&d, codecs[c]) != SHARDPIPE_OK)
			bail("codec %s", codecs[c]);
		ok(write_store(a, &d, g, data, row_bytes) == SHARDPIPE_OK,
		   "reference writes a %s pyramid", codecs[c]);
		d.backend = "opencl";
		for (size_t l = 0; l < N_LOCALS; l++) {
			int files = 0, same;

			set_local(locals[l]);
			same = write_store(b, &d, g, data, row_bytes) ==
				       SHARDPIPE_OK &&
			       test_same_tree(a, b, &files);
			ok(same, "opencl local=%s writes the reference's %s "
			   "files byte for byte (%d files)", locals[l],
			   codecs[c], files);
			set_local(NULL);
			test_rmtree(b);
		}
		test_rmtree(a);
		free(a);
		free(b);
	}
	free(data);
}
#endif

#ifndef SP_TEST_OPENCL
/*
 * The levels share level 0's threads (doc/design.md §28.3): a cpu pyramid
 * of three levels on 3 threads, every level having compressed a batch,
 * runs a pipeline and a writer per level and 2 workers in all, where a
 * crew per level would run 2 workers each.  Counted in /proc/self/task
 * before any other stream of the process has started a thread.
 */
static void shared_threads(const char *root)
{
	enum { LEVELS = 3, T = 3 };
	char *dir;
	static uint8_t rows[4 * 32 * 32 * 2];
	shardpipe_stream *s;
	shardpipe_desc d;
	int rc, before, during;

	before = test_threads_now();
	if (before < 0) {
		skip(1, "no /proc/self/task to count threads in");
		return;
	}
	if (asprintf(&dir, "%s/threads", root) < 0)
		bail("out of memory");
	shardpipe_desc_init(&d);
	d.rank = 3;
	d.dtype = SHARDPIPE_DTYPE_UINT16;
	d.backend = "cpu";
	d.threads = T;
	d.overwrite = 1;
	d.dims[0].name = "t";
	d.dims[0].chunk = 1;
	d.dims[0].chunks_per_shard = 2;
	d.dims[1].name = "y";
	d.dims[1].size = 32;
	d.dims[1].chunk = 8;
	d.dims[1].chunks_per_shard = 2;
	d.dims[2].name = "x";
	d.dims[2].size = 32;
	d.dims[2].chunk = 8;
	d.dims[2].chunks_per_shard = 2;
	d.downsample = 6;
	d.max_levels = LEVELS;
	for (size_t i = 0; i < sizeof(rows); i++)
		rows[i] = (uint8_t)(i * 7);
	rc = shardpipe_stream_open(&s, dir, &d);
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_stream_append(s, rows, sizeof(rows));
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_stream_flush(s);
	if (rc != SHARDPIPE_OK)
		bail("threads: %s", shardpipe_last_error_message());
	during = test_threads_now();
	is_int(during - before, 2 * LEVELS + (T - 1), "a cpu pyramid of %d "
	       "levels on %d threads runs %d threads in all, not %d", LEVELS,
	       T, 2 * LEVELS + (T - 1), 2 * LEVELS + LEVELS * (T - 1));
	ok(shardpipe_stream_close(s) == SHARDPIPE_OK, "threads: closed");
	verified(dir, "threads");
	free(dir);
}
#endif

int main(void)
{
	uint64_t seed = test_seed();
	char *root = test_tmpdir("pyramid-stores");
	int n = 0;

#ifdef SP_TEST_OPENCL
	for (int i = 0; i < shardpipe_backend_count(); i++) {
		shardpipe_backend_info info;

		shardpipe_backend_probe(i, &info);
		if (strcmp(info.name, "opencl") != 0 || info.usable)
			continue;
		test_rmtree(root);
		free(root);
		skip_all("no opencl device (%s)", info.detail);
	}
#endif
	plan_lazy();
#ifndef SP_TEST_OPENCL
	shared_threads(root);
#endif
	for (int t = 0; t < SHARDPIPE_DTYPE_COUNT_; t++)
		for (int m = 0; m < SHARDPIPE_METHOD_COUNT_; m++, n++)
			if (sampled(t, m))
				one_case(root, n, &geos[n % N_GEOS], (shardpipe_dtype)t,
				 m, -1, locals[n % N_LOCALS], seed + (uint64_t)n);
	/* A different method along dim 0, on the geometries that halve it. */
	one_case(root, n++, &geos[2], SHARDPIPE_DTYPE_UINT16,
		 SHARDPIPE_METHOD_MEAN, SHARDPIPE_METHOD_MAX, locals[0], seed);
	one_case(root, n++, &geos[1], SHARDPIPE_DTYPE_FLOAT32,
		 SHARDPIPE_METHOD_MEDIAN, SHARDPIPE_METHOD_MEAN,
		 locals[1 % N_LOCALS], seed + 1);
	one_case(root, n++, &geos[3], SHARDPIPE_DTYPE_INT8,
		 SHARDPIPE_METHOD_MIN, SHARDPIPE_METHOD_DECIMATE,
		 locals[2 % N_LOCALS], seed + 2);
	one_case(root, n++, &stop_geos[0], SHARDPIPE_DTYPE_FLOAT32,
		 SHARDPIPE_METHOD_MEAN, -1, locals[3 % N_LOCALS], seed + 3);
	one_case(root, n++, &stop_geos[1], SHARDPIPE_DTYPE_UINT16,
		 SHARDPIPE_METHOD_SECOND_MAX, -1, locals[0], seed + 4);
	one_case(root, n++, &stop_geos[1], SHARDPIPE_DTYPE_INT32,
		 SHARDPIPE_METHOD_MEAN, SHARDPIPE_METHOD_MAX,
		 locals[1 % N_LOCALS], seed + 5);
	level0_unchanged(root, seed);
#ifdef SP_TEST_OPENCL
	codecs_match(root, seed);
#endif
	test_rmtree(root);
	free(root);
	return done_testing();
}
