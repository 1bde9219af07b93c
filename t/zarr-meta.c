/*
 * zarr-meta.c - zarr.json content for every dtype and codec, against the
 * names and forms of the Zarr v3 core spec and the sharding_indexed codec
 * spec (written out here, not taken from the library).
 */
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "zarr_meta.h"

static const struct {
	shardpipe_dtype t;
	const char *name, *fill;
	int size;
} types[] = {
	{ SHARDPIPE_DTYPE_BOOL, "bool", "false", 1 },
	{ SHARDPIPE_DTYPE_INT8, "int8", "0", 1 },
	{ SHARDPIPE_DTYPE_INT16, "int16", "0", 2 },
	{ SHARDPIPE_DTYPE_INT32, "int32", "0", 4 },
	{ SHARDPIPE_DTYPE_INT64, "int64", "0", 8 },
	{ SHARDPIPE_DTYPE_UINT8, "uint8", "0", 1 },
	{ SHARDPIPE_DTYPE_UINT16, "uint16", "0", 2 },
	{ SHARDPIPE_DTYPE_UINT32, "uint32", "0", 4 },
	{ SHARDPIPE_DTYPE_UINT64, "uint64", "0", 8 },
	{ SHARDPIPE_DTYPE_FLOAT16, "float16", "0.0", 2 },
	{ SHARDPIPE_DTYPE_FLOAT32, "float32", "0.0", 4 },
	{ SHARDPIPE_DTYPE_FLOAT64, "float64", "0.0", 8 },
};

static int has(const char *json, const char *want)
{
	if (strstr(json, want) != NULL)
		return 1;
	diag("missing: %s", want);
	return 0;
}

/* Strip spaces and newlines so that fragments compare independent of the
 * layout. */
static char *squeeze(const char *s)
{
	char *o = malloc(strlen(s) + 1), *q = o;

	for (; *s; s++)
		if (*s != ' ' && *s != '\n')
			*q++ = *s;
	*q = '\0';
	return o;
}

int main(void)
{
	int ntypes = (int)(sizeof(types) / sizeof(types[0]));

	plan(2 * ntypes + 3);
	for (int i = 0; i < ntypes; i++) {
		shardpipe_desc d;
		struct plan p;
		struct sp_err err;
		char *json, *sq, frag[128];
		size_t len;
		int good = 1;

		shardpipe_desc_init(&d);
		d.rank = 3;
		d.dtype = types[i].t;
		d.codec = SHARDPIPE_CODEC_NONE;
		const char *names[3] = { "t", NULL, "x" };
		uint64_t size[3] = { 0, 100, 30 }, chunk[3] = { 2, 10, 30 },
			 cps[3] = { 4, 5, 1 };
		for (int k = 0; k < 3; k++) {
			d.dims[k].name = names[k];
			d.dims[k].size = size[k];
			d.dims[k].chunk = chunk[k];
			d.dims[k].chunks_per_shard = cps[k];
		}
		if (plan_init(&p, &d, &err) != 0 ||
		    zarr_meta_render(&p, 7, NULL, &json, &len, &err) != 0)
			bail("%s", err.msg);
		sq = squeeze(json);
		good &= is_int((long long)strlen(json), (long long)len,
			       "%s: length", types[i].name) ? 1 : 0;
		good &= has(sq, "\"zarr_format\":3");
		good &= has(sq, "\"node_type\":\"array\"");
		good &= has(sq, "\"shape\":[7,100,30]");
		snprintf(frag, sizeof(frag), "\"data_type\":\"%s\"", types[i].name);
		good &= has(sq, frag);
		good &= has(sq, "\"chunk_grid\":{\"name\":\"regular\","
				"\"configuration\":{\"chunk_shape\":[8,50,30]}}");
		good &= has(sq, "\"chunk_key_encoding\":{\"name\":\"default\","
				"\"configuration\":{\"separator\":\"/\"}}");
		snprintf(frag, sizeof(frag), "\"fill_value\":%s,", types[i].fill);
		good &= has(sq, frag);
		good &= has(sq, "\"name\":\"sharding_indexed\"");
		good &= has(sq, "\"chunk_shape\":[2,10,30]");
		if (types[i].size > 1)
			good &= has(sq, "\"codecs\":[{\"name\":\"bytes\","
					"\"configuration\":{\"endian\":\"little\"}}]");
		else
			good &= has(sq, "\"codecs\":[{\"name\":\"bytes\","
					"\"configuration\":{}}]");
		good &= has(sq, "\"index_codecs\":[{\"name\":\"bytes\","
				"\"configuration\":{\"endian\":\"little\"}},"
				"{\"name\":\"crc32c\"}]");
		good &= has(sq, "\"index_location\":\"end\"");
		good &= has(sq, "\"dimension_names\":[\"t\",null,\"x\"]");
		ok(good, "%s: zarr.json has every required key and form",
		   types[i].name);
		free(sq);
		free(json);
		plan_free(&p);
	}
	const struct {
		shardpipe_codec c;
		int level;
		const char *frag;
	} codecs[] = {
		{ SHARDPIPE_CODEC_ZSTD, 3,
		  "{\"name\":\"zstd\",\"configuration\":{\"level\":3,\"checksum\":false}}" },
		{ SHARDPIPE_CODEC_GZIP, 6,
		  "{\"name\":\"gzip\",\"configuration\":{\"level\":6}}" },
	};
	for (int i = 0; i < 2; i++) {
		shardpipe_desc d;
		struct plan p;
		struct sp_err err;
		char *json, *sq;
		size_t len;

		shardpipe_desc_init(&d);
		d.rank = 1;
		d.dtype = SHARDPIPE_DTYPE_UINT16;
		d.codec = codecs[i].c;
		d.level = codecs[i].level;
		d.index_location = SHARDPIPE_INDEX_START;
		d.dims[0].size = 10;
		d.dims[0].chunk = 3;
		d.dims[0].chunks_per_shard = 2;
		if (plan_init(&p, &d, &err) != 0 ||
		    zarr_meta_render(&p, 10, NULL, &json, &len, &err) != 0)
			bail("%s", err.msg);
		sq = squeeze(json);
		ok(has(sq, codecs[i].frag) && has(sq, "\"index_location\":\"start\"") &&
			   has(sq, "\"dimension_names\":[null]"),
		   "%s codec entry follows the bytes codec, index at start",
		   shardpipe_codec_name(codecs[i].c));
		free(sq);
		free(json);
		plan_free(&p);
	}
	{
		shardpipe_desc d;
		struct plan p;
		struct sp_err err;
		char *json;
		size_t len;

		shardpipe_desc_init(&d);
		d.rank = 2;
		d.codec = SHARDPIPE_CODEC_NONE;
		for (int k = 0; k < 2; k++) {
			d.dims[k].size = 4;
			d.dims[k].chunk = 2;
			d.dims[k].chunks_per_shard = 1;
		}
		plan_init(&p, &d, &err);
		zarr_meta_render(&p, 4, NULL, &json, &len, &err);
		ok(strstr(json, "zstd") == NULL && strstr(json, "gzip") == NULL,
		   "codec none lists only the bytes codec");
		free(json);
		plan_free(&p);
	}
	return done_testing();
}
