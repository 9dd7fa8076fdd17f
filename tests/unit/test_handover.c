/*
 * handover: the new agent's side of a live upgrade's manifest — read
 * from the memfd TEND_HANDOVER_FD names, its fds made close-on-exec
 * again, its format's major checked; what cannot be read says "failed"
 * and why.  (The whole handover, exec included, is the black-box
 * test_upgrade's.)
 */
#include <sys/mman.h>

#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/handover.h"

Suite *handover_suite(void);

#define BOOT	"0123456789abcdef0123456789abcdef"

/* A memfd holding text, named by TEND_HANDOVER_FD. */
static int
manifest(const char *text)
{
	char	v[16];
	int	fd;

	fd = memfd_create("test-handover", 0);
	ck_assert_int_ge(fd, 3);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	snprintf(v, sizeof(v), "%d", fd);
	setenv(HANDOVER_ENV, v, 1);
	return fd;
}

START_TEST(none_without_the_variable)
{
	unsetenv(HANDOVER_ENV);
	ck_assert_ptr_null(handover_take());
	ck_assert_str_eq(handover_state(), "none");
	ck_assert_uint_eq(handover_upgrades(), 0);
}
END_TEST

START_TEST(taken_and_fds_made_cloexec)
{
	char	 text[512];
	cJSON	*m, *h;
	int	 p[2], fd;

	ck_assert_int_eq(pipe(p), 0);		/* not close-on-exec */
	snprintf(text, sizeof(text), "{\"handover\":\"1.7\",\"version\":\"9.9\","
	    "\"boot\":\"%s\",\"upgrades\":3,\"listenFd\":%d,\"x\":{\"outFds\":"
	    "[-1,%d]}}", BOOT, p[0], p[1]);
	fd = manifest(text);
	ck_assert_ptr_nonnull(m = handover_take());
	ck_assert_ptr_null(getenv(HANDOVER_ENV));
	ck_assert_int_eq(fcntl(fd, F_GETFD), -1);	/* closed once read */
	ck_assert_int_ne(fcntl(p[0], F_GETFD) & FD_CLOEXEC, 0);
	ck_assert_int_ne(fcntl(p[1], F_GETFD) & FD_CLOEXEC, 0);
	ck_assert_str_eq(handover_boot(m), BOOT);
	ck_assert_int_eq(handover_listen_fd(m), p[0]);
	ck_assert_str_eq(handover_state(), "resumed");
	ck_assert_uint_eq(handover_upgrades(), 3);
	h = cJSON_CreateObject();
	handover_health(h);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(
	    cJSON_GetObjectItem(h, "handover"), "from")), "9.9");
	ck_assert_int_eq(cJSON_GetObjectItem(h, "upgrades")->valueint, 3);
	cJSON_Delete(h);
	cJSON_Delete(m);
}
END_TEST

START_TEST(refused_and_said)
{
	static const char *const bad[] = {
		"{\"handover\":\"2.0\",\"boot\":\"" BOOT "\"}",	/* a major */
		"{\"handover\":\"1.0\",\"boot\":\"nope\"}",
		"{\"handover\":\"1.0\"",				/* not JSON */
		"",
	};
	cJSON	*h;
	size_t	 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		(void)manifest(bad[i]);
		ck_assert_ptr_null(handover_take());
		ck_assert_str_eq(handover_state(), "failed");
	}
	setenv(HANDOVER_ENV, "x", 1);
	ck_assert_ptr_null(handover_take());
	setenv(HANDOVER_ENV, "999", 1);			/* not open */
	ck_assert_ptr_null(handover_take());
	h = cJSON_CreateObject();
	handover_health(h);
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(cJSON_GetObjectItem(h,
	    "handover"), "reason"));
	cJSON_Delete(h);
}
END_TEST

Suite *
handover_suite(void)
{
	Suite	*s = suite_create("handover");
	TCase	*tc = tcase_create("take");

	tcase_add_test(tc, none_without_the_variable);
	tcase_add_test(tc, taken_and_fds_made_cloexec);
	tcase_add_test(tc, refused_and_said);
	suite_add_tcase(s, tc);
	return s;
}
