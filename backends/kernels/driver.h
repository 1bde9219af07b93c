/*
 * driver.h - the host side of the kernel pipeline, shared by every kernel
 * backend (doc/design.md §9 "The kernel driver").
 *
 * The driver owns the buffer pools, the order of launches per batch, the
 * read-back of exactly offsets[K*M] bytes and the error handling.  A
 * backend supplies only a device adapter: a struct kdev_ops over an opaque
 * device context.  Operations issued on one device context execute in the
 * order they were issued (an in-order queue or stream); upload and download
 * return an event the driver waits on before it touches the host memory
 * involved.
 *
 * A device adapter (opencl.c, cuda.c, reference.c; a HIP or Level Zero
 * one the same way) implements, in its own file, only its API's calls:
 *   - the struct kdev_ops below (alloc, free, upload, download, launch,
 *     wait, finish, close; host_alloc/host_free, profile, work_start and
 *     work_write optional);
 *   - launch: kernel l->id with l->args, each 8 bytes, a device buffer or
 *     a u64, in the order kernel-list.h declares; the adapter finds its
 *     compiled kernels by SP_KERNEL_LIST order or kdev_kernels[id].name;
 *   - at open, a struct kdev_limits for its device, then kdrv_open.
 * A plugin adapter does the last through adapter.h, which also chooses
 * its device and makes its probe, backend table and plugin entry.  The
 * kernels themselves are compiled from backends/kernels/ by the adapter's
 * compiler through its prelude (prelude-*.h).
 */
#ifndef SHARDPIPE_KERNEL_DRIVER_H
#define SHARDPIPE_KERNEL_DRIVER_H

#include <stdint.h>

#include "backend.h"
#include "common.h"
#include "kernel-list.h"
#include "plan.h"

#ifndef SP_DRIVER_API
#define SP_DRIVER_API SP_INTERNAL
#endif

typedef void *kdev_buf;   /* a device buffer */
typedef void *kdev_event; /* a completion event; NULL: already complete */

enum kdev_arg_kind { KDEV_ARG_BUF, KDEV_ARG_U64 };

struct kdev_arg {
	enum kdev_arg_kind kind;
	kdev_buf buf;
	uint64_t u64;
};

#define KDEV_MAX_ARGS 12

/* Kernel ids in the order of SP_KERNEL_LIST (kernel-list.h). */
#define KDEV_KERNEL_ID(name, args) KDEV_K_##name,
enum kdev_kernel_id { SP_KERNEL_LIST(KDEV_KERNEL_ID) KDEV_NKERNELS };
#undef KDEV_KERNEL_ID

struct kdev_kernel {
	const char *name;
};

/* SP_KERNEL_LIST as data, indexed by enum kdev_kernel_id. */
extern SP_DRIVER_API const struct kdev_kernel kdev_kernels[KDEV_NKERNELS];

/* One launch's kernel and arguments, as the driver's packer for that
 * kernel (generated from kernel-list.h) built them: their number, order
 * and kinds are the kernel's declaration, checked when the driver
 * compiles. */
struct kdev_launch {
	enum kdev_kernel_id id;
	unsigned nargs;
	struct kdev_arg args[KDEV_MAX_ARGS];
};

struct kdev_ops {
	/* Allocate bytes (> 0) of device memory; contents undefined. */
	int (*alloc)(void *dev, uint64_t bytes, kdev_buf *out,
		     struct sp_err *err);
	void (*free)(void *dev, kdev_buf buf);
	/* Optional (NULL: malloc/free): host memory that upload reads and
	 * download writes directly, e.g. pinned so that either is a DMA:
	 * the stream's staging buffers and the driver's offsets.  host_alloc
	 * returns NULL when out of memory. */
	void *(*host_alloc)(void *dev, uint64_t bytes);
	void (*host_free)(void *dev, void *p);
	/*
	 * Start copying n bytes from host src to buf + off.  src must stay
	 * untouched until *done completes.  done may be NULL when the caller
	 * waits for the queue some other way.
	 */
	int (*upload)(void *dev, kdev_buf buf, uint64_t off, const void *src,
		      uint64_t n, kdev_event *done, struct sp_err *err);
	/* Start copying n bytes from buf + off to host dst. */
	int (*download)(void *dev, void *dst, kdev_buf buf, uint64_t off,
			uint64_t n, kdev_event *done, struct sp_err *err);
	/* Enqueue kernel l->id over a 1-d range of `global` work-items in
	 * groups of `local` (global is a multiple of local).  l need not
	 * outlive the call.  done, when not NULL, gets the launch's event. */
	int (*launch)(void *dev, const struct kdev_launch *l, uint64_t global,
		      uint64_t local, kdev_event *done, struct sp_err *err);
	/* Block until ev completes, then release it.  ev may be NULL. */
	int (*wait)(void *dev, kdev_event ev, struct sp_err *err);
	/*
	 * Optional, for SHARDPIPE_TRACE (plan->trace): wait as `wait` does
	 * and report when the device ran the operation, in seconds of the
	 * host's CLOCK_MONOTONIC (sp_now).  Without it the driver takes the
	 * times of the calls themselves, which is right for an adapter that
	 * completes every operation before returning (reference.c).
	 */
	int (*profile)(void *dev, kdev_event ev, double *start, double *end,
		       struct sp_err *err);
	/* Block until everything issued so far completes. */
	int (*finish)(void *dev, struct sp_err *err);
	/* Release the device context (the driver frees its buffers first). */
	void (*close)(void *dev);
	/*
	 * Optional (NULL: the device cannot count work): from now on, count
	 * the work of every launch per work-item and phase (the profile of
	 * doc/design.md §12.1), and write what was counted over `batches`
	 * batches at local size `local` to f, returning 0 or -1 when a write
	 * failed.
	 */
	int (*work_start)(void *dev, struct sp_err *err);
	int (*work_write)(void *dev, FILE *f, uint64_t local,
			  uint64_t batches);
};

/* What an adapter tells the driver about its device at open. */
struct kdev_limits {
	uint64_t max_local;    /* largest local size the kernels may use */
	uint64_t local;        /* preferred local size */
	/* Local size of the kernels that only move bytes (codec none,
	 * gather); 0: `local`.  A CPU device streams best with one
	 * work-item per group copying contiguously, a GPU with many items
	 * on adjacent words. */
	uint64_t copy_local;
	/* Consecutive scatter runs, and outputs of the reduce kernel, per
	 * work-item (>= 1); 1 gives a GPU the most parallelism, more saves a
	 * CPU divisions. */
	uint64_t runs_per_item;
	uint64_t max_groups;   /* groups worth launching at once */
	/* Device memory the encoders' scratch may take (0: 256 MiB); with
	 * one group's scratch it bounds the groups an encoder launches. */
	uint64_t scratch_budget;
	int one_item_groups;   /* each group runs with one work-item */
};

struct kdrv;

/*
 * Take over dev (closed by kdrv_close, or here on failure) and allocate the
 * pools for plan.  SHARDPIPE_KERNEL_DEBUG (comma-separated words), when
 * set: "local=N" overrides the local size (tests run every kernel at
 * several), "sync" makes every stage complete before it returns, so that
 * per-stage timings measure the stage (bench), "profile=FILE" writes the
 * work profile to FILE after every batch (a device with work_start
 * only); an unknown word, a local size the device cannot run or a profile
 * it cannot count is refused here.  Refuses codecs that no
 * kernel implements yet, before allocating anything large.
 */
SP_DRIVER_API int kdrv_open(const struct kdev_ops *ops, void *dev,
			    const struct kdev_limits *lim,
			    const struct plan *plan, struct kdrv **out,
			    struct sp_err *err);
SP_DRIVER_API int kdrv_scatter(struct kdrv *k, const void *batch,
			       struct sp_err *err);
SP_DRIVER_API int kdrv_compress(struct kdrv *k, struct sp_err *err);
SP_DRIVER_API int kdrv_aggregate(struct kdrv *k, struct sp_err *err);
SP_DRIVER_API int kdrv_fetch_offsets(struct kdrv *k, const uint64_t **offsets,
				     struct sp_err *err);
SP_DRIVER_API int kdrv_fetch_ranges(struct kdrv *k,
				    const struct batch_range *r, size_t n,
				    struct sp_err *err);
/* Reduce rows of the batch scattered last into the next pyramid level's,
 * as backend_ops.reduce says (doc/design.md §28.2). */
SP_DRIVER_API int kdrv_reduce(struct kdrv *k, uint64_t nrows,
			      const void *carry, int tail, void *out,
			      uint64_t out_rows, struct sp_err *err);
SP_DRIVER_API void kdrv_close(struct kdrv *k);

/*
 * The same entry points with the signatures of struct backend_ops, so a
 * kernel backend's table is filled with these and its own probe/open.
 */
SP_DRIVER_API int kdrv_op_scatter(void *ctx, const void *batch,
				  struct sp_err *err);
SP_DRIVER_API int kdrv_op_compress(void *ctx, struct sp_err *err);
SP_DRIVER_API int kdrv_op_aggregate(void *ctx, struct sp_err *err);
SP_DRIVER_API int kdrv_op_fetch_offsets(void *ctx, const uint64_t **offsets,
					struct sp_err *err);
SP_DRIVER_API int kdrv_op_fetch_ranges(void *ctx, const struct batch_range *r,
				       size_t n, struct sp_err *err);
SP_DRIVER_API int kdrv_op_reduce(void *ctx, const void *batch,
				 uint64_t nrows, const void *carry, int tail,
				 void *out, uint64_t out_rows,
				 struct sp_err *err);
SP_DRIVER_API void kdrv_op_close(void *ctx);
SP_DRIVER_API void *kdrv_op_host_alloc(void *ctx, uint64_t bytes);
SP_DRIVER_API void kdrv_op_host_free(void *ctx, void *p);
SP_DRIVER_API size_t kdrv_op_spans(void *ctx, const struct batch_span **out);

/* Those entries, for a kernel backend's struct backend_ops initializer. */
#define KDRV_STAGE_ENTRIES                                                    \
	.scatter = kdrv_op_scatter, .compress = kdrv_op_compress,             \
	.aggregate = kdrv_op_aggregate,                                       \
	.fetch_offsets = kdrv_op_fetch_offsets,                               \
	.fetch_ranges = kdrv_op_fetch_ranges, .close = kdrv_op_close,         \
	.host_alloc = kdrv_op_host_alloc, .host_free = kdrv_op_host_free,     \
	.spans = kdrv_op_spans, .reduce = kdrv_op_reduce

/* Block until every stage issued so far has completed (for timing). */
SP_DRIVER_API int kdrv_finish(struct kdrv *k, struct sp_err *err);

/* The local size the driver launches with (after the override). */
SP_DRIVER_API uint64_t kdrv_local_size(const struct kdrv *k);

/*
 * For tests: read back the chunk pool of the batch scattered last (K * M * chunk_bytes
 * bytes, after scatter), and replace that batch's compressed slots
 * and sizes (K * M entries of at most slot_capacity bytes, slot j at
 * j * slot_capacity of `slots`), so that aggregate can be checked with
 * sizes no codec produces yet.
 */
SP_DRIVER_API int kdrv_debug_read_pool(struct kdrv *k, void *dst,
				       struct sp_err *err);
SP_DRIVER_API int kdrv_debug_set_slots(struct kdrv *k, const void *slots,
				       const uint64_t *sizes,
				       struct sp_err *err);

#endif
