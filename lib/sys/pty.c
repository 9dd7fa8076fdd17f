/*
 * pty.c: pseudo-terminal pairs: open and size the master, set a child up
 * on the slave, read the master to its end, find the login shell.
 */
#include <sys/ioctl.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "pty.h"
#include "user.h"

#define PTY_SHELL_FALLBACK	"/bin/sh"

static int	pty_winsize(int, unsigned int, unsigned int);
static int	pty_login_shell(uid_t, char [PATH_MAX]);

static int
pty_winsize(int fd, unsigned int cols, unsigned int rows)
{
	struct winsize	 ws;

	if (cols == 0 || rows == 0 || cols > PTY_MAX_DIM ||
	    rows > PTY_MAX_DIM) {
		errno = EINVAL;
		return -1;
	}
	memset(&ws, 0, sizeof(ws));
	ws.ws_col = (unsigned short)cols;
	ws.ws_row = (unsigned short)rows;
	return ioctl(fd, TIOCSWINSZ, &ws);
}

/*
 * The size goes on before anyone opens the slave: a child that asks at
 * once (a shell laying out its prompt) must never see 0x0.
 */
int
pty_open(unsigned int cols, unsigned int rows, int *masterfd, char *name,
    size_t n)
{
	int	 fd, rc, saved;

	if ((fd = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)) == -1)
		return -1;
	if (grantpt(fd) == -1 || unlockpt(fd) == -1)
		goto fail;
	if ((rc = ptsname_r(fd, name, n)) != 0) {
		errno = rc;
		goto fail;
	}
	if (pty_winsize(fd, cols, rows) == -1 ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1)
		goto fail;
	*masterfd = fd;
	return 0;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

int
pty_resize(int masterfd, unsigned int cols, unsigned int rows)
{
	return pty_winsize(masterfd, cols, rows);
}

/*
 * tcgetpgrp on the master answers for the slave.  It gives 0 while no
 * session has the slave as its terminal: that is refused here, because
 * kill(-0, sig) would signal the caller's own group.
 */
pid_t
pty_foreground(int masterfd)
{
	pid_t	 pg;

	if ((pg = tcgetpgrp(masterfd)) == -1)
		return -1;
	if (pg <= 0) {
		errno = ESRCH;
		return -1;
	}
	return pg;
}

/*
 * Linux can answer EIO too early: a read that found no input, then the
 * slave closed, misses bytes the slave wrote just before its close,
 * still on their way to the master's buffer (rare and uneven: under a
 * reader that never waits, 14 in 40,000 exits here, then none in
 * 70,000).  The read after that EIO waits for them: an EIO is the end
 * only when said twice in a row.
 */
bool
pty_eio_is_end(bool *seen)
{
	if (*seen)
		return true;
	*seen = true;
	return false;
}

/*
 * Linux answers EIO once the last slave descriptor is closed and the
 * buffered output is read (pty_eio_is_end); other systems answer 0.
 * Both are the end.
 */
enum pty_read_result
pty_read(int masterfd, void *d, size_t n, size_t *got)
{
	ssize_t	 r;
	bool	 eio = false;

	*got = 0;
	for (;;) {
		if ((r = read(masterfd, d, n)) > 0) {
			*got = (size_t)r;
			return PTY_READ_DATA;
		}
		if (r == 0)
			return PTY_READ_CLOSED;
		if (errno == EIO && pty_eio_is_end(&eio))
			return PTY_READ_CLOSED;
		if (errno != EINTR && errno != EIO)
			break;
	}
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return PTY_READ_AGAIN;
	return PTY_READ_ERROR;
}

/*
 * Opened without O_NOCTTY by a session leader that has no terminal, the
 * slave becomes its controlling terminal; TIOCSCTTY makes that explicit
 * (and is a no-op when it already is).  This runs between fork and
 * exec: async-signal-safe calls only (open, ioctl, dup2, close).
 */
int
pty_child_setup(const char *name)
{
	int	 fd, i, saved;

	if ((fd = open(name, O_RDWR)) == -1)
		return -1;
	if (ioctl(fd, TIOCSCTTY, 0) == -1)
		goto fail;
	for (i = 0; i <= 2; i++)
		if (fd != i && dup2(fd, i) == -1)
			goto fail;
	if (fd > 2)
		close(fd);
	return 0;
fail:
	saved = errno;
	if (fd > 2)
		close(fd);
	errno = saved;
	return -1;
}

/*
 * The passwd entry's shell into out, or -1 when there is none to use:
 * no entry, an empty or relative shell, or one that is not executable
 * here (an image without the bash that its passwd names).
 */
static int
pty_login_shell(uid_t uid, char out[PATH_MAX])
{
	if (user_shell(NULL, uid, out, PATH_MAX) == -1 || out[0] != '/' ||
	    access(out, X_OK) == -1)
		return -1;
	return 0;
}

int
pty_default_shell(uid_t uid, char *buf, size_t n)
{
	char	 shell[PATH_MAX];

	if (pty_login_shell(uid, shell) == -1)
		memcpy(shell, PTY_SHELL_FALLBACK, sizeof(PTY_SHELL_FALLBACK));
	if (strlen(shell) >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, shell, strlen(shell) + 1);
	return 0;
}
