/*
 * chunked: a strict check of a chunked request body's framing (RFC 9112
 * §7.1), run over the bytes before http_parser reads them.
 *
 * http_parser as Debian builds it (without HTTP_PARSER_STRICT) takes any
 * byte where the CR and LF after a chunk's data belong, and any byte in
 * a chunk extension: a proxy in front that reads the framing strictly
 * would find another end of the body, and the bytes after it another
 * request, than the agent.  So the framing is checked here first and a
 * body framed otherwise is refused, whatever the library's build.  The
 * chunk sizes, the body's end and the trailer fields' syntax stay the
 * parser's; this only says how far the framing is sound.  Pure: no I/O.
 */
#ifndef TEND_CHUNKED_H
#define TEND_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct chunked {
	int		 state;
	uint64_t	 left;		/* of the chunk's size, or its data */
};

/*
 * Begin at the start of the body; head_lf: one byte before it, the LF
 * that ends the head, is checked too (a parser paused at the head's end
 * has not read it yet).
 */
void	chunked_init(struct chunked *, bool head_lf);
/*
 * How many of p[0, n) belong to the body and are framed soundly: all of
 * them, or up to the body's end (chunked_done), or up to the first byte
 * that breaks the framing (chunked_bad).
 */
size_t	chunked_scan(struct chunked *, const char *p, size_t n);
bool	chunked_done(const struct chunked *);
bool	chunked_bad(const struct chunked *);

#endif
