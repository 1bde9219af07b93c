/*
 * codec_spec.c - the codec string grammar ("zstd:3", "gzip:6",
 * "blosc:zstd:1:shuffle", "none"), owned by the library so that the
 * command-line tool and the bindings accept exactly the same words.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#define CODEC_SYNTAX                                                          \
	"none, zstd[:LEVEL[:checksum]], gzip[:LEVEL] or "                     \
	"blosc[:CNAME[:LEVEL[:SHUFFLE[:BLOCKSIZE]]]] (CNAME zstd, lz4, "      \
	"lz4hc, blosclz or zlib; SHUFFLE noshuffle, shuffle or bitshuffle)"

/* A signed decimal integer filling all of s (a level or a block size). */
static int parse_int(const char *s, size_t len, long lo, long hi, long *out)
{
	char buf[24], *end;
	long v;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno != 0 || *end != '\0' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* Index of the len-byte word s in names[0..n-1], or -1. */
static int pick(const char *s, size_t len, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strlen(names[i]) == len && strncmp(s, names[i], len) == 0)
			return i;
	return -1;
}

/* Refuse spec, naming field k (1-based) and what is wrong with it. */
static int bad_field(const char *spec, int k, const char *field, size_t len,
		     const char *why)
{
	char msg[512];

	snprintf(msg, sizeof(msg),
		 "codec \"%s\": field %d \"%.*s\" %s (the forms are "
		 CODEC_SYNTAX ")", spec, k, (int)len, field, why);
	sp_last_error_set(msg);
	return SHARDPIPE_ERR_CODEC;
}

static int parse(const char *s, shardpipe_desc *desc)
{
	/* In the order of shardpipe_codec, shardpipe_blosc_cname and
	 * shardpipe_blosc_shuffle. */
	static const char *const codecs[] = { "none", "zstd", "gzip", "blosc" };
	static const char *const cnames[] = {
		"zstd", "lz4", "lz4hc", "blosclz", "zlib",
	};
	static const char *const shuffles[] = {
		"noshuffle", "shuffle", "bitshuffle",
	};
	const char *field[6];
	size_t len[6];
	int n = 0, k;
	long v;

	/* Split at ':' into at most 5 fields. */
	for (const char *p = s;; p++) {
		const char *colon = strchr(p, ':');

		if (n == 5)
			return bad_field(s, 6, p, strlen(p),
					 "is one too many");
		field[n] = p;
		len[n++] = colon ? (size_t)(colon - p) : strlen(p);
		if (colon == NULL)
			break;
		p = colon;
	}
	k = pick(field[0], len[0], codecs, 4);
	if (k < 0)
		return bad_field(s, 1, field[0], len[0],
				 "is not a codec (none, zstd, gzip "
				 "or blosc)");
	desc->codec = (shardpipe_codec)k;
	desc->level = 1;
	desc->zstd_checksum = 0;
	if (desc->codec == SHARDPIPE_CODEC_ZSTD && n == 3) {
		/* zstd:LEVEL:checksum */
		if (len[2] != 8 || strncmp(field[2], "checksum", 8) != 0)
			return bad_field(s, 3, field[2], len[2],
					 "is not \"checksum\"");
		desc->zstd_checksum = 1;
		n = 2;
	}
	if (desc->codec != SHARDPIPE_CODEC_BLOSC) {
		/* none, zstd[:LEVEL[:checksum]], gzip[:LEVEL]; ranges are
		 * checked at open, with the codec's own message. */
		if (n > 2)
			return bad_field(s, n, field[n - 1], len[n - 1],
					 "is one too many");
		if (n == 2 && desc->codec == SHARDPIPE_CODEC_NONE)
			return bad_field(s, 2, field[1], len[1],
					 "is one too many (none takes no fields)");
		if (n == 2) {
			if (parse_int(field[1], len[1], -1000, 1000, &v) != 0)
				return bad_field(s, 2, field[1], len[1],
						 "is not a level (an integer)");
			desc->level = (int)v;
		}
		return SHARDPIPE_OK;
	}
	/* blosc[:CNAME[:LEVEL[:SHUFFLE[:BLOCKSIZE]]]] */
	desc->blosc_cname = SHARDPIPE_BLOSC_ZSTD;
	desc->blosc_shuffle = SHARDPIPE_BLOSC_SHUFFLE;
	desc->blosc_blocksize = 0;
	if (n > 1) {
		k = pick(field[1], len[1], cnames, 5);
		if (k < 0)
			return bad_field(s, 2, field[1], len[1],
					 "is not a blosc compressor (zstd, "
					 "lz4, "
					 "lz4hc, blosclz or zlib)");
		desc->blosc_cname = (shardpipe_blosc_cname)k;
	}
	if (n > 2) {
		if (parse_int(field[2], len[2], -1000, 1000, &v) != 0)
			return bad_field(s, 3, field[2], len[2],
					 "is not a level (an integer)");
		desc->level = (int)v;
	}
	if (n > 3) {
		k = pick(field[3], len[3], shuffles, 3);
		if (k < 0)
			return bad_field(s, 4, field[3], len[3],
					 "is not a shuffle (noshuffle, "
					 "shuffle or "
					 "bitshuffle)");
		desc->blosc_shuffle = (shardpipe_blosc_shuffle)k;
	}
	if (n > 4) {
		if (parse_int(field[4], len[4], 0, 0x7fffffffL, &v) != 0)
			return bad_field(s, 5, field[4], len[4],
					 "is not a block size in bytes "
					 "(0 .. "
					 "2147483647)");
		desc->blosc_blocksize = (uint32_t)v;
	}
	return SHARDPIPE_OK;
}

int shardpipe_desc_set_codec(shardpipe_desc *desc, const char *spec)
{
	shardpipe_desc tmp;
	size_t size;
	int rc;

	if (desc == NULL || spec == NULL) {
		sp_last_error_set("shardpipe_desc_set_codec: NULL argument");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	/* The fields written here must lie inside the caller's struct. */
	if (desc->struct_size < offsetof(shardpipe_desc, zstd_checksum) +
				    sizeof(desc->zstd_checksum)) {
		sp_last_error_set("shardpipe_desc_set_codec: the description "
				  "was not initialised by shardpipe_desc_init() "
				  "or predates the codec fields");
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	/* All or nothing: a refused spec leaves *desc as it was.  Only the
	 * caller's struct_size bytes are touched. */
	size = desc->struct_size < sizeof(tmp) ? desc->struct_size
					       : sizeof(tmp);
	memset(&tmp, 0, sizeof(tmp));
	memcpy(&tmp, desc, size);
	rc = parse(spec, &tmp);
	if (rc == SHARDPIPE_OK)
		memcpy(desc, &tmp, size);
	return rc;
}
