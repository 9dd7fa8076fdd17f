/*
 * api_files.c: the file routes.  See api_files.h; the contracts of the
 * engine are files.h and tar.h.
 *
 * Every transfer that outlives its callback is a struct af_xfer owned by
 * the connection (http_conn_own): a GET's file, a PUT's upload, a tar
 * child's pipes.  It is freed when the reply is made, or from on_close
 * when the client goes away first — which also removes a PUT's temp file
 * and kills a tar child.  No transfer holds more than one chunk (a GET
 * none: sendfile; hydrate the piece of the body the pipe has not taken
 * yet), and none
 * moves more than FILES_PUMP_BYTES in one callback: a 1 GiB transfer
 * never stalls the other clients.
 */
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "api_files.h"
#include "base/codec.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/turn.h"
#include "base/util.h"
#include "core/tar.h"
#include "sys/child.h"

enum af_kind {
	AF_GET,		/* a file's bytes to the client */
	AF_PUT,		/* the body to files_put */
	AF_PERSIST,	/* the tar child's output to the client */
	AF_HYDRATE	/* the body to the tar child */
};

struct af_xfer {
	struct turn		 resume;	/* GET: budget spent, go on */
	ev_io			 pio;		/* the tar child's data pipe */
	struct http_conn	*c;
	struct ev_loop		*loop;
	enum af_kind		 kind;
	bool			 bridge;
	int			 fd;		/* GET: the file */
	uint64_t		 off, end;	/* GET: next byte, past the last */
	struct files_put	 put;
	pid_t			 pid;		/* the tar child; -1 once reaped */
	int			 pfd;		/* its data pipe */
	int			 efd;		/* its report pipe */
	int			 wstatus;
	bool			 exited;	/* the child was reaped */
	bool			 eof;		/* persist: its output ended */
	bool			 paused;	/* persist: waits for on_drain */
	bool			 body_done;	/* hydrate: the request is in */
	struct buf		 pend;		/* hydrate: not yet in the pipe */
};

/* What a request names: its root, and the path in it. */
struct af_req {
	const struct files_root	*root;
	bool			 bridge;
	char			 abs[PATH_MAX];	/* decoded, normalised */
	char			 rel[PATH_MAX];	/* to the root */
};

static char	af_chunk[FILES_IO_CHUNK];
static const char af_unsat[] =
    "{\"error\":\"range not satisfiable\",\"code\":\"invalid_range\"}";

static struct af_xfer *af_xfer_new(struct http_conn *, enum af_kind, bool);
static void	af_xfer_free(struct af_xfer *);
static void	af_closed(struct http_conn *, void *);
static void	af_drained(struct http_conn *, void *);
static const struct files_root *af_root(struct http_conn *, bool, bool);
static bool	af_in_workspace(const struct api_files *, const char *);
static int	af_resolve(struct http_conn *, struct http_req *, bool, bool,
		    struct af_req *);
static int	af_req_init(struct http_conn *, struct http_req *, bool,
		    bool, struct af_req *);
static void	af_fail(struct http_conn *, const struct af_req *, int,
		    const char *);
static void	af_invalid(struct http_conn *, const char *, const char *);
static void	af_reply_ok(struct http_conn *);
static int	af_reply_with(struct http_conn *, struct http_req *, int,
		    const char *, struct buf *, const char *, size_t);
static int	af_file_headers(struct buf *, const struct stat *);
static void	af_list(struct http_conn *, struct http_req *,
		    const struct af_req *, const struct stat *);
static void	af_send_file(struct http_conn *, struct http_req *,
		    const struct af_req *, int, const struct stat *);
static void	af_get_pump(struct af_xfer *);
static void	af_get_resume(struct ev_loop *, ev_check *, int);
static int	af_put_opts(struct http_req *, int *, int *, const char **);
static struct af_xfer *af_put_begin(struct http_conn *, struct http_req *,
		    bool);
static int	af_tar_req(struct http_conn *, struct http_req *, bool, bool,
		    struct af_req *);
static void	af_tar_exited(pid_t, int, void *);
static int	af_tar_report(struct af_xfer *, struct tar_report *);
static void	af_persist_cb(struct ev_loop *, ev_io *, int);
static void	af_persist_done(struct af_xfer *);
static struct af_xfer *af_hydrate_start(struct http_conn *,
		    struct http_req *, bool);
static void	af_hydrate_feed(struct af_xfer *, const char *, size_t);
static void	af_hydrate_stop(struct af_xfer *);
static void	af_hydrate_cb(struct ev_loop *, ev_io *, int);
static void	af_hydrate_done(struct af_xfer *);

int
api_files_init(struct api_files *f, const char *root, const char *workspace)
{
	if (files_root_open(&f->root, root) == -1)
		return -1;
	if (snprintf(f->ws_path, sizeof(f->ws_path), "%s", workspace) >=
	    (int)sizeof(f->ws_path) || files_normalize(f->ws_path) == -1) {
		files_root_close(&f->root);
		errno = EINVAL;
		return -1;
	}
	/* Not there yet: af_root tries again, and a bridge write makes it. */
	if (files_root_open(&f->ws, workspace) == -1)
		f->ws.fd = -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Transfers */

static struct af_xfer *
af_xfer_new(struct http_conn *c, enum af_kind kind, bool bridge)
{
	struct af_xfer	*x;

	if ((x = calloc(1, sizeof(*x))) == NULL)
		return NULL;
	x->c = c;
	x->loop = api_of(c)->tab->loop;
	x->kind = kind;
	x->bridge = bridge;
	x->fd = x->pfd = x->efd = -1;
	x->put.fd = x->put.dirfd = -1;
	x->pid = -1;
	turn_init(&x->resume, af_get_resume);
	return x;
}

/* Whatever it holds goes: the temp file, the child (killed), the fds. */
static void
af_xfer_free(struct af_xfer *x)
{
	if (x == NULL)
		return;
	turn_stop(x->loop, &x->resume);
	ev_io_stop(x->loop, &x->pio);
	files_put_abort(&x->put);
	if (x->pid > 0) {
		(void)kill(x->pid, SIGKILL);
		child_unwatch(x->pid);
		log_info("event=tar_killed pid=%d", (int)x->pid);
	}
	if (x->fd != -1)
		close(x->fd);
	if (x->pfd != -1)
		close(x->pfd);
	if (x->efd != -1)
		close(x->efd);
	buf_free(&x->pend);
	free(x);
}

static void
af_closed(struct http_conn *c, void *owner)
{
	(void)c;
	af_xfer_free(owner);
}

static void
af_drained(struct http_conn *c, void *owner)
{
	struct af_xfer	*x = owner;

	(void)c;
	if (x->kind == AF_GET)
		af_get_pump(x);
	else if (x->kind == AF_PERSIST && x->paused) {
		x->paused = false;
		ev_io_start(x->loop, &x->pio);
	}
}

/* ------------------------------------------------------------------ */
/* Paths and errors */

/*
 * The root of the namespace: the files root, or the workspace, opened
 * the first time it exists (made first when create: a bridge write).
 */
static const struct files_root *
af_root(struct http_conn *c, bool bridge, bool create)
{
	struct api_files	*f = api_of(c)->files;

	if (!bridge)
		return &f->root;
	if (f->ws.fd == -1 && create && fsutil_mkdirs(AT_FDCWD,
	    f->ws_path) == -1)
		return NULL;
	if (f->ws.fd == -1 && files_root_open(&f->ws, f->ws_path) == -1) {
		f->ws.fd = -1;
		return NULL;
	}
	return &f->ws;
}

/* Lexically: the workspace opened later must not decide what is in it. */
static bool
af_in_workspace(const struct api_files *f, const char *abs)
{
	size_t	n = strlen(f->ws_path);

	if (n == 1)
		return true;
	return strncmp(abs, f->ws_path, n) == 0 &&
	    (abs[n] == '/' || abs[n] == '\0');
}

const char *
api_files_workspace(const struct api_files *f)
{
	return f->ws_path;
}

bool
api_files_in_workspace(const struct api_files *f, char *path)
{
	return path[0] == '/' && files_normalize(path) == 0 &&
	    af_in_workspace(f, path);
}

/*
 * The route's "*" is the path after "/v1/file/": "/" before it, decoded
 * once, normalised, made relative to the root.  -1 with errno; q->abs
 * then holds what can be quoted.
 */
static int
af_resolve(struct http_conn *c, struct http_req *r, bool bridge,
    bool create, struct af_req *q)
{
	const char		*enc = r->nparam > 0 ? r->param[0] : "";
	struct api_files	*f = api_of(c)->files;

	q->bridge = bridge;
	q->root = bridge ? &f->ws : &f->root;
	q->abs[0] = '/';
	if (bridge && enc[0] == '\0') {
		q->abs[0] = '\0';	/* af_fail: "must not be empty" */
		errno = EINVAL;
		return -1;
	}
	if (files_decode(enc, strlen(enc), q->abs + 1, sizeof(q->abs) - 1)
	    == -1 || files_normalize(q->abs) == -1) {
		snprintf(q->abs, sizeof(q->abs), "/%.200s", enc);
		errno = EINVAL;
		return -1;
	}
	if (bridge && !af_in_workspace(f, q->abs)) {
		errno = ELOOP;
		return -1;
	}
	if (bridge && af_root(c, true, create) == NULL)
		return -1;
	return files_rel(q->root, q->abs, q->rel, sizeof(q->rel));
}

static int
af_req_init(struct http_conn *c, struct http_req *r, bool bridge,
    bool create, struct af_req *q)
{
	if (af_resolve(c, r, bridge, create, q) == 0)
		return 0;
	/* A workspace not made yet: GET's own 404. */
	af_fail(c, q, errno, strcmp(r->method, "GET") == 0 ? "read" : "path");
	return -1;
}

/*
 * The error reply of errno err: files_errmap's status and code, the
 * bridge's vocabulary in its namespace, "errno" as a detail.
 */
static void
af_fail(struct http_conn *c, const struct af_req *q, int err,
    const char *what)
{
	struct files_err	 e = files_errmap(err);
	const char		*code = e.code;
	cJSON			*j;

	if (q->bridge && q->abs[0] == '\0') {
		af_invalid(c, "path", "a file path must not be empty");
		return;
	}
	if (e.outside && q->bridge)
		j = http_error_obj("invalid_request", "path '%s' must be "
		    "within %s", q->abs, api_of(c)->files->ws_path);
	else if (e.outside)
		j = http_error_obj(code, "path '%s' is outside the files root "
		    "%s", q->abs, q->root->path);
	else {
		if (q->bridge && err == ENOENT && strcmp(what, "read") == 0)
			code = "workspace_read_not_found";
		j = http_error_obj(code, "%s '%s': %s", what, q->abs,
		    strerror(err));
	}
	cJSON_AddStringToObject(j, "errno", codec_errno_name(err));
	http_reply_json(c, e.status, j);
}

static void
af_invalid(struct http_conn *c, const char *field, const char *why)
{
	cJSON	*j = http_error_obj("invalid_request", "%s: %s", field, why);

	cJSON_AddStringToObject(j, "field", field);
	http_reply_json(c, 400, j);
}

static void
af_reply_ok(struct http_conn *c)
{
	static const char	ok[] = "{\"ok\":true}";

	http_reply(c, 200, "application/json", ok, sizeof(ok) - 1);
}

/* A whole reply with extra header lines (h, consumed); HEAD: no body. */
static int
af_reply_with(struct http_conn *c, struct http_req *r, int status,
    const char *ctype, struct buf *h, const char *body, size_t len)
{
	int	rc = -1;

	if (buf_printf(h, "Content-Length: %zu\r\n", len) == 0 &&
	    buf_add(h, "", 1) == 0 &&
	    http_stream_begin(c, status, ctype, HTTP_FRAME_LENGTH,
	    h->data) == 0 &&
	    (strcmp(r->method, "HEAD") == 0 ||
	    http_stream_write(c, body, len) == 0)) {
		http_stream_end(c);
		rc = 0;
	}
	buf_free(h);
	if (rc == -1 && !http_conn_replied(c))
		http_reply_error(c, 503, "busy", "out of memory");
	return rc;
}

/* ------------------------------------------------------------------ */
/* GET and HEAD */

/* What HEAD tells of a file, on GET too. */
static int
af_file_headers(struct buf *h, const struct stat *st)
{
	char		ts[TIME_MAX], date[64];
	struct tm	tm;

	codec_time(ts, (int64_t)st->st_mtim.tv_sec * 1000 +
	    st->st_mtim.tv_nsec / 1000000);
	gmtime_r(&st->st_mtim.tv_sec, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	return buf_printf(h, "Tend-File-Type: %s\r\nTend-File-Mode: %04o\r\n"
	    "Tend-File-Mtime: %s\r\nLast-Modified: %s\r\n",
	    files_type(st->st_mode), (unsigned)(st->st_mode & 07777), ts, date);
}

static void
af_list(struct http_conn *c, struct http_req *r, const struct af_req *q,
    const struct stat *st)
{
	struct buf	 h = { 0 };
	uint64_t	 depth = 1;
	bool		 truncated = false;
	cJSON		*j, *arr;
	char		*s;

	if (http_query_u64(r, "depth", &depth) == -1 || depth < 1 ||
	    depth > FILES_LIST_DEPTH_MAX) {
		af_invalid(c, "depth", "must be an integer from 1 to 32");
		return;
	}
	j = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(j, "entries");
	if (arr == NULL || files_list(q->root, q->rel, (int)depth, arr,
	    &truncated) == -1) {
		cJSON_Delete(j);
		af_fail(c, q, arr == NULL ? ENOMEM : errno, "list");
		return;
	}
	if (truncated)
		cJSON_AddBoolToObject(j, "truncated", true);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (s == NULL || af_file_headers(&h, st) == -1) {
		free(s);
		buf_free(&h);
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	(void)af_reply_with(c, r, 200, "application/json", &h, s, strlen(s));
	free(s);
}

/* 200 whole, 206 a range, 416 none of it; the body from af_get_pump. */
static void
af_send_file(struct http_conn *c, struct http_req *r, const struct af_req *q,
    int fd, const struct stat *st)
{
	struct af_xfer	*x;
	struct buf	 h = { 0 };
	uint64_t	 size = (uint64_t)st->st_size, first = 0, last;
	int		 status = 200, rc;

	last = size - 1;
	switch (files_range(http_header(r, "Range"), size, &first, &last)) {
	case FILES_RANGE_FULL:
		first = 0, last = size - 1;
		break;
	case FILES_RANGE_PART:
		status = 206;
		buf_printf(&h, "Content-Range: bytes %llu-%llu/%llu\r\n",
		    (unsigned long long)first, (unsigned long long)last,
		    (unsigned long long)size);
		break;
	case FILES_RANGE_UNSATISFIABLE:
		close(fd);
		buf_printf(&h, "Content-Range: bytes */%llu\r\n",
		    (unsigned long long)size);
		(void)af_reply_with(c, r, 416, "application/json", &h,
		    af_unsat, sizeof(af_unsat) - 1);
		return;
	}
	if ((x = af_xfer_new(c, AF_GET, q->bridge)) == NULL ||
	    af_file_headers(&h, st) == -1 ||
	    buf_printf(&h, "Accept-Ranges: bytes\r\nContent-Length: %llu\r\n",
	    (unsigned long long)(size == 0 ? 0 : last - first + 1)) == -1 ||
	    buf_add(&h, "", 1) == -1) {
		close(fd);
		af_xfer_free(x);
		buf_free(&h);
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	x->fd = fd;
	x->off = first;
	x->end = size == 0 || strcmp(r->method, "HEAD") == 0 ? first : last + 1;
	rc = http_stream_begin(c, status, "application/octet-stream",
	    HTTP_FRAME_LENGTH, h.data);
	buf_free(&h);
	http_conn_own(c, x, af_drained, af_closed);
	if (rc == 0)
		af_get_pump(x);		/* else af_closed frees it */
}

/*
 * Send the file while the connection takes it and the share lasts, by
 * sendfile(2): the bytes never pass through the agent.  The length was
 * promised: a file that shrank meanwhile ends the connection.
 */
static void
af_get_pump(struct af_xfer *x)
{
	struct http_conn	*c = x->c;
	size_t			 sent = 0, want;
	ssize_t			 n;

	turn_stop(x->loop, &x->resume);
	while (x->off < x->end) {
		if (http_conn_dead(c) || http_conn_pending(c) > 0)
			return;		/* af_drained goes on */
		if (sent >= FILES_PUMP_BYTES) {
			turn_start(x->loop, &x->resume);
			return;
		}
		want = x->end - x->off;
		if (want > FILES_PUMP_BYTES - sent)
			want = FILES_PUMP_BYTES - sent;
		n = http_stream_sendfile(c, x->fd, &x->off, want);
		if (n == -1 && errno == EAGAIN)
			return;		/* af_drained goes on */
		if (n <= 0) {
			log_warn("event=file_send_failed off=%llu",
			    (unsigned long long)x->off);
			http_conn_abort(c);
			return;
		}
		sent += n;
	}
	http_conn_own(c, NULL, NULL, NULL);
	af_xfer_free(x);
	http_stream_end(c);
}

void
api_files_send(struct http_conn *c, struct http_req *r, int fd,
    const struct stat *st)
{
	struct af_req	q;

	memset(&q, 0, sizeof(q));
	af_send_file(c, r, &q, fd, st);
}

static void
af_get_resume(struct ev_loop *loop, ev_check *w, int revents)
{
	(void)loop;
	(void)revents;
	af_get_pump(container_of(w, struct af_xfer, resume.check));
}

static void
af_get(struct http_conn *c, struct http_req *r, bool bridge)
{
	struct af_req	q;
	struct stat	st;
	int		fd;

	if (af_req_init(c, r, bridge, false, &q) == -1)
		return;
	if ((fd = files_open_read(q.root, q.rel, &st)) == -1) {
		af_fail(c, &q, errno, "read");
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		af_send_file(c, r, &q, fd, &st);
		return;
	}
	close(fd);
	if (bridge && strcmp(r->method, "GET") == 0)
		http_reply_error(c, 400, "invalid_request", "'%s' is a "
		    "directory, not a file", q.abs);
	else
		af_list(c, r, &q, &st);
}

/* ------------------------------------------------------------------ */
/* PUT */

/* ?mode=0644 (octal), ?append=1.  -1: *bad names the field. */
static int
af_put_opts(struct http_req *r, int *flags, int *mode, const char **bad)
{
	char	 v[8], *end;
	long	 m;
	int	 append;

	*flags = FILES_PUT_PARENTS;
	*mode = FILES_MODE_KEEP;
	if ((append = http_query_bool(r, "append", 0)) == -1) {
		*bad = "append";
		return -1;
	}
	if (append)
		*flags |= FILES_PUT_APPEND;
	switch (http_query(r, "mode", v, sizeof(v))) {
	case 0:
		return 0;
	case 1:
		m = strtol(v, &end, 8);
		if (v[0] >= '0' && v[0] <= '7' && *end == '\0' && m >= 0 &&
		    m <= 07777) {
			*mode = (int)m;
			return 0;
		}
		/* FALLTHROUGH */
	default:
		*bad = "mode";
		return -1;
	}
}

/* The upload, begun at the body's first piece (or at its end if empty). */
static struct af_xfer *
af_put_begin(struct http_conn *c, struct http_req *r, bool bridge)
{
	struct af_xfer	*x;
	struct af_req	 q;
	const char	*bad;
	int		 flags, mode;

	if (af_resolve(c, r, bridge, true, &q) == -1)
		return NULL;
	if (af_put_opts(r, &flags, &mode, &bad) == -1) {
		errno = EINVAL;
		return NULL;
	}
	if ((x = af_xfer_new(c, AF_PUT, bridge)) == NULL)
		return NULL;
	if (files_put_begin(&x->put, q.root, q.rel, flags, mode) == -1) {
		af_xfer_free(x);
		return NULL;
	}
	http_conn_own(c, x, NULL, af_closed);
	return x;
}

/*
 * Each piece is written as it arrives: no buffer, so nothing to pause
 * for; the write is this callback's share (one read of the socket).  A
 * failure removes the temp file at once; the rest of the body is read
 * and dropped, and the reply says why.
 */
static void
af_put_body(struct http_conn *c, struct http_req *r, const char *d,
    size_t n, bool bridge)
{
	struct af_xfer	*x = http_conn_owner(c);

	if (r->body_error != 0)
		return;
	if (x == NULL && (x = af_put_begin(c, r, bridge)) == NULL) {
		r->body_error = errno != 0 ? errno : EIO;
		return;
	}
	if (files_put_write(&x->put, d, n) == -1) {
		r->body_error = errno != 0 ? errno : EIO;
		http_conn_own(c, NULL, NULL, NULL);
		af_xfer_free(x);
	}
}

static void
af_put(struct http_conn *c, struct http_req *r, bool bridge)
{
	struct af_xfer	*x = http_conn_owner(c);
	struct af_req	 q;
	const char	*bad;
	bool		 created;
	int		 flags, mode, rc, err;

	http_conn_own(c, NULL, NULL, NULL);
	if (af_req_init(c, r, bridge, true, &q) == -1)
		goto out;
	if (af_put_opts(r, &flags, &mode, &bad) == -1) {
		af_invalid(c, bad, strcmp(bad, "mode") == 0 ? "must be octal "
		    "permission bits, 0 to 07777" : "must be 1, true, 0 or "
		    "false");
		goto out;
	}
	if (r->body_error != 0) {
		af_fail(c, &q, r->body_error, "write");
		goto out;
	}
	if (x == NULL && (x = af_put_begin(c, r, bridge)) == NULL) {
		af_fail(c, &q, errno, "write");
		goto out;
	}
	http_conn_own(c, NULL, NULL, NULL);
	rc = files_put_commit(&x->put, &created);
	err = errno;
	if (rc == -1)
		af_fail(c, &q, err, "write");
	else if (bridge)
		af_reply_ok(c);
	else
		http_reply(c, created ? 201 : 204, NULL, NULL, 0);
out:
	af_xfer_free(x);
}

/* ------------------------------------------------------------------ */
/* DELETE and POST */

static void
af_delete(struct http_conn *c, struct http_req *r, bool bridge)
{
	struct af_req	q;
	int		recursive;

	if (af_req_init(c, r, bridge, false, &q) == -1)
		return;
	if ((recursive = http_query_bool(r, "recursive", 0)) == -1) {
		af_invalid(c, "recursive", "must be 1, true, 0 or false");
		return;
	}
	if (files_delete(q.root, q.rel, recursive) == -1)
		af_fail(c, &q, errno, "delete");
	else
		http_reply(c, 204, NULL, NULL, 0);
}

/* ?op=move&to=/dst[&overwrite=1]: to is in the same namespace. */
static void
af_move(struct http_conn *c, struct http_req *r, const struct af_req *q)
{
	struct af_req	 to = *q;
	int		 overwrite;

	if ((overwrite = http_query_bool(r, "overwrite", 0)) == -1) {
		af_invalid(c, "overwrite", "must be 1, true, 0 or false");
		return;
	}
	if (http_query(r, "to", to.abs, sizeof(to.abs)) != 1 ||
	    to.abs[0] != '/') {
		af_invalid(c, "to", "must be an absolute path");
		return;
	}
	if (files_normalize(to.abs) == -1 ||
	    files_rel(to.root, to.abs, to.rel, sizeof(to.rel)) == -1) {
		af_fail(c, &to, errno, "move to");
		return;
	}
	if (files_move(q->root, q->rel, to.rel, overwrite) == -1)
		af_fail(c, errno == EEXIST ? &to : q, errno, "move");
	else
		http_reply(c, 204, NULL, NULL, 0);
}

static void
af_post(struct http_conn *c, struct http_req *r, bool bridge)
{
	struct af_req	q;
	char		op[8];
	int		parents;

	if (af_req_init(c, r, bridge, true, &q) == -1)
		return;
	if (http_query(r, "op", op, sizeof(op)) != 1)
		op[0] = '\0';
	if (strcmp(op, "move") == 0) {
		af_move(c, r, &q);
		return;
	}
	if (strcmp(op, "mkdir") != 0) {
		af_invalid(c, "op", "must be mkdir or move");
		return;
	}
	if ((parents = http_query_bool(r, "parents", 0)) == -1) {
		af_invalid(c, "parents", "must be 1, true, 0 or false");
		return;
	}
	if (files_mkdir(q.root, q.rel, parents, 0755) == -1)
		af_fail(c, &q, errno, "mkdir");
	else
		http_reply(c, 201, NULL, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* Persist and hydrate: a tar child on pipes */

/*
 * The directory a tar call names: the workspace for the bridge, else
 * ?root= inside the files root (default: the root).  -1 with errno.
 */
static int
af_tar_req(struct http_conn *c, struct http_req *r, bool bridge,
    bool create, struct af_req *q)
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
	if (bridge && af_root(c, true, create) == NULL) {
		q->root = &api_of(c)->files->ws;
		return -1;
	}
	if (bridge)
		q->root = &api_of(c)->files->ws;
	if (files_rel(q->root, q->abs, q->rel, sizeof(q->rel)) == -1)
		return -1;
	if (create && files_mkdir(q->root, q->rel, true, 0755) == -1)
		return -1;
	return 0;
}

static void
af_tar_exited(pid_t pid, int wstatus, void *arg)
{
	struct af_xfer	*x = arg;

	(void)pid;
	x->pid = -1;
	x->exited = true;
	x->wstatus = wstatus;
	if (x->kind == AF_PERSIST)
		af_persist_done(x);
	else
		af_hydrate_done(x);
}

/*
 * The child's exit code (-1: killed) and its report.  The report is
 * shorter than a pipe's atomic write and the child has exited: it is
 * all in the pipe, one read takes it.
 */
static int
af_tar_report(struct af_xfer *x, struct tar_report *rep)
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
af_excludes(struct http_conn *c, struct http_req *r, char *buf, size_t cap,
    const char **ex)
{
	char	*p, *comma;
	int	 n = 0;

	ex[0] = NULL;
	switch (http_query(r, "excludes", buf, cap)) {
	case 0:
		return 0;
	case -1:
		af_invalid(c, "excludes", "too long");
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
			af_invalid(c, "excludes", "too many entries");
			return -1;
		}
		ex[n++] = p;
		ex[n] = NULL;
	}
	return 0;
}

static void
af_persist(struct http_conn *c, struct http_req *r, bool bridge)
{
	const char	*ex[FILES_EXCLUDES_MAX + 1];
	char		 exbuf[HTTP_MAX_HEAD];
	struct af_xfer	*x;
	struct af_req	 q;
	int		 rootfd;

	if (af_tar_req(c, r, bridge, false, &q) == -1) {
		af_fail(c, &q, errno, "persist");
		return;
	}
	if (af_excludes(c, r, exbuf, sizeof(exbuf), ex) == -1)
		return;
	if ((rootfd = files_open(q.root, q.rel, O_PATH | O_DIRECTORY, 0)) ==
	    -1) {
		af_fail(c, &q, errno, "persist");
		return;
	}
	if ((x = af_xfer_new(c, AF_PERSIST, bridge)) == NULL ||
	    tar_persist_spawn(rootfd, ex, &x->pid, &x->pfd, &x->efd) == -1) {
		close(rootfd);
		af_fail(c, &q, errno, "persist");
		af_xfer_free(x);
		return;
	}
	close(rootfd);
	if (child_watch(x->pid, af_tar_exited, x) == -1) {
		af_fail(c, &q, errno, "persist");
		af_xfer_free(x);	/* killed; reaped as an orphan */
		return;
	}
	log_info("event=persist_started pid=%d root=%s", (int)x->pid, q.abs);
	ev_io_init(&x->pio, af_persist_cb, x->pfd, EV_READ);
	ev_io_start(x->loop, &x->pio);
	/* A connection dead already: af_closed frees it, from the loop. */
	(void)http_stream_begin(c, 200, "application/octet-stream",
	    HTTP_FRAME_CHUNKED, NULL);
	http_conn_own(c, x, af_drained, af_closed);
}

/* The child's output to the reply, paused above HTTP_OUT_HIGH. */
static void
af_persist_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct af_xfer	*x = container_of(w, struct af_xfer, pio);
	size_t		 sent = 0;
	ssize_t		 n;

	(void)revents;
	while (sent < FILES_PUMP_BYTES && !http_conn_dead(x->c)) {
		if (http_conn_pending(x->c) >= HTTP_OUT_HIGH) {
			ev_io_stop(loop, w);
			x->paused = true;
			return;
		}
		n = read(x->pfd, af_chunk, sizeof(af_chunk));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN)
			return;
		if (n <= 0) {
			ev_io_stop(loop, w);
			close(x->pfd);
			x->pfd = -1;
			x->eof = true;
			af_persist_done(x);
			return;
		}
		if (http_stream_write(x->c, af_chunk, n) == -1)
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
af_persist_done(struct af_xfer *x)
{
	struct http_conn	*c = x->c;
	struct tar_report	 rep;
	int			 code;

	if (!x->eof || !x->exited)
		return;
	code = af_tar_report(x, &rep);
	http_conn_own(c, NULL, NULL, NULL);
	af_xfer_free(x);
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
static struct af_xfer *
af_hydrate_start(struct http_conn *c, struct http_req *r, bool bridge)
{
	struct af_xfer	*x;
	struct af_req	 q;
	int		 rootfd, saved;

	if (af_tar_req(c, r, bridge, true, &q) == -1)
		return NULL;
	if ((rootfd = files_open(q.root, q.rel, O_PATH | O_DIRECTORY, 0)) ==
	    -1)
		return NULL;
	if ((x = af_xfer_new(c, AF_HYDRATE, bridge)) == NULL ||
	    tar_hydrate_spawn(rootfd, &x->pid, &x->pfd, &x->efd) == -1 ||
	    child_watch(x->pid, af_tar_exited, x) == -1) {
		saved = errno;
		close(rootfd);
		af_xfer_free(x);
		errno = saved;
		return NULL;
	}
	close(rootfd);
	log_info("event=hydrate_started pid=%d root=%s", (int)x->pid, q.abs);
	ev_io_init(&x->pio, af_hydrate_cb, x->pfd, EV_WRITE);
	http_conn_own(c, x, NULL, af_closed);
	return x;
}

/*
 * Into the pipe what it takes; the rest is kept and the request's
 * reading paused until the pipe is writable again (af_hydrate_cb).
 * Pieces already read still arrive while paused: pend holds at most
 * one read of the socket.
 */
static void
af_hydrate_feed(struct af_xfer *x, const char *d, size_t n)
{
	ssize_t	w = 0;

	if (buf_avail(&x->pend) == 0) {
		while ((w = write(x->pfd, d, n)) == -1 && errno == EINTR)
			;
		if (w == -1 && errno != EAGAIN) {
			af_hydrate_stop(x);	/* EPIPE: it stopped reading */
			return;
		}
		if (w == -1)
			w = 0;
	}
	if ((size_t)w == n)
		return;
	if (buf_add(&x->pend, d + w, n - w) == -1) {
		af_hydrate_stop(x);
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
af_hydrate_stop(struct af_xfer *x)
{
	ev_io_stop(x->loop, &x->pio);
	if (x->pfd != -1)
		close(x->pfd);
	x->pfd = -1;
	buf_free(&x->pend);
	http_conn_resume_read(x->c);
}

static void
af_hydrate_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	struct af_xfer	*x = container_of(w, struct af_xfer, pio);
	ssize_t		 n;

	(void)revents;
	n = write(x->pfd, buf_head(&x->pend), buf_avail(&x->pend));
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -1) {
		af_hydrate_stop(x);
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
af_hydrate_done(struct af_xfer *x)
{
	struct http_conn	*c = x->c;
	struct tar_report	 rep;
	struct files_err	 e;
	cJSON			*j;
	int			 code, wstatus;

	if (!x->body_done || !x->exited)
		return;
	code = af_tar_report(x, &rep);
	wstatus = x->wstatus;
	http_conn_own(c, NULL, NULL, NULL);
	af_xfer_free(x);
	switch (code) {
	case TAR_EXIT_OK:
		af_reply_ok(c);
		return;
	case TAR_EXIT_EMPTY:
		http_reply_error(c, 400, "invalid_request", "Empty tar payload");
		return;
	case TAR_EXIT_BAD:
		log_warnx("event=hydrate_refused msg=\"%s\"", rep.msg);
		j = http_error_obj("invalid_request", "hydrate: %s",
		    rep.msg[0] ? rep.msg : "not a tar archive");
		if (rep.entries >= 0)
			cJSON_AddNumberToObject(j, "entriesWritten",
			    (double)rep.entries);
		http_reply_json(c, 400, j);
		return;
	case TAR_EXIT_IO:
		e = files_errmap(rep.err);
		j = http_error_obj(e.code, "hydrate: %s", rep.msg);
		cJSON_AddStringToObject(j, "errno", codec_errno_name(rep.err));
		if (rep.entries >= 0)
			cJSON_AddNumberToObject(j, "entriesWritten",
			    (double)rep.entries);
		http_reply_json(c, e.status, j);
		return;
	}
	log_warnx("event=hydrate_failed status=%d", wstatus);
	http_reply_error(c, 500, "internal", "hydrate: the tar child ended "
	    "abnormally");
}

static void
af_hydrate_body(struct http_conn *c, struct http_req *r, const char *d,
    size_t n, bool bridge)
{
	struct af_xfer	*x = http_conn_owner(c);

	if (r->body_error != 0 || n == 0)
		return;
	if (x == NULL && (x = af_hydrate_start(c, r, bridge)) == NULL) {
		r->body_error = errno != 0 ? errno : EIO;
		return;
	}
	if (x->pfd != -1)
		af_hydrate_feed(x, d, n);
}

static void
af_hydrate(struct http_conn *c, struct http_req *r, bool bridge)
{
	struct af_xfer	*x = http_conn_owner(c);
	struct af_req	 q;

	if (x == NULL) {
		if (af_tar_req(c, r, bridge, false, &q) == -1)
			af_fail(c, &q, errno, "hydrate");
		else if (r->body_error != 0)
			af_fail(c, &q, r->body_error, "hydrate");
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
	af_hydrate_done(x);
}

/* ------------------------------------------------------------------ */
/* The routes: each handler in its two namespaces */

#define AF_HANDLER(name)						\
static void api_files_##name(struct http_conn *c, struct http_req *r)	\
{ af_##name(c, r, false); }						\
static void api_files_bridge_##name(struct http_conn *c,		\
    struct http_req *r)							\
{ af_##name(c, r, true); }

#define AF_BODY(name)							\
static void api_files_##name##_body(struct http_conn *c,		\
    struct http_req *r, const char *d, size_t n)			\
{ af_##name##_body(c, r, d, n, false); }				\
static void api_files_bridge_##name##_body(struct http_conn *c,	\
    struct http_req *r, const char *d, size_t n)			\
{ af_##name##_body(c, r, d, n, true); }

AF_HANDLER(get)
AF_HANDLER(put)
AF_BODY(put)
AF_HANDLER(delete)
AF_HANDLER(post)
AF_HANDLER(persist)
AF_HANDLER(hydrate)
AF_BODY(hydrate)

const struct http_route api_files_routes[] = {
	{ "GET",	"/v1/file/*",	api_files_get, NULL },
	{ "HEAD",	"/v1/file/*",	api_files_get, NULL },
	{ "PUT",	"/v1/file/*",	api_files_put, api_files_put_body },
	{ "DELETE",	"/v1/file/*",	api_files_delete, NULL },
	{ "POST",	"/v1/file/*",	api_files_post, NULL },
	{ "GET",	"/v1/persist",	api_files_persist, NULL },
	{ "POST",	"/v1/persist",	api_files_persist, NULL },
	{ "POST",	"/v1/hydrate",	api_files_hydrate, api_files_hydrate_body },
	{ NULL, NULL, NULL, NULL }
};

/*
 * The bridge's, matched before the API's: every file method is here, so
 * that none falls through to the files root.
 */
const struct http_route api_files_bridge_routes[] = {
	{ "GET",	"/v1/file/*",	api_files_bridge_get, NULL },
	{ "HEAD",	"/v1/file/*",	api_files_bridge_get, NULL },
	{ "PUT",	"/v1/file/*",	api_files_bridge_put,
	    api_files_bridge_put_body },
	{ "DELETE",	"/v1/file/*",	api_files_bridge_delete, NULL },
	{ "POST",	"/v1/file/*",	api_files_bridge_post, NULL },
	{ "GET",	"/v1/persist",	api_files_bridge_persist, NULL },
	{ "POST",	"/v1/persist",	api_files_bridge_persist, NULL },
	{ "POST",	"/v1/hydrate",	api_files_bridge_hydrate,
	    api_files_bridge_hydrate_body },
	{ NULL, NULL, NULL, NULL }
};
