/*
 * shimhead: the shim's check and rewrite of a request head, without a
 * socket: token lines stripped and judged (folded, repeated, other
 * schemes), the open health route, heads the agent would read otherwise
 * than the scan, versions, and where a body ends.
 */
#include <check.h>
#include <string.h>

#include "base/buf.h"
#include "net/shimhead.h"
#include "testutil.h"

Suite *shimhead_suite(void);

#define TOKEN	"s3cret"

/* Check head (a C string) against TOKEN; what went up, NUL-terminated. */
static enum shimhead_verdict
check(struct shimhead *h, const char *head, struct buf *up)
{
	enum shimhead_verdict	v;

	buf_reset(up);
	ck_assert_ptr_nonnull(buf_reserve(up, strlen(head) + 1));
	v = shimhead_check(h, TOKEN, strlen(TOKEN), head, strlen(head), up);
	ck_assert_int_eq(buf_add(up, "", 1), 0);
	return v;
}

START_TEST(bearer_stripped)
{
	struct shimhead	h;
	struct buf	up = { 0 };

	ck_assert_int_eq(check(&h, "GET /v1/x HTTP/1.1\r\nHost: a\r\n"
	    "Authorization: Bearer " TOKEN "\r\nX: y\r\n\r\n", &up),
	    SHIMHEAD_FORWARD);
	ck_assert_str_eq(buf_head(&up), "GET /v1/x HTTP/1.1\r\nHost: a\r\n"
	    "X: y\r\n\r\n");
	ck_assert(h.done);
	ck_assert(!h.upgrade);
	ck_assert_int_eq(check(&h, "GET / HTTP/1.1\r\nx-access-token:  "
	    TOKEN " \r\nAuthorization: Basic dTpw\r\n\r\n", &up),
	    SHIMHEAD_FORWARD);
	ck_assert_str_eq(buf_head(&up), "GET / HTTP/1.1\r\n"
	    "Authorization: Basic dTpw\r\n\r\n");
	buf_free(&up);
}
END_TEST

START_TEST(bad_tokens_denied)
{
	static const char *const heads[] = {
		"GET /v1/x HTTP/1.1\r\n\r\n",
		"GET /v1/x HTTP/1.1\r\nAuthorization: Bearer nope\r\n\r\n",
		"GET /v1/x HTTP/1.1\r\nAuthorization: Bearer " TOKEN "\r\n"
		    "X-Access-Token: nope\r\n\r\n",
		"GET /v1/x HTTP/1.1\r\nAuthorization: Bearer\r\n " TOKEN
		    "\r\n\r\n",
		"GET /v1/x HTTP/1.1\r\nAuthorization: Bearer" TOKEN "\r\n\r\n",
		"GET /v1/x HTTP/1.1\r\nAuthorization: Basic " TOKEN "\r\n\r\n",
		"GET /healthz HTTP/1.1\r\n\r\n",
	};
	struct shimhead	h;
	struct buf	up = { 0 };
	size_t		i;

	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		ck_assert_ptr_nonnull(buf_reserve(&up, 256));
		ck_assert_int_eq(buf_add(&up, "before", 6), 0);
		ck_assert_msg(shimhead_check(&h, TOKEN, strlen(TOKEN),
		    heads[i], strlen(heads[i]), &up) == SHIMHEAD_DENIED,
		    "%s", heads[i]);
		/* Nothing of a refused head goes up. */
		ck_assert_uint_eq(buf_avail(&up), 6);
		buf_reset(&up);
	}
	buf_free(&up);
}
END_TEST

START_TEST(health_open_and_no_token)
{
	struct shimhead	h;
	struct buf	up = { 0 };
	const char	*head = "GET /v1/x HTTP/1.1\r\n\r\n";

	ck_assert_int_eq(check(&h, "GET /health HTTP/1.1\r\n\r\n", &up),
	    SHIMHEAD_FORWARD);
	ck_assert_int_eq(check(&h, "GET /health?x=1 HTTP/1.1\r\n\r\n", &up),
	    SHIMHEAD_FORWARD);
	ck_assert_int_eq(check(&h, "HEAD /health HTTP/1.1\r\n\r\n", &up),
	    SHIMHEAD_DENIED);
	ck_assert(shimhead_is_head(&h));
	/* No token configured: every well-formed head goes up. */
	ck_assert_ptr_nonnull(buf_reserve(&up, 64));
	buf_reset(&up);
	ck_assert_int_eq(shimhead_check(&h, NULL, 0, head, strlen(head), &up),
	    SHIMHEAD_FORWARD);
	ck_assert_uint_eq(buf_avail(&up), strlen(head));
	buf_free(&up);
}
END_TEST

/* What the agent would read as two requests is refused, as other junk. */
START_TEST(malformed_and_versions)
{
	struct shimhead	h;
	struct buf	up = { 0 };

	ck_assert_int_eq(check(&h, "GET /health HTTP/1.1\r\n\r*GET /v1/x "
	    "HTTP/1.1\r\n\r\n", &up), SHIMHEAD_MALFORMED);
	ck_assert_int_eq(check(&h, "GARBAGE\r\n\r\n", &up),
	    SHIMHEAD_MALFORMED);
	ck_assert_int_eq(check(&h, "GET / HTTP/2.0\r\nAuthorization: Bearer "
	    TOKEN "\r\n\r\n", &up), SHIMHEAD_VERSION);
	ck_assert_int_eq(check(&h, "GET / HTTP/1.0\r\nAuthorization: Bearer "
	    TOKEN "\r\n\r\n", &up), SHIMHEAD_FORWARD);
	buf_free(&up);
}
END_TEST

START_TEST(head_end_and_blank)
{
	ck_assert_uint_eq(shimhead_end("GET / HTTP/1.1\r\n\r\nrest", 22), 18);
	ck_assert_uint_eq(shimhead_end("GET / HTTP/1.1\n\nrest", 20), 16);
	ck_assert_uint_eq(shimhead_end("GET / HTTP/1.1\r\nX: y\r\n", 22), 0);
	ck_assert_uint_eq(shimhead_blank("\r\n\r\nGET", 7), 4);
	ck_assert_uint_eq(shimhead_blank("GET", 3), 0);
}
END_TEST

/* The body's end, by its length or its chunks; bad framing stops short. */
START_TEST(body_ends)
{
	struct shimhead	h;
	struct buf	up = { 0 };
	static const char chunks[] = "5\r\nhello\r\n0\r\n\r\nGET";

	ck_assert_int_eq(check(&h, "PUT /v1/x HTTP/1.1\r\nAuthorization: "
	    "Bearer " TOKEN "\r\nContent-Length: 5\r\n\r\n", &up),
	    SHIMHEAD_FORWARD);
	ck_assert(!h.done);
	ck_assert_uint_eq(shimhead_body(&h, "abcdeGET", 8), 5);
	ck_assert(h.done);
	ck_assert_int_eq(check(&h, "PUT /v1/x HTTP/1.1\r\nAuthorization: "
	    "Bearer " TOKEN "\r\nTransfer-Encoding: chunked\r\n\r\n", &up),
	    SHIMHEAD_FORWARD);
	ck_assert_uint_eq(shimhead_body(&h, chunks, sizeof(chunks) - 1),
	    sizeof(chunks) - 1 - 3);
	ck_assert(h.done);
	ck_assert_int_eq(check(&h, "PUT /v1/x HTTP/1.1\r\nAuthorization: "
	    "Bearer " TOKEN "\r\nTransfer-Encoding: chunked\r\n\r\n", &up),
	    SHIMHEAD_FORWARD);
	ck_assert_uint_lt(shimhead_body(&h, "zz\r\nhello", 9), 9);
	ck_assert(!h.done);
	/* Framing a lenient parser would take ends the body where it breaks. */
	ck_assert_int_eq(check(&h, "PUT /v1/x HTTP/1.1\r\nAuthorization: "
	    "Bearer " TOKEN "\r\nTransfer-Encoding: chunked\r\n\r\n", &up),
	    SHIMHEAD_FORWARD);
	ck_assert_uint_eq(shimhead_body(&h, "5\r\nhelloXX0\r\n\r\n", 17), 8);
	ck_assert(!h.done);
	ck_assert_uint_eq(shimhead_body(&h, "XX0\r\n\r\n", 8), 0);
	buf_free(&up);
}
END_TEST

START_TEST(upgrade_seen)
{
	struct shimhead	h;
	struct buf	up = { 0 };

	ck_assert_int_eq(check(&h, "GET /v1/t HTTP/1.1\r\nAuthorization: "
	    "Bearer " TOKEN "\r\nConnection: Upgrade\r\nUpgrade: websocket"
	    "\r\n\r\n", &up), SHIMHEAD_FORWARD);
	ck_assert(h.upgrade);
	buf_free(&up);
}
END_TEST

#define WS	"Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n"

/*
 * A WebSocket upgrade may carry the token as ?authorization=Bearer%20T
 * (a browser's cannot set a header): checked like a header's, removed
 * with the rest of the query as it was; never for another request.
 */
START_TEST(query_token_for_websockets_only)
{
	static const char *const denied[] = {
		/* Not a WebSocket upgrade: the query is not a token. */
		"GET /v1/x?authorization=Bearer%20" TOKEN " HTTP/1.1\r\n\r\n",
		"GET /v1/x?authorization=Bearer%20" TOKEN " HTTP/1.1\r\n"
		    "Connection: Upgrade\r\nUpgrade: h2c\r\n\r\n",
		"POST /v1/x?authorization=Bearer%20" TOKEN " HTTP/1.1\r\n"
		    "Content-Length: 0\r\n" WS,
		/* Wrong ones, a good header beside them or not. */
		"GET /t?authorization=Bearer%20nope HTTP/1.1\r\n" WS,
		"GET /t?authorization=Bearer%20nope HTTP/1.1\r\n"
		    "Authorization: Bearer " TOKEN "\r\n" WS,
		"GET /t?authorization=Bearer%20" TOKEN "&authorization= "
		    "HTTP/1.1\r\n" WS,
		"GET /t?authorization HTTP/1.1\r\n" WS,
		"GET /t?authorization=" TOKEN " HTTP/1.1\r\n" WS,
		"GET /t?authorization=Bearer%2" " HTTP/1.1\r\n" WS,
		"GET /t?authorization=Bearer%20" TOKEN "x HTTP/1.1\r\n" WS,
	};
	struct shimhead	h;
	struct buf	up = { 0 };
	size_t		i;

	ck_assert_int_eq(check(&h, "GET /t?cols=80&authorization=Bearer%20"
	    TOKEN "&rows=24 HTTP/1.1\r\nHost: a\r\n" WS, &up),
	    SHIMHEAD_FORWARD);
	ck_assert_str_eq(buf_head(&up), "GET /t?cols=80&rows=24 HTTP/1.1\r\n"
	    "Host: a\r\n" WS);
	ck_assert(h.upgrade && h.authed);
	/* Percent-encoded token bytes, '+' for the blank, a header too. */
	ck_assert_int_eq(check(&h, "GET /t?Authorization=bearer+%73%33cret "
	    "HTTP/1.1\r\nAuthorization: Bearer " TOKEN "\r\n" WS, &up),
	    SHIMHEAD_FORWARD);
	ck_assert_str_eq(buf_head(&up), "GET /t HTTP/1.1\r\n" WS);
	ck_assert_int_eq(check(&h, "GET /t?&authorization=Bearer%20" TOKEN
	    "#f HTTP/1.1\r\n" WS, &up), SHIMHEAD_FORWARD);
	ck_assert_str_eq(buf_head(&up), "GET /t?#f HTTP/1.1\r\n" WS);
	for (i = 0; i < sizeof(denied) / sizeof(denied[0]); i++) {
		ck_assert_int_eq(check(&h, denied[i], &up), SHIMHEAD_DENIED);
		ck_assert_str_eq(buf_head(&up), "");
	}
	/* Other requests keep their query as it was, token or not. */
	ck_assert_int_eq(check(&h, "GET /v1/x?authorization=1 HTTP/1.1\r\n"
	    "Authorization: Bearer " TOKEN "\r\n\r\n", &up), SHIMHEAD_FORWARD);
	ck_assert_str_eq(buf_head(&up), "GET /v1/x?authorization=1 "
	    "HTTP/1.1\r\n\r\n");
	buf_free(&up);
}
END_TEST

Suite *
shimhead_suite(void)
{
	Suite	*s = suite_create("shimhead");
	TCase	*tc;

	tc = tcase_create("tokens");
	tcase_add_test(tc, bearer_stripped);
	tcase_add_test(tc, bad_tokens_denied);
	tcase_add_test(tc, health_open_and_no_token);
	tcase_add_test(tc, query_token_for_websockets_only);
	suite_add_tcase(s, tc);
	tc = tcase_create("framing");
	tcase_add_test(tc, malformed_and_versions);
	tcase_add_test(tc, head_end_and_blank);
	tcase_add_test(tc, body_ends);
	tcase_add_test(tc, upgrade_seen);
	suite_add_tcase(s, tc);
	return s;
}
