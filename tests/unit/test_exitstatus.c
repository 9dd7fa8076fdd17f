/*
 * exitstatus: how a child ended, from a wait status, as JSON (signal
 * absent unless signalled, timedOut only in a process's shape), and read
 * back from a status's "exit" as written.
 */
#include <sys/wait.h>

#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "core/exitstatus.h"

Suite *exitstatus_suite(void);

/* A wait status as the kernel builds it: exited with code, or killed. */
#define EXITED(code)	((code) << 8)
#define KILLED(sig)	(sig)

START_TEST(exit_from_wait_status)
{
	struct exit_status	e;

	memset(&e, 0, sizeof(e));
	e.timed_out = true;
	exitstatus_set(&e, EXITED(3));
	ck_assert_int_eq(e.code, 3);
	ck_assert_int_eq(e.signal, 0);
	ck_assert(e.timed_out);		/* the timeout's, kept */
	exitstatus_set(&e, KILLED(SIGKILL));
	ck_assert_int_eq(e.code, 137);
	ck_assert_int_eq(e.signal, SIGKILL);
	exitstatus_set(&e, EXITED(0));
	ck_assert_int_eq(e.signal, 0);
}
END_TEST

static char *
exit_text(const struct exit_status *e, bool timed)
{
	cJSON	*j = exitstatus_json(e, timed);
	char	*s;

	ck_assert_ptr_nonnull(j);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

START_TEST(exit_as_json_and_back)
{
	struct exit_status	 e = { 0 }, back;
	char			*s;
	cJSON			*j;

	e.code = 2;
	s = exit_text(&e, true);
	ck_assert_str_eq(s, "{\"code\":2,\"timedOut\":false}");
	free(s);
	s = exit_text(&e, false);
	ck_assert_str_eq(s, "{\"code\":2}");
	free(s);
	e.code = 143;
	e.signal = SIGTERM;
	e.timed_out = true;
	s = exit_text(&e, true);
	ck_assert_str_eq(s, "{\"code\":143,\"signal\":15,\"timedOut\":true}");
	j = cJSON_Parse(s);
	free(s);
	ck_assert_int_eq(exitstatus_parse(&back, j), 0);
	cJSON_Delete(j);
	ck_assert_int_eq(back.code, 143);
	ck_assert_int_eq(back.signal, SIGTERM);
	ck_assert(back.timed_out);
	ck_assert(!back.oom_killed);
}
END_TEST

/* No exit (a lost record's null), or one without a number for its code. */
START_TEST(exit_parse_refuses)
{
	struct exit_status	 e;
	cJSON			*j;

	ck_assert_int_eq(exitstatus_parse(&e, NULL), -1);
	j = cJSON_CreateNull();
	ck_assert_int_eq(exitstatus_parse(&e, j), -1);
	cJSON_Delete(j);
	j = cJSON_Parse("{\"code\":\"x\",\"signal\":9}");
	ck_assert_int_eq(exitstatus_parse(&e, j), 0);
	cJSON_Delete(j);
	ck_assert_int_eq(e.code, -1);
	ck_assert_int_eq(e.signal, 9);
}
END_TEST

Suite *
exitstatus_suite(void)
{
	Suite	*s = suite_create("exitstatus");
	TCase	*tc = tcase_create("exit");

	tcase_add_test(tc, exit_from_wait_status);
	tcase_add_test(tc, exit_as_json_and_back);
	tcase_add_test(tc, exit_parse_refuses);
	suite_add_tcase(s, tc);
	return s;
}
