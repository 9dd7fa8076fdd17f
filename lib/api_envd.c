/*
 * api_envd.c: envd's process.Process over tend's process and terminal
 * tables, and POST /init.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_envd.h"
#include "envd.h"

static void	api_envd_init(struct http_conn *, struct http_req *);

const struct http_route api_envd_routes[] = {
	{ "POST",	"/process.Process/*",	envd_unimplemented, NULL },
	{ "POST",	"/init",		api_envd_init, NULL },
	{ NULL, NULL, NULL, NULL }
};

/* ------------------------------------------------------------------ */
/* POST /init */

/* 204, as envd answers it; the defaults hold for later requests. */
static void
api_envd_init(struct http_conn *c, struct http_req *r)
{
	struct envd_err	 e;
	cJSON		*j;

	if ((j = envd_unary_body(r, &e)) == NULL) {
		envd_reply_err(c, &e);
		return;
	}
	if (envd_apply_init(api_of(c)->envd, j, &e) == -1)
		envd_reply_err(c, &e);
	else
		http_reply(c, 204, NULL, NULL, 0);
	cJSON_Delete(j);
}
