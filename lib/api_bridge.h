/*
 * api_bridge: the sandbox bridge's namespace, /v1/sandbox/{sandboxId}/...
 *
 * Today a plain alias of the API: the sandbox/{sandboxId} segments are
 * dropped, {sandboxId} is ignored, and the rest is routed as the API's
 * own path.  Routes only the bridge has are matched before the API's.
 */
#ifndef TEND_API_BRIDGE_H
#define TEND_API_BRIDGE_H

#include <stdbool.h>

/*
 * A path in the namespace is rewritten in place (never longer) to the
 * API path it is routed as: true.  false, untouched, for one outside it.
 */
bool	api_bridge_rewrite(char **path);

#endif
