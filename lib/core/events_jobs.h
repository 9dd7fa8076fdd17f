/*
 * events_jobs: the lifecycle events of processes and terminals, from
 * their tables' subscriptions, into the current event log (events.h).
 */
#ifndef TEND_EVENTS_JOBS_H
#define TEND_EVENTS_JOBS_H

#include "job.h"

/*
 * Subscribe to both tables: from now on their jobs' events are told;
 * the lost records found before are told first.
 */
void	events_jobs_start(struct jobtab *procs, struct jobtab *terms);

/*
 * record_lost_hook: an earlier boot's record marked lost, told as
 * <what>.lost once events_jobs_start runs.
 */
void	events_jobs_lost(const char *what, const char *boot, const char *id);

#endif
