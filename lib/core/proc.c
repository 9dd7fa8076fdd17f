/*
 * proc.c: the process table.
 *
 * What a process is beyond a job (job.c): launch with pipes and a
 * process group of its own (the child itself is spawn's), stdin "pipe"
 * or "null", timeouts and kills, and the end: a record stays "running"
 * until its root was reaped (the agent's one reap loop hands every pid
 * to proc_reaped()) and no member of its group is left (the group has
 * settled).  The files are record's; this module decides when they are
 * written, retried, made ahead, given back and synced.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/codec.h"
#include "base/log.h"
#include "base/util.h"
#include "events.h"
#include "proc_int.h"

static struct proc *proc_new(struct proctab *, const struct proc_opts *);
static void	proc_begin(struct proc *, const struct proc_opts *,
		    struct proc_pipes *);
static void	proc_timeout_cb(struct ev_loop *, ev_timer *, int);
static void	proc_settle_cb(struct ev_loop *, ev_timer *, int);
static bool	proc_group_empty(struct proc *);
static int	proc_group_kill(struct proc *, int);
static void	proc_settle(struct proc *);
static int	proc_open_record(struct proc *, uint64_t);
static void	proc_write_meta(struct proc *, const struct proc_opts *);
static char	*proc_meta_json(struct proc *, const struct proc_opts *);
static cJSON	*proc_status_build(struct proc *, bool);
static void	proc_first_status_cb(struct ev_loop *, ev_timer *, int);
static cJSON	*proc_kind_status(struct job *, bool);
static void	proc_kind_drained(struct job *, int, bool, bool);
static void	proc_kind_signal(struct job *, int);
static void	proc_kind_end(struct job *);
static void	proc_kind_free(struct job *);
static void	proc_kind_emptied(struct job *);
static void	proc_kind_frozen(struct job *, bool);
static void	proc_kind_stop(struct job *);

/* What a process is to the engine. */
const struct job_kind proc_kind = {
	"process_removed", "record_remove_failed", proc_kind_status,
	proc_kind_drained, NULL, proc_kind_signal, proc_kind_end,
	proc_kind_free, CG_PROC, proc_kind_emptied, proc_kind_frozen,
	proc_kind_stop
};

/* The table of a process. */
struct proctab *
proc_tab(struct proc *p)
{
	return container_of(p->job.tab, struct proctab, jobs);
}

/* ------------------------------------------------------------------ */
/* Records by ID, and what they say of themselves */

bool
proc_id_valid(const char *id)
{
	return record_id_valid(id);
}

struct proc *
proc_find(struct proctab *t, const char *id)
{
	return proc_of(job_find(&t->jobs, id));
}

const char *
proc_state_name(enum proc_state s)
{
	switch (s) {
	case PROC_RUNNING:
		return "running";
	case PROC_EXITED:
		return "exited";
	default:
		return "error";
	}
}

enum proc_state
proc_state(struct proc *p)
{
	return (enum proc_state)p->job.state;
}

int64_t
proc_started_ms(struct proc *p)
{
	return p->job.started_ms;
}

pid_t
proc_pid(struct proc *p)
{
	return p->job.pid;
}

const char *
proc_boot(struct proc *p)
{
	return p->job.tab->boot;
}

bool
proc_ended(struct proc *p, enum proc_end what)
{
	switch (what) {
	case PROC_END_ROOT:
		return p->job.reaped;
	case PROC_END_STATE:
		return p->job.state != JOB_RUNNING;
	case PROC_END_OUTPUT:
		return p->job.state != JOB_RUNNING && proc_output_done(p);
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Launch */

struct proc *
proc_spawn(struct proctab *t, const struct proc_opts *o, bool *spawn_failed,
    int *err)
{
	struct proc_pipes	 pp;
	struct proc		*p;

	*spawn_failed = false;
	*err = 0;
	if (o->id != NULL && proc_find(t, o->id) != NULL) {
		*err = EEXIST;
		return NULL;
	}
	if (t->jobs.nlive >= t->jobs.maxlive) {
		*err = EAGAIN;
		return NULL;
	}
	if ((p = proc_new(t, o)) == NULL) {
		*err = errno;
		return NULL;
	}
	proctab_spare_pause(t);
	if (proc_pipes_open(t, &pp, o->stdin_pipe) == -1 ||
	    proc_exec(p, o, &pp, spawn_failed) == -1)
		goto fail;	/* a failed child is left to the reaper */
	/*
	 * The record's directory is made while the child loads its program
	 * on another CPU.  If it cannot be (other than by a full or
	 * read-only state dir) the launch is undone (the reaper collects
	 * the child).
	 */
	if (proc_open_record(p, o->maxlog ? o->maxlog : t->maxlog) == -1) {
		*err = errno;
		(void)proc_group_kill(p, SIGKILL);
		errno = *err;
		goto fail;
	}
	proc_begin(p, o, &pp);
	if (p->ready != NULL)
		ready_start(p->ready, &p->job);
	return p;

fail:
	*err = errno;
	proc_pipes_close(&pp);
	job_free(&p->job);	/* no record remains: the ID is free again */
	return NULL;
}

/* The record in memory, before it has a process. */
static struct proc *
proc_new(struct proctab *t, const struct proc_opts *o)
{
	struct proc	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->grace_s = o->grace_s;
	p->timeout_kill = o->timeout_kill;
	p->timeout_s = o->timeout_s;
	p->job.limits = o->limits;
	p->stdin_pipe = o->stdin_pipe;
	/*
	 * Tags are kept as text, emitted raw: a parsed tree costs several
	 * times its size for as long as the record is kept.
	 */
	p->tags = o->tags ? cJSON_PrintUnformatted(o->tags) : strdup("{}");
	if (job_init(&p->job, &t->jobs, &proc_kind, o->id, 'p', o->argv,
	    o->cwd) == -1 || p->tags == NULL ||
	    (o->restart.policy != PROC_RESTART_NO &&
	    proc_restart_new(p, o) == -1) ||
	    (o->ready.on && (p->ready = ready_new(&o->ready)) == NULL)) {
		job_free(&p->job);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

static int
proc_pipe(int fds[2], int parent_end)
{
	if (pipe2(fds, O_CLOEXEC) == -1)
		return -1;
	/* Only the agent's end is non-blocking: the child sees a plain pipe. */
	if (fcntl(fds[parent_end], F_SETFL, O_NONBLOCK) == -1) {
		close(fds[0]);
		close(fds[1]);
		fds[0] = fds[1] = -1;
		return -1;
	}
	return 0;
}

int
proc_pipes_open(struct proctab *t, struct proc_pipes *pp, bool stdin_pipe)
{
	pp->out[0] = pp->out[1] = pp->err[0] = pp->err[1] = -1;
	pp->in[0] = pp->in[1] = pp->null = -1;
	if (proc_pipe(pp->out, 0) == -1 || proc_pipe(pp->err, 0) == -1)
		return -1;
	/*
	 * A larger stdout pipe lets a fast writer run while the agent
	 * stores the last burst: fewer wakeups per byte.  Best effort (the
	 * system's pipe-max-size may refuse it).
	 */
	(void)fcntl(pp->out[0], F_SETPIPE_SZ, PROC_PIPE_SIZE);
	if (stdin_pipe)
		return proc_pipe(pp->in, 1);
	return proctab_devnull(t) == -1 ? -1 : 0;
}

void
proc_pipes_close(struct proc_pipes *pp)
{
	int	i, saved = errno;

	for (i = 0; i < 2; i++) {
		if (pp->out[i] != -1)
			close(pp->out[i]);
		if (pp->err[i] != -1)
			close(pp->err[i]);
		if (pp->in[i] != -1)
			close(pp->in[i]);
	}
	if (pp->null != -1)
		close(pp->null);
	errno = saved;
}


/*
 * The child: its own session and process group, the three pipes and
 * nothing else of the agent, the children's limits.  -1 and errno.
 */
int
proc_exec(struct proc *p, const struct proc_opts *o,
    const struct proc_pipes *pp, bool *failed)
{
	struct proctab		*t = proc_tab(p);
	struct spawn_opts	 so;

	memset(&so, 0, sizeof(so));
	so.argv = o->argv;
	so.cwd = o->cwd;
	so.fd[0] = o->stdin_pipe ? pp->in[0] : proctab_devnull(t);
	so.fd[1] = pp->out[1];
	so.fd[2] = pp->err[1];
	so.has_user = o->has_user;
	so.uid = o->uid;
	so.gid = o->gid;
	so.user = o->user;
	so.confine = &o->confine;
	return job_spawn(&p->job, &so, o->env, NULL, failed);
}

/* The launch took: the record goes live, in the table. */
static void
proc_begin(struct proc *p, const struct proc_opts *o, struct proc_pipes *pp)
{
	struct ev_loop	*loop = p->job.tab->loop;

	job_begin(&p->job);
	proc_timers_init(p);
	job_grace_init(&p->job, p->grace_s);
	proc_run_start(p, pp);
	proc_write_meta(p, o);
	ev_timer_start(loop, &p->first_status);
	log_info("event=process_started id=%s pid=%d", p->job.id,
	    (int)p->job.pid);
	jobtab_tell(p->job.tab, &p->job, JOBTAB_EV_START);
}

/*
 * The timers, none running.  The first status waits a moment: a process
 * that ends by then gets its final status as the first and only write
 * (one file created, no replace), which is most of the cost of a short
 * exec.
 */
void
proc_timers_init(struct proc *p)
{
	ev_timer_init(&p->timeout, proc_timeout_cb, 0., 0.);
	ev_timer_init(&p->settle, proc_settle_cb, PROC_SETTLE_POLL,
	    PROC_SETTLE_POLL);
	ev_timer_init(&p->first_status, proc_first_status_cb,
	    PROC_FIRST_STATUS, 0.);
	p->settle_soon = PROC_SETTLE_SOON;
}

/* A run's pipes go to the loop; the child's ends close; its timeout runs. */
void
proc_run_start(struct proc *p, struct proc_pipes *pp)
{
	job_out_start(&p->job, LS_STDOUT, pp->out[0]);
	job_out_start(&p->job, LS_STDERR, pp->err[0]);
	close(pp->out[1]);
	close(pp->err[1]);
	if (pp->null != -1)
		close(pp->null);
	if (pp->in[1] != -1) {
		close(pp->in[0]);
		job_in_start(&p->job, pp->in[1], false);
	}
	p->settle_soon = PROC_SETTLE_SOON;
	p->timeout_left = 0;
	if (p->rs != NULL)
		proc_restart_run_begun(p);
	if (p->timeout_s > 0) {
		ev_timer_set(&p->timeout, p->timeout_s, 0.);
		ev_timer_start(p->job.tab->loop, &p->timeout);
	}
}

/* ------------------------------------------------------------------ */
/* The record's files */

/*
 * A state dir that cannot take the record's directory leaves the
 * record in memory (record_open): said once here, retried by the table.
 */
static int
proc_open_record(struct proc *p, uint64_t maxlog)
{
	int	err;

	switch (record_open(&p->job.rec, &p->job.tab->recs, p->job.id,
	    maxlog)) {
	case -1:
		return -1;
	case 1:
		err = errno;
		log_warnx("event=record_in_memory id=%s err=\"%s\"", p->job.id,
		    strerror(err));
		proctab_trouble(proc_tab(p), err);
		break;
	}
	return 0;
}

/* meta.json: how the process was launched. */
static char *
proc_meta_json(struct proc *p, const struct proc_opts *o)
{
	cJSON	*j, *a;

	if ((j = job_meta_json(&p->job, o->env, o->user)) == NULL)
		return NULL;
	a = cJSON_AddObjectToObject(j, "options");
	cJSON_AddStringToObject(a, "stdin", o->stdin_pipe ? "pipe" : "null");
	if (o->timeout_s > 0)
		cJSON_AddNumberToObject(a, "timeout", o->timeout_s * 1000);
	cJSON_AddNumberToObject(a, "killGrace", o->grace_s * 1000);
	cJSON_AddNumberToObject(a, "maxLogBytes",
	    (double)p->job.rec.ls.maxbytes);
	spawn_confine_json(a, &o->confine, o->has_user, o->uid, o->gid);
	job_limits_json(&p->job.limits, a);
	if (p->rs != NULL)
		proc_restart_opts_json(&o->restart, a);
	cJSON_AddRawToObject(j, "tags", p->tags);
	return job_meta_text(&p->job, j);
}

/* Kept in memory until written. */
static void
proc_write_meta(struct proc *p, const struct proc_opts *o)
{
	char	*s;
	int	 err;

	if ((s = proc_meta_json(p, o)) == NULL) {
		log_warnx("event=meta_write_failed id=%s err=\"out of memory\"",
		    p->job.id);
		return;
	}
	if (record_set_meta(&p->job.rec, s) == -1) {
		err = errno;
		/* A record in memory said so already (proc_open_record). */
		if (!record_in_memory(&p->job.rec))
			log_warn("event=meta_write_failed id=%s", p->job.id);
		proctab_trouble(proc_tab(p), err);
	}
}

/*
 * status.json, the first one included, replaces the last: a write the
 * disk refuses leaves the previous file whole, and the record says
 * statusWriteFailed until a retry (every STATE_RETRY_S, and at shutdown)
 * writes the status of that moment.  A final status is made durable by
 * one syncfs of the state dir at most PROC_SYNC_DELAY later, rather than
 * an fsync per file on the loop: a record found "running" after a crash
 * becomes "lost" either way.
 */
void
proc_write_status(struct proc *p, bool final)
{
	bool	was_failed = record_status_failed(&p->job.rec);
	int	err;

	p->status_written = true;
	proctab_spare_soon(proc_tab(p));
	if (job_put_status(&p->job) == -1) {
		err = errno;
		if (!was_failed && !record_in_memory(&p->job.rec))
			log_warn("event=status_write_failed id=%s", p->job.id);
		proctab_trouble(proc_tab(p), err);
	}
	if (final)
		proctab_sync_soon(proc_tab(p));
}

static void
proc_first_status_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proc	*p = container_of(w, struct proc, first_status);

	(void)loop;
	(void)revents;
	if (!p->status_written)
		proc_write_status(p, false);
}

struct logstore *
proc_store(struct proc *p)
{
	return job_store(&p->job);
}

/* ------------------------------------------------------------------ */
/* Output */

/*
 * A pipe's drain is over.  The last status first: a watcher told of the
 * output may end and let the record give back its files
 * (job_release_fds).
 */
static void
proc_kind_drained(struct job *j, int s, bool grew, bool closed)
{
	struct proc	*p = proc_of(j);
	bool		 done = j->out[s] == -1 && job_output_done(j);

	(void)closed;
	if (done && j->state != JOB_RUNNING)
		proc_write_status(p, true);
	if (grew)		/* new or grown */
		job_notify(j, JOB_EV_OUTPUT);
	if (done)
		job_notify(j, JOB_EV_EOF);
}

void
proc_drain_now(struct proc *p)
{
	job_drain_now(&p->job);
}

bool
proc_output_done(struct proc *p)
{
	return job_output_done(&p->job);
}

/* ------------------------------------------------------------------ */
/* Exit */

void
proc_reaped(struct proctab *t, pid_t pid, int wstatus)
{
	struct ev_loop	*loop = t->jobs.loop;
	struct proc	*p;

	if (proctab_reaped(t, pid, wstatus))
		return;
	if ((p = proc_of(job_by_pid(&t->jobs, pid))) != NULL) {
		/*
		 * What the root wrote is in the pipes now: take it before
		 * anyone hears of the exit (exec replies at this point).
		 */
		job_drain_now(&p->job);
		job_reap(&p->job, wstatus);
		/*
		 * The timeout still runs: it bounds the group, not the root.
		 * Watchers first: an exec's reply need not wait for a log line.
		 */
		job_notify(&p->job, JOB_EV_EXIT);
		log_info("event=process_exited id=%s pid=%d code=%d signal=%d",
		    p->job.id, (int)pid, p->job.exit.code, p->job.exit.signal);
		proc_check_settled(p);
		return;
	}
	/*
	 * An orphan: it may have been the last member of some group.  Each
	 * unsettled group is looked at again soon, not now: kill(-pgid, 0)
	 * walks the whole group, and 2,000 members dying one by one would
	 * make that a walk per death.  While deaths go on, each check that
	 * still finds members doubles the delay of the next (up to the
	 * poll's): a burst of n deaths costs a few checks, not one per
	 * PROC_SETTLE_SOON, and the last death is seen within the delay.
	 */
	t->orphans++;
	for (p = proctab_first(t); p != NULL; p = proc_next(p)) {
		/* A cgroup's watched events say when it empties. */
		if (!p->job.reaped || p->job.state != JOB_RUNNING ||
		    p->job.cg.wd != -1)
			continue;
		p->orphan_died = true;
		if (ev_timer_remaining(loop, &p->settle) > p->settle_soon) {
			ev_timer_stop(loop, &p->settle);
			ev_timer_set(&p->settle, p->settle_soon,
			    PROC_SETTLE_POLL);
			ev_timer_start(loop, &p->settle);
		}
	}
}

/*
 * No process left: in its cgroup (cgroup.events' populated, which a
 * process that left the group, a setsid escapee, still counts in), else
 * in its group (members that are zombies count until the reap loop
 * collects them; members that are not our children are found by the
 * poll timer).
 */
static bool
proc_group_empty(struct proc *p)
{
	if (p->job.cg.fd != -1)
		return cgroup_events(&p->job.cg) == 0 && !p->job.cg.populated;
	return kill(-p->job.pid, 0) == -1 && errno == ESRCH;
}

/* Signal every member of the group (the kind's signal, without cgroup). */
static int
proc_group_kill(struct proc *p, int sig)
{
	if (p->job.pid <= 0) {
		errno = ESRCH;	/* kill(0) would be the agent's own group */
		return -1;
	}
	job_sent(&p->job, sig);
	return kill(-p->job.pid, sig);
}

/* Not to a group no longer there: a record waiting for its next run. */
static void
proc_kind_signal(struct job *j, int sig)
{
	if (proc_of(j)->rs == NULL || !proc_restart_waiting(proc_of(j)))
		(void)proc_group_kill(proc_of(j), sig);
}

void
proc_check_settled(struct proc *p)
{
	if (p->rs != NULL && proc_restart_waiting(p))
		return;		/* settled: the next run is not on yet */
	if (proc_group_empty(p)) {
		proc_settle(p);
		return;
	}
	/* A watched cgroup tells when it empties: no poll. */
	if (p->job.cg.wd == -1 && !ev_is_active(&p->settle))
		ev_timer_start(p->job.tab->loop, &p->settle);
}

static void
proc_kind_emptied(struct job *j)
{
	if (j->reaped)
		proc_check_settled(proc_of(j));
}

/*
 * A frozen process's timeout does not run: what is left of it waits for
 * the thaw, so that a snapshot's pause costs a process none of its time.
 */
static void
proc_kind_frozen(struct job *j, bool on)
{
	struct proc	*p = proc_of(j);
	struct ev_loop	*loop = j->tab->loop;

	if (on && ev_is_active(&p->timeout)) {
		p->timeout_left = ev_timer_remaining(loop, &p->timeout);
		ev_timer_stop(loop, &p->timeout);
	} else if (!on && p->timeout_left > 0) {
		ev_timer_set(&p->timeout, p->timeout_left, 0.);
		ev_timer_start(loop, &p->timeout);
		p->timeout_left = 0;
	}
}

static void
proc_settle_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proc	*p = container_of(w, struct proc, settle);

	(void)loop;
	(void)revents;
	/* Deaths since the last check: a burst; none: the next is quick. */
	p->settle_soon = !p->orphan_died ? PROC_SETTLE_SOON :
	    p->settle_soon * 2 < PROC_SETTLE_POLL ? p->settle_soon * 2 :
	    PROC_SETTLE_POLL;
	p->orphan_died = false;
	proc_check_settled(p);
}

/* A run settled: the record runs again (its policy), or it ends. */
static void
proc_settle(struct proc *p)
{
	struct ev_loop	*loop = p->job.tab->loop;

	ev_timer_stop(loop, &p->settle);
	ev_timer_stop(loop, &p->timeout);
	ev_timer_stop(loop, &p->job.grace);
	/* What the pipes hold now belongs before the end. */
	job_drain_now(&p->job);
	if (p->rs != NULL && proc_restart_due(p))
		return;
	proc_end(p);
}

void
proc_end(struct proc *p)
{
	ev_timer_stop(p->job.tab->loop, &p->first_status);
	job_input_close(&p->job);
	job_ended(&p->job);
	proc_write_status(p, true);
	job_tell_end(&p->job);
}

/* Shutdown: a record waiting for its next run ends as it is. */
static void
proc_kind_stop(struct job *j)
{
	if (proc_of(j)->rs != NULL)
		(void)proc_restart_cancel(proc_of(j), "shutdown");
}

static void
proc_kind_end(struct job *j)
{
	proc_settle(proc_of(j));
}

/* process.timeout: the signal the group is sent now. */
static void
proc_tell_timeout(struct proc *p)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return;
	cJSON_AddStringToObject(o, "id", p->job.id);
	cJSON_AddNumberToObject(o, "pid", (double)p->job.pid);
	cJSON_AddStringToObject(o, "signal", p->timeout_kill ? "KILL" : "TERM");
	events_emit("process.timeout", o);
}

static void
proc_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proc	*p = container_of(w, struct proc, timeout);

	(void)loop;
	(void)revents;
	p->job.exit.timed_out = true;	/* before or after the root's exit */
	log_info("event=process_timeout id=%s pid=%d", p->job.id,
	    (int)p->job.pid);
	proc_tell_timeout(p);
	if (p->timeout_kill) {
		job_signal(&p->job, SIGKILL);
		return;
	}
	job_signal(&p->job, SIGTERM);
	job_grace_start(&p->job);
}

int
proc_terminate(struct proc *p)
{
	if (job_running(&p->job) == -1)
		return -1;
	if (p->rs != NULL && proc_restart_cancel(p, "cancelled"))
		return 0;
	job_signal(&p->job, SIGTERM);
	job_grace_start(&p->job);
	return 0;
}

double
proc_grace(struct proc *p)
{
	return p->grace_s;
}

/* A record waiting for its next run: any signal cancels that run. */
int
proc_kill(struct proc *p, int sig, bool group)
{
	if (job_running(&p->job) == -1)
		return -1;
	if (p->rs != NULL && sig != 0 && proc_restart_cancel(p, "cancelled"))
		return 0;
	if (group)
		return proc_group_kill(p, sig);
	return job_kill_root(&p->job, sig);
}

/* ------------------------------------------------------------------ */
/* Stdin */

int
proc_stdin(struct proc *p, const void *d, size_t n, bool close_after)
{
	return job_input(&p->job, d, n, close_after);
}

bool
proc_stdin_piped(struct proc *p)
{
	return p->stdin_pipe;
}

bool
proc_stdin_open(struct proc *p)
{
	return p->job.in != -1;
}

/* ------------------------------------------------------------------ */
/* Status */

const struct exit_status *
proc_exit(struct proc *p)
{
	return job_exit(&p->job);
}

/* The root's outcome: {"code","signal" (absent unless killed),"timedOut"}. */
cJSON *
proc_exit_json(struct proc *p)
{
	return exitstatus_json(&p->job.exit, true);
}

cJSON *
proc_status_json(struct proc *p)
{
	return proc_status_build(p, true);
}

static cJSON *
proc_kind_status(struct job *j, bool live)
{
	return proc_status_build(proc_of(j), live);
}

/*
 * The status; live (a reply, not status.json) adds what only the agent
 * can know: that the file on disk is behind.
 */
static cJSON *
proc_status_build(struct proc *p, bool live)
{
	struct job	*jb = &p->job;
	struct logstore	*ls = &jb->rec.ls;
	char		 ts[TIME_MAX];
	cJSON		*j;

	if ((j = job_status_head(jb)) == NULL)
		return NULL;
	codec_time(ts, jb->started_ms);
	cJSON_AddStringToObject(j, "startedAt", ts);
	cJSON_AddStringToObject(j, "state", proc_state_name(proc_state(p)));
	if (jb->state == JOB_EXITED) {
		cJSON_AddItemToObject(j, "exit", proc_exit_json(p));
		codec_time(ts, jb->ended_ms);
		cJSON_AddStringToObject(j, "endedAt", ts);
	}
	cJSON_AddStringToObject(j, "bootId", jb->tab->boot);
	cJSON_AddNumberToObject(j, "stdoutBytes", (double)ls->end[LS_STDOUT]);
	cJSON_AddNumberToObject(j, "stderrBytes", (double)ls->end[LS_STDERR]);
	cJSON_AddNumberToObject(j, "droppedBytes", (double)ls->dropped);
	cJSON_AddRawToObject(j, "tags", p->tags);
	if (p->rs != NULL)
		proc_restart_status(p, j);
	job_status_cgroup(jb, j);
	if (p->ready != NULL)
		ready_status(p->ready, j);
	if (live && record_status_failed(&jb->rec))
		cJSON_AddBoolToObject(j, "statusWriteFailed", true);
	return j;
}

/* ------------------------------------------------------------------ */
/* Removal and shutdown */

/* The engine freed the job's part: the process's own, then the memory. */
static void
proc_kind_free(struct job *j)
{
	struct proc	*p = proc_of(j);
	struct ev_loop	*loop = j->tab->loop;

	ev_timer_stop(loop, &p->timeout);
	ev_timer_stop(loop, &p->settle);
	ev_timer_stop(loop, &p->first_status);
	proc_restart_free(p);
	ready_free(p->ready);
	free(p->tags);
	free(p);
}
