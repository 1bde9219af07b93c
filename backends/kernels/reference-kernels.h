/*
 * reference-kernels.h - the kernel reference executor's entry point: the
 * kernels of backends/kernels/ compiled as plain C (reference-kernels.c),
 * run one work-group at a time with one work-item each.
 */
#ifndef SHARDPIPE_REFERENCE_KERNELS_H
#define SHARDPIPE_REFERENCE_KERNELS_H

#include "driver.h"

/*
 * Run kernel `id` (enum kdev_kernel_id) as `groups` work-groups of one
 * work-item, in order, with the arguments its packer (driver.c) built.
 * Returns SHARDPIPE_OK, or SHARDPIPE_ERR_DEVICE for an unknown id.
 */
SP_INTERNAL int ref_kernel_run(unsigned id, const struct kdev_arg *args,
			       uint64_t groups, struct sp_err *err);

#endif
