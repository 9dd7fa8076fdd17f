/*
 * api_watch.c: tend's own watch route.  See api_watch.h and, for the
 * events, watch.h.
 *
 * A reader is owned by its connection: it subscribes to the watch and,
 * told of new events (or that the output drained), writes what the
 * connection takes, never more than HTTP_OUT_HIGH queued.  Events it has
 * not written stay in the watch's ring; a reader that falls behind the
 * ring is told with a truncated event, as is one whose cursor belongs to
 * a watch that no longer exists.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "api_errno.h"
#include "api_files.h"
#include "api_watch.h"
#include "base/codec.h"
#include "base/fsutil.h"
#include "base/jsonstr.h"
#include "base/util.h"
#include "core/files.h"

struct api_watch_reader {
	struct watch_sub	 sub;
	ev_timer		 beat;
	struct ev_loop		*loop;
	struct http_conn	*c;
	struct watch		*w;
	uint64_t		 cursor;
	bool			 lost;		/* a truncated is owed first */
	char			 abs[PATH_MAX];	/* the directory, as named */
};

static void	api_watch_notify(struct watch_sub *);
static void	api_watch_drained(struct http_conn *, void *);
static void	api_watch_closed(struct http_conn *, void *);
static void	api_watch_beat(struct ev_loop *, ev_timer *, int);
static void	api_watch_free(struct api_watch_reader *);
static void	api_watch_pump(struct api_watch_reader *);
static int	api_watch_send(struct api_watch_reader *, enum watch_type,
		    const char *, int64_t);
static void	api_watch_fail(struct http_conn *, const char *, int);

void
api_watch_cursor(char out[API_WATCH_CURSOR_MAX], const struct watch *w,
    uint64_t seq)
{
	snprintf(out, API_WATCH_CURSOR_MAX, "%016" PRIx64 "-%" PRIu64,
	    watch_id(w), seq);
}

int
api_watch_resume(const char *s, const struct watch *w, uint64_t *seq,
    bool *lost)
{
	char		 idpart[17], *end;
	uint64_t	 id, n;
	const char	*dash;

	*seq = watch_head(w);
	*lost = false;
	if (s == NULL)
		return 0;
	if ((dash = strchr(s, '-')) == NULL || dash - s != 16)
		return -1;
	memcpy(idpart, s, 16);
	idpart[16] = '\0';
	errno = 0;
	id = strtoull(idpart, &end, 16);
	if (*end != '\0' || errno != 0 || codec_parse_u64(dash + 1, &n) == -1)
		return -1;
	/* Another watch's cursor: this one began after it, events between. */
	if (id != watch_id(w) || n > watch_head(w)) {
		*lost = true;
		return 0;
	}
	*seq = n;
	return 0;
}

/* ------------------------------------------------------------------ */
/* A reader */

static void
api_watch_free(struct api_watch_reader *rd)
{
	if (rd == NULL)
		return;
	ev_timer_stop(rd->loop, &rd->beat);
	watch_unsubscribe(rd->w, &rd->sub);
	watch_close(rd->w);
	free(rd);
}

static void
api_watch_notify(struct watch_sub *s)
{
	api_watch_pump(container_of(s, struct api_watch_reader, sub));
}

static void
api_watch_drained(struct http_conn *c, void *owner)
{
	(void)c;
	api_watch_pump(owner);
}

static void
api_watch_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_watch_free(owner);
}

static void
api_watch_beat(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct api_watch_reader	*rd = container_of(t, struct api_watch_reader,
				    beat);

	(void)loop;
	(void)revents;
	(void)http_sse_comment(rd->c, "ping");
}

/*
 * One event: {"type","path","timestamp"}, path absolute (the
 * directory's as named, joined with the event's), its id the cursor
 * after it.
 */
static int
api_watch_send(struct api_watch_reader *rd, enum watch_type type,
    const char *rel, int64_t ms)
{
	char	 id[API_WATCH_CURSOR_MAX], ts[TIME_MAX], path[PATH_MAX * 2];
	char	*s;
	cJSON	*j;
	int	 rc = -1;

	api_watch_cursor(id, rd->w, rd->cursor);
	codec_time(ts, ms);
	(void)fsutil_join(path, sizeof(path), rd->abs, rel);	/* it fits */
	if ((j = cJSON_CreateObject()) != NULL &&
	    cJSON_AddStringToObject(j, "type", watch_type_name(type)) != NULL &&
	    jsonstr_add_bytes(j, "path", path) == 0 &&
	    cJSON_AddStringToObject(j, "timestamp", ts) != NULL &&
	    (s = cJSON_PrintUnformatted(j)) != NULL) {
		rc = http_sse_event(rd->c, id, s);
		free(s);
	} else
		http_conn_abort(rd->c);		/* never a malformed event */
	cJSON_Delete(j);
	return rc;
}

/* What the connection takes of the ring; the end once the dir is gone. */
static void
api_watch_pump(struct api_watch_reader *rd)
{
	const struct watch_event	*e;
	bool				 gap;

	while (!http_conn_dead(rd->c) &&
	    http_conn_pending(rd->c) < HTTP_OUT_HIGH) {
		if (rd->lost) {
			rd->lost = false;
			if (api_watch_send(rd, WATCH_TRUNCATED, "",
			    codec_now_ms()) == -1)
				return;
			continue;
		}
		e = watch_next(rd->w, &rd->cursor, &gap);
		if (gap) {
			/* Fell behind the ring: say so, then go on. */
			if (e != NULL)
				rd->cursor--;
			rd->lost = true;
			continue;
		}
		if (e == NULL)
			break;
		if (api_watch_send(rd, e->type, e->path, e->ms) == -1)
			return;
		ev_timer_again(rd->loop, &rd->beat);
	}
	if (!http_conn_dead(rd->c) && watch_gone(rd->w) &&
	    rd->cursor >= watch_head(rd->w)) {
		http_conn_own(rd->c, NULL, NULL, NULL);
		http_stream_end(rd->c);
		api_watch_free(rd);
	}
}

/* ------------------------------------------------------------------ */
/* The route */

static void
api_watch_fail(struct http_conn *c, const char *abs, int err)
{
	const struct api_errno	*e = api_errno(err);
	int			 status = e->status;
	cJSON			*j;

	if (err == EMFILE || err == ENOSPC || err == ENFILE)
		j = http_error_obj("busy", "watch '%s': the watch limit is "
		    "reached", abs), status = 503;
	else if (e->outside)
		j = http_error_obj(e->code, "path '%s' is outside the files "
		    "root", abs);
	else
		j = http_error_obj(e->code, "watch '%s': %s", abs,
		    strerror(err));
	cJSON_AddStringToObject(j, "errno", codec_errno_name(err));
	http_reply_json(c, status, j);
}

static void
api_watch_get(struct http_conn *c, struct http_req *r)
{
	struct api		*api = api_of(c);
	const struct files_root	*root = &api->files->root;
	struct api_watch_reader	*rd;
	const char		*since;
	char			 abs[PATH_MAX], rel[PATH_MAX];
	char			 q[API_WATCH_CURSOR_MAX];
	int			 recursive;

	if (http_query(r, "path", abs, sizeof(abs)) != 1 || abs[0] != '/' ||
	    files_normalize(abs) == -1) {
		http_reply_error(c, 400, "invalid_request", "path: must be an "
		    "absolute path");
		return;
	}
	if ((recursive = http_query_bool(r, "recursive", 0)) == -1) {
		http_reply_error(c, 400, "invalid_request", "recursive: must "
		    "be 1, true, 0 or false");
		return;
	}
	since = http_header(r, "Last-Event-ID");
	switch (http_query(r, "cursor", q, sizeof(q))) {
	case 1:
		since = q;
		break;
	case -1:
		since = "";
		break;
	}
	if (files_rel(root, abs, rel, sizeof(rel)) == -1) {
		api_watch_fail(c, abs, errno);
		return;
	}
	if ((rd = calloc(1, sizeof(*rd))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	if ((rd->w = watch_open(api->watches, rel, recursive)) == NULL) {
		api_watch_fail(c, abs, errno);
		free(rd);
		return;
	}
	if (api_watch_resume(since, rd->w, &rd->cursor, &rd->lost) == -1) {
		http_reply_error(c, 400, "invalid_request", "cursor: '%.64s' "
		    "is not a watch cursor", since);
		watch_close(rd->w);
		free(rd);
		return;
	}
	rd->c = c;
	rd->loop = api->tab->loop;
	snprintf(rd->abs, sizeof(rd->abs), "%s", abs);
	rd->sub.notify = api_watch_notify;
	ev_timer_init(&rd->beat, api_watch_beat, SSE_HEARTBEAT, SSE_HEARTBEAT);
	ev_timer_start(rd->loop, &rd->beat);
	watch_subscribe(rd->w, &rd->sub);
	http_conn_own(c, rd, api_watch_drained, api_watch_closed);
	if (http_sse_begin(c) == 0)
		api_watch_pump(rd);	/* else api_watch_closed frees it */
}

const struct http_route api_watch_routes[] = {
	{ "GET",	"/v1/watch",	api_watch_get, NULL },
	{ NULL, NULL, NULL, NULL }
};
