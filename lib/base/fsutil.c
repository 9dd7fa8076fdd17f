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
#include "tunables.h"

struct fsutil_walk;

static char	*fsutil_split(char *);
static void	 fsutil_walk_pop(struct fsutil_walk *, int);
static int	 fsutil_walk_link(struct fsutil_walk *, int, const char *);
static int	 fsutil_walk_step(struct fsutil_walk *, int, mode_t, int *);
static int	 fsutil_open_walk(int, const char *, int, mode_t, uint64_t);

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
 * The lookup openat2 does, one component at a time, for kernels (and
 * seccomp filters) without it.  Each directory on the way is held open
 * (O_PATH, O_NOFOLLOW), so ".." goes back to the directory that was
 * really passed through, never up a path a rename has since changed.  A
 * link is read from the fd that found it and its text resolved by the
 * same rules: under RESOLVE_BENEATH an absolute one, or ".." above
 * dirfd, is EXDEV; under RESOLVE_IN_ROOT both stop at dirfd.  Magic
 * links (/proc/self/fd/N) are only ever read as text, so they are as
 * harmless as RESOLVE_NO_MAGICLINKS makes them.
 */
struct fsutil_walk {
	int		 fds[FILES_WALK_DEPTH];	/* fds[0] is dirfd, not ours */
	int		 depth;
	int		 links;
	uint64_t	 resolve;
	char		 path[PATH_MAX];	/* what is left to look up */
};

static void
fsutil_walk_pop(struct fsutil_walk *w, int to)
{
	int	saved = errno;

	while (w->depth > to)
		close(w->fds[w->depth--]);
	errno = saved;
}

/*
 * A link met at comp, rest still to come: its text goes in front of
 * rest.  0, or -1 and errno (ELOOP, EXDEV, ENAMETOOLONG).
 */
static int
fsutil_walk_link(struct fsutil_walk *w, int lfd, const char *rest)
{
	char	 target[PATH_MAX], next[PATH_MAX], *t = target;
	ssize_t	 n;

	if ((w->resolve & RESOLVE_NO_SYMLINKS) || ++w->links > FILES_MAX_LINKS) {
		errno = ELOOP;
		return -1;
	}
	if ((n = readlinkat(lfd, "", target, sizeof(target) - 1)) == -1)
		return -1;
	target[n] = '\0';
	if (target[0] == '/') {
		if (!(w->resolve & RESOLVE_IN_ROOT)) {
			errno = EXDEV;
			return -1;
		}
		fsutil_walk_pop(w, 0);
		while (*t == '/')
			t++;
	}
	/* rest lies in w->path: built aside, then copied. */
	if (snprintf(next, sizeof(next), "%s%s%s", *t ? t : ".",
	    rest != NULL ? "/" : "", rest != NULL ? rest : "") >=
	    (int)sizeof(next)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(w->path, next, strlen(next) + 1);
	return 0;
}

/* One step: 1 to go on (w->path holds the rest), else the result. */
static int
fsutil_walk_step(struct fsutil_walk *w, int flags, mode_t mode, int *fdp)
{
	struct stat	 st;
	char		 comp[NAME_MAX + 1], *rest;
	int		 cur = w->fds[w->depth], fd, last, follow;

	rest = fsutil_split(w->path);
	if (snprintf(comp, sizeof(comp), "%s", w->path) >= (int)sizeof(comp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (rest != NULL)
		memmove(w->path, rest, strlen(rest) + 1);
	last = rest == NULL;
	rest = last ? NULL : w->path;
	if (strcmp(comp, "..") == 0) {
		if (w->depth == 0 && !(w->resolve & RESOLVE_IN_ROOT)) {
			errno = EXDEV;
			return -1;
		}
		fsutil_walk_pop(w, w->depth > 0 ? w->depth - 1 : 0);
		strcpy(comp, ".");
		cur = w->fds[w->depth];
	}
	if (strcmp(comp, ".") == 0 && !last)
		return 1;
	follow = strcmp(comp, ".") != 0 && (!last || !(flags & O_NOFOLLOW));
	if (last && (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL))
		follow = 0;
	if (follow) {
		fd = openat(cur, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd == -1 && !(last && errno == ENOENT && (flags & O_CREAT)))
			return -1;
		if (fd != -1 && fstat(fd, &st) == -1) {
			close(fd);
			return -1;
		}
		if (fd != -1 && S_ISLNK(st.st_mode)) {
			int	rc = fsutil_walk_link(w, fd, rest);

			close(fd);
			return rc == -1 ? -1 : 1;
		}
		if (!last) {
			if (!S_ISDIR(st.st_mode) ||
			    w->depth + 1 >= FILES_WALK_DEPTH) {
				close(fd);
				errno = S_ISDIR(st.st_mode) ? ENAMETOOLONG : ENOTDIR;
				return -1;
			}
			w->fds[++w->depth] = fd;
			return 1;
		}
		if (fd != -1)
			close(fd);
	}
	*fdp = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	/* A link swapped in since the look: look again (links counted). */
	if (*fdp == -1 && errno == ELOOP && follow && !(flags & O_PATH) &&
	    !(w->resolve & RESOLVE_NO_SYMLINKS) && ++w->links <= FILES_MAX_LINKS) {
		snprintf(w->path, sizeof(w->path), "%s", comp);
		return 1;
	}
	return *fdp == -1 ? -1 : 0;
}

static int
fsutil_open_walk(int dirfd, const char *path, int flags, mode_t mode,
    uint64_t resolve)
{
	struct fsutil_walk	*w;
	int			 fd = -1, rc;

	if (path[0] == '/' && !(resolve & RESOLVE_IN_ROOT)) {
		errno = EXDEV;
		return -1;
	}
	if (path[0] == '\0') {
		errno = ENOENT;
		return -1;
	}
	if ((w = malloc(sizeof(*w))) == NULL)
		return -1;
	w->fds[0] = dirfd;
	w->depth = w->links = 0;
	w->resolve = resolve;
	while (*path == '/')
		path++;
	if (snprintf(w->path, sizeof(w->path), "%s", *path ? path : ".") >=
	    (int)sizeof(w->path)) {
		free(w);
		errno = ENAMETOOLONG;
		return -1;
	}
	while ((rc = fsutil_walk_step(w, flags, mode, &fd)) == 1)
		;
	fsutil_walk_pop(w, 0);
	free(w);
	return rc == -1 ? -1 : fd;
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
fsutil_resolve(int dirfd, const char *path, int flags, mode_t mode,
    uint64_t resolve)
{
	struct open_how	how;
	long		fd;

	memset(&how, 0, sizeof(how));
	how.flags = (uint64_t)(flags | O_CLOEXEC);
	/* openat2 refuses a mode without O_CREAT or O_TMPFILE. */
	if ((flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE)
		how.mode = mode;
	how.resolve = resolve;
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
		fd = fsutil_open_walk(dirfd, path, flags, mode, resolve);
	return (int)fd;
}

int
fsutil_open(int dirfd, const char *path, int flags, mode_t mode)
{
	struct stat	st;
	int		fd;

	fd = fsutil_resolve(dirfd, path, flags | O_NOFOLLOW, mode,
	    RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH);
	/* O_DIRECTORY meeting a link last says ENOTDIR: it is ELOOP. */
	if (fd == -1 && errno == ENOTDIR && (flags & O_DIRECTORY) &&
	    fstatat(dirfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISLNK(st.st_mode))
		errno = ELOOP;
	return fd;
}

int
fsutil_opendirs(int dirfd, const char *path)
{
	return fsutil_opendirs_mode(dirfd, path, 0700);
}

int
fsutil_opendirs_mode(int dirfd, const char *path, mode_t mode)
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
		if (mkdirat(fd, comp, mode) == -1 && errno != EEXIST)
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

int
fsutil_tmp_name(char tmp[NAME_MAX + 1], const char *name)
{
	if (snprintf(tmp, NAME_MAX + 1, "%s.tmp", name) >= NAME_MAX + 1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * The temp tmp, new: a stale one from a crash (O_EXCL meets it) is
 * removed and the create tried once more — not removed beforehand, which
 * would cost every write a syscall for a crash's leftover — and O_EXCL
 * never follows a link planted in its place.
 */
static int
fsutil_tmp_open(int dirfd, const char *tmp)
{
	int	fd;

	fd = fsutil_open(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0640);
	if (fd == -1 && errno == EEXIST) {
		(void)unlinkat(dirfd, tmp, 0);
		fd = fsutil_open(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL, 0640);
	}
	return fd;
}

int
fsutil_tmp_make(int dirfd, const char *name)
{
	char	tmp[NAME_MAX + 1];
	int	fd;

	if (fsutil_tmp_name(tmp, name) == -1 ||
	    (fd = fsutil_tmp_open(dirfd, tmp)) == -1)
		return -1;
	return close(fd);
}

/*
 * name.tmp whole: the one made ahead (made: opened, not created; made
 * anew if it is gone), or a new one.  0, or -1 with no temp left.
 */
static int
fsutil_write_tmp(int dirfd, const char *name, char tmp[NAME_MAX + 1],
    bool made, const void *d, size_t n, size_t keep, bool sync)
{
	struct stat	st;
	int		fd = -1, saved;

	if (fsutil_tmp_name(tmp, name) == -1)
		return -1;
	/*
	 * Not O_TRUNC: on ext4 a truncate to 0 makes the close after the
	 * write allocate and flush the blocks at once (auto_da_alloc).  One
	 * that is not as it was made (not empty) is made anew.
	 */
	if (made && (fd = fsutil_open(dirfd, tmp, O_WRONLY, 0)) != -1 &&
	    (fstat(fd, &st) == -1 || st.st_size != 0)) {
		close(fd);
		fd = -1;
	}
	if (fd == -1 && (fd = fsutil_tmp_open(dirfd, tmp)) == -1)
		return -1;
	if (fsutil_write_all(fd, d, n) == -1 || (sync && fsync(fd) == -1)) {
		saved = errno;
		close(fd);
		unlinkat(dirfd, tmp, 0);
		errno = saved;
		return -1;
	}
	/* Room kept is a best effort: a file system without it keeps none. */
	if (keep > n)
		(void)fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)keep);
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
	return fsutil_write_atomic_tmp(dirfd, name, false, d, n, 0, sync);
}

int
fsutil_write_atomic_tmp(int dirfd, const char *name, bool made,
    const void *d, size_t n, size_t keep, bool sync)
{
	char	tmp[NAME_MAX + 1];
	int	saved;

	if (fsutil_write_tmp(dirfd, name, tmp, made, d, n, keep, sync) == -1)
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
fsutil_write_inplace(int dirfd, const char *name, const void *d, size_t n)
{
	struct stat	st;
	int		fd, saved;

	if ((fd = fsutil_open(dirfd, name, O_WRONLY, 0)) == -1)
		return -1;
	/* Only a plain file, never through a second name. */
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) || st.st_nlink != 1) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	if (fsutil_write_all(fd, d, n) == -1 || ftruncate(fd, (off_t)n) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return close(fd);
}

int
fsutil_write_new(int dirfd, const char *name, const void *d, size_t n)
{
	return fsutil_write_new_tmp(dirfd, name, false, d, n);
}

int
fsutil_write_new_tmp(int dirfd, const char *name, bool made, const void *d,
    size_t n)
{
	char	tmp[NAME_MAX + 1];
	int	rc, saved;
	bool	linked = false;

	if (fsutil_write_tmp(dirfd, name, tmp, made, d, n, 0, false) == -1)
		return -1;
	rc = renameat2(dirfd, tmp, dirfd, name, RENAME_NOREPLACE);
	/* Without RENAME_NOREPLACE: a hard link is as exclusive. */
	if (rc == -1 && errno == EINVAL) {
		rc = linkat(dirfd, tmp, dirfd, name, 0);
		linked = true;
	}
	/* After a rename the temp is gone; after a link or none, it stays. */
	if (rc == -1 || linked) {
		saved = errno;
		(void)unlinkat(dirfd, tmp, 0);
		errno = saved;
	}
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

/*
 * One level of fsutil_rmtree_flat's walk: the directory's identity, the
 * position of the entry the walk went down into (where its scan resumes
 * on the way back), and what the pass over it saw.
 */
struct rmlevel {
	dev_t	dev;
	ino_t	ino;
	long	at;
	bool	resumed;	/* the pass went down and came back */
	bool	progress;	/* the pass removed an entry */
	bool	failed;		/* an entry stays */
};

bool
fsutil_same_dir(int fd, dev_t dev, ino_t ino)
{
	struct stat	st;

	return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_dev == dev && st.st_ino == ino;
}

/*
 * One pass over lv's directory (fd), from lv->at.  The entry whose inode
 * is child->ino is the directory just come back from: removed when it is
 * empty, passed over when it failed.  A directory found is opened into
 * *cfd (1 returned), to be walked before the pass resumes; 0 at the end
 * of the directory, -1 and errno when it cannot be read.
 */
static int
rmtree_pass(int fd, struct rmlevel *lv, struct rmlevel *child, bool *pending,
    int *cfd)
{
	struct dirent	*de;
	DIR		*d;
	long		 at;
	int		 dfd, saved;

	if ((dfd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) == -1)
		return -1;
	if ((d = fdopendir(dfd)) == NULL) {
		saved = errno;
		close(dfd);
		errno = saved;
		return -1;
	}
	/* The dup shares the offset a former pass left: seek always. */
	seekdir(d, lv->at);
	for (;;) {
		at = telldir(d);
		if ((de = readdir(d)) == NULL)
			break;
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (*pending && de->d_ino == child->ino &&
		    (de->d_type == DT_DIR || de->d_type == DT_UNKNOWN)) {
			*pending = false;
			if (child->failed)
				continue;
			if (unlinkat(fd, de->d_name, AT_REMOVEDIR) == 0 ||
			    errno == ENOENT)
				lv->progress = true;
			else
				lv->failed = true;
			continue;
		}
		if (unlinkat(fd, de->d_name, 0) == 0 || errno == ENOENT) {
			lv->progress = true;
			continue;
		}
		if (errno != EISDIR && errno != EPERM) {
			lv->failed = true;
			continue;
		}
		*cfd = openat(fd, de->d_name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (*cfd == -1) {
			if (errno != ENOENT)
				lv->failed = true;
			continue;
		}
		lv->at = at;
		lv->resumed = true;
		closedir(d);
		return 1;
	}
	closedir(d);
	return 0;
}

int
fsutil_rmtree_flat(int dirfd, const char *name)
{
	struct rmlevel	*lv = NULL, *nlv;
	struct stat	 st;
	size_t		 n = 0, cap = 0;
	bool		 pending = false;
	int		 fd, cfd, pfd, r, rc = -1, saved;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return errno == ENOENT ? 0 : -1;
	cfd = fd;
	fd = -1;
	for (;;) {
		if (cfd != -1) {
			/* Down one level: cfd becomes the current directory. */
			if (fstat(cfd, &st) == -1) {
				saved = errno;
				close(cfd);
				errno = saved;
				goto out;
			}
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				if ((nlv = reallocarray(lv, cap, sizeof *lv)) ==
				    NULL) {
					close(cfd);
					errno = ENOMEM;
					goto out;
				}
				lv = nlv;
			}
			lv[n++] = (struct rmlevel){ .dev = st.st_dev,
			    .ino = st.st_ino };
			if (fd != -1)
				close(fd);
			fd = cfd;
			cfd = -1;
			pending = false;
		}
		if ((r = rmtree_pass(fd, &lv[n - 1], &lv[n], &pending, &cfd))
		    == -1)
			goto out;
		if (r == 1)
			continue;
		/*
		 * The end of the directory.  A pass that resumed after going
		 * down may have missed entries where positions shift as
		 * entries go (or the child's own entry): one more pass from
		 * the start, while passes remove something.  Not after a
		 * failure: the directory stays anyway, and a failed subtree
		 * is not walked again.
		 */
		nlv = &lv[n - 1];
		if (!nlv->failed && nlv->progress &&
		    (nlv->resumed || pending)) {
			nlv->at = 0;
			nlv->progress = nlv->resumed = false;
			continue;
		}
		if (pending)
			nlv->failed = true;	/* its child's entry is not found */
		pending = false;
		if (n == 1)
			break;
		/* Up one level: it must be the directory come down from. */
		pfd = openat(fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pfd == -1)
			goto out;
		if (!fsutil_same_dir(pfd, lv[n - 2].dev, lv[n - 2].ino)) {
			close(pfd);
			errno = ESTALE;
			goto out;
		}
		close(fd);
		fd = pfd;
		n--;
		pending = true;		/* lv[n]: the child come back from */
	}
	close(fd);
	fd = -1;
	/* After a failure too: its error is the rmdir's, as fsutil_rmtree's. */
	if (unlinkat(dirfd, name, AT_REMOVEDIR) == -1 && errno != ENOENT)
		goto out;
	rc = 0;
out:
	saved = errno;
	if (fd != -1)
		close(fd);
	free(lv);
	errno = saved;
	return rc;
}

int
fsutil_mkdir_anew(int dirfd, const char *name)
{
	if (mkdirat(dirfd, name, 0700) == -1 && (errno != EEXIST ||
	    fsutil_rmtree(dirfd, name) == -1 ||
	    mkdirat(dirfd, name, 0700) == -1))
		return -1;
	return fsutil_open(dirfd, name, O_RDONLY | O_DIRECTORY, 0);
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

int
fsutil_join(char *out, size_t n, const char *dir, const char *name)
{
	if (snprintf(out, n, "%s%s%s", dir, *name == '\0' ||
	    strcmp(dir, "/") == 0 ? "" : "/", name) >= (int)n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}
