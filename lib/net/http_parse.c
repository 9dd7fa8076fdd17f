/*
 * http_parse.c: a connection's requests, parsed with http_parser (a
 * chunked body's framing checked strictly first, chunked.h) and routed
 * through the server's table (http.h); the request accessors (headers,
 * query) and the Range header.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/codec.h"
#include "base/util.h"
#include "http_conn.h"

static void	http_dispatch(struct http_conn *);
static int	http_req_route(struct http_conn *);
static const struct http_route *http_route_in(struct http_conn *,
		    const struct http_route *, const char *,
		    const struct http_route **);
static int	http_route_match(const char *, const char *, struct http_conn *);
static int	http_head_checks(struct http_conn *, http_parser *);
static void	http_bad_request(struct http_conn *);
static int	http_range_num(const char *, size_t, uint64_t *);

static int	on_message_begin(http_parser *);
static int	on_url(http_parser *, const char *, size_t);
static int	on_header_field(http_parser *, const char *, size_t);
static int	on_header_value(http_parser *, const char *, size_t);
static int	on_headers_complete(http_parser *);
static int	on_body(http_parser *, const char *, size_t);
static int	on_message_complete(http_parser *);

static const http_parser_settings http_settings = {
	.on_message_begin = on_message_begin,
	.on_url = on_url,
	.on_header_field = on_header_field,
	.on_header_value = on_header_value,
	.on_headers_complete = on_headers_complete,
	.on_body = on_body,
	.on_message_complete = on_message_complete,
};

/* ------------------------------------------------------------------ */
/* Parsing */

void
http_req_reset(struct http_conn *c)
{
	struct http_req		*r = &c->req;
	struct http_parse	*ps = &c->ps;

	buf_reset(&ps->url);
	buf_reset(&ps->hdrs);
	if (r->body.cap > HTTP_KEEP_BUF)
		buf_free(&r->body);	/* a 1 MiB body is not kept */
	buf_reset(&r->body);
	r->method = NULL;
	r->path = r->query = NULL;
	r->nparam = 0;
	r->route = NULL;
	r->body_error = 0;
	r->streamed = 0;
	ps->nhdr = 0;
	ps->last_value = 0;
	ps->head_bytes = 0;
	ps->too_large = false;
	ps->bad_version = false;
	ps->head_done = false;
	ps->keepalive = false;
	ps->chunked = false;
	ps->head_paused = false;
}

/*
 * Feed buffered input to the parser until a request is complete (then
 * dispatch it) or the input is used up.  Pipelined requests stay in the
 * buffer while a response is in progress.
 */
void
http_conn_process(struct http_conn *c)
{
	struct http_parse	*ps = &c->ps;
	size_t			 n;
	enum http_errno		 err;

	c->processing = true;
	while (!c->dead && c->state == HC_READ && buf_avail(&c->in) > 0 &&
	    !http_conn_out_full(c)) {
		/* A chunked body: the parser reads what is framed soundly. */
		n = buf_avail(&c->in);
		if (ps->chunked && (n = chunked_scan(&ps->chunks,
		    buf_head(&c->in), n)) == 0) {
			http_bad_request(c);
			break;
		}
		n = http_parser_execute(&c->parser, &http_settings,
		    buf_head(&c->in), n);
		buf_consume(&c->in, n);
		err = HTTP_PARSER_ERRNO(&c->parser);
		if (ps->too_large) {
			http_fail_request(c);
			http_reply_error(c, 413, "too_large",
			    "request head or body too large");
			break;
		}
		if (err == HPE_PAUSED && ps->head_paused) {
			ps->head_paused = false;
			http_parser_pause(&c->parser, 0);
			continue;
		}
		if (err == HPE_PAUSED) {
			http_parser_pause(&c->parser, 0);
			http_dispatch(c);
			continue;
		}
		/*
		 * The framing broke, or ended where the parser saw no end
		 * (on_message_complete ends the check).
		 */
		if (err != HPE_OK || (ps->chunked &&
		    (chunked_bad(&ps->chunks) || chunked_done(&ps->chunks)))) {
			http_bad_request(c);
			break;
		}
	}
	c->processing = false;
	http_conn_eof_close(c);
}

/*
 * The request in progress fails: the next reply is its error, and the
 * connection closes after it.  An owner of the body (a held stdin) loses
 * its request here.
 */
void
http_fail_request(struct http_conn *c)
{
	http_conn_disown(c);
	c->close_after = true;
	c->in_head = false;
	c->state = HC_BUSY;
}

static void
http_bad_request(struct http_conn *c)
{
	enum http_errno	err = HTTP_PARSER_ERRNO(&c->parser);

	http_fail_request(c);
	if (c->ps.bad_version)
		http_reply_error(c, 400, "invalid_request",
		    "unsupported HTTP version: only HTTP/1.0 and 1.1");
	else if (err == HPE_OK || err == HPE_PAUSED)
		http_reply_error(c, 400, "invalid_request",
		    "malformed HTTP request: invalid chunked framing");
	else if (err == HPE_HEADER_OVERFLOW)
		http_reply_error(c, 413, "too_large", "request head too large");
	else
		http_reply_error(c, 400, "invalid_request",
		    "malformed HTTP request: %s", http_errno_description(err));
}

static int
on_message_begin(http_parser *p)
{
	struct http_conn	*c = p->data;

	http_req_reset(c);
	c->in_head = true;
	c->head_at = ev_now(c->srv->loop);
	c->req_head = false;
	return 0;
}

static int
http_head_bytes(struct http_parse *ps, size_t len)
{
	ps->head_bytes += len;
	if (ps->head_bytes > HTTP_MAX_HEAD) {
		ps->too_large = true;
		return -1;
	}
	return 0;
}

static int
on_url(http_parser *p, const char *at, size_t len)
{
	struct http_conn	*c = p->data;

	/*
	 * The method is known from here: a HEAD refused before its head
	 * ends (too many headers, too long) gets no body either.
	 */
	c->req_head = p->method == HTTP_HEAD;
	if (http_head_bytes(&c->ps, len) == -1)
		return -1;
	return buf_add(&c->ps.url, at, len);
}

/*
 * Header callbacks after the head are a chunked body's trailers: they are
 * read and ignored (the header list was already closed).
 */
static int
on_header_field(http_parser *p, const char *at, size_t len)
{
	struct http_parse	*ps = &((struct http_conn *)p->data)->ps;

	if (ps->head_done)
		return 0;
	if (http_head_bytes(ps, len + 4) == -1)
		return -1;
	if (ps->last_value || ps->nhdr == 0) {
		if (ps->nhdr > 0 && buf_add(&ps->hdrs, "", 1) == -1)
			return -1;
		if (ps->nhdr == HTTP_MAX_HEADERS) {
			ps->too_large = true;
			return -1;
		}
		ps->nhdr++;
		ps->last_value = 0;
	}
	return buf_add(&ps->hdrs, at, len);
}

static int
on_header_value(http_parser *p, const char *at, size_t len)
{
	struct http_parse	*ps = &((struct http_conn *)p->data)->ps;

	if (ps->head_done)
		return 0;
	if (http_head_bytes(ps, len) == -1)
		return -1;
	if (!ps->last_value) {
		if (buf_add(&ps->hdrs, "", 1) == -1)
			return -1;
		ps->last_value = 1;
	}
	return buf_add(&ps->hdrs, at, len);
}

/*
 * The head is complete: split the URL and find the route, so that the
 * body can be streamed to it or refused before it is read.
 */
static int
on_headers_complete(http_parser *p)
{
	struct http_conn	*c = p->data;
	struct http_parse	*ps = &c->ps;

	ps->head_done = true;
	c->in_head = false;
	if (ps->nhdr > 0 && buf_add(&ps->hdrs, "", 1) == -1)
		return -1;
	if (buf_add(&ps->url, "", 1) == -1)
		return -1;
	/* Even the error a HEAD gets has no body: its client reads none. */
	c->req_head = p->method == HTTP_HEAD;
	if (p->http_major != 1 || p->http_minor > 1) {
		ps->bad_version = true;
		return -1;
	}
	c->req.method = http_method_str(p->method);
	c->req_http10 = p->http_minor == 0;
	ps->keepalive = http_should_keep_alive(p);
	if (http_req_route(c) == -1 || http_head_checks(c, p) == -1)
		return -1;
	/*
	 * A chunked body's framing is checked before the parser reads it
	 * (chunked.h): the parser stops here, before the head's last byte,
	 * so that the check begins with it.
	 */
	if ((p->flags & F_CHUNKED) && !p->upgrade) {
		chunked_init(&ps->chunks, true);
		ps->chunked = ps->head_paused = true;
		http_parser_pause(p, 1);
	}
	return 0;
}

/*
 * The path without its query, as the namespace hook maps it, and its
 * route: the hook's table first, then the server's (see http_route_in).
 */
static int
http_req_route(struct http_conn *c)
{
	struct http_server	*srv = c->srv;
	struct http_req		*r = &c->req;
	const struct http_route	*ns = NULL, *seen = NULL, *rt = NULL;
	char			*path = c->ps.url.data, *q;

	if ((q = strchr(path, '?')) != NULL) {
		*q = '\0';
		r->query = q + 1;
	}
	if (srv->map != NULL)
		ns = srv->map(srv->ctx, &path);
	r->path = path;
	if (buf_reserve(&c->ps.pbuf, strlen(path) + HTTP_MAX_PARAMS + 1) == NULL)
		return -1;
	if (ns != NULL)
		rt = http_route_in(c, ns, path, &seen);
	if (rt == NULL)
		rt = http_route_in(c, srv->routes, path, &seen);
	r->route = rt != NULL ? rt : seen;
	return 0;
}

/*
 * The route in table for the path and the method, or NULL; the first
 * route for the path alone is kept in *seen, for the 405.
 */
static const struct http_route *
http_route_in(struct http_conn *c, const struct http_route *rt,
    const char *path, const struct http_route **seen)
{
	for (; rt->method != NULL; rt++) {
		if (http_route_match(rt->pattern, path, c) != 0)
			continue;
		if (*seen == NULL)
			*seen = rt;		/* remembered for 405 */
		if (strcmp(rt->method, c->req.method) == 0)
			return rt;
	}
	return NULL;
}

/* What the head alone decides: a body too large, a client that waits. */
static int
http_head_checks(struct http_conn *c, http_parser *p)
{
	struct http_req	*r = &c->req;
	const char	*h;

	if (r->route != NULL && r->route->body == NULL &&
	    p->content_length != ULLONG_MAX &&
	    p->content_length > HTTP_MAX_BODY) {
		c->ps.too_large = true;
		return -1;
	}
	/* curl waits a second for this before sending a large body. */
	if ((h = http_header(r, "Expect")) != NULL &&
	    strcasecmp(h, "100-continue") == 0) {
		if (buf_addstr(&c->out, "HTTP/1.1 100 Continue\r\n\r\n") == -1)
			return -1;
		(void)http_conn_flush(c);
	}
	return 0;
}

/* The request's body goes to its route piece by piece, not buffered. */
bool
http_req_streams(const struct http_req *r)
{
	return r->route != NULL && r->route->body != NULL &&
	    strcmp(r->route->method, r->method) == 0;
}

static int
on_body(http_parser *p, const char *at, size_t len)
{
	struct http_conn	*c = p->data;
	struct http_req		*r = &c->req;

	if (http_req_streams(r)) {
		r->route->body(c, r, at, len);
		r->streamed += len;
		return 0;
	}
	if (r->body.len + len > HTTP_MAX_BODY) {
		c->ps.too_large = true;
		return -1;
	}
	return buf_add(&r->body, at, len);
}

static int
on_message_complete(http_parser *p)
{
	struct http_conn	*c = p->data;

	if (buf_add(&c->req.body, "", 1) == -1)
		return -1;
	c->req.body.len--;
	c->ps.chunked = false;
	http_parser_pause(p, 1);
	return 0;
}

/*
 * Match a path against a pattern: "{}" takes one non-empty segment, a
 * final "*" takes the rest (possibly empty).  Captures point into path,
 * which is split in place only after a full match.
 */
static int
http_route_match(const char *pat, const char *path, struct http_conn *c)
{
	struct http_req	*r = &c->req;
	struct buf	*pb = &c->ps.pbuf;
	const char	*p = path, *seg;
	size_t		 starts[HTTP_MAX_PARAMS], lens[HTTP_MAX_PARAMS];
	int		 n = 0, i;

	while (*pat != '\0') {
		if (pat[0] == '*' && pat[1] == '\0') {
			if (n == HTTP_MAX_PARAMS)
				return -1;
			starts[n] = p - path;
			lens[n++] = strlen(p);
			p += strlen(p);
			pat++;
			break;
		}
		if (pat[0] == '{' && pat[1] == '}') {
			seg = p;
			while (*p != '\0' && *p != '/')
				p++;
			if (p == seg || n == HTTP_MAX_PARAMS)
				return -1;
			starts[n] = seg - path;
			lens[n++] = p - seg;
			pat += 2;
			continue;
		}
		if (*pat != *p)
			return -1;
		pat++;
		p++;
	}
	if (*p != '\0')
		return -1;
	/*
	 * Captures are copied as C strings into pbuf, which the caller sized
	 * for the whole path, so the pointers stay valid.
	 */
	buf_reset(pb);
	r->nparam = 0;
	for (i = 0; i < n; i++) {
		r->param[r->nparam++] = pb->data + pb->len;
		memcpy(pb->data + pb->len, path + starts[i], lens[i]);
		pb->len += lens[i];
		pb->data[pb->len++] = '\0';
	}
	return 0;
}

static void
http_dispatch(struct http_conn *c)
{
	struct http_req	*r = &c->req;

	c->state = HC_BUSY;
	if (!c->ps.keepalive)
		c->close_after = true;
	if (r->route == NULL) {
		http_reply_error(c, 404, "not_found", "no route for %s %s",
		    r->method, r->path);
		return;
	}
	if (strcmp(r->route->method, r->method) != 0) {
		http_reply_error(c, 405, "method_not_allowed",
		    "%s is not allowed on %s", r->method, r->path);
		return;
	}
	r->route->handler(c, r);
}

/* ------------------------------------------------------------------ */
/* Request accessors */

const char *
http_header(struct http_req *r, const char *name)
{
	struct http_conn	*c = container_of(r, struct http_conn, req);
	const char		*p = c->ps.hdrs.data, *end, *value;

	if (p == NULL)
		return NULL;
	end = p + c->ps.hdrs.len;
	while (p < end) {
		value = p + strlen(p) + 1;
		if (value >= end)
			break;
		if (strcasecmp(p, name) == 0)
			return value;
		p = value + strlen(value) + 1;
	}
	return NULL;
}

int
http_header_next(struct http_req *r, const char **it, const char **name,
    const char **value)
{
	struct http_conn	*c = container_of(r, struct http_conn, req);
	const char		*p = *it != NULL ? *it : c->ps.hdrs.data, *end;

	if (c->ps.hdrs.data == NULL)
		return 0;
	end = c->ps.hdrs.data + c->ps.hdrs.len;
	if (p >= end || (*value = p + strlen(p) + 1) >= end)
		return 0;
	*name = p;
	*it = *value + strlen(*value) + 1;
	return 1;
}

/* Percent-decode [s, s+n) into out (size cap), '+' as space. */
static bool
http_unescape(const char *s, size_t n, char *out, size_t cap)
{
	size_t	i, o = 0;
	int	hi, lo;

	for (i = 0; i < n; i++) {
		if (o + 1 >= cap)
			return false;
		if (s[i] == '%' && i + 2 < n &&
		    (hi = codec_hexval(s[i + 1])) >= 0 &&
		    (lo = codec_hexval(s[i + 2])) >= 0) {
			out[o++] = (char)(hi << 4 | lo);
			i += 2;
		} else if (s[i] == '+')
			out[o++] = ' ';
		else
			out[o++] = s[i];
	}
	out[o] = '\0';
	return true;
}

int
http_query(struct http_req *r, const char *key, char *out, size_t n)
{
	const char	*p = r->query, *amp, *eq;
	size_t		 klen = strlen(key);

	while (p != NULL && *p != '\0') {
		amp = strchr(p, '&');
		if (amp == NULL)
			amp = p + strlen(p);
		eq = memchr(p, '=', amp - p);
		if ((size_t)((eq ? eq : amp) - p) == klen &&
		    strncmp(p, key, klen) == 0) {
			if (n == 0)
				return -1;
			out[0] = '\0';
			if (eq == NULL)
				return 1;
			if (!http_unescape(eq + 1, amp - eq - 1, out, n)) {
				out[0] = '\0';
				return -1;	/* longer than any valid value */
			}
			return 1;
		}
		p = *amp ? amp + 1 : amp;
	}
	return 0;
}

int
http_query_u64(struct http_req *r, const char *key, uint64_t *v)
{
	char	buf[HTTP_QUERY_U64_MAX];
	int	rc;

	if ((rc = http_query(r, key, buf, sizeof(buf))) != 1)
		return rc;
	return codec_parse_u64(buf, v) == 0 ? 1 : -1;
}

int
http_query_bool(struct http_req *r, const char *key, int dflt)
{
	char	v[sizeof("false")];	/* longer is no boolean: -1 */
	int	rc;

	if ((rc = http_query(r, key, v, sizeof(v))) != 1)
		return rc == 0 ? dflt : -1;
	if (strcmp(v, "1") == 0 || strcmp(v, "true") == 0 || v[0] == '\0')
		return 1;
	if (strcmp(v, "0") == 0 || strcmp(v, "false") == 0)
		return 0;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Range */

/* Digits only, [s, s+n): 0, or -1 (empty, junk, too large). */
static int
http_range_num(const char *s, size_t n, uint64_t *v)
{
	char	buf[24];

	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return codec_parse_u64(buf, v);
}

enum http_range
http_range_parse(const char *h, uint64_t size, uint64_t *first,
    uint64_t *last)
{
	const char	*spec, *dash, *end;
	uint64_t	 a, b;

	if (h == NULL || strncasecmp(h, "bytes=", 6) != 0)
		return HTTP_RANGE_FULL;
	spec = h + 6;
	while (*spec == ' ')
		spec++;
	end = spec + strlen(spec);
	while (end > spec && end[-1] == ' ')
		end--;
	if (memchr(spec, ',', end - spec) != NULL ||
	    (dash = memchr(spec, '-', end - spec)) == NULL)
		return HTTP_RANGE_FULL;
	if (dash == spec) {
		/* The last n bytes. */
		if (http_range_num(dash + 1, end - dash - 1, &b) == -1)
			return HTTP_RANGE_FULL;
		if (b == 0 || size == 0)
			return HTTP_RANGE_UNSATISFIABLE;
		*first = b >= size ? 0 : size - b;
		*last = size - 1;
		return HTTP_RANGE_PART;
	}
	if (http_range_num(spec, dash - spec, &a) == -1)
		return HTTP_RANGE_FULL;
	if (dash + 1 == end)
		b = UINT64_MAX;
	else if (http_range_num(dash + 1, end - dash - 1, &b) == -1 || b < a)
		return HTTP_RANGE_FULL;
	if (a >= size)
		return HTTP_RANGE_UNSATISFIABLE;
	*first = a;
	*last = b >= size ? size - 1 : b;
	return HTTP_RANGE_PART;
}
