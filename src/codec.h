/*
 * codec.h - what the host layer knows of each chunk codec: its Zarr name,
 * its level range and settings, its worst-case output size, and decoding
 * for readers.  Encoding belongs to the backends.
 */
#ifndef SHARDPIPE_CODEC_H
#define SHARDPIPE_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/* Inclusive level range; SHARDPIPE_OK when level is valid for c. */
SP_INTERNAL int codec_check_level(shardpipe_codec c, int level,
				  struct sp_err *err);

/* Worst-case encoded size of n bytes (the slot capacity). */
SP_INTERNAL uint64_t codec_bound(shardpipe_codec c, uint64_t n);

/*
 * Blosc settings: SHARDPIPE_OK when cname, shuffle and blocksize are valid
 * and this build's c-blosc can encode with cname; otherwise
 * SHARDPIPE_ERR_CODEC with a message that names the value (or says that
 * the library was built without c-blosc).
 */
SP_INTERNAL int codec_check_blosc(shardpipe_blosc_cname cname,
				  shardpipe_blosc_shuffle shuffle,
				  uint32_t blocksize, struct sp_err *err);

/* Zarr's and c-blosc's names: "zstd", "lz4", ...; "noshuffle", "shuffle",
 * "bitshuffle".  NULL for a value out of range. */
SP_INTERNAL const char *codec_blosc_cname(shardpipe_blosc_cname c);
SP_INTERNAL const char *codec_blosc_shuffle(shardpipe_blosc_shuffle s);

/* Largest chunk a blosc1 container holds (c-blosc's BLOSC_MAX_BUFFERSIZE:
 * its sizes are signed 32-bit, less the 16-byte header). */
#define CODEC_BLOSC_MAX_BYTES ((uint64_t)INT32_MAX - 16)

/*
 * Decode one encoded chunk of n bytes into dst, which must receive exactly
 * cap bytes.  Returns SHARDPIPE_OK, or SHARDPIPE_ERR_CORRUPT with err
 * describing the failure (never reads or writes out of bounds, whatever
 * src holds).
 */
SP_INTERNAL int codec_decode(shardpipe_codec c, const void *src, size_t n,
			     void *dst, size_t cap, struct sp_err *err);

/*
 * codec_decode with a decoder kept across calls (*dctx, NULL at first,
 * freed by codec_dctx_free), of which only the first `want` bytes (want
 * <= cap) are needed: a zstd frame that declares cap bytes is decoded only
 * as far as the block that holds byte want - 1 (a read that ends early in
 * a chunk decodes its prefix, doc/design.md §19.1); dst must still hold
 * cap bytes.  Other codecs, and a prefix that spares less than a block
 * (128 KiB), decode it whole.  Damage past
 * the prefix is not seen: verify, and any read that reaches it, report it.
 */
SP_INTERNAL int codec_decode_prefix(shardpipe_codec c, void **dctx,
				    const void *src, size_t n, void *dst,
				    size_t cap, size_t want,
				    struct sp_err *err);
SP_INTERNAL void codec_dctx_free(void *dctx);

#endif
