/*
 * api_pty: the bridge's terminal over a WebSocket, GET
 * /v1/sandbox/{id}/pty?cols=&rows=&shell=&cwd=&terminalId=&session=
 * (routed as /v1/pty): a terminal's session (lib/api/api_term_ws.h) in
 * the bridge's framing, on the named terminal or on a fresh one in the
 * workspace (or the bridge session's cwd, with its env), which ends when
 * its socket closes.
 */
#ifndef TEND_API_PTY_H
#define TEND_API_PTY_H

#include "net/http.h"

/* In the bridge's namespace (paths as rewritten). */
extern const struct http_route api_pty_bridge_routes[];

#endif
