/*
 * api_bridge: the sandbox bridge's namespace, /v1/sandbox/{sandboxId}/...
 *
 * The sandbox/{sandboxId} segments are dropped and the rest is routed as
 * the API's own path; {sandboxId} must match ^[A-Za-z0-9._-]{1,128}$.
 * Routes only the bridge has are matched before the API's.
 */
#ifndef TEND_API_BRIDGE_H
#define TEND_API_BRIDGE_H

#include <stdbool.h>
#include <stddef.h>

/* Where a path lies. */
enum api_bridge_ns {
	API_BRIDGE_OUTSIDE = 0,		/* not in the namespace: untouched */
	API_BRIDGE_IN,			/* rewritten to the API path */
	API_BRIDGE_BAD_ID		/* in it, with an invalid {sandboxId} */
};

#define API_BRIDGE_ID_MAX	128
/* What a path with a bad ID is routed as (no longer than the prefix). */
#define API_BRIDGE_BAD_PATH	"/v1/sandbox!"

/*
 * A path in the namespace is rewritten in place (never longer) to the
 * API path it is routed as; one with a bad ID as API_BRIDGE_BAD_PATH,
 * which the bridge's table answers with 400 for every method.
 */
enum api_bridge_ns api_bridge_rewrite(char **path);
/*
 * The container's one sandbox as the bridge's clients see it (proto
 * README §14): DELETE ends it, the next request that needs it revives it.
 */
enum api_bridge_life {
	API_BRIDGE_FREE = 0,		/* no POST /v1/sandbox holds it */
	API_BRIDGE_CREATED,		/* a POST /v1/sandbox handed out its ID */
	API_BRIDGE_DELETED		/* a DELETE ended it; nothing needed it since */
};
enum api_bridge_life	api_bridge_life(void);
void	api_bridge_set_life(enum api_bridge_life);
/*
 * api_bridge_rewrite as struct api_ns's rewrite: true unless OUTSIDE.  A
 * path of the namespace other than the lifecycle's own ("/v1/sandbox/{id}"
 * and its "/running") revives a DELETED sandbox (FREE).
 */
bool	api_bridge_map(char **path);
/* ^[A-Za-z0-9._-]{1,128}$ on the n bytes of id. */
bool	api_bridge_id_valid(const char *id, size_t n);

#endif
