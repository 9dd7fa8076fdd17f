/*
 * http.c: the HTTP/1.1 server on the agent's unix socket.
 *
 * Owns the listening socket and the connection limit, every client
 * connection (its buffers, watchers and timeouts), request parsing and
 * routing, the framing of responses (complete, chunked, SSE) and the
 * hand-over of a socket to another protocol.  It knows HTTP, not the API:
 * a namespace such as the bridge's is the caller's hook (http_server_map).
 *
 * One struct http_conn per client.  Input is parsed with http_parser; when
 * a message is complete the parser is paused, so pipelined requests wait
 * in the input buffer until the current response is complete.  Output is
 * queued in a per-connection buffer and written when the socket is
 * writable.  Connections are freed from a prepare watcher, never from inside
 * a callback that may still hold a pointer to them.
 */
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <http_parser.h>

#include "base/codec.h"
#include "base/log.h"
#include "base/util.h"
#include "http.h"

struct http_server {
	ev_io			 io;
	ev_timer		 backoff;	/* after EMFILE on accept */
	ev_idle			 kick;		/* no blocking before deferred work */
	struct ev_loop		*loop;
	int			 fd;
	int			 nconns;	/* in conns */
	int			 nupgraded;	/* handed over, not released */
	int			 maxconns;	/* bounds the two together */
	double			 stuck_timeout;	/* s: drop a reader after it */
	double			 head_timeout;	/* s: 408 a head not done by then */
	double			 pause_timeout;	/* s: 503 a body paused this long */
	const struct http_route	*routes;
	http_map_fn		 map;		/* a namespace, before routes */
	void			*ctx;		/* for handlers */
	struct http_conn	*conns;		/* list of open connections */
	unsigned int		 yielded;	/* ev_iteration + 1 of the last
						   yield (0: none yet) */
};

/* What the parser gathers of the request in progress. */
struct http_parse {
	struct buf		 url;
	struct buf		 hdrs;		/* name\0value\0 ... */
	struct buf		 pbuf;		/* captured params */
	int			 nhdr;
	int			 last_value;
	size_t			 head_bytes;
	bool			 too_large;
	bool			 bad_version;
	bool			 head_done;	/* later headers are trailers */
	bool			 keepalive;
};

struct http_conn {
	ev_io			 rio;
	ev_io			 wio;
	ev_timer		 timer;
	ev_prepare		 closer;	/* frees the connection, later */
	ev_prepare		 resume;	/* pipelined input, later */
	struct http_server	*srv;
	struct http_conn	*next, *prev;
	int			 fd;		/* -1 once handed over */
	http_parser		 parser;
	struct buf		 in;
	struct buf		 out;
	struct http_req		 req;
	struct http_parse	 ps;
	ev_tstamp		 last_io;	/* any I/O: the idle timeout */
	ev_tstamp		 last_out;	/* output moved: the stuck one */
	ev_tstamp		 head_at;	/* the current head began */
	ev_tstamp		 paused_at;	/* reading was paused */
	enum {
		HC_READ,	/* parsing a request */
		HC_BUSY,	/* handler owns the response */
		HC_STREAM,	/* a streamed response is being written */
		HC_UPGRADE,	/* a 101 is being written; the owner takes over */
		HC_CLOSING	/* write what is left, then close */
	}			 state;
	bool			 listed;	/* in srv->conns, counted */
	bool			 close_after;	/* no keep-alive */
	bool			 chunked_out;	/* stream uses chunked framing */
	size_t			 chunk_left;	/* of a chunk sent from a file */
	bool			 read_paused;
	bool			 in_head;	/* a head is begun, not complete */
	bool			 peer_eof;	/* the client sends no more */
	bool			 req_head;	/* current request is HEAD */
	bool			 req_http10;	/* current request is HTTP/1.0 */
	bool			 processing;	/* inside http_conn_process */
	bool			 dead;
	/* See http_conn_own. */
	void			*owner;
	void			(*on_drain)(struct http_conn *, void *);
	void			(*on_close)(struct http_conn *, void *);
};

static int	http_bind(const char *);
static void	http_accept_cb(struct ev_loop *, ev_io *, int);
static void	http_backoff_cb(struct ev_loop *, ev_timer *, int);
static void	http_kick(struct http_server *);
static void	http_kick_cb(struct ev_loop *, ev_idle *, int);
static void	http_refuse(int);
static size_t	http_conn_read_size(const struct http_conn *);
static void	http_read_cb(struct ev_loop *, ev_io *, int);
static void	http_write_cb(struct ev_loop *, ev_io *, int);
static void	http_timer_cb(struct ev_loop *, ev_timer *, int);
static void	http_closer_cb(struct ev_loop *, ev_prepare *, int);
static void	http_resume_cb(struct ev_loop *, ev_prepare *, int);
static void	http_conn_new(struct http_server *, int);
static ev_tstamp http_conn_tick(struct http_conn *);
static bool	http_conn_out_full(struct http_conn *);
static bool	http_conn_hung_up(struct http_conn *);
static void	http_conn_paused_tick(struct http_conn *, ev_tstamp);
static void	http_fail_request(struct http_conn *);
static void	http_conn_unlink(struct http_conn *);
static void	http_conn_close(struct ev_loop *, struct http_conn *);
static void	http_conn_watch(struct http_conn *);
static void	http_conn_eof(struct http_conn *);
static void	http_conn_disown(struct http_conn *);
static int	http_conn_flush(struct http_conn *);
static void	http_yield(struct http_server *);
static void	http_conn_process(struct http_conn *);
static void	http_dispatch(struct http_conn *);
static void	http_conn_eof_close(struct http_conn *);
static void	http_finish(struct http_conn *);
static void	http_req_reset(struct http_conn *);
static int	http_req_route(struct http_conn *);
static bool	http_req_streams(const struct http_req *);
static const struct http_route *http_route_in(struct http_conn *,
		    const struct http_route *, const char *,
		    const struct http_route **);
static int	http_route_match(const char *, const char *, struct http_conn *);
static int	http_head_checks(struct http_conn *, http_parser *);
static int	http_head(struct http_conn *, int, const char *, const char *,
		    long long, const char *);
static void	http_bad_request(struct http_conn *);

static int	on_message_begin(http_parser *);
static int	on_url(http_parser *, const char *, size_t);
static int	on_header_field(http_parser *, const char *, size_t);
static int	on_header_value(http_parser *, const char *, size_t);
static int	on_headers_complete(http_parser *);
static int	on_body(http_parser *, const char *, size_t);
static int	on_message_complete(http_parser *);

static const http_parser_settings http_settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

#define BUSY_BODY	"{\"error\":\"too many connections\",\"code\":\"busy\"}\n"
static const char busy_reply[] =
    "HTTP/1.1 503 Service Unavailable\r\n"
    "Content-Type: application/json\r\n"
    "Content-Length: %zu\r\n"
    "Connection: close\r\n\r\n"
    "%s";

/* ------------------------------------------------------------------ */
/* Listening */

/*
 * Bind the unix socket.  A socket file left by a dead agent is removed;
 * one that answers belongs to a live agent and is left alone (EADDRINUSE).
 * The modes are the protocol's: only the socket's owner may connect.
 */
static int
http_bind(const char *path)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	mode_t			 old;
	int			 fd, probe, saved;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, path);

	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			errno = EEXIST;
			return -1;
		}
		if ((probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
			return -1;
		if (connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			close(probe);
			errno = EADDRINUSE;
			return -1;
		}
		close(probe);
		if (unlink(path) == -1 && errno != ENOENT)
			return -1;
	}

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	/* The umask closes the window in which the socket would be 0755. */
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		umask(old);
		close(fd);
		errno = saved;
		return -1;
	}
	umask(old);
	if (chmod(path, 0600) == -1 || listen(fd, HTTP_BACKLOG) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

struct http_server *
http_server_new(struct ev_loop *loop, const char *path,
    const struct http_route *routes, void *ctx, int maxconns)
{
	struct http_server	*srv;
	int			 fd, saved;

	if ((fd = http_bind(path)) == -1)
		return NULL;
	if ((srv = calloc(1, sizeof(*srv))) == NULL) {
		saved = errno;
		close(fd);
		errno = saved;
		return NULL;
	}
	srv->loop = loop;
	srv->fd = fd;
	srv->routes = routes;
	srv->ctx = ctx;
	srv->maxconns = maxconns;
	srv->stuck_timeout = HTTP_STUCK_TIMEOUT;
	srv->head_timeout = HTTP_HEAD_TIMEOUT;
	srv->pause_timeout = HTTP_PAUSE_TIMEOUT;
	ev_io_init(&srv->io, http_accept_cb, fd, EV_READ);
	ev_io_start(loop, &srv->io);
	ev_timer_init(&srv->backoff, http_backoff_cb, HTTP_ACCEPT_BACKOFF, 0.);
	ev_idle_init(&srv->kick, http_kick_cb);
	return srv;
}

/*
 * Connections still open are closed at once (their owners told), dead
 * ones not yet freed with them.  A connection already handed over needs
 * nothing of the server any more.
 */
void
http_server_free(struct http_server *srv)
{
	struct http_conn	*c;

	if (srv == NULL)
		return;
	http_stop_accepting(srv);
	while ((c = srv->conns) != NULL) {
		c->dead = true;
		http_conn_close(srv->loop, c);
	}
	free(srv);
}

void
http_server_map(struct http_server *srv, http_map_fn fn)
{
	srv->map = fn;
}

/* Connections opened later use them (see http_conn_tick). */
void
http_server_timeouts(struct http_server *srv, double stuck, double head,
    double pause)
{
	srv->stuck_timeout = stuck;
	srv->head_timeout = head;
	srv->pause_timeout = pause;
}

int
http_server_nconns(const struct http_server *srv)
{
	return srv->nconns + srv->nupgraded;
}

void
http_server_release(struct http_server *srv)
{
	if (srv->nupgraded > 0)
		srv->nupgraded--;
}

void
http_stop_accepting(struct http_server *srv)
{
	ev_io_stop(srv->loop, &srv->io);
	ev_timer_stop(srv->loop, &srv->backoff);
	ev_idle_stop(srv->loop, &srv->kick);
	if (srv->fd != -1)
		close(srv->fd);
	srv->fd = -1;
}

void
http_close_all(struct http_server *srv)
{
	struct http_conn	*c, *next;

	for (c = srv->conns; c != NULL; c = next) {
		next = c->next;
		http_conn_abort(c);
	}
}

/* Who connected (SO_PEERCRED): one debug line per accepted client. */
static void
http_log_peer(int fd)
{
	struct ucred	cr;
	socklen_t	len = sizeof(cr);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == 0)
		log_debug("event=accepted fd=%d uid=%d gid=%d pid=%d", fd,
		    (int)cr.uid, (int)cr.gid, (int)cr.pid);
}

/*
 * --socket-group: the socket becomes 0660 root:gid.  It was bound 0600,
 * so it only ever widens, never is more open than asked.
 */
int
http_socket_share(const char *path, gid_t gid)
{
	if (chown(path, (uid_t)-1, gid) == -1 || chmod(path, 0660) == -1)
		return -1;
	return 0;
}

static void
http_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct http_server	*srv = container_of(w, struct http_server, io);
	int			 fd;

	(void)revents;
	for (;;) {
		fd = accept4(srv->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* Level-triggered: pause or we would spin. */
				log_warn("event=accept_failed");
				ev_io_stop(loop, &srv->io);
				ev_timer_set(&srv->backoff, HTTP_ACCEPT_BACKOFF,
				    0.);
				ev_timer_start(loop, &srv->backoff);
			}
			return;
		}
		if (http_server_nconns(srv) >= srv->maxconns) {
			http_refuse(fd);
			continue;
		}
		http_log_peer(fd);
		http_conn_new(srv, fd);
	}
}

/*
 * Deferred work runs from prepare watchers.  One started while the loop
 * is already in its prepare phase would wait for the next event; an idle
 * watcher keeps the loop from blocking until it has run (when events are
 * pending it does not matter that the idle one waits).
 */
static void
http_kick(struct http_server *srv)
{
	if (!ev_is_active(&srv->kick))
		ev_idle_start(srv->loop, &srv->kick);
}

static void
http_kick_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	(void)revents;
	ev_idle_stop(loop, w);
}

/* Over the connection limit: one 503 (best effort), then close. */
static void
http_refuse(int fd)
{
	/* The reply's two parts and the digits of the body's length. */
	char	reply[sizeof(busy_reply) + sizeof(BUSY_BODY) + 20];
	int	n;

	n = snprintf(reply, sizeof(reply), busy_reply, strlen(BUSY_BODY),
	    BUSY_BODY);
	if (n > 0 && (size_t)n < sizeof(reply))
		(void)!write(fd, reply, n);
	close(fd);
}

static void
http_backoff_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct http_server	*srv = container_of(w, struct http_server, backoff);

	(void)revents;
	if (srv->fd != -1)
		ev_io_start(loop, &srv->io);
}

/* ------------------------------------------------------------------ */
/* Connections */

static void
http_conn_new(struct http_server *srv, int fd)
{
	struct http_conn	*c;
	ev_tstamp		 tick;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		close(fd);
		return;
	}
	c->srv = srv;
	c->fd = fd;
	c->state = HC_READ;
	c->last_io = c->last_out = ev_now(srv->loop);
	http_parser_init(&c->parser, HTTP_REQUEST);
	c->parser.data = c;
	ev_io_init(&c->rio, http_read_cb, fd, EV_READ);
	ev_io_init(&c->wio, http_write_cb, fd, EV_WRITE);
	tick = http_conn_tick(c);
	ev_timer_init(&c->timer, http_timer_cb, tick, tick);
	ev_prepare_init(&c->closer, http_closer_cb);
	ev_prepare_init(&c->resume, http_resume_cb);
	ev_io_start(srv->loop, &c->rio);
	ev_timer_start(srv->loop, &c->timer);
	c->next = srv->conns;
	if (srv->conns != NULL)
		srv->conns->prev = c;
	srv->conns = c;
	srv->nconns++;
	c->listed = true;
}

void *
http_conn_ctx(struct http_conn *c)
{
	return c->srv->ctx;
}

struct http_server *
http_conn_server(struct http_conn *c)
{
	return c->srv;
}

bool
http_conn_dead(struct http_conn *c)
{
	return c->dead;
}

bool
http_conn_replied(struct http_conn *c)
{
	return c->dead || c->state != HC_BUSY;
}

/*
 * The timer's period: fine enough for the shortest timeout, and for
 * noticing soon that the client of a paused request hung up.
 */
static ev_tstamp
http_conn_tick(struct http_conn *c)
{
	struct http_server	*srv = c->srv;
	ev_tstamp		 t = c->read_paused ? HTTP_HUP_CHECK : HTTP_TICK;

	if (srv->stuck_timeout / 2 < t)
		t = srv->stuck_timeout / 2;
	if (srv->head_timeout / 2 < t)
		t = srv->head_timeout / 2;
	if (c->read_paused && srv->pause_timeout / 2 < t)
		t = srv->pause_timeout / 2;
	return t;
}

/*
 * Too much unsent output to take the next request: a client that
 * pipelines without reading would otherwise queue replies without bound.
 */
static bool
http_conn_out_full(struct http_conn *c)
{
	return buf_avail(&c->out) > HTTP_OUT_READ_MAX;
}

/*
 * Start or stop the read watcher for the connection's current needs.
 * Once an upgrade is answered nothing more is read: what the client
 * sends is the new protocol's, and stays in the socket for its owner.
 */
static void
http_conn_watch(struct http_conn *c)
{
	struct ev_loop	*loop = c->srv->loop;
	bool		 want;

	want = !c->dead && !c->read_paused && !c->peer_eof &&
	    c->state != HC_CLOSING && c->state != HC_UPGRADE &&
	    !http_conn_out_full(c) &&
	    buf_avail(&c->in) < HTTP_MAX_HEAD + HTTP_READ_CHUNK;
	if (want && !ev_is_active(&c->rio))
		ev_io_start(loop, &c->rio);
	else if (!want && ev_is_active(&c->rio))
		ev_io_stop(loop, &c->rio);
}

/*
 * Mark the connection dead and free it later, from a prepare watcher: the
 * caller (a handler, a follower) may still be on the stack with a pointer
 * to it.  A prepare watcher runs before the loop next waits, even while
 * events keep coming; an idle one would starve behind a process that
 * writes nonstop.
 */
void
http_conn_abort(struct http_conn *c)
{
	struct ev_loop	*loop = c->srv->loop;

	if (c->dead)
		return;
	c->dead = true;
	ev_io_stop(loop, &c->rio);
	ev_io_stop(loop, &c->wio);
	ev_timer_stop(loop, &c->timer);
	ev_prepare_stop(loop, &c->resume);
	ev_prepare_start(loop, &c->closer);
	http_kick(c->srv);
}

static void
http_closer_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct http_conn	*c = container_of(w, struct http_conn, closer);

	(void)revents;
	http_conn_close(loop, c);
}

/* Leave the server's list; the slot is free unless it was handed over. */
static void
http_conn_unlink(struct http_conn *c)
{
	struct http_server	*srv = c->srv;

	if (!c->listed)
		return;
	c->listed = false;
	if (c->prev != NULL)
		c->prev->next = c->next;
	else
		srv->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	srv->nconns--;
}

/*
 * Free a dead connection.  One handed over is no longer listed and has
 * no fd, so that this touches nothing of the server, which may be gone.
 */
static void
http_conn_close(struct ev_loop *loop, struct http_conn *c)
{
	http_conn_disown(c);
	http_conn_unlink(c);
	ev_io_stop(loop, &c->rio);
	ev_io_stop(loop, &c->wio);
	ev_timer_stop(loop, &c->timer);
	ev_prepare_stop(loop, &c->resume);
	ev_prepare_stop(loop, &c->closer);
	if (c->fd != -1)
		close(c->fd);
	http_req_reset(c);
	buf_free(&c->ps.url);
	buf_free(&c->ps.hdrs);
	buf_free(&c->req.body);
	buf_free(&c->ps.pbuf);
	buf_free(&c->in);
	buf_free(&c->out);
	free(c);
}

/*
 * How much one read of the socket asks for.  A body streamed to its
 * route (an upload) is read in larger pieces: each read and each wake-up
 * has a price of its own: a 1 GiB PUT read 64 KiB at a time ran at
 * 0.67-0.73x the speed of `cat > file && sync` on a machine whose
 * syscalls are dear, 256 KiB at a time 0.81-0.90x (README, "Numbers").
 * The larger buffer is given back when its request ends (http_finish).
 */
static size_t
http_conn_read_size(const struct http_conn *c)
{
	return c->ps.head_done && http_req_streams(&c->req) ?
	    HTTP_BODY_READ_CHUNK : HTTP_READ_CHUNK;
}

static void
http_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct http_conn	*c = container_of(w, struct http_conn, rio);
	char			*p;
	size_t			 size;
	ssize_t			 n;

	(void)loop;
	(void)revents;
	size = http_conn_read_size(c);
	if ((p = buf_reserve(&c->in, size)) == NULL) {
		http_conn_abort(c);
		return;
	}
	n = read(c->fd, p, size);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		http_conn_abort(c);
		return;
	}
	if (n == 0) {
		http_conn_eof(c);
		return;
	}
	c->in.len += n;
	c->last_io = ev_now(c->srv->loop);
	http_conn_process(c);
	if (!c->dead)
		http_conn_watch(c);
}

/*
 * Did the client close its socket?  A client that only shut down its
 * sending half (nc -N, socat) still waits for the reply in progress; one
 * that closed the socket does not.  For a unix stream socket the kernel
 * tells them apart: a peer's close shuts both directions (POLLHUP).
 */
static bool
http_conn_hung_up(struct http_conn *c)
{
	struct pollfd	pfd = { .fd = c->fd, .events = 0 };

	return poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLHUP | POLLERR));
}

/*
 * End of the client's input.  What it sent before is still answered, in
 * order: a client may shut its side once its requests are out.  A client
 * gone altogether reads nothing: it is dropped at once.
 */
static void
http_conn_eof(struct http_conn *c)
{
	if (http_conn_hung_up(c)) {
		http_conn_abort(c);
		return;
	}
	c->peer_eof = true;
	http_conn_watch(c);
	/*
	 * Whole requests may still wait in `in` (a resume not yet run):
	 * the parse answers them, then closes.
	 */
	if (c->state == HC_READ && buf_avail(&c->in) > 0) {
		ev_prepare_start(c->srv->loop, &c->resume);
		http_kick(c->srv);
	} else
		http_conn_eof_close(c);
}

/*
 * Reading again after the client's end: no whole request is left (a
 * queue too full to parse more is not there yet), so none will come.
 * The connection closes once what is queued is written.
 */
static void
http_conn_eof_close(struct http_conn *c)
{
	if (c->dead || !c->peer_eof || c->state != HC_READ ||
	    http_conn_out_full(c))
		return;
	c->state = HC_CLOSING;
	(void)http_conn_flush(c);
}

static void
http_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct http_conn	*c = container_of(w, struct http_conn, wio);

	(void)revents;
	if (http_conn_flush(c) == -1)
		return;
	/*
	 * Input held back by a full output queue is taken up again from the
	 * loop, as http_finish does, not from inside this callback.
	 */
	if (!http_conn_out_full(c)) {
		if (c->state == HC_READ && buf_avail(&c->in) > 0) {
			ev_prepare_start(loop, &c->resume);
			http_kick(c->srv);
		} else
			http_conn_eof_close(c);
		http_conn_watch(c);
	}
	if (buf_avail(&c->out) == 0 && c->on_drain != NULL &&
	    (c->state == HC_STREAM || c->state == HC_UPGRADE))
		c->on_drain(c, c->owner);
}

/* Write what the socket takes now; -1 if the connection died. */
static int
http_conn_flush(struct http_conn *c)
{
	ssize_t	n;

	if (c->dead)
		return -1;
	while (buf_avail(&c->out) > 0) {
		n = write(c->fd, buf_head(&c->out), buf_avail(&c->out));
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				/* The stuck clock runs from the first block. */
				if (!ev_is_active(&c->wio))
					c->last_out = ev_now(c->srv->loop);
				ev_io_start(c->srv->loop, &c->wio);
				return 0;
			}
			http_conn_abort(c);
			return -1;
		}
		buf_consume(&c->out, n);
		c->last_io = c->last_out = ev_now(c->srv->loop);
	}
	ev_io_stop(c->srv->loop, &c->wio);
	if (c->state == HC_CLOSING) {
		http_conn_abort(c);
		return -1;
	}
	/* A big reply (an exec's output) leaves no big buffer behind. */
	if (c->out.cap > HTTP_KEEP_BUF)
		buf_free(&c->out);
	return 0;
}

/*
 * Stuck is measured on output only: a client that keeps sending but never
 * reads is still stuck.  Idle counts any I/O.
 */
static void
http_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct http_conn	*c = container_of(w, struct http_conn, timer);
	struct http_server	*srv = c->srv;
	ev_tstamp		 now = ev_now(loop);

	(void)revents;
	if (buf_avail(&c->out) > 0 && now - c->last_out > srv->stuck_timeout) {
		log_info("event=conn_dropped reason=stuck pending=%zu",
		    buf_avail(&c->out));
		http_conn_abort(c);
	} else if (c->read_paused && c->state == HC_READ)
		http_conn_paused_tick(c, now);
	else if (c->state == HC_READ && c->in_head &&
	    now - c->head_at > srv->head_timeout) {
		log_info("event=conn_dropped reason=head_timeout");
		http_fail_request(c);
		http_reply_error(c, 408, "timeout", "request head not complete "
		    "after %g s", srv->head_timeout);
	} else if (c->state == HC_READ && c->owner == NULL &&
	    now - c->last_io > HTTP_IDLE_TIMEOUT)
		http_conn_abort(c);
}

/*
 * A paused request (a held stdin body) reads nothing, so neither the end
 * of its input nor an idle clock tells that the client is gone: ask the
 * socket.  A body its receiver has not taken for pause_timeout fails.
 */
static void
http_conn_paused_tick(struct http_conn *c, ev_tstamp now)
{
	if (http_conn_hung_up(c)) {
		log_info("event=conn_dropped reason=hangup_while_paused");
		http_conn_abort(c);
	} else if (now - c->paused_at > c->srv->pause_timeout) {
		log_info("event=conn_dropped reason=pause_timeout");
		http_fail_request(c);
		http_reply_error(c, 503, "busy", "request body not taken for "
		    "%g s; the rest of it was not read", c->srv->pause_timeout);
	}
}

/*
 * The connection stops serving its owner though the owner did not end
 * the response: the connection closed, or the request it owned (a body
 * being streamed) turned out malformed.  The owner is told, so that it
 * keeps no pointer.
 */
static void
http_conn_disown(struct http_conn *c)
{
	void	(*fn)(struct http_conn *, void *) = c->on_close;
	void	*owner = c->owner;

	c->owner = NULL;
	c->on_drain = NULL;
	c->on_close = NULL;
	if (fn != NULL)
		fn(c, owner);
}

void *
http_conn_owner(struct http_conn *c)
{
	return c->owner;
}

size_t
http_conn_pending(struct http_conn *c)
{
	return buf_avail(&c->out);
}

void
http_conn_own(struct http_conn *c, void *owner,
    void (*on_drain)(struct http_conn *, void *),
    void (*on_close)(struct http_conn *, void *))
{
	c->owner = owner;
	c->on_drain = on_drain;
	c->on_close = on_close;
}

/* The timer ticks faster while paused: see http_conn_tick. */
void
http_conn_pause_read(struct http_conn *c)
{
	if (c->read_paused || c->dead)
		return;
	c->read_paused = true;
	c->paused_at = ev_now(c->srv->loop);
	c->timer.repeat = http_conn_tick(c);
	ev_timer_again(c->srv->loop, &c->timer);
	http_conn_watch(c);
}

void
http_conn_resume_read(struct http_conn *c)
{
	if (!c->read_paused || c->dead)
		return;
	c->read_paused = false;
	c->timer.repeat = http_conn_tick(c);
	ev_timer_again(c->srv->loop, &c->timer);
	http_conn_watch(c);
}

/* ------------------------------------------------------------------ */
/* Switching protocols */

/*
 * The head is queued after whatever earlier replies are still unsent, so
 * that a full socket delays it but loses nothing; the new owner takes the
 * socket only once all of it is out (on_drain).
 */
int
http_reply_upgrade(struct http_conn *c, const char *protocol,
    const char *extra)
{
	if (c->dead || c->state != HC_BUSY) {
		errno = EINVAL;
		return -1;
	}
	if (buf_printf(&c->out, "HTTP/1.1 101 %s\r\nUpgrade: %s\r\n"
	    "Connection: Upgrade\r\n%s\r\n", http_status_text(101), protocol,
	    extra != NULL ? extra : "") == -1) {
		http_conn_abort(c);
		return -1;
	}
	c->state = HC_UPGRADE;
	http_conn_watch(c);
	if (http_conn_flush(c) == -1)
		return -1;
	return buf_avail(&c->out) > 0;
}

/*
 * The slot moves from the list's count to the upgraded one; the struct
 * is freed from the loop like any dead connection, without closing the
 * fd, which is no longer ours.
 */
int
http_conn_upgrade(struct http_conn *c, int *fd, struct buf *already_read)
{
	if (c->dead || (c->state != HC_BUSY && c->state != HC_UPGRADE)) {
		errno = EINVAL;
		return -1;
	}
	if (buf_avail(&c->out) > 0) {
		errno = EBUSY;
		return -1;
	}
	if (buf_avail(&c->in) > 0 && buf_add(already_read, buf_head(&c->in),
	    buf_avail(&c->in)) == -1)
		return -1;
	buf_reset(&c->in);
	*fd = c->fd;
	c->fd = -1;
	http_conn_unlink(c);
	c->srv->nupgraded++;
	c->owner = NULL;
	c->on_drain = NULL;
	c->on_close = NULL;
	http_conn_abort(c);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Parsing */

static void
http_req_reset(struct http_conn *c)
{
	struct http_req		*r = &c->req;
	struct http_parse	*ps = &c->ps;

	buf_reset(&ps->url);
	buf_reset(&ps->hdrs);
	if (r->body.cap > HTTP_KEEP_BUF)
		buf_free(&r->body);	/* a 1 MiB body is not kept */
	buf_reset(&r->body);
	r->method = NULL;
	r->path = r->query = NULL;
	r->nparam = 0;
	r->route = NULL;
	r->body_error = 0;
	r->streamed = 0;
	ps->nhdr = 0;
	ps->last_value = 0;
	ps->head_bytes = 0;
	ps->too_large = false;
	ps->bad_version = false;
	ps->head_done = false;
	ps->keepalive = false;
}

/*
 * Feed buffered input to the parser until a request is complete (then
 * dispatch it) or the input is used up.  Pipelined requests stay in the
 * buffer while a response is in progress.
 */
static void
http_conn_process(struct http_conn *c)
{
	size_t			 n;
	enum http_errno		 err;

	c->processing = true;
	while (!c->dead && c->state == HC_READ && buf_avail(&c->in) > 0 &&
	    !http_conn_out_full(c)) {
		n = http_parser_execute(&c->parser, &http_settings,
		    buf_head(&c->in), buf_avail(&c->in));
		buf_consume(&c->in, n);
		err = HTTP_PARSER_ERRNO(&c->parser);
		if (c->ps.too_large) {
			http_fail_request(c);
			http_reply_error(c, 413, "too_large",
			    "request head or body too large");
			break;
		}
		if (err == HPE_PAUSED) {
			http_parser_pause(&c->parser, 0);
			http_dispatch(c);
			continue;
		}
		if (err != HPE_OK) {
			http_bad_request(c);
			break;
		}
	}
	c->processing = false;
	http_conn_eof_close(c);
}

/*
 * The request in progress fails: the next reply is its error, and the
 * connection closes after it.  An owner of the body (a held stdin) loses
 * its request here.
 */
static void
http_fail_request(struct http_conn *c)
{
	http_conn_disown(c);
	c->close_after = true;
	c->in_head = false;
	c->state = HC_BUSY;
}

static void
http_bad_request(struct http_conn *c)
{
	enum http_errno	err = HTTP_PARSER_ERRNO(&c->parser);

	http_fail_request(c);
	if (c->ps.bad_version)
		http_reply_error(c, 400, "invalid_request",
		    "unsupported HTTP version: only HTTP/1.0 and 1.1");
	else if (err == HPE_HEADER_OVERFLOW)
		http_reply_error(c, 413, "too_large", "request head too large");
	else
		http_reply_error(c, 400, "invalid_request",
		    "malformed HTTP request: %s", http_errno_description(err));
}

static int
on_message_begin(http_parser *p)
{
	struct http_conn	*c = p->data;

	http_req_reset(c);
	c->in_head = true;
	c->head_at = ev_now(c->srv->loop);
	c->req_head = false;
	return 0;
}

static int
http_head_bytes(struct http_parse *ps, size_t len)
{
	ps->head_bytes += len;
	if (ps->head_bytes > HTTP_MAX_HEAD) {
		ps->too_large = true;
		return -1;
	}
	return 0;
}

static int
on_url(http_parser *p, const char *at, size_t len)
{
	struct http_conn	*c = p->data;

	/*
	 * The method is known from here: a HEAD refused before its head
	 * ends (too many headers, too long) gets no body either.
	 */
	c->req_head = p->method == HTTP_HEAD;
	if (http_head_bytes(&c->ps, len) == -1)
		return -1;
	return buf_add(&c->ps.url, at, len);
}

/*
 * Header callbacks after the head are a chunked body's trailers: they are
 * read and ignored (the header list was already closed).
 */
static int
on_header_field(http_parser *p, const char *at, size_t len)
{
	struct http_parse	*ps = &((struct http_conn *)p->data)->ps;

	if (ps->head_done)
		return 0;
	if (http_head_bytes(ps, len + 4) == -1)
		return -1;
	if (ps->last_value || ps->nhdr == 0) {
		if (ps->nhdr > 0 && buf_add(&ps->hdrs, "", 1) == -1)
			return -1;
		if (ps->nhdr == HTTP_MAX_HEADERS) {
			ps->too_large = true;
			return -1;
		}
		ps->nhdr++;
		ps->last_value = 0;
	}
	return buf_add(&ps->hdrs, at, len);
}

static int
on_header_value(http_parser *p, const char *at, size_t len)
{
	struct http_parse	*ps = &((struct http_conn *)p->data)->ps;

	if (ps->head_done)
		return 0;
	if (http_head_bytes(ps, len) == -1)
		return -1;
	if (!ps->last_value) {
		if (buf_add(&ps->hdrs, "", 1) == -1)
			return -1;
		ps->last_value = 1;
	}
	return buf_add(&ps->hdrs, at, len);
}

/*
 * The head is complete: split the URL and find the route, so that the
 * body can be streamed to it or refused before it is read.
 */
static int
on_headers_complete(http_parser *p)
{
	struct http_conn	*c = p->data;
	struct http_parse	*ps = &c->ps;

	ps->head_done = true;
	c->in_head = false;
	if (ps->nhdr > 0 && buf_add(&ps->hdrs, "", 1) == -1)
		return -1;
	if (buf_add(&ps->url, "", 1) == -1)
		return -1;
	/* Even the error a HEAD gets has no body: its client reads none. */
	c->req_head = p->method == HTTP_HEAD;
	if (p->http_major != 1 || p->http_minor > 1) {
		ps->bad_version = true;
		return -1;
	}
	c->req.method = http_method_str(p->method);
	c->req_http10 = p->http_minor == 0;
	ps->keepalive = http_should_keep_alive(p);
	if (http_req_route(c) == -1)
		return -1;
	return http_head_checks(c, p);
}

/*
 * The path without its query, as the namespace hook maps it, and its
 * route: the hook's table first, then the server's (see http_route_in).
 */
static int
http_req_route(struct http_conn *c)
{
	struct http_server	*srv = c->srv;
	struct http_req		*r = &c->req;
	const struct http_route	*ns = NULL, *seen = NULL, *rt = NULL;
	char			*path = c->ps.url.data, *q;

	if ((q = strchr(path, '?')) != NULL) {
		*q = '\0';
		r->query = q + 1;
	}
	if (srv->map != NULL)
		ns = srv->map(srv->ctx, &path);
	r->path = path;
	if (buf_reserve(&c->ps.pbuf, strlen(path) + HTTP_MAX_PARAMS + 1) == NULL)
		return -1;
	if (ns != NULL)
		rt = http_route_in(c, ns, path, &seen);
	if (rt == NULL)
		rt = http_route_in(c, srv->routes, path, &seen);
	r->route = rt != NULL ? rt : seen;
	return 0;
}

/*
 * The route in table for the path and the method, or NULL; the first
 * route for the path alone is kept in *seen, for the 405.
 */
static const struct http_route *
http_route_in(struct http_conn *c, const struct http_route *rt,
    const char *path, const struct http_route **seen)
{
	for (; rt->method != NULL; rt++) {
		if (http_route_match(rt->pattern, path, c) != 0)
			continue;
		if (*seen == NULL)
			*seen = rt;		/* remembered for 405 */
		if (strcmp(rt->method, c->req.method) == 0)
			return rt;
	}
	return NULL;
}

/* What the head alone decides: a body too large, a client that waits. */
static int
http_head_checks(struct http_conn *c, http_parser *p)
{
	struct http_req	*r = &c->req;
	const char	*h;

	if (r->route != NULL && r->route->body == NULL &&
	    p->content_length != ULLONG_MAX &&
	    p->content_length > HTTP_MAX_BODY) {
		c->ps.too_large = true;
		return -1;
	}
	/* curl waits a second for this before sending a large body. */
	if ((h = http_header(r, "Expect")) != NULL &&
	    strcasecmp(h, "100-continue") == 0) {
		if (buf_addstr(&c->out, "HTTP/1.1 100 Continue\r\n\r\n") == -1)
			return -1;
		(void)http_conn_flush(c);
	}
	return 0;
}

/* The request's body goes to its route piece by piece, not buffered. */
static bool
http_req_streams(const struct http_req *r)
{
	return r->route != NULL && r->route->body != NULL &&
	    strcmp(r->route->method, r->method) == 0;
}

static int
on_body(http_parser *p, const char *at, size_t len)
{
	struct http_conn	*c = p->data;
	struct http_req		*r = &c->req;

	if (http_req_streams(r)) {
		r->route->body(c, r, at, len);
		r->streamed += len;
		return 0;
	}
	if (r->body.len + len > HTTP_MAX_BODY) {
		c->ps.too_large = true;
		return -1;
	}
	return buf_add(&r->body, at, len);
}

static int
on_message_complete(http_parser *p)
{
	struct http_conn	*c = p->data;

	if (buf_add(&c->req.body, "", 1) == -1)
		return -1;
	c->req.body.len--;
	http_parser_pause(p, 1);
	return 0;
}

/*
 * Match a path against a pattern: "{}" takes one non-empty segment, a
 * final "*" takes the rest (possibly empty).  Captures point into path,
 * which is split in place only after a full match.
 */
static int
http_route_match(const char *pat, const char *path, struct http_conn *c)
{
	struct http_req	*r = &c->req;
	struct buf	*pb = &c->ps.pbuf;
	const char	*p = path, *seg;
	size_t		 starts[HTTP_MAX_PARAMS], lens[HTTP_MAX_PARAMS];
	int		 n = 0, i;

	while (*pat != '\0') {
		if (pat[0] == '*' && pat[1] == '\0') {
			if (n == HTTP_MAX_PARAMS)
				return -1;
			starts[n] = p - path;
			lens[n++] = strlen(p);
			p += strlen(p);
			pat++;
			break;
		}
		if (pat[0] == '{' && pat[1] == '}') {
			seg = p;
			while (*p != '\0' && *p != '/')
				p++;
			if (p == seg || n == HTTP_MAX_PARAMS)
				return -1;
			starts[n] = seg - path;
			lens[n++] = p - seg;
			pat += 2;
			continue;
		}
		if (*pat != *p)
			return -1;
		pat++;
		p++;
	}
	if (*p != '\0')
		return -1;
	/*
	 * Captures are copied as C strings into pbuf, which the caller sized
	 * for the whole path, so the pointers stay valid.
	 */
	buf_reset(pb);
	r->nparam = 0;
	for (i = 0; i < n; i++) {
		r->param[r->nparam++] = pb->data + pb->len;
		memcpy(pb->data + pb->len, path + starts[i], lens[i]);
		pb->len += lens[i];
		pb->data[pb->len++] = '\0';
	}
	return 0;
}

static void
http_dispatch(struct http_conn *c)
{
	struct http_req	*r = &c->req;

	c->state = HC_BUSY;
	if (!c->ps.keepalive)
		c->close_after = true;
	if (r->route == NULL) {
		http_reply_error(c, 404, "not_found", "no route for %s %s",
		    r->method, r->path);
		return;
	}
	if (strcmp(r->route->method, r->method) != 0) {
		http_reply_error(c, 405, "method_not_allowed",
		    "%s is not allowed on %s", r->method, r->path);
		return;
	}
	r->route->handler(c, r);
}

/* ------------------------------------------------------------------ */
/* Request accessors */

const char *
http_header(struct http_req *r, const char *name)
{
	struct http_conn	*c = container_of(r, struct http_conn, req);
	const char		*p = c->ps.hdrs.data, *end, *value;

	if (p == NULL)
		return NULL;
	end = p + c->ps.hdrs.len;
	while (p < end) {
		value = p + strlen(p) + 1;
		if (value >= end)
			break;
		if (strcasecmp(p, name) == 0)
			return value;
		p = value + strlen(value) + 1;
	}
	return NULL;
}

static int
http_hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	ch = tolower(ch);
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	return -1;
}

/* Percent-decode [s, s+n) into out (size cap), '+' as space. */
static bool
http_unescape(const char *s, size_t n, char *out, size_t cap)
{
	size_t	i, o = 0;
	int	hi, lo;

	for (i = 0; i < n; i++) {
		if (o + 1 >= cap)
			return false;
		if (s[i] == '%' && i + 2 < n &&
		    (hi = http_hexval(s[i + 1])) >= 0 &&
		    (lo = http_hexval(s[i + 2])) >= 0) {
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else if (s[i] == '+')
			out[o++] = ' ';
		else
			out[o++] = s[i];
	}
	out[o] = '\0';
	return true;
}

int
http_query(struct http_req *r, const char *key, char *out, size_t n)
{
	const char	*p = r->query, *amp, *eq;
	size_t		 klen = strlen(key);

	while (p != NULL && *p != '\0') {
		amp = strchr(p, '&');
		if (amp == NULL)
			amp = p + strlen(p);
		eq = memchr(p, '=', amp - p);
		if ((size_t)((eq ? eq : amp) - p) == klen &&
		    strncmp(p, key, klen) == 0) {
			if (n == 0)
				return -1;
			out[0] = '\0';
			if (eq == NULL)
				return 1;
			if (!http_unescape(eq + 1, amp - eq - 1, out, n)) {
				out[0] = '\0';
				return -1;	/* longer than any valid value */
			}
			return 1;
		}
		p = *amp ? amp + 1 : amp;
	}
	return 0;
}

int
http_query_u64(struct http_req *r, const char *key, uint64_t *v)
{
	char	buf[HTTP_QUERY_U64_MAX];
	int	rc;

	if ((rc = http_query(r, key, buf, sizeof(buf))) != 1)
		return rc;
	return codec_parse_u64(buf, v) == 0 ? 1 : -1;
}

int
http_query_bool(struct http_req *r, const char *key, int dflt)
{
	char	v[sizeof("false")];	/* longer is no boolean: -1 */
	int	rc;

	if ((rc = http_query(r, key, v, sizeof(v))) != 1)
		return rc == 0 ? dflt : -1;
	if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || v[0] == '\0')
		return 1;
	if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
		return 0;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Responses */

const char *
http_status_text(int status)
{
	switch (status) {
	case 101: return "Switching Protocols";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 413: return "Payload Too Large";
	case 416: return "Range Not Satisfiable";
	case 422: return "Unprocessable Entity";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 507: return "Insufficient Storage";
	default: return "Unknown";
	}
}

static int
http_head(struct http_conn *c, int status, const char *ctype,
    const char *extra, long long len, const char *extra2)
{
	struct buf	*o = &c->out;

	if (buf_printf(o, "HTTP/1.1 %d %s\r\n", status,
	    http_status_text(status)) == -1)
		return -1;
	if (ctype != NULL && buf_printf(o, "Content-Type: %s\r\n", ctype) == -1)
		return -1;
	if (len >= 0 && buf_printf(o, "Content-Length: %lld\r\n", len) == -1)
		return -1;
	if ((extra != NULL && buf_addstr(o, extra) == -1) ||
	    (extra2 != NULL && buf_addstr(o, extra2) == -1))
		return -1;
	if (c->close_after && buf_addstr(o, "Connection: close\r\n") == -1)
		return -1;
	return buf_addstr(o, "\r\n");
}

/*
 * The response is queued in full: release its owner, and either close or
 * go on with the next (possibly already buffered) request.
 */
static void
http_finish(struct http_conn *c)
{
	struct http_server	*srv = c->srv;
	bool			 deferred = !c->processing;

	/* The owner made this reply: it needs no word of it. */
	c->owner = NULL;
	c->on_drain = NULL;
	c->on_close = NULL;
	if (c->close_after) {
		c->state = HC_CLOSING;
		/* -1: written whole (or failed), and closed. */
		if (http_conn_flush(c) == -1 && deferred)
			http_yield(srv);
		return;
	}
	c->state = HC_READ;
	if (http_conn_flush(c) == -1)
		return;
	/* Nothing of it is parsed now: an upload's big buffer goes. */
	if (buf_avail(&c->in) == 0 && c->in.cap >= HTTP_BODY_READ_CHUNK)
		buf_free(&c->in);
	/*
	 * A response finished from outside the parse loop (a waiter, a
	 * stream) resumes pipelined requests from the loop, not from the
	 * caller's stack, which may be walking a list the next request
	 * changes.
	 */
	if (deferred) {
		if (buf_avail(&c->out) == 0)
			http_yield(srv);
		ev_prepare_start(srv->loop, &c->resume);
		http_kick(srv);
	}
	http_conn_watch(c);
}

/*
 * A reply written whole from outside the parse loop (an exec's, after
 * its process was reaped) woke its reader with a socket's sync wakeup,
 * which queues the reader on this CPU to run once we sleep.  What the
 * turn still does (the status written, old records trimmed, the next
 * spare made) would hold the reader back that long: let it run first.
 * Once per loop turn, whatever number of replies the turn finishes.
 * The price is paid when a busy process shares our CPU: the yield gives
 * it the rest of a slice (exec of /bin/true beside one `yes`: 1.31x ->
 * 1.35x a bare spawn; with the CPUs free: 1.36x -> 1.22x).
 */
static void
http_yield(struct http_server *srv)
{
	unsigned int	it = ev_iteration(srv->loop);

	if (srv->yielded == it + 1)
		return;
	srv->yielded = it + 1;
	(void)sched_yield();
}

static void
http_resume_cb(struct ev_loop *loop, ev_prepare *w, int revents)
{
	struct http_conn	*c = container_of(w, struct http_conn, resume);

	(void)revents;
	ev_prepare_stop(loop, w);
	if (c->dead || c->state != HC_READ)
		return;
	http_conn_process(c);
	if (!c->dead)
		http_conn_watch(c);
}

void
http_reply(struct http_conn *c, int status, const char *ctype,
    const void *body, size_t len)
{
	if (c->dead || c->state != HC_BUSY)
		return;
	/* A reply to HEAD has the head only (its length says the body's). */
	if (http_head(c, status, len || status != 204 ? ctype : NULL, NULL,
	    status == 204 ? -1 : (long long)len, NULL) == -1 ||
	    (!c->req_head && buf_add(&c->out, body, len) == -1)) {
		http_conn_abort(c);
		return;
	}
	http_finish(c);
}

void
http_reply_json(struct http_conn *c, int status, cJSON *j)
{
	char	*s;

	s = j != NULL ? cJSON_PrintUnformatted(j) : NULL;
	cJSON_Delete(j);
	if (s == NULL) {
		static const char oom[] =
		    "{\"error\":\"out of memory\",\"code\":\"internal\"}";

		http_reply(c, 500, "application/json", oom, sizeof(oom) - 1);
		return;
	}
	http_reply(c, status, "application/json", s, strlen(s));
	free(s);
}

/*
 * Messages quote the client's bytes (a path, an ID, a query value), which
 * need not be UTF-8: they are repaired, so that the reply is valid JSON.
 */
static cJSON *
http_error_vobj(const char *code, const char *fmt, va_list ap)
{
	char		 msg[HTTP_ERROR_MSG_MAX];
	struct buf	 b = { 0 };
	cJSON		*j;
	int		 n;

	if ((n = vsnprintf(msg, sizeof(msg), fmt, ap)) < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	if (codec_utf8_repair(&b, msg, n) == -1 || buf_add(&b, "", 1) == -1 ||
	    (j = cJSON_CreateObject()) == NULL) {
		buf_free(&b);
		return NULL;
	}
	cJSON_AddStringToObject(j, "error", b.data);
	cJSON_AddStringToObject(j, "code", code);
	buf_free(&b);
	return j;
}

cJSON *
http_error_obj(const char *code, const char *fmt, ...)
{
	va_list	 ap;
	cJSON	*j;

	va_start(ap, fmt);
	j = http_error_vobj(code, fmt, ap);
	va_end(ap);
	return j;
}

void
http_reply_error(struct http_conn *c, int status, const char *code,
    const char *fmt, ...)
{
	va_list	 ap;
	cJSON	*j;

	va_start(ap, fmt);
	j = http_error_vobj(code, fmt, ap);
	va_end(ap);
	http_reply_json(c, status, j);
}

int
http_stream_begin(struct http_conn *c, int status, const char *ctype,
    enum http_framing framing, const char *extra)
{
	if (c->dead || c->state != HC_BUSY)
		return -1;
	/* HTTP/1.0 has no chunked coding: the end is the close. */
	if (c->req_http10 && framing == HTTP_FRAME_CHUNKED)
		framing = HTTP_FRAME_CLOSE;
	if (framing == HTTP_FRAME_CLOSE)
		c->close_after = true;
	c->chunked_out = framing == HTTP_FRAME_CHUNKED;
	c->chunk_left = 0;
	if (http_head(c, status, ctype, c->chunked_out ?
	    "Transfer-Encoding: chunked\r\n" : NULL, -1, extra) == -1) {
		http_conn_abort(c);
		return -1;
	}
	c->state = HC_STREAM;
	return http_conn_flush(c);
}

int
http_stream_write(struct http_conn *c, const void *d, size_t n)
{
	if (c->dead || c->state != HC_STREAM)
		return -1;
	if (n == 0)
		return 0;
	if (c->chunk_left > 0) {
		http_conn_abort(c);	/* inside a file's chunk: a bug */
		return -1;
	}
	if ((c->chunked_out && buf_printf(&c->out, "%zx\r\n", n) == -1) ||
	    buf_add(&c->out, d, n) == -1 ||
	    (c->chunked_out && buf_add(&c->out, "\r\n", 2) == -1)) {
		http_conn_abort(c);
		return -1;
	}
	return http_conn_flush(c);
}

/*
 * The kernel copies the file to the socket: no pass through the output
 * buffer, which is written first (what is queued goes first).  Chunked,
 * a chunk of n bytes is announced when none is open, and later calls
 * carry on into it (from where the last one left off) until it is whole;
 * an n past its end is cut to it.  EAGAIN arms the write watcher, as a
 * full buffer does: on_drain says when to go on.
 */
ssize_t
http_stream_sendfile(struct http_conn *c, int fd, uint64_t *off, size_t n)
{
	off_t	o = (off_t)*off;
	ssize_t	k;

	if (c->dead || c->state != HC_STREAM) {
		errno = EINVAL;
		return -1;
	}
	if (n == 0)
		return 0;
	if (c->chunked_out && c->chunk_left == 0) {
		if (buf_printf(&c->out, "%zx\r\n", n) == -1) {
			http_conn_abort(c);
			return -1;
		}
		c->chunk_left = n;
	}
	if (buf_avail(&c->out) > 0) {
		if (http_conn_flush(c) == -1)
			return -1;
		if (buf_avail(&c->out) > 0) {
			errno = EAGAIN;
			return -1;
		}
	}
	if (c->chunked_out && n > c->chunk_left)
		n = c->chunk_left;
	while ((k = sendfile(c->fd, fd, &o, n)) == -1 && errno == EINTR)
		;
	if (k == -1 && errno == EAGAIN) {
		if (!ev_is_active(&c->wio))
			c->last_out = ev_now(c->srv->loop);
		ev_io_start(c->srv->loop, &c->wio);
		return -1;
	}
	if (k == -1) {
		/* The client is gone, or the file failed: as a write's error. */
		http_conn_abort(c);
		return -1;
	}
	if (k > 0) {
		*off = (uint64_t)o;
		c->last_io = c->last_out = ev_now(c->srv->loop);
	}
	if (!c->chunked_out)
		return k;
	/* The file ended inside its chunk: the framing cannot be kept. */
	if (k == 0) {
		http_conn_abort(c);
		errno = EIO;
		return -1;
	}
	if ((c->chunk_left -= (size_t)k) == 0 &&
	    (buf_add(&c->out, "\r\n", 2) == -1 || http_conn_flush(c) == -1))
		http_conn_abort(c);
	return k;
}

void
http_stream_end(struct http_conn *c)
{
	if (c->dead || c->state != HC_STREAM)
		return;
	if (c->chunk_left > 0 ||
	    (c->chunked_out && buf_addstr(&c->out, "0\r\n\r\n") == -1)) {
		http_conn_abort(c);
		return;
	}
	http_finish(c);
}

int
http_sse_begin(struct http_conn *c)
{
	return http_stream_begin(c, 200, "text/event-stream", HTTP_FRAME_CLOSE,
	    "Cache-Control: no-cache\r\n");
}

int
http_sse_event(struct http_conn *c, const char *id, const char *json)
{
	if (c->dead || c->state != HC_STREAM)
		return -1;
	if ((id != NULL && buf_printf(&c->out, "id: %s\n", id) == -1) ||
	    buf_printf(&c->out, "data: %s\n\n", json) == -1) {
		http_conn_abort(c);
		return -1;
	}
	return http_conn_flush(c);
}

int
http_sse_comment(struct http_conn *c, const char *text)
{
	if (c->dead || c->state != HC_STREAM)
		return -1;
	if (buf_printf(&c->out, ": %s\n\n", text) == -1) {
		http_conn_abort(c);
		return -1;
	}
	return http_conn_flush(c);
}
