/*
 * files.c: the root, paths in it, and the confinement resolver; tend's
 * own temp files as watchers see them.  See files.h for the contract.
 */
#include <linux/openat2.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "base/codec.h"
#include "base/fsutil.h"
#include "base/tunables.h"
#include "files.h"

/* One of tend's temp files (files.h, files_tmp_state). */
struct files_tmp {
	dev_t			 dev;		/* of its directory */
	ino_t			 ino;
	enum files_tmp_state	 state;
	char			 name[NAME_MAX + 1];
};

static struct files_tmp	files_tmps[FILES_TMP_KEPT];
static int		files_tmp_next;

static int	files_reopen(const struct files_root *, const char *, int,
		    const struct stat *);

/* close(2), errno kept: for cleanup after a failure. */
void
files_close(int fd)
{
	int	saved = errno;

	close(fd);
	errno = saved;
}


/* ------------------------------------------------------------------ */
/* The root and paths */

int
files_root_open(struct files_root *r, const char *path)
{
	struct stat	st, sys;

	r->fd = -1;
	if (snprintf(r->path, sizeof(r->path), "%s", path) >=
	    (int)sizeof(r->path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (files_normalize(r->path) == -1)
		return -1;
	r->len = strlen(r->path);
	if ((r->fd = open(r->path, O_PATH | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	/* The system root: nothing is outside, absolute links must work. */
	r->resolve = RESOLVE_BENEATH;
	if (fstat(r->fd, &st) == 0 && stat("/", &sys) == 0 &&
	    st.st_dev == sys.st_dev && st.st_ino == sys.st_ino)
		r->resolve = RESOLVE_IN_ROOT;
	return 0;
}

void
files_root_close(struct files_root *r)
{
	if (r->fd != -1)
		close(r->fd);
	r->fd = -1;
}


int
files_decode(const char *s, size_t n, char *out, size_t cap)
{
	size_t	i, o = 0;
	int	hi, lo, ch;

	for (i = 0; i < n; i++) {
		ch = (unsigned char)s[i];
		if (ch == '%') {
			if (i + 2 >= n) {
				errno = EINVAL;
				return -1;
			}
			if ((hi = codec_hexval(s[i + 1])) == -1 ||
			    (lo = codec_hexval(s[i + 2])) == -1) {
				errno = EINVAL;
				return -1;
			}
			ch = hi << 4 | lo;
			i += 2;
		}
		if (ch == '\0') {
			errno = EINVAL;
			return -1;
		}
		if (o + 1 >= cap) {
			errno = ENAMETOOLONG;
			return -1;
		}
		out[o++] = (char)ch;
	}
	if (cap == 0) {
		errno = ENAMETOOLONG;
		return -1;
	}
	out[o] = '\0';
	return 0;
}

int
files_normalize(char *path)
{
	char	*r = path, *w = path, *seg;
	size_t	 len;

	if (path[0] != '/') {
		errno = EINVAL;
		return -1;
	}
	while (*r != '\0') {
		while (*r == '/')
			r++;
		seg = r;
		while (*r != '/' && *r != '\0')
			r++;
		len = r - seg;
		if (len == 0 || (len == 1 && seg[0] == '.'))
			continue;
		if (len == 2 && seg[0] == '.' && seg[1] == '.') {
			while (w > path && *--w != '/')
				;
			continue;
		}
		*w++ = '/';
		memmove(w, seg, len);
		w += len;
	}
	if (w == path)
		*w++ = '/';
	*w = '\0';
	return 0;
}

int
files_rel(const struct files_root *r, const char *abs, char *rel,
    size_t cap)
{
	const char	*rest;

	if (r->len == 1)
		rest = abs + 1;
	else if (strncmp(abs, r->path, r->len) == 0 &&
	    (abs[r->len] == '/' || abs[r->len] == '\0'))
		rest = abs + r->len + (abs[r->len] == '/');
	else {
		errno = ELOOP;
		return -1;
	}
	if (snprintf(rel, cap, "%s", *rest ? rest : ".") >= (int)cap) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

int
files_path(const struct files_root *r, const char *enc, size_t n,
    char *rel, size_t cap)
{
	char	abs[PATH_MAX];

	if (n == 0) {
		errno = EINVAL;
		return -1;
	}
	if (files_decode(enc, n, abs, sizeof(abs)) == -1 ||
	    files_normalize(abs) == -1)
		return -1;
	return files_rel(r, abs, rel, cap);
}

int
files_split(const char *rel, char *parent, size_t cap, char *name)
{
	const char	*slash = strrchr(rel, '/');
	const char	*base = slash != NULL ? slash + 1 : rel;
	size_t		 plen = slash != NULL ? (size_t)(slash - rel) : 1;

	if (strlen(base) > NAME_MAX || plen >= cap) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (*base == '\0' || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
		errno = EINVAL;
		return -1;
	}
	memcpy(parent, slash != NULL ? rel : ".", plen);
	parent[plen] = '\0';
	strcpy(name, base);
	return 0;
}

int
files_parent(const struct files_root *r, const char *rel, char *name)
{
	char	parent[PATH_MAX];

	if (strcmp(rel, ".") == 0) {
		errno = EBUSY;
		return -1;
	}
	if (files_split(rel, parent, sizeof(parent), name) == -1)
		return -1;
	return files_open(r, parent, O_RDONLY | O_DIRECTORY, 0);
}

/* ------------------------------------------------------------------ */
/* Resolving and reading */

int
files_open(const struct files_root *r, const char *rel, int flags,
    mode_t mode)
{
	int	fd;

	fd = fsutil_resolve(r->fd, rel, flags, mode,
	    r->resolve | RESOLVE_NO_MAGICLINKS);
	/* Out of the root: ELOOP, so that EXDEV keeps meaning a move. */
	if (fd == -1 && errno == EXDEV)
		errno = ELOOP;
	return fd;
}

int
files_stat(const struct files_root *r, const char *rel, bool follow,
    struct stat *st)
{
	int	fd, rc, saved;

	fd = files_open(r, rel, O_PATH | (follow ? 0 : O_NOFOLLOW), 0);
	if (fd == -1)
		return -1;
	rc = fstat(fd, st);
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}

/*
 * rel opened again with flags, to what the O_PATH look found (st): a
 * file swapped in meanwhile is EAGAIN, and the caller looks again.
 */
static int
files_reopen(const struct files_root *r, const char *rel, int flags,
    const struct stat *st)
{
	struct stat	now;
	int		fd;

	/* O_NONBLOCK: a FIFO swapped in must not block the open. */
	fd = files_open(r, rel, flags | O_NONBLOCK | O_NOCTTY, 0);
	if (fd == -1)
		return -1;
	if (fstat(fd, &now) == -1 || now.st_dev != st->st_dev ||
	    now.st_ino != st->st_ino) {
		close(fd);
		errno = EAGAIN;
		return -1;
	}
	return fd;
}

int
files_open_file(const struct files_root *r, const char *rel, int flags,
    mode_t mode, struct stat *st, bool *created)
{
	int	fd, pfd, tries, last = EAGAIN;

	*created = false;
	for (tries = 0; tries < 3; tries++) {
		if ((pfd = files_open(r, rel, O_PATH, 0)) == -1) {
			if (errno != ENOENT || !(flags & O_CREAT))
				return -1;
			fd = files_open(r, rel, flags | O_EXCL, mode);
			/* Made meanwhile, or a dangling link: look again. */
			if (fd == -1 && (last = errno) == EEXIST)
				continue;
			if (fd != -1 && fstat(fd, st) == -1) {
				files_close(fd);
				return -1;
			}
			*created = fd != -1;
			return fd;
		}
		if (fstat(pfd, st) == -1) {
			files_close(pfd);
			return -1;
		}
		if (S_ISDIR(st->st_mode) && (flags & O_ACCMODE) == O_RDONLY) {
			fd = openat(pfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			files_close(pfd);
			return fd;
		}
		close(pfd);
		if (!S_ISREG(st->st_mode)) {
			errno = S_ISDIR(st->st_mode) ? EISDIR : EINVAL;
			return -1;
		}
		fd = files_reopen(r, rel, flags & ~O_CREAT, st);
		if (fd != -1 || (last = errno) != EAGAIN)
			return fd;
	}
	errno = last;		/* EEXIST: a link there to nothing */
	return -1;
}

int
files_open_read(const struct files_root *r, const char *rel,
    struct stat *st)
{
	bool	created;

	return files_open_file(r, rel, O_RDONLY, 0, st, &created);
}

/*
 * Walked down once from the root, each component opened from its
 * parent's fd: one name, never "..", no link followed (O_NOFOLLOW), so
 * the step stays beneath the root and costs the same at any depth.  A
 * link (ELOOP) or a non-directory (ENOTDIR) on the way sends that prefix
 * to the resolver from the root, which follows a link as any lookup
 * does, confined, or says what is wrong.
 */
int
files_mkdirs_owned(const struct files_root *r, const char *rel, mode_t mode,
    uid_t uid, gid_t gid)
{
	const int	 dflags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
	char		 buf[PATH_MAX], *comp, *slash;
	bool		 made;
	int		 fd, prev;

	fd = files_open(r, rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd != -1 || errno != ENOENT)
		return fd;
	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((prev = files_open(r, ".", O_RDONLY | O_DIRECTORY, 0)) == -1)
		return -1;
	for (comp = buf; ; comp = slash + 1) {
		if ((slash = strchr(comp, '/')) != NULL)
			*slash = '\0';
		made = false;
		fd = openat(prev, comp, dflags | O_NOFOLLOW);
		if (fd == -1 && errno == ENOENT) {
			if (mkdirat(prev, comp, mode) == 0)
				made = true;
			if (made || errno == EEXIST)
				fd = openat(prev, comp, dflags | O_NOFOLLOW);
		}
		/* One that mkdir made is chowned only as what was made. */
		if (fd == -1 && !made && (errno == ELOOP || errno == ENOTDIR))
			fd = files_open(r, buf, O_RDONLY | O_DIRECTORY, 0);
		if (fd != -1 && made && uid != (uid_t)-1 &&
		    fchown(fd, uid, gid) == -1) {
			files_close(fd);
			fd = -1;
		}
		files_close(prev);
		if (fd == -1 || slash == NULL)
			return fd;
		*slash = '/';
		prev = fd;
	}
}

int
files_mkdirs(const struct files_root *r, const char *rel, mode_t mode)
{
	return files_mkdirs_owned(r, rel, mode, (uid_t)-1, (gid_t)-1);
}


/* ------------------------------------------------------------------ */
/* tend's temp files, as watchers see them */

/*
 * A ring, newest last: a watcher reads the kernel's events a little
 * after they happened, so an entry outlives its upload; the oldest is
 * reused.  Lookups are rare (only names files_tmp_name likes).
 */
int
files_tmp_note(int dirfd, const char *tmp)
{
	struct files_tmp	*t;
	struct stat		 st;
	int			 slot;

	if (fstat(dirfd, &st) == -1)
		return -1;
	slot = files_tmp_next;
	files_tmp_next = (files_tmp_next + 1) % FILES_TMP_KEPT;
	t = &files_tmps[slot];
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->state = FILES_TMP_LIVE;
	snprintf(t->name, sizeof(t->name), "%s", tmp);
	return slot;
}

/* The entry is tmp's still if the ring has not come round to it again. */
void
files_tmp_set(int slot, const char *tmp, enum files_tmp_state state)
{
	if (slot >= 0 && strcmp(files_tmps[slot].name, tmp) == 0)
		files_tmps[slot].state = state;
}

enum files_tmp_state
files_tmp_state(dev_t dev, ino_t ino, const char *name)
{
	int	i;

	for (i = 0; i < FILES_TMP_KEPT; i++)
		if (files_tmps[i].state != FILES_TMP_NONE &&
		    files_tmps[i].ino == ino && files_tmps[i].dev == dev &&
		    strcmp(files_tmps[i].name, name) == 0)
			return files_tmps[i].state;
	return FILES_TMP_NONE;
}

bool
files_tmp_name(const char *name)
{
	size_t	n = strlen(name);

	return n >= 9 && name[0] == '.' && name[n - 7] == '.' &&
	    strspn(name + n - 6, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") == 6;
}

