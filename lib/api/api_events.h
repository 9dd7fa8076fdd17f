/*
 * api_events: GET /v1/events, the lifecycle event stream (core/events)
 * as Server-Sent Events or a JSON page.
 */
#ifndef TEND_API_EVENTS_H
#define TEND_API_EVENTS_H

#include "api.h"

extern const struct http_route api_events_routes[];

#endif
