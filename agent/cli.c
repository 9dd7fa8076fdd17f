/*
 * cli.c: tend's command line, what an operator types through
 * `docker exec box tend ps`.
 *
 * Each subcommand is a row of cli_cmds: name, synopsis, option table and
 * handler.  The getopt_long arguments and the help text are both made
 * from the option tables, so they cannot disagree.  A handler makes one
 * or a few blocking HTTP/1.1 calls to the agent's unix socket through
 * hclient and returns the exit code:
 *
 *	0	ok
 *	1	the agent refused the request (an error reply)
 *	2	usage error
 *	3	cannot reach the agent, or the connection broke
 *	4	no such process
 *	5	the ID is already taken (start/run --id)
 *	6	the process ended before it was ready (start --ready-*)
 *	124	wait --timeout or --ready-timeout ran out
 *	run and wait: the process's exit code (128+N if killed by signal N)
 *
 * With --json a command prints the route's JSON reply as it came, and an
 * error reply's JSON object on stderr: a program driving tend one exec per
 * step (docker exec, Cloudflare's container.exec) parses both.
 */
#include <sys/random.h>
#include <sys/signalfd.h>

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "buf.h"
#include "fsutil.h"
#include "codec.h"
#include "cursor.h"
#include "hclient.h"
#include "tunables.h"

#include "cli.h"

enum {
	CLI_OK = 0,
	CLI_REFUSED = 1,	/* the agent replied with an error */
	CLI_USAGE = 2,
	CLI_UNREACHABLE = 3,	/* no agent, or the connection broke */
	CLI_NOSUCH = 4,		/* 404 for a process it names */
	CLI_TAKEN = 5,		/* id_taken: someone else claimed the ID */
	CLI_NOTREADY = 6,	/* start --ready-*: it ended first */
	CLI_TIMEDOUT = 124,	/* wait/ready timeout ran out, as timeout(1) */
};

#define CLI_SOCKET		"/run/tend.sock"
#define CLI_WAIT_PIECE		60000		/* ms asked of one wait call */
#define CLI_ERRBODY_MAX		(64 * 1024)	/* kept of an error reply */
#define CLI_SSE_LINE_MAX	(16 * 1024 * 1024)
#define CLI_MAX_OPTS		24
#define CLI_READY_POLL		20		/* ms between readiness checks */
#define CLI_READY_TIMEOUT	60000		/* ms, default --ready-timeout */
#define CLI_READY_LINE_MAX	(64 * 1024)	/* of a line matched whole */
#define CLI_NETLINE_MAX		512		/* of a /proc/net/tcp line */
#define CLI_MAX_PENDING		16		/* signals before the reply */
/* run --stdin travels as base64 (4/3) in a JSON body of HTTP_MAX_BODY. */
#define CLI_RUN_STDIN_MAX	(720 * 1024)

_Static_assert(CLI_RUN_STDIN_MAX / 3 * 4 + 64 * 1024 <= HTTP_MAX_BODY,
    "run --stdin must leave room in the body for argv and env");

/* What getopt_long returns for each option, whatever its letter. */
enum cli_optcode {
	OPT_SOCKET = 256,
	OPT_HELP,
	OPT_ALL,
	OPT_JSON,
	OPT_BOOT,
	OPT_ID,
	OPT_CWD,
	OPT_ENV,
	OPT_USER,
	OPT_TIMEOUT,
	OPT_STDIN,
	OPT_FOLLOW,
	OPT_STDOUT,
	OPT_STDERR,
	OPT_SINCE,
	OPT_SIGNAL,
	OPT_CLOSE,
	OPT_FORCE,
	OPT_TERMINALS,
	OPT_LIMIT_BYTES,
	OPT_READY_PORT,
	OPT_READY_LOG,
	OPT_READY_TIMEOUT,
};

struct cli_opt {
	const char	*name;		/* long name */
	int		 letter;	/* short letter, or 0 */
	const char	*arg;		/* argument's name, NULL for a flag */
	int		 code;		/* enum cli_optcode */
	const char	*help;
};

#define STREAM_OUT	0x1
#define STREAM_ERR	0x2

/* Everything the command line said. */
struct cli {
	const struct cli_cmd	*cmd;
	const char		*sock;
	const char		*boot;		/* --boot: Tend-Boot header */
	const char		*id;		/* --id */
	const char		*cwd;
	const char		*user;
	const char		*since;
	int			 signo;		/* kill -s */
	cJSON			*env;		/* -e K=V, an object */
	int64_t			 timeout_ms;	/* -1: none */
	int			 all;
	int			 json;
	int			 follow;
	int			 with_stdin;	/* --stdin */
	int			 close;
	int			 force;
	int			 streams;	/* STREAM_*, 0: both */
	int			 terminals;	/* ps --terminals */
	int64_t			 limit_bytes;	/* logs --limit-bytes; -1: none */
	int			 ready_port;	/* start --ready-port; 0: none */
	int			 ready_log;	/* ready_re holds --ready-log */
	regex_t			 ready_re;
	int64_t			 ready_ms;	/* --ready-timeout; -1: unset */
	char			**args;		/* positional arguments */
	int			 nargs;
};

#define CMD_ORDERED	0x1	/* options end at the first argument (argv) */
#define CMD_LAUNCH	0x2	/* takes the launch options */
#define CMD_PROCEXIT	0x4	/* exits with the process's exit code */

struct cli_cmd {
	const char		*name;
	int			(*run)(struct cli *);
	const struct cli_opt	*opts;
	const char		*synopsis;	/* after "tend NAME" */
	int			 minargs;
	int			 maxargs;	/* -1: any number */
	int			 flags;
	const char		*summary;	/* one line, for tend --help */
	const char		*help;		/* a paragraph */
};

/* One HTTP call to the agent and its reply. */
struct cli_http {
	const char	*method;
	struct buf	 target;	/* path and query, percent-encoded */
	const char	*accept;
	const char	*boot;		/* Tend-Boot, or NULL */
	cJSON		*json;		/* request body, or NULL */
	int		 bodyfd;	/* -1, or a chunked body from this fd */
	int		 quiet;		/* the caller reports error replies */
	int		 named;		/* the target names a process: 404 is 4 */
	int		 wakefd;	/* -1, or polled: wake(arg) */
	int		(*wake)(void *);
	int		(*head)(void *, struct cli_http *);
	/* A 2xx body goes to stream if set, else into reply. */
	int		(*stream)(void *, const char *, size_t);
	void		*arg;
	int		 failcode;	/* exit code when stream stopped */
	int		 status;
	char		 ctype[64];	/* the reply's Content-Type */
	struct buf	 reply;
};

/* A Server-Sent Events stream of a process's output. */
struct cli_sse {
	struct buf	 line;		/* a line in pieces */
	struct buf	 data;		/* the event's data field */
	char		 cursor[160];	/* last "id:" seen */
	int		 streams;	/* STREAM_* to print */
	int		 ended;		/* the terminal event came */
	int		 code;		/* its exit code; -1: error state */
};

struct cli_sse_type {
	const char	*type;
	int		(*fn)(struct cli_sse *, cJSON *);
};

/* tend run: the stream and the signals to forward. */
struct cli_run {
	struct cli	*c;
	const char	*id;
	struct cli_sse	 sse;
	int		 sse_mode;	/* reply is SSE, not exec's JSON */
	int		 started;	/* 200 came: the process exists */
	int		 pending[CLI_MAX_PENDING];
	int		 npending;
	int		 sigfd;
};

static void	cli_warnx(const char *, ...)
		    __attribute__((format(printf, 1, 2)));
static void	cli_usage_error(const struct cli_cmd *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static const struct cli_cmd *cli_find(const char *);
static int	cli_nopts(const struct cli_opt *);
static void	cli_print_opts(FILE *, const struct cli_opt *);
static void	cli_main_help(FILE *);
static void	cli_cmd_help(FILE *, const struct cli_cmd *);
static int	cli_global(struct cli *, int, char **, int *);
static int	cli_parse(struct cli *, int, char **);
static int	cli_letter(const struct cli_opt *const [2], int);
static int	cli_setopt(struct cli *, int, const char *);
static int	cli_setregex(struct cli *, const char *);
static int	cli_check(struct cli *);
static int64_t	cli_count(const char *);
static int	cli_seconds(const char *, int64_t *);
static int	cli_signal(const char *);
static int	cli_env(struct cli *, const char *);

static void	cli_http_init(struct cli_http *, const char *);
static void	cli_http_free(struct cli_http *);
static int	cli_escape(struct buf *, const char *);
static int	cli_proc_target(struct cli_http *, const char *, const char *);
static int	cli_query(struct cli_http *, const char *, const char *);
static const char *cli_connect_hint(int);
static int	cli_on_header(void *, const char *, const char *);
static int	cli_on_head(void *, int);
static int	cli_on_body(void *, const char *, size_t);
static int	cli_on_wake(void *);
static int	cli_call(struct cli *, struct cli_http *);
static int	cli_refusal(const struct cli_http *);
static void	cli_print_error(const struct cli *, const struct cli_http *);
static void	cli_report(const struct cli *, const char *, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static cJSON	*cli_reply_json(const struct cli_http *);

static int	cli_sse_feed(void *, const char *, size_t);
static int	cli_sse_line(struct cli_sse *, char *, size_t);
static int	cli_sse_event(struct cli_sse *);
static int	cli_ev_output(struct cli_sse *, cJSON *);
static int	cli_ev_truncated(struct cli_sse *, cJSON *);
static int	cli_ev_terminal(struct cli_sse *, cJSON *);
static void	cli_sse_free(struct cli_sse *);

static int	cli_write_b64(int, const char *);
static void	cli_print_raw(FILE *, const char *, size_t);
static void	cli_print_json(const char *, size_t);
static void	cli_duration(char *, size_t, int64_t);
static int64_t	cli_parse_time(const char *);
static int	cli_command(struct buf *, const cJSON *);
static const char *cli_str(const cJSON *, const char *);
static int	cli_int(const cJSON *, const char *, int);
static int	cli_exit_code(const cJSON *, const char *);

static cJSON	*cli_launch_body(struct cli *, const char *);
static int	cli_listening(int);
static int	cli_ready_lines(struct cli *, struct buf *, const char *,
		    size_t);
static int	cli_ready_log(struct cli *, const char *, char *, size_t,
		    struct buf [2], int64_t);
static int	cli_ready(struct cli *, const char *, struct cli_http *);
static int	cli_run_stdin(cJSON *);
static int	cli_run_forward(struct cli_run *, int);
static int	cli_run_wake(void *);
static int	cli_run_head(void *, struct cli_http *);
static int	cli_run_body(void *, const char *, size_t);
static int	cli_run_json(struct cli_http *);
static int	cli_wait_once(struct cli *, const char *, int64_t,
		    struct cli_http *, cJSON **, int *);
static int	cli_poll_once(struct cli *, const char *, const char *,
		    int64_t, struct cli_http *);

static int	cli_health(struct cli *);
static int	cli_terminals(struct cli *, struct cli_http *);
static int	cli_ps(struct cli *);
static int	cli_start(struct cli *);
static int	cli_run(struct cli *);
static int	cli_logs(struct cli *);
static int	cli_status(struct cli *);
static int	cli_wait(struct cli *);
static int	cli_kill(struct cli *);
static int	cli_send(struct cli *);
static int	cli_rm(struct cli *);
static int	cli_help(struct cli *);
static void	cli_free(struct cli *);

/* ---------------------------------------------------------------------
 * The grammar.
 */

/* Every command takes these. */
static const struct cli_opt cli_opts_common[] = {
	{ "socket", 'S', "PATH", OPT_SOCKET,
	    "the agent's socket (env TEND_SOCKET,\ndefault " CLI_SOCKET ")" },
	{ "help", 'h', NULL, OPT_HELP, "show this help" },
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_none[] = {
	{ NULL, 0, NULL, 0, NULL }
};

/* --json: the route's reply on stdout, an error's JSON on stderr. */
#define CLI_JSON_OPT(what)	{ "json", 0, NULL, OPT_JSON, what }

static const struct cli_opt cli_opts_health[] = {
	CLI_JSON_OPT("print the agent's JSON reply"),
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_ps[] = {
	{ "all", 'a', NULL, OPT_ALL, "also list processes that have ended" },
	CLI_JSON_OPT("print the JSON array of statuses"),
	{ "boot", 0, "BOOT", OPT_BOOT, "list an earlier boot's processes" },
	{ "terminals", 0, NULL, OPT_TERMINALS,
	    "list terminals (GET /v1/terminals; this agent\n"
	    "has none yet: the agent's 404, exit 1)" },
	{ NULL, 0, NULL, 0, NULL }
};

#define CLI_LAUNCH_OPTS							\
	{ "id", 0, "ID", OPT_ID,					\
	    "the process's ID, unique in this boot\n"			\
	    "([A-Za-z0-9][A-Za-z0-9._-]*, at most 128)" },		\
	{ "cwd", 0, "DIR", OPT_CWD, "working directory" },		\
	{ "env", 'e', "K=V", OPT_ENV,					\
	    "add K=V to the environment (repeatable);\n"		\
	    "a plain K passes on tend's own value" },			\
	{ "user", 0, "USER", OPT_USER, "run as this user name or uid" },\
	{ "timeout", 0, "SECONDS", OPT_TIMEOUT,				\
	    "TERM the process group after this long,\nthen KILL" }

static const struct cli_opt cli_opts_start[] = {
	CLI_LAUNCH_OPTS,
	{ "stdin", 0, NULL, OPT_STDIN,
	    "give the process a stdin pipe, fed by `tend send`" },
	CLI_JSON_OPT("print the ProcessStatus, not the ID"),
	{ "ready-port", 0, "PORT", OPT_READY_PORT,
	    "return once something listens on TCP PORT" },
	{ "ready-log", 0, "REGEX", OPT_READY_LOG,
	    "return once a line of its stdout or stderr\n"
	    "matches REGEX (POSIX extended)" },
	{ "ready-timeout", 0, "S", OPT_READY_TIMEOUT,
	    "give up waiting for ready after this long:\n"
	    "exit 124, the process keeps running (60)" },
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_run[] = {
	CLI_LAUNCH_OPTS,
	{ "stdin", 0, NULL, OPT_STDIN,
	    "pass tend's stdin, read to its end, to the\n"
	    "process (at most 720 KiB: for more, use\n"
	    "start --stdin and send)" },
	CLI_JSON_OPT("print exec's JSON reply (output in base64)\n"
	    "and exit 0; the exit code is in it"),
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_logs[] = {
	{ "follow", 'f', NULL, OPT_FOLLOW,
	    "keep printing new output until the process ends" },
	{ "stdout", 0, NULL, OPT_STDOUT, "print only the process's stdout" },
	{ "stderr", 0, NULL, OPT_STDERR, "print only the process's stderr" },
	{ "since", 0, "CURSOR", OPT_SINCE,
	    "start after this cursor (an SSE event id)" },
	{ "boot", 0, "BOOT", OPT_BOOT, "read a process of an earlier boot" },
	CLI_JSON_OPT("print one JSON poll instead: what is stored\n"
	    "after --since (base64) and the next cursor"),
	{ "limit-bytes", 0, "N", OPT_LIMIT_BYTES,
	    "with --json: about N bytes at most (1 MiB)" },
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_status[] = {
	{ "boot", 0, "BOOT", OPT_BOOT, "read a process of an earlier boot" },
	CLI_JSON_OPT("print the agent's reply as it came"),
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_wait[] = {
	{ "timeout", 0, "SECONDS", OPT_TIMEOUT,
	    "give up after this long: exit 124, the\n"
	    "process keeps running" },
	CLI_JSON_OPT("print the final status (the running one on\n"
	    "timeout) and exit 0 (124 on timeout)"),
	{ NULL, 0, NULL, 0, NULL }
};

/* kill, send, rm: nothing to print; --json makes errors JSON. */
#define CLI_JSON_QUIET	CLI_JSON_OPT("print errors as the agent's JSON object")

static const struct cli_opt cli_opts_kill[] = {
	{ "signal", 's', "SIGNAL", OPT_SIGNAL,
	    "a number or name: TERM (default), SIGKILL, 9, ..." },
	CLI_JSON_QUIET,
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_send[] = {
	{ "close", 0, NULL, OPT_CLOSE, "close the process's stdin afterwards" },
	CLI_JSON_QUIET,
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_rm[] = {
	{ "force", 'f', NULL, OPT_FORCE, "kill the process first if it runs" },
	CLI_JSON_QUIET,
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_cmd cli_cmds[] = {
	{ "health", cli_health, cli_opts_health, "[--json]", 0, 0, 0,
	    "show the agent's boot ID, version, uptime and counts",
	    "Show the agent's boot ID, version, uptime and process counts." },
	{ "ps", cli_ps, cli_opts_ps,
	    "[-a] [--json] [--boot BOOT] [--terminals]", 0, 0, 0,
	    "list this boot's processes",
	    "List this boot's running processes (all of them with -a): ID,\n"
	    "PID, STATE, EXIT (code, signal or error), AGE (since start) and\n"
	    "COMMAND." },
	{ "start", cli_start, cli_opts_start, "[OPTIONS] -- ARGV...", 1, -1,
	    CMD_ORDERED | CMD_LAUNCH,
	    "start a process in the background and print its ID",
	    "Start ARGV (looked up in PATH) in its own session and process\n"
	    "group and print its ID.  The agent stores its output: see\n"
	    "`tend logs`.  With --ready-port or --ready-log, return only\n"
	    "once the process is ready (both, if both are given): exit 6\n"
	    "if it ends first, 124 if --ready-timeout runs out." },
	{ "run", cli_run, cli_opts_run, "[OPTIONS] -- ARGV...", 1, -1,
	    CMD_ORDERED | CMD_LAUNCH | CMD_PROCEXIT,
	    "run a process, stream its output, exit with its code",
	    "Run ARGV and stream its output as it comes: its stdout to\n"
	    "stdout, its stderr to stderr.  SIGINT (Ctrl-C), SIGTERM and\n"
	    "SIGHUP are passed on to the process's group; SIGQUIT (Ctrl-\\)\n"
	    "leaves tend and lets the process run.  Without --id the ID is\n"
	    "run-<pid>-<random hex>; the output stays readable with\n"
	    "`tend logs`." },
	{ "logs", cli_logs, cli_opts_logs,
	    "[-f] [--stdout|--stderr] [--since CURSOR] [--boot BOOT] ID\n"
	    "       tend logs --json [--since CURSOR] [--limit-bytes N] "
	    "[--boot BOOT] ID", 1, 1,
	    0, "print a process's stored output",
	    "Print the output stored for process ID, raw: its stdout to\n"
	    "stdout, its stderr to stderr.  A gap where the agent dropped\n"
	    "old output is reported on stderr.  With --json, print one\n"
	    "poll: {\"stdout\",\"stderr\" (base64), \"cursor\", \"ended\"};\n"
	    "pass its cursor to the next call's --since until ended." },
	{ "status", cli_status, cli_opts_status, "[--json] [--boot BOOT] ID",
	    1, 1, 0,
	    "print a process's status as JSON",
	    "Print the status of process ID as JSON." },
	{ "wait", cli_wait, cli_opts_wait, "[--json] [--timeout SECONDS] ID",
	    1, 1, CMD_PROCEXIT,
	    "wait for a process to end, exit with its code",
	    "Wait until process ID has ended (its whole process group) and\n"
	    "exit with its exit code.  A process in the error state (lost)\n"
	    "exits 1 with its message." },
	{ "kill", cli_kill, cli_opts_kill, "[-s SIGNAL] ID", 1, 1, 0,
	    "send a signal to a process's group",
	    "Send SIGNAL (default TERM) to the process group of ID." },
	{ "send", cli_send, cli_opts_send, "[--close] ID", 1, 1, 0,
	    "write tend's stdin to a process's stdin",
	    "Copy tend's stdin to the stdin of process ID (started with\n"
	    "--stdin) as it arrives, until end of file." },
	{ "rm", cli_rm, cli_opts_rm, "[-f] ID", 1, 1, 0,
	    "remove a process's record and stored output",
	    "Remove the record and stored output of an ended process ID." },
	{ "help", cli_help, cli_opts_none, "[COMMAND]", 0, 1, 0,
	    "show the help of tend or of a command",
	    "Show the help of tend, or of COMMAND." },
};

#define CLI_NCMDS	(sizeof(cli_cmds) / sizeof(cli_cmds[0]))

/* The exit codes, for tend help and every command's help. */
static const char cli_exits[] =
    "Exit codes:\n"
    "  0    ok\n"
    "  1    the agent refused the request (its error on stderr; JSON\n"
    "       with --json)\n"
    "  2    usage error\n"
    "  3    cannot reach the agent, or the connection broke\n"
    "  4    no such process\n"
    "  5    the ID is already taken (start/run --id)\n"
    "  6    the process ended before it was ready (start --ready-*)\n"
    "  124  wait --timeout or start --ready-timeout ran out (the process\n"
    "       keeps running)\n"
    "run and wait without --json exit with the process's exit code\n"
    "(128+N if killed by signal N, 1 if lost); with --json they exit 0\n"
    "once the reply is printed (the code is in it).\n";

/* ---------------------------------------------------------------------
 * Command line parsing and help.
 */

static void
cli_warnx(const char *fmt, ...)
{
	va_list	ap;

	fflush(stdout);
	fputs("tend: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* What went wrong, then the synopsis: exit code 2 follows. */
static void
cli_usage_error(const struct cli_cmd *cmd, const char *fmt, ...)
{
	va_list	ap;

	fprintf(stderr, "tend%s%s: ", cmd ? " " : "", cmd ? cmd->name : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (cmd != NULL) {
		fprintf(stderr, "usage: tend %s %s\n", cmd->name,
		    cmd->synopsis);
		fprintf(stderr, "Try 'tend %s --help'.\n", cmd->name);
	} else {
		fprintf(stderr, "usage: tend [-S PATH] COMMAND [OPTIONS] "
		    "[ARGS]\nTry 'tend --help'.\n");
	}
}

static const struct cli_cmd *
cli_find(const char *name)
{
	size_t	i;

	for (i = 0; i < CLI_NCMDS; i++)
		if (strcmp(cli_cmds[i].name, name) == 0)
			return &cli_cmds[i];
	return NULL;
}

static int
cli_nopts(const struct cli_opt *o)
{
	int	n = 0;

	while (o[n].name != NULL)
		n++;
	return n;
}

/* "  -e, --env K=V  help", help lines after the first indented alike. */
static void
cli_print_opts(FILE *f, const struct cli_opt *o)
{
	const char	*h;
	char		 left[40];

	for (; o->name != NULL; o++) {
		if (o->letter)
			snprintf(left, sizeof(left), "-%c, --%s%s%s",
			    o->letter, o->name, o->arg ? " " : "",
			    o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name,
			    o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "  %-22s ", left);
		for (h = o->help; *h != '\0'; h++)
			if (*h == '\n')
				fprintf(f, "\n%25s", "");
			else
				fputc(*h, f);
		fputc('\n', f);
	}
}

static void
cli_main_help(FILE *f)
{
	size_t	i;

	fprintf(f, "usage: tend [-S PATH] COMMAND [OPTIONS] [ARGS]\n"
	    "       tend agent [OPTIONS] [-- CMD ARGS...]\n\n"
	    "tend is the sandbox's supervisor.  These commands talk to its "
	    "agent\nover the unix socket.\n\nCommands:\n");
	for (i = 0; i < CLI_NCMDS; i++)
		fprintf(f, "  %-8s %s\n", cli_cmds[i].name,
		    cli_cmds[i].summary);
	fprintf(f, "  %-8s %s\n", "agent",
	    "run the supervisor (see `tend agent --help`)");
	fprintf(f, "\nOptions:\n");
	cli_print_opts(f, cli_opts_common);
	fprintf(f, "      --version          print tend's version\n\n"
	    "`tend COMMAND --help` lists the options of a command.  Every\n"
	    "command takes --json: the agent's JSON reply on stdout, an\n"
	    "error's JSON object on stderr.\n\n%s", cli_exits);
}

static void
cli_cmd_help(FILE *f, const struct cli_cmd *cmd)
{
	fprintf(f, "usage: tend %s %s\n\n%s\n\nOptions:\n", cmd->name,
	    cmd->synopsis, cmd->help);
	cli_print_opts(f, cmd->opts);
	cli_print_opts(f, cli_opts_common);
	fprintf(f, "\n%s", cli_exits);
}

/*
 * Options before the command: -S PATH, --help, --version.  0 and *cmd the
 * index of the command, or the exit code + 1 (help, usage error).
 */
static int
cli_global(struct cli *c, int argc, char **argv, int *cmd)
{
	const char	*a;
	int		 i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		a = argv[i];
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			cli_main_help(stdout);
			return CLI_OK + 1;
		}
		if (strcmp(a, "--version") == 0) {
			printf("tend %s (api %d)\n", TEND_VERSION,
			    TEND_API_VERSION);
			return CLI_OK + 1;
		}
		if (strcmp(a, "-S") == 0 || strcmp(a, "--socket") == 0) {
			if (++i == argc) {
				cli_usage_error(NULL, "%s needs a PATH", a);
				return CLI_USAGE + 1;
			}
			c->sock = argv[i];
		} else if (strncmp(a, "--socket=", 9) == 0)
			c->sock = a + 9;
		else if (strncmp(a, "-S", 2) == 0)
			c->sock = a + 2;
		else {
			cli_usage_error(NULL, "unknown option '%s'", a);
			return CLI_USAGE + 1;
		}
	}
	if (i == argc) {
		cli_usage_error(NULL, "no command given");
		return CLI_USAGE + 1;
	}
	*cmd = i;
	return 0;
}

/*
 * The command's options and arguments, with getopt_long over a table made
 * from its option rows.  0, or the exit code + 1 (help, usage error).
 */
static int
cli_parse(struct cli *c, int argc, char **argv)
{
	const struct cli_opt	*tabs[2] = { c->cmd->opts, cli_opts_common };
	const struct cli_opt	*o;
	struct option		 lo[CLI_MAX_OPTS + 1];
	char			 so[CLI_MAX_OPTS * 2 + 3];
	size_t			 nso = 0;
	int			 nlo = 0, t, ch, rv;

	if (cli_nopts(tabs[0]) + cli_nopts(tabs[1]) > CLI_MAX_OPTS)
		abort();
	if (c->cmd->flags & CMD_ORDERED)
		so[nso++] = '+';	/* the rest is the process's argv */
	so[nso++] = ':';		/* tell a missing argument apart */
	for (t = 0; t < 2; t++) {
		for (o = tabs[t]; o->name != NULL; o++) {
			lo[nlo].name = o->name;
			lo[nlo].has_arg = o->arg ? required_argument :
			    no_argument;
			lo[nlo].flag = NULL;
			lo[nlo].val = o->code;
			nlo++;
			if (o->letter) {
				so[nso++] = o->letter;
				if (o->arg)
					so[nso++] = ':';
			}
		}
	}
	memset(&lo[nlo], 0, sizeof(lo[nlo]));
	so[nso] = '\0';

	optind = 0;		/* glibc: start afresh */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, so, lo, NULL)) != -1) {
		if (ch == '?') {
			if (optopt != 0)
				cli_usage_error(c->cmd, "unknown option '-%c'",
				    optopt);
			else
				cli_usage_error(c->cmd, "unknown option '%s'",
				    argv[optind - 1]);
			return CLI_USAGE + 1;
		}
		if (ch == ':') {
			cli_usage_error(c->cmd, "option '%s' needs an argument",
			    argv[optind - 1]);
			return CLI_USAGE + 1;
		}
		if (ch < OPT_SOCKET)
			ch = cli_letter(tabs, ch);
		if ((rv = cli_setopt(c, ch, optarg)) != 0)
			return rv;
	}
	c->args = argv + optind;
	c->nargs = argc - optind;
	if (c->nargs < c->cmd->minargs) {
		cli_usage_error(c->cmd, "%s", c->cmd->flags & CMD_LAUNCH ?
		    "no command to run given" : "missing the process ID");
		return CLI_USAGE + 1;
	}
	if (c->cmd->maxargs >= 0 && c->nargs > c->cmd->maxargs) {
		cli_usage_error(c->cmd, "unexpected argument '%s'",
		    c->args[c->cmd->maxargs]);
		return CLI_USAGE + 1;
	}
	return cli_check(c);
}

/* The code of the row that carries a short option's letter. */
static int
cli_letter(const struct cli_opt *const tabs[2], int letter)
{
	const struct cli_opt	*o;
	int			 t;

	for (t = 0; t < 2; t++)
		for (o = tabs[t]; o->name != NULL; o++)
			if (o->letter == letter)
				return o->code;
	abort();		/* getopt returns only letters we gave it */
}

/* Apply one option.  0, or the exit code + 1. */
static int
cli_setopt(struct cli *c, int code, const char *arg)
{
	int64_t	n;

	switch (code) {
	case OPT_HELP:
		cli_cmd_help(stdout, c->cmd);
		return CLI_OK + 1;
	case OPT_SOCKET:
		c->sock = arg;
		break;
	case OPT_ALL:
		c->all = 1;
		break;
	case OPT_JSON:
		c->json = 1;
		break;
	case OPT_BOOT:
		c->boot = arg;
		break;
	case OPT_ID:
		c->id = arg;
		break;
	case OPT_CWD:
		c->cwd = arg;
		break;
	case OPT_ENV:
		if (cli_env(c, arg) == -1) {
			cli_usage_error(c->cmd, "bad -e '%s': want K=V", arg);
			return CLI_USAGE + 1;
		}
		break;
	case OPT_USER:
		c->user = arg;
		break;
	case OPT_TIMEOUT:
		if (cli_seconds(arg, &c->timeout_ms) == -1 ||
		    (c->timeout_ms == 0 && (c->cmd->flags & CMD_LAUNCH))) {
			cli_usage_error(c->cmd, "bad --timeout '%s': want "
			    "seconds, e.g. 30 or 1.5", arg);
			return CLI_USAGE + 1;
		}
		break;
	case OPT_STDIN:
		c->with_stdin = 1;
		break;
	case OPT_FOLLOW:
		c->follow = 1;
		break;
	case OPT_STDOUT:
	case OPT_STDERR:
		c->streams |= code == OPT_STDOUT ? STREAM_OUT : STREAM_ERR;
		if (c->streams == (STREAM_OUT | STREAM_ERR)) {
			cli_usage_error(c->cmd, "--stdout and --stderr "
			    "exclude each other");
			return CLI_USAGE + 1;
		}
		break;
	case OPT_SINCE:
		c->since = arg;
		break;
	case OPT_SIGNAL:
		if ((c->signo = cli_signal(arg)) == -1) {
			cli_usage_error(c->cmd, "unknown signal '%s'", arg);
			return CLI_USAGE + 1;
		}
		break;
	case OPT_CLOSE:
		c->close = 1;
		break;
	case OPT_FORCE:
		c->force = 1;
		break;
	case OPT_TERMINALS:
		c->terminals = 1;
		break;
	case OPT_LIMIT_BYTES:
		if ((c->limit_bytes = cli_count(arg)) < 1) {
			cli_usage_error(c->cmd, "bad --limit-bytes '%s': want "
			    "a positive number of bytes", arg);
			return CLI_USAGE + 1;
		}
		break;
	case OPT_READY_PORT:
		if ((n = cli_count(arg)) < 1 || n > 65535) {
			cli_usage_error(c->cmd, "bad --ready-port '%s': want "
			    "1 to 65535", arg);
			return CLI_USAGE + 1;
		}
		c->ready_port = (int)n;
		break;
	case OPT_READY_LOG:
		return cli_setregex(c, arg);
	case OPT_READY_TIMEOUT:
		if (cli_seconds(arg, &c->ready_ms) == -1) {
			cli_usage_error(c->cmd, "bad --ready-timeout '%s': "
			    "want seconds, e.g. 30 or 1.5", arg);
			return CLI_USAGE + 1;
		}
		break;
	default:
		abort();
	}
	return 0;
}

/* --ready-log: compiled now, so that a bad one is a usage error. */
static int
cli_setregex(struct cli *c, const char *arg)
{
	char	msg[128];
	int	err;

	if (c->ready_log) {
		regfree(&c->ready_re);
		c->ready_log = 0;
	}
	if ((err = regcomp(&c->ready_re, arg, REG_EXTENDED | REG_NOSUB))
	    != 0) {
		regerror(err, &c->ready_re, msg, sizeof(msg));
		cli_usage_error(c->cmd, "bad --ready-log '%s': %s", arg, msg);
		return CLI_USAGE + 1;
	}
	c->ready_log = 1;
	return 0;
}

/* Options that need or exclude others.  0, or the exit code + 1. */
static int
cli_check(struct cli *c)
{
	const char	*bad = NULL;

	if (c->ready_ms >= 0 && !c->ready_port && !c->ready_log)
		bad = "--ready-timeout needs --ready-port or --ready-log";
	else if (c->json && c->follow)
		bad = "--json prints one poll: it does not --follow";
	else if (c->json && c->streams != 0)
		bad = "--json prints both streams";
	else if (c->limit_bytes > 0 && !c->json)
		bad = "--limit-bytes goes with --json";
	if (bad == NULL)
		return 0;
	cli_usage_error(c->cmd, "%s", bad);
	return CLI_USAGE + 1;
}

/* A decimal count without sign or suffix, or -1. */
static int64_t
cli_count(const char *s)
{
	char		*end;
	long long	 n;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	n = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0')
		return -1;
	return n;
}

/* Non-negative seconds, fractions allowed, to milliseconds. */
static int
cli_seconds(const char *s, int64_t *ms)
{
	char	*end;
	double	 d;

	errno = 0;
	d = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(d) ||
	    d < 0 || d > 1e12)
		return -1;
	*ms = (int64_t)(d * 1000 + 0.5);
	if (*ms == 0 && d > 0)
		*ms = 1;
	return 0;
}

/* "9", "KILL", "SIGKILL", "kill": the number, or -1. */
static int
cli_signal(const char *s)
{
	const char	*name;
	char		*end;
	long		 n;
	int		 i;

	if (*s >= '0' && *s <= '9') {
		errno = 0;
		n = strtol(s, &end, 10);
		if (errno != 0 || *end != '\0' || n < 1 || n > 64)
			return -1;
		return (int)n;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (i = 1; i <= 64; i++)
		if ((name = sigabbrev_np(i)) != NULL &&
		    strcasecmp(name, s) == 0)
			return i;
	return -1;
}

/* -e K=V; a plain K takes tend's own value, as docker run -e does. */
static int
cli_env(struct cli *c, const char *arg)
{
	const char	*eq, *val;
	char		*key;
	int		 rv = 0;

	eq = strchr(arg, '=');
	if (eq == arg || *arg == '\0')
		return -1;
	if (eq == NULL) {
		if ((val = getenv(arg)) == NULL)
			return 0;
		eq = arg + strlen(arg);
	} else
		val = eq + 1;
	if (c->env == NULL && (c->env = cJSON_CreateObject()) == NULL)
		return -1;
	if ((key = strndup(arg, eq - arg)) == NULL)
		return -1;
	cJSON_DeleteItemFromObjectCaseSensitive(c->env, key);
	if (cJSON_AddStringToObject(c->env, key, val) == NULL)
		rv = -1;
	free(key);
	return rv;
}

/* ---------------------------------------------------------------------
 * Calls to the agent.
 */

static void
cli_http_init(struct cli_http *h, const char *method)
{
	memset(h, 0, sizeof(*h));
	h->method = method;
	h->bodyfd = -1;
	h->wakefd = -1;
	h->failcode = CLI_REFUSED;
}

static void
cli_http_free(struct cli_http *h)
{
	buf_free(&h->target);
	buf_free(&h->reply);
	cJSON_Delete(h->json);
	h->json = NULL;
}

/* Percent-encode all but RFC 3986's unreserved characters. */
static int
cli_escape(struct buf *b, const char *s)
{
	static const char	 hex[] = "0123456789ABCDEF";
	unsigned char		 ch;
	int			 rv = 0;

	for (; *s != '\0' && rv == 0; s++) {
		ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("-._~", ch) != NULL)
			rv = buf_add(b, s, 1);
		else
			rv = buf_printf(b, "%%%c%c", hex[ch >> 4],
			    hex[ch & 15]);
	}
	return rv;
}

/* "/v1/processes/<id><suffix>" */
static int
cli_proc_target(struct cli_http *h, const char *id, const char *suffix)
{
	h->named = 1;
	if (buf_addstr(&h->target, "/v1/processes/") == -1 ||
	    cli_escape(&h->target, id) == -1 ||
	    buf_addstr(&h->target, suffix) == -1)
		return -1;
	return 0;
}

/* Append "?k=v" or "&k=v". */
static int
cli_query(struct cli_http *h, const char *k, const char *v)
{
	int	first;

	first = memchr(buf_head(&h->target), '?',
	    buf_avail(&h->target)) == NULL;
	if (buf_printf(&h->target, "%c%s=", first ? '?' : '&', k) == -1 ||
	    cli_escape(&h->target, v) == -1)
		return -1;
	return 0;
}

static const char *
cli_connect_hint(int err)
{
	switch (err) {
	case ENOENT:
	case ECONNREFUSED:
		return " (is the agent running?)";
	case EACCES:
	case EPERM:
		return " (the socket is root's: run tend as root)";
	default:
		return "";
	}
}

static int
cli_on_header(void *arg, const char *name, const char *value)
{
	struct cli_http	*h = arg;

	if (strcasecmp(name, "Content-Type") == 0)
		snprintf(h->ctype, sizeof(h->ctype), "%s", value);
	return 0;
}

static int
cli_on_head(void *arg, int status)
{
	struct cli_http	*h = arg;

	h->status = status;
	if (h->head != NULL)
		return h->head(h->arg, h);
	return 0;
}

static int
cli_on_body(void *arg, const char *d, size_t n)
{
	struct cli_http	*h = arg;

	if (h->status / 100 == 2 && h->stream != NULL)
		return h->stream(h->arg, d, n);
	/* An error reply is kept only to quote it: bound it. */
	if (h->status / 100 != 2 && buf_avail(&h->reply) + n > CLI_ERRBODY_MAX)
		return 0;
	if (buf_add(&h->reply, d, n) == -1) {
		cli_warnx("out of memory");
		return -1;
	}
	return 0;
}

static int
cli_on_wake(void *arg)
{
	struct cli_http	*h = arg;

	return h->wake(h->arg);
}

/*
 * Make the call h describes and read the reply.  CLI_OK on a 2xx reply,
 * CLI_REFUSED on an error reply (reported unless h->quiet),
 * CLI_UNREACHABLE when the agent cannot be reached or the connection
 * breaks, h->failcode when a stream callback stopped.
 */
static int
cli_call(struct cli *c, struct cli_http *h)
{
	static const struct hclient_cb	 cb = {
		cli_on_header, cli_on_head, cli_on_body, cli_on_wake
	};
	struct hclient			 hc;
	struct hclient_req		 req;
	const char			*hdrs[4];
	char				 accept[96], boot[160];
	char				*body = NULL;
	int				 n = 0, rv;

	if (buf_avail(&h->target) == 0 || buf_add(&h->target, "", 1) == -1) {
		cli_warnx("out of memory");
		return CLI_REFUSED;
	}
	if (h->accept != NULL) {
		snprintf(accept, sizeof(accept), "Accept: %s", h->accept);
		hdrs[n++] = accept;
	}
	if (h->boot != NULL) {
		if (strpbrk(h->boot, "\r\n") != NULL ||
		    strlen(h->boot) > sizeof(boot) - 16) {
			cli_warnx("bad boot ID '%s'", h->boot);
			return CLI_USAGE;
		}
		snprintf(boot, sizeof(boot), "Tend-Boot: %s", h->boot);
		hdrs[n++] = boot;
	}
	if (h->json != NULL) {
		hdrs[n++] = "Content-Type: application/json";
		if ((body = cJSON_PrintUnformatted(h->json)) == NULL) {
			cli_warnx("out of memory");
			return CLI_REFUSED;
		}
	}
	hdrs[n] = NULL;

	if (hclient_open(&hc, c->sock) == -1) {
		rv = errno;
		cli_report(c, "unreachable", "cannot connect to %s: %s%s",
		    c->sock, hclient_error(&hc), cli_connect_hint(rv));
		free(body);
		return CLI_UNREACHABLE;
	}
	memset(&req, 0, sizeof(req));
	req.method = h->method;
	req.target = buf_head(&h->target);
	req.headers = hdrs;
	req.body = body;
	req.bodylen = body != NULL ? strlen(body) : 0;
	if (h->bodyfd != -1)
		rv = hclient_send_fd(&hc, &req, h->bodyfd);
	else
		rv = hclient_send(&hc, &req);
	free(body);
	if (rv == -1) {
		cli_report(c, "unreachable", "cannot send to the agent at %s: "
		    "%s", c->sock, hclient_error(&hc));
		hclient_close(&hc);
		return CLI_UNREACHABLE;
	}
	if (h->wake != NULL)
		hc.wakefd = h->wakefd;
	if (hclient_recv(&hc, &cb, h) == -1) {
		rv = errno;
		if (rv == ECANCELED) {
			hclient_close(&hc);
			return h->failcode;
		}
		/* A refusal that broke off is still a refusal. */
		if (h->status / 100 != 2 && h->status != 0)
			goto refused;
		cli_report(c, "unreachable", "lost the connection to the "
		    "agent: %s", hclient_error(&hc));
		hclient_close(&hc);
		return CLI_UNREACHABLE;
	}
	hclient_close(&hc);
	if (h->status / 100 == 2)
		return CLI_OK;
 refused:
	hclient_close(&hc);
	if (!h->quiet)
		cli_print_error(c, h);
	return cli_refusal(h);
}

/* The exit code of an error reply: its class, for a caller to branch on. */
static int
cli_refusal(const struct cli_http *h)
{
	const char	*code;
	cJSON		*j;
	int		 rv = CLI_REFUSED;

	j = cli_reply_json(h);
	code = cli_str(j, "code");
	if (h->status == 404 && h->named)
		rv = CLI_NOSUCH;
	else if (code != NULL && strcmp(code, "id_taken") == 0)
		rv = CLI_TAKEN;
	cJSON_Delete(j);
	return rv;
}

/*
 * An error reply: its message, or with --json the agent's JSON object as
 * it came ({"error":"...","code":"..."}).
 */
static void
cli_print_error(const struct cli *c, const struct cli_http *h)
{
	const char	*msg, *reason;
	cJSON		*j;

	j = cli_reply_json(h);
	msg = cli_str(j, "error");
	if (c->json && msg != NULL) {
		fflush(stdout);
		cli_print_raw(stderr, buf_head(&h->reply),
		    buf_avail(&h->reply));
	} else if (msg != NULL && *msg != '\0')
		cli_report(c, "refused", "%s", msg);
	else {
		reason = http_status_str((enum http_status)h->status);
		cli_report(c, "refused", "the agent replied %d %s", h->status,
		    reason);
	}
	cJSON_Delete(j);
}

/*
 * A failure that is not the agent's reply: "tend: msg", or with --json
 * the same shape as the agent's errors, {"error":msg,"code":code}.
 */
static void
cli_report(const struct cli *c, const char *code, const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[512], *s;
	cJSON	*j;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!c->json) {
		cli_warnx("%s", msg);
		return;
	}
	fflush(stdout);
	if ((j = cJSON_CreateObject()) != NULL &&
	    cJSON_AddStringToObject(j, "error", msg) != NULL &&
	    cJSON_AddStringToObject(j, "code", code) != NULL &&
	    (s = cJSON_PrintUnformatted(j)) != NULL) {
		fprintf(stderr, "%s\n", s);
		free(s);
	} else
		cli_warnx("%s", msg);
	cJSON_Delete(j);
}

static cJSON *
cli_reply_json(const struct cli_http *h)
{
	return cJSON_ParseWithLength(buf_head(&h->reply),
	    buf_avail(&h->reply));
}

/* ---------------------------------------------------------------------
 * Server-Sent Events of a process's output.
 */

static const struct cli_sse_type cli_sse_types[] = {
	{ "stdout", cli_ev_output },
	{ "stderr", cli_ev_output },
	{ "truncated", cli_ev_truncated },
	{ "terminal", cli_ev_terminal },
};

/* Body pieces in, lines out: a line may arrive in many pieces. */
static int
cli_sse_feed(void *arg, const char *d, size_t n)
{
	struct cli_sse	*s = arg;
	const char	*nl;
	size_t		 k;

	while (n > 0) {
		nl = memchr(d, '\n', n);
		k = nl != NULL ? (size_t)(nl - d) : n;
		if (buf_avail(&s->line) + k > CLI_SSE_LINE_MAX) {
			cli_warnx("bad reply from the agent: an event line "
			    "longer than %d bytes", CLI_SSE_LINE_MAX);
			return -1;
		}
		if (buf_add(&s->line, d, k) == -1) {
			cli_warnx("out of memory");
			return -1;
		}
		if (nl == NULL)
			break;
		if (buf_add(&s->line, "", 1) == -1) {
			cli_warnx("out of memory");
			return -1;
		}
		if (cli_sse_line(s, buf_head(&s->line),
		    buf_avail(&s->line) - 1) == -1)
			return -1;
		buf_reset(&s->line);
		d += k + 1;
		n -= k + 1;
	}
	return 0;
}

/* One line (NUL-ended, without its newline) of the event stream. */
static int
cli_sse_line(struct cli_sse *s, char *line, size_t len)
{
	char	*val;

	if (len > 0 && line[len - 1] == '\r')
		line[--len] = '\0';
	if (len == 0) {
		if (buf_avail(&s->data) == 0)
			return 0;
		return cli_sse_event(s);
	}
	if (line[0] == ':')
		return 0;		/* a comment: heartbeat */
	if ((val = strchr(line, ':')) != NULL) {
		*val++ = '\0';
		if (*val == ' ')
			val++;
	} else
		val = line + len;
	if (strcmp(line, "data") == 0) {
		if ((buf_avail(&s->data) > 0 && buf_add(&s->data, "\n", 1)) ||
		    buf_addstr(&s->data, val) == -1) {
			cli_warnx("out of memory");
			return -1;
		}
	} else if (strcmp(line, "id") == 0)
		snprintf(s->cursor, sizeof(s->cursor), "%s", val);
	return 0;
}

/* Dispatch a complete event on its JSON "type"; unknown types pass. */
static int
cli_sse_event(struct cli_sse *s)
{
	const char	*type;
	cJSON		*j;
	size_t		 i;
	int		 rv = 0;

	j = cJSON_ParseWithLength(buf_head(&s->data), buf_avail(&s->data));
	buf_reset(&s->data);
	if (j == NULL) {
		cli_warnx("bad reply from the agent: an event that is not "
		    "JSON");
		return -1;
	}
	if ((type = cli_str(j, "type")) != NULL)
		for (i = 0; i < sizeof(cli_sse_types) /
		    sizeof(cli_sse_types[0]); i++)
			if (strcmp(cli_sse_types[i].type, type) == 0) {
				rv = cli_sse_types[i].fn(s, j);
				break;
			}
	cJSON_Delete(j);
	return rv;
}

static int
cli_ev_output(struct cli_sse *s, cJSON *j)
{
	const char	*type, *data;
	int		 fd;

	type = cli_str(j, "type");
	fd = strcmp(type, "stdout") == 0 ? STDOUT_FILENO : STDERR_FILENO;
	if (s->streams != 0 &&
	    !(s->streams & (fd == STDOUT_FILENO ? STREAM_OUT : STREAM_ERR)))
		return 0;
	if ((data = cli_str(j, "data")) == NULL) {
		cli_warnx("bad reply from the agent: %s event without data",
		    type);
		return -1;
	}
	return cli_write_b64(fd, data);
}

static int
cli_ev_truncated(struct cli_sse *s, cJSON *j)
{
	cJSON	*n;

	(void)s;
	n = cJSON_GetObjectItemCaseSensitive(j, "skippedBytes");
	if (cJSON_IsNumber(n))
		cli_warnx("%.0f bytes of output were dropped here (the log "
		    "keeps only the newest)", n->valuedouble);
	else
		cli_warnx("output was dropped here (the log keeps only the "
		    "newest)");
	return 0;
}

static int
cli_ev_terminal(struct cli_sse *s, cJSON *j)
{
	s->ended = 1;
	s->code = cli_exit_code(j, NULL);
	return 0;
}

static void
cli_sse_free(struct cli_sse *s)
{
	buf_free(&s->line);
	buf_free(&s->data);
}

/* ---------------------------------------------------------------------
 * Output and formatting.
 */

static int
cli_write_b64(int fd, const char *s)
{
	struct buf	b = { 0 };
	int		rv = 0;

	if (codec_b64_decode(&b, s, strlen(s)) == -1) {
		cli_warnx("bad reply from the agent: output that is not "
		    "base64");
		rv = -1;
	} else if (fsutil_write_all(fd, buf_head(&b), buf_avail(&b)) == -1) {
		cli_warnx("writing the output: %s", strerror(errno));
		rv = -1;
	}
	buf_free(&b);
	return rv;
}

/* A reply as it came, and a newline: what --json prints. */
static void
cli_print_raw(FILE *f, const char *d, size_t n)
{
	fwrite(d, 1, n, f);
	if (n == 0 || d[n - 1] != '\n')
		fputc('\n', f);
}

/* JSON indented for a reader; what cannot be parsed, as it came. */
static void
cli_print_json(const char *d, size_t n)
{
	cJSON	*j;
	char	*s;

	if ((j = cJSON_ParseWithLength(d, n)) != NULL &&
	    (s = cJSON_Print(j)) != NULL) {
		puts(s);
		free(s);
	} else {
		fwrite(d, 1, n, stdout);
		if (n > 0 && d[n - 1] != '\n')
			putchar('\n');
	}
	cJSON_Delete(j);
}

/* "45s", "3m12s", "5h02m", "2d04h". */
static void
cli_duration(char *out, size_t len, int64_t ms)
{
	int64_t	s = ms < 0 ? 0 : ms / 1000;

	if (s < 60)
		snprintf(out, len, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(out, len, "%lldm%02llds", (long long)(s / 60),
		    (long long)(s % 60));
	else if (s < 86400)
		snprintf(out, len, "%lldh%02lldm", (long long)(s / 3600),
		    (long long)(s / 60 % 60));
	else
		snprintf(out, len, "%lldd%02lldh", (long long)(s / 86400),
		    (long long)(s / 3600 % 24));
}

/* RFC 3339 UTC ("2026-07-08T00:00:00.000Z") to ms; -1 if not that. */
static int64_t
cli_parse_time(const char *s)
{
	struct tm	tm;
	int		ms = 0, n = 0;
	time_t		t;

	memset(&tm, 0, sizeof(tm));
	if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year,
	    &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec,
	    &n) != 6)
		return -1;
	if (s[n] == '.')
		sscanf(s + n, ".%3d", &ms);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	if ((t = timegm(&tm)) == (time_t)-1)
		return -1;
	return (int64_t)t * 1000 + ms;
}

/*
 * argv as a shell would need it typed, plain words bare, others quoted,
 * NUL-ended.  -1 on ENOMEM.
 */
static int
cli_command(struct buf *b, const cJSON *argv)
{
	static const char	 plain[] = "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%";
	const cJSON		*a;
	const char		*p;
	int			 rv = 0;

	cJSON_ArrayForEach(a, argv) {
		if (!cJSON_IsString(a))
			continue;
		if (buf_avail(b) > 0)
			rv |= buf_add(b, " ", 1);
		p = a->valuestring;
		if (*p != '\0' && strspn(p, plain) == strlen(p)) {
			rv |= buf_addstr(b, p);
			continue;
		}
		rv |= buf_add(b, "'", 1);
		for (; *p != '\0'; p++)
			rv |= *p == '\'' ? buf_addstr(b, "'\\''") :
			    buf_add(b, p, 1);
		rv |= buf_add(b, "'", 1);
	}
	rv |= buf_add(b, "", 1);
	return rv ? -1 : 0;
}

static const char *
cli_str(const cJSON *j, const char *key)
{
	const cJSON	*v;

	v = cJSON_GetObjectItemCaseSensitive(j, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/*
 * The exit code a ProcessStatus or terminal event stands for: exit.code
 * (already 128+N when killed by signal N).  An error state (a lost
 * process) is reported and becomes -1.
 */
static int
cli_int(const cJSON *j, const char *key, int def)
{
	const cJSON	*v;

	v = cJSON_GetObjectItemCaseSensitive(j, key);
	return cJSON_IsNumber(v) ? v->valueint : def;
}

static int
cli_exit_code(const cJSON *j, const char *id)
{
	const cJSON	*ex, *code, *err;
	const char	*state, *msg;

	state = cli_str(j, "state");
	ex = cJSON_GetObjectItemCaseSensitive(j, "exit");
	code = cJSON_GetObjectItemCaseSensitive(ex, "code");
	if (state != NULL && strcmp(state, "exited") == 0 &&
	    cJSON_IsNumber(code))
		return code->valueint < 0 || code->valueint > 255 ? 255 :
		    code->valueint;
	err = cJSON_GetObjectItemCaseSensitive(j, "error");
	msg = cli_str(err, "message");
	if (msg == NULL)
		msg = cli_str(err, "code");
	if (id != NULL)
		cli_warnx("process '%s' ended in error: %s", id,
		    msg ? msg : "no exit status");
	else
		cli_warnx("the process ended in error: %s",
		    msg ? msg : "no exit status");
	return -1;
}

/* ---------------------------------------------------------------------
 * The commands.
 */

static int
cli_health(struct cli *c)
{
	struct cli_http	 h;
	const cJSON	*p, *n;
	const char	*s;
	cJSON		*j;
	char		 up[32];
	int		 rv;

	cli_http_init(&h, "GET");
	if (buf_addstr(&h.target, "/v1/health") == -1)
		return CLI_REFUSED;
	if ((rv = cli_call(c, &h)) != CLI_OK)
		goto done;
	if (c->json) {
		cli_print_raw(stdout, buf_head(&h.reply), buf_avail(&h.reply));
		goto done;
	}
	if ((j = cli_reply_json(&h)) == NULL) {
		cli_warnx("bad reply from the agent: not JSON");
		rv = CLI_REFUSED;
		goto done;
	}
	printf("status     %s\n", (s = cli_str(j, "status")) ? s : "?");
	printf("boot       %s\n", (s = cli_str(j, "bootId")) ? s : "?");
	printf("version    %s (api %d)\n",
	    (s = cli_str(j, "version")) ? s : "?", cli_int(j, "apiVersion", 0));
	printf("pid        %d\n", cli_int(j, "pid", 0));
	n = cJSON_GetObjectItemCaseSensitive(j, "uptimeMs");
	cli_duration(up, sizeof(up), cJSON_IsNumber(n) ?
	    (int64_t)n->valuedouble : 0);
	printf("uptime     %s\n", up);
	p = cJSON_GetObjectItemCaseSensitive(j, "processes");
	printf("processes  %d running, %d in all\n", cli_int(p, "running", 0),
	    cli_int(p, "total", 0));
	printf("terminals  %d\n", cli_int(j, "terminals", 0));
	cJSON_Delete(j);
 done:
	cli_http_free(&h);
	return rv;
}

/*
 * ps --terminals: the terminals route's reply as it came.  This agent has
 * no terminals yet: it answers 404, and tend exits 1 with its error.
 */
static int
cli_terminals(struct cli *c, struct cli_http *h)
{
	int	rv;

	if (buf_addstr(&h->target, "/v1/terminals") == -1)
		return CLI_REFUSED;
	if ((rv = cli_call(c, h)) == CLI_OK)
		cli_print_raw(stdout, buf_head(&h->reply), buf_avail(&h->reply));
	cli_http_free(h);
	return rv;
}

/* The table columns, in order. */
enum { PS_ID, PS_PID, PS_STATE, PS_EXIT, PS_AGE, PS_COMMAND, PS_NCOLS };

static int
cli_ps(struct cli *c)
{
	static const char *const	 title[PS_NCOLS] = {
		"ID", "PID", "STATE", "EXIT", "AGE", "COMMAND"
	};
	struct cli_http			 h;
	struct buf			 cmd = { 0 };
	const cJSON			*p, *v, *ex;
	const char			*state, *sig;
	char				**cell = NULL, **row, tmp[64];
	size_t				 w[PS_NCOLS];
	int64_t				 now, t;
	cJSON				*j = NULL;
	int				 rv, nrow, r, k;

	cli_http_init(&h, "GET");
	h.boot = c->boot;
	if (c->terminals)
		return cli_terminals(c, &h);
	if (buf_addstr(&h.target, "/v1/processes") == -1 ||
	    (!c->all && cli_query(&h, "state", "running") == -1))
		return CLI_REFUSED;
	if ((rv = cli_call(c, &h)) != CLI_OK)
		goto done;
	if (c->json) {
		cli_print_raw(stdout, buf_head(&h.reply), buf_avail(&h.reply));
		goto done;
	}
	if ((j = cli_reply_json(&h)) == NULL || !cJSON_IsArray(j)) {
		cli_warnx("bad reply from the agent: not a JSON array");
		rv = CLI_REFUSED;
		goto done;
	}

	/* Fill the cells first: the widths depend on all of them. */
	nrow = cJSON_GetArraySize(j) + 1;
	if ((cell = calloc((size_t)nrow * PS_NCOLS, sizeof(*cell))) == NULL) {
		cli_warnx("out of memory");
		rv = CLI_REFUSED;
		goto done;
	}
	for (k = 0; k < PS_NCOLS; k++)
		cell[k] = strdup(title[k]);
	now = codec_now_ms();
	r = 1;
	cJSON_ArrayForEach(p, j) {
		row = cell + r++ * PS_NCOLS;
		row[PS_ID] = strdup(cli_str(p, "id") ? cli_str(p, "id") :
		    "?");
		v = cJSON_GetObjectItemCaseSensitive(p, "pid");
		snprintf(tmp, sizeof(tmp), cJSON_IsNumber(v) ? "%d" : "-",
		    cJSON_IsNumber(v) ? v->valueint : 0);
		row[PS_PID] = strdup(tmp);
		state = cli_str(p, "state");
		row[PS_STATE] = strdup(state ? state : "?");
		ex = cJSON_GetObjectItemCaseSensitive(p, "exit");
		v = cJSON_GetObjectItemCaseSensitive(ex, "code");
		if (cJSON_IsNumber(v)) {
			snprintf(tmp, sizeof(tmp), "%d", v->valueint);
			v = cJSON_GetObjectItemCaseSensitive(ex, "signal");
			if (cJSON_IsNumber(v) &&
			    (sig = sigabbrev_np(v->valueint)) != NULL)
				snprintf(tmp + strlen(tmp),
				    sizeof(tmp) - strlen(tmp), " (%s)", sig);
			if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ex,
			    "timedOut")))
				snprintf(tmp + strlen(tmp),
				    sizeof(tmp) - strlen(tmp), " timeout");
		} else if ((v = cJSON_GetObjectItemCaseSensitive(p, "error"))
		    != NULL && cli_str(v, "code") != NULL)
			snprintf(tmp, sizeof(tmp), "%s", cli_str(v, "code"));
		else
			snprintf(tmp, sizeof(tmp), "-");
		row[PS_EXIT] = strdup(tmp);
		t = cli_parse_time(cli_str(p, "startedAt"));
		if (t >= 0)
			cli_duration(tmp, sizeof(tmp), now - t);
		else
			snprintf(tmp, sizeof(tmp), "-");
		row[PS_AGE] = strdup(tmp);
		buf_reset(&cmd);
		if (cli_command(&cmd, cJSON_GetObjectItemCaseSensitive(p,
		    "command")) == 0)
			row[PS_COMMAND] = strdup(buf_head(&cmd));
	}
	memset(w, 0, sizeof(w));
	for (r = 0; r < nrow; r++)
		for (k = 0; k < PS_NCOLS; k++) {
			if (cell[r * PS_NCOLS + k] == NULL) {
				cli_warnx("out of memory");
				rv = CLI_REFUSED;
				goto done;
			}
			if (strlen(cell[r * PS_NCOLS + k]) > w[k])
				w[k] = strlen(cell[r * PS_NCOLS + k]);
		}
	for (r = 0; r < nrow; r++) {
		for (k = 0; k < PS_NCOLS - 1; k++)
			printf("%-*s  ", (int)w[k], cell[r * PS_NCOLS + k]);
		printf("%s\n", cell[r * PS_NCOLS + PS_COMMAND]);
	}
 done:
	if (cell != NULL) {
		for (r = 0; r < nrow * PS_NCOLS; r++)
			free(cell[r]);
		free(cell);
	}
	buf_free(&cmd);
	cJSON_Delete(j);
	cli_http_free(&h);
	return rv;
}

/* The launch body shared by start and run. */
static cJSON *
cli_launch_body(struct cli *c, const char *id)
{
	cJSON	*o, *argv, *s;
	int	 i;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	if ((argv = cJSON_AddArrayToObject(o, "argv")) == NULL)
		goto fail;
	for (i = 0; i < c->nargs; i++) {
		if ((s = cJSON_CreateString(c->args[i])) == NULL)
			goto fail;
		cJSON_AddItemToArray(argv, s);
	}
	if (id != NULL && cJSON_AddStringToObject(o, "id", id) == NULL)
		goto fail;
	if (c->cwd != NULL && cJSON_AddStringToObject(o, "cwd", c->cwd) == NULL)
		goto fail;
	if (c->user != NULL &&
	    cJSON_AddStringToObject(o, "user", c->user) == NULL)
		goto fail;
	if (c->timeout_ms > 0 && cJSON_AddNumberToObject(o, "timeout",
	    (double)c->timeout_ms) == NULL)
		goto fail;
	if (c->env != NULL) {
		cJSON_AddItemToObject(o, "env", c->env);
		c->env = NULL;
	}
	return o;
 fail:
	cJSON_Delete(o);
	return NULL;
}

static int
cli_start(struct cli *c)
{
	struct cli_http	 h;
	const char	*id;
	cJSON		*j;
	int		 rv;

	cli_http_init(&h, "POST");
	if (buf_addstr(&h.target, "/v1/processes") == -1 ||
	    (h.json = cli_launch_body(c, c->id)) == NULL ||
	    (c->with_stdin && cJSON_AddStringToObject(h.json, "stdin",
	    "pipe") == NULL)) {
		cli_warnx("out of memory");
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	if ((rv = cli_call(c, &h)) != CLI_OK) {
		cli_http_free(&h);
		return rv;
	}
	j = cli_reply_json(&h);
	if ((id = cli_str(j, "id")) == NULL) {
		cli_report(c, "bad_reply", "bad reply from the agent: no id");
		rv = CLI_REFUSED;
	} else if (c->ready_port || c->ready_log)
		rv = cli_ready(c, id, &h);
	if (rv == CLI_OK || rv == CLI_NOTREADY || rv == CLI_TIMEDOUT) {
		if (c->json)
			cli_print_raw(stdout, buf_head(&h.reply),
			    buf_avail(&h.reply));
		else
			printf("%s\n", id);
	}
	cJSON_Delete(j);
	cli_http_free(&h);
	return rv;
}

/* ---------------------------------------------------------------------
 * start --ready-port, --ready-log: one exec instead of a polling loop.
 */

/*
 * Whether a socket listens on TCP port, in this network namespace: the
 * local address of a LISTEN (0A) row of /proc/net/tcp or tcp6, e.g.
 * "   0: 00000000:1F90 00000000:0000 0A ...".
 */
static int
cli_listening(int port)
{
	static const char *const	 files[] = {
		"/proc/net/tcp", "/proc/net/tcp6"
	};
	char				 line[CLI_NETLINE_MAX], *p;
	unsigned int			 lport, st;
	size_t				 i;
	FILE				*f;
	int				 found = 0;

	for (i = 0; i < sizeof(files) / sizeof(files[0]) && !found; i++) {
		if ((f = fopen(files[i], "re")) == NULL)
			continue;	/* no IPv6 in this kernel */
		while (!found && fgets(line, sizeof(line), f) != NULL) {
			/* The local address ends at the first space after it. */
			if ((p = strchr(line, ':')) == NULL ||
			    (p = strchr(p + 2, ':')) == NULL)
				continue;
			if (sscanf(p + 1, "%x %*s %x", &lport, &st) == 2 &&
			    (int)lport == port && st == 0x0A)
				found = 1;
		}
		fclose(f);
	}
	return found;
}

/*
 * Complete lines of one stream against --ready-log: 1 on a match, 0 not
 * yet, -1 out of memory.  A line in pieces waits in line for its end; a
 * longer one is judged on its first CLI_READY_LINE_MAX bytes.
 */
static int
cli_ready_lines(struct cli *c, struct buf *line, const char *d, size_t n)
{
	const char	*nl;
	size_t		 k, room;

	while (n > 0) {
		nl = memchr(d, '\n', n);
		k = nl != NULL ? (size_t)(nl - d) : n;
		room = CLI_READY_LINE_MAX - buf_avail(line);
		if (buf_add(line, d, k < room ? k : room) == -1)
			return -1;
		if (nl == NULL)
			return 0;
		if (buf_add(line, "", 1) == -1)
			return -1;
		if (regexec(&c->ready_re, buf_head(line), 0, NULL, 0) == 0)
			return 1;
		buf_reset(line);
		d = nl + 1;
		n -= k + 1;
	}
	return 0;
}

/*
 * Poll the output after *cursor until nothing more is stored now (or the
 * deadline: a writer may outrun the polls); 1 when a line matched, 0 not
 * yet, or -(exit code + 1).
 */
static int
cli_ready_log(struct cli *c, const char *id, char *cursor, size_t cursorlen,
    struct buf line[2], int64_t deadline)
{
	static const char *const	 streams[2] = { "stdout", "stderr" };
	struct cli_http			 h;
	struct buf			 raw = { 0 };
	const char			*s, *next;
	cJSON				*j;
	int				 rv, k, hit = 0, more = 1;

	while (more && !hit && codec_mono_ms() < deadline) {
		if ((rv = cli_poll_once(c, id, cursor[0] ? cursor : NULL, -1,
		    &h)) != CLI_OK)
			return -(rv + 1);
		j = cli_reply_json(&h);
		if ((next = cli_str(j, "cursor")) == NULL ||
		    strlen(next) >= cursorlen) {
			cli_report(c, "bad_reply", "bad reply from the agent: "
			    "no cursor");
			hit = -(CLI_REFUSED + 1);
			goto next;
		}
		more = strcmp(next, cursor) != 0;
		snprintf(cursor, cursorlen, "%s", next);
		for (k = 0; k < 2 && hit == 0; k++) {
			buf_reset(&raw);
			if ((s = cli_str(j, streams[k])) == NULL ||
			    codec_b64_decode(&raw, s, strlen(s)) == -1) {
				cli_report(c, "bad_reply", "bad reply from the "
				    "agent: %s is not base64", streams[k]);
				hit = -(CLI_REFUSED + 1);
			} else if ((hit = cli_ready_lines(c, &line[k],
			    buf_head(&raw), buf_avail(&raw))) == -1) {
				cli_warnx("out of memory");
				hit = -(CLI_REFUSED + 1);
			}
		}
 next:
		cJSON_Delete(j);
		cli_http_free(&h);
	}
	buf_free(&raw);
	return hit;
}

/*
 * Until the process is ready, has ended, or --ready-timeout ran out;
 * the wait route doubles as the pause between checks, and ends it early
 * when the process ends.  h then holds the process's latest status.
 */
static int
cli_ready(struct cli *c, const char *id, struct cli_http *h)
{
	struct buf	 line[2] = { { 0 }, { 0 } };
	struct cli_http	 w;
	char		 cursor[CURSOR_MAX + 64] = "";
	int64_t		 deadline, left;
	cJSON		*st;
	int		 port_ok = !c->ready_port, log_ok = !c->ready_log;
	int		 rv, running, r;

	deadline = codec_mono_ms() + (c->ready_ms >= 0 ? c->ready_ms :
	    CLI_READY_TIMEOUT);
	for (;;) {
		if (!log_ok) {
			if ((r = cli_ready_log(c, id, cursor, sizeof(cursor),
			    line, deadline)) < 0) {
				rv = -r - 1;
				break;
			}
			log_ok = r;
		}
		if (!port_ok)
			port_ok = cli_listening(c->ready_port);
		left = deadline - codec_mono_ms();
		if (port_ok && log_ok)
			left = 0;	/* no pause: just a fresh status */
		else if (left > CLI_READY_POLL)
			left = CLI_READY_POLL;
		if ((rv = cli_wait_once(c, id, left > 0 ? left : 1, &w, &st,
		    &running)) != CLI_OK)
			break;
		cJSON_Delete(st);
		cli_http_free(h);
		*h = w;			/* the latest status */
		if (!running) {
			cli_report(c, "ended", "process '%s' ended before it "
			    "was ready (see `tend status %s`)", id, id);
			rv = CLI_NOTREADY;
			break;
		}
		if (port_ok && log_ok)
			break;
		if (codec_mono_ms() >= deadline) {
			cli_report(c, "timeout", "process '%s' is not ready "
			    "after the --ready-timeout (it keeps running)", id);
			rv = CLI_TIMEDOUT;
			break;
		}
	}
	buf_free(&line[0]);
	buf_free(&line[1]);
	return rv;
}

/* run --stdin: all of tend's stdin, as exec's base64 "stdin". */
static int
cli_run_stdin(cJSON *o)
{
	struct buf	 raw = { 0 }, enc = { 0 };
	char		*p;
	ssize_t		 n;
	int		 rv = -1;

	for (;;) {
		if ((p = buf_reserve(&raw, 64 * 1024)) == NULL) {
			cli_warnx("out of memory");
			goto done;
		}
		if ((n = read(STDIN_FILENO, p, 64 * 1024)) == -1) {
			if (errno == EINTR)
				continue;
			cli_warnx("reading stdin: %s", strerror(errno));
			goto done;
		}
		if (n == 0)
			break;
		raw.len += n;
		if (buf_avail(&raw) > CLI_RUN_STDIN_MAX) {
			cli_warnx("run --stdin takes at most %d KiB; use "
			    "`tend start --stdin` and `tend send`",
			    CLI_RUN_STDIN_MAX / 1024);
			goto done;
		}
	}
	if (codec_b64_encode(&enc, buf_head(&raw), buf_avail(&raw)) == -1 ||
	    buf_add(&enc, "", 1) == -1 ||
	    cJSON_AddStringToObject(o, "stdin", buf_head(&enc)) == NULL) {
		cli_warnx("out of memory");
		goto done;
	}
	rv = 0;
 done:
	buf_free(&raw);
	buf_free(&enc);
	return rv;
}

/* Pass signal signo on to the process, on a second connection. */
static int
cli_run_forward(struct cli_run *r, int signo)
{
	struct cli_http	h;

	cli_http_init(&h, "POST");
	h.quiet = 1;
	if (cli_proc_target(&h, r->id, "/kill") == -1 ||
	    (h.json = cJSON_CreateObject()) == NULL ||
	    cJSON_AddNumberToObject(h.json, "signal", signo) == NULL) {
		cli_http_free(&h);
		return -1;
	}
	/* Too late (409: it ended) is no error: the stream tells the end. */
	if (cli_call(r->c, &h) != CLI_OK && h.status != 409 &&
	    h.status != 404 && h.status != 0)
		cli_print_error(r->c, &h);
	cli_http_free(&h);
	return 0;
}

static int
cli_run_wake(void *arg)
{
	struct cli_run			*r = arg;
	struct signalfd_siginfo		 si;
	ssize_t				 n;

	while ((n = read(r->sigfd, &si, sizeof(si))) == sizeof(si)) {
		/*
		 * Before the reply the process may not exist yet: keep the
		 * signal until it does.
		 */
		if (!r->started) {
			if (r->npending < CLI_MAX_PENDING)
				r->pending[r->npending++] = si.ssi_signo;
			continue;
		}
		cli_run_forward(r, si.ssi_signo);
	}
	return 0;
}

static int
cli_run_head(void *arg, struct cli_http *h)
{
	struct cli_run	*r = arg;
	int		 i;

	if (h->status != 200)
		return 0;
	r->started = 1;
	r->sse_mode = strncasecmp(h->ctype, "text/event-stream", 17) == 0;
	if (!r->sse_mode)
		h->stream = NULL;	/* exec's JSON: kept in h->reply */
	for (i = 0; i < r->npending; i++)
		cli_run_forward(r, r->pending[i]);
	r->npending = 0;
	return 0;
}

static int
cli_run_body(void *arg, const char *d, size_t n)
{
	struct cli_run	*r = arg;

	if (r->sse_mode)
		return cli_sse_feed(&r->sse, d, n);
	return 0;
}

/*
 * An agent that answered exec with JSON, not a stream: the whole output
 * at once, {"id","exit","stdout","stderr",...}.
 */
static int
cli_run_json(struct cli_http *h)
{
	const char	*s;
	cJSON		*j;
	int		 code;

	if ((j = cli_reply_json(h)) == NULL) {
		cli_warnx("bad reply from the agent: not JSON");
		return CLI_REFUSED;
	}
	if (((s = cli_str(j, "stdout")) != NULL &&
	    cli_write_b64(STDOUT_FILENO, s) == -1) ||
	    ((s = cli_str(j, "stderr")) != NULL &&
	    cli_write_b64(STDERR_FILENO, s) == -1)) {
		cJSON_Delete(j);
		return CLI_REFUSED;
	}
	code = cli_int(cJSON_GetObjectItemCaseSensitive(j, "exit"), "code",
	    -1);
	cJSON_Delete(j);
	if (code < 0) {
		cli_warnx("bad reply from the agent: no exit code");
		return CLI_REFUSED;
	}
	return code > 255 ? 255 : code;
}

static int
cli_run(struct cli *c)
{
	struct cli_run	 r;
	struct cli_http	 h;
	sigset_t	 mask, omask;
	unsigned char	 rnd[4];
	char		 gen[64], hex[9];
	int		 rv;

	memset(&r, 0, sizeof(r));
	r.c = c;
	r.sigfd = -1;
	r.id = c->id;
	if (r.id == NULL) {
		/* The stream's events carry no id: choose it here. */
		if (getrandom(rnd, sizeof(rnd), 0) != sizeof(rnd))
			memset(rnd, 0, sizeof(rnd));
		codec_hex(hex, rnd, sizeof(rnd));
		snprintf(gen, sizeof(gen), "run-%ld-%s", (long)getpid(), hex);
		r.id = gen;
	}

	cli_http_init(&h, "POST");
	h.accept = c->json ? "application/json" : "text/event-stream";
	/*
	 * exec's JSON reply comes when the process has ended: a signal is
	 * passed on at once (lost if the process does not exist yet).
	 */
	r.started = c->json;
	if (buf_addstr(&h.target, "/v1/exec") == -1 ||
	    (h.json = cli_launch_body(c, r.id)) == NULL) {
		cli_warnx("out of memory");
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	if (c->with_stdin && cli_run_stdin(h.json) == -1) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}

	/*
	 * The signals to pass on arrive as a readable fd beside the socket,
	 * so no handler has to interrupt a blocking call.
	 */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, &omask) == 0)
		r.sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	h.wakefd = r.sigfd;
	h.wake = r.sigfd != -1 ? cli_run_wake : NULL;
	h.head = cli_run_head;
	h.stream = cli_run_body;
	h.arg = &r;
	h.failcode = CLI_UNREACHABLE;

	rv = cli_call(c, &h);
	if (rv == CLI_OK && c->json && !r.sse_mode)
		cli_print_raw(stdout, buf_head(&h.reply), buf_avail(&h.reply));
	else if (rv == CLI_OK && !r.sse_mode)
		rv = cli_run_json(&h);
	else if (rv == CLI_OK && r.sse.ended)
		rv = r.sse.code < 0 ? CLI_REFUSED : r.sse.code;
	else if (rv == CLI_OK) {
		cli_warnx("the agent closed the stream before the process "
		    "ended (see `tend status %s`)", r.id);
		rv = CLI_UNREACHABLE;
	}
	if (r.sigfd != -1)
		close(r.sigfd);
	sigprocmask(SIG_SETMASK, &omask, NULL);
	cli_sse_free(&r.sse);
	cli_http_free(&h);
	return rv;
}

/*
 * One JSON poll of a process's output after since (NULL: from the start):
 * {"stdout","stderr" (base64),"cursor","ended"}.  The reply is in h (the
 * caller frees it) when CLI_OK.
 */
static int
cli_poll_once(struct cli *c, const char *id, const char *since,
    int64_t limit, struct cli_http *h)
{
	char	arg[24];
	int	rv;

	cli_http_init(h, "GET");
	h->accept = "application/json";
	h->boot = c->boot;
	snprintf(arg, sizeof(arg), "%lld", (long long)limit);
	if (cli_proc_target(h, id, "/logs") == -1 ||
	    (since != NULL && cli_query(h, "since", since) == -1) ||
	    (limit > 0 && cli_query(h, "limitBytes", arg) == -1)) {
		cli_http_free(h);
		return CLI_REFUSED;
	}
	if ((rv = cli_call(c, h)) != CLI_OK)
		cli_http_free(h);
	return rv;
}

static int
cli_logs(struct cli *c)
{
	struct cli_sse	 s;
	struct cli_http	 h;
	int		 rv;

	if (c->json) {
		if ((rv = cli_poll_once(c, c->args[0], c->since,
		    c->limit_bytes, &h)) != CLI_OK)
			return rv;
		cli_print_raw(stdout, buf_head(&h.reply), buf_avail(&h.reply));
		cli_http_free(&h);
		return CLI_OK;
	}
	memset(&s, 0, sizeof(s));
	s.streams = c->streams;
	cli_http_init(&h, "GET");
	h.accept = "text/event-stream";
	h.boot = c->boot;
	h.stream = cli_sse_feed;
	h.arg = &s;
	if (cli_proc_target(&h, c->args[0], "/logs") == -1 ||
	    (c->follow && cli_query(&h, "follow", "1") == -1) ||
	    (c->since && cli_query(&h, "since", c->since) == -1)) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	rv = cli_call(c, &h);
	/* A follower that lost the stream can resume where it stopped. */
	if ((rv == CLI_UNREACHABLE || (rv == CLI_OK && c->follow &&
	    !s.ended)) && s.cursor[0] != '\0') {
		if (rv == CLI_OK)
			cli_warnx("the agent closed the stream before the "
			    "process ended");
		cli_warnx("resume with: tend logs -f --since %s %s",
		    s.cursor, c->args[0]);
		rv = CLI_UNREACHABLE;
	}
	cli_sse_free(&s);
	cli_http_free(&h);
	return rv;
}

static int
cli_status(struct cli *c)
{
	struct cli_http	h;
	int		rv;

	cli_http_init(&h, "GET");
	h.boot = c->boot;
	if (cli_proc_target(&h, c->args[0], "") == -1)
		return CLI_REFUSED;
	if ((rv = cli_call(c, &h)) == CLI_OK && c->json)
		cli_print_raw(stdout, buf_head(&h.reply), buf_avail(&h.reply));
	else if (rv == CLI_OK)
		cli_print_json(buf_head(&h.reply), buf_avail(&h.reply));
	cli_http_free(&h);
	return rv;
}

/*
 * One POST .../wait?timeout=ms.  CLI_OK with the reply in h (the caller
 * frees it) and its status in *st, *running set; or an exit code.
 */
static int
cli_wait_once(struct cli *c, const char *id, int64_t ms, struct cli_http *h,
    cJSON **st, int *running)
{
	const char	*state;
	char		 arg[24];
	int		 rv;

	*st = NULL;
	snprintf(arg, sizeof(arg), "%lld", (long long)(ms < 1 ? 1 : ms));
	cli_http_init(h, "POST");
	if (cli_proc_target(h, id, "/wait") == -1 ||
	    cli_query(h, "timeout", arg) == -1) {
		cli_http_free(h);
		return CLI_REFUSED;
	}
	if ((rv = cli_call(c, h)) != CLI_OK) {
		cli_http_free(h);
		return rv;
	}
	if ((*st = cli_reply_json(h)) == NULL ||
	    (state = cli_str(*st, "state")) == NULL) {
		cli_report(c, "bad_reply", "bad reply from the agent: no state");
		cJSON_Delete(*st);
		*st = NULL;
		cli_http_free(h);
		return CLI_REFUSED;
	}
	*running = strcmp(state, "running") == 0;
	return CLI_OK;
}

/*
 * Wait in pieces: a call held open for hours would outlive proxies and
 * idle timeouts, and a piece that ends still "running" costs one request.
 */
static int
cli_wait(struct cli *c)
{
	struct cli_http	 h;
	int64_t		 deadline = -1, piece;
	cJSON		*j;
	int		 rv, running, late;

	if (c->timeout_ms >= 0)
		deadline = codec_mono_ms() + c->timeout_ms;
	for (;;) {
		piece = CLI_WAIT_PIECE;
		if (deadline >= 0 && deadline - codec_mono_ms() < piece)
			piece = deadline - codec_mono_ms();
		if ((rv = cli_wait_once(c, c->args[0], piece, &h, &j,
		    &running)) != CLI_OK)
			return rv;
		late = running && deadline >= 0 && codec_mono_ms() >= deadline;
		if (!running || late)
			break;
		cJSON_Delete(j);
		cli_http_free(&h);
	}
	if (c->json) {
		cli_print_raw(stdout, buf_head(&h.reply), buf_avail(&h.reply));
		rv = late ? CLI_TIMEDOUT : CLI_OK;
	} else if (late) {
		cli_warnx("process '%s' still runs after the timeout",
		    c->args[0]);
		rv = CLI_TIMEDOUT;
	} else if ((rv = cli_exit_code(j, c->args[0])) < 0)
		rv = CLI_REFUSED;
	cJSON_Delete(j);
	cli_http_free(&h);
	return rv;
}

static int
cli_kill(struct cli *c)
{
	struct cli_http	h;
	int		rv;

	cli_http_init(&h, "POST");
	if (cli_proc_target(&h, c->args[0], "/kill") == -1 ||
	    (h.json = cJSON_CreateObject()) == NULL ||
	    cJSON_AddNumberToObject(h.json, "signal",
	    c->signo ? c->signo : SIGTERM) == NULL) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	rv = cli_call(c, &h);
	cli_http_free(&h);
	return rv;
}

static int
cli_send(struct cli *c)
{
	struct cli_http	h;
	int		rv;

	cli_http_init(&h, "POST");
	h.bodyfd = STDIN_FILENO;
	if (cli_proc_target(&h, c->args[0], "/stdin") == -1 ||
	    (c->close && cli_query(&h, "close", "1") == -1)) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	rv = cli_call(c, &h);
	cli_http_free(&h);
	return rv;
}

static int
cli_rm(struct cli *c)
{
	struct cli_http	h;
	int		rv;

	cli_http_init(&h, "DELETE");
	if (cli_proc_target(&h, c->args[0], "") == -1 ||
	    (c->force && cli_query(&h, "force", "1") == -1)) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	rv = cli_call(c, &h);
	cli_http_free(&h);
	return rv;
}

static int
cli_help(struct cli *c)
{
	const struct cli_cmd	*cmd;

	if (c->nargs == 0) {
		cli_main_help(stdout);
		return CLI_OK;
	}
	if ((cmd = cli_find(c->args[0])) == NULL) {
		cli_usage_error(c->cmd, "unknown command '%s'", c->args[0]);
		return CLI_USAGE;
	}
	cli_cmd_help(stdout, cmd);
	return CLI_OK;
}

/* ---------------------------------------------------------------------
 * Entry point.
 */

static void
cli_free(struct cli *c)
{
	cJSON_Delete(c->env);
	c->env = NULL;
	if (c->ready_log)
		regfree(&c->ready_re);
	c->ready_log = 0;
}

int
cli_main(int argc, char **argv)
{
	struct cli	 c;
	const char	*s;
	int		 i, rv;

	memset(&c, 0, sizeof(c));
	c.timeout_ms = -1;
	c.limit_bytes = -1;
	c.ready_ms = -1;
	c.sock = (s = getenv("TEND_SOCKET")) != NULL && *s != '\0' ? s :
	    CLI_SOCKET;

	if ((rv = cli_global(&c, argc, argv, &i)) != 0)
		return rv - 1;
	if ((c.cmd = cli_find(argv[i])) == NULL) {
		cli_usage_error(NULL, "unknown command '%s'", argv[i]);
		return CLI_USAGE;
	}
	if ((rv = cli_parse(&c, argc - i, argv + i)) != 0) {
		cli_free(&c);
		return rv - 1;
	}
	rv = c.cmd->run(&c);
	cli_free(&c);
	if (fflush(stdout) == EOF || ferror(stdout)) {
		cli_warnx("writing the output: %s", strerror(errno));
		if (rv == CLI_OK)
			rv = CLI_REFUSED;
	}
	return rv;
}
