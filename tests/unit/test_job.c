/*
 * job: the engine a process and a terminal share, driven by a kind of
 * the test's own over plain pipes (no child): output drained into the
 * record's store and watchers told, the end of a stream, the bounded
 * input queue with its one held writer (woken below half, EPIPE when
 * the reader goes, ENOENT when the job is removed), and removal.
 */
#include <sys/types.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "core/job.h"
#include "testutil.h"

Suite *job_suite(void);

#define WAIT_S	5.0

/* The test's kind: a job and what it was told. */
struct tjob {
	struct job	 job;
	int		 drains, grew, closed, signals, ends;
};

/* A watcher: its events in order, "oxeEg" (output exit end EOF gone). */
struct twatch {
	struct job_watch	 w;
	char			 seen[64];
	size_t			 n;
};

/* A held writer: woken how. */
struct twriter {
	int		 woken, err;
};

static struct ev_loop	*loop;
static struct jobtab	 tab;
static char		 state_path[64];
static int		 statefd = -1;

static cJSON *
tk_status(struct job *j, bool live)
{
	cJSON	*s = job_status_head(j);

	(void)live;
	return s;
}

static void
tk_drained(struct job *j, int s, bool grew, bool closed)
{
	struct tjob	*t = container_of(j, struct tjob, job);

	(void)s;
	t->drains++;
	t->grew += grew;
	t->closed += closed;
	if (grew)
		job_notify(j, JOB_EV_OUTPUT);
}

static void
tk_signal(struct job *j, int sig)
{
	(void)sig;
	container_of(j, struct tjob, job)->signals++;
}

static void
tk_end(struct job *j)
{
	container_of(j, struct tjob, job)->ends++;
	job_ended(j);
	job_tell_end(j);
}

static void
tk_free(struct job *j)
{
	free(container_of(j, struct tjob, job));
}

static const struct job_kind tk_kind = {
	"test_removed", "test_remove_failed", tk_status, tk_drained, NULL,
	tk_signal, tk_end, tk_free
};

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	loop = ev_default_loop(0);
	statefd = tu_tmpdir(state_path, sizeof(state_path), "/tmp/tend-job-");
	jobtab_init(&tab, loop, "b0", statefd);
	tab.recs.fd = dup(statefd);
	tab.maxlive = 4;
}

static void
teardown(void)
{
	jobtab_free(&tab);
	close(tab.recs.fd);
	close(statefd);
	tu_rmtree(state_path);
}

/* A job in the table, with its record: begun, not yet given fds. */
static struct tjob *
tjob_new(const char *id)
{
	char		*argv[] = { "x", NULL };
	struct tjob	*t;

	ck_assert_ptr_nonnull(t = calloc(1, sizeof(*t)));
	ck_assert_int_eq(job_init(&t->job, &tab, &tk_kind, id, 'j', argv,
	    "/"), 0);
	ck_assert_int_eq(record_open(&t->job.rec, &tab.recs, t->job.id,
	    1 << 20), 0);
	t->job.pid = 999999;	/* no such process: never signalled here */
	job_begin(&t->job);
	return t;
}

static void
tw_fn(struct job_watch *w, enum job_event ev)
{
	struct twatch	*tw = container_of(w, struct twatch, w);

	if (tw->n + 1 < sizeof(tw->seen))
		tw->seen[tw->n++] = "oxeEg"[ev];
}

static void
wr_wake(struct job *j, void *writer, int err)
{
	struct twriter	*w = writer;

	(void)j;
	w->woken++;
	w->err = err;
}

static bool
drained_5(void *arg)
{
	return ((struct tjob *)arg)->job.rec.ls.end[0] >= 5;
}

static bool
closed(void *arg)
{
	return ((struct tjob *)arg)->closed > 0;
}

static bool
woken(void *arg)
{
	return ((struct twriter *)arg)->woken > 0;
}

/*
 * An ID the agent makes is the kind's prefix and 12 hex digits, a new one
 * each time (its bytes do not wait for the kernel's pool: boot_random).
 */
START_TEST(made_ids_are_unique)
{
	char		*argv[] = { "x", NULL };
	char		 seen[64][PROC_ID_MAX + 1];
	struct tjob	*t;
	size_t		 i, k;

	for (i = 0; i < nitems(seen); i++) {
		ck_assert_ptr_nonnull(t = calloc(1, sizeof(*t)));
		ck_assert_int_eq(job_init(&t->job, &tab, &tk_kind, NULL, 'j',
		    argv, "/"), 0);
		ck_assert_uint_eq(strlen(t->job.id), 13);
		ck_assert_int_eq(t->job.id[0], 'j');
		ck_assert_uint_eq(strspn(t->job.id + 1, "0123456789abcdef"), 12);
		for (k = 0; k < i; k++)
			ck_assert_str_ne(seen[k], t->job.id);
		memcpy(seen[i], t->job.id, sizeof(seen[i]));
		job_free(&t->job);
	}
}
END_TEST

/* Output goes to the store, watchers hear of it; EOF ends the stream. */
START_TEST(drain_to_the_store)
{
	struct twatch	 w = { 0 };
	struct tjob	*t = tjob_new("d");
	int		 fds[2];

	ck_assert_int_eq(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
	job_out_start(&t->job, 0, fds[0]);
	job_watch_add(&t->job, &w.w, tw_fn);
	ck_assert_ptr_eq(job_find(&tab, "d"), &t->job);
	ck_assert_ptr_eq(job_by_pid(&tab, 999999), &t->job);
	ck_assert_int_eq(write(fds[1], "hello", 5), 5);
	ck_assert(tu_run_until(loop, drained_5, t, WAIT_S));
	ck_assert_ptr_nonnull(strchr(w.seen, 'o'));
	ck_assert(!job_output_done(&t->job));
	close(fds[1]);
	ck_assert(tu_run_until(loop, closed, t, WAIT_S));
	ck_assert(job_output_done(&t->job));
	ck_assert_int_eq(t->job.out[0], -1);
	ck_assert_uint_eq(tab.stored, 5);
	/* Reaped and ended: removal tells the watcher, no signal sent. */
	job_reap(&t->job, 3 << 8);
	ck_assert_ptr_null(job_by_pid(&tab, 999999));
	ck_assert_int_eq(job_exit(&t->job)->code, 3);
	jobtab_finalize(&tab);
	ck_assert_int_eq(t->ends, 1);
	ck_assert_int_eq(tab.nended, 1);
	ck_assert_int_eq(w.seen[w.n - 1], 'e');
	ck_assert_int_eq(job_delete(&t->job), 0);
	ck_assert_int_eq(w.seen[w.n - 1], 'g');
	ck_assert_ptr_null(w.w.job);
	ck_assert_ptr_null(job_find(&tab, "d"));
	ck_assert_int_eq(tab.nended, 0);
}
END_TEST

/*
 * The queue past PROC_STDIN_HIGH holds one writer; another is refused;
 * the held one is woken once the reader took it below half.
 */
START_TEST(input_holds_one_writer)
{
	struct twriter	 a = { 0 }, b = { 0 };
	struct tjob	*t = tjob_new("i");
	static char	 big[PROC_STDIN_HIGH + (1 << 20)], sink[65536];
	int		 fds[2];
	ssize_t		 n;
	size_t		 got = 0;

	ck_assert_int_eq(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
	job_in_start(&t->job, fds[1], false);
	memset(big, 'x', sizeof(big));
	ck_assert_int_eq(job_input(&t->job, big, sizeof(big), false), 0);
	ck_assert(job_input_full(&t->job));
	ck_assert_int_eq(job_input_hold(&t->job, &a, wr_wake), 0);
	ck_assert_int_eq(job_input_hold(&t->job, &b, wr_wake), -1);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_ptr_eq(job_input_writer(&t->job), &a);
	/* The reader takes it all: the writer hears once, with 0. */
	while (got < sizeof(big)) {
		while ((n = read(fds[0], sink, sizeof(sink))) > 0)
			got += (size_t)n;
		ev_run(loop, EVRUN_NOWAIT);
	}
	ck_assert(tu_run_until(loop, woken, &a, WAIT_S));
	ck_assert_int_eq(a.woken, 1);
	ck_assert_int_eq(a.err, 0);
	ck_assert_int_eq(b.woken, 0);
	ck_assert_ptr_null(job_input_writer(&t->job));
	ck_assert_uint_eq(job_input_queued(&t->job), 0);
	/* Close after the queue: the input is then closed. */
	ck_assert_int_eq(job_input(&t->job, "", 0, true), 0);
	ck_assert_int_eq(t->job.in, -1);
	ck_assert_int_eq(job_input(&t->job, "x", 1, false), -1);
	ck_assert_int_eq(errno, EPIPE);
	close(fds[0]);
}
END_TEST

/* The reader gone with bytes queued: EPIPE; a removed job: ENOENT. */
START_TEST(held_writer_told_why)
{
	struct twriter	 a = { 0 }, b = { 0 };
	struct tjob	*t = tjob_new("e"), *u = tjob_new("r");
	static char	 big[PROC_STDIN_HIGH + (1 << 20)];
	int		 fds[2], gds[2];

	memset(big, 'y', sizeof(big));
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
	job_in_start(&t->job, fds[1], false);
	ck_assert_int_eq(job_input(&t->job, big, sizeof(big), false), 0);
	ck_assert_int_eq(job_input_hold(&t->job, &a, wr_wake), 0);
	close(fds[0]);
	ck_assert(tu_run_until(loop, woken, &a, WAIT_S));
	ck_assert_int_eq(a.err, EPIPE);
	ck_assert_int_eq(t->job.in, -1);

	ck_assert_int_eq(pipe2(gds, O_CLOEXEC | O_NONBLOCK), 0);
	job_in_start(&u->job, gds[1], false);
	ck_assert_int_eq(job_input(&u->job, big, sizeof(big), false), 0);
	ck_assert_int_eq(job_input_hold(&u->job, &b, wr_wake), 0);
	/* Removed while running (its root reaped: no pid to kill). */
	job_reap(&u->job, 0);
	ck_assert_int_eq(job_delete(&u->job), 0);
	ck_assert_int_eq(b.woken, 1);
	ck_assert_int_eq(b.err, ENOENT);
	ck_assert_int_eq(tab.nlive, 1);
	close(gds[0]);
}
END_TEST

Suite *
job_suite(void)
{
	Suite	*s = suite_create("job");
	TCase	*tc = tcase_create("engine");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, made_ids_are_unique);
	tcase_add_test(tc, drain_to_the_store);
	tcase_add_test(tc, input_holds_one_writer);
	tcase_add_test(tc, held_writer_told_why);
	suite_add_tcase(s, tc);
	return s;
}
