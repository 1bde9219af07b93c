/*
 * reference-kernels.c - the kernels compiled by the C compiler
 * (doc/design.md §7, §12): this file is the only C-specific
 * part, a table from kernel names to calls that unpack the driver's
 * arguments.
 */
#include "prelude-c.h"
#include "kernels.h"

#include "reference-kernels.h"

#define B(i) ((void *)a[i].buf)
#define V(i) (a[i].u64)

static void call_sp_scatter(const struct kdev_arg *a)
{
	sp_scatter(B(0), B(1), B(2));
}

static void call_sp_codec_none(const struct kdev_arg *a)
{
	sp_codec_none(B(0), B(1), B(2), V(3), V(4), V(5));
}

static void call_sp_codec_gzip(const struct kdev_arg *a)
{
	sp_codec_gzip(B(0), B(1), B(2), B(3), V(4), V(5), V(6), V(7));
}

static void call_sp_codec_zstd(const struct kdev_arg *a)
{
	sp_codec_zstd(B(0), B(1), B(2), B(3), V(4), V(5), V(6), V(7));
}

static void call_sp_codec_blosc(const struct kdev_arg *a)
{
	sp_codec_blosc(B(0), B(1), B(2), B(3), V(4), V(5), V(6), V(7), V(8),
		       V(9), V(10));
}

static void call_sp_agg_permute(const struct kdev_arg *a)
{
	sp_agg_permute(B(0), B(1), B(2), V(3), V(4));
}

static void call_sp_agg_scan(const struct kdev_arg *a)
{
	sp_agg_scan(B(0), B(1), V(2));
}

static void call_sp_agg_gather(const struct kdev_arg *a)
{
	sp_agg_gather(B(0), B(1), B(2), B(3), B(4), V(5), V(6), V(7));
}

/* One call per kernel of kernel-list.h, in its order: a kernel added to
 * the list without a call_<name> here does not compile. */
#define REF_CALL(name, sig) call_##name,
static void (*const calls[KDEV_NKERNELS])(const struct kdev_arg *) = {
	SP_KERNEL_LIST(REF_CALL)
};

int ref_kernel_run(const char *name, const struct kdev_arg *args,
		   unsigned nargs, uint64_t groups, struct sp_err *err)
{
	unsigned id;

	SP_FORWARD(kdev_kernel_lookup("reference", name, args, nargs, &id,
				      err));
	for (uint64_t g = 0; g < groups; g++) {
		sp_ref_item.group = g;
		sp_ref_item.groups = groups;
		calls[id](args);
	}
	return SHARDPIPE_OK;
}
