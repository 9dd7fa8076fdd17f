/*
 * fuzz_shim: a TCP client's byte stream, first through the shim's pure
 * request-head check (lib/net/shimhead.c) alone, then cut into pieces
 * through the real shim (lib/net/shim.c) to the real HTTP server on a
 * unix socket.
 *
 * Input: byte 0 chooses how the rest is delivered, as in fuzz_http; the
 * rest is what the client sends.  Without sockets: each head the check
 * forwards must be one well-formed head to a fresh parser (the agent's
 * view) with the same framing, and carry no token line; a refused one
 * must add nothing; the same head routed and rewritten as the proxy
 * would send it to a port must still be one head of that framing, with
 * no proxy cookie.  Through the shim: it checks each request head's
 * token, removes it and forwards the request; what comes back must be a
 * well-formed sequence of HTTP/1.1 responses (the shim's own 400, 401
 * and 502 included, and its proxy's 302 and 403: on, it may reach no
 * port), the shim must never crash, leak or hang, and once
 * the client is gone both its connections must be closed.
 */
#include <netinet/in.h>
#include <sys/socket.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/tunables.h"
#include "fuzzsrv.h"
#include "net/shim.h"
#include "net/shimhead.h"

#define FUZZ_SHIM_TOKEN		"fuzz-token"
#define FUZZ_SHIM_TURNS		1000	/* after the exchange, until closed */

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void	fs_health(struct http_conn *, struct http_req *);
static void	fs_echo(struct http_conn *, struct http_req *);
static void	fs_pure(const uint8_t *, size_t);
static void	fs_agent_view(const struct shimhead *, const struct buf *);
static bool	fs_query_token(const char *, const char *);
static void	fs_proxy_view(const struct shimhead *, const char *, size_t,
		    const struct buf *);

static const struct http_route fs_routes[] = {
	{ "GET",	"/health",	fs_health, NULL },
	{ "GET",	"/v1/health",	fs_health, NULL },
	{ "HEAD",	"/v1/health",	fs_health, NULL },
	{ "POST",	"/v1/echo",	fs_echo, NULL },
	{ "PUT",	"/v1/echo/*",	fs_echo, NULL },
	{ NULL, NULL, NULL, NULL }
};

static struct shim		*fs_shim;
static struct shim_ports	 fs_ports;
static struct sockaddr_in	 fs_addr;

static void
fs_health(struct http_conn *c, struct http_req *r)
{
	static const char	ok[] = "{\"ok\":true}";

	(void)r;
	http_reply(c, 200, "application/json", ok, sizeof(ok) - 1);
}

/* The body as it arrived: what the shim forwarded of it. */
static void
fs_echo(struct http_conn *c, struct http_req *r)
{
	const char	*auth = http_header(r, "Authorization");
	const char	*xat = http_header(r, "X-Access-Token");

	/* The token never reaches the agent; another scheme (Basic) does. */
	if ((auth != NULL && strncasecmp(auth, "bearer", 6) == 0) ||
	    xat != NULL) {
		fprintf(stderr, "fuzz_shim: token header forwarded: %s\n",
		    auth != NULL ? auth : xat);
		abort();
	}
	http_reply(c, 200, "application/octet-stream", r->body.data,
	    r->body.len);
}

/*
 * Whether the forwarded head p[0, end) is a GET asking for a WebSocket
 * (an Upgrade line naming it) whose query still has an authorization
 * parameter: the shim takes those for the token and never forwards them.
 */
static bool
fs_query_token(const char *p, const char *end)
{
	const char	*nl, *line, *e, *v;
	bool		 ws = false;

	if ((nl = memchr(p, '\n', end - p)) == NULL ||
	    strncmp(p, "GET ", 4) != 0)
		return false;
	for (line = nl + 1; line < end &&
	    (e = memchr(line, '\n', end - line)) != NULL; line = e + 1) {
		if (e - line < 8 || strncasecmp(line, "upgrade:", 8) != 0)
			continue;
		for (v = line + 8; e - v >= 9; v++)
			if (strncasecmp(v, "websocket", 9) == 0)
				ws = true;
	}
	if (!ws)
		return false;
	for (v = p + 4; v < nl && *v != ' ' && *v != '?'; v++)
		;
	if (v >= nl || *v != '?')
		return false;
	while (v < nl && *v != ' ' && *v != '#') {
		v++;
		if (nl - v > 13 && strncasecmp(v, "authorization", 13) == 0 &&
		    (v[13] == '=' || v[13] == '&' || v[13] == ' ' ||
		    v[13] == '#'))
			return true;
		while (v < nl && *v != '&' && *v != ' ' && *v != '#')
			v++;
	}
	return false;
}

/*
 * A head as forwarded: one head to a fresh check (no token asked), of
 * the same framing as the client's, and no line of it a token's.
 */
static void
fs_agent_view(const struct shimhead *h, const struct buf *up)
{
	struct shimhead	 h2;
	struct buf	 again = { 0 };
	const char	*p = buf_head(up), *end = p + buf_avail(up), *nl, *v;

	if (buf_reserve(&again, buf_avail(up)) == NULL)
		abort();
	if (shimhead_check(&h2, NULL, 0, p, buf_avail(up), &again) !=
	    SHIMHEAD_FORWARD || h2.done != h->done ||
	    h2.upgrade != h->upgrade) {
		fprintf(stderr, "fuzz_shim: forwarded head reads otherwise: "
		    "%.*s\n", (int)buf_avail(up), p);
		abort();
	}
	buf_free(&again);
	/* Only what the shim reads as a WebSocket upgrade has a query token. */
	if (h->upgrade && fs_query_token(p, end))
		goto leak_query;
	for (; p < end && (nl = memchr(p, '\n', end - p)) != NULL;
	    p = nl + 1) {
		if (strncasecmp(p, "x-access-token:", 15) == 0)
			goto leak;
		if (strncasecmp(p, "authorization:", 14) != 0)
			continue;
		for (v = p + 14; v < nl && (*v == ' ' || *v == '\t'); v++)
			;
		if (nl - v >= 6 && strncasecmp(v, "bearer", 6) == 0)
			goto leak;
	}
	return;
leak:
	fprintf(stderr, "fuzz_shim: token line forwarded: %.*s\n",
	    (int)(nl - p), p);
	abort();
leak_query:
	fprintf(stderr, "fuzz_shim: query token forwarded: %.*s\n",
	    (int)(end - p), p);
	abort();
}

/*
 * The proxy's rewrite of a forwarded head (routed as any port is, the
 * path form forced when the head has none): one head, same framing, no
 * proxy cookie left.
 */
static void
fs_proxy_view(const struct shimhead *h, const char *head, size_t n,
    const struct buf *up)
{
	static struct shim_ports	 ports;
	struct shim_config		 cfg = { 0 };
	struct shim_route		 r;
	struct shimhead			 h2;
	struct buf			 px = { 0 }, again = { 0 };
	const char			*p, *end, *nl, *v, *semi;

	cfg.ports = &ports;
	cfg.host_suffix = "box.test";
	cfg.self_port = 8686;
	shim_route(&cfg, head, n, &r);
	if (r.port == 0)
		return;
	shim_proxy_rewrite(&r, buf_head(up), buf_avail(up), &px);
	if (buf_avail(&px) > buf_avail(up) + SHIM_PROXY_EXTRA) {
		fprintf(stderr, "fuzz_shim: proxied head grew too much\n");
		abort();
	}
	if (buf_reserve(&again, buf_avail(&px)) == NULL)
		abort();
	if (shimhead_check(&h2, NULL, 0, buf_head(&px), buf_avail(&px),
	    &again) != SHIMHEAD_FORWARD || h2.done != h->done ||
	    h2.upgrade != h->upgrade) {
		fprintf(stderr, "fuzz_shim: proxied head reads otherwise: "
		    "%.*s\n", (int)buf_avail(&px), buf_head(&px));
		abort();
	}
	p = buf_head(&px);
	end = p + buf_avail(&px);
	for (; p < end && (nl = memchr(p, '\n', end - p)) != NULL;
	    p = nl + 1) {
		if (strncasecmp(p, "cookie:", 7) != 0)
			continue;
		/* No pair of it, blanks trimmed, is the proxy's cookie. */
		for (v = p + 7; v < nl; v = semi + 1) {
			while (v < nl && (*v == ' ' || *v == '\t'))
				v++;
			if ((semi = memchr(v, ';', nl - v)) == NULL)
				semi = nl;
			if (semi - v >= 11 && memcmp(v, "tend_proxy=", 11) == 0) {
				fprintf(stderr, "fuzz_shim: proxy cookie "
				    "forwarded\n");
				abort();
			}
		}
	}
	buf_free(&again);
	buf_free(&px);
}

/* The client's bytes through the head check as shim.c runs it. */
static void
fs_pure(const uint8_t *d, size_t n)
{
	const char		*p = (const char *)d;
	enum shimhead_verdict	 v;
	struct shimhead		 h;
	struct buf		 up = { 0 };
	size_t			 off = 0, e, lim;
	bool			 body = false;

	while (off < n) {
		if (body) {
			off += shimhead_body(&h, p + off, n - off);
			if (!h.done)
				break;	/* all of it, or bad framing */
			body = false;
			continue;
		}
		off += shimhead_blank(p + off, n - off);
		lim = n - off < HTTP_MAX_HEAD ? n - off : HTTP_MAX_HEAD;
		if ((e = shimhead_end(p + off, lim)) == 0) {
			if (n - off >= HTTP_MAX_HEAD)
				shimhead_too_large(&h, p + off, HTTP_MAX_HEAD);
			break;
		}
		buf_reset(&up);
		if (buf_reserve(&up, e) == NULL)
			abort();
		v = shimhead_check(&h, FUZZ_SHIM_TOKEN,
		    strlen(FUZZ_SHIM_TOKEN), p + off, e, &up);
		if (v == SHIMHEAD_DENIED && buf_avail(&up) != 0) {
			fprintf(stderr, "fuzz_shim: refused head went up\n");
			abort();
		}
		if (v != SHIMHEAD_FORWARD)
			break;
		if (buf_avail(&up) > e)
			abort();
		fs_agent_view(&h, &up);
		fs_proxy_view(&h, p + off, e, &up);
		off += e;
		if (h.upgrade)
			break;
		body = !h.done;
	}
	buf_free(&up);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_storage	ss;
	struct shim_config	cfg;
	socklen_t		len;
	int			fd;

	(void)argc;
	(void)argv;
	fuzzsrv_start(fs_routes, NULL);
	if (shim_parse_addr("127.0.0.1:0", &ss, &len) == -1 ||
	    (fd = shim_bind(&ss, len)) == -1) {
		perror("fuzz_shim: bind");
		abort();
	}
	len = sizeof(fs_addr);
	if (getsockname(fd, (struct sockaddr *)&fs_addr, &len) == -1) {
		perror("fuzz_shim: getsockname");
		abort();
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.socket = fuzzsrv_socket_path();
	cfg.token = FUZZ_SHIM_TOKEN;
	cfg.token_len = strlen(FUZZ_SHIM_TOKEN);
	cfg.maxconns = 16;
	/*
	 * The proxy on, reaching no port: its routing, credentials, login
	 * and refusals run, and it never connects anywhere.
	 */
	if (shim_ports_parse(&fs_ports, "none", 0) == -1)
		abort();
	cfg.ports = &fs_ports;
	cfg.host_suffix = "box.test";
	if ((fs_shim = shim_new(fuzzsrv_loop, fd, &cfg)) == NULL) {
		perror("fuzz_shim: shim_new");
		abort();
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzzsrv_opts	o;
	int			i;

	if (n == 0)
		return 0;
	fs_pure(d + 1, n - 1);
	memset(&o, 0, sizeof(o));
	o.pieces = 1 + (d[0] & 7);
	o.halfclose = (d[0] & 8) != 0;
	o.spins = (d[0] & 0x10) ? 0 : 16;
	o.seed = d[0] >> 5;
	o.to = (const struct sockaddr *)&fs_addr;
	o.tolen = sizeof(fs_addr);
	(void)fuzzsrv_exchange(d + 1, n - 1, &o);
	for (i = 0; shim_nconns(fs_shim) > 0; i++) {
		if (i == FUZZ_SHIM_TURNS) {
			fprintf(stderr, "fuzz_shim: connection kept after "
			    "the client closed\n");
			abort();
		}
		ev_run(fuzzsrv_loop, EVRUN_NOWAIT);
	}
	return 0;
}
