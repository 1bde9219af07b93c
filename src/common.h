/*
 * common.h - internal helpers shared by the host layer and the backends:
 * the error record every internal call fills, and the macros that return
 * through it.  Nothing here is installed.
 */
#ifndef SHARDPIPE_COMMON_H
#define SHARDPIPE_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "shardpipe.h"

#define SP_INTERNAL __attribute__((visibility("hidden")))

/*
 * The first failure of an operation: its code and a message that names
 * what is at fault (a dimension, a value, a file).  Callers keep one per
 * stream or reader; a stage that fails fills it and returns the code.
 */
struct sp_err {
	int code;
	char msg[512];
};

static inline void sp_err_clear(struct sp_err *e)
{
	e->code = SHARDPIPE_OK;
	e->msg[0] = '\0';
}

__attribute__((format(printf, 3, 4)))
static inline int sp_err_set(struct sp_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	if (e == NULL)
		return code;
	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}

/* Record the message that shardpipe_last_error_message() returns on this
 * thread (failed opens, when no handle exists to carry it). */
SP_INTERNAL void sp_last_error_set(const char *msg);

/*
 * The copy between a versioned public struct of the caller's and the
 * library's own (doc/design.md §16.3): the first min(dst_size, src_size)
 * bytes of src go to dst, nothing past them is touched, and dst's
 * struct_size (every such struct's first field) becomes that count.
 * SHARDPIPE_ERR_INVALID_ARGUMENT, touching nothing, when a pointer is NULL
 * or the count cannot hold struct_size.
 */
SP_INTERNAL int sp_struct_copy(void *dst, size_t dst_size, const void *src,
			       size_t src_size);

/* Return `code` with a message when `cond` holds (zstd's RETURN_ERROR_IF). */
/* Whether the caller's description holds `field`: a program built
 * against an older header passes a smaller struct (struct_size). */
#define DESC_HAS(desc, field) \
	((desc)->struct_size >= offsetof(shardpipe_desc, field) + \
				sizeof((desc)->field))

#define SP_RETURN_IF(cond, err, code, ...)                                    \
	do {                                                                  \
		if (cond)                                                     \
			return sp_err_set((err), (code), __VA_ARGS__);        \
	} while (0)

/* Propagate a failure whose message is already recorded. */
#define SP_FORWARD(expr)                                                      \
	do {                                                                  \
		int sp_rc_ = (expr);                                          \
		if (sp_rc_ != SHARDPIPE_OK)                                   \
			return sp_rc_;                                        \
	} while (0)

/* Seconds of CLOCK_MONOTONIC: every time the library measures or traces
 * is on this one clock, so spans of different threads and of the device
 * line up (doc/design.md §23). */
static inline double sp_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* What threads = 0 means everywhere: one thread per core online. */
static inline int sp_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 && n < 1 << 20 ? (int)n : 1;
}

/* Overflow-checked arithmetic on sizes. */
static inline int sp_mul_ok(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

static inline int sp_add_ok(uint64_t a, uint64_t b, uint64_t *out)
{
	return !__builtin_add_overflow(a, b, out);
}

static inline uint64_t sp_ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* Little-endian stores, whatever the host's byte order. */
static inline int sp_host_big_endian(void)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	return 1;
#else
	return 0;
#endif
}

static inline void sp_put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void sp_put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t sp_get_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint32_t sp_get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

#endif
