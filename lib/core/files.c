/*
 * files.c: the confinement resolver and the file operations behind the
 * file routes.  See files.h for the contract.
 */
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/codec.h"
#include "base/fsutil.h"
#include "base/tunables.h"
#include "files.h"
#include "sys/child.h"
#include "sys/spawn.h"

/* One of tend's temp files (files.h, files_tmp_state). */
struct files_tmp {
	dev_t			 dev;		/* of its directory */
	ino_t			 ino;
	enum files_tmp_state	 state;
	char			 name[NAME_MAX + 1];
};

static struct files_tmp	files_tmps[FILES_TMP_KEPT];
static int		files_tmp_next;

struct files_lister {
	struct cJSON	*arr;
	int		 count;
	bool		 truncated;
};

static void	files_close(int);
static int	files_hexval(int);
static int	files_split(const char *, char *, size_t, char *);
static int	files_parent(const struct files_root *, const char *, char *);
static int	files_mkdirs(const struct files_root *, const char *, mode_t);
static int	files_open_file(const struct files_root *, const char *, int,
		    mode_t, struct stat *, bool *);
static int	files_reopen(const struct files_root *, const char *, int,
		    const struct stat *);
static int	files_range_num(const char *, size_t, uint64_t *);
static int	files_name_cmp(const void *, const void *);
static int	files_names(DIR *, size_t, char ***, size_t *);
static int	files_list_dir(struct files_lister *, int, const char *, int);
static int	files_list_one(struct files_lister *, int, const char *,
		    const char *, int);
static void	files_tmp_note(struct files_put *);
static void	files_tmp_set(struct files_put *, enum files_tmp_state);
static int	files_put_tmp(struct files_put *);
static int	files_put_append(struct files_put *, const struct files_root *,
		    const char *, mode_t);

/* close(2), errno kept: for cleanup after a failure. */
static void
files_close(int fd)
{
	int	saved = errno;

	close(fd);
	errno = saved;
}

/* ------------------------------------------------------------------ */
/* Errors */

struct files_err
files_errmap(int err)
{
	struct files_err	e = { 500, "internal", false };

	switch (err) {
	case ENOENT:
		e.status = 404, e.code = "not_found";
		break;
	case ELOOP:
		e.outside = true;
		/* FALLTHROUGH */
	case EACCES:
	case EPERM:
	case EROFS:
		e.status = 403, e.code = "forbidden";
		break;
	case EEXIST:
	case ENOTEMPTY:
	case EBUSY:
	case ETXTBSY:
		e.status = 409, e.code = "conflict";
		break;
	case EXDEV:
		e.status = 409, e.code = "cross_device";
		break;
	case ENOSPC:
	case EDQUOT:
		e.status = 507, e.code = "no_space";
		break;
	case EFBIG:
		e.status = 413, e.code = "too_large";
		break;
	case EISDIR:
	case ENOTDIR:
	case EINVAL:
	case ENAMETOOLONG:
		e.status = 400, e.code = "invalid_request";
		break;
	case EMFILE:
	case ENFILE:
	case ENOMEM:
	case EAGAIN:
		e.status = 503, e.code = "busy";
		break;
	}
	return e;
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

static int
files_hexval(int ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
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
			if ((hi = files_hexval(s[i + 1])) == -1 ||
			    (lo = files_hexval(s[i + 2])) == -1) {
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

/*
 * "a/b/c" to "a/b" and "c", "c" to "." and "c" (name holds NAME_MAX+1).
 */
static int
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

/* rel's directory, opened (through links); its last component in name. */
static int
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

/*
 * A regular file (or, reading, a directory) opened with flags, looked
 * at first through O_PATH so that nothing else is ever opened: opening a
 * FIFO blocks, opening a device can act.  With O_CREAT a missing file is
 * made (O_EXCL: never through a link planted meanwhile), *created set.
 */
static int
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

const char *
files_type(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "char";
	case S_IFBLK:
		return "block";
	}
	return "unknown";
}

/* ------------------------------------------------------------------ */
/* Range */

/* Digits only, [s, s+n): 0, or -1 (empty, junk, too large). */
static int
files_range_num(const char *s, size_t n, uint64_t *v)
{
	char	buf[24];

	if (n == 0 || n >= sizeof(buf))
		return -1;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return codec_parse_u64(buf, v);
}

enum files_range
files_range(const char *h, uint64_t size, uint64_t *first, uint64_t *last)
{
	const char	*spec, *dash, *end;
	uint64_t	 a, b;

	if (h == NULL || strncasecmp(h, "bytes=", 6) != 0)
		return FILES_RANGE_FULL;
	spec = h + 6;
	while (*spec == ' ')
		spec++;
	end = spec + strlen(spec);
	while (end > spec && end[-1] == ' ')
		end--;
	if (memchr(spec, ',', end - spec) != NULL ||
	    (dash = memchr(spec, '-', end - spec)) == NULL)
		return FILES_RANGE_FULL;
	if (dash == spec) {
		/* The last n bytes. */
		if (files_range_num(dash + 1, end - dash - 1, &b) == -1)
			return FILES_RANGE_FULL;
		if (b == 0 || size == 0)
			return FILES_RANGE_UNSATISFIABLE;
		*first = b >= size ? 0 : size - b;
		*last = size - 1;
		return FILES_RANGE_PART;
	}
	if (files_range_num(spec, dash - spec, &a) == -1)
		return FILES_RANGE_FULL;
	if (dash + 1 == end)
		b = UINT64_MAX;
	else if (files_range_num(dash + 1, end - dash - 1, &b) == -1 || b < a)
		return FILES_RANGE_FULL;
	if (a >= size)
		return FILES_RANGE_UNSATISFIABLE;
	*first = a;
	*last = b >= size ? size - 1 : b;
	return FILES_RANGE_PART;
}

/* ------------------------------------------------------------------ */
/* Listing */

struct cJSON *
files_entry(const char *name, const struct stat *st, const char *target)
{
	char	 mtime[TIME_MAX];
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	codec_time(mtime, (int64_t)st->st_mtim.tv_sec * 1000 +
	    st->st_mtim.tv_nsec / 1000000);
	if (cJSON_AddStringToObject(o, "name", name) == NULL ||
	    cJSON_AddStringToObject(o, "type", files_type(st->st_mode)) ==
	    NULL ||
	    cJSON_AddNumberToObject(o, "size", (double)st->st_size) == NULL ||
	    cJSON_AddNumberToObject(o, "mode", st->st_mode & 07777) == NULL ||
	    cJSON_AddStringToObject(o, "mtime", mtime) == NULL ||
	    (target != NULL &&
	    cJSON_AddStringToObject(o, "target", target) == NULL)) {
		cJSON_Delete(o);
		return NULL;
	}
	return o;
}

static int
files_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * At most max names of d (not "." or ".."), malloc'd, sorted: the list
 * never holds more than a listing could show.  *vp is NULL for an empty
 * directory.
 */
static int
files_names(DIR *d, size_t max, char ***vp, size_t *np)
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
		qsort(v, n, sizeof(*v), files_name_cmp);
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
files_list_one(struct files_lister *l, int dfd, const char *prefix,
    const char *name, int depth)
{
	struct stat	 st;
	char		 path[PATH_MAX], target[PATH_MAX];
	ssize_t		 n = -1;
	cJSON		*o;
	int		 sub;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1)
		return 0;			/* gone since readdir */
	if (snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "/" : "",
	    name) >= (int)sizeof(path))
		return 0;
	if (S_ISLNK(st.st_mode) &&
	    (n = readlinkat(dfd, name, target, sizeof(target) - 1)) >= 0)
		target[n] = '\0';
	if ((o = files_entry(path, &st, n >= 0 ? target : NULL)) == NULL)
		return -1;
	cJSON_AddItemToArray(l->arr, o);
	l->count++;
	if (!S_ISDIR(st.st_mode) || depth <= 1)
		return 0;
	/* O_NOFOLLOW: a link swapped in for the directory is not entered. */
	sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub == -1)
		return 0;			/* listed, not entered */
	return files_list_dir(l, sub, path, depth - 1);
}

/* The entries of dfd (ours to close), names prefixed with prefix. */
static int
files_list_dir(struct files_lister *l, int dfd, const char *prefix,
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
	if (files_names(d, FILES_LIST_MAX - l->count + 1, &names, &n) == -1) {
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
		rc = files_list_one(l, dirfd(d), prefix, names[i], depth);
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
files_list(const struct files_root *r, const char *rel, int depth,
    struct cJSON *arr, bool *truncated)
{
	struct files_lister	l = { arr, 0, false };
	int			fd;

	if (depth < 1 || depth > FILES_LIST_DEPTH_MAX) {
		errno = EINVAL;
		return -1;
	}
	if ((fd = files_open(r, rel, O_RDONLY | O_DIRECTORY, 0)) == -1)
		return -1;
	if (files_list_dir(&l, fd, "", depth) == -1)
		return -1;
	*truncated = l.truncated;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Creating */

/*
 * mkdir -p of rel, each prefix resolved again from the root (a link on
 * the way is followed as any lookup follows it, confined), each missing
 * one made in the directory its parent resolved to.  Its fd.
 */
static int
files_mkdirs(const struct files_root *r, const char *rel, mode_t mode)
{
	char	 buf[PATH_MAX], *comp, *slash;
	int	 fd, prev;

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
		fd = files_open(r, buf, O_RDONLY | O_DIRECTORY, 0);
		if (fd == -1 && errno == ENOENT &&
		    (mkdirat(prev, comp, mode) == 0 || errno == EEXIST))
			fd = files_open(r, buf, O_RDONLY | O_DIRECTORY, 0);
		files_close(prev);
		if (fd == -1 || slash == NULL)
			return fd;
		*slash = '/';
		prev = fd;
	}
}

int
files_mkdir(const struct files_root *r, const char *rel, bool parents,
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

/*
 * One component at a time, each prefix resolved again from the root as
 * files_mkdir does; one that mkdir made is chowned through an fd of
 * what was made (never through a link swapped in: O_NOFOLLOW).
 */
int
files_mkdirs_owned(const struct files_root *r, const char *rel, mode_t mode,
    uid_t uid, gid_t gid)
{
	char	 buf[PATH_MAX], *slash;
	int	 fd, rc;

	if (strcmp(rel, ".") == 0)
		return 0;
	if (snprintf(buf, sizeof(buf), "%s", rel) >= (int)sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (slash = buf; slash != NULL; ) {
		if ((slash = strchr(slash, '/')) != NULL)
			*slash = '\0';
		rc = files_mkdir(r, buf, false, mode);
		if (rc == -1 && errno != EEXIST)
			return -1;
		if (rc == 0 && uid != (uid_t)-1) {
			fd = files_open(r, buf, O_PATH | O_NOFOLLOW |
			    O_DIRECTORY, 0);
			if (fd == -1)
				return -1;
			rc = fchownat(fd, "", uid, gid, AT_EMPTY_PATH);
			files_close(fd);
			if (rc == -1)
				return -1;
		}
		if (slash != NULL)
			*slash++ = '/';
	}
	/* The last one must be a directory (EEXIST said only: a name). */
	if ((fd = files_open(r, rel, O_PATH | O_DIRECTORY, 0)) == -1)
		return -1;
	close(fd);
	return 0;
}

/* ------------------------------------------------------------------ */
/* tend's temp files, as watchers see them */

/*
 * A ring, newest last: a watcher reads the kernel's events a little
 * after they happened, so an entry outlives its upload; the oldest is
 * reused.  Lookups are rare (only names files_tmp_name likes).
 */
static void
files_tmp_note(struct files_put *p)
{
	struct files_tmp	*t;
	struct stat		 st;

	p->slot = -1;
	if (fstat(p->dirfd, &st) == -1)
		return;
	p->slot = files_tmp_next;
	files_tmp_next = (files_tmp_next + 1) % FILES_TMP_KEPT;
	t = &files_tmps[p->slot];
	t->dev = st.st_dev;
	t->ino = st.st_ino;
	t->state = FILES_TMP_LIVE;
	snprintf(t->name, sizeof(t->name), "%s", p->tmp);
}

/* The entry is p's still if the ring has not come round to it again. */
static void
files_tmp_set(struct files_put *p, enum files_tmp_state state)
{
	if (p->slot >= 0 && strcmp(files_tmps[p->slot].name, p->tmp) == 0)
		files_tmps[p->slot].state = state;
	p->slot = -1;
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

/* ------------------------------------------------------------------ */
/* Put */

/*
 * ".NAME.XXXXXX" beside NAME, new (O_EXCL: a name someone else took, or
 * a link planted there, is never opened).
 */
static int
files_put_tmp(struct files_put *p)
{
	static const char	abc[] = "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	char			*x;
	int			 tries, i;

	for (tries = 0; tries < FILES_TMP_TRIES; tries++) {
		snprintf(p->tmp, sizeof(p->tmp), ".%.*s.XXXXXX",
		    NAME_MAX - 8, p->name);
		x = p->tmp + strlen(p->tmp) - 6;
		for (i = 0; i < 6; i++)
			x[i] = abc[arc4random_uniform(sizeof(abc) - 1)];
		p->fd = openat(p->dirfd, p->tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (p->fd != -1 || errno != EEXIST)
			break;
	}
	if (p->fd == -1)
		p->tmp[0] = '\0';
	return p->fd == -1 ? -1 : 0;
}

/* Append mode: the file itself (through links), made if missing. */
static int
files_put_append(struct files_put *p, const struct files_root *r,
    const char *rel, mode_t mode)
{
	struct stat	st;

	p->fd = files_open_file(r, rel, O_WRONLY | O_APPEND | O_CREAT, 0600,
	    &st, &p->created);
	if (p->fd == -1)
		return -1;
	if (p->created && fchmod(p->fd, mode) == -1) {
		files_put_abort(p);
		return -1;
	}
	return 0;
}

int
files_put_begin(struct files_put *p, const struct files_root *r,
    const char *rel, int flags, int mode)
{
	struct stat	st;
	char		parent[PATH_MAX];
	bool		old = false;

	memset(p, 0, sizeof(*p));
	p->dirfd = p->fd = p->slot = -1;
	p->flags = flags;
	if (mode != FILES_MODE_KEEP && (mode < 0 || mode > 07777)) {
		errno = EINVAL;
		return -1;
	}
	if (strcmp(rel, ".") == 0) {
		errno = EISDIR;
		return -1;
	}
	if (files_split(rel, parent, sizeof(parent), p->name) == -1)
		return -1;
	if (flags & FILES_PUT_PARENTS) {
		if ((p->dirfd = files_mkdirs(r, parent, 0755)) == -1)
			return -1;
	} else if ((p->dirfd = files_open(r, parent, O_RDONLY | O_DIRECTORY,
	    0)) == -1)
		return -1;
	if (flags & FILES_PUT_APPEND)
		return files_put_append(p, r, rel,
		    mode == FILES_MODE_KEEP ? 0644 : (mode_t)mode);
	if (fstatat(p->dirfd, p->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode)) {
			files_put_abort(p);
			errno = EISDIR;
			return -1;
		}
		old = S_ISREG(st.st_mode);
	}
	if (mode == FILES_MODE_KEEP)
		mode = old ? (int)(st.st_mode & 07777) : 0644;
	if (files_put_tmp(p) == -1)
		goto fail;
	files_tmp_note(p);
	if (fchmod(p->fd, (mode_t)mode) == -1)
		goto fail;
	/* Root replacing someone's file: it stays theirs. */
	if (old && geteuid() == 0)
		(void)fchown(p->fd, st.st_uid, st.st_gid);
	return 0;
fail:
	files_put_abort(p);
	return -1;
}

static void
files_flushed(pid_t pid, int wstatus, void *arg)
{
	struct files_put	*p = arg;

	(void)pid;
	p->flusher = 0;
	if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
		p->flusherr = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : EIO;
}

/*
 * What is written so far, to stable storage, every FILES_PUT_FLUSH bytes:
 * the fsync at commit then has at most that much left, and holds the
 * loop no longer.  (The fsync of a whole upload held it as long as the
 * disk took to make all of it stable: 350-400 ms for 256 MiB on a disk
 * whose cache takes writes at once; writeback started along the way did
 * not help, the cache's flush was the cost.)  A child does it, so that
 * the loop neither waits nor stops taking the upload meanwhile.  While
 * one still works the next waits, up to FILES_PUT_BEHIND bytes not yet
 * flushed; past that, or when no child can be forked, the loop does it
 * itself.  True when a flush was made or begun.
 *
 * A write-back error is told once to each open file that syncs: the
 * child syncs through a file of its own (reopened through /proc), so
 * that the fsync at commit still hears of it; its exit status (errno)
 * and the loop's own flush are kept in flusherr, which fails the
 * commit as well.
 */
static bool
files_put_flush(struct files_put *p)
{
	char	path[32];
	pid_t	pid;
	int	keep = p->fd, fd;

	if (p->flusher != 0 && p->unflushed < FILES_PUT_BEHIND)
		return false;
	if (p->flusher == 0 && (pid = spawn_helper(&keep, 1)) != -1) {
		if (pid == 0) {
			snprintf(path, sizeof(path), "/proc/self/fd/%d", keep);
			if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
				fd = keep;
			_exit(fdatasync(fd) == 0 ? 0 : errno > 0 && errno < 256 ?
			    errno : EIO);
		}
		if (child_watch(pid, files_flushed, p) == 0) {
			p->flusher = pid;
			return true;
		}
		/* Nobody would hear of it: it goes (reaped as an orphan). */
		(void)kill(pid, SIGKILL);
	}
	if (fdatasync(p->fd) == -1 && p->flusherr == 0)
		p->flusherr = errno;
	return true;
}

int
files_put_write(struct files_put *p, const void *d, size_t n)
{
	if (fsutil_write_all(p->fd, d, n) == -1)
		return -1;
	p->off += n;
	p->unflushed += n;
	if (!(p->flags & FILES_PUT_APPEND) && p->unflushed >= FILES_PUT_FLUSH &&
	    files_put_flush(p))
		p->unflushed = 0;
	return 0;
}

int
files_put_commit(struct files_put *p, bool *created)
{
	int	fd = p->fd, saved, rc;

	p->fd = -1;
	rc = fsync(fd);
	if (rc == 0 && p->flusherr != 0) {
		errno = p->flusherr;	/* a flush along the way failed */
		rc = -1;
	}
	if (rc == -1) {
		files_close(fd);
		goto fail;
	}
	if (close(fd) == -1)
		goto fail;
	if (p->flags & FILES_PUT_APPEND) {
		*created = p->created;
		files_put_abort(p);
		return 0;
	}
	/* NOREPLACE first: whether a file was there is then exact. */
	rc = renameat2(p->dirfd, p->tmp, p->dirfd, p->name, RENAME_NOREPLACE);
	*created = rc == 0;
	if (rc == -1 && (errno == EEXIST || errno == EINVAL)) {
		*created = errno == EINVAL &&
		    faccessat(p->dirfd, p->name, F_OK, AT_SYMLINK_NOFOLLOW) == -1;
		rc = renameat(p->dirfd, p->tmp, p->dirfd, p->name);
	}
	if (rc == -1)
		goto fail;
	files_tmp_set(p, *created ? FILES_TMP_CREATED : FILES_TMP_REPLACED);
	p->tmp[0] = '\0';
	files_put_abort(p);
	return 0;
fail:
	saved = errno;
	files_put_abort(p);
	errno = saved;
	return -1;
}

void
files_put_abort(struct files_put *p)
{
	int	saved = errno;

	/* A flush still at work finishes alone. */
	if (p->flusher != 0)
		child_unwatch(p->flusher);
	p->flusher = 0;
	if (p->fd != -1)
		close(p->fd);
	if (p->tmp[0] != '\0' && p->dirfd != -1) {
		files_tmp_set(p, FILES_TMP_ABORTED);
		(void)unlinkat(p->dirfd, p->tmp, 0);
	}
	if (p->dirfd != -1)
		close(p->dirfd);
	p->fd = p->dirfd = -1;
	p->tmp[0] = '\0';
	errno = saved;
}

/* ------------------------------------------------------------------ */
/* Delete and move */

int
files_delete(const struct files_root *r, const char *rel, bool recursive)
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

int
files_move(const struct files_root *r, const char *from, const char *to,
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
