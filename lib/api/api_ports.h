/*
 * api_ports: GET /v1/ports (the listening TCP sockets and their owners,
 * core/portwatch) and the readiness wait of a process,
 * POST /v1/processes/{id}/wait?for=ready (core/ready).
 */
#ifndef TEND_API_PORTS_H
#define TEND_API_PORTS_H

#include <stdint.h>

#include "api.h"
#include "net/http.h"

extern const struct http_route api_ports_routes[];

/*
 * Answer a wait?for=ready on p: 200 with the status once ready, 409
 * ended or ready_timeout, 400 when p was launched without "ready"; the
 * status as it is when ms (> 0) pass first.
 */
void	api_ports_wait_ready(struct http_conn *, struct proc *, uint64_t ms);

#endif
