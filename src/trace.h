/*
 * trace.h - SHARDPIPE_TRACE=FILE: what every thread of a stream and its
 * device did, batch by batch, as a Chrome / Perfetto trace
 * (doc/design.md §23).
 */
#ifndef SHARDPIPE_TRACE_H
#define SHARDPIPE_TRACE_H

#include "common.h"

/* The tracks of a stream, one per thread or device queue. */
enum trace_track {
	TRACE_CALLER,        /* the caller's thread: staging, waiting */
	TRACE_PIPELINE,      /* the pipeline thread: submit, fetch, index */
	TRACE_WRITER,        /* the writer thread: shards, zarr.json */
	TRACE_UPLOAD,        /* the device's upload queue */
	TRACE_COMPUTE,       /* the device's kernel queue */
	TRACE_DOWNLOAD,      /* the device's download queue */
	TRACE_NTRACKS
};

struct trace;

/* 1 when SHARDPIPE_TRACE names a file: the stream is traced. */
SP_INTERNAL int trace_wanted(void);

/*
 * Start tracing a stream described by `label` (its backend and store) into
 * the file SHARDPIPE_TRACE names.  The first traced stream of a process
 * creates the file, or replaces one that holds a shardpipe trace; later
 * ones add to it.  A file that exists and is not a shardpipe trace is
 * refused (SHARDPIPE_ERR_EXISTS), as is one that cannot be created
 * (SHARDPIPE_ERR_IO), naming the file.  *out is NULL when SHARDPIPE_TRACE
 * is unset or empty.
 */
SP_INTERNAL int trace_open(struct trace **out, const char *label,
			   struct sp_err *err);

/*
 * A span of work on `track` from t0 to t1 (sp_now seconds): `name` (a
 * static string) of batch or shard epoch `n` (`unit` "batch" or "shard
 * epoch").  Safe from any thread; does nothing when t is NULL.
 */
SP_INTERNAL void trace_span(struct trace *t, enum trace_track track,
			    const char *name, const char *unit, uint64_t n,
			    double t0, double t1);

/* Add the spans so far to the file once they pass 1 MiB, recording the
 * write as a span on `track`: called between batches, holding no lock of
 * the stream, so that memory stays bounded. */
SP_INTERNAL void trace_flush(struct trace *t, enum trace_track track);

/* The device queue named by a backend's span ("upload", "compute",
 * "download"). */
SP_INTERNAL enum trace_track trace_queue(const char *queue);

/*
 * Write what is left to the file and free t (NULL is fine).  Returns the
 * first failure to write the file, if any, in err.
 */
SP_INTERNAL int trace_close(struct trace *t, struct sp_err *err);

#endif
