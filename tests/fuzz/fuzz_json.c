/*
 * fuzz_json: launch bodies through the validators, api_parse_body and
 * api_launch_opts (and exec's api_exec_opts), called directly: they
 * return an error value instead of replying, so no server is needed.
 * Input: byte 0 bit 0 chooses exec (POST /v1/exec rules, where "stdin"
 * is data) or launch; the rest is the body.  Besides the sanitizers, two
 * contracts are checked: a refusal is a well-formed error value (a 4xx
 * or 503 status, a code and a message), and an acceptance gives usable
 * options.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/api_exec.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static bool	fz_exec;

static void
fz_fail(const char *what)
{
	fprintf(stderr, "fuzz_json: %s\n", what);
	abort();
}

/* A refusal must say what it refused, as the handler will reply it. */
static void
fz_check_err(const struct api_err *e, const char *fn)
{
	char	msg[128];

	if ((e->status < 400 || e->status > 499) && e->status != 503) {
		snprintf(msg, sizeof(msg), "%s: status %d", fn, e->status);
		fz_fail(msg);
	}
	if (e->code == NULL || e->code[0] == '\0' || e->message[0] == '\0' ||
	    memchr(e->message, '\0', sizeof(e->message)) == NULL) {
		snprintf(msg, sizeof(msg), "%s: an error without code or "
		    "message", fn);
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
	/* A user without a passwd entry ("uid" or "uid:gid") has no name. */
	if (o->has_user && o->user != NULL && o->user[0] == '\0')
		fz_fail("user with an empty name for initgroups");
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct proc_opts	 o;
	struct api_err		 e;
	struct buf		 in = { 0 };
	char			**argv, **env;
	uint64_t		 max;
	cJSON			*j;

	if (n == 0 || n - 1 > HTTP_MAX_BODY)
		return 0;
	fz_exec = (d[0] & 1) != 0;
	memset(&e, 0, sizeof(e));
	if ((j = api_parse_body((const char *)d + 1, n - 1, &e)) == NULL) {
		fz_check_err(&e, "api_parse_body");
		return 0;
	}
	if (api_launch_opts(j, fz_exec, NULL, &o, &argv, &env, &e) == 0) {
		fz_check_opts(&o);
		if (fz_exec) {
			if (api_exec_opts(j, &in, &max, &e) == -1)
				fz_check_err(&e, "api_exec_opts");
			else if (max > EXEC_MAX_OUTPUT_CAP)
				fz_fail("maxOutputBytes above the cap");
		}
	} else
		fz_check_err(&e, "api_launch_opts");
	buf_free(&in);
	api_launch_free(argv, env);
	cJSON_Delete(j);
	return 0;
}
