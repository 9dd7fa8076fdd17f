/*
 * proc.c: the process table.
 *
 * A process is launched in its own session and process group, with its
 * output on pipes that the agent drains into the record's logstore
 * whether or not anyone reads.  The agent's one reap loop hands every
 * reaped pid to proc_reaped(); a record stays "running" until its root
 * was reaped and no member of its group is left (the group has settled).
 */
#include <linux/close_range.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot.h"
#include "codec.h"
#include "fsutil.h"
#include "log.h"
#include "util.h"
#include "proc.h"


#define PROC_DRAIN_ROUNDS	16	/* chunks per wakeup before yielding */
#define PROC_PIPE_SIZE		(1024 * 1024)
#define PROC_SETTLE_POLL	0.1	/* s */
#define PROC_SETTLE_SOON	0.005	/* s, after an orphan of the group died */
/* "All that is readable now", bounded against a writer that never stops. */
#define PROC_DRAIN_ALL		4096
#define PROC_SYNC_DELAY		1.0	/* s, final statuses reach the disk */
#define PROC_SWEEP		5.0	/* s, ended records' files closed */
#define PROC_FIRST_STATUS	0.1	/* s, delay of the first status.json */

extern char **environ;

static const char *const proc_streams[LS_NSTREAMS] = { "stdout", "stderr" };

/* The child's ends of its stdio. */
struct proc_fds {
	int	in, out, err;
};

static void	proc_out_cb(struct ev_loop *, ev_io *, int);
static void	proc_outwait_cb(struct ev_loop *, ev_timer *, int);
static void	proc_in_cb(struct ev_loop *, ev_io *, int);
static void	proc_timeout_cb(struct ev_loop *, ev_timer *, int);
static void	proc_grace_cb(struct ev_loop *, ev_timer *, int);
static void	proc_settle_cb(struct ev_loop *, ev_timer *, int);
static size_t	proc_drain(struct proc *, int, int);
static void	proc_check_settled(struct proc *);
static void	proc_settle(struct proc *);
static void	proc_notify(struct proc *, enum proc_event);
static void	proc_write_status(struct proc *, bool);
static int	proc_put_status(struct proc *);
static void	proc_write_meta(struct proc *, const struct proc_opts *);
static int	proc_put_meta(struct proc *);
static int	proc_catch_up(struct proc *);
static int	proc_dir(struct proc *);
static void	proc_dir_done(struct proc *, int);
static int	proc_open_record(struct proc *, uint64_t);
static int	proc_mkdir(struct proctab *, const char *);
static void	proc_store_nowhere(struct proc *, uint64_t);
static cJSON	*proc_status_build(struct proc *, bool);
static void	proc_forget(struct proc *);
static void	proc_free(struct proc *);
static int	proctab_boot_dir(struct proctab *);
static void	proctab_set_procsfd(struct proctab *, int);
static void	proctab_trouble(struct proctab *, int);
static void	proctab_retry_cb(struct ev_loop *, ev_timer *, int);
static int	proctab_syncfd(struct proctab *);
static void	proctab_sync_soon(struct proctab *);
static void	proc_trim_exited(struct proctab *);
static void	proc_trim_cb(struct ev_loop *, ev_prepare *, int);
static void	proc_sync_cb(struct ev_loop *, ev_timer *, int);
static void	proc_first_status_cb(struct ev_loop *, ev_timer *, int);
static void	proc_sweep_cb(struct ev_loop *, ev_timer *, int);
static bool	proc_release_fds(struct proc *);
static void	proc_stdin_flush(struct proc *);
static void	proc_stdin_close(struct proc *);
static void	proc_stdin_wake(struct proc *, int);
static char	**proc_envp(struct proctab *, char **);
static _Noreturn void proc_child(const struct proc_opts *, struct proctab *,
		    char **, int, int, int, int);

/* ------------------------------------------------------------------ */
/* The table */

int
proctab_init(struct proctab *t, struct ev_loop *loop, const char *boot,
    int statefd, int procsfd)
{
	char	*s;
	size_t	 n = 0, i, k = 0;
	int	 adj = 0, fd;

	memset(t, 0, sizeof(*t));
	t->loop = loop;
	snprintf(t->boot, sizeof(t->boot), "%s", boot);
	t->statefd = statefd;
	t->procsfd = procsfd;
	t->maxlive = PROC_MAX_LIVE;
	t->keep_exited = PROC_KEEP_EXITED;
	t->maxlog = LOG_MAX_BYTES;
	ev_prepare_init(&t->trim, proc_trim_cb);
	ev_timer_init(&t->sync, proc_sync_cb, PROC_SYNC_DELAY, 0.);
	ev_timer_init(&t->sweep, proc_sweep_cb, PROC_SWEEP, PROC_SWEEP);
	ev_timer_start(loop, &t->sweep);
	ev_unref(loop);		/* the sweep alone does not keep the loop */
	ev_timer_init(&t->retry, proctab_retry_cb, STATE_RETRY_S,
	    STATE_RETRY_S);
	if (procsfd == -1)
		(void)proctab_boot_dir(t);	/* or degraded: it retries */

	/* The base environment: the agent's, without its own TEND_* knobs. */
	while (environ[n] != NULL)
		n++;
	if ((t->baseenv = calloc(n + 1, sizeof(char *))) == NULL)
		return -1;
	for (i = 0; i < n; i++)
		if (strncmp(environ[i], "TEND_", 5) != 0)
			t->baseenv[k++] = environ[i];

	/*
	 * Under memory pressure the kernel should pick a child, never the
	 * agent: lower our own score where allowed, raise the children's.
	 */
	if ((fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC)) != -1) {
		(void)!write(fd, "-500", 4);	/* needs CAP_SYS_RESOURCE */
		close(fd);
	}
	if ((s = fsutil_read(AT_FDCWD, "/proc/self/oom_score_adj", 16,
	    NULL)) != NULL) {
		adj = atoi(s);
		free(s);
	}
	t->child_oom = adj < 0 ? 0 : (adj + 100 > 1000 ? 1000 : adj + 100);

	/*
	 * Each live process holds about seven fds: raise our soft limit to
	 * the hard one, and give children the limit we were started with
	 * (select(2) users break above 1024).
	 */
	if (getrlimit(RLIMIT_NOFILE, &t->child_nofile) == 0) {
		struct rlimit	rl = t->child_nofile;

		rl.rlim_cur = rl.rlim_max;
		t->nofile_raised = rl.rlim_cur != t->child_nofile.rlim_cur &&
		    setrlimit(RLIMIT_NOFILE, &rl) == 0;
	}
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
	ev_prepare_stop(t->loop, &t->trim);
	ev_ref(t->loop);
	ev_timer_stop(t->loop, &t->sweep);
	ev_timer_stop(t->loop, &t->sync);
	ev_timer_stop(t->loop, &t->retry);
	(void)syncfs(proctab_syncfd(t));
	proctab_set_procsfd(t, -1);
	free(t->baseenv);
	t->baseenv = NULL;
}

/* ------------------------------------------------------------------ */
/* The state dir refusing writes */

/* The fd syncfs takes: any fd of the state dir's file system. */
static int
proctab_syncfd(struct proctab *t)
{
	return t->procsfd != -1 ? t->procsfd : t->statefd;
}

/* A procs fd the table made is the table's to close; one given is not. */
static void
proctab_set_procsfd(struct proctab *t, int fd)
{
	if (t->procsfd_ours && t->procsfd != -1)
		close(t->procsfd);
	t->procsfd = fd;
	t->procsfd_ours = fd != -1;
}

/*
 * (Re)make the boot's directory: at start when the agent gives none, and
 * when its procs directory was removed under us.  Without it new records
 * live in memory only (proc_open_record) and the retry timer tries again.
 */
static int
proctab_boot_dir(struct proctab *t)
{
	bool	again = t->procsfd != -1 || t->state_err != 0;
	int	fd, err;

	if (boot_create(t->statefd, t->boot, &fd) == -1) {
		err = errno;
		proctab_set_procsfd(t, -1);
		proctab_trouble(t, err);
		errno = err;
		return -1;
	}
	proctab_set_procsfd(t, fd);
	if (again)
		log_info("event=boot_dir_made boot=%s", t->boot);
	return 0;
}

/* A write to the state dir failed: say so once, retry until it takes it. */
static void
proctab_trouble(struct proctab *t, int err)
{
	if (t->state_err == 0)
		log_warnx("event=state_degraded err=\"%s\" msg=\"writes to the "
		    "state dir are retried every %gs\"", strerror(err),
		    STATE_RETRY_S);
	t->state_err = err;
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
	if (t->procsfd == -1 && proctab_boot_dir(t) == -1)
		return;
	for (p = t->head; p != NULL; p = p->next)
		if (proc_catch_up(p) == -1) {
			t->state_err = errno;
			return;
		}
	ev_timer_stop(loop, w);
	t->state_err = 0;
	log_info("event=state_recovered");
}

int
proctab_state_error(struct proctab *t, bool *bootdir, int *pending)
{
	struct proc	*p;
	int		 n = 0;

	for (p = t->head; p != NULL; p = p->next)
		if (p->status_failed || p->meta_pending != NULL)
			n++;
	if (bootdir != NULL)
		*bootdir = t->procsfd != -1;
	if (pending != NULL)
		*pending = n;
	if (t->procsfd != -1 && n == 0)
		return 0;
	return t->state_err != 0 ? t->state_err : EIO;
}

bool
proc_id_valid(const char *id)
{
	size_t	i;

	if (!((id[0] >= 'A' && id[0] <= 'Z') || (id[0] >= 'a' && id[0] <= 'z') ||
	    (id[0] >= '0' && id[0] <= '9')))
		return false;
	for (i = 1; id[i] != '\0'; i++) {
		if (i >= PROC_ID_MAX)
			return false;
		if (!((id[i] >= 'A' && id[i] <= 'Z') ||
		    (id[i] >= 'a' && id[i] <= 'z') ||
		    (id[i] >= '0' && id[i] <= '9') ||
		    id[i] == '.' || id[i] == '_' || id[i] == '-'))
			return false;
	}
	return true;
}

struct proc *
proc_find(struct proctab *t, const char *id)
{
	struct proc	*p;

	for (p = t->head; p != NULL; p = p->next)
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

/* ------------------------------------------------------------------ */
/* Launch */

/*
 * The child's environment: the base environment with the request's
 * entries replacing those of the same name.
 */
static char **
proc_envp(struct proctab *t, char **add)
{
	char	**envp;
	size_t	  n = 0, m = 0, i, j, k = 0, len;

	while (t->baseenv[n] != NULL)
		n++;
	while (add != NULL && add[m] != NULL)
		m++;
	if ((envp = calloc(n + m + 1, sizeof(char *))) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		len = strcspn(t->baseenv[i], "=");
		for (j = 0; j < m; j++)
			if (strncmp(add[j], t->baseenv[i], len) == 0 &&
			    add[j][len] == '=')
				break;
		if (j == m)
			envp[k++] = t->baseenv[i];
	}
	for (j = 0; j < m; j++)
		envp[k++] = add[j];
	return envp;
}

static void
proc_gen_id(struct proctab *t, char *out, size_t n)
{
	unsigned char	r[6];
	char		hex[13];

	do {
		arc4random_buf(r, sizeof(r));
		codec_hex(hex, r, sizeof(r));
		snprintf(out, n, "p%s", hex);
	} while (proc_find(t, out) != NULL);
}

/*
 * Default dispositions and an empty mask, for a child before exec: libev
 * blocks what it watches, and ignored signals survive exec.  glibc's
 * sigaction refuses the two signals it reserves (32, 33), which a parent
 * may still have left ignored: those go through the raw system call.
 */
void
proc_reset_signals(void)
{
	struct sigaction	sa;
	struct {
		void		*handler;
		unsigned long	 flags;
		void		*restorer;
		uint64_t	 mask;
	}			ksa = { 0 };
	sigset_t		none;
	int			sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		if (sigaction(sig, &sa, NULL) == -1 && sig != SIGKILL &&
		    sig != SIGSTOP)
			(void)syscall(SYS_rt_sigaction, sig, &ksa, NULL,
			    sizeof(ksa.mask));
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
}

/*
 * A child's fd limit (the one the agent started with) and a higher
 * oom_score_adj than the agent's: set by the child itself (pid 0, after
 * fork) or by the agent right after posix_spawn.  Async-signal-safe.
 */
void
proc_child_limits(struct proctab *t, pid_t pid)
{
	char	file[64], adj[16];
	int	fd, n;

	if (pid == 0)
		(void)setrlimit(RLIMIT_NOFILE, &t->child_nofile);
	else if (t->nofile_raised)
		(void)prlimit(pid, RLIMIT_NOFILE, &t->child_nofile, NULL);
	if (pid == 0)
		strcpy(file, "/proc/self/oom_score_adj");
	else
		snprintf(file, sizeof(file), "/proc/%d/oom_score_adj", (int)pid);
	if ((fd = open(file, O_WRONLY | O_CLOEXEC)) != -1) {
		n = snprintf(adj, sizeof(adj), "%d", t->child_oom);
		(void)!write(fd, adj, n);
		close(fd);
	}
}

/*
 * In the child, between fork and exec.  Only async-signal-safe calls
 * until exec (initgroups is the documented exception: it reads the group
 * database, which is safe after fork in a single-threaded parent).  A
 * failure is reported through errfd as an errno, then _exit(127).
 */
static _Noreturn void
proc_child(const struct proc_opts *o, struct proctab *t, char **envp,
    int in, int out, int err, int errfd)
{
	int			e, fd;

	proc_reset_signals();
	if (setsid() == -1)
		goto fail;
	proc_child_limits(t, 0);
	if (dup2(in, 0) == -1 || dup2(out, 1) == -1 || dup2(err, 2) == -1)
		goto fail;
	/* Every other fd of the agent is closed at exec; errfd is too. */
	if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == -1)
		for (fd = 3; fd < 4096; fd++)
			if (fd != errfd)
				close(fd);
	if (o->cwd != NULL && chdir(o->cwd) == -1)
		goto fail;
	if (o->has_user) {
		if (initgroups(o->user, o->gid) == -1 &&
		    setgroups(0, NULL) == -1)
			goto fail;
		if (setgid(o->gid) == -1 || setuid(o->uid) == -1)
			goto fail;
	}
	environ = envp;
	execvp(o->argv[0], o->argv);
fail:
	e = errno;
	(void)!write(errfd, &e, sizeof(e));
	_exit(127);
}

/*
 * The fork path, for launches that change user: everything is set up in
 * the child, and a failure comes back as an errno on a close-on-exec pipe.
 */
static pid_t
proc_exec_fork(struct proctab *t, const struct proc_opts *o, char **envp,
    const struct proc_fds *f, bool *spawn_failed, int *err)
{
	sigset_t	all, old;
	ssize_t		n;
	pid_t		pid;
	int		xpipe[2], childerr;

	if (pipe2(xpipe, O_CLOEXEC) == -1) {
		*err = errno;
		return -1;
	}
	/*
	 * Signals are blocked across fork so that no handler of the agent
	 * runs in the child before it resets them.
	 */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = fork();
	if (pid == 0)
		proc_child(o, t, envp, f->in, f->out, f->err, xpipe[1]);
	*err = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(xpipe[1]);
	if (pid == -1) {
		close(xpipe[0]);
		if (*err == ENOMEM)
			*err = EAGAIN;
		return -1;
	}
	/* EOF: exec succeeded (the pipe is close-on-exec). */
	do
		n = read(xpipe[0], &childerr, sizeof(childerr));
	while (n == -1 && errno == EINTR);
	close(xpipe[0]);
	if (n == (ssize_t)sizeof(childerr)) {
		*spawn_failed = true;
		*err = childerr;
		return -1;
	}
	return pid;
}

/*
 * argv[0] as execvp would find it, but along the PATH of the child's
 * environment and from the child's cwd.  -1 with ENOENT, or EACCES when only non-executable
 * files of that name exist.
 */
static int
proc_which(char **envp, const char *cwd, const char *name, char *out,
    size_t n)
{
	const char	*path = "/usr/local/bin:/usr/bin:/bin", *p, *colon;
	struct stat	 st;
	size_t		 i, len;
	int		 err = ENOENT;

	if (strchr(name, '/') != NULL) {
		snprintf(out, n, "%s", name);
		return 0;
	}
	for (i = 0; envp[i] != NULL; i++)
		if (strncmp(envp[i], "PATH=", 5) == 0)
			path = envp[i] + 5;
	for (p = path; ; p = colon + 1) {
		colon = strchr(p, ':');
		len = colon ? (size_t)(colon - p) : strlen(p);
		/* A relative entry is relative to the child's cwd. */
		if (snprintf(out, n, "%s%s%.*s%s%s",
		    len && *p != '/' && cwd ? cwd : "",
		    len && *p != '/' && cwd ? "/" : "",
		    (int)len, p, len ? "/" : "", name) < (int)n &&
		    stat(out, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(out, X_OK) == 0)
				return 0;
			err = EACCES;
		}
		if (colon == NULL)
			break;
	}
	errno = err;
	return -1;
}

/*
 * A file without a #! line is a shell script, as execvp has it: run it
 * with /bin/sh, argv[0] kept as the script's name.
 */
static int
proc_spawn_sh(pid_t *pid, const char *path, posix_spawn_file_actions_t *fa,
    posix_spawnattr_t *attr, char **argv, char **envp)
{
	char	**v;
	size_t	  n = 0;
	int	  rc;

	while (argv[n] != NULL)
		n++;
	if ((v = calloc(n + 2, sizeof(char *))) == NULL)
		return ENOMEM;
	v[0] = "sh";
	v[1] = (char *)path;
	memcpy(v + 2, argv + 1, n * sizeof(char *));	/* with the NULL */
	rc = posix_spawn(pid, "/bin/sh", fa, attr, v, envp);
	free(v);
	return rc;
}

/*
 * The common path: posix_spawn (vfork-fast) with a new session, default
 * signals, an empty mask, the three pipes and nothing else open.  What
 * posix_spawn cannot do is done from here right after: the oom score and
 * the fd limit, before the process can have done much.
 */
static pid_t
proc_exec_spawn(struct proctab *t, const struct proc_opts *o, char **envp,
    const struct proc_fds *f, bool *spawn_failed, int *err)
{
	posix_spawn_file_actions_t	 fa;
	posix_spawnattr_t		 attr;
	sigset_t			 all, none;
	char				 path[PATH_MAX];
	pid_t				 pid;
	int				 rc;

	if (proc_which(envp, o->cwd, o->argv[0], path, sizeof(path)) == -1) {
		*spawn_failed = true;
		*err = errno;
		return -1;
	}
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_init(&fa);
	sigfillset(&all);
	/*
	 * glibc's sigfillset leaves out the two signals it reserves (32,
	 * 33), and its posix_spawn then sets them to SIG_IGN in the child
	 * (ignored dispositions survive exec).  Add them by hand: the set is
	 * only handed to posix_spawn's own "reset to default" loop.
	 */
	all.__val[0] |= 1UL << (32 - 1) | 1UL << (33 - 1);
	sigemptyset(&none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID |
	    POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	posix_spawn_file_actions_adddup2(&fa, f->in, 0);
	posix_spawn_file_actions_adddup2(&fa, f->out, 1);
	posix_spawn_file_actions_adddup2(&fa, f->err, 2);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	if (o->cwd != NULL)
		posix_spawn_file_actions_addchdir_np(&fa, o->cwd);
	rc = posix_spawn(&pid, path, &fa, &attr, o->argv, envp);
	if (rc == ENOEXEC)
		rc = proc_spawn_sh(&pid, path, &fa, &attr, o->argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc != 0) {
		*err = rc;
		*spawn_failed = rc != EAGAIN && rc != ENOMEM;
		if (rc == ENOMEM)
			*err = EAGAIN;
		return -1;
	}
	proc_child_limits(t, pid);
	return pid;
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
		return -1;
	}
	return 0;
}

static char **
proc_strvdup(char **v)
{
	char	**d;
	size_t	  n = 0, i;

	while (v[n] != NULL)
		n++;
	if ((d = calloc(n + 1, sizeof(char *))) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if ((d[i] = strdup(v[i])) == NULL)
			return d;	/* freed by the caller's proc_free */
	return d;
}

struct proc *
proc_spawn(struct proctab *t, const struct proc_opts *o, bool *spawn_failed,
    int *err)
{
	struct proc	*p;
	char		 cwd[PATH_MAX], **envp = NULL;
	struct proc_fds	 fds;
	int		 opipe[2] = { -1, -1 }, epipe[2] = { -1, -1 };
	int		 ipipe[2] = { -1, -1 };
	int		 nullfd = -1, i;
	pid_t		 pid;

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
	if ((p = calloc(1, sizeof(*p))) == NULL) {
		*err = errno;
		return NULL;
	}
	p->tab = t;
	p->dirfd = -1;
	p->in = -1;
	p->out[0] = p->out[1] = -1;
	p->ls.fd[0] = p->ls.fd[1] = p->ls.idxfd = -1;
	if (o->id != NULL)
		snprintf(p->id, sizeof(p->id), "%s", o->id);
	else
		proc_gen_id(t, p->id, sizeof(p->id));
	p->grace_s = o->grace_s;
	p->stdin_pipe = o->stdin_pipe;
	if ((p->argv = proc_strvdup(o->argv)) == NULL)
		goto fail;
	if (o->cwd != NULL)
		p->cwd = strdup(o->cwd);
	else
		p->cwd = strdup(getcwd(cwd, sizeof(cwd)) ? cwd : "/");
	/*
	 * Kept as text, emitted raw: a parsed tree costs several times its
	 * size for as long as the record is kept.
	 */
	p->tags = o->tags ? cJSON_PrintUnformatted(o->tags) : strdup("{}");
	if (p->cwd == NULL || p->tags == NULL)
		goto fail;

	if (proc_pipe(opipe, 0) == -1 || proc_pipe(epipe, 0) == -1)
		goto fail;
	/*
	 * A larger stdout pipe lets a fast writer run while the agent
	 * stores the last burst: fewer wakeups per byte.  Best effort (the
	 * system's pipe-max-size may refuse it).
	 */
	(void)fcntl(opipe[0], F_SETPIPE_SZ, PROC_PIPE_SIZE);
	if (o->stdin_pipe) {
		if (proc_pipe(ipipe, 1) == -1)
			goto fail;
	} else if ((nullfd = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		goto fail;
	if ((envp = proc_envp(t, o->env)) == NULL)
		goto fail;

	fds.in = o->stdin_pipe ? ipipe[0] : nullfd;
	fds.out = opipe[1];
	fds.err = epipe[1];
	pid = o->has_user ? proc_exec_fork(t, o, envp, &fds, spawn_failed, err) :
	    proc_exec_spawn(t, o, envp, &fds, spawn_failed, err);
	free(envp);
	envp = NULL;
	if (pid == -1)
		goto fail_keep_err;	/* a failed child is left to the reaper */

	/*
	 * The record's directory is made while the child loads its program
	 * on another CPU.  If it cannot be (other than by a full or
	 * read-only state dir) the launch is undone (the reaper collects
	 * the child).
	 */
	if (proc_open_record(p, o->maxlog ? o->maxlog : t->maxlog) == -1) {
		*err = errno;
		(void)kill(-pid, SIGKILL);
		goto fail_keep_err;
	}
	p->fds_open = true;

	p->pid = pid;
	p->started_ms = codec_now_ms();
	p->state = PROC_RUNNING;
	p->out[0] = opipe[0];
	p->out[1] = epipe[0];
	close(opipe[1]);
	close(epipe[1]);
	if (nullfd != -1)
		close(nullfd);
	if (o->stdin_pipe) {
		close(ipipe[0]);
		p->in = ipipe[1];
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
	if (o->timeout_s > 0)
		ev_timer_start(t->loop, &p->timeout);

	p->prev = t->tail;
	if (t->tail != NULL)
		t->tail->next = p;
	else
		t->head = p;
	t->tail = p;
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
	log_info("event=process_started id=%s pid=%d", p->id, (int)pid);
	*err = 0;
	return p;

fail:
	*err = errno;
fail_keep_err:
	free(envp);
	for (i = 0; i < 2; i++) {
		if (opipe[i] != -1)
			close(opipe[i]);
		if (epipe[i] != -1)
			close(epipe[i]);
		if (ipipe[i] != -1)
			close(ipipe[i]);
	}
	if (nullfd != -1)
		close(nullfd);
	/* No record remains: the ID can be used again. */
	if (p->dirfd != -1)
		fsutil_rmtree(t->procsfd, p->id);
	proc_free(p);
	return NULL;
}

/* Errors of a state dir that is full, read-only, or gone. */
static bool
proc_disk_refused(int err)
{
	return err == ENOSPC || err == EDQUOT || err == EROFS || err == EIO ||
	    err == ENOENT || err == EACCES;
}

/*
 * The record's directory and store.  A procs directory removed under us
 * is made again.  When the state dir cannot take a directory (full,
 * read-only, the boot's directory missing) the record lives in memory:
 * its output is dropped and counted, and its directory, meta.json and
 * status.json are written once the state dir takes them (the retry
 * timer).  Anything else, a link planted under the ID included, fails.
 */
static int
proc_open_record(struct proc *p, uint64_t maxlog)
{
	struct proctab	*t = p->tab;
	int		 err = t->state_err != 0 ? t->state_err : ENOENT;

	if (t->procsfd != -1) {
		if ((p->dirfd = proc_mkdir(t, p->id)) != -1)
			return logstore_create_lazy(&p->ls, p->dirfd,
			    LS_NSTREAMS, proc_streams, maxlog);
		if (!proc_disk_refused(errno))
			return -1;
		err = errno;
	}
	log_warnx("event=record_in_memory id=%s err=\"%s\"", p->id,
	    strerror(err));
	proctab_trouble(t, err);
	p->nodir = true;
	proc_store_nowhere(p, maxlog);
	return 0;
}

/* A record's directory, made or found; a procs directory gone is remade. */
static int
proc_mkdir(struct proctab *t, const char *id)
{
	int	fd;

	fd = fsutil_opendirs(t->procsfd, id);
	if (fd == -1 && errno == ENOENT && proctab_boot_dir(t) == 0)
		fd = fsutil_opendirs(t->procsfd, id);
	return fd;
}

/*
 * A store with no directory: logstore_ensure has no dirfd to create its
 * files in, so every byte is dropped and counted, and readers find an
 * empty record.  (logstore_create_lazy wants a directory.)
 */
static void
proc_store_nowhere(struct proc *p, uint64_t maxlog)
{
	struct logstore	*ls = &p->ls;

	memset(ls, 0, sizeof(*ls));
	ls->fd[0] = ls->fd[1] = ls->idxfd = ls->dirfd = -1;
	ls->nstreams = LS_NSTREAMS;
	ls->maxbytes = maxlog;
	ls->names = proc_streams;
}

/*
 * meta.json: how the process was launched.  The environment is recorded
 * by name only: values may be secrets.  Kept in memory until written.
 */
static void
proc_write_meta(struct proc *p, const struct proc_opts *o)
{
	char	 ts[TIME_MAX], *s;
	cJSON	*j, *a;
	size_t	 i;
	int	 err;

	j = cJSON_CreateObject();
	a = cJSON_AddArrayToObject(j, "argv");
	for (i = 0; p->argv[i] != NULL; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(p->argv[i]));
	cJSON_AddStringToObject(j, "cwd", p->cwd);
	a = cJSON_AddArrayToObject(j, "env");
	for (i = 0; o->env != NULL && o->env[i] != NULL; i++) {
		char	name[256];

		snprintf(name, sizeof(name), "%.*s",
		    (int)strcspn(o->env[i], "="), o->env[i]);
		cJSON_AddItemToArray(a, cJSON_CreateString(name));
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
	cJSON_AddNumberToObject(a, "maxLogBytes", (double)p->ls.maxbytes);
	cJSON_AddRawToObject(j, "tags", p->tags);
	codec_time(ts, p->started_ms);
	cJSON_AddStringToObject(j, "created_at", ts);
	cJSON_AddStringToObject(j, "bootId", p->tab->boot);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if ((p->meta_pending = s) == NULL) {
		log_warnx("event=meta_write_failed id=%s err=\"out of memory\"",
		    p->id);
		return;
	}
	/* A record in memory said so already (proc_open_record). */
	if (proc_put_meta(p) == -1) {
		err = errno;
		if (!p->nodir)
			log_warn("event=meta_write_failed id=%s", p->id);
		proctab_trouble(p->tab, err);
	}
}

/* Write the pending meta.json: a new file, never replaced. */
static int
proc_put_meta(struct proc *p)
{
	int	dfd, rc, err;

	if ((dfd = proc_dir(p)) == -1)
		return -1;
	rc = fsutil_write_new(dfd, "meta.json", p->meta_pending,
	    strlen(p->meta_pending));
	err = errno;
	proc_dir_done(p, dfd);
	if (rc == -1 && err != EEXIST) {
		errno = err;
		return -1;
	}
	free(p->meta_pending);
	p->meta_pending = NULL;
	return 0;
}

/*
 * The record's directory for one write: its own fd while it holds one;
 * else opened for the write; or made, for a record launched without one
 * (which holds it from then on, its output still dropped) or whose
 * directory was removed under us: its status is worth keeping.  -1 and
 * errno.
 */
static int
proc_dir(struct proc *p)
{
	struct proctab	*t = p->tab;
	int		 fd;

	if (p->dirfd != -1)
		return p->dirfd;
	if (t->procsfd == -1) {
		errno = t->state_err != 0 ? t->state_err : ENOENT;
		return -1;
	}
	if (!p->nodir && ((fd = fsutil_open(t->procsfd, p->id,
	    O_RDONLY | O_DIRECTORY, 0)) != -1 || errno != ENOENT))
		return fd;
	if ((fd = proc_mkdir(t, p->id)) == -1 || !p->nodir)
		return fd;
	p->dirfd = fd;
	p->nodir = false;
	return fd;
}

static void
proc_dir_done(struct proc *p, int fd)
{
	if (fd != p->dirfd)
		close(fd);
}

/*
 * What the record still owes the state dir: 0 when nothing (any more).
 * The status written is the one of now, so a late write is never stale.
 */
static int
proc_catch_up(struct proc *p)
{
	if (p->meta_pending != NULL && proc_put_meta(p) == -1)
		return -1;
	if (!p->status_failed)
		return 0;
	if (proc_put_status(p) == -1)
		return -1;
	p->status_failed = false;
	if (p->state != PROC_RUNNING)
		proctab_sync_soon(p->tab);	/* a final one, late */
	log_info("event=status_written id=%s late=1", p->id);
	return 0;
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
	uint64_t	 nrec = p->ls.nrec, end = p->ls.end[s];
	uint64_t	 dropped = p->ls.dropped;
	size_t		 taken = 0;
	ssize_t		 n;
	bool		 done;

	if (p->out[s] == -1)
		return 0;	/* at EOF already: told once */

	while (p->out[s] != -1 && rounds-- > 0) {
		n = logstore_drain(&p->ls, s, p->out[s]);
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
	(void)logstore_flush(&p->ls);
	t->stored += p->ls.end[s] - end;
	t->dropped += p->ls.dropped - dropped;
	done = p->out[s] == -1 && proc_output_done(p);
	/*
	 * The last status first: a watcher told of the output may end and
	 * let the record give back its files (proc_release_fds).
	 */
	if (done && p->state != PROC_RUNNING)
		proc_write_status(p, true);
	if (p->ls.nrec != nrec || p->ls.end[s] != end)	/* new or grown */
		proc_notify(p, PROC_EV_OUTPUT);
	if (done) {
		proc_notify(p, PROC_EV_EOF);
		(void)proc_release_fds(p);
	}
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
	for (p = t->head; p != NULL; p = p->next)
		if (p->pid == pid && !p->reaped && p->state == PROC_RUNNING)
			break;
	if (p != NULL) {
		/*
		 * What the root wrote is in the pipes now: take it before
		 * anyone hears of the exit (exec replies at this point).
		 */
		proc_drain_now(p);
		p->reaped = true;
		if (WIFSIGNALED(wstatus)) {
			p->sig = WTERMSIG(wstatus);
			p->code = 128 + p->sig;
		} else
			p->code = WEXITSTATUS(wstatus);
		/* The timeout still runs: it bounds the group, not the root. */
		log_info("event=process_exited id=%s pid=%d code=%d signal=%d",
		    p->id, (int)pid, p->code, p->sig);
		proc_notify(p, PROC_EV_EXIT);
		proc_check_settled(p);
		return;
	}
	/*
	 * An orphan: it may have been the last member of some group.  Each
	 * unsettled group is looked at again soon, not now: kill(-pgid, 0)
	 * walks the whole group, and 2,000 members dying one by one would
	 * make that a walk per death.  A burst costs a check per
	 * PROC_SETTLE_SOON at most; the last death is seen within it.
	 */
	t->orphans++;
	for (p = t->head; p != NULL; p = p->next)
		if (p->reaped && p->state == PROC_RUNNING &&
		    ev_timer_remaining(t->loop, &p->settle) > PROC_SETTLE_SOON) {
			ev_timer_stop(t->loop, &p->settle);
			ev_timer_set(&p->settle, PROC_SETTLE_SOON,
			    PROC_SETTLE_POLL);
			ev_timer_start(t->loop, &p->settle);
		}
}

/*
 * The group has settled when no process is left in it.  Members that are
 * zombies still count until the reap loop collects them; members that are
 * not our children are found by the poll timer.
 */
static void
proc_check_settled(struct proc *p)
{
	if (kill(-p->pid, 0) == -1 && errno == ESRCH) {
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
	(void)proc_release_fds(p);
	if (t->on_settle != NULL)
		t->on_settle(t);
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
	(void)kill(-p->pid, SIGTERM);
	ev_timer_start(loop, &p->grace);
}

static void
proc_grace_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proc	*p = container_of(w, struct proc, grace);

	(void)loop;
	(void)revents;
	(void)kill(-p->pid, SIGKILL);
}

int
proc_kill(struct proc *p, int sig, bool group)
{
	if (p->state != PROC_RUNNING) {
		errno = ESRCH;
		return -1;
	}
	if (group)
		return kill(-p->pid, sig);
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
	if (p->sig)
		cJSON_AddNumberToObject(e, "signal", p->sig);
	else
		cJSON_AddNullToObject(e, "signal");
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
	char	 ts[TIME_MAX];
	cJSON	*j, *a;
	size_t	 i;

	if ((j = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddStringToObject(j, "id", p->id);
	cJSON_AddNumberToObject(j, "pid", p->pid);
	a = cJSON_AddArrayToObject(j, "command");
	for (i = 0; p->argv[i] != NULL; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(p->argv[i]));
	cJSON_AddStringToObject(j, "cwd", p->cwd);
	codec_time(ts, p->started_ms);
	cJSON_AddStringToObject(j, "startedAt", ts);
	cJSON_AddStringToObject(j, "state", proc_state_name(p->state));
	if (p->state == PROC_EXITED) {
		cJSON_AddItemToObject(j, "exit", proc_exit_json(p));
		codec_time(ts, p->ended_ms);
		cJSON_AddStringToObject(j, "endedAt", ts);
	}
	cJSON_AddStringToObject(j, "bootId", p->tab->boot);
	cJSON_AddNumberToObject(j, "stdoutBytes", (double)p->ls.end[LS_STDOUT]);
	cJSON_AddNumberToObject(j, "stderrBytes", (double)p->ls.end[LS_STDERR]);
	cJSON_AddNumberToObject(j, "droppedBytes", (double)p->ls.dropped);
	cJSON_AddRawToObject(j, "tags", p->tags);
	if (live && p->status_failed)
		cJSON_AddBoolToObject(j, "statusWriteFailed", true);
	return j;
}

/*
 * status.json, the first one included, replaces the last atomically
 * (temp file, rename): a write the disk refuses leaves the previous file
 * whole, and the record says statusWriteFailed until a retry (every
 * STATE_RETRY_S, and at shutdown) writes the status of that moment.  A
 * final status is made durable by one syncfs of the state dir at most a
 * second later, rather than an fsync per file on the loop: a record
 * found "running" after a crash becomes "lost" either way.
 */
static void
proc_write_status(struct proc *p, bool final)
{
	struct proctab	*t = p->tab;
	int		 err;

	p->status_written = true;
	if (proc_put_status(p) == 0)
		p->status_failed = false;
	else {
		err = errno;
		if (!p->status_failed && !p->nodir)
			log_warn("event=status_write_failed id=%s", p->id);
		p->status_failed = true;
		proctab_trouble(t, err);
	}
	if (final)
		proctab_sync_soon(t);
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

static int
proc_put_status(struct proc *p)
{
	cJSON	*j;
	char	*s;
	int	 dfd, rc, err;

	if ((j = proc_status_build(p, false)) == NULL ||
	    (s = cJSON_PrintUnformatted(j)) == NULL) {
		cJSON_Delete(j);
		errno = ENOMEM;
		return -1;
	}
	cJSON_Delete(j);
	if ((dfd = proc_dir(p)) == -1)
		rc = -1;
	else {
		rc = fsutil_write_atomic(dfd, "status.json", s, strlen(s),
		    false);
		err = errno;
		proc_dir_done(p, dfd);
		errno = err;
	}
	err = errno;
	free(s);
	errno = err;
	return rc;
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
 * syncfs can take long on a busy disk; the loop must not wait for it, so
 * a forked child does it (the reap loop collects the child).  One at a
 * time: a sync still running covers what the next would.
 */
static void
proc_sync_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct proctab	*t = container_of(w, struct proctab, sync);
	int		 sfd = proctab_syncfd(t);
	pid_t		 pid;

	(void)revents;
	if (t->sync_pid > 0) {
		ev_timer_set(w, PROC_SYNC_DELAY, 0.);
		ev_timer_start(loop, w);
		return;
	}
	if ((pid = fork()) == 0) {
		/* No pipe or socket of the agent may live on in it. */
		int	fd;

		for (fd = 0; fd < sfd; fd++)
			(void)close(fd);
		if (close_range(sfd + 1, ~0U, 0) == -1)
			for (fd = sfd + 1; fd < 65536; fd++)
				(void)close(fd);
		(void)syncfs(sfd);
		_exit(0);
	}
	if (pid == -1 && syncfs(sfd) == -1)
		log_warn("event=syncfs_failed");
	t->sync_pid = pid > 0 ? pid : 0;
}

/* ------------------------------------------------------------------ */
/* Watchers */

/* ------------------------------------------------------------------ */
/* Open files of ended records */

/*
 * An ended record whose output reached EOF and that nobody watches gives
 * its four fds back: with a thousand records kept they would fill the fd
 * table, and every spawn pays for the table's size.  Readers reopen them
 * with proc_store().
 */
static bool
proc_release_fds(struct proc *p)
{
	if (!p->fds_open || p->nodir || p->state == PROC_RUNNING ||
	    !proc_output_done(p) || p->watchers != NULL)
		return false;	/* nodir: nothing to reopen from */
	logstore_close(&p->ls);
	if (p->dirfd != -1)
		close(p->dirfd);
	p->dirfd = -1;
	p->fds_open = false;
	return true;
}

struct logstore *
proc_store(struct proc *p)
{
	struct logstore	ro;
	int		dfd, i;

	if (p->fds_open)
		return &p->ls;
	dfd = fsutil_open(p->tab->procsfd, p->id, O_RDONLY | O_DIRECTORY, 0);
	if (dfd == -1)
		return NULL;
	i = logstore_open(&ro, dfd, LS_NSTREAMS, proc_streams);
	close(dfd);
	if (i == -1)
		return NULL;
	/* Sizes and counts stay ours: the files cannot tell what was dropped. */
	for (i = 0; i < LS_NSTREAMS; i++)
		p->ls.fd[i] = ro.fd[i];
	p->ls.idxfd = ro.idxfd;
	p->ls.ro = true;
	p->fds_open = true;
	return &p->ls;
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

void
proc_watch_add(struct proc *p, struct proc_watch *w,
    void (*fn)(struct proc_watch *, enum proc_event))
{
	w->proc = p;
	w->fn = fn;
	w->prev = NULL;
	w->next = p->watchers;
	if (p->watchers != NULL)
		p->watchers->prev = w;
	p->watchers = w;
}

void
proc_watch_del(struct proc_watch *w)
{
	struct proc	*p = w->proc;

	if (p == NULL)
		return;
	if (w->prev != NULL)
		w->prev->next = w->next;
	else
		p->watchers = w->next;
	if (w->next != NULL)
		w->next->prev = w->prev;
	w->next = w->prev = NULL;
	w->proc = NULL;
	(void)proc_release_fds(p);
}

/*
 * Tell every watcher.  A watcher may remove itself (or be removed) in its
 * callback, so the next one is looked up again by walking from a marker
 * that is safe: we restart from the head and skip those already told.
 */
static void
proc_notify(struct proc *p, enum proc_event ev)
{
	struct proc_watch	*w, *next;

	for (w = p->watchers; w != NULL; w = next) {
		next = w->next;
		w->fn(w, ev);
	}
}

/* ------------------------------------------------------------------ */
/* Removal */

int
proc_delete(struct proc *p)
{
	struct proctab	*t = p->tab;
	int		 err;

	/* The files first: a record whose files stay is kept as it was. */
	if (!p->nodir && t->procsfd != -1 &&
	    fsutil_rmtree(t->procsfd, p->id) == -1) {
		err = errno;
		log_warn("event=record_remove_failed id=%s", p->id);
		errno = err;
		return -1;
	}
	if (p->state == PROC_RUNNING) {
		(void)kill(-p->pid, SIGKILL);
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
	struct proctab	*t = p->tab;

	/* Unlinked first: a callback's own proc_watch_del is then a no-op. */
	while (p->watchers != NULL) {
		struct proc_watch	*w = p->watchers;

		proc_watch_del(w);
		w->fn(w, PROC_EV_GONE);
	}
	if (p->state == PROC_RUNNING) {
		t->nlive--;
		t->exited++;	/* forced: killed and removed at once */
	} else
		t->nexited--;
	if (p->prev != NULL)
		p->prev->next = p->next;
	else
		t->head = p->next;
	if (p->next != NULL)
		p->next->prev = p->prev;
	else
		t->tail = p->prev;
	log_info("event=process_removed id=%s", p->id);
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
	logstore_close(&p->ls);
	if (p->dirfd != -1)
		close(p->dirfd);
	for (i = 0; p->argv != NULL && p->argv[i] != NULL; i++)
		free(p->argv[i]);
	free(p->argv);
	free(p->cwd);
	free(p->meta_pending);
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
			(void)kill(-p->pid, sig);
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
	if (t->procsfd == -1)
		(void)proctab_boot_dir(t);
	for (p = t->head; p != NULL; p = p->next) {
		if (!p->status_failed && p->meta_pending == NULL)
			continue;
		if (owed == 0 && proc_catch_up(p) == 0)
			continue;
		if (owed++ == 0)
			t->state_err = errno;
	}
	if (owed > 0)
		log_warnx("event=statuses_not_written count=%d err=\"%s\"",
		    owed, strerror(t->state_err != 0 ? t->state_err : EIO));
}
