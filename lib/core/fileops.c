/*
 * fileops.c: what the file routes do to names under a root besides
 * reading and uploading: list, mkdir, delete, move.  See fileops.h.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/tunables.h"
#include "sys/spawn.h"
#include "fileops.h"
#include "files.h"

static int	fileops_name_cmp(const void *, const void *);
static int	fileops_names(DIR *, size_t, char ***, size_t *);
static int	fileops_walk_push(struct fileops_walk *, int, size_t, int);
static void	fileops_walk_pop(struct fileops_walk *);
static int	fileops_walk_one(struct fileops_walk *, const char *,
		    fileops_list_fn, void *);

/* ------------------------------------------------------------------ */
/* Listing */

static int
fileops_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * At most max names of d (not "." or ".."), malloc'd, sorted: the list
 * never holds more than a listing could show.  *vp is NULL for an empty
 * directory.
 */
static int
fileops_names(DIR *d, size_t max, char ***vp, size_t *np)
{
	struct dirent	*de;
	char		**v = NULL, **nv;
	size_t		 n = 0, cap = 0;

	errno = 0;
	while (n < max && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			if ((nv = realloc(v, cap * sizeof(*v))) == NULL)
				goto fail;
			v = nv;
		}
		if ((v[n] = strdup(de->d_name)) == NULL)
			goto fail;
		n++;
	}
	if (errno != 0)
		goto fail;
	if (n > 0)
		qsort(v, n, sizeof(*v), fileops_name_cmp);
	*vp = v;
	*np = n;
	return 0;
fail:
	while (n > 0)
		free(v[--n]);
	free(v);
	return -1;
}

/*
 * A level of the walk: dfd (ours to close), its names at path's first
 * plen bytes, depth levels listed from it.  One more name than fits is
 * read: there were more entries than shown.
 */
static int
fileops_walk_push(struct fileops_walk *w, int dfd, size_t plen, int depth)
{
	struct fileops_level	*lev = &w->lev[w->nlev];
	int			 saved;

	memset(lev, 0, sizeof(*lev));
	if ((lev->d = fdopendir(dfd)) == NULL) {
		saved = errno;
		close(dfd);
		errno = saved;
		return -1;
	}
	if (fileops_names(lev->d, FILES_LIST_MAX - w->count + 1, &lev->names,
	    &lev->n) == -1) {
		saved = errno;
		closedir(lev->d);
		errno = saved;
		return -1;
	}
	lev->plen = plen;
	lev->depth = depth;
	w->nlev++;
	return 0;
}

static void
fileops_walk_pop(struct fileops_walk *w)
{
	struct fileops_level	*lev = &w->lev[--w->nlev];
	int			 saved = errno;

	while (lev->n > 0)
		free(lev->names[--lev->n]);
	free(lev->names);
	closedir(lev->d);
	errno = saved;
}

/*
 * One entry of the innermost level, given to fn, and the level below it
 * pushed when it is a directory and the depth goes on.
 */
static int
fileops_walk_one(struct fileops_walk *w, const char *name, fileops_list_fn fn,
    void *arg)
{
	struct fileops_level	*lev = &w->lev[w->nlev - 1];
	struct stat		 st;
	char			 target[PATH_MAX];
	ssize_t			 n = -1;
	size_t			 plen = lev->plen;
	int			 sub, len;

	if (fstatat(dirfd(lev->d), name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return 0;			/* gone since readdir */
	len = snprintf(w->path + plen, sizeof(w->path) - plen, "%s%s",
	    plen > 0 ? "/" : "", name);
	if (len < 0 || (size_t)len >= sizeof(w->path) - plen)
		return 0;
	if (S_ISLNK(st.st_mode) &&
	    (n = readlinkat(dirfd(lev->d), name, target, sizeof(target) - 1)) >=
	    0)
		target[n] = '\0';
	if (fn(arg, w->path, &st, n >= 0 ? target : NULL) == -1)
		return -1;
	w->count++;
	if (!S_ISDIR(st.st_mode) || lev->depth <= 1)
		return 0;
	/* O_NOFOLLOW: a link swapped in for the directory is not entered. */
	sub = openat(dirfd(lev->d), name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (sub == -1)
		return 0;			/* listed, not entered */
	return fileops_walk_push(w, sub, plen + (size_t)len, lev->depth - 1);
}

int
fileops_walk_open(struct fileops_walk *w, const struct files_root *r,
    const char *rel, int depth)
{
	int	fd;

	memset(w, 0, sizeof(*w));
	if (depth < 1 || depth > FILES_LIST_DEPTH_MAX) {
		errno = EINVAL;
		return -1;
	}
	if ((fd = files_open(r, rel, O_RDONLY | O_DIRECTORY, 0)) == -1)
		return -1;
	return fileops_walk_push(w, fd, 0, depth);
}

int
fileops_walk_step(struct fileops_walk *w, int budget, fileops_list_fn fn,
    void *arg)
{
	struct fileops_level	*lev;

	while (w->nlev > 0) {
		lev = &w->lev[w->nlev - 1];
		if (lev->i < lev->n && w->count >= FILES_LIST_MAX)
			w->truncated = true;
		if (lev->i == lev->n || w->truncated) {
			fileops_walk_pop(w);
			continue;
		}
		if (budget-- <= 0)
			return 1;
		if (fileops_walk_one(w, lev->names[lev->i++], fn, arg) == -1)
			return -1;
	}
	return 0;
}

void
fileops_walk_close(struct fileops_walk *w)
{
	while (w->nlev > 0)
		fileops_walk_pop(w);
}

int
fileops_list(const struct files_root *r, const char *rel, int depth,
    fileops_list_fn fn, void *arg, bool *truncated)
{
	struct fileops_walk	*w;
	int			 rc, saved;

	if ((w = malloc(sizeof(*w))) == NULL)
		return -1;
	if ((rc = fileops_walk_open(w, r, rel, depth)) == 0)
		rc = fileops_walk_step(w, INT_MAX, fn, arg);
	saved = errno;
	*truncated = w->truncated;
	fileops_walk_close(w);
	free(w);
	errno = saved;
	return rc;
}


/* ------------------------------------------------------------------ */
/* Creating */

int
fileops_mkdir(const struct files_root *r, const char *rel, bool parents,
    mode_t mode)
{
	char	name[NAME_MAX + 1];
	int	fd, rc;

	if (parents) {
		if ((fd = files_mkdirs(r, rel, mode)) == -1)
			return -1;
		return close(fd);
	}
	if (strcmp(rel, ".") == 0) {
		errno = EEXIST;
		return -1;
	}
	if ((fd = files_parent(r, rel, name)) == -1)
		return -1;
	rc = mkdirat(fd, name, mode);
	files_close(fd);
	return rc;
}

int
fileops_mkdirs_owned(const struct files_root *r, const char *rel, mode_t mode,
    uid_t uid, gid_t gid)
{
	int	fd;

	if (strcmp(rel, ".") == 0)
		return 0;
	if ((fd = files_mkdirs_owned(r, rel, mode, uid, gid)) == -1)
		return -1;
	return close(fd);
}


/* ------------------------------------------------------------------ */
/* Delete and move */

static int
delete_with(const struct files_root *r, const char *rel, bool recursive,
    int (*rmtree)(int, const char *))
{
	struct stat	st;
	char		name[NAME_MAX + 1];
	int		fd, rc;

	if ((fd = files_parent(r, rel, name)) == -1)
		return -1;
	if ((rc = fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW)) == 0) {
		if (!S_ISDIR(st.st_mode))
			rc = unlinkat(fd, name, 0);
		else if (recursive)
			rc = rmtree(fd, name);
		else if ((rc = unlinkat(fd, name, AT_REMOVEDIR)) == -1 &&
		    errno == EEXIST)
			errno = ENOTEMPTY;	/* POSIX allows either */
	}
	files_close(fd);
	return rc;
}

int
fileops_delete(const struct files_root *r, const char *rel, bool recursive)
{
	return delete_with(r, rel, recursive, fsutil_rmtree);
}

/*
 * The child holds only the root's fd and deletes with a walk whose fds
 * and memory do not grow with the tree's depth; its exit status carries
 * errno (all below 256).  Its memory and its time are its own: the loop
 * only waits for SIGCHLD.
 */
pid_t
fileops_delete_spawn(const struct files_root *r, const char *rel)
{
	int	keep[1] = { r->fd };
	pid_t	pid;

	if ((pid = spawn_helper(keep, 1)) != 0)
		return pid;
	if (delete_with(r, rel, true, fsutil_rmtree_flat) == 0)
		_exit(0);
	_exit(errno > 0 && errno < 256 ? errno : EIO);
}

int
fileops_delete_status(int wstatus)
{
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
		return 0;
	errno = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : EINTR;
	return -1;
}

int
fileops_move(const struct files_root *r, const char *from, const char *to,
    bool overwrite)
{
	char	fname[NAME_MAX + 1], tname[NAME_MAX + 1];
	int	ffd, tfd = -1, rc = -1;

	if ((ffd = files_parent(r, from, fname)) == -1)
		return -1;
	if ((tfd = files_parent(r, to, tname)) == -1)
		goto done;
	rc = renameat2(ffd, fname, tfd, tname, overwrite ? 0 : RENAME_NOREPLACE);
	/*
	 * A file system without RENAME_NOREPLACE says EINVAL (as does a
	 * directory moved into itself, which the plain rename says again):
	 * look, then rename, with the small race that leaves.
	 */
	if (rc == -1 && errno == EINVAL && !overwrite) {
		if (faccessat(tfd, tname, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			errno = EEXIST;
		else
			rc = renameat(ffd, fname, tfd, tname);
	}
done:
	files_close(ffd);
	if (tfd != -1)
		files_close(tfd);
	return rc;
}
