/*
 * fsutil: small file-system operations relative to directory fds.
 */
#ifndef TEND_FSUTIL_H
#define TEND_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>

/* All of d to fd (EINTR retried).  0, or -1 and errno. */
int	fsutil_write_all(int fd, const void *, size_t);
/* Replace name in dirfd atomically: name.tmp, (fsync), rename. */
int	fsutil_write_atomic(int dirfd, const char *name, const void *, size_t,
	    bool sync);
/* Write a file that must not exist yet (O_EXCL), in one go. */
int	fsutil_write_new(int dirfd, const char *name, const void *, size_t);
/* Remove name (a file or a whole tree) in dirfd.  ENOENT is success. */
int	fsutil_rmtree(int dirfd, const char *name);
/* mkdir -p of a relative path under dirfd, mode 0700. */
int	fsutil_mkdirs(int dirfd, const char *path);
/*
 * Read a whole small file (<= max bytes, not through a symlink) into a
 * NUL-terminated malloc'd string.
 */
char	*fsutil_read(int dirfd, const char *name, size_t max, size_t *len);

#endif
