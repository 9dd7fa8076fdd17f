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

#include "base/codec.h"
#include "base/tunables.h"
#include "logstore.h"

#define LS_RECSIZE	((off_t)sizeof(struct ls_rec))
#define LS_PUNCH_MIN	(64 * 1024ULL)	/* hole-punch steps, whole pages */
#define LS_PUNCH_MAX	(1024 * 1024ULL)
#define LS_INDEX	"index"
#define LS_READ_MAX	(4 * LOG_CHUNK)	/* bytes taken by one drain */
#define LS_MERGE_MS	20		/* reads merged into one record */
#define LS_IBATCH	128		/* index records read in one go: 4 KiB */
#define LS_IPAGE	(LS_IBATCH * LS_RECSIZE)
#define LS_ITRIM_MAX	8		/* batches looked at per flush */

_Static_assert(sizeof(struct ls_rec) == 32, "index record is 32 bytes");
_Static_assert(LOG_CHUNK <= UINT32_MAX, "a chunk length fits ls_rec.len");
_Static_assert(LS_ISTEP * 32 == LS_PUNCH_MIN, "index steps are punch steps");
_Static_assert(LS_ISTEP % LS_IBATCH == 0, "a step is whole pages");

static int	logstore_openall(struct logstore *, int, int,
		    const char *const[], int, mode_t);
static int	logstore_check(struct logstore *, int);
static int	logstore_names_ok(int, const char *const[]);
static int	logstore_ensure(struct logstore *, int);
static size_t	logstore_write(int, const void *, size_t, uint64_t);
static void	logstore_commit(struct logstore *, int, size_t);
static void	logstore_trim(struct logstore *, int);
static void	logstore_store(struct logstore *, int, const void *, size_t);
static void	logstore_trim_index(struct logstore *);
static void	logstore_punch_index(struct logstore *, uint64_t,
		    const uint64_t[LS_NSTREAMS]);
static void	logstore_find_base(struct logstore *);
static bool	logstore_slot(struct logstore *, uint64_t, struct ls_rec *);

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

/*
 * No directory: logstore_ensure has none to create files in, so every
 * byte is dropped and counted, and readers find an empty store.
 */
void
logstore_create_none(struct logstore *ls, int nstreams,
    const char *const names[], uint64_t maxbytes)
{
	memset(ls, 0, sizeof(*ls));
	memset(ls->fd, 0xff, sizeof(ls->fd));	/* -1 each */
	ls->idxfd = ls->dirfd = -1;
	ls->nstreams = nstreams;
	ls->maxbytes = maxbytes;
	ls->names = names;
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
		logstore_find_base(ls);
	}
	return 0;
fail:
	saved = errno;
	logstore_close(ls);
	errno = saved;
	return -1;
}

/*
 * Only the files are opened: what the store counted (bounds, records,
 * drops, the index bound) is what it knew when it closed them.
 */
int
logstore_reopen(struct logstore *ls, int dirfd)
{
	struct logstore	ro;
	int		i;

	if (ls->names == NULL) {
		errno = EINVAL;
		return -1;
	}
	if (logstore_openall(&ro, dirfd, ls->nstreams, ls->names,
	    O_RDONLY | O_CLOEXEC, 0) == -1)
		return -1;
	logstore_close(ls);
	for (i = 0; i < LS_NSTREAMS; i++)
		ls->fd[i] = ro.fd[i];
	ls->idxfd = ro.idxfd;
	ls->ro = true;
	return 0;
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
 * How long the last record may still grow: it is the newest, no reader
 * has been handed it, it has room, its stream has not moved on past it,
 * and it was read less than LS_MERGE_MS ago (its timestamp stays true to
 * within that).  Milliseconds left, or 0.
 */
static int64_t
logstore_can_grow(struct logstore *ls, int64_t now)
{
	struct ls_rec	*t = &ls->tail;

	if (ls->ro || ls->nrec == 0 || ls->nrec <= ls->handed ||
	    t->seq != ls->nrec || t->len >= LOG_CHUNK ||
	    t->stream >= (uint32_t)ls->nstreams ||
	    t->offset + t->len != ls->end[t->stream] ||
	    now - t->ts_ms > LS_MERGE_MS ||
	    now < t->ts_ms)		/* the clock stepped back */
		return 0;
	return LS_MERGE_MS - (now - t->ts_ms) + 1;
}

int64_t
logstore_tail_open(struct logstore *ls)
{
	return logstore_can_grow(ls, codec_now_ms());
}

/*
 * Grow the last record by len bytes of stream s, if it can grow and is of
 * s with room for them.  A record already written is taken back into the
 * pending batch (it is the batch's first: the next flush rewrites it in
 * place).
 */
static bool
logstore_merge(struct logstore *ls, int s, size_t len)
{
	struct ls_rec	*t = &ls->tail;

	if (logstore_can_grow(ls, codec_now_ms()) == 0 ||
	    t->stream != (uint32_t)s || t->len + len > LOG_CHUNK)
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

/* The len bytes at end[s] are in the file: give them a record (pending). */
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
		if (ls->itrim)
			logstore_trim_index(ls);
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
 * The index follows, in logstore_trim_index.
 */
static void
logstore_trim(struct logstore *ls, int s)
{
	uint64_t	cut, step;

	if (ls->maxbytes == 0 || ls->end[s] - ls->start[s] <= ls->maxbytes)
		return;
	ls->start[s] = ls->end[s] - ls->maxbytes;
	ls->itrim = true;
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

/*
 * Release from the index the records whose bytes were all released from
 * their stream, as logstore_trim does for the bytes: otherwise a process
 * that writes for ever grows its index for ever (32 bytes a record).
 * irel walks the written records in order and stops at the first one
 * that still holds a retained byte (offsets grow within a stream, so no
 * later record of that stream is released either).  The released prefix
 * is punched in steps of LS_ISTEP records, from the flush that wrote the
 * records, a few pages read at most per call.  A record of a quiet stream
 * keeps the records after it until its own stream releases it.
 *
 * Records that can still change are never released: pending ones are
 * not written yet, and the last record of a stream always holds retained
 * bytes (start stays below end).
 */
static void
logstore_trim_index(struct logstore *ls)
{
	struct ls_rec	 r[LS_IBATCH];
	uint64_t	 written = ls->nrec - (uint64_t)ls->npend;
	uint64_t	 cut = 0, base[LS_NSTREAMS] = { 0 };
	ssize_t		 n;
	size_t		 k, i;
	int		 batches = LS_ITRIM_MAX;

	ls->itrim = false;
	if (ls->inopunch || ls->idxfd == -1)
		return;
	while (ls->irel < written) {
		if (batches-- == 0) {
			ls->itrim = true;	/* the rest at the next flush */
			break;
		}
		k = written - ls->irel < LS_IBATCH ? written - ls->irel :
		    LS_IBATCH;
		n = pread(ls->idxfd, r, k * sizeof(r[0]),
		    (off_t)(ls->irel * sizeof(r[0])));
		if (n < (ssize_t)sizeof(r[0]))
			break;
		k = (size_t)n / sizeof(r[0]);
		for (i = 0; i < k; i++) {
			if (r[i].seq != ls->irel + 1 ||
			    r[i].stream >= (uint32_t)ls->nstreams ||
			    r[i].offset + r[i].len > ls->start[r[i].stream])
				goto done;
			ls->irelbase[r[i].stream] = r[i].offset + r[i].len;
			if (++ls->irel % LS_ISTEP == 0) {
				cut = ls->irel;
				memcpy(base, ls->irelbase, sizeof(base));
			}
		}
	}
done:
	if (cut > ls->igone)
		logstore_punch_index(ls, cut, base);
}

/*
 * Release records 1..cut (a multiple of LS_ISTEP) from the index.  The
 * range is punched but for its last page, which is rewritten as zeros
 * and the base record (at the slot of record cut): a reader that reopens
 * the record finds it there (logstore_find_base).  Punching first means
 * that a file system without hole punching loses no record.  A crash
 * between the two steps leaves released records readable in that page,
 * and no base: readers of the reopened record then count from them.
 */
static void
logstore_punch_index(struct logstore *ls, uint64_t cut,
    const uint64_t base[LS_NSTREAMS])
{
	struct ls_rec	 page[LS_IBATCH];
	uint64_t	 end = cut * LS_RECSIZE - LS_IPAGE;

	if (end > ls->ipunched && fallocate(ls->idxfd, FALLOC_FL_PUNCH_HOLE |
	    FALLOC_FL_KEEP_SIZE, (off_t)ls->ipunched,
	    (off_t)(end - ls->ipunched)) == -1) {
		if (errno == EOPNOTSUPP || errno == ENOSYS)
			ls->inopunch = true;
		return;
	}
	ls->ipunched = end;
	memset(page, 0, sizeof(page));
	page[LS_IBATCH - 1].seq = cut;
	page[LS_IBATCH - 1].stream = LS_BASE;
	page[LS_IBATCH - 1].offset = base[0];
	page[LS_IBATCH - 1].ts_ms = (int64_t)base[1];
	/* Gone from the file either way: readers of this store skip them. */
	(void)logstore_write(ls->idxfd, page, sizeof(page), end);
	ls->igone = cut;
	memcpy(ls->ibase, base, sizeof(ls->ibase));
}

/* Read the index slot of record seq; false if it cannot be read whole. */
static bool
logstore_slot(struct logstore *ls, uint64_t seq, struct ls_rec *rec)
{
	ssize_t	n;

	do
		n = pread(ls->idxfd, rec, sizeof(*rec),
		    (off_t)((seq - 1) * sizeof(*rec)));
	while (n == -1 && errno == EINTR);
	return n == (ssize_t)sizeof(*rec);
}

/*
 * A reopened record whose index starts with a hole released a prefix: the
 * base record is at the slot of record k * LS_ISTEP for some k, with
 * zeros before it and real records after, so a binary search finds it in
 * a few reads.  Without one (a damaged index, or a crash between punch
 * and base) nothing counts as released and readers walk what is there.
 */
static void
logstore_find_base(struct logstore *ls)
{
	struct ls_rec	r;
	uint64_t	lo = 1, hi = ls->nrec / LS_ISTEP, k;

	if (ls->idxfd == -1 || !logstore_slot(ls, 1, &r) || r.seq != 0)
		return;
	while (lo <= hi) {
		k = lo + (hi - lo) / 2;
		if (!logstore_slot(ls, k * LS_ISTEP, &r))
			return;
		if (r.seq == k * LS_ISTEP && r.stream == LS_BASE && r.len == 0) {
			ls->igone = ls->irel = r.seq;
			ls->ibase[0] = ls->irelbase[0] = r.offset;
			if (ls->nstreams > 1)
				ls->ibase[1] = ls->irelbase[1] =
				    (uint64_t)r.ts_ms;
			return;
		}
		if (r.seq == 0)
			lo = k + 1;
		else
			hi = k - 1;
	}
}

uint64_t
logstore_gone(struct logstore *ls, uint64_t bytes[LS_NSTREAMS])
{
	memcpy(bytes, ls->ibase, sizeof(ls->ibase));
	return ls->igone;
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
 * the record asked for.  One the index bound released is ERANGE.
 */
int
logstore_rec(struct logstore *ls, uint64_t seq, struct ls_rec *rec)
{
	if (seq == 0 || seq > ls->nrec) {
		errno = ENOENT;
		return -1;
	}
	if (seq <= ls->igone) {
		errno = ERANGE;
		return -1;
	}
	if (seq > ls->handed)
		ls->handed = seq;	/* final from now on */
	if (seq > ls->nrec - (uint64_t)ls->npend) {
		*rec = ls->pend[seq - (ls->nrec - ls->npend) - 1];
		return 0;
	}
	if (!logstore_slot(ls, seq, rec) || rec->seq != seq ||
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
