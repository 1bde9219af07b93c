/*
 * attrs.h - an array's user attributes (doc/design.md §15.4): checked
 * keys and JSON values, kept in the order keys were first set, ready to
 * be written into zarr.json's "attributes" object.
 */
#ifndef SHARDPIPE_ATTRS_H
#define SHARDPIPE_ATTRS_H

#include <stddef.h>

#include "common.h"

struct attr {
	char *key;          /* as a JSON string, quotes included */
	size_t key_len;
	char *value;        /* the JSON text as given, trimmed */
	size_t value_len;
};

struct attrs {
	struct attr *v;
	size_t n, cap;
	size_t bytes;       /* what they add to zarr.json, at most */
};

/* Set key to json (NULL: remove it) after the checks that
 * shardpipe_stream_set_attribute() documents, keeping the set unchanged
 * when refused; the refusal names the key. */
SP_INTERNAL int attrs_set(struct attrs *set, const char *key,
			  const char *json, struct sp_err *err);
SP_INTERNAL void attrs_free(struct attrs *set);

#endif
