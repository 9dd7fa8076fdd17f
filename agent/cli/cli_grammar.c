/*
 * cli_grammar.c: the CLI's grammar as tables, bgpctl's parser.c: every
 * subcommand a row of cli_cmds (name, handler, option rows, synopsis,
 * help), every option a row of struct opt (base/opt.h) that says where
 * its value goes in struct cli and which parser checks it.  cli.c makes
 * getopt_long's tables and the help from these rows, so parsing and help
 * cannot disagree.  The few values no kind of opt parses (a signal, K=V,
 * a regex, a list) have their parser here, beside their rows.
 */
#include <errno.h>
#include <limits.h>
#include <regex.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/opt.h"
#include "base/tunables.h"
#include "base/util.h"
#include "base/codec.h"

#include "cli.h"

#define CLI_QUOTE_(s)	#s
#define CLI_QUOTE(s)	CLI_QUOTE_(s)

/* Seconds, for every option that takes them. */
#define CLI_WANT_SECONDS	"want seconds, e.g. 30 or 1.5"

/* Rows of struct opt whose values go into struct cli. */
#define CLI_FLAG(n, l, field, h)					\
	{ .name = (n), .letter = (l), .kind = OPT_FLAG,			\
	  .off = offsetof(struct cli, field), .help = (h) }
/* A flag that sets field to v. */
#define CLI_FLAGV(n, l, field, v, h)					\
	{ .name = (n), .letter = (l), .kind = OPT_FLAG,			\
	  .off = offsetof(struct cli, field), .val = (v), .help = (h) }
#define CLI_STR(n, l, a, field, h)					\
	{ .name = (n), .letter = (l), .arg = (a), .kind = OPT_STR,	\
	  .off = offsetof(struct cli, field), .help = (h) }
/* k: OPT_INT or OPT_INT64, from lo to hi. */
#define CLI_COUNT(n, a, k, field, lo, hi, w, h)				\
	{ .name = (n), .arg = (a), .kind = (k),				\
	  .off = offsetof(struct cli, field), .min = (lo), .max = (hi),	\
	  .want = (w), .help = (h) }
/* Milliseconds; lo 1: more than zero. */
#define CLI_MS(n, a, field, lo, h)					\
	{ .name = (n), .arg = (a), .kind = OPT_MS,			\
	  .off = offsetof(struct cli, field), .min = (lo),		\
	  .want = CLI_WANT_SECONDS, .help = (h) }
#define CLI_FUNC(n, l, a, fn, v, h)					\
	{ .name = (n), .letter = (l), .arg = (a), .kind = OPT_FUNC,	\
	  .set = (fn), .val = (v), .help = (h) }
#define CLI_ACTION(n, l, h)						\
	{ .name = (n), .letter = (l), .kind = OPT_ACTION, .help = (h) }
/* A size in bytes (K M G T binary suffixes) into an int64_t field. */
#define CLI_SIZE(n, field, h)						\
	{ .name = (n), .arg = "SIZE", .kind = OPT_FUNC,			\
	  .off = offsetof(struct cli, field), .set = cli_opt_size,	\
	  .help = (h) }

static opt_set_fn	cli_opt_env;
static opt_set_fn	cli_opt_signal;
static opt_set_fn	cli_opt_regex;
static opt_set_fn	cli_opt_exclude;
static opt_set_fn	cli_opt_type;
static opt_set_fn	cli_opt_stream;
static opt_set_fn	cli_opt_size;
static opt_set_fn	cli_opt_cpus;
static int		cli_signal(const char *);

/* ---------------------------------------------------------------------
 * The grammar.
 */

/* Every command takes these. */
const struct opt cli_opts_common[] = {
	CLI_STR("socket", 'S', "PATH", sock,
	    "the agent's socket (env TEND_SOCKET,\ndefault " CLI_SOCKET ")"),
	CLI_ACTION("help", 'h', "show this help"),
	OPT_END
};

static const struct opt cli_opts_none[] = {
	OPT_END
};

/* --json: the route's reply on stdout, an error's JSON on stderr. */
#define CLI_JSON_OPT(what)	CLI_FLAG("json", 0, json, what)

static const struct opt cli_opts_health[] = {
	CLI_JSON_OPT("print the agent's JSON reply"),
	OPT_END
};

static const struct opt cli_opts_upgrade[] = {
	CLI_JSON_OPT("print the new agent's health as JSON"),
	OPT_END
};

static const struct opt cli_opts_ps[] = {
	CLI_FLAG("all", 'a', all, "also list processes that have ended"),
	CLI_JSON_OPT("print the JSON array of statuses"),
	CLI_STR("boot", 0, "BOOT", boot, "list an earlier boot's processes"),
	CLI_FLAG("terminals", 0, terminals,
	    "list terminals (GET /v1/terminals, the\n"
	    "agent's JSON array as it came)"),
	CLI_FLAG("resources", 0, resources,
	    "add the columns CPU (seconds), MEM, PEAK and\n"
	    "PIDS: each process's cgroup usage"),
	OPT_END
};

#define CLI_LAUNCH_OPTS							\
	CLI_STR("id", 0, "ID", id,					\
	    "the process's ID, unique in this boot\n"			\
	    "([A-Za-z0-9][A-Za-z0-9._-]*, at most 128)"),		\
	CLI_STR("cwd", 0, "DIR", cwd, "working directory"),		\
	CLI_FUNC("env", 'e', "K=V", cli_opt_env, 0,			\
	    "add K=V to the environment (repeatable);\n"		\
	    "a plain K passes on tend's own value"),			\
	CLI_STR("user", 0, "USER", user, "run as this user name or uid"),\
	CLI_MS("timeout", "SECONDS", timeout_ms, 1,			\
	    "TERM the process (its cgroup, else its\n"			\
	    "group) after this long, then KILL"),			\
	CLI_SIZE("memory", memory,					\
	    "memory limit (memory.max): bytes, or with\n"		\
	    "K, M, G, T (binary: 256M is 256 MiB)"),			\
	CLI_SIZE("memory-high", memory_high,				\
	    "memory above which it is throttled and\n"		\
	    "reclaimed (memory.high), as --memory"),			\
	CLI_COUNT("pids", "N", OPT_INT64, pids, 1, INT64_MAX,		\
	    "want a whole number > 0",					\
	    "at most N processes and threads (pids.max)"),		\
	CLI_FUNC("cpus", 0, "F", cli_opt_cpus, 0,			\
	    "CPU time, in CPUs: 0.5 is half of one\n"			\
	    "(cpu.max)")

static const struct opt cli_opts_start[] = {
	CLI_LAUNCH_OPTS,
	CLI_FLAG("stdin", 0, with_stdin,
	    "give the process a stdin pipe, fed by `tend send`"),
	CLI_JSON_OPT("print the ProcessStatus, not the ID"),
	CLI_COUNT("ready-port", "PORT", OPT_INT, ready_port, 1, 65535,
	    "want 1 to 65535",
	    "return once the process (or a descendant)\n"
	    "listens on TCP PORT"),
	CLI_FUNC("ready-log", 0, "REGEX", cli_opt_regex, 0,
	    "return once a line of its stdout or stderr\n"
	    "matches REGEX (POSIX extended; a plain\n"
	    "string is looked for by the agent)"),
	CLI_MS("ready-timeout", "S", ready_ms, 0,
	    "give up waiting for ready after this long:\n"
	    "exit 124, the process keeps running (60)"),
	CLI_STR("restart", 0, "POLICY", restart,
	    "run it again when it ends: on-failure (a\n"
	    "non-zero exit or a crash), always, or no"),
	CLI_COUNT("max-restarts", "N", OPT_INT64, max_restarts, 0, INT_MAX,
	    "want a whole number >= 0",
	    "give up after N restarts (default: more\n"
	    "than 10 within 5 minutes)"),
	CLI_MS("backoff", "S", backoff_ms, 0,
	    "wait before the first restart (0.5); it\n"
	    "doubles each time, back to it after 10 s up"),
	CLI_MS("max-backoff", "S", max_backoff_ms, 0,
	    "the longest wait between two runs (30)"),
	OPT_END
};

static const struct opt cli_opts_run[] = {
	CLI_LAUNCH_OPTS,
	CLI_FLAG("stdin", 0, with_stdin,
	    "pass tend's stdin, read to its end, to the\n"
	    "process (at most 720 KiB: for more, use\n"
	    "start --stdin and send)"),
	CLI_JSON_OPT("print exec's JSON reply (output in base64)\n"
	    "and exit 0; the exit code is in it"),
	OPT_END
};

static const struct opt cli_opts_logs[] = {
	CLI_FLAG("follow", 'f', follow,
	    "keep printing new output until the process ends"),
	CLI_FUNC("stdout", 0, NULL, cli_opt_stream, STREAM_OUT,
	    "print only the process's stdout"),
	CLI_FUNC("stderr", 0, NULL, cli_opt_stream, STREAM_ERR,
	    "print only the process's stderr"),
	CLI_STR("since", 0, "CURSOR", since,
	    "start after this cursor (an SSE event id)"),
	CLI_STR("boot", 0, "BOOT", boot, "read a process of an earlier boot"),
	CLI_JSON_OPT("print one JSON poll instead: what is stored\n"
	    "after --since (base64) and the next cursor"),
	CLI_COUNT("limit-bytes", "N", OPT_INT64, limit_bytes, 1, INT64_MAX,
	    "want a positive number of bytes",
	    "with --json: about N bytes at most (1 MiB)"),
	OPT_END
};

static const struct opt cli_opts_status[] = {
	CLI_STR("boot", 0, "BOOT", boot, "read a process of an earlier boot"),
	CLI_JSON_OPT("print the agent's reply as it came"),
	OPT_END
};

static const struct opt cli_opts_wait[] = {
	CLI_MS("timeout", "SECONDS", timeout_ms, 0,
	    "give up after this long: exit 124, the\n"
	    "process keeps running"),
	CLI_JSON_OPT("print the final status (the running one on\n"
	    "timeout) and exit 0 (124 on timeout)"),
	OPT_END
};

/* kill, send, rm: nothing to print; --json makes errors JSON. */
#define CLI_JSON_QUIET	CLI_JSON_OPT("print errors as the agent's JSON object")

static const struct opt cli_opts_kill[] = {
	CLI_FUNC("signal", 's', "SIGNAL", cli_opt_signal, 0,
	    "a number or name: TERM (default), SIGKILL, 9, ..."),
	CLI_JSON_QUIET,
	OPT_END
};

static const struct opt cli_opts_send[] = {
	CLI_FLAG("close", 0, close, "close the process's stdin afterwards"),
	CLI_JSON_QUIET,
	OPT_END
};

static const struct opt cli_opts_term[] = {
	CLI_STR("id", 0, "ID", id, "the terminal's ID: attach, or create it"),
	CLI_STR("cwd", 0, "DIR", cwd, "working directory of a new terminal"),
	CLI_FUNC("env", 'e', "K=V", cli_opt_env, 0,
	    "add K=V to a new terminal's environment (repeatable)"),
	OPT_END
};

static const struct opt cli_opts_rm[] = {
	CLI_FLAG("force", 'f', force, "kill the process first if it runs"),
	CLI_JSON_QUIET,
	OPT_END
};

static const struct opt cli_opts_cat[] = {
	CLI_STR("range", 0, "A-B", range,
	    "only bytes A to B (inclusive; A- or -N too)"),
	CLI_JSON_QUIET,
	OPT_END
};

static const struct opt cli_opts_put[] = {
	CLI_STR("mode", 0, "MODE", mode,
	    "permission bits, octal (a new file: 0644;\n"
	    "a replaced one keeps its own)"),
	CLI_FLAG("append", 0, append,
	    "append to the file in place (no atomic replace)"),
	CLI_JSON_QUIET,
	OPT_END
};

static const struct opt cli_opts_ls[] = {
	CLI_FLAGV("recursive", 'R', depth, FILES_LIST_DEPTH_MAX,
	    "list the whole tree (32 levels at most)"),
	CLI_COUNT("depth", "N", OPT_INT, depth, 1, FILES_LIST_DEPTH_MAX,
	    "want 1 to " CLI_QUOTE(FILES_LIST_DEPTH_MAX),
	    "list N levels deep (1 to 32; 1)"),
	CLI_JSON_OPT("print the agent's {\"entries\":[...]}"),
	OPT_END
};

static const struct opt cli_opts_watch[] = {
	CLI_FLAGV("recursive", 'R', depth, FILES_LIST_DEPTH_MAX,
	    "watch the directories below DIR too"),
	CLI_JSON_OPT("print each event as the agent's JSON, a line\n"
	    "each: {\"type\",\"path\",\"timestamp\"}"),
	OPT_END
};

static const struct opt cli_opts_persist[] = {
	CLI_FUNC("exclude", 0, "P", cli_opt_exclude, 0,
	    "leave out P, relative to DIR, and all below\n"
	    "it (repeatable)"),
	CLI_JSON_QUIET,
	OPT_END
};

static const struct opt cli_opts_freeze[] = {
	CLI_JSON_OPT("print the agent's reply: the status, or\n"
	    "without ID {\"frozen\",\"processes\",\"terminals\"}"),
	OPT_END
};

static const struct opt cli_opts_events[] = {
	CLI_FLAG("follow", 'f', follow,
	    "keep printing events as they happen"),
	CLI_STR("since", 0, "CURSOR", since,
	    "start after this cursor (an event's), or\n"
	    "'end': only what happens next"),
	CLI_FUNC("type", 't', "TYPE", cli_opt_type, 0,
	    "only events of TYPE; one ending in '.' is a\n"
	    "prefix: process. (repeatable)"),
	CLI_STR("id", 0, "ID", id, "only events of process or terminal ID"),
	CLI_STR("boot", 0, "BOOT", boot, "read an earlier boot's events"),
	CLI_JSON_OPT("print each event as the agent's JSON, a line\n"
	    "each"),
	OPT_END
};

static const struct opt cli_opts_ports[] = {
	CLI_JSON_OPT("print the agent's JSON array: {\"port\",\"address\",\n"
	    "\"pid\",\"id\"} each"),
	OPT_END
};

static const struct opt cli_opts_hydrate[] = {
	CLI_JSON_OPT("print the agent's {\"ok\":true}"),
	OPT_END
};

const struct cli_cmd cli_cmds[] = {
	{ "health", cli_cmd_health, cli_opts_health, "[--json]", 0, 0, 0,
	    "show the agent's boot ID, version, uptime and counts",
	    "Show the agent's boot ID, version, uptime and process counts." },
	{ "ports", cli_ports, cli_opts_ports, "[--json]", 0, 0, 0,
	    "list the listening TCP ports and their owners",
	    "List the TCP sockets that listen in the agent's network\n"
	    "namespace (IPv4 and IPv6), by port: PORT, ADDRESS, PID (the\n"
	    "process that holds it, \"-\" when none of those the agent\n"
	    "sees does) and ID (the process or terminal of tend's that\n"
	    "started it or its ancestor, \"-\" when none)." },
	{ "ps", cli_cmd_ps, cli_opts_ps,
	    "[-a] [--json] [--resources] [--boot BOOT] [--terminals]", 0, 0,
	    0, "list this boot's processes",
	    "List this boot's running processes (all of them with -a): ID,\n"
	    "PID, STATE, EXIT (code, signal or error; \"137 (OOM)\" when the\n"
	    "OOM killer killed it), AGE (since start) and COMMAND.  With\n"
	    "--resources also CPU (seconds used), MEM (memory now), PEAK\n"
	    "(its most) and PIDS (processes now) of each one's cgroup: \"-\"\n"
	    "where the agent has no such figure (no cgroups, or no such\n"
	    "controller); an ended process keeps its final figures." },
	{ "start", cli_cmd_start, cli_opts_start, "[OPTIONS] -- ARGV...", 1, -1,
	    CMD_ORDERED | CMD_LAUNCH,
	    "start a process in the background and print its ID",
	    "Start ARGV (looked up in PATH) in its own session and process\n"
	    "group (and cgroup, where the agent has cgroups) and print its\n"
	    "ID.  The agent stores its output: see `tend logs`.  With\n"
	    "--ready-port or --ready-log, return only once the process is\n"
	    "ready (both, if both are given): exit 6 if it ends first, 124\n"
	    "if --ready-timeout runs out.  --memory, --memory-high, --pids\n"
	    "and --cpus limit its cgroup; an agent without the controller\n"
	    "refuses them (exit 1, limits_unavailable): never ignored.\n"
	    "--restart keeps it running: the same ID, runs numbered (`tend\n"
	    "status` shows run, restarts and the policy's state); `tend\n"
	    "wait` returns once no run is due, `tend kill` stops the policy." },
	{ "run", cli_run, cli_opts_run, "[OPTIONS] -- ARGV...", 1, -1,
	    CMD_ORDERED | CMD_LAUNCH | CMD_PROCEXIT,
	    "run a process, stream its output, exit with its code",
	    "Run ARGV and stream its output as it comes: its stdout to\n"
	    "stdout, its stderr to stderr.  SIGINT (Ctrl-C), SIGTERM and\n"
	    "SIGHUP are passed on to the process's group; SIGQUIT (Ctrl-\\)\n"
	    "leaves tend and lets the process run.  Without --id the ID is\n"
	    "run-<pid>-<random hex>; the output stays readable with\n"
	    "`tend logs`.  The limits are start's: refused (exit 1), never\n"
	    "ignored, where the agent lacks the controller." },
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
	{ "freeze", cli_cmd_freeze, cli_opts_freeze, "[--json] [ID]", 0, 1, 0,
	    "freeze a process, or every process and terminal",
	    "Freeze process ID (its whole cgroup), or without ID every\n"
	    "running process and terminal, and return once the kernel says\n"
	    "frozen: nothing runs until `tend thaw`; a timeout's clock\n"
	    "stands still meanwhile.  Without ID the agent also flushes its\n"
	    "state directory to disk first (before a snapshot).  The agent\n"
	    "itself is never frozen.  Needs cgroups (exit 1 without); a\n"
	    "freeze the kernel has not finished in 2 s is exit 1\n"
	    "(freeze_timeout) and stays asked." },
	{ "thaw", cli_cmd_thaw, cli_opts_freeze, "[--json] [ID]", 0, 1, 0,
	    "thaw a frozen process, or everything",
	    "Thaw process ID, or without ID every running process and\n"
	    "terminal: they run on from where they stopped." },
	{ "upgrade", cli_cmd_upgrade, cli_opts_upgrade, "[--json] PATH", 1, 1,
	    CMD_PATH, "replace the agent by another binary, processes kept",
	    "Ask the agent to exec PATH (another tend) in its place, as the\n"
	    "same PID and boot: the agent checks the binary first (exit 1\n"
	    "and the reason if it refuses it: not executable, a failed\n"
	    "handshake, another handover format; nothing changes), then\n"
	    "hands its processes, terminals, socket and shim over.  Returns\n"
	    "once the new agent answers; exit 7 if it does not within 10 s." },
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
	{ "events", cli_events, cli_opts_events,
	    "[-f] [--since CURSOR] [--type TYPE]... [--id ID] [--boot BOOT] "
	    "[--json]", 0, 0, 0,
	    "print the boot's lifecycle events",
	    "Print the boot's lifecycle events (process started, exited,\n"
	    "removed, terminals, the agent, the shim, the state dir), a\n"
	    "line each: TIME TYPE ID and the essentials.  Without -f, print\n"
	    "what there is and exit 0; with -f, keep printing as they\n"
	    "happen.  Cursors are the events' (--json shows them)." },
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

const size_t cli_ncmds = nitems(cli_cmds);

/* The exit codes, for tend help and every command's help. */
const char cli_exits[] =
    "Exit codes:\n"
    "  0    ok\n"
    "  1    the agent refused the request (its error on stderr; JSON\n"
    "       with --json)\n"
    "  2    usage error\n"
    "  3    cannot reach the agent, or the connection broke\n"
    "  4    no such process (or, for the file commands, path)\n"
    "  5    the ID is already taken (start/run --id)\n"
    "  6    the process ended before it was ready (start --ready-*)\n"
    "  7    upgrade: accepted, but the new agent did not answer\n"
    "  124  wait --timeout or start --ready-timeout ran out (the process\n"
    "       keeps running)\n"
    "run and wait without --json exit with the process's exit code\n"
    "(128+N if killed by signal N, 1 if lost); with --json they exit 0\n"
    "once the reply is printed (the code is in it).\n";

/* ---------------------------------------------------------------------
 * The values no kind of opt parses: the rows' set functions.
 */

/* -e K=V; a plain K takes tend's own value, as docker run -e does. */
static int
cli_opt_env(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	struct cli	*c = base;
	const char	*eq, *val;
	char		*key = NULL;

	(void)o;
	eq = strchr(arg, '=');
	if (eq == arg || *arg == '\0')
		goto bad;
	if (eq == NULL) {
		if ((val = getenv(arg)) == NULL)
			return 0;
		eq = arg + strlen(arg);
	} else
		val = eq + 1;
	if (c->env == NULL && (c->env = cJSON_CreateObject()) == NULL)
		goto bad;
	if ((key = strndup(arg, eq - arg)) == NULL)
		goto bad;
	cJSON_DeleteItemFromObjectCaseSensitive(c->env, key);
	if (cJSON_AddStringToObject(c->env, key, val) == NULL)
		goto bad;
	free(key);
	return 0;
bad:
	free(key);
	(void)buf_printf(err, "bad -e '%s': want K=V", arg);
	return -1;
}

static int
cli_opt_signal(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	struct cli	*c = base;

	(void)o;
	if ((c->signo = cli_signal(arg)) == -1) {
		(void)buf_printf(err, "unknown signal '%s'", arg);
		return -1;
	}
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

/* --ready-log: compiled now, so that a bad one is a usage error. */
static int
cli_opt_regex(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	struct cli	*c = base;
	char		 msg[128];
	int		 rv;

	if (c->ready_log) {
		regfree(&c->ready_re);
		c->ready_log = 0;
	}
	if ((rv = regcomp(&c->ready_re, arg, REG_EXTENDED | REG_NOSUB))
	    != 0) {
		regerror(rv, &c->ready_re, msg, sizeof(msg));
		(void)buf_printf(err, "bad --%s '%s': %s", o->name, arg, msg);
		return -1;
	}
	c->ready_log = 1;
	c->ready_text = arg;
	return 0;
}

/* --memory, --memory-high: bytes, or K M G T binary multiples. */
static int
cli_opt_size(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	int64_t	n;

	if (codec_parse_size(arg, &n) == -1) {
		(void)buf_printf(err, "bad --%s '%s': want bytes > 0, or with "
		    "K, M, G or T (256M)", o->name, arg);
		return -1;
	}
	*(int64_t *)(void *)((char *)base + o->off) = n;
	return 0;
}

/* --cpus: a fraction of CPUs, 0.01 (cpu.max's least quota) or more. */
static int
cli_opt_cpus(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	struct cli	*c = base;
	char		*end;
	double		 d;

	errno = 0;
	d = strtod(arg, &end);
	if (end == arg || *end != '\0' || errno != 0 ||
	    !(d >= API_CPUS_MIN) || d > API_CPUS_MAX) {
		(void)buf_printf(err, "bad --%s '%s': want CPUs from 0.01, "
		    "e.g. 0.5 or 2", o->name, arg);
		return -1;
	}
	c->cpus = d;
	return 0;
}

/* persist --exclude, repeatable: the paths joined by ','. */
static int
cli_opt_exclude(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	struct cli	*c = base;

	if (strchr(arg, ',') != NULL || *arg == '\0') {
		(void)buf_printf(err, "bad --%s '%s': a non-empty path "
		    "without ','", o->name, arg);
		return -1;
	}
	if ((buf_avail(&c->excludes) > 0 &&
	    buf_add(&c->excludes, ",", 1) == -1) ||
	    buf_addstr(&c->excludes, arg) == -1)
		return -2;
	return 0;
}

/* events --type: names of [a-z0-9._], joined with commas. */
static int
cli_opt_type(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	struct cli	*c = base;
	const char	*p;

	for (p = arg; *p != '\0'; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		    *p == '.' || *p == '_'))
			break;
	if (*arg == '\0' || *p != '\0') {
		(void)buf_printf(err, "bad --%s '%s': an event type of "
		    "[a-z0-9._]", o->name, arg);
		return -1;
	}
	if ((buf_avail(&c->types) > 0 && buf_add(&c->types, ",", 1) == -1) ||
	    buf_addstr(&c->types, arg) == -1)
		return -2;
	return 0;
}

/* logs --stdout, --stderr: one stream or the other, val says which. */
static int
cli_opt_stream(const struct opt *o, void *base, const char *arg,
    struct buf *err)
{
	struct cli	*c = base;

	(void)arg;
	c->streams |= o->val;
	if (c->streams == (STREAM_OUT | STREAM_ERR)) {
		(void)buf_printf(err, "--stdout and --stderr exclude each "
		    "other");
		return -1;
	}
	return 0;
}
