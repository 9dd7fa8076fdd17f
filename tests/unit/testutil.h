/*
 * Helpers the unit suites share: scratch directories, files written and
 * read with plain system calls (independent of lib/fsutil), and running
 * an ev loop until something holds.  Each one fails the calling test
 * (ck_assert) on an error it does not expect.
 */
#ifndef TEND_TESTUTIL_H
#define TEND_TESTUTIL_H

#include <stdbool.h>
#include <stddef.h>

struct cJSON;
struct ev_loop;

/* mkdtemp of prefix "XXXXXX" into path (n bytes), e.g. "/tmp/tend-x-". */
void	 tu_mkdtemp(char *path, size_t n, const char *prefix);
/* The same, opened: a directory fd (O_CLOEXEC) to close. */
int	 tu_tmpdir(char *path, size_t n, const char *prefix);
/* rm -rf path, without following links; errors are ignored. */
void	 tu_rmtree(const char *path);

/* Write all of s to fd. */
void	 tu_write(int fd, const char *s);
/* Create (or replace) name in dirfd, mode 0600, holding s. */
void	 tu_put(int dirfd, const char *name, const char *s);
/* The whole file, malloc'd and NUL-terminated; its length in *len. */
char	*tu_slurp(int dirfd, const char *name, size_t *len);
/* At most cap bytes of the file into d: how many. */
size_t	 tu_read(int dirfd, const char *name, char *d, size_t cap);
/* The file parsed as JSON, for cJSON_Delete. */
struct cJSON *tu_json(int dirfd, const char *name);
/* name exists in dirfd (a link is not followed). */
bool	 tu_exists(int dirfd, const char *name);

/*
 * openat2 answers ENOSYS from now on, as on kernels before 5.6: a
 * seccomp filter on the calling process (check forks per test).
 */
void	 tu_no_openat2(void);

/*
 * Skips.  check has none, and a test that returns early passes: a test
 * that cannot run here (no root, no mounts, no tool) calls TU_SKIP("why")
 * and returns.  That prints "SKIP suite:test: why" to stderr and counts
 * in the suite's summary line; a test that skips only a part of itself
 * calls it too and goes on.
 */
#define TU_SKIP(...)	tu_skip(__func__, __VA_ARGS__)
void	 tu_skip(const char *fn, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* For the runner (main.c): before its tests, then their skips so far. */
void	 tu_runner_init(const char *suite);
int	 tu_skipped(void);

/* CLOCK_MONOTONIC, in seconds. */
double	 tu_now(void);
/* Run loop until done(arg) or secs have passed: done(arg) at the end. */
bool	 tu_run_until(struct ev_loop *loop, bool (*done)(void *), void *arg,
	    double secs);

#endif
