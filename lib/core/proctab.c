/*
 * proctab.c: the table of processes.
 *
 * A table of jobs (job.c) and what only processes need of theirs: the
 * boot's records' directory made (and made again when the state dir
 * takes it), the state dir's refusals retried every STATE_RETRY_S and
 * at shutdown, records' directories made ahead off the request path,
 * final statuses synced to disk by one syncfs, ended records' files
 * given back, the one /dev/null of stdin "null".  proc.c launches and
 * ends the processes; this module knows them only as jobs.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "events.h"
#include "proc.h"
#include "store/boot.h"

extern char **environ;

static int	proctab_boot_dir(struct proctab *);
static int	proctab_remake(struct record_dir *);
static void	proctab_set_procsfd(struct proctab *, int);
static void	proctab_retry_cb(struct ev_loop *, ev_timer *, int);
static int	proctab_syncfd(struct proctab *);
static void	proctab_sync_cb(struct ev_loop *, ev_timer *, int);
static int	proctab_catch_up(struct proctab *, struct job *);
static bool	proctab_spare_due(struct proctab *);
static void	proctab_spare_cb(struct ev_loop *, ev_idle *, int);
static void	proctab_sweep_cb(struct ev_loop *, ev_timer *, int);

/* The process of a job of the table (NULL for NULL: a list's end). */
static struct proc *
proctab_proc(struct job *j)
{
	return j != NULL ? container_of(j, struct proc, job) : NULL;
}

/* ------------------------------------------------------------------ */
/* The table */

int
proctab_init(struct proctab *t, struct ev_loop *loop, const char *boot,
    int statefd, int procsfd)
{
	struct jobtab	*jt = &t->jobs;
	size_t		 n = 0, i, k = 0;

	memset(t, 0, sizeof(*t));
	jobtab_init(jt, loop, boot, statefd);
	t->loop = loop;
	jt->recs.fd = procsfd;
	jt->recs.remake = proctab_remake;
	jt->maxlive = PROC_MAX_LIVE;
	jt->keep = PROC_KEEP_EXITED;
	jt->trim_at_end = true;
	jt->limits = &t->limits;
	t->maxlog = LOG_MAX_BYTES;
	t->devnull = -1;
	ev_timer_init(&t->sync, proctab_sync_cb, PROC_SYNC_DELAY, 0.);
	ev_timer_init(&t->sweep, proctab_sweep_cb, PROC_SWEEP, PROC_SWEEP);
	ev_timer_start(loop, &t->sweep);
	ev_unref(loop);		/* the sweep alone does not keep the loop */
	ev_timer_init(&t->retry, proctab_retry_cb, STATE_RETRY_S,
	    STATE_RETRY_S);
	ev_idle_init(&t->spare, proctab_spare_cb);
	if (procsfd == -1)
		(void)proctab_boot_dir(t);	/* or degraded: it retries */
	proctab_spare_soon(t);

	/* The base environment: the agent's, without its own TEND_* knobs. */
	while (environ[n] != NULL)
		n++;
	if ((jt->baseenv = calloc(n + 1, sizeof(char *))) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], "TEND_", 5) != 0)
			jt->baseenv[k++] = environ[i];
	spawn_limits_init(&t->limits);
	return 0;
}

void
proctab_free(struct proctab *t)
{
	struct ev_loop	*loop = t->jobs.loop;

	jobtab_free(&t->jobs);
	ev_ref(loop);
	ev_timer_stop(loop, &t->sweep);
	ev_timer_stop(loop, &t->sync);
	ev_timer_stop(loop, &t->retry);
	proctab_stop_spares(t);
	(void)syncfs(proctab_syncfd(t));
	proctab_set_procsfd(t, -1);
	if (t->devnull != -1)
		close(t->devnull);
	t->devnull = -1;
	free(t->jobs.baseenv);
	t->jobs.baseenv = NULL;
}

struct ev_loop *
proctab_loop(struct proctab *t)
{
	return t->jobs.loop;
}

const char *
proctab_boot(struct proctab *t)
{
	return t->jobs.boot;
}

int
proctab_statefd(struct proctab *t)
{
	return t->jobs.statefd;
}

void
proctab_stats(struct proctab *t, struct proctab_stats *st)
{
	st->running = t->jobs.nlive;
	st->kept = t->jobs.nlive + t->jobs.nended;
	st->started = t->jobs.started;
	st->exited = t->jobs.ended;
	st->orphans = t->orphans;
	st->stored = t->jobs.stored;
	st->dropped = t->jobs.dropped;
}

struct proc *
proctab_first(struct proctab *t)
{
	return proctab_proc(t->jobs.head);
}

/*
 * One of the table's own children (a sync, the spares' maker) reaped:
 * true, and nothing else to do for it.
 */
bool
proctab_reaped(struct proctab *t, pid_t pid, int wstatus)
{
	if (pid == t->sync_pid) {
		t->sync_pid = 0;
		return true;
	}
	if (record_pool_reaped(&t->jobs.recs, pid, wstatus,
	    ev_now(t->jobs.loop))) {
		proctab_spare_soon(t);
		return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* The state dir refusing writes */

/* The fd syncfs takes: any fd of the state dir's file system. */
static int
proctab_syncfd(struct proctab *t)
{
	return t->jobs.recs.fd != -1 ? t->jobs.recs.fd : t->jobs.statefd;
}

/* A procs fd the table made is the table's to close; one given is not. */
static void
proctab_set_procsfd(struct proctab *t, int fd)
{
	if (t->procsfd_ours && t->jobs.recs.fd != -1)
		close(t->jobs.recs.fd);
	t->jobs.recs.fd = fd;
	t->procsfd_ours = fd != -1;
}

/*
 * (Re)make the boot's directory: at start when the agent gives none, and
 * when its procs directory was removed under us.  Without it new records
 * live in memory only (record_open) and the retry timer tries again.
 */
static int
proctab_boot_dir(struct proctab *t)
{
	bool	again = t->jobs.recs.fd != -1 || t->jobs.recs.err != 0;
	int	fd, err;

	if (boot_create(t->jobs.statefd, t->jobs.boot, &fd) == -1) {
		err = errno;
		proctab_set_procsfd(t, -1);
		proctab_trouble(t, err);
		errno = err;
		return -1;
	}
	proctab_set_procsfd(t, fd);
	/* boot.json reaches the disk with the first syncfs, not before the
	 * socket listens. */
	proctab_sync_soon(t);
	if (again)
		log_info("event=boot_dir_made boot=%s", t->jobs.boot);
	return 0;
}

/* record's way back to us when the procs directory is gone. */
static int
proctab_remake(struct record_dir *d)
{
	return proctab_boot_dir(container_of(d, struct proctab, jobs.recs));
}

/* state.degraded (with the error), state.recovered. */
static void
proctab_tell_state(const char *type, int err)
{
	cJSON	*o = NULL;

	if (err != 0 && (o = cJSON_CreateObject()) != NULL)
		cJSON_AddStringToObject(o, "error", strerror(err));
	events_emit(type, o);
}

/* A write to the state dir failed: say so once, retry until it takes it. */
void
proctab_trouble(struct proctab *t, int err)
{
	if (t->jobs.recs.err == 0) {
		log_warnx("event=state_degraded err=\"%s\" msg=\"writes to the "
		    "state dir are retried every %gs\"", strerror(err),
		    STATE_RETRY_S);
		proctab_tell_state("state.degraded", err);
	}
	t->jobs.recs.err = err;
	if (!ev_is_active(&t->retry))
		ev_timer_start(t->jobs.loop, &t->retry);
}

/*
 * The boot's directory, then what each record owes, oldest first.  The
 * first failure ends the round: the disk still refuses, and the rest
 * would only fail as well.
 */
static void
proctab_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proctab	*t = container_of(w, struct proctab, retry);
	struct job	*j;

	(void)revents;
	if (t->jobs.recs.fd == -1 && proctab_boot_dir(t) == -1)
		return;
	for (j = t->jobs.head; j != NULL; j = j->next)
		if (proctab_catch_up(t, j) == -1) {
			t->jobs.recs.err = errno;
			return;
		}
	ev_timer_stop(loop, w);
	t->jobs.recs.err = 0;
	log_info("event=state_recovered");
	proctab_tell_state("state.recovered", 0);
}

int
proctab_state_error(struct proctab *t, bool *bootdir, int *pending)
{
	struct job	*j;
	int		 n = 0;

	for (j = t->jobs.head; j != NULL; j = j->next)
		if (record_owed(&j->rec))
			n++;
	if (bootdir != NULL)
		*bootdir = t->jobs.recs.fd != -1;
	if (pending != NULL)
		*pending = n;
	if (t->jobs.recs.fd != -1 && n == 0)
		return 0;
	return t->jobs.recs.err != 0 ? t->jobs.recs.err : EIO;
}

/*
 * What the record still owes the state dir: 0 when nothing (any more).
 * The status written is the one of now, so a late write is never stale.
 */
static int
proctab_catch_up(struct proctab *t, struct job *j)
{
	if (record_put_meta(&j->rec) == -1)
		return -1;
	if (!record_status_failed(&j->rec))
		return 0;
	if (job_put_status(j) == -1)
		return -1;
	if (j->state != JOB_RUNNING)
		proctab_sync_soon(t);	/* a final one, late */
	log_info("event=status_written id=%s late=1", j->id);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Records' directories, syncs, files given back, /dev/null */

/*
 * Records' directories are made ahead, off the request path, after a
 * status write: by then the launch that took the last one has replied
 * (a short exec has ended) — not while a child that was just launched
 * may be about to exit and be replied to.  A child of the agent makes
 * them (record_pool_fill), so that their creates are on no loop at all;
 * the fork is the loop's, once per RECORD_POOL launches.  While no
 * child can, the loop makes the spare when it has nothing else to do,
 * one create at a time (record_spare_make).
 */
static bool
proctab_spare_due(struct proctab *t)
{
	switch (record_pool_want(&t->jobs.recs, ev_now(t->jobs.loop))) {
	case 1:
		return true;
	case 0:
		return false;
	default:
		return !record_spare_ready(&t->jobs.recs);
	}
}

void
proctab_spare_soon(struct proctab *t)
{
	if (!t->nospares && proctab_spare_due(t) && !ev_is_active(&t->spare))
		ev_idle_start(t->jobs.loop, &t->spare);
}

static void
proctab_spare_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct proctab	*t = container_of(w, struct proctab, spare);

	(void)revents;
	switch (record_pool_want(&t->jobs.recs, ev_now(loop))) {
	case 1:
		if (record_pool_fill(&t->jobs.recs, ev_now(loop)) == 0) {
			ev_idle_stop(loop, w);
			return;
		}
		log_warn("event=spares_failed");
		break;
	case 0:
		ev_idle_stop(loop, w);
		return;
	}
	/* None made: the next launch makes its directory itself. */
	if (record_spare_make(&t->jobs.recs) != 1)
		ev_idle_stop(loop, w);
}

/* Not while a child just launched may be about to exit (spare_soon). */
void
proctab_spare_pause(struct proctab *t)
{
	ev_idle_stop(t->jobs.loop, &t->spare);
}

void
proctab_sync_soon(struct proctab *t)
{
	if (ev_is_active(&t->sync))
		return;
	/* A stopped one-shot timer keeps its spent time: set anew. */
	ev_timer_set(&t->sync, PROC_SYNC_DELAY, 0.);
	ev_timer_start(t->jobs.loop, &t->sync);
}

/* One sync at a time: one still running covers what the next would. */
static void
proctab_sync_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proctab	*t = container_of(w, struct proctab, sync);
	pid_t		 pid;

	(void)revents;
	if (t->sync_pid > 0) {
		ev_timer_set(w, PROC_SYNC_DELAY, 0.);
		ev_timer_start(loop, w);
		return;
	}
	if ((pid = record_sync(proctab_syncfd(t))) == -1)
		log_warn("event=syncfs_failed");
	t->sync_pid = pid > 0 ? pid : 0;
}

/* One-shot readers leave files open: give them back now and then. */
static void
proctab_sweep_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proctab	*t = container_of(w, struct proctab, sweep);
	struct job	*j;

	(void)loop;
	(void)revents;
	for (j = t->jobs.head; j != NULL; j = j->next)
		(void)job_release_fds(j);
}

/*
 * One /dev/null, opened at the first launch that needs it and kept: an
 * open and a close less per launch.  Above 2, because posix_spawn's dup2
 * onto the same number would leave its FD_CLOEXEC set.
 */
int
proctab_devnull(struct proctab *t)
{
	int	fd, saved;

	if (t->devnull != -1)
		return t->devnull;
	if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if (fd <= 2) {
		t->devnull = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		saved = errno;
		close(fd);
		errno = saved;
	} else
		t->devnull = fd;
	return t->devnull;
}

/* ------------------------------------------------------------------ */
/* Shutdown */

void
proctab_signal_all(struct proctab *t, int sig)
{
	jobtab_signal_all(&t->jobs, sig);
}

void
proctab_stop_spares(struct proctab *t)
{
	t->nospares = true;
	ev_idle_stop(t->jobs.loop, &t->spare);
	record_pool_drop(&t->jobs.recs);
	record_spare_drop(&t->jobs.recs);
	t->jobs.recs.spare.off = true;	/* nor a removed record recycled */
}

/*
 * At shutdown every group was killed and reaped: settle what is left
 * (a member we could not see end) so that each record has a final status.
 */
void
proctab_finalize(struct proctab *t)
{
	struct job	*j;
	int		 owed = 0;

	jobtab_finalize(&t->jobs);
	/*
	 * After the agent nobody retries: one more try for what is owed,
	 * until the disk refuses again.  What is left becomes "lost".
	 */
	if (t->jobs.recs.fd == -1)
		(void)proctab_boot_dir(t);
	for (j = t->jobs.head; j != NULL; j = j->next) {
		if (!record_owed(&j->rec))
			continue;
		if (owed == 0 && proctab_catch_up(t, j) == 0)
			continue;
		if (owed++ == 0)
			t->jobs.recs.err = errno;
	}
	if (owed > 0)
		log_warnx("event=statuses_not_written count=%d err=\"%s\"",
		    owed, strerror(t->jobs.recs.err != 0 ? t->jobs.recs.err :
		    EIO));
}
