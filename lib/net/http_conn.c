/*
 * http_conn.c: one client connection of the HTTP server (http.h).
 *
 * One struct http_conn per client: its buffers, watchers and timeouts.
 * Input is read into `in` and parsed (http_parse.c); when a message is
 * complete the parser is paused, so pipelined requests wait in the input
 * buffer until the current response is complete.  Output is queued in
 * `out` (http_reply.c) and written when the socket is writable.
 * Connections are freed from a prepare watcher, never from inside a
 * callback that may still hold a pointer to them.
 */
#include <poll.h>

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "http_conn.h"

static size_t	http_conn_read_size(const struct http_conn *);
static void	http_read_cb(struct ev_loop *, ev_io *, int);
static void	http_write_cb(struct ev_loop *, ev_io *, int);
static void	http_timer_cb(struct ev_loop *, ev_timer *, int);
static void	http_closer_cb(struct ev_loop *, ev_prepare *, int);
static void	http_resume_cb(struct ev_loop *, ev_prepare *, int);
static ev_tstamp http_conn_tick(struct http_conn *);
static bool	http_conn_hung_up(struct http_conn *);
static void	http_conn_paused_tick(struct http_conn *, ev_tstamp);
static void	http_conn_unlink(struct http_conn *);
static void	http_conn_eof(struct http_conn *);

/* ------------------------------------------------------------------ */
/* Connections */

void
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
bool
http_conn_out_full(struct http_conn *c)
{
	return buf_avail(&c->out) > HTTP_OUT_READ_MAX;
}

/*
 * Start or stop the read watcher for the connection's current needs.
 * Once an upgrade is answered nothing more is read: what the client
 * sends is the new protocol's, and stays in the socket for its owner.
 */
void
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
void
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
 * has a price of its own, paid per piece, so a large upload goes faster
 * the fewer pieces it is read in, most where system calls are dear (the
 * bench's files row measures it).  The larger buffer is given back when
 * its request ends (http_finish).
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
void
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
int
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
void
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

/* ------------------------------------------------------------------ */
/* Switching protocols */

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
