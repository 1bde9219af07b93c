/*
 * codec_spec.c - the codec string grammar ("zstd:3", "gzip:6",
 * "blosc:zstd:1:shuffle", "none"), owned by the library so that the
 * command-line tool and the bindings accept exactly the same words.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "closest.h"
#include "common.h"

/* A decimal integer filling all of s (a level or a block size): digits,
 * after a '-' at most; no '+' and no spaces, which strtol would take. */
static int parse_int(const char *s, size_t len, long lo, long hi, long *out)
{
	char buf[24], *end;
	long v;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	for (size_t i = s[0] == '-'; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
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

/* Refuse spec: field k (1-based, len bytes) is not one of names; the
 * message offers the closest of them. */
static int bad_word(const char *spec, const char *what, int k,
		    const char *field, size_t len, const char *const *names,
		    int n)
{
	const char *near = sp_closest(field, len, names, n);
	char list[128] = "", msg[512];

	for (int i = 0; i < n; i++) {
		strcat(list, names[i]);
		strcat(list, i + 2 < n ? ", " : i + 1 < n ? " or " : "");
	}
	snprintf(msg, sizeof(msg), "\"%s\": unknown %s \"%.*s\" (field %d)"
		 "%s%s%s (%s)", spec, what, (int)len, field, k,
		 near ? "; did you mean \"" : "", near ? near : "",
		 near ? "\"?" : "", list);
	sp_last_error_set(msg);
	return SHARDPIPE_ERR_CODEC;
}

/* Refuse spec: field k is not a whole number in range, or is more than
 * the codec takes. */
static int bad_field(const char *spec, const char *what, int k,
		     const char *field, size_t len, const char *why)
{
	char msg[512];

	snprintf(msg, sizeof(msg), "\"%s\": %s \"%.*s\" (field %d) %s", spec,
		 what, (int)len, field, k, why);
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
	static const char *const flags[] = { "checksum" };
	static const char *const takes[] = {
		"no fields", "a level and \"checksum\"", "a level",
	};
	const char *field[6];
	size_t len[6];
	int n = 0, k;
	long v;

	/* Split at ':' into at most 5 fields. */
	for (const char *p = s;; p++) {
		const char *colon = strchr(p, ':');

		if (n == 5)
			return bad_field(s, "value", 6, p, strlen(p),
					 "is one too many: more than 5 fields "
					 "separated by ':'");
		field[n] = p;
		len[n++] = colon ? (size_t)(colon - p) : strlen(p);
		if (colon == NULL)
			break;
		p = colon;
	}
	k = pick(field[0], len[0], codecs, 4);
	if (k < 0) {
		/* "zstd=3" or "zstd,3": the level after the wrong separator. */
		size_t word = strcspn(field[0], "=,; ");
		char msg[512];

		if (word < len[0] && pick(field[0], word, codecs, 4) >= 0) {
			snprintf(msg, sizeof(msg), "\"%s\": fields are "
				 "separated by ':', as in \"%.*s:%.*s\"", s,
				 (int)word, field[0], (int)(len[0] - word - 1),
				 field[0] + word + 1);
			sp_last_error_set(msg);
			return SHARDPIPE_ERR_CODEC;
		}
		return bad_word(s, "codec", 1, field[0], len[0], codecs, 4);
	}
	desc->codec = (shardpipe_codec)k;
	desc->level = 1;
	desc->zstd_checksum = 0;
	if (desc->codec == SHARDPIPE_CODEC_ZSTD && n == 3) {
		/* zstd:LEVEL:checksum */
		if (pick(field[2], len[2], flags, 1) < 0)
			return bad_word(s, "zstd flag", 3, field[2], len[2],
					flags, 1);
		desc->zstd_checksum = 1;
		n = 2;
	}
	if (desc->codec != SHARDPIPE_CODEC_BLOSC) {
		/* none, zstd[:LEVEL[:checksum]], gzip[:LEVEL]; ranges are
		 * checked at open, with the codec's own message. */
		if (n > 2 || (n == 2 && desc->codec == SHARDPIPE_CODEC_NONE)) {
			char why[64];

			snprintf(why, sizeof(why), "is one too many: %s takes "
				 "%s", codecs[k], takes[k]);
			return bad_field(s, "value", n, field[n - 1],
					 len[n - 1], why);
		}
		if (n == 2) {
			if (parse_int(field[1], len[1], -1000, 1000, &v) != 0)
				return bad_field(s, "level", 2, field[1],
						 len[1], "is not a whole "
						 "number in range");
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
			return bad_word(s, "blosc compressor", 2, field[1],
					len[1], cnames, 5);
		desc->blosc_cname = (shardpipe_blosc_cname)k;
	}
	if (n > 2) {
		if (parse_int(field[2], len[2], -1000, 1000, &v) != 0)
			return bad_field(s, "level", 3, field[2], len[2],
					 "is not a whole number in range");
		desc->level = (int)v;
	}
	if (n > 3) {
		k = pick(field[3], len[3], shuffles, 3);
		if (k < 0)
			return bad_word(s, "shuffle", 4, field[3], len[3],
					shuffles, 3);
		desc->blosc_shuffle = (shardpipe_blosc_shuffle)k;
	}
	if (n > 4) {
		if (parse_int(field[4], len[4], 0, 0x7fffffffL, &v) != 0)
			return bad_field(s, "block size", 5, field[4], len[4],
					 "is not a whole number in range "
					 "(0 .. 2147483647)");
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
	if (!SHARDPIPE_HAS_FIELD(desc, zstd_checksum)) {
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
