/*
 * Helpers the unit suites share; see testutil.h.  No suite of its own.
 */
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <ev.h>

#include "testutil.h"

static int	rm_cb(const char *, const struct stat *, int, struct FTW *);
static int	open_ro(int, const char *);
static void	tick_cb(struct ev_loop *, ev_timer *, int);

static const char	*tu_suite = "?";
static int		*tu_skips;	/* shared: check forks per test */

void
tu_mkdtemp(char *path, size_t n, const char *prefix)
{
	int	len;

	len = snprintf(path, n, "%sXXXXXX", prefix);
	ck_assert_msg(len > 0 && (size_t)len < n, "%s: too long", prefix);
	ck_assert_msg(mkdtemp(path) != NULL, "%s: %s", path, strerror(errno));
}

int
tu_tmpdir(char *path, size_t n, const char *prefix)
{
	int	fd;

	tu_mkdtemp(path, n, prefix);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	return fd;
}

static int
rm_cb(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void
tu_rmtree(const char *path)
{
	(void)nftw(path, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

void
tu_write(int fd, const char *s)
{
	ck_assert_int_eq(write(fd, s, strlen(s)), (ssize_t)strlen(s));
}

void
tu_put(int dirfd, const char *name, const char *s)
{
	int	fd;

	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600);
	ck_assert_msg(fd >= 0, "%s: %s", name, strerror(errno));
	tu_write(fd, s);
	close(fd);
}

static int
open_ro(int dirfd, const char *name)
{
	int	fd;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	ck_assert_msg(fd >= 0, "%s: %s", name, strerror(errno));
	return fd;
}

char *
tu_slurp(int dirfd, const char *name, size_t *lenp)
{
	char	*s = NULL;
	size_t	 len = 0, cap = 0;
	ssize_t	 n;
	int	 fd;

	fd = open_ro(dirfd, name);
	for (;;) {
		if (cap - len < 4096) {
			cap = cap == 0 ? 8192 : 2 * cap;
			s = realloc(s, cap);
			ck_assert_ptr_nonnull(s);
		}
		n = read(fd, s + len, cap - 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		ck_assert_msg(n >= 0, "%s: %s", name, strerror(errno));
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	s[len] = '\0';
	if (lenp != NULL)
		*lenp = len;
	return s;
}

size_t
tu_read(int dirfd, const char *name, char *d, size_t cap)
{
	ssize_t	n;
	size_t	done = 0;
	int	fd;

	fd = open_ro(dirfd, name);
	while (done < cap && (n = read(fd, d + done, cap - done)) > 0)
		done += (size_t)n;
	close(fd);
	return done;
}

struct cJSON *
tu_json(int dirfd, const char *name)
{
	char	*s = tu_slurp(dirfd, name, NULL);
	cJSON	*j = cJSON_Parse(s);

	ck_assert_msg(j != NULL, "%s: not JSON: %s", name, s);
	free(s);
	return j;
}

bool
tu_exists(int dirfd, const char *name)
{
	struct stat	st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

void
tu_no_openat2(void)
{
	struct sock_filter	f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog	prog = { sizeof(f) / sizeof(f[0]), f };

	ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
	errno = 0;
	ck_assert_int_eq(syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0), -1);
	ck_assert_int_eq(errno, ENOSYS);
}

double
tu_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wakes the loop now and then, so that done() is asked again. */
static void
tick_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)l;
	(void)w;
	(void)revents;
}

bool
tu_run_until(struct ev_loop *loop, bool (*done)(void *), void *arg,
    double secs)
{
	ev_timer	tick;
	double		end = tu_now() + secs;

	ev_timer_init(&tick, tick_cb, 0.005, 0.005);
	ev_timer_start(loop, &tick);
	while (!done(arg) && tu_now() < end)
		ev_run(loop, EVRUN_ONCE);
	ev_timer_stop(loop, &tick);
	return done(arg);
}

/*
 * The count lives in a shared mapping because each test runs in a child
 * check forks; with CK_FORK=no it is the runner's own memory all the same.
 */
void
tu_runner_init(const char *suite)
{
	void	*m;

	tu_suite = suite;
	m = mmap(NULL, sizeof(*tu_skips), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		perror("tu_runner_init: mmap");
		exit(EXIT_FAILURE);
	}
	tu_skips = m;
}

int
tu_skipped(void)
{
	if (tu_skips == NULL)
		return 0;
	return __atomic_load_n(tu_skips, __ATOMIC_SEQ_CST);
}

/* fn is START_TEST's function, "name_fn": the test is "name". */
void
tu_skip(const char *fn, const char *fmt, ...)
{
	va_list	ap;
	size_t	n = strlen(fn);

	if (n > 3 && strcmp(fn + n - 3, "_fn") == 0)
		n -= 3;
	fprintf(stderr, "SKIP %s:%.*s: ", tu_suite, (int)n, fn);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (tu_skips != NULL)
		__atomic_add_fetch(tu_skips, 1, __ATOMIC_SEQ_CST);
}
