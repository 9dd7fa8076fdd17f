/*
 * proc.c: the process table.
 *
 * Owns the records of this boot in memory and their lifecycle: launch
 * (the child itself is spawn's), the output pipes drained into each
 * record's store whether or not anyone reads, stdin, timeouts and kills,
 * the exit, and the end: a record stays "running" until its root was
 * reaped (the agent's one reap loop hands every pid to proc_reaped())
 * and no member of its group is left (the group has settled).  Who is
 * told: each record's watchers, and the table's subscribers.  The files
 * are record's; this module decides when they are written, retried,
 * given back and removed.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/codec.h"
#include "base/jsonstr.h"
#include "base/log.h"
#include "base/util.h"
#include "base/wlist.h"
#include "proc.h"
#include "store/boot.h"

extern char **environ;

/* The pipes of a launch: pipe2 pairs ([0] reads), -1 where there is none. */
struct proc_pipes {
	int	out[2], err[2], in[2];
	int	null;		/* the table's /dev/null for stdin "null" */
};

/* One event for every subscriber. */
struct proctab_news {
	struct proc		*p;
	enum proctab_event	 ev;
};

static struct proc *proc_new(struct proctab *, const struct proc_opts *);
static int	proc_pipes_open(struct proctab *, struct proc_pipes *, bool);
static int	proc_devnull(struct proctab *);
static void	proc_pipes_close(struct proc_pipes *);
static int	proc_exec(struct proc *, const struct proc_opts *,
		    const struct proc_pipes *, bool *);
static void	proc_begin(struct proc *, const struct proc_opts *,
		    struct proc_pipes *);
static void	proc_out_cb(struct ev_loop *, ev_io *, int);
static void	proc_outwait_cb(struct ev_loop *, ev_timer *, int);
static void	proc_in_cb(struct ev_loop *, ev_io *, int);
static void	proc_timeout_cb(struct ev_loop *, ev_timer *, int);
static void	proc_grace_cb(struct ev_loop *, ev_timer *, int);
static void	proc_settle_cb(struct ev_loop *, ev_timer *, int);
static size_t	proc_drain(struct proc *, int, int);
static bool	proc_group_empty(struct proc *);
static int	proc_group_kill(struct proc *, int);
static void	proc_check_settled(struct proc *);
static void	proc_settle(struct proc *);
static void	proc_notify(struct proc *, enum proc_event);
static void	proctab_tell(struct proctab *, struct proc *,
		    enum proctab_event);
static bool	proc_watched(struct proc *);
static int	proc_open_record(struct proc *, uint64_t);
static void	proc_write_meta(struct proc *, const struct proc_opts *);
static char	*proc_meta_json(struct proc *, const struct proc_opts *);
static void	proc_write_status(struct proc *, bool);
static int	proc_put_status(struct proc *);
static int	proc_catch_up(struct proc *);
static cJSON	*proc_status_build(struct proc *, bool);
static void	proc_forget(struct proc *);
static void	proc_free(struct proc *);
static int	proctab_boot_dir(struct proctab *);
static int	proctab_remake(struct record_dir *);
static void	proctab_set_procsfd(struct proctab *, int);
static void	proctab_trouble(struct proctab *, int);
static void	proctab_retry_cb(struct ev_loop *, ev_timer *, int);
static int	proctab_syncfd(struct proctab *);
static void	proctab_sync_soon(struct proctab *);
static void	proc_trim_exited(struct proctab *);
static void	proc_trim_cb(struct ev_loop *, ev_prepare *, int);
static void	proc_sync_cb(struct ev_loop *, ev_timer *, int);
static void	proc_first_status_cb(struct ev_loop *, ev_timer *, int);
static bool	proctab_spare_due(struct proctab *);
static void	proctab_spare_soon(struct proctab *);
static void	proctab_spare_cb(struct ev_loop *, ev_idle *, int);
static void	proc_sweep_cb(struct ev_loop *, ev_timer *, int);
static bool	proc_release_fds(struct proc *);
static void	proc_stdin_flush(struct proc *);
static void	proc_stdin_close(struct proc *);
static void	proc_stdin_wake(struct proc *, int);

/* ------------------------------------------------------------------ */
/* The table */

int
proctab_init(struct proctab *t, struct ev_loop *loop, const char *boot,
    int statefd, int procsfd)
{
	size_t	n = 0, i, k = 0;

	memset(t, 0, sizeof(*t));
	t->loop = loop;
	snprintf(t->boot, sizeof(t->boot), "%s", boot);
	t->statefd = statefd;
	t->recs.fd = procsfd;
	t->recs.remake = proctab_remake;
	t->maxlive = PROC_MAX_LIVE;
	t->keep_exited = PROC_KEEP_EXITED;
	t->maxlog = LOG_MAX_BYTES;
	t->devnull = -1;
	ev_prepare_init(&t->trim, proc_trim_cb);
	ev_timer_init(&t->sync, proc_sync_cb, PROC_SYNC_DELAY, 0.);
	ev_timer_init(&t->sweep, proc_sweep_cb, PROC_SWEEP, PROC_SWEEP);
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
	if ((t->baseenv = calloc(n + 1, sizeof(char *))) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], "TEND_", 5) != 0)
			t->baseenv[k++] = environ[i];
	spawn_limits_init(&t->limits);
	return 0;
}

void
proctab_free(struct proctab *t)
{
	struct proc	*p, *next;

	for (p = t->head; p != NULL; p = next) {
		next = p->next;
		proc_free(p);
	}
	while (t->subs != NULL)
		proctab_unsubscribe(container_of(t->subs, struct proctab_sub,
		    link));
	ev_prepare_stop(t->loop, &t->trim);
	ev_ref(t->loop);
	ev_timer_stop(t->loop, &t->sweep);
	ev_timer_stop(t->loop, &t->sync);
	ev_timer_stop(t->loop, &t->retry);
	proctab_stop_spares(t);
	(void)syncfs(proctab_syncfd(t));
	proctab_set_procsfd(t, -1);
	if (t->devnull != -1)
		close(t->devnull);
	t->devnull = -1;
	free(t->baseenv);
	t->baseenv = NULL;
}

struct ev_loop *
proctab_loop(struct proctab *t)
{
	return t->loop;
}

const char *
proctab_boot(struct proctab *t)
{
	return t->boot;
}

int
proctab_statefd(struct proctab *t)
{
	return t->statefd;
}

void
proctab_stats(struct proctab *t, struct proctab_stats *st)
{
	st->running = t->nlive;
	st->kept = t->nlive + t->nexited;
	st->started = t->started;
	st->exited = t->exited;
	st->orphans = t->orphans;
	st->stored = t->stored;
	st->dropped = t->dropped;
}

struct proc *
proctab_first(struct proctab *t)
{
	return t->head;
}

struct proc *
proc_next(struct proc *p)
{
	return p->next;
}

/* ------------------------------------------------------------------ */
/* The state dir refusing writes */

/* The fd syncfs takes: any fd of the state dir's file system. */
static int
proctab_syncfd(struct proctab *t)
{
	return t->recs.fd != -1 ? t->recs.fd : t->statefd;
}

/* A procs fd the table made is the table's to close; one given is not. */
static void
proctab_set_procsfd(struct proctab *t, int fd)
{
	if (t->procsfd_ours && t->recs.fd != -1)
		close(t->recs.fd);
	t->recs.fd = fd;
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
	bool	again = t->recs.fd != -1 || t->recs.err != 0;
	int	fd, err;

	if (boot_create(t->statefd, t->boot, &fd) == -1) {
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
		log_info("event=boot_dir_made boot=%s", t->boot);
	return 0;
}

/* record's way back to us when the procs directory is gone. */
static int
proctab_remake(struct record_dir *d)
{
	return proctab_boot_dir(container_of(d, struct proctab, recs));
}

/* A write to the state dir failed: say so once, retry until it takes it. */
static void
proctab_trouble(struct proctab *t, int err)
{
	if (t->recs.err == 0)
		log_warnx("event=state_degraded err=\"%s\" msg=\"writes to the "
		    "state dir are retried every %gs\"", strerror(err),
		    STATE_RETRY_S);
	t->recs.err = err;
	if (!ev_is_active(&t->retry))
		ev_timer_start(t->loop, &t->retry);
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
	struct proc	*p;

	(void)revents;
	if (t->recs.fd == -1 && proctab_boot_dir(t) == -1)
		return;
	for (p = t->head; p != NULL; p = p->next)
		if (proc_catch_up(p) == -1) {
			t->recs.err = errno;
			return;
		}
	ev_timer_stop(loop, w);
	t->recs.err = 0;
	log_info("event=state_recovered");
}

int
proctab_state_error(struct proctab *t, bool *bootdir, int *pending)
{
	struct proc	*p;
	int		 n = 0;

	for (p = t->head; p != NULL; p = p->next)
		if (record_owed(&p->rec))
			n++;
	if (bootdir != NULL)
		*bootdir = t->recs.fd != -1;
	if (pending != NULL)
		*pending = n;
	if (t->recs.fd != -1 && n == 0)
		return 0;
	return t->recs.err != 0 ? t->recs.err : EIO;
}

/* ------------------------------------------------------------------ */
/* Who is told: watchers of a record, subscribers of the table */

void
proc_watch_add(struct proc *p, struct proc_watch *w,
    void (*fn)(struct proc_watch *, enum proc_event))
{
	w->proc = p;
	w->fn = fn;
	w->link.mark = false;
	wlist_add(&p->watchers, &w->link);
}

void
proc_watch_del(struct proc_watch *w)
{
	struct proc	*p = w->proc;

	if (p == NULL)
		return;
	wlist_del(&p->watchers, &w->link);
	w->proc = NULL;
	(void)proc_release_fds(p);
}

/* Anyone watching (a walk's mark is no one). */
static bool
proc_watched(struct proc *p)
{
	struct wlist_link	*l;

	for (l = p->watchers; l != NULL; l = l->next)
		if (!l->mark)
			return true;
	return false;
}

static void
proc_tell_watch(struct wlist_link *l, void *arg)
{
	struct proc_watch	*w = container_of(l, struct proc_watch, link);

	w->fn(w, *(enum proc_event *)arg);
}

/* A watcher that left during the walk may have been the last one. */
static void
proc_notify(struct proc *p, enum proc_event ev)
{
	if (wlist_walk(&p->watchers, proc_tell_watch, &ev))
		(void)proc_release_fds(p);
}

void
proctab_subscribe(struct proctab *t, struct proctab_sub *s,
    void (*fn)(struct proctab_sub *, struct proc *, enum proctab_event))
{
	s->tab = t;
	s->fn = fn;
	s->link.mark = false;
	wlist_add(&t->subs, &s->link);
}

void
proctab_unsubscribe(struct proctab_sub *s)
{
	if (s->tab == NULL)
		return;
	wlist_del(&s->tab->subs, &s->link);
	s->tab = NULL;
}

static void
proctab_tell_sub(struct wlist_link *l, void *arg)
{
	struct proctab_sub	*s = container_of(l, struct proctab_sub, link);
	struct proctab_news	*n = arg;

	s->fn(s, n->p, n->ev);
}

static void
proctab_tell(struct proctab *t, struct proc *p, enum proctab_event ev)
{
	struct proctab_news	n = { p, ev };

	(void)wlist_walk(&t->subs, proctab_tell_sub, &n);
}

/* ------------------------------------------------------------------ */
/* Records by ID, and what they say of themselves */

bool
proc_id_valid(const char *id)
{
	return record_id_valid(id);
}

/*
 * Two chained hashes beside the launch-order list, so that a lookup does
 * not walk a thousand kept records: every record by its ID, and each
 * root not yet reaped by its pid (the reaper's question).
 */
static struct proc **
proc_id_bucket(struct proctab *t, const char *id)
{
	uint32_t	h = 2166136261u;	/* FNV-1a */

	while (*id != '\0')
		h = (h ^ (unsigned char)*id++) * 16777619u;
	return &t->byid[h & (PROC_HASH - 1)];
}

static struct proc **
proc_pid_bucket(struct proctab *t, pid_t pid)
{
	return &t->bypid[(uint32_t)pid & (PROC_HASH - 1)];
}

static void
proc_pid_unhash(struct proc *p)
{
	struct proc	**pp;

	for (pp = proc_pid_bucket(p->tab, p->pid); *pp != NULL;
	    pp = &(*pp)->pidnext)
		if (*pp == p) {
			*pp = p->pidnext;
			return;
		}
}

/* Into the list and the hashes, once it has a process. */
static void
proc_link(struct proc *p)
{
	struct proctab	*t = p->tab;
	struct proc	**b;

	p->prev = t->tail;
	if (t->tail != NULL)
		t->tail->next = p;
	else
		t->head = p;
	t->tail = p;
	b = proc_id_bucket(t, p->id);
	p->idnext = *b;
	*b = p;
	b = proc_pid_bucket(t, p->pid);
	p->pidnext = *b;
	*b = p;
}

static void
proc_unlink(struct proc *p)
{
	struct proctab	*t = p->tab;
	struct proc	**pp;

	if (p->prev != NULL)
		p->prev->next = p->next;
	else
		t->head = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	else
		t->tail = p->prev;
	for (pp = proc_id_bucket(t, p->id); *pp != NULL; pp = &(*pp)->idnext)
		if (*pp == p) {
			*pp = p->idnext;
			break;
		}
	if (!p->reaped)
		proc_pid_unhash(p);
}

struct proc *
proc_find(struct proctab *t, const char *id)
{
	struct proc	*p;

	for (p = *proc_id_bucket(t, id); p != NULL; p = p->idnext)
		if (strcmp(p->id, id) == 0)
			return p;
	return NULL;
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

const char *
proc_id(struct proc *p)
{
	return p->id;
}

enum proc_state
proc_state(struct proc *p)
{
	return p->state;
}

int64_t
proc_started_ms(struct proc *p)
{
	return p->started_ms;
}

pid_t
proc_pid(struct proc *p)
{
	return p->pid;
}

const char *
proc_boot(struct proc *p)
{
	return p->tab->boot;
}

bool
proc_ended(struct proc *p, enum proc_end what)
{
	switch (what) {
	case PROC_END_ROOT:
		return p->reaped;
	case PROC_END_STATE:
		return p->state != PROC_RUNNING;
	case PROC_END_OUTPUT:
		return p->state != PROC_RUNNING && proc_output_done(p);
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
	if (t->nlive >= t->maxlive) {
		*err = EAGAIN;
		return NULL;
	}
	if ((p = proc_new(t, o)) == NULL) {
		*err = errno;
		return NULL;
	}
	/* Not while this child may be about to exit: see proctab_spare_soon. */
	ev_idle_stop(t->loop, &t->spare);
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
	return p;

fail:
	*err = errno;
	proc_pipes_close(&pp);
	proc_free(p);		/* no record remains: the ID can be used again */
	return NULL;
}

/* The record in memory, before it has a process. */
static struct proc *
proc_new(struct proctab *t, const struct proc_opts *o)
{
	struct proc	*p;
	char		 cwd[PATH_MAX], hex[13];
	unsigned char	 r[6];

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->tab = t;
	p->in = -1;
	p->out[0] = p->out[1] = -1;
	record_init(&p->rec);
	if (o->id != NULL)
		snprintf(p->id, sizeof(p->id), "%s", o->id);
	else
		do {
			arc4random_buf(r, sizeof(r));
			codec_hex(hex, r, sizeof(r));
			snprintf(p->id, sizeof(p->id), "p%s", hex);
		} while (proc_find(t, p->id) != NULL);
	p->grace_s = o->grace_s;
	p->timeout_kill = o->timeout_kill;
	p->stdin_pipe = o->stdin_pipe;
	p->argv = spawn_strvdup(o->argv);
	p->cwd = strdup(o->cwd != NULL ? o->cwd :
	    getcwd(cwd, sizeof(cwd)) != NULL ? cwd : "/");
	/*
	 * Kept as text, emitted raw: a parsed tree costs several times its
	 * size for as long as the record is kept.
	 */
	p->tags = o->tags ? cJSON_PrintUnformatted(o->tags) : strdup("{}");
	if (p->argv == NULL || p->cwd == NULL || p->tags == NULL) {
		proc_free(p);
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

static int
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
	return proc_devnull(t) == -1 ? -1 : 0;
}

/*
 * One /dev/null, opened at the first launch that needs it and kept: an
 * open and a close less per launch.  Above 2, because posix_spawn's dup2
 * onto the same number would leave its FD_CLOEXEC set.
 */
static int
proc_devnull(struct proctab *t)
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

static void
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
static int
proc_exec(struct proc *p, const struct proc_opts *o,
    const struct proc_pipes *pp, bool *failed)
{
	struct spawn_opts	 so;
	char			**envp;
	pid_t			 pid;
	int			 err;

	if ((envp = spawn_envp(p->tab->baseenv, o->env, NULL)) == NULL)
		return -1;
	memset(&so, 0, sizeof(so));
	so.argv = o->argv;
	so.envp = envp;
	so.cwd = o->cwd;
	so.fd[0] = o->stdin_pipe ? pp->in[0] : p->tab->devnull;
	so.fd[1] = pp->out[1];
	so.fd[2] = pp->err[1];
	so.setsid = true;
	so.closefds = true;
	so.has_user = o->has_user;
	so.uid = o->uid;
	so.gid = o->gid;
	so.user = o->user;
	so.confine = &o->confine;
	so.limits = &p->tab->limits;
	pid = spawn_start(&so, failed);
	err = errno;
	free(envp);
	errno = err;
	if (pid == -1)
		return -1;
	p->pid = pid;
	return 0;
}

/* The launch took: the record goes live, in the table. */
static void
proc_begin(struct proc *p, const struct proc_opts *o, struct proc_pipes *pp)
{
	struct proctab	*t = p->tab;
	int		 i;

	p->started_ms = codec_now_ms();
	p->state = PROC_RUNNING;
	p->out[0] = pp->out[0];
	p->out[1] = pp->err[0];
	close(pp->out[1]);
	close(pp->err[1]);
	if (pp->null != -1)
		close(pp->null);
	if (o->stdin_pipe) {
		close(pp->in[0]);
		p->in = pp->in[1];
		ev_io_init(&p->inio, proc_in_cb, p->in, EV_WRITE);
	}
	for (i = 0; i < LS_NSTREAMS; i++) {
		ev_io_init(&p->outio[i], proc_out_cb, p->out[i], EV_READ);
		p->outio[i].data = p;
		ev_io_start(t->loop, &p->outio[i]);
		ev_timer_init(&p->outwait[i], proc_outwait_cb, LOG_READ_WAIT, 0.);
		p->outwait[i].data = p;
	}
	ev_timer_init(&p->timeout, proc_timeout_cb, o->timeout_s, 0.);
	ev_timer_init(&p->grace, proc_grace_cb, p->grace_s, 0.);
	ev_timer_init(&p->settle, proc_settle_cb, PROC_SETTLE_POLL,
	    PROC_SETTLE_POLL);
	p->settle_soon = PROC_SETTLE_SOON;
	if (o->timeout_s > 0)
		ev_timer_start(t->loop, &p->timeout);

	proc_link(p);
	t->nlive++;
	t->started++;
	proc_write_meta(p, o);
	/*
	 * The first status waits a moment: a process that ends by then gets
	 * its final status as the first and only write (one file created,
	 * no replace), which is most of the cost of a short exec.
	 */
	ev_timer_init(&p->first_status, proc_first_status_cb,
	    PROC_FIRST_STATUS, 0.);
	ev_timer_start(t->loop, &p->first_status);
	log_info("event=process_started id=%s pid=%d", p->id, (int)p->pid);
	proctab_tell(t, p, PROCTAB_EV_START);
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

	switch (record_open(&p->rec, &p->tab->recs, p->id, maxlog)) {
	case -1:
		return -1;
	case 1:
		err = errno;
		log_warnx("event=record_in_memory id=%s err=\"%s\"", p->id,
		    strerror(err));
		proctab_trouble(p->tab, err);
		break;
	}
	return 0;
}

/*
 * meta.json: how the process was launched.  The environment is recorded
 * by name only: values may be secrets.
 */
static char *
proc_meta_json(struct proc *p, const struct proc_opts *o)
{
	char	 ts[TIME_MAX], *s, *name;
	cJSON	*j, *a;
	size_t	 i;

	j = cJSON_CreateObject();
	(void)jsonstr_add_strv(j, "argv", p->argv);
	(void)jsonstr_add_bytes(j, "cwd", p->cwd);
	a = cJSON_AddArrayToObject(j, "env");
	for (i = 0; o->env != NULL && o->env[i] != NULL; i++) {
		name = strndup(o->env[i], strcspn(o->env[i], "="));
		cJSON_AddItemToArray(a, cJSON_CreateString(name));
		free(name);
	}
	if (o->user != NULL)
		cJSON_AddStringToObject(j, "user", o->user);
	else
		cJSON_AddNullToObject(j, "user");
	a = cJSON_AddObjectToObject(j, "options");
	cJSON_AddStringToObject(a, "stdin", o->stdin_pipe ? "pipe" : "null");
	if (o->timeout_s > 0)
		cJSON_AddNumberToObject(a, "timeout", o->timeout_s * 1000);
	cJSON_AddNumberToObject(a, "killGrace", o->grace_s * 1000);
	cJSON_AddNumberToObject(a, "maxLogBytes", (double)p->rec.ls.maxbytes);
	spawn_confine_json(a, &o->confine, o->has_user, o->uid, o->gid);
	cJSON_AddRawToObject(j, "tags", p->tags);
	codec_time(ts, p->started_ms);
	cJSON_AddStringToObject(j, "created_at", ts);
	cJSON_AddStringToObject(j, "bootId", p->tab->boot);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

/* Kept in memory until written. */
static void
proc_write_meta(struct proc *p, const struct proc_opts *o)
{
	char	*s;
	int	 err;

	if ((s = proc_meta_json(p, o)) == NULL) {
		log_warnx("event=meta_write_failed id=%s err=\"out of memory\"",
		    p->id);
		return;
	}
	if (record_set_meta(&p->rec, s) == -1) {
		err = errno;
		/* A record in memory said so already (proc_open_record). */
		if (!record_in_memory(&p->rec))
			log_warn("event=meta_write_failed id=%s", p->id);
		proctab_trouble(p->tab, err);
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
static void
proc_write_status(struct proc *p, bool final)
{
	bool	was_failed = record_status_failed(&p->rec);
	int	err;

	p->status_written = true;
	proctab_spare_soon(p->tab);
	if (proc_put_status(p) == -1) {
		err = errno;
		if (!was_failed && !record_in_memory(&p->rec))
			log_warn("event=status_write_failed id=%s", p->id);
		proctab_trouble(p->tab, err);
	}
	if (final)
		proctab_sync_soon(p->tab);
}

/* The status of now, written. */
static int
proc_put_status(struct proc *p)
{
	cJSON	*j;
	char	*s = NULL;
	int	 rc, err;

	if ((j = proc_status_build(p, false)) != NULL)
		s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	rc = record_put_status(&p->rec, s);
	err = errno;
	free(s);
	errno = err;
	return rc;
}

/*
 * What the record still owes the state dir: 0 when nothing (any more).
 * The status written is the one of now, so a late write is never stale.
 */
static int
proc_catch_up(struct proc *p)
{
	if (record_put_meta(&p->rec) == -1)
		return -1;
	if (!record_status_failed(&p->rec))
		return 0;
	if (proc_put_status(p) == -1)
		return -1;
	if (p->state != PROC_RUNNING)
		proctab_sync_soon(p->tab);	/* a final one, late */
	log_info("event=status_written id=%s late=1", p->id);
	return 0;
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
	switch (record_pool_want(&t->recs, ev_now(t->loop))) {
	case 1:
		return true;
	case 0:
		return false;
	default:
		return !record_spare_ready(&t->recs);
	}
}

static void
proctab_spare_soon(struct proctab *t)
{
	if (!t->nospares && proctab_spare_due(t) && !ev_is_active(&t->spare))
		ev_idle_start(t->loop, &t->spare);
}

static void
proctab_spare_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	struct proctab	*t = container_of(w, struct proctab, spare);

	(void)revents;
	switch (record_pool_want(&t->recs, ev_now(loop))) {
	case 1:
		if (record_pool_fill(&t->recs, ev_now(loop)) == 0) {
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
	if (record_spare_make(&t->recs) != 1)
		ev_idle_stop(loop, w);
}

static void
proctab_sync_soon(struct proctab *t)
{
	if (ev_is_active(&t->sync))
		return;
	/* A stopped one-shot timer keeps its spent time: set anew. */
	ev_timer_set(&t->sync, PROC_SYNC_DELAY, 0.);
	ev_timer_start(t->loop, &t->sync);
}

/* One sync at a time: one still running covers what the next would. */
static void
proc_sync_cb(struct ev_loop *loop, ev_timer *w, int revents)
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

/*
 * An ended record whose output reached EOF and that nobody watches gives
 * its four fds back: with a thousand records kept they would fill the fd
 * table, and every spawn pays for the table's size.  Readers reopen them
 * with proc_store().
 */
static bool
proc_release_fds(struct proc *p)
{
	if (p->state == PROC_RUNNING || !proc_output_done(p) ||
	    proc_watched(p))
		return false;
	return record_release(&p->rec);
}

struct logstore *
proc_store(struct proc *p)
{
	return record_store(&p->rec);
}

/* One-shot readers leave files open: give them back now and then. */
static void
proc_sweep_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proctab	*t = container_of(w, struct proctab, sweep);
	struct proc	*p;

	(void)loop;
	(void)revents;
	for (p = t->head; p != NULL; p = p->next)
		(void)proc_release_fds(p);
}

/* ------------------------------------------------------------------ */
/* Output */

/*
 * A short read means the process writes a little at a time, and reading
 * each write as it comes costs a wakeup, a read and two pwrites per write
 * (a byte at a time: most of a core).  So after a short read the pipe
 * rests LOG_READ_WAIT before it is read again: the writes of that moment
 * are taken in one read.  The first bytes after a quiet spell are read at
 * once, later ones wait a few ms at most; the pipe (PROC_PIPE_SIZE) holds
 * far more than a process that writes in small pieces puts in it meanwhile.
 * The exit paths drain without waiting (proc_drain_now).
 */
static void
proc_out_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct proc	*p = w->data;
	int		 s = w == &p->outio[0] ? 0 : 1;

	(void)revents;
	if (proc_drain(p, s, PROC_DRAIN_ROUNDS) < LOG_READ_SMALL &&
	    p->out[s] != -1) {
		ev_io_stop(loop, w);
		/* Set again: a stopped timer keeps what was left of it. */
		ev_timer_set(&p->outwait[s], LOG_READ_WAIT, 0.);
		ev_timer_start(loop, &p->outwait[s]);
	}
}

static void
proc_outwait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proc	*p = w->data;
	int		 s = w == &p->outwait[0] ? 0 : 1;

	(void)revents;
	if (p->out[s] != -1)
		ev_io_start(loop, &p->outio[s]);
}

/*
 * Move what the pipe holds into the store, at most `rounds` reads (so
 * that one chatty process does not starve the loop).  Followers are told
 * once per call.  Returns the bytes taken.
 */
static size_t
proc_drain(struct proc *p, int s, int rounds)
{
	struct proctab	*t = p->tab;
	struct logstore	*ls = &p->rec.ls;
	uint64_t	 nrec = ls->nrec, end = ls->end[s];
	uint64_t	 dropped = ls->dropped;
	size_t		 taken = 0;
	ssize_t		 n;
	bool		 done;

	if (p->out[s] == -1)
		return 0;	/* at EOF already: told once */

	while (p->out[s] != -1 && rounds-- > 0) {
		n = logstore_drain(ls, s, p->out[s]);
		if (n > 0) {
			taken += (size_t)n;
			continue;
		}
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			break;
		/* EOF, or a read error of the pipe: the stream is over. */
		ev_io_stop(t->loop, &p->outio[s]);
		ev_timer_stop(t->loop, &p->outwait[s]);
		close(p->out[s]);
		p->out[s] = -1;
	}
	(void)logstore_flush(ls);
	t->stored += ls->end[s] - end;
	t->dropped += ls->dropped - dropped;
	done = p->out[s] == -1 && proc_output_done(p);
	/*
	 * The last status first: a watcher told of the output may end and
	 * let the record give back its files (proc_release_fds).
	 */
	if (done && p->state != PROC_RUNNING)
		proc_write_status(p, true);
	if (ls->nrec != nrec || ls->end[s] != end)	/* new or grown */
		proc_notify(p, PROC_EV_OUTPUT);
	if (done)
		proc_notify(p, PROC_EV_EOF);
	return taken;
}

void
proc_drain_now(struct proc *p)
{
	int	s;

	for (s = 0; s < LS_NSTREAMS; s++)
		proc_drain(p, s, PROC_DRAIN_ALL);
}

bool
proc_output_done(struct proc *p)
{
	return p->out[0] == -1 && p->out[1] == -1;
}

/* ------------------------------------------------------------------ */
/* Exit */

void
proc_reaped(struct proctab *t, pid_t pid, int wstatus)
{
	struct proc	*p;

	if (pid == t->sync_pid) {
		t->sync_pid = 0;
		return;
	}
	if (record_pool_reaped(&t->recs, pid, wstatus, ev_now(t->loop))) {
		proctab_spare_soon(t);
		return;
	}
	for (p = *proc_pid_bucket(t, pid); p != NULL; p = p->pidnext)
		if (p->pid == pid)
			break;
	if (p != NULL) {
		/*
		 * What the root wrote is in the pipes now: take it before
		 * anyone hears of the exit (exec replies at this point).
		 */
		proc_drain_now(p);
		proc_pid_unhash(p);
		p->reaped = true;
		if (WIFSIGNALED(wstatus)) {
			p->sig = WTERMSIG(wstatus);
			p->code = 128 + p->sig;
		} else
			p->code = WEXITSTATUS(wstatus);
		/*
		 * The timeout still runs: it bounds the group, not the root.
		 * Watchers first: an exec's reply need not wait for a log line.
		 */
		proc_notify(p, PROC_EV_EXIT);
		log_info("event=process_exited id=%s pid=%d code=%d signal=%d",
		    p->id, (int)pid, p->code, p->sig);
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
	for (p = t->head; p != NULL; p = p->next) {
		if (!p->reaped || p->state != PROC_RUNNING)
			continue;
		p->orphan_died = true;
		if (ev_timer_remaining(t->loop, &p->settle) > p->settle_soon) {
			ev_timer_stop(t->loop, &p->settle);
			ev_timer_set(&p->settle, p->settle_soon,
			    PROC_SETTLE_POLL);
			ev_timer_start(t->loop, &p->settle);
		}
	}
}

/*
 * No process left in the group.  Members that are zombies still count
 * until the reap loop collects them; members that are not our children
 * are found by the poll timer.  (cgroup.events will answer this.)
 */
static bool
proc_group_empty(struct proc *p)
{
	return kill(-p->pid, 0) == -1 && errno == ESRCH;
}

/* Signal every member of the group.  (cgroup.kill will do SIGKILL.) */
static int
proc_group_kill(struct proc *p, int sig)
{
	if (p->pid <= 0) {
		errno = ESRCH;	/* kill(0) would be the agent's own group */
		return -1;
	}
	return kill(-p->pid, sig);
}

static void
proc_check_settled(struct proc *p)
{
	if (proc_group_empty(p)) {
		proc_settle(p);
		return;
	}
	if (!ev_is_active(&p->settle))
		ev_timer_start(p->tab->loop, &p->settle);
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

static void
proc_settle(struct proc *p)
{
	struct proctab	*t = p->tab;

	ev_timer_stop(t->loop, &p->settle);
	ev_timer_stop(t->loop, &p->timeout);
	ev_timer_stop(t->loop, &p->grace);
	ev_timer_stop(t->loop, &p->first_status);
	/* What the pipes hold now belongs before the end. */
	proc_drain_now(p);
	proc_stdin_close(p);
	p->state = PROC_EXITED;
	p->ended_ms = codec_now_ms();
	t->nlive--;
	t->nexited++;
	t->exited++;
	proc_write_status(p, true);
	proc_notify(p, PROC_EV_END);
	proctab_tell(t, p, PROCTAB_EV_END);
	/*
	 * Trimming old records waits for the loop: our callers may be
	 * walking the table.
	 */
	if (t->nexited > t->keep_exited)
		ev_prepare_start(t->loop, &t->trim);
}

static void
proc_trim_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)revents;
	ev_prepare_stop(loop, w);
	proc_trim_exited(container_of(w, struct proctab, trim));
}

static void
proc_timeout_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proc	*p = container_of(w, struct proc, timeout);

	(void)revents;
	p->timed_out = true;
	log_info("event=process_timeout id=%s pid=%d", p->id, (int)p->pid);
	if (p->timeout_kill) {
		(void)proc_group_kill(p, SIGKILL);
		return;
	}
	(void)proc_group_kill(p, SIGTERM);
	ev_timer_start(loop, &p->grace);
}

static void
proc_grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proc	*p = container_of(w, struct proc, grace);

	(void)loop;
	(void)revents;
	(void)proc_group_kill(p, SIGKILL);
}

int
proc_terminate(struct proc *p)
{
	if (p->state != PROC_RUNNING) {
		errno = ESRCH;
		return -1;
	}
	(void)proc_group_kill(p, SIGTERM);
	if (!ev_is_active(&p->grace))
		ev_timer_start(p->tab->loop, &p->grace);
	return 0;
}

double
proc_grace(struct proc *p)
{
	return p->grace_s;
}

int
proc_kill(struct proc *p, int sig, bool group)
{
	if (p->state != PROC_RUNNING) {
		errno = ESRCH;
		return -1;
	}
	if (group)
		return proc_group_kill(p, sig);
	if (p->reaped) {
		errno = ESRCH;
		return -1;
	}
	return kill(p->pid, sig);
}

/* Keep at most keep_exited ended records: the oldest go first. */
static void
proc_trim_exited(struct proctab *t)
{
	struct proc	*p, *next;

	for (p = t->head; p != NULL && t->nexited > t->keep_exited; p = next) {
		next = p->next;
		/* Files that stay (a read-only disk) do not hold memory. */
		if (p->state != PROC_RUNNING && proc_delete(p) == -1)
			proc_forget(p);
	}
}

/* ------------------------------------------------------------------ */
/* Stdin */

int
proc_stdin(struct proc *p, const void *d, size_t n, bool close_after)
{
	if (p->in == -1) {
		errno = EPIPE;
		return -1;
	}
	if (buf_add(&p->inbuf, d, n) == -1)
		return -1;
	if (close_after)
		p->in_close = true;
	proc_stdin_flush(p);
	return 0;
}

/*
 * Write what the pipe takes.  The held writer is woken here, whoever
 * called: a queue written out on the spot (the process reads fast) stops
 * the watcher, which then would never wake it.
 */
static void
proc_stdin_flush(struct proc *p)
{
	ssize_t	n;

	while (p->in != -1 && buf_avail(&p->inbuf) > 0) {
		n = write(p->in, buf_head(&p->inbuf), buf_avail(&p->inbuf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			ev_io_start(p->tab->loop, &p->inio);
			break;
		}
		if (n == -1) {
			/* EPIPE: the reader is gone; what is left is moot. */
			proc_stdin_close(p);
			return;
		}
		buf_consume(&p->inbuf, n);
	}
	if (p->in != -1 && buf_avail(&p->inbuf) == 0) {
		ev_io_stop(p->tab->loop, &p->inio);
		if (p->in_close) {
			proc_stdin_close(p);
			return;
		}
	}
	if (buf_avail(&p->inbuf) < PROC_STDIN_HIGH / 2)
		proc_stdin_wake(p, 0);
}

static void
proc_in_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct proc	*p = container_of(w, struct proc, inio);

	(void)loop;
	(void)revents;
	proc_stdin_flush(p);
}

bool
proc_stdin_full(struct proc *p)
{
	return p->in != -1 && buf_avail(&p->inbuf) > PROC_STDIN_HIGH;
}

void *
proc_stdin_writer(struct proc *p)
{
	return p->in_writer;
}

bool
proc_stdin_piped(struct proc *p)
{
	return p->stdin_pipe;
}

bool
proc_stdin_open(struct proc *p)
{
	return p->in != -1;
}

int
proc_stdin_hold(struct proc *p, void *writer,
    void (*wake)(struct proc *, void *, int))
{
	if (p->in_writer != NULL && p->in_writer != writer) {
		errno = EBUSY;
		return -1;
	}
	p->in_writer = writer;
	p->in_wake = wake;
	return 0;
}

void
proc_stdin_unhold(struct proc *p)
{
	p->in_writer = NULL;
	p->in_wake = NULL;
}

/* The held writer may go on: forgotten first, so that it may hold again. */
static void
proc_stdin_wake(struct proc *p, int err)
{
	void	*writer = p->in_writer;
	void	(*wake)(struct proc *, void *, int) = p->in_wake;

	if (writer == NULL)
		return;
	proc_stdin_unhold(p);
	wake(p, writer, err);
}

static void
proc_stdin_close(struct proc *p)
{
	int	err = buf_avail(&p->inbuf) > 0 ? EPIPE : 0;

	if (p->in != -1) {
		ev_io_stop(p->tab->loop, &p->inio);
		close(p->in);
		p->in = -1;
	}
	buf_free(&p->inbuf);
	proc_stdin_wake(p, err);
}

/* ------------------------------------------------------------------ */
/* Status */

/* The root's outcome: {"code","signal" (null unless killed),"timedOut"}. */
cJSON *
proc_exit_json(struct proc *p)
{
	cJSON	*e;

	if ((e = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddNumberToObject(e, "code", p->code);
	/* Absent, not null, unless signalled: schema-validating clients. */
	if (p->sig)
		cJSON_AddNumberToObject(e, "signal", p->sig);
	cJSON_AddBoolToObject(e, "timedOut", p->timed_out);
	return e;
}

cJSON *
proc_status_json(struct proc *p)
{
	return proc_status_build(p, true);
}

/*
 * The status; live (a reply, not status.json) adds what only the agent
 * can know: that the file on disk is behind.
 */
static cJSON *
proc_status_build(struct proc *p, bool live)
{
	struct logstore	*ls = &p->rec.ls;
	char		 ts[TIME_MAX];
	cJSON		*j;

	if ((j = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddStringToObject(j, "id", p->id);
	cJSON_AddNumberToObject(j, "pid", p->pid);
	(void)jsonstr_add_strv(j, "command", p->argv);
	(void)jsonstr_add_bytes(j, "cwd", p->cwd);
	codec_time(ts, p->started_ms);
	cJSON_AddStringToObject(j, "startedAt", ts);
	cJSON_AddStringToObject(j, "state", proc_state_name(p->state));
	if (p->state == PROC_EXITED) {
		cJSON_AddItemToObject(j, "exit", proc_exit_json(p));
		codec_time(ts, p->ended_ms);
		cJSON_AddStringToObject(j, "endedAt", ts);
	}
	cJSON_AddStringToObject(j, "bootId", p->tab->boot);
	cJSON_AddNumberToObject(j, "stdoutBytes", (double)ls->end[LS_STDOUT]);
	cJSON_AddNumberToObject(j, "stderrBytes", (double)ls->end[LS_STDERR]);
	cJSON_AddNumberToObject(j, "droppedBytes", (double)ls->dropped);
	cJSON_AddRawToObject(j, "tags", p->tags);
	if (live && record_status_failed(&p->rec))
		cJSON_AddBoolToObject(j, "statusWriteFailed", true);
	return j;
}

/* ------------------------------------------------------------------ */
/* Removal */

int
proc_delete(struct proc *p)
{
	int	err;

	/* The files first: a record whose files stay is kept as it was. */
	if (record_remove(&p->rec) == -1) {
		err = errno;
		log_warn("event=record_remove_failed id=%s", p->id);
		errno = err;
		return -1;
	}
	if (p->state == PROC_RUNNING) {
		(void)proc_group_kill(p, SIGKILL);
		if (!p->reaped)
			(void)kill(p->pid, SIGKILL);
	}
	proc_forget(p);
	return 0;
}

/* Out of the table and gone; its files are not touched. */
static void
proc_forget(struct proc *p)
{
	struct proctab		*t = p->tab;
	struct proc_watch	*w;
	struct wlist_link	*l;

	/*
	 * Unlinked first: a callback's own proc_watch_del is then a no-op.
	 * The mark of a walk in progress goes too: that walk ends.
	 */
	while ((l = p->watchers) != NULL) {
		wlist_del(&p->watchers, l);
		if (l->mark)
			continue;
		w = container_of(l, struct proc_watch, link);
		w->proc = NULL;
		w->fn(w, PROC_EV_GONE);
	}
	if (p->state == PROC_RUNNING) {
		t->nlive--;
		t->exited++;	/* forced: killed and removed at once */
	} else
		t->nexited--;
	proc_unlink(p);
	log_info("event=process_removed id=%s", p->id);
	proctab_tell(t, p, PROCTAB_EV_REMOVE);
	proc_free(p);
}

static void
proc_free(struct proc *p)
{
	struct ev_loop	*loop = p->tab->loop;
	size_t		 i;
	int		 s;

	for (s = 0; s < LS_NSTREAMS; s++) {
		if (p->out[s] != -1) {
			ev_io_stop(loop, &p->outio[s]);
			ev_timer_stop(loop, &p->outwait[s]);
			close(p->out[s]);
		}
	}
	if (p->in != -1) {
		ev_io_stop(loop, &p->inio);
		close(p->in);
	}
	proc_stdin_wake(p, ENOENT);
	if (p->pid > 0) {
		ev_timer_stop(loop, &p->timeout);
		ev_timer_stop(loop, &p->grace);
		ev_timer_stop(loop, &p->settle);
		ev_timer_stop(loop, &p->first_status);
	}
	record_free(&p->rec);
	for (i = 0; p->argv != NULL && p->argv[i] != NULL; i++)
		free(p->argv[i]);
	free(p->argv);
	free(p->cwd);
	free(p->tags);
	buf_free(&p->inbuf);
	free(p);
}

/* ------------------------------------------------------------------ */
/* Shutdown */

void
proctab_signal_all(struct proctab *t, int sig)
{
	struct proc	*p;

	for (p = t->head; p != NULL; p = p->next)
		if (p->state == PROC_RUNNING)
			(void)proc_group_kill(p, sig);
}

void
proctab_stop_spares(struct proctab *t)
{
	t->nospares = true;
	ev_idle_stop(t->loop, &t->spare);
	record_pool_drop(&t->recs);
	record_spare_drop(&t->recs);
	t->recs.spare.off = true;	/* nor a removed record recycled */
}

/*
 * At shutdown every group was killed and reaped: settle what is left
 * (a member we could not see end) so that each record has a final status.
 */
void
proctab_finalize(struct proctab *t)
{
	struct proc	*p, *next;
	int		 owed = 0;

	for (p = t->head; p != NULL; p = next) {
		next = p->next;
		if (p->state == PROC_RUNNING && p->reaped)
			proc_settle(p);
	}
	/*
	 * After the agent nobody retries: one more try for what is owed,
	 * until the disk refuses again.  What is left becomes "lost".
	 */
	if (t->recs.fd == -1)
		(void)proctab_boot_dir(t);
	for (p = t->head; p != NULL; p = p->next) {
		if (!record_owed(&p->rec))
			continue;
		if (owed == 0 && proc_catch_up(p) == 0)
			continue;
		if (owed++ == 0)
			t->recs.err = errno;
	}
	if (owed > 0)
		log_warnx("event=statuses_not_written count=%d err=\"%s\"",
		    owed, strerror(t->recs.err != 0 ? t->recs.err : EIO));
}
