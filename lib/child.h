/*
 * child: the agent's own helper children (the tar children of persist
 * and hydrate), claimed from the one reap loop.
 *
 * The agent reaps everything in one place (agent_reap_cb); a module that
 * forks a helper registers its pid here, and the reap loop offers every
 * status to child_reaped before the process table sees it.  A watcher
 * that no longer wants the status (its client went away) unwatches: the
 * child is still claimed when it is reaped, silently.
 */
#ifndef TEND_CHILD_H
#define TEND_CHILD_H

#include <sys/types.h>

#include <stdbool.h>

typedef void	(*child_fn)(pid_t pid, int wstatus, void *arg);

/* Call fn(pid, wstatus, arg) once pid is reaped.  -1 (ENOMEM). */
int	child_watch(pid_t, child_fn, void *arg);
/* fn is not called for pid; its status is still claimed. */
void	child_unwatch(pid_t);
/* The reap loop's offer: true if pid was watched (fn called). */
bool	child_reaped(pid_t, int wstatus);

#endif
