/*
 * api_envd_files.c: GET and POST /files.  See api_envd_files.h; the wire
 * facts are proto/README.md's (the envd namespace, "Files and
 * watching").
 */
#include <sys/stat.h>
#include <sys/xattr.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <ctype.h>
#include <unistd.h>
#define ZLIB_CONST		/* next_in takes the body's const bytes */
#include <zlib.h>

#include <cjson/cJSON.h>

#include "api/api.h"
#include "api/api_errno.h"
#include "api/api_files.h"
#include "api_envd_files.h"
#include "api_envd_req.h"
#include "base/buf.h"
#include "base/jsonstr.h"
#include "base/tunables.h"
#include "base/turn.h"
#include "base/util.h"
#include "connect.h"
#include "core/files.h"
#include "core/upload.h"
#include "envd.h"
#include "net/multipart.h"
#include "sys/user.h"

/*
 * A POST /files upload, owned by its connection.  A loop turn takes a
 * share of the body: a gzip body is inflated FILES_PUMP_BYTES a turn,
 * and a multipart body begins at most MULTIPART_PARTS_TURN parts a turn
 * (each part's file is opened, written, fsynced and renamed: a body of
 * many small parts would otherwise hold the loop for all of them).  What
 * a turn leaves of a piece waits in zin (at most one read of the socket,
 * reading being paused meanwhile) and the rest is taken from the check
 * watcher, a share a turn.
 */
struct api_envd_files_up {
	struct http_conn	*c;
	struct ev_loop		*loop;
	bool			 gz;		/* Content-Encoding: gzip */
	bool			 zopen;		/* inside a gzip member */
	bool			 zseen;		/* a member ended */
	bool			 body_done;	/* the reply waits for zin */
	z_stream		 z;
	struct buf		 zin;		/* body not inflated yet */
	unsigned		 zturn;		/* ev_iteration of zmade */
	size_t			 zmade;		/* inflated in that turn */
	int			 zparts;	/* parts begun in that turn */
	struct turn		 zresume;	/* take zin's next share */
	struct envd_user	 u;
	struct multipart	*mp;		/* NULL: octet-stream */
	bool			 begun;		/* a file is being written */
	bool			 skip;		/* a part that is not "file" */
	int			 status;	/* of the first failure, or 0 */
	char			 msg[API_ERR_MSG_MAX];
	char			 qpath[PATH_MAX];	/* ?path=, or "" */
	struct api_envd_req_path p;
	struct upload		 put;
	cJSON			*meta;		/* X-Metadata-*, or NULL */
	cJSON			*done;		/* the reply's entries */
};

static void	api_envd_files_err(struct http_conn *, int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static int	api_envd_files_user(struct http_conn *, struct http_req *,
		    struct envd_user *, struct envd_err *);
static void	api_envd_files_up_fail(struct api_envd_files_up *, int,
		    const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static void	api_envd_files_up_errno(struct api_envd_files_up *, int,
		    const char *);
static struct api_envd_files_up *api_envd_files_up_new(struct http_conn *,
		    struct http_req *);
static void	api_envd_files_up_free(struct api_envd_files_up *);
static void	api_envd_files_up_closed(struct http_conn *, void *);
static int	api_envd_files_up_encoding(struct api_envd_files_up *,
		    const char *);
static int	api_envd_files_up_meta(struct api_envd_files_up *,
		    struct http_req *);
static int	api_envd_files_up_meta_put(struct api_envd_files_up *);
static int	api_envd_files_up_begin(struct api_envd_files_up *,
		    const char *);
static int	api_envd_files_up_commit(struct api_envd_files_up *);
static int	api_envd_files_part_begin(void *,
		    const struct multipart_part *);
static int	api_envd_files_part_data(void *, const char *, size_t);
static int	api_envd_files_part_end(void *);
static void	api_envd_files_up_take(struct api_envd_files_up *,
		    const char *, size_t);
static size_t	api_envd_files_gz_inflate(struct api_envd_files_up *,
		    const char *, size_t);
static bool	api_envd_files_share_left(struct api_envd_files_up *);
static size_t	api_envd_files_mp_feed(struct api_envd_files_up *,
		    const char *, size_t);
static size_t	api_envd_files_share(struct api_envd_files_up *,
		    const char *, size_t);
static void	api_envd_files_piece(struct api_envd_files_up *,
		    const char *, size_t);
static void	api_envd_files_resume(struct ev_loop *, ev_check *, int);
static void	api_envd_files_up_finish(struct api_envd_files_up *);

static const struct multipart_cb api_envd_files_parts = {
	api_envd_files_part_begin, api_envd_files_part_data,
	api_envd_files_part_end
};

/* ------------------------------------------------------------------ */
/* GET /files */

/* envd's REST error: {"message","code":status}. */
static void
api_envd_files_err(struct http_conn *c, int status, const char *fmt, ...)
{
	char	 msg[API_ERR_MSG_MAX];
	va_list	 ap;
	cJSON	*j;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if ((j = cJSON_CreateObject()) == NULL ||
	    jsonstr_add(j, "message", msg) == NULL ||
	    cJSON_AddNumberToObject(j, "code", status) == NULL) {
		cJSON_Delete(j);
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	http_reply_json(c, status, j);
}

/* ?username= (envd's), else Basic credentials, else the default user. */
static int
api_envd_files_user(struct http_conn *c, struct http_req *r,
    struct envd_user *u, struct envd_err *e)
{
	char	name[USER_NAME_MAX];

	switch (http_query(r, "username", name, sizeof(name))) {
	case 1:
		if (name[0] != '\0')
			return envd_user_lookup(name, u, e);
		break;
	case -1:
		envd_err_set(e, "unauthenticated", "username: too long");
		return -1;
	}
	return envd_request_user(api_of(c)->envd, r, u, e);
}

void
api_envd_files_get(struct http_conn *c, struct http_req *r)
{
	struct envd_user		 u;
	struct envd_err			 e;
	struct api_envd_req_path	 p;
	struct stat			 st;
	char				 q[PATH_MAX];
	int				 fd;

	if (api_envd_files_user(c, r, &u, &e) == -1) {
		api_envd_files_err(c, 401, "%s", e.message);
		return;
	}
	switch (http_query(r, "path", q, sizeof(q))) {
	case -1:
		api_envd_files_err(c, 400, "path: too long");
		return;
	case 0:
		q[0] = '\0';
		break;
	}
	if (api_envd_req_resolve(c, &u, q, &p, &e) == -1) {
		api_envd_files_err(c, connect_http_status(e.code), "%s",
		    e.message);
		return;
	}
	if ((fd = files_open_read(&api_of(c)->files->root, p.rel, &st)) ==
	    -1) {
		if (errno == ENOENT)
			api_envd_files_err(c, 404, "path '%s' does not exist",
			    p.abs);
		else if (errno == ELOOP)
			api_envd_files_err(c, 403, "path '%s' is outside the "
			    "files root", p.abs);
		else
			api_envd_files_err(c, api_errno(errno)->status,
			    "read '%s': %s", p.abs, strerror(errno));
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		api_envd_files_err(c, 400, "path '%s' is a directory", p.abs);
		return;
	}
	api_files_send(c, r, fd, &st);
}

/* ------------------------------------------------------------------ */
/* POST /files: a streaming upload */

/* The first failure is the reply; what follows of the body is dropped. */
static void
api_envd_files_up_fail(struct api_envd_files_up *up, int status,
    const char *fmt, ...)
{
	va_list	ap;

	if (up->status != 0)
		return;
	up->status = status;
	va_start(ap, fmt);
	(void)vsnprintf(up->msg, sizeof(up->msg), fmt, ap);
	va_end(ap);
	upload_abort(&up->put);
	up->begun = false;
}

static void
api_envd_files_up_errno(struct api_envd_files_up *up, int err, const char *what)
{
	if (err == ENOSPC || err == EDQUOT)
		api_envd_files_up_fail(up, 507, "not enough disk space "
		    "available: %s '%s'", what, up->p.abs);
	else if (err == ELOOP)
		api_envd_files_up_fail(up, 403, "path '%s' is outside the "
		    "files root", up->p.abs);
	else
		api_envd_files_up_fail(up, api_errno(err)->status,
		    "%s '%s': %s", what, up->p.abs, strerror(err));
}

/*
 * The upload's state, at the body's first piece: its user, and how the
 * body is framed (octet-stream: one file, at ?path=; multipart: a file
 * per "file" part, at ?path= if given, else at the part's filename).
 */
static struct api_envd_files_up *
api_envd_files_up_new(struct http_conn *c, struct http_req *r)
{
	struct api_envd_files_up	*up;
	struct envd_err			 e;
	const char			*ct, *ce;
	char				 b[MULTIPART_BOUNDARY_MAX + 1];

	ct = http_header(r, "Content-Type");
	ce = http_header(r, "Content-Encoding");

	if ((up = calloc(1, sizeof(*up))) == NULL)
		return NULL;
	up->c = c;
	up->loop = api_of(c)->tab->loop;
	up->put.fd = up->put.dirfd = up->put.slot = -1;
	turn_init(&up->zresume, api_envd_files_resume);
	http_conn_own(c, up, NULL, api_envd_files_up_closed);
	if ((up->done = cJSON_CreateArray()) == NULL) {
		api_envd_files_up_fail(up, 503, "out of memory");
		return up;
	}
	if (api_envd_files_user(c, r, &up->u, &e) == -1) {
		api_envd_files_up_fail(up, 401, "%s", e.message);
		return up;
	}
	if (http_query(r, "path", up->qpath, sizeof(up->qpath)) == -1) {
		api_envd_files_up_fail(up, 400, "path: too long");
		return up;
	}
	if (api_envd_files_up_meta(up, r) == -1)
		return up;
	if (api_envd_files_up_encoding(up, ce) == -1)
		return up;
	if (ct != NULL && strncasecmp(ct, "application/octet-stream", 24) ==
	    0) {
		if (up->qpath[0] == '\0')
			api_envd_files_up_fail(up, 400, "path query parameter "
			    "is required for raw body upload");
		else
			(void)api_envd_files_up_begin(up, up->qpath);
		return up;
	}
	if (multipart_boundary(ct, b, sizeof(b)) == -1) {
		api_envd_files_up_fail(up, 400, "unsupported content type: "
		    "%.64s, expected multipart/form-data (with a boundary) or "
		    "application/octet-stream", ct != NULL ? ct : "(none)");
		return up;
	}
	if ((up->mp = malloc(sizeof(*up->mp))) == NULL) {
		api_envd_files_up_fail(up, 503, "out of memory");
		return up;
	}
	(void)multipart_init(up->mp, b, &api_envd_files_parts, up);
	return up;
}

static void
api_envd_files_up_free(struct api_envd_files_up *up)
{
	if (up == NULL)
		return;
	turn_stop(up->loop, &up->zresume);
	if (up->gz)
		(void)inflateEnd(&up->z);
	buf_free(&up->zin);
	upload_abort(&up->put);
	cJSON_Delete(up->meta);
	cJSON_Delete(up->done);
	free(up->mp);
	free(up);
}

static void
api_envd_files_up_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_envd_files_up_free(owner);
}

/*
 * Content-Encoding: none or identity, or gzip (x-gzip: its old name),
 * inflated as envd's Go reader does: members one after another.
 */
static int
api_envd_files_up_encoding(struct api_envd_files_up *up, const char *ce)
{
	if (ce == NULL || strcasecmp(ce, "identity") == 0)
		return 0;
	if (strcasecmp(ce, "gzip") != 0 && strcasecmp(ce, "x-gzip") != 0) {
		api_envd_files_up_fail(up, 400, "error decompressing request "
		    "body: unsupported Content-Encoding: %.32s, supported: "
		    "gzip, x-gzip, identity", ce);
		return -1;
	}
	if (inflateInit2(&up->z, 16 + MAX_WBITS) != Z_OK) {
		api_envd_files_up_fail(up, 503, "out of memory");
		return -1;
	}
	up->gz = true;
	return 0;
}

/* s is printable US-ASCII (what envd takes in metadata), else its byte. */
static int
api_envd_files_meta_bad(const char *s)
{
	for (; *s != '\0'; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			return (unsigned char)*s;
	return -1;
}

/*
 * The upload's metadata, as envd takes it: each X-Metadata-<key> header
 * (any case) is the key in lower case, the first of a repeated one
 * wins, an empty key is ignored; keys and values printable ASCII, a key
 * at most ENVD_META_KEY_MAX bytes, prefixed names and values at most
 * ENVD_META_BYTES_MAX in all (so at most ENVD_META_MAX of them), else
 * 400 before any file is written.
 */
static int
api_envd_files_up_meta(struct api_envd_files_up *up, struct http_req *r)
{
	static const char	 hp[] = "X-Metadata-";
	const char		*it = NULL, *name, *value;
	char			 key[ENVD_META_KEY_MAX + 1];
	size_t			 klen, total = 0, i;
	int			 bad, n = 0;

	while (http_header_next(r, &it, &name, &value) == 1) {
		if (strncasecmp(name, hp, sizeof(hp) - 1) != 0 ||
		    name[sizeof(hp) - 1] == '\0')
			continue;
		name += sizeof(hp) - 1;
		if ((klen = strlen(name)) > ENVD_META_KEY_MAX) {
			api_envd_files_up_fail(up, 400, "invalid metadata: "
			    "metadata key \"%.32s...\" exceeds %d bytes", name,
			    ENVD_META_KEY_MAX);
			return -1;
		}
		for (i = 0; i <= klen; i++)
			key[i] = (char)tolower((unsigned char)name[i]);
		if (up->meta != NULL &&
		    cJSON_GetObjectItemCaseSensitive(up->meta, key) != NULL)
			continue;
		if ((bad = api_envd_files_meta_bad(key)) != -1 ||
		    (bad = api_envd_files_meta_bad(value)) != -1) {
			api_envd_files_up_fail(up, 400, "invalid metadata: "
			    "metadata %s \"%.64s\" contains the "
			    "non-printable-ASCII byte 0x%02x",
			    api_envd_files_meta_bad(key) != -1 ? "key" :
			    "value for key", key, bad);
			return -1;
		}
		total += sizeof(ENVD_META_PREFIX) - 1 + klen + strlen(value);
		if (total > ENVD_META_BYTES_MAX || ++n > ENVD_META_MAX) {
			api_envd_files_up_fail(up, 400, "invalid metadata: "
			    "total metadata size exceeds %d bytes",
			    ENVD_META_BYTES_MAX);
			return -1;
		}
		if ((up->meta == NULL &&
		    (up->meta = cJSON_CreateObject()) == NULL) ||
		    cJSON_AddStringToObject(up->meta, key, value) == NULL) {
			api_envd_files_up_fail(up, 503, "out of memory");
			return -1;
		}
	}
	return 0;
}

/*
 * The metadata on the temp file, before its bytes: the file renamed
 * over the name carries these and no other (an upload replaces what
 * the old file had), and a file system that refuses them fails the
 * upload with the old file in place, never a file without them.
 */
static int
api_envd_files_up_meta_put(struct api_envd_files_up *up)
{
	const cJSON	*it;
	char		 xname[sizeof(ENVD_META_PREFIX) + ENVD_META_KEY_MAX];

	cJSON_ArrayForEach(it, up->meta) {
		snprintf(xname, sizeof(xname), "%s%s", ENVD_META_PREFIX,
		    it->string);
		if (fsetxattr(up->put.fd, xname, it->valuestring,
		    strlen(it->valuestring), 0) == 0)
			continue;
		if (errno == ENOSPC || errno == EDQUOT)
			api_envd_files_up_fail(up, 507, "not enough space for "
			    "file metadata: '%s'", up->p.abs);
		else
			api_envd_files_up_fail(up, 500, "error writing file "
			    "metadata: '%s': %s", up->p.abs,
			    errno == ENOTSUP ? "the file system does not "
			    "support extended attributes" : strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * A file of the upload: the path resolved for the user, refused if the
 * upload wrote it already; parents made (the user's), the temp file
 * made beside it and given to the user, as envd leaves what it writes.
 */
static int
api_envd_files_up_begin(struct api_envd_files_up *up, const char *path)
{
	const struct files_root	*root = &api_of(up->c)->files->root;
	const cJSON		*it;
	struct envd_err		 e;
	bool			 root_user = geteuid() == 0;

	if (api_envd_req_resolve(up->c, &up->u, path, &up->p, &e) == -1) {
		api_envd_files_up_fail(up, connect_http_status(e.code), "%s",
		    e.message);
		return -1;
	}
	cJSON_ArrayForEach(it, up->done)
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(it,
		    "path")), up->p.abs) == 0) {
			api_envd_files_up_fail(up, 400, "you cannot upload "
			    "multiple files to the same path '%s' in one "
			    "upload request", up->p.abs);
			return -1;
		}
	if (api_envd_req_mkparents(root, up->p.rel, &up->u) == -1) {
		api_envd_files_up_errno(up, errno, "make the parents of");
		return -1;
	}
	if (upload_begin(&up->put, root, up->p.rel, 0, UPLOAD_MODE_KEEP) ==
	    -1 || (root_user && fchown(up->put.fd, up->u.uid, up->u.gid) ==
	    -1)) {
		api_envd_files_up_errno(up, errno, "write");
		return -1;
	}
	if (api_envd_files_up_meta_put(up) == -1)
		return -1;
	up->begun = true;
	return 0;
}

/* fsync, rename over the name; its entry for the reply. */
static int
api_envd_files_up_commit(struct api_envd_files_up *up)
{
	const char	*name = strrchr(up->p.abs, '/');
	bool		 created;
	cJSON		*o;

	up->begun = false;
	if (upload_commit(&up->put, &created) == -1) {
		api_envd_files_up_errno(up, errno, "write");
		return -1;
	}
	if ((o = cJSON_CreateObject()) == NULL ||
	    jsonstr_add(o, "path", up->p.abs) == NULL ||
	    jsonstr_add(o, "name", name != NULL ? name + 1 : up->p.abs) ==
	    NULL ||
	    cJSON_AddStringToObject(o, "type", "file") == NULL ||
	    (up->meta != NULL && !cJSON_AddItemToObject(o, "metadata",
	    cJSON_Duplicate(up->meta, true)))) {
		cJSON_Delete(o);
		api_envd_files_up_fail(up, 503, "out of memory");
		return -1;
	}
	cJSON_AddItemToArray(up->done, o);
	return 0;
}

static int
api_envd_files_part_begin(void *arg, const struct multipart_part *part)
{
	struct api_envd_files_up	*up = arg;

	up->zparts++;
	/* envd writes "file" parts only; the others are read and dropped. */
	up->skip = strcmp(part->name, "file") != 0 || up->status != 0;
	if (up->skip)
		return 0;
	if (up->qpath[0] == '\0' && !part->has_filename) {
		api_envd_files_up_fail(up, 400, "a file part without a "
		    "filename, and no path query parameter");
		return 0;
	}
	(void)api_envd_files_up_begin(up, up->qpath[0] != '\0' ? up->qpath :
	    part->filename);
	return 0;
}

static int
api_envd_files_part_data(void *arg, const char *d, size_t n)
{
	struct api_envd_files_up	*up = arg;

	if (up->skip || !up->begun)
		return 0;
	if (upload_write(&up->put, d, n) == -1)
		api_envd_files_up_errno(up, errno, "write");
	return 0;
}

static int
api_envd_files_part_end(void *arg)
{
	struct api_envd_files_up	*up = arg;

	if (!up->skip && up->begun)
		(void)api_envd_files_up_commit(up);
	return 0;
}

/* Bytes of the body, decoded: to the file, or through the form parser. */
static void
api_envd_files_up_take(struct api_envd_files_up *up, const char *d, size_t n)
{
	if (up->status != 0)
		return;
	if (up->mp == NULL) {
		if (upload_write(&up->put, d, n) == -1)
			api_envd_files_up_errno(up, errno, "write");
		return;
	}
	if (multipart_feed(up->mp, d, n) == -1)
		api_envd_files_up_fail(up, 400, "error reading form: %s",
		    errno == EMSGSIZE ? "a part's headers are too long" :
		    errno == E2BIG ? "too many parts" : "malformed "
		    "multipart/form-data body");
}

/* This loop turn's share is not used up yet (a new turn: a new share). */
static bool
api_envd_files_share_left(struct api_envd_files_up *up)
{
	unsigned	turn = ev_iteration(up->loop);

	if (up->zturn != turn) {
		up->zturn = turn;
		up->zmade = 0;
		up->zparts = 0;
	}
	return up->zmade < FILES_PUMP_BYTES &&
	    up->zparts < MULTIPART_PARTS_TURN;
}

/*
 * Of d, to the form parser, a slice at a time until this turn's parts
 * are begun (the slice bounds how many more a last one can begin): the
 * bytes used.
 */
static size_t
api_envd_files_mp_feed(struct api_envd_files_up *up, const char *d, size_t n)
{
	size_t	used = 0, k;

	while (used < n && up->status == 0 && api_envd_files_share_left(up)) {
		k = n - used < MULTIPART_SLICE ? n - used : MULTIPART_SLICE;
		api_envd_files_up_take(up, d + used, k);
		used += k;
	}
	return up->status != 0 ? n : used;
}

/*
 * Inflate from d at most what is left of this loop turn's
 * FILES_PUMP_BYTES (a few KiB of a gzip bomb inflate to GiBs), and, for
 * a form, in slices while parts are left in the turn's share; the bytes
 * of d used.  A member's end begins the next: what follows must be
 * another member, as Go's reader has it, so trailing bytes fail.
 */
static size_t
api_envd_files_gz_inflate(struct api_envd_files_up *up, const char *d, size_t n)
{
	static char	 out[FILES_IO_CHUNK];
	z_stream	*z = &up->z;
	size_t		 room, got;
	int		 rc;

	z->next_in = (const Bytef *)d;
	z->avail_in = n;
	while (z->avail_in > 0 && up->status == 0 &&
	    api_envd_files_share_left(up)) {
		room = FILES_PUMP_BYTES - up->zmade;
		if (room > sizeof(out))
			room = sizeof(out);
		if (up->mp != NULL && room > MULTIPART_SLICE)
			room = MULTIPART_SLICE;
		z->next_out = (Bytef *)out;
		z->avail_out = room;
		up->zopen = true;
		rc = inflate(z, Z_NO_FLUSH);
		got = room - z->avail_out;
		up->zmade += got;
		if (got > 0)
			api_envd_files_up_take(up, out, got);
		if (rc == Z_STREAM_END) {
			up->zopen = false;
			up->zseen = true;
			(void)inflateReset(z);
		} else if (rc == Z_MEM_ERROR)
			api_envd_files_up_fail(up, 503, "out of memory");
		else if (rc != Z_OK)	/* Z_BUF_ERROR too: no progress */
			api_envd_files_up_fail(up, 400, "error decompressing "
			    "request body: gzip: %s", z->msg != NULL ?
			    z->msg : "invalid data");
	}
	return n - z->avail_in;
}

/* This turn's share of d: the bytes used. */
static size_t
api_envd_files_share(struct api_envd_files_up *up, const char *d, size_t n)
{
	if (up->gz)
		return api_envd_files_gz_inflate(up, d, n);
	if (up->mp != NULL)
		return api_envd_files_mp_feed(up, d, n);
	api_envd_files_up_take(up, d, n);
	return n;
}

/*
 * A piece of the body.  What this turn's share leaves of it is kept
 * and reading paused; the rest of the read already taken still comes
 * in pieces (appended: zin holds at most one read), then nothing until
 * api_envd_files_resume has taken all of zin, a share a turn.
 */
static void
api_envd_files_piece(struct api_envd_files_up *up, const char *d, size_t n)
{
	size_t	used = 0;

	if (buf_avail(&up->zin) == 0)
		used = api_envd_files_share(up, d, n);
	if (used == n || up->status != 0)
		return;
	if (buf_add(&up->zin, d + used, n - used) == -1) {
		api_envd_files_up_fail(up, 503, "out of memory");
		return;
	}
	http_conn_pause_read(up->c);
	turn_start(up->loop, &up->zresume);
}

static void
api_envd_files_resume(struct ev_loop *loop, ev_check *w, int revents)
{
	struct api_envd_files_up	*up = container_of(w,
				    struct api_envd_files_up, zresume.check);

	(void)revents;
	if (!http_conn_dead(up->c)) {
		buf_consume(&up->zin, api_envd_files_share(up,
		    buf_head(&up->zin), buf_avail(&up->zin)));
		if (up->status == 0 && buf_avail(&up->zin) > 0)
			return;
	}
	turn_stop(loop, &up->zresume);
	buf_free(&up->zin);
	if (http_conn_dead(up->c))
		return;			/* api_envd_files_up_closed frees up */
	if (up->body_done)
		api_envd_files_up_finish(up);
	else
		http_conn_resume_read(up->c);
}

/*
 * Each piece as it arrives: decoded (gzip), to the file (octet-stream),
 * or through the parser to the part's file.  A failure is kept for the
 * reply and the rest of the body read and dropped.
 */
void
api_envd_files_post_body(struct http_conn *c, struct http_req *r, const char *d,
    size_t n)
{
	struct api_envd_files_up	*up = http_conn_owner(c);

	if (up == NULL && (up = api_envd_files_up_new(c, r)) == NULL) {
		r->body_error = ENOMEM;
		return;
	}
	if (up->status != 0 || n == 0)
		return;
	api_envd_files_piece(up, d, n);
}

void
api_envd_files_post(struct http_conn *c, struct http_req *r)
{
	struct api_envd_files_up	*up = http_conn_owner(c);

	if (up == NULL && (up = api_envd_files_up_new(c, r)) == NULL) {
		api_envd_files_err(c, 503, "out of memory");
		return;
	}
	if (up->status == 0 && r->body_error != 0)
		api_envd_files_up_errno(up, r->body_error, "write");
	/* The body is in, not all of it taken: ..._resume ends it. */
	if (up->status == 0 && buf_avail(&up->zin) > 0) {
		up->body_done = true;
		return;
	}
	api_envd_files_up_finish(up);
}

/*
 * The body is in and decoded: a gzip body must end at a member's end;
 * the file committed, the reply.  Reading resumes for the next request.
 */
static void
api_envd_files_up_finish(struct api_envd_files_up *up)
{
	struct http_conn	*c = up->c;
	cJSON			*done;

	http_conn_own(c, NULL, NULL, NULL);
	http_conn_resume_read(c);
	if (up->status == 0 && up->gz && (up->zopen || !up->zseen))
		api_envd_files_up_fail(up, 400, "error decompressing request "
		    "body: gzip: %s", up->zopen ? "unexpected EOF (the body "
		    "ended inside a member)" : "EOF (an empty body)");
	if (up->status == 0 && up->mp == NULL)
		(void)api_envd_files_up_commit(up);
	else if (up->status == 0 && multipart_finish(up->mp) == -1)
		api_envd_files_up_fail(up, 400, "error reading form: the body "
		    "ended before its closing boundary");
	if (up->status != 0) {
		api_envd_files_err(c, up->status, "%s", up->msg);
		api_envd_files_up_free(up);
		return;
	}
	done = up->done;
	up->done = NULL;
	api_envd_files_up_free(up);
	http_reply_json(c, 200, done);
}
