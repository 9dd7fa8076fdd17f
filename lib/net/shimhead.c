/*
 * shimhead.c: the shim's check and rewrite of a request head (see
 * shimhead.h).
 */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "shimhead.h"

static int	shimhead_on_headers(http_parser *);
static int	shimhead_on_complete(http_parser *);
static int	shimhead_parse(struct shimhead *, const char *, size_t);
static bool	shimhead_token_ok(const char *, size_t, const char *, size_t);
static bool	shimhead_token_line(const char *, size_t, const char **,
		    size_t *);
static bool	shimhead_strip(const char *, size_t, const char *, size_t,
		    struct buf *);

static const http_parser_settings shimhead_settings = {
	.on_headers_complete = shimhead_on_headers,
	.on_message_complete = shimhead_on_complete,
};

static int
shimhead_on_complete(http_parser *p)
{
	struct shimhead	*h = p->data;

	h->done = true;
	http_parser_pause(p, 1);
	return 0;
}

static int
shimhead_on_headers(http_parser *p)
{
	struct shimhead	*h = p->data;

	h->headed = true;
	return 0;
}

/*
 * Run a fresh parser over the head p[0, n).  The parser, not the scan
 * for an empty line, is what the agent runs: the two must agree that the
 * head ends at its last byte, or what the shim checked and stripped is
 * not what the agent reads.  They can differ: http_parser, built without
 * HTTP_PARSER_STRICT, takes any byte after the CR of the empty line for
 * its LF, so "GET /health HTTP/1.1\r\n\r*GET /v1/... HTTP/1.1\r\n\r\n"
 * is one head to the scan and two requests to the agent (the second one
 * unchecked).  So the head is fed but for its last byte, which must be
 * the one that completes the parser's head.  -1: malformed or not one
 * head.
 */
static int
shimhead_parse(struct shimhead *h, const char *p, size_t n)
{
	size_t	k;

	http_parser_init(&h->parser, HTTP_REQUEST);
	h->parser.data = h;
	h->done = h->headed = h->upgrade = h->chunked = h->authed = false;
	k = http_parser_execute(&h->parser, &shimhead_settings, p, n - 1);
	if (k != n - 1 || HTTP_PARSER_ERRNO(&h->parser) != HPE_OK ||
	    h->headed)
		return -1;
	k = http_parser_execute(&h->parser, &shimhead_settings, p + n - 1, 1);
	if (k != 1 || !h->headed || (HTTP_PARSER_ERRNO(&h->parser) != HPE_OK &&
	    HTTP_PARSER_ERRNO(&h->parser) != HPE_PAUSED))
		return -1;
	return 0;
}

size_t
shimhead_end(const char *p, size_t n)
{
	size_t	i;

	for (i = 1; i < n; i++) {
		if (p[i] != '\n')
			continue;
		if (p[i - 1] == '\n')
			return i + 1;
		if (i >= 2 && p[i - 1] == '\r' && p[i - 2] == '\n')
			return i + 1;
	}
	return 0;
}

/*
 * A scan that took them for an empty head would refuse a request the
 * client and the agent both see: http_parser skips them.
 */
size_t
shimhead_blank(const char *p, size_t n)
{
	size_t	i;

	for (i = 0; i < n && (p[i] == '\r' || p[i] == '\n'); i++)
		;
	return i;
}

/* Constant time over equal lengths: nothing about the token leaks. */
static bool
shimhead_token_ok(const char *token, size_t token_len, const char *v,
    size_t n)
{
	unsigned char	diff = 0;
	size_t		i;

	while (n > 0 && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (token == NULL || n != token_len)
		return false;
	for (i = 0; i < n; i++)
		diff |= (unsigned char)v[i] ^ (unsigned char)token[i];
	return diff == 0;
}

/*
 * Whether the header line p[0, n) carries the token, and where its value
 * starts (*v, *vn: up to the line's end, CR LF removed): "Authorization:
 * Bearer T" or envd's "X-Access-Token: T".  Another Authorization scheme
 * (envd's Basic names its user) is not a token: it goes on unchanged.
 */
static bool
shimhead_token_line(const char *p, size_t n, const char **v, size_t *vn)
{
	static const char	auth[] = "authorization:", xat[] = "x-access-token:";
	size_t			k;

	if (n > sizeof(xat) - 1 && strncasecmp(p, xat, sizeof(xat) - 1) == 0)
		k = sizeof(xat) - 1;
	else if (n > sizeof(auth) - 1 &&
	    strncasecmp(p, auth, sizeof(auth) - 1) == 0)
		k = sizeof(auth) - 1;
	else
		return false;
	*v = p + k;
	*vn = n - k;
	while (*vn > 0 && ((*v)[*vn - 1] == '\n' || (*v)[*vn - 1] == '\r'))
		(*vn)--;
	if (k == sizeof(xat) - 1)
		return true;
	while (*vn > 0 && (**v == ' ' || **v == '\t'))
		(*v)++, (*vn)--;
	if (*vn < 6 || strncasecmp(*v, "bearer", 6) != 0)
		return false;
	/*
	 * Whatever starts "Bearer" is a token line, never forwarded; one
	 * without a blank after it ("Bearer", "Bearerx") carries no token.
	 */
	if (*vn > 6 && ((*v)[6] == ' ' || (*v)[6] == '\t')) {
		*v += 6;
		*vn -= 6;
	} else
		*vn = 0;
	return true;
}

/*
 * Append the head h[0, n) to up without the lines that carry the token
 * (and their obsolete continuations); true when there was one at least
 * and every one of them carried the right token (a folded one never
 * does).
 */
static bool
shimhead_strip(const char *token, size_t token_len, const char *h, size_t n,
    struct buf *up)
{
	const char	*line, *nl, *v;
	size_t		 len, vn;
	bool		 in_tok = false, ok = true;
	int		 seen = 0;

	for (line = h; line < h + n; line = nl + 1) {
		nl = memchr(line, '\n', h + n - line);
		len = nl - line + 1;
		if (line != h && (line[0] == ' ' || line[0] == '\t')) {
			if (in_tok) {
				ok = false;	/* folded: never a match */
				continue;
			}
		} else
			in_tok = line != h && shimhead_token_line(line, len,
			    &v, &vn);
		if (!in_tok) {
			(void)buf_add(up, line, len);
			continue;
		}
		seen++;
		if (!shimhead_token_ok(token, token_len, v, vn))
			ok = false;
	}
	return seen > 0 && ok;
}

enum shimhead_verdict
shimhead_check(struct shimhead *h, const char *token, size_t token_len,
    const char *p, size_t n, struct buf *up)
{
	size_t	k;
	bool	auth, open;

	if (n == 0 || shimhead_parse(h, p, n) == -1)
		return SHIMHEAD_MALFORMED;
	/*
	 * The agent would answer it 400 and close: what was sent after it
	 * would get no reply, and an answer of the shim's own to a later
	 * request would be taken for theirs.  Refused here, it ends the
	 * connection in order.
	 */
	if (h->parser.http_major != 1 || h->parser.http_minor > 1)
		return SHIMHEAD_VERSION;
	open = h->parser.method == HTTP_GET && (strncmp(p, "GET /health ",
	    12) == 0 || strncmp(p, "GET /health?", 12) == 0);
	h->upgrade = h->parser.upgrade;
	k = buf_avail(up);
	auth = shimhead_strip(token, token_len, p, n, up);
	if (token == NULL)
		auth = true;
	h->authed = auth;
	if (!auth && !open) {
		up->len = up->off + k;	/* nothing of it goes up */
		return SHIMHEAD_DENIED;
	}
	if ((h->parser.flags & F_CHUNKED) && !h->done && !h->upgrade) {
		chunked_init(&h->chunks, false);
		h->chunked = true;
	}
	return SHIMHEAD_FORWARD;
}

/*
 * A chunked body's bytes go to the parser as far as they are framed
 * soundly: the shim reads the body's end where the agent does.
 */
size_t
shimhead_body(struct shimhead *h, const char *p, size_t n)
{
	if (h->chunked && (n = chunked_scan(&h->chunks, p, n)) == 0)
		return 0;
	return http_parser_execute(&h->parser, &shimhead_settings, p, n);
}

void
shimhead_too_large(struct shimhead *h, const char *p, size_t n)
{
	http_parser_init(&h->parser, HTTP_REQUEST);
	h->parser.data = h;
	h->done = h->headed = h->upgrade = false;
	(void)http_parser_execute(&h->parser, &shimhead_settings, p, n);
}

bool
shimhead_is_head(const struct shimhead *h)
{
	return h->parser.method == HTTP_HEAD;
}
