/*
 * http_conn: the server's and a connection's insides, shared by the
 * files of the http module and by no one else (callers see http.h).
 *
 * http.c owns the listening socket and the connection limit;
 * http_conn.c a connection's buffers, watchers and timeouts;
 * http_parse.c the parsing of requests, their routing and the request
 * accessors; http_reply.c the framing of responses.  One module in four
 * files: a connection parses, a parse replies, a reply resumes the
 * connection, so no file stands below another.
 */
#ifndef TEND_HTTP_CONN_H
#define TEND_HTTP_CONN_H

#include <stdbool.h>
#include <stddef.h>

#include <ev.h>
#include <http_parser.h>

#include "base/buf.h"
#include "chunked.h"
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
	http_peer_fn		 limited;	/* a peer kept out of the reserve */
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
	bool			 chunked;	/* a chunked body: chunks checks it */
	bool			 head_paused;	/* the parser stopped at its head */
	struct chunked		 chunks;	/* its framing, read so far */
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

/* http.c: the server. */
/* Keep the loop from blocking until deferred work has run. */
void	http_kick(struct http_server *);
/* Let a woken reader run first, once per loop turn. */
void	http_yield(struct http_server *);

/* http_conn.c: a connection. */
void	http_conn_new(struct http_server *, int fd);
/* Free a dead connection (from the loop, or with its server). */
void	http_conn_close(struct ev_loop *, struct http_conn *);
/* Too much unsent output to take the next request. */
bool	http_conn_out_full(struct http_conn *);
/* Start or stop reading for the connection's current needs. */
void	http_conn_watch(struct http_conn *);
/* Write what the socket takes now; -1 if the connection died. */
int	http_conn_flush(struct http_conn *);
/* After the client's end: close once what is queued is written. */
void	http_conn_eof_close(struct http_conn *);
/* The owner is told that the connection no longer serves it. */
void	http_conn_disown(struct http_conn *);

/* http_parse.c: requests. */
/* Feed buffered input to the parser, dispatching whole requests. */
void	http_conn_process(struct http_conn *);
void	http_req_reset(struct http_conn *);
/* The request in progress fails: its error is the last reply. */
void	http_fail_request(struct http_conn *);
/* The request's body goes to its route piece by piece. */
bool	http_req_streams(const struct http_req *);

#endif
