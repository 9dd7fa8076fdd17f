/*
 * cli_ready.c: start --ready-port and --ready-log.  The agent watches
 * readiness (the launch's "ready"): the port, and the log when the REGEX
 * is a plain string (no character special to a POSIX extended regex),
 * which a line matches exactly when it holds that string; then the CLI
 * waits with POST .../wait?for=ready.  A REGEX that is more than a string
 * is judged here: a polling loop over the process's stored output (JSON
 * polls of its logs), the port still the agent's (the status's "ready",
 * the launch asking for the port alone), until the process is ready, has
 * ended, or --ready-timeout ran out.
 */
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/codec.h"

#include "cli.h"

static int	cli_ready_lines(struct cli *, struct buf *, const char *,
		    size_t);
static int	cli_ready_streams(struct cli *, cJSON *, struct buf [2]);
static int	cli_ready_log(struct cli *, const char *, char *, size_t,
		    struct buf [2], int64_t);
static int	cli_ready_check(struct cli *, const char *, struct cli_http *,
		    int, int64_t, int *);
static int	cli_ready_literal(const char *);
static int	cli_ready_agent(struct cli *, const char *, struct cli_http *);
static int	cli_ready_poll(struct cli *, const char *, struct cli_http *);

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
 * Both streams of one poll's reply j against --ready-log, stdout first:
 * 1 when a line matched, 0 not yet, or -(exit code + 1).
 */
static int
cli_ready_streams(struct cli *c, cJSON *j, struct buf line[2])
{
	static const char *const	 streams[2] = { "stdout", "stderr" };
	struct buf			 raw = { 0 };
	const char			*s;
	int				 k, hit = 0;

	for (k = 0; k < 2 && hit == 0; k++) {
		buf_reset(&raw);
		if ((s = cli_fmt_str(j, streams[k])) == NULL ||
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
	buf_free(&raw);
	return hit;
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
	struct cli_http	 h;
	const char	*next;
	cJSON		*j;
	int		 rv, hit = 0, more = 1;

	while (more && !hit && codec_mono_ms() < deadline) {
		if ((rv = cli_http_poll(c, id, cursor[0] ? cursor : NULL, -1,
		    &h)) != CLI_OK)
			return -(rv + 1);
		j = cli_http_json(&h);
		if ((next = cli_fmt_str(j, "cursor")) == NULL ||
		    strlen(next) >= cursorlen) {
			cli_report(c, "bad_reply", "bad reply from the agent: "
			    "no cursor");
			hit = -(CLI_REFUSED + 1);
		} else {
			more = strcmp(next, cursor) != 0;
			snprintf(cursor, cursorlen, "%s", next);
			hit = cli_ready_streams(c, j, line);
		}
		cJSON_Delete(j);
		cli_http_free(&h);
	}
	return hit;
}

/*
 * One fresh status after a pause of at most left ms (0 when ready):
 * CLI_OK while it runs and is not ready, -1 when it runs and is ready,
 * else the exit code.  h then holds the process's latest status, and
 * *port_ok whether the agent found the port (its "ready").
 */
static int
cli_ready_check(struct cli *c, const char *id, struct cli_http *h,
    int ready, int64_t deadline, int *port_ok)
{
	struct cli_http	 w;
	int64_t		 left;
	cJSON		*st;
	int		 rv, running;

	left = deadline - codec_mono_ms();
	if (ready)
		left = 0;	/* no pause: just a fresh status */
	else if (left > CLI_READY_POLL)
		left = CLI_READY_POLL;
	if ((rv = cli_http_wait(c, id, left > 0 ? left : 1, &w, &st,
	    &running)) != CLI_OK)
		return rv;
	if (!*port_ok)
		*port_ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(st,
		    "ready"));
	cJSON_Delete(st);
	cli_http_free(h);
	*h = w;			/* the latest status */
	if (!running) {
		cli_report(c, "ended", "process '%s' ended before it was "
		    "ready (see `tend status %s`)", id, id);
		return CLI_NOTREADY;
	}
	if (ready)
		return -1;
	if (codec_mono_ms() >= deadline) {
		cli_report(c, "timeout", "process '%s' is not ready after the "
		    "--ready-timeout (it keeps running)", id);
		return CLI_TIMEDOUT;
	}
	return CLI_OK;
}

/*
 * Until the process is ready, has ended, or --ready-timeout ran out;
 * the wait route doubles as the pause between checks, and ends it early
 * when the process ends.  h then holds the process's latest status.
 */
static int
cli_ready_poll(struct cli *c, const char *id, struct cli_http *h)
{
	struct buf	 line[2] = { { 0 }, { 0 } };
	char		 cursor[CLI_CURSOR_MAX] = "";
	int64_t		 deadline;
	int		 port_ok = !c->ready_port, log_ok = !c->ready_log;
	int		 rv, r;

	deadline = codec_mono_ms() + (c->ready_ms >= 0 ? c->ready_ms :
	    CLI_READY_TIMEOUT);
	do {
		if (!log_ok) {
			if ((r = cli_ready_log(c, id, cursor, sizeof(cursor),
			    line, deadline)) < 0) {
				rv = -r - 1;
				break;
			}
			log_ok = r;
		}
	} while ((rv = cli_ready_check(c, id, h, port_ok && log_ok,
	    deadline, &port_ok)) == CLI_OK);
	if (rv == -1)
		rv = CLI_OK;
	buf_free(&line[0]);
	buf_free(&line[1]);
	return rv;
}

/* ---------------------------------------------------------------------
 * The agent's readiness.
 */

/* Is a regex a plain string: a line matches it when it holds it? */
static int
cli_ready_literal(const char *re)
{
	return re[0] != '\0' && strlen(re) <= READY_LOG_MAX &&
	    strpbrk(re, ".[]()*+?{}|^$\\") == NULL;
}

/*
 * "ready" of the launch body when the agent can judge all that is asked
 * (else the CLI polls, cli_ready_poll).  -1: out of memory.
 */
int
cli_ready_body(struct cli *c, cJSON *o)
{
	cJSON	*r;

	if (!c->ready_port && !c->ready_log)
		return 0;
	/* A REGEX judged here: the agent is asked for the port alone. */
	if (c->ready_log && !cli_ready_literal(c->ready_text)) {
		if (!c->ready_port)
			return 0;
		if ((r = cJSON_AddObjectToObject(o, "ready")) == NULL ||
		    cJSON_AddNumberToObject(r, "port", c->ready_port) == NULL)
			return -1;
		return 0;
	}
	if ((r = cJSON_AddObjectToObject(o, "ready")) == NULL)
		return -1;
	if (c->ready_port &&
	    cJSON_AddNumberToObject(r, "port", c->ready_port) == NULL)
		return -1;
	if (c->ready_log &&
	    cJSON_AddStringToObject(r, "log", c->ready_text) == NULL)
		return -1;
	/* 0 is "already late": the agent's least is 1 ms. */
	if (cJSON_AddNumberToObject(r, "timeoutMs", (double)(c->ready_ms > 0 ?
	    c->ready_ms : c->ready_ms == 0 ? 1 : CLI_READY_TIMEOUT)) == NULL)
		return -1;
	return 0;
}

/*
 * wait?for=ready in pieces (as `tend wait`): 200 ready (or a piece ran
 * out), 409 "ended" or "ready_timeout".  h then holds the latest status.
 */
static int
cli_ready_agent(struct cli *c, const char *id, struct cli_http *h)
{
	struct cli_http	 w;
	const char	*code;
	char		 arg[24];
	cJSON		*j;
	int		 rv, running;

	for (;;) {
		snprintf(arg, sizeof(arg), "%d", CLI_WAIT_PIECE);
		cli_http_init(&w, "POST");
		w.quiet = 1;
		w.named = 1;
		if (cli_http_proc_target(&w, id, "/wait") == -1 ||
		    cli_http_query(&w, "for", "ready") == -1 ||
		    cli_http_query(&w, "timeout", arg) == -1) {
			cli_http_free(&w);
			return CLI_REFUSED;
		}
		rv = cli_http_call(c, &w);
		if (w.status == 200) {
			j = cli_http_json(&w);
			running = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j,
			    "ready"));
			cJSON_Delete(j);
			cli_http_free(h);
			*h = w;
			if (running)
				return CLI_OK;
			continue;	/* a piece ran out */
		}
		if (w.status != 409) {
			if (rv != CLI_OK && w.status != 0)
				cli_http_print_error(c, &w);
			cli_http_free(&w);
			return rv != CLI_OK ? rv : CLI_REFUSED;
		}
		j = cli_http_json(&w);
		code = cli_fmt_str(j, "code");
		rv = code != NULL && strcmp(code, "ended") == 0 ?
		    CLI_NOTREADY : CLI_TIMEDOUT;
		cJSON_Delete(j);
		cli_http_free(&w);
		break;
	}
	if (rv == CLI_NOTREADY)
		cli_report(c, "ended", "process '%s' ended before it was "
		    "ready (see `tend status %s`)", id, id);
	else
		cli_report(c, "timeout", "process '%s' is not ready after the "
		    "--ready-timeout (it keeps running)", id);
	/* The latest status, for --json. */
	if (cli_http_wait(c, id, 1, &w, &j, &running) == CLI_OK) {
		cJSON_Delete(j);
		cli_http_free(h);
		*h = w;
	}
	return rv;
}

int
cli_ready_wait(struct cli *c, const char *id, struct cli_http *h)
{
	if (c->ready_log && !cli_ready_literal(c->ready_text))
		return cli_ready_poll(c, id, h);
	return cli_ready_agent(c, id, h);
}
