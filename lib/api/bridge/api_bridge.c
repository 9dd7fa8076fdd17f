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

static enum api_bridge_life	api_bridge_state;

bool
api_bridge_id_valid(const char *id, size_t n)
{
	static const char	ok[] = "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";
	size_t			i;

	if (n == 0 || n > API_BRIDGE_ID_MAX)
		return false;
	for (i = 0; i < n; i++)
		if (id[i] == '\0' || strchr(ok, id[i]) == NULL)
			return false;
	return true;
}

/*
 * "/v1/sandbox/{id}/rest" is routed as "/v1/rest", written in place over
 * the end of the ID; "/v1/sandbox/{id}" as "/v1" (DELETE, the lifecycle).
 * The ID is checked as the path arrives, percent-escapes included: an
 * escape is not in the bridge's alphabet.
 */
enum api_bridge_ns
api_bridge_rewrite(char **path)
{
	const size_t	 plen = sizeof(api_bridge_prefix) - 1;
	const size_t	 alen = sizeof(api_bridge_as) - 1;
	char		*p = *path, *rest;

	if (strncmp(p, api_bridge_prefix, plen) != 0)
		return API_BRIDGE_OUTSIDE;
	if ((rest = strchr(p + plen, '/')) == NULL)
		rest = p + strlen(p);
	if (!api_bridge_id_valid(p + plen, (size_t)(rest - (p + plen)))) {
		memcpy(p, API_BRIDGE_BAD_PATH, sizeof(API_BRIDGE_BAD_PATH));
		return API_BRIDGE_BAD_ID;
	}
	*path = rest - alen;
	memcpy(*path, api_bridge_as, alen);
	return API_BRIDGE_IN;
}

enum api_bridge_life
api_bridge_life(void)
{
	return api_bridge_state;
}

void
api_bridge_set_life(enum api_bridge_life l)
{
	api_bridge_state = l;
}

/*
 * A request that uses the sandbox revives it, as the bridge's next use of
 * a destroyed sandbox's ID starts a container; asking whether it runs, or
 * deleting it again, does not.
 */
bool
api_bridge_map(char **path)
{
	enum api_bridge_ns	ns = api_bridge_rewrite(path);

	if (ns == API_BRIDGE_IN && api_bridge_state == API_BRIDGE_DELETED &&
	    strcmp(*path, "/v1") != 0 && strcmp(*path, "/v1/running") != 0)
		api_bridge_state = API_BRIDGE_FREE;
	return ns != API_BRIDGE_OUTSIDE;
}
