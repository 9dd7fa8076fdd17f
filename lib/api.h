/*
 * api: the bridge protocol's routes and their handlers.
 */
#ifndef TEND_API_H
#define TEND_API_H

#include <stdint.h>

#include "http.h"
#include "proc.h"
#include "term.h"

struct api {
	struct proctab		*tab;
	struct termtab		*terms;
	struct http_server	*srv;
	int64_t			 started_mono;	/* ms */
	uint64_t		 followers;	/* active log streams */
};

extern const struct http_route api_routes[];

/*
 * The agent's server on path: api_routes, with the bridge's namespace
 * mapped before them.  -1 with errno set.
 */
int	api_listen(struct api *, struct ev_loop *, const char *path,
	    int maxconns);

/* Helpers shared by the route modules. */
struct api	*api_of(struct http_conn *);
/*
 * The boot a request is pinned to: 0 for the current one; 1 for a
 * retained earlier boot (*procsfd opened) when the call only reads; -1
 * after replying 410 stale_boot.
 */
int	api_pin(struct http_conn *, struct http_req *, bool readonly,
	    int *procsfd);
/* The current boot's process named by the route's first {}, or reply 404. */
struct proc *api_proc(struct http_conn *, struct http_req *);
/*
 * Parse a launch body into opts (pointers into j; *envbuf and *argvbuf
 * to be freed).  exec: "stdin" is data, not a mode.  -1 after replying.
 */
int	api_launch_opts(struct http_conn *, cJSON *j, bool exec,
	    struct proc_opts *, char ***argvbuf, char ***envbuf);
/*
 * The request's JSON body: well-formed UTF-8, one JSON value and nothing
 * after it, no NUL inside strings.  NULL after replying 400.
 */
cJSON	*api_parse_body(struct http_conn *, struct http_req *);
/* 400 invalid_request naming the field. */
void	api_invalid(struct http_conn *, const char *field, const char *why);
/* A JSON number that is a whole number within [lo, hi]. */
bool	api_integer(const cJSON *, double lo, double hi);
void	api_reply_spawn_error(struct http_conn *, bool spawn_failed, int err,
	    const char *id);

/* Handlers in other modules (logs.c). */
void	logs_raw(struct http_conn *, struct http_req *);
void	logs_get(struct http_conn *, struct http_req *);
void	logs_exec(struct http_conn *, struct http_req *);
void	logs_metrics(struct http_conn *, struct http_req *);

#endif
