/*
 * cli_events.c: tend events, the boot's lifecycle events (GET /v1/events)
 * a line each: the JSON pages up to the end, or with -f the event stream
 * as it comes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "base/buf.h"

#include "cli.h"

/* The essentials of an event, after its time, type and subject. */
static const char *const cli_events_fields[] = {
	"pid", "argv0", "signal", "code", "durationMs", "skipped", "error",
	"boot", "previousBoot", "version", "listen", "backoffS"
};

/* "TIME TYPE SUBJECT key=value...", or the JSON as it came. */
static int
cli_events_print(const struct cli *c, cJSON *j)
{
	const cJSON	*x, *e;
	const char	*id;
	char		*txt;
	size_t		 i;

	if (c->json) {
		if ((txt = cJSON_PrintUnformatted(j)) == NULL)
			return -1;
		printf("%s\n", txt);
		free(txt);
		return fflush(stdout) == 0 ? 0 : -1;
	}
	if (cli_fmt_str(j, "type") == NULL) {
		cli_warnx("bad reply from the agent: an event without a type");
		return -1;
	}
	id = cli_fmt_str(j, "id");
	printf("%s %s %s", cli_fmt_str(j, "time") ? cli_fmt_str(j, "time") :
	    "-", cli_fmt_str(j, "type"), id != NULL ? id : "-");
	if ((e = cJSON_GetObjectItemCaseSensitive(j, "exit")) != NULL &&
	    cJSON_IsObject(e)) {
		x = cJSON_GetObjectItemCaseSensitive(e, "signal");
		if (cJSON_IsNumber(x))
			printf(" exit=signal:%d", x->valueint);
		else if (cJSON_IsNumber(x = cJSON_GetObjectItemCaseSensitive(e,
		    "code")))
			printf(" exit=%d", x->valueint);
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(e,
		    "timedOut")))
			printf(" timedOut");
	}
	for (i = 0; i < sizeof(cli_events_fields) /
	    sizeof(cli_events_fields[0]); i++) {
		x = cJSON_GetObjectItemCaseSensitive(j, cli_events_fields[i]);
		if (cJSON_IsString(x))
			printf(" %s=%s", cli_events_fields[i], x->valuestring);
		else if (cJSON_IsNumber(x))
			printf(" %s=%g", cli_events_fields[i], x->valuedouble);
	}
	printf("\n");
	return fflush(stdout) == 0 ? 0 : -1;
}

static int
cli_events_sse(struct cli_sse *s, cJSON *j)
{
	return cli_events_print(s->arg, j);
}

/* The query every call carries: types, id, and where to start. */
static int
cli_events_target(struct cli *c, struct cli_http *h, const char *since,
    int follow)
{
	buf_reset(&h->target);
	return buf_addstr(&h->target, "/v1/events") == -1 ||
	    cli_http_query(h, "follow", follow ? "1" : "0") == -1 ||
	    (buf_avail(&c->types) > 0 && cli_http_query(h, "types",
	    buf_head(&c->types)) == -1) ||
	    (c->id != NULL && cli_http_query(h, "id", c->id) == -1) ||
	    (since != NULL && cli_http_query(h, "since", since) == -1) ? -1 : 0;
}

/* -f: the stream; one that breaks says where to resume. */
static int
cli_events_follow(struct cli *c)
{
	struct cli_sse	 s;
	struct cli_http	 h;
	int		 rv;

	memset(&s, 0, sizeof(s));
	s.event = cli_events_sse;
	s.arg = c;
	cli_http_init(&h, "GET");
	h.accept = "text/event-stream";
	h.boot = c->boot;
	h.stream = cli_sse_feed;
	h.arg = &s;
	if (cli_events_target(c, &h, c->since, 1) == -1) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	rv = cli_http_call(c, &h);
	if ((rv == CLI_UNREACHABLE || (rv == CLI_OK && c->boot == NULL)) &&
	    s.cursor[0] != '\0') {
		cli_warnx("the stream ended; resume with: tend events -f "
		    "--since %s", s.cursor);
		rv = CLI_UNREACHABLE;
	}
	cli_sse_free(&s);
	cli_http_free(&h);
	return rv;
}

/* Pages until one is empty: what there is now, then exit 0. */
int
cli_events(struct cli *c)
{
	struct cli_http	 h;
	const cJSON	*evs, *e, *next;
	cJSON		*j;
	char		 since[CLI_CURSOR_MAX];
	int		 rv, n;

	if (buf_avail(&c->types) > 0 && buf_add(&c->types, "", 1) == -1)
		return CLI_REFUSED;
	if (c->follow)
		return cli_events_follow(c);
	snprintf(since, sizeof(since), "%s", c->since ? c->since : "");
	for (;;) {
		cli_http_init(&h, "GET");
		h.accept = "application/json";
		h.boot = c->boot;
		if (cli_events_target(c, &h, since[0] ? since : NULL, 0) ==
		    -1) {
			cli_http_free(&h);
			return CLI_REFUSED;
		}
		if ((rv = cli_http_call(c, &h)) != CLI_OK) {
			cli_http_free(&h);
			return rv;
		}
		j = cli_http_json(&h);
		cli_http_free(&h);
		evs = cJSON_GetObjectItemCaseSensitive(j, "events");
		next = cJSON_GetObjectItemCaseSensitive(j, "next");
		if (!cJSON_IsArray(evs) || !cJSON_IsString(next)) {
			cli_warnx("bad reply from the agent: not an events page");
			cJSON_Delete(j);
			return CLI_REFUSED;
		}
		n = 0;
		cJSON_ArrayForEach(e, evs) {
			n++;
			if (cli_events_print(c, (cJSON *)e) == -1) {
				cJSON_Delete(j);
				return CLI_REFUSED;
			}
		}
		snprintf(since, sizeof(since), "%s", next->valuestring);
		cJSON_Delete(j);
		if (n == 0)
			return CLI_OK;
	}
}
