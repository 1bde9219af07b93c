/*
 * reader.c - read a Zarr v3 array from a store: a directory or an S3
 * prefix, through the source interface of store.h.
 *
 * Every byte of the store is untrusted: zarr.json is size-capped and
 * parsed with depth and memory limits; every size product is checked for
 * overflow; a shard index is checksummed, bounds-checked against the
 * shard body and checked for overlapping ranges before any chunk is read;
 * every chunk must decode to exactly its size.  Memory held at any time is
 * one shard index, one encoded chunk and one decoded chunk, each bounded
 * by the metadata's geometry and by the size of the file at hand.
 *
 * Supported: chunk grid "regular"; chunk keys "default" or "v2" with
 * either separator; codecs "bytes" (little or big endian) followed by any
 * of "zstd", "gzip", "blosc" (at most one of them; blosc when built with
 * c-blosc) and "crc32c", either as the
 * array's codecs or inside one level of "sharding_indexed" whose index
 * codecs are "bytes" and an optional "crc32c".
 */
#define _GNU_SOURCE
#include "config.h"
#include "common.h"
#include "codec.h"
#include "crc32c.h"
#include "json.h"
#include "store.h"

#include <math.h>
#include <stdlib.h>
#ifdef HAVE_BLOSC
#include <blosc.h>
#endif

/* A zarr.json is a few KiB; the cap only stops a hostile one. */
#define META_MAX_BYTES (16u << 20)
/* The tree of a 16 MiB document of tiny values needs about 8 times the
 * text; beyond that the document is refused rather than the memory
 * taken. */
#define META_MAX_TREE (128u << 20)
#define META_MAX_DEPTH 64
/* One decoded chunk is held in memory at a time; refusing larger chunks
 * bounds that allocation whatever the metadata says. */
#define CHUNK_MAX_BYTES ((uint64_t)1 << 30)
/* Chunks per shard: the index (16 bytes each) is read whole. */
#define SHARD_MAX_CHUNKS ((uint64_t)1 << 24)
/* Headers other encoders may add beyond codec_bound() (a zstd checksum
 * and a longer frame header, gzip optional fields). */
#define CODEC_SLACK 64
#define EMPTY_ENTRY UINT64_MAX
#define MAX_B2B 8

enum b2b_kind { B2B_ZSTD, B2B_GZIP, B2B_BLOSC, B2B_CRC32C };

/* What one chunk's bytes went through after `bytes`, in encoding order. */
struct chain {
	int big_endian;
	int n;
	enum b2b_kind kind[MAX_B2B];
	shardpipe_codec comp;  /* the one compressor, or NONE */
	uint64_t comp_out;     /* bytes a compressor must decode to */
	uint64_t max_encoded;  /* largest believable encoded chunk */
};

struct index_sort {
	uint64_t off, nbytes;
	uint32_t chunk;
};

struct shardpipe_reader {
	char *path;
	struct source *src;
	struct sp_err err;

	int rank;
	uint64_t shape[SHARDPIPE_MAX_RANK];
	uint64_t shard[SHARDPIPE_MAX_RANK]; /* chunk_grid chunk shape */
	uint64_t chunk[SHARDPIPE_MAX_RANK]; /* inner chunk shape */
	uint64_t cps[SHARDPIPE_MAX_RANK];   /* chunks per shard */
	uint64_t grid[SHARDPIPE_MAX_RANK];  /* shards per dimension */
	char names[SHARDPIPE_MAX_RANK][64];
	shardpipe_dtype dtype;
	size_t esize;
	uint8_t fill[8];      /* one element, native byte order */
	int fill_zero;
	int swap;             /* stored byte order differs from the host's */

	/* Keys: "c/1/2" (default) or "1.2" (v2), with sep between. */
	int key_v2;
	char sep;

	int sharded;
	int index_start;      /* index_location "start" */
	int index_big;        /* index uint64s are big-endian */
	int index_crc;        /* index followed by its CRC32C */
	uint64_t n_inner;     /* chunks per shard */
	uint64_t index_bytes;
	struct chain chain;
	uint64_t chunk_bytes;

	/* The shard at hand. */
	char key[SHARDPIPE_MAX_RANK * 21 + 4];
	struct source_obj *obj; /* NULL: the object is missing */
	uint64_t fsize;
	uint64_t *index;      /* n_inner (offset, nbytes) pairs */
	struct index_sort *sorted;

	uint8_t *enc;
	size_t enc_cap;
	uint8_t *dec;         /* comp_out bytes */
};

static const struct {
	const char *name;
	size_t size;
} dtypes[SHARDPIPE_DTYPE_COUNT_] = {
	[SHARDPIPE_DTYPE_BOOL] = { "bool", 1 },
	[SHARDPIPE_DTYPE_INT8] = { "int8", 1 },
	[SHARDPIPE_DTYPE_INT16] = { "int16", 2 },
	[SHARDPIPE_DTYPE_INT32] = { "int32", 4 },
	[SHARDPIPE_DTYPE_INT64] = { "int64", 8 },
	[SHARDPIPE_DTYPE_UINT8] = { "uint8", 1 },
	[SHARDPIPE_DTYPE_UINT16] = { "uint16", 2 },
	[SHARDPIPE_DTYPE_UINT32] = { "uint32", 4 },
	[SHARDPIPE_DTYPE_UINT64] = { "uint64", 8 },
	[SHARDPIPE_DTYPE_FLOAT16] = { "float16", 2 },
	[SHARDPIPE_DTYPE_FLOAT32] = { "float32", 4 },
	[SHARDPIPE_DTYPE_FLOAT64] = { "float64", 8 },
};

static int host_big_endian(void)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return 1;
#else
	return 0;
#endif
}

/* ------------------------------------------------------------ metadata */

/* Failures while reading zarr.json all name the file and the member. */
#define META_FAIL(r, code, ...)                                               \
	sp_err_set(&(r)->err, (code), "%s/zarr.json: " __VA_ARGS__)

/* An unsigned integer member (sizes and shapes). */
static int get_u64(const struct json_value *v, uint64_t *out)
{
	if (v == NULL || v->type != JSON_NUMBER ||
	    !(v->num_flags & JSON_INT_U64))
		return -1;
	*out = v->u;
	return 0;
}

/* shape-like: an array of `rank` integers, each >= min. */
static int get_shape(struct shardpipe_reader *r, const struct json_value *v,
		     const char *what, uint64_t min, uint64_t *out)
{
	const struct json_value *e;
	int d = 0;

	if (v == NULL)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT, "missing \"%s\"",
				 r->path, what);
	if (v->type != JSON_ARRAY)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"%s\" is a %s, not an array", r->path, what,
				 json_type_name(v));
	if (v->len != (size_t)r->rank)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"%s\" has %zu entries for rank %d", r->path,
				 what, v->len, r->rank);
	for (e = v->child; e != NULL; e = e->next, d++) {
		if (get_u64(e, &out[d]) != 0)
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "\"%s\"[%d] is not an integer in "
					 "0..2^64-1", r->path, what, d);
		if (out[d] < min)
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "\"%s\"[%d] is %llu, below %llu",
					 r->path, what, d,
					 (unsigned long long)out[d],
					 (unsigned long long)min);
	}
	return SHARDPIPE_OK;
}

/*
 * A codec entry: {"name": ..., "configuration": {...}} or the bare name
 * string the core spec allows for codecs without configuration.
 */
static int codec_entry(struct shardpipe_reader *r, const struct json_value *c,
		       const char *where, const char **name,
		       const struct json_value **conf)
{
	const struct json_value *n;

	*conf = NULL;
	if (c->type == JSON_STRING) {
		n = c;
	} else if (c->type == JSON_OBJECT) {
		n = json_get(c, "name");
		*conf = json_get(c, "configuration");
		if (*conf != NULL && (*conf)->type != JSON_OBJECT)
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "a codec's configuration in %s is a "
					 "%s, not an object", r->path, where,
					 json_type_name(*conf));
	} else {
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "an entry of %s is a %s, not a codec",
				 r->path, where, json_type_name(c));
	}
	if (n == NULL || n->type != JSON_STRING || strlen(n->str) != n->len)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "a codec in %s has no string \"name\"",
				 r->path, where);
	*name = n->str;
	return SHARDPIPE_OK;
}

/* "bytes": only its endianness matters. */
static int parse_bytes_codec(struct shardpipe_reader *r,
			     const struct json_value *conf, const char *where,
			     size_t esize, int *big)
{
	const struct json_value *e = json_get(conf, "endian");

	*big = 0;
	if (e == NULL || e->type == JSON_NULL) {
		/* The spec lets single-byte types omit the byte order. */
		if (esize == 1)
			return SHARDPIPE_OK;
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"bytes\" in %s has no \"endian\"", r->path,
				 where);
	}
	if (json_is_str(e, "big"))
		*big = 1;
	else if (!json_is_str(e, "little"))
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"bytes\" endian in %s is not \"little\" or "
				 "\"big\"", r->path, where);
	return SHARDPIPE_OK;
}

/*
 * "blosc" (blosc codec spec v1.0): cname, clevel and shuffle are required,
 * typesize too unless the shuffle is "noshuffle"; blocksize may be left
 * out.  Decoding needs none of them (the blosc1 header of each chunk says
 * it all), but a configuration the spec forbids is a malformed store, and
 * a compressor this c-blosc lacks is better refused here than as one
 * corrupt chunk after another.
 */
static int parse_blosc_conf(struct shardpipe_reader *r,
			    const struct json_value *conf, const char *where)
{
	static const char *const cnames[] = {
		"lz4", "lz4hc", "blosclz", "zstd", "snappy", "zlib",
	};
	const struct json_value *cn, *lv, *sh, *ts, *bs;
	int known = 0, noshuffle;

	if (conf == NULL)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"blosc\" in %s has no configuration",
				 r->path, where);
	cn = json_get(conf, "cname");
	lv = json_get(conf, "clevel");
	sh = json_get(conf, "shuffle");
	ts = json_get(conf, "typesize");
	bs = json_get(conf, "blocksize");
	for (size_t i = 0; i < sizeof(cnames) / sizeof(cnames[0]); i++)
		known |= json_is_str(cn, cnames[i]);
	if (!known)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"blosc\" cname in %s is missing or not one "
				 "of lz4, lz4hc, blosclz, zstd, snappy, zlib",
				 r->path, where);
	if (lv == NULL || lv->type != JSON_NUMBER ||
	    !(lv->num_flags & JSON_INT_I64) || lv->i < 0 || lv->i > 9)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"blosc\" clevel in %s is missing or not an "
				 "integer in 0..9", r->path, where);
	noshuffle = json_is_str(sh, "noshuffle");
	if (!noshuffle && !json_is_str(sh, "shuffle") &&
	    !json_is_str(sh, "bitshuffle"))
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"blosc\" shuffle in %s is missing or not "
				 "\"noshuffle\", \"shuffle\" or \"bitshuffle\"",
				 r->path, where);
	if ((ts != NULL || !noshuffle) &&
	    (ts == NULL || ts->type != JSON_NUMBER ||
	     !(ts->num_flags & JSON_INT_U64) || ts->u == 0))
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"blosc\" typesize in %s is missing or not a "
				 "positive integer", r->path, where);
	if (bs != NULL && (bs->type != JSON_NUMBER ||
			   !(bs->num_flags & JSON_INT_U64)))
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"blosc\" blocksize in %s is not an integer "
				 ">= 0", r->path, where);
#ifdef HAVE_BLOSC
	if (blosc_compname_to_compcode(cn->str) < 0)
		return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
				 "codec \"blosc\" in %s uses compressor \"%s\", "
				 "which this c-blosc lacks (it has %s)", r->path,
				 where, cn->str, blosc_list_compressors());
	return SHARDPIPE_OK;
#else
	return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
			 "codec \"blosc\" in %s is not supported: this "
			 "libshardpipe was built without c-blosc", r->path,
			 where);
#endif
}

/*
 * The bytes-to-bytes codecs after "bytes", entries first..end of `list`.
 * Only one compressor is allowed: a second one would need the size of an
 * intermediate encoding, which nothing records.
 */
static int parse_b2b(struct shardpipe_reader *r, const struct json_value *c,
		     const char *where, uint64_t chunk_bytes, struct chain *ch)
{
	uint64_t size = chunk_bytes;

	ch->n = 0;
	ch->comp = SHARDPIPE_CODEC_NONE;
	ch->comp_out = chunk_bytes;
	for (; c != NULL; c = c->next) {
		const struct json_value *conf, *lv;
		const char *name;
		enum b2b_kind k;

		SP_FORWARD(codec_entry(r, c, where, &name, &conf));
		if (strcmp(name, "crc32c") == 0) {
			k = B2B_CRC32C;
		} else if (strcmp(name, "zstd") == 0) {
			k = B2B_ZSTD;
		} else if (strcmp(name, "gzip") == 0) {
			k = B2B_GZIP;
		} else if (strcmp(name, "blosc") == 0) {
			k = B2B_BLOSC;
			SP_FORWARD(parse_blosc_conf(r, conf, where));
		} else if (strcmp(name, "bytes") == 0 ||
			   strcmp(name, "sharding_indexed") == 0 ||
			   strcmp(name, "transpose") == 0) {
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "\"%s\" in %s comes after the "
					 "array-to-bytes codec", r->path, name,
					 where);
		} else {
			return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
					 "codec \"%.64s\" in %s is not supported",
					 r->path, name, where);
		}
		if (k != B2B_CRC32C) {
			SP_RETURN_IF(ch->comp != SHARDPIPE_CODEC_NONE, &r->err,
				     SHARDPIPE_ERR_UNSUPPORTED,
				     "%s/zarr.json: two compressors in %s",
				     r->path, where);
			lv = k == B2B_BLOSC ? NULL : json_get(conf, "level");
			if (lv != NULL && (lv->type != JSON_NUMBER ||
					   !(lv->num_flags & JSON_INT_I64)))
				return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
						 "\"%s\" level in %s is not an "
						 "integer", r->path, name,
						 where);
			ch->comp = k == B2B_ZSTD ? SHARDPIPE_CODEC_ZSTD
				 : k == B2B_GZIP ? SHARDPIPE_CODEC_GZIP
						 : SHARDPIPE_CODEC_BLOSC;
			ch->comp_out = size;
			size = codec_bound(ch->comp, size) + CODEC_SLACK;
		} else {
			if (conf != NULL && conf->len != 0)
				return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
						 "\"crc32c\" in %s has a "
						 "configuration", r->path,
						 where);
			size += 4;
		}
		SP_RETURN_IF(ch->n == MAX_B2B, &r->err,
			     SHARDPIPE_ERR_UNSUPPORTED,
			     "%s/zarr.json: more than %d codecs in %s",
			     r->path, MAX_B2B, where);
		ch->kind[ch->n++] = k;
	}
	ch->max_encoded = size;
	return SHARDPIPE_OK;
}

/* An array-to-bytes codec that is not "bytes": say why it is refused. */
static int refuse_a2b(struct shardpipe_reader *r, const char *name,
		      const char *where)
{
	if (strcmp(name, "sharding_indexed") == 0)
		return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
				 "nested sharding in %s is not supported",
				 r->path, where);
	if (strcmp(name, "zstd") == 0 || strcmp(name, "gzip") == 0 ||
	    strcmp(name, "blosc") == 0 || strcmp(name, "crc32c") == 0)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "%s does not start with an array-to-bytes "
				 "codec (found \"%s\")", r->path, where, name);
	return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
			 "codec \"%.64s\" in %s is not supported", r->path,
			 name, where);
}

/* A chain "bytes", then bytes-to-bytes codecs. */
static int parse_chunk_chain(struct shardpipe_reader *r,
			     const struct json_value *list, const char *where,
			     struct chain *ch)
{
	const struct json_value *conf;
	const char *name;

	if (list == NULL)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT, "missing %s",
				 r->path, where);
	if (list->type != JSON_ARRAY || list->len == 0)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "%s is not a non-empty array", r->path, where);
	SP_FORWARD(codec_entry(r, list->child, where, &name, &conf));
	if (strcmp(name, "bytes") != 0)
		return refuse_a2b(r, name, where);
	SP_FORWARD(parse_bytes_codec(r, conf, where, r->esize,
				     &ch->big_endian));
	return parse_b2b(r, list->child->next, where, r->chunk_bytes, ch);
}

static int parse_sharding(struct shardpipe_reader *r,
			  const struct json_value *conf)
{
	const struct json_value *v, *c, *cc;
	const char *name;
	uint64_t n = 1;

	if (conf == NULL)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"sharding_indexed\" has no configuration",
				 r->path);
	SP_FORWARD(get_shape(r, json_get(conf, "chunk_shape"),
			     "sharding_indexed.chunk_shape", 1, r->chunk));
	for (int d = 0; d < r->rank; d++) {
		if (r->shard[d] % r->chunk[d] != 0)
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "inner chunk %llu does not divide "
					 "shard %llu on dimension %d", r->path,
					 (unsigned long long)r->chunk[d],
					 (unsigned long long)r->shard[d], d);
		r->cps[d] = r->shard[d] / r->chunk[d];
		if (!sp_mul_ok(n, r->cps[d], &n) || n > SHARD_MAX_CHUNKS)
			return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
					 "more than %llu chunks per shard",
					 r->path,
					 (unsigned long long)SHARD_MAX_CHUNKS);
	}
	r->n_inner = n;

	v = json_get(conf, "index_location");
	if (v == NULL || json_is_str(v, "end"))
		r->index_start = 0;
	else if (json_is_str(v, "start"))
		r->index_start = 1;
	else
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "index_location is not \"start\" or \"end\"",
				 r->path);

	v = json_get(conf, "index_codecs");
	if (v == NULL || v->type != JSON_ARRAY || v->len == 0)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "sharding_indexed.index_codecs is missing or "
				 "not a non-empty array", r->path);
	SP_FORWARD(codec_entry(r, v->child, "index_codecs", &name, &cc));
	if (strcmp(name, "bytes") != 0)
		return refuse_a2b(r, name, "index_codecs");
	SP_FORWARD(parse_bytes_codec(r, cc, "index_codecs", 8, &r->index_big));
	r->index_crc = 0;
	for (c = v->child->next; c != NULL; c = c->next) {
		SP_FORWARD(codec_entry(r, c, "index_codecs", &name, &cc));
		if (strcmp(name, "crc32c") == 0 && !r->index_crc) {
			r->index_crc = 1;
		} else if (strcmp(name, "zstd") == 0 ||
			   strcmp(name, "gzip") == 0 ||
			   strcmp(name, "blosc") == 0) {
			/* Sharding spec: index codecs must have a fixed
			 * encoded size. */
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "compressor \"%s\" in index_codecs",
					 r->path, name);
		} else {
			return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
					 "index codec \"%.64s\" is not "
					 "supported", r->path, name);
		}
	}
	r->index_bytes = 16 * r->n_inner + (r->index_crc ? 4 : 0);
	return SHARDPIPE_OK;
}

static int parse_codecs(struct shardpipe_reader *r, const struct json_value *v)
{
	const struct json_value *conf;
	const char *name;
	uint64_t elems = 1;

	if (v == NULL)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT, "missing \"codecs\"",
				 r->path);
	if (v->type != JSON_ARRAY || v->len == 0)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"codecs\" is not a non-empty array", r->path);
	SP_FORWARD(codec_entry(r, v->child, "codecs", &name, &conf));
	if (strcmp(name, "sharding_indexed") == 0) {
		r->sharded = 1;
		SP_FORWARD(parse_sharding(r, conf));
		if (v->len != 1)
			return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
					 "codecs after \"sharding_indexed\" are "
					 "not supported", r->path);
	} else {
		r->sharded = 0;
		r->n_inner = 1;
		for (int d = 0; d < r->rank; d++) {
			r->chunk[d] = r->shard[d];
			r->cps[d] = 1;
		}
	}
	for (int d = 0; d < r->rank; d++)
		if (!sp_mul_ok(elems, r->chunk[d], &elems))
			elems = UINT64_MAX;
	if (!sp_mul_ok(elems, r->esize, &r->chunk_bytes) ||
	    r->chunk_bytes > CHUNK_MAX_BYTES)
		return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
				 "chunks larger than %llu bytes are not "
				 "supported", r->path,
				 (unsigned long long)CHUNK_MAX_BYTES);
	if (r->sharded) {
		const struct json_value *inner =
			json_get(json_get(v->child, "configuration"), "codecs");

		return parse_chunk_chain(r, inner, "sharding_indexed.codecs",
					 &r->chain);
	}
	return parse_chunk_chain(r, v, "codecs", &r->chain);
}

/* IEEE binary16 nearest to x (ties to even); x is finite and below
 * 65520 in magnitude, which the caller checked. */
static uint16_t half_from_double(double x)
{
	uint16_t sign = signbit(x) ? 0x8000 : 0;
	double a = fabs(x);
	int e;

	if (a < ldexp(1, -14)) /* subnormal: multiples of 2^-24 */
		return sign | (uint16_t)nearbyint(ldexp(a, 24));
	frexp(a, &e); /* a = m * 2^e, m in [0.5, 1) */
	e -= 1;
	/* The rounded mantissa may carry into the exponent: adding the
	 * fields handles that, and 65504 < a < 65520 stays finite. */
	return sign | (uint16_t)(((unsigned)(e + 15) << 10) +
				 (unsigned)nearbyint((ldexp(a, -e) - 1) * 1024));
}

static void put_native(uint8_t *dst, uint64_t bits, size_t n)
{
	uint8_t tmp[8];

	/* Little-endian first, then to the host's order. */
	for (size_t i = 0; i < n; i++)
		tmp[i] = (uint8_t)(bits >> (8 * i));
	for (size_t i = 0; i < n; i++)
		dst[i] = host_big_endian() ? tmp[n - 1 - i] : tmp[i];
}

static int parse_fill(struct shardpipe_reader *r, const struct json_value *v)
{
	shardpipe_dtype t = r->dtype;
	size_t n = r->esize;
	uint64_t bits = 0;

	if (v == NULL)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "missing \"fill_value\"", r->path);
	if (t == SHARDPIPE_DTYPE_BOOL) {
		if (v->type != JSON_TRUE && v->type != JSON_FALSE)
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "fill_value of a bool array is a %s",
					 r->path, json_type_name(v));
		bits = v->type == JSON_TRUE;
	} else if (t <= SHARDPIPE_DTYPE_UINT64) {
		int is_signed = t <= SHARDPIPE_DTYPE_INT64;
		unsigned width = 8 * (unsigned)n;

		if (v->type != JSON_NUMBER)
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "fill_value of an integer array is "
					 "a %s", r->path, json_type_name(v));
		/* Real writers store 0.0 for an integer array; a float
		 * with an integral value below 2^53 names one integer
		 * exactly, so it is read as that integer.  1.5, 1e300
		 * and the like stay refused. */
		unsigned flags = v->num_flags;
		int64_t vi = v->i;
		uint64_t vu = v->u;

		if (!(flags & (JSON_INT_I64 | JSON_INT_U64)) &&
		    v->num == floor(v->num) && fabs(v->num) < 0x1p53) {
			vi = (int64_t)v->num;
			flags |= JSON_INT_I64;
			if (vi >= 0) {
				vu = (uint64_t)vi;
				flags |= JSON_INT_U64;
			}
		}
		if (is_signed) {
			int64_t lo = width == 64 ? INT64_MIN
						 : -((int64_t)1 << (width - 1));
			int64_t hi = width == 64 ? INT64_MAX
						 : ((int64_t)1 << (width - 1)) - 1;

			if (!(flags & JSON_INT_I64) || vi < lo || vi > hi)
				return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
						 "fill_value is not an "
						 "integer in %s's range",
						 r->path, dtypes[t].name);
			bits = (uint64_t)vi;
		} else {
			uint64_t hi = width == 64 ? UINT64_MAX
						  : ((uint64_t)1 << width) - 1;

			if (!(flags & JSON_INT_U64) || vu > hi)
				return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
						 "fill_value is not an "
						 "integer in %s's range",
						 r->path, dtypes[t].name);
			bits = vu;
		}
	} else if (v->type == JSON_STRING &&
		   v->len > 2 && v->str[0] == '0' && v->str[1] == 'x') {
		/* The bit pattern, sign bit first, whatever the byte
		 * order the chunks use. */
		if (v->len != 2 + 2 * n)
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "hex fill_value has %zu digits, %s "
					 "needs %zu", r->path, v->len - 2,
					 dtypes[t].name, 2 * n);
		for (size_t i = 2; i < v->len; i++) {
			char c = v->str[i];
			unsigned d;

			if (c >= '0' && c <= '9')
				d = (unsigned)(c - '0');
			else if (c >= 'a' && c <= 'f')
				d = (unsigned)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				d = (unsigned)(c - 'A' + 10);
			else
				return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
						 "hex fill_value has a bad "
						 "digit", r->path);
			bits = bits << 4 | d;
		}
	} else {
		double x;

		if (v->type == JSON_NUMBER)
			x = v->num;
		else if (json_is_str(v, "NaN"))
			x = NAN;
		else if (json_is_str(v, "Infinity"))
			x = INFINITY;
		else if (json_is_str(v, "-Infinity"))
			x = -INFINITY;
		else
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "fill_value of a float array is not a "
					 "number, \"NaN\", \"Infinity\", "
					 "\"-Infinity\" or \"0x...\"", r->path);
		if (v->type == JSON_NUMBER &&
		    (isinf(x) || (t == SHARDPIPE_DTYPE_FLOAT32 &&
				  isinf((float)x)) ||
		     (t == SHARDPIPE_DTYPE_FLOAT16 && fabs(x) >= 65520.0)))
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "fill_value is beyond %s's range",
					 r->path, dtypes[t].name);
		if (t == SHARDPIPE_DTYPE_FLOAT64) {
			/* The spec's NaN: quiet, positive, payload 0. */
			if (isnan(x))
				bits = 0x7ff8000000000000ull;
			else
				memcpy(&bits, &x, 8);
		} else if (t == SHARDPIPE_DTYPE_FLOAT32) {
			float f = (float)x;
			uint32_t b;

			memcpy(&b, &f, 4);
			bits = isnan(x) ? 0x7fc00000u : b;
		} else {
			bits = isnan(x) ? 0x7e00u
			     : isinf(x) ? (signbit(x) ? 0xfc00u : 0x7c00u)
					: half_from_double(x);
		}
	}
	put_native(r->fill, bits, n);
	r->fill_zero = bits == 0;
	return SHARDPIPE_OK;
}

static int parse_key_encoding(struct shardpipe_reader *r,
			      const struct json_value *v)
{
	const struct json_value *conf, *sep;

	if (v == NULL)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "missing \"chunk_key_encoding\"", r->path);
	if (v->type != JSON_OBJECT)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"chunk_key_encoding\" is a %s, not an "
				 "object", r->path, json_type_name(v));
	if (json_is_str(json_get(v, "name"), "default")) {
		r->key_v2 = 0;
		r->sep = '/';
	} else if (json_is_str(json_get(v, "name"), "v2")) {
		r->key_v2 = 1;
		r->sep = '.';
	} else {
		return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
				 "chunk_key_encoding is not \"default\" or "
				 "\"v2\"", r->path);
	}
	conf = json_get(v, "configuration");
	if (conf != NULL && conf->type != JSON_OBJECT)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "chunk_key_encoding.configuration is a %s",
				 r->path, json_type_name(conf));
	sep = json_get(conf, "separator");
	if (sep == NULL)
		return SHARDPIPE_OK;
	if (json_is_str(sep, "/"))
		r->sep = '/';
	else if (json_is_str(sep, "."))
		r->sep = '.';
	else
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "chunk key separator is not \"/\" or \".\"",
				 r->path);
	return SHARDPIPE_OK;
}

static int parse_dim_names(struct shardpipe_reader *r,
			   const struct json_value *v)
{
	const struct json_value *e;
	int d = 0;

	/* null, as some writers store for "no names", is the same. */
	if (v == NULL || v->type == JSON_NULL)
		return SHARDPIPE_OK;
	if (v->type != JSON_ARRAY || v->len != (size_t)r->rank)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"dimension_names\" is not an array of %d "
				 "entries", r->path, r->rank);
	for (e = v->child; e != NULL; e = e->next, d++) {
		size_t n;

		if (e->type == JSON_NULL)
			continue;
		if (e->type != JSON_STRING)
			return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
					 "dimension_names[%d] is a %s", r->path,
					 d, json_type_name(e));
		/* Keep what fits, cut at a UTF-8 character boundary. */
		n = strnlen(e->str, e->len);
		if (n > sizeof(r->names[d]) - 1) {
			n = sizeof(r->names[d]) - 1;
			while (n > 0 && ((unsigned char)e->str[n] & 0xc0) == 0x80)
				n--;
		}
		memcpy(r->names[d], e->str, n);
		r->names[d][n] = '\0';
	}
	return SHARDPIPE_OK;
}

static int parse_metadata(struct shardpipe_reader *r,
			  const struct json_value *root)
{
	static const char *const known[] = {
		"zarr_format", "node_type", "shape", "data_type", "chunk_grid",
		"chunk_key_encoding", "fill_value", "codecs", "attributes",
		"dimension_names", "storage_transformers",
	};
	const struct json_value *v, *g;
	uint64_t fmt;

	if (root->type != JSON_OBJECT)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT, "is a %s, not an object",
				 r->path, json_type_name(root));
	v = json_get(root, "zarr_format");
	if (v == NULL || get_u64(v, &fmt) != 0 || fmt != 3)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"zarr_format\" is missing or not 3",
				 r->path);
	v = json_get(root, "node_type");
	if (!json_is_str(v, "array"))
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"node_type\" is not \"array\"", r->path);

	/* Core spec: an unknown member must be understood unless it is an
	 * object saying "must_understand": false. */
	for (v = root->child; v != NULL; v = v->next) {
		size_t i;

		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strlen(known[i]) == v->key_len &&
			    memcmp(known[i], v->key, v->key_len) == 0)
				break;
		if (i < sizeof(known) / sizeof(known[0]))
			continue;
		g = json_get(v, "must_understand");
		if (g == NULL || g->type != JSON_FALSE)
			return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
					 "member \"%.*s\" must be understood",
					 r->path,
					 (int)(v->key_len > 64 ? 64 : v->key_len),
					 v->key);
	}

	v = json_get(root, "shape");
	if (v == NULL || v->type != JSON_ARRAY)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"shape\" is missing or not an array",
				 r->path);
	if (v->len == 0 || v->len > SHARDPIPE_MAX_RANK)
		return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
				 "rank %zu is outside 1..%d", r->path, v->len,
				 SHARDPIPE_MAX_RANK);
	r->rank = (int)v->len;
	SP_FORWARD(get_shape(r, v, "shape", 0, r->shape));

	v = json_get(root, "data_type");
	if (v == NULL)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "missing \"data_type\"", r->path);
	if (v->type == JSON_OBJECT)
		return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
				 "extension data types are not supported",
				 r->path);
	if (v->type != JSON_STRING)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"data_type\" is a %s", r->path,
				 json_type_name(v));
	r->dtype = SHARDPIPE_DTYPE_COUNT_;
	for (int t = 0; t < SHARDPIPE_DTYPE_COUNT_; t++)
		if (json_is_str(v, dtypes[t].name))
			r->dtype = (shardpipe_dtype)t;
	if (r->dtype == SHARDPIPE_DTYPE_COUNT_)
		return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
				 "data type \"%.64s\" is not supported",
				 r->path, v->str);
	r->esize = dtypes[r->dtype].size;

	v = json_get(root, "chunk_grid");
	if (v == NULL || v->type != JSON_OBJECT)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"chunk_grid\" is missing or not an object",
				 r->path);
	if (!json_is_str(json_get(v, "name"), "regular"))
		return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
				 "chunk grid is not \"regular\"", r->path);
	SP_FORWARD(get_shape(r, json_get(json_get(v, "configuration"),
					 "chunk_shape"),
			     "chunk_grid.configuration.chunk_shape", 1,
			     r->shard));
	for (int d = 0; d < r->rank; d++)
		r->grid[d] = sp_ceil_div(r->shape[d], r->shard[d]);

	SP_FORWARD(parse_key_encoding(r, json_get(root, "chunk_key_encoding")));
	SP_FORWARD(parse_codecs(r, json_get(root, "codecs")));
	SP_FORWARD(parse_fill(r, json_get(root, "fill_value")));
	SP_FORWARD(parse_dim_names(r, json_get(root, "dimension_names")));

	v = json_get(root, "attributes");
	if (v != NULL && v->type != JSON_OBJECT)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"attributes\" is a %s, not an object",
				 r->path, json_type_name(v));
	v = json_get(root, "storage_transformers");
	if (v != NULL && (v->type != JSON_ARRAY))
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "\"storage_transformers\" is not an array",
				 r->path);
	if (v != NULL && v->len != 0)
		return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
				 "storage transformers are not supported",
				 r->path);

	r->swap = r->esize > 1 && r->chain.big_endian != host_big_endian();
	return SHARDPIPE_OK;
}

/* ------------------------------------------------------------------ I/O */

static int read_meta(struct shardpipe_reader *r, char **text, size_t *len)
{
	struct source_obj *o = NULL;
	struct sp_err e;
	uint64_t size = 0;
	char *buf;
	int rc;

	sp_err_clear(&e);
	rc = r->src->ops->open(r->src, "zarr.json", &o, &size, &e);
	if (rc == SHARDPIPE_OK && o == NULL) {
		rc = r->src->ops->open(r->src, ".zarray", &o, &size, &e);
		r->src->ops->close(r->src, o);
		if (rc == SHARDPIPE_OK && o != NULL)
			return META_FAIL(r, SHARDPIPE_ERR_UNSUPPORTED,
					 "missing: %s holds a Zarr v2 array",
					 r->path, r->path);
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "missing: not a Zarr v3 array", r->path);
	}
	if (rc == SHARDPIPE_ERR_FORMAT)
		return META_FAIL(r, rc, "%s", r->path, e.msg);
	if (rc != SHARDPIPE_OK)
		return META_FAIL(r, rc, "cannot open: %s", r->path, e.msg);
	if (size > META_MAX_BYTES) {
		r->src->ops->close(r->src, o);
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "is %llu bytes, more than the %u allowed",
				 r->path, (unsigned long long)size,
				 META_MAX_BYTES);
	}
	buf = malloc(size ? size : 1);
	if (buf == NULL) {
		r->src->ops->close(r->src, o);
		return META_FAIL(r, SHARDPIPE_ERR_NOMEM, "out of memory",
				 r->path);
	}
	rc = r->src->ops->read(r->src, o, buf, size, 0, &e);
	r->src->ops->close(r->src, o);
	if (rc != SHARDPIPE_OK) {
		free(buf);
		return META_FAIL(r, rc, "read failed: %s", r->path, e.msg);
	}
	*text = buf;
	*len = size;
	return SHARDPIPE_OK;
}

static int open_store(struct shardpipe_reader *r)
{
	static const struct json_limits limits = {
		.max_depth = META_MAX_DEPTH,
		.max_bytes = META_MAX_TREE,
		.max_number_len = 1024,
	};
	struct json_error je;
	struct json_doc *doc;
	char *text = NULL;
	size_t len = 0;
	int rc;

	SP_FORWARD(source_open(&r->src, r->path, &r->err));
	SP_FORWARD(read_meta(r, &text, &len));
	doc = json_parse(text, len, &limits, &je);
	free(text);
	if (doc == NULL)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "line %d column %d: %s", r->path, je.line,
				 je.col, je.msg);
	rc = parse_metadata(r, json_root(doc));
	json_free(doc);
	return rc;
}

int shardpipe_reader_open(shardpipe_reader **out, const char *path)
{
	struct shardpipe_reader *r;
	int rc;

	if (out == NULL || path == NULL) {
		sp_last_error_set("shardpipe_reader_open: NULL argument");
		if (out != NULL)
			*out = NULL;
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (r == NULL || (r->path = strdup(path)) == NULL) {
		free(r);
		sp_last_error_set("out of memory opening a reader");
		return SHARDPIPE_ERR_NOMEM;
	}
	rc = open_store(r);
	if (rc != SHARDPIPE_OK) {
		sp_last_error_set(r->err.msg);
		shardpipe_reader_close(r);
		return rc;
	}
	*out = r;
	return SHARDPIPE_OK;
}

int shardpipe_reader_info_sized(const shardpipe_reader *r,
				shardpipe_array_info *out, size_t size)
{
	shardpipe_array_info info;

	if (r == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	memset(&info, 0, sizeof(info));
	info.rank = r->rank;
	info.dtype = r->dtype;
	for (int d = 0; d < r->rank; d++) {
		info.shape[d] = r->shape[d];
		info.chunk[d] = r->chunk[d];
		info.shard[d] = r->shard[d];
		memcpy(info.dim_names[d], r->names[d], sizeof(info.dim_names[d]));
	}
	return sp_struct_copy(out, size, &info, sizeof(info));
}

const char *shardpipe_reader_message(const shardpipe_reader *r)
{
	return r ? r->err.msg : "";
}

static void close_shard(struct shardpipe_reader *r)
{
	if (r->obj != NULL)
		r->src->ops->close(r->src, r->obj);
	r->obj = NULL;
}

void shardpipe_reader_close(shardpipe_reader *r)
{
	if (r == NULL)
		return;
	close_shard(r);
	if (r->src != NULL)
		r->src->ops->free(r->src);
	free(r->index);
	free(r->sorted);
	free(r->enc);
	free(r->dec);
	free(r->path);
	free(r);
}

/* ---------------------------------------------------------------- shards */

static void make_key(const struct shardpipe_reader *r, const uint64_t *s,
		     char *key, size_t cap)
{
	size_t n = 0;

	if (!r->key_v2)
		n = (size_t)snprintf(key, cap, "c");
	for (int d = 0; d < r->rank; d++) {
		int w = snprintf(key + n, cap - n, "%s%llu",
				 (d == 0 && r->key_v2) ? "" : (char[]){ r->sep, 0 },
				 (unsigned long long)s[d]);
		n += (size_t)w;
	}
}

/* "(i,j,k)": a chunk's coordinates within its shard. */
static void chunk_coords(const struct shardpipe_reader *r, uint64_t lin,
			 char *buf, size_t cap)
{
	uint64_t c[SHARDPIPE_MAX_RANK];
	size_t n = 0;

	for (int d = r->rank - 1; d >= 0; d--) {
		c[d] = lin % r->cps[d];
		lin /= r->cps[d];
	}
	buf[n++] = '(';
	for (int d = 0; d < r->rank && n < cap; d++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%llu", d ? "," : "",
				      (unsigned long long)c[d]);
	if (n + 2 <= cap) {
		buf[n++] = ')';
		buf[n] = '\0';
	}
}

/*
 * Record a fault in the shard at hand, naming the file, the shard and,
 * when chunk >= 0, the chunk within it.
 */
__attribute__((format(printf, 4, 5)))
static int fault(struct shardpipe_reader *r, int code, int64_t chunk,
		 const char *fmt, ...)
{
	char what[256], where[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!r->sharded) {
		snprintf(where, sizeof(where), "chunk %s", r->key);
	} else if (chunk < 0) {
		snprintf(where, sizeof(where), "shard %s", r->key);
	} else {
		char cc[SHARDPIPE_MAX_RANK * 21 + 4];

		chunk_coords(r, (uint64_t)chunk, cc, sizeof(cc));
		snprintf(where, sizeof(where), "shard %s, chunk %s", r->key,
			 cc);
	}
	return sp_err_set(&r->err, code, "%s/%s: %s: %s", r->path, r->key,
			  where, what);
}

static int cmp_sorted(const void *a, const void *b)
{
	const struct index_sort *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return (x->chunk > y->chunk) - (x->chunk < y->chunk);
}

/*
 * Read and check the index of the shard just opened: its checksum, every
 * entry inside the shard body (the file without the index), no entry
 * bigger than the codecs could make a chunk, no two chunks overlapping.
 */
static int load_index(struct shardpipe_reader *r)
{
	uint64_t n = r->n_inner, lo, hi, count = 0;
	struct sp_err e;
	uint8_t *raw;

	if (r->fsize < r->index_bytes)
		return fault(r, SHARDPIPE_ERR_FORMAT, -1,
			     "%llu bytes cannot hold the %llu-byte index",
			     (unsigned long long)r->fsize,
			     (unsigned long long)r->index_bytes);
	if (r->index == NULL) {
		/* Sized by the metadata, but only allocated once a shard
		 * at least that large exists. */
		r->index = malloc(2 * n * sizeof(uint64_t) + 8);
		r->sorted = malloc(n * sizeof(*r->sorted));
		if (r->index == NULL || r->sorted == NULL)
			return fault(r, SHARDPIPE_ERR_NOMEM, -1,
				     "out of memory for the index");
	}
	lo = r->index_start ? r->index_bytes : 0;
	hi = r->index_start ? r->fsize : r->fsize - r->index_bytes;
	raw = (uint8_t *)r->index;
	sp_err_clear(&e);
	if (r->src->ops->read(r->src, r->obj, raw, r->index_bytes,
			      r->index_start ? 0 : hi, &e) != SHARDPIPE_OK)
		return fault(r, e.code, -1, "reading the index: %s", e.msg);
	if (r->index_crc) {
		uint32_t want = sp_get_le32(raw + 16 * n);
		uint32_t got = crc32c(0, raw, 16 * n);

		if (want != got)
			return fault(r, SHARDPIPE_ERR_CORRUPT, -1,
				     "index checksum mismatch (stored %08x, "
				     "computed %08x)", want, got);
	}
	/* Decode in place: entry i's bytes are where its value goes. */
	for (uint64_t i = 0; i < 2 * n; i++) {
		const uint8_t *p = raw + 8 * i;
		uint64_t v = 0;

		if (r->index_big)
			for (int k = 0; k < 8; k++)
				v = v << 8 | p[k];
		else
			v = sp_get_le64(p);
		r->index[i] = v;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t off = r->index[2 * i], nb = r->index[2 * i + 1];

		if (off == EMPTY_ENTRY && nb == EMPTY_ENTRY)
			continue;
		if (off == EMPTY_ENTRY || nb == EMPTY_ENTRY || nb == 0)
			return fault(r, SHARDPIPE_ERR_FORMAT, (int64_t)i,
				     "index entry (%llu, %llu) is neither a "
				     "chunk nor empty",
				     (unsigned long long)off,
				     (unsigned long long)nb);
		if (off < lo || off > hi || nb > hi - off)
			return fault(r, SHARDPIPE_ERR_FORMAT, (int64_t)i,
				     "bytes %llu..+%llu lie outside the shard "
				     "body %llu..%llu",
				     (unsigned long long)off,
				     (unsigned long long)nb,
				     (unsigned long long)lo,
				     (unsigned long long)hi);
		if (nb > r->chain.max_encoded)
			return fault(r, SHARDPIPE_ERR_FORMAT, (int64_t)i,
				     "%llu encoded bytes, more than the codecs "
				     "can produce for %llu (at most %llu)",
				     (unsigned long long)nb,
				     (unsigned long long)r->chunk_bytes,
				     (unsigned long long)r->chain.max_encoded);
		r->sorted[count].off = off;
		r->sorted[count].nbytes = nb;
		r->sorted[count].chunk = (uint32_t)i;
		count++;
	}
	qsort(r->sorted, count, sizeof(*r->sorted), cmp_sorted);
	for (uint64_t i = 1; i < count; i++) {
		const struct index_sort *a = &r->sorted[i - 1];
		const struct index_sort *b = &r->sorted[i];

		if (a->off + a->nbytes > b->off) {
			char cc[SHARDPIPE_MAX_RANK * 21 + 4];

			chunk_coords(r, a->chunk, cc, sizeof(cc));
			return fault(r, SHARDPIPE_ERR_FORMAT, b->chunk,
				     "bytes %llu..+%llu overlap chunk %s",
				     (unsigned long long)b->off,
				     (unsigned long long)b->nbytes, cc);
		}
	}
	return SHARDPIPE_OK;
}

/* Open the shard (or unsharded chunk) at shard-grid coordinates s.  A
 * missing object leaves r->obj NULL: it reads as the fill value. */
static int open_shard(struct shardpipe_reader *r, const uint64_t *s)
{
	struct sp_err e;
	int rc;

	close_shard(r);
	make_key(r, s, r->key, sizeof(r->key));
	sp_err_clear(&e);
	rc = r->src->ops->open(r->src, r->key, &r->obj, &r->fsize, &e);
	if (rc == SHARDPIPE_ERR_FORMAT)
		return fault(r, rc, -1, "%s", e.msg);
	if (rc != SHARDPIPE_OK)
		return fault(r, rc, -1, "cannot open: %s", e.msg);
	if (r->obj == NULL)
		return SHARDPIPE_OK;
	if (!r->sharded) {
		if (r->fsize > r->chain.max_encoded)
			return fault(r, SHARDPIPE_ERR_FORMAT, -1,
				     "%llu bytes, more than the codecs can "
				     "produce for a %llu-byte chunk",
				     (unsigned long long)r->fsize,
				     (unsigned long long)r->chunk_bytes);
		return SHARDPIPE_OK;
	}
	return load_index(r);
}

/* The chunk's encoded extent, or 0 when it is empty or missing. */
static int chunk_extent(const struct shardpipe_reader *r, uint64_t lin,
			uint64_t *off, uint64_t *nb)
{
	if (r->obj == NULL)
		return 0;
	if (!r->sharded) {
		*off = 0;
		*nb = r->fsize;
		return 1;
	}
	*off = r->index[2 * lin];
	*nb = r->index[2 * lin + 1];
	return *off != EMPTY_ENTRY;
}

static void swap_elements(uint8_t *p, size_t n, size_t esize)
{
	for (size_t i = 0; i + esize <= n; i += esize)
		for (size_t a = 0, b = esize - 1; a < b; a++, b--) {
			uint8_t t = p[i + a];

			p[i + a] = p[i + b];
			p[i + b] = t;
		}
}

/*
 * Read chunk `lin` of the open shard and undo its codecs, last first:
 * a crc32c strips and checks its 4 trailing bytes, the compressor must
 * produce exactly the size its input had when encoded.  On success *out
 * points to chunk_bytes bytes in native byte order.
 */
static int load_chunk(struct shardpipe_reader *r, uint64_t lin, uint8_t **out)
{
	uint64_t off = 0, nb = 0;
	struct sp_err e;
	uint8_t *cur;
	size_t len;

	chunk_extent(r, lin, &off, &nb);
	if (nb > r->enc_cap) {
		/* Bounded by max_encoded, checked with the index. */
		uint8_t *p = realloc(r->enc, nb);

		if (p == NULL)
			return fault(r, SHARDPIPE_ERR_NOMEM, (int64_t)lin,
				     "out of memory for %llu bytes",
				     (unsigned long long)nb);
		r->enc = p;
		r->enc_cap = nb;
	}
	sp_err_clear(&e);
	if (nb > 0 && r->src->ops->read(r->src, r->obj, r->enc, nb, off, &e) !=
			      SHARDPIPE_OK)
		return fault(r, e.code, (int64_t)lin, "read failed: %s", e.msg);
	cur = r->enc;
	len = nb;
	for (int k = r->chain.n - 1; k >= 0; k--) {
		if (r->chain.kind[k] == B2B_CRC32C) {
			uint32_t want, got;

			if (len < 4)
				return fault(r, SHARDPIPE_ERR_CORRUPT,
					     (int64_t)lin,
					     "%zu bytes cannot hold a crc32c",
					     len);
			want = sp_get_le32(cur + len - 4);
			got = crc32c(0, cur, len - 4);
			if (want != got)
				return fault(r, SHARDPIPE_ERR_CORRUPT,
					     (int64_t)lin,
					     "crc32c mismatch (stored %08x, "
					     "computed %08x)", want, got);
			len -= 4;
		} else {
			int rc;

			if (r->dec == NULL &&
			    (r->dec = malloc(r->chain.comp_out)) == NULL)
				return fault(r, SHARDPIPE_ERR_NOMEM,
					     (int64_t)lin, "out of memory");
			sp_err_clear(&e);
			rc = codec_decode(r->chain.comp, cur, len, r->dec,
					  r->chain.comp_out, &e);
			if (rc != SHARDPIPE_OK)
				return fault(r, rc == SHARDPIPE_ERR_NOMEM ? rc
						 : SHARDPIPE_ERR_CORRUPT,
					     (int64_t)lin, "%s", e.msg);
			cur = r->dec;
			len = r->chain.comp_out;
		}
	}
	if (len != r->chunk_bytes)
		return fault(r, SHARDPIPE_ERR_CORRUPT, (int64_t)lin,
			     "chunk holds %zu bytes, expected %llu", len,
			     (unsigned long long)r->chunk_bytes);
	if (r->swap)
		swap_elements(cur, len, r->esize);
	*out = cur;
	return SHARDPIPE_OK;
}

/* ------------------------------------------------------------------ read */

/* Fill n bytes with the fill element, doubling the filled prefix. */
static void fill_run(const struct shardpipe_reader *r, uint8_t *dst, size_t n)
{
	size_t done;

	if (r->fill_zero) {
		memset(dst, 0, n);
		return;
	}
	if (n == 0)
		return;
	memcpy(dst, r->fill, r->esize);
	for (done = r->esize; done < n; done *= 2)
		memcpy(dst + done, dst, done < n - done ? done : n - done);
}

/*
 * Copy the box ext[] from src (strides sstride, in bytes) to dst (strides
 * dstride), or fill it when src is NULL.  The last dimension is
 * contiguous on both sides.
 */
static void copy_box(const struct shardpipe_reader *r, uint8_t *dst,
		     const uint64_t *dstride, const uint8_t *src,
		     const uint64_t *sstride, const uint64_t *ext)
{
	uint64_t i[SHARDPIPE_MAX_RANK] = { 0 };
	int rank = r->rank;
	size_t run = (size_t)ext[rank - 1] * r->esize;

	for (;;) {
		uint64_t doff = 0, soff = 0;
		int d;

		for (d = 0; d < rank - 1; d++) {
			doff += i[d] * dstride[d];
			soff += i[d] * sstride[d];
		}
		if (src != NULL)
			memcpy(dst + doff, src + soff, run);
		else
			fill_run(r, dst + doff, run);
		for (d = rank - 2; d >= 0; d--) {
			if (++i[d] < ext[d])
				break;
			i[d] = 0;
		}
		if (d < 0)
			return;
	}
}

/* Advance the counter c over the box lo..hi (inclusive); 0 at the end. */
static int next_coord(uint64_t *c, const uint64_t *lo, const uint64_t *hi,
		      int rank)
{
	for (int d = rank - 1; d >= 0; d--) {
		if (c[d] < hi[d]) {
			c[d]++;
			return 1;
		}
		c[d] = lo[d];
	}
	return 0;
}

int shardpipe_reader_read(shardpipe_reader *r, const uint64_t *start,
			  const uint64_t *count, void *out, size_t out_bytes)
{
	uint64_t total = 1, ostride[SHARDPIPE_MAX_RANK];
	uint64_t cstride[SHARDPIPE_MAX_RANK];
	uint64_t slo[SHARDPIPE_MAX_RANK], shi[SHARDPIPE_MAX_RANK];
	uint64_t s[SHARDPIPE_MAX_RANK];
	int rank, rc = SHARDPIPE_OK;

	if (r == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	sp_err_clear(&r->err);
	rank = r->rank;
	SP_RETURN_IF(start == NULL || count == NULL, &r->err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT, "NULL start or count");
	for (int d = 0; d < rank; d++) {
		uint64_t end;

		SP_RETURN_IF(!sp_add_ok(start[d], count[d], &end) ||
				     end > r->shape[d],
			     &r->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
			     "dimension %d: %llu+%llu is beyond the extent %llu",
			     d, (unsigned long long)start[d],
			     (unsigned long long)count[d],
			     (unsigned long long)r->shape[d]);
		if (!sp_mul_ok(total, count[d], &total))
			return sp_err_set(&r->err, SHARDPIPE_ERR_OVERFLOW,
					  "the region's size overflows");
	}
	SP_RETURN_IF(!sp_mul_ok(total, r->esize, &total) || total > SIZE_MAX,
		     &r->err, SHARDPIPE_ERR_OVERFLOW,
		     "the region's size overflows");
	/* The caller's buffer bounds every write below. */
	SP_RETURN_IF(total > out_bytes, &r->err,
		     SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "the region holds %llu bytes, the output buffer %zu",
		     (unsigned long long)total, out_bytes);
	if (total == 0)
		return SHARDPIPE_OK;
	SP_RETURN_IF(out == NULL, &r->err, SHARDPIPE_ERR_INVALID_ARGUMENT,
		     "NULL output buffer");

	ostride[rank - 1] = r->esize;
	cstride[rank - 1] = r->esize;
	for (int d = rank - 2; d >= 0; d--) {
		ostride[d] = ostride[d + 1] * count[d + 1];
		cstride[d] = cstride[d + 1] * r->chunk[d + 1];
	}
	for (int d = 0; d < rank; d++) {
		slo[d] = start[d] / r->shard[d];
		shi[d] = (start[d] + count[d] - 1) / r->shard[d];
		s[d] = slo[d];
	}
	do {
		uint64_t clo[SHARDPIPE_MAX_RANK], chi[SHARDPIPE_MAX_RANK];
		uint64_t c[SHARDPIPE_MAX_RANK];

		rc = open_shard(r, s);
		if (rc != SHARDPIPE_OK)
			break;
		/* Inner chunks of this shard that meet the region, in
		 * shard-local coordinates. */
		for (int d = 0; d < rank; d++) {
			uint64_t base = s[d] * r->cps[d];
			uint64_t a = start[d] / r->chunk[d];
			uint64_t b = (start[d] + count[d] - 1) / r->chunk[d];

			clo[d] = (a > base ? a : base) - base;
			chi[d] = (b < base + r->cps[d] - 1 ? b
							   : base + r->cps[d] - 1) -
				 base;
			c[d] = clo[d];
		}
		do {
			uint64_t lin = 0, off, nb, doff = 0, soff = 0;
			uint64_t ext[SHARDPIPE_MAX_RANK];
			uint8_t *src = NULL;

			for (int d = 0; d < rank; d++) {
				uint64_t o = (s[d] * r->cps[d] + c[d]) *
					     r->chunk[d];
				uint64_t lo = o > start[d] ? o : start[d];
				uint64_t hi = o + r->chunk[d] <
							start[d] + count[d]
						      ? o + r->chunk[d]
						      : start[d] + count[d];

				lin = lin * r->cps[d] + c[d];
				ext[d] = hi - lo;
				doff += (lo - start[d]) * ostride[d];
				soff += (lo - o) * cstride[d];
			}
			if (chunk_extent(r, lin, &off, &nb)) {
				rc = load_chunk(r, lin, &src);
				if (rc != SHARDPIPE_OK)
					break;
				src += soff;
			}
			copy_box(r, (uint8_t *)out + doff, ostride, src,
				 cstride, ext);
		} while (next_coord(c, clo, chi, rank));
	} while (rc == SHARDPIPE_OK && next_coord(s, slo, shi, rank));
	close_shard(r);
	return rc;
}

/* ----------------------------------------------------------------- check */

/* Check every chunk of the open shard. */
static int check_shard(struct shardpipe_reader *r)
{
	for (uint64_t lin = 0; lin < r->n_inner; lin++) {
		uint64_t off, nb;
		uint8_t *p;

		if (chunk_extent(r, lin, &off, &nb))
			SP_FORWARD(load_chunk(r, lin, &p));
	}
	return SHARDPIPE_OK;
}

/* A decimal key component without sign or leading zeros, below lim. */
static int parse_coord(const char *p, size_t n, uint64_t lim, uint64_t *out)
{
	uint64_t v = 0;

	if (n == 0 || (n > 1 && p[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (p[i] < '0' || p[i] > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(p[i] - '0');
	}
	if (v >= lim)
		return -1;
	*out = v;
	return 0;
}

static int check_object(struct shardpipe_reader *r, const uint64_t *s)
{
	int rc = open_shard(r, s);

	if (rc == SHARDPIPE_OK && r->obj != NULL)
		rc = check_shard(r);
	close_shard(r);
	return rc;
}

/*
 * Check the object at key when it is a key of the array's grid: "c/1/2"
 * or "c.1.2" (default), "1/2" or "1.2" (v2).  Other names (zarr.json, a
 * writer's temporary files, shards beyond the advertised shape) are not
 * part of the array and are passed over.
 */
static int check_key(void *user, const char *key)
{
	struct shardpipe_reader *r = user;
	uint64_t s[SHARDPIPE_MAX_RANK];
	const char *p = key;

	if (!r->key_v2) {
		if (p[0] != 'c' || p[1] != r->sep)
			return SHARDPIPE_OK;
		p += 2;
	}
	for (int d = 0; d < r->rank; d++) {
		const char *q = strchr(p, r->sep);
		size_t n = q ? (size_t)(q - p) : strlen(p);

		if (parse_coord(p, n, r->grid[d], &s[d]) != 0 ||
		    (d + 1 < r->rank) != (q != NULL))
			return SHARDPIPE_OK;
		p = q ? q + 1 : p + n;
	}
	return check_object(r, s);
}

int shardpipe_reader_check(shardpipe_reader *r)
{
	if (r == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	sp_err_clear(&r->err);
	/* Keys with "/" are a tree of rank levels (below c/ by default);
	 * keys with "." lie side by side at the top. */
	if (r->sep == '/')
		return r->src->ops->list(r->src, r->key_v2 ? "" : "c", r->rank,
					 check_key, r, &r->err);
	return r->src->ops->list(r->src, "", 1, check_key, r, &r->err);
}
