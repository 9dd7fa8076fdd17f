/*
 * logs.c: reading a process's stored output — the SSE log stream with
 * cursors, the JSON poll, raw streams, exec, and metrics.
 *
 * A reader never holds output in memory beyond one chunk: the files are
 * the buffer.  Each streaming reply is a `struct follower` that reads the
 * index from its own cursor while its socket takes data, pauses when the
 * connection's output passes HTTP_OUT_HIGH, and resumes on drain or when
 * the process produced more.  One callback sends at most LOGS_PUMP_BYTES
 * and looks at most at LOGS_SCAN_MAX records, then lets the loop serve
 * everyone else before it goes on (follower_defer).
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
#include "log.h"
#include "record.h"
#include "util.h"


enum follow_kind {
	FK_SSE,		/* the bridge's log stream */
	FK_RAW,		/* one stream's raw bytes, chunked */
	FK_EXEC		/* exec's SSE: ends when the root has exited */
};

struct follower {
	struct proc_watch	 w;	/* live process of this boot */
	ev_timer		 beat;	/* SSE heartbeat */
	ev_check		 resume;	/* budget spent: go on next iteration */
	ev_idle			 spin;		/* ... without blocking first */
	ev_timer		 tailwait;	/* the last record stops growing */
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
	uint64_t		 skipped;	/* released bytes not yet reported */
	uint64_t		 pos[LS_NSTREAMS];	/* stream bytes up to seq */
	bool			 known[LS_NSTREAMS];	/* pos[] is */
	uint64_t		 bad, bad_first;	/* damaged records, unlogged */
	int			 scan;		/* records left this callback */
	bool			 follow;
	bool			 live;		/* waits for the process */
	bool			 done;
	char			 boot[33];
	char			 id[PROC_ID_MAX + 1];
	char			 key[PROC_ID_MAX + TIME_MAX + 2];	/* cursors */
};

/* exec's reply: a field per stream */
static const char *const logs_streams[LS_NSTREAMS] = { "stdout", "stderr" };
static char	logs_chunk[LOG_CHUNK];
#define EXEC_PIECE	(sizeof(logs_chunk) / 3 * 3)

/* How a pump call ended. */
enum pump {
	PUMP_DONE,	/* caught up with what is stored */
	PUMP_FULL,	/* the connection takes no more now (or died) */
	PUMP_BUDGET,	/* this callback's share is spent */
	PUMP_TAIL	/* only a last record that may still grow is left */
};

/* What logs_next_rec found. */
enum walk { WALK_REC, WALK_END, WALK_BUDGET, WALK_TAIL };

static void	follower_pump(struct follower *);
static int	follower_dropped(struct follower *);
static void	follower_free(struct follower *);
static void	follower_resume(struct ev_loop *, ev_check *, int);
static void	follower_spin(struct ev_loop *, ev_idle *, int);
static void	follower_tail(struct ev_loop *, ev_timer *, int);
static enum walk logs_next_rec(struct follower *, struct ls_rec *);

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

	codec_time(ts, proc_started_ms(p));
	follower_name(f, proc_boot(p), proc_id(p), ts);
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
	char		 q[64];
	int		 procsfd, rc;

	*pp = NULL;
	switch (api_pin(c, r, true, &procsfd)) {
	case -1:
		return -1;
	case 0:
		if ((*pp = api_proc(c, r)) == NULL)
			return -1;
		if ((f->ls = proc_store(*pp)) == NULL) {
			http_reply_error(c, 500, "internal", "cannot open the "
			    "output of '%s': %s", proc_id(*pp), strerror(errno));
			return -1;
		}
		follower_name_proc(f, *pp);
		return 0;
	}
	rc = proc_id_valid(r->param[0]) ? record_open_ro(procsfd, r->param[0],
	    &f->ro, &f->final) : -1;
	close(procsfd);
	if (rc == -1) {
		http_reply_error(c, 404, "not_found", "no process '%.128s' in "
		    "that boot", r->param[0]);
		return -1;
	}
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
	ev_check_init(&f->resume, follower_resume);
	ev_idle_init(&f->spin, follower_spin);
	ev_timer_init(&f->tailwait, follower_tail, 0., 0.);
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
		return proc_ended(p, PROC_END_ROOT);
	return proc_ended(p, f->follow ? PROC_END_OUTPUT : PROC_END_STATE);
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
 * Records the index bound released (logstore_gone) are passed in one
 * step; their bytes count as skipped.  A reader knows its position in a
 * stream once it has started at the beginning or walked a record of it;
 * where it does not (a cursor older than the index), it counts from the
 * stream's start, so skippedBytes may then include bytes it had got.
 */
static void
logs_skip_gone(struct follower *f)
{
	uint64_t	base[LS_NSTREAMS], gone;
	int		s;

	if ((gone = logstore_gone(f->ls, base)) <= f->seq)
		return;
	for (s = 0; s < LS_NSTREAMS; s++) {
		if (!f->known[s])
			f->pos[s] = 0;
		if (base[s] > f->pos[s])
			f->skipped += base[s] - f->pos[s];
		f->pos[s] = base[s];
		f->known[s] = true;
	}
	f->seq = gone;
}

/* A live follower that is not handed a last record that may grow. */
static bool
follower_waits_tail(struct follower *f)
{
	return f->live && f->seq + 1 == f->ls->nrec && !follower_ended(f) &&
	    logstore_tail_open(f->ls) > 0;
}

/*
 * The record after f->seq; the caller takes it with logs_take.  One that
 * cannot be read or makes no sense (a damaged index) is passed over, so a
 * reader never stalls on it, and counted for follower_log_bad.  At most
 * f->scan records are looked at per callback: a long damaged run is
 * crossed in steps, the loop serving others in between.  A live follower
 * is not handed a last record that may still grow: reading would make it
 * final, and a process writing a byte at a time would then cost a record
 * per write; it gets it once it is closed, LS_MERGE_MS later at most.
 */
static enum walk
logs_next_rec(struct follower *f, struct ls_rec *rec)
{
	struct logstore	*ls = f->ls;

	logs_skip_gone(f);
	while (f->seq < ls->nrec) {
		if (f->scan <= 0)
			return WALK_BUDGET;
		if (follower_waits_tail(f))
			return WALK_TAIL;
		f->scan--;
		if (logstore_rec(ls, f->seq + 1, rec) == 0)
			return WALK_REC;
		if (errno == ERANGE) {		/* released since */
			logs_skip_gone(f);
			continue;
		}
		if (f->bad++ == 0)
			f->bad_first = f->seq + 1;
		f->seq++;
	}
	return WALK_END;
}

/* The reader is past rec. */
static void
logs_take(struct follower *f, const struct ls_rec *rec)
{
	f->seq = rec->seq;
	f->pos[rec->stream] = rec->offset + rec->len;
	f->known[rec->stream] = true;
}

/*
 * Damaged records met since the last line: one line with their count,
 * when the reader has caught up or ends (a JSON poll: once per reply).
 */
static void
follower_log_bad(struct follower *f)
{
	if (f->bad == 0)
		return;
	log_warnx("event=index_records_skipped id=%s boot=%s first=%llu "
	    "count=%llu", f->id, f->boot, (unsigned long long)f->bad_first,
	    (unsigned long long)f->bad);
	f->bad = 0;
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

/* The skipped bytes so far, as a truncated event at cursor seq. */
static int
follower_truncated(struct follower *f, uint64_t seq, int64_t ms)
{
	struct buf	ev = { 0 };
	char		cur[CURSOR_MAX];
	int		rc;

	cursor_format(cur, f->boot, f->key, seq);
	logs_event_head(&ev, "truncated", cur, ms);
	buf_printf(&ev, ",\"skippedBytes\":%llu}",
	    (unsigned long long)f->skipped);
	rc = http_sse_event(f->c, cur, ev.data);
	buf_free(&ev);
	if (rc == 0)
		f->skipped = 0;
	return rc;
}

/*
 * Deliver index records after f->seq while the connection takes them and
 * the callback's budget lasts.  Released bytes are reported in a
 * truncated event before the next bytes delivered, or once caught up;
 * f->skipped keeps them across calls.
 */
static enum pump
follower_pump_sse(struct follower *f)
{
	struct logstore	*ls = f->ls;
	struct ls_rec	 rec;
	struct buf	 ev = { 0 };
	char		 cur[CURSOR_MAX];
	size_t		 n, sent = 0;
	enum pump	 rc = PUMP_FULL;

	for (;;) {
		if (http_conn_pending(f->c) >= HTTP_OUT_HIGH)
			break;
		if (sent >= LOGS_PUMP_BYTES) {
			rc = PUMP_BUDGET;
			break;
		}
		switch (logs_next_rec(f, &rec)) {
		case WALK_REC:
			break;
		case WALK_END:
			if (f->skipped == 0 || follower_truncated(f, f->seq,
			    codec_now_ms()) == 0)
				rc = PUMP_DONE;
			goto out;
		case WALK_BUDGET:
			rc = PUMP_BUDGET;
			goto out;
		case WALK_TAIL:
			rc = PUMP_TAIL;
			goto out;
		}
		n = logs_rec_data(ls, &rec, &f->skipped);
		logs_take(f, &rec);
		if (n == 0)
			continue;
		if (f->skipped > 0 &&
		    follower_truncated(f, rec.seq - 1, rec.ts_ms) == -1)
			break;
		cursor_format(cur, f->boot, f->key, f->seq);
		buf_reset(&ev);
		logs_event_head(&ev, logs_streams[rec.stream], cur, rec.ts_ms);
		buf_addstr(&ev, ",\"data\":\"");
		codec_b64_encode(&ev, logs_chunk, n);
		buf_add(&ev, "\"}", 3);
		if (http_sse_event(f->c, cur, ev.data) == -1)
			break;
		sent += n;
	}
out:
	buf_free(&ev);
	return rc;
}

static enum pump
follower_pump_raw(struct follower *f)
{
	struct logstore	*ls = f->ls;
	ssize_t		 n;
	size_t		 want, sent = 0;

	for (;;) {
		if (http_conn_pending(f->c) >= HTTP_OUT_HIGH)
			return PUMP_FULL;
		if (sent >= LOGS_PUMP_BYTES)
			return PUMP_BUDGET;
		if (f->off < ls->start[f->stream])
			f->off = ls->start[f->stream];
		if (f->off >= ls->end[f->stream])
			return PUMP_DONE;
		want = ls->end[f->stream] - f->off;
		if (want > sizeof(logs_chunk))
			want = sizeof(logs_chunk);
		n = logstore_pread(ls, f->stream, logs_chunk, want, f->off);
		if (n == -1 && errno == ERANGE)
			continue;
		if (n <= 0)
			return PUMP_DONE;
		f->off += n;
		if (http_stream_write(f->c, logs_chunk, n) == -1)
			return PUMP_FULL;
		sent += n;
	}
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

/*
 * Go on at the next loop iteration.  An ev_check runs after every poll,
 * whatever else is pending, so neither a replay nor the others starve:
 * each iteration serves the ready sockets and pipes, then one more share
 * of each pending replay.  (An ev_idle alone would run only when nothing
 * else is pending: a process writing nonstop would stall the replay.  A
 * zero timer would make epoll wait its 1 ms minimum each time.)  The idle
 * watcher is only there so that the loop polls without blocking while a
 * share waits.
 */
static void
follower_defer(struct follower *f)
{
	struct ev_loop	*loop = proctab_loop(f->api->tab);

	ev_check_start(loop, &f->resume);
	ev_idle_start(loop, &f->spin);
}

static void
follower_resume(struct ev_loop *loop, ev_check *w, int revents)
{
	struct follower	*f = container_of(w, struct follower, resume);

	(void)loop;
	(void)revents;
	follower_pump(f);
}

/* Nothing to do: follower_resume runs the share and stops this one. */
static void
follower_spin(struct ev_loop *loop, ev_idle *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

/* The last record may still grow: look again once it cannot. */
static void
follower_wait_tail(struct follower *f)
{
	struct ev_loop	*loop = proctab_loop(f->api->tab);
	int64_t		 ms = logstore_tail_open(f->ls);

	ev_timer_stop(loop, &f->tailwait);
	ev_timer_set(&f->tailwait, (ms > 0 ? ms : 1) / 1000., 0.);
	ev_timer_start(loop, &f->tailwait);
}

static void
follower_tail(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct follower	*f = container_of(w, struct follower, tailwait);

	(void)loop;
	(void)revents;
	follower_pump(f);
}

static void
follower_pump(struct follower *f)
{
	struct ev_loop	*loop = proctab_loop(f->api->tab);
	enum pump	 rc;

	ev_check_stop(loop, &f->resume);
	ev_idle_stop(loop, &f->spin);
	if (f->done || http_conn_dead(f->c))
		return;
	f->scan = LOGS_SCAN_MAX;
	rc = f->kind == FK_RAW ? follower_pump_raw(f) : follower_pump_sse(f);
	if (http_conn_dead(f->c))
		return;
	switch (rc) {
	case PUMP_FULL:
		return;			/* follower_drained goes on */
	case PUMP_BUDGET:
		follower_defer(f);
		return;
	case PUMP_TAIL:
		follower_wait_tail(f);
		return;
	case PUMP_DONE:
		break;
	}
	follower_log_bad(f);
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
	follower_log_bad(f);
	ev_timer_stop(proctab_loop(a->tab), &f->beat);
	ev_timer_stop(proctab_loop(a->tab), &f->tailwait);
	ev_check_stop(proctab_loop(a->tab), &f->resume);
	ev_idle_stop(proctab_loop(a->tab), &f->spin);
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
	f->live = f->kind != FK_RAW && (f->follow || f->kind == FK_EXEC);
	if (p != NULL)
		proc_watch_add(p, &f->w, follower_event);
	ev_timer_init(&f->beat, follower_beat, SSE_HEARTBEAT, SSE_HEARTBEAT);
	if (f->kind == FK_RAW)
		rc = http_stream_begin(c, 200, "application/octet-stream",
		    HTTP_FRAME_CHUNKED, NULL);
	else {
		rc = http_sse_begin(c);
		ev_timer_start(proctab_loop(f->api->tab), &f->beat);
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

/*
 * Where the reader stands in each stream, when that is known without a
 * walk: at the start, or at the end of what is stored (records 1..nrec
 * cover each stream from 0 to its end).
 */
static void
logs_start_pos(struct follower *f)
{
	int	s;

	if (f->seq != 0 && f->seq != f->ls->nrec)
		return;
	for (s = 0; s < LS_NSTREAMS; s++) {
		f->pos[s] = f->seq == 0 ? 0 : f->ls->end[s];
		f->known[s] = true;
	}
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
	logs_start_pos(f);
	return 0;
}

/*
 * The poll's reply, written as text: base64 and cursors need no escaping,
 * and a cJSON tree would copy each stream's text and scan it again (for
 * 16 MiB of output, half the time the reply holds the loop).
 */
static int
logs_json_text(struct buf *out, struct buf data[LS_NSTREAMS],
    const char *cur, bool ended, uint64_t skipped)
{
	int	s, rc = 0;

	for (s = 0; s < LS_NSTREAMS; s++) {
		rc |= buf_printf(out, "%s\"%s\":\"", s ? "," : "{",
		    logs_streams[s]);
		rc |= codec_b64_encode(out, data[s].data, data[s].len);
		rc |= buf_addstr(out, "\"");
	}
	rc |= buf_printf(out, ",\"cursor\":\"%s\",\"ended\":%s", cur,
	    ended ? "true" : "false");
	/* tend addition: bytes the disk bound released before they were read. */
	if (skipped > 0)
		rc |= buf_printf(out, ",\"skippedBytes\":%llu",
		    (unsigned long long)skipped);
	rc |= buf_addstr(out, "}");
	return rc;
}

/*
 * Accept: application/json — what exists now after since, bounded by
 * limitBytes and by LOGS_SCAN_MAX records looked at.
 */
static void
logs_json(struct http_conn *c, struct http_req *r, struct follower *f)
{
	struct ls_rec	 rec;
	struct buf	 data[LS_NSTREAMS] = { { 0 }, { 0 } }, out = { 0 };
	char		 cur[CURSOR_MAX];
	uint64_t	 limit = LOGS_JSON_LIMIT, total = 0;
	size_t		 n;
	bool		 ended;
	int		 s, rc = 0;

	if (http_query_u64(r, "limitBytes", &limit) == -1 || limit == 0) {
		http_reply_error(c, 400, "invalid_request",
		    "limitBytes: must be a positive integer");
		return;
	}
	/* A reply is built in memory: larger asks get the cap. */
	if (limit > LOGS_JSON_LIMIT_CAP)
		limit = LOGS_JSON_LIMIT_CAP;
	f->scan = LOGS_SCAN_MAX;
	while (logs_next_rec(f, &rec) == WALK_REC) {
		if (total > 0 && total + rec.len > limit)
			break;
		n = logs_rec_data(f->ls, &rec, &f->skipped);
		logs_take(f, &rec);
		rc |= buf_add(&data[rec.stream], logs_chunk, n);
		total += n;
	}
	follower_log_bad(f);
	ended = follower_ended(f) && f->seq >= f->ls->nrec;
	cursor_format(cur, f->boot, f->key, f->seq);
	if (rc == 0)
		rc = logs_json_text(&out, data, cur, ended, f->skipped);
	for (s = 0; s < LS_NSTREAMS; s++)
		buf_free(&data[s]);
	if (rc != 0)
		http_reply_error(c, 503, "busy", "out of memory");
	else
		http_reply(c, 200, "application/json", out.data, out.len);
	buf_free(&out);
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
	struct logstore		*ls = proc_store(p);	/* watched: open */
	struct buf		 b64 = { 0 };
	uint64_t		 want, off;
	bool			 truncated = false;
	ssize_t			 n;
	cJSON			*j;
	int			 s;

	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "id", proc_id(p));
	cJSON_AddItemToObject(j, "exit", proc_exit_json(p));
	for (s = 0; s < LS_NSTREAMS; s++) {
		buf_reset(&b64);
		off = ls->start[s];
		want = ls->end[s] - off;
		if (off > 0 || want > x->max)
			truncated = true;
		if (want > x->max)
			want = x->max;
		while (want > 0) {
			/* Pieces of 3k bytes: no padding inside the text. */
			n = logstore_pread(ls, s, logs_chunk,
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
	cJSON_AddNumberToObject(j, "droppedBytes", (double)ls->dropped);
	cJSON_AddBoolToObject(j, "truncated", truncated || ls->dropped > 0);
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
		if (!api_integer(fi, 0, EXEC_MAX_OUTPUT_ASK)) {
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
		f->ls = proc_store(p);	/* running: its files are open */
		logs_start_pos(f);
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
	if (proc_ended(p, PROC_END_ROOT))
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
	struct api		*a = api_of(c);
	struct proctab		*t = a->tab;
	struct proctab_stats	 st;
	struct buf		 b = { 0 };

	(void)r;
	proctab_stats(t, &st);
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
	    (unsigned long long)st.started, st.running,
	    (unsigned long long)st.exited, (unsigned long long)st.orphans,
	    (unsigned long long)st.stored, (unsigned long long)st.dropped,
	    http_server_nconns(a->srv), (unsigned long long)a->followers);
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
