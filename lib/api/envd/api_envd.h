/*
 * api_envd: envd's process service (process.Process, Connect with the
 * JSON codec) and POST /init, at the root of the socket, for the E2B
 * SDKs.  An RPC of the service that tend does not serve answers
 * unimplemented; the filesystem service is lib/api_envd_fs.c's.
 */
#ifndef TEND_API_ENVD_H
#define TEND_API_ENVD_H

#include "api/api.h"

extern const struct http_route api_envd_routes[];

#endif
