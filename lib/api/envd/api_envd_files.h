/*
 * api_envd_files: envd's file transfer routes, GET and POST /files, at
 * the root of the socket for the E2B SDKs: a download (api_files_send:
 * Range honoured), and an upload streamed to lib/core/upload.c as it
 * arrives — octet-stream or multipart/form-data, gzip or not — each file
 * made the request's user's, as envd leaves what it writes.
 */
#ifndef TEND_API_ENVD_FILES_H
#define TEND_API_ENVD_FILES_H

#include <stddef.h>

#include "net/http.h"

void	api_envd_files_get(struct http_conn *, struct http_req *);
void	api_envd_files_post(struct http_conn *, struct http_req *);
void	api_envd_files_post_body(struct http_conn *, struct http_req *,
	    const char *, size_t);

#endif
