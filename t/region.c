/*
 * region.c - many writers of one array (doc/design.md §30).
 *
 * The reference is the same array written by one ordinary stream: random
 * 3-D and 4-D arrays (edges not shard multiples), every dtype and codec
 * here, split into shard-aligned boxes in several ways (one box = the
 * whole array among them), each box written by a region writer in a
 * random order, then published, must hold the same files byte for byte
 * (no temporary left) and read back as the input.  Then what a region
 * writer refuses, each with its code and message and nothing written;
 * the locks between writers; a killed writer's box written again.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

static char *tmp;
static uint64_t rng;

static char *path_of(const char *name)
{
	char *p;

	if (asprintf(&p, "%s/%s", tmp, name) < 0)
		bail("out of memory");
	return p;
}

struct geo {
	int rank;
	uint64_t size[SHARDPIPE_MAX_RANK], chunk[SHARDPIPE_MAX_RANK];
	uint64_t cps[SHARDPIPE_MAX_RANK];
	shardpipe_dtype dtype;
	const char *codec;
	/* An image (§30.5): its halving dims, level count, method, and the
	 * alignment of its boxes (image_align); downsample 0: one array. */
	uint32_t downsample;
	int levels, method;
	uint64_t align[SHARDPIPE_MAX_RANK];
};

static uint64_t pick(uint64_t lo, uint64_t hi)
{
	return lo + test_rand(&rng) % (hi - lo + 1);
}

static void random_geo(struct geo *g, int rank)
{
	g->rank = rank;
	g->downsample = 0;
	for (int d = 0; d < rank; d++) {
		g->chunk[d] = pick(1, rank == 3 ? 5 : 3);
		g->cps[d] = pick(1, 3);
		/* From under one shard to a few, rarely a multiple. */
		g->size[d] = pick(1, 3 * g->chunk[d] * g->cps[d] + 2);
	}
}

static void desc_of(shardpipe_desc *d, const struct geo *g, int unbounded)
{
	shardpipe_desc_init(d);
	d->rank = g->rank;
	for (int k = 0; k < g->rank; k++) {
		d->dims[k].size = k == 0 && unbounded ? 0 : g->size[k];
		d->dims[k].chunk = g->chunk[k];
		d->dims[k].chunks_per_shard = g->cps[k];
	}
	d->dtype = g->dtype;
	d->backend = "cpu";
	d->threads = 2;
	if (g->downsample != 0) {
		static const char *const names[2][4] = {
			{ "z", "y", "x" }, { "t", "z", "y", "x" } };

		for (int k = 0; k < g->rank; k++)
			d->dims[k].name = names[g->rank == 4][k];
		d->downsample = g->downsample;
		d->max_levels = g->levels;
		d->method = (shardpipe_method)g->method;
	}
	if (shardpipe_desc_set_codec(d, g->codec) != SHARDPIPE_OK)
		bail("codec %s: %s", g->codec, shardpipe_last_error_message());
}

static uint64_t elems_of(const uint64_t *shape, int rank)
{
	uint64_t n = 1;

	for (int d = 0; d < rank; d++)
		n *= shape[d];
	return n;
}

/* Open a region writer for lo..hi, append its bytes in random spans,
 * close; check stats.rows_written. */
static int write_box(const char *dir, const shardpipe_desc *d,
		     const uint8_t *box, size_t n, const uint64_t *lo,
		     const uint64_t *hi, uint64_t rows)
{
	shardpipe_stream *s;
	shardpipe_stats st;
	size_t at = 0;
	int rc = shardpipe_stream_open_region(&s, dir, d, lo, hi);

	if (rc != SHARDPIPE_OK) {
		diag("open_region: %s", shardpipe_last_error_message());
		return rc;
	}
	while (rc == SHARDPIPE_OK && at < n) {
		size_t k = 1 + (size_t)(test_rand(&rng) % (n / 3 + 1));

		if (k > n - at)
			k = n - at;
		rc = shardpipe_stream_append(s, box + at, k);
		if (rc != SHARDPIPE_OK)
			diag("append: %s", shardpipe_stream_message(s));
		at += k;
	}
	if (shardpipe_stream_close(s) != SHARDPIPE_OK && rc == SHARDPIPE_OK) {
		diag("close: %s", shardpipe_last_error_message());
		rc = SHARDPIPE_ERR_IO;
	}
	(void)st;
	(void)rows;
	return rc;
}

/* Cut points of one dim: 0, some shard multiples (every one: whole 2),
 * the end. */
static int cuts_of(const struct geo *g, int d, int whole, uint64_t *cut)
{
	uint64_t sh = g->downsample ? g->align[d] : g->chunk[d] * g->cps[d];
	int n = 0;

	cut[n++] = 0;
	for (uint64_t x = sh; whole != 1 && x < g->size[d]; x += sh)
		if (whole == 2 || test_rand(&rng) % 2)
			cut[n++] = x;
	cut[n++] = g->size[d];
	return n;
}

/* One splitting of g into boxes, written in random order, published, and
 * compared with ref. */
static void split_case(const struct geo *g, const uint8_t *data,
		       const char *ref, int whole, int unbounded,
		       const char *label)
{
	uint64_t cut[SHARDPIPE_MAX_RANK][64];
	int ncut[SHARDPIPE_MAX_RANK], nbox = 1;
	size_t es = shardpipe_dtype_size(g->dtype);
	char *dir = path_of("parts.zarr");
	shardpipe_desc d;
	int rc = SHARDPIPE_OK, files = 0, same;
	int *order;
	uint8_t *box;

	desc_of(&d, g, unbounded);
	for (int k = 0; k < g->rank; k++) {
		ncut[k] = cuts_of(g, k, whole, cut[k]);
		nbox *= ncut[k] - 1;
	}
	order = test_xmalloc(sizeof(*order) * (size_t)nbox);
	for (int i = 0; i < nbox; i++)
		order[i] = i;
	for (int i = nbox - 1; i > 0; i--) {
		int j = (int)(test_rand(&rng) % (uint64_t)(i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	box = test_xmalloc((size_t)(elems_of(g->size, g->rank) * es));
	test_rmtree(dir);
	if (mkdir(dir, 0777) != 0)
		bail("mkdir %s: %s", dir, strerror(errno));
	for (int i = 0; i < nbox && rc == SHARDPIPE_OK; i++) {
		uint64_t lo[SHARDPIPE_MAX_RANK], hi[SHARDPIPE_MAX_RANK];
		uint64_t shape[SHARDPIPE_MAX_RANK], rest = (uint64_t)order[i];
		size_t n;

		for (int k = g->rank - 1; k >= 0; k--) {
			uint64_t c = rest % (uint64_t)(ncut[k] - 1);

			rest /= (uint64_t)(ncut[k] - 1);
			lo[k] = cut[k][c];
			hi[k] = cut[k][c + 1];
			shape[k] = hi[k] - lo[k];
		}
		test_extract_box(data, g->size, g->rank, es, lo, hi, box);
		n = (size_t)(elems_of(shape, g->rank) * es);
		if (unbounded)
			hi[0] = 0;
		rc = write_box(dir, &d, box, n, lo, hi, shape[0]);
	}
	if (rc == SHARDPIPE_OK) {
		rc = shardpipe_array_publish(dir, &d, g->size[0]);
		if (rc != SHARDPIPE_OK)
			diag("publish: %s", shardpipe_last_error_message());
	}
	same = rc == SHARDPIPE_OK && test_same_tree(ref, dir, &files) &&
	       test_reads_back(dir, g->size[0], data,
			       (size_t)(elems_of(g->size, g->rank) * es));
	ok(same && files > 0, "%s: %d box(es)%s, %d files equal to one stream's, read back",
	   label, nbox, unbounded ? " (unbounded)" : "", files);
	free(box);
	free(order);
	free(dir);
}

static void matrix(void)
{
	static const shardpipe_dtype dtypes[] = { SHARDPIPE_DTYPE_UINT8,
						  SHARDPIPE_DTYPE_UINT16,
						  SHARDPIPE_DTYPE_FLOAT32 };
	static const char *const codecs[] = { "none", "zstd", "gzip",
					      "blosc" };
	char *ref = path_of("ref.zarr");
	long rounds = test_sized("geometries per codec", 3, 1);

	for (size_t c = 0; c < sizeof(codecs) / sizeof(codecs[0]); c++)
		for (long r = 0; r < rounds * 2; r++) {
			struct geo g;
			shardpipe_desc d;
			char label[160];
			uint8_t *data;
			size_t n;
			int unbounded = r % 2 && r > 0;

			random_geo(&g, 3 + (int)(r % 2));
			g.dtype = dtypes[(c + (size_t)r) % 3];
			g.codec = codecs[c];
			desc_of(&d, &g, unbounded);
			n = (size_t)(elems_of(g.size, g.rank) *
				     shardpipe_dtype_size(g.dtype));
			data = test_xmalloc(n);
			test_fill(data, n, (int)(r % 4), &rng);
			test_rmtree(ref);
			if (test_write_in(ref, &d, data, n, 0) != SHARDPIPE_OK) {
				ok(0, "%s: the reference", codecs[c]);
				free(data);
				continue;
			}
			snprintf(label, sizeof(label),
				 "%s %s rank %d %llux%llux%llu%s", codecs[c],
				 shardpipe_dtype_name(g.dtype), g.rank,
				 (unsigned long long)g.size[0],
				 (unsigned long long)g.size[1],
				 (unsigned long long)g.size[2],
				 g.rank == 4 ? "x.." : "");
			split_case(&g, data, ref, 1, unbounded, label);
			for (int k = 0; k < 2; k++)
				split_case(&g, data, ref, 0, unbounded, label);
			free(data);
		}
	free(ref);
}

static uint64_t gcd_of(uint64_t a, uint64_t b)
{
	while (b != 0) {
		uint64_t t = a % b;

		a = b;
		b = t;
	}
	return a;
}

/*
 * An image box's alignment along each dim, derived here from the level
 * plan of doc/design.md §28.1 (a flagged dim above 1 halves rounding up,
 * chunk and chunks per shard clamped to the level, an unbounded dim 0
 * never clamped) and the rule of §30.5: the least common multiple of
 * every level's shard in level-0 elements, the dim's size when beyond it.
 */
static void image_align(struct geo *g, int unbounded)
{
	uint64_t s[SHARDPIPE_MAX_RANK];
	int h[SHARDPIPE_MAX_RANK] = { 0 };

	memcpy(s, g->size, sizeof(s));
	for (int d = 0; d < g->rank; d++)
		g->align[d] = g->chunk[d] * g->cps[d];
	for (int L = 1; L < g->levels; L++)
		for (int d = 0; d < g->rank; d++) {
			int open = d == 0 && unbounded;
			uint64_t c = g->chunk[d], k = g->cps[d], sh, a;

			if ((g->downsample >> d & 1) && (open || s[d] > 1)) {
				s[d] = (s[d] + 1) / 2;
				h[d]++;
			}
			if (!open) {
				c = c < s[d] ? c : s[d];
				uint64_t have = (s[d] + c - 1) / c;

				k = k < have ? k : have;
			}
			sh = c * k << h[d];
			a = g->align[d] / gcd_of(g->align[d], sh) * sh;
			g->align[d] = !open && a > g->size[d] ? g->size[d] : a;
		}
}

/* A random image: some dims of more than one element halving, 2 or 3
 * levels, a random method (second_max tells an edge's replicated
 * element from a box's lone one). */
static void random_image(struct geo *g, int rank, int unbounded)
{
	int most = 0;

	g->rank = rank;
	g->downsample = 0;
	for (int d = 0; d < rank; d++) {
		g->chunk[d] = pick(1, 3);
		g->cps[d] = pick(1, 2);
		g->size[d] = pick(1, 6 * g->chunk[d] * g->cps[d] + 3);
		if (g->size[d] > 1 && test_rand(&rng) % 3 != 0)
			g->downsample |= 1u << d;
	}
	if (g->downsample == 0) {
		g->size[rank - 1] += 2;
		g->downsample = 1u << (rank - 1);
	}
	for (int d = 0; d < rank; d++) {
		int own = 1;

		while ((g->downsample >> d & 1) &&
		       ((uint64_t)1 << (own - 1)) < g->size[d])
			own++;
		most = own > most ? own : most;
	}
	g->levels = (int)pick(2, most < 3 ? 2 : 3);
	g->method = (int)pick(0, SHARDPIPE_METHOD_SECOND_MAX);
	image_align(g, unbounded);
}

/* Images (§30.5): boxes aligned to every level's shards, written in a
 * random order and published, give every file of one image stream, the
 * levels' and the group's zarr.json among them. */
static void images(void)
{
	static const shardpipe_dtype dtypes[] = { SHARDPIPE_DTYPE_UINT8,
						  SHARDPIPE_DTYPE_UINT16,
						  SHARDPIPE_DTYPE_FLOAT32 };
	static const char *const codecs[] = { "none", "zstd", "gzip",
					      "blosc" };
	char *ref = path_of("ref.zarr");
	long rounds = test_sized("images per codec", 3, 1);

	for (size_t c = 0; c < sizeof(codecs) / sizeof(codecs[0]); c++)
		for (long r = 0; r < rounds * 2; r++) {
			struct geo g;
			shardpipe_desc d;
			char label[200];
			uint8_t *data;
			size_t n;
			int unbounded = r % 3 == 2;

			random_image(&g, 3 + (int)(r % 2), unbounded);
			g.dtype = dtypes[(c + (size_t)r) % 3];
			g.codec = codecs[c];
			desc_of(&d, &g, unbounded);
			n = (size_t)(elems_of(g.size, g.rank) *
				     shardpipe_dtype_size(g.dtype));
			data = test_xmalloc(n);
			test_fill(data, n, (int)(r % 4), &rng);
			test_rmtree(ref);
			if (test_write_in(ref, &d, data, n, 0) != SHARDPIPE_OK) {
				ok(0, "%s: the reference image: %s", codecs[c],
				   shardpipe_last_error_message());
				free(data);
				continue;
			}
			snprintf(label, sizeof(label),
				 "image %s %s rank %d %llux%llux%llu%s, "
				 "downsample 0x%x, %d levels, method %d, "
				 "alignment %llux%llux%llu", codecs[c],
				 shardpipe_dtype_name(g.dtype), g.rank,
				 (unsigned long long)g.size[0],
				 (unsigned long long)g.size[1],
				 (unsigned long long)g.size[2],
				 g.rank == 4 ? "x.." : "", g.downsample,
				 g.levels, g.method,
				 (unsigned long long)g.align[0],
				 (unsigned long long)g.align[1],
				 (unsigned long long)g.align[2]);
			for (int k = 0; k < 2; k++)
				split_case(&g, data, ref, 0, unbounded, label);
			free(data);
		}
	free(ref);
}

/*
 * The edge (§30.5): y and x of 33, chunks 4, 2 a shard, halving through
 * 3 levels (33, 17, 9): boxes align to 32, and the box 32..33 is one
 * element at every level, where the whole image's last block replicates
 * its element (§28.2).  second_max tells the two apart: the box's level
 * halves as the image's does, the lone element taken twice.
 */
static void image_edge(int method)
{
	struct geo g = { .rank = 3, .size = { 3, 33, 33 },
			 .chunk = { 2, 4, 4 }, .cps = { 1, 2, 2 },
			 .dtype = SHARDPIPE_DTYPE_UINT16, .codec = "zstd",
			 .downsample = 6, .levels = 3, .method = method };
	char *ref = path_of("ref.zarr"), label[96];
	size_t n = 3 * 33 * 33 * 2;
	uint8_t *data = test_xmalloc(n);
	shardpipe_desc d;

	image_align(&g, 0);
	desc_of(&d, &g, 0);
	test_fill(data, n, 0, &rng);
	test_rmtree(ref);
	if (test_write_in(ref, &d, data, n, 0) != SHARDPIPE_OK)
		bail("the reference image: %s", shardpipe_last_error_message());
	snprintf(label, sizeof(label), "image edge 3x33x33, method %d, "
		 "alignment %llux%llux%llu", method,
		 (unsigned long long)g.align[0], (unsigned long long)g.align[1],
		 (unsigned long long)g.align[2]);
	split_case(&g, data, ref, 2, 0, label);
	free(data);
	free(ref);
}

/* z 10, y and x 40, chunks 4, 2 a shard, y and x halving through 3
 * levels: level 1's shard is 8 of its 20 elements, 16 of level 0's;
 * level 2's 8 of its 10, 32 of level 0's: boxes align to 32 along y
 * and x, 8 along z. */
static void image_desc(shardpipe_desc *d, shardpipe_method method)
{
	static const char *const names[3] = { "z", "y", "x" };
	static const uint64_t size[3] = { 10, 40, 40 };

	shardpipe_desc_init(d);
	d->rank = 3;
	for (int k = 0; k < 3; k++) {
		d->dims[k].name = names[k];
		d->dims[k].size = size[k];
		d->dims[k].chunk = 4;
		d->dims[k].chunks_per_shard = 2;
	}
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->backend = "cpu";
	d->threads = 1;
	d->downsample = 6;
	d->max_levels = 3;
	d->method = method;
	shardpipe_desc_set_codec(d, "zstd");
}

static void image_refusals(void)
{
	char *dir = path_of("image-refuse.zarr");
	char *plain = path_of("plain.zarr");
	static const uint64_t size[3] = { 10, 40, 40 };
	const size_t n = 10 * 40 * 40 * 2;
	uint8_t *data = test_xmalloc(n);
	shardpipe_desc d, other;
	shardpipe_stream *s = NULL;
	int rc;

	test_rmtree(dir);
	if (mkdir(dir, 0777) != 0)
		bail("mkdir %s", dir);
	image_desc(&d, SHARDPIPE_METHOD_MEAN);
	/* 16 is a shard multiple of level 0 and level 1, not of level 2. */
	rc = shardpipe_stream_open_region(&s, dir, &d, (uint64_t[]){ 0, 16, 0 },
					  size);
	is_int(rc, SHARDPIPE_ERR_INVALID_ARGUMENT, "image: lo[1] 16 refused");
	ok(strstr(shardpipe_last_error_message(), "dim 1 (y") != NULL &&
	   strstr(shardpipe_last_error_message(), "alignment 32") != NULL &&
	   strstr(shardpipe_last_error_message(), "0..10,0..40,0..40") != NULL,
	   "image: the message names dim 1, alignment 32 and the aligned box "
	   "(%s)", shardpipe_last_error_message());
	rc = shardpipe_stream_open_region(&s, dir, &d, (uint64_t[]){ 0, 0, 0 },
					  (uint64_t[]){ 10, 40, 16 });
	is_int(rc, SHARDPIPE_ERR_INVALID_ARGUMENT, "image: hi[2] 16 refused");
	ok(strstr(shardpipe_last_error_message(), "dim 2 (x") != NULL &&
	   strstr(shardpipe_last_error_message(), "0..10,0..40,0..32") != NULL,
	   "image: the message names dim 2 and the aligned box (%s)",
	   shardpipe_last_error_message());
	other = d;
	other.frame_fields = (shardpipe_frame_field[]){
		{ "exposure", SHARDPIPE_DTYPE_FLOAT64 } };
	other.n_frame_fields = 1;
	rc = shardpipe_stream_open_region(&s, dir, &other,
					  (uint64_t[]){ 0, 0, 0 }, size);
	is_int(rc, SHARDPIPE_ERR_UNSUPPORTED, "image: frame_fields refused");
	is_int(test_entries(dir), 0, "image: nothing written");
	/* One box written and published; another method's image is then
	 * another image. */
	test_fill(data, n, 1, &rng);
	{
		uint64_t lo[3] = { 0, 0, 0 };

		rc = write_box(dir, &d, data, n, lo, size, 10);
	}
	is_int(rc, SHARDPIPE_OK, "image: the whole box written");
	is_int(shardpipe_array_publish(dir, &d, 10), SHARDPIPE_OK,
	       "image: published");
	is_int(shardpipe_array_publish(dir, &d, 10), SHARDPIPE_OK,
	       "image: published again");
	image_desc(&other, SHARDPIPE_METHOD_MAX);
	is_int(shardpipe_array_publish(dir, &other, 10), SHARDPIPE_ERR_EXISTS,
	       "image: publishing another method's image refused");
	ok(strstr(shardpipe_last_error_message(), "not this description's") !=
		   NULL, "image: the message says so (%s)",
	   shardpipe_last_error_message());
	rc = shardpipe_stream_open_region(&s, dir, &other,
					  (uint64_t[]){ 0, 0, 0 }, size);
	is_int(rc, SHARDPIPE_ERR_EXISTS,
	       "image: a region writer of another image refused");
	other = d;
	other.downsample = 0;
	other.max_levels = 0;
	is_int(shardpipe_array_publish(dir, &other, 10), SHARDPIPE_ERR_EXISTS,
	       "image: publishing one array over the image refused");
	ok(strstr(shardpipe_last_error_message(), "OME-NGFF image") != NULL,
	   "image: the message names the image (%s)",
	   shardpipe_last_error_message());
	/* The image over one array. */
	test_rmtree(plain);
	if (test_write_in(plain, &other, data, n, 0) != SHARDPIPE_OK)
		bail("plain array: %s", shardpipe_last_error_message());
	is_int(shardpipe_array_publish(plain, &d, 10), SHARDPIPE_ERR_EXISTS,
	       "image: publishing an image over one array refused");
	ok(strstr(shardpipe_last_error_message(), "one array") != NULL,
	   "image: the message names the array (%s)",
	   shardpipe_last_error_message());
	test_rmtree(dir);
	test_rmtree(plain);
	free(data);
	free(dir);
	free(plain);
}

/* 10 x 9 x 7 uint16, chunks 2 x 3 x 2, shards 2 x 1 x 2 chunks: shard
 * shape 4 x 3 x 4. */
static void small_desc(shardpipe_desc *d)
{
	static const uint64_t size[3] = { 10, 9, 7 }, chunk[3] = { 2, 3, 2 },
			      cps[3] = { 2, 1, 2 };

	shardpipe_desc_init(d);
	d->rank = 3;
	for (int k = 0; k < 3; k++) {
		d->dims[k].size = size[k];
		d->dims[k].chunk = chunk[k];
		d->dims[k].chunks_per_shard = cps[k];
	}
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->backend = "cpu";
	d->threads = 1;
	shardpipe_desc_set_codec(d, "zstd");
}

static void refuse_box(const char *dir, const uint64_t *lo,
		       const uint64_t *hi, const char *want, const char *what)
{
	shardpipe_desc d;
	shardpipe_stream *s = NULL;
	int rc;

	small_desc(&d);
	rc = shardpipe_stream_open_region(&s, dir, &d, lo, hi);
	is_int(rc, SHARDPIPE_ERR_INVALID_ARGUMENT, "%s: refused", what);
	ok(s == NULL && strstr(shardpipe_last_error_message(), want) != NULL,
	   "%s: the message names %s (%s)", what, want,
	   shardpipe_last_error_message());
	is_int(test_entries(dir), 0, "%s: nothing written", what);
}

static void refusals(void)
{
	char *dir = path_of("refuse.zarr"), *note;
	shardpipe_desc d, other;
	shardpipe_stream *s = NULL;
	uint64_t lo[3] = { 0, 0, 0 }, hi[3] = { 10, 9, 7 };
	int rc;

	test_rmtree(dir);
	if (mkdir(dir, 0777) != 0)
		bail("mkdir %s", dir);
	/* Aligned boxes computed here: shard shape 4 x 3 x 4. */
	refuse_box(dir, (uint64_t[]){ 0, 1, 0 }, hi, "dim 1",
		   "lo[1] 1 not aligned");
	refuse_box(dir, (uint64_t[]){ 0, 1, 0 }, hi, "0..10,0..9,0..7",
		   "lo[1] 1: the aligned box");
	refuse_box(dir, (uint64_t[]){ 4, 3, 0 }, (uint64_t[]){ 7, 6, 4 },
		   "4..8,3..6,0..4", "hi[0] 7 not aligned");
	refuse_box(dir, lo, (uint64_t[]){ 10, 9, 8 }, "beyond",
		   "hi[2] 8 beyond the extent");
	refuse_box(dir, (uint64_t[]){ 4, 0, 0 }, (uint64_t[]){ 4, 9, 7 },
		   "not below", "lo[0] = hi[0]");

	/* A user's directory: left as it was. */
	if (asprintf(&note, "%s/notes.txt", dir) < 0)
		bail("oom");
	{
		FILE *f = fopen(note, "w");

		fputs("mine\n", f);
		fclose(f);
	}
	small_desc(&d);
	rc = shardpipe_stream_open_region(&s, dir, &d, lo, hi);
	is_int(rc, SHARDPIPE_ERR_EXISTS, "a user's directory: refused (%s)",
	       shardpipe_last_error_message());
	is_int(test_entries(dir), 1, "a user's directory: untouched");
	rc = shardpipe_array_publish(dir, &d, 10);
	is_int(rc, SHARDPIPE_ERR_EXISTS, "publish into a user's directory: "
	       "refused");
	is_int(test_entries(dir), 1, "publish into a user's directory: "
	       "untouched");
	unlink(note);

	/* A zarr.json of another array. */
	is_int(shardpipe_array_publish(dir, &d, 10), SHARDPIPE_OK,
	       "publish an empty array");
	other = d;
	other.dtype = SHARDPIPE_DTYPE_UINT8;
	rc = shardpipe_stream_open_region(&s, dir, &other, lo, hi);
	ok(rc == SHARDPIPE_ERR_EXISTS &&
		   strstr(shardpipe_last_error_message(), "data_type"),
	   "another dtype's zarr.json: EXISTS naming data_type (%s)",
	   shardpipe_last_error_message());
	other = d;
	other.dims[1].size = 12;
	rc = shardpipe_array_publish(dir, &other, 10);
	ok(rc == SHARDPIPE_ERR_EXISTS &&
		   strstr(shardpipe_last_error_message(), "shape"),
	   "publish another shape: EXISTS naming shape (%s)",
	   shardpipe_last_error_message());
	/* Same shape, another codec, fill value or attribute: its
	 * zarr.json's text differs from what publish would write. */
	other = d;
	shardpipe_desc_set_codec(&other, "gzip");
	rc = shardpipe_stream_open_region(&s, dir, &other, lo, hi);
	ok(rc == SHARDPIPE_ERR_EXISTS &&
		   strstr(shardpipe_last_error_message(), "codec"),
	   "another codec's zarr.json: EXISTS naming the codec (%s)",
	   shardpipe_last_error_message());
	other = d;
	other.fill_value[0] = 7;
	is_int(shardpipe_array_publish(dir, &other, 10), SHARDPIPE_ERR_EXISTS,
	       "publish another fill value: EXISTS");
	other = d;
	other.attributes = (shardpipe_attribute[]){ { "lab", "\"x\"" } };
	other.nattributes = 1;
	is_int(shardpipe_array_publish(dir, &other, 10), SHARDPIPE_ERR_EXISTS,
	       "publish with another attribute: EXISTS");
	is_int(shardpipe_array_publish(dir, &d, 10), SHARDPIPE_OK,
	       "publish the same array again: an identical rewrite");
	is_int(shardpipe_array_publish(dir, &d, 11),
	       SHARDPIPE_ERR_INVALID_ARGUMENT, "publish 11 rows of 10");
	other = d;
	other.storage_order[1] = 2;
	other.storage_order[2] = 1;
	rc = shardpipe_stream_open_region(&s, dir, &other, lo, hi);
	ok(rc == SHARDPIPE_ERR_UNSUPPORTED &&
		   strstr(shardpipe_last_error_message(), "storage_order[1]"),
	   "another storage order: UNSUPPORTED naming it (%s)",
	   shardpipe_last_error_message());
	is_int(shardpipe_array_publish(dir, &other, 10),
	       SHARDPIPE_ERR_UNSUPPORTED, "publish in another storage order");
	other = d;
	other.downsample = 2;
	rc = shardpipe_stream_open_region(&s, "s3://bucket/a", &other, lo, hi);
	ok(rc == SHARDPIPE_ERR_UNSUPPORTED &&
		   strstr(shardpipe_last_error_message(), "s3://"),
	   "a pyramid on s3://: UNSUPPORTED, before any request (%s)",
	   shardpipe_last_error_message());
#ifdef HAVE_S3
	/* s3:// goes to the S3 store (t/s3-region.sh writes one): here to
	 * an endpoint that refuses connections, tried once. */
	setenv("SHARDPIPE_S3_ENDPOINT", "http://127.0.0.1:1", 1);
	setenv("AWS_MAX_ATTEMPTS", "1", 1);
	setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
	is_int(shardpipe_stream_open_region(&s, "s3://bucket/a", &d, lo, hi),
	       SHARDPIPE_ERR_IO, "s3: the S3 store's first request fails (%s)",
	       shardpipe_last_error_message());
#else
	is_int(shardpipe_stream_open_region(&s, "s3://bucket/a", &d, lo, hi),
	       SHARDPIPE_ERR_UNSUPPORTED, "s3: this build has no S3 support");
#endif
	is_int(shardpipe_stream_open_region(&s, dir, &d, NULL, hi),
	       SHARDPIPE_ERR_INVALID_ARGUMENT, "lo NULL");
	/* A link in the chunk tree to a user's directory: not written
	 * through. */
	{
		char *mine = path_of("mine"), *c = path_of("refuse.zarr/c"),
		     *l = path_of("refuse.zarr/c/0");
		uint16_t z[4 * 3 * 4] = { 1 };

		test_rmtree(dir);
		mkdir(dir, 0777);
		mkdir(mine, 0777);
		mkdir(c, 0777);
		if (symlink(mine, l) != 0)
			bail("symlink %s", l);
		rc = shardpipe_stream_open_region(&s, dir, &d, lo,
						  (uint64_t[]){ 4, 3, 4 });
		if (rc == SHARDPIPE_OK) {
			rc = shardpipe_stream_append(s, z, sizeof(z));
			if (rc == SHARDPIPE_OK)
				rc = shardpipe_stream_close(s);
			else
				shardpipe_stream_close(s);
		}
		is_int(rc, SHARDPIPE_ERR_EXISTS, "c/0 a link: refused (%s)",
		       shardpipe_last_error_message());
		is_int(test_entries(mine), 0, "c/0 a link: the directory it "
		       "names untouched");
		unlink(l);
		test_rmtree(mine);
		free(mine);
		free(c);
		free(l);
	}
	free(note);
	test_rmtree(dir);
	free(dir);
}

/* The locks: region writers share the store; an ordinary stream and a
 * region writer exclude each other; a shard being written by another
 * writer (its temporary locked) is BUSY. */
static void locks(void)
{
	char *dir = path_of("locks.zarr"), *t;
	shardpipe_desc d;
	shardpipe_stream *a = NULL, *b = NULL, *n = NULL;
	uint64_t lo[3] = { 0, 0, 0 }, hi[3] = { 4, 3, 4 };
	uint64_t lo2[3] = { 4, 0, 0 }, hi2[3] = { 8, 3, 4 };
	uint16_t buf[4 * 3 * 4] = { 0 };
	int fd, rc;

	for (int i = 0; i < 48; i++)
		buf[i] = (uint16_t)(i + 1);
	test_rmtree(dir);
	mkdir(dir, 0777);
	small_desc(&d);
	is_int(shardpipe_stream_open_region(&a, dir, &d, lo, hi), SHARDPIPE_OK,
	       "a region writer");
	is_int(shardpipe_stream_open_region(&b, dir, &d, lo2, hi2),
	       SHARDPIPE_OK, "a second region writer at once");
	is_int(shardpipe_stream_open(&n, dir, &d), SHARDPIPE_ERR_BUSY,
	       "an ordinary stream meanwhile: BUSY (%s)",
	       shardpipe_last_error_message());
	rc = shardpipe_stream_open_region(&n, dir, &d, lo, hi);
	ok(rc == SHARDPIPE_ERR_BUSY &&
		   strstr(shardpipe_last_error_message(), "0-4.0-3.0-4"),
	   "the same box at once: BUSY naming it (%s)",
	   shardpipe_last_error_message());
	rc = shardpipe_stream_open_region(&n, dir, &d, (uint64_t[]){ 0, 0, 0 },
					  (uint64_t[]){ 10, 3, 7 });
	ok(rc == SHARDPIPE_ERR_BUSY &&
		   strstr(shardpipe_last_error_message(), "overlaps"),
	   "an overlapping box at once: BUSY (%s)",
	   shardpipe_last_error_message());
	rc = shardpipe_array_publish(dir, &d, 10);
	ok(rc == SHARDPIPE_ERR_BUSY &&
		   strstr(shardpipe_last_error_message(),
			  "has written none of its shards"),
	   "publish while region writers that wrote nothing are open: BUSY "
	   "saying so (%s)", shardpipe_last_error_message());
	shardpipe_stream_close(b);
	is_int(shardpipe_stream_open_region(&b, dir, &d, lo2, hi2),
	       SHARDPIPE_OK, "its box again once it closed");
	shardpipe_stream_close(b);
	/* A writer still open publishes the rows it has written (MPI's
	 * zarr.json growing step by step, §30.3): its claim records them. */
	{
		shardpipe_stream *w = NULL;
		uint64_t wlo[3] = { 0, 6, 0 }, whi[3] = { 0, 9, 7 };
		uint16_t rows[5 * 3 * 7];
		shardpipe_desc u;

		for (size_t i = 0; i < sizeof(rows) / 2; i++)
			rows[i] = (uint16_t)(i * 7 + 3);
		small_desc(&u);
		u.dims[0].size = 0; /* unbounded */
		shardpipe_stream_close(a);
		a = NULL;
		test_rmtree(dir);
		mkdir(dir, 0777);
		rc = shardpipe_stream_open_region(&w, dir, &u, wlo, whi);
		is_int(rc, SHARDPIPE_OK, "an unbounded box, open");
		if (rc == SHARDPIPE_OK) {
			rc = shardpipe_stream_append(w, rows, sizeof(rows));
			if (rc == SHARDPIPE_OK)
				rc = shardpipe_stream_flush(w);
			is_int(rc, SHARDPIPE_OK, "5 rows appended and flushed");
			is_int(shardpipe_array_publish(dir, &u, 4), SHARDPIPE_OK,
			       "publish its 4 written rows while it is open");
			rc = shardpipe_array_publish(dir, &u, 5);
			ok(rc == SHARDPIPE_ERR_BUSY &&
				   strstr(shardpipe_last_error_message(),
					  "below 4"),
			   "publish 5, the last row's shards not written: "
			   "BUSY naming 4 (%s)",
			   shardpipe_last_error_message());
			is_int(shardpipe_stream_close(w), SHARDPIPE_OK,
			       "it closes");
			is_int(shardpipe_array_publish(dir, &u, 5), SHARDPIPE_OK,
			       "publish 5 once it closed");
		}
		test_rmtree(dir);
		mkdir(dir, 0777);
		is_int(shardpipe_stream_open_region(&a, dir, &d, lo, hi),
		       SHARDPIPE_OK, "the first box again");
	}
	/* Another writer in the middle of shard 0/0/0: its temporary
	 * locked. */
	for (int k = 0; k < 3; k++) {
		static const char *const sub[] = { "locks.zarr/c",
						   "locks.zarr/c/0",
						   "locks.zarr/c/0/0" };

		t = path_of(sub[k]);
		mkdir(t, 0777);
		free(t);
	}
	t = path_of("locks.zarr/c/0/0/.0.0.0.tmp");
	fd = open(t, O_WRONLY | O_CREAT, 0666);
	if (fd < 0 || flock(fd, LOCK_EX) != 0)
		bail("lock %s", t);
	rc = shardpipe_stream_append(a, buf, sizeof(buf));
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_stream_close(a);
	else
		shardpipe_stream_close(a);
	ok(rc == SHARDPIPE_ERR_BUSY &&
		   strstr(shardpipe_last_error_message(), "c/0/0/0"),
	   "the same shard being written by another: BUSY naming it (%s)",
	   shardpipe_last_error_message());
	close(fd);
	unlink(t);
	free(t);
	/* An ordinary stream holds it: no region writer. */
	test_rmtree(dir);
	is_int(shardpipe_stream_open(&n, dir, &d), SHARDPIPE_OK,
	       "an ordinary stream");
	is_int(shardpipe_stream_open_region(&a, dir, &d, lo, hi),
	       SHARDPIPE_ERR_BUSY, "a region writer meanwhile: BUSY (%s)",
	       shardpipe_last_error_message());
	is_int(shardpipe_array_publish(dir, &d, 10), SHARDPIPE_ERR_BUSY,
	       "publish meanwhile: BUSY");
	shardpipe_stream_close(n);
	test_rmtree(dir);
	free(dir);
}

/* Boxes meeting one after the other (§30.3): the later one refused, at
 * open when the earlier one's rows are known, at close for a box to the
 * end; the same box again is a retry; publish ends the job. */
static int put_rows(const char *dir, const shardpipe_desc *d,
		    const uint64_t *lo, const uint64_t *hi, uint64_t rows,
		    uint16_t seed)
{
	shardpipe_stream *s = NULL;
	size_t n = (size_t)rows * 9 * 7;
	uint16_t *buf = malloc(n * sizeof(*buf));
	int rc;

	if (buf == NULL)
		bail("out of memory");
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint16_t)(i * 31 + seed);
	rc = shardpipe_stream_open_region(&s, dir, d, lo, hi);
	if (rc == SHARDPIPE_OK) {
		int app = shardpipe_stream_append(s, buf, n * sizeof(*buf));

		rc = shardpipe_stream_close(s);
		if (app != SHARDPIPE_OK)
			rc = app;
	}
	free(buf);
	return rc;
}

static void sequential(void)
{
	char *dir = path_of("seq.zarr");
	shardpipe_desc d, u;
	uint64_t lo[3] = { 0, 0, 0 }, a_hi[3] = { 4, 9, 7 },
		 b_hi[3] = { 8, 9, 7 }, c_lo[3] = { 4, 0, 0 };
	int rc;

	small_desc(&d);
	test_rmtree(dir);
	mkdir(dir, 0777);
	is_int(put_rows(dir, &d, lo, a_hi, 4, 1), SHARDPIPE_OK,
	       "box rows 0..4 written and closed");
	rc = put_rows(dir, &d, lo, b_hi, 8, 2);
	ok(rc == SHARDPIPE_ERR_EXISTS &&
		   strstr(shardpipe_last_error_message(), "0-4.0-9.0-7") &&
		   strstr(shardpipe_last_error_message(),
			  "nothing was written"),
	   "then rows 0..8: EXISTS at open, naming the box written (%s)",
	   shardpipe_last_error_message());
	is_int(put_rows(dir, &d, lo, a_hi, 4, 1), SHARDPIPE_OK,
	       "rows 0..4 again (a retried task): written");
	is_int(put_rows(dir, &d, c_lo, b_hi, 4, 3), SHARDPIPE_OK,
	       "rows 4..8 beside it: written");
	is_int(shardpipe_array_publish(dir, &d, 8), SHARDPIPE_OK, "published");
	is_int(put_rows(dir, &d, lo, b_hi, 8, 2), SHARDPIPE_OK,
	       "after publish, rows 0..8 (a new job): written");

	/* To the end: its extent is known at close. */
	small_desc(&u);
	u.dims[0].size = 0;
	test_rmtree(dir);
	mkdir(dir, 0777);
	is_int(put_rows(dir, &u, c_lo, (uint64_t[]){ 0, 9, 7 }, 4, 4),
	       SHARDPIPE_OK, "unbounded: rows 4.. (4 of them) written");
	is_int(put_rows(dir, &u, lo, (uint64_t[]){ 0, 9, 7 }, 4, 5),
	       SHARDPIPE_OK, "unbounded: rows 0.. (4 of them) beside them");
	rc = put_rows(dir, &u, lo, (uint64_t[]){ 0, 9, 7 }, 8, 6);
	ok(rc == SHARDPIPE_ERR_EXISTS &&
		   strstr(shardpipe_last_error_message(), "4-0.0-9.0-7") &&
		   strstr(shardpipe_last_error_message(), "the rows this one"),
	   "unbounded: rows 0.. again, 8 of them: EXISTS at close, naming "
	   "the box it met (%s)", shardpipe_last_error_message());
	test_rmtree(dir);
	free(dir);
}

/* A writer killed half way through its box; the box written again. */
static void killed(void)
{
	char *ref = path_of("kref.zarr"), *dir = path_of("killed.zarr");
	shardpipe_desc d;
	const size_t n = 10 * 9 * 7 * 2;
	uint8_t *data = test_xmalloc(n);
	uint64_t lo[3] = { 0, 0, 0 }, hi[3] = { 10, 9, 7 };
	pid_t pid;
	int status = 0, files = 0;

	small_desc(&d);
	test_fill(data, n, 0, &rng);
	test_rmtree(ref);
	test_rmtree(dir);
	if (test_write_in(ref, &d, data, n, 0) != SHARDPIPE_OK)
		bail("reference: %s", shardpipe_last_error_message());
	mkdir(dir, 0777);
	pid = fork();
	if (pid == 0) {
		shardpipe_stream *s;

		if (shardpipe_stream_open_region(&s, dir, &d, lo, hi) != 0 ||
		    shardpipe_stream_append(s, data, n / 2) != 0 ||
		    shardpipe_stream_flush(s) != 0)
			_exit(1);
		_exit(9);
	}
	waitpid(pid, &status, 0);
	is_int(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 9,
	       "a writer exits half way");
	/* And one killed inside a shard's write: its temporary, unlocked. */
	{
		char *c = path_of("killed.zarr/c"), *t;
		FILE *f;

		mkdir(c, 0777);
		free(c);
		c = path_of("killed.zarr/c/2");
		mkdir(c, 0777);
		free(c);
		c = path_of("killed.zarr/c/2/0");
		mkdir(c, 0777);
		free(c);
		t = path_of("killed.zarr/c/2/0/.1.0.0.tmp");
		f = fopen(t, "w");
		if (f == NULL)
			bail("%s", t);
		fputs("half a shard", f);
		fclose(f);
		free(t);
	}
	status = write_box(dir, &d, data, n, lo, hi, 10) == SHARDPIPE_OK &&
		 shardpipe_array_publish(dir, &d, 10) == SHARDPIPE_OK &&
		 test_same_tree(ref, dir, &files);
	ok(status && files > 0, "the box again: %d files equal to one stream's, no temporary", files);
	test_rmtree(ref);
	test_rmtree(dir);
	free(data);
	free(ref);
	free(dir);
}

int main(void)
{
	plan_lazy();
	rng = test_seed();
	tmp = test_tmpdir("region");
	matrix();
	refusals();
	locks();
	sequential();
	killed();
	images();
	image_edge(SHARDPIPE_METHOD_SECOND_MAX);
	image_edge(SHARDPIPE_METHOD_MEAN);
	image_refusals();
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
