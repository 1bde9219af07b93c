/*
 * struct_size.c - the public structs that may grow (doc/design.md §16.3):
 * the one copy through which the library fills a caller's output struct
 * and takes in a caller's sink, and the sink's initialiser.
 * (shardpipe_desc_init_sized, which sets defaults, is in stream.c.)
 */
#include <stddef.h>

#include "common.h"

/* sp_struct_copy writes struct_size at offset 0 of each of these. */
_Static_assert(offsetof(shardpipe_desc, struct_size) == 0, "desc");
_Static_assert(offsetof(shardpipe_sink, struct_size) == 0, "sink");
_Static_assert(offsetof(shardpipe_stats, struct_size) == 0, "stats");
_Static_assert(offsetof(shardpipe_array_info, struct_size) == 0, "info");
_Static_assert(offsetof(shardpipe_backend_info, struct_size) == 0, "backend");

int sp_struct_copy(void *dst, size_t dst_size, const void *src,
		   size_t src_size)
{
	size_t n = dst_size < src_size ? dst_size : src_size;

	if (dst == NULL || src == NULL || n < sizeof(size_t))
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	memcpy(dst, src, n);
	memcpy(dst, &n, sizeof(n));
	return SHARDPIPE_OK;
}

void shardpipe_sink_init_sized(shardpipe_sink *sink, size_t size)
{
	shardpipe_sink s;

	if (sink == NULL || size < sizeof(size_t))
		return;
	memset(&s, 0, sizeof(s));
	s.struct_size = sizeof(s);
	/* A caller built against an older header owns fewer bytes. */
	sp_struct_copy(sink, size, &s, sizeof(s));
}
