/*
 * shimctl.c: the supervised shim (see shimctl.h).
 *
 * States: none (not configured), running (a pid), restarting (dead, the
 * backoff timer runs), stopped (shutdown asked, or it is gone for good).
 * The delay doubles from SHIM_BACKOFF_MIN to SHIM_BACKOFF_MAX and starts
 * over once a shim stayed up SHIM_BACKOFF_RESET: a shim that dies at once
 * does not make the agent spin, one that dies once a day comes back fast.
 */
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/tunables.h"
#include "events.h"
#include "shimctl.h"
#include "sys/spawn.h"

extern char **environ;

enum shimctl_state { SC_NONE, SC_RUNNING, SC_RESTARTING, SC_STOPPED };

static struct {
	struct ev_loop		*loop;
	struct shimctl_opts	 o;
	enum shimctl_state	 state;
	pid_t			 pid;
	int			 restarts;
	double			 delay;		/* the next backoff */
	ev_tstamp		 started;
	ev_timer		 timer;
	char			 gid[16];
} sc;

static void	shimctl_spawn(void);
static void	shimctl_timer_cb(struct ev_loop *, ev_timer *, int);
static void	shimctl_retry(void);
static void	shimctl_tell(const char *, pid_t, int, double);

void
shimctl_start(struct ev_loop *loop, const struct shimctl_opts *o)
{
	sc.loop = loop;
	sc.o = *o;
	sc.delay = SHIM_BACKOFF_MIN;
	snprintf(sc.gid, sizeof(sc.gid), "%u", (unsigned)o->socket_gid);
	ev_timer_init(&sc.timer, shimctl_timer_cb, 0., 0.);
	shimctl_spawn();
}

static void
shimctl_spawn(void)
{
	struct spawn_opts	 so;
	char			*argv[] = { (char *)sc.o.exe, "shim", "--listen",
				    (char *)sc.o.listen, "--socket",
				    (char *)sc.o.socket, "--token-file",
				    (char *)sc.o.token_file, "--user",
				    (char *)sc.o.user, "--socket-group", sc.gid,
				    NULL, NULL, NULL, NULL, NULL };
	bool			 failed;
	int			 n = 12;

	/* The proxy's options, when given: else the shim's defaults. */
	if (sc.o.proxy_ports != NULL) {
		argv[n++] = "--proxy-ports";
		argv[n++] = (char *)sc.o.proxy_ports;
	}
	if (sc.o.proxy_host_suffix != NULL) {
		argv[n++] = "--proxy-host-suffix";
		argv[n++] = (char *)sc.o.proxy_host_suffix;
	}

	memset(&so, 0, sizeof(so));
	so.argv = argv;
	so.envp = environ;
	so.fd[0] = so.fd[1] = so.fd[2] = -1;	/* its log lines: ours */
	so.setsid = true;
	so.closefds = true;
	if ((sc.pid = spawn_start(&so, &failed)) == -1) {
		log_warn("event=shim_start_failed");
		shimctl_retry();
		return;
	}
	sc.state = SC_RUNNING;
	sc.started = ev_now(sc.loop);
	log_info("event=shim_started pid=%d listen=%s", (int)sc.pid,
	    sc.o.listen);
	shimctl_tell("shim.started", sc.pid, -1, 0);
}

/*
 * shim.started, shim.exited (its exit; status -1: none) with the delay
 * before the next start (backoffS; 0: none, it was stopped).
 */
static void
shimctl_tell(const char *type, pid_t pid, int status, double backoff)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return;
	cJSON_AddNumberToObject(o, "pid", (double)pid);
	if (status == -1)
		cJSON_AddStringToObject(o, "listen", sc.o.listen);
	else if (WIFSIGNALED(status))
		cJSON_AddNumberToObject(o, "signal", WTERMSIG(status));
	else
		cJSON_AddNumberToObject(o, "code", WEXITSTATUS(status));
	if (status != -1) {
		cJSON_AddBoolToObject(o, "restarting", backoff > 0);
		cJSON_AddNumberToObject(o, "backoffS", backoff);
	}
	events_emit(type, o);
}

static void
shimctl_retry(void)
{
	sc.pid = -1;
	if (ev_now(sc.loop) - sc.started >= SHIM_BACKOFF_RESET)
		sc.delay = SHIM_BACKOFF_MIN;
	sc.state = SC_RESTARTING;
	ev_timer_set(&sc.timer, sc.delay, 0.);
	ev_timer_start(sc.loop, &sc.timer);
	log_info("event=shim_restart_in s=%.0f", sc.delay);
	sc.delay = sc.delay * 2 > SHIM_BACKOFF_MAX ? SHIM_BACKOFF_MAX :
	    sc.delay * 2;
}

static void
shimctl_timer_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	sc.restarts++;
	shimctl_spawn();
}

bool
shimctl_reaped(pid_t pid, int status)
{
	if (sc.state == SC_NONE || pid != sc.pid || pid <= 0)
		return false;
	log_warnx("event=shim_exited pid=%d %s=%d", (int)pid,
	    WIFSIGNALED(status) ? "signal" : "code", WIFSIGNALED(status) ?
	    WTERMSIG(status) : WEXITSTATUS(status));
	if (sc.state == SC_STOPPED) {
		sc.pid = -1;
		shimctl_tell("shim.exited", pid, status, 0);
		return true;
	}
	shimctl_retry();
	shimctl_tell("shim.exited", pid, status,
	    ev_timer_remaining(sc.loop, &sc.timer));
	return true;
}

void
shimctl_stop(void)
{
	if (sc.state == SC_NONE)
		return;
	ev_timer_stop(sc.loop, &sc.timer);
	sc.state = SC_STOPPED;
	if (sc.pid > 0)
		(void)kill(sc.pid, SIGTERM);
}

void
shimctl_kill(void)
{
	if (sc.pid > 0)
		(void)kill(sc.pid, SIGKILL);
}

bool
shimctl_alive(void)
{
	return sc.state != SC_NONE && sc.pid > 0;
}

pid_t
shimctl_pid(void)
{
	return sc.state != SC_NONE && sc.pid > 0 ? sc.pid : -1;
}

void
shimctl_health(cJSON *j)
{
	static const char *const names[] = {
		[SC_RUNNING] = "running", [SC_RESTARTING] = "restarting",
		[SC_STOPPED] = "stopped",
	};
	cJSON	*s;

	if (sc.state == SC_NONE)
		return;
	s = cJSON_AddObjectToObject(j, "shim");
	cJSON_AddStringToObject(s, "state", names[sc.state]);
	if (sc.pid > 0)
		cJSON_AddNumberToObject(s, "pid", sc.pid);
	cJSON_AddNumberToObject(s, "restarts", sc.restarts);
	cJSON_AddStringToObject(s, "listen", sc.o.listen);
	cJSON_AddStringToObject(s, "proxyPorts", sc.o.proxy_ports != NULL ?
	    sc.o.proxy_ports : "all");
	if (sc.o.proxy_host_suffix != NULL)
		cJSON_AddStringToObject(s, "proxyHostSuffix",
		    sc.o.proxy_host_suffix);
	else
		cJSON_AddNullToObject(s, "proxyHostSuffix");
}

/* ------------------------------------------------------------------ */
/* The agent's handover */

cJSON *
shimctl_handover_save(void)
{
	cJSON	*o;

	if (sc.state == SC_NONE || (o = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddNumberToObject(o, "pid", sc.state == SC_RUNNING ?
	    sc.pid : -1);
	cJSON_AddNumberToObject(o, "restarts", sc.restarts);
	return o;
}

/*
 * The shim the agent before this one ran, kept: its pid is this agent's
 * child as it was the other's.  One that was waiting for its restart
 * starts now.
 */
void
shimctl_adopt(struct ev_loop *loop, const struct shimctl_opts *o,
    const cJSON *saved)
{
	const cJSON	*pid = cJSON_GetObjectItemCaseSensitive(saved, "pid");
	const cJSON	*n = cJSON_GetObjectItemCaseSensitive(saved,
			    "restarts");

	if (!cJSON_IsNumber(pid) || pid->valueint <= 0) {
		shimctl_start(loop, o);
		return;
	}
	sc.loop = loop;
	sc.o = *o;
	sc.delay = SHIM_BACKOFF_MIN;
	snprintf(sc.gid, sizeof(sc.gid), "%u", (unsigned)o->socket_gid);
	ev_timer_init(&sc.timer, shimctl_timer_cb, 0., 0.);
	sc.pid = (pid_t)pid->valueint;
	sc.restarts = cJSON_IsNumber(n) ? n->valueint : 0;
	sc.state = SC_RUNNING;
	sc.started = ev_now(loop);
	log_info("event=shim_adopted pid=%d", (int)sc.pid);
}
