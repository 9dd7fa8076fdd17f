/*
 * shim: the splice after an upgrade, with a real TCP client in front and
 * a real unix-socket backend behind, both driven by the test around the
 * shim's loop: bytes both ways (those sent before the 101 included),
 * backpressure (a side that does not read stops the other), and either
 * side closing closes both.  Also a request forwarded with its token
 * line removed, and the proxy's pure parts: --proxy-ports, preview
 * hosts, routing a head, and the head a port gets.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "base/tunables.h"
#include "net/shim.h"
#include "testutil.h"

Suite *shim_suite(void);

#define T_TOKEN		"unit-token"
#define T_LIMIT		(8 * 1024 * 1024)	/* bytes a stalled side may take */
#define T_SOCKBUF	16384			/* SO_SNDBUF, SO_RCVBUF */

static struct ev_loop	*loop;
static struct shim	*shim;
static char		 dir[64], sock[128];
static int		 lfd = -1;		/* the backend's listener */
static int		 cfd = -1, bfd = -1;	/* client, backend's accepted */
static struct sockaddr_in addr;

/*
 * Small kernel buffers (accepted sockets inherit the listener's): what a
 * stalled side lets through is then mostly the shim's own, and quick.
 */
static void
small_buffers(int fd)
{
	int	n = T_SOCKBUF;

	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &n, sizeof(n)),
	    0);
	ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n, sizeof(n)),
	    0);
}

static void
setup(void)
{
	/* As the shim does (agent/shim.c): a vanished peer is EPIPE. */
	signal(SIGPIPE, SIG_IGN);
	struct sockaddr_storage	ss;
	struct sockaddr_un	sun;
	struct shim_config	cfg;
	socklen_t		len;
	int			fd;

	tu_mkdtemp(dir, sizeof(dir), "/tmp/tend-shim-");
	snprintf(sock, sizeof(sock), "%s/agent.sock", dir);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	strcpy(sun.sun_path, sock);
	ck_assert_int_ne(lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0),
	    -1);
	small_buffers(lfd);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sun, sizeof(sun)), 0);
	ck_assert_int_eq(listen(lfd, 8), 0);

	ck_assert_ptr_nonnull(loop = ev_loop_new(EVFLAG_AUTO));
	ck_assert_int_eq(shim_parse_addr("127.0.0.1:0", &ss, &len), 0);
	ck_assert_int_ne(fd = shim_bind(&ss, len), -1);
	small_buffers(fd);
	len = sizeof(addr);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&addr, &len), 0);
	memset(&cfg, 0, sizeof(cfg));
	cfg.socket = sock;
	cfg.token = T_TOKEN;
	cfg.token_len = strlen(T_TOKEN);
	cfg.maxconns = 4;
	ck_assert_ptr_nonnull(shim = shim_new(loop, fd, &cfg));
}

static void
teardown(void)
{
	shim_free(shim);
	ev_loop_destroy(loop);
	if (cfd != -1)
		close(cfd);
	if (bfd != -1)
		close(bfd);
	close(lfd);
	cfd = bfd = lfd = -1;
	tu_rmtree(dir);
}

/* A few turns of the shim's loop, without waiting. */
static void
turn(int n)
{
	while (n-- > 0)
		ev_run(loop, EVRUN_NOWAIT);
}

static void
nonblock(int fd)
{
	ck_assert_int_ne(fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK),
	    -1);
}

/* All of d to fd (non-blocking), turning the loop while it is full. */
static void
put(int fd, const void *d, size_t n)
{
	const char	*p = d;
	ssize_t		 w;
	double		 end = tu_now() + 10;

	while (n > 0) {
		ck_assert_msg(tu_now() < end, "write stalled");
		if ((w = send(fd, p, n, MSG_NOSIGNAL)) > 0) {
			p += w;
			n -= w;
		} else {
			ck_assert_int_eq(errno, EAGAIN);
			turn(4);
		}
	}
	turn(4);
}

/* Exactly n bytes from fd into d, turning the loop; 0 at EOF first. */
static size_t
get(int fd, void *d, size_t n)
{
	char	*p = d;
	size_t	 got = 0;
	ssize_t	 r;
	double	 end = tu_now() + 10;

	while (got < n) {
		ck_assert_msg(tu_now() < end, "read stalled at %zu of %zu",
		    got, n);
		if ((r = recv(fd, p + got, n - got, 0)) > 0)
			got += r;
		else if (r == 0)
			break;
		else {
			ck_assert_int_eq(errno, EAGAIN);
			turn(4);
		}
	}
	return got;
}

/* Bytes up to and with the empty line that ends a head. */
static void
get_head(int fd, char *d, size_t cap)
{
	size_t	n = 0;

	while (n + 1 < cap) {
		ck_assert_uint_eq(get(fd, d + n, 1), 1);
		d[++n] = '\0';
		if (n >= 4 && memcmp(d + n - 4, "\r\n\r\n", 4) == 0)
			return;
	}
	ck_abort_msg("head too long");
}

/* The client connected (the shim reaches the agent at its first request). */
static void
connect_both(void)
{
	ck_assert_int_ne(cfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
	    -1);
	small_buffers(cfd);
	ck_assert_int_eq(connect(cfd, (struct sockaddr *)&addr, sizeof(addr)),
	    0);
	nonblock(cfd);
	nonblock(lfd);
	turn(4);
}

static void
accept_backend(void)
{
	double	end = tu_now() + 10;

	while ((bfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) == -1) {
		ck_assert_int_eq(errno, EAGAIN);
		ck_assert_msg(tu_now() < end, "the shim did not connect");
		turn(4);
	}
	nonblock(bfd);
}

static const char upgrade_req[] =
    "GET /v1/terminals/t1/connect HTTP/1.1\r\nHost: x\r\n"
    "Authorization: Bearer " T_TOKEN "\r\n"
    "Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
static const char switched[] =
    "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
    "Connection: Upgrade\r\n\r\n";

/*
 * The client's upgrade (and the bytes it sends right after it, before
 * any answer) reaches the backend without its token; the 101 reaches
 * the client.  The sockets are spliced after this.
 */
static void
upgrade(void)
{
	char	head[1024], early[5];

	connect_both();
	put(cfd, upgrade_req, sizeof(upgrade_req) - 1);
	put(cfd, "early", 5);
	accept_backend();
	get_head(bfd, head, sizeof(head));
	ck_assert_ptr_null(strstr(head, "Authorization"));
	ck_assert_ptr_nonnull(strstr(head, "Upgrade: websocket\r\n"));
	ck_assert_ptr_nonnull(strstr(head, "GET /v1/terminals/t1/connect "));
	put(bfd, switched, sizeof(switched) - 1);
	get_head(cfd, head, sizeof(head));
	ck_assert_str_eq(head, switched);
	ck_assert_uint_eq(get(bfd, early, 5), 5);
	ck_assert(memcmp(early, "early", 5) == 0);
}

static void
fill(char *d, size_t n, unsigned seed)
{
	size_t	i;

	for (i = 0; i < n; i++)
		d[i] = (char)(seed * 131 + i * 7 + (i >> 9));
}

START_TEST(splice_both_ways)
{
	static char	out[300 * 1024], in[sizeof(out)];
	int		round;

	upgrade();
	/* More than SHIM_BUF each way, binary, interleaved. */
	for (round = 0; round < 3; round++) {
		fill(out, sizeof(out), round);
		out[0] = '\0';
		put(cfd, out, sizeof(out));
		ck_assert_uint_eq(get(bfd, in, sizeof(in)), sizeof(in));
		ck_assert(memcmp(in, out, sizeof(out)) == 0);
		fill(out, sizeof(out), round + 100);
		put(bfd, out, sizeof(out));
		ck_assert_uint_eq(get(cfd, in, sizeof(in)), sizeof(in));
		ck_assert(memcmp(in, out, sizeof(out)) == 0);
	}
	ck_assert_int_eq(shim_nconns(shim), 1);
}
END_TEST

static char	pattern[64 * 1024 + 13];	/* repeated by stuff() */

/*
 * Write the pattern, over and over, to `from` until it stays full for a
 * while: the bytes taken.  The other side reads nothing meanwhile.
 */
static size_t
stuff(int from)
{
	size_t		total = 0, off;
	ssize_t		w;
	int		idle = 0;

	fill(pattern, sizeof(pattern), 7);
	while (idle < 200) {
		ck_assert_uint_lt(total, T_LIMIT);
		off = total % sizeof(pattern);
		if ((w = send(from, pattern + off, sizeof(pattern) - off,
		    MSG_NOSIGNAL)) > 0) {
			total += w;
			idle = 0;
		} else {
			ck_assert_int_eq(errno, EAGAIN);
			idle++;
		}
		turn(2);
	}
	return total;
}

/* Everything stuffed arrives, in order, once the reader reads. */
static void
drain(int to, size_t total)
{
	static char	chunk[64 * 1024];
	size_t		i, k, done = 0;

	while (done < total) {
		k = total - done < sizeof(chunk) ? total - done : sizeof(chunk);
		ck_assert_uint_eq(get(to, chunk, k), k);
		for (i = 0; i < k; i++)
			ck_assert_msg(chunk[i] ==
			    pattern[(done + i) % sizeof(pattern)],
			    "byte %zu differs", done + i);
		done += k;
	}
}

START_TEST(backpressure_client_to_backend)
{
	size_t	total;

	upgrade();
	total = stuff(cfd);
	/* Bounded: the kernel's buffers and the shim's SHIM_BUF, no more. */
	ck_assert_uint_gt(total, SHIM_BUF);
	ck_assert_uint_lt(total, T_LIMIT);
	drain(bfd, total);
	/* And it flows again. */
	put(cfd, "again", 5);
	{
		char	b[5];

		ck_assert_uint_eq(get(bfd, b, 5), 5);
		ck_assert(memcmp(b, "again", 5) == 0);
	}
}
END_TEST

START_TEST(backpressure_backend_to_client)
{
	size_t	total;
	char	b[5];

	upgrade();
	total = stuff(bfd);
	ck_assert_uint_gt(total, SHIM_BUF);
	ck_assert_uint_lt(total, T_LIMIT);
	drain(cfd, total);
	put(bfd, "again", 5);
	ck_assert_uint_eq(get(cfd, b, 5), 5);
	ck_assert(memcmp(b, "again", 5) == 0);
}
END_TEST

static bool
no_conns(void *arg)
{
	(void)arg;
	return shim_nconns(shim) == 0;
}

START_TEST(client_close_closes_backend)
{
	char	b[16];
	double	t0;

	upgrade();
	put(cfd, "last", 4);
	close(cfd);
	cfd = -1;
	t0 = tu_now();
	/* What was sent arrives, then EOF. */
	ck_assert_uint_eq(get(bfd, b, 4), 4);
	ck_assert(memcmp(b, "last", 4) == 0);
	ck_assert_uint_eq(get(bfd, b, 1), 0);
	/*
	 * A half-close travels on (a raw stream's EOF); the connection is
	 * gone once the backend closes too, or once the client's side
	 * refuses what the backend still sends (the client is gone).
	 */
	ck_assert_int_eq(shim_nconns(shim), 1);
	while (!no_conns(NULL)) {
		if (send(bfd, "x", 1, MSG_NOSIGNAL) == -1)
			ck_assert(errno == EPIPE || errno == ECONNRESET ||
			    errno == EAGAIN);
		ck_assert(!tu_run_until(loop, no_conns, NULL, 0.01) ||
		    no_conns(NULL));
		ck_assert_msg(tu_now() < t0 + 5, "connection kept");
	}
	/* And the backend is told: EOF (or a reset) on its side. */
	ck_assert_uint_eq(get(bfd, b, sizeof(b)) < sizeof(b), 1);
}
END_TEST

START_TEST(backend_close_closes_client)
{
	char	b[16];

	upgrade();
	put(bfd, "bye", 3);
	close(bfd);
	bfd = -1;
	ck_assert_uint_eq(get(cfd, b, 3), 3);
	ck_assert(memcmp(b, "bye", 3) == 0);
	ck_assert_uint_eq(get(cfd, b, 1), 0);
	ck_assert(tu_run_until(loop, no_conns, NULL, 5));
}
END_TEST

/* Closed while the backend has not taken what the client sent. */
START_TEST(client_close_while_stalled)
{
	upgrade();
	(void)stuff(cfd);
	close(cfd);
	cfd = -1;
	/* The backend still gets what the shim held, then EOF. */
	{
		static char	chunk[64 * 1024];
		size_t		n, total = 0;

		while ((n = get(bfd, chunk, sizeof(chunk))) > 0)
			total += n;
		ck_assert_uint_gt(total, 0);
	}
	close(bfd);
	bfd = -1;
	ck_assert(tu_run_until(loop, no_conns, NULL, 5));
}
END_TEST

START_TEST(request_forwarded_without_token)
{
	static const char	req[] =
	    "POST /v1/exec HTTP/1.1\r\nHost: x\r\nX-Access-Token: " T_TOKEN
	    "\r\nAuthorization: Basic dTo=\r\nContent-Length: 4\r\n\r\nbody";
	static const char	want[] =
	    "POST /v1/exec HTTP/1.1\r\nHost: x\r\n"
	    "Authorization: Basic dTo=\r\nContent-Length: 4\r\n\r\nbody";
	char			got[sizeof(want)];

	connect_both();
	put(cfd, req, sizeof(req) - 1);
	accept_backend();
	ck_assert_uint_eq(get(bfd, got, sizeof(want) - 1), sizeof(want) - 1);
	got[sizeof(want) - 1] = '\0';
	ck_assert_str_eq(got, want);
}
END_TEST

/* A client connected that sends nothing (non-blocking). */
static int
silent(void)
{
	int	fd;

	ck_assert_int_ne(fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0),
	    -1);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&addr, sizeof(addr)),
	    0);
	nonblock(fd);
	turn(4);
	return fd;
}

/* Whether the shim closed fd (EOF or reset), without waiting. */
static bool
closed(int fd)
{
	char	c;
	ssize_t	n = recv(fd, &c, 1, 0);

	return n == 0 || (n == -1 && errno != EAGAIN);
}

/*
 * Connections with no authorised request give way to new ones once they
 * are half the cap (2 of 4 here), the oldest first; an authorised one
 * never does.
 */
START_TEST(unauthenticated_give_way)
{
	static const char	req[] =
	    "GET /v1/x HTTP/1.1\r\nAuthorization: Bearer " T_TOKEN "\r\n\r\n";
	char			head[256];
	int			s1, s2, s3, s4;

	connect_both();
	put(cfd, req, sizeof(req) - 1);
	accept_backend();
	get_head(bfd, head, sizeof(head));
	s1 = silent();
	s2 = silent();
	ck_assert_int_eq(shim_nconns(shim), 3);
	ck_assert(!closed(s1) && !closed(s2));
	s3 = silent();
	ck_assert(closed(s1));
	ck_assert(!closed(s2) && !closed(s3) && !closed(cfd));
	s4 = silent();
	ck_assert(closed(s2));
	ck_assert(!closed(s3) && !closed(s4) && !closed(cfd));
	ck_assert_int_eq(shim_nconns(shim), 3);
	close(s1);
	close(s2);
	close(s3);
	close(s4);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The proxy's policy, routing and rewrite (no socket)                 */

START_TEST(proxy_ports_parse)
{
	static struct shim_ports	p;
	static const char *const	bad[] = {
		"", "0", "65536", "5-3", "1,,2", "x", "80-", "-80", "80,",
		"1 2", "3000-70000", "08x",
	};
	size_t				i;

	ck_assert_int_eq(shim_ports_parse(&p, "3000,8000-8002,22", 8001), 0);
	ck_assert(shim_ports_has(&p, 3000));
	ck_assert(shim_ports_has(&p, 8000));
	ck_assert(!shim_ports_has(&p, 8001));	/* the shim's own */
	ck_assert(shim_ports_has(&p, 8002));
	ck_assert(shim_ports_has(&p, 22));
	ck_assert(!shim_ports_has(&p, 2999));
	ck_assert(!shim_ports_has(&p, 8003));
	ck_assert(!shim_ports_has(&p, 0));
	ck_assert(!shim_ports_has(&p, 65536));
	ck_assert_int_eq(shim_ports_parse(&p, NULL, 8686), 0);
	ck_assert(shim_ports_has(&p, 1));
	ck_assert(shim_ports_has(&p, 65535));
	ck_assert(!shim_ports_has(&p, 8686));
	ck_assert(!shim_ports_has(&p, 0));
	ck_assert_int_eq(shim_ports_parse(&p, "all", 0), 0);
	ck_assert(shim_ports_has(&p, 8686));
	ck_assert_int_eq(shim_ports_parse(&p, "none", 0), 0);
	for (i = 1; i < 65536; i++)
		ck_assert(!shim_ports_has(&p, (int)i));
	ck_assert_int_eq(shim_ports_parse(&p, "1-65535", 0), 0);
	ck_assert(shim_ports_has(&p, 65535));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		ck_assert_msg(shim_ports_parse(&p, bad[i], 0) == -1, "%s",
		    bad[i]);
		ck_assert_int_eq(errno, EINVAL);
	}
}
END_TEST

static int
host(const char *h, const char *suffix)
{
	return shim_host_port(h, strlen(h), suffix);
}

START_TEST(proxy_host_port)
{
	ck_assert_int_eq(host("3000-x.localhost", NULL), 3000);
	ck_assert_int_eq(host("3000-abc-def.sbx.example.com:443", NULL),
	    3000);
	ck_assert_int_eq(host("65535-a", NULL), 65535);
	ck_assert_int_eq(host("8080-x.example.com.", NULL), 8080);
	/* Not a preview host: the agent's. */
	ck_assert_int_eq(host("65536-a.b", NULL), 0);
	ck_assert_int_eq(host("0-a.b", NULL), 0);
	ck_assert_int_eq(host("03000-a.b", NULL), 0);
	ck_assert_int_eq(host("3000-.b", NULL), 0);
	ck_assert_int_eq(host("3000.b", NULL), 0);
	ck_assert_int_eq(host("x-3000.b", NULL), 0);
	ck_assert_int_eq(host("127.0.0.1:8686", NULL), 0);
	ck_assert_int_eq(host("[::1]:8686", NULL), 0);
	ck_assert_int_eq(host("", NULL), 0);
	ck_assert_int_eq(host("sandbox.example.com", NULL), 0);
	/* PORT.SUFFIX, the suffix given with or without its dot. */
	ck_assert_int_eq(host("3000.box.test", "box.test"), 3000);
	ck_assert_int_eq(host("3000.BOX.test:80", ".box.test"), 3000);
	ck_assert_int_eq(host("3000.x.box.test", "box.test"), 0);
	ck_assert_int_eq(host("3000.box.tes", "box.test"), 0);
	ck_assert_int_eq(host("3000.abox.test", "box.test"), 0);
	ck_assert_int_eq(host("3000-y.box.test", "box.test"), 3000);
	ck_assert_int_eq(host("box.test", "box.test"), 0);
}
END_TEST

static void
route(const struct shim_config *cfg, const char *h, int port, size_t prefix)
{
	struct shim_route	r;

	shim_route(cfg, h, strlen(h), &r);
	ck_assert_msg(r.port == port && r.prefix == prefix, "%s: %d %zu", h,
	    r.port, r.prefix);
}

START_TEST(proxy_route)
{
	static struct shim_ports	p;
	struct shim_config		cfg = { 0 };

	route(&cfg, "GET /v1/ports/3000/proxy/ HTTP/1.1\r\n\r\n", 0, 0);
	ck_assert_int_eq(shim_ports_parse(&p, NULL, 8686), 0);
	cfg.ports = &p;
	cfg.self_port = 8686;
	route(&cfg, "GET /v1/ports/3000/proxy/a?b HTTP/1.1\r\n\r\n", 3000, 20);
	route(&cfg, "GET /v1/ports/3000/proxy HTTP/1.1\r\n\r\n", 3000, 20);
	route(&cfg, "GET /v1/ports/3000/proxy?x HTTP/1.1\r\n\r\n", 3000, 20);
	route(&cfg, "GET /v1/ports/3000/proxyx HTTP/1.1\r\n\r\n", 0, 0);
	route(&cfg, "GET /v1/ports/3000/ HTTP/1.1\r\n\r\n", 0, 0);
	route(&cfg, "GET /v1/ports HTTP/1.1\r\n\r\n", 0, 0);
	route(&cfg, "GET /v1/ports/0/proxy/ HTTP/1.1\r\n\r\n", 0, 0);
	route(&cfg, "GET /v1/ports/1.2.3.4/proxy/ HTTP/1.1\r\n\r\n", 0, 0);
	route(&cfg, "GET /x/v1/ports/3000/proxy/ HTTP/1.1\r\n\r\n", 0, 0);
	/* The path form with the shim's own port: routed (then refused). */
	route(&cfg, "GET /v1/ports/8686/proxy/ HTTP/1.1\r\n\r\n", 8686, 20);
	/* The host first: the path is then the server's. */
	route(&cfg, "GET /v1/ports/3000/proxy/ HTTP/1.1\r\nX: y\r\n"
	    "hOST:  5173-a.localhost:8686 \r\n\r\n", 5173, 0);
	/* A preview host of the shim's own port: the agent's. */
	route(&cfg, "GET /v1/health HTTP/1.1\r\nHost: 8686-a.x\r\n\r\n", 0, 0);
	route(&cfg, "GET / HTTP/1.1\r\nHost: 127.0.0.1:8686\r\n\r\n", 0, 0);
}
END_TEST

static void
rewrite(const struct shim_route *r, const char *h, const char *want)
{
	struct buf	up = { 0 };

	shim_proxy_rewrite(r, h, strlen(h), &up);
	ck_assert_int_eq(buf_add(&up, "", 1), 0);
	ck_assert_str_eq(buf_head(&up), want);
	buf_free(&up);
}

START_TEST(proxy_rewrite)
{
	struct shim_route	path = { .port = 3000, .prefix = 20 };
	struct shim_route	host = { .port = 3000, .prefix = 0 };

	rewrite(&path, "GET /v1/ports/3000/proxy/a/b?c=1 HTTP/1.1\r\n"
	    "Host: h\r\nX-Forwarded-Prefix: /evil\r\n  folded\r\n"
	    "Cookie: a=1; tend_proxy=abc;b=2\r\nCookie: tend_proxy=x\r\n\r\n",
	    "GET /a/b?c=1 HTTP/1.1\r\n"
	    "Host: h\r\nCookie: a=1;b=2\r\n"
	    "X-Forwarded-Prefix: /v1/ports/3000/proxy\r\n\r\n");
	/* Cookie lines never grow; one with nothing left goes. */
	rewrite(&host, "GET / HTTP/1.1\r\nCookie:a;b;tend_proxy=1;c\n"
	    "cookie:  tend_proxy=2 ;\r\nCOOKIE: x=1; tend_proxy=3 \r\n"
	    "Cookie: tend_proxyx=4;;\r\n\r\n",
	    "GET / HTTP/1.1\r\nCookie:a;b;c\nCOOKIE: x=1\r\n"
	    "Cookie: tend_proxyx=4\r\n\r\n");
	rewrite(&path, "GET /v1/ports/3000/proxy HTTP/1.1\r\n\r\n",
	    "GET / HTTP/1.1\r\nX-Forwarded-Prefix: /v1/ports/3000/proxy\r\n"
	    "\r\n");
	rewrite(&path, "GET /v1/ports/3000/proxy?q HTTP/1.0\n\n",
	    "GET /?q HTTP/1.0\nX-Forwarded-Prefix: /v1/ports/3000/proxy\r\n"
	    "\n");
	rewrite(&host, "GET /v1/ports/3000/proxy/ HTTP/1.1\r\n"
	    "X-Forwarded-Prefix: /app\r\ncookie: tend_proxy=1\r\n\r\n",
	    "GET /v1/ports/3000/proxy/ HTTP/1.1\r\n"
	    "X-Forwarded-Prefix: /app\r\n\r\n");
}
END_TEST

Suite *
shim_suite(void)
{
	Suite	*s = suite_create("shim");
	TCase	*tc;

	tc = tcase_create("splice");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, splice_both_ways);
	tcase_add_test(tc, backpressure_client_to_backend);
	tcase_add_test(tc, backpressure_backend_to_client);
	tcase_add_test(tc, client_close_closes_backend);
	tcase_add_test(tc, backend_close_closes_client);
	tcase_add_test(tc, client_close_while_stalled);
	suite_add_tcase(s, tc);

	tc = tcase_create("forward");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, request_forwarded_without_token);
	tcase_add_test(tc, unauthenticated_give_way);
	suite_add_tcase(s, tc);

	tc = tcase_create("proxy");
	tcase_add_test(tc, proxy_ports_parse);
	tcase_add_test(tc, proxy_host_port);
	tcase_add_test(tc, proxy_route);
	tcase_add_test(tc, proxy_rewrite);
	suite_add_tcase(s, tc);
	return s;
}
