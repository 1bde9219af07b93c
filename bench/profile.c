/*
 * profile.c - `shardpipe bench --profile` and `--local`: the kernel
 * backends' switches of SHARDPIPE_KERNEL_DEBUG (doc/design.md §9), set for
 * the runs, and the reference executor's work profile (§12.1) collected
 * in a temporary file and printed after the report.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "cli.h"

int bench_kernel_debug(struct bench_profile *p, int profile, uint64_t local)
{
	const char *old = getenv("SHARDPIPE_KERNEL_DEBUG");
	const char *dir = getenv("TMPDIR");
	char words[64 + sizeof(p->path)];
	size_t at = 0;
	int fd;

	p->path[0] = '\0';
	if (old != NULL && *old != '\0')
		at += (size_t)snprintf(words, sizeof(words), "%s,", old);
	if (local != 0 && at < sizeof(words))
		at += (size_t)snprintf(words + at, sizeof(words) - at,
				       "local=%llu,", (unsigned long long)local);
	if (profile) {
		if (dir == NULL || *dir == '\0')
			dir = "/tmp";
		if ((size_t)snprintf(p->path, sizeof(p->path),
				     "%s/shardpipe-profile-XXXXXX", dir) >=
			    sizeof(p->path) ||
		    strchr(p->path, ',') != NULL) {
			cli_error("bench: --profile: TMPDIR %s is too long or "
				  "holds a comma", dir);
			p->path[0] = '\0';
			return -1;
		}
		fd = mkstemp(p->path);
		if (fd < 0) {
			cli_error("bench: --profile: a temporary file in %s: "
				  "%s", dir, strerror(errno));
			p->path[0] = '\0';
			return -1;
		}
		close(fd);
		if (at < sizeof(words))
			at += (size_t)snprintf(words + at, sizeof(words) - at,
					       "profile=%s,", p->path);
	}
	if (at == 0)
		return 0;
	if (at >= sizeof(words)) {
		cli_error("bench: SHARDPIPE_KERNEL_DEBUG is too long to extend");
		bench_profile_done(p);
		return -1;
	}
	words[at - 1] = '\0';
	if (setenv("SHARDPIPE_KERNEL_DEBUG", words, 1) != 0) {
		cli_error("bench: setting SHARDPIPE_KERNEL_DEBUG: %s",
			  strerror(errno));
		bench_profile_done(p);
		return -1;
	}
	return 0;
}

int bench_profile_print(const struct bench_profile *p, const char *backend)
{
	FILE *f;
	char line[512];
	size_t n = 0;

	if (p->path[0] == '\0')
		return 0;
	f = fopen(p->path, "r");
	if (f == NULL) {
		cli_error("bench: --profile: %s: %s", p->path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		fputs(line, stdout);
		n++;
	}
	fclose(f);
	if (n == 0) {
		cli_error("bench: --profile: backend %s counted no work (only "
			  "reference does)", backend);
		return -1;
	}
	return 0;
}

void bench_profile_done(struct bench_profile *p)
{
	if (p->path[0] != '\0')
		unlink(p->path);
	p->path[0] = '\0';
}
