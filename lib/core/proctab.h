/*
 * proctab: the table of processes (proctab.c), a table of jobs (job.h)
 * with what only processes need: the boot's records' directory and the
 * state dir's refusals, records' directories made ahead, syncs, files
 * given back.  Its records are struct proc (proc.h).
 */
#ifndef TEND_PROCTAB_H
#define TEND_PROCTAB_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <ev.h>

#include "job.h"

struct proc;
struct proctab;

/* The table's counters, for health and metrics. */
struct proctab_stats {
	int		 running;	/* not yet ended */
	int		 kept;		/* records in the table */
	uint64_t	 started, exited, orphans, stored, dropped;
};

/* A table of processes: a table of jobs, and what only processes need. */
struct proctab {
	struct jobtab	 jobs;		/* the engine's: records, counters */
	struct ev_loop	*loop;		/* jobs.loop, for route modules that
					   read it here (proctab_loop) */
	bool		 procsfd_ours;	/* made (and closed) by the table */
	ev_timer	 retry;		/* writes what is owed, when it can */
	int		 devnull;	/* stdin of every stdin "null", or -1 */
	ev_timer	 sync;		/* syncfs after final statuses */
	pid_t		 sync_pid;	/* the child doing it */
	ev_timer	 sweep;		/* closes files of ended records */
	ev_idle		 spare;		/* makes the next record's directory */
	bool		 nospares;	/* proctab_stop_spares */
	uint64_t	 maxlog;
	struct spawn_limits limits;	/* what children get */
	uint64_t	 orphans;
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

/*
 * Who hears of every record's start, end (its group settled) and
 * removal subscribes to the table's jobs (jobtab_subscribe on &t->jobs).
 */

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

/* ---- for proc.c ---- */

/* A write to the state dir failed: said once, retried until it takes it. */
void	proctab_trouble(struct proctab *, int err);
/* A final status was written: one syncfs of the state dir soon. */
void	proctab_sync_soon(struct proctab *);
/* A status was written: the next record's directory is made, off the
   request path; not while a child just launched may exit (_pause). */
void	proctab_spare_soon(struct proctab *);
void	proctab_spare_pause(struct proctab *);
/* The one /dev/null of stdin "null" (opened once), or -1 and errno. */
int	proctab_devnull(struct proctab *);
/* pid is the table's own child (a sync, the spares' maker): true. */
bool	proctab_reaped(struct proctab *, pid_t, int wstatus);

#endif
