/*
 * wsconn: one WebSocket connection on an upgraded socket — the I/O that
 * ws.c's codec leaves to its caller.  Reads are non-blocking and parsed
 * with ws_parse; whole messages go to the owner.  Writes go out at once
 * when the socket takes them, the rest waits in a bounded buffer: past
 * WS_OUT_MAX a frame is refused and the connection dropped, so an owner
 * that streams must pause above WS_OUT_HIGH (wsconn_pending) and go on
 * at on_drain.  Pings go out every WS_PING_INTERVAL and pings are
 * answered; output that does not move for WS_STUCK_TIMEOUT drops the
 * connection; a close (the peer's, or wsconn_close) is answered and
 * waited for at most WS_CLOSE_TIMEOUT.
 *
 * Every end comes to the owner once, as on_close, from the loop (never
 * from inside a wsconn_* call); the wsconn is freed after it returns and
 * must not be used in or after it.  The socket's slot under the HTTP
 * server's connection limit is released then.
 */
#ifndef TEND_WSCONN_H
#define TEND_WSCONN_H

#include <stddef.h>
#include <stdint.h>
#include <ev.h>

#include "base/buf.h"

struct http_server;
struct wsconn;

struct wsconn_ops {
	void	(*on_text)(void *ctx, const char *, size_t);
	void	(*on_binary)(void *ctx, const char *, size_t);
	void	(*on_drain)(void *ctx);		/* all output written */
	void	(*on_close)(void *ctx);		/* gone; freed after this */
};

/*
 * Own fd (non-blocking from now on), with the bytes read after the
 * handshake's head.  NULL with errno: fd is closed and the slot released.
 */
struct wsconn	*wsconn_new(struct ev_loop *, int fd, struct http_server *,
		    const struct buf *already_read, const struct wsconn_ops *,
		    void *ctx);
/* One frame queued.  -1: the connection is dead or would pass WS_OUT_MAX. */
int		 wsconn_text(struct wsconn *, const char *, size_t);
int		 wsconn_binary(struct wsconn *, const void *, size_t);
size_t		 wsconn_pending(struct wsconn *);
/* Stop delivering messages (input backpressure); resume goes on. */
void		 wsconn_pause_read(struct wsconn *);
void		 wsconn_resume_read(struct wsconn *);
/* Start the close handshake: nothing more is sent or delivered. */
void		 wsconn_close(struct wsconn *, uint16_t code, const char *why);

#endif
