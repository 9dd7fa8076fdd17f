/*
 * proc: the process table.  Each launched process is a struct proc in
 * memory — a job (job.h: its pipes, its record on disk, who waits on
 * it), its timers and its group — and the table tells subscribers of
 * each record's start, end and removal.  The structs are proc's own
 * (and its unit test's): other modules use the functions below.
 */
#ifndef TEND_PROC_H
#define TEND_PROC_H

#include <sys/resource.h>
#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <ev.h>
#include <cjson/cJSON.h>

#include "job.h"
#include "proctab.h"
#include "ready.h"

enum proc_state {
	PROC_RUNNING = JOB_RUNNING,	/* root alive, or its group has not
					   settled yet */
	PROC_EXITED = JOB_EXITED,	/* root reaped and no member of its
					   group left */
	PROC_ERROR = JOB_ERROR		/* lost: its boot ended before a final
					   status */
};

/*
 * What a watcher of a process is told (job_watch_add on proc_job(p)):
 * the job's events, by a process's names.
 */
enum proc_event {
	PROC_EV_OUTPUT = JOB_EV_OUTPUT,	/* new index records */
	PROC_EV_EXIT = JOB_EV_EXIT,	/* the root was reaped */
	PROC_EV_END = JOB_EV_END,	/* the group settled (state left
					   running) */
	PROC_EV_EOF = JOB_EV_EOF,	/* both output pipes reached EOF */
	PROC_EV_GONE = JOB_EV_GONE	/* the record is being removed: unlink
					   now */
};

/* Ended for what purpose (proc_ended). */
enum proc_end {
	PROC_END_ROOT,	/* the root was reaped (exec's reply and stream) */
	PROC_END_STATE,	/* the record left running */
	PROC_END_OUTPUT	/* left running, and all its output is stored */
};

/* A launch's restart policy ("restart"): what a run's end leads to. */
enum proc_policy {
	PROC_RESTART_NO,	/* the record ends with its first run */
	PROC_RESTART_ON_FAILURE,	/* a run that failed is run again */
	PROC_RESTART_ALWAYS	/* any run is run again */
};

struct proc_restart_opts {
	enum proc_policy policy;
	int		 max;		/* maxRestarts; -1: the breaker's */
	double		 backoff_s;	/* the first wait */
	double		 max_backoff_s;	/* the doubling's cap */
};

struct proc_restart;	/* proc_restart.c's */

/*
 * A process: a job (job.h: its table entry, pipes, stdin, exit, record
 * and watchers) and what only a process group has.
 */
struct proc {
	struct job	 job;		/* first: (struct proc *) of a job */
	char		*tags;		/* compact JSON text: no tree kept */
	bool		 stdin_pipe;	/* launched with stdin:"pipe" */
	bool		 status_written;	/* the first status was tried */
	ev_timer	 timeout;	/* -> TERM the group */
	ev_timer	 settle;	/* polls for group members left */
	double		 settle_soon;	/* s, the next check after an orphan */
	bool		 orphan_died;	/* an orphan reaped since the check */
	ev_timer	 first_status;	/* writes the first status.json */
	double		 grace_s;
	bool		 timeout_kill;	/* the timeout KILLs, no TERM first */
	double		 timeout_left;	/* s, while frozen */
	double		 timeout_s;	/* each run's; 0: none */
	struct proc_restart *rs;	/* its policy, or NULL for "no" */
	struct ready	*ready;		/* launched with "ready", else NULL */
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
	struct cgroup_limits limits;	/* 0s: none */
	uint64_t	 maxlog;
	cJSON		*tags;		/* copied, as text */
	struct proc_restart_opts restart;	/* 0s: "no" */
	struct ready_opts ready;	/* "ready" (ready.h); on: asked */
};

/* The process of a job of a process table (NULL for NULL). */
#define proc_of(j)	((struct proc *)(void *)(j))
/* The engine's part, for what serves processes and terminals alike. */
#define proc_job(p)	(&(p)->job)
/* The next record in launch order (proctab_first), or NULL. */
#define proc_next(p)	proc_of((p)->job.next)

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
 * Holding the one writer while the queue is full, and waking it: the
 * job's (job_input_hold and the rest on &p->job).
 */
/* Launched with stdin "pipe"; and that pipe is still open. */
bool	proc_stdin_piped(struct proc *);
bool	proc_stdin_open(struct proc *);
/*
 * Remove the record and its files; a group still running is killed
 * (SIGKILL) once the files are gone.  -1 and errno when the files could
 * not be removed: then the record stays as it was.
 */
#define proc_delete(p)	job_delete(proc_job(p))
#define proc_id(p)	job_id(proc_job(p))
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
/* Its run, 1, 2...: 0 for a record without a restart policy. */
int	proc_run(struct proc *);
/* The root's exit as JSON (exitstatus_json), or NULL. */
cJSON	*proc_exit_json(struct proc *);
const char *proc_state_name(enum proc_state);

/* The record's stored output, its files reopened if need be; NULL+errno. */
struct logstore *proc_store(struct proc *);
/* Take what the pipes hold now, all of it. */
void	proc_drain_now(struct proc *);
/* Both pipes at EOF. */
bool	proc_output_done(struct proc *);

bool	proc_id_valid(const char *);

/*
 * The agent's handover (core/handover.c): a record as the manifest holds
 * it, and a record the agent before this one ran, taken up (in the
 * table, its pipes drained, its timeout at its deadline).  NULL: no
 * memory, or not such a record (errno).
 */
cJSON	*proc_handover_save(struct proc *);
struct proc *proc_adopt(struct proctab *, const cJSON *);

#endif
