/*
 * http_reply.c: the framing of responses (http.h): complete ones, streams
 * (chunked, to the close, of a known length, from a file), SSE, and the
 * 101 of a switch of protocols.  A response queued whole ends its
 * request (http_finish): the connection goes on with the next one.
 */
#include <sys/sendfile.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "http_conn.h"

static int	http_head(struct http_conn *, int, const char *, const char *,
		    long long, const char *);
static void	http_finish(struct http_conn *);

/* ------------------------------------------------------------------ */
/* Responses */

const char *
http_status_text(int status)
{
	switch (status) {
	case 101: return "Switching Protocols";
	case 200: return "OK";
	case 201: return "Created";
	case 204: return "No Content";
	case 206: return "Partial Content";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 409: return "Conflict";
	case 410: return "Gone";
	case 413: return "Payload Too Large";
	case 416: return "Range Not Satisfiable";
	case 422: return "Unprocessable Entity";
	case 500: return "Internal Server Error";
	case 501: return "Not Implemented";
	case 503: return "Service Unavailable";
	case 507: return "Insufficient Storage";
	default: return "Unknown";
	}
}

static int
http_head(struct http_conn *c, int status, const char *ctype,
    const char *extra, long long len, const char *extra2)
{
	struct buf	*o = &c->out;

	if (buf_printf(o, "HTTP/1.1 %d %s\r\n", status,
	    http_status_text(status)) == -1)
		return -1;
	if (ctype != NULL && buf_printf(o, "Content-Type: %s\r\n", ctype) == -1)
		return -1;
	if (len >= 0 && buf_printf(o, "Content-Length: %lld\r\n", len) == -1)
		return -1;
	if ((extra != NULL && buf_addstr(o, extra) == -1) ||
	    (extra2 != NULL && buf_addstr(o, extra2) == -1))
		return -1;
	if (c->close_after && buf_addstr(o, "Connection: close\r\n") == -1)
		return -1;
	return buf_addstr(o, "\r\n");
}

/*
 * The response is queued in full: release its owner, and either close or
 * go on with the next (possibly already buffered) request.
 */
static void
http_finish(struct http_conn *c)
{
	struct http_server	*srv = c->srv;
	bool			 deferred = !c->processing;

	/* The owner made this reply: it needs no word of it. */
	c->owner = NULL;
	c->on_drain = NULL;
	c->on_close = NULL;
	if (c->close_after) {
		c->state = HC_CLOSING;
		/* -1: written whole (or failed), and closed. */
		if (http_conn_flush(c) == -1 && deferred)
			http_yield(srv);
		return;
	}
	c->state = HC_READ;
	if (http_conn_flush(c) == -1)
		return;
	/* Nothing of it is parsed now: an upload's big buffer goes. */
	if (buf_avail(&c->in) == 0 && c->in.cap >= HTTP_BODY_READ_CHUNK)
		buf_free(&c->in);
	/*
	 * A response finished from outside the parse loop (a waiter, a
	 * stream) resumes pipelined requests from the loop, not from the
	 * caller's stack, which may be walking a list the next request
	 * changes.
	 */
	if (deferred) {
		if (buf_avail(&c->out) == 0)
			http_yield(srv);
		ev_prepare_start(srv->loop, &c->resume);
		http_kick(srv);
	}
	http_conn_watch(c);
}

void
http_reply(struct http_conn *c, int status, const char *ctype,
    const void *body, size_t len)
{
	if (c->dead || c->state != HC_BUSY)
		return;
	/* A reply to HEAD has the head only (its length says the body's). */
	if (http_head(c, status, len || status != 204 ? ctype : NULL, NULL,
	    status == 204 ? -1 : (long long)len, NULL) == -1 ||
	    (!c->req_head && buf_add(&c->out, body, len) == -1)) {
		http_conn_abort(c);
		return;
	}
	http_finish(c);
}

void
http_reply_json(struct http_conn *c, int status, cJSON *j)
{
	char	*s;

	s = j != NULL ? cJSON_PrintUnformatted(j) : NULL;
	cJSON_Delete(j);
	if (s == NULL) {
		static const char oom[] =
		    "{\"error\":\"out of memory\",\"code\":\"internal\"}";

		http_reply(c, 500, "application/json", oom, sizeof(oom) - 1);
		return;
	}
	http_reply(c, status, "application/json", s, strlen(s));
	free(s);
}

/*
 * Messages quote the client's bytes (a path, an ID, a query value), which
 * need not be UTF-8: they are repaired, so that the reply is valid JSON.
 */
static cJSON *
http_error_vobj(const char *code, const char *fmt, va_list ap)
{
	char		 msg[HTTP_ERROR_MSG_MAX];
	struct buf	 b = { 0 };
	cJSON		*j;
	int		 n;

	if ((n = vsnprintf(msg, sizeof(msg), fmt, ap)) < 0)
		n = 0;
	if ((size_t)n >= sizeof(msg))
		n = sizeof(msg) - 1;
	if (codec_utf8_repair(&b, msg, n) == -1 || buf_add(&b, "", 1) == -1 ||
	    (j = cJSON_CreateObject()) == NULL) {
		buf_free(&b);
		return NULL;
	}
	cJSON_AddStringToObject(j, "error", b.data);
	cJSON_AddStringToObject(j, "code", code);
	buf_free(&b);
	return j;
}

cJSON *
http_error_obj(const char *code, const char *fmt, ...)
{
	va_list	 ap;
	cJSON	*j;

	va_start(ap, fmt);
	j = http_error_vobj(code, fmt, ap);
	va_end(ap);
	return j;
}

void
http_reply_error(struct http_conn *c, int status, const char *code,
    const char *fmt, ...)
{
	va_list	 ap;
	cJSON	*j;

	va_start(ap, fmt);
	j = http_error_vobj(code, fmt, ap);
	va_end(ap);
	http_reply_json(c, status, j);
}

int
http_stream_begin(struct http_conn *c, int status, const char *ctype,
    enum http_framing framing, const char *extra)
{
	if (c->dead || c->state != HC_BUSY)
		return -1;
	/* HTTP/1.0 has no chunked coding: the end is the close. */
	if (c->req_http10 && framing == HTTP_FRAME_CHUNKED)
		framing = HTTP_FRAME_CLOSE;
	if (framing == HTTP_FRAME_CLOSE)
		c->close_after = true;
	c->chunked_out = framing == HTTP_FRAME_CHUNKED;
	c->chunk_left = 0;
	if (http_head(c, status, ctype, c->chunked_out ?
	    "Transfer-Encoding: chunked\r\n" : NULL, -1, extra) == -1) {
		http_conn_abort(c);
		return -1;
	}
	c->state = HC_STREAM;
	return http_conn_flush(c);
}

int
http_stream_write(struct http_conn *c, const void *d, size_t n)
{
	if (c->dead || c->state != HC_STREAM)
		return -1;
	if (n == 0)
		return 0;
	if (c->chunk_left > 0) {
		http_conn_abort(c);	/* inside a file's chunk: a bug */
		return -1;
	}
	if ((c->chunked_out && buf_printf(&c->out, "%zx\r\n", n) == -1) ||
	    buf_add(&c->out, d, n) == -1 ||
	    (c->chunked_out && buf_add(&c->out, "\r\n", 2) == -1)) {
		http_conn_abort(c);
		return -1;
	}
	return http_conn_flush(c);
}

/*
 * The kernel copies the file to the socket: no pass through the output
 * buffer, which is written first (what is queued goes first).  Chunked,
 * a chunk of n bytes is announced when none is open, and later calls
 * carry on into it (from where the last one left off) until it is whole;
 * an n past its end is cut to it.  EAGAIN arms the write watcher, as a
 * full buffer does: on_drain says when to go on.
 */
ssize_t
http_stream_sendfile(struct http_conn *c, int fd, uint64_t *off, size_t n)
{
	off_t	o = (off_t)*off;
	ssize_t	k;

	if (c->dead || c->state != HC_STREAM) {
		errno = EINVAL;
		return -1;
	}
	if (n == 0)
		return 0;
	if (c->chunked_out && c->chunk_left == 0) {
		if (buf_printf(&c->out, "%zx\r\n", n) == -1) {
			http_conn_abort(c);
			return -1;
		}
		c->chunk_left = n;
	}
	if (buf_avail(&c->out) > 0) {
		if (http_conn_flush(c) == -1)
			return -1;
		if (buf_avail(&c->out) > 0) {
			errno = EAGAIN;
			return -1;
		}
	}
	if (c->chunked_out && n > c->chunk_left)
		n = c->chunk_left;
	while ((k = sendfile(c->fd, fd, &o, n)) == -1 && errno == EINTR)
		;
	if (k == -1 && errno == EAGAIN) {
		if (!ev_is_active(&c->wio))
			c->last_out = ev_now(c->srv->loop);
		ev_io_start(c->srv->loop, &c->wio);
		return -1;
	}
	if (k == -1) {
		/* The client is gone, or the file failed: as a write's error. */
		http_conn_abort(c);
		return -1;
	}
	if (k > 0) {
		*off = (uint64_t)o;
		c->last_io = c->last_out = ev_now(c->srv->loop);
	}
	if (!c->chunked_out)
		return k;
	/* The file ended inside its chunk: the framing cannot be kept. */
	if (k == 0) {
		http_conn_abort(c);
		errno = EIO;
		return -1;
	}
	if ((c->chunk_left -= (size_t)k) == 0 &&
	    (buf_add(&c->out, "\r\n", 2) == -1 || http_conn_flush(c) == -1))
		http_conn_abort(c);
	return k;
}

void
http_stream_end(struct http_conn *c)
{
	if (c->dead || c->state != HC_STREAM)
		return;
	if (c->chunk_left > 0 ||
	    (c->chunked_out && buf_addstr(&c->out, "0\r\n\r\n") == -1)) {
		http_conn_abort(c);
		return;
	}
	http_finish(c);
}

int
http_sse_begin(struct http_conn *c)
{
	return http_stream_begin(c, 200, "text/event-stream", HTTP_FRAME_CLOSE,
	    "Cache-Control: no-cache\r\n");
}

int
http_sse_event(struct http_conn *c, const char *id, const char *json)
{
	if (c->dead || c->state != HC_STREAM)
		return -1;
	if ((id != NULL && buf_printf(&c->out, "id: %s\n", id) == -1) ||
	    buf_printf(&c->out, "data: %s\n\n", json) == -1) {
		http_conn_abort(c);
		return -1;
	}
	return http_conn_flush(c);
}

int
http_sse_comment(struct http_conn *c, const char *text)
{
	if (c->dead || c->state != HC_STREAM)
		return -1;
	if (buf_printf(&c->out, ": %s\n\n", text) == -1) {
		http_conn_abort(c);
		return -1;
	}
	return http_conn_flush(c);
}

/* ------------------------------------------------------------------ */
/* Switching protocols */

/*
 * The head is queued after whatever earlier replies are still unsent, so
 * that a full socket delays it but loses nothing; the new owner takes the
 * socket only once all of it is out (on_drain).
 */
int
http_reply_upgrade(struct http_conn *c, const char *protocol,
    const char *extra)
{
	if (c->dead || c->state != HC_BUSY) {
		errno = EINVAL;
		return -1;
	}
	if (buf_printf(&c->out, "HTTP/1.1 101 %s\r\nUpgrade: %s\r\n"
	    "Connection: Upgrade\r\n%s\r\n", http_status_text(101), protocol,
	    extra != NULL ? extra : "") == -1) {
		http_conn_abort(c);
		return -1;
	}
	c->state = HC_UPGRADE;
	http_conn_watch(c);
	if (http_conn_flush(c) == -1)
		return -1;
	return buf_avail(&c->out) > 0;
}
