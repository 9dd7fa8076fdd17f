/*
 * shim.c: `tend shim`, the token-gated TCP front of the agent's socket.
 *
 * main reads like a script: parse, read the token, bind, drop to the
 * unprivileged user (keeping the group that may open the agent's
 * socket), no_new_privs, the seccomp allow-list, ev_run.  Exit codes: 0
 * after TERM or INT, 1 when it cannot start, 2 on a usage error.
 */
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>
#include <seccomp.h>

#include "agent.h"
#include "base/buf.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/opt.h"
#include "base/tunables.h"
#include "net/shim.h"
#include "sys/user.h"

/* The options, shim_opts's rows into it. */
static struct shim_opts {
	const char	*listen;
	const char	*socket;
	const char	*token_file;
	const char	*user;
	const char	*group;
	int		 no_auth;
	int		 debug_seccomp;
	int		 max_conns;
	int		 verbose;
	const char	*proxy_ports;
	const char	*proxy_host_suffix;
} opt;

/* The ports the proxy reaches (--proxy-ports). */
static struct shim_ports	proxy_ports;

static char	token[SHIM_TOKEN_MAX + 1];
static size_t	token_len;

/* Every syscall the shim makes once it serves: nothing else is allowed. */
static const int shim_syscalls[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(writev), SCMP_SYS(close),
	SCMP_SYS(accept4), SCMP_SYS(socket), SCMP_SYS(connect),
	SCMP_SYS(shutdown), SCMP_SYS(setsockopt), SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl), SCMP_SYS(brk),
	SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mremap), SCMP_SYS(madvise),
	SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn), SCMP_SYS(futex),
	SCMP_SYS(clock_gettime), SCMP_SYS(exit), SCMP_SYS(exit_group),
	SCMP_SYS(getpid), SCMP_SYS(pipe2), SCMP_SYS(splice),
	SCMP_SYS(restart_syscall),	/* a call resumed after a tracer's stop */
};

#define SHIM_OFF(f)	offsetof(struct shim_opts, f)
#define SHIM_HELP_WIDTH	23	/* of the options' left column */

/* The options, in the order of the help and of getopt's ambiguities. */
static const struct opt shim_opts[] = {
	{ "listen", 'l', "ADDR:PORT", OPT_STR, SHIM_OFF(listen), .help =
	    "numeric address to listen on (127.0.0.1:8686;\n"
	    "[::1]:8686 for IPv6)" },
	{ "socket", 'S', "PATH", OPT_STR, SHIM_OFF(socket), .help =
	    "the agent's socket (env TEND_SOCKET; /run/tend.sock)" },
	{ "token-file", 't', "FILE", OPT_STR, SHIM_OFF(token_file), .help =
	    "the token (else env TEND_TOKEN)" },
	{ "no-auth", 0, NULL, OPT_FLAG, SHIM_OFF(no_auth), .help =
	    "serve without a token" },
	{ "user", 'u', "USER", OPT_STR, SHIM_OFF(user), .help =
	    "run as USER: name, uid or uid:gid (nobody)" },
	{ "socket-group", 0, "G", OPT_STR, SHIM_OFF(group), .help =
	    "keep group G to reach the socket (default: the\n"
	    "socket's own group when it is group-writable)" },
	{ "proxy-ports", 0, "LIST", OPT_STR, SHIM_OFF(proxy_ports), .help =
	    "ports the proxy reaches: 3000,8000-9000, all or\n"
	    "none (all: every port but --listen's)" },
	{ "proxy-host-suffix", 0, "S", OPT_STR, SHIM_OFF(proxy_host_suffix),
	    .help = "preview hosts PORT.S too (PORT-x.any always)" },
	{ "max-conns", 0, "N", OPT_INT, SHIM_OFF(max_conns), 1, 100000,
	    .help = "client connections at most (512)" },
	{ "debug-seccomp", 0, NULL, OPT_FLAG, SHIM_OFF(debug_seccomp),
	    .help = "make a forbidden syscall once serving (dies)" },
	{ "verbose", 'v', NULL, OPT_FLAG, SHIM_OFF(verbose), .help =
	    "debug log lines" },
	{ "help", 'h', NULL, OPT_ACTION, .help = "this text" },
	OPT_END
};

static void
shim_usage(FILE *f)
{
	fprintf(f,
"usage: tend shim [options]\n"
"\n"
"Accept HTTP/1.1 on TCP, require Authorization: Bearer <token> (or\n"
"X-Access-Token: <token>) on every request (GET /health excepted), and\n"
"forward each request without it to the agent's unix socket, streaming\n"
"the reply back.  A WebSocket upgrade may carry the token in its query\n"
"instead (?authorization=Bearer%%20<token>), removed before forwarding.\n"
"\n"
"proxy: a request for /v1/ports/PORT/proxy/REST, or with a preview Host\n"
"(PORT-anything.DOMAIN, or PORT.SUFFIX with --proxy-host-suffix), goes\n"
"after the same check to 127.0.0.1:PORT (else [::1]:PORT) inside the\n"
"container, the shim connecting itself: /REST with X-Forwarded-Prefix,\n"
"or the path unchanged.  A browser sends the token once as\n"
"?tend_token=<token>: the answer is a 302 to the URL without it and a\n"
"cookie for that port.  502 port_closed when nothing listens, 403\n"
"port_forbidden outside --proxy-ports.\n"
"\n"
"limits: a connection's first request head must be whole within %g s;\n"
"until a request carried the token, a connection is unauthenticated,\n"
"and those give way to new ones: an address's oldest when it has %d,\n"
"else the oldest of all when they are 1/%d of --max-conns or the cap is\n"
"reached.  A client that sends its token at once always finds a slot\n"
"unless authenticated connections hold them all.\n"
"\n"
"options:\n", SHIM_FIRST_TIMEOUT, SHIM_PEER_PENDING, SHIM_PENDING_SHARE);
	opt_help(f, shim_opts, SHIM_HELP_WIDTH);
}

/*
 * The options, through shim_opts's rows; a usage error exits 2 (getopt
 * has said what it did not know), as does a bad value.  No arguments.
 */
static void
shim_options(int argc, char **argv)
{
	const struct opt	*o;
	struct opt_getopt	 g;
	struct buf		 msg = { 0 };
	int			 ch;

	opt.listen = "127.0.0.1:8686";
	opt.socket = getenv("TEND_SOCKET") ? getenv("TEND_SOCKET") :
	    "/run/tend.sock";
	opt.user = "nobody";
	opt.max_conns = SHIM_MAX_CONNS;
	opt_getopt(&g, (const struct opt *const []){ shim_opts }, 1, 0);
	while ((ch = getopt_long(argc, argv, g.so, g.lo, NULL)) != -1) {
		if ((o = opt_row(&g, ch)) == NULL) {
			shim_usage(stderr);
			exit(2);
		}
		if (o->kind == OPT_ACTION) {
			shim_usage(stdout);
			exit(0);
		}
		if (opt_set(o, &opt, optarg, &msg) != 0) {
			fprintf(stderr, "tend shim: %.*s\n",
			    (int)buf_avail(&msg), buf_head(&msg));
			exit(2);
		}
	}
	if (optind < argc) {
		shim_usage(stderr);
		exit(2);
	}
}

/* The token: a file's trailing newline (or CRLF) is not part of it. */
static void
shim_token(void)
{
	const char	*env;
	char		*s = NULL;
	size_t		 n;

	if (opt.no_auth)
		return;
	if (opt.token_file != NULL) {
		if ((s = fsutil_read(AT_FDCWD, opt.token_file, SHIM_TOKEN_MAX + 2,
		    &n)) == NULL)
			fatal("event=token_failed file=%s", opt.token_file);
	} else if ((env = getenv("TEND_TOKEN")) != NULL) {
		n = strlen(env);
		s = strdup(env);
	} else
		fatalx("event=no_token msg=\"give --token-file, TEND_TOKEN or "
		    "--no-auth\"");
	if (s == NULL)
		fatal("event=token_failed");
	if (n > 0 && s[n - 1] == '\n')
		n--;
	if (n > 0 && s[n - 1] == '\r')
		n--;
	if (n == 0 || n > SHIM_TOKEN_MAX)
		fatalx("event=bad_token msg=\"empty or longer than %d bytes\"",
		    SHIM_TOKEN_MAX);
	memcpy(token, s, n);
	token_len = n;
	free(s);
}

/*
 * Become the unprivileged user.  Its only supplementary group is the one
 * that opens the agent's socket (0660 root:G), when there is one.  Not
 * root: nothing to drop (a test, or a user's own shim).
 */
static void
shim_drop(void)
{
	struct stat	st;
	struct user_id	u;
	uid_t		uid;
	gid_t		gid, sgid;
	int		ngroups = 0;

	if (geteuid() != 0)
		return;
	if (user_parse(NULL, opt.user, &u) == -1)
		fatalx("event=bad_user user=%s", opt.user);
	uid = u.uid;
	gid = u.gid;
	if (opt.group != NULL) {
		if (user_group(NULL, opt.group, &sgid) == -1)
			fatalx("event=bad_group group=%s", opt.group);
		ngroups = 1;
	} else if (stat(opt.socket, &st) == 0 && (st.st_mode & 0060) ==
	    0060) {
		sgid = st.st_gid;
		ngroups = 1;
	}
	if (setgroups(ngroups, &sgid) == -1 || setresgid(gid, gid, gid) == -1 ||
	    setresuid(uid, uid, uid) == -1)
		fatal("event=drop_failed user=%s", opt.user);
	if (uid != 0 && setuid(0) == 0)
		fatalx("event=drop_failed msg=\"root came back\"");
}

static void
shim_seccomp(void)
{
	scmp_filter_ctx	ctx;
	size_t		i;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		fatal("event=no_new_privs_failed");
	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL)
		fatalx("event=seccomp_failed");
	for (i = 0; i < sizeof(shim_syscalls) / sizeof(shim_syscalls[0]); i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, shim_syscalls[i],
		    0) < 0)
			fatalx("event=seccomp_failed syscall=%d",
			    shim_syscalls[i]);
	/*
	 * mprotect never to make memory executable: musl's allocator (the
	 * static build's) makes its metadata pages writable with it once
	 * brk cannot grow.
	 */
	if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
	    SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)) < 0)
		fatalx("event=seccomp_failed syscall=mprotect");
	/* fcntl only to size the pipe the agent's bytes pass through. */
	if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
	    SCMP_A1(SCMP_CMP_EQ, F_SETPIPE_SZ)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(fcntl), 1,
	    SCMP_A1(SCMP_CMP_EQ, F_GETPIPE_SZ)) < 0)
		fatalx("event=seccomp_failed syscall=fcntl");
	if (seccomp_load(ctx) < 0)
		fatalx("event=seccomp_failed");
	seccomp_release(ctx);
}

static void
shim_signal_cb(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)w;
	(void)revents;
	ev_break(loop, EVBREAK_ALL);
}

int
shim_main(int argc, char **argv)
{
	struct sockaddr_storage	ss;
	struct shim_config	cfg;
	struct ev_loop		*loop;
	struct shim		*s;
	ev_signal		 sterm, sint;
	socklen_t		 sslen;
	int			 fd;

	shim_options(argc, argv);
	log_init("tend-shim", opt.verbose);
	signal(SIGPIPE, SIG_IGN);
	shim_token();
	if (shim_parse_addr(opt.listen, &ss, &sslen) == -1) {
		fprintf(stderr, "tend shim: --listen: not a numeric ADDR:PORT "
		    "'%s'\n", opt.listen);
		exit(2);
	}
	if (shim_ports_parse(&proxy_ports, opt.proxy_ports,
	    ntohs(ss.ss_family == AF_INET6 ?
	    ((struct sockaddr_in6 *)&ss)->sin6_port :
	    ((struct sockaddr_in *)&ss)->sin_port)) == -1) {
		fprintf(stderr, "tend shim: --proxy-ports: not none, all nor a "
		    "list of ports and ranges '%s'\n", opt.proxy_ports);
		exit(2);
	}
	if ((fd = shim_bind(&ss, sslen)) == -1)
		fatal("event=listen_failed listen=%s", opt.listen);

	if ((loop = ev_default_loop(EVFLAG_AUTO)) == NULL)
		fatalx("event=loop_failed");
	ev_signal_init(&sterm, shim_signal_cb, SIGTERM);
	ev_signal_start(loop, &sterm);
	ev_signal_init(&sint, shim_signal_cb, SIGINT);
	ev_signal_start(loop, &sint);
	memset(&cfg, 0, sizeof(cfg));
	cfg.socket = opt.socket;
	cfg.token = opt.no_auth ? NULL : token;
	cfg.token_len = token_len;
	cfg.maxconns = opt.max_conns;
	if (opt.proxy_ports == NULL || strcmp(opt.proxy_ports, "none") != 0)
		cfg.ports = &proxy_ports;
	cfg.host_suffix = opt.proxy_host_suffix;
	cfg.self_port = ntohs(ss.ss_family == AF_INET6 ?
	    ((struct sockaddr_in6 *)&ss)->sin6_port :
	    ((struct sockaddr_in *)&ss)->sin_port);
	if ((s = shim_new(loop, fd, &cfg)) == NULL)
		fatal("event=shim_failed");

	shim_drop();
	log_info("event=ready pid=%d listen=%s socket=%s uid=%d auth=%s "
	    "proxy=%s", (int)getpid(), opt.listen, opt.socket, (int)getuid(),
	    opt.no_auth ? "none" : "bearer", opt.proxy_ports != NULL ?
	    opt.proxy_ports : "all");
	shim_seccomp();
	if (opt.debug_seccomp)
		(void)syscall(SYS_getppid);	/* not on the list: SIGSYS */
	ev_run(loop, 0);
	shim_free(s);
	log_info("event=exit");
	return 0;
}
