/*
 * api_term_sse.c: a terminal's output as SSE (see api_term_sse.h).
 */
#include <stdio.h>
#include <stdlib.h>

#include "api.h"
#include "api_output.h"
#include "api_term_src.h"
#include "api_term_sse.h"
#include "base/codec.h"
#include "core/follow.h"
#include "core/term.h"

/* An SSE reader of a terminal's output. */
struct api_term_sse {
	struct http_conn	*c;
	struct api_term_src	 src;
	struct follow		*f;
	char			 id[PROC_ID_MAX + 1];
};

static int
api_term_sse_send(struct api_term_sse *rd, const char *cursor, cJSON *j)
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
api_term_sse_event(struct api_term_sse *rd, const char *type,
    const char *cursor, int64_t ms)
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
api_term_sse_chunk(void *ctx, const struct follow_chunk *ch)
{
	struct api_term_sse	*rd = ctx;
	struct buf		 b = { 0 };
	cJSON			*j;

	j = api_term_sse_event(rd, "data", ch->cursor, ch->ts_ms);
	if (codec_b64_encode(&b, ch->data, ch->len) == -1 ||
	    buf_add(&b, "", 1) == -1) {
		buf_free(&b);
		cJSON_Delete(j);
		http_conn_abort(rd->c);
		return -1;
	}
	cJSON_AddStringToObject(j, "data", b.data);
	buf_free(&b);
	return api_term_sse_send(rd, ch->cursor, j);
}

static int
api_term_sse_gap(void *ctx, const struct follow_gap *g)
{
	struct api_term_sse	*rd = ctx;
	cJSON			*j;

	j = api_term_sse_event(rd, "truncated", g->cursor, g->ts_ms);
	cJSON_AddNumberToObject(j, "skippedBytes", (double)g->skipped);
	return api_term_sse_send(rd, g->cursor, j);
}

static void
api_term_sse_free(struct api_term_sse *rd)
{
	follow_free(rd->f);
	api_term_src_free(&rd->src);
	free(rd);
}

static void
api_term_sse_end(void *ctx, enum follow_why why, const char *cursor)
{
	struct api_term_sse	*rd = ctx;
	struct http_conn	*c = rd->c;
	struct term		*t;
	const char		*st;
	cJSON			*j;

	if (why == FOLLOW_GONE) {
		http_conn_abort(c);	/* api_term_sse_closed frees rd */
		return;
	}
	t = follow_term(rd->f);
	if (why == FOLLOW_ENDED && (t != NULL ||
	    api_term_src_earlier(&rd->src))) {
		/* An earlier boot's: its status's, "exited" or "error" (lost). */
		j = api_term_sse_event(rd, "terminal", cursor, codec_now_ms());
		st = api_term_src_str(rd->src.final, "status");
		cJSON_AddStringToObject(j, "state", t != NULL ? "exited" :
		    *st ? st : "error");
		api_term_src_ending(&rd->src, t, j);
		if (api_term_sse_send(rd, cursor, j) == -1)
			return;
	}
	http_conn_own(c, NULL, NULL, NULL);
	api_term_sse_free(rd);
	http_stream_end(c);
}

static int
api_term_sse_beat(void *ctx)
{
	return http_sse_comment(((struct api_term_sse *)ctx)->c, "ping");
}

static size_t
api_term_sse_pending(void *ctx)
{
	struct api_term_sse	*rd = ctx;

	return http_conn_dead(rd->c) ? FOLLOW_SINK_DEAD :
	    http_conn_pending(rd->c);
}

static const struct follow_sink api_term_sse_sink = {
	api_term_sse_chunk, api_term_sse_gap, api_term_sse_end,
	api_term_sse_beat, api_term_sse_pending, HTTP_OUT_HIGH, NULL
};

static void
api_term_sse_drained(struct http_conn *c, void *owner)
{
	(void)c;
	follow_drained(((struct api_term_sse *)owner)->f);
}

static void
api_term_sse_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_term_sse_free(owner);
}

/* GET /v1/terminals/{id}/output?since&replay&follow */
static void
api_term_sse_get(struct http_conn *c, struct http_req *r)
{
	struct api_err		 e;
	struct api_term_sse	*rd;
	struct term		*t;
	const char		*since;
	char			 q[CURSOR_MAX + 1];
	int			 replay, follow;

	if ((rd = calloc(1, sizeof(*rd))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	rd->c = c;
	api_term_src_init(&rd->src);
	if (api_term_src_named(c, r, &t, &rd->src, &e) == -1 ||
	    api_output_since_query(r, &replay, &follow, &since, q, sizeof(q),
	    &e) == -1 ||
	    (rd->f = api_term_src_follow(api_of(c)->terms, t, &rd->src,
	    follow, since, replay, &e)) == NULL) {
		api_reply_err(c, &e);
		api_term_sse_free(rd);
		return;
	}
	snprintf(rd->id, sizeof(rd->id), "%s", t != NULL ? term_id(t) :
	    rd->src.id);
	http_conn_own(c, rd, api_term_sse_drained, api_term_sse_closed);
	if (http_sse_begin(c) == -1)
		return;		/* api_term_sse_closed frees it */
	follow_start(rd->f, &api_term_sse_sink, rd);
}

const struct http_route api_term_sse_routes[] = {
	{ "GET",	"/v1/terminals/{}/output",	api_term_sse_get,
	    NULL },
	{ NULL, NULL, NULL, NULL }
};
