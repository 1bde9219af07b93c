/*
 * stream_impl.h - what the stream's three parts share: its state, the
 * jobs its threads hand each other, and the calls between them.
 *
 * stream.c is the public stream on the caller's thread (append, skip,
 * flush, close); stream_threads.c the pipeline and writer threads;
 * stream_open.c opening a stream (its plan, pools, store and threads)
 * and freeing it.
 */
#ifndef SHARDPIPE_STREAM_IMPL_H
#define SHARDPIPE_STREAM_IMPL_H

#include <pthread.h>
#include <sys/uio.h>

#include "attrs.h"
#include "backend.h"
#include "frame_meta.h"
#include "group.h"
#include "lanes.h"
#include "ome.h"
#include "plan.h"
#include "pool.h"
#include "shard_index.h"
#include "store.h"
#include "trace.h"
#include "zarr_meta.h"

/*
 * Threads (doc/design.md §17).  The caller's thread stages appended
 * bytes into one of two batch buffers and queues each full batch.  The
 * pipeline thread hands each batch to the backend and adds its epochs to
 * the shard set being filled; a finished shard epoch goes to the writer
 * thread, which serializes and stores its shards and then zarr.json.  A
 * staging buffer is free again once its batch is scattered (uploaded), a
 * shard set once written: two buffers and nsets sets bound the memory, and
 * waiting for one is the back-pressure that append feels.
 *
 * On a kernel backend the pipeline keeps two batches in the backend: it
 * issues batch k+1 (upload and kernels) before it fetches batch k, so the
 * device computes k+1 while k's chunks come back and are indexed
 * (doc/design.md §14.4).  A fused backend (run_batch) runs one batch at a
 * time, reading its buffer until the batch is compressed.
 *
 * One mutex guards the hand-over state below and the stats; one condition
 * variable is broadcast on every change (a few times per batch), and each
 * waiter rechecks its own predicate.  A failure on either thread is kept in
 * async_rc/async_err; the thread then drains its queue without working, so
 * nobody waits forever, and the caller reports it on its next call.
 */
/* Two staging buffers: the caller fills one while the backend reads the
 * other (an upload, or a fused batch until it is compressed). */
#define NSTAGE 2
#define QCAP (NSTAGE + 1)
/* Batches a backend with stage entries holds between scatter and fetch
 * (backend.h). */
#define DEPTH 2

struct batch_job {
	const uint8_t *data;     /* a staging buffer or the caller's span */
	int buf;                 /* staging index, -1 for the caller's span */
	uint64_t epochs;         /* complete epochs (the rest is fill) */
	uint64_t rows_in;        /* rows appended when it was queued */
	uint64_t seq;            /* the batch's number, from 0 */
	int last;                /* queued by close: no rows come after */
	/* Every byte staged in it was checked to be the fill value as it
	 * was copied (doc/design.md §22.2): its chunks are all left out. */
	int all_fill;
};

struct set_job {
	int set;
	uint64_t shard_epoch;
	uint64_t rows;           /* rows zarr.json may advertise after it */
};

struct shardpipe_stream {
	struct plan plan;
	const struct backend_ops *be;
	void *bctx;
	struct store *store;     /* a directory, a bucket or a sink (§15) */

	struct trace *trace;     /* SHARDPIPE_TRACE, or NULL */

	/* Caller's thread. */
	uint8_t *staging[NSTAGE]; /* plan.batch_bytes each, from the backend */
	int cur;                 /* staging buffer being filled, or -1 */
	size_t staged;           /* bytes of the current batch received */
	/* Chunk-laid staging (doc/design.md §14.7): an epoch of staging
	 * takes `laid` bytes (0: it holds rows, epoch_bytes), dealt in units
	 * of `unit` input bytes; `part` assembles a unit that spans cut. */
	uint64_t laid, unit;
	uint8_t *part;
	int sticky;              /* first failure, returned ever after */
	int direct;              /* the last span was taken straight */
	struct sp_err err;
	double waited;           /* seconds this append waited (under mu) */

	/* Pipeline thread. */
	struct batch_job flight[DEPTH]; /* in the backend, oldest first */
	unsigned nflight;
	struct batch_range *ranges; /* K * S, where fetched chunks go */
	/* A fused batch: where each chunk goes (a slot in a shard set) and
	 * its size, K * M each. */
	uint8_t **dst;
	uint64_t *sizes;
	struct shard_set *sets;  /* nsets (nsets_for) */
	int nsets;
	int fill_set;            /* set receiving epochs */
	int *ahead;              /* sets taken for the epochs after it */
	int nahead;
	uint64_t epochs_done;    /* epochs through the backend */
	uint64_t shard_epochs;   /* shard epochs handed to the writer */
	struct sp_err perr;

	/* Writer thread. */
	struct sp_err werr;
	struct iovec *parts;     /* chunks_per_shard + 1: a shard's bytes */

	/* Shared, under mu. */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t pipe_thread, writer_thread;
	int threads_started;
	int stage_free[NSTAGE];
	struct batch_job q[QCAP];
	unsigned q_head, q_len;
	uint64_t queued, scattered, processed; /* batch counters */
	int *set_free;           /* nsets */
	struct set_job *wq;      /* nsets */
	unsigned wq_head, wq_len;
	uint64_t sets_queued, sets_written;
	int stop;                /* no more batches will come */
	int in_append;           /* the caller is inside append or skip */
	/* Half of the caller's staging copy, handed to the pipeline thread
	 * while it has no batch: 1 posted, 2 done, 0 none. */
	const uint8_t *cp_src;
	uint8_t *cp_dst;
	size_t cp_n;
	int cp_state;
	/* Laid staging: the half is the second of two parts of the deal of
	 * cp_n units from unit cp_u of the batch at cp_dst. */
	int cp_laid;
	uint64_t cp_u;
	int past_cache;          /* copy_past_cache(plan.batch_bytes) */
	/* Staging copies check for the fill value (a fused backend, empty
	 * chunks left out); cur_fill: every byte staged in the current
	 * buffer so far was fill, as the copies found (laid staging: not
	 * dealt, §14.7); cp_fill: check the
	 * pipeline thread's half, then whether it was fill. */
	int check_fill, cur_fill, cp_fill;
	const uint8_t *cp_elem;  /* the fill element the half is checked for */
	unsigned cp_phase;       /* the half's first byte in its element */
	int pipe_done;           /* the pipeline has handed over its last set */
	int async_rc;
	struct sp_err async_err;
	shardpipe_stats stats;
	/* Set by the caller's thread, rendered by whichever thread writes
	 * zarr.json. */
	struct attrs attrs;
	uint8_t *fill_block;     /* FILL_BLOCK bytes of fill, for skip */

	/*
	 * Pyramids (doc/design.md §28.3).  Each level is a stream of its
	 * own, fed by the pipeline thread of the level below with the rows
	 * its backend reduces from each batch; the top stream (level 0)
	 * also owns the levels' plans and the OME-NGFF group.
	 */
	struct plan_levels *levels; /* top stream only, else NULL */
	struct store *group;     /* the group's store (top stream only) */
	struct shardpipe_stream *next; /* the next level, or NULL */
	uint8_t *red;            /* the next level's rows from one batch */
	uint8_t *carry;          /* this level's row waiting for its pair */
	int carried;
	uint64_t rows_reduced;   /* rows of this level through the reduction */
	int attrs_changed;       /* since the group's zarr.json (under mu) */

	/*
	 * A continued array (doc/design.md §29): the stream's rows and
	 * shard epochs count from base_rows, the first row of the store's
	 * last partial shard row (shard_offset[0] of them before it); zarr.json
	 * never advertises fewer than the adv_rows it did; refed, staged
	 * of it: the bytes read back and appended at open, which the stats
	 * leave out; resume_row: shard epoch 0 rewrites a row whose old
	 * shards are there, so one left empty now is removed.
	 */
	uint64_t base_rows, adv_rows;
	uint64_t refed, refed_staged;
	int resume_row;

	/* Per-frame metadata (doc/design.md §28.9), level 0 only: NULL
	 * when the stream has no frame fields. */
	struct frame_meta *fm;
	/* Added to every shard's coordinates: a continued array's shard
	 * rows before base_rows (dim 0, §29), a region writer's box's first
	 * shard along each dim (§30, whose plan is the box's). */
	uint64_t shard_offset[SHARDPIPE_MAX_RANK];
	/* A region writer: zarr.json is never written. */
	int region;
	/* What the backend was opened with and reads for its life
	 * (plan_backend_view, design §3.3). */
	struct plan bplan;
};

/* A region writer's box in the array (§30): its first shard along each
 * dim, and lo..hi in elements (hi[0] 0: to the end). */
struct region_box {
	uint64_t shards[SHARDPIPE_MAX_RANK];
	uint64_t lo[SHARDPIPE_MAX_RANK], hi[SHARDPIPE_MAX_RANK];
	/* An image (§30.5): the whole array's levels over its level 0, which
	 * the box's are cut from (plan_levels_box); NULL for one array. */
	const struct plan_levels *whole;
	const struct plan *whole0;
};

/* stream_open.c: a region writer over the box *box describes (its plan,
 * dims sizes the box's) at *where in the array (§30). */
SP_INTERNAL int stream_open_box(shardpipe_stream **out, const char *path,
				const shardpipe_desc *box,
				const struct region_box *where);

/* Bytes of fill value that skip appends at a time: a multiple of every
 * element size. */
#define FILL_BLOCK (64u << 10)

/* Host byte order, for the caller's swap and direct spans (§20). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define HOST_BIG_ENDIAN 1
#else
#define HOST_BIG_ENDIAN 0
#endif

/* stream.c: the caller's side, which a level's stream also runs on the
 * pipeline thread of the level below (doc/design.md §28.3). */
SP_INTERNAL int stream_append_span(shardpipe_stream *s, const void *data,
				   size_t nbytes);
SP_INTERNAL void stream_begin_append(struct shardpipe_stream *s);
SP_INTERNAL void stream_deal(struct shardpipe_stream *s, uint8_t *batch,
			     uint64_t u, const uint8_t *src, uint64_t n,
			     unsigned part, unsigned parts);
SP_INTERNAL void stream_count_wait(struct shardpipe_stream *s);

/* stream_threads.c */
SP_INTERNAL void *stream_pipeline_main(void *arg);
SP_INTERNAL void *stream_writer_main(void *arg);
SP_INTERNAL uint64_t stream_rows_appended(const struct shardpipe_stream *s);
SP_INTERNAL int stream_publish_meta(struct shardpipe_stream *s, uint64_t rows,
				    struct sp_err *err);
SP_INTERNAL int stream_tail_after(const struct plan *p, uint64_t next_row);
SP_INTERNAL int stream_feed_next(struct shardpipe_stream *s, uint64_t rows,
				 struct sp_err *err);
SP_INTERNAL int stream_emit_shards(struct shardpipe_stream *s,
				   struct shard_set *set, uint64_t se,
				   uint64_t rows, struct sp_err *err);

/* stream_open.c */
SP_INTERNAL int stream_publish_group(struct shardpipe_stream *s,
				     struct sp_err *err);
SP_INTERNAL void stream_stop_threads(struct shardpipe_stream *s);
SP_INTERNAL void stream_free(struct shardpipe_stream *s);

#endif
