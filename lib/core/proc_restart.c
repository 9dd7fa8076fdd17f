/*
 * proc_restart.c: a record's restart policy.
 *
 * A record launched with "restart" keeps its ID across runs.  When a run
 * settles (proc.c), the policy decides: run again after a backoff that
 * doubles up to its cap (reset by a run that stayed up RESTART_RESET_S),
 * or end the record.  A run that tend itself stopped (a stop signal it
 * sent, the signal it died of, its timeout, the agent's shutdown) is
 * never run again; a breaker ends a record past maxRestarts, or past
 * RESTART_WINDOW_N restarts in RESTART_WINDOW_S without one.  Between two
 * runs the record stays "running" with no process: a kill cancels the
 * next run.  The output is one stream; each run's first offsets are in
 * the status's "runs" and in the events, so a reader finds the bounds.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "base/log.h"
#include "base/util.h"
#include "events.h"
#include "proc_int.h"

enum proc_rstate {
	RS_RUNNING,	/* a run is on */
	RS_WAITING,	/* between two runs: the backoff */
	RS_GAVE_UP,	/* the breaker, or a run that could not start */
	RS_STOPPED	/* ended by its policy, or by tend */
};

/* One run, as a status lists it. */
struct proc_run {
	int		 run;
	pid_t		 pid;
	int64_t		 started_ms, ended_ms;	/* ended 0: on */
	uint64_t	 offset[LS_NSTREAMS];	/* the streams' at its start */
	struct exit_status exit;
};

struct proc_restart {
	struct proc_restart_opts o;
	struct proc	*p;
	enum proc_rstate state;
	const char	*why;		/* gave up or stopped: a word */
	int		 run, restarts;
	double		 delay_s;	/* the next backoff */
	int64_t		 next_ms;	/* waiting: the next run's time */
	ev_timer	 wait;
	bool		 stdin_open;	/* the next run gets a stdin pipe */
	int64_t		 recent[RESTART_WINDOW_N];	/* restarts' times */
	struct proc_run	 runs[RESTART_RUNS_KEPT];	/* by run % KEPT */
	/* What the next run is launched with (argv and cwd: the job's). */
	char		**env;
	bool		 has_user;
	uid_t		 uid;
	gid_t		 gid;
	char		*user;
	struct spawn_confine confine;
};

/* The signals that stop a run: sent by tend, the run is not restarted. */
#define RESTART_STOP_SIGS	((1ull << SIGTERM) | (1ull << SIGKILL) | \
				 (1ull << SIGINT) | (1ull << SIGQUIT))

static const char *const rs_names[] = {
	"running", "waiting", "gave_up", "stopped"
};

static const char *const policy_names[] = { "no", "on-failure", "always" };

static struct proc_run *rs_run(struct proc_restart *, int);
static void	strv_free(char **);
static cJSON	*rs_event(struct proc *);
static void	rs_offsets(cJSON *, const uint64_t *);
static void	rs_tell_exited(struct proc *, const struct proc_run *);
static void	rs_tell_restarting(struct proc *, double);
static void	rs_tell_started(struct proc *);
static void	rs_give_up(struct proc *, const char *);
static bool	rs_stopped_by_tend(struct proc *);
static bool	rs_too_many(struct proc_restart *, int64_t, const char **);
static void	proc_restart_cb(struct ev_loop *, ev_timer *, int);
static double	rs_rlim_num(rlim_t);
static void	rs_save_exit(cJSON *, const struct exit_status *);
static void	rs_load_exit(const cJSON *, struct exit_status *);
static cJSON	*rs_run_json(const struct proc_run *, bool);

static struct proc_run *
rs_run(struct proc_restart *rs, int run)
{
	return &rs->runs[run % RESTART_RUNS_KEPT];
}

void
proc_restart_run_begun(struct proc *p)
{
	struct proc_restart *rs = p->rs;
	struct proc_run	*r = rs_run(rs, rs->run);
	struct logstore	*ls = &rs->p->job.rec.ls;
	int		 s;

	memset(r, 0, sizeof(*r));
	r->run = rs->run;
	r->pid = rs->p->job.pid;
	r->started_ms = codec_now_ms();
	for (s = 0; s < LS_NSTREAMS; s++)
		r->offset[s] = ls->end[s];
}

static void
strv_free(char **v)
{
	size_t	i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

int
proc_restart_new(struct proc *p, const struct proc_opts *o)
{
	struct proc_restart	*rs;

	if ((rs = calloc(1, sizeof(*rs))) == NULL)
		return -1;
	p->rs = rs;
	rs->p = p;
	rs->o = o->restart;
	rs->run = 1;
	rs->delay_s = rs->o.backoff_s;
	rs->has_user = o->has_user;
	rs->uid = o->uid;
	rs->gid = o->gid;
	rs->confine = o->confine;
	ev_timer_init(&rs->wait, proc_restart_cb, 0., 0.);
	if ((o->env != NULL && (rs->env = spawn_strvdup(o->env)) == NULL) ||
	    (o->user != NULL && (rs->user = strdup(o->user)) == NULL)) {
		errno = ENOMEM;
		return -1;	/* freed with the record */
	}
	return 0;
}

void
proc_restart_free(struct proc *p)
{
	struct proc_restart	*rs = p->rs;

	if (rs == NULL)
		return;
	ev_timer_stop(p->job.tab->loop, &rs->wait);
	strv_free(rs->env);
	free(rs->user);
	free(rs);
	p->rs = NULL;
}

int
proc_run(struct proc *p)
{
	return p->rs != NULL ? p->rs->run : 0;
}

bool
proc_restart_waiting(struct proc *p)
{
	return p->rs->state == RS_WAITING;
}

/* ---------------------------------------------------------------- */
/* Events */

static cJSON *
rs_event(struct proc *p)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "id", p->job.id);
	cJSON_AddNumberToObject(o, "run", p->rs->run);
	cJSON_AddNumberToObject(o, "restarts", p->rs->restarts);
	return o;
}

/* The streams' offsets: where the next run's output begins. */
static void
rs_offsets(cJSON *o, const uint64_t *off)
{
	cJSON_AddNumberToObject(o, "stdoutOffset", (double)off[LS_STDOUT]);
	cJSON_AddNumberToObject(o, "stderrOffset", (double)off[LS_STDERR]);
}

/* process.exited of a run the record outlives: the last is events_jobs'. */
static void
rs_tell_exited(struct proc *p, const struct proc_run *r)
{
	cJSON	*o;

	if ((o = rs_event(p)) == NULL)
		return;
	cJSON_AddItemToObject(o, "exit", exitstatus_json(&r->exit, true));
	cJSON_AddNumberToObject(o, "durationMs",
	    (double)(r->ended_ms - r->started_ms));
	events_emit("process.exited", o);
}

static void
rs_tell_restarting(struct proc *p, double delay_s)
{
	struct proc_restart	*rs = p->rs;
	cJSON			*o;

	if ((o = rs_event(p)) == NULL)
		return;
	cJSON_ReplaceItemInObject(o, "run", cJSON_CreateNumber(rs->run + 1));
	cJSON_AddNumberToObject(o, "delayMs", delay_s * 1000);
	cJSON_AddItemToObject(o, "lastExit",
	    exitstatus_json(&rs_run(rs, rs->run)->exit, true));
	rs_offsets(o, p->job.rec.ls.end);
	events_emit("process.restarting", o);
}

/* As the first run's (events_jobs.c), with its run and offsets. */
static void
rs_tell_started(struct proc *p)
{
	char	 a[EVENTS_ARGV0_MAX + 1];
	cJSON	*o;

	if ((o = rs_event(p)) == NULL)
		return;
	cJSON_AddNumberToObject(o, "pid", (double)p->job.pid);
	snprintf(a, sizeof(a), "%s", p->job.argv[0]);
	cJSON_AddStringToObject(o, "argv0", a);
	cJSON_AddRawToObject(o, "tags", p->tags);
	rs_offsets(o, rs_run(p->rs, p->rs->run)->offset);
	events_emit("process.started", o);
}

static void
rs_give_up(struct proc *p, const char *why)
{
	struct proc_restart	*rs = p->rs;
	cJSON			*o;

	rs->state = RS_GAVE_UP;
	rs->why = why;
	log_info("event=process_gave_up id=%s restarts=%d why=%s", p->job.id,
	    rs->restarts, why);
	if ((o = rs_event(p)) == NULL)
		return;
	cJSON_AddStringToObject(o, "reason", why);
	cJSON_AddItemToObject(o, "lastExit",
	    exitstatus_json(&rs_run(rs, rs->run)->exit, true));
	events_emit("process.gave_up", o);
}

/* ---------------------------------------------------------------- */
/* A run's end, the next run */

/* Did tend end this run: its timeout, a stop signal, the signal it died of. */
static bool
rs_stopped_by_tend(struct proc *p)
{
	const struct job	*j = &p->job;

	return j->tab->stopping || j->exit.timed_out ||
	    (j->sigsent & RESTART_STOP_SIGS) != 0 ||
	    (j->exit.signal > 0 && j->exit.signal < 64 &&
	    (j->sigsent & (1ull << j->exit.signal)) != 0);
}

/* The breaker: true when one more restart is one too many. */
static bool
rs_too_many(struct proc_restart *rs, int64_t now, const char **why)
{
	int64_t	oldest;

	if (rs->o.max >= 0) {
		*why = "maxRestarts";
		return rs->restarts >= rs->o.max;
	}
	*why = "crashLoop";
	if (rs->restarts < RESTART_WINDOW_N)
		return false;
	/* The ring's oldest: RESTART_WINDOW_N restarts ago. */
	oldest = rs->recent[rs->restarts % RESTART_WINDOW_N];
	return now - oldest < (int64_t)(RESTART_WINDOW_S * 1000);
}

bool
proc_restart_due(struct proc *p)
{
	struct proc_restart	*rs = p->rs;
	struct proc_run		*r = rs_run(rs, rs->run);
	struct job		*j = &p->job;
	int64_t			 now = codec_now_ms();
	const char		*why;
	double			 delay;
	int			 s;

	r->ended_ms = now;
	r->exit = j->exit;
	if (rs_stopped_by_tend(p)) {
		rs->state = RS_STOPPED;
		rs->why = j->tab->stopping ? "shutdown" : "signal";
		return false;
	}
	if (rs->o.policy == PROC_RESTART_ON_FAILURE && j->exit.code == 0 &&
	    j->exit.signal == 0) {
		rs->state = RS_STOPPED;
		rs->why = "succeeded";
		return false;
	}
	if (rs_too_many(rs, now, &why)) {
		rs_give_up(p, why);
		return false;
	}
	/* A run that stayed up long enough was healthy: back to the start. */
	if (now - r->started_ms >= (int64_t)(RESTART_RESET_S * 1000))
		rs->delay_s = rs->o.backoff_s;
	delay = rs->delay_s;
	rs->delay_s = delay * 2 < rs->o.max_backoff_s ? delay * 2 :
	    rs->o.max_backoff_s;
	/*
	 * This run's pipes and stdin end here: a descendant that still holds
	 * a pipe writes to nothing from now on; bytes queued for its stdin
	 * are dropped (the writer is told EPIPE).  The next run has its own.
	 */
	for (s = 0; s < j->nout; s++)
		job_out_end(j, s);
	rs->stdin_open = p->stdin_pipe && j->in != -1 && !j->in_close;
	job_input_close(j);
	rs->state = RS_WAITING;
	rs->next_ms = now + (int64_t)(delay * 1000);
	ev_timer_set(&rs->wait, delay, 0.);
	ev_timer_start(j->tab->loop, &rs->wait);
	log_info("event=process_restarting id=%s run=%d code=%d signal=%d "
	    "delay_ms=%.0f", j->id, rs->run, j->exit.code, j->exit.signal,
	    delay * 1000);
	rs_tell_exited(p, r);
	rs_tell_restarting(p, delay);
	proc_write_status(p, false);
	return true;
}

bool
proc_restart_cancel(struct proc *p, const char *why)
{
	struct proc_restart	*rs = p->rs;

	if (rs->state != RS_WAITING)
		return false;
	ev_timer_stop(p->job.tab->loop, &rs->wait);
	rs->state = RS_STOPPED;
	rs->why = why;
	log_info("event=process_restart_cancelled id=%s why=%s", p->job.id,
	    why);
	proc_end(p);
	return true;
}

/* The backoff is over: the next run, in the same record and cgroup. */
static void
proc_restart_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proc_restart	*rs = container_of(w, struct proc_restart, wait);
	struct proc		*p = rs->p;
	struct proc_pipes	 pp;
	struct proc_opts	 o;
	bool			 failed = false;

	(void)loop;
	(void)revents;
	if (p->job.tab->stopping) {
		(void)proc_restart_cancel(p, "shutdown");
		return;
	}
	memset(&o, 0, sizeof(o));
	o.argv = p->job.argv;
	o.cwd = p->job.cwd;
	o.env = rs->env;
	o.stdin_pipe = rs->stdin_open;
	o.has_user = rs->has_user;
	o.uid = rs->uid;
	o.gid = rs->gid;
	o.user = rs->user;
	o.confine = rs->confine;
	if (proc_pipes_open(proc_tab(p), &pp, o.stdin_pipe) == -1 ||
	    proc_exec(p, &o, &pp, &failed) == -1) {
		log_warn("event=process_restart_failed id=%s", p->job.id);
		proc_pipes_close(&pp);
		rs_give_up(p, failed ? "spawnFailed" : "launchFailed");
		proc_end(p);
		return;
	}
	job_rerun(&p->job);
	rs->recent[rs->restarts % RESTART_WINDOW_N] = codec_now_ms();
	rs->restarts++;
	rs->run++;
	rs->state = RS_RUNNING;
	proc_run_start(p, &pp);
	log_info("event=process_restarted id=%s pid=%d run=%d", p->job.id,
	    (int)p->job.pid, rs->run);
	rs_tell_started(p);
	proc_write_status(p, false);
}

/* ---------------------------------------------------------------- */
/* The agent's handover (core/handover.c) */

static const char *const rs_reasons[] = {
	"maxRestarts", "crashLoop", "spawnFailed", "launchFailed",
	"succeeded", "signal", "cancelled", "shutdown"
};

/* An rlimit as a number a double holds exactly; -1: past it (infinity). */
static double
rs_rlim_num(rlim_t v)
{
	return v < ((rlim_t)1 << 53) ? (double)v : -1;
}

static void
rs_save_exit(cJSON *o, const struct exit_status *e)
{
	cJSON_AddNumberToObject(o, "code", e->code);
	cJSON_AddNumberToObject(o, "signal", e->signal);
	cJSON_AddBoolToObject(o, "timedOut", e->timed_out);
	cJSON_AddBoolToObject(o, "oomKilled", e->oom_killed);
}

static void
rs_load_exit(const cJSON *o, struct exit_status *e)
{
	e->code = (int)job_get_num(o, "code", 0);
	e->signal = (int)job_get_num(o, "signal", 0);
	e->timed_out = job_get_bool(o, "timedOut");
	e->oom_killed = job_get_bool(o, "oomKilled");
}

/*
 * The policy and its state into the process's part of the manifest,
 * with what a next run is launched with (the environment included: the
 * memfd is memory, never the disk).
 */
void
proc_restart_save(struct proc *p, cJSON *po)
{
	struct proc_restart	*rs = p->rs;
	const struct proc_run	*r;
	cJSON			*o, *a, *x;
	int			 i, n;

	if ((o = cJSON_AddObjectToObject(po, "restart")) == NULL)
		return;
	cJSON_AddNumberToObject(o, "policy", rs->o.policy);
	cJSON_AddNumberToObject(o, "max", rs->o.max);
	cJSON_AddNumberToObject(o, "backoffS", rs->o.backoff_s);
	cJSON_AddNumberToObject(o, "maxBackoffS", rs->o.max_backoff_s);
	cJSON_AddNumberToObject(o, "state", rs->state);
	if (rs->why != NULL)
		cJSON_AddStringToObject(o, "why", rs->why);
	cJSON_AddNumberToObject(o, "run", rs->run);
	cJSON_AddNumberToObject(o, "restarts", rs->restarts);
	cJSON_AddNumberToObject(o, "delayS", rs->delay_s);
	cJSON_AddNumberToObject(o, "nextMs", (double)rs->next_ms);
	cJSON_AddNumberToObject(o, "waitDeadline",
	    job_deadline(p->job.tab->loop, &rs->wait));
	cJSON_AddBoolToObject(o, "stdinOpen", rs->stdin_open);
	if ((a = cJSON_AddArrayToObject(o, "recent")) != NULL)
		for (i = 0; i < RESTART_WINDOW_N; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(
			    (double)rs->recent[i]));
	n = rs->run > RESTART_RUNS_KEPT ? rs->run - RESTART_RUNS_KEPT + 1 : 1;
	for (a = cJSON_AddArrayToObject(o, "runs"); a != NULL &&
	    n <= rs->run; n++) {
		r = rs_run(rs, n);
		if ((x = cJSON_CreateObject()) == NULL)
			break;
		cJSON_AddNumberToObject(x, "run", r->run);
		cJSON_AddNumberToObject(x, "pid", r->pid);
		cJSON_AddNumberToObject(x, "startedMs", (double)r->started_ms);
		cJSON_AddNumberToObject(x, "endedMs", (double)r->ended_ms);
		cJSON_AddNumberToObject(x, "out", (double)r->offset[LS_STDOUT]);
		cJSON_AddNumberToObject(x, "err", (double)r->offset[LS_STDERR]);
		rs_save_exit(cJSON_AddObjectToObject(x, "exit"), &r->exit);
		cJSON_AddItemToArray(a, x);
	}
	if (rs->env != NULL && (a = cJSON_AddArrayToObject(o, "env")) != NULL)
		for (i = 0; rs->env[i] != NULL; i++)
			cJSON_AddItemToArray(a, cJSON_CreateString(rs->env[i]));
	cJSON_AddBoolToObject(o, "hasUser", rs->has_user);
	cJSON_AddNumberToObject(o, "uid", rs->uid);
	cJSON_AddNumberToObject(o, "gid", rs->gid);
	if (rs->user != NULL)
		cJSON_AddStringToObject(o, "user", rs->user);
	cJSON_AddBoolToObject(o, "noNewPrivs", rs->confine.nonewprivs);
	cJSON_AddBoolToObject(o, "seccomp", rs->confine.seccomp);
	cJSON_AddBoolToObject(o, "noNet", rs->confine.nonet);
	if ((a = cJSON_AddArrayToObject(o, "rlimits")) != NULL)
		for (i = 0; i < SPAWN_NRLIM; i++)
			cJSON_AddItemToArray(a, cJSON_CreateNumber(
			    rs->confine.has_rlim[i] ?
			    rs_rlim_num(rs->confine.rlim[i]) : -2));
}

/* The policy of a process taken up (o: its "restart"); -1 ENOMEM. */
int
proc_restart_adopt(struct proc *p, const cJSON *o)
{
	struct proc_restart	*rs;
	struct proc_opts	 po;
	const cJSON		*a, *x, *v;
	double			 d;
	int			 i;

	memset(&po, 0, sizeof(po));
	po.restart.policy = (enum proc_policy)job_get_num(o, "policy", 0);
	po.restart.max = (int)job_get_num(o, "max", -1);
	po.restart.backoff_s = job_get_num(o, "backoffS", 0);
	po.restart.max_backoff_s = job_get_num(o, "maxBackoffS", 0);
	po.has_user = job_get_bool(o, "hasUser");
	po.uid = (uid_t)job_get_num(o, "uid", 0);
	po.gid = (gid_t)job_get_num(o, "gid", 0);
	v = cJSON_GetObjectItemCaseSensitive(o, "user");
	po.user = cJSON_IsString(v) ? v->valuestring : NULL;
	po.confine.nonewprivs = job_get_bool(o, "noNewPrivs");
	po.confine.seccomp = job_get_bool(o, "seccomp");
	po.confine.nonet = job_get_bool(o, "noNet");
	a = cJSON_GetObjectItemCaseSensitive(o, "rlimits");
	for (i = 0; i < SPAWN_NRLIM; i++) {
		v = cJSON_GetArrayItem(a, i);
		d = cJSON_IsNumber(v) ? v->valuedouble : -2;
		po.confine.has_rlim[i] = d > -2;
		po.confine.rlim[i] = d >= 0 ? (rlim_t)d : RLIM_INFINITY;
	}
	if (proc_restart_new(p, &po) == -1)
		return -1;
	rs = p->rs;
	if (cJSON_IsArray(a = cJSON_GetObjectItemCaseSensitive(o, "env"))) {
		i = 0;
		if ((rs->env = calloc((size_t)cJSON_GetArraySize(a) + 1,
		    sizeof(char *))) == NULL)
			return -1;
		cJSON_ArrayForEach(v, a)
			if (cJSON_IsString(v) &&
			    (rs->env[i++] = strdup(v->valuestring)) == NULL)
				return -1;	/* freed with the record */
	}
	rs->state = (enum proc_rstate)job_get_num(o, "state", RS_RUNNING);
	v = cJSON_GetObjectItemCaseSensitive(o, "why");
	for (i = 0; cJSON_IsString(v) && i < (int)nitems(rs_reasons); i++)
		if (strcmp(v->valuestring, rs_reasons[i]) == 0)
			rs->why = rs_reasons[i];
	rs->run = (int)job_get_num(o, "run", 1);
	rs->restarts = (int)job_get_num(o, "restarts", 0);
	rs->delay_s = job_get_num(o, "delayS", rs->o.backoff_s);
	rs->next_ms = (int64_t)job_get_num(o, "nextMs", 0);
	rs->stdin_open = job_get_bool(o, "stdinOpen");
	a = cJSON_GetObjectItemCaseSensitive(o, "recent");
	for (i = 0; i < RESTART_WINDOW_N; i++) {
		v = cJSON_GetArrayItem(a, i);
		rs->recent[i] = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : 0;
	}
	cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(o, "runs")) {
		struct proc_run	*r = rs_run(rs, (int)job_get_num(x, "run", 0));

		r->run = (int)job_get_num(x, "run", 0);
		r->pid = (pid_t)job_get_num(x, "pid", 0);
		r->started_ms = (int64_t)job_get_num(x, "startedMs", 0);
		r->ended_ms = (int64_t)job_get_num(x, "endedMs", 0);
		r->offset[LS_STDOUT] = (uint64_t)job_get_num(x, "out", 0);
		r->offset[LS_STDERR] = (uint64_t)job_get_num(x, "err", 0);
		rs_load_exit(cJSON_GetObjectItemCaseSensitive(x, "exit"),
		    &r->exit);
	}
	if (rs->state == RS_WAITING)
		job_deadline_start(p->job.tab->loop, &rs->wait,
		    job_get_num(o, "waitDeadline", -1));
	return 0;
}

/* ---------------------------------------------------------------- */
/* Status */

void
proc_restart_opts_json(const struct proc_restart_opts *o, cJSON *obj)
{
	cJSON	*r;

	if ((r = cJSON_AddObjectToObject(obj, "restart")) == NULL)
		return;
	cJSON_AddStringToObject(r, "policy", policy_names[o->policy]);
	if (o->max >= 0)
		cJSON_AddNumberToObject(r, "maxRestarts", o->max);
	cJSON_AddNumberToObject(r, "backoffMs", o->backoff_s * 1000);
	cJSON_AddNumberToObject(r, "maxBackoffMs", o->max_backoff_s * 1000);
}

static cJSON *
rs_run_json(const struct proc_run *r, bool ended)
{
	char	 ts[TIME_MAX];
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddNumberToObject(o, "run", r->run);
	cJSON_AddNumberToObject(o, "pid", (double)r->pid);
	codec_time(ts, r->started_ms);
	cJSON_AddStringToObject(o, "startedAt", ts);
	if (ended) {
		codec_time(ts, r->ended_ms);
		cJSON_AddStringToObject(o, "endedAt", ts);
		cJSON_AddItemToObject(o, "exit", exitstatus_json(&r->exit,
		    true));
	}
	rs_offsets(o, r->offset);
	return o;
}

void
proc_restart_status(struct proc *p, cJSON *st)
{
	struct proc_restart	*rs = p->rs;
	const struct proc_run	*last = NULL;
	char			 ts[TIME_MAX];
	cJSON			*r, *runs;
	int			 n;

	cJSON_AddNumberToObject(st, "run", rs->run);
	cJSON_AddNumberToObject(st, "restarts", rs->restarts);
	proc_restart_opts_json(&rs->o, st);
	if ((r = cJSON_GetObjectItemCaseSensitive(st, "restart")) == NULL)
		return;
	cJSON_AddStringToObject(r, "state", rs_names[rs->state]);
	if (rs->state == RS_WAITING) {
		codec_time(ts, rs->next_ms);
		cJSON_AddStringToObject(r, "nextRestartAt", ts);
	}
	if (rs->why != NULL && rs->state != RS_RUNNING)
		cJSON_AddStringToObject(r, "reason", rs->why);
	/* The last run that ended: this one, or the one before. */
	if (rs->state != RS_RUNNING)
		last = rs_run(rs, rs->run);
	else if (rs->run > 1)
		last = rs_run(rs, rs->run - 1);
	if (last != NULL)
		cJSON_AddItemToObject(r, "lastExit",
		    exitstatus_json(&last->exit, true));
	if ((runs = cJSON_AddArrayToObject(st, "runs")) == NULL)
		return;
	n = rs->run > RESTART_RUNS_KEPT ? rs->run - RESTART_RUNS_KEPT + 1 : 1;
	for (; n <= rs->run; n++)
		cJSON_AddItemToArray(runs, rs_run_json(rs_run(rs, n),
		    n < rs->run || rs->state != RS_RUNNING));
}
