/*
 * tar_in.c: the hydrate child's extraction (part of the tar module, see
 * tar.h): each entry confined below the root, a file written to a temp
 * and named only once whole, directories' modes and times set last.
 * It runs in the child, which exits with _exit.
 */
#include <sys/stat.h>

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/tunables.h"
#include "tar.h"
#include "tar_int.h"

/* A directory whose mode and times are set after the last entry. */
struct tar_dir {
	char			*rel;
	mode_t			 mode;
	uid_t			 uid;
	gid_t			 gid;
	struct timespec		 ts[2];
};

/* The hydrate child's state. */
struct tar_in {
	struct archive		*a;
	int			 rootfd;
	int			 fd;
	int			 errfd;
	bool			 root;		/* euid 0: owners, setuid kept */
	uint64_t		 total;		/* bytes read from fd */
	long long		 entries;	/* entries extracted whole */
	bool			 tmpfile;	/* O_TMPFILE temps can be named */
	unsigned int		 ntmp;		/* temp names made */
	struct tar_dir		*dirs;
	size_t			 ndirs, capdirs;
	char			 buf[TAR_BLOCK];
};

static la_ssize_t	 tar_in_read(struct archive *, void *, const void **);
static int		 tar_clean(const char *, char *, size_t,
			    const char **);
static int		 tar_split(const char *, char *, char *);
static int		 tar_in_parent(struct tar_in *, const char *, char *,
			    const char **);
static int		 tar_in_clear(int, const char *, const char **);
static int		 tar_in_tmp(struct tar_in *, int, char *, size_t);
static int		 tar_in_name(struct tar_in *, int, int, char *, size_t);
static void		 tar_in_times(struct archive_entry *,
			    struct timespec[2]);
static int		 tar_in_file(struct tar_in *, struct archive_entry *,
			    int, const char *, const char **);
static int		 tar_in_dir(struct tar_in *, struct archive_entry *,
			    int, const char *, const char *, const char **);
static int		 tar_in_link(struct tar_in *, struct archive_entry *,
			    int, const char *, const char **);
static int		 tar_in_hardlink(struct tar_in *, const char *, int,
			    const char *, const char **);
static int		 tar_in_entry(struct tar_in *, struct archive_entry *,
			    const char **);
static void		 tar_in_dirs_fix(struct tar_in *);
static _Noreturn void	 tar_in_report(struct tar_in *, int, int,
			    const char *, ...)
			    __attribute__((format(printf, 4, 5)));
static void		 tar_in_entries(struct tar_in *);

/* ------------------------------------------------------------------ */
/* Hydrate (in the child) */

static la_ssize_t
tar_in_read(struct archive *a, void *arg, const void **buf)
{
	struct tar_in	*in = arg;
	ssize_t		 n;

	do
		n = read(in->fd, in->buf, sizeof(in->buf));
	while (n == -1 && errno == EINTR);
	if (n == -1) {
		archive_set_error(a, errno, "reading the archive: %s",
		    strerror(errno));
		return -1;
	}
	in->total += n;
	*buf = in->buf;
	return n;
}

/*
 * An archive's name, judged: "./" and "//" dropped, into out.  1 for the
 * root itself (nothing to extract), 0, or -1 with *why and errno.
 */
static int
tar_clean(const char *name, char *out, size_t cap, const char **why)
{
	const char	*p, *slash;
	size_t		 o = 0, len;

	if (name == NULL || name[0] == '\0') {
		*why = "an empty name";
		errno = EINVAL;
		return -1;
	}
	if (name[0] == '/') {
		*why = "an absolute name";
		errno = EXDEV;
		return -1;
	}
	for (p = name; *p != '\0'; p = *slash ? slash + 1 : slash) {
		if ((slash = strchr(p, '/')) == NULL)
			slash = p + strlen(p);
		len = slash - p;
		if (len == 0 || (len == 1 && p[0] == '.'))
			continue;
		if (len == 2 && p[0] == '.' && p[1] == '.') {
			*why = "'..' in the name";
			errno = EXDEV;
			return -1;
		}
		if (o + len + 2 > cap) {
			*why = "a name too long";
			errno = ENAMETOOLONG;
			return -1;
		}
		if (o > 0)
			out[o++] = '/';
		memcpy(out + o, p, len);
		o += len;
	}
	out[o] = '\0';
	return o == 0 ? 1 : 0;
}

/* "a/b/c" into "a/b" and "c" (a clean name); "c" into "." and "c". */
static int
tar_split(const char *rel, char *parent, char *base)
{
	const char	*slash = strrchr(rel, '/');

	if (strlen(slash ? slash + 1 : rel) > NAME_MAX)
		return -1;
	if (slash == NULL) {
		strcpy(parent, ".");
		strcpy(base, rel);
	} else {
		memcpy(parent, rel, slash - rel);
		parent[slash - rel] = '\0';
		strcpy(base, slash + 1);
	}
	return 0;
}

/*
 * The directory rel goes in, made if missing, no symlink on the way
 * (fsutil: RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), its last name in base.
 */
static int
tar_in_parent(struct tar_in *in, const char *rel, char *base,
    const char **why)
{
	char	parent[PATH_MAX];
	int	fd;

	if (tar_split(rel, parent, base) == -1) {
		*why = "a name too long";
		errno = ENAMETOOLONG;
		return -1;
	}
	if (strcmp(parent, ".") == 0)
		fd = openat(in->rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	else
		fd = fsutil_opendirs_mode(in->rootfd, parent, 0755);
	if (fd == -1 && errno == ELOOP)
		*why = "it leads through a symlink";
	else if (fd == -1 && (errno == ENOTDIR || errno == EEXIST))
		*why = "a file is in the way of its directory";
	else if (fd == -1 && errno == EXDEV)
		*why = "it leads out of the root";
	return fd;
}

/* Make room for a new base in dfd: what is there goes, unless a directory. */
static int
tar_in_clear(int dfd, const char *base, const char **why)
{
	struct stat	st;
	int		saved;

	if (unlinkat(dfd, base, 0) == 0 || errno == ENOENT)
		return 0;
	saved = errno;
	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode))
		*why = "a directory is in the way";
	errno = saved;
	return -1;
}

static void
tar_in_times(struct archive_entry *e, struct timespec ts[2])
{
	ts[1].tv_sec = archive_entry_mtime(e);
	ts[1].tv_nsec = archive_entry_mtime_nsec(e);
	if (archive_entry_atime_is_set(e)) {
		ts[0].tv_sec = archive_entry_atime(e);
		ts[0].tv_nsec = archive_entry_atime_nsec(e);
	} else
		ts[0] = ts[1];
}

/*
 * The temp a file entry is written to in dfd: unnamed (O_TMPFILE), so
 * that nothing of it outlives the child, killed or not; where the file
 * system has no O_TMPFILE, or without /proc to name one by, a new hidden
 * name (O_EXCL, O_NOFOLLOW) in tmp, else tmp is "".
 */
static int
tar_in_tmp(struct tar_in *in, int dfd, char *tmp, size_t n)
{
	int	fd;

	tmp[0] = '\0';
	if (in->tmpfile) {
		fd = openat(dfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
		if (fd != -1 || (errno != EOPNOTSUPP && errno != EISDIR &&
		    errno != EINVAL))
			return fd;
	}
	do {
		snprintf(tmp, n, ".tend-hydrate.%ld.%u", (long)getpid(),
		    in->ntmp++);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
	} while (fd == -1 && errno == EEXIST);
	if (fd == -1)
		tmp[0] = '\0';
	return fd;
}

/*
 * A name in dfd for the unnamed temp fd, into tmp: linkat by the fd
 * (AT_EMPTY_PATH wants CAP_DAC_READ_SEARCH), else through /proc.
 */
static int
tar_in_name(struct tar_in *in, int dfd, int fd, char *tmp, size_t n)
{
	char	proc[64];
	int	rc;

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	do {
		snprintf(tmp, n, ".tend-hydrate.%ld.%u", (long)getpid(),
		    in->ntmp++);
		rc = linkat(fd, "", dfd, tmp, AT_EMPTY_PATH);
		if (rc == -1 && (errno == EPERM || errno == ENOENT))
			rc = linkat(AT_FDCWD, proc, dfd, tmp,
			    AT_SYMLINK_FOLLOW);
	} while (rc == -1 && errno == EEXIST);
	if (rc == -1)
		tmp[0] = '\0';
	return rc;
}

/*
 * A regular file: its data and attributes into a temp, renamed over
 * base only once whole, so that base is never a part of the entry; the
 * temp goes on any failure (ENOSPC: its blocks come back).  Whatever was
 * at base stays until then; a directory there is refused first.
 */
static int
tar_in_file(struct tar_in *in, struct archive_entry *e, int dfd,
    const char *base, const char **why)
{
	struct timespec	 ts[2];
	struct stat	 st;
	const void	*buf;
	char		 tmp[64];
	size_t		 size, done;
	la_int64_t	 off;
	ssize_t		 w;
	int		 fd, r, saved;

	if (fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode)) {
		*why = "a directory is in the way";
		errno = EISDIR;
		return -1;
	}
	if ((fd = tar_in_tmp(in, dfd, tmp, sizeof(tmp))) == -1)
		return -1;
	/* Blocks at their offsets: holes of a sparse entry stay holes. */
	while ((r = archive_read_data_block(in->a, &buf, &size, &off)) ==
	    ARCHIVE_OK || r == ARCHIVE_WARN) {
		for (done = 0; done < size; done += w) {
			w = pwrite(fd, (const char *)buf + done, size - done,
			    off + done);
			if (w == -1 && errno != EINTR)
				goto fail;
			if (w == -1)
				w = 0;
		}
	}
	if (r != ARCHIVE_EOF) {
		*why = "the archive is cut short";
		errno = EINVAL;
		goto fail;
	}
	tar_in_times(e, ts);
	/* The owner before the mode: a chown clears setuid and setgid. */
	if (ftruncate(fd, archive_entry_size(e)) == -1 ||
	    (in->root && fchown(fd, archive_entry_uid(e),
	    archive_entry_gid(e)) == -1) ||
	    fchmod(fd, archive_entry_perm(e) & (in->root ? 07777 : 01777)) ==
	    -1 || futimens(fd, ts) == -1 ||
	    (tmp[0] == '\0' && tar_in_name(in, dfd, fd, tmp, sizeof(tmp)) ==
	    -1))
		goto fail;
	if (renameat(dfd, tmp, dfd, base) == -1) {
		if (errno == EISDIR)
			*why = "a directory is in the way";
		goto fail;
	}
	return close(fd);
fail:
	saved = errno;
	if (tmp[0] != '\0')
		(void)unlinkat(dfd, tmp, 0);
	close(fd);
	errno = saved;
	return -1;
}

/* A directory: made or kept (a link in its place refused), fixed later. */
static int
tar_in_dir(struct tar_in *in, struct archive_entry *e, int dfd,
    const char *base, const char *rel, const char **why)
{
	struct tar_dir	*d;
	int		 fd;

	if (mkdirat(dfd, base, 0700) == -1 && errno != EEXIST)
		return -1;
	if ((fd = fsutil_open(dfd, base, O_RDONLY | O_DIRECTORY, 0)) == -1) {
		*why = errno == ELOOP ? "a symlink is in its place" :
		    "a file is in its place";
		return -1;
	}
	close(fd);
	if (in->ndirs == in->capdirs) {
		size_t	cap = in->capdirs ? 2 * in->capdirs : 64;

		if ((d = realloc(in->dirs, cap * sizeof(*d))) == NULL)
			return -1;
		in->dirs = d;
		in->capdirs = cap;
	}
	d = &in->dirs[in->ndirs];
	if ((d->rel = strdup(rel)) == NULL)
		return -1;
	d->mode = archive_entry_perm(e) & (in->root ? 07777 : 01777);
	d->uid = archive_entry_uid(e);
	d->gid = archive_entry_gid(e);
	tar_in_times(e, d->ts);
	in->ndirs++;
	return 0;
}

/* A symlink, its text as it is: nothing is ever opened through it. */
static int
tar_in_link(struct tar_in *in, struct archive_entry *e, int dfd,
    const char *base, const char **why)
{
	struct timespec	 ts[2];
	const char	*target = archive_entry_symlink(e);

	if (target == NULL || target[0] == '\0') {
		*why = "a symlink without a target";
		errno = EINVAL;
		return -1;
	}
	if (tar_in_clear(dfd, base, why) == -1 ||
	    symlinkat(target, dfd, base) == -1)
		return -1;
	tar_in_times(e, ts);
	if (in->root)
		(void)fchownat(dfd, base, archive_entry_uid(e),
		    archive_entry_gid(e), AT_SYMLINK_NOFOLLOW);
	return utimensat(dfd, base, ts, AT_SYMLINK_NOFOLLOW);
}

/*
 * A hard link to an entry extracted before: its name judged as any
 * name, its directory opened without links, linkat without
 * AT_SYMLINK_FOLLOW (a symlink there is linked itself, not followed).
 */
static int
tar_in_hardlink(struct tar_in *in, const char *hl, int dfd,
    const char *base, const char **why)
{
	char	trel[PATH_MAX], tparent[PATH_MAX], tbase[NAME_MAX + 1];
	int	tfd, rc, saved;

	if (tar_clean(hl, trel, sizeof(trel), why) != 0 ||
	    tar_split(trel, tparent, tbase) == -1) {
		*why = "a hard link out of the root";
		errno = EXDEV;
		return -1;
	}
	tfd = strcmp(tparent, ".") == 0 ? openat(in->rootfd, ".", O_RDONLY |
	    O_DIRECTORY | O_CLOEXEC) : fsutil_open(in->rootfd, tparent,
	    O_RDONLY | O_DIRECTORY, 0);
	if (tfd == -1) {
		*why = "a hard link whose target is not in the archive";
		return -1;
	}
	rc = tar_in_clear(dfd, base, why);
	if (rc == 0 && (rc = linkat(tfd, tbase, dfd, base, 0)) == -1 &&
	    (errno == ENOENT || errno == EPERM))
		*why = "a hard link whose target is not in the archive";
	saved = errno;
	close(tfd);
	errno = saved;
	return rc;
}

/* One entry.  -1 with *why: refused (TAR_EXIT_BAD); without: errno. */
static int
tar_in_entry(struct tar_in *in, struct archive_entry *e, const char **why)
{
	char		 rel[PATH_MAX], base[NAME_MAX + 1];
	const char	*hl = archive_entry_hardlink(e);
	mode_t		 type = archive_entry_filetype(e);
	int		 dfd, rc, saved;

	if ((rc = tar_clean(archive_entry_pathname(e), rel, sizeof(rel),
	    why)) != 0)
		return rc == 1 ? 0 : -1;	/* the root itself: kept */
	if (hl == NULL && type != AE_IFREG && type != AE_IFDIR &&
	    type != AE_IFLNK) {
		*why = "a device node, FIFO or socket";
		errno = EPERM;
		return -1;
	}
	if ((dfd = tar_in_parent(in, rel, base, why)) == -1)
		return -1;
	if (hl != NULL)
		rc = tar_in_hardlink(in, hl, dfd, base, why);
	else if (type == AE_IFDIR)
		rc = tar_in_dir(in, e, dfd, base, rel, why);
	else if (type == AE_IFLNK)
		rc = tar_in_link(in, e, dfd, base, why);
	else
		rc = tar_in_file(in, e, dfd, base, why);
	saved = errno;
	close(dfd);
	errno = saved;
	return rc;
}

/*
 * Directory modes and times last, deepest first: entries made in a
 * directory change its mtime, and a mode without write would have kept
 * them out.  A directory gone or replaced meanwhile is let be.
 */
static void
tar_in_dirs_fix(struct tar_in *in)
{
	struct tar_dir	*d;
	int		 fd;

	while (in->ndirs > 0) {
		d = &in->dirs[--in->ndirs];
		fd = fsutil_open(in->rootfd, d->rel, O_RDONLY | O_DIRECTORY, 0);
		if (fd != -1) {
			/* The owner before the mode, as for a file. */
			if (in->root)
				(void)fchown(fd, d->uid, d->gid);
			(void)fchmod(fd, d->mode);
			(void)futimens(fd, d->ts);
			close(fd);
		}
		free(d->rel);
	}
}

/*
 * A failed hydrate's report, with the count of entries extracted whole
 * before it (the archive's first ones: it stops at the failure), their
 * directories' modes and times set first as at a whole archive's end.
 */
static _Noreturn void
tar_in_report(struct tar_in *in, int code, int err, const char *fmt, ...)
{
	va_list	ap;

	tar_in_dirs_fix(in);
	va_start(ap, fmt);
	tar_vreport(in->errfd, code, err, in->entries, fmt, ap);
}

/* Every entry, or the report of the first bad one and the exit. */
static void
tar_in_entries(struct tar_in *in)
{
	struct archive_entry	*e;
	const char		*why;
	int			 r;

	for (;;) {
		r = archive_read_next_header(in->a, &e);
		if (r == ARCHIVE_EOF)
			break;
		if (r < ARCHIVE_WARN) {
			if (in->total == 0)
				tar_report(in->errfd, TAR_EXIT_EMPTY, EINVAL,
				    "Empty tar payload");
			tar_in_report(in, TAR_EXIT_BAD, EINVAL,
			    "not a tar archive: %s",
			    archive_error_string(in->a));
		}
		why = NULL;
		if (tar_in_entry(in, e, &why) == -1) {
			if (why != NULL)
				tar_in_report(in, TAR_EXIT_BAD, errno,
				    "entry '%.200s' refused: %s",
				    archive_entry_pathname(e), why);
			tar_in_report(in, TAR_EXIT_IO, errno,
			    "entry '%.200s': %s", archive_entry_pathname(e),
			    strerror(errno));
		}
		in->entries++;
	}
	if (in->total == 0)
		tar_report(in->errfd, TAR_EXIT_EMPTY, EINVAL,
		    "Empty tar payload");
}

_Noreturn void
tar_hydrate_child(int rootfd, int fd, int errfd)
{
	struct tar_in	*in;

	if ((in = calloc(1, sizeof(*in))) == NULL ||
	    (in->a = archive_read_new()) == NULL)
		tar_report(errfd, TAR_EXIT_IO, ENOMEM, "out of memory");
	in->rootfd = rootfd;
	in->fd = fd;
	in->errfd = errfd;
	in->root = geteuid() == 0;
	in->tmpfile = access("/proc/self/fd", X_OK) == 0;
	/* gzip through zlib; no filter that would run an external program. */
	if (archive_read_support_format_tar(in->a) != ARCHIVE_OK ||
	    archive_read_support_filter_gzip(in->a) != ARCHIVE_OK)
		tar_report(errfd, TAR_EXIT_IO, archive_errno(in->a), "%s",
		    archive_error_string(in->a));
	if (archive_read_open(in->a, in, NULL, tar_in_read, NULL) !=
	    ARCHIVE_OK) {
		if (in->total == 0)
			tar_report(errfd, TAR_EXIT_EMPTY, EINVAL,
			    "Empty tar payload");
		tar_in_report(in, TAR_EXIT_BAD, EINVAL,
		    "not a tar archive: %s", archive_error_string(in->a));
	}
	tar_in_entries(in);
	tar_in_dirs_fix(in);
	/* The padding after the end blocks: read, so the writer never EPIPEs. */
	while (read(fd, in->buf, sizeof(in->buf)) > 0)
		;
	_exit(TAR_EXIT_OK);
}
