/*
 * cli_cmd.c: the handlers cli.c's grammar names, but for run (cli_run.c)
 * and help (the grammar's own) — health, ps, start, logs, status, wait,
 * kill, send, rm, freeze, thaw.  Each makes one or a few calls through
 * cli_http and prints the reply through cli_fmt (as it came with --json);
 * it returns the exit code.  Also the launch body start and run both
 * send.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/codec.h"

#include "cli.h"

static int	cli_cmd_fetch(struct cli *, struct cli_http *, cJSON **);
static int	cli_cmd_terminals(struct cli *, struct cli_http *);
static int	cli_cmd_poll(struct cli *);
static int	cli_cmd_quiet(struct cli *, struct cli_http *, const char *,
		    const char *, int);
static int	cli_cmd_limits(const struct cli *, cJSON *);
static int	cli_cmd_freezing(struct cli *, int);

/*
 * Make the call; with --json print its reply as it came.  CLI_OK with *j
 * the reply parsed, to print another way (NULL after --json or when it is
 * not JSON), or the exit code.
 */
static int
cli_cmd_fetch(struct cli *c, struct cli_http *h, cJSON **j)
{
	int	rv;

	*j = NULL;
	if ((rv = cli_http_call(c, h)) != CLI_OK)
		return rv;
	if (c->json)
		cli_http_print_reply(h);
	else
		*j = cli_http_json(h);
	return CLI_OK;
}

int
cli_cmd_health(struct cli *c)
{
	struct cli_http	 h;
	cJSON		*j;
	int		 rv;

	cli_http_init(&h, "GET");
	if (buf_addstr(&h.target, "/v1/health") == -1)
		rv = CLI_REFUSED;
	else if ((rv = cli_cmd_fetch(c, &h, &j)) == CLI_OK && !c->json) {
		if (j == NULL) {
			cli_warnx("bad reply from the agent: not JSON");
			rv = CLI_REFUSED;
		} else
			cli_fmt_health(j);
		cJSON_Delete(j);
	}
	cli_http_free(&h);
	return rv;
}

/*
 * ps --terminals: the terminals route's reply (a JSON array) as it came.
 */
static int
cli_cmd_terminals(struct cli *c, struct cli_http *h)
{
	int	rv;

	if (buf_addstr(&h->target, "/v1/terminals") == -1)
		rv = CLI_REFUSED;
	else if ((rv = cli_http_call(c, h)) == CLI_OK)
		cli_http_print_reply(h);
	cli_http_free(h);
	return rv;
}

int
cli_cmd_ps(struct cli *c)
{
	struct cli_http	 h;
	cJSON		*j;
	int		 rv;

	cli_http_init(&h, "GET");
	h.boot = c->boot;
	if (c->terminals)
		return cli_cmd_terminals(c, &h);
	if (buf_addstr(&h.target, "/v1/processes") == -1 ||
	    (!c->all && cli_http_query(&h, "state", "running") == -1))
		rv = CLI_REFUSED;
	else if ((rv = cli_cmd_fetch(c, &h, &j)) == CLI_OK && !c->json) {
		if (j == NULL || !cJSON_IsArray(j)) {
			cli_warnx("bad reply from the agent: not a JSON array");
			rv = CLI_REFUSED;
		} else if (cli_fmt_ps(j, c->resources) == -1) {
			cli_warnx("out of memory");
			rv = CLI_REFUSED;
		}
		cJSON_Delete(j);
	}
	cli_http_free(&h);
	return rv;
}

/* "limits" of the launch body, when any is given.  -1 on ENOMEM. */
static int
cli_cmd_limits(const struct cli *c, cJSON *o)
{
	cJSON	*l;

	if (c->memory == 0 && c->memory_high == 0 && c->pids == 0 &&
	    c->cpus == 0)
		return 0;
	if ((l = cJSON_AddObjectToObject(o, "limits")) == NULL ||
	    (c->memory > 0 && cJSON_AddNumberToObject(l, "memory",
	    (double)c->memory) == NULL) ||
	    (c->memory_high > 0 && cJSON_AddNumberToObject(l, "memoryHigh",
	    (double)c->memory_high) == NULL) ||
	    (c->pids > 0 && cJSON_AddNumberToObject(l, "pids",
	    (double)c->pids) == NULL) ||
	    (c->cpus > 0 && cJSON_AddNumberToObject(l, "cpu", c->cpus) ==
	    NULL))
		return -1;
	return 0;
}

/* The launch body shared by start and run; it takes over c->env. */
cJSON *
cli_cmd_launch_body(struct cli *c, const char *id)
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
	if (cli_cmd_limits(c, o) == -1)
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

/* --restart and its numbers: the launch's "restart" object. */
static int
cli_cmd_restart(struct cli *c, cJSON *o)
{
	cJSON	*r;

	if (c->restart == NULL)
		return 0;
	if ((r = cJSON_AddObjectToObject(o, "restart")) == NULL ||
	    cJSON_AddStringToObject(r, "policy", c->restart) == NULL ||
	    (c->max_restarts >= 0 && cJSON_AddNumberToObject(r, "maxRestarts",
	    (double)c->max_restarts) == NULL) ||
	    (c->backoff_ms >= 0 && cJSON_AddNumberToObject(r, "backoffMs",
	    (double)c->backoff_ms) == NULL) ||
	    (c->max_backoff_ms >= 0 && cJSON_AddNumberToObject(r,
	    "maxBackoffMs", (double)c->max_backoff_ms) == NULL))
		return -1;
	return 0;
}

int
cli_cmd_start(struct cli *c)
{
	struct cli_http	 h;
	const char	*id;
	cJSON		*j;
	int		 rv;

	cli_http_init(&h, "POST");
	if (buf_addstr(&h.target, "/v1/processes") == -1 ||
	    (h.json = cli_cmd_launch_body(c, c->id)) == NULL ||
	    (c->with_stdin && cJSON_AddStringToObject(h.json, "stdin",
	    "pipe") == NULL) || cli_cmd_restart(c, h.json) == -1 ||
	    cli_ready_body(c, h.json) == -1) {
		cli_warnx("out of memory");
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	if ((rv = cli_http_call(c, &h)) != CLI_OK) {
		cli_http_free(&h);
		return rv;
	}
	j = cli_http_json(&h);
	if ((id = cli_fmt_str(j, "id")) == NULL) {
		cli_report(c, "bad_reply", "bad reply from the agent: no id");
		rv = CLI_REFUSED;
	} else if (c->ready_port || c->ready_log)
		rv = cli_ready_wait(c, id, &h);
	if (rv == CLI_OK || rv == CLI_NOTREADY || rv == CLI_TIMEDOUT) {
		if (c->json)
			cli_http_print_reply(&h);
		else
			printf("%s\n", id);
	}
	cJSON_Delete(j);
	cli_http_free(&h);
	return rv;
}

/* logs --json: one poll, printed as it came. */
static int
cli_cmd_poll(struct cli *c)
{
	struct cli_http	h;
	int		rv;

	if ((rv = cli_http_poll(c, c->args[0], c->since, c->limit_bytes,
	    &h)) != CLI_OK)
		return rv;
	cli_http_print_reply(&h);
	cli_http_free(&h);
	return CLI_OK;
}

int
cli_cmd_logs(struct cli *c)
{
	struct cli_sse	 s;
	struct cli_http	 h;
	int		 rv;

	if (c->json)
		return cli_cmd_poll(c);
	memset(&s, 0, sizeof(s));
	s.streams = c->streams;
	cli_http_init(&h, "GET");
	h.accept = "text/event-stream";
	h.boot = c->boot;
	h.stream = cli_sse_feed;
	h.arg = &s;
	if (cli_http_proc_target(&h, c->args[0], "/logs") == -1 ||
	    (c->follow && cli_http_query(&h, "follow", "1") == -1) ||
	    (c->since && cli_http_query(&h, "since", c->since) == -1)) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	rv = cli_http_call(c, &h);
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

int
cli_cmd_status(struct cli *c)
{
	struct cli_http	h;
	int		rv;

	cli_http_init(&h, "GET");
	h.boot = c->boot;
	if (cli_http_proc_target(&h, c->args[0], "") == -1)
		rv = CLI_REFUSED;
	else if ((rv = cli_http_call(c, &h)) == CLI_OK && c->json)
		cli_http_print_reply(&h);
	else if (rv == CLI_OK)
		cli_fmt_json(buf_head(&h.reply), buf_avail(&h.reply));
	cli_http_free(&h);
	return rv;
}

/*
 * Wait in pieces: a call held open for hours would outlive proxies and
 * idle timeouts, and a piece that ends still "running" costs one request.
 */
int
cli_cmd_wait(struct cli *c)
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
		if ((rv = cli_http_wait(c, c->args[0], piece, &h, &j,
		    &running)) != CLI_OK)
			return rv;
		late = running && deadline >= 0 && codec_mono_ms() >= deadline;
		if (!running || late)
			break;
		cJSON_Delete(j);
		cli_http_free(&h);
	}
	if (c->json) {
		cli_http_print_reply(&h);
		rv = late ? CLI_TIMEDOUT : CLI_OK;
	} else if (late) {
		cli_warnx("process '%s' still runs after the timeout",
		    c->args[0]);
		rv = CLI_TIMEDOUT;
	} else if ((rv = cli_fmt_exit_code(j, c->args[0])) < 0)
		rv = CLI_REFUSED;
	cJSON_Delete(j);
	cli_http_free(&h);
	return rv;
}

/*
 * kill, send, rm: one call on process ID, with ?flag=1 when on, that
 * prints nothing but its errors.  h is freed.
 */
static int
cli_cmd_quiet(struct cli *c, struct cli_http *h, const char *suffix,
    const char *flag, int on)
{
	int	rv;

	if (cli_http_proc_target(h, c->args[0], suffix) == -1 ||
	    (on && cli_http_query(h, flag, "1") == -1))
		rv = CLI_REFUSED;
	else
		rv = cli_http_call(c, h);
	cli_http_free(h);
	return rv;
}

int
cli_cmd_kill(struct cli *c)
{
	struct cli_http	h;

	cli_http_init(&h, "POST");
	if ((h.json = cJSON_CreateObject()) == NULL ||
	    cJSON_AddNumberToObject(h.json, "signal",
	    c->signo ? c->signo : SIGTERM) == NULL) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	return cli_cmd_quiet(c, &h, "/kill", NULL, 0);
}

int
cli_cmd_send(struct cli *c)
{
	struct cli_http	h;

	cli_http_init(&h, "POST");
	h.bodyfd = STDIN_FILENO;
	return cli_cmd_quiet(c, &h, "/stdin", "close", c->close);
}

int
cli_cmd_rm(struct cli *c)
{
	struct cli_http	h;

	cli_http_init(&h, "DELETE");
	return cli_cmd_quiet(c, &h, "", "force", c->force);
}

/*
 * freeze, thaw: one process (its status, printed with --json only), or
 * without ID every process and terminal: a line says how many.
 */
static int
cli_cmd_freezing(struct cli *c, int freeze)
{
	const char	*verb = freeze ? "freeze" : "thaw";
	struct cli_http	 h;
	cJSON		*j;
	int		 rv, np, nt;

	cli_http_init(&h, "POST");
	if ((c->nargs == 1 ? cli_http_proc_target(&h, c->args[0],
	    freeze ? "/freeze" : "/thaw") : buf_printf(&h.target, "/v1/%s",
	    verb)) == -1) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	if ((rv = cli_cmd_fetch(c, &h, &j)) == CLI_OK && !c->json &&
	    c->nargs == 0) {
		if (j == NULL) {
			cli_warnx("bad reply from the agent: not JSON");
			rv = CLI_REFUSED;
		} else {
			np = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
			    j, "processes"));
			nt = cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
			    j, "terminals"));
			printf("%s: %d process%s, %d terminal%s\n",
			    freeze ? "frozen" : "thawed", np, np == 1 ? "" :
			    "es", nt, nt == 1 ? "" : "s");
		}
	}
	cJSON_Delete(j);
	cli_http_free(&h);
	return rv;
}

int
cli_cmd_freeze(struct cli *c)
{
	return cli_cmd_freezing(c, 1);
}

int
cli_cmd_thaw(struct cli *c)
{
	return cli_cmd_freezing(c, 0);
}
