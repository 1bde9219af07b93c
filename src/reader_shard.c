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

void reader_close_shard(struct shardpipe_reader *r)
{
	if (r->obj != NULL)
		r->src->ops->close(r->src, r->obj);
	r->obj = NULL;
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
int reader_open_shard(struct shardpipe_reader *r, const uint64_t *s)
{
	struct sp_err e;
	int rc;

	reader_close_shard(r);
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
int reader_chunk_extent(const struct shardpipe_reader *r, uint64_t lin,
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
int reader_load_chunk(struct shardpipe_reader *r, uint64_t lin,
		      uint8_t **out)
{
	uint64_t off = 0, nb = 0;
	struct sp_err e;
	uint8_t *cur;
	size_t len;

	reader_chunk_extent(r, lin, &off, &nb);
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

