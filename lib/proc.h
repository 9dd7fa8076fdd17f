/*
 * proc: the process table.  Each launched process is a record in the
 * current boot's directory (boots/<boot>/procs/<id>/) and a struct proc in
 * memory: its pipes, its timers, its stored output and who waits on it.
 */
#ifndef TEND_PROC_H
#define TEND_PROC_H

#include <sys/resource.h>
#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <ev.h>
#include <cjson/cJSON.h>

#include "buf.h"
#include "tunables.h"
#include "logstore.h"

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

/*
 * A party interested in one process (a waiter, a follower): embedded in
 * its owner, recovered with container_of in fn.
 */
struct proc_watch {
	struct proc_watch	*next, *prev;
	struct proc		*proc;
	void			(*fn)(struct proc_watch *, enum proc_event);
};

struct proc {
	struct proc	*next, *prev;
	char		 id[PROC_ID_MAX + 1];
	struct proctab	*tab;
	pid_t		 pid;		/* root; also the process group */
	enum proc_state	 state;
	char		**argv;
	char		*cwd;
	char		*tags;		/* compact JSON text: no tree kept */
	int64_t		 started_ms, ended_ms;
	bool		 reaped;	/* the root's status is known */
	int		 code;		/* exit code, 128+N when signalled */
	int		 sig;		/* 0 when not signalled */
	bool		 timed_out;
	bool		 status_written;	/* first status attempted */
	bool		 status_failed;	/* the last status.json write failed */
	char		*meta_pending;	/* meta.json, not written yet */
	bool		 nodir;		/* no record directory yet: the store
					   drops every byte */
	bool		 fds_open;	/* ls (and dirfd) hold open files */
	int		 dirfd;
	struct logstore	 ls;
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
	ev_timer	 first_status;	/* writes the first status.json */
	double		 grace_s;
	struct proc_watch *watchers;
};

struct proc_opts {
	char		**argv;		/* NULL-terminated */
	const char	*cwd;
	char		**env;		/* "K=V", NULL-terminated, or NULL */
	const char	*id;		/* NULL: generated */
	bool		 stdin_pipe;
	double		 timeout_s;	/* 0: none */
	double		 grace_s;
	bool		 has_user;
	uid_t		 uid;
	gid_t		 gid;
	const char	*user;		/* the name for initgroups, or NULL */
	char		 user_name[256];	/* its storage */
	uint64_t	 maxlog;
	cJSON		*tags;		/* copied, as text */
};

struct proctab {
	struct ev_loop	*loop;
	char		 boot[33];
	int		 statefd;	/* state dir */
	int		 procsfd;	/* boots/<boot>/procs, or -1 while the
					   state dir cannot take it */
	bool		 procsfd_ours;	/* made (and closed) by the table */
	int		 state_err;	/* errno of the last failed write to
					   the state dir, while one is owed */
	ev_timer	 retry;		/* writes what is owed, when it can */
	struct proc	*head, *tail;	/* launch order */
	int		 nlive;		/* not yet exited */
	int		 nexited;
	int		 maxlive;
	int		 keep_exited;
	ev_prepare		 trim;		/* removes ended records past keep */
	ev_timer	 sync;		/* syncfs after final statuses */
	pid_t		 sync_pid;	/* the child doing it */
	ev_timer	 sweep;		/* closes files of ended records */
	uint64_t	 maxlog;
	char		**baseenv;	/* agent env without TEND_* */
	void		(*on_settle)(struct proctab *);	/* a record ended */
	int		 child_oom;	/* oom_score_adj for children */
	struct rlimit	 child_nofile;	/* the fd limit the agent started with */
	bool		 nofile_raised;
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

/*
 * Launch.  Returns the record, or NULL with *err set: the errno of a failed
 * exec or chdir (then *spawn_failed is true), EEXIST for a taken ID,
 * EAGAIN when busy, or another errno.
 */
struct proc *proc_spawn(struct proctab *, const struct proc_opts *,
	    bool *spawn_failed, int *err);

struct proc *proc_find(struct proctab *, const char *id);
/* A pid reaped by the agent's one reap loop: records it if ours. */
void	proc_reaped(struct proctab *, pid_t, int wstatus);
/* Signal the group (or the root alone).  -1 and errno. */
int	proc_kill(struct proc *, int sig, bool group);
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
/*
 * Remove the record and its files; a group still running is killed
 * (SIGKILL) once the files are gone.  -1 and errno when the files could
 * not be removed: then the record stays as it was.
 */
int	proc_delete(struct proc *);
/* TERM (or sig) every live group, for shutdown. */
void	proctab_signal_all(struct proctab *, int sig);
/*
 * Write a final status for every record (shutdown), and try once more
 * what the state dir refused so far.
 */
void	proctab_finalize(struct proctab *);

cJSON	*proc_status_json(struct proc *);
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
void	proc_reset_signals(void);
void	proc_child_limits(struct proctab *, pid_t);

#endif
