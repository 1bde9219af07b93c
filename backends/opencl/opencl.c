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
 * Work goes to three in-order queues, as on CUDA (doc/design.md §11):
 * uploads, kernels and downloads.  Every buffer keeps the event of the
 * last operation issued on it, and each operation waits for the events of
 * the buffers it touches and becomes their last: issue order per buffer
 * holds (all the driver asks), while batch k+1's upload runs beside batch
 * k's kernels and batch k's download beside batch k+1's kernels.  Staging
 * buffers and the offsets are host memory of the device
 * (CL_MEM_ALLOC_HOST_PTR, mapped), from which a GPU's driver copies
 * directly.  With SHARDPIPE_TRACE the queues profile, and event times are
 * moved onto the host's clock by an offset measured at open.
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

struct ocl_buf {
	cl_mem mem;
	cl_event last;      /* the last operation issued on it, or NULL */
};

/* Host memory of the device: a CL_MEM_ALLOC_HOST_PTR buffer, mapped. */
struct ocl_host {
	cl_mem mem;
	void *ptr;
	struct ocl_host *next;
};

struct ocl_dev {
	cl_platform_id platform;
	cl_device_id device;
	cl_context ctx;
	cl_command_queue up, compute, down;
	cl_program program;
	cl_kernel kernels[NKERNELS];
	cl_ulong max_alloc;
	struct ocl_host *hosts;
	double clock_offset;    /* host seconds minus device seconds */
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
	struct ocl_buf *b;
	cl_int cl_rc_ = CL_SUCCESS;

	SP_RETURN_IF(bytes > o->max_alloc, err, SHARDPIPE_ERR_NOMEM,
		     "opencl: %llu bytes exceed CL_DEVICE_MAX_MEM_ALLOC_SIZE "
		     "(%llu) of %s", (unsigned long long)bytes,
		     (unsigned long long)o->max_alloc, o->label);
	b = calloc(1, sizeof(*b));
	SP_RETURN_IF(b == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of host memory for a buffer record");
	b->mem = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE, (size_t)bytes, NULL,
				CL_RC);
	if (cl_rc_ != CL_SUCCESS) {
		free(b);
		return sp_err_set(err, SHARDPIPE_ERR_DEVICE,
				  "opencl: clCreateBuffer(%llu bytes) failed: "
				  "%s (%d)", (unsigned long long)bytes,
				  cl_errstr(cl_rc_), (int)cl_rc_);
	}
	*out = b;
	return SHARDPIPE_OK;
}

static void ocl_free(void *devp, kdev_buf buf)
{
	struct ocl_buf *b = buf;

	if (b->last != NULL)
		clReleaseEvent(b->last);
	clReleaseMemObject(b->mem);
	free(b);
}

static void *ocl_host_alloc(void *devp, uint64_t bytes)
{
	struct ocl_dev *o = devp;
	struct ocl_host *h;
	cl_int rc = CL_SUCCESS;

	if (bytes > o->max_alloc || (h = calloc(1, sizeof(*h))) == NULL)
		return NULL;
	h->mem = clCreateBuffer(o->ctx, CL_MEM_READ_WRITE |
				CL_MEM_ALLOC_HOST_PTR, (size_t)bytes, NULL, &rc);
	if (rc == CL_SUCCESS)
		h->ptr = clEnqueueMapBuffer(o->up, h->mem, CL_TRUE,
					    CL_MAP_READ | CL_MAP_WRITE, 0,
					    (size_t)bytes, 0, NULL, NULL, &rc);
	if (rc != CL_SUCCESS || h->ptr == NULL) {
		if (h->mem != NULL)
			clReleaseMemObject(h->mem);
		free(h);
		return NULL;
	}
	h->next = o->hosts;
	o->hosts = h;
	return h->ptr;
}

static void host_release(struct ocl_dev *o, struct ocl_host *h)
{
	clEnqueueUnmapMemObject(o->up, h->mem, h->ptr, 0, NULL, NULL);
	clFinish(o->up);
	clReleaseMemObject(h->mem);
	free(h);
}

static void ocl_host_free(void *devp, void *p)
{
	struct ocl_dev *o = devp;

	for (struct ocl_host **h = &o->hosts; *h != NULL; h = &(*h)->next)
		if ((*h)->ptr == p) {
			struct ocl_host *gone = *h;

			*h = gone->next;
			host_release(o, gone);
			return;
		}
}

/* The last uses of bufs, as an event wait list; returns its length. */
static cl_uint after(struct ocl_buf *const *bufs, unsigned n, cl_event *list)
{
	cl_uint k = 0;

	for (unsigned i = 0; i < n; i++)
		if (bufs[i]->last != NULL)
			list[k++] = bufs[i]->last;
	return k;
}

/* ev, just issued, becomes the last use of bufs and, when done is not
 * NULL, the caller's; the issuer's own reference is given away. */
static void mark(struct ocl_buf *const *bufs, unsigned n, cl_event ev,
		 kdev_event *done)
{
	for (unsigned i = 0; i < n; i++) {
		if (bufs[i]->last != NULL)
			clReleaseEvent(bufs[i]->last);
		clRetainEvent(ev);
		bufs[i]->last = ev;
	}
	if (done != NULL)
		*done = ev;
	else
		clReleaseEvent(ev);
}

static int ocl_upload(void *devp, kdev_buf buf, uint64_t off, const void *src,
		      uint64_t n, kdev_event *done, struct sp_err *err)
{
	struct ocl_dev *o = devp;
	struct ocl_buf *b = buf;
	cl_event wl[1], ev = NULL;
	cl_uint nw = after(&b, 1, wl);

	CL_CHECK(err, clEnqueueWriteBuffer(o->up, b->mem, CL_FALSE,
					   (size_t)off, (size_t)n, src, nw,
					   nw ? wl : NULL, &ev));
	mark(&b, 1, ev, done);
	return SHARDPIPE_OK;
}

static int ocl_download(void *devp, void *dst, kdev_buf buf, uint64_t off,
			uint64_t n, kdev_event *done, struct sp_err *err)
{
	struct ocl_dev *o = devp;
	struct ocl_buf *b = buf;
	cl_event wl[1], ev = NULL;
	cl_uint nw = after(&b, 1, wl);

	CL_CHECK(err, clEnqueueReadBuffer(o->down, b->mem, CL_FALSE,
					  (size_t)off, (size_t)n, dst, nw,
					  nw ? wl : NULL, &ev));
	mark(&b, 1, ev, done);
	return SHARDPIPE_OK;
}

static int ocl_launch(void *devp, const struct kdev_launch *launch,
		      uint64_t global, uint64_t local, kdev_event *done,
		      struct sp_err *err)
{
	struct ocl_dev *o = devp;
	const struct kdev_arg *args = launch->args;
	cl_kernel k = o->kernels[launch->id];
	size_t g = (size_t)global, l = (size_t)local;
	struct ocl_buf *bufs[KDEV_MAX_ARGS];
	cl_event wl[KDEV_MAX_ARGS], ev = NULL;
	unsigned nbufs = 0;
	cl_uint nw;

	for (unsigned i = 0; i < launch->nargs; i++) {
		if (args[i].kind == KDEV_ARG_BUF) {
			bufs[nbufs] = args[i].buf;
			CL_CHECK(err, clSetKernelArg(k, i, sizeof(cl_mem),
						     &bufs[nbufs]->mem));
			nbufs++;
		} else {
			cl_ulong v = args[i].u64;

			CL_CHECK(err, clSetKernelArg(k, i, sizeof(v), &v));
		}
	}
	nw = after(bufs, nbufs, wl);
	CL_CHECK(err, clEnqueueNDRangeKernel(o->compute, k, 1, NULL, &g, &l,
					     nw, nw ? wl : NULL, &ev));
	mark(bufs, nbufs, ev, done);
	return SHARDPIPE_OK;
}

/* Wait for ev and check that its command succeeded; ev stays held. */
static cl_int complete(cl_event ev)
{
	cl_int status = CL_COMPLETE, rc = clWaitForEvents(1, &ev);

	if (rc == CL_SUCCESS)
		rc = clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS,
				    sizeof(status), &status, NULL);
	return rc != CL_SUCCESS ? rc : status < 0 ? status : CL_SUCCESS;
}

static int ocl_wait(void *devp, kdev_event evp, struct sp_err *err)
{
	cl_event ev = evp;
	cl_int rc;

	if (ev == NULL)
		return SHARDPIPE_OK;
	rc = complete(ev);
	clReleaseEvent(ev);
	CL_CHECK(err, rc);
	return SHARDPIPE_OK;
}

static int ocl_profile(void *devp, kdev_event evp, double *start,
		       double *end, struct sp_err *err)
{
	struct ocl_dev *o = devp;
	cl_event ev = evp;
	cl_ulong a = 0, b = 0;
	cl_int rc = complete(ev);

	if (rc == CL_SUCCESS)
		rc = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_START,
					     sizeof(a), &a, NULL);
	if (rc == CL_SUCCESS)
		rc = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END,
					     sizeof(b), &b, NULL);
	clReleaseEvent(ev);
	CL_CHECK(err, rc);
	*start = 1e-9 * (double)a + o->clock_offset;
	*end = 1e-9 * (double)b + o->clock_offset;
	return SHARDPIPE_OK;
}

static int ocl_finish(void *devp, struct sp_err *err)
{
	struct ocl_dev *o = devp;
	cl_command_queue queues[] = { o->up, o->compute, o->down };
	cl_int rc = CL_SUCCESS;

	/* Every queue, even after one fails: buffers are freed next. */
	for (int i = 0; i < 3; i++) {
		cl_int e = queues[i] != NULL ? clFinish(queues[i]) : CL_SUCCESS;

		if (rc == CL_SUCCESS)
			rc = e;
	}
	CL_CHECK(err, rc);
	return SHARDPIPE_OK;
}

static void ocl_close(void *devp)
{
	struct ocl_dev *o = devp;
	cl_command_queue queues[] = { o != NULL ? o->up : NULL,
				      o != NULL ? o->compute : NULL,
				      o != NULL ? o->down : NULL };

	if (o == NULL)
		return;
	while (o->hosts != NULL) {
		struct ocl_host *h = o->hosts;

		o->hosts = h->next;
		host_release(o, h);
	}
	for (size_t i = 0; i < NKERNELS; i++)
		if (o->kernels[i] != NULL)
			clReleaseKernel(o->kernels[i]);
	if (o->program != NULL)
		clReleaseProgram(o->program);
	for (int i = 0; i < 3; i++)
		if (queues[i] != NULL)
			clReleaseCommandQueue(queues[i]);
	if (o->ctx != NULL)
		clReleaseContext(o->ctx);
	free(o);
}

static const struct kdev_ops ocl_device = {
	.alloc = ocl_alloc,
	.free = ocl_free,
	.host_alloc = ocl_host_alloc,
	.host_free = ocl_host_free,
	.upload = ocl_upload,
	.download = ocl_download,
	.launch = ocl_launch,
	.wait = ocl_wait,
	.profile = ocl_profile,
	.finish = ocl_finish,
	.close = ocl_close,
};

/*
 * Profiling times are the device's; the host's clock is what the trace
 * uses.  A marker's queued time lies between the host times before and
 * after it was enqueued: their midpoint gives the offset, to the
 * microsecond or so the enqueue takes.
 */
static int calibrate(struct ocl_dev *o, struct sp_err *err)
{
	cl_event ev = NULL;
	cl_ulong q = 0;
	double t0 = sp_now(), t1;
	cl_int rc;

	CL_CHECK(err, clEnqueueMarkerWithWaitList(o->compute, 0, NULL, &ev));
	t1 = sp_now();
	rc = complete(ev);
	if (rc == CL_SUCCESS)
		rc = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_QUEUED,
					     sizeof(q), &q, NULL);
	clReleaseEvent(ev);
	CL_CHECK(err, rc);
	o->clock_offset = 0.5 * (t0 + t1) - 1e-9 * (double)q;
	return SHARDPIPE_OK;
}

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

static int ocl_open(const struct kdev_device *d, const struct plan *plan,
		    void **dev, struct kdev_limits *lim, struct sp_err *err)
{
	struct ocl_dev *o = calloc(1, sizeof(*o));
	cl_command_queue_properties props =
		plan->trace ? CL_QUEUE_PROFILING_ENABLE : 0;
	size_t max_wg = 0;
	cl_uint units = 1;
	cl_ulong mem = 0;

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
	CL_CHECK(err, clGetDeviceInfo(o->device, CL_DEVICE_GLOBAL_MEM_SIZE,
				      sizeof(mem), &mem, NULL));
	CL_CREATE(err, o->ctx, clCreateContext(NULL, 1, &o->device, NULL, NULL,
					       CL_RC));
	CL_CREATE(err, o->up, clCreateCommandQueue(o->ctx, o->device, props,
						   CL_RC));
	CL_CREATE(err, o->compute, clCreateCommandQueue(o->ctx, o->device,
							props, CL_RC));
	CL_CREATE(err, o->down, clCreateCommandQueue(o->ctx, o->device, props,
						     CL_RC));
	if (plan->trace)
		SP_FORWARD(calibrate(o, err));
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
	/* An eighth of the device's memory for the encoders' scratch, in
	 * one allocation. */
	lim->scratch_budget = mem / 8 < o->max_alloc ? mem / 8 : o->max_alloc;
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
