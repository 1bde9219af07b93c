/* main.c - the shardpipe program: subcommand dispatch and help. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
	const char *name;
	int (*run)(int, char **);
	const char *summary;
} commands[] = {
	{ "write", cli_write, "stream raw array bytes into a store" },
	{ "demo", cli_demo, "write a synthetic microscopy series, then verify it" },
	{ "group", cli_group, "make a Zarr group for write --array" },
	{ "verify", cli_verify, "check a store's indexes and chunks" },
	{ "cat", cli_cat, "write a store's decoded array as raw bytes" },
	{ "backends", cli_backends, "list backends and whether each runs here" },
	{ "conform", cli_conform, "compare backends' stores for the same input" },
	{ "bench", cli_bench, "measure throughput per stage" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: shardpipe COMMAND [OPTIONS]\n\n"
		   "Stream N-dimensional arrays into sharded Zarr v3 stores.\n\n"
		   "commands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'shardpipe COMMAND --help' describes each command; "
		   "'shardpipe --version'\nprints the version.\n"
		   "Environment: SHARDPIPE_BACKEND overrides the backend; "
		   "SHARDPIPE_PLUGIN_PATH\nlists directories searched for "
		   "backend plugins; SHARDPIPE_TRACE=FILE records\nevery "
		   "stage of every batch in FILE, a Chrome/Perfetto trace.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("shardpipe %s\n", shardpipe_version());
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].run(argc - 1, argv + 1);
	cli_error("unknown command \"%s\"", argv[1]);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
