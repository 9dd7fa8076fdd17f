/*
 * api_output.c: reading a process's stored output over HTTP — the log
 * stream (SSE events with cursors), its JSON poll, and the raw streams —
 * as three sinks of the follow pump, which owns the walk of the files.
 * A reader (struct api_reader) ties one connection to one follow and to
 * the record it reads: the live process's store, or an earlier boot's
 * files opened read-only.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_output.h"
#include "base/codec.h"
#include "core/follow.h"
#include "store/record.h"

struct api_reader {
	struct http_conn	*c;
	struct api		*api;
	struct follow		*f;
	struct logstore		 ro;	/* an earlier boot's record */
	cJSON			*final;	/* an earlier boot's status */
	bool			 counted;	/* in api->followers */
	/* The JSON poll's reply, streamed: */
	int			 pstream;	/* whose string is open */
	unsigned char		 carry[2];	/* bytes not yet in base64 */
	size_t			 ncarry;
	struct buf		 enc;		/* one piece's text */
};

const char *const api_output_streams[LS_NSTREAMS] = { "stdout", "stderr" };

static void	api_output_raw(struct http_conn *, struct http_req *);
static void	api_output_logs(struct http_conn *, struct http_req *);
static void	api_output_exec_follow(struct http_conn *, struct proc *,
		    const struct follow_sink *);

const struct http_route api_output_routes[] = {
	{ "GET",	"/v1/processes/{}/stdout",	api_output_raw, NULL },
	{ "GET",	"/v1/processes/{}/stderr",	api_output_raw, NULL },
	{ "GET",	"/v1/processes/{}/logs",	api_output_logs, NULL },
	{ NULL, NULL, NULL, NULL }
};

/* ------------------------------------------------------------------ */
/* Readers */

static struct api_reader *
api_reader_new(struct http_conn *c)
{
	struct api_reader	*rd;

	if ((rd = calloc(1, sizeof(*rd))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return NULL;
	}
	rd->c = c;
	rd->api = api_of(c);
	rd->ro.fd[0] = rd->ro.fd[1] = rd->ro.idxfd = -1;
	return rd;
}

static void
api_reader_free(struct api_reader *rd)
{
	follow_free(rd->f);
	logstore_close(&rd->ro);
	cJSON_Delete(rd->final);
	buf_free(&rd->enc);
	if (rd->counted)
		rd->api->followers--;
	free(rd);
}

/* The reply is complete: the connection goes on with the next request. */
static void
api_reader_finish(struct api_reader *rd)
{
	struct http_conn	*c = rd->c;

	http_conn_own(c, NULL, NULL, NULL);
	api_reader_free(rd);
	http_stream_end(c);
}

/* The record the request names, as a follow source.  ts: startedAt. */
static int
api_reader_live(struct api_reader *rd, struct http_req *r,
    struct follow_src *src, char ts[TIME_MAX], struct api_err *e)
{
	struct proc	*p;

	if ((p = api_proc(rd->api, r, e)) == NULL)
		return -1;
	if ((src->ls = proc_store(p)) == NULL) {
		api_err_set(e, 500, "internal", NULL, "cannot open the "
		    "output of '%s': %s", proc_id(p), strerror(errno));
		return -1;
	}
	codec_time(ts, proc_started_ms(p));
	src->proc = p;
	src->boot = proc_boot(p);
	src->id = proc_id(p);
	src->started = ts;
	return 0;
}

/*
 * The record a read request names: the live process of this boot, or an
 * earlier boot's files opened read-only into rd.  q holds the boot named.
 */
static int
api_reader_open(struct api_reader *rd, struct http_req *r,
    struct follow_src *src, char ts[TIME_MAX], char *q, size_t n,
    struct api_err *e)
{
	const cJSON	*st;
	const char	*b;
	int		 procsfd, rc;

	memset(src, 0, sizeof(*src));
	switch (api_pin(rd->api, r, true, &procsfd, e)) {
	case -1:
		return -1;
	case 0:
		return api_reader_live(rd, r, src, ts, e);
	}
	rc = proc_id_valid(r->param[0]) ? record_open_ro(procsfd, r->param[0],
	    &rd->ro, &rd->final) : -1;
	close(procsfd);
	if (rc == -1) {
		api_err_set(e, 404, "not_found", NULL, "no process '%.128s' "
		    "in that boot", r->param[0]);
		return -1;
	}
	st = cJSON_GetObjectItemCaseSensitive(rd->final, "startedAt");
	b = api_boot_named(r, q, n);
	src->ls = &rd->ro;
	src->boot = b ? b : "";
	src->id = r->param[0];
	src->started = cJSON_IsString(st) ? st->valuestring : "";
	return 0;
}

/* ------------------------------------------------------------------ */
/* Sinks shared by the streams */

static size_t
api_sink_pending(void *ctx)
{
	struct api_reader	*rd = ctx;

	return http_conn_dead(rd->c) ? FOLLOW_SINK_DEAD :
	    http_conn_pending(rd->c);
}

static void
api_sink_drained(struct http_conn *c, void *owner)
{
	struct api_reader	*rd = owner;

	(void)c;
	follow_drained(rd->f);
}

static void
api_sink_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_reader_free(owner);
}

/* An event that could not be built: the stream fails, never malformed. */
static int
api_sse_send(struct api_reader *rd, const char *cursor, struct buf *ev,
    int built)
{
	int	rc;

	if (built != 0) {
		http_conn_abort(rd->c);
		rc = -1;
	} else
		rc = http_sse_event(rd->c, cursor, ev->data);
	buf_free(ev);
	return rc;
}

static int
api_sse_head(struct buf *b, const char *type, const char *cursor,
    int64_t ms)
{
	char	ts[TIME_MAX];

	codec_time(ts, ms);
	return buf_printf(b, "{\"type\":\"%s\",\"cursor\":\"%s\","
	    "\"timestamp\":\"%s\"", type, cursor, ts);
}

/* ------------------------------------------------------------------ */
/* The SSE sink: the bridge's log stream, and exec's */

static int
api_sse_chunk(void *ctx, const struct follow_chunk *ch)
{
	struct buf	ev = { 0 };
	int		rc;

	rc = api_sse_head(&ev, api_output_streams[ch->stream], ch->cursor,
	    ch->ts_ms);
	rc |= buf_addstr(&ev, ",\"data\":\"");
	rc |= codec_b64_encode(&ev, ch->data, ch->len);
	rc |= buf_add(&ev, "\"}", 3);		/* NUL-terminated */
	return api_sse_send(ctx, ch->cursor, &ev, rc);
}

static int
api_sse_gap(void *ctx, const struct follow_gap *g)
{
	struct buf	ev = { 0 };
	int		rc;

	rc = api_sse_head(&ev, "truncated", g->cursor, g->ts_ms);
	rc |= buf_printf(&ev, ",\"skippedBytes\":%llu",
	    (unsigned long long)g->skipped);
	if (g->dropped > 0)
		rc |= buf_printf(&ev, ",\"droppedBytes\":%llu",
		    (unsigned long long)g->dropped);
	rc |= buf_add(&ev, "}", 2);		/* NUL-terminated */
	return api_sse_send(ctx, g->cursor, &ev, rc);
}

/*
 * The terminal event.  A live record has exited (exec's stream ends at
 * the root's exit, while its group may linger: the exit is the root's).
 * An earlier boot's record ends as its status.json says: exited, or
 * error (lost).
 */
static int
api_sse_terminal(struct api_reader *rd, const char *cur)
{
	static const char *const copied[] = { "exit", "error" };
	struct proc	*p = follow_proc(rd->f);
	const cJSON	*state, *x;
	char		 ts[TIME_MAX], *s;
	cJSON		*j;
	size_t		 i;
	int		 rc;

	codec_time(ts, codec_now_ms());
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "type", "terminal");
	state = cJSON_GetObjectItemCaseSensitive(rd->final, "state");
	cJSON_AddStringToObject(j, "state", p != NULL ? "exited" :
	    cJSON_IsString(state) ? state->valuestring : "error");
	cJSON_AddStringToObject(j, "cursor", cur);
	cJSON_AddStringToObject(j, "timestamp", ts);
	if (p != NULL)
		cJSON_AddItemToObject(j, "exit", proc_exit_json(p));
	for (i = 0; p == NULL && i < sizeof(copied) / sizeof(copied[0]); i++)
		if ((x = cJSON_GetObjectItemCaseSensitive(rd->final,
		    copied[i])) != NULL)
			cJSON_AddItemToObject(j, copied[i],
			    cJSON_Duplicate(x, 1));
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (s == NULL) {
		http_conn_abort(rd->c);
		return -1;
	}
	rc = http_sse_event(rd->c, cur, s);
	free(s);
	return rc;
}

static void
api_sse_end(void *ctx, enum follow_why why, const char *cursor)
{
	struct api_reader	*rd = ctx;

	if (why == FOLLOW_GONE) {
		http_conn_abort(rd->c);		/* api_sink_closed frees rd */
		return;
	}
	if (why == FOLLOW_ENDED && api_sse_terminal(rd, cursor) == -1)
		return;
	api_reader_finish(rd);
}

static int
api_sse_beat(void *ctx)
{
	struct api_reader	*rd = ctx;

	return http_sse_comment(rd->c, "ping");
}

static const struct follow_sink api_sse_sink = {
	api_sse_chunk, api_sse_gap, api_sse_end, api_sse_beat,
	api_sink_pending, HTTP_OUT_HIGH, NULL
};

/* ------------------------------------------------------------------ */
/* The raw sink: one stream's bytes, chunked */

static int
api_raw_chunk(void *ctx, const struct follow_chunk *ch)
{
	struct api_reader	*rd = ctx;

	return http_stream_write(rd->c, ch->data, ch->len);
}

/*
 * An ended record's bytes, from its file to the socket by the kernel
 * (no copy of ours; to a unix socket, none at all).  A file shorter
 * than its store says cannot end the stream well: it breaks off.
 */
static ssize_t
api_raw_file(void *ctx, int fd, uint64_t *off, size_t n)
{
	struct api_reader	*rd = ctx;
	ssize_t			 k;

	if ((k = http_stream_sendfile(rd->c, fd, off, n)) == 0) {
		http_conn_abort(rd->c);
		k = -1;
	}
	return k;
}

/* A byte stream has no gaps to tell: it starts at what is retained. */
static int
api_raw_gap(void *ctx, const struct follow_gap *g)
{
	(void)ctx;
	(void)g;
	return 0;
}

static void
api_raw_end(void *ctx, enum follow_why why, const char *cursor)
{
	struct api_reader	*rd = ctx;

	(void)cursor;
	if (why == FOLLOW_GONE)
		http_conn_abort(rd->c);
	else
		api_reader_finish(rd);
}

static const struct follow_sink api_raw_sink = {
	api_raw_chunk, api_raw_gap, api_raw_end, NULL,
	api_sink_pending, HTTP_OUT_HIGH, api_raw_file
};

/* ------------------------------------------------------------------ */
/* The bridge's exec sink: event: stdout|stderr, data: base64; exit */

/* The head, naming the record (NULL: none was made). */
static int
api_bsse_begin(struct http_conn *c, const char *id)
{
	char	h[PROC_ID_MAX + 64];

	(void)snprintf(h, sizeof(h), "Cache-Control: no-cache\r\n%s%s%s",
	    id ? "X-Tend-Process-Id: " : "", id ? id : "", id ? "\r\n" : "");
	return http_stream_begin(c, 200, "text/event-stream",
	    HTTP_FRAME_CLOSE, h);
}

/* "event: type" and "data: data": the bridge's framing, not ours. */
static int
api_bsse_event(struct http_conn *c, const char *type, const char *data)
{
	struct buf	ev = { 0 };
	int		rc;

	if (buf_printf(&ev, "event: %s\ndata: %s\n\n", type, data) == -1) {
		http_conn_abort(c);
		return -1;
	}
	rc = http_stream_write(c, ev.data, ev.len);
	buf_free(&ev);
	return rc;
}

static int
api_bsse_chunk(void *ctx, const struct follow_chunk *ch)
{
	struct api_reader	*rd = ctx;
	struct buf		 b64 = { 0 };
	int			 rc;

	if (codec_b64_encode(&b64, ch->data, ch->len) == -1 ||
	    buf_add(&b64, "", 1) == -1) {
		buf_free(&b64);
		http_conn_abort(rd->c);
		return -1;
	}
	rc = api_bsse_event(rd->c, api_output_streams[ch->stream], b64.data);
	buf_free(&b64);
	return rc;
}

/* The bridge has no event for lost bytes: the record's status has them. */
static int
api_bsse_gap(void *ctx, const struct follow_gap *g)
{
	(void)ctx;
	(void)g;
	return 0;
}

/*
 * As a shell reports it: 124 for a timeout, 128 + N for signal N.  Read
 * from the exit itself: there is no JSON to build, nor to fail.
 */
int
api_output_bridge_code(struct proc *p)
{
	const struct exit_status	*e = proc_exit(p);

	if (e == NULL)
		return -1;	/* not reaped: the stream ends at the exit */
	if (e->timed_out)
		return BRIDGE_EXIT_TIMEOUT;
	if (e->signal != 0)
		return 128 + e->signal;
	return e->code;
}

static void
api_bsse_end(void *ctx, enum follow_why why, const char *cursor)
{
	struct api_reader	*rd = ctx;
	char			 d[64];

	(void)cursor;
	if (why == FOLLOW_GONE)
		(void)api_bsse_event(rd->c, "error", "{\"error\":\"the process "
		    "was removed\",\"code\":\"not_found\"}");
	else {
		(void)snprintf(d, sizeof(d), "{\"exit_code\":%d}",
		    api_output_bridge_code(follow_proc(rd->f)));
		(void)api_bsse_event(rd->c, "exit", d);
	}
	api_reader_finish(rd);
}

static const struct follow_sink api_bsse_sink = {
	api_bsse_chunk, api_bsse_gap, api_bsse_end, api_sse_beat,
	api_sink_pending, HTTP_OUT_HIGH, NULL
};

/* Start streaming: the reply head is sent, then the first pump. */
static void
api_reader_stream(struct api_reader *rd, const struct follow_sink *sink)
{
	struct http_conn	*c = rd->c;
	int			 rc;

	rd->counted = true;
	rd->api->followers++;
	if (sink == &api_raw_sink)
		rc = http_stream_begin(c, 200, "application/octet-stream",
		    HTTP_FRAME_CHUNKED, NULL);
	else if (sink == &api_bsse_sink)
		rc = api_bsse_begin(c, proc_id(follow_proc(rd->f)));
	else
		rc = http_sse_begin(c);
	http_conn_own(c, rd, api_sink_drained, api_sink_closed);
	if (rc == -1)
		return;		/* api_sink_closed frees it */
	follow_start(rd->f, sink, rd);
}

/* ------------------------------------------------------------------ */
/* The JSON poll's sink */

/*
 * The reply is the text a cJSON tree would print, written as it goes:
 * {"stdout":"<base64>","stderr":"<base64>","cursor":"…","ended":…} (base64
 * and cursors need no escaping), each stream's string open while its
 * bytes come, the 0 to 2 bytes that do not fill a base64 quantum carried
 * to the next piece.
 */
static int
api_poll_b64(struct api_reader *rd, struct buf *b, const unsigned char *d,
    size_t n)
{
	unsigned char	q[3];
	size_t		k;
	int		rc = 0;

	if (rd->ncarry > 0 && rd->ncarry + n >= 3) {
		memcpy(q, rd->carry, rd->ncarry);
		k = 3 - rd->ncarry;
		memcpy(q + rd->ncarry, d, k);
		rc |= codec_b64_encode(b, q, 3);
		d += k;
		n -= k;
		rd->ncarry = 0;
	}
	if (rd->ncarry == 0) {		/* else ncarry + n < 3 */
		k = n - n % 3;
		rc |= codec_b64_encode(b, d, k);
		d += k;
		n -= k;
	}
	memcpy(rd->carry + rd->ncarry, d, n);
	rd->ncarry += n;
	return rc;
}

/* Close the open strings up to stream s, opening the next ones. */
static int
api_poll_to(struct api_reader *rd, struct buf *b, int s)
{
	int	rc = 0;

	while (rd->pstream < s) {
		rc |= codec_b64_encode(b, rd->carry, rd->ncarry);
		rd->ncarry = 0;
		rc |= buf_addstr(b, "\"");
		if (++rd->pstream < LS_NSTREAMS)
			rc |= buf_printf(b, ",\"%s\":\"",
			    api_output_streams[rd->pstream]);
	}
	return rc;
}

/* One piece of text to the reply: an unbuilt one fails it, cut short. */
static int
api_poll_send(struct api_reader *rd, int built)
{
	int	rc;

	if (built != 0) {
		http_conn_abort(rd->c);
		rc = -1;
	} else
		rc = http_stream_write(rd->c, rd->enc.data, rd->enc.len);
	buf_reset(&rd->enc);
	return rc;
}

static int
api_poll_chunk(void *ctx, const struct follow_chunk *ch)
{
	struct api_reader	*rd = ctx;
	int			 rc;

	rc = api_poll_to(rd, &rd->enc, ch->stream);
	rc |= api_poll_b64(rd, &rd->enc, (const unsigned char *)ch->data,
	    ch->len);
	if (rc == 0 && rd->enc.len == 0)
		return 0;		/* all carried */
	return api_poll_send(rd, rc);
}

static void
api_poll_end(void *ctx, enum follow_why why, const char *cursor)
{
	struct api_reader	*rd = ctx;
	struct buf		*b = &rd->enc;
	uint64_t		 skipped = follow_skipped(rd->f);
	int			 rc;

	if (why == FOLLOW_GONE) {
		http_conn_abort(rd->c);		/* api_sink_closed frees rd */
		return;
	}
	rc = api_poll_to(rd, b, LS_NSTREAMS);
	rc |= buf_printf(b, ",\"cursor\":\"%s\",\"ended\":%s", cursor,
	    follow_done(rd->f) ? "true" : "false");
	/* tend addition: bytes the disk bound released before they were read. */
	if (skipped > 0)
		rc |= buf_printf(b, ",\"skippedBytes\":%llu",
		    (unsigned long long)skipped);
	rc |= buf_addstr(b, "}");
	if (api_poll_send(rd, rc) == 0)
		api_reader_finish(rd);
}

static const struct follow_sink api_poll_sink = {
	api_poll_chunk, api_raw_gap, api_poll_end, NULL, api_sink_pending,
	LOGS_OUT_HIGH, NULL
};

/*
 * Accept: application/json — what exists now after since, bounded by
 * limitBytes and by LOGS_SCAN_MAX records looked at, streamed from the
 * files with chunked coding: a poll holds a piece in memory, not its
 * reply, and the loop serves others between pieces.
 */
static void
api_poll(struct api_reader *rd, uint64_t limit)
{
	struct http_conn	*c = rd->c;

	http_conn_own(c, rd, api_sink_drained, api_sink_closed);
	if (http_stream_begin(c, 200, "application/json", HTTP_FRAME_CHUNKED,
	    NULL) == -1 || http_stream_write(c, "{\"stdout\":\"", 11) == -1)
		return;		/* api_sink_closed frees it */
	follow_poll_start(rd->f, &api_poll_sink, rd, limit);
}

/* ------------------------------------------------------------------ */
/* Query checks */

int
api_output_raw_query(struct http_req *r, int *follow, uint64_t *offset,
    struct api_err *e)
{
	*offset = 0;
	if ((*follow = http_query_bool(r, "follow", 0)) == -1) {
		api_err_set(e, 400, "invalid_request", NULL,
		    "follow: must be true, false, 1 or 0");
		return -1;
	}
	if (http_query_u64(r, "offset", offset) == -1) {
		api_err_set(e, 400, "invalid_request", NULL,
		    "offset: must be a non-negative integer");
		return -1;
	}
	return 0;
}

int
api_output_since_query(struct http_req *r, int *replay, int *follow,
    const char **since, char *q, size_t n, struct api_err *e)
{
	*replay = http_query_bool(r, "replay", 1);
	*follow = http_query_bool(r, "follow", 0);
	if (*replay == -1 || *follow == -1) {
		api_err_set(e, 400, "invalid_request", NULL,
		    "replay and follow take true, false, 1 or 0");
		return -1;
	}
	switch (http_query(r, "since", q, n)) {
	case 1:
		*since = q;
		break;
	case 0:
		*since = http_header(r, "Last-Event-ID");
		break;
	default:
		*since = "-";		/* too long for a cursor */
	}
	return 0;
}

int
api_output_limit_query(struct http_req *r, uint64_t *limit,
    struct api_err *e)
{
	*limit = LOGS_JSON_LIMIT;
	if (http_query_u64(r, "limitBytes", limit) == -1 || *limit == 0) {
		api_err_set(e, 400, "invalid_request", NULL,
		    "limitBytes: must be a positive integer");
		return -1;
	}
	/* Larger asks get the cap: a reply is a bounded read. */
	if (*limit > LOGS_JSON_LIMIT_CAP)
		*limit = LOGS_JSON_LIMIT_CAP;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Routes */

/* GET /v1/processes/{id}/stdout|stderr?offset=&follow= */
static void
api_output_raw(struct http_conn *c, struct http_req *r)
{
	struct follow_opts	 o = { 0 };
	struct follow_src	 src;
	struct api_reader	*rd;
	struct api_err		 e;
	char			 ts[TIME_MAX], q[API_BOOT_Q_MAX];
	int			 follow;

	if (api_output_raw_query(r, &follow, &o.offset, &e) == -1) {
		api_reply_err(c, &e);
		return;
	}
	if ((rd = api_reader_new(c)) == NULL)
		return;
	if (api_reader_open(rd, r, &src, ts, q, sizeof(q), &e) == -1) {
		api_reply_err(c, &e);
		api_reader_free(rd);
		return;
	}
	o.walk = FOLLOW_BYTES;
	o.follow = follow;
	o.stream = strcmp(r->path + strlen(r->path) - 6, "stderr") == 0 ?
	    LS_STDERR : LS_STDOUT;
	src.until = follow ? PROC_END_OUTPUT : PROC_END_STATE;
	if ((rd->f = follow_new(proctab_loop(rd->api->tab), &src,
	    &o)) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		api_reader_free(rd);
		return;
	}
	api_reader_stream(rd, &api_raw_sink);
}

/*
 * The log stream's follow, at its starting point: -1 with the error
 * (a query refused after the record, as it always was).
 */
static int
api_output_logs_open(struct api_reader *rd, struct http_req *r,
    bool as_json, struct api_err *e)
{
	struct follow_opts	 o = { 0 };
	struct follow_src	 src;
	struct api_err		 qe;
	const char		*since;
	char			 ts[TIME_MAX], q[API_BOOT_Q_MAX];
	char			 sq[CURSOR_MAX + 8];
	int			 replay, follow, qrc;

	qrc = api_output_since_query(r, &replay, &follow, &since, sq,
	    sizeof(sq), &qe);
	if (api_reader_open(rd, r, &src, ts, q, sizeof(q), e) == -1)
		return -1;
	if (qrc == -1) {
		*e = qe;
		return -1;
	}
	o.walk = FOLLOW_RECORDS;
	o.follow = follow == 1;
	o.piece = as_json ? LOGS_PIECE : 0;	/* SSE: a cursor a chunk */
	src.until = o.follow ? PROC_END_OUTPUT : PROC_END_STATE;
	if ((rd->f = follow_new(proctab_loop(rd->api->tab), &src,
	    &o)) == NULL) {
		api_err_nomem(e);
		return -1;
	}
	if (follow_seek(rd->f, since, replay) == -1) {
		api_err_set(e, 400, "invalid_request", NULL, "since: not a "
		    "cursor of process '%.128s' in this boot", src.id);
		return -1;
	}
	return 0;
}

/* GET /v1/processes/{id}/logs */
static void
api_output_logs(struct http_conn *c, struct http_req *r)
{
	struct api_reader	*rd;
	struct api_err		 e;
	const char		*accept;
	uint64_t		 limit;
	bool			 as_json;

	accept = http_header(r, "Accept");
	as_json = accept != NULL && strstr(accept, "application/json") != NULL &&
	    strstr(accept, "text/event-stream") == NULL;
	if ((rd = api_reader_new(c)) == NULL)
		return;
	if (api_output_logs_open(rd, r, as_json, &e) == -1) {
		api_reply_err(c, &e);
		api_reader_free(rd);
		return;
	}
	if (!as_json)
		api_reader_stream(rd, &api_sse_sink);
	else if (api_output_limit_query(r, &limit, &e) == 0)
		api_poll(rd, limit);
	else {
		api_reply_err(c, &e);
		api_reader_free(rd);
	}
}

/* ------------------------------------------------------------------ */
/* Exec's stream */

void
api_output_exec_stream(struct http_conn *c, struct proc *p)
{
	api_output_exec_follow(c, p, &api_sse_sink);
}

/* A running record's output from its start to its root's exit, into sink. */
static void
api_output_exec_follow(struct http_conn *c, struct proc *p,
    const struct follow_sink *sink)
{
	struct follow_opts	 o = { 0 };
	struct follow_src	 src = { 0 };
	struct api_reader	*rd;
	char			 ts[TIME_MAX];

	if ((rd = api_reader_new(c)) == NULL)
		return;
	codec_time(ts, proc_started_ms(p));
	src.ls = proc_store(p);		/* running: its files are open */
	src.proc = p;
	src.until = PROC_END_ROOT;
	src.boot = proc_boot(p);
	src.id = proc_id(p);
	src.started = ts;
	o.walk = FOLLOW_RECORDS;
	o.follow = true;
	o.tell_dropped = true;
	if ((rd->f = follow_new(proctab_loop(rd->api->tab), &src,
	    &o)) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		api_reader_free(rd);
		return;
	}
	(void)follow_seek(rd->f, NULL, true);
	api_reader_stream(rd, sink);
}

/* ------------------------------------------------------------------ */
/* The bridge's exec */

void
api_output_bridge_exec_stream(struct http_conn *c, struct proc *p)
{
	api_output_exec_follow(c, p, &api_bsse_sink);
}

void
api_output_bridge_exec_failed(struct http_conn *c, const char *argv0,
    int err)
{
	struct buf	msg = { 0 }, b64 = { 0 };
	bool		noent = err == ENOENT || err == ENOTDIR;
	char		d[32];

	if (buf_printf(&msg, "%s: %s\n", argv0, noent ? "command not found" :
	    strerror(err)) == -1 || codec_b64_encode(&b64, msg.data,
	    msg.len) == -1 || buf_add(&b64, "", 1) == -1) {
		http_reply_error(c, 503, "busy", "out of memory");
		goto out;
	}
	(void)snprintf(d, sizeof(d), "{\"exit_code\":%d}", noent ?
	    BRIDGE_EXIT_NOT_FOUND : BRIDGE_EXIT_NOT_EXEC);
	if (api_bsse_begin(c, NULL) == 0 &&
	    api_bsse_event(c, "stderr", b64.data) == 0 &&
	    api_bsse_event(c, "exit", d) == 0)
		http_stream_end(c);
out:
	buf_free(&msg);
	buf_free(&b64);
}
