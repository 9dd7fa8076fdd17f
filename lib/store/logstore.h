/*
 * logstore: one process's stored output.
 *
 * A record directory holds one file per stream ("stdout", "stderr"; a
 * terminal has only "output" as stream 0) with the raw bytes exactly as the
 * process wrote them, and "index": one fixed-size record per chunk the
 * agent read, in the order it read them.  Offsets are absolute: when a
 * stream grows past maxbytes its oldest bytes are released by punching a
 * hole (the file keeps its size, `tail -f` keeps working) and `start`
 * moves forward.  Bytes that cannot be stored (ENOSPC, EIO) are counted in
 * `dropped` and take no offset.
 */
#ifndef TEND_LOGSTORE_H
#define TEND_LOGSTORE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <cjson/cJSON.h>

#define LS_NSTREAMS	2
#define LS_PEND		16	/* index records written in one go */
enum { LS_STDOUT = 0, LS_STDERR = 1 };

/* On-disk index record, host byte order, 32 bytes. */
struct ls_rec {
	uint64_t	seq;		/* 1-based, consecutive */
	uint64_t	offset;		/* absolute offset in its stream */
	uint32_t	len;		/* 1..LOG_CHUNK */
	uint32_t	stream;		/* LS_STDOUT or LS_STDERR */
	int64_t		ts_ms;		/* wall clock, ms since the epoch */
};

struct logstore {
	int		 fd[LS_NSTREAMS];	/* -1 when absent */
	int		 idxfd;
	int		 nstreams;
	uint64_t	 start[LS_NSTREAMS];	/* first retained offset */
	uint64_t	 end[LS_NSTREAMS];	/* bytes stored == next offset */
	uint64_t	 punched[LS_NSTREAMS];	/* released space up to here */
	uint64_t	 dropped;		/* read but not stored */
	uint64_t	 nrec;			/* last seq written */
	uint64_t	 maxbytes;		/* per stream; 0 = unbounded */
	bool		 ro;
	int		 dirfd;			/* lazy: borrowed, or -1 */
	struct ls_rec	 pend[LS_PEND];		/* records not yet in index */
	int		 npend;
	struct ls_rec	 tail;			/* the last record */
	uint32_t	 reopen_len;		/* pend[0] is the written tail,
						   this long on disk; or 0 */
	uint64_t	 handed;		/* records up to here were read */
	const char *const *names;		/* lazy: file names */
	/* The index bound (see logstore_gone). */
	uint64_t	 igone;			/* records 1..igone are released */
	uint64_t	 ibase[LS_NSTREAMS];	/* bytes of each stream in them */
	uint64_t	 irel;			/* records 1..irel: bytes released */
	uint64_t	 irelbase[LS_NSTREAMS];
	uint64_t	 ipunched;		/* index bytes punched up to here */
	bool		 itrim;			/* a start moved: look again */
	bool		 inopunch;		/* the index cannot be punched */
};

/*
 * Create the files in dirfd (the record's directory) for nstreams streams
 * named by names[] ("stdout", "stderr") plus "index".  -1 and errno.
 */
int	logstore_create(struct logstore *, int dirfd, int nstreams,
	    const char *const names[], uint64_t maxbytes);

/*
 * The same, but each file is created when its first byte is stored: a
 * process that writes nothing costs no files.  dirfd is borrowed and
 * must stay open as long as bytes may come; names must outlive ls.
 */
int	logstore_create_lazy(struct logstore *, int dirfd, int nstreams,
	    const char *const names[], uint64_t maxbytes);

/*
 * A store without a directory (its record has none yet): every byte is
 * dropped and counted, readers find it empty.  names must outlive ls.
 */
void	logstore_create_none(struct logstore *, int nstreams,
	    const char *const names[], uint64_t maxbytes);

/*
 * Open an existing record read-only (an earlier boot's, or a re-read).
 * A missing file reads as empty (a lazy store never stored a byte).
 * start/end/nrec are recovered from the files (SEEK_DATA, sizes).
 */
int	logstore_open(struct logstore *, int dirfd, int nstreams,
	    const char *const names[]);

/*
 * Give a closed store (logstore_close) of a lazy one its files back,
 * read-only, from dirfd, keeping what it counted: bounds, records,
 * drops (the files cannot tell those).  -1 and errno: ls stays closed.
 */
int	logstore_reopen(struct logstore *, int dirfd);

/*
 * Move what is readable now from the non-blocking pipe fd into stream s,
 * a few LOG_CHUNKs at most, as index records of at most LOG_CHUNK bytes.
 * Bytes that continue the last record of the same stream within 20 ms are
 * added to it while no reader has been handed that record: a process
 * writing a byte at a time costs at most 50 records a second, not one per
 * write.  Returns the number of
 * bytes taken from the pipe (stored or dropped) > 0; 0 at EOF; -1 with
 * errno EAGAIN when nothing is readable, or another errno on a read error
 * of the pipe.  Storage errors never fail this call: the bytes are read,
 * discarded and counted in dropped.
 */
ssize_t	logstore_drain(struct logstore *, int s, int pipefd);

/*
 * Index records are written in batches: logstore_drain keeps up to
 * LS_PEND in memory (logstore_rec sees them); flush writes them.  If the
 * index cannot take them, their bytes are cut off again and counted as
 * dropped, as when a single record fails.  -1 then.
 */
int	logstore_flush(struct logstore *);
/* Make every record so far final (a reader starts after them). */
void	logstore_seal(struct logstore *);
/*
 * Milliseconds until the last record can grow no more (logstore_drain's
 * merging), or 0 when it cannot grow now: a follower that waits this long
 * is never handed a record that would still grow, so its reading does
 * not stop the merging.
 */
int64_t	logstore_tail_open(struct logstore *);

/* Store bytes given in memory, as one or more records, flushed.  Same contract. */
int	logstore_append(struct logstore *, int s, const void *, size_t);

/*
 * Read index record seq (1-based).  0, or -1 with ENOENT past the end,
 * ERANGE for a record the index bound released (logstore_gone), EIO for
 * one that cannot be read or makes no sense.
 * A record handed out is final; until then the last record may grow
 * (see logstore_drain).
 */
int	logstore_rec(struct logstore *, uint64_t seq, struct ls_rec *);

/*
 * Read len bytes of stream s at absolute offset off.  Bytes before
 * start[s] are gone: the call returns -1 with errno ERANGE.  Returns bytes
 * read (short at the end of the stream).
 */
ssize_t	logstore_pread(struct logstore *, int s, void *, size_t, uint64_t off);

/*
 * The index is bounded like the streams: records whose bytes were all
 * released from their stream are released from the index too, in steps
 * of LS_ISTEP records (the file keeps its size, the records read back as
 * holes).  The last slot of the released range then holds a base record
 * (len 0, stream LS_BASE) that keeps, for readers of a reopened record,
 * how many bytes of each stream the released records held: offset for
 * stream 0, ts_ms for stream 1.  Returns the number of leading records
 * released (0: none); bytes[] gets what they held per stream.
 */
/*
 * Part of the file format, not tunables: a reopened record looks for its
 * base record at multiples of LS_ISTEP.
 */
#define LS_ISTEP	2048		/* records: 64 KiB of index */
#define LS_BASE		0xba5eU		/* the base record's stream */
uint64_t logstore_gone(struct logstore *, uint64_t bytes[LS_NSTREAMS]);

void	logstore_close(struct logstore *);

/*
 * The agent's handover (logstore_json.c): the store as JSON, its pending
 * records written and every record made final first (its files by fd
 * number: an execve keeps them); and back, into a store made by
 * logstore_create_none with the same streams.  NULL: no memory; -1: not
 * such a store.
 */
cJSON	*logstore_save(struct logstore *);
int	 logstore_load(struct logstore *, const cJSON *);

#endif
