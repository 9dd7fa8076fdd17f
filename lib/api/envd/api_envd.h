/*
 * api_envd: envd's process service (process.Process, Connect with the
 * JSON codec) and POST /init, at the root of the socket, for the E2B
 * SDKs: its unary RPCs here, its streams (Start, Connect) in
 * api_envd_stream.h.  An RPC of the service that tend does not serve
 * answers unimplemented; the filesystem service is lib/api_envd_fs.c's.
 */
#ifndef TEND_API_ENVD_H
#define TEND_API_ENVD_H

#include <stdbool.h>

#include "api/api.h"
#include "envd.h"

/* What a selector names: a process or a terminal (one of them). */
struct envd_target {
	struct proc	*p;
	struct term	*t;
};

/* Listed after api_envd_stream_routes: its last route is the rest's. */
extern const struct http_route api_envd_routes[];

/*
 * The request's "process" selector: {pid} or {tag}.  -1 with
 * invalid_argument, or not_found when nothing answers it.
 */
int	api_envd_select(struct api *, const cJSON *j, struct envd_target *,
	    struct envd_err *);
bool	api_envd_ended(const struct envd_target *);
/* The start event of pid, onto c's stream. */
int	api_envd_start_msg(struct http_conn *c, pid_t pid);
/*
 * The end event of an ended record, as envd sends it (a string to free).
 * *timed_out: its lifetime ran out.
 */
char	*api_envd_end_json(const struct envd_target *, bool *timed_out);
/* pty.size.cols and rows, 0 (absent) for the default. */
int	api_envd_pty_size(const cJSON *pty, unsigned int *cols,
	    unsigned int *rows, struct envd_err *);
/*
 * Keep the names of envs for rec, the process's or terminal's job (best
 * effort: List shows {} without).
 */
void	api_envd_names_add(struct api *, const void *rec,
	    const cJSON *envs);

#endif
