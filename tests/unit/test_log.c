/*
 * log: the line format, truncation, and lines dropped (never blocking,
 * never split) when the descriptor is full.  Links log.o alone.
 */
#include <sys/stat.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/log.h"
#include "base/tunables.h"
#include "testutil.h"

Suite *log_suite(void);

static int	p[2] = { -1, -1 };	/* the pipe lines go to */
static int	hook_fd = -1, hook_calls;

static void
setup(void)
{
	ck_assert_int_eq(pipe(p), 0);
	log_init("unit", 1);
	log_open(p[1]);
	hook_fd = -1;
	hook_calls = 0;
}

static void
teardown(void)
{
	log_set_blocked_hook(NULL);
	log_open(STDERR_FILENO);
	close(p[0]);
	close(p[1]);
}

static void
hook(int fd)
{
	hook_fd = fd;
	hook_calls++;
}

/*
 * Everything readable from fd, NUL-terminated, into d (cap bytes): until
 * nothing came for ms milliseconds.
 */
static size_t
drain_for(int fd, char *d, size_t cap, int ms)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };
	size_t		n = 0;
	ssize_t		r;

	while (n < cap - 1 && poll(&pfd, 1, ms) == 1 &&
	    (pfd.revents & POLLIN)) {
		r = read(fd, d + n, cap - 1 - n);
		if (r <= 0)
			break;
		n += r;
	}
	d[n] = '\0';
	return n;
}

/* What a pipe holds now. */
static size_t
drain(int fd, char *d, size_t cap)
{
	return drain_for(fd, d, cap, 0);
}

START_TEST(line_format)
{
	char	got[4096];

	errno = ENOENT;
	log_warn("event=x id=%s n=%d", "a", 7);
	ck_assert_int_eq(errno, ENOENT);	/* left as it was */
	log_warnx("event=y");
	log_info("event=z");
	log_debug("event=d");
	drain(p[0], got, sizeof(got));
	ck_assert_str_eq(got,
	    "unit: level=warn event=x id=a n=7 err=\"No such file or "
	    "directory\"\n"
	    "unit: level=warn event=y\n"
	    "unit: level=info event=z\n"
	    "unit: level=debug event=d\n");
	log_init("unit", 0);
	log_open(p[1]);
	log_debug("event=quiet");
	ck_assert_uint_eq(drain(p[0], got, sizeof(got)), 0);
}
END_TEST

START_TEST(long_lines_are_cut)
{
	char		*msg, got[8192], prog[3000];
	const char	*want;
	size_t		 n;

	msg = malloc(5001);
	ck_assert_ptr_nonnull(msg);
	memset(msg, 'm', 5000);
	msg[5000] = '\0';

	/* The error suffix and the newline survive a cut message. */
	errno = E2BIG;
	log_warn("event=long msg=%s", msg);
	n = drain(p[0], got, sizeof(got));
	ck_assert_uint_eq(n, LOG_LINE_MAX);
	ck_assert_int_eq(strncmp(got, "unit: level=warn event=long msg=mmm", 35),
	    0);
	want = "mmm err=\"Argument list too long\"\n";
	ck_assert_str_eq(got + n - strlen(want), want);

	/* A prefix longer than a line: still one line, within bounds. */
	memset(prog, 'p', sizeof(prog) - 1);
	prog[sizeof(prog) - 1] = '\0';
	log_init(prog, 0);
	log_open(p[1]);
	errno = EACCES;
	log_warn("event=x");
	n = drain(p[0], got, sizeof(got));
	ck_assert_uint_eq(n, LOG_LINE_MAX);
	ck_assert_ptr_null(memchr(got, '\n', n - 1));
	want = "p err=\"Permission denied\"\n";
	ck_assert_str_eq(got + n - strlen(want), want);

	/* An unknown errno is no longer than it may be either. */
	log_init("unit", 0);
	log_open(p[1]);
	errno = 123456;
	log_warn("event=odd %s", msg);
	n = drain(p[0], got, sizeof(got));
	ck_assert_uint_eq(n, LOG_LINE_MAX);
	ck_assert_int_eq(got[n - 1], '\n');
	ck_assert_int_eq(got[n - 2], '"');
	free(msg);
}
END_TEST

#define PAD	"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"

START_TEST(full_pipe_drops_and_counts)
{
	char	 got[64 * 1024], want[256];
	char	*line, *next;
	int	 i, seen = 0, total = 300, fl;
	unsigned long long before, dropped, told;

	ck_assert_int_ge(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
	fl = fcntl(p[1], F_GETFL);
	before = log_dropped();
	log_set_blocked_hook(hook);
	for (i = 0; i < total; i++)
		log_info("event=n i=%04d pad=%s", i, PAD);
	/* It returned (never blocked), and said what was lost. */
	dropped = log_dropped() - before;
	ck_assert_uint_gt(dropped, 0);
	ck_assert_uint_lt(dropped, total);
	ck_assert_int_gt(hook_calls, 0);
	ck_assert_int_ge(hook_fd, 0);
	/* Our own description was made non-blocking, not the caller's. */
	ck_assert_int_eq(fcntl(p[1], F_GETFL), fl);
	ck_assert_int_eq(fl & O_NONBLOCK, 0);
	ck_assert_int_eq(fcntl(hook_fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);

	/* Every line read is whole, in order; the rest were dropped. */
	drain(p[0], got, sizeof(got));
	for (line = got; *line != '\0'; line = next) {
		next = strchr(line, '\n');
		ck_assert_ptr_nonnull(next);
		*next++ = '\0';
		snprintf(want, sizeof(want), "unit: level=info event=n i=%04d "
		    "pad=%s", seen, PAD);
		ck_assert_str_eq(line, want);
		seen++;
	}
	ck_assert_uint_eq(seen + dropped, total);

	/* Drained: the count goes out first, then lines again. */
	ck_assert_int_eq(log_flush(), 0);
	log_info("event=after");
	drain(p[0], got, sizeof(got));
	ck_assert_int_eq(sscanf(got, "unit: level=warn event=log_lines_dropped "
	    "count=%llu\n", &told), 1);
	ck_assert_uint_eq(told, dropped);
	ck_assert_ptr_nonnull(strstr(got, "\nunit: level=info event=after\n"));
	ck_assert_int_eq(log_flush(), 0);
	ck_assert_uint_eq(log_dropped() - before, dropped);	/* a total */
}
END_TEST

/*
 * While the count is pending, a later line is dropped, not written
 * ahead of it: what the reader sees stays in order.
 */
START_TEST(notice_before_later_lines)
{
	char	got[64 * 1024], fill[1000];
	unsigned long long before, told;
	char	*s;

	ck_assert_int_ge(fcntl(p[1], F_SETPIPE_SZ, 4096), 4096);
	memset(fill, 'f', sizeof(fill) - 1);
	fill[sizeof(fill) - 1] = '\0';
	before = log_dropped();
	while (log_dropped() == before)
		log_info("event=fill %s", fill);
	errno = 0;
	ck_assert_int_eq(log_flush(), -1);
	ck_assert_int_eq(errno, EAGAIN);
	drain(p[0], got, sizeof(got));
	log_info("event=next");
	drain(p[0], got, sizeof(got));
	ck_assert_int_eq(sscanf(got, "unit: level=warn event=log_lines_dropped "
	    "count=%llu\n", &told), 1);
	ck_assert_uint_eq(told, log_dropped() - before);
	s = strchr(got, '\n');
	ck_assert_str_eq(s + 1, "unit: level=info event=next\n");
}
END_TEST

/* A terminal may take part of a line: its rest goes out before the next. */
START_TEST(terminal_lines_stay_whole)
{
	char		 got[256 * 1024], *line, *next, *name, *pad;
	struct termios	 t;
	size_t		 n = 0;
	int		 m, s, i, lines = 0;
	uint64_t	 before;
	unsigned long long count, told = 0;

	if ((m = posix_openpt(O_RDWR | O_NOCTTY)) == -1 || grantpt(m) == -1 ||
	    unlockpt(m) == -1 || (name = ptsname(m)) == NULL) {
		TU_SKIP("no pty: %s", strerror(errno));
		return;
	}
	ck_assert_int_ge(s = open(name, O_WRONLY | O_NOCTTY), 0);
	ck_assert_int_eq(tcgetattr(s, &t), 0);
	cfmakeraw(&t);
	ck_assert_int_eq(tcsetattr(s, TCSANOW, &t), 0);
	log_open(s);
	before = log_dropped();
	for (i = 0; i < 2000; i++)
		log_info("event=tty i=%d pad=%0300d", i, 0);
	ck_assert_uint_gt(log_dropped(), before);
	ck_assert_int_eq(fcntl(s, F_GETFL) & O_NONBLOCK, 0);
	for (i = 0; i < 1000 && (n += drain_for(m, got + n, sizeof(got) - n,
	    1), log_flush() == -1); i++)
		;
	/* A pty hands data to its master side a moment later. */
	n += drain_for(m, got + n, sizeof(got) - n, 200);
	ck_assert_int_eq(log_flush(), 0);
	for (line = got; *line != '\0'; line = next) {
		next = strchr(line, '\n');
		ck_assert_ptr_nonnull(next);
		*next++ = '\0';
		lines++;
		if (sscanf(line, "unit: level=warn event=log_lines_dropped "
		    "count=%llu", &count) == 1) {
			told += count;
			continue;
		}
		ck_assert_int_eq(strncmp(line, "unit: level=info event=tty i=",
		    29), 0);
		ck_assert_ptr_nonnull(pad = strstr(line, " pad="));
		ck_assert_uint_eq(strlen(pad + 5), 300);
		ck_assert_uint_eq(strspn(pad + 5, "0"), 300);
	}
	/* The pty drains by itself meanwhile: there may be several counts. */
	ck_assert_uint_eq(told, log_dropped() - before);
	ck_assert_int_gt(lines, 1);
	log_open(p[1]);
	close(s);
	close(m);
}
END_TEST

Suite *
log_suite(void)
{
	Suite	*s = suite_create("log");
	TCase	*tc = tcase_create("lines");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, line_format);
	tcase_add_test(tc, long_lines_are_cut);
	tcase_add_test(tc, full_pipe_drops_and_counts);
	tcase_add_test(tc, notice_before_later_lines);
	tcase_add_test(tc, terminal_lines_stay_whole);
	suite_add_tcase(s, tc);
	return s;
}
