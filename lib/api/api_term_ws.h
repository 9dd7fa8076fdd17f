/*
 * api_term_ws: a terminal's output and input over a WebSocket — the
 * session, its connect route (GET /v1/terminals/{id}/connect), and the
 * session's API for the bridge's /pty (lib/api/bridge/api_pty.c), which
 * frames the same session its own way.  Output is read through follow.c
 * from a cursor: a slow client pauses its follow (the files are the
 * buffer), never a copy in memory.  Closing a socket never ends a
 * terminal, except one the session owns (a fresh one /pty started).
 */
#ifndef TEND_API_TERM_WS_H
#define TEND_API_TERM_WS_H

#include <stdbool.h>
#include <stddef.h>

#include "api.h"
#include "api_term_src.h"

struct api_term_ws;

extern const struct http_route api_term_ws_routes[];

/*
 * A session on c, not yet attached; NULL after a 503.  bridge: the
 * bridge's /pty framing (bare output, no cursors, its exit frame).
 */
struct api_term_ws *api_term_ws_new(struct http_conn *, struct termtab *,
	    bool bridge);
/* The session's source, for a read of an earlier boot's record. */
struct api_term_src *api_term_ws_src(struct api_term_ws *);
/* Its terminal (NULL: the source's record); owned: terminated on close. */
void	api_term_ws_set_term(struct api_term_ws *, struct term *,
	    bool owned);
/* Its follow, from since (NULL: the start); -1 with e. */
int	api_term_ws_follow(struct api_term_ws *, const char *since,
	    struct api_err *);
/* A session that is not attached: refused with e; its owned terminal ends. */
void	api_term_ws_refuse(struct http_conn *, struct api_term_ws *,
	    const struct api_err *);
/* The 101 with accept, then the socket is the session's. */
void	api_term_ws_attach(struct http_conn *, struct api_term_ws *,
	    const char *accept);
/*
 * The request's handshake: 0 with the accept header in hdr, or -1 with
 * the refusal (400 without an upgrade at all).
 */
int	api_term_ws_handshake(struct http_req *, char *hdr, size_t n,
	    struct api_err *);
/* "cols" and "rows" of a query: absent 0, else 1..PTY_MAX_DIM. */
int	api_term_ws_dims(struct http_req *, unsigned int *cols,
	    unsigned int *rows, struct api_err *);

#endif
