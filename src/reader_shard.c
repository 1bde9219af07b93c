/*
 * reader_shard.c - the shard at hand: its object, its index checked
 * (checksum, bounds, overlapping ranges) before any chunk is read, and
 * chunks decoded to exactly their size (doc/design.md §19).
 */
#define _GNU_SOURCE
#include "config.h"
#include "reader_impl.h"
#include "codec.h"
#include "crc32c.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void reader_shard_close(struct shardpipe_reader *r, struct reader_shard *sh)
{
	if (sh->obj != NULL)
		r->src->ops->close(r->src, sh->obj);
	sh->obj = NULL;
	free(sh->index);
	sh->index = NULL;
}

void reader_scratch_free(struct reader_scratch *sc)
{
	free(sc->enc);
	free(sc->dec);
	free(sc->run);
	free(sc->iov);
	codec_dctx_free(sc->dctx);
	memset(sc, 0, sizeof(*sc));
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
__attribute__((format(printf, 6, 7)))
static int fault(const struct shardpipe_reader *r,
		 const struct reader_shard *sh, struct sp_err *err, int code,
		 int64_t chunk, const char *fmt, ...)
{
	char what[256], where[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (!r->sharded) {
		snprintf(where, sizeof(where), "chunk %s", sh->key);
	} else if (chunk < 0) {
		snprintf(where, sizeof(where), "shard %s", sh->key);
	} else {
		char cc[SHARDPIPE_MAX_RANK * 21 + 4];

		chunk_coords(r, (uint64_t)chunk, cc, sizeof(cc));
		snprintf(where, sizeof(where), "shard %s, chunk %s", sh->key,
			 cc);
	}
	return sp_err_set(err, code, "%s/%s: %s: %s", r->path, sh->key,
			  where, what);
}

/* What the reader fetched: one request of n bytes. */
static void count_read(struct shardpipe_reader *r, uint64_t n)
{
	__atomic_add_fetch(&r->bytes_read, n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&r->requests, 1, __ATOMIC_RELAXED);
}

/* Exactly n bytes at off of the shard's object; a source that takes one
 * request at a time is read in turns. */
static int fetch(struct shardpipe_reader *r, const struct reader_shard *sh,
		 void *buf, size_t n, uint64_t off, struct sp_err *e)
{
	int rc;

	if (r->src->ops->concurrent_reads) {
		rc = r->src->ops->read(r->src, sh->obj, buf, n, off, e);
	} else {
		pthread_mutex_lock(&r->io_mu);
		rc = r->src->ops->read(r->src, sh->obj, buf, n, off, e);
		pthread_mutex_unlock(&r->io_mu);
	}
	count_read(r, n);
	return rc;
}

static int cmp_sorted(const void *a, const void *b)
{
	const struct index_sort *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return (x->chunk > y->chunk) - (x->chunk < y->chunk);
}

/*
 * Read and check the index of the shard just opened (in sh->index
 * already when have_index): its checksum, every entry inside the shard
 * body (the file without the index), no entry bigger than the codecs
 * could make a chunk, no two chunks overlapping.
 */
static int load_index(struct shardpipe_reader *r, struct reader_shard *sh,
		      int have_index, struct sp_err *err)
{
	uint64_t n = r->n_inner, lo, hi, count = 0;
	struct sp_err e;
	uint8_t *raw;

	if (sh->fsize < r->index_bytes)
		return fault(r, sh, err, SHARDPIPE_ERR_FORMAT, -1,
			     "%llu bytes cannot hold the %llu-byte index",
			     (unsigned long long)sh->fsize,
			     (unsigned long long)r->index_bytes);
	if (r->sorted_cap < n) {
		free(r->sorted);
		r->sorted = malloc(n * sizeof(*r->sorted));
		r->sorted_cap = r->sorted != NULL ? n : 0;
		if (r->sorted == NULL)
			return fault(r, sh, err, SHARDPIPE_ERR_NOMEM, -1,
				     "out of memory for the index");
	}
	lo = r->index_start ? r->index_bytes : 0;
	hi = r->index_start ? sh->fsize : sh->fsize - r->index_bytes;
	raw = (uint8_t *)sh->index;
	sp_err_clear(&e);
	if (!have_index &&
	    fetch(r, sh, raw, r->index_bytes, r->index_start ? 0 : hi, &e) !=
		    SHARDPIPE_OK)
		return fault(r, sh, err, e.code, -1, "reading the index: %s",
			     e.msg);
	if (r->index_crc) {
		uint32_t want = sp_get_le32(raw + 16 * n);
		uint32_t got = crc32c(0, raw, 16 * n);

		if (want != got)
			return fault(r, sh, err, SHARDPIPE_ERR_CORRUPT, -1,
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
		sh->index[i] = v;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t off = sh->index[2 * i], nb = sh->index[2 * i + 1];

		if (off == EMPTY_ENTRY && nb == EMPTY_ENTRY)
			continue;
		if (off == EMPTY_ENTRY || nb == EMPTY_ENTRY || nb == 0)
			return fault(r, sh, err, SHARDPIPE_ERR_FORMAT,
				     (int64_t)i,
				     "index entry (%llu, %llu) is neither a "
				     "chunk nor empty",
				     (unsigned long long)off,
				     (unsigned long long)nb);
		if (off < lo || off > hi || nb > hi - off)
			return fault(r, sh, err, SHARDPIPE_ERR_FORMAT,
				     (int64_t)i,
				     "bytes %llu..+%llu lie outside the shard "
				     "body %llu..%llu",
				     (unsigned long long)off,
				     (unsigned long long)nb,
				     (unsigned long long)lo,
				     (unsigned long long)hi);
		if (nb > r->chain.max_encoded)
			return fault(r, sh, err, SHARDPIPE_ERR_FORMAT,
				     (int64_t)i,
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
	r->nsorted = count;
	for (uint64_t i = 1; i < count; i++) {
		const struct index_sort *a = &r->sorted[i - 1];
		const struct index_sort *b = &r->sorted[i];

		if (a->off + a->nbytes > b->off) {
			char cc[SHARDPIPE_MAX_RANK * 21 + 4];

			chunk_coords(r, a->chunk, cc, sizeof(cc));
			return fault(r, sh, err, SHARDPIPE_ERR_FORMAT, b->chunk,
				     "bytes %llu..+%llu overlap chunk %s",
				     (unsigned long long)b->off,
				     (unsigned long long)b->nbytes, cc);
		}
	}
	return SHARDPIPE_OK;
}

#define INDEX_WITH_OPEN (1u << 20)

/* Open the shard (or unsharded chunk) at shard-grid coordinates s.  A
 * missing object leaves sh->obj NULL: it reads as the fill value.  A
 * source that can reads the index with the open, in one request. */
int reader_shard_open(struct shardpipe_reader *r, struct reader_shard *sh,
		      const uint64_t *s, struct sp_err *err)
{
	const struct source_ops *ops = r->src->ops;
	/* An index too large to allocate before the shard is known to
	 * exist is read after the open. */
	int together = r->sharded && ops->open_read != NULL &&
		       r->index_bytes <= INDEX_WITH_OPEN;
	struct sp_err e;
	int rc;

	sh->obj = NULL;
	sh->index = NULL;
	make_key(r, s, sh->key, sizeof(sh->key));
	/* Sized by the metadata; 8 more for the checksum. */
	if (together &&
	    (sh->index = malloc(2 * r->n_inner * sizeof(uint64_t) + 8)) == NULL)
		return fault(r, sh, err, SHARDPIPE_ERR_NOMEM, -1,
			     "out of memory for the index");
	sp_err_clear(&e);
	if (together) {
		rc = ops->open_read(r->src, sh->key, &sh->obj, &sh->fsize,
				    sh->index, r->index_bytes,
				    !r->index_start, &e);
		if (rc == SHARDPIPE_OK && sh->obj != NULL)
			count_read(r, sh->fsize < r->index_bytes
					      ? sh->fsize
					      : r->index_bytes);
	} else {
		rc = ops->open(r->src, sh->key, &sh->obj, &sh->fsize, &e);
	}
	if (rc == SHARDPIPE_ERR_FORMAT)
		return fault(r, sh, err, rc, -1, "%s", e.msg);
	if (rc != SHARDPIPE_OK)
		return fault(r, sh, err, rc, -1, "cannot open: %s", e.msg);
	if (sh->obj == NULL) {
		free(sh->index);
		sh->index = NULL;
		return SHARDPIPE_OK;
	}
	if (!r->sharded) {
		if (sh->fsize > r->chain.max_encoded)
			return fault(r, sh, err, SHARDPIPE_ERR_FORMAT, -1,
				     "%llu bytes, more than the codecs can "
				     "produce for a %llu-byte chunk",
				     (unsigned long long)sh->fsize,
				     (unsigned long long)r->chunk_bytes);
		return SHARDPIPE_OK;
	}
	/* Only allocated once a shard at least that large exists. */
	if (sh->fsize >= r->index_bytes && sh->index == NULL &&
	    (sh->index = malloc(2 * r->n_inner * sizeof(uint64_t) + 8)) == NULL)
		return fault(r, sh, err, SHARDPIPE_ERR_NOMEM, -1,
			     "out of memory for the index");
	return load_index(r, sh, together, err);
}

/* The chunk's encoded extent, or 0 when it is empty or missing. */
int reader_chunk_extent(const struct shardpipe_reader *r,
			const struct reader_shard *sh, uint64_t lin,
			uint64_t *off, uint64_t *nb)
{
	if (sh->obj == NULL)
		return 0;
	if (!r->sharded) {
		*off = 0;
		*nb = sh->fsize;
		return 1;
	}
	*off = sh->index[2 * lin];
	*nb = sh->index[2 * lin + 1];
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

/* The n bytes at off of shard sh (chunk lin's, or from it on) into the
 * scratch buffer *buf of *cap bytes, grown as needed; n is bounded by
 * the index's checks or the source's coalesce size. */
static int fetch_into(struct shardpipe_reader *r, const struct reader_shard *sh,
		      uint64_t lin, uint64_t off, uint64_t n, uint8_t **buf,
		      size_t *cap, struct sp_err *err)
{
	struct sp_err e;

	if (n > *cap) {
		uint8_t *p = realloc(*buf, n);

		if (p == NULL)
			return fault(r, sh, err, SHARDPIPE_ERR_NOMEM,
				     (int64_t)lin,
				     "out of memory for %llu bytes",
				     (unsigned long long)n);
		*buf = p;
		*cap = n;
	}
	sp_err_clear(&e);
	if (n > 0 && fetch(r, sh, *buf, n, off, &e) != SHARDPIPE_OK)
		return fault(r, sh, err, e.code, (int64_t)lin,
			     "read failed: %s", e.msg);
	return SHARDPIPE_OK;
}

int reader_fetch_run(struct shardpipe_reader *r, const struct reader_shard *sh,
		     uint64_t lin, uint64_t off, uint64_t n,
		     struct reader_scratch *sc, struct sp_err *err)
{
	return fetch_into(r, sh, lin, off, n, &sc->run, &sc->run_cap, err);
}

/*
 * Read chunk `lin` of shard sh (its bytes at enc when not NULL, fetched
 * with its neighbours) and undo its codecs, last first: a crc32c
 * strips and checks its 4 trailing bytes, the compressor must produce
 * exactly the size its input had when encoded.  On success *out points
 * to chunk_bytes bytes in native byte order: dst when it is not NULL
 * (the compressor, or the read of an uncompressed chunk, writes there
 * directly when its output is the chunk itself), else sc's buffer.
 */
int reader_load_chunk(struct shardpipe_reader *r,
		      const struct reader_shard *sh, uint64_t lin,
		      struct reader_scratch *sc, uint8_t *enc, uint8_t *dst,
		      size_t want, struct sp_err *err, uint8_t **out)
{
	uint64_t off = 0, nb = 0;
	struct sp_err e;
	uint8_t *cur;
	size_t len;

	reader_chunk_extent(r, sh, lin, &off, &nb);
	if (enc != NULL) {
		cur = enc;
		len = nb;
		goto fetched;
	}
	if (dst != NULL && r->chain.n == 0 && nb == r->chunk_bytes) {
		sp_err_clear(&e);
		if (fetch(r, sh, dst, nb, off, &e) != SHARDPIPE_OK)
			return fault(r, sh, err, e.code, (int64_t)lin,
				     "read failed: %s", e.msg);
		cur = dst;
		len = nb;
		goto decoded;
	}
	/* Bounded by max_encoded, checked with the index. */
	SP_FORWARD(fetch_into(r, sh, lin, off, nb, &sc->enc, &sc->enc_cap,
			      err));
	cur = sc->enc;
	len = nb;
fetched:
	for (int k = r->chain.n - 1; k >= 0; k--) {
		if (r->chain.kind[k] == B2B_CRC32C) {
			uint32_t stored, got;

			if (len < 4)
				return fault(r, sh, err, SHARDPIPE_ERR_CORRUPT,
					     (int64_t)lin,
					     "%zu bytes cannot hold a crc32c",
					     len);
			stored = sp_get_le32(cur + len - 4);
			got = crc32c(0, cur, len - 4);
			if (stored != got)
				return fault(r, sh, err, SHARDPIPE_ERR_CORRUPT,
					     (int64_t)lin,
					     "crc32c mismatch (stored %08x, "
					     "computed %08x)", stored, got);
			len -= 4;
		} else {
			/* The compressor's output is the chunk itself when
			 * nothing follows it in decoding order. */
			uint8_t *to = dst != NULL && k == 0 &&
					      r->chain.comp_out ==
						      r->chunk_bytes
					      ? dst
					      : sc->dec;
			int rc;

			if (to == NULL &&
			    (to = sc->dec = malloc(r->chain.comp_out)) == NULL)
				return fault(r, sh, err, SHARDPIPE_ERR_NOMEM,
					     (int64_t)lin, "out of memory");
			sp_err_clear(&e);
			/* Only the last decoding step may stop early. */
			rc = codec_decode_prefix(r->chain.comp, &sc->dctx,
						 cur, len, to,
						 r->chain.comp_out,
						 k == 0 ? want
							: r->chain.comp_out,
						 &e);
			if (rc != SHARDPIPE_OK)
				return fault(r, sh, err,
					     rc == SHARDPIPE_ERR_NOMEM
						     ? rc
						     : SHARDPIPE_ERR_CORRUPT,
					     (int64_t)lin, "%s", e.msg);
			cur = to;
			len = r->chain.comp_out;
		}
	}
decoded:
	if (len != r->chunk_bytes)
		return fault(r, sh, err, SHARDPIPE_ERR_CORRUPT, (int64_t)lin,
			     "chunk holds %zu bytes, expected %llu", len,
			     (unsigned long long)r->chunk_bytes);
	if (r->swap)
		swap_elements(cur, want < len ? want : len, r->esize);
	__atomic_add_fetch(&r->chunks_decoded, 1, __ATOMIC_RELAXED);
	if (dst != NULL && cur != dst) {
		memcpy(dst, cur, len);
		cur = dst;
	}
	*out = cur;
	return SHARDPIPE_OK;
}

/* Rows shorter than this cost the kernel more a piece than a copy does. */
#define PLACE_MIN_ROW 256

int reader_place_raw(struct shardpipe_reader *r, const struct reader_shard *sh,
		     uint64_t lin, struct reader_scratch *sc, uint8_t *dst,
		     const uint64_t *ds, int *placed, struct sp_err *err)
{
	uint64_t i[SHARDPIPE_MAX_RANK] = { 0 }, off = 0, nb = 0, doff = 0;
	int last = r->rank - 1, rc;
	size_t row = r->chunk[last] * r->esize, rows, k = 0;
	struct sp_err e;

	*placed = 0;
	if (r->chain.n != 0 || r->swap || r->src->ops->readv == NULL ||
	    ds[last] != r->esize || row < PLACE_MIN_ROW ||
	    !reader_chunk_extent(r, sh, lin, &off, &nb) ||
	    nb != r->chunk_bytes)
		return SHARDPIPE_OK;
	rows = r->chunk_bytes / row;
	if (rows > sc->iov_cap) {
		struct iovec *p = realloc(sc->iov, rows * sizeof(*p));

		if (p == NULL)
			return fault(r, sh, err, SHARDPIPE_ERR_NOMEM,
				     (int64_t)lin, "out of memory");
		sc->iov = p;
		sc->iov_cap = rows;
	}
	/* The rows in the chunk's order, each at its place in dst. */
	for (;;) {
		int d;

		sc->iov[k].iov_base = dst + doff;
		sc->iov[k++].iov_len = row;
		for (d = last - 1; d >= 0; d--) {
			if (++i[d] < r->chunk[d]) {
				doff += ds[d];
				break;
			}
			doff -= (i[d] - 1) * ds[d];
			i[d] = 0;
		}
		if (d < 0)
			break;
	}
	sp_err_clear(&e);
	if (r->src->ops->concurrent_reads) {
		rc = r->src->ops->readv(r->src, sh->obj, sc->iov, k, off, &e);
	} else {
		pthread_mutex_lock(&r->io_mu);
		rc = r->src->ops->readv(r->src, sh->obj, sc->iov, k, off, &e);
		pthread_mutex_unlock(&r->io_mu);
	}
	count_read(r, nb);
	if (rc != SHARDPIPE_OK)
		return fault(r, sh, err, e.code, (int64_t)lin,
			     "read failed: %s", e.msg);
	__atomic_add_fetch(&r->chunks_decoded, 1, __ATOMIC_RELAXED);
	*placed = 1;
	return SHARDPIPE_OK;
}
