/*
 * zstd-opencl.c - the zstd kernels built for OpenCL from the same source
 * (prelude-opencl.h + zstd_units.h + zstd_encode.h, read from the source
 * tree and built with clBuildProgram) write byte for byte the frames the C
 * build writes, at local sizes 1, 7, 64 and 256, with fewer groups than
 * chunks (groups stride over blocks and chunks and reuse their scratch).  Skipped, with the reason,
 * where no OpenCL platform is usable.
 *
 * Also reports the kernel's throughput on the device (not asserted).
 */
#define _GNU_SOURCE
#include "zstd-common.h"

#include <time.h>

#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

static const size_t local_sizes[] = { 1, 7, 64, 256 };
#define NLOCAL (sizeof(local_sizes) / sizeof(local_sizes[0]))

struct ocl {
	cl_context ctx;
	cl_command_queue q;
	cl_program prog;
	cl_kernel units, frames;
	cl_device_id dev;
	size_t max_wg;
	char name[256];
};

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* FNV-1a over the kernel headers the program includes. */
static uint64_t stamp(const char *top)
{
	static const char *const names[] = {
		"prelude-opencl.h", "geometry.h", "collectives.h",
		"kernel-list.h", "zstd_units.h", "zstd_block.h",
		"zstd_encode.h", "zstd_layout.h", "zstd_bits.h",
		"zstd_huf.h", "zstd_match.h", "zstd_seq.h", "zstd_xxh64.h",
		"blosc_layout.h", "blosc_shuffle.h",
	};
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[4096];
		size_t n = 0;
		uint8_t *text;

		snprintf(path, sizeof(path), "%s/backends/kernels/%s",
			 top != NULL ? top : "..", names[i]);
		text = test_slurp(path, &n);
		if (text == NULL)
			bail("cannot read %s", path);
		for (size_t k = 0; k < n; k++)
			h = (h ^ text[k]) * 1099511628211ull;
		free(text);
	}
	return h;
}

/* Why OpenCL cannot be used here, or NULL with o filled. */
static const char *ocl_open(struct ocl *o)
{
	static char why[4096];
	const char *top = getenv("top_srcdir");
	cl_platform_id plats[8];
	cl_uint np = 0;
	cl_int rc;
	char opts[1024];
	const char *src = "#include \"prelude-opencl.h\"\n"
			  "#include \"geometry.h\"\n"
			  "#include \"zstd_units.h\"\n"
			  "#include \"zstd_encode.h\"\n";

	if (clGetPlatformIDs(8, plats, &np) != CL_SUCCESS || np == 0)
		return "no OpenCL platform";
	o->dev = NULL;
	for (cl_uint i = 0; i < np && o->dev == NULL; i++)
		if (clGetDeviceIDs(plats[i], CL_DEVICE_TYPE_ALL, 1, &o->dev,
				   NULL) != CL_SUCCESS)
			o->dev = NULL;
	if (o->dev == NULL)
		return "no OpenCL device";
	clGetDeviceInfo(o->dev, CL_DEVICE_NAME, sizeof(o->name), o->name, NULL);
	o->ctx = clCreateContext(NULL, 1, &o->dev, NULL, NULL, &rc);
	if (rc != CL_SUCCESS)
		return "clCreateContext failed";
	o->q = clCreateCommandQueue(o->ctx, o->dev, 0, &rc);
	if (rc != CL_SUCCESS)
		return "clCreateCommandQueue failed";
	o->prog = clCreateProgramWithSource(o->ctx, 1, &src, NULL, &rc);
	if (rc != CL_SUCCESS)
		return "clCreateProgramWithSource failed";
	/* The program text is three #include lines: a compiler cache keyed
	 * on text and options (PoCL's) must see the headers change. */
	snprintf(opts, sizeof(opts),
		 "-cl-std=CL1.2 -I%s/backends/kernels -DSPZ_TEXT_STAMP=%llu %s",
		 top != NULL ? top : "..", (unsigned long long)stamp(top),
		 getenv("ZT_CLOPTS") ? getenv("ZT_CLOPTS") : "");
	rc = clBuildProgram(o->prog, 1, &o->dev, opts, NULL, NULL);
	if (rc != CL_SUCCESS) {
		size_t n = 0;
		int k = snprintf(why, sizeof(why), "clBuildProgram: ");

		clGetProgramBuildInfo(o->prog, o->dev, CL_PROGRAM_BUILD_LOG,
				      sizeof(why) - k - 1, why + k, &n);
		bail("%s", why);
	}
	o->units = clCreateKernel(o->prog, "sp_zstd_units", &rc);
	if (rc != CL_SUCCESS)
		bail("clCreateKernel sp_zstd_units: %d", rc);
	o->frames = clCreateKernel(o->prog, "sp_codec_zstd", &rc);
	if (rc != CL_SUCCESS)
		bail("clCreateKernel sp_codec_zstd: %d", rc);
	clGetKernelWorkGroupInfo(o->units, o->dev, CL_KERNEL_WORK_GROUP_SIZE,
				 sizeof(o->max_wg), &o->max_wg, NULL);
	{
		size_t wg = 0;

		clGetKernelWorkGroupInfo(o->frames, o->dev,
					 CL_KERNEL_WORK_GROUP_SIZE, sizeof(wg),
					 &wg, NULL);
		if (wg < o->max_wg)
			o->max_wg = wg;
	}
	return NULL;
}

/* Encode n chunks of cb bytes with `groups` groups of `local` items in
 * each of the two kernels; returns the seconds they took. */
static double ocl_run(struct ocl *o, const uint8_t *pool, uint64_t n,
		      uint64_t cb, uint64_t cap, uint8_t *slots,
		      uint64_t *sizes, size_t groups, size_t local, uint64_t word)
{
	cl_int rc, rc2 = CL_SUCCESS;
	cl_mem bpool, bslots, bsizes, bscratch, bout, busizes;
	cl_ulong vn = n, vcb = cb, vcap = cap, vlevel = (cl_ulong)word;
	cl_ulong vzlevel = (uint32_t)word, vts = 1, vmode = SPB_NOSHUFFLE;
	cl_ulong vbs = 0;
	size_t global = groups * local;
	double t0, t1;

	bpool = clCreateBuffer(o->ctx, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR,
			       n * cb > 0 ? n * cb : 1, (void *)pool, &rc);
	bslots = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE, n * cap, NULL, &rc);
	bsizes = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE, n * 8, NULL, &rc);
	bscratch = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE,
				  groups * (size_t)SPZ_SCRATCH_BYTES, NULL, &rc);
	bout = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE, n * cb > 0 ? n * cb : 1,
			      NULL, &rc);
	busizes = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE,
				 n * SPZ_NBLOCKS(cb) * 8, NULL, &rc);
	if (rc != CL_SUCCESS)
		bail("clCreateBuffer: %d", rc);
	clSetKernelArg(o->units, 0, sizeof(cl_mem), &bpool);
	clSetKernelArg(o->units, 1, sizeof(cl_mem), &bout);
	clSetKernelArg(o->units, 2, sizeof(cl_mem), &busizes);
	clSetKernelArg(o->units, 3, sizeof(cl_mem), &bscratch);
	clSetKernelArg(o->units, 4, sizeof(vn), &vn);
	clSetKernelArg(o->units, 5, sizeof(vcb), &vcb);
	clSetKernelArg(o->units, 6, sizeof(vzlevel), &vzlevel);
	clSetKernelArg(o->units, 7, sizeof(vts), &vts);
	clSetKernelArg(o->units, 8, sizeof(vmode), &vmode);
	clSetKernelArg(o->units, 9, sizeof(vbs), &vbs);
	clSetKernelArg(o->frames, 0, sizeof(cl_mem), &bpool);
	clSetKernelArg(o->frames, 1, sizeof(cl_mem), &bslots);
	clSetKernelArg(o->frames, 2, sizeof(cl_mem), &bsizes);
	clSetKernelArg(o->frames, 3, sizeof(cl_mem), &bout);
	clSetKernelArg(o->frames, 4, sizeof(cl_mem), &busizes);
	clSetKernelArg(o->frames, 5, sizeof(vn), &vn);
	clSetKernelArg(o->frames, 6, sizeof(vcb), &vcb);
	clSetKernelArg(o->frames, 7, sizeof(vcap), &vcap);
	clSetKernelArg(o->frames, 8, sizeof(vlevel), &vlevel);
	t0 = now();
	rc = clEnqueueNDRangeKernel(o->q, o->units, 1, NULL, &global, &local,
				    0, NULL, NULL);
	if (rc == CL_SUCCESS)
		rc2 = clEnqueueNDRangeKernel(o->q, o->frames, 1, NULL, &global,
					     &local, 0, NULL, NULL);
	if (rc != CL_SUCCESS || rc2 != CL_SUCCESS)
		bail("clEnqueueNDRangeKernel (local %zu): %d, %d", local, rc,
		     rc2);
	clFinish(o->q);
	t1 = now();
	clEnqueueReadBuffer(o->q, bslots, CL_TRUE, 0, n * cap, slots, 0, NULL,
			    NULL);
	clEnqueueReadBuffer(o->q, bsizes, CL_TRUE, 0, n * 8, sizes, 0, NULL,
			    NULL);
	clReleaseMemObject(bpool);
	clReleaseMemObject(bslots);
	clReleaseMemObject(bsizes);
	clReleaseMemObject(bscratch);
	clReleaseMemObject(bout);
	clReleaseMemObject(busizes);
	return t1 - t0;
}

/* The reference bytes of chunk j: the C build. */
static uint64_t ref_chunk(const uint8_t *src, uint64_t cb, uint8_t *slot,
			  uint64_t word)
{
	int guard;

	return zt_encode_word(src, cb, slot, word, &guard);
}

/* word: zt_word(level, checksum). */
static void compare(struct ocl *o, const char *what, const uint8_t *pool,
		    uint64_t n, uint64_t cb, uint64_t word, int timing)
{
	int level = (int)(uint32_t)word;
	const char *cs = word >> SPZ_ARG_CHECKSUM_BIT ? ", checksum" : "";

	uint64_t cap = zt_bound(cb);
	uint8_t *ref = test_xmalloc(n * cap + ZT_GUARD), *got = test_xmalloc(n * cap);
	uint64_t *rsz = test_xmalloc(n * 8), *gsz = test_xmalloc(n * 8);

	for (uint64_t j = 0; j < n; j++)
		rsz[j] = ref_chunk(pool + j * cb, cb, ref + j * cap, word);
	for (size_t li = 0; li < NLOCAL; li++) {
		size_t local = local_sizes[li], groups = n > 2 ? n - 1 : 1;
		int same = 1;
		double secs;

		if (local > o->max_wg) {
			skip(1, "local size %zu above the kernel's %zu", local,
			     o->max_wg);
			continue;
		}
		memset(got, 0, n * cap);
		secs = ocl_run(o, pool, n, cb, cap, got, gsz, groups, local,
			       word);
		for (uint64_t j = 0; j < n && same; j++) {
			if (gsz[j] != rsz[j]) {
				diag("%s: chunk %llu: size %llu, reference %llu",
				     what, (unsigned long long)j,
				     (unsigned long long)gsz[j],
				     (unsigned long long)rsz[j]);
				same = 0;
			} else if (memcmp(got + j * cap, ref + j * cap,
					  rsz[j]) != 0) {
				is_blob(got + j * cap, ref + j * cap, rsz[j],
					"%s: chunk %llu bytes", what,
					(unsigned long long)j);
				same = 0;
			}
		}
		ok(same, "%s, level %d%s, local %zu, %zu groups: opencl bytes "
		   "= reference bytes", what, level, cs, local, groups);
		if (timing)
			diag("  %s local %zu: %.1f MB/s over %llu chunks of %llu "
			     "bytes", o->name, local, n * cb / secs / 1e6,
			     (unsigned long long)n, (unsigned long long)cb);
	}
	free(ref);
	free(got);
	free(rsz);
	free(gsz);
}

int main(void)
{
	struct ocl o;
	const char *why;
	uint64_t seed = test_seed(), rng = seed;
	static const uint64_t sizes[] = { 0, 1, 300, 131073, 300000 };
	static const int lv[] = { 1, 3, 5 };

	memset(&o, 0, sizeof(o));
	why = ocl_open(&o);
	if (why != NULL && test_may_skip("opencl", why))
		skip_all("%s", why);
	plan_lazy();
	diag("device: %s", o.name);
	for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++)
		for (int kind = 0; kind < ZT_DISTS; kind += 2) {
			uint64_t cb = sizes[si], n = 4;
			uint8_t *pool = test_xmalloc(n * cb);
			char what[96];

			for (uint64_t j = 0; j < n; j++)
				zt_fill(pool + j * cb, cb, (kind + (int)j) % ZT_DISTS,
					&rng);
			snprintf(what, sizeof(what), "%llu-byte chunks, kinds from %d",
				 (unsigned long long)cb, kind);
			/* Every other case with the content checksum. */
			compare(&o, what, pool, n, cb,
				zt_word(lv[(si + kind) % 3], (si + kind / 2) % 2),
				0);
			free(pool);
		}
	{
		/* Microscopy-like frames, for the byte check and a timing. */
		const int side = 512;
		uint64_t cb = (uint64_t)side * side * 2, n = 4;
		uint8_t *pool = test_xmalloc(n * cb);

		for (uint64_t j = 0; j < n; j++)
			zt_microscopy((uint16_t *)(pool + j * cb), side, (int)j);
		compare(&o, "microscopy 512x512 uint16", pool, n, cb,
			zt_word(1, 0), 1);
		free(pool);
	}
	free(zt_scratch);
	return done_testing();
}
