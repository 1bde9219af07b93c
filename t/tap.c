#include "tap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static int planned = -1;
static int counter;
static int failures;

void plan(int n)
{
	planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

void plan_lazy(void)
{
	planned = 0;
}

static void report(int cond, const char *fmt, va_list ap)
{
	counter++;
	if (!cond)
		failures++;
	printf("%sok %d - ", cond ? "" : "not ", counter);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
}

int ok(int cond, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	report(cond, fmt, ap);
	va_end(ap);
	return cond;
}

int is_int(long long got, long long want, const char *fmt, ...)
{
	va_list ap;
	int cond = got == want;

	va_start(ap, fmt);
	report(cond, fmt, ap);
	va_end(ap);
	if (!cond)
		diag("     got: %lld\n  wanted: %lld", got, want);
	return cond;
}

int is_blob(const void *got, const void *want, size_t n, const char *fmt, ...)
{
	const unsigned char *g = got, *w = want;
	size_t i = 0;
	va_list ap;

	if (g == NULL || w == NULL)
		i = (g == w) ? n : 0;
	else
		while (i < n && g[i] == w[i])
			i++;
	va_start(ap, fmt);
	report(i == n, fmt, ap);
	va_end(ap);
	if (i != n) {
		if (g == NULL || w == NULL)
			diag("one side is NULL");
		else
			diag("first difference at byte %zu of %zu: got 0x%02x, wanted 0x%02x",
			     i, n, g[i], w[i]);
	}
	return i == n;
}

void diag(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void skip(int n, const char *fmt, ...)
{
	va_list ap;

	for (int i = 0; i < n; i++) {
		counter++;
		printf("ok %d # SKIP ", counter);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		putchar('\n');
	}
	fflush(stdout);
}

void skip_all(const char *fmt, ...)
{
	va_list ap;

	printf("1..0 # SKIP ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(0);
}

void bail(const char *fmt, ...)
{
	va_list ap;

	printf("Bail out! ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	exit(255);
}

int done_testing(void)
{
	if (planned == 0)
		printf("1..%d\n", counter);
	else if (planned > 0 && planned != counter)
		diag("planned %d tests but ran %d", planned, counter);
	fflush(stdout);
	return failures != 0 || (planned > 0 && planned != counter);
}
