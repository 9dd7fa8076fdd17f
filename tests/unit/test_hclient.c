/*
 * hclient: replies in pieces, chunked and close-delimited bodies, interim
 * replies, broken and non-HTTP replies, and the chunked request body.
 * The "server" is the other end of a socketpair.
 */
#include <sys/socket.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "net/hclient.h"
#include "testutil.h"

Suite *hclient_suite(void);

/* What the callbacks saw. */
struct seen {
	int		status;
	int		heads;
	int		wakes;
	int		stop_body;
	struct buf	headers;	/* "name=value\n" each */
	struct buf	body;
};

static struct hclient	hc;
static int		peer = -1;
static struct seen	seen;

static int
seen_header(void *arg, const char *name, const char *value)
{
	struct seen	*s = arg;

	return buf_printf(&s->headers, "%s=%s\n", name, value);
}

static int
seen_head(void *arg, int status)
{
	struct seen	*s = arg;

	s->status = status;
	s->heads++;
	return 0;
}

static int
seen_body(void *arg, const char *d, size_t n)
{
	struct seen	*s = arg;

	if (s->stop_body)
		return -1;
	return buf_add(&s->body, d, n);
}

static int
seen_wake(void *arg)
{
	struct seen	*s = arg;
	char		 c;

	s->wakes++;
	(void)read(hc.wakefd, &c, 1);
	return 0;
}

static const struct hclient_cb seen_cb = {
	seen_header, seen_head, seen_body, seen_wake
};

static void
setup(void)
{
	int	sv[2];

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	memset(&hc, 0, sizeof(hc));
	hc.fd = sv[0];
	hc.wakefd = -1;
	peer = sv[1];
	memset(&seen, 0, sizeof(seen));
}

static void
teardown(void)
{
	hclient_close(&hc);
	if (peer != -1)
		close(peer);
	peer = -1;
	buf_free(&seen.headers);
	buf_free(&seen.body);
}

/* A child writes s one byte at a time, then hangs up. */
static pid_t
put_slowly(const char *s)
{
	pid_t	pid;

	if ((pid = fork()) == 0) {
		close(hc.fd);
		for (; *s != '\0'; s++) {
			if (write(peer, s, 1) != 1)
				_exit(1);
			usleep(200);
		}
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	close(peer);
	peer = -1;
	return pid;
}

static int
body_is(const char *s)
{
	return buf_avail(&seen.body) == strlen(s) &&
	    memcmp(buf_head(&seen.body), s, strlen(s)) == 0;
}

START_TEST(chunked_reply_in_pieces)
{
	int	st;
	pid_t	pid;

	pid = put_slowly("HTTP/1.1 200 OK\r\n"
	    "Content-Type: application/json\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"
	    "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\n\r\n");
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), 0);
	ck_assert_int_eq(seen.status, 200);
	ck_assert_int_eq(seen.heads, 1);
	ck_assert(body_is("hello, world"));
	ck_assert_ptr_nonnull(memmem(buf_head(&seen.headers),
	    buf_avail(&seen.headers), "Content-Type=application/json\n", 30));
	waitpid(pid, &st, 0);
}
END_TEST

START_TEST(body_until_close)
{
	tu_write(peer, "HTTP/1.1 200 OK\r\n"
	    "Content-Type: text/event-stream\r\n\r\ndata: {}\n\n");
	close(peer);
	peer = -1;
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), 0);
	ck_assert(body_is("data: {}\n\n"));
}
END_TEST

/* With a length the reply ends there: no waiting for the server to close. */
START_TEST(length_ends_reply)
{
	tu_write(peer, "HTTP/1.1 204 No Content\r\n\r\n");
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), 0);
	ck_assert_int_eq(seen.status, 204);
	tu_write(peer, "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}"
	    "HTTP/1.1 200 OK\r\n");
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), 0);
	ck_assert_int_eq(seen.status, 404);
	ck_assert(body_is("{}"));
}
END_TEST

START_TEST(interim_reply_skipped)
{
	tu_write(peer, "HTTP/1.1 100 Continue\r\n\r\n"
	    "HTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\n{}");
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), 0);
	ck_assert_int_eq(seen.status, 409);
	ck_assert_int_eq(seen.heads, 1);
}
END_TEST

START_TEST(closed_too_early)
{
	tu_write(peer, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
	close(peer);
	peer = -1;
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), -1);
	ck_assert_int_eq(errno, ECONNRESET);
	ck_assert(body_is("abc"));
}
END_TEST

START_TEST(no_reply_at_all)
{
	close(peer);
	peer = -1;
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), -1);
	ck_assert_int_eq(errno, ECONNRESET);
	ck_assert_int_eq(seen.heads, 0);
}
END_TEST

START_TEST(not_http)
{
	tu_write(peer, "SSH-2.0-OpenSSH_9.2\r\n");
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), -1);
	ck_assert_int_eq(errno, EPROTO);
	ck_assert_ptr_nonnull(strstr(hclient_error(&hc), "bad reply"));
}
END_TEST

START_TEST(bad_chunk_size)
{
	tu_write(peer, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "zz\r\n");
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), -1);
	ck_assert_int_eq(errno, EPROTO);
}
END_TEST

START_TEST(callback_stops)
{
	seen.stop_body = 1;
	tu_write(peer, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc");
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), -1);
	ck_assert_int_eq(errno, ECANCELED);
}
END_TEST

START_TEST(wake_while_waiting)
{
	int	p[2];

	ck_assert_int_eq(pipe(p), 0);
	hc.wakefd = p[0];
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	tu_write(peer, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n");
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), 0);
	ck_assert_int_eq(seen.wakes, 1);
	close(p[0]);
	close(p[1]);
}
END_TEST

/* Read what the client sent, until n bytes or the client's shutdown. */
static char *
taken(size_t n)
{
	static char	got[4096];
	size_t		have = 0;
	ssize_t		r;

	while (have < n && (r = read(peer, got + have,
	    sizeof(got) - 1 - have)) > 0)
		have += r;
	got[have] = '\0';
	return got;
}

START_TEST(request_with_length)
{
	static const char *const	 hdrs[] = { "Accept: */*", NULL };
	struct hclient_req		 req = { 0 };
	const char			*want;

	req.method = "POST";
	req.target = "/v1/processes/web/kill";
	req.headers = hdrs;
	ck_assert_int_eq(hclient_send(&hc, &req), 0);
	want = "POST /v1/processes/web/kill HTTP/1.1\r\nHost: localhost\r\n"
	    "Accept: */*\r\nContent-Length: 0\r\n\r\n";
	ck_assert_str_eq(taken(strlen(want)), want);

	req.method = "GET";
	req.target = "/v1/health";
	req.headers = NULL;
	ck_assert_int_eq(hclient_send(&hc, &req), 0);
	want = "GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n";
	ck_assert_str_eq(taken(strlen(want)), want);

	req.target = "/a b";
	ck_assert_int_eq(hclient_send(&hc, &req), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(request_body_chunked_from_fd)
{
	struct hclient_req	 req = { 0 };
	const char		*want;
	int			 p[2];

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(write(p[1], "hello\n", 6), 6);
	close(p[1]);
	req.method = "POST";
	req.target = "/v1/processes/cat/stdin?close=1";
	ck_assert_int_eq(hclient_send_fd(&hc, &req, p[0]), 0);
	ck_assert_int_eq(hc.replied, 0);
	want = "POST /v1/processes/cat/stdin?close=1 HTTP/1.1\r\n"
	    "Host: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
	    "6\r\nhello\n\r\n0\r\n\r\n";
	ck_assert_str_eq(taken(strlen(want)), want);
	close(p[0]);
}
END_TEST

/* A refusal must not wait for a body that may never end. */
START_TEST(request_body_cut_short_by_reply)
{
	struct hclient_req	req = { 0 };
	int			p[2];

	ck_assert_int_eq(pipe(p), 0);
	tu_write(peer, "HTTP/1.1 409 Conflict\r\nContent-Length: 2\r\n\r\n{}");
	req.method = "POST";
	req.target = "/v1/processes/web/stdin";
	ck_assert_int_eq(hclient_send_fd(&hc, &req, p[0]), 0);
	ck_assert_int_eq(hc.replied, 1);
	ck_assert_int_eq(hclient_recv(&hc, &seen_cb, &seen), 0);
	ck_assert_int_eq(seen.status, 409);
	close(p[0]);
	close(p[1]);
}
END_TEST

START_TEST(open_missing_socket)
{
	struct hclient	c;

	ck_assert_int_eq(hclient_open(&c, "/nonexistent/tend.sock"), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(c.fd, -1);
	hclient_close(&c);
}
END_TEST

Suite *
hclient_suite(void)
{
	Suite	*s;
	TCase	*tc;

	s = suite_create("hclient");
	tc = tcase_create("reply");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, chunked_reply_in_pieces);
	tcase_add_test(tc, body_until_close);
	tcase_add_test(tc, length_ends_reply);
	tcase_add_test(tc, interim_reply_skipped);
	tcase_add_test(tc, closed_too_early);
	tcase_add_test(tc, no_reply_at_all);
	tcase_add_test(tc, not_http);
	tcase_add_test(tc, bad_chunk_size);
	tcase_add_test(tc, callback_stops);
	tcase_add_test(tc, wake_while_waiting);
	suite_add_tcase(s, tc);

	tc = tcase_create("request");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, request_with_length);
	tcase_add_test(tc, request_body_chunked_from_fd);
	tcase_add_test(tc, request_body_cut_short_by_reply);
	tcase_add_test(tc, open_missing_socket);
	suite_add_tcase(s, tc);
	return s;
}
