/*
 * portwatch: the listening TCP ports of the agent's network namespace
 * with their owners — the process or terminal record whose root holds
 * the socket, or one of its descendants — kept up to date while jobs
 * run, and told as events (port.listening, port.closed).
 *
 * A refresh lists the sockets (sys/ports: one netlink dump a family,
 * cheap) and carries over what the last one knew of each inode; only
 * sockets not seen before need their holder, found by a walk of the fd
 * tables of /proc in slices of PORTS_SCAN_BUDGET entries a loop turn
 * (a zero timer carries it on).  Each new holder's owner is its record
 * when it is a record's root, else the record whose cgroup it is in,
 * else the first record root among its ancestors (the ppid chain,
 * PORTS_PPID_DEPTH at most).  Then the sets are compared and the
 * changes emitted.
 *
 * Refreshes run every PORTS_POLL_MS while a process or terminal runs
 * (and once more after the last one ended), every PORTS_READY_POLL_MS
 * while a readiness wait needs a port (portwatch_fast), and on demand
 * (portwatch_want: GET /v1/ports).  With no job running nothing polls.
 */
#ifndef TEND_PORTWATCH_H
#define TEND_PORTWATCH_H

#include <stdbool.h>
#include <ev.h>
#include <cjson/cJSON.h>

#include "job.h"

/* A party waiting for the next complete refresh, embedded in its owner. */
struct portwatch_wait {
	struct portwatch_wait	*next;
	void			(*fn)(struct portwatch_wait *);
	bool			 queued;
};

/* Watch the sockets of jobs of these tables (a baseline taken now). */
void	portwatch_init(struct ev_loop *, struct jobtab *procs,
	    struct jobtab *terms);
void	portwatch_stop(void);
/*
 * fn at the end of a refresh that starts after this call (one is
 * started if none is waiting); once.
 */
void	portwatch_want(struct portwatch_wait *,
	    void (*fn)(struct portwatch_wait *));
void	portwatch_unwant(struct portwatch_wait *);
/* The sockets of the last complete refresh, by port: a JSON array. */
cJSON	*portwatch_json(void);
/* Was the last listing cut at PORTS_MAX? */
bool	portwatch_truncated(void);
/*
 * Parties that need quick refreshes (readiness waits): +1 or -1.  Each
 * refresh then ends with hook (one, the readiness module's).
 */
void	portwatch_fast(int delta);
void	portwatch_hook(void (*hook)(void));
/* Does a socket on port belong to job j (as of the last refresh)? */
bool	portwatch_owns(int port, const struct job *j);

#endif
