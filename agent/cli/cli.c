/*
 * cli.c: tend's command line, what an operator types through
 * `docker exec box tend ps` — its grammar: the commands, their options,
 * the help made from them, the parsing, and cli_main, which dispatches to
 * a command's handler (cli_cmd.c, cli_run.c; cli.h lists the rooms).
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
 *	4	no such process (file commands: no such path)
 *	5	the ID is already taken (start/run --id)
 *	6	the process ended before it was ready (start --ready-*)
 *	124	wait --timeout or --ready-timeout ran out
 *	run and wait: the process's exit code (128+N if killed by signal N)
 *
 * With --json a command prints the route's JSON reply as it came, and an
 * error reply's JSON object on stderr: a program driving tend one exec per
 * step (docker exec, Cloudflare's container.exec) parses both.
 */
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

#include <cjson/cJSON.h>

#include "base/codec.h"
#include "base/tunables.h"

#include "cli.h"

#define CLI_SOCKET		"/run/tend.sock"

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
	OPT_RANGE,
	OPT_MODE,
	OPT_APPEND,
	OPT_RECURSIVE,
	OPT_DEPTH,
	OPT_EXCLUDE,
};

struct cli_opt {
	const char	*name;		/* long name */
	int		 letter;	/* short letter, or 0 */
	const char	*arg;		/* argument's name, NULL for a flag */
	int		 code;		/* enum cli_optcode */
	const char	*help;
};

#define CMD_ORDERED	0x1	/* options end at the first argument (argv) */
#define CMD_LAUNCH	0x2	/* takes the launch options */
#define CMD_PROCEXIT	0x4	/* exits with the process's exit code */
#define CMD_PATH	0x8	/* its argument is a path, not an ID */

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

/* getopt_long's tables for one command, made from its option rows. */
struct cli_getopt {
	struct option	 lo[CLI_MAX_OPTS + 1];
	char		 so[CLI_MAX_OPTS * 2 + 3];
};

static void	cli_usage_error(const struct cli_cmd *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static const struct cli_cmd *cli_find(const char *);
static int	cli_nopts(const struct cli_opt *);
static void	cli_help_opts(FILE *, const struct cli_opt *);
static void	cli_help_main(FILE *);
static void	cli_help_cmd(FILE *, const struct cli_cmd *);
static int	cli_global(struct cli *, int, char **, int *);
static void	cli_getopt(struct cli_getopt *, const struct cli_opt *const [2],
		    int);
static int	cli_parse(struct cli *, int, char **);
static int	cli_args(struct cli *);
static int	cli_letter(const struct cli_opt *const [2], int);
static int	cli_setopt(struct cli *, int, const char *);
static int	cli_setval(struct cli *, int, const char *);
static int	cli_setregex(struct cli *, const char *);
static int	cli_check(struct cli *);
static int64_t	cli_count(const char *);
static int	cli_seconds(const char *, int64_t *);
static int	cli_signal(const char *);
static int	cli_env(struct cli *, const char *);
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

static const struct cli_opt cli_opts_term[] = {
	{ "id", 0, "ID", OPT_ID, "the terminal's ID: attach, or create it" },
	{ "cwd", 0, "DIR", OPT_CWD, "working directory of a new terminal" },
	{ "env", 'e', "K=V", OPT_ENV,
	    "add K=V to a new terminal's environment (repeatable)" },
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_rm[] = {
	{ "force", 'f', NULL, OPT_FORCE, "kill the process first if it runs" },
	CLI_JSON_QUIET,
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_cat[] = {
	{ "range", 0, "A-B", OPT_RANGE,
	    "only bytes A to B (inclusive; A- or -N too)" },
	CLI_JSON_QUIET,
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_put[] = {
	{ "mode", 0, "MODE", OPT_MODE,
	    "permission bits, octal (a new file: 0644;\n"
	    "a replaced one keeps its own)" },
	{ "append", 0, NULL, OPT_APPEND,
	    "append to the file in place (no atomic replace)" },
	CLI_JSON_QUIET,
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_ls[] = {
	{ "recursive", 'R', NULL, OPT_RECURSIVE,
	    "list the whole tree (32 levels at most)" },
	{ "depth", 0, "N", OPT_DEPTH, "list N levels deep (1 to 32; 1)" },
	CLI_JSON_OPT("print the agent's {\"entries\":[...]}"),
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_watch[] = {
	{ "recursive", 'R', NULL, OPT_RECURSIVE,
	    "watch the directories below DIR too" },
	CLI_JSON_OPT("print each event as the agent's JSON, a line\n"
	    "each: {\"type\",\"path\",\"timestamp\"}"),
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_persist[] = {
	{ "exclude", 0, "P", OPT_EXCLUDE,
	    "leave out P, relative to DIR, and all below\n"
	    "it (repeatable)" },
	CLI_JSON_QUIET,
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_opt cli_opts_hydrate[] = {
	CLI_JSON_OPT("print the agent's {\"ok\":true}"),
	{ NULL, 0, NULL, 0, NULL }
};

static const struct cli_cmd cli_cmds[] = {
	{ "health", cli_cmd_health, cli_opts_health, "[--json]", 0, 0, 0,
	    "show the agent's boot ID, version, uptime and counts",
	    "Show the agent's boot ID, version, uptime and process counts." },
	{ "ps", cli_cmd_ps, cli_opts_ps,
	    "[-a] [--json] [--boot BOOT] [--terminals]", 0, 0, 0,
	    "list this boot's processes",
	    "List this boot's running processes (all of them with -a): ID,\n"
	    "PID, STATE, EXIT (code, signal or error), AGE (since start) and\n"
	    "COMMAND." },
	{ "start", cli_cmd_start, cli_opts_start, "[OPTIONS] -- ARGV...", 1, -1,
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
	{ "logs", cli_cmd_logs, cli_opts_logs,
	    "[-f] [--stdout|--stderr] [--since CURSOR] [--boot BOOT] ID\n"
	    "       tend logs --json [--since CURSOR] [--limit-bytes N] "
	    "[--boot BOOT] ID", 1, 1,
	    0, "print a process's stored output",
	    "Print the output stored for process ID, raw: its stdout to\n"
	    "stdout, its stderr to stderr.  A gap where the agent dropped\n"
	    "old output is reported on stderr.  With --json, print one\n"
	    "poll: {\"stdout\",\"stderr\" (base64), \"cursor\", \"ended\"};\n"
	    "pass its cursor to the next call's --since until ended." },
	{ "status", cli_cmd_status, cli_opts_status,
	    "[--json] [--boot BOOT] ID", 1, 1, 0,
	    "print a process's status as JSON",
	    "Print the status of process ID as JSON." },
	{ "wait", cli_cmd_wait, cli_opts_wait,
	    "[--json] [--timeout SECONDS] ID", 1, 1, CMD_PROCEXIT,
	    "wait for a process to end, exit with its code",
	    "Wait until process ID has ended (its whole process group) and\n"
	    "exit with its exit code.  A process in the error state (lost)\n"
	    "exits 1 with its message." },
	{ "kill", cli_cmd_kill, cli_opts_kill, "[-s SIGNAL] ID", 1, 1, 0,
	    "send a signal to a process's group",
	    "Send SIGNAL (default TERM) to the process group of ID." },
	{ "send", cli_cmd_send, cli_opts_send, "[--close] ID", 1, 1, 0,
	    "write tend's stdin to a process's stdin",
	    "Copy tend's stdin to the stdin of process ID (started with\n"
	    "--stdin) as it arrives, until end of file." },
	{ "rm", cli_cmd_rm, cli_opts_rm, "[-f] ID", 1, 1, 0,
	    "remove a process's record and stored output",
	    "Remove the record and stored output of an ended process ID." },
	{ "cat", cli_files_cat, cli_opts_cat, "[--range A-B] PATH", 1, 1,
	    CMD_PATH, "print a file's bytes",
	    "Print the bytes of file PATH (absolute, or relative to the\n"
	    "current directory), raw, as the agent reads it." },
	{ "put", cli_files_put, cli_opts_put,
	    "[--mode 0644] [--append] PATH < DATA", 1, 1, CMD_PATH,
	    "write stdin to a file, atomically",
	    "Write stdin, streamed as it is read, to PATH: the agent\n"
	    "writes a temp file beside it and renames it over PATH once\n"
	    "stdin ends, so that no reader sees half of it.  Missing\n"
	    "parent directories are made." },
	{ "ls", cli_files_ls, cli_opts_ls, "[-R|--depth N] [--json] PATH", 1,
	    1, CMD_PATH, "list a directory",
	    "List directory PATH: TYPE, MODE, SIZE, MTIME and NAME (and a\n"
	    "link's target) per entry; names below the first level are\n"
	    "relative to PATH.  A file is listed as itself." },
	{ "watch", cli_files_watch, cli_opts_watch, "[-R] [--json] DIR", 1, 1,
	    CMD_PATH, "print a directory's changes as they happen",
	    "Print the changes in directory DIR as they happen, a line\n"
	    "each: TYPE PATH, TYPE one of create, write, remove, rename\n"
	    "(the old name; the new one follows as a create) and chmod.\n"
	    "A file tend writes atomically is one create (or write).\n"
	    "Events the agent lost (the kernel's queue overflowed, or a\n"
	    "watch limit) are a line 'truncated DIR' and a warning.  Runs\n"
	    "until interrupted; ends (exit 0) when DIR is removed." },
	{ "persist", cli_files_persist, cli_opts_persist,
	    "[--exclude P]... DIR > ws.tar", 1, 1, CMD_PATH,
	    "write a directory as a tar stream to stdout",
	    "Write the tree under DIR as a tar archive to stdout (modes,\n"
	    "mtimes, symlinks and empty directories kept).  An archive the\n"
	    "agent could not finish ends the connection: exit 3." },
	{ "hydrate", cli_files_hydrate, cli_opts_hydrate, "DIR < ws.tar", 1,
	    1, CMD_PATH, "extract a tar stream from stdin into a directory",
	    "Extract the tar archive on stdin (plain or gzip) into DIR,\n"
	    "made if missing.  Entries that would land outside DIR\n"
	    "(absolute, '..', through a link, devices) are refused: exit 1,\n"
	    "entries before the refused one stay." },
	{ "term", cli_term, cli_opts_term,
	    "[--id ID] [--cwd DIR] [-e K=V] [-- ARGV...]", 0, -1, CMD_ORDERED,
	    "attach this terminal to a tend terminal",
	    "Attach the caller's terminal to terminal ID (created when the\n"
	    "ID is new; without --id, a new one), running ARGV or the login\n"
	    "shell: its retained output is replayed first.  Ctrl-] detaches\n"
	    "and leaves it running (exit 0); when its process ends, tend\n"
	    "exits with its exit code." },
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
    "  4    no such process (or, for the file commands, path)\n"
    "  5    the ID is already taken (start/run --id)\n"
    "  6    the process ended before it was ready (start --ready-*)\n"
    "  124  wait --timeout or start --ready-timeout ran out (the process\n"
    "       keeps running)\n"
    "run and wait without --json exit with the process's exit code\n"
    "(128+N if killed by signal N, 1 if lost); with --json they exit 0\n"
    "once the reply is printed (the code is in it).\n";

/* ---------------------------------------------------------------------
 * Failures.
 */

void
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

/*
 * A failure that is not the agent's reply: "tend: msg", or with --json
 * the same shape as the agent's errors, {"error":msg,"code":code}.
 */
void
cli_report(const struct cli *c, const char *code, const char *fmt, ...)
{
	va_list	 ap;
	char	 msg[CLI_MSG_MAX], *s;
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

/* ---------------------------------------------------------------------
 * Help.
 */

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
cli_help_opts(FILE *f, const struct cli_opt *o)
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
cli_help_main(FILE *f)
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
	cli_help_opts(f, cli_opts_common);
	fprintf(f, "      --version          print tend's version\n\n"
	    "`tend COMMAND --help` lists the options of a command.  Every\n"
	    "command takes --json: the agent's JSON reply on stdout, an\n"
	    "error's JSON object on stderr.\n\n%s", cli_exits);
}

static void
cli_help_cmd(FILE *f, const struct cli_cmd *cmd)
{
	fprintf(f, "usage: tend %s %s\n\n%s\n\nOptions:\n", cmd->name,
	    cmd->synopsis, cmd->help);
	cli_help_opts(f, cmd->opts);
	cli_help_opts(f, cli_opts_common);
	fprintf(f, "\n%s", cli_exits);
}

/* tend help [COMMAND]: the grammar's own command. */
static int
cli_help(struct cli *c)
{
	const struct cli_cmd	*cmd;

	if (c->nargs == 0) {
		cli_help_main(stdout);
		return CLI_OK;
	}
	if ((cmd = cli_find(c->args[0])) == NULL) {
		cli_usage_error(c->cmd, "unknown command '%s'", c->args[0]);
		return CLI_USAGE;
	}
	cli_help_cmd(stdout, cmd);
	return CLI_OK;
}

/* ---------------------------------------------------------------------
 * Parsing.
 */

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
			cli_help_main(stdout);
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

/* getopt_long's long and short tables from the command's option rows. */
static void
cli_getopt(struct cli_getopt *g, const struct cli_opt *const tabs[2],
    int flags)
{
	const struct cli_opt	*o;
	size_t			 nso = 0;
	int			 nlo = 0, t;

	if (cli_nopts(tabs[0]) + cli_nopts(tabs[1]) > CLI_MAX_OPTS)
		abort();
	if (flags & CMD_ORDERED)
		g->so[nso++] = '+';	/* the rest is the process's argv */
	g->so[nso++] = ':';		/* tell a missing argument apart */
	for (t = 0; t < 2; t++) {
		for (o = tabs[t]; o->name != NULL; o++) {
			g->lo[nlo].name = o->name;
			g->lo[nlo].has_arg = o->arg ? required_argument :
			    no_argument;
			g->lo[nlo].flag = NULL;
			g->lo[nlo].val = o->code;
			nlo++;
			if (o->letter) {
				g->so[nso++] = o->letter;
				if (o->arg)
					g->so[nso++] = ':';
			}
		}
	}
	memset(&g->lo[nlo], 0, sizeof(g->lo[nlo]));
	g->so[nso] = '\0';
}

/*
 * The command's options and arguments, with getopt_long over a table made
 * from its option rows.  0, or the exit code + 1 (help, usage error).
 */
static int
cli_parse(struct cli *c, int argc, char **argv)
{
	const struct cli_opt	*tabs[2] = { c->cmd->opts, cli_opts_common };
	struct cli_getopt	 g;
	int			 ch, rv;

	cli_getopt(&g, tabs, c->cmd->flags);
	optind = 0;		/* glibc: start afresh */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, g.so, g.lo, NULL)) != -1) {
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
	return cli_args(c);
}

/* As many arguments as the command takes.  0, or the exit code + 1. */
static int
cli_args(struct cli *c)
{
	if (c->nargs < c->cmd->minargs) {
		cli_usage_error(c->cmd, "%s", c->cmd->flags & CMD_LAUNCH ?
		    "no command to run given" : c->cmd->flags & CMD_PATH ?
		    "missing the path" : "missing the process ID");
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
	switch (code) {
	case OPT_HELP:
		cli_help_cmd(stdout, c->cmd);
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
	case OPT_USER:
		c->user = arg;
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
	case OPT_CLOSE:
		c->close = 1;
		break;
	case OPT_FORCE:
		c->force = 1;
		break;
	case OPT_TERMINALS:
		c->terminals = 1;
		break;
	case OPT_RANGE:
		c->range = arg;
		break;
	case OPT_MODE:
		c->mode = arg;
		break;
	case OPT_APPEND:
		c->append = 1;
		break;
	case OPT_RECURSIVE:
		c->depth = FILES_LIST_DEPTH_MAX;
		break;
	default:
		return cli_setval(c, code, arg);
	}
	return 0;
}

/* Apply one option whose argument is a value to check.  0, or code + 1. */
static int
cli_setval(struct cli *c, int code, const char *arg)
{
	int64_t	n;

	switch (code) {
	case OPT_ENV:
		if (cli_env(c, arg) == -1) {
			cli_usage_error(c->cmd, "bad -e '%s': want K=V", arg);
			return CLI_USAGE + 1;
		}
		break;
	case OPT_TIMEOUT:
		if (cli_seconds(arg, &c->timeout_ms) == -1 ||
		    (c->timeout_ms == 0 && (c->cmd->flags & CMD_LAUNCH))) {
			cli_usage_error(c->cmd, "bad --timeout '%s': want "
			    "seconds, e.g. 30 or 1.5", arg);
			return CLI_USAGE + 1;
		}
		break;
	case OPT_SIGNAL:
		if ((c->signo = cli_signal(arg)) == -1) {
			cli_usage_error(c->cmd, "unknown signal '%s'", arg);
			return CLI_USAGE + 1;
		}
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
	case OPT_DEPTH:
		if ((n = cli_count(arg)) < 1 || n > FILES_LIST_DEPTH_MAX) {
			cli_usage_error(c->cmd, "bad --depth '%s': want 1 to "
			    "%d", arg, FILES_LIST_DEPTH_MAX);
			return CLI_USAGE + 1;
		}
		c->depth = (int)n;
		break;
	case OPT_EXCLUDE:
		if (strchr(arg, ',') != NULL || *arg == '\0') {
			cli_usage_error(c->cmd, "bad --exclude '%s': a "
			    "non-empty path without ','", arg);
			return CLI_USAGE + 1;
		}
		if ((buf_avail(&c->excludes) > 0 &&
		    buf_add(&c->excludes, ",", 1) == -1) ||
		    buf_addstr(&c->excludes, arg) == -1)
			return CLI_REFUSED + 1;
		break;
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
	uint64_t	n;

	if (codec_parse_u64(s, &n) == -1 || n > INT64_MAX)
		return -1;
	return (int64_t)n;
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
	    d < 0 || d > CLI_SECONDS_MAX)
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
		if (errno != 0 || *end != '\0' || n < 1 || n >= NSIG)
			return -1;
		return (int)n;
	}
	if (strncasecmp(s, "SIG", 3) == 0)
		s += 3;
	for (i = 1; i < NSIG; i++)
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
 * Entry point.
 */

static void
cli_free(struct cli *c)
{
	cJSON_Delete(c->env);
	c->env = NULL;
	buf_free(&c->excludes);
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
