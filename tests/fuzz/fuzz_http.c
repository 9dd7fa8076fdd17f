/*
 * fuzz_http: a client's byte stream, cut into pieces, against the real
 * HTTP server.
 *
 * Input: byte 0 chooses how the rest is delivered (bits 0-2: 1..8 writes,
 * bit 3: half-close and read to EOF instead of vanishing, bit 4: close at
 * once instead of waiting a few loop turns for replies, bits 5-7: where
 * the cuts fall); the rest is what the client sends.  The routes cover
 * each way a handler can answer: at once (plain and JSON), from a timer,
 * as a chunked stream paced by on_drain, as SSE ended by closing, and
 * with a streamed request body that pauses reading, and by switching
 * protocols (an echo of what was read ahead, then the close).  Paths go
 * through the bridge's namespace hook, as the agent's do.  The server
 * must never crash, leak or hang, and must always send well-formed
 * responses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "api/bridge/api_bridge.h"
#include "fuzzsrv.h"
#include "store/cursor.h"

#define container_of(p, t, m)	((t *)((char *)(p) - offsetof(t, m)))

#define FUZZ_STREAM_MAX		(512 * 1024)	/* bytes a stream may ask for */

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void	fz_health(struct http_conn *, struct http_req *);
static void	fz_kill(struct http_conn *, struct http_req *);
static void	fz_stdin_body(struct http_conn *, struct http_req *,
		    const char *, size_t);
static void	fz_stdin(struct http_conn *, struct http_req *);
static void	fz_wait(struct http_conn *, struct http_req *);
static void	fz_logs(struct http_conn *, struct http_req *);
static void	fz_stdout(struct http_conn *, struct http_req *);
static void	fz_files(struct http_conn *, struct http_req *);
static void	fz_upgrade(struct http_conn *, struct http_req *);

static const struct http_route fz_routes[] = {
	{ "GET",	"/v1/health",			fz_health, NULL },
	{ "POST",	"/v1/processes/{}/kill",	fz_kill, NULL },
	{ "POST",	"/v1/processes/{}/stdin",	fz_stdin, fz_stdin_body },
	{ "POST",	"/v1/processes/{}/wait",	fz_wait, NULL },
	{ "GET",	"/v1/processes/{}/logs",	fz_logs, NULL },
	{ "GET",	"/v1/processes/{}/stdout",	fz_stdout, NULL },
	{ "DELETE",	"/v1/processes/{}",		fz_health, NULL },
	{ "PUT",	"/v1/files/*",			fz_files, NULL },
	{ "GET",	"/v1/upgrade",			fz_upgrade, NULL },
	{ NULL, NULL, NULL, NULL }
};

/* ------------------------------------------------------------------ */
/* Handlers that answer at once */

/* Every request accessor, on whatever the client sent. */
static void
fz_health(struct http_conn *c, struct http_req *r)
{
	char		 v[64];
	uint64_t	 seq = 0, n = 0;
	cJSON		*j;
	const char	*h;

	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "status", "ok");
	if ((h = http_header(r, "Tend-Boot")) != NULL)
		cJSON_AddStringToObject(j, "boot", h);
	if (http_query(r, "cursor", v, sizeof(v)) == 1)
		cJSON_AddBoolToObject(j, "cursor",
		    cursor_parse(v, "boot", r->nparam ? r->param[0] : "p",
		    &seq) == 0);
	cJSON_AddNumberToObject(j, "n", http_query_u64(r, "n", &n));
	cJSON_AddNumberToObject(j, "force", http_query_bool(r, "force", 7));
	http_reply_json(c, 200, j);
}

static void
fz_kill(struct http_conn *c, struct http_req *r)
{
	cJSON	*j;

	if (r->body.len > 0 && r->body.data[0] == '!') {
		http_reply_error(c, 409, "not_running", "process '%.128s' is "
		    "not running", r->param[0]);
		return;
	}
	if (r->body.len > 0 && r->body.data[0] == '-') {
		http_reply(c, 204, NULL, NULL, 0);
		return;
	}
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "id", r->param[0]);
	cJSON_AddNumberToObject(j, "bytes", (double)r->body.len);
	http_reply_json(c, 200, j);
}

static void
fz_files(struct http_conn *c, struct http_req *r)
{
	http_reply(c, 200, "text/plain", r->param[0], strlen(r->param[0]));
}

/* ------------------------------------------------------------------ */
/* A streamed request body that pauses reading, as a full stdin pipe does */

/*
 * As job_input_hold and proc_stdin_release: a request whose body the
 * "process" cannot take yet is held, its reading paused and the holder
 * registered as the connection's owner, until the "pipe" drains some
 * loop turns later, or the request's handler runs.  The holder keeps the
 * connection pointer and relies on on_close to learn that it is gone.
 */
static struct {
	ev_check		 check;
	struct http_conn	*c;
	int			 turns;		/* until the pipe drains */
	size_t			 bytes;
} fz_hold;

static void
fz_hold_release(void)
{
	struct http_conn	*c = fz_hold.c;

	ev_check_stop(fuzzsrv_loop, &fz_hold.check);
	fz_hold.c = NULL;
	http_conn_own(c, NULL, NULL, NULL);
	http_conn_resume_read(c);
}

static void
fz_hold_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	if (--fz_hold.turns <= 0)
		fz_hold_release();
}

static void
fz_hold_closed(struct http_conn *c, void *owner)
{
	(void)c;
	(void)owner;
	ev_check_stop(fuzzsrv_loop, &fz_hold.check);
	fz_hold.c = NULL;
}

static void
fz_stdin_body(struct http_conn *c, struct http_req *r, const char *d,
    size_t n)
{
	fz_hold.bytes += n;
	if (memchr(d, '!', n) != NULL)
		r->body_error = 409;
	if (memchr(d, '~', n) != NULL && fz_hold.c == NULL) {
		fz_hold.c = c;
		fz_hold.turns = 1 + n % 8;
		http_conn_own(c, &fz_hold, NULL, fz_hold_closed);
		http_conn_pause_read(c);
		ev_check_init(&fz_hold.check, fz_hold_cb);
		ev_check_start(fuzzsrv_loop, &fz_hold.check);
	}
}

static void
fz_stdin(struct http_conn *c, struct http_req *r)
{
	cJSON	*j;

	if (fz_hold.c == c)
		fz_hold_release();
	if (r->body_error != 0) {
		fz_hold.bytes = 0;
		http_reply_error(c, r->body_error, "conflict", "stdin of "
		    "'%.128s' is closed", r->param[0]);
		return;
	}
	j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "bytes", (double)fz_hold.bytes);
	fz_hold.bytes = 0;
	http_reply_json(c, 200, j);
}

/* ------------------------------------------------------------------ */
/* A reply from a timer, as a waiter's */

struct fz_waiter {
	ev_timer		 timer;
	struct http_conn	*c;
};

static void
fz_wait_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct fz_waiter	*w = container_of(t, struct fz_waiter, timer);
	struct http_conn	*c = w->c;

	(void)loop;
	(void)revents;
	http_conn_own(c, NULL, NULL, NULL);
	free(w);
	http_reply_error(c, 404, "not_found", "the process was removed");
}

static void
fz_wait_closed(struct http_conn *c, void *owner)
{
	struct fz_waiter	*w = owner;

	(void)c;
	ev_timer_stop(fuzzsrv_loop, &w->timer);
	free(w);
}

static void
fz_wait(struct http_conn *c, struct http_req *r)
{
	struct fz_waiter	*w;

	(void)r;
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	w->c = c;
	ev_timer_init(&w->timer, fz_wait_cb, 0., 0.);
	ev_timer_start(fuzzsrv_loop, &w->timer);
	http_conn_own(c, w, NULL, fz_wait_closed);
}

/* ------------------------------------------------------------------ */
/* Streams */

/* SSE: framed by the close. */
static void
fz_logs(struct http_conn *c, struct http_req *r)
{
	char	cur[CURSOR_MAX];

	if (http_sse_begin(c) == -1)
		return;
	cursor_format(cur, "boot", r->param[0], 1);
	if (http_sse_event(c, cur, "{\"stream\":\"stdout\"}") == -1 ||
	    http_sse_comment(c, "heartbeat") == -1)
		return;
	http_stream_end(c);
}

/* A chunked body of ?n= bytes, written only while the reader keeps up. */
struct fz_stream {
	size_t	left;
	size_t	piece;
};

static void	fz_stream_more(struct http_conn *, void *);

static void
fz_stream_closed(struct http_conn *c, void *owner)
{
	(void)c;
	free(owner);
}

static void
fz_stream_more(struct http_conn *c, void *owner)
{
	static const char	 fill[4096];	/* >= any piece */
	struct fz_stream	*s = owner;
	size_t			 k;

	while (s->left > 0 && http_conn_pending(c) < HTTP_OUT_HIGH) {
		k = s->left < s->piece ? s->left : s->piece;
		s->left -= k;
		/* On -1 the connection is dying; on_close frees s. */
		if (http_stream_write(c, fill, k) == -1)
			return;
	}
	if (s->left > 0)
		return;		/* on_drain calls again */
	http_conn_own(c, NULL, NULL, NULL);
	free(s);
	http_stream_end(c);
}

static void
fz_stdout(struct http_conn *c, struct http_req *r)
{
	struct fz_stream	*s;
	uint64_t		 n = 100;

	if (http_query_u64(r, "n", &n) == -1 || n > FUZZ_STREAM_MAX) {
		http_reply_error(c, 400, "invalid_request", "n: too large");
		return;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	s->left = n;
	s->piece = 1 + n % 4096;
	if (http_stream_begin(c, 200, "application/octet-stream",
	    HTTP_FRAME_CHUNKED, "X-Stream: 1\r\n") == -1) {
		free(s);
		return;
	}
	http_conn_own(c, s, fz_stream_more, fz_stream_closed);
	fz_stream_more(c, s);
}

/* ------------------------------------------------------------------ */
/* Switching protocols */

static int	fz_upgrader;	/* the owner while the 101 is queued */

/*
 * The new protocol: send back what was read after the head, and close.
 * The slot is given back at once, so that no connection outlives its
 * input.
 */
static void
fz_upgrade_take(struct http_conn *c)
{
	struct http_server	*srv = http_conn_server(c);
	struct buf		 in = { 0 };
	int			 fd;

	if (http_conn_upgrade(c, &fd, &in) == -1) {
		http_conn_abort(c);
		buf_free(&in);
		return;
	}
	if (buf_avail(&in) > 0)
		(void)!write(fd, buf_head(&in), buf_avail(&in));
	close(fd);
	http_server_release(srv);
	buf_free(&in);
}

static void
fz_upgrade_drained(struct http_conn *c, void *owner)
{
	(void)owner;
	fz_upgrade_take(c);
}

static void
fz_upgrade(struct http_conn *c, struct http_req *r)
{
	struct buf	none = { 0 };
	int		rc, fd;

	(void)r;
	http_conn_own(c, &fz_upgrader, fz_upgrade_drained, NULL);
	if ((rc = http_reply_upgrade(c, "echo", "X-Echo: 1\r\n")) == 0)
		fz_upgrade_take(c);
	else if (rc == 1 && (http_conn_upgrade(c, &fd, &none) != -1 ||
	    errno != EBUSY)) {
		fprintf(stderr, "fuzz_http: socket taken with the 101 queued\n");
		abort();
	}
}

/* ------------------------------------------------------------------ */

/* The bridge's namespace, routed as the API's own paths. */
static const struct http_route *
fz_map(void *ctx, char **path)
{
	(void)ctx;
	return api_bridge_rewrite(path) ? fz_routes : NULL;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzzsrv_start(fz_routes, NULL);
	http_server_map(fuzzsrv_srv, fz_map);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzzsrv_opts	o;

	if (n == 0)
		return 0;
	memset(&o, 0, sizeof(o));
	o.pieces = 1 + (d[0] & 7);
	o.halfclose = (d[0] & 8) != 0;
	o.spins = (d[0] & 0x10) ? 0 : 8;
	o.seed = d[0] >> 5;
	fz_hold.bytes = 0;
	(void)fuzzsrv_exchange(d + 1, n - 1, &o);
	/*
	 * Every connection is freed now.  A holder still holding was never
	 * told: the pipe drains later and releases what it holds, here at
	 * once so that a use after free shows in this input.
	 */
	if (fz_hold.c != NULL)
		fz_hold_release();
	return 0;
}
