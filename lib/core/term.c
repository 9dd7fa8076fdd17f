/*
 * term.c: the terminal table.
 *
 * Owns this boot's terminals in memory and their lifecycle: the pty and
 * the child (spawn's, with the slave as its controlling terminal), the
 * master drained into the record's store whether or not anyone reads,
 * input queued for the master, interrupt, resize, terminate, the end
 * (the leader reaped and the master drained to EIO, or the end wait run
 * out), and removal.  The files are record's; the pty's calls are pty's.
 */
#include <sys/types.h>
#include <sys/wait.h>

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
#include "base/jsonstr.h"
#include "base/log.h"
#include "base/util.h"
#include "base/wlist.h"
#include "store/boot.h"
#include "sys/pty.h"
#include "term.h"

#define TERM_COLS_DEFAULT	80
#define TERM_ROWS_DEFAULT	24
#define TERM_TYPE		"TERM=xterm-256color"

struct term {
	struct term	*next, *prev;
	struct termtab	*tab;
	char		 id[PROC_ID_MAX + 1];
	pid_t		 pid;		/* the session leader; its sid, pgid */
	enum term_state	 state;
	char		**argv;
	char		*cwd;
	unsigned int	 cols, rows;
	int64_t		 created_ms, ended_ms;
	bool		 reaped;
	int		 code, sig;	/* the leader's exit; 128+N if signalled */
	int		 master;	/* -1 once drained to EIO, or ended */
	ev_io		 outio;
	ev_timer	 outwait;	/* after a small read */
	ev_timer	 endwait;	/* reaped: EIO within TERM_END_WAIT */
	ev_timer	 grace;		/* terminate: KILL the session */
	struct buf	 inbuf;
	ev_io		 inio;
	void		*in_writer;
	void		(*in_wake)(struct term *, void *, int);
	struct record	 rec;
	struct wlist_link *watchers;
};

/* One event for every subscriber. */
struct termtab_news {
	struct term		*t;
	enum termtab_event	 ev;
};

static int	termtab_remake(struct record_dir *);
static void	term_notify(struct term *, enum term_event);
static void	termtab_tell(struct termtab *, struct term *,
		    enum termtab_event);
static bool	term_watched(struct term *);
static void	term_release_fds(struct term *);
static struct term *term_new(struct termtab *, const struct term_opts *);
static int	term_exec(struct term *, const struct term_opts *,
		    const char *, bool *);
static void	term_begin(struct term *, const struct term_opts *);
static void	term_trim(struct termtab *);
static char	*term_meta_json(struct term *, const struct term_opts *);
static void	term_write_status(struct term *);
static void	term_out_cb(struct ev_loop *, ev_io *, int);
static void	term_outwait_cb(struct ev_loop *, ev_timer *, int);
static void	term_out_wake(struct term *);
static void	term_endwait_cb(struct ev_loop *, ev_timer *, int);
static void	term_grace_cb(struct ev_loop *, ev_timer *, int);
static void	term_in_cb(struct ev_loop *, ev_io *, int);
static size_t	term_drain(struct term *, int);
static void	term_master_close(struct term *);
static void	term_end(struct term *);
static int	term_session_scan(pid_t, int);
static void	term_input_flush(struct term *);
static void	term_input_wake(struct term *, int);
static void	term_forget(struct term *);
static void	term_free(struct term *);

/* ------------------------------------------------------------------ */
/* The table */

int
termtab_init(struct termtab *tt, struct ev_loop *loop, const char *boot,
    int statefd, char **baseenv, const struct spawn_limits *limits)
{
	memset(tt, 0, sizeof(*tt));
	tt->loop = loop;
	snprintf(tt->boot, sizeof(tt->boot), "%s", boot);
	tt->statefd = statefd;
	tt->recs.kind = RECORD_TERM;
	tt->recs.remake = termtab_remake;
	/* A state dir that refuses it: records in memory, made later. */
	if ((tt->recs.fd = boot_open_terms(statefd, boot, true)) == -1)
		tt->recs.err = errno;
	tt->maxlive = TERM_MAX_LIVE;
	tt->baseenv = baseenv;
	tt->limits = limits;
	return 0;
}

void
termtab_free(struct termtab *tt)
{
	struct term	*t, *next;

	for (t = tt->head; t != NULL; t = next) {
		next = t->next;
		term_free(t);
	}
	tt->head = tt->tail = NULL;
	while (tt->subs != NULL)
		termtab_unsubscribe(container_of(tt->subs, struct termtab_sub,
		    link));
	if (tt->recs.fd != -1)
		close(tt->recs.fd);
	tt->recs.fd = -1;
}

static int
termtab_remake(struct record_dir *d)
{
	struct termtab	*tt = container_of(d, struct termtab, recs);
	int		 fd;

	if ((fd = boot_open_terms(tt->statefd, tt->boot, true)) == -1) {
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
	return tt->nlive;
}

const char *
termtab_boot(struct termtab *tt)
{
	return tt->boot;
}

int
termtab_statefd(struct termtab *tt)
{
	return tt->statefd;
}

struct term *
termtab_first(struct termtab *tt)
{
	return tt->head;
}

struct term *
term_next(struct term *t)
{
	return t->next;
}

/* ------------------------------------------------------------------ */
/* Who is told: watchers of a terminal, subscribers of the table (wlist) */

void
term_watch_add(struct term *t, struct term_watch *w,
    void (*fn)(struct term_watch *, enum term_event))
{
	w->term = t;
	w->fn = fn;
	w->link.mark = false;
	wlist_add(&t->watchers, &w->link);
}

void
term_watch_del(struct term_watch *w)
{
	struct term	*t = w->term;

	if (t == NULL)
		return;
	wlist_del(&t->watchers, &w->link);
	w->term = NULL;
	term_release_fds(t);
}

static bool
term_watched(struct term *t)
{
	struct wlist_link	*l;

	for (l = t->watchers; l != NULL; l = l->next)
		if (!l->mark)
			return true;
	return false;
}

static void
term_tell_watch(struct wlist_link *l, void *arg)
{
	struct term_watch	*w = container_of(l, struct term_watch, link);

	w->fn(w, *(enum term_event *)arg);
}

static void
term_notify(struct term *t, enum term_event ev)
{
	if (wlist_walk(&t->watchers, term_tell_watch, &ev))
		term_release_fds(t);
}

void
termtab_subscribe(struct termtab *tt, struct termtab_sub *s,
    void (*fn)(struct termtab_sub *, struct term *, enum termtab_event))
{
	s->tab = tt;
	s->fn = fn;
	s->link.mark = false;
	wlist_add(&tt->subs, &s->link);
}

void
termtab_unsubscribe(struct termtab_sub *s)
{
	if (s->tab == NULL)
		return;
	wlist_del(&s->tab->subs, &s->link);
	s->tab = NULL;
}

static void
termtab_tell_sub(struct wlist_link *l, void *arg)
{
	struct termtab_sub	*s = container_of(l, struct termtab_sub, link);
	struct termtab_news	*n = arg;

	s->fn(s, n->t, n->ev);
}

static void
termtab_tell(struct termtab *tt, struct term *t, enum termtab_event ev)
{
	struct termtab_news	n = { t, ev };

	(void)wlist_walk(&tt->subs, termtab_tell_sub, &n);
}

/*
 * An ended terminal that nobody watches gives its files back: kept
 * ones would fill the fd table.  term_store reopens them.
 */
static void
term_release_fds(struct term *t)
{
	if (t->state != TERM_RUNNING && !term_watched(t))
		(void)record_release(&t->rec);
}

struct logstore *
term_store(struct term *t)
{
	return record_store(&t->rec);
}

/* ------------------------------------------------------------------ */
/* What a terminal says of itself */

struct term *
term_find(struct termtab *tt, const char *id)
{
	struct term	*t;

	for (t = tt->head; t != NULL; t = t->next)
		if (strcmp(t->id, id) == 0)
			return t;
	return NULL;
}

const char *
term_id(struct term *t)
{
	return t->id;
}

int64_t
term_created_ms(struct term *t)
{
	return t->created_ms;
}

pid_t
term_pid(struct term *t)
{
	return t->pid;
}

bool
term_ended(struct term *t)
{
	return t->state != TERM_RUNNING;
}

cJSON *
term_exit_json(struct term *t)
{
	cJSON	*e;

	if (t->state == TERM_RUNNING || (e = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddNumberToObject(e, "code", t->code);
	/* Absent, not null, unless signalled (DESIGN §4), as a process's. */
	if (t->sig)
		cJSON_AddNumberToObject(e, "signal", t->sig);
	return e;
}

/* TerminalSnapshot, and tend's fields. */
cJSON *
term_status_json(struct term *t)
{
	char	 ts[TIME_MAX];
	cJSON	*j;

	if ((j = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddStringToObject(j, "id", t->id);
	cJSON_AddNumberToObject(j, "pid", t->pid);
	(void)jsonstr_add_strv(j, "command", t->argv);
	(void)jsonstr_add_bytes(j, "cwd", t->cwd);
	cJSON_AddStringToObject(j, "status",
	    t->state == TERM_RUNNING ? "running" : "exited");
	if (t->state != TERM_RUNNING)
		cJSON_AddItemToObject(j, "exit", term_exit_json(t));
	cJSON_AddStringToObject(j, "bootId", t->tab->boot);
	cJSON_AddNumberToObject(j, "cols", t->cols);
	cJSON_AddNumberToObject(j, "rows", t->rows);
	codec_time(ts, t->created_ms);
	cJSON_AddStringToObject(j, "createdAt", ts);
	if (t->state != TERM_RUNNING) {
		codec_time(ts, t->ended_ms);
		cJSON_AddStringToObject(j, "endedAt", ts);
	} else
		cJSON_AddNullToObject(j, "endedAt");
	cJSON_AddNumberToObject(j, "outputBytes", (double)t->rec.ls.end[0]);
	return j;
}

/* ------------------------------------------------------------------ */
/* Create */

struct term *
term_create(struct termtab *tt, const struct term_opts *o, bool *spawn_failed,
    int *err)
{
	struct term	*t;
	char		 name[PTY_NAME_MAX];

	*spawn_failed = false;
	if (o->id != NULL && term_find(tt, o->id) != NULL) {
		*err = EEXIST;
		return NULL;
	}
	if (tt->nlive >= tt->maxlive) {
		*err = EAGAIN;
		return NULL;
	}
	term_trim(tt);
	if ((t = term_new(tt, o)) == NULL) {
		*err = errno;
		return NULL;
	}
	if (pty_open(t->cols, t->rows, &t->master, name, sizeof(name)) == -1 ||
	    term_exec(t, o, name, spawn_failed) == -1)
		goto fail;	/* a failed child is left to the reaper */
	/* A link planted under the ID, say: undone, the child killed. */
	if (record_open(&t->rec, &tt->recs, t->id,
	    o->keep ? o->keep : TERM_KEEP_BYTES) == -1) {
		*err = errno;
		(void)kill(t->pid, SIGKILL);
		errno = *err;
		goto fail;
	}
	term_begin(t, o);
	return t;
fail:
	*err = errno;
	term_free(t);
	return NULL;
}

static struct term *
term_new(struct termtab *tt, const struct term_opts *o)
{
	struct term	*t;
	char		 cwd[PATH_MAX], hex[13], shell[PATH_MAX];
	char		*dflt[] = { shell, NULL };
	unsigned char	 r[6];

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->tab = tt;
	t->master = -1;
	record_init(&t->rec);
	if (o->id != NULL)
		snprintf(t->id, sizeof(t->id), "%s", o->id);
	else
		do {
			arc4random_buf(r, sizeof(r));
			codec_hex(hex, r, sizeof(r));
			snprintf(t->id, sizeof(t->id), "t%s", hex);
		} while (term_find(tt, t->id) != NULL);
	t->cols = o->cols ? o->cols : TERM_COLS_DEFAULT;
	t->rows = o->rows ? o->rows : TERM_ROWS_DEFAULT;
	if (o->argv == NULL && pty_default_shell(o->has_user ? o->uid :
	    getuid(), shell, sizeof(shell)) == -1) {
		term_free(t);
		return NULL;
	}
	t->argv = spawn_strvdup(o->argv != NULL ? o->argv : dflt);
	t->cwd = strdup(o->cwd != NULL ? o->cwd :
	    getcwd(cwd, sizeof(cwd)) != NULL ? cwd : "/");
	if (t->argv == NULL || t->cwd == NULL) {
		term_free(t);
		errno = ENOMEM;
		return NULL;
	}
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
	char			**envp;
	pid_t			 pid;
	int			 err;

	/* TERM unless the request sets it: the agent's is not the emulator's. */
	if ((envp = spawn_envp(t->tab->baseenv, o->env, TERM_TYPE)) == NULL)
		return -1;
	memset(&so, 0, sizeof(so));
	so.argv = t->argv;
	so.envp = envp;
	so.cwd = o->cwd;
	so.fd[0] = so.fd[1] = so.fd[2] = -1;
	so.setsid = true;
	so.closefds = true;
	so.has_user = o->has_user;
	so.uid = o->uid;
	so.gid = o->gid;
	so.user = o->user;
	so.ctty = slave;
	so.confine = &o->confine;
	so.limits = t->tab->limits;
	pid = spawn_start(&so, failed);
	err = errno;
	free(envp);
	errno = err;
	if (pid == -1)
		return -1;
	t->pid = pid;
	return 0;
}

static void
term_begin(struct term *t, const struct term_opts *o)
{
	struct termtab	*tt = t->tab;
	char		*meta;

	t->created_ms = codec_now_ms();
	t->state = TERM_RUNNING;
	ev_io_init(&t->outio, term_out_cb, t->master, EV_READ);
	ev_io_start(tt->loop, &t->outio);
	ev_timer_init(&t->outwait, term_outwait_cb, LOG_READ_WAIT, 0.);
	ev_io_init(&t->inio, term_in_cb, t->master, EV_WRITE);
	ev_timer_init(&t->endwait, term_endwait_cb, TERM_END_WAIT, 0.);
	ev_timer_init(&t->grace, term_grace_cb, TERM_KILL_GRACE, 0.);
	t->prev = tt->tail;
	if (tt->tail != NULL)
		tt->tail->next = t;
	else
		tt->head = t;
	tt->tail = t;
	tt->nlive++;
	if ((meta = term_meta_json(t, o)) == NULL ||
	    record_set_meta(&t->rec, meta) == -1)
		log_warn("event=terminal_meta_failed id=%s", t->id);
	term_write_status(t);
	log_info("event=terminal_started id=%s pid=%d cols=%u rows=%u", t->id,
	    (int)t->pid, t->cols, t->rows);
	termtab_tell(tt, t, TERMTAB_EV_START);
}

/* Ended terminals past TERM_KEEP_ENDED go, the oldest first. */
static void
term_trim(struct termtab *tt)
{
	struct term	*t, *next;

	for (t = tt->head; t != NULL && tt->nended >= TERM_KEEP_ENDED;
	    t = next) {
		next = t->next;
		if (t->state != TERM_RUNNING && term_delete(t) == -1)
			term_forget(t);
	}
}

/* meta.json: how it was made.  The environment by name only. */
static char *
term_meta_json(struct term *t, const struct term_opts *o)
{
	char	 ts[TIME_MAX], *s, *name;
	cJSON	*j, *a;
	size_t	 i;

	if ((j = cJSON_CreateObject()) == NULL)
		return NULL;
	(void)jsonstr_add_strv(j, "argv", t->argv);
	(void)jsonstr_add_bytes(j, "cwd", t->cwd);
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
	cJSON_AddNumberToObject(j, "cols", t->cols);
	cJSON_AddNumberToObject(j, "rows", t->rows);
	cJSON_AddNumberToObject(j, "bufferSize", (double)t->rec.ls.maxbytes);
	spawn_confine_json(cJSON_AddObjectToObject(j, "options"), &o->confine,
	    o->has_user, o->uid, o->gid);
	codec_time(ts, t->created_ms);
	cJSON_AddStringToObject(j, "created_at", ts);
	cJSON_AddStringToObject(j, "bootId", t->tab->boot);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

/*
 * status.json at the start and at the end.  One the disk refuses is
 * not retried: the record then reads "running", and the next boot
 * marks it lost, which is what it is to a reader after a crash.
 */
static void
term_write_status(struct term *t)
{
	cJSON	*j;
	char	*s = NULL;

	if ((j = term_status_json(t)) != NULL)
		s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (record_put_status(&t->rec, s) == -1 && !record_in_memory(&t->rec))
		log_warn("event=terminal_status_failed id=%s", t->id);
	free(s);
}

/* ------------------------------------------------------------------ */
/* Output */

/*
 * As for a process's pipes (proc.c): after a short read the master
 * rests LOG_READ_WAIT, so that a program echoing a byte at a time costs
 * a read per few ms, not per byte.  The pty holds far more than that.
 */
static void
term_out_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct term	*t = container_of(w, struct term, outio);

	(void)revents;
	if (term_drain(t, PROC_DRAIN_ROUNDS) < LOG_READ_SMALL &&
	    t->master != -1) {
		ev_io_stop(loop, w);
		ev_timer_set(&t->outwait, LOG_READ_WAIT, 0.);
		ev_timer_start(loop, &t->outwait);
	}
}

/*
 * Input went in: its echo is due, so a master resting after a short read
 * is read again now, not LOG_READ_WAIT later (keystroke echo latency).
 */
static void
term_out_wake(struct term *t)
{
	if (t->master != -1 && ev_is_active(&t->outwait)) {
		ev_timer_stop(t->tab->loop, &t->outwait);
		ev_io_start(t->tab->loop, &t->outio);
	}
}

static void
term_outwait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct term	*t = container_of(w, struct term, outwait);

	(void)revents;
	if (t->master != -1)
		ev_io_start(loop, &t->outio);
}

/*
 * Move what the master holds into the store, `rounds` reads at most.
 * EIO (pty_eio_is_end) or 0 means the slave is closed and every byte
 * was read: once the leader is reaped too, that is the end.  Watchers hear
 * of the output before the end.  The bytes taken.
 */
static size_t
term_drain(struct term *t, int rounds)
{
	struct logstore	*ls = &t->rec.ls;
	uint64_t	 nrec = ls->nrec, end = ls->end[0];
	size_t		 taken = 0;
	ssize_t		 n;
	bool		 closed = false, eio = false;

	while (t->master != -1 && rounds-- > 0) {
		n = logstore_drain(ls, 0, t->master);
		if (n > 0) {
			taken += (size_t)n;
			eio = false;
			continue;
		}
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n == -1 && errno == EIO && !pty_eio_is_end(&eio)) {
			rounds++;
			continue;
		}
		term_master_close(t);
		closed = true;
	}
	(void)logstore_flush(ls);
	if (ls->nrec != nrec || ls->end[0] != end)
		term_notify(t, TERM_EV_OUTPUT);
	if (closed && t->reaped && t->state == TERM_RUNNING)
		term_end(t);
	return taken;
}

/* The master is done with: its queued input is moot. */
static void
term_master_close(struct term *t)
{
	struct ev_loop	*loop = t->tab->loop;
	int		 err = buf_avail(&t->inbuf) > 0 ? EPIPE : 0;

	if (t->master == -1)
		return;
	ev_io_stop(loop, &t->outio);
	ev_timer_stop(loop, &t->outwait);
	ev_io_stop(loop, &t->inio);
	close(t->master);
	t->master = -1;
	buf_free(&t->inbuf);
	term_input_wake(t, err);
}

void
term_reaped(struct termtab *tt, pid_t pid, int wstatus)
{
	struct term	*t;

	for (t = tt->head; t != NULL; t = t->next)
		if (t->pid == pid && !t->reaped)
			break;
	if (t == NULL)
		return;
	t->reaped = true;
	if (WIFSIGNALED(wstatus)) {
		t->sig = WTERMSIG(wstatus);
		t->code = 128 + t->sig;
	} else
		t->code = WEXITSTATUS(wstatus);
	log_info("event=terminal_exited id=%s pid=%d code=%d signal=%d",
	    t->id, (int)pid, t->code, t->sig);
	/* What the leader wrote is in the master now, EIO after it. */
	(void)term_drain(t, PROC_DRAIN_ALL);
	if (t->master == -1) {
		if (t->state == TERM_RUNNING)
			term_end(t);
		return;
	}
	/*
	 * The slave is still open: a descendant of a leader that was not
	 * the controlling process (else the kernel hung it up).  The end
	 * waits for its EIO, not forever.
	 */
	ev_timer_start(tt->loop, &t->endwait);
}

static void
term_endwait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct term	*t = container_of(w, struct term, endwait);

	(void)loop;
	(void)revents;
	(void)term_drain(t, PROC_DRAIN_ALL);
	if (t->state != TERM_RUNNING)
		return;
	/* Closing the master hangs the slave up: the job gets SIGHUP. */
	log_info("event=terminal_end_forced id=%s msg=\"the slave is still "
	    "open after the leader exited\"", t->id);
	term_master_close(t);
	term_end(t);
}

static void
term_end(struct term *t)
{
	struct termtab	*tt = t->tab;

	ev_timer_stop(tt->loop, &t->endwait);
	term_master_close(t);
	logstore_seal(&t->rec.ls);
	t->state = TERM_EXITED;
	t->ended_ms = codec_now_ms();
	tt->nlive--;
	tt->nended++;
	/* Nobody left in the session: no KILL to send, nor to misdirect. */
	if (ev_is_active(&t->grace) && term_session_scan(t->pid, 0) == 0)
		ev_timer_stop(tt->loop, &t->grace);
	term_write_status(t);
	log_info("event=terminal_ended id=%s code=%d bytes=%llu", t->id,
	    t->code, (unsigned long long)t->rec.ls.end[0]);
	term_notify(t, TERM_EV_END);
	termtab_tell(tt, t, TERMTAB_EV_END);
}

/* ------------------------------------------------------------------ */
/* Signals */

int
term_interrupt(struct term *t)
{
	pid_t	pg;

	if (t->state != TERM_RUNNING || t->master == -1) {
		errno = ESRCH;
		return -1;
	}
	if ((pg = pty_foreground(t->master)) == -1)
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

	if (t->pid <= 0)
		return 0;
	(void)kill(-t->pid, sig);
	if (t->master != -1 && (pg = pty_foreground(t->master)) > 0)
		(void)kill(-pg, sig);
	return term_session_scan(t->pid, sig);
}

/*
 * HUP is what a terminal's end means to a shell and its jobs; TERM for
 * what ignores HUP (nohup); CONT so that a stopped job can act on them.
 */
int
term_terminate(struct term *t)
{
	if (t->state != TERM_RUNNING) {
		errno = ESRCH;
		return -1;
	}
	(void)term_signal_session(t, SIGHUP);
	(void)term_signal_session(t, SIGTERM);
	(void)term_signal_session(t, SIGCONT);
	if (!ev_is_active(&t->grace))
		ev_timer_start(t->tab->loop, &t->grace);
	log_info("event=terminal_terminate id=%s", t->id);
	return 0;
}

static void
term_grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct term	*t = container_of(w, struct term, grace);

	(void)loop;
	(void)revents;
	(void)term_signal_session(t, SIGKILL);
}

int
term_resize(struct term *t, unsigned int cols, unsigned int rows)
{
	if (t->state != TERM_RUNNING || t->master == -1) {
		errno = ESRCH;
		return -1;
	}
	if (pty_resize(t->master, cols, rows) == -1)
		return -1;
	t->cols = cols;
	t->rows = rows;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Input */

int
term_input(struct term *t, const void *d, size_t n)
{
	if (t->state != TERM_RUNNING || t->master == -1) {
		errno = EPIPE;
		return -1;
	}
	if (buf_add(&t->inbuf, d, n) == -1)
		return -1;
	term_input_flush(t);
	return 0;
}

/*
 * Write what the master takes.  The held writer is woken here, whoever
 * called (see proc_stdin_flush).
 */
static void
term_input_flush(struct term *t)
{
	ssize_t	n;

	while (t->master != -1 && buf_avail(&t->inbuf) > 0) {
		n = write(t->master, buf_head(&t->inbuf),
		    buf_avail(&t->inbuf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			ev_io_start(t->tab->loop, &t->inio);
			return;
		}
		if (n == -1) {
			/* EIO: the slave is gone; the reader will say so. */
			buf_free(&t->inbuf);
			ev_io_stop(t->tab->loop, &t->inio);
			term_input_wake(t, EPIPE);
			return;
		}
		buf_consume(&t->inbuf, (size_t)n);
		term_out_wake(t);
	}
	if (t->master != -1)
		ev_io_stop(t->tab->loop, &t->inio);
	if (buf_avail(&t->inbuf) == 0)
		buf_reset(&t->inbuf);
	if (buf_avail(&t->inbuf) < TERM_INPUT_HIGH / 2)
		term_input_wake(t, 0);
}

static void
term_in_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	term_input_flush(container_of(w, struct term, inio));
}

bool
term_input_full(struct term *t)
{
	return buf_avail(&t->inbuf) > TERM_INPUT_HIGH;
}

size_t
term_input_queued(struct term *t)
{
	return buf_avail(&t->inbuf);
}

int
term_input_hold(struct term *t, void *writer,
    void (*wake)(struct term *, void *, int))
{
	if (t->in_writer != NULL && t->in_writer != writer) {
		errno = EBUSY;
		return -1;
	}
	t->in_writer = writer;
	t->in_wake = wake;
	return 0;
}

void
term_input_unhold(struct term *t)
{
	t->in_writer = NULL;
	t->in_wake = NULL;
}

void *
term_input_writer(struct term *t)
{
	return t->in_writer;
}

static void
term_input_wake(struct term *t, int err)
{
	void	*writer = t->in_writer;
	void	(*wake)(struct term *, void *, int) = t->in_wake;

	if (writer == NULL)
		return;
	term_input_unhold(t);
	wake(t, writer, err);
}

/* ------------------------------------------------------------------ */
/* Removal and shutdown */

int
term_delete(struct term *t)
{
	int	err;

	if (record_remove(&t->rec) == -1) {
		err = errno;
		log_warn("event=terminal_remove_failed id=%s", t->id);
		errno = err;
		return -1;
	}
	if (t->state == TERM_RUNNING) {
		(void)term_signal_session(t, SIGKILL);
		if (!t->reaped)
			(void)kill(t->pid, SIGKILL);
	}
	term_forget(t);
	return 0;
}

/* Out of the table and freed; the files are not touched. */
static void
term_forget(struct term *t)
{
	struct termtab		*tt = t->tab;
	struct term_watch	*w;
	struct wlist_link	*l;

	while ((l = t->watchers) != NULL) {
		wlist_del(&t->watchers, l);
		if (l->mark)
			continue;
		w = container_of(l, struct term_watch, link);
		w->term = NULL;
		w->fn(w, TERM_EV_GONE);
	}
	if (t->state == TERM_RUNNING)
		tt->nlive--;
	else
		tt->nended--;
	if (t->prev != NULL)
		t->prev->next = t->next;
	else
		tt->head = t->next;
	if (t->next != NULL)
		t->next->prev = t->prev;
	else
		tt->tail = t->prev;
	log_info("event=terminal_removed id=%s", t->id);
	termtab_tell(tt, t, TERMTAB_EV_REMOVE);
	term_free(t);
}

static void
term_free(struct term *t)
{
	struct ev_loop	*loop = t->tab->loop;
	size_t		 i;

	if (t->master != -1) {
		ev_io_stop(loop, &t->outio);
		ev_io_stop(loop, &t->inio);
		close(t->master);
	}
	if (t->pid > 0) {
		ev_timer_stop(loop, &t->outwait);
		ev_timer_stop(loop, &t->endwait);
		ev_timer_stop(loop, &t->grace);
	}
	term_input_wake(t, ENOENT);
	record_free(&t->rec);
	for (i = 0; t->argv != NULL && t->argv[i] != NULL; i++)
		free(t->argv[i]);
	free(t->argv);
	free(t->cwd);
	buf_free(&t->inbuf);
	free(t);
}

void
termtab_signal_all(struct termtab *tt, int sig)
{
	struct term	*t;

	for (t = tt->head; t != NULL; t = t->next)
		if (t->state == TERM_RUNNING)
			(void)term_signal_session(t, sig);
}

/* At shutdown: a reaped leader whose slave stayed open ends now. */
void
termtab_finalize(struct termtab *tt)
{
	struct term	*t;

	for (t = tt->head; t != NULL; t = t->next)
		if (t->state == TERM_RUNNING && t->reaped)
			term_end(t);
}
