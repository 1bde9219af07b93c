/*
 * fuzz-replay.c - a fuzz target of fuzz/ run over its committed seed
 * corpus, one TAP test per seed, as part of make check: the targets stay
 * built against the library as it changes, and every seed (the inputs a
 * fuzzing run once found interesting) goes through the reader under the
 * suite's own builds, the sanitizer build included.  Linked once per
 * target with FUZZ_TARGET naming its corpus directory.  A target checks
 * its properties itself and aborts on a violation, which ends the program
 * before its plan is met.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "testutil.h"

/* The target linked in (fuzz/fuzz-common.h declares it for the targets). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(void)
{
	const char *top = getenv("top_srcdir");
	char dir[4096], path[4352];
	char **names = NULL;
	size_t n = 0;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/fuzz/corpus/%s", top ? top : ".",
		 FUZZ_TARGET);
	if ((d = opendir(dir)) == NULL)
		bail("%s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		names = realloc(names, (n + 1) * sizeof(*names));
		if (names == NULL || (names[n] = strdup(e->d_name)) == NULL)
			bail("out of memory");
		n++;
	}
	closedir(d);
	if (n == 0)
		bail("%s: no seeds", dir);
	qsort(names, n, sizeof(*names), by_name);
	plan((int)n);
	for (size_t i = 0; i < n; i++) {
		FILE *f;
		uint8_t *buf;
		long len;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if ((f = fopen(path, "rb")) == NULL ||
		    fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
		    fseek(f, 0, SEEK_SET) != 0)
			bail("%s: %s", path, strerror(errno));
		buf = test_xmalloc((size_t)len + 1);
		if (fread(buf, 1, (size_t)len, f) != (size_t)len)
			bail("%s: short read", path);
		fclose(f);
		LLVMFuzzerTestOneInput(buf, (size_t)len);
		ok(1, "%s seed %s (%ld bytes) runs through the target",
		   FUZZ_TARGET, names[i], len);
		free(buf);
		free(names[i]);
	}
	free(names);
	return done_testing();
}
