/*
 * ws.c: RFC 6455 server side: the handshake's key and checks, an
 * incremental parser of client frames, and server frame encoders.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nettle/base64.h>
#include <nettle/sha1.h>
#include <nettle/version.h>

#include "base/codec.h"
#include "ws.h"

#define WS_GUID		"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_KEY_BYTES	16	/* a Sec-WebSocket-Key decodes to this */
#define WS_FIN		0x80
#define WS_RSV		0x70
#define WS_MASKED	0x80

static int	ws_has_token(const char *, const char *);
static size_t	ws_trim(const char **);
static int	ws_frame(struct buf *, enum ws_opcode, const void *, size_t);
static size_t	ws_head_need(const struct ws_parser *, const unsigned char *,
		    size_t);
static size_t	ws_parse_head(struct ws_parser *, const char *, size_t,
		    struct ws_event *);
static int	ws_head_check(struct ws_parser *, struct ws_event *);
static void	ws_head_done(struct ws_parser *, struct ws_event *);
static ssize_t	ws_parse_body(struct ws_parser *, const char *, size_t,
		    struct ws_event *);
static void	ws_frame_end(struct ws_parser *, struct ws_event *);
static void	ws_control_end(struct ws_parser *, struct ws_event *);
static void	ws_close_end(struct ws_parser *, struct ws_event *);
static int	ws_close_code_ok(unsigned int);
static void	ws_fail(struct ws_parser *, struct ws_event *, uint16_t,
		    const char *);
static void	ws_msg_reset(struct ws_parser *);

/* ---------------------------------------------------------------- */
/* Handshake */

/* The key as a header value: white space around it is not part of it. */
void
ws_accept_key(const char *key, char out[WS_ACCEPT_LEN])
{
	struct sha1_ctx	 ctx;
	uint8_t		 md[SHA1_DIGEST_SIZE];
	size_t		 n = ws_trim(&key);

	sha1_init(&ctx);
	sha1_update(&ctx, n, (const uint8_t *)key);
	sha1_update(&ctx, sizeof(WS_GUID) - 1, (const uint8_t *)WS_GUID);
#if NETTLE_VERSION_MAJOR > 3 || \
    (NETTLE_VERSION_MAJOR == 3 && NETTLE_VERSION_MINOR >= 10)
	sha1_digest(&ctx, md);
#else
	sha1_digest(&ctx, sizeof(md), md);
#endif
	base64_encode_raw(out, sizeof(md), md);
	out[WS_ACCEPT_LEN - 1] = '\0';
}

/*
 * Does the comma-separated list hold tok (case-insensitive, optional
 * white space around each element)?  Connection is such a list
 * ("keep-alive, Upgrade" from Firefox), and so is Upgrade.
 */
static int
ws_has_token(const char *list, const char *tok)
{
	size_t		 n = strlen(tok), k;
	const char	*p = list;

	while (p != NULL && *p != '\0') {
		p += strspn(p, " \t,");
		k = strcspn(p, ",");
		while (k > 0 && (p[k - 1] == ' ' || p[k - 1] == '\t'))
			k--;
		if (k == n && strncasecmp(p, tok, n) == 0)
			return 1;
		p = strchr(p, ',');
	}
	return 0;
}

/*
 * Skip the optional white space around a header value: *s moves past
 * the leading run, the length returned stops before the trailing one.
 */
static size_t
ws_trim(const char **s)
{
	size_t	 n;

	*s += strspn(*s, " \t");
	n = strlen(*s);
	while (n > 0 && ((*s)[n - 1] == ' ' || (*s)[n - 1] == '\t'))
		n--;
	return n;
}

/*
 * RFC 6455 section 4.2.1, in the order a client most likely got wrong
 * first: not an upgrade at all (the bridge's wording), then the version
 * (426 tells the client which one we speak), then the key.
 */
int
ws_handshake_check(const struct ws_handshake *h, const char **why)
{
	struct buf	 raw = { 0 };
	const char	*v = h->version, *key = h->key;
	size_t		 n;
	int		 ok;

	if (h->upgrade == NULL || !ws_has_token(h->upgrade, "websocket") ||
	    h->connection == NULL || !ws_has_token(h->connection, "upgrade")) {
		*why = "WebSocket upgrade required";
		return 400;
	}
	if (h->method == NULL || strcmp(h->method, "GET") != 0) {
		*why = "a WebSocket handshake is a GET";
		return 400;
	}
	if (v == NULL) {
		*why = "Sec-WebSocket-Version missing";
		return 400;
	}
	if (ws_trim(&v) != 2 || strncmp(v, "13", 2) != 0) {
		*why = "Sec-WebSocket-Version must be 13";
		return 426;
	}
	n = key != NULL ? ws_trim(&key) : 0;
	ok = n > 0 && codec_b64_decode(&raw, key, n) == 0 &&
	    buf_avail(&raw) == WS_KEY_BYTES;
	buf_free(&raw);
	if (!ok) {
		*why = "Sec-WebSocket-Key must be 16 bytes in base64";
		return 400;
	}
	return 0;
}

int
ws_handshake_reply(struct buf *b, const char *key)
{
	char	 accept[WS_ACCEPT_LEN];

	ws_accept_key(key, accept);
	return buf_printf(b, "HTTP/1.1 101 Switching Protocols\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Accept: %s\r\n\r\n", accept);
}

/* ---------------------------------------------------------------- */
/* Parser */

void
ws_parser_init(struct ws_parser *p, size_t max)
{
	memset(p, 0, sizeof(*p));
	p->state = WS_P_HEAD;
	p->max = max != 0 ? max : WS_MAX_MESSAGE;
}

void
ws_parser_init_client(struct ws_parser *p, size_t max)
{
	ws_parser_init(p, max);
	p->client = true;
}

void
ws_parser_free(struct ws_parser *p)
{
	buf_free(&p->msg);
	p->state = WS_P_DONE;
}

ssize_t
ws_parse(struct ws_parser *p, const char *data, size_t len,
    struct ws_event *ev)
{
	size_t	 used = 0;
	ssize_t	 n;

	memset(ev, 0, sizeof(*ev));
	if (p->delivered)
		ws_msg_reset(p);
	while (used < len && ev->type == WS_EV_NONE) {
		if (p->state == WS_P_DONE)
			return len;
		if (p->state == WS_P_HEAD)
			n = ws_parse_head(p, data + used, len - used, ev);
		else
			n = ws_parse_body(p, data + used, len - used, ev);
		if (n == -1)
			return -1;
		used += n;
	}
	return used;
}

/* How many header bytes the frame starting with h (n held) has. */
static size_t
ws_head_need(const struct ws_parser *p, const unsigned char *h, size_t n)
{
	size_t	 need = 2 + (p->client ? 0 : 4);	/* a server sends no mask */

	if (n < 2)
		return 2;
	if ((h[1] & 0x7f) == 126)
		need += 2;
	else if ((h[1] & 0x7f) == 127)
		need += 8;
	return need;
}

/*
 * Take header bytes one at a time, so that nothing past the header is
 * ever copied here; the first two are judged as soon as they are in.
 * A header that ends the frame (no payload) ends it now.
 */
static size_t
ws_parse_head(struct ws_parser *p, const char *d, size_t len,
    struct ws_event *ev)
{
	size_t	 used = 0;

	while (used < len && p->headlen < ws_head_need(p, p->head, p->headlen)) {
		p->head[p->headlen++] = (unsigned char)d[used++];
		if (p->headlen == 2 && ws_head_check(p, ev) == -1)
			return used;
	}
	if (p->headlen == ws_head_need(p, p->head, p->headlen))
		ws_head_done(p, ev);
	return used;
}

/* The first two bytes: bits, opcode, mask, a control frame's length. */
static int
ws_head_check(struct ws_parser *p, struct ws_event *ev)
{
	p->fin = (p->head[0] & WS_FIN) != 0;
	p->op = p->head[0] & 0x0f;
	if (p->head[0] & WS_RSV)
		ws_fail(p, ev, WS_CLOSE_PROTOCOL, "reserved bits set");
	else if (!p->client && !(p->head[1] & WS_MASKED))
		ws_fail(p, ev, WS_CLOSE_PROTOCOL, "client frame not masked");
	else if (p->client && (p->head[1] & WS_MASKED))
		ws_fail(p, ev, WS_CLOSE_PROTOCOL, "server frame masked");
	else if (p->op >= WS_OP_CLOSE) {
		if (p->op > WS_OP_PONG)
			ws_fail(p, ev, WS_CLOSE_PROTOCOL, "reserved opcode");
		else if (!p->fin)
			ws_fail(p, ev, WS_CLOSE_PROTOCOL,
			    "fragmented control frame");
		else if ((p->head[1] & 0x7f) > WS_CONTROL_MAX)
			ws_fail(p, ev, WS_CLOSE_PROTOCOL,
			    "control frame over 125 bytes");
	} else if (p->op > WS_OP_BINARY)
		ws_fail(p, ev, WS_CLOSE_PROTOCOL, "reserved opcode");
	else if (p->op == WS_OP_CONT && p->msgop == 0)
		ws_fail(p, ev, WS_CLOSE_PROTOCOL, "continuation of nothing");
	else if (p->op != WS_OP_CONT && p->msgop != 0)
		ws_fail(p, ev, WS_CLOSE_PROTOCOL,
		    "new message inside a fragmented one");
	return ev->type == WS_EV_ERROR ? -1 : 0;
}

/*
 * The whole header is in: the length, the mask, and the message bound,
 * which is judged before any of the payload is kept.
 */
static void
ws_head_done(struct ws_parser *p, struct ws_event *ev)
{
	const unsigned char	*h = p->head;
	uint64_t		 n = h[1] & 0x7f;
	size_t			 i, at = 2;

	if (n == 126) {
		n = (uint64_t)h[2] << 8 | h[3];
		at = 4;
	} else if (n == 127) {
		for (n = 0, i = 2; i < 10; i++)
			n = n << 8 | h[i];
		at = 10;
		if (n >> 63) {
			ws_fail(p, ev, WS_CLOSE_PROTOCOL,
			    "64-bit length with its top bit set");
			return;
		}
	}
	if (p->client)
		memset(p->mask, 0, sizeof(p->mask));
	else
		memcpy(p->mask, h + at, sizeof(p->mask));
	p->headlen = 0;
	p->left = n;
	p->seen = 0;
	p->ctllen = 0;
	if (p->op < WS_OP_CLOSE) {
		if (n > p->max - buf_avail(&p->msg)) {
			ws_fail(p, ev, WS_CLOSE_TOO_BIG, "message too big");
			return;
		}
		if (p->op != WS_OP_CONT)
			p->msgop = p->op;
	}
	p->state = WS_P_BODY;
	if (n == 0)
		ws_frame_end(p, ev);
}

/* Unmask payload bytes into the message or the control buffer. */
static ssize_t
ws_parse_body(struct ws_parser *p, const char *d, size_t len,
    struct ws_event *ev)
{
	unsigned char	*to;
	size_t		 n, i;

	n = p->left < len ? (size_t)p->left : len;
	if (p->op >= WS_OP_CLOSE)
		to = p->ctl + p->ctllen;
	else if ((to = (unsigned char *)buf_reserve(&p->msg, n)) == NULL) {
		ws_parser_free(p);
		return -1;
	}
	for (i = 0; i < n; i++)
		to[i] = (unsigned char)d[i] ^ p->mask[(p->seen + i) & 3];
	if (p->op >= WS_OP_CLOSE)
		p->ctllen += n;
	else
		p->msg.len += n;
	p->seen += n;
	p->left -= n;
	if (p->left == 0)
		ws_frame_end(p, ev);
	return n;
}

/*
 * A frame's payload is all in.  A final data frame completes the
 * message, which a text message must be valid UTF-8 as a whole to be
 * (a character may straddle fragments).
 */
static void
ws_frame_end(struct ws_parser *p, struct ws_event *ev)
{
	p->state = WS_P_HEAD;
	if (p->op >= WS_OP_CLOSE) {
		ws_control_end(p, ev);
		return;
	}
	if (!p->fin)
		return;
	if (p->msgop == WS_OP_TEXT && buf_avail(&p->msg) > 0 &&
	    !codec_utf8_valid(buf_head(&p->msg), buf_avail(&p->msg))) {
		ws_fail(p, ev, WS_CLOSE_BAD_DATA, "text is not UTF-8");
		return;
	}
	ev->type = p->msgop == WS_OP_TEXT ? WS_EV_TEXT : WS_EV_BINARY;
	ev->len = buf_avail(&p->msg);
	ev->data = ev->len > 0 ? buf_head(&p->msg) : "";
	p->delivered = 1;
}

static void
ws_control_end(struct ws_parser *p, struct ws_event *ev)
{
	if (p->op == WS_OP_CLOSE) {
		ws_close_end(p, ev);
		return;
	}
	ev->type = p->op == WS_OP_PING ? WS_EV_PING : WS_EV_PONG;
	ev->data = (const char *)p->ctl;
	ev->len = p->ctllen;
}

/* A close body is empty, or a code and a UTF-8 reason. */
static void
ws_close_end(struct ws_parser *p, struct ws_event *ev)
{
	unsigned int	 code;

	if (p->ctllen == 1) {
		ws_fail(p, ev, WS_CLOSE_PROTOCOL, "close body of one byte");
		return;
	}
	code = p->ctllen == 0 ? WS_CLOSE_NO_STATUS :
	    (unsigned int)p->ctl[0] << 8 | p->ctl[1];
	if (p->ctllen > 0 && !ws_close_code_ok(code)) {
		ws_fail(p, ev, WS_CLOSE_PROTOCOL, "invalid close code");
		return;
	}
	if (p->ctllen > 2 &&
	    !codec_utf8_valid((const char *)p->ctl + 2, p->ctllen - 2)) {
		ws_fail(p, ev, WS_CLOSE_BAD_DATA, "close reason is not UTF-8");
		return;
	}
	ev->type = WS_EV_CLOSE;
	ev->code = (uint16_t)code;
	ev->data = p->ctllen > 2 ? (const char *)p->ctl + 2 : "";
	ev->len = p->ctllen > 2 ? p->ctllen - 2 : 0;
	buf_free(&p->msg);
	p->state = WS_P_DONE;
}

/*
 * Codes a peer may put on the wire: the defined ones except those
 * reserved for "no frame" (1005, 1006, 1015) and the undefined 1004,
 * plus IANA's 1012-1014 and the registered and private 3000-4999.
 */
static int
ws_close_code_ok(unsigned int code)
{
	if (code >= 3000 && code <= 4999)
		return 1;
	return code >= 1000 && code <= 1014 && code != 1004 &&
	    code != 1005 && code != 1006;
}

/* The peer broke the protocol: say how, and take nothing more. */
static void
ws_fail(struct ws_parser *p, struct ws_event *ev, uint16_t code,
    const char *why)
{
	ev->type = WS_EV_ERROR;
	ev->code = code;
	ev->data = why;
	ev->len = strlen(why);
	buf_free(&p->msg);
	p->state = WS_P_DONE;
}

/*
 * Forget the message handed out.  A buffer that grew for a big one is
 * let go, so that an idle connection holds little memory.
 */
static void
ws_msg_reset(struct ws_parser *p)
{
	p->delivered = 0;
	p->msgop = 0;
	if (p->msg.cap > WS_MSG_KEEP)
		buf_free(&p->msg);
	else
		buf_reset(&p->msg);
}

/* ---------------------------------------------------------------- */
/* Encoders */

int
ws_frame_head(struct buf *b, enum ws_opcode op, uint64_t n)
{
	unsigned char	 h[10];
	size_t		 hl, i;

	if (op >= WS_OP_CLOSE && n > WS_CONTROL_MAX) {
		errno = EINVAL;
		return -1;
	}
	h[0] = WS_FIN | op;
	if (n < 126) {
		h[1] = (unsigned char)n;
		hl = 2;
	} else if (n <= 0xffff) {
		h[1] = 126;
		h[2] = (unsigned char)(n >> 8);
		h[3] = (unsigned char)n;
		hl = 4;
	} else {
		h[1] = 127;
		for (i = 0; i < 8; i++)
			h[2 + i] = (unsigned char)(n >> (56 - 8 * i));
		hl = 10;
	}
	return buf_add(b, h, hl);
}

/* The header and payload go in together or not at all. */
static int
ws_frame(struct buf *b, enum ws_opcode op, const void *d, size_t n)
{
	size_t	 len = b->len;

	if (buf_reserve(b, n + 10) == NULL || ws_frame_head(b, op, n) == -1 ||
	    buf_add(b, d, n) == -1) {
		b->len = len;
		return -1;
	}
	return 0;
}

int
ws_frame_text(struct buf *b, const char *d, size_t n)
{
	return ws_frame(b, WS_OP_TEXT, d, n);
}

int
ws_frame_binary(struct buf *b, const void *d, size_t n)
{
	return ws_frame(b, WS_OP_BINARY, d, n);
}

int
ws_frame_ping(struct buf *b, const void *d, size_t n)
{
	return ws_frame(b, WS_OP_PING, d, n);
}

int
ws_frame_pong(struct buf *b, const void *d, size_t n)
{
	return ws_frame(b, WS_OP_PONG, d, n);
}

int
ws_frame_close(struct buf *b, uint16_t code, const char *reason)
{
	unsigned char	 body[WS_CONTROL_MAX];
	size_t		 n;

	if (code == 0 || code == WS_CLOSE_NO_STATUS)
		return ws_frame(b, WS_OP_CLOSE, NULL, 0);
	n = reason != NULL ? strlen(reason) : 0;
	if (n > WS_CONTROL_MAX - 2) {
		errno = EINVAL;
		return -1;
	}
	body[0] = (unsigned char)(code >> 8);
	body[1] = (unsigned char)code;
	if (n > 0)
		memcpy(body + 2, reason, n);
	return ws_frame(b, WS_OP_CLOSE, body, n + 2);
}

/* A client's frame: masked with mask, header and payload together. */
int
ws_frame_client(struct buf *b, enum ws_opcode op, const void *d, size_t n,
    const unsigned char mask[4])
{
	const unsigned char	*src = d;
	size_t			 len = b->len, i;
	char			*dst;

	if (buf_reserve(b, n + WS_MAX_FRAME_HEADER) == NULL ||
	    ws_frame_head(b, op, n) == -1)
		goto fail;
	b->data[len + 1] |= WS_MASKED;
	if (buf_add(b, mask, 4) == -1 || (dst = buf_reserve(b, n)) == NULL)
		goto fail;
	for (i = 0; i < n; i++)
		dst[i] = (char)(src[i] ^ mask[i & 3]);
	b->len += n;
	return 0;
fail:
	b->len = len;
	return -1;
}
