/*
 * store.c - libFuzzer target: the whole read path from a store directory.
 * The input is a zarr.json and up to four shard files: bytes 0-1 (little
 * endian) the length of zarr.json, then zarr.json, then records of one
 * byte naming the object (c/0/0, c/0/1, c/1/0 or c/0, the last a shard of
 * a rank-1 array), two bytes of length and the object's bytes.  The
 * reader opens the store, checks it, reads the whole array into a buffer
 * of exactly its size (when small) and once into one byte too few, which
 * must be refused, and once strided, which must agree with it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "fuzz-common.h"
#include "shardpipe.h"

static const char *const objects[] = { "c/0/0", "c/0/1", "c/1/0", "c/0" };

static void path_of(char *p, size_t n, const char *store, const char *leaf)
{
	snprintf(p, n, "%s/%s", store, leaf);
}

/* Clear the previous input's objects: files first, then directories. */
static void clear(const char *store)
{
	char p[700];

	for (size_t i = 0; i < 3; i++) {
		path_of(p, sizeof(p), store, objects[i]);
		unlink(p);
	}
	path_of(p, sizeof(p), store, "c/0");
	if (unlink(p) != 0)
		rmdir(p);
	path_of(p, sizeof(p), store, "c/1");
	rmdir(p);
}

static void put(const char *store, const char *leaf, const uint8_t *d,
		size_t n)
{
	char p[700];

	if (leaf[2] != '\0' && leaf[3] == '/') {
		char dir[700];

		snprintf(dir, sizeof(dir), "%s/%.3s", store, leaf);
		if (mkdir(dir, 0755) != 0 && errno != EEXIST)
			return; /* c/0 is a file already: skip */
	}
	path_of(p, sizeof(p), store, leaf);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	if (fd < 0)
		return; /* c/0 is a directory already */
	if (n > 0 && write(fd, d, n) != (ssize_t)n)
		abort();
	close(fd);
}

/*
 * Every other element of every dim, landing in the output in the
 * opposite order of dims (the last dim's stride smallest no more): the
 * strided path must agree with the whole read it was taken from, or
 * refuse as it did.
 */
static void strided(shardpipe_reader *r, const shardpipe_array_info *info,
		    const uint8_t *whole, uint64_t bytes)
{
	uint64_t start[SHARDPIPE_MAX_RANK] = { 0 }, count[SHARDPIPE_MAX_RANK];
	uint64_t step[SHARDPIPE_MAX_RANK], n = 1, total = 1;
	int64_t os[SHARDPIPE_MAX_RANK];
	size_t es;
	uint8_t *out;

	for (int d = 0; d < info->rank; d++) {
		total *= info->shape[d];
		step[d] = 2;
		count[d] = (info->shape[d] + 1) / 2;
	}
	es = (size_t)(bytes / total);
	for (int d = 0; d < info->rank; d++) {
		os[d] = (int64_t)(n * es);
		n *= count[d];
	}
	out = malloc(n * es);
	if (out == NULL)
		abort();
	if (shardpipe_reader_read_strided(r, start, count, step, out, os,
					  n * es) == SHARDPIPE_OK) {
		uint64_t i[SHARDPIPE_MAX_RANK] = { 0 };

		for (uint64_t k = 0; k < n; k++) {
			uint64_t src = 0, dst = 0;

			for (int d = 0; d < info->rank; d++) {
				src = src * info->shape[d] + 2 * i[d];
				dst += i[d] * (uint64_t)os[d];
			}
			if (memcmp(out + dst, whole + src * es, es) != 0)
				abort(); /* the two paths disagree */
			for (int d = info->rank - 1; d >= 0; d--) {
				if (++i[d] < count[d])
					break;
				i[d] = 0;
			}
		}
	}
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char store[600];
	char p[700];
	shardpipe_reader *r;
	shardpipe_array_info info;
	size_t at, mlen;

	if (store[0] == '\0') {
		snprintf(store, sizeof(store), "%s/store.zarr", fuzz_scratch());
		mkdir(store, 0755);
		path_of(p, sizeof(p), store, "c");
		mkdir(p, 0755);
	}
	clear(store);
	if (size < 2)
		return 0;
	mlen = (size_t)data[0] | (size_t)data[1] << 8;
	if (mlen > size - 2)
		mlen = size - 2;
	path_of(p, sizeof(p), store, "zarr.json");
	fuzz_write(p, data + 2, mlen);
	for (at = 2 + mlen; at + 3 <= size;) {
		size_t n = (size_t)data[at + 1] | (size_t)data[at + 2] << 8;
		const char *leaf = objects[data[at] % 4];

		at += 3;
		if (n > size - at)
			n = size - at;
		put(store, leaf, data + at, n);
		at += n;
	}
	if (shardpipe_reader_open(&r, store) != SHARDPIPE_OK)
		return 0;
	shardpipe_reader_info(r, &info);
	shardpipe_reader_check(r);
	{
		uint64_t start[SHARDPIPE_MAX_RANK] = { 0 };
		uint64_t one[SHARDPIPE_MAX_RANK];
		uint64_t bytes = 1, elem[2];
		int fits = 1;

		for (int d = 0; d < info.rank; d++) {
			one[d] = 1;
			fits &= info.shape[d] > 0;
		}
		/* The element size, as the capacity check sees it: the
		 * smallest capacity a one-element read accepts. */
		while (fits && bytes <= 16 &&
		       shardpipe_reader_read(r, start, one, elem, bytes) ==
			       SHARDPIPE_ERR_INVALID_ARGUMENT)
			bytes *= 2;
		fits &= bytes <= 16;
		for (int d = 0; d < info.rank; d++)
			fits &= !__builtin_mul_overflow(bytes, info.shape[d],
							&bytes);
		if (fits && bytes > 0 && bytes <= (1u << 16)) {
			uint8_t *out = malloc(bytes);

			if (out == NULL)
				abort();
			if (shardpipe_reader_read(r, start, info.shape, out,
						  bytes - 1) == SHARDPIPE_OK)
				abort(); /* one byte short must be refused */
			if (shardpipe_reader_read(r, start, info.shape, out,
						  bytes) == SHARDPIPE_OK)
				strided(r, &info, out, bytes);
			free(out);
		}
	}
	shardpipe_reader_close(r);
	return 0;
}
