/*
 * shim_proxy.c: the shim's proxy to the container's own ports (see
 * shim.h).  A request is routed by its Host (a preview host), then its
 * path (/v1/ports/PORT/proxy/...); one for a port is checked as any
 * other, may carry the proxy's cookie instead of the token, and may
 * carry the token once in its query (?tend_token=), which the shim
 * answers with that cookie and a redirect to the same URL without it.
 *
 * The cookie is not the token: it is HMAC-SHA256(token, "tend-proxy:"
 * PORT), so a cookie opens one port's proxy and nothing else (the
 * agent's routes want the token), and it changes with the token.
 *
 * The address is never an input: a port of 127.0.0.1, else of [::1].
 * The connect is non-blocking; a second connect() on the socket reads
 * its outcome, so the seccomp allow-list needs nothing for it.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <nettle/hmac.h>

#include "base/buf.h"
#include "base/codec.h"
#include "base/tunables.h"
#include "shim.h"
#include "shim_int.h"

#define SHIM_COOKIE		"tend_proxy"
#define SHIM_QTOKEN		"tend_token"
#define SHIM_PATH_PREFIX	"/v1/ports/"
#define SHIM_COOKIE_HEX		(SHA256_DIGEST_SIZE * 2)

static int	shim_digits(const char *, size_t, size_t *);
static bool	shim_header(const char *, size_t, const char *, const char **,
		    size_t *);
static bool	shim_target(const char *, size_t, const char **, size_t *);
static bool	shim_qparam(const char *, size_t, const char **, size_t *);
static bool	shim_cookie(const char *, size_t, const char **, size_t *);
static void	shim_cookie_line(const char *, size_t, struct buf *);
static void	shim_cookie_value(const struct shim_config *, int,
		    char [SHIM_COOKIE_HEX + 1]);
static bool	shim_same(const char *, size_t, const char *, size_t);
static bool	shim_qtoken_ok(const struct shim_config *, const char *,
		    size_t);
static void	shim_location(struct buf *, const char *, size_t);
static void	shim_login(struct shim_conn *, const struct shim_route *,
		    const char *, size_t);

/* ------------------------------------------------------------------ */
/* Policy and routing (pure)                                           */

int
shim_ports_parse(struct shim_ports *p, const char *s, int self)
{
	const char	*q;
	char		*end;
	unsigned long	 lo, hi;

	memset(p, 0, sizeof(*p));
	if (s == NULL || strcmp(s, "all") == 0) {
		memset(p->bits, 0xff, sizeof(p->bits));
		p->bits[0] &= ~1;	/* port 0 is none */
	} else if (strcmp(s, "none") != 0) {
		for (q = s;; q = end + 1) {
			if (*q < '0' || *q > '9')
				goto bad;
			errno = 0;
			lo = hi = strtoul(q, &end, 10);
			if (*end == '-') {
				if (end[1] < '0' || end[1] > '9')
					goto bad;
				hi = strtoul(end + 1, &end, 10);
			}
			if (errno != 0 || lo == 0 || hi > 65535 || lo > hi ||
			    (*end != ',' && *end != '\0'))
				goto bad;
			for (; lo <= hi; lo++)
				p->bits[lo / 8] |= 1 << (lo % 8);
			if (*end == '\0')
				break;
		}
	}
	if (self > 0 && self < 65536)
		p->bits[self / 8] &= ~(1 << (self % 8));
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

bool
shim_ports_has(const struct shim_ports *p, int port)
{
	return port > 0 && port < 65536 &&
	    (p->bits[port / 8] & (1 << (port % 8))) != 0;
}

/*
 * A port written at the front of p[0, n): 1 to 5 digits, no leading
 * zero, 1 to 65535; its digits' count in *k.  0: none.
 */
static int
shim_digits(const char *p, size_t n, size_t *k)
{
	int	v = 0;
	size_t	i;

	for (i = 0; i < n && i < 6 && p[i] >= '0' && p[i] <= '9'; i++)
		v = v * 10 + (p[i] - '0');
	if (i == 0 || i > 5 || p[0] == '0' || v > 65535)
		return 0;
	*k = i;
	return v;
}

int
shim_host_port(const char *v, size_t n, const char *suffix)
{
	const char	*colon, *dot;
	size_t		 k, label, sn;
	int		 port;

	if (n == 0 || v[0] == '[')	/* an IPv6 literal: an address */
		return 0;
	if ((colon = memchr(v, ':', n)) != NULL)
		n = colon - v;
	if (n > 0 && v[n - 1] == '.')	/* the root's dot of a full name */
		n--;
	dot = memchr(v, '.', n);
	label = dot != NULL ? (size_t)(dot - v) : n;
	if ((port = shim_digits(v, label, &k)) == 0)
		return 0;
	/* PORT-anything: Cloudflare's preview hosts, and E2B's. */
	if (k + 1 < label && v[k] == '-')
		return port;
	/* PORT.SUFFIX: a suffix given to the shim. */
	if (suffix == NULL || k != label || dot == NULL)
		return 0;
	if (suffix[0] == '.')
		suffix++;
	sn = strlen(suffix);
	if (sn > 0 && n - label - 1 == sn &&
	    strncasecmp(dot + 1, suffix, sn) == 0)
		return port;
	return 0;
}

/* The value of h's first header line named name (lower case), trimmed. */
static bool
shim_header(const char *h, size_t n, const char *name, const char **v,
    size_t *vn)
{
	const char	*line, *nl, *e;
	size_t		 k = strlen(name);

	if ((nl = memchr(h, '\n', n)) == NULL)
		return false;
	for (line = nl + 1; line < h + n &&
	    (nl = memchr(line, '\n', h + n - line)) != NULL; line = nl + 1) {
		if ((size_t)(nl - line) <= k || line[k] != ':' ||
		    strncasecmp(line, name, k) != 0)
			continue;
		for (*v = line + k + 1; *v < nl && (**v == ' ' ||
		    **v == '\t'); (*v)++)
			;
		for (e = nl; e > *v && (e[-1] == '\r' || e[-1] == ' ' ||
		    e[-1] == '\t'); e--)
			;
		*vn = e - *v;
		return true;
	}
	return false;
}

/* The request line's target: what lies between its two blanks. */
static bool
shim_target(const char *h, size_t n, const char **t, size_t *tn)
{
	const char	*nl, *sp, *end;

	if ((nl = memchr(h, '\n', n)) == NULL ||
	    (sp = memchr(h, ' ', nl - h)) == NULL ||
	    (end = memchr(sp + 1, ' ', nl - sp - 1)) == NULL)
		return false;
	*t = sp + 1;
	*tn = end - sp - 1;
	return true;
}

void
shim_route(const struct shim_config *cfg, const char *h, size_t n,
    struct shim_route *r)
{
	static const char	pre[] = SHIM_PATH_PREFIX, px[] = "/proxy";
	const char		*v, *t;
	size_t			 vn, tn, k;
	int			 port;

	r->port = 0;
	r->prefix = 0;
	if (cfg->ports == NULL)
		return;
	/* A preview host names a port for every path of it. */
	if (shim_header(h, n, "host", &v, &vn) &&
	    (port = shim_host_port(v, vn, cfg->host_suffix)) != 0) {
		/* The shim's own port in a preview host: the shim itself. */
		if (port != cfg->self_port)
			r->port = port;
		return;
	}
	if (!shim_target(h, n, &t, &tn) || tn <= sizeof(pre) - 1 ||
	    memcmp(t, pre, sizeof(pre) - 1) != 0)
		return;
	t += sizeof(pre) - 1;
	tn -= sizeof(pre) - 1;
	if ((port = shim_digits(t, tn, &k)) == 0 || tn - k < sizeof(px) - 1 ||
	    memcmp(t + k, px, sizeof(px) - 1) != 0)
		return;
	k += sizeof(px) - 1;
	if (k < tn && t[k] != '/' && t[k] != '?')
		return;
	r->port = port;
	r->prefix = sizeof(pre) - 1 + k;
}

/* ------------------------------------------------------------------ */
/* The head the port gets (pure)                                       */

/*
 * Append a Cookie line l[0, n) without the proxy's cookie (its pair and
 * the ';' after it); nothing when no other cookie is left.  The rest is
 * copied as it was, so that the line never grows.
 */
static void
shim_cookie_line(const char *l, size_t n, struct buf *up)
{
	static const char	name[] = SHIM_COOKIE "=";
	size_t			i, j, e, k, s0, len = n, start;
	bool			any = false;

	while (len > 0 && (l[len - 1] == '\n' || l[len - 1] == '\r'))
		len--;
	start = buf_avail(up);
	/* The caller found "cookie:" at its start. */
	(void)buf_add(up, l, 7);
	for (s0 = 7; s0 < len; s0 = j + 1) {
		for (i = s0; i < len && (l[i] == ' ' || l[i] == '\t'); i++)
			;
		for (j = i; j < len && l[j] != ';'; j++)
			;
		for (e = j; e > i && (l[e - 1] == ' ' || l[e - 1] == '\t'); e--)
			;
		if (e == i || (e - i >= sizeof(name) - 1 &&
		    memcmp(l + i, name, sizeof(name) - 1) == 0))
			continue;
		(void)buf_add(up, l + s0, (j < len ? j + 1 : len) - s0);
		any = true;
	}
	if (!any) {
		up->len = up->off + start;
		return;
	}
	/* A ';' of a pair taken out may end it now. */
	k = buf_avail(up);
	while (k > start + 7 && (buf_head(up)[k - 1] == ';' ||
	    buf_head(up)[k - 1] == ' ' || buf_head(up)[k - 1] == '\t'))
		k--;
	up->len = up->off + k;
	(void)buf_add(up, l + len, n - len);
}

void
shim_proxy_rewrite(const struct shim_route *r, const char *h, size_t n,
    struct buf *up)
{
	const char	*nl, *line, *t = NULL, *rest;
	size_t		 len, tn;
	bool		 drop = false;

	nl = memchr(h, '\n', n);
	if (r->prefix > 0 && shim_target(h, n, &t, &tn) && tn >= r->prefix) {
		(void)buf_add(up, h, t - h);
		rest = t + r->prefix;
		if (*rest != '/')
			(void)buf_add(up, "/", 1);
		(void)buf_add(up, rest, nl + 1 - rest);
	} else
		(void)buf_add(up, h, nl + 1 - h);
	for (line = nl + 1; line < h + n; line = nl + 1) {
		nl = memchr(line, '\n', h + n - line);
		len = nl - line + 1;
		if (line[0] == ' ' || line[0] == '\t') {
			if (!drop)
				(void)buf_add(up, line, len);
			continue;
		}
		/*
		 * The prefix goes last, before the empty line: where the
		 * request line ends is the parser's to say (it takes a lone
		 * LF in odd places), where the head ends is not in doubt.
		 */
		if (nl + 1 == h + n && t != NULL)
			(void)buf_printf(up, "X-Forwarded-Prefix: %.*s\r\n",
			    (int)r->prefix, t);
		drop = false;
		if (r->prefix > 0 && len > 19 &&
		    strncasecmp(line, "x-forwarded-prefix:", 19) == 0)
			drop = true;
		else if (len > 7 && strncasecmp(line, "cookie:", 7) == 0) {
			shim_cookie_line(line, len, up);
			drop = true;
		} else
			(void)buf_add(up, line, len);
	}
}

/* ------------------------------------------------------------------ */
/* Credentials                                                         */

/* The value of the query's tend_token parameter, if it has one. */
static bool
shim_qparam(const char *h, size_t n, const char **v, size_t *vn)
{
	static const char	key[] = SHIM_QTOKEN "=";
	const char		*t, *q, *end, *seg, *amp;
	size_t			 tn;

	if (!shim_target(h, n, &t, &tn) || (q = memchr(t, '?', tn)) == NULL)
		return false;
	if ((end = memchr(q, '#', t + tn - q)) == NULL)
		end = t + tn;
	for (seg = q + 1; seg < end; seg = amp + 1) {
		if ((amp = memchr(seg, '&', end - seg)) == NULL)
			amp = end;
		if ((size_t)(amp - seg) >= sizeof(key) - 1 &&
		    memcmp(seg, key, sizeof(key) - 1) == 0) {
			*v = seg + sizeof(key) - 1;
			*vn = amp - *v;
			return true;
		}
	}
	return false;
}

/* The proxy's cookie among the head's Cookie lines, if it has one. */
static bool
shim_cookie(const char *h, size_t n, const char **v, size_t *vn)
{
	static const char	name[] = SHIM_COOKIE "=";
	const char		*line, *nl, *p, *e;

	nl = memchr(h, '\n', n);
	for (line = nl + 1; line < h + n &&
	    (nl = memchr(line, '\n', h + n - line)) != NULL; line = nl + 1) {
		if (nl - line < 7 || strncasecmp(line, "cookie:", 7) != 0)
			continue;
		for (p = line + 7; p < nl; p = e + 1) {
			while (p < nl && (*p == ' ' || *p == '\t'))
				p++;
			if ((e = memchr(p, ';', nl - p)) == NULL)
				e = nl;
			if ((size_t)(e - p) < sizeof(name) - 1 ||
			    memcmp(p, name, sizeof(name) - 1) != 0)
				continue;
			*v = p + sizeof(name) - 1;
			for (*vn = e - *v; *vn > 0 && ((*v)[*vn - 1] == '\r' ||
			    (*v)[*vn - 1] == ' '); (*vn)--)
				;
			return true;
		}
	}
	return false;
}

/* The cookie that opens port's proxy: hex of HMAC-SHA256, NUL-ended. */
static void
shim_cookie_value(const struct shim_config *cfg, int port,
    char out[SHIM_COOKIE_HEX + 1])
{
	struct hmac_sha256_ctx	ctx;
	uint8_t			d[SHA256_DIGEST_SIZE];
	char			msg[32];
	int			n;

	n = snprintf(msg, sizeof(msg), "tend-proxy:%d", port);
	hmac_sha256_set_key(&ctx, cfg->token_len, (const uint8_t *)cfg->token);
	hmac_sha256_update(&ctx, n, (const uint8_t *)msg);
	hmac_sha256_digest(&ctx, sizeof(d), d);
	codec_hex(out, d, sizeof(d));
	out[SHIM_COOKIE_HEX] = '\0';
}

/* Constant time over equal lengths. */
static bool
shim_same(const char *a, size_t an, const char *b, size_t bn)
{
	unsigned char	diff = 0;
	size_t		i;

	if (an != bn)
		return false;
	for (i = 0; i < an; i++)
		diff |= (unsigned char)a[i] ^ (unsigned char)b[i];
	return diff == 0;
}

/* Whether the query's value v[0, n), percent-decoded, is the token. */
static bool
shim_qtoken_ok(const struct shim_config *cfg, const char *v, size_t n)
{
	char	d[SHIM_TOKEN_MAX];
	size_t	i, k = 0;
	int	hi, lo;

	for (i = 0; i < n; i++) {
		if (k == sizeof(d))
			return false;
		if (v[i] != '%')
			d[k++] = v[i] == '+' ? ' ' : v[i];
		else {
			if (n - i < 3 || (hi = codec_hexval(v[i + 1])) < 0 ||
			    (lo = codec_hexval(v[i + 2])) < 0)
				return false;
			d[k++] = (char)(hi << 4 | lo);
			i += 2;
		}
	}
	return shim_same(d, k, cfg->token, cfg->token_len);
}

/*
 * Target bytes p[0, n) into a Location value: what the parser let into
 * a target but a header value may not hold (controls, DEL, non-ASCII)
 * percent-encoded.
 */
static void
shim_location(struct buf *b, const char *p, size_t n)
{
	static const char	hex[] = "0123456789ABCDEF";
	unsigned char		c;
	size_t			i;

	for (i = 0; i < n; i++) {
		c = (unsigned char)p[i];
		if (c > 0x20 && c < 0x7f)
			(void)buf_add(b, p + i, 1);
		else
			(void)buf_printf(b, "%%%c%c", hex[c >> 4], hex[c & 15]);
	}
}

/*
 * The token was in the query: 302 to the same URL without it, with the
 * cookie set for the port (its path form's prefix, or the whole preview
 * host).  Secure when the client reached a TLS front (X-Forwarded-Proto).
 */
static void
shim_login(struct shim_conn *c, const struct shim_route *r, const char *h,
    size_t n)
{
	static const char	key[] = SHIM_QTOKEN "=";
	char			cookie[SHIM_COOKIE_HEX + 1];
	const char		*t, *q, *end, *seg, *amp, *v;
	struct buf		 b = { 0 };
	size_t			 tn, vn;
	bool			 first = true, secure;

	(void)shim_target(h, n, &t, &tn);
	secure = shim_header(h, n, "x-forwarded-proto", &v, &vn) &&
	    vn == 5 && strncasecmp(v, "https", 5) == 0;
	shim_cookie_value(&c->shim->cfg, r->port, cookie);
	q = memchr(t, '?', tn);
	if ((end = memchr(q, '#', t + tn - q)) == NULL)
		end = t + tn;
	(void)buf_addstr(&b, "Location: ");
	shim_location(&b, t, q - t);
	for (seg = q + 1; seg < end; seg = amp + 1) {
		if ((amp = memchr(seg, '&', end - seg)) == NULL)
			amp = end;
		if (amp == seg || ((size_t)(amp - seg) >= sizeof(key) - 1 &&
		    memcmp(seg, key, sizeof(key) - 1) == 0))
			continue;
		(void)buf_add(&b, first ? "?" : "&", 1);
		shim_location(&b, seg, amp - seg);
		first = false;
	}
	shim_location(&b, end, t + tn - end);
	(void)buf_printf(&b, "\r\nSet-Cookie: " SHIM_COOKIE "=%s; Path=%.*s; "
	    "HttpOnly; SameSite=Lax%s\r\nCache-Control: no-store\r\n"
	    "Referrer-Policy: no-referrer\r\n", cookie,
	    r->prefix > 0 ? (int)r->prefix : 1, r->prefix > 0 ? t : "/",
	    secure ? "; Secure" : "");
	if (buf_add(&b, "", 1) == -1) {
		buf_free(&b);
		shim_refuse(c, 502, "no_memory", "out of memory", NULL);
		return;
	}
	free(c->rfree);
	c->rfree = b.data;
	shim_refuse(c, 302, NULL, NULL, c->rfree);
}

enum shimhead_verdict
shim_proxy_head(struct shim_conn *c, const struct shim_route *r, size_t n)
{
	const struct shim_config *cfg = &c->shim->cfg;
	struct buf		*sc = &c->shim->scratch;
	const char		*h = buf_head(&c->in), *v;
	char			 want[SHIM_COOKIE_HEX + 1];
	enum shimhead_verdict	 verdict;
	size_t			 vn;
	bool			 ok, login;

	buf_reset(sc);
	verdict = shimhead_check(&c->req, cfg->token, cfg->token_len, h, n,
	    sc);
	if (verdict == SHIMHEAD_MALFORMED || verdict == SHIMHEAD_VERSION)
		return verdict;
	/* GET /health is open on the agent, never on a port. */
	ok = verdict == SHIMHEAD_FORWARD && c->req.authed;
	/* A query token is a login: the answer is the shim's own. */
	login = cfg->token != NULL && shim_qparam(h, n, &v, &vn);
	if (login && !shim_qtoken_ok(cfg, v, vn))
		return SHIMHEAD_DENIED;
	if (!ok && !login && cfg->token != NULL && shim_cookie(h, n, &v, &vn)) {
		shim_cookie_value(cfg, r->port, want);
		if (shim_same(v, vn, want, SHIM_COOKIE_HEX)) {
			buf_reset(sc);
			ok = shimhead_check(&c->req, NULL, 0, h, n, sc) ==
			    SHIMHEAD_FORWARD;
		}
	}
	if (!ok && !login)
		return SHIMHEAD_DENIED;
	/* Authenticated: now, and only now, the policy may be told. */
	if (!shim_ports_has(cfg->ports, r->port)) {
		shim_refuse(c, 403, "port_forbidden",
		    "the proxy may not reach that port (--proxy-ports)", NULL);
		return SHIMHEAD_DENIED;
	}
	if (login) {
		shim_login(c, r, h, n);
		return SHIMHEAD_DENIED;
	}
	shim_proxy_rewrite(r, buf_head(sc), buf_avail(sc), &c->up);
	return SHIMHEAD_FORWARD;
}

/* ------------------------------------------------------------------ */
/* Connecting                                                          */

/* The target's loopback address: the port is the only input. */
static socklen_t
shim_loopback(const struct shim_conn *c, bool v6, struct sockaddr_storage *ss)
{
	struct sockaddr_in	*in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*in6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (v6) {
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		in6->sin6_port = htons(c->target);
		return sizeof(*in6);
	}
	in4->sin_family = AF_INET;
	in4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	in4->sin_port = htons(c->target);
	return sizeof(*in4);
}

int
shim_proxy_connect(struct shim_conn *c, bool v6)
{
	struct sockaddr_storage	ss;
	socklen_t		len = shim_loopback(c, v6, &ss);
	int			fd, on = 1, saved;

	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1)
		return v6 ? -1 : shim_proxy_connect(c, true);
	c->v6 = v6;
	c->connecting = false;
	if (connect(fd, (struct sockaddr *)&ss, len) == -1) {
		if (errno != EINPROGRESS) {
			saved = errno;
			close(fd);
			errno = saved;
			return v6 ? -1 : shim_proxy_connect(c, true);
		}
		c->connecting = true;
	}
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	shim_watch_upstream(c, fd);
	return 0;
}

int
shim_proxy_connected(struct shim_conn *c)
{
	struct sockaddr_storage	ss;
	socklen_t		len = shim_loopback(c, c->v6, &ss);

	if (connect(c->afd, (struct sockaddr *)&ss, len) == 0 ||
	    errno == EISCONN) {
		c->connecting = false;
		return 0;
	}
	if (errno == EALREADY || errno == EINPROGRESS || errno == EINTR)
		return 1;
	return -1;
}
