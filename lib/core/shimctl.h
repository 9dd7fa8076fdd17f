/*
 * shimctl: the agent's supervision of `tend shim` (--shim-listen): start
 * it, restart it with backoff when it dies, stop it at shutdown, report
 * it in /v1/health.  One shim per agent.
 */
#ifndef TEND_SHIMCTL_H
#define TEND_SHIMCTL_H

#include <sys/types.h>

#include <stdbool.h>

#include <cjson/cJSON.h>
#include <ev.h>

struct shimctl_opts {
	const char	*exe;		/* this binary */
	const char	*listen;
	const char	*socket;
	const char	*token_file;
	const char	*user;
	const char	*proxy_ports;	/* NULL: the shim's default (all) */
	const char	*proxy_host_suffix;	/* NULL: none */
	gid_t		 socket_gid;	/* the group the shim keeps */
};

/* Start the shim (a failed start is retried like a death). */
void	shimctl_start(struct ev_loop *, const struct shimctl_opts *);
/* From the reap loop: true when pid was the shim's (restart scheduled). */
bool	shimctl_reaped(pid_t pid, int status);
/* Shutdown: TERM it and never restart; KILL what is left. */
void	shimctl_stop(void);
void	shimctl_kill(void);
bool	shimctl_alive(void);
/* The running shim's pid; -1: none. */
pid_t	shimctl_pid(void);
/*
 * "shim":{state, pid, restarts, listen, proxyPorts, proxyHostSuffix}
 * into a health object, if any.
 */
void	shimctl_health(cJSON *);

/*
 * The agent's handover: the shim as JSON (NULL: none configured), and
 * the shim the agent before this one ran, taken up as shimctl_start
 * would have started it.
 */
cJSON	*shimctl_handover_save(void);
void	 shimctl_adopt(struct ev_loop *, const struct shimctl_opts *,
	    const cJSON *);

#endif
