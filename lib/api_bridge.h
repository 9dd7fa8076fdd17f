/*
 * api_bridge: the sandbox bridge's namespace, /v1/sandbox/{sandboxId}/...
 *
 * Today a plain alias of the API: the sandbox/{sandboxId} segments are
 * dropped, {sandboxId} is ignored, and the rest is routed as the API's
 * own path.  Routes only the bridge has go in this module's table, which
 * is matched before the API's.
 */
#ifndef TEND_API_BRIDGE_H
#define TEND_API_BRIDGE_H

#include "http.h"

/* The namespace hook (http_server_map): NULL for a path outside it. */
const struct http_route *api_bridge_map(void *ctx, char **path);

#endif
