/*
 * follow.c: the cursor → logstore → sink pump shared by every reader of
 * stored output (the SSE log stream, raw streams, exec's SSE, the JSON
 * poll; soon a terminal's replay).  It owns the walk of the index
 * (released and damaged records, the tail that may still grow), the
 * accounting of skipped bytes, the budget of one callback and the
 * heartbeat; the sink owns the transport.  Whether the resource has
 * ended is asked of it (proc_ended, term_ended), never re-derived here.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "base/log.h"
#include "base/turn.h"
#include "base/util.h"
#include "follow.h"

struct follow {
	struct job_watch	 w;		/* the live process or terminal,
						   once started */
	ev_timer		 beat;		/* heartbeat */
	struct turn		 resume;	/* budget spent: go on next turn */
	ev_timer		 tailwait;	/* the last record stops growing */
	struct ev_loop		*loop;
	struct logstore		*ls;
	struct proc		*proc;		/* NULL: a closed record */
	struct term		*term;		/* a terminal's (proc NULL) */
	enum proc_end		 until;
	struct follow_opts	 o;
	const struct follow_sink *sink;
	void			*ctx;
	uint64_t		 seq;	/* last index record delivered */
	uint64_t		 off;	/* FOLLOW_BYTES: next offset */
	uint64_t		 dropped;	/* drops told */
	uint64_t		 skipped;	/* released bytes not yet reported */
	uint64_t		 pos[LS_NSTREAMS];	/* stream bytes up to seq */
	bool			 known[LS_NSTREAMS];	/* pos[] is */
	uint64_t		 bad, bad_first;	/* damaged records, unlogged */
	int			 scan;		/* records left this callback */
	bool			 live;		/* waits for the process */
	bool			 done;		/* the sink was told the end */
	/* A record sent in pieces (o.piece), read from the store as it goes. */
	bool			 in_part;
	struct ls_rec		 part;
	uint64_t		 part_off;	/* its next byte to send */
	/* The JSON poll (follow_poll_start): a stream's records (pfrom, pto]. */
	bool			 polling;
	int			 pstream;	/* the stream being sent */
	uint64_t		 pfrom[LS_NSTREAMS], pto[LS_NSTREAMS];
	uint64_t		 pseq;		/* the last looked at */
	uint64_t		 pstart[LS_NSTREAMS];	/* retained from, planned */
	uint64_t		 pkept, psent;	/* bytes planned, and sent */
	uint64_t		 pskipped;	/* skipped, planned */
	char			 boot[33];
	char			 id[PROC_ID_MAX + 1];
	char			 key[PROC_ID_MAX + TIME_MAX + 2];	/* cursors */
};

/* One chunk at a time: a reader holds no more in memory. */
static char	follow_buf[LOG_CHUNK];

/* How a pump call ended. */
enum pump {
	PUMP_DONE,	/* caught up with what is stored */
	PUMP_FULL,	/* the sink takes no more now (or died) */
	PUMP_BUDGET,	/* this callback's share is spent */
	PUMP_TAIL	/* only a last record that may still grow is left */
};

/* What follow_next_rec found. */
enum walk { WALK_REC, WALK_END, WALK_BUDGET, WALK_TAIL };

static void	follow_pump(struct follow *);
static void	follow_resume(struct ev_loop *, ev_check *, int);
static void	follow_tail(struct ev_loop *, ev_timer *, int);
static void	follow_beat(struct ev_loop *, ev_timer *, int);

/* ------------------------------------------------------------------ */
/* Opening */

/*
 * Cursors name the record, not only its ID: "<id>@<startedAt>", so that a
 * cursor of a removed record does not fit a later one with the same ID.
 */
struct follow *
follow_new(struct ev_loop *loop, const struct follow_src *src,
    const struct follow_opts *o)
{
	struct follow	*f;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return NULL;
	f->loop = loop;
	f->ls = src->ls;
	f->proc = src->proc;
	f->term = src->term;
	f->until = src->until;
	f->o = *o;
	f->off = o->offset;
	snprintf(f->boot, sizeof(f->boot), "%.32s", src->boot);
	snprintf(f->id, sizeof(f->id), "%.128s", src->id);
	snprintf(f->key, sizeof(f->key), "%.128s@%.31s", src->id,
	    src->started);
	turn_init(&f->resume, follow_resume);
	ev_timer_init(&f->tailwait, follow_tail, 0., 0.);
	ev_timer_init(&f->beat, follow_beat, SSE_HEARTBEAT, SSE_HEARTBEAT);
	return f;
}

/*
 * Where the reader stands in each stream, when that is known without a
 * walk: at the start, or at the end of what is stored (records 1..nrec
 * cover each stream from 0 to its end).
 */
static void
follow_start_pos(struct follow *f)
{
	int	s;

	if (f->seq != 0 && f->seq != f->ls->nrec)
		return;
	for (s = 0; s < LS_NSTREAMS; s++) {
		f->pos[s] = f->seq == 0 ? 0 : f->ls->end[s];
		f->known[s] = true;
	}
}

int
follow_seek(struct follow *f, const char *since, bool replay)
{
	if (since != NULL && since[0] != '\0' &&
	    (cursor_parse(since, f->boot, f->key, &f->seq) == -1 ||
	    f->seq > f->ls->nrec))
		return -1;
	if (!replay && f->seq < f->ls->nrec) {
		logstore_seal(f->ls);	/* later bytes go to new records */
		f->seq = f->ls->nrec;
	}
	follow_start_pos(f);
	return 0;
}

/* Has the resource ended, for this reader's purpose?  Ask it. */
static bool
follow_ended(struct follow *f)
{
	if (f->term != NULL)
		return term_ended(f->term);
	return f->proc == NULL || proc_ended(f->proc, f->until);
}

bool
follow_done(struct follow *f)
{
	return follow_ended(f) && f->seq >= f->ls->nrec;
}

struct proc *
follow_proc(struct follow *f)
{
	return f->proc;
}

struct term *
follow_term(struct follow *f)
{
	return f->term;
}

void
follow_cursor(struct follow *f, char out[CURSOR_MAX])
{
	cursor_format(out, f->boot, f->key, f->seq);
}

uint64_t
follow_skipped(struct follow *f)
{
	return f->skipped;
}

/* ------------------------------------------------------------------ */
/* The walk of the index */

/*
 * Records the index bound released (logstore_gone) are passed in one
 * step; their bytes count as skipped.  A reader knows its position in a
 * stream once it has started at the beginning or walked a record of it;
 * where it does not (a cursor older than the index), it counts from the
 * stream's start, so skippedBytes may then include bytes it had got.
 */
static void
follow_skip_gone(struct follow *f)
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
follow_waits_tail(struct follow *f)
{
	if (!f->live || f->seq + 1 != f->ls->nrec || follow_ended(f) ||
	    logstore_tail_open(f->ls) <= 0)
		return false;
	if (!f->o.eager)
		return true;
	logstore_seal(f->ls);	/* later bytes go to a new record */
	return false;
}

/*
 * The record after f->seq; the caller takes it with follow_take.  One
 * that cannot be read or makes no sense (a damaged index) is passed over,
 * so a reader never stalls on it, and counted for follow_log_bad.  At
 * most f->scan records are looked at per callback: a long damaged run is
 * crossed in steps, the loop serving others in between.  A live follower
 * is not handed a last record that may still grow: reading would make it
 * final, and a process writing a byte at a time would then cost a record
 * per write; it gets it once it is closed, LS_MERGE_MS later at most
 * (an eager one, a terminal's keystroke echo, takes it now and closes it).
 */
static enum walk
follow_next_rec(struct follow *f, struct ls_rec *rec)
{
	struct logstore	*ls = f->ls;

	follow_skip_gone(f);
	while (f->seq < ls->nrec) {
		if (f->scan <= 0)
			return WALK_BUDGET;
		if (follow_waits_tail(f))
			return WALK_TAIL;
		f->scan--;
		if (logstore_rec(ls, f->seq + 1, rec) == 0)
			return WALK_REC;
		if (errno == ERANGE) {		/* released since */
			follow_skip_gone(f);
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
follow_take(struct follow *f, const struct ls_rec *rec)
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
follow_log_bad(struct follow *f)
{
	if (f->bad == 0)
		return;
	log_warnx("event=index_records_skipped id=%s boot=%s first=%llu "
	    "count=%llu", f->id, f->boot, (unsigned long long)f->bad_first,
	    (unsigned long long)f->bad);
	f->bad = 0;
}

/* The bytes of rec before start (released). */
static uint64_t
follow_rec_skip(const struct ls_rec *rec, uint64_t start)
{
	if (rec->offset >= start)
		return 0;
	return start - rec->offset < rec->len ? start - rec->offset :
	    rec->len;
}

/*
 * The retained part of a record, read into follow_buf: its length (0
 * when the disk bound released all of it); released bytes add to
 * f->skipped.
 */
static size_t
follow_rec_data(struct follow *f, const struct ls_rec *rec)
{
	uint64_t	skip = follow_rec_skip(rec, f->ls->start[rec->stream]);
	ssize_t		n = 0;

	if (skip < rec->len) {
		n = logstore_pread(f->ls, rec->stream, follow_buf,
		    rec->len - skip, rec->offset + skip);
		if (n < 0)
			n = 0;
	}
	f->skipped += rec->len - n;
	return n;
}

/* ------------------------------------------------------------------ */
/* Pumps */

/* The skipped bytes so far, as a gap at cursor seq. */
static int
follow_gap_skipped(struct follow *f, uint64_t seq, int64_t ms)
{
	struct follow_gap	g = { 0 };
	char			cur[CURSOR_MAX];

	cursor_format(cur, f->boot, f->key, seq);
	g.cursor = cur;
	g.ts_ms = ms;
	g.skipped = f->skipped;
	if (f->sink->gap(f->ctx, &g) == -1)
		return -1;
	f->skipped = 0;
	return 0;
}

/*
 * Bytes the disk refused take no offset and no chunk, so the walk of
 * the index never meets them: a reader that tells of them does so as
 * they grow, in a gap at its position of the moment.
 */
static int
follow_gap_dropped(struct follow *f)
{
	struct follow_gap	g;
	char			cur[CURSOR_MAX];

	if (f->ls->dropped <= f->dropped)
		return 0;
	g.skipped = g.dropped = f->ls->dropped - f->dropped;
	f->dropped = f->ls->dropped;
	cursor_format(cur, f->boot, f->key, f->seq);
	g.cursor = cur;
	g.ts_ms = codec_now_ms();
	return f->sink->gap(f->ctx, &g);
}

static bool
follow_full(struct follow *f)
{
	return f->sink->pending(f->ctx) >= f->sink->high;
}

/* The n bytes of rec in follow_buf to the sink, at cursor cur. */
static int
follow_emit(struct follow *f, const struct ls_rec *rec, size_t n,
    const char *cur)
{
	struct follow_chunk	ch;

	ch.stream = rec->stream;
	ch.seq = rec->seq;
	ch.offset = rec->offset + (rec->len - n);
	ch.data = follow_buf;
	ch.len = n;
	ch.ts_ms = rec->ts_ms;
	ch.cursor = cur;
	return f->sink->chunk(f->ctx, &ch);
}

/* One index record to a stream, after the gap before it: -1 if refused. */
static int
follow_send_rec(struct follow *f, const struct ls_rec *rec, size_t n)
{
	char	cur[CURSOR_MAX];

	if (f->skipped > 0 &&
	    follow_gap_skipped(f, rec->seq - 1, rec->ts_ms) == -1)
		return -1;
	cursor_format(cur, f->boot, f->key, f->seq);
	return follow_emit(f, rec, n, cur);
}

/* rec is sent in pieces from off (bytes before it are not its reader's). */
static void
follow_part_begin(struct follow *f, const struct ls_rec *rec, uint64_t off)
{
	f->part = *rec;
	f->part_off = off > rec->offset ? off : rec->offset;
	f->in_part = true;
}

/*
 * The rest of f->part, in pieces of at most o.piece bytes (a stored chunk
 * without it), each read from the store as it is sent, while the sink
 * takes them and the callback's share lasts: a sink that pauses between
 * pieces holds one piece, not a chunk, and the files hold the rest.
 * Bytes the disk bound releases meanwhile are skipped.  PUMP_DONE once
 * all of it is sent.  Every piece carries the cursor after the record.
 */
static enum pump
follow_pump_part(struct follow *f, size_t *sent)
{
	const struct ls_rec	*rec = &f->part;
	struct follow_chunk	 ch;
	uint64_t		 end = rec->offset + rec->len, start;
	size_t			 want, piece;
	ssize_t			 n;
	char			 cur[CURSOR_MAX];

	piece = f->o.piece > 0 && f->o.piece < sizeof(follow_buf) ?
	    f->o.piece : sizeof(follow_buf);
	cursor_format(cur, f->boot, f->key, rec->seq);
	while (f->in_part) {
		start = f->ls->start[rec->stream];
		if (f->part_off < start) {
			start = start < end ? start : end;
			f->skipped += start - f->part_off;
			f->part_off = start;
		}
		if (f->part_off >= end)
			break;
		if (follow_full(f))
			return PUMP_FULL;
		if (*sent >= LOGS_PUMP_BYTES)
			return PUMP_BUDGET;
		if (!f->polling && f->skipped > 0 &&
		    follow_gap_skipped(f, rec->seq - 1, rec->ts_ms) == -1)
			return PUMP_FULL;
		want = end - f->part_off < piece ? end - f->part_off : piece;
		n = logstore_pread(f->ls, rec->stream, follow_buf, want,
		    f->part_off);
		if (n == -1 && errno == ERANGE)
			continue;		/* released since: skipped above */
		if (n <= 0) {
			f->skipped += end - f->part_off;	/* unreadable */
			break;
		}
		ch.stream = rec->stream;
		ch.seq = rec->seq;
		ch.offset = f->part_off;
		ch.data = follow_buf;
		ch.len = n;
		ch.ts_ms = rec->ts_ms;
		ch.cursor = cur;
		f->part_off += n;
		f->psent += n;
		*sent += n;
		if (f->sink->chunk(f->ctx, &ch) == -1)
			return PUMP_FULL;
	}
	f->in_part = false;
	return PUMP_DONE;
}

/*
 * Deliver index records after f->seq while the sink takes them and the
 * callback's budget lasts.  Released bytes are reported in a gap before
 * the next bytes delivered, or once caught up; f->skipped keeps them
 * across calls.
 */
static enum pump
follow_pump_records(struct follow *f)
{
	struct ls_rec	rec;
	size_t		n, sent = 0;
	enum pump	rc;

	for (;;) {
		if (f->in_part && (rc = follow_pump_part(f, &sent)) != PUMP_DONE)
			return rc;
		if (follow_full(f))
			return PUMP_FULL;
		if (sent >= LOGS_PUMP_BYTES)
			return PUMP_BUDGET;
		switch (follow_next_rec(f, &rec)) {
		case WALK_REC:
			break;
		case WALK_END:
			if (f->skipped == 0 || follow_gap_skipped(f, f->seq,
			    codec_now_ms()) == 0)
				return PUMP_DONE;
			return PUMP_FULL;
		case WALK_BUDGET:
			return PUMP_BUDGET;
		case WALK_TAIL:
			return PUMP_TAIL;
		}
		if (f->o.piece > 0) {
			follow_take(f, &rec);
			follow_part_begin(f, &rec, rec.offset);
			continue;
		}
		n = follow_rec_data(f, &rec);
		follow_take(f, &rec);
		if (n == 0)
			continue;
		if (follow_send_rec(f, &rec, n) == -1)
			return PUMP_FULL;
		sent += n;
	}
}

/*
 * Nothing more will be written to the store (nor released from it by
 * the disk bound): its files can go to the sink as they are.
 */
static bool
follow_final(struct follow *f)
{
	return f->term == NULL &&
	    (f->proc == NULL || proc_ended(f->proc, PROC_END_OUTPUT));
}

static enum pump
follow_pump_bytes(struct follow *f)
{
	struct follow_chunk	 ch = { 0 };
	struct logstore		*ls = f->ls;
	int			 s = f->o.stream;
	ssize_t			 n;
	size_t			 want, sent = 0;

	for (;;) {
		if (follow_full(f))
			return PUMP_FULL;
		if (sent >= LOGS_PUMP_BYTES)
			return PUMP_BUDGET;
		if (f->off < ls->start[s])
			f->off = ls->start[s];
		if (f->off >= ls->end[s])
			return PUMP_DONE;
		want = ls->end[s] - f->off;
		if (f->sink->file != NULL && ls->fd[s] != -1 &&
		    follow_final(f)) {
			if (want > LOGS_PUMP_BYTES - sent)
				want = LOGS_PUMP_BYTES - sent;
			if ((n = f->sink->file(f->ctx, ls->fd[s], &f->off,
			    want)) <= 0)
				return PUMP_FULL;
			sent += n;
			continue;
		}
		if (want > sizeof(follow_buf))
			want = sizeof(follow_buf);
		n = logstore_pread(ls, s, follow_buf, want, f->off);
		if (n == -1 && errno == ERANGE)
			continue;
		if (n <= 0)
			return PUMP_DONE;
		ch.stream = s;
		ch.offset = f->off;
		ch.data = follow_buf;
		ch.len = n;
		f->off += n;
		if (f->sink->chunk(f->ctx, &ch) == -1)
			return PUMP_FULL;
		sent += n;
	}
}

/*
 * The JSON poll's records, a stream at a time in the reply's order (every
 * stdout byte, then every stderr byte), each walk over the records from
 * the stream's first chosen one with bytes to its last.  Records released
 * from the index since the poll was planned are passed in one step.
 */
static enum pump
follow_pump_poll(struct follow *f)
{
	struct ls_rec	rec;
	uint64_t	base[LS_NSTREAMS], gone, to;
	size_t		sent = 0;
	enum pump	rc;

	for (;;) {
		if (f->in_part && (rc = follow_pump_part(f, &sent)) != PUMP_DONE)
			return rc;
		if (f->pseq >= (to = f->pto[f->pstream])) {
			if (++f->pstream >= LS_NSTREAMS)
				return PUMP_DONE;
			f->pseq = f->pfrom[f->pstream];
			continue;
		}
		if ((gone = logstore_gone(f->ls, base)) > f->pseq) {
			f->pseq = gone < to ? gone : to;
			continue;
		}
		if (f->scan <= 0)
			return PUMP_BUDGET;
		f->scan--;
		f->pseq++;
		if (logstore_rec(f->ls, f->pseq, &rec) == 0 &&
		    rec.stream == (uint32_t)f->pstream)
			follow_part_begin(f, &rec, f->pstart[rec.stream]);
	}
}

static void
follow_resume(struct ev_loop *loop, ev_check *w, int revents)
{
	(void)loop;
	(void)revents;
	follow_pump(container_of(w, struct follow, resume.check));
}

/* The last record may still grow: look again once it cannot. */
static void
follow_wait_tail(struct follow *f)
{
	int64_t	ms = logstore_tail_open(f->ls);

	ev_timer_stop(f->loop, &f->tailwait);
	ev_timer_set(&f->tailwait, (ms > 0 ? ms : 1) / 1000., 0.);
	ev_timer_start(f->loop, &f->tailwait);
}

static void
follow_tail(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	follow_pump(container_of(w, struct follow, tailwait));
}

/* The last word: the sink owns the follow from here. */
static void
follow_end(struct follow *f, enum follow_why why)
{
	char	cur[CURSOR_MAX];

	f->done = true;
	cursor_format(cur, f->boot, f->key, f->ls->nrec);
	f->sink->end(f->ctx, why, cur);
}

/*
 * The poll is sent: what it planned to send and could not (released by
 * the disk bound meanwhile) is skipped too.
 */
static void
follow_poll_end(struct follow *f)
{
	char	cur[CURSOR_MAX];

	f->skipped = f->pskipped + (f->pkept > f->psent ? f->pkept - f->psent :
	    0);
	f->done = true;
	cursor_format(cur, f->boot, f->key, f->seq);
	f->sink->end(f->ctx, FOLLOW_CAUGHT_UP, cur);
}

static void
follow_pump(struct follow *f)
{
	enum pump	rc;

	turn_stop(f->loop, &f->resume);
	if (f->done || f->sink->pending(f->ctx) == FOLLOW_SINK_DEAD)
		return;
	f->scan = LOGS_SCAN_MAX;
	if (f->polling)
		rc = follow_pump_poll(f);
	else
		rc = f->o.walk == FOLLOW_BYTES ? follow_pump_bytes(f) :
		    follow_pump_records(f);
	if (f->sink->pending(f->ctx) == FOLLOW_SINK_DEAD)
		return;
	switch (rc) {
	case PUMP_FULL:
		return;			/* follow_drained goes on */
	case PUMP_BUDGET:
		turn_start(f->loop, &f->resume);	/* the next share */
		return;
	case PUMP_TAIL:
		follow_wait_tail(f);
		return;
	case PUMP_DONE:
		break;
	}
	if (f->polling) {
		follow_poll_end(f);
		return;
	}
	follow_log_bad(f);
	if (f->o.tell_dropped && follow_gap_dropped(f) == -1)
		return;
	if (follow_ended(f))
		follow_end(f, FOLLOW_ENDED);
	else if (!f->o.follow)
		follow_end(f, FOLLOW_CAUGHT_UP);
	/* else more comes with JOB_EV_OUTPUT */
}

/* ------------------------------------------------------------------ */
/* Plumbing */

static void
follow_event(struct job_watch *w, enum job_event ev)
{
	struct follow	*f = container_of(w, struct follow, w);

	if (ev == JOB_EV_GONE) {
		f->term = NULL;		/* the watch is already off */
		if (!f->done)
			follow_end(f, FOLLOW_GONE);
		return;
	}
	follow_pump(f);
}

static void
follow_beat(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct follow	*f = container_of(t, struct follow, beat);

	(void)loop;
	(void)revents;
	(void)f->sink->beat(f->ctx);
}

/* The sink, and the resource watched: its output, its end, its removal. */
static void
follow_attach(struct follow *f, const struct follow_sink *sink, void *ctx)
{
	f->sink = sink;
	f->ctx = ctx;
	if (f->proc != NULL)
		job_watch_add(proc_job(f->proc), &f->w, follow_event);
	else if (f->term != NULL)
		job_watch_add(term_job(f->term), &f->w, follow_event);
}

void
follow_start(struct follow *f, const struct follow_sink *sink, void *ctx)
{
	f->live = f->o.walk == FOLLOW_RECORDS && f->o.follow;
	follow_attach(f, sink, ctx);
	if (sink->beat != NULL)
		ev_timer_start(f->loop, &f->beat);
	follow_pump(f);
}

void
follow_drained(struct follow *f)
{
	follow_pump(f);
}

void
follow_poll_start(struct follow *f, const struct follow_sink *sink,
    void *ctx, uint64_t limit)
{
	struct ls_rec	rec;
	uint64_t	total = 0, n;
	int		s;

	f->polling = true;
	f->scan = LOGS_SCAN_MAX;
	for (s = 0; s < LS_NSTREAMS; s++)
		f->pstart[s] = f->ls->start[s];
	while (follow_next_rec(f, &rec) == WALK_REC) {
		if (total > 0 && total + rec.len > limit)
			break;
		n = rec.len - follow_rec_skip(&rec, f->pstart[rec.stream]);
		/* Released bytes are told once, in the reply (skippedBytes). */
		f->skipped += rec.len - n;
		f->pkept += n;
		total += n;
		follow_take(f, &rec);
		if (n == 0)
			continue;
		if (f->pto[rec.stream] == 0)
			f->pfrom[rec.stream] = rec.seq - 1;
		f->pto[rec.stream] = rec.seq;
	}
	follow_log_bad(f);
	f->pseq = f->pfrom[0];
	f->pskipped = f->skipped;
	follow_attach(f, sink, ctx);
	follow_pump(f);
}

void
follow_free(struct follow *f)
{
	if (f == NULL)
		return;
	job_watch_del(&f->w);
	follow_log_bad(f);
	ev_timer_stop(f->loop, &f->beat);
	ev_timer_stop(f->loop, &f->tailwait);
	turn_stop(f->loop, &f->resume);
	free(f);
}
