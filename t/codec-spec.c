/*
 * codec-spec.c - shardpipe_desc_set_codec() reads the codec strings of
 * shardpipe(1)'s --codec into the fields shardpipe.h documents, fills the
 * defaults of fields left out, and refuses a bad string with
 * SHARDPIPE_ERR_CODEC, a message quoting the field at fault, and *desc
 * untouched.
 */
#include <string.h>

#include "shardpipe.h"
#include "tap.h"

struct good {
	const char *spec;
	shardpipe_codec codec;
	int level, checksum;
	shardpipe_blosc_cname cname;
	shardpipe_blosc_shuffle shuffle;
	uint32_t blocksize;
};

int main(void)
{
	static const struct good good[] = {
		{ "none", SHARDPIPE_CODEC_NONE, 1, 0, 0, 1, 0 },
		{ "zstd", SHARDPIPE_CODEC_ZSTD, 1, 0, 0, 1, 0 },
		{ "zstd:3", SHARDPIPE_CODEC_ZSTD, 3, 0, 0, 1, 0 },
		{ "zstd:19:checksum", SHARDPIPE_CODEC_ZSTD, 19, 1, 0, 1, 0 },
		{ "gzip:6", SHARDPIPE_CODEC_GZIP, 6, 0, 0, 1, 0 },
		{ "blosc", SHARDPIPE_CODEC_BLOSC, 1, 0, SHARDPIPE_BLOSC_ZSTD,
		  SHARDPIPE_BLOSC_SHUFFLE, 0 },
		{ "blosc:lz4:5:bitshuffle:65536", SHARDPIPE_CODEC_BLOSC, 5, 0,
		  SHARDPIPE_BLOSC_LZ4, SHARDPIPE_BLOSC_BITSHUFFLE, 65536 },
		{ "blosc:zlib:9:noshuffle", SHARDPIPE_CODEC_BLOSC, 9, 0,
		  SHARDPIPE_BLOSC_ZLIB, SHARDPIPE_BLOSC_NOSHUFFLE, 0 },
	};
	/* A bad string and the field text the message must quote. */
	static const char *const bad[][2] = {
		{ "zstdx", "\"zstdx\"" },
		{ "zstd:x", "\"x\" (field 2)" },
		{ "zstd:1:check", "\"check\" (field 3)" },
		{ "gzip:1:2", "\"2\" (field 3)" },
		{ "blosc:snappy", "\"snappy\" (field 2)" },
		{ "blosc:zstd:1:byteshuffle", "\"byteshuffle\" (field 4)" },
		{ "blosc:zstd:1:shuffle:-5", "\"-5\" (field 5)" },
		{ "blosc:zstd:1:shuffle:0:9", "(field 6)" },
		{ "", "(field 1)" },
	};
	size_t ng = sizeof(good) / sizeof(good[0]);
	size_t nb = sizeof(bad) / sizeof(bad[0]);
	shardpipe_desc d;

	plan((int)(ng + 2 * nb + 2));
	for (size_t i = 0; i < ng; i++) {
		const struct good *g = &good[i];
		int rc;

		shardpipe_desc_init(&d);
		/* Leftovers of an earlier spec must not survive. */
		d.level = 7;
		d.zstd_checksum = 1;
		d.blosc_blocksize = 999;
		rc = shardpipe_desc_set_codec(&d, g->spec);
		ok(rc == SHARDPIPE_OK && d.codec == g->codec &&
			   d.level == g->level &&
			   d.zstd_checksum == g->checksum &&
			   (g->codec != SHARDPIPE_CODEC_BLOSC ||
			    (d.blosc_cname == g->cname &&
			     d.blosc_shuffle == g->shuffle &&
			     d.blosc_blocksize == g->blocksize)),
		   "\"%s\" sets codec %d level %d checksum %d", g->spec,
		   (int)d.codec, d.level, d.zstd_checksum);
	}
	for (size_t i = 0; i < nb; i++) {
		shardpipe_desc before;
		int rc;

		shardpipe_desc_init(&d);
		d.level = 4;
		before = d;
		rc = shardpipe_desc_set_codec(&d, bad[i][0]);
		ok(rc == SHARDPIPE_ERR_CODEC &&
			   memcmp(&d, &before, sizeof(d)) == 0,
		   "\"%s\" is refused and changes nothing", bad[i][0]);
		ok(strstr(shardpipe_last_error_message(), bad[i][1]) != NULL,
		   "  the message quotes %s: %s", bad[i][1],
		   shardpipe_last_error_message());
	}
	is_int(shardpipe_desc_set_codec(NULL, "zstd"),
	       SHARDPIPE_ERR_INVALID_ARGUMENT, "a NULL description is refused");
	shardpipe_desc_init_sized(&d, offsetof(shardpipe_desc, blosc_cname));
	is_int(shardpipe_desc_set_codec(&d, "zstd"),
	       SHARDPIPE_ERR_INVALID_ARGUMENT,
	       "a description too old to hold the codec fields is refused");
	return done_testing();
}
