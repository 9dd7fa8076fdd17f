/*
 * fsutil: small file-system operations relative to directory fds.
 *
 * Under a directory fd (the state dir and what is below it) no function
 * follows a symbolic link or leaves the directory: a link planted there
 * is refused (ELOOP), as is "..", an absolute path (EXDEV).
 */
#ifndef TEND_FSUTIL_H
#define TEND_FSUTIL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* All of d to fd (EINTR retried).  0, or -1 and errno. */
int	fsutil_write_all(int fd, const void *, size_t);
/*
 * Open path under dirfd: no component may be a symlink, none may lead
 * out of dirfd (openat2 RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH, or one
 * component at a time with O_NOFOLLOW where openat2 is missing).
 * O_CLOEXEC is added.  An fd, or -1 and errno.
 */
int	fsutil_open(int dirfd, const char *path, int flags, mode_t mode);
/*
 * openat2(dirfd, path, flags | O_CLOEXEC, mode, resolve), or where
 * openat2 is missing the same lookup one component at a time, each
 * directory held open: RESOLVE_BENEATH, RESOLVE_IN_ROOT and
 * RESOLVE_NO_SYMLINKS are honoured (a link's text is resolved by the
 * same rules; a magic link is only ever read as text).  An fd, or -1
 * and errno (EXDEV: out of dirfd; ELOOP: a link refused, or too many).
 */
int	fsutil_resolve(int dirfd, const char *path, int flags, mode_t mode,
	    uint64_t resolve);
/* mkdir -p of path under dirfd (mode 0700), as fsutil_open: its fd. */
int	fsutil_opendirs(int dirfd, const char *path);
/* The same, new directories made with mode (less the umask). */
int	fsutil_opendirs_mode(int dirfd, const char *path, mode_t mode);
/*
 * Replace name (one component) in dirfd atomically: a new name.tmp
 * (O_EXCL: a stale one is removed first, a link is never followed),
 * (fsync), rename.  On failure the temp is removed and the old name is
 * untouched.
 */
int	fsutil_write_atomic(int dirfd, const char *name, const void *, size_t,
	    bool sync);
/*
 * Create name, which must not exist yet (EEXIST), whole or not at all:
 * written to name.tmp as above, then renamed without replacing.
 */
int	fsutil_write_new(int dirfd, const char *name, const void *, size_t);
/*
 * The temp of the two above made ahead of its write, empty: a new
 * name.tmp (O_EXCL, a stale one removed first), closed (an fd open for
 * writing would keep the file system from being remounted read-only).
 * 0, or -1 and errno.
 */
int	fsutil_tmp_make(int dirfd, const char *name);
/* The temp's name of name: "name.tmp" into tmp.  -1 (ENAMETOOLONG). */
int	fsutil_tmp_name(char tmp[NAME_MAX + 1], const char *name);
/*
 * fsutil_write_atomic and fsutil_write_new, made: with the temp
 * fsutil_tmp_make made (opened, not created; made anew if it is gone).
 * keep > n: the file is given room for keep bytes (its size stays n), so
 * that fsutil_write_inplace can replace it when the disk is full.
 */
int	fsutil_write_atomic_tmp(int dirfd, const char *name, bool made,
	    const void *, size_t n, size_t keep, bool sync);
/*
 * Overwrite name in place with n bytes and cut it there: the last resort
 * when the disk has no room for a temp, for a file written with room
 * kept (fsutil_write_atomic_tmp's keep >= n); a write that needs more
 * room than was kept fails as any other.  Not atomic: a crash in the
 * middle leaves a torn file.  0, or -1 and errno.
 */
int	fsutil_write_inplace(int dirfd, const char *name, const void *,
	    size_t n);
int	fsutil_write_new_tmp(int dirfd, const char *name, bool made,
	    const void *, size_t);
/* Remove name (a file or a whole tree) in dirfd.  ENOENT is success. */
int	fsutil_rmtree(int dirfd, const char *name);
/*
 * fsutil_rmtree with a memory and fds that do not grow with the depth
 * (a few bytes a level): it goes down holding only the current
 * directory's fd and comes back up by "..", each step up checked to reach
 * the directory come down from (else -1, ESTALE: a directory moved away
 * meanwhile never takes the walk outside the tree).  An entry that cannot
 * be removed is passed over and the others removed; the tree's own
 * rmdir then fails (ENOTEMPTY), as fsutil_rmtree's.
 */
int	fsutil_rmtree_flat(int dirfd, const char *name);
/* fd is an open directory whose identity is (dev, ino). */
bool	fsutil_same_dir(int fd, dev_t dev, ino_t ino);
/*
 * name (one component) made anew in dirfd, empty, mode 0700 (whatever
 * was there under the name removed first), and opened as
 * fsutil_open(O_RDONLY | O_DIRECTORY) does.  The fd, or -1 and errno.
 */
int	fsutil_mkdir_anew(int dirfd, const char *name);
/*
 * mkdir -p, mode 0700.  Under a directory fd as fsutil_opendirs; with
 * AT_FDCWD (the state dir named on the command line) links are followed.
 */
int	fsutil_mkdirs(int dirfd, const char *path);
/*
 * dir and name joined into out (n bytes) with one slash: dir itself for
 * an empty name, no second slash after "/".  -1 (ENAMETOOLONG).
 */
int	fsutil_join(char *out, size_t n, const char *dir, const char *name);
/*
 * Read a whole small file (<= max bytes) into a NUL-terminated malloc'd
 * string.  Under a directory fd it is opened with fsutil_open; with
 * AT_FDCWD (system files: /proc/self/...) only the last component must
 * not be a link.
 */
char	*fsutil_read(int dirfd, const char *name, size_t max, size_t *len);

#endif
