/*
 * multipart: a streaming multipart/form-data parser (RFC 7578 over RFC
 * 2046's framing) in bounded memory whatever the body's size: bytes go
 * in as they arrive, in pieces of any size, and come out through
 * callbacks as each part's headers and then its content in pieces.
 * Nothing but one part's headers (at most MULTIPART_HEAD_MAX) is ever
 * held.  No I/O, no allocation: a fuzzer feeds it bytes.
 *
 * Debian has no maintained C library that parses form-data by pieces
 * (libmicrohttpd's post processor wants its daemon; gmime is for mail,
 * and whole messages): hence this one.
 */
#ifndef TEND_MULTIPART_H
#define TEND_MULTIPART_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/tunables.h"

/* What a part's headers said. */
struct multipart_part {
	char	 name[256];		/* Content-Disposition's name */
	char	 filename[PATH_MAX];	/* its filename (or filename*) */
	bool	 has_filename;
	char	 ctype[128];		/* Content-Type, "" if none */
};

/*
 * The callbacks: 0 to go on, -1 (errno set) to stop the parse, which
 * then returns -1 with that errno.  data is called with the content in
 * pieces (never with 0 bytes); end once the part's closing delimiter
 * was seen (a part cut short by the body's end gets no end).
 */
struct multipart_cb {
	int	(*begin)(void *arg, const struct multipart_part *);
	int	(*data)(void *arg, const char *, size_t);
	int	(*end)(void *arg);
};

enum multipart_state {
	MP_PREAMBLE,	/* before the first delimiter: ignored */
	MP_AFTER,	/* a delimiter matched: "--", or padding then CRLF */
	MP_AFTER_LF,	/* its CR seen, LF expected */
	MP_DASH,	/* one '-' of the close delimiter seen */
	MP_HEAD,	/* a part's headers, up to the empty line */
	MP_BODY,	/* its content, up to the next delimiter */
	MP_DONE		/* the close delimiter seen: the epilogue is ignored */
};

struct multipart {
	enum multipart_state		 state;
	const struct multipart_cb	*cb;
	void				*arg;
	char				 delim[4 + MULTIPART_BOUNDARY_MAX + 1];
	size_t				 dlen;	/* "\r\n--" + boundary */
	size_t				 match;	/* of delim, matched so far */
	size_t				 hlen;
	int				 nparts;
	struct multipart_part		 part;
	char				 head[MULTIPART_HEAD_MAX];
};

/*
 * The boundary parameter of a multipart Content-Type into out (cap
 * bytes): 0, or -1 with EINVAL (not multipart/form-data, no boundary,
 * one longer than MULTIPART_BOUNDARY_MAX or with bytes RFC 2046 does not
 * allow).
 */
int	multipart_boundary(const char *ctype, char *out, size_t cap);
/* Ready for a body with boundary (as multipart_boundary checks it). */
int	multipart_init(struct multipart *, const char *boundary,
	    const struct multipart_cb *, void *arg);
/*
 * The next n bytes of the body.  -1 with errno: EINVAL (malformed:
 * bad headers, junk after a delimiter), EMSGSIZE (headers longer than
 * MULTIPART_HEAD_MAX), E2BIG (more than MULTIPART_PARTS_MAX parts), or
 * a callback's.  After -1 the parser takes nothing more.
 */
int	multipart_feed(struct multipart *, const char *, size_t);
/* The body ended: 0 if it closed properly, -1 (EINVAL) if it was cut. */
int	multipart_finish(const struct multipart *);

#endif
