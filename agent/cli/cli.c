/*
 * cli.c: tend's command line, what an operator types through
 * `docker exec box tend ps` — the help and the parsing made from its
 * grammar (cli_grammar.c), and cli_main, which dispatches to a command's
 * handler (cli_cmd.c, cli_run.c; cli.h lists the rooms).
 *
 * Each subcommand is a row of cli_cmds: name, synopsis, option rows and
 * handler.  The getopt_long arguments and the help text are both made
 * from the option rows, so they cannot disagree.  A handler makes one
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
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/opt.h"
#include "base/tunables.h"

#include "cli.h"

#define CLI_HELP_WIDTH	22	/* of the options' left column */

static void	cli_usage_error(const struct cli_cmd *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static const struct cli_cmd *cli_find(const char *);
static void	cli_help_main(FILE *);
static void	cli_help_cmd(FILE *, const struct cli_cmd *);
static int	cli_global(struct cli *, int, char **, int *);
static int	cli_parse(struct cli *, int, char **);
static int	cli_option(struct cli *, const struct opt *, const char *);
static int	cli_args(struct cli *);
static int	cli_check(struct cli *);
static void	cli_free(struct cli *);

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

	for (i = 0; i < cli_ncmds; i++)
		if (strcmp(cli_cmds[i].name, name) == 0)
			return &cli_cmds[i];
	return NULL;
}

static void
cli_help_main(FILE *f)
{
	size_t	i;

	fprintf(f, "usage: tend [-S PATH] COMMAND [OPTIONS] [ARGS]\n"
	    "       tend agent [OPTIONS] [-- CMD ARGS...]\n\n"
	    "tend is the sandbox's supervisor.  These commands talk to its "
	    "agent\nover the unix socket.\n\nCommands:\n");
	for (i = 0; i < cli_ncmds; i++)
		fprintf(f, "  %-8s %s\n", cli_cmds[i].name,
		    cli_cmds[i].summary);
	fprintf(f, "  %-8s %s\n", "agent",
	    "run the supervisor (see `tend agent --help`)");
	fprintf(f, "\nOptions:\n");
	opt_help(f, cli_opts_common, CLI_HELP_WIDTH);
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
	opt_help(f, cmd->opts, CLI_HELP_WIDTH);
	opt_help(f, cli_opts_common, CLI_HELP_WIDTH);
	fprintf(f, "\n%s", cli_exits);
}

/* tend help [COMMAND]: the grammar's own command. */
int
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

/*
 * The command's options and arguments, with getopt_long over a table made
 * from its option rows.  0, or the exit code + 1 (help, usage error).
 */
static int
cli_parse(struct cli *c, int argc, char **argv)
{
	const struct opt	*tabs[2] = { c->cmd->opts, cli_opts_common };
	const struct opt	*o;
	struct opt_getopt	 g;
	int			 ch, rv;

	opt_getopt(&g, tabs, 2, OPT_QUIET |
	    (c->cmd->flags & CMD_ORDERED ? OPT_ORDERED : 0));
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
		if ((o = opt_row(&g, ch)) == NULL)
			abort();	/* getopt returns only what we gave it */
		if ((rv = cli_option(c, o, optarg)) != 0)
			return rv;
	}
	c->args = argv + optind;
	c->nargs = argc - optind;
	return cli_args(c);
}

/*
 * Apply one option as its row says; the one action is --help.  0, or the
 * exit code + 1.
 */
static int
cli_option(struct cli *c, const struct opt *o, const char *arg)
{
	struct buf	msg = { 0 };
	int		rv;

	if (o->kind == OPT_ACTION) {
		cli_help_cmd(stdout, c->cmd);
		return CLI_OK + 1;
	}
	if ((rv = opt_set(o, c, arg, &msg)) == -1)
		cli_usage_error(c->cmd, "%.*s", (int)buf_avail(&msg),
		    buf_head(&msg));
	buf_free(&msg);
	return rv == 0 ? 0 : rv == -1 ? CLI_USAGE + 1 : CLI_REFUSED + 1;
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

/* Options that need or exclude others.  0, or the exit code + 1. */
static int
cli_check(struct cli *c)
{
	const char	*bad = NULL;

	if (c->ready_ms >= 0 && !c->ready_port && !c->ready_log)
		bad = "--ready-timeout needs --ready-port or --ready-log";
	else if (c->json && c->follow && c->cmd->run != cli_events)
		bad = "--json prints one poll: it does not --follow";
	else if (c->json && c->streams != 0)
		bad = "--json prints both streams";
	else if (c->limit_bytes > 0 && !c->json)
		bad = "--limit-bytes goes with --json";
	else if (c->restart == NULL && (c->max_restarts >= 0 ||
	    c->backoff_ms >= 0 || c->max_backoff_ms >= 0))
		bad = "--max-restarts, --backoff and --max-backoff go with "
		    "--restart";
	else if (c->restart != NULL && strcmp(c->restart, "no") != 0 &&
	    strcmp(c->restart, "on-failure") != 0 &&
	    strcmp(c->restart, "always") != 0)
		bad = "--restart wants no, on-failure or always";
	if (bad == NULL)
		return 0;
	cli_usage_error(c->cmd, "%s", bad);
	return CLI_USAGE + 1;
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
	buf_free(&c->types);
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
	c.max_restarts = c.backoff_ms = c.max_backoff_ms = -1;
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
