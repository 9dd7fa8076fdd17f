/*
 * api_envd_stream: process.Process's streams — Start (a launch) and
 * Connect (a selected record) — each the record's events as a Connect
 * stream, read from the record by the follow pump.
 */
#ifndef TEND_API_ENVD_STREAM_H
#define TEND_API_ENVD_STREAM_H

#include "net/http.h"

/* Listed before api_envd_routes, whose last route is the rest's. */
extern const struct http_route api_envd_stream_routes[];

#endif
