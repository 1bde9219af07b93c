/*
 * reference-kernels.h - the kernel reference executor's entry point: the
 * kernels of backends/kernels/ compiled as plain C (reference-kernels.c),
 * run one work-group at a time with one work-item each.
 */
#ifndef SHARDPIPE_REFERENCE_KERNELS_H
#define SHARDPIPE_REFERENCE_KERNELS_H

#include "driver.h"

/*
 * Run kernel `name` as `groups` work-groups of one work-item, in order.
 * Returns SHARDPIPE_OK, or SHARDPIPE_ERR_DEVICE with err naming the kernel
 * when it is unknown or its arguments do not match its signature.
 */
SP_INTERNAL int ref_kernel_run(const char *name, const struct kdev_arg *args,
			       unsigned nargs, uint64_t groups,
			       struct sp_err *err);

#endif
