/*
 * fill.c - the fill patterns of `shardpipe bench` and `shardpipe demo`.
 * Each is a few distinct dim-0 rows ("frames") generated before timing
 * starts and repeated, so that memory stays small and generation is not
 * measured.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fill.h"

static const char *const fill_names[] = { "micro", "noise12", "xor", "zeros" };

int bench_fill_from_name(const char *name)
{
	for (int f = 0; f < 4; f++)
		if (strcmp(name, fill_names[f]) == 0)
			return f;
	return -1;
}

const char *bench_fill_name(enum bench_fill f)
{
	return fill_names[f];
}

uint64_t bench_fill_frames(enum bench_fill f)
{
	switch (f) {
	case FILL_MICRO:
		return 4;
	case FILL_NOISE12:
	case FILL_XOR:
	/* Zeros too: a camera's frames of zeros are as many buffers as any
	 * other frames, and one row repeated would stay in the last-level
	 * cache (a `frames` row is 19 MB, the cache here 32 MB). */
	case FILL_ZEROS:
		return 16;
	default:
		return 1;
	}
}

uint64_t bench_splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * Store an integer value as one element of dtype t in host byte order (the
 * order the library expects).  Floating types get the value converted,
 * except float16, which gets the low 16 bits as its bit pattern.
 */
static void put(uint8_t *p, shardpipe_dtype t, uint64_t v)
{
	switch (t) {
	case SHARDPIPE_DTYPE_BOOL:
		*p = (uint8_t)(v & 1);
		break;
	case SHARDPIPE_DTYPE_INT8:
	case SHARDPIPE_DTYPE_UINT8:
		*p = (uint8_t)v;
		break;
	case SHARDPIPE_DTYPE_INT16:
	case SHARDPIPE_DTYPE_UINT16:
	case SHARDPIPE_DTYPE_FLOAT16: {
		uint16_t x = (uint16_t)v;
		memcpy(p, &x, 2);
		break;
	}
	case SHARDPIPE_DTYPE_INT32:
	case SHARDPIPE_DTYPE_UINT32: {
		uint32_t x = (uint32_t)v;
		memcpy(p, &x, 4);
		break;
	}
	case SHARDPIPE_DTYPE_FLOAT32: {
		float x = (float)v;
		memcpy(p, &x, 4);
		break;
	}
	case SHARDPIPE_DTYPE_FLOAT64: {
		double x = (double)v;
		memcpy(p, &x, 8);
		break;
	}
	default:
		memcpy(p, &v, 8);
		break;
	}
}

/* Elements of one row (dims 1..) and their row-major strides. */
static uint64_t row_geometry(const struct bench_pattern *pat,
			     uint64_t stride[SHARDPIPE_MAX_RANK])
{
	uint64_t n = 1;

	for (int d = pat->rank - 1; d >= 1; d--) {
		stride[d] = n;
		n *= pat->size[d];
	}
	return n;
}

/* Each element the XOR of its coordinates (t taken modulo the pattern),
 * truncated to 16 bits. */
static void fill_xor(struct bench_pattern *pat)
{
	uint64_t stride[SHARDPIPE_MAX_RANK], n = row_geometry(pat, stride);
	const int last = pat->rank - 1;
	uint64_t inner = last >= 1 ? pat->size[last] : 1;

	for (uint64_t t = 0; t < pat->frames; t++) {
		uint8_t *row = pat->data + t * pat->row_bytes;
		uint64_t c[SHARDPIPE_MAX_RANK] = { 0 };

		for (uint64_t line = 0; line < n / inner; line++) {
			uint64_t base = t;
			uint8_t *out = row + line * inner * pat->esize;

			for (int d = 1; d < last; d++)
				base ^= c[d];
			for (uint64_t x = 0; x < inner; x++)
				put(out + x * pat->esize, pat->dtype,
				    (base ^ (last >= 1 ? x : 0)) & 0xffff);
			for (int d = last - 1; d >= 1; d--) {
				if (++c[d] < pat->size[d])
					break;
				c[d] = 0;
			}
		}
	}
}

/* Uniform 12-bit values, one splitmix64 draw per element, in order. */
static void fill_noise12(struct bench_pattern *pat)
{
	uint64_t rng = 0xdeadbeefcafebabeull;
	uint64_t n = pat->frames * (pat->row_bytes / pat->esize);

	for (uint64_t i = 0; i < n; i++)
		put(pat->data + i * pat->esize, pat->dtype,
		    bench_splitmix(&rng) & 0xfff);
}

/*
 * Microscopy-like frames: forty Gaussian blobs that drift with t over the
 * spatial dims (those of 8 elements or more; smaller dims are channels,
 * each dimmer than the one before), on a background of 100, with noise
 * whose spread grows as the square root of the signal (a cheap stand-in for
 * Poisson counting noise).
 */
static int fill_micro(struct bench_pattern *pat)
{
	uint64_t stride[SHARDPIPE_MAX_RANK], n = row_geometry(pat, stride);
	const int last = pat->rank - 1;
	uint64_t maxdim = 1, nspatial = 0;
	double mean = 0;
	float *acc = malloc(n * sizeof(float));
	float *prof[SHARDPIPE_MAX_RANK] = { NULL };
	int rc = -1;

	if (acc == NULL)
		return -1;
	for (int d = 1; d <= last; d++) {
		if (pat->size[d] > maxdim)
			maxdim = pat->size[d];
		if (pat->size[d] >= 8) {
			mean += (double)pat->size[d];
			nspatial++;
		}
		prof[d] = malloc(pat->size[d] * sizeof(float));
		if (prof[d] == NULL)
			goto out;
	}
	mean = nspatial ? mean / (double)nspatial : 1;

	for (uint64_t t = 0; t < pat->frames; t++) {
		uint64_t rng = 0x5eed0000ull + 977;
		uint8_t *row = pat->data + t * pat->row_bytes;

		memset(acc, 0, n * sizeof(float));
		for (int b = 0; b < 40 && last >= 1; b++) {
			uint64_t lo[SHARDPIPE_MAX_RANK], hi[SHARDPIPE_MAX_RANK];
			uint64_t c[SHARDPIPE_MAX_RANK];
			double rmin = mean / 100 < 1 ? 1 : mean / 100;
			double r = rmin +
				   (double)(bench_splitmix(&rng) % 1000) /
					   1000 * 3 * rmin;
			double amp = 300.0 +
				     (double)(bench_splitmix(&rng) % 2000);
			int empty = 0;

			for (int d = 1; d <= last; d++) {
				uint64_t sz = pat->size[d];

				if (sz < 8) {
					lo[d] = 0;
					hi[d] = sz - 1;
					for (uint64_t i = 0; i < sz; i++)
						prof[d][i] = (float)(1.0 - 0.25 * (double)i / (double)sz);
					continue;
				}
				double cx = (double)(bench_splitmix(&rng) % sz) +
					    (3.0 / d) * (double)t;
				double l = cx - 3 * r, h = cx + 3 * r;

				if (h < 0 || l > (double)(sz - 1)) {
					empty = 1;
					break;
				}
				lo[d] = l < 0 ? 0 : (uint64_t)l;
				hi[d] = h > (double)(sz - 1) ? sz - 1 : (uint64_t)h;
				for (uint64_t i = lo[d]; i <= hi[d]; i++) {
					double dx = (double)i - cx;

					prof[d][i] = (float)exp(-dx * dx / (2 * r * r));
				}
			}
			if (empty)
				continue;
			for (int d = 1; d <= last; d++)
				c[d] = lo[d];
			for (;;) {
				double w = amp;
				uint64_t base = 0;

				for (int d = 1; d < last; d++) {
					w *= prof[d][c[d]];
					base += c[d] * stride[d];
				}
				for (uint64_t x = lo[last]; x <= hi[last]; x++)
					acc[base + x] += (float)(w * prof[last][x]);
				int d = last - 1;
				for (; d >= 1; d--) {
					if (++c[d] <= hi[d])
						break;
					c[d] = lo[d];
				}
				if (d < 1)
					break;
			}
		}
		rng = 0xc0ffee00ull + t;
		for (uint64_t i = 0; i < n; i++) {
			double s = 100.0 + acc[i];
			uint64_t u = bench_splitmix(&rng);
			/* Sum of four uniforms: roughly normal, mean 0, sd 1. */
			double g = ((double)(u & 0xffff) +
				    (double)((u >> 16) & 0xffff) +
				    (double)((u >> 32) & 0xffff) +
				    (double)(u >> 48)) / 65536.0 - 2.0;
			double v = s + g * 1.732 * sqrt(s);

			put(row + i * pat->esize, pat->dtype,
			    (uint64_t)(v < 0 ? 0 : v > 65535 ? 65535 : v));
		}
	}
	rc = 0;
out:
	for (int d = 1; d <= last; d++)
		free(prof[d]);
	free(acc);
	return rc;
}

int bench_pattern_make(struct bench_pattern *pat, enum bench_fill fill,
		       const shardpipe_desc *desc, uint64_t frames)
{
	memset(pat, 0, sizeof(*pat));
	pat->fill = fill;
	pat->rank = desc->rank;
	pat->dtype = desc->dtype;
	pat->esize = shardpipe_dtype_size(desc->dtype);
	pat->frames = frames;
	pat->rows = frames;
	pat->row_bytes = pat->esize;
	for (int d = 1; d < desc->rank; d++) {
		pat->size[d] = desc->dims[d].size;
		if (pat->size[d] == 0 || pat->size[d] > SIZE_MAX ||
		    pat->row_bytes > SIZE_MAX / pat->size[d])
			return SHARDPIPE_ERR_INVALID_ARGUMENT;
		pat->row_bytes *= (size_t)pat->size[d];
	}
	if (pat->row_bytes == 0 || frames == 0 ||
	    frames > SIZE_MAX / pat->row_bytes)
		return SHARDPIPE_ERR_INVALID_ARGUMENT;
	pat->data = malloc(frames * pat->row_bytes);
	if (pat->data == NULL)
		return SHARDPIPE_ERR_NOMEM;
	switch (fill) {
	case FILL_MICRO:
		if (fill_micro(pat) != 0) {
			bench_pattern_free(pat);
			return SHARDPIPE_ERR_NOMEM;
		}
		break;
	case FILL_NOISE12:
		fill_noise12(pat);
		break;
	case FILL_XOR:
		fill_xor(pat);
		break;
	case FILL_ZEROS:
		/* Written, not calloc's untouched pages: a camera's frames of
		 * zeros are in memory like any others, where every line of
		 * an untouched page is the one zero page's, always in cache
		 * (the gather of epochs taken straight from such rows ran at
		 * 32 GB/s, 2.7 times memcpy). */
		memset(pat->data, 0, frames * pat->row_bytes);
		break;
	}
	return SHARDPIPE_OK;
}

int bench_pattern_hold(struct bench_pattern *pat, uint64_t rows)
{
	uint8_t *n;

	if (rows <= pat->rows)
		return 0;
	if (rows > SIZE_MAX / pat->row_bytes)
		return -1;
	n = realloc(pat->data, (size_t)rows * pat->row_bytes);
	if (n == NULL)
		return -1;
	for (uint64_t r = pat->rows; r < rows; r++)
		memcpy(n + r * pat->row_bytes,
		       n + (r % pat->frames) * pat->row_bytes, pat->row_bytes);
	pat->data = n;
	pat->rows = rows;
	return 0;
}

void bench_pattern_free(struct bench_pattern *pat)
{
	free(pat->data);
	pat->data = NULL;
}
