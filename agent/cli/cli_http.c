/*
 * cli_http.c: the CLI's calls to the agent — one blocking HTTP/1.1 call
 * per struct cli_http over hclient, its target built with the process ID
 * and query percent-encoded, its reply streamed to a callback or kept,
 * and an error reply turned into an exit code and printed (the agent's
 * message, or its JSON object with --json).  Also the two calls more
 * than one command makes: one wait piece and one JSON poll of the output.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <http_parser.h>

#include "base/buf.h"
#include "net/hclient.h"

#include "cli.h"

/* The header lines and body of one request, made from a cli_http. */
struct cli_http_req {
	const char	*hdrs[5];
	char		 accept[sizeof("Accept: ") + CLI_CTYPE_MAX];
	char		 boot[sizeof("Tend-Boot: ") + CLI_BOOT_MAX];
	char		*body;		/* h->json printed, or NULL */
};

static int	cli_http_escape_but(struct buf *, const char *, const char *);
static int	cli_http_escape(struct buf *, const char *);
static const char *cli_http_hint(int);
static int	cli_http_on_header(void *, const char *, const char *);
static int	cli_http_on_head(void *, int);
static int	cli_http_on_body(void *, const char *, size_t);
static int	cli_http_on_wake(void *);
static int	cli_http_prepare(struct cli_http *, struct cli_http_req *);
static int	cli_http_exchange(struct cli *, struct cli_http *,
		    const struct cli_http_req *);
static int	cli_http_refusal(const struct cli_http *);

void
cli_http_init(struct cli_http *h, const char *method)
{
	memset(h, 0, sizeof(*h));
	h->method = method;
	h->bodyfd = -1;
	h->wakefd = -1;
	h->failcode = CLI_REFUSED;
}

void
cli_http_free(struct cli_http *h)
{
	buf_free(&h->target);
	buf_free(&h->reply);
	cJSON_Delete(h->json);
	h->json = NULL;
}

/* ---------------------------------------------------------------------
 * The target.
 */

/* Percent-encode all but RFC 3986's unreserved characters (and keep). */
static int
cli_http_escape_but(struct buf *b, const char *s, const char *keep)
{
	static const char	 hex[] = "0123456789ABCDEF";
	unsigned char		 ch;
	int			 rv = 0;

	for (; *s != '\0' && rv == 0; s++) {
		ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || strchr("-._~", ch) != NULL ||
		    strchr(keep, ch) != NULL)
			rv = buf_add(b, s, 1);
		else
			rv = buf_printf(b, "%%%c%c", hex[ch >> 4],
			    hex[ch & 15]);
	}
	return rv;
}

static int
cli_http_escape(struct buf *b, const char *s)
{
	return cli_http_escape_but(b, s, "");
}

/*
 * prefix, then path with its slashes kept ("/v1/file" "/etc/hosts"); a
 * relative path is taken from the current directory.  A 404 is exit 4.
 */
int
cli_http_path_target(struct cli_http *h, const char *prefix, const char *path)
{
	char	cwd[PATH_MAX];

	h->named = 1;
	if (buf_addstr(&h->target, prefix) == -1)
		return -1;
	if (path[0] != '/') {
		if (getcwd(cwd, sizeof(cwd)) == NULL ||
		    cli_http_escape_but(&h->target, cwd, "/") == -1 ||
		    (strcmp(cwd, "/") != 0 && buf_addstr(&h->target, "/") == -1))
			return -1;
	}
	return cli_http_escape_but(&h->target, path, "/");
}

/* "/v1/processes/<id><suffix>" */
int
cli_http_proc_target(struct cli_http *h, const char *id, const char *suffix)
{
	h->named = 1;
	if (buf_addstr(&h->target, "/v1/processes/") == -1 ||
	    cli_http_escape(&h->target, id) == -1 ||
	    buf_addstr(&h->target, suffix) == -1)
		return -1;
	return 0;
}

/* Append "?k=v" or "&k=v". */
int
cli_http_query(struct cli_http *h, const char *k, const char *v)
{
	int	first;

	first = memchr(buf_head(&h->target), '?',
	    buf_avail(&h->target)) == NULL;
	if (buf_printf(&h->target, "%c%s=", first ? '?' : '&', k) == -1 ||
	    cli_http_escape(&h->target, v) == -1)
		return -1;
	return 0;
}

/* ---------------------------------------------------------------------
 * The call.
 */

static const char *
cli_http_hint(int err)
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
cli_http_on_header(void *arg, const char *name, const char *value)
{
	struct cli_http	*h = arg;

	if (strcasecmp(name, "Content-Type") == 0)
		snprintf(h->ctype, sizeof(h->ctype), "%s", value);
	return 0;
}

static int
cli_http_on_head(void *arg, int status)
{
	struct cli_http	*h = arg;

	h->status = status;
	if (h->head != NULL)
		return h->head(h->arg, h);
	return 0;
}

static int
cli_http_on_body(void *arg, const char *d, size_t n)
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
cli_http_on_wake(void *arg)
{
	struct cli_http	*h = arg;

	return h->wake(h->arg);
}

/* The target NUL-ended, the header lines, the body.  CLI_OK or the code. */
static int
cli_http_prepare(struct cli_http *h, struct cli_http_req *rq)
{
	int	n = 0;

	rq->body = NULL;
	if (buf_avail(&h->target) == 0 || buf_add(&h->target, "", 1) == -1) {
		cli_warnx("out of memory");
		return CLI_REFUSED;
	}
	if (h->accept != NULL) {
		snprintf(rq->accept, sizeof(rq->accept), "Accept: %s",
		    h->accept);
		rq->hdrs[n++] = rq->accept;
	}
	if (h->boot != NULL) {
		if (strpbrk(h->boot, "\r\n") != NULL ||
		    strlen(h->boot) > CLI_BOOT_MAX) {
			cli_warnx("bad boot ID '%s'", h->boot);
			return CLI_USAGE;
		}
		snprintf(rq->boot, sizeof(rq->boot), "Tend-Boot: %s", h->boot);
		rq->hdrs[n++] = rq->boot;
	}
	if (h->header != NULL)
		rq->hdrs[n++] = h->header;
	if (h->json != NULL) {
		rq->hdrs[n++] = "Content-Type: application/json";
		if ((rq->body = cJSON_PrintUnformatted(h->json)) == NULL) {
			cli_warnx("out of memory");
			return CLI_REFUSED;
		}
	}
	rq->hdrs[n] = NULL;
	return CLI_OK;
}

/*
 * Make the call h describes and read the reply.  CLI_OK on a 2xx reply,
 * an error reply's exit code (the reply reported unless h->quiet),
 * CLI_UNREACHABLE when the agent cannot be reached or the connection
 * breaks, h->failcode when a stream callback stopped.
 */
int
cli_http_call(struct cli *c, struct cli_http *h)
{
	struct cli_http_req	rq;
	int			rv;

	if ((rv = cli_http_prepare(h, &rq)) == CLI_OK)
		rv = cli_http_exchange(c, h, &rq);
	free(rq.body);
	if (rv != -1)
		return rv;
	if (!h->quiet)
		cli_http_print_error(c, h);
	return cli_http_refusal(h);
}

/*
 * Connect, send, read the reply: CLI_OK, -1 on an error reply (for the
 * caller to report), or the exit code of a failure reported here.
 */
static int
cli_http_exchange(struct cli *c, struct cli_http *h,
    const struct cli_http_req *rq)
{
	static const struct hclient_cb	 cb = {
		cli_http_on_header, cli_http_on_head, cli_http_on_body,
		cli_http_on_wake
	};
	struct hclient			 hc;
	struct hclient_req		 req;
	int				 rv;

	if (hclient_open(&hc, c->sock) == -1) {
		rv = errno;
		if (!h->silent)
			cli_report(c, "unreachable", "cannot connect to %s: "
			    "%s%s", c->sock, hclient_error(&hc),
			    cli_http_hint(rv));
		return CLI_UNREACHABLE;
	}
	memset(&req, 0, sizeof(req));
	req.method = h->method;
	req.target = buf_head(&h->target);
	req.headers = rq->hdrs;
	req.body = rq->body;
	req.bodylen = rq->body != NULL ? strlen(rq->body) : 0;
	if (h->bodyfd != -1)
		rv = hclient_send_fd(&hc, &req, h->bodyfd);
	else
		rv = hclient_send(&hc, &req);
	if (rv == -1) {
		if (!h->silent)
			cli_report(c, "unreachable", "cannot send to the agent "
			    "at %s: %s", c->sock, hclient_error(&hc));
		hclient_close(&hc);
		return CLI_UNREACHABLE;
	}
	if (h->wake != NULL)
		hc.wakefd = h->wakefd;
	if (hclient_recv(&hc, &cb, h) == -1) {
		rv = errno;
		if (rv == ECANCELED)
			rv = h->failcode;
		/* A refusal that broke off is still a refusal. */
		else if (h->status / 100 != 2 && h->status != 0)
			rv = -1;
		else {
			if (!h->silent)
				cli_report(c, "unreachable", "lost the "
				    "connection to the agent: %s",
				    hclient_error(&hc));
			rv = CLI_UNREACHABLE;
		}
		hclient_close(&hc);
		return rv;
	}
	hclient_close(&hc);
	return h->status / 100 == 2 ? CLI_OK : -1;
}

/* ---------------------------------------------------------------------
 * The reply.
 */

/* The exit code of an error reply: its class, for a caller to branch on. */
static int
cli_http_refusal(const struct cli_http *h)
{
	const char	*code;
	cJSON		*j;
	int		 rv = CLI_REFUSED;

	j = cli_http_json(h);
	code = cli_fmt_str(j, "code");
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
void
cli_http_print_error(const struct cli *c, const struct cli_http *h)
{
	const char	*msg, *reason;
	cJSON		*j;

	j = cli_http_json(h);
	msg = cli_fmt_str(j, "error");
	if (c->json && msg != NULL) {
		fflush(stdout);
		cli_fmt_raw(stderr, buf_head(&h->reply), buf_avail(&h->reply));
	} else if (msg != NULL && *msg != '\0')
		cli_report(c, "refused", "%s", msg);
	else {
		reason = http_status_str((enum http_status)h->status);
		cli_report(c, "refused", "the agent replied %d %s", h->status,
		    reason);
	}
	cJSON_Delete(j);
}

cJSON *
cli_http_json(const struct cli_http *h)
{
	return cJSON_ParseWithLength(buf_head(&h->reply),
	    buf_avail(&h->reply));
}

/* The reply on stdout as it came: what --json prints. */
void
cli_http_print_reply(const struct cli_http *h)
{
	cli_fmt_raw(stdout, buf_head(&h->reply), buf_avail(&h->reply));
}

/* ---------------------------------------------------------------------
 * Calls more than one command makes.
 */

/*
 * One POST .../wait?timeout=ms.  CLI_OK with the reply in h (the caller
 * frees it) and its status in *st, *running set; or an exit code.
 */
int
cli_http_wait(struct cli *c, const char *id, int64_t ms, struct cli_http *h,
    cJSON **st, int *running)
{
	const char	*state;
	char		 arg[24];
	int		 rv;

	*st = NULL;
	snprintf(arg, sizeof(arg), "%lld", (long long)(ms < 1 ? 1 : ms));
	cli_http_init(h, "POST");
	if (cli_http_proc_target(h, id, "/wait") == -1 ||
	    cli_http_query(h, "timeout", arg) == -1) {
		cli_http_free(h);
		return CLI_REFUSED;
	}
	if ((rv = cli_http_call(c, h)) != CLI_OK) {
		cli_http_free(h);
		return rv;
	}
	if ((*st = cli_http_json(h)) == NULL ||
	    (state = cli_fmt_str(*st, "state")) == NULL) {
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
 * One JSON poll of a process's output after since (NULL: from the start):
 * {"stdout","stderr" (base64),"cursor","ended"}.  The reply is in h (the
 * caller frees it) when CLI_OK.
 */
int
cli_http_poll(struct cli *c, const char *id, const char *since,
    int64_t limit, struct cli_http *h)
{
	char	arg[24];
	int	rv;

	cli_http_init(h, "GET");
	h->accept = "application/json";
	h->boot = c->boot;
	snprintf(arg, sizeof(arg), "%lld", (long long)limit);
	if (cli_http_proc_target(h, id, "/logs") == -1 ||
	    (since != NULL && cli_http_query(h, "since", since) == -1) ||
	    (limit > 0 && cli_http_query(h, "limitBytes", arg) == -1)) {
		cli_http_free(h);
		return CLI_REFUSED;
	}
	if ((rv = cli_http_call(c, h)) != CLI_OK)
		cli_http_free(h);
	return rv;
}
