/*
 * crc32c.c - CRC-32C with run-time dispatch (libdeflate's crc32.c habit):
 * a function pointer starts at a resolver that picks the best
 * implementation for this CPU, then replaces itself.
 */
#include "crc32c.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <nmmintrin.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <arm_acle.h>
#include <sys/auxv.h>
#ifndef HWCAP_CRC32
#define HWCAP_CRC32 (1 << 7)
#endif
#endif

#define POLY_REFLECTED 0x82f63b78u

/* Slicing-by-8 tables, built once on first use. */
static uint32_t table[8][256];
static int table_ready;

static void build_table(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (POLY_REFLECTED & (0u - (c & 1)));
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^
				      table[0][table[t - 1][i] & 0xff];
	__atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

uint32_t crc32c_portable(uint32_t crc, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
		build_table(); /* idempotent: racing builders write equal data */
	crc = ~crc;
	while (n >= 8) {
		uint32_t lo = crc ^ sp_get_le32(p);
		uint32_t hi = sp_get_le32(p + 4);

		crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^
		      table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
		      table[3][hi & 0xff] ^ table[2][(hi >> 8) & 0xff] ^
		      table[1][(hi >> 16) & 0xff] ^ table[0][hi >> 24];
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return ~crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
static uint32_t crc32c_sse42(uint32_t crc, const void *buf, size_t n)
{
	const uint8_t *p = buf;
	uint64_t c = ~crc;

	while (n > 0 && ((uintptr_t)p & 7)) {
		c = _mm_crc32_u8((uint32_t)c, *p++);
		n--;
	}
	while (n >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		n -= 8;
	}
	while (n--)
		c = _mm_crc32_u8((uint32_t)c, *p++);
	return ~(uint32_t)c;
}

static int have_sse42(void)
{
	unsigned a, b, c, d;

	return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_SSE4_2);
}
#elif defined(__aarch64__) && defined(__linux__)
__attribute__((target("+crc")))
static uint32_t crc32c_armv8(uint32_t crc, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	crc = ~crc;
	while (n >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		crc = __crc32cd(crc, v);
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = __crc32cb(crc, *p++);
	return ~crc;
}
#endif

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static const char *impl_name = "table";

static crc_fn choose(void)
{
#if defined(__x86_64__)
	if (have_sse42()) {
		impl_name = "sse4.2";
		return crc32c_sse42;
	}
#elif defined(__aarch64__) && defined(__linux__)
	if (getauxval(AT_HWCAP) & HWCAP_CRC32) {
		impl_name = "armv8";
		return crc32c_armv8;
	}
#endif
	impl_name = "table";
	return crc32c_portable;
}

static uint32_t resolve(uint32_t crc, const void *p, size_t n);
static crc_fn impl = resolve;

static uint32_t resolve(uint32_t crc, const void *p, size_t n)
{
	crc_fn f = choose();

	__atomic_store_n(&impl, f, __ATOMIC_RELAXED);
	return f(crc, p, n);
}

uint32_t crc32c(uint32_t crc, const void *p, size_t n)
{
	return __atomic_load_n(&impl, __ATOMIC_RELAXED)(crc, p, n);
}

const char *crc32c_impl_name(void)
{
	if (__atomic_load_n(&impl, __ATOMIC_RELAXED) == resolve)
		crc32c(0, NULL, 0);
	return impl_name;
}
