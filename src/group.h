/*
 * group.h - what the group (group.c, doc/design.md §26) needs of the
 * stream and of the store: a stream that runs on the group's lanes, and
 * the node type a directory's zarr.json declares.
 */
#ifndef SHARDPIPE_GROUP_H
#define SHARDPIPE_GROUP_H

#include "common.h"

struct lanes;

/* shardpipe_stream_open() on a group's shared threads (lanes may be NULL:
 * the stream's own).  Takes a reference to lanes. */
SP_INTERNAL int stream_open_lanes(shardpipe_stream **out, const char *path,
				  const shardpipe_desc *desc,
				  struct lanes *lanes);

enum zarr_node {
	ZARR_NODE_NONE = 0,     /* no zarr.json */
	ZARR_NODE_ARRAY,
	ZARR_NODE_GROUP,
	ZARR_NODE_OTHER         /* a zarr.json that is neither */
};

/* What dir/zarr.json declares: its "node_type" when it is a Zarr v3
 * document, otherwise ZARR_NODE_OTHER; ZARR_NODE_NONE when there is none.
 * Fails only on an error reading it (not a missing file). */
SP_INTERNAL int zarr_node_of(const char *dir, enum zarr_node *out,
			     struct sp_err *err);

#endif
