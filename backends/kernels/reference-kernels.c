/*
 * reference-kernels.c - the kernels compiled by the C compiler
 * (doc/design.md §7, §12), each group run with one work-item: this file
 * and its table of calls (reference-calls.h) are the only C-specific part.
 */
#include "prelude-c.h"
#include "kernels.h"

#include "reference-calls.h"
#include "reference-kernels.h"

int ref_kernel_run(unsigned id, const struct kdev_arg *args, uint64_t groups,
		   struct sp_err *err)
{
	SP_RETURN_IF(id >= KDEV_NKERNELS, err, SHARDPIPE_ERR_DEVICE,
		     "reference: no kernel %u", id);
	for (uint64_t g = 0; g < groups; g++) {
		sp_ref_item.group = g;
		sp_ref_item.groups = groups;
		calls[id](args);
	}
	return SHARDPIPE_OK;
}
