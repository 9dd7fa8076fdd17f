/*
 * api_envd_stream.c: process.Process's streams, Start and Connect (see
 * api_envd_stream.h).
 *
 * A Start is an ordinary tend launch (a terminal when it asks for a pty)
 * whose events are read from its record by the follow pump, as exec's
 * stream is: the stream is one more reader of the stored output, so a
 * client that goes away leaves the process, and what it writes, alone,
 * and one that does not read costs a small queue, the files holding the
 * rest.
 */
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_envd.h"
#include "api_envd_stream.h"
#include "base/codec.h"
#include "base/util.h"
#include "connect.h"
#include "core/follow.h"
#include "envd.h"

/* One Start or Connect stream: a follow of the record, into envelopes. */
struct envd_stream {
	struct http_conn	*c;
	struct api		*api;
	struct follow		*f;
	struct envd_timers	 tm;	/* a deadline: Connect's own */
	bool			 pty;
};

/* A terminal's lifetime (Start's Connect-Timeout-Ms): KILL at its end. */
struct envd_life {
	struct job_watch	 w;	/* of the terminal */
	ev_timer		 t;
	struct ev_loop		*loop;
};

/* A parsed StartRequest. */
struct envd_launch {
	char			**argv;		/* cmd, args: into the body */
	char			**env;
	char			 cwd[PATH_MAX];
	const char		*tag;
	bool			 pty, stdin_pipe;
	unsigned int		 cols, rows;
	uint64_t		 timeout_ms;	/* 0: none */
	struct envd_user	 u;
	const cJSON		*envs;
};

/* ------------------------------------------------------------------ */
/* Streams */

static void
api_envd_stream_free(void *owner)
{
	struct envd_stream	*st = owner;

	follow_free(st->f);
	envd_timers_stop(&st->tm);
	st->api->followers--;
	free(st);
}

static int
api_envd_stream_send(struct envd_stream *st, const char *json)
{
	envd_timers_touch(&st->tm);
	return envd_stream_msg(st->c, json);
}

static int
api_envd_stream_chunk(void *ctx, const struct follow_chunk *ch)
{
	struct envd_stream	*st = ctx;
	struct buf		 m = { 0 };
	int			 rc;

	rc = buf_printf(&m, "{\"event\":{\"data\":{\"%s\":\"", st->pty ?
	    "pty" : ch->stream == LS_STDERR ? "stderr" : "stdout");
	rc |= codec_b64_encode(&m, ch->data, ch->len);
	rc |= buf_add(&m, "\"}}}", 5);		/* NUL-terminated */
	if (rc != 0) {
		buf_free(&m);
		http_conn_abort(st->c);
		return -1;
	}
	rc = api_envd_stream_send(st, m.data);
	buf_free(&m);
	return rc;
}

/* A byte stream has no event for lost bytes: /v1's logs tell them. */
static int
api_envd_stream_gap(void *ctx, const struct follow_gap *g)
{
	(void)ctx;
	(void)g;
	return 0;
}

static void
api_envd_stream_end(void *ctx, enum follow_why why, const char *cursor)
{
	struct envd_stream	*st = ctx;
	struct envd_target	 t = { follow_proc(st->f), follow_term(st->f) };
	struct envd_err		 e;
	bool			 timed_out = false;
	char			*s;

	(void)cursor;
	if (why == FOLLOW_GONE || (t.p == NULL && t.t == NULL)) {
		envd_err_set(&e, "not_found", "the process was removed");
		envd_stream_finish(&st->tm, &e);
		return;
	}
	if ((s = api_envd_end_json(&t, &timed_out)) == NULL ||
	    envd_stream_msg(st->c, s) == -1) {
		free(s);
		http_conn_abort(st->c);		/* closed: frees st */
		return;
	}
	free(s);
	envd_err_set(&e, "deadline_exceeded", "the process's lifetime "
	    "(Connect-Timeout-Ms) ran out: killed");
	envd_stream_finish(&st->tm, timed_out ? &e : NULL);
}

static size_t
api_envd_stream_pending(void *ctx)
{
	struct envd_stream	*st = ctx;

	return http_conn_dead(st->c) ? FOLLOW_SINK_DEAD :
	    http_conn_pending(st->c);
}

/*
 * Written only below LOGS_OUT_HIGH, a piece (LOGS_PIECE) at a time: an
 * unread stream holds that much of the output, the files the rest.
 */
static const struct follow_sink api_envd_stream_sink = {
	api_envd_stream_chunk, api_envd_stream_gap, api_envd_stream_end, NULL,
	api_envd_stream_pending, LOGS_OUT_HIGH, NULL
};

static void
api_envd_stream_drained(struct http_conn *c, void *owner)
{
	struct envd_stream	*st = owner;

	(void)c;
	follow_drained(st->f);
}

/* The client went away: the process goes on, its output stored. */
static void
api_envd_stream_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_envd_stream_free(owner);
}

/* A follow of t's record: from its start (replay), or from now. */
static struct follow *
api_envd_stream_follow(struct api *a, const struct envd_target *t,
    bool replay, struct envd_err *e)
{
	struct follow_opts	 o = { 0 };
	struct follow_src	 src = { 0 };
	struct follow		*f;
	char			 ts[TIME_MAX];

	if (t->p != NULL) {
		src.ls = proc_store(t->p);
		src.proc = t->p;
		src.until = PROC_END_ROOT;	/* as exec: a daemon's pipe
						   does not hold the stream */
		src.boot = proc_boot(t->p);
		src.id = proc_id(t->p);
		codec_time(ts, proc_started_ms(t->p));
	} else {
		src.ls = term_store(t->t);
		src.term = t->t;
		src.boot = termtab_boot(a->terms);
		src.id = term_id(t->t);
		codec_time(ts, term_created_ms(t->t));
		o.eager = true;		/* an interactive reader */
	}
	src.started = ts;
	o.walk = FOLLOW_RECORDS;
	o.follow = true;
	o.piece = LOGS_PIECE;		/* an event needs no whole chunk */
	if (src.ls == NULL || (f = follow_new(proctab_loop(a->tab), &src,
	    &o)) == NULL) {
		envd_err_set(e, "internal", "cannot read the output of '%s': "
		    "%s", src.id, strerror(errno));
		return NULL;
	}
	(void)follow_seek(f, NULL, replay);
	return f;
}

/*
 * Stream t's events: the head, start, then the follow's data until the
 * end.  deadline_ms (Connect): the stream's own lifetime, 0 for none.
 */
static void
api_envd_stream_open(struct http_conn *c, struct http_req *r,
    const struct envd_target *t, bool replay, uint64_t deadline_ms)
{
	struct api		*a = api_of(c);
	struct envd_stream	*st;
	struct envd_err		 e;

	if ((st = calloc(1, sizeof(*st))) == NULL) {
		envd_err_set(&e, "resource_exhausted", "out of memory");
		envd_stream_fail(c, &e);
		return;
	}
	if ((st->f = api_envd_stream_follow(a, t, replay, &e)) == NULL) {
		free(st);
		envd_stream_fail(c, &e);
		return;
	}
	st->c = c;
	st->api = a;
	st->pty = t->t != NULL;
	a->followers++;
	envd_timers_init(&st->tm, proctab_loop(a->tab), c, r,
	    "{\"event\":{\"keepalive\":{}}}", api_envd_stream_free, st);
	http_conn_own(c, st, api_envd_stream_drained, api_envd_stream_closed);
	if (envd_stream_begin(c) == -1 || api_envd_start_msg(c, t->p != NULL ?
	    proc_pid(t->p) : term_pid(t->t)) == -1)
		return;		/* api_envd_stream_closed frees it */
	envd_timers_start(&st->tm, deadline_ms);
	follow_start(st->f, &api_envd_stream_sink, st);
}

/* ------------------------------------------------------------------ */
/* Start */

/* process.args: an array of strings, after cmd in argv. */
static int
api_envd_stream_argv(const cJSON *proc, struct envd_launch *l,
    struct envd_err *e)
{
	const cJSON	*cmd, *args, *el;
	int		 n = 0, i = 1;

	cmd = connect_field(proc, "cmd");
	args = connect_field(proc, "args");
	if (!cJSON_IsString(cmd) || cmd->valuestring[0] == '\0') {
		envd_err_set(e, "invalid_argument", "process.cmd: must be a "
		    "non-empty string");
		return -1;
	}
	if (args != NULL && (!cJSON_IsArray(args) ||
	    (n = cJSON_GetArraySize(args)) >= PROC_MAX_ARGV)) {
		envd_err_set(e, "invalid_argument", "process.args: must be an "
		    "array of at most %d strings", PROC_MAX_ARGV - 1);
		return -1;
	}
	if ((l->argv = calloc(n + 2, sizeof(char *))) == NULL) {
		envd_err_set(e, "resource_exhausted", "out of memory");
		return -1;
	}
	l->argv[0] = cmd->valuestring;
	cJSON_ArrayForEach(el, args) {
		if (!cJSON_IsString(el)) {
			envd_err_set(e, "invalid_argument", "process.args: "
			    "every element must be a string");
			return -1;
		}
		l->argv[i++] = el->valuestring;
	}
	return 0;
}

/* tag, stdin, pty: the StartRequest's fields beside process. */
static int
api_envd_stream_fields(const cJSON *j, struct envd_launch *l,
    struct envd_err *e)
{
	const cJSON	*f;

	if ((f = connect_field(j, "tag")) != NULL) {
		if (!cJSON_IsString(f) || !proc_id_valid(f->valuestring)) {
			envd_err_set(e, "invalid_argument", "tag: must match "
			    "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ (it is the "
			    "tend ID)");
			return -1;
		}
		l->tag = f->valuestring;
	}
	/* Absent means true: envd's, for SDKs older than the field. */
	l->stdin_pipe = true;
	if ((f = connect_field(j, "stdin")) != NULL) {
		if (!cJSON_IsBool(f)) {
			envd_err_set(e, "invalid_argument", "stdin: must be a "
			    "boolean");
			return -1;
		}
		l->stdin_pipe = cJSON_IsTrue(f);
	}
	if ((f = connect_field(j, "pty")) != NULL) {
		l->pty = true;
		return api_envd_pty_size(f, &l->cols, &l->rows, e);
	}
	return 0;
}

static void
api_envd_stream_launch_free(struct envd_launch *l)
{
	free(l->argv);
	envd_env_free(l->env);
}

/* The StartRequest j and the request's headers into l. */
static int
api_envd_stream_launch_opts(struct api *a, struct http_req *r, const cJSON *j,
    struct envd_launch *l, struct envd_err *e)
{
	const cJSON	*proc, *cwd;

	memset(l, 0, sizeof(*l));
	if (envd_request_user(a->envd, r, &l->u, e) == -1)
		return -1;
	if (!cJSON_IsObject(proc = connect_field(j, "process"))) {
		envd_err_set(e, "invalid_argument", "process: must be an "
		    "object {cmd, args, envs, cwd}");
		return -1;
	}
	cwd = connect_field(proc, "cwd");
	if (cwd != NULL && !cJSON_IsString(cwd)) {
		envd_err_set(e, "invalid_argument", "process.cwd: must be a "
		    "string");
		return -1;
	}
	l->envs = connect_field(proc, "envs");
	if (envd_timeout(r, &l->timeout_ms, e) == -1 ||
	    api_envd_stream_argv(proc, l, e) == -1 ||
	    envd_path(a->envd, &l->u, cwd != NULL ? cwd->valuestring : "",
	    true, l->cwd, sizeof(l->cwd), e) == -1 ||
	    (l->env = envd_environ(a->envd, &l->u, l->envs, e)) == NULL)
		return -1;
	return api_envd_stream_fields(j, l, e);
}

/* A launch that failed, as envd's codes say it. */
static void
api_envd_stream_spawn_err(bool failed, int err, const struct envd_launch *l,
    struct envd_err *e)
{
	if (failed)
		envd_err_set(e, "invalid_argument", "cannot start '%.128s' in "
		    "'%.256s': %s", l->argv[0], l->cwd, strerror(err));
	else if (err == EEXIST)
		envd_err_set(e, "already_exists", "tag '%s' is already taken "
		    "in this boot", l->tag != NULL ? l->tag : "");
	else if (err == EAGAIN || err == EMFILE || err == ENFILE ||
	    err == ENOMEM || err == ENOSPC || err == EDQUOT)
		envd_err_set(e, "resource_exhausted", "cannot start now: %s",
		    strerror(err));
	else
		envd_err_set(e, "internal", "cannot start: %s", strerror(err));
}

static struct proc *
api_envd_stream_spawn_proc(struct api *a, const struct envd_launch *l,
    bool *failed, int *err)
{
	struct proc_opts	o;

	memset(&o, 0, sizeof(o));
	o.argv = l->argv;
	o.cwd = l->cwd;
	o.env = l->env;
	o.id = l->tag;
	o.stdin_pipe = l->stdin_pipe;
	o.timeout_s = l->timeout_ms / 1000.0;
	o.timeout_kill = true;
	o.grace_s = PROC_KILL_GRACE_MS / 1000.0;
	o.has_user = true;
	o.uid = l->u.uid;
	o.gid = l->u.gid;
	memcpy(o.user_name, l->u.name, sizeof(o.user_name));
	o.user = o.user_name[0] != '\0' ? o.user_name : NULL;
	return proc_spawn(a->tab, &o, failed, err);
}

static void
api_envd_stream_life_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct envd_life	*lf = container_of(w, struct envd_life, t);

	(void)loop;
	(void)revents;
	(void)term_signal_session(term_of(lf->w.job), SIGKILL);
}

static void
api_envd_stream_life_event(struct job_watch *w, enum job_event ev)
{
	struct envd_life	*lf = container_of(w, struct envd_life, w);

	if (ev != JOB_EV_END && ev != JOB_EV_GONE)
		return;
	if (ev == JOB_EV_END)
		job_watch_del(w);
	ev_timer_stop(lf->loop, &lf->t);
	free(lf);
}

/* A terminal's lifetime: KILL its session at ms. */
static void
api_envd_stream_life(struct api *a, struct term *t, uint64_t ms)
{
	struct envd_life	*lf;

	if (ms == 0 || (lf = calloc(1, sizeof(*lf))) == NULL)
		return;
	lf->loop = proctab_loop(a->tab);
	ev_timer_init(&lf->t, api_envd_stream_life_cb, ms / 1000.0, 0.);
	ev_timer_start(lf->loop, &lf->t);
	job_watch_add(term_job(t), &lf->w, api_envd_stream_life_event);
}

static struct term *
api_envd_stream_spawn_term(struct api *a, const struct envd_launch *l,
    bool *failed, int *err)
{
	struct term_opts	 o;
	struct term		*t;

	memset(&o, 0, sizeof(o));
	o.argv = l->argv;
	o.cwd = l->cwd;
	o.env = l->env;
	o.id = l->tag;
	o.cols = l->cols;
	o.rows = l->rows;
	o.has_user = true;
	o.uid = l->u.uid;
	o.gid = l->u.gid;
	o.user = l->u.name[0] != '\0' ? l->u.name : NULL;
	if ((t = term_create(a->terms, &o, failed, err)) != NULL)
		api_envd_stream_life(a, t, l->timeout_ms);
	return t;
}

/*
 * POST /process.Process/Start.  start{pid} goes out only after the exec
 * succeeded (proc_spawn and term_create return after it); a failure is
 * the stream's only frame.  Connect-Timeout-Ms is the process's
 * lifetime: at it the group is KILLed.
 */
static void
api_envd_stream_start(struct http_conn *c, struct http_req *r)
{
	struct api		*a = api_of(c);
	struct envd_launch	 l;
	struct envd_target	 t = { NULL, NULL };
	struct envd_err		 e;
	cJSON			*j;
	bool			 failed = false;
	int			 err = 0;

	if ((j = envd_stream_body(r, &e)) == NULL) {
		envd_stream_fail(c, &e);
		return;
	}
	if (api_envd_stream_launch_opts(a, r, j, &l, &e) == 0) {
		if (l.pty)
			t.t = api_envd_stream_spawn_term(a, &l, &failed, &err);
		else
			t.p = api_envd_stream_spawn_proc(a, &l, &failed, &err);
		if (t.p == NULL && t.t == NULL)
			api_envd_stream_spawn_err(failed, err, &l, &e);
		else
			api_envd_names_add(a, t.p != NULL ? &t.p->job :
			    term_job(t.t), l.envs);
	}
	if (t.p != NULL || t.t != NULL)
		api_envd_stream_open(c, r, &t, true, 0);
	else
		envd_stream_fail(c, &e);
	api_envd_stream_launch_free(&l);
	cJSON_Delete(j);
}

/* ------------------------------------------------------------------ */
/* Connect */

/* An ended record: start, its end, {} (live-only: no old output). */
static void
api_envd_stream_ended(struct http_conn *c, const struct envd_target *t)
{
	bool	 timed_out;
	char	*s;

	if (envd_stream_begin(c) == -1 || api_envd_start_msg(c, t->p ?
	    proc_pid(t->p) : term_pid(t->t)) == -1)
		return;
	if ((s = api_envd_end_json(t, &timed_out)) == NULL) {
		http_conn_abort(c);
		return;
	}
	if (envd_stream_msg(c, s) == 0)
		envd_stream_end(c, NULL);
	free(s);
}

/*
 * POST /process.Process/Connect: live events from now on (the full
 * history is /v1/processes/{tag}/logs).  Connect-Timeout-Ms bounds the
 * stream only.
 */
static void
api_envd_stream_connect(struct http_conn *c, struct http_req *r)
{
	struct envd_target	 t;
	struct envd_err		 e;
	uint64_t		 ms;
	cJSON			*j;

	if ((j = envd_stream_body(r, &e)) == NULL) {
		envd_stream_fail(c, &e);
		return;
	}
	if (envd_timeout(r, &ms, &e) == -1 ||
	    api_envd_select(api_of(c), j, &t, &e) == -1)
		envd_stream_fail(c, &e);
	else if (api_envd_ended(&t))
		api_envd_stream_ended(c, &t);
	else
		api_envd_stream_open(c, r, &t, false, ms);
	cJSON_Delete(j);
}

const struct http_route api_envd_stream_routes[] = {
	{ "POST",	"/process.Process/Start",	api_envd_stream_start,
	    NULL },
	{ "POST",	"/process.Process/Connect",	api_envd_stream_connect,
	    NULL },
	{ NULL, NULL, NULL, NULL }
};
