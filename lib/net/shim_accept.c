/*
 * shim_accept.c: the shim's listener (see shim.h): its address, the
 * shim itself, and accepting clients, with which connection gives way
 * when there is no room.  The connections' bytes are shim.c's.
 */
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/tunables.h"
#include "base/util.h"
#include "shim.h"
#include "shim_int.h"

static void	shim_accept_cb(struct ev_loop *, ev_io *, int);
static void	shim_backoff_cb(struct ev_loop *, ev_timer *, int);

/* ------------------------------------------------------------------ */
/* Addresses and the listener                                          */

int
shim_parse_addr(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in	*in4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*in6 = (struct sockaddr_in6 *)ss;
	char			 host[INET6_ADDRSTRLEN + 2], *end;
	const char		*colon;
	unsigned long		 port;
	size_t			 n;

	memset(ss, 0, sizeof(*ss));
	if ((colon = strrchr(s, ':')) == NULL || colon == s)
		goto bad;
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || end == colon + 1 || port > 65535)
		goto bad;
	n = colon - s;
	if (s[0] == '[') {
		if (n < 3 || s[n - 1] != ']' || n - 2 >= sizeof(host))
			goto bad;
		memcpy(host, s + 1, n - 2);
		host[n - 2] = '\0';
		if (inet_pton(AF_INET6, host, &in6->sin6_addr) != 1)
			goto bad;
		in6->sin6_family = AF_INET6;
		in6->sin6_port = htons(port);
		*len = sizeof(*in6);
		return 0;
	}
	if (n >= sizeof(host))
		goto bad;
	memcpy(host, s, n);
	host[n] = '\0';
	if (inet_pton(AF_INET, host, &in4->sin_addr) != 1)
		goto bad;
	in4->sin_family = AF_INET;
	in4->sin_port = htons(port);
	*len = sizeof(*in4);
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int
shim_bind(const struct sockaddr_storage *ss, socklen_t len)
{
	int	fd, on = 1, saved;

	fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0);
	if (fd == -1)
		return -1;
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	if (ss->ss_family == AF_INET6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &on,
		    sizeof(on));
	if (bind(fd, (const struct sockaddr *)ss, len) == -1 ||
	    listen(fd, HTTP_BACKLOG) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

struct shim *
shim_new(struct ev_loop *loop, int fd, const struct shim_config *cfg)
{
	struct shim	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	s->loop = loop;
	s->fd = fd;
	s->cfg = *cfg;
	if (cfg->ports != NULL &&
	    shim_buf_init(&s->scratch, HTTP_MAX_HEAD) == -1) {
		free(s);
		return NULL;
	}
	ev_io_init(&s->accept, shim_accept_cb, fd, EV_READ);
	ev_io_start(loop, &s->accept);
	ev_timer_init(&s->backoff, shim_backoff_cb, HTTP_ACCEPT_BACKOFF, 0.);
	return s;
}

int
shim_nconns(const struct shim *s)
{
	return s->nconns;
}

void
shim_free(struct shim *s)
{
	if (s == NULL)
		return;
	while (s->conns != NULL)
		shim_conn_free(s->conns);
	ev_io_stop(s->loop, &s->accept);
	ev_timer_stop(s->loop, &s->backoff);
	close(s->fd);
	buf_free(&s->scratch);
	free(s);
}

static bool
shim_same_peer(const struct sockaddr_storage *a,
    const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET)
		return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
		    &((const struct sockaddr_in *)b)->sin_addr,
		    sizeof(struct in_addr)) == 0;
	if (a->ss_family == AF_INET6)
		return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
		    &((const struct sockaddr_in6 *)b)->sin6_addr,
		    sizeof(struct in6_addr)) == 0;
	return false;
}

/*
 * Room for a new client from peer.  Connections with no authorised
 * request yet are the ones that give way: the oldest of the peer's own
 * when it has SHIM_PEER_PENDING of them, else the oldest of all when
 * they hold their share of the cap or the cap is reached.  So a client
 * that sends its token at once always finds a slot unless authorised
 * connections fill them all, and one address cannot crowd out others.
 * false: every slot is authorised, the new one is refused.
 */
static bool
shim_make_room(struct shim *s, const struct sockaddr_storage *peer)
{
	struct shim_conn	*c, *oldest = NULL, *mine = NULL;
	int			 n = 0;

	for (c = s->conns; c != NULL; c = c->next) {
		if (c->authed)
			continue;
		oldest = c;
		if (shim_same_peer(&c->peer, peer)) {
			mine = c;
			n++;
		}
	}
	if (n >= SHIM_PEER_PENDING)
		oldest = mine;
	else if (s->npending < s->cfg.maxconns / SHIM_PENDING_SHARE &&
	    s->nconns < s->cfg.maxconns)
		return true;
	if (oldest == NULL)
		return false;
	log_debug("event=pending_evicted fd=%d", oldest->cfd);
	shim_conn_free(oldest);
	return true;
}

static void
shim_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct shim		*s = container_of(w, struct shim, accept);
	struct sockaddr_storage	 peer;
	socklen_t		 plen;
	int			 fd, on = 1, n;

	(void)revents;
	/*
	 * A few at a time: the heads already sent on those accepted are
	 * read (and authorise them) before more arrive that would make
	 * them give way.  The listener is level-triggered: the rest wait
	 * for the next turn.
	 */
	for (n = 0; n < SHIM_ACCEPT_BATCH; n++) {
		plen = sizeof(peer);
		memset(&peer, 0, sizeof(peer));
		fd = accept4(s->fd, (struct sockaddr *)&peer, &plen,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* Level-triggered: pause or we would spin. */
				log_warn("event=accept_failed");
				ev_io_stop(loop, &s->accept);
				ev_timer_start(loop, &s->backoff);
			}
			return;
		}
		if (!shim_make_room(s, &peer)) {
			close(fd);
			continue;
		}
		/* SSE events and small replies must not wait for Nagle. */
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
		shim_conn_new(s, fd, &peer);
	}
}

static void
shim_backoff_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct shim	*s = container_of(w, struct shim, backoff);

	(void)revents;
	ev_io_start(loop, &s->accept);
}
