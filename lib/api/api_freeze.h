/*
 * api_freeze: POST /v1/processes/{id}/freeze|thaw and POST
 * /v1/freeze|thaw (every process and terminal) through cgroup.freeze.
 */
#ifndef TEND_API_FREEZE_H
#define TEND_API_FREEZE_H

#include "net/http.h"

extern const struct http_route api_freeze_routes[];

#endif
