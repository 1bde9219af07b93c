/*
 * crc32c.h - CRC-32C (Castagnoli), the checksum of the Zarr crc32c codec
 * that protects every shard index.
 */
#ifndef SHARDPIPE_CRC32C_H
#define SHARDPIPE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"

/*
 * Continue a CRC-32C over n bytes: crc32c(0, p, n) is the checksum of p.
 * Uses the SSE4.2 or ARMv8 CRC instructions when the CPU has them, chosen
 * at first use, and a table otherwise.
 */
SP_INTERNAL uint32_t crc32c(uint32_t crc, const void *p, size_t n);

/* The portable implementation, always available (tests compare to it). */
SP_INTERNAL uint32_t crc32c_portable(uint32_t crc, const void *p, size_t n);

/* Name of the implementation crc32c() uses here ("sse4.2", "armv8",
 * "table"). */
SP_INTERNAL const char *crc32c_impl_name(void);

#endif
