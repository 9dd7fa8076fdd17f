/*
 * api_term_ws.c: a terminal's output and input over a WebSocket (the
 * connect route, and the bridge's /pty framing of the same), and its
 * output as SSE.  Both read through follow.c from a cursor: a slow
 * client pauses its follow (the files are the buffer), never a copy in
 * memory.  Closing a socket never ends a terminal, except the fresh one
 * a /pty connection without a terminal ID was given.  A read pinned to
 * an earlier boot reads that boot's record read-only (struct tsrc): it
 * can never grow, so its replay ends with how it ended, as its status
 * says (exited, or lost).
 */
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "api/bridge/api_sandbox.h"
#include "api_output.h"
#include "api_term.h"
#include "base/codec.h"
#include "base/log.h"
#include "base/util.h"
#include "core/follow.h"
#include "core/term.h"
#include "net/ws.h"
#include "net/wsconn.h"

/* An earlier boot's terminal, as its reader holds it. */
struct tsrc {
	struct logstore	 ro;		/* its output, read-only */
	cJSON		*final;		/* its last status; NULL: this boot's */
	struct exit_status exit;	/* final's "exit", read once */
	bool		 exited;	/* ... which it has */
	char		 boot[API_BOOT_Q_MAX];
	char		 id[PROC_ID_MAX + 1];
};

/* One attached client. */
struct tws {
	struct ev_loop		*loop;
	struct term		*t;	/* NULL once removed, or src's */
	struct tsrc		 src;
	struct term_watch	 w;
	struct follow		*f;	/* NULL once it ended */
	struct wsconn		*ws;	/* NULL until upgraded */
	ev_timer		 retry;	/* input held by another writer */
	bool			 bridge;	/* /pty framing */
	bool			 owned;		/* fresh: terminated on close */
	bool			 held;		/* our input hold is on */
};

/* An SSE reader of a terminal's output. */
struct tsse {
	struct http_conn	*c;
	struct tsrc		 src;
	struct follow		*f;
	char			 id[PROC_ID_MAX + 1];
};

/* ------------------------------------------------------------------ */
/* Shared */

static void
tsrc_init(struct tsrc *src)
{
	src->ro.fd[0] = src->ro.fd[1] = src->ro.idxfd = -1;
	src->final = NULL;
}

static void
tsrc_free(struct tsrc *src)
{
	logstore_close(&src->ro);
	cJSON_Delete(src->final);
	src->final = NULL;
}

/*
 * Where a read of terminal id goes, by the boot it is pinned to: 0, the
 * current boot (the caller looks id up); 1, an earlier one, id's record
 * opened read-only into src; -1 with e (410 for a boot not retained,
 * 404 for an id that boot did not have).
 */
static int
tsrc_open(struct api *a, struct http_req *r, const char *id,
    struct tsrc *src, struct api_err *e)
{
	const char	*boot;
	int		 fd, rc;

	if ((rc = api_term_pinned_dir(a, r, &fd, e)) != 1)
		return rc;
	boot = api_boot_named(r, src->boot, sizeof(src->boot));
	if (boot != src->boot)
		snprintf(src->boot, sizeof(src->boot), "%s", boot);
	snprintf(src->id, sizeof(src->id), "%.128s", id);
	rc = fd != -1 && record_id_valid(id) ? record_open_ro_kind(RECORD_TERM,
	    fd, id, &src->ro, &src->final) : -1;
	if (fd != -1)
		close(fd);
	if (rc == -1) {
		api_err_set(e, 404, "not_found", NULL, "no terminal '%.128s' "
		    "in that boot", id);
		return -1;
	}
	/* No status at all: how it ended is unknown, as a lost one's. */
	if (src->final == NULL && (src->final = cJSON_CreateObject()) == NULL) {
		api_err_nomem(e);
		return -1;
	}
	src->exited = exitstatus_parse(&src->exit,
	    cJSON_GetObjectItemCaseSensitive(src->final, "exit")) == 0;
	return 1;
}

/* A cJSON string field of j, or "". */
static const char *
tsrc_str(const cJSON *j, const char *name)
{
	const cJSON	*f = cJSON_GetObjectItemCaseSensitive(j, name);

	return cJSON_IsString(f) ? f->valuestring : "";
}

/*
 * How the terminal ended, when it is known: the live one's exit (NULL
 * while it runs), or the earlier boot's status's.
 */
static const struct exit_status *
tsrc_exit(const struct tsrc *src, struct term *t)
{
	if (t != NULL)
		return term_exit(t);
	return src->exited ? &src->exit : NULL;
}

/*
 * How the terminal ended, into j: "exit" {"code","signal"} when it is
 * known (tsrc_exit), and the earlier boot's status's "error" (lost).
 */
static void
tsrc_ending(const struct tsrc *src, struct term *t, cJSON *j)
{
	const struct exit_status	*x = tsrc_exit(src, t);
	const cJSON			*err;

	if (x != NULL)
		cJSON_AddItemToObject(j, "exit", exitstatus_json(x, false));
	if (t == NULL && (err = cJSON_GetObjectItemCaseSensitive(src->final,
	    "error")) != NULL && !cJSON_IsNull(err))
		cJSON_AddItemToObject(j, "error", cJSON_Duplicate(err, 1));
}

/*
 * A follow from since (NULL: the start) of t's output, or, t NULL, of
 * the earlier boot's record in src (which the follow reads until the
 * reader frees it; it never grows, so the follow ends when caught up).
 */
static struct follow *
api_term_follow(struct termtab *tt, struct term *t, struct tsrc *src,
    bool follow, const char *since, bool replay, struct api_err *e)
{
	struct follow_opts	 o = { 0 };
	struct follow_src	 fs = { 0 };
	struct follow		*f;
	char			 ts[TIME_MAX];

	if (t == NULL) {
		fs.ls = &src->ro;
		fs.boot = src->boot;
		fs.id = src->id;
		fs.started = tsrc_str(src->final, "createdAt");
	} else if ((fs.ls = term_store(t)) == NULL) {
		api_err_set(e, 500, "internal", NULL, "cannot open the output "
		    "of '%s': %s", term_id(t), strerror(errno));
		return NULL;
	} else {
		codec_time(ts, term_created_ms(t));
		fs.term = t;
		fs.boot = termtab_boot(tt);
		fs.id = term_id(t);
		fs.started = ts;
	}
	o.walk = FOLLOW_RECORDS;
	o.follow = follow;
	o.eager = true;		/* keystroke echo: no merge wait */
	if ((f = follow_new(tt->loop, &fs, &o)) == NULL) {
		api_err_nomem(e);
		return NULL;
	}
	if (follow_seek(f, since, replay) == -1) {
		follow_free(f);
		api_err_set(e, 400, "invalid_request", "cursor", "cursor: not "
		    "a cursor of terminal '%.128s' in %s boot", fs.id,
		    t != NULL ? "this" : "that");
		return NULL;
	}
	return f;
}

/*
 * The terminal the route's {} names, for a read: this boot's (*tp), or
 * an earlier boot's record opened into src (*tp NULL).  -1 with e.
 */
static int
api_term_named(struct http_conn *c, struct http_req *r, struct term **tp,
    struct tsrc *src, struct api_err *e)
{
	int	rc;

	*tp = NULL;
	if ((rc = tsrc_open(api_of(c), r, r->param[0], src, e)) != 0)
		return rc == 1 ? 0 : -1;
	if ((*tp = term_find(api_of(c)->terms, r->param[0])) == NULL) {
		api_err_set(e, 404, "not_found", NULL, "no terminal '%.128s' "
		    "in this boot", r->param[0]);
		return -1;
	}
	return 0;
}

/* "cols" and "rows" of a query: absent 0, else 1..PTY_MAX_DIM. */
static int
api_term_query_dims(struct http_req *r, unsigned int *cols,
    unsigned int *rows, struct api_err *e)
{
	uint64_t	v[2] = { 0, 0 };

	if (http_query_u64(r, "cols", &v[0]) == -1 ||
	    http_query_u64(r, "rows", &v[1]) == -1 ||
	    v[0] > PTY_MAX_DIM || v[1] > PTY_MAX_DIM) {
		api_err_set(e, 400, "invalid_request", NULL,
		    "cols and rows must be valid numbers (1..10000)");
		return -1;
	}
	*cols = (unsigned int)v[0];
	*rows = (unsigned int)v[1];
	return 0;
}

/*
 * The request's handshake: 0 with the accept header in hdr, or -1 with
 * the refusal (400 without an upgrade at all).
 */
static int
api_term_handshake(struct http_req *r, char *hdr, size_t n,
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
/* The WebSocket client: frames out */

static int
tws_json(struct tws *s, cJSON *j)
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
tws_msg(const char *type, const char *cursor)
{
	cJSON	*j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "type", type);
	if (cursor != NULL)
		cJSON_AddStringToObject(j, "cursor", cursor);
	return j;
}

static void
tws_error(struct tws *s, const char *code, const char *msg)
{
	cJSON	*j = tws_msg("error", NULL);

	if (!s->bridge)
		cJSON_AddStringToObject(j, "code", code);
	cJSON_AddStringToObject(j, "message", msg);
	(void)tws_json(s, j);
}

static int
tws_chunk(void *ctx, const struct follow_chunk *ch)
{
	struct tws	*s = ctx;
	char		 head[CURSOR_MAX + 64];
	int		 n;

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
tws_gap(void *ctx, const struct follow_gap *g)
{
	struct tws	*s = ctx;
	cJSON		*j;

	if (s->bridge)
		return 0;
	j = tws_msg("truncated", g->cursor);
	cJSON_AddNumberToObject(j, "skippedBytes", (double)g->skipped);
	return tws_json(s, j);
}

/*
 * The bridge's exit: {"code":N[,"signal":"SIGHUP"]}, from how the
 * terminal ended (tsrc_exit); one with no exit (lost) is told as an
 * error, with its status's message.
 */
static cJSON *
tws_bridge_exit(const struct tsrc *src, struct term *t)
{
	const struct exit_status	*x = tsrc_exit(src, t);
	const cJSON			*e;
	const char			*name;
	char				 sn[32];
	cJSON				*j;

	if (x == NULL) {
		j = tws_msg("error", NULL);
		e = t == NULL ? cJSON_GetObjectItemCaseSensitive(src->final,
		    "error") : NULL;
		cJSON_AddStringToObject(j, "message", *tsrc_str(e, "message") ?
		    tsrc_str(e, "message") : "the terminal's exit is unknown");
		return j;
	}
	j = tws_msg("exit", NULL);
	cJSON_AddNumberToObject(j, "code", x->code);
	if (x->signal != 0 && (name = sigabbrev_np(x->signal)) != NULL) {
		snprintf(sn, sizeof(sn), "SIG%s", name);
		cJSON_AddStringToObject(j, "signal", sn);
	}
	return j;
}

/* The end: the exit (as the terminal's, or its earlier boot's, status). */
static void
tws_end(void *ctx, enum follow_why why, const char *cursor)
{
	struct tws	*s = ctx;
	cJSON		*j;

	follow_free(s->f);
	s->f = NULL;
	if (why == FOLLOW_ENDED && (s->t != NULL || s->src.final != NULL)) {
		if (s->bridge)
			j = tws_bridge_exit(&s->src, s->t);
		else {
			j = tws_msg("exit", cursor);
			tsrc_ending(&s->src, s->t, j);
		}
		(void)tws_json(s, j);
	} else
		tws_error(s, "not_found", "the terminal was removed");
	wsconn_close(s->ws, WS_CLOSE_NORMAL, "");
}

static size_t
tws_pending(void *ctx)
{
	return wsconn_pending(((struct tws *)ctx)->ws);
}

static const struct follow_sink tws_sink = {
	tws_chunk, tws_gap, tws_end, NULL, tws_pending, WS_OUT_HIGH, NULL
};

/* ------------------------------------------------------------------ */
/* The WebSocket client: frames in */

static void	tws_input_wake(struct term *, void *, int);

/* The queue is full: stop reading until the terminal took half of it. */
static void
tws_input_wait(struct tws *s)
{
	wsconn_pause_read(s->ws);
	if (term_input_hold(s->t, s, tws_input_wake) == 0)
		s->held = true;
	else		/* another writer is held: look again soon */
		ev_timer_start(s->loop, &s->retry);
}

static void
tws_input_wake(struct term *t, void *writer, int err)
{
	struct tws	*s = writer;

	(void)t;
	(void)err;
	s->held = false;
	wsconn_resume_read(s->ws);
}

static void
tws_retry_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct tws	*s = container_of(w, struct tws, retry);

	(void)loop;
	(void)revents;
	if (s->t == NULL || term_ended(s->t) || !term_input_full(s->t))
		wsconn_resume_read(s->ws);
	else
		tws_input_wait(s);
}

/*
 * An earlier boot's terminal takes nothing: the REST routes' refusal
 * (410 stale_boot), as an error frame.  True when s is one.
 */
static bool
tws_stale(struct tws *s)
{
	char	msg[API_ERR_MSG_MAX];

	if (s->src.final == NULL)
		return false;
	snprintf(msg, sizeof(msg), "boot %s is not the current boot: "
	    "terminal '%s' takes no input", s->src.boot, s->src.id);
	tws_error(s, "stale_boot", msg);
	return true;
}

static void
tws_on_binary(void *ctx, const char *d, size_t n)
{
	struct tws	*s = ctx;

	if (n == 0 || tws_stale(s) || s->t == NULL || term_ended(s->t))
		return;		/* the exit frame says so */
	if (term_input(s->t, d, n) == 0 && term_input_full(s->t))
		tws_input_wait(s);
}

/* {"type":"resize","cols","rows"}, and connect's interrupt, terminate. */
static void
tws_on_text(void *ctx, const char *d, size_t n)
{
	struct tws	*s = ctx;
	const cJSON	*type, *cols, *rows;
	const char	*ty;
	cJSON		*j;
	int		 rc = 0;

	j = cJSON_ParseWithLength(d, n);
	type = cJSON_GetObjectItemCaseSensitive(j, "type");
	ty = cJSON_IsString(type) ? type->valuestring : "";
	cols = cJSON_GetObjectItemCaseSensitive(j, "cols");
	rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
	if (tws_stale(s) || s->t == NULL || term_ended(s->t))
		;
	else if (strcmp(ty, "resize") == 0) {
		if (!api_integer(cols, 1, PTY_MAX_DIM) ||
		    !api_integer(rows, 1, PTY_MAX_DIM))
			tws_error(s, "invalid_request", "resize: cols and rows "
			    "must be integers 1..10000");
		else
			rc = term_resize(s->t, (unsigned int)cols->valuedouble,
			    (unsigned int)rows->valuedouble);
	} else if (!s->bridge && strcmp(ty, "interrupt") == 0)
		rc = term_interrupt(s->t);
	else if (!s->bridge && strcmp(ty, "terminate") == 0)
		rc = term_terminate(s->t);
	else
		tws_error(s, "invalid_request", "unknown message; expected "
		    "{\"type\":\"resize\"|\"interrupt\"|\"terminate\"}");
	if (rc == -1 && errno != ESRCH)
		tws_error(s, "internal", strerror(errno));
	cJSON_Delete(j);
}

static void
tws_on_drain(void *ctx)
{
	struct tws	*s = ctx;

	if (s->f != NULL)
		follow_drained(s->f);
}

static void
tws_free(struct tws *s)
{
	if (s->held && s->t != NULL && term_input_writer(s->t) == s)
		term_input_unhold(s->t);
	ev_timer_stop(s->loop, &s->retry);
	follow_free(s->f);
	term_watch_del(&s->w);
	tsrc_free(&s->src);
	free(s);
}

static void
tws_on_close(void *ctx)
{
	struct tws	*s = ctx;

	if (s->owned && s->t != NULL && !term_ended(s->t))
		(void)term_terminate(s->t);
	tws_free(s);
}

static const struct wsconn_ops tws_ops = {
	tws_on_text, tws_on_binary, tws_on_drain, tws_on_close
};

/* Removal of the terminal: the follow ends (GONE), input stops. */
static void
tws_term_event(struct term_watch *w, enum term_event ev)
{
	struct tws	*s = container_of(w, struct tws, w);

	if (ev == TERM_EV_GONE)
		s->t = NULL;
}

/* ------------------------------------------------------------------ */
/* Switching: the 101 out, then the socket is the WebSocket's */

static void
tws_take(struct http_conn *c, void *owner)
{
	struct tws	*s = owner;
	struct buf	 in = { 0 };
	char		 cur[CURSOR_MAX];
	cJSON		*j;
	int		 fd;

	http_conn_own(c, NULL, NULL, NULL);
	if (http_conn_upgrade(c, &fd, &in) == -1) {
		http_conn_abort(c);
		tws_free(s);
		return;
	}
	s->ws = wsconn_new(s->loop, fd, http_conn_server(c), &in, &tws_ops, s);
	buf_free(&in);
	if (s->ws == NULL) {
		tws_on_close(s);
		return;
	}
	j = tws_msg("ready", NULL);
	if (!s->bridge) {
		follow_cursor(s->f, cur);
		cJSON_AddStringToObject(j, "cursor", cur);
	}
	(void)tws_json(s, j);
	follow_start(s->f, &tws_sink, s);
}

static void
tws_http_closed(struct http_conn *c, void *owner)
{
	(void)c;
	tws_on_close(owner);
}

/* A client, not yet attached; NULL after a 503. */
static struct tws *
tws_new(struct http_conn *c, struct termtab *tt, bool bridge)
{
	struct tws	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return NULL;
	}
	s->loop = tt->loop;
	s->bridge = bridge;
	tsrc_init(&s->src);
	ev_timer_init(&s->retry, tws_retry_cb, WS_INPUT_RETRY, 0.);
	return s;
}

/* A client that is not attached: refused with e; its fresh terminal ends. */
static void
tws_refuse(struct http_conn *c, struct tws *s, const struct api_err *e)
{
	if (s->owned && s->t != NULL)
		(void)term_terminate(s->t);
	api_reply_err(c, e);
	tws_free(s);
}

/* Attach s to its terminal (s->t, or s->src's record), s->f its follow. */
static void
tws_attach(struct http_conn *c, struct tws *s, const char *accept)
{
	if (s->t != NULL)
		term_watch_add(s->t, &s->w, tws_term_event);
	http_conn_own(c, s, tws_take, tws_http_closed);
	if (http_reply_upgrade(c, "websocket", accept) == 0)
		tws_take(c, s);
	/* 1: on_drain takes it; -1: on_close frees s */
}

/* ------------------------------------------------------------------ */
/* Routes */

/* GET /v1/terminals/{id}/connect?cursor=&cols=&rows= */
static void
api_term_connect(struct http_conn *c, struct http_req *r)
{
	struct termtab	*tt = api_of(c)->terms;
	struct api_err	 e;
	struct tws	*s;
	unsigned int	 cols, rows;
	char		 hdr[64], cur[CURSOR_MAX + 1];

	if ((s = tws_new(c, tt, false)) == NULL)
		return;
	if (api_term_named(c, r, &s->t, &s->src, &e) == -1 ||
	    api_term_handshake(r, hdr, sizeof(hdr), &e) == -1 ||
	    api_term_query_dims(r, &cols, &rows, &e) == -1) {
		tws_refuse(c, s, &e);
		return;
	}
	switch (http_query(r, "cursor", cur, sizeof(cur))) {
	case 0:
		cur[0] = '\0';		/* the start */
		break;
	case -1:
		snprintf(cur, sizeof(cur), "-");	/* too long: refused */
	}
	if ((s->f = api_term_follow(tt, s->t, &s->src, true, cur, true,
	    &e)) == NULL) {
		tws_refuse(c, s, &e);
		return;
	}
	if (s->t != NULL && cols != 0 && rows != 0 && !term_ended(s->t))
		(void)term_resize(s->t, cols, rows);
	tws_attach(c, s, hdr);
}

/* The terminal a /pty request names (header, then query), or NULL. */
static const char *
api_pty_id(struct http_req *r, char *q, size_t n)
{
	const char	*h;

	if ((h = http_header(r, "Terminal-Id")) != NULL && h[0] != '\0')
		return h;
	if (http_query(r, "terminalId", q, n) == 1 && q[0] != '\0')
		return q;
	return NULL;
}

/*
 * The query's cwd confined to the workspace, as the bridge's exec's:
 * the normalised copy in buf, or the default (the workspace) when there
 * is none and the terminal is a new one (NULL for a reattach); -1 with
 * 403.  One too long for a path is not in the workspace either.
 */
static int
api_pty_cwd(struct api *a, struct http_req *r, bool reattach,
    const char **cwd, char buf[PATH_MAX], struct api_err *e)
{
	char	q[PATH_MAX];
	int	rc;

	*cwd = NULL;
	if ((rc = http_query(r, "cwd", q, sizeof(q))) == 0 ||
	    (rc == 1 && q[0] == '\0')) {
		if (!reattach)
			*cwd = api_sandbox_default_cwd(a->files);
		return 0;
	}
	*cwd = rc == 1 ? q : "";
	return api_sandbox_cwd_path(a->files, cwd, buf, e);
}

/* A terminal for /pty: the named one, or a new one (shell, cwd, size). */
static struct term *
api_pty_term(struct http_req *r, struct termtab *tt, const char *id,
    const char *cwd, unsigned int cols, unsigned int rows, struct api_err *e)
{
	struct term_opts	 o = { 0 };
	struct term		*t;
	char			 shell[PATH_MAX], *argv[2];
	bool			 failed;
	int			 err;

	if (id != NULL && (t = term_find(tt, id)) != NULL)
		return t;
	if (id != NULL && !record_id_valid(id)) {
		api_err_set(e, 400, "invalid_request", "terminalId",
		    "terminalId: must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$");
		return NULL;
	}
	if (http_query(r, "shell", shell, sizeof(shell)) == 1 &&
	    shell[0] != '\0') {
		argv[0] = shell;
		argv[1] = NULL;
		o.argv = argv;
	}
	o.cwd = cwd;
	o.id = id;
	o.cols = cols;
	o.rows = rows;
	if ((t = term_create(tt, &o, &failed, &err)) != NULL)
		return t;
	if (err == EAGAIN)
		api_err_set(e, 503, "busy", NULL, "terminal limit reached");
	else
		api_err_set(e, failed ? 400 : 500, failed ? "spawn_failed" :
		    "internal", NULL, "cannot start the terminal: %s",
		    strerror(err));
	return NULL;
}

/*
 * The boot a /pty request reads: a named terminal may be an earlier
 * boot's (its record into s->src: 1); a fresh one is always this boot's
 * (0).  -1 with e.
 */
static int
api_pty_boot(struct api *a, struct http_req *r, const char *id,
    struct tws *s, struct api_err *e)
{
	int	fd;

	if (id != NULL)
		return tsrc_open(a, r, id, &s->src, e);
	return api_pin(a, r, false, &fd, e);
}

/*
 * The bridge's GET /v1/sandbox/{id}/pty?cols=&rows=&shell=&cwd=&terminalId=
 * (routed as /v1/pty).
 */
static void
api_term_pty(struct http_conn *c, struct http_req *r)
{
	struct api	*a = api_of(c);
	struct api_err	 e;
	struct tws	*s;
	const char	*id, *cwd;
	unsigned int	 cols, rows;
	char		 hdr[64], q[PROC_ID_MAX + 2], buf[PATH_MAX];
	bool		 found;
	int		 rc;

	if ((s = tws_new(c, a->terms, true)) == NULL)
		return;
	id = api_pty_id(r, q, sizeof(q));
	found = id != NULL && term_find(a->terms, id) != NULL;
	if ((rc = api_pty_boot(a, r, id, s, &e)) == -1 ||
	    api_term_query_dims(r, &cols, &rows, &e) == -1 ||
	    api_term_handshake(r, hdr, sizeof(hdr), &e) == -1 ||
	    api_pty_cwd(a, r, found || rc != 0, &cwd, buf, &e) == -1) {
		tws_refuse(c, s, &e);
		return;
	}
	/* An earlier boot's record (rc 1) is read as it is: s->t NULL. */
	if (rc == 0 && (s->t = api_pty_term(r, a->terms, id, cwd, cols, rows,
	    &e)) == NULL) {
		tws_refuse(c, s, &e);
		return;
	}
	s->owned = id == NULL;
	if ((s->f = api_term_follow(a->terms, s->t, &s->src, true, NULL, true,
	    &e)) == NULL) {
		tws_refuse(c, s, &e);
		return;
	}
	if (rc == 0 && found && cols != 0 && rows != 0 && !term_ended(s->t))
		(void)term_resize(s->t, cols, rows);
	tws_attach(c, s, hdr);
}

/* ------------------------------------------------------------------ */
/* GET /v1/terminals/{id}/output?since&replay&follow: SSE */

static int
tsse_send(struct tsse *rd, const char *cursor, cJSON *j)
{
	char	*s;
	int	 rc;

	if (j == NULL || (s = cJSON_PrintUnformatted(j)) == NULL) {
		cJSON_Delete(j);
		http_conn_abort(rd->c);
		return -1;
	}
	cJSON_Delete(j);
	rc = http_sse_event(rd->c, cursor, s);
	free(s);
	return rc;
}

static cJSON *
tsse_event(struct tsse *rd, const char *type, const char *cursor,
    int64_t ms)
{
	char	 ts[TIME_MAX];
	cJSON	*j = cJSON_CreateObject();

	codec_time(ts, ms);
	cJSON_AddStringToObject(j, "type", type);
	cJSON_AddStringToObject(j, "terminalId", rd->id);
	cJSON_AddStringToObject(j, "cursor", cursor);
	cJSON_AddStringToObject(j, "timestamp", ts);
	return j;
}

static int
tsse_chunk(void *ctx, const struct follow_chunk *ch)
{
	struct tsse	*rd = ctx;
	struct buf	 b = { 0 };
	cJSON		*j;

	j = tsse_event(rd, "data", ch->cursor, ch->ts_ms);
	if (codec_b64_encode(&b, ch->data, ch->len) == -1 ||
	    buf_add(&b, "", 1) == -1) {
		buf_free(&b);
		cJSON_Delete(j);
		http_conn_abort(rd->c);
		return -1;
	}
	cJSON_AddStringToObject(j, "data", b.data);
	buf_free(&b);
	return tsse_send(rd, ch->cursor, j);
}

static int
tsse_gap(void *ctx, const struct follow_gap *g)
{
	struct tsse	*rd = ctx;
	cJSON		*j = tsse_event(rd, "truncated", g->cursor, g->ts_ms);

	cJSON_AddNumberToObject(j, "skippedBytes", (double)g->skipped);
	return tsse_send(rd, g->cursor, j);
}

static void
tsse_free(struct tsse *rd)
{
	follow_free(rd->f);
	tsrc_free(&rd->src);
	free(rd);
}

static void
tsse_end(void *ctx, enum follow_why why, const char *cursor)
{
	struct tsse		*rd = ctx;
	struct http_conn	*c = rd->c;
	struct term		*t;
	cJSON			*j;

	if (why == FOLLOW_GONE) {
		http_conn_abort(c);		/* tsse_closed frees rd */
		return;
	}
	t = follow_term(rd->f);
	if (why == FOLLOW_ENDED && (t != NULL || rd->src.final != NULL)) {
		/* An earlier boot's: its status's, "exited" or "error" (lost). */
		j = tsse_event(rd, "terminal", cursor, codec_now_ms());
		cJSON_AddStringToObject(j, "state", t != NULL ? "exited" :
		    *tsrc_str(rd->src.final, "status") ?
		    tsrc_str(rd->src.final, "status") : "error");
		tsrc_ending(&rd->src, t, j);
		if (tsse_send(rd, cursor, j) == -1)
			return;
	}
	http_conn_own(c, NULL, NULL, NULL);
	tsse_free(rd);
	http_stream_end(c);
}

static int
tsse_beat(void *ctx)
{
	return http_sse_comment(((struct tsse *)ctx)->c, "ping");
}

static size_t
tsse_pending(void *ctx)
{
	struct tsse	*rd = ctx;

	return http_conn_dead(rd->c) ? FOLLOW_SINK_DEAD :
	    http_conn_pending(rd->c);
}

static const struct follow_sink tsse_sink = {
	tsse_chunk, tsse_gap, tsse_end, tsse_beat, tsse_pending, HTTP_OUT_HIGH,
	NULL
};

static void
tsse_drained(struct http_conn *c, void *owner)
{
	(void)c;
	follow_drained(((struct tsse *)owner)->f);
}

static void
tsse_closed(struct http_conn *c, void *owner)
{
	(void)c;
	tsse_free(owner);
}

static void
api_term_output(struct http_conn *c, struct http_req *r)
{
	struct api_err	 e;
	struct tsse	*rd;
	struct term	*t;
	const char	*since;
	char		 q[CURSOR_MAX + 1];
	int		 replay, follow;

	if ((rd = calloc(1, sizeof(*rd))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	rd->c = c;
	tsrc_init(&rd->src);
	if (api_term_named(c, r, &t, &rd->src, &e) == -1 ||
	    api_output_since_query(r, &replay, &follow, &since, q, sizeof(q),
	    &e) == -1 ||
	    (rd->f = api_term_follow(api_of(c)->terms, t, &rd->src, follow,
	    since, replay, &e)) == NULL) {
		api_reply_err(c, &e);
		tsse_free(rd);
		return;
	}
	snprintf(rd->id, sizeof(rd->id), "%s", t != NULL ? term_id(t) :
	    rd->src.id);
	http_conn_own(c, rd, tsse_drained, tsse_closed);
	if (http_sse_begin(c) == -1)
		return;		/* tsse_closed frees it */
	follow_start(rd->f, &tsse_sink, rd);
}

const struct http_route api_term_ws_routes[] = {
	{ "GET",	"/v1/terminals/{}/connect",	api_term_connect, NULL },
	{ "GET",	"/v1/terminals/{}/output",	api_term_output, NULL },
	{ NULL, NULL, NULL, NULL }
};

const struct http_route api_term_bridge_routes[] = {
	{ "GET",	"/v1/pty",		api_term_pty, NULL },
	{ NULL, NULL, NULL, NULL }
};
