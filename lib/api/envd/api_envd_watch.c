/*
 * api_envd_watch.c: WatchDir and the polling watchers.  See
 * api_envd_watch.h; the wire facts are proto/README.md's (the envd
 * namespace, "Files and watching").
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/api.h"
#include "api/api_files.h"
#include "api_envd_entry.h"
#include "api_envd_req.h"
#include "api_envd_watch.h"
#include "base/jsonstr.h"
#include "base/log.h"
#include "base/tunables.h"
#include "base/turn.h"
#include "base/util.h"
#include "connect.h"
#include "core/files.h"
#include "core/watch.h"
#include "envd.h"

/* A WatchDir stream, owned by its connection. */
struct api_envd_watch_stream {
	struct watch_sub	 sub;
	struct envd_timers	 tm;		/* keepalive, the timeout */
	struct turn		 resume;	/* budget spent: next turn */
	struct ev_loop		*loop;
	struct http_conn	*c;
	struct watch		*w;
	uint64_t		 cursor;
	bool			 entry;		/* includeEntry */
	struct api_envd_req_path p;
	struct api_envd_entry_names names;	/* for its lifetime */
};

/* A polling watcher (CreateWatcher): a cursor kept between polls. */
struct api_envd_watch_poller {
	ev_timer		 idle;		/* dropped when not polled */
	struct ev_loop		*loop;
	struct watch		*w;
	uint64_t		 cursor;
	bool			 used;
	bool			 entry;
	struct api_envd_entry_names *names;	/* for its lifetime */
	char			 id[24];	/* "w" + 16 hex */
	struct api_envd_req_path p;
};

static struct api_envd_watch_poller	api_envd_watch_pollers[WATCH_POLL_MAX];

static const char *api_envd_watch_event_type(enum watch_type);
static cJSON *api_envd_watch_event(const struct watch_event *,
		    struct api_envd_entry_names *,
		    const struct api_envd_req_path *,
		    const struct files_root *);
static int	api_envd_watch_open(struct http_conn *, struct http_req *,
		    const cJSON *, const struct envd_user *,
		    struct api_envd_req_path *, struct watch **,
		    struct envd_err *);
static void	api_envd_watch_stream_free(void *);
static void	api_envd_watch_stream_pump(struct api_envd_watch_stream *);
static void	api_envd_watch_stream_resume(struct ev_loop *, ev_check *,
		    int);
static void	api_envd_watch_stream_notify(struct watch_sub *);
static void	api_envd_watch_stream_drained(struct http_conn *, void *);
static void	api_envd_watch_stream_closed(struct http_conn *, void *);
static struct api_envd_watch_poller *api_envd_watch_poller_find(
		    const cJSON *);
static void	api_envd_watch_poller_free(struct api_envd_watch_poller *);
static void	api_envd_watch_poller_idle(struct ev_loop *, ev_timer *, int);

static const char *
api_envd_watch_event_type(enum watch_type t)
{
	switch (t) {
	case WATCH_CREATE:
		return "EVENT_TYPE_CREATE";
	case WATCH_WRITE:
		return "EVENT_TYPE_WRITE";
	case WATCH_REMOVE:
		return "EVENT_TYPE_REMOVE";
	case WATCH_RENAME:
		return "EVENT_TYPE_RENAME";
	case WATCH_CHMOD:
		return "EVENT_TYPE_CHMOD";
	case WATCH_TRUNCATED:
		break;
	}
	return NULL;
}

/*
 * A FilesystemEvent: name relative to the watched directory ("." for
 * itself, as envd's filepath.Rel says), and with entry the EntryInfo of
 * what is there now (none for a remove or rename, nor when it is gone).
 */
static cJSON *
api_envd_watch_event(const struct watch_event *ev,
    struct api_envd_entry_names *nm, const struct api_envd_req_path *dir,
    const struct files_root *root)
{
	struct api_envd_req_path	 p;
	cJSON				*j, *ent;

	if ((j = cJSON_CreateObject()) == NULL ||
	    jsonstr_add(j, "name", ev->path[0] ? ev->path : ".") == NULL ||
	    cJSON_AddStringToObject(j, "type",
	    api_envd_watch_event_type(ev->type)) == NULL) {
		cJSON_Delete(j);
		return NULL;
	}
	if (nm == NULL || ev->type == WATCH_REMOVE || ev->type == WATCH_RENAME)
		return j;
	if (api_envd_req_child(dir, ev->path, &p) == -1)
		return j;
	if ((ent = api_envd_entry(root, &p, nm)) != NULL)
		cJSON_AddItemToObject(j, "entry", ent);
	return j;
}

/* j's path as a directory to watch: its watch (a reference). */
static int
api_envd_watch_open(struct http_conn *c, struct http_req *r, const cJSON *j,
    const struct envd_user *u, struct api_envd_req_path *p, struct watch **w,
    struct envd_err *e)
{
	struct stat	st;

	(void)r;
	if (api_envd_req_field(c, u, j, "path", p, e) == -1)
		return -1;
	if (files_stat(&api_of(c)->files->root, p->rel, true, &st) == -1) {
		api_envd_req_fail(e, errno, "watch", p->abs);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		envd_err_set(e, "invalid_argument", "path %s not a directory",
		    p->abs);
		return -1;
	}
	if ((*w = watch_open(api_of(c)->watches, p->rel,
	    api_envd_req_bool(j, "recursive"))) == NULL) {
		if (errno == ENOSPC || errno == EMFILE || errno == ENFILE)
			envd_err_set(e, "resource_exhausted", "watch '%s': the "
			    "watch limit is reached", p->abs);
		else
			api_envd_req_fail(e, errno, "watch", p->abs);
		return -1;
	}
	return 0;
}

static void
api_envd_watch_stream_free(void *owner)
{
	struct api_envd_watch_stream	*s = owner;

	envd_timers_stop(&s->tm);
	turn_stop(s->loop, &s->resume);
	watch_unsubscribe(s->w, &s->sub);
	watch_close(s->w);
	free(s);
}

/*
 * The watch's events as frames while the connection takes them.  Lost
 * events (a truncated, or a stream behind the ring) end the stream with
 * data_loss: envd's events have no way to say "some are missing", and a
 * watcher that silently missed some would be wrong.  The directory gone:
 * its remove ("."), then the end.  WATCH_PUMP_EVENTS at a time, the
 * rest at the next loop turns (turn.h).
 */
static void
api_envd_watch_stream_pump(struct api_envd_watch_stream *s)
{
	const struct watch_event	*ev;
	struct envd_err			 e;
	char				*txt;
	bool				 gap;
	cJSON				*j, *fe;
	int				 n;

	turn_stop(s->loop, &s->resume);
	for (n = 0; !http_conn_dead(s->c) &&
	    http_conn_pending(s->c) < HTTP_OUT_HIGH; n++) {
		if (n == WATCH_PUMP_EVENTS) {
			turn_start(s->loop, &s->resume);
			return;
		}
		ev = watch_next(s->w, &s->cursor, &gap);
		if (gap || (ev != NULL && ev->type == WATCH_TRUNCATED)) {
			envd_err_set(&e, "data_loss", "watch '%s': events were "
			    "lost (the kernel's queue overflowed, or a watch "
			    "limit); watch again", s->p.abs);
			envd_stream_finish(&s->tm, &e);
			return;
		}
		if (ev == NULL)
			break;
		fe = api_envd_watch_event(ev, s->entry ? &s->names : NULL,
		    &s->p, &api_of(s->c)->files->root);
		if ((j = cJSON_CreateObject()) == NULL || fe == NULL) {
			cJSON_Delete(fe);
			cJSON_Delete(j);
			http_conn_abort(s->c);
			return;
		}
		cJSON_AddItemToObject(j, "filesystem", fe);
		txt = cJSON_PrintUnformatted(j);
		cJSON_Delete(j);
		if (txt == NULL || envd_stream_msg(s->c, txt) == -1) {
			free(txt);
			return;		/* closed: ..._stream_closed frees */
		}
		free(txt);
		envd_timers_touch(&s->tm);
	}
	if (!http_conn_dead(s->c) && watch_gone(s->w) &&
	    s->cursor >= watch_head(s->w))
		envd_stream_finish(&s->tm, NULL);
}

static void
api_envd_watch_stream_resume(struct ev_loop *loop, ev_check *w, int revents)
{
	(void)loop;
	(void)revents;
	api_envd_watch_stream_pump(container_of(w,
	    struct api_envd_watch_stream, resume.check));
}

static void
api_envd_watch_stream_notify(struct watch_sub *sub)
{
	api_envd_watch_stream_pump(container_of(sub,
	    struct api_envd_watch_stream, sub));
}

static void
api_envd_watch_stream_drained(struct http_conn *c, void *owner)
{
	(void)c;
	api_envd_watch_stream_pump(owner);
}

static void
api_envd_watch_stream_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_envd_watch_stream_free(owner);
}

void
api_envd_watch_dir(struct http_conn *c, struct http_req *r)
{
	struct envd_user		 u;
	struct envd_err			 e;
	struct api_envd_watch_stream	*s = NULL;
	struct watch			*w = NULL;
	uint64_t			 ms;
	cJSON				*j = NULL;

	/* Connect-Timeout-Ms on WatchDir is the stream's, as the protocol
	   says. */
	if (envd_request_user(api_of(c)->envd, r, &u, &e) == -1 ||
	    (j = envd_stream_body(r, &e)) == NULL ||
	    envd_timeout(r, &ms, &e) == -1)
		goto fail;
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		envd_err_set(&e, "resource_exhausted", "out of memory");
		goto fail;
	}
	if (api_envd_watch_open(c, r, j, &u, &s->p, &w, &e) == -1)
		goto fail;
	s->w = w;
	s->c = c;
	s->loop = api_of(c)->tab->loop;
	s->entry = api_envd_req_bool(j, "includeEntry");
	s->cursor = watch_head(w);
	s->sub.notify = api_envd_watch_stream_notify;
	cJSON_Delete(j);
	envd_timers_init(&s->tm, s->loop, c, r, "{\"keepalive\":{}}",
	    api_envd_watch_stream_free, s);
	turn_init(&s->resume, api_envd_watch_stream_resume);
	http_conn_own(c, s, api_envd_watch_stream_drained,
	    api_envd_watch_stream_closed);
	/* start{} first, nothing before it. */
	if (envd_stream_begin(c) == -1 ||
	    envd_stream_msg(c, "{\"start\":{}}") == -1)
		return;			/* ..._stream_closed frees s */
	watch_subscribe(w, &s->sub);
	envd_timers_start(&s->tm, ms);
	api_envd_watch_stream_pump(s);
	return;
fail:
	free(s);
	cJSON_Delete(j);
	envd_stream_fail(c, &e);
}

/* The polling trio: what the Python sync SDK calls. */

static struct api_envd_watch_poller *
api_envd_watch_poller_find(const cJSON *j)
{
	const char	*id;
	int		 i;

	id = cJSON_GetStringValue(connect_field(j, "watcherId"));
	for (i = 0; id != NULL && i < WATCH_POLL_MAX; i++)
		if (api_envd_watch_pollers[i].used &&
		    strcmp(api_envd_watch_pollers[i].id, id) == 0)
			return &api_envd_watch_pollers[i];
	return NULL;
}

static void
api_envd_watch_poller_free(struct api_envd_watch_poller *pw)
{
	ev_timer_stop(pw->loop, &pw->idle);
	watch_close(pw->w);
	free(pw->names);
	memset(pw, 0, sizeof(*pw));
}

static void
api_envd_watch_poller_idle(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct api_envd_watch_poller	*pw = container_of(t,
					    struct api_envd_watch_poller, idle);

	(void)loop;
	(void)revents;
	log_info("event=envd_watcher_dropped id=%s", pw->id);
	api_envd_watch_poller_free(pw);
}

void
api_envd_watch_create(struct http_conn *c, struct http_req *r)
{
	struct api_envd_watch_poller	*pw = NULL;
	struct envd_user		 u;
	struct envd_err			 e;
	cJSON				*j, *out;
	int				 i;

	if ((j = api_envd_req_unary(c, r, &u, &e)) == NULL)
		goto fail;
	for (i = 0; i < WATCH_POLL_MAX && pw == NULL; i++)
		if (!api_envd_watch_pollers[i].used)
			pw = &api_envd_watch_pollers[i];
	if (pw == NULL) {
		envd_err_set(&e, "resource_exhausted", "%d watchers exist; "
		    "remove one first", WATCH_POLL_MAX);
		goto fail;
	}
	pw->entry = api_envd_req_bool(j, "includeEntry");
	if (pw->entry && (pw->names = calloc(1, sizeof(*pw->names))) == NULL) {
		envd_err_set(&e, "resource_exhausted", "out of memory");
		goto fail;
	}
	if (api_envd_watch_open(c, r, j, &u, &pw->p, &pw->w, &e) == -1) {
		free(pw->names);
		pw->names = NULL;
		goto fail;
	}
	pw->used = true;
	pw->cursor = watch_head(pw->w);
	pw->loop = api_of(c)->tab->loop;
	snprintf(pw->id, sizeof(pw->id), "w%08x%08x", arc4random(),
	    arc4random());
	ev_timer_init(&pw->idle, api_envd_watch_poller_idle, WATCH_POLL_IDLE,
	    0.);
	ev_timer_start(pw->loop, &pw->idle);
	cJSON_Delete(j);
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "watcherId", pw->id);
	envd_reply(c, out);
	return;
fail:
	cJSON_Delete(j);
	envd_reply_err(c, &e);
}

/*
 * The events since the last poll, at most WATCH_PUMP_EVENTS (the next
 * poll takes the rest).  Lost ones are a data_loss error, once: the
 * next poll goes on from the oldest kept.
 */
void
api_envd_watch_events(struct http_conn *c, struct http_req *r)
{
	const struct watch_event	*ev;
	struct api_envd_watch_poller	*pw;
	struct envd_user		 u;
	struct envd_err			 e;
	bool				 gap;
	cJSON				*j, *out = NULL, *arr, *fe;
	int				 n;

	if ((j = api_envd_req_unary(c, r, &u, &e)) == NULL)
		goto fail;
	if ((pw = api_envd_watch_poller_find(j)) == NULL) {
		envd_err_set(&e, "not_found", "watcher with id %.64s not found",
		    cJSON_GetStringValue(connect_field(j, "watcherId")) ?
		    cJSON_GetStringValue(connect_field(j, "watcherId")) : "");
		goto fail;
	}
	ev_timer_again(pw->loop, &pw->idle);
	if ((out = cJSON_CreateObject()) == NULL ||
	    (arr = cJSON_AddArrayToObject(out, "events")) == NULL) {
		envd_err_set(&e, "resource_exhausted", "out of memory");
		goto fail;
	}
	for (n = 0; n < WATCH_PUMP_EVENTS &&
	    ((ev = watch_next(pw->w, &pw->cursor, &gap)) != NULL || gap); n++) {
		if (gap || ev->type == WATCH_TRUNCATED) {
			/* A gap moved the cursor past the oldest kept: back. */
			if (gap && ev != NULL)
				pw->cursor--;
			envd_err_set(&e, "data_loss", "watcher %s: events were "
			    "lost (the kernel's queue overflowed, a watch "
			    "limit, or no poll for too long)", pw->id);
			goto fail;
		}
		if ((fe = api_envd_watch_event(ev, pw->names, &pw->p,
		    &api_of(c)->files->root)) != NULL)
			cJSON_AddItemToArray(arr, fe);
	}
	cJSON_Delete(j);
	envd_reply(c, out);
	return;
fail:
	cJSON_Delete(j);
	cJSON_Delete(out);
	envd_reply_err(c, &e);
}

void
api_envd_watch_remove(struct http_conn *c, struct http_req *r)
{
	struct api_envd_watch_poller	*pw;
	struct envd_user		 u;
	struct envd_err			 e;
	cJSON				*j;

	if ((j = api_envd_req_unary(c, r, &u, &e)) == NULL)
		goto fail;
	if ((pw = api_envd_watch_poller_find(j)) == NULL) {
		envd_err_set(&e, "not_found", "watcher not found");
		goto fail;
	}
	api_envd_watch_poller_free(pw);
	cJSON_Delete(j);
	envd_reply(c, cJSON_CreateObject());
	return;
fail:
	cJSON_Delete(j);
	envd_reply_err(c, &e);
}
