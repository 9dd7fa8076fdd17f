/*
 * tend: one binary.  `tend agent` is the supervisor (also what runs when
 * tend is PID 1 with no subcommand); every other subcommand is a client of
 * the agent's socket.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "agent.h"
#include "cli/cli.h"
#include "core/handover.h"

int
main(int argc, char **argv)
{
	if (argc >= 2 && strcmp(argv[1], "agent") == 0)
		return agent_main(argc - 1, argv + 1);
	/* The live upgrade's handshake (api/api_upgrade.c asks it). */
	if (argc == 2 && strcmp(argv[1], HANDOVER_CHECK_ARG) == 0) {
		handover_check_print();
		return 0;
	}
	if (argc >= 2 && strcmp(argv[1], "shim") == 0)
		return shim_main(argc - 1, argv + 1);
	if (argc < 2 && getpid() == 1)
		return agent_main(argc, argv);
	return cli_main(argc, argv);
}
