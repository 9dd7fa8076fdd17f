/*
 * agent: the supervisor, `tend agent [options] [-- cmd args...]`.
 */
#ifndef TEND_AGENT_H
#define TEND_AGENT_H

int	agent_main(int argc, char **argv);
int	shim_main(int argc, char **argv);	/* agent/shim.c */

#endif
