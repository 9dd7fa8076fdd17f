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
 * without reading cannot grow the queue either.
 */
#ifndef TEND_HTTP_H
#define TEND_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ev.h>
#include <http_parser.h>
#include <cjson/cJSON.h>

#include "buf.h"
#include "tunables.h"

#define HTTP_MAX_PARAMS	4

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
};

struct http_req {
	const char		*method;
	char			*path;		/* without query, alias removed */
	char			*query;		/* after '?', or NULL */
	char			*param[HTTP_MAX_PARAMS];	/* {} and * */
	int			 nparam;
	struct buf		 body;		/* NUL-terminated when buffered */
	const struct http_route	*route;
	bool			 keepalive;
	int			 body_error;	/* set by a streaming body fn */
	size_t			 streamed;	/* body bytes given to it so far */
	/* private */
	struct buf		 url;
	struct buf		 hdrs;		/* name\0value\0 ... */
	struct buf		 pbuf;		/* captured params */
	int			 nhdr;
	int			 last_value;
	size_t			 head_bytes;
	bool			 too_large;
	bool			 bad_version;
	bool			 head_done;	/* later headers are trailers */
};

struct http_server {
	ev_io			 io;
	ev_timer		 backoff;	/* after EMFILE on accept */
	ev_idle			 kick;		/* no blocking before deferred work */
	struct ev_loop		*loop;
	int			 fd;
	int			 nconns;
	int			 maxconns;
	double			 stuck_timeout;	/* s: drop a reader after it */
	double			 head_timeout;	/* s: 408 a head not done by then */
	double			 pause_timeout;	/* s: 503 a body paused this long */
	const struct http_route	*routes;
	void			*ctx;		/* for handlers */
	struct http_conn	*conns;		/* list of open connections */
};

struct http_conn {
	ev_io			 rio;
	ev_io			 wio;
	ev_timer		 timer;
	ev_prepare		 closer;	/* frees the connection, later */
	ev_prepare		 resume;	/* pipelined input, later */
	struct http_server	*srv;
	struct http_conn	*next, *prev;
	int			 fd;
	http_parser		 parser;
	struct buf		 in;
	struct buf		 out;
	struct http_req		 req;
	ev_tstamp		 last_io;	/* any I/O: the idle timeout */
	ev_tstamp		 last_out;	/* output moved: the stuck one */
	ev_tstamp		 head_at;	/* the current head began */
	ev_tstamp		 paused_at;	/* reading was paused */
	enum {
		HC_READ,	/* parsing a request */
		HC_BUSY,	/* handler owns the response */
		HC_STREAM,	/* a streamed response is being written */
		HC_CLOSING	/* write what is left, then close */
	}			 state;
	bool			 close_after;	/* no keep-alive */
	bool			 chunked_out;	/* stream uses chunked framing */
	bool			 read_paused;
	bool			 in_head;	/* a head is begun, not complete */
	bool			 peer_eof;	/* the client sends no more */
	bool			 req_head;	/* current request is HEAD */
	bool			 req_http10;	/* current request is HTTP/1.0 */
	bool			 processing;	/* inside http_conn_process */
	bool			 dead;
	/*
	 * Owner of a pending response or of a request body being streamed
	 * (a waiter, a follower, a held stdin).  on_close: the connection
	 * closed, or the owned request failed to parse; not called for a
	 * response the owner ended itself.
	 */
	void			*owner;
	void			(*on_drain)(struct http_conn *, void *);
	void			(*on_close)(struct http_conn *, void *);
};

int	http_listen(struct http_server *, struct ev_loop *, const char *path,
	    const struct http_route *, void *ctx, int maxconns);
void	http_stop_accepting(struct http_server *);
void	http_close_all(struct http_server *);

/* Request accessors. */
const char *http_header(struct http_req *, const char *name);
/*
 * Decoded value of query key into out: 1, or 0 when absent, or -1 when
 * it does not fit (callers size out above any valid value).
 */
int	http_query(struct http_req *, const char *key, char *out, size_t n);
/* A non-negative decimal query value: 1, 0 when absent, -1 when invalid. */
int	http_query_u64(struct http_req *, const char *key, uint64_t *);
/* 1 or 0 for true/1/false/0, dflt when absent, -1 when malformed. */
int	http_query_bool(struct http_req *, const char *key, int dflt);

/* Complete responses. */
void	http_reply(struct http_conn *, int status, const char *ctype,
	    const void *body, size_t len);
void	http_reply_json(struct http_conn *, int status, cJSON *);	/* frees */
void	http_reply_error(struct http_conn *, int status, const char *code,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The error object, for callers that add fields before replying. */
cJSON	*http_error_obj(const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* Streams.  HTTP_FRAME_CLOSE ends the body by closing (SSE). */
enum http_framing { HTTP_FRAME_CHUNKED, HTTP_FRAME_CLOSE };
int	http_stream_begin(struct http_conn *, int status, const char *ctype,
	    enum http_framing, const char *extra_headers);
int	http_stream_write(struct http_conn *, const void *, size_t);
void	http_stream_end(struct http_conn *);
int	http_sse_begin(struct http_conn *);
int	http_sse_event(struct http_conn *, const char *id, const char *json);
int	http_sse_comment(struct http_conn *, const char *);

/* Pending output bytes, for producers that pause above HTTP_OUT_HIGH. */
size_t	http_conn_pending(struct http_conn *);
void	http_conn_own(struct http_conn *, void *owner,
	    void (*on_drain)(struct http_conn *, void *),
	    void (*on_close)(struct http_conn *, void *));
void	http_conn_pause_read(struct http_conn *);
void	http_conn_resume_read(struct http_conn *);
void	http_conn_abort(struct http_conn *);

const char *http_status_text(int);

#endif
