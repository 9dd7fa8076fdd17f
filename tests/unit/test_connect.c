/*
 * connect: envelopes parsed whole and in pieces, over-long and
 * compressed ones refused, a stream's request body judged, frames
 * written byte for byte, the code table, field names in both
 * spellings, the timeout header.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/envd/connect.h"

Suite *connect_suite(void);

/* An envelope of flags and s, into out: its size. */
static size_t
mkenv(unsigned char *out, unsigned int flags, const char *s)
{
	size_t	n = strlen(s);

	out[0] = (unsigned char)flags;
	out[1] = (unsigned char)(n >> 24);
	out[2] = (unsigned char)(n >> 16);
	out[3] = (unsigned char)(n >> 8);
	out[4] = (unsigned char)n;
	memcpy(out + 5, s, n);
	return n + 5;
}

START_TEST(env_whole)
{
	unsigned char		d[64];
	struct connect_env	e;
	size_t			n = mkenv(d, 0, "{\"a\":1}");

	ck_assert_int_eq(connect_env_parse(d, n, 100, &e), 1);
	ck_assert_uint_eq(e.flags, 0);
	ck_assert_uint_eq(e.len, 7);
	ck_assert_uint_eq(e.size, n);
	ck_assert_int_eq(memcmp(e.data, "{\"a\":1}", 7), 0);
}
END_TEST

/* Every prefix of an envelope asks for more; the whole one parses. */
START_TEST(env_split)
{
	unsigned char		d[64];
	struct connect_env	e;
	size_t			i, n = mkenv(d, 0, "{\"cmd\":\"x\"}");

	for (i = 0; i < n; i++)
		ck_assert_int_eq(connect_env_parse(d, i, 100, &e), 0);
	ck_assert_int_eq(connect_env_parse(d, n, 100, &e), 1);
}
END_TEST

/* Two envelopes back to back: the first, then the second after it. */
START_TEST(env_two)
{
	unsigned char		d[64];
	struct connect_env	e;
	size_t			n;

	n = mkenv(d, 0, "{}");
	n += mkenv(d + n, CONNECT_FLAG_END, "{\"x\":2}");
	ck_assert_int_eq(connect_env_parse(d, n, 100, &e), 1);
	ck_assert_uint_eq(e.size, 7);
	ck_assert_int_eq(connect_env_parse(d + e.size, n - e.size, 100, &e), 1);
	ck_assert_uint_eq(e.flags, CONNECT_FLAG_END);
	ck_assert_uint_eq(e.len, 7);
}
END_TEST

/* The length is judged from the header alone, before any payload. */
START_TEST(env_too_long)
{
	unsigned char		d[5] = { 0, 0xff, 0xff, 0xff, 0xff };
	struct connect_env	e;

	errno = 0;
	ck_assert_int_eq(connect_env_parse(d, 5, CONNECT_MSG_MAX, &e), -1);
	ck_assert_int_eq(errno, EMSGSIZE);
	d[1] = 0;
	d[2] = 0;
	d[3] = 0;
	d[4] = 11;
	ck_assert_int_eq(connect_env_parse(d, 5, 10, &e), -1);
	ck_assert_int_eq(errno, EMSGSIZE);
}
END_TEST

START_TEST(env_compressed_and_unknown_flags)
{
	unsigned char		d[64];
	struct connect_env	e;
	size_t			n;

	n = mkenv(d, CONNECT_FLAG_COMPRESSED, "{}");
	ck_assert_int_eq(connect_env_parse(d, n, 100, &e), -1);
	ck_assert_int_eq(errno, ENOTSUP);
	n = mkenv(d, 0x80, "{}");
	ck_assert_int_eq(connect_env_parse(d, n, 100, &e), -1);
	ck_assert_int_eq(errno, EPROTO);
}
END_TEST

START_TEST(request_ok)
{
	unsigned char		 d[64];
	struct connect_env	 e;
	const char		*code = NULL;
	char			 msg[128];
	size_t			 n = mkenv(d, 0, " {\"tag\":\"a\"} ");

	ck_assert_int_eq(connect_request(d, n, &e, &code, msg, sizeof(msg)), 0);
	ck_assert_uint_eq(e.len, n - 5);
	ck_assert_ptr_eq(e.data, (const char *)d + 5);
}
END_TEST

/* Each bad body and the code it ends the stream with. */
START_TEST(request_refused)
{
	static const struct {
		unsigned int	 flags;
		const char	*json;
		size_t		 cut;		/* bytes left off the end */
		size_t		 extra;		/* junk bytes after it */
		const char	*code;
	} cases[] = {
		{ 0, "{}", 1, 0, "invalid_argument" },
		{ 0, "{}", 4, 0, "invalid_argument" },
		{ 0, "{}", 0, 3, "invalid_argument" },
		{ 0, "{}", 0, 7, "invalid_argument" },
		{ CONNECT_FLAG_END, "{}", 0, 0, "invalid_argument" },
		{ 0x40, "{}", 0, 0, "invalid_argument" },
		{ CONNECT_FLAG_COMPRESSED, "{}", 0, 0, "unimplemented" },
	};
	unsigned char		 d[64];
	struct connect_env	 e;
	const char		*code;
	char			 msg[128];
	size_t			 i, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		n = mkenv(d, cases[i].flags, cases[i].json) - cases[i].cut;
		memset(d + n, 0, cases[i].extra);
		n += cases[i].extra;
		code = NULL;
		msg[0] = '\0';
		ck_assert_int_eq(connect_request(d, n, &e, &code, msg,
		    sizeof(msg)), -1);
		ck_assert_str_eq(code, cases[i].code);
		ck_assert_int_gt(strlen(msg), 0);
	}
	code = NULL;
	ck_assert_int_eq(connect_request("", 0, &e, &code, msg, sizeof(msg)),
	    -1);
	ck_assert_str_eq(code, "invalid_argument");
	memcpy(d, "\0\x10\0\0\0", 5);	/* 256 MiB: over the limit */
	ck_assert_int_eq(connect_request(d, 5, &e, &code, msg, sizeof(msg)),
	    -1);
	ck_assert_str_eq(code, "resource_exhausted");
}
END_TEST

START_TEST(frames_written)
{
	struct buf	b = { 0 };

	ck_assert_int_eq(connect_env_add(&b, "{\"x\":1}", 7), 0);
	ck_assert_uint_eq(b.len, 12);
	ck_assert_int_eq(memcmp(b.data, "\0\0\0\0\7{\"x\":1}", 12), 0);
	buf_reset(&b);
	ck_assert_int_eq(connect_end_add(&b, NULL, NULL), 0);
	ck_assert_uint_eq(b.len, 7);
	ck_assert_int_eq(memcmp(b.data, "\2\0\0\0\2{}", 7), 0);
	buf_reset(&b);
	ck_assert_int_eq(connect_end_add(&b, "not_found", "no \"p\""), 0);
	ck_assert_uint_eq((unsigned char)b.data[0], CONNECT_FLAG_END);
	ck_assert_uint_eq(b.len - 5, (size_t)b.data[4]);
	ck_assert_int_eq(memcmp(b.data + 5, "{\"error\":{\"code\":\"not_found\","
	    "\"message\":\"no \\\"p\\\"\"}}", b.len - 5), 0);
	buf_free(&b);
}
END_TEST

START_TEST(status_table)
{
	static const struct {
		const char	*code;
		int		 status;
	} want[] = {
		{ "not_found", 404 }, { "already_exists", 409 },
		{ "invalid_argument", 400 }, { "failed_precondition", 400 },
		{ "permission_denied", 403 }, { "resource_exhausted", 429 },
		{ "unimplemented", 501 }, { "unavailable", 503 },
		{ "deadline_exceeded", 504 }, { "internal", 500 },
		{ "unauthenticated", 401 }, { "canceled", 499 },
	};
	size_t	i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_int_eq(connect_http_status(want[i].code),
		    want[i].status);
		ck_assert(connect_code_valid(want[i].code));
	}
	ck_assert_int_eq(connect_http_status("bogus"), 500);
	ck_assert(!connect_code_valid("bogus"));
}
END_TEST

START_TEST(error_json)
{
	cJSON	*j = connect_error_json("not_found", "gone");
	char	*s = cJSON_PrintUnformatted(j);

	ck_assert_str_eq(s, "{\"code\":\"not_found\",\"message\":\"gone\"}");
	free(s);
	cJSON_Delete(j);
	j = connect_error_json("unimplemented", NULL);
	s = cJSON_PrintUnformatted(j);
	ck_assert_str_eq(s, "{\"code\":\"unimplemented\"}");
	free(s);
	cJSON_Delete(j);
}
END_TEST

START_TEST(field_spellings)
{
	cJSON	*j = cJSON_Parse("{\"exit_code\":3,\"pid\":7,\"envVars\":1,"
	    "\"defaultUser\":null}");

	ck_assert_int_eq(connect_field(j, "exitCode")->valueint, 3);
	ck_assert_int_eq(connect_field(j, "pid")->valueint, 7);
	ck_assert_int_eq(connect_field(j, "envVars")->valueint, 1);
	ck_assert_ptr_null(connect_field(j, "defaultUser"));
	ck_assert_ptr_null(connect_field(j, "tag"));
	ck_assert_ptr_null(connect_field(j, "aVeryLongFieldNameThatHasFar"
	    "TooManyCapitalLettersInItToFitInOurBufferAtAllXYZ"));
	cJSON_Delete(j);
}
END_TEST

START_TEST(timeout_header)
{
	uint64_t	ms = 0;

	ck_assert_int_eq(connect_timeout_ms(NULL, &ms), 0);
	ck_assert_int_eq(connect_timeout_ms("60000", &ms), 1);
	ck_assert_uint_eq(ms, 60000);
	ck_assert_int_eq(connect_timeout_ms("9999999999", &ms), 1);
	ck_assert_int_eq(connect_timeout_ms("12345678901", &ms), -1);
	ck_assert_int_eq(connect_timeout_ms("", &ms), -1);
	ck_assert_int_eq(connect_timeout_ms("-1", &ms), -1);
	ck_assert_int_eq(connect_timeout_ms("10s", &ms), -1);
}
END_TEST

Suite *
connect_suite(void)
{
	Suite	*s = suite_create("connect");
	TCase	*tc = tcase_create("envelopes");

	tcase_add_test(tc, env_whole);
	tcase_add_test(tc, env_split);
	tcase_add_test(tc, env_two);
	tcase_add_test(tc, env_too_long);
	tcase_add_test(tc, env_compressed_and_unknown_flags);
	tcase_add_test(tc, request_ok);
	tcase_add_test(tc, request_refused);
	tcase_add_test(tc, frames_written);
	suite_add_tcase(s, tc);
	tc = tcase_create("names");
	tcase_add_test(tc, status_table);
	tcase_add_test(tc, error_json);
	tcase_add_test(tc, field_spellings);
	tcase_add_test(tc, timeout_header);
	suite_add_tcase(s, tc);
	return s;
}
