/*
 * plugin-wrong-abi.c - a backend plugin built for another backend ABI
 * (SHARDPIPE_BACKEND_ABI + 1000), for t/abi-plugin.sh.  The core must refuse
 * it, naming both versions, without calling anything in its table.
 */
#include <stdlib.h>

#include "backend.h"

static int never_probe(struct backend_probe *info)
{
	(void)info;
	abort(); /* the core must not call a plugin of another ABI */
}

static const struct backend_ops fake_ops = {
	.name = "cuda",
	.probe = never_probe,
};

static const struct backend_plugin fake_plugin = {
	.abi = SHARDPIPE_BACKEND_ABI + 1000,
	.ops = &fake_ops,
};

__attribute__((visibility("default")))
const struct backend_plugin *shardpipe_backend_plugin(void);

const struct backend_plugin *shardpipe_backend_plugin(void)
{
	return &fake_plugin;
}
