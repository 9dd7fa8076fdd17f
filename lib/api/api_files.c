/*
 * api_files.c: the file routes.  See api_files.h; the contracts of the
 * engine are files.h, upload.h and fileops.h.
 *
 * Every transfer that outlives its callback is a struct api_files_xfer
 * owned by the connection (http_conn_own): a GET's file, a PUT's upload.
 * It is freed when the reply is made, or from on_close when the client
 * goes away first — which also removes a PUT's temp file.  No transfer
 * holds more than one chunk (a GET none: sendfile), and none moves more
 * than FILES_PUMP_BYTES in one callback: a 1 GiB transfer never stalls
 * the other clients.
 */
#include <sys/stat.h>
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "api.h"
#include "api_errno.h"
#include "api_files.h"
#include "base/codec.h"
#include "base/fsutil.h"
#include "base/jsonstr.h"
#include "base/log.h"
#include "base/turn.h"
#include "base/util.h"
#include "core/fileops.h"
#include "core/upload.h"
#include "sys/child.h"

enum api_files_kind {
	API_FILES_GET,		/* a file's bytes to the client */
	API_FILES_PUT		/* the body to the upload */
};

struct api_files_xfer {
	struct turn		 resume;	/* GET: budget spent, go on */
	struct http_conn	*c;
	struct ev_loop		*loop;
	enum api_files_kind	 kind;
	int			 fd;		/* GET: the file */
	uint64_t		 off, end;	/* GET: next byte, past last */
	struct upload		 up;		/* PUT */
};

/* A listing on its way into a JSON array (api_files_list). */
struct api_files_lister {
	cJSON	*arr;
};

const struct api_files_ns	api_files_ns_root = { false };
const struct api_files_ns	api_files_ns_bridge = { true };

static const char api_files_unsat[] =
    "{\"error\":\"range not satisfiable\",\"code\":\"invalid_range\"}";

static struct api_files_xfer *api_files_xfer_new(struct http_conn *,
		    enum api_files_kind);
static void	api_files_xfer_free(struct api_files_xfer *);
static void	api_files_closed(struct http_conn *, void *);
static void	api_files_drained(struct http_conn *, void *);
static bool	api_files_within(const struct api_files *, const char *);
static int	api_files_resolve(struct http_conn *, struct http_req *, bool,
		    bool, struct api_files_req *);
static int	api_files_req_init(struct http_conn *, struct http_req *,
		    bool, bool, struct api_files_req *);
static int	api_files_reply_with(struct http_conn *, struct http_req *,
		    int, const char *, struct buf *, const char *, size_t);
static int	api_files_headers(struct buf *, const struct stat *);
static int	api_files_list_one(void *, const char *, const struct stat *,
		    const char *);
static void	api_files_listing(struct http_conn *, struct http_req *,
		    const struct api_files_req *, const struct stat *);
static void	api_files_send_file(struct http_conn *, struct http_req *,
		    int, const struct stat *);
static void	api_files_get_pump(struct api_files_xfer *);
static void	api_files_get_resume(struct ev_loop *, ev_check *, int);
static int	api_files_put_opts(struct http_req *, int *, int *,
		    const char **);
static struct api_files_xfer *api_files_put_begin(struct http_conn *,
		    struct http_req *);

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
	/* Not there yet: api_files_root tries again; a bridge write makes
	   it. */
	if (files_root_open(&f->ws, workspace) == -1)
		f->ws.fd = -1;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Transfers */

static struct api_files_xfer *
api_files_xfer_new(struct http_conn *c, enum api_files_kind kind)
{
	struct api_files_xfer	*x;

	if ((x = calloc(1, sizeof(*x))) == NULL)
		return NULL;
	x->c = c;
	x->loop = api_of(c)->tab->loop;
	x->kind = kind;
	x->fd = -1;
	x->up.fd = x->up.dirfd = -1;
	turn_init(&x->resume, api_files_get_resume);
	return x;
}

/* Whatever it holds goes: the temp file, the file. */
static void
api_files_xfer_free(struct api_files_xfer *x)
{
	if (x == NULL)
		return;
	turn_stop(x->loop, &x->resume);
	upload_abort(&x->up);
	if (x->fd != -1)
		close(x->fd);
	free(x);
}

static void
api_files_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_files_xfer_free(owner);
}

static void
api_files_drained(struct http_conn *c, void *owner)
{
	struct api_files_xfer	*x = owner;

	(void)c;
	if (x->kind == API_FILES_GET)
		api_files_get_pump(x);
}

/* ------------------------------------------------------------------ */
/* Paths and errors */

bool
api_files_bridge(struct http_req *r)
{
	const struct api_files_ns	*ns = http_req_route_arg(r);

	return ns != NULL && ns->bridge;
}

const struct files_root *
api_files_root(struct http_conn *c, bool bridge, bool create)
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
api_files_within(const struct api_files *f, const char *abs)
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
	    api_files_within(f, path);
}

/*
 * The route's "*" is the path after "/v1/file/": "/" before it, decoded
 * once, normalised, made relative to the root.  -1 with errno; q->abs
 * then holds what can be quoted.
 */
static int
api_files_resolve(struct http_conn *c, struct http_req *r, bool bridge,
    bool create, struct api_files_req *q)
{
	const char		*enc = r->nparam > 0 ? r->param[0] : "";
	struct api_files	*f = api_of(c)->files;

	q->bridge = bridge;
	q->root = bridge ? &f->ws : &f->root;
	q->abs[0] = '/';
	if (bridge && enc[0] == '\0') {
		q->abs[0] = '\0';	/* api_files_fail: must not be empty */
		errno = EINVAL;
		return -1;
	}
	if (files_decode(enc, strlen(enc), q->abs + 1, sizeof(q->abs) - 1)
	    == -1 || files_normalize(q->abs) == -1) {
		snprintf(q->abs, sizeof(q->abs), "/%.200s", enc);
		errno = EINVAL;
		return -1;
	}
	if (bridge && !api_files_within(f, q->abs)) {
		errno = ELOOP;
		return -1;
	}
	if (bridge && api_files_root(c, true, create) == NULL)
		return -1;
	return files_rel(q->root, q->abs, q->rel, sizeof(q->rel));
}

static int
api_files_req_init(struct http_conn *c, struct http_req *r, bool bridge,
    bool create, struct api_files_req *q)
{
	if (api_files_resolve(c, r, bridge, create, q) == 0)
		return 0;
	/* A workspace not made yet: GET's own 404. */
	api_files_fail(c, q, errno, strcmp(r->method, "GET") == 0 ? "read" :
	    "path");
	return -1;
}

void
api_files_fail(struct http_conn *c, const struct api_files_req *q, int err,
    const char *what)
{
	const struct api_errno	*e = api_errno(err);
	const char		*code = e->code;
	cJSON			*j;

	if (q->bridge && q->abs[0] == '\0') {
		api_files_invalid(c, "path", "a file path must not be empty");
		return;
	}
	if (e->outside && q->bridge)
		j = http_error_obj("invalid_request", "path '%s' must be "
		    "within %s", q->abs, api_of(c)->files->ws_path);
	else if (e->outside)
		j = http_error_obj(code, "path '%s' is outside the files root "
		    "%s", q->abs, q->root->path);
	else {
		if (q->bridge && err == ENOENT && strcmp(what, "read") == 0)
			code = "workspace_read_not_found";
		j = http_error_obj(code, "%s '%s': %s", what, q->abs,
		    strerror(err));
	}
	cJSON_AddStringToObject(j, "errno", codec_errno_name(err));
	http_reply_json(c, e->status, j);
}

void
api_files_invalid(struct http_conn *c, const char *field, const char *why)
{
	cJSON	*j = http_error_obj("invalid_request", "%s: %s", field, why);

	cJSON_AddStringToObject(j, "field", field);
	http_reply_json(c, 400, j);
}

void
api_files_reply_ok(struct http_conn *c)
{
	static const char	ok[] = "{\"ok\":true}";

	http_reply(c, 200, "application/json", ok, sizeof(ok) - 1);
}

/* A whole reply with extra header lines (h, consumed); HEAD: no body. */
static int
api_files_reply_with(struct http_conn *c, struct http_req *r, int status,
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
/* Listing */

const char *
api_files_type(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "char";
	case S_IFBLK:
		return "block";
	}
	return "unknown";
}

cJSON *
api_files_entry(const char *name, const struct stat *st, const char *target)
{
	char	 mtime[TIME_MAX];
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	codec_time(mtime, (int64_t)st->st_mtim.tv_sec * 1000 +
	    st->st_mtim.tv_nsec / 1000000);
	if (jsonstr_add_bytes(o, "name", name) == -1 ||
	    cJSON_AddStringToObject(o, "type", api_files_type(st->st_mode)) ==
	    NULL ||
	    cJSON_AddNumberToObject(o, "size", (double)st->st_size) == NULL ||
	    cJSON_AddNumberToObject(o, "mode", st->st_mode & 07777) == NULL ||
	    cJSON_AddStringToObject(o, "mtime", mtime) == NULL ||
	    (target != NULL &&
	    jsonstr_add_bytes(o, "target", target) == -1)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static int
api_files_list_one(void *arg, const char *name, const struct stat *st,
    const char *target)
{
	struct api_files_lister	*l = arg;
	cJSON			*o;

	if ((o = api_files_entry(name, st, target)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	cJSON_AddItemToArray(l->arr, o);
	return 0;
}

int
api_files_list(const struct files_root *r, const char *rel, int depth,
    cJSON *arr, bool *truncated)
{
	struct api_files_lister	l = { arr };

	return fileops_list(r, rel, depth, api_files_list_one, &l, truncated);
}

/* ------------------------------------------------------------------ */
/* GET and HEAD */

/* What HEAD tells of a file, on GET too. */
static int
api_files_headers(struct buf *h, const struct stat *st)
{
	char		ts[TIME_MAX], date[64];
	struct tm	tm;

	codec_time(ts, (int64_t)st->st_mtim.tv_sec * 1000 +
	    st->st_mtim.tv_nsec / 1000000);
	gmtime_r(&st->st_mtim.tv_sec, &tm);
	strftime(date, sizeof(date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
	return buf_printf(h, "Tend-File-Type: %s\r\nTend-File-Mode: %04o\r\n"
	    "Tend-File-Mtime: %s\r\nLast-Modified: %s\r\n",
	    api_files_type(st->st_mode), (unsigned)(st->st_mode & 07777), ts,
	    date);
}

static void
api_files_listing(struct http_conn *c, struct http_req *r,
    const struct api_files_req *q, const struct stat *st)
{
	struct buf	 h = { 0 };
	uint64_t	 depth = 1;
	bool		 truncated = false;
	cJSON		*j, *arr;
	char		*s;

	if (http_query_u64(r, "depth", &depth) == -1 || depth < 1 ||
	    depth > FILES_LIST_DEPTH_MAX) {
		api_files_invalid(c, "depth", "must be an integer from 1 to "
		    "32");
		return;
	}
	j = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(j, "entries");
	if (arr == NULL || api_files_list(q->root, q->rel, (int)depth, arr,
	    &truncated) == -1) {
		cJSON_Delete(j);
		api_files_fail(c, q, arr == NULL ? ENOMEM : errno, "list");
		return;
	}
	if (truncated)
		cJSON_AddBoolToObject(j, "truncated", true);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (s == NULL || api_files_headers(&h, st) == -1) {
		free(s);
		buf_free(&h);
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	(void)api_files_reply_with(c, r, 200, "application/json", &h, s,
	    strlen(s));
	free(s);
}

/*
 * 200 whole, 206 a range, 416 none of it; the body from
 * api_files_get_pump.  Every header line is checked: a reply without
 * its Content-Range would hand the client the wrong bytes as the right
 * ones, so a header that cannot be made is a 503.
 */
static void
api_files_send_file(struct http_conn *c, struct http_req *r, int fd,
    const struct stat *st)
{
	struct api_files_xfer	*x = NULL;
	struct buf		 h = { 0 };
	uint64_t		 size = (uint64_t)st->st_size, first = 0, last;
	int			 status = 200, rc = 0;

	last = size - 1;
	switch (http_range_parse(http_header(r, "Range"), size, &first,
	    &last)) {
	case HTTP_RANGE_FULL:
		first = 0, last = size - 1;
		break;
	case HTTP_RANGE_PART:
		status = 206;
		rc = buf_printf(&h, "Content-Range: bytes %llu-%llu/%llu\r\n",
		    (unsigned long long)first, (unsigned long long)last,
		    (unsigned long long)size);
		break;
	case HTTP_RANGE_UNSATISFIABLE:
		close(fd);
		if (buf_printf(&h, "Content-Range: bytes */%llu\r\n",
		    (unsigned long long)size) == -1) {
			buf_free(&h);
			http_reply_error(c, 503, "busy", "out of memory");
			return;
		}
		(void)api_files_reply_with(c, r, 416, "application/json", &h,
		    api_files_unsat, sizeof(api_files_unsat) - 1);
		return;
	}
	if (rc == -1 || (x = api_files_xfer_new(c, API_FILES_GET)) == NULL ||
	    api_files_headers(&h, st) == -1 ||
	    buf_printf(&h, "Accept-Ranges: bytes\r\nContent-Length: %llu\r\n",
	    (unsigned long long)(size == 0 ? 0 : last - first + 1)) == -1 ||
	    buf_add(&h, "", 1) == -1) {
		close(fd);
		api_files_xfer_free(x);
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
	http_conn_own(c, x, api_files_drained, api_files_closed);
	if (rc == 0)
		api_files_get_pump(x);	/* else api_files_closed frees it */
}

/*
 * Send the file while the connection takes it and the share lasts, by
 * sendfile(2): the bytes never pass through the agent.  The length was
 * promised: a file that shrank meanwhile ends the connection.
 */
static void
api_files_get_pump(struct api_files_xfer *x)
{
	struct http_conn	*c = x->c;
	size_t			 sent = 0, want;
	ssize_t			 n;

	turn_stop(x->loop, &x->resume);
	while (x->off < x->end) {
		if (http_conn_dead(c) || http_conn_pending(c) > 0)
			return;		/* api_files_drained goes on */
		if (sent >= FILES_PUMP_BYTES) {
			turn_start(x->loop, &x->resume);
			return;
		}
		want = x->end - x->off;
		if (want > FILES_PUMP_BYTES - sent)
			want = FILES_PUMP_BYTES - sent;
		n = http_stream_sendfile(c, x->fd, &x->off, want);
		if (n == -1 && errno == EAGAIN)
			return;		/* api_files_drained goes on */
		if (n <= 0) {
			log_warn("event=file_send_failed off=%llu",
			    (unsigned long long)x->off);
			http_conn_abort(c);
			return;
		}
		sent += n;
	}
	http_conn_own(c, NULL, NULL, NULL);
	api_files_xfer_free(x);
	http_stream_end(c);
}

void
api_files_send(struct http_conn *c, struct http_req *r, int fd,
    const struct stat *st)
{
	api_files_send_file(c, r, fd, st);
}

static void
api_files_get_resume(struct ev_loop *loop, ev_check *w, int revents)
{
	(void)loop;
	(void)revents;
	api_files_get_pump(container_of(w, struct api_files_xfer,
	    resume.check));
}

static void
api_files_get(struct http_conn *c, struct http_req *r)
{
	bool			bridge = api_files_bridge(r);
	struct api_files_req	q;
	struct stat		st;
	int			fd;

	if (api_files_req_init(c, r, bridge, false, &q) == -1)
		return;
	if ((fd = files_open_read(q.root, q.rel, &st)) == -1) {
		api_files_fail(c, &q, errno, "read");
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		api_files_send_file(c, r, fd, &st);
		return;
	}
	close(fd);
	if (bridge && strcmp(r->method, "GET") == 0)
		http_reply_error(c, 400, "invalid_request", "'%s' is a "
		    "directory, not a file", q.abs);
	else
		api_files_listing(c, r, &q, &st);
}

/* ------------------------------------------------------------------ */
/* PUT */

/* ?mode=0644 (octal), ?append=1.  -1: *bad names the field. */
static int
api_files_put_opts(struct http_req *r, int *flags, int *mode,
    const char **bad)
{
	char	 v[8], *end;
	long	 m;
	int	 append;

	*flags = UPLOAD_PARENTS;
	*mode = UPLOAD_MODE_KEEP;
	if ((append = http_query_bool(r, "append", 0)) == -1) {
		*bad = "append";
		return -1;
	}
	if (append)
		*flags |= UPLOAD_APPEND;
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
static struct api_files_xfer *
api_files_put_begin(struct http_conn *c, struct http_req *r)
{
	struct api_files_xfer	*x;
	struct api_files_req	 q;
	const char		*bad;
	int			 flags, mode;

	if (api_files_resolve(c, r, api_files_bridge(r), true, &q) == -1)
		return NULL;
	if (api_files_put_opts(r, &flags, &mode, &bad) == -1) {
		errno = EINVAL;
		return NULL;
	}
	if ((x = api_files_xfer_new(c, API_FILES_PUT)) == NULL)
		return NULL;
	if (upload_begin(&x->up, q.root, q.rel, flags, mode) == -1) {
		api_files_xfer_free(x);
		return NULL;
	}
	http_conn_own(c, x, NULL, api_files_closed);
	return x;
}

/*
 * Each piece is written as it arrives: no buffer, so nothing to pause
 * for; the write is this callback's share (one read of the socket).  A
 * failure removes the temp file at once; the rest of the body is read
 * and dropped, and the reply says why.
 */
static void
api_files_put_body(struct http_conn *c, struct http_req *r, const char *d,
    size_t n)
{
	struct api_files_xfer	*x = http_conn_owner(c);

	if (r->body_error != 0)
		return;
	if (x == NULL && (x = api_files_put_begin(c, r)) == NULL) {
		r->body_error = errno != 0 ? errno : EIO;
		return;
	}
	if (upload_write(&x->up, d, n) == -1) {
		r->body_error = errno != 0 ? errno : EIO;
		http_conn_own(c, NULL, NULL, NULL);
		api_files_xfer_free(x);
	}
}

static void
api_files_put(struct http_conn *c, struct http_req *r)
{
	struct api_files_xfer	*x = http_conn_owner(c);
	bool			 bridge = api_files_bridge(r);
	struct api_files_req	 q;
	const char		*bad;
	bool			 created;
	int			 flags, mode, rc, err;

	http_conn_own(c, NULL, NULL, NULL);
	if (api_files_req_init(c, r, bridge, true, &q) == -1)
		goto out;
	if (api_files_put_opts(r, &flags, &mode, &bad) == -1) {
		api_files_invalid(c, bad, strcmp(bad, "mode") == 0 ? "must be "
		    "octal permission bits, 0 to 07777" : "must be 1, true, 0 "
		    "or false");
		goto out;
	}
	if (r->body_error != 0) {
		api_files_fail(c, &q, r->body_error, "write");
		goto out;
	}
	if (x == NULL && (x = api_files_put_begin(c, r)) == NULL) {
		api_files_fail(c, &q, errno, "write");
		goto out;
	}
	http_conn_own(c, NULL, NULL, NULL);
	rc = upload_commit(&x->up, &created);
	err = errno;
	if (rc == -1)
		api_files_fail(c, &q, err, "write");
	else if (bridge)
		api_files_reply_ok(c);
	else
		http_reply(c, created ? 201 : 204, NULL, NULL, 0);
out:
	api_files_xfer_free(x);
}

/* ------------------------------------------------------------------ */
/* DELETE and POST */

/* A recursive delete in its helper child, owned by the connection. */
struct api_files_rm {
	struct http_conn	*c;
	pid_t			 pid;
	api_files_done_fn	 done;
	void			*arg;
};

static void
api_files_rm_closed(struct http_conn *c, void *owner)
{
	struct api_files_rm	*x = owner;

	(void)c;
	(void)kill(x->pid, SIGKILL);
	child_unwatch(x->pid);
	log_info("event=delete_killed pid=%d", (int)x->pid);
	free(x->arg);
	free(x);
}

static void
api_files_rm_exited(pid_t pid, int wstatus, void *arg)
{
	struct api_files_rm	*x = arg;
	int			 err = 0;

	(void)pid;
	if (fileops_delete_status(wstatus) == -1)
		err = errno;
	http_conn_own(x->c, NULL, NULL, NULL);
	x->done(x->c, err, x->arg);
	free(x);
}

int
api_files_delete_run(struct http_conn *c, const struct files_root *root,
    const char *rel, bool recursive, api_files_done_fn done, void *arg)
{
	struct api_files_rm	*x;
	struct stat		 st;
	int			 err = 0;

	/* Only a directory's tree can take long: the rest is one call. */
	if (!recursive || files_stat(root, rel, false, &st) == -1 ||
	    !S_ISDIR(st.st_mode)) {
		if (fileops_delete(root, rel, recursive) == -1)
			err = errno;
		done(c, err, arg);
		return 0;
	}
	if ((x = calloc(1, sizeof(*x))) == NULL)
		return -1;
	x->c = c;
	x->done = done;
	x->arg = arg;
	if ((x->pid = fileops_delete_spawn(root, rel)) == -1) {
		free(x);
		return -1;
	}
	if (child_watch(x->pid, api_files_rm_exited, x) == -1) {
		err = errno;
		(void)kill(x->pid, SIGKILL);	/* reaped as an orphan */
		free(x);
		errno = err;
		return -1;
	}
	http_conn_own(c, x, NULL, api_files_rm_closed);
	return 0;
}

static void
api_files_delete_done(struct http_conn *c, int err, void *arg)
{
	struct api_files_req	*q = arg;

	if (err != 0)
		api_files_fail(c, q, err, "delete");
	else
		http_reply(c, 204, NULL, NULL, 0);
	free(q);
}

static void
api_files_delete(struct http_conn *c, struct http_req *r)
{
	struct api_files_req	*q;
	int			 recursive;

	if ((q = malloc(sizeof(*q))) == NULL) {
		http_reply_error(c, 500, "internal", "out of memory");
		return;
	}
	if (api_files_req_init(c, r, api_files_bridge(r), false, q) == -1)
		goto out;
	if ((recursive = http_query_bool(r, "recursive", 0)) == -1) {
		api_files_invalid(c, "recursive", "must be 1, true, 0 or "
		    "false");
		goto out;
	}
	if (api_files_delete_run(c, q->root, q->rel, recursive,
	    api_files_delete_done, q) == 0)
		return;
	api_files_fail(c, q, errno, "delete");
out:
	free(q);
}

/* ?op=move&to=/dst[&overwrite=1]: to is in the same namespace. */
static void
api_files_move(struct http_conn *c, struct http_req *r,
    const struct api_files_req *q)
{
	struct api_files_req	 to = *q;
	int			 overwrite;

	if ((overwrite = http_query_bool(r, "overwrite", 0)) == -1) {
		api_files_invalid(c, "overwrite", "must be 1, true, 0 or "
		    "false");
		return;
	}
	if (http_query(r, "to", to.abs, sizeof(to.abs)) != 1 ||
	    to.abs[0] != '/') {
		api_files_invalid(c, "to", "must be an absolute path");
		return;
	}
	if (files_normalize(to.abs) == -1 ||
	    files_rel(to.root, to.abs, to.rel, sizeof(to.rel)) == -1) {
		api_files_fail(c, &to, errno, "move to");
		return;
	}
	if (fileops_move(q->root, q->rel, to.rel, overwrite) == -1)
		api_files_fail(c, errno == EEXIST ? &to : q, errno, "move");
	else
		http_reply(c, 204, NULL, NULL, 0);
}

static void
api_files_post(struct http_conn *c, struct http_req *r)
{
	struct api_files_req	q;
	char			op[8];
	int			parents;

	if (api_files_req_init(c, r, api_files_bridge(r), true, &q) == -1)
		return;
	if (http_query(r, "op", op, sizeof(op)) != 1)
		op[0] = '\0';
	if (strcmp(op, "move") == 0) {
		api_files_move(c, r, &q);
		return;
	}
	if (strcmp(op, "mkdir") != 0) {
		api_files_invalid(c, "op", "must be mkdir or move");
		return;
	}
	if ((parents = http_query_bool(r, "parents", 0)) == -1) {
		api_files_invalid(c, "parents", "must be 1, true, 0 or false");
		return;
	}
	if (fileops_mkdir(q.root, q.rel, parents, 0755) == -1)
		api_files_fail(c, &q, errno, "mkdir");
	else
		http_reply(c, 201, NULL, NULL, 0);
}

/* ------------------------------------------------------------------ */
/* The routes: the same handlers in both namespaces, told by their arg */

const struct http_route api_files_routes[] = {
	{ "GET",	"/v1/file/*",	api_files_get, NULL,
	    &api_files_ns_root },
	{ "HEAD",	"/v1/file/*",	api_files_get, NULL,
	    &api_files_ns_root },
	{ "PUT",	"/v1/file/*",	api_files_put, api_files_put_body,
	    &api_files_ns_root },
	{ "DELETE",	"/v1/file/*",	api_files_delete, NULL,
	    &api_files_ns_root },
	{ "POST",	"/v1/file/*",	api_files_post, NULL,
	    &api_files_ns_root },
	{ NULL, NULL, NULL, NULL, NULL }
};

/*
 * The bridge's, matched before the API's: every file method is here, so
 * that none falls through to the files root (api_tar_bridge_routes for
 * persist and hydrate).
 */
const struct http_route api_files_bridge_routes[] = {
	{ "GET",	"/v1/file/*",	api_files_get, NULL,
	    &api_files_ns_bridge },
	{ "HEAD",	"/v1/file/*",	api_files_get, NULL,
	    &api_files_ns_bridge },
	{ "PUT",	"/v1/file/*",	api_files_put, api_files_put_body,
	    &api_files_ns_bridge },
	{ "DELETE",	"/v1/file/*",	api_files_delete, NULL,
	    &api_files_ns_bridge },
	{ "POST",	"/v1/file/*",	api_files_post, NULL,
	    &api_files_ns_bridge },
	{ NULL, NULL, NULL, NULL, NULL }
};
