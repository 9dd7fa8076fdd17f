/*
 * http: the server on a real unix socket, driven by its own ev loop from
 * the test's process: a client writes raw bytes, the loop runs, and the
 * client reads what came back.  Routing (and namespaces), keep-alive and
 * pipelining, hostile framing and sizes, streamed bodies both ways,
 * handing a socket to another protocol, and the listener.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "net/http.h"
#include "testutil.h"

Suite *http_suite(void);

#define WAIT_S		3.0	/* for anything the loop should do at once */
#define MAXCLIENTS	16
#define BIG_TOTAL	(1024 * 1024)
#define BIG_PIECE	(16 * 1024)
#define BLOB_LEN	(64 * 1024)

/* A test's client end: what it read and not yet parsed. */
struct client {
	int		fd;
	struct buf	in;
	bool		eof;
};

/* One parsed response. */
struct resp {
	int		status;
	char		head[4096];	/* status line and headers */
	struct buf	body;		/* de-chunked */
	struct buf	raw;		/* body bytes as framed on the wire */
};

/* A reply (or the rest of a stream) sent later from a timer. */
struct later {
	ev_timer		 timer;
	struct http_conn	*c;
	void			(*fn)(struct http_conn *);
	int			 closed;	/* on_close calls */
};

/* A streamed request body whose reading the handler pauses. */
struct held {
	struct http_conn	*c;
	bool			 paused_once;
	int			 closed;	/* on_close calls */
};

/* The socket GET /v1/upgrade hands over, and how it went. */
struct upgraded {
	int		 fd;		/* the new owner's, or -1 */
	struct buf	 in;		/* read after the head */
	int		 rc;		/* of http_reply_upgrade */
	int		 early_rc;	/* http_conn_upgrade before the drain */
	int		 early_errno;
	int		 takes;		/* http_conn_upgrade calls */
	int		 closed;	/* on_close calls */
};

/* The flow-controlled stream of GET /v1/big. */
struct big {
	size_t	sent;
	size_t	max_pending;
	int	paused;
	int	drains;
	int	closed;
};

static char		 dir_path[64];
static char		 sock_path[128];
static struct ev_loop	*loop;
static struct http_server *srv;
static struct http_server *other;	/* a second listener, for some tests */
static struct http_conn	*blob_conn;	/* where GET /v1/blob was answered */
static struct client	 clients[MAXCLIENTS];
static int		 nclients;

/* What the handlers saw. */
static char		 order[512];	/* handler events, in order */
static void		(*inspect)(struct http_req *);
static int		 inspected;
static struct buf	 got_body;	/* last buffered body */
static struct buf	 pieces;	/* streamed body, concatenated */
static int		 npieces;
static size_t		 maxpiece;	/* the largest piece streamed */
static size_t		 done_body_len;
static struct later	 later;
static struct big	 big;
static struct held	 held;
static struct upgraded	 up;

static void	setup(void);
static void	teardown(void);
static void	spin(int);
static struct client *cl_open(const char *);
static void	cl_close(struct client *);
static bool	cl_pump(struct client *);
static int	cl_send(struct client *, const void *, size_t);
static void	cl_sendf(struct client *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static bool	cl_reply(struct client *, struct resp *);
static bool	cl_wait_eof(struct client *);
static bool	cl_closed(struct client *);
static void	resp_free(struct resp *);
static int	resp_parse(struct client *, struct resp *);
static const char *resp_header(struct resp *, const char *);
static const char *body_str(struct resp *);
static void	get(struct client *, const char *, struct resp *);
static void	assert_error(struct resp *, int, const char *);
static void	note(const char *, ...) __attribute__((format(printf, 1, 2)));
static uint8_t	big_byte(size_t);

static void	h_hello(struct http_conn *, struct http_req *);
static void	h_record(struct http_conn *, struct http_req *);
static void	h_body(struct http_conn *, struct http_req *);
static void	h_stream_piece(struct http_conn *, struct http_req *,
		    const char *, size_t);
static void	h_stream_done(struct http_conn *, struct http_req *);
static void	h_slow(struct http_conn *, struct http_req *);
static void	h_sse(struct http_conn *, struct http_req *);
static void	h_chunked(struct http_conn *, struct http_req *);
static void	h_length(struct http_conn *, struct http_req *);
static void	h_sendfile(struct http_conn *, struct http_req *);
static void	h_big(struct http_conn *, struct http_req *);
static void	h_blob(struct http_conn *, struct http_req *);
static void	h_held_piece(struct http_conn *, struct http_req *,
		    const char *, size_t);
static void	h_held_done(struct http_conn *, struct http_req *);
static void	held_closed(struct http_conn *, void *);
static void	later_start(struct http_conn *, double,
		    void (*)(struct http_conn *));
static void	later_cb(struct ev_loop *, ev_timer *, int);
static void	later_closed(struct http_conn *, void *);
static void	slow_reply(struct http_conn *);
static void	sse_rest(struct http_conn *);
static void	big_produce(struct http_conn *);
static void	big_drain(struct http_conn *, void *);
static void	big_closed(struct http_conn *, void *);
static void	h_upgrade(struct http_conn *, struct http_req *);
static void	h_ns(struct http_conn *, struct http_req *);
static void	up_take(struct http_conn *, void *);
static void	up_closed(struct http_conn *, void *);

static const struct http_route routes[] = {
	{ "GET",	"/hello",			h_hello, NULL },
	{ "GET",	"/v1/processes/{}",		h_record, NULL },
	{ "POST",	"/v1/processes/{}/kill",	h_record, NULL },
	{ "GET",	"/v1/echo/{}/x/{}",		h_record, NULL },
	{ "GET",	"/v1/files/*",			h_record, NULL },
	{ "GET",	"/v1/inspect",			h_record, NULL },
	{ "POST",	"/v1/body",			h_body, NULL },
	{ "POST",	"/v1/stream",			h_stream_done,
							h_stream_piece },
	{ "GET",	"/v1/slow",			h_slow, NULL },
	{ "GET",	"/v1/sse",			h_sse, NULL },
	{ "GET",	"/v1/chunked",			h_chunked, NULL },
	{ "GET",	"/v1/length",			h_length, NULL },
	{ "GET",	"/v1/sendfile",			h_sendfile, NULL },
	{ "GET",	"/v1/big",			h_big, NULL },
	{ "GET",	"/v1/blob",			h_blob, NULL },
	{ "POST",	"/v1/held",			h_held_done,
							h_held_piece },
	{ "GET",	"/v1/upgrade",			h_upgrade, NULL },
	{ NULL,		NULL,				NULL, NULL },
};

/* A namespace's own routes, matched before the server's. */
static const struct http_route ns_routes[] = {
	{ "GET",	"/hello",			h_ns, NULL },
	{ "PUT",	"/v1/only-ns",			h_ns, NULL },
	{ NULL,		NULL,				NULL, NULL },
};

/* ------------------------------------------------------------------ */
/* Fixture and client */

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	tu_mkdtemp(dir_path, sizeof(dir_path), "/tmp/tend-http-");
	snprintf(sock_path, sizeof(sock_path), "%s/sock", dir_path);
	loop = ev_loop_new(EVFLAG_AUTO);
	ck_assert_ptr_nonnull(loop);
	srv = http_server_new(loop, sock_path, routes, NULL, 8);
	ck_assert_ptr_nonnull(srv);
	order[0] = '\0';
	inspect = NULL;
	inspected = 0;
	npieces = 0;
	maxpiece = 0;
	done_body_len = 0;
	memset(&later, 0, sizeof(later));
	memset(&big, 0, sizeof(big));
	memset(&held, 0, sizeof(held));
	memset(&up, 0, sizeof(up));
	up.fd = -1;
	nclients = 0;
}

static void
teardown(void)
{
	int	i;

	for (i = 0; i < nclients; i++)
		cl_close(&clients[i]);
	ev_timer_stop(loop, &later.timer);
	http_close_all(srv);
	/* Once at least: a connection handed over is freed from the loop. */
	ev_run(loop, EVRUN_NOWAIT);
	for (i = 0; i < 100 && http_server_nconns(srv) > 0; i++)
		ev_run(loop, EVRUN_NOWAIT);
	http_server_free(srv);
	srv = NULL;
	ev_loop_destroy(loop);
	loop = NULL;
	buf_free(&got_body);
	buf_free(&pieces);
	if (up.fd != -1)
		close(up.fd);
	buf_free(&up.in);
	unlink(sock_path);
	rmdir(dir_path);
}

/* Let the server run n times without the client reading. */
static void
spin(int n)
{
	struct timespec	ms = { 0, 1000 * 1000 };

	while (n-- > 0) {
		ev_run(loop, EVRUN_NOWAIT);
		nanosleep(&ms, NULL);
	}
}

static struct client *
cl_open(const char *path)
{
	struct sockaddr_un	 sun;
	struct client		*c;

	ck_assert_int_lt(nclients, MAXCLIENTS);
	c = &clients[nclients++];
	memset(c, 0, sizeof(*c));
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(c->fd, 0);
	ck_assert_int_eq(connect(c->fd, (struct sockaddr *)&sun, sizeof(sun)),
	    0);
	ck_assert_int_eq(fcntl(c->fd, F_SETFL, O_NONBLOCK), 0);
	return c;
}

static void
cl_close(struct client *c)
{
	if (c->fd != -1)
		close(c->fd);
	c->fd = -1;
	buf_free(&c->in);
}

/* Read what is there; true if anything came (or the end). */
static bool
cl_pump(struct client *c)
{
	bool	got = false;
	ssize_t	n;
	char	*p;

	while (!c->eof) {
		p = buf_reserve(&c->in, 65536);
		ck_assert_ptr_nonnull(p);
		n = read(c->fd, p, 65536);
		if (n > 0) {
			c->in.len += (size_t)n;
			got = true;
		} else if (n == 0 || (n == -1 && errno == ECONNRESET)) {
			c->eof = true;
			got = true;
		} else {
			ck_assert_int_eq(errno, EAGAIN);
			break;
		}
	}
	return got;
}

/*
 * Write all of d, running the server whenever the socket is full.  -1
 * if the server closed the connection first.
 */
static int
cl_send(struct client *c, const void *d, size_t n)
{
	const char	*p = d;
	double		 end = tu_now() + WAIT_S;
	ssize_t		 w;

	while (n > 0) {
		w = send(c->fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w > 0) {
			p += w;
			n -= (size_t)w;
			continue;
		}
		if (errno == EPIPE || errno == ECONNRESET)
			return -1;
		ck_assert_int_eq(errno, EAGAIN);
		ck_assert_msg(tu_now() < end, "send timed out");
		ev_run(loop, EVRUN_NOWAIT);
		(void)cl_pump(c);
	}
	return 0;
}

static void
cl_sendf(struct client *c, const char *fmt, ...)
{
	char	s[4096];
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(s, sizeof(s), fmt, ap);
	va_end(ap);
	ck_assert_int_lt(n, (int)sizeof(s));
	ck_assert_int_eq(cl_send(c, s, (size_t)n), 0);
}

/* The next complete response: run the loop and read until it is there. */
static bool
cl_reply(struct client *c, struct resp *r)
{
	struct pollfd	pfd = { .fd = c->fd, .events = POLLIN };
	double		end = tu_now() + WAIT_S;
	int		rc;

	for (;;) {
		if ((rc = resp_parse(c, r)) != 0)
			return rc == 1;
		if (c->eof || tu_now() > end)
			return false;
		ev_run(loop, EVRUN_NOWAIT);
		if (!cl_pump(c))
			(void)poll(&pfd, 1, 1);
	}
}

/* Read until the server closes the connection. */
static bool
cl_wait_eof(struct client *c)
{
	double	end = tu_now() + WAIT_S;

	while (!c->eof && tu_now() < end) {
		ev_run(loop, EVRUN_NOWAIT);
		if (!cl_pump(c))
			spin(1);
	}
	return c->eof;
}

/* The server closed the connection and sent nothing more. */
static bool
cl_closed(struct client *c)
{
	return cl_wait_eof(c) && buf_avail(&c->in) == 0;
}

static void
resp_free(struct resp *r)
{
	buf_free(&r->body);
	buf_free(&r->raw);
}

static const char *
resp_header(struct resp *r, const char *name)
{
	static char	 v[1024];
	const char	*p, *e;
	size_t		 n = strlen(name);

	for (p = strstr(r->head, "\r\n"); p != NULL; p = strstr(p, "\r\n")) {
		p += 2;
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			p += n + 1;
			p += strspn(p, " ");
			e = strstr(p, "\r\n");
			snprintf(v, sizeof(v), "%.*s", (int)(e - p), p);
			return v;
		}
	}
	return NULL;
}

/*
 * 1 and the response consumed from c->in when it is complete, 0 when more
 * is needed, -1 if it cannot be parsed.  A body without length or
 * chunking ends at EOF; a 1xx and a 204 have none.
 */
static int
resp_parse(struct client *c, struct resp *r)
{
	const char	*d = buf_head(&c->in), *hend, *p, *end, *v, *eol;
	size_t		 n = buf_avail(&c->in), hlen;
	unsigned long	 len;
	char		*q;
	int		 rc = 0;

	memset(r, 0, sizeof(*r));
	if (n == 0 || (hend = memmem(d, n, "\r\n\r\n", 4)) == NULL)
		return 0;
	hlen = (size_t)(hend - d) + 4;
	ck_assert_uint_lt(hlen, sizeof(r->head));
	memcpy(r->head, d, hlen);
	r->head[hlen] = '\0';
	if (sscanf(r->head, "HTTP/1.1 %d ", &r->status) != 1)
		return -1;
	p = d + hlen;
	end = d + n;
	if ((v = resp_header(r, "Transfer-Encoding")) != NULL &&
	    strcmp(v, "chunked") == 0) {
		for (;;) {
			if ((eol = memmem(p, end - p, "\r\n", 2)) == NULL)
				goto out;
			len = strtoul(p, &q, 16);
			if (q != eol) {
				rc = -1;
				goto out;
			}
			if ((size_t)(end - eol) < 2 + len + 2)
				goto out;
			ck_assert_int_eq(buf_add(&r->body, eol + 2, len), 0);
			if (memcmp(eol + 2 + len, "\r\n", 2) != 0) {
				rc = -1;
				goto out;
			}
			p = eol + 2 + len + 2;
			if (len == 0)
				break;
		}
	} else if ((v = resp_header(r, "Content-Length")) != NULL) {
		len = strtoul(v, NULL, 10);
		if ((size_t)(end - p) < len)
			goto out;
		ck_assert_int_eq(buf_add(&r->body, p, len), 0);
		p += len;
	} else if (r->status != 204 && r->status / 100 != 1) {
		if (!c->eof)
			goto out;
		ck_assert_int_eq(buf_add(&r->body, p, end - p), 0);
		p = end;
	}
	ck_assert_int_eq(buf_add(&r->raw, d + hlen, p - (d + hlen)), 0);
	ck_assert_int_eq(buf_add(&r->body, "", 1), 0);
	r->body.len--;
	buf_consume(&c->in, p - d);
	return 1;
out:
	resp_free(r);
	return rc;
}

static const char *
body_str(struct resp *r)
{
	return r->body.data != NULL ? r->body.data : "";
}

static void
get(struct client *c, const char *target, struct resp *r)
{
	cl_sendf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", target);
	ck_assert_msg(cl_reply(c, r), "GET %s: no reply", target);
}

/* A JSON error of the documented shape. */
static void
assert_error(struct resp *r, int status, const char *code)
{
	char	want[64];

	ck_assert_int_eq(r->status, status);
	ck_assert_str_eq(resp_header(r, "Content-Type"), "application/json");
	snprintf(want, sizeof(want), "\"code\":\"%s\"", code);
	ck_assert_msg(strstr(body_str(r), want) != NULL, "%s", body_str(r));
	ck_assert_ptr_nonnull(strstr(body_str(r), "\"error\":\""));
}

static void
note(const char *fmt, ...)
{
	va_list	ap;
	size_t	n = strlen(order);

	va_start(ap, fmt);
	vsnprintf(order + n, sizeof(order) - n, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Handlers */

static void
h_hello(struct http_conn *c, struct http_req *r)
{
	char	n[16] = "", s[32];

	(void)http_query(r, "n", n, sizeof(n));
	note("hello:%s;", n);
	snprintf(s, sizeof(s), "hello %s", n);
	http_reply(c, 200, "text/plain", s, strlen(s));
}

/* Replies "path|param|param..." and lets the test look at the request. */
static void
h_record(struct http_conn *c, struct http_req *r)
{
	struct buf	b = { 0 };
	int		i;

	if (inspect != NULL) {
		inspect(r);
		inspected++;
	}
	ck_assert_int_eq(buf_addstr(&b, r->path), 0);
	for (i = 0; i < r->nparam; i++)
		ck_assert_int_eq(buf_printf(&b, "|%s", r->param[i]), 0);
	http_reply(c, 200, "text/plain", b.data, b.len);
	buf_free(&b);
}

static void
h_body(struct http_conn *c, struct http_req *r)
{
	char	s[64];

	/* Buffered bodies are NUL-terminated for the JSON parser. */
	ck_assert_int_eq(r->body.data[r->body.len], '\0');
	buf_reset(&got_body);
	ck_assert_int_eq(buf_add(&got_body, r->body.data, r->body.len), 0);
	snprintf(s, sizeof(s), "len=%zu", r->body.len);
	http_reply(c, 200, "text/plain", s, strlen(s));
}

static void
h_stream_piece(struct http_conn *c, struct http_req *r, const char *d,
    size_t n)
{
	(void)c;
	ck_assert(r->route->body == h_stream_piece);
	ck_assert_uint_gt(n, 0);
	ck_assert_int_eq(buf_add(&pieces, d, n), 0);
	npieces++;
	if (n > maxpiece)
		maxpiece = n;
}

static void
h_stream_done(struct http_conn *c, struct http_req *r)
{
	char	s[64];

	done_body_len = r->body.len;
	snprintf(s, sizeof(s), "pieces=%d", npieces);
	http_reply(c, 200, "text/plain", s, strlen(s));
}

/* The response is owned by a timer; the connection may die first. */
static void
later_start(struct http_conn *c, double after, void (*fn)(struct http_conn *))
{
	later.c = c;
	later.fn = fn;
	http_conn_own(c, &later, NULL, later_closed);
	ev_timer_init(&later.timer, later_cb, after, 0.);
	ev_timer_start(loop, &later.timer);
}

static void
later_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	struct later	*lt = (struct later *)w;

	(void)l;
	(void)revents;
	ck_assert_ptr_nonnull(lt->c);
	lt->fn(lt->c);
}

static void
later_closed(struct http_conn *c, void *owner)
{
	struct later	*lt = owner;

	ck_assert_ptr_eq(c, lt->c);
	lt->c = NULL;
	lt->closed++;
	ev_timer_stop(loop, &lt->timer);
}

static void
h_slow(struct http_conn *c, struct http_req *r)
{
	(void)r;
	note("slow;");
	later_start(c, 0.15, slow_reply);
}

static void
slow_reply(struct http_conn *c)
{
	note("slow-reply;");
	http_reply(c, 200, "text/plain", "slow", 4);
}

static void
h_sse(struct http_conn *c, struct http_req *r)
{
	(void)r;
	ck_assert_int_eq(http_sse_begin(c), 0);
	ck_assert_int_eq(http_sse_event(c, "1", "{\"n\":1}"), 0);
	later_start(c, 0.02, sse_rest);
}

static void
sse_rest(struct http_conn *c)
{
	ck_assert_int_eq(http_sse_event(c, "2", "{\"n\":2}"), 0);
	ck_assert_int_eq(http_sse_event(c, NULL, "{\"n\":3}"), 0);
	ck_assert_int_eq(http_sse_comment(c, "hb"), 0);
	http_stream_end(c);
}

static void
h_chunked(struct http_conn *c, struct http_req *r)
{
	(void)r;
	ck_assert_int_eq(http_stream_begin(c, 200, "text/plain",
	    HTTP_FRAME_CHUNKED, "X-Extra: yes\r\n"), 0);
	ck_assert_int_eq(http_stream_write(c, "hello", 5), 0);
	/* Nothing to send must not end the body early. */
	ck_assert_int_eq(http_stream_write(c, "", 0), 0);
	ck_assert_int_eq(http_stream_write(c, " world", 6), 0);
	http_stream_end(c);
}

/* A body of known length, written in pieces, as a file is sent. */
static void
h_length(struct http_conn *c, struct http_req *r)
{
	(void)r;
	ck_assert_int_eq(http_stream_begin(c, 206, "application/octet-stream",
	    HTTP_FRAME_LENGTH, "Content-Length: 11\r\n"), 0);
	ck_assert_int_eq(http_stream_write(c, "hello", 5), 0);
	ck_assert_int_eq(http_stream_write(c, " world", 6), 0);
	http_stream_end(c);
}

/* The same body from a file, by sendfile: in two pieces, then its end. */
static void
h_sendfile(struct http_conn *c, struct http_req *r)
{
	FILE		*f = tmpfile();
	uint64_t	 off = 0;

	(void)r;
	ck_assert_ptr_nonnull(f);
	ck_assert_int_ge(fputs("hello world", f), 0);
	fflush(f);
	ck_assert_int_eq(http_stream_begin(c, 200, "application/octet-stream",
	    HTTP_FRAME_LENGTH, "Content-Length: 11\r\n"), 0);
	ck_assert_int_eq(http_stream_sendfile(c, fileno(f), &off, 5), 5);
	ck_assert_uint_eq(off, 5);
	ck_assert_int_eq(http_stream_sendfile(c, fileno(f), &off, 100), 6);
	ck_assert_int_eq(http_stream_sendfile(c, fileno(f), &off, 100), 0);
	fclose(f);
	http_stream_end(c);
	/* Not in a stream any more: refused. */
	off = 0;
	ck_assert_int_eq(http_stream_sendfile(c, 0, &off, 1), -1);
}

static uint8_t
big_byte(size_t i)
{
	return (uint8_t)(i * 7 + i / 4093);
}

static void
h_big(struct http_conn *c, struct http_req *r)
{
	(void)r;
	http_conn_own(c, &big, big_drain, big_closed);
	ck_assert_int_eq(http_stream_begin(c, 200, "application/octet-stream",
	    HTTP_FRAME_CHUNKED, NULL), 0);
	big_produce(c);
}

/* Write until the connection holds more than HTTP_OUT_HIGH, as logs do. */
static void
big_produce(struct http_conn *c)
{
	uint8_t	piece[BIG_PIECE];
	size_t	i, n;

	while (big.sent < BIG_TOTAL) {
		if (http_conn_pending(c) > HTTP_OUT_HIGH) {
			big.paused++;
			return;
		}
		n = BIG_TOTAL - big.sent < BIG_PIECE ? BIG_TOTAL - big.sent :
		    BIG_PIECE;
		for (i = 0; i < n; i++)
			piece[i] = big_byte(big.sent + i);
		ck_assert_int_eq(http_stream_write(c, piece, n), 0);
		big.sent += n;
		if (http_conn_pending(c) > big.max_pending)
			big.max_pending = http_conn_pending(c);
	}
	http_stream_end(c);
}

static void
big_drain(struct http_conn *c, void *owner)
{
	ck_assert_ptr_eq(owner, &big);
	ck_assert_uint_eq(http_conn_pending(c), 0);
	big.drains++;
	big_produce(c);
}

static void
big_closed(struct http_conn *c, void *owner)
{
	(void)c;
	ck_assert_ptr_eq(owner, &big);
	big.closed++;
}

/* A complete 64 KiB reply at once: pipelined, they pile up unsent. */
static void
h_blob(struct http_conn *c, struct http_req *r)
{
	static char	blob[BLOB_LEN];

	(void)r;
	note("b");
	blob_conn = c;
	memset(blob, 'b', sizeof(blob));
	http_reply(c, 200, "application/octet-stream", blob, sizeof(blob));
}

/* Hold the body at its first piece, as a full stdin queue does. */
static void
h_held_piece(struct http_conn *c, struct http_req *r, const char *d,
    size_t n)
{
	(void)r;
	(void)d;
	(void)n;
	if (held.paused_once)
		return;
	held.paused_once = true;
	held.c = c;
	http_conn_own(c, &held, NULL, held_closed);
	http_conn_pause_read(c);
}

static void
h_held_done(struct http_conn *c, struct http_req *r)
{
	(void)r;
	if (held.c == c) {
		held.c = NULL;
		http_conn_own(c, NULL, NULL, NULL);
	}
	http_reply(c, 204, NULL, NULL, 0);
}

static void
held_closed(struct http_conn *c, void *owner)
{
	ck_assert_ptr_eq(owner, &held);
	ck_assert_ptr_eq(c, held.c);
	held.c = NULL;
	held.closed++;
}

/*
 * Switch to "test" and take the socket once the head is out: at once, or
 * from on_drain when the socket was full.
 */
static void
h_upgrade(struct http_conn *c, struct http_req *r)
{
	(void)r;
	note("upgrade;");
	http_conn_own(c, &up, up_take, up_closed);
	up.rc = http_reply_upgrade(c, "test", "X-Up: 1\r\n");
	if (up.rc == 0) {
		up_take(c, &up);
		return;
	}
	/* Not while any of it is still queued. */
	errno = 0;
	up.early_rc = http_conn_upgrade(c, &up.fd, &up.in);
	up.early_errno = errno;
}

/* From the handler, or as on_drain once the head is out. */
static void
up_take(struct http_conn *c, void *owner)
{
	ck_assert_ptr_eq(owner, &up);
	ck_assert_uint_eq(http_conn_pending(c), 0);
	ck_assert_int_eq(http_conn_upgrade(c, &up.fd, &up.in), 0);
	ck_assert_int_ge(up.fd, 0);
	up.takes++;
}

static void
up_closed(struct http_conn *c, void *owner)
{
	ck_assert(owner == &up && c != NULL);
	up.closed++;
}

static void
h_ns(struct http_conn *c, struct http_req *r)
{
	struct buf	b = { 0 };

	ck_assert_int_eq(buf_printf(&b, "ns:%s", r->path), 0);
	http_reply(c, 200, "text/plain", b.data, b.len);
	buf_free(&b);
}

/* "/ns/..." is routed as "/...", in ns_routes before the server's. */
static const struct http_route *
ns_map(void *ctx, char **path)
{
	ck_assert_ptr_null(ctx);
	if (strncmp(*path, "/ns/", 4) != 0)
		return NULL;
	*path += 3;
	return ns_routes;
}

/* ------------------------------------------------------------------ */
/* Routing */

START_TEST(route_captures)
{
	static const char *const cases[][2] = {
		{ "/v1/processes/abc", "/v1/processes/abc|abc" },
		{ "/v1/processes/a.b-c_1?x=1&y", "/v1/processes/a.b-c_1|a.b-c_1" },
		{ "/v1/echo/one/x/two", "/v1/echo/one/x/two|one|two" },
		{ "/v1/files/a/b/c.txt", "/v1/files/a/b/c.txt|a/b/c.txt" },
		{ "/v1/files/", "/v1/files/|" },
	};
	struct client	*c = cl_open(sock_path);
	struct resp	 r;
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		get(c, cases[i][0], &r);
		ck_assert_msg(r.status == 200, "%s: %d", cases[i][0], r.status);
		ck_assert_str_eq(body_str(&r), cases[i][1]);
		resp_free(&r);
	}
	cl_sendf(c, "POST /v1/processes/k1/kill HTTP/1.1\r\n"
	    "Content-Length: 0\r\n\r\n");
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(body_str(&r), "/v1/processes/k1/kill|k1");
	resp_free(&r);
	/* All on one connection. */
	ck_assert_int_eq(http_server_nconns(srv), 1);
}
END_TEST

START_TEST(route_not_found)
{
	static const char *const paths[] = {
		"/nope", "/hell", "/hellox", "/hello/", "/v1/processes/",
		"/v1/processes/abc/extra", "/v1/echo/a/x/", "/v1/echo//x/b",
		"/v1/files", "/",
	};
	struct client	*c = cl_open(sock_path);
	struct resp	 r;
	size_t		 i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		get(c, paths[i], &r);
		ck_assert_msg(r.status == 404, "%s: %d", paths[i], r.status);
		assert_error(&r, 404, "not_found");
		ck_assert_ptr_null(resp_header(&r, "Connection"));
		resp_free(&r);
	}
	cl_sendf(c, "POST /v1/processes//kill HTTP/1.1\r\n"
	    "Content-Length: 0\r\n\r\n");
	ck_assert(cl_reply(c, &r));
	assert_error(&r, 404, "not_found");
	resp_free(&r);
	/* The connection survives a 404. */
	get(c, "/hello?n=after", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(body_str(&r), "hello after");
	resp_free(&r);
}
END_TEST

START_TEST(route_method_not_allowed)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	cl_sendf(c, "POST /hello HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc");
	ck_assert(cl_reply(c, &r));
	assert_error(&r, 405, "method_not_allowed");
	resp_free(&r);
	cl_sendf(c, "DELETE /v1/processes/abc HTTP/1.1\r\n\r\n");
	ck_assert(cl_reply(c, &r));
	assert_error(&r, 405, "method_not_allowed");
	resp_free(&r);
	cl_sendf(c, "GET /v1/processes/abc/kill HTTP/1.1\r\n\r\n");
	ck_assert(cl_reply(c, &r));
	assert_error(&r, 405, "method_not_allowed");
	resp_free(&r);
	/* Nothing was dispatched to a handler, and the connection lives. */
	ck_assert_str_eq(order, "");
	get(c, "/hello?n=2", &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
}
END_TEST

#define PUT0(path)	"PUT " path " HTTP/1.1\r\nContent-Length: 0\r\n\r\n"
#define GET(path)	"GET " path " HTTP/1.1\r\n\r\n"

/* Send req; want is the reply's body, or "!code" for a JSON error. */
static void
exchange(struct client *c, const char *req, int status, const char *want)
{
	struct resp	r;

	cl_sendf(c, "%s", req);
	ck_assert_msg(cl_reply(c, &r), "%s: no reply", req);
	if (want[0] == '!')
		assert_error(&r, status, want + 1);
	else {
		ck_assert_msg(r.status == status, "%s: %d", req, r.status);
		ck_assert_str_eq(body_str(&r), want);
	}
	resp_free(&r);
}

START_TEST(route_namespace)
{
	struct client	*c = cl_open(sock_path);

	/* The server alone knows no namespace, the bridge's included. */
	exchange(c, GET("/v1/sandbox/sb-1/processes/abc"), 404, "!not_found");

	/* The namespace's own route wins; the rest are the server's. */
	http_server_map(srv, ns_map);
	exchange(c, GET("/ns/hello"), 200, "ns:/hello");
	exchange(c, GET("/ns/v1/processes/abc?x=1"), 200,
	    "/v1/processes/abc|abc");
	exchange(c, PUT0("/ns/v1/only-ns"), 200, "ns:/v1/only-ns");

	/* Outside it, only the server's routes. */
	exchange(c, GET("/hello?n=plain"), 200, "hello plain");
	exchange(c, PUT0("/v1/only-ns"), 404, "!not_found");

	/* A path one of the tables has for another method is a 405. */
	exchange(c, PUT0("/ns/hello"), 405, "!method_not_allowed");
	exchange(c, GET("/ns/v1/only-ns"), 405, "!method_not_allowed");
	exchange(c, GET("/ns/v1/processes/abc/kill"), 405,
	    "!method_not_allowed");
	ck_assert_str_eq(order, "hello:plain;");
}
END_TEST

/* ------------------------------------------------------------------ */
/* Connections */

START_TEST(keepalive_two_requests)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	get(c, "/hello?n=1", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(body_str(&r), "hello 1");
	ck_assert_str_eq(resp_header(&r, "Content-Length"), "7");
	ck_assert_str_eq(resp_header(&r, "Content-Type"), "text/plain");
	ck_assert_ptr_null(resp_header(&r, "Connection"));
	resp_free(&r);
	ck_assert_int_eq(http_server_nconns(srv), 1);
	get(c, "/hello?n=2", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(body_str(&r), "hello 2");
	resp_free(&r);
	ck_assert_int_eq(http_server_nconns(srv), 1);
	ck_assert_str_eq(order, "hello:1;hello:2;");
	ck_assert_uint_eq(buf_avail(&c->in), 0);
}
END_TEST

START_TEST(connection_close_honoured)
{
	struct client	*c;
	struct resp	 r;

	/* HTTP/1.0 without keep-alive. */
	c = cl_open(sock_path);
	cl_sendf(c, "GET /hello?n=10 HTTP/1.0\r\n\r\n");
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	resp_free(&r);
	ck_assert(cl_closed(c));

	/* HTTP/1.1 asking for close; what follows it is not served. */
	c = cl_open(sock_path);
	cl_sendf(c, "GET /hello?n=11 HTTP/1.1\r\nConnection: close\r\n\r\n"
	    "GET /hello?n=12 HTTP/1.1\r\n\r\n");
	ck_assert(cl_reply(c, &r));
	ck_assert_str_eq(body_str(&r), "hello 11");
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	resp_free(&r);
	ck_assert(cl_closed(c));
	ck_assert_str_eq(order, "hello:10;hello:11;");
}
END_TEST

START_TEST(pipelined_in_order)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	/* One write: the second is answered from a timer, the third waits. */
	cl_sendf(c, "GET /hello?n=1 HTTP/1.1\r\n\r\n"
	    "GET /v1/slow HTTP/1.1\r\n\r\n"
	    "GET /hello?n=3 HTTP/1.1\r\n\r\n");
	ck_assert(cl_reply(c, &r));
	ck_assert_str_eq(body_str(&r), "hello 1");
	resp_free(&r);
	ck_assert(cl_reply(c, &r));
	ck_assert_str_eq(body_str(&r), "slow");
	resp_free(&r);
	ck_assert(cl_reply(c, &r));
	ck_assert_str_eq(body_str(&r), "hello 3");
	resp_free(&r);
	ck_assert_str_eq(order, "hello:1;slow;slow-reply;hello:3;");
	ck_assert_int_eq(later.closed, 0);

	/* A request sent while a handler is busy waits its turn too. */
	order[0] = '\0';
	cl_sendf(c, "GET /v1/slow HTTP/1.1\r\n\r\n");
	spin(5);
	cl_sendf(c, "GET /hello?n=5 HTTP/1.1\r\n\r\n");
	spin(5);
	ck_assert_str_eq(order, "slow;");
	ck_assert(cl_reply(c, &r));
	ck_assert_str_eq(body_str(&r), "slow");
	resp_free(&r);
	ck_assert(cl_reply(c, &r));
	ck_assert_str_eq(body_str(&r), "hello 5");
	resp_free(&r);
	ck_assert_str_eq(order, "slow;slow-reply;hello:5;");
}
END_TEST

static bool
no_conns(void *arg)
{
	(void)arg;
	return http_server_nconns(srv) == 0;
}

START_TEST(client_vanishes_mid_reply)
{
	struct client	*c = cl_open(sock_path);

	cl_sendf(c, "GET /v1/slow HTTP/1.1\r\n\r\n"
	    "GET /hello?n=2 HTTP/1.1\r\n\r\n");
	spin(5);
	ck_assert_str_eq(order, "slow;");
	cl_close(c);
	ck_assert(tu_run_until(loop, no_conns, NULL, WAIT_S));
	/* The owner heard of it, so its timer never touches a freed conn. */
	ck_assert_int_eq(later.closed, 1);
	ck_assert(!ev_is_active(&later.timer));
	spin(60);
	ck_assert_str_eq(order, "slow;");
}
END_TEST

static bool
other_two(void *arg)
{
	(void)arg;
	return http_server_nconns(other) == 2;
}

static bool
other_one(void *arg)
{
	(void)arg;
	return http_server_nconns(other) == 1;
}

static bool
other_none(void *arg)
{
	(void)arg;
	return http_server_nconns(other) == 0;
}

/* A second server with room for two, at path. */
static void
limited_server(char *path, size_t n)
{
	snprintf(path, n, "%s/limited", dir_path);
	other = http_server_new(loop, path, routes, NULL, 2);
	ck_assert_ptr_nonnull(other);
}

/* A client over the limit gets one 503 and the close. */
static void
assert_refused(const char *path)
{
	struct client	*c = cl_open(path);

	ck_assert(cl_wait_eof(c));
	ck_assert_int_eq(buf_add(&c->in, "", 1), 0);
	ck_assert_msg(strncmp(c->in.data, "HTTP/1.1 503 ", 13) == 0, "%s",
	    c->in.data);
	ck_assert_ptr_nonnull(strstr(c->in.data, "\r\nConnection: close\r\n"));
	ck_assert_ptr_nonnull(strstr(c->in.data, "\"code\":\"busy\""));
}

START_TEST(connection_limit)
{
	struct client	*c1, *c2, *c4;
	struct resp	 r;
	char		 path[160];

	limited_server(path, sizeof(path));
	c1 = cl_open(path);
	c2 = cl_open(path);
	ck_assert(tu_run_until(loop, other_two, NULL, WAIT_S));
	assert_refused(path);
	ck_assert_int_eq(http_server_nconns(other), 2);

	/* The two admitted are served. */
	get(c1, "/hello?n=1", &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	get(c2, "/hello?n=2", &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);

	/* A freed slot is taken again. */
	cl_close(c1);
	ck_assert(tu_run_until(loop, other_one, NULL, WAIT_S));
	c4 = cl_open(path);
	get(c4, "/hello?n=4", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(body_str(&r), "hello 4");
	resp_free(&r);
	ck_assert_int_eq(http_server_nconns(other), 2);
	ck_assert_str_eq(order, "hello:1;hello:2;hello:4;");

	cl_close(c2);
	cl_close(c4);
	http_close_all(other);
	ck_assert(tu_run_until(loop, other_none, NULL, WAIT_S));
	http_server_free(other);
	unlink(path);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Request accessors */

static void
check_query(struct http_req *r)
{
	char	v[64], small[6];

	ck_assert_int_eq(http_query(r, "a", v, sizeof(v)), 1);
	ck_assert_str_eq(v, "hello world");
	ck_assert_int_eq(http_query(r, "b", v, sizeof(v)), 1);
	ck_assert_str_eq(v, "x y+1");
	ck_assert_int_eq(http_query(r, "ab", v, sizeof(v)), 1);
	ck_assert_str_eq(v, "other");
	ck_assert_int_eq(http_query(r, "hex", v, sizeof(v)), 1);
	ck_assert_str_eq(v, "AB/c");
	/* Broken escapes are kept as they are. */
	ck_assert_int_eq(http_query(r, "pct", v, sizeof(v)), 1);
	ck_assert_str_eq(v, "%zz%4");
	ck_assert_int_eq(http_query(r, "bare", v, sizeof(v)), 1);
	ck_assert_str_eq(v, "");
	ck_assert_int_eq(http_query(r, "empty", v, sizeof(v)), 1);
	ck_assert_str_eq(v, "");
	ck_assert_int_eq(http_query(r, "missing", v, sizeof(v)), 0);
	ck_assert_int_eq(http_query(r, "hello", v, sizeof(v)), 0);	/* a value */
	ck_assert_int_eq(http_query(r, "A", v, sizeof(v)), 0);		/* case */
	/* A value longer than the buffer is an error, not absence. */
	small[5] = 'Z';
	ck_assert_int_eq(http_query(r, "a", small, 5), -1);
	ck_assert_int_eq(small[5], 'Z');
	/* Exactly fitting, NUL included. */
	ck_assert_int_eq(http_query(r, "ab", small, 6), 1);
	ck_assert_str_eq(small, "other");
	ck_assert_int_eq(http_query(r, "ab", small, 5), -1);

	ck_assert_int_eq(http_query_bool(r, "t1", 7), 1);
	ck_assert_int_eq(http_query_bool(r, "t2", 7), 1);
	ck_assert_int_eq(http_query_bool(r, "f1", 7), 0);
	ck_assert_int_eq(http_query_bool(r, "f2", 7), 0);
	ck_assert_int_eq(http_query_bool(r, "bare", 7), 1);
	ck_assert_int_eq(http_query_bool(r, "missing", 7), 7);
	ck_assert_int_eq(http_query_bool(r, "missing", 0), 0);
	ck_assert_int_eq(http_query_bool(r, "yes", 7), -1);
	ck_assert_int_eq(http_query_bool(r, "two", 7), -1);
	ck_assert_int_eq(http_query_bool(r, "upper", 7), -1);
	ck_assert_int_eq(http_query_bool(r, "enc", 7), 1);
	/* Too long for any boolean: malformed, not absent. */
	ck_assert_int_eq(http_query_bool(r, "long", 7), -1);
}

static void
check_no_query(struct http_req *r)
{
	char	v[16];

	ck_assert_int_eq(http_query(r, "a", v, sizeof(v)), 0);
	ck_assert_int_eq(http_query_bool(r, "a", 1), 1);
	ck_assert_int_eq(http_query_bool(r, "a", 0), 0);
}

START_TEST(query_decoding)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	inspect = check_query;
	get(c, "/v1/inspect?a=hello%20world&b=x+y%2B1&ab=other"
	    "&hex=%41%42%2f%63&pct=%zz%4&bare&empty=&t1=true&t2=1"
	    "&f1=false&f2=0&yes=yes&two=2&upper=TRUE&enc=%74rue"
	    "&long=truetruetrue", &r);
	ck_assert_int_eq(r.status, 200);
	/* The query is not part of the path. */
	ck_assert_str_eq(body_str(&r), "/v1/inspect");
	resp_free(&r);
	ck_assert_int_eq(inspected, 1);

	inspect = check_no_query;
	get(c, "/v1/inspect", &r);
	resp_free(&r);
	get(c, "/v1/inspect?", &r);
	resp_free(&r);
	get(c, "/v1/inspect?&&b=1", &r);
	resp_free(&r);
	ck_assert_int_eq(inspected, 4);
}
END_TEST

/* The Range header's forms (RFC 9110 §14): what is served, or ignored. */
START_TEST(range_parse)
{
	static const struct {
		const char		*h;
		uint64_t		 size;
		enum http_range		 want;
		uint64_t		 first, last;
	} t[] = {
		{ NULL, 10, HTTP_RANGE_FULL, 0, 0 },
		{ "bytes=0-4", 10, HTTP_RANGE_PART, 0, 4 },
		{ "bytes=2-", 10, HTTP_RANGE_PART, 2, 9 },
		{ "bytes=5-100", 10, HTTP_RANGE_PART, 5, 9 },
		{ "bytes=-3", 10, HTTP_RANGE_PART, 7, 9 },
		{ "bytes=-30", 10, HTTP_RANGE_PART, 0, 9 },
		{ "BYTES= 9-9 ", 10, HTTP_RANGE_PART, 9, 9 },
		{ "bytes=10-", 10, HTTP_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=10-20", 10, HTTP_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=-0", 10, HTTP_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=0-", 0, HTTP_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=-5", 0, HTTP_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=5-2", 10, HTTP_RANGE_FULL, 0, 0 },
		{ "bytes=0-1,3-4", 10, HTTP_RANGE_FULL, 0, 0 },
		{ "bytes=a-b", 10, HTTP_RANGE_FULL, 0, 0 },
		{ "bytes=-", 10, HTTP_RANGE_FULL, 0, 0 },
		{ "bytes=1+2-3", 10, HTTP_RANGE_FULL, 0, 0 },
		{ "bytes=99999999999999999999-", 10, HTTP_RANGE_FULL, 0, 0 },
		{ "items=0-1", 10, HTTP_RANGE_FULL, 0, 0 },
		{ "bytes=0-18446744073709551615", 10, HTTP_RANGE_PART, 0, 9 },
	};
	uint64_t	first, last;
	size_t		i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		first = last = 777;
		ck_assert_msg(http_range_parse(t[i].h, t[i].size, &first,
		    &last) == t[i].want, "%s", t[i].h ? t[i].h : "NULL");
		if (t[i].want == HTTP_RANGE_PART)
			ck_assert_msg(first == t[i].first && last == t[i].last,
			    "%s: %llu-%llu", t[i].h, (unsigned long long)first,
			    (unsigned long long)last);
	}
}
END_TEST

/* http_header_next: every header, in order, as sent; then 0, and 0 again. */
static void
check_header_walk(struct http_req *r)
{
	static const char	*want[][2] = {
		{ "X-Test-Header", "Value1" }, { "x-OTHER", "two words" },
		{ "X-Empty", "" }, { "X-After", "after" }, { "Host", "h" }
	};
	const char	*it = NULL, *name, *value;
	size_t		 i = 0;

	while (http_header_next(r, &it, &name, &value) == 1) {
		ck_assert_uint_lt(i, sizeof(want) / sizeof(want[0]));
		ck_assert_str_eq(name, want[i][0]);
		ck_assert_str_eq(value, want[i][1]);
		i++;
	}
	ck_assert_uint_eq(i, sizeof(want) / sizeof(want[0]));
	ck_assert_int_eq(http_header_next(r, &it, &name, &value), 0);
}

static void
check_headers(struct http_req *r)
{
	ck_assert_str_eq(http_header(r, "X-Test-Header"), "Value1");
	ck_assert_str_eq(http_header(r, "x-test-header"), "Value1");
	ck_assert_str_eq(http_header(r, "X-TEST-HEADER"), "Value1");
	ck_assert_str_eq(http_header(r, "x-other"), "two words");
	ck_assert_str_eq(http_header(r, "X-Empty"), "");
	ck_assert_str_eq(http_header(r, "x-after"), "after");
	ck_assert_str_eq(http_header(r, "host"), "h");
	ck_assert_ptr_null(http_header(r, "X-Missing"));
	ck_assert_ptr_null(http_header(r, "X-Test"));		/* a prefix */
	ck_assert_ptr_null(http_header(r, "Value1"));		/* a value */
	ck_assert_ptr_null(http_header(r, ""));
	check_header_walk(r);
}

START_TEST(header_lookup)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	inspect = check_headers;
	cl_sendf(c, "GET /v1/inspect HTTP/1.1\r\nX-Test-Header: Value1\r\n"
	    "x-OTHER: two words\r\nX-Empty:\r\nX-After: after\r\nHost: h\r\n"
	    "\r\n");
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	ck_assert_int_eq(inspected, 1);
}
END_TEST

static void
check_dribbled(struct http_req *r)
{
	char	v[16];

	ck_assert_str_eq(r->method, "GET");
	ck_assert_str_eq(http_header(r, "x-test-header"), "Value1");
	ck_assert_str_eq(http_header(r, "x-other"), "two words");
	ck_assert_int_eq(http_query(r, "q", v, sizeof(v)), 1);
	ck_assert_str_eq(v, "a b");
}

START_TEST(request_dribbled)
{
	static const char	req[] = "GET /v1/inspect?q=a+b HTTP/1.1\r\n"
				    "X-Test-Header: Value1\r\n"
				    "X-Other: two words\r\n\r\n";
	struct client		*c = cl_open(sock_path);
	struct resp		 r;
	size_t			 i;

	/* One byte per read: every field and value arrives in pieces. */
	inspect = check_dribbled;
	for (i = 0; i < sizeof(req) - 1; i++) {
		ck_assert_int_eq(cl_send(c, req + i, 1), 0);
		ev_run(loop, EVRUN_NOWAIT);
		ev_run(loop, EVRUN_NOWAIT);
	}
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(body_str(&r), "/v1/inspect");
	resp_free(&r);
	ck_assert_int_eq(inspected, 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Hostile requests */

START_TEST(body_too_large)
{
	struct client	*c;
	struct resp	 r;

	/* Refused from the head alone, before any body byte is read. */
	c = cl_open(sock_path);
	cl_sendf(c, "POST /v1/body HTTP/1.1\r\nContent-Length: %d\r\n\r\n",
	    HTTP_MAX_BODY + 1);
	ck_assert(cl_reply(c, &r));
	assert_error(&r, 413, "too_large");
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	resp_free(&r);
	ck_assert(cl_closed(c));
	ck_assert_uint_eq(got_body.len, 0);
}
END_TEST

START_TEST(body_at_limit)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;
	char		*d, want[32];
	size_t		 i;

	d = malloc(HTTP_MAX_BODY);
	ck_assert_ptr_nonnull(d);
	for (i = 0; i < HTTP_MAX_BODY; i++)
		d[i] = (char)('a' + i % 26);
	cl_sendf(c, "POST /v1/body HTTP/1.1\r\nContent-Length: %d\r\n\r\n",
	    HTTP_MAX_BODY);
	ck_assert_int_eq(cl_send(c, d, HTTP_MAX_BODY), 0);
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	snprintf(want, sizeof(want), "len=%d", HTTP_MAX_BODY);
	ck_assert_str_eq(body_str(&r), want);
	ck_assert_uint_eq(got_body.len, HTTP_MAX_BODY);
	ck_assert_int_eq(memcmp(got_body.data, d, HTTP_MAX_BODY), 0);
	resp_free(&r);
	free(d);
}
END_TEST

START_TEST(chunked_body_too_large)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;
	char		*d;
	size_t		 sent = 0;
	int		 rc = 0;

	/* No length up front: the limit applies as the chunks arrive. */
	d = malloc(64 * 1024);
	ck_assert_ptr_nonnull(d);
	memset(d, 'x', 64 * 1024);
	cl_sendf(c, "POST /v1/body HTTP/1.1\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	while (rc == 0 && sent <= HTTP_MAX_BODY) {
		char	hdr[16];

		snprintf(hdr, sizeof(hdr), "%x\r\n", 64 * 1024);
		if ((rc = cl_send(c, hdr, strlen(hdr))) == 0 &&
		    (rc = cl_send(c, d, 64 * 1024)) == 0)
			rc = cl_send(c, "\r\n", 2);
		sent += 64 * 1024;
	}
	free(d);
	ck_assert(cl_reply(c, &r));
	assert_error(&r, 413, "too_large");
	resp_free(&r);
	ck_assert(cl_closed(c));
	ck_assert_uint_eq(got_body.len, 0);
}
END_TEST

START_TEST(head_too_large)
{
	struct client	*c;
	struct resp	 r;
	char		*big_hdr;
	int		 i;

	big_hdr = malloc(HTTP_MAX_HEAD + 2);
	ck_assert_ptr_nonnull(big_hdr);
	memset(big_hdr, 'a', HTTP_MAX_HEAD + 1);
	big_hdr[HTTP_MAX_HEAD + 1] = '\0';

	/* One long header value. */
	c = cl_open(sock_path);
	cl_sendf(c, "GET /hello HTTP/1.1\r\nX-Big: ");
	ck_assert_int_eq(cl_send(c, big_hdr, strlen(big_hdr)), 0);
	cl_sendf(c, "\r\n\r\n");
	ck_assert(cl_reply(c, &r));
	assert_error(&r, 413, "too_large");
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	resp_free(&r);
	ck_assert(cl_closed(c));

	/* A long URL. */
	c = cl_open(sock_path);
	cl_sendf(c, "GET /hello?x=");
	ck_assert_int_eq(cl_send(c, big_hdr, strlen(big_hdr)), 0);
	cl_sendf(c, " HTTP/1.1\r\n\r\n");
	ck_assert(cl_reply(c, &r));
	assert_error(&r, 413, "too_large");
	resp_free(&r);
	ck_assert(cl_closed(c));
	free(big_hdr);

	/* 64 header fields are fine, 65 are not. */
	c = cl_open(sock_path);
	cl_sendf(c, "GET /hello?n=64 HTTP/1.1\r\n");
	for (i = 0; i < HTTP_MAX_HEADERS; i++)
		cl_sendf(c, "X-H%d: %d\r\n", i, i);
	cl_sendf(c, "\r\n");
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	cl_sendf(c, "GET /hello?n=65 HTTP/1.1\r\n");
	for (i = 0; i < HTTP_MAX_HEADERS + 1; i++)
		cl_sendf(c, "X-H%d: %d\r\n", i, i);
	cl_sendf(c, "\r\n");
	ck_assert(cl_reply(c, &r));
	assert_error(&r, 413, "too_large");
	resp_free(&r);
	ck_assert(cl_closed(c));
	ck_assert_str_eq(order, "hello:64;");
}
END_TEST

START_TEST(malformed_then_close)
{
#define BAD(s)	{ s, sizeof(s) - 1 }
	static const struct {
		const char	*s;
		size_t		 n;
	} bad[] = {
		BAD("GARBAGE\r\n\r\n"),
		BAD("FROB /hello HTTP/1.1\r\n\r\n"),
		BAD("GET /hello HTTP/1.1\r\nNo colon here\r\n\r\n"),
		BAD("GET /hello HTTP/1.1\r\nContent-Length: abc\r\n\r\n"),
		BAD("GET /hello HTTP/1.1\r\nContent-Length: 1\r\n"
		    "Content-Length: 2\r\n\r\nab"),
		BAD("POST /v1/body HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		    "\r\nzz\r\n"),
		BAD("GET /he llo HTTP/1.1\r\n\r\n"),
		BAD("GET /hello HTTP/1.1\r\nX: a\0b\r\n\r\n"),
		BAD("GET /hel\0lo HTTP/1.1\r\n\r\n"),
	};
#undef BAD
	struct client	*c;
	struct resp	 r;
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = cl_open(sock_path);
		ck_assert_int_eq(cl_send(c, bad[i].s, bad[i].n), 0);
		/* A good request behind it is never served. */
		(void)cl_send(c, "GET /hello?n=no HTTP/1.1\r\n\r\n", 28);
		ck_assert_msg(cl_reply(c, &r), "case %zu: no reply", i);
		ck_assert_msg(r.status == 400, "case %zu: %d", i, r.status);
		assert_error(&r, 400, "invalid_request");
		ck_assert_str_eq(resp_header(&r, "Connection"), "close");
		resp_free(&r);
		ck_assert_msg(cl_closed(c), "case %zu: not closed", i);
		cl_close(c);
	}
	ck_assert_str_eq(order, "");
}
END_TEST

/*
 * Chunked framing that a non-strict http_parser would take: no CRLF
 * after a chunk's data, a bare LF, control bytes in an extension or a
 * trailer.  Each is refused before its body reaches the route, and the
 * request behind it is never served: a proxy that frames strictly would
 * have read another body there.
 */
START_TEST(chunked_framing_strict)
{
#define BAD(s)	{ s, sizeof(s) - 1 }
	static const struct {
		const char	*s;
		size_t		 n;
	} bad[] = {
		BAD("5\r\nhelloXX0\r\n\r\n"),
		BAD("5\r\nhello\n0\r\n\r\n"),
		BAD("5\nhello\r\n0\r\n\r\n"),
		BAD("5;\x01\r\nhello\r\n0\r\n\r\n"),
		BAD("5;a\nb\r\nhello\r\n0\r\n\r\n"),
		BAD("0\r\nX: \x01\r\n\r\n"),
		BAD("0\r\n\r*"),
	};
#undef BAD
	struct client	*c;
	struct resp	 r;
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		c = cl_open(sock_path);
		cl_sendf(c, "POST /v1/body HTTP/1.1\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n");
		ck_assert_int_eq(cl_send(c, bad[i].s, bad[i].n), 0);
		(void)cl_send(c, "GET /hello?n=no HTTP/1.1\r\n\r\n", 28);
		ck_assert_msg(cl_reply(c, &r), "case %zu: no reply", i);
		ck_assert_msg(r.status == 400, "case %zu: %d", i, r.status);
		assert_error(&r, 400, "invalid_request");
		resp_free(&r);
		ck_assert_msg(cl_closed(c), "case %zu: not closed", i);
		cl_close(c);
	}
	ck_assert_str_eq(order, "");
	ck_assert_uint_eq(got_body.len, 0);
}
END_TEST

START_TEST(bad_http_version)
{
	static const char *const versions[] = {
		"HTTP/2.0", "HTTP/1.2", "HTTP/0.9", "HTTP/3.0",
	};
	struct client	*c;
	struct resp	 r;
	size_t		 i;

	for (i = 0; i < sizeof(versions) / sizeof(versions[0]); i++) {
		c = cl_open(sock_path);
		cl_sendf(c, "GET /hello %s\r\nHost: x\r\n\r\n", versions[i]);
		ck_assert_msg(cl_reply(c, &r), "%s: no reply", versions[i]);
		assert_error(&r, 400, "invalid_request");
		ck_assert_msg(strstr(body_str(&r), "HTTP version") != NULL,
		    "%s: %s", versions[i], body_str(&r));
		resp_free(&r);
		ck_assert(cl_closed(c));
		cl_close(c);
	}
	ck_assert_str_eq(order, "");
}
END_TEST

/* ------------------------------------------------------------------ */
/* Request bodies */

START_TEST(chunked_body_buffered)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	cl_sendf(c, "POST /v1/body HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	    "\r\n5\r\nhello\r\n1\r\n \r\n");
	spin(3);
	ck_assert_uint_eq(got_body.len, 0);	/* not before the end */
	cl_sendf(c, "5\r\nworld\r\n0\r\n\r\n");
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(body_str(&r), "len=11");
	ck_assert_uint_eq(got_body.len, 11);
	ck_assert_int_eq(memcmp(got_body.data, "hello world", 11), 0);
	resp_free(&r);

	/* Content-Length framing, and binary bytes, on the same connection. */
	cl_sendf(c, "POST /v1/body HTTP/1.1\r\nContent-Length: 5\r\n\r\n");
	ck_assert_int_eq(cl_send(c, "a\0b\r\n", 5), 0);
	ck_assert(cl_reply(c, &r));
	ck_assert_str_eq(body_str(&r), "len=5");
	ck_assert_int_eq(memcmp(got_body.data, "a\0b\r\n", 5), 0);
	resp_free(&r);
}
END_TEST

START_TEST(chunked_body_streamed)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	cl_sendf(c, "POST /v1/stream HTTP/1.1\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n5\r\nfirst\r\n");
	spin(3);
	/* Delivered as it comes, before the request is complete. */
	ck_assert_int_eq(npieces, 1);
	ck_assert_uint_eq(pieces.len, 5);
	cl_sendf(c, "7\r\n second\r\n");
	spin(3);
	cl_sendf(c, "6\r\n third\r\n0\r\n\r\n");
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_int_eq(npieces, 3);
	ck_assert_str_eq(body_str(&r), "pieces=3");
	ck_assert_uint_eq(pieces.len, 18);
	ck_assert_int_eq(memcmp(pieces.data, "first second third", 18), 0);
	/* Not buffered as well. */
	ck_assert_uint_eq(done_body_len, 0);
	resp_free(&r);
}
END_TEST

START_TEST(streamed_body_has_no_limit)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;
	size_t		 total = 2 * HTTP_MAX_BODY, i;
	char		*d;

	d = malloc(total);
	ck_assert_ptr_nonnull(d);
	for (i = 0; i < total; i++)
		d[i] = (char)(i * 13);
	cl_sendf(c, "POST /v1/stream HTTP/1.1\r\nContent-Length: %zu\r\n\r\n",
	    total);
	ck_assert_int_eq(cl_send(c, d, total), 0);
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(pieces.len, total);
	ck_assert_int_eq(memcmp(pieces.data, d, total), 0);
	ck_assert_uint_eq(done_body_len, 0);
	resp_free(&r);
	free(d);
}
END_TEST

/*
 * A streamed body is read in pieces larger than a request's reads (the
 * client here fills the socket before the server reads), and the request
 * pipelined behind it, in the same reads, is still parsed and answered.
 */
START_TEST(streamed_body_then_pipelined_request)
{
	static const char next[] = "POST /v1/body HTTP/1.1\r\n"
	    "Content-Length: 5\r\n\r\nafter";
	struct client	*c = cl_open(sock_path);
	struct resp	 r;
	size_t		 total = 3 * HTTP_BODY_READ_CHUNK + 7, i;
	char		*d;

	d = malloc(total);
	ck_assert_ptr_nonnull(d);
	for (i = 0; i < total; i++)
		d[i] = (char)(i * 7 + 1);
	cl_sendf(c, "POST /v1/stream HTTP/1.1\r\nContent-Length: %zu\r\n\r\n",
	    total);
	ck_assert_int_eq(cl_send(c, d, total), 0);
	ck_assert_int_eq(cl_send(c, next, sizeof(next) - 1), 0);
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(pieces.len, total);
	ck_assert_int_eq(memcmp(pieces.data, d, total), 0);
	ck_assert_uint_gt(maxpiece, HTTP_READ_CHUNK);
	resp_free(&r);
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(body_str(&r), "len=5");
	ck_assert_uint_eq(got_body.len, 5);
	ck_assert_int_eq(memcmp(got_body.data, "after", 5), 0);
	resp_free(&r);
	free(d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Streamed responses */

START_TEST(sse_framing)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	get(c, "/v1/sse", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(resp_header(&r, "Content-Type"), "text/event-stream");
	ck_assert_str_eq(resp_header(&r, "Cache-Control"), "no-cache");
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	ck_assert_ptr_null(resp_header(&r, "Content-Length"));
	ck_assert_ptr_null(resp_header(&r, "Transfer-Encoding"));
	ck_assert_str_eq(body_str(&r),
	    "id: 1\ndata: {\"n\":1}\n\n"
	    "id: 2\ndata: {\"n\":2}\n\n"
	    "data: {\"n\":3}\n\n"
	    ": hb\n\n");
	resp_free(&r);
	ck_assert(c->eof);
	ck_assert_int_eq(later.closed, 0);
	ck_assert(tu_run_until(loop, no_conns, NULL, WAIT_S));
}
END_TEST

START_TEST(chunked_stream_framing)
{
	static const char framed[] = "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n";
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	get(c, "/v1/chunked", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(resp_header(&r, "Transfer-Encoding"), "chunked");
	ck_assert_str_eq(resp_header(&r, "X-Extra"), "yes");
	ck_assert_str_eq(resp_header(&r, "Content-Type"), "text/plain");
	ck_assert_ptr_null(resp_header(&r, "Content-Length"));
	ck_assert_ptr_null(resp_header(&r, "Connection"));
	ck_assert_uint_eq(r.raw.len, sizeof(framed) - 1);
	ck_assert_int_eq(memcmp(r.raw.data, framed, sizeof(framed) - 1), 0);
	ck_assert_str_eq(body_str(&r), "hello world");
	resp_free(&r);
	ck_assert_uint_eq(buf_avail(&c->in), 0);

	/* The connection goes on after the last chunk. */
	get(c, "/hello?n=after", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(body_str(&r), "hello after");
	resp_free(&r);
	ck_assert_int_eq(http_server_nconns(srv), 1);
}
END_TEST

START_TEST(length_stream_framing)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	get(c, "/v1/length", &r);
	ck_assert_int_eq(r.status, 206);
	ck_assert_ptr_null(resp_header(&r, "Transfer-Encoding"));
	ck_assert_str_eq(resp_header(&r, "Content-Length"), "11");
	ck_assert_ptr_null(resp_header(&r, "Connection"));
	ck_assert_str_eq(body_str(&r), "hello world");
	resp_free(&r);
	/* The connection goes on after the body. */
	get(c, "/hello?n=after", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(body_str(&r), "hello after");
	resp_free(&r);
	ck_assert_int_eq(http_server_nconns(srv), 1);
}
END_TEST

START_TEST(sendfile_stream)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	get(c, "/v1/sendfile", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(resp_header(&r, "Content-Length"), "11");
	ck_assert_str_eq(body_str(&r), "hello world");
	resp_free(&r);
	get(c, "/hello?n=after", &r);
	ck_assert_str_eq(body_str(&r), "hello after");
	resp_free(&r);
}
END_TEST

START_TEST(stream_flow_control)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;
	size_t		 i;

	cl_sendf(c, "GET /v1/big HTTP/1.1\r\n\r\n");
	/* Nobody reads: the producer must stop near HTTP_OUT_HIGH. */
	spin(30);
	ck_assert_int_ge(big.paused, 1);
	ck_assert_uint_lt(big.sent, BIG_TOTAL);
	ck_assert_uint_le(big.max_pending, HTTP_OUT_HIGH + BIG_PIECE + 32);
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 200);
	ck_assert_uint_eq(r.body.len, BIG_TOTAL);
	for (i = 0; i < BIG_TOTAL; i++)
		if ((uint8_t)r.body.data[i] != big_byte(i))
			ck_abort_msg("byte %zu differs", i);
	resp_free(&r);
	ck_assert_int_ge(big.drains, 1);
	ck_assert_int_eq(big.closed, 0);
	get(c, "/hello?n=next", &r);
	ck_assert_str_eq(body_str(&r), "hello next");
	resp_free(&r);
}
END_TEST

START_TEST(stream_reader_vanishes)
{
	struct client	*c = cl_open(sock_path);

	cl_sendf(c, "GET /v1/big HTTP/1.1\r\n\r\n");
	spin(10);
	ck_assert_int_ge(big.paused, 1);
	cl_close(c);
	ck_assert(tu_run_until(loop, no_conns, NULL, WAIT_S));
	ck_assert_int_eq(big.closed, 1);
	ck_assert_uint_lt(big.sent, BIG_TOTAL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Bounds: queued output, slow heads, paused bodies */

#define NBLOB	20

START_TEST(output_bound_stops_parsing)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;
	struct buf	 reqs = { 0 };
	int		 i;

	for (i = 0; i < NBLOB; i++)
		ck_assert_int_eq(buf_addstr(&reqs,
		    "GET /v1/blob HTTP/1.1\r\n\r\n"), 0);
	ck_assert_int_eq(cl_send(c, reqs.data, reqs.len), 0);
	buf_free(&reqs);
	/* Nobody reads: requests wait once the replies pass the bound. */
	spin(50);
	ck_assert_uint_ge(strlen(order), 1);
	ck_assert_uint_lt(strlen(order), NBLOB);
	ck_assert_uint_le(http_conn_pending(blob_conn),
	    HTTP_OUT_READ_MAX + BLOB_LEN + 256);
	/* Reading lets them go on, in order, to the last. */
	for (i = 0; i < NBLOB; i++) {
		ck_assert_msg(cl_reply(c, &r), "reply %d", i);
		ck_assert_int_eq(r.status, 200);
		ck_assert_uint_eq(r.body.len, BLOB_LEN);
		resp_free(&r);
	}
	ck_assert_uint_eq(strlen(order), NBLOB);
	get(c, "/hello?n=after", &r);
	ck_assert_str_eq(body_str(&r), "hello after");
	resp_free(&r);
}
END_TEST

START_TEST(stuck_counts_output_only)
{
	struct client	*c;
	double		 end;

	http_server_timeouts(srv, 0.4, HTTP_HEAD_TIMEOUT, HTTP_PAUSE_TIMEOUT);
	c = cl_open(sock_path);
	cl_sendf(c, "GET /v1/big HTTP/1.1\r\n\r\nGET /hello HTTP/1.1\r\n");
	spin(10);
	ck_assert_int_ge(big.paused, 1);
	/* The client never reads, but keeps sending: it is stuck all the same. */
	end = tu_now() + WAIT_S;
	while (http_server_nconns(srv) > 0 && tu_now() < end) {
		if (cl_send(c, "X: y\r\n", 6) == -1)
			break;
		spin(50);
	}
	ck_assert_int_eq(http_server_nconns(srv), 0);
	ck_assert_int_eq(big.closed, 1);
}
END_TEST

START_TEST(head_timeout_408)
{
	struct client	*idle, *c;
	struct resp	 r;
	double		 t0, end;

	http_server_timeouts(srv, HTTP_STUCK_TIMEOUT, 0.3, HTTP_PAUSE_TIMEOUT);
	idle = cl_open(sock_path);
	c = cl_open(sock_path);
	/* A byte now and then does not extend the head's time. */
	t0 = tu_now();
	end = t0 + WAIT_S;
	cl_sendf(c, "GET /hello HTTP/1.1\r\n");
	while (!cl_pump(c) && tu_now() < end) {
		if (cl_send(c, "X", 1) == -1)
			break;
		spin(20);
	}
	ck_assert(cl_reply(c, &r));
	ck_assert(tu_now() - t0 >= 0.3);
	assert_error(&r, 408, "timeout");
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	resp_free(&r);
	ck_assert(cl_wait_eof(c));
	ck_assert_str_eq(order, "");
	/* One that has not begun a request is left to the idle timeout. */
	ck_assert_int_eq(http_server_nconns(srv), 1);
	get(idle, "/hello?n=1", &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
}
END_TEST

static bool
held_paused(void *arg)
{
	(void)arg;
	return held.c != NULL;
}

static void
held_begin(struct client *c)
{
	cl_sendf(c, "POST /v1/held HTTP/1.1\r\nContent-Length: 10\r\n\r\n"
	    "12345");
	ck_assert(tu_run_until(loop, held_paused, NULL, WAIT_S));
}

START_TEST(paused_hangup_closes)
{
	struct client	*c = cl_open(sock_path);

	held_begin(c);
	spin(20);
	ck_assert_int_eq(http_server_nconns(srv), 1);
	cl_close(c);
	ck_assert(tu_run_until(loop, no_conns, NULL, WAIT_S));
	ck_assert_int_eq(held.closed, 1);
}
END_TEST

START_TEST(paused_half_close_gets_reply)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;
	double		 end;

	held_begin(c);
	ck_assert_int_eq(cl_send(c, "67890", 5), 0);
	ck_assert_int_eq(shutdown(c->fd, SHUT_WR), 0);
	/* Past a hang-up check or two: a half close is no hang-up. */
	end = tu_now() + HTTP_HUP_CHECK * 2.5;
	while (tu_now() < end)
		spin(10);
	ck_assert_int_eq(http_server_nconns(srv), 1);
	ck_assert_int_eq(held.closed, 0);
	ck_assert(!cl_pump(c));
	http_conn_resume_read(held.c);
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 204);
	resp_free(&r);
	ck_assert_int_eq(held.closed, 0);
	ck_assert(tu_run_until(loop, no_conns, NULL, WAIT_S));
}
END_TEST

START_TEST(pause_timeout_fails_request)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;

	http_server_timeouts(srv, HTTP_STUCK_TIMEOUT, HTTP_HEAD_TIMEOUT, 0.3);
	held_begin(c);
	ck_assert(cl_reply(c, &r));
	assert_error(&r, 503, "busy");
	ck_assert_str_eq(resp_header(&r, "Connection"), "close");
	resp_free(&r);
	ck_assert(cl_wait_eof(c));
	ck_assert_int_eq(held.closed, 1);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Switching protocols */

#define UPGRADE_REQ	"GET /v1/upgrade HTTP/1.1\r\nHost: x\r\n" \
			"Upgrade: test\r\nConnection: Upgrade\r\n\r\n"

static bool
up_taken(void *arg)
{
	(void)arg;
	return up.fd != -1;
}

/* Exactly want, and nothing more, from fd. */
static void
fd_expect(int fd, const char *want)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLIN };
	char		got[256];
	size_t		n = strlen(want), have = 0;
	double		end = tu_now() + WAIT_S;
	ssize_t		k;

	while (have < n && tu_now() < end) {
		k = read(fd, got + have, sizeof(got) - have);
		if (k > 0) {
			have += (size_t)k;
			continue;
		}
		ck_assert_msg(k == -1 && errno == EAGAIN, "read: %zd", k);
		(void)poll(&pfd, 1, 10);
	}
	ck_assert_uint_eq(have, n);
	ck_assert_int_eq(memcmp(got, want, n), 0);
}

/* What a unix socket takes of BLOB_LEN writes before it would block. */
static size_t
socket_room(void)
{
	static char	d[BLOB_LEN];
	int		sv[2];
	size_t		n = 0;
	ssize_t		w;

	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0, sv), 0);
	while ((w = write(sv[0], d, sizeof(d))) > 0)
		n += (size_t)w;
	ck_assert_int_eq(errno, EAGAIN);
	close(sv[0]);
	close(sv[1]);
	return n;
}

/*
 * Blob replies ahead of an upgrade, enough to fill the socket but not
 * the output bound, so that its head is queued when it is answered.
 */
static void
upgrade_behind_blobs(struct client *c, int *nblob)
{
	struct buf	reqs = { 0 };
	int		i;

	*nblob = (int)(socket_room() / BLOB_LEN) + 2;
	ck_assert_uint_lt((size_t)2 * BLOB_LEN, HTTP_OUT_READ_MAX);
	for (i = 0; i < *nblob; i++)
		ck_assert_int_eq(buf_addstr(&reqs,
		    "GET /v1/blob HTTP/1.1\r\n\r\n"), 0);
	ck_assert_int_eq(buf_addstr(&reqs, UPGRADE_REQ "xyz"), 0);
	ck_assert_int_eq(cl_send(c, reqs.data, reqs.len), 0);
	buf_free(&reqs);
	spin(30);
	ck_assert_ptr_nonnull(strstr(order, "upgrade;"));
	ck_assert_int_eq(up.rc, 1);
	ck_assert_int_eq(up.early_rc, -1);
	ck_assert_int_eq(up.early_errno, EBUSY);
	ck_assert_int_eq(up.fd, -1);
}

START_TEST(upgrade_hands_over_rest)
{
	static const char	 partial[] = "GET /hello HTTP/1.1\r\nHo";
	struct client		*c;
	struct resp		 r;
	double			 end;

	/* Short enough to fire below, were the socket still the server's. */
	http_server_timeouts(srv, 0.2, 0.2, 0.2);
	c = cl_open(sock_path);
	/* One write: the bytes after the head are the new protocol's. */
	cl_sendf(c, UPGRADE_REQ "xyz");
	ck_assert(tu_run_until(loop, up_taken, NULL, WAIT_S));
	ck_assert_int_eq(up.rc, 0);
	ck_assert_int_eq(up.takes, 1);
	ck_assert_uint_eq(buf_avail(&up.in), 3);
	ck_assert_int_eq(memcmp(buf_head(&up.in), "xyz", 3), 0);
	ck_assert(cl_reply(c, &r));
	ck_assert_msg(strncmp(r.head, "HTTP/1.1 101 Switching Protocols\r\n",
	    34) == 0, "%s", r.head);
	ck_assert_str_eq(resp_header(&r, "Upgrade"), "test");
	ck_assert_str_eq(resp_header(&r, "Connection"), "Upgrade");
	ck_assert_str_eq(resp_header(&r, "X-Up"), "1");
	resp_free(&r);
	ck_assert_uint_eq(buf_avail(&c->in), 0);

	/*
	 * Its slot stays counted, but the server neither reads the socket
	 * (a partial head would get a 408) nor times it out, and closing
	 * every connection leaves it alone.
	 */
	ck_assert_int_eq(http_server_nconns(srv), 1);
	ck_assert_int_eq(cl_send(c, partial, sizeof(partial) - 1), 0);
	http_close_all(srv);
	end = tu_now() + 0.6;
	while (tu_now() < end)
		spin(10);
	ck_assert(!cl_pump(c));
	ck_assert_int_eq(up.closed, 0);
	ck_assert_str_eq(order, "upgrade;");
	fd_expect(up.fd, partial);
	ck_assert_int_eq(write(up.fd, "pong", 4), 4);
	fd_expect(c->fd, "pong");
	ck_assert_int_eq(http_server_nconns(srv), 1);
	http_server_release(srv);
	ck_assert_int_eq(http_server_nconns(srv), 0);
}
END_TEST

START_TEST(upgrade_waits_for_full_socket)
{
	struct client	*c = cl_open(sock_path);
	struct resp	 r;
	int		 i, nblob;

	upgrade_behind_blobs(c, &nblob);
	/* Reading lets all of it out, in order; then the socket moves. */
	for (i = 0; i < nblob; i++) {
		ck_assert_msg(cl_reply(c, &r), "reply %d", i);
		ck_assert_int_eq(r.status, 200);
		ck_assert_uint_eq(r.body.len, BLOB_LEN);
		resp_free(&r);
	}
	ck_assert(cl_reply(c, &r));
	ck_assert_int_eq(r.status, 101);
	resp_free(&r);
	ck_assert(tu_run_until(loop, up_taken, NULL, WAIT_S));
	ck_assert_int_eq(up.takes, 1);
	ck_assert_int_eq(up.closed, 0);
	ck_assert_uint_eq(buf_avail(&up.in), 3);
	ck_assert_int_eq(memcmp(buf_head(&up.in), "xyz", 3), 0);
	ck_assert_uint_eq(buf_avail(&c->in), 0);
	ck_assert_int_eq(write(up.fd, "ping", 4), 4);
	fd_expect(c->fd, "ping");
	http_server_release(srv);
}
END_TEST

START_TEST(upgrade_client_vanishes)
{
	struct client	*c = cl_open(sock_path);
	int		 nblob;

	upgrade_behind_blobs(c, &nblob);
	cl_close(c);
	ck_assert(tu_run_until(loop, no_conns, NULL, WAIT_S));
	/* The owner hears of it, as of any close, and gets no socket. */
	ck_assert_int_eq(up.closed, 1);
	ck_assert_int_eq(up.takes, 0);
	ck_assert_int_eq(up.fd, -1);
}
END_TEST

START_TEST(upgrade_keeps_its_slot)
{
	struct client	*c1, *c2, *c4;
	struct resp	 r;
	char		 path[160];

	limited_server(path, sizeof(path));
	c1 = cl_open(path);
	cl_sendf(c1, UPGRADE_REQ);
	ck_assert(tu_run_until(loop, up_taken, NULL, WAIT_S));
	ck_assert_int_eq(http_server_nconns(other), 1);
	c2 = cl_open(path);
	get(c2, "/hello?n=2", &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	ck_assert_int_eq(http_server_nconns(other), 2);

	/* The upgraded socket and one connection fill the two slots. */
	assert_refused(path);
	ck_assert_int_eq(http_server_nconns(other), 2);

	/* Given back by its owner, the slot is taken again. */
	close(up.fd);
	up.fd = -1;
	http_server_release(other);
	ck_assert_int_eq(http_server_nconns(other), 1);
	c4 = cl_open(path);
	get(c4, "/hello?n=4", &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);
	ck_assert_str_eq(order, "upgrade;hello:2;hello:4;");

	cl_close(c1);
	cl_close(c2);
	cl_close(c4);
	http_close_all(other);
	ck_assert(tu_run_until(loop, other_none, NULL, WAIT_S));
	http_server_free(other);
	unlink(path);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The listening socket */

START_TEST(socket_mode_0600)
{
	struct stat		st;
	char			path[160];
	mode_t			old;

	ck_assert_int_eq(stat(sock_path, &st), 0);
	ck_assert(S_ISSOCK(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0600);

	/* Whatever the umask, and the umask is given back. */
	snprintf(path, sizeof(path), "%s/open", dir_path);
	old = umask(0);
	other = http_server_new(loop, path, routes, NULL, 4);
	ck_assert_ptr_nonnull(other);
	ck_assert_uint_eq(umask(old), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	http_server_free(other);
	unlink(path);
}
END_TEST

START_TEST(stale_socket_replaced)
{
	struct sockaddr_un	 sun;
	struct client		*c;
	struct resp		 r;
	int			 fd;

	/* A socket file nobody listens on, as a dead agent leaves it. */
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/stale", dir_path);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	close(fd);

	other = http_server_new(loop, sun.sun_path, routes, NULL, 4);
	ck_assert_ptr_nonnull(other);
	c = cl_open(sun.sun_path);
	get(c, "/hello?n=stale", &r);
	ck_assert_int_eq(r.status, 200);
	ck_assert_str_eq(body_str(&r), "hello stale");
	resp_free(&r);
	ck_assert_int_eq(http_server_nconns(other), 1);
	cl_close(c);
	http_close_all(other);
	ck_assert(tu_run_until(loop, other_none, NULL, WAIT_S));
	http_server_free(other);
	unlink(sun.sun_path);
}
END_TEST

START_TEST(live_socket_refused)
{
	struct client		*c;
	struct resp		 r;
	struct stat		 before, after;
	char			 path[160];
	int			 fd;

	ck_assert_int_eq(stat(sock_path, &before), 0);
	errno = 0;
	ck_assert_ptr_null(http_server_new(loop, sock_path, routes, NULL, 4));
	ck_assert_int_eq(errno, EADDRINUSE);
	/* The live agent's socket is the same file, and still answers. */
	ck_assert_int_eq(stat(sock_path, &after), 0);
	ck_assert_uint_eq(before.st_ino, after.st_ino);
	c = cl_open(sock_path);
	get(c, "/hello?n=live", &r);
	ck_assert_int_eq(r.status, 200);
	resp_free(&r);

	/* Not a socket: left alone. */
	snprintf(path, sizeof(path), "%s/file", dir_path);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "data", 4), 4);
	close(fd);
	errno = 0;
	ck_assert_ptr_null(http_server_new(loop, path, routes, NULL, 4));
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(stat(path, &after), 0);
	ck_assert_uint_eq(after.st_size, 4);
	unlink(path);

	/* A path that does not fit in sun_path. */
	memset(path, 'p', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	errno = 0;
	ck_assert_ptr_null(http_server_new(loop, path, routes, NULL, 4));
	ck_assert_int_eq(errno, ENAMETOOLONG);
}
END_TEST

Suite *
http_suite(void)
{
	Suite	*s = suite_create("http");
	TCase	*tc;

	tc = tcase_create("routing");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, route_captures);
	tcase_add_test(tc, route_not_found);
	tcase_add_test(tc, route_method_not_allowed);
	tcase_add_test(tc, route_namespace);
	suite_add_tcase(s, tc);

	tc = tcase_create("connections");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, keepalive_two_requests);
	tcase_add_test(tc, connection_close_honoured);
	tcase_add_test(tc, pipelined_in_order);
	tcase_add_test(tc, client_vanishes_mid_reply);
	tcase_add_test(tc, connection_limit);
	suite_add_tcase(s, tc);

	tc = tcase_create("accessors");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, query_decoding);
	tcase_add_test(tc, header_lookup);
	tcase_add_test(tc, range_parse);
	tcase_add_test(tc, request_dribbled);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, body_too_large);
	tcase_add_test(tc, body_at_limit);
	tcase_add_test(tc, chunked_body_too_large);
	tcase_add_test(tc, head_too_large);
	tcase_add_test(tc, malformed_then_close);
	tcase_add_test(tc, bad_http_version);
	tcase_add_test(tc, chunked_framing_strict);
	suite_add_tcase(s, tc);

	tc = tcase_create("request_bodies");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, chunked_body_buffered);
	tcase_add_test(tc, chunked_body_streamed);
	tcase_add_test(tc, streamed_body_has_no_limit);
	tcase_add_test(tc, streamed_body_then_pipelined_request);
	suite_add_tcase(s, tc);

	tc = tcase_create("streams");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, sse_framing);
	tcase_add_test(tc, chunked_stream_framing);
	tcase_add_test(tc, length_stream_framing);
	tcase_add_test(tc, sendfile_stream);
	tcase_add_test(tc, stream_flow_control);
	tcase_add_test(tc, stream_reader_vanishes);
	suite_add_tcase(s, tc);

	tc = tcase_create("bounds");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, output_bound_stops_parsing);
	tcase_add_test(tc, stuck_counts_output_only);
	tcase_add_test(tc, head_timeout_408);
	tcase_add_test(tc, paused_hangup_closes);
	tcase_add_test(tc, paused_half_close_gets_reply);
	tcase_add_test(tc, pause_timeout_fails_request);
	suite_add_tcase(s, tc);

	tc = tcase_create("upgrade");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, upgrade_hands_over_rest);
	tcase_add_test(tc, upgrade_waits_for_full_socket);
	tcase_add_test(tc, upgrade_client_vanishes);
	tcase_add_test(tc, upgrade_keeps_its_slot);
	suite_add_tcase(s, tc);

	tc = tcase_create("listen");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, socket_mode_0600);
	tcase_add_test(tc, stale_socket_replaced);
	tcase_add_test(tc, live_socket_refused);
	suite_add_tcase(s, tc);
	return s;
}
