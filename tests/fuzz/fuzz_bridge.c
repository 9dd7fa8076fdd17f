/*
 * fuzz_bridge: requests in the bridge's namespace, /v1/sandbox/{id}/...,
 * through the agent's real route tables (the modules agent/agent.c
 * lists), the real process table, terminals and file roots.
 *
 * Input: byte 0 chooses how the requests are delivered, as in fuzz_http
 * (pieces, half-close, seed); the rest is requests separated by NUL
 * bytes, each one
 *
 *	METHOD SUFFIX\n[Header: value\n...\n]\nBODY
 *
 * sent as "METHOD /v1/sandbox/SUFFIX HTTP/1.1" with the header lines and
 * a Content-Length for BODY (when there is no empty line, all after the
 * first line is the body).  So the input is about the routes, not about
 * HTTP framing, which fuzz_http covers.  Replies must be well-formed
 * HTTP/1.1 (fuzzsrv), nothing may crash, leak or hang, and after each
 * input every process and terminal is reaped and removed and the file
 * roots emptied, so that inputs do not depend on each other.
 *
 * Requests run real programs and write real files, so the target
 * confines itself before the first input:
 *   - a private mount namespace in which everything is read-only but a
 *     tmpfs on /srv (the files root /srv/root, the workspace
 *     /srv/workspace, the state dir and the socket) and the directory
 *     it was started in (libFuzzer's corpus and artifacts);
 *   - the programs: its own execvp and posix_spawn (found before libc's
 *     by the lib code, which this executable links) run only true,
 *     false, echo and printf as asked, sleep for 0.05 s whatever was
 *     asked, and cat with no arguments for cat and the shells (a
 *     terminal's shell echoes); anything else fails with ENOENT, as a
 *     missing program does, and every program gets a fixed environment.
 */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/api_exec.h"
#include "api/api_files.h"
#include "api/api_health.h"
#include "api/api_output.h"
#include "api/api_proc.h"
#include "api/api_tar.h"
#include "api/api_term.h"
#include "api/api_term_sse.h"
#include "api/api_term_ws.h"
#include "api/bridge/api_bridge.h"
#include "api/bridge/api_pty.h"
#include "api/bridge/api_sandbox.h"
#include "api/bridge/api_session.h"
#include "base/codec.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "core/proc.h"
#include "core/term.h"
#include "fuzzsrv.h"
#include "store/boot.h"
#include "sys/child.h"

#define FB_TMP		"/srv"
#define FB_ROOT		FB_TMP "/root"
#define FB_WORKSPACE	FB_TMP "/workspace"
#define FB_STATE	FB_TMP "/state"
#define FB_MAXREQ	16		/* requests of one input at most */
#define FB_SETTLE	0.1		/* s for what an input started to end */
#define FB_REAP		5.0		/* s after KILL until all are reaped */
#define FB_KEEP		8		/* exited records kept by the table */
#define FB_FREE		2.0		/* s for a connection to be freed */

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);
int	execvp(const char *, char *const []);
int	posix_spawn(pid_t *, const char *, const posix_spawn_file_actions_t *,
	    const posix_spawnattr_t *, char *const [], char *const []);

/* As agent/agent.c lists them. */
static const struct http_route *const fb_routes[] = {
	api_health_routes,
	api_proc_routes,
	api_output_routes,
	api_exec_routes,
	api_files_routes,
	api_tar_routes,
	api_term_routes,
	api_sandbox_routes,
	api_term_ws_routes,
	api_term_sse_routes,
	NULL
};

static const struct http_route *const fb_bridge_routes[] = {
	api_sandbox_bridge_routes,
	api_files_bridge_routes,
	api_tar_bridge_routes,
	api_pty_bridge_routes,
	NULL
};
static const struct api_ns fb_bridge = { api_bridge_map, fb_bridge_routes };

static struct proctab	fb_tab;
static struct termtab	fb_terms;
static struct api_files	fb_files;
static struct api	fb_api;
static ev_child		fb_reaper;
static ev_timer		fb_tick;

static void
fb_fail(const char *what)
{
	fprintf(stderr, "fuzz_bridge: %s: %s\n", what, strerror(errno));
	abort();
}

/* ------------------------------------------------------------------ */
/* The programs an input may run                                       */

static char *const fb_env[] = { "PATH=/usr/bin:/bin", "LC_ALL=C", NULL };

/*
 * What runs for a program named name (its last component), with argv
 * as asked: the real path, and *argv replaced when the arguments are
 * not to be trusted.  NULL: nothing, ENOENT.
 */
static const char *
fb_program(const char *name, char *const **argv)
{
	static char *const	 sleep_argv[] = { "sleep", "0.05", NULL };
	static char *const	 cat_argv[] = { "cat", NULL };
	static const char *const asis[][2] = {
		{ "true", "/bin/true" }, { "false", "/bin/false" },
		{ "echo", "/bin/echo" }, { "printf", "/usr/bin/printf" },
	};
	static const char *const cats[] = { "cat", "sh", "bash", "dash" };
	const char		*base = strrchr(name, '/');
	size_t			 i;

	base = base != NULL ? base + 1 : name;
	for (i = 0; i < sizeof(asis) / sizeof(asis[0]); i++)
		if (strcmp(base, asis[i][0]) == 0)
			return asis[i][1];
	if (strcmp(base, "sleep") == 0) {
		*argv = sleep_argv;
		return "/bin/sleep";
	}
	for (i = 0; i < sizeof(cats) / sizeof(cats[0]); i++)
		if (strcmp(base, cats[i]) == 0) {
			*argv = cat_argv;
			return "/bin/cat";
		}
	return NULL;
}

/* In the child lib/sys/spawn.c forks: never returns but for a failure. */
int
execvp(const char *file, char *const argv[])
{
	const char	*path;

	if ((path = fb_program(file, &argv)) == NULL) {
		errno = ENOENT;
		return -1;
	}
	return execve(path, argv, fb_env);
}

int
posix_spawn(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
    const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	static int	(*real)(pid_t *, const char *,
			    const posix_spawn_file_actions_t *,
			    const posix_spawnattr_t *, char *const [],
			    char *const []);
	const char	*path;

	(void)envp;
	if (real == NULL && (real = dlsym(RTLD_NEXT, "posix_spawn")) == NULL)
		return ENOSYS;
	if ((path = fb_program(file, &argv)) == NULL)
		return ENOENT;
	return real(pid, path, fa, attr, argv, fb_env);
}

/* ------------------------------------------------------------------ */
/* The confinement                                                     */

static void
fb_rw(const char *path)
{
	struct mount_attr	ma = { .attr_clr = MOUNT_ATTR_RDONLY };

	if (mount(path, path, NULL, MS_BIND | MS_REC, NULL) == -1)
		fb_fail(path);
	if (mount_setattr(AT_FDCWD, path, AT_RECURSIVE, &ma, sizeof(ma)) == -1)
		fb_fail(path);
}

static void
fb_confine(void)
{
	struct mount_attr	ro = { .attr_set = MOUNT_ATTR_RDONLY };
	char			cwd[PATH_MAX];

	if (getcwd(cwd, sizeof(cwd)) == NULL)
		fb_fail("getcwd");
	if (unshare(CLONE_NEWNS) == -1)
		fb_fail("unshare (run as root)");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1)
		fb_fail("private /");
	/* Debian has an empty /srv; the tmpfs hides whatever is there. */
	if (mkdir(FB_TMP, 0755) == -1 && errno != EEXIST)
		fb_fail(FB_TMP);
	if (mount("tend-fuzz", FB_TMP, "tmpfs", MS_NOSUID | MS_NODEV,
	    "size=64m,mode=0755") == -1)
		fb_fail(FB_TMP);
	/* The binds first: made read-only with the rest, then cleared. */
	if (mount(cwd, cwd, NULL, MS_BIND | MS_REC, NULL) == -1)
		fb_fail(cwd);
	if (mount_setattr(AT_FDCWD, "/", AT_RECURSIVE, &ro, sizeof(ro)) == -1)
		fb_fail("read-only /");
	fb_rw(cwd);
	fb_rw(FB_TMP);
	fb_rw("/dev");
	fb_rw("/proc");
	/* The old cwd is the mount below the bind. */
	if (chdir(cwd) == -1)
		fb_fail(cwd);
}

/* ------------------------------------------------------------------ */
/* The agent                                                           */

static void
fb_reap_cb(struct ev_loop *loop, ev_child *w, int revents)
{
	(void)loop;
	(void)revents;
	if (child_reaped(w->rpid, w->rstatus))
		return;
	proc_reaped(&fb_tab, w->rpid, w->rstatus);
	term_reaped(&fb_terms, w->rpid, w->rstatus);
}

/* Wakes EVRUN_ONCE when nothing else does. */
static void
fb_tick_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char	boot[BOOT_ID_LEN + 1];
	int	statefd = -1, fd;

	(void)argc;
	(void)argv;
	fb_confine();
	/* A line per process started and ended would drown the fuzzer's. */
	if ((fd = open("/dev/null", O_WRONLY | O_CLOEXEC)) == -1)
		fb_fail("/dev/null");
	log_open(fd);
	fuzzsrv_init(FB_TMP);
	if (mkdir(FB_ROOT, 0755) == -1 || mkdir(FB_WORKSPACE, 0755) == -1 ||
	    mkdir(FB_STATE, 0700) == -1)
		fb_fail("mkdir");
	if (boot_new_id(boot) == -1 ||
	    (statefd = open(FB_STATE, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1 || proctab_init(&fb_tab, fuzzsrv_loop, boot, statefd, -1) == -1)
		fb_fail("proctab");
	fb_tab.jobs.keep = FB_KEEP;
	if (termtab_init(&fb_terms, fuzzsrv_loop, boot, statefd,
	    fb_tab.jobs.baseenv, &fb_tab.limits) == -1)
		fb_fail("termtab");
	if (api_files_init(&fb_files, FB_ROOT, FB_WORKSPACE) == -1)
		fb_fail("files");
	fb_api.tab = &fb_tab;
	fb_api.terms = &fb_terms;
	fb_api.files = &fb_files;
	fb_api.started_mono = codec_mono_ms();
	ev_child_init(&fb_reaper, fb_reap_cb, 0, 0);
	ev_child_start(fuzzsrv_loop, &fb_reaper);
	ev_timer_init(&fb_tick, fb_tick_cb, 0.01, 0.01);
	ev_timer_start(fuzzsrv_loop, &fb_tick);
	if (api_listen(&fb_api, fuzzsrv_loop, fuzzsrv_socket_path(),
	    HTTP_MAX_CONNS, fb_routes, &fb_bridge) == -1)
		fb_fail("listen");
	fuzzsrv_srv = fb_api.srv;
	return 0;
}

/* ------------------------------------------------------------------ */
/* One input                                                           */

/*
 * One request of the input, d[0, n), framed into out: "METHOD SUFFIX" up
 * to the first LF, header lines up to an empty line, the body.  false
 * when d has no first line.
 */
static bool
fb_frame(struct buf *out, const char *d, size_t n)
{
	const char	*nl, *h, *e, *body, *hend;
	size_t		 m;

	if ((nl = memchr(d, '\n', n)) == NULL || nl == d)
		return false;
	m = strcspn(d, " \n");
	body = h = nl + 1;
	/* Header lines end at an empty line; without one there are none. */
	hend = body < d + n && body[0] == '\n' ? body :
	    memmem(body, d + n - body, "\n\n", 2);
	if (hend != NULL)
		body = hend + (hend == h ? 1 : 2);
	if (buf_printf(out, "%.*s /v1/sandbox/%.*s HTTP/1.1\r\nHost: x\r\n",
	    (int)m, d, (int)(nl - d - m - (d[m] == ' ')),
	    d + m + (d[m] == ' ')) == -1)
		return false;
	for (; hend != NULL && hend != h && h <= hend; h = e + 1) {
		e = memchr(h, '\n', hend + 1 - h);
		if (buf_printf(out, "%.*s\r\n", (int)(e - h), h) == -1)
			return false;
	}
	return buf_printf(out, "Content-Length: %zu\r\n\r\n",
	    (size_t)(d + n - body)) == 0 &&
	    buf_add(out, body, d + n - body) == 0;
}

/* Run the loop until cond holds or t seconds have passed. */
static bool
fb_until(bool (*cond)(void), double t)
{
	ev_tstamp	end;

	ev_now_update(fuzzsrv_loop);
	end = ev_now(fuzzsrv_loop) + t;
	while (!cond()) {
		if (ev_now(fuzzsrv_loop) >= end)
			return false;
		ev_run(fuzzsrv_loop, EVRUN_ONCE);
	}
	return true;
}

static bool
fb_all_ended(void)
{
	struct proctab_stats	st;

	proctab_stats(&fb_tab, &st);
	return st.running == 0 && termtab_live(&fb_terms) == 0;
}

/*
 * What the input started gets FB_SETTLE s to end on its own, then every
 * record and terminal is removed (the live ones killed) and reaped, and
 * the roots are emptied and the sessions dropped.
 */
static void
fb_reset(void)
{
	struct proc	*p;
	struct term	*t;
	int		 fd;

	(void)fb_until(fb_all_ended, FB_SETTLE);
	api_session_clear();
	while ((p = proctab_first(&fb_tab)) != NULL)
		if (proc_delete(p) == -1)
			fb_fail("proc_delete");
	while ((t = termtab_first(&fb_terms)) != NULL)
		if (term_delete(t) == -1)
			fb_fail("term_delete");
	if (!fb_until(fb_all_ended, FB_REAP)) {
		fprintf(stderr, "fuzz_bridge: not all reaped after KILL\n");
		abort();
	}
	if ((fd = open(FB_TMP, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    fsutil_rmtree(fd, "root") == -1 ||
	    fsutil_rmtree(fd, "workspace") == -1 ||
	    mkdirat(fd, "root", 0755) == -1 ||
	    mkdirat(fd, "workspace", 0755) == -1)
		fb_fail("empty the roots");
	close(fd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzzsrv_opts	 o;
	struct buf		 req = { 0 };
	const char		*p, *end, *sep;
	int			 k;

	if (n == 0)
		return 0;
	memset(&o, 0, sizeof(o));
	o.pieces = 1 + (d[0] & 3);
	o.halfclose = (d[0] & 4) != 0;
	o.spins = 64;
	o.free_s = FB_FREE;
	o.seed = d[0] >> 3;
	p = (const char *)d + 1;
	end = (const char *)d + n;
	for (k = 0; p < end && k < FB_MAXREQ; p = sep + 1, k++) {
		if ((sep = memchr(p, '\0', end - p)) == NULL)
			sep = end;
		if (!fb_frame(&req, p, sep - p))
			break;
	}
	if (req.len > 0)
		(void)fuzzsrv_exchange((const uint8_t *)req.data, req.len, &o);
	buf_free(&req);
	fb_reset();
	return 0;
}
