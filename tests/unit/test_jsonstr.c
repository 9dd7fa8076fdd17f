/*
 * jsonstr: system bytes into JSON always print as valid UTF-8, the exact
 * bytes in "<key>Bytes" (base64) only when they were not, and the common
 * case adds nothing.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/codec.h"
#include "base/jsonstr.h"

Suite *jsonstr_suite(void);

/* o printed, which must be valid UTF-8; the caller frees it. */
static char *
printed(const cJSON *o)
{
	char	*s = cJSON_PrintUnformatted(o);

	ck_assert_ptr_nonnull(s);
	ck_assert_msg(codec_utf8_valid(s, strlen(s)), "not UTF-8: %s", s);
	return s;
}

/* The base64 string under key in o, decoded, equals want. */
static void
assert_b64(const cJSON *o, const char *key, const char *want)
{
	const cJSON	*f = cJSON_GetObjectItemCaseSensitive(o, key);
	struct buf	 b = { 0 };

	ck_assert_msg(cJSON_IsString(f), "no string %s", key);
	ck_assert_int_eq(codec_b64_decode(&b, f->valuestring,
	    strlen(f->valuestring)), 0);
	ck_assert_uint_eq(buf_avail(&b), strlen(want));
	ck_assert_int_eq(memcmp(buf_head(&b), want, strlen(want)), 0);
	buf_free(&b);
}

START_TEST(valid_is_as_given)
{
	cJSON	*o = cJSON_CreateObject();
	char	*s;

	ck_assert_ptr_nonnull(jsonstr_add(o, "a", "plain"));
	ck_assert_int_eq(jsonstr_add_bytes(o, "name",
	    "caf\xc3\xa9 \xf0\x9f\x98\x80"), 0);
	ck_assert_int_eq(jsonstr_add_bytes(o, "empty", ""), 0);
	s = printed(o);
	ck_assert_str_eq(s, "{\"a\":\"plain\",\"name\":\"caf\xc3\xa9 "
	    "\xf0\x9f\x98\x80\",\"empty\":\"\"}");
	free(s);
	cJSON_Delete(o);
}
END_TEST

START_TEST(ill_formed_is_replaced)
{
	cJSON	*o = cJSON_CreateObject();
	char	*s;

	/* A lone continuation, a cut sequence, an overlong, a surrogate. */
	ck_assert_ptr_nonnull(jsonstr_add(o, "a", "x\x80y\xe2\x82z\xc0\xaf"
	    "\xed\xa0\x80"));
	s = printed(o);
	ck_assert_str_eq(s, "{\"a\":\"x\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbd"
	    "z\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"}");
	free(s);
	cJSON_Delete(o);
}
END_TEST

START_TEST(text_never_adds_bytes)
{
	cJSON	*o = cJSON_CreateObject();

	ck_assert_ptr_nonnull(jsonstr_add(o, "owner", "\xff"));
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(o, "ownerBytes"));
	ck_assert_int_eq(cJSON_GetArraySize(o), 1);
	cJSON_Delete(o);
}
END_TEST

START_TEST(bytes_only_when_ill_formed)
{
	static const char	 bad[] = "bad\xff\xfeutf8";
	cJSON			*o = cJSON_CreateObject();
	char			*s;

	ck_assert_int_eq(jsonstr_add_bytes(o, "name", "good"), 0);
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(o, "nameBytes"));
	ck_assert_int_eq(jsonstr_add_bytes(o, "path", bad), 0);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "path")->
	    valuestring, "bad\xef\xbf\xbd\xef\xbf\xbdutf8");
	assert_b64(o, "pathBytes", bad);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "pathBytes")->
	    valuestring, "YmFk//51dGY4");
	s = printed(o);
	free(s);
	cJSON_Delete(o);
}
END_TEST

START_TEST(every_byte_round_trips)
{
	char	 s[2];
	cJSON	*o;
	int	 c;

	for (c = 1; c < 256; c++) {
		s[0] = (char)c;
		s[1] = '\0';
		o = cJSON_CreateObject();
		ck_assert_int_eq(jsonstr_add_bytes(o, "n", s), 0);
		free(printed(o));
		if (c < 0x80)
			ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(o,
			    "nBytes"));
		else
			assert_b64(o, "nBytes", s);
		cJSON_Delete(o);
	}
}
END_TEST

START_TEST(strv_all_valid)
{
	char *const	 v[] = { "sh", "-c", "echo \xc3\xa9", NULL };
	cJSON		*o = cJSON_CreateObject();
	char		*s;

	ck_assert_int_eq(jsonstr_add_strv(o, "argv", v), 0);
	s = printed(o);
	ck_assert_str_eq(s, "{\"argv\":[\"sh\",\"-c\",\"echo \xc3\xa9\"]}");
	free(s);
	cJSON_Delete(o);
}
END_TEST

START_TEST(strv_one_ill_formed)
{
	char *const	 v[] = { "ls", "bad\xff", "", NULL };
	cJSON		*o = cJSON_CreateObject(), *b;
	char		*s;

	ck_assert_int_eq(jsonstr_add_strv(o, "argv", v), 0);
	s = printed(o);
	ck_assert_str_eq(s, "{\"argv\":[\"ls\",\"bad\xef\xbf\xbd\",\"\"],"
	    "\"argvBytes\":[\"bHM=\",\"YmFk/w==\",\"\"]}");
	free(s);
	b = cJSON_GetObjectItemCaseSensitive(o, "argvBytes");
	ck_assert_int_eq(cJSON_GetArraySize(b), 3);
	cJSON_Delete(o);
}
END_TEST

START_TEST(strv_empty)
{
	char *const	 v[] = { NULL };
	cJSON		*o = cJSON_CreateObject();
	char		*s;

	ck_assert_int_eq(jsonstr_add_strv(o, "argv", v), 0);
	s = printed(o);
	ck_assert_str_eq(s, "{\"argv\":[]}");
	free(s);
	cJSON_Delete(o);
}
END_TEST

START_TEST(key_too_long_is_refused)
{
	char	 key[100];
	cJSON	*o = cJSON_CreateObject();

	memset(key, 'k', sizeof(key) - 1);
	key[sizeof(key) - 1] = '\0';
	ck_assert_int_eq(jsonstr_add_bytes(o, key, "ok"), 0);
	ck_assert_int_eq(jsonstr_add_bytes(o, key, "\xff"), -1);
	cJSON_Delete(o);
}
END_TEST

Suite *
jsonstr_suite(void)
{
	Suite	*s = suite_create("jsonstr");
	TCase	*tc;

	tc = tcase_create("text");
	tcase_add_test(tc, valid_is_as_given);
	tcase_add_test(tc, ill_formed_is_replaced);
	tcase_add_test(tc, text_never_adds_bytes);
	suite_add_tcase(s, tc);

	tc = tcase_create("bytes");
	tcase_add_test(tc, bytes_only_when_ill_formed);
	tcase_add_test(tc, every_byte_round_trips);
	tcase_add_test(tc, key_too_long_is_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("strv");
	tcase_add_test(tc, strv_all_valid);
	tcase_add_test(tc, strv_one_ill_formed);
	tcase_add_test(tc, strv_empty);
	suite_add_tcase(s, tc);
	return s;
}
