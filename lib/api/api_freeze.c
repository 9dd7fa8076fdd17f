/*
 * api_freeze.c: freeze and thaw through the records' cgroups — one
 * process, or every process and terminal at once (what a platform asks
 * before a snapshot of the sandbox's disk or memory).
 *
 * cgroup.freeze is asked at once; the reply waits until cgroup.events
 * says frozen (or thawed) for every cgroup asked, looked at every
 * API_FREEZE_POLL and at most CGROUP_FREEZE_WAIT (then 504, the freeze
 * still asked).  /v1/freeze also waits for the state dir's syncfs, run
 * by a helper child: the loop never waits for a disk.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_freeze.h"
#include "base/log.h"
#include "base/tunables.h"
#include "base/util.h"
#include "core/proctab.h"
#include "store/record.h"
#include "sys/child.h"

static void	api_freeze_one(struct http_conn *, struct http_req *);
static void	api_thaw_one(struct http_conn *, struct http_req *);
static void	api_freeze_all(struct http_conn *, struct http_req *);
static void	api_thaw_all(struct http_conn *, struct http_req *);

const struct http_route api_freeze_routes[] = {
	{ "POST",	"/v1/processes/{}/freeze",	api_freeze_one, NULL },
	{ "POST",	"/v1/processes/{}/thaw",	api_thaw_one, NULL },
	{ "POST",	"/v1/freeze",			api_freeze_all, NULL },
	{ "POST",	"/v1/thaw",			api_thaw_all, NULL },
	{ NULL, NULL, NULL, NULL }
};

/* A reply waiting for the cgroups (and the sync) to be where asked. */
struct api_freezer {
	struct http_conn	*c;
	struct api		*a;
	struct ev_loop		*loop;
	ev_timer		 poll;
	double			 waited;	/* s */
	bool			 on;
	bool			 all;
	pid_t			 sync;		/* the syncfs child, or 0 */
	int			 sync_err;
	char			 id[PROC_ID_MAX + 1];	/* one: its ID */
};

static void	api_freezer_check(struct api_freezer *);

/* Every running job of both tables that has a cgroup, in order. */
static struct job *
api_freeze_next(struct api *a, struct job *j)
{
	struct jobtab	*procs = &a->tab->jobs, *terms = &a->terms->jobs;

	do {
		if (j == NULL)
			j = procs->head != NULL ? procs->head : terms->head;
		else if (j->next != NULL)
			j = j->next;
		else
			j = j->tab == procs ? terms->head : NULL;
	} while (j != NULL && (j->state != JOB_RUNNING || j->cg.fd == -1));
	return j;
}

/* The cgroups are where asked (each read again now). */
static bool
api_freezer_settled(struct api_freezer *f, struct proc **one)
{
	struct job	*j;

	*one = NULL;
	if (!f->all) {
		if ((*one = proc_find(f->a->tab, f->id)) == NULL)
			return true;	/* removed: said so */
		j = proc_job(*one);
		return j->state != JOB_RUNNING || (cgroup_events(&j->cg) ==
		    0 && j->cg.frozen == f->on);
	}
	for (j = api_freeze_next(f->a, NULL); j != NULL;
	    j = api_freeze_next(f->a, j))
		if (cgroup_events(&j->cg) == -1 || j->cg.frozen != f->on)
			return false;
	return true;
}

static void
api_freezer_free(struct api_freezer *f)
{
	ev_timer_stop(f->loop, &f->poll);
	if (f->sync > 0)
		child_unwatch(f->sync);
	free(f);
}

static void
api_freezer_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_freezer_free(owner);
}

/* {"frozen","processes":[ids],"terminals":[ids]} of the jobs now. */
static cJSON *
api_freeze_summary(struct api *a, bool on)
{
	struct job	*j;
	cJSON		*o, *p, *t;

	o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "frozen", on);
	p = cJSON_AddArrayToObject(o, "processes");
	t = cJSON_AddArrayToObject(o, "terminals");
	for (j = api_freeze_next(a, NULL); j != NULL; j = api_freeze_next(a, j))
		cJSON_AddItemToArray(j->tab == &a->tab->jobs ? p : t,
		    cJSON_CreateString(j->id));
	return o;
}

static void
api_freezer_reply(struct api_freezer *f, bool timedout)
{
	struct http_conn	*c = f->c;
	struct proc		*p;
	bool			 settled;

	settled = api_freezer_settled(f, &p);
	http_conn_own(c, NULL, NULL, NULL);
	if (!f->all && p == NULL)
		http_reply_error(c, 404, "not_found", "process '%s' was removed",
		    f->id);
	else if (timedout && !settled)
		http_reply_error(c, 504, "freeze_timeout", "%s asked, but not "
		    "every cgroup says so after %.0f s (it stays asked)",
		    f->on ? "freeze" : "thaw", CGROUP_FREEZE_WAIT);
	else if (f->sync_err != 0)
		http_reply_error(c, 500, "sync_failed", "frozen, but the state "
		    "dir could not be synced: %s", strerror(f->sync_err));
	else if (f->all)
		http_reply_json(c, 200, api_freeze_summary(f->a, f->on));
	else
		http_reply_json(c, 200, proc_status_json(p));
	api_freezer_free(f);
}

static void
api_freezer_check(struct api_freezer *f)
{
	struct proc	*p;

	if (f->sync > 0)
		return;		/* the sync's end looks again */
	if (api_freezer_settled(f, &p))
		api_freezer_reply(f, false);
	else if (f->waited >= CGROUP_FREEZE_WAIT)
		api_freezer_reply(f, true);
	else if (!ev_is_active(&f->poll))
		ev_timer_start(f->loop, &f->poll);
}

static void
api_freezer_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct api_freezer	*f = container_of(w, struct api_freezer, poll);

	(void)loop;
	(void)revents;
	f->waited += API_FREEZE_POLL;
	ev_timer_stop(loop, w);
	api_freezer_check(f);
}

static void
api_freezer_synced(pid_t pid, int wstatus, void *arg)
{
	struct api_freezer	*f = arg;

	(void)pid;
	f->sync = 0;
	if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
		f->sync_err = EIO;
	api_freezer_check(f);
}

/* The reply deferred to f; f freed on any path. */
static void
api_freezer_start(struct http_conn *c, struct api_freezer *f)
{
	f->c = c;
	f->loop = proctab_loop(f->a->tab);
	ev_timer_init(&f->poll, api_freezer_poll, API_FREEZE_POLL,
	    API_FREEZE_POLL);
	http_conn_own(c, f, NULL, api_freezer_closed);
	api_freezer_check(f);
}

static struct api_freezer *
api_freezer_new(struct http_conn *c, struct api *a, bool on, bool all)
{
	struct api_freezer	*f;

	if ((f = calloc(1, sizeof(*f))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return NULL;
	}
	f->a = a;
	f->on = on;
	f->all = all;
	return f;
}

static bool
api_freeze_available(struct http_conn *c)
{
	if (cgroups_on())
		return true;
	http_reply_error(c, 422, "cgroups_unavailable", "freezing needs a "
	    "cgroup per process: %s", cgroups_reason());
	return false;
}

static void
api_freeze_proc(struct http_conn *c, struct http_req *r, bool on)
{
	struct api		*a = api_of(c);
	struct api_freezer	*f;
	struct api_err		 e;
	struct proc		*p;
	int			 fd;

	if (api_pin(a, r, false, &fd, &e) != 0 ||
	    (p = api_proc(a, r, &e)) == NULL) {
		api_reply_err(c, &e);
		return;
	}
	if (!api_freeze_available(c))
		return;
	if (job_freeze(proc_job(p), on) == -1) {
		if (errno == ESRCH)
			http_reply_error(c, 409, "not_running",
			    "process '%s' is not running", proc_id(p));
		else if (errno == EOPNOTSUPP)
			http_reply_error(c, 422, "cgroups_unavailable",
			    "process '%s' has no cgroup", proc_id(p));
		else
			http_reply_error(c, 500, "internal", "%s: %s",
			    on ? "freeze" : "thaw", strerror(errno));
		return;
	}
	log_info("event=process_%s id=%s", on ? "frozen" : "thawed",
	    proc_id(p));
	if ((f = api_freezer_new(c, a, on, false)) == NULL)
		return;
	snprintf(f->id, sizeof(f->id), "%s", proc_id(p));
	api_freezer_start(c, f);
}

static void
api_freeze_one(struct http_conn *c, struct http_req *r)
{
	api_freeze_proc(c, r, true);
}

static void
api_thaw_one(struct http_conn *c, struct http_req *r)
{
	api_freeze_proc(c, r, false);
}

static void
api_freeze_every(struct http_conn *c, bool on)
{
	struct api		*a = api_of(c);
	struct api_freezer	*f;
	struct job		*j;
	int			 n = 0, failed = 0;

	if (!api_freeze_available(c) ||
	    (f = api_freezer_new(c, a, on, true)) == NULL)
		return;
	for (j = api_freeze_next(a, NULL); j != NULL; j = api_freeze_next(a, j))
		if (job_freeze(j, on) == -1)
			failed++;
		else
			n++;
	log_info("event=%s jobs=%d failed=%d", on ? "frozen_all" :
	    "thawed_all", n, failed);
	/* The disk as the snapshot will see it: everything written so far. */
	if (on && (f->sync = record_sync(proctab_statefd(a->tab))) > 0 &&
	    child_watch(f->sync, api_freezer_synced, f) == -1)
		f->sync = 0;
	if (f->sync == -1) {
		f->sync_err = errno;
		f->sync = 0;
	}
	api_freezer_start(c, f);
}

static void
api_freeze_all(struct http_conn *c, struct http_req *r)
{
	(void)r;
	api_freeze_every(c, true);
}

static void
api_thaw_all(struct http_conn *c, struct http_req *r)
{
	(void)r;
	api_freeze_every(c, false);
}
