/*
 * buf: append, consume, reuse of consumed space.
 */
#include <check.h>
#include <string.h>

#include "base/buf.h"

Suite *buf_suite(void);

START_TEST(append_and_consume)
{
	struct buf	b = { 0 };

	ck_assert_int_eq(buf_addstr(&b, "hello "), 0);
	ck_assert_int_eq(buf_printf(&b, "%s %d", "world", 42), 0);
	ck_assert_uint_eq(buf_avail(&b), 14);
	ck_assert_int_eq(memcmp(buf_head(&b), "hello world 42", 14), 0);
	buf_consume(&b, 6);
	ck_assert_uint_eq(buf_avail(&b), 8);
	ck_assert_int_eq(memcmp(buf_head(&b), "world 42", 8), 0);
	buf_consume(&b, 100);
	ck_assert_uint_eq(buf_avail(&b), 0);
	ck_assert_uint_eq(b.off, 0);
	buf_free(&b);
}
END_TEST

START_TEST(grows_and_reclaims)
{
	struct buf	b = { 0 };
	char		chunk[1000];
	size_t		cap;
	int		i;

	memset(chunk, 'x', sizeof(chunk));
	for (i = 0; i < 1000; i++)
		ck_assert_int_eq(buf_add(&b, chunk, sizeof(chunk)), 0);
	ck_assert_uint_eq(buf_avail(&b), 1000000);
	cap = b.cap;
	/* Used as a queue, the buffer must not grow without bound. */
	for (i = 0; i < 10000; i++) {
		buf_consume(&b, sizeof(chunk));
		ck_assert_int_eq(buf_add(&b, chunk, sizeof(chunk)), 0);
	}
	ck_assert_uint_eq(b.cap, cap);
	ck_assert_uint_eq(buf_avail(&b), 1000000);
	buf_free(&b);
	ck_assert_ptr_null(b.data);
}
END_TEST

Suite *
buf_suite(void)
{
	Suite	*s = suite_create("buf");
	TCase	*tc = tcase_create("queue");

	tcase_add_test(tc, append_and_consume);
	tcase_add_test(tc, grows_and_reclaims);
	suite_add_tcase(s, tc);
	return s;
}
