/*
 * shimhead.c: the shim's check and rewrite of a request head (see
 * shimhead.h).
 */
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "base/codec.h"
#include "base/tunables.h"
#include "shimhead.h"

/* A query token's value, decoded: "Bearer " and the token, some blanks. */
#define SHIMHEAD_QTOKEN_MAX	(SHIM_TOKEN_MAX + 16)

static int	shimhead_on_headers(http_parser *);
static int	shimhead_on_complete(http_parser *);
static int	shimhead_parse(struct shimhead *, const char *, size_t);
static bool	shimhead_token_ok(const char *, size_t, const char *, size_t);
static bool	shimhead_token_line(const char *, size_t, const char **,
		    size_t *);
static bool	shimhead_strip(const char *, size_t, const char *, size_t,
		    struct buf *, int *);
static bool	shimhead_websocket(const char *, size_t);
static bool	shimhead_query_ok(const char *, size_t, const char *, size_t);
static void	shimhead_query(const char *, size_t, const char *, size_t,
		    struct buf *, int *, bool *);

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
 * Append the header lines h[0, n) (the request line is not among them)
 * to up without the lines that carry the token (and their obsolete
 * continuations), counting them in *seen; true when every one of them
 * carried the right token (a folded one never does).
 */
static bool
shimhead_strip(const char *token, size_t token_len, const char *h, size_t n,
    struct buf *up, int *seen)
{
	const char	*line, *nl, *v;
	size_t		 len, vn;
	bool		 in_tok = false, ok = true;

	for (line = h; line < h + n; line = nl + 1) {
		nl = memchr(line, '\n', h + n - line);
		len = nl - line + 1;
		if (line[0] == ' ' || line[0] == '\t') {
			if (in_tok) {
				ok = false;	/* folded: never a match */
				continue;
			}
		} else
			in_tok = shimhead_token_line(line, len, &v, &vn);
		if (!in_tok) {
			(void)buf_add(up, line, len);
			continue;
		}
		(*seen)++;
		if (!shimhead_token_ok(token, token_len, v, vn))
			ok = false;
	}
	return ok;
}

/* Whether the head p[0, n) asks for a WebSocket (an Upgrade naming it). */
static bool
shimhead_websocket(const char *p, size_t n)
{
	const char	*line, *nl, *e;

	for (line = p; line < p + n &&
	    (nl = memchr(line, '\n', p + n - line)) != NULL; line = nl + 1) {
		if (nl - line < 8 || strncasecmp(line, "upgrade:", 8) != 0)
			continue;
		for (e = line + 8; nl - e >= 9; e++)
			if (strncasecmp(e, "websocket", 9) == 0)
				return true;
	}
	return false;
}


/*
 * Whether a query value v[0, n), percent-decoded ('+' a space), is
 * "Bearer <token>": what a browser's WebSocket, which cannot set a
 * header, carries.
 */
static bool
shimhead_query_ok(const char *token, size_t token_len, const char *v,
    size_t n)
{
	char	d[SHIMHEAD_QTOKEN_MAX];
	size_t	i, k = 0;
	int	hi, lo;

	for (i = 0; i < n; i++) {
		if (k == sizeof(d))
			return false;
		if (v[i] == '+')
			d[k++] = ' ';
		else if (v[i] != '%')
			d[k++] = v[i];
		else {
			if (n - i < 3 || (hi = codec_hexval(v[i + 1])) < 0 ||
			    (lo = codec_hexval(v[i + 2])) < 0)
				return false;
			d[k++] = (char)(hi << 4 | lo);
			i += 2;
		}
	}
	if (k < 7 || strncasecmp(d, "bearer", 6) != 0 ||
	    (d[6] != ' ' && d[6] != '\t'))
		return false;
	return shimhead_token_ok(token, token_len, d + 7, k - 7);
}

/*
 * Append the request line p[0, n) (its LF included) to up without the
 * "authorization" parameters of its query, counting them in *seen; *ok
 * false when one of them does not carry the token.  The other
 * parameters, their order and a fragment stay as they were.
 */
static void
shimhead_query(const char *token, size_t token_len, const char *p, size_t n,
    struct buf *up, int *seen, bool *ok)
{
	static const char	key[] = "authorization";
	const char		*sp, *end, *q, *qend, *seg, *amp, *eq;
	bool			 first = true;

	if ((sp = memchr(p, ' ', n)) == NULL ||
	    (end = memchr(sp + 1, ' ', p + n - sp - 1)) == NULL ||
	    (q = memchr(sp + 1, '?', end - sp - 1)) == NULL) {
		(void)buf_add(up, p, n);
		return;
	}
	if ((qend = memchr(q, '#', end - q)) == NULL)
		qend = end;
	(void)buf_add(up, p, q - p);
	for (seg = q + 1; seg <= qend; seg = amp + 1) {
		if ((amp = memchr(seg, '&', qend - seg)) == NULL)
			amp = qend;
		eq = memchr(seg, '=', amp - seg);
		if ((eq != NULL ? eq : amp) - seg == sizeof(key) - 1 &&
		    strncasecmp(seg, key, sizeof(key) - 1) == 0) {
			(*seen)++;
			if (eq == NULL || !shimhead_query_ok(token, token_len,
			    eq + 1, amp - eq - 1))
				*ok = false;
			continue;
		}
		(void)buf_add(up, first ? "?" : "&", 1);
		(void)buf_add(up, seg, amp - seg);
		first = false;
	}
	(void)buf_add(up, qend, p + n - qend);
}

enum shimhead_verdict
shimhead_check(struct shimhead *h, const char *token, size_t token_len,
    const char *p, size_t n, struct buf *up)
{
	const char	*nl;
	size_t		 k, first;
	bool		 auth, open, qok = true;
	int		 seen = 0;

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
	/*
	 * A WebSocket upgrade may carry the token in its query instead (a
	 * browser's cannot set a header); no other request may.
	 */
	nl = memchr(p, '\n', n);
	first = nl - p + 1;
	if (h->upgrade && h->parser.method == HTTP_GET &&
	    shimhead_websocket(p, n))
		shimhead_query(token, token_len, p, first, up, &seen, &qok);
	else
		(void)buf_add(up, p, first);
	auth = shimhead_strip(token, token_len, p + first, n - first, up,
	    &seen) && qok && seen > 0;
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
