/*
 * watch: directories watched with inotify on the loop, each watch's
 * events kept in a bounded ring that readers walk with cursors.
 *
 * A watch is shared: every reader of the same directory (and the same
 * recursive flag) holds a reference to one watch, and a watch outlives
 * its last reference by WATCH_LINGER seconds, so that a client that
 * reconnects resumes where it was (tend's /v1/watch, envd's WatchDir and
 * its polling watchers all read watches).  A watch that has lost events
 * (its first truncated) is not shared any more: a reader that comes
 * after gets a new watch, so that no reader joins a loss it was never
 * told of; the lost one ends with its last reader, without the linger.
 *
 * What is reported, each event with the path relative to the watched
 * directory ("" for the directory itself):
 *   create   a name made or moved in (IN_CREATE, IN_MOVED_TO)
 *   write    a file's content changed (IN_MODIFY)
 *   remove   a name removed (IN_DELETE; "" when the directory went)
 *   rename   a name moved away (IN_MOVED_FROM; its new name, if inside
 *            the watch, follows as a create)
 *   chmod    metadata changed (IN_ATTRIB)
 *   truncated  events were lost here: the kernel's queue overflowed
 *            (IN_Q_OVERFLOW), or a directory could not be watched
 *            (WATCH_DIRS_MAX, or the kernel's max_user_watches)
 * A file tend itself writes (upload.h: a temp, then a rename) is one
 * create of its name, or a write when it replaced a file: never the
 * temp's events nor a rename (files_tmp_state tells tend's temps).
 * Consecutive identical write and chmod events of one read are one.
 *
 * Recursive watches add a watch for every directory below, made or
 * moved in later too (and report what such a directory already held
 * when its watch was added as creates: the gap between its mkdir and
 * its watch is not silent).
 */
#ifndef TEND_WATCH_H
#define TEND_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include <ev.h>

#include "base/wlist.h"
#include "files.h"

enum watch_type {
	WATCH_CREATE,
	WATCH_WRITE,
	WATCH_REMOVE,
	WATCH_RENAME,
	WATCH_CHMOD,
	WATCH_TRUNCATED
};

struct watch_event {
	uint64_t	 seq;		/* the cursor of this event */
	int64_t		 ms;		/* wall clock, when read */
	enum watch_type	 type;
	char		*path;		/* relative to the watch; "" itself */
};

struct watchtab;
struct watch;

/*
 * A reader told, after each read of the kernel's queue that appended
 * events, to call watch_next; it recovers itself with container_of.
 */
struct watch_sub {
	struct wlist_link	 link;
	void			(*notify)(struct watch_sub *);
};

/* Watches of directories under root (kept by the caller). */
struct watchtab	*watchtab_new(struct ev_loop *, const struct files_root *root);
void		 watchtab_free(struct watchtab *);

/*
 * A reference to the watch of rel (a directory under the root, resolved
 * as files_open does): the one that exists, or a new one.  NULL with
 * errno: ENOENT, ENOTDIR, ELOOP (outside the root), EMFILE (WATCH_MAX
 * watches, or the kernel's inotify instances), ENOSPC (max_user_watches).
 */
struct watch	*watch_open(struct watchtab *, const char *rel, bool recursive);
/* Drop a reference; unsubscribe first. */
void		 watch_close(struct watch *);
void		 watch_subscribe(struct watch *, struct watch_sub *);
void		 watch_unsubscribe(struct watch *, struct watch_sub *);

/*
 * The event at *cursor or the first after it, *cursor moved past it;
 * NULL when there is none yet.  *gap: the ring no longer holds *cursor
 * (the reader fell behind, events were dropped): it went on from the
 * oldest kept.  The event is valid until the next read of the kernel.
 */
const struct watch_event *watch_next(struct watch *, uint64_t *cursor,
		    bool *gap);
/* The cursor of the next event to come: a new reader's start. */
uint64_t	 watch_head(const struct watch *);
/* This watch's identity: cursors of another watch mean nothing here. */
uint64_t	 watch_id(const struct watch *);
/* The watched directory is gone (a remove of "" was the last event). */
bool		 watch_gone(const struct watch *);
/* Directories held (1 when not recursive). */
int		 watch_ndirs(const struct watch *);
/* "create", "write", "remove", "rename", "chmod", "truncated". */
const char	*watch_type_name(enum watch_type);

#endif
