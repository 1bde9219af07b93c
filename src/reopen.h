/*
 * reopen.h - what a stream continuing an array learns from its store
 * (reopen.c, doc/design.md §29): the description its zarr.json gives, the
 * rows it advertises, and a reader for the rows written before.
 */
#ifndef SHARDPIPE_REOPEN_H
#define SHARDPIPE_REOPEN_H

#include "attrs.h"
#include "common.h"
#include "store.h"

struct reopen {
	struct store *store;     /* locked; the stream takes it over */
	struct shardpipe_reader *r;
	/* The store's array fields, as shardpipe_desc_from_store() sets
	 * them; dims[d].name points into names. */
	shardpipe_desc desc;
	char names[SHARDPIPE_MAX_RANK][64];
	uint64_t rows;           /* the rows its zarr.json advertises */
};

/* Read the array at path (a directory) and refuse what shardpipe does not
 * write, naming the part at fault; with lock, take the store's lock
 * first (store_reopen, durable as the stream will write).  *ro zeroed by
 * the caller; reopen_free() releases it, whatever this returned.
 * Nothing is written. */
SP_INTERNAL int reopen_load(struct reopen *ro, const char *path, int lock,
			    int durable, struct sp_err *err);

/*
 * The description a continuing stream runs with: given's fields of this
 * run (backend, threads, ...) and the store's array fields, after
 * checking that every array field given (rank not 0) equals the store's,
 * the message naming the field and both values.  given NULL: defaults.
 * dims[0].size is the bound of the run, in the array's rows.
 */
SP_INTERNAL int reopen_merge(const struct reopen *ro, const char *path,
			     const shardpipe_desc *given, shardpipe_desc *out,
			     struct sp_err *err);

/* The store's user attributes, each value's text as its zarr.json holds
 * it, into a. */
SP_INTERNAL int reopen_attrs(const struct reopen *ro, struct attrs *a,
			     struct sp_err *err);

SP_INTERNAL void reopen_free(struct reopen *ro);

#endif
