/*
 * agent_opts.c: `tend agent`'s options — the table its help and getopt
 * read, the defaults (and the environment's), the checks of each value,
 * and of the supervised shim's options together.
 */
#include <sys/socket.h>

#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_int.h"
#include "api/api.h"
#include "api/envd/envd.h"
#include "base/buf.h"
#include "base/codec.h"
#include "base/opt.h"
#include "base/tunables.h"
#include "net/shim.h"
#include "sys/user.h"

struct agent_opts	opt;

static void	agent_usage(FILE *);
static void	agent_defaults(void);
static void	agent_shim_options(void);
static opt_set_fn agent_opt_workspace;
static opt_set_fn agent_opt_default_user;
static opt_set_fn agent_opt_envd_user;
static opt_set_fn agent_opt_default_limits;

/* What agent_options does with an action row. */
enum { AGENT_HELP = 1, AGENT_LIST_ROUTES };

#define AGENT_OFF(f)	offsetof(struct agent_opts, f)
#define AGENT_HELP_WIDTH 23	/* of the options' left column */

/* The options, in the order of the help and of getopt's ambiguities. */
static const struct opt agent_opts[] = {
	{ "socket", 'S', "PATH", OPT_STR, AGENT_OFF(socket), .help =
	    "unix socket (env TEND_SOCKET; /run/tend.sock)" },
	{ "state-dir", 'd', "DIR", OPT_STR, AGENT_OFF(statedir), .help =
	    "state directory (env TEND_STATE_DIR; /var/lib/tend)" },
	{ "grace", 'g', "SECONDS", OPT_SECONDS, AGENT_OFF(grace), 0, 0,
	    .help = "shutdown grace before KILL (8)" },
	{ "keep-boots", 0, "N", OPT_INT, AGENT_OFF(keep_boots), 1, 1000,
	    .help = "boots kept in the state dir, this one included (3)" },
	{ "keep-exited", 0, "N", OPT_INT, AGENT_OFF(keep_exited), 0, 1000000,
	    .help = "ended records kept per boot (1000)" },
	{ "max-procs", 0, "N", OPT_INT, AGENT_OFF(max_procs), 1, 1000000,
	    .help = "live processes at most (4096)" },
	{ "max-conns", 0, "N", OPT_INT, AGENT_OFF(max_conns), 1, 100000,
	    .help = "client connections at most (512)" },
	{ "stuck-timeout", 0, "S", OPT_SECONDS, AGENT_OFF(stuck), 1, 0,
	    .help = "drop a client whose reply has not moved for S s (60)" },
	{ "head-timeout", 0, "S", OPT_SECONDS, AGENT_OFF(head), 1, 0,
	    .help = "drop a client whose request head takes over S s (10)" },
	{ "max-log-bytes", 0, "N", OPT_INT64, AGENT_OFF(max_log), 4096,
	    1LL << 50, .help = "default bytes kept per output stream (64 MiB)" },
	{ "max-event-bytes", 0, "N", OPT_INT64, AGENT_OFF(max_events), 4096,
	    1LL << 40, .help = "lifecycle event bytes kept per boot (16 MiB)" },
	{ "files-root", 0, "DIR", OPT_STR, AGENT_OFF(files_root), .help =
	    "the file routes' root: nothing outside it (/)" },
	{ "workspace", 0, "DIR", OPT_FUNC, .set = agent_opt_workspace,
	    .help = "the bridge's workspace (/workspace)" },
	{ "socket-group", 0, "G", OPT_STR, AGENT_OFF(socket_group), .help =
	    "make the socket 0660 with group G (else 0600)" },
	{ "shim-listen", 0, "A:P", OPT_STR, AGENT_OFF(shim_listen), .help =
	    "run and supervise `tend shim` on ADDR:PORT" },
	{ "shim-token-file", 0, "F", OPT_STR, AGENT_OFF(shim_token_file),
	    .help = "its token (required with --shim-listen)" },
	{ "shim-user", 0, "U", OPT_STR, AGENT_OFF(shim_user), .help =
	    "its user (nobody); without --socket-group the\n"
	    "socket takes U's group" },
	{ "proxy-ports", 0, "LIST", OPT_STR, AGENT_OFF(proxy_ports), .help =
	    "its proxy's ports: 3000,8000-9000, all, none (all)" },
	{ "proxy-host-suffix", 0, "S", OPT_STR, AGENT_OFF(proxy_host_suffix),
	    .help = "its proxy's preview hosts PORT.S too" },
	{ "default-user", 0, "USER", OPT_FUNC, .set = agent_opt_default_user,
	    .help = "processes run as USER (name, uid or uid:gid)\n"
	    "when a request names none (root)" },
	{ "envd-user", 0, "USER", OPT_FUNC, .set = agent_opt_envd_user,
	    .help = "the envd API's default user (root)" },
	{ "cgroup-root", 0, "PATH", OPT_STR, AGENT_OFF(cgroup_root), .help =
	    "the cgroup v2 directory for records (the agent's own)" },
	{ "no-cgroups", 0, NULL, OPT_FLAG, AGENT_OFF(no_cgroups), .help =
	    "no cgroup per process: group and session only" },
	{ "default-limits", 0, "L", OPT_FUNC, .set = agent_opt_default_limits,
	    .help = "limits of every child that asks none, as\n"
	    "memory=256M,memoryHigh=200M,pids=100,cpu=0.5" },
	{ "verbose", 'v', NULL, OPT_FLAG, AGENT_OFF(verbose), .help =
	    "debug log lines" },
	{ "help", 'h', NULL, OPT_ACTION, .val = AGENT_HELP, .help =
	    "this text" },
	/*
	 * Hidden: every route, for the test that the OpenAPI document
	 * lists them all.
	 */
	{ "list-routes", 0, NULL, OPT_ACTION, .val = AGENT_LIST_ROUTES },
	OPT_END
};

static void
agent_usage(FILE *f)
{
	fprintf(f,
"usage: tend agent [options] [-- command [args...]]\n"
"\n"
"Run the tend supervisor: reap every child, keep the process table, serve\n"
"the bridge protocol on a unix socket.  With a command after --, run it as\n"
"the main child, forward signals to it, and exit with its status.\n"
"\n"
"options:\n");
	opt_help(f, agent_opts, AGENT_HELP_WIDTH);
}

static void
agent_defaults(void)
{
	opt.socket = getenv("TEND_SOCKET") ? getenv("TEND_SOCKET") :
	    "/run/tend.sock";
	opt.statedir = getenv("TEND_STATE_DIR") ? getenv("TEND_STATE_DIR") :
	    "/var/lib/tend";
	opt.grace = AGENT_GRACE;
	opt.keep_boots = BOOT_KEEP;
	opt.keep_exited = PROC_KEEP_EXITED;
	opt.max_procs = PROC_MAX_LIVE;
	opt.max_conns = HTTP_MAX_CONNS;
	opt.stuck = HTTP_STUCK_TIMEOUT;
	opt.head = HTTP_HEAD_TIMEOUT;
	opt.max_log = LOG_MAX_BYTES;
	opt.max_events = EVENTS_MAX_BYTES;
	opt.files_root = "/";
	opt.workspace = "/workspace";
}

/* --workspace: an absolute path. */
static int
agent_opt_workspace(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	if (arg[0] != '/') {
		(void)buf_printf(err, "--%s: must be an absolute path", o->name);
		return -1;
	}
	((struct agent_opts *)base)->workspace = arg;
	return 0;
}

static int
agent_opt_default_user(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	struct user_id	u;

	if (user_parse(NULL, arg, &u) == -1) {
		(void)buf_printf(err, "--%s: '%s': %s", o->name, arg,
		    errno == ENOENT ? "no such user" : strerror(errno));
		return -1;
	}
	((struct agent_opts *)base)->default_user = arg;
	return 0;
}

/* As a request's user is: root needs no passwd entry. */
static int
agent_opt_envd_user(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	struct envd_user	eu;
	struct envd_err		ee;

	if (envd_user_lookup(arg, &eu, &ee) == -1) {
		(void)buf_printf(err, "--%s: '%s': %s", o->name, arg,
		    errno == ENOENT ? "no such user" :
		    "must be a user name or uid");
		return -1;
	}
	((struct agent_opts *)base)->envd_user = arg;
	return 0;
}

/* --default-limits: "name=value" pairs, comma-separated; sizes with K M G. */
static int
agent_opt_default_limits(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	struct cgroup_limits	*l = &((struct agent_opts *)base)->default_limits;
	char			 spec[256], *p, *v, *end, *save = NULL;
	int64_t			 n;

	if ((size_t)snprintf(spec, sizeof(spec), "%s", arg) >= sizeof(spec))
		goto bad;
	for (p = strtok_r(spec, ",", &save); p != NULL;
	    p = strtok_r(NULL, ",", &save)) {
		if ((v = strchr(p, '=')) == NULL)
			goto bad;
		*v++ = '\0';
		if (strcmp(p, "cpu") == 0) {
			l->cpu = strtod(v, &end);
			if (end == v || *end != '\0' ||
			    !(l->cpu >= API_CPUS_MIN) || l->cpu > API_CPUS_MAX)
				goto bad;
		} else if (strcmp(p, "pids") == 0) {
			l->pids = strtoll(v, &end, 10);
			if (end == v || *end != '\0' || l->pids < 1)
				goto bad;
		} else if (strcmp(p, "memory") == 0 ||
		    strcmp(p, "memoryHigh") == 0) {
			if (codec_parse_size(v, &n) == -1)
				goto bad;
			if (strcmp(p, "memory") == 0)
				l->memory = n;
			else
				l->memory_high = n;
		} else
			goto bad;
	}
	return 0;
bad:
	(void)buf_printf(err, "--%s: '%s': must be name=value pairs of "
	    "memory, memoryHigh, pids and cpu (e.g. memory=256M,cpu=0.5)",
	    o->name, arg);
	return -1;
}

/*
 * The options, through agent_opts's rows; a usage error exits 2 (getopt
 * has said what it did not know), as does a bad value.
 */
void
agent_options(int argc, char **argv)
{
	const struct opt	*o;
	struct opt_getopt	 g;
	struct buf		 msg = { 0 };
	int			 ch;

	agent_defaults();
	/* Ordered: stop at the first non-option, the wrapped command. */
	opt_getopt(&g, (const struct opt *const []){ agent_opts }, 1,
	    OPT_ORDERED);
	while ((ch = getopt_long(argc, argv, g.so, g.lo, NULL)) != -1) {
		if ((o = opt_row(&g, ch)) == NULL) {
			agent_usage(stderr);
			exit(2);
		}
		if (o->kind == OPT_ACTION) {
			if (o->val == AGENT_HELP)
				agent_usage(stdout);
			else
				agent_list_routes();
			exit(0);
		}
		if (opt_set(o, &opt, optarg, &msg) != 0) {
			fprintf(stderr, "tend agent: %.*s\n",
			    (int)buf_avail(&msg), buf_head(&msg));
			exit(2);
		}
	}
	if (optind < argc)
		opt.wrapped = argv + optind;
	agent_shim_options();
}

/* The supervised shim's options make sense together, or not at all. */
static void
agent_shim_options(void)
{
	static struct shim_ports ports;
	struct sockaddr_storage	ss;
	socklen_t		len;

	if (opt.shim_user == NULL)
		opt.shim_user = "nobody";
	if (opt.shim_listen == NULL)
		return;
	if (shim_parse_addr(opt.shim_listen, &ss, &len) == -1) {
		fprintf(stderr, "tend agent: --shim-listen: not a numeric "
		    "ADDR:PORT '%s'\n", opt.shim_listen);
		exit(2);
	}
	if (opt.proxy_ports != NULL &&
	    shim_ports_parse(&ports, opt.proxy_ports, 0) == -1) {
		fprintf(stderr, "tend agent: --proxy-ports: not none, all nor a "
		    "list of ports and ranges '%s'\n", opt.proxy_ports);
		exit(2);
	}
	if (opt.shim_token_file == NULL ||
	    access(opt.shim_token_file, R_OK) == -1) {
		fprintf(stderr, "tend agent: --shim-listen needs a readable "
		    "--shim-token-file\n");
		exit(2);
	}
}
