/*
 * cli: the operator's command line (tend ps, run, logs, ...), a client of
 * the agent's unix socket.  agent/main.c hands it every subcommand other
 * than "agent".
 */
#ifndef TEND_CLI_H
#define TEND_CLI_H

/*
 * argv[0] is the program name, argv[1] global options or the subcommand.
 * Returns the exit code: 0 ok, 1 refused by the agent, 2 usage, 3 agent
 * unreachable; run and wait return the process's exit code.
 */
int	cli_main(int argc, char **argv);

#endif
