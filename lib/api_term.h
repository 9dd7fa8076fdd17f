/*
 * api_term: the terminal resources' REST routes (/v1/terminals...).
 * Rows of api.c's table; the engine is lib/term.h.
 */
#ifndef TEND_API_TERM_H
#define TEND_API_TERM_H

#include "http.h"

void	api_term_create(struct http_conn *, struct http_req *);
void	api_term_list(struct http_conn *, struct http_req *);
void	api_term_get(struct http_conn *, struct http_req *);
void	api_term_delete(struct http_conn *, struct http_req *);
void	api_term_interrupt(struct http_conn *, struct http_req *);
void	api_term_terminate(struct http_conn *, struct http_req *);
void	api_term_resize(struct http_conn *, struct http_req *);
void	api_term_input(struct http_conn *, struct http_req *);
void	api_term_input_body(struct http_conn *, struct http_req *,
	    const char *, size_t);

#endif
