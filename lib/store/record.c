/*
 * record.c: a process's (or a terminal's) record on disk.
 *
 * Owns the layout of boots/<boot>/procs/<id>/ (and terms/<id>/) — the
 * names meta.json, status.json and the streams' "stdout" and "stderr"
 * (a terminal's "output"; the logstore adds its index) — and every write and read of those files: a live record's
 * meta and status (status_failed while the state dir refuses them, so
 * that its owner can retry), the store's files given back and reopened,
 * the read-only open of an earlier boot's record, the directory made
 * ahead on the loop (.spare), and the syncfs child.  The directories
 * made ahead by a child are record_pool.c's, the marking of lost records
 * record_lost.c's (record_int.h).  What a status says is its owner's
 * (proc).
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

#include "base/fsutil.h"
#include "base/tunables.h"
#include "record_int.h"
#include "sys/spawn.h"

#define RECORD_SPARE	".spare"	/* in the boot's directory */

static const char *const record_streams[LS_NSTREAMS] = { "stdout", "stderr" };
static const char *const record_term_streams[1] = { "output" };

const struct record_kind_desc record_kinds[] = {
	[RECORD_PROC] = { record_streams, LS_NSTREAMS, "state",
	    { "stdoutBytes", "stderrBytes" }, "startedAt", "process" },
	[RECORD_TERM] = { record_term_streams, 1, "status",
	    { "outputBytes", NULL }, "createdAt", "terminal" },
};

static int	record_dir(struct record *);
static void	record_dir_done(struct record *, int);
static int	record_mkdir(struct record *);
static int	record_spare_take(struct record *);
static void	record_spare_close(struct record_spare *);
static void	record_tmp_drop(struct record *, bool *, const char *);
static int	record_spare_recycle(struct record *);
static int	record_spare_empty(struct record_spare *);
static int	record_spare_keep(struct record_spare *, const char *);
static int	record_open_store(struct record *, uint64_t);

/* ------------------------------------------------------------------ */
/* A live record */

bool
record_refused(int err)
{
	return err == ENOSPC || err == EDQUOT || err == EROFS || err == EIO ||
	    err == ENOENT || err == EACCES;
}

void
record_init(struct record *r)
{
	memset(r, 0, sizeof(*r));
	r->dirfd = -1;
	logstore_create_none(&r->ls, LS_NSTREAMS, record_streams, 0);
}

int
record_open(struct record *r, struct record_dir *d, const char *id,
    uint64_t maxlog)
{
	int	err;

	const struct record_kind_desc *k = &record_kinds[d->kind];

	record_init(r);
	logstore_create_none(&r->ls, k->nstreams, k->streams, 0);
	r->dir = d;
	r->id = id;
	r->fds_open = true;
	r->ls.maxbytes = maxlog;
	if (d->fd == -1)
		err = d->err != 0 ? d->err : ENOENT;
	else if ((r->dirfd = record_mkdir(r)) != -1)
		return record_open_store(r, maxlog);
	else if (!record_refused(err = errno))
		return -1;
	r->nodir = true;
	errno = err;
	return 1;
}

/*
 * The agent's handover: a record whose files the agent before this one
 * opened, its store empty of the kind's streams (logstore_load fills
 * it), nothing else made.
 */
void
record_adopt(struct record *r, struct record_dir *d, const char *id)
{
	const struct record_kind_desc *k = &record_kinds[d->kind];

	record_init(r);
	logstore_create_none(&r->ls, k->nstreams, k->streams, 0);
	r->dir = d;
	r->id = id;
}

/* The lazy store in the directory just made; no directory left if not. */
static int
record_open_store(struct record *r, uint64_t maxlog)
{
	const struct record_kind_desc *k = &record_kinds[r->dir->kind];
	int	err;

	if (logstore_create_lazy(&r->ls, r->dirfd, k->nstreams, k->streams,
	    maxlog) == 0)
		return 0;
	err = errno;
	(void)record_remove(r);
	record_free(r);
	errno = err;
	return -1;
}

/*
 * A record's directory: the spare renamed, or made or found; a procs
 * directory gone is remade.
 */
static int
record_mkdir(struct record *r)
{
	struct record_dir	*d = r->dir;
	int			 fd;

	if ((fd = record_spare_take(r)) != -1 ||
	    (fd = record_pool_take(r)) != -1)
		return fd;
	fd = fsutil_opendirs(d->fd, r->id);
	if (fd == -1 && errno == ENOENT && d->remake != NULL &&
	    d->remake(d) == 0)
		fd = fsutil_opendirs(d->fd, r->id);
	return fd;
}

/*
 * The record's directory for one write: its own fd while it holds one;
 * else opened for the write; or made, for a record launched without one
 * (which holds it from then on, its output still dropped) or whose
 * directory was removed under us: its status is worth keeping.  -1 and
 * errno.
 */
static int
record_dir(struct record *r)
{
	struct record_dir	*d = r->dir;
	int			 fd;

	if (r->dirfd != -1)
		return r->dirfd;
	if (d->fd == -1) {
		errno = d->err != 0 ? d->err : ENOENT;
		return -1;
	}
	if (!r->nodir && ((fd = record_opendir(d->fd, r->id)) != -1 ||
	    errno != ENOENT))
		return fd;
	if ((fd = record_mkdir(r)) == -1 || !r->nodir)
		return fd;
	r->dirfd = fd;
	r->nodir = false;
	return fd;
}

static void
record_dir_done(struct record *r, int fd)
{
	int	saved = errno;

	if (fd != r->dirfd)
		close(fd);
	errno = saved;
}

int
record_set_meta(struct record *r, char *meta)
{
	free(r->meta);
	r->meta = meta;
	return record_put_meta(r);
}

/* A new file, never replaced: an earlier attempt that took is success. */
int
record_put_meta(struct record *r)
{
	int	dfd, rc;

	if (r->meta == NULL)
		return 0;
	if ((dfd = record_dir(r)) == -1)
		return -1;
	rc = fsutil_write_new_tmp(dfd, RECORD_META, r->metatmp, r->meta,
	    strlen(r->meta));
	r->metatmp = false;	/* taken, whether the write took or not */
	record_dir_done(r, dfd);
	if (rc == -1 && errno != EEXIST)
		return -1;
	free(r->meta);
	r->meta = NULL;
	return 0;
}

/*
 * The first status included, a write replaces the last atomically (temp
 * file, rename): one the disk refuses leaves the previous file whole.
 * Each file is given room for a longer status than its own (the final
 * one adds the exit), so that when the disk is full the next status
 * still takes, written in place into that room: an exit code is not
 * lost for lack of space.  Not synced here: the owner makes final ones
 * durable in one syncfs.
 */
int
record_put_status(struct record *r, const char *json)
{
	size_t	n;
	int	dfd, rc = -1;

	if (json == NULL)
		errno = ENOMEM;
	else if ((dfd = record_dir(r)) != -1) {
		n = strlen(json);
		rc = fsutil_write_atomic_tmp(dfd, RECORD_STATUS, r->statustmp,
		    json, n, n + RECORD_STATUS_ROOM, false);
		r->statustmp = false;
		if (rc == -1 && (errno == ENOSPC || errno == EDQUOT))
			rc = fsutil_write_inplace(dfd, RECORD_STATUS, json, n);
		record_dir_done(r, dfd);
	}
	r->status_failed = rc == -1;
	return rc;
}

bool
record_status_failed(const struct record *r)
{
	return r->status_failed;
}

bool
record_owed(const struct record *r)
{
	return r->status_failed || r->meta != NULL;
}

bool
record_in_memory(const struct record *r)
{
	return r->nodir;
}

/* nodir: nothing to reopen from, so nothing is given back. */
bool
record_release(struct record *r)
{
	if (!r->fds_open || r->nodir)
		return false;
	record_tmp_drop(r, &r->metatmp, RECORD_META);
	record_tmp_drop(r, &r->statustmp, RECORD_STATUS);
	logstore_close(&r->ls);
	if (r->dirfd != -1)
		close(r->dirfd);
	r->dirfd = -1;
	r->fds_open = false;
	return true;
}

/* Sizes and counts stay the store's: the files cannot tell what was dropped. */
struct logstore *
record_store(struct record *r)
{
	int	dfd, rc, saved;

	if (r->fds_open)
		return &r->ls;
	if ((dfd = record_opendir(r->dir->fd, r->id)) == -1)
		return NULL;
	rc = logstore_reopen(&r->ls, dfd);
	saved = errno;
	close(dfd);
	errno = saved;
	if (rc == -1)
		return NULL;
	r->fds_open = true;
	return &r->ls;
}

int
record_remove(struct record *r)
{
	if (r->dir == NULL || r->nodir || r->dir->fd == -1)
		return 0;
	/* Whatever happens, the temps it was given go with its files. */
	r->metatmp = r->statustmp = false;
	if (record_spare_recycle(r) == 0)
		return 0;
	return fsutil_rmtree(r->dir->fd, r->id);
}

void
record_free(struct record *r)
{
	record_tmp_drop(r, &r->metatmp, RECORD_META);
	record_tmp_drop(r, &r->statustmp, RECORD_STATUS);
	logstore_close(&r->ls);
	if (r->dirfd != -1)
		close(r->dirfd);
	r->dirfd = -1;
	r->fds_open = false;
	free(r->meta);
	r->meta = NULL;
}

/* A temp made ahead and never written: removed if it can be. */
static void
record_tmp_drop(struct record *r, bool *made, const char *name)
{
	char	tmp[NAME_MAX + 1];
	int	saved = errno;

	if (*made && r->dirfd != -1 && fsutil_tmp_name(tmp, name) == 0)
		(void)unlinkat(r->dirfd, tmp, 0);
	*made = false;
	errno = saved;
}

/* ------------------------------------------------------------------ */
/* The spare directory */

/*
 * Beside the records directory, not in it: an operator's rm -r of procs
 * never races the agent making files there, and no reader of records
 * meets it.
 */
int
record_spare_make(struct record_dir *d)
{
	struct record_spare	*s = &d->spare;
	int			 pfd, err;

	if (s->off || d->fd == -1 || d->kind != RECORD_PROC)
		return 0;
	if (s->made) {
		if (s->meta && s->status)
			return 0;
		if (fsutil_tmp_make(s->dirfd, s->meta ? RECORD_STATUS :
		    RECORD_META) == -1)
			goto fail;
		if (s->meta)
			s->status = true;
		s->meta = true;
		return s->status ? 0 : 1;
	}
	if ((pfd = openat(d->fd, "..", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return -1;
	s->parentfd = pfd;
	s->dirfd = -1;
	s->meta = s->status = false;
	s->made = true;
	/* One left by a spare dropped without removal: a new one. */
	if ((s->dirfd = fsutil_mkdir_anew(pfd, RECORD_SPARE)) == -1)
		goto fail;
	return 1;
fail:
	err = errno;
	record_spare_drop(d);
	errno = err;
	return -1;
}

bool
record_spare_ready(const struct record_dir *d)
{
	return d->spare.off || (d->spare.made && d->spare.status);
}

void
record_spare_drop(struct record_dir *d)
{
	struct record_spare	*s = &d->spare;
	int			 saved = errno;

	if (!s->made)
		return;
	(void)fsutil_rmtree(s->parentfd, RECORD_SPARE);
	record_spare_close(s);
	errno = saved;
}

static void
record_spare_close(struct record_spare *s)
{
	close(s->parentfd);
	if (s->dirfd != -1)
		close(s->dirfd);
	s->parentfd = s->dirfd = -1;
	s->made = s->meta = s->status = false;
}

/*
 * A record removed while no spare is made becomes the spare: renamed
 * out of the records directory (at once gone from it, as by a removal),
 * emptied but for its meta.json and status.json, which are truncated and
 * renamed to the temps.  So a table that keeps its bound of ended
 * records, removing the oldest at each end, neither frees nor makes an
 * inode per launch of a process that writes nothing.  0, or -1 when it
 * was not taken (the caller removes the directory as usual).
 */
static int
record_spare_recycle(struct record *r)
{
	struct record_dir	*d = r->dir;
	struct record_spare	*s = &d->spare;
	int			 pfd;

	if (s->made || s->off || d->kind != RECORD_PROC ||
	    !record_id_valid(r->id))
		return -1;
	if ((pfd = openat(d->fd, "..", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return -1;
	/* Never through a link planted under the ID. */
	if ((s->dirfd = fsutil_open(d->fd, r->id, O_RDONLY | O_DIRECTORY,
	    0)) == -1) {
		close(pfd);
		return -1;
	}
	s->parentfd = pfd;
	s->made = true;
	s->meta = s->status = false;
	if (renameat2(d->fd, r->id, pfd, RECORD_SPARE, RENAME_NOREPLACE) ==
	    -1) {
		record_spare_close(s);
		return -1;
	}
	/* Out of procs: what follows fails only into a spare dropped. */
	if (record_spare_empty(s) == -1 ||
	    record_spare_keep(s, RECORD_META) == -1 ||
	    record_spare_keep(s, RECORD_STATUS) == -1)
		record_spare_drop(d);
	else
		s->meta = s->status = true;
	return 0;
}

/* Everything but meta.json and status.json out of the spare. */
static int
record_spare_empty(struct record_spare *s)
{
	struct dirent	*de;
	DIR		*dir;
	int		 fd, rc = 0;

	if ((fd = openat(s->dirfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return -1;
	if ((dir = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((de = readdir(dir)) != NULL)
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0 &&
		    strcmp(de->d_name, RECORD_META) != 0 &&
		    strcmp(de->d_name, RECORD_STATUS) != 0 &&
		    fsutil_rmtree(s->dirfd, de->d_name) == -1)
			rc = -1;
	closedir(dir);
	return rc;
}

/*
 * name, truncated, as its temp; made anew if it is missing, or if
 * another link to it would lose its bytes.
 */
static int
record_spare_keep(struct record_spare *s, const char *name)
{
	struct stat	st;
	char		tmp[NAME_MAX + 1];
	int		fd, rc;

	if (fsutil_tmp_name(tmp, name) == -1)
		return -1;
	fd = fsutil_open(s->dirfd, name, O_WRONLY, 0);
	if (fd != -1 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_nlink == 1) {
		rc = ftruncate(fd, 0);
		close(fd);
		if (rc == 0 && renameat(s->dirfd, name, s->dirfd, tmp) == 0)
			return 0;
	} else if (fd != -1)
		close(fd);
	(void)fsutil_rmtree(s->dirfd, name);
	return fsutil_tmp_make(s->dirfd, name);
}

/*
 * The spare as the record's directory, renamed without replacing: its
 * fd, the record taking its temps; -1 when there is none or it could
 * not be renamed.  A name already taken (a planted link) is left to the
 * usual way, which refuses it; a spare gone, or a records directory
 * removed, drops it; one the file system cannot rename into place (no
 * RENAME_NOREPLACE) is not made again.
 */
static int
record_spare_take(struct record *r)
{
	struct record_dir	*d = r->dir;
	struct record_spare	*s = &d->spare;
	int			 fd;

	if (!s->made || s->dirfd == -1)
		return -1;
	if (renameat2(s->parentfd, RECORD_SPARE, d->fd, r->id,
	    RENAME_NOREPLACE) == -1) {
		if (errno == EINVAL || errno == ENOSYS || errno == EPERM)
			s->off = true;
		if (errno != EEXIST)
			record_spare_drop(d);
		return -1;
	}
	r->metatmp = s->meta;
	r->statustmp = s->status;
	fd = s->dirfd;
	s->dirfd = -1;
	record_spare_close(s);
	return fd;
}

/* ------------------------------------------------------------------ */
/* Earlier boots' records */

/*
 * An ID names the record's directory: one component, never "." or "..",
 * PROC_ID_MAX characters at most.
 */
bool
record_id_valid(const char *id)
{
	size_t	i;

	if (!((id[0] >= 'A' && id[0] <= 'Z') || (id[0] >= 'a' && id[0] <= 'z') ||
	    (id[0] >= '0' && id[0] <= '9')))
		return false;
	for (i = 1; id[i] != '\0'; i++) {
		if (i >= PROC_ID_MAX)
			return false;
		if (!((id[i] >= 'A' && id[i] <= 'Z') ||
		    (id[i] >= 'a' && id[i] <= 'z') ||
		    (id[i] >= '0' && id[i] <= '9') ||
		    id[i] == '.' || id[i] == '_' || id[i] == '-'))
			return false;
	}
	return true;
}

/* A record's directory under procsfd, never through a link. */
int
record_opendir(int procsfd, const char *id)
{
	if (!record_id_valid(id)) {
		errno = ENOENT;
		return -1;
	}
	return fsutil_open(procsfd, id, O_RDONLY | O_DIRECTORY, 0);
}

/*
 * The records of a procs directory, for readdir: an open of its own (a
 * dup would share, and leave at the end, the caller's offset).
 */
DIR *
record_opendirs(int procsfd)
{
	DIR	*d;
	int	 fd;

	if ((fd = openat(procsfd, ".", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return NULL;
	if ((d = fdopendir(fd)) == NULL)
		close(fd);
	return d;
}

char *
record_status_text(int procsfd, const char *id, size_t *len)
{
	char	*s;
	int	 dfd, saved;

	if ((dfd = record_opendir(procsfd, id)) == -1)
		return NULL;
	s = fsutil_read(dfd, RECORD_STATUS, RECORD_READ_MAX, len);
	saved = errno;
	close(dfd);
	errno = saved;
	return s;
}

/* A file of the record parsed, or NULL. */
cJSON *
record_read_json(int dfd, const char *name)
{
	cJSON	*j;
	char	*s;

	if ((s = fsutil_read(dfd, name, RECORD_READ_MAX, NULL)) == NULL)
		return NULL;
	j = cJSON_Parse(s);
	free(s);
	return j;
}

int
record_open_ro(int procsfd, const char *id, struct logstore *ls,
    cJSON **status)
{
	return record_open_ro_kind(RECORD_PROC, procsfd, id, ls, status);
}

int
record_open_ro_kind(enum record_kind kind, int procsfd, const char *id,
    struct logstore *ls, cJSON **status)
{
	const struct record_kind_desc *k = &record_kinds[kind];
	int	dfd, saved;

	*status = NULL;
	if ((dfd = record_opendir(procsfd, id)) == -1)
		return -1;
	if (logstore_open(ls, dfd, k->nstreams, k->streams) == -1) {
		saved = errno;
		close(dfd);
		errno = saved;
		return -1;
	}
	*status = record_read_json(dfd, RECORD_STATUS);
	close(dfd);
	return 0;
}

cJSON *
record_list(int procsfd, const char *state)
{
	struct dirent	*de;
	const cJSON	*st;
	cJSON		*a, *j;
	DIR		*d;
	int		 dfd;

	a = cJSON_CreateArray();
	if ((d = record_opendirs(procsfd)) == NULL)
		return a;
	while ((de = readdir(d)) != NULL) {
		if ((dfd = record_opendir(procsfd, de->d_name)) == -1)
			continue;
		j = record_read_json(dfd, RECORD_STATUS);
		close(dfd);
		st = cJSON_GetObjectItemCaseSensitive(j, "state");
		if (j != NULL && (state[0] == '\0' || (cJSON_IsString(st) &&
		    strcmp(st->valuestring, state) == 0)))
			cJSON_AddItemToArray(a, j);
		else
			cJSON_Delete(j);
	}
	closedir(d);
	return a;
}

/* ------------------------------------------------------------------ */
/* Durability */

pid_t
record_sync(int fd)
{
	pid_t	pid;

	if ((pid = spawn_helper(&fd, 1)) == 0) {
		(void)syncfs(fd);
		_exit(0);
	}
	if (pid > 0)
		return pid;
	return syncfs(fd) == -1 ? -1 : 0;
}
