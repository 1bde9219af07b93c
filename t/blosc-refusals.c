/*
 * blosc-refusals.c - blosc settings the library cannot honour are refused
 * at open, with a message naming the value and nothing written: levels
 * outside 0..9, unknown compressors and shuffles, forced blocks below
 * c-blosc's 128 bytes, chunks beyond the blosc1 format's 2 GiB, and on
 * every kernel backend the compressors other than zstd (the kernels
 * encode blosc with zstd only).  A caller built before
 * the blosc fields existed (smaller struct_size) gets their defaults, not
 * whatever lies past its struct.  Without c-blosc, the codec is refused
 * as unavailable.
 */
#define _GNU_SOURCE
#include "config.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

/* Every kernel backend usable here refuses blosc by name at open: with
 * c-blosc, blosc:lz4 (naming the zstd-only kernels); without, any blosc. */
static void kernel_backends(const char *tmp)
{
	for (int i = 0; i < shardpipe_backend_count(); i++) {
		shardpipe_backend_info info;
		shardpipe_desc d;
		char what[300];

		if (shardpipe_backend_probe(i, &info) != SHARDPIPE_OK)
			continue;
		if (strcmp(info.name, "cpu") == 0)
			continue;
		if (!info.usable && test_may_skip(info.name, info.detail)) {
			skip(2, "backend %s unusable here: %s", info.name,
			     info.detail);
			continue;
		}
		test_small_desc(&d, SHARDPIPE_CODEC_BLOSC);
		d.backend = info.name;
#ifdef HAVE_BLOSC
		d.blosc_cname = SHARDPIPE_BLOSC_LZ4;
		snprintf(what, sizeof(what), "backend %s with blosc:lz4",
			 info.name);
		test_refused(tmp, &d, SHARDPIPE_ERR_CODEC, "zstd only", what);
#else
		snprintf(what, sizeof(what), "backend %s with blosc",
			 info.name);
		test_refused(tmp, &d, SHARDPIPE_ERR_CODEC, "blosc", what);
#endif
	}
}

#ifdef HAVE_BLOSC

/* A caller built against the header before the blosc fields: open must
 * not read past its struct_size, and zarr.json records the defaults. */
static void old_struct(const char *tmp)
{
	shardpipe_desc *d = calloc(1, sizeof(*d) + 64);
	shardpipe_stream *s;
	uint16_t data[100] = { 0 };
	char *path, *json, *meta;
	size_t n;
	int rc;

	test_small_desc(d, SHARDPIPE_CODEC_BLOSC);
	d->struct_size = offsetof(shardpipe_desc, blosc_cname);
	/* What an old caller's stack holds there: not ours to read. */
	memset(&d->blosc_cname, 0x5a, sizeof(*d) -
		offsetof(shardpipe_desc, blosc_cname));
	if (asprintf(&path, "%s/old.zarr", tmp) < 0 ||
	    asprintf(&json, "%s/zarr.json", path) < 0)
		bail("out of memory");
	rc = shardpipe_stream_open(&s, path, d);
	if (!is_int(rc, SHARDPIPE_OK, "a description without the blosc "
		    "fields (struct_size %zu) opens",
		    offsetof(shardpipe_desc, blosc_cname)))
		diag("%s", shardpipe_last_error_message());
	if (rc == SHARDPIPE_OK) {
		rc = shardpipe_stream_append(s, data, sizeof(data));
		rc |= shardpipe_stream_close(s);
	}
	meta = test_slurp(json, &n);
	ok(rc == SHARDPIPE_OK && meta != NULL &&
		   strstr(meta, "\"cname\": \"zstd\", \"clevel\": 1, "
				"\"shuffle\": \"shuffle\", \"typesize\": 2, "
				"\"blocksize\": 0") != NULL,
	   "  and writes blosc with the defaults (zstd, level 1, shuffle, "
	   "automatic blocks)");
	test_rmtree(path);
	free(meta);
	free(json);
	free(path);
	free(d);
}

/* The codec's name, the defaults, and what open refuses on the cpu
 * backend. */
static void cpu_refusals(const char *tmp)
{
	shardpipe_desc d;

	is_int(strcmp(shardpipe_codec_name(SHARDPIPE_CODEC_BLOSC), "blosc"), 0,
	       "the codec's name is blosc");
	shardpipe_desc_init(&d);
	ok(d.blosc_cname == SHARDPIPE_BLOSC_ZSTD &&
		   d.blosc_shuffle == SHARDPIPE_BLOSC_SHUFFLE &&
		   d.blosc_blocksize == 0,
	   "shardpipe_desc_init: blosc defaults zstd, shuffle, automatic");

	test_small_desc(&d, SHARDPIPE_CODEC_BLOSC);
	d.level = 10;
	test_refused(tmp, &d, SHARDPIPE_ERR_LEVEL, "blosc level 10",
		     "level 10");
	test_small_desc(&d, SHARDPIPE_CODEC_BLOSC);
	d.level = -1;
	test_refused(tmp, &d, SHARDPIPE_ERR_LEVEL, "blosc level -1",
		     "level -1");
	test_small_desc(&d, SHARDPIPE_CODEC_BLOSC);
	d.blosc_cname = (shardpipe_blosc_cname)9;
	test_refused(tmp, &d, SHARDPIPE_ERR_CODEC, "blosc compressor 9",
		     "compressor 9");
	test_small_desc(&d, SHARDPIPE_CODEC_BLOSC);
	d.blosc_shuffle = (shardpipe_blosc_shuffle)3;
	test_refused(tmp, &d, SHARDPIPE_ERR_CODEC, "blosc shuffle 3",
		     "shuffle 3");
	test_small_desc(&d, SHARDPIPE_CODEC_BLOSC);
	d.blosc_blocksize = 64;
	test_refused(tmp, &d, SHARDPIPE_ERR_CODEC, "block size 64",
		     "block size 64");
	test_small_desc(&d, SHARDPIPE_CODEC_BLOSC);
	d.blosc_blocksize = 0x80000000u;
	test_refused(tmp, &d, SHARDPIPE_ERR_CODEC, "block size 2147483648",
		     "block size 2^31");
	test_small_desc(&d, SHARDPIPE_CODEC_BLOSC);
	d.dtype = SHARDPIPE_DTYPE_UINT8;
	d.dims[1].size = d.dims[1].chunk = 1ull << 31;
	d.dims[0].chunk = 1;
	test_refused(tmp, &d, SHARDPIPE_ERR_OVERFLOW, "blosc format's limit",
		     "a 2 GiB chunk");

	/* The same settings on another codec are not looked at. */
	test_small_desc(&d, SHARDPIPE_CODEC_BLOSC);
	d.codec = SHARDPIPE_CODEC_ZSTD;
	d.blosc_cname = (shardpipe_blosc_cname)9;
	d.blosc_blocksize = 5;
	{
		shardpipe_stream *s;
		char *path;

		if (asprintf(&path, "%s/zstd.zarr", tmp) < 0)
			bail("out of memory");
		is_int(shardpipe_stream_open(&s, path, &d), SHARDPIPE_OK,
		       "zstd ignores the blosc fields");
		shardpipe_stream_close(s);
		test_rmtree(path);
		free(path);
	}
}

#else

/* Without c-blosc the codec is refused as unavailable. */
static void cpu_refusals(const char *tmp)
{
	shardpipe_desc d;

	test_small_desc(&d, SHARDPIPE_CODEC_BLOSC);
	test_refused(tmp, &d, SHARDPIPE_ERR_CODEC, "without c-blosc",
		     "blosc without c-blosc");
}

#endif

int main(void)
{
	char *tmp = test_tmpdir("blosc-refusals");

	if (tmp == NULL)
		bail("no scratch directory");
	plan_lazy();
	cpu_refusals(tmp);
	kernel_backends(tmp);
#ifdef HAVE_BLOSC
	old_struct(tmp);
#endif
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
