/*
 * group.h - what the group (group.c, doc/design.md §26) needs of the
 * stream: a stream that runs on the group's lanes.
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

#endif
