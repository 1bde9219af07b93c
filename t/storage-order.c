/*
 * storage-order.c - a storage order (doc/design.md §3.3): random seeded
 * shapes, dtypes, codecs and permutations written with storage_order on
 * cpu, reference, opencl and cuda (each where usable, else a TAP skip)
 * give stores byte-identical, file by file, to the permuted array (the
 * test permutes in C) written with the identity order on the same
 * backend, and for codec none to cpu's; each reads back as the permuted
 * array.  Descriptions that are not a permutation, or that the library
 * does not support, are refused before anything is written.
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
	int unbounded;
	uint64_t rows;
	uint64_t size[SHARDPIPE_MAX_RANK];   /* storage order; [0] = rows */
	uint64_t chunk[SHARDPIPE_MAX_RANK];
	uint64_t cps[SHARDPIPE_MAX_RANK];
	int order[SHARDPIPE_MAX_RANK];
};

static void case_desc(const struct scase *c, shardpipe_desc *d, int permuted,
		      const char *backend)
{
	shardpipe_desc_init(d);
	d->rank = c->rank;
	d->dtype = c->dtype;
	if (shardpipe_desc_set_codec(d, c->codec) != SHARDPIPE_OK)
		bail("codec %s: %s", c->codec, shardpipe_last_error_message());
	for (int i = 0; i < c->rank; i++) {
		d->dims[i].size = i == 0 && c->unbounded ? 0 : c->size[i];
		d->dims[i].chunk = c->chunk[i];
		d->dims[i].chunks_per_shard = c->cps[i];
		if (permuted)
			d->storage_order[i] = c->order[i];
	}
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
	static const shardpipe_dtype dtypes[] = {
		SHARDPIPE_DTYPE_UINT8, SHARDPIPE_DTYPE_UINT16,
		SHARDPIPE_DTYPE_FLOAT32, SHARDPIPE_DTYPE_FLOAT64,
	};
	static const char *const codecs[] = { "none", "zstd", "gzip",
					      "blosc" };

	memset(c, 0, sizeof(*c));
	c->rank = 3 + (int)(test_rand(rng) % 3);
	c->dtype = dtypes[test_rand(rng) % 4];
	c->codec = codecs[i % 4];
	c->unbounded = (int)(test_rand(rng) % 2);
	c->rows = 1 + test_rand(rng) % 12;
	for (int d = 0; d < c->rank; d++) {
		c->size[d] = d == 0 ? c->rows : 1 + test_rand(rng) % 7;
		c->chunk[d] = 1 + test_rand(rng) % c->size[d];
		c->cps[d] = 1 + test_rand(rng) % 3;
		c->order[d] = d;
	}
	/* A permutation of dims 1.. (the append dim stays first), never
	 * the identity. */
	for (int d = c->rank - 1; d > 1; d--) {
		int j = 1 + (int)(test_rand(rng) % (uint64_t)d);
		int t = c->order[d];

		c->order[d] = c->order[j];
		c->order[j] = t;
	}
	for (int d = 1; d < c->rank; d++)
		if (c->order[d] != d)
			return;
	c->order[1] = 2;
	c->order[2] = 1;
}

/* (t, y, x, c) interleaved frames stored planar (t, c, y, x): the
 * innermost dim moves, over several batches. */
static void planar_case(struct scase *c)
{
	memset(c, 0, sizeof(*c));
	c->rank = 4;
	c->dtype = SHARDPIPE_DTYPE_UINT16;
	c->codec = "zstd";
	c->unbounded = 1;
	c->rows = 40;
	c->size[0] = 40, c->size[1] = 3, c->size[2] = 120, c->size[3] = 100;
	c->chunk[0] = 4, c->chunk[1] = 1, c->chunk[2] = 64, c->chunk[3] = 64;
	c->cps[0] = 2, c->cps[1] = 3, c->cps[2] = 2, c->cps[3] = 1;
	c->order[0] = 0, c->order[1] = 3, c->order[2] = 1, c->order[3] = 2;
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
			ok(test_reads_back(got, c->rows, stored, n),
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

static void refusals(const char *root)
{
	struct scase c;
	shardpipe_desc d;
	char *tmp;

	if (asprintf(&tmp, "%s/refused", root) < 0)
		bail("out of memory");
	if (mkdir(tmp, 0777) != 0)
		bail("mkdir %s failed", tmp);
	planar_case(&c);
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
	case_desc(&c, &d, 1, "cpu");
	d.storage_order[0] = 1, d.storage_order[1] = 0;
	d.storage_order[2] = 2, d.storage_order[3] = 3;
	test_refused(tmp, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "must stay storage dim 0", "the append dim moved");
	case_desc(&c, &d, 1, "cpu");
	d.downsample = 0xc;
	d.dims[0].name = "t", d.dims[1].name = "c";
	d.dims[2].name = "y", d.dims[3].name = "x";
	d.max_levels = 2;
	test_refused(tmp, &d, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "pyramids of a permuted store are not supported",
		     "a pyramid with a storage order");
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
	planar_case(&c);
	one_case(root, &c, CASES, seed, usable, why);
	refusals(root);
	test_rmtree(root);
	free(root);
	return done_testing();
}
