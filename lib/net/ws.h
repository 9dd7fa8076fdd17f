/*
 * ws: the server side of RFC 6455 WebSocket as a codec, with no I/O of
 * its own.  The caller owns the socket: it feeds what it read to
 * ws_parse and writes what the ws_frame_* functions appended.
 *
 * Handshake.  ws_handshake_check judges a request's header values; 0
 * means accept: answer with ws_handshake_reply (the 101 head) and hand
 * the connection to the parser.  Otherwise it returns the HTTP status to
 * answer (400; 426 for a version other than 13, with the header
 * "Sec-WebSocket-Version: 13") and a static message for the JSON error.
 *
 * Parsing.  ws_parse consumes bytes and stops at the first event, so the
 * caller loops:
 *
 *	while (len > 0) {
 *		if ((n = ws_parse(&p, data, len, &ev)) == -1)
 *			-> out of memory: send close 1011 and hang up
 *		data += n, len -= n;
 *		switch (ev.type) ...
 *	}
 *
 * Events: a whole TEXT (valid UTF-8) or BINARY message, its fragments
 * joined; PING (answer ws_frame_pong with the same payload); PONG;
 * CLOSE (the peer's code, 1005 when it sent none, and reason: answer
 * ws_frame_close with the same code, then close the socket once it is
 * written); ERROR (the peer broke the protocol: send ws_frame_close with
 * ev.code and ev.data as reason, then close).  ev.data stays valid until
 * the next ws_parse or ws_parser_free.  After CLOSE or ERROR the parser
 * discards whatever follows.
 *
 * Bounds: a parser holds at most one frame header, one control payload
 * (125 bytes) and the message being assembled, which is refused (1009)
 * as soon as a frame header announces more than the maximum in all.
 * Client frames must be masked (1002 otherwise); no extension is
 * negotiated, so reserved bits and opcodes are 1002 too.
 *
 * The client side (tend term) parses with ws_parser_init_client and
 * sends ws_frame_client's masked frames.
 *
 * Encoding.  Server frames are unmasked and final: ws_frame_* append
 * one to a struct buf and return 0, or -1 with errno (ENOMEM; EINVAL
 * for a control payload over 125 bytes).
 */
#ifndef TEND_WS_H
#define TEND_WS_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/tunables.h"

#define WS_ACCEPT_LEN	29	/* base64 of a SHA-1 digest + NUL */
#define WS_CONTROL_MAX	125	/* payload of a control frame */

enum ws_opcode {
	WS_OP_CONT = 0x0,
	WS_OP_TEXT = 0x1,
	WS_OP_BINARY = 0x2,
	WS_OP_CLOSE = 0x8,
	WS_OP_PING = 0x9,
	WS_OP_PONG = 0xa
};

/* Close codes (RFC 6455 section 7.4.1). */
#define WS_CLOSE_NORMAL		1000
#define WS_CLOSE_GOING_AWAY	1001
#define WS_CLOSE_PROTOCOL	1002
#define WS_CLOSE_UNSUPPORTED	1003
#define WS_CLOSE_NO_STATUS	1005	/* never sent: "the peer gave none" */
#define WS_CLOSE_BAD_DATA	1007	/* text that is not UTF-8 */
#define WS_CLOSE_POLICY		1008
#define WS_CLOSE_TOO_BIG	1009
#define WS_CLOSE_INTERNAL	1011

/* The request headers that decide a handshake; NULL when absent. */
struct ws_handshake {
	const char	*method;
	const char	*upgrade;	/* Upgrade */
	const char	*connection;	/* Connection */
	const char	*version;	/* Sec-WebSocket-Version */
	const char	*key;		/* Sec-WebSocket-Key */
};

enum ws_event_type {
	WS_EV_NONE,		/* every byte given was consumed: read more */
	WS_EV_TEXT,
	WS_EV_BINARY,
	WS_EV_PING,
	WS_EV_PONG,
	WS_EV_CLOSE,
	WS_EV_ERROR
};

struct ws_event {
	enum ws_event_type	 type;
	const char		*data;	/* payload; CLOSE: reason; ERROR: ours */
	size_t			 len;
	uint16_t		 code;	/* CLOSE: the peer's; ERROR: to send */
};

enum ws_pstate {
	WS_P_HEAD,		/* reading a frame header */
	WS_P_BODY,		/* reading its payload */
	WS_P_DONE		/* closed or broken: input is discarded */
};

struct ws_parser {
	enum ws_pstate	 state;
	bool		 client;	/* reads a server's frames: unmasked */
	size_t		 max;		/* largest message, all fragments */
	unsigned char	 head[WS_MAX_FRAME_HEADER];
	size_t		 headlen;	/* header bytes held */
	/* The frame being read. */
	int		 fin;
	int		 op;
	unsigned char	 mask[4];
	uint64_t	 left;		/* payload bytes still to come */
	uint64_t	 seen;		/* payload bytes read: the mask's phase */
	/* The data message being assembled, and a control payload. */
	int		 msgop;		/* WS_OP_TEXT, WS_OP_BINARY or 0: none */
	int		 delivered;	/* msg was handed out: reset it first */
	struct buf	 msg;
	unsigned char	 ctl[WS_CONTROL_MAX];
	size_t		 ctllen;
};

/* Sec-WebSocket-Accept for a client's key (white space around it ignored). */
void	ws_accept_key(const char *key, char out[WS_ACCEPT_LEN]);
/* 0: accept; else 400 or 426 and *why, a static message. */
int	ws_handshake_check(const struct ws_handshake *, const char **why);
/* Append the 101 Switching Protocols head for key.  -1: ENOMEM. */
int	ws_handshake_reply(struct buf *, const char *key);

/* max: largest message accepted; 0 means WS_MAX_MESSAGE. */
void	ws_parser_init(struct ws_parser *, size_t max);
/* The client side (tend term): frames must come unmasked. */
void	ws_parser_init_client(struct ws_parser *, size_t max);
void	ws_parser_free(struct ws_parser *);
/* Bytes consumed (<= len) and *ev; -1: ENOMEM, the parser is done. */
ssize_t	ws_parse(struct ws_parser *, const char *data, size_t len,
	    struct ws_event *ev);

int	ws_frame_text(struct buf *, const char *, size_t);
int	ws_frame_binary(struct buf *, const void *, size_t);
int	ws_frame_ping(struct buf *, const void *, size_t);
int	ws_frame_pong(struct buf *, const void *, size_t);
/* code 0 or 1005: an empty close body; reason at most 123 bytes. */
int	ws_frame_close(struct buf *, uint16_t code, const char *reason);
/* A client's final frame, masked with mask (RFC 6455 section 5.3). */
int	ws_frame_client(struct buf *, enum ws_opcode, const void *, size_t,
	    const unsigned char mask[4]);
/* Only the header of a final frame; the caller appends the n bytes. */
int	ws_frame_head(struct buf *, enum ws_opcode, uint64_t n);

#endif
