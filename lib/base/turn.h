/*
 * turn.h: a share of work resumed at the next loop turn.
 *
 * An ev_check runs after every poll, whatever else is pending, so that
 * neither the resumed work nor the rest starve: each turn serves what
 * is ready, then one more share.  (An ev_idle alone would run only when
 * nothing else is pending: a process writing nonstop would stall it.  A
 * zero timer would make epoll wait its 1 ms minimum each time.)  The
 * idle watcher beside it has nothing to do: while it is active the loop
 * polls without blocking.
 */
#ifndef TEND_TURN_H
#define TEND_TURN_H

#include <ev.h>

struct turn {
	ev_check	 check;		/* the owner's callback: the share */
	ev_idle		 spin;		/* ... polled for without blocking */
};

static inline void
turn_spin(struct ev_loop *loop, ev_idle *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

static inline void
turn_init(struct turn *t, void (*cb)(struct ev_loop *, ev_check *, int))
{
	ev_check_init(&t->check, cb);
	ev_idle_init(&t->spin, turn_spin);
}

/* The share runs after the next poll (and each one after, until stopped). */
static inline void
turn_start(struct ev_loop *loop, struct turn *t)
{
	ev_check_start(loop, &t->check);
	ev_idle_start(loop, &t->spin);
}

static inline void
turn_stop(struct ev_loop *loop, struct turn *t)
{
	ev_check_stop(loop, &t->check);
	ev_idle_stop(loop, &t->spin);
}

#endif
