#include "zarr_meta.h"

#include "codec.h"
#include "half.h"
#include "ome.h"

#include <math.h>
#include <stdlib.h>

struct sbuf {
	char *p;
	size_t len, cap;
	int failed;
};

__attribute__((format(printf, 2, 3)))
static void put(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->failed)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(b->p + b->len, b->cap - b->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->failed = 1;
			return;
		}
		if ((size_t)n < b->cap - b->len)
			break;
		size_t cap = 2 * b->cap + (size_t)n;
		char *np = realloc(b->p, cap);
		if (np == NULL) {
			b->failed = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	b->len += (size_t)n;
}

static void put_list(struct sbuf *b, const uint64_t *v, int n)
{
	put(b, "[");
	for (int i = 0; i < n; i++)
		put(b, "%s%llu", i ? ", " : "", (unsigned long long)v[i]);
	put(b, "]");
}

static const char *const dtype_names[SHARDPIPE_DTYPE_COUNT_] = {
	"bool", "int8", "int16", "int32", "int64", "uint8", "uint16",
	"uint32", "uint64", "float16", "float32", "float64",
};

const char *zarr_dtype_name(shardpipe_dtype t)
{
	return (unsigned)t < SHARDPIPE_DTYPE_COUNT_ ? dtype_names[t] : NULL;
}

/* The fill value's bit pattern, from the plan's little-endian copy. */
static uint64_t fill_bits(const struct plan *p)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < p->esize; i++)
		v |= (uint64_t)p->fill_le[i] << (8 * i);
	return v;
}

/*
 * The fill value in the Zarr v3 core spec's JSON form: false/true, an
 * integer, or for floats a number, "Infinity", "-Infinity", "NaN" (the
 * spec's NaN: quiet, positive, no payload) or, for any other NaN, the bit
 * pattern as "0x" and 2 * size hex digits, so that the value is exact.
 */
static void put_fill(struct sbuf *b, const struct plan *p)
{
	uint64_t bits = fill_bits(p);
	unsigned w = 8 * p->esize;
	uint64_t exp_mask, frac_mask, quiet;
	double x;
	char num[40];

	switch (p->dtype) {
	case SHARDPIPE_DTYPE_BOOL:
		put(b, "%s", bits ? "true" : "false");
		return;
	case SHARDPIPE_DTYPE_INT8:
	case SHARDPIPE_DTYPE_INT16:
	case SHARDPIPE_DTYPE_INT32:
	case SHARDPIPE_DTYPE_INT64:
		/* Sign-extend the low w bits. */
		put(b, "%lld", w == 64 ? (long long)bits
			       : (long long)(bits ^ (1ull << (w - 1))) -
					 (1ll << (w - 1)));
		return;
	case SHARDPIPE_DTYPE_FLOAT16:
		exp_mask = 0x7c00;
		frac_mask = 0x3ff;
		quiet = 0x7e00;
		x = sp_half_to_double((uint16_t)bits);
		break;
	case SHARDPIPE_DTYPE_FLOAT32: {
		uint32_t u = (uint32_t)bits;
		float f;

		memcpy(&f, &u, 4);
		exp_mask = 0x7f800000;
		frac_mask = 0x7fffff;
		quiet = 0x7fc00000;
		x = f;
		break;
	}
	case SHARDPIPE_DTYPE_FLOAT64:
		exp_mask = 0x7ff0000000000000ull;
		frac_mask = 0xfffffffffffffull;
		quiet = 0x7ff8000000000000ull;
		memcpy(&x, &bits, 8);
		break;
	default:
		put(b, "%llu", (unsigned long long)bits);
		return;
	}
	if ((bits & exp_mask) == exp_mask && (bits & frac_mask) != 0) {
		if (bits == quiet)
			put(b, "\"NaN\"");
		else
			put(b, "\"0x%0*llx\"", (int)(2 * p->esize),
			    (unsigned long long)bits);
		return;
	}
	if (isinf(x)) {
		put(b, "%s", x < 0 ? "\"-Infinity\"" : "\"Infinity\"");
		return;
	}
	/* 17 significant digits give back the same double, hence the same
	 * float32 or float16 after the reader's rounding. */
	snprintf(num, sizeof(num), "%.17g", x);
	put(b, "%s%s", num, strpbrk(num, ".e") == NULL ? ".0" : "");
}

/* The bytes codec: "endian" is required except for one-byte types, where
 * some readers refuse it. */
static void put_bytes_codec(struct sbuf *b, unsigned esize)
{
	if (esize == 1)
		put(b, "{\"name\": \"bytes\", \"configuration\": {}}");
	else
		put(b, "{\"name\": \"bytes\", \"configuration\": "
		       "{\"endian\": \"little\"}}");
}

/* The user attributes, one per line (§15.4); keys are quoted already. */
static void put_attrs(struct sbuf *b, const struct attrs *a)
{
	put(b, "{");
	for (size_t i = 0; a != NULL && i < a->n; i++)
		put(b, "%s\n    %.*s: %s", i ? "," : "",
		    (int)a->v[i].key_len, a->v[i].key, a->v[i].value);
	put(b, "%s}", a != NULL && a->n > 0 ? "\n  " : "");
}

int zarr_meta_render(const struct plan *p, uint64_t rows,
		     const struct attrs *attrs, char **out, size_t *len,
		     struct sp_err *err)
{
	struct sbuf b = { .cap = 2048 };
	uint64_t shape[SHARDPIPE_MAX_RANK], shard[SHARDPIPE_MAX_RANK];
	uint64_t chunk[SHARDPIPE_MAX_RANK];
	const char *names[SHARDPIPE_MAX_RANK];

	b.p = malloc(b.cap);
	SP_RETURN_IF(b.p == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for zarr.json");
	/* The plan's dims in storage order (design §3.3): the rows grow
	 * the append dim wherever it is stored. */
	for (int d = 0; d < p->rank; d++) {
		shape[d] = d == 0 ? rows : p->size[d];
		shard[d] = p->chunk[d] * p->cps[d];
		names[p->sdim[d]] = p->names[d];
	}
	plan_to_storage(p, shape, shape);
	plan_to_storage(p, shard, shard);
	plan_to_storage(p, p->chunk, chunk);
	put(&b, "{\n  \"zarr_format\": 3,\n  \"node_type\": \"array\",\n");
	put(&b, "  \"shape\": ");
	put_list(&b, shape, p->rank);
	put(&b, ",\n  \"data_type\": \"%s\",\n", zarr_dtype_name(p->dtype));
	put(&b, "  \"chunk_grid\": {\"name\": \"regular\", \"configuration\": "
		"{\"chunk_shape\": ");
	put_list(&b, shard, p->rank);
	put(&b, "}},\n  \"chunk_key_encoding\": {\"name\": \"default\", "
		"\"configuration\": {\"separator\": \"/\"}},\n");
	put(&b, "  \"fill_value\": ");
	put_fill(&b, p);
	put(&b, ",\n");
	put(&b, "  \"codecs\": [{\"name\": \"sharding_indexed\", "
		"\"configuration\": {\n    \"chunk_shape\": ");
	put_list(&b, chunk, p->rank);
	put(&b, ",\n    \"codecs\": [");
	put_bytes_codec(&b, p->esize);
	if (p->codec == SHARDPIPE_CODEC_ZSTD)
		put(&b, ", {\"name\": \"zstd\", \"configuration\": "
			"{\"level\": %d, \"checksum\": %s}}",
		    p->level_default ? 0 : p->level,
		    p->zstd_checksum ? "true" : "false");
	else if (p->codec == SHARDPIPE_CODEC_GZIP)
		put(&b, ", {\"name\": \"gzip\", \"configuration\": "
			"{\"level\": %d}}", p->level);
	else if (p->codec == SHARDPIPE_CODEC_BLOSC)
		/* Blosc codec spec v1.0: typesize is required unless the
		 * shuffle is "noshuffle"; it is written always, as the
		 * dtype's size, which is what the shuffle used. */
		put(&b, ", {\"name\": \"blosc\", \"configuration\": "
			"{\"cname\": \"%s\", \"clevel\": %d, \"shuffle\": "
			"\"%s\", \"typesize\": %u, \"blocksize\": %u}}",
		    codec_blosc_cname(p->blosc_cname), p->level,
		    codec_blosc_shuffle(p->blosc_shuffle), p->esize,
		    p->blosc_blocksize);
	put(&b, "],\n    \"index_codecs\": [{\"name\": \"bytes\", "
		"\"configuration\": {\"endian\": \"little\"}}, "
		"{\"name\": \"crc32c\"}],\n");
	put(&b, "    \"index_location\": \"%s\"\n  }}],\n",
	    p->index_location == SHARDPIPE_INDEX_START ? "start" : "end");
	put(&b, "  \"attributes\": ");
	put_attrs(&b, attrs);
	put(&b, ",\n  \"dimension_names\": [");
	for (int d = 0; d < p->rank; d++) {
		/* Names were checked at open: no quotes or escapes needed. */
		if (names[d][0] != '\0')
			put(&b, "%s\"%s\"", d ? ", " : "", names[d]);
		else
			put(&b, "%snull", d ? ", " : "");
	}
	put(&b, "]\n}\n");
	if (b.failed) {
		free(b.p);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
				  "out of memory for zarr.json");
	}
	*out = b.p;
	*len = b.len;
	return SHARDPIPE_OK;
}

/* A number of a coordinate transformation: finite, in JSON's form. */
static void put_double_list(struct sbuf *b, const double *v, int n)
{
	put(b, "[");
	for (int i = 0; i < n; i++)
		put(b, "%s%.17g", i ? ", " : "", v[i]);
	put(b, "]");
}

/* An OME-NGFF image's "ome" attribute (doc/design.md §28.4): the axes and
 * one dataset per level. */
static void put_ome(struct sbuf *b, const struct plan_levels *pl,
		    const struct plan *p0)
{
	int first = 1;

	put(b, "\"ome\": {\n      \"version\": \"0.5\",\n"
	       "      \"multiscales\": [{\n");
	/* A constant name: the same image writes the same bytes wherever
	 * it is stored. */
	put(b, "        \"name\": \"image\",\n        \"type\": \"%s\",\n",
	    ome_method_name(pl->method));
	put(b, "        \"metadata\": {\"description\": \"each element of "
	       "a level reduces a block of the level below\", \"method\": "
	       "\"shardpipe\", \"version\": \"%s\", \"kwargs\": "
	       "{\"method\": \"%s\", \"append_method\": \"%s\", "
	       "\"downsample\": [",
	    shardpipe_version(), ome_method_name(pl->method),
	    ome_method_name(pl->append_method >= 0 ? pl->append_method
						   : pl->method));
	/* Per dim in storage order, the axes' order (design §3.3). */
	for (int d = 0; d < p0->rank; d++)
		if ((pl->downsample >> d & 1) != 0) {
			put(b, "%s\"%s\"", first ? "" : ", ",
			    p0->names[plan_dim_of(p0, d)]);
			first = 0;
		}
	put(b, "]");
	/* The dims' own stops, only where there are any, so that an
	 * isotropic image's bytes stay what they were. */
	first = 1;
	for (int d = 0; d < p0->rank; d++)
		if (pl->stop[d] != 0) {
			put(b, "%s\"%s\": %d", first ? ", \"stop\": {" : ", ",
			    p0->names[plan_dim_of(p0, d)], pl->stop[d]);
			first = 0;
		}
	put(b, "%s}},\n        \"axes\": [", first ? "" : "}");
	for (int d = 0; d < p0->rank; d++) {
		/* Names were checked at open: no quotes or escapes. */
		put(b, "%s\n          {\"name\": \"%s\", \"type\": \"%s\"",
		    d ? "," : "", p0->names[plan_dim_of(p0, d)],
		    pl->axis_type[d]);
		if (pl->unit[d][0] != '\0')
			put(b, ", \"unit\": \"%s\"", pl->unit[d]);
		put(b, "}");
	}
	put(b, "\n        ],\n        \"datasets\": [");
	for (int L = 0; L < pl->n; L++) {
		put(b, "%s\n          {\"path\": \"%d\", "
		       "\"coordinateTransformations\": [{\"type\": \"scale\", "
		       "\"scale\": ", L ? "," : "", L);
		put_double_list(b, pl->scale[L], p0->rank);
		put(b, "}, {\"type\": \"translation\", \"translation\": ");
		put_double_list(b, pl->translation[L], p0->rank);
		put(b, "}]}");
	}
	put(b, "\n        ]\n      }]\n    }");
}

int zarr_meta_group(const struct plan_levels *pl, const struct plan *p0,
		    const struct attrs *attrs, char **out, size_t *len,
		    struct sp_err *err)
{
	struct sbuf b = { .cap = pl != NULL ? 4096 : 256 };

	b.p = malloc(b.cap);
	SP_RETURN_IF(b.p == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for the group's zarr.json");
	put(&b, "{\n  \"zarr_format\": 3,\n  \"node_type\": \"group\",\n"
		"  \"attributes\": ");
	if (pl == NULL) {
		put_attrs(&b, attrs);
	} else {
		put(&b, "{\n    ");
		put_ome(&b, pl, p0);
		/* The user's attributes beside "ome", which they may not
		 * use. */
		for (size_t i = 0; attrs != NULL && i < attrs->n; i++)
			put(&b, ",\n    %.*s: %s", (int)attrs->v[i].key_len,
			    attrs->v[i].key, attrs->v[i].value);
		put(&b, "\n  }");
	}
	put(&b, "\n}\n");
	if (b.failed) {
		free(b.p);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
				  "out of memory for the group's zarr.json");
	}
	*out = b.p;
	*len = b.len;
	return SHARDPIPE_OK;
}
