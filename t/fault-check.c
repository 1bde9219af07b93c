/*
 * fault-check.c - the reliability tests' own store checker (see
 * fault-check.h).  Written against the specs (sharding_indexed v1.0,
 * crc32c, RFC 8259), not against the library's code.
 */
#define _GNU_SOURCE
#include "fault-check.h"
#include "tap.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define EMPTY UINT64_MAX

void fc_geom_from_desc(struct fc_geom *g, const shardpipe_desc *d)
{
	memset(g, 0, sizeof(*g));
	g->rank = d->rank;
	for (int k = 0; k < d->rank; k++) {
		g->size[k] = d->dims[k].size;
		g->chunk[k] = d->dims[k].chunk;
		g->cps[k] = d->dims[k].chunks_per_shard;
	}
	g->esize = shardpipe_dtype_size(d->dtype);
	g->codec = (int)d->codec;
	g->index_start = d->index_location == SHARDPIPE_INDEX_START;
}

uint64_t fc_row_bytes(const struct fc_geom *g)
{
	uint64_t n = g->esize;

	for (int d = 1; d < g->rank; d++)
		n *= g->size[d];
	return n;
}

uint8_t *fc_rows_input(const struct fc_geom *g, int rows, uint64_t *rng,
		       size_t *row_bytes, size_t *bytes)
{
	size_t rb = (size_t)fc_row_bytes(g);
	uint8_t *in = malloc((size_t)rows * rb);

	if (in == NULL)
		bail("out of memory");
	for (int r = 0; r < rows; r++)
		test_fill(in + r * rb, rb, (int)(test_rand(rng) % 4), rng);
	*row_bytes = rb;
	*bytes = (size_t)rows * rb;
	return in;
}

__attribute__((format(printf, 3, 4)))
static int why_set(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -1;
}

/* Is dim-0 row r part of the array the writer was given? */
static const uint8_t *row_at(const struct fc_geom *g, fc_row_fn row,
			     void *user, uint64_t r)
{
	if (g->size[0] != 0 && r >= g->size[0])
		return NULL;
	return row(user, r);
}

/*
 * The expected bytes of the chunk at origin o[] (fill 0 outside the array
 * and beyond what was appended).  Returns 1 when any cell holds data.
 */
static int expected_chunk(const struct fc_geom *g, const uint64_t *o,
			  fc_row_fn row, void *user, uint8_t *out)
{
	uint64_t e[SHARDPIPE_MAX_RANK] = { 0 }, stride[SHARDPIPE_MAX_RANK];
	uint64_t cached_r = UINT64_MAX;
	const uint8_t *rp = NULL;
	size_t at = 0;
	int any = 0;

	stride[g->rank - 1] = 1;
	for (int d = g->rank - 2; d >= 1; d--)
		stride[d] = stride[d + 1] * g->size[d + 1];
	for (;;) {
		int inside = 1;
		uint64_t off = 0;

		for (int d = 1; d < g->rank; d++) {
			if (o[d] + e[d] >= g->size[d])
				inside = 0;
			off += (o[d] + e[d]) * stride[d];
		}
		if (inside && cached_r != o[0] + e[0]) {
			cached_r = o[0] + e[0];
			rp = row_at(g, row, user, cached_r);
		}
		if (inside && rp != NULL) {
			memcpy(out + at, rp + off * g->esize, g->esize);
			any = 1;
		} else {
			memset(out + at, 0, g->esize);
		}
		at += g->esize;
		int d;
		for (d = g->rank - 1; d >= 0; d--) {
			if (++e[d] < g->chunk[d])
				break;
			e[d] = 0;
		}
		if (d < 0)
			return any;
	}
}

static int all_zero(const uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

/* Whether every chunk of shard k (grid coordinates) holds only the fill
 * value 0 in the input: such a shard is not written by default. */
static int shard_all_fill(const struct fc_geom *g, const uint64_t *k,
			  fc_row_fn row, void *user)
{
	uint64_t slots = 1, chunk_bytes = g->esize;
	uint8_t *want;
	int fill = 1;

	if (row == NULL)
		return 0;
	for (int d = 0; d < g->rank; d++) {
		slots *= g->cps[d];
		chunk_bytes *= g->chunk[d];
	}
	want = malloc(chunk_bytes);
	if (want == NULL)
		return 0;
	for (uint64_t s = 0; s < slots && fill; s++) {
		uint64_t o[SHARDPIPE_MAX_RANK], lin = s;
		int inside = 1;

		for (int d = g->rank - 1; d >= 0; d--) {
			o[d] = (k[d] * g->cps[d] + lin % g->cps[d]) *
			       g->chunk[d];
			lin /= g->cps[d];
			if (d > 0 && o[d] >= g->size[d])
				inside = 0;
		}
		if (inside && expected_chunk(g, o, row, user, want) &&
		    !all_zero(want, chunk_bytes))
			fill = 0;
	}
	free(want);
	return fill;
}

struct span {
	uint64_t off, nb;
};

static int cmp_span(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return x->off < y->off ? -1 : x->off > y->off;
}

int fc_check_shard(const struct fc_geom *g, const uint64_t *coords,
		   const uint8_t *obj, size_t n, fc_row_fn row, void *user,
		   char *why, size_t why_len)
{
	uint64_t slots = 1, chunk_bytes = g->esize, body_lo, body_hi;
	const uint8_t *idx;
	struct span *sp;
	uint8_t *dec, *want;
	size_t used = 0;
	int rc = 0;

	for (int d = 0; d < g->rank; d++) {
		slots *= g->cps[d];
		chunk_bytes *= g->chunk[d];
	}
	uint64_t index_bytes = 16 * slots + 4;
	if (n < index_bytes)
		return why_set(why, why_len, "%zu bytes, shorter than its "
			       "%llu-byte index", n,
			       (unsigned long long)index_bytes);
	idx = g->index_start ? obj : obj + n - index_bytes;
	body_lo = g->index_start ? index_bytes : 0;
	body_hi = g->index_start ? n : n - index_bytes;
	uint32_t stored = (uint32_t)idx[16 * slots] |
			  (uint32_t)idx[16 * slots + 1] << 8 |
			  (uint32_t)idx[16 * slots + 2] << 16 |
			  (uint32_t)idx[16 * slots + 3] << 24;
	uint32_t got = test_crc32c(idx, 16 * slots);
	if (stored != got)
		return why_set(why, why_len, "index CRC32C stored %08x, "
			       "computed %08x", stored, got);

	sp = calloc(slots, sizeof(*sp));
	dec = malloc(chunk_bytes);
	want = malloc(chunk_bytes);
	if (sp == NULL || dec == NULL || want == NULL) {
		free(sp);
		free(dec);
		free(want);
		return why_set(why, why_len, "out of memory");
	}
	for (uint64_t s = 0; s < slots && rc == 0; s++) {
		uint64_t off = test_le64(idx + 16 * s);
		uint64_t nb = test_le64(idx + 16 * s + 8);
		uint64_t c[SHARDPIPE_MAX_RANK], o[SHARDPIPE_MAX_RANK], lin = s;
		int inside = 1, data;

		for (int d = g->rank - 1; d >= 0; d--) {
			c[d] = lin % g->cps[d];
			lin /= g->cps[d];
			o[d] = (coords[d] * g->cps[d] + c[d]) * g->chunk[d];
			if (d > 0 && o[d] >= g->size[d])
				inside = 0;
		}
		if (g->size[0] != 0 && o[0] >= g->size[0])
			inside = 0;
		data = row != NULL && inside &&
		       expected_chunk(g, o, row, user, want);
		if (off == EMPTY && nb == EMPTY) {
			/* An empty slot reads as fill: right only where the
			 * writer had no data, or data all fill value (0),
			 * which the writer leaves out by default. */
			if (data && !all_zero(want, chunk_bytes))
				rc = why_set(why, why_len, "slot %llu is empty "
					     "but holds appended data",
					     (unsigned long long)s);
			continue;
		}
		if (off < body_lo || off > body_hi || nb > body_hi - off) {
			rc = why_set(why, why_len, "slot %llu: bytes %llu+%llu "
				     "outside the body %llu..%llu",
				     (unsigned long long)s,
				     (unsigned long long)off,
				     (unsigned long long)nb,
				     (unsigned long long)body_lo,
				     (unsigned long long)body_hi);
			break;
		}
		sp[used].off = off;
		sp[used].nb = nb;
		used++;
		if (test_decode(g->codec, obj + off, (size_t)nb, dec,
				(size_t)chunk_bytes) != chunk_bytes) {
			rc = why_set(why, why_len, "slot %llu: %llu bytes do "
				     "not decode to %llu",
				     (unsigned long long)s,
				     (unsigned long long)nb,
				     (unsigned long long)chunk_bytes);
			break;
		}
		if (row == NULL)
			continue;
		if (!data)
			memset(want, 0, chunk_bytes);
		if (memcmp(dec, want, chunk_bytes) != 0) {
			size_t i = 0;

			while (dec[i] == want[i])
				i++;
			rc = why_set(why, why_len, "slot %llu: byte %zu is "
				     "0x%02x, the writer was given 0x%02x",
				     (unsigned long long)s, i, dec[i], want[i]);
		}
	}
	if (rc == 0 && used > 1) {
		qsort(sp, used, sizeof(*sp), cmp_span);
		for (size_t i = 1; i < used && rc == 0; i++)
			if (sp[i - 1].off + sp[i - 1].nb > sp[i].off)
				rc = why_set(why, why_len, "chunks at %llu and "
					     "%llu overlap",
					     (unsigned long long)sp[i - 1].off,
					     (unsigned long long)sp[i].off);
	}
	free(sp);
	free(dec);
	free(want);
	return rc;
}

/* ------------------------------------------------------------ JSON */

struct jp {
	const char *p, *end;
	int depth;
	int shape_n;
	uint64_t *shape;
};

static void ws(struct jp *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' ||
				 *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* A string; its raw text (escapes left in) is [*s, *s + *len). */
static int jstring(struct jp *j, const char **s, size_t *len)
{
	if (j->p >= j->end || *j->p != '"')
		return -1;
	*s = ++j->p;
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p;

		if (c < 0x20)
			return -1;
		if (c == '\\') {
			if (++j->p >= j->end)
				return -1;
			if (*j->p == 'u') {
				for (int k = 0; k < 4; k++)
					if (++j->p >= j->end ||
					    hexval(*j->p) < 0)
						return -1;
			} else if (!strchr("\"\\/bfnrt", *j->p)) {
				return -1;
			}
		}
		j->p++;
	}
	if (j->p >= j->end)
		return -1;
	*len = (size_t)(j->p - *s);
	j->p++;
	return 0;
}

/* A number; *u is its value when it is a plain unsigned integer that
 * fits (then returns 1), else returns 0; -1 on bad syntax. */
static int jnumber(struct jp *j, uint64_t *u)
{
	int plain = 1, overflow = 0;
	uint64_t v = 0;

	if (j->p < j->end && *j->p == '-') {
		plain = 0;
		j->p++;
	}
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return -1;
	if (*j->p == '0') {
		j->p++;
	} else {
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9') {
			unsigned dgt = (unsigned)(*j->p - '0');

			if (v > (UINT64_MAX - dgt) / 10)
				overflow = 1;
			v = v * 10 + dgt;
			j->p++;
		}
	}
	if (j->p < j->end && *j->p == '.') {
		plain = 0;
		j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -1;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		plain = 0;
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || *j->p < '0' || *j->p > '9')
			return -1;
		while (j->p < j->end && *j->p >= '0' && *j->p <= '9')
			j->p++;
	}
	*u = v;
	return plain && !overflow;
}

static int jvalue(struct jp *j, int want_shape);

static int jlit(struct jp *j, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, lit, n) != 0)
		return -1;
	j->p += n;
	return 0;
}

static int jvalue(struct jp *j, int want_shape)
{
	ws(j);
	if (j->p >= j->end)
		return -1;
	switch (*j->p) {
	case '{': {
		int root = j->depth == 0;

		if (++j->depth > 64)
			return -1;
		j->p++;
		ws(j);
		if (j->p < j->end && *j->p == '}') {
			j->p++;
			j->depth--;
			return 0;
		}
		for (;;) {
			const char *k;
			size_t kl;

			ws(j);
			if (jstring(j, &k, &kl) != 0)
				return -1;
			ws(j);
			if (j->p >= j->end || *j->p != ':')
				return -1;
			j->p++;
			if (jvalue(j, root && kl == 5 &&
					      memcmp(k, "shape", 5) == 0) != 0)
				return -1;
			ws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == '}') {
				j->p++;
				j->depth--;
				return 0;
			}
			return -1;
		}
	}
	case '[': {
		int count = 0;

		if (++j->depth > 64)
			return -1;
		j->p++;
		ws(j);
		if (want_shape)
			j->shape_n = 0;
		if (j->p < j->end && *j->p == ']') {
			j->p++;
			j->depth--;
			return 0;
		}
		for (;;) {
			ws(j);
			if (want_shape) {
				uint64_t u;
				int r = jnumber(j, &u);

				if (r < 0)
					return -1;
				if (r == 0 || count >= SHARDPIPE_MAX_RANK)
					j->shape_n = -2; /* malformed */
				else
					j->shape[count] = u;
				count++;
				if (j->shape_n != -2)
					j->shape_n = count;
			} else if (jvalue(j, 0) != 0) {
				return -1;
			}
			ws(j);
			if (j->p < j->end && *j->p == ',') {
				j->p++;
				continue;
			}
			if (j->p < j->end && *j->p == ']') {
				j->p++;
				j->depth--;
				return 0;
			}
			return -1;
		}
	}
	case '"': {
		const char *s;
		size_t n;

		if (want_shape)
			j->shape_n = -2;
		return jstring(j, &s, &n);
	}
	case 't':
	case 'f':
	case 'n':
		if (want_shape)
			j->shape_n = -2;
		return jlit(j, *j->p == 't' ? "true"
			       : *j->p == 'f' ? "false" : "null");
	default: {
		uint64_t u;

		if (want_shape)
			j->shape_n = -2;
		return jnumber(j, &u) < 0 ? -1 : 0;
	}
	}
}

int fc_json_shape(const char *text, size_t n, uint64_t *shape)
{
	struct jp j = { text, text + n, 0, -1, shape };

	if (jvalue(&j, 0) != 0)
		return -1;
	ws(&j);
	if (j.p != j.end || j.shape_n < 0)
		return -1;
	return j.shape_n;
}

/* ----------------------------------------------------------- store */

struct walk {
	const struct fc_geom *g;
	fc_row_fn row;
	void *user;
	struct fc_report *rep;
	uint64_t grid[SHARDPIPE_MAX_RANK]; /* grid[0] == 0: unbounded */
	uint64_t *present;                 /* rank coords per shard */
	size_t n_present, cap_present;
};

static int parse_coord(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0' || (s[0] == '0' && s[1] != '\0'))
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > UINT64_MAX / 10 - 1)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

__attribute__((format(printf, 2, 3)))
static void report(struct fc_report *rep, const char *fmt, ...)
{
	va_list ap;

	if (rep->why[0] != '\0')
		return;
	va_start(ap, fmt);
	vsnprintf(rep->why, sizeof(rep->why), fmt, ap);
	va_end(ap);
}

static void walk_level(struct walk *w, const char *dir, int d, uint64_t *c)
{
	DIR *dh = opendir(dir);
	struct dirent *e;

	if (dh == NULL) {
		w->rep->stray++;
		report(w->rep, "%s: cannot list: %s", dir, strerror(errno));
		return;
	}
	while ((e = readdir(dh)) != NULL) {
		char path[4096];
		struct stat st;

		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (e->d_name[0] == '.') {
			w->rep->hidden++;
			continue;
		}
		if (lstat(path, &st) != 0 ||
		    parse_coord(e->d_name, &c[d]) != 0 ||
		    (w->grid[d] != 0 && c[d] >= w->grid[d])) {
			w->rep->stray++;
			report(w->rep, "%s: not a key of this array", path);
			continue;
		}
		if (d + 1 < w->g->rank) {
			if (!S_ISDIR(st.st_mode)) {
				w->rep->stray++;
				report(w->rep, "%s: not a directory", path);
			} else {
				walk_level(w, path, d + 1, c);
			}
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			w->rep->stray++;
			report(w->rep, "%s: not a regular file", path);
			continue;
		}
		size_t n;
		uint8_t *obj = test_slurp(path, &n);
		char why[400];

		w->rep->shards++;
		if (obj == NULL) {
			w->rep->bad++;
			report(w->rep, "%s: cannot read", path);
		} else if (fc_check_shard(w->g, c, obj, n, w->row, w->user,
					  why, sizeof(why)) != 0) {
			w->rep->bad++;
			report(w->rep, "%s: %s", path, why);
		}
		free(obj);
		if (w->n_present == w->cap_present) {
			w->cap_present = w->cap_present ? 2 * w->cap_present : 64;
			w->present = realloc(w->present,
					     w->cap_present * (size_t)w->g->rank *
						     sizeof(uint64_t));
			if (w->present == NULL)
				abort();
		}
		memcpy(w->present + w->n_present * (size_t)w->g->rank, c,
		       (size_t)w->g->rank * sizeof(uint64_t));
		w->n_present++;
	}
	closedir(dh);
}

static int is_present(const struct walk *w, const uint64_t *c)
{
	size_t r = (size_t)w->g->rank;

	for (size_t i = 0; i < w->n_present; i++)
		if (memcmp(w->present + i * r, c, r * sizeof(uint64_t)) == 0)
			return 1;
	return 0;
}

int fc_check_store(const char *dir, const struct fc_geom *g, fc_row_fn row,
		   void *user, int allow_no_meta, struct fc_report *rep)
{
	struct walk w = { .g = g, .row = row, .user = user, .rep = rep };
	uint64_t c[SHARDPIPE_MAX_RANK], shape[SHARDPIPE_MAX_RANK];
	char path[4096];
	DIR *dh;
	struct dirent *e;

	memset(rep, 0, sizeof(*rep));
	for (int d = 0; d < g->rank; d++) {
		uint64_t per = g->chunk[d] * g->cps[d];

		w.grid[d] = (g->size[d] + per - 1) / per;
	}
	snprintf(path, sizeof(path), "%s/zarr.json", dir);
	if (access(path, F_OK) == 0) {
		size_t n;
		char *text = test_slurp(path, &n);
		int r = text ? fc_json_shape(text, n, shape) : -1;

		rep->has_meta = 1;
		rep->meta_ok = r == g->rank;
		for (int d = 1; rep->meta_ok && d < g->rank; d++)
			rep->meta_ok = shape[d] == g->size[d];
		if (rep->meta_ok) {
			rep->shape0 = shape[0];
			if (g->size[0] != 0 && shape[0] > g->size[0])
				rep->meta_ok = 0;
		}
		if (!rep->meta_ok)
			report(rep, "%s: does not parse or does not match the "
			       "geometry", path);
		free(text);
	}
	dh = opendir(dir);
	if (dh == NULL && errno == ENOENT && allow_no_meta)
		return 0; /* nothing was written at all */
	if (dh == NULL) {
		report(rep, "%s: cannot list: %s", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(dh)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, "zarr.json") == 0)
			continue;
		if (e->d_name[0] == '.') {
			rep->hidden++;
		} else if (strcmp(e->d_name, "c") == 0) {
			snprintf(path, sizeof(path), "%s/c", dir);
			walk_level(&w, path, 0, c);
		} else {
			rep->stray++;
			report(rep, "%s/%s: not part of a store", dir, e->d_name);
		}
	}
	closedir(dh);

	/* Every shard holding advertised (and appended) rows is present. */
	if (rep->meta_ok && rep->shape0 > 0) {
		uint64_t rows = g->chunk[0] * g->cps[0];
		uint64_t epochs = (rep->shape0 + rows - 1) / rows;
		uint64_t k[SHARDPIPE_MAX_RANK] = { 0 };

		for (uint64_t s0 = 0; s0 < epochs; s0++) {
			if (row != NULL && row_at(g, row, user, s0 * rows) == NULL)
				break;
			for (int d = 1; d < g->rank; d++)
				k[d] = 0;
			for (;;) {
				int d;

				k[0] = s0;
				if (!is_present(&w, k) &&
				    !shard_all_fill(g, k, row, user)) {
					rep->missing++;
					report(rep, "zarr.json advertises %llu "
					       "rows but shard c/%llu/... of "
					       "them is missing",
					       (unsigned long long)rep->shape0,
					       (unsigned long long)s0);
				}
				for (d = g->rank - 1; d >= 1; d--) {
					if (++k[d] < w.grid[d])
						break;
					k[d] = 0;
				}
				if (d < 1)
					break;
			}
		}
	}
	free(w.present);
	if (!rep->has_meta && !allow_no_meta)
		report(rep, "%s: no zarr.json", dir);
	return (rep->has_meta ? rep->meta_ok : allow_no_meta) &&
			       rep->bad == 0 && rep->missing == 0 &&
			       rep->stray == 0
		       ? 0
		       : -1;
}

unsigned long long fc_run_mem_limit;

int fc_run(char *const argv[], const char *err_path, unsigned timeout_s)
{
	pid_t pid = fork();
	int st;

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(err_path ? err_path : "/dev/null",
			      O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		if (fc_run_mem_limit != 0) {
			struct rlimit rl = { fc_run_mem_limit,
					     fc_run_mem_limit };

			setrlimit(RLIMIT_AS, &rl);
		}
		signal(SIGALRM, SIG_DFL);
		/* A pending alarm survives exec: the program is killed if
		 * it hangs. */
		alarm(timeout_s);
		execv(argv[0], argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return -1;
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return WEXITSTATUS(st);
}

unsigned fc_timeout(unsigned dflt)
{
	const char *e = getenv("SHARDPIPE_TEST_TIMEOUT_SCALE");
	unsigned long k = e != NULL ? strtoul(e, NULL, 10) : 1;

	return dflt * (unsigned)(k ? k : 1);
}

void fc_passive_omp(char **argv)
{
	if (getenv("OMP_WAIT_POLICY") != NULL)
		return;
	setenv("OMP_WAIT_POLICY", "passive", 1);
	execv(strchr(argv[0], '/') ? argv[0] : "/proc/self/exe", argv);
}
