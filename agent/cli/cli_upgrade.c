/*
 * cli_upgrade.c: `tend upgrade PATH` — POST /v1/upgrade, then wait until
 * the agent answers as the new binary (its version, one more upgrade).
 * The agent closes every connection at the handover and the socket
 * waits meanwhile: the polls that fall in it are not reported.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/codec.h"

#include "cli.h"

#define CLI_UPGRADE_WAIT_MS	10000	/* for the new agent to answer */
#define CLI_UPGRADE_POLL_MS	10

static cJSON	*cli_upgrade_health(struct cli *);
static double	cli_upgrade_num(const cJSON *, const char *);

/* GET /v1/health, quietly: the reply, or NULL. */
static cJSON *
cli_upgrade_health(struct cli *c)
{
	struct cli_http	 h;
	cJSON		*j = NULL;

	cli_http_init(&h, "GET");
	h.quiet = h.silent = 1;
	if (buf_addstr(&h.target, "/v1/health") == 0 &&
	    cli_http_call(c, &h) == CLI_OK)
		j = cli_http_json(&h);
	cli_http_free(&h);
	return j;
}

static double
cli_upgrade_num(const cJSON *j, const char *k)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(j, k);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

int
cli_cmd_upgrade(struct cli *c)
{
	struct cli_http	 h;
	struct timespec	 ts = { 0, CLI_UPGRADE_POLL_MS * 1000000L };
	char		 abs[PATH_MAX];
	const char	*path = c->args[0], *want, *got;
	cJSON		*before, *reply = NULL, *now = NULL;
	double		 n0;
	int64_t		 end;
	int		 rv;

	/* The agent takes an absolute path: a relative one is ours. */
	if (path[0] != '/' && realpath(path, abs) != NULL)
		path = abs;
	if ((before = cli_upgrade_health(c)) == NULL) {
		cli_report(c, "unreachable", "cannot reach the agent at %s",
		    c->sock);
		return CLI_UNREACHABLE;
	}
	n0 = cli_upgrade_num(before, "upgrades");
	cJSON_Delete(before);
	cli_http_init(&h, "POST");
	if (buf_addstr(&h.target, "/v1/upgrade") == -1 ||
	    (h.json = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(h.json, "path", path) == NULL) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	if ((rv = cli_http_call(c, &h)) == CLI_OK)
		reply = cli_http_json(&h);
	cli_http_free(&h);
	if (rv != CLI_OK)
		return rv;
	want = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(reply,
	    "version"));
	end = codec_mono_ms() + CLI_UPGRADE_WAIT_MS;
	for (;;) {
		if ((now = cli_upgrade_health(c)) != NULL &&
		    cli_upgrade_num(now, "upgrades") > n0 && want != NULL &&
		    (got = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
		    now, "version"))) != NULL && strcmp(got, want) == 0)
			break;
		cJSON_Delete(now);
		now = NULL;
		if (codec_mono_ms() > end) {
			cli_report(c, "not_upgraded", "the upgrade to %s was "
			    "accepted, but no agent answered as %s within "
			    "%d s", path, want != NULL ? want : "it",
			    CLI_UPGRADE_WAIT_MS / 1000);
			cJSON_Delete(reply);
			return CLI_NOTUPGRADED;
		}
		nanosleep(&ts, NULL);
	}
	if (c->json) {
		char	*s = cJSON_PrintUnformatted(now);

		if (s != NULL)
			printf("%s\n", s);
		free(s);
	} else
		printf("upgraded to %s (%s), %d upgrade%s this boot\n", want,
		    path, (int)cli_upgrade_num(now, "upgrades"),
		    cli_upgrade_num(now, "upgrades") == 1 ? "" : "s");
	cJSON_Delete(now);
	cJSON_Delete(reply);
	return CLI_OK;
}
