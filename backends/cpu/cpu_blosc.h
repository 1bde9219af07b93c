/*
 * cpu_blosc.h - the cpu backend's blosc encoder (c-blosc 1.x), kept apart from
 * cpu.c so that the rest of the backend builds the same with or without
 * c-blosc.
 */
#ifndef SHARDPIPE_CPU_BLOSC_H
#define SHARDPIPE_CPU_BLOSC_H

#include "backend.h"

/*
 * Check at open that this build can encode the plan's blosc settings into
 * slots of plan->slot_capacity bytes.  SHARDPIPE_ERR_CODEC, with a message,
 * when shardpipe was built without c-blosc or its c-blosc lacks the
 * compressor.
 */
SP_INTERNAL int cpu_blosc_open(const struct plan *p, struct sp_err *err);

/*
 * Encode one chunk of plan->chunk_bytes from src into dst (slot_capacity
 * bytes) as one blosc1 container.  Returns its size, or 0 when c-blosc
 * fails.  Safe to call from any number of threads at once.
 */
SP_INTERNAL size_t cpu_blosc_compress(const struct plan *p, const void *src,
				      void *dst);

#endif
