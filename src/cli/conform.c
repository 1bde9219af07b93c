/* shardpipe conform: placeholder until the kernel backends land. */
#include "cli.h"

int cli_conform(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cli_error("conform: not built yet");
	return CLI_EXIT_FAIL;
}
