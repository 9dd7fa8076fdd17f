/*
 * record: a process's record on disk, boots/<boot>/procs/<id>/ —
 * meta.json (how it was launched, written once), status.json (its last
 * status, replaced atomically) and its stored output (a logstore of the
 * streams "stdout" and "stderr").  The only module that knows these
 * names.  Also: reading an earlier boot's records, marking those whose
 * boot ended under them "lost", and syncfs off the loop.
 */
#ifndef TEND_RECORD_H
#define TEND_RECORD_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "logstore.h"

/* Which records a directory holds: their streams and status fields. */
enum record_kind {
	RECORD_PROC,	/* procs/: "stdout", "stderr"; status "state" */
	RECORD_TERM	/* terms/: "output"; status "status" */
};

/*
 * A record's directory made ahead of its launch, off the request path:
 * ".spare" beside the records directory (in the boot's directory, where
 * no record is looked for), with meta.json's and status.json's temps
 * made in it, empty.  A launch renames it to its ID and so creates no
 * file system object at all: on ext4 without a journal each new inode
 * scans past every inode freed in the last seconds.
 */
struct record_spare {
	bool	 made;		/* the directory is; false in a zeroed
				   record_dir */
	bool	 off;		/* the file system cannot rename it into place */
	bool	 meta, status;	/* its temps are made */
	int	 parentfd;	/* the boot's directory, while made */
	int	 dirfd;		/* the spare, while made */
};

/*
 * Records' directories made ahead by a child of the agent, off its loop
 * (record_pool_fill): boots/<boot>/.spares/<n>, n counting up over the
 * boot, each with meta.json's and status.json's temps made, empty.  The
 * child makes each in .spares/new and renames it whole, so that a launch
 * takes a complete one or none, and a launch's rename out of .spares
 * never waits for a create in it.  Each name is renamed into .spares
 * once; one missing there once no child works (removed from outside)
 * is passed over.
 */
struct record_pool {
	bool	 made;		/* fd is open; false in a zeroed record_dir */
	bool	 off;		/* the file system cannot rename them, or
				   the agent stops */
	int	 fd;		/* .spares, while made */
	unsigned next;		/* the name the next launch takes */
	unsigned from;		/* the first name asked of the last child */
	unsigned end;		/* one past the last name asked of a child */
	pid_t	 pid;		/* the child making them, or 0 */
	double	 again;		/* a child failed: none before this time */
};

/* A boot's records directory, as its owner (the table) holds it. */
struct record_dir {
	int	 fd;		/* boots/<boot>/procs, or -1 while it cannot
				   be made */
	int	 err;		/* errno of the last write the state dir
				   refused, while one is owed; or 0 */
	/* Make fd (again): it was never made, or was removed.  -1, errno. */
	int	(*remake)(struct record_dir *);
	enum record_kind kind;	/* 0: processes */
	struct record_spare spare;	/* record_spare_make */
	struct record_pool pool;	/* record_pool_fill */
};

/* One record's files, for its live process. */
struct record {
	struct record_dir *dir;
	const char	*id;		/* the directory's name (the owner's) */
	int		 dirfd;		/* held, or -1 */
	bool		 nodir;		/* launched without a directory: its
					   output is dropped */
	bool		 fds_open;	/* ls (and dirfd) hold open files */
	bool		 status_failed;	/* the last status.json write failed */
	char		*meta;		/* meta.json, until it is written */
	bool		 metatmp;	/* meta.json.tmp was made ahead (the
					   spare's), until meta.json is written */
	bool		 statustmp;	/* the same for status.json */
	struct logstore	 ls;		/* its output: the owner drains into it */
};

/* ------------------------------------------------------------------ */
/* A live record */

/* Nothing open, nothing owed: what record_free may take. */
void	record_init(struct record *);
/*
 * Make the record's directory and its (lazy) store.  When the state dir
 * refuses it (full, read-only, the procs directory missing) the record
 * lives in memory, its output dropped and counted, and its directory is
 * made with its first file written later: 1, with errno saying why.  0,
 * or -1 and errno for anything else (a link planted under the ID).
 */
int	record_open(struct record *, struct record_dir *, const char *id,
	    uint64_t maxlog);
/*
 * A record handed over by the agent before (core/handover.c): empty,
 * of d's kind, named id; its fields and store are the caller's to fill.
 */
void	record_adopt(struct record *, struct record_dir *, const char *id);
/* Take meta (malloc'd JSON text) and write it; kept while refused. */
int	record_set_meta(struct record *, char *meta);
/* Write meta.json if it is still owed.  0, or -1 and errno. */
int	record_put_meta(struct record *);
/*
 * Replace status.json with json (NULL: it could not be made, ENOMEM).
 * -1 and errno when it did not take: the previous file stays whole, and
 * the status is owed until a write takes.
 */
int	record_put_status(struct record *, const char *json);
/* The last status.json write failed: a status is owed. */
bool	record_status_failed(const struct record *);
/* meta.json or status.json is owed. */
bool	record_owed(const struct record *);
/* Launched without a directory, and none made since. */
bool	record_in_memory(const struct record *);
/* Give back ls's files and the directory's fd (an ended record). */
bool	record_release(struct record *);
/* The store, its files reopened read-only if they were given back. */
struct logstore *record_store(struct record *);
/*
 * Remove the files (while no spare is made, the emptied directory
 * becomes the spare).  -1 and errno: then they stay as they were.
 */
int	record_remove(struct record *);
void	record_free(struct record *);
/* A state dir that is full, read-only or gone refused with this errno. */
bool	record_refused(int err);

/*
 * One step of making the directory's spare (struct record_spare): one
 * file system object, so that a request that comes meanwhile waits for
 * one create at most.  The next record_open takes what is made (a temp
 * not made yet is made when it is written).  0 when the spare is whole,
 * 1 when a step remains, -1 and errno (then none is left, and the next
 * launch makes its directory itself).
 */
int	record_spare_make(struct record_dir *);
/* The spare is whole: nothing to make. */
bool	record_spare_ready(const struct record_dir *);
/* Remove the spare, if any (shutdown, or its rename failed). */
void	record_spare_drop(struct record_dir *);

/*
 * The pool (struct record_pool) as the next turn of the loop finds it
 * at time now: 1 when a child should fill it (RECORD_POOL_LOW or fewer
 * left, none working), 0 when it serves as it is, -1 when it cannot
 * (the file system, a state dir refusing writes, a child failed less
 * than RECORD_POOL_RETRY ago, a stop): then the spare is made on the
 * loop, as before there was a pool.
 */
int	record_pool_want(const struct record_dir *, double now);
/*
 * Fork the child that makes RECORD_POOL more (.spares made, or made
 * anew if it was removed); its owner hands its exit to
 * record_pool_reaped.  0, or -1 and errno: EBUSY while one works, else
 * none before RECORD_POOL_RETRY.
 */
int	record_pool_fill(struct record_dir *, double now);
/* pid was the pool's child: taken (true), its failure noted. */
bool	record_pool_reaped(struct record_dir *, pid_t, int wstatus,
	    double now);
/*
 * No more: kill its child (not waited for: record_pool_reaped still
 * takes it) and remove .spares (a stop).
 */
void	record_pool_drop(struct record_dir *);

/* ------------------------------------------------------------------ */
/* Earlier boots' records, by name under their procs directory */

/* An ID, the name of a record's directory: ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$ */
bool	record_id_valid(const char *);

/* The last status.json as written, NUL-terminated; NULL and errno. */
char	*record_status_text(int procsfd, const char *id, size_t *len);
/*
 * Open a record read-only: its output into ls (logstore_open) and its
 * last status, parsed, into *status (NULL when it has none).  -1 and
 * errno (ENOENT: no such record).
 */
int	record_open_ro(int procsfd, const char *id, struct logstore *ls,
	    cJSON **status);
int	record_open_ro_kind(enum record_kind, int dirsfd, const char *id,
	    struct logstore *ls, cJSON **status);
/* The last statuses of every record, those in state `state` ("": all). */
cJSON	*record_list(int procsfd, const char *state);
/*
 * Records without a final status (running, or none written) become
 * state "error" with error.code "lost", once; boot names their boot.
 */
void	record_mark_lost(int procsfd, const char *boot);
/* The same for a directory of records of that kind (terms/). */
void	record_mark_lost_kind(enum record_kind, int dirsfd, const char *boot);
/*
 * Told of each record marked lost (what: its kind's log name, "process"
 * or "terminal"), after its status is written; NULL: nobody.
 */
extern void (*record_lost_hook)(const char *what, const char *boot,
	    const char *id);

/* ------------------------------------------------------------------ */
/* Durability */

/*
 * syncfs(fd) in a child, so that the loop does not wait for the disk:
 * the child's pid (for the reap loop), or 0 when no child could be made
 * and the sync was done here, -1 and errno if that failed.
 */
pid_t	record_sync(int fd);

#endif
