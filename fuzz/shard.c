/*
 * shard.c - libFuzzer target: the shard path of the reader.  The first
 * byte picks one of a few fixed zarr.json (codecs zstd, gzip, none, a
 * chunk crc32c, big-endian bytes, blosc; index at the end or the start);
 * the rest becomes shard c/0/0 of that 16 x 24 array (8 x 16 shards of
 * 4 x 8 chunks).  The reader then checks the store (index CRC, bounds,
 * overlaps, every chunk's decoding) and reads the whole array, which
 * decodes the shard again through the read path.  The first byte's
 * higher part sets the reader's coalescing as an S3 source's does (design
 * §24.4: 0, or reads of up to 16, 256 or 4096 bytes grouping neighbouring
 * chunks), so that the grouped reads meet the damaged index too.
 */
#include <stdint.h>

#include "fuzz-common.h"
#include "reader_impl.h"
#include "shardpipe.h"

#define GRID "\"chunk_grid\": {\"name\": \"regular\", \"configuration\": " \
	     "{\"chunk_shape\": [8, 16]}}, "
#define KEYS "\"chunk_key_encoding\": {\"name\": \"default\"}, "
#define INDEX(loc) "\"index_codecs\": [{\"name\": \"bytes\", "              \
		   "\"configuration\": {\"endian\": \"little\"}}, "           \
		   "{\"name\": \"crc32c\"}], \"index_location\": \"" loc "\""
#define META(dtype, fill, codecs, loc)                                        \
	"{\"zarr_format\": 3, \"node_type\": \"array\", \"shape\": [16, 24], " \
	"\"data_type\": \"" dtype "\", " GRID KEYS "\"fill_value\": " fill    \
	", \"codecs\": [{\"name\": \"sharding_indexed\", \"configuration\": " \
	"{\"chunk_shape\": [4, 8], \"codecs\": [" codecs "], " INDEX(loc)    \
	"}}]}"
#define LE "{\"name\": \"bytes\", \"configuration\": {\"endian\": \"little\"}}"

static const char *const metas[] = {
	META("int16", "0", LE ", {\"name\": \"zstd\", \"configuration\": "
	     "{\"level\": 3, \"checksum\": false}}", "end"),
	META("int16", "-7", LE ", {\"name\": \"gzip\", \"configuration\": "
	     "{\"level\": 5}}", "start"),
	META("uint8", "3", "{\"name\": \"bytes\"}", "end"),
	META("uint8", "0", "{\"name\": \"bytes\"}, {\"name\": \"crc32c\"}",
	     "start"),
	META("float32", "\"NaN\"", "{\"name\": \"bytes\", \"configuration\": "
	     "{\"endian\": \"big\"}}, {\"name\": \"zstd\", \"configuration\": "
	     "{\"level\": 1}}, {\"name\": \"crc32c\"}", "end"),
	META("int16", "0", LE ", {\"name\": \"blosc\", \"configuration\": "
	     "{\"cname\": \"zstd\", \"clevel\": 1, \"shuffle\": \"shuffle\", "
	     "\"typesize\": 2, \"blocksize\": 0}}", "end"),
};
#define VARIANTS (sizeof(metas) / sizeof(metas[0]))

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char store[VARIANTS][600], shard[VARIANTS][700];
	static float out[16 * 24];
	static const uint64_t coalesce[4] = { 0, 16, 256, 4096 };
	uint64_t start[2] = { 0, 0 }, count[2] = { 16, 24 };
	shardpipe_reader *r;
	size_t v;

	if (store[0][0] == '\0') {
		for (v = 0; v < VARIANTS; v++) {
			char p[700];

			snprintf(store[v], sizeof(store[v]), "%s/s%zu.zarr",
				 fuzz_scratch(), v);
			mkdir(store[v], 0755);
			snprintf(p, sizeof(p), "%.599s/c", store[v]);
			mkdir(p, 0755);
			snprintf(p, sizeof(p), "%.599s/c/0", store[v]);
			mkdir(p, 0755);
			snprintf(p, sizeof(p), "%.599s/zarr.json", store[v]);
			fuzz_write(p, metas[v], strlen(metas[v]));
			snprintf(shard[v], sizeof(shard[v]), "%.599s/c/0/0",
				 store[v]);
		}
	}
	if (size == 0)
		return 0;
	v = data[0] % VARIANTS;
	fuzz_write(shard[v], data + 1, size - 1);
	/* blosc stores fail to open when c-blosc is absent: fine. */
	if (shardpipe_reader_open(&r, store[v]) != SHARDPIPE_OK)
		return 0;
	r->src->coalesce = coalesce[data[0] / VARIANTS % 4];
	shardpipe_reader_check(r);
	shardpipe_reader_read(r, start, count, out, sizeof(out));
	shardpipe_reader_close(r);
	return 0;
}
