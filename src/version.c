/* version.c - version, error strings and the names of enum values. */
#include "common.h"

#include <stdio.h>
#include "zarr_meta.h"

#define STR_(x) #x
#define STR(x) STR_(x)

const char *shardpipe_version(void)
{
	return STR(SHARDPIPE_VERSION_MAJOR) "." STR(SHARDPIPE_VERSION_MINOR) "."
		STR(SHARDPIPE_VERSION_PATCH);
}

/* The message of the last failure on this thread that had no handle to
 * carry it (a failed open). */
static __thread char last_error[512];

void sp_last_error_set(const char *msg)
{
	snprintf(last_error, sizeof(last_error), "%s", msg);
}

const char *shardpipe_last_error_message(void)
{
	return last_error;
}

static const char *const messages[SHARDPIPE_ERR_COUNT_] = {
	[SHARDPIPE_OK] = "success",
	[SHARDPIPE_ERR_INVALID_ARGUMENT] = "invalid argument",
	[SHARDPIPE_ERR_RANK] = "rank out of range",
	[SHARDPIPE_ERR_DIM_SIZE] = "dimension size is zero",
	[SHARDPIPE_ERR_CHUNK_SIZE] = "chunk size is zero",
	[SHARDPIPE_ERR_SHARD_SIZE] = "chunks per shard is zero",
	[SHARDPIPE_ERR_OVERFLOW] = "size overflow",
	[SHARDPIPE_ERR_DTYPE] = "unknown data type",
	[SHARDPIPE_ERR_CODEC] = "unknown or unavailable codec",
	[SHARDPIPE_ERR_LEVEL] = "compression level out of range",
	[SHARDPIPE_ERR_BACKEND] = "unknown or unusable backend",
	[SHARDPIPE_ERR_PATH] = "path cannot hold a store",
	[SHARDPIPE_ERR_EXISTS] = "the path already holds a store or other files",
	[SHARDPIPE_ERR_NOMEM] = "out of memory",
	[SHARDPIPE_ERR_IO] = "input/output error",
	[SHARDPIPE_ERR_NOSPACE] = "no space left on the filesystem",
	[SHARDPIPE_ERR_ACCESS] = "permission denied",
	[SHARDPIPE_ERR_BEYOND_END] = "append past the end of the append dimension",
	[SHARDPIPE_ERR_CLOSED] = "stream closed or failed",
	[SHARDPIPE_ERR_SINK] = "the sink reported a failure",
	[SHARDPIPE_ERR_DEVICE] = "device error",
	[SHARDPIPE_ERR_CODEC_FAILED] = "compressor failed",
	[SHARDPIPE_ERR_FORMAT] = "malformed store",
	[SHARDPIPE_ERR_CORRUPT] = "corrupt data in store",
	[SHARDPIPE_ERR_UNSUPPORTED] = "unsupported store feature",
	[SHARDPIPE_ERR_NAME] = "invalid dimension or array name",
	[SHARDPIPE_ERR_ABI] = "plugin built for another ABI",
	[SHARDPIPE_ERR_BUSY] = "another writer holds the store",
};

const char *shardpipe_strerror(int code)
{
	if (code < 0 || code >= SHARDPIPE_ERR_COUNT_ || messages[code] == NULL)
		return "unknown error";
	return messages[code];
}

const char *shardpipe_dtype_name(shardpipe_dtype t)
{
	return zarr_dtype_name(t);
}

int shardpipe_dtype_from_name(const char *name, shardpipe_dtype *out)
{
	if (name == NULL || out == NULL)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	for (int t = 0; t < SHARDPIPE_DTYPE_COUNT_; t++)
		if (strcmp(name, zarr_dtype_name((shardpipe_dtype)t)) == 0) {
			*out = (shardpipe_dtype)t;
			return SHARDPIPE_OK;
		}
	return SHARDPIPE_ERR_DTYPE;
}

size_t shardpipe_dtype_size(shardpipe_dtype t)
{
	static const unsigned char sizes[SHARDPIPE_DTYPE_COUNT_] = {
		1, 1, 2, 4, 8, 1, 2, 4, 8, 2, 4, 8,
	};

	return (unsigned)t < SHARDPIPE_DTYPE_COUNT_ ? sizes[t] : 0;
}

const char *shardpipe_codec_name(shardpipe_codec c)
{
	static const char *const names[SHARDPIPE_CODEC_COUNT_] = {
		"none", "zstd", "gzip", "blosc",
	};

	return (unsigned)c < SHARDPIPE_CODEC_COUNT_ ? names[c] : NULL;
}
