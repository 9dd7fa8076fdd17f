/*
 * api_ports.c: the listening ports, and waiting for a process to be
 * ready.  Both replies are deferred: a listing waits for a refresh of
 * the set that starts after the request (its /proc walk spread over loop
 * turns), a wait for its readiness to settle.
 */
#include <stdlib.h>
#include <string.h>

#include "api_ports.h"
#include "base/util.h"
#include "core/portwatch.h"
#include "core/proctab.h"

static void	api_ports_list(struct http_conn *, struct http_req *);

const struct http_route api_ports_routes[] = {
	{ "GET",	"/v1/ports",	api_ports_list, NULL },
	{ NULL, NULL, NULL, NULL }
};

/* ------------------------------------------------------------------ */
/* The listing */

struct api_lister {
	struct portwatch_wait	 w;
	struct http_conn	*c;
};

static void
api_lister_done(struct portwatch_wait *w)
{
	struct api_lister	*l = container_of(w, struct api_lister, w);
	struct http_conn	*c = l->c;
	cJSON			*a;

	http_conn_own(c, NULL, NULL, NULL);
	free(l);
	if ((a = portwatch_json()) == NULL)
		http_reply_error(c, 503, "busy", "out of memory");
	else
		http_reply_json(c, 200, a);
}

static void
api_lister_closed(struct http_conn *c, void *owner)
{
	struct api_lister	*l = owner;

	(void)c;
	portwatch_unwant(&l->w);
	free(l);
}

static void
api_ports_list(struct http_conn *c, struct http_req *r)
{
	struct api_lister	*l;

	(void)r;
	if ((l = calloc(1, sizeof(*l))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	l->c = c;
	http_conn_own(c, l, NULL, api_lister_closed);
	portwatch_want(&l->w, api_lister_done);
}

/* ------------------------------------------------------------------ */
/* wait?for=ready */

struct api_readier {
	struct ready_wait	 rw;
	struct job_watch	 w;	/* GONE: the ready goes with it */
	ev_timer		 timer;
	struct http_conn	*c;
	struct proc		*p;
	struct ev_loop		*loop;
};

static void
api_readier_free(struct api_readier *rd)
{
	if (rd->p != NULL)
		ready_wait_del(rd->p->ready, &rd->rw);
	job_watch_del(&rd->w);
	ev_timer_stop(rd->loop, &rd->timer);
	free(rd);
}

/* The reply for p's readiness as it is now. */
static void
api_ready_reply(struct http_conn *c, struct proc *p)
{
	switch (ready_state(p->ready)) {
	case READY_EXITED:
		http_reply_error(c, 409, "ended", "process '%s' ended before "
		    "it was ready", proc_id(p));
		return;
	case READY_TIMEOUT:
		http_reply_error(c, 409, "ready_timeout", "process '%s' is not "
		    "ready after its ready.timeoutMs (it keeps running)",
		    proc_id(p));
		return;
	case READY_READY:
	case READY_WAITING:
		break;
	}
	http_reply_json(c, 200, proc_status_json(p));
}

static void
api_readier_done(struct api_readier *rd, bool gone)
{
	struct http_conn	*c = rd->c;
	struct proc		*p = rd->p;

	http_conn_own(c, NULL, NULL, NULL);
	api_readier_free(rd);
	if (gone)
		http_reply_error(c, 404, "not_found", "the process was removed");
	else
		api_ready_reply(c, p);
}

static void
api_readier_settled(struct ready_wait *w)
{
	struct api_readier	*rd = container_of(w, struct api_readier, rw);

	rd->rw.next = NULL;
	api_readier_done(rd, false);
}

static void
api_readier_event(struct job_watch *w, enum job_event ev)
{
	struct api_readier	*rd = container_of(w, struct api_readier, w);

	if (ev == JOB_EV_GONE) {
		ready_wait_del(rd->p->ready, &rd->rw);
		rd->p = NULL;
		api_readier_done(rd, true);
	}
}

static void
api_readier_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct api_readier	*rd = container_of(t, struct api_readier,
				    timer);

	(void)loop;
	(void)revents;
	api_readier_done(rd, false);
}

static void
api_readier_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_readier_free(owner);
}

void
api_ports_wait_ready(struct http_conn *c, struct proc *p, uint64_t ms)
{
	struct api_readier	*rd;

	if (p->ready == NULL) {
		http_reply_error(c, 400, "invalid_request", "for: process "
		    "'%s' was launched without \"ready\"", proc_id(p));
		return;
	}
	if (ready_state(p->ready) != READY_WAITING) {
		api_ready_reply(c, p);
		return;
	}
	if ((rd = calloc(1, sizeof(*rd))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	rd->c = c;
	rd->p = p;
	rd->loop = proctab_loop(api_of(c)->tab);
	ready_wait_add(p->ready, &rd->rw, api_readier_settled);
	job_watch_add(proc_job(p), &rd->w, api_readier_event);
	ev_timer_init(&rd->timer, api_readier_timer, ms / 1000.0, 0.);
	if (ms > 0)
		ev_timer_start(rd->loop, &rd->timer);
	http_conn_own(c, rd, NULL, api_readier_closed);
}
