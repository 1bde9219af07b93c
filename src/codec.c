#include "codec.h"

#include <libdeflate.h>
#include <zstd.h>

int codec_check_level(shardpipe_codec c, int level, struct sp_err *err)
{
	switch (c) {
	case SHARDPIPE_CODEC_NONE:
		return SHARDPIPE_OK;
	case SHARDPIPE_CODEC_ZSTD:
		/* Negative levels exist in libzstd but have no portable
		 * meaning for the kernel encoders; 0 would mean "libzstd's
		 * default", which is not a level of its own. */
		SP_RETURN_IF(level < 1 || level > 22, err, SHARDPIPE_ERR_LEVEL,
			     "zstd level %d is outside 1..22", level);
		return SHARDPIPE_OK;
	case SHARDPIPE_CODEC_GZIP:
		/* The Zarr gzip codec allows 0..9, zlib's range. */
		SP_RETURN_IF(level < 0 || level > 9, err, SHARDPIPE_ERR_LEVEL,
			     "gzip level %d is outside 0..9", level);
		return SHARDPIPE_OK;
	default:
		return sp_err_set(err, SHARDPIPE_ERR_CODEC, "unknown codec %d",
				  (int)c);
	}
}

uint64_t codec_bound(shardpipe_codec c, uint64_t n)
{
	switch (c) {
	case SHARDPIPE_CODEC_ZSTD:
		/* ZSTD_COMPRESSBOUND, written out to stay valid for sizes
		 * beyond size_t on 32-bit hosts. */
		return n + (n >> 8) +
		       (n < (128u << 10) ? ((128u << 10) - n) >> 11 : 0);
	case SHARDPIPE_CODEC_GZIP:
		/* Every deflate encoder here falls back to stored blocks of
		 * at least 4 KiB (5 bytes of header each) when data would
		 * expand; 18 bytes of gzip header and trailer, and slack for
		 * the last partial byte and encoder padding. */
		return n + 5 * (n / 4096 + 1) + 18 + 16;
	default:
		return n;
	}
}

int codec_decode(shardpipe_codec c, const void *src, size_t n, void *dst,
		 size_t cap, struct sp_err *err)
{
	switch (c) {
	case SHARDPIPE_CODEC_NONE:
		SP_RETURN_IF(n != cap, err, SHARDPIPE_ERR_CORRUPT,
			     "raw chunk holds %zu bytes, expected %zu", n, cap);
		memcpy(dst, src, n);
		return SHARDPIPE_OK;
	case SHARDPIPE_CODEC_ZSTD: {
		size_t r = ZSTD_decompress(dst, cap, src, n);

		SP_RETURN_IF(ZSTD_isError(r), err, SHARDPIPE_ERR_CORRUPT,
			     "zstd: %s", ZSTD_getErrorName(r));
		SP_RETURN_IF(r != cap, err, SHARDPIPE_ERR_CORRUPT,
			     "zstd chunk decodes to %zu bytes, expected %zu",
			     r, cap);
		return SHARDPIPE_OK;
	}
	case SHARDPIPE_CODEC_GZIP: {
		struct libdeflate_decompressor *d =
			libdeflate_alloc_decompressor();
		size_t in_used = 0, out = 0;
		enum libdeflate_result r;

		SP_RETURN_IF(d == NULL, err, SHARDPIPE_ERR_NOMEM,
			     "out of memory for a gzip decoder");
		r = libdeflate_gzip_decompress_ex(d, src, n, dst, cap,
						  &in_used, &out);
		libdeflate_free_decompressor(d);
		SP_RETURN_IF(r == LIBDEFLATE_INSUFFICIENT_SPACE, err,
			     SHARDPIPE_ERR_CORRUPT,
			     "gzip chunk decodes to more than %zu bytes", cap);
		SP_RETURN_IF(r != LIBDEFLATE_SUCCESS, err,
			     SHARDPIPE_ERR_CORRUPT, "gzip chunk is corrupt");
		SP_RETURN_IF(out != cap, err, SHARDPIPE_ERR_CORRUPT,
			     "gzip chunk decodes to %zu bytes, expected %zu",
			     out, cap);
		SP_RETURN_IF(in_used != n, err, SHARDPIPE_ERR_CORRUPT,
			     "gzip chunk has %zu bytes after its member",
			     n - in_used);
		return SHARDPIPE_OK;
	}
	default:
		return sp_err_set(err, SHARDPIPE_ERR_CODEC, "unknown codec %d",
				  (int)c);
	}
}
