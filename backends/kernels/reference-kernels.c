/*
 * reference-kernels.c - the kernels compiled by the C compiler (DESIGN.md
 * "One kernel source, three compilers"): this file is the only C-specific
 * part, a table from kernel names to calls that unpack the driver's
 * arguments.
 */
#include "prelude-c.h"
#include "kernels.h"

#include "reference-kernels.h"

/* A signature lists the argument kinds: 'b' a buffer, 'u' a 64-bit value. */
struct ref_kernel {
	const char *name;
	const char *sig;
	void (*call)(const struct kdev_arg *a);
};

#define B(i) ((void *)a[i].buf)
#define V(i) (a[i].u64)

static void call_scatter(const struct kdev_arg *a)
{
	sp_scatter(B(0), B(1), B(2));
}

static void call_codec_none(const struct kdev_arg *a)
{
	sp_codec_none(B(0), B(1), B(2), V(3), V(4), V(5));
}

static void call_codec_gzip(const struct kdev_arg *a)
{
	sp_codec_gzip(B(0), B(1), B(2), B(3), V(4), V(5), V(6), V(7));
}

static void call_codec_zstd(const struct kdev_arg *a)
{
	sp_codec_zstd(B(0), B(1), B(2), B(3), V(4), V(5), V(6), V(7));
}

static void call_codec_blosc(const struct kdev_arg *a)
{
	sp_codec_blosc(B(0), B(1), B(2), B(3), V(4), V(5), V(6), V(7), V(8),
		       V(9), V(10));
}

static void call_agg_permute(const struct kdev_arg *a)
{
	sp_agg_permute(B(0), B(1), B(2), V(3), V(4));
}

static void call_agg_scan(const struct kdev_arg *a)
{
	sp_agg_scan(B(0), B(1), V(2));
}

static void call_agg_gather(const struct kdev_arg *a)
{
	sp_agg_gather(B(0), B(1), B(2), B(3), B(4), V(5), V(6), V(7));
}

static const struct ref_kernel kernels[] = {
	{ "sp_scatter", "bbb", call_scatter },
	{ "sp_codec_none", "bbbuuu", call_codec_none },
	{ "sp_codec_gzip", "bbbbuuuu", call_codec_gzip },
	{ "sp_codec_zstd", "bbbbuuuu", call_codec_zstd },
	{ "sp_codec_blosc", "bbbbuuuuuuu", call_codec_blosc },
	{ "sp_agg_permute", "bbbuu", call_agg_permute },
	{ "sp_agg_scan", "bbu", call_agg_scan },
	{ "sp_agg_gather", "bbbbbuuu", call_agg_gather },
};

int ref_kernel_run(const char *name, const struct kdev_arg *args,
		   unsigned nargs, uint64_t groups, struct sp_err *err)
{
	const struct ref_kernel *k = NULL;

	for (size_t i = 0; i < sizeof(kernels) / sizeof(kernels[0]); i++)
		if (strcmp(kernels[i].name, name) == 0)
			k = &kernels[i];
	SP_RETURN_IF(k == NULL, err, SHARDPIPE_ERR_DEVICE,
		     "reference: no kernel named %s", name);
	SP_RETURN_IF(strlen(k->sig) != nargs, err, SHARDPIPE_ERR_DEVICE,
		     "reference: %s takes %zu arguments, given %u", name,
		     strlen(k->sig), nargs);
	for (unsigned i = 0; i < nargs; i++)
		SP_RETURN_IF((k->sig[i] == 'b') != (args[i].kind == KDEV_ARG_BUF),
			     err, SHARDPIPE_ERR_DEVICE,
			     "reference: %s argument %u is not a %s", name, i,
			     k->sig[i] == 'b' ? "buffer" : "value");
	for (uint64_t g = 0; g < groups; g++) {
		sp_ref_item.group = g;
		sp_ref_item.groups = groups;
		k->call(args);
	}
	return SHARDPIPE_OK;
}
