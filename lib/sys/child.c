/*
 * child.c: the one reap loop and the table of the agent's helper
 * children.  See child.h.
 *
 * The helpers' table is a list, not an array: at most one child per
 * client transfer, so it is short, and an entry must outlive the watcher
 * that unwatched it until the child is reaped.
 */
#include <sys/signalfd.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "child.h"
#include "base/tunables.h"

struct child {
	pid_t		 pid;
	child_fn	 fn;		/* NULL once unwatched */
	void		*arg;
	struct child	*next;
};

static struct child	*child_list;

/*
 * Not libev's ev_child: its SIGCHLD callback makes one waitpid per
 * zombie and one more loop dispatch for each, and it cannot defer the
 * next pass.  As PID 1 every waitpid(-1) that finds no zombie walks the
 * list of all our children (2,000 orphans: 2,000 entries), so the number
 * of passes, not of zombies, is what a burst costs.
 */
static struct {
	struct ev_loop		*loop;
	child_reap_fn		 fn;
	ev_io			 io;		/* the signalfd of SIGCHLD */
	ev_timer		 holdoff;	/* a burst: the next pass */
	ev_tstamp		 orphan_at;	/* the last pass that reaped one */
	struct child_stats	 st;
} reaper;

static void	child_io_cb(struct ev_loop *, ev_io *, int);
static void	child_holdoff_cb(struct ev_loop *, ev_timer *, int);
static void	child_pass(bool);
static bool	child_burst(int, bool);

int
child_reap_start(struct ev_loop *loop, child_reap_fn fn)
{
	sigset_t	set;
	int		fd;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	/* Blocked from here on; spawn gives every exec'd child an empty mask. */
	if (sigprocmask(SIG_BLOCK, &set, NULL) == -1 ||
	    (fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) == -1)
		return -1;
	reaper.loop = loop;
	reaper.fn = fn;
	ev_io_init(&reaper.io, child_io_cb, fd, EV_READ);
	ev_io_start(loop, &reaper.io);
	ev_init(&reaper.holdoff, child_holdoff_cb);
	/* A child may have died while SIGCHLD was still discarded. */
	ev_feed_event(loop, &reaper.io, EV_READ);
	return 0;
}

void
child_reap_stop(void)
{
	sigset_t	set;

	if (reaper.loop == NULL)
		return;
	ev_io_stop(reaper.loop, &reaper.io);
	ev_timer_stop(reaper.loop, &reaper.holdoff);
	(void)close(reaper.io.fd);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	(void)sigprocmask(SIG_UNBLOCK, &set, NULL);
	memset(&reaper, 0, sizeof(reaper));
}

void
child_reap_stats(struct child_stats *st)
{
	*st = reaper.st;
}

static void
child_io_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	child_pass(false);
}

static void
child_holdoff_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	child_pass(true);
}

/*
 * Take the pending SIGCHLD first: a death after the read raises it
 * again, so none is missed between the last waitpid and the next wake.
 * (At most one SIGCHLD is pending however many children died: one read.)
 * While the io watcher is stopped SIGCHLD stays pending, unread: at the
 * hold-off's end, none pending means no death since the last pass, and
 * the walk waitpid would make of all our children is skipped.
 */
static void
child_pass(bool holdoff)
{
	struct signalfd_siginfo	si;
	pid_t			pid;
	int			wstatus, orphans = 0, saved = errno;

	if (read(reaper.io.fd, &si, sizeof(si)) == -1 && holdoff) {
		errno = saved;
		ev_io_start(reaper.loop, &reaper.io);
		return;
	}
	reaper.st.passes++;
	while ((pid = waitpid(-1, &wstatus, WNOHANG)) > 0) {
		reaper.st.reaped++;
		if (!child_reaped(pid, wstatus) && !reaper.fn(pid, wstatus))
			orphans++;
	}
	errno = saved;
	if (child_burst(orphans, holdoff)) {
		reaper.st.holdoffs++;
		ev_io_stop(reaper.loop, &reaper.io);
		/* Set again: a stopped timer keeps what was left of it. */
		ev_timer_set(&reaper.holdoff, CHILD_REAP_HOLDOFF, 0.);
		ev_timer_start(reaper.loop, &reaper.holdoff);
	} else
		ev_io_start(reaper.loop, &reaper.io);
}

/*
 * Nobody waits on an orphan's status, so the rest of a burst of them can
 * wait.  A lone orphan (a daemon's double fork) is no burst: the next
 * pass stays at the next SIGCHLD, as a launched process's exit wants.
 */
static bool
child_burst(int orphans, bool holdoff)
{
	ev_tstamp	now, last = reaper.orphan_at;

	if (orphans == 0)
		return false;
	now = ev_now(reaper.loop);
	reaper.orphan_at = now;
	return holdoff || orphans > 1 || now - last < CHILD_REAP_HOLDOFF;
}

/* ------------------------------------------------------------------ */
/* Helpers */

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
