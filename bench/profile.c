/*
 * profile.c - the kernel backends' switches of a measurement
 * (SHARDPIPE_KERNEL_DEBUG, doc/design.md §9) and the reference executor's
 * work profile (§12.1), collected in a temporary file and copied to
 * stdout after the report.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"

int bench_kernel_debug(struct bench_profile *p, int profile, uint64_t local,
		       char *msg, size_t msg_size)
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
			snprintf(msg, msg_size, "--profile: TMPDIR %s is too "
				 "long or holds a comma", dir);
			p->path[0] = '\0';
			return SHARDPIPE_ERR_PATH;
		}
		fd = mkstemp(p->path);
		if (fd < 0) {
			snprintf(msg, msg_size, "--profile: a temporary file in "
				 "%s: %s", dir, strerror(errno));
			p->path[0] = '\0';
			return SHARDPIPE_ERR_IO;
		}
		close(fd);
		if (at < sizeof(words))
			at += (size_t)snprintf(words + at, sizeof(words) - at,
					       "profile=%s,", p->path);
	}
	if (at == 0)
		return SHARDPIPE_OK;
	if (at >= sizeof(words)) {
		snprintf(msg, msg_size, "SHARDPIPE_KERNEL_DEBUG is too long to "
			 "extend");
		bench_profile_done(p);
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	}
	words[at - 1] = '\0';
	if (setenv("SHARDPIPE_KERNEL_DEBUG", words, 1) != 0) {
		snprintf(msg, msg_size, "setting SHARDPIPE_KERNEL_DEBUG: %s",
			 strerror(errno));
		bench_profile_done(p);
		return SHARDPIPE_ERR_NOMEM;
	}
	return SHARDPIPE_OK;
}

int bench_profile_print(const struct bench_profile *p, const char *backend,
			char *msg, size_t msg_size)
{
	FILE *f;
	char line[512];
	size_t n = 0;

	if (p->path[0] == '\0')
		return SHARDPIPE_OK;
	f = fopen(p->path, "r");
	if (f == NULL) {
		snprintf(msg, msg_size, "--profile: %s: %s", p->path,
			 strerror(errno));
		return SHARDPIPE_ERR_IO;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		fputs(line, stdout);
		n++;
	}
	fclose(f);
	if (n == 0) {
		snprintf(msg, msg_size, "--profile: backend %s counted no work "
			 "(only reference does)", backend);
		return SHARDPIPE_ERR_BACKEND;
	}
	return SHARDPIPE_OK;
}

void bench_profile_done(struct bench_profile *p)
{
	if (p->path[0] != '\0')
		unlink(p->path);
	p->path[0] = '\0';
}
