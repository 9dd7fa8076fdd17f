/*
 * cursor: round trips, binding to one boot and one ID, and refusal of
 * everything that is not exactly what cursor_format writes.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "store/cursor.h"

Suite *cursor_suite(void);

#define BOOT	"0123456789abcdef0123456789abcdef"
#define OTHER	"fedcba9876543210fedcba9876543210"
#define ID	"web-1"

START_TEST(round_trip)
{
	static const uint64_t	 seqs[] = { 0, 1, 9, 10, 17, 1000000,
				     UINT64_MAX - 1, UINT64_MAX };
	char			 c[CURSOR_MAX];
	uint64_t		 seq;
	size_t			 i, j;

	for (i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		cursor_format(c, BOOT, ID, seqs[i]);
		ck_assert_uint_lt(strlen(c), CURSOR_MAX);
		for (j = 0; c[j] != '\0'; j++)
			ck_assert_msg(strchr("0123456789abcdef-", c[j]),
			    "%s: not URL-safe", c);
		seq = 12345;
		ck_assert_int_eq(cursor_parse(c, BOOT, ID, &seq), 0);
		ck_assert_uint_eq(seq, seqs[i]);
	}
}
END_TEST

START_TEST(format_shape)
{
	char	c[CURSOR_MAX], d[CURSOR_MAX];

	cursor_format(c, BOOT, ID, 17);
	ck_assert_uint_eq(strlen(c), 2 + 1 + 8);
	ck_assert_int_eq(strncmp(c, "17-", 3), 0);
	/* The tag depends on boot and id only, not on seq. */
	cursor_format(d, BOOT, ID, 4);
	ck_assert_str_eq(c + 3, d + 2);
	cursor_format(c, BOOT, ID, UINT64_MAX);
	ck_assert_uint_eq(strlen(c), 20 + 1 + 8);
}
END_TEST

/* printf 'a/b' | sha256sum: c14cddc033f64b9d... */
START_TEST(tag_is_sha256_prefix)
{
	char		c[CURSOR_MAX];
	uint64_t	seq;

	cursor_format(c, "a", "b", 3);
	ck_assert_str_eq(c, "3-c14cddc0");
	ck_assert_int_eq(cursor_parse("3-c14cddc0", "a", "b", &seq), 0);
	ck_assert_uint_eq(seq, 3);
}
END_TEST

START_TEST(other_boot_or_id_refused)
{
	char		c[CURSOR_MAX];
	uint64_t	seq = 7;

	cursor_format(c, BOOT, ID, 5);
	ck_assert_int_eq(cursor_parse(c, OTHER, ID, &seq), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(cursor_parse(c, BOOT, "web-2", &seq), -1);
	ck_assert_int_eq(cursor_parse(c, BOOT, "", &seq), -1);
	ck_assert_uint_eq(seq, 7);
}
END_TEST

static const char *const bad[] = {
	"",
	"-",
	"5",
	"5-",
	"-TAG",
	"+5-TAG",
	"-5-TAG",
	"05-TAG",
	"00-TAG",
	" 5-TAG",
	"5 -TAG",
	"5a-TAG",
	"0x5-TAG",
	"18446744073709551616-TAG",	/* UINT64_MAX + 1 */
	"99999999999999999999-TAG",
	"123456789012345678901-TAG",	/* 21 digits */
	"5-TAG ",
	"5-TAG0",
	"5-TAG-",
	"5-TAG\n",
	"5--TAG",
	"5_TAG",
	"5.TAG",
	"5-UPPER",
	"5-SHORT",
	"5-00000000",
	"5-ffffffff",
	"c5-TAG",
	"5-TAG-5-TAG",
	"5-TAGTAG",
};

/*
 * Vectors name the right tag "TAG" (and "UPPER", "SHORT" for variants of
 * it); they are substituted here so the table stays readable.
 */
START_TEST(malformed_refused)
{
	char		 c[CURSOR_MAX], tag[9], up[9], v[128], *p;
	const char	*s = bad[_i];
	uint64_t	 seq = 77;
	size_t		 i;

	cursor_format(c, BOOT, ID, 0);
	memcpy(tag, c + 2, 9);
	for (i = 0; i < 8; i++)
		up[i] = (tag[i] >= 'a' && tag[i] <= 'f') ?
		    tag[i] - 'a' + 'A' : tag[i];
	up[8] = '\0';
	if (strcmp(tag, up) == 0)
		up[0] = 'X';
	v[0] = '\0';
	while (*s != '\0') {
		if (strncmp(s, "TAG", 3) == 0) {
			strcat(v, tag);
			s += 3;
		} else if (strncmp(s, "UPPER", 5) == 0) {
			strcat(v, up);
			s += 5;
		} else if (strncmp(s, "SHORT", 5) == 0) {
			strncat(v, tag, 7);
			s += 5;
		} else {
			p = v + strlen(v);
			p[0] = *s++;
			p[1] = '\0';
		}
	}
	ck_assert_msg(cursor_parse(v, BOOT, ID, &seq) == -1,
	    "accepted \"%s\"", v);
	ck_assert_uint_eq(seq, 77);
}
END_TEST

START_TEST(null_and_long_refused)
{
	char		long_[200];
	uint64_t	seq;

	ck_assert_int_eq(cursor_parse(NULL, BOOT, ID, &seq), -1);
	memset(long_, '1', sizeof(long_) - 1);
	long_[sizeof(long_) - 1] = '\0';
	ck_assert_int_eq(cursor_parse(long_, BOOT, ID, &seq), -1);
}
END_TEST

Suite *
cursor_suite(void)
{
	Suite	*s = suite_create("cursor");
	TCase	*tc = tcase_create("cursor");

	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, format_shape);
	tcase_add_test(tc, tag_is_sha256_prefix);
	tcase_add_test(tc, other_boot_or_id_refused);
	tcase_add_loop_test(tc, malformed_refused, 0,
	    sizeof(bad) / sizeof(bad[0]));
	tcase_add_test(tc, null_and_long_refused);
	suite_add_tcase(s, tc);
	return s;
}
