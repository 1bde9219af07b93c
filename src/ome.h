/*
 * ome.h - the OME-NGFF 0.5 rules an image's axes follow
 * (doc/design.md §28.4): their types, order and units.
 */
#ifndef SHARDPIPE_OME_H
#define SHARDPIPE_OME_H

#include "plan.h"

/*
 * Resolve and check the axes of an OME-NGFF image described by desc, into
 * pl->axis_type and pl->unit: a type for every dim (given, or from its
 * name: t or time, c or channel, z, y, x), names present and distinct,
 * rank 2 to 5, time first, then channel, then 2 or 3 space axes, only
 * time and space dims halving, units from the spec's lists.  A refusal
 * names the dim and what is wrong with it.  Nothing to check unless
 * pl->group.
 */
SP_INTERNAL int ome_axes_init(struct plan_levels *pl, const struct plan *p0,
			      const shardpipe_desc *desc, struct sp_err *err);

/* The method's name in OME-NGFF's "type" ("mean", "min", ...). */
SP_INTERNAL const char *ome_method_name(int method);

#endif
