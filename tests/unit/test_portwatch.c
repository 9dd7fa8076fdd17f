/*
 * portwatch: the listening set and its owners as real processes make and
 * close sockets on the default loop — a record's listener named for it
 * and told as port.listening then port.closed (read back from the
 * boot's event log), a socket that listened before the watch began
 * listed with its holder but never told, and a refresh asked for that
 * answers on a later loop turn.
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

#include "core/events.h"
#include "core/portwatch.h"
#include "core/proc.h"
#include "store/boot.h"
#include "testutil.h"

Suite *portwatch_suite(void);

#define ARGV(...)	((char *[]){ __VA_ARGS__, NULL })
#define WAIT_S		5.0

static char		 state_path[64];
static int		 statefd = -1, procsfd = -1;
static char		 boot[BOOT_ID_LEN + 1];
static struct ev_loop	*loop;
static struct proctab	 tab;
static struct events	*evlog;
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
	statefd = tu_tmpdir(state_path, sizeof(state_path), "/tmp/tend-pw-");
	ck_assert_int_eq(boot_new_id(boot), 0);
	ck_assert_int_eq(boot_create(statefd, boot, &procsfd), 0);
	loop = ev_default_loop(EVFLAG_AUTO);
	ev_child_init(&reaper, reap_cb, 0, 0);
	ev_child_start(loop, &reaper);
	ck_assert_int_eq(proctab_init(&tab, loop, boot, statefd, procsfd), 0);
	ck_assert_ptr_nonnull(evlog = events_open(loop, statefd, boot, 0));
	events_set_current(evlog);
}

static void
teardown(void)
{
	proctab_signal_all(&tab, SIGKILL);
	(void)tu_run_until(loop, none_live, NULL, WAIT_S);
	portwatch_stop();
	events_set_current(NULL);
	events_close(evlog);
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

static struct proc *
spawn(char **argv)
{
	struct proc_opts	 o;
	struct proc		*p;
	bool			 failed;
	int			 err;

	memset(&o, 0, sizeof(o));
	o.argv = argv;
	o.grace_s = 1;
	p = proc_spawn(&tab, &o, &failed, &err);
	ck_assert_ptr_nonnull(p);
	return p;
}

/* A socket listening on a loopback port: the fd, *port. */
static int
listener(int *port)
{
	struct sockaddr_in	sa = { .sin_family = AF_INET };
	socklen_t		len = sizeof(sa);
	int			fd;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_ne(fd = socket(AF_INET, SOCK_STREAM, 0), -1);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*port = ntohs(sa.sin_port);
	return fd;
}

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

/* The port's entry after a fresh refresh (a copy), or NULL. */
static cJSON *
entry(int port)
{
	struct lister	 l = { 0 };
	cJSON		*a, *e, *hit = NULL;

	portwatch_want(&l.w, lister_cb);
	ck_assert_int_eq(l.n, 0);		/* never in the call */
	ck_assert(tu_run_until(loop, listed, &l, WAIT_S));
	ck_assert_ptr_nonnull(a = portwatch_json());
	cJSON_ArrayForEach(e, a)
		if (cJSON_GetObjectItem(e, "port")->valueint == port)
			hit = cJSON_Duplicate(e, true);
	cJSON_Delete(a);
	return hit;
}

struct until_port {
	int	port;
	bool	present;
};

static bool
port_is(void *arg)
{
	struct until_port	*u = arg;
	cJSON			*e = entry(u->port);
	bool			 ok = (e != NULL && !cJSON_IsNull(
				    cJSON_GetObjectItem(e, "id"))) == u->present;

	cJSON_Delete(e);
	return ok;
}

/* The event log's text (NUL-ended; "" before its first event). */
static char *
log_text(void)
{
	char	path[128];
	size_t	len;

	snprintf(path, sizeof(path), "boots/%s/" EVENTS_DIR "/" EVENTS_FILE,
	    boot);
	if (!tu_exists(statefd, path))
		return strdup("");
	return tu_slurp(statefd, path, &len);
}

START_TEST(told_listening_then_closed)
{
	struct until_port	 u;
	struct proc		*p;
	char			 script[256], want[128], *text, *a, *b;
	cJSON			*e;
	int			 fd, port;

	portwatch_init(loop, &tab.jobs, &tab.jobs);
	fd = listener(&port);
	close(fd);		/* free now: the child takes it */
	snprintf(script, sizeof(script), "import socket,time;s=socket.socket();"
	    "s.bind(('127.0.0.1',%d));s.listen();time.sleep(30)", port);
	p = spawn(ARGV("python3", "-c", script));
	u.port = port;
	u.present = true;
	ck_assert(tu_run_until(loop, port_is, &u, WAIT_S * 2));
	ck_assert_ptr_nonnull(e = entry(port));
	ck_assert_str_eq(cJSON_GetObjectItem(e, "id")->valuestring, proc_id(p));
	ck_assert_int_eq(cJSON_GetObjectItem(e, "pid")->valueint, proc_pid(p));
	ck_assert_str_eq(cJSON_GetObjectItem(e, "address")->valuestring,
	    "127.0.0.1");
	cJSON_Delete(e);
	ck_assert(portwatch_owns(port, proc_job(p)));
	ck_assert(!portwatch_truncated());
	ck_assert_int_eq(proc_kill(p, SIGKILL, true), 0);
	u.present = false;
	ck_assert(tu_run_until(loop, port_is, &u, WAIT_S));
	ck_assert(!portwatch_owns(port, proc_job(p)));
	text = log_text();
	snprintf(want, sizeof(want), "\"port\":%d,\"address\":\"127.0.0.1\","
	    "\"pid\":%d,\"id\":\"%s\"", port, (int)proc_pid(p), proc_id(p));
	ck_assert_ptr_nonnull(a = strstr(text, "\"type\":\"port.listening\""));
	ck_assert_ptr_nonnull(strstr(a, want));
	ck_assert_ptr_nonnull(b = strstr(text, "\"type\":\"port.closed\""));
	ck_assert_ptr_nonnull(strstr(b, want));
	ck_assert(a < b);
	free(text);
}
END_TEST

/* Listening before the watch began: listed, its holder found, not told. */
START_TEST(baseline_listed_not_told)
{
	cJSON	*e;
	char	*text, want[64];
	int	 fd, port;

	fd = listener(&port);
	portwatch_init(loop, &tab.jobs, &tab.jobs);
	ck_assert_ptr_nonnull(e = entry(port));
	ck_assert_int_eq(cJSON_GetObjectItem(e, "pid")->valueint, getpid());
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(e, "id")));
	cJSON_Delete(e);
	close(fd);
	ck_assert_ptr_null(e = entry(port));
	text = log_text();
	snprintf(want, sizeof(want), "\"port\":%d,", port);
	ck_assert_ptr_null(strstr(text, want));
	free(text);
}
END_TEST

/* A want withdrawn is not called; two wants are both served. */
START_TEST(wants)
{
	struct lister	a = { 0 }, b = { 0 }, c = { 0 };

	portwatch_init(loop, &tab.jobs, &tab.jobs);
	portwatch_want(&a.w, lister_cb);
	portwatch_want(&b.w, lister_cb);
	portwatch_want(&c.w, lister_cb);
	portwatch_unwant(&b.w);
	ck_assert(tu_run_until(loop, listed, &c, WAIT_S));
	ck_assert(tu_run_until(loop, listed, &a, WAIT_S));
	(void)tu_run_until(loop, listed, &b, 0.2);
	ck_assert_int_eq(a.n + b.n + c.n, 2);
	ck_assert_int_eq(b.n, 0);
}
END_TEST

Suite *
portwatch_suite(void)
{
	Suite	*s = suite_create("portwatch");
	TCase	*tc = tcase_create("set");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, told_listening_then_closed);
	tcase_add_test(tc, baseline_listed_not_told);
	tcase_add_test(tc, wants);
	suite_add_tcase(s, tc);
	return s;
}
