/*
 * proc: the process table.  Each launched process is a struct proc in
 * memory — its pipes, its timers, its record on disk (lib/record.h) and
 * who waits on it — and the table tells subscribers of each record's
 * start, end and removal.  The structs are proc's own (and its unit
 * test's): other modules use the functions below.
 */
#ifndef TEND_PROC_H
#define TEND_PROC_H

#include <sys/resource.h>
#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <ev.h>
#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/tunables.h"
#include "base/wlist.h"
#include "job.h"
#include "store/logstore.h"
#include "store/record.h"
#include "sys/spawn.h"

enum proc_state {
	PROC_RUNNING,	/* root alive, or its group has not settled yet */
	PROC_EXITED,	/* root reaped and no member of its group left */
	PROC_ERROR	/* lost: its boot ended before a final status */
};

/* What a watcher is told. */
enum proc_event {
	PROC_EV_OUTPUT,	/* new index records */
	PROC_EV_EXIT,	/* the root was reaped */
	PROC_EV_END,	/* the group settled (state left running) */
	PROC_EV_EOF,	/* both output pipes reached EOF */
	PROC_EV_GONE	/* the record is being removed: unlink now */
};

/* Ended for what purpose (proc_ended). */
enum proc_end {
	PROC_END_ROOT,	/* the root was reaped (exec's reply and stream) */
	PROC_END_STATE,	/* the record left running */
	PROC_END_OUTPUT	/* left running, and all its output is stored */
};

/* What a table subscriber is told, of any record. */
enum proctab_event {
	PROCTAB_EV_START,	/* launched and in the table */
	PROCTAB_EV_END,		/* left running (its group settled) */
	PROCTAB_EV_REMOVE	/* out of the table: freed after the call */
};

/*
 * A party interested in one process (a waiter, a follower): embedded in
 * its owner, recovered with container_of in fn.  proc is the process
 * watched, NULL once the watch is removed.  In fn a watcher may remove
 * any watch, free it, add one; not remove the record (proc_delete): the
 * table's own removals wait for the loop (trimming) for that reason.
 */
struct proc_watch {
	struct wlist_link	 link;
	struct proc		*proc;
	void			(*fn)(struct proc_watch *, enum proc_event);
};

/* A party interested in every record of a table (shutdown, events). */
struct proctab_sub {
	struct wlist_link	 link;
	struct proctab		*tab;
	void			(*fn)(struct proctab_sub *, struct proc *,
				    enum proctab_event);
};

struct proc {
	struct proc	*next, *prev;
	struct proc	*idnext;	/* its ID's bucket */
	struct proc	*pidnext;	/* its pid's bucket, until reaped */
	char		 id[PROC_ID_MAX + 1];
	struct proctab	*tab;
	pid_t		 pid;		/* root; also the process group */
	enum proc_state	 state;
	char		**argv;
	char		*cwd;
	char		*tags;		/* compact JSON text: no tree kept */
	int64_t		 started_ms, ended_ms;
	bool		 reaped;	/* the root's status is known */
	struct exit_status exit;	/* the root's, once reaped */
	bool		 status_written;	/* the first status was attempted */
	struct record	 rec;		/* its files, its stored output */
	int		 out[LS_NSTREAMS];	/* pipe read ends, -1 at EOF */
	ev_io		 outio[LS_NSTREAMS];
	ev_timer	 outwait[LS_NSTREAMS];	/* after a small read */
	int		 in;		/* stdin pipe, -1 when none or closed */
	bool		 stdin_pipe;	/* launched with stdin:"pipe" */
	bool		 in_close;	/* close once inbuf is written */
	struct buf	 inbuf;
	ev_io		 inio;
	void		*in_writer;	/* held stdin writer, if any */
	void		(*in_wake)(struct proc *, void *, int);
	ev_timer	 timeout;	/* -> TERM the group */
	ev_timer	 grace;		/* -> KILL the group */
	ev_timer	 settle;	/* polls for group members left */
	double		 settle_soon;	/* s, the next check after an orphan */
	bool		 orphan_died;	/* an orphan was reaped since the check */
	ev_timer	 first_status;	/* writes the first status.json */
	double		 grace_s;
	bool		 timeout_kill;	/* the timeout KILLs, no TERM first */
	struct wlist_link *watchers;
};

struct proc_opts {
	char		**argv;		/* NULL-terminated */
	const char	*cwd;
	char		**env;		/* "K=V", NULL-terminated, or NULL */
	const char	*id;		/* NULL: generated */
	bool		 stdin_pipe;
	double		 timeout_s;	/* 0: none */
	bool		 timeout_kill;	/* at it, KILL the group (envd's deadline) */
	double		 grace_s;
	bool		 has_user;
	uid_t		 uid;
	gid_t		 gid;
	const char	*user;		/* the name for its groups, or NULL */
	char		 user_name[256];	/* its storage */
	struct spawn_confine confine;
	uint64_t	 maxlog;
	cJSON		*tags;		/* copied, as text */
};

/* The table's counters, for health and metrics. */
struct proctab_stats {
	int		 running;	/* not yet ended */
	int		 kept;		/* records in the table */
	uint64_t	 started, exited, orphans, stored, dropped;
};

struct proctab {
	struct ev_loop	*loop;
	char		 boot[33];
	int		 statefd;	/* state dir */
	struct record_dir recs;		/* boots/<boot>/procs, or fd -1 while
					   the state dir cannot take it */
	bool		 procsfd_ours;	/* made (and closed) by the table */
	ev_timer	 retry;		/* writes what is owed, when it can */
	struct proc	*head, *tail;	/* launch order */
	struct proc	*byid[PROC_HASH];	/* every record, by ID */
	struct proc	*bypid[PROC_HASH];	/* roots not yet reaped, by pid */
	int		 nlive;		/* not yet exited */
	int		 nexited;
	int		 maxlive;
	int		 keep_exited;
	ev_prepare		 trim;		/* removes ended records past keep */
	int		 devnull;	/* stdin of every stdin "null", or -1 */
	ev_timer	 sync;		/* syncfs after final statuses */
	pid_t		 sync_pid;	/* the child doing it */
	ev_timer	 sweep;		/* closes files of ended records */
	ev_idle		 spare;		/* makes the next record's directory */
	bool		 nospares;	/* proctab_stop_spares */
	uint64_t	 maxlog;
	char		**baseenv;	/* agent env without TEND_* */
	struct wlist_link *subs;		/* proctab_subscribe */
	struct spawn_limits limits;	/* what children get */
	/* metrics */
	uint64_t	 started, exited, orphans, stored, dropped;
};

/*
 * procsfd -1: the table makes the boot's directory itself (boot_create).
 * If the state dir refuses it the table runs degraded: records live in
 * memory only, their output dropped and counted, until a retry every
 * STATE_RETRY_S makes the directory.
 */
int	proctab_init(struct proctab *, struct ev_loop *, const char *boot,
	    int statefd, int procsfd);
void	proctab_free(struct proctab *);
/*
 * What the state dir owes us: 0 when the boot's directory exists and
 * every record's files are written; else the errno of the last failed
 * write, with *bootdir false while the boot's directory is missing and
 * *pending the records whose meta.json or status.json waits for a retry
 * (either pointer may be NULL).
 */
int	proctab_state_error(struct proctab *, bool *bootdir, int *pending);
struct ev_loop *proctab_loop(struct proctab *);
const char *proctab_boot(struct proctab *);
int	proctab_statefd(struct proctab *);
void	proctab_stats(struct proctab *, struct proctab_stats *);
/* The records in launch order: proctab_first, then proc_next until NULL. */
struct proc *proctab_first(struct proctab *);
struct proc *proc_next(struct proc *);

/*
 * Tell s->fn of every record's start, end and removal from now on.  A
 * subscriber may unsubscribe (itself or another) in its callback.
 */
void	proctab_subscribe(struct proctab *, struct proctab_sub *,
	    void (*)(struct proctab_sub *, struct proc *, enum proctab_event));
void	proctab_unsubscribe(struct proctab_sub *);

/*
 * Launch.  Returns the record, or NULL with *err set: the errno of a failed
 * exec or chdir (then *spawn_failed is true), EEXIST for a taken ID,
 * EAGAIN when busy, or another errno (a launch that could not be set up:
 * ENOMEM, EBADF...).
 */
struct proc *proc_spawn(struct proctab *, const struct proc_opts *,
	    bool *spawn_failed, int *err);

struct proc *proc_find(struct proctab *, const char *id);
/* A pid reaped by the agent's one reap loop: records it if ours. */
void	proc_reaped(struct proctab *, pid_t, int wstatus);
/* Signal the group (or the root alone).  -1 and errno. */
int	proc_kill(struct proc *, int sig, bool group);
/* TERM the group, KILL it after the record's killGrace; -1 ESRCH: ended. */
int	proc_terminate(struct proc *);
double	proc_grace(struct proc *);	/* killGrace, s */
/* Queue bytes for stdin; close after them if close is set. */
int	proc_stdin(struct proc *, const void *, size_t, bool close);
/*
 * The one stdin writer held while the queue is above PROC_STDIN_HIGH (its
 * body paused, or its reply deferred).  wake(p, writer, err) is called
 * once: err 0 when the process has taken the queue below half of that
 * (or all of it, and stdin was closed as asked), EPIPE when stdin closed
 * with bytes still queued (they are discarded), ENOENT when the record
 * is removed.  A writer that goes away first calls proc_stdin_unhold.
 * Holding fails (EBUSY) while another writer is held.
 */
int	proc_stdin_hold(struct proc *, void *writer,
	    void (*wake)(struct proc *, void *writer, int err));
void	proc_stdin_unhold(struct proc *);
/* The queue is above PROC_STDIN_HIGH: a writer should be held. */
bool	proc_stdin_full(struct proc *);
/* The writer held now, or NULL. */
void	*proc_stdin_writer(struct proc *);
/* Launched with stdin "pipe"; and that pipe is still open. */
bool	proc_stdin_piped(struct proc *);
bool	proc_stdin_open(struct proc *);
/*
 * Remove the record and its files; a group still running is killed
 * (SIGKILL) once the files are gone.  -1 and errno when the files could
 * not be removed: then the record stays as it was.
 */
int	proc_delete(struct proc *);
/* TERM (or sig) every live group, for shutdown. */
void	proctab_signal_all(struct proctab *, int sig);
/*
 * No more records' directories made ahead (shutdown: no launch is
 * coming): the pool's child killed, .spares and .spare removed.
 */
void	proctab_stop_spares(struct proctab *);
/*
 * Write a final status for every record (shutdown), and try once more
 * what the state dir refused so far.
 */
void	proctab_finalize(struct proctab *);

const char *proc_id(struct proc *);
enum proc_state proc_state(struct proc *);
int64_t	proc_started_ms(struct proc *);
pid_t	proc_pid(struct proc *);	/* the root's, also the group's */
/* The boot the record belongs to. */
const char *proc_boot(struct proc *);
/* Has it ended, for that purpose? */
bool	proc_ended(struct proc *, enum proc_end);
cJSON	*proc_status_json(struct proc *);
/* The root's exit: NULL until it is reaped. */
const struct exit_status *proc_exit(struct proc *);
/* The root's exit as JSON (job_exit_json), or NULL. */
cJSON	*proc_exit_json(struct proc *);
const char *proc_state_name(enum proc_state);

void	proc_watch_add(struct proc *, struct proc_watch *,
	    void (*)(struct proc_watch *, enum proc_event));
void	proc_watch_del(struct proc_watch *);
/* The record's stored output, its files reopened if need be; NULL+errno. */
struct logstore *proc_store(struct proc *);
/* Take what the pipes hold now, all of it. */
void	proc_drain_now(struct proc *);
/* Both pipes at EOF. */
bool	proc_output_done(struct proc *);

bool	proc_id_valid(const char *);

#endif
