/*
 * zarr_meta.h - zarr.json for the arrays shardpipe writes (Zarr v3 core
 * spec, sharding_indexed codec v1.0).
 */
#ifndef SHARDPIPE_ZARR_META_H
#define SHARDPIPE_ZARR_META_H

#include "attrs.h"
#include "plan.h"

/*
 * Render the array metadata with shape[0] = rows (the other dims come from
 * the plan) and the user attributes (NULL: none).  *out is malloc'd and
 * NUL-terminated; *len excludes the NUL.
 */
SP_INTERNAL int zarr_meta_render(const struct plan *p, uint64_t rows,
				 const struct attrs *attrs, char **out,
				 size_t *len, struct sp_err *err);

/*
 * Render the metadata of a plain group (Zarr v3 core spec, "node_type":
 * "group") with the user attributes (NULL: none).  *out is malloc'd and
 * NUL-terminated; *len excludes the NUL.
 */
SP_INTERNAL int zarr_meta_group(const struct attrs *attrs, char **out,
				size_t *len, struct sp_err *err);

/* The Zarr v3 data_type name of t ("uint16", "float32", ...). */
SP_INTERNAL const char *zarr_dtype_name(shardpipe_dtype t);

#endif
