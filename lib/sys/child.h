/*
 * child: the agent's one reap loop, and its own helper children (the tar
 * children of persist and hydrate) claimed from it.
 *
 * The loop reaps every child of the agent (as PID 1, every orphan of the
 * namespace) with waitpid(-1, WNOHANG) until none is left, woken by
 * SIGCHLD through a signalfd of its own.  Each status is offered first to
 * child_reaped (the helpers), then to the caller's function, which says
 * whether the pid was one it launched.  Orphans (nobody's launch) that
 * die close together are a burst: until it is over, the next pass is
 * CHILD_REAP_HOLDOFF after the last, not at the next SIGCHLD, so that a
 * burst costs one pass per hold-off instead of one per death.
 *
 * A module that forks a helper registers its pid with child_watch.  A
 * watcher that no longer wants the status (its client went away)
 * unwatches: the child is still claimed when it is reaped, silently.
 */
#ifndef TEND_CHILD_H
#define TEND_CHILD_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>

typedef void	(*child_fn)(pid_t pid, int wstatus, void *arg);
/* A reaped child nobody watched: true if it was the caller's own launch. */
typedef bool	(*child_reap_fn)(pid_t pid, int wstatus);

struct child_stats {
	uint64_t	passes;		/* waitpid loops run */
	uint64_t	reaped;		/* children reaped */
	uint64_t	holdoffs;	/* passes that deferred the next one */
};

/*
 * Block SIGCHLD and reap on loop from now on; the first pass runs on the
 * loop's first turn (children that died before).  -1 (errno).
 */
int	child_reap_start(struct ev_loop *, child_reap_fn);
/* The loop's reaping undone: watchers, signalfd, mask, counts (tests). */
void	child_reap_stop(void);
void	child_reap_stats(struct child_stats *);

/* Call fn(pid, wstatus, arg) once pid is reaped.  -1 (ENOMEM). */
int	child_watch(pid_t, child_fn, void *arg);
/* fn is not called for pid; its status is still claimed. */
void	child_unwatch(pid_t);
/* The reap loop's offer: true if pid was watched (fn called). */
bool	child_reaped(pid_t, int wstatus);

#endif
