/*
 * reader_impl.h - what the reader's three parts share: the reader's state
 * and the limits on what an untrusted store may make it allocate.
 *
 * reader_meta.c parses zarr.json into that state; reader_shard.c opens
 * shards, checks their indexes and decodes chunks; reader.c assembles
 * regions from chunks and walks a store for check.
 */
#ifndef SHARDPIPE_READER_IMPL_H
#define SHARDPIPE_READER_IMPL_H

#include "common.h"
#include "json.h"
#include "store.h"

#include <pthread.h>


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

/* A shard open for a read or a check: its object and its index. */
struct reader_shard {
	char key[SHARDPIPE_MAX_RANK * 21 + 4];
	struct source_obj *obj; /* NULL: the object is missing */
	uint64_t fsize;
	uint64_t *index;        /* n_inner (offset, nbytes) pairs (sharded) */
};

/* What one thread decodes a chunk with. */
struct reader_scratch {
	uint8_t *enc;
	size_t enc_cap;
	uint8_t *dec;           /* comp_out bytes, taken when first needed */
	void *dctx;             /* the compressor's decoder (codec.h) */
	uint8_t *run;           /* neighbouring chunks read at once */
	size_t run_cap;
	struct iovec *iov;      /* a raw chunk's rows in the output */
	size_t iov_cap;
};

struct reader_pool;

struct shardpipe_reader {
	char *path;
	struct source *src;
	struct sp_err err;
	/* Opened at an OME-NGFF image's group: its levels, of which this
	 * reads level 0 (doc/design.md §28.6); else NULL. */
	struct reader_levels *levels;
	int recomputed;       /* check recomputed the levels */
	/* Keep the parsed zarr.json (a stream reopening the array reads
	 * its codec settings and attributes, doc/design.md §29). */
	int keep_meta;
	struct json_doc *meta;
	char *meta_text;      /* the text meta's raw spans point into */

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

	/* Scratch of the shard opening, on the calling thread only. */
	struct index_sort *sorted;
	uint64_t sorted_cap, nsorted; /* the last shard opened's chunks */
	/* The calling thread's decoding buffers; the pool's threads have
	 * their own (doc/design.md §19.1). */
	struct reader_scratch scratch;
	int threads;          /* 0: every core */
	struct reader_pool *pool;
	/* The source reads one request at a time (S3): reads take turns. */
	pthread_mutex_t io_mu;
	/* What reads and checks fetched, for shardpipe_reader_stats(). */
	uint64_t bytes_read, requests, chunks_decoded;
};

/* reader.c: a reader of nothing yet, freed by shardpipe_reader_close(). */
struct shardpipe_reader *reader_alloc(void);

/* reader_meta.c: open the store and parse its zarr.json into r. */
int reader_open_store(struct shardpipe_reader *r);

/* reader_shard.c.  reader_shard_open opens the shard at shard-grid
 * coordinates s into *sh and checks its index (calling thread only);
 * its object may be missing.  chunk_extent gives chunk lin's bytes in
 * it, 0 when it is empty; load_chunk decodes chunk lin with the buffers
 * of sc, into dst when dst is not NULL (chunk_bytes bytes: *out is dst
 * then), else into sc's own buffer.  Faults go to *err, naming the shard
 * and chunk.  The functions but reader_shard_open may run on any thread
 * at once. */
int reader_shard_open(struct shardpipe_reader *r, struct reader_shard *sh,
		      const uint64_t *s, struct sp_err *err);
void reader_shard_close(struct shardpipe_reader *r, struct reader_shard *sh);
int reader_chunk_extent(const struct shardpipe_reader *r,
			const struct reader_shard *sh, uint64_t lin,
			uint64_t *off, uint64_t *nb);
/* want: the decoded chunk's bytes needed, from its start (chunk_bytes:
 * all; fewer may decode only a prefix, codec_decode_prefix). */
int reader_load_chunk(struct shardpipe_reader *r,
		      const struct reader_shard *sh, uint64_t lin,
		      struct reader_scratch *sc, uint8_t *enc, uint8_t *dst,
		      size_t want, struct sp_err *err, uint8_t **out);
void reader_scratch_free(struct reader_scratch *sc);
/* Chunk lin of shard sh, held raw (no codecs, the host's byte order,
 * exactly chunk_bytes), read straight into its place in the output: the
 * whole chunk, its first element at dst, dim d's next at ds[d] bytes.
 * *placed is 0, and nothing read, when the chunk or the source is not
 * such or its rows are too short to gain: the caller decodes it. */
int reader_place_raw(struct shardpipe_reader *r, const struct reader_shard *sh,
		     uint64_t lin, struct reader_scratch *sc, uint8_t *dst,
		     const uint64_t *ds, int *placed, struct sp_err *err);
/* The n encoded bytes at off of shard sh, the chunks from chunk lin on,
 * into sc->run (doc/design.md §24.4); faults name the shard and lin. */
int reader_fetch_run(struct shardpipe_reader *r, const struct reader_shard *sh,
		     uint64_t lin, uint64_t off, uint64_t n,
		     struct reader_scratch *sc, struct sp_err *err);

/* reader_read.c: the pool of decoding threads (doc/design.md §19.1). */
void reader_pool_free(struct shardpipe_reader *r);
int reader_check_shard(struct shardpipe_reader *r, struct reader_shard *sh);

#endif
