/*
 * api_output: the routes that read a process's stored output — the log
 * stream (SSE, with cursors), its JSON poll, and the raw stdout/stderr
 * streams — and the HTTP sinks of the follow pump (lib/follow.c).
 */
#ifndef TEND_API_OUTPUT_H
#define TEND_API_OUTPUT_H

#include "api.h"

extern const struct http_route api_output_routes[];

/* exec's reply and stream: a field per stream */
extern const char *const api_output_streams[LS_NSTREAMS];

/*
 * exec's SSE: the running process's output from its start, ended when
 * the root has exited, with a truncated event for bytes the disk
 * refused as they grow.  Replies itself on failure.
 */
void	api_output_exec_stream(struct http_conn *, struct proc *);

/*
 * The bridge's exec stream: "event: stdout|stderr" + "data: <base64>",
 * then "event: exit" + {"exit_code":N} (124: timed out; 128 + N: signal
 * N), with the record's ID in X-Tend-Process-Id.  _failed: a command
 * that could not be started, as a shell says it (stderr, 127 or 126).
 */
void	api_output_bridge_exec_stream(struct http_conn *, struct proc *);
void	api_output_bridge_exec_failed(struct http_conn *, const char *argv0,
	    int err);
/* The exit_code of that "exit" event, for a reaped process. */
int	api_output_bridge_code(struct proc *);

/* Query checks. */
/* ?follow= and ?offset= of a raw stream: 0, or -1 with 400. */
int	api_output_raw_query(struct http_req *, int *follow, uint64_t *offset,
	    struct api_err *);
/*
 * ?replay=, ?follow= and the cursor (?since=, else Last-Event-ID) of the
 * log stream: 0 with *since (NULL: none; into q), or -1 with 400.
 */
int	api_output_since_query(struct http_req *, int *replay, int *follow,
	    const char **since, char *q, size_t n, struct api_err *);
/* ?limitBytes= of a poll, capped at LOGS_JSON_LIMIT_CAP: 0, or -1. */
int	api_output_limit_query(struct http_req *, uint64_t *limit,
	    struct api_err *);

#endif
