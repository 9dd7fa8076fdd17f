/*
 * logs.c: reading a process's stored output — the SSE log stream with
 * cursors, the JSON poll, raw streams, exec, and metrics.
 *
 * A reader never holds output in memory beyond one chunk: the files are
 * the buffer.  Each streaming reply is a `struct follower` that reads the
 * index from its own cursor while its socket takes data, pauses when the
 * connection's output passes HTTP_OUT_HIGH, and resumes on drain or when
 * the process produced more.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "codec.h"
#include "cursor.h"
#include "fsutil.h"
#include "log.h"

#define container_of(p, t, m)	((t *)((char *)(p) - offsetof(t, m)))

enum follow_kind {
	FK_SSE,		/* the bridge's log stream */
	FK_RAW,		/* one stream's raw bytes, chunked */
	FK_EXEC		/* exec's SSE: ends when the root has exited */
};

struct follower {
	struct proc_watch	 w;	/* live process of this boot */
	ev_timer		 beat;	/* SSE heartbeat */
	struct http_conn	*c;
	struct api		*api;
	struct logstore		*ls;	/* &proc->ls, or &ro */
	struct logstore		 ro;	/* an earlier boot's record */
	cJSON			*final;	/* an earlier boot's status */
	enum follow_kind	 kind;
	int			 stream;	/* FK_RAW */
	uint64_t		 seq;	/* last index record delivered */
	uint64_t		 off;	/* FK_RAW: next offset */
	uint64_t		 dropped;	/* FK_EXEC: drops told */
	bool			 follow;
	bool			 done;
	char			 boot[33];
	char			 id[PROC_ID_MAX + 1];
	char			 key[PROC_ID_MAX + TIME_MAX + 2];	/* cursors */
};

static const char *const logs_streams[LS_NSTREAMS] = { "stdout", "stderr" };
static char	logs_chunk[LOG_CHUNK];
#define EXEC_PIECE	(sizeof(logs_chunk) / 3 * 3)

static void	follower_pump(struct follower *);
static int	follower_dropped(struct follower *);
static void	follower_free(struct follower *);
static int	logs_next_rec(struct logstore *, uint64_t *, struct ls_rec *);

/* ------------------------------------------------------------------ */
/* Opening what a request reads */

/*
 * Cursors name the record, not only its ID: "<id>@<startedAt>", so that a
 * cursor of a removed record does not fit a later one with the same ID.
 */
static void
follower_name(struct follower *f, const char *boot, const char *id,
    const char *started)
{
	snprintf(f->boot, sizeof(f->boot), "%.32s", boot);
	snprintf(f->id, sizeof(f->id), "%.128s", id);
	snprintf(f->key, sizeof(f->key), "%.128s@%.31s", id, started);
}

static void
follower_name_proc(struct follower *f, struct proc *p)
{
	char	ts[TIME_MAX];

	codec_time(ts, p->started_ms);
	follower_name(f, p->tab->boot, p->id, ts);
}

/*
 * The record a read request names: the live process of this boot, or an
 * earlier boot's files opened read-only into f.  -1 after replying.
 */
static int
logs_open(struct http_conn *c, struct http_req *r, struct follower *f,
    struct proc **pp)
{
	const cJSON	*st;
	const char	*b;
	char		 q[64], *s;
	int		 procsfd, dfd;

	*pp = NULL;
	switch (api_pin(c, r, true, &procsfd)) {
	case -1:
		return -1;
	case 0:
		if ((*pp = api_proc(c, r)) == NULL)
			return -1;
		if ((f->ls = proc_store(*pp)) == NULL) {
			http_reply_error(c, 500, "internal", "cannot open the "
			    "output of '%s': %s", (*pp)->id, strerror(errno));
			return -1;
		}
		follower_name_proc(f, *pp);
		return 0;
	}
	dfd = proc_id_valid(r->param[0]) ? fsutil_open(procsfd, r->param[0],
	    O_RDONLY | O_DIRECTORY, 0) : -1;
	if (dfd == -1 || logstore_open(&f->ro, dfd, LS_NSTREAMS,
	    logs_streams) == -1) {
		if (dfd != -1)
			close(dfd);
		close(procsfd);
		http_reply_error(c, 404, "not_found", "no process '%.128s' in "
		    "that boot", r->param[0]);
		return -1;
	}
	s = fsutil_read(dfd, "status.json", 1 << 20, NULL);
	f->final = s ? cJSON_Parse(s) : NULL;
	free(s);
	close(dfd);
	close(procsfd);
	f->ls = &f->ro;
	st = cJSON_GetObjectItemCaseSensitive(f->final, "startedAt");
	b = http_header(r, "Tend-Boot");
	if (b == NULL && http_query(r, "boot", q, sizeof(q)) == 1)
		b = q;
	follower_name(f, b ? b : "", r->param[0],
	    cJSON_IsString(st) ? st->valuestring : "");
	return 0;
}

static struct follower *
follower_new(struct http_conn *c)
{
	struct follower	*f;

	if ((f = calloc(1, sizeof(*f))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return NULL;
	}
	f->c = c;
	f->api = api_of(c);
	f->ro.fd[0] = f->ro.fd[1] = f->ro.idxfd = -1;
	return f;
}

/* Has the record ended, for this reader's purpose? */
static bool
follower_ended(struct follower *f)
{
	struct proc	*p = f->w.proc;

	if (p == NULL)
		return true;		/* an earlier boot's record */
	if (f->kind == FK_EXEC)
		return p->reaped;
	if (p->state == PROC_RUNNING)
		return false;
	return proc_output_done(p) || !f->follow;
}

/* ------------------------------------------------------------------ */
/* Event encoding */

static void
logs_event_head(struct buf *b, const char *type, const char *cursor,
    int64_t ms)
{
	char	ts[TIME_MAX];

	codec_time(ts, ms);
	buf_printf(b, "{\"type\":\"%s\",\"cursor\":\"%s\",\"timestamp\":\"%s\"",
	    type, cursor, ts);
}

/*
 * The terminal event.  A live record has exited (exec's stream ends at
 * the root's exit, while its group may linger: the exit is the root's).
 * An earlier boot's record ends as its status.json says: exited, or
 * error (lost).
 */
static int
follower_terminal(struct follower *f)
{
	static const char *const copied[] = { "exit", "error" };
	const cJSON	*state, *x;
	char		 cur[CURSOR_MAX], ts[TIME_MAX], *s;
	cJSON		*j;
	size_t		 i;
	int		 rc;

	cursor_format(cur, f->boot, f->key, f->ls->nrec);
	codec_time(ts, codec_now_ms());
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "type", "terminal");
	if (f->w.proc != NULL) {
		cJSON_AddStringToObject(j, "state", "exited");
		cJSON_AddStringToObject(j, "cursor", cur);
		cJSON_AddStringToObject(j, "timestamp", ts);
		cJSON_AddItemToObject(j, "exit", proc_exit_json(f->w.proc));
	} else {
		state = cJSON_GetObjectItemCaseSensitive(f->final, "state");
		cJSON_AddStringToObject(j, "state", cJSON_IsString(state) ?
		    state->valuestring : "error");
		cJSON_AddStringToObject(j, "cursor", cur);
		cJSON_AddStringToObject(j, "timestamp", ts);
		for (i = 0; i < sizeof(copied) / sizeof(copied[0]); i++)
			if ((x = cJSON_GetObjectItemCaseSensitive(f->final,
			    copied[i])) != NULL)
				cJSON_AddItemToObject(j, copied[i],
				    cJSON_Duplicate(x, 1));
	}
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	rc = s ? http_sse_event(f->c, cur, s) : -1;
	free(s);
	return rc;
}

/*
 * The record after *seq.  One that cannot be read or makes no sense (a
 * damaged index) is passed over, so a reader never stalls on it: *seq
 * moves past it.  -1 when there is no further record.
 */
static int
logs_next_rec(struct logstore *ls, uint64_t *seq, struct ls_rec *rec)
{
	while (*seq < ls->nrec) {
		if (logstore_rec(ls, *seq + 1, rec) == 0)
			return 0;
		log_warn("event=index_record_skipped seq=%llu",
		    (unsigned long long)(*seq + 1));
		(*seq)++;
	}
	return -1;
}

/*
 * The retained part of a record, read into logs_chunk: its length (0 when
 * the disk bound released all of it); released bytes add to *skipped.
 */
static size_t
logs_rec_data(struct logstore *ls, const struct ls_rec *rec,
    uint64_t *skipped)
{
	uint64_t	start = ls->start[rec->stream], skip = 0;
	ssize_t		n = 0;

	if (rec->offset < start)
		skip = start - rec->offset < rec->len ? start - rec->offset :
		    rec->len;
	if (skip < rec->len) {
		n = logstore_pread(ls, rec->stream, logs_chunk, rec->len - skip,
		    rec->offset + skip);
		if (n < 0)
			n = 0;
	}
	*skipped += rec->len - n;
	return n;
}

/*
 * Deliver index records after f->seq while the connection takes them.
 * Returns true when caught up with what is stored.
 */
static bool
follower_pump_sse(struct follower *f)
{
	struct logstore	*ls = f->ls;
	struct ls_rec	 rec;
	struct buf	 ev = { 0 };
	char		 cur[CURSOR_MAX];
	uint64_t	 skipped = 0;
	size_t		 n;
	bool		 caught_up = false;

	while (!f->done && http_conn_pending(f->c) < HTTP_OUT_HIGH) {
		if (logs_next_rec(ls, &f->seq, &rec) == -1) {
			caught_up = true;
			break;
		}
		n = logs_rec_data(ls, &rec, &skipped);
		f->seq = rec.seq;
		cursor_format(cur, f->boot, f->key, f->seq);
		if (skipped > 0 && (n > 0 || logstore_rec(ls, f->seq + 1,
		    &rec) == -1)) {
			char	tcur[CURSOR_MAX];

			cursor_format(tcur, f->boot, f->key,
			    n > 0 ? f->seq - 1 : f->seq);
			buf_reset(&ev);
			logs_event_head(&ev, "truncated", tcur, rec.ts_ms);
			buf_printf(&ev, ",\"skippedBytes\":%llu}",
			    (unsigned long long)skipped);
			skipped = 0;
			if (http_sse_event(f->c, tcur, ev.data) == -1)
				break;
		}
		if (n == 0)
			continue;
		buf_reset(&ev);
		logs_event_head(&ev, logs_streams[rec.stream], cur, rec.ts_ms);
		buf_addstr(&ev, ",\"data\":\"");
		codec_b64_encode(&ev, logs_chunk, n);
		buf_add(&ev, "\"}", 3);
		if (http_sse_event(f->c, cur, ev.data) == -1)
			break;
	}
	buf_free(&ev);
	return caught_up;
}

static bool
follower_pump_raw(struct follower *f)
{
	struct logstore	*ls = f->ls;
	ssize_t		 n;
	size_t		 want;

	while (!f->done && http_conn_pending(f->c) < HTTP_OUT_HIGH) {
		if (f->off < ls->start[f->stream])
			f->off = ls->start[f->stream];
		if (f->off >= ls->end[f->stream])
			return true;
		want = ls->end[f->stream] - f->off;
		if (want > sizeof(logs_chunk))
			want = sizeof(logs_chunk);
		n = logstore_pread(ls, f->stream, logs_chunk, want, f->off);
		if (n == -1 && errno == ERANGE)
			continue;
		if (n <= 0)
			return true;
		f->off += n;
		if (http_stream_write(f->c, logs_chunk, n) == -1)
			return false;
	}
	return false;
}

/*
 * Bytes the disk refused take no offset and no chunk, so the walk of
 * the index never meets them: an exec stream tells of them as they
 * grow, in a truncated event at its position of the moment.
 */
static int
follower_dropped(struct follower *f)
{
	struct buf	 ev = { 0 };
	char		 cur[CURSOR_MAX];
	uint64_t	 n;
	int		 rc;

	if (f->ls->dropped <= f->dropped)
		return 0;
	n = f->ls->dropped - f->dropped;
	f->dropped = f->ls->dropped;
	cursor_format(cur, f->boot, f->key, f->seq);
	logs_event_head(&ev, "truncated", cur, codec_now_ms());
	buf_printf(&ev, ",\"skippedBytes\":%llu,\"droppedBytes\":%llu}",
	    (unsigned long long)n, (unsigned long long)n);
	rc = http_sse_event(f->c, cur, ev.data);
	buf_free(&ev);
	return rc;
}

static void
follower_finish(struct follower *f)
{
	struct http_conn	*c = f->c;

	f->done = true;
	http_conn_own(c, NULL, NULL, NULL);
	follower_free(f);
	http_stream_end(c);
}

static void
follower_pump(struct follower *f)
{
	bool	caught_up;

	if (f->done || f->c->dead)
		return;
	caught_up = f->kind == FK_RAW ? follower_pump_raw(f) :
	    follower_pump_sse(f);
	if (!caught_up || f->c->dead)
		return;
	if (f->kind == FK_EXEC && follower_dropped(f) == -1)
		return;
	if (!follower_ended(f)) {
		if (f->follow || f->kind == FK_EXEC)
			return;		/* more comes with PROC_EV_OUTPUT */
		follower_finish(f);
		return;
	}
	if (f->kind != FK_RAW && follower_terminal(f) == -1)
		return;
	follower_finish(f);
}

/* ------------------------------------------------------------------ */
/* Follower plumbing */

static void
follower_event(struct proc_watch *w, enum proc_event ev)
{
	struct follower	*f = container_of(w, struct follower, w);

	if (ev == PROC_EV_GONE) {
		http_conn_abort(f->c);
		return;
	}
	follower_pump(f);
}

static void
follower_drained(struct http_conn *c, void *owner)
{
	(void)c;
	follower_pump(owner);
}

static void
follower_closed(struct http_conn *c, void *owner)
{
	(void)c;
	follower_free(owner);
}

static void
follower_beat(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct follower	*f = container_of(t, struct follower, beat);

	(void)loop;
	(void)revents;
	(void)http_sse_comment(f->c, "ping");
}

static void
follower_free(struct follower *f)
{
	struct api	*a = f->api;

	if (f->w.proc != NULL)
		proc_watch_del(&f->w);
	ev_timer_stop(a->tab->loop, &f->beat);
	logstore_close(&f->ro);
	cJSON_Delete(f->final);
	a->followers--;
	free(f);
}

/* Start streaming: the reply head is sent, then the first pump. */
static void
follower_start(struct follower *f, struct proc *p)
{
	struct http_conn	*c = f->c;
	int			 rc;

	f->api->followers++;
	if (p != NULL)
		proc_watch_add(p, &f->w, follower_event);
	ev_timer_init(&f->beat, follower_beat, SSE_HEARTBEAT, SSE_HEARTBEAT);
	if (f->kind == FK_RAW)
		rc = http_stream_begin(c, 200, "application/octet-stream",
		    HTTP_FRAME_CHUNKED, NULL);
	else {
		rc = http_sse_begin(c);
		ev_timer_start(f->api->tab->loop, &f->beat);
	}
	http_conn_own(c, f, follower_drained, follower_closed);
	if (rc == -1)
		return;		/* follower_closed frees it */
	follower_pump(f);
}

/* ------------------------------------------------------------------ */
/* Routes */

/* GET /v1/processes/{id}/stdout|stderr?offset=&follow= */
void
logs_raw(struct http_conn *c, struct http_req *r)
{
	struct follower	*f;
	struct proc	*p;
	int		 follow;

	if ((follow = http_query_bool(r, "follow", 0)) == -1) {
		http_reply_error(c, 400, "invalid_request",
		    "follow: must be true, false, 1 or 0");
		return;
	}
	if ((f = follower_new(c)) == NULL)
		return;
	if (http_query_u64(r, "offset", &f->off) == -1) {
		free(f);
		http_reply_error(c, 400, "invalid_request",
		    "offset: must be a non-negative integer");
		return;
	}
	if (logs_open(c, r, f, &p) == -1) {
		free(f);
		return;
	}
	f->kind = FK_RAW;
	f->follow = follow;
	f->stream = strcmp(r->path + strlen(r->path) - 6, "stderr") == 0 ?
	    LS_STDERR : LS_STDOUT;
	follower_start(f, p);
}

/* The reader's starting point: since / Last-Event-ID, or replay=false. */
static int
logs_since(struct http_conn *c, struct http_req *r, struct follower *f)
{
	const char	*since;
	char		 q[CURSOR_MAX + 8];
	int		 replay, follow;

	replay = http_query_bool(r, "replay", 1);
	follow = http_query_bool(r, "follow", 0);
	f->follow = follow == 1;
	if (replay == -1 || follow == -1) {
		http_reply_error(c, 400, "invalid_request",
		    "replay and follow take true, false, 1 or 0");
		return -1;
	}
	switch (http_query(r, "since", q, sizeof(q))) {
	case 1:
		since = q;
		break;
	case 0:
		since = http_header(r, "Last-Event-ID");
		break;
	default:
		since = "-";
	}
	if (since != NULL && since[0] != '\0' &&
	    (cursor_parse(since, f->boot, f->key, &f->seq) == -1 ||
	    f->seq > f->ls->nrec)) {
		http_reply_error(c, 400, "invalid_request", "since: not a "
		    "cursor of process '%s' in this boot", f->id);
		return -1;
	}
	if (!replay && f->seq < f->ls->nrec) {
		logstore_seal(f->ls);	/* later bytes go to new records */
		f->seq = f->ls->nrec;
	}
	return 0;
}

/* Accept: application/json — what exists now after since, bounded. */
static void
logs_json(struct http_conn *c, struct http_req *r, struct follower *f)
{
	struct ls_rec	 rec;
	struct buf	 data[LS_NSTREAMS] = { { 0 }, { 0 } }, b64 = { 0 };
	char		 cur[CURSOR_MAX];
	uint64_t	 limit = LOGS_JSON_LIMIT, total = 0, skipped = 0;
	size_t		 n;
	bool		 ended;
	cJSON		*j;
	int		 s;

	if (http_query_u64(r, "limitBytes", &limit) == -1 || limit == 0) {
		http_reply_error(c, 400, "invalid_request",
		    "limitBytes: must be a positive integer");
		return;
	}
	/* A reply is built in memory: larger asks get the cap. */
	if (limit > LOGS_JSON_LIMIT_CAP)
		limit = LOGS_JSON_LIMIT_CAP;
	while (logs_next_rec(f->ls, &f->seq, &rec) == 0) {
		if (total > 0 && total + rec.len > limit)
			break;
		f->seq = rec.seq;
		n = logs_rec_data(f->ls, &rec, &skipped);
		buf_add(&data[rec.stream], logs_chunk, n);
		total += n;
	}
	ended = follower_ended(f) && f->seq >= f->ls->nrec;
	cursor_format(cur, f->boot, f->key, f->seq);
	j = cJSON_CreateObject();
	for (s = 0; s < LS_NSTREAMS; s++) {
		buf_reset(&b64);
		codec_b64_encode(&b64, data[s].data, data[s].len);
		buf_add(&b64, "", 1);
		cJSON_AddStringToObject(j, logs_streams[s], b64.data);
		buf_free(&data[s]);
	}
	buf_free(&b64);
	cJSON_AddStringToObject(j, "cursor", cur);
	cJSON_AddBoolToObject(j, "ended", ended);
	/* tend addition: bytes the disk bound released before they were read. */
	if (skipped > 0)
		cJSON_AddNumberToObject(j, "skippedBytes", (double)skipped);
	http_reply_json(c, 200, j);
}

/* GET /v1/processes/{id}/logs */
void
logs_get(struct http_conn *c, struct http_req *r)
{
	struct follower	*f;
	struct proc	*p;
	const char	*accept;

	if ((f = follower_new(c)) == NULL)
		return;
	if (logs_open(c, r, f, &p) == -1) {
		free(f);
		return;
	}
	f->kind = FK_SSE;
	if (p != NULL)
		f->w.proc = p;		/* for follower_ended, until added */
	if (logs_since(c, r, f) == -1)
		goto done;
	accept = http_header(r, "Accept");
	if (accept != NULL && strstr(accept, "application/json") != NULL &&
	    strstr(accept, "text/event-stream") == NULL) {
		logs_json(c, r, f);
		goto done;
	}
	f->w.proc = NULL;
	follower_start(f, p);
	return;
done:
	logstore_close(&f->ro);
	cJSON_Delete(f->final);
	free(f);
}

/* ------------------------------------------------------------------ */
/* Exec */

/*
 * An exec reply waits for the root to exit, then takes what the pipes
 * hold now: a background descendant keeping a pipe open does not hold
 * the reply.
 */
struct execwait {
	struct proc_watch	 w;
	struct http_conn	*c;
	uint64_t		 max;
	int64_t			 t0;
};

static void
exec_reply(struct execwait *x, struct proc *p)
{
	struct http_conn	*c = x->c;
	struct buf		 b64 = { 0 };
	uint64_t		 want, off;
	bool			 truncated = false;
	ssize_t			 n;
	cJSON			*j;
	int			 s;

	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "id", p->id);
	cJSON_AddItemToObject(j, "exit", proc_exit_json(p));
	for (s = 0; s < LS_NSTREAMS; s++) {
		buf_reset(&b64);
		off = p->ls.start[s];
		want = p->ls.end[s] - off;
		if (off > 0 || want > x->max)
			truncated = true;
		if (want > x->max)
			want = x->max;
		while (want > 0) {
			/* Pieces of 3k bytes: no padding inside the text. */
			n = logstore_pread(&p->ls, s, logs_chunk,
			    want < EXEC_PIECE ? want : EXEC_PIECE, off);
			if (n <= 0)
				break;
			codec_b64_encode(&b64, logs_chunk, n);
			off += n;
			want -= n;
		}
		buf_add(&b64, "", 1);
		cJSON_AddStringToObject(j, logs_streams[s], b64.data);
	}
	buf_free(&b64);
	/* Bytes the disk refused are missing from the reply as well. */
	cJSON_AddNumberToObject(j, "droppedBytes", (double)p->ls.dropped);
	cJSON_AddBoolToObject(j, "truncated", truncated || p->ls.dropped > 0);
	cJSON_AddNumberToObject(j, "durationMs",
	    (double)(codec_mono_ms() - x->t0));
	http_conn_own(c, NULL, NULL, NULL);
	proc_watch_del(&x->w);
	free(x);
	http_reply_json(c, 200, j);
}

static void
exec_event(struct proc_watch *w, enum proc_event ev)
{
	struct execwait	*x = container_of(w, struct execwait, w);
	struct http_conn *c = x->c;

	if (ev == PROC_EV_GONE) {
		http_conn_own(c, NULL, NULL, NULL);
		proc_watch_del(w);
		free(x);
		http_reply_error(c, 404, "not_found", "the process was removed");
	} else if (ev == PROC_EV_EXIT)
		exec_reply(x, w->proc);
}

static void
exec_closed(struct http_conn *c, void *owner)
{
	struct execwait	*x = owner;

	(void)c;
	proc_watch_del(&x->w);
	free(x);
}

/* POST /v1/exec */
void
logs_exec(struct http_conn *c, struct http_req *r)
{
	struct proc_opts	 o;
	struct proc		*p = NULL;
	struct execwait		*x;
	struct follower		*f;
	struct buf		 in = { 0 };
	const cJSON		*fi;
	const char		*accept;
	char			**argv, **env;
	uint64_t		 max = EXEC_MAX_OUTPUT;
	cJSON			*j;
	bool			 failed;
	int			 fd, err;
	int64_t			 t0 = codec_mono_ms();

	if (api_pin(c, r, false, &fd) != 0)
		return;
	if ((j = api_parse_body(c, r)) == NULL)
		return;
	if (api_launch_opts(c, j, true, &o, &argv, &env) == -1)
		goto out;
	if ((fi = cJSON_GetObjectItemCaseSensitive(j, "stdin")) != NULL) {
		if (!cJSON_IsString(fi) || codec_b64_decode(&in, fi->valuestring,
		    strlen(fi->valuestring)) == -1) {
			api_invalid(c, "stdin", "must be base64 data");
			goto out;
		}
	}
	if ((fi = cJSON_GetObjectItemCaseSensitive(j, "maxOutputBytes")) != NULL) {
		if (!api_integer(fi, 0, 1e15)) {
			api_invalid(c, "maxOutputBytes", "must be an integer "
			    ">= 0");
			goto out;
		}
		max = (uint64_t)fi->valuedouble;
		if (max > EXEC_MAX_OUTPUT_CAP)
			max = EXEC_MAX_OUTPUT_CAP;	/* built in memory */
	}
	o.stdin_pipe = in.len > 0;
	if ((p = proc_spawn(api_of(c)->tab, &o, &failed, &err)) == NULL) {
		api_reply_spawn_error(c, failed, err, o.id);
		goto out;
	}
	if (in.len > 0)
		(void)proc_stdin(p, in.data, in.len, true);

	accept = http_header(r, "Accept");
	if (accept != NULL && strstr(accept, "text/event-stream") != NULL) {
		if ((f = follower_new(c)) == NULL)
			goto out;
		f->kind = FK_EXEC;
		f->follow = true;
		f->ls = &p->ls;
		follower_name_proc(f, p);
		follower_start(f, p);
		goto out;
	}
	if ((x = calloc(1, sizeof(*x))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		goto out;
	}
	x->c = c;
	x->max = max;
	x->t0 = t0;
	proc_watch_add(p, &x->w, exec_event);
	http_conn_own(c, x, NULL, exec_closed);
	if (p->reaped)
		exec_reply(x, p);
out:
	buf_free(&in);
	free(argv);
	for (fd = 0; env != NULL && env[fd] != NULL; fd++)
		free(env[fd]);
	free(env);
	cJSON_Delete(j);
}

/* ------------------------------------------------------------------ */
/* Metrics */

void
logs_metrics(struct http_conn *c, struct http_req *r)
{
	struct api	*a = api_of(c);
	struct proctab	*t = a->tab;
	struct buf	 b = { 0 };

	(void)r;
	buf_printf(&b,
	    "# HELP tend_processes_started_total Processes launched.\n"
	    "# TYPE tend_processes_started_total counter\n"
	    "tend_processes_started_total %llu\n"
	    "# HELP tend_processes_running Processes whose group has not settled.\n"
	    "# TYPE tend_processes_running gauge\n"
	    "tend_processes_running %d\n"
	    "# HELP tend_processes_exited_total Processes that ended.\n"
	    "# TYPE tend_processes_exited_total counter\n"
	    "tend_processes_exited_total %llu\n"
	    "# HELP tend_orphans_reaped_total Processes reaped that tend did not launch.\n"
	    "# TYPE tend_orphans_reaped_total counter\n"
	    "tend_orphans_reaped_total %llu\n"
	    "# HELP tend_bytes_stored_total Output bytes stored.\n"
	    "# TYPE tend_bytes_stored_total counter\n"
	    "tend_bytes_stored_total %llu\n"
	    "# HELP tend_bytes_dropped_total Output bytes that could not be stored.\n"
	    "# TYPE tend_bytes_dropped_total counter\n"
	    "tend_bytes_dropped_total %llu\n"
	    "# HELP tend_connections Open client connections.\n"
	    "# TYPE tend_connections gauge\n"
	    "tend_connections %d\n"
	    "# HELP tend_followers Active output streams.\n"
	    "# TYPE tend_followers gauge\n"
	    "tend_followers %llu\n",
	    (unsigned long long)t->started, t->nlive,
	    (unsigned long long)t->exited, (unsigned long long)t->orphans,
	    (unsigned long long)t->stored, (unsigned long long)t->dropped,
	    a->srv.nconns, (unsigned long long)a->followers);
	buf_printf(&b,
	    "# HELP tend_log_lines_dropped_total Agent log lines stderr could not take.\n"
	    "# TYPE tend_log_lines_dropped_total counter\n"
	    "tend_log_lines_dropped_total %llu\n"
	    "# HELP tend_state_degraded 1 while the state dir refuses writes "
	    "(see /v1/health).\n"
	    "# TYPE tend_state_degraded gauge\n"
	    "tend_state_degraded %d\n",
	    (unsigned long long)log_dropped(),
	    proctab_state_error(t, NULL, NULL) != 0);
	http_reply(c, 200, "text/plain; version=0.0.4", b.data, b.len);
	buf_free(&b);
}
