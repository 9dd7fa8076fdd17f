/*
 * cli_run.c: tend run — one exec call whose reply is the process's
 * output as an event stream (or, with --json, exec's JSON reply), while
 * SIGINT, SIGTERM and SIGHUP are passed on to the process's group on a
 * second connection.  The exit code is the process's.
 */
#include <sys/signalfd.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/codec.h"

#include "cli.h"
#include "store/boot.h"

_Static_assert(CLI_RUN_STDIN_MAX / 3 * 4 + 64 * 1024 <= HTTP_MAX_BODY,
    "run --stdin must leave room in the body for argv and env");

#define CLI_RUN_SSE	"text/event-stream"

/* tend run: the stream and the signals to forward. */
struct cli_run {
	struct cli	*c;
	const char	*id;
	char		 gen[64];	/* the ID chosen when not given */
	struct cli_sse	 sse;
	int		 sse_mode;	/* reply is SSE, not exec's JSON */
	int		 started;	/* 200 came: the process exists */
	int		 pending[CLI_MAX_PENDING];
	int		 npending;
	int		 sigfd;
	sigset_t	 omask;		/* the mask to restore */
};

static int	cli_run_request(struct cli_run *, struct cli_http *);
static int	cli_run_stdin(cJSON *);
static void	cli_run_signals(struct cli_run *, struct cli_http *);
static int	cli_run_forward(struct cli_run *, int);
static int	cli_run_wake(void *);
static int	cli_run_head(void *, struct cli_http *);
static int	cli_run_body(void *, const char *, size_t);
static int	cli_run_json(struct cli_http *);
static int	cli_run_result(struct cli_run *, struct cli_http *, int);

int
cli_run(struct cli *c)
{
	struct cli_run	 r;
	struct cli_http	 h;
	int		 rv;

	memset(&r, 0, sizeof(r));
	r.c = c;
	r.sigfd = -1;
	if ((rv = cli_run_request(&r, &h)) != CLI_OK)
		return rv;
	cli_run_signals(&r, &h);
	rv = cli_run_result(&r, &h, cli_http_call(c, &h));
	if (r.sigfd != -1)
		close(r.sigfd);
	sigprocmask(SIG_SETMASK, &r.omask, NULL);
	cli_sse_free(&r.sse);
	cli_http_free(&h);
	return rv;
}

/* The ID, and exec's request in h.  CLI_OK, or the exit code. */
static int
cli_run_request(struct cli_run *r, struct cli_http *h)
{
	struct cli	*c = r->c;
	unsigned char	 rnd[4];
	char		 hex[9];

	r->id = c->id;
	if (r->id == NULL) {
		/* The stream's events carry no id: choose it here. */
		boot_random(rnd, sizeof(rnd));
		codec_hex(hex, rnd, sizeof(rnd));
		snprintf(r->gen, sizeof(r->gen), "run-%ld-%s", (long)getpid(),
		    hex);
		r->id = r->gen;
	}

	cli_http_init(h, "POST");
	h->accept = c->json ? "application/json" : CLI_RUN_SSE;
	/*
	 * exec's JSON reply comes when the process has ended: a signal is
	 * passed on at once (lost if the process does not exist yet).
	 */
	r->started = c->json;
	if (buf_addstr(&h->target, "/v1/exec") == -1 ||
	    (h->json = cli_cmd_launch_body(c, r->id)) == NULL) {
		cli_warnx("out of memory");
		cli_http_free(h);
		return CLI_REFUSED;
	}
	if (c->with_stdin && cli_run_stdin(h->json) == -1) {
		cli_http_free(h);
		return CLI_REFUSED;
	}
	return CLI_OK;
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
		if ((p = buf_reserve(&raw, CLI_STDIN_CHUNK)) == NULL) {
			cli_warnx("out of memory");
			goto done;
		}
		if ((n = read(STDIN_FILENO, p, CLI_STDIN_CHUNK)) == -1) {
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

/*
 * The signals to pass on arrive as a readable fd beside the socket, so
 * no handler has to interrupt a blocking call.  Without a signalfd they
 * stay blocked and are not passed on.
 */
static void
cli_run_signals(struct cli_run *r, struct cli_http *h)
{
	sigset_t	mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &mask, &r->omask) == 0)
		r->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	h->wakefd = r->sigfd;
	h->wake = r->sigfd != -1 ? cli_run_wake : NULL;
	h->head = cli_run_head;
	h->stream = cli_run_body;
	h->arg = r;
	h->failcode = CLI_UNREACHABLE;
}

/* Pass signal signo on to the process, on a second connection. */
static int
cli_run_forward(struct cli_run *r, int signo)
{
	struct cli_http	h;

	cli_http_init(&h, "POST");
	h.quiet = 1;
	if (cli_http_proc_target(&h, r->id, "/kill") == -1 ||
	    (h.json = cJSON_CreateObject()) == NULL ||
	    cJSON_AddNumberToObject(h.json, "signal", signo) == NULL) {
		cli_http_free(&h);
		return -1;
	}
	/* Too late (409: it ended) is no error: the stream tells the end. */
	if (cli_http_call(r->c, &h) != CLI_OK && h.status != 409 &&
	    h.status != 404 && h.status != 0)
		cli_http_print_error(r->c, &h);
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
	r->sse_mode = strncasecmp(h->ctype, CLI_RUN_SSE,
	    sizeof(CLI_RUN_SSE) - 1) == 0;
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

	if ((j = cli_http_json(h)) == NULL) {
		cli_warnx("bad reply from the agent: not JSON");
		return CLI_REFUSED;
	}
	if (((s = cli_fmt_str(j, "stdout")) != NULL &&
	    cli_fmt_b64(STDOUT_FILENO, s) == -1) ||
	    ((s = cli_fmt_str(j, "stderr")) != NULL &&
	    cli_fmt_b64(STDERR_FILENO, s) == -1)) {
		cJSON_Delete(j);
		return CLI_REFUSED;
	}
	code = cli_fmt_int(cJSON_GetObjectItemCaseSensitive(j, "exit"),
	    "code", -1);
	cJSON_Delete(j);
	if (code < 0) {
		cli_warnx("bad reply from the agent: no exit code");
		return CLI_REFUSED;
	}
	return code > 255 ? 255 : code;
}

/* The exit code, once the call returned rv. */
static int
cli_run_result(struct cli_run *r, struct cli_http *h, int rv)
{
	if (rv != CLI_OK)
		return rv;
	if (r->c->json && !r->sse_mode) {
		cli_http_print_reply(h);
		return CLI_OK;
	}
	if (!r->sse_mode)
		return cli_run_json(h);
	if (r->sse.ended)
		return r->sse.code < 0 ? CLI_REFUSED : r->sse.code;
	cli_warnx("the agent closed the stream before the process ended "
	    "(see `tend status %s`)", r->id);
	return CLI_UNREACHABLE;
}
