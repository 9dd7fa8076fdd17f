/*
 * shim: the token-gated TCP front of the agent's unix socket.  Each TCP
 * client gets its own connection to the agent; its request heads are
 * checked (Authorization: Bearer, or X-Access-Token), stripped of the
 * token and forwarded in order, bodies and replies byte for byte; after a
 * 101 both sockets are spliced.  It links no process or file code.
 *
 * The proxy: a request for a port of the container (the path form
 * /v1/ports/PORT/proxy/REST, or a preview host PORT-anything.DOMAIN or
 * PORT.SUFFIX) goes, after the same check, to 127.0.0.1:PORT (or
 * [::1]:PORT) instead: the shim connects there itself.
 */
#ifndef TEND_SHIM_H
#define TEND_SHIM_H

#include <sys/socket.h>
#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>

#include <ev.h>

#include "base/buf.h"

struct shim;

/* The ports the proxy may reach: one bit each. */
struct shim_ports {
	unsigned char	 bits[65536 / 8];
};

struct shim_config {
	const char	*socket;	/* the agent's unix socket */
	const char	*token;		/* NULL: no authentication */
	size_t		 token_len;
	int		 maxconns;
	/* The proxy: off when ports is NULL (every request: the agent). */
	const struct shim_ports *ports;
	const char	*host_suffix;	/* PORT.SUFFIX hosts; NULL: none */
	int		 self_port;	/* the shim's own: never proxied */
};

/* Where a request goes. */
struct shim_route {
	int		 port;		/* 0: the agent */
	size_t		 prefix;	/* path form: /v1/ports/N/proxy's bytes */
};

/*
 * Parse "A.B.C.D:PORT" or "[v6]:PORT" (numeric only) into ss.  -1 and
 * EINVAL when it is neither.
 */
int	shim_parse_addr(const char *, struct sockaddr_storage *, socklen_t *);

/* A listening TCP socket on addr (non-blocking, close-on-exec). */
int	shim_bind(const struct sockaddr_storage *, socklen_t);

/* Serve clients accepted on the listening fd; NULL and errno. */
struct shim *shim_new(struct ev_loop *, int fd, const struct shim_config *);
int	shim_nconns(const struct shim *);
void	shim_free(struct shim *);

/*
 * Parse --proxy-ports: "none", or a list of ports and ranges
 * ("3000,8000-9000"); NULL or "all": every port.  The shim's own port
 * (self) is never among them.  -1 and EINVAL when malformed.
 */
int	shim_ports_parse(struct shim_ports *, const char *, int self);
bool	shim_ports_has(const struct shim_ports *, int port);
/*
 * The port a Host value v[0, n) names: its first label PORT-anything,
 * or PORT.suffix (suffix NULL: none); 0: neither (the agent's).
 */
int	shim_host_port(const char *v, size_t n, const char *suffix);
/*
 * Route the head h[0, n) (a whole, well-formed one or not: a head that
 * is not goes to the agent's check) by its Host, then its path.
 */
void	shim_route(const struct shim_config *, const char *h, size_t n,
	    struct shim_route *);
/*
 * Append the head h[0, n), checked and stripped, as the port gets it:
 * the path form's prefix out of the target and X-Forwarded-Prefix in
 * (a client's own removed), the proxy's cookie out of Cookie.
 */
void	shim_proxy_rewrite(const struct shim_route *, const char *h, size_t n,
	    struct buf *up);

#endif
