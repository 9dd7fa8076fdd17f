/*
 * tar.c: persist and hydrate children on libarchive.  See tar.h.
 *
 * Everything below the spawn functions runs in the child, which exits
 * with _exit and never returns to the agent's code.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
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
#include "sys/spawn.h"
#include "tar.h"

/* The persist child's state. */
struct tar_out {
	struct archive		 *a;
	const char *const	 *ex;
	int			  errfd;
	int			  skipped;
	int			  first_err;
	char			  first[PATH_MAX];
	char			  path[PATH_MAX];	/* the entry's name */
	char			  buf[TAR_BLOCK];
};

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

static int		 tar_pipe(int[2], int);
static _Noreturn void	 tar_vreport(int, int, int, long long, const char *,
			    va_list) __attribute__((format(printf, 5, 0)));
static _Noreturn void	 tar_report(int, int, int, const char *, ...)
			    __attribute__((format(printf, 4, 5)));
static const char	*tar_exclude_norm(const char *, size_t *);
static bool		 tar_excluded(const struct tar_out *);
static void		 tar_skip(struct tar_out *, int);
static int		 tar_out_data(struct tar_out *, int, int64_t);
static int		 tar_out_entry(struct tar_out *, int, const char *,
			    size_t);
static int		 tar_out_dir(struct tar_out *, int, size_t);
static _Noreturn void	 tar_persist_child(int, const char *const *, int,
			    int);
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
static _Noreturn void	 tar_hydrate_child(int, int, int);

/* ------------------------------------------------------------------ */
/* Linking */

/*
 * libarchive 3.6's tar writers call this helper, which its static
 * library keeps in one object with the table of every format by name:
 * linked from there it would pull in every writer (7-Zip, XAR, ISO 9660,
 * ZIP, ...) and their libraries (lzma, bzip2, libxml2 and with it ICU
 * and libstdc++), none of which tend needs.  Defined here, that object
 * stays out.  It only sets the error the original sets, and is never
 * reached in practice: persist gives the writer files, directories and
 * links only.  Against the shared library this definition wins the
 * same way and does the same thing.
 */
void	__archive_write_entry_filetype_unsupported(struct archive *,
	    struct archive_entry *, const char *);

void
__archive_write_entry_filetype_unsupported(struct archive *a,
    struct archive_entry *e, const char *format)
{
	archive_set_error(a, EINVAL, "%s: %s format cannot archive this "
	    "(type=0%o)", archive_entry_pathname(e), format,
	    (unsigned int)archive_entry_filetype(e));
}

/* ------------------------------------------------------------------ */
/* The agent's side */

/*
 * A pipe whose end at index agent is the agent's (O_NONBLOCK), made
 * large so that the child and the loop trade few, big chunks.
 */
static int
tar_pipe(int p[2], int agent)
{
	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	(void)fcntl(p[agent], F_SETPIPE_SZ, TAR_PIPE_BYTES);	/* a hint */
	if (fcntl(p[agent], F_SETFL, O_NONBLOCK) == -1) {
		int	saved = errno;

		close(p[0]);
		close(p[1]);
		errno = saved;
		return -1;
	}
	return 0;
}

int
tar_persist_spawn(int rootfd, const char *const *ex, pid_t *pid, int *outfd,
    int *errfd)
{
	int	out[2], err[2] = { -1, -1 }, keep[3], saved;

	if (tar_pipe(out, 0) == -1)
		return -1;
	if (errfd != NULL && tar_pipe(err, 0) == -1)
		goto fail;
	keep[0] = rootfd, keep[1] = out[1], keep[2] = err[1];
	if ((*pid = spawn_helper(keep, errfd != NULL ? 3 : 2)) == -1)
		goto fail;
	if (*pid == 0)
		tar_persist_child(rootfd, ex, out[1], err[1]);
	close(out[1]);
	*outfd = out[0];
	if (errfd != NULL) {
		close(err[1]);
		*errfd = err[0];
	}
	return 0;
fail:
	saved = errno;
	close(out[0]);
	close(out[1]);
	if (err[0] != -1) {
		close(err[0]);
		close(err[1]);
	}
	errno = saved;
	return -1;
}

int
tar_hydrate_spawn(int rootfd, pid_t *pid, int *infd, int *errfd)
{
	int	in[2], err[2], keep[3], saved;

	if (tar_pipe(in, 1) == -1)
		return -1;
	if (tar_pipe(err, 0) == -1)
		goto fail_in;
	keep[0] = rootfd, keep[1] = in[0], keep[2] = err[1];
	if ((*pid = spawn_helper(keep, 3)) == -1)
		goto fail;
	if (*pid == 0)
		tar_hydrate_child(rootfd, in[0], err[1]);
	close(in[0]);
	close(err[1]);
	*infd = in[1];
	*errfd = err[0];
	return 0;
fail:
	saved = errno;
	close(err[0]);
	close(err[1]);
	errno = saved;
fail_in:
	saved = errno;
	close(in[0]);
	close(in[1]);
	errno = saved;
	return -1;
}

int
tar_report_parse(const char *s, size_t n, struct tar_report *r)
{
	const char	*sp, *end = s + n;
	long		 v = 0;
	const char	*p;

	while (end > s && (end[-1] == '\n' || end[-1] == '\0'))
		end--;
	if ((sp = memchr(s, ' ', end - s)) == NULL || sp == s)
		goto bad;
	r->entries = -1;
	for (p = s; p < sp && *p != ':'; p++) {
		if (*p < '0' || *p > '9' || v > 100000)
			goto bad;
		v = v * 10 + (*p - '0');
	}
	if (p == s)
		goto bad;
	r->err = (int)v;
	if (p < sp) {			/* ":<entries>" */
		if (++p == sp)
			goto bad;
		for (r->entries = 0; p < sp; p++) {
			if (*p < '0' || *p > '9' ||
			    r->entries > LLONG_MAX / 10 - 9)
				goto bad;
			r->entries = r->entries * 10 + (*p - '0');
		}
	}
	snprintf(r->msg, sizeof(r->msg), "%.*s", (int)(end - sp - 1), sp + 1);
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

/*
 * The one report ("<errno>[:<entries>] <message>\n", one write: a pipe
 * takes it whole) and the exit.  entries is -1 when it is not told.
 * Names in it are the archive's: bytes outside printable ASCII are shown
 * as '?'.
 */
static _Noreturn void
tar_vreport(int errfd, int code, int err, long long entries,
    const char *fmt, va_list ap)
{
	char	line[TAR_ERR_MAX];
	int	n, i;

	if (errfd != -1) {
		if (entries >= 0)
			n = snprintf(line, sizeof(line), "%d:%lld ", err,
			    entries);
		else
			n = snprintf(line, sizeof(line), "%d ", err);
		vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
		for (i = n; line[i] != '\0'; i++)
			if ((unsigned char)line[i] < 0x20 ||
			    (unsigned char)line[i] > 0x7e)
				line[i] = '?';
		line[i++] = '\n';
		(void)!write(errfd, line, i);
	}
	_exit(code);
}

static _Noreturn void
tar_report(int errfd, int code, int err, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	tar_vreport(errfd, code, err, -1, fmt, ap);
}

/* ------------------------------------------------------------------ */
/* Excludes */

/* ex without "./" in front and '/' behind: its start, its length. */
static const char *
tar_exclude_norm(const char *ex, size_t *len)
{
	size_t	n;

	while (ex[0] == '.' && ex[1] == '/')
		for (ex += 2; *ex == '/'; ex++)
			;
	for (n = strlen(ex); n > 0 && ex[n - 1] == '/'; n--)
		;
	*len = n;
	return ex;
}

int
tar_exclude_valid(const char *ex)
{
	const char	*p;
	size_t		 n;

	if (ex[0] == '/')
		goto bad;
	p = tar_exclude_norm(ex, &n);
	if (n == 0 || (n == 1 && p[0] == '.'))
		goto bad;
	for (; *p != '\0'; p = strchr(p, '/') ? strchr(p, '/') + 1 : "")
		if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == '\0'))
			goto bad;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

/* The current entry is an exclude or lies below one. */
static bool
tar_excluded(const struct tar_out *o)
{
	const char	*e;
	size_t		 n, i;

	for (i = 0; o->ex != NULL && o->ex[i] != NULL; i++) {
		e = tar_exclude_norm(o->ex[i], &n);
		if (strncmp(o->path, e, n) == 0 &&
		    (o->path[n] == '\0' || o->path[n] == '/'))
			return true;
	}
	return false;
}

/* ------------------------------------------------------------------ */
/* Persist (in the child) */

/* An entry that could not be read: counted, the first one named. */
static void
tar_skip(struct tar_out *o, int err)
{
	if (o->skipped++ == 0) {
		o->first_err = err;
		snprintf(o->first, sizeof(o->first), "%s", o->path);
	}
}

/*
 * size bytes of fd into the entry.  A file that shrank meanwhile is
 * padded by libarchive at the next header; one that grew is cut at the
 * size its header gave.  -1: the archive (the pipe) failed.
 */
static int
tar_out_data(struct tar_out *o, int fd, int64_t size)
{
	ssize_t	n;

	while (size > 0) {
		n = read(fd, o->buf, size < TAR_BLOCK ? (size_t)size :
		    TAR_BLOCK);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		if (archive_write_data(o->a, o->buf, n) < 0)
			return -1;
		size -= n;
	}
	return 0;
}

/*
 * The entry name in dfd, its path o->path[0..plen) + name: a header (and
 * data, or what lies below it).  0 (archived, skipped or left out), or
 * -1: the archive failed, stop.
 */
static int
tar_out_entry(struct tar_out *o, int dfd, const char *name, size_t plen)
{
	struct archive_entry	*e;
	struct stat		 st;
	char			 target[PATH_MAX];
	ssize_t			 n;
	int			 fd = -1, rc = 0, r;

	if (snprintf(o->path + plen, sizeof(o->path) - plen, "%s%s",
	    plen ? "/" : "", name) >= (int)(sizeof(o->path) - plen)) {
		tar_skip(o, ENAMETOOLONG);
		goto done;
	}
	if (tar_excluded(o))
		goto done;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno != ENOENT)		/* gone meanwhile: nothing */
			tar_skip(o, errno);
		goto done;
	}
	if (S_ISREG(st.st_mode)) {
		fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
		    O_NOCTTY | O_CLOEXEC);
		if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
			tar_skip(o, fd == -1 ? errno : EAGAIN);
			goto done;
		}
	} else if (S_ISLNK(st.st_mode)) {
		if ((n = readlinkat(dfd, name, target, sizeof(target) - 1)) ==
		    -1) {
			tar_skip(o, errno);
			goto done;
		}
		target[n] = '\0';
	} else if (!S_ISDIR(st.st_mode))
		goto done;		/* sockets, FIFOs, devices: not kept */
	if ((e = archive_entry_new()) == NULL)
		tar_report(o->errfd, TAR_EXIT_IO, ENOMEM, "out of memory");
	archive_entry_copy_pathname(e, o->path);
	archive_entry_copy_stat(e, &st);
	if (S_ISLNK(st.st_mode))
		archive_entry_copy_symlink(e, target);
	if (!S_ISREG(st.st_mode))
		archive_entry_set_size(e, 0);
	r = archive_write_header(o->a, e);
	archive_entry_free(e);
	if (r == ARCHIVE_FATAL)
		rc = -1;
	else if (r < ARCHIVE_WARN)
		tar_skip(o, archive_errno(o->a));
	else if (fd != -1)
		rc = tar_out_data(o, fd, st.st_size);
	else if (S_ISDIR(st.st_mode)) {
		/* O_NOFOLLOW: a link swapped in is not entered. */
		fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fd == -1)
			tar_skip(o, errno);
		else {
			rc = tar_out_dir(o, fd, strlen(o->path));
			fd = -1;		/* closed by tar_out_dir */
		}
	}
done:
	if (fd != -1)
		close(fd);
	o->path[plen] = '\0';
	return rc;
}

/* Everything below dfd (closed here), names prefixed with o->path. */
static int
tar_out_dir(struct tar_out *o, int dfd, size_t plen)
{
	struct dirent	*de;
	DIR		*d;
	int		 rc = 0;

	if ((d = fdopendir(dfd)) == NULL) {
		tar_skip(o, errno);
		close(dfd);
		return 0;
	}
	while (rc == 0 && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			rc = tar_out_entry(o, dirfd(d), de->d_name, plen);
	closedir(d);
	return rc;
}

static _Noreturn void
tar_persist_child(int rootfd, const char *const *ex, int out, int errfd)
{
	struct tar_out	*o;
	int		 dfd;

	/* The child's own memory, not a static the agent would carry. */
	if ((o = calloc(1, sizeof(*o))) == NULL ||
	    (o->a = archive_write_new()) == NULL)
		tar_report(errfd, TAR_EXIT_IO, ENOMEM, "out of memory");
	o->ex = ex;
	o->errfd = errfd;
	/* ustar where it fits, pax headers for long names and big files. */
	if (archive_write_set_format_pax_restricted(o->a) != ARCHIVE_OK ||
	    archive_write_add_filter_none(o->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(o->a, TAR_BLOCK) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(o->a, 1) != ARCHIVE_OK ||
	    archive_write_open_fd(o->a, out) != ARCHIVE_OK)
		tar_report(errfd, TAR_EXIT_IO, archive_errno(o->a), "%s",
		    archive_error_string(o->a));
	dfd = openat(rootfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd == -1)
		tar_report(errfd, TAR_EXIT_IO, errno, "root: %s",
		    strerror(errno));
	if (tar_out_dir(o, dfd, 0) == -1 ||
	    archive_write_close(o->a) != ARCHIVE_OK)
		tar_report(errfd, TAR_EXIT_IO, archive_errno(o->a), "%s",
		    archive_error_string(o->a));
	if (o->skipped > 0)
		tar_report(errfd, TAR_EXIT_PARTIAL, o->first_err,
		    "%d entries left out, the first %s: %s", o->skipped,
		    o->first, strerror(o->first_err));
	_exit(TAR_EXIT_OK);
}

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

static _Noreturn void
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
