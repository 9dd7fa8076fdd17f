/*
 * files: paths confined to a root directory, and the file operations the
 * file routes serve (read, stat, list, atomic put, append, mkdir, delete,
 * move).  No HTTP here: every function returns -1 (or NULL) and leaves
 * errno; files_errmap turns an errno into the reply's status and code.
 *
 * Contract for the route author
 * -----------------------------
 * 1. Once at start: files_root_open(&root, "/") (or --files-root, or the
 *    bridge's --workspace).  The root is held as an fd: renaming or
 *    replacing its path later changes nothing.
 * 2. Per request: files_path(&root, enc, len, rel, sizeof(rel)) takes the
 *    still percent-encoded path after the route prefix ("/etc/hosts" of
 *    /v1/file/etc/hosts): decoded once, absolute, normalised ("a/../b"
 *    is "b"), then made relative to the root ("." is the root itself).
 *    EINVAL: malformed encoding, a NUL, a relative or empty path (400);
 *    ELOOP: outside the root (403; the bridge's "… must be within
 *    /workspace" is root.path).
 * 3. Every operation takes that rel and resolves it again from the root
 *    fd, in the kernel (openat2), holding fds from there on: a link
 *    swapped in between two calls cannot lead out.  How:
 *      - a root other than "/": RESOLVE_BENEATH, so "..", an absolute
 *        link, or a relative link that climbs out is refused (ELOOP,
 *        403).  RESOLVE_IN_ROOT is not used there: it would resolve such
 *        a link to some other file inside the root, silently, where the
 *        contract says 403.
 *      - the system root "/": RESOLVE_IN_ROOT, which there is the plain
 *        lookup (nothing is outside "/"), so absolute links such as
 *        the links in /etc/alternatives work; RESOLVE_BENEATH would refuse
 *        them all.
 *      - always RESOLVE_NO_MAGICLINKS (/proc/self/fd/N, /proc/PID/root).
 *      - without openat2 (kernels before 5.6, seccomp), fsutil_resolve's
 *        walk: the same rules, one component at a time with O_NOFOLLOW,
 *        each directory held open; links are followed by reading their
 *        text and resolving it under the same rules.
 *    A resolution that leaves the root is ELOOP here (never EXDEV, which
 *    is kept for a move across file systems).
 * 4. Links: the last component is followed for read, stat (follow=true),
 *    list and append; put, delete and move act on the name itself (a
 *    link there is replaced, removed or renamed, its target untouched).
 * 5. Disk work is synchronous: reads and writes are the route's per-
 *    callback budget; a listing is bounded by FILES_LIST_MAX; a recursive
 *    delete of a large tree is not bounded (a route may want a child).
 */
#ifndef TEND_FILES_H
#define TEND_FILES_H

#include <sys/stat.h>
#include <sys/types.h>

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;

struct files_root {
	int		 fd;		/* O_PATH | O_DIRECTORY */
	uint64_t	 resolve;	/* RESOLVE_BENEATH or _IN_ROOT, see above */
	size_t		 len;		/* of path */
	char		 path[PATH_MAX];	/* absolute, normalised */
};

/* What an errno means to a client: status, code, out of the root. */
struct files_err {
	int		 status;
	const char	*code;
	bool		 outside;	/* ELOOP: the bridge's "must be within" */
};

/*
 * ENOENT 404 not_found; EACCES, EPERM, EROFS 403 forbidden; ELOOP 403
 * forbidden + outside; EEXIST, ENOTEMPTY, EBUSY, ETXTBSY 409 conflict;
 * EXDEV 409 cross_device; ENOSPC, EDQUOT 507 no_space; EFBIG 413
 * too_large; EISDIR, ENOTDIR, EINVAL, ENAMETOOLONG 400 invalid_request;
 * EMFILE, ENFILE, ENOMEM, EAGAIN 503 busy; anything else 500 internal.
 * The route adds "errno": codec_errno_name(err).
 */
struct files_err files_errmap(int err);

/* Open the root dir (path absolute; links on the way followed). */
int	files_root_open(struct files_root *, const char *path);
void	files_root_close(struct files_root *);

/*
 * Percent-decode [s, s+n) once into out (cap bytes, NUL-terminated):
 * '+' stays '+'.  EINVAL: a '%' without two hex digits, or a NUL (raw or
 * %00); ENAMETOOLONG: does not fit.
 */
int	files_decode(const char *s, size_t n, char *out, size_t cap);
/*
 * Normalise an absolute path in place: "//" and "." dropped, ".."
 * removes the component before it ("/.." is "/"), no trailing '/'.
 * EINVAL if not absolute.  Lexical only: links are the resolver's job.
 */
int	files_normalize(char *path);
/* An absolute normalised path relative to the root ("." for the root). */
int	files_rel(const struct files_root *, const char *abs, char *rel,
	    size_t cap);
/* files_decode, files_normalize, files_rel: see the contract, 2. */
int	files_path(const struct files_root *, const char *enc, size_t n,
	    char *rel, size_t cap);

/*
 * The resolver: open rel under the root with flags (O_CLOEXEC added;
 * O_NOFOLLOW: the last component is not followed).  An fd, or -1.
 */
int	files_open(const struct files_root *, const char *rel, int flags,
	    mode_t mode);
/* stat of rel; follow: through a last link, else the link itself. */
int	files_stat(const struct files_root *, const char *rel, bool follow,
	    struct stat *);
/*
 * For GET: rel opened O_RDONLY (through links), *st filled.  A directory
 * is returned as one (the route lists it); anything but a file or a
 * directory is EINVAL, and is never opened (a FIFO would block, a device
 * could act on open).
 */
int	files_open_read(const struct files_root *, const char *rel,
	    struct stat *st);
/* "file", "dir", "symlink", "fifo", "socket", "char", "block". */
const char *files_type(mode_t);

enum files_range {
	FILES_RANGE_FULL,	/* no Range, or one to ignore: 200, all */
	FILES_RANGE_PART,	/* 206, bytes *first..*last inclusive */
	FILES_RANGE_UNSATISFIABLE	/* 416, with Content-Range of the size */
};
/*
 * A Range header (NULL: none) against a file of size bytes: "bytes=a-b",
 * "bytes=a-", "bytes=-n".  Several ranges, other units and malformed
 * values are ignored (FULL), as RFC 9110 allows.
 */
enum files_range files_range(const char *hdr, uint64_t size,
	    uint64_t *first, uint64_t *last);

/*
 * Append to arr the entries under directory rel (through links), depth
 * levels deep (1: its children; at most FILES_LIST_DEPTH_MAX, else
 * EINVAL), sorted by name, a directory's entries after it.  Each is
 * {"name","type","size","mode","mtime","target"?}: name relative to rel
 * ("a/b" below depth 1), mode the permission bits as a number, mtime
 * RFC 3339, target for a link.  Links are listed, never descended.  At
 * most FILES_LIST_MAX entries: *truncated says there were more.
 * ENOTDIR: rel is not a directory.
 */
int	files_list(const struct files_root *, const char *rel, int depth,
	    struct cJSON *arr, bool *truncated);
/* One such entry; NULL on ENOMEM. */
struct cJSON *files_entry(const char *name, const struct stat *,
	    const char *target);

#define FILES_PUT_PARENTS	0x1	/* create missing parents, 0755 */
#define FILES_PUT_APPEND	0x2	/* append in place, no temp, no rename */
#define FILES_MODE_KEEP		(-1)	/* an old file's mode, a new one 0644 */

/*
 * An upload.  files_put_begin opens the temp file ".NAME.XXXXXX" in the
 * target's directory (O_EXCL, never through a link) with the final mode;
 * files_put_write appends to it; files_put_commit fsyncs it and renames
 * it over NAME (readers see the old file or the new one, never part of
 * one), *created telling 201 from 204; files_put_abort (after any
 * failure, or a client gone) removes the temp.  The directory is held
 * open from begin to commit: a link swapped in for it meanwhile changes
 * nothing.  A directory at NAME is EISDIR at begin.  With
 * FILES_PUT_APPEND the file itself is opened (through links, created if
 * missing) and written in place: an abort keeps what was appended.
 * mode: 0..07777 (else EINVAL), applied as given (no umask), or
 * FILES_MODE_KEEP.  A crash of the agent mid-upload leaves the temp.
 */
struct files_put {
	int	 dirfd;		/* the target's directory */
	int	 slot;		/* in files_tmp's table, or -1 */
	int	 fd;		/* the temp file (the file itself: append) */
	int	 flags;
	bool	 created;	/* append: the file was made by begin */
	uint64_t unflushed;	/* bytes since the last flush */
	pid_t	 flusher;	/* the child making them stable, or 0 */
	int	 flusherr;	/* a flush failed: errno, the commit fails */
	uint64_t off;
	char	 name[NAME_MAX + 1];
	char	 tmp[NAME_MAX + 1];
};

/*
 * tend's own temp files, the newest FILES_TMP_KEPT of them, for watchers
 * (lib/watch.c): an upload is reported as one create (or write) of its
 * name, never as the temp's events nor as a rename.  What the temp name
 * in the directory (dev, ino) is now: tend's and being written (LIVE),
 * renamed over a new name (CREATED) or over a file (REPLACED), removed
 * (ABORTED); NONE: not one of tend's (another program's file).
 */
enum files_tmp_state {
	FILES_TMP_NONE,
	FILES_TMP_LIVE,
	FILES_TMP_CREATED,
	FILES_TMP_REPLACED,
	FILES_TMP_ABORTED
};
enum files_tmp_state files_tmp_state(dev_t, ino_t, const char *name);
/* name looks like a temp of files_put (".NAME.XXXXXX"): worth a look. */
bool	files_tmp_name(const char *name);

int	files_put_begin(struct files_put *, const struct files_root *,
	    const char *rel, int flags, int mode);
int	files_put_write(struct files_put *, const void *, size_t);
int	files_put_commit(struct files_put *, bool *created);
void	files_put_abort(struct files_put *);

/*
 * mkdir of rel (mode less the umask).  parents: missing parents made,
 * an existing directory is success; else an existing name is EEXIST.
 */
int	files_mkdir(const struct files_root *, const char *rel, bool parents,
	    mode_t mode);
/*
 * mkdir -p of rel, each directory it makes (mode less the umask) given
 * to uid:gid (uid (uid_t)-1: left to the agent), those on the way taken
 * as they are (ENOTDIR: something else is on the way).
 */
int	files_mkdirs_owned(const struct files_root *, const char *rel,
	    mode_t mode, uid_t uid, gid_t gid);
/*
 * Remove rel (a link itself, never its target).  A non-empty directory
 * is ENOTEMPTY unless recursive (then removed whole, links not
 * followed).  The root itself: EBUSY.
 */
int	files_delete(const struct files_root *, const char *rel,
	    bool recursive);
/*
 * rename(2) of from to to, both under the root, to's directory existing.
 * Without overwrite an existing to is EEXIST (RENAME_NOREPLACE); across
 * file systems EXDEV (nothing is copied).  The root itself: EBUSY.
 */
int	files_move(const struct files_root *, const char *from,
	    const char *to, bool overwrite);

#endif
