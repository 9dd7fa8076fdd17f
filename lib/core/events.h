/*
 * events: the lifecycle event log of a boot, and its readers.
 *
 * Every event is one JSON object on one line, {"type","time","bootId",
 * then the subject's fields}, appended to boots/<boot>/events as one
 * record of a one-stream logstore (its index gives each event a sequence
 * number), before any reader is told.  The log is bounded like an output
 * stream: past maxbytes its oldest events are released.  A cursor is the
 * logstore's: "<seq>-<tag>", seq the last event delivered, the tag bound
 * to the boot (cursor.h, with the ID "events").
 *
 * A reader walks the log from a cursor into a sink, as a log follower
 * does (follow.h): it holds one event in memory at most, pauses while its
 * sink's pending bytes pass the sink's high mark, and looks at no more
 * than EVENTS_PUMP_EVENTS events a loop turn.  A reader that caught up
 * waits (following) and is woken by the next append at the next turn.
 */
#ifndef TEND_EVENTS_H
#define TEND_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <ev.h>
#include <cjson/cJSON.h>

#include "store/cursor.h"

#define EVENTS_DIR	"events"	/* in boots/<boot>/: the log's directory */
#define EVENTS_FILE	"log"		/* in it, beside the logstore's index */
#define EVENTS_CURSOR_ID "events"	/* cursors' ID (cursor.h) */

struct events;
struct events_reader;

/*
 * The current boot's log: boots/<boot>/events under statefd (the
 * directory is made by the process table; until it exists, events are
 * counted as dropped and take no cursor).  maxbytes bounds it (0: none).
 */
struct events	*events_open(struct ev_loop *, int statefd, const char *boot,
		    uint64_t maxbytes);
/*
 * An earlier boot's log, read-only, from its directory (borrowed for the
 * call).  NULL and errno (ENOENT: that boot kept no log).
 */
struct events	*events_open_ro(int bootdirfd, const char *boot);
/*
 * The agent's handover (handover.c): the current log as JSON (its files
 * by fd), and that log taken up again by the next agent, appending
 * after its last event.
 */
cJSON		*events_handover_save(struct events *);
struct events	*events_adopt(int statefd, const char *boot,
		    uint64_t maxbytes, const cJSON *);
/* Its readers must be freed first. */
void		 events_close(struct events *);

/* The log events_emit appends to (NULL: none, events are discarded). */
void		 events_set_current(struct events *);
struct events	*events_current(void);
/*
 * Append an event of type with the subject's fields (an object, taken
 * and freed; NULL: none) to the current log.  Never fails the caller: an
 * event the disk refuses is counted as dropped.
 */
void		 events_emit(const char *type, cJSON *subject);
/* The same, to one log. */
void		 events_append(struct events *, const char *type, cJSON *);

/* What a log holds: the first kept and last events' seq, and drops. */
struct events_stat {
	uint64_t	 first;		/* 0 when none is kept */
	uint64_t	 last;
	uint64_t	 dropped;	/* events never stored */
	uint64_t	 bytes;		/* kept */
};
void		 events_stat(struct events *, struct events_stat *);
const char	*events_boot(struct events *);

/* Which events a reader hands over. */
struct events_filter {
	const char	*types;		/* "a.b,c." (a prefix ends in '.'),
					   or NULL: all */
	const char	*id;		/* the subject's "id", or NULL */
};

/* One event handed to a sink; valid for the call. */
struct events_item {
	const char	*cursor;	/* after it */
	const char	*type;		/* NUL-ended */
	const char	*json;		/* the stored object, no newline */
	size_t		 len;
	uint64_t	 skipped;	/* events.truncated: events lost */
};

/*
 * The transport.  event returns -1 when the sink takes no more (dead).
 * end (a reader that does not follow, or an earlier boot's) is the last
 * call: what is there was handed over; the sink may free the reader
 * then.  beat, if not NULL, every SSE_HEARTBEAT s while following.
 * pending: the sink's unsent bytes; above high the reader waits for
 * events_reader_drained.
 */
struct events_sink {
	int	(*event)(void *ctx, const struct events_item *);
	void	(*end)(void *ctx, const char *cursor);
	int	(*beat)(void *ctx);
	size_t	(*pending)(void *ctx);
	size_t	 high;
};

/* Reports a pending() that will never go down. */
#define EVENTS_SINK_DEAD	SIZE_MAX

/*
 * A reader of ev (which outlives it) with a filter (its strings copied).
 * follow: wait for more at the end (a live log only).  max: events handed
 * over before end (0: no bound).  NULL: out of memory.
 */
struct events_reader *events_reader_new(struct events *, struct ev_loop *,
		    const struct events_filter *, bool follow, uint64_t max);
/*
 * Where it starts: after the event a cursor names, at the first kept
 * event (NULL or ""), or after the last one ("end").  A cursor older
 * than what is kept is told as an events.truncated item first.  -1: not
 * a cursor of this log, or beyond its end.
 */
int		 events_reader_seek(struct events_reader *, const char *since);
/* Start handing over; the first pump runs now. */
void		 events_reader_start(struct events_reader *,
		    const struct events_sink *, void *ctx);
void		 events_reader_drained(struct events_reader *);
void		 events_reader_cursor(struct events_reader *,
		    char out[CURSOR_MAX]);
void		 events_reader_free(struct events_reader *);

/*
 * A type filter's syntax: comma-separated names of [a-z0-9._], each
 * non-empty.  Also the check of an event type.
 */
bool		 events_types_valid(const char *);
/* Does type pass the filter (NULL: every type)? */
bool		 events_type_match(const char *types, const char *type);

#endif
