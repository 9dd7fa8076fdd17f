/*
 * cli_sse.c: the Server-Sent Events stream of a process's output, as
 * logs and run read it — body pieces cut into lines, lines gathered into
 * events, and each event handled on its JSON "type": output written to
 * stdout or stderr, a gap reported, the terminal event's exit code kept.
 * The last "id:" is kept so that a broken stream can be resumed.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/buf.h"

#include "cli.h"

struct cli_sse_type {
	const char	*type;
	int		(*fn)(struct cli_sse *, cJSON *);
};

static int	cli_sse_line(struct cli_sse *, char *, size_t);
static int	cli_sse_event(struct cli_sse *);
static int	cli_sse_output(struct cli_sse *, cJSON *);
static int	cli_sse_truncated(struct cli_sse *, cJSON *);
static int	cli_sse_terminal(struct cli_sse *, cJSON *);

static const struct cli_sse_type cli_sse_types[] = {
	{ "stdout", cli_sse_output },
	{ "stderr", cli_sse_output },
	{ "truncated", cli_sse_truncated },
	{ "terminal", cli_sse_terminal },
};

/* Body pieces in, lines out: a line may arrive in many pieces. */
int
cli_sse_feed(void *arg, const char *d, size_t n)
{
	struct cli_sse	*s = arg;
	const char	*nl;
	size_t		 k;

	while (n > 0) {
		nl = memchr(d, '\n', n);
		k = nl != NULL ? (size_t)(nl - d) : n;
		if (buf_avail(&s->line) + k > CLI_SSE_LINE_MAX) {
			cli_warnx("bad reply from the agent: an event line "
			    "longer than %d bytes", CLI_SSE_LINE_MAX);
			return -1;
		}
		if (buf_add(&s->line, d, k) == -1) {
			cli_warnx("out of memory");
			return -1;
		}
		if (nl == NULL)
			break;
		if (buf_add(&s->line, "", 1) == -1) {
			cli_warnx("out of memory");
			return -1;
		}
		if (cli_sse_line(s, buf_head(&s->line),
		    buf_avail(&s->line) - 1) == -1)
			return -1;
		buf_reset(&s->line);
		d += k + 1;
		n -= k + 1;
	}
	return 0;
}

void
cli_sse_free(struct cli_sse *s)
{
	buf_free(&s->line);
	buf_free(&s->data);
}

/* One line (NUL-ended, without its newline) of the event stream. */
static int
cli_sse_line(struct cli_sse *s, char *line, size_t len)
{
	char	*val;

	if (len > 0 && line[len - 1] == '\r')
		line[--len] = '\0';
	if (len == 0) {
		if (buf_avail(&s->data) == 0)
			return 0;
		return cli_sse_event(s);
	}
	if (line[0] == ':')
		return 0;		/* a comment: heartbeat */
	if ((val = strchr(line, ':')) != NULL) {
		*val++ = '\0';
		if (*val == ' ')
			val++;
	} else
		val = line + len;
	if (strcmp(line, "data") == 0) {
		if ((buf_avail(&s->data) > 0 && buf_add(&s->data, "\n", 1)) ||
		    buf_addstr(&s->data, val) == -1) {
			cli_warnx("out of memory");
			return -1;
		}
	} else if (strcmp(line, "id") == 0)
		snprintf(s->cursor, sizeof(s->cursor), "%s", val);
	return 0;
}

/* Dispatch a complete event on its JSON "type"; unknown types pass. */
static int
cli_sse_event(struct cli_sse *s)
{
	const char	*type;
	cJSON		*j;
	size_t		 i;
	int		 rv = 0;

	j = cJSON_ParseWithLength(buf_head(&s->data), buf_avail(&s->data));
	buf_reset(&s->data);
	if (j == NULL) {
		cli_warnx("bad reply from the agent: an event that is not "
		    "JSON");
		return -1;
	}
	if (s->event != NULL)
		rv = s->event(s, j);
	else if ((type = cli_fmt_str(j, "type")) != NULL)
		for (i = 0; i < sizeof(cli_sse_types) /
		    sizeof(cli_sse_types[0]); i++)
			if (strcmp(cli_sse_types[i].type, type) == 0) {
				rv = cli_sse_types[i].fn(s, j);
				break;
			}
	cJSON_Delete(j);
	return rv;
}

static int
cli_sse_output(struct cli_sse *s, cJSON *j)
{
	const char	*type, *data;
	int		 fd;

	type = cli_fmt_str(j, "type");
	fd = strcmp(type, "stdout") == 0 ? STDOUT_FILENO : STDERR_FILENO;
	if (s->streams != 0 &&
	    !(s->streams & (fd == STDOUT_FILENO ? STREAM_OUT : STREAM_ERR)))
		return 0;
	if ((data = cli_fmt_str(j, "data")) == NULL) {
		cli_warnx("bad reply from the agent: %s event without data",
		    type);
		return -1;
	}
	return cli_fmt_b64(fd, data);
}

static int
cli_sse_truncated(struct cli_sse *s, cJSON *j)
{
	cJSON	*n;

	(void)s;
	n = cJSON_GetObjectItemCaseSensitive(j, "skippedBytes");
	if (cJSON_IsNumber(n))
		cli_warnx("%.0f bytes of output were dropped here (the log "
		    "keeps only the newest)", n->valuedouble);
	else
		cli_warnx("output was dropped here (the log keeps only the "
		    "newest)");
	return 0;
}

static int
cli_sse_terminal(struct cli_sse *s, cJSON *j)
{
	s->ended = 1;
	s->code = cli_fmt_exit_code(j, NULL);
	return 0;
}
