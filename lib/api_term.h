/*
 * api_term: the terminal resources' REST routes (/v1/terminals...).
 * The agent lists its table; the engine is lib/term.h.
 */
#ifndef TEND_API_TERM_H
#define TEND_API_TERM_H

#include "http.h"

extern const struct http_route api_term_routes[];
/* api_term_ws.c: connect (WebSocket) and the output SSE; the bridge's /pty */
extern const struct http_route api_term_ws_routes[];
extern const struct http_route api_term_bridge_routes[];

#endif
