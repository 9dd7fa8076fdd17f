/*
 * child.c: the table of the agent's helper children.  See child.h.
 *
 * A list, not an array: at most one child per client transfer, so it is
 * short, and an entry must outlive the watcher that unwatched it until
 * the child is reaped.
 */
#include <stdlib.h>

#include "child.h"

struct child {
	pid_t		 pid;
	child_fn	 fn;		/* NULL once unwatched */
	void		*arg;
	struct child	*next;
};

static struct child	*child_list;

int
child_watch(pid_t pid, child_fn fn, void *arg)
{
	struct child	*ch;

	if ((ch = calloc(1, sizeof(*ch))) == NULL)
		return -1;
	ch->pid = pid;
	ch->fn = fn;
	ch->arg = arg;
	ch->next = child_list;
	child_list = ch;
	return 0;
}

void
child_unwatch(pid_t pid)
{
	struct child	*ch;

	for (ch = child_list; ch != NULL; ch = ch->next)
		if (ch->pid == pid) {
			ch->fn = NULL;
			ch->arg = NULL;
		}
}

/* The entry leaves the list before fn runs: fn may watch another pid. */
bool
child_reaped(pid_t pid, int wstatus)
{
	struct child	**pp, *ch;
	child_fn	  fn;
	void		 *arg;

	for (pp = &child_list; (ch = *pp) != NULL; pp = &ch->next)
		if (ch->pid == pid)
			break;
	if (ch == NULL)
		return false;
	*pp = ch->next;
	fn = ch->fn;
	arg = ch->arg;
	free(ch);
	if (fn != NULL)
		fn(pid, wstatus, arg);
	return true;
}
