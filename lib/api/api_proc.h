/*
 * api_proc: the process routes — launch, list, status, kill, stdin,
 * wait, delete — and their query and body checks.
 */
#ifndef TEND_API_PROC_H
#define TEND_API_PROC_H

#include "api.h"

extern const struct http_route api_proc_routes[];

/* POST /v1/processes with cwd (if not NULL) for the body's: the bridge's. */
void	api_proc_launch_cwd(struct http_conn *, struct http_req *,
	    const char *cwd);

/* ?state= of a list into want[16] ("" for all): 0, or -1 with 400. */
int	api_proc_state_query(struct http_req *, char want[16],
	    struct api_err *);
/* ?timeout= of a wait, in ms: 0, or -1 with 400. */
int	api_proc_timeout_query(struct http_req *, uint64_t *ms,
	    struct api_err *);
/* A kill body (may be empty) into *sig and *group: 0, or -1 with 400. */
int	api_proc_kill_body(struct http_req *, int *sig, bool *group,
	    struct api_err *);

#endif
