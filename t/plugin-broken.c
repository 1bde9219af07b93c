/*
 * plugin-broken.c - a backend plugin that needs a shared library which is
 * not there at run time (t/plugin-dep-stub.so, whose soname names a library
 * that does not exist), as a plugin does on a machine without
 * libOpenCL.so.1.  The core must report the loader's message and carry on.
 */
#include "backend.h"

int sp_test_plugin_dep(void);

static int broken_probe(struct backend_probe *info)
{
	info->usable = sp_test_plugin_dep();
	return SHARDPIPE_OK;
}

static const struct backend_ops broken_ops = {
	.name = "cuda",
	.probe = broken_probe,
};

static const struct backend_plugin broken_plugin = {
	.abi = SHARDPIPE_BACKEND_ABI,
	.ops = &broken_ops,
};

__attribute__((visibility("default")))
const struct backend_plugin *shardpipe_backend_plugin(void);

const struct backend_plugin *shardpipe_backend_plugin(void)
{
	return &broken_plugin;
}
