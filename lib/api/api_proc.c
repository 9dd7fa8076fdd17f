/*
 * api_proc.c: the process routes — launch, list, status, kill, stdin,
 * wait, delete.  Reading a process's output is api_output's; exec is
 * api_exec's.
 */
#include <sys/types.h>

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_input.h"
#include "api_ports.h"
#include "api_proc.h"
#include "base/log.h"
#include "base/util.h"
#include "store/record.h"

static void	api_proc_launch(struct http_conn *, struct http_req *);
static void	api_list(struct http_conn *, struct http_req *);
static void	api_status(struct http_conn *, struct http_req *);
static void	api_kill(struct http_conn *, struct http_req *);
static void	api_stdin_body(struct http_conn *, struct http_req *,
		    const char *, size_t);
static void	api_stdin(struct http_conn *, struct http_req *);
static void	api_wait(struct http_conn *, struct http_req *);
static void	api_delete(struct http_conn *, struct http_req *);

const struct http_route api_proc_routes[] = {
	{ "POST",	"/v1/processes",		api_proc_launch, NULL },
	{ "GET",	"/v1/processes",		api_list, NULL },
	{ "GET",	"/v1/processes/{}",		api_status, NULL },
	{ "DELETE",	"/v1/processes/{}",		api_delete, NULL },
	{ "POST",	"/v1/processes/{}/kill",	api_kill, NULL },
	{ "POST",	"/v1/processes/{}/stdin",	api_stdin, api_stdin_body },
	{ "POST",	"/v1/processes/{}/wait",	api_wait, NULL },
	{ NULL, NULL, NULL, NULL }
};

static void
api_reply_status(struct http_conn *c, struct proc *p)
{
	http_reply_json(c, 200, proc_status_json(p));
}

/* The pinned boot's process for a call that changes it, or reply. */
static struct proc *
api_proc_live(struct http_conn *c, struct http_req *r)
{
	struct api_err	 e;
	struct proc	*p;
	int		 fd;

	if (api_pin(api_of(c), r, false, &fd, &e) != 0 ||
	    (p = api_proc(api_of(c), r, &e)) == NULL) {
		api_reply_err(c, &e);
		return NULL;
	}
	return p;
}

/* ------------------------------------------------------------------ */
/* Checks */

int
api_proc_state_query(struct http_req *r, char want[16], struct api_err *e)
{
	switch (http_query(r, "state", want, 16)) {
	case 0:
		want[0] = '\0';
		return 0;
	case 1:
		if (strcmp(want, "running") == 0 || strcmp(want, "exited") == 0 ||
		    strcmp(want, "error") == 0)
			return 0;
		break;
	}
	api_err_invalid(e, "state", "must be running, exited or error");
	return -1;
}

int
api_proc_timeout_query(struct http_req *r, uint64_t *ms, struct api_err *e)
{
	*ms = 0;
	if (http_query_u64(r, "timeout", ms) == -1 || *ms > PROC_MS_MAX) {
		api_err_invalid(e, "timeout", "must be a number of milliseconds");
		return -1;
	}
	return 0;
}

int
api_proc_kill_body(struct http_req *r, int *sig, bool *group,
    struct api_err *e)
{
	const cJSON	*f;
	cJSON		*j;
	int		 rc = -1;

	*sig = SIGTERM;
	*group = true;
	if (r->body.len == 0)
		return 0;
	if ((j = api_parse_body(r->body.data, r->body.len, e)) == NULL)
		return -1;
	if (!cJSON_IsObject(j)) {
		api_err_invalid(e, "body", "must be a JSON object");
		goto out;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "signal")) != NULL) {
		if (!api_integer(f, 1, API_SIGNAL_MAX)) {
			api_err_invalid(e, "signal", "must be an integer "
			    "from 1 to 64");
			goto out;
		}
		*sig = (int)f->valuedouble;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "group")) != NULL) {
		if (!cJSON_IsBool(f)) {
			api_err_invalid(e, "group", "must be a boolean");
			goto out;
		}
		*group = cJSON_IsTrue(f);
	}
	rc = 0;
out:
	cJSON_Delete(j);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Launch, list, status, kill, delete */

static void
api_proc_launch(struct http_conn *c, struct http_req *r)
{
	api_proc_launch_cwd(c, r, NULL);
}

void
api_proc_launch_cwd(struct http_conn *c, struct http_req *r, const char *cwd)
{
	struct proc_opts	 o;
	struct api_err		 e;
	struct proc		*p;
	char			**argv = NULL, **env = NULL;
	cJSON			*j = NULL;
	bool			 failed;
	int			 fd, err;

	if (api_pin(api_of(c), r, false, &fd, &e) != 0 ||
	    (j = api_parse_body(r->body.data, r->body.len, &e)) == NULL) {
		api_reply_err(c, &e);
		return;
	}
	if (api_launch_opts(j, false, api_of(c)->default_user, &o, &argv,
	    &env, &e) == -1) {
		api_reply_err(c, &e);
		goto out;
	}
	if (cwd != NULL)
		o.cwd = cwd;
	if ((p = proc_spawn(api_of(c)->tab, &o, &failed, &err)) == NULL)
		api_reply_spawn_error(c, failed, err, o.id);
	else
		api_reply_status(c, p);
out:
	api_launch_free(argv, env);
	cJSON_Delete(j);
}

static void
api_list(struct http_conn *c, struct http_req *r)
{
	struct api_err	 e;
	struct proc	*p;
	char		 want[16];
	cJSON		*a;
	int		 fd, pinned;

	if ((pinned = api_pin(api_of(c), r, true, &fd, &e)) == -1 ||
	    api_proc_state_query(r, want, &e) == -1) {
		if (pinned == 1)
			close(fd);
		api_reply_err(c, &e);
		return;
	}
	if (pinned == 1) {
		http_reply_json(c, 200, record_list(fd, want));
		close(fd);
		return;
	}
	a = cJSON_CreateArray();
	for (p = proctab_first(api_of(c)->tab); p != NULL; p = proc_next(p))
		if (want[0] == '\0' ||
		    strcmp(want, proc_state_name(proc_state(p))) == 0)
			cJSON_AddItemToArray(a, proc_status_json(p));
	http_reply_json(c, 200, a);
}

static void
api_status(struct http_conn *c, struct http_req *r)
{
	struct api_err	 e;
	struct proc	*p;
	char		*s;
	size_t		 len;
	int		 fd;

	switch (api_pin(api_of(c), r, true, &fd, &e)) {
	case -1:
		api_reply_err(c, &e);
		return;
	case 0:
		if ((p = api_proc(api_of(c), r, &e)) != NULL)
			api_reply_status(c, p);
		else
			api_reply_err(c, &e);
		return;
	}
	/* An earlier boot: its last status, as written. */
	if (proc_id_valid(r->param[0]) &&
	    (s = record_status_text(fd, r->param[0], &len)) != NULL) {
		http_reply(c, 200, "application/json", s, len);
		free(s);
	} else
		http_reply_error(c, 404, "not_found", "no process "
		    "'%.128s' in that boot", r->param[0]);
	close(fd);
}

static void
api_kill(struct http_conn *c, struct http_req *r)
{
	struct api_err	 e;
	struct proc	*p;
	bool		 group;
	int		 sig, fd;

	if (api_pin(api_of(c), r, false, &fd, &e) != 0 ||
	    api_proc_kill_body(r, &sig, &group, &e) == -1 ||
	    (p = api_proc(api_of(c), r, &e)) == NULL) {
		api_reply_err(c, &e);
		return;
	}
	if (proc_kill(p, sig, group) == -1) {
		if (errno == ESRCH)
			http_reply_error(c, 409, "not_running",
			    "process '%s' is not running", proc_id(p));
		else
			http_reply_error(c, 403, "forbidden", "kill: %s",
			    strerror(errno));
		return;
	}
	log_info("event=process_signalled id=%s signal=%d group=%d",
	    proc_id(p), sig, group);
	http_reply(c, 204, NULL, NULL, 0);
}

static void
api_delete(struct http_conn *c, struct http_req *r)
{
	struct api_err	 e;
	struct proc	*p;
	int		 force;

	if ((p = api_proc_live(c, r)) == NULL)
		return;
	if (api_query_flag(r, "force", 0, &force, &e) == -1) {
		api_reply_err(c, &e);
		return;
	}
	if (!proc_ended(p, PROC_END_STATE) && !force) {
		http_reply_error(c, 409, "conflict", "process '%s' is running; "
		    "kill it first or use ?force=1", proc_id(p));
		return;
	}
	/* Files that cannot be removed keep the record (and its group). */
	if (proc_delete(p) == -1) {
		http_reply_error(c, 500, "internal", "cannot remove the files "
		    "of '%s': %s; the record is kept", proc_id(p),
		    strerror(errno));
		return;
	}
	http_reply(c, 204, NULL, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* Stdin */

/*
 * Stdin bodies are streamed into the process's pipe buffer as they
 * arrive, the writer held while the queue is full (api_input.h).
 */

static const struct api_input_says api_stdin_says = {
	"stdin", "the process was removed", "conflict",
	"stdin of '%s' was closed before the queued bytes were written"
};

/* Held after its body: the reply it was waiting for. */
static void
api_stdin_answer(struct job *j, void *writer, int err)
{
	api_input_answer(writer, j, err, &api_stdin_says);
}

/* A closed stdin refuses the bytes (409) in job_input. */
static void
api_stdin_body(struct http_conn *c, struct http_req *r, const char *d,
    size_t n)
{
	struct proctab	*tab = api_of(c)->tab;
	struct proc	*p = proc_find(tab, r->param[0]);

	api_input_body(c, r, proctab_boot(tab), p != NULL ? proc_job(p) : NULL,
	    d, n);
}

static void
api_stdin(struct http_conn *c, struct http_req *r)
{
	struct api_err	 e;
	struct proc	*p;
	int		 close_after;

	if ((p = api_proc_live(c, r)) == NULL)
		return;
	api_input_done(c, proc_job(p));
	if (api_query_flag(r, "close", 0, &close_after, &e) == -1) {
		api_reply_err(c, &e);
		return;
	}
	if (api_input_busy(c, r, proc_job(p), &api_stdin_says))
		return;
	if (r->body_error != 0 || !proc_stdin_piped(p) || !proc_stdin_open(p)) {
		http_reply_error(c, 409, "conflict", proc_stdin_piped(p) ?
		    "stdin of '%s' is closed" : "process '%s' was not started "
		    "with stdin \"pipe\"", proc_id(p));
		return;
	}
	if (close_after && proc_stdin(p, "", 0, true) == -1) {
		http_reply_error(c, 409, "conflict", "stdin of '%s' is closed",
		    proc_id(p));
		return;
	}
	/* Its bytes left the queue full: the reply waits for room. */
	if (api_input_wait(c, r, proc_job(p), api_stdin_answer))
		return;
	http_reply(c, 204, NULL, NULL, 0);
}

/*
 * A waiter holds a wait request until the process leaves "running" or the
 * wait times out; either way the reply is the status at that moment.
 */
struct api_waiter {
	struct job_watch	 w;	/* of the process */
	ev_timer		 timer;
	struct http_conn	*c;
	struct ev_loop		*loop;
};

static void
api_waiter_free(struct api_waiter *wt)
{
	job_watch_del(&wt->w);
	ev_timer_stop(wt->loop, &wt->timer);
	free(wt);
}

static void
api_waiter_done(struct api_waiter *wt, struct proc *p)
{
	struct http_conn	*c = wt->c;

	http_conn_own(c, NULL, NULL, NULL);
	api_waiter_free(wt);
	if (p != NULL)
		api_reply_status(c, p);
	else
		http_reply_error(c, 404, "not_found", "the process was removed");
}

static void
api_waiter_event(struct job_watch *w, enum job_event ev)
{
	struct api_waiter	*wt = container_of(w, struct api_waiter, w);

	if (ev == JOB_EV_END)
		api_waiter_done(wt, proc_of(w->job));
	else if (ev == JOB_EV_GONE)
		api_waiter_done(wt, NULL);
}

static void
api_waiter_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct api_waiter	*wt = container_of(t, struct api_waiter, timer);

	(void)loop;
	(void)revents;
	api_waiter_done(wt, proc_of(wt->w.job));
}

static void
api_waiter_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_waiter_free(owner);
}

/* ?for=end (the default) or ready (api_ports: the readiness wait). */
static int
api_wait_for_query(struct http_req *r, bool *ready, struct api_err *e)
{
	char	v[8];

	*ready = false;
	switch (http_query(r, "for", v, sizeof(v))) {
	case 0:
		return 0;
	case 1:
		if (strcmp(v, "end") == 0)
			return 0;
		if (strcmp(v, "ready") == 0) {
			*ready = true;
			return 0;
		}
		break;
	}
	api_err_invalid(e, "for", "must be end or ready");
	return -1;
}

static void
api_wait(struct http_conn *c, struct http_req *r)
{
	struct api_waiter	*wt;
	struct api_err		 e;
	struct proc		*p;
	uint64_t		 ms;
	bool			 ready;
	int			 fd;

	if (api_pin(api_of(c), r, false, &fd, &e) != 0 ||
	    api_proc_timeout_query(r, &ms, &e) == -1 ||
	    api_wait_for_query(r, &ready, &e) == -1 ||
	    (p = api_proc(api_of(c), r, &e)) == NULL) {
		api_reply_err(c, &e);
		return;
	}
	if (ready) {
		api_ports_wait_ready(c, p, ms);
		return;
	}
	if (proc_ended(p, PROC_END_STATE)) {
		api_reply_status(c, p);
		return;
	}
	if ((wt = calloc(1, sizeof(*wt))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	wt->c = c;
	wt->loop = proctab_loop(api_of(c)->tab);
	job_watch_add(proc_job(p), &wt->w, api_waiter_event);
	ev_timer_init(&wt->timer, api_waiter_timer, ms / 1000.0, 0.);
	if (ms > 0)
		ev_timer_start(wt->loop, &wt->timer);
	http_conn_own(c, wt, NULL, api_waiter_closed);
}

