/*
 * connect: the Connect protocol's JSON codec as envd's SDKs speak it
 * (connectrpc.com/docs/protocol): the envelope of a streaming message
 * (one flag byte, a 4-byte big-endian length, the JSON), the end-stream
 * frame, the code -> HTTP status table of unary errors, the proto3 JSON
 * names (lowerCamel, snake_case accepted) and the timeout headers.  No
 * HTTP here: the route modules (lib/api_envd*.c) frame what this makes.
 */
#ifndef TEND_CONNECT_H
#define TEND_CONNECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/tunables.h"

#define CONNECT_HDR		5	/* flag byte + 4-byte length */
#define CONNECT_FLAG_COMPRESSED	0x01
#define CONNECT_FLAG_END	0x02	/* the end-stream frame */

/* Media types: unary, and streams. */
#define CONNECT_CTYPE_UNARY	"application/json"
#define CONNECT_CTYPE_STREAM	"application/connect+json"

/* One envelope, its message pointing into the parsed bytes. */
struct connect_env {
	unsigned int	 flags;
	const char	*data;
	size_t		 len;
	size_t		 size;		/* header + message: bytes consumed */
};

/*
 * The envelope at the head of d (n bytes), its message at most max
 * bytes: 1 and *e, 0 when more bytes are needed, or -1 with errno:
 * EMSGSIZE (longer than max), ENOTSUP (compressed: we negotiate no
 * compression), EPROTO (a flag this side does not know).
 */
int	connect_env_parse(const void *d, size_t n, size_t max,
	    struct connect_env *e);

/*
 * A request body that must be exactly one uncompressed message envelope
 * (a server stream's request): 0 and *e, or -1 with the Connect code
 * (and a message into msg) to end the stream with.
 */
int	connect_request(const void *d, size_t n, struct connect_env *e,
	    const char **code, char *msg, size_t msgn);

/* Append one message envelope (flag 0) holding json to b.  -1: ENOMEM. */
int	connect_env_add(struct buf *b, const char *json, size_t n);
/*
 * Append the end-stream frame: {} when code is NULL, else
 * {"error":{"code","message"}}.  -1: ENOMEM.
 */
int	connect_end_add(struct buf *b, const char *code, const char *msg);

/* The HTTP status of a unary error with code (500 for an unknown one). */
int	connect_http_status(const char *code);
/* A known Connect code? */
bool	connect_code_valid(const char *code);
/* The unary error body {"code","message"}; NULL on ENOMEM. */
cJSON	*connect_error_json(const char *code, const char *msg);

/*
 * obj's member named camel (lowerCamel, as proto3 JSON writes it), or
 * its snake_case spelling (which proto3 parsers accept too); NULL.
 * A JSON null is "absent", as proto3 reads it.
 */
const cJSON *connect_field(const cJSON *obj, const char *camel);

/*
 * Connect-Timeout-Ms (at most 10 digits, by the protocol): 1 and *ms,
 * 0 when h is NULL, -1 when malformed.
 */
int	connect_timeout_ms(const char *h, uint64_t *ms);

#endif
