/*
 * api_tar.c: persist and hydrate, a tar child on pipes.  See api_tar.h;
 * the contract of the child is tar.h's, the roots and error replies are
 * api_files.h's.
 *
 * A transfer is a struct api_tar_xfer owned by the connection
 * (http_conn_own), freed when the reply is made or from on_close when
 * the client goes away first — which kills the tar child.  It holds at
 * most one chunk (hydrate: the piece of the body the pipe has not taken
 * yet) and moves at most FILES_PUMP_BYTES in one callback.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "api_errno.h"
#include "api_files.h"
#include "api_tar.h"
#include "base/buf.h"
#include "base/codec.h"
#include "base/log.h"
#include "base/util.h"
#include "core/fileops.h"
#include "core/tar.h"
#include "sys/child.h"

enum api_tar_kind {
	API_TAR_PERSIST,	/* the tar child's output to the client */
	API_TAR_HYDRATE		/* the body to the tar child */
};

struct api_tar_xfer {
	ev_io			 pio;		/* the tar child's data pipe */
	struct http_conn	*c;
	struct ev_loop		*loop;
	enum api_tar_kind	 kind;
	pid_t			 pid;		/* the tar child; -1: reaped */
	int			 pfd;		/* its data pipe */
	int			 efd;		/* its report pipe */
	int			 wstatus;
	bool			 exited;	/* the child was reaped */
	bool			 eof;		/* persist: its output ended */
	bool			 paused;	/* persist: until on_drain */
	bool			 body_done;	/* hydrate: the request is in */
	struct buf		 pend;		/* hydrate: not in the pipe */
};

static char	api_tar_chunk[FILES_IO_CHUNK];

static struct api_tar_xfer *api_tar_xfer_new(struct http_conn *,
		    enum api_tar_kind);
static void	api_tar_xfer_free(struct api_tar_xfer *);
static void	api_tar_closed(struct http_conn *, void *);
static void	api_tar_drained(struct http_conn *, void *);
static int	api_tar_req(struct http_conn *, struct http_req *, bool, bool,
		    struct api_files_req *);
static void	api_tar_exited(pid_t, int, void *);
static int	api_tar_report(struct api_tar_xfer *, struct tar_report *);
static void	api_tar_persist_cb(struct ev_loop *, ev_io *, int);
static void	api_tar_persist_done(struct api_tar_xfer *);
static struct api_tar_xfer *api_tar_hydrate_start(struct http_conn *,
		    struct http_req *);
static void	api_tar_hydrate_feed(struct api_tar_xfer *, const char *,
		    size_t);
static void	api_tar_hydrate_stop(struct api_tar_xfer *);
static void	api_tar_hydrate_cb(struct ev_loop *, ev_io *, int);
static void	api_tar_hydrate_done(struct api_tar_xfer *);

/* ------------------------------------------------------------------ */
/* Transfers */

static struct api_tar_xfer *
api_tar_xfer_new(struct http_conn *c, enum api_tar_kind kind)
{
	struct api_tar_xfer	*x;

	if ((x = calloc(1, sizeof(*x))) == NULL)
		return NULL;
	x->c = c;
	x->loop = api_of(c)->tab->loop;
	x->kind = kind;
	x->pfd = x->efd = -1;
	x->pid = -1;
	return x;
}

/* Whatever it holds goes: the child (killed), the fds. */
static void
api_tar_xfer_free(struct api_tar_xfer *x)
{
	if (x == NULL)
		return;
	ev_io_stop(x->loop, &x->pio);
	if (x->pid > 0) {
		(void)kill(x->pid, SIGKILL);
		child_unwatch(x->pid);
		log_info("event=tar_killed pid=%d", (int)x->pid);
	}
	if (x->pfd != -1)
		close(x->pfd);
	if (x->efd != -1)
		close(x->efd);
	buf_free(&x->pend);
	free(x);
}

static void
api_tar_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_tar_xfer_free(owner);
}

static void
api_tar_drained(struct http_conn *c, void *owner)
{
	struct api_tar_xfer	*x = owner;

	(void)c;
	if (x->kind == API_TAR_PERSIST && x->paused) {
		x->paused = false;
		ev_io_start(x->loop, &x->pio);
	}
}

/* ------------------------------------------------------------------ */
/* The child */

/*
 * The directory a tar call names: the workspace for the bridge, else
 * ?root= inside the files root (default: the root).  -1 with errno.
 */
static int
api_tar_req(struct http_conn *c, struct http_req *r, bool bridge,
    bool create, struct api_files_req *q)
{
	q->bridge = bridge;
	q->root = &api_of(c)->files->root;
	snprintf(q->abs, sizeof(q->abs), "%s", bridge ?
	    api_of(c)->files->ws_path : q->root->path);
	if (!bridge && http_query(r, "root", q->abs, sizeof(q->abs)) == -1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (files_normalize(q->abs) == -1)
		return -1;
	if (bridge && api_files_root(c, true, create) == NULL) {
		q->root = &api_of(c)->files->ws;
		return -1;
	}
	if (bridge)
		q->root = &api_of(c)->files->ws;
	if (files_rel(q->root, q->abs, q->rel, sizeof(q->rel)) == -1)
		return -1;
	if (create && fileops_mkdir(q->root, q->rel, true, 0755) == -1)
		return -1;
	return 0;
}

static void
api_tar_exited(pid_t pid, int wstatus, void *arg)
{
	struct api_tar_xfer	*x = arg;

	(void)pid;
	x->pid = -1;
	x->exited = true;
	x->wstatus = wstatus;
	if (x->kind == API_TAR_PERSIST)
		api_tar_persist_done(x);
	else
		api_tar_hydrate_done(x);
}

/* A hydrate's error j, with how many entries it wrote if it says. */
static void
api_tar_reply_cut(struct http_conn *c, int status, cJSON *j,
    const struct tar_report *rep)
{
	if (j != NULL && rep->entries >= 0)
		cJSON_AddNumberToObject(j, "entriesWritten",
		    (double)rep->entries);
	http_reply_json(c, status, j);
}

/*
 * The child's exit code (-1: killed) and its report.  The report is
 * shorter than a pipe's atomic write and the child has exited: it is
 * all in the pipe, one read takes it.
 */
static int
api_tar_report(struct api_tar_xfer *x, struct tar_report *rep)
{
	char	s[TAR_ERR_MAX];
	ssize_t	n;

	rep->err = 0;
	rep->entries = -1;
	rep->msg[0] = '\0';
	if (x->efd != -1 && (n = read(x->efd, s, sizeof(s))) > 0)
		(void)tar_report_parse(s, n, rep);
	return WIFEXITED(x->wstatus) ? WEXITSTATUS(x->wstatus) : -1;
}

/* ?excludes=a,b into ex (pointers into buf).  -1 after replying. */
static int
api_tar_excludes(struct http_conn *c, struct http_req *r, char *buf,
    size_t cap, const char **ex)
{
	char	*p, *comma;
	int	 n = 0;

	ex[0] = NULL;
	switch (http_query(r, "excludes", buf, cap)) {
	case 0:
		return 0;
	case -1:
		api_files_invalid(c, "excludes", "too long");
		return -1;
	}
	for (p = buf; p != NULL; p = comma) {
		if ((comma = strchr(p, ',')) != NULL)
			*comma++ = '\0';
		if (*p == '\0')
			continue;
		if (tar_exclude_valid(p) == -1) {
			http_reply_error(c, 400, "invalid_request", "excludes: "
			    "'%s' must be a relative path without '..'", p);
			return -1;
		}
		if (n == FILES_EXCLUDES_MAX) {
			api_files_invalid(c, "excludes", "too many entries");
			return -1;
		}
		ex[n++] = p;
		ex[n] = NULL;
	}
	return 0;
}

static void
api_tar_persist(struct http_conn *c, struct http_req *r)
{
	bool			 bridge = api_files_bridge(r);
	const char		*ex[FILES_EXCLUDES_MAX + 1];
	char			 exbuf[HTTP_MAX_HEAD];
	struct api_tar_xfer	*x;
	struct api_files_req	 q;
	int			 rootfd;

	if (api_tar_req(c, r, bridge, false, &q) == -1) {
		api_files_fail(c, &q, errno, "persist");
		return;
	}
	if (api_tar_excludes(c, r, exbuf, sizeof(exbuf), ex) == -1)
		return;
	if ((rootfd = files_open(q.root, q.rel, O_PATH | O_DIRECTORY, 0)) ==
	    -1) {
		api_files_fail(c, &q, errno, "persist");
		return;
	}
	if ((x = api_tar_xfer_new(c, API_TAR_PERSIST)) == NULL ||
	    tar_persist_spawn(rootfd, ex, &x->pid, &x->pfd, &x->efd) == -1) {
		close(rootfd);
		api_files_fail(c, &q, errno, "persist");
		api_tar_xfer_free(x);
		return;
	}
	close(rootfd);
	if (child_watch(x->pid, api_tar_exited, x) == -1) {
		api_files_fail(c, &q, errno, "persist");
		api_tar_xfer_free(x);	/* killed; reaped as an orphan */
		return;
	}
	log_info("event=persist_started pid=%d root=%s", (int)x->pid, q.abs);
	ev_io_init(&x->pio, api_tar_persist_cb, x->pfd, EV_READ);
	ev_io_start(x->loop, &x->pio);
	/* A connection dead already: api_tar_closed frees it, from the loop. */
	(void)http_stream_begin(c, 200, "application/octet-stream",
	    HTTP_FRAME_CHUNKED, NULL);
	http_conn_own(c, x, api_tar_drained, api_tar_closed);
}

/* The child's output to the reply, paused above HTTP_OUT_HIGH. */
static void
api_tar_persist_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct api_tar_xfer	*x = container_of(w, struct api_tar_xfer, pio);
	size_t			 sent = 0;
	ssize_t			 n;

	(void)revents;
	while (sent < FILES_PUMP_BYTES && !http_conn_dead(x->c)) {
		if (http_conn_pending(x->c) >= HTTP_OUT_HIGH) {
			ev_io_stop(loop, w);
			x->paused = true;
			return;
		}
		n = read(x->pfd, api_tar_chunk, sizeof(api_tar_chunk));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0) {
			ev_io_stop(loop, w);
			close(x->pfd);
			x->pfd = -1;
			x->eof = true;
			api_tar_persist_done(x);
			return;
		}
		if (http_stream_write(x->c, api_tar_chunk, n) == -1)
			return;
		sent += n;
	}
}

/*
 * Output ended and the child reaped: a whole archive ends the chunked
 * body; anything else closes the connection without the last chunk, so
 * that no client takes a cut archive for a whole one.
 */
static void
api_tar_persist_done(struct api_tar_xfer *x)
{
	struct http_conn	*c = x->c;
	struct tar_report	 rep;
	int			 code;

	if (!x->eof || !x->exited)
		return;
	code = api_tar_report(x, &rep);
	http_conn_own(c, NULL, NULL, NULL);
	api_tar_xfer_free(x);
	if (code == TAR_EXIT_OK || code == TAR_EXIT_PARTIAL) {
		if (code == TAR_EXIT_PARTIAL)
			log_warnx("event=persist_partial msg=\"%s\"", rep.msg);
		http_stream_end(c);
		return;
	}
	log_warnx("event=persist_failed code=%d msg=\"%s\"", code, rep.msg);
	http_conn_abort(c);
}

/* The child, started at the body's first piece. */
static struct api_tar_xfer *
api_tar_hydrate_start(struct http_conn *c, struct http_req *r)
{
	struct api_tar_xfer	*x;
	struct api_files_req	 q;
	int			 rootfd, saved;

	if (api_tar_req(c, r, api_files_bridge(r), true, &q) == -1)
		return NULL;
	if ((rootfd = files_open(q.root, q.rel, O_PATH | O_DIRECTORY, 0)) ==
	    -1)
		return NULL;
	if ((x = api_tar_xfer_new(c, API_TAR_HYDRATE)) == NULL ||
	    tar_hydrate_spawn(rootfd, &x->pid, &x->pfd, &x->efd) == -1 ||
	    child_watch(x->pid, api_tar_exited, x) == -1) {
		saved = errno;
		close(rootfd);
		api_tar_xfer_free(x);
		errno = saved;
		return NULL;
	}
	close(rootfd);
	log_info("event=hydrate_started pid=%d root=%s", (int)x->pid, q.abs);
	ev_io_init(&x->pio, api_tar_hydrate_cb, x->pfd, EV_WRITE);
	http_conn_own(c, x, NULL, api_tar_closed);
	return x;
}

/*
 * Into the pipe what it takes; the rest is kept and the request's
 * reading paused until the pipe is writable again (api_tar_hydrate_cb).
 * Pieces already read still arrive while paused: pend holds at most
 * one read of the socket.
 */
static void
api_tar_hydrate_feed(struct api_tar_xfer *x, const char *d, size_t n)
{
	ssize_t	w = 0;

	if (buf_avail(&x->pend) == 0) {
		while ((w = write(x->pfd, d, n)) == -1 && errno == EINTR)
			;
		if (w == -1 && errno != EAGAIN) {
			/* EPIPE: it stopped reading */
			api_tar_hydrate_stop(x);
			return;
		}
		if (w == -1)
			w = 0;
	}
	if ((size_t)w == n)
		return;
	if (buf_add(&x->pend, d + w, n - w) == -1) {
		api_tar_hydrate_stop(x);
		return;
	}
	http_conn_pause_read(x->c);
	ev_io_start(x->loop, &x->pio);
}

/*
 * The child reads no more (a refused entry, or it died): its status
 * will say why; the rest of the body is read and dropped.
 */
static void
api_tar_hydrate_stop(struct api_tar_xfer *x)
{
	ev_io_stop(x->loop, &x->pio);
	if (x->pfd != -1)
		close(x->pfd);
	x->pfd = -1;
	buf_free(&x->pend);
	http_conn_resume_read(x->c);
}

static void
api_tar_hydrate_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct api_tar_xfer	*x = container_of(w, struct api_tar_xfer, pio);
	ssize_t			 n;

	(void)revents;
	n = write(x->pfd, buf_head(&x->pend), buf_avail(&x->pend));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -1) {
		api_tar_hydrate_stop(x);
		return;
	}
	buf_consume(&x->pend, n);
	if (buf_avail(&x->pend) > 0)
		return;
	ev_io_stop(loop, w);
	buf_reset(&x->pend);
	if (x->body_done) {
		close(x->pfd);		/* end of the archive: EOF */
		x->pfd = -1;
	} else
		http_conn_resume_read(x->c);
}

/* The body is in and the child reaped: its status is the reply. */
static void
api_tar_hydrate_done(struct api_tar_xfer *x)
{
	struct http_conn	*c = x->c;
	struct tar_report	 rep;
	const struct api_errno	*e;
	cJSON			*j;
	int			 code, wstatus;

	if (!x->body_done || !x->exited)
		return;
	code = api_tar_report(x, &rep);
	wstatus = x->wstatus;
	http_conn_own(c, NULL, NULL, NULL);
	api_tar_xfer_free(x);
	switch (code) {
	case TAR_EXIT_OK:
		api_files_reply_ok(c);
		return;
	case TAR_EXIT_EMPTY:
		http_reply_error(c, 400, "invalid_request",
		    "Empty tar payload");
		return;
	case TAR_EXIT_BAD:
		log_warnx("event=hydrate_refused msg=\"%s\"", rep.msg);
		j = http_error_obj("invalid_request", "hydrate: %s",
		    rep.msg[0] ? rep.msg : "not a tar archive");
		api_tar_reply_cut(c, 400, j, &rep);
		return;
	case TAR_EXIT_IO:
		e = api_errno(rep.err);
		j = http_error_obj(e->code, "hydrate: %s", rep.msg);
		cJSON_AddStringToObject(j, "errno", codec_errno_name(rep.err));
		api_tar_reply_cut(c, e->status, j, &rep);
		return;
	}
	log_warnx("event=hydrate_failed status=%d", wstatus);
	http_reply_error(c, 500, "internal", "hydrate: the tar child ended "
	    "abnormally");
}

static void
api_tar_hydrate_body(struct http_conn *c, struct http_req *r, const char *d,
    size_t n)
{
	struct api_tar_xfer	*x = http_conn_owner(c);

	if (r->body_error != 0 || n == 0)
		return;
	if (x == NULL && (x = api_tar_hydrate_start(c, r)) == NULL) {
		r->body_error = errno != 0 ? errno : EIO;
		return;
	}
	if (x->pfd != -1)
		api_tar_hydrate_feed(x, d, n);
}

static void
api_tar_hydrate(struct http_conn *c, struct http_req *r)
{
	struct api_tar_xfer	*x = http_conn_owner(c);
	struct api_files_req	 q;

	if (x == NULL) {
		if (api_tar_req(c, r, api_files_bridge(r), false, &q) == -1)
			api_files_fail(c, &q, errno, "hydrate");
		else if (r->body_error != 0)
			api_files_fail(c, &q, r->body_error, "hydrate");
		else
			http_reply_error(c, 400, "invalid_request",
			    "Empty tar payload");
		return;
	}
	x->body_done = true;
	if (x->pfd != -1 && buf_avail(&x->pend) == 0) {
		close(x->pfd);
		x->pfd = -1;
	}
	api_tar_hydrate_done(x);
}

/* ------------------------------------------------------------------ */
/* The routes: the same handlers in both namespaces, told by their arg */

const struct http_route api_tar_routes[] = {
	{ "GET",	"/v1/persist",	api_tar_persist, NULL,
	    &api_files_ns_root },
	{ "POST",	"/v1/persist",	api_tar_persist, NULL,
	    &api_files_ns_root },
	{ "POST",	"/v1/hydrate",	api_tar_hydrate, api_tar_hydrate_body,
	    &api_files_ns_root },
	{ NULL, NULL, NULL, NULL, NULL }
};

/* The bridge's, matched before the API's, as api_files_bridge_routes. */
const struct http_route api_tar_bridge_routes[] = {
	{ "GET",	"/v1/persist",	api_tar_persist, NULL,
	    &api_files_ns_bridge },
	{ "POST",	"/v1/persist",	api_tar_persist, NULL,
	    &api_files_ns_bridge },
	{ "POST",	"/v1/hydrate",	api_tar_hydrate, api_tar_hydrate_body,
	    &api_files_ns_bridge },
	{ NULL, NULL, NULL, NULL, NULL }
};
