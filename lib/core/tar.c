/*
 * tar.c: persist and hydrate children on libarchive.  See tar.h.
 *
 * Everything below the spawn functions runs in the child, which exits
 * with _exit and never returns to the agent's code.  The hydrate
 * child's extraction is in tar_in.c.
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
#include "tar_int.h"

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

static int		 tar_pipe(int[2], int);
static const char	*tar_exclude_norm(const char *, size_t *);
static bool		 tar_excluded(const struct tar_out *);
static void		 tar_skip(struct tar_out *, int);
static int		 tar_out_data(struct tar_out *, int, int64_t);
static int		 tar_out_entry(struct tar_out *, int, const char *,
			    size_t);
static int		 tar_out_dir(struct tar_out *, int, size_t);
static _Noreturn void	 tar_persist_child(int, const char *const *, int,
			    int);

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
_Noreturn void
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

_Noreturn void
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
