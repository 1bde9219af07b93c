/* group.c - shardpipe group: make a Zarr group for write --array. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void group_usage(FILE *f)
{
	fprintf(f, "usage: shardpipe group create STORE\n\n"
		   "Makes STORE an empty Zarr v3 group (a directory whose "
		   "zarr.json says\n\"node_type\": \"group\"), durably, for "
		   "'shardpipe write --array NAME STORE' to\nwrite arrays "
		   "into.  STORE must not exist or be an empty directory; "
		   "its parent\nmust exist.  'shardpipe verify STORE' lists "
		   "a group's arrays and checks each.\n");
}

int cli_group(int argc, char **argv)
{
	const char *store = NULL;
	shardpipe_group *g;
	int rc;

	if (argc >= 2 && (strcmp(argv[1], "--help") == 0 ||
			  strcmp(argv[1], "-h") == 0)) {
		group_usage(stdout);
		return CLI_EXIT_OK;
	}
	if (argc < 2 || strcmp(argv[1], "create") != 0) {
		if (argc < 2)
			cli_error("group: no subcommand given");
		else
			cli_error("group: unknown subcommand \"%s\"", argv[1]);
		group_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			group_usage(stdout);
			return CLI_EXIT_OK;
		} else if (argv[i][0] == '-' && argv[i][1] != '\0') {
			cli_error("group create: unknown option %s", argv[i]);
			return CLI_EXIT_USAGE;
		} else if (store != NULL) {
			cli_error("group create: one store only: %s and %s",
				  store, argv[i]);
			return CLI_EXIT_USAGE;
		}
		store = argv[i];
	}
	if (store == NULL) {
		cli_error("group create: no store given");
		group_usage(stderr);
		return CLI_EXIT_USAGE;
	}
	rc = shardpipe_group_create(&g, store, 1);
	if (rc != SHARDPIPE_OK) {
		cli_error("group create: %s: %s", shardpipe_strerror(rc),
			  shardpipe_last_error_message());
		return cli_exit_status(rc);
	}
	shardpipe_group_close(g);
	return CLI_EXIT_OK;
}
