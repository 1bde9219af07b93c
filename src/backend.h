/*
 * backend.h - the backend table (doc/design.md §4 "Backend table").
 *
 * A backend executes stages 2-5 of the pipeline on batches of plan->K
 * epochs: scatter the batch's rows into K*M chunk slots, compress each slot,
 * aggregate the compressed chunks densely in shard-major order (epoch by
 * epoch: epoch e's chunks occupy positions e*M .. e*M+M-1, ordered by
 * plan->perm), and fetch the result to host memory.  Cells of a chunk
 * past the array's edge hold the fill value (plan->fill_le) along every
 * dim: the rows past the end come so, the others a backend pads (design
 * §22.1); a plugin built before that rule pads them with zero, which
 * readers never see, and still writes a valid store.  Unless
 * plan->write_empty_chunks, a chunk whose cells inside the array all equal
 * the fill value (plan->fill_le) is given the compressed size 0, which the
 * host reads as "not stored" (doc/design.md §22.2); no codec makes a chunk
 * of zero bytes otherwise.  Backends never see files, keys or zarr.json,
 * never print and never exit.
 */
#ifndef SHARDPIPE_BACKEND_H
#define SHARDPIPE_BACKEND_H

#include "common.h"
#include "plan.h"

/* Bumped whenever struct backend_ops, struct plan or the structs below
 * change in a way a plugin built earlier would misread, or a contract
 * changes that it would not keep (doc/design.md §5.3; 7: in_stride may
 * be any permutation of the row-major strides, a storage order; 9:
 * run_batch takes `laid`, and the table chunk-laid staging). */
#define SHARDPIPE_BACKEND_ABI 9

/* One range of a fetched batch's packed chunks, and where it goes. */
struct batch_range {
	void *dst;               /* host memory of len bytes */
	uint64_t off, len;       /* in the packed chunks: offsets[j] .. */
};

/* A span of device work of the batch fetched last, for SHARDPIPE_TRACE
 * (doc/design.md §23): what ran, on which of the device's queues, and
 * when, in seconds of CLOCK_MONOTONIC. */
struct batch_span {
	const char *name;        /* static: "upload", a kernel's name, ... */
	const char *queue;       /* static: "upload", "compute", "download" */
	double start, end;
};

/* What a fused batch (backend_ops.run_batch) reports: seconds per stage
 * as the stage entries would report them on an otherwise idle machine
 * (CPU time of the threads over threads). */
struct batch_times {
	double seconds_scatter, seconds_compress;
};

/*
 * What a backend's probe fills: the layout shardpipe_backend_info had
 * before it carried struct_size (doc/design.md §5.3, §16.3), so that the
 * public struct grows without touching the plugin boundary.
 */
struct backend_probe {
	const char *name;    /* set by the host */
	int usable;
	int gpu;             /* the device is a GPU ("auto" prefers those) */
	char detail[256];    /* the device, or why it cannot run */
};

struct backend_ops {
	const char *name;
	/* Fill info->usable, info->gpu and info->detail. */
	int (*probe)(struct backend_probe *info);
	/* Allocate pools for plan; the plan outlives the context. */
	int (*open)(const struct plan *plan, void **ctx, struct sp_err *err);
	/*
	 * The stage entries (doc/design.md §4.1).  scatter reads
	 * plan->batch_bytes of row-major input (K epochs; rows past the array
	 * end are already fill) and returns once the input may be reused;
	 * compress and aggregate act on the batch scattered last, compress
	 * giving empty chunks the size 0 (see above).  A backend
	 * without run_batch holds two batches between scatter and fetch, so
	 * that the host issues batch k+1 before it fetches batch k; a third
	 * scatter before a fetch is refused.
	 */
	int (*scatter)(void *ctx, const void *batch, struct sp_err *err);
	int (*compress)(void *ctx, struct sp_err *err);
	int (*aggregate)(void *ctx, struct sp_err *err);
	/*
	 * Fetch, in two calls.  fetch_offsets waits for the oldest batch
	 * aggregated and not yet fetched and returns its K*M+1 offsets: the
	 * chunk at shard-major position j is bytes offsets[j] .. offsets[j+1]
	 * of the batch's packed chunks, offsets[0] == 0.  fetch_ranges then
	 * copies ranges of those packed chunks to host memory (it may be
	 * called several times) and returns once they are there.  Both stay
	 * usable for that batch until the next scatter.
	 */
	int (*fetch_offsets)(void *ctx, const uint64_t **offsets,
			     struct sp_err *err);
	int (*fetch_ranges)(void *ctx, const struct batch_range *r, size_t n,
			    struct sp_err *err);
	void (*close)(void *ctx);
	/*
	 * Optional (NULL: the host calls the stages one by one).  Scatter,
	 * compress and aggregate the first `epochs` epochs of a batch in
	 * one pass (doc/design.md §4.2) behind the stage entries, into the
	 * host's memory: the chunk at shard-major position j (epoch e's at
	 * e*M + j) goes to dst[j], which has room for slot_capacity bytes,
	 * and its size to sizes[j] (0 for a chunk left out); its bytes
	 * equal what the stages produce.  The batch's epochs * epoch_bytes
	 * of input are read until this returns; with `laid`, its epochs are
	 * chunk-laid staging instead (deal below), laid_bytes each.
	 */
	int (*run_batch)(void *ctx, const void *batch, uint64_t epochs,
			 int laid, uint8_t *const *dst, uint64_t *sizes,
			 struct batch_times *out, struct sp_err *err);
	/* Optional: the bytes of host memory the context's pools take at
	 * most, as the stream will use it (reported as planned pools). */
	uint64_t (*pool_bytes)(void *ctx);
	/* Optional (NULL: malloc/free): host memory for the staging
	 * buffers, which scatter then reads directly (pinned on a GPU).
	 * host_alloc returns NULL when out of memory. */
	void *(*host_alloc)(void *ctx, uint64_t bytes);
	void (*host_free)(void *ctx, void *p);
	/* Optional: with plan->trace, the device spans of the batch fetched
	 * last, valid until the next scatter (doc/design.md §23). */
	size_t (*spans)(void *ctx, const struct batch_span **out);
	/*
	 * Reduce rows into the next pyramid level's (doc/design.md §28.2),
	 * by plan->reduce_geo: carry (NULL, or one row of this level that
	 * comes first), then the first nrows rows of the batch passed to the
	 * last scatter or run_batch (batch is that pointer, still valid; a
	 * kernel backend reads its own copy), then tail (SP_RD_TAIL_*).  out
	 * receives out_rows rows of the next level (plan_reduce_rows).
	 * Required of a backend that streams pyramids; the host refuses a
	 * pyramid at open on one without it.
	 */
	int (*reduce)(void *ctx, const void *batch, uint64_t nrows,
		      const void *carry, int tail, void *out,
		      uint64_t out_rows, struct sp_err *err);
	/*
	 * Optional (NULL, or laid_bytes 0: staging holds rows): chunk-laid
	 * staging (doc/design.md §14.7).  laid_bytes gives the bytes one
	 * epoch of staging takes laid out as the backend's chunks, and in
	 * *unit the bytes of input a unit of an epoch's rows is (epoch_bytes
	 * is a whole number of units).  deal writes units u0..u1 of an epoch
	 * (rows: their row-major input, from unit u0; NULL: the fill value
	 * plan->fill_le) to their places in the laid epoch at out, padding
	 * included, so that run_batch compresses the chunks where they lie:
	 * share `part` of `parts` of them (0 of 1: all), for the host to
	 * split a deal between threads.
	 */
	uint64_t (*laid_bytes)(void *ctx, uint64_t *unit);
	void (*deal)(void *ctx, const void *rows, uint64_t u0, uint64_t u1,
		     void *out, unsigned part, unsigned parts);
};

/* What a plugin's single entry point, shardpipe_backend_plugin(), returns. */
struct backend_plugin {
	uint32_t abi;             /* SHARDPIPE_BACKEND_ABI it was built with */
	const struct backend_ops *ops;
};

#define SHARDPIPE_PLUGIN_ENTRY "shardpipe_backend_plugin"
typedef const struct backend_plugin *(*backend_plugin_fn)(void);

/*
 * Resolve a backend by name ("auto" picks cuda, then opencl on a GPU, then
 * cpu).  On failure err says which backends were tried and why each is
 * unusable.
 */
SP_INTERNAL int backend_find(const char *name, const struct backend_ops **out,
			     struct sp_err *err);

/* The backends linked into the library. */
extern SP_INTERNAL const struct backend_ops sp_backend_cpu;
extern SP_INTERNAL const struct backend_ops sp_backend_reference;

#endif
