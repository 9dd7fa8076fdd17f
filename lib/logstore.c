/*
 * logstore.c: one process's output on disk.
 *
 * The agent is PID 1 and the process must never block on its output, so
 * every path here either stores bytes or throws them away and counts
 * them; none waits.  Data goes first, then its index record: a stream
 * file may briefly hold bytes no record names yet, never the reverse.
 *
 * Invariant: for each stream, the records of that stream cover
 * [0, end[s]) without gaps, in seq order.  Dropped bytes take no offset,
 * so a reader can trust offset + len to meet the next record's offset.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "codec.h"
#include "tunables.h"
#include "logstore.h"

#define LS_RECSIZE	((off_t)sizeof(struct ls_rec))
#define LS_PUNCH_MIN	(64 * 1024ULL)	/* hole-punch steps, whole pages */
#define LS_PUNCH_MAX	(1024 * 1024ULL)
#define LS_INDEX	"index"
#define LS_READ_MAX	(4 * LOG_CHUNK)	/* bytes taken by one drain */
#define LS_MERGE_MS	20		/* reads merged into one record */

_Static_assert(sizeof(struct ls_rec) == 32, "index record is 32 bytes");
_Static_assert(LOG_CHUNK <= UINT32_MAX, "a chunk length fits ls_rec.len");

static int	logstore_openall(struct logstore *, int, int,
		    const char *const[], int, mode_t);
static int	logstore_check(struct logstore *, int);
static int	logstore_names_ok(int, const char *const[]);
static int	logstore_ensure(struct logstore *, int);
static size_t	logstore_write(int, const void *, size_t, uint64_t);
static void	logstore_commit(struct logstore *, int, size_t);
static void	logstore_trim(struct logstore *, int);
static void	logstore_store(struct logstore *, int, const void *, size_t);

/*
 * Open (or create) the stream files and the index.  On failure nothing
 * stays open and every fd is -1, so logstore_close is always safe.
 */
static int
logstore_openall(struct logstore *ls, int dirfd, int nstreams,
    const char *const names[], int flags, mode_t mode)
{
	int	i, saved;

	memset(ls, 0, sizeof(*ls));
	ls->idxfd = ls->dirfd = -1;
	for (i = 0; i < LS_NSTREAMS; i++)
		ls->fd[i] = -1;
	if (logstore_names_ok(nstreams, names) == -1)
		return -1;
	ls->nstreams = nstreams;
	for (i = 0; i < nstreams; i++) {
		if ((ls->fd[i] = openat(dirfd, names[i], flags | O_NOFOLLOW,
		    mode)) == -1 &&
		    (errno != ENOENT || (flags & O_CREAT)))
			goto fail;
	}
	/* Read-only, a missing file is one a lazy store never created. */
	if ((ls->idxfd = openat(dirfd, LS_INDEX, flags | O_NOFOLLOW,
	    mode)) == -1 &&
	    (errno != ENOENT || (flags & O_CREAT)))
		goto fail;
	return 0;
fail:
	saved = errno;
	logstore_close(ls);
	errno = saved;
	return -1;
}

static int
logstore_names_ok(int nstreams, const char *const names[])
{
	int	i;

	if (nstreams < 1 || nstreams > LS_NSTREAMS || names == NULL) {
		errno = EINVAL;
		return -1;
	}
	for (i = 0; i < nstreams; i++)
		if (names[i] == NULL || strchr(names[i], '/') != NULL ||
		    strcmp(names[i], LS_INDEX) == 0) {
			errno = EINVAL;
			return -1;
		}
	return 0;
}

int
logstore_create_lazy(struct logstore *ls, int dirfd, int nstreams,
    const char *const names[], uint64_t maxbytes)
{
	int	i;

	memset(ls, 0, sizeof(*ls));
	ls->idxfd = ls->dirfd = -1;
	for (i = 0; i < LS_NSTREAMS; i++)
		ls->fd[i] = -1;
	if (logstore_names_ok(nstreams, names) == -1)
		return -1;
	if (fcntl(dirfd, F_GETFD) == -1)
		return -1;		/* EBADF */
	ls->nstreams = nstreams;
	ls->maxbytes = maxbytes;
	ls->dirfd = dirfd;
	ls->names = names;
	return 0;
}

/* The stream's file and the index exist (created now if lazy). */
static int
logstore_ensure(struct logstore *ls, int s)
{
	const int	flags = O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC |
			    O_NOFOLLOW;

	if (ls->fd[s] == -1 && (ls->dirfd == -1 ||
	    (ls->fd[s] = openat(ls->dirfd, ls->names[s], flags, 0640)) == -1))
		return -1;
	if (ls->idxfd == -1 && (ls->dirfd == -1 ||
	    (ls->idxfd = openat(ls->dirfd, LS_INDEX, flags, 0640)) == -1))
		return -1;
	return 0;
}

int
logstore_create(struct logstore *ls, int dirfd, int nstreams,
    const char *const names[], uint64_t maxbytes)
{
	if (logstore_openall(ls, dirfd, nstreams, names,
	    O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0640) == -1)
		return -1;
	ls->maxbytes = maxbytes;
	return 0;
}

/*
 * Recover the bounds from the files alone.  The first data byte after
 * the punched prefix is where the live store's start was rounded down
 * to; the few bytes between that and the true start are still real
 * output, so serving them is harmless.  A file system without SEEK_DATA
 * reports the whole file as data.  The dropped count is not on disk: a
 * caller that needs it keeps it in status.json.
 */
int
logstore_open(struct logstore *ls, int dirfd, int nstreams,
    const char *const names[])
{
	struct stat	st;
	off_t		off;
	int		i, saved;

	if (logstore_openall(ls, dirfd, nstreams, names,
	    O_RDONLY | O_CLOEXEC, 0) == -1)
		return -1;
	ls->ro = true;
	for (i = 0; i < nstreams; i++) {
		if (ls->fd[i] == -1)
			continue;	/* never created: empty */
		if (fstat(ls->fd[i], &st) == -1)
			goto fail;
		ls->end[i] = (uint64_t)st.st_size;
		if ((off = lseek(ls->fd[i], 0, SEEK_DATA)) == -1) {
			if (errno != ENXIO)
				off = 0;
			else
				off = st.st_size;
		}
		ls->start[i] = (uint64_t)off > ls->end[i] ?
		    ls->end[i] : (uint64_t)off;
	}
	if (ls->idxfd != -1) {
		if (fstat(ls->idxfd, &st) == -1)
			goto fail;
		ls->nrec = (uint64_t)st.st_size / LS_RECSIZE;
	}
	return 0;
fail:
	saved = errno;
	logstore_close(ls);
	errno = saved;
	return -1;
}

/* A writable store and a valid stream, or -1 and errno. */
static int
logstore_check(struct logstore *ls, int s)
{
	if (s < 0 || s >= ls->nstreams) {
		errno = EINVAL;
		return -1;
	}
	if (ls->ro) {
		errno = EROFS;
		return -1;
	}
	return 0;
}

/*
 * pwrite all of d at off, or as much as the file takes.  Returns the
 * bytes written; errno says why when short.
 */
static size_t
logstore_write(int fd, const void *d, size_t n, uint64_t off)
{
	const char	*p = d;
	size_t		 done = 0;
	ssize_t		 w;

	while (done < n) {
		w = pwrite(fd, p + done, n - done, (off_t)(off + done));
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		done += (size_t)w;
	}
	return done;
}

/*
 * The len bytes at end[s] are in the file: give them a record.  If the
 * index cannot take the record the bytes were stored for nothing, since
 * no reader would ever see them: they are cut off again and counted as
 * dropped, so that the next chunk reuses both the offset and the seq.
 */
/*
 * Grow the last record by len bytes of stream s, if it is of s, ends
 * where they begin, has room, was read less than LS_MERGE_MS ago (its
 * timestamp stays true to within that), and no reader has been handed it.  A
 * record already written is taken back into the pending batch (it is
 * the batch's first: the next flush rewrites it in place).
 */
static bool
logstore_merge(struct logstore *ls, int s, size_t len)
{
	struct ls_rec	*t = &ls->tail;

	if (ls->nrec == 0 || ls->nrec <= ls->handed || t->seq != ls->nrec ||
	    t->stream != (uint32_t)s || t->len + len > LOG_CHUNK ||
	    t->offset + t->len != ls->end[s] ||
	    codec_now_ms() - t->ts_ms > LS_MERGE_MS ||
	    codec_now_ms() < t->ts_ms)		/* the clock stepped back */
		return false;
	if (ls->npend == 0) {
		ls->pend[ls->npend++] = *t;
		ls->reopen_len = t->len;
	}
	t->len += (uint32_t)len;
	ls->pend[ls->npend - 1].len = t->len;
	ls->end[s] += len;
	logstore_trim(ls, s);
	return true;
}

static void
logstore_commit(struct logstore *ls, int s, size_t len)
{
	struct ls_rec	*rec;

	if (logstore_merge(ls, s, len))
		return;
	rec = &ls->pend[ls->npend++];

	memset(rec, 0, sizeof(*rec));
	rec->seq = ls->nrec + 1;
	rec->offset = ls->end[s];
	rec->len = (uint32_t)len;
	rec->stream = (uint32_t)s;
	rec->ts_ms = codec_now_ms();
	ls->nrec = rec->seq;
	ls->end[s] += len;
	ls->tail = *rec;
	logstore_trim(ls, s);
	if (ls->npend == LS_PEND)
		(void)logstore_flush(ls);
}

void
logstore_seal(struct logstore *ls)
{
	ls->handed = ls->nrec;
}

/*
 * Write the pending records.  If the index cannot take them the bytes
 * they name were stored for nothing, since no reader would ever see
 * them: they are cut off again and counted as dropped, so that the next
 * chunk reuses both the offsets and the seqs.
 */
int
logstore_flush(struct logstore *ls)
{
	uint64_t	first, cut;
	size_t		len;
	int		i, s, saved = errno;

	if (ls->npend == 0)
		return 0;
	first = ls->pend[0].seq;
	len = (size_t)ls->npend * sizeof(struct ls_rec);
	if (logstore_write(ls->idxfd, ls->pend, len,
	    (first - 1) * sizeof(struct ls_rec)) == len) {
		ls->npend = 0;
		ls->reopen_len = 0;
		return 0;
	}
	/*
	 * A written tail taken back to grow keeps what it had on disk: only
	 * its growth is cut, and its record is written back as it was.
	 */
	if (ls->reopen_len > 0) {
		ls->pend[0].len = ls->reopen_len;
		(void)logstore_write(ls->idxfd, &ls->pend[0],
		    sizeof(struct ls_rec), (first - 1) * sizeof(struct ls_rec));
		first++;
	}
	(void)ftruncate(ls->idxfd, (off_t)((first - 1) * sizeof(struct ls_rec)));
	for (s = 0; s < ls->nstreams; s++) {
		cut = ls->end[s];
		for (i = 0; i < ls->npend; i++) {
			uint64_t o = ls->pend[i].offset;

			if (i == 0 && ls->reopen_len > 0)
				o += ls->reopen_len;	/* keep its old bytes */
			if (ls->pend[i].stream == (uint32_t)s && o < cut)
				cut = o;
		}
		if (cut == ls->end[s])
			continue;
		(void)ftruncate(ls->fd[s], (off_t)cut);
		ls->dropped += ls->end[s] - cut;
		ls->end[s] = cut;
		if (ls->start[s] > cut)
			ls->start[s] = cut;
	}
	ls->nrec = first - 1;
	ls->npend = 0;
	ls->reopen_len = 0;
	memset(&ls->tail, 0, sizeof(ls->tail));	/* nothing to grow */
	errno = saved;
	return -1;
}

/*
 * Keep at most maxbytes of stream s.  The released prefix is punched in
 * whole steps of 64 KiB to 1 MiB (about an eighth of the bound, so the
 * disk holds at most that much more), no retained byte is ever zeroed; the
 * file keeps its size so offsets stay absolute and `tail -f` does not see
 * a truncation.  Each call punches only the newly released range: a
 * range from 0 would make the file system walk every earlier hole again
 * (a GiB through a 64 MiB bound is thousands of punches).  Without hole
 * punching (EOPNOTSUPP) the bytes are gone for readers all the same, only
 * the disk space is not returned.
 *
 * The index is not punched: a reader walking the records of released
 * bytes needs their lengths to report how much it skipped.  It grows by
 * 32 bytes per chunk.
 */
static void
logstore_trim(struct logstore *ls, int s)
{
	uint64_t	cut, step;

	if (ls->maxbytes == 0 || ls->end[s] - ls->start[s] <= ls->maxbytes)
		return;
	ls->start[s] = ls->end[s] - ls->maxbytes;
	/* A quarter of the bound at a time, within [64 KiB, 1 MiB]. */
	step = LS_PUNCH_MIN;
	while (step < LS_PUNCH_MAX && step * 8 <= ls->maxbytes)
		step *= 2;
	cut = ls->start[s] & ~(step - 1);
	if (cut > ls->punched[s]) {
		(void)fallocate(ls->fd[s], FALLOC_FL_PUNCH_HOLE |
		    FALLOC_FL_KEEP_SIZE, (off_t)ls->punched[s],
		    (off_t)(cut - ls->punched[s]));
		ls->punched[s] = cut;
	}
}

/* Store n <= LOG_CHUNK bytes from memory; the rest is dropped. */
static void
logstore_store(struct logstore *ls, int s, const void *d, size_t n)
{
	size_t	done;

	if (logstore_ensure(ls, s) == -1) {
		ls->dropped += n;
		return;
	}
	done = logstore_write(ls->fd[s], d, n, ls->end[s]);
	if (done > 0)
		logstore_commit(ls, s, done);
	ls->dropped += n - done;
}

/*
 * Read what the pipe holds, up to LS_READ_MAX, and store it as records of
 * at most LOG_CHUNK.  A copy through memory, on purpose: splice(2) from
 * the pipe into the file holds the pipe's lock while it copies into the
 * page cache, so the writer stalls meanwhile; read(2) holds it only for
 * the copy out, and the process keeps writing while the agent stores
 * (1 GiB: about 1.0 GB/s with splice, 1.7 GB/s this way, on the same
 * machine).  Storage errors never fail the call: logstore_store counts
 * what the disk refused as dropped, and the pipe is emptied all the same.
 */
ssize_t
logstore_drain(struct logstore *ls, int s, int fd)
{
	static char	buf[LS_READ_MAX];
	ssize_t		n, done, len;

	if (logstore_check(ls, s) == -1)
		return -1;
	do
		n = read(fd, buf, sizeof(buf));
	while (n == -1 && errno == EINTR);
	if (n <= 0)
		return n;
	for (done = 0; done < n; done += len) {
		len = n - done < LOG_CHUNK ? n - done : LOG_CHUNK;
		logstore_store(ls, s, buf + done, (size_t)len);
	}
	return n;
}

int
logstore_append(struct logstore *ls, int s, const void *d, size_t n)
{
	const char	*p = d;
	size_t		 len;

	if (logstore_check(ls, s) == -1)
		return -1;
	while (n > 0) {
		len = n < LOG_CHUNK ? n : LOG_CHUNK;
		logstore_store(ls, s, p, len);
		p += len;
		n -= len;
	}
	(void)logstore_flush(ls);
	return 0;
}

/*
 * A record that reads back with another seq is a hole or garbage, not
 * the record asked for.
 */
int
logstore_rec(struct logstore *ls, uint64_t seq, struct ls_rec *rec)
{
	ssize_t	n;

	if (seq == 0 || seq > ls->nrec) {
		errno = ENOENT;
		return -1;
	}
	if (seq > ls->handed)
		ls->handed = seq;	/* final from now on */
	if (seq > ls->nrec - (uint64_t)ls->npend) {
		*rec = ls->pend[seq - (ls->nrec - ls->npend) - 1];
		return 0;
	}
	do
		n = pread(ls->idxfd, rec, sizeof(*rec),
		    (off_t)((seq - 1) * sizeof(*rec)));
	while (n == -1 && errno == EINTR);
	if (n == -1)
		return -1;
	if ((size_t)n != sizeof(*rec) || rec->seq != seq ||
	    rec->stream >= (uint32_t)ls->nstreams || rec->len == 0 ||
	    rec->len > LOG_CHUNK || rec->offset > ls->end[rec->stream] ||
	    rec->len > ls->end[rec->stream] - rec->offset) {
		errno = EIO;
		return -1;
	}
	return 0;
}

ssize_t
logstore_pread(struct logstore *ls, int s, void *d, size_t len, uint64_t off)
{
	char	*p = d;
	size_t	 done = 0;
	ssize_t	 n;

	if (s < 0 || s >= ls->nstreams) {
		errno = EINVAL;
		return -1;
	}
	if (off < ls->start[s]) {
		errno = ERANGE;
		return -1;
	}
	if (off >= ls->end[s])
		return 0;
	/* Not past end: bytes beyond it belong to no record yet. */
	if (len > ls->end[s] - off)
		len = ls->end[s] - off;
	if (len > SIZE_MAX / 2)		/* fits ssize_t */
		len = SIZE_MAX / 2;
	while (done < len) {
		n = pread(ls->fd[s], p + done, len - done,
		    (off_t)(off + done));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return done > 0 ? (ssize_t)done : -1;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

void
logstore_close(struct logstore *ls)
{
	int	i, saved = errno;

	if (!ls->ro && ls->idxfd != -1)
		(void)logstore_flush(ls);
	for (i = 0; i < LS_NSTREAMS; i++) {
		if (ls->fd[i] != -1)
			close(ls->fd[i]);
		ls->fd[i] = -1;
	}
	if (ls->idxfd != -1)
		close(ls->idxfd);
	ls->idxfd = -1;
	ls->dirfd = -1;		/* borrowed */
	errno = saved;
}
