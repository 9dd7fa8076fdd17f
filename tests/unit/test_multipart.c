/*
 * multipart: the boundary is taken from a Content-Type only when RFC
 * 2046 allows it; a body gives the same parts and bytes however it is
 * cut into pieces (every split point, and byte by byte), content that
 * looks like a delimiter but is not one stays content, the preamble and
 * epilogue are ignored, filenames are decoded as browsers and Node
 * encode them; malformed bodies, oversized headers, too many parts and
 * a body cut short are refused.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tunables.h"
#include "net/multipart.h"
#include "testutil.h"

Suite *multipart_suite(void);

/* What the callbacks saw: "[name|filename]content" per part, "." ended. */
struct seen {
	char	 out[64 * 1024];
	size_t	 n;
	int	 fail_at;	/* the data call that fails; 0: none */
	int	 calls;
	int	 pieces;	/* data calls (cb_count) */
};

static int	cb_begin(void *, const struct multipart_part *);
static int	cb_data(void *, const char *, size_t);
static int	cb_end(void *);
static int	parse(const char *, size_t, size_t, struct seen *);

static const struct multipart_cb cbs = { cb_begin, cb_data, cb_end };

static void
seen_add(struct seen *s, const char *d, size_t n)
{
	ck_assert_uint_lt(s->n + n, sizeof(s->out));
	memcpy(s->out + s->n, d, n);
	s->n += n;
	s->out[s->n] = '\0';
}

static int
cb_begin(void *arg, const struct multipart_part *p)
{
	struct seen	*s = arg;
	char		 b[PATH_MAX + 300];

	snprintf(b, sizeof(b), "[%s|%s%s]", p->name, p->has_filename ? "" :
	    "-", p->filename);
	seen_add(s, b, strlen(b));
	return 0;
}

static int
cb_data(void *arg, const char *d, size_t n)
{
	struct seen	*s = arg;

	ck_assert_uint_gt(n, 0);
	if (++s->calls == s->fail_at) {
		errno = ENOSPC;
		return -1;
	}
	seen_add(s, d, n);
	return 0;
}

static int
cb_end(void *arg)
{
	seen_add(arg, ".", 1);
	return 0;
}

/* body in pieces of at most step bytes (0: two pieces, cut at step2). */
static int
parse(const char *body, size_t len, size_t step, struct seen *s)
{
	struct multipart	mp;
	size_t			i, k;

	ck_assert_int_eq(multipart_init(&mp, "XyZ", &cbs, s), 0);
	for (i = 0; i < len; i += k) {
		k = len - i < step ? len - i : step;
		if (multipart_feed(&mp, body + i, k) == -1)
			return -1;
	}
	return multipart_finish(&mp);
}

static const char body1[] =
    "preamble\r\n"
    "--XyZ\r\n"
    "Content-Disposition: form-data; name=\"file\"; filename=\"/tmp/a b\"\r\n"
    "Content-Type: application/octet-stream\r\n"
    "\r\n"
    "line1\r\n-XyZnot\r\n--XyQ\r\r\n--X\r\n x--XyZ"
    "\r\n--XyZ  \r\n"
    "Content-Disposition: form-data; name=other\r\n"
    "\r\n"
    "\r\n--XyZ\r\n"
    "content-disposition: FORM-DATA; filename=\"q%22x%0A\\\"y\"; name=\"file\"\r\n"
    "\r\n"
    "\r\r\n"
    "\r\n--XyZ--\r\nepilogue --XyZ junk";

static const char want1[] =
    "[file|/tmp/a b]line1\r\n-XyZnot\r\n--XyQ\r\r\n--X\r\n x--XyZ."
    "[other|-]."
    "[file|q\"x\n\"y]\r\r\n.";

START_TEST(every_split_gives_the_same)
{
	struct seen	*s = calloc(1, sizeof(*s));
	struct multipart mp;
	size_t		 len = sizeof(body1) - 1, cut;

	ck_assert_int_eq(parse(body1, len, len, s), 0);
	ck_assert_str_eq(s->out, want1);
	memset(s, 0, sizeof(*s));
	ck_assert_int_eq(parse(body1, len, 1, s), 0);
	ck_assert_str_eq(s->out, want1);
	for (cut = 0; cut <= len; cut++) {
		memset(s, 0, sizeof(*s));
		ck_assert_int_eq(multipart_init(&mp, "XyZ", &cbs, s), 0);
		ck_assert_int_eq(multipart_feed(&mp, body1, cut), 0);
		ck_assert_int_eq(multipart_feed(&mp, body1 + cut, len - cut), 0);
		ck_assert_int_eq(multipart_finish(&mp), 0);
		ck_assert_msg(strcmp(s->out, want1) == 0, "cut at %zu: %s",
		    cut, s->out);
	}
	free(s);
}
END_TEST

/* Cut at every point into three: 2 and 3 byte pieces too. */
START_TEST(small_pieces)
{
	struct seen	*s = calloc(1, sizeof(*s));
	size_t		 step;

	for (step = 2; step < 12; step++) {
		memset(s, 0, sizeof(*s));
		ck_assert_int_eq(parse(body1, sizeof(body1) - 1, step, s), 0);
		ck_assert_str_eq(s->out, want1);
	}
	free(s);
}
END_TEST

START_TEST(boundary_from_content_type)
{
	char	b[MULTIPART_BOUNDARY_MAX + 1], big[200];

	ck_assert_int_eq(multipart_boundary("multipart/form-data; "
	    "boundary=----formdata-undici-0123", b, sizeof(b)), 0);
	ck_assert_str_eq(b, "----formdata-undici-0123");
	ck_assert_int_eq(multipart_boundary("Multipart/Form-Data;charset=x;"
	    "boundary=\"a b:c\"", b, sizeof(b)), 0);
	ck_assert_str_eq(b, "a b:c");
	ck_assert_int_eq(multipart_boundary("multipart/mixed; boundary=x", b,
	    sizeof(b)), -1);
	ck_assert_int_eq(multipart_boundary("multipart/form-data", b,
	    sizeof(b)), -1);
	ck_assert_int_eq(multipart_boundary("multipart/form-data; boundary=",
	    b, sizeof(b)), -1);
	ck_assert_int_eq(multipart_boundary("multipart/form-data; "
	    "boundary=\"a\rb\"", b, sizeof(b)), -1);
	memset(big, 'a', sizeof(big));
	snprintf(big, sizeof(big), "multipart/form-data; boundary=%071d", 0);
	ck_assert_int_eq(multipart_boundary(big, b, sizeof(b)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(multipart_boundary(NULL, b, sizeof(b)), -1);
}
END_TEST

START_TEST(filename_star_wins)
{
	static const char body[] = "--XyZ\r\nContent-Disposition: form-data; "
	    "name=file; filename=\"plain\"; filename*=UTF-8''%2Fh%C3%A9\r\n\r\n"
	    "x\r\n--XyZ--";
	struct seen	s = { .n = 0 };

	ck_assert_int_eq(parse(body, sizeof(body) - 1, 1000, &s), 0);
	ck_assert_str_eq(s.out, "[file|/h\xc3\xa9]x.");
}
END_TEST

START_TEST(malformed_refused)
{
	static const char *const bad[] = {
		/* junk after a delimiter */
		"--XyZ\r\n\r\nx\r\n--XyZjunk",
		/* a bare LF in the headers */
		"--XyZ\r\nContent-Disposition: form-data\n\r\n",
		/* a header line without a colon */
		"--XyZ\r\nnonsense\r\n\r\nx\r\n--XyZ--",
		/* not form-data */
		"--XyZ\r\nContent-Disposition: attachment\r\n\r\n",
		/* an unterminated quote */
		"--XyZ\r\nContent-Disposition: form-data; name=\"x\r\n\r\n",
		/* a NUL in a filename */
		"--XyZ\r\nContent-Disposition: form-data; filename=\"a%00\"\r\n\r\n",
		/* -X after a delimiter */
		"--XyZ-X",
	};
	struct seen	s;
	size_t		i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		memset(&s, 0, sizeof(s));
		ck_assert_msg(parse(bad[i], strlen(bad[i]), 1000, &s) == -1,
		    "accepted %zu", i);
	}
	/* Cut short: no closing delimiter. */
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(parse(body1, 60, 1000, &s), -1);
	ck_assert_int_eq(errno, EINVAL);
	/* Nothing at all. */
	ck_assert_int_eq(parse("", 0, 1, &s), -1);
}
END_TEST

START_TEST(limits_refused)
{
	struct multipart	 mp;
	struct seen		*s = calloc(1, sizeof(*s));
	char			*big;
	size_t			 n, i;
	int			 rc = 0;

	/* Headers longer than MULTIPART_HEAD_MAX. */
	big = malloc(MULTIPART_HEAD_MAX + 100);
	n = (size_t)snprintf(big, 64, "--XyZ\r\nX-Long: ");
	memset(big + n, 'a', MULTIPART_HEAD_MAX);
	ck_assert_int_eq(parse(big, n + MULTIPART_HEAD_MAX, 4096, s), -1);
	ck_assert_int_eq(errno, EMSGSIZE);
	free(big);
	/* More parts than MULTIPART_PARTS_MAX. */
	ck_assert_int_eq(multipart_init(&mp, "XyZ", &cbs, s), 0);
	ck_assert_int_eq(multipart_feed(&mp, "--XyZ", 5), 0);
	for (i = 0; i <= MULTIPART_PARTS_MAX && rc == 0; i++) {
		s->n = 0;
		rc = multipart_feed(&mp, "\r\n\r\n\r\n--XyZ", 11);
	}
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(errno, E2BIG);
	ck_assert_uint_eq(i, MULTIPART_PARTS_MAX + 1);
	/* Nothing more once refused. */
	ck_assert_int_eq(multipart_finish(&mp), -1);
	free(s);
}
END_TEST

/* A callback's failure stops the parse with its errno. */
START_TEST(callback_failure_stops)
{
	struct seen	s;

	memset(&s, 0, sizeof(s));
	s.fail_at = 1;
	ck_assert_int_eq(parse(body1, sizeof(body1) - 1, 1000, &s), -1);
	ck_assert_int_eq(errno, ENOSPC);
}
END_TEST

/* Counts the content bytes in s->calls, keeps none. */
static int
cb_count(void *arg, const char *d, size_t n)
{
	(void)d;
	((struct seen *)arg)->calls += (int)n;
	((struct seen *)arg)->pieces++;
	return 0;
}

/*
 * Memory is the struct's whatever the size: a 64 MiB part in pieces,
 * handed on in runs however many CRs it holds.
 */
START_TEST(large_part_streams)
{
	static const struct multipart_cb	count = { cb_begin, cb_count,
						    cb_end };
	static char				chunk[65536];
	struct multipart			mp;
	struct seen				s;
	size_t					i;

	memset(&s, 0, sizeof(s));
	/* Near-delimiters everywhere: CRs and dashes. */
	memset(chunk, '\r', sizeof(chunk));
	for (i = 0; i < sizeof(chunk); i += 7)
		chunk[i] = '-';
	ck_assert_int_eq(multipart_init(&mp, "XyZ", &count, &s), 0);
	ck_assert_int_eq(multipart_feed(&mp, "--XyZ\r\n\r\n", 9), 0);
	for (i = 0; i < 1024; i++)
		ck_assert_int_eq(multipart_feed(&mp, chunk, sizeof(chunk)), 0);
	ck_assert_int_eq(multipart_feed(&mp, "\r\n--XyZ--", 9), 0);
	ck_assert_int_eq(multipart_finish(&mp), 0);
	ck_assert_str_eq(s.out, "[|-].");
	ck_assert_int_eq(s.calls, 1024 * (int)sizeof(chunk));
	/* In runs, not a call per CR: a write per call follows. */
	ck_assert_int_le(s.pieces, 2 * 1024 + 2);
}
END_TEST

Suite *
multipart_suite(void)
{
	Suite	*s = suite_create("multipart");
	TCase	*tc;

	tc = tcase_create("parse");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, every_split_gives_the_same);
	tcase_add_test(tc, small_pieces);
	tcase_add_test(tc, boundary_from_content_type);
	tcase_add_test(tc, filename_star_wins);
	tcase_add_test(tc, malformed_refused);
	tcase_add_test(tc, limits_refused);
	tcase_add_test(tc, callback_failure_stops);
	tcase_add_test(tc, large_part_streams);
	suite_add_tcase(s, tc);
	return s;
}
