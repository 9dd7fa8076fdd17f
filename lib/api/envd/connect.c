/*
 * connect.c: the Connect protocol's JSON framing.  Envelopes are parsed
 * from bytes that may be incomplete (a body arrives in pieces), every
 * length checked against a limit before the payload is touched; frames
 * are appended to a caller's buffer, which the route module writes.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonstr.h"
#include "connect.h"

/* The protocol's codes and the HTTP status of each as a unary error. */
static const struct {
	const char	*code;
	int		 status;
} connect_codes[] = {
	{ "canceled",		499 },
	{ "unknown",		500 },
	{ "invalid_argument",	400 },
	{ "deadline_exceeded",	504 },
	{ "not_found",		404 },
	{ "already_exists",	409 },
	{ "permission_denied",	403 },
	{ "resource_exhausted",	429 },
	{ "failed_precondition", 400 },
	{ "aborted",		409 },
	{ "out_of_range",	400 },
	{ "unimplemented",	501 },
	{ "internal",		500 },
	{ "unavailable",	503 },
	{ "data_loss",		500 },
	{ "unauthenticated",	401 },
};

#define CONNECT_NCODES	(sizeof(connect_codes) / sizeof(connect_codes[0]))

int
connect_env_parse(const void *d, size_t n, size_t max, struct connect_env *e)
{
	const unsigned char	*p = d;
	uint32_t		 len;

	if (n < CONNECT_HDR)
		return 0;
	if (p[0] & CONNECT_FLAG_COMPRESSED) {
		errno = ENOTSUP;
		return -1;
	}
	if (p[0] & ~(unsigned)CONNECT_FLAG_END) {
		errno = EPROTO;
		return -1;
	}
	len = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 8 | p[4];
	if (len > max) {
		errno = EMSGSIZE;
		return -1;
	}
	if (n - CONNECT_HDR < len)
		return 0;
	e->flags = p[0];
	e->data = (const char *)p + CONNECT_HDR;
	e->len = len;
	e->size = CONNECT_HDR + (size_t)len;
	return 1;
}

/* The refusal of a request body: code, and why into msg. */
static int
connect_refuse(const char **code, const char *c, char *msg, size_t msgn,
    const char *why)
{
	*code = c;
	(void)snprintf(msg, msgn, "%s", why);
	return -1;
}

int
connect_request(const void *d, size_t n, struct connect_env *e,
    const char **code, char *msg, size_t msgn)
{
	switch (connect_env_parse(d, n, CONNECT_MSG_MAX, e)) {
	case 0:
		return connect_refuse(code, "invalid_argument", msg, msgn,
		    "the request is not one whole envelope");
	case -1:
		if (errno == ENOTSUP)
			return connect_refuse(code, "unimplemented", msg, msgn,
			    "compressed messages are not supported");
		return connect_refuse(code, errno == EMSGSIZE ?
		    "resource_exhausted" : "invalid_argument", msg, msgn,
		    errno == EMSGSIZE ? "message larger than the limit" :
		    "unknown envelope flags");
	}
	if (e->flags != 0 || e->size != n)
		return connect_refuse(code, "invalid_argument", msg, msgn,
		    "a server stream's request is one message envelope");
	return 0;
}

/* The header of an envelope of len bytes, then the bytes. */
static int
connect_frame_add(struct buf *b, unsigned int flags, const char *d,
    size_t len)
{
	unsigned char	h[CONNECT_HDR];

	if (len > UINT32_MAX) {
		errno = EMSGSIZE;
		return -1;
	}
	h[0] = (unsigned char)flags;
	h[1] = (unsigned char)(len >> 24);
	h[2] = (unsigned char)(len >> 16);
	h[3] = (unsigned char)(len >> 8);
	h[4] = (unsigned char)len;
	if (buf_add(b, h, sizeof(h)) == -1)
		return -1;
	return buf_add(b, d, len);
}

int
connect_env_add(struct buf *b, const char *json, size_t n)
{
	return connect_frame_add(b, 0, json, n);
}

int
connect_end_add(struct buf *b, const char *code, const char *msg)
{
	cJSON	*j, *err;
	char	*s;
	int	 rc;

	if (code == NULL)
		return connect_frame_add(b, CONNECT_FLAG_END, "{}", 2);
	if ((j = cJSON_CreateObject()) == NULL ||
	    (err = connect_error_json(code, msg)) == NULL) {
		cJSON_Delete(j);
		errno = ENOMEM;
		return -1;
	}
	cJSON_AddItemToObject(j, "error", err);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (s == NULL) {
		errno = ENOMEM;
		return -1;
	}
	rc = connect_frame_add(b, CONNECT_FLAG_END, s, strlen(s));
	free(s);
	return rc;
}

int
connect_http_status(const char *code)
{
	size_t	i;

	for (i = 0; i < CONNECT_NCODES; i++)
		if (strcmp(code, connect_codes[i].code) == 0)
			return connect_codes[i].status;
	return 500;
}

bool
connect_code_valid(const char *code)
{
	size_t	i;

	for (i = 0; i < CONNECT_NCODES; i++)
		if (strcmp(code, connect_codes[i].code) == 0)
			return true;
	return false;
}

cJSON *
connect_error_json(const char *code, const char *msg)
{
	cJSON	*j;

	if ((j = cJSON_CreateObject()) == NULL)
		return NULL;
	if (cJSON_AddStringToObject(j, "code", code) == NULL ||
	    (msg != NULL && msg[0] != '\0' &&
	    jsonstr_add(j, "message", msg) == NULL)) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

const cJSON *
connect_field(const cJSON *obj, const char *camel)
{
	const cJSON	*f;
	char		 snake[CONNECT_NAME_MAX];
	size_t		 i, n = 0;

	if ((f = cJSON_GetObjectItemCaseSensitive(obj, camel)) != NULL)
		return cJSON_IsNull(f) ? NULL : f;
	for (i = 0; camel[i] != '\0'; i++) {
		if (n + 3 > sizeof(snake))
			return NULL;
		if (isupper((unsigned char)camel[i])) {
			snake[n++] = '_';
			snake[n++] = (char)tolower((unsigned char)camel[i]);
		} else
			snake[n++] = camel[i];
	}
	if (n == i)
		return NULL;		/* one word: no other spelling */
	snake[n] = '\0';
	f = cJSON_GetObjectItemCaseSensitive(obj, snake);
	return cJSON_IsNull(f) ? NULL : f;
}

int
connect_timeout_ms(const char *h, uint64_t *ms)
{
	size_t	i;

	if (h == NULL)
		return 0;
	for (i = 0; h[i] != '\0'; i++)
		if (!isdigit((unsigned char)h[i]) ||
		    i == CONNECT_TIMEOUT_DIGITS)
			return -1;
	if (i == 0)
		return -1;
	*ms = strtoull(h, NULL, 10);
	return 1;
}
