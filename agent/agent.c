/*
 * agent.c: tend as PID 1.
 *
 * Reads like tini: parse the options, claim the state dir and the socket,
 * set up the one reap loop and the signals, start the wrapped command if
 * any, run the loop.  Shutdown: stop accepting, TERM every group, wait the
 * grace, KILL what is left, reap, write final statuses, exit.
 */
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "agent.h"
#include "agent_int.h"
#include "api/api.h"
#include "api/api_events.h"
#include "api/api_exec.h"
#include "api/api_files.h"
#include "api/api_freeze.h"
#include "api/api_health.h"
#include "api/api_output.h"
#include "api/api_ports.h"
#include "api/api_proc.h"
#include "api/api_tar.h"
#include "api/api_term.h"
#include "api/api_term_sse.h"
#include "api/api_term_ws.h"
#include "api/api_upgrade.h"
#include "api/api_watch.h"
#include "api/bridge/api_bridge.h"
#include "api/bridge/api_pty.h"
#include "api/bridge/api_sandbox.h"
#include "api/envd/api_envd.h"
#include "api/envd/api_envd_fs.h"
#include "api/envd/api_envd_stream.h"
#include "api/envd/envd.h"
#include "base/buf.h"
#include "base/codec.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "core/events.h"
#include "core/events_jobs.h"
#include "core/handover.h"
#include "core/portwatch.h"
#include "core/proc.h"
#include "core/shimctl.h"
#include "core/term.h"
#include "net/shim.h"
#include "store/boot.h"
#include "sys/cgroup.h"
#include "sys/child.h"
#include "sys/spawn.h"
#include "sys/user.h"

extern char **environ;

/*
 * The API's route modules, in the order their routes are matched.  A
 * new resource's module is one line here.
 */
static const struct http_route *const agent_routes[] = {
	api_health_routes,
	api_freeze_routes,
	api_proc_routes,
	api_ports_routes,
	api_output_routes,
	api_events_routes,
	api_exec_routes,
	api_files_routes,
	api_tar_routes,
	api_watch_routes,
	api_term_routes,
	api_sandbox_routes,
	api_term_ws_routes,
	api_term_sse_routes,
	api_envd_stream_routes,
	api_envd_routes,
	api_envd_fs_routes,
	api_upgrade_routes,
	NULL
};

/* The bridge's own, matched before those in its namespace. */
static const struct http_route *const agent_bridge_routes[] = {
	api_sandbox_bridge_routes,
	api_files_bridge_routes,
	api_tar_bridge_routes,
	api_pty_bridge_routes,
	NULL
};
static const struct api_ns agent_bridge = {
	api_bridge_map, agent_bridge_routes
};

#define AGENT_REAP_WAIT	2.0	/* s after KILL before giving up on reaping */


static struct ev_loop	*loop;
static struct proctab	 tab;
static struct termtab	 terms;
static struct api	 api;
static struct api_files	 files;
static struct envd	 envd;
static pid_t		 main_pid = -1;	/* wrapper mode's command */
static int		 main_status = -1;
static int		 exit_code;
static bool		 shutting_down, killed_all;
static ev_signal	 sigs[8];
static ev_timer		 grace_timer;
static ev_io		 log_io;	/* stderr full: flush when writable */
static struct jobtab_sub settled;	/* at shutdown: records that end */
static struct jobtab_sub term_settled;	/* ... and terminals */

static void	agent_shim_start(const cJSON *);
static void	agent_socket_dir(void);
static pid_t	agent_spawn_main(char **);
static bool	agent_reaped(pid_t, int);
static void	agent_signal_cb(struct ev_loop *, ev_signal *, int);
static void	agent_grace_cb(struct ev_loop *, ev_timer *, int);
static void	agent_shutdown(void);
static void	agent_maybe_done(void);
static void	agent_settled(struct jobtab_sub *, struct job *,
		    enum jobtab_event);
static void	agent_log_blocked(int);
static void	agent_log_cb(struct ev_loop *, ev_io *, int);
static void	agent_events_start(int, const char *, const cJSON *);
static void	agent_block_forwarded(bool);

static const int forwarded[] = {
	SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH
};

/* The signals agent_signal_cb takes, blocked (or unblocked). */
static void
agent_block_forwarded(bool block)
{
	sigset_t	set;
	size_t		i;

	sigemptyset(&set);
	for (i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	(void)sigprocmask(block ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/*
 * Hidden: every route the tables hold, "METHOD PATTERN" a line, the
 * bridge's with their /v1/sandbox/{id} prefix as the client sends them,
 * for the test that the OpenAPI document lists them all.
 */
void
agent_list_routes(void)
{
	const struct http_route *const	*m;
	const struct http_route		*rt;

	for (m = agent_routes; *m != NULL; m++)
		for (rt = *m; rt->method != NULL; rt++)
			printf("%s %s\n", rt->method, rt->pattern);
	for (m = agent_bridge_routes; *m != NULL; m++)
		for (rt = *m; rt->method != NULL; rt++)
			if (strcmp(rt->pattern, API_BRIDGE_BAD_PATH) != 0)
				printf("%s /v1/sandbox/{id}%s\n", rt->method,
				    rt->pattern + 3);
}

/*
 * The socket's directory, when the image has none: a user's image that
 * only copied tend in (FROM scratch, busybox alone) may have no /run.
 * 0755, so that --socket-group's members reach the socket.  One level
 * only: a deeper missing path is a mistake for listen to report.
 */
static void
agent_socket_dir(void)
{
	char	dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char	*slash;

	if (strlen(opt.socket) >= sizeof(dir))
		return;
	memcpy(dir, opt.socket, strlen(opt.socket) + 1);
	if ((slash = strrchr(dir, '/')) == NULL || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0755) == 0)
		log_info("event=socket_dir_made dir=%s", dir);
}

/*
 * The shim is one peer for many clients: it may not take the agent's
 * last slots, which stay for health checks and the operator's CLI.
 */
static bool
agent_peer_limited(void *ctx, pid_t pid, uid_t uid)
{
	(void)ctx;
	(void)uid;
	return pid > 0 && pid == shimctl_pid();
}

/*
 * The socket's group (--socket-group, or the shim user's own group when
 * the agent supervises a shim): 0660.  Then the shim, if any.
 */
static void
agent_shim_start(const cJSON *handed)
{
	struct shimctl_opts	o;
	struct user_id		u;
	gid_t			gid = 0;

	if (opt.shim_listen != NULL) {
		if (user_parse(NULL, opt.shim_user, &u) == -1)
			fatalx("event=bad_shim_user user=%s", opt.shim_user);
		gid = u.gid;
	}
	if (opt.socket_group != NULL && user_group(NULL, opt.socket_group,
	    &gid) == -1)
		fatalx("event=bad_socket_group group=%s", opt.socket_group);
	if ((opt.socket_group != NULL || opt.shim_listen != NULL) &&
	    http_socket_share(opt.socket, gid) == -1)
		fatal("event=socket_group_failed socket=%s", opt.socket);
	if (opt.shim_listen == NULL)
		return;
	memset(&o, 0, sizeof(o));
	o.exe = "/proc/self/exe";
	o.listen = opt.shim_listen;
	o.socket = opt.socket;
	o.token_file = opt.shim_token_file;
	o.user = opt.shim_user;
	o.proxy_ports = opt.proxy_ports;
	o.proxy_host_suffix = opt.proxy_host_suffix;
	o.socket_gid = gid;
	/* The agent before this one ran it: the same shim serves on. */
	if (handed != NULL)
		shimctl_adopt(loop, &o, handed);
	else
		shimctl_start(loop, &o);
}

int
agent_main(int argc, char **argv)
{
	char		 boot[BOOT_ID_LEN + 1];
	int		 statefd;
	size_t		 i;
	int64_t		 t0 = codec_mono_ms();
	cJSON		*handed;	/* the handover's manifest, if any */
	sigset_t	 handed_sigs;	/* pending at the handover's exec */
	struct handover	 h;

	agent_options(argc, argv);
	log_init("tend", opt.verbose);
	/*
	 * An agent the one before handed over to (core/handover.h): the
	 * manifest is read, and its fds made close-on-exec, before anything
	 * is claimed or spawned.
	 */
	handed = handover_take();
	api_upgrade_setup(argv, &main_pid);
	/*
	 * The agent before blocked every signal for its exec: one that came
	 * meanwhile is pending, and is raised again once it is watched.
	 */
	sigemptyset(&handed_sigs);
	if (handed != NULL)
		(void)sigpending(&handed_sigs);
	/* Nothing inherited: children get default dispositions from us. */
	spawn_reset_signals();
	/*
	 * Until they are watched, the forwarded signals wait (as PID 1 with
	 * no handler they would be dropped).
	 */
	agent_block_forwarded(true);
	signal(SIGPIPE, SIG_IGN);

	/* Outside a PID namespace, orphans of our children still come to us. */
	if (getpid() != 1 && prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		log_warn("event=subreaper_failed");

	/*
	 * SIGCHLD is lib/sys/child.c's, on a signalfd of its own; the loop is not
	 * libev's default one, whose SIGCHLD watcher would reap behind its
	 * back.  The other signals (rare: shutdown, forwarding) go through
	 * libev's handlers, not a second signalfd: every signal a process
	 * gets wakes all of its signalfds in epoll, so a burst of SIGCHLD
	 * would wake the loop once more per death for nothing.
	 */
	loop = ev_loop_new(EVFLAG_AUTO);
	if (loop == NULL)
		fatalx("event=loop_failed");
	ev_init(&log_io, agent_log_cb);
	log_set_blocked_hook(agent_log_blocked);

	if (handed != NULL)
		memcpy(boot, handover_boot(handed), sizeof(boot));
	else if (boot_new_id(boot) == -1)
		fatal("event=boot_id_failed");
	if (handed != NULL)
		handover_cgroups(handed);
	/*
	 * Containment first: the agent leaves for its leaf before it has
	 * any child (the shim and the helpers go with it).
	 */
	cgroups_init(opt.cgroup_root, opt.no_cgroups, boot);
	if (cgroups_lacks(&opt.default_limits) != NULL) {
		log_warnx("event=default_limits_unavailable controller=%s "
		    "reason=\"%s\"", cgroups_lacks(&opt.default_limits),
		    cgroups_on() ? "not offered" : cgroups_reason());
		cgroups_stop();
		exit(2);
	}
	if (fsutil_mkdirs(AT_FDCWD, opt.statedir) == -1)
		fatal("event=state_dir_failed dir=%s", opt.statedir);
	if ((statefd = open(opt.statedir, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		fatal("event=state_dir_failed dir=%s", opt.statedir);
	/* Earlier boots first: removing old ones may make room for this one. */
	record_lost_hook = events_jobs_lost;
	boot_scan(statefd, boot, opt.keep_boots);
	/*
	 * The table makes the boot's directory.  A full or read-only state
	 * dir does not keep PID 1 down: the agent serves, degraded (health
	 * says so), and makes the directory once the disk takes it.
	 */
	if (proctab_init(&tab, loop, boot, statefd, -1) == -1)
		fatal("event=proctab_failed");
	tab.jobs.maxlive = opt.max_procs;
	tab.jobs.dflt_limits = &opt.default_limits;
	tab.jobs.keep = opt.keep_exited;
	tab.maxlog = opt.max_log;
	if (termtab_init(&terms, loop, boot, statefd, tab.jobs.baseenv,
	    &tab.limits) == -1)
		fatal("event=termtab_failed");
	agent_events_start(statefd, boot, handed);
	/*
	 * Ports: what listens now is the baseline, those of the processes
	 * handed over included.
	 */
	portwatch_init(loop, &tab.jobs, &terms.jobs);
	if (handed != NULL) {
		/* Before the reap loop: every exit goes to its record. */
		memset(&h, 0, sizeof(h));
		h.tab = &tab;
		h.terms = &terms;
		handover_resume(handed, &h);
		main_pid = h.main_pid;
		if (handover_listen_fd(handed) > 2)
			api_listen_handed(handover_listen_fd(handed));
	}
	api.tab = &tab;
	api.terms = &terms;
	terms.jobs.dflt_limits = &opt.default_limits;
	/* Uptime is the process's: it goes on across upgrades. */
	api.started_mono = handed != NULL && h.started_mono > 0 ?
	    h.started_mono : t0;
	api.default_user = opt.default_user;
	if (api_files_init(&files, opt.files_root, opt.workspace) == -1)
		fatal("event=files_root_failed dir=%s", opt.files_root);
	api.files = &files;
	if ((api.watches = watchtab_new(loop, &files.root)) == NULL)
		fatal("event=watchtab_failed");
	if (envd_init(&envd, opt.envd_user, getenv("PATH")) == -1)
		fatal("event=envd_init_failed");
	api.envd = &envd;

	if (child_reap_start(loop, agent_reaped) == -1)
		fatal("event=reaper_failed");
	cgroups_start(loop, job_cgroup_changed);
	for (i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++) {
		ev_signal_init(&sigs[i], agent_signal_cb, forwarded[i]);
		ev_signal_start(loop, &sigs[i]);
		if (sigismember(&handed_sigs, forwarded[i]) == 1)
			(void)raise(forwarded[i]);
	}
	agent_block_forwarded(false);
	ev_timer_init(&grace_timer, agent_grace_cb, opt.grace, 0.);

	agent_socket_dir();
	if (api_listen(&api, loop, opt.socket, opt.max_conns,
	    agent_routes, &agent_bridge) == -1) {
		if (errno == EADDRINUSE)
			fatalx("event=socket_busy socket=%s msg=\"another agent "
			    "answers on this socket\"", opt.socket);
		fatal("event=listen_failed socket=%s", opt.socket);
	}
	http_server_timeouts(api.srv, opt.stuck, opt.head, HTTP_PAUSE_TIMEOUT);
	http_server_limit(api.srv, agent_peer_limited);
	agent_shim_start(handed != NULL ? handover_shim(handed) : NULL);
	cJSON_Delete(handed);

	if (opt.wrapped != NULL && main_pid == -1 &&
	    strcmp(handover_state(), "resumed") != 0 &&
	    (main_pid = agent_spawn_main(opt.wrapped)) == -1)
		goto out;	/* exit_code says why, as a shell's would */

	log_info("event=ready boot=%s pid=%d socket=%s state=%s ms=%lld", boot,
	    (int)getpid(), opt.socket, opt.statedir,
	    (long long)(codec_mono_ms() - t0));
	ev_run(loop, 0);

out:
	portwatch_stop();
	termtab_finalize(&terms);
	termtab_free(&terms);
	envd_free(&envd);
	proctab_finalize(&tab);
	proctab_free(&tab);
	events_close(events_current());
	cgroups_stop();
	unlink(opt.socket);
	log_info("event=exit code=%d", exit_code);
	return exit_code;
}

/*
 * The boot's event log: agent.started first, then the earlier boot's
 * lost records, then every process's and terminal's events.
 */
static void
agent_events_start(int statefd, const char *boot, const cJSON *handed)
{
	struct events	*ev;
	cJSON		*o;

	if (handed != NULL)
		ev = handover_events(handed, statefd, boot,
		    (uint64_t)opt.max_events);
	else
		ev = events_open(loop, statefd, boot, (uint64_t)opt.max_events);
	if (ev == NULL)
		fatal("event=events_failed");
	events_set_current(ev);
	if ((o = cJSON_CreateObject()) != NULL) {
		cJSON_AddStringToObject(o, "version", TEND_VERSION);
		cJSON_AddNumberToObject(o, "pid", (double)getpid());
		if (handed != NULL) {
			cJSON_AddStringToObject(o, "previousVersion",
			    handover_from(handed) ? handover_from(handed) : "");
			cJSON_AddNumberToObject(o, "upgrades",
			    (double)handover_upgrades());
			/* Not carried: the next watch starts afresh. */
			cJSON_AddStringToObject(o, "watches", "dropped");
		} else if (strcmp(handover_state(), "failed") == 0)
			cJSON_AddStringToObject(o, "handover", "failed");
		if (boot_previous() != NULL)
			cJSON_AddStringToObject(o, "previousBoot",
			    boot_previous());
	}
	events_emit(handed != NULL ? "agent.upgraded" : "agent.started", o);
	events_jobs_start(&tab.jobs, &terms.jobs);
}

/*
 * Wrapper mode's main child: the agent's process group, stdio and
 * environment, default signal dispositions and an empty mask (libev
 * blocks what it watches), the children's limits.  A program that cannot
 * be run makes the agent exit 127 (not found) or 126 (not executable),
 * as a shell does: -1 then, exit_code set.
 */
static pid_t
agent_spawn_main(char **argv)
{
	struct spawn_opts	o;
	pid_t			pid;
	bool			failed;

	memset(&o, 0, sizeof(o));
	o.argv = argv;
	o.envp = environ;
	o.fd[0] = o.fd[1] = o.fd[2] = -1;
	o.limits = &tab.limits;
	if ((pid = spawn_start(&o, &failed)) == -1) {
		if (!failed)
			fatal("event=fork_failed cmd=%s", argv[0]);
		exit_code = errno == ENOENT ? 127 : 126;
		log_warn("event=exec_failed cmd=%s", argv[0]);
		return -1;
	}
	log_info("event=main_started pid=%d cmd=%s", (int)pid, argv[0]);
	return pid;
}

/*
 * Stderr refused a log line for want of room: once it takes data again,
 * the rest of a cut line and the count of dropped ones are written.
 */
static void
agent_log_blocked(int fd)
{
	if (ev_is_active(&log_io))
		return;
	ev_io_set(&log_io, fd, EV_WRITE);
	ev_io_start(loop, &log_io);
}

static void
agent_log_cb(struct ev_loop *l, ev_io *w, int revents)
{
	(void)revents;
	if (log_flush() == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
		ev_io_stop(l, w);
}

/*
 * Each child the reap loop (lib/sys/child.c) reaps, the tar helpers aside:
 * true for one of ours (the main child, the shim, a record's root),
 * false for an orphan as proc_reaped counts them (a terminal's leader
 * too: no reply waits on its status, the pty's end comes apart).
 */
static bool
agent_reaped(pid_t pid, int wstatus)
{
	uint64_t	orphans = tab.orphans;

	if (pid == main_pid) {
		main_status = wstatus;
		main_pid = -1;
		exit_code = WIFSIGNALED(main_status) ?
		    128 + WTERMSIG(main_status) : WEXITSTATUS(main_status);
		log_info("event=main_exited code=%d", exit_code);
		agent_shutdown();
		return true;
	}
	if (shimctl_reaped(pid, wstatus)) {
		if (shutting_down)
			agent_maybe_done();
		return true;
	}
	proc_reaped(&tab, pid, wstatus);
	term_reaped(&terms, pid, wstatus);
	return tab.orphans == orphans;
}

static void
agent_signal_cb(struct ev_loop *l, ev_signal *w, int revents)
{
	(void)l;
	(void)revents;
	if (main_pid > 0) {
		(void)kill(main_pid, w->signum);
		return;
	}
	if (w->signum == SIGTERM || w->signum == SIGINT) {
		log_info("event=shutdown signal=%d", w->signum);
		agent_shutdown();
	}
}

static void
agent_shutdown(void)
{
	if (shutting_down)
		return;
	shutting_down = true;
	events_emit("agent.stopping", NULL);
	jobtab_subscribe(&tab.jobs, &settled, agent_settled);
	jobtab_subscribe(&terms.jobs, &term_settled, agent_settled);
	http_stop_accepting(api.srv);
	http_close_all(api.srv);
	shimctl_stop();
	proctab_stop_spares(&tab);
	proctab_signal_all(&tab, SIGTERM);
	/* A terminal's end is a hangup: HUP first, as term_terminate. */
	termtab_signal_all(&terms, SIGHUP);
	termtab_signal_all(&terms, SIGTERM);
	ev_timer_start(loop, &grace_timer);
	agent_maybe_done();
}

/* A record or terminal ended, or was removed: it may have been the last. */
static void
agent_settled(struct jobtab_sub *s, struct job *j, enum jobtab_event ev)
{
	(void)s;
	(void)j;
	if (ev != JOBTAB_EV_START)
		agent_maybe_done();
}

/* Everything settled: leave the loop. */
static void
agent_maybe_done(void)
{
	if (tab.jobs.nlive > 0 || termtab_live(&terms) > 0 ||
	    shimctl_alive())
		return;
	ev_timer_stop(loop, &grace_timer);
	ev_break(loop, EVBREAK_ALL);
}

/*
 * The grace is over: KILL what is left.  As PID 1 that is every process
 * in the namespace; outside one, only the groups we started (kill(-1)
 * would reach the whole machine).  After a further wait, records whose
 * group we could not see end are finalized anyway.
 */
static void
agent_grace_cb(struct ev_loop *l, ev_timer *w, int revents)
{
	(void)revents;
	if (!killed_all) {
		killed_all = true;
		log_info("event=grace_over running=%d terminals=%d", tab.jobs.nlive,
		    termtab_live(&terms));
		if (getpid() == 1)
			(void)kill(-1, SIGKILL);
		else {
			proctab_signal_all(&tab, SIGKILL);
			termtab_signal_all(&terms, SIGKILL);
			shimctl_kill();
		}
		ev_timer_set(w, AGENT_REAP_WAIT, 0.);
		ev_timer_start(l, w);
		return;
	}
	log_warnx("event=shutdown_incomplete running=%d", tab.jobs.nlive);
	ev_break(l, EVBREAK_ALL);
}
