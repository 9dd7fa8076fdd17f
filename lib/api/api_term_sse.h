/*
 * api_term_sse: GET /v1/terminals/{id}/output?since&replay&follow, a
 * terminal's output as Server-Sent Events, read through follow.c from a
 * cursor (a slow client pauses its follow: the files are the buffer).
 * A read pinned to an earlier boot reads that boot's record
 * (api_term_src.h).
 */
#ifndef TEND_API_TERM_SSE_H
#define TEND_API_TERM_SSE_H

#include "net/http.h"

extern const struct http_route api_term_sse_routes[];

#endif
