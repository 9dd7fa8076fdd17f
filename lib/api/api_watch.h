/*
 * api_watch: GET /v1/watch?path=DIR[&recursive=1][&cursor=C], a
 * directory's changes as Server-Sent Events, read from the shared
 * watches of lib/core/watch.c (api->watches, over the files root).
 */
#ifndef TEND_API_WATCH_H
#define TEND_API_WATCH_H

#include <stdint.h>

#include "core/watch.h"
#include "net/http.h"

#define API_WATCH_CURSOR_MAX	48	/* "<16 hex>-<seq>", NUL included */

/* A cursor of watch w at seq: "<watch id, hex>-<seq>". */
void	api_watch_cursor(char out[API_WATCH_CURSOR_MAX], const struct watch *,
	    uint64_t seq);
/*
 * Where a client's cursor s (NULL: none) resumes in w: *seq, and
 * whether events may have been lost since (a cursor of another watch:
 * this one began after it).  -1: malformed.
 */
int	api_watch_resume(const char *s, const struct watch *, uint64_t *seq,
	    bool *lost);

extern const struct http_route api_watch_routes[];

#endif
