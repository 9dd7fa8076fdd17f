/*
 * api_bridge.c: the bridge's /v1/sandbox/{sandboxId} namespace — which
 * paths are in it and what they are routed as.  The routes only the
 * bridge has are the route modules' (api_files_bridge_routes, ...): the
 * agent lists them, api.c matches them first.
 */
#include <string.h>

#include "api_bridge.h"

static const char	api_bridge_prefix[] = "/v1/sandbox/";
static const char	api_bridge_as[] = "/v1";	/* what the prefix is read as */

/*
 * "/v1/sandbox/{id}/rest" is routed as "/v1/rest", written in place over
 * the end of the ID.  An empty ID ("/v1/sandbox//processes") or a path
 * that ends with the ID ("/v1/sandbox/id", read as "/v1") is taken as it
 * always was: the ID is not the agent's to check.
 */
bool
api_bridge_rewrite(char **path)
{
	const size_t	 plen = sizeof(api_bridge_prefix) - 1;
	const size_t	 alen = sizeof(api_bridge_as) - 1;
	char		*p = *path, *rest;

	if (strncmp(p, api_bridge_prefix, plen) != 0)
		return false;
	if ((rest = strchr(p + plen, '/')) == NULL)
		rest = p + strlen(p);
	*path = rest - alen;
	memcpy(*path, api_bridge_as, alen);
	return true;
}
