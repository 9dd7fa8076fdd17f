/*
 * shim.c: the TCP front of the agent (see shim.h).
 *
 * A client connection has three buffers, each bounded: `in`, client bytes
 * not yet looked at (a request head is collected there, HTTP_MAX_HEAD at
 * most); `up`, bytes for the agent; `down`, the agent's bytes for the
 * client.  A side is read only while its buffer has room, so a slow
 * reader on either end stops the other (backpressure both ways).  The
 * agent's bytes go through a pipe instead of `down` while the shim need
 * not look at them nor add its own after them: the kernel moves them to
 * the client (splice), and what the agent sent from a file (an ended
 * record's raw stream) is never copied on the way.
 *
 * Only request heads are parsed, checked and rewritten (shimhead.c).  The
 * parser then runs over the body only to learn where it ends
 * (Content-Length or chunked framing); the body's bytes are forwarded as
 * they were, and the reply is never parsed at all: the agent's own
 * framing reaches the client unchanged.
 *
 * The three buffers are bufs of a fixed size, allocated once: they are
 * never grown (shim_room, shim_add), which bounds a connection's memory.
 *
 * "The agent" is the connection's upstream: the agent's socket, or a
 * port of the container when the proxy routed the request there
 * (shim_proxy.c rewrites the head and connects).  One upstream at a
 * time: a head for another target waits until the old one has ended.
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <fcntl.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "base/tunables.h"
#include "base/util.h"
#include "shim.h"
#include "shim_int.h"
#include "shimhead.h"

static void	shim_conn_update(struct shim_conn *);
static void	shim_process(struct shim_conn *);
static int	shim_head(struct shim_conn *, size_t);
static void	shim_too_large(struct shim_conn *);
static void	shim_reply(struct shim_conn *);
static void	shim_crd_cb(struct ev_loop *, ev_io *, int);
static void	shim_cwr_cb(struct ev_loop *, ev_io *, int);
static void	shim_ard_cb(struct ev_loop *, ev_io *, int);
static void	shim_awr_cb(struct ev_loop *, ev_io *, int);
static void	shim_timer_cb(struct ev_loop *, ev_timer *, int);
static void	shim_upstream_close(struct shim_conn *);
static void	shim_unavailable(struct shim_conn *);
static int	shim_awr_connected(struct shim_conn *);

/*
 * Room at the end of b, moving what is left to the front when that
 * helps: asking buf for no more than its capacity lacks moves the bytes
 * and never grows it.
 */
size_t
shim_room(struct buf *b)
{
	if (b->off > 0 && b->cap - b->len < b->cap / 2)
		(void)buf_reserve(b, b->cap - buf_avail(b));
	return b->cap - b->len;
}

/*
 * Read from fd into the room at b's end (made first: the bytes may move
 * to the front).
 */
static ssize_t
shim_read(int fd, struct buf *b)
{
	size_t	room = shim_room(b);

	return read(fd, b->data + b->len, room);
}

/* Append within the buffer's size: -1 and ENOBUFS when it is full. */
static int
shim_add(struct buf *b, const void *p, size_t n)
{
	if (shim_room(b) < n) {
		errno = ENOBUFS;
		return -1;
	}
	return buf_add(b, p, n);
}

/* A buffer of a fixed size n: allocated whole, never grown. */
int
shim_buf_init(struct buf *b, size_t n)
{
	if ((b->data = malloc(n)) == NULL)
		return -1;
	b->cap = n;
	b->off = b->len = 0;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */

void
shim_conn_new(struct shim *s, int fd, const struct sockaddr_storage *peer)
{
	struct shim_conn	*c;

	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    shim_buf_init(&c->in, SHIM_IN_BUF) == -1 ||
	    shim_buf_init(&c->up, SHIM_BUF) == -1 ||
	    shim_buf_init(&c->down, SHIM_BUF) == -1) {
		if (c != NULL) {
			buf_free(&c->in);
			buf_free(&c->up);
		}
		free(c);
		close(fd);
		return;
	}
	c->shim = s;
	c->cfd = fd;
	c->peer = *peer;
	c->authed = s->cfg.token == NULL;
	c->afd = -1;
	c->pr = c->pw = -1;
	c->mode = SHIM_HEAD;
	ev_io_init(&c->crd, shim_crd_cb, fd, EV_READ);
	ev_io_init(&c->cwr, shim_cwr_cb, fd, EV_WRITE);
	/* The first head has less time: it is all a stranger can send. */
	ev_timer_init(&c->timer, shim_timer_cb, SHIM_FIRST_TIMEOUT,
	    SHIM_HEAD_TIMEOUT);
	ev_timer_start(s->loop, &c->timer);
	if ((c->next = s->conns) != NULL)
		c->next->prev = c;
	s->conns = c;
	s->nconns++;
	if (!c->authed)
		s->npending++;
	shim_conn_update(c);
}

void
shim_conn_free(struct shim_conn *c)
{
	struct shim	*s = c->shim;

	ev_io_stop(s->loop, &c->crd);
	ev_io_stop(s->loop, &c->cwr);
	ev_timer_stop(s->loop, &c->timer);
	close(c->cfd);
	if (c->afd != -1) {
		ev_io_stop(s->loop, &c->ard);
		ev_io_stop(s->loop, &c->awr);
		close(c->afd);
	}
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	s->nconns--;
	if (!c->authed)
		s->npending--;
	if (c->pr != -1) {
		close(c->pr);
		close(c->pw);
	}
	buf_free(&c->in);
	buf_free(&c->up);
	buf_free(&c->down);
	free(c->rfree);
	free(c);
}

/* The agent's bytes not yet written to the client. */
static size_t
shim_down_len(const struct shim_conn *c)
{
	return buf_avail(&c->down) + c->plen;
}

/*
 * Whether the agent's next bytes go through the pipe: not while the
 * shim looks at them (an upgrade's answer) or adds its own after them
 * (a refusal), and not past bytes still in `down` (the pipe is written
 * first).
 */
static bool
shim_to_pipe(const struct shim_conn *c)
{
	return !c->nopipe && buf_avail(&c->down) == 0 && (c->mode == SHIM_HEAD ||
	    c->mode == SHIM_BODY || c->mode == SHIM_SPLICE);
}

/* shim_to_pipe, the pipe made the first time (if it cannot be: no). */
static bool
shim_pipe_ok(struct shim_conn *c)
{
	int	fds[2], n;

	if (!shim_to_pipe(c))
		return false;
	if (c->pr != -1)
		return true;
	if (pipe2(fds, O_NONBLOCK | O_CLOEXEC) == -1) {
		c->nopipe = true;
		return false;
	}
	/* A port's download is the proxy's bulk: a larger pipe, fewer turns. */
	n = fcntl(fds[1], F_SETPIPE_SZ, c->target != 0 ? SHIM_PROXY_PIPE :
	    SHIM_BUF);
	if (n == -1)
		n = fcntl(fds[1], F_GETPIPE_SZ);
	if (n <= 0) {
		close(fds[0]);
		close(fds[1]);
		c->nopipe = true;
		return false;
	}
	c->pr = fds[0];
	c->pw = fds[1];
	c->pcap = (size_t)n;
	return true;
}

static void
shim_io_set(struct shim_conn *c, ev_io *w, bool want)
{
	if (want && !ev_is_active(w))
		ev_io_start(c->shim->loop, w);
	else if (!want && ev_is_active(w))
		ev_io_stop(c->shim->loop, w);
}

/*
 * Which of the four directions to watch, from the buffers and the mode;
 * also where the connection ends: the agent gone and its bytes delivered,
 * or the client gone (nobody is left to read a reply).
 */
static void
shim_conn_update(struct shim_conn *c)
{
	bool	reading;

	/*
	 * The old target said all it had: the held head goes to the new
	 * (or is refused: then its answer is due at once, below).
	 */
	if (c->switching && c->a_eof && shim_down_len(c) == 0) {
		shim_upstream_close(c);
		shim_process(c);
	}
	if (c->mode == SHIM_DENY && c->a_eof && shim_down_len(c) == 0)
		shim_reply(c);
	if (shim_down_len(c) == 0 && c->mode != SHIM_DENY &&
	    (c->a_eof || (c->afd == -1 && (c->c_eof ||
	    c->mode == SHIM_CLOSING))))
		goto gone;
	/* The client's half-close travels on once its bytes did. */
	if (c->afd != -1 && (c->c_eof || c->mode == SHIM_DENY ||
	    c->switching) &&
	    buf_avail(&c->up) == 0 && !c->a_shut) {
		(void)shutdown(c->afd, SHUT_WR);
		c->a_shut = true;
	}

	reading = !c->c_eof;
	switch (c->mode) {
	case SHIM_HEAD:
	case SHIM_BODY:
		reading = reading && c->in.cap - buf_avail(&c->in) > 0;
		break;
	case SHIM_SPLICE:
		reading = reading && shim_room(&c->up) > 0;
		break;
	default:
		reading = false;
	}
	shim_io_set(c, &c->crd, reading);
	shim_io_set(c, &c->cwr, shim_down_len(c) > 0);
	if (c->afd != -1) {
		shim_io_set(c, &c->ard, !c->a_eof && !c->connecting &&
		    (shim_to_pipe(c) && c->pr != -1 ?
		    !c->pfull && c->plen < c->pcap :
		    shim_room(&c->down) > 0));
		shim_io_set(c, &c->awr, buf_avail(&c->up) > 0);
	}
	return;
gone:
	shim_conn_free(c);
}

/*
 * The agent's socket, connected.  A unix socket connects at once or not
 * at all (EAGAIN: its backlog is full), so a refusal is known here.
 */
static int
shim_connect(struct shim_conn *c)
{
	struct sockaddr_un	sun;
	int			fd, saved;

	if (c->target != 0)
		return shim_proxy_connect(c, false);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(c->shim->cfg.socket) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, c->shim->cfg.socket);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	c->afd = fd;
	ev_io_init(&c->ard, shim_ard_cb, fd, EV_READ);
	ev_io_init(&c->awr, shim_awr_cb, fd, EV_WRITE);
	return 0;
}

/*
 * The upstream closed, to open another (a proxied connection's next
 * target, or [::1] after 127.0.0.1 refused): its watchers were set up
 * for the old fd.
 */
static void
shim_upstream_close(struct shim_conn *c)
{
	ev_io_stop(c->shim->loop, &c->ard);
	ev_io_stop(c->shim->loop, &c->awr);
	close(c->afd);
	c->afd = -1;
	c->a_eof = c->a_shut = c->switching = c->connecting = false;
}

void
shim_watch_upstream(struct shim_conn *c, int fd)
{
	c->afd = fd;
	ev_io_init(&c->ard, shim_ard_cb, fd, EV_READ);
	ev_io_init(&c->awr, shim_awr_cb, fd, EV_WRITE);
}

/*
 * The shim answers a request itself (401, 502, a bad head), and that is
 * the connection's last answer.  Replies of the agent to earlier requests
 * come first: the agent's side is shut, its bytes drain, then this.
 */
void
shim_refuse(struct shim_conn *c, int status, const char *code,
    const char *msg, const char *extra)
{
	c->rstatus = status;
	c->rcode = code;
	c->rmsg = msg;
	c->rextra = extra;
	c->rhead = shimhead_is_head(&c->req);
	c->mode = SHIM_DENY;
	buf_reset(&c->in);
	if (c->afd == -1)
		c->a_eof = true;
	else if (c->target != 0)
		ev_timer_again(c->shim->loop, &c->timer);	/* see the cb */
}

static void
shim_reply(struct shim_conn *c)
{
	const char	*extra = c->rextra != NULL ? c->rextra : "";
	char		 body[256], head[512];
	int		 bn, hn;

	/* A redirect (the proxy's login) has no code: no body either. */
	bn = c->rcode == NULL ? 0 : snprintf(body, sizeof(body),
	    "{\"error\":\"%s\",\"code\":\"%s\"}", c->rmsg, c->rcode);
	hn = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n"
	    "%sContent-Length: %d\r\nConnection: close\r\n", c->rstatus,
	    c->rstatus == 401 ? "Unauthorized" :
	    c->rstatus == 502 ? "Bad Gateway" :
	    c->rstatus == 431 ? "Request Header Fields Too Large" :
	    c->rstatus == 403 ? "Forbidden" :
	    c->rstatus == 302 ? "Found" :
	    "Bad Request", bn > 0 ? "Content-Type: application/json\r\n" : "",
	    bn);
	/* The extra lines (a redirect's) may be longer than head holds. */
	if (shim_room(&c->down) >= (size_t)hn + strlen(extra) + 2 + bn) {
		(void)shim_add(&c->down, head, hn);
		(void)shim_add(&c->down, extra, strlen(extra));
		(void)shim_add(&c->down, "\r\n", 2);
		/* A reply to HEAD has the head only (its length says the body's). */
		if (!c->rhead)
			(void)shim_add(&c->down, body, bn);
	}
	c->mode = SHIM_CLOSING;
}

/* ------------------------------------------------------------------ */
/* Request heads                                                       */

/*
 * A whole head of n bytes at the front of `in`: check it, strip it,
 * queue it.  0 when forwarded (or answered), -1 when it must wait for
 * room in `up`.
 */
static int
shim_head(struct shim_conn *c, size_t n)
{
	const struct shim_config *cfg = &c->shim->cfg;
	struct shim_route r;
	enum shimhead_verdict v;
	size_t		 k = buf_avail(&c->up);

	shim_route(cfg, buf_head(&c->in), n, &r);
	/*
	 * A connection's upstream is one target at a time: a request for
	 * another waits until the old one has answered and closed (its
	 * write side shut: it ends once its replies are out).
	 */
	if (c->afd != -1 && r.port != c->target) {
		c->switching = true;
		return -1;
	}
	if (shim_room(&c->up) < n + (r.port != 0 ? SHIM_PROXY_EXTRA : 0))
		return -1;
	if (r.port != 0)
		v = shim_proxy_head(c, &r, n);
	else
		v = shimhead_check(&c->req, cfg->token, cfg->token_len,
		    buf_head(&c->in), n, &c->up);
	switch (v) {
	case SHIMHEAD_FORWARD:
		break;
	case SHIMHEAD_MALFORMED:
		shim_refuse(c, 400, "bad_request", "malformed request head",
		    NULL);
		return 0;
	case SHIMHEAD_VERSION:
		shim_refuse(c, 400, "bad_request",
		    "unsupported HTTP version: only HTTP/1.0 and 1.1", NULL);
		return 0;
	case SHIMHEAD_DENIED:
		if (c->mode == SHIM_DENY)
			return 0;	/* the proxy refused it already */
		shim_refuse(c, 401, "unauthorized",
		    "missing or invalid bearer token",
		    "WWW-Authenticate: Bearer\r\n");
		return 0;
	}
	buf_consume(&c->in, n);
	if (c->req.authed && !c->authed) {
		c->authed = true;
		c->shim->npending--;
	}
	if (c->afd == -1) {
		c->target = r.port;
		if (shim_connect(c) == -1) {
			c->up.len = c->up.off + k;	/* nothing of it goes up */
			shim_unavailable(c);
			return 0;
		}
	}
	if (c->req.upgrade)
		c->mode = SHIM_UPGRADE;
	else
		c->mode = c->req.done ? SHIM_HEAD : SHIM_BODY;
	if (c->mode == SHIM_HEAD)
		ev_timer_again(c->shim->loop, &c->timer);
	else
		ev_timer_stop(c->shim->loop, &c->timer);
	return 0;
}

/* The upstream cannot be reached: the request's answer is the shim's. */
static void
shim_unavailable(struct shim_conn *c)
{
	if (c->target != 0) {
		shim_refuse(c, 502, "port_closed",
		    "nothing listens on that port", NULL);
		return;
	}
	log_warn("event=agent_unavailable socket=%s", c->shim->cfg.socket);
	shim_refuse(c, 502, "agent_unavailable", "the agent does not answer",
	    NULL);
}

/* Body bytes at the front of `in`, up to the message's end, go up. */
static void
shim_body(struct shim_conn *c)
{
	size_t	n, k;

	n = buf_avail(&c->in) < shim_room(&c->up) ? buf_avail(&c->in) :
	    shim_room(&c->up);
	if (n == 0)
		return;
	k = shimhead_body(&c->req, buf_head(&c->in), n);
	if (c->req.done) {
		c->mode = SHIM_HEAD;
		ev_timer_again(c->shim->loop, &c->timer);
	} else if (k != n) {
		/* Bad framing: the agent gets what was sound, then EOF. */
		c->mode = SHIM_CLOSING;
		c->c_eof = true;
		c->in.len = c->in.off + k;
	}
	(void)shim_add(&c->up, buf_head(&c->in), k);
	buf_consume(&c->in, k);
}

/*
 * A head longer than HTTP_MAX_HEAD.  Its method is parsed all the same:
 * a HEAD's refusal has no body, as for any other refusal.
 */
static void
shim_too_large(struct shim_conn *c)
{
	shimhead_too_large(&c->req, buf_head(&c->in), HTTP_MAX_HEAD);
	shim_refuse(c, 431, "head_too_large", "request head too large", NULL);
}

/* Everything `in` holds that can move now. */
static void
shim_process(struct shim_conn *c)
{
	size_t	n, before;

	for (;;) {
		before = buf_avail(&c->in);
		if (before == 0)
			break;
		if (c->mode == SHIM_HEAD) {
			/* Empty lines before a request line are skipped. */
			buf_consume(&c->in, shimhead_blank(buf_head(&c->in),
			    buf_avail(&c->in)));
			if (buf_avail(&c->in) == 0)
				break;
			n = shimhead_end(buf_head(&c->in), buf_avail(&c->in) >
			    HTTP_MAX_HEAD ? HTTP_MAX_HEAD : buf_avail(&c->in));
			if (n == 0) {
				if (buf_avail(&c->in) >= HTTP_MAX_HEAD)
					shim_too_large(c);
				break;
			}
			if (shim_head(c, n) == -1)
				break;
		} else if (c->mode == SHIM_BODY)
			shim_body(c);
		else
			break;
		if (buf_avail(&c->in) == before && c->mode != SHIM_HEAD)
			break;
	}
	if (c->mode == SHIM_CLOSING)
		buf_reset(&c->in);
}

/* ------------------------------------------------------------------ */
/* I/O callbacks                                                       */

static void
shim_crd_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct shim_conn	*c = container_of(w, struct shim_conn, crd);
	struct buf		*b;
	ssize_t			 n;

	(void)loop;
	(void)revents;
	b = c->mode == SHIM_SPLICE ? &c->up : &c->in;
	n = shim_read(c->cfd, b);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		n = 0;	/* reset: as good as gone */
	}
	if (n == 0) {
		c->c_eof = true;
		/* A port's server is not trusted to end: the timer counts. */
		if (c->target != 0)
			ev_timer_again(c->shim->loop, &c->timer);
		if (c->mode != SHIM_SPLICE) {
			/* Nothing more is coming that could use a reply. */
			if (c->mode == SHIM_HEAD && buf_avail(&c->in) > 0)
				buf_reset(&c->in);
		}
	} else
		b->len += n;
	if (c->mode != SHIM_SPLICE)
		shim_process(c);
	shim_conn_update(c);
}

static void
shim_cwr_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct shim_conn	*c = container_of(w, struct shim_conn, cwr);
	bool			 piped = c->plen > 0;
	ssize_t			 n;

	(void)loop;
	(void)revents;
	/* The pipe's bytes came first. */
	if (piped)
		n = splice(c->pr, NULL, c->cfd, NULL, c->plen,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	else
		n = write(c->cfd, buf_head(&c->down), buf_avail(&c->down));
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		shim_conn_free(c);	/* the client is gone */
		return;
	}
	if (piped) {
		c->plen -= n;
		c->pfull = false;
	} else
		buf_consume(&c->down, n);
	shim_conn_update(c);
}

/*
 * After an upgrade request, the agent's first bytes say whether it
 * switched: a 101 splices the sockets; anything else is the last reply
 * on this connection (what the client sent after the upgrade request
 * cannot be read as HTTP any more).
 */
static void
shim_upgraded(struct shim_conn *c)
{
	static const char	ok[] = "HTTP/1.1 101";
	size_t			n = buf_avail(&c->down) < sizeof(ok) - 1 ?
				    buf_avail(&c->down) : sizeof(ok) - 1;

	if (memcmp(buf_head(&c->down), ok, n) != 0) {
		c->mode = SHIM_CLOSING;
		buf_reset(&c->in);
		if (!c->a_shut) {
			(void)shutdown(c->afd, SHUT_WR);
			c->a_shut = true;
		}
		return;
	}
	if (n < sizeof(ok) - 1)
		return;
	c->mode = SHIM_SPLICE;
	(void)shim_add(&c->up, buf_head(&c->in), buf_avail(&c->in));
	buf_reset(&c->in);
}

static void
shim_ard_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct shim_conn	*c = container_of(w, struct shim_conn, ard);
	ssize_t			 n;

	(void)loop;
	(void)revents;
	if (!shim_pipe_ok(c))
		n = shim_read(c->afd, &c->down);
	else if ((n = splice(c->afd, NULL, c->pw, NULL, c->pcap - c->plen,
	    SPLICE_F_MOVE | SPLICE_F_NONBLOCK)) > 0) {
		c->plen += n;
		c->eof_ticks = 0;	/* it answers: see shim_timer_cb */
		shim_conn_update(c);
		return;
	} else if (n == -1 && errno == EAGAIN && c->plen > 0) {
		/* Full, not empty: the bytes in it say which. */
		c->pfull = true;
		shim_conn_update(c);
		return;
	} else if (n == -1 && errno == EINVAL && c->plen == 0) {
		/* A socket the kernel cannot splice from: read it. */
		c->nopipe = true;
		n = shim_read(c->afd, &c->down);
	}
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		n = 0;
	}
	if (n == 0)
		c->a_eof = true;
	else {
		c->down.len += n;
		c->eof_ticks = 0;
		if (c->mode == SHIM_UPGRADE)
			shim_upgraded(c);
	}
	shim_conn_update(c);
}

/*
 * A port's connect ended: 0 connected (the bytes go); else the
 * connection moved on (127.0.0.1 refused: [::1] is tried; that too: the
 * request is answered 502), or is still in progress.
 */
static int
shim_awr_connected(struct shim_conn *c)
{
	int	r = shim_proxy_connected(c);

	if (r >= 0)
		return r;
	shim_upstream_close(c);
	if (!c->v6 && shim_proxy_connect(c, true) == 0) {
		shim_conn_update(c);
		return 1;
	}
	/* Nothing of the request can go: what is in `up` is dropped. */
	buf_reset(&c->up);
	shim_unavailable(c);
	shim_conn_update(c);
	return 1;
}

static void
shim_awr_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct shim_conn	*c = container_of(w, struct shim_conn, awr);
	ssize_t			 n;

	(void)loop;
	(void)revents;
	if (c->connecting && shim_awr_connected(c) != 0)
		return;
	n = write(c->afd, buf_head(&c->up), buf_avail(&c->up));
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		/* The agent stopped reading for good: it will close. */
		buf_reset(&c->up);
		c->c_eof = c->a_shut = true;
		shim_conn_update(c);
		return;
	}
	buf_consume(&c->up, n);
	/* Room again in `up`: heads or body bytes held in `in` move. */
	shim_process(c);
	shim_conn_update(c);
}

/*
 * A client that is in the middle of a head for too long, or that keeps
 * a connection with no agent behind it (nothing authorised yet), goes.
 */
static void
shim_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct shim_conn	*c = container_of(w, struct shim_conn, timer);

	(void)loop;
	(void)revents;
	if (c->mode == SHIM_HEAD && (buf_avail(&c->in) > 0 || c->afd == -1)) {
		shim_conn_free(c);
		return;
	}
	/*
	 * A port's server may never answer nor close: once the client
	 * said it sends no more, or the shim waits for the server's end to
	 * send its own answer, a server silent for SHIM_PROXY_EOF_WAIT
	 * (counted in turns of this timer) loses the connection.
	 */
	if (c->target != 0 && (c->c_eof || c->mode == SHIM_DENY) &&
	    ++c->eof_ticks * SHIM_HEAD_TIMEOUT >= SHIM_PROXY_EOF_WAIT)
		shim_conn_free(c);
}
