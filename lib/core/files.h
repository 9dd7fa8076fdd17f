/*
 * files: paths confined to a root directory, and the resolver that opens
 * them; the operations on them are fileops.h's (list, mkdir, delete,
 * move) and upload.h's (atomic put, append).  No replies here: every
 * function returns -1 (or NULL) and leaves errno; the api layer names it
 * (api/api_errno.h).
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
 *    delete of a tree is not bounded, so a route runs it in a child
 *    (fileops_delete_spawn).
 */
#ifndef TEND_FILES_H
#define TEND_FILES_H

#include <sys/stat.h>
#include <sys/types.h>

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct files_root {
	int		 fd;		/* O_PATH | O_DIRECTORY */
	uint64_t	 resolve;	/* RESOLVE_BENEATH or _IN_ROOT, see above */
	size_t		 len;		/* of path */
	char		 path[PATH_MAX];	/* absolute, normalised */
};

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
 * "a/b/c" to "a/b" and "c", "c" to "." and "c" (name holds NAME_MAX+1).
 * ENAMETOOLONG, or EINVAL for a last component "", "." or "..".
 */
int	files_split(const char *rel, char *parent, size_t cap, char *name);

/*
 * The resolver: open rel under the root with flags (O_CLOEXEC added;
 * O_NOFOLLOW: the last component is not followed).  An fd, or -1.
 */
int	files_open(const struct files_root *, const char *rel, int flags,
	    mode_t mode);
/* rel's directory, opened (through links); its last component in name. */
int	files_parent(const struct files_root *, const char *rel, char *name);
/* stat of rel; follow: through a last link, else the link itself. */
int	files_stat(const struct files_root *, const char *rel, bool follow,
	    struct stat *);
/*
 * A regular file (or, reading, a directory) opened with flags, looked
 * at first through O_PATH so that nothing else is ever opened: opening a
 * FIFO blocks, opening a device can act.  With O_CREAT a missing file is
 * made (O_EXCL: never through a link planted meanwhile), *created set.
 */
int	files_open_file(const struct files_root *, const char *rel, int flags,
	    mode_t mode, struct stat *st, bool *created);
/*
 * For GET: rel opened O_RDONLY (through links), *st filled.  A directory
 * is returned as one (the route lists it); anything but a file or a
 * directory is EINVAL, and is never opened (a FIFO would block, a device
 * could act on open).
 */
int	files_open_read(const struct files_root *, const char *rel,
	    struct stat *st);
/*
 * mkdir -p of rel (mode less the umask): the directory's fd.  Walked
 * down once from the root, each missing directory made in its parent's
 * fd (no prefix resolved again from the root: the cost is linear in the
 * depth); a link on the way is followed as any lookup follows it,
 * confined; something else on the way is ENOTDIR.
 */
int	files_mkdirs(const struct files_root *, const char *rel, mode_t mode);
/*
 * files_mkdirs, each directory it makes given to uid:gid (uid (uid_t)-1:
 * left to the agent) through its own fd, never through a link.
 */
int	files_mkdirs_owned(const struct files_root *, const char *rel,
	    mode_t mode, uid_t uid, gid_t gid);
/* close(2), errno kept: for cleanup after a failure. */
void	files_close(int fd);

/*
 * tend's own temp files, the newest FILES_TMP_KEPT of them, for watchers
 * (watch.c): an upload (upload.h) is reported as one create (or write)
 * of its name, never as the temp's events nor as a rename.  What the
 * temp name in the directory (dev, ino) is now: tend's and being written
 * (LIVE), renamed over a new name (CREATED) or over a file (REPLACED),
 * removed (ABORTED); NONE: not one of tend's (another program's file).
 * The upload notes its temp (files_tmp_note) and says what became of it
 * (files_tmp_set); a watcher asks (files_tmp_state).
 */
enum files_tmp_state {
	FILES_TMP_NONE,
	FILES_TMP_LIVE,
	FILES_TMP_CREATED,
	FILES_TMP_REPLACED,
	FILES_TMP_ABORTED
};
enum files_tmp_state files_tmp_state(dev_t, ino_t, const char *name);
/* name looks like a temp of an upload (".NAME.XXXXXX"): worth a look. */
bool	files_tmp_name(const char *name);
/* tmp, LIVE in directory dirfd: its slot, for files_tmp_set, or -1. */
int	files_tmp_note(int dirfd, const char *tmp);
/* What became of tmp in slot (-1: none): state. */
void	files_tmp_set(int slot, const char *tmp, enum files_tmp_state);

#endif
