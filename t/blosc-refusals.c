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

#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void blosc_desc(shardpipe_desc *d)
{
	shardpipe_desc_init(d);
	d->rank = 2;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->codec = SHARDPIPE_CODEC_BLOSC;
	d->backend = "cpu";
	for (int k = 0; k < 2; k++) {
		d->dims[k].size = 10;
		d->dims[k].chunk = 4;
		d->dims[k].chunks_per_shard = 2;
	}
}

/* Open must fail with `code`, the message must contain `word`, and the
 * scratch directory must stay empty. */
static void refused(const char *tmp, const shardpipe_desc *d, int code,
		    const char *word, const char *what)
{
	shardpipe_stream *s = (shardpipe_stream *)1;
	char *path;
	int rc;

	if (asprintf(&path, "%s/store.zarr", tmp) < 0)
		bail("out of memory");
	rc = shardpipe_stream_open(&s, path, d);
	is_int(rc, code, "%s: refused with %s", what, shardpipe_strerror(code));
	ok(s == NULL && entries(tmp) == 0 &&
		   strstr(shardpipe_last_error_message(), word) != NULL,
	   "%s: nothing written, message names \"%s\" (%s)", what, word,
	   shardpipe_last_error_message());
	free(path);
}

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
		if (!info.usable) {
			skip(2, "backend %s unusable here: %s", info.name,
			     info.detail);
			continue;
		}
		blosc_desc(&d);
		d.backend = info.name;
#ifdef HAVE_BLOSC
		d.blosc_cname = SHARDPIPE_BLOSC_LZ4;
		snprintf(what, sizeof(what), "backend %s with blosc:lz4",
			 info.name);
		refused(tmp, &d, SHARDPIPE_ERR_CODEC, "zstd only", what);
#else
		snprintf(what, sizeof(what), "backend %s with blosc",
			 info.name);
		refused(tmp, &d, SHARDPIPE_ERR_CODEC, "blosc", what);
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

	blosc_desc(d);
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

int main(void)
{
	char *tmp = test_tmpdir("blosc-refusals");
	shardpipe_desc d;

	if (tmp == NULL)
		bail("no scratch directory");
	plan_lazy();
	is_int(strcmp(shardpipe_codec_name(SHARDPIPE_CODEC_BLOSC), "blosc"), 0,
	       "the codec's name is blosc");
	shardpipe_desc_init(&d);
	ok(d.blosc_cname == SHARDPIPE_BLOSC_ZSTD &&
		   d.blosc_shuffle == SHARDPIPE_BLOSC_SHUFFLE &&
		   d.blosc_blocksize == 0,
	   "shardpipe_desc_init: blosc defaults zstd, shuffle, automatic");

	blosc_desc(&d);
	d.level = 10;
	refused(tmp, &d, SHARDPIPE_ERR_LEVEL, "blosc level 10", "level 10");
	blosc_desc(&d);
	d.level = -1;
	refused(tmp, &d, SHARDPIPE_ERR_LEVEL, "blosc level -1", "level -1");
	blosc_desc(&d);
	d.blosc_cname = (shardpipe_blosc_cname)9;
	refused(tmp, &d, SHARDPIPE_ERR_CODEC, "blosc compressor 9",
		"compressor 9");
	blosc_desc(&d);
	d.blosc_shuffle = (shardpipe_blosc_shuffle)3;
	refused(tmp, &d, SHARDPIPE_ERR_CODEC, "blosc shuffle 3", "shuffle 3");
	blosc_desc(&d);
	d.blosc_blocksize = 64;
	refused(tmp, &d, SHARDPIPE_ERR_CODEC, "block size 64", "block size 64");
	blosc_desc(&d);
	d.blosc_blocksize = 0x80000000u;
	refused(tmp, &d, SHARDPIPE_ERR_CODEC, "block size 2147483648",
		"block size 2^31");
	blosc_desc(&d);
	d.dtype = SHARDPIPE_DTYPE_UINT8;
	d.dims[1].size = d.dims[1].chunk = 1ull << 31;
	d.dims[0].chunk = 1;
	refused(tmp, &d, SHARDPIPE_ERR_OVERFLOW, "blosc format's limit",
		"a 2 GiB chunk");

	/* The same settings on another codec are not looked at. */
	blosc_desc(&d);
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

	kernel_backends(tmp);
	old_struct(tmp);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}

#else

int main(void)
{
	char *tmp = test_tmpdir("blosc-refusals");
	shardpipe_desc d;

	if (tmp == NULL)
		bail("no scratch directory");
	plan_lazy();
	blosc_desc(&d);
	refused(tmp, &d, SHARDPIPE_ERR_CODEC, "without c-blosc",
		"blosc without c-blosc");
	kernel_backends(tmp);
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}

#endif
