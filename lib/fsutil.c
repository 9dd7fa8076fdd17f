/*
 * fsutil.c: opens that refuse links, atomic replacement, recursive
 * removal, mkdir -p, small reads.
 */
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"

static char	*fsutil_split(char *);
static int	 fsutil_open_walk(int, const char *, int, mode_t);

int
fsutil_write_all(int fd, const void *d, size_t n)
{
	const char	*p = d;
	ssize_t		 w;

	while (n > 0) {
		if ((w = write(fd, p, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= w;
	}
	return 0;
}

/*
 * The walk fsutil_open falls back to: each directory on the way opened
 * with O_NOFOLLOW, the last component with the caller's flags.
 */
static int
fsutil_open_walk(int dirfd, const char *path, int flags, mode_t mode)
{
	struct stat	 st;
	char		 buf[PATH_MAX], *comp, *rest;
	int		 fd = dirfd, next, saved;

	if (path[0] == '/') {
		errno = EXDEV;
		return -1;
	}
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (comp = buf; ; comp = rest) {
		rest = fsutil_split(comp);
		if (strcmp(comp, "..") == 0) {
			next = -1;
			errno = EXDEV;
		} else if (rest != NULL) {
			next = openat(fd, comp, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
			/* A link is ENOTDIR here: ELOOP, as openat2 says. */
			if (next == -1 && errno == ENOTDIR &&
			    fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISLNK(st.st_mode))
				errno = ELOOP;
		} else
			next = openat(fd, comp, flags | O_NOFOLLOW | O_CLOEXEC,
			    mode);
		if (fd != dirfd) {
			saved = errno;
			close(fd);
			errno = saved;
		}
		if (next == -1 || rest == NULL)
			return next;
		fd = next;
	}
}

/*
 * Cut the first component of a path off at its '/': the rest (past
 * repeated slashes), or NULL when comp was the last one.
 */
static char *
fsutil_split(char *comp)
{
	char	*rest;

	if ((rest = strchr(comp, '/')) == NULL)
		return NULL;
	*rest++ = '\0';
	while (*rest == '/')
		rest++;
	return *rest == '\0' ? NULL : rest;
}

int
fsutil_open(int dirfd, const char *path, int flags, mode_t mode)
{
	struct open_how	how;
	struct stat	st;
	long		fd;

	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_NOFOLLOW | O_CLOEXEC);
	how.mode = (flags & O_CREAT) ? mode : 0;	/* else EINVAL */
	how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH;
	do
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
	while (fd == -1 && errno == EINTR);
	if (fd != -1)
		return (int)fd;
	/*
	 * Kernels before 5.6 and seccomp filters that do not know openat2
	 * (ENOSYS, EPERM); EAGAIN: a rename raced the lookup.  The walk is
	 * as strict, and gives the same errno for a real EPERM.
	 */
	if (errno == ENOSYS || errno == EPERM || errno == EAGAIN)
		fd = fsutil_open_walk(dirfd, path, flags, mode);
	/* O_DIRECTORY meeting a link last says ENOTDIR: it is ELOOP. */
	if (fd == -1 && errno == ENOTDIR && (flags & O_DIRECTORY) &&
	    fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		errno = ELOOP;
	return (int)fd;
}

int
fsutil_opendirs(int dirfd, const char *path)
{
	char	 buf[PATH_MAX], *comp, *rest;
	int	 fd = dirfd, next, saved;

	if (path[0] == '/' || path[0] == '\0') {
		errno = path[0] == '/' ? EXDEV : ENOENT;
		return -1;
	}
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (comp = buf; ; comp = rest) {
		rest = fsutil_split(comp);
		/* EEXIST comes before EROFS or ENOSPC for a name. */
		if (mkdirat(fd, comp, 0700) == -1 && errno != EEXIST)
			next = -1;
		else
			next = fsutil_open(fd, comp, O_RDONLY | O_DIRECTORY, 0);
		if (fd != dirfd) {
			saved = errno;
			close(fd);
			errno = saved;
		}
		if (next == -1 || rest == NULL)
			return next;
		fd = next;
	}
}

/*
 * name.tmp, new and whole: a stale temp from a crash is removed first,
 * so that O_EXCL never meets it, and O_EXCL never follows a link planted
 * in its place.  0, or -1 with no temp left.
 */
static int
fsutil_write_tmp(int dirfd, const char *name, char tmp[NAME_MAX + 1],
    const void *d, size_t n, bool sync)
{
	int	fd, saved;

	if (snprintf(tmp, NAME_MAX + 1, "%s.tmp", name) >= NAME_MAX + 1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	(void)unlinkat(dirfd, tmp, 0);
	fd = fsutil_open(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0640);
	if (fd == -1)
		return -1;
	if (fsutil_write_all(fd, d, n) == -1 || (sync && fsync(fd) == -1)) {
		saved = errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		errno = saved;
		return -1;
	}
	if (close(fd) == -1) {
		saved = errno;
		unlinkat(dirfd, tmp, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

int
fsutil_write_atomic(int dirfd, const char *name, const void *d, size_t n,
    bool sync)
{
	char	tmp[NAME_MAX + 1];
	int	saved;

	if (fsutil_write_tmp(dirfd, name, tmp, d, n, sync) == -1)
		return -1;
	if (renameat(dirfd, tmp, dirfd, name) == -1) {
		saved = errno;
		unlinkat(dirfd, tmp, 0);
		errno = saved;
		return -1;
	}
	return 0;
}

int
fsutil_write_new(int dirfd, const char *name, const void *d, size_t n)
{
	char	tmp[NAME_MAX + 1];
	int	rc, saved;

	if (fsutil_write_tmp(dirfd, name, tmp, d, n, false) == -1)
		return -1;
	rc = renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE);
	/* Without RENAME_NOREPLACE: a hard link is as exclusive. */
	if (rc == -1 && errno == EINVAL)
		rc = linkat(dirfd, tmp, dirfd, name, 0);
	saved = errno;
	(void)unlinkat(dirfd, tmp, 0);	/* ENOENT after a rename */
	errno = saved;
	return rc;
}

int
fsutil_rmtree(int dirfd, const char *name)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd, rc = 0, saved;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	if ((d = fdopendir(fd)) == NULL) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (fsutil_rmtree(fd, de->d_name) == -1)
			rc = -1;
	}
	closedir(d);
	if (unlinkat(dirfd, name, AT_REMOVEDIR) == -1 && errno != ENOENT)
		rc = -1;
	return rc;
}

int
fsutil_mkdirs(int dirfd, const char *path)
{
	char	buf[PATH_MAX], *p;
	int	fd;

	if (dirfd != AT_FDCWD) {
		if ((fd = fsutil_opendirs(dirfd, path)) == -1)
			return -1;
		return close(fd);
	}
	if (path[0] == '\0') {
		errno = ENOENT;
		return -1;
	}
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = buf + 1; ; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char	saved = *p;
		*p = '\0';
		if (mkdirat(dirfd, buf, 0700) == -1 && errno != EEXIST)
			return -1;
		*p = saved;
		if (saved == '\0')
			break;
	}
	return 0;
}

char *
fsutil_read(int dirfd, const char *name, size_t max, size_t *lenp)
{
	char	*s;
	ssize_t	 n;
	size_t	 len = 0;
	int	 fd, saved;

	fd = dirfd == AT_FDCWD ? openat(dirfd, name, O_RDONLY | O_CLOEXEC |
	    O_NOFOLLOW) : fsutil_open(dirfd, name, O_RDONLY, 0);
	if (fd == -1)
		return NULL;
	if ((s = malloc(max + 1)) == NULL) {
		close(fd);
		return NULL;
	}
	while (len < max) {
		n = read(fd, s + len, max - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			saved = errno;
			free(s);
			close(fd);
			errno = saved;
			return NULL;
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	s[len] = '\0';
	if (lenp != NULL)
		*lenp = len;
	return s;
}
