/* shardpipe bench: placeholder until the benchmark lands. */
#include "cli.h"

int cli_bench(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	cli_error("bench: not built yet");
	return CLI_EXIT_FAIL;
}
