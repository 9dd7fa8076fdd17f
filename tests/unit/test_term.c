/*
 * term: real terminals on the default loop, reaped by one ev_child (pid 0)
 * watcher as the agent does.  The end comes after the last output (drained
 * to EIO), or TERM_END_WAIT after the leader when a job holds the slave;
 * the input queue's hold; terminate reaching a job of another group that
 * ignores HUP and TERM.
 */
#include <sys/prctl.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"
#include "core/term.h"
#include "store/boot.h"
#include "store/logstore.h"
#include "testutil.h"

Suite *term_suite(void);

#define ARGV(...)	((char *[]){ __VA_ARGS__, NULL })
#define WAIT_S		5.0

extern char **environ;

/* What a watcher saw, in order: 'o'utput, 'e'nd, 'g'one. */
struct seen {
	struct job_watch	w;
	char			order[256];
	size_t			n;
	size_t			bytes_at_end;
};

static char		 state_path[64];
static int		 statefd = -1, procsfd = -1;
static char		 boot[BOOT_ID_LEN + 1];
static struct ev_loop	*loop;
static struct termtab	 tt;
static ev_child		 reaper;

static void
reap_cb(struct ev_loop *l, ev_child *w, int revents)
{
	(void)l;
	(void)revents;
	term_reaped(&tt, w->rpid, w->rstatus);
}

static void
setup(void)
{
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	signal(SIGPIPE, SIG_IGN);
	statefd = tu_tmpdir(state_path, sizeof(state_path), "/tmp/tend-term-");
	ck_assert_int_eq(boot_new_id(boot), 0);
	ck_assert_int_eq(boot_create(statefd, boot, &procsfd), 0);
	loop = ev_default_loop(EVFLAG_AUTO);
	ck_assert_ptr_nonnull(loop);
	ev_child_init(&reaper, reap_cb, 0, 0);
	ev_child_start(loop, &reaper);
	ck_assert_int_eq(termtab_init(&tt, loop, boot, statefd, environ,
	    NULL), 0);
}

static bool
none_live(void *arg)
{
	(void)arg;
	return termtab_live(&tt) == 0;
}

static void
teardown(void)
{
	termtab_signal_all(&tt, SIGKILL);
	(void)tu_run_until(loop, none_live, NULL, WAIT_S);
	termtab_free(&tt);
	ev_child_stop(loop, &reaper);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	ev_loop_destroy(loop);
	loop = NULL;
	close(procsfd);
	close(statefd);
	tu_rmtree(state_path);
}

static bool
is_ended(void *arg)
{
	return term_ended(arg);
}

static struct term *
create(char **argv)
{
	struct term_opts	 o;
	struct term		*t;
	bool			 failed;
	int			 err = 0;

	memset(&o, 0, sizeof(o));
	o.argv = argv;
	t = term_create(&tt, &o, &failed, &err);
	ck_assert_msg(t != NULL, "term_create: %s", strerror(err));
	return t;
}

static void
seen_cb(struct job_watch *w, enum job_event ev)
{
	struct seen	*s = container_of(w, struct seen, w);
	struct logstore	*ls;

	/* By the job's numbers: a terminal tells no EXIT ('x'), no EOF. */
	if (s->n + 1 < sizeof(s->order))
		s->order[s->n++] = "oxexg"[ev];
	if (ev == JOB_EV_END && (ls = term_store(term_of(w->job))) != NULL)
		s->bytes_at_end = ls->end[0];
}

/* The stored output, from its start: NUL-terminated, for the caller. */
static char *
stored(struct term *t)
{
	struct logstore	*ls = term_store(t);
	char		*d;
	ssize_t		 n;

	ck_assert_ptr_nonnull(ls);
	d = calloc(1, ls->end[0] + 1);
	n = logstore_pread(ls, 0, d, ls->end[0], ls->start[0]);
	ck_assert_int_eq(n, (ssize_t)ls->end[0]);
	return d;
}

static int
exit_code(struct term *t)
{
	cJSON	*e = term_exit_json(t);
	int	 code;

	ck_assert_ptr_nonnull(e);
	code = cJSON_GetObjectItem(e, "code")->valueint;
	cJSON_Delete(e);
	return code;
}

/* The last bytes are stored, and watchers told, before the end. */
START_TEST(end_after_last_output)
{
	struct seen	 s;
	struct term	*t;
	char		*out;
	int		 i;

	for (i = 0; i < 20; i++) {
		memset(&s, 0, sizeof(s));
		t = create(ARGV("/bin/sh", "-c", "printf bye; exit 3"));
		job_watch_add(term_job(t), &s.w, seen_cb);
		ck_assert(tu_run_until(loop, is_ended, t, WAIT_S));
		out = stored(t);
		ck_assert_msg(strlen(out) >= 3 &&
		    strcmp(out + strlen(out) - 3, "bye") == 0, "out %s", out);
		ck_assert_uint_eq(s.bytes_at_end, strlen(out));
		/* Output first, the end once, and last. */
		ck_assert_ptr_nonnull(strchr(s.order, 'o'));
		ck_assert_int_eq(s.order[s.n - 1], 'e');
		ck_assert_ptr_eq(strchr(s.order, 'e'), s.order + s.n - 1);
		ck_assert_int_eq(exit_code(t), 3);
		free(out);
		ck_assert_int_eq(term_delete(t), 0);
		ck_assert_int_eq(s.order[s.n - 1], 'g');
		ck_assert_ptr_null(s.w.job);
	}
}
END_TEST

/*
 * When the leader exits as the controlling process the kernel hangs the
 * terminal up, and EIO comes at once, jobs or not.  A leader that gave
 * its terminal up (TIOCNOTTY) leaves a job's slave open: then the end
 * comes TERM_END_WAIT after the reap, the last bytes stored.
 */
START_TEST(end_wait_bounded)
{
	struct term	*t;
	double		 t0 = tu_now();
	char		*out;

	t = create(ARGV("/bin/sh", "-c", "sleep 30 & printf job; exit 2"));
	ck_assert(tu_run_until(loop, is_ended, t, WAIT_S));
	ck_assert_double_lt(tu_now() - t0, TERM_END_WAIT);
	out = stored(t);
	ck_assert_str_eq(out, "job");
	free(out);
	(void)term_signal_session(t, SIGKILL);

	t0 = tu_now();
	t = create(ARGV("/usr/bin/python3", "-c", "import fcntl, os, signal, "
	    "subprocess, termios\n"
	    "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
	    "fcntl.ioctl(0, termios.TIOCNOTTY)\n"
	    "subprocess.Popen(['sleep', '30'])\n"
	    "os.write(1, b'held')\n"
	    "os._exit(2)"));
	ck_assert(tu_run_until(loop, is_ended, t, WAIT_S));
	ck_assert_double_ge(tu_now() - t0, TERM_END_WAIT * 0.9);
	ck_assert_double_lt(tu_now() - t0, TERM_END_WAIT + 2.0);
	out = stored(t);
	ck_assert_str_eq(out, "held");
	ck_assert_int_eq(exit_code(t), 2);
	free(out);
	ck_assert_int_eq(term_signal_session(t, SIGKILL), 1);
}
END_TEST

static bool
has_ready(void *arg)
{
	struct logstore	*ls = term_store(arg);

	return ls != NULL && ls->end[0] >= 5;
}

static int	woken = -1;

static void
wake_cb(struct job *j, void *writer, int err)
{
	(void)j;
	(void)writer;
	woken = err;
}

/* A queue above TERM_INPUT_HIGH holds one writer; removal wakes it. */
START_TEST(input_queue_hold)
{
	struct term	*t;
	char		*big;
	int		 a, b;
	size_t		 n = 3 * TERM_INPUT_HIGH;

	t = create(ARGV("/bin/sh", "-c",
	    "stty -icanon -echo; printf ready; sleep 30"));
	ck_assert(tu_run_until(loop, has_ready, t, WAIT_S));
	ck_assert(!job_input_full(term_job(t)));
	big = malloc(n);
	memset(big, 'x', n);
	ck_assert_int_eq(term_input(t, big, n), 0);
	free(big);
	/* The tty takes a few KiB at most; nobody reads the rest. */
	(void)tu_run_until(loop, is_ended, t, 0.2);
	ck_assert(job_input_full(term_job(t)));
	ck_assert_uint_gt(job_input_queued(term_job(t)), n - 64 * 1024);
	ck_assert_int_eq(job_input_hold(term_job(t), &a, wake_cb), 0);
	ck_assert_int_eq(job_input_hold(term_job(t), &b, wake_cb), -1);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_ptr_eq(job_input_writer(term_job(t)), &a);
	woken = -1;
	ck_assert_int_eq(term_delete(t), 0);
	ck_assert_int_eq(woken, ENOENT);
}
END_TEST

static bool
pid_gone(void *arg)
{
	return kill(*(pid_t *)arg, 0) == -1 && errno == ESRCH;
}

static bool
has_pid_line(void *arg)
{
	struct logstore	*ls = term_store(arg);
	char		*out;
	bool		 ok;

	if (ls == NULL || ls->end[0] == 0)
		return false;
	out = stored(arg);
	ok = strchr(out, '\n') != NULL;
	free(out);
	return ok;
}

/*
 * The job has a group of its own (job control) and ignores HUP and TERM:
 * only the session scan and the KILL after the grace reach it.
 */
START_TEST(terminate_reaches_job)
{
	struct term	*t;
	char		*out;
	pid_t		 job, lead;
	cJSON		*st;

	t = create(ARGV("/bin/bash", "--norc", "--noprofile", "-c",
	    "set -m; (trap '' HUP TERM; exec sleep 1000) & echo $!; wait"));
	ck_assert(tu_run_until(loop, has_pid_line, t, WAIT_S));
	out = stored(t);
	job = (pid_t)strtol(out, NULL, 10);
	free(out);
	ck_assert_int_gt(job, 1);
	st = term_status_json(t);
	lead = (pid_t)cJSON_GetObjectItem(st, "pid")->valueint;
	cJSON_Delete(st);
	ck_assert_int_ne(getpgid(job), lead);
	ck_assert_int_eq(getsid(job), lead);
	ck_assert_int_eq(term_terminate(t), 0);
	ck_assert(tu_run_until(loop, is_ended, t, WAIT_S));
	ck_assert(tu_run_until(loop, pid_gone, &job, TERM_KILL_GRACE + 3.0));
	ck_assert_int_eq(term_terminate(t), -1);
	ck_assert_int_eq(errno, ESRCH);
}
END_TEST

/* Size before exec, and resize. */
START_TEST(size_before_exec)
{
	struct term_opts	 o;
	struct term		*t;
	char			*out;
	bool			 failed;
	int			 err;

	memset(&o, 0, sizeof(o));
	o.argv = ARGV("/bin/sh", "-c", "stty size; env | grep ^TERM=");
	o.cols = 91;
	o.rows = 17;
	ck_assert_ptr_nonnull(t = term_create(&tt, &o, &failed, &err));
	ck_assert(tu_run_until(loop, is_ended, t, WAIT_S));
	out = stored(t);
	ck_assert_str_eq(out, "17 91\r\nTERM=xterm-256color\r\n");
	free(out);
	ck_assert_int_eq(term_resize(t, 10, 10), -1);
	ck_assert_int_eq(errno, ESRCH);
	/* An ended ID stays taken; the live limit holds. */
	o.id = term_id(t);
	ck_assert_ptr_null(term_create(&tt, &o, &failed, &err));
	ck_assert_int_eq(err, EEXIST);
}
END_TEST

Suite *
term_suite(void)
{
	Suite	*s = suite_create("term");
	TCase	*tc = tcase_create("lifecycle");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, end_after_last_output);
	tcase_add_test(tc, end_wait_bounded);
	tcase_add_test(tc, input_queue_hold);
	tcase_add_test(tc, terminate_reaches_job);
	tcase_add_test(tc, size_before_exec);
	suite_add_tcase(s, tc);
	return s;
}
