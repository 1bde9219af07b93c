/*
 * decode.c - libFuzzer target: the chunk decoders exactly as the reader
 * calls them, codec_decode(codec, src, n, dst, cap).  Byte 0 picks the
 * codec, bytes 1-2 the decoded size the caller expects (0..65535), the
 * rest is the encoded chunk.  dst is allocated at exactly cap bytes and
 * src at exactly n, so any write or read outside is an ASan report.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "fuzz-common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	shardpipe_codec c;
	struct sp_err err;
	size_t cap, n;
	uint8_t *src, *dst;

	if (size < 3)
		return 0;
	c = (shardpipe_codec)(data[0] % SHARDPIPE_CODEC_COUNT_);
	cap = (size_t)data[1] | (size_t)data[2] << 8;
	n = size - 3;
	src = malloc(n ? n : 1);
	dst = malloc(cap ? cap : 1);
	if (src == NULL || dst == NULL) {
		free(src);
		free(dst);
		return 0;
	}
	memcpy(src, data + 3, n);
	sp_err_clear(&err);
	if (codec_decode(c, src, n, dst, cap, &err) != SHARDPIPE_OK &&
	    err.msg[0] == '\0')
		abort(); /* a failure must say why */
	free(src);
	free(dst);
	return 0;
}
