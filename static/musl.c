/*
 * glibc's extensions for the musl static build (musl.h).  Each keeps the
 * glibc behaviour tend relies on; none is compiled into the glibc build.
 */
#ifndef __GLIBC__
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "musl.h"
#include "base/tunables.h"

/*
 * getrandom(2) on the urandom pool: it blocks only before the pool is
 * first seeded, as glibc's arc4random does, and never fails for reads of
 * up to 256 bytes but with EINTR.  Where it is missing or filtered
 * (ENOSYS, EPERM), /dev/urandom, as glibc falls back to; with neither,
 * abort, as glibc does.
 */
static void
musl_urandom(unsigned char *p, size_t n)
{
	ssize_t	r;
	int	fd;

	if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) == -1)
		abort();
	while (n > 0) {
		if ((r = read(fd, p, n)) == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			abort();
		p += r;
		n -= (size_t)r;
	}
	(void)close(fd);
}

void
arc4random_buf(void *buf, size_t n)
{
	unsigned char	*p = buf;
	ssize_t		 r;

	while (n > 0) {
		if ((r = getrandom(p, n > 256 ? 256 : n, 0)) == -1) {
			if (errno == EINTR)
				continue;
			musl_urandom(p, n);
			return;
		}
		p += r;
		n -= (size_t)r;
	}
}

uint32_t
arc4random(void)
{
	uint32_t	v;

	arc4random_buf(&v, sizeof v);
	return v;
}

/* Uniform in [0, n): draws below the largest multiple of n are kept. */
uint32_t
arc4random_uniform(uint32_t n)
{
	uint32_t	v, min;

	if (n < 2)
		return 0;
	min = -n % n;
	do
		v = arc4random();
	while (v < min);
	return v % n;
}

/* glibc's names, without "SIG"; NULL past them (the real-time ones). */
const char *
sigabbrev_np(int sig)
{
	static const char *const names[] = {
		[SIGHUP] = "HUP", [SIGINT] = "INT", [SIGQUIT] = "QUIT",
		[SIGILL] = "ILL", [SIGTRAP] = "TRAP", [SIGABRT] = "ABRT",
		[SIGBUS] = "BUS", [SIGFPE] = "FPE", [SIGKILL] = "KILL",
		[SIGUSR1] = "USR1", [SIGSEGV] = "SEGV", [SIGUSR2] = "USR2",
		[SIGPIPE] = "PIPE", [SIGALRM] = "ALRM", [SIGTERM] = "TERM",
		[SIGSTKFLT] = "STKFLT", [SIGCHLD] = "CHLD", [SIGCONT] = "CONT",
		[SIGSTOP] = "STOP", [SIGTSTP] = "TSTP", [SIGTTIN] = "TTIN",
		[SIGTTOU] = "TTOU", [SIGURG] = "URG", [SIGXCPU] = "XCPU",
		[SIGXFSZ] = "XFSZ", [SIGVTALRM] = "VTALRM", [SIGPROF] = "PROF",
		[SIGWINCH] = "WINCH", [SIGPOLL] = "POLL", [SIGPWR] = "PWR",
		[SIGSYS] = "SYS",
	};

	if (sig <= 0 || (size_t)sig >= sizeof names / sizeof names[0])
		return NULL;
	return names[sig];
}

int
renameat2(int ofd, const char *from, int nfd, const char *to,
    unsigned int flags)
{
	return (int)syscall(SYS_renameat2, ofd, from, nfd, to, flags);
}

int
close_range(unsigned int lo, unsigned int hi, int flags)
{
	return (int)syscall(SYS_close_range, lo, hi, flags);
}

/*
 * musl's posix_spawn has no "close from": add a close for each fd at or
 * above from that exec would not close by itself (no FD_CLOEXEC).  Every
 * fd tend opens is close-on-exec, so those are the ones it inherited:
 * /proc/self/fd is read for them once, at the first spawn (read at each,
 * it took an exec in `make bench` from 1.35-1.40x a bare spawn to
 * 2.0-2.2x), and each is looked at again each time (closed since, or its
 * number reused close-on-exec, it is skipped).  With more than
 * MUSL_INHERITED_MAX of them the directory is read at every spawn;
 * without /proc, each fd below RLIMIT_NOFILE (at most SPAWN_CLOSE_MAX) is
 * looked at, as spawn_close_except does without close_range.
 */
static int	musl_fds[MUSL_INHERITED_MAX];
static int	musl_nfds = -1;		/* -1: not read, or too many */

/* Adds a close for fd if it is open without FD_CLOEXEC: 0 or an error. */
static int
musl_close_leaked(posix_spawn_file_actions_t *fa, int fd)
{
	int	flags;

	if ((flags = fcntl(fd, F_GETFD)) == -1 || (flags & FD_CLOEXEC))
		return 0;
	return posix_spawn_file_actions_addclose(fa, fd);
}

/* Reads /proc/self/fd: the closes, and the cache when they all fit. */
static int
musl_scan(posix_spawn_file_actions_t *fa, int from)
{
	struct rlimit	 rl;
	struct dirent	*de;
	DIR		*d;
	int		 fd, flags, n = 0, rc = 0;

	if ((d = opendir("/proc/self/fd")) == NULL) {
		if (getrlimit(RLIMIT_NOFILE, &rl) == -1 ||
		    rl.rlim_cur > SPAWN_CLOSE_MAX)
			rl.rlim_cur = SPAWN_CLOSE_MAX;
		for (fd = from; rc == 0 && fd < (int)rl.rlim_cur; fd++)
			rc = musl_close_leaked(fa, fd);
		return rc;
	}
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9' ||
		    (fd = atoi(de->d_name)) == dirfd(d) ||
		    (flags = fcntl(fd, F_GETFD)) == -1 || (flags & FD_CLOEXEC))
			continue;
		if (n < MUSL_INHERITED_MAX)
			musl_fds[n] = fd;
		n++;
		if (fd >= from)
			rc = posix_spawn_file_actions_addclose(fa, fd);
	}
	closedir(d);
	if (rc == 0)
		musl_nfds = n <= MUSL_INHERITED_MAX ? n : -1;
	return rc;
}

int
posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *fa,
    int from)
{
	int	i, rc;

	if (musl_nfds == -1)
		return musl_scan(fa, from);
	for (i = 0; i < musl_nfds; i++)
		if (musl_fds[i] >= from &&
		    (rc = musl_close_leaked(fa, musl_fds[i])) != 0)
			return rc;
	return 0;
}
#endif
