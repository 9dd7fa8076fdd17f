/*
 * shim: the token-gated TCP front of the agent's unix socket.  Each TCP
 * client gets its own connection to the agent; its request heads are
 * checked (Authorization: Bearer, or X-Access-Token), stripped of the
 * token and forwarded in order, bodies and replies byte for byte; after a
 * 101 both sockets are spliced.  It links no process or file code.
 */
#ifndef TEND_SHIM_H
#define TEND_SHIM_H

#include <sys/socket.h>
#include <sys/types.h>

#include <stddef.h>

#include <ev.h>

struct shim;

struct shim_config {
	const char	*socket;	/* the agent's unix socket */
	const char	*token;		/* NULL: no authentication */
	size_t		 token_len;
	int		 maxconns;
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

#endif
