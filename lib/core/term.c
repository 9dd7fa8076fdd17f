/*
 * term.c: the terminal table.
 *
 * What a terminal is beyond a job (job.c): the pty and the child
 * (spawn's, with the slave as its controlling terminal), interrupt,
 * resize, terminate, and the end (the leader reaped and the master
 * drained to EIO, or the end wait run out).  The master is the job's one
 * output and its input.  The files are record's; the pty's calls are
 * pty's.
 */
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/codec.h"
#include "base/log.h"
#include "base/util.h"
#include "store/boot.h"
#include "sys/pty.h"
#include "term.h"

#define TERM_COLS_DEFAULT	80
#define TERM_ROWS_DEFAULT	24
#define TERM_TYPE		"TERM=xterm-256color"

struct term {
	struct job	 job;		/* first: the engine's part */
	unsigned int	 cols, rows;
	ev_timer	 endwait;	/* reaped: EIO within TERM_END_WAIT */
};

static int	termtab_remake(struct record_dir *);
static struct term *term_new(struct termtab *, const struct term_opts *);
static int	term_exec(struct term *, const struct term_opts *,
		    const char *, bool *);
static void	term_begin(struct term *, const struct term_opts *);
static char	*term_meta_json(struct term *, const struct term_opts *);
static void	term_write_status(struct term *);
static void	term_endwait_cb(struct ev_loop *, ev_timer *, int);
static void	term_end(struct term *);
static int	term_session_scan(pid_t, int);
static cJSON	*term_kind_status(struct job *, bool);
static void	term_kind_drained(struct job *, int, bool, bool);
static void	term_kind_signal(struct job *, int);
static void	term_kind_end(struct job *);
static void	term_kind_free(struct job *);
static bool	term_read_again(int, bool *);

/* What a terminal is to the engine. */
static const struct job_kind term_kind = {
	"terminal_removed", "terminal_remove_failed", term_kind_status,
	term_kind_drained, term_read_again, term_kind_signal, term_kind_end,
	term_kind_free, CG_TERM, NULL, NULL
};

/* ------------------------------------------------------------------ */
/* The table */

int
termtab_init(struct termtab *tt, struct ev_loop *loop, const char *boot,
    int statefd, char **baseenv, const struct spawn_limits *limits)
{
	struct jobtab	*jt = &tt->jobs;

	jobtab_init(jt, loop, boot, statefd);
	tt->loop = loop;
	jt->recs.kind = RECORD_TERM;
	jt->recs.remake = termtab_remake;
	/* A state dir that refuses it: records in memory, made later. */
	if ((jt->recs.fd = boot_open_terms(statefd, boot, true)) == -1)
		jt->recs.err = errno;
	jt->maxlive = TERM_MAX_LIVE;
	/* Trimmed at a creation, to make room for it. */
	jt->keep = TERM_KEEP_ENDED - 1;
	jt->baseenv = baseenv;
	jt->limits = limits;
	return 0;
}

void
termtab_free(struct termtab *tt)
{
	jobtab_free(&tt->jobs);
	if (tt->jobs.recs.fd != -1)
		close(tt->jobs.recs.fd);
	tt->jobs.recs.fd = -1;
}

static int
termtab_remake(struct record_dir *d)
{
	struct jobtab	*jt = container_of(d, struct jobtab, recs);
	int		 fd;

	if ((fd = boot_open_terms(jt->statefd, jt->boot, true)) == -1) {
		d->err = errno;
		return -1;
	}
	if (d->fd != -1)
		close(d->fd);
	d->fd = fd;
	d->err = 0;
	return 0;
}

int
termtab_live(struct termtab *tt)
{
	return tt->jobs.nlive;
}

int
termtab_maxlive(struct termtab *tt)
{
	return tt->jobs.maxlive;
}

const char *
termtab_boot(struct termtab *tt)
{
	return tt->jobs.boot;
}

int
termtab_statefd(struct termtab *tt)
{
	return tt->jobs.statefd;
}

struct term *
termtab_first(struct termtab *tt)
{
	return term_of(tt->jobs.head);
}

struct logstore *
term_store(struct term *t)
{
	return job_store(&t->job);
}

/* ------------------------------------------------------------------ */
/* What a terminal says of itself */

struct term *
term_find(struct termtab *tt, const char *id)
{
	return term_of(job_find(&tt->jobs, id));
}

struct job *
term_job(struct term *t)
{
	return &t->job;
}

int64_t
term_created_ms(struct term *t)
{
	return t->job.started_ms;
}

pid_t
term_pid(struct term *t)
{
	return t->job.pid;
}

bool
term_ended(struct term *t)
{
	return t->job.state != JOB_RUNNING;
}

const struct exit_status *
term_exit(struct term *t)
{
	return term_ended(t) ? &t->job.exit : NULL;
}

/* {"code","signal"}: "signal" absent unless signalled (DESIGN §4). */
cJSON *
term_exit_json(struct term *t)
{
	return term_ended(t) ? exitstatus_json(&t->job.exit, false) : NULL;
}

/* TerminalSnapshot, and tend's fields. */
cJSON *
term_status_json(struct term *t)
{
	struct job	*jb = &t->job;
	char		 ts[TIME_MAX];
	cJSON		*j;

	if ((j = job_status_head(jb)) == NULL)
		return NULL;
	cJSON_AddStringToObject(j, "status",
	    jb->state == JOB_RUNNING ? "running" : "exited");
	if (jb->state != JOB_RUNNING)
		cJSON_AddItemToObject(j, "exit", term_exit_json(t));
	cJSON_AddStringToObject(j, "bootId", jb->tab->boot);
	cJSON_AddNumberToObject(j, "cols", t->cols);
	cJSON_AddNumberToObject(j, "rows", t->rows);
	codec_time(ts, jb->started_ms);
	cJSON_AddStringToObject(j, "createdAt", ts);
	if (jb->state != JOB_RUNNING) {
		codec_time(ts, jb->ended_ms);
		cJSON_AddStringToObject(j, "endedAt", ts);
	} else
		cJSON_AddNullToObject(j, "endedAt");
	cJSON_AddNumberToObject(j, "outputBytes", (double)jb->rec.ls.end[0]);
	job_status_cgroup(jb, j);
	return j;
}

static cJSON *
term_kind_status(struct job *j, bool live)
{
	(void)live;
	return term_status_json(term_of(j));
}

/* ------------------------------------------------------------------ */
/* Create */

struct term *
term_create(struct termtab *tt, const struct term_opts *o, bool *spawn_failed,
    int *err)
{
	struct term	*t;
	char		 name[PTY_NAME_MAX];
	int		 master = -1;

	*spawn_failed = false;
	if (o->id != NULL && term_find(tt, o->id) != NULL) {
		*err = EEXIST;
		return NULL;
	}
	if (tt->jobs.nlive >= tt->jobs.maxlive) {
		*err = EAGAIN;
		return NULL;
	}
	job_trim(&tt->jobs);
	if ((t = term_new(tt, o)) == NULL) {
		*err = errno;
		return NULL;
	}
	if (pty_open(t->cols, t->rows, &master, name, sizeof(name)) == -1)
		goto fail;
	/* The job's from here: closed with it. */
	t->job.out[0] = master;
	if (term_exec(t, o, name, spawn_failed) == -1)
		goto fail;	/* a failed child is left to the reaper */
	/* A link planted under the ID, say: undone, the child killed. */
	if (record_open(&t->job.rec, &tt->jobs.recs, t->job.id,
	    o->keep ? o->keep : TERM_KEEP_BYTES) == -1) {
		*err = errno;
		(void)kill(t->job.pid, SIGKILL);
		errno = *err;
		goto fail;
	}
	term_begin(t, o);
	return t;
fail:
	*err = errno;
	job_free(&t->job);
	return NULL;
}

static struct term *
term_new(struct termtab *tt, const struct term_opts *o)
{
	struct term	*t;
	char		 shell[PATH_MAX];
	char		*dflt[] = { shell, NULL };
	int		 err;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->cols = o->cols ? o->cols : TERM_COLS_DEFAULT;
	t->rows = o->rows ? o->rows : TERM_ROWS_DEFAULT;
	if (o->argv == NULL && pty_default_shell(o->has_user ? o->uid :
	    getuid(), shell, sizeof(shell)) == -1) {
		err = errno;
		free(t);
		errno = err;
		return NULL;
	}
	if (job_init(&t->job, &tt->jobs, &term_kind, o->id, 't',
	    o->argv != NULL ? o->argv : dflt, o->cwd) == -1) {
		job_free(&t->job);
		errno = ENOMEM;
		return NULL;
	}
	t->job.limits = o->limits;
	return t;
}

/*
 * The child: a session of its own whose controlling terminal is the
 * slave (spawn's ctty), nothing else of the agent, the children's
 * limits.  The master is close-on-exec.
 */
static int
term_exec(struct term *t, const struct term_opts *o, const char *slave,
    bool *failed)
{
	struct spawn_opts	 so;

	memset(&so, 0, sizeof(so));
	so.argv = t->job.argv;
	so.cwd = o->cwd;
	so.fd[0] = so.fd[1] = so.fd[2] = -1;
	so.has_user = o->has_user;
	so.uid = o->uid;
	so.gid = o->gid;
	so.user = o->user;
	so.ctty = slave;
	so.confine = &o->confine;
	/* TERM unless the request sets it: not the agent's, the emulator's. */
	return job_spawn(&t->job, &so, o->env, TERM_TYPE, failed);
}

static void
term_begin(struct term *t, const struct term_opts *o)
{
	int	 master = t->job.out[0];
	char	*meta;

	job_begin(&t->job);
	job_out_start(&t->job, 0, master);
	job_in_start(&t->job, master, true);
	ev_timer_init(&t->endwait, term_endwait_cb, TERM_END_WAIT, 0.);
	job_grace_init(&t->job, TERM_KILL_GRACE);
	if ((meta = term_meta_json(t, o)) == NULL ||
	    record_set_meta(&t->job.rec, meta) == -1)
		log_warn("event=terminal_meta_failed id=%s", t->job.id);
	term_write_status(t);
	log_info("event=terminal_started id=%s pid=%d cols=%u rows=%u",
	    t->job.id, (int)t->job.pid, t->cols, t->rows);
	jobtab_tell(t->job.tab, &t->job, JOBTAB_EV_START);
}

/* meta.json: how it was made.  The environment by name only. */
static char *
term_meta_json(struct term *t, const struct term_opts *o)
{
	cJSON	*j, *a;

	if ((j = job_meta_json(&t->job, o->env, o->user)) == NULL)
		return NULL;
	cJSON_AddNumberToObject(j, "cols", t->cols);
	cJSON_AddNumberToObject(j, "rows", t->rows);
	cJSON_AddNumberToObject(j, "bufferSize",
	    (double)t->job.rec.ls.maxbytes);
	a = cJSON_AddObjectToObject(j, "options");
	spawn_confine_json(a, &o->confine, o->has_user, o->uid, o->gid);
	job_limits_json(&t->job.limits, a);
	return job_meta_text(&t->job, j);
}

/*
 * status.json at the start and at the end.  One the disk refuses is
 * not retried: the record then reads "running", and the next boot
 * marks it lost, which is what it is to a reader after a crash.
 */
static void
term_write_status(struct term *t)
{
	if (job_put_status(&t->job) == -1 && !record_in_memory(&t->job.rec))
		log_warn("event=terminal_status_failed id=%s", t->job.id);
}

/* ------------------------------------------------------------------ */
/* Output and the end */

/* A master's first EIO in a row is not yet its end (pty_eio_is_end). */
static bool
term_read_again(int err, bool *seen)
{
	return err == EIO && !pty_eio_is_end(seen);
}

/*
 * EIO (pty_eio_is_end) or 0 means the slave is closed and every byte
 * was read: once the leader is reaped too, that is the end.  Watchers
 * hear of the output before the end.
 */
static void
term_kind_drained(struct job *j, int s, bool grew, bool closed)
{
	(void)s;
	if (grew)
		job_notify(j, JOB_EV_OUTPUT);
	if (closed && j->reaped && j->state == JOB_RUNNING)
		term_end(term_of(j));
}

void
term_reaped(struct termtab *tt, pid_t pid, int wstatus)
{
	struct term	*t;

	if ((t = term_of(job_by_pid(&tt->jobs, pid))) == NULL)
		return;
	job_reap(&t->job, wstatus);
	log_info("event=terminal_exited id=%s pid=%d code=%d signal=%d",
	    t->job.id, (int)pid, t->job.exit.code, t->job.exit.signal);
	/* What the leader wrote is in the master now, EIO after it. */
	(void)job_drain(&t->job, 0, PROC_DRAIN_ALL);
	if (t->job.out[0] == -1) {
		if (t->job.state == JOB_RUNNING)
			term_end(t);
		return;
	}
	/*
	 * The slave is still open: a descendant of a leader that was not
	 * the controlling process (else the kernel hung it up).  The end
	 * waits for its EIO, not forever.
	 */
	ev_timer_start(tt->jobs.loop, &t->endwait);
}

static void
term_endwait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct term	*t = container_of(w, struct term, endwait);

	(void)loop;
	(void)revents;
	(void)job_drain(&t->job, 0, PROC_DRAIN_ALL);
	if (t->job.state != JOB_RUNNING)
		return;
	/* Closing the master hangs the slave up: the job gets SIGHUP. */
	log_info("event=terminal_end_forced id=%s msg=\"the slave is still "
	    "open after the leader exited\"", t->job.id);
	term_end(t);
}

static void
term_end(struct term *t)
{
	struct ev_loop	*loop = t->job.tab->loop;

	ev_timer_stop(loop, &t->endwait);
	job_out_end(&t->job, 0);
	logstore_seal(&t->job.rec.ls);
	job_ended(&t->job);
	/* Nobody left in the session: no KILL to send, nor to misdirect. */
	if (ev_is_active(&t->job.grace) &&
	    term_session_scan(t->job.pid, 0) == 0)
		ev_timer_stop(loop, &t->job.grace);
	term_write_status(t);
	log_info("event=terminal_ended id=%s code=%d bytes=%llu", t->job.id,
	    t->job.exit.code, (unsigned long long)t->job.rec.ls.end[0]);
	job_tell_end(&t->job);
}

static void
term_kind_end(struct job *j)
{
	term_end(term_of(j));
}

/* ------------------------------------------------------------------ */
/* Signals */

int
term_interrupt(struct term *t)
{
	pid_t	pg;

	if (t->job.state != JOB_RUNNING || t->job.out[0] == -1) {
		errno = ESRCH;
		return -1;
	}
	if ((pg = pty_foreground(t->job.out[0])) == -1)
		return -1;
	return kill(-pg, SIGINT);
}

/*
 * Every process whose session is sid gets sig (0: only counted): a
 * background job keeps the session but has a group of its own, and
 * neither group kill reaches it.  The number found.
 */
static int
term_session_scan(pid_t sid, int sig)
{
	struct dirent	*de;
	DIR		*d;
	char		 path[sizeof("/proc//stat") + NAME_MAX], st[512], *p;
	ssize_t		 n;
	long		 v;
	int		 fd, i, found = 0;

	if (sid <= 0 || (d = opendir("/proc")) == NULL)
		return 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		n = read(fd, st, sizeof(st) - 1);
		close(fd);
		if (n <= 0)
			continue;
		st[n] = '\0';
		/* "pid (comm) state ppid pgrp session": comm may hold ')'. */
		if ((p = strrchr(st, ')')) == NULL)
			continue;
		for (i = 0; i < 4 && p != NULL; i++)
			p = strchr(p + 1, ' ');
		if (p == NULL || (v = strtol(p + 1, NULL, 10)) != sid)
			continue;
		found++;
		if (sig != 0)
			(void)kill((pid_t)strtol(de->d_name, NULL, 10), sig);
	}
	closedir(d);
	return found;
}

int
term_signal_session(struct term *t, int sig)
{
	pid_t	pg;

	if (t->job.pid <= 0)
		return 0;
	(void)kill(-t->job.pid, sig);
	if (t->job.out[0] != -1 && (pg = pty_foreground(t->job.out[0])) > 0)
		(void)kill(-pg, sig);
	return term_session_scan(t->job.pid, sig);
}

static void
term_kind_signal(struct job *j, int sig)
{
	(void)term_signal_session(term_of(j), sig);
}

/*
 * HUP is what a terminal's end means to a shell and its jobs; TERM for
 * what ignores HUP (nohup); CONT so that a stopped job can act on them.
 */
int
term_terminate(struct term *t)
{
	if (job_running(&t->job) == -1)
		return -1;
	job_signal(&t->job, SIGHUP);
	job_signal(&t->job, SIGTERM);
	job_signal(&t->job, SIGCONT);
	job_grace_start(&t->job);
	log_info("event=terminal_terminate id=%s", t->job.id);
	return 0;
}

int
term_resize(struct term *t, unsigned int cols, unsigned int rows)
{
	if (t->job.state != JOB_RUNNING || t->job.out[0] == -1) {
		errno = ESRCH;
		return -1;
	}
	if (pty_resize(t->job.out[0], cols, rows) == -1)
		return -1;
	t->cols = cols;
	t->rows = rows;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Input: the job's queue, written to the master */

int
term_input(struct term *t, const void *d, size_t n)
{
	return job_input(&t->job, d, n, false);
}

/* ------------------------------------------------------------------ */
/* Removal and shutdown */

/* The engine freed the job's part: the terminal's own, then the memory. */
static void
term_kind_free(struct job *j)
{
	struct term	*t = term_of(j);

	ev_timer_stop(j->tab->loop, &t->endwait);
	free(t);
}

void
termtab_signal_all(struct termtab *tt, int sig)
{
	jobtab_signal_all(&tt->jobs, sig);
}

/* At shutdown: a reaped leader whose slave stayed open ends now. */
void
termtab_finalize(struct termtab *tt)
{
	jobtab_finalize(&tt->jobs);
}

/* ------------------------------------------------------------------ */
/* The agent's handover (core/handover.c) */

cJSON *
term_handover_save(struct term *t)
{
	cJSON	*o;

	if ((o = job_handover_save(&t->job)) == NULL)
		return NULL;
	cJSON_AddNumberToObject(o, "cols", t->cols);
	cJSON_AddNumberToObject(o, "rows", t->rows);
	cJSON_AddNumberToObject(o, "endwaitDeadline",
	    job_deadline(t->job.tab->loop, &t->endwait));
	return o;
}

/* A terminal the agent before this one ran, taken up; NULL and errno. */
struct term *
term_adopt(struct termtab *tt, const cJSON *o)
{
	struct term	*t;
	int		 err;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->cols = (unsigned)job_get_num(o, "cols", TERM_COLS_DEFAULT);
	t->rows = (unsigned)job_get_num(o, "rows", TERM_ROWS_DEFAULT);
	ev_timer_init(&t->endwait, term_endwait_cb, TERM_END_WAIT, 0.);
	if (job_adopt(&t->job, &tt->jobs, &term_kind, o,
	    TERM_KILL_GRACE) == -1) {
		err = errno;
		job_free(&t->job);	/* not in the table yet */
		errno = err;
		return NULL;
	}
	job_deadline_start(tt->loop, &t->endwait,
	    job_get_num(o, "endwaitDeadline", -1));
	return t;
}
