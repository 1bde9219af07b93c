/*
 * zstd-stores.c - the conformance matrix (kernels-configs.h) with codec
 * zstd through the public API: for every configuration, at a level that
 * rotates over 1, 3, 5 and 9 (every other one with the content checksum)
 * and both index locations, the `opencl` backend at local sizes 1, 64 and
 * 256 writes stores byte-identical, file by file, to the `reference`
 * backend's (doc/design.md §18, L2), and every store reads back as the input
 * through the library's reader, each chunk decoded by libzstd (L1).  Two
 * more configurations have chunks of several zstd blocks.  Skipped, with
 * the reason, where no OpenCL platform is usable.  First, on cpu and
 * reference, the checksum setting's way from the description to the
 * frames and zarr.json, older callers included.
 */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kernels-configs.h"
#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

static const char *const locals[] = { "1", "64", "256" };
#define N_LOCALS (sizeof(locals) / sizeof(locals[0]))
static const int levels[] = { 1, 3, 5, 9 };

/* Chunks of 320 KiB (three blocks, the last partial) and of 512 KiB + 2
 * bytes (five blocks, the last of 2 bytes) in uint16. */
static const struct kcfg multi[] = {
	{ "rank 2 uint16, 3-block chunks", 2, SHARDPIPE_DTYPE_UINT16,
	  { 0, 640 }, { 256, 640 }, { 2, 1 }, 600 },
	{ "rank 1 uint16, 5-block chunks", 1, SHARDPIPE_DTYPE_UINT16,
	  { 0 }, { 262145 }, { 2 }, 600000 },
};
#define N_ALL (N_KCFGS + sizeof(multi) / sizeof(multi[0]))

static int write_store(const char *dir, const struct kcfg *c, int level,
		       int checksum, shardpipe_index_location loc,
		       const char *backend, const uint8_t *data, size_t n,
		       uint64_t seed)
{
	shardpipe_desc desc;

	kcfg_desc(c, &desc);
	desc.codec = SHARDPIPE_CODEC_ZSTD;
	desc.level = level;
	desc.zstd_checksum = checksum;
	desc.index_location = loc;
	desc.backend = backend;
	desc.overwrite = 1;
	return test_write_spans(dir, &desc, data, n, seed);
}

/*
 * The checksum setting reaches the frames on cpu and reference: the first
 * chunk of shard c/0/0 (index at the end, so at offset 0) carries the
 * descriptor's checksum flag exactly when asked, and zarr.json says so; a
 * caller whose struct_size predates zstd_checksum gets none, whatever
 * lies past its struct.
 */
static void checksum_setting(const char *root, uint64_t seed)
{
	const struct kcfg *c = &kcfgs[1];
	static const char *const backends[] = { "cpu", "reference" };
	size_t n = shardpipe_dtype_size(c->dtype) * c->size[0] * c->size[1];
	uint8_t *data = test_xmalloc(n);
	uint64_t rng = seed;

	test_fill(data, n, 3, &rng);
	for (size_t b = 0; b < 2; b++)
		for (int mode = 0; mode < 3; mode++) {
			/* mode 0: no checksum, 1: checksum, 2: checksum set
			 * past an older caller's struct_size */
			shardpipe_desc desc;
			shardpipe_stream *s;
			char *dir, *meta, *shard;
			uint8_t *m = NULL, *f = NULL;
			size_t nm = 0, nf = 0;
			int want = mode == 1, got = -1, rc;

			if (asprintf(&dir, "%s/setting-%s-%d", root, backends[b],
				     mode) < 0 ||
			    asprintf(&meta, "%s/zarr.json", dir) < 0 ||
			    asprintf(&shard, "%s/c/0/0", dir) < 0)
				bail("out of memory");
			kcfg_desc(c, &desc);
			desc.codec = SHARDPIPE_CODEC_ZSTD;
			desc.level = 3;
			desc.backend = backends[b];
			desc.zstd_checksum = mode != 0;
			if (mode == 2)
				desc.struct_size =
					offsetof(shardpipe_desc, zstd_checksum);
			rc = shardpipe_stream_open(&s, dir, &desc);
			if (rc == SHARDPIPE_OK) {
				rc = shardpipe_stream_append(s, data, n);
				if (shardpipe_stream_close(s) != SHARDPIPE_OK)
					rc = SHARDPIPE_ERR_IO;
			}
			m = test_slurp(meta, &nm);
			f = test_slurp(shard, &nf);
			if (f != NULL && nf > 5 && f[0] == 0x28 && f[1] == 0xB5 &&
			    f[2] == 0x2F && f[3] == 0xFD)
				got = (f[4] & 0x04) != 0;
			ok(rc == SHARDPIPE_OK && got == want && m != NULL &&
				   strstr((char *)m, want ? "\"checksum\": true"
							  : "\"checksum\": false"),
			   "%s, %s: frame checksum flag %d, zarr.json agrees",
			   backends[b],
			   mode == 0 ? "no checksum" : mode == 1 ? "checksum" :
			   "checksum past an older struct_size", got);
			if (want == 1)
				ok(test_reads_back(dir, kcfg_rows(c), data, n),
				   "%s, checksum: the store reads back",
				   backends[b]);
			free(m);
			free(f);
			test_rmtree(dir);
			free(dir);
			free(meta);
			free(shard);
		}
	free(data);
}

int main(void)
{
	uint64_t seed = test_seed();
	char *root = test_tmpdir("zstd-stores");
	char why[256];
	int opencl = test_backend_usable("opencl", why, sizeof(why));

	plan_lazy();
	checksum_setting(root, seed);
	if (!opencl) {
		skip(1, "%s: the matrix's opencl stores", why);
		test_rmtree(root);
		free(root);
		return done_testing();
	}
	for (size_t i = 0; i < N_ALL; i++) {
		const struct kcfg *c = i < N_KCFGS ? &kcfgs[i]
						   : &multi[i - N_KCFGS];
		int level = levels[i % 4], cs = (int)(i / 2 % 2);
		size_t n = shardpipe_dtype_size(c->dtype) * kcfg_rows(c);
		uint8_t *data;
		uint64_t rng = seed + i;

		for (int d = 1; d < c->rank; d++)
			n *= c->size[d];
		data = test_xmalloc(n);
		test_fill(data, n, (int)(i % 4), &rng);
		for (int loc = 0; loc < 2; loc++) {
			char *want, *got, what[160];

			snprintf(what, sizeof(what), "%s, zstd:%d%s, index at %s",
				 c->what, level, cs ? ":checksum" : "",
				 loc ? "start" : "end");
			if (asprintf(&want, "%s/reference-%zu-%d", root, i,
				     loc) < 0)
				bail("out of memory");
			if (!ok(write_store(want, c, level, cs, loc, "reference",
					    data, n, rng) == SHARDPIPE_OK,
				"reference writes %s", what)) {
				free(want);
				continue;
			}
			ok(test_reads_back(want, kcfg_rows(c), data, n),
			   "reference store reads back: %s", what);
			for (size_t v = 0; v < N_LOCALS; v++) {
				char dbg[32];

				snprintf(dbg, sizeof(dbg), "local=%s",
					 locals[v]);
				setenv("SHARDPIPE_KERNEL_DEBUG", dbg, 1);
				if (asprintf(&got, "%s/opencl-%zu-%d-%zu", root, i,
					     loc, v) < 0)
					bail("out of memory");
				if (ok(write_store(got, c, level, cs, loc,
						   "opencl", data, n, rng) ==
					       SHARDPIPE_OK,
				       "opencl (local %s) writes %s", locals[v],
				       what))
					ok(test_same_tree(got, want, NULL),
					   "opencl (local %s) store equals "
					   "reference's byte for byte: %s",
					   locals[v], what);
				unsetenv("SHARDPIPE_KERNEL_DEBUG");
				test_rmtree(got);
				free(got);
			}
			test_rmtree(want);
			free(want);
		}
		free(data);
	}
	test_rmtree(root);
	free(root);
	return done_testing();
}
