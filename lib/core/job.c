/*
 * job.c: what a process and a terminal share.
 *
 * The table of jobs (launch order, two hashes, subscribers), a job's
 * exit, the drain of its output fds into its record's store, its input
 * queue and held writer, its watchers, and its removal.  Where a kind
 * differs (when a job ends, what its status says, how all its processes
 * are signalled) the engine asks it through struct job_kind; the order
 * of things around an end is the kind's, the steps are here.
 */
#include <sys/types.h>

#include <errno.h>
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
#include "job.h"
#include "job_int.h"
#include "store/boot.h"

/* One event for every subscriber. */
struct jobtab_news {
	struct job		*j;
	enum jobtab_event	 ev;
};

static void	job_trim_cb(struct ev_loop *, ev_prepare *, int);
static void	job_out_cb(struct ev_loop *, ev_io *, int);
static void	job_outwait_cb(struct ev_loop *, ev_timer *, int);
static void	job_out_close(struct job *, int);
static void	job_grace_cb(struct ev_loop *, ev_timer *, int);
static bool	job_watched(struct job *);
static void	job_unlink(struct job *);

/* ------------------------------------------------------------------ */
/* The exit */

const struct exit_status *
job_exit(struct job *j)
{
	return j->reaped ? &j->exit : NULL;
}

const char *
job_id(struct job *j)
{
	return j->id;
}

/* ------------------------------------------------------------------ */
/* The table */

void
jobtab_init(struct jobtab *t, struct ev_loop *loop, const char *boot,
    int statefd)
{
	memset(t, 0, sizeof(*t));
	t->loop = loop;
	snprintf(t->boot, sizeof(t->boot), "%s", boot);
	t->statefd = statefd;
	t->recs.fd = -1;
	ev_prepare_init(&t->trim, job_trim_cb);
}

void
jobtab_free(struct jobtab *t)
{
	struct job	*j, *next;

	for (j = t->head; j != NULL; j = next) {
		next = j->next;
		job_free(j);
	}
	t->head = t->tail = NULL;
	memset(t->byid, 0, sizeof(t->byid));
	memset(t->bypid, 0, sizeof(t->bypid));
	while (t->subs != NULL)
		jobtab_unsubscribe(container_of(t->subs, struct jobtab_sub,
		    link));
	ev_prepare_stop(t->loop, &t->trim);
}

void
jobtab_subscribe(struct jobtab *t, struct jobtab_sub *s,
    void (*fn)(struct jobtab_sub *, struct job *, enum jobtab_event))
{
	s->tab = t;
	s->fn = fn;
	s->link.mark = false;
	wlist_add(&t->subs, &s->link);
}

void
jobtab_unsubscribe(struct jobtab_sub *s)
{
	if (s->tab == NULL)
		return;
	wlist_del(&s->tab->subs, &s->link);
	s->tab = NULL;
}

static void
jobtab_tell_sub(struct wlist_link *l, void *arg)
{
	struct jobtab_sub	*s = container_of(l, struct jobtab_sub, link);
	struct jobtab_news	*n = arg;

	s->fn(s, n->j, n->ev);
}

void
jobtab_tell(struct jobtab *t, struct job *j, enum jobtab_event ev)
{
	struct jobtab_news	n = { j, ev };

	(void)wlist_walk(&t->subs, jobtab_tell_sub, &n);
}

/*
 * Two chained hashes beside the launch-order list, so that a lookup does
 * not walk a thousand kept jobs: every job by its ID, and each root not
 * yet reaped by its pid (the reaper's question).
 */
static struct job **
job_id_bucket(struct jobtab *t, const char *id)
{
	uint32_t	h = 2166136261u;	/* FNV-1a */

	while (*id != '\0')
		h = (h ^ (unsigned char)*id++) * 16777619u;
	return &t->byid[h & (PROC_HASH - 1)];
}

static struct job **
job_pid_bucket(struct jobtab *t, pid_t pid)
{
	return &t->bypid[(uint32_t)pid & (PROC_HASH - 1)];
}

void
job_pid_unhash(struct job *j)
{
	struct job	**pp;

	for (pp = job_pid_bucket(j->tab, j->pid); *pp != NULL;
	    pp = &(*pp)->pidnext)
		if (*pp == j) {
			*pp = j->pidnext;
			return;
		}
}

/* Into the list and the hashes, once it has a process. */
void
job_link(struct job *j)
{
	struct jobtab	*t = j->tab;
	struct job	**b;

	j->prev = t->tail;
	if (t->tail != NULL)
		t->tail->next = j;
	else
		t->head = j;
	t->tail = j;
	b = job_id_bucket(t, j->id);
	j->idnext = *b;
	*b = j;
	b = job_pid_bucket(t, j->pid);
	j->pidnext = *b;
	*b = j;
}

static void
job_unlink(struct job *j)
{
	struct jobtab	*t = j->tab;
	struct job	**pp;

	if (j->prev != NULL)
		j->prev->next = j->next;
	else
		t->head = j->next;
	if (j->next != NULL)
		j->next->prev = j->prev;
	else
		t->tail = j->prev;
	for (pp = job_id_bucket(t, j->id); *pp != NULL; pp = &(*pp)->idnext)
		if (*pp == j) {
			*pp = j->idnext;
			break;
		}
	if (!j->reaped)
		job_pid_unhash(j);
}

struct job *
job_find(struct jobtab *t, const char *id)
{
	struct job	*j;

	for (j = *job_id_bucket(t, id); j != NULL; j = j->idnext)
		if (strcmp(j->id, id) == 0)
			return j;
	return NULL;
}

struct job *
job_by_pid(struct jobtab *t, pid_t pid)
{
	struct job	*j;

	for (j = *job_pid_bucket(t, pid); j != NULL; j = j->pidnext)
		if (j->pid == pid)
			return j;
	return NULL;
}

void
jobtab_signal_all(struct jobtab *t, int sig)
{
	struct job	*j;

	for (j = t->head; j != NULL && !t->stopping; j = j->next)
		if (j->state == JOB_RUNNING && j->kind->stop != NULL)
			j->kind->stop(j);
	t->stopping = true;
	for (j = t->head; j != NULL; j = j->next)
		if (j->state == JOB_RUNNING)
			job_signal(j, sig);
}

void
jobtab_finalize(struct jobtab *t)
{
	struct job	*j, *next;

	for (j = t->head; j != NULL; j = next) {
		next = j->next;
		if (j->state == JOB_RUNNING && j->reaped)
			j->kind->end(j);
	}
}

/* Files that stay (a read-only disk) do not hold memory. */
void
job_trim(struct jobtab *t)
{
	struct job	*j, *next;

	for (j = t->head; j != NULL && t->nended > t->keep; j = next) {
		next = j->next;
		if (j->state != JOB_RUNNING && job_delete(j) == -1)
			job_forget(j);
	}
}

static void
job_trim_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	(void)revents;
	ev_prepare_stop(loop, w);
	job_trim(container_of(w, struct jobtab, trim));
}

/* ------------------------------------------------------------------ */
/* A job's life */

/* Of table t and kind k, with no fd, cgroup or record yet. */
void
job_blank(struct job *j, struct jobtab *t, const struct job_kind *k)
{
	int	s;

	j->tab = t;
	j->kind = k;
	j->in = -1;
	cgroup_init(&j->cg);
	for (s = 0; s < LS_NSTREAMS; s++)
		j->out[s] = -1;
	record_init(&j->rec);
}

int
job_init(struct job *j, struct jobtab *t, const struct job_kind *k,
    const char *id, char prefix, char **argv, const char *cwd)
{
	char		 here[PATH_MAX], hex[13];
	unsigned char	 r[6];

	job_blank(j, t, k);
	if (id != NULL)
		snprintf(j->id, sizeof(j->id), "%s", id);
	else
		do {
			boot_random(r, sizeof(r));
			codec_hex(hex, r, sizeof(r));
			snprintf(j->id, sizeof(j->id), "%c%s", prefix, hex);
		} while (job_find(t, j->id) != NULL);
	j->argv = spawn_strvdup(argv);
	j->cwd = strdup(cwd != NULL ? cwd :
	    getcwd(here, sizeof(here)) != NULL ? here : "/");
	if (j->argv == NULL || j->cwd == NULL) {
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int
job_spawn(struct job *j, struct spawn_opts *so, char **env,
    const char *extra, bool *failed)
{
	char	**envp;
	pid_t	  pid;
	int	  err;

	if ((envp = spawn_envp(j->tab->baseenv, env, extra)) == NULL)
		return -1;
	so->envp = envp;
	so->setsid = true;
	so->closefds = true;
	so->limits = j->tab->limits;
	if (job_cg_make(j, so) == -1) {
		free(envp);
		return -1;
	}
	pid = spawn_start(so, failed);
	err = errno;
	free(envp);
	errno = err;
	if (pid == -1)
		return -1;
	j->pid = pid;
	return 0;
}

void
job_begin(struct job *j)
{
	struct jobtab	*t = j->tab;

	j->started_ms = codec_now_ms();
	j->state = JOB_RUNNING;
	job_link(j);
	t->nlive++;
	t->started++;
}

/*
 * A next run of a job that has not ended: its new root in the pid hash,
 * the last one's exit and signals forgotten.
 */
void
job_rerun(struct job *j)
{
	struct job	**b;

	j->reaped = false;
	memset(&j->exit, 0, sizeof(j->exit));
	j->sigsent = 0;
	b = job_pid_bucket(j->tab, j->pid);
	j->pidnext = *b;
	*b = j;
}

void
job_out_start(struct job *j, int s, int fd)
{
	j->out[s] = fd;
	ev_io_init(&j->outio[s], job_out_cb, fd, EV_READ);
	j->outio[s].data = j;
	ev_io_start(j->tab->loop, &j->outio[s]);
	ev_timer_init(&j->outwait[s], job_outwait_cb, LOG_READ_WAIT, 0.);
	j->outwait[s].data = j;
	if (j->nout <= s)
		j->nout = s + 1;
}

void
job_reap(struct job *j, int wstatus)
{
	job_pid_unhash(j);
	j->reaped = true;
	exitstatus_set(&j->exit, wstatus);
	job_cg_reaped(j);
}

void
job_ended(struct job *j)
{
	struct jobtab	*t = j->tab;

	j->state = JOB_EXITED;
	j->ended_ms = codec_now_ms();
	job_cgroup_final(j);
	t->nlive--;
	t->nended++;
	t->ended++;
}

/*
 * Trimming old jobs waits for the loop: our callers may be walking the
 * table.
 */
void
job_tell_end(struct job *j)
{
	struct jobtab	*t = j->tab;

	job_notify(j, JOB_EV_END);
	jobtab_tell(t, j, JOBTAB_EV_END);
	if (t->trim_at_end && t->nended > t->keep)
		ev_prepare_start(t->loop, &t->trim);
}

void
job_grace_init(struct job *j, double s)
{
	ev_timer_init(&j->grace, job_grace_cb, s, 0.);
}

void
job_grace_start(struct job *j)
{
	if (!ev_is_active(&j->grace))
		ev_timer_start(j->tab->loop, &j->grace);
}

static void
job_grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct job	*j = container_of(w, struct job, grace);

	(void)loop;
	(void)revents;
	job_signal(j, SIGKILL);
}

int
job_kill_root(struct job *j, int sig)
{
	if (j->reaped || j->pid <= 0) {
		errno = ESRCH;
		return -1;
	}
	job_sent(j, sig);
	return kill(j->pid, sig);
}

int
job_delete(struct job *j)
{
	int	err;

	/* The files first: a job whose files stay is kept as it was. */
	if (record_remove(&j->rec) == -1) {
		err = errno;
		log_warn("event=%s id=%s", j->kind->ev_remove_failed, j->id);
		errno = err;
		return -1;
	}
	if (j->state == JOB_RUNNING) {
		job_signal(j, SIGKILL);
		if (!j->reaped)
			(void)kill(j->pid, SIGKILL);
	}
	job_forget(j);
	return 0;
}

void
job_forget(struct job *j)
{
	struct jobtab		*t = j->tab;
	struct job_watch	*w;
	struct wlist_link	*l;

	/*
	 * Unlinked first: a callback's own job_watch_del is then a no-op.
	 * The mark of a walk in progress goes too: that walk ends.
	 */
	while ((l = j->watchers) != NULL) {
		wlist_del(&j->watchers, l);
		if (l->mark)
			continue;
		w = container_of(l, struct job_watch, link);
		w->job = NULL;
		w->fn(w, JOB_EV_GONE);
	}
	if (j->state == JOB_RUNNING) {
		t->nlive--;
		t->ended++;	/* forced: killed and removed at once */
	} else
		t->nended--;
	job_unlink(j);
	log_info("event=%s id=%s", j->kind->ev_removed, j->id);
	jobtab_tell(t, j, JOBTAB_EV_REMOVE);
	job_free(j);
}

void
job_free(struct job *j)
{
	struct ev_loop	*loop = j->tab->loop;
	size_t		 i;
	int		 s;

	for (s = 0; s < LS_NSTREAMS; s++)
		if (j->out[s] != -1) {
			ev_io_stop(loop, &j->outio[s]);
			ev_timer_stop(loop, &j->outwait[s]);
			close(j->out[s]);
		}
	if (j->in != -1) {
		ev_io_stop(loop, &j->inio);
		if (!j->in_shared)	/* else closed above, as out[0] */
			close(j->in);
	}
	job_input_wake(j, ENOENT);
	ev_timer_stop(loop, &j->grace);
	job_cg_free(j);
	record_free(&j->rec);
	for (i = 0; j->argv != NULL && j->argv[i] != NULL; i++)
		free(j->argv[i]);
	free(j->argv);
	free(j->cwd);
	buf_free(&j->inbuf);
	j->kind->free(j);
}

/* ------------------------------------------------------------------ */
/* Who is told */

void
job_watch_add(struct job *j, struct job_watch *w,
    void (*fn)(struct job_watch *, enum job_event))
{
	w->job = j;
	w->fn = fn;
	w->link.mark = false;
	wlist_add(&j->watchers, &w->link);
}

void
job_watch_del(struct job_watch *w)
{
	struct job	*j = w->job;

	if (j == NULL)
		return;
	wlist_del(&j->watchers, &w->link);
	w->job = NULL;
	(void)job_release_fds(j);
}

/* Anyone watching (a walk's mark is no one). */
static bool
job_watched(struct job *j)
{
	struct wlist_link	*l;

	for (l = j->watchers; l != NULL; l = l->next)
		if (!l->mark)
			return true;
	return false;
}

static void
job_tell_watch(struct wlist_link *l, void *arg)
{
	struct job_watch	*w = container_of(l, struct job_watch, link);

	w->fn(w, *(enum job_event *)arg);
}

/* A watcher that left during the walk may have been the last one. */
void
job_notify(struct job *j, enum job_event ev)
{
	if (wlist_walk(&j->watchers, job_tell_watch, &ev))
		(void)job_release_fds(j);
}

/* ------------------------------------------------------------------ */
/* Files and status */

struct logstore *
job_store(struct job *j)
{
	return record_store(&j->rec);
}

bool
job_release_fds(struct job *j)
{
	if (j->state == JOB_RUNNING || !job_output_done(j) || job_watched(j))
		return false;
	return record_release(&j->rec);
}

/* The status of now, written. */
int
job_put_status(struct job *j)
{
	cJSON	*st;
	char	*s = NULL;
	int	 rc, err;

	if ((st = j->kind->status(j, false)) != NULL)
		s = cJSON_PrintUnformatted(st);
	cJSON_Delete(st);
	rc = record_put_status(&j->rec, s);
	err = errno;
	free(s);
	errno = err;
	return rc;
}

/* The environment is recorded by name only: values may be secrets. */
cJSON *
job_meta_json(struct job *j, char **env, const char *user)
{
	cJSON	*m, *a;
	char	*name;
	size_t	 i;

	if ((m = cJSON_CreateObject()) == NULL)
		return NULL;
	(void)jsonstr_add_strv(m, "argv", j->argv);
	(void)jsonstr_add_bytes(m, "cwd", j->cwd);
	a = cJSON_AddArrayToObject(m, "env");
	for (i = 0; env != NULL && env[i] != NULL; i++) {
		name = strndup(env[i], strcspn(env[i], "="));
		cJSON_AddItemToArray(a, cJSON_CreateString(name));
		free(name);
	}
	if (user != NULL)
		cJSON_AddStringToObject(m, "user", user);
	else
		cJSON_AddNullToObject(m, "user");
	return m;
}

char *
job_meta_text(struct job *j, cJSON *m)
{
	char	 ts[TIME_MAX], *s;

	if (m == NULL)
		return NULL;
	codec_time(ts, j->started_ms);
	cJSON_AddStringToObject(m, "created_at", ts);
	cJSON_AddStringToObject(m, "bootId", j->tab->boot);
	s = cJSON_PrintUnformatted(m);
	cJSON_Delete(m);
	return s;
}

cJSON *
job_status_head(struct job *j)
{
	cJSON	*st;

	if ((st = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddStringToObject(st, "id", j->id);
	cJSON_AddNumberToObject(st, "pid", j->pid);
	(void)jsonstr_add_strv(st, "command", j->argv);
	(void)jsonstr_add_bytes(st, "cwd", j->cwd);
	return st;
}

/* ------------------------------------------------------------------ */
/* Output */

/*
 * A short read means the child writes a little at a time, and reading
 * each write as it comes costs a wakeup, a read and two pwrites per write
 * (a byte at a time: most of a core).  So after a short read the fd
 * rests LOG_READ_WAIT before it is read again: the writes of that moment
 * are taken in one read.  The first bytes after a quiet spell are read at
 * once, later ones wait a few ms at most; a pipe (PROC_PIPE_SIZE) or a
 * pty holds far more than a child that writes in small pieces puts in it
 * meanwhile.  The exit paths drain without waiting (job_drain_now).
 */
static void
job_out_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct job	*j = w->data;
	int		 s = (int)(w - j->outio);

	(void)revents;
	if (job_drain(j, s, PROC_DRAIN_ROUNDS) < LOG_READ_SMALL &&
	    j->out[s] != -1) {
		ev_io_stop(loop, w);
		/* Set again: a stopped timer keeps what was left of it. */
		ev_timer_set(&j->outwait[s], LOG_READ_WAIT, 0.);
		ev_timer_start(loop, &j->outwait[s]);
	}
}

static void
job_outwait_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct job	*j = w->data;
	int		 s = (int)(w - j->outwait);

	(void)revents;
	if (j->out[s] != -1)
		ev_io_start(loop, &j->outio[s]);
}

/*
 * Input went in: its echo is due, so an fd resting after a short read
 * is read again now, not LOG_READ_WAIT later (keystroke echo latency).
 */
void
job_out_wake(struct job *j)
{
	int	s;

	for (s = 0; s < j->nout; s++)
		if (j->out[s] != -1 && ev_is_active(&j->outwait[s])) {
			ev_timer_stop(j->tab->loop, &j->outwait[s]);
			ev_io_start(j->tab->loop, &j->outio[s]);
		}
}

/* The end of stream s: an input on the same fd ends with it. */
static void
job_out_close(struct job *j, int s)
{
	int	fd = j->out[s];

	ev_io_stop(j->tab->loop, &j->outio[s]);
	ev_timer_stop(j->tab->loop, &j->outwait[s]);
	j->out[s] = -1;
	if (j->in_shared && j->in == fd)
		job_input_close(j);
	close(fd);
}

void
job_out_end(struct job *j, int s)
{
	if (j->out[s] != -1)
		job_out_close(j, s);
}

size_t
job_drain(struct job *j, int s, int rounds)
{
	struct jobtab	*t = j->tab;
	struct logstore	*ls = &j->rec.ls;
	uint64_t	 nrec = ls->nrec, end = ls->end[s];
	uint64_t	 dropped = ls->dropped;
	size_t		 taken = 0;
	ssize_t		 n;
	bool		 closed = false, seen = false;

	if (j->out[s] == -1)
		return 0;	/* at its end already: told once */
	while (j->out[s] != -1 && rounds-- > 0) {
		n = logstore_drain(ls, s, j->out[s]);
		if (n > 0) {
			taken += (size_t)n;
			seen = false;
			continue;
		}
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			break;
		if (n == -1 && j->kind->read_again != NULL &&
		    j->kind->read_again(errno, &seen)) {
			rounds++;
			continue;
		}
		/* The end, or a read error of the fd: the stream is over. */
		job_out_close(j, s);
		closed = true;
	}
	(void)logstore_flush(ls);
	t->stored += ls->end[s] - end;
	t->dropped += ls->dropped - dropped;
	j->kind->drained(j, s, ls->nrec != nrec || ls->end[s] != end, closed);
	return taken;
}

void
job_drain_now(struct job *j)
{
	int	s;

	for (s = 0; s < j->nout; s++)
		(void)job_drain(j, s, PROC_DRAIN_ALL);
}

bool
job_output_done(struct job *j)
{
	int	s;

	for (s = 0; s < j->nout; s++)
		if (j->out[s] != -1)
			return false;
	return true;
}
