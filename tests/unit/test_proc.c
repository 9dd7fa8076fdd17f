/*
 * proc: real processes on the default loop, reaped by one ev_child (pid 0)
 * watcher exactly as the agent does.  Launch and exit codes, exec failures
 * that leave nothing behind, limits, signals and timeouts, groups that
 * settle late and grandchildren that escape, stdin, the environment, the
 * record's files, watchers, removal and trimming, and a state dir that
 * refuses writes (retried, and a table that starts without a boot dir).
 */
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#if defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#endif
#endif

#include "base/fsutil.h"
#include "base/util.h"
#include "core/proc.h"
#include "store/boot.h"
#include "testutil.h"

Suite *proc_suite(void);

#define ARGV(...)	((char *[]){ __VA_ARGS__, NULL })
#define WAIT_S		3.0

/* Events a watcher saw, in order. */
struct seen {
	struct job_watch	w;
	int			n[PROC_EV_GONE + 1];
	char			order[64];
};

static char		 state_path[64];
static int		 statefd = -1, procsfd = -1;
static char		 boot[BOOT_ID_LEN + 1];
static struct ev_loop	*loop;
static struct proctab	 tab;
static struct proctab	*tab2;		/* a second table, reaped too */
static ev_child		 reaper;
static struct rlimit	 start_nofile;	/* before proctab_init raises it */

static void	setup(void);
static void	teardown(void);
static void	reap_cb(struct ev_loop *, ev_child *, int);
static bool	is_exited(void *);
static bool	is_reaped(void *);
static bool	is_done(void *);
static bool	none_live(void *);
static struct proc *spawn(struct proc_opts *);
static int	spawn_err(struct proc_opts *, bool *);
static char	*rec_file(struct proc *, const char *, size_t *);
static cJSON	*rec_json(struct proc *, const char *);
static cJSON	*item(cJSON *, const char *);
static void	seen_cb(struct job_watch *, enum job_event);
static void	end_cb(struct job_watch *, enum job_event);
static bool	no_zombie(void *);
static bool	has_status(void *);
static bool	on_valgrind(void);
static void	make_noexec(char *, size_t);
static char	*proc_file(pid_t, const char *);
static void	raw_ignore(int, bool);
static void	fsize_limit(rlim_t);
static bool	owes_nothing(void *);

static void
setup(void)
{
	/* As the agent outside PID 1: orphans of our children come to us. */
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	signal(SIGPIPE, SIG_IGN);
	/* The base environment, as proctab_init takes it. */
	ck_assert_int_eq(setenv("TEND_X", "1", 1), 0);
	ck_assert_int_eq(setenv("UNIT_BASE", "kept", 1), 0);
	ck_assert_int_eq(setenv("UNIT_OVERRIDE", "base", 1), 0);

	statefd = tu_tmpdir(state_path, sizeof(state_path), "/tmp/tend-proc-");
	ck_assert_int_eq(boot_new_id(boot), 0);
	ck_assert_int_eq(boot_create(statefd, boot, &procsfd), 0);

	/* ev_child works on the default loop only. */
	loop = ev_default_loop(EVFLAG_AUTO);
	ck_assert_ptr_nonnull(loop);
	ev_child_init(&reaper, reap_cb, 0, 0);
	ev_child_start(loop, &reaper);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &start_nofile), 0);
	ck_assert_int_eq(proctab_init(&tab, loop, boot, statefd, procsfd), 0);
}

static void
teardown(void)
{
	proctab_signal_all(&tab, SIGKILL);
	(void)tu_run_until(loop, none_live, NULL, WAIT_S);
	proctab_free(&tab);
	ev_child_stop(loop, &reaper);
	/* Children of failed launches, if the loop did not get to them. */
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	ev_loop_destroy(loop);
	loop = NULL;
	close(procsfd);
	close(statefd);
	tu_rmtree(state_path);
}

/* The agent's reap loop. */
static void
reap_cb(struct ev_loop *l, ev_child *w, int revents)
{
	(void)l;
	(void)revents;
	proc_reaped(&tab, w->rpid, w->rstatus);
	if (tab2 != NULL)
		proc_reaped(tab2, w->rpid, w->rstatus);
}

static bool
is_exited(void *arg)
{
	struct proc	*p = arg;

	return proc_state(p) == PROC_EXITED;
}

static bool
is_reaped(void *arg)
{
	struct proc	*p = arg;

	return p->job.reaped;
}

/* Exited, and the output complete. */
static bool
is_done(void *arg)
{
	struct proc	*p = arg;

	return proc_state(p) == PROC_EXITED && proc_output_done(p);
}

static bool
none_live(void *arg)
{
	(void)arg;
	return tab.jobs.nlive == 0;
}

static struct proc *
spawn(struct proc_opts *o)
{
	struct proc	*p;
	bool		 failed = true;
	int		 err = -1;

	if (o->grace_s == 0)
		o->grace_s = 1;
	p = proc_spawn(&tab, o, &failed, &err);
	ck_assert_msg(p != NULL, "%s: %s", o->argv[0], strerror(err));
	ck_assert(!failed);
	return p;
}

/* A launch that must fail: its *err. */
static int
spawn_err(struct proc_opts *o, bool *failed)
{
	bool	f = false;
	int	err = 0;

	ck_assert_ptr_null(proc_spawn(&tab, o, &f, &err));
	if (failed != NULL)
		*failed = f;
	return err;
}

/* A file of the record, read as a client would (ended records close theirs). */
static char *
rec_file(struct proc *p, const char *name, size_t *len)
{
	char	path[PROC_ID_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", p->job.id, name);
	return tu_slurp(procsfd, path, len);
}

static cJSON *
rec_json(struct proc *p, const char *name)
{
	char	path[PROC_ID_MAX + 32];

	snprintf(path, sizeof(path), "%s/%s", p->job.id, name);
	return tu_json(procsfd, path);
}

/* A member that must be there. */
static cJSON *
item(cJSON *j, const char *key)
{
	cJSON	*v = cJSON_GetObjectItemCaseSensitive(j, key);

	ck_assert_msg(v != NULL, "no %s", key);
	return v;
}

static void
seen_cb(struct job_watch *w, enum job_event ev)
{
	struct seen	*s = (struct seen *)w;
	size_t		 n = strlen(s->order);

	s->n[ev]++;
	if (ev != JOB_EV_OUTPUT && n + 1 < sizeof(s->order)) {
		s->order[n] = "OXEFG"[ev];	/* F: EOF */
		s->order[n + 1] = '\0';
	}
}

/* ------------------------------------------------------------------ */
/* Launch and exit */

START_TEST(spawn_exit_code)
{
	struct proc_opts o = { .argv = ARGV("sh", "-c", "echo hi; exit 3") };
	struct proc	*p;
	cJSON		*j, *e, *a;
	char		*s, path[PROC_ID_MAX + 16];
	size_t		 len;

	p = spawn(&o);
	ck_assert_int_eq(p->job.state, PROC_RUNNING);
	ck_assert_int_gt(p->job.pid, 0);
	/* A generated ID: "p" and 12 hex digits. */
	ck_assert(proc_id_valid(p->job.id));
	ck_assert_uint_eq(strlen(p->job.id), 13);
	ck_assert_int_eq(p->job.id[0], 'p');
	ck_assert_ptr_eq(proc_find(&tab, p->job.id), p);
	ck_assert_int_eq(tab.jobs.nlive, 1);

	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
	ck_assert(p->job.reaped);
	ck_assert_int_eq(p->job.exit.code, 3);
	ck_assert_int_eq(p->job.exit.signal, 0);
	ck_assert(!p->job.exit.timed_out);
	ck_assert_int_ge(p->job.ended_ms, p->job.started_ms);
	ck_assert(proc_output_done(p));
	ck_assert_uint_eq(p->job.rec.ls.end[LS_STDOUT], 3);
	ck_assert_uint_eq(p->job.rec.ls.end[LS_STDERR], 0);
	ck_assert_int_eq(tab.jobs.nlive, 0);
	ck_assert_int_eq(tab.jobs.nended, 1);

	s = rec_file(p, "stdout", &len);
	ck_assert_uint_eq(len, 3);
	ck_assert_str_eq(s, "hi\n");
	free(s);
	/* Nothing on stderr: an empty file, or none (stores are lazy). */
	snprintf(path, sizeof(path), "%s/stderr", p->job.id);
	if ((s = fsutil_read(procsfd, path, 16, &len)) != NULL) {
		ck_assert_uint_eq(len, 0);
		free(s);
	} else
		ck_assert_int_eq(errno, ENOENT);

	j = rec_json(p, "status.json");
	ck_assert_str_eq(item(j, "state")->valuestring, "exited");
	e = item(j, "exit");
	ck_assert_int_eq(item(e, "code")->valueint, 3);
	/* Absent, not null, unless signalled (DESIGN §4). */
	ck_assert(cJSON_GetObjectItemCaseSensitive(e, "signal") == NULL);
	ck_assert(cJSON_IsFalse(item(e, "timedOut")));
	ck_assert(cJSON_IsString(item(j, "endedAt")));
	cJSON_Delete(j);

	j = rec_json(p, "meta.json");
	a = item(j, "argv");
	ck_assert_int_eq(cJSON_GetArraySize(a), 3);
	ck_assert_str_eq(cJSON_GetArrayItem(a, 2)->valuestring, "echo hi; exit 3");
	ck_assert_str_eq(item(j, "bootId")->valuestring, boot);
	ck_assert_str_eq(item(item(j, "options"), "stdin")->valuestring, "null");
	cJSON_Delete(j);
}
END_TEST

static bool
has_status(void *arg)
{
	struct proc	*p = arg;
	struct stat	 st;
	char		 path[PROC_ID_MAX + 16];

	snprintf(path, sizeof(path), "%s/status.json", p->job.id);
	return fstatat(procsfd, path, &st, 0) == 0;
}

START_TEST(status_while_running)
{
	struct proc_opts o = { .argv = ARGV("sleep", "5") };
	struct proc	*p;
	cJSON		*j;

	/* A process that goes on gets a "running" status soon. */
	p = spawn(&o);
	ck_assert(tu_run_until(loop, has_status, p, WAIT_S));
	j = rec_json(p, "status.json");
	ck_assert_str_eq(item(j, "state")->valuestring, "running");
	ck_assert_int_eq(item(j, "pid")->valueint, p->job.pid);
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j, "exit"));
	cJSON_Delete(j);
	/* Replaced by the final one. */
	ck_assert_int_eq(proc_kill(p, SIGKILL, true), 0);
	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
	j = rec_json(p, "status.json");
	ck_assert_str_eq(item(j, "state")->valuestring, "exited");
	cJSON_Delete(j);
}
END_TEST

START_TEST(spawn_all_exit_codes)
{
	static const int codes[] = { 0, 1, 2, 126, 127, 128, 200, 255 };
	struct proc	*p[8];
	char		 cmd[8][32];
	size_t		 i;

	for (i = 0; i < 8; i++) {
		struct proc_opts o = { .argv = ARGV("sh", "-c", cmd[i]) };

		snprintf(cmd[i], sizeof(cmd[i]), "exit %d", codes[i]);
		p[i] = spawn(&o);
	}
	ck_assert(tu_run_until(loop, none_live, NULL, WAIT_S));
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(p[i]->job.exit.code, codes[i]);
		ck_assert_int_eq(p[i]->job.exit.signal, 0);
	}
}
END_TEST

START_TEST(output_drained_whole)
{
	struct proc_opts o = { .argv = ARGV("sh", "-c",
	    "head -c 300000 /dev/zero; head -c 70000 /dev/zero >&2") };
	struct proc	*p;
	char		*s;
	size_t		 len, i;

	p = spawn(&o);
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert_uint_eq(p->job.rec.ls.end[LS_STDOUT], 300000);
	ck_assert_uint_eq(p->job.rec.ls.end[LS_STDERR], 70000);
	s = rec_file(p, "stdout", &len);
	ck_assert_uint_eq(len, 300000);
	for (i = 0; i < len; i++)
		ck_assert_int_eq(s[i], 0);
	free(s);
	ck_assert_uint_eq(tab.jobs.stored, 370000);
}
END_TEST

static bool
on_valgrind(void)
{
#ifdef RUNNING_ON_VALGRIND
	return RUNNING_ON_VALGRIND;
#else
	const char	*pre = getenv("LD_PRELOAD");

	return pre != NULL && strstr(pre, "vgpreload") != NULL;
#endif
}

/* No child of ours is a zombie (without reaping one). */
static bool
no_zombie(void *arg)
{
	siginfo_t	si;

	(void)arg;
	memset(&si, 0, sizeof(si));
	if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == -1)
		return errno == ECHILD;
	return si.si_pid == 0;
}

/* A script that is not executable, in the state dir. */
static void
make_noexec(char *path, size_t n)
{
	int	fd;

	snprintf(path, n, "%s/noexec", state_path);
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
}

START_TEST(spawn_not_found_leaves_nothing)
{
	struct proc_opts o = { .id = "ghost" };
	char		 noexec[128], path[160];
	bool		 failed;

	/* Not on PATH. */
	o.argv = ARGV("tend-no-such-binary-on-path");
	ck_assert_int_eq(spawn_err(&o, &failed), ENOENT);
	ck_assert(failed);
	ck_assert(!tu_exists(procsfd, "ghost"));
	ck_assert_ptr_null(tab.jobs.head);
	ck_assert_int_eq(tab.jobs.nlive, 0);

	/* On the request's PATH, but not executable, even for root. */
	make_noexec(noexec, sizeof(noexec));
	snprintf(path, sizeof(path), "PATH=%s", state_path);
	o.argv = ARGV("noexec");
	o.env = ARGV(path);
	ck_assert_int_eq(spawn_err(&o, &failed), EACCES);
	ck_assert(failed);
	ck_assert(!tu_exists(procsfd, "ghost"));
	o.env = NULL;
	ck_assert_ptr_null(tab.jobs.head);
	ck_assert_uint_eq(tab.jobs.started, 0);

	/* And the ID can be used. */
	o.argv = ARGV("true");
	spawn(&o);
	ck_assert(tu_exists(procsfd, "ghost"));
}
END_TEST

START_TEST(exec_failures_leave_nothing)
{
	struct proc_opts o = { .id = "ghost" };
	char		 noexec[128];
	bool		 failed;

	/*
	 * valgrind runs posix_spawn's CLONE_VM|CLONE_VFORK child as a plain
	 * fork, so an exec or chdir failure in the child cannot reach the
	 * parent: the launch "succeeds" and the child exits 127.
	 */
	if (on_valgrind()) {
		TU_SKIP("under valgrind");
		return;
	}
	/* A missing binary, by path. */
	o.argv = ARGV("/nonexistent/tend-no-such-binary");
	ck_assert_int_eq(spawn_err(&o, &failed), ENOENT);
	ck_assert(failed);
	ck_assert(!tu_exists(procsfd, "ghost"));

	/* A missing cwd. */
	o.argv = ARGV("true");
	o.cwd = "/nonexistent/dir";
	ck_assert_int_eq(spawn_err(&o, &failed), ENOENT);
	ck_assert(failed);
	ck_assert(!tu_exists(procsfd, "ghost"));
	o.cwd = NULL;

	/* Not executable, by path. */
	make_noexec(noexec, sizeof(noexec));
	o.argv = ARGV(noexec);
	ck_assert_int_eq(spawn_err(&o, &failed), EACCES);
	ck_assert(failed);
	ck_assert(!tu_exists(procsfd, "ghost"));
	ck_assert_ptr_null(tab.jobs.head);
	ck_assert_uint_eq(tab.jobs.started, 0);

	/* A child that failed to exec, if there was one, is collected. */
	ck_assert(tu_run_until(loop, no_zombie, NULL, WAIT_S));
	o.argv = ARGV("true");
	spawn(&o);
	ck_assert(tu_exists(procsfd, "ghost"));
}
END_TEST

START_TEST(id_taken)
{
	struct proc_opts o = { .argv = ARGV("sleep", "5"), .id = "dup" };
	struct proc	*p;
	bool		 failed = true;

	p = spawn(&o);
	ck_assert_str_eq(p->job.id, "dup");
	o.argv = ARGV("true");
	ck_assert_int_eq(spawn_err(&o, &failed), EEXIST);
	ck_assert(!failed);
	/* The first is untouched. */
	ck_assert_ptr_eq(proc_find(&tab, "dup"), p);
	ck_assert_int_eq(tab.jobs.nlive, 1);
	ck_assert_int_eq(p->job.state, PROC_RUNNING);
	ck_assert(tu_exists(procsfd, "dup"));

	/* An ended record still holds its ID. */
	ck_assert_int_eq(proc_kill(p, SIGKILL, true), 0);
	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
	ck_assert_int_eq(spawn_err(&o, &failed), EEXIST);
	ck_assert(!failed);
	ck_assert_int_eq(p->job.exit.code, 137);
}
END_TEST

/*
 * More records than the lookups have buckets: IDs and pids share them.
 * Each exit code still reaches its own record, and each ID finds its own
 * record, before and after half of them are removed.
 */
START_TEST(lookups_past_the_buckets)
{
	enum { N = PROC_HASH + 8 };
	static struct proc *p[N];
	static char	 cmd[N][16], id[N][16];
	int		 i;

	for (i = 0; i < N; i++) {
		struct proc_opts o = { .argv = ARGV("sh", "-c", cmd[i]),
		    .id = id[i] };

		snprintf(cmd[i], sizeof(cmd[i]), "exit %d", i % 256);
		snprintf(id[i], sizeof(id[i]), "h%d", i);
		p[i] = spawn(&o);
	}
	ck_assert(tu_run_until(loop, none_live, NULL, 10 * WAIT_S));
	for (i = 0; i < N; i++) {
		ck_assert_int_eq(p[i]->job.exit.code, i % 256);
		ck_assert_ptr_eq(proc_find(&tab, id[i]), p[i]);
	}
	for (i = 0; i < N; i += 2)
		ck_assert_int_eq(proc_delete(p[i]), 0);
	for (i = 0; i < N; i++)
		ck_assert_ptr_eq(proc_find(&tab, id[i]), i % 2 ? p[i] : NULL);
	ck_assert_ptr_null(proc_find(&tab, "h"));
}
END_TEST

START_TEST(maxlive_limit)
{
	struct proc_opts o = { .argv = ARGV("sleep", "5") };
	struct proc	*a;
	bool		 failed = true;

	tab.jobs.maxlive = 2;
	a = spawn(&o);
	spawn(&o);
	o.id = "third";
	ck_assert_int_eq(spawn_err(&o, &failed), EAGAIN);
	ck_assert(!failed);
	ck_assert(!tu_exists(procsfd, "third"));
	ck_assert_int_eq(tab.jobs.nlive, 2);

	/* An ended process frees its slot. */
	ck_assert_int_eq(proc_kill(a, SIGKILL, true), 0);
	ck_assert(tu_run_until(loop, is_exited, a, WAIT_S));
	spawn(&o);
	ck_assert_int_eq(tab.jobs.nlive, 2);
}
END_TEST

START_TEST(id_valid_vectors)
{
	char		 longest[PROC_ID_MAX + 2];
	static const char *const good[] = {
		"a", "Z", "0", "web", "web-1", "a.b_c-d", "A1.2", "x--", "p0123",
	};
	static const char *const bad[] = {
		"", "-a", ".a", "_a", ".", "..", "a/b", "/a", "a b", "a\n",
		"a:b", "a%2f", "\xc3\xa9", "a\xc3\xa9", "a*", "a?",
	};
	size_t		 i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(proc_id_valid(good[i]), "%s refused", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!proc_id_valid(bad[i]), "%s accepted", bad[i]);
	memset(longest, 'x', PROC_ID_MAX);
	longest[PROC_ID_MAX] = '\0';
	ck_assert(proc_id_valid(longest));
	longest[PROC_ID_MAX] = 'x';
	longest[PROC_ID_MAX + 1] = '\0';
	ck_assert(!proc_id_valid(longest));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Signals, timeouts, groups */

START_TEST(kill_sigkill)
{
	struct proc_opts o = { .argv = ARGV("sleep", "5") };
	struct proc	*p;
	cJSON		*j;

	p = spawn(&o);
	ck_assert_int_eq(proc_kill(p, SIGKILL, true), 0);
	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
	ck_assert_int_eq(p->job.exit.code, 137);
	ck_assert_int_eq(p->job.exit.signal, SIGKILL);
	ck_assert(!p->job.exit.timed_out);
	j = rec_json(p, "status.json");
	ck_assert_int_eq(item(item(j, "exit"), "signal")->valueint, 9);
	ck_assert_int_eq(item(item(j, "exit"), "code")->valueint, 137);
	cJSON_Delete(j);

	errno = 0;
	ck_assert_int_eq(proc_kill(p, SIGKILL, true), -1);
	ck_assert_int_eq(errno, ESRCH);
	errno = 0;
	ck_assert_int_eq(proc_kill(p, SIGTERM, false), -1);
	ck_assert_int_eq(errno, ESRCH);
}
END_TEST

START_TEST(kill_root_only)
{
	struct proc_opts o = { .argv = ARGV("sh", "-c", "sleep 5 & wait") };
	struct proc	*p;

	p = spawn(&o);
	/* Let sh start its child before the root is signalled. */
	{
		struct timespec	ms = { 0, 50 * 1000 * 1000 };

		nanosleep(&ms, NULL);
	}
	ck_assert_int_eq(proc_kill(p, SIGTERM, false), 0);
	ck_assert(tu_run_until(loop, is_reaped, p, WAIT_S));
	ck_assert_int_eq(p->job.exit.signal, SIGTERM);
	ck_assert_int_eq(p->job.exit.code, 143);
	/* The group lives on: still running, the root cannot be signalled. */
	ck_assert(!tu_run_until(loop, is_exited, p, 0.2));
	ck_assert_int_eq(p->job.state, PROC_RUNNING);
	errno = 0;
	ck_assert_int_eq(proc_kill(p, SIGTERM, false), -1);
	ck_assert_int_eq(errno, ESRCH);
	ck_assert_int_eq(proc_kill(p, SIGKILL, true), 0);
	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
	/* exit records the root's outcome, not the last member's. */
	ck_assert_int_eq(p->job.exit.code, 143);
}
END_TEST

START_TEST(timeout_term_then_kill)
{
	struct proc_opts stubborn = {
		.argv = ARGV("sh", "-c", "trap '' TERM; exec sleep 5"),
		.timeout_s = 0.2, .grace_s = 0.2,
	};
	struct proc_opts polite = {
		.argv = ARGV("sleep", "5"), .timeout_s = 0.2, .grace_s = 5,
	};
	struct proc	*s, *q;
	double		 t0 = tu_now(), t;
	cJSON		*j;

	s = spawn(&stubborn);
	q = spawn(&polite);
	/* TERM ends the polite one at once, without the grace period. */
	ck_assert(tu_run_until(loop, is_exited, q, WAIT_S));
	t = tu_now() - t0;
	ck_assert(q->job.exit.timed_out);
	ck_assert_int_eq(q->job.exit.signal, SIGTERM);
	ck_assert_int_eq(q->job.exit.code, 143);
	ck_assert_double_ge(t, 0.15);
	ck_assert_double_lt(t, 2.0);
	/* The one that ignores TERM is killed after the grace period. */
	ck_assert(tu_run_until(loop, is_exited, s, WAIT_S));
	t = tu_now() - t0;
	ck_assert(s->job.exit.timed_out);
	ck_assert_int_eq(s->job.exit.signal, SIGKILL);
	ck_assert_int_eq(s->job.exit.code, 137);
	ck_assert_double_ge(t, 0.35);
	ck_assert_double_lt(t, 2.5);
	j = rec_json(s, "status.json");
	ck_assert(cJSON_IsTrue(item(item(j, "exit"), "timedOut")));
	cJSON_Delete(j);
}
END_TEST

START_TEST(no_timeout_after_exit)
{
	struct proc_opts o = { .argv = ARGV("true"), .timeout_s = 0.1 };
	struct proc	*p;

	p = spawn(&o);
	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
	/* past the timeout */
	(void)tu_run_until(loop, is_reaped, p, 0.3);
	ck_assert(!p->job.exit.timed_out);
	ck_assert_int_eq(p->job.exit.code, 0);
	ck_assert_int_eq(p->job.exit.signal, 0);
}
END_TEST

/* At END the output of the whole group is in, whoever wrote it last. */
static void
end_cb(struct job_watch *w, enum job_event ev)
{
	struct seen	*s = (struct seen *)w;

	seen_cb(w, ev);
	if (ev == JOB_EV_END) {
		ck_assert_uint_eq(proc_of(w->job)->job.rec.ls.end[LS_STDOUT], 5);
		ck_assert(proc_output_done(proc_of(w->job)));
		ck_assert_int_eq(proc_of(w->job)->job.state, PROC_EXITED);
		s->n[PROC_EV_GONE] = 100;	/* marks the check as done */
	}
}

START_TEST(group_settles_late)
{
	struct proc_opts o = { .argv = ARGV("sh", "-c",
	    "(sleep 0.3; echo late) & exit 0") };
	struct proc	*p;
	struct seen	 s;
	double		 t0 = tu_now();

	memset(&s, 0, sizeof(s));
	p = spawn(&o);
	job_watch_add(proc_job(p), &s.w, end_cb);
	ck_assert(tu_run_until(loop, is_reaped, p, WAIT_S));
	ck_assert_int_eq(p->job.exit.code, 0);
	/* The root is gone, its group is not. */
	ck_assert_int_eq(p->job.state, PROC_RUNNING);
	ck_assert_int_eq(tab.jobs.nlive, 1);
	ck_assert_int_eq(s.n[PROC_EV_EXIT], 1);
	ck_assert_int_eq(s.n[PROC_EV_END], 0);
	errno = 0;
	ck_assert_int_eq(proc_kill(p, 0, false), -1);
	ck_assert_int_eq(errno, ESRCH);
	ck_assert_int_eq(proc_kill(p, 0, true), 0);
	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
	ck_assert_double_ge(tu_now() - t0, 0.25);
	ck_assert_int_eq(p->job.exit.code, 0);
	ck_assert_int_eq(s.n[PROC_EV_END], 1);
	ck_assert_int_eq(s.n[PROC_EV_GONE], 100);
	ck_assert_int_eq(tab.jobs.nlive, 0);
	job_watch_del(&s.w);
}
END_TEST

START_TEST(escaped_grandchild)
{
	struct proc_opts o = { .argv = ARGV("sh", "-c",
	    "setsid sh -c 'sleep 0.5; echo late' & echo early") };
	struct proc	*p;
	char		*s;

	if (access("/usr/bin/setsid", X_OK) != 0 &&
	    access("/bin/setsid", X_OK) != 0) {
		TU_SKIP("no setsid(1)");
		return;
	}
	p = spawn(&o);
	/* Out of the group: the record ends without it... */
	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
	ck_assert(!proc_output_done(p));
	ck_assert_uint_eq(p->job.rec.ls.end[LS_STDOUT], 6);
	/* ...and what it writes to the inherited pipe is still stored. */
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	s = rec_file(p, "stdout", NULL);
	ck_assert_str_eq(s, "early\nlate\n");
	free(s);
	ck_assert_uint_eq(p->job.rec.ls.end[LS_STDOUT], 11);
	{
		cJSON	*j = rec_json(p, "status.json");

		ck_assert_int_eq(item(j, "stdoutBytes")->valueint, 11);
		cJSON_Delete(j);
	}
}
END_TEST

START_TEST(signal_all_and_finalize)
{
	struct proc_opts o = { .argv = ARGV("sleep", "5") };
	struct proc_opts g = { .argv = ARGV("sh", "-c", "sleep 5 & exit 0") };
	struct proc	*a, *b, *c;

	a = spawn(&o);
	b = spawn(&o);
	c = spawn(&g);
	ck_assert(tu_run_until(loop, is_reaped, c, WAIT_S));
	proctab_signal_all(&tab, SIGTERM);
	ck_assert(tu_run_until(loop, none_live, NULL, WAIT_S));
	ck_assert_int_eq(a->job.exit.signal, SIGTERM);
	ck_assert_int_eq(b->job.exit.signal, SIGTERM);
	ck_assert_int_eq(c->job.exit.code, 0);

	/* At shutdown, a reaped root whose group lingers gets a final status. */
	c = spawn(&g);
	ck_assert(tu_run_until(loop, is_reaped, c, WAIT_S));
	ck_assert_int_eq(c->job.state, PROC_RUNNING);
	proctab_finalize(&tab);
	ck_assert_int_eq(c->job.state, PROC_EXITED);
	ck_assert_int_eq(tab.jobs.nlive, 0);
	{
		cJSON	*j = rec_json(c, "status.json");

		ck_assert_str_eq(item(j, "state")->valuestring, "exited");
		cJSON_Delete(j);
	}
	(void)kill(-c->job.pid, SIGKILL);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Restart policy */

static const char *
restart_state(struct proc *p)
{
	static char	 st[16];
	cJSON		*j = proc_status_json(p);

	snprintf(st, sizeof(st), "%s", item(item(j, "restart"),
	    "state")->valuestring);
	cJSON_Delete(j);
	return st;
}

static bool
is_waiting(void *arg)
{
	return strcmp(restart_state(arg), "waiting") == 0;
}

START_TEST(restart_numbered_runs)
{
	struct proc_opts o = { .argv = ARGV("sh", "-c", "echo r; exit 2"),
	    .restart = { PROC_RESTART_ON_FAILURE, 2, 0.02, 0.03 } };
	struct proc	*p;
	cJSON		*j, *runs, *r;
	int		 i;

	p = spawn(&o);
	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
	ck_assert_int_eq(proc_run(p), 3);
	ck_assert_uint_eq(p->job.rec.ls.end[LS_STDOUT], 6);
	ck_assert_int_eq(tab.jobs.nlive, 0);
	ck_assert_uint_eq(tab.jobs.started, 1);	/* one record */
	j = rec_json(p, "status.json");
	ck_assert_int_eq(item(j, "run")->valueint, 3);
	ck_assert_int_eq(item(j, "restarts")->valueint, 2);
	ck_assert_str_eq(item(item(j, "restart"), "state")->valuestring,
	    "gave_up");
	ck_assert_str_eq(item(item(j, "restart"), "reason")->valuestring,
	    "maxRestarts");
	ck_assert_int_eq(item(item(j, "exit"), "code")->valueint, 2);
	runs = item(j, "runs");
	ck_assert_int_eq(cJSON_GetArraySize(runs), 3);
	for (i = 0; i < 3; i++) {
		r = cJSON_GetArrayItem(runs, i);
		ck_assert_int_eq(item(r, "run")->valueint, i + 1);
		ck_assert_int_eq(item(r, "stdoutOffset")->valueint, 2 * i);
		ck_assert_int_eq(item(item(r, "exit"), "code")->valueint, 2);
	}
	ck_assert_int_ne(item(cJSON_GetArrayItem(runs, 0), "pid")->valueint,
	    item(cJSON_GetArrayItem(runs, 2), "pid")->valueint);
	cJSON_Delete(j);
}
END_TEST

START_TEST(restart_kill_cancels_wait)
{
	struct proc_opts o = { .argv = ARGV("true"),
	    .restart = { PROC_RESTART_ALWAYS, -1, 30, 30 } };
	struct proc	*p;

	p = spawn(&o);
	ck_assert(tu_run_until(loop, is_waiting, p, WAIT_S));
	ck_assert_int_eq(p->job.state, PROC_RUNNING);
	ck_assert_int_eq(tab.jobs.nlive, 1);
	ck_assert_int_eq(proc_kill(p, SIGTERM, true), 0);
	/* At once: there was no process to wait for. */
	ck_assert_int_eq(p->job.state, PROC_EXITED);
	ck_assert_int_eq(tab.jobs.nlive, 0);
	ck_assert_str_eq(restart_state(p), "stopped");
	ck_assert_int_eq(proc_run(p), 1);
	errno = 0;
	ck_assert_int_eq(proc_kill(p, SIGTERM, true), -1);
	ck_assert_int_eq(errno, ESRCH);
}
END_TEST

START_TEST(restart_not_after_tend_signals)
{
	struct proc_opts o = { .argv = ARGV("sleep", "5"),
	    .restart = { PROC_RESTART_ALWAYS, -1, 0.01, 0.01 } };
	struct proc_opts w = { .argv = ARGV("false"),
	    .restart = { PROC_RESTART_ON_FAILURE, -1, 30, 30 } };
	struct proc	*p, *q;

	/* A kill from tend ends the policy, always included. */
	p = spawn(&o);
	ck_assert_int_eq(proc_kill(p, SIGKILL, true), 0);
	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
	ck_assert_int_eq(proc_run(p), 1);
	ck_assert_str_eq(restart_state(p), "stopped");
	/* Shutdown: a run signalled, a record between runs ended. */
	p = spawn(&o);
	q = spawn(&w);
	ck_assert(tu_run_until(loop, is_waiting, q, WAIT_S));
	proctab_signal_all(&tab, SIGTERM);
	ck_assert_int_eq(q->job.state, PROC_EXITED);
	ck_assert(tu_run_until(loop, none_live, NULL, WAIT_S));
	ck_assert_int_eq(proc_run(p), 1);
	ck_assert_int_eq(proc_run(q), 1);
	ck_assert_str_eq(restart_state(p), "stopped");
}
END_TEST

/* ------------------------------------------------------------------ */
/* Stdin, environment, the child's state */

START_TEST(stdin_pipe)
{
	struct proc_opts o = { .argv = ARGV("cat"), .stdin_pipe = true };
	struct proc	*p;
	char		*d, *s;
	size_t		 n = 200 * 1000, len, i;

	d = malloc(n);
	ck_assert_ptr_nonnull(d);
	for (i = 0; i < n; i++)
		d[i] = (char)(i * 31 + i / 1000);
	p = spawn(&o);
	/* More than a pipe holds: the rest is written as cat reads. */
	ck_assert_int_eq(proc_stdin(p, d, 1000, false), 0);
	ck_assert_int_eq(proc_stdin(p, d + 1000, n - 1000, true), 0);
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert_int_eq(p->job.exit.code, 0);
	ck_assert_int_eq(p->job.in, -1);	/* stdin closed */
	s = rec_file(p, "stdout", &len);
	ck_assert_uint_eq(len, n);
	ck_assert_int_eq(memcmp(s, d, n), 0);
	free(s);
	free(d);
	errno = 0;
	ck_assert_int_eq(proc_stdin(p, "x", 1, false), -1);
	ck_assert_int_eq(errno, EPIPE);
}
END_TEST

static bool
has_three(void *arg)
{
	struct proc	*p = arg;

	return p->job.rec.ls.end[LS_STDOUT] == 3;
}

START_TEST(stdin_stays_open)
{
	struct proc_opts o = { .argv = ARGV("cat"), .stdin_pipe = true };
	struct proc_opts n = { .argv = ARGV("cat") };
	struct proc	*p, *q;
	cJSON		*j;

	p = spawn(&o);
	ck_assert_int_eq(proc_stdin(p, "abc", 3, false), 0);
	ck_assert(tu_run_until(loop, has_three, p, WAIT_S));
	ck_assert_int_eq(p->job.state, PROC_RUNNING);
	/* Closing without data. */
	ck_assert_int_eq(proc_stdin(p, "", 0, true), 0);
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert_uint_eq(p->job.rec.ls.end[LS_STDOUT], 3);
	j = rec_json(p, "meta.json");
	ck_assert_str_eq(item(item(j, "options"), "stdin")->valuestring,
	    "pipe");
	cJSON_Delete(j);

	/* Without a pipe, stdin is /dev/null and cannot be written. */
	q = spawn(&n);
	errno = 0;
	ck_assert_int_eq(proc_stdin(q, "x", 1, false), -1);
	ck_assert_int_eq(errno, EPIPE);
	ck_assert(tu_run_until(loop, is_done, q, WAIT_S));
	ck_assert_uint_eq(q->job.rec.ls.end[LS_STDOUT], 0);
	ck_assert_int_eq(q->job.exit.code, 0);
}
END_TEST

/* A held stdin writer: what its wake told it. */
struct held {
	int	calls;
	int	err;
	size_t	left;		/* queued bytes at the wake */
};

static void
held_wake(struct job *j, void *writer, int err)
{
	struct held	*h = writer;

	h->calls++;
	h->err = err;
	h->left = buf_avail(&j->inbuf);
}

static bool
was_woken(void *arg)
{
	return ((struct held *)arg)->calls > 0;
}

START_TEST(stdin_hold_and_wake)
{
	/* It reads once told to: the queue fills first, whatever the pace. */
	struct proc_opts o = {
		.argv = ARGV("sh", "-c",
		    "while [ ! -e go ]; do sleep 0.01; done; exec cat"),
		.cwd = state_path,
		.stdin_pipe = true,
	};
	struct proc_opts s = { .argv = ARGV("sleep", "100"), .stdin_pipe = true };
	struct held	 a = { 0 }, b = { 0 };
	struct proc	*p;
	size_t		 n = 2 * PROC_STDIN_HIGH;
	char		*d;

	d = calloc(1, n);
	ck_assert_ptr_nonnull(d);

	/* A reader: the writer is woken once the queue is below half. */
	p = spawn(&o);
	ck_assert(!job_input_full(&p->job));
	ck_assert_int_eq(proc_stdin(p, d, n, false), 0);
	ck_assert(job_input_full(&p->job));
	ck_assert_int_eq(job_input_hold(&p->job, &a, held_wake), 0);
	errno = 0;
	ck_assert_int_eq(job_input_hold(&p->job, &b, held_wake), -1);
	ck_assert_int_eq(errno, EBUSY);
	tu_put(statefd, "go", "");
	ck_assert(tu_run_until(loop, was_woken, &a, WAIT_S));
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(a.err, 0);
	ck_assert_uint_lt(a.left, PROC_STDIN_HIGH / 2);
	ck_assert_ptr_null(p->job.in_writer);
	ck_assert_int_eq(b.calls, 0);
	/* Closing after the queue: everything written, nothing lost. */
	memset(&a, 0, sizeof(a));
	ck_assert_int_eq(job_input_hold(&p->job, &a, held_wake), 0);
	ck_assert_int_eq(proc_stdin(p, d, n, true), 0);
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert_int_eq(a.calls, 1);
	ck_assert_int_eq(a.err, 0);
	ck_assert_uint_eq(p->job.rec.ls.end[LS_STDOUT], 2 * n);

	/* No reader: the process ends with bytes queued, which are lost. */
	memset(&a, 0, sizeof(a));
	p = spawn(&s);
	ck_assert_int_eq(proc_stdin(p, d, n, false), 0);
	ck_assert_int_eq(job_input_hold(&p->job, &a, held_wake), 0);
	/* One that let go is not woken. */
	job_input_unhold(&p->job);
	ck_assert_int_eq(job_input_hold(&p->job, &b, held_wake), 0);
	ck_assert_int_eq(proc_kill(p, SIGKILL, true), 0);
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert_int_eq(a.calls, 0);
	ck_assert_int_eq(b.calls, 1);
	ck_assert_int_eq(b.err, EPIPE);
	ck_assert(!job_input_full(&p->job));
	free(d);
}
END_TEST

START_TEST(child_env)
{
	struct proc_opts o = {
		.argv = ARGV("env"),
		.env = ARGV("UNIT_OVERRIDE=s3cr3t-override", "UNIT_NEW=s3cr3t-new"),
	};
	struct proc	*p;
	char		*s, *line, *save;
	int		 override = 0, base = 0, added = 0;
	cJSON		*j, *a;

	p = spawn(&o);
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	s = rec_file(p, "stdout", NULL);
	for (line = strtok_r(s, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		ck_assert_msg(strncmp(line, "TEND_", 5) != 0, "leaked: %s", line);
		if (strncmp(line, "UNIT_OVERRIDE=", 14) == 0) {
			ck_assert_str_eq(line, "UNIT_OVERRIDE=s3cr3t-override");
			override++;
		}
		if (strcmp(line, "UNIT_BASE=kept") == 0)
			base++;
		if (strcmp(line, "UNIT_NEW=s3cr3t-new") == 0)
			added++;
	}
	free(s);
	ck_assert_int_eq(override, 1);
	ck_assert_int_eq(base, 1);
	ck_assert_int_eq(added, 1);

	/* meta.json names the variables and never holds their values. */
	s = rec_file(p, "meta.json", NULL);
	ck_assert_ptr_null(strstr(s, "s3cr3t"));
	free(s);
	j = rec_json(p, "meta.json");
	a = item(j, "env");
	ck_assert_int_eq(cJSON_GetArraySize(a), 2);
	ck_assert_str_eq(cJSON_GetArrayItem(a, 0)->valuestring, "UNIT_OVERRIDE");
	ck_assert_str_eq(cJSON_GetArrayItem(a, 1)->valuestring, "UNIT_NEW");
	cJSON_Delete(j);
}
END_TEST

/* Read a /proc file of pid. */
static char *
proc_file(pid_t pid, const char *name)
{
	char	path[64], *s;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	s = fsutil_read(AT_FDCWD, path, 1 << 16, NULL);
	ck_assert_msg(s != NULL, "%s: %s", path, strerror(errno));
	return s;
}

/* Ignore signal 32 or 33, which glibc's sigaction refuses to touch. */
static void
raw_ignore(int sig, bool ignore)
{
	struct {
		void		*handler;
		unsigned long	 flags;
		void		*restorer;
		uint64_t	 mask;
	}	ksa = { ignore ? (void *)SIG_IGN : (void *)SIG_DFL, 0, NULL, 0 };

	ck_assert_int_eq(syscall(SYS_rt_sigaction, sig, &ksa, NULL,
	    sizeof(ksa.mask)), 0);
}

START_TEST(child_starts_clean)
{
	struct proc_opts st = { .argv = ARGV("cat", "/proc/self/status") };
	struct proc_opts sid = { .argv = ARGV("cat", "/proc/self/stat") };
	struct proc	*a, *b, *d;
	char		*s, fdpath[64], comm[64];
	int		 leak, pid, ppid, pgrp, session;
	char		 state;
	sigset_t	 set;

	/*
	 * What the agent's own state would leak: a blocked signal, ignored
	 * ones (among them 33, which glibc reserves), an fd without
	 * close-on-exec.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGUSR2, SIG_IGN);
	raw_ignore(33, true);
	leak = open("/dev/null", O_RDONLY);
	ck_assert_int_ge(leak, 0);
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", leak);
	{
		struct proc_opts fd = { .argv = ARGV("readlink", fdpath) };

		d = spawn(&fd);
	}
	a = spawn(&st);
	b = spawn(&sid);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	signal(SIGUSR2, SIG_DFL);
	raw_ignore(33, false);
	close(leak);
	ck_assert(tu_run_until(loop, none_live, NULL, WAIT_S));

	s = rec_file(a, "stdout", NULL);
	ck_assert_msg(strstr(s, "\nSigBlk:\t0000000000000000\n") != NULL, "%s", s);
	ck_assert_msg(strstr(s, "\nSigIgn:\t0000000000000000\n") != NULL, "%s", s);
	free(s);

	/* Its own session and process group. */
	s = rec_file(b, "stdout", NULL);
	ck_assert_int_eq(sscanf(s, "%d %63s %c %d %d %d", &pid, comm, &state,
	    &ppid, &pgrp, &session), 6);
	ck_assert_int_eq(pid, b->job.pid);
	ck_assert_int_eq(pgrp, b->job.pid);
	ck_assert_int_eq(session, b->job.pid);
	free(s);

	/* No fd of the agent reaches the child: readlink fails. */
	ck_assert_int_eq(d->job.exit.code, 1);
}
END_TEST

START_TEST(child_limits)
{
	struct proc_opts o = { .argv = ARGV("sleep", "5") };
	struct proc	*p;
	char		*s, *line, want[64];

	/*
	 * Started with a soft fd limit under the hard one, the table raises
	 * its own and gives children the one it started with.
	 */
	proctab_free(&tab);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &start_nofile), 0);
	if (start_nofile.rlim_max > 256) {
		start_nofile.rlim_cur = 256;
		ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &start_nofile), 0);
	}
	ck_assert_int_eq(proctab_init(&tab, loop, boot, statefd, procsfd), 0);
	{
		struct rlimit	now;

		ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &now), 0);
		ck_assert_uint_eq(now.rlim_cur, start_nofile.rlim_max);
	}

	/* Once launched, the child has the score and fd limit it is given. */
	p = spawn(&o);
	s = proc_file(p->job.pid, "oom_score_adj");
	ck_assert_int_eq(atoi(s), tab.limits.oom_adj);
	free(s);
	s = proc_file(p->job.pid, "limits");
	line = strstr(s, "Max open files");
	ck_assert_ptr_nonnull(line);
	snprintf(want, sizeof(want), "Max open files %llu",
	    (unsigned long long)start_nofile.rlim_cur);
	/* Collapse the table's padding before comparing. */
	{
		char	*r = line, *w = line;

		while (*r != '\0' && *r != '\n') {
			*w++ = *r;
			if (*r++ == ' ')
				while (*r == ' ')
					r++;
		}
		*w = '\0';
	}
	ck_assert_msg(strncmp(line, want, strlen(want)) == 0 &&
	    line[strlen(want)] == ' ', "%s, want %s", line, want);
	free(s);
	ck_assert_int_eq(proc_kill(p, SIGKILL, true), 0);
	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
}
END_TEST

START_TEST(run_as_user)
{
	struct proc_opts o = {
		.argv = ARGV("sh", "-c", "id -u; id -g; id -G"),
		.has_user = true, .uid = 65534, .gid = 65534, .user = "nobody",
		.cwd = "/",
	};
	struct proc	*p;
	char		*s;
	cJSON		*j;
	bool		 failed;

	if (geteuid() != 0) {
		TU_SKIP("needs root");
		return;
	}
	p = spawn(&o);
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert_int_eq(p->job.exit.code, 0);
	s = rec_file(p, "stdout", NULL);
	ck_assert_str_eq(s, "65534\n65534\n65534\n");
	free(s);
	j = rec_json(p, "meta.json");
	ck_assert_str_eq(item(j, "user")->valuestring, "nobody");
	cJSON_Delete(j);

	/*
	 * Exec failure as another user: the same report, nothing left.
	 * Under valgrind the forked child's _exit(127) gets a leak check of
	 * the parent's heap it copied: noise, not a leak.
	 */
	if (on_valgrind()) {
		TU_SKIP("under valgrind: exec failure as another user");
		return;
	}
	o.argv = ARGV("/nonexistent/tend-no-such-binary");
	o.id = "ghost";
	ck_assert_int_eq(spawn_err(&o, &failed), ENOENT);
	ck_assert(failed);
	ck_assert(!tu_exists(procsfd, "ghost"));
	o.argv = ARGV("true");
	o.cwd = "/nonexistent/dir";
	ck_assert_int_eq(spawn_err(&o, &failed), ENOENT);
	ck_assert(failed);
	ck_assert(!tu_exists(procsfd, "ghost"));
	ck_assert(tu_run_until(loop, no_zombie, NULL, WAIT_S));
}
END_TEST

/* ------------------------------------------------------------------ */
/* The record */

START_TEST(status_json_fields)
{
	struct proc_opts o = {
		.argv = ARGV("sh", "-c", "echo out; echo err >&2; pwd"),
		.cwd = "/tmp",
	};
	struct proc	*p;
	cJSON		*tags, *j, *a, *e;
	char		*s, *disk;

	tags = cJSON_CreateObject();
	cJSON_AddStringToObject(tags, "k", "v");
	o.tags = tags;
	p = spawn(&o);
	/* Copied: the caller's object is the caller's. */
	cJSON_AddStringToObject(tags, "later", "x");

	j = proc_status_json(p);
	ck_assert_str_eq(item(j, "id")->valuestring, p->job.id);
	ck_assert_int_eq(item(j, "pid")->valueint, p->job.pid);
	a = item(j, "command");
	ck_assert_int_eq(cJSON_GetArraySize(a), 3);
	ck_assert_str_eq(cJSON_GetArrayItem(a, 0)->valuestring, "sh");
	ck_assert_str_eq(item(j, "cwd")->valuestring, "/tmp");
	ck_assert_uint_eq(strlen(item(j, "startedAt")->valuestring), 24);
	ck_assert_str_eq(item(j, "state")->valuestring, "running");
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j, "exit"));
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j, "endedAt"));
	ck_assert_str_eq(item(j, "bootId")->valuestring, boot);
	/* Kept as compact text, emitted raw: no tree per record. */
	e = item(j, "tags");
	ck_assert(cJSON_IsRaw(e));
	ck_assert_str_eq(e->valuestring, "{\"k\":\"v\"}");
	cJSON_Delete(j);
	cJSON_Delete(tags);

	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	j = proc_status_json(p);
	ck_assert_str_eq(item(j, "state")->valuestring, "exited");
	e = item(j, "exit");
	ck_assert_int_eq(item(e, "code")->valueint, 0);
	/* Absent, not null, unless signalled (DESIGN §4). */
	ck_assert(cJSON_GetObjectItemCaseSensitive(e, "signal") == NULL);
	ck_assert(cJSON_IsFalse(item(e, "timedOut")));
	ck_assert_uint_eq(strlen(item(j, "endedAt")->valuestring), 24);
	ck_assert_int_eq(item(j, "stdoutBytes")->valueint, 9);	/* out, /tmp */
	ck_assert_int_eq(item(j, "stderrBytes")->valueint, 4);
	ck_assert_int_eq(item(j, "droppedBytes")->valueint, 0);
	ck_assert_str_eq(item(j, "tags")->valuestring, "{\"k\":\"v\"}");

	/* The final status on disk is the same document. */
	s = cJSON_PrintUnformatted(j);
	disk = rec_file(p, "status.json", NULL);
	ck_assert_str_eq(disk, s);
	free(disk);
	free(s);
	cJSON_Delete(j);
	ck_assert_str_eq(proc_state_name(PROC_RUNNING), "running");
	ck_assert_str_eq(proc_state_name(PROC_EXITED), "exited");
	ck_assert_str_eq(proc_state_name(PROC_ERROR), "error");
}
END_TEST

START_TEST(watchers_and_delete)
{
	struct proc_opts o = { .argv = ARGV("sh", "-c", "echo hi"), .id = "w" };
	struct proc	*p;
	struct seen	 s, quiet;
	char		 id[PROC_ID_MAX + 1];

	memset(&s, 0, sizeof(s));
	memset(&quiet, 0, sizeof(quiet));
	p = spawn(&o);
	job_watch_add(proc_job(p), &s.w, seen_cb);
	job_watch_add(proc_job(p), &quiet.w, seen_cb);
	job_watch_del(&quiet.w);
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert_int_ge(s.n[PROC_EV_OUTPUT], 1);
	ck_assert_int_eq(s.n[PROC_EV_EXIT], 1);
	ck_assert_int_eq(s.n[PROC_EV_END], 1);
	ck_assert_int_ge(s.n[PROC_EV_EOF], 1);
	ck_assert_int_eq(s.n[PROC_EV_GONE], 0);
	/*
	 * The root's exit comes before the end of the group, and the output
	 * is complete by then: EOF was told before END.
	 */
	ck_assert_ptr_nonnull(strchr(s.order, 'X'));
	ck_assert(strchr(s.order, 'X') < strchr(s.order, 'E'));
	ck_assert_ptr_nonnull(strchr(s.order, 'F'));
	ck_assert(strchr(s.order, 'F') < strchr(s.order, 'E'));
	ck_assert_str_eq(quiet.order, "");
	ck_assert_ptr_null(quiet.w.job);

	snprintf(id, sizeof(id), "%s", p->job.id);
	ck_assert(tu_exists(procsfd, id));
	proc_delete(p);
	ck_assert_int_eq(s.n[PROC_EV_GONE], 1);
	ck_assert_ptr_null(s.w.job);
	ck_assert(!tu_exists(procsfd, id));
	ck_assert_ptr_null(proc_find(&tab, id));
	ck_assert_ptr_null(tab.jobs.head);
	ck_assert_ptr_null(tab.jobs.tail);
	ck_assert_int_eq(tab.jobs.nended, 0);
	ck_assert_int_eq(tab.jobs.nlive, 0);

	/* The ID is free again. */
	p = spawn(&o);
	ck_assert_str_eq(p->job.id, "w");
}
END_TEST

static bool
trimmed(void *arg)
{
	(void)arg;
	return tab.jobs.nlive == 1 && tab.jobs.nended == 1 &&
	    proc_find(&tab, "a") == NULL && proc_find(&tab, "b") == NULL;
}

START_TEST(keep_exited_trims_oldest)
{
	struct proc_opts o = { .argv = ARGV("sleep", "5"), .id = "old" };
	struct proc	*c;

	tab.jobs.keep = 1;
	spawn(&o);
	o.argv = ARGV("true");
	o.id = "a";
	spawn(&o);
	o.id = "b";
	spawn(&o);
	o.id = "c";
	c = spawn(&o);
	ck_assert(tu_run_until(loop, trimmed, NULL, WAIT_S));
	/* Running records are never trimmed; the newest ended one stays. */
	ck_assert_ptr_nonnull(proc_find(&tab, "old"));
	ck_assert_ptr_eq(proc_find(&tab, "c"), c);
	ck_assert_int_eq(c->job.state, PROC_EXITED);
	ck_assert(tu_exists(procsfd, "old"));
	ck_assert(tu_exists(procsfd, "c"));
	ck_assert(!tu_exists(procsfd, "a"));
	ck_assert(!tu_exists(procsfd, "b"));
	ck_assert_ptr_eq(proctab_first(&tab), proc_find(&tab, "old"));
	ck_assert_ptr_eq(tab.jobs.tail, &c->job);
}
END_TEST

/* ------------------------------------------------------------------ */
/* A state dir that refuses writes */

/*
 * Files may grow to n bytes at most (RLIMIT_FSIZE; RLIM_INFINITY lifts
 * it): a write past it fails with EFBIG, as a full disk fails one.
 */
static void
fsize_limit(rlim_t n)
{
	struct rlimit	rl;

	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = n == RLIM_INFINITY ? rl.rlim_max : n;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

static bool
owes_nothing(void *arg)
{
	return proctab_state_error(arg, NULL, NULL) == 0;
}

START_TEST(status_refused_then_retried)
{
	struct proc_opts o = { .argv = ARGV("true"), .id = "full" };
	struct proc	*p;
	cJSON		*j;
	bool		 bootdir = false;
	int		 pending = 0;

	fsize_limit(16);
	p = spawn(&o);
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	/* Nothing half-written: no status, no meta, no temp. */
	ck_assert(!tu_exists(procsfd, "full/status.json"));
	ck_assert(!tu_exists(procsfd, "full/status.json.tmp"));
	ck_assert(!tu_exists(procsfd, "full/meta.json"));
	ck_assert(p->job.rec.status_failed);
	j = proc_status_json(p);
	ck_assert(cJSON_IsTrue(item(j, "statusWriteFailed")));
	cJSON_Delete(j);
	ck_assert_int_eq(proctab_state_error(&tab, &bootdir, &pending), EFBIG);
	ck_assert(bootdir);
	ck_assert_int_eq(pending, 1);

	/* Space returns: the retry writes the final status of now. */
	fsize_limit(RLIM_INFINITY);
	ck_assert(tu_run_until(loop, owes_nothing, &tab,
	    STATE_RETRY_S + WAIT_S));
	j = rec_json(p, "status.json");
	ck_assert_str_eq(item(j, "state")->valuestring, "exited");
	ck_assert_int_eq(item(item(j, "exit"), "code")->valueint, 0);
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j,
	    "statusWriteFailed"));
	cJSON_Delete(j);
	j = rec_json(p, "meta.json");
	ck_assert_str_eq(cJSON_GetArrayItem(item(j, "argv"), 0)->valuestring,
	    "true");
	cJSON_Delete(j);
	j = proc_status_json(p);
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j,
	    "statusWriteFailed"));
	cJSON_Delete(j);
}
END_TEST

START_TEST(replacement_refused_keeps_last)
{
	struct proc_opts o = { .argv = ARGV("sleep", "0.3"), .id = "keep" };
	struct proc	*p;
	cJSON		*j;

	p = spawn(&o);
	ck_assert(tu_run_until(loop, has_status, p, WAIT_S));
	fsize_limit(16);
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert(p->job.rec.status_failed);
	j = rec_json(p, "status.json");
	ck_assert_str_eq(item(j, "state")->valuestring, "running");
	cJSON_Delete(j);
	/* At shutdown, what is owed gets one more try. */
	fsize_limit(RLIM_INFINITY);
	proctab_finalize(&tab);
	ck_assert(!p->job.rec.status_failed);
	j = rec_json(p, "status.json");
	ck_assert_str_eq(item(j, "state")->valuestring, "exited");
	cJSON_Delete(j);
	ck_assert_int_eq(proctab_state_error(&tab, NULL, NULL), 0);
}
END_TEST

START_TEST(table_without_boot_dir)
{
	struct proc_opts o = { .argv = ARGV("sh", "-c", "echo hi; echo e >&2"),
	    .id = "mem", .grace_s = 1 };
	static struct proctab t2;
	struct proc	*p;
	char		 path2[64], boot2[BOOT_ID_LEN + 1], rec[160];
	bool		 failed = true, bootdir = true;
	int		 statefd2, err = -1, pending = 0;
	cJSON		*j;

	statefd2 = tu_tmpdir(path2, sizeof(path2), "/tmp/tend-proc2-");
	ck_assert_int_eq(boot_new_id(boot2), 0);
	/* Nothing can be made under a file. */
	tu_put(statefd2, "boots", "not a directory");
	ck_assert_int_eq(proctab_init(&t2, loop, boot2, statefd2, -1), 0);
	tab2 = &t2;
	ck_assert_int_eq(t2.jobs.recs.fd, -1);
	ck_assert_int_eq(proctab_state_error(&t2, &bootdir, NULL), ENOTDIR);
	ck_assert(!bootdir);

	/* A launch still works; its output is dropped and counted. */
	p = proc_spawn(&t2, &o, &failed, &err);
	ck_assert_msg(p != NULL, "%s", strerror(err));
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert_int_eq(p->job.exit.code, 0);
	ck_assert_uint_eq(p->job.rec.ls.end[LS_STDOUT] +
	    p->job.rec.ls.end[LS_STDERR], 0);
	ck_assert_uint_eq(p->job.rec.ls.dropped, 5);
	ck_assert_uint_eq(t2.jobs.dropped, 5);
	ck_assert_int_eq(proctab_state_error(&t2, NULL, &pending), ENOTDIR);
	ck_assert_int_eq(pending, 1);
	ck_assert_ptr_eq(proc_store(p), &p->job.rec.ls);

	/* The directory becomes possible: boot dir, record, its files. */
	ck_assert_int_eq(unlinkat(statefd2, "boots", 0), 0);
	ck_assert(tu_run_until(loop, owes_nothing, &t2,
	    STATE_RETRY_S + WAIT_S));
	ck_assert_int_ne(t2.jobs.recs.fd, -1);
	ck_assert(tu_exists(statefd2, "boots"));
	snprintf(rec, sizeof(rec), "boots/%s/procs/mem/status.json", boot2);
	j = tu_json(statefd2, rec);
	ck_assert_int_eq(item(item(j, "exit"), "code")->valueint, 0);
	ck_assert_int_eq(item(j, "droppedBytes")->valueint, 5);
	cJSON_Delete(j);
	snprintf(rec, sizeof(rec), "boots/%s/procs/mem/meta.json", boot2);
	ck_assert(tu_exists(statefd2, rec));
	snprintf(rec, sizeof(rec), "boots/%s/boot.json", boot2);
	ck_assert(tu_exists(statefd2, rec));
	ck_assert_int_eq(proc_delete(p), 0);
	snprintf(rec, sizeof(rec), "boots/%s/procs/mem", boot2);
	ck_assert(!tu_exists(statefd2, rec));

	tab2 = NULL;
	proctab_free(&t2);
	close(statefd2);
	tu_rmtree(path2);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Telling watchers and subscribers */

/*
 * A watcher that removes (and frees) another one in its callback, as an
 * event stream or a terminal session closing a sibling does.
 */
struct sibling {
	struct job_watch	 w;
	struct sibling		*victim;	/* removed at its first event */
	bool			 free_it;
	bool			 self_too;	/* and itself */
	int			 told;
};

static int	told_after_removal;

static void
victim_cb(struct job_watch *w, enum job_event ev)
{
	(void)ev;
	if (w->job == NULL)
		told_after_removal++;
	((struct sibling *)w)->told++;
}

static void
killer_cb(struct job_watch *w, enum job_event ev)
{
	struct sibling	*k = (struct sibling *)w;

	(void)ev;
	k->told++;
	if (k->victim != NULL) {
		job_watch_del(&k->victim->w);
		if (k->free_it)
			free(k->victim);
		k->victim = NULL;
		if (k->self_too)
			job_watch_del(w);
	}
}

/* Under ASan a removed sibling told anyway is a heap-use-after-free. */
START_TEST(watcher_frees_next)
{
	struct proc_opts o = { .argv = ARGV("sh", "-c", "echo hi") };
	struct sibling	 k, *v;
	struct proc	*p;

	told_after_removal = 0;
	memset(&k, 0, sizeof(k));
	ck_assert_ptr_nonnull(v = calloc(1, sizeof(*v)));
	p = spawn(&o);
	/* Added first, told after the killer: the killer's next. */
	job_watch_add(proc_job(p), &v->w, victim_cb);
	job_watch_add(proc_job(p), &k.w, killer_cb);
	k.victim = v;
	k.free_it = true;
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert_int_eq(told_after_removal, 0);
	ck_assert_ptr_null(k.victim);
	/* The killer went on hearing: exit, EOF, end at least. */
	ck_assert_int_ge(k.told, 3);
	job_watch_del(&k.w);
}
END_TEST

START_TEST(watcher_removes_itself_and_next)
{
	struct proc_opts o = { .argv = ARGV("sh", "-c", "echo hi") };
	struct sibling	 k, v, last;
	struct proc	*p;

	told_after_removal = 0;
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	memset(&last, 0, sizeof(last));
	p = spawn(&o);
	job_watch_add(proc_job(p), &last.w, victim_cb);
	job_watch_add(proc_job(p), &v.w, victim_cb);
	job_watch_add(proc_job(p), &k.w, killer_cb);
	k.victim = &v;
	k.self_too = true;
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert_int_eq(told_after_removal, 0);
	ck_assert_int_eq(k.told, 1);
	ck_assert_int_eq(v.told, 0);
	/* The one after both is still told of every event. */
	ck_assert_int_ge(last.told, 4);
	ck_assert_ptr_eq(proc_of(last.w.job), p);
	job_watch_del(&last.w);
}
END_TEST

/* What a table subscriber heard. */
struct heard {
	struct jobtab_sub	 s;
	struct jobtab_sub	*drop;	/* unsubscribed at the first event */
	int			 n[JOBTAB_EV_REMOVE + 1];
	int			 live_at_remove;
	char			 last_id[PROC_ID_MAX + 1];
};

static void
heard_cb(struct jobtab_sub *s, struct job *j, enum jobtab_event ev)
{
	struct heard	*h = container_of(s, struct heard, s);

	h->n[ev]++;
	snprintf(h->last_id, sizeof(h->last_id), "%s", j->id);
	if (ev == JOBTAB_EV_REMOVE)
		h->live_at_remove = tab.jobs.nlive;
	if (h->drop != NULL) {
		jobtab_unsubscribe(h->drop);
		h->drop = NULL;
	}
}

START_TEST(subscribers_told)
{
	struct proc_opts o = { .argv = ARGV("true"), .id = "t1" };
	struct proc_opts l = { .argv = ARGV("sleep", "5"), .id = "t2" };
	struct heard	 a, b;
	struct proc	*p;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	jobtab_subscribe(&tab.jobs, &b.s, heard_cb);
	jobtab_subscribe(&tab.jobs, &a.s, heard_cb);
	a.drop = &b.s;		/* a is told first: b never hears */
	p = spawn(&o);
	ck_assert_int_eq(a.n[JOBTAB_EV_START], 1);
	ck_assert_str_eq(a.last_id, "t1");
	ck_assert(tu_run_until(loop, is_exited, p, WAIT_S));
	ck_assert_int_eq(a.n[JOBTAB_EV_END], 1);
	/* A running record removed: told after it left the count. */
	p = spawn(&l);
	ck_assert_int_eq(tab.jobs.nlive, 1);
	ck_assert_int_eq(proc_delete(p), 0);
	ck_assert_int_eq(a.n[JOBTAB_EV_REMOVE], 1);
	ck_assert_int_eq(a.live_at_remove, 0);
	ck_assert_str_eq(a.last_id, "t2");
	ck_assert_int_eq(b.n[JOBTAB_EV_START] + b.n[JOBTAB_EV_END] +
	    b.n[JOBTAB_EV_REMOVE], 0);
	jobtab_unsubscribe(&a.s);
	jobtab_unsubscribe(&a.s);	/* twice is harmless */
	o.id = "t3";
	p = spawn(&o);
	ck_assert_int_eq(a.n[JOBTAB_EV_START], 2);	/* t1, t2: not t3 */
}
END_TEST

/* Ask the record, not its flags. */
START_TEST(ended_for_what)
{
	struct proc_opts o = { .argv = ARGV("sh", "-c",
	    "(sleep 0.3; echo late) & exit 0"), .stdin_pipe = true };
	struct proctab_stats st;
	struct proc	*p;
	int		 token;

	p = spawn(&o);
	ck_assert_str_eq(proc_id(p), p->job.id);
	ck_assert_str_eq(proc_boot(p), boot);
	ck_assert_int_gt(proc_started_ms(p), 0);
	ck_assert_ptr_eq(proctab_first(&tab), p);
	ck_assert_ptr_null(proc_next(p));
	ck_assert(proc_stdin_piped(p));
	ck_assert(proc_stdin_open(p));
	ck_assert_ptr_null(job_input_writer(&p->job));
	ck_assert_int_eq(job_input_hold(&p->job, &token, NULL), 0);
	ck_assert_ptr_eq(job_input_writer(&p->job), &token);
	job_input_unhold(&p->job);
	ck_assert(!proc_ended(p, PROC_END_ROOT));
	ck_assert(!proc_ended(p, PROC_END_STATE));
	ck_assert(tu_run_until(loop, is_reaped, p, WAIT_S));
	/* The root is gone; its group and output are not. */
	ck_assert(proc_ended(p, PROC_END_ROOT));
	ck_assert(!proc_ended(p, PROC_END_STATE));
	ck_assert(!proc_ended(p, PROC_END_OUTPUT));
	ck_assert_int_eq(proc_state(p), PROC_RUNNING);
	proctab_stats(&tab, &st);
	ck_assert_int_eq(st.running, 1);
	ck_assert_int_eq(st.kept, 1);
	ck_assert(tu_run_until(loop, is_done, p, WAIT_S));
	ck_assert(proc_ended(p, PROC_END_STATE));
	ck_assert(proc_ended(p, PROC_END_OUTPUT));
	ck_assert_int_eq(proc_state(p), PROC_EXITED);
	ck_assert(!proc_stdin_open(p));
	proctab_stats(&tab, &st);
	ck_assert_int_eq(st.running, 0);
	ck_assert_int_eq(st.kept, 1);
	ck_assert_uint_eq(st.started, 1);
	ck_assert_uint_eq(st.exited, 1);
	ck_assert_uint_eq(st.stored, 5);
}
END_TEST

Suite *
proc_suite(void)
{
	Suite	*s = suite_create("proc");
	TCase	*tc;

	tc = tcase_create("launch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, spawn_exit_code);
	tcase_add_test(tc, status_while_running);
	tcase_add_test(tc, spawn_all_exit_codes);
	tcase_add_test(tc, output_drained_whole);
	tcase_add_test(tc, spawn_not_found_leaves_nothing);
	tcase_add_test(tc, exec_failures_leave_nothing);
	tcase_add_test(tc, id_taken);
	tcase_add_test(tc, maxlive_limit);
	tcase_add_test(tc, lookups_past_the_buckets);
	tcase_add_test(tc, id_valid_vectors);
	suite_add_tcase(s, tc);

	tc = tcase_create("signals");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, kill_sigkill);
	tcase_add_test(tc, kill_root_only);
	tcase_add_test(tc, timeout_term_then_kill);
	tcase_add_test(tc, no_timeout_after_exit);
	tcase_add_test(tc, group_settles_late);
	tcase_add_test(tc, escaped_grandchild);
	tcase_add_test(tc, signal_all_and_finalize);
	suite_add_tcase(s, tc);

	tc = tcase_create("restart");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, restart_numbered_runs);
	tcase_add_test(tc, restart_kill_cancels_wait);
	tcase_add_test(tc, restart_not_after_tend_signals);
	suite_add_tcase(s, tc);

	tc = tcase_create("child");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, stdin_pipe);
	tcase_add_test(tc, stdin_stays_open);
	tcase_add_test(tc, stdin_hold_and_wake);
	tcase_add_test(tc, child_env);
	tcase_add_test(tc, child_starts_clean);
	tcase_add_test(tc, child_limits);
	tcase_add_test(tc, run_as_user);
	suite_add_tcase(s, tc);

	tc = tcase_create("record");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, status_json_fields);
	tcase_add_test(tc, watchers_and_delete);
	tcase_add_test(tc, keep_exited_trims_oldest);
	tcase_add_test(tc, status_refused_then_retried);
	tcase_add_test(tc, replacement_refused_keeps_last);
	tcase_add_test(tc, table_without_boot_dir);
	suite_add_tcase(s, tc);

	tc = tcase_create("notify");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, watcher_frees_next);
	tcase_add_test(tc, watcher_removes_itself_and_next);
	tcase_add_test(tc, subscribers_told);
	tcase_add_test(tc, ended_for_what);
	suite_add_tcase(s, tc);
	return s;
}
