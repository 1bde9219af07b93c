/*
 * roundtrip-cpu.c - arrays streamed through the cpu backend come back
 * exactly: every shard file is parsed here (not by the library), its index
 * CRC32C checked with the bitwise CRC of t/testutil.c, every chunk decoded by
 * libzstd or zlib and compared with the chunk cut from the input by this
 * test's own indexing; then the library's reader reads the whole array.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shardpipe.h"
#include "tap.h"
#include "testutil.h"

struct config {
	int rank;
	uint64_t size[5], chunk[5], cps[5];
	shardpipe_dtype dtype;
	shardpipe_codec codec;
	int level;
	shardpipe_index_location loc;
	uint64_t rows;   /* rows to append when dim 0 is unbounded */
	int append;      /* 0 whole epochs, 1 one byte, 2 odd sizes, 3 all */
	int pattern;     /* test_fill pattern */
	int flush_every; /* flush after every n appends; 0 never */
};

/* Count files (not directories) under path whose name starts with '.'. */
static int hidden_files(const char *path)
{
	DIR *dir = opendir(path);
	struct dirent *de;
	int n = 0;

	if (dir == NULL)
		return 0;
	while ((de = readdir(dir)) != NULL) {
		char *sub;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (de->d_name[0] == '.')
			n++;
		if (asprintf(&sub, "%s/%s", path, de->d_name) >= 0) {
			n += hidden_files(sub);
			free(sub);
		}
	}
	closedir(dir);
	return n;
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

/* Whether every chunk of shard s (grid coordinates) is all zero in the
 * input; want is scratch of one chunk. */
static int shard_zero(const struct config *c, const uint64_t *shape,
		      const uint8_t *input, const uint64_t *s, size_t es,
		      uint8_t *want)
{
	uint64_t per_shard = 1, chunk_elems = 1;

	for (int d = 0; d < c->rank; d++) {
		per_shard *= c->cps[d];
		chunk_elems *= c->chunk[d];
	}
	for (uint64_t slot = 0; slot < per_shard; slot++) {
		uint64_t r = slot, cc[5];
		int exists = 1;

		for (int d = c->rank - 1; d >= 0; d--) {
			cc[d] = s[d] * c->cps[d] + r % c->cps[d];
			r /= c->cps[d];
			exists &= cc[d] < test_cdiv(shape[d], c->chunk[d]);
		}
		if (!exists)
			continue;
		test_cut_chunk(c->rank, shape, c->chunk, input, cc, es, want);
		if (!all_zero(want, (size_t)(chunk_elems * es)))
			return 0;
	}
	return 1;
}

static int check_store(const struct config *c, const char *root,
		       const uint64_t *shape, const uint8_t *input, size_t es)
{
	uint64_t ccount[5], scount[5], nsh = 1, per_shard = 1, chunk_elems = 1;
	size_t chunk_bytes;
	uint8_t *want, *got;
	int bad = 0;

	for (int d = 0; d < c->rank; d++) {
		ccount[d] = test_cdiv(shape[d], c->chunk[d]);
		scount[d] = test_cdiv(ccount[d], c->cps[d]);
		nsh *= scount[d];
		per_shard *= c->cps[d];
		chunk_elems *= c->chunk[d];
	}
	chunk_bytes = (size_t)(chunk_elems * es);
	want = malloc(chunk_bytes);
	got = malloc(chunk_bytes);
	for (uint64_t k = 0; k < nsh && !bad; k++) {
		uint64_t s[5];
		char path[512];
		size_t len, ibytes = (size_t)(16 * per_shard + 4);
		uint8_t *shard, *index;

		test_shard_path(path, sizeof(path), root, c->rank, scount, k,
				s);
		shard = test_slurp(path, &len);
		if (shard == NULL && shard_zero(c, shape, input, s, es, want)) {
			/* A shard of chunks all fill value (zero) is left
			 * out by default (write_empty_chunks off). */
			continue;
		}
		if (shard == NULL || len < ibytes) {
			diag("%s: missing or shorter than its index", path);
			bad = 1;
			free(shard);
			break;
		}
		index = c->loc == SHARDPIPE_INDEX_END ? shard + len - ibytes
						      : shard;
		if (test_crc32c(index, ibytes - 4) !=
		    test_le32(index + ibytes - 4)) {
			diag("%s: index CRC32C mismatch", path);
			bad = 1;
		}
		for (uint64_t slot = 0; slot < per_shard && !bad; slot++) {
			uint64_t off = test_le64(index + 16 * slot);
			uint64_t nb = test_le64(index + 16 * slot + 8);
			uint64_t w[5], r2 = slot, cc[5];
			int exists = 1;

			for (int d = c->rank - 1; d >= 0; d--) {
				w[d] = r2 % c->cps[d];
				r2 /= c->cps[d];
				cc[d] = s[d] * c->cps[d] + w[d];
				exists &= cc[d] < ccount[d];
			}
			if (!exists) {
				if (off != UINT64_MAX || nb != UINT64_MAX) {
					diag("%s slot %llu: beyond the grid "
					     "but not empty", path,
					     (unsigned long long)slot);
					bad = 1;
				}
				continue;
			}
			test_cut_chunk(c->rank, shape, c->chunk, input, cc, es,
				       want);
			/* A chunk all fill value (zero) is left out. */
			if (off == UINT64_MAX && nb == UINT64_MAX &&
			    all_zero(want, chunk_bytes))
				continue;
			if (off == UINT64_MAX || off > len || nb > len - off ||
			    (c->loc == SHARDPIPE_INDEX_END &&
			     off + nb > len - ibytes) ||
			    (c->loc == SHARDPIPE_INDEX_START && off < ibytes)) {
				diag("%s slot %llu: entry (%llu, %llu) out of "
				     "bounds", path, (unsigned long long)slot,
				     (unsigned long long)off,
				     (unsigned long long)nb);
				bad = 1;
				break;
			}
			if (test_decode((int)c->codec, shard + off, (size_t)nb,
					got, chunk_bytes) != chunk_bytes) {
				diag("%s slot %llu: does not decode to %zu "
				     "bytes", path, (unsigned long long)slot,
				     chunk_bytes);
				bad = 1;
			} else if (!test_same_bytes(got, want, chunk_bytes,
						    "%s slot %llu", path,
						    (unsigned long long)slot)) {
				bad = 1;
			}
		}
		free(shard);
	}
	free(want);
	free(got);
	return !bad;
}

static int run(const struct config *c, uint64_t *rng, const char *tmp, int no)
{
	shardpipe_desc desc;
	shardpipe_stream *s;
	uint64_t shape[5];
	size_t es = shardpipe_dtype_size(c->dtype), total = es;
	uint8_t *input, *back;
	char root[512], label[256];
	int rc, n_app = 0, good = 1;

	shardpipe_desc_init(&desc);
	desc.rank = c->rank;
	desc.dtype = c->dtype;
	desc.codec = c->codec;
	desc.level = c->level;
	desc.index_location = c->loc;
	desc.backend = "cpu";
	desc.threads = 1 + (int)(test_rand(rng) % 3);
	for (int d = 0; d < c->rank; d++) {
		desc.dims[d].size = c->size[d];
		desc.dims[d].chunk = c->chunk[d];
		desc.dims[d].chunks_per_shard = c->cps[d];
		shape[d] = d == 0 && c->size[0] == 0 ? c->rows : c->size[d];
		total *= shape[d];
	}
	snprintf(label, sizeof(label),
		 "#%d rank %d %s %s:%d index %s %s dim0 %llu, append mode %d",
		 no, c->rank, shardpipe_dtype_name(c->dtype),
		 shardpipe_codec_name(c->codec), c->level,
		 c->loc ? "start" : "end", c->size[0] ? "bounded" : "unbounded",
		 (unsigned long long)shape[0], c->append);
	snprintf(root, sizeof(root), "%s/store%d.zarr", tmp, no);
	input = malloc(total + 1);
	test_fill(input, total, c->pattern, rng);

	rc = shardpipe_stream_open(&s, root, &desc);
	if (!is_int(rc, SHARDPIPE_OK, "open %s", label)) {
		diag("%s", shardpipe_last_error_message());
		free(input);
		return 0;
	}
	for (size_t at = 0; at < total && rc == SHARDPIPE_OK;) {
		size_t n;

		switch (c->append == 3 ? (int)(test_rand(rng) % 3) : c->append) {
		case 1:
			n = 1;
			break;
		case 2:
			n = 1 + (size_t)(test_rand(rng) % 4099);
			break;
		default:
			n = total;
			break;
		}
		if (n > total - at)
			n = total - at;
		rc = shardpipe_stream_append(s, input + at, n);
		at += n;
		if (c->flush_every && ++n_app % c->flush_every == 0 &&
		    rc == SHARDPIPE_OK)
			rc = shardpipe_stream_flush(s);
	}
	if (rc != SHARDPIPE_OK)
		diag("append: %s", shardpipe_stream_message(s));
	good &= is_int(rc, SHARDPIPE_OK, "append and flush %s", label);
	rc = shardpipe_stream_close(s);
	good &= is_int(rc, SHARDPIPE_OK, "close %s", label);
	good &= ok(check_store(c, root, shape, input, es),
		   "every chunk decodes independently to the input %s", label);
	good &= is_int(hidden_files(root), 0, "no temporary files left %s",
		       label);

	{
		shardpipe_reader *r;
		shardpipe_array_info info;
		uint64_t start[5] = { 0 };
		int shape_ok = 1;

		back = malloc(total + 1);
		rc = shardpipe_reader_open(&r, root);
		if (rc == SHARDPIPE_OK) {
			shardpipe_reader_info(r, &info);
			shape_ok = info.rank == c->rank;
			for (int d = 0; d < c->rank && shape_ok; d++)
				shape_ok = info.shape[d] == shape[d];
			rc = shape_ok ? shardpipe_reader_read(r, start, shape, back,
							      total + 1)
				      : SHARDPIPE_ERR_FORMAT;
			if (rc != SHARDPIPE_OK)
				diag("reader: %s", shardpipe_reader_message(r));
			shardpipe_reader_close(r);
		} else {
			diag("reader: %s", shardpipe_last_error_message());
		}
		good &= is_int(rc, SHARDPIPE_OK, "library reader reads %s",
			       label);
		if (rc == SHARDPIPE_OK)
			good &= is_blob(back, input, total,
					"library reader returns the input %s",
					label);
		else
			good &= ok(0, "library reader returns the input %s: "
				   "the read failed", label);
		free(back);
	}
	free(input);
	return good;
}

#define CFG(...) ((struct config){ __VA_ARGS__ })

int main(void)
{
	uint64_t rng = test_seed();
	char *tmp = test_tmpdir("roundtrip");
	const shardpipe_dtype by_size[4] = {
		SHARDPIPE_DTYPE_UINT8, SHARDPIPE_DTYPE_INT16,
		SHARDPIPE_DTYPE_FLOAT32, SHARDPIPE_DTYPE_UINT64,
	};
	struct config fixed[] = {
		/* rank 1, whole array one chunk */
		CFG(.rank = 1, .size = { 1000 }, .chunk = { 1000 }, .cps = { 1 },
		    .dtype = SHARDPIPE_DTYPE_UINT8, .codec = SHARDPIPE_CODEC_ZSTD,
		    .level = 1, .append = 1, .pattern = 3),
		/* rank 2 not dividing, one chunk per shard, gzip 6 */
		CFG(.rank = 2, .size = { 37, 53 }, .chunk = { 8, 16 },
		    .cps = { 1, 1 }, .dtype = SHARDPIPE_DTYPE_INT16,
		    .codec = SHARDPIPE_CODEC_GZIP, .level = 6, .append = 2,
		    .pattern = 0),
		/* rank 3 unbounded, partial last epoch, index at start */
		CFG(.rank = 3, .size = { 0, 20, 30 }, .chunk = { 4, 8, 7 },
		    .cps = { 2, 2, 3 }, .dtype = SHARDPIPE_DTYPE_FLOAT32,
		    .codec = SHARDPIPE_CODEC_ZSTD, .level = 3,
		    .loc = SHARDPIPE_INDEX_START, .rows = 19, .append = 3,
		    .pattern = 3, .flush_every = 3),
		/* rank 4, innermost chunk extent 1, codec none, 8 bytes */
		CFG(.rank = 4, .size = { 6, 5, 9, 3 }, .chunk = { 2, 2, 4, 1 },
		    .cps = { 2, 3, 2, 3 }, .dtype = SHARDPIPE_DTYPE_FLOAT64,
		    .codec = SHARDPIPE_CODEC_NONE, .append = 0, .pattern = 0),
		/* rank 5, gzip 1, unbounded with a single partial epoch */
		CFG(.rank = 5, .size = { 0, 3, 4, 5, 6 },
		    .chunk = { 3, 2, 3, 2, 4 }, .cps = { 2, 2, 1, 3, 2 },
		    .dtype = SHARDPIPE_DTYPE_UINT16, .codec = SHARDPIPE_CODEC_GZIP,
		    .level = 1, .rows = 2, .append = 2, .pattern = 2),
		/* bool, gzip level 0 (stored), index at end */
		CFG(.rank = 2, .size = { 17, 100 }, .chunk = { 5, 100 },
		    .cps = { 3, 1 }, .dtype = SHARDPIPE_DTYPE_BOOL,
		    .codec = SHARDPIPE_CODEC_GZIP, .level = 0, .append = 2,
		    .pattern = 1),
		/* many epochs per batch, a bounded dim 0 whose last shard
		 * epoch is partial */
		CFG(.rank = 2, .size = { 301, 16 }, .chunk = { 3, 16 },
		    .cps = { 4, 1 }, .dtype = SHARDPIPE_DTYPE_INT64,
		    .codec = SHARDPIPE_CODEC_ZSTD, .level = 1, .append = 2,
		    .pattern = 3, .flush_every = 7),
	};
	int nfixed = (int)(sizeof(fixed) / sizeof(fixed[0]));
	int nrandom = 14;

	plan_lazy();
	for (int i = 0; i < nfixed; i++)
		run(&fixed[i], &rng, tmp, i);
	for (int i = 0; i < nrandom; i++) {
		struct config c = { 0 };
		const shardpipe_codec codecs[3] = { SHARDPIPE_CODEC_NONE,
						    SHARDPIPE_CODEC_ZSTD,
						    SHARDPIPE_CODEC_GZIP };
		uint64_t elems = 1;

		c.rank = 1 + (int)(test_rand(&rng) % 5);
		for (int d = 0; d < c.rank; d++) {
			c.size[d] = 1 + test_rand(&rng) % (c.rank > 3 ? 7 : 40);
			c.chunk[d] = 1 + test_rand(&rng) % c.size[d];
			c.cps[d] = 1 + test_rand(&rng) % 3;
			elems *= c.size[d];
		}
		if (test_rand(&rng) % 2) {
			c.rows = c.size[0];
			c.size[0] = 0;
		}
		c.dtype = by_size[test_rand(&rng) % 4];
		c.codec = codecs[test_rand(&rng) % 3];
		c.level = c.codec == SHARDPIPE_CODEC_GZIP ?
				  (test_rand(&rng) % 2 ? 1 : 6) :
				  (test_rand(&rng) % 2 ? 1 : 3);
		c.loc = (shardpipe_index_location)(test_rand(&rng) % 2);
		c.append = elems < 3000 ? 3 : 2;
		c.pattern = (int)(test_rand(&rng) % 4);
		c.flush_every = (int)(test_rand(&rng) % 4);
		run(&c, &rng, tmp, nfixed + i);
	}
	test_rmtree(tmp);
	free(tmp);
	return done_testing();
}
