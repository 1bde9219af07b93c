/*
 * plugin-under-test.h - for the stage tests built once per kernel backend
 * (kernels-stages.c, gzip-stages.c, blosc-stages.c): built with
 * SP_TEST_OPENCL or SP_TEST_CUDA, a test links that device adapter (its
 * rule in a t/ .mk fragment) and SP_TEST_PLUGIN is defined;
 * plugin_under_test() is the adapter's backend, or a skip with its probe's reason where the
 * device is missing; any other reason fails the test (test_may_skip,
 * doc/design.md §18.1).
 */
#ifndef SHARDPIPE_T_PLUGIN_UNDER_TEST_H
#define SHARDPIPE_T_PLUGIN_UNDER_TEST_H

#if defined(SP_TEST_OPENCL) || defined(SP_TEST_CUDA)
#define SP_TEST_PLUGIN 1

#include <string.h>

#include "adapter.h"
#include "tap.h"
#include "testutil.h"

static const struct backend_ops *plugin_under_test(void)
{
	const struct backend_ops *ops = shardpipe_backend_plugin()->ops;
	struct backend_probe info;

	memset(&info, 0, sizeof(info));
	ops->probe(&info);
	if (!info.usable && test_may_skip(ops->name, info.detail))
		skip_all("%s", info.detail);
	diag("device: %s", info.detail);
	return ops;
}
#endif

#endif
