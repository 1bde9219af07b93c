/*
 * conform.c - shardpipe conform: the same input through several backends,
 * then the checks of doc/design.md §18 "Conformance levels" on what they wrote.
 *
 *   L1  each store decodes (library reader) to the input, fill beyond it,
 *       and passes the reader's full check (index CRCs, every chunk; of a
 *       pyramid, every level, each recomputed from the one below);
 *   L2  each pair of stores is byte-identical file by file; a pair whose
 *       encoders differ by design (cpu against a kernel backend, with a
 *       codec other than none) need only decode equal, which L1 proves.
 *
 * Any mismatch exits with CLI_EXIT_MISMATCH and names the first differing
 * shard and chunk.  Only the public API is used: shard indexes are parsed
 * here from the format (sharding_indexed v1.0).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "fill.h"

#define MAX_BACKENDS 8

struct run {
	const char *name;
	char detail[256];
	char dir[4096];
	int written;         /* the store was written completely */
	int decodes;         /* L1 */
	char why[512];       /* why not written, or the L1 fault */
	double seconds;
};

struct conform {
	shardpipe_desc desc;
	/* In storage order, the append dim's rows resolved: storage dim
	 * `a` (0 unless a storage order moves it, design §3.3). */
	uint64_t shape[SHARDPIPE_MAX_RANK];
	int a;
	size_t esize;
	uint64_t row_bytes;
	uint8_t *input;      /* the whole array, fill included, as appended */
	/* What a store decodes to: the input in storage order (input
	 * itself without a storage order). */
	uint8_t *want;
	uint64_t input_bytes;
	uint64_t appended;   /* bytes appended (a bounded array's input may
			      * be shorter than the array) */
	struct run runs[MAX_BACKENDS];
	int nruns;
	int explicit_list;
	int levels;          /* of the first store read; 0: one array */
};

static void conform_usage(FILE *f)
{
	fprintf(f,
		"usage: shardpipe conform [--backends B1,B2,..] [--input FILE] "
		"[--rows N] [--seed N]\n"
		"         [--keep DIR] [description options of write]\n\n"
		"Streams one input through each backend into temporary stores "
		"and compares them:\n"
		"L1 whether each store decodes to the input; L2 whether each "
		"pair of stores is\nbyte-identical (or decodes equal where the "
		"encoders differ by design: cpu\nagainst a kernel backend with "
		"a codec other than none).  Exit status 3 on any\nmismatch, "
		"naming the first differing shard and chunk.\n\n"
		"  --backends LIST  backends to compare (default: every usable "
		"one)\n"
		"  --input FILE     raw row-major input (default: synthetic "
		"data)\n"
		"  --rows N         rows of synthetic input when dim 0 is "
		"unbounded (default:\n"
		"                   two shards and a half-chunk along dim 0, "
		"plus one row)\n"
		"  --seed N         seed of the synthetic input (default 1)\n"
		"  --keep DIR       write the stores under DIR and keep them "
		"(a store already\n"
		"                   there is replaced as by write --overwrite)\n"
		"With write's pyramid options (--downsample, ...) every level "
		"is compared, and L1\nrecomputes each from the one below.\n"
		"Without --shape: --shape 0,96,130 --chunk 8,32,32 --shard "
		"2,2,2 --dtype uint16,\n"
		"and 43 rows.  The codec defaults to none here.\n");
}

static int is_kernel_backend(const char *name)
{
	return strcmp(name, "cpu") != 0;
}

/* ------------------------------------------------------------- input */

/* Smooth ramps with noise in the low bits, so compressors have work of
 * both kinds. */
static void synthesize(uint8_t *p, uint64_t n, uint64_t seed)
{
	uint64_t s = seed;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t r = bench_splitmix(&s);

		p[i] = (uint8_t)((i / 13) + (i >> 10)) ^ (uint8_t)(r & 3);
	}
}

static int read_file(const char *path, uint8_t **out, uint64_t *n)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1u << 20, len = 0;
	uint8_t *buf = malloc(cap);

	if (f == NULL || buf == NULL) {
		cli_error("conform: %s: %s", path,
			  f == NULL ? strerror(errno) : "out of memory");
		if (f != NULL)
			fclose(f);
		free(buf);
		return CLI_EXIT_FAIL;
	}
	for (;;) {
		size_t got;

		if (len == cap) {
			uint8_t *bigger = realloc(buf, cap * 2);

			if (bigger == NULL) {
				cli_error("conform: out of memory reading %s",
					  path);
				free(buf);
				fclose(f);
				return CLI_EXIT_FAIL;
			}
			buf = bigger;
			cap *= 2;
		}
		got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(f)) {
		cli_error("conform: %s: read error", path);
		free(buf);
		fclose(f);
		return CLI_EXIT_FAIL;
	}
	fclose(f);
	*out = buf;
	*n = len;
	return CLI_EXIT_OK;
}

/*
 * The input as a store in storage order holds it: storage dim i is append
 * dim order[i], so storage element x sits in the input at the sum of x[i]
 * times the append-order stride of append dim order[i].  A reference
 * computation of its own, not the library's plan.
 */
static int transpose_input(struct conform *c)
{
	const shardpipe_desc *d = &c->desc;
	uint64_t ashape[SHARDPIPE_MAX_RANK], astride[SHARDPIPE_MAX_RANK];
	uint64_t x[SHARDPIPE_MAX_RANK] = { 0 }, total = 1, s = 1;
	int permuted = 0, seen[SHARDPIPE_MAX_RANK] = { 0 };

	for (int i = 0; i < d->rank; i++) {
		int o = d->storage_order[i];

		permuted |= o != i && o != 0;
		/* Not a permutation: every run's open refuses it, naming
		 * the entry, and nothing is compared. */
		if (o < 0 || o >= d->rank || seen[o]++)
			permuted = 0, i = d->rank;
	}
	if (!permuted) {
		c->want = c->input;
		return CLI_EXIT_OK;
	}
	for (int i = 0; i < d->rank; i++) {
		ashape[d->storage_order[i]] = c->shape[i];
		total *= c->shape[i];
	}
	for (int j = d->rank - 1; j >= 0; j--) {
		astride[j] = s;
		s *= ashape[j];
	}
	c->want = malloc(c->input_bytes ? c->input_bytes : 1);
	if (c->want == NULL) {
		cli_error("conform: out of memory for %llu bytes of input",
			  (unsigned long long)c->input_bytes);
		return CLI_EXIT_FAIL;
	}
	for (uint64_t k = 0; k < total; k++) {
		uint64_t off = 0;

		for (int i = 0; i < d->rank; i++)
			off += x[i] * astride[d->storage_order[i]];
		memcpy(c->want + k * c->esize, c->input + off * c->esize,
		       c->esize);
		for (int i = d->rank - 1; i >= 0; i--) {
			if (++x[i] < c->shape[i])
				break;
			x[i] = 0;
		}
	}
	return CLI_EXIT_OK;
}

/* Resolve the shape and build the array's expected content. */
static int make_input(struct conform *c, const char *path, uint64_t rows,
		      uint64_t seed)
{
	const shardpipe_desc *d = &c->desc;
	uint8_t *data = NULL;
	uint64_t n = 0, total;

	c->esize = shardpipe_dtype_size(d->dtype);
	c->row_bytes = c->esize;
	/* The sizes are the user's: a wrapped product once made the row
	 * size 0 (a division by it) and the input a few bytes. */
	for (int i = 0; i < d->rank; i++) {
		if (i == c->a)
			continue;
		if (d->dims[i].size == 0) {
			cli_error("conform: --shape: dim %d: size 0 (only dim "
				  "%d, the append dim, may be unbounded)", i,
				  c->a);
			return CLI_EXIT_USAGE;
		}
		if (!cli_mul_ok(c->row_bytes, d->dims[i].size, &c->row_bytes)) {
			cli_error("conform: --shape: one row (every dim but "
				  "dim %d, the append dim) holds more than 2^64 "
				  "bytes", c->a);
			return CLI_EXIT_USAGE;
		}
	}
	if (path != NULL && read_file(path, &data, &n) != CLI_EXIT_OK)
		return CLI_EXIT_FAIL;
	if (data != NULL && n % c->row_bytes != 0) {
		cli_error("conform: %s holds %llu bytes, not a whole number of "
			  "%llu-byte rows", path, (unsigned long long)n,
			  (unsigned long long)c->row_bytes);
		free(data);
		return CLI_EXIT_USAGE;
	}
	if (d->dims[c->a].size != 0)
		rows = d->dims[c->a].size;
	else if (data != NULL)
		rows = n / c->row_bytes;
	if (!cli_mul_ok(rows, c->row_bytes, &total) || total > SIZE_MAX) {
		cli_error("conform: %llu rows of %llu bytes do not fit in "
			  "memory", (unsigned long long)rows,
			  (unsigned long long)c->row_bytes);
		free(data);
		return CLI_EXIT_USAGE;
	}
	if (data != NULL && n > total) {
		cli_error("conform: %s holds %llu rows, the array only %llu",
			  path, (unsigned long long)(n / c->row_bytes),
			  (unsigned long long)rows);
		free(data);
		return CLI_EXIT_USAGE;
	}
	for (int i = 0; i < d->rank; i++)
		c->shape[i] = d->dims[i].size;
	c->shape[c->a] = rows;
	c->input = calloc(total ? total : 1, 1);
	if (c->input == NULL) {
		cli_error("conform: out of memory for %llu bytes of input",
			  (unsigned long long)total);
		free(data);
		return CLI_EXIT_FAIL;
	}
	if (data != NULL) {
		memcpy(c->input, data, n);
		c->appended = n;
	} else {
		synthesize(c->input, total, seed);
		c->appended = total;
	}
	c->input_bytes = total;
	free(data);
	return transpose_input(c);
}

static void free_input(struct conform *c)
{
	if (c->want != c->input)
		free(c->want);
	free(c->input);
}

/* ---------------------------------------------------------- the runs */

static void write_store(struct conform *c, struct run *r)
{
	shardpipe_desc desc = c->desc;
	shardpipe_stream *s;
	uint64_t at = 0, span = 1u << 20;
	double t0 = cli_now();
	int rc;

	desc.backend = r->name;
	rc = shardpipe_stream_open(&s, r->dir, &desc);
	if (rc != SHARDPIPE_OK) {
		snprintf(r->why, sizeof(r->why), "%s: %s",
			 shardpipe_strerror(rc), shardpipe_last_error_message());
		return;
	}
	if (strcmp(shardpipe_stream_backend(s), r->name) != 0) {
		snprintf(r->why, sizeof(r->why), "the stream runs on %s",
			 shardpipe_stream_backend(s));
		shardpipe_stream_close(s);
		return;
	}
	/* Odd span sizes, so batches never line up with appends. */
	span -= span % 4093;
	while (at < c->appended && rc == SHARDPIPE_OK) {
		uint64_t n = c->appended - at < span ? c->appended - at : span;

		rc = shardpipe_stream_append(s, c->input + at, (size_t)n);
		at += n;
	}
	if (rc != SHARDPIPE_OK)
		snprintf(r->why, sizeof(r->why), "append: %s: %s",
			 shardpipe_strerror(rc), shardpipe_stream_message(s));
	if (shardpipe_stream_close(s) != SHARDPIPE_OK && rc == SHARDPIPE_OK) {
		snprintf(r->why, sizeof(r->why), "close: %s",
			 shardpipe_last_error_message());
		rc = SHARDPIPE_ERR_IO;
	}
	r->seconds = cli_now() - t0;
	r->written = rc == SHARDPIPE_OK;
}

/* The chunk coordinates holding element `elem` (row-major index). */
static void chunk_of(const struct conform *c, uint64_t elem, char *buf,
		     size_t n)
{
	uint64_t coords[SHARDPIPE_MAX_RANK];
	size_t len = 0;

	for (int d = c->desc.rank - 1; d >= 0; d--) {
		coords[d] = elem % c->shape[d] / c->desc.dims[d].chunk;
		elem /= c->shape[d];
	}
	for (int d = 0; d < c->desc.rank && len < n; d++)
		len += (size_t)snprintf(buf + len, n - len, "%s%llu",
					d ? "," : "",
					(unsigned long long)coords[d]);
}

static void check_decodes(struct conform *c, struct run *r)
{
	shardpipe_reader *rd;
	shardpipe_array_info info;
	uint64_t start[SHARDPIPE_MAX_RANK] = { 0 };
	uint8_t *got;
	int rc;

	rc = shardpipe_reader_open(&rd, r->dir);
	if (rc != SHARDPIPE_OK) {
		snprintf(r->why, sizeof(r->why), "reader: %s",
			 shardpipe_last_error_message());
		return;
	}
	if (shardpipe_reader_info(rd, &info) != SHARDPIPE_OK ||
	    info.shape[c->a] != c->shape[c->a]) {
		snprintf(r->why, sizeof(r->why),
			 "zarr.json gives %llu rows, %llu were written",
			 (unsigned long long)info.shape[c->a],
			 (unsigned long long)c->shape[c->a]);
		shardpipe_reader_close(rd);
		return;
	}
	rc = shardpipe_reader_check(rd);
	if (rc != SHARDPIPE_OK) {
		snprintf(r->why, sizeof(r->why), "check: %s",
			 shardpipe_reader_message(rd));
		shardpipe_reader_close(rd);
		return;
	}
	shardpipe_reader_info(rd, &info);
	c->levels = info.levels;
	got = malloc(c->input_bytes ? c->input_bytes : 1);
	if (got == NULL) {
		snprintf(r->why, sizeof(r->why), "out of memory");
	} else if (shardpipe_reader_read(rd, start, c->shape, got,
					  c->input_bytes) !=
		   SHARDPIPE_OK) {
		snprintf(r->why, sizeof(r->why), "read: %s",
			 shardpipe_reader_message(rd));
	} else if (memcmp(got, c->want, c->input_bytes) != 0) {
		uint64_t k = 0;
		char where[200];

		while (got[k] == c->want[k])
			k++;
		chunk_of(c, k / c->esize, where, sizeof(where));
		snprintf(r->why, sizeof(r->why),
			 "element %llu (chunk %s) decodes to byte 0x%02x, "
			 "input 0x%02x", (unsigned long long)(k / c->esize),
			 where, got[k], c->want[k]);
	} else {
		r->decodes = 1;
	}
	free(got);
	shardpipe_reader_close(rd);
}

/* ------------------------------------------------------ L2 comparison */

struct names {
	char **v;
	size_t n, cap;
};

static int add_name(struct names *l, char *s)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 32;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (v == NULL)
			return -1;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = s;
	return 0;
}

static int list_tree(const char *root, const char *rel, struct names *l)
{
	char *path;
	DIR *dir;
	struct dirent *de;
	int rc = 0;

	if (asprintf(&path, "%s%s%s", root, *rel ? "/" : "", rel) < 0)
		return -1;
	dir = opendir(path);
	free(path);
	if (dir == NULL)
		return -1;
	while (rc == 0 && (de = readdir(dir)) != NULL) {
		char *sub, *full;
		struct stat st;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (asprintf(&sub, "%s%s%s", rel, *rel ? "/" : "",
			     de->d_name) < 0)
			return -1;
		if (asprintf(&full, "%s/%s", root, sub) < 0) {
			free(sub);
			return -1;
		}
		if (stat(full, &st) == 0 && S_ISDIR(st.st_mode)) {
			rc = list_tree(root, sub, l);
			free(sub);
		} else if (add_name(l, sub) != 0) {
			free(sub);
			rc = -1;
		}
		free(full);
	}
	closedir(dir);
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_names(struct names *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
}

static uint8_t *slurp(const char *dir, const char *name, uint64_t *n)
{
	char *path;
	uint8_t *p = NULL;

	if (asprintf(&path, "%s/%s", dir, name) < 0)
		return NULL;
	if (read_file(path, &p, n) != CLI_EXIT_OK)
		p = NULL;
	free(path);
	return p;
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/*
 * Two versions of shard `key` differ: find the first index slot whose
 * entry or bytes differ and name it by its chunk coordinates.
 */
static void explain_shard(const struct conform *c, const char *key,
			  const uint8_t *a, uint64_t na, const uint8_t *b,
			  uint64_t nb, char *buf, size_t n)
{
	const shardpipe_desc *d = &c->desc;
	uint64_t per = 1, ib, shard[SHARDPIPE_MAX_RANK] = { 0 };
	const char *p = key;
	int start = d->index_location == SHARDPIPE_INDEX_START;

	for (int i = 0; i < d->rank; i++)
		per *= d->dims[i].chunks_per_shard;
	ib = 16 * per + 4;
	/* Keys are c/i/j/k (the default chunk key encoding); a pyramid
	 * level's shards have their own chunks per shard. */
	if (strncmp(p, "c/", 2) != 0) {
		snprintf(buf, n, "%s differs", key);
		return;
	}
	p += 2;
	for (int i = 0; i < d->rank && *p != '\0'; i++) {
		shard[i] = strtoull(p, (char **)&p, 10);
		if (*p == '/')
			p++;
	}
	if (na < ib || nb < ib) {
		snprintf(buf, n, "shard %s: %llu bytes against %llu, too short "
			 "for its index", key, (unsigned long long)na,
			 (unsigned long long)nb);
		return;
	}
	for (uint64_t s = 0; s < per; s++) {
		const uint8_t *ea = a + (start ? 0 : na - ib) + 16 * s;
		const uint8_t *eb = b + (start ? 0 : nb - ib) + 16 * s;
		uint64_t oa = le64(ea), sa = le64(ea + 8);
		uint64_t ob = le64(eb), sb = le64(eb + 8);
		int same = sa == sb;

		if (same && sa != UINT64_MAX)
			same = oa <= na && sa <= na - oa && ob <= nb &&
			       sb <= nb - ob && memcmp(a + oa, b + ob, sa) == 0;
		if (!same) {
			uint64_t rest = s, cc[SHARDPIPE_MAX_RANK];
			size_t len;

			for (int i = d->rank - 1; i >= 0; i--) {
				uint64_t w = d->dims[i].chunks_per_shard;

				cc[i] = shard[i] * w + rest % w;
				rest /= w;
			}
			len = (size_t)snprintf(buf, n, "shard %s, chunk ", key);
			for (int i = 0; i < d->rank && len < n; i++)
				len += (size_t)snprintf(buf + len, n - len,
							"%s%llu", i ? "," : "",
							(unsigned long long)cc[i]);
			if (len < n)
				snprintf(buf + len, n - len,
					 " (slot %llu: %llu bytes against %llu)",
					 (unsigned long long)s,
					 (unsigned long long)sa,
					 (unsigned long long)sb);
			return;
		}
	}
	snprintf(buf, n, "shard %s: chunks equal, index or padding differs",
		 key);
}

/* 1 when identical; otherwise *why names the first difference. */
static int same_stores(const struct conform *c, const struct run *x,
		       const struct run *y, char *why, size_t n,
		       uint64_t *files)
{
	struct names lx = { 0 }, ly = { 0 };
	int same = 1;

	*files = 0;
	if (list_tree(x->dir, "", &lx) != 0 || list_tree(y->dir, "", &ly) != 0) {
		snprintf(why, n, "cannot list the stores");
		free_names(&lx);
		free_names(&ly);
		return 0;
	}
	qsort(lx.v, lx.n, sizeof(*lx.v), cmp_str);
	qsort(ly.v, ly.n, sizeof(*ly.v), cmp_str);
	for (size_t i = 0, j = 0; same && (i < lx.n || j < ly.n);) {
		int k = i == lx.n ? 1 : j == ly.n ? -1 : strcmp(lx.v[i], ly.v[j]);
		uint8_t *a, *b;
		uint64_t na = 0, nb = 0;

		if (k != 0) {
			snprintf(why, n, "%s exists only in %s's store",
				 k < 0 ? lx.v[i] : ly.v[j],
				 k < 0 ? x->name : y->name);
			same = 0;
			break;
		}
		a = slurp(x->dir, lx.v[i], &na);
		b = slurp(y->dir, ly.v[j], &nb);
		if (a == NULL || b == NULL) {
			snprintf(why, n, "cannot read %s", lx.v[i]);
			same = 0;
		} else if (na != nb || memcmp(a, b, na) != 0) {
			same = 0;
			if (strcmp(lx.v[i], "zarr.json") == 0 ||
			    strstr(lx.v[i], "zarr.json") != NULL)
				snprintf(why, n, "%s differs", lx.v[i]);
			else
				explain_shard(c, lx.v[i], a, na, b, nb, why, n);
		}
		free(a);
		free(b);
		(*files)++;
		i++;
		j++;
	}
	free_names(&lx);
	free_names(&ly);
	return same;
}

/* -------------------------------------------------------- the command */

static int rm_entry(const char *path, const struct stat *sb, int flag,
		    struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static int add_run(struct conform *c, const char *name)
{
	for (int i = 0; i < c->nruns; i++)
		if (strcmp(c->runs[i].name, name) == 0)
			return CLI_EXIT_OK;
	if (c->nruns == MAX_BACKENDS) {
		cli_error("conform: more than %d backends", MAX_BACKENDS);
		return CLI_EXIT_USAGE;
	}
	c->runs[c->nruns++].name = name;
	return CLI_EXIT_OK;
}

static int choose_backends(struct conform *c, char *list)
{
	if (list != NULL) {
		c->explicit_list = 1;
		for (char *tok = strtok(list, ","); tok != NULL;
		     tok = strtok(NULL, ","))
			if (*tok != '\0' && add_run(c, tok) != CLI_EXIT_OK)
				return CLI_EXIT_USAGE;
	} else {
		for (int i = 0; i < shardpipe_backend_count(); i++) {
			shardpipe_backend_info info;

			if (shardpipe_backend_probe(i, &info) == SHARDPIPE_OK &&
			    info.usable && add_run(c, info.name) != CLI_EXIT_OK)
				return CLI_EXIT_USAGE;
		}
	}
	if (c->nruns == 0) {
		cli_error("conform: no backend to compare");
		return CLI_EXIT_USAGE;
	}
	for (int r = 0; r < c->nruns; r++) {
		struct run *run = &c->runs[r];
		int found = 0;

		for (int i = 0; i < shardpipe_backend_count(); i++) {
			shardpipe_backend_info info;

			if (shardpipe_backend_probe(i, &info) != SHARDPIPE_OK ||
			    strcmp(info.name, run->name) != 0)
				continue;
			found = 1;
			snprintf(run->detail, sizeof(run->detail), "%s",
				 info.detail);
		}
		if (!found) {
			cli_error("conform: unknown backend \"%s\"", run->name);
			return CLI_EXIT_USAGE;
		}
	}
	return CLI_EXIT_OK;
}

static int report(struct conform *c)
{
	int status = CLI_EXIT_OK;
	int byte_pairs_only = c->desc.codec == SHARDPIPE_CODEC_NONE;

	printf("%-10s %-9s %-9s %s\n", "backend", "write", "L1", "device");
	for (int i = 0; i < c->nruns; i++) {
		struct run *r = &c->runs[i];
		char rate[32];

		snprintf(rate, sizeof(rate), "%.0f MB/s",
			 r->seconds > 0 ? c->appended / 1e6 / r->seconds : 0.0);
		printf("%-10s %-9s %-9s %s\n", r->name,
		       r->written ? rate : "FAILED",
		       !r->written ? "-" : r->decodes ? "ok" : "MISMATCH",
		       r->detail);
		if (!r->written) {
			printf("  %s: %s\n", r->name, r->why);
			if (status == CLI_EXIT_OK)
				status = CLI_EXIT_FAIL;
		} else if (!r->decodes) {
			printf("  %s: %s\n", r->name, r->why);
			status = CLI_EXIT_MISMATCH;
		}
	}
	printf("\n%-24s %s\n", "pair", "L2");
	for (int i = 0; i < c->nruns; i++)
		for (int j = i + 1; j < c->nruns; j++) {
			struct run *x = &c->runs[i], *y = &c->runs[j];
			char pair[64], why[600];
			uint64_t files;
			int must_match = byte_pairs_only ||
					 (is_kernel_backend(x->name) &&
					  is_kernel_backend(y->name));

			snprintf(pair, sizeof(pair), "%s ~ %s", x->name,
				 y->name);
			if (!x->written || !y->written) {
				printf("%-24s -\n", pair);
				continue;
			}
			if (same_stores(c, x, y, why, sizeof(why), &files)) {
				printf("%-24s identical (%llu files)\n", pair,
				       (unsigned long long)files);
			} else if (!must_match) {
				printf("%-24s %s (encoders differ by design)\n",
				       pair, x->decodes && y->decodes ?
						     "decoded equal" :
						     "MISMATCH");
				if (!(x->decodes && y->decodes))
					status = CLI_EXIT_MISMATCH;
			} else {
				printf("%-24s MISMATCH: %s\n", pair, why);
				status = CLI_EXIT_MISMATCH;
			}
		}
	return status;
}

int cli_conform(int argc, char **argv)
{
	struct cli_desc_opts o = { 0 };
	struct cli_levels_opts lo = { 0 };
	struct conform c;
	const char *list = NULL, *input = NULL, *keep = NULL;
	char root[3072];
	uint64_t rows = 0, seed = 1;
	int status;

	memset(&c, 0, sizeof(c));
	cli_seen_init(&o.seen, "conform");
	for (int i = 1; i < argc; i++) {
		int r = cli_desc_option(&o, argc, argv, &i);
		const char *arg = argv[i];

		if (r == 0)
			r = cli_levels_option(&lo, &o.seen, argc, argv, &i);
		if (r < 0)
			return CLI_EXIT_USAGE;
		if (r > 0)
			continue;
		if (strcmp(arg, "--help") == 0) {
			conform_usage(stdout);
			return CLI_EXIT_OK;
		}
		if (strcmp(arg, "--backends") == 0) {
			r = cli_take(&o.seen, argc, argv, &i, &list);
		} else if (strcmp(arg, "--input") == 0) {
			r = cli_take(&o.seen, argc, argv, &i, &input);
		} else if (strcmp(arg, "--keep") == 0) {
			r = cli_take(&o.seen, argc, argv, &i, &keep);
		} else if (strcmp(arg, "--rows") == 0) {
			r = cli_take_u64(&o.seen, argc, argv, &i, UINT64_MAX,
					 &rows);
		} else if (strcmp(arg, "--seed") == 0) {
			r = cli_take_u64(&o.seen, argc, argv, &i, UINT64_MAX,
					 &seed);
		} else {
			cli_error("conform: unknown %s %s",
				  arg[0] == '-' ? "option" : "argument", arg);
			conform_usage(stderr);
			return CLI_EXIT_USAGE;
		}
		if (r != 0)
			return CLI_EXIT_USAGE;
	}
	if (o.backend != NULL) {
		cli_error("conform: --backend chooses one backend; use "
			  "--backends LIST");
		return CLI_EXIT_USAGE;
	}
	if (o.shape == NULL && o.chunk == NULL) {
		o.shape = "0,96,130";
		o.chunk = "8,32,32";
		if (o.shard == NULL && o.shard_shape == NULL &&
		    o.chunks_per_shard == NULL)
			o.shard = "2,2,2";
		if (o.dtype == NULL)
			o.dtype = "uint16";
		if (rows == 0)
			rows = 43;
	}
	if (o.codec == NULL)
		o.codec = "none";
	if ((status = cli_desc_build(&o, &c.desc)) != CLI_EXIT_OK ||
	    (status = cli_levels_build(&lo, &c.desc)) != CLI_EXIT_OK)
		return status;
	/* A storage order (design §3.3): rows along storage dim a, and L1
	 * compares each store with the input transposed. */
	c.a = cli_append_dim(&c.desc);
	cli_shard_warnings(&c.desc);
	if (c.desc.dims[c.a].size == 0 && rows == 0 && input == NULL)
		rows = c.desc.dims[c.a].chunk *
			       c.desc.dims[c.a].chunks_per_shard * 2 +
		       c.desc.dims[c.a].chunk / 2 + 1;
	/* Each run names its backend; the environment must not override. */
	if (getenv("SHARDPIPE_BACKEND") != NULL && *getenv("SHARDPIPE_BACKEND")) {
		fprintf(stderr, "shardpipe: conform: ignoring SHARDPIPE_BACKEND"
				"=%s\n", getenv("SHARDPIPE_BACKEND"));
		unsetenv("SHARDPIPE_BACKEND");
	}
	/* list is an argv string, the program's to cut up. */
	if ((status = choose_backends(&c, (char *)list)) != CLI_EXIT_OK)
		return status;
	if ((status = make_input(&c, input, rows, seed)) != CLI_EXIT_OK) {
		free_input(&c);
		return status;
	}

	if (keep != NULL) {
		if (mkdir(keep, 0777) != 0 && errno != EEXIST) {
			cli_error("conform: %s: %s", keep, strerror(errno));
			free_input(&c);
			return CLI_EXIT_FAIL;
		}
		snprintf(root, sizeof(root), "%s", keep);
		/* An earlier run's store there is replaced the way write
		 * --overwrite replaces one: only what a store owns goes, and
		 * a directory of other files is refused, never emptied. */
		c.desc.overwrite = 1;
	} else {
		const char *tmp = getenv("TMPDIR");

		snprintf(root, sizeof(root), "%s/shardpipe-conform-XXXXXX",
			 tmp != NULL && *tmp != '\0' ? tmp : "/tmp");
		if (mkdtemp(root) == NULL) {
			cli_error("conform: %s: %s", root, strerror(errno));
			free_input(&c);
			return CLI_EXIT_FAIL;
		}
	}
	for (int i = 0; i < c.nruns; i++) {
		struct run *r = &c.runs[i];

		snprintf(r->dir, sizeof(r->dir), "%s/%s.zarr", root, r->name);
		write_store(&c, r);
		/* A kernel backend that cannot run this description (a
		 * codec with no kernel encoder yet) is left out unless it
		 * was asked for.  Its refused open created nothing, so
		 * nothing is removed: under --keep, DIR/NAME.zarr may be
		 * the user's. */
		if (!r->written && !c.explicit_list) {
			fprintf(stderr, "shardpipe: conform: leaving out %s: "
					"%s\n", r->name, r->why);
			/* Nothing compared is no pass. */
			if (c.nruns == 1) {
				cli_error("conform: no backend could write this "
					  "array");
				status = CLI_EXIT_USAGE;
				break;
			}
			memmove(r, r + 1, (size_t)(c.nruns - i - 1) * sizeof(*r));
			c.nruns--;
			i--;
			continue;
		}
		if (r->written)
			check_decodes(&c, r);
	}
	if (status != CLI_EXIT_OK) {
		if (keep == NULL)
			nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
		free_input(&c);
		return status;
	}
	printf("conform: %d dims, %s, codec %s, index at %s, %llu rows, "
	       "%llu bytes%s%s", c.desc.rank,
	       shardpipe_dtype_name(c.desc.dtype),
	       shardpipe_codec_name(c.desc.codec),
	       c.desc.index_location == SHARDPIPE_INDEX_START ? "start" : "end",
	       (unsigned long long)c.shape[c.a],
	       (unsigned long long)c.appended, keep ? ", stores in " : "",
	       keep ? keep : "");
	if (c.levels > 0)
		printf(", an OME-NGFF image of %d level%s", c.levels,
		       c.levels > 1 ? "s" : "");
	printf("\n\n");
	status = report(&c);
	if (keep == NULL)
		nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free_input(&c);
	printf("\n%s\n", status == CLI_EXIT_OK ? "conform: every check passed" :
	       status == CLI_EXIT_MISMATCH ? "conform: MISMATCH" :
					     "conform: a backend failed");
	return status;
}
