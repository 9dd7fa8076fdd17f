/*
 * agent_int: what agent.c and agent_opts.c share — the agent's options
 * as parsed (agent_opts.c), and the route listing the options can ask
 * for (agent.c).
 */
#ifndef TEND_AGENT_INT_H
#define TEND_AGENT_INT_H

#include <stdint.h>

#include "sys/cgroup.h"

/* The options, agent_opts.c's rows into it. */
struct agent_opts {
	const char	*socket;
	const char	*statedir;
	const char	*files_root;
	const char	*workspace;
	const char	*default_user;	/* NULL: root, unless a request says */
	double		 grace;
	int		 keep_boots;
	int		 keep_exited;
	int		 max_procs;
	int		 max_conns;
	double		 stuck;
	double		 head;
	int64_t		 max_log;
	int64_t		 max_events;
	char		**wrapped;
	int		 verbose;
	const char	*socket_group;
	const char	*shim_listen;
	const char	*shim_token_file;
	const char	*shim_user;
	const char	*proxy_ports;
	const char	*proxy_host_suffix;
	const char	*envd_user;	/* NULL: root */
	const char	*cgroup_root;	/* NULL: the agent's own cgroup */
	int		 no_cgroups;
	struct cgroup_limits default_limits;
};

extern struct agent_opts opt;

/* Parse argv into opt; --help and a usage error exit (0, 2). */
void	agent_options(int argc, char **argv);
/* Hidden (--list-routes): every route, "METHOD PATTERN" a line. */
void	agent_list_routes(void);

#endif
