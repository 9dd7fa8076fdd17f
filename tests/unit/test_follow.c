/*
 * follow: the pump from a record's store into a sink — replay in order
 * with cursors, the callback's byte budget, pausing on a full sink and
 * resuming on drain, where a cursor starts, the bounded poll (streamed,
 * stream by stream), records in pieces, and the byte walk of one stream.  The records are closed ones (no process):
 * "ended" is then the resource's answer from the start.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "core/follow.h"
#include "testutil.h"

Suite *follow_suite(void);

static const char *const names2[] = { "stdout", "stderr" };

static char		 tdir_path[96];
static int		 tdir = -1;
static struct logstore	 ls;
static struct ev_loop	*loop;

/* What a test sink saw. */
struct tsink {
	struct follow	*f;
	size_t		 chunks, bytes, gaps, pending;
	uint64_t	 last_seq, skipped;
	int		 ends;
	enum follow_why	 why;
	char		 first_cursor[CURSOR_MAX], end_cursor[CURSOR_MAX];
	int		 stream_bytes[LS_NSTREAMS];
	uint64_t	 next_off;
	bool		 in_order;
};

static void
setup(void)
{
	tdir = tu_tmpdir(tdir_path, sizeof(tdir_path), "/tmp/tend-follow-");
	ck_assert_int_eq(logstore_create(&ls, tdir, LS_NSTREAMS, names2, 0),
	    0);
	loop = ev_loop_new(EVFLAG_AUTO);
}

static void
teardown(void)
{
	logstore_close(&ls);
	ev_loop_destroy(loop);
	close(tdir);
	tu_rmtree(tdir_path);
}

/* n records of len bytes each, alternating streams, each one final. */
static void
put_recs(int n, size_t len)
{
	static char	d[LOG_CHUNK];
	int		i;

	memset(d, 'x', sizeof(d));
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(logstore_append(&ls, i % 2, d, len), 0);
		logstore_seal(&ls);
	}
}

static int
ts_chunk(void *ctx, const struct follow_chunk *ch)
{
	struct tsink	*t = ctx;

	if (t->chunks == 0 && ch->cursor != NULL)
		snprintf(t->first_cursor, sizeof(t->first_cursor), "%s",
		    ch->cursor);
	if (ch->seq != 0 && ch->seq <= t->last_seq)
		t->in_order = false;
	if (ch->seq == 0 && ch->offset != t->next_off)
		t->in_order = false;
	t->last_seq = ch->seq;
	t->next_off = ch->offset + ch->len;
	t->chunks++;
	t->bytes += ch->len;
	t->stream_bytes[ch->stream] += ch->len;
	return 0;
}

static int
ts_gap(void *ctx, const struct follow_gap *g)
{
	struct tsink	*t = ctx;

	t->gaps++;
	t->skipped += g->skipped;
	return 0;
}

static void
ts_end(void *ctx, enum follow_why why, const char *cursor)
{
	struct tsink	*t = ctx;

	t->ends++;
	t->why = why;
	snprintf(t->end_cursor, sizeof(t->end_cursor), "%s", cursor);
}

static size_t
ts_pending(void *ctx)
{
	return ((struct tsink *)ctx)->pending;
}

static const struct follow_sink tsink_sink = {
	ts_chunk, ts_gap, ts_end, NULL, ts_pending, 1000, NULL
};

static struct follow *
open_follow(enum follow_walk walk, int stream, uint64_t off)
{
	struct follow_src	src = { 0 };
	struct follow_opts	o = { 0 };
	struct follow		*f;

	src.ls = &ls;
	src.boot = "0123456789abcdef0123456789abcdef";
	src.id = "p1";
	src.started = "2026-01-01T00:00:00.000Z";
	src.until = PROC_END_STATE;
	o.walk = walk;
	o.stream = stream;
	o.offset = off;
	ck_assert_ptr_nonnull(f = follow_new(loop, &src, &o));
	return f;
}

/* A follow of every record, started into t. */
static struct follow *
replay_into(struct tsink *t)
{
	struct follow	*f = open_follow(FOLLOW_RECORDS, 0, 0);

	ck_assert_int_eq(follow_seek(f, NULL, true), 0);
	follow_start(f, &tsink_sink, t);
	return f;
}

static bool
ts_ended(void *arg)
{
	return ((struct tsink *)arg)->ends > 0;
}

START_TEST(replays_all_in_order_then_ends)
{
	struct tsink	t = { .in_order = true };
	struct follow	*f;
	uint64_t	seq;

	put_recs(10, 100);
	f = replay_into(&t);
	ck_assert_int_eq(t.ends, 1);
	ck_assert_int_eq(t.why, FOLLOW_ENDED);
	ck_assert_uint_eq(t.chunks, 10);
	ck_assert_uint_eq(t.bytes, 1000);
	ck_assert_int_eq(t.stream_bytes[0], 500);
	ck_assert(t.in_order);
	ck_assert_uint_eq(t.gaps, 0);
	/* The first chunk's cursor names record 1, the end's the last. */
	ck_assert_int_eq(cursor_parse(t.first_cursor,
	    "0123456789abcdef0123456789abcdef",
	    "p1@2026-01-01T00:00:00.000Z", &seq), 0);
	ck_assert_uint_eq(seq, 1);
	ck_assert_int_eq(cursor_parse(t.end_cursor,
	    "0123456789abcdef0123456789abcdef",
	    "p1@2026-01-01T00:00:00.000Z", &seq), 0);
	ck_assert_uint_eq(seq, 10);
	follow_free(f);
}
END_TEST

/* One callback sends at most LOGS_PUMP_BYTES; the loop does the rest. */
START_TEST(budget_per_callback)
{
	struct tsink	 t = { .in_order = true };
	struct follow	*f;
	int		 n = (LOGS_PUMP_BYTES / LOG_CHUNK) * 3;

	put_recs(n, LOG_CHUNK);
	f = replay_into(&t);
	ck_assert_int_eq(t.ends, 0);
	ck_assert_uint_le(t.bytes, LOGS_PUMP_BYTES);
	ck_assert_uint_gt(t.bytes, 0);
	ck_assert(tu_run_until(loop, ts_ended, &t, 10));
	ck_assert_uint_eq(t.bytes, (size_t)n * LOG_CHUNK);
	ck_assert(t.in_order);
	follow_free(f);
}
END_TEST

/* A full sink stops the pump; a drain starts it again. */
START_TEST(pauses_when_full_resumes_on_drain)
{
	struct tsink	 t = { .in_order = true, .pending = 5000 };
	struct follow	*f;

	put_recs(4, 100);
	f = replay_into(&t);
	ck_assert_uint_eq(t.chunks, 0);
	ck_assert_int_eq(t.ends, 0);
	t.pending = 0;
	follow_drained(f);
	ck_assert_uint_eq(t.chunks, 4);
	ck_assert_int_eq(t.ends, 1);
	follow_free(f);
}
END_TEST

/* A dead sink is not written to, nor told an end. */
START_TEST(dead_sink_is_left_alone)
{
	struct tsink	 t = { .in_order = true, .pending = FOLLOW_SINK_DEAD };
	struct follow	*f;

	put_recs(2, 10);
	f = replay_into(&t);
	follow_drained(f);
	ck_assert_uint_eq(t.chunks, 0);
	ck_assert_int_eq(t.ends, 0);
	follow_free(f);
}
END_TEST

START_TEST(seek_after_cursor_and_without_replay)
{
	struct tsink	 t = { .in_order = true };
	struct follow	*f;
	char		 cur[CURSOR_MAX];

	put_recs(6, 10);
	f = open_follow(FOLLOW_RECORDS, 0, 0);
	cursor_format(cur, "0123456789abcdef0123456789abcdef",
	    "p1@2026-01-01T00:00:00.000Z", 4);
	ck_assert_int_eq(follow_seek(f, cur, true), 0);
	follow_start(f, &tsink_sink, &t);
	ck_assert_uint_eq(t.chunks, 2);
	ck_assert_uint_eq(t.last_seq, 6);
	follow_free(f);

	memset(&t, 0, sizeof(t));
	f = open_follow(FOLLOW_RECORDS, 0, 0);
	ck_assert_int_eq(follow_seek(f, NULL, false), 0);
	follow_start(f, &tsink_sink, &t);
	ck_assert_uint_eq(t.chunks, 0);
	ck_assert_int_eq(t.ends, 1);
	follow_free(f);
}
END_TEST

START_TEST(seek_refuses_foreign_and_future_cursors)
{
	struct follow	*f;
	char		 cur[CURSOR_MAX];

	put_recs(3, 10);
	f = open_follow(FOLLOW_RECORDS, 0, 0);
	/* Another record's (a later launch with the same ID). */
	cursor_format(cur, "0123456789abcdef0123456789abcdef",
	    "p1@2026-01-01T00:00:01.000Z", 1);
	ck_assert_int_eq(follow_seek(f, cur, true), -1);
	/* Beyond what is stored. */
	cursor_format(cur, "0123456789abcdef0123456789abcdef",
	    "p1@2026-01-01T00:00:00.000Z", 4);
	ck_assert_int_eq(follow_seek(f, cur, true), -1);
	ck_assert_int_eq(follow_seek(f, "garbage", true), -1);
	ck_assert_int_eq(follow_seek(f, "", true), 0);
	follow_free(f);
}
END_TEST

/* A poll stops before a record that would pass the limit. */
START_TEST(poll_is_bounded)
{
	struct tsink	 t = { .in_order = true };
	struct follow	*f;
	char		 cur[CURSOR_MAX];
	uint64_t	 seq;

	put_recs(10, 100);
	f = open_follow(FOLLOW_RECORDS, 0, 0);
	ck_assert_int_eq(follow_seek(f, NULL, true), 0);
	follow_poll_start(f, &tsink_sink, &t, 350);
	ck_assert_uint_eq(t.bytes, 300);
	ck_assert(!follow_done(f));
	follow_cursor(f, cur);
	ck_assert_int_eq(cursor_parse(cur, "0123456789abcdef0123456789abcdef",
	    "p1@2026-01-01T00:00:00.000Z", &seq), 0);
	ck_assert_uint_eq(seq, 3);
	/* The poll ends, caught up, at that cursor. */
	ck_assert_int_eq(t.ends, 1);
	ck_assert_int_eq(t.why, FOLLOW_CAUGHT_UP);
	ck_assert_str_eq(t.end_cursor, cur);
	follow_free(f);
	/* The first record is always taken, whatever the limit. */
	memset(&t, 0, sizeof(t));
	f = open_follow(FOLLOW_RECORDS, 0, 0);
	ck_assert_int_eq(follow_seek(f, cur, true), 0);
	follow_poll_start(f, &tsink_sink, &t, 1);
	ck_assert_uint_eq(t.bytes, 100);
	ck_assert_uint_eq(follow_skipped(f), 0);
	ck_assert_int_eq(t.ends, 1);
	follow_free(f);
}
END_TEST

/* A sink whose queue grows with what it is given, up to a drain. */
struct qsink {
	size_t		 queued, chunks, most;
	size_t		 bytes[LS_NSTREAMS];
	uint64_t	 next_off[LS_NSTREAMS];
	int		 order[64], norder;	/* streams, as they came */
	bool		 contiguous;
	int		 ends;
	enum follow_why	 why;
};

static int
qs_chunk(void *ctx, const struct follow_chunk *ch)
{
	struct qsink	*q = ctx;

	if (ch->offset != q->next_off[ch->stream])
		q->contiguous = false;
	q->next_off[ch->stream] = ch->offset + ch->len;
	q->bytes[ch->stream] += ch->len;
	q->queued += ch->len;
	if (ch->len > q->most)
		q->most = ch->len;
	if (q->norder == 0 || q->order[q->norder - 1] != ch->stream)
		q->order[q->norder++] = ch->stream;
	q->chunks++;
	return 0;
}

static void
qs_end(void *ctx, enum follow_why why, const char *cursor)
{
	struct qsink	*q = ctx;

	(void)cursor;
	q->ends++;
	q->why = why;
}

static size_t
qs_pending(void *ctx)
{
	return ((struct qsink *)ctx)->queued;
}

static const struct follow_sink qsink_sink = {
	qs_chunk, ts_gap, qs_end, NULL, qs_pending, 50, NULL
};

static struct follow *
open_pieces(size_t piece)
{
	struct follow_src	src = { 0 };
	struct follow_opts	o = { 0 };
	struct follow		*f;

	src.ls = &ls;
	src.boot = "0123456789abcdef0123456789abcdef";
	src.id = "p1";
	src.started = "2026-01-01T00:00:00.000Z";
	src.until = PROC_END_STATE;
	o.walk = FOLLOW_RECORDS;
	o.piece = piece;
	ck_assert_ptr_nonnull(f = follow_new(loop, &src, &o));
	ck_assert_int_eq(follow_seek(f, NULL, true), 0);
	return f;
}

/*
 * With pieces, a record goes out a piece at a time while the sink is
 * below its high mark: a sink that does not drain holds at most the mark
 * and one piece; its drain resumes inside the record.
 */
START_TEST(pieces_pause_inside_a_record)
{
	struct qsink	 q = { .contiguous = true };
	struct follow	*f;

	put_recs(4, 100);		/* 200 bytes in each stream */
	f = open_pieces(30);
	follow_start(f, &qsink_sink, &q);
	ck_assert_uint_eq(q.queued, 60);	/* 30, 30: then above 50 */
	ck_assert_int_eq(q.ends, 0);
	while (q.ends == 0) {
		ck_assert_uint_lt(q.queued, 50 + 30);
		q.queued = 0;
		follow_drained(f);
	}
	ck_assert_int_eq(q.why, FOLLOW_ENDED);
	ck_assert_uint_eq(q.bytes[0], 200);
	ck_assert_uint_eq(q.bytes[1], 200);
	ck_assert_uint_eq(q.most, 30);
	ck_assert(q.contiguous);
	ck_assert_uint_eq(q.chunks, 16);	/* 30 30 30 10, each record */
	follow_free(f);
}
END_TEST

/*
 * The streamed poll: every stdout byte, then every stderr byte, of the
 * records it chose, in pieces, pausing when the sink is full; the end,
 * caught up, when all is sent.
 */
START_TEST(poll_streams_stream_by_stream)
{
	struct qsink	 q = { .contiguous = true, .queued = 1000 };
	struct follow	*f;
	char		 cur[CURSOR_MAX];
	uint64_t	 seq;

	put_recs(10, 100);		/* alternating: 500 bytes in each */
	f = open_pieces(40);
	follow_poll_start(f, &qsink_sink, &q, 750);	/* 7 records */
	ck_assert_uint_eq(q.chunks, 0);		/* full from the start */
	while (q.ends == 0) {
		q.queued = 0;
		follow_drained(f);
	}
	ck_assert_int_eq(q.why, FOLLOW_CAUGHT_UP);
	ck_assert_uint_eq(q.bytes[0], 400);	/* records 1 3 5 7 */
	ck_assert_uint_eq(q.bytes[1], 300);	/* records 2 4 6 */
	ck_assert_int_eq(q.norder, 2);
	ck_assert_int_eq(q.order[0], 0);
	ck_assert_int_eq(q.order[1], 1);
	ck_assert(q.contiguous);
	ck_assert_uint_eq(q.most, 40);
	ck_assert_uint_eq(follow_skipped(f), 0);
	follow_cursor(f, cur);
	ck_assert_int_eq(cursor_parse(cur, "0123456789abcdef0123456789abcdef",
	    "p1@2026-01-01T00:00:00.000Z", &seq), 0);
	ck_assert_uint_eq(seq, 7);
	follow_free(f);
}
END_TEST

/* The byte walk: one stream from an offset, contiguous. */
START_TEST(bytes_from_offset)
{
	struct tsink	 t = { .in_order = true, .next_off = 250 };
	struct follow	*f;

	put_recs(10, 100);		/* 500 bytes in each stream */
	f = open_follow(FOLLOW_BYTES, LS_STDERR, 250);
	follow_start(f, &tsink_sink, &t);
	ck_assert_int_eq(t.ends, 1);
	ck_assert_uint_eq(t.bytes, 250);
	ck_assert_int_eq(t.stream_bytes[LS_STDERR], 250);
	ck_assert(t.in_order);
	follow_free(f);
}
END_TEST

/* A file sink: takes up to room bytes a call from the store's file. */
struct fsink {
	char	 got[4 * LOGS_PUMP_BYTES];
	size_t	 len, room, calls, most;
	int	 ends, chunks;
};

static ssize_t
fs_file(void *ctx, int fd, uint64_t *off, size_t n)
{
	struct fsink	*t = ctx;
	ssize_t		 k;

	if (n > t->most)
		t->most = n;
	if (n > t->room)
		n = t->room;
	if (n == 0 || t->len + n > sizeof(t->got))
		return -1;		/* full until drained */
	if ((k = pread(fd, t->got + t->len, n, (off_t)*off)) <= 0)
		return -1;
	t->len += (size_t)k;
	t->room -= (size_t)k;
	*off += (uint64_t)k;
	t->calls++;
	return k;
}

static int
fs_chunk(void *ctx, const struct follow_chunk *ch)
{
	(void)ch;
	((struct fsink *)ctx)->chunks++;
	return 0;
}

static void
fs_end(void *ctx, enum follow_why why, const char *cursor)
{
	(void)why;
	(void)cursor;
	((struct fsink *)ctx)->ends++;
}

static size_t
fs_pending(void *ctx)
{
	(void)ctx;
	return 0;
}

static const struct follow_sink fsink_sink = {
	fs_chunk, ts_gap, fs_end, NULL, fs_pending, 1000, fs_file
};

static bool
fs_ended(void *arg)
{
	return ((struct fsink *)arg)->ends > 0;
}

/*
 * An ended record's byte walk goes to a sink that takes files: from the
 * offset, every byte once, in order, a callback's share at most; a sink
 * that stops taking (a full socket) gets the rest after its drain.
 */
START_TEST(bytes_to_a_file_sink)
{
	static struct fsink	 t;
	static char		 d[LOG_CHUNK];
	struct follow		*f;
	size_t			 i, n = 0;
	int			 r;

	memset(&t, 0, sizeof(t));
	for (r = 0; r < 12; r++) {
		for (i = 0; i < sizeof(d); i++)
			d[i] = (char)(n + i) ^ 0x5a;
		ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, d,
		    sizeof(d)), 0);
		logstore_seal(&ls);
		n += sizeof(d);
	}
	t.room = 100000;
	f = open_follow(FOLLOW_BYTES, LS_STDOUT, 3);
	follow_start(f, &fsink_sink, &t);
	ck_assert_uint_eq(t.len, 100000);	/* then it was full */
	ck_assert_int_eq(t.ends, 0);
	t.room = SIZE_MAX;
	follow_drained(f);
	ck_assert(tu_run_until(loop, fs_ended, &t, 10));
	ck_assert_uint_eq(t.len, n - 3);
	for (i = 0; i < t.len; i++)
		ck_assert_int_eq(t.got[i], (char)(i + 3) ^ 0x5a);
	ck_assert_int_eq(t.chunks, 0);
	ck_assert_uint_le(t.most, LOGS_PUMP_BYTES);
	ck_assert_uint_gt(t.calls, 2);
	follow_free(f);
}
END_TEST

/*
 * A damaged index record is passed over, never stalls the reader, and
 * is logged once with its count when the reader has caught up.
 */
START_TEST(damaged_records_skipped_and_logged_once)
{
	struct tsink	 t = { .in_order = true };
	struct logstore	 ro;
	struct follow	*f;
	struct follow_src src = { 0 };
	struct follow_opts o = { 0 };
	uint32_t	 bad = 250000;		/* > LOG_CHUNK */
	char		 logbuf[4096], *at;
	int		 fd, lp[2], lines = 0;
	ssize_t		 n;

	put_recs(4, 10);
	logstore_close(&ls);
	ck_assert_int_ge(fd = openat(tdir, "index", O_WRONLY | O_CLOEXEC), 0);
	ck_assert_int_eq(pwrite(fd, &bad, sizeof(bad), 32 + 16),
	    (ssize_t)sizeof(bad));
	ck_assert_int_eq(pwrite(fd, &bad, sizeof(bad), 2 * 32 + 16),
	    (ssize_t)sizeof(bad));
	close(fd);
	ck_assert_int_eq(logstore_open(&ro, tdir, LS_NSTREAMS, names2), 0);
	ck_assert_int_eq(pipe2(lp, O_NONBLOCK | O_CLOEXEC), 0);
	log_open(lp[1]);
	src.ls = &ro;
	src.boot = src.id = src.started = "x";
	f = follow_new(loop, &src, &o);
	ck_assert_int_eq(follow_seek(f, NULL, true), 0);
	follow_start(f, &tsink_sink, &t);
	ck_assert_int_eq(t.ends, 1);
	ck_assert_uint_eq(t.chunks, 2);		/* records 1 and 4 */
	ck_assert_uint_eq(t.last_seq, 4);
	follow_free(f);
	n = read(lp[0], logbuf, sizeof(logbuf) - 1);
	ck_assert_int_gt(n, 0);
	logbuf[n] = '\0';
	for (at = logbuf; (at = strstr(at, "index_records_skipped")); at++)
		lines++;
	ck_assert_int_eq(lines, 1);
	ck_assert_ptr_nonnull(strstr(logbuf, "first=2 count=2"));
	log_open(2);
	close(lp[0]);
	close(lp[1]);
	logstore_close(&ro);
}
END_TEST

Suite *
follow_suite(void)
{
	Suite	*s = suite_create("follow");
	TCase	*tc = tcase_create("pump");

	tcase_add_checked_fixture(tc, setup, teardown);
	/*
	 * The byte walks write and read megabytes through the store: on a
	 * loaded machine one takes longer than check's default 4 s.
	 */
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, replays_all_in_order_then_ends);
	tcase_add_test(tc, budget_per_callback);
	tcase_add_test(tc, pauses_when_full_resumes_on_drain);
	tcase_add_test(tc, dead_sink_is_left_alone);
	tcase_add_test(tc, seek_after_cursor_and_without_replay);
	tcase_add_test(tc, seek_refuses_foreign_and_future_cursors);
	tcase_add_test(tc, poll_is_bounded);
	tcase_add_test(tc, pieces_pause_inside_a_record);
	tcase_add_test(tc, poll_streams_stream_by_stream);
	tcase_add_test(tc, bytes_from_offset);
	tcase_add_test(tc, bytes_to_a_file_sink);
	tcase_add_test(tc, damaged_records_skipped_and_logged_once);
	suite_add_tcase(s, tc);
	return s;
}
