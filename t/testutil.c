#define _GNU_SOURCE
#include "testutil.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <zlib.h>
#include <zstd.h>

uint64_t test_seed(void)
{
	const char *env = getenv("SHARDPIPE_TEST_SEED");
	uint64_t seed;

	if (env != NULL && *env != '\0')
		seed = strtoull(env, NULL, 0);
	else
		seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20);
	diag("seed %llu (set SHARDPIPE_TEST_SEED=%llu to replay)",
	     (unsigned long long)seed, (unsigned long long)seed);
	return seed;
}

long test_sized(const char *what, long full, long small)
{
	const char *env = getenv("SHARDPIPE_TEST_SIZE");
	long n = full;

	if (env != NULL && strcmp(env, "small") == 0)
		n = small;
	else if (env != NULL && *env != '\0' && strcmp(env, "full") != 0)
		bail("SHARDPIPE_TEST_SIZE=%s: neither full nor small", env);
	diag("%s: %ld (SHARDPIPE_TEST_SIZE %s)", what, n,
	     n == full ? "full" : "small");
	return n;
}

uint64_t test_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void test_fill(void *buf, size_t n, int pattern, uint64_t *state)
{
	unsigned char *p = buf;
	unsigned char c = (unsigned char)test_rand(state);

	for (size_t i = 0; i < n; i++) {
		switch (pattern) {
		case 0:
			p[i] = (unsigned char)test_rand(state);
			break;
		case 1:
			p[i] = c;
			break;
		case 2:
			p[i] = (test_rand(state) % 97 == 0) ?
				(unsigned char)test_rand(state) : 0;
			break;
		default:
			p[i] = (unsigned char)((i / 7) ^ (i >> 11)) +
			       (unsigned char)(test_rand(state) % 3);
			break;
		}
	}
}

uint32_t test_crc32c(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint32_t c = 0xffffffffu;

	for (size_t i = 0; i < n; i++) {
		c ^= b[i];
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
	}
	return ~c;
}

uint32_t test_le32(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

uint64_t test_le64(const void *p)
{
	const uint8_t *b = p;
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | b[i];
	return v;
}

void test_put_le(void *p, uint64_t v, size_t n)
{
	uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

int test_host_big(void)
{
	const uint16_t one = 1;

	return *(const uint8_t *)&one == 0;
}

uint64_t test_cdiv(uint64_t a, uint64_t b)
{
	return (a + b - 1) / b;
}

void test_cut_chunk(int rank, const uint64_t *shape, const uint64_t *chunk,
		    const uint8_t *in, const uint64_t *cc, size_t es,
		    uint8_t *out)
{
	uint64_t n = 1, idx[SHARDPIPE_MAX_RANK] = { 0 };
	int big = test_host_big();

	for (int d = 0; d < rank; d++)
		n *= chunk[d];
	for (uint64_t e = 0; e < n; e++) {
		uint64_t off = 0;
		int inside = 1;

		for (int d = 0; d < rank; d++) {
			uint64_t x = cc[d] * chunk[d] + idx[d];

			inside &= x < shape[d];
			off = off * shape[d] + x;
		}
		for (size_t b = 0; b < es; b++)
			out[e * es + b] = !inside ? 0 :
					  big ? in[off * es + es - 1 - b]
					      : in[off * es + b];
		for (int d = rank - 1; d >= 0; d--) {
			if (++idx[d] < chunk[d])
				break;
			idx[d] = 0;
		}
	}
}

void test_shard_path(char *path, size_t cap, const char *root, int rank,
		     const uint64_t *scount, uint64_t k, uint64_t *s)
{
	size_t n;

	for (int d = rank - 1; d >= 0; d--) {
		s[d] = k % scount[d];
		k /= scount[d];
	}
	n = (size_t)snprintf(path, cap, "%s/c", root);
	for (int d = 0; d < rank && n < cap; d++)
		n += (size_t)snprintf(path + n, cap - n, "/%llu",
				      (unsigned long long)s[d]);
}

int test_same_bytes(const void *got, const void *want, size_t n,
		    const char *fmt, ...)
{
	const uint8_t *g = got, *w = want;
	char where[512];
	va_list ap;
	size_t i = 0;

	while (i < n && g[i] == w[i])
		i++;
	if (i == n)
		return 1;
	va_start(ap, fmt);
	vsnprintf(where, sizeof(where), fmt, ap);
	va_end(ap);
	diag("%s: byte %zu is 0x%02x, expected 0x%02x", where, i, g[i], w[i]);
	return 0;
}

void *test_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (p == NULL)
		bail("out of memory for %zu bytes", n);
	return p;
}

char *test_tmpdir(const char *tag)
{
	const char *base = getenv("TMPDIR");
	char *path;

	if (base == NULL || *base == '\0')
		base = "/tmp";
	if (asprintf(&path, "%s/shardpipe-%s-XXXXXX", base, tag) < 0)
		bail("out of memory");
	if (mkdtemp(path) == NULL)
		bail("mkdtemp %s: %s", path, strerror(errno));
	return path;
}

static int rm_one(const char *p, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

int test_rmtree(const char *path)
{
	return nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void *test_slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	size_t len = 0, cap = 0;

	if (f == NULL)
		return NULL;
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 65536;
			buf = realloc(buf, cap + 1);
			if (buf == NULL)
				bail("out of memory");
		}
		size_t got = fread(buf + len, 1, cap - len, f);
		len += got;
		if (got == 0)
			break;
	}
	fclose(f);
	buf[len] = '\0';
	*n = len;
	return buf;
}

int test_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

void test_extract_box(const uint8_t *data, const uint64_t *size, int rank,
		      size_t es, const uint64_t *lo, const uint64_t *hi,
		      uint8_t *out)
{
	uint64_t idx[SHARDPIPE_MAX_RANK];
	const size_t inner = (size_t)(hi[rank - 1] - lo[rank - 1]) * es;

	memcpy(idx, lo, sizeof(idx[0]) * (size_t)rank);
	for (;;) {
		uint64_t off = 0;
		int d;

		for (d = 0; d < rank; d++)
			off = off * size[d] + idx[d];
		memcpy(out, data + off * es, inner);
		out += inner;
		for (d = rank - 2; d >= 0; d--) {
			if (++idx[d] < hi[d])
				break;
			idx[d] = lo[d];
		}
		if (d < 0)
			return;
	}
}

#define FOREIGN_TEXT "the operator's notes\n"

int test_plant_foreign(const char *path)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return 0;
	fputs(FOREIGN_TEXT, f);
	return fclose(f) == 0;
}

int test_foreign_kept(const char *path)
{
	char kept[64] = "";
	FILE *f = fopen(path, "r");

	if (f != NULL) {
		if (fgets(kept, sizeof(kept), f) == NULL)
			kept[0] = '\0';
		fclose(f);
	}
	unlink(path);
	return strcmp(kept, FOREIGN_TEXT) == 0;
}

int test_child_clean(int status)
{
	if (WIFSIGNALED(status) || (WIFEXITED(status) &&
				    WEXITSTATUS(status) == 0))
		return 1;
	diag("the writer exited with status %d",
	     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

static void *no_work(void *arg)
{
	return arg;
}

int test_threads_now(void)
{
	static int started;
	pthread_t first;

	if (!started) {
		if (pthread_create(&first, NULL, no_work, NULL) != 0 ||
		    pthread_join(first, NULL) != 0)
			bail("pthread_create failed");
		started = 1;
	}
	return test_entries("/proc/self/task");
}

/* test_same_tree's walk: nftw passes no user pointer. */
static const char *cmp_other;
static size_t cmp_skip;
static int cmp_bad, cmp_files;

static int cmp_one(const char *p, const struct stat *sb, int flag,
		   struct FTW *ftw)
{
	char other[4096];
	size_t na, nb;
	void *a, *b;

	(void)sb;
	(void)ftw;
	if (flag != FTW_F)
		return 0;
	cmp_files++;
	snprintf(other, sizeof(other), "%s%s", cmp_other, p + cmp_skip);
	a = test_slurp(p, &na);
	b = test_slurp(other, &nb);
	if (a == NULL || b == NULL || na != nb || memcmp(a, b, na) != 0) {
		if (cmp_bad++ < 3)
			diag("%s differs from %s", p, other);
	}
	free(a);
	free(b);
	return 0;
}

int test_same_tree(const char *a, const char *b, int *files)
{
	cmp_bad = 0;
	cmp_files = 0;
	cmp_other = b;
	cmp_skip = strlen(a);
	nftw(a, cmp_one, 16, FTW_PHYS);
	cmp_other = a;
	cmp_skip = strlen(b);
	nftw(b, cmp_one, 16, FTW_PHYS);
	if (files != NULL)
		*files = cmp_files;
	return cmp_bad == 0;
}

int test_may_skip(const char *name, const char *why)
{
	static const char *const absent[] = {
		"no CUDA device", "no OpenCL platform", "no OpenCL device",
	};
	const char *built = getenv("SHARDPIPE_TEST_BACKENDS");
	size_t len = strlen(name);
	int has = strcmp(name, "cpu") == 0 || strcmp(name, "reference") == 0;

	/* name as a word of the space-separated list */
	for (const char *p = built; !has && p != NULL && *p != '\0';) {
		p += strspn(p, " ");
		has = strncmp(p, name, len) == 0 &&
		      (p[len] == ' ' || p[len] == '\0');
		p += strcspn(p, " ");
	}
	if (!has)
		return 1;
	for (size_t i = 0; i < sizeof(absent) / sizeof(absent[0]); i++)
		if (strncmp(why, absent[i], strlen(absent[i])) == 0)
			return 1;
	bail("%s is built but unusable: %s", name, why);
}

int test_backend_usable(const char *name, char *why, size_t n)
{
	for (int i = 0; i < shardpipe_backend_count(); i++) {
		shardpipe_backend_info info;

		if (shardpipe_backend_probe(i, &info) != SHARDPIPE_OK)
			bail("shardpipe_backend_probe(%d) failed", i);
		if (strcmp(info.name, name) != 0)
			continue;
		snprintf(why, n, "%s", info.detail);
		return info.usable || !test_may_skip(name, info.detail);
	}
	snprintf(why, n, "the library has no backend %s", name);
	test_may_skip(name, why);
	return 0;
}

shardpipe_sink test_sink(void *user,
			 int (*shard)(void *, const uint64_t *, int,
				      const void *, size_t, const void *,
				      size_t),
			 int (*metadata)(void *, const char *, size_t))
{
	shardpipe_sink s;

	shardpipe_sink_init(&s);
	s.user = user;
	s.shard = shard;
	s.metadata = metadata;
	return s;
}

void test_small_desc(shardpipe_desc *d, shardpipe_codec codec)
{
	shardpipe_desc_init(d);
	d->rank = 2;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->codec = codec;
	d->backend = "cpu";
	for (int k = 0; k < 2; k++) {
		d->dims[k].size = 10;
		d->dims[k].chunk = 4;
		d->dims[k].chunks_per_shard = 2;
	}
}

void test_desc3(shardpipe_desc *d, const uint64_t shape[3],
		const uint64_t chunk[3], const uint64_t cps[3])
{
	shardpipe_desc_init(d);
	d->rank = 3;
	d->dtype = SHARDPIPE_DTYPE_UINT16;
	d->codec = SHARDPIPE_CODEC_NONE;
	d->backend = "cpu";
	d->threads = 2;
	d->overwrite = 1;
	for (int k = 0; k < 3; k++) {
		d->dims[k].size = shape[k];
		d->dims[k].chunk = chunk[k];
		d->dims[k].chunks_per_shard = cps[k];
	}
}

void test_refused(const char *tmp, const shardpipe_desc *d, int code,
		  const char *word, const char *what)
{
	shardpipe_stream *s = (shardpipe_stream *)1;
	char *path;
	int rc;

	if (asprintf(&path, "%s/store.zarr", tmp) < 0)
		bail("out of memory");
	rc = shardpipe_stream_open(&s, path, d);
	is_int(rc, code, "%s: refused with %s", what, shardpipe_strerror(code));
	ok(s == NULL && test_entries(tmp) == 0 &&
		   strstr(shardpipe_last_error_message(), word) != NULL,
	   "%s: nothing written, message names \"%s\" (%s)", what, word,
	   shardpipe_last_error_message());
	free(path);
}

size_t test_encode(int codec, const void *src, size_t n, void *dst,
		   size_t cap)
{
	if (codec == 0) {
		if (n > cap)
			bail("test_encode: %zu bytes do not fit in %zu", n, cap);
		memcpy(dst, src, n);
		return n;
	}
	if (codec == 1) {
		size_t r = ZSTD_compress(dst, cap, src, n, 3);

		if (ZSTD_isError(r))
			bail("ZSTD_compress: %s", ZSTD_getErrorName(r));
		return r;
	}
	if (codec == 2) {
		z_stream z;

		memset(&z, 0, sizeof(z));
		if (deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8,
				 Z_DEFAULT_STRATEGY) != Z_OK)
			bail("deflateInit2");
		z.next_in = (Bytef *)src;
		z.avail_in = (uInt)n;
		z.next_out = dst;
		z.avail_out = (uInt)cap;
		if (deflate(&z, Z_FINISH) != Z_STREAM_END)
			bail("deflate");
		n = z.total_out;
		deflateEnd(&z);
		return n;
	}
	bail("test_encode: codec %d", codec);
}

size_t test_decode(int codec, const void *src, size_t n, void *dst, size_t cap)
{
	if (codec == 0) {
		if (n != cap)
			return (size_t)-1;
		memcpy(dst, src, n);
		return n;
	}
	if (codec == 1) {
		unsigned long long fcs = ZSTD_getFrameContentSize(src, n);
		size_t r;

		/* Readers exist that need the frame content size. */
		if (fcs != cap)
			return (size_t)-1;
		r = ZSTD_decompress(dst, cap, src, n);
		return (ZSTD_isError(r) || r != cap) ? (size_t)-1 : r;
	}
	if (codec == 2) {
		z_stream z;
		int rc;
		size_t out;

		memset(&z, 0, sizeof(z));
		if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
			return (size_t)-1;
		z.next_in = (Bytef *)src;
		z.avail_in = (uInt)n;
		z.next_out = dst;
		z.avail_out = (uInt)cap;
		rc = inflate(&z, Z_FINISH);
		out = z.total_out;
		/* The member must end exactly at the end of the chunk. */
		if (rc != Z_STREAM_END || z.avail_in != 0)
			out = (size_t)-1;
		inflateEnd(&z);
		return out == cap ? out : (size_t)-1;
	}
	return (size_t)-1;
}

/* Spans of `span` bytes, or of random sizes from *rng when it is not
 * NULL. */
static int write_in(const char *dir, const shardpipe_desc *desc,
		    const uint8_t *data, size_t n, size_t span, uint64_t *rng)
{
	shardpipe_stream *s;
	size_t at = 0;
	int rc = shardpipe_stream_open(&s, dir, desc);

	if (rc != SHARDPIPE_OK) {
		diag("open %s: %s", desc->backend ? desc->backend : "auto",
		     shardpipe_last_error_message());
		return rc;
	}
	while (at < n && rc == SHARDPIPE_OK) {
		size_t k = rng != NULL ? 1 + test_rand(rng) % (n / 3 + 1)
				       : span;

		if (k == 0 || k > n - at)
			k = n - at;
		rc = shardpipe_stream_append(s, data + at, k);
		at += k;
	}
	if (rc != SHARDPIPE_OK)
		diag("append %s: %s", desc->backend ? desc->backend : "auto",
		     shardpipe_stream_message(s));
	if (shardpipe_stream_close(s) != SHARDPIPE_OK && rc == SHARDPIPE_OK) {
		diag("close: %s", shardpipe_last_error_message());
		rc = SHARDPIPE_ERR_IO;
	}
	return rc;
}

int test_write_spans(const char *dir, const shardpipe_desc *desc,
		     const uint8_t *data, size_t n, uint64_t seed)
{
	uint64_t rng = seed;

	return write_in(dir, desc, data, n, 0, &rng);
}

int test_write_in(const char *dir, const shardpipe_desc *desc,
		  const uint8_t *data, size_t n, size_t span)
{
	return write_in(dir, desc, data, n, span, NULL);
}

int test_reads_back(const char *dir, uint64_t rows, const uint8_t *data,
		    size_t n)
{
	shardpipe_reader *r;
	shardpipe_array_info info;
	uint64_t start[SHARDPIPE_MAX_RANK] = { 0 };
	uint8_t *got;
	int same;

	if (shardpipe_reader_open(&r, dir) != SHARDPIPE_OK) {
		diag("reader: %s", shardpipe_last_error_message());
		return 0;
	}
	got = test_xmalloc(n);
	/* The row count first: reading a longer array into got would
	 * overrun it. */
	same = shardpipe_reader_info(r, &info) == SHARDPIPE_OK &&
	       info.shape[0] == rows &&
	       shardpipe_reader_read(r, start, info.shape, got, n) ==
		       SHARDPIPE_OK;
	if (!same)
		diag("reader: %s", shardpipe_reader_message(r));
	else
		same = test_same_bytes(got, data, n, "%s read back", dir);
	free(got);
	shardpipe_reader_close(r);
	return same;
}
