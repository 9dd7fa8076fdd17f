/*
 * api_events.c: GET /v1/events, the boot's lifecycle events as Server-Sent
 * Events (id: the cursor, event: the type, data: the event with its
 * cursor) or as a JSON page {"events":[…],"next":CURSOR}, both as sinks
 * of an events reader (core/events), which owns the walk of the log.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_events.h"
#include "base/buf.h"
#include "base/codec.h"
#include "core/events.h"

struct api_evreader {
	struct http_conn	*c;
	struct events_reader	*r;
	struct events		*ro;	/* an earlier boot's log, owned */
	bool			 page;	/* a JSON page, not a stream */
	bool			 any;	/* the page has an event */
};

static void	api_events_get(struct http_conn *, struct http_req *);

const struct http_route api_events_routes[] = {
	{ "GET",	"/v1/events",	api_events_get, NULL },
	{ NULL, NULL, NULL, NULL }
};

static void
api_evreader_free(struct api_evreader *rd)
{
	events_reader_free(rd->r);
	events_close(rd->ro);
	free(rd);
}

static size_t
api_ev_pending(void *ctx)
{
	struct api_evreader	*rd = ctx;

	return http_conn_dead(rd->c) ? EVENTS_SINK_DEAD :
	    http_conn_pending(rd->c);
}

static void
api_ev_drained(struct http_conn *c, void *owner)
{
	struct api_evreader	*rd = owner;

	(void)c;
	events_reader_drained(rd->r);
}

static void
api_ev_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_evreader_free(owner);
}

/*
 * The stored event with its cursor after its type: {"type":T,"cursor":C,
 * ...}.  A gap (events.truncated) is made here: it is not stored.
 */
static int
api_ev_text(struct buf *b, const struct events_item *it, const char *boot)
{
	char	ts[TIME_MAX];
	size_t	head;

	if (it->json == NULL) {
		codec_time(ts, codec_now_ms());
		return buf_printf(b, "{\"type\":\"%s\",\"cursor\":\"%s\","
		    "\"time\":\"%s\",\"bootId\":\"%s\",\"skipped\":%llu}",
		    it->type, it->cursor, ts, boot,
		    (unsigned long long)it->skipped);
	}
	head = strlen("{\"type\":\"\",") + strlen(it->type);
	if (it->len <= head)	/* events_read checked the head */
		return -1;
	return buf_add(b, it->json, head) |
	    buf_printf(b, "\"cursor\":\"%s\",", it->cursor) |
	    buf_add(b, it->json + head, it->len - head);
}

static const char *
api_ev_boot(struct api_evreader *rd)
{
	return events_boot(rd->ro != NULL ? rd->ro : events_current());
}

/* ------------------------------------------------------------------ */
/* SSE */

/* b, made (rc 0) or not (the connection is dropped), onto the stream. */
static int
api_ev_send(struct api_evreader *rd, struct buf *b, int rc)
{
	if (rc == 0)
		rc = http_stream_write(rd->c, buf_head(b), buf_avail(b));
	else {
		http_conn_abort(rd->c);
		rc = -1;
	}
	buf_free(b);
	return rc;
}

static int
api_ev_sse_event(void *ctx, const struct events_item *it)
{
	struct api_evreader	*rd = ctx;
	struct buf		 b = { 0 };
	int			 rc;

	rc = buf_printf(&b, "id: %s\nevent: %s\ndata: ", it->cursor,
	    it->type);
	rc |= api_ev_text(&b, it, api_ev_boot(rd));
	rc |= buf_add(&b, "\n\n", 2);
	return api_ev_send(rd, &b, rc);
}

/* An earlier boot's log has no more to come: the stream ends. */
static void
api_ev_sse_end(void *ctx, const char *cursor)
{
	struct api_evreader	*rd = ctx;
	struct http_conn	*c = rd->c;

	(void)cursor;
	http_conn_own(c, NULL, NULL, NULL);
	api_evreader_free(rd);
	http_stream_end(c);
}

static int
api_ev_sse_beat(void *ctx)
{
	struct api_evreader	*rd = ctx;

	return http_sse_comment(rd->c, "ping");
}

static const struct events_sink api_ev_sse_sink = {
	api_ev_sse_event, api_ev_sse_end, api_ev_sse_beat, api_ev_pending,
	HTTP_OUT_HIGH
};

/* ------------------------------------------------------------------ */
/* The JSON page */

static int
api_ev_page_event(void *ctx, const struct events_item *it)
{
	struct api_evreader	*rd = ctx;
	struct buf		 b = { 0 };
	int			 rc;

	rc = rd->any ? buf_add(&b, ",", 1) : 0;
	rc |= api_ev_text(&b, it, api_ev_boot(rd));
	rd->any = true;
	return api_ev_send(rd, &b, rc);
}

static void
api_ev_page_end(void *ctx, const char *cursor)
{
	struct api_evreader	*rd = ctx;
	struct http_conn	*c = rd->c;
	char			 tail[CURSOR_MAX + 16];
	int			 n;

	n = snprintf(tail, sizeof(tail), "],\"next\":\"%s\"}", cursor);
	http_conn_own(c, NULL, NULL, NULL);
	api_evreader_free(rd);
	if (http_stream_write(c, tail, (size_t)n) == 0)
		http_stream_end(c);
}

static const struct events_sink api_ev_page_sink = {
	api_ev_page_event, api_ev_page_end, NULL, api_ev_pending,
	LOGS_OUT_HIGH
};

/* ------------------------------------------------------------------ */
/* The route */

/*
 * The log a request reads: the current boot's, or with the Tend-Boot pin
 * (or ?boot=) an earlier boot's, read-only.
 */
static struct events *
api_events_log(struct api *a, struct http_req *r, struct api_evreader *rd,
    struct api_err *e)
{
	char		 q[API_BOOT_Q_MAX];
	const char	*b;
	int		 procsfd, dfd;

	switch (api_pin(a, r, true, &procsfd, e)) {
	case -1:
		return NULL;
	case 0:
		if (events_current() == NULL)
			api_err_set(e, 503, "busy", NULL, "no event log");
		return events_current();
	}
	b = api_boot_named(r, q, sizeof(q));
	dfd = openat(procsfd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(procsfd);
	if (dfd == -1 || (rd->ro = events_open_ro(dfd, b)) == NULL) {
		if (dfd != -1)
			close(dfd);
		api_err_set(e, 404, "not_found", NULL,
		    "no events kept for boot %.40s", b);
		return NULL;
	}
	close(dfd);
	return rd->ro;
}

/*
 * The query: ?since= (else Last-Event-ID), ?follow=, ?types=, ?id=,
 * ?limit= (a page's).  0, or -1 with 400.
 */
static int
api_events_query(struct http_req *r, struct events_filter *f, int *follow,
    uint64_t *limit, char *since, size_t ns, char *types, size_t nt,
    char *id, size_t ni, const char **sincep, struct api_err *e)
{
	const char	*accept = http_header(r, "Accept");
	int		 rc;

	*follow = http_query_bool(r, "follow", accept != NULL &&
	    strstr(accept, "text/event-stream") != NULL);
	if (*follow == -1) {
		api_err_invalid(e, "follow", "must be 1, true, 0 or false");
		return -1;
	}
	switch (http_query(r, "since", since, ns)) {
	case 1:
		*sincep = since;
		break;
	case 0:
		*sincep = http_header(r, "Last-Event-ID");
		break;
	default:
		*sincep = "-";		/* too long for a cursor */
	}
	memset(f, 0, sizeof(*f));
	if ((rc = http_query(r, "types", types, nt)) == -1 ||
	    (rc == 1 && !events_types_valid(types))) {
		api_err_invalid(e, "types", "must be event types or prefixes "
		    "ending in '.', comma-separated");
		return -1;
	}
	if (rc == 1)
		f->types = types;
	if ((rc = http_query(r, "id", id, ni)) == -1 ||
	    (rc == 1 && id[0] == '\0')) {
		api_err_invalid(e, "id", "must be a record's ID");
		return -1;
	}
	if (rc == 1)
		f->id = id;
	*limit = EVENTS_PAGE_MAX;
	if (http_query_u64(r, "limit", limit) == -1 || *limit == 0) {
		api_err_invalid(e, "limit", "must be a positive integer");
		return -1;
	}
	if (*limit > EVENTS_PAGE_CAP)
		*limit = EVENTS_PAGE_CAP;
	return 0;
}

/* GET /v1/events */
static void
api_events_get(struct http_conn *c, struct http_req *r)
{
	struct api		*a = api_of(c);
	struct api_evreader	*rd;
	struct events		*ev;
	struct events_filter	 f;
	struct api_err		 e;
	const char		*since = NULL;
	char			 sq[CURSOR_MAX + 8], types[EVENTS_TYPES_Q_MAX];
	char			 id[PROC_ID_MAX + 2];
	uint64_t		 limit;
	int			 follow, rc;

	if (api_events_query(r, &f, &follow, &limit, sq, sizeof(sq), types,
	    sizeof(types), id, sizeof(id), &since, &e) == -1) {
		api_reply_err(c, &e);
		return;
	}
	if ((rd = calloc(1, sizeof(*rd))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	rd->c = c;
	rd->page = !follow;
	if ((ev = api_events_log(a, r, rd, &e)) == NULL)
		goto fail;
	if ((rd->r = events_reader_new(ev, proctab_loop(a->tab), &f, follow,
	    rd->page ? limit : 0)) == NULL) {
		api_err_nomem(&e);
		goto fail;
	}
	if (events_reader_seek(rd->r, since) == -1) {
		api_err_set(&e, 400, "invalid_request", "since", "since: not "
		    "a cursor of the events of boot %s", events_boot(ev));
		goto fail;
	}
	http_conn_own(c, rd, api_ev_drained, api_ev_closed);
	if (rd->page)
		rc = http_stream_begin(c, 200, "application/json",
		    HTTP_FRAME_CHUNKED, NULL) == -1 ? -1 :
		    http_stream_write(c, "{\"events\":[", 11);
	else
		rc = http_sse_begin(c);
	if (rc == -1)
		return;		/* api_ev_closed frees it */
	events_reader_start(rd->r, rd->page ? &api_ev_page_sink :
	    &api_ev_sse_sink, rd);
	return;
fail:
	api_reply_err(c, &e);
	api_evreader_free(rd);
}
