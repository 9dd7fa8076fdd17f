/*
 * spawn: real children, reaped here with waitpid.  The PATH lookup along
 * the child's own environment, both paths (posix_spawn, and fork with a
 * controlling terminal on a pty of our own), the errno handshake, file
 * actions that cannot be set up, signals, limits, closing fds, and the
 * confinement steps (network namespace, rlimits, seccomp, no_new_privs).
 */
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sys/spawn.h"
#include "testutil.h"

Suite *spawn_suite(void);

#define ARGV(...)	((char *[]){ __VA_ARGS__, NULL })

static char	tdir_path[64];
static int	tdir = -1;

static void	setup(void);
static void	teardown(void);
static void	opts(struct spawn_opts *, char **);
static int	run_out(struct spawn_opts *, char *, size_t);
static int	reap(pid_t);
static int	pty_open(char *, size_t);
static int	run_tty(struct spawn_opts *, char *, size_t, char *, size_t);
static void	mkexe(const char *, const char *, mode_t);
static void	must_fail(struct spawn_opts *, int, bool);

static void
setup(void)
{
	tdir = tu_tmpdir(tdir_path, sizeof(tdir_path), "/tmp/tend-spawn-");
}

static void
teardown(void)
{
	close(tdir);
	tu_rmtree(tdir_path);
}

static char	*env_path[3];
static char	 path_entry[4096];

/* Options for argv with PATH as the test's own, stdio the agent's. */
static void
opts(struct spawn_opts *o, char **argv)
{
	snprintf(path_entry, sizeof(path_entry), "PATH=%s",
	    getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	env_path[0] = path_entry;
	env_path[1] = "LC_ALL=C";
	env_path[2] = NULL;
	memset(o, 0, sizeof(*o));
	o->argv = argv;
	o->envp = env_path;
	o->fd[0] = o->fd[1] = o->fd[2] = -1;
}

/* Its exit status (0-255, 128+N). */
static int
reap(pid_t pid)
{
	int	st;

	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st);
}

/* Run o with stdout on a pipe: what it wrote into out; its status. */
static int
run_out(struct spawn_opts *o, char *out, size_t n)
{
	bool	failed = true;
	size_t	got = 0;
	ssize_t	r;
	pid_t	pid;
	int	p[2];

	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	o->fd[1] = p[1];
	pid = spawn_start(o, &failed);
	ck_assert_msg(pid > 0, "%s: %s", o->argv[0], strerror(errno));
	ck_assert(!failed);
	close(p[1]);
	while (got + 1 < n && (r = read(p[0], out + got, n - 1 - got)) > 0)
		got += r;
	out[got] = '\0';
	close(p[0]);
	return reap(pid);
}

/* o must not start: errno err, and the program's fault or not. */
static void
must_fail(struct spawn_opts *o, int err, bool programs)
{
	bool	failed = !programs;

	errno = 0;
	ck_assert_int_eq(spawn_start(o, &failed), -1);
	ck_assert_int_eq(errno, err);
	ck_assert(failed == programs);
}

static void
mkexe(const char *name, const char *body, mode_t mode)
{
	tu_put(tdir, name, body);
	ck_assert_int_eq(fchmodat(tdir, name, mode, 0), 0);
}

/* A pty of our own: the master, and the slave's name in slave. */
static int
pty_open(char *slave, size_t n)
{
	int	m;

	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	ck_assert_int_ge(m, 0);
	ck_assert_int_eq(grantpt(m), 0);
	ck_assert_int_eq(unlockpt(m), 0);
	ck_assert_int_eq(ptsname_r(m, slave, n), 0);
	return m;
}

/*
 * Run o on a pty of our own as its controlling terminal (its name into
 * slave): what it wrote there until it exited (EIO then); its status.
 */
static int
run_tty(struct spawn_opts *o, char *slave, size_t sn, char *out, size_t n)
{
	bool	failed = true;
	size_t	got = 0;
	ssize_t	r;
	pid_t	pid;
	int	m, st;

	m = pty_open(slave, sn);
	o->ctty = slave;
	pid = spawn_start(o, &failed);
	ck_assert_msg(pid > 0, "%s: %s", o->argv[0], strerror(errno));
	ck_assert(!failed);
	while (got + 1 < n && (r = read(m, out + got, n - 1 - got)) > 0)
		got += r;
	out[got] = '\0';
	st = reap(pid);
	close(m);
	return st;
}

/* ------------------------------------------------------------------ */
/* The PATH lookup */

START_TEST(which_along_child_path)
{
	char	path[256], env[256], out[512];
	char	*envp[2] = { env, NULL };

	ck_assert_int_eq(mkdirat(tdir, "bin", 0700), 0);
	ck_assert_int_eq(mkdirat(tdir, "rel", 0700), 0);
	mkexe("bin/tool", "#!/bin/sh\n", 0755);
	mkexe("bin/plain", "data\n", 0644);
	mkexe("rel/near", "#!/bin/sh\n", 0755);

	/* The child's PATH, not the agent's. */
	snprintf(env, sizeof(env), "PATH=/nonexistent:%s/bin", tdir_path);
	ck_assert_int_eq(spawn_which(envp, NULL, "tool", out, sizeof(out)), 0);
	snprintf(path, sizeof(path), "%s/bin/tool", tdir_path);
	ck_assert_str_eq(out, path);
	/* Found, but not executable; not found at all. */
	ck_assert_int_eq(spawn_which(envp, NULL, "plain", out, sizeof(out)), -1);
	ck_assert_int_eq(errno, EACCES);
	ck_assert_int_eq(spawn_which(envp, NULL, "none", out, sizeof(out)), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* A relative entry is taken from the child's cwd. */
	snprintf(env, sizeof(env), "PATH=rel");
	ck_assert_int_eq(spawn_which(envp, tdir_path, "near", out,
	    sizeof(out)), 0);
	snprintf(path, sizeof(path), "%s/rel/near", tdir_path);
	ck_assert_str_eq(out, path);
	/* A name with a slash is used as it is. */
	ck_assert_int_eq(spawn_which(envp, NULL, "./x/y", out, sizeof(out)), 0);
	ck_assert_str_eq(out, "./x/y");
}
END_TEST

/* ------------------------------------------------------------------ */
/* posix_spawn */

START_TEST(posix_stdio_session_cwd)
{
	struct spawn_opts o;
	char		 out[512];
	int		 pid, ppid, pgrp, sid;
	char		 comm[64], state;

	opts(&o, ARGV("sh", "-c", "pwd; cat /proc/self/stat"));
	o.cwd = tdir_path;
	o.setsid = true;
	ck_assert_int_eq(run_out(&o, out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, tdir_path, strlen(tdir_path)), 0);
	ck_assert_int_eq(out[strlen(tdir_path)], '\n');
	/* cat's own stat: a child of sh, in sh's session and group. */
	ck_assert_int_eq(sscanf(strchr(out, '\n') + 1, "%d %63s %c %d %d %d",
	    &pid, comm, &state, &ppid, &pgrp, &sid), 6);
	ck_assert_int_eq(pgrp, ppid);
	ck_assert_int_eq(sid, ppid);

	/* Without setsid: the agent's own session. */
	opts(&o, ARGV("cat", "/proc/self/stat"));
	ck_assert_int_eq(run_out(&o, out, sizeof(out)), 0);
	ck_assert_int_eq(sscanf(out, "%d %63s %c %d %d %d", &pid, comm,
	    &state, &ppid, &pgrp, &sid), 6);
	ck_assert_int_eq(sid, getsid(0));
}
END_TEST

START_TEST(posix_closefds)
{
	struct spawn_opts o;
	char		 out[256], link[64];
	int		 leak;

	leak = open("/dev/null", O_RDONLY);	/* no close-on-exec */
	ck_assert_int_ge(leak, 3);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", leak);
	opts(&o, ARGV("readlink", link));
	ck_assert_int_eq(run_out(&o, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "/dev/null\n");
	o.closefds = true;
	ck_assert_int_eq(run_out(&o, out, sizeof(out)), 1);
	close(leak);
}
END_TEST

/*
 * A file action that cannot be set up fails the launch before any child
 * exists: unchecked, the child would run with the agent's stdout.
 */
START_TEST(posix_bad_action_fails)
{
	struct spawn_opts o;

	opts(&o, ARGV("true"));
	o.fd[1] = getdtablesize() + 10;
	must_fail(&o, EBADF, false);
	/* No child was made. */
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
}
END_TEST

START_TEST(posix_failures_are_the_programs)
{
	struct spawn_opts o;
	char		 out[64], path[128];

	opts(&o, ARGV("tend-no-such-program"));
	must_fail(&o, ENOENT, true);
	mkexe("plain", "data\n", 0644);
	snprintf(path, sizeof(path), "%s/plain", tdir_path);
	opts(&o, ARGV(path));
	must_fail(&o, EACCES, true);
	opts(&o, ARGV("true"));
	o.cwd = "/nonexistent/dir";
	must_fail(&o, ENOENT, true);

	/* No #! line: a shell script, as execvp has it. */
	mkexe("script", "echo from-sh \"$0\" \"$1\"\n", 0755);
	snprintf(path, sizeof(path), "%s/script", tdir_path);
	opts(&o, ARGV(path, "arg"));
	ck_assert_int_eq(run_out(&o, out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, "from-sh ", 8), 0);
	ck_assert_ptr_nonnull(strstr(out, "/script arg\n"));

	/*
	 * The fork path (a user to run as) the same way: not the C
	 * library's execvp, which under musl ran no such script.
	 */
	opts(&o, ARGV(path, "arg"));
	o.has_user = true;
	o.uid = getuid();
	o.gid = getgid();
	ck_assert_int_eq(run_out(&o, out, sizeof(out)), 0);
	ck_assert_int_eq(strncmp(out, "from-sh ", 8), 0);
	ck_assert_ptr_nonnull(strstr(out, "/script arg\n"));
	opts(&o, ARGV("tend-no-such-program"));
	o.has_user = true;
	o.uid = getuid();
	o.gid = getgid();
	must_fail(&o, ENOENT, true);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Fork: a controlling terminal */

START_TEST(fork_ctty)
{
	struct spawn_opts o;
	char		 slave[64], out[1024], *s;
	int		 fpid, ppid, pgrp, sid, tty;
	char		 comm[64], state;

	opts(&o, ARGV("sh", "-c", "echo $$; tty; exec cat /proc/self/stat"));
	ck_assert_int_eq(run_tty(&o, slave, sizeof(slave), out, sizeof(out)),
	    0);
	s = strchr(out, '\n');
	ck_assert_ptr_nonnull(s);
	s++;
	/* Its stdin (tty reads fd 0) is the terminal ... */
	ck_assert_int_eq(strncmp(s, slave, strlen(slave)), 0);
	/* ... which is its controlling terminal, in its own session. */
	s = strchr(s, '\n');
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(sscanf(s + 1, "%d %63s %c %d %d %d %d", &fpid, comm,
	    &state, &ppid, &pgrp, &sid, &tty), 7);
	ck_assert_int_eq(fpid, atoi(out));
	ck_assert_int_eq(sid, fpid);
	ck_assert_int_eq(pgrp, fpid);
	ck_assert_int_ne(tty, 0);
}
END_TEST

/* A forked child's failure comes back through the handshake. */
START_TEST(fork_errno_handshake)
{
	struct spawn_opts o;
	char		 slave[64];
	int		 m, st;

	m = pty_open(slave, sizeof(slave));
	opts(&o, ARGV("/nonexistent/tend-no-such-binary"));
	o.ctty = slave;
	must_fail(&o, ENOENT, true);
	opts(&o, ARGV("true"));
	o.ctty = "/nonexistent/pts";
	must_fail(&o, ENOENT, true);
	opts(&o, ARGV("true"));
	o.ctty = slave;
	o.cwd = "/nonexistent/dir";
	must_fail(&o, ENOENT, true);
	close(m);
	/* The failed children exited 127, left to the reaper. */
	while (waitpid(-1, &st, 0) > 0)
		ck_assert_int_eq(WEXITSTATUS(st), 127);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Confinement */

/*
 * Run fn in a child of the test (a step changes the process for good)
 * and return its exit status: 0 for "held", 77 for "cannot here".
 */
static int
in_child(int (*fn)(void))
{
	pid_t	pid;

	ck_assert_int_ge(pid = fork(), 0);
	if (pid == 0)
		_exit(fn());
	return reap(pid);
}

static int
nonet_step(void)
{
	struct if_nameindex	*ifs;
	struct ifreq		 ifr;
	int			 s, n;

	if (spawn_child_nonet() == -1)
		return errno == EPERM ? 77 : 1;
	if ((ifs = if_nameindex()) == NULL)
		return 2;
	for (n = 0; ifs[n].if_name != NULL; n++)
		if (strcmp(ifs[n].if_name, "lo") != 0)
			return 3;
	if (n != 1)
		return 4;
	memset(&ifr, 0, sizeof(ifr));
	strcpy(ifr.ifr_name, "lo");
	if ((s = socket(AF_INET, SOCK_DGRAM, 0)) == -1 ||
	    ioctl(s, SIOCGIFFLAGS, &ifr) == -1)
		return 5;
	return (ifr.ifr_flags & IFF_UP) ? 0 : 6;
}

START_TEST(confine_nonet_only_lo_up)
{
	int	st = in_child(nonet_step);

	if (st == 77) {
		TU_SKIP("no CAP_SYS_ADMIN for a network namespace");
		return;
	}
	ck_assert_int_eq(st, 0);
}
END_TEST

static int
rlimits_step(void)
{
	struct spawn_confine	c = { 0 };
	struct rlimit		rl;

	c.has_rlim[SPAWN_RLIM_NOFILE] = true;
	c.rlim[SPAWN_RLIM_NOFILE] = 50;
	c.has_rlim[SPAWN_RLIM_CPU] = true;
	c.rlim[SPAWN_RLIM_CPU] = 7;
	if (spawn_child_rlimits(&c) == -1)
		return 1;
	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_cur != 50 ||
	    rl.rlim_max != 50)
		return 2;
	if (getrlimit(RLIMIT_CPU, &rl) == -1 || rl.rlim_cur != 7 ||
	    rl.rlim_max != 7)
		return 3;
	/* Soft and hard both: not raised back. */
	rl.rlim_cur = rl.rlim_max = 100;
	return setrlimit(RLIMIT_NOFILE, &rl) == -1 || geteuid() == 0 ? 0 : 4;
}

START_TEST(confine_rlimits_soft_and_hard)
{
	ck_assert_int_eq(in_child(rlimits_step), 0);
}
END_TEST

static int
seccomp_step(void)
{
	if (spawn_child_seccomp() == -1)
		return errno == EACCES ? 77 : 1;
	if (unshare(CLONE_NEWNET) != -1 || errno != EPERM)
		return 2;
	if (umount2("/nonexistent", 0) != -1 || errno != EPERM)
		return 3;
	/* Everything else as before. */
	return getpid() > 0 && access("/", F_OK) == 0 ? 0 : 4;
}

START_TEST(confine_seccomp_denies_eperm)
{
	int	st;

	ck_assert_int_eq(spawn_filter(), 0);
	ck_assert_int_eq(spawn_filter(), 0);	/* once: cached */
	if ((st = in_child(seccomp_step)) == 77) {
		TU_SKIP("no CAP_SYS_ADMIN for a filter");
		return;
	}
	ck_assert_int_eq(st, 0);
}
END_TEST

/* Through spawn_start: the fork path, in order, and what comes out. */
START_TEST(confine_fork_path)
{
	struct spawn_confine	c = { 0 };
	struct spawn_opts	o;
	char			out[256];

	c.nonewprivs = true;
	c.seccomp = true;
	c.has_rlim[SPAWN_RLIM_NOFILE] = true;
	c.rlim[SPAWN_RLIM_NOFILE] = 40;
	opts(&o, ARGV("sh", "-c", "grep -E '^(NoNewPrivs|Seccomp):' "
	    "/proc/self/status; ulimit -n; ulimit -Hn"));
	o.confine = &c;
	ck_assert_int_eq(run_out(&o, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "NoNewPrivs:\t1\nSeccomp:\t2\n40\n40\n");
}
END_TEST

/*
 * A confinement step the agent cannot make is its shortcoming, not the
 * program's: EOPNOTSUPP, failed false.  An unprivileged caller cannot
 * make a network namespace.
 */
static int
stage_step(void)
{
	struct spawn_confine	c = { 0 };
	struct spawn_opts	o;
	bool			failed = true;

	if (setgid(12345) == -1 || setuid(12345) == -1)
		return 77;
	c.nonet = true;
	opts(&o, ARGV("true"));
	o.confine = &c;
	if (spawn_start(&o, &failed) != -1)
		return 1;
	return errno == EOPNOTSUPP && !failed ? 0 : 2;
}

START_TEST(confine_failure_is_the_agents)
{
	int	st = in_child(stage_step);

	if (st == 77) {
		TU_SKIP("not root: cannot become another user");
		return;
	}
	ck_assert_int_eq(st, 0);
}
END_TEST

/* ------------------------------------------------------------------ */
/* What every child starts with */

START_TEST(signals_reset_both_paths)
{
	struct spawn_opts o;
	char		 slave[64], out[4096];
	sigset_t	 set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGUSR2, SIG_IGN);

	opts(&o, ARGV("cat", "/proc/self/status"));
	ck_assert_int_eq(run_out(&o, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "\nSigBlk:\t0000000000000000\n") != NULL,
	    "%s", out);
	ck_assert_msg(strstr(out, "\nSigIgn:\t0000000000000000\n") != NULL,
	    "%s", out);

	opts(&o, ARGV("cat", "/proc/self/status"));
	ck_assert_int_eq(run_tty(&o, slave, sizeof(slave), out, sizeof(out)),
	    0);
	/* A terminal ends lines with \r\n. */
	ck_assert_msg(strstr(out, "SigBlk:\t0000000000000000") != NULL, "%s",
	    out);
	ck_assert_msg(strstr(out, "SigIgn:\t0000000000000000") != NULL, "%s",
	    out);
}
END_TEST

START_TEST(limits_both_paths)
{
	struct spawn_limits l = { 0 };
	struct spawn_opts o;
	char		 out[256], slave[64], want[64];

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &l.nofile), 0);
	l.nofile.rlim_cur = 64;
	l.nofile_raised = true;
	l.oom_adj = 777;
	snprintf(want, sizeof(want), "64\n777\n");
	/* The agent sets them right after posix_spawn: the child waits. */
	opts(&o, ARGV("sh", "-c", "sleep 0.3; ulimit -Sn; "
	    "cat /proc/self/oom_score_adj"));
	o.limits = &l;
	ck_assert_int_eq(run_out(&o, out, sizeof(out)), 0);
	ck_assert_str_eq(out, want);

	/* The forked child sets them itself, before exec. */
	opts(&o, ARGV("sh", "-c", "ulimit -Sn; cat /proc/self/oom_score_adj"));
	o.limits = &l;
	ck_assert_int_eq(run_tty(&o, slave, sizeof(slave), out, sizeof(out)),
	    0);
	ck_assert_str_eq(out, "64\r\n777\r\n");
}
END_TEST

START_TEST(limits_init_raises_own)
{
	struct spawn_limits l;
	struct rlimit	 rl, now;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_msg(rl.rlim_max > 256, "hard fd limit %llu",
	    (unsigned long long)rl.rlim_max);
	rl.rlim_cur = 256;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	spawn_limits_init(&l);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &now), 0);
	ck_assert_uint_eq(now.rlim_cur, rl.rlim_max);
	ck_assert_uint_eq(l.nofile.rlim_cur, 256);
	ck_assert(l.nofile_raised);
	ck_assert_int_ge(l.oom_adj, 0);
	ck_assert_int_le(l.oom_adj, 1000);
}
END_TEST

START_TEST(close_except_keeps_the_set)
{
	pid_t	pid;
	int	fds[5], keep[3], i;

	for (i = 0; i < 5; i++)
		ck_assert_int_ge(fds[i] = open("/dev/null", O_RDONLY), 3);
	if ((pid = fork()) == 0) {
		/* Out of order on purpose: the set is sorted in place. */
		keep[0] = fds[3];
		keep[1] = 0;
		keep[2] = fds[1];
		spawn_close_except(keep, 3);
		_exit(fcntl(0, F_GETFD) != -1 && fcntl(fds[1], F_GETFD) != -1 &&
		    fcntl(fds[3], F_GETFD) != -1 && fcntl(1, F_GETFD) == -1 &&
		    fcntl(fds[0], F_GETFD) == -1 && fcntl(fds[2], F_GETFD) == -1 &&
		    fcntl(fds[4], F_GETFD) == -1 ? 0 : 1);
	}
	ck_assert_int_eq(reap(pid), 0);
	for (i = 0; i < 5; i++)
		close(fds[i]);
}
END_TEST

Suite *
spawn_suite(void)
{
	Suite	*s = suite_create("spawn");
	TCase	*tc;

	tc = tcase_create("path");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, which_along_child_path);
	suite_add_tcase(s, tc);

	tc = tcase_create("posix_spawn");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, posix_stdio_session_cwd);
	tcase_add_test(tc, posix_closefds);
	tcase_add_test(tc, posix_bad_action_fails);
	tcase_add_test(tc, posix_failures_are_the_programs);
	suite_add_tcase(s, tc);

	tc = tcase_create("fork");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, fork_ctty);
	tcase_add_test(tc, fork_errno_handshake);
	suite_add_tcase(s, tc);

	tc = tcase_create("child");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, signals_reset_both_paths);
	tcase_add_test(tc, limits_both_paths);
	tcase_add_test(tc, limits_init_raises_own);
	tcase_add_test(tc, close_except_keeps_the_set);
	suite_add_tcase(s, tc);

	tc = tcase_create("confine");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, confine_nonet_only_lo_up);
	tcase_add_test(tc, confine_rlimits_soft_and_hard);
	tcase_add_test(tc, confine_seccomp_denies_eperm);
	tcase_add_test(tc, confine_fork_path);
	tcase_add_test(tc, confine_failure_is_the_agents);
	suite_add_tcase(s, tc);
	return s;
}
