/*
 * log.c: the agent's log lines on stderr.
 *
 * Format: "tend[pid]: level=warn msg... err=..." so that a line can be
 * grepped by field.  Writes are single write(2) calls so lines from
 * concurrent writers (the agent and a forked child before exec) do not mix.
 *
 * Logging never blocks: stderr may be a pipe nobody drains (a paused
 * terminal, a stuck log driver), and PID 1 sitting in write(2) stops
 * reaping and serving.  A line that cannot be written now is dropped and
 * counted, and once the descriptor takes data again one line says how
 * many were lost.  A line is written whole or not at all: when a write
 * takes only part of one (a socket, a terminal), its rest is kept and
 * written before anything else, and lines meanwhile are dropped.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "tunables.h"

#define LOG_ERR_MAX	128	/* the " err=\"...\"" suffix, at most */

/* How a line reaches log_fd without blocking. */
enum log_how {
	LOG_WRITE,	/* write(2): a private non-blocking fd, or a file */
	LOG_SEND,	/* send(MSG_DONTWAIT): a socket */
	LOG_POLL	/* poll for room, then write(2): the fallback */
};

static const char	*log_prog = "tend";
static int		 log_verbose;
static int		 log_fd = STDERR_FILENO;
static int		 log_own_fd = -1;	/* log_fd when we opened it */
static enum log_how	 log_how = LOG_WRITE;
static char		 log_tail[LOG_LINE_MAX];	/* a line's unsent rest */
static size_t		 log_tail_len;
static uint64_t		 log_ndropped;		/* since start */
static uint64_t		 log_unreported;	/* since the last notice */
static void		(*log_blocked_fn)(int);

static void	log_vline(const char *, const char *, va_list, int)
		    __attribute__((format(printf, 2, 0)));
static size_t	log_format(char *, const char *, int, const char *, va_list)
		    __attribute__((format(printf, 4, 0)));

void
log_init(const char *prog, int verbose)
{
	log_prog = prog;
	log_verbose = verbose;
	log_open(STDERR_FILENO);
}

/*
 * O_NONBLOCK belongs to the open file description, which a pipe or a
 * terminal on fd 2 shares with whoever gave it to us (a shell, a log
 * driver, wrapper mode's main child): setting it there would hand them
 * EAGAIN they never asked for.  So a pipe, FIFO or terminal is opened
 * again through /proc/self/fd, which gives a description of our own to
 * make non-blocking.  A socket cannot be reopened but takes MSG_DONTWAIT
 * per call.  A regular file does not block on a reader.  Without /proc
 * the fallback polls for room before each write: another writer on the
 * same pipe could still fill it in between, which only a private
 * description rules out.
 */
void
log_open(int fd)
{
	char		path[64];
	struct stat	st;
	int		nfd;

	if (log_own_fd != -1) {
		close(log_own_fd);
		log_own_fd = -1;
	}
	log_fd = fd;
	log_how = LOG_POLL;
	log_tail_len = 0;
	if (fstat(fd, &st) == -1)
		return;
	if (S_ISREG(st.st_mode)) {
		log_how = LOG_WRITE;
		return;
	}
	if (S_ISSOCK(st.st_mode)) {
		log_how = LOG_SEND;
		return;
	}
	(void)snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	/* O_NOCTTY: PID 1 opening a terminal must not make it its own. */
	nfd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (nfd == -1)
		return;
	log_fd = log_own_fd = nfd;
	log_how = LOG_WRITE;
}

void
log_set_blocked_hook(void (*fn)(int))
{
	log_blocked_fn = fn;
}

uint64_t
log_dropped(void)
{
	return log_ndropped;
}

/* One write attempt that does not block; -1 and errno (EAGAIN: full). */
static ssize_t
log_try_write(const char *p, size_t n)
{
	struct pollfd	pfd = { .fd = log_fd, .events = POLLOUT };
	ssize_t		w;

	if (log_how == LOG_POLL && (poll(&pfd, 1, 0) != 1 ||
	    !(pfd.revents & (POLLOUT | POLLERR | POLLHUP)))) {
		errno = EAGAIN;
		return -1;
	}
	do {
		if (log_how == LOG_SEND)
			w = send(log_fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		else
			w = write(log_fd, p, n);
	} while (w == -1 && errno == EINTR);
	return w;
}

static void
log_blocked(void)
{
	if ((errno == EAGAIN || errno == EWOULDBLOCK) && log_blocked_fn != NULL)
		log_blocked_fn(log_fd);
}

/*
 * Write one line, or keep its rest when only part of it went: 0.  -1 and
 * errno when none of it was written.
 */
static int
log_emit(const char *line, size_t n)
{
	ssize_t	w;

	if ((w = log_try_write(line, n)) == -1)
		return -1;
	if ((size_t)w < n) {
		memcpy(log_tail, line + w, n - w);
		log_tail_len = n - w;
		errno = EAGAIN;
		log_blocked();
	}
	return 0;
}

static size_t
log_line(char *line, const char *level, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static size_t
log_line(char *line, const char *level, int err, const char *fmt, ...)
{
	va_list	ap;
	size_t	n;

	va_start(ap, fmt);
	n = log_format(line, level, err, fmt, ap);
	va_end(ap);
	return n;
}

int
log_flush(void)
{
	char	line[LOG_LINE_MAX];
	ssize_t	w;
	size_t	n;

	if (log_tail_len > 0) {
		if ((w = log_try_write(log_tail, log_tail_len)) == -1)
			return -1;
		memmove(log_tail, log_tail + w, log_tail_len - w);
		log_tail_len -= w;
		if (log_tail_len > 0) {
			errno = EAGAIN;
			return -1;
		}
	}
	if (log_unreported == 0)
		return 0;
	n = log_line(line, "warn", 0, "event=log_lines_dropped count=%llu",
	    (unsigned long long)log_unreported);
	if (log_emit(line, n) == -1)
		return -1;
	log_unreported = 0;
	if (log_tail_len > 0) {
		errno = EAGAIN;
		return -1;
	}
	return 0;
}

/*
 * One line of at most LOG_LINE_MAX bytes, newline included: a long
 * message is cut so that the error suffix and the newline always fit.
 * Returns its length.
 */
static size_t
log_format(char *line, const char *level, int err, const char *fmt,
    va_list ap)
{
	char	suffix[LOG_ERR_MAX];
	size_t	n, slen, room;
	int	m;

	suffix[0] = '\0';
	if (err)
		(void)snprintf(suffix, sizeof(suffix), " err=\"%.*s\"",
		    (int)sizeof(suffix) - 9, strerror(err));
	slen = strlen(suffix);
	room = LOG_LINE_MAX - 1 - slen;		/* prefix and message */
	m = snprintf(line, room + 1, "%s: level=%s ", log_prog, level);
	n = m < 0 ? 0 : (size_t)m > room ? room : (size_t)m;
	m = vsnprintf(line + n, room + 1 - n, fmt, ap);
	if (m > 0)
		n = n + m > room ? room : n + m;
	memcpy(line + n, suffix, slen);
	n += slen;
	line[n++] = '\n';
	return n;
}

static void
log_vline(const char *level, const char *fmt, va_list ap, int err)
{
	char	line[LOG_LINE_MAX];
	size_t	n;

	n = log_format(line, level, err, fmt, ap);
	/* What was dropped is said before any later line. */
	if (log_flush() == -1 || log_emit(line, n) == -1) {
		log_ndropped++;
		log_unreported++;
		log_blocked();
	}
}

#define LOG_BODY(level, err) do {		\
	int	saved = errno;			\
	va_list	ap;				\
	va_start(ap, fmt);			\
	log_vline(level, fmt, ap, err);		\
	va_end(ap);				\
	errno = saved;				\
} while (0)

void
log_info(const char *fmt, ...)
{
	LOG_BODY("info", 0);
}

void
log_debug(const char *fmt, ...)
{
	if (log_verbose)
		LOG_BODY("debug", 0);
}

void
log_warn(const char *fmt, ...)
{
	LOG_BODY("warn", errno);
}

void
log_warnx(const char *fmt, ...)
{
	LOG_BODY("warn", 0);
}

void
fatal(const char *fmt, ...)
{
	LOG_BODY("fatal", errno);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	LOG_BODY("fatal", 0);
	exit(1);
}
