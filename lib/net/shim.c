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
 */
#include <sys/socket.h>
#include <sys/un.h>

#include <fcntl.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

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
#include "shimhead.h"

enum shim_mode {
	SHIM_HEAD,	/* collecting a request head in `in` */
	SHIM_BODY,	/* forwarding a request body up to its end */
	SHIM_UPGRADE,	/* an upgrade forwarded: waiting for the agent's answer */
	SHIM_SPLICE,	/* after a 101: raw bytes both ways */
	SHIM_DENY,	/* a request refused: the agent's replies drain, then 401 */
	SHIM_CLOSING,	/* nothing more is read from the client; down drains */
};

struct shim_conn {
	struct shim		*shim;
	struct shim_conn	*next, *prev;
	int			 cfd, afd;	/* client, agent (-1: none yet) */
	struct sockaddr_storage	 peer;		/* the client's address */
	bool			 authed;	/* a request with the token seen */
	ev_io			 crd, cwr, ard, awr;
	ev_timer		 timer;		/* a head taking too long */
	enum shim_mode		 mode;
	struct shimhead		 req;		/* the request in progress */
	bool			 c_eof, a_eof;	/* that side sends no more */
	bool			 a_shut;	/* shutdown(afd, SHUT_WR) done */
	/* SHIM_DENY: the shim's own answer, once the agent's are out. */
	int			 rstatus;
	const char		*rcode, *rmsg, *rextra;
	bool			 rhead;		/* the refused request is HEAD */
	struct buf		 in, up, down;	/* fixed sizes: never grown */
	/*
	 * The agent's bytes moved by the kernel, never copied: a pipe,
	 * made at need.  Its slots may fill before its bytes do (a slot
	 * holds what one write gave, a chunk's size line too): a refusal
	 * with bytes in it stops the reading until some went out.
	 */
	int			 pr, pw;	/* -1: none (yet) */
	size_t			 plen, pcap;	/* bytes in it, its size */
	bool			 pfull;		/* it refused more */
	bool			 nopipe;	/* none can be used: `down` */
};

struct shim {
	struct ev_loop		*loop;
	int			 fd;
	ev_io			 accept;
	ev_timer		 backoff;
	struct shim_config	 cfg;
	struct shim_conn	*conns;		/* the newest first */
	int			 nconns;
	int			 npending;	/* of them, not authed yet */
};

static void	shim_accept_cb(struct ev_loop *, ev_io *, int);
static void	shim_backoff_cb(struct ev_loop *, ev_timer *, int);
static void	shim_conn_new(struct shim *, int,
		    const struct sockaddr_storage *);
static void	shim_conn_free(struct shim_conn *);
static void	shim_conn_update(struct shim_conn *);
static void	shim_process(struct shim_conn *);
static int	shim_head(struct shim_conn *, size_t);
static void	shim_too_large(struct shim_conn *);
static void	shim_refuse(struct shim_conn *, int, const char *,
		    const char *, const char *);
static void	shim_reply(struct shim_conn *);
static void	shim_crd_cb(struct ev_loop *, ev_io *, int);
static void	shim_cwr_cb(struct ev_loop *, ev_io *, int);
static void	shim_ard_cb(struct ev_loop *, ev_io *, int);
static void	shim_awr_cb(struct ev_loop *, ev_io *, int);
static void	shim_timer_cb(struct ev_loop *, ev_timer *, int);

/*
 * Room at the end of b, moving what is left to the front when that
 * helps: asking buf for no more than its capacity lacks moves the bytes
 * and never grows it.
 */
static size_t
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
static int
shim_buf_init(struct buf *b, size_t n)
{
	if ((b->data = malloc(n)) == NULL)
		return -1;
	b->cap = n;
	b->off = b->len = 0;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Addresses and the listener                                          */

int
shim_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in	*in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*in6 = (struct sockaddr_in6 *)ss;
	char			 host[INET6_ADDRSTRLEN + 2], *end;
	const char		*colon;
	unsigned long		 port;
	size_t			 n;

	memset(ss, 0, sizeof(*ss));
	if ((colon = strrchr(s, ':')) == NULL || colon == s)
		goto bad;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || end == colon + 1 || port > 65535)
		goto bad;
	n = colon - s;
	if (s[0] == '[') {
		if (n < 3 || s[n - 1] != ']' || n - 2 >= sizeof(host))
			goto bad;
		memcpy(host, s + 1, n - 2);
		host[n - 2] = '\0';
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			goto bad;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return 0;
	}
	if (n >= sizeof(host))
		goto bad;
	memcpy(host, s, n);
	host[n] = '\0';
	if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
		goto bad;
	in4->sin_family = AF_INET;
	in4->sin_port = htons(port);
	*len = sizeof(*in4);
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int
shim_bind(const struct sockaddr_storage *ss, socklen_t len)
{
	int	fd, on = 1, saved;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (ss->ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on,
		    sizeof(on));
	if (bind(fd, (const struct sockaddr *)ss, len) == -1 ||
	    listen(fd, HTTP_BACKLOG) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

struct shim *
shim_new(struct ev_loop *loop, int fd, const struct shim_config *cfg)
{
	struct shim	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->loop = loop;
	s->fd = fd;
	s->cfg = *cfg;
	ev_io_init(&s->accept, shim_accept_cb, fd, EV_READ);
	ev_io_start(loop, &s->accept);
	ev_timer_init(&s->backoff, shim_backoff_cb, HTTP_ACCEPT_BACKOFF, 0.);
	return s;
}

int
shim_nconns(const struct shim *s)
{
	return s->nconns;
}

void
shim_free(struct shim *s)
{
	if (s == NULL)
		return;
	while (s->conns != NULL)
		shim_conn_free(s->conns);
	ev_io_stop(s->loop, &s->accept);
	ev_timer_stop(s->loop, &s->backoff);
	close(s->fd);
	free(s);
}

static bool
shim_same_peer(const struct sockaddr_storage *a,
    const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
		    &((const struct sockaddr_in *)b)->sin_addr,
		    sizeof(struct in_addr)) == 0;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		    &((const struct sockaddr_in6 *)b)->sin6_addr,
		    sizeof(struct in6_addr)) == 0;
	return false;
}

/*
 * Room for a new client from peer.  Connections with no authorised
 * request yet are the ones that give way: the oldest of the peer's own
 * when it has SHIM_PEER_PENDING of them, else the oldest of all when
 * they hold their share of the cap or the cap is reached.  So a client
 * that sends its token at once always finds a slot unless authorised
 * connections fill them all, and one address cannot crowd out others.
 * false: every slot is authorised, the new one is refused.
 */
static bool
shim_make_room(struct shim *s, const struct sockaddr_storage *peer)
{
	struct shim_conn	*c, *oldest = NULL, *mine = NULL;
	int			 n = 0;

	for (c = s->conns; c != NULL; c = c->next) {
		if (c->authed)
			continue;
		oldest = c;
		if (shim_same_peer(&c->peer, peer)) {
			mine = c;
			n++;
		}
	}
	if (n >= SHIM_PEER_PENDING)
		oldest = mine;
	else if (s->npending < s->cfg.maxconns / SHIM_PENDING_SHARE &&
	    s->nconns < s->cfg.maxconns)
		return true;
	if (oldest == NULL)
		return false;
	log_debug("event=pending_evicted fd=%d", oldest->cfd);
	shim_conn_free(oldest);
	return true;
}

static void
shim_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct shim		*s = container_of(w, struct shim, accept);
	struct sockaddr_storage	 peer;
	socklen_t		 plen;
	int			 fd, on = 1, n;

	(void)revents;
	/*
	 * A few at a time: the heads already sent on those accepted are
	 * read (and authorise them) before more arrive that would make
	 * them give way.  The listener is level-triggered: the rest wait
	 * for the next turn.
	 */
	for (n = 0; n < SHIM_ACCEPT_BATCH; n++) {
		plen = sizeof(peer);
		memset(&peer, 0, sizeof(peer));
		fd = accept4(s->fd, (struct sockaddr *)&peer, &plen,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* Level-triggered: pause or we would spin. */
				log_warn("event=accept_failed");
				ev_io_stop(loop, &s->accept);
				ev_timer_start(loop, &s->backoff);
			}
			return;
		}
		if (!shim_make_room(s, &peer)) {
			close(fd);
			continue;
		}
		/* SSE events and small replies must not wait for Nagle. */
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
		shim_conn_new(s, fd, &peer);
	}
}

static void
shim_backoff_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct shim	*s = container_of(w, struct shim, backoff);

	(void)revents;
	ev_io_start(loop, &s->accept);
}

/* ------------------------------------------------------------------ */
/* Connections                                                         */

static void
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

static void
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
	n = fcntl(fds[1], F_SETPIPE_SZ, SHIM_BUF);
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

	if (c->mode == SHIM_DENY && c->a_eof && shim_down_len(c) == 0)
		shim_reply(c);
	if (shim_down_len(c) == 0 && c->mode != SHIM_DENY &&
	    (c->a_eof || (c->afd == -1 && (c->c_eof ||
	    c->mode == SHIM_CLOSING))))
		goto gone;
	/* The client's half-close travels on once its bytes did. */
	if (c->afd != -1 && (c->c_eof || c->mode == SHIM_DENY) &&
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
		shim_io_set(c, &c->ard, !c->a_eof &&
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
 * The shim answers a request itself (401, 502, a bad head), and that is
 * the connection's last answer.  Replies of the agent to earlier requests
 * come first: the agent's side is shut, its bytes drain, then this.
 */
static void
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
}

static void
shim_reply(struct shim_conn *c)
{
	char	body[256], head[512];
	int	bn, hn;

	bn = snprintf(body, sizeof(body), "{\"error\":\"%s\",\"code\":\"%s\"}",
	    c->rmsg, c->rcode);
	hn = snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\n"
	    "Content-Type: application/json\r\nContent-Length: %d\r\n"
	    "%sConnection: close\r\n\r\n", c->rstatus,
	    c->rstatus == 401 ? "Unauthorized" :
	    c->rstatus == 502 ? "Bad Gateway" :
	    c->rstatus == 431 ? "Request Header Fields Too Large" :
	    "Bad Request", bn, c->rextra != NULL ? c->rextra : "");
	(void)shim_add(&c->down, head, hn);
	/* A reply to HEAD has the head only (its length says the body's). */
	if (!c->rhead)
		(void)shim_add(&c->down, body, bn);
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
	size_t		 k = buf_avail(&c->up);

	if (shim_room(&c->up) < n)
		return -1;
	switch (shimhead_check(&c->req, cfg->token, cfg->token_len,
	    buf_head(&c->in), n, &c->up)) {
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
	if (c->afd == -1 && shim_connect(c) == -1) {
		c->up.len = c->up.off + k;	/* nothing of it goes up */
		log_warn("event=agent_unavailable socket=%s",
		    c->shim->cfg.socket);
		shim_refuse(c, 502, "agent_unavailable",
		    "the agent does not answer", NULL);
		return 0;
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
		if (c->mode == SHIM_UPGRADE)
			shim_upgraded(c);
	}
	shim_conn_update(c);
}

static void
shim_awr_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct shim_conn	*c = container_of(w, struct shim_conn, awr);
	ssize_t			 n;

	(void)loop;
	(void)revents;
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
}
