/*
 * tap.h - a small TAP producer for the C tests.
 *
 * plan(n) or plan_lazy() first; ok(), is_int(), is_blob() report one test
 * each; skip_all() and bail() end the program.  done_testing() returns the
 * exit status for main().
 */
#ifndef SHARDPIPE_TAP_H
#define SHARDPIPE_TAP_H

#include <stddef.h>
#include <stdint.h>

void plan(int n);
void plan_lazy(void);
int ok(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int is_int(long long got, long long want, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Compares bytes; on a mismatch prints the first differing offset and both
 * values. */
int is_blob(const void *got, const void *want, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void skip(int n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void skip_all(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void bail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
int done_testing(void);

#endif
