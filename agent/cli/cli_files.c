/*
 * cli_files.c: the file commands — cat, put, ls, persist, hydrate — each
 * one call to the file routes (/v1/file/PATH, /v1/persist, /v1/hydrate).
 * Bodies stream both ways: stdin is sent in chunks as it is read, a
 * reply is written to stdout as it arrives; nothing is held whole.
 */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/buf.h"

#include "cli.h"

static int	cli_files_root(struct cli_http *, const char *);
static int	cli_files_out(void *, const char *, size_t);
static int	cli_files_ls_head(void *, struct cli_http *);
static void	cli_files_ls_print(const cJSON *);
static int	cli_files_watch_event(struct cli_sse *, cJSON *);

/* ?root=DIR, absolute: a relative DIR is the current directory's. */
static int
cli_files_root(struct cli_http *h, const char *dir)
{
	char	cwd[PATH_MAX], abs[PATH_MAX];

	if (dir[0] != '/') {
		if (getcwd(cwd, sizeof(cwd)) == NULL ||
		    snprintf(abs, sizeof(abs), "%s/%s", cwd, dir) >=
		    (int)sizeof(abs))
			return -1;
		dir = abs;
	}
	return cli_http_query(h, "root", dir);
}

/* A reply's body to stdout as it comes. */
static int
cli_files_out(void *arg, const char *d, size_t n)
{
	(void)arg;
	return fwrite(d, 1, n, stdout) == n ? 0 : -1;
}

/* tend cat [--range A-B] PATH: the bytes, raw. */
int
cli_files_cat(struct cli *c)
{
	struct cli_http	 h;
	char		 range[64];
	int		 rv;

	cli_http_init(&h, "GET");
	h.stream = cli_files_out;
	if (c->range != NULL) {
		snprintf(range, sizeof(range), "Range: bytes=%s", c->range);
		h.header = range;
	}
	if (cli_http_path_target(&h, "/v1/file", c->args[0]) == -1)
		rv = CLI_REFUSED;
	else
		rv = cli_http_call(c, &h);
	cli_http_free(&h);
	return rv;
}

/* tend put [--mode M] [--append] PATH < data: stdin, streamed. */
int
cli_files_put(struct cli *c)
{
	struct cli_http	h;
	int		rv;

	cli_http_init(&h, "PUT");
	h.bodyfd = STDIN_FILENO;
	if (cli_http_path_target(&h, "/v1/file", c->args[0]) == -1 ||
	    (c->mode != NULL && cli_http_query(&h, "mode", c->mode) == -1) ||
	    (c->append && cli_http_query(&h, "append", "1") == -1))
		rv = CLI_REFUSED;
	else
		rv = cli_http_call(c, &h);
	cli_http_free(&h);
	return rv;
}

/* Not a listing (a file's bytes would follow): stop before the body. */
static int
cli_files_ls_head(void *arg, struct cli_http *h)
{
	(void)arg;
	if (h->status / 100 == 2 &&
	    strncmp(h->ctype, "application/json", 16) != 0)
		return -1;
	return 0;
}

/* "type mode size mtime name[ -> target]", one line per entry. */
static void
cli_files_ls_print(const cJSON *j)
{
	const cJSON	*e, *size;
	const char	*t;

	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(j, "entries")) {
		size = cJSON_GetObjectItemCaseSensitive(e, "size");
		printf("%-7s %04o %12.0f %s %s", cli_fmt_str(e, "type"),
		    (unsigned)cli_fmt_int(e, "mode", 0),
		    cJSON_IsNumber(size) ? size->valuedouble : 0.0,
		    cli_fmt_str(e, "mtime"), cli_fmt_str(e, "name"));
		if ((t = cli_fmt_str(e, "target")) != NULL)
			printf(" -> %s", t);
		putchar('\n');
	}
	if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "truncated")))
		cli_warnx("the listing was cut short");
}

/* tend ls [-R|--depth N] [--json] PATH */
int
cli_files_ls(struct cli *c)
{
	struct cli_http	 h;
	char		 depth[16];
	cJSON		*j;
	int		 rv;

	cli_http_init(&h, "GET");
	h.accept = "application/json";
	h.head = cli_files_ls_head;
	h.failcode = CLI_OK;
	snprintf(depth, sizeof(depth), "%d", c->depth > 0 ? c->depth : 1);
	if (cli_http_path_target(&h, "/v1/file", c->args[0]) == -1 ||
	    cli_http_query(&h, "depth", depth) == -1) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	rv = cli_http_call(c, &h);
	if (rv == CLI_OK && h.status / 100 == 2 &&
	    strncmp(h.ctype, "application/json", 16) != 0)
		printf("%s\n", c->args[0]);	/* a file: itself, as ls(1) */
	else if (rv == CLI_OK && c->json)
		cli_http_print_reply(&h);
	else if (rv == CLI_OK) {
		if ((j = cli_http_json(&h)) == NULL) {
			cli_warnx("bad reply from the agent: not JSON");
			rv = CLI_REFUSED;
		} else
			cli_files_ls_print(j);
		cJSON_Delete(j);
	}
	cli_http_free(&h);
	return rv;
}

/* tend persist [--exclude P]... DIR > ws.tar */
int
cli_files_persist(struct cli *c)
{
	struct cli_http	h;
	int		rv;

	cli_http_init(&h, "POST");
	h.stream = cli_files_out;
	if (buf_addstr(&h.target, "/v1/persist") == -1 ||
	    cli_files_root(&h, c->args[0]) == -1 ||
	    (buf_avail(&c->excludes) > 0 && (buf_add(&c->excludes, "", 1) ==
	    -1 || cli_http_query(&h, "excludes",
	    buf_head(&c->excludes)) == -1)))
		rv = CLI_REFUSED;
	else
		rv = cli_http_call(c, &h);
	cli_http_free(&h);
	return rv;
}

/* tend hydrate DIR < ws.tar */
int
cli_files_hydrate(struct cli *c)
{
	struct cli_http	h;
	int		rv;

	cli_http_init(&h, "POST");
	h.bodyfd = STDIN_FILENO;
	if (buf_addstr(&h.target, "/v1/hydrate") == -1 ||
	    cli_files_root(&h, c->args[0]) == -1)
		rv = CLI_REFUSED;
	else if ((rv = cli_http_call(c, &h)) == CLI_OK && c->json)
		cli_http_print_reply(&h);
	cli_http_free(&h);
	return rv;
}

/* One event of tend watch: "type path", or the JSON as it came. */
static int
cli_files_watch_event(struct cli_sse *s, cJSON *j)
{
	const struct cli	*c = s->arg;
	const char		*type = cli_fmt_str(j, "type");
	const char		*path = cli_fmt_str(j, "path");
	char			*txt;

	if (type == NULL || path == NULL) {
		cli_warnx("bad reply from the agent: an event without type "
		    "or path");
		return -1;
	}
	if (c->json) {
		if ((txt = cJSON_PrintUnformatted(j)) == NULL)
			return -1;
		printf("%s\n", txt);
		free(txt);
	} else
		printf("%s %s\n", type, path);
	if (strcmp(type, "truncated") == 0)
		cli_warnx("events were lost here (a watch limit, or the "
		    "kernel's queue overflowed)");
	return fflush(stdout) == 0 ? 0 : -1;
}

/* tend watch [-R] [--json] DIR: its events until DIR goes. */
int
cli_files_watch(struct cli *c)
{
	struct cli_sse	 s;
	struct cli_http	 h;
	char		 cwd[PATH_MAX], abs[PATH_MAX];
	const char	*dir = c->args[0];
	int		 rv;

	if (dir[0] != '/') {
		if (getcwd(cwd, sizeof(cwd)) == NULL ||
		    snprintf(abs, sizeof(abs), "%s/%s", cwd, dir) >=
		    (int)sizeof(abs)) {
			cli_report(c, "invalid_request", "%s: path too long",
			    dir);
			return CLI_USAGE;
		}
		dir = abs;
	}
	memset(&s, 0, sizeof(s));
	s.event = cli_files_watch_event;
	s.arg = c;
	cli_http_init(&h, "GET");
	h.accept = "text/event-stream";
	h.stream = cli_sse_feed;
	h.arg = &s;
	h.named = 1;
	if (buf_addstr(&h.target, "/v1/watch") == -1 ||
	    cli_http_query(&h, "path", dir) == -1 ||
	    (c->depth != 0 && cli_http_query(&h, "recursive", "1") == -1)) {
		cli_http_free(&h);
		return CLI_REFUSED;
	}
	rv = cli_http_call(c, &h);
	cli_sse_free(&s);
	cli_http_free(&h);
	return rv;
}
