/*
 * api_term_ws.c: a terminal's output and input over a WebSocket (see
 * api_term_ws.h).  A session pinned to an earlier boot reads that boot's
 * record read-only (api_term_src.h): it takes no input, and its replay
 * ends with how the terminal ended, as its status says (exited, or lost).
 */
#include <sys/types.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_term_src.h"
#include "api_term_ws.h"
#include "base/util.h"
#include "core/follow.h"
#include "core/term.h"
#include "net/ws.h"
#include "net/wsconn.h"

/* One client's session. */
struct api_term_ws {
	struct ev_loop		*loop;
	struct termtab		*tt;
	struct term		*t;	/* NULL once removed, or src's */
	struct api_term_src	 src;
	struct job_watch	 w;	/* of the terminal */
	struct follow		*f;	/* NULL once it ended */
	struct wsconn		*ws;	/* NULL until upgraded */
	ev_timer		 retry;	/* input held by another writer */
	bool			 bridge;	/* /pty framing */
	bool			 owned;		/* fresh: terminated on close */
	bool			 held;		/* our input hold is on */
};

/* ------------------------------------------------------------------ */
/* The request */

int
api_term_ws_dims(struct http_req *r, unsigned int *cols,
    unsigned int *rows, struct api_err *e)
{
	uint64_t	v[2] = { 0, 0 };
	int		c, w;

	/* A present 0 is out of range, as in a resize; only absence is 0. */
	c = http_query_u64(r, "cols", &v[0]);
	w = http_query_u64(r, "rows", &v[1]);
	if (c == -1 || w == -1 || (c == 1 && v[0] == 0) ||
	    (w == 1 && v[1] == 0) || v[0] > PTY_MAX_DIM ||
	    v[1] > PTY_MAX_DIM) {
		api_err_set(e, 400, "invalid_request", NULL,
		    "cols and rows must be valid numbers (1..10000)");
		return -1;
	}
	*cols = (unsigned int)v[0];
	*rows = (unsigned int)v[1];
	return 0;
}

int
api_term_ws_handshake(struct http_req *r, char *hdr, size_t n,
    struct api_err *e)
{
	struct ws_handshake	 h;
	const char		*why;
	char			 acc[WS_ACCEPT_LEN];
	int			 st;

	h.method = r->method;
	h.upgrade = http_header(r, "Upgrade");
	h.connection = http_header(r, "Connection");
	h.version = http_header(r, "Sec-WebSocket-Version");
	h.key = http_header(r, "Sec-WebSocket-Key");
	if (h.upgrade == NULL) {
		api_err_set(e, 400, "invalid_request", NULL,
		    "WebSocket upgrade required");
		return -1;
	}
	if ((st = ws_handshake_check(&h, &why)) != 0) {
		api_err_set(e, st, st == 426 ? "upgrade_required" :
		    "invalid_request", NULL, "%s", why);
		return -1;
	}
	ws_accept_key(h.key, acc);
	snprintf(hdr, n, "Sec-WebSocket-Accept: %s\r\n", acc);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The session: frames out */

static int
api_term_ws_json(struct api_term_ws *s, cJSON *j)
{
	char	*txt;
	int	 rc;

	if (j == NULL || (txt = cJSON_PrintUnformatted(j)) == NULL) {
		cJSON_Delete(j);
		return -1;
	}
	cJSON_Delete(j);
	rc = wsconn_text(s->ws, txt, strlen(txt));
	free(txt);
	return rc;
}

/* {"type":type[,"cursor":cursor]} */
static cJSON *
api_term_ws_msg(const char *type, const char *cursor)
{
	cJSON	*j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "type", type);
	if (cursor != NULL)
		cJSON_AddStringToObject(j, "cursor", cursor);
	return j;
}

static void
api_term_ws_error(struct api_term_ws *s, const char *code, const char *msg)
{
	cJSON	*j = api_term_ws_msg("error", NULL);

	if (!s->bridge)
		cJSON_AddStringToObject(j, "code", code);
	cJSON_AddStringToObject(j, "message", msg);
	(void)api_term_ws_json(s, j);
}

static int
api_term_ws_chunk(void *ctx, const struct follow_chunk *ch)
{
	struct api_term_ws	*s = ctx;
	char			 head[CURSOR_MAX + 64];
	int			 n;

	if (!s->bridge) {
		n = snprintf(head, sizeof(head), "{\"type\":\"chunk\","
		    "\"cursor\":\"%s\",\"byteLength\":%zu}", ch->cursor,
		    ch->len);
		if (wsconn_text(s->ws, head, (size_t)n) == -1)
			return -1;
	}
	return wsconn_binary(s->ws, ch->data, ch->len);
}

static int
api_term_ws_gap(void *ctx, const struct follow_gap *g)
{
	struct api_term_ws	*s = ctx;
	cJSON			*j;

	if (s->bridge)
		return 0;
	j = api_term_ws_msg("truncated", g->cursor);
	cJSON_AddNumberToObject(j, "skippedBytes", (double)g->skipped);
	return api_term_ws_json(s, j);
}

/*
 * The bridge's exit: {"code":N[,"signal":"SIGHUP"]}, from how the
 * terminal ended (api_term_src_exit); one with no exit (lost) is told
 * as an error, with its status's message.
 */
static cJSON *
api_term_ws_bridge_exit(const struct api_term_src *src, struct term *t)
{
	const struct exit_status	*x = api_term_src_exit(src, t);
	const cJSON			*e;
	const char			*name;
	char				 sn[32];
	cJSON				*j;

	if (x == NULL) {
		j = api_term_ws_msg("error", NULL);
		e = t == NULL ? cJSON_GetObjectItemCaseSensitive(src->final,
		    "error") : NULL;
		cJSON_AddStringToObject(j, "message",
		    *api_term_src_str(e, "message") ?
		    api_term_src_str(e, "message") :
		    "the terminal's exit is unknown");
		return j;
	}
	j = api_term_ws_msg("exit", NULL);
	cJSON_AddNumberToObject(j, "code", x->code);
	if (x->signal != 0 && (name = sigabbrev_np(x->signal)) != NULL) {
		snprintf(sn, sizeof(sn), "SIG%s", name);
		cJSON_AddStringToObject(j, "signal", sn);
	}
	return j;
}

/* The end: the exit (as the terminal's, or its earlier boot's, status). */
static void
api_term_ws_end(void *ctx, enum follow_why why, const char *cursor)
{
	struct api_term_ws	*s = ctx;
	cJSON			*j;

	follow_free(s->f);
	s->f = NULL;
	if (why == FOLLOW_ENDED && (s->t != NULL ||
	    api_term_src_earlier(&s->src))) {
		if (s->bridge)
			j = api_term_ws_bridge_exit(&s->src, s->t);
		else {
			j = api_term_ws_msg("exit", cursor);
			api_term_src_ending(&s->src, s->t, j);
		}
		(void)api_term_ws_json(s, j);
	} else
		api_term_ws_error(s, "not_found", "the terminal was removed");
	wsconn_close(s->ws, WS_CLOSE_NORMAL, "");
}

static size_t
api_term_ws_pending(void *ctx)
{
	return wsconn_pending(((struct api_term_ws *)ctx)->ws);
}

static const struct follow_sink api_term_ws_sink = {
	api_term_ws_chunk, api_term_ws_gap, api_term_ws_end, NULL,
	api_term_ws_pending, WS_OUT_HIGH, NULL
};

/* ------------------------------------------------------------------ */
/* The session: frames in */

static void	api_term_ws_input_wake(struct job *, void *, int);

/* The queue is full: stop reading until the terminal took half of it. */
static void
api_term_ws_input_wait(struct api_term_ws *s)
{
	wsconn_pause_read(s->ws);
	if (job_input_hold(term_job(s->t), s, api_term_ws_input_wake) == 0)
		s->held = true;
	else		/* another writer is held: look again soon */
		ev_timer_start(s->loop, &s->retry);
}

static void
api_term_ws_input_wake(struct job *j, void *writer, int err)
{
	struct api_term_ws	*s = writer;

	(void)j;
	(void)err;
	s->held = false;
	wsconn_resume_read(s->ws);
}

static void
api_term_ws_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct api_term_ws	*s = container_of(w, struct api_term_ws,
				    retry);

	(void)loop;
	(void)revents;
	if (s->t == NULL || term_ended(s->t) || !job_input_full(term_job(s->t)))
		wsconn_resume_read(s->ws);
	else
		api_term_ws_input_wait(s);
}

/*
 * An earlier boot's terminal takes nothing: the REST routes' refusal
 * (410 stale_boot), as an error frame.  True when s is one.
 */
static bool
api_term_ws_stale(struct api_term_ws *s)
{
	char	msg[API_ERR_MSG_MAX];

	if (!api_term_src_earlier(&s->src))
		return false;
	snprintf(msg, sizeof(msg), "boot %s is not the current boot: "
	    "terminal '%s' takes no input", s->src.boot, s->src.id);
	api_term_ws_error(s, "stale_boot", msg);
	return true;
}

static void
api_term_ws_on_binary(void *ctx, const char *d, size_t n)
{
	struct api_term_ws	*s = ctx;

	if (n == 0 || api_term_ws_stale(s) || s->t == NULL ||
	    term_ended(s->t))
		return;		/* the exit frame says so */
	if (term_input(s->t, d, n) == 0 && job_input_full(term_job(s->t)))
		api_term_ws_input_wait(s);
}

/* {"type":"resize","cols","rows"}, and connect's interrupt, terminate. */
static void
api_term_ws_on_text(void *ctx, const char *d, size_t n)
{
	struct api_term_ws	*s = ctx;
	const cJSON		*type, *cols, *rows;
	const char		*ty;
	cJSON			*j;
	int			 rc = 0;

	j = cJSON_ParseWithLength(d, n);
	type = cJSON_GetObjectItemCaseSensitive(j, "type");
	ty = cJSON_IsString(type) ? type->valuestring : "";
	cols = cJSON_GetObjectItemCaseSensitive(j, "cols");
	rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
	if (api_term_ws_stale(s) || s->t == NULL || term_ended(s->t))
		;
	else if (strcmp(ty, "resize") == 0) {
		if (!api_integer(cols, 1, PTY_MAX_DIM) ||
		    !api_integer(rows, 1, PTY_MAX_DIM))
			api_term_ws_error(s, "invalid_request", "resize: cols "
			    "and rows must be integers 1..10000");
		else
			rc = term_resize(s->t, (unsigned int)cols->valuedouble,
			    (unsigned int)rows->valuedouble);
	} else if (!s->bridge && strcmp(ty, "interrupt") == 0)
		rc = term_interrupt(s->t);
	else if (!s->bridge && strcmp(ty, "terminate") == 0)
		rc = term_terminate(s->t);
	else
		api_term_ws_error(s, "invalid_request", "unknown message; "
		    "expected {\"type\":\"resize\"|\"interrupt\"|"
		    "\"terminate\"}");
	if (rc == -1 && errno != ESRCH)
		api_term_ws_error(s, "internal", strerror(errno));
	cJSON_Delete(j);
}

static void
api_term_ws_on_drain(void *ctx)
{
	struct api_term_ws	*s = ctx;

	if (s->f != NULL)
		follow_drained(s->f);
}

static void
api_term_ws_free(struct api_term_ws *s)
{
	if (s->held && s->t != NULL && job_input_writer(term_job(s->t)) == s)
		job_input_unhold(term_job(s->t));
	ev_timer_stop(s->loop, &s->retry);
	follow_free(s->f);
	job_watch_del(&s->w);
	api_term_src_free(&s->src);
	free(s);
}

static void
api_term_ws_on_close(void *ctx)
{
	struct api_term_ws	*s = ctx;

	if (s->owned && s->t != NULL && !term_ended(s->t))
		(void)term_terminate(s->t);
	api_term_ws_free(s);
}

static const struct wsconn_ops api_term_ws_ops = {
	api_term_ws_on_text, api_term_ws_on_binary, api_term_ws_on_drain,
	api_term_ws_on_close
};

/* Removal of the terminal: the follow ends (GONE), input stops. */
static void
api_term_ws_term_event(struct job_watch *w, enum job_event ev)
{
	struct api_term_ws	*s = container_of(w, struct api_term_ws, w);

	if (ev == JOB_EV_GONE)
		s->t = NULL;
}

/* ------------------------------------------------------------------ */
/* Switching: the 101 out, then the socket is the WebSocket's */

static void
api_term_ws_take(struct http_conn *c, void *owner)
{
	struct api_term_ws	*s = owner;
	struct buf		 in = { 0 };
	char			 cur[CURSOR_MAX];
	cJSON			*j;
	int			 fd;

	http_conn_own(c, NULL, NULL, NULL);
	if (http_conn_upgrade(c, &fd, &in) == -1) {
		http_conn_abort(c);
		api_term_ws_free(s);
		return;
	}
	s->ws = wsconn_new(s->loop, fd, http_conn_server(c), &in,
	    &api_term_ws_ops, s);
	buf_free(&in);
	if (s->ws == NULL) {
		api_term_ws_on_close(s);
		return;
	}
	j = api_term_ws_msg("ready", NULL);
	if (!s->bridge) {
		follow_cursor(s->f, cur);
		cJSON_AddStringToObject(j, "cursor", cur);
	}
	(void)api_term_ws_json(s, j);
	follow_start(s->f, &api_term_ws_sink, s);
}

static void
api_term_ws_http_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_term_ws_on_close(owner);
}

/* ------------------------------------------------------------------ */
/* The session, as its routes make it */

struct api_term_ws *
api_term_ws_new(struct http_conn *c, struct termtab *tt, bool bridge)
{
	struct api_term_ws	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return NULL;
	}
	s->loop = tt->loop;
	s->tt = tt;
	s->bridge = bridge;
	api_term_src_init(&s->src);
	ev_timer_init(&s->retry, api_term_ws_retry_cb, WS_INPUT_RETRY, 0.);
	return s;
}

struct api_term_src *
api_term_ws_src(struct api_term_ws *s)
{
	return &s->src;
}

void
api_term_ws_set_term(struct api_term_ws *s, struct term *t, bool owned)
{
	s->t = t;
	s->owned = owned;
}

int
api_term_ws_follow(struct api_term_ws *s, const char *since,
    struct api_err *e)
{
	s->f = api_term_src_follow(s->tt, s->t, &s->src, true, since, true, e);
	return s->f != NULL ? 0 : -1;
}

void
api_term_ws_refuse(struct http_conn *c, struct api_term_ws *s,
    const struct api_err *e)
{
	if (s->owned && s->t != NULL)
		(void)term_terminate(s->t);
	api_reply_err(c, e);
	api_term_ws_free(s);
}

/* Attach s to its terminal (s->t, or s->src's record), s->f its follow. */
void
api_term_ws_attach(struct http_conn *c, struct api_term_ws *s,
    const char *accept)
{
	if (s->t != NULL)
		job_watch_add(term_job(s->t), &s->w, api_term_ws_term_event);
	http_conn_own(c, s, api_term_ws_take, api_term_ws_http_closed);
	if (http_reply_upgrade(c, "websocket", accept) == 0)
		api_term_ws_take(c, s);
	/* 1: on_drain takes it; -1: on_close frees s */
}

/* ------------------------------------------------------------------ */
/* GET /v1/terminals/{id}/connect?cursor=&cols=&rows= */

static void
api_term_ws_connect(struct http_conn *c, struct http_req *r)
{
	struct api_err		 e;
	struct api_term_ws	*s;
	unsigned int		 cols, rows;
	char			 hdr[64], cur[CURSOR_MAX + 1];

	if ((s = api_term_ws_new(c, api_of(c)->terms, false)) == NULL)
		return;
	if (api_term_src_named(c, r, &s->t, &s->src, &e) == -1 ||
	    api_term_ws_handshake(r, hdr, sizeof(hdr), &e) == -1 ||
	    api_term_ws_dims(r, &cols, &rows, &e) == -1) {
		api_term_ws_refuse(c, s, &e);
		return;
	}
	switch (http_query(r, "cursor", cur, sizeof(cur))) {
	case 0:
		cur[0] = '\0';		/* the start */
		break;
	case -1:
		snprintf(cur, sizeof(cur), "-");	/* too long: refused */
	}
	if (api_term_ws_follow(s, cur, &e) == -1) {
		api_term_ws_refuse(c, s, &e);
		return;
	}
	if (s->t != NULL && cols != 0 && rows != 0 && !term_ended(s->t))
		(void)term_resize(s->t, cols, rows);
	api_term_ws_attach(c, s, hdr);
}

const struct http_route api_term_ws_routes[] = {
	{ "GET",	"/v1/terminals/{}/connect",	api_term_ws_connect,
	    NULL },
	{ NULL, NULL, NULL, NULL }
};
