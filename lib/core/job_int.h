/*
 * job_int: what the files of the job module share and no one else
 * reads (callers see job.h).  job.c owns a job's life; job_cg.c its
 * cgroup; job_input.c its input queue.
 */
#ifndef TEND_JOB_INT_H
#define TEND_JOB_INT_H

#include "job.h"

/* Of table t and kind k, with no fd, cgroup or record yet. */
void	job_blank(struct job *, struct jobtab *, const struct job_kind *);
/* Its cgroup made (limits and the defaults) and so told to start in it. */
int	job_cg_make(struct job *, struct spawn_opts *);
/* Reaped: the OOM killer's part in the exit. */
void	job_cg_reaped(struct job *);
/* Ended: the final figures; the cgroup removed once empty. */
void	job_cgroup_final(struct job *);
/* Freed: its cgroup killed if need be and removed. */
void	job_cg_free(struct job *);

/* Into the table's list and hashes; its pid out of them (job.c). */
void	job_link(struct job *);
void	job_pid_unhash(struct job *);

/* Input went in: an output fd resting after a short read is read now. */
void	job_out_wake(struct job *);
/* The held writer, if any, is told: err 0 (room again) or why not. */
void	job_input_wake(struct job *, int err);

#endif
