/*
 * cli_ports.c: tend ports — the listening TCP sockets (GET /v1/ports),
 * a line each: PORT, ADDRESS, PID and ID (the record or terminal that
 * owns it, "-" when none of tend's does).
 */
#include <stdio.h>

#include <cjson/cJSON.h>

#include "base/buf.h"

#include "cli.h"

static void
cli_ports_print(const cJSON *a)
{
	const cJSON	*p, *v;
	const char	*s, *id;
	char		 pid[24];

	printf("%-6s %-40s %-8s %s\n", "PORT", "ADDRESS", "PID", "ID");
	cJSON_ArrayForEach(p, a) {
		v = cJSON_GetObjectItemCaseSensitive(p, "pid");
		if (cJSON_IsNumber(v))
			snprintf(pid, sizeof(pid), "%d", v->valueint);
		else
			snprintf(pid, sizeof(pid), "-");
		s = cli_fmt_str(p, "address");
		id = cli_fmt_str(p, "id");
		printf("%-6d %-40s %-8s %s\n", cli_fmt_int(p, "port", 0),
		    s != NULL ? s : "?", pid, id != NULL ? id : "-");
	}
}

int
cli_ports(struct cli *c)
{
	struct cli_http	 h;
	cJSON		*j;
	int		 rv;

	cli_http_init(&h, "GET");
	if (buf_addstr(&h.target, "/v1/ports") == -1) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	if ((rv = cli_http_call(c, &h)) == CLI_OK) {
		if (c->json)
			cli_http_print_reply(&h);
		else if ((j = cli_http_json(&h)) == NULL || !cJSON_IsArray(j)) {
			cli_warnx("bad reply from the agent: not a JSON array");
			rv = CLI_REFUSED;
			cJSON_Delete(j);
		} else {
			cli_ports_print(j);
			cJSON_Delete(j);
		}
	}
	cli_http_free(&h);
	return rv;
}
