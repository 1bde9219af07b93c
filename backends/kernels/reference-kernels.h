/*
 * reference-kernels.h - the kernel reference executor's entry points: the
 * kernels of backends/kernels/ compiled as plain C (reference-kernels.c),
 * run one work-group at a time with one work-item each, and compiled once
 * more for the work profile (reference-profile.c, doc/design.md §12.1),
 * which runs each group as its local size of work-items and counts what
 * each does.
 */
#ifndef SHARDPIPE_REFERENCE_KERNELS_H
#define SHARDPIPE_REFERENCE_KERNELS_H

#include <stdio.h>

#include "driver.h"

/*
 * Run kernel `id` (enum kdev_kernel_id) as `groups` work-groups of one
 * work-item, in order, with the arguments its packer (driver.c) built.
 * Returns SHARDPIPE_OK, or SHARDPIPE_ERR_DEVICE for an unknown id.
 */
SP_INTERNAL int ref_kernel_run(unsigned id, const struct kdev_arg *args,
			       uint64_t groups, struct sp_err *err);

/* What the profile counted so far, and the work-items it runs. */
struct ref_profile;

/* A profile with nothing counted; SHARDPIPE_ERR_NOMEM when out of memory. */
SP_INTERNAL int ref_profile_open(struct ref_profile **out,
				 struct sp_err *err);
SP_INTERNAL void ref_profile_close(struct ref_profile *p);

/*
 * Run kernel `id` as `groups` work-groups of `local` work-items each
 * (1..SP_WG_MAX), in order, counting their work.  The output is the one
 * ref_kernel_run gives (doc/design.md §7.2).  Fails with
 * SHARDPIPE_ERR_DEVICE, naming the kernel and group, when a group breaks
 * a rule of the dialect that a GPU would not report: some work-items
 * return while others wait at a barrier, or the group declares more local
 * memory than SP_PROF_LOCAL_BYTES.
 */
SP_INTERNAL int ref_profile_run(struct ref_profile *p, unsigned id,
				const struct kdev_arg *args, uint64_t groups,
				uint64_t local, struct sp_err *err);

/* The most local memory one group may declare in the profile (a GPU's
 * usual 64 KiB; CUDA's static shared memory stops at 48). */
#define SP_PROF_LOCAL_BYTES (64u << 10)

/*
 * Write the table of doc/design.md §12.1 for what was counted over
 * `batches` batches at local size `local` to f.  Returns 0, or -1 when a
 * write failed (errno tells why).
 */
SP_INTERNAL int ref_profile_write(const struct ref_profile *p, FILE *f,
				  uint64_t local, uint64_t batches);

#endif
