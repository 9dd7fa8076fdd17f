/*
 * chunked: the strict check of chunked framing, whole and one byte at a
 * time: sound bodies end where they end, and each leniency of a
 * non-strict http_parser (no CRLF after the data, a bare LF, control
 * bytes in an extension or a trailer) stops the check at its byte.
 */
#include <check.h>
#include <string.h>

#include "net/chunked.h"
#include "testutil.h"

Suite *chunked_suite(void);

/* Scan s whole, then byte by byte: the same count either way. */
static size_t
scan(const char *s, bool head_lf, int *done, int *bad)
{
	struct chunked	c;
	size_t		n = strlen(s), k, i, m = 0;

	chunked_init(&c, head_lf);
	k = chunked_scan(&c, s, n);
	*done = chunked_done(&c);
	*bad = chunked_bad(&c);
	chunked_init(&c, head_lf);
	for (i = 0; i < n; i++) {
		m += chunked_scan(&c, s + i, 1);
		if (chunked_done(&c) || chunked_bad(&c))
			break;
	}
	ck_assert_uint_eq(m, k);
	ck_assert_int_eq(chunked_done(&c), *done);
	ck_assert_int_eq(chunked_bad(&c), *bad);
	return k;
}

START_TEST(sound_bodies)
{
	static const char *const ok[] = {
		"0\r\n\r\n",
		"5\r\nhello\r\n0\r\n\r\n",
		"5;name=\"v a\"\r\nhello\r\nA\r\n0123456789\r\n0\r\n\r\n",
		"3 ;x\r\nabc\r\n0\r\nX-T: 1\r\nY: \t2\r\n\r\n",
		"1\r\n\r\r\n0\r\n\r\n",
	};
	size_t	i;
	int	done, bad;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_uint_eq(scan(ok[i], false, &done, &bad),
		    strlen(ok[i]));
		ck_assert_msg(done && !bad, "%s", ok[i]);
	}
	/* What follows the body is not scanned. */
	ck_assert_uint_eq(scan("0\r\n\r\nGET / HTTP/1.1\r\n", false, &done,
	    &bad), 5);
	ck_assert(done);
	ck_assert_uint_eq(scan("\n2\r\nab\r\n0\r\n\r\n", true, &done, &bad),
	    13);
	ck_assert(done);
	/* Not over yet: all of it, neither done nor bad. */
	ck_assert_uint_eq(scan("5\r\nhel", false, &done, &bad), 6);
	ck_assert(!done && !bad);
}
END_TEST

START_TEST(lenient_framing_refused)
{
	static const struct {
		const char	*s;
		size_t		 at;	/* the first byte that breaks it */
	} t[] = {
		{ "5\r\nhelloXX0\r\n\r\n", 8 },		/* no CRLF after data */
		{ "5\r\nhello\rX0\r\n\r\n", 9 },
		{ "5\r\nhello\n0\r\n\r\n", 8 },		/* bare LF */
		{ "5\nhello\r\n0\r\n\r\n", 1 },
		{ "5\rXhello\r\n0\r\n\r\n", 2 },
		{ "5;\x01\r\nhello\r\n0\r\n\r\n", 2 },	/* control byte */
		{ "5;a\nb\r\nhello\r\n0\r\n\r\n", 3 },
		{ "5;a\x7f\r\nhello\r\n0\r\n\r\n", 3 },
		{ "0\r\nX: \x01\r\n\r\n", 6 },		/* in a trailer */
		{ "0\r\nX: 1\n\r\n", 7 },
		{ "0\r\n\rX", 4 },
		{ "g\r\n", 0 },
		{ "5x\r\n", 1 },
		{ "fffffffffffffffff\r\n", 16 },		/* too large */
	};
	size_t	i;
	int	done, bad;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		ck_assert_msg(scan(t[i].s, false, &done, &bad) == t[i].at,
		    "case %zu", i);
		ck_assert_msg(bad && !done, "case %zu", i);
	}
	/* The head's own last byte must be its LF. */
	ck_assert_uint_eq(scan("*0\r\n\r\n", true, &done, &bad), 0);
	ck_assert(bad);
}
END_TEST

Suite *
chunked_suite(void)
{
	Suite	*s = suite_create("chunked");
	TCase	*tc;

	tc = tcase_create("framing");
	tcase_add_test(tc, sound_bodies);
	tcase_add_test(tc, lenient_framing_refused);
	suite_add_tcase(s, tc);
	return s;
}
