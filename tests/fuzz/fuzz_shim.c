/*
 * fuzz_shim: a TCP client's byte stream, cut into pieces, through the
 * real shim (lib/shim.c) to the real HTTP server on a unix socket.
 *
 * Input: byte 0 chooses how the rest is delivered, as in fuzz_http; the
 * rest is what the client sends.  The shim checks each request head's
 * token, removes it and forwards the request; what comes back must be a
 * well-formed sequence of HTTP/1.1 responses (the shim's own 400, 401
 * and 502 included), the shim must never crash, leak or hang, and once
 * the client is gone both its connections must be closed.
 */
#include <netinet/in.h>
#include <sys/socket.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fuzzsrv.h"
#include "net/shim.h"

#define FUZZ_SHIM_TOKEN		"fuzz-token"
#define FUZZ_SHIM_TURNS		1000	/* after the exchange, until closed */

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void	fs_health(struct http_conn *, struct http_req *);
static void	fs_echo(struct http_conn *, struct http_req *);

static const struct http_route fs_routes[] = {
	{ "GET",	"/health",	fs_health, NULL },
	{ "GET",	"/v1/health",	fs_health, NULL },
	{ "HEAD",	"/v1/health",	fs_health, NULL },
	{ "POST",	"/v1/echo",	fs_echo, NULL },
	{ "PUT",	"/v1/echo/*",	fs_echo, NULL },
	{ NULL, NULL, NULL, NULL }
};

static struct shim		*fs_shim;
static struct sockaddr_in	 fs_addr;

static void
fs_health(struct http_conn *c, struct http_req *r)
{
	static const char	ok[] = "{\"ok\":true}";

	(void)r;
	http_reply(c, 200, "application/json", ok, sizeof(ok) - 1);
}

/* The body as it arrived: what the shim forwarded of it. */
static void
fs_echo(struct http_conn *c, struct http_req *r)
{
	const char	*auth = http_header(r, "Authorization");
	const char	*xat = http_header(r, "X-Access-Token");

	/* The token never reaches the agent; another scheme (Basic) does. */
	if ((auth != NULL && strncasecmp(auth, "bearer", 6) == 0) ||
	    xat != NULL) {
		fprintf(stderr, "fuzz_shim: token header forwarded: %s\n",
		    auth != NULL ? auth : xat);
		abort();
	}
	http_reply(c, 200, "application/octet-stream", r->body.data,
	    r->body.len);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct sockaddr_storage	ss;
	struct shim_config	cfg;
	socklen_t		len;
	int			fd;

	(void)argc;
	(void)argv;
	fuzzsrv_start(fs_routes, NULL);
	if (shim_parse_addr("127.0.0.1:0", &ss, &len) == -1 ||
	    (fd = shim_bind(&ss, len)) == -1) {
		perror("fuzz_shim: bind");
		abort();
	}
	len = sizeof(fs_addr);
	if (getsockname(fd, (struct sockaddr *)&fs_addr, &len) == -1) {
		perror("fuzz_shim: getsockname");
		abort();
	}
	memset(&cfg, 0, sizeof(cfg));
	cfg.socket = fuzzsrv_socket_path();
	cfg.token = FUZZ_SHIM_TOKEN;
	cfg.token_len = strlen(FUZZ_SHIM_TOKEN);
	cfg.maxconns = 16;
	if ((fs_shim = shim_new(fuzzsrv_loop, fd, &cfg)) == NULL) {
		perror("fuzz_shim: shim_new");
		abort();
	}
	return 0;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	struct fuzzsrv_opts	o;
	int			i;

	if (n == 0)
		return 0;
	memset(&o, 0, sizeof(o));
	o.pieces = 1 + (d[0] & 7);
	o.halfclose = (d[0] & 8) != 0;
	o.spins = (d[0] & 0x10) ? 0 : 16;
	o.seed = d[0] >> 5;
	o.to = (const struct sockaddr *)&fs_addr;
	o.tolen = sizeof(fs_addr);
	(void)fuzzsrv_exchange(d + 1, n - 1, &o);
	for (i = 0; shim_nconns(fs_shim) > 0; i++) {
		if (i == FUZZ_SHIM_TURNS) {
			fprintf(stderr, "fuzz_shim: connection kept after "
			    "the client closed\n");
			abort();
		}
		ev_run(fuzzsrv_loop, EVRUN_NOWAIT);
	}
	return 0;
}
