/*
 * kernels-stores.c - whole stores through the public API, codec none: for
 * every configuration of kernels-configs.h and both index locations, the
 * kernel backends write stores byte-identical to the cpu backend's, file
 * by file (doc/design.md §18, L2), and every store reads back
 * as the input (L1).  Built twice: t/kernels-stores checks `reference`;
 * t/opencl-stores (SP_TEST_OPENCL) checks `opencl` and t/cuda-stores
 * (SP_TEST_CUDA) checks `cuda`, each at three local sizes.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels-configs.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

struct variant {
	const char *backend;
	const char *local;   /* SHARDPIPE_KERNEL_DEBUG local=, NULL: default */
};

#if defined(SP_TEST_CUDA)
#define SP_TEST_PLUGIN "cuda"
static const struct variant variants[] = {
	{ "cuda", "1" }, { "cuda", "64" }, { "cuda", "256" },
};
#elif defined(SP_TEST_OPENCL)
#define SP_TEST_PLUGIN "opencl"
static const struct variant variants[] = {
	{ "opencl", "1" }, { "opencl", "64" }, { "opencl", "256" },
};
#else
static const struct variant variants[] = { { "reference", NULL } };
#endif
#define N_VARIANTS (sizeof(variants) / sizeof(variants[0]))

/* Epochs of 2 MiB: the plan batches 8 of them, so 18 epochs make three
 * batches, the last one partial, and both buffer sets of an asynchronous
 * device are used. */
static const struct kcfg big = {
	"rank 3 uint8, three batches", 3, SHARDPIPE_DTYPE_UINT8,
	{ 0, 512, 1000 }, { 4, 64, 128 }, { 2, 4, 2 }, 70
};

static int write_store(const char *dir, const struct kcfg *c,
		       shardpipe_index_location loc, const char *backend,
		       const uint8_t *data, size_t n, uint64_t seed)
{
	shardpipe_desc desc;

	kcfg_desc(c, &desc);
	desc.index_location = loc;
	desc.backend = backend;
	desc.overwrite = 1;
	return test_write_spans(dir, &desc, data, n, seed);
}

int main(void)
{
	uint64_t seed = test_seed();
	char *root = test_tmpdir("kernels-stores");

#ifdef SP_TEST_PLUGIN
	{
		char why[256];

		if (!test_backend_usable(SP_TEST_PLUGIN, why, sizeof(why))) {
			test_rmtree(root);
			skip_all("%s", why);
		}
	}
#endif
	plan_lazy();
	for (size_t i = 0; i <= N_KCFGS; i++) {
		const struct kcfg *c = i < N_KCFGS ? &kcfgs[i] : &big;
		shardpipe_desc desc;
		size_t n;
		uint8_t *data;
		uint64_t rng = seed + i;

		kcfg_desc(c, &desc);
		n = shardpipe_dtype_size(c->dtype) * kcfg_rows(c);
		for (int d = 1; d < c->rank; d++)
			n *= c->size[d];
		data = test_xmalloc(n);
		test_fill(data, n, (int)(i % 4), &rng);
		for (int loc = 0; loc < 2; loc++) {
			char *want, *got;
			const char *where = loc ? "index at start" : "index at end";

			if (asprintf(&want, "%s/cpu-%zu-%d", root, i, loc) < 0)
				bail("out of memory");
			if (!ok(write_store(want, c, loc, "cpu", data, n, rng) ==
					SHARDPIPE_OK,
				"cpu writes %s, %s", c->what, where)) {
				free(want);
				continue;
			}
			for (size_t v = 0; v < N_VARIANTS; v++) {
				const struct variant *va = &variants[v];

				if (va->local != NULL) {
					char dbg[32];

					snprintf(dbg, sizeof(dbg), "local=%s",
						 va->local);
					setenv("SHARDPIPE_KERNEL_DEBUG", dbg,
					       1);
				}
				if (asprintf(&got, "%s/%s-%zu-%d-%zu", root,
					     va->backend, i, loc, v) < 0)
					bail("out of memory");
				if (ok(write_store(got, c, loc, va->backend,
						   data, n, rng) == SHARDPIPE_OK,
				       "%s (local %s) writes %s, %s",
				       va->backend, va->local ? va->local : "-",
				       c->what, where)) {
					ok(test_same_tree(got, want, NULL),
					   "%s (local %s) store equals cpu's "
					   "byte for byte: %s, %s",
					   va->backend,
					   va->local ? va->local : "-",
					   c->what, where);
					ok(test_reads_back(got, kcfg_rows(c),
							   data, n),
					   "%s (local %s) store reads back: "
					   "%s, %s", va->backend,
					   va->local ? va->local : "-",
					   c->what, where);
				}
				unsetenv("SHARDPIPE_KERNEL_DEBUG");
				free(got);
			}
			ok(test_reads_back(want, kcfg_rows(c), data, n),
			   "cpu store reads back: %s, %s", c->what, where);
			free(want);
		}
		free(data);
	}
	test_rmtree(root);
	free(root);
	return done_testing();
}
