/*
 * child: a watched pid's status goes to its watcher once; an unwatched
 * one is still claimed, silently; a pid nobody watched is not claimed.
 */
#include <sys/wait.h>

#include <check.h>
#include <unistd.h>

#include "child.h"

Suite *child_suite(void);

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

Suite *
child_suite(void)
{
	Suite	*s = suite_create("child");
	TCase	*tc = tcase_create("table");

	tcase_add_test(tc, watched_once);
	tcase_add_test(tc, unwatched_is_claimed_silently);
	suite_add_tcase(s, tc);
	return s;
}
