/*
 * api_bridge.c: the bridge's /v1/sandbox/{sandboxId} namespace — which
 * paths are in it, what they are routed as, and the routes only the
 * bridge has (none yet: every one is the API's, the same handlers).
 */
#include <string.h>

#include "api_bridge.h"
#include "api_files.h"

static const char	api_bridge_prefix[] = "/v1/sandbox/";
static const char	api_bridge_as[] = "/v1";	/* what the prefix is read as */

/*
 * Matched before the API's routes, on the path as mapped.  Every file
 * method is here, so that none falls through to the files root.
 */
static const struct http_route api_bridge_routes[] = {
	{ "GET",	"/v1/file/*",	api_files_bridge_get, NULL },
	{ "HEAD",	"/v1/file/*",	api_files_bridge_get, NULL },
	{ "PUT",	"/v1/file/*",	api_files_bridge_put,
	    api_files_bridge_put_body },
	{ "DELETE",	"/v1/file/*",	api_files_bridge_delete, NULL },
	{ "POST",	"/v1/file/*",	api_files_bridge_post, NULL },
	{ "GET",	"/v1/persist",	api_files_bridge_persist, NULL },
	{ "POST",	"/v1/persist",	api_files_bridge_persist, NULL },
	{ "POST",	"/v1/hydrate",	api_files_bridge_hydrate,
	    api_files_bridge_hydrate_body },
	{ NULL, NULL, NULL, NULL }
};

/*
 * "/v1/sandbox/{id}/rest" is routed as "/v1/rest", written in place over
 * the end of the ID.  An empty ID ("/v1/sandbox//processes") or a path
 * that ends with the ID ("/v1/sandbox/id", read as "/v1") is taken as it
 * always was: the ID is not the agent's to check.
 */
const struct http_route *
api_bridge_map(void *ctx, char **path)
{
	const size_t	 plen = sizeof(api_bridge_prefix) - 1;
	const size_t	 alen = sizeof(api_bridge_as) - 1;
	char		*p = *path, *rest;

	(void)ctx;
	if (strncmp(p, api_bridge_prefix, plen) != 0)
		return NULL;
	if ((rest = strchr(p + plen, '/')) == NULL)
		rest = p + strlen(p);
	*path = rest - alen;
	memcpy(*path, api_bridge_as, alen);
	return api_bridge_routes;
}
