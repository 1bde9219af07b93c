/*
 * storage-order.c - a storage order (doc/design.md §3.3): random seeded
 * shapes, dtypes, codecs and permutations written with storage_order on
 * cpu, reference, opencl and cuda (each where usable, else a TAP skip)
 * give stores byte-identical, file by file, to the permuted array (the
 * test permutes in C) written with the identity order on the same
 * backend, and for codec none to cpu's; each reads back as the permuted
 * array; so do three pyramids.  The fill value is nonzero in most
 * cases, and the edges ragged along every dim, so that the padding of
 * edge chunks (the fill value along every dim, design §22.1) is
 * compared too.  Descriptions that are not a permutation,
 * or that the library does not support, are refused before anything is
 * written.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

#define CASES 14

static const char *const backends[] = { "cpu", "reference", "opencl", "cuda" };
#define N_BACKENDS (sizeof(backends) / sizeof(backends[0]))

struct scase {
	int rank;
	shardpipe_dtype dtype;
	const char *codec;
	int unbounded;                       /* the append dim */
	uint64_t rows;
	uint64_t size[SHARDPIPE_MAX_RANK];   /* storage order */
	uint64_t chunk[SHARDPIPE_MAX_RANK];
	uint64_t cps[SHARDPIPE_MAX_RANK];
	int order[SHARDPIPE_MAX_RANK];
	uint8_t fill[8];                     /* the fill value's bytes */
};

static void case_desc(const struct scase *c, shardpipe_desc *d, int permuted,
		      const char *backend)
{
	int a = 0;

	/* The append dim: storage dim a when permuted, else the identity's
	 * storage dim 0. */
	for (int i = 0; permuted && i < c->rank; i++)
		if (c->order[i] == 0)
			a = i;
	shardpipe_desc_init(d);
	d->rank = c->rank;
	d->dtype = c->dtype;
	if (shardpipe_desc_set_codec(d, c->codec) != SHARDPIPE_OK)
		bail("codec %s: %s", c->codec, shardpipe_last_error_message());
	for (int i = 0; i < c->rank; i++) {
		d->dims[i].size = i == a && c->unbounded ? 0 : c->size[i];
		d->dims[i].chunk = c->chunk[i];
		d->dims[i].chunks_per_shard = c->cps[i];
		if (permuted)
			d->storage_order[i] = c->order[i];
	}
	memcpy(d->fill_value, c->fill, sizeof(c->fill));
	d->backend = backend;
	d->threads = 2;
	d->overwrite = 1;
}

/* stored = appended.transpose(order), both row-major: for each stored
 * element, the appended one whose coordinate along order[i] is its
 * coordinate along i. */
static void permute(const struct scase *c, const uint8_t *in, uint8_t *out,
		    size_t es)
{
	uint64_t ash[SHARDPIPE_MAX_RANK], ast[SHARDPIPE_MAX_RANK], s = 1;
	uint64_t x[SHARDPIPE_MAX_RANK] = { 0 }, total = 1;

	for (int i = 0; i < c->rank; i++)
		ash[c->order[i]] = c->size[i];
	for (int a = c->rank - 1; a >= 0; a--) {
		ast[a] = s;
		s *= ash[a];
	}
	for (int i = 0; i < c->rank; i++)
		total *= c->size[i];
	for (uint64_t k = 0; k < total; k++) {
		uint64_t off = 0;

		for (int i = 0; i < c->rank; i++)
			off += x[i] * ast[c->order[i]];
		memcpy(out + k * es, in + off * es, es);
		for (int i = c->rank - 1; i >= 0; i--) {
			if (++x[i] < c->size[i])
				break;
			x[i] = 0;
		}
	}
}

static void random_case(struct scase *c, uint64_t *rng, int i)
{
	int same = 0;
	static const shardpipe_dtype dtypes[] = {
		SHARDPIPE_DTYPE_UINT8, SHARDPIPE_DTYPE_UINT16,
		SHARDPIPE_DTYPE_FLOAT32, SHARDPIPE_DTYPE_FLOAT64,
	};
	static const char *const codecs[] = { "none", "zstd", "gzip",
					      "blosc" };

	memset(c, 0, sizeof(*c));
	c->rank = 3 + (int)(test_rand(rng) % 3);
	c->dtype = dtypes[test_rand(rng) % 4];
	/* Pairs of cases share a codec: none with a moved append dim
	 * too. */
	c->codec = codecs[(i / 2) % 4];
	c->unbounded = (int)(test_rand(rng) % 2);
	c->rows = 1 + test_rand(rng) % 12;
	/* One case in four keeps fill 0. */
	for (size_t b = 0; i % 4 != 3 && b < sizeof(c->fill); b++)
		c->fill[b] = (uint8_t)test_rand(rng);
	for (int d = 0; d < c->rank; d++) {
		c->size[d] = d == 0 ? c->rows : 1 + test_rand(rng) % 7;
		c->chunk[d] = 1 + test_rand(rng) % c->size[d];
		c->cps[d] = 1 + test_rand(rng) % 3;
		c->order[d] = d;
	}
	/* Odd cases move the append dim (it lies in storage order where
	 * the permutation puts append dim 0) and permute every dim; even
	 * ones permute dims 1.. only.  Never the identity. */
	for (int d = c->rank - 1, lo = i % 2 ? 0 : 1; d > lo; d--) {
		int j = lo + (int)(test_rand(rng) % (uint64_t)(d - lo + 1));
		int t = c->order[d];

		c->order[d] = c->order[j];
		c->order[j] = t;
	}
	if (i % 2 && c->order[0] == 0) {
		int j = 1 + (int)(test_rand(rng) % (uint64_t)(c->rank - 1));

		c->order[0] = c->order[j];
		c->order[j] = 0;
	}
	for (int d = 0; d < c->rank; d++)
		same += c->order[d] == d;
	if (same == c->rank) {
		c->order[1] = 2;
		c->order[2] = 1;
	}
	/* Sizes follow storage order: the rows are the append dim's. */
	for (int d = 0; d < c->rank; d++)
		if (c->order[d] == 0 && d != 0) {
			uint64_t t;

			t = c->size[d], c->size[d] = c->size[0], c->size[0] = t;
			t = c->chunk[d], c->chunk[d] = c->chunk[0];
			c->chunk[0] = t;
		}
}

/* (t, y, x, c) interleaved frames of ng channels stored planar (t, c, y,
 * x): the innermost dim moves, over several batches, its chunks ragged
 * along y and x (the cpu backend deals each input line out to the ng
 * channels' chunks at once for 1-, 2- and 4-byte elements, design
 * §3.3). */
static void planar_case(struct scase *c, shardpipe_dtype dtype, uint64_t ng)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->fill, "\x5a\xa5\x3c\xc3\x0f\xf0\x66\x99", 8);
	c->rank = 4;
	c->dtype = dtype;
	c->codec = "zstd";
	c->unbounded = 1;
	c->rows = 40;
	c->size[0] = 40, c->size[1] = ng, c->size[2] = 120, c->size[3] = 100;
	c->chunk[0] = 4, c->chunk[1] = 1, c->chunk[2] = 64, c->chunk[3] = 64;
	c->cps[0] = 2, c->cps[1] = 3, c->cps[2] = 2, c->cps[3] = 1;
	c->order[0] = 0, c->order[1] = 3, c->order[2] = 1, c->order[3] = 2;
}

/* (t, c, y, x) appended, stored channel-major (c, t, y, x): the append
 * dim is storage dim 1, bounded, its last epoch partial; 126 chunks an
 * epoch make batches of 8 epochs (BATCH_MAX_CHUNKS), so 2 batches and 4
 * shard rows. */
static void channel_major_case(struct scase *c)
{
	memset(c, 0, sizeof(*c));
	memcpy(c->fill, "\x5a\xa5\x3c\xc3\x0f\xf0\x66\x99", 8);
	c->rank = 4;
	c->dtype = SHARDPIPE_DTYPE_UINT16;
	c->codec = "zstd";
	c->rows = 37;
	c->size[0] = 3, c->size[1] = 37, c->size[2] = 50, c->size[3] = 70;
	c->chunk[0] = 2, c->chunk[1] = 4, c->chunk[2] = 8, c->chunk[3] = 8;
	c->cps[0] = 2, c->cps[1] = 3, c->cps[2] = 3, c->cps[3] = 2;
	c->order[0] = 1, c->order[1] = 0, c->order[2] = 2, c->order[3] = 3;
}

static void one_case(const char *root, const struct scase *c, int i,
		     uint64_t seed, const int usable[N_BACKENDS],
		     const char *const why[N_BACKENDS])
{
	shardpipe_desc d;
	size_t es = shardpipe_dtype_size(c->dtype), n = es;
	uint8_t *in, *stored;
	char *cpu, label[160];
	int len = 0;
	uint64_t rng = seed + 1000 + (uint64_t)i;

	for (int k = 0; k < c->rank; k++)
		n *= c->size[k];
	len += snprintf(label + len, sizeof(label) - (size_t)len,
			"case %d: rank %d, %zu-byte, %s, %s, shape", i,
			c->rank, es, c->codec,
			c->unbounded ? "unbounded" : "bounded");
	for (int k = 0; k < c->rank; k++)
		len += snprintf(label + len, sizeof(label) - (size_t)len,
				"%c%llu", k ? ',' : ' ',
				(unsigned long long)c->size[k]);
	len += snprintf(label + len, sizeof(label) - (size_t)len, " order");
	for (int k = 0; k < c->rank; k++)
		len += snprintf(label + len, sizeof(label) - (size_t)len,
				"%c%d", k ? ',' : ' ', c->order[k]);
	in = test_xmalloc(n);
	stored = test_xmalloc(n);
	test_fill(in, n, i % 4, &rng);
	permute(c, in, stored, es);
	if (asprintf(&cpu, "%s/want-cpu-%d", root, i) < 0)
		bail("out of memory");
	for (size_t b = 0; b < N_BACKENDS; b++) {
		char *got, *want;

		if (!usable[b]) {
			skip(5, "%s: %s", backends[b], why[b]);
			continue;
		}
		if (asprintf(&got, "%s/%s-%d", root, backends[b], i) < 0 ||
		    asprintf(&want, "%s/want-%s-%d", root, backends[b], i) < 0)
			bail("out of memory");
		/* The zstd, gzip and blosc encoders of the kernel backends
		 * are their own: their bytes match cpu's only for none. */
		case_desc(c, &d, 0, backends[b]);
		ok(test_write_spans(want, &d, stored, n, rng) == SHARDPIPE_OK,
		   "%s: %s writes the permuted array, identity order", label,
		   backends[b]);
		case_desc(c, &d, 1, backends[b]);
		if (ok(test_write_spans(got, &d, in, n, rng) == SHARDPIPE_OK,
		       "%s: %s writes with storage_order", label,
		       backends[b])) {
			ok(test_same_tree(got, want, NULL),
			   "%s: %s's store equals its permuted array's byte "
			   "for byte", label, backends[b]);
			if (b == 0)
				;
			else if (strcmp(c->codec, "none") == 0)
				ok(test_same_tree(got, cpu, NULL),
				   "%s: %s's store equals cpu's byte for "
				   "byte", label, backends[b]);
			else
				skip(1, "%s: only codec none is byte-identical "
				     "across backends", backends[b]);
			ok(test_reads_back(got, c->size[0], stored, n),
			   "%s: %s's store reads back as the permuted input",
			   label, backends[b]);
		} else {
			skip(b > 0 ? 3 : 2, "the write failed");
		}
		free(got);
		free(want);
	}
	free(cpu);
	free(in);
	free(stored);
}

/*
 * Pyramids (design §28) of a permuted store: level 0's reduction reads
 * its input through the permuted strides, every level above is in
 * plan order, the append dim first.  The image equals, file by file,
 * the permuted array's written with the identity.  Planar (t, y, x, c)
 * frames halving t, y and x by mean; (t, y, x, z) stacks stored (t, z, y,
 * x) halving z, y, x by max, float32 with codec none; and a z-stack
 * appended plane by plane as (z, y, x, c), stored as the image (c, z, y,
 * x) with the append dim second, halving z, y, x by median (bounded:
 * an unbounded dim keeps level 0's chunk at every level, a bounded one
 * clamps it to the level's size).
 */
static void pyramid_cases(const char *root, uint64_t *rng,
			  const int usable[N_BACKENDS],
			  const char *const why[N_BACKENDS])
{
	static const char *const names[3][4] = { { "t", "c", "y", "x" },
						 { "t", "z", "y", "x" },
						 { "c", "z", "y", "x" } };
	struct scase c[3];

	planar_case(&c[0], SHARDPIPE_DTYPE_UINT16, 3);
	c[0].rows = c[0].size[0] = 9;
	c[0].size[2] = 20, c[0].size[3] = 26;
	c[0].chunk[2] = 8, c[0].chunk[3] = 8;
	c[0].cps[1] = 3, c[0].cps[2] = 2, c[0].cps[3] = 2;
	channel_major_case(&c[1]);
	c[1].dtype = SHARDPIPE_DTYPE_FLOAT32;
	c[1].codec = "none";
	c[1].unbounded = 1;
	c[1].rows = 6;
	c[1].size[0] = 6, c[1].size[1] = 5, c[1].size[2] = 12;
	c[1].size[3] = 14;
	c[1].chunk[0] = 2, c[1].chunk[1] = 2, c[1].chunk[2] = 4;
	c[1].chunk[3] = 8;
	c[1].order[0] = 0, c[1].order[1] = 3, c[1].order[2] = 1;
	c[1].order[3] = 2;
	channel_major_case(&c[2]);
	c[2].codec = "none";
	c[2].rows = c[2].size[1] = 11;
	c[2].size[2] = 18, c[2].size[3] = 21;
	c[2].order[0] = 3, c[2].order[1] = 0, c[2].order[2] = 1;
	c[2].order[3] = 2;
	for (int i = 0; i < 3; i++) {
		size_t es = shardpipe_dtype_size(c[i].dtype), n = es;
		uint8_t *in, *stored;

		for (int k = 0; k < c[i].rank; k++)
			n *= c[i].size[k];
		in = test_xmalloc(n);
		stored = test_xmalloc(n);
		test_fill(in, n, i == 0 ? 3 : 0, rng);
		permute(&c[i], in, stored, es);
		for (size_t b = 0; b < N_BACKENDS; b++) {
			shardpipe_desc d[2];
			char *got, *want;

			if (!usable[b]) {
				skip(3, "%s: %s", backends[b], why[b]);
				continue;
			}
			if (asprintf(&got, "%s/pyr-%s-%d", root, backends[b],
				     i) < 0 ||
			    asprintf(&want, "%s/pyr-want-%s-%d", root,
				     backends[b], i) < 0)
				bail("out of memory");
			for (int p = 0; p < 2; p++) {
				case_desc(&c[i], &d[p], p, backends[b]);
				for (int k = 0; k < c[i].rank; k++)
					d[p].dims[k].name = names[i][k];
				d[p].downsample = i == 0 ? 0xd : 0xe;
				d[p].method = i == 0 ? SHARDPIPE_METHOD_MEAN
					      : i == 1 ? SHARDPIPE_METHOD_MAX
						       : SHARDPIPE_METHOD_MEDIAN;
				d[p].max_levels = i == 1 ? 2 : 3;
				d[p].ngff = i == 2;
			}
			ok(test_write_spans(want, &d[0], stored, n, *rng) ==
				   SHARDPIPE_OK,
			   "pyramid %d: %s writes the permuted image, "
			   "identity order", i, backends[b]);
			if (ok(test_write_spans(got, &d[1], in, n, *rng) ==
				       SHARDPIPE_OK,
			       "pyramid %d: %s writes it with storage_order",
			       i, backends[b]))
				ok(test_same_tree(got, want, NULL),
				   "pyramid %d: %s's image equals the permuted "
				   "array's byte for byte, every level", i,
				   backends[b]);
			else
				skip(1, "the write failed");
			free(got);
			free(want);
		}
		free(in);
		free(stored);
	}
}

static void refusals(const char *root)
{
	struct scase c;
	shardpipe_desc d;
	char *tmp;

	if (asprintf(&tmp, "%s/refused", root) < 0)
		bail("out of memory");
	if (mkdir(tmp, 0777) != 0)
		bail("mkdir %s failed", tmp);
	planar_case(&c, SHARDPIPE_DTYPE_UINT16, 3);
	case_desc(&c, &d, 1, "cpu");
	d.storage_order[2] = 3;
	test_refused(tmp, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "storage_order[2] = 3 repeats", "a repeated entry");
	case_desc(&c, &d, 1, "cpu");
	d.storage_order[3] = 4;
	test_refused(tmp, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "storage_order[3] = 4 is outside 0..3",
		     "an entry out of range");
	case_desc(&c, &d, 1, "cpu");
	d.storage_order[1] = -1;
	test_refused(tmp, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "storage_order[1] = -1 is outside", "a negative entry");
	case_desc(&c, &d, 1, "cpu");
	d.storage_order[4] = 2;
	test_refused(tmp, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "storage_order[4] = 2 lies past rank 4",
		     "an entry past the rank");
	channel_major_case(&c);
	case_desc(&c, &d, 1, "cpu");
	d.ngff = 1;
	d.dims[0].name = "c", d.dims[1].name = "t";
	d.dims[2].name = "y", d.dims[3].name = "x";
	test_refused(tmp, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "dim 1 (t): the time axis of an OME-NGFF image comes "
		     "first", "an image with the appended time dim stored "
		     "after the channels");
	case_desc(&c, &d, 1, "cpu");
	d.dims[0].size = 0;
	test_refused(tmp, &d, SHARDPIPE_ERR_DIM_SIZE,
		     "dim 0: size 0 (only the append dim, storage dim 1",
		     "an unbounded dim that is not the append dim");
	memset(&c, 0, sizeof(c));
	c.rank = SHARDPIPE_MAX_RANK;
	c.dtype = SHARDPIPE_DTYPE_UINT8;
	c.codec = "none";
	for (int k = 0; k < c.rank; k++)
		c.size[k] = c.chunk[k] = c.cps[k] = 1, c.order[k] = k;
	c.order[0] = 1, c.order[1] = 0;
	case_desc(&c, &d, 1, "cpu");
	test_refused(tmp, &d, SHARDPIPE_ERR_RANK,
		     "the append dim may move from storage dim 0 only below",
		     "the append dim moved at the largest rank");
	free(tmp);
}

int main(void)
{
	uint64_t seed = test_seed(), rng = seed;
	char *root = test_tmpdir("storage-order");
	int usable[N_BACKENDS];
	char whybuf[N_BACKENDS][256];
	const char *why[N_BACKENDS];
	struct scase c;

	plan_lazy();
	for (size_t b = 0; b < N_BACKENDS; b++) {
		usable[b] = test_backend_usable(backends[b], whybuf[b],
						sizeof(whybuf[b]));
		why[b] = whybuf[b];
	}
	for (int i = 0; i < CASES; i++) {
		random_case(&c, &rng, i);
		one_case(root, &c, i, seed, usable, why);
	}
	for (int k = 0; k < 4; k++) {
		static const shardpipe_dtype t[] = {
			SHARDPIPE_DTYPE_UINT16, SHARDPIPE_DTYPE_UINT8,
			SHARDPIPE_DTYPE_FLOAT32, SHARDPIPE_DTYPE_FLOAT64,
		};
		static const uint64_t ng[] = { 3, 2, 4, 2 };

		planar_case(&c, t[k], ng[k]);
		one_case(root, &c, CASES + k, seed, usable, why);
	}
	channel_major_case(&c);
	one_case(root, &c, CASES + 4, seed, usable, why);
	pyramid_cases(root, &rng, usable, why);
	refusals(root);
	test_rmtree(root);
	free(root);
	return done_testing();
}
