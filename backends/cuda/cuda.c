/*
 * cuda.c - the `cuda` backend plugin: a device adapter for the shared
 * kernel driver (backends/kernels/driver.h) over the CUDA runtime, and the
 * plugin's single entry point.
 *
 * The kernels are backends/kernels/ compiled by nvcc (kernels.cu); this
 * file is plain C against cuda_runtime_api.h and launches them through
 * the host stubs of sp_cuda_kernel_table.  The runtime is linked
 * statically, so the plugin needs only the driver's libcuda.so.1, which
 * the runtime opens itself: without a driver the plugin still loads and
 * probe says why the backend is unusable.
 *
 * The driver wants in-order execution per device context.  Here three
 * streams carry the work (upload, compute, read-back) and every device
 * buffer keeps a "last use" event: an operation first waits for the
 * events of the buffers it touches, then records its own completion on
 * them.  Work on different buffers therefore overlaps (with two buffer
 * sets, batch k+1's upload runs beside batch k's kernels and batch k's
 * read-back beside batch k+1's kernels; the kernels themselves share the
 * one compute stream, so they never run beside each other) while work on
 * the same buffer keeps issue order: waiting on a buffer's last use
 * chains every operation on it after all earlier ones, which covers
 * read-after-write, write-after-read and write-after-write alike.
 * cudaStreamWaitEvent waits for the record current when it is called,
 * so re-recording `last` afterwards does not disturb an earlier wait.
 *
 * The stream's staging buffers are pinned (host_alloc), so an upload from
 * them is a direct DMA and the driver waits for it before the buffer is
 * reused.  Other uploads (a caller's span handed over whole) go through two
 * pinned buffers of the adapter used in turn: the caller's bytes are
 * copied into one, which the upload stream then copies to the device, so
 * the caller may reuse its memory as soon as upload returns.  The offsets
 * are read back into pinned memory; the chunks go straight to the shard
 * buffers (doc/design.md §11).
 *
 * With SHARDPIPE_TRACE every operation whose completion the driver asks
 * for is bracketed by two timing events, placed on the host's clock
 * through an event recorded and synchronised at open.
 *
 * SHARDPIPE_CUDA_DEVICE chooses the device (adapter.h's grammar): an
 * index is the device's ordinal; a name is matched against the device's
 * name.
 */
#include <cuda_runtime_api.h>

#include <limits.h>
#include <stdlib.h>

#include "adapter.h"
#include "geometry.h"

/* kernels.cu: the host stubs of every kernel, in SP_KERNEL_LIST order. */
extern const void *const sp_cuda_kernel_table[];
extern const unsigned sp_cuda_kernel_count;

/* A failed runtime call, named, with CUDA's words for the error. */
static int cu_fail(struct sp_err *err, const char *call, cudaError_t rc)
{
	return sp_err_set(err, rc == cudaErrorMemoryAllocation ?
			  SHARDPIPE_ERR_NOMEM : SHARDPIPE_ERR_DEVICE,
			  "cuda: %s failed: %s (%s)", call,
			  cudaGetErrorString(rc), cudaGetErrorName(rc));
}

/* Check a runtime call; the message names the call and the error. */
#define CUDA_CHECK(err, call)                                                 \
	do {                                                                  \
		cudaError_t cu_rc_ = (call);                                  \
		if (cu_rc_ != cudaSuccess)                                    \
			return cu_fail((err), #call, cu_rc_);                 \
	} while (0)

struct cu_buf {
	void *ptr;
	cudaEvent_t last;   /* the last operation issued on this buffer */
};

struct cu_stage {
	void *host;         /* pinned */
	uint64_t cap;
	cudaEvent_t free;   /* the copy out of it has completed */
};

/* What the driver waits on: the operation's end and, when tracing, its
 * start. */
struct cu_ev {
	cudaEvent_t start, end;
};

struct cu_dev {
	int device;
	cudaStream_t up, compute, down;
	struct cu_stage stage[2];
	int next_stage;
	int chosen;         /* device is set: there may be resources on it */
	int trace;          /* time operations (SHARDPIPE_TRACE) */
	cudaEvent_t base;   /* tracing: recorded at open ... */
	double base_host;   /* ... and complete at this host time */
	char label[200];
};

/* ----------------------------------------------------------- devices */

/* Every device, index (ordinal); every CUDA device is a GPU.  Without a
 * driver cudaGetDeviceCount fails, and that is probe's reason. */
static int cu_list(kdev_visit_fn visit, void *state, struct sp_err *err)
{
	int count = 0;
	cudaError_t rc = cudaGetDeviceCount(&count);

	SP_RETURN_IF(rc != cudaSuccess, err, SHARDPIPE_ERR_BACKEND,
		     "no CUDA device (%s)", cudaGetErrorString(rc));
	SP_RETURN_IF(count <= 0, err, SHARDPIPE_ERR_BACKEND,
		     "no CUDA device (cudaGetDeviceCount found %d)", count);
	for (int i = 0; i < count; i++) {
		struct kdev_device d = { .index = { (unsigned)i }, .gpu = 1 };

		if (visit(state, &d))
			break;
	}
	return SHARDPIPE_OK;
}

static void cu_name_of(const struct kdev_device *d, char *buf, size_t n)
{
	struct cudaDeviceProp prop;

	if (cudaGetDeviceProperties(&prop, (int)d->index[0]) != cudaSuccess)
		prop.name[0] = '\0';
	prop.name[sizeof(prop.name) - 1] = '\0';
	snprintf(buf, n, "%s", prop.name);
}

static void cu_describe(const struct kdev_device *d, char *buf, size_t n)
{
	struct cudaDeviceProp prop;
	int device = (int)d->index[0];

	if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
		snprintf(buf, n, "CUDA device %d", device);
		return;
	}
	prop.name[sizeof(prop.name) - 1] = '\0';
	snprintf(buf, n, "%.120s (CUDA device %d, sm_%d%d, %llu MiB)", prop.name,
		 device, prop.major, prop.minor,
		 (unsigned long long)(prop.totalGlobalMem >> 20));
}

/* --------------------------------------------------------- the adapter */

static int cu_alloc(void *devp, uint64_t bytes, kdev_buf *out,
		    struct sp_err *err)
{
	struct cu_dev *c = devp;
	struct cu_buf *b;
	cudaError_t rc;
	char call[64];

	*out = NULL;
	CUDA_CHECK(err, cudaSetDevice(c->device));
	b = calloc(1, sizeof(*b));
	SP_RETURN_IF(b == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of host memory for a buffer record");
	snprintf(call, sizeof(call), "cudaEventCreateWithFlags");
	rc = cudaEventCreateWithFlags(&b->last, cudaEventDisableTiming);
	if (rc == cudaSuccess) {
		snprintf(call, sizeof(call), "cudaMalloc(%llu bytes)",
			 (unsigned long long)bytes);
		rc = cudaMalloc(&b->ptr, (size_t)bytes);
		if (rc != cudaSuccess)
			cudaEventDestroy(b->last);
	}
	if (rc != cudaSuccess) {
		free(b);
		return cu_fail(err, call, rc);
	}
	*out = b;
	return SHARDPIPE_OK;
}

static void cu_free(void *devp, kdev_buf buf)
{
	struct cu_dev *c = devp;
	struct cu_buf *b = buf;

	cudaSetDevice(c->device);
	cudaFree(b->ptr);
	cudaEventDestroy(b->last);
	free(b);
}

/* Pinned memory for the stream's staging and the driver's offsets: a DMA
 * reads or writes it directly, and the copy is truly asynchronous.  Not
 * write-combined: the host reads staging too (big-endian swaps). */
static void *cu_host_alloc(void *devp, uint64_t bytes)
{
	struct cu_dev *c = devp;
	void *p = NULL;

	if (cudaSetDevice(c->device) != cudaSuccess ||
	    cudaHostAlloc(&p, (size_t)bytes, cudaHostAllocDefault) !=
		    cudaSuccess)
		return NULL;
	return p;
}

static void cu_host_free(void *devp, void *p)
{
	struct cu_dev *c = devp;

	/* The current device is per host thread and the pipeline thread
	 * may never have called cudaSetDevice: without it the runtime would
	 * make device 0's primary context current here. */
	cudaSetDevice(c->device);
	cudaFreeHost(p);
}

/* Make `stream` wait for the last use of each buffer. */
static int after(cudaStream_t stream, struct cu_buf *const *bufs, unsigned n,
		 struct sp_err *err)
{
	for (unsigned i = 0; i < n; i++)
		CUDA_CHECK(err, cudaStreamWaitEvent(stream, bufs[i]->last, 0));
	return SHARDPIPE_OK;
}

/* Record the work just issued on `stream` as each buffer's last use. */
static int mark(cudaStream_t stream, struct cu_buf *const *bufs, unsigned n,
		struct sp_err *err)
{
	for (unsigned i = 0; i < n; i++)
		CUDA_CHECK(err, cudaEventRecord(bufs[i]->last, stream));
	return SHARDPIPE_OK;
}

static void ev_free(struct cu_ev *e)
{
	if (e->start != NULL)
		cudaEventDestroy(e->start);
	if (e->end != NULL)
		cudaEventDestroy(e->end);
	free(e);
}

/* Before an operation on `stream` whose completion the driver wants (done
 * not NULL): its event and, when tracing, the start recorded now. */
static int ev_begin(struct cu_dev *c, cudaStream_t stream, kdev_event *done,
		    struct cu_ev **out, struct sp_err *err)
{
	struct cu_ev *e;
	cudaError_t rc;

	*out = NULL;
	if (done == NULL)
		return SHARDPIPE_OK;
	e = calloc(1, sizeof(*e));
	SP_RETURN_IF(e == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of host memory for an event");
	rc = cudaEventCreateWithFlags(&e->end, c->trace ? cudaEventDefault :
					       cudaEventDisableTiming);
	if (rc == cudaSuccess && c->trace) {
		rc = cudaEventCreate(&e->start);
		if (rc == cudaSuccess)
			rc = cudaEventRecord(e->start, stream);
	}
	if (rc != cudaSuccess) {
		ev_free(e);
		return cu_fail(err, "cudaEventCreate/Record(start)", rc);
	}
	*out = e;
	return SHARDPIPE_OK;
}

/* After the operation: record its end and hand the event over. */
static int ev_end(cudaStream_t stream, struct cu_ev *e, kdev_event *done,
		  struct sp_err *err)
{
	cudaError_t rc;

	if (e == NULL)
		return SHARDPIPE_OK;
	rc = cudaEventRecord(e->end, stream);
	if (rc != cudaSuccess) {
		ev_free(e);
		return cu_fail(err, "cudaEventRecord(end)", rc);
	}
	*done = e;
	return SHARDPIPE_OK;
}

/* Memory from cudaHostAlloc or cudaHostRegister: a DMA reads it as it is. */
static int pinned(const void *p)
{
	struct cudaPointerAttributes a;

	if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
		cudaGetLastError();   /* not sticky: forget it */
		return 0;
	}
	return a.type == cudaMemoryTypeHost;
}

/* A staging buffer of at least n bytes whose previous copy has drained. */
static int take_stage(struct cu_dev *c, uint64_t n, struct cu_stage **out,
		      struct sp_err *err)
{
	struct cu_stage *st = &c->stage[c->next_stage];

	c->next_stage ^= 1;
	CUDA_CHECK(err, cudaEventSynchronize(st->free));
	if (st->cap < n) {
		/* Whole MiBs, so that slowly growing uploads do not
		 * reallocate every time. */
		uint64_t cap = (n + ((uint64_t)1 << 20) - 1) &
			       ~(((uint64_t)1 << 20) - 1);

		if (st->host != NULL)
			CUDA_CHECK(err, cudaFreeHost(st->host));
		st->host = NULL;
		st->cap = 0;
		CUDA_CHECK(err, cudaHostAlloc(&st->host, (size_t)cap,
					      cudaHostAllocDefault));
		st->cap = cap;
	}
	*out = st;
	return SHARDPIPE_OK;
}

static int cu_upload(void *devp, kdev_buf buf, uint64_t off, const void *src,
		     uint64_t n, kdev_event *done, struct sp_err *err)
{
	struct cu_dev *c = devp;
	struct cu_buf *b = buf;
	struct cu_stage *st = NULL;
	struct cu_ev *e = NULL;
	cudaError_t rc;

	if (done != NULL)
		*done = NULL;
	if (n == 0)
		return SHARDPIPE_OK;
	CUDA_CHECK(err, cudaSetDevice(c->device));
	if (!pinned(src)) {
		/* src is copied before this returns: nothing to wait for,
		 * unless the trace wants the copy's times. */
		SP_FORWARD(take_stage(c, n, &st, err));
		memcpy(st->host, src, (size_t)n);
		src = st->host;
		if (!c->trace)
			done = NULL;
	}
	SP_FORWARD(after(c->up, &b, 1, err));
	SP_FORWARD(ev_begin(c, c->up, done, &e, err));
	rc = cudaMemcpyAsync((uint8_t *)b->ptr + off, src, (size_t)n,
			     cudaMemcpyHostToDevice, c->up);
	if (rc != cudaSuccess) {
		if (e != NULL)
			ev_free(e);
		return cu_fail(err, "cudaMemcpyAsync(host to device)", rc);
	}
	if (st != NULL)
		CUDA_CHECK(err, cudaEventRecord(st->free, c->up));
	SP_FORWARD(mark(c->up, &b, 1, err));
	return ev_end(c->up, e, done, err);
}

static int cu_download(void *devp, void *dst, kdev_buf buf, uint64_t off,
		       uint64_t n, kdev_event *done, struct sp_err *err)
{
	struct cu_dev *c = devp;
	struct cu_buf *b = buf;
	struct cu_ev *e = NULL;
	cudaError_t rc;

	if (done != NULL)
		*done = NULL;
	CUDA_CHECK(err, cudaSetDevice(c->device));
	SP_FORWARD(after(c->down, &b, 1, err));
	SP_FORWARD(ev_begin(c, c->down, done, &e, err));
	/* Into pageable memory (a shard's buffer) the runtime stages the
	 * copy itself and returns once it is done. */
	rc = n > 0 ? cudaMemcpyAsync(dst, (const uint8_t *)b->ptr + off,
				     (size_t)n, cudaMemcpyDeviceToHost, c->down)
		   : cudaSuccess;
	if (rc != cudaSuccess) {
		if (e != NULL)
			ev_free(e);
		return cu_fail(err, "cudaMemcpyAsync(device to host)", rc);
	}
	SP_FORWARD(mark(c->down, &b, 1, err));
	return ev_end(c->down, e, done, err);
}

static int cu_launch(void *devp, const struct kdev_launch *l, uint64_t global,
		     uint64_t local, kdev_event *done, struct sp_err *err)
{
	struct cu_dev *c = devp;
	const char *name = kdev_kernels[l->id].name;
	const struct kdev_arg *args = l->args;
	unsigned nargs = l->nargs;
	struct cu_buf *bufs[KDEV_MAX_ARGS];
	void *ptrs[KDEV_MAX_ARGS];
	uint64_t vals[KDEV_MAX_ARGS];
	void *params[KDEV_MAX_ARGS];
	unsigned nbufs = 0;
	uint64_t groups;
	dim3 grid = { 1, 1, 1 }, block = { 1, 1, 1 };
	struct cu_ev *e = NULL;
	cudaError_t rc;

	SP_RETURN_IF(nargs > KDEV_MAX_ARGS || local == 0 || local > 1024 ||
		     global % local != 0 || global / local > INT_MAX, err,
		     SHARDPIPE_ERR_DEVICE,
		     "cuda: %s launched with global %llu, local %llu", name,
		     (unsigned long long)global, (unsigned long long)local);
	groups = global / local;
	for (unsigned i = 0; i < nargs; i++) {
		/* Every parameter is 8 bytes: a device pointer or a u64. */
		if (args[i].kind == KDEV_ARG_BUF) {
			bufs[nbufs] = args[i].buf;
			ptrs[i] = bufs[nbufs]->ptr;
			params[i] = &ptrs[i];
			nbufs++;
		} else {
			vals[i] = args[i].u64;
			params[i] = &vals[i];
		}
	}
	if (done != NULL)
		*done = NULL;
	CUDA_CHECK(err, cudaSetDevice(c->device));
	SP_FORWARD(after(c->compute, bufs, nbufs, err));
	SP_FORWARD(ev_begin(c, c->compute, done, &e, err));
	grid.x = (unsigned)groups;
	block.x = (unsigned)local;
	rc = cudaLaunchKernel(sp_cuda_kernel_table[l->id], grid, block, params, 0,
			      c->compute);
	if (rc != cudaSuccess) {
		char call[320];

		if (e != NULL)
			ev_free(e);
		snprintf(call, sizeof(call),
			 "cudaLaunchKernel(%s, %llu groups of %llu) on %s",
			 name, (unsigned long long)groups,
			 (unsigned long long)local, c->label);
		return cu_fail(err, call, rc);
	}
	SP_FORWARD(mark(c->compute, bufs, nbufs, err));
	return ev_end(c->compute, e, done, err);
}

/* Set this thread's device and wait for e's end; e stays allocated. */
static cudaError_t complete(struct cu_dev *c, struct cu_ev *e,
			    const char **call)
{
	/* As every entry point: the calling thread's current device is its
	 * own (cudaSetDevice is per host thread), so set ours first rather
	 * than let the runtime initialise device 0 on this thread. */
	cudaError_t rc = cudaSetDevice(c->device);

	*call = "cudaSetDevice";
	if (rc != cudaSuccess)
		return rc;
	/* Kernel faults surface here, at the first synchronisation. */
	*call = "cudaEventSynchronize";
	return cudaEventSynchronize(e->end);
}

static int cu_wait(void *devp, kdev_event evp, struct sp_err *err)
{
	struct cu_ev *e = evp;
	const char *call;
	cudaError_t rc;

	if (e == NULL)
		return SHARDPIPE_OK;
	rc = complete(devp, e, &call);
	ev_free(e);   /* wait releases ev whatever happens */
	if (rc != cudaSuccess)
		return cu_fail(err, call, rc);
	return SHARDPIPE_OK;
}

static int cu_profile(void *devp, kdev_event evp, double *start, double *end,
		      struct sp_err *err)
{
	struct cu_dev *c = devp;
	struct cu_ev *e = evp;
	const char *call;
	float a = 0, b = 0;
	cudaError_t rc = complete(c, e, &call);

	if (rc == cudaSuccess && e->start != NULL) {
		call = "cudaEventElapsedTime";
		rc = cudaEventElapsedTime(&a, c->base, e->start);
		if (rc == cudaSuccess)
			rc = cudaEventElapsedTime(&b, c->base, e->end);
	}
	ev_free(e);
	if (rc != cudaSuccess)
		return cu_fail(err, call, rc);
	*start = c->base_host + 1e-3 * (double)a;
	*end = c->base_host + 1e-3 * (double)b;
	return SHARDPIPE_OK;
}

static int cu_finish(void *devp, struct sp_err *err)
{
	struct cu_dev *c = devp;

	cudaStream_t streams[] = { c->up, c->compute, c->down };
	const char *names[] = { "upload", "compute", "read-back" };
	int rc = SHARDPIPE_OK;

	CUDA_CHECK(err, cudaSetDevice(c->device));
	/* All three streams, even after one reports an error: the driver
	 * frees buffers after finish (kdrv_close), so finish must not
	 * return while another stream may still be using them. */
	for (int i = 0; i < 3; i++) {
		cudaError_t e = cudaStreamSynchronize(streams[i]);

		if (e != cudaSuccess && rc == SHARDPIPE_OK) {
			char call[64];

			snprintf(call, sizeof(call),
				 "cudaStreamSynchronize(%s stream)", names[i]);
			rc = cu_fail(err, call, e);
		}
	}
	return rc;
}

static void cu_close(void *devp)
{
	struct cu_dev *c = devp;
	cudaStream_t *streams[] = { &c->up, &c->compute, &c->down };

	if (c == NULL)
		return;
	/* An open that failed before setting the device created nothing;
	 * since CUDA 12 cudaSetDevice initialises the device's primary
	 * context, so calling it here would leave a context (memory) on the
	 * device. */
	if (!c->chosen) {
		free(c);
		return;
	}
	cudaSetDevice(c->device);
	/* The streams and the staging may still be in use: drain first.
	 * The primary context is shared with other streams of the process,
	 * so it is left alone (no cudaDeviceReset). */
	for (int i = 0; i < 3; i++)
		if (*streams[i] != NULL) {
			cudaStreamSynchronize(*streams[i]);
			cudaStreamDestroy(*streams[i]);
		}
	for (int i = 0; i < 2; i++) {
		if (c->stage[i].host != NULL)
			cudaFreeHost(c->stage[i].host);
		if (c->stage[i].free != NULL)
			cudaEventDestroy(c->stage[i].free);
	}
	if (c->base != NULL)
		cudaEventDestroy(c->base);
	free(c);
}

static const struct kdev_ops cu_device = {
	.alloc = cu_alloc,
	.free = cu_free,
	.host_alloc = cu_host_alloc,
	.host_free = cu_host_free,
	.upload = cu_upload,
	.download = cu_download,
	.launch = cu_launch,
	.wait = cu_wait,
	.profile = cu_profile,
	.finish = cu_finish,
	.close = cu_close,
};

/* The trace's clock: an event recorded and waited for, completed by the
 * host time read just after (to the few microseconds the wait takes). */
static int calibrate(struct cu_dev *c, struct sp_err *err)
{
	CUDA_CHECK(err, cudaEventCreate(&c->base));
	CUDA_CHECK(err, cudaEventRecord(c->base, c->compute));
	CUDA_CHECK(err, cudaEventSynchronize(c->base));
	c->base_host = sp_now();
	return SHARDPIPE_OK;
}

static int cu_open(const struct kdev_device *d, const struct plan *plan,
		   void **dev, struct kdev_limits *lim, struct sp_err *err)
{
	struct cu_dev *c = calloc(1, sizeof(*c));
	int sms = 1, max_threads = 1024;
	size_t mem_free = 0, mem_total = 0;

	SP_RETURN_IF(c == NULL, err, SHARDPIPE_ERR_NOMEM,
		     "out of memory for a CUDA context");
	*dev = c;
	SP_RETURN_IF(sp_cuda_kernel_count != KDEV_NKERNELS, err,
		     SHARDPIPE_ERR_DEVICE,
		     "cuda: the plugin's kernel table has %u kernels, the "
		     "driver knows %d", sp_cuda_kernel_count, KDEV_NKERNELS);
	c->device = (int)d->index[0];
	c->chosen = 1;
	c->trace = plan->trace;
	cu_describe(d, c->label, sizeof(c->label));
	CUDA_CHECK(err, cudaSetDevice(c->device));
	CUDA_CHECK(err, cudaDeviceGetAttribute(&sms,
					       cudaDevAttrMultiProcessorCount,
					       c->device));
	CUDA_CHECK(err, cudaMemGetInfo(&mem_free, &mem_total));
	CUDA_CHECK(err, cudaStreamCreateWithFlags(&c->up,
						  cudaStreamNonBlocking));
	CUDA_CHECK(err, cudaStreamCreateWithFlags(&c->compute,
						  cudaStreamNonBlocking));
	CUDA_CHECK(err, cudaStreamCreateWithFlags(&c->down,
						  cudaStreamNonBlocking));
	for (int i = 0; i < 2; i++)
		CUDA_CHECK(err, cudaEventCreateWithFlags(&c->stage[i].free,
							 cudaEventDisableTiming));
	if (c->trace)
		SP_FORWARD(calibrate(c, err));
	/* The largest block every kernel can run with its registers; this
	 * also loads each kernel, so a fat binary without code for this
	 * GPU fails here, naming the kernel, rather than at a launch. */
	for (unsigned i = 0; i < KDEV_NKERNELS; i++) {
		struct cudaFuncAttributes attr;
		cudaError_t rc = cudaFuncGetAttributes(&attr,
						       sp_cuda_kernel_table[i]);

		if (rc != cudaSuccess) {
			char call[320];

			snprintf(call, sizeof(call),
				 "cudaFuncGetAttributes(%s) on %s",
				 kdev_kernels[i].name, c->label);
			return cu_fail(err, call, rc);
		}
		if (attr.maxThreadsPerBlock < max_threads)
			max_threads = attr.maxThreadsPerBlock;
	}
	lim->max_local = max_threads < SP_WG_MAX ? (uint64_t)max_threads
						 : SP_WG_MAX;
	lim->local = 128;
	lim->copy_local = 0;
	lim->runs_per_item = 1;
	/* Enough groups to fill every multiprocessor several times over;
	 * kernels stride over the rest. */
	lim->max_groups = (uint64_t)(sms > 0 ? sms : 1) * 32;
	/* An eighth of the device's memory for the encoders' scratch. */
	lim->scratch_budget = (uint64_t)mem_total / 8;
	lim->one_item_groups = 0;
	return SHARDPIPE_OK;
}

const struct kdev_adapter kdev_plugin_adapter = {
	.name = "cuda",
	.api = "CUDA",
	.device_env = "SHARDPIPE_CUDA_DEVICE",
	.index_parts = 1,
	.index_form = "an index from 0",
	.ops = &cu_device,
	.list = cu_list,
	.name_of = cu_name_of,
	.describe = cu_describe,
	.open = cu_open,
};
