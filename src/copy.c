/*
 * copy.c - the staging copy (doc/design.md §14.1).
 *
 * The backend reads a staging buffer only when it is full, from its first
 * byte.  When the buffer is larger than the last-level cache, nothing the
 * caller's copy leaves in the cache is still there when it is read, so an
 * ordinary store's read of the line for ownership and the eviction of
 * lines the stream still wants are waste: a third of the memory traffic
 * of a copy.  Non-temporal stores write lines straight to memory.
 * Measured on `stack` (8 MiB rows, 512 MiB batches): the copy went from
 * 11.6-12.7 to 19.8-23.0 GB/s, which is what limits an array of zeros
 * once no chunk of it is gathered (bench/README.md).  Smaller batches
 * keep memcpy, whose lines are still in cache when the backend reads them.
 */
#include "copy.h"

#include <pthread.h>
#include <stdlib.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* When sysfs says nothing (not Linux, a container hiding it): larger than
 * most last-level caches a core shares. */
#define CACHE_UNKNOWN_BYTES (64ull << 20)
/* Below this a copy is not worth the fence. */
#define PAST_CACHE_MIN (256u << 10)

/* The largest cache cpu0 lists in sysfs ("32768K"), in bytes; 0 if none. */
static uint64_t largest_cache(void)
{
	uint64_t best = 0;

	for (int i = 0; i < 16; i++) {
		char path[96];
		unsigned long long v;
		char unit = 'B';
		FILE *f;

		snprintf(path, sizeof(path),
			 "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fscanf(f, "%llu%c", &v, &unit) >= 1) {
			if (unit == 'K')
				v <<= 10;
			else if (unit == 'M')
				v <<= 20;
			if (v > best)
				best = v;
		}
		fclose(f);
	}
	return best;
}

static uint64_t cache_bytes;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

/* The caches do not change while the process runs: sysfs is read once. */
static void cache_read(void)
{
	uint64_t c = largest_cache();

	cache_bytes = c ? c : CACHE_UNKNOWN_BYTES;
}

int copy_past_cache(uint64_t batch_bytes)
{
#if defined(__SSE2__)
	pthread_once(&cache_once, cache_read);
	return batch_bytes / 2 > cache_bytes;
#else
	(void)batch_bytes;
	return 0;
#endif
}

/* The copy with streaming stores, fenced. */
static void copy_past(uint8_t *dst, const uint8_t *src, size_t n)
{
#if defined(__SSE2__)
	/* Streaming stores want 16-byte aligned destinations; the source
	 * is the caller's and may lie anywhere. */
	size_t head = (16 - ((uintptr_t)dst & 15)) & 15, i;

	if (head > n)
		head = n;
	memcpy(dst, src, head);
	dst += head;
	src += head;
	n -= head;
	i = n / 64 * 64;
	copy_run_past(dst, src, i);
	copy_fence();
	memcpy(dst + i, src + i, n - i);
#else
	memcpy(dst, src, n);
#endif
}

void copy_staging(uint8_t *dst, const uint8_t *src, size_t n, int past_cache)
{
	if (past_cache && n >= PAST_CACHE_MIN)
		copy_past(dst, src, n);
	else
		memcpy(dst, src, n);
}

/* The first element's bytes are the fill's, and the run equals itself
 * shifted by one element.  Data differs within its first bytes, so the
 * check costs little but on fill. */
void copy_fill(uint8_t *dst, size_t n, const uint8_t *elem, unsigned es)
{
	size_t done;
	unsigned same = 1;

	if (n == 0)
		return;
	for (unsigned b = 1; b < es; b++)
		same &= elem[b] == elem[0];
	/* Zero, the usual fill, and every one-byte element: memset. */
	if (same) {
		memset(dst, elem[0], n);
		return;
	}
	memcpy(dst, elem, es < n ? es : n);
	for (done = es; done < n; done *= 2)
		memcpy(dst + done, dst, done < n - done ? done : n - done);
}

void copy_fill_at(uint8_t *dst, size_t n, const uint8_t *elem, unsigned es,
		  unsigned phase)
{
	size_t head = phase % es != 0 ? es - phase % es : 0;

	if (head > n)
		head = n;
	memcpy(dst, elem + phase % es, head);
	copy_fill(dst + head, n - head, elem, es);
}

int copy_is_fill(const uint8_t *src, size_t n, const uint8_t *fill,
		 unsigned es, unsigned phase)
{
	for (size_t i = 0; i < n && i < es; i++)
		if (src[i] != fill[(phase + i) % es])
			return 0;
	return n <= es || memcmp(src, src + es, n - es) == 0;
}

/* Blocks that stay in the L2 cache between their copy and their check. */
#define CHECK_BLOCK (64u << 10)

int copy_staging_fill(uint8_t *dst, const uint8_t *src, size_t n,
		      int past_cache, const uint8_t *fill, unsigned es,
		      unsigned phase)
{
	const int past = past_cache && n >= PAST_CACHE_MIN;
	size_t at = 0;

	while (at < n) {
		size_t b = n - at < CHECK_BLOCK ? n - at : CHECK_BLOCK;

		/* The whole span decides how it is stored, not the
		 * block. */
		if (past)
			copy_past(dst + at, src + at, b);
		else
			memcpy(dst + at, src + at, b);
		if (!copy_is_fill(src + at, b, fill, es,
			     (unsigned)((phase + at) % es))) {
			at += b;
			if (past)
				copy_past(dst + at, src + at, n - at);
			else
				memcpy(dst + at, src + at, n - at);
			return 0;
		}
		at += b;
	}
	return 1;
}
