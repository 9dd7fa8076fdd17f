/*
 * glibc's extensions for the musl static build (musl.h).  Each keeps the
 * glibc behaviour tend relies on; none is compiled into the glibc build.
 */
#ifndef __GLIBC__
#include <sys/random.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "musl.h"

/*
 * getrandom(2) on the urandom pool: it blocks only before the pool is
 * first seeded, as glibc's arc4random does, and never fails for reads of
 * up to 256 bytes but with EINTR.
 */
void
arc4random_buf(void *buf, size_t n)
{
	unsigned char	*p = buf;
	ssize_t		 r;

	while (n > 0) {
		if ((r = getrandom(p, n > 256 ? 256 : n, 0)) == -1) {
			if (errno == EINTR)
				continue;
			abort();	/* no entropy source: glibc aborts too */
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

/* The names glibc gives, without "SIG"; NULL past them (real-time ones). */
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
		[SIGWINCH] = "WINCH", [SIGIO] = "IO", [SIGPWR] = "PWR",
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
 * musl's posix_spawn has no "close from": add a close for each open fd
 * at or above from that exec would not close by itself (no FD_CLOEXEC),
 * read off /proc/self/fd now.  tend opens its own fds close-on-exec, so
 * this is usually none; without /proc it is ENOSYS, as glibc's would be
 * before close_range.
 */
int
posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *fa,
    int from)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd, flags, rc = 0;

	if ((d = opendir("/proc/self/fd")) == NULL)
		return ENOSYS;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		fd = atoi(de->d_name);
		if (de->d_name[0] < '0' || de->d_name[0] > '9' || fd < from ||
		    fd == dirfd(d))
			continue;
		if ((flags = fcntl(fd, F_GETFD)) != -1 && !(flags & FD_CLOEXEC))
			rc = posix_spawn_file_actions_addclose(fa, fd);
	}
	closedir(d);
	return rc;
}
#endif
