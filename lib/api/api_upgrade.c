/*
 * api_upgrade.c: POST /v1/upgrade (see api_upgrade.h).
 *
 * The check is a child of the agent like any other: its answer read from
 * a pipe on the loop, its exit from the reap loop (child_watch), the
 * whole bounded by UPGRADE_CHECK_TIMEOUT, the reply deferred until then.
 * One upgrade at a time.  The handover itself runs on the next turn of
 * the loop, once the 202 is written: every client connection is closed
 * (clients reconnect, and streams resume by cursor), the socket stays
 * open for the next agent, and the exec follows.  A failed exec leaves
 * the agent serving, with nothing lost, and says so in the event log.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "api.h"
#include "api_upgrade.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/tunables.h"
#include "core/events.h"
#include "core/handover.h"
#include "sys/child.h"
#include "sys/spawn.h"

extern char **environ;

static void	api_upgrade(struct http_conn *, struct http_req *);
static void	api_upgrade_refuse(struct http_conn *, const char *,
		    const char *);
static void	api_upgrade_reset(void);
static void	api_upgrade_go(struct ev_loop *, ev_timer *, int);
static void	api_upgrade_checked(void);
static void	api_upgrade_exited(pid_t, int, void *);
static void	api_upgrade_read(struct ev_loop *, ev_io *, int);
static void	api_upgrade_timeout(struct ev_loop *, ev_timer *, int);
static void	api_upgrade_closed(struct http_conn *, void *);
static int	api_upgrade_spawn(void);

const struct http_route api_upgrade_routes[] = {
	{ "POST",	"/v1/upgrade",			api_upgrade, NULL },
	{ NULL, NULL, NULL, NULL }
};

/* The one upgrade in progress. */
static struct {
	char *const	*argv;		/* the agent's, from "agent" on */
	const pid_t	*main_pid;
	bool		 busy;
	struct api	*api;
	struct http_conn *c;		/* waiting for the check; NULL: gone */
	char		 path[4096];
	pid_t		 pid;		/* the check, until reaped */
	int		 status;
	int		 fd;		/* its stdout, until EOF */
	struct buf	 out;
	ev_io		 io;
	ev_timer	 timer;		/* the check's bound, then the go */
} up = { .fd = -1, .pid = -1 };

void
api_upgrade_setup(char *const *argv, const pid_t *main_pid)
{
	up.argv = argv;
	up.main_pid = main_pid;
}

static void
api_upgrade_refuse(struct http_conn *c, const char *fmt, const char *arg)
{
	char	msg[512];

	snprintf(msg, sizeof(msg), fmt, arg);
	log_warnx("event=upgrade_refused path=%s reason=\"%s\"", up.path, msg);
	http_reply_error(c, 409, "upgrade_refused", "%s", msg);
}

/* The check is over, one way or another: nothing of it is left. */
static void
api_upgrade_reset(void)
{
	struct ev_loop	*loop = up.api->tab->loop;

	ev_io_stop(loop, &up.io);
	ev_timer_stop(loop, &up.timer);
	if (up.fd != -1)
		close(up.fd);
	up.fd = -1;
	if (up.pid > 0) {
		/* Its exit is still claimed, by nobody: not an orphan. */
		child_unwatch(up.pid);
		(void)kill(up.pid, SIGKILL);
	}
	up.pid = -1;
	buf_free(&up.out);
	if (up.c != NULL)
		http_conn_own(up.c, NULL, NULL, NULL);
	up.c = NULL;
	up.busy = false;
}

/* The handover, on the turn after the 202. */
static void
api_upgrade_go(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct http_server	*srv = up.api->srv;
	struct handover		 h;
	char			**argv;
	size_t			 n, i;
	cJSON			*o;

	(void)revents;
	ev_timer_stop(loop, w);
	/* A shutdown began since the 202 (it closed the socket): no exec. */
	if (http_server_fd(srv) == -1) {
		log_warnx("event=upgrade_abandoned msg=\"the agent is stopping\"");
		handover_release_signals();
		up.busy = false;
		return;
	}
	for (n = 0; up.argv[n] != NULL; n++)
		;
	if ((argv = calloc(n + 2, sizeof(*argv))) == NULL) {
		log_warnx("event=upgrade_failed err=\"out of memory\"");
		handover_release_signals();
		up.busy = false;
		return;
	}
	argv[0] = up.path;
	/* "agent" first: a PID 1 started with no subcommand has none. */
	argv[1] = "agent";
	for (i = 1; i < n; i++)
		argv[i + 1] = up.argv[i];
	memset(&h, 0, sizeof(h));
	h.tab = up.api->tab;
	h.terms = up.api->terms;
	h.listen_fd = http_server_fd(srv);
	h.main_pid = up.main_pid != NULL ? *up.main_pid : -1;
	h.started_mono = up.api->started_mono;
	http_server_pause(srv);
	http_close_all(srv);
	(void)handover_exec(&h, up.path, argv);
	/* Still here: the exec failed, and the agent goes on. */
	i = (size_t)errno;
	free(argv);
	http_server_resume(srv);
	if ((o = cJSON_CreateObject()) != NULL) {
		cJSON_AddStringToObject(o, "path", up.path);
		cJSON_AddStringToObject(o, "error", strerror((int)i));
	}
	events_emit("agent.upgrade_failed", o);
	up.busy = false;
}

/* The check's answer, once it has exited and its output ended. */
static void
api_upgrade_checked(void)
{
	struct http_conn	*c = up.c;
	const char		*ver, *hv;
	cJSON			*j, *r;
	char			 why[64];
	int			 major;

	if (up.pid > 0 || up.fd != -1)
		return;		/* not yet both */
	up.c = NULL;
	if (c != NULL)
		http_conn_own(c, NULL, NULL, NULL);
	if (c == NULL) {	/* the client went away: no upgrade */
		api_upgrade_reset();
		return;
	}
	if (!WIFEXITED(up.status) || WEXITSTATUS(up.status) != 0) {
		snprintf(why, sizeof(why), WIFEXITED(up.status) ? "exit %d" :
		    "signal %d", WIFEXITED(up.status) ?
		    WEXITSTATUS(up.status) : WTERMSIG(up.status));
		api_upgrade_refuse(c, "the handshake failed (%s)", why);
		api_upgrade_reset();
		return;
	}
	(void)buf_add(&up.out, "", 1);
	j = cJSON_Parse(buf_head(&up.out));
	ver = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j,
	    "version"));
	hv = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j,
	    "handover"));
	if (ver == NULL || hv == NULL) {
		api_upgrade_refuse(c, "%s", "the binary does not answer the "
		    "handshake (version, handover)");
		cJSON_Delete(j);
		api_upgrade_reset();
		return;
	}
	major = atoi(hv);
	if (major != HANDOVER_MAJOR) {
		snprintf(why, sizeof(why), "%.16s (this agent writes %d.%d)",
		    hv, HANDOVER_MAJOR, HANDOVER_MINOR);
		api_upgrade_refuse(c, "another handover format: %s", why);
		cJSON_Delete(j);
		api_upgrade_reset();
		return;
	}
	r = cJSON_CreateObject();
	cJSON_AddStringToObject(r, "path", up.path);
	cJSON_AddStringToObject(r, "version", ver);
	cJSON_AddStringToObject(r, "previousVersion", TEND_VERSION);
	cJSON_AddStringToObject(r, "handover", hv);
	log_info("event=upgrade_accepted path=%s version=%s", up.path, ver);
	cJSON_Delete(j);
	handover_hold_signals();	/* before the client can hear of it */
	http_reply_json(c, 202, r);
	buf_free(&up.out);
	/* Busy until the exec: no second upgrade meanwhile. */
	ev_timer_stop(up.api->tab->loop, &up.timer);
	ev_init(&up.timer, api_upgrade_go);
	ev_timer_set(&up.timer, 0.001, 0.);
	ev_timer_start(up.api->tab->loop, &up.timer);
}

static void
api_upgrade_exited(pid_t pid, int wstatus, void *arg)
{
	(void)pid;
	(void)arg;
	up.pid = -1;
	up.status = wstatus;
	api_upgrade_checked();
}

static void
api_upgrade_read(struct ev_loop *loop, ev_io *w, int revents)
{
	char	buf[1024];
	ssize_t	n;

	(void)revents;
	while ((n = read(up.fd, buf, sizeof(buf))) > 0)
		if (buf_avail(&up.out) + (size_t)n <= UPGRADE_CHECK_MAX)
			(void)buf_add(&up.out, buf, (size_t)n);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	ev_io_stop(loop, w);
	close(up.fd);
	up.fd = -1;
	api_upgrade_checked();
}

static void
api_upgrade_timeout(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct http_conn	*c = up.c;

	(void)loop;
	(void)w;
	(void)revents;
	up.c = NULL;
	if (c != NULL) {
		http_conn_own(c, NULL, NULL, NULL);
		api_upgrade_refuse(c, "%s", "the handshake timed out");
	}
	api_upgrade_reset();
}

static void
api_upgrade_closed(struct http_conn *c, void *arg)
{
	(void)c;
	(void)arg;
	up.c = NULL;
	api_upgrade_reset();
}

/* The check as a child: its stdout a pipe, nothing else of ours. */
static int
api_upgrade_spawn(void)
{
	char *const		 argv[] = { up.path, HANDOVER_CHECK_ARG, NULL };
	struct spawn_opts	 so;
	int			 p[2], err;
	bool			 failed;

	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	memset(&so, 0, sizeof(so));
	so.argv = argv;
	so.envp = environ;
	so.fd[0] = -1;
	so.fd[1] = p[1];
	so.fd[2] = -1;
	so.setsid = true;
	so.closefds = true;
	up.pid = spawn_start(&so, &failed);
	err = errno;
	close(p[1]);
	if (up.pid != -1 && child_watch(up.pid, api_upgrade_exited,
	    NULL) == -1) {
		(void)kill(up.pid, SIGKILL);	/* an orphan to the reaper */
		up.pid = -1;
		err = ENOMEM;
	}
	if (up.pid == -1) {
		close(p[0]);
		errno = err;
		return -1;
	}
	(void)fcntl(p[0], F_SETFL, O_NONBLOCK);
	up.fd = p[0];
	return 0;
}

static void
api_upgrade(struct http_conn *c, struct http_req *r)
{
	struct api	*a = api_of(c);
	struct api_err	 e;
	struct stat	 st;
	const char	*path, *why;
	cJSON		*j;

	if ((j = api_parse_body(r->body.data, r->body.len, &e)) == NULL) {
		api_reply_err(c, &e);
		return;
	}
	path = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j,
	    "path"));
	if (path == NULL || path[0] != '/' || strlen(path) >= sizeof(up.path)) {
		cJSON_Delete(j);
		http_reply_error(c, 400, "invalid_request",
		    "path: must be an absolute path");
		return;
	}
	if (up.busy || up.argv == NULL) {
		cJSON_Delete(j);
		http_reply_error(c, 409, "upgrade_refused", "%s", up.argv ==
		    NULL ? "this server cannot upgrade" :
		    "an upgrade is in progress");
		return;
	}
	up.api = a;
	snprintf(up.path, sizeof(up.path), "%s", path);
	cJSON_Delete(j);
	why = stat(up.path, &st) == -1 ? strerror(errno) :
	    !S_ISREG(st.st_mode) ? "not a regular file" :
	    access(up.path, X_OK) == -1 ? strerror(errno) : NULL;
	if (why != NULL) {
		api_upgrade_refuse(c, "not an executable file: %s", why);
		return;
	}
	if (api_upgrade_spawn() == -1) {
		api_upgrade_refuse(c, "the handshake could not run: %s",
		    strerror(errno));
		return;
	}
	up.busy = true;
	up.c = c;
	http_conn_own(c, &up, NULL, api_upgrade_closed);
	ev_io_init(&up.io, api_upgrade_read, up.fd, EV_READ);
	ev_io_start(a->tab->loop, &up.io);
	ev_timer_init(&up.timer, api_upgrade_timeout, UPGRADE_CHECK_TIMEOUT,
	    0.);
	ev_timer_start(a->tab->loop, &up.timer);
}
