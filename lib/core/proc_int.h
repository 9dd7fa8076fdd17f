/*
 * proc_int: what the files of the proc module share and no one else
 * reads (callers see proc.h).  proc.c owns a record's launch and end;
 * proc_restart.c its restart policy: the runs after the first;
 * proc_handover.c its part of the agent's handover.
 */
#ifndef TEND_PROC_INT_H
#define TEND_PROC_INT_H

#include "proc.h"

/* The pipes of a run: pipe2 pairs ([0] reads), -1 where there is none. */
struct proc_pipes {
	int	out[2], err[2], in[2];
	int	null;		/* the table's /dev/null for stdin "null" */
};

extern const struct job_kind proc_kind;

struct proctab *proc_tab(struct proc *);
/* Its timers made, none running (a launch, a process taken up). */
void	proc_timers_init(struct proc *);
/* Its root reaped: settled now if no member is left, else watched. */
void	proc_check_settled(struct proc *);
int	proc_pipes_open(struct proctab *, struct proc_pipes *, bool stdin_pipe);
void	proc_pipes_close(struct proc_pipes *);
/* The child of a run, spawned with the pipes: -1 and errno. */
int	proc_exec(struct proc *, const struct proc_opts *,
	    const struct proc_pipes *, bool *failed);
/* A run spawned: its pipes drained and its timeout running. */
void	proc_run_start(struct proc *, struct proc_pipes *);
void	proc_write_status(struct proc *, bool final);
/* Ended for good: the record leaves "running" (its last run's exit). */
void	proc_end(struct proc *);

/* ---- proc_restart.c ---- */

/* The policy of a launch that has one: -1 ENOMEM. */
int	proc_restart_new(struct proc *, const struct proc_opts *);
void	proc_restart_free(struct proc *);
/*
 * A run settled (drained): true when the record runs again after its
 * backoff, false when it ends now (the policy's state says why).
 */
bool	proc_restart_due(struct proc *);
/* A run is spawned (the first included): its pid and offsets noted. */
void	proc_restart_run_begun(struct proc *);
/* Between two runs: no process. */
bool	proc_restart_waiting(struct proc *);
/* Waiting for a next run: cancelled (why), the record ended.  Else false. */
bool	proc_restart_cancel(struct proc *, const char *why);
/* The agent's handover: the policy's state into a process's part, back. */
void	proc_restart_save(struct proc *, cJSON *);
int	proc_restart_adopt(struct proc *, const cJSON *);
/* "run", "restarts", "restart", "runs" into a status. */
void	proc_restart_status(struct proc *, cJSON *);
/* The policy asked (meta.json's options, a status's "restart"). */
void	proc_restart_opts_json(const struct proc_restart_opts *, cJSON *);

#endif
