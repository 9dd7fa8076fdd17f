/*
 * codec: base64 both ways and its refusals, RFC 3339 time, hex, strict
 * integers, errno names, UTF-8 checked and repaired.
 */
#include <check.h>
#include <errno.h>
#include <string.h>

#include "base/codec.h"

Suite *codec_suite(void);

static const struct {
	const char	*plain;
	const char	*b64;
} vectors[] = {		/* RFC 4648 section 10 */
	{ "",		"" },
	{ "f",		"Zg==" },
	{ "fo",		"Zm8=" },
	{ "foo",	"Zm9v" },
	{ "foob",	"Zm9vYg==" },
	{ "fooba",	"Zm9vYmE=" },
	{ "foobar",	"Zm9vYmFy" },
};

START_TEST(b64_rfc4648_vectors)
{
	struct buf	 b = { 0 };
	const char	*plain = vectors[_i].plain, *enc = vectors[_i].b64;

	ck_assert_int_eq(codec_b64_encode(&b, plain, strlen(plain)), 0);
	ck_assert_uint_eq(buf_avail(&b), strlen(enc));
	if (*enc != '\0')	/* an empty buf has no data pointer */
		ck_assert_int_eq(memcmp(buf_head(&b), enc, strlen(enc)), 0);
	buf_reset(&b);
	ck_assert_int_eq(codec_b64_decode(&b, enc, strlen(enc)), 0);
	ck_assert_uint_eq(buf_avail(&b), strlen(plain));
	if (*plain != '\0')
		ck_assert_int_eq(memcmp(buf_head(&b), plain, strlen(plain)),
		    0);
	buf_free(&b);
}
END_TEST

START_TEST(b64_round_trip_all_bytes)
{
	struct buf	 enc = { 0 }, dec = { 0 };
	unsigned char	 d[1000];
	size_t		 i, n;

	for (i = 0; i < sizeof(d); i++)
		d[i] = (unsigned char)(i * 7 + 3);
	for (n = 0; n <= sizeof(d); n += (n < 10 ? 1 : 97)) {
		buf_reset(&enc);
		buf_reset(&dec);
		ck_assert_int_eq(codec_b64_encode(&enc, d, n), 0);
		ck_assert_uint_eq(buf_avail(&enc), (n + 2) / 3 * 4);
		ck_assert_int_eq(codec_b64_decode(&dec, buf_head(&enc),
		    buf_avail(&enc)), 0);
		ck_assert_uint_eq(buf_avail(&dec), n);
		if (n > 0)
			ck_assert_int_eq(memcmp(buf_head(&dec), d, n), 0);
	}
	buf_free(&enc);
	buf_free(&dec);
}
END_TEST

START_TEST(b64_appends)
{
	struct buf	b = { 0 };

	ck_assert_int_eq(buf_addstr(&b, "x="), 0);
	ck_assert_int_eq(codec_b64_encode(&b, "hi", 2), 0);
	ck_assert_uint_eq(buf_avail(&b), 6);
	ck_assert_int_eq(memcmp(buf_head(&b), "x=aGk=", 6), 0);
	ck_assert_int_eq(codec_b64_decode(&b, "Zm9v", 4), 0);
	ck_assert_int_eq(memcmp(buf_head(&b), "x=aGk=foo", 9), 0);
	buf_free(&b);
}
END_TEST

START_TEST(b64_padding_optional)
{
	struct buf	b = { 0 };

	ck_assert_int_eq(codec_b64_decode(&b, "Zg", 2), 0);
	ck_assert_int_eq(codec_b64_decode(&b, "Zm8", 3), 0);
	ck_assert_int_eq(codec_b64_decode(&b, "Zm9vYg", 6), 0);
	ck_assert_uint_eq(buf_avail(&b), 7);
	ck_assert_int_eq(memcmp(buf_head(&b), "ffofoob", 7), 0);
	buf_free(&b);
}
END_TEST

static const char *const b64_bad[] = {
	"Z",		/* six bits are not a byte */
	"Zm9vY",
	"Zg=",		/* partial padding */
	"Zg===",
	"Z===",
	"====",
	"=",
	"==",
	"Zm9=",		/* leftover bits not zero */
	"Zh==",
	"Zh",
	"Zg==Zg==",	/* data after padding */
	"Zm=v",
	"Zm9v!",
	"Zm 9v",	/* white space nettle would skip */
	"Zm9v\n",
	"Zm9-",		/* base64url alphabet */
	"Zm9_",
	"Zm\x80v",
};

START_TEST(b64_rejects_invalid)
{
	struct buf	 b = { 0 };
	const char	*s = b64_bad[_i];

	ck_assert_int_eq(buf_addstr(&b, "keep"), 0);
	errno = 0;
	ck_assert_msg(codec_b64_decode(&b, s, strlen(s)) == -1,
	    "accepted \"%s\"", s);
	ck_assert_int_eq(errno, EINVAL);
	/* A refused input leaves the buffer as it was. */
	ck_assert_uint_eq(buf_avail(&b), 4);
	ck_assert_int_eq(memcmp(buf_head(&b), "keep", 4), 0);
	buf_free(&b);
}
END_TEST

START_TEST(b64_embedded_nul_is_invalid)
{
	struct buf	b = { 0 };

	ck_assert_int_eq(codec_b64_decode(&b, "Zm\0v", 4), -1);
	buf_free(&b);
}
END_TEST

START_TEST(time_format)
{
	char	t[TIME_MAX];

	codec_time(t, 1783468800000LL);
	ck_assert_str_eq(t, "2026-07-08T00:00:00.000Z");
	codec_time(t, 1783468800000LL + 86399999);
	ck_assert_str_eq(t, "2026-07-08T23:59:59.999Z");
	codec_time(t, 0);
	ck_assert_str_eq(t, "1970-01-01T00:00:00.000Z");
	codec_time(t, 951782400007LL);		/* a leap day */
	ck_assert_str_eq(t, "2000-02-29T00:00:00.007Z");
	codec_time(t, -1);
	ck_assert_str_eq(t, "1969-12-31T23:59:59.999Z");
	codec_time(t, INT64_MAX);
	ck_assert_str_eq(t, "9999-12-31T23:59:59.999Z");
	codec_time(t, INT64_MIN);
	ck_assert_str_eq(t, "0000-01-01T00:00:00.000Z");
}
END_TEST

START_TEST(clocks)
{
	int64_t	m1, m2, now;

	now = codec_now_ms();
	ck_assert(now > 1700000000000LL);	/* after 2023 */
	m1 = codec_mono_ms();
	m2 = codec_mono_ms();
	ck_assert(m2 >= m1);
}
END_TEST

START_TEST(hex)
{
	char	out[9];

	codec_hex(out, "\x00\x7f\xa5\xff", 4);
	ck_assert_str_eq(out, "007fa5ff");
	codec_hex(out, "", 0);
	ck_assert_str_eq(out, "");
}
END_TEST

START_TEST(parse_u64)
{
	uint64_t	v;

	ck_assert_int_eq(codec_parse_u64("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(codec_parse_u64("42", &v), 0);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_eq(codec_parse_u64("007", &v), 0);
	ck_assert_uint_eq(v, 7);
	ck_assert_int_eq(codec_parse_u64("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	v = 99;
	ck_assert_int_eq(codec_parse_u64("18446744073709551616", &v), -1);
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_int_eq(codec_parse_u64("99999999999999999999", &v), -1);
	ck_assert_int_eq(codec_parse_u64("", &v), -1);
	ck_assert_int_eq(codec_parse_u64(NULL, &v), -1);
	ck_assert_int_eq(codec_parse_u64("+1", &v), -1);
	ck_assert_int_eq(codec_parse_u64("-1", &v), -1);
	ck_assert_int_eq(codec_parse_u64(" 1", &v), -1);
	ck_assert_int_eq(codec_parse_u64("1 ", &v), -1);
	ck_assert_int_eq(codec_parse_u64("1a", &v), -1);
	ck_assert_int_eq(codec_parse_u64("0x10", &v), -1);
	ck_assert_int_eq(codec_parse_u64("1e3", &v), -1);
	ck_assert_uint_eq(v, 99);	/* untouched on failure */
}
END_TEST

START_TEST(errno_names)
{
	static const struct {
		int		 err;
		const char	*name;
	} want[] = {
		{ ENOENT, "ENOENT" }, { EACCES, "EACCES" }, { EPERM, "EPERM" },
		{ ENOTDIR, "ENOTDIR" }, { EISDIR, "EISDIR" },
		{ ENOEXEC, "ENOEXEC" }, { E2BIG, "E2BIG" },
		{ ENOMEM, "ENOMEM" }, { EAGAIN, "EAGAIN" },
		{ EINVAL, "EINVAL" }, { ELOOP, "ELOOP" },
		{ ENAMETOOLONG, "ENAMETOOLONG" }, { EMFILE, "EMFILE" },
		{ ENFILE, "ENFILE" }, { ETXTBSY, "ETXTBSY" },
		{ ENOSPC, "ENOSPC" }, { EIO, "EIO" }, { EEXIST, "EEXIST" },
		{ ESRCH, "ESRCH" }, { ECHILD, "ECHILD" }, { EBADF, "EBADF" },
		{ EFAULT, "EFAULT" }, { EBUSY, "EBUSY" },
		{ ENOTEMPTY, "ENOTEMPTY" }, { EROFS, "EROFS" },
	};
	size_t	i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_str_eq(codec_errno_name(want[i].err), want[i].name);
	ck_assert_str_eq(codec_errno_name(0), "EUNKNOWN");
	ck_assert_str_eq(codec_errno_name(-1), "EUNKNOWN");
	ck_assert_str_eq(codec_errno_name(100000), "EUNKNOWN");
}
END_TEST

#define FFFD	"\xef\xbf\xbd"

/* Well-formed or not, and what repair makes of it. */
static const struct {
	const char	*in;
	size_t		 len;
	int		 valid;
	const char	*repaired;
} utf8_vectors[] = {
	{ "", 0, 1, "" },
	{ "plain ascii", 11, 1, "plain ascii" },
	{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14, 1,
	    "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80" },
	{ "\xff\xfe", 2, 0, FFFD FFFD },
	{ "a\xff" "b", 3, 0, "a" FFFD "b" },
	{ "\xc3", 1, 0, FFFD },			/* cut at the end */
	{ "x\xe2\x82", 3, 0, "x" FFFD FFFD },		/* cut at the end */
	{ "\xe2\x82x", 3, 0, FFFD FFFD "x" },		/* cut inside */
	{ "\xc0\xaf", 2, 0, FFFD FFFD },		/* overlong '/' */
	{ "\xe0\x80\xaf", 3, 0, FFFD FFFD FFFD },	/* overlong '/' */
	{ "\xed\xa0\x80", 3, 0, FFFD FFFD FFFD },	/* a surrogate */
	{ "\xf4\x90\x80\x80", 4, 0, FFFD FFFD FFFD FFFD },	/* > U+10FFFF */
	{ "\x80", 1, 0, FFFD },			/* a lone continuation */
	{ "\xf4\x8f\xbf\xbf", 4, 1, "\xf4\x8f\xbf\xbf" },	/* U+10FFFF */
	{ "a\0b", 3, 1, "a\0b" },			/* NUL is well-formed */
};

START_TEST(utf8_valid)
{
	ck_assert_int_eq(codec_utf8_valid(utf8_vectors[_i].in,
	    utf8_vectors[_i].len), utf8_vectors[_i].valid);
}
END_TEST

START_TEST(utf8_repair)
{
	const char	*want = utf8_vectors[_i].repaired;
	size_t		 wlen = utf8_vectors[_i].valid ? utf8_vectors[_i].len :
			    strlen(want);
	struct buf	 b = { 0 };

	ck_assert_int_eq(buf_addstr(&b, ">"), 0);
	ck_assert_int_eq(codec_utf8_repair(&b, utf8_vectors[_i].in,
	    utf8_vectors[_i].len), 0);
	/* Appended after what the buffer held, and now well-formed. */
	ck_assert_uint_eq(b.len, 1 + wlen);
	ck_assert_int_eq(b.data[0], '>');
	ck_assert_int_eq(memcmp(b.data + 1, want, wlen), 0);
	ck_assert(codec_utf8_valid(b.data, b.len));
	buf_free(&b);
}
END_TEST

START_TEST(parse_size)
{
	static const struct { const char *s; int64_t v; } ok[] = {
		{ "512", 512 }, { "1K", 1024 }, { "1k", 1024 },
		{ "256M", 256LL << 20 }, { "1G", 1LL << 30 },
		{ "2T", 2LL << 40 }, { "1.5K", 1536 }, { "1KiB", 1024 },
		{ "64MB", 64LL << 20 }
	};
	static const char *const bad[] = {
		"", "0", "-1", "M", "12X", "1KK", " 1", "1e30", "0.1"
	};
	int64_t	v;
	size_t	i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(codec_parse_size(ok[i].s, &v) == 0, "%s",
		    ok[i].s);
		ck_assert_int_eq(v, ok[i].v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(codec_parse_size(bad[i], &v) == -1, "'%s'",
		    bad[i]);
		ck_assert_int_eq(errno, EINVAL);
	}
}
END_TEST

Suite *
codec_suite(void)
{
	Suite	*s = suite_create("codec");
	TCase	*tc;

	tc = tcase_create("base64");
	tcase_add_loop_test(tc, b64_rfc4648_vectors, 0,
	    sizeof(vectors) / sizeof(vectors[0]));
	tcase_add_test(tc, b64_round_trip_all_bytes);
	tcase_add_test(tc, b64_appends);
	tcase_add_test(tc, b64_padding_optional);
	tcase_add_loop_test(tc, b64_rejects_invalid, 0,
	    sizeof(b64_bad) / sizeof(b64_bad[0]));
	tcase_add_test(tc, b64_embedded_nul_is_invalid);
	suite_add_tcase(s, tc);

	tc = tcase_create("time");
	tcase_add_test(tc, time_format);
	tcase_add_test(tc, clocks);
	suite_add_tcase(s, tc);

	tc = tcase_create("scalars");
	tcase_add_test(tc, hex);
	tcase_add_test(tc, parse_u64);
	tcase_add_test(tc, parse_size);
	tcase_add_test(tc, errno_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("utf8");
	tcase_add_loop_test(tc, utf8_valid, 0,
	    sizeof(utf8_vectors) / sizeof(utf8_vectors[0]));
	tcase_add_loop_test(tc, utf8_repair, 0,
	    sizeof(utf8_vectors) / sizeof(utf8_vectors[0]));
	suite_add_tcase(s, tc);
	return s;
}
