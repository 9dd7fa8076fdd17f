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

struct fileops_lister {
	fileops_list_fn	 fn;
	void		*arg;
	int		 count;
	bool		 truncated;
};

static int	fileops_name_cmp(const void *, const void *);
static int	fileops_names(DIR *, size_t, char ***, size_t *);
static int	fileops_list_dir(struct fileops_lister *, int, const char *,
		    int);
static int	fileops_list_one(struct fileops_lister *, int, const char *,
		    const char *, int);

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

/* One entry of dfd, and below it when it is a directory and depth > 1. */
static int
fileops_list_one(struct fileops_lister *l, int dfd, const char *prefix,
    const char *name, int depth)
{
	struct stat	 st;
	char		 path[PATH_MAX], target[PATH_MAX];
	ssize_t		 n = -1;
	int		 sub;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return 0;			/* gone since readdir */
	if (snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "/" : "",
	    name) >= (int)sizeof(path))
		return 0;
	if (S_ISLNK(st.st_mode) &&
	    (n = readlinkat(dfd, name, target, sizeof(target) - 1)) >= 0)
		target[n] = '\0';
	if (l->fn(l->arg, path, &st, n >= 0 ? target : NULL) == -1)
		return -1;
	l->count++;
	if (!S_ISDIR(st.st_mode) || depth <= 1)
		return 0;
	/* O_NOFOLLOW: a link swapped in for the directory is not entered. */
	sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub == -1)
		return 0;			/* listed, not entered */
	return fileops_list_dir(l, sub, path, depth - 1);
}

/* The entries of dfd (ours to close), names prefixed with prefix. */
static int
fileops_list_dir(struct fileops_lister *l, int dfd, const char *prefix,
    int depth)
{
	DIR	*d;
	char	**names;
	size_t	 n = 0, i;
	int	 rc = 0, saved;

	if ((d = fdopendir(dfd)) == NULL) {
		saved = errno;
		close(dfd);
		errno = saved;
		return -1;
	}
	/* One more than fits: there were more entries than shown. */
	if (fileops_names(d, FILES_LIST_MAX - l->count + 1, &names, &n) == -1) {
		saved = errno;
		closedir(d);
		errno = saved;
		return -1;
	}
	for (i = 0; i < n && rc == 0; i++) {
		if (l->count >= FILES_LIST_MAX) {
			l->truncated = true;
			break;
		}
		rc = fileops_list_one(l, dirfd(d), prefix, names[i], depth);
	}
	saved = errno;
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	closedir(d);
	errno = saved;
	return rc;
}

int
fileops_list(const struct files_root *r, const char *rel, int depth,
    fileops_list_fn fn, void *arg, bool *truncated)
{
	struct fileops_lister	l = { fn, arg, 0, false };
	int			fd;

	if (depth < 1 || depth > FILES_LIST_DEPTH_MAX) {
		errno = EINVAL;
		return -1;
	}
	if ((fd = files_open(r, rel, O_RDONLY | O_DIRECTORY, 0)) == -1)
		return -1;
	if (fileops_list_dir(&l, fd, "", depth) == -1)
		return -1;
	*truncated = l.truncated;
	return 0;
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

int
fileops_delete(const struct files_root *r, const char *rel, bool recursive)
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
			rc = fsutil_rmtree(fd, name);
		else if ((rc = unlinkat(fd, name, AT_REMOVEDIR)) == -1 &&
		    errno == EEXIST)
			errno = ENOTEMPTY;	/* POSIX allows either */
	}
	files_close(fd);
	return rc;
}

/*
 * The child holds only the root's fd; its exit status carries errno (all
 * below 256).  Its memory and its time are its own: the loop only waits
 * for SIGCHLD.
 */
pid_t
fileops_delete_spawn(const struct files_root *r, const char *rel)
{
	int	keep[1] = { r->fd };
	pid_t	pid;

	if ((pid = spawn_helper(keep, 1)) != 0)
		return pid;
	if (fileops_delete(r, rel, true) == 0)
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
