/*
 * events.c: a boot's event log on a one-stream logstore, and the pump
 * that hands it to readers.
 *
 * One event is one index record: the store never merges two (each
 * append is sealed) and no event is longer than EVENTS_LINE_MAX, far
 * below a record's LOG_CHUNK.  So an event's seq is its record's, and
 * whether it is still kept is whether its record's offset is at or past
 * the stream's start (the logstore releases bytes, not events).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/codec.h"
#include "base/log.h"
#include "base/tunables.h"
#include "base/turn.h"
#include "base/util.h"
#include "base/wlist.h"
#include "events.h"
#include "store/logstore.h"

struct events {
	struct logstore		 ls;
	bool			 have_ls;	/* ls was made (or opened) */
	bool			 ro;		/* an earlier boot's */
	int			 statefd;	/* borrowed; -1 read-only */
	int			 dirfd;		/* boots/<boot>, or -1 */
	uint64_t		 maxbytes;
	uint64_t		 first;		/* first kept seq, 0: none yet */
	uint64_t		 dropped;	/* events not stored */
	char			*held[EVENTS_HELD_MAX];	/* lines waiting for
						   the disk, oldest first */
	int			 nheld;
	char			 boot[33];
	struct wlist_link	*waiting;	/* readers at the end, following */
	int			 nreaders;
};

struct events_reader {
	struct wlist_link	 link;		/* on ev->waiting */
	struct events		*ev;
	struct ev_loop		*loop;
	struct turn		 resume;	/* budget spent, or woken */
	ev_timer		 beat;
	const struct events_sink *sink;
	void			*ctx;
	uint64_t		 seq;		/* last event looked at */
	uint64_t		 max, sent;
	bool			 follow;
	bool			 ended;		/* the sink was told the end */
	char			*types;
	char			*id;
};

static const char *const events_names[] = { EVENTS_FILE };
static struct events	*events_cur;
/* One event at a time: readers hold none between calls. */
static char		 events_buf[EVENTS_LINE_MAX + 1];

static struct events *events_alloc(int, const char *, uint64_t);
static void	events_first(struct events *);
static void	events_reader_pump(struct events_reader *);
static void	events_reader_resume(struct ev_loop *, ev_check *, int);
static void	events_reader_beat(struct ev_loop *, ev_timer *, int);

/* ------------------------------------------------------------------ */
/* The log */

/*
 * The boot's directory, once it exists (a degraded state dir makes it
 * later); the store's files are made at the first event.
 */
static bool
events_ready(struct events *ev)
{
	char	path[64];

	if (ev->have_ls)
		return true;
	if (ev->ro || ev->statefd == -1)
		return false;
	snprintf(path, sizeof(path), "boots/%s/%s", ev->boot, EVENTS_DIR);
	if ((mkdirat(ev->statefd, path, 0750) == -1 && errno != EEXIST) ||
	    (ev->dirfd = openat(ev->statefd, path, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return false;
	if (logstore_create_lazy(&ev->ls, ev->dirfd, 1, events_names,
	    ev->maxbytes) == -1) {
		close(ev->dirfd);
		ev->dirfd = -1;
		return false;
	}
	ev->have_ls = true;
	return true;
}

/* The log of a boot, its files not yet open. */
static struct events *
events_alloc(int statefd, const char *boot, uint64_t maxbytes)
{
	struct events	*ev;

	if ((ev = calloc(1, sizeof(*ev))) == NULL)
		return NULL;
	ev->statefd = statefd;
	ev->dirfd = -1;
	ev->maxbytes = maxbytes;
	snprintf(ev->boot, sizeof(ev->boot), "%.32s", boot);
	return ev;
}

struct events *
events_open(struct ev_loop *loop, int statefd, const char *boot,
    uint64_t maxbytes)
{
	struct events	*ev;

	(void)loop;
	if ((ev = events_alloc(statefd, boot, maxbytes)) != NULL)
		(void)events_ready(ev);
	return ev;
}

/*
 * The agent's handover: the log as the next agent takes it up, its files
 * by fd (held lines are not carried: they wait for a disk that refused
 * them, and are counted dropped).
 */
cJSON *
events_handover_save(struct events *ev)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddNumberToObject(o, "first", (double)ev->first);
	cJSON_AddNumberToObject(o, "dropped",
	    (double)(ev->dropped + (uint64_t)ev->nheld));
	if (ev->have_ls)
		cJSON_AddItemToObject(o, "log", logstore_save(&ev->ls));
	return o;
}

struct events *
events_adopt(int statefd, const char *boot, uint64_t maxbytes,
    const cJSON *o)
{
	struct events	*ev;
	const cJSON	*v;

	if ((ev = events_alloc(statefd, boot, maxbytes)) == NULL)
		return NULL;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "first")) != NULL &&
	    cJSON_IsNumber(v))
		ev->first = (uint64_t)v->valuedouble;
	if ((v = cJSON_GetObjectItemCaseSensitive(o, "dropped")) != NULL &&
	    cJSON_IsNumber(v))
		ev->dropped = (uint64_t)v->valuedouble;
	v = cJSON_GetObjectItemCaseSensitive(o, "log");
	logstore_create_none(&ev->ls, 1, events_names, maxbytes);
	if (v != NULL && logstore_load(&ev->ls, v) == 0) {
		ev->dirfd = ev->ls.dirfd;
		ev->have_ls = true;
	} else
		(void)events_ready(ev);
	return ev;
}

struct events *
events_open_ro(int bootdirfd, const char *boot)
{
	struct events	*ev;
	int		 saved;

	if ((ev = calloc(1, sizeof(*ev))) == NULL)
		return NULL;
	ev->ro = true;
	ev->statefd = -1;
	snprintf(ev->boot, sizeof(ev->boot), "%.32s", boot);
	if ((ev->dirfd = openat(bootdirfd, EVENTS_DIR, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    logstore_open(&ev->ls, ev->dirfd, 1, events_names) == -1 ||
	    ev->ls.fd[0] == -1 || ev->ls.idxfd == -1) {
		saved = ev->dirfd == -1 || ev->ls.fd[0] == -1 ? ENOENT : errno;
		if (ev->dirfd != -1) {
			logstore_close(&ev->ls);
			close(ev->dirfd);
		}
		free(ev);
		errno = saved;
		return NULL;
	}
	ev->have_ls = true;
	events_first(ev);
	return ev;
}

void
events_close(struct events *ev)
{
	int	i;

	if (ev == NULL)
		return;
	for (i = 0; i < ev->nheld; i++)
		free(ev->held[i]);
	if (events_cur == ev)
		events_cur = NULL;
	if (ev->have_ls)
		logstore_close(&ev->ls);
	if (ev->dirfd != -1)
		close(ev->dirfd);
	free(ev);
}

void
events_set_current(struct events *ev)
{
	events_cur = ev;
}

struct events *
events_current(void)
{
	return events_cur;
}

const char *
events_boot(struct events *ev)
{
	return ev->boot;
}

/*
 * The first event still kept: past those whose bytes the bound released
 * (their record's offset is below the stream's start) and those the
 * index released.  Each event is passed once in the log's life.
 */
static void
events_first(struct events *ev)
{
	struct ls_rec	r;
	uint64_t	b[LS_NSTREAMS], gone;

	if (!ev->have_ls || ev->ls.nrec == 0)
		return;
	if (ev->first == 0)
		ev->first = 1;
	if ((gone = logstore_gone(&ev->ls, b)) >= ev->first)
		ev->first = gone + 1;
	while (ev->first <= ev->ls.nrec) {
		if (logstore_rec(&ev->ls, ev->first, &r) == 0 &&
		    r.offset >= ev->ls.start[0])
			break;
		if (errno == ERANGE && (gone = logstore_gone(&ev->ls, b)) >=
		    ev->first) {
			ev->first = gone + 1;
			continue;
		}
		ev->first++;
	}
}

void
events_stat(struct events *ev, struct events_stat *st)
{
	memset(st, 0, sizeof(*st));
	st->dropped = ev->dropped;
	if (!ev->have_ls)
		return;
	st->last = ev->ls.nrec;
	st->first = ev->first <= ev->ls.nrec ? ev->first : 0;
	st->bytes = ev->ls.end[0] - ev->ls.start[0];
}

/* Wake every reader waiting at the end: they go on at the next turn. */
static void
events_wake(struct wlist_link *l, void *arg)
{
	struct events_reader	*r = container_of(l, struct events_reader,
				    link);

	(void)arg;
	turn_start(r->loop, &r->resume);
}

/*
 * The line is {"type":T,"time":...,"bootId":...,<subject's fields>}:
 * type first, so that a reader finds it without parsing the rest.
 */
static char *
events_line(struct events *ev, const char *type, cJSON *subject)
{
	char	 ts[TIME_MAX];
	cJSON	*j, *f, *next;
	char	*s;

	if ((j = cJSON_CreateObject()) == NULL)
		return NULL;
	codec_time(ts, codec_now_ms());
	cJSON_AddStringToObject(j, "type", type);
	cJSON_AddStringToObject(j, "time", ts);
	cJSON_AddStringToObject(j, "bootId", ev->boot);
	for (f = subject != NULL ? subject->child : NULL; f != NULL;
	    f = next) {
		next = f->next;
		if (f->string == NULL || strcmp(f->string, "type") == 0 ||
		    strcmp(f->string, "time") == 0 ||
		    strcmp(f->string, "bootId") == 0 ||
		    strcmp(f->string, "cursor") == 0)
			continue;
		cJSON_AddItemToObject(j, f->string,
		    cJSON_DetachItemViaPointer(subject, f));
	}
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

/*
 * Store one line (its NUL replaced by the newline): false when the disk
 * or the directory refused it (nothing kept: a record of a part of the
 * line, if the disk took a part, reads as damaged and is passed over).
 */
static bool
events_store(struct events *ev, char *s)
{
	size_t		len = strlen(s);
	uint64_t	nrec;
	bool		ok;

	if (!events_ready(ev))
		return false;
	s[len] = '\n';			/* written by length */
	nrec = ev->ls.nrec;
	(void)logstore_append(&ev->ls, 0, s, len + 1);
	logstore_seal(&ev->ls);		/* the next event is a new record */
	s[len] = '\0';
	ok = ev->ls.nrec == nrec + 1 && ev->ls.dropped == 0;
	if (!ok)
		ev->ls.dropped = 0;	/* counted here, as events */
	return ok;
}

/*
 * One event, one record.  An event longer than EVENTS_LINE_MAX keeps
 * only its subject's "id" and says it was cut ("cut": true): a reader
 * still learns that it happened.  One the disk refuses (no boot directory
 * yet, a full disk) is held in memory, EVENTS_HELD_MAX at most, and
 * stored before the next one: a degraded start keeps its agent.started.
 */
void
events_append(struct events *ev, const char *type, cJSON *subject)
{
	cJSON	*small, *id;
	char	*s, idbuf[PROC_ID_MAX + 1] = "";
	bool	 stored;
	int	 i;

	if (ev == NULL || ev->ro || !events_types_valid(type) ||
	    strchr(type, ',') != NULL) {
		cJSON_Delete(subject);
		return;
	}
	id = cJSON_GetObjectItemCaseSensitive(subject, "id");
	if (cJSON_IsString(id))
		snprintf(idbuf, sizeof(idbuf), "%s", id->valuestring);
	s = events_line(ev, type, subject);	/* takes subject's fields */
	if (s != NULL && strlen(s) + 1 > EVENTS_LINE_MAX) {
		free(s);
		small = cJSON_CreateObject();
		if (idbuf[0] != '\0')
			cJSON_AddStringToObject(small, "id", idbuf);
		cJSON_AddBoolToObject(small, "cut", 1);
		s = events_line(ev, type, small);
		cJSON_Delete(small);
	}
	cJSON_Delete(subject);
	if (s == NULL) {
		ev->dropped++;
		return;
	}
	/* Older lines the disk refused go first, in their order. */
	for (i = 0; i < ev->nheld && events_store(ev, ev->held[i]); i++)
		free(ev->held[i]);
	memmove(ev->held, ev->held + i, (size_t)(ev->nheld - i) *
	    sizeof(ev->held[0]));
	ev->nheld -= i;
	stored = i > 0;
	if (ev->nheld == 0 && events_store(ev, s)) {
		stored = true;
		free(s);
	} else if (ev->nheld < EVENTS_HELD_MAX)
		ev->held[ev->nheld++] = s;
	else {
		ev->dropped++;
		free(s);
	}
	if (!stored)
		return;
	events_first(ev);
	(void)wlist_walk(&ev->waiting, events_wake, NULL);
	while (ev->waiting != NULL)
		wlist_del(&ev->waiting, ev->waiting);
}

void
events_emit(const char *type, cJSON *subject)
{
	if (events_cur == NULL) {
		cJSON_Delete(subject);
		return;
	}
	events_append(events_cur, type, subject);
}

/* ------------------------------------------------------------------ */
/* Types */

bool
events_types_valid(const char *s)
{
	bool	empty = true;

	if (s == NULL || *s == '\0')
		return false;
	for (; *s != '\0'; s++) {
		if (*s == ',') {
			if (empty)
				return false;
			empty = true;
			continue;
		}
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		    *s == '.' || *s == '_'))
			return false;
		empty = false;
	}
	return !empty;
}

/* "process." matches process.started; "process" matches only itself. */
bool
events_type_match(const char *types, const char *type)
{
	const char	*p, *e;
	size_t		 n, tl = strlen(type);

	if (types == NULL)
		return true;
	for (p = types; *p != '\0'; p = *e == ',' ? e + 1 : e) {
		e = strchr(p, ',');
		if (e == NULL)
			e = p + strlen(p);
		n = (size_t)(e - p);
		if (n > 0 && p[n - 1] == '.' ? n <= tl &&
		    memcmp(p, type, n) == 0 :
		    n == tl && memcmp(p, type, n) == 0)
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Readers */

struct events_reader *
events_reader_new(struct events *ev, struct ev_loop *loop,
    const struct events_filter *flt, bool follow, uint64_t max)
{
	struct events_reader	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->ev = ev;
	r->loop = loop;
	r->follow = follow && !ev->ro;
	r->max = max;
	if ((flt->types != NULL && (r->types = strdup(flt->types)) == NULL) ||
	    (flt->id != NULL && (r->id = strdup(flt->id)) == NULL)) {
		free(r->types);
		free(r);
		return NULL;
	}
	turn_init(&r->resume, events_reader_resume);
	ev_timer_init(&r->beat, events_reader_beat, SSE_HEARTBEAT,
	    SSE_HEARTBEAT);
	ev->nreaders++;
	return r;
}

void
events_reader_free(struct events_reader *r)
{
	if (r == NULL)
		return;
	wlist_del(&r->ev->waiting, &r->link);
	turn_stop(r->loop, &r->resume);
	ev_timer_stop(r->loop, &r->beat);
	r->ev->nreaders--;
	free(r->types);
	free(r->id);
	free(r);
}

int
events_reader_seek(struct events_reader *r, const char *since)
{
	struct events	*ev = r->ev;
	uint64_t	 nrec = ev->have_ls ? ev->ls.nrec : 0;
	uint64_t	 seq;

	if (since == NULL || since[0] == '\0') {
		r->seq = ev->first > 0 ? ev->first - 1 : 0;
		return 0;
	}
	if (strcmp(since, "end") == 0) {
		r->seq = nrec;
		return 0;
	}
	if (cursor_parse(since, ev->boot, EVENTS_CURSOR_ID, &seq) == -1 ||
	    seq > nrec)
		return -1;
	r->seq = seq;
	return 0;
}

void
events_reader_cursor(struct events_reader *r, char out[CURSOR_MAX])
{
	cursor_format(out, r->ev->boot, EVENTS_CURSOR_ID, r->seq);
}

void
events_reader_start(struct events_reader *r, const struct events_sink *sink,
    void *ctx)
{
	r->sink = sink;
	r->ctx = ctx;
	if (r->follow && sink->beat != NULL)
		ev_timer_start(r->loop, &r->beat);
	events_reader_pump(r);
}

void
events_reader_drained(struct events_reader *r)
{
	if (!r->ended)
		turn_start(r->loop, &r->resume);
}

static void
events_reader_resume(struct ev_loop *loop, ev_check *w, int revents)
{
	struct events_reader	*r = container_of(w, struct events_reader,
				    resume.check);

	(void)loop;
	(void)revents;
	turn_stop(r->loop, &r->resume);
	events_reader_pump(r);
}

static void
events_reader_beat(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct events_reader	*r = container_of(w, struct events_reader,
				    beat);

	(void)loop;
	(void)revents;
	if (r->sink->beat(r->ctx) == -1)
		ev_timer_stop(r->loop, &r->beat);
}

/*
 * Event seq into events_buf (NUL-ended in place of its newline), checked:
 * a whole line, an object whose first member is its type, copied into
 * tbuf.  0; -1 with ERANGE (released meanwhile), or with another errno
 * (damaged: passed over).
 */
static int
events_read(struct events *ev, uint64_t seq, size_t *len, char *tbuf,
    size_t tn)
{
	static const char	 head[] = "{\"type\":\"";
	struct ls_rec		 rec;
	const char		*q;
	ssize_t			 n;
	size_t			 tl, i;

	if (logstore_rec(&ev->ls, seq, &rec) == -1)
		return -1;
	if (rec.offset < ev->ls.start[0]) {
		errno = ERANGE;
		return -1;
	}
	if (rec.len > EVENTS_LINE_MAX) {
		errno = EIO;
		return -1;
	}
	n = logstore_pread(&ev->ls, 0, events_buf, rec.len, rec.offset);
	if (n == -1)
		return -1;
	if ((size_t)n != rec.len || n < (ssize_t)sizeof(head) + 2 ||
	    events_buf[n - 1] != '\n' || events_buf[n - 2] != '}' ||
	    memcmp(events_buf, head, sizeof(head) - 1) != 0 ||
	    (q = memchr(events_buf + sizeof(head) - 1, '"',
	    (size_t)n - sizeof(head))) == NULL ||
	    (tl = (size_t)(q - events_buf) - (sizeof(head) - 1)) == 0 ||
	    tl >= tn) {
		errno = EIO;
		return -1;
	}
	memcpy(tbuf, events_buf + sizeof(head) - 1, tl);
	tbuf[tl] = '\0';
	/*
	 * A line the agent wrote holds no control byte (JSON escapes them)
	 * and a type of the type alphabet: anything else (a damaged or
	 * forged earlier boot) would break the SSE framing it is sent in.
	 */
	if (!events_types_valid(tbuf) || strchr(tbuf, ',') != NULL) {
		errno = EIO;
		return -1;
	}
	for (i = 0; i < (size_t)n - 1; i++)
		if ((unsigned char)events_buf[i] < 0x20) {
			errno = EIO;
			return -1;
		}
	events_buf[n - 1] = '\0';
	*len = (size_t)n - 1;
	return 0;
}

/* Does the event's subject "id" match?  Parsed only for an ID filter. */
static bool
events_id_match(const char *id, const char *json, size_t len)
{
	const cJSON	*x;
	cJSON		*j;
	bool		 ok;

	if ((j = cJSON_ParseWithLength(json, len)) == NULL)
		return false;
	x = cJSON_GetObjectItemCaseSensitive(j, "id");
	ok = cJSON_IsString(x) && strcmp(x->valuestring, id) == 0;
	cJSON_Delete(j);
	return ok;
}

static void
events_reader_end(struct events_reader *r)
{
	char	cur[CURSOR_MAX];

	r->ended = true;
	ev_timer_stop(r->loop, &r->beat);
	events_reader_cursor(r, cur);
	r->sink->end(r->ctx, cur);	/* may free r */
}

/*
 * Hand over what is there, from r->seq on: a gap first (events.truncated)
 * when the bound released events the reader has not seen, then each
 * event that passes the filter.  At most EVENTS_PUMP_EVENTS looked at
 * and LOGS_PUMP_BYTES handed over per call; the rest at the next turn.
 */
static void
events_reader_pump(struct events_reader *r)
{
	struct events		*ev = r->ev;
	struct events_item	 it;
	char			 cur[CURSOR_MAX], type[EVENTS_TYPE_MAX];
	size_t			 bytes = 0, len, p;
	int			 budget = EVENTS_PUMP_EVENTS;

	if (r->ended)
		return;
	for (;;) {
		p = r->sink->pending(r->ctx);
		if (p == EVENTS_SINK_DEAD || p > r->sink->high)
			return;		/* dead, or drained calls again */
		if (r->max > 0 && r->sent >= r->max) {
			events_reader_end(r);
			return;
		}
		if (ev->first > 0 && r->seq + 1 < ev->first) {
			memset(&it, 0, sizeof(it));
			it.skipped = ev->first - 1 - r->seq;
			r->seq = ev->first - 1;
			events_reader_cursor(r, cur);
			it.cursor = cur;
			it.type = "events.truncated";
			r->sent++;
			if (r->sink->event(r->ctx, &it) == -1)
				return;
			continue;
		}
		if (!ev->have_ls || r->seq >= ev->ls.nrec) {
			if (!r->follow) {
				events_reader_end(r);
				return;
			}
			if (!r->link.linked)
				wlist_add(&ev->waiting, &r->link);
			return;
		}
		if (budget-- == 0 || bytes >= LOGS_PUMP_BYTES) {
			turn_start(r->loop, &r->resume);
			return;
		}
		if (events_read(ev, r->seq + 1, &len, type, sizeof(type)) ==
		    -1) {
			if (errno == ERANGE) {
				events_first(ev);
				if (r->seq + 1 < ev->first)
					continue;	/* a gap */
			}
			r->seq++;		/* damaged: passed over */
			continue;
		}
		r->seq++;
		if (!events_type_match(r->types, type) ||
		    (r->id != NULL && !events_id_match(r->id, events_buf,
		    len)))
			continue;
		events_reader_cursor(r, cur);
		it.cursor = cur;
		it.type = type;
		it.json = events_buf;
		it.len = len;
		it.skipped = 0;
		bytes += len;
		r->sent++;
		if (r->sink->event(r->ctx, &it) == -1)
			return;
	}
}
