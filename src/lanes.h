/*
 * lanes.h - one set of worker threads that several streams share
 * (doc/design.md §26.2): a job runs on every lane, lane 0 being the
 * caller, and each lane takes the jobs of different callers in turn.
 */
#ifndef SHARDPIPE_LANES_H
#define SHARDPIPE_LANES_H

#include "common.h"

struct lanes;

/* n lanes: n - 1 threads started now, and the caller of lanes_run.  With
 * fewer threads than asked for (the system refused one), the missing
 * lanes are never run, as in the cpu backend's own crew.  One reference,
 * dropped by lanes_unref. */
SP_INTERNAL int lanes_create(struct lanes **out, int n, struct sp_err *err);
SP_INTERNAL struct lanes *lanes_ref(struct lanes *l);
/* Drop a reference; the last one stops the threads.  l may be NULL. */
SP_INTERNAL void lanes_unref(struct lanes *l);
SP_INTERNAL int lanes_count(const struct lanes *l);

/*
 * Run fn(arg, lane) on every lane, the caller's thread as lane 0, and
 * return when all are done.  Every lane takes the jobs of different
 * callers in the order they were asked for, one after the other, and goes
 * on to the next as soon as its fn returns: jobs overlap only where one's
 * last items are still running.  fn shares its work out itself (an
 * atomic counter), so a lane that never runs costs nothing but its share,
 * and it must not wait on another job.
 */
SP_INTERNAL void lanes_run(struct lanes *l, void (*fn)(void *arg, int lane),
			   void *arg);

#endif
