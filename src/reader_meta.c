/*
 * reader_meta.c - zarr.json into the reader's state: the shape, the data
 * type and fill value, the chunk grid and key encoding, and the codec chain
 * (doc/design.md §9).
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
#include "reader_impl.h"
#include "codec.h"
#include "json.h"

#include <math.h>
#include <stdlib.h>
#ifdef HAVE_BLOSC
#include <blosc.h>
#endif

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

int reader_open_store(struct shardpipe_reader *r)
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
	/* A kept tree's values point into the text (json_value.raw). */
	if (doc != NULL && r->keep_meta)
		r->meta_text = text;
	else
		free(text);
	if (doc == NULL)
		return META_FAIL(r, SHARDPIPE_ERR_FORMAT,
				 "line %d column %d: %s", r->path, je.line,
				 je.col, je.msg);
	rc = parse_metadata(r, json_root(doc));
	if (rc == SHARDPIPE_OK && r->keep_meta) {
		r->meta = doc;
	} else {
		json_free(doc);
		free(r->meta_text);
		r->meta_text = NULL;
	}
	return rc;
}
