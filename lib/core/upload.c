/*
 * upload.c: an upload, written to a temp file beside its name and
 * renamed over it, or appended in place.  See upload.h.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/tunables.h"
#include "files.h"
#include "sys/child.h"
#include "sys/spawn.h"
#include "upload.h"

static int	upload_tmp(struct upload *);
static int	upload_append(struct upload *, const struct files_root *,
		    const char *, mode_t);
static void	upload_flushed(pid_t, int, void *);
static bool	upload_flush(struct upload *);

/*
 * ".NAME.XXXXXX" beside NAME, new (O_EXCL: a name someone else took, or
 * a link planted there, is never opened).
 */
static int
upload_tmp(struct upload *p)
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
upload_append(struct upload *p, const struct files_root *r,
    const char *rel, mode_t mode)
{
	struct stat	st;

	p->fd = files_open_file(r, rel, O_WRONLY | O_APPEND | O_CREAT, 0600,
	    &st, &p->created);
	if (p->fd == -1)
		return -1;
	if (p->created && fchmod(p->fd, mode) == -1) {
		upload_abort(p);
		return -1;
	}
	return 0;
}

int
upload_begin(struct upload *p, const struct files_root *r,
    const char *rel, int flags, int mode)
{
	struct stat	st;
	char		parent[PATH_MAX];
	bool		old = false;

	memset(p, 0, sizeof(*p));
	p->dirfd = p->fd = p->slot = -1;
	p->flags = flags;
	if (mode != UPLOAD_MODE_KEEP && (mode < 0 || mode > 07777)) {
		errno = EINVAL;
		return -1;
	}
	if (strcmp(rel, ".") == 0) {
		errno = EISDIR;
		return -1;
	}
	if (files_split(rel, parent, sizeof(parent), p->name) == -1)
		return -1;
	if (flags & UPLOAD_PARENTS) {
		if ((p->dirfd = files_mkdirs(r, parent, 0755)) == -1)
			return -1;
	} else if ((p->dirfd = files_open(r, parent, O_RDONLY | O_DIRECTORY,
	    0)) == -1)
		return -1;
	if (flags & UPLOAD_APPEND)
		return upload_append(p, r, rel,
		    mode == UPLOAD_MODE_KEEP ? 0644 : (mode_t)mode);
	if (fstatat(p->dirfd, p->name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(st.st_mode)) {
			upload_abort(p);
			errno = EISDIR;
			return -1;
		}
		old = S_ISREG(st.st_mode);
	}
	if (mode == UPLOAD_MODE_KEEP)
		mode = old ? (int)(st.st_mode & 07777) : 0644;
	if (upload_tmp(p) == -1)
		goto fail;
	p->slot = files_tmp_note(p->dirfd, p->tmp);
	if (fchmod(p->fd, (mode_t)mode) == -1)
		goto fail;
	/* Root replacing someone's file: it stays theirs. */
	if (old && geteuid() == 0)
		(void)fchown(p->fd, st.st_uid, st.st_gid);
	return 0;
fail:
	upload_abort(p);
	return -1;
}

static void
upload_flushed(pid_t pid, int wstatus, void *arg)
{
	struct upload	*p = arg;

	(void)pid;
	p->flusher = 0;
	if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0)
		p->flusherr = WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : EIO;
}

/*
 * What is written so far, to stable storage, every FILES_PUT_FLUSH bytes:
 * the fsync at commit then has at most that much left, and holds the
 * loop no longer.  The fsync of a whole upload would hold the loop for
 * as long as the disk takes to make all of it stable, which grows with
 * the upload; starting writeback along the way does not shorten it, as
 * the cost is the flush of the disk's cache.  A child does it, so that
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
upload_flush(struct upload *p)
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
		if (child_watch(pid, upload_flushed, p) == 0) {
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
upload_write(struct upload *p, const void *d, size_t n)
{
	if (fsutil_write_all(p->fd, d, n) == -1)
		return -1;
	p->off += n;
	p->unflushed += n;
	if (!(p->flags & UPLOAD_APPEND) && p->unflushed >= FILES_PUT_FLUSH &&
	    upload_flush(p))
		p->unflushed = 0;
	return 0;
}

int
upload_commit(struct upload *p, bool *created)
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
	if (p->flags & UPLOAD_APPEND) {
		*created = p->created;
		upload_abort(p);
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
	files_tmp_set(p->slot, p->tmp, *created ? FILES_TMP_CREATED :
	    FILES_TMP_REPLACED);
	p->slot = -1;
	p->tmp[0] = '\0';
	upload_abort(p);
	return 0;
fail:
	saved = errno;
	upload_abort(p);
	errno = saved;
	return -1;
}

void
upload_abort(struct upload *p)
{
	int	saved = errno;

	/* A flush still at work finishes alone. */
	if (p->flusher != 0)
		child_unwatch(p->flusher);
	p->flusher = 0;
	if (p->fd != -1)
		close(p->fd);
	if (p->tmp[0] != '\0' && p->dirfd != -1) {
		files_tmp_set(p->slot, p->tmp, FILES_TMP_ABORTED);
		p->slot = -1;
		(void)unlinkat(p->dirfd, p->tmp, 0);
	}
	if (p->dirfd != -1)
		close(p->dirfd);
	p->fd = p->dirfd = -1;
	p->tmp[0] = '\0';
	errno = saved;
}

