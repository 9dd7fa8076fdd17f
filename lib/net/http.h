/*
 * http: an HTTP/1.1 server on a listening socket, driven by libev.
 *
 * Requests are parsed with http_parser and dispatched through a route
 * table.  A handler answers at once (http_reply*) or later: the
 * connection stays busy, and pipelined requests wait, until the response
 * is complete.  Streams (chunked bodies, SSE) are written piecewise; the
 * producer watches http_conn_pending() and is called back through
 * on_drain when the output buffer empties, so nothing is buffered without
 * bound for a slow reader.  Above HTTP_OUT_READ_MAX of unsent output the
 * next request is neither read nor parsed, so a client that pipelines
 * without reading cannot grow the queue either.  A handler may also take
 * the socket for another protocol (http_conn_upgrade).
 *
 * The server and its connections are opaque: callers use the functions
 * below.  A request's public fields are read-only to handlers, except
 * body_error, which a streaming body function sets.
 */
#ifndef TEND_HTTP_H
#define TEND_HTTP_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ev.h>
#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/tunables.h"

#define HTTP_MAX_PARAMS	4

struct http_server;
struct http_conn;
struct http_req;

typedef void	(*http_handler)(struct http_conn *, struct http_req *);
/* Streaming request body: called per piece instead of buffering. */
typedef void	(*http_body_fn)(struct http_conn *, struct http_req *,
		    const char *, size_t);

struct http_route {
	const char	*method;	/* "GET", "POST", ... */
	const char	*pattern;	/* "/v1/processes/{}/kill"; "*" ends one */
	http_handler	 handler;	/* at the end of the request */
	http_body_fn	 body;		/* NULL: body buffered, <= HTTP_MAX_BODY */
	const void	*arg;		/* the route's own, http_req_route_arg */
};

/*
 * A namespace hook, run on each request's path (query removed) before
 * routing: it may rewrite the path in place, never longer, and point
 * *path at the result, and may return a table whose routes are matched
 * before the server's own (NULL: the server's only).  ctx is the
 * server's.  Namespaces are the caller's business (the API's bridge
 * prefix), not the server's.
 */
typedef const struct http_route *(*http_map_fn)(void *ctx, char **path);

/*
 * Whether a peer (its SO_PEERCRED pid and uid) is one that may not take
 * the slots kept for the others (the agent's: its own shim).
 */
typedef bool (*http_peer_fn)(void *ctx, pid_t pid, uid_t uid);

struct http_req {
	const char		*method;
	char			*path;		/* without query, as mapped */
	char			*query;		/* after '?', or NULL */
	char			*param[HTTP_MAX_PARAMS];	/* {} and * */
	int			 nparam;
	struct buf		 body;		/* NUL-terminated when buffered */
	const struct http_route	*route;
	int			 body_error;	/* set by a streaming body fn */
	size_t			 streamed;	/* body bytes given to it so far */
};

/*
 * The matched route's arg (NULL: none, or no route): one handler serves
 * several routes that differ by it, as a namespace.
 */
static inline const void *
http_req_route_arg(const struct http_req *r)
{
	return r->route != NULL ? r->route->arg : NULL;
}

/* The server. */
/* Listen on a unix socket; NULL with errno set. */
/* The socket at path (bound 0600) becomes 0660 with group gid. */
int	http_socket_share(const char *path, gid_t gid);
struct http_server *http_server_new(struct ev_loop *, const char *path,
	    const struct http_route *, void *ctx, int maxconns);
/* Closes every connection now, telling their owners; frees the server. */
/*
 * The same on a socket already listening (handed over by the agent
 * before this one: core/handover.h); it is the server's from then on.
 */
struct http_server *http_server_new_fd(struct ev_loop *, int fd,
	    const struct http_route *routes, void *ctx, int maxconns);
/* The listening socket, or -1 once closed. */
int	http_server_fd(const struct http_server *);
/* Stop accepting, the socket kept open (connects wait in its backlog). */
void	http_server_pause(struct http_server *);
void	http_server_resume(struct http_server *);
void	http_server_free(struct http_server *);
void	http_server_map(struct http_server *, http_map_fn);
/*
 * Peers fn says are limited get maxconns less 1/HTTP_DIRECT_SHARE of it
 * (one slot at least): the rest is always there for the others.
 */
void	http_server_limit(struct http_server *, http_peer_fn fn);
/* Seconds: stuck output, an unfinished head, a body paused (tunables.h). */
void	http_server_timeouts(struct http_server *, double stuck, double head,
	    double pause);
/* Slots in use: open connections and upgraded sockets not yet released. */
int	http_server_nconns(const struct http_server *);
/* An upgraded socket was closed by its new owner: its slot is free. */
void	http_server_release(struct http_server *);
void	http_stop_accepting(struct http_server *);
void	http_close_all(struct http_server *);

/* Request accessors. */
const char *http_header(struct http_req *, const char *name);
/*
 * The headers in their order: *it NULL for the first, then as this left
 * it; 1 with *name and *value, 0 after the last.
 */
int	http_header_next(struct http_req *, const char **it, const char **name,
	    const char **value);
/*
 * Decoded value of query key into out: 1, or 0 when absent, or -1 when
 * it does not fit (callers size out above any valid value).
 */
int	http_query(struct http_req *, const char *key, char *out, size_t n);
/* A non-negative decimal query value: 1, 0 when absent, -1 when invalid. */
int	http_query_u64(struct http_req *, const char *key, uint64_t *);
/* 1 or 0 for true/1/false/0, dflt when absent, -1 when malformed. */
int	http_query_bool(struct http_req *, const char *key, int dflt);

/* Which part of a body of size bytes a Range header asks for. */
enum http_range {
	HTTP_RANGE_FULL,	/* no Range, or one to ignore: 200, all */
	HTTP_RANGE_PART,	/* 206, bytes *first..*last inclusive */
	HTTP_RANGE_UNSATISFIABLE	/* 416, with Content-Range of the size */
};
/*
 * A Range header's value (NULL: none) against a body of size bytes:
 * "bytes=a-b", "bytes=a-", "bytes=-n".  Several ranges, other units and
 * malformed values are ignored (FULL), as RFC 9110 allows.  Pure: it
 * reads the string only.
 */
enum http_range http_range_parse(const char *hdr, uint64_t size,
	    uint64_t *first, uint64_t *last);

/* Complete responses. */
void	http_reply(struct http_conn *, int status, const char *ctype,
	    const void *body, size_t len);
void	http_reply_json(struct http_conn *, int status, cJSON *);	/* frees */
void	http_reply_error(struct http_conn *, int status, const char *code,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The error object, for callers that add fields before replying. */
cJSON	*http_error_obj(const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/*
 * Streams.  HTTP_FRAME_CLOSE ends the body by closing (SSE);
 * HTTP_FRAME_LENGTH sends it as written, its length in extra_headers'
 * Content-Length (a file), and keeps the connection.
 */
enum http_framing { HTTP_FRAME_CHUNKED, HTTP_FRAME_CLOSE, HTTP_FRAME_LENGTH };
int	http_stream_begin(struct http_conn *, int status, const char *ctype,
	    enum http_framing, const char *extra_headers);
int	http_stream_write(struct http_conn *, const void *, size_t);
/*
 * A body straight from a file: up to n bytes of fd at *off (advanced),
 * after what is queued.  Chunked, the first call announces a chunk of n
 * bytes and the next ones carry on into it (n cut to what it lacks);
 * nothing else may be written until it is whole.  The bytes sent, 0 at
 * the file's end (HTTP_FRAME_LENGTH), -1: EAGAIN (the socket is full:
 * on_drain follows), or the socket or the file failed (the connection
 * is aborted; so is it when the file ends inside a chunk).
 */
ssize_t	http_stream_sendfile(struct http_conn *, int fd, uint64_t *off,
	    size_t n);
void	http_stream_end(struct http_conn *);
int	http_sse_begin(struct http_conn *);
int	http_sse_event(struct http_conn *, const char *id, const char *json);
int	http_sse_comment(struct http_conn *, const char *);

/* The connection. */
void	*http_conn_ctx(struct http_conn *);	/* the server's ctx */
struct http_server *http_conn_server(struct http_conn *);
/* Closed or closing: nothing more can be sent on it. */
bool	http_conn_dead(struct http_conn *);
/* The request's response is begun or done, or the connection is dead. */
bool	http_conn_replied(struct http_conn *);
/* Pending output bytes, for producers that pause above HTTP_OUT_HIGH. */
size_t	http_conn_pending(struct http_conn *);
/*
 * Owner of a pending response or of a request body being streamed (a
 * waiter, a follower, a held stdin).  on_drain: the output emptied
 * during a stream or an upgrade.  on_close: the connection closed, or
 * the owned request failed to parse; not called for a response the
 * owner ended itself, nor after an upgrade.
 */
void	http_conn_own(struct http_conn *, void *owner,
	    void (*on_drain)(struct http_conn *, void *),
	    void (*on_close)(struct http_conn *, void *));
/* The owner given to http_conn_own, or NULL. */
void	*http_conn_owner(struct http_conn *);
void	http_conn_pause_read(struct http_conn *);
void	http_conn_resume_read(struct http_conn *);
void	http_conn_abort(struct http_conn *);

/*
 * Switching protocols.  http_reply_upgrade queues "101 Switching
 * Protocols" with "Upgrade: protocol" and extra_headers (each ending in
 * CRLF) and stops reading: what the client sends next is the new
 * protocol's.  It returns 0 when everything queued is written, 1 when the
 * socket is full (the owner's on_drain says when it is out; the stuck
 * timeout still applies), -1 when the connection died.
 *
 * http_conn_upgrade then gives the socket up: *fd is the caller's, and
 * the bytes read after the request's head (pipelined ones included) are
 * appended to already_read.  The connection leaves the server's list and
 * timers and must not be used again; its owner is not told.  The socket
 * keeps its slot under the connection limit until the new owner calls
 * http_server_release, so upgraded sockets are bounded by it too.  Only
 * in a handler's response (or after http_reply_upgrade) with nothing
 * left to write: else -1 with EBUSY (output pending) or EINVAL.
 */
int	http_reply_upgrade(struct http_conn *, const char *protocol,
	    const char *extra_headers);
int	http_conn_upgrade(struct http_conn *, int *fd,
	    struct buf *already_read);

const char *http_status_text(int);

#endif
