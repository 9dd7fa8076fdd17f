/*
 * fsutil.c: atomic replacement, recursive removal, mkdir -p, small reads.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"

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

int
fsutil_write_atomic(int dirfd, const char *name, const void *d, size_t n,
    bool sync)
{
	char	tmp[NAME_MAX + 1];
	int	fd, saved;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", name) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0640);
	if (fd == -1)
		return -1;
	if (fsutil_write_all(fd, d, n) == -1)
		goto fail;
	if (sync && fsync(fd) == -1)
		goto fail;
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	if (renameat(dirfd, tmp, dirfd, name) == -1) {
		fd = -1;
		goto fail;
	}
	return 0;
fail:
	saved = errno;
	if (fd != -1)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	errno = saved;
	return -1;
}

int
fsutil_write_new(int dirfd, const char *name, const void *d, size_t n)
{
	int	fd, saved;

	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
	if (fd == -1)
		return -1;
	if (fsutil_write_all(fd, d, n) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return close(fd);
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

	if ((fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1)
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
