/*
 * shimhead: the shim's decision on one request head, and the rewrite it
 * forwards.  Pure: bytes in, a verdict and bytes out, no socket, so that
 * tests and fuzzers call it alone (shim.c does the I/O).
 *
 * A head is checked as the agent will parse it (http_parser), refused
 * when malformed or of another HTTP version, and allowed when it carries
 * the token (Authorization: Bearer, or X-Access-Token) on every token
 * line or asks for GET /health; the token lines are removed from what is
 * forwarded.  The same parser then runs over the body only to learn where
 * it ends, a chunked body's framing checked strictly first (chunked.h),
 * as the agent checks it.
 */
#ifndef TEND_SHIMHEAD_H
#define TEND_SHIMHEAD_H

#include <stdbool.h>
#include <stddef.h>

#include <http_parser.h>

#include "base/buf.h"
#include "chunked.h"

/* One client's request in progress, as the shim follows it. */
struct shimhead {
	http_parser	 parser;
	bool		 headed;	/* the parser saw a head end */
	bool		 done;		/* the parser saw a message end */
	bool		 upgrade;	/* the head asks to switch protocols */
	bool		 authed;	/* it carried the token (or none asked) */
	bool		 chunked;	/* its body's framing: chunks checks it */
	struct chunked	 chunks;
};

enum shimhead_verdict {
	SHIMHEAD_FORWARD,	/* allowed: stripped, appended to up */
	SHIMHEAD_MALFORMED,	/* not one well-formed head: 400 */
	SHIMHEAD_VERSION,	/* not HTTP/1.0 or 1.1: 400 */
	SHIMHEAD_DENIED		/* no valid token: 401, nothing appended */
};

/* The end of a head in p[0, n): just past its empty line; 0: none. */
size_t	shimhead_end(const char *p, size_t n);
/* Empty lines before a request line (RFC 9112 §2.2): their length. */
size_t	shimhead_blank(const char *p, size_t n);
/*
 * Check the whole head h[0, n) (shimhead_end's n) against token
 * (token_len bytes; NULL: no authentication) and, when it is allowed,
 * append it without its token lines to up, which has room for n bytes
 * (it does not grow).  h->done says whether the message ended with its
 * head (no body); h->upgrade whether it asks to switch protocols.
 */
enum shimhead_verdict shimhead_check(struct shimhead *, const char *token,
	    size_t token_len, const char *h, size_t n, struct buf *up);
/*
 * Body bytes p[0, n) after a forwarded head: how many belong to the
 * message (all of them, or up to its end, h->done then); fewer, and not
 * done, when its framing is bad (nothing after them is the message's).
 */
size_t	shimhead_body(struct shimhead *, const char *p, size_t n);
/* A head longer than the limit: its method parsed, for the refusal. */
void	shimhead_too_large(struct shimhead *, const char *p, size_t n);
/* The request (checked or refused) is a HEAD: its refusal has no body. */
bool	shimhead_is_head(const struct shimhead *);

#endif
