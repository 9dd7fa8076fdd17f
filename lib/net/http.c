/*
 * http.c: the HTTP/1.1 server on the agent's unix socket: the listening
 * socket, the connection limit and the work deferred to the loop.
 *
 * The server knows HTTP, not the API: a namespace such as the bridge's
 * is the caller's hook (http_server_map).  Its connections are
 * http_conn.c's, their requests http_parse.c's, their responses
 * http_reply.c's (the four share http_conn.h).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/util.h"
#include "http_conn.h"

static int	http_bind(const char *);
static void	http_accept_cb(struct ev_loop *, ev_io *, int);
static void	http_backoff_cb(struct ev_loop *, ev_timer *, int);
static void	http_kick_cb(struct ev_loop *, ev_idle *, int);
static void	http_refuse(int);

#define BUSY_BODY	"{\"error\":\"too many connections\",\"code\":\"busy\"}\n"
static const char busy_reply[] =
    "HTTP/1.1 503 Service Unavailable\r\n"
    "Content-Type: application/json\r\n"
    "Content-Length: %zu\r\n"
    "Connection: close\r\n\r\n"
    "%s";

/* ------------------------------------------------------------------ */
/* Listening */

/*
 * Bind the unix socket.  A socket file left by a dead agent is removed;
 * one that answers belongs to a live agent and is left alone (EADDRINUSE).
 * The modes are the protocol's: only the socket's owner may connect.
 */
static int
http_bind(const char *path)
{
	struct sockaddr_un	 sun;
	struct stat		 st;
	mode_t			 old;
	int			 fd, probe, saved;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, path);

	if (lstat(path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			errno = EEXIST;
			return -1;
		}
		if ((probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
			return -1;
		if (connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			close(probe);
			errno = EADDRINUSE;
			return -1;
		}
		close(probe);
		if (unlink(path) == -1 && errno != ENOENT)
			return -1;
	}

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	/* The umask closes the window in which the socket would be 0755. */
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		saved = errno;
		umask(old);
		close(fd);
		errno = saved;
		return -1;
	}
	umask(old);
	if (chmod(path, 0600) == -1 || listen(fd, HTTP_BACKLOG) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

struct http_server *
http_server_new(struct ev_loop *loop, const char *path,
    const struct http_route *routes, void *ctx, int maxconns)
{
	struct http_server	*srv;
	int			 fd, saved;

	if ((fd = http_bind(path)) == -1)
		return NULL;
	if ((srv = http_server_new_fd(loop, fd, routes, ctx,
	    maxconns)) == NULL) {
		saved = errno;
		close(fd);
		errno = saved;
	}
	return srv;
}

struct http_server *
http_server_new_fd(struct ev_loop *loop, int fd,
    const struct http_route *routes, void *ctx, int maxconns)
{
	struct http_server	*srv;

	if ((srv = calloc(1, sizeof(*srv))) == NULL)
		return NULL;
	srv->loop = loop;
	srv->fd = fd;
	srv->routes = routes;
	srv->ctx = ctx;
	srv->maxconns = maxconns;
	srv->stuck_timeout = HTTP_STUCK_TIMEOUT;
	srv->head_timeout = HTTP_HEAD_TIMEOUT;
	srv->pause_timeout = HTTP_PAUSE_TIMEOUT;
	ev_io_init(&srv->io, http_accept_cb, fd, EV_READ);
	ev_io_start(loop, &srv->io);
	ev_timer_init(&srv->backoff, http_backoff_cb, HTTP_ACCEPT_BACKOFF, 0.);
	ev_idle_init(&srv->kick, http_kick_cb);
	return srv;
}

/*
 * Connections still open are closed at once (their owners told), dead
 * ones not yet freed with them.  A connection already handed over needs
 * nothing of the server any more.
 */
void
http_server_free(struct http_server *srv)
{
	struct http_conn	*c;

	if (srv == NULL)
		return;
	http_stop_accepting(srv);
	while ((c = srv->conns) != NULL) {
		c->dead = true;
		http_conn_close(srv->loop, c);
	}
	free(srv);
}

void
http_server_map(struct http_server *srv, http_map_fn fn)
{
	srv->map = fn;
}

/* Connections opened later use them (see http_conn_tick). */
void
http_server_timeouts(struct http_server *srv, double stuck, double head,
    double pause)
{
	srv->stuck_timeout = stuck;
	srv->head_timeout = head;
	srv->pause_timeout = pause;
}

int
http_server_nconns(const struct http_server *srv)
{
	return srv->nconns + srv->nupgraded;
}

void
http_server_release(struct http_server *srv)
{
	if (srv->nupgraded > 0)
		srv->nupgraded--;
}

void
http_stop_accepting(struct http_server *srv)
{
	ev_io_stop(srv->loop, &srv->io);
	ev_timer_stop(srv->loop, &srv->backoff);
	ev_idle_stop(srv->loop, &srv->kick);
	if (srv->fd != -1)
		close(srv->fd);
	srv->fd = -1;
}

int
http_server_fd(const struct http_server *srv)
{
	return srv->fd;
}

void
http_server_pause(struct http_server *srv)
{
	ev_io_stop(srv->loop, &srv->io);
	ev_timer_stop(srv->loop, &srv->backoff);
	ev_idle_stop(srv->loop, &srv->kick);
}

void
http_server_resume(struct http_server *srv)
{
	if (srv->fd != -1)
		ev_io_start(srv->loop, &srv->io);
}

void
http_close_all(struct http_server *srv)
{
	struct http_conn	*c, *next;

	for (c = srv->conns; c != NULL; c = next) {
		next = c->next;
		http_conn_abort(c);
	}
}

void
http_server_limit(struct http_server *srv, http_peer_fn fn)
{
	srv->limited = fn;
}

/*
 * Who connected (SO_PEERCRED): one debug line per accepted client.
 * Whether it may have a slot: every slot for most, all but the reserve
 * for a limited peer (the agent's shim: its clients cannot lock out a
 * health check or the operator's CLI).
 */
static bool
http_admit(struct http_server *srv, int fd)
{
	struct ucred	cr;
	socklen_t	len = sizeof(cr);
	int		reserve, n = http_server_nconns(srv);

	if (n >= srv->maxconns)
		return false;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) == -1)
		return true;
	log_debug("event=accepted fd=%d uid=%d gid=%d pid=%d", fd,
	    (int)cr.uid, (int)cr.gid, (int)cr.pid);
	if (srv->limited == NULL || !srv->limited(srv->ctx, cr.pid, cr.uid))
		return true;
	reserve = srv->maxconns / HTTP_DIRECT_SHARE;
	if (reserve < 1)
		reserve = 1;
	if (reserve >= srv->maxconns)
		reserve = srv->maxconns - 1;	/* one slot: the shim's */
	return n < srv->maxconns - reserve;
}

/*
 * --socket-group: the socket becomes 0660 root:gid.  It was bound 0600,
 * so it only ever widens, never is more open than asked.
 */
int
http_socket_share(const char *path, gid_t gid)
{
	if (chown(path, (uid_t)-1, gid) == -1 || chmod(path, 0660) == -1)
		return -1;
	return 0;
}

static void
http_accept_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct http_server	*srv = container_of(w, struct http_server, io);
	int			 fd;

	(void)revents;
	for (;;) {
		fd = accept4(srv->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* Level-triggered: pause or we would spin. */
				log_warn("event=accept_failed");
				ev_io_stop(loop, &srv->io);
				ev_timer_set(&srv->backoff, HTTP_ACCEPT_BACKOFF,
				    0.);
				ev_timer_start(loop, &srv->backoff);
			}
			return;
		}
		if (!http_admit(srv, fd)) {
			http_refuse(fd);
			continue;
		}
		http_conn_new(srv, fd);
	}
}

/*
 * Deferred work runs from prepare watchers.  One started while the loop
 * is already in its prepare phase would wait for the next event; an idle
 * watcher keeps the loop from blocking until it has run (when events are
 * pending it does not matter that the idle one waits).
 */
void
http_kick(struct http_server *srv)
{
	if (!ev_is_active(&srv->kick))
		ev_idle_start(srv->loop, &srv->kick);
}

static void
http_kick_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	(void)revents;
	ev_idle_stop(loop, w);
}

/* Over the connection limit: one 503 (best effort), then close. */
static void
http_refuse(int fd)
{
	/* The reply's two parts and the digits of the body's length. */
	char	reply[sizeof(busy_reply) + sizeof(BUSY_BODY) + 20];
	int	n;

	n = snprintf(reply, sizeof(reply), busy_reply, strlen(BUSY_BODY),
	    BUSY_BODY);
	if (n > 0 && (size_t)n < sizeof(reply))
		(void)!write(fd, reply, n);
	close(fd);
}

static void
http_backoff_cb(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct http_server	*srv = container_of(w, struct http_server, backoff);

	(void)revents;
	if (srv->fd != -1)
		ev_io_start(loop, &srv->io);
}

/*
 * A reply written whole from outside the parse loop (an exec's, after
 * its process was reaped) woke its reader with a socket's sync wakeup,
 * which queues the reader on this CPU to run once we sleep.  What the
 * turn still does (the status written, old records trimmed, the next
 * spare made) would hold the reader back that long: let it run first.
 * Once per loop turn, whatever number of replies the turn finishes.
 * The price is paid when a busy process shares our CPU: the yield gives
 * it the rest of a slice, so an exec's reply comes a little later beside
 * a process that never sleeps, and sooner when a CPU is free.
 */
void
http_yield(struct http_server *srv)
{
	unsigned int	it = ev_iteration(srv->loop);

	if (srv->yielded == it + 1)
		return;
	srv->yielded = it + 1;
	(void)sched_yield();
}
