/*
 * record_pool.c: records' directories made ahead by a child of the agent
 * (struct record_pool in record.h): boots/<boot>/.spares/<n>, taken by
 * record_open, so that a launch's directory costs the loop one rename.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "base/tunables.h"
#include "record_int.h"
#include "sys/spawn.h"

#define RECORD_POOLDIR	".spares"	/* beside procs: struct record_pool */
#define RECORD_POOLNEW	"new"		/* in it, the child's */

static int	record_pool_open(struct record_dir *);
static int	record_pool_make(int, unsigned, unsigned);

/* ------------------------------------------------------------------ */
/* The pool: directories made ahead by a child */

int
record_pool_want(const struct record_dir *d, double now)
{
	const struct record_pool *q = &d->pool;

	if (q->off || d->fd == -1 || d->err != 0 || d->kind != RECORD_PROC ||
	    now < q->again)
		return -1;
	return q->pid == 0 && q->end - q->next <= RECORD_POOL_LOW;
}

/*
 * The next one, renamed to the record's ID without replacing: its fd,
 * the record taking its temps; -1 when there is none (a taken name, as
 * for the spare, is left to the usual way, which refuses it).
 */
int
record_pool_take(struct record *r)
{
	struct record_dir	*d = r->dir;
	struct record_pool	*q = &d->pool;
	char			 name[16];
	int			 fd, err;

	if (!q->made || q->off || q->next == q->end)
		return -1;
	snprintf(name, sizeof(name), "%u", q->next);
	if ((fd = fsutil_open(q->fd, name, O_RDONLY | O_DIRECTORY, 0)) == -1) {
		/* Not made yet, or gone: see struct record_pool. */
		if (errno == ENOENT && q->pid == 0)
			q->next++;
		return -1;
	}
	if (renameat2(q->fd, name, d->fd, r->id, RENAME_NOREPLACE) == -1) {
		err = errno;
		close(fd);
		if (err == EINVAL || err == ENOSYS || err == EPERM)
			q->off = true;
		else if (faccessat(q->fd, name, F_OK, AT_SYMLINK_NOFOLLOW) ==
		    -1 && errno == ENOENT)
			q->next++;	/* gone meanwhile */
		errno = err;
		return -1;
	}
	q->next++;
	r->metatmp = r->statustmp = true;
	return fd;
}

/*
 * .spares open, made (anew, if one is there) beside the records
 * directory; one removed under us (the boot's directory) is made again.
 */
static int
record_pool_open(struct record_dir *d)
{
	struct record_pool	*q = &d->pool;
	struct stat		 st;
	int			 pfd, fd, err;

	if (q->made && fstat(q->fd, &st) == 0 && st.st_nlink > 0)
		return 0;
	if (q->made) {
		close(q->fd);
		q->made = false;
		q->next = q->end;
	}
	if ((pfd = openat(d->fd, "..", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return -1;
	fd = fsutil_mkdir_anew(pfd, RECORD_POOLDIR);
	err = errno;
	close(pfd);
	if (fd == -1) {
		errno = err;
		return -1;
	}
	q->fd = fd;
	q->made = true;
	return 0;
}

int
record_pool_fill(struct record_dir *d, double now)
{
	struct record_pool	*q = &d->pool;
	pid_t			 pid;
	int			 keep;

	if (q->pid != 0) {
		errno = EBUSY;
		return -1;
	}
	if (record_pool_open(d) == -1)
		goto fail;
	keep = q->fd;
	if ((pid = spawn_helper(&keep, 1)) == -1)
		goto fail;
	if (pid == 0) {
		(void)setpriority(PRIO_PROCESS, 0, RECORD_POOL_NICE);
		_exit(record_pool_make(q->fd, q->end, RECORD_POOL));
	}
	q->pid = pid;
	q->from = q->end;
	q->end += RECORD_POOL;
	return 0;
fail:
	q->again = now + RECORD_POOL_RETRY;
	return -1;
}

/*
 * The child's work: n directories from the name from on, each whole in
 * new/ before it is renamed into the pool.  0, or an errno (the exit
 * status).
 */
static int
record_pool_make(int poolfd, unsigned from, unsigned n)
{
	char		name[16];
	unsigned	i;
	int		newfd, fd, rc = 0;

	if ((mkdirat(poolfd, RECORD_POOLNEW, 0700) == -1 && errno != EEXIST) ||
	    (newfd = fsutil_open(poolfd, RECORD_POOLNEW, O_RDONLY |
	    O_DIRECTORY, 0)) == -1)
		return errno;
	for (i = from; i != from + n && rc == 0; i++) {
		snprintf(name, sizeof(name), "%u", i);
		/* One left by a child that failed on it: made anew. */
		if ((fd = fsutil_mkdir_anew(newfd, name)) == -1)
			return errno;
		rc = fsutil_tmp_make(fd, RECORD_META) == -1 ||
		    fsutil_tmp_make(fd, RECORD_STATUS) == -1 ||
		    renameat(newfd, name, poolfd, name) == -1 ? errno : 0;
		close(fd);
	}
	return rc;
}

/*
 * What a child that failed made stays to be taken (every one in .spares
 * is whole); the pool ends at the first name it did not make.
 */
bool
record_pool_reaped(struct record_dir *d, pid_t pid, int wstatus, double now)
{
	struct record_pool	*q = &d->pool;
	char			 name[16];
	unsigned		 n;

	if (pid <= 0 || pid != q->pid)
		return false;
	q->pid = 0;
	if (q->off || (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0))
		return true;
	log_warnx("event=spares_failed err=\"%s\"", WIFEXITED(wstatus) ?
	    strerror(WEXITSTATUS(wstatus)) : "killed");
	q->again = now + RECORD_POOL_RETRY;
	/* From its first name, or from the next if launches took past it. */
	for (n = q->next - q->from < q->end - q->from ? q->next : q->from;
	    n != q->end; n++) {
		snprintf(name, sizeof(name), "%u", n);
		if (faccessat(q->fd, name, F_OK, AT_SYMLINK_NOFOLLOW) == -1)
			break;
	}
	q->end = n;
	return true;
}

void
record_pool_drop(struct record_dir *d)
{
	struct record_pool	*q = &d->pool;
	int			 pfd;

	q->off = true;
	/* Still its pid until reaped: not an orphan then. */
	if (q->pid > 0)
		(void)kill(q->pid, SIGKILL);
	if (!q->made)
		return;
	if ((pfd = openat(q->fd, "..", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) != -1) {
		(void)fsutil_rmtree(pfd, RECORD_POOLDIR);
		close(pfd);
	}
	close(q->fd);
	q->made = false;
}
