/*
 * ready: readiness of real processes on the default loop (reaped as the
 * agent does) — the "ready" body's checks, a substring found across two
 * writes and only on the stream asked, a port listened on by the root
 * and by a grandchild (found by portwatch, its owner through the ppid
 * chain), a process that ends first, a timeout that leaves it running,
 * and the fields of the status.
 */
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/portwatch.h"
#include "core/proc.h"
#include "core/ready.h"
#include "store/boot.h"
#include "store/logstore.h"
#include "testutil.h"

Suite *ready_suite(void);

#define ARGV(...)	((char *[]){ __VA_ARGS__, NULL })
#define WAIT_S		5.0

static char		 state_path[64];
static int		 statefd = -1, procsfd = -1;
static char		 boot[BOOT_ID_LEN + 1];
static struct ev_loop	*loop;
static struct proctab	 tab;
static ev_child		 reaper;

static void
reap_cb(struct ev_loop *l, ev_child *w, int revents)
{
	(void)l;
	(void)revents;
	proc_reaped(&tab, w->rpid, w->rstatus);
}

static bool
none_live(void *arg)
{
	(void)arg;
	return tab.jobs.nlive == 0;
}

static void
setup(void)
{
	(void)prctl(PR_SET_CHILD_SUBREAPER, 1);
	signal(SIGPIPE, SIG_IGN);
	statefd = tu_tmpdir(state_path, sizeof(state_path), "/tmp/tend-ready-");
	ck_assert_int_eq(boot_new_id(boot), 0);
	ck_assert_int_eq(boot_create(statefd, boot, &procsfd), 0);
	loop = ev_default_loop(EVFLAG_AUTO);
	ev_child_init(&reaper, reap_cb, 0, 0);
	ev_child_start(loop, &reaper);
	ck_assert_int_eq(proctab_init(&tab, loop, boot, statefd, procsfd), 0);
	/* No terminals here: the process table stands for both. */
	portwatch_init(loop, &tab.jobs, &tab.jobs);
}

static void
teardown(void)
{
	proctab_signal_all(&tab, SIGKILL);
	(void)tu_run_until(loop, none_live, NULL, WAIT_S);
	portwatch_stop();
	proctab_free(&tab);
	ev_child_stop(loop, &reaper);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	ev_loop_destroy(loop);
	loop = NULL;
	close(procsfd);
	close(statefd);
	tu_rmtree(state_path);
}

/* A launch with a readiness (the body's "ready", parsed). */
static struct proc *
spawn_ready(char **argv, const char *ready)
{
	struct proc_opts	 o;
	struct proc		*p;
	const char		*why = NULL;
	cJSON			*j;
	bool			 failed;
	int			 err;

	memset(&o, 0, sizeof(o));
	o.argv = argv;
	o.grace_s = 1;
	ck_assert_ptr_nonnull(j = cJSON_Parse(ready));
	ck_assert_msg(ready_opts_parse(j, &o.ready, &why) == 0, "%s", why);
	p = proc_spawn(&tab, &o, &failed, &err);
	cJSON_Delete(j);	/* the options were copied */
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(p->ready);
	return p;
}

static bool
settled(void *arg)
{
	struct proc	*p = arg;

	return ready_state(p->ready) != READY_WAITING;
}

/* A loopback port nothing listens on now. */
static int
free_port(void)
{
	struct sockaddr_in	sa = { .sin_family = AF_INET };
	socklen_t		len = sizeof(sa);
	int			fd, port;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_ne(fd = socket(AF_INET, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

START_TEST(opts_checked)
{
	static const char *const bad[] = {
		"1", "{}", "{\"port\":0}", "{\"port\":65536}", "{\"port\":1.5}",
		"{\"port\":\"80\"}", "{\"log\":\"\"}", "{\"log\":5}",
		"{\"port\":80,\"stream\":\"stdout\"}",
		"{\"log\":\"x\",\"stream\":\"out\"}",
		"{\"port\":80,\"timeoutMs\":0}", "{\"port\":80,\"timeoutMs\":-1}",
		"{\"port\":80,\"timeoutMs\":1.5}", "{\"port\":1e300}",
		"{\"port\":-1e300}", "{\"port\":80,\"timeoutMs\":1e300}",
		"{\"log\":\"x\",\"port\":null}",
	};
	struct ready_opts	 o;
	const char		*why;
	cJSON			*j;
	size_t			 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_ptr_nonnull(j = cJSON_Parse(bad[i]));
		why = NULL;
		ck_assert_msg(ready_opts_parse(j, &o, &why) == -1, "%s", bad[i]);
		ck_assert_ptr_nonnull(why);
		ck_assert(strncmp(why, "ready", 5) == 0);
		cJSON_Delete(j);
	}
	ck_assert_ptr_nonnull(j = cJSON_Parse("{\"port\":8080,\"log\":\"up\","
	    "\"stream\":\"stderr\",\"timeoutMs\":2500}"));
	ck_assert_int_eq(ready_opts_parse(j, &o, &why), 0);
	ck_assert(o.on);
	ck_assert_int_eq(o.port, 8080);
	ck_assert_str_eq(o.log, "up");
	ck_assert_uint_eq(o.streams, 1u << LS_STDERR);
	ck_assert_uint_eq(o.timeout_ms, 2500);
	cJSON_Delete(j);
}
END_TEST

START_TEST(log_across_two_writes)
{
	struct proc	*p;
	cJSON		*st;

	p = spawn_ready(ARGV("sh", "-c", "printf 'rea'; sleep 0.3; "
	    "printf 'dy now'; sleep 30"), "{\"log\":\"ready\"}");
	st = proc_status_json(p);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(st, "ready")));
	ck_assert_str_eq(cJSON_GetObjectItem(st, "readiness")->valuestring,
	    "waiting");
	ck_assert_ptr_null(cJSON_GetObjectItem(st, "readyAt"));
	cJSON_Delete(st);
	ck_assert(tu_run_until(loop, settled, p, WAIT_S));
	ck_assert_int_eq(ready_state(p->ready), READY_READY);
	st = proc_status_json(p);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(st, "ready")));
	ck_assert(cJSON_IsNumber(cJSON_GetObjectItem(st, "readyAt")));
	ck_assert_str_eq(cJSON_GetObjectItem(st, "readiness")->valuestring,
	    "ready");
	cJSON_Delete(st);
}
END_TEST

/*
 * A long substring split across two writes after more output than one
 * read of it holds; a one-byte one.
 */
START_TEST(long_log_after_much_output)
{
	struct proc	*p;
	char		 ready[2048], needle[1001];

	memset(needle, 'n', 1000);
	needle[0] = 'N';
	needle[999] = 'E';
	needle[1000] = '\0';
	snprintf(ready, sizeof(ready), "{\"log\":\"%s\"}", needle);
	p = spawn_ready(ARGV("python3", "-c", "import sys,time\n"
	    "w=sys.stdout.write\n"
	    "w('n'*40000+'N'+'n'*500);sys.stdout.flush();time.sleep(0.3)\n"
	    "w('n'*498+'E');sys.stdout.flush();time.sleep(30)"), ready);
	ck_assert(tu_run_until(loop, settled, p, WAIT_S));
	ck_assert_int_eq(ready_state(p->ready), READY_READY);
	ck_assert_uint_ge(p->job.rec.ls.end[LS_STDOUT], 41000);
	p = spawn_ready(ARGV("sh", "-c", "printf abc; sleep 30"),
	    "{\"log\":\"c\"}");
	ck_assert(tu_run_until(loop, settled, p, WAIT_S));
	ck_assert_int_eq(ready_state(p->ready), READY_READY);
}
END_TEST

/* Asked on stderr: the same words on stdout do not count. */
START_TEST(log_on_the_stream_asked)
{
	struct proc	*p;

	p = spawn_ready(ARGV("sh", "-c", "echo go; sleep 0.3; echo go >&2; "
	    "sleep 30"), "{\"log\":\"go\",\"stream\":\"stderr\"}");
	ck_assert(tu_run_until(loop, settled, p, WAIT_S));
	ck_assert_int_eq(ready_state(p->ready), READY_READY);
	ck_assert_uint_ge(p->job.rec.ls.end[LS_STDERR], 3);
	p = spawn_ready(ARGV("sh", "-c", "echo go; exec sleep 30"),
	    "{\"log\":\"go\",\"stream\":\"stderr\",\"timeoutMs\":400}");
	ck_assert(tu_run_until(loop, settled, p, WAIT_S));
	ck_assert_int_eq(ready_state(p->ready), READY_TIMEOUT);
}
END_TEST

START_TEST(ends_first)
{
	struct proc	*p;
	cJSON		*st;

	p = spawn_ready(ARGV("sh", "-c", "echo almost; exit 3"),
	    "{\"log\":\"ready\"}");
	ck_assert(tu_run_until(loop, settled, p, WAIT_S));
	ck_assert_int_eq(ready_state(p->ready), READY_EXITED);
	st = proc_status_json(p);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(st, "ready")));
	ck_assert_str_eq(cJSON_GetObjectItem(st, "readiness")->valuestring,
	    "exited");
	cJSON_Delete(st);
}
END_TEST

/* What it wrote last, as it ended, still makes it ready. */
START_TEST(ready_in_its_last_words)
{
	struct proc	*p;

	p = spawn_ready(ARGV("sh", "-c", "echo ready; exit 0"),
	    "{\"log\":\"ready\"}");
	ck_assert(tu_run_until(loop, settled, p, WAIT_S));
	ck_assert_int_eq(ready_state(p->ready), READY_READY);
}
END_TEST

START_TEST(timeout_leaves_it_running)
{
	struct proc	*p;
	double		 t0 = tu_now();

	p = spawn_ready(ARGV("sleep", "30"),
	    "{\"port\":1,\"timeoutMs\":300}");
	ck_assert(tu_run_until(loop, settled, p, WAIT_S));
	ck_assert_int_eq(ready_state(p->ready), READY_TIMEOUT);
	ck_assert(tu_now() - t0 >= 0.29);
	ck_assert_int_eq(proc_state(p), PROC_RUNNING);
}
END_TEST

struct lister {
	struct portwatch_wait	w;
	int			n;
};

static void
lister_cb(struct portwatch_wait *w)
{
	((struct lister *)(void *)w)->n++;
}

static bool
listed(void *arg)
{
	return ((struct lister *)arg)->n > 0;
}

/* The port's entry in portwatch's listing, or NULL. */
static cJSON *
port_entry(cJSON *a, int port)
{
	cJSON	*e;

	cJSON_ArrayForEach(e, a)
		if (cJSON_GetObjectItem(e, "port")->valueint == port)
			return e;
	return NULL;
}

static void
check_port(const char *fmt, bool root)
{
	struct lister	 l = { 0 };
	struct proc	*p;
	char		 script[512], ready[64];
	cJSON		*a, *e;
	int		 port = free_port();

	snprintf(script, sizeof(script), fmt, port);
	snprintf(ready, sizeof(ready), "{\"port\":%d}", port);
	p = spawn_ready(ARGV("sh", "-c", script), ready);
	ck_assert(tu_run_until(loop, settled, p, WAIT_S * 2));
	ck_assert_int_eq(ready_state(p->ready), READY_READY);
	ck_assert(portwatch_owns(port, proc_job(p)));
	portwatch_want(&l.w, lister_cb);
	ck_assert_int_eq(l.n, 0);	/* never in the call */
	ck_assert(tu_run_until(loop, listed, &l, WAIT_S));
	ck_assert_ptr_nonnull(a = portwatch_json());
	ck_assert_ptr_nonnull(e = port_entry(a, port));
	ck_assert_str_eq(cJSON_GetObjectItem(e, "id")->valuestring,
	    proc_id(p));
	ck_assert_str_eq(cJSON_GetObjectItem(e, "address")->valuestring,
	    "127.0.0.1");
	if (root)
		ck_assert_int_eq(cJSON_GetObjectItem(e, "pid")->valueint,
		    proc_pid(p));
	else
		ck_assert_int_ne(cJSON_GetObjectItem(e, "pid")->valueint,
		    proc_pid(p));
	cJSON_Delete(a);
}

#define LISTEN_PY	"import socket,time;s=socket.socket();" \
	"s.bind(('127.0.0.1',%d));s.listen();time.sleep(30)"

START_TEST(port_of_the_root)
{
	check_port("exec python3 -c \"" LISTEN_PY "\"", true);
}
END_TEST

START_TEST(port_of_a_grandchild)
{
	check_port("python3 -c \"" LISTEN_PY "\" & wait", false);
}
END_TEST

Suite *
ready_suite(void)
{
	Suite	*s = suite_create("ready");
	TCase	*tc = tcase_create("opts");

	tcase_add_test(tc, opts_checked);
	suite_add_tcase(s, tc);
	tc = tcase_create("log");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, log_across_two_writes);
	tcase_add_test(tc, log_on_the_stream_asked);
	tcase_add_test(tc, long_log_after_much_output);
	tcase_add_test(tc, ends_first);
	tcase_add_test(tc, ready_in_its_last_words);
	tcase_add_test(tc, timeout_leaves_it_running);
	suite_add_tcase(s, tc);
	tc = tcase_create("port");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, port_of_the_root);
	tcase_add_test(tc, port_of_a_grandchild);
	suite_add_tcase(s, tc);
	return s;
}
