/*
 * cli_term.c: tend term — the caller's terminal attached to a tend
 * terminal over the connect route (a WebSocket on the agent's socket,
 * lib/net/ws.c's client side).  The terminal is created (or reattached, for
 * a live ID) first; the replay from its start comes before live output.
 * The caller's terminal is raw while attached and restored on every way
 * out; Ctrl-] detaches and leaves the terminal running.
 */
#include <sys/ioctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/codec.h"
#include "cli.h"
#include "net/ws.h"

#define CLI_TERM_DETACH	0x1d	/* Ctrl-] */

static struct termios	cli_term_saved;
static int		cli_term_raw;
static volatile sig_atomic_t cli_term_winch;

static void
cli_term_restore(void)
{
	if (cli_term_raw)
		(void)tcsetattr(STDIN_FILENO, TCSAFLUSH, &cli_term_saved);
	cli_term_raw = 0;
}

static void
cli_term_on_winch(int sig)
{
	(void)sig;
	cli_term_winch = 1;
}

static void
cli_term_size(unsigned int *cols, unsigned int *rows)
{
	struct winsize	ws;

	*cols = *rows = 0;
	if (ioctl(STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 &&
	    ws.ws_row > 0) {
		*cols = ws.ws_col;
		*rows = ws.ws_row;
	}
}

/* POST /v1/terminals: the ID of the terminal (new, or live), or NULL. */
static char *
cli_term_create(struct cli *c, int *rv)
{
	struct cli_http	 h;
	unsigned int	 cols, rows;
	const cJSON	*id;
	cJSON		*argv, *reply;
	char		*out = NULL;
	int		 i;

	cli_http_init(&h, "POST");
	buf_addstr(&h.target, "/v1/terminals");
	h.json = cJSON_CreateObject();
	if (c->id != NULL)
		cJSON_AddStringToObject(h.json, "id", c->id);
	if (c->cwd != NULL)
		cJSON_AddStringToObject(h.json, "cwd", c->cwd);
	if (c->env != NULL)
		cJSON_AddItemToObject(h.json, "env", cJSON_Duplicate(c->env, 1));
	if (c->nargs > 0) {
		argv = cJSON_AddArrayToObject(h.json, "argv");
		for (i = 0; i < c->nargs; i++)
			cJSON_AddItemToArray(argv, cJSON_CreateString(c->args[i]));
	}
	cli_term_size(&cols, &rows);
	if (cols > 0) {
		cJSON_AddNumberToObject(h.json, "cols", cols);
		cJSON_AddNumberToObject(h.json, "rows", rows);
	}
	if ((*rv = cli_http_call(c, &h)) == CLI_OK &&
	    (reply = cli_http_json(&h)) != NULL) {
		id = cJSON_GetObjectItemCaseSensitive(reply, "id");
		if (cJSON_IsString(id))
			out = strdup(id->valuestring);
		cJSON_Delete(reply);
	}
	cli_http_free(&h);
	return out;
}

/* The connect handshake on a new socket: the socket, or -1. */
static int
cli_term_connect(struct cli *c, const char *id, struct buf *rest)
{
	struct sockaddr_un	 sa = { .sun_family = AF_UNIX };
	unsigned char		 nonce[16];
	struct buf		 key = { 0 }, req = { 0 };
	unsigned int		 cols, rows;
	char			 b[512], *end = NULL;
	ssize_t			 n;
	int			 fd;

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", c->sock);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1) {
		cli_warnx("cannot reach the agent at %s: %s", c->sock,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return -1;
	}
	if (getrandom(nonce, sizeof(nonce), 0) != sizeof(nonce))
		memset(nonce, 0x5a, sizeof(nonce));
	cli_term_size(&cols, &rows);
	(void)codec_b64_encode(&key, nonce, sizeof(nonce));
	(void)buf_add(&key, "", 1);
	(void)buf_printf(&req, "GET /v1/terminals/%s/connect", id);
	if (cols > 0)
		(void)buf_printf(&req, "?cols=%u&rows=%u", cols, rows);
	(void)buf_printf(&req, " HTTP/1.1\r\nHost: tend\r\nUpgrade: websocket"
	    "\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n"
	    "Sec-WebSocket-Key: %s\r\n\r\n", key.data);
	n = write(fd, buf_head(&req), buf_avail(&req));
	buf_free(&key);
	buf_free(&req);
	while (n > 0 && (rest->len == 0 || (end = memmem(rest->data,
	    rest->len, "\r\n\r\n", 4)) == NULL)) {
		if ((n = read(fd, b, sizeof(b))) > 0)
			(void)buf_add(rest, b, (size_t)n);
	}
	if (n <= 0 || rest->len < 12 || memcmp(rest->data, "HTTP/1.1 101",
	    12) != 0) {
		cli_warnx("the agent refused the connection: %.*s",
		    (int)(rest->len > 200 ? 200 : rest->len), rest->data);
		close(fd);
		return -1;
	}
	buf_consume(rest, (size_t)(end + 4 - rest->data));
	return fd;
}

static int
cli_term_send(int fd, enum ws_opcode op, const void *d, size_t n)
{
	unsigned char	 mask[4];
	struct buf	 b = { 0 };
	size_t		 off = 0;
	ssize_t		 w;

	if (getrandom(mask, sizeof(mask), 0) != sizeof(mask))
		memset(mask, 0x3c, sizeof(mask));
	if (ws_frame_client(&b, op, d, n, mask) == -1)
		return -1;
	while (off < b.len) {
		if ((w = write(fd, b.data + off, b.len - off)) == -1 &&
		    errno == EINTR)
			continue;
		if (w <= 0) {
			buf_free(&b);
			return -1;
		}
		off += (size_t)w;
	}
	buf_free(&b);
	return 0;
}

static void
cli_term_resize(int fd)
{
	unsigned int	cols, rows;
	char		j[64];
	int		n;

	cli_term_size(&cols, &rows);
	if (cols == 0)
		return;
	n = snprintf(j, sizeof(j), "{\"type\":\"resize\",\"cols\":%u,"
	    "\"rows\":%u}", cols, rows);
	(void)cli_term_send(fd, WS_OP_TEXT, j, (size_t)n);
}

/* One server message: -1 to go on, else the exit code. */
static int
cli_term_message(const struct ws_event *ev)
{
	const cJSON	*type, *exit, *code, *msg;
	cJSON		*j;
	int		 rv = -1;
	ssize_t		 n;
	size_t		 off;

	if (ev->type == WS_EV_BINARY) {
		for (off = 0; off < ev->len; off += (size_t)n)
			if ((n = write(STDOUT_FILENO, ev->data + off,
			    ev->len - off)) <= 0)
				return CLI_UNREACHABLE;
		return -1;
	}
	if ((j = cJSON_ParseWithLength(ev->data, ev->len)) == NULL)
		return -1;
	type = cJSON_GetObjectItemCaseSensitive(j, "type");
	if (cJSON_IsString(type) && strcmp(type->valuestring, "exit") == 0) {
		exit = cJSON_GetObjectItemCaseSensitive(j, "exit");
		code = cJSON_GetObjectItemCaseSensitive(exit, "code");
		rv = cJSON_IsNumber(code) ? code->valueint : 1;
	} else if (cJSON_IsString(type) &&
	    strcmp(type->valuestring, "error") == 0) {
		msg = cJSON_GetObjectItemCaseSensitive(j, "message");
		cli_term_restore();
		cli_warnx("%s", cJSON_IsString(msg) ? msg->valuestring :
		    "error");
	}
	cJSON_Delete(j);
	return rv;
}

/* What came from the agent: -1 to go on, else the exit code. */
static int
cli_term_input(struct ws_parser *p, struct buf *in)
{
	struct ws_event	ev;
	ssize_t		n;
	int		rv;

	while (buf_avail(in) > 0) {
		if ((n = ws_parse(p, buf_head(in), buf_avail(in), &ev)) == -1)
			return CLI_UNREACHABLE;
		buf_consume(in, (size_t)n);
		switch (ev.type) {
		case WS_EV_TEXT:
		case WS_EV_BINARY:
			if ((rv = cli_term_message(&ev)) != -1)
				return rv;
			break;
		case WS_EV_CLOSE:
		case WS_EV_ERROR:
			return CLI_UNREACHABLE;
		default:
			break;
		}
	}
	return -1;
}

/* Keys to the terminal; Ctrl-] detaches (0), else -1 to go on. */
static int
cli_term_keys(int fd)
{
	char	 b[4096], *d;
	ssize_t	 n;

	if ((n = read(STDIN_FILENO, b, sizeof(b))) <= 0)
		return n == -1 && errno == EINTR ? -1 : CLI_OK;
	d = memchr(b, CLI_TERM_DETACH, (size_t)n);
	if (d != NULL)
		n = d - b;
	if (n > 0 && cli_term_send(fd, WS_OP_BINARY, b, (size_t)n) == -1)
		return CLI_UNREACHABLE;
	if (d != NULL) {
		(void)cli_term_send(fd, WS_OP_CLOSE, "\x03\xe8", 2);
		return CLI_OK;
	}
	return -1;
}

static int
cli_term_loop(int fd, struct buf *in)
{
	struct pollfd		 pf[2] = { { STDIN_FILENO, POLLIN, 0 },
				    { fd, POLLIN, 0 } };
	struct ws_parser	 p;
	char			*r;
	ssize_t			 n;
	int			 rv = -1;

	ws_parser_init_client(&p, 0);
	rv = cli_term_input(&p, in);
	while (rv == -1) {
		if (cli_term_winch) {
			cli_term_winch = 0;
			cli_term_resize(fd);
		}
		if (poll(pf, 2, -1) == -1) {
			if (errno != EINTR)
				rv = CLI_UNREACHABLE;
			continue;
		}
		if (pf[0].revents & (POLLIN | POLLHUP))
			rv = cli_term_keys(fd);
		if (rv == -1 && pf[1].revents & (POLLIN | POLLHUP)) {
			if ((r = buf_reserve(in, 65536)) == NULL ||
			    (n = read(fd, r, 65536)) <= 0) {
				rv = CLI_UNREACHABLE;
				break;
			}
			in->len += (size_t)n;
			rv = cli_term_input(&p, in);
		}
	}
	ws_parser_free(&p);
	return rv;
}

int
cli_term(struct cli *c)
{
	struct sigaction	 sa;
	struct termios		 raw;
	struct buf		 in = { 0 };
	char			*id;
	int			 fd, rv;

	if ((id = cli_term_create(c, &rv)) == NULL)
		return rv != CLI_OK ? rv : CLI_REFUSED;
	if ((fd = cli_term_connect(c, id, &in)) == -1) {
		free(id);
		buf_free(&in);
		return CLI_UNREACHABLE;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = cli_term_on_winch;
	(void)sigaction(SIGWINCH, &sa, NULL);
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO,
	    &cli_term_saved) == 0) {
		raw = cli_term_saved;
		cfmakeraw(&raw);
		if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &raw) == 0) {
			cli_term_raw = 1;
			atexit(cli_term_restore);
		}
	}
	rv = cli_term_loop(fd, &in);
	cli_term_restore();
	if (rv == CLI_OK && c->id == NULL)
		fprintf(stderr, "tend: detached from terminal %s\n", id);
	close(fd);
	buf_free(&in);
	free(id);
	return rv;
}
