/*
 * follow: the pump from a cursor through a record's logstore to a sink.
 *
 * A reader never holds output in memory beyond one chunk (one piece, for
 * a sink that takes records in pieces): the files are the buffer.  A follow reads the index from its own position while its
 * sink takes data, pauses when the sink's pending bytes pass its high
 * mark, and resumes on follow_drained or when the process produced more.
 * One callback sends at most LOGS_PUMP_BYTES and looks at most at
 * LOGS_SCAN_MAX records, then lets the loop serve everyone else before
 * it goes on.  The sink is the transport (SSE events, raw chunked bytes,
 * a JSON poll, a WebSocket): follow knows nothing of HTTP.
 */
#ifndef TEND_FOLLOW_H
#define TEND_FOLLOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ev.h>

#include "proc.h"
#include "store/cursor.h"
#include "store/logstore.h"
#include "term.h"

struct follow;

/* One stored piece, handed to the sink; data is valid for the call. */
struct follow_chunk {
	int		 stream;	/* LS_STDOUT or LS_STDERR */
	uint64_t	 seq;		/* index record (FOLLOW_RECORDS) */
	uint64_t	 offset;	/* of data[0] in its stream */
	const char	*data;
	size_t		 len;
	int64_t		 ts_ms;		/* when it was read from the pipe */
	const char	*cursor;	/* after this chunk (FOLLOW_RECORDS) */
};

/* Bytes the reader will never get. */
struct follow_gap {
	const char	*cursor;	/* where the gap is */
	int64_t		 ts_ms;
	uint64_t	 skipped;	/* released by the disk bound, or dropped */
	uint64_t	 dropped;	/* of those, never stored (0: none) */
};

/* Why a follow stops. */
enum follow_why {
	FOLLOW_ENDED,		/* the resource ended and all was delivered */
	FOLLOW_CAUGHT_UP,	/* not following: what exists was delivered */
	FOLLOW_GONE		/* the resource is being removed */
};

/* Reports a pending() that will never go down: the sink is dead. */
#define FOLLOW_SINK_DEAD	SIZE_MAX

/*
 * The transport.  chunk and gap return -1 when the sink cannot take it
 * (the pump stops; it is dead or will drain).  end is the last call:
 * the sink owns what follows (it must follow_free, now or later) and the
 * pump does not touch the follow again.  beat, if not NULL, is called
 * every SSE_HEARTBEAT seconds.  pending is the sink's unsent bytes;
 * above high the pump waits for follow_drained.  file, if not NULL,
 * takes a byte walk's bytes straight from the store's file once no more
 * can be written to it (the process ended and its output is stored):
 * up to n bytes of fd at *off, advanced; the bytes taken, or -1 when it
 * takes no more now (it will drain, or it is dead).
 */
struct follow_sink {
	int	(*chunk)(void *ctx, const struct follow_chunk *);
	int	(*gap)(void *ctx, const struct follow_gap *);
	void	(*end)(void *ctx, enum follow_why, const char *cursor);
	int	(*beat)(void *ctx);
	size_t	(*pending)(void *ctx);
	size_t	 high;
	ssize_t	(*file)(void *ctx, int fd, uint64_t *off, size_t n);
};

/* What is read. */
enum follow_walk {
	FOLLOW_RECORDS,		/* the index: both streams, with cursors */
	FOLLOW_BYTES		/* one stream's bytes from an offset */
};

struct follow_src {
	struct logstore	*ls;		/* open for the follow's lifetime */
	struct proc	*proc;		/* watched; NULL: a closed record */
	struct term	*term;		/* or a terminal, watched (proc NULL) */
	enum proc_end	 until;		/* what "ended" means to this reader */
	const char	*boot;		/* cursors name the record: boot, */
	const char	*id;		/* id */
	const char	*started;	/* and its startedAt */
};

struct follow_opts {
	enum follow_walk walk;
	bool		 follow;	/* wait for more until the end */
	bool		 tell_dropped;	/* a gap for bytes the disk refused */
	bool		 eager;		/* take a last record still open now,
					   sealing it (an interactive reader) */
	int		 stream;	/* FOLLOW_BYTES */
	uint64_t	 offset;	/* FOLLOW_BYTES */
	size_t		 piece;		/* FOLLOW_RECORDS, a sink without
					   cursors (every piece has the
					   record's): a chunk holds at most
					   this many bytes of a record, each
					   read from the store once the sink
					   is below its high mark; 0: whole
					   records */
};

struct follow	*follow_new(struct ev_loop *, const struct follow_src *,
		    const struct follow_opts *);
void		 follow_free(struct follow *);
/*
 * Where to start (FOLLOW_RECORDS): after the record a cursor names (NULL
 * or "": the beginning), or, with replay false, after what exists now.
 * -1 for a cursor that is not of this record or lies beyond its end.
 */
int		 follow_seek(struct follow *, const char *since, bool replay);
/* Start pumping into sink; the first pump runs now. */
void		 follow_start(struct follow *, const struct follow_sink *,
		    void *ctx);
/* The sink took its pending bytes: go on. */
void		 follow_drained(struct follow *);
/*
 * A bounded read of what exists now (a JSON poll), streamed into sink as
 * a pump does (its high mark, a budget per callback, follow_drained):
 * the records after the position, up to one that would pass limit bytes
 * (the first with retained bytes is always taken) or LOGS_SCAN_MAX looked
 * at, are chosen now; their bytes go to sink->chunk one stream after the
 * other (all of stdout's, then stderr's), read from the store as they
 * are sent (in o.piece pieces, or chunks), and then sink->end tells
 * FOLLOW_CAUGHT_UP with the cursor after them (FOLLOW_GONE if the
 * resource is removed first).  follow_skipped then counts the bytes
 * released before they were read, while the reply was sent included.
 * No gap is told.  The first pump runs now.
 */
void		 follow_poll_start(struct follow *, const struct follow_sink *,
		    void *ctx, uint64_t limit);
/* The reader's cursor now; bytes skipped not yet reported; ended. */
void		 follow_cursor(struct follow *, char out[CURSOR_MAX]);
uint64_t	 follow_skipped(struct follow *);
/* The resource ended and the reader has all of it. */
bool		 follow_done(struct follow *);
struct proc	*follow_proc(struct follow *);
struct term	*follow_term(struct follow *);	/* NULL once removed */

#endif
