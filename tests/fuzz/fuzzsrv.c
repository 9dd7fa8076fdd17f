/*
 * fuzzsrv.c: drive lib/net/http.c over a real unix socket, as a client would.
 *
 * The client is non-blocking and the loop is turned with EVRUN_NOWAIT
 * between its writes and reads, so client and server share one thread:
 * neither can block the other, and a reply too large for the socket
 * buffer is read while it is being written.  Everything the server sends
 * is fed to an http_parser in response mode: bytes after a "Connection:
 * close" response, a bad chunk size or a stray byte between responses
 * are all parse errors, and abort the run with what was received.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <http_parser.h>

#include "fuzzsrv.h"

#define FUZZSRV_MAXPIECES	8
#define FUZZSRV_STALL		64	/* turns a write may wait for room */
#define FUZZSRV_EOF_TURNS	20000	/* after shutdown, until the close */
#define FUZZSRV_FREE_TURNS	1000	/* after close, until freed */
#define FUZZSRV_MAXREQ		4096	/* requests whose method is kept */

struct fuzzsrv_client {
	int		 fd;
	http_parser	 parser;
	int		 responses;
	size_t		 received;
	/*
	 * The requests as the server reads them, so that a reply to HEAD is
	 * read without its body: bit i of heads is request i's.
	 */
	http_parser	 reqp;
	uint64_t	 heads[FUZZSRV_MAXREQ / 64];
	int		 nreq, nreplied;
	bool		 wclosed;	/* the server stopped taking input */
	bool		 upgraded;	/* after a 101: another protocol */
	bool		 eof;
};

struct ev_loop		*fuzzsrv_loop;
struct http_server	*fuzzsrv_srv;

static char	fuzzsrv_dir[64];
static char	fuzzsrv_path[96];

static void	fuzzsrv_cleanup(void);
static void	fuzzsrv_fail(const char *, const char *, size_t)
		    __attribute__((noreturn));
static int	fuzzsrv_on_complete(http_parser *);
static int	fuzzsrv_on_head(http_parser *);
static int	fuzzsrv_on_req_head(http_parser *);
static void	fuzzsrv_check(struct fuzzsrv_client *, const char *, size_t);
static void	fuzzsrv_drain(struct fuzzsrv_client *);
static void	fuzzsrv_turn(struct fuzzsrv_client *);
static void	fuzzsrv_write(struct fuzzsrv_client *, const uint8_t *, size_t);
static int	fuzzsrv_cuts(size_t, const struct fuzzsrv_opts *, size_t *);
static int	fuzzsrv_connect(int, const struct sockaddr *, socklen_t);
static void	fuzzsrv_wait_freed(double);
static void	fuzzsrv_wait_eof(struct fuzzsrv_client *,
		    const struct fuzzsrv_opts *);
static void	fuzzsrv_tick(struct ev_loop *, ev_timer *, int);

static const http_parser_settings fuzzsrv_settings = {
	.on_headers_complete = fuzzsrv_on_head,
	.on_message_complete = fuzzsrv_on_complete,
};

static const http_parser_settings fuzzsrv_req_settings = {
	.on_headers_complete = fuzzsrv_on_req_head,
};

static void
fuzzsrv_cleanup(void)
{
	if (fuzzsrv_path[0] != '\0')
		unlink(fuzzsrv_path);
	if (fuzzsrv_dir[0] != '\0')
		rmdir(fuzzsrv_dir);
}

const char *
fuzzsrv_socket_path(void)
{
	return fuzzsrv_path;
}

/*
 * The default loop: a target that runs processes needs its ev_child,
 * which libev has on the default loop only.
 */
void
fuzzsrv_init(const char *tmp)
{
	/* As the agent does: a vanished client is EPIPE, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	snprintf(fuzzsrv_dir, sizeof(fuzzsrv_dir), "%s/tend-fuzz-XXXXXX",
	    tmp != NULL ? tmp : "/tmp");
	if (mkdtemp(fuzzsrv_dir) == NULL) {
		perror("fuzzsrv: mkdtemp");
		abort();
	}
	snprintf(fuzzsrv_path, sizeof(fuzzsrv_path), "%s/sock", fuzzsrv_dir);
	atexit(fuzzsrv_cleanup);
	if ((fuzzsrv_loop = ev_default_loop(EVFLAG_AUTO)) == NULL) {
		perror("fuzzsrv: loop");
		abort();
	}
}

void
fuzzsrv_start(const struct http_route *routes, void *ctx)
{
	fuzzsrv_init(NULL);
	if ((fuzzsrv_srv = http_server_new(fuzzsrv_loop, fuzzsrv_path, routes,
	    ctx, HTTP_MAX_CONNS)) == NULL) {
		perror("fuzzsrv: listen");
		abort();
	}
}

static void
fuzzsrv_fail(const char *what, const char *d, size_t n)
{
	size_t	i;

	fprintf(stderr, "fuzzsrv: %s\n", what);
	if (d != NULL) {
		fprintf(stderr, "fuzzsrv: last bytes read (%zu):\n", n);
		for (i = 0; i < n && i < 2048; i++)
			if (d[i] == '\n' || (d[i] >= ' ' && d[i] < 0x7f))
				fputc(d[i], stderr);
			else
				fprintf(stderr, "\\x%02x", (unsigned char)d[i]);
		fputc('\n', stderr);
	}
	abort();
}

static int
fuzzsrv_on_complete(http_parser *p)
{
	struct fuzzsrv_client	*cl = p->data;

	cl->responses++;
	return 0;
}

/* A request the server will answer: remember whether it is HEAD. */
static int
fuzzsrv_on_req_head(http_parser *p)
{
	struct fuzzsrv_client	*cl = p->data;

	if (cl->nreq < FUZZSRV_MAXREQ && p->method == HTTP_HEAD)
		cl->heads[cl->nreq / 64] |= 1ULL << cl->nreq % 64;
	cl->nreq++;
	return 0;
}

/* A final reply to HEAD has no body (1 tells http_parser so). */
static int
fuzzsrv_on_head(http_parser *p)
{
	struct fuzzsrv_client	*cl = p->data;
	int			 i;

	if (p->status_code < 200)
		return 0;
	i = cl->nreplied++;
	return i < FUZZSRV_MAXREQ && (cl->heads[i / 64] >> i % 64 & 1) ? 1 : 0;
}

static void
fuzzsrv_check(struct fuzzsrv_client *cl, const char *d, size_t n)
{
	static const char	 start[] = "HTTP/1.1 ";
	size_t			 k, done;
	char			 msg[128];

	if (cl->upgraded)
		return;
	/*
	 * Once the client's own requests stop parsing, which replies are to
	 * HEAD (and so have no body) is not known: only the start is checked.
	 */
	if ((HTTP_PARSER_ERRNO(&cl->reqp) != HPE_OK ||
	    cl->nreq > FUZZSRV_MAXREQ) && cl->received > 0)
		return;
	if (cl->received < sizeof(start) - 1) {
		k = sizeof(start) - 1 - cl->received;
		if (k > n)
			k = n;
		if (memcmp(d, start + cl->received, k) != 0)
			fuzzsrv_fail("reply does not start with \"HTTP/1.1 \"",
			    d, n);
	}
	cl->received += n;
	done = http_parser_execute(&cl->parser, &fuzzsrv_settings, d, n);
	/* What follows a 101 is the new protocol's, not HTTP. */
	if (HTTP_PARSER_ERRNO(&cl->parser) == HPE_OK && cl->parser.upgrade) {
		cl->upgraded = true;
		return;
	}
	if (HTTP_PARSER_ERRNO(&cl->parser) != HPE_OK || done != n) {
		snprintf(msg, sizeof(msg), "malformed response stream after "
		    "%d responses: %s at byte %zu of %zu", cl->responses,
		    http_errno_name(HTTP_PARSER_ERRNO(&cl->parser)), done, n);
		/* What led to the error, not the start of a long read. */
		k = done > 1024 ? done - 1024 : 0;
		fuzzsrv_fail(msg, d + k, n - k);
	}
}

/* Read all that is there now. */
static void
fuzzsrv_drain(struct fuzzsrv_client *cl)
{
	static char	buf[64 * 1024];
	ssize_t		n;

	while (!cl->eof) {
		n = recv(cl->fd, buf, sizeof(buf), 0);
		if (n > 0) {
			fuzzsrv_check(cl, buf, n);
			continue;
		}
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		/*
		 * EOF, or ECONNRESET when the server closed with our input
		 * unread (after an error reply).  A body that ends with the
		 * connection ends here; a response cut short is not checked:
		 * the server drops a reply whose client half-closed.
		 */
		cl->eof = true;
		if (!cl->upgraded)
			(void)http_parser_execute(&cl->parser,
			    &fuzzsrv_settings, NULL, 0);
	}
}

static void
fuzzsrv_turn(struct fuzzsrv_client *cl)
{
	ev_run(fuzzsrv_loop, EVRUN_NOWAIT);
	fuzzsrv_drain(cl);
}

static void
fuzzsrv_write(struct fuzzsrv_client *cl, const uint8_t *d, size_t n)
{
	ssize_t	w;
	int	stall = 0;

	while (n > 0 && !cl->wclosed) {
		w = send(cl->fd, d, n, MSG_NOSIGNAL);
		if (w > 0) {
			if (HTTP_PARSER_ERRNO(&cl->reqp) == HPE_OK)
				(void)http_parser_execute(&cl->reqp,
				    &fuzzsrv_req_settings, (const char *)d, w);
			d += w;
			n -= w;
			stall = 0;
			continue;
		}
		if (w == -1 && errno == EINTR)
			continue;
		/* EPIPE, ECONNRESET: the server closed after an error. */
		if ((w == -1 && errno != EAGAIN) || ++stall > FUZZSRV_STALL) {
			cl->wclosed = true;
			break;
		}
		fuzzsrv_turn(cl);
	}
	fuzzsrv_turn(cl);
}

/*
 * A TCP connect to a proxy in this thread completes in the kernel's
 * backlog, with nothing of the loop needed; but a SYN that meets the
 * proxy's TIME_WAIT of an earlier input's port is answered only by the
 * retransmission a second later, and libFuzzer's SIGALRM (-timeout) may
 * land in that wait.  So the connect is non-blocking and waited for.
 */
static int
fuzzsrv_connect(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct pollfd	pfd = { .fd = fd, .events = POLLOUT };
	socklen_t	elen = sizeof(int);
	int		err = 0;

	if (connect(fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -1;
	while (poll(&pfd, 1, -1) == -1)
		if (errno != EINTR)
			return -1;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) == -1)
		return -1;
	if (err != 0) {
		errno = err;
		return -1;
	}
	return 0;
}

/* Cut points: cut[0] = 0 <= cut[1] <= ... <= cut[k] = n.  Returns k. */
static int
fuzzsrv_cuts(size_t n, const struct fuzzsrv_opts *o, size_t *cut)
{
	uint32_t	x = o->seed | 0x10000;	/* xorshift: never 0 */
	size_t		v;
	int		k, i, j;

	k = o->pieces < 1 ? 1 : o->pieces > FUZZSRV_MAXPIECES ?
	    FUZZSRV_MAXPIECES : o->pieces;
	cut[0] = 0;
	cut[k] = n;
	for (i = 1; i < k; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		v = x % (n + 1);
		for (j = i; j > 1 && cut[j - 1] > v; j--)
			cut[j] = cut[j - 1];
		cut[j] = v;
	}
	return k;
}

int
fuzzsrv_exchange(const uint8_t *d, size_t n, const struct fuzzsrv_opts *o)
{
	struct fuzzsrv_client	 cl;
	struct sockaddr_un	 sun;
	size_t			 cut[FUZZSRV_MAXPIECES + 1];
	int			 k, i;

	memset(&cl, 0, sizeof(cl));
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	memcpy(sun.sun_path, fuzzsrv_path, strlen(fuzzsrv_path));
	cl.fd = socket(o->to != NULL ? o->to->sa_family : AF_UNIX,
	    SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (cl.fd == -1 || fuzzsrv_connect(cl.fd, o->to != NULL ? o->to :
	    (struct sockaddr *)&sun, o->to != NULL ? o->tolen :
	    sizeof(sun)) == -1) {
		perror("fuzzsrv: connect");
		abort();
	}
	http_parser_init(&cl.parser, HTTP_RESPONSE);
	cl.parser.data = &cl;
	http_parser_init(&cl.reqp, HTTP_REQUEST);
	cl.reqp.data = &cl;

	k = fuzzsrv_cuts(n, o, cut);
	for (i = 0; i < k && !cl.wclosed && !cl.eof; i++)
		fuzzsrv_write(&cl, d + cut[i], cut[i + 1] - cut[i]);
	for (i = 0; i < o->spins && !cl.eof &&
	    (o->want == 0 || cl.responses < o->want); i++)
		fuzzsrv_turn(&cl);

	/*
	 * A half-closed client has said all it will: the server must answer
	 * what it can and close, whatever state the connection was in.
	 */
	if (o->halfclose && !cl.eof) {
		shutdown(cl.fd, SHUT_WR);
		fuzzsrv_wait_eof(&cl, o);
	}
	close(cl.fd);

	/* Whatever it was doing, the connection must now be freed. */
	if (o->free_s > 0)
		fuzzsrv_wait_freed(o->free_s);
	for (i = 0; http_server_nconns(fuzzsrv_srv) > 0; i++) {
		if (i == FUZZSRV_FREE_TURNS)
			fuzzsrv_fail("connection not freed after the client "
			    "closed", NULL, 0);
		ev_run(fuzzsrv_loop, EVRUN_NOWAIT);
	}
	return cl.responses;
}

/*
 * The server's close after the client's half-close: within
 * FUZZSRV_EOF_TURNS turns, or o->free_s seconds of real time for a
 * server that waits for children.
 */
static void
fuzzsrv_wait_eof(struct fuzzsrv_client *cl, const struct fuzzsrv_opts *o)
{
	ev_timer	tick;
	ev_tstamp	end;
	int		i;

	if (o->free_s <= 0) {
		for (i = 0; !cl->eof; i++) {
			if (i == FUZZSRV_EOF_TURNS)
				fuzzsrv_fail("server did not close after the "
				    "client's EOF", NULL, 0);
			fuzzsrv_turn(cl);
		}
		return;
	}
	ev_timer_init(&tick, fuzzsrv_tick, 0.005, 0.005);
	ev_timer_start(fuzzsrv_loop, &tick);
	ev_now_update(fuzzsrv_loop);
	end = ev_now(fuzzsrv_loop) + o->free_s;
	while (!cl->eof) {
		if (ev_now(fuzzsrv_loop) >= end)
			fuzzsrv_fail("server did not close after the client's "
			    "EOF", NULL, 0);
		ev_run(fuzzsrv_loop, EVRUN_ONCE);
		fuzzsrv_drain(cl);
	}
	ev_timer_stop(fuzzsrv_loop, &tick);
}

static void
fuzzsrv_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

/*
 * Up to t seconds of real time for the server to free its connections
 * (one that waits for a child it killed to be reaped needs some).
 */
static void
fuzzsrv_wait_freed(double t)
{
	ev_timer	tick;
	ev_tstamp	end;

	ev_timer_init(&tick, fuzzsrv_tick, 0.005, 0.005);
	ev_timer_start(fuzzsrv_loop, &tick);
	ev_now_update(fuzzsrv_loop);
	end = ev_now(fuzzsrv_loop) + t;
	while (http_server_nconns(fuzzsrv_srv) > 0 &&
	    ev_now(fuzzsrv_loop) < end)
		ev_run(fuzzsrv_loop, EVRUN_ONCE);
	ev_timer_stop(fuzzsrv_loop, &tick);
}
