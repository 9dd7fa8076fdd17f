/*
 * events: the log of a boot and its readers — order and cursors, the
 * filters, a start at the end, the bound (events.truncated), an earlier
 * boot's log read back, a follower woken by the next event, a follower
 * paused by its sink.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ev.h>

#include "base/tunables.h"
#include "core/events.h"
#include "testutil.h"

Suite *events_suite(void);

#define BOOT	"0123456789abcdef0123456789abcdef"

static char		 dir[128];
static int		 statefd = -1;
static struct ev_loop	*loop;

/* A sink that keeps what it got. */
struct got {
	int	 n;
	char	 types[64][EVENTS_TYPE_MAX];
	char	 cursors[64][CURSOR_MAX];
	uint64_t skipped[64];
	char	 end[CURSOR_MAX];
	bool	 ended;
	size_t	 pending;
	struct events_reader *r;
};

static int
got_event(void *ctx, const struct events_item *it)
{
	struct got	*g = ctx;

	if (g->n < 64) {
		snprintf(g->types[g->n], EVENTS_TYPE_MAX, "%s", it->type);
		snprintf(g->cursors[g->n], CURSOR_MAX, "%s", it->cursor);
		g->skipped[g->n] = it->skipped;
		if (it->json != NULL) {
			/* A whole object, its type first. */
			ck_assert_int_eq(it->json[0], '{');
			ck_assert_int_eq(it->json[it->len - 1], '}');
			ck_assert_ptr_nonnull(strstr(it->json, BOOT));
		}
	}
	g->n++;
	return 0;
}

static void
got_end(void *ctx, const char *cursor)
{
	struct got	*g = ctx;

	g->ended = true;
	snprintf(g->end, sizeof(g->end), "%s", cursor);
}

static size_t
got_pending(void *ctx)
{
	return ((struct got *)ctx)->pending;
}

static const struct events_sink got_sink = {
	got_event, got_end, NULL, got_pending, 100
};

static void
setup(void)
{
	char	path[64];

	statefd = tu_tmpdir(dir, sizeof(dir), "/tmp/tend-events-");
	ck_assert_int_eq(mkdirat(statefd, "boots", 0755), 0);
	snprintf(path, sizeof(path), "boots/%s", BOOT);
	ck_assert_int_eq(mkdirat(statefd, path, 0755), 0);
	loop = ev_loop_new(EVFLAG_AUTO);
}

static void
teardown(void)
{
	ev_loop_destroy(loop);
	close(statefd);
	tu_rmtree(dir);
}

static void
emit_n(struct events *ev, const char *type, int n)
{
	cJSON	*o;
	char	 id[32];
	int	 i;

	for (i = 0; i < n; i++) {
		o = cJSON_CreateObject();
		snprintf(id, sizeof(id), "p%d", i);
		cJSON_AddStringToObject(o, "id", id);
		events_append(ev, type, o);
	}
}

/* A read that does not follow, from since: what got. */
static void
read_all(struct events *ev, const struct events_filter *f, const char *since,
    struct got *g)
{
	struct events_reader	*r;

	memset(g, 0, sizeof(*g));
	r = events_reader_new(ev, loop, f, false, 0);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(events_reader_seek(r, since), 0);
	events_reader_start(r, &got_sink, g);
	while (!g->ended)
		ev_run(loop, EVRUN_NOWAIT);
	events_reader_free(r);
}

START_TEST(order_and_cursors)
{
	struct events_filter	 f = { 0 };
	struct events		*ev;
	struct events_stat	 st;
	struct got		 g;
	char			 c[CURSOR_MAX];
	uint64_t		 seq;
	int			 i;

	ev = events_open(loop, statefd, BOOT, 0);
	ck_assert_ptr_nonnull(ev);
	events_append(ev, "agent.started", NULL);
	emit_n(ev, "process.started", 3);
	emit_n(ev, "process.exited", 3);
	events_stat(ev, &st);
	ck_assert_uint_eq(st.first, 1);
	ck_assert_uint_eq(st.last, 7);
	read_all(ev, &f, NULL, &g);
	ck_assert_int_eq(g.n, 7);
	ck_assert_str_eq(g.types[0], "agent.started");
	ck_assert_str_eq(g.types[6], "process.exited");
	for (i = 0; i < 7; i++) {
		ck_assert_int_eq(cursor_parse(g.cursors[i], BOOT,
		    EVENTS_CURSOR_ID, &seq), 0);
		ck_assert_uint_eq(seq, (uint64_t)i + 1);
	}
	ck_assert_str_eq(g.end, g.cursors[6]);
	/* From a cursor: what comes after it, no more, no less. */
	snprintf(c, sizeof(c), "%s", g.cursors[2]);
	read_all(ev, &f, c, &g);
	ck_assert_int_eq(g.n, 4);
	ck_assert_str_eq(g.types[0], "process.started");
	read_all(ev, &f, "end", &g);
	ck_assert_int_eq(g.n, 0);
	events_close(ev);
}
END_TEST

START_TEST(bad_cursors)
{
	struct events_filter	 f = { 0 };
	struct events_reader	*r;
	struct events		*ev;
	char			 c[CURSOR_MAX];

	ev = events_open(loop, statefd, BOOT, 0);
	emit_n(ev, "process.started", 2);
	r = events_reader_new(ev, loop, &f, false, 0);
	ck_assert_int_eq(events_reader_seek(r, "x"), -1);
	ck_assert_int_eq(events_reader_seek(r, "1-00000000"), -1);
	cursor_format(c, "fedcba9876543210fedcba9876543210", EVENTS_CURSOR_ID,
	    1);
	ck_assert_int_eq(events_reader_seek(r, c), -1);	/* another boot */
	cursor_format(c, BOOT, EVENTS_CURSOR_ID, 3);
	ck_assert_int_eq(events_reader_seek(r, c), -1);	/* beyond the end */
	cursor_format(c, BOOT, EVENTS_CURSOR_ID, 2);
	ck_assert_int_eq(events_reader_seek(r, c), 0);
	events_reader_free(r);
	events_close(ev);
}
END_TEST

START_TEST(filters)
{
	struct events_filter	 f = { 0 };
	struct events		*ev;
	struct got		 g;

	ev = events_open(loop, statefd, BOOT, 0);
	events_append(ev, "agent.started", NULL);
	emit_n(ev, "process.started", 3);
	emit_n(ev, "terminal.opened", 2);
	emit_n(ev, "process.exited", 3);
	f.types = "process.";
	read_all(ev, &f, NULL, &g);
	ck_assert_int_eq(g.n, 6);
	f.types = "process.exited,terminal.opened";
	read_all(ev, &f, NULL, &g);
	ck_assert_int_eq(g.n, 5);
	f.types = "process";		/* not a prefix: no dot */
	read_all(ev, &f, NULL, &g);
	ck_assert_int_eq(g.n, 0);
	/* The end cursor passes what was filtered out. */
	ck_assert_int_eq(strncmp(g.end, "9-", 2), 0);
	f.types = NULL;
	f.id = "p1";
	read_all(ev, &f, NULL, &g);
	ck_assert_int_eq(g.n, 3);
	f.types = "process.";
	read_all(ev, &f, NULL, &g);
	ck_assert_int_eq(g.n, 2);
	events_close(ev);
}
END_TEST

START_TEST(types_syntax)
{
	ck_assert(events_types_valid("process.exited"));
	ck_assert(events_types_valid("process.,terminal.closed"));
	ck_assert(!events_types_valid(""));
	ck_assert(!events_types_valid(","));
	ck_assert(!events_types_valid("a,,b"));
	ck_assert(!events_types_valid("a,"));
	ck_assert(!events_types_valid("Process"));
	ck_assert(!events_types_valid("a b"));
	ck_assert(events_type_match(NULL, "x"));
	ck_assert(events_type_match("a.,b", "a.c"));
	ck_assert(events_type_match("a.,b", "b"));
	ck_assert(!events_type_match("a.,b", "bc"));
	ck_assert(!events_type_match("a.c", "a.cd"));
}
END_TEST

/* Past its bound the oldest go; a cursor into them hears of the gap. */
START_TEST(truncation)
{
	struct events_filter	 f = { 0 };
	struct events		*ev;
	struct events_stat	 st;
	struct got		 g;
	char			 c1[CURSOR_MAX];
	uint64_t		 seq;

	ev = events_open(loop, statefd, BOOT, 4096);
	emit_n(ev, "process.started", 1);
	cursor_format(c1, BOOT, EVENTS_CURSOR_ID, 1);
	emit_n(ev, "process.exited", 200);
	events_stat(ev, &st);
	ck_assert_uint_eq(st.last, 201);
	ck_assert_uint_gt(st.first, 2);
	ck_assert_uint_le(st.bytes, 4096);
	read_all(ev, &f, c1, &g);
	ck_assert_str_eq(g.types[0], "events.truncated");
	ck_assert_uint_eq(g.skipped[0], st.first - 2);
	ck_assert_int_eq(g.n, 1 + (int)(st.last - st.first + 1));
	ck_assert_int_eq(cursor_parse(g.cursors[1], BOOT, EVENTS_CURSOR_ID,
	    &seq), 0);
	ck_assert_uint_eq(seq, st.first);
	/* No cursor: the oldest kept, no gap told. */
	read_all(ev, &f, NULL, &g);
	ck_assert_str_eq(g.types[0], "process.exited");
	events_close(ev);
}
END_TEST

/* An earlier boot's log reads back the same, truncated or not. */
START_TEST(read_only)
{
	struct events_filter	 f = { 0 };
	struct events		*ev;
	struct got		 g;
	char			 path[64];
	int			 dfd;

	ev = events_open(loop, statefd, BOOT, 0);
	events_append(ev, "agent.started", NULL);
	emit_n(ev, "process.started", 5);
	events_close(ev);
	snprintf(path, sizeof(path), "boots/%s", BOOT);
	dfd = openat(statefd, path, O_RDONLY | O_DIRECTORY);
	ev = events_open_ro(dfd, BOOT);
	ck_assert_ptr_nonnull(ev);
	read_all(ev, &f, NULL, &g);
	ck_assert_int_eq(g.n, 6);
	ck_assert_str_eq(g.types[5], "process.started");
	events_append(ev, "process.started", NULL);	/* refused */
	read_all(ev, &f, NULL, &g);
	ck_assert_int_eq(g.n, 6);
	events_close(ev);
	/* A boot without a log. */
	ck_assert_int_eq(unlinkat(dfd, EVENTS_DIR "/" EVENTS_FILE, 0), 0);
	ck_assert_ptr_null(events_open_ro(dfd, BOOT));
	ck_assert_int_eq(errno, ENOENT);
	close(dfd);
}
END_TEST

/*
 * No directory yet (a degraded state dir): held, then stored in order
 * before the next; past EVENTS_HELD_MAX the newest are dropped.
 */
START_TEST(no_dir_yet)
{
	struct events_filter	 f = { 0 };
	struct events		*ev;
	struct events_stat	 st;
	struct got		 g;
	char			 path[64];

	snprintf(path, sizeof(path), "boots/%s", BOOT);
	ck_assert_int_eq(unlinkat(statefd, path, AT_REMOVEDIR), 0);
	ev = events_open(loop, statefd, BOOT, 0);
	events_append(ev, "agent.started", NULL);
	emit_n(ev, "state.degraded", EVENTS_HELD_MAX + 2);
	events_stat(ev, &st);
	ck_assert_uint_eq(st.dropped, 3);
	ck_assert_uint_eq(st.last, 0);
	ck_assert_int_eq(mkdirat(statefd, path, 0755), 0);
	events_append(ev, "state.recovered", NULL);
	events_stat(ev, &st);
	ck_assert_uint_eq(st.last, EVENTS_HELD_MAX + 1);
	read_all(ev, &f, NULL, &g);
	ck_assert_str_eq(g.types[0], "agent.started");
	ck_assert_str_eq(g.types[1], "state.degraded");
	ck_assert_int_eq(g.n, EVENTS_HELD_MAX + 1);
	events_close(ev);
}
END_TEST

static bool
got_n(void *arg)
{
	struct got	*g = arg;

	return g->n >= 3;
}

/* A follower waits at the end, woken by the next event; paused by its sink. */
START_TEST(follow_and_pause)
{
	struct events_filter	 f = { 0 };
	struct events_reader	*r;
	struct events		*ev;
	struct got		 g;

	memset(&g, 0, sizeof(g));
	ev = events_open(loop, statefd, BOOT, 0);
	emit_n(ev, "process.started", 1);
	r = events_reader_new(ev, loop, &f, true, 0);
	ck_assert_int_eq(events_reader_seek(r, NULL), 0);
	events_reader_start(r, &got_sink, &g);
	ck_assert_int_eq(g.n, 1);
	ck_assert(!g.ended);
	emit_n(ev, "process.exited", 1);
	ck_assert_int_eq(g.n, 1);	/* at the next turn, not inside emit */
	ev_run(loop, EVRUN_NOWAIT);
	ck_assert_int_eq(g.n, 2);
	/* Its sink is full: nothing more until it drains. */
	g.pending = 1000;
	emit_n(ev, "process.removed", 1);
	ev_run(loop, EVRUN_NOWAIT);
	ev_run(loop, EVRUN_NOWAIT);
	ck_assert_int_eq(g.n, 2);
	g.pending = 0;
	events_reader_drained(r);
	ck_assert(tu_run_until(loop, got_n, &g, 2.0));
	ck_assert_str_eq(g.types[2], "process.removed");
	ck_assert(!g.ended);
	events_reader_free(r);
	events_close(ev);
}
END_TEST

/* A reader's share of a loop turn is bounded. */
START_TEST(pump_budget)
{
	struct events_filter	 f = { 0 };
	struct events_reader	*r;
	struct events		*ev;
	struct got		 g;

	memset(&g, 0, sizeof(g));
	ev = events_open(loop, statefd, BOOT, 0);
	emit_n(ev, "process.started", EVENTS_PUMP_EVENTS * 2 + 5);
	f.types = "nothing.";
	r = events_reader_new(ev, loop, &f, false, 0);
	ck_assert_int_eq(events_reader_seek(r, NULL), 0);
	events_reader_start(r, &got_sink, &g);
	ck_assert(!g.ended);		/* one share, then the next turn */
	ev_run(loop, EVRUN_NOWAIT);
	ck_assert(!g.ended);
	ev_run(loop, EVRUN_NOWAIT);
	ev_run(loop, EVRUN_NOWAIT);
	ck_assert(g.ended);
	ck_assert_int_eq(g.n, 0);
	events_reader_free(r);
	events_close(ev);
}
END_TEST

/* A subject too long is cut to its ID; the line stays one record. */
START_TEST(cut_long)
{
	struct events_filter	 f = { 0 };
	struct events		*ev;
	struct got		 g;
	cJSON			*o;
	char			*big;

	ev = events_open(loop, statefd, BOOT, 0);
	big = malloc(EVENTS_LINE_MAX * 2);
	memset(big, 'x', EVENTS_LINE_MAX * 2 - 1);
	big[EVENTS_LINE_MAX * 2 - 1] = '\0';
	o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "id", "big");
	cJSON_AddStringToObject(o, "argv0", big);
	events_append(ev, "process.started", o);
	free(big);
	f.id = "big";
	read_all(ev, &f, NULL, &g);
	ck_assert_int_eq(g.n, 1);
	events_close(ev);
}
END_TEST

Suite *
events_suite(void)
{
	Suite	*s = suite_create("events");
	TCase	*tc = tcase_create("events");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, order_and_cursors);
	tcase_add_test(tc, bad_cursors);
	tcase_add_test(tc, filters);
	tcase_add_test(tc, types_syntax);
	tcase_add_test(tc, truncation);
	tcase_add_test(tc, read_only);
	tcase_add_test(tc, no_dir_yet);
	tcase_add_test(tc, follow_and_pause);
	tcase_add_test(tc, pump_budget);
	tcase_add_test(tc, cut_long);
	suite_add_tcase(s, tc);
	return s;
}
