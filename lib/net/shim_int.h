/*
 * shim_int.h: what the shim's files share (shim.c moves the bytes,
 * shim_proxy.c routes a request to a port of the container and checks
 * its credentials).  Not for other modules: shim.h is the interface.
 */
#ifndef TEND_SHIM_INT_H
#define TEND_SHIM_INT_H

#include <sys/socket.h>

#include <stdbool.h>
#include <stddef.h>

#include <ev.h>

#include "base/buf.h"
#include "shim.h"
#include "shimhead.h"

enum shim_mode {
	SHIM_HEAD,	/* collecting a request head in `in` */
	SHIM_BODY,	/* forwarding a request body up to its end */
	SHIM_UPGRADE,	/* an upgrade forwarded: waiting for the agent's answer */
	SHIM_SPLICE,	/* after a 101: raw bytes both ways */
	SHIM_DENY,	/* a request refused: the agent's replies drain, then 401 */
	SHIM_CLOSING,	/* nothing more is read from the client; down drains */
};

/*
 * "The agent" below is the connection's upstream: the agent's socket,
 * or a port of the container the proxy connected to (target).
 */
struct shim_conn {
	struct shim		*shim;
	struct shim_conn	*next, *prev;
	int			 cfd, afd;	/* client, agent (-1: none yet) */
	struct sockaddr_storage	 peer;		/* the client's address */
	bool			 authed;	/* a request with the token seen */
	ev_io			 crd, cwr, ard, awr;
	ev_timer		 timer;		/* a head taking too long */
	enum shim_mode		 mode;
	struct shimhead		 req;		/* the request in progress */
	bool			 c_eof, a_eof;	/* that side sends no more */
	bool			 a_shut;	/* shutdown(afd, SHUT_WR) done */
	/* SHIM_DENY: the shim's own answer, once the agent's are out. */
	int			 rstatus;
	const char		*rcode, *rmsg, *rextra;
	char			*rfree;		/* rextra when it was made */
	bool			 rhead;		/* the refused request is HEAD */
	struct buf		 in, up, down;	/* fixed sizes: never grown */
	/*
	 * The agent's bytes moved by the kernel, never copied: a pipe,
	 * made at need.  Its slots may fill before its bytes do (a slot
	 * holds what one write gave, a chunk's size line too): a refusal
	 * with bytes in it stops the reading until some went out.
	 */
	int			 pr, pw;	/* -1: none (yet) */
	size_t			 plen, pcap;	/* bytes in it, its size */
	bool			 pfull;		/* it refused more */
	bool			 nopipe;	/* none can be used: `down` */
	/* The proxy (shim_proxy.c). */
	int			 target;	/* afd's: 0 the agent, else a port */
	bool			 switching;	/* a head for another target waits */
	bool			 connecting;	/* afd's connect in progress */
	bool			 v6;		/* afd is [::1]'s */
	int			 eof_ticks;	/* timer turns since the client's EOF */
};

struct shim {
	struct ev_loop		*loop;
	int			 fd;
	ev_io			 accept;
	ev_timer		 backoff;
	struct shim_config	 cfg;
	struct shim_conn	*conns;		/* the newest first */
	int			 nconns;
	int			 npending;	/* of them, not authed yet */
	struct buf		 scratch;	/* a proxied head, checked */
};

/* shim.c */
size_t	shim_room(struct buf *);
/* A buffer of a fixed size n: allocated whole, never grown. */
int	shim_buf_init(struct buf *, size_t n);
void	shim_conn_new(struct shim *, int, const struct sockaddr_storage *);
void	shim_conn_free(struct shim_conn *);
/* fd, connected or connecting, is the connection's upstream. */
void	shim_watch_upstream(struct shim_conn *, int fd);
void	shim_refuse(struct shim_conn *, int, const char *, const char *,
	    const char *);

/*
 * shim_proxy.c.  A head of n bytes at the front of `in`, for a port
 * (r->port): checked, its token taken out, rewritten for the port and
 * appended to `up` (SHIMHEAD_FORWARD), or refused (shim_refuse, and
 * SHIMHEAD_DENIED).  `up` has room for n + SHIM_PROXY_EXTRA bytes.
 */
enum shimhead_verdict shim_proxy_head(struct shim_conn *,
	    const struct shim_route *, size_t n);
/*
 * Connect afd to the target's port on 127.0.0.1 (v6: [::1]): 0, the
 * connect in progress or done; -1 and errno.
 */
int	shim_proxy_connect(struct shim_conn *, bool v6);
/*
 * The connect in progress ended (afd writable): 0 connected, 1 still in
 * progress, -1 and errno refused.
 */
int	shim_proxy_connected(struct shim_conn *);

#endif
