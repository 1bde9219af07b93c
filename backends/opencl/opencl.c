/*
 * opencl.c - the `opencl` backend plugin: a device adapter for the shared
 * kernel driver (backends/kernels/driver.h) over OpenCL 1.2, and the
 * plugin's single entry point.
 *
 * The kernels are the text of backends/kernels/kernels-opencl.cl with its
 * includes expanded, embedded at build time (opencl-kernels.c, generated)
 * and built with clBuildProgram when a stream opens.  Every OpenCL call
 * goes through CL_CHECK or CL_CREATE, which record the call's text and its
 * error code in the stream's error.
 *
 * SHARDPIPE_OPENCL_DEVICE chooses the device (adapter.h's grammar): an
 * index is "P:D", device D of platform P; a name is matched against
 * "platform name: device name".
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>

#include <stdlib.h>

#include "adapter.h"
#include "geometry.h"

extern const char sp_opencl_kernel_source[];

/* Kernels are created for every entry of kernel-list.h (driver.h). */
#define NKERNELS KDEV_NKERNELS

struct ocl_dev {
	cl_platform_id platform;
	cl_device_id device;
	cl_context ctx;
	cl_command_queue queue;
	cl_program program;
	cl_kernel kernels[NKERNELS];
	cl_ulong max_alloc;
	char label[200];
};

static const char *cl_errstr(cl_int rc)
{
	switch (rc) {
#define E(x) case x: return #x
	E(CL_DEVICE_NOT_FOUND);
	E(CL_DEVICE_NOT_AVAILABLE);
	E(CL_COMPILER_NOT_AVAILABLE);
	E(CL_MEM_OBJECT_ALLOCATION_FAILURE);
	E(CL_OUT_OF_RESOURCES);
	E(CL_OUT_OF_HOST_MEMORY);
	E(CL_BUILD_PROGRAM_FAILURE);
	E(CL_MISALIGNED_SUB_BUFFER_OFFSET);
	E(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST);
	E(CL_INVALID_VALUE);
	E(CL_INVALID_DEVICE_TYPE);
	E(CL_INVALID_PLATFORM);
	E(CL_INVALID_DEVICE);
	E(CL_INVALID_CONTEXT);
	E(CL_INVALID_QUEUE_PROPERTIES);
	E(CL_INVALID_COMMAND_QUEUE);
	E(CL_INVALID_MEM_OBJECT);
	E(CL_INVALID_BINARY);
	E(CL_INVALID_BUILD_OPTIONS);
	E(CL_INVALID_PROGRAM);
	E(CL_INVALID_PROGRAM_EXECUTABLE);
	E(CL_INVALID_KERNEL_NAME);
	E(CL_INVALID_KERNEL);
	E(CL_INVALID_ARG_INDEX);
	E(CL_INVALID_ARG_VALUE);
	E(CL_INVALID_ARG_SIZE);
	E(CL_INVALID_KERNEL_ARGS);
	E(CL_INVALID_WORK_DIMENSION);
	E(CL_INVALID_WORK_GROUP_SIZE);
	E(CL_INVALID_WORK_ITEM_SIZE);
	E(CL_INVALID_GLOBAL_OFFSET);
	E(CL_INVALID_EVENT_WAIT_LIST);
	E(CL_INVALID_EVENT);
	E(CL_INVALID_OPERATION);
	E(CL_INVALID_BUFFER_SIZE);
	E(CL_INVALID_GLOBAL_WORK_SIZE);
#undef E
	case -1001:
		return "CL_PLATFORM_NOT_FOUND_KHR";
	default:
		return "unknown OpenCL error";
	}
}

/* Check a call returning cl_int; the message names the call and code. */
#define CL_CHECK(err, call)                                                   \
	do {                                                                  \
		cl_int cl_rc_ = (call);                                       \
		if (cl_rc_ != CL_SUCCESS)                                     \
			return sp_err_set((err), SHARDPIPE_ERR_DEVICE,        \
					  "opencl: %s failed: %s (%d)", #call, \
					  cl_errstr(cl_rc_), (int)cl_rc_);    \
	} while (0)

/* Check a call that creates an object and reports through CL_RC. */
#define CL_RC (&cl_rc_)
#define CL_CREATE(err, lhs, call)                                             \
	do {                                                                  \
		cl_int cl_rc_ = CL_SUCCESS;                                   \
		(lhs) = (call);                                               \
		if (cl_rc_ != CL_SUCCESS)                                     \
			return sp_err_set((err), SHARDPIPE_ERR_DEVICE,        \
					  "opencl: %s failed: %s (%d)", #call, \
					  cl_errstr(cl_rc_), (int)cl_rc_);    \
	} while (0)

/* ----------------------------------------------------------- devices */

static void info_string(cl_device_id d, cl_platform_id p, char *buf,
			size_t n)
{
	char pname[96] = "", dname[96] = "";

	if (p != NULL)
		clGetPlatformInfo(p, CL_PLATFORM_NAME, sizeof(pname), pname,
				  NULL);
	clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof(dname), dname, NULL);
	pname[sizeof(pname) - 1] = dname[sizeof(dname) - 1] = '\0';
	snprintf(buf, n, "%s: %s", pname, dname);
}

#define MAX_PLATFORMS 16
#define MAX_DEVICES 64

/* Every device of every platform; index (platform, device). */
static int ocl_list(kdev_visit_fn visit, void *state, struct sp_err *err)
{
	cl_platform_id ps[MAX_PLATFORMS];
	cl_uint np = 0;
	unsigned n = 0;
	cl_int rc = clGetPlatformIDs(MAX_PLATFORMS, ps, &np);

	SP_RETURN_IF(rc != CL_SUCCESS || np == 0, err, SHARDPIPE_ERR_BACKEND,
		     "no OpenCL platform (clGetPlatformIDs: %s, %u platforms)",
		     rc == CL_SUCCESS ? "CL_SUCCESS" : cl_errstr(rc),
		     (unsigned)np);
	for (cl_uint i = 0; i < np && i < MAX_PLATFORMS; i++) {
		cl_device_id ds[MAX_DEVICES];
		cl_uint nd = 0;

		if (clGetDeviceIDs(ps[i], CL_DEVICE_TYPE_ALL, MAX_DEVICES, ds,
				   &nd) != CL_SUCCESS)
			continue;
		for (cl_uint j = 0; j < nd && j < MAX_DEVICES; j++) {
			struct kdev_device d = { .index = { i, j },
						 .handle = { ps[i], ds[j] } };
			cl_device_type type = 0;

			clGetDeviceInfo(ds[j], CL_DEVICE_TYPE, sizeof(type),
					&type, NULL);
			d.gpu = (type & CL_DEVICE_TYPE_GPU) != 0;
			n++;
			if (visit(state, &d))
				return SHARDPIPE_OK;
		}
	}
	SP_RETURN_IF(n == 0, err, SHARDPIPE_ERR_BACKEND,
		     "no OpenCL device on %u platform(s)", (unsigned)np);
	return SHARDPIPE_OK;
}

static void ocl_name_of(const struct kdev_device *d, char *buf, size_t n)
{
	info_string(d->handle[1], d->handle[0], buf, n);
}

static void ocl_describe(const struct kdev_device *d, char *buf, size_t n)
{
	cl_device_type type = 0;
	cl_ulong mem = 0;
	char label[200];

	info_string(d->handle[1], d->handle[0], label, sizeof(label));
	clGetDeviceInfo(d->handle[1], CL_DEVICE_TYPE, sizeof(type), &type,
			NULL);
	clGetDeviceInfo(d->handle[1], CL_DEVICE_GLOBAL_MEM_SIZE, sizeof(mem),
			&mem, NULL);
	snprintf(buf, n, "%s (%s, %llu MiB)", label,
		 (type & CL_DEVICE_TYPE_GPU) ? "GPU" :
		 (type & CL_DEVICE_TYPE_CPU) ? "CPU" : "accelerator",
		 (unsigned long long)(mem >> 20));
}

/* --------------------------------------------------------- the adapter */

static int ocl_alloc(void *devp, uint64_t bytes, kdev_buf *out,
		     struct sp_err *err)
{
	struct ocl_dev *o = devp;
	cl_mem m;

	SP_RETURN_IF(bytes > o->max_alloc, err, SHARDPIPE_ERR_NOMEM,
		     "opencl: %llu bytes exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE "
		     "(%llu) of %s", (unsigned long long)bytes,
		     (unsigned long long)o->max_alloc, o->label);
	CL_CREATE(err, m, clCreateBuffer(o->ctx, CL_MEM_READ_WRITE,
					 (size_t)bytes, NULL, CL_RC));
	*out = m;
	return SHARDPIPE_OK;
}

static void ocl_free(void *devp, kdev_buf buf)
{
	clReleaseMemObject((cl_mem)buf);
}

static int ocl_upload(void *devp, kdev_buf buf, uint64_t off, const void *src,
		      uint64_t n, kdev_event *done, struct sp_err *err)
{
	struct ocl_dev *o = devp;
	cl_event ev = NULL;

	CL_CHECK(err, clEnqueueWriteBuffer(o->queue, (cl_mem)buf, CL_FALSE,
					   (size_t)off, (size_t)n, src, 0,
					   NULL, done != NULL ? &ev : NULL));
	if (done != NULL)
		*done = ev;
	return SHARDPIPE_OK;
}

static int ocl_download(void *devp, void *dst, kdev_buf buf, uint64_t off,
			uint64_t n, kdev_event *done, struct sp_err *err)
{
	struct ocl_dev *o = devp;
	cl_event ev = NULL;

	CL_CHECK(err, clEnqueueReadBuffer(o->queue, (cl_mem)buf, CL_FALSE,
					  (size_t)off, (size_t)n, dst, 0, NULL,
					  done != NULL ? &ev : NULL));
	if (done != NULL)
		*done = ev;
	return SHARDPIPE_OK;
}

static int ocl_launch(void *devp, const struct kdev_launch *launch,
		      uint64_t global, uint64_t local, struct sp_err *err)
{
	struct ocl_dev *o = devp;
	const struct kdev_arg *args = launch->args;
	cl_kernel k = o->kernels[launch->id];
	size_t g = (size_t)global, l = (size_t)local;

	for (unsigned i = 0; i < launch->nargs; i++) {
		if (args[i].kind == KDEV_ARG_BUF) {
			cl_mem m = (cl_mem)args[i].buf;

			CL_CHECK(err, clSetKernelArg(k, i, sizeof(m), &m));
		} else {
			cl_ulong v = args[i].u64;

			CL_CHECK(err, clSetKernelArg(k, i, sizeof(v), &v));
		}
	}
	CL_CHECK(err, clEnqueueNDRangeKernel(o->queue, k, 1, NULL, &g, &l, 0,
					     NULL, NULL));
	return SHARDPIPE_OK;
}

static int ocl_wait(void *devp, kdev_event evp, struct sp_err *err)
{
	cl_event ev = evp;
	cl_int status = CL_COMPLETE, rc;

	if (ev == NULL)
		return SHARDPIPE_OK;
	rc = clWaitForEvents(1, &ev);
	if (rc == CL_SUCCESS)
		rc = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
				    sizeof(status), &status, NULL);
	clReleaseEvent(ev);
	CL_CHECK(err, rc);
	CL_CHECK(err, status < 0 ? status : CL_SUCCESS);
	return SHARDPIPE_OK;
}

static int ocl_finish(void *devp, struct sp_err *err)
{
	struct ocl_dev *o = devp;

	CL_CHECK(err, clFinish(o->queue));
	return SHARDPIPE_OK;
}

static void ocl_close(void *devp)
{
	struct ocl_dev *o = devp;

	if (o == NULL)
		return;
	for (size_t i = 0; i < NKERNELS; i++)
		if (o->kernels[i] != NULL)
			clReleaseKernel(o->kernels[i]);
	if (o->program != NULL)
		clReleaseProgram(o->program);
	if (o->queue != NULL)
		clReleaseCommandQueue(o->queue);
	if (o->ctx != NULL)
		clReleaseContext(o->ctx);
	free(o);
}

static const struct kdev_ops ocl_device = {
	.alloc = ocl_alloc,
	.free = ocl_free,
	.upload = ocl_upload,
	.download = ocl_download,
	.launch = ocl_launch,
	.wait = ocl_wait,
	.finish = ocl_finish,
	.close = ocl_close,
};

/* A failed build carries the compiler's log, as much as the message holds. */
static int build_program(struct ocl_dev *o, struct sp_err *err)
{
	const char *src = sp_opencl_kernel_source;
	cl_int rc;
	char log[4096] = "";
	size_t n = 0;

	CL_CREATE(err, o->program,
		  clCreateProgramWithSource(o->ctx, 1, &src, NULL, CL_RC));
	rc = clBuildProgram(o->program, 1, &o->device, "-cl-std=CL1.2", NULL,
			    NULL);
	if (rc == CL_SUCCESS)
		return SHARDPIPE_OK;
	clGetProgramBuildInfo(o->program, o->device, CL_PROGRAM_BUILD_LOG,
			      sizeof(log) - 1, log, &n);
	log[n < sizeof(log) ? n : sizeof(log) - 1] = '\0';
	return sp_err_set(err, SHARDPIPE_ERR_DEVICE,
			  "opencl: clBuildProgram failed on %s: %s (%d); "
			  "build log: %s", o->label, cl_errstr(rc), (int)rc,
			  log);
}

static int ocl_open(const struct kdev_device *d, void **dev,
		    struct kdev_limits *lim, struct sp_err *err)
{
	struct ocl_dev *o = calloc(1, sizeof(*o));
	size_t max_wg = 0;
	cl_uint units = 1;

	SP_RETURN_IF(o == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for an OpenCL context");
	*dev = o;
	o->platform = d->handle[0];
	o->device = d->handle[1];
	info_string(o->device, o->platform, o->label, sizeof(o->label));
	CL_CHECK(err, clGetDeviceInfo(o->device, CL_DEVICE_MAX_WORK_GROUP_SIZE,
				      sizeof(max_wg), &max_wg, NULL));
	CL_CHECK(err, clGetDeviceInfo(o->device, CL_DEVICE_MAX_COMPUTE_UNITS,
				      sizeof(units), &units, NULL));
	CL_CHECK(err, clGetDeviceInfo(o->device, CL_DEVICE_MAX_MEM_ALLOC_SIZE,
				      sizeof(o->max_alloc), &o->max_alloc,
				      NULL));
	CL_CREATE(err, o->ctx, clCreateContext(NULL, 1, &o->device, NULL, NULL,
					       CL_RC));
	CL_CREATE(err, o->queue, clCreateCommandQueue(o->ctx, o->device, 0,
						      CL_RC));
	SP_FORWARD(build_program(o, err));
	for (size_t i = 0; i < NKERNELS; i++) {
		size_t kwg = 0;

		CL_CREATE(err, o->kernels[i],
			  clCreateKernel(o->program, kdev_kernels[i].name,
					 CL_RC));
		CL_CHECK(err, clGetKernelWorkGroupInfo(o->kernels[i], o->device,
						       CL_KERNEL_WORK_GROUP_SIZE,
						       sizeof(kwg), &kwg, NULL));
		if (kwg < max_wg)
			max_wg = kwg;
	}
	lim->max_local = max_wg < SP_WG_MAX ? max_wg : SP_WG_MAX;
	lim->local = 64;
	lim->copy_local = d->gpu ? 0 : 1;
	lim->runs_per_item = d->gpu ? 1 : 64;
	/* Enough groups to fill every compute unit several times over;
	 * kernels stride over the rest. */
	lim->max_groups = (uint64_t)(units ? units : 1) *
			  (d->gpu ? 32 : 4);
	lim->async = 1;
	lim->one_item_groups = 0;
	return SHARDPIPE_OK;
}

const struct kdev_adapter kdev_plugin_adapter = {
	.name = "opencl",
	.api = "OpenCL",
	.device_env = "SHARDPIPE_OPENCL_DEVICE",
	.index_parts = 2,
	.index_form = "P:D (platform and device, from 0)",
	.ops = &ocl_device,
	.list = ocl_list,
	.name_of = ocl_name_of,
	.describe = ocl_describe,
	.open = ocl_open,
};
