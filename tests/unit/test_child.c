/*
 * child: a watched pid's status goes to its watcher once; an unwatched
 * one is still claimed, silently; a pid nobody watched is not claimed.
 * The reap loop, on real children of the test: every one reaped with its
 * status, a launched one's kept through a burst of orphans, a burst in a
 * few passes, a lone orphan without a hold-off, the helpers first.
 */
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <ev.h>

#include "sys/child.h"
#include "testutil.h"

Suite *child_suite(void);

static bool	reap_test_fn(pid_t, int);

static int	calls;
static int	got_status;
static void	*got_arg;

static void
child_test_fn(pid_t pid, int wstatus, void *arg)
{
	(void)pid;
	calls++;
	got_status = wstatus;
	got_arg = arg;
}

START_TEST(watched_once)
{
	int	tag;

	calls = 0;
	ck_assert_int_eq(child_watch(4242, child_test_fn, &tag), 0);
	ck_assert(!child_reaped(4243, 0));
	ck_assert_int_eq(calls, 0);
	ck_assert(child_reaped(4242, 7 << 8));
	ck_assert_int_eq(calls, 1);
	ck_assert_int_eq(WEXITSTATUS(got_status), 7);
	ck_assert_ptr_eq(got_arg, &tag);
	ck_assert(!child_reaped(4242, 0));	/* gone after the first */
	ck_assert_int_eq(calls, 1);
}
END_TEST

START_TEST(unwatched_is_claimed_silently)
{
	calls = 0;
	ck_assert_int_eq(child_watch(5000, child_test_fn, NULL), 0);
	ck_assert_int_eq(child_watch(5001, child_test_fn, NULL), 0);
	child_unwatch(5000);
	ck_assert(child_reaped(5000, 0));
	ck_assert_int_eq(calls, 0);
	ck_assert(child_reaped(5001, 0));
	ck_assert_int_eq(calls, 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The reap loop */

#define NKIDS	100

static struct ev_loop	*loop;
static pid_t		 kids[NKIDS];
static int		 kid_status[NKIDS];
static int		 nreaped;
static pid_t		 launched;	/* the one the reap fn claims */
static int		 launched_status;

static void
loop_setup(void)
{
	loop = ev_loop_new(EVFLAG_AUTO);
	ck_assert_ptr_nonnull(loop);
	nreaped = 0;
	launched = 0;
	launched_status = -1;
	ck_assert_int_eq(child_reap_start(loop, reap_test_fn), 0);
}

static void
loop_teardown(void)
{
	child_reap_stop();
	ev_loop_destroy(loop);
}

/* False (an orphan) for every child but the launched one. */
static bool
reap_test_fn(pid_t pid, int wstatus)
{
	int	i;

	nreaped++;
	if (pid == launched) {
		launched_status = wstatus;
		return true;
	}
	for (i = 0; i < NKIDS; i++)
		if (kids[i] == pid)
			kid_status[i] = wstatus;
	return false;
}

/* A child that exits with code at t0 + at seconds (CLOCK_MONOTONIC). */
static pid_t
fork_exit_at(double t0, double at, int code)
{
	struct timespec	ts;
	double		left;
	pid_t		pid;

	if ((pid = fork()) == 0) {
		if ((left = t0 + at - tu_now()) > 0) {
			ts.tv_sec = (time_t)left;
			ts.tv_nsec = (long)((left - ts.tv_sec) * 1e9);
			nanosleep(&ts, NULL);
		}
		_exit(code);
	}
	ck_assert_int_gt(pid, 0);
	return pid;
}

static bool
all_reaped(void *arg)
{
	return nreaped >= *(int *)arg;
}

/* Nothing left to reap: no zombie, no child. */
static void
assert_no_child(void)
{
	ck_assert_int_eq(waitpid(-1, NULL, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
}

START_TEST(reaps_every_child_with_its_status)
{
	double	t0 = tu_now();
	int	i, n = 20;

	for (i = 0; i < n; i++) {
		kid_status[i] = -1;
		kids[i] = fork_exit_at(t0, 0.001 * i, i);
	}
	ck_assert(tu_run_until(loop, all_reaped, &n, 10));
	for (i = 0; i < n; i++) {
		ck_assert(WIFEXITED(kid_status[i]));
		ck_assert_int_eq(WEXITSTATUS(kid_status[i]), i);
	}
	assert_no_child();
}
END_TEST

/*
 * 100 orphans 0.5 ms apart: a pass per death would be about 100; one per
 * 5 ms hold-off is about 10.  The launched child dying among them keeps
 * its status.
 */
START_TEST(burst_in_few_passes_launched_status_kept)
{
	struct child_stats	st;
	double			t0 = tu_now();
	int			i, n = NKIDS + 1;

	for (i = 0; i < NKIDS; i++)
		kids[i] = fork_exit_at(t0, 0.2 + 0.0005 * i, 0);
	launched = fork_exit_at(t0, 0.2 + 0.0005 * NKIDS / 2, 42);
	ck_assert(tu_run_until(loop, all_reaped, &n, 10));
	ck_assert(WIFEXITED(launched_status));
	ck_assert_int_eq(WEXITSTATUS(launched_status), 42);
	child_reap_stats(&st);
	ck_assert_int_eq(st.reaped, n);
	ck_assert_int_gt(st.holdoffs, 0);
	ck_assert_msg(st.passes < NKIDS / 3, "%d passes for %d orphans",
	    (int)st.passes, NKIDS);
	assert_no_child();
}
END_TEST

/* A lone orphan is no burst: the next exit is reaped at its SIGCHLD. */
START_TEST(lone_orphan_no_holdoff)
{
	struct child_stats	st;
	int			n = 1;

	kids[0] = fork_exit_at(tu_now(), 0, 0);
	ck_assert(tu_run_until(loop, all_reaped, &n, 10));
	launched = fork_exit_at(tu_now(), 0.05, 7);
	n = 2;
	ck_assert(tu_run_until(loop, all_reaped, &n, 10));
	ck_assert_int_eq(WEXITSTATUS(launched_status), 7);
	child_reap_stats(&st);
	ck_assert_int_eq(st.holdoffs, 0);
	assert_no_child();
}
END_TEST

static int	helper_calls;

static void
helper_fn(pid_t pid, int wstatus, void *arg)
{
	(void)pid;
	(void)arg;
	helper_calls++;
	got_status = wstatus;
}

static bool
helper_done(void *arg)
{
	(void)arg;
	return helper_calls > 0;
}

/* A watched helper's status goes to its watcher, not to the reap fn. */
START_TEST(helper_claimed_before_reap_fn)
{
	pid_t	pid = fork_exit_at(tu_now(), 0, 5);

	helper_calls = 0;
	ck_assert_int_eq(child_watch(pid, helper_fn, NULL), 0);
	ck_assert(tu_run_until(loop, helper_done, NULL, 10));
	ck_assert_int_eq(WEXITSTATUS(got_status), 5);
	ck_assert_int_eq(nreaped, 0);
	assert_no_child();
}
END_TEST

Suite *
child_suite(void)
{
	Suite	*s = suite_create("child");
	TCase	*tc = tcase_create("table");

	tcase_add_test(tc, watched_once);
	tcase_add_test(tc, unwatched_is_claimed_silently);
	suite_add_tcase(s, tc);
	tc = tcase_create("reap");
	tcase_add_checked_fixture(tc, loop_setup, loop_teardown);
	tcase_add_test(tc, reaps_every_child_with_its_status);
	tcase_add_test(tc, burst_in_few_passes_launched_status_kept);
	tcase_add_test(tc, lone_orphan_no_holdoff);
	tcase_add_test(tc, helper_claimed_before_reap_fn);
	suite_add_tcase(s, tc);
	return s;
}
