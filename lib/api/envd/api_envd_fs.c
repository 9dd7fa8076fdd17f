/*
 * api_envd_fs.c: envd's filesystem service and /files.  See
 * api_envd_fs.h; the wire facts are proto/README.md's (the envd
 * namespace, "Files and watching").
 *
 * Every path goes the same way: the message's string, resolved as envd
 * resolves it for the request's user (envd_path: "~", relative to the
 * home), normalised, then made relative to the files root (outside it:
 * permission_denied) and opened from there by lib/files.c, in the
 * kernel, so that no link leads out.  Errors are errno values until the
 * reply, where efs_code names them as Connect codes (efs_status as the
 * HTTP statuses of /files).
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#define ZLIB_CONST		/* next_in takes the body's const bytes */
#include <zlib.h>

#include "api/api.h"
#include "api/api_files.h"
#include "api_envd_fs.h"
#include "base/codec.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/turn.h"
#include "base/util.h"
#include "connect.h"
#include "core/files.h"
#include "core/watch.h"
#include "envd.h"
#include "net/multipart.h"
#include "sys/user.h"

/* Owner and group names met in one reply: a listing asks again and again. */
struct efs_names {
	struct {
		unsigned	 id;
		bool		 used;
		char		 name[USER_NAME_MAX];
	}		 u[EFS_NAMES_CACHED], g[EFS_NAMES_CACHED];
	int		 nu, ng;
};

/* A path of a request: as the client wrote it resolved, and to the root. */
struct efs_path {
	char	abs[PATH_MAX];
	char	rel[PATH_MAX];
};

/* A WatchDir stream, owned by its connection. */
struct efs_stream {
	struct watch_sub	 sub;
	struct envd_timers	 tm;		/* keepalive, Connect-Timeout-Ms */
	struct turn		 resume;	/* budget spent: go on next turn */
	struct ev_loop		*loop;
	struct http_conn	*c;
	struct watch		*w;
	uint64_t		 cursor;
	bool			 entry;		/* includeEntry */
	struct efs_path		 p;
	struct efs_names	 names;		/* for its lifetime */
};

/* A polling watcher (CreateWatcher): a cursor kept between polls. */
struct efs_poller {
	ev_timer		 idle;		/* dropped when not polled */
	struct ev_loop		*loop;
	struct watch		*w;
	uint64_t		 cursor;
	bool			 used;
	bool			 entry;
	struct efs_names	*names;		/* for its lifetime */
	char			 id[24];	/* "w" + 16 hex */
	struct efs_path		 p;
};

/*
 * A POST /files upload, owned by its connection.  A gzip body is
 * inflated FILES_PUMP_BYTES a loop turn: what a turn leaves of a piece
 * waits in zin (at most one read of the socket, reading being paused
 * meanwhile) and the rest is inflated from the check watcher.
 */
struct efs_up {
	struct http_conn	*c;
	struct ev_loop		*loop;
	bool			 gz;		/* Content-Encoding: gzip */
	bool			 zopen;		/* inside a gzip member */
	bool			 zseen;		/* a member ended */
	bool			 body_done;	/* efs_upload waits for zin */
	z_stream		 z;
	struct buf		 zin;		/* body not inflated yet */
	unsigned		 zturn;		/* ev_iteration of zmade */
	size_t			 zmade;		/* inflated in that turn */
	struct turn		 zresume;	/* inflate zin's next share */
	struct envd_user	 u;
	struct multipart	*mp;		/* NULL: application/octet-stream */
	bool			 begun;		/* a file is being written */
	bool			 skip;		/* a part that is not "file" */
	int			 status;	/* of the first failure; 0: none */
	char			 msg[API_ERR_MSG_MAX];
	char			 qpath[PATH_MAX];	/* ?path=, or "" */
	struct efs_path		 p;
	struct files_put	 put;
	cJSON			*done;		/* the reply's entries */
};

static struct efs_poller	efs_pollers[WATCH_POLL_MAX];

static const char *efs_code(int);
static int	efs_status(int);
static void	efs_fail(struct envd_err *, int, const char *, const char *);
static int	efs_child(const struct efs_path *, const char *,
		    struct efs_path *);
static int	efs_mkdirs(const struct files_root *, const char *,
		    const struct envd_user *);
static int	efs_mkparents(const struct files_root *, const char *,
		    const struct envd_user *);
static int	efs_resolve(struct http_conn *, const struct envd_user *,
		    const char *, struct efs_path *, struct envd_err *);
static int	efs_field(struct http_conn *, const struct envd_user *,
		    const cJSON *, const char *, struct efs_path *,
		    struct envd_err *);
static bool	efs_bool(const cJSON *, const char *);
static cJSON	*efs_unary(struct http_conn *, struct http_req *,
		    struct envd_user *, struct envd_err *);
static const char *efs_owner(struct efs_names *, uid_t);
static const char *efs_group(struct efs_names *, gid_t);
static const char *efs_type(mode_t);
static cJSON	*efs_entry(const struct files_root *, const struct efs_path *,
		    struct efs_names *);
static void	efs_reply_entry(struct http_conn *, const char *,
		    const struct efs_path *);
static const char *efs_event_type(enum watch_type);
static cJSON	*efs_event(const struct watch_event *, struct efs_names *,
		    const struct efs_path *, const struct files_root *);
static int	efs_watch_open(struct http_conn *, struct http_req *,
		    const cJSON *, const struct envd_user *, struct efs_path *,
		    struct watch **, struct envd_err *);
static void	efs_stream_free(void *);
static void	efs_stream_pump(struct efs_stream *);
static void	efs_stream_notify(struct watch_sub *);
static void	efs_stream_drained(struct http_conn *, void *);
static void	efs_stream_closed(struct http_conn *, void *);
static void	efs_stream_resume(struct ev_loop *, ev_check *, int);
static struct efs_poller *efs_poller_find(const cJSON *);
static void	efs_poller_free(struct efs_poller *);
static void	efs_poller_idle(struct ev_loop *, ev_timer *, int);
static void	efs_rest_err(struct http_conn *, int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static int	efs_rest_user(struct http_conn *, struct http_req *,
		    struct envd_user *, struct envd_err *);
static void	efs_up_fail(struct efs_up *, int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static void	efs_up_errno(struct efs_up *, int, const char *);
static struct efs_up *efs_up_new(struct http_conn *, struct http_req *);
static void	efs_up_free(struct efs_up *);
static void	efs_up_closed(struct http_conn *, void *);
static int	efs_up_encoding(struct efs_up *, const char *);
static void	efs_up_take(struct efs_up *, const char *, size_t);
static size_t	efs_gz_inflate(struct efs_up *, const char *, size_t);
static void	efs_gz_piece(struct efs_up *, const char *, size_t);
static void	efs_gz_resume(struct ev_loop *, ev_check *, int);
static void	efs_up_finish(struct efs_up *);
static int	efs_up_begin(struct efs_up *, const char *);
static int	efs_up_commit(struct efs_up *);
static int	efs_part_begin(void *, const struct multipart_part *);
static int	efs_part_data(void *, const char *, size_t);
static int	efs_part_end(void *);

static const struct multipart_cb efs_parts = {
	efs_part_begin, efs_part_data, efs_part_end
};

/* ------------------------------------------------------------------ */
/* Errors, paths, users */

/* What an errno means in Connect's codes, as envd's answers go. */
static const char *
efs_code(int err)
{
	switch (err) {
	case ENOENT:
		return "not_found";
	case EEXIST:
		return "already_exists";
	case ELOOP:
	case EACCES:
	case EPERM:
	case EROFS:
		return "permission_denied";
	case EISDIR:
	case ENOTDIR:
	case EINVAL:
	case ENAMETOOLONG:
		return "invalid_argument";
	case ENOTEMPTY:
	case EBUSY:
	case EXDEV:
		return "failed_precondition";
	case ENOSPC:
	case EDQUOT:
	case EMFILE:
	case ENFILE:
	case ENOMEM:
	case EAGAIN:
		return "resource_exhausted";
	}
	return "internal";
}

/* The same for /files, as HTTP statuses (507: the disk is full). */
static int
efs_status(int err)
{
	if (err == ENOSPC || err == EDQUOT)
		return 507;
	return files_errmap(err).status;
}

static void
efs_fail(struct envd_err *e, int err, const char *what, const char *abs)
{
	if (err == ELOOP)
		envd_err_set(e, "permission_denied", "%s '%s': outside the "
		    "files root", what, abs);
	else
		envd_err_set(e, efs_code(err), "%s '%s': %s", what, abs,
		    strerror(err));
}

/* s as envd resolves it for u, then relative to the files root. */
static int
efs_resolve(struct http_conn *c, const struct envd_user *u, const char *s,
    struct efs_path *p, struct envd_err *e)
{
	const struct files_root	*root = &api_of(c)->files->root;

	if (envd_path(api_of(c)->envd, u, s, true, p->abs, sizeof(p->abs),
	    e) == -1)
		return -1;
	if (files_normalize(p->abs) == -1 ||
	    files_rel(root, p->abs, p->rel, sizeof(p->rel)) == -1) {
		efs_fail(e, errno == EINVAL || errno == ENAMETOOLONG ? errno :
		    ELOOP, "path", p->abs);
		return -1;
	}
	return 0;
}

/* name in dir ("": dir itself); -1: ENAMETOOLONG. */
static int
efs_child(const struct efs_path *dir, const char *name, struct efs_path *out)
{
	bool	top = strcmp(dir->rel, ".") == 0;

	if (fsutil_join(out->abs, sizeof(out->abs), dir->abs, name) == -1 ||
	    snprintf(out->rel, sizeof(out->rel), "%s%s%s", top && *name ? "" :
	    dir->rel, top || *name == '\0' ? "" : "/", name) >=
	    (int)sizeof(out->rel)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * rel and its missing parents, made for the user: owned by it when the
 * agent is root (else by the agent), mode 0755.
 */
static int
efs_mkdirs(const struct files_root *root, const char *rel,
    const struct envd_user *u)
{
	return files_mkdirs_owned(root, rel, 0755, geteuid() == 0 ? u->uid :
	    (uid_t)-1, u->gid);
}

/* The parents of rel made, owned by u as envd makes them. */
static int
efs_mkparents(const struct files_root *root, const char *rel,
    const struct envd_user *u)
{
	char	parent[PATH_MAX], *slash;

	snprintf(parent, sizeof(parent), "%s", rel);
	if ((slash = strrchr(parent, '/')) == NULL)
		return 0;
	*slash = '\0';
	return efs_mkdirs(root, parent, u);
}

/* The message's string field (absent: "", proto3's default), resolved. */
static int
efs_field(struct http_conn *c, const struct envd_user *u, const cJSON *j,
    const char *name, struct efs_path *p, struct envd_err *e)
{
	const cJSON	*f = connect_field(j, name);

	if (f != NULL && !cJSON_IsString(f)) {
		envd_err_set(e, "invalid_argument", "%s: must be a string",
		    name);
		return -1;
	}
	return efs_resolve(c, u, f != NULL ? f->valuestring : "", p, e);
}

/* A bool field: true, or "true" as some encoders write it. */
static bool
efs_bool(const cJSON *j, const char *name)
{
	const cJSON	*f = connect_field(j, name);

	return cJSON_IsTrue(f) || (cJSON_IsString(f) &&
	    strcmp(f->valuestring, "true") == 0);
}

static cJSON *
efs_unary(struct http_conn *c, struct http_req *r, struct envd_user *u,
    struct envd_err *e)
{
	if (envd_request_user(api_of(c)->envd, r, u, e) == -1)
		return NULL;
	return envd_unary_body(r, e);
}

/* ------------------------------------------------------------------ */
/* EntryInfo */

void
api_envd_fs_perm(mode_t m, char out[24])
{
	static const char	rwx[] = "rwxrwxrwx";
	char			*o = out;
	int			 i;

	/* Go's type letters, in its order: d L D p S u g c t. */
	if (S_ISDIR(m))
		*o++ = 'd';
	if (S_ISLNK(m))
		*o++ = 'L';
	if (S_ISBLK(m) || S_ISCHR(m))
		*o++ = 'D';
	if (S_ISFIFO(m))
		*o++ = 'p';
	if (S_ISSOCK(m))
		*o++ = 'S';
	if (m & S_ISUID)
		*o++ = 'u';
	if (m & S_ISGID)
		*o++ = 'g';
	if (S_ISCHR(m))
		*o++ = 'c';
	if (m & S_ISVTX)
		*o++ = 't';
	if (o == out)
		*o++ = '-';
	for (i = 0; i < 9; i++)
		*o++ = (m & (1 << (8 - i))) ? rwx[i] : '-';
	*o = '\0';
}

static const char *
efs_owner(struct efs_names *nm, uid_t uid)
{
	struct user_id	id;
	int		i;

	for (i = 0; i < nm->nu; i++)
		if (nm->u[i].id == uid)
			return nm->u[i].name;
	i = nm->nu < EFS_NAMES_CACHED ? nm->nu++ : (int)(uid % EFS_NAMES_CACHED);
	nm->u[i].id = uid;
	if (user_by_uid(NULL, uid, &id) == 0 && id.name[0] != '\0')
		snprintf(nm->u[i].name, sizeof(nm->u[i].name), "%s", id.name);
	else
		snprintf(nm->u[i].name, sizeof(nm->u[i].name), "%u",
		    (unsigned)uid);
	return nm->u[i].name;
}

static const char *
efs_group(struct efs_names *nm, gid_t gid)
{
	int	i;

	for (i = 0; i < nm->ng; i++)
		if (nm->g[i].id == gid)
			return nm->g[i].name;
	i = nm->ng < EFS_NAMES_CACHED ? nm->ng++ : (int)(gid % EFS_NAMES_CACHED);
	nm->g[i].id = gid;
	if (user_group_name(NULL, gid, nm->g[i].name, sizeof(nm->g[i].name)) == -1)
		snprintf(nm->g[i].name, sizeof(nm->g[i].name), "%u",
		    (unsigned)gid);
	return nm->g[i].name;
}

static const char *
efs_type(mode_t m)
{
	if (S_ISREG(m))
		return "FILE_TYPE_FILE";
	if (S_ISDIR(m))
		return "FILE_TYPE_DIRECTORY";
	if (S_ISLNK(m))
		return "FILE_TYPE_SYMLINK";
	return "FILE_TYPE_UNSPECIFIED";
}

/*
 * The entry of p, as envd fills it: the name itself (lstat), but for a
 * link the type and permission bits of what it leads to (followed
 * inside the root; a dangling one, or one leading out, is unspecified)
 * and symlinkTarget, the target's path resolved (the link's own text
 * when it cannot be).  NULL with errno.
 */
static cJSON *
efs_entry(const struct files_root *root, const struct efs_path *p,
    struct efs_names *nm)
{
	struct stat	 st, tst;
	char		 perm[24], ts[TIME_MAX], size[24], fdname[64];
	char		 target[PATH_MAX];
	const char	*name, *type;
	mode_t		 mode;
	ssize_t		 n = -1;
	int		 fd;
	cJSON		*j;

	if (files_stat(root, p->rel, false, &st) == -1)
		return NULL;
	type = efs_type(st.st_mode);
	mode = st.st_mode & 0777;
	if (S_ISLNK(st.st_mode)) {
		type = "FILE_TYPE_UNSPECIFIED";
		mode = 0;
		if ((fd = files_open(root, p->rel, O_PATH, 0)) != -1) {
			snprintf(fdname, sizeof(fdname), "/proc/self/fd/%d", fd);
			if (fstat(fd, &tst) == 0) {
				type = efs_type(tst.st_mode);
				mode = tst.st_mode & 0777;
			}
			n = readlink(fdname, target, sizeof(target) - 1);
			close(fd);
		}
		if (n < 0 && (fd = files_open(root, p->rel, O_PATH |
		    O_NOFOLLOW, 0)) != -1) {
			n = readlinkat(fd, "", target, sizeof(target) - 1);
			close(fd);
		}
		target[n >= 0 ? n : 0] = '\0';
	}
	name = strrchr(p->abs, '/');
	name = name != NULL && name[1] != '\0' ? name + 1 : p->abs;
	api_envd_fs_perm(st.st_mode, perm);
	codec_time(ts, (int64_t)st.st_mtim.tv_sec * 1000 +
	    st.st_mtim.tv_nsec / 1000000);
	snprintf(size, sizeof(size), "%lld", (long long)st.st_size);
	if ((j = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(j, "name", name) == NULL ||
	    cJSON_AddStringToObject(j, "type", type) == NULL ||
	    cJSON_AddStringToObject(j, "path", p->abs) == NULL ||
	    cJSON_AddStringToObject(j, "size", size) == NULL ||
	    cJSON_AddNumberToObject(j, "mode", mode) == NULL ||
	    cJSON_AddStringToObject(j, "permissions", perm) == NULL ||
	    cJSON_AddStringToObject(j, "owner", efs_owner(nm, st.st_uid)) ==
	    NULL ||
	    cJSON_AddStringToObject(j, "group", efs_group(nm, st.st_gid)) ==
	    NULL ||
	    cJSON_AddStringToObject(j, "modifiedTime", ts) == NULL ||
	    (S_ISLNK(st.st_mode) &&
	    cJSON_AddStringToObject(j, "symlinkTarget", target) == NULL)) {
		cJSON_Delete(j);
		errno = ENOMEM;
		return NULL;
	}
	return j;
}

/* {"entry": EntryInfo of p}, or the error of its stat. */
static void
efs_reply_entry(struct http_conn *c, const char *what,
    const struct efs_path *p)
{
	struct efs_names	*nm;
	struct envd_err		 e;
	cJSON			*j = NULL, *ent = NULL;
	int			 err = ENOMEM;

	if ((nm = calloc(1, sizeof(*nm))) != NULL &&
	    (ent = efs_entry(&api_of(c)->files->root, p, nm)) == NULL)
		err = errno;
	free(nm);
	if (ent == NULL || (j = cJSON_CreateObject()) == NULL) {
		cJSON_Delete(ent);
		efs_fail(&e, err, what, p->abs);
		envd_reply_err(c, &e);
		return;
	}
	cJSON_AddItemToObject(j, "entry", ent);
	envd_reply(c, j);
}

/* ------------------------------------------------------------------ */
/* The unary RPCs */

static void
efs_stat(struct http_conn *c, struct http_req *r)
{
	struct envd_user	 u;
	struct envd_err		 e;
	struct efs_path		 p;
	cJSON			*j;

	if ((j = efs_unary(c, r, &u, &e)) == NULL ||
	    efs_field(c, &u, j, "path", &p, &e) == -1) {
		cJSON_Delete(j);
		envd_reply_err(c, &e);
		return;
	}
	cJSON_Delete(j);
	efs_reply_entry(c, "stat", &p);
}

/* mkdir -p, the directories made the user's; an existing one is refused. */
static void
efs_makedir(struct http_conn *c, struct http_req *r)
{
	const struct files_root	*root = &api_of(c)->files->root;
	struct envd_user	 u;
	struct envd_err		 e;
	struct efs_path		 p;
	struct stat		 st;
	cJSON			*j;

	if ((j = efs_unary(c, r, &u, &e)) == NULL ||
	    efs_field(c, &u, j, "path", &p, &e) == -1)
		goto fail;
	if (files_stat(root, p.rel, true, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			envd_err_set(&e, "already_exists", "directory already "
			    "exists: %s", p.abs);
		else
			envd_err_set(&e, "invalid_argument", "path already "
			    "exists but it is not a directory: %s", p.abs);
		goto fail;
	}
	if (efs_mkdirs(root, p.rel, &u) == -1) {
		efs_fail(&e, errno, "make directory", p.abs);
		goto fail;
	}
	cJSON_Delete(j);
	efs_reply_entry(c, "stat", &p);
	return;
fail:
	cJSON_Delete(j);
	envd_reply_err(c, &e);
}

/* rename(2), replacing, the destination's parents made for the user. */
static void
efs_move(struct http_conn *c, struct http_req *r)
{
	const struct files_root	*root = &api_of(c)->files->root;
	struct envd_user	 u;
	struct envd_err		 e;
	struct efs_path		 from, to;
	cJSON			*j;

	if ((j = efs_unary(c, r, &u, &e)) == NULL ||
	    efs_field(c, &u, j, "source", &from, &e) == -1 ||
	    efs_field(c, &u, j, "destination", &to, &e) == -1)
		goto fail;
	if (efs_mkparents(root, to.rel, &u) == -1) {
		efs_fail(&e, errno, "move to", to.abs);
		goto fail;
	}
	if (files_move(root, from.rel, to.rel, true) == -1) {
		efs_fail(&e, errno, "move", errno == ENOENT ? from.abs : to.abs);
		goto fail;
	}
	cJSON_Delete(j);
	efs_reply_entry(c, "stat", &to);
	return;
fail:
	cJSON_Delete(j);
	envd_reply_err(c, &e);
}

/*
 * The entries under a directory (through a link), depth levels deep
 * (0: 1; at most FILES_LIST_DEPTH_MAX), as files_list walks them: each
 * a full EntryInfo.  More than FILES_LIST_MAX is resource_exhausted,
 * never a silently shorter list.
 */
static void
efs_listdir(struct http_conn *c, struct http_req *r)
{
	const struct files_root	*root = &api_of(c)->files->root;
	struct efs_names	*nm = NULL;
	struct envd_user	 u;
	struct envd_err		 e;
	struct efs_path		 p, sub;
	struct stat		 st;
	const cJSON		*d, *it;
	cJSON			*j, *list = NULL, *out = NULL, *ents, *ent;
	const char		*name;
	double			 depth = 1;
	bool			 truncated = false;

	if ((j = efs_unary(c, r, &u, &e)) == NULL ||
	    efs_field(c, &u, j, "path", &p, &e) == -1)
		goto fail;
	if ((d = connect_field(j, "depth")) != NULL) {
		if (cJSON_IsString(d))
			depth = strtod(d->valuestring, NULL);
		else if (cJSON_IsNumber(d))
			depth = d->valuedouble;
		else {
			envd_err_set(&e, "invalid_argument", "depth: must be "
			    "a number");
			goto fail;
		}
	}
	/* Written so that NaN ("nan") is 1 too: its casts are undefined. */
	depth = !(depth >= 1) ? 1 : depth > FILES_LIST_DEPTH_MAX ?
	    FILES_LIST_DEPTH_MAX : depth;
	if (files_stat(root, p.rel, true, &st) == -1) {
		efs_fail(&e, errno, "list", p.abs);
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		envd_err_set(&e, "invalid_argument", "path is not a "
		    "directory: %s", p.abs);
		goto fail;
	}
	if ((list = cJSON_CreateArray()) == NULL ||
	    (nm = calloc(1, sizeof(*nm))) == NULL ||
	    (out = cJSON_CreateObject()) == NULL ||
	    (ents = cJSON_AddArrayToObject(out, "entries")) == NULL) {
		efs_fail(&e, ENOMEM, "list", p.abs);
		goto fail;
	}
	if (files_list(root, p.rel, (int)depth, list, &truncated) == -1) {
		efs_fail(&e, errno, "list", p.abs);
		goto fail;
	}
	if (truncated) {
		envd_err_set(&e, "resource_exhausted", "list '%s': more than "
		    "%d entries; list less deep", p.abs, FILES_LIST_MAX);
		goto fail;
	}
	cJSON_ArrayForEach(it, list) {
		name = cJSON_GetStringValue(cJSON_GetObjectItem(it, "name"));
		if (name == NULL || efs_child(&p, name, &sub) == -1)
			continue;
		if ((ent = efs_entry(root, &sub, nm)) == NULL) {
			if (errno == ENOENT)
				continue;	/* gone since the walk */
			efs_fail(&e, errno, "list", sub.abs);
			goto fail;
		}
		cJSON_AddItemToArray(ents, ent);
	}
	cJSON_Delete(j);
	cJSON_Delete(list);
	free(nm);
	envd_reply(c, out);
	return;
fail:
	cJSON_Delete(j);
	cJSON_Delete(list);
	cJSON_Delete(out);
	free(nm);
	envd_reply_err(c, &e);
}

/* rm -rf; a path that is not there is removed already (os.RemoveAll). */
static void
efs_remove(struct http_conn *c, struct http_req *r)
{
	struct envd_user	 u;
	struct envd_err		 e;
	struct efs_path		 p;
	cJSON			*j;

	if ((j = efs_unary(c, r, &u, &e)) == NULL ||
	    efs_field(c, &u, j, "path", &p, &e) == -1) {
		cJSON_Delete(j);
		envd_reply_err(c, &e);
		return;
	}
	cJSON_Delete(j);
	if (files_delete(&api_of(c)->files->root, p.rel, true) == -1 &&
	    errno != ENOENT) {
		efs_fail(&e, errno, "remove", p.abs);
		envd_reply_err(c, &e);
		return;
	}
	envd_reply(c, cJSON_CreateObject());
}

/* ------------------------------------------------------------------ */
/* Watching */

static const char *
efs_event_type(enum watch_type t)
{
	switch (t) {
	case WATCH_CREATE:
		return "EVENT_TYPE_CREATE";
	case WATCH_WRITE:
		return "EVENT_TYPE_WRITE";
	case WATCH_REMOVE:
		return "EVENT_TYPE_REMOVE";
	case WATCH_RENAME:
		return "EVENT_TYPE_RENAME";
	case WATCH_CHMOD:
		return "EVENT_TYPE_CHMOD";
	case WATCH_TRUNCATED:
		break;
	}
	return NULL;
}

/*
 * A FilesystemEvent: name relative to the watched directory ("." for
 * itself, as envd's filepath.Rel says), and with entry the EntryInfo of
 * what is there now (none for a remove or rename, nor when it is gone).
 */
static cJSON *
efs_event(const struct watch_event *ev, struct efs_names *nm,
    const struct efs_path *dir, const struct files_root *root)
{
	struct efs_path		 p;
	cJSON			*j, *ent;

	if ((j = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(j, "name", ev->path[0] ? ev->path : ".") ==
	    NULL ||
	    cJSON_AddStringToObject(j, "type", efs_event_type(ev->type)) ==
	    NULL) {
		cJSON_Delete(j);
		return NULL;
	}
	if (nm == NULL || ev->type == WATCH_REMOVE || ev->type == WATCH_RENAME)
		return j;
	if (efs_child(dir, ev->path, &p) == -1)
		return j;
	if ((ent = efs_entry(root, &p, nm)) != NULL)
		cJSON_AddItemToObject(j, "entry", ent);
	return j;
}

/* j's path as a directory to watch: its watch (a reference). */
static int
efs_watch_open(struct http_conn *c, struct http_req *r, const cJSON *j,
    const struct envd_user *u, struct efs_path *p, struct watch **w,
    struct envd_err *e)
{
	struct stat	st;

	(void)r;
	if (efs_field(c, u, j, "path", p, e) == -1)
		return -1;
	if (files_stat(&api_of(c)->files->root, p->rel, true, &st) == -1) {
		efs_fail(e, errno, "watch", p->abs);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		envd_err_set(e, "invalid_argument", "path %s not a directory",
		    p->abs);
		return -1;
	}
	if ((*w = watch_open(api_of(c)->watches, p->rel,
	    efs_bool(j, "recursive"))) == NULL) {
		if (errno == ENOSPC || errno == EMFILE || errno == ENFILE)
			envd_err_set(e, "resource_exhausted", "watch '%s': the "
			    "watch limit is reached", p->abs);
		else
			efs_fail(e, errno, "watch", p->abs);
		return -1;
	}
	return 0;
}

static void
efs_stream_free(void *owner)
{
	struct efs_stream	*s = owner;

	envd_timers_stop(&s->tm);
	turn_stop(s->loop, &s->resume);
	watch_unsubscribe(s->w, &s->sub);
	watch_close(s->w);
	free(s);
}

/*
 * The watch's events as frames while the connection takes them.  Lost
 * events (a truncated, or a stream behind the ring) end the stream with
 * data_loss: envd's events have no way to say "some are missing", and a
 * watcher that silently missed some would be wrong.  The directory gone:
 * its remove ("."), then the end.  WATCH_PUMP_EVENTS at a time, the
 * rest at the next loop turns (turn.h).
 */
static void
efs_stream_pump(struct efs_stream *s)
{
	const struct watch_event	*ev;
	struct envd_err			 e;
	char				*txt;
	bool				 gap;
	cJSON				*j, *fe;
	int				 n;

	turn_stop(s->loop, &s->resume);
	for (n = 0; !http_conn_dead(s->c) &&
	    http_conn_pending(s->c) < HTTP_OUT_HIGH; n++) {
		if (n == WATCH_PUMP_EVENTS) {
			turn_start(s->loop, &s->resume);
			return;
		}
		ev = watch_next(s->w, &s->cursor, &gap);
		if (gap || (ev != NULL && ev->type == WATCH_TRUNCATED)) {
			envd_err_set(&e, "data_loss", "watch '%s': events were "
			    "lost (the kernel's queue overflowed, or a watch "
			    "limit); watch again", s->p.abs);
			envd_stream_finish(&s->tm, &e);
			return;
		}
		if (ev == NULL)
			break;
		fe = efs_event(ev, s->entry ? &s->names : NULL, &s->p,
		    &api_of(s->c)->files->root);
		if ((j = cJSON_CreateObject()) == NULL || fe == NULL) {
			cJSON_Delete(fe);
			cJSON_Delete(j);
			http_conn_abort(s->c);
			return;
		}
		cJSON_AddItemToObject(j, "filesystem", fe);
		txt = cJSON_PrintUnformatted(j);
		cJSON_Delete(j);
		if (txt == NULL || envd_stream_msg(s->c, txt) == -1) {
			free(txt);
			return;		/* closed: efs_stream_closed frees */
		}
		free(txt);
		envd_timers_touch(&s->tm);
	}
	if (!http_conn_dead(s->c) && watch_gone(s->w) &&
	    s->cursor >= watch_head(s->w))
		envd_stream_finish(&s->tm, NULL);
}

static void
efs_stream_resume(struct ev_loop *loop, ev_check *w, int revents)
{
	(void)loop;
	(void)revents;
	efs_stream_pump(container_of(w, struct efs_stream, resume.check));
}

static void
efs_stream_notify(struct watch_sub *sub)
{
	efs_stream_pump(container_of(sub, struct efs_stream, sub));
}

static void
efs_stream_drained(struct http_conn *c, void *owner)
{
	(void)c;
	efs_stream_pump(owner);
}

static void
efs_stream_closed(struct http_conn *c, void *owner)
{
	(void)c;
	efs_stream_free(owner);
}

static void
efs_watchdir(struct http_conn *c, struct http_req *r)
{
	struct envd_user	 u;
	struct envd_err		 e;
	struct efs_stream	*s = NULL;
	struct watch		*w = NULL;
	uint64_t		 ms;
	cJSON			*j = NULL;

	/* Connect-Timeout-Ms on WatchDir is the stream's, as the protocol
	   says. */
	if (envd_request_user(api_of(c)->envd, r, &u, &e) == -1 ||
	    (j = envd_stream_body(r, &e)) == NULL ||
	    envd_timeout(r, &ms, &e) == -1)
		goto fail;
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		envd_err_set(&e, "resource_exhausted", "out of memory");
		goto fail;
	}
	if (efs_watch_open(c, r, j, &u, &s->p, &w, &e) == -1)
		goto fail;
	s->w = w;
	s->c = c;
	s->loop = api_of(c)->tab->loop;
	s->entry = efs_bool(j, "includeEntry");
	s->cursor = watch_head(w);
	s->sub.notify = efs_stream_notify;
	cJSON_Delete(j);
	envd_timers_init(&s->tm, s->loop, c, r, "{\"keepalive\":{}}",
	    efs_stream_free, s);
	turn_init(&s->resume, efs_stream_resume);
	http_conn_own(c, s, efs_stream_drained, efs_stream_closed);
	/* start{} first, nothing before it. */
	if (envd_stream_begin(c) == -1 ||
	    envd_stream_msg(c, "{\"start\":{}}") == -1)
		return;			/* efs_stream_closed frees s */
	watch_subscribe(w, &s->sub);
	envd_timers_start(&s->tm, ms);
	efs_stream_pump(s);
	return;
fail:
	free(s);
	cJSON_Delete(j);
	envd_stream_fail(c, &e);
}

/* The polling trio: what the Python sync SDK calls. */

static struct efs_poller *
efs_poller_find(const cJSON *j)
{
	const char	*id = cJSON_GetStringValue(connect_field(j, "watcherId"));
	int		 i;

	for (i = 0; id != NULL && i < WATCH_POLL_MAX; i++)
		if (efs_pollers[i].used && strcmp(efs_pollers[i].id, id) == 0)
			return &efs_pollers[i];
	return NULL;
}

static void
efs_poller_free(struct efs_poller *pw)
{
	ev_timer_stop(pw->loop, &pw->idle);
	watch_close(pw->w);
	free(pw->names);
	memset(pw, 0, sizeof(*pw));
}

static void
efs_poller_idle(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct efs_poller	*pw = container_of(t, struct efs_poller, idle);

	(void)loop;
	(void)revents;
	log_info("event=envd_watcher_dropped id=%s", pw->id);
	efs_poller_free(pw);
}

static void
efs_createwatcher(struct http_conn *c, struct http_req *r)
{
	struct efs_poller	*pw = NULL;
	struct envd_user	 u;
	struct envd_err		 e;
	cJSON			*j, *out;
	int			 i;

	if ((j = efs_unary(c, r, &u, &e)) == NULL)
		goto fail;
	for (i = 0; i < WATCH_POLL_MAX && pw == NULL; i++)
		if (!efs_pollers[i].used)
			pw = &efs_pollers[i];
	if (pw == NULL) {
		envd_err_set(&e, "resource_exhausted", "%d watchers exist; "
		    "remove one first", WATCH_POLL_MAX);
		goto fail;
	}
	pw->entry = efs_bool(j, "includeEntry");
	if (pw->entry && (pw->names = calloc(1, sizeof(*pw->names))) == NULL) {
		envd_err_set(&e, "resource_exhausted", "out of memory");
		goto fail;
	}
	if (efs_watch_open(c, r, j, &u, &pw->p, &pw->w, &e) == -1) {
		free(pw->names);
		pw->names = NULL;
		goto fail;
	}
	pw->used = true;
	pw->cursor = watch_head(pw->w);
	pw->loop = api_of(c)->tab->loop;
	snprintf(pw->id, sizeof(pw->id), "w%08x%08x", arc4random(),
	    arc4random());
	ev_timer_init(&pw->idle, efs_poller_idle, WATCH_POLL_IDLE, 0.);
	ev_timer_start(pw->loop, &pw->idle);
	cJSON_Delete(j);
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "watcherId", pw->id);
	envd_reply(c, out);
	return;
fail:
	cJSON_Delete(j);
	envd_reply_err(c, &e);
}

/*
 * The events since the last poll, at most WATCH_PUMP_EVENTS (the next
 * poll takes the rest).  Lost ones are a data_loss error, once: the
 * next poll goes on from the oldest kept.
 */
static void
efs_getwatcherevents(struct http_conn *c, struct http_req *r)
{
	const struct watch_event	*ev;
	struct efs_poller		*pw;
	struct envd_user		 u;
	struct envd_err			 e;
	bool				 gap;
	cJSON				*j, *out = NULL, *arr, *fe;
	int				 n;

	if ((j = efs_unary(c, r, &u, &e)) == NULL)
		goto fail;
	if ((pw = efs_poller_find(j)) == NULL) {
		envd_err_set(&e, "not_found", "watcher with id %.64s not found",
		    cJSON_GetStringValue(connect_field(j, "watcherId")) ?
		    cJSON_GetStringValue(connect_field(j, "watcherId")) : "");
		goto fail;
	}
	ev_timer_again(pw->loop, &pw->idle);
	if ((out = cJSON_CreateObject()) == NULL ||
	    (arr = cJSON_AddArrayToObject(out, "events")) == NULL) {
		envd_err_set(&e, "resource_exhausted", "out of memory");
		goto fail;
	}
	for (n = 0; n < WATCH_PUMP_EVENTS &&
	    ((ev = watch_next(pw->w, &pw->cursor, &gap)) != NULL || gap); n++) {
		if (gap || ev->type == WATCH_TRUNCATED) {
			/* A gap moved the cursor past the oldest kept: back. */
			if (gap && ev != NULL)
				pw->cursor--;
			envd_err_set(&e, "data_loss", "watcher %s: events were "
			    "lost (the kernel's queue overflowed, a watch "
			    "limit, or no poll for too long)", pw->id);
			goto fail;
		}
		if ((fe = efs_event(ev, pw->names, &pw->p,
		    &api_of(c)->files->root)) != NULL)
			cJSON_AddItemToArray(arr, fe);
	}
	cJSON_Delete(j);
	envd_reply(c, out);
	return;
fail:
	cJSON_Delete(j);
	cJSON_Delete(out);
	envd_reply_err(c, &e);
}

static void
efs_removewatcher(struct http_conn *c, struct http_req *r)
{
	struct efs_poller	*pw;
	struct envd_user	 u;
	struct envd_err		 e;
	cJSON			*j;

	if ((j = efs_unary(c, r, &u, &e)) == NULL)
		goto fail;
	if ((pw = efs_poller_find(j)) == NULL) {
		envd_err_set(&e, "not_found", "watcher not found");
		goto fail;
	}
	efs_poller_free(pw);
	cJSON_Delete(j);
	envd_reply(c, cJSON_CreateObject());
	return;
fail:
	cJSON_Delete(j);
	envd_reply_err(c, &e);
}

/* ------------------------------------------------------------------ */
/* GET /files */

/* envd's REST error: {"message","code":status}. */
static void
efs_rest_err(struct http_conn *c, int status, const char *fmt, ...)
{
	char	 msg[API_ERR_MSG_MAX];
	va_list	 ap;
	cJSON	*j;

	va_start(ap, fmt);
	(void)vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if ((j = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(j, "message", msg) == NULL ||
	    cJSON_AddNumberToObject(j, "code", status) == NULL) {
		cJSON_Delete(j);
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	http_reply_json(c, status, j);
}

/* ?username= (envd's), else Basic credentials, else the default user. */
static int
efs_rest_user(struct http_conn *c, struct http_req *r, struct envd_user *u,
    struct envd_err *e)
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

static void
efs_download(struct http_conn *c, struct http_req *r)
{
	struct envd_user	 u;
	struct envd_err		 e;
	struct efs_path		 p;
	struct stat		 st;
	char			 q[PATH_MAX];
	int			 fd;

	if (efs_rest_user(c, r, &u, &e) == -1) {
		efs_rest_err(c, 401, "%s", e.message);
		return;
	}
	switch (http_query(r, "path", q, sizeof(q))) {
	case -1:
		efs_rest_err(c, 400, "path: too long");
		return;
	case 0:
		q[0] = '\0';
		break;
	}
	if (efs_resolve(c, &u, q, &p, &e) == -1) {
		efs_rest_err(c, connect_http_status(e.code), "%s", e.message);
		return;
	}
	if ((fd = files_open_read(&api_of(c)->files->root, p.rel, &st)) ==
	    -1) {
		if (errno == ENOENT)
			efs_rest_err(c, 404, "path '%s' does not exist", p.abs);
		else if (errno == ELOOP)
			efs_rest_err(c, 403, "path '%s' is outside the files "
			    "root", p.abs);
		else
			efs_rest_err(c, efs_status(errno), "read '%s': %s",
			    p.abs, strerror(errno));
		return;
	}
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		efs_rest_err(c, 400, "path '%s' is a directory", p.abs);
		return;
	}
	api_files_send(c, r, fd, &st);
}

/* ------------------------------------------------------------------ */
/* POST /files: a streaming upload */

/* The first failure is the reply; what follows of the body is dropped. */
static void
efs_up_fail(struct efs_up *up, int status, const char *fmt, ...)
{
	va_list	ap;

	if (up->status != 0)
		return;
	up->status = status;
	va_start(ap, fmt);
	(void)vsnprintf(up->msg, sizeof(up->msg), fmt, ap);
	va_end(ap);
	files_put_abort(&up->put);
	up->begun = false;
}

static void
efs_up_errno(struct efs_up *up, int err, const char *what)
{
	if (err == ENOSPC || err == EDQUOT)
		efs_up_fail(up, 507, "not enough disk space available: %s "
		    "'%s'", what, up->p.abs);
	else if (err == ELOOP)
		efs_up_fail(up, 403, "path '%s' is outside the files root",
		    up->p.abs);
	else
		efs_up_fail(up, efs_status(err), "%s '%s': %s", what,
		    up->p.abs, strerror(err));
}

/*
 * The upload's state, at the body's first piece: its user, and how the
 * body is framed (octet-stream: one file, at ?path=; multipart: a file
 * per "file" part, at ?path= if given, else at the part's filename).
 */
static struct efs_up *
efs_up_new(struct http_conn *c, struct http_req *r)
{
	struct efs_up	*up;
	struct envd_err	 e;
	const char	*ct = http_header(r, "Content-Type");
	const char	*ce = http_header(r, "Content-Encoding");
	char		 b[MULTIPART_BOUNDARY_MAX + 1];

	if ((up = calloc(1, sizeof(*up))) == NULL)
		return NULL;
	up->c = c;
	up->loop = api_of(c)->tab->loop;
	up->put.fd = up->put.dirfd = up->put.slot = -1;
	turn_init(&up->zresume, efs_gz_resume);
	http_conn_own(c, up, NULL, efs_up_closed);
	if ((up->done = cJSON_CreateArray()) == NULL) {
		efs_up_fail(up, 503, "out of memory");
		return up;
	}
	if (efs_rest_user(c, r, &up->u, &e) == -1) {
		efs_up_fail(up, 401, "%s", e.message);
		return up;
	}
	if (http_query(r, "path", up->qpath, sizeof(up->qpath)) == -1) {
		efs_up_fail(up, 400, "path: too long");
		return up;
	}
	if (efs_up_encoding(up, ce) == -1)
		return up;
	if (ct != NULL && strncasecmp(ct, "application/octet-stream", 24) ==
	    0) {
		if (up->qpath[0] == '\0')
			efs_up_fail(up, 400, "path query parameter is required "
			    "for raw body upload");
		else
			(void)efs_up_begin(up, up->qpath);
		return up;
	}
	if (multipart_boundary(ct, b, sizeof(b)) == -1) {
		efs_up_fail(up, 400, "unsupported content type: %.64s, "
		    "expected multipart/form-data (with a boundary) or "
		    "application/octet-stream", ct != NULL ? ct : "(none)");
		return up;
	}
	if ((up->mp = malloc(sizeof(*up->mp))) == NULL) {
		efs_up_fail(up, 503, "out of memory");
		return up;
	}
	(void)multipart_init(up->mp, b, &efs_parts, up);
	return up;
}

static void
efs_up_free(struct efs_up *up)
{
	if (up == NULL)
		return;
	turn_stop(up->loop, &up->zresume);
	if (up->gz)
		(void)inflateEnd(&up->z);
	buf_free(&up->zin);
	files_put_abort(&up->put);
	cJSON_Delete(up->done);
	free(up->mp);
	free(up);
}

static void
efs_up_closed(struct http_conn *c, void *owner)
{
	(void)c;
	efs_up_free(owner);
}

/*
 * Content-Encoding: none or identity, or gzip (x-gzip: its old name),
 * inflated as envd's Go reader does: members one after another.
 */
static int
efs_up_encoding(struct efs_up *up, const char *ce)
{
	if (ce == NULL || strcasecmp(ce, "identity") == 0)
		return 0;
	if (strcasecmp(ce, "gzip") != 0 && strcasecmp(ce, "x-gzip") != 0) {
		efs_up_fail(up, 400, "error decompressing request body: "
		    "unsupported Content-Encoding: %.32s, supported: gzip, "
		    "x-gzip, identity", ce);
		return -1;
	}
	if (inflateInit2(&up->z, 16 + MAX_WBITS) != Z_OK) {
		efs_up_fail(up, 503, "out of memory");
		return -1;
	}
	up->gz = true;
	return 0;
}

/*
 * A file of the upload: the path resolved for the user, refused if the
 * upload wrote it already; parents made (the user's), the temp file
 * made beside it and given to the user, as envd leaves what it writes.
 */
static int
efs_up_begin(struct efs_up *up, const char *path)
{
	const struct files_root	*root = &api_of(up->c)->files->root;
	const cJSON		*it;
	struct envd_err		 e;
	bool			 root_user = geteuid() == 0;

	if (efs_resolve(up->c, &up->u, path, &up->p, &e) == -1) {
		efs_up_fail(up, connect_http_status(e.code), "%s", e.message);
		return -1;
	}
	cJSON_ArrayForEach(it, up->done)
		if (strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(it,
		    "path")), up->p.abs) == 0) {
			efs_up_fail(up, 400, "you cannot upload multiple files "
			    "to the same path '%s' in one upload request",
			    up->p.abs);
			return -1;
		}
	if (efs_mkparents(root, up->p.rel, &up->u) == -1) {
		efs_up_errno(up, errno, "make the parents of");
		return -1;
	}
	if (files_put_begin(&up->put, root, up->p.rel, 0, FILES_MODE_KEEP) ==
	    -1 || (root_user && fchown(up->put.fd, up->u.uid, up->u.gid) ==
	    -1)) {
		efs_up_errno(up, errno, "write");
		return -1;
	}
	up->begun = true;
	return 0;
}

/* fsync, rename over the name; its entry for the reply. */
static int
efs_up_commit(struct efs_up *up)
{
	const char	*name = strrchr(up->p.abs, '/');
	bool		 created;
	cJSON		*o;

	up->begun = false;
	if (files_put_commit(&up->put, &created) == -1) {
		efs_up_errno(up, errno, "write");
		return -1;
	}
	if ((o = cJSON_CreateObject()) == NULL ||
	    cJSON_AddStringToObject(o, "path", up->p.abs) == NULL ||
	    cJSON_AddStringToObject(o, "name", name != NULL ? name + 1 :
	    up->p.abs) == NULL ||
	    cJSON_AddStringToObject(o, "type", "file") == NULL) {
		cJSON_Delete(o);
		efs_up_fail(up, 503, "out of memory");
		return -1;
	}
	cJSON_AddItemToArray(up->done, o);
	return 0;
}

static int
efs_part_begin(void *arg, const struct multipart_part *part)
{
	struct efs_up	*up = arg;

	/* envd writes "file" parts only; the others are read and dropped. */
	up->skip = strcmp(part->name, "file") != 0 || up->status != 0;
	if (up->skip)
		return 0;
	if (up->qpath[0] == '\0' && !part->has_filename) {
		efs_up_fail(up, 400, "a file part without a filename, and no "
		    "path query parameter");
		return 0;
	}
	(void)efs_up_begin(up, up->qpath[0] != '\0' ? up->qpath :
	    part->filename);
	return 0;
}

static int
efs_part_data(void *arg, const char *d, size_t n)
{
	struct efs_up	*up = arg;

	if (up->skip || !up->begun)
		return 0;
	if (files_put_write(&up->put, d, n) == -1)
		efs_up_errno(up, errno, "write");
	return 0;
}

static int
efs_part_end(void *arg)
{
	struct efs_up	*up = arg;

	if (!up->skip && up->begun)
		(void)efs_up_commit(up);
	return 0;
}

/* Bytes of the body, decoded: to the file, or through the form parser. */
static void
efs_up_take(struct efs_up *up, const char *d, size_t n)
{
	if (up->status != 0)
		return;
	if (up->mp == NULL) {
		if (files_put_write(&up->put, d, n) == -1)
			efs_up_errno(up, errno, "write");
		return;
	}
	if (multipart_feed(up->mp, d, n) == -1)
		efs_up_fail(up, 400, "error reading form: %s",
		    errno == EMSGSIZE ? "a part's headers are too long" :
		    errno == E2BIG ? "too many parts" : "malformed "
		    "multipart/form-data body");
}

/*
 * Inflate from d at most what is left of this loop turn's
 * FILES_PUMP_BYTES (a few KiB of a gzip bomb inflate to GiBs); the
 * bytes of d used.  A member's end begins the next: what follows must
 * be another member, as Go's reader has it, so trailing bytes fail.
 */
static size_t
efs_gz_inflate(struct efs_up *up, const char *d, size_t n)
{
	static char	 out[FILES_IO_CHUNK];
	z_stream	*z = &up->z;
	unsigned	 turn = ev_iteration(up->loop);
	size_t		 room, got;
	int		 rc;

	if (up->zturn != turn) {
		up->zturn = turn;
		up->zmade = 0;
	}
	z->next_in = (const Bytef *)d;
	z->avail_in = n;
	while (z->avail_in > 0 && up->zmade < FILES_PUMP_BYTES &&
	    up->status == 0) {
		room = FILES_PUMP_BYTES - up->zmade;
		if (room > sizeof(out))
			room = sizeof(out);
		z->next_out = (Bytef *)out;
		z->avail_out = room;
		up->zopen = true;
		rc = inflate(z, Z_NO_FLUSH);
		got = room - z->avail_out;
		up->zmade += got;
		if (got > 0)
			efs_up_take(up, out, got);
		if (rc == Z_STREAM_END) {
			up->zopen = false;
			up->zseen = true;
			(void)inflateReset(z);
		} else if (rc == Z_MEM_ERROR)
			efs_up_fail(up, 503, "out of memory");
		else if (rc != Z_OK)	/* Z_BUF_ERROR too: no progress */
			efs_up_fail(up, 400, "error decompressing request "
			    "body: gzip: %s", z->msg != NULL ? z->msg :
			    "invalid data");
	}
	return n - z->avail_in;
}

/*
 * A piece of a gzip body.  What this turn's share leaves of it is kept
 * and reading paused; the rest of the read already taken still comes
 * in pieces (appended: zin holds at most one read), then nothing until
 * efs_gz_resume has inflated all of zin, a share a turn.
 */
static void
efs_gz_piece(struct efs_up *up, const char *d, size_t n)
{
	size_t	used = 0;

	if (buf_avail(&up->zin) == 0)
		used = efs_gz_inflate(up, d, n);
	if (used == n || up->status != 0)
		return;
	if (buf_add(&up->zin, d + used, n - used) == -1) {
		efs_up_fail(up, 503, "out of memory");
		return;
	}
	http_conn_pause_read(up->c);
	turn_start(up->loop, &up->zresume);
}

static void
efs_gz_resume(struct ev_loop *loop, ev_check *w, int revents)
{
	struct efs_up	*up = container_of(w, struct efs_up, zresume.check);

	(void)revents;
	if (!http_conn_dead(up->c)) {
		buf_consume(&up->zin, efs_gz_inflate(up, buf_head(&up->zin),
		    buf_avail(&up->zin)));
		if (up->status == 0 && buf_avail(&up->zin) > 0)
			return;
	}
	turn_stop(loop, &up->zresume);
	buf_free(&up->zin);
	if (http_conn_dead(up->c))
		return;			/* efs_up_closed frees up */
	if (up->body_done)
		efs_up_finish(up);
	else
		http_conn_resume_read(up->c);
}

/*
 * Each piece as it arrives: decoded (gzip), to the file (octet-stream),
 * or through the parser to the part's file.  A failure is kept for the
 * reply and the rest of the body read and dropped.
 */
static void
efs_upload_body(struct http_conn *c, struct http_req *r, const char *d,
    size_t n)
{
	struct efs_up	*up = http_conn_owner(c);

	if (up == NULL && (up = efs_up_new(c, r)) == NULL) {
		r->body_error = ENOMEM;
		return;
	}
	if (up->status != 0 || n == 0)
		return;
	if (up->gz)
		efs_gz_piece(up, d, n);
	else
		efs_up_take(up, d, n);
}

static void
efs_upload(struct http_conn *c, struct http_req *r)
{
	struct efs_up	*up = http_conn_owner(c);

	if (up == NULL && (up = efs_up_new(c, r)) == NULL) {
		efs_rest_err(c, 503, "out of memory");
		return;
	}
	if (up->status == 0 && r->body_error != 0)
		efs_up_errno(up, r->body_error, "write");
	/* The body is in, not all of it inflated: efs_gz_resume ends it. */
	if (up->status == 0 && buf_avail(&up->zin) > 0) {
		up->body_done = true;
		return;
	}
	efs_up_finish(up);
}

/*
 * The body is in and decoded: a gzip body must end at a member's end;
 * the file committed, the reply.  Reading resumes for the next request.
 */
static void
efs_up_finish(struct efs_up *up)
{
	struct http_conn	*c = up->c;
	cJSON			*done;

	http_conn_own(c, NULL, NULL, NULL);
	http_conn_resume_read(c);
	if (up->status == 0 && up->gz && (up->zopen || !up->zseen))
		efs_up_fail(up, 400, "error decompressing request body: "
		    "gzip: %s", up->zopen ? "unexpected EOF (the body ended "
		    "inside a member)" : "EOF (an empty body)");
	if (up->status == 0 && up->mp == NULL)
		(void)efs_up_commit(up);
	else if (up->status == 0 && multipart_finish(up->mp) == -1)
		efs_up_fail(up, 400, "error reading form: the body ended "
		    "before its closing boundary");
	if (up->status != 0) {
		efs_rest_err(c, up->status, "%s", up->msg);
		efs_up_free(up);
		return;
	}
	done = up->done;
	up->done = NULL;
	efs_up_free(up);
	http_reply_json(c, 200, done);
}

/* ------------------------------------------------------------------ */
/* The routes */

const struct http_route api_envd_fs_routes[] = {
	{ "POST",	"/filesystem.Filesystem/Stat",	efs_stat, NULL },
	{ "POST",	"/filesystem.Filesystem/MakeDir", efs_makedir, NULL },
	{ "POST",	"/filesystem.Filesystem/Move",	efs_move, NULL },
	{ "POST",	"/filesystem.Filesystem/ListDir", efs_listdir, NULL },
	{ "POST",	"/filesystem.Filesystem/Remove", efs_remove, NULL },
	{ "POST",	"/filesystem.Filesystem/WatchDir", efs_watchdir, NULL },
	{ "POST",	"/filesystem.Filesystem/CreateWatcher",
	    efs_createwatcher, NULL },
	{ "POST",	"/filesystem.Filesystem/GetWatcherEvents",
	    efs_getwatcherevents, NULL },
	{ "POST",	"/filesystem.Filesystem/RemoveWatcher",
	    efs_removewatcher, NULL },
	{ "POST",	"/filesystem.Filesystem/*",	envd_unimplemented, NULL },
	{ "GET",	"/files",	efs_download, NULL },
	{ "HEAD",	"/files",	efs_download, NULL },
	{ "POST",	"/files",	efs_upload, efs_upload_body },
	{ NULL, NULL, NULL, NULL }
};
