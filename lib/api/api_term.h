/*
 * api_term: the terminal resources' REST routes (/v1/terminals...).
 * The agent lists its table; the engine is lib/term.h.  A terminal's
 * output as SSE is api_term_sse's, over a WebSocket api_term_ws's.
 */
#ifndef TEND_API_TERM_H
#define TEND_API_TERM_H

#include "api.h"
#include "net/http.h"

extern const struct http_route api_term_routes[];
/* POST /v1/terminals with cwd (if not NULL) for the body's: the bridge's. */
void	api_term_create_cwd(struct http_conn *, struct http_req *,
	    const char *cwd);
/*
 * The boot a terminal read is pinned to: 0 for the current one; 1 for a
 * retained earlier boot, *termsfd its terms directory (-1 when it has
 * none: an agent without terminals ran it); -1 with 410 stale_boot.
 */
int	api_term_pinned_dir(struct api *, struct http_req *, int *termsfd,
	    struct api_err *);

#endif
