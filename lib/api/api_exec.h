/*
 * api_exec: POST /v1/exec — launch, wait for the root's exit, and reply
 * with its output (JSON), or stream it (SSE, through api_output).
 */
#ifndef TEND_API_EXEC_H
#define TEND_API_EXEC_H

#include "api.h"

extern const struct http_route api_exec_routes[];

/*
 * exec's own body fields, after api_launch_opts: "stdin" (base64 data,
 * decoded into in) and "maxOutputBytes" (capped at EXEC_MAX_OUTPUT_CAP).
 * 0, or -1 with 400.
 */
int	api_exec_opts(const cJSON *j, struct buf *in, uint64_t *max,
	    struct api_err *);

#endif
