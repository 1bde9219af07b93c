/*
 * zarr_node.h - the node type a directory's zarr.json declares
 * (zarr_node.c).
 */
#ifndef SHARDPIPE_ZARR_NODE_H
#define SHARDPIPE_ZARR_NODE_H

#include "common.h"

enum zarr_node {
	ZARR_NODE_NONE = 0,     /* no zarr.json */
	ZARR_NODE_ARRAY,
	ZARR_NODE_GROUP,
	/* A group that is an OME-NGFF image (attributes.ome.multiscales,
	 * doc/design.md §28.5): one store, replaced whole as an array is,
	 * not a group to write arrays into. */
	ZARR_NODE_IMAGE,
	ZARR_NODE_OTHER         /* a zarr.json that is neither */
};

/* What dir/zarr.json declares: its "node_type" when it is a Zarr v3
 * document, otherwise ZARR_NODE_OTHER; ZARR_NODE_NONE when there is none.
 * Fails only on an error reading it (not a missing file). */
SP_INTERNAL int zarr_node_of(const char *dir, enum zarr_node *out,
			     struct sp_err *err);

struct json_doc;

/* dir/zarr.json read (at most 1 MiB) and parsed: *text NULL when there
 * is none; *text set and *doc NULL when it is no regular file, too large
 * or no JSON.  The caller frees both (json_free, free); the values' raw
 * text points into *text.  Fails only on an error reading it. */
SP_INTERNAL int zarr_json_load(const char *dir, char **text,
			       struct json_doc **doc, struct sp_err *err);

#endif
