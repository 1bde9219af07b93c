/*
 * reader_levels.c - a multiscale image's levels, found and recomputed
 * (doc/design.md §28.6).  The recomputation shares nothing with the
 * writer's reduce kernel (backends/kernels/reduce_block.h): it works on
 * the values the reader returns, integers through a 128-bit sum and
 * floats through the host's double arithmetic, so that a fault in either
 * one shows as a difference rather than agreeing with itself.
 */
#define _GNU_SOURCE
#include "reader_levels.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "half.h"
#include "store.h"
#include "json.h"
#include "ome.h"

#define LEVELS_META_MAX (16u << 20)
#define LEVELS_MAX 64
/* The memory one comparison of two levels may read at once. */
#define LEVELS_SLAB_BYTES (64u << 20)

/* A dataset's coordinateTransformations: its scale and translation per
 * dim (n of them; -1: absent, or not a list of numbers of at most
 * SHARDPIPE_MAX_RANK). */
struct transform {
	int ns, nt;
	double scale[SHARDPIPE_MAX_RANK], trans[SHARDPIPE_MAX_RANK];
};

struct reader_levels {
	int n;
	char *paths[LEVELS_MAX];
	struct transform tf[LEVELS_MAX];
	int method;          /* SHARDPIPE_METHOD_*, or -1: unknown */
	int append;          /* the method along dim 0 */
	char type[48];       /* the image's "type", as written */
};

int reader_levels_count(const struct reader_levels *lv)
{
	return lv->n;
}

const char *reader_levels_path(const struct reader_levels *lv, int i)
{
	return lv->paths[i];
}

void reader_levels_free(struct reader_levels *lv)
{
	if (lv == NULL)
		return;
	for (int i = 0; i < lv->n; i++)
		free(lv->paths[i]);
	free(lv);
}

/* path/zarr.json, whole, from the store path names (a directory or S3);
 * *text NULL (and OK) when there is none. */
static int read_group_meta(const char *path, char **text, size_t *len,
			   struct sp_err *err)
{
	struct source *src;
	struct source_obj *o = NULL;
	uint64_t size = 0;
	int rc;

	*text = NULL;
	*len = 0;
	/* A path that opens no store is the array reader's to explain. */
	if (source_open(&src, path, err) != SHARDPIPE_OK) {
		sp_err_clear(err);
		return SHARDPIPE_OK;
	}
	rc = src->ops->open(src, "zarr.json", &o, &size, err);
	if (rc != SHARDPIPE_OK || o == NULL) {
		/* Not an object (a directory): again the array reader's. */
		if (rc == SHARDPIPE_ERR_FORMAT) {
			sp_err_clear(err);
			rc = SHARDPIPE_OK;
		}
		src->ops->free(src);
		return rc;
	}
	if (size > LEVELS_META_MAX)
		rc = sp_err_set(err, SHARDPIPE_ERR_FORMAT,
				"%s/zarr.json: %llu bytes, over the %u a reader "
				"takes", path, (unsigned long long)size,
				LEVELS_META_MAX);
	else if ((*text = malloc((size_t)size + 1)) == NULL)
		rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	else
		rc = src->ops->read(src, o, *text, (size_t)size, 0, err);
	src->ops->close(src, o);
	src->ops->free(src);
	if (rc != SHARDPIPE_OK) {
		free(*text);
		*text = NULL;
	}
	*len = (size_t)size;
	return rc;
}

/* A dataset path that stays inside the group: a plain name. */
static int safe_name(const struct json_value *v)
{
	if (v == NULL || v->type != JSON_STRING || v->len == 0 || v->len > 64 ||
	    strnlen(v->str, v->len) != v->len || strcmp(v->str, ".") == 0 ||
	    strcmp(v->str, "..") == 0)
		return 0;
	for (size_t i = 0; i < v->len; i++) {
		char c = v->str[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

/* The numbers of list v into out: how many, or -1. */
static int numbers(const struct json_value *v, double *out)
{
	int n = 0;

	if (v == NULL || v->type != JSON_ARRAY || v->len > SHARDPIPE_MAX_RANK)
		return -1;
	for (const struct json_value *x = v->child; x != NULL; x = x->next) {
		if (x->type != JSON_NUMBER || !isfinite(x->num))
			return -1;
		out[n++] = x->num;
	}
	return n;
}

static void parse_transform(const struct json_value *d, struct transform *t)
{
	const struct json_value *ct = json_get(d, "coordinateTransformations");

	t->ns = t->nt = -1;
	if (ct == NULL || ct->type != JSON_ARRAY)
		return;
	for (const struct json_value *x = ct->child; x != NULL; x = x->next) {
		if (json_is_str(json_get(x, "type"), "scale"))
			t->ns = numbers(json_get(x, "scale"), t->scale);
		else if (json_is_str(json_get(x, "type"), "translation"))
			t->nt = numbers(json_get(x, "translation"), t->trans);
	}
}

static int method_of(const struct json_value *v)
{
	for (int m = 0; v != NULL && v->type == JSON_STRING &&
			m < SHARDPIPE_METHOD_COUNT_; m++)
		if (json_is_str(v, ome_method_name(m)))
			return m;
	return -1;
}

static int parse_group(const char *path, const struct json_value *root,
		       struct reader_levels *lv, struct sp_err *err)
{
	const struct json_value *ms, *ds, *kw;

	ms = json_get(json_get(json_get(root, "attributes"), "ome"),
		      "multiscales");
	ms = ms != NULL && ms->type == JSON_ARRAY ? json_at(ms, 0) : NULL;
	ds = json_get(ms, "datasets");
	SP_RETURN_IF(ds == NULL || ds->type != JSON_ARRAY || ds->len == 0, err,
		     SHARDPIPE_ERR_FORMAT,
		     "%s/zarr.json: a group, and not an OME-NGFF image (no "
		     "attributes.ome.multiscales[0].datasets): open one of its "
		     "arrays", path);
	SP_RETURN_IF(ds->len > LEVELS_MAX, err, SHARDPIPE_ERR_UNSUPPORTED,
		     "%s/zarr.json: %zu levels, more than the %d a reader "
		     "takes", path, ds->len, LEVELS_MAX);
	for (const struct json_value *d = ds->child; d != NULL; d = d->next) {
		const struct json_value *p = json_get(d, "path");

		SP_RETURN_IF(!safe_name(p), err, SHARDPIPE_ERR_FORMAT,
			     "%s/zarr.json: dataset %d's path is not a plain "
			     "name inside the group", path, lv->n);
		if (asprintf(&lv->paths[lv->n], "%s/%s", path, p->str) < 0)
			return sp_err_set(err, SHARDPIPE_ERR_NOMEM,
					  "out of memory");
		parse_transform(d, &lv->tf[lv->n]);
		lv->n++;
	}
	lv->method = method_of(json_get(ms, "type"));
	if (json_get(ms, "type") != NULL &&
	    json_get(ms, "type")->type == JSON_STRING)
		snprintf(lv->type, sizeof(lv->type), "%.*s",
			 (int)json_get(ms, "type")->len,
			 json_get(ms, "type")->str);
	kw = json_get(json_get(ms, "metadata"), "kwargs");
	lv->append = json_get(kw, "append_method") != NULL ?
			     method_of(json_get(kw, "append_method")) :
			     lv->method;
	if (lv->append < 0)
		lv->method = -1;
	return SHARDPIPE_OK;
}

int reader_levels_find(const char *path, struct reader_levels **out,
		       struct sp_err *err)
{
	static const struct json_limits limits = {
		.max_depth = 64,
		.max_bytes = 128u << 20,
		.max_number_len = 1024,
	};
	struct reader_levels *lv;
	struct json_error je;
	struct json_doc *doc;
	char *text;
	size_t len;
	int rc;

	*out = NULL;
	SP_FORWARD(read_group_meta(path, &text, &len, err));
	if (text == NULL)
		return SHARDPIPE_OK;
	doc = json_parse(text, len, &limits, &je);
	free(text);
	/* Not JSON, or not a group: the array's reader says what is wrong. */
	if (doc == NULL ||
	    !json_is_str(json_get(json_root(doc), "node_type"), "group")) {
		json_free(doc);
		return SHARDPIPE_OK;
	}
	lv = calloc(1, sizeof(*lv));
	if (lv == NULL) {
		json_free(doc);
		return sp_err_set(err, SHARDPIPE_ERR_NOMEM, "out of memory");
	}
	rc = parse_group(path, json_root(doc), lv, err);
	json_free(doc);
	if (rc != SHARDPIPE_OK) {
		reader_levels_free(lv);
		return rc;
	}
	*out = lv;
	return SHARDPIPE_OK;
}

/* ------------------------------------------------------- the recomputation */

enum kind { K_UNSIGNED, K_SIGNED, K_FLOAT };

struct elem {
	shardpipe_dtype t;
	size_t size;
	enum kind kind;
};

static struct elem elem_of(shardpipe_dtype t)
{
	struct elem e = { t, shardpipe_dtype_size(t), K_UNSIGNED };

	if (t >= SHARDPIPE_DTYPE_INT8 && t <= SHARDPIPE_DTYPE_INT64)
		e.kind = K_SIGNED;
	else if (t >= SHARDPIPE_DTYPE_FLOAT16)
		e.kind = K_FLOAT;
	return e;
}

/* The element at p, as the reader returns it (native byte order). */
static uint64_t load(const struct elem *e, const uint8_t *p)
{
	uint8_t b8;
	uint16_t b16;
	uint32_t b32;
	uint64_t b64;

	switch (e->size) {
	case 1:
		memcpy(&b8, p, 1);
		return b8;
	case 2:
		memcpy(&b16, p, 2);
		return b16;
	case 4:
		memcpy(&b32, p, 4);
		return b32;
	default:
		memcpy(&b64, p, 8);
		return b64;
	}
}

static int64_t as_signed(const struct elem *e, uint64_t v)
{
	unsigned w = 8 * (unsigned)e->size;

	return w == 64 ? (int64_t)v
		       : (int64_t)(v ^ (1ull << (w - 1))) - (1ll << (w - 1));
}

static double as_double(const struct elem *e, uint64_t v)
{
	float f;
	double d;
	uint32_t u = (uint32_t)v;

	if (e->size == 2)
		return sp_half_to_double((uint16_t)v);
	if (e->size == 4) {
		memcpy(&f, &u, 4);
		return f;
	}
	memcpy(&d, &v, 8);
	return d;
}

/* A double of the element's format back to its bits; a NaN is the
 * quiet one. */
static uint64_t from_double(const struct elem *e, double x)
{
	float f = (float)x;
	uint32_t u;
	uint64_t v;

	if (e->size == 2)
		return sp_double_to_half(x);
	if (e->size == 4) {
		if (isnan(x))
			return 0x7fc00000u;
		memcpy(&u, &f, 4);
		return u;
	}
	if (isnan(x))
		return 0x7ff8000000000000ull;
	memcpy(&v, &x, 8);
	return v;
}

/* (a + b) / 2 rounded once to the element's format.  binary16's sum is
 * exact in a double; binary32's rounds there first, which cannot change
 * its rounding to 24 bits (53 >= 2 * 24 + 2); binary64's sum halves
 * exactly unless it overflowed, when the halves are summed instead. */
static double avg2(const struct elem *e, double a, double b)
{
	double s = a + b;

	if (e->size == 2)
		return sp_half_to_double(sp_double_to_half(s / 2));
	if (e->size == 4)
		return (float)(s / 2);
	if (isinf(s) && isfinite(a) && isfinite(b))
		return a / 2 + b / 2;
	return s / 2;
}

static double mean_tree(const struct elem *e, const double *x, int n)
{
	if (n == 1)
		return x[0];
	return avg2(e, mean_tree(e, x, n / 2), mean_tree(e, x + n / 2, n / 2));
}

/* Value order: floats with -0 below +0 and NaNs above everything. */
static int before(const struct elem *e, uint64_t a, uint64_t b)
{
	double x, y;

	if (e->kind == K_UNSIGNED)
		return a < b;
	if (e->kind == K_SIGNED)
		return as_signed(e, a) < as_signed(e, b);
	x = as_double(e, a);
	y = as_double(e, b);
	if (isnan(x) || isnan(y))
		return !isnan(x) && isnan(y);
	return x < y || (x == y && signbit(x) && !signbit(y));
}

static uint64_t mean_int(const struct elem *e, const uint64_t *v, int n)
{
	unsigned w = 8 * (unsigned)e->size;
	uint64_t mask = w == 64 ? ~0ull : (1ull << w) - 1;
	__int128 sum = 0, q, r;

	for (int i = 0; i < n; i++)
		sum += e->kind == K_SIGNED ? (__int128)as_signed(e, v[i])
					   : (__int128)v[i];
	q = sum / n;
	r = sum % n;
	if (r < 0) {
		q -= 1;
		r += n;
	}
	if (2 * r > n || (2 * r == n && (q & 1) != 0))
		q++;
	return (uint64_t)q & mask;
}

/* The block's values reduced by one method. */
static uint64_t reduce_plain(const struct elem *e, int method,
			     const uint64_t *v, int n)
{
	double x[16];
	int order[16];

	if (method == SHARDPIPE_METHOD_DECIMATE)
		return v[0];
	if (e->kind == K_FLOAT && method != SHARDPIPE_METHOD_MEDIAN &&
	    method != SHARDPIPE_METHOD_SECOND_MAX &&
	    method != SHARDPIPE_METHOD_SECOND_MIN)
		for (int i = 0; i < n; i++)
			if (isnan(as_double(e, v[i])))
				return v[i];
	if (method == SHARDPIPE_METHOD_MEAN && e->kind != K_FLOAT)
		return mean_int(e, v, n);
	if (method == SHARDPIPE_METHOD_MEAN) {
		for (int i = 0; i < n; i++)
			x[i] = as_double(e, v[i]);
		return from_double(e, mean_tree(e, x, n));
	}
	if (method == SHARDPIPE_METHOD_MIN || method == SHARDPIPE_METHOD_MAX) {
		uint64_t best = v[0];

		for (int i = 1; i < n; i++)
			if (method == SHARDPIPE_METHOD_MIN ? before(e, v[i], best)
							   : before(e, best, v[i]))
				best = v[i];
		return best;
	}
	/* The ranked methods: an insertion sort of positions, stable, so
	 * that equal values keep their block order; the median the lower
	 * middle, then the second from the top or from the bottom. */
	for (int i = 0; i < n; i++) {
		int j = i;

		while (j > 0 && before(e, v[i], v[order[j - 1]])) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = i;
	}
	if (n == 1)
		return v[0];
	if (method == SHARDPIPE_METHOD_SECOND_MAX)
		return v[order[n - 2]];
	if (method == SHARDPIPE_METHOD_SECOND_MIN)
		return v[order[1]];
	return v[order[n / 2 - 1]];
}

/* One level's element from its block (values in block order, dim 0's
 * rows first), by the image's method and append method. */
static uint64_t reduce_block(const struct reader_levels *lv,
			     const struct elem *e, int rows,
			     const uint64_t *v, int n)
{
	uint64_t two[2];

	if (rows == 1 || lv->append == lv->method)
		return reduce_plain(e, lv->method, v, n);
	two[0] = reduce_plain(e, lv->method, v, n / 2);
	two[1] = reduce_plain(e, lv->method, v + n / 2, n / 2);
	return reduce_plain(e, lv->append, two, 2);
}

struct pair {
	shardpipe_reader *lo, *hi;      /* the level below, the level */
	shardpipe_array_info a, b;      /* hi's, lo's */
	int f[SHARDPIPE_MAX_RANK];      /* 2: the dim halved */
	int level;
};

/* Which dims halved from lo to hi, from their shapes alone. */
static int factors(struct pair *p, struct sp_err *err)
{
	SP_RETURN_IF(p->a.rank != p->b.rank || p->a.dtype != p->b.dtype, err,
		     SHARDPIPE_ERR_CORRUPT,
		     "level %d: rank %d %s, but level %d is rank %d %s",
		     p->level, p->a.rank, shardpipe_dtype_name(p->a.dtype),
		     p->level - 1, p->b.rank, shardpipe_dtype_name(p->b.dtype));
	for (int d = 0; d < p->a.rank; d++) {
		uint64_t below = p->b.shape[d], here = p->a.shape[d];

		if (here == below)
			p->f[d] = 1;
		else if (below > 1 && here == below / 2 + below % 2)
			p->f[d] = 2;
		else
			return sp_err_set(err, SHARDPIPE_ERR_CORRUPT,
					  "level %d: dim %d is %llu, neither "
					  "level %d's %llu nor half of it",
					  p->level, d, (unsigned long long)here,
					  p->level - 1,
					  (unsigned long long)below);
	}
	return SHARDPIPE_OK;
}

static uint64_t row_bytes(const shardpipe_array_info *in)
{
	uint64_t n = shardpipe_dtype_size(in->dtype);

	for (int d = 1; d < in->rank; d++)
		n *= in->shape[d];
	return n;
}

static int read_rows(shardpipe_reader *r, const shardpipe_array_info *in,
		     uint64_t first, uint64_t n, uint8_t *buf, size_t cap,
		     int level, struct sp_err *err)
{
	uint64_t start[SHARDPIPE_MAX_RANK] = { 0 }, count[SHARDPIPE_MAX_RANK];
	int rc;

	start[0] = first;
	count[0] = n;
	for (int d = 1; d < in->rank; d++)
		count[d] = in->shape[d];
	rc = shardpipe_reader_read(r, start, count, buf, cap);
	SP_RETURN_IF(rc != SHARDPIPE_OK, err, rc, "level %d: %s", level,
		     shardpipe_reader_message(r));
	return SHARDPIPE_OK;
}

/* "(r, y, x)" of a coordinate. */
static const char *coords_str(char *buf, size_t size, const uint64_t *y,
			      int rank)
{
	size_t n = (size_t)snprintf(buf, size, "(");

	for (int d = 0; d < rank && n < size; d++)
		n += (size_t)snprintf(buf + n, size - n, "%s%llu", d ? ", " : "",
				      (unsigned long long)y[d]);
	snprintf(buf + n < buf + size ? buf + n : buf + size - 1,
		 n < size ? size - n : 1, ")");
	return buf;
}

/*
 * Level p->level's rows first .. first+n-1 (in hi) against its block of
 * level - 1's rows (in lo, from row lo_first): every element's block
 * gathered in block order, edges replicated, and reduced.
 */
static int compare_rows(const struct reader_levels *lv, const struct pair *p,
			const uint8_t *hi, uint64_t first, uint64_t n,
			const uint8_t *lo, uint64_t lo_first,
			struct sp_err *err)
{
	const struct elem e = elem_of(p->a.dtype);
	const int rank = p->a.rank;
	uint64_t y[SHARDPIPE_MAX_RANK] = { 0 }, lo_stride[SHARDPIPE_MAX_RANK];
	uint64_t v[16];
	int halving[SHARDPIPE_MAX_RANK], k = 0;

	for (int d = rank - 1; d >= 0; d--)
		lo_stride[d] = d == rank - 1 ? 1 : lo_stride[d + 1] *
							   p->b.shape[d + 1];
	for (int d = 0; d < rank; d++)
		if (p->f[d] == 2)
			halving[k++] = d;
	for (uint64_t i = 0;; i++) {
		uint64_t got = load(&e, hi + i * e.size), want;
		int nb = 1 << k;

		for (int j = 0; j < nb; j++) {
			uint64_t off = 0;

			for (int d = 0; d < rank; d++) {
				/* Rows count from `first` in hi and from
				 * lo_first in lo: the block and its edge
				 * are found in the array's own rows. */
				uint64_t x = (y[d] + (d == 0 ? first : 0)) *
					     (uint64_t)p->f[d];

				for (int h = 0; h < k; h++)
					if (halving[h] == d)
						x += (uint64_t)(j >> (k - 1 - h)) & 1;
				if (x >= p->b.shape[d])
					x = p->b.shape[d] - 1;
				if (d == 0)
					x -= lo_first;
				off += x * lo_stride[d];
			}
			v[j] = load(&e, lo + off * e.size);
		}
		want = reduce_block(lv, &e, p->f[0], v, nb);
		if (got != want) {
			char at[SHARDPIPE_MAX_RANK * 22 + 4];
			uint64_t abs[SHARDPIPE_MAX_RANK];

			memcpy(abs, y, sizeof(abs));
			abs[0] += first;
			return sp_err_set(err, SHARDPIPE_ERR_CORRUPT,
					  "level %d: element %s is 0x%0*llx, "
					  "level %d reduced by %s gives 0x%0*llx",
					  p->level,
					  coords_str(at, sizeof(at), abs, rank),
					  (int)(2 * e.size),
					  (unsigned long long)got, p->level - 1,
					  lv->type, (int)(2 * e.size),
					  (unsigned long long)want);
		}
		/* Next coordinate, rows relative to `first`. */
		int d = rank - 1;

		for (; d >= 0; d--) {
			if (++y[d] < (d == 0 ? n : p->a.shape[d]))
				break;
			y[d] = 0;
		}
		if (d < 0)
			return SHARDPIPE_OK;
	}
}

/* Level `level` against level - 1 reduced, a slab of rows at a time. */
static int compare_level(const struct reader_levels *lv, int level,
			 int *f, int *rank, struct sp_err *err)
{
	struct pair p = { .level = level };
	uint64_t ra, rb, slab;
	uint8_t *hi = NULL, *lo = NULL;
	int rc;

	rc = shardpipe_reader_open(&p.lo, lv->paths[level - 1]);
	if (rc == SHARDPIPE_OK)
		rc = shardpipe_reader_open(&p.hi, lv->paths[level]);
	if (rc != SHARDPIPE_OK) {
		sp_err_set(err, rc, "%s", shardpipe_last_error_message());
		goto out;
	}
	shardpipe_reader_info(p.hi, &p.a);
	shardpipe_reader_info(p.lo, &p.b);
	/* The reader opens an image at its level 0: a level that is an
	 * image would compare its own level 0, not itself. */
	if (p.a.levels != 0 || p.b.levels != 0) {
		rc = sp_err_set(err, SHARDPIPE_ERR_CORRUPT,
				"level %d: %s is an OME-NGFF image, not an "
				"array", p.a.levels != 0 ? level : level - 1,
				lv->paths[p.a.levels != 0 ? level : level - 1]);
		goto out;
	}
	if ((rc = factors(&p, err)) != SHARDPIPE_OK)
		goto out;
	memcpy(f, p.f, sizeof(p.f));
	*rank = p.a.rank;
	ra = row_bytes(&p.a);
	rb = row_bytes(&p.b);
	/* Every size is the reader's, checked when it opened. */
	slab = LEVELS_SLAB_BYTES / (ra + (uint64_t)p.f[0] * rb + 1);
	if (slab < 1)
		slab = 1;
	if (slab > p.a.shape[0])
		slab = p.a.shape[0];
	hi = malloc((size_t)(slab * ra) + 1);
	lo = malloc((size_t)(slab * (uint64_t)p.f[0] * rb) + 1);
	if (hi == NULL || lo == NULL) {
		rc = sp_err_set(err, SHARDPIPE_ERR_NOMEM,
				"out of memory for a slab of level %d", level);
		goto out;
	}
	for (uint64_t r0 = 0; r0 < p.a.shape[0] && rc == SHARDPIPE_OK;
	     r0 += slab) {
		uint64_t n = p.a.shape[0] - r0 < slab ? p.a.shape[0] - r0 : slab;
		uint64_t l0 = r0 * (uint64_t)p.f[0], ln = n * (uint64_t)p.f[0];

		if (l0 + ln > p.b.shape[0])
			ln = p.b.shape[0] - l0;
		rc = read_rows(p.hi, &p.a, r0, n, hi, (size_t)(slab * ra),
			       level, err);
		if (rc == SHARDPIPE_OK)
			rc = read_rows(p.lo, &p.b, l0, ln, lo,
				       (size_t)(slab * p.f[0] * rb), level - 1,
				       err);
		if (rc == SHARDPIPE_OK && ra > 0)
			rc = compare_rows(lv, &p, hi, r0, n, lo, l0, err);
	}
out:
	free(hi);
	free(lo);
	shardpipe_reader_close(p.hi);
	shardpipe_reader_close(p.lo);
	return rc;
}

/* Whether a and b agree to the digits a writer prints (17). */
static int near(double a, double b)
{
	return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b));
}

/*
 * Level L's scale and translation, against level 0's and the factor
 * F[d] by which its dims shrank since (design §28.4): the scale F times
 * level 0's, the translation level 0's plus (F - 1) / 2 of level 0's
 * elements, or plus none for a decimated dim; a translation left out
 * is not checked.
 */
static int check_transform(const struct reader_levels *lv, int L, int rank,
			   const uint64_t *F, struct sp_err *err)
{
	const struct transform *t0 = &lv->tf[0], *t = &lv->tf[L];

	SP_RETURN_IF(t0->ns != rank || t->ns != rank, err,
		     SHARDPIPE_ERR_CORRUPT,
		     "level %d: no scale of %d numbers in its dataset's "
		     "coordinateTransformations", t0->ns != rank ? 0 : L, rank);
	for (int d = 0; d < rank; d++) {
		int m = d == 0 ? lv->append : lv->method;
		double s = t0->scale[d] * (double)F[d];
		double o0 = t0->nt == rank ? t0->trans[d] : 0;
		double o = o0 + (m == SHARDPIPE_METHOD_DECIMATE
					 ? 0
					 : t0->scale[d] * ((double)F[d] - 1) / 2);


		SP_RETURN_IF(!near(t->scale[d], s), err, SHARDPIPE_ERR_CORRUPT,
			     "level %d: dim %d's scale is %.17g, but its "
			     "elements cover %llu of level 0's (scale %.17g): "
			     "%.17g", L, d, t->scale[d],
			     (unsigned long long)F[d], t0->scale[d], s);
		/* Optional in OME-NGFF: a writer that leaves it out says
		 * nothing wrong. */
		SP_RETURN_IF(t->nt == rank && !near(t->trans[d], o), err,
			     SHARDPIPE_ERR_CORRUPT,
			     "level %d: dim %d's translation is %.17g, %.17g "
			     "for elements covering %llu of level 0's by %s", L,
			     d, t->trans[d], o, (unsigned long long)F[d],
			     ome_method_name(m));
	}
	return SHARDPIPE_OK;
}

int reader_levels_check(const struct reader_levels *lv, int *recomputed,
			struct sp_err *err)
{
	uint64_t F[SHARDPIPE_MAX_RANK];

	for (int d = 0; d < SHARDPIPE_MAX_RANK; d++)
		F[d] = 1;
	*recomputed = lv->method >= 0;
	for (int L = 1; L < lv->n; L++) {
		int f[SHARDPIPE_MAX_RANK], rank = 0;

		shardpipe_reader *r;
		int rc = shardpipe_reader_open(&r, lv->paths[L]);

		if (rc == SHARDPIPE_OK && (rc = shardpipe_reader_check(r)) !=
						  SHARDPIPE_OK)
			sp_err_set(err, rc, "level %d: %s", L,
				   shardpipe_reader_message(r));
		else if (rc != SHARDPIPE_OK)
			sp_err_set(err, rc, "level %d: %s", L,
				   shardpipe_last_error_message());
		shardpipe_reader_close(r);
		SP_FORWARD(rc);
		if (!*recomputed)
			continue;
		SP_FORWARD(compare_level(lv, L, f, &rank, err));
		for (int d = 0; d < rank; d++)
			F[d] *= (uint64_t)f[d];
		SP_FORWARD(check_transform(lv, L, rank, F, err));
	}
	return SHARDPIPE_OK;
}
