/*
 * api_tar: /v1/persist (the files root, or a directory in it, as a tar
 * stream) and /v1/hydrate (a tar body unpacked into it), and the
 * bridge's forms against the workspace.  The archive is lib/core/tar.c's
 * child's; this module moves its pipes to and from the connection, one
 * budgeted share per callback, in constant memory.
 */
#ifndef TEND_API_TAR_H
#define TEND_API_TAR_H

#include "net/http.h"

/* tend's routes on the files root; the bridge's on the workspace. */
extern const struct http_route api_tar_routes[];
extern const struct http_route api_tar_bridge_routes[];

#endif
