/*
 * copy.h - the staging copy (doc/design.md §14.1): memcpy, or, for batches
 * larger than the cache, stores that go past it.
 */
#ifndef SHARDPIPE_COPY_H
#define SHARDPIPE_COPY_H

#include "common.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Whether a staging buffer of batch_bytes is to be written past the
 * cache: it is more than twice the largest cache this machine reports. */
SP_INTERNAL int copy_past_cache(uint64_t batch_bytes);

/* Copy n bytes; past_cache as copy_past_cache said.  The stores are
 * complete (fenced) when it returns, so a lock handing dst to another
 * thread orders them as it orders memcpy's. */
SP_INTERNAL void copy_staging(uint8_t *dst, const uint8_t *src, size_t n,
			      int past_cache);

/*
 * n bytes at dst set to the element `elem` (es bytes) repeated from its
 * first byte, the last element perhaps cut short: padding with the fill
 * value, the host's past the last row and the cpu backend's past the edge
 * of the other dims (design §22.1).
 */
SP_INTERNAL void copy_fill(uint8_t *dst, size_t n, const uint8_t *elem,
			   unsigned es);
/* copy_fill from inside an element: dst[0] is byte `phase` of one (a
 * stream that ends inside an element, padded at close). */
SP_INTERNAL void copy_fill_at(uint8_t *dst, size_t n, const uint8_t *elem,
			      unsigned es, unsigned phase);

/*
 * Whether n bytes at src are the element `fill` (es bytes) repeated, src[0]
 * being byte `phase` of an element.  The one fill check: the staging copy's
 * and the cpu backend's (design §22.2).
 */
SP_INTERNAL int copy_is_fill(const uint8_t *src, size_t n, const uint8_t *fill,
			     unsigned es, unsigned phase);

/*
 * copy_staging, and whether the n bytes copied are all the element `fill`
 * (es bytes) repeated, the first byte being byte `phase` of an element.
 * The check reads each block just copied while it is still in cache and
 * stops at the first block that is not fill, so data costs a compare of
 * a few bytes.
 */
SP_INTERNAL int copy_staging_fill(uint8_t *dst, const uint8_t *src, size_t n,
				  int past_cache, const uint8_t *fill,
				  unsigned es, unsigned phase);

/*
 * n bytes (a multiple of 64) to dst (16-byte aligned) with streaming stores,
 * not fenced: the runs of the deal into laid staging past the cache
 * (design §14.7), which ends with copy_fence.  Inline, since runs are 128
 * bytes; memcpy without SSE2.
 */
static inline void copy_run_past(uint8_t *dst, const uint8_t *src, size_t n)
{
#if defined(__SSE2__)
	for (size_t i = 0; i < n; i += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 32));
		__m128i d = _mm_loadu_si128((const __m128i *)(const void *)(src + i + 48));

		_mm_stream_si128((__m128i *)(void *)(dst + i), a);
		_mm_stream_si128((__m128i *)(void *)(dst + i + 16), b);
		_mm_stream_si128((__m128i *)(void *)(dst + i + 32), c);
		_mm_stream_si128((__m128i *)(void *)(dst + i + 48), d);
	}
#else
	memcpy(dst, src, n);
#endif
}

/* Complete the streaming stores of copy_run_past. */
static inline void copy_fence(void)
{
#if defined(__SSE2__)
	_mm_sfence();
#endif
}

#endif
