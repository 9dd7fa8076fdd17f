/*
 * fuzzsrv: the real HTTP server (lib/net/http.c) on a unix socket in a
 * temporary directory, and one client that feeds it a fuzzer's bytes.
 *
 * Shared by the fuzz targets that reach lib code through requests.  The
 * server lives for the whole run; each input gets its own connection,
 * which must be freed again before the next input: a connection that
 * outlives its client is a leak or a hang, and aborts the run.
 */
#ifndef TEND_FUZZSRV_H
#define TEND_FUZZSRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "net/http.h"

struct fuzzsrv_opts {
	int		 pieces;	/* writes the input is cut into, >= 1 */
	unsigned	 seed;		/* where the cuts fall */
	bool		 halfclose;	/* shutdown(SHUT_WR), read to EOF */
	int		 want;		/* responses that end the wait; 0: none */
	int		 spins;		/* loop turns to wait for replies */
	/*
	 * s of real time the server may take to close after a half-close
	 * and to free the connection (one that waits for children); 0:
	 * loop turns, as for a server that never waits.
	 */
	double		 free_s;
	/* Connect here instead of the server's unix socket (a proxy). */
	const struct sockaddr	*to;
	socklen_t		 tolen;
};

extern struct ev_loop		*fuzzsrv_loop;
extern struct http_server	*fuzzsrv_srv;

/* The server's unix socket, for a proxy in front of it. */
const char *fuzzsrv_socket_path(void);
/*
 * The loop and the socket's directory (in tmp, NULL: /tmp), for a target
 * that makes its own server on fuzzsrv_socket_path() and sets
 * fuzzsrv_srv; aborts on failure.
 */
void	fuzzsrv_init(const char *tmp);
/* fuzzsrv_init, then listen with these routes; aborts on failure. */
void	fuzzsrv_start(const struct http_route *, void *ctx);
/*
 * Send d as one client, check what comes back is a well-formed sequence
 * of HTTP/1.1 responses, close, and wait for the server to free the
 * connection.  The number of complete responses read.
 */
int	fuzzsrv_exchange(const uint8_t *d, size_t n,
	    const struct fuzzsrv_opts *);

#endif
