/*
 * wsconn.c: a WebSocket connection's I/O and timers over ws.c's codec.
 * Unparsed input waits in `in` while reading is paused, so a pause
 * between two messages of one read loses nothing.  A dead connection
 * stops its watchers at once and tells the owner from a zero timer:
 * an owner's own wsconn_* call never re-enters it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"
#include "base/tunables.h"
#include "base/util.h"
#include "http.h"
#include "ws.h"
#include "wsconn.h"

struct wsconn {
	struct ev_loop		*loop;
	struct http_server	*srv;
	int			 fd;
	ev_io			 rio, wio;
	ev_timer		 ping, stuck, closing, reap;
	struct ws_parser	 p;
	struct buf		 in, out;
	const struct wsconn_ops	*ops;
	void			*ctx;
	bool			 paused;
	bool			 closing_sent;	/* our close frame is queued */
	bool			 peer_closed;	/* theirs came: ours ends it */
	bool			 dead;
};

static void	wsconn_read_cb(struct ev_loop *, ev_io *, int);
static void	wsconn_write_cb(struct ev_loop *, ev_io *, int);
static void	wsconn_ping_cb(struct ev_loop *, ev_timer *, int);
static void	wsconn_stuck_cb(struct ev_loop *, ev_timer *, int);
static void	wsconn_closing_cb(struct ev_loop *, ev_timer *, int);
static void	wsconn_reap_cb(struct ev_loop *, ev_timer *, int);
static void	wsconn_parse(struct wsconn *);

struct wsconn *
wsconn_new(struct ev_loop *loop, int fd, struct http_server *srv,
    const struct buf *already, const struct wsconn_ops *ops, void *ctx)
{
	struct wsconn	*ws;
	int		 fl;

	if ((ws = calloc(1, sizeof(*ws))) == NULL ||
	    (already != NULL && buf_avail(already) > 0 &&
	    buf_add(&ws->in, buf_head(already),
	    buf_avail(already)) == -1) ||
	    (fl = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1) {
		if (ws != NULL)
			buf_free(&ws->in);
		free(ws);
		close(fd);
		http_server_release(srv);
		return NULL;
	}
	ws->loop = loop;
	ws->srv = srv;
	ws->fd = fd;
	ws->ops = ops;
	ws->ctx = ctx;
	ws_parser_init(&ws->p, 0);
	ev_io_init(&ws->rio, wsconn_read_cb, fd, EV_READ);
	ev_io_init(&ws->wio, wsconn_write_cb, fd, EV_WRITE);
	ev_timer_init(&ws->ping, wsconn_ping_cb, WS_PING_INTERVAL,
	    WS_PING_INTERVAL);
	ev_timer_init(&ws->stuck, wsconn_stuck_cb, 0., WS_STUCK_TIMEOUT);
	ev_timer_init(&ws->closing, wsconn_closing_cb, WS_CLOSE_TIMEOUT, 0.);
	ev_timer_init(&ws->reap, wsconn_reap_cb, 0., 0.);
	ev_io_start(loop, &ws->rio);
	ev_timer_start(loop, &ws->ping);
	if (buf_avail(&ws->in) > 0)
		ev_feed_event(loop, &ws->rio, EV_READ);
	return ws;
}

/* ------------------------------------------------------------------ */
/* The end: one way out, told from the loop */

static void
wsconn_kill(struct wsconn *ws)
{
	if (ws->dead)
		return;
	ws->dead = true;
	ev_io_stop(ws->loop, &ws->rio);
	ev_io_stop(ws->loop, &ws->wio);
	ev_timer_stop(ws->loop, &ws->ping);
	ev_timer_stop(ws->loop, &ws->stuck);
	ev_timer_stop(ws->loop, &ws->closing);
	ev_timer_start(ws->loop, &ws->reap);
}

static void
wsconn_reap_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct wsconn	*ws = container_of(t, struct wsconn, reap);

	(void)loop;
	(void)revents;
	ws->ops->on_close(ws->ctx);
	close(ws->fd);
	http_server_release(ws->srv);
	ws_parser_free(&ws->p);
	buf_free(&ws->in);
	buf_free(&ws->out);
	free(ws);
}

/* ------------------------------------------------------------------ */
/* Output */

/* Write what the socket takes; -1 when the connection died. */
static int
wsconn_flush(struct wsconn *ws)
{
	ssize_t	n;

	while (buf_avail(&ws->out) > 0) {
		n = write(ws->fd, buf_head(&ws->out), buf_avail(&ws->out));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			break;
		if (n <= 0) {
			wsconn_kill(ws);
			return -1;
		}
		buf_consume(&ws->out, (size_t)n);
		ev_timer_again(ws->loop, &ws->stuck);	/* it moves */
	}
	if (buf_avail(&ws->out) > 0) {
		ev_io_start(ws->loop, &ws->wio);
		if (!ev_is_active(&ws->stuck))
			ev_timer_again(ws->loop, &ws->stuck);
		return 0;
	}
	ev_io_stop(ws->loop, &ws->wio);
	ev_timer_stop(ws->loop, &ws->stuck);
	return 0;
}

static void
wsconn_write_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct wsconn	*ws = container_of(w, struct wsconn, wio);

	(void)loop;
	(void)revents;
	if (wsconn_flush(ws) == -1 || buf_avail(&ws->out) > 0)
		return;
	if (ws->peer_closed)
		wsconn_kill(ws);
	else if (!ws->closing_sent)
		ws->ops->on_drain(ws->ctx);
}

static void
wsconn_stuck_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct wsconn	*ws = container_of(t, struct wsconn, stuck);

	(void)loop;
	(void)revents;
	log_warn("event=ws_stuck fd=%d pending=%zu", ws->fd,
	    buf_avail(&ws->out));
	wsconn_kill(ws);
}

/*
 * A frame built by fn (ws.c's encoders), then flushed.  Output that was
 * waiting for the socket may leave with this frame: the owner, perhaps
 * paused until on_drain, is then told from the loop (the write watcher
 * kept on), never from inside its own call.
 */
static int
wsconn_send(struct wsconn *ws, int (*fn)(struct buf *, const void *,
    size_t), const void *d, size_t n)
{
	bool	waited = ev_is_active(&ws->wio);
	int	rc;

	if (ws->dead || ws->closing_sent)
		return -1;
	if (buf_avail(&ws->out) + n > WS_OUT_MAX) {
		log_warn("event=ws_overflow fd=%d pending=%zu",
		    ws->fd, buf_avail(&ws->out));
		wsconn_kill(ws);
		return -1;
	}
	if (fn(&ws->out, d, n) == -1) {
		wsconn_kill(ws);
		return -1;
	}
	if ((rc = wsconn_flush(ws)) == 0 && waited && buf_avail(&ws->out) == 0)
		ev_io_start(ws->loop, &ws->wio);
	return rc;
}

static int
wsconn_text_fn(struct buf *b, const void *d, size_t n)
{
	return ws_frame_text(b, d, n);
}

int
wsconn_text(struct wsconn *ws, const char *d, size_t n)
{
	return wsconn_send(ws, wsconn_text_fn, d, n);
}

int
wsconn_binary(struct wsconn *ws, const void *d, size_t n)
{
	return wsconn_send(ws, ws_frame_binary, d, n);
}

size_t
wsconn_pending(struct wsconn *ws)
{
	return ws->dead ? SIZE_MAX : buf_avail(&ws->out);
}

static void
wsconn_ping_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct wsconn	*ws = container_of(t, struct wsconn, ping);

	(void)loop;
	(void)revents;
	(void)wsconn_send(ws, ws_frame_ping, "", 0);
}

/* ------------------------------------------------------------------ */
/* The close handshake */

void
wsconn_close(struct wsconn *ws, uint16_t code, const char *why)
{
	if (ws->dead || ws->closing_sent)
		return;
	if (ws_frame_close(&ws->out, code, why) == -1) {
		wsconn_kill(ws);
		return;
	}
	ws->closing_sent = true;
	ev_timer_stop(ws->loop, &ws->ping);
	ev_timer_start(ws->loop, &ws->closing);
	(void)wsconn_flush(ws);
}

static void
wsconn_closing_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop;
	(void)revents;
	wsconn_kill(container_of(t, struct wsconn, closing));
}

/* ------------------------------------------------------------------ */
/* Input */

void
wsconn_pause_read(struct wsconn *ws)
{
	ws->paused = true;
	ev_io_stop(ws->loop, &ws->rio);
}

void
wsconn_resume_read(struct wsconn *ws)
{
	if (ws->dead || !ws->paused)
		return;
	ws->paused = false;
	ev_io_start(ws->loop, &ws->rio);
	if (buf_avail(&ws->in) > 0)
		ev_feed_event(ws->loop, &ws->rio, EV_READ);
}

/* One event of the parser; false when nothing more is to be parsed. */
static bool
wsconn_event(struct wsconn *ws, const struct ws_event *ev)
{
	switch (ev->type) {
	case WS_EV_TEXT:
		if (!ws->closing_sent)
			ws->ops->on_text(ws->ctx, ev->data, ev->len);
		break;
	case WS_EV_BINARY:
		if (!ws->closing_sent)
			ws->ops->on_binary(ws->ctx, ev->data, ev->len);
		break;
	case WS_EV_PING:
		(void)wsconn_send(ws, ws_frame_pong, ev->data, ev->len);
		break;
	case WS_EV_CLOSE:
		if (ws->closing_sent) {		/* the answer to ours */
			wsconn_kill(ws);
			return false;
		}
		ws->peer_closed = true;
		wsconn_close(ws, ev->code == WS_CLOSE_NO_STATUS ? 0 : ev->code,
		    "");
		/* Our answer written, the handshake is complete. */
		if (!ws->dead && buf_avail(&ws->out) == 0)
			wsconn_kill(ws);
		return false;
	case WS_EV_ERROR:
		wsconn_close(ws, ev->code, ev->data);
		return false;
	default:
		break;
	}
	return !ws->dead;
}

static void
wsconn_parse(struct wsconn *ws)
{
	struct ws_event	ev;
	ssize_t		n;

	while (!ws->dead && !ws->paused && buf_avail(&ws->in) > 0) {
		if ((n = ws_parse(&ws->p, buf_head(&ws->in),
		    buf_avail(&ws->in), &ev)) == -1) {
			wsconn_close(ws, WS_CLOSE_INTERNAL, "out of memory");
			return;
		}
		buf_consume(&ws->in, (size_t)n);
		if (ev.type == WS_EV_NONE)
			continue;
		if (!wsconn_event(ws, &ev))
			return;
	}
}

static void
wsconn_read_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct wsconn	*ws = container_of(w, struct wsconn, rio);
	char		*p;
	ssize_t		 n;

	(void)loop;
	(void)revents;
	if (buf_avail(&ws->in) == 0) {
		if ((p = buf_reserve(&ws->in, WS_READ_CHUNK)) == NULL) {
			wsconn_kill(ws);
			return;
		}
		n = read(ws->fd, p, WS_READ_CHUNK);
		if (n == -1 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {		/* the peer went away */
			wsconn_kill(ws);
			return;
		}
		ws->in.len += (size_t)n;
	}
	wsconn_parse(ws);
}
