/*
 * codec.h - what the host layer knows of each chunk codec: its Zarr name,
 * its level range, its worst-case output size, and decoding for readers.
 * Encoding belongs to the backends.
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
 * Decode one encoded chunk of n bytes into dst, which must receive exactly
 * cap bytes.  Returns SHARDPIPE_OK, or SHARDPIPE_ERR_CORRUPT with err
 * describing the failure (never reads or writes out of bounds, whatever
 * src holds).
 */
SP_INTERNAL int codec_decode(shardpipe_codec c, const void *src, size_t n,
			     void *dst, size_t cap, struct sp_err *err);

#endif
