/*
 * fuzz_json: launch bodies through api_parse_body and api_launch_opts.
 *
 * Both reply through an http_conn when they refuse a body, so the bodies
 * go through the real server: POST /v1/processes is routed to a handler
 * that validates like api_launch, then frees and answers 204 instead of
 * spawning.  Input: byte 0 bit 0 chooses exec (POST /v1/exec rules, where
 * "stdin" is data) or launch; the rest is the body.  Besides the
 * sanitizers, two contracts are checked: -1 means a reply was queued
 * (else the client would hang), and 0 means the options are usable.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "fuzzsrv.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void	fz_launch(struct http_conn *, struct http_req *);
static void	fz_replied(struct http_conn *, const char *);
static void	fz_check_opts(const struct proc_opts *);

static const struct http_route fz_routes[] = {
	{ "POST",	"/v1/processes",	fz_launch, NULL },
	{ NULL, NULL, NULL, NULL }
};

static bool	fz_exec;
static int	fz_handled;

static void
fz_fail(const char *what)
{
	fprintf(stderr, "fuzz_json: %s\n", what);
	abort();
}

/* After -1 (or NULL) the function must have answered the request. */
static void
fz_replied(struct http_conn *c, const char *fn)
{
	char	msg[128];

	if (!http_conn_replied(c)) {
		snprintf(msg, sizeof(msg), "%s failed without replying", fn);
		fz_fail(msg);
	}
}

static void
fz_check_opts(const struct proc_opts *o)
{
	size_t	i;

	if (o->argv == NULL || o->argv[0] == NULL || o->argv[0][0] == '\0')
		fz_fail("accepted without argv[0]");
	for (i = 0; o->env != NULL && o->env[i] != NULL; i++)
		if (o->env[i][0] == '=' || strchr(o->env[i], '=') == NULL)
			fz_fail("accepted an env entry without NAME=");
	if (o->cwd != NULL && o->cwd[0] == '\0')
		fz_fail("accepted an empty cwd");
	if (o->id != NULL && !proc_id_valid(o->id))
		fz_fail("accepted an invalid id");
	if (!(o->timeout_s >= 0) || !(o->grace_s >= 0))
		fz_fail("accepted a negative or NaN time");
	if (fz_exec && o->stdin_pipe)
		fz_fail("exec with a stdin pipe");
	if (o->has_user && o->user == NULL)
		fz_fail("user without a name for initgroups");
}

/* api_launch without the spawn. */
static void
fz_launch(struct http_conn *c, struct http_req *r)
{
	struct proc_opts	 o;
	char			**argv, **env;
	cJSON			*j;
	size_t			 i;

	fz_handled++;
	if ((j = api_parse_body(c, r)) == NULL) {
		fz_replied(c, "api_parse_body");
		return;
	}
	if (api_launch_opts(c, j, fz_exec, &o, &argv, &env) == 0) {
		fz_check_opts(&o);
		http_reply(c, 204, NULL, NULL, 0);
	} else
		fz_replied(c, "api_launch_opts");
	free(argv);
	for (i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
	cJSON_Delete(j);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzzsrv_start(fz_routes, NULL);
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static const char	 head[] = "POST /v1/processes HTTP/1.1\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n";
	struct fuzzsrv_opts	 o;
	char			*req;
	int			 k;

	if (n == 0 || n - 1 > HTTP_MAX_BODY)
		return 0;
	fz_exec = (d[0] & 1) != 0;
	if ((req = malloc(sizeof(head) + 24 + n)) == NULL)
		return 0;
	k = snprintf(req, sizeof(head) + 24, head, n - 1);
	memcpy(req + k, d + 1, n - 1);

	memset(&o, 0, sizeof(o));
	o.pieces = 1;
	o.want = 1;
	o.spins = 64;
	fz_handled = 0;
	if (fuzzsrv_exchange((const uint8_t *)req, k + n - 1, &o) != 1 ||
	    fz_handled != 1)
		fz_fail("no single reply to a single request");
	free(req);
	return 0;
}
