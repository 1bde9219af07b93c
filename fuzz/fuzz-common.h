/*
 * fuzz-common.h - what the libFuzzer targets share: a scratch directory
 * for targets that must hand the reader a store on disk.
 */
#ifndef SHARDPIPE_FUZZ_COMMON_H
#define SHARDPIPE_FUZZ_COMMON_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common.h"

/* libFuzzer's entry point, which t/fuzz-replay.c calls too. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fuzz_dir[512];

static void fuzz_cleanup(void)
{
	char cmd[600];

	if (fuzz_dir[0] != '\0') {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fuzz_dir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", fuzz_dir);
	}
}

/* A private scratch directory, in memory (/dev/shm) where there is one:
 * the store targets write a file per input. */
__attribute__((unused)) static const char *fuzz_scratch(void)
{
	const char *base = getenv("TMPDIR");

	if (fuzz_dir[0] != '\0')
		return fuzz_dir;
	if (access("/dev/shm", W_OK) == 0)
		base = "/dev/shm";
	else if (base == NULL || *base == '\0')
		base = "/tmp";
	snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/shardpipe-fuzz-XXXXXX", base);
	if (mkdtemp(fuzz_dir) == NULL) {
		perror(fuzz_dir);
		abort();
	}
	atexit(fuzz_cleanup);
	return fuzz_dir;
}

__attribute__((unused)) static void fuzz_write(const char *path,
						 const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0 || (n > 0 && write(fd, p, n) != (ssize_t)n) ||
	    close(fd) != 0) {
		perror(path);
		abort();
	}
}

#endif
