/*
 * api_health: GET /v1/health (liveness and storage state) and
 * GET /v1/metrics (Prometheus text).
 */
#ifndef TEND_API_HEALTH_H
#define TEND_API_HEALTH_H

#include "net/http.h"

extern const struct http_route api_health_routes[];

#endif
