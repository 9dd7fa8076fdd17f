/*
 * spawn.c: starting a child program.
 *
 * Owns how a child comes to life: the PATH lookup along the child's own
 * environment, posix_spawn (vfork-fast) for the common launch, fork for
 * what posix_spawn cannot do (another user, a controlling terminal),
 * the errno handshake that reports a failed exec from a forked child,
 * default signals, the limits a child gets (oom score, fd limit), and
 * the confinement a request asks for (network namespace, rlimits,
 * seccomp deny-list, no_new_privs).  It knows nothing of records or of
 * the table: the caller gives fds.
 */
#include <linux/close_range.h>
#include <linux/filter.h>
#include <linux/oom.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/tunables.h"
#include "base/util.h"
#include "spawn.h"
#include "spawn_int.h"
#include "user.h"

/*
 * Where a forked child failed, sent with its errno: a step of the
 * confinement (SPAWN_STAGE_CONFINE) is the agent's shortcoming, not the
 * program's, and must not read as "could not run it".
 */
enum spawn_stage {
	SPAWN_STAGE_RUN,	/* stdio, cwd, user, exec: the program's */
	SPAWN_STAGE_CONFINE	/* network namespace, seccomp */
};

struct spawn_fail {
	int	stage;		/* enum spawn_stage */
	int	err;
};

const char *const spawn_rlimit_names[SPAWN_NRLIM] = {
	"nofile", "nproc", "as", "cpu", "fsize"
};
static const int spawn_rlimit_res[SPAWN_NRLIM] = {
	RLIMIT_NOFILE, RLIMIT_NPROC, RLIMIT_AS, RLIMIT_CPU, RLIMIT_FSIZE
};

/* seccomp:"default" answers EPERM to these (DESIGN §6). */
static const char *const spawn_denied[] = {
	"mount", "umount2", "pivot_root", "swapon", "swapoff", "reboot",
	"kexec_load", "kexec_file_load", "init_module", "finit_module",
	"delete_module", "bpf", "perf_event_open", "keyctl", "add_key",
	"request_key", "unshare", "setns", "open_by_handle_at", "userfaultfd"
};

/*
 * The deny-list as BPF, built once by spawn_filter and never changed
 * after: a child between fork and exec only hands it to the kernel.
 */
static struct sock_filter	*spawn_bpf;
static unsigned short		 spawn_bpf_len;

static int	spawn_child_stdio(const struct spawn_opts *);
static int	spawn_child_ctty(const char *);
static int	spawn_child_user(const struct spawn_opts *,
		    const struct spawn_groups *);
static pid_t	spawn_fork(const struct spawn_opts *, bool *);
static pid_t	spawn_posix(const struct spawn_opts *, bool *);
static int	spawn_attr(posix_spawnattr_t *, const struct spawn_opts *);
static int	spawn_actions(posix_spawn_file_actions_t *,
		    const struct spawn_opts *);
static char	**spawn_sh_argv(const char *, char *const *);
static void	spawn_child_exec(const struct spawn_opts *);
static int	spawn_sh(pid_t *, const char *, posix_spawn_file_actions_t *,
		    posix_spawnattr_t *, char *const *, char *const *);

/* ------------------------------------------------------------------ */
/* Limits */

void
spawn_limits_init(struct spawn_limits *l)
{
	char	*s, adj[16];
	int	 fd, n, own = 0;

	memset(l, 0, sizeof(*l));
	/*
	 * Under memory pressure the kernel should pick a child, never the
	 * agent: lower our own score where allowed, raise the children's.
	 */
	if ((fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC)) != -1) {
		n = snprintf(adj, sizeof(adj), "%d", SPAWN_AGENT_OOM_ADJ);
		(void)!write(fd, adj, n);	/* needs CAP_SYS_RESOURCE */
		close(fd);
	}
	if ((s = fsutil_read(AT_FDCWD, "/proc/self/oom_score_adj", 16,
	    NULL)) != NULL) {
		own = atoi(s);
		free(s);
	}
	l->oom_adj = own < 0 ? 0 : own + SPAWN_CHILD_OOM_RAISE;
	if (l->oom_adj > OOM_SCORE_ADJ_MAX)
		l->oom_adj = OOM_SCORE_ADJ_MAX;

	/*
	 * Each live process holds about seven fds: raise our soft limit to
	 * the hard one, and give children the limit we were started with
	 * (select(2) users break above 1024).
	 */
	if (getrlimit(RLIMIT_NOFILE, &l->nofile) == 0) {
		struct rlimit	rl = l->nofile;

		rl.rlim_cur = rl.rlim_max;
		l->nofile_raised = rl.rlim_cur != l->nofile.rlim_cur &&
		    setrlimit(RLIMIT_NOFILE, &rl) == 0;
	} else
		l->nofile.rlim_cur = l->nofile.rlim_max = RLIM_INFINITY;
}

void
spawn_child_limits(const struct spawn_limits *l, pid_t pid)
{
	char	file[64], adj[16];
	int	fd, n;

	if (pid == 0)
		(void)setrlimit(RLIMIT_NOFILE, &l->nofile);
	else if (l->nofile_raised)
		(void)prlimit(pid, RLIMIT_NOFILE, &l->nofile, NULL);
	if (pid == 0)
		strcpy(file, "/proc/self/oom_score_adj");
	else
		snprintf(file, sizeof(file), "/proc/%d/oom_score_adj", (int)pid);
	if ((fd = open(file, O_WRONLY | O_CLOEXEC)) != -1) {
		n = snprintf(adj, sizeof(adj), "%d", l->oom_adj);
		(void)!write(fd, adj, n);
		close(fd);
	}
}

/* ------------------------------------------------------------------ */
/* What every child starts with */

/*
 * libev blocks what it watches, and ignored signals survive exec.
 * glibc's sigaction refuses the two signals it reserves (32, 33), which
 * a parent may still have left ignored: those go through the raw system
 * call.
 */
void
spawn_reset_signals(void)
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

pid_t
spawn_helper(int *keep, int n)
{
	pid_t	pid;

	if ((pid = fork()) == 0) {
		spawn_reset_signals();
		spawn_close_except(keep, n);
	}
	return pid;
}

/*
 * Close every fd but the n in keep (in a child before exec or _exit).
 * The gaps between kept fds go with close_range; where it is missing
 * (before Linux 5.9) the fds below SPAWN_CLOSE_MAX are closed one by one.
 * Async-signal-safe; keep is sorted in place.
 */
void
spawn_close_except(int *keep, int n)
{
	unsigned int	lo = 0, hi;
	int		i, j, t, fd;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--)
			t = keep[j], keep[j] = keep[j - 1], keep[j - 1] = t;
	for (i = 0; i <= n; i++) {
		hi = i < n ? (unsigned int)keep[i] : ~0U;
		if (hi > lo && close_range(lo, hi - 1, 0) == -1)
			for (fd = (int)lo; (unsigned int)fd < hi &&
			    fd < SPAWN_CLOSE_MAX; fd++)
				(void)close(fd);
		lo = hi + 1;
	}
}

int
spawn_which(char *const *envp, const char *cwd, const char *name, char *out,
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

/* ------------------------------------------------------------------ */
/* Confinement */

bool
spawn_confined(const struct spawn_confine *c)
{
	int	i;

	if (c == NULL)
		return false;
	for (i = 0; i < SPAWN_NRLIM; i++)
		if (c->has_rlim[i])
			return true;
	return c->nonewprivs || c->seccomp || c->nonet;
}

/*
 * A network namespace with nothing in it but lo, brought up with the
 * ioctl `ip link set lo up` makes (no binary to run in a child).
 */
int
spawn_child_nonet(void)
{
	struct ifreq	ifr;
	int		s, rc, err;

	if (unshare(CLONE_NEWNET) == -1)
		return -1;
	if ((s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if ((rc = ioctl(s, SIOCGIFFLAGS, &ifr)) == 0) {
		ifr.ifr_flags |= IFF_UP;
		rc = ioctl(s, SIOCSIFFLAGS, &ifr);
	}
	err = errno;
	(void)close(s);
	errno = err;
	return rc;
}

/* Soft and hard both: a program may not raise them back. */
int
spawn_child_rlimits(const struct spawn_confine *c)
{
	struct rlimit	rl;
	int		i;

	for (i = 0; i < SPAWN_NRLIM; i++) {
		if (!c->has_rlim[i])
			continue;
		rl.rlim_cur = rl.rlim_max = c->rlim[i];
		if (setrlimit(spawn_rlimit_res[i], &rl) == -1)
			return -1;
	}
	return 0;
}

int
spawn_child_seccomp(void)
{
	struct sock_fprog	prog;

	if (spawn_bpf == NULL) {
		errno = EINVAL;
		return -1;
	}
	prog.len = spawn_bpf_len;
	prog.filter = spawn_bpf;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

/*
 * libseccomp builds the filter (it allocates, so not in a child) and
 * exports it as raw BPF through a pipe; the program is kept for every
 * child to come.  On x86_64 the i386 and x32 ABIs get the same rules:
 * otherwise a denied call made through int 0x80 would pass, and a 32-bit
 * program would be killed for its architecture.
 */
int
spawn_filter(void)
{
	scmp_filter_ctx	 ctx;
	char		*buf = NULL;
	ssize_t		 n = 0, r;
	size_t		 i;
	int		 p[2] = { -1, -1 }, rc = -ENOMEM, nr, err;

	if (spawn_bpf != NULL)
		return 0;
	if ((ctx = seccomp_init(SCMP_ACT_ALLOW)) == NULL)
		goto done;
#if defined(__x86_64__)
	if ((rc = seccomp_arch_add(ctx, SCMP_ARCH_X86)) < 0 ||
	    (rc = seccomp_arch_add(ctx, SCMP_ARCH_X32)) < 0)
		goto done;
#endif
	for (i = 0; i < nitems(spawn_denied); i++) {
		/* One this architecture lacks cannot be called. */
		if ((nr = seccomp_syscall_resolve_name(spawn_denied[i])) ==
		    __NR_SCMP_ERROR)
			continue;
		if ((rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr,
		    0)) < 0)
			goto done;
	}
	/* Non-blocking: a filter larger than the pipe fails, never hangs. */
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == -1) {
		rc = -errno;
		goto done;
	}
	rc = seccomp_export_bpf(ctx, p[1]);
	(void)close(p[1]);
	if (rc < 0)
		goto done;
	rc = -ENOMEM;
	if ((buf = malloc(SPAWN_FILTER_MAX)) == NULL)
		goto done;
	while ((r = read(p[0], buf + n, SPAWN_FILTER_MAX - n)) > 0)
		n += r;
	rc = -E2BIG;
	if (n == 0 || n % sizeof(struct sock_filter) != 0 ||
	    n / sizeof(struct sock_filter) > USHRT_MAX)
		goto done;
	spawn_bpf = (struct sock_filter *)buf;
	spawn_bpf_len = n / sizeof(struct sock_filter);
	buf = NULL;
	rc = 0;
done:
	err = rc < 0 ? -rc : 0;
	free(buf);
	if (p[0] != -1)
		(void)close(p[0]);
	if (ctx != NULL)
		seccomp_release(ctx);
	errno = err;
	return rc < 0 ? -1 : 0;
}

void
spawn_confine_json(cJSON *a, const struct spawn_confine *c, bool has_user,
    uid_t uid, gid_t gid)
{
	cJSON	*r;
	int	 i;

	if (has_user) {
		cJSON_AddNumberToObject(a, "uid", uid);
		cJSON_AddNumberToObject(a, "gid", gid);
	}
	if (c->nonewprivs)
		cJSON_AddTrueToObject(a, "noNewPrivs");
	if (c->seccomp)
		cJSON_AddStringToObject(a, "seccomp", "default");
	if (c->nonet)
		cJSON_AddStringToObject(a, "network", "none");
	for (i = 0, r = NULL; i < SPAWN_NRLIM; i++)
		if (c->has_rlim[i]) {
			if (r == NULL)
				r = cJSON_AddObjectToObject(a, "rlimits");
			cJSON_AddNumberToObject(r, spawn_rlimit_names[i],
			    (double)c->rlim[i]);
		}
}

/* ------------------------------------------------------------------ */
/* Start */

pid_t
spawn_start(const struct spawn_opts *o, bool *failed)
{
	*failed = false;
	/*
	 * One place decides the path: what posix_spawn cannot do (another
	 * user, a controlling terminal, confinement, a cgroup to be born
	 * in) forks.
	 */
	if (o->has_user || o->ctty != NULL || o->in_cgroup ||
	    spawn_confined(o->confine)) {
		if (o->confine != NULL && o->confine->seccomp &&
		    spawn_filter() == -1)
			return -1;
		return spawn_fork(o, failed);
	}
	return spawn_posix(o, failed);
}

/*
 * The fork path: everything is set up in the child, and a failure comes
 * back as an errno on a close-on-exec pipe (EOF: the exec succeeded).
 */
static pid_t
spawn_fork(const struct spawn_opts *o, bool *failed)
{
	struct spawn_fail	childerr;
	struct spawn_groups	groups;
	sigset_t		all, old;
	ssize_t			n;
	pid_t			pid;
	int			xpipe[2], err, joinfd = -1;

	/*
	 * The groups initgroups would set, read here: the child may not
	 * allocate, and the static build has no NSS for initgroups to use.
	 */
	groups.n = 0;
	if (o->has_user && o->user != NULL && (groups.n = user_groups(NULL,
	    o->user, o->gid, groups.list, nitems(groups.list))) == -1) {
		*failed = true;
		return -1;
	}
	if (pipe2(xpipe, O_CLOEXEC) == -1)
		return -1;
	/*
	 * Signals are blocked across fork so that no handler of the agent
	 * runs in the child before it resets them.
	 */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, &old);
	pid = spawn_clone(o, &groups, xpipe[1], &joinfd);
	if (pid == 0)
		spawn_child(o, &groups, xpipe[1], joinfd);
	err = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	close(xpipe[1]);
	if (joinfd != -1)
		close(joinfd);
	if (pid == -1) {
		close(xpipe[0]);
		errno = err == ENOMEM ? EAGAIN : err;
		return -1;
	}
	do
		n = read(xpipe[0], &childerr, sizeof(childerr));
	while (n == -1 && errno == EINTR);
	close(xpipe[0]);
	if (n == (ssize_t)sizeof(childerr)) {
		/* The child exits 127: the reaper's. */
		*failed = childerr.stage == SPAWN_STAGE_RUN;
		errno = *failed ? childerr.err : EOPNOTSUPP;
		return -1;
	}
	return pid;
}

/*
 * In the child, between fork and exec.  Only async-signal-safe calls
 * until exec (the supplementary groups were read before fork).  The
 * seccomp filter is why spawn_start builds it before fork: libseccomp
 * allocates while it generates BPF, so the child only hands the finished
 * program to prctl.  A failure is reported through errfd as its stage
 * and errno, then _exit(127).
 */
_Noreturn void
spawn_child(const struct spawn_opts *o, const struct spawn_groups *g,
    int errfd, int joinfd)
{
	const struct spawn_confine *c = o->confine;
	struct spawn_fail	 f = { SPAWN_STAGE_CONFINE, 0 };

	/* Where clone3 could not put it: first of all, before it forks. */
	if (joinfd != -1 && write(joinfd, "0", 1) != 1)
		goto fail;
	f.stage = SPAWN_STAGE_RUN;
	spawn_reset_signals();
	if ((o->setsid || o->ctty != NULL) && setsid() == -1)
		goto fail;
	if (o->limits != NULL)
		spawn_child_limits(o->limits, 0);
	if (spawn_child_stdio(o) == -1)
		goto fail;
	/* errfd is close-on-exec: it goes at exec. */
	if (o->closefds) {
		int	keep[] = { 0, 1, 2, errfd };

		spawn_close_except(keep, nitems(keep));
	}
	if (o->cwd != NULL && chdir(o->cwd) == -1)
		goto fail;
	/*
	 * The filter goes on while the child still has the agent's
	 * privileges: without no_new_privs the kernel takes a filter only
	 * from CAP_SYS_ADMIN, and a request may not want no_new_privs (set
	 * first when it does, so that an agent without that capability can
	 * still filter).  It denies nothing the steps after it make.
	 */
	f.stage = SPAWN_STAGE_CONFINE;
	if (c != NULL && c->nonet && spawn_child_nonet() == -1)
		goto fail;
	f.stage = SPAWN_STAGE_RUN;
	if (c != NULL && spawn_child_rlimits(c) == -1)
		goto fail;
	if (c != NULL && c->nonewprivs &&
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		goto fail;
	f.stage = SPAWN_STAGE_CONFINE;
	if (c != NULL && c->seccomp && spawn_child_seccomp() == -1)
		goto fail;
	f.stage = SPAWN_STAGE_RUN;
	if (o->has_user && spawn_child_user(o, g) == -1)
		goto fail;
	spawn_child_exec(o);
fail:
	f.err = errno;
	(void)!write(errfd, &f, sizeof(f));
	_exit(127);
}

static int
spawn_child_stdio(const struct spawn_opts *o)
{
	int	i;

	if (o->ctty != NULL)
		return spawn_child_ctty(o->ctty);
	for (i = 0; i < 3; i++)
		if (o->fd[i] != -1 && dup2(o->fd[i], i) == -1)
			return -1;
	return 0;
}

/*
 * The terminal as the child's stdio and controlling terminal, in the
 * session the child leads.  (lib/pty.c's pty_child_setup takes this
 * over once it lands.)
 */
static int
spawn_child_ctty(const char *slave)
{
	int	fd, i;

	if ((fd = open(slave, O_RDWR)) == -1)
		return -1;
	if (ioctl(fd, TIOCSCTTY, 0) == -1)
		return -1;
	for (i = 0; i < 3; i++)
		if (dup2(fd, i) == -1)
			return -1;
	if (fd > 2)
		(void)close(fd);
	return 0;
}

static int
spawn_child_user(const struct spawn_opts *o, const struct spawn_groups *g)
{
	if (setgroups(g->n, g->list) == -1)
		return -1;
	if (setgid(o->gid) == -1 || setuid(o->uid) == -1)
		return -1;
	return 0;
}

/*
 * The common path: posix_spawn with default signals, an empty mask, the
 * fds asked for.  What posix_spawn cannot do is done from here right
 * after: the oom score and the fd limit, before the process can have
 * done much.  A file action that cannot be set up fails the launch: the
 * child would otherwise run with the agent's stdio or in its cwd.
 */
static pid_t
spawn_posix(const struct spawn_opts *o, bool *failed)
{
	posix_spawn_file_actions_t	 fa;
	posix_spawnattr_t		 attr;
	char				 path[PATH_MAX];
	pid_t				 pid;
	int				 rc;

	if (spawn_which(o->envp, o->cwd, o->argv[0], path, sizeof(path)) == -1) {
		*failed = true;
		return -1;
	}
	if ((rc = posix_spawnattr_init(&attr)) != 0) {
		errno = rc;
		return -1;
	}
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0) {
		posix_spawnattr_destroy(&attr);
		errno = rc;
		return -1;
	}
	if ((rc = spawn_attr(&attr, o)) == 0 &&
	    (rc = spawn_actions(&fa, o)) == 0) {
		rc = posix_spawn(&pid, path, &fa, &attr, o->argv, o->envp);
		if (rc == ENOEXEC)
			rc = spawn_sh(&pid, path, &fa, &attr, o->argv, o->envp);
		/* Not the program's fault: the agent could not make it now. */
		*failed = rc != 0 && rc != EAGAIN && rc != ENOMEM;
		if (rc == ENOMEM)
			rc = EAGAIN;
	}
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (rc != 0) {
		errno = rc;
		return -1;
	}
	if (o->limits != NULL)
		spawn_child_limits(o->limits, pid);
	return pid;
}

static int
spawn_attr(posix_spawnattr_t *attr, const struct spawn_opts *o)
{
	sigset_t	all, none;
	short		flags = POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK;
	int		rc;

	sigfillset(&all);
	/*
	 * glibc's sigfillset leaves out the two signals it reserves (32,
	 * 33), and its posix_spawn then sets them to SIG_IGN in the child
	 * (ignored dispositions survive exec).  Add them by hand: the set is
	 * only handed to posix_spawn's own "reset to default" loop.  musl
	 * reserves 32 to 34 the same way (the static build).
	 */
#ifdef __GLIBC__
	all.__val[0] |= 1UL << (32 - 1) | 1UL << (33 - 1);
#else
	all.__bits[0] |= 1UL << (32 - 1) | 1UL << (33 - 1) | 1UL << (34 - 1);
#endif
	sigemptyset(&none);
	if (o->setsid)
		flags |= POSIX_SPAWN_SETSID;
	if ((rc = posix_spawnattr_setsigdefault(attr, &all)) != 0 ||
	    (rc = posix_spawnattr_setsigmask(attr, &none)) != 0)
		return rc;
	return posix_spawnattr_setflags(attr, flags);
}

/* Each action checked: 0 or the error posix_spawn would have ignored. */
static int
spawn_actions(posix_spawn_file_actions_t *fa, const struct spawn_opts *o)
{
	int	i, rc;

	for (i = 0; i < 3; i++)
		if (o->fd[i] != -1 &&
		    (rc = posix_spawn_file_actions_adddup2(fa, o->fd[i], i)) != 0)
			return rc;
	if (o->closefds &&
	    (rc = posix_spawn_file_actions_addclosefrom_np(fa, 3)) != 0)
		return rc;
	if (o->cwd != NULL &&
	    (rc = posix_spawn_file_actions_addchdir_np(fa, o->cwd)) != 0)
		return rc;
	return 0;
}

/*
 * A file without a #! line is a shell script, as execvp has it: run it
 * with /bin/sh, argv[0] kept as the script's name.
 */
static int
spawn_sh(pid_t *pid, const char *path, posix_spawn_file_actions_t *fa,
    posix_spawnattr_t *attr, char *const *argv, char *const *envp)
{
	char	**v;
	int	  rc;

	if ((v = spawn_sh_argv(path, argv)) == NULL)
		return ENOMEM;
	rc = posix_spawn(pid, "/bin/sh", fa, attr, v, envp);
	free(v);
	return rc;
}

/* sh's argv for the script at path: "sh", path, argv[1]... */
static char **
spawn_sh_argv(const char *path, char *const *argv)
{
	char	**v;
	size_t	  n = 0;

	while (argv[n] != NULL)
		n++;
	if ((v = calloc(n + 2, sizeof(char *))) == NULL)
		return NULL;
	v[0] = "sh";
	v[1] = (char *)path;
	memcpy(v + 2, argv + 1, n * sizeof(char *));	/* with the NULL */
	return v;
}

/*
 * The exec of a forked child, as the posix_spawn path makes it: the
 * PATH search of spawn_which (relative entries from the cwd it is in
 * now), a file without #! through /bin/sh.  Not execvp: musl's (the
 * static build's) runs no such script and searches another PATH when
 * there is none.  Returns only on failure, errno set.
 */
static void
spawn_child_exec(const struct spawn_opts *o)
{
	char	path[PATH_MAX], **v;

	if (spawn_which(o->envp, NULL, o->argv[0], path, sizeof(path)) == -1)
		return;
	execve(path, o->argv, o->envp);
	if (errno != ENOEXEC || (v = spawn_sh_argv(path, o->argv)) == NULL)
		return;
	execve("/bin/sh", v, o->envp);
}

/* ---------------------------------------------------------------- */
/* Vectors of the child */

/* A copy of every string, or none: a recorded argv is never cut short. */
char **
spawn_strvdup(char **v)
{
	char	**d;
	size_t	  n = 0, i;

	while (v[n] != NULL)
		n++;
	if ((d = calloc(n + 1, sizeof(char *))) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if ((d[i] = strdup(v[i])) == NULL) {
			while (i-- > 0)
				free(d[i]);
			free(d);
			return NULL;
		}
	return d;
}

/* Is the variable of entry e (its name, up to '=') set in v? */
static bool
spawn_env_has(char *const *v, const char *e)
{
	size_t	len = strcspn(e, "=");

	for (; v != NULL && *v != NULL; v++)
		if (strncmp(*v, e, len) == 0 && (*v)[len] == '=')
			return true;
	return false;
}

char **
spawn_envp(char **base, char **add, const char *dflt)
{
	char *const	 d[2] = { (char *)dflt, NULL };
	char		**envp;
	size_t		  n = 0, m = 0, i, k = 0;

	while (base != NULL && base[n] != NULL)
		n++;
	while (add != NULL && add[m] != NULL)
		m++;
	if ((envp = calloc(n + m + 2, sizeof(char *))) == NULL)
		return NULL;
	for (i = 0; i < n; i++)
		if (!spawn_env_has(add, base[i]) && !spawn_env_has(d, base[i]))
			envp[k++] = base[i];
	for (i = 0; i < m; i++)
		envp[k++] = add[i];
	if (dflt != NULL && !spawn_env_has(add, dflt))
		envp[k++] = (char *)dflt;
	return envp;
}
