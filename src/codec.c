#include "config.h"
#include "codec.h"

#include <libdeflate.h>
#include <zstd.h>
#ifdef HAVE_BLOSC
#include <blosc.h>
#endif

/* The blosc1 header (c-blosc's README_CHUNK_FORMAT): version, versionlz,
 * flags, typesize, then little-endian uint32 nbytes, blocksize, cbytes. */
#define BLOSC_HEADER_BYTES 16
#define BLOSC_FLAG_MEMCPYED 0x02

static const char *const blosc_cnames[SHARDPIPE_BLOSC_CNAME_COUNT_] = {
	"zstd", "lz4", "lz4hc", "blosclz", "zlib",
};

static const char *const blosc_shuffles[SHARDPIPE_BLOSC_SHUFFLE_COUNT_] = {
	"noshuffle", "shuffle", "bitshuffle",
};

const char *codec_blosc_cname(shardpipe_blosc_cname c)
{
	return (unsigned)c < SHARDPIPE_BLOSC_CNAME_COUNT_ ? blosc_cnames[c]
							   : NULL;
}

const char *codec_blosc_shuffle(shardpipe_blosc_shuffle s)
{
	return (unsigned)s < SHARDPIPE_BLOSC_SHUFFLE_COUNT_ ? blosc_shuffles[s]
							     : NULL;
}

int codec_check_blosc(shardpipe_blosc_cname cname,
		      shardpipe_blosc_shuffle shuffle, uint32_t blocksize,
		      struct sp_err *err)
{
	SP_RETURN_IF(codec_blosc_cname(cname) == NULL, err, SHARDPIPE_ERR_CODEC,
		     "unknown blosc compressor %d", (int)cname);
	SP_RETURN_IF(codec_blosc_shuffle(shuffle) == NULL, err,
		     SHARDPIPE_ERR_CODEC, "unknown blosc shuffle %d",
		     (int)shuffle);
	/* c-blosc silently raises a smaller forced block to 128 bytes; the
	 * metadata would then record a size that was not used. */
	SP_RETURN_IF(blocksize != 0 && (blocksize < 128 ||
					blocksize > (uint32_t)INT32_MAX),
		     err, SHARDPIPE_ERR_CODEC,
		     "blosc block size %u is outside 128..%d (0 = automatic)",
		     blocksize, INT32_MAX);
#ifdef HAVE_BLOSC
	SP_RETURN_IF(blosc_compname_to_compcode(blosc_cnames[cname]) < 0, err,
		     SHARDPIPE_ERR_CODEC,
		     "blosc compressor \"%s\" is not in this c-blosc %s "
		     "(it has %s)", blosc_cnames[cname],
		     BLOSC_VERSION_STRING, blosc_list_compressors());
	return SHARDPIPE_OK;
#else
	return sp_err_set(err, SHARDPIPE_ERR_CODEC,
			  "the blosc codec is unavailable: this libshardpipe "
			  "was built without c-blosc (install libblosc-dev "
			  "and run configure again)");
#endif
}

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
	case SHARDPIPE_CODEC_BLOSC:
		/* The Zarr blosc codec's clevel; 0 stores each block. */
		SP_RETURN_IF(level < 0 || level > 9, err, SHARDPIPE_ERR_LEVEL,
			     "blosc level %d is outside 0..9", level);
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
	case SHARDPIPE_CODEC_BLOSC:
		/* c-blosc falls back to a stored copy of the whole chunk
		 * behind the header when compression would not pay, and
		 * never writes more than BLOSC_MAX_OVERHEAD beyond n. */
		return n + BLOSC_HEADER_BYTES;
	default:
		return n;
	}
}

/*
 * A blosc1 container from an untrusted store.  c-blosc 1.x's decoder takes
 * no source length: it believes the header's cbytes.  So the header is
 * checked against what the store holds before c-blosc sees a byte: cbytes
 * must be the chunk's stored size, nbytes its decoded size, and the block
 * offsets (or the stored copy) must fit inside cbytes.
 */
static int decode_blosc(const uint8_t *src, size_t n, void *dst, size_t cap,
			struct sp_err *err)
{
	uint32_t nbytes, blocksize, cbytes;
	uint64_t nblocks;

	SP_RETURN_IF(n < BLOSC_HEADER_BYTES, err, SHARDPIPE_ERR_CORRUPT,
		     "blosc chunk of %zu bytes is shorter than its %d-byte "
		     "header", n, BLOSC_HEADER_BYTES);
	nbytes = sp_get_le32(src + 4);
	blocksize = sp_get_le32(src + 8);
	cbytes = sp_get_le32(src + 12);
	SP_RETURN_IF(nbytes != cap, err, SHARDPIPE_ERR_CORRUPT,
		     "blosc chunk decodes to %u bytes, expected %zu", nbytes,
		     cap);
	SP_RETURN_IF(cbytes != n, err, SHARDPIPE_ERR_CORRUPT,
		     "blosc header says %u bytes, the chunk holds %zu", cbytes,
		     n);
	SP_RETURN_IF(cap > CODEC_BLOSC_MAX_BYTES, err, SHARDPIPE_ERR_CORRUPT,
		     "blosc chunk of %zu bytes exceeds the format's limit", cap);
	if (src[2] & BLOSC_FLAG_MEMCPYED) {
		SP_RETURN_IF((uint64_t)cbytes != (uint64_t)nbytes +
						 BLOSC_HEADER_BYTES,
			     err, SHARDPIPE_ERR_CORRUPT,
			     "stored blosc chunk holds %u bytes, expected %llu",
			     cbytes,
			     (unsigned long long)nbytes + BLOSC_HEADER_BYTES);
	} else if (nbytes > 0) {
		SP_RETURN_IF(blocksize == 0, err, SHARDPIPE_ERR_CORRUPT,
			     "blosc chunk has a block size of 0");
		nblocks = nbytes / blocksize + (nbytes % blocksize != 0);
		SP_RETURN_IF(BLOSC_HEADER_BYTES + 4 * nblocks > cbytes, err,
			     SHARDPIPE_ERR_CORRUPT,
			     "blosc chunk of %u bytes cannot hold the starts of "
			     "its %llu blocks", cbytes,
			     (unsigned long long)nblocks);
	}
#ifdef HAVE_BLOSC
	{
		int r = blosc_decompress_ctx(src, dst, cap, 1);

		SP_RETURN_IF(r < 0 || (size_t)r != cap, err,
			     SHARDPIPE_ERR_CORRUPT,
			     "blosc chunk (format version %u, flags 0x%02x) does "
			     "not decode: c-blosc returned %d", src[0], src[2],
			     r);
		return SHARDPIPE_OK;
	}
#else
	(void)dst;
	return sp_err_set(err, SHARDPIPE_ERR_UNSUPPORTED,
			  "blosc chunks cannot be decoded: this libshardpipe "
			  "was built without c-blosc");
#endif
}

/* What ZSTD_decompress returned for a chunk decoded whole into cap bytes. */
static int zstd_whole(size_t r, size_t cap, struct sp_err *err)
{
	SP_RETURN_IF(ZSTD_isError(r), err, SHARDPIPE_ERR_CORRUPT, "zstd: %s",
		     ZSTD_getErrorName(r));
	SP_RETURN_IF(r != cap, err, SHARDPIPE_ERR_CORRUPT,
		     "zstd chunk decodes to %zu bytes, expected %zu", r, cap);
	return SHARDPIPE_OK;
}

int codec_decode_prefix(shardpipe_codec c, void **dctx, const void *src,
			size_t n, void *dst, size_t cap, size_t want,
			struct sp_err *err)
{
	ZSTD_outBuffer out = { dst, want, 0 };
	ZSTD_inBuffer in = { src, n, 0 };
	unsigned long long declared;
	ZSTD_DCtx *d;

	if (c != SHARDPIPE_CODEC_ZSTD)
		return codec_decode(c, src, n, dst, cap, err);
	if (*dctx == NULL)
		SP_RETURN_IF((*dctx = ZSTD_createDCtx()) == NULL, err,
			     SHARDPIPE_ERR_NOMEM,
			     "out of memory for a zstd decoder");
	d = *dctx;
	declared = ZSTD_getFrameContentSize(src, n);
	/* A prefix that spares less than a block is not worth the
	 * streaming decoder's copy out of its window. */
	if (want + ZSTD_BLOCKSIZE_MAX > cap ||
	    declared == ZSTD_CONTENTSIZE_UNKNOWN) {
		return zstd_whole(ZSTD_decompressDCtx(d, dst, cap, src, n),
				  cap, err);
	}
	SP_RETURN_IF(declared == ZSTD_CONTENTSIZE_ERROR, err,
		     SHARDPIPE_ERR_CORRUPT, "zstd: not a zstd frame");
	SP_RETURN_IF(declared != cap, err, SHARDPIPE_ERR_CORRUPT,
		     "zstd chunk decodes to %llu bytes, expected %zu",
		     declared, cap);
	ZSTD_DCtx_reset(d, ZSTD_reset_session_only);
	while (out.pos < want) {
		size_t was_in = in.pos, was_out = out.pos;
		size_t r = ZSTD_decompressStream(d, &out, &in);

		SP_RETURN_IF(ZSTD_isError(r), err, SHARDPIPE_ERR_CORRUPT,
			     "zstd: %s", ZSTD_getErrorName(r));
		/* The frame ended, or its input did, short of want; or the
		 * decoder went no further. */
		SP_RETURN_IF(out.pos < want &&
				     (r == 0 || in.pos == in.size ||
				      (in.pos == was_in && out.pos == was_out)),
			     err, SHARDPIPE_ERR_CORRUPT,
			     "zstd chunk ends after %zu bytes, expected %zu",
			     out.pos, cap);
	}
	return SHARDPIPE_OK;
}

void codec_dctx_free(void *dctx)
{
	ZSTD_freeDCtx(dctx);
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
	case SHARDPIPE_CODEC_ZSTD:
		return zstd_whole(ZSTD_decompress(dst, cap, src, n), cap, err);
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
	case SHARDPIPE_CODEC_BLOSC:
		return decode_blosc(src, n, dst, cap, err);
	default:
		return sp_err_set(err, SHARDPIPE_ERR_CODEC, "unknown codec %d",
				  (int)c);
	}
}
