/*
 * ws: the handshake key (RFC 6455's own sample) and checks; client frames
 * fed whole, byte by byte and in odd pieces: masked single and
 * fragmented messages, control frames inside a fragmented message, 7-,
 * 16- and 64-bit lengths, the message bound, UTF-8, unmasked frames,
 * reserved bits and opcodes, the close handshake; hostile input; and
 * the server frames the encoders write, byte for byte.
 *
 * Client frames are built here by hand (mask included), not with the
 * module's encoders, so that a bug cannot cancel itself out.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/ws.h"

Suite *ws_suite(void);

#define FIN	0x80
#define MAXEV	16

/* What one feeding saw: events with copies of their payloads. */
struct seen {
	int		 n;
	int		 type[MAXEV];
	uint16_t	 code[MAXEV];
	char		*data[MAXEV];
	size_t		 len[MAXEV];
	size_t		 used;		/* bytes ws_parse said it consumed */
};

static const unsigned char mask_a[4] = { 0x37, 0xfa, 0x21, 0x3d };

/* Append a client frame: b0 is FIN|RSV|opcode; mask NULL: unmasked. */
static void
cframe(struct buf *b, int b0, const void *d, uint64_t n,
    const unsigned char *mask)
{
	unsigned char	 h[14];
	size_t		 hl = 2, i;
	char		*p;

	h[0] = (unsigned char)b0;
	if (n < 126)
		h[1] = (unsigned char)n;
	else if (n <= 0xffff) {
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
	if (mask != NULL) {
		h[1] |= 0x80;
		memcpy(h + hl, mask, 4);
		hl += 4;
	}
	ck_assert_int_eq(buf_add(b, h, hl), 0);
	if (n == 0)
		return;
	ck_assert_ptr_nonnull(p = buf_reserve(b, (size_t)n));
	for (i = 0; i < n; i++)
		p[i] = (char)(((const unsigned char *)d)[i] ^
		    (mask != NULL ? mask[i & 3] : 0));
	b->len += (size_t)n;
}

static void
cframe_str(struct buf *b, int b0, const char *s)
{
	cframe(b, b0, s, strlen(s), mask_a);
}

/*
 * Feed d to p in pieces of step bytes (0: all at once), as a reader of
 * a socket would, recording each event.
 */
static void
feed(struct ws_parser *p, const char *d, size_t len, size_t step,
    struct seen *s)
{
	struct ws_event	 ev;
	size_t		 at = 0, piece, off;
	ssize_t		 n;

	memset(s, 0, sizeof(*s));
	while (at < len) {
		piece = step == 0 || step > len - at ? len - at : step;
		for (off = 0; off < piece; off += (size_t)n) {
			n = ws_parse(p, d + at + off, piece - off, &ev);
			ck_assert_int_ge(n, 0);
			ck_assert_uint_le((size_t)n, piece - off);
			ck_assert_int_gt(n, 0);
			s->used += (size_t)n;
			if (ev.type == WS_EV_NONE)
				continue;
			ck_assert_int_lt(s->n, MAXEV);
			s->type[s->n] = ev.type;
			s->code[s->n] = ev.code;
			s->len[s->n] = ev.len;
			ck_assert_ptr_nonnull(s->data[s->n] = malloc(ev.len + 1));
			memcpy(s->data[s->n], ev.data, ev.len);
			s->data[s->n][ev.len] = '\0';
			s->n++;
		}
		at += piece;
	}
}

static void
seen_free(struct seen *s)
{
	int	 i;

	for (i = 0; i < s->n; i++)
		free(s->data[i]);
	s->n = 0;
}

/* Feed the whole of b to a fresh parser (bound max) in steps of step. */
static void
feed_fresh(struct buf *b, size_t max, size_t step, struct seen *s)
{
	struct ws_parser	 p;

	ws_parser_init(&p, max);
	feed(&p, buf_head(b), buf_avail(b), step, s);
	ws_parser_free(&p);
}

/* The steps every stream is fed in: whole, byte by byte, odd pieces. */
static const size_t steps[] = { 0, 1, 2, 3, 7, 13 };

static void
expect_one(struct buf *b, size_t max, int type, uint16_t code,
    const char *data)
{
	struct seen	 s;
	size_t		 i;

	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		feed_fresh(b, max, steps[i], &s);
		ck_assert_int_eq(s.n, 1);
		ck_assert_int_eq(s.type[0], type);
		ck_assert_uint_eq(s.code[0], code);
		if (data != NULL)
			ck_assert_str_eq(s.data[0], data);
		seen_free(&s);
	}
}

/* ---------------------------------------------------------------- */
/* Handshake */

START_TEST(accept_key_rfc_sample)
{
	char	 out[WS_ACCEPT_LEN];

	ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out);
	ck_assert_str_eq(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	/* Another key, computed with sha1sum and base64 by hand. */
	ws_accept_key("x3JJHMbDL1EzLkh9GBhXDw==", out);
	ck_assert_str_eq(out, "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");
	ws_accept_key("\tx3JJHMbDL1EzLkh9GBhXDw== ", out);
	ck_assert_str_eq(out, "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");
}
END_TEST

START_TEST(handshake_accepts_real_clients)
{
	struct ws_handshake	 h = { "GET", "websocket", "Upgrade", "13",
	    "dGhlIHNhbXBsZSBub25jZQ==" };
	struct buf		 b = { 0 };
	const char		*why = NULL;

	ck_assert_int_eq(ws_handshake_check(&h, &why), 0);
	/* Firefox's list, and case does not matter. */
	h.connection = "keep-alive, Upgrade";
	h.upgrade = "WebSocket";
	ck_assert_int_eq(ws_handshake_check(&h, &why), 0);
	h.connection = "keep-alive ,\tupgrade ";
	h.upgrade = "h2c, websocket";
	ck_assert_int_eq(ws_handshake_check(&h, &why), 0);
	ck_assert_ptr_null(why);
	/* Values as a parser may leave them, white space around. */
	h.version = " 13\t";
	h.key = " dGhlIHNhbXBsZSBub25jZQ== ";
	ck_assert_int_eq(ws_handshake_check(&h, &why), 0);
	ck_assert_ptr_null(why);

	ck_assert_int_eq(ws_handshake_reply(&b, h.key), 0);
	ck_assert_int_eq(buf_add(&b, "", 1), 0);
	ck_assert_str_eq(buf_head(&b), "HTTP/1.1 101 Switching Protocols\r\n"
	    "Upgrade: websocket\r\nConnection: Upgrade\r\n"
	    "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n");
	buf_free(&b);
}
END_TEST

static const struct {
	struct ws_handshake	 h;
	int			 status;
	const char		*why;
} bad_handshakes[] = {
	{ { "GET", NULL, "Upgrade", "13", "dGhlIHNhbXBsZSBub25jZQ==" },
	    400, "WebSocket upgrade required" },
	{ { "GET", "h2c", "Upgrade", "13", "dGhlIHNhbXBsZSBub25jZQ==" },
	    400, "WebSocket upgrade required" },
	{ { "GET", "websocket", NULL, "13", "dGhlIHNhbXBsZSBub25jZQ==" },
	    400, "WebSocket upgrade required" },
	{ { "GET", "websocket", "keep-alive", "13",
	    "dGhlIHNhbXBsZSBub25jZQ==" }, 400, "WebSocket upgrade required" },
	{ { "GET", "websocket", "upgrades", "13",
	    "dGhlIHNhbXBsZSBub25jZQ==" }, 400, "WebSocket upgrade required" },
	{ { "POST", "websocket", "Upgrade", "13",
	    "dGhlIHNhbXBsZSBub25jZQ==" }, 400, "GET" },
	{ { "GET", "websocket", "Upgrade", NULL, "dGhlIHNhbXBsZSBub25jZQ==" },
	    400, "Sec-WebSocket-Version" },
	{ { "GET", "websocket", "Upgrade", "8", "dGhlIHNhbXBsZSBub25jZQ==" },
	    426, "13" },
	{ { "GET", "websocket", "Upgrade", "13, 8", "dGhlIHNhbXBsZSBub25jZQ==" },
	    426, "13" },
	{ { "GET", "websocket", "Upgrade", "130", "dGhlIHNhbXBsZSBub25jZQ==" },
	    426, "13" },
	{ { "GET", "websocket", "Upgrade", "13", NULL }, 400, "16 bytes" },
	{ { "GET", "websocket", "Upgrade", "13", "" }, 400, "16 bytes" },
	/* 15 and 17 bytes, then not base64 at all. */
	{ { "GET", "websocket", "Upgrade", "13", "dGhlIHNhbXBsZSBub25j" },
	    400, "16 bytes" },
	{ { "GET", "websocket", "Upgrade", "13", "dGhlIHNhbXBsZSBub25jZSE=" },
	    400, "16 bytes" },
	{ { "GET", "websocket", "Upgrade", "13", "dGhlIHNhbXBsZSBub25jZQ=!" },
	    400, "16 bytes" },
};

START_TEST(handshake_refusals)
{
	const char	*why = NULL;

	ck_assert_int_eq(ws_handshake_check(&bad_handshakes[_i].h, &why),
	    bad_handshakes[_i].status);
	ck_assert_ptr_nonnull(why);
	ck_assert_ptr_nonnull(strstr(why, bad_handshakes[_i].why));
}
END_TEST

/* ---------------------------------------------------------------- */
/* Messages */

START_TEST(rfc_masked_hello)
{
	/* RFC 6455 section 5.7: a single-frame masked text message. */
	static const unsigned char wire[] = { 0x81, 0x85, 0x37, 0xfa, 0x21,
	    0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	struct buf	 b = { 0 };

	ck_assert_int_eq(buf_add(&b, wire, sizeof(wire)), 0);
	expect_one(&b, 0, WS_EV_TEXT, 0, "Hello");
	buf_free(&b);
}
END_TEST

START_TEST(messages_in_a_row)
{
	struct buf	 b = { 0 };
	struct seen	 s;
	size_t		 i;

	cframe_str(&b, FIN | WS_OP_TEXT, "{\"type\":\"resize\"}");
	cframe(&b, FIN | WS_OP_BINARY, "\0\x01\xff", 3, mask_a);
	cframe(&b, FIN | WS_OP_BINARY, NULL, 0, mask_a);
	cframe_str(&b, FIN | WS_OP_TEXT, "");
	cframe_str(&b, FIN | WS_OP_TEXT, "\xc3\xa9t\xc3\xa9");
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		feed_fresh(&b, 0, steps[i], &s);
		ck_assert_uint_eq(s.used, buf_avail(&b));
		ck_assert_int_eq(s.n, 5);
		ck_assert_int_eq(s.type[0], WS_EV_TEXT);
		ck_assert_str_eq(s.data[0], "{\"type\":\"resize\"}");
		ck_assert_int_eq(s.type[1], WS_EV_BINARY);
		ck_assert_uint_eq(s.len[1], 3);
		ck_assert_int_eq(memcmp(s.data[1], "\0\x01\xff", 3), 0);
		ck_assert_int_eq(s.type[2], WS_EV_BINARY);
		ck_assert_uint_eq(s.len[2], 0);
		ck_assert_int_eq(s.type[3], WS_EV_TEXT);
		ck_assert_uint_eq(s.len[3], 0);
		ck_assert_str_eq(s.data[4], "\xc3\xa9t\xc3\xa9");
		seen_free(&s);
	}
	buf_free(&b);
}
END_TEST

/*
 * A text message in four fragments, an "é" cut between two of them,
 * with a ping and a pong between fragments: the control frames come out
 * at once, the message whole at its end.
 */
START_TEST(fragmented_with_interleaved_ping)
{
	static const unsigned char m2[4] = { 0xde, 0xad, 0xbe, 0xef };
	struct buf	 b = { 0 };
	struct seen	 s;
	size_t		 i;

	cframe_str(&b, WS_OP_TEXT, "Hel");
	cframe_str(&b, FIN | WS_OP_PING, "ping!");
	cframe(&b, WS_OP_CONT, "lo \xc3", 4, m2);
	cframe(&b, FIN | WS_OP_PONG, "", 0, m2);
	cframe(&b, WS_OP_CONT, "", 0, m2);
	cframe_str(&b, FIN | WS_OP_CONT, "\xa9!");
	cframe_str(&b, FIN | WS_OP_BINARY, "next");
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		feed_fresh(&b, 0, steps[i], &s);
		ck_assert_int_eq(s.n, 4);
		ck_assert_int_eq(s.type[0], WS_EV_PING);
		ck_assert_str_eq(s.data[0], "ping!");
		ck_assert_int_eq(s.type[1], WS_EV_PONG);
		ck_assert_uint_eq(s.len[1], 0);
		ck_assert_int_eq(s.type[2], WS_EV_TEXT);
		ck_assert_str_eq(s.data[2], "Hello \xc3\xa9!");
		ck_assert_int_eq(s.type[3], WS_EV_BINARY);
		ck_assert_str_eq(s.data[3], "next");
		seen_free(&s);
	}
	buf_free(&b);
}
END_TEST

/* A ping's payload, answered with a pong carrying it, byte for byte. */
START_TEST(ping_answered_with_its_payload)
{
	struct buf	 in = { 0 }, out = { 0 };
	struct seen	 s;

	cframe(&in, FIN | WS_OP_PING, "\x01\x02\x03", 3, mask_a);
	feed_fresh(&in, 0, 1, &s);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.type[0], WS_EV_PING);
	ck_assert_int_eq(ws_frame_pong(&out, s.data[0], s.len[0]), 0);
	ck_assert_uint_eq(buf_avail(&out), 5);
	ck_assert_int_eq(memcmp(buf_head(&out), "\x8a\x03\x01\x02\x03", 5), 0);
	seen_free(&s);
	buf_free(&in);
	buf_free(&out);
}
END_TEST

/* Lengths on each side of the 7-, 16- and 64-bit encodings. */
static const size_t lengths[] = { 125, 126, 300, 65535, 65536, 100000 };

START_TEST(payload_lengths)
{
	struct buf	 b = { 0 };
	struct seen	 s;
	size_t		 n = lengths[_i], i, k;
	static unsigned char d[100000];

	ck_assert_uint_le(n, sizeof(d));
	for (i = 0; i < n; i++)
		d[i] = (unsigned char)(i * 31 + 7);
	cframe(&b, FIN | WS_OP_BINARY, d, n, mask_a);
	/* The header says which encoding the frame uses. */
	k = (unsigned char)buf_head(&b)[1] & 0x7f;
	ck_assert_uint_eq(k, n < 126 ? n : n <= 0xffff ? 126 : 127);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		if (steps[i] == 1 && n > 70000)
			continue;	/* byte by byte: once is enough */
		feed_fresh(&b, 0, steps[i], &s);
		ck_assert_int_eq(s.n, 1);
		ck_assert_int_eq(s.type[0], WS_EV_BINARY);
		ck_assert_uint_eq(s.len[0], n);
		ck_assert_int_eq(memcmp(s.data[0], d, n), 0);
		seen_free(&s);
	}
	buf_free(&b);
}
END_TEST

/* The same 64 KiB + 1 message in 64-bit, 16-bit and 7-bit fragments. */
START_TEST(fragment_lengths_mixed)
{
	struct buf	 b = { 0 };
	struct seen	 s;
	static char	 d[65537];

	memset(d, 'a', sizeof(d));
	cframe(&b, WS_OP_TEXT, d, 65536, mask_a);
	cframe(&b, WS_OP_CONT, d, 0, mask_a);
	cframe(&b, FIN | WS_OP_CONT, d, 1, mask_a);
	feed_fresh(&b, 0, 4096, &s);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.type[0], WS_EV_TEXT);
	ck_assert_uint_eq(s.len[0], sizeof(d));
	ck_assert_int_eq(memcmp(s.data[0], d, sizeof(d)), 0);
	seen_free(&s);
	buf_free(&b);
}
END_TEST

/* ---------------------------------------------------------------- */
/* Refusals */

/*
 * Over the bound: refused with 1009 as soon as the header is in, so the
 * payload is never read, let alone kept.  Exactly the bound is fine.
 */
START_TEST(oversize_refused_at_the_header)
{
	struct buf		 b = { 0 };
	struct seen		 s;
	static char		 d[2000];
	struct ws_parser	 p;

	cframe(&b, FIN | WS_OP_BINARY, d, 1000, mask_a);
	expect_one(&b, 1000, WS_EV_BINARY, 0, NULL);
	buf_reset(&b);
	cframe(&b, FIN | WS_OP_BINARY, d, 1001, mask_a);
	expect_one(&b, 1000, WS_EV_ERROR, WS_CLOSE_TOO_BIG, NULL);

	/* Fed whole, it consumes the header only: 2 + 2 + 4 bytes. */
	ws_parser_init(&p, 1000);
	feed(&p, buf_head(&b), 8, 0, &s);
	ck_assert_int_eq(s.n, 1);
	ck_assert_uint_eq(s.used, 8);
	ck_assert_uint_eq(p.msg.cap, 0);
	seen_free(&s);
	ws_parser_free(&p);

	/* Fragments count together. */
	buf_reset(&b);
	cframe(&b, WS_OP_TEXT, d, 600, mask_a);
	cframe(&b, FIN | WS_OP_CONT, d, 401, mask_a);
	expect_one(&b, 1000, WS_EV_ERROR, WS_CLOSE_TOO_BIG, NULL);

	/* The default bound, and a 64-bit length of 2^62. */
	buf_reset(&b);
	ck_assert_int_eq(buf_add(&b, "\x82\xff\x40\0\0\0\0\0\0\0\1\2\3\4",
	    14), 0);
	expect_one(&b, 0, WS_EV_ERROR, WS_CLOSE_TOO_BIG, NULL);
	buf_reset(&b);
	ck_assert_int_eq(buf_add(&b, "\x82\xff\0\0\0\0\0\x10\0\x01\1\2\3\4",
	    14), 0);	/* WS_MAX_MESSAGE + 1 */
	expect_one(&b, 0, WS_EV_ERROR, WS_CLOSE_TOO_BIG, NULL);
	/* The top bit of a 64-bit length is not allowed at all. */
	buf_reset(&b);
	ck_assert_int_eq(buf_add(&b, "\x82\xff\x80\0\0\0\0\0\0\0\1\2\3\4",
	    14), 0);
	expect_one(&b, 0, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL);
	buf_free(&b);
}
END_TEST

START_TEST(text_must_be_utf8)
{
	struct buf	 b = { 0 };

	cframe_str(&b, FIN | WS_OP_TEXT, "ok \xc3\x28");
	expect_one(&b, 0, WS_EV_ERROR, WS_CLOSE_BAD_DATA, NULL);
	buf_reset(&b);
	cframe_str(&b, FIN | WS_OP_TEXT, "\xc0\xaf");		/* overlong */
	expect_one(&b, 0, WS_EV_ERROR, WS_CLOSE_BAD_DATA, NULL);
	buf_reset(&b);
	cframe_str(&b, FIN | WS_OP_TEXT, "\xed\xa0\x80");	/* surrogate */
	expect_one(&b, 0, WS_EV_ERROR, WS_CLOSE_BAD_DATA, NULL);
	/* A sequence cut short by the end of the message. */
	buf_reset(&b);
	cframe_str(&b, WS_OP_TEXT, "caf");
	cframe_str(&b, FIN | WS_OP_CONT, "\xc3");
	expect_one(&b, 0, WS_EV_ERROR, WS_CLOSE_BAD_DATA, NULL);
	/* The same bytes as binary are just bytes. */
	buf_reset(&b);
	cframe_str(&b, FIN | WS_OP_BINARY, "ok \xc3\x28");
	expect_one(&b, 0, WS_EV_BINARY, 0, "ok \xc3\x28");
	buf_free(&b);
}
END_TEST

/* An unmasked client frame is refused after its first two bytes. */
START_TEST(unmasked_refused)
{
	struct buf		 b = { 0 };
	struct seen		 s;
	struct ws_parser	 p;

	cframe(&b, FIN | WS_OP_TEXT, "Hello", 5, NULL);
	expect_one(&b, 0, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL);
	ws_parser_init(&p, 0);
	feed(&p, buf_head(&b), buf_avail(&b), 0, &s);
	ck_assert_uint_eq(s.used, buf_avail(&b));	/* the rest discarded */
	ck_assert_ptr_nonnull(strstr(s.data[0], "masked"));
	seen_free(&s);
	/* Nothing more comes out of a broken parser. */
	buf_reset(&b);
	cframe_str(&b, FIN | WS_OP_TEXT, "later");
	feed(&p, buf_head(&b), buf_avail(&b), 1, &s);
	ck_assert_int_eq(s.n, 0);
	ck_assert_uint_eq(s.used, buf_avail(&b));
	ws_parser_free(&p);
	buf_free(&b);
}
END_TEST

/* First bytes that are a protocol error whatever follows. */
static const int bad_b0[] = {
	FIN | 0x40 | WS_OP_TEXT, FIN | 0x20 | WS_OP_TEXT,
	FIN | 0x10 | WS_OP_BINARY, FIN | 0x40 | WS_OP_PING,
	FIN | 0x3, FIN | 0x4, FIN | 0x5, FIN | 0x6, FIN | 0x7,
	FIN | 0xb, FIN | 0xc, FIN | 0xd, FIN | 0xe, FIN | 0xf,
	WS_OP_PING, WS_OP_CLOSE, WS_OP_PONG,	/* fragmented control */
	FIN | WS_OP_CONT, WS_OP_CONT,		/* continuation of nothing */
};

START_TEST(reserved_bits_and_opcodes)
{
	struct buf	 b = { 0 };

	/* A body that would be a fine close, had the frame been fine. */
	cframe(&b, bad_b0[_i], "\x03\xe8", 2, mask_a);
	expect_one(&b, 0, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL);
	buf_free(&b);
}
END_TEST

START_TEST(bad_sequences)
{
	struct buf	 b = { 0 };
	static char	 d[126];

	/* A new message while one is fragmented. */
	cframe_str(&b, WS_OP_TEXT, "a");
	cframe_str(&b, FIN | WS_OP_TEXT, "b");
	expect_one(&b, 0, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL);
	/* A control frame over 125 bytes. */
	buf_reset(&b);
	cframe(&b, FIN | WS_OP_PING, d, 126, mask_a);
	expect_one(&b, 0, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL);
	/* 125 is fine. */
	buf_reset(&b);
	cframe(&b, FIN | WS_OP_PING, d, 125, mask_a);
	expect_one(&b, 0, WS_EV_PING, 0, NULL);
	buf_free(&b);
}
END_TEST

/* ---------------------------------------------------------------- */
/* Close */

static const struct {
	const char	*body;
	size_t		 len;
	int		 type;
	uint16_t	 code;
	const char	*reason;
} closes[] = {
	{ "\x03\xe8" "bye", 5, WS_EV_CLOSE, 1000, "bye" },
	{ "", 0, WS_EV_CLOSE, WS_CLOSE_NO_STATUS, "" },
	{ "\x03\xe9", 2, WS_EV_CLOSE, 1001, "" },
	{ "\x03\xf3", 2, WS_EV_CLOSE, 1011, "" },
	{ "\x0b\xb8", 2, WS_EV_CLOSE, 3000, "" },
	{ "\x13\x87" "\xc3\xa9", 4, WS_EV_CLOSE, 4999, "\xc3\xa9" },
	{ "\x03", 1, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL },
	{ "\x03\xe7", 2, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL },	/* 999 */
	{ "\x03\xec", 2, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL },	/* 1004 */
	{ "\x03\xed", 2, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL },	/* 1005 */
	{ "\x03\xee", 2, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL },	/* 1006 */
	{ "\x03\xf7", 2, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL },	/* 1015 */
	{ "\x07\xd0", 2, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL },	/* 2000 */
	{ "\x13\x88", 2, WS_EV_ERROR, WS_CLOSE_PROTOCOL, NULL },	/* 5000 */
	{ "\x03\xe8\xff", 3, WS_EV_ERROR, WS_CLOSE_BAD_DATA, NULL },
};

START_TEST(close_codes)
{
	struct buf	 b = { 0 };

	cframe(&b, FIN | WS_OP_CLOSE, closes[_i].body, closes[_i].len,
	    mask_a);
	expect_one(&b, 0, closes[_i].type, closes[_i].code, closes[_i].reason);
	buf_free(&b);
}
END_TEST

/*
 * A close in the middle of a fragmented message ends everything: the
 * half message is never delivered and what follows is discarded.
 */
START_TEST(close_ends_the_stream)
{
	struct buf	 b = { 0 }, out = { 0 };
	struct seen	 s;

	cframe_str(&b, WS_OP_TEXT, "half");
	cframe(&b, FIN | WS_OP_CLOSE, "\x03\xe8", 2, mask_a);
	cframe_str(&b, FIN | WS_OP_CONT, " more");
	cframe_str(&b, FIN | WS_OP_TEXT, "after");
	feed_fresh(&b, 0, 0, &s);
	ck_assert_int_eq(s.n, 1);
	ck_assert_int_eq(s.type[0], WS_EV_CLOSE);
	ck_assert_uint_eq(s.code[0], 1000);
	ck_assert_uint_eq(s.used, buf_avail(&b));
	/* The echo. */
	ck_assert_int_eq(ws_frame_close(&out, s.code[0], NULL), 0);
	ck_assert_uint_eq(buf_avail(&out), 4);
	ck_assert_int_eq(memcmp(buf_head(&out), "\x88\x02\x03\xe8", 4), 0);
	seen_free(&s);
	buf_free(&b);
	buf_free(&out);
}
END_TEST

/* ---------------------------------------------------------------- */
/* Encoders */

START_TEST(server_frames)
{
	struct buf	 b = { 0 };
	static char	 d[70000];
	char		 reason[130];

	ck_assert_int_eq(ws_frame_text(&b, "hi", 2), 0);
	ck_assert_uint_eq(buf_avail(&b), 4);
	ck_assert_int_eq(memcmp(buf_head(&b), "\x81\x02hi", 4), 0);
	buf_reset(&b);
	ck_assert_int_eq(ws_frame_binary(&b, d, 125), 0);
	ck_assert_uint_eq(buf_avail(&b), 2 + 125);
	ck_assert_int_eq(memcmp(buf_head(&b), "\x82\x7d", 2), 0);
	buf_reset(&b);
	ck_assert_int_eq(ws_frame_binary(&b, d, 126), 0);
	ck_assert_uint_eq(buf_avail(&b), 4 + 126);
	ck_assert_int_eq(memcmp(buf_head(&b), "\x82\x7e\x00\x7e", 4), 0);
	buf_reset(&b);
	ck_assert_int_eq(ws_frame_binary(&b, d, 65535), 0);
	ck_assert_uint_eq(buf_avail(&b), 4 + 65535);
	ck_assert_int_eq(memcmp(buf_head(&b), "\x82\x7e\xff\xff", 4), 0);
	buf_reset(&b);
	ck_assert_int_eq(ws_frame_binary(&b, d, 65536), 0);
	ck_assert_uint_eq(buf_avail(&b), 10 + 65536);
	ck_assert_int_eq(memcmp(buf_head(&b),
	    "\x82\x7f\0\0\0\0\0\x01\0\0", 10), 0);
	buf_reset(&b);
	ck_assert_int_eq(ws_frame_ping(&b, "", 0), 0);
	ck_assert_int_eq(memcmp(buf_head(&b), "\x89\x00", 2), 0);
	buf_reset(&b);

	/* Control payloads over 125 bytes are refused, nothing appended. */
	ck_assert_int_eq(ws_frame_text(&b, "x", 1), 0);
	errno = 0;
	ck_assert_int_eq(ws_frame_ping(&b, d, 126), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ws_frame_pong(&b, d, 126), -1);
	ck_assert_uint_eq(buf_avail(&b), 3);
	buf_reset(&b);

	ck_assert_int_eq(ws_frame_close(&b, 1009, "too big"), 0);
	ck_assert_uint_eq(buf_avail(&b), 11);
	ck_assert_int_eq(memcmp(buf_head(&b), "\x88\x09\x03\xf1too big", 11),
	    0);
	buf_reset(&b);
	ck_assert_int_eq(ws_frame_close(&b, WS_CLOSE_NO_STATUS, "x"), 0);
	ck_assert_uint_eq(buf_avail(&b), 2);
	ck_assert_int_eq(memcmp(buf_head(&b), "\x88\x00", 2), 0);
	buf_reset(&b);
	memset(reason, 'r', sizeof(reason));
	reason[123] = '\0';
	ck_assert_int_eq(ws_frame_close(&b, 1000, reason), 0);
	ck_assert_uint_eq(buf_avail(&b), 2 + 125);
	buf_reset(&b);
	reason[123] = 'r';
	reason[124] = '\0';
	ck_assert_int_eq(ws_frame_close(&b, 1000, reason), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_uint_eq(buf_avail(&b), 0);

	/* A header alone, for a payload the caller writes itself. */
	ck_assert_int_eq(ws_frame_head(&b, WS_OP_BINARY, 300), 0);
	ck_assert_uint_eq(buf_avail(&b), 4);
	ck_assert_int_eq(memcmp(buf_head(&b), "\x82\x7e\x01\x2c", 4), 0);
	ck_assert_int_eq(ws_frame_head(&b, WS_OP_PING, 126), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_uint_eq(buf_avail(&b), 4);
	buf_free(&b);
}
END_TEST

/* ---------------------------------------------------------------- */
/* Hostile input and memory */

/*
 * Random bytes in random pieces: progress on every call, never more
 * consumed than given, at most one close or error and nothing after it,
 * and the message buffer within its bound.
 */
/*
 * The client side: ws_frame_client's masked frame is RFC 6455's sample
 * with its mask, the server's parser reads it back; the client parser
 * reads the server's unmasked frames and refuses masked ones.
 */
START_TEST(client_frames_round_trip)
{
	static const unsigned char rfc[] = { 0x81, 0x85, 0x37, 0xfa, 0x21,
	    0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 };
	static const unsigned char mask[4] = { 0x37, 0xfa, 0x21, 0x3d };
	static char		 big[70000];
	struct ws_parser	 p;
	struct ws_event		 ev;
	struct buf		 b = { 0 };
	size_t			 off = 0;

	ck_assert_int_eq(ws_frame_client(&b, WS_OP_TEXT, "Hello", 5, mask), 0);
	ck_assert_uint_eq(buf_avail(&b), sizeof(rfc));
	ck_assert_int_eq(memcmp(buf_head(&b), rfc, sizeof(rfc)), 0);
	buf_reset(&b);
	memset(big, 'x', sizeof(big));
	ck_assert_int_eq(ws_frame_client(&b, WS_OP_BINARY, big, sizeof(big),
	    mask), 0);
	ws_parser_init(&p, 0);
	while (off < buf_avail(&b)) {
		off += (size_t)ws_parse(&p, buf_head(&b) + off,
		    buf_avail(&b) - off, &ev);
		if (ev.type != WS_EV_NONE)
			break;
	}
	ck_assert_int_eq(ev.type, WS_EV_BINARY);
	ck_assert_uint_eq(ev.len, sizeof(big));
	ck_assert_int_eq(memcmp(ev.data, big, sizeof(big)), 0);
	ws_parser_free(&p);

	buf_reset(&b);
	ck_assert_int_eq(ws_frame_text(&b, "hi", 2), 0);
	ws_parser_init_client(&p, 0);
	ck_assert_int_eq(ws_parse(&p, buf_head(&b), buf_avail(&b), &ev), 4);
	ck_assert_int_eq(ev.type, WS_EV_TEXT);
	ck_assert_int_eq(ev.len, 2);
	ck_assert_int_eq(memcmp(ev.data, "hi", 2), 0);
	(void)ws_parse(&p, (const char *)rfc, sizeof(rfc), &ev);
	ck_assert_int_eq(ev.type, WS_EV_ERROR);
	ck_assert_int_eq(ev.code, WS_CLOSE_PROTOCOL);
	ws_parser_free(&p);
	buf_free(&b);
}
END_TEST

START_TEST(random_garbage)
{
	struct ws_parser	 p;
	struct ws_event		 ev;
	char			 d[4096];
	size_t			 i, at, piece;
	ssize_t			 n;
	int			 round, ends;

	srandom(12345);
	for (round = 0; round < 300; round++) {
		for (i = 0; i < sizeof(d); i++)
			d[i] = (char)random();
		if (round % 2)		/* often a plausible first byte */
			d[0] = (char)(0x80 | (random() % 3));
		ws_parser_init(&p, 3000);
		ends = 0;
		for (at = 0; at < sizeof(d); at += (size_t)n) {
			piece = 1 + (size_t)random() % 64;
			if (piece > sizeof(d) - at)
				piece = sizeof(d) - at;
			n = ws_parse(&p, d + at, piece, &ev);
			ck_assert_int_gt(n, 0);
			ck_assert_uint_le((size_t)n, piece);
			if (ev.type == WS_EV_ERROR || ev.type == WS_EV_CLOSE)
				ends++;
			else if (ends > 0)
				ck_assert_int_eq(ev.type, WS_EV_NONE);
			ck_assert_uint_le(p.msg.cap, 2 * 3000 + 256);
		}
		ck_assert_int_le(ends, 1);
		ws_parser_free(&p);
	}
}
END_TEST

/* After a big message the buffer is let go; a small one is kept. */
START_TEST(big_buffer_released)
{
	struct ws_parser	 p;
	struct buf		 b = { 0 };
	struct seen		 s;
	static char		 d[200000];

	ws_parser_init(&p, 0);
	cframe(&b, FIN | WS_OP_BINARY, d, sizeof(d), mask_a);
	feed(&p, buf_head(&b), buf_avail(&b), 0, &s);
	ck_assert_int_eq(s.n, 1);
	ck_assert_uint_ge(p.msg.cap, sizeof(d));
	seen_free(&s);
	buf_reset(&b);
	cframe_str(&b, FIN | WS_OP_TEXT, "small");
	feed(&p, buf_head(&b), buf_avail(&b), 0, &s);
	ck_assert_int_eq(s.n, 1);
	ck_assert_str_eq(s.data[0], "small");
	ck_assert_uint_le(p.msg.cap, WS_MSG_KEEP);
	seen_free(&s);
	ws_parser_free(&p);
	buf_free(&b);
}
END_TEST

Suite *
ws_suite(void)
{
	Suite	*s = suite_create("ws");
	TCase	*tc;

	tc = tcase_create("handshake");
	tcase_add_test(tc, accept_key_rfc_sample);
	tcase_add_test(tc, handshake_accepts_real_clients);
	tcase_add_loop_test(tc, handshake_refusals, 0,
	    sizeof(bad_handshakes) / sizeof(bad_handshakes[0]));
	suite_add_tcase(s, tc);

	tc = tcase_create("messages");
	tcase_add_test(tc, rfc_masked_hello);
	tcase_add_test(tc, messages_in_a_row);
	tcase_add_test(tc, fragmented_with_interleaved_ping);
	tcase_add_test(tc, ping_answered_with_its_payload);
	tcase_add_loop_test(tc, payload_lengths, 0,
	    sizeof(lengths) / sizeof(lengths[0]));
	tcase_add_test(tc, fragment_lengths_mixed);
	suite_add_tcase(s, tc);

	tc = tcase_create("refusals");
	tcase_add_test(tc, oversize_refused_at_the_header);
	tcase_add_test(tc, text_must_be_utf8);
	tcase_add_test(tc, unmasked_refused);
	tcase_add_loop_test(tc, reserved_bits_and_opcodes, 0,
	    sizeof(bad_b0) / sizeof(bad_b0[0]));
	tcase_add_test(tc, bad_sequences);
	suite_add_tcase(s, tc);

	tc = tcase_create("close");
	tcase_add_loop_test(tc, close_codes, 0,
	    sizeof(closes) / sizeof(closes[0]));
	tcase_add_test(tc, close_ends_the_stream);
	suite_add_tcase(s, tc);

	tc = tcase_create("encoders");
	tcase_add_test(tc, server_frames);
	tcase_add_test(tc, client_frames_round_trip);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_add_test(tc, random_garbage);
	tcase_add_test(tc, big_buffer_released);
	suite_add_tcase(s, tc);
	return s;
}
