/*
 * job: what a process and a terminal share — a supervised child, its
 * table, and the engine that runs it.  A job is launched by its kind
 * (proc.c: pipes, a process group; term.c: a pty, a session), and from
 * then on this module owns what is the same for both: the table (launch
 * order, lookup by ID and by pid, who subscribes), the exit as the
 * reaper gives it, the drain of its output fds into its record's store
 * with the loop budget, the bounded input queue with one held writer,
 * the watchers, removal and shutdown.  What differs is asked of the kind
 * (struct job_kind).  proc and term embed their job first, so that a
 * kind recovers itself from it with container_of; their callers use
 * proc_* and term_*.
 */
#ifndef TEND_JOB_H
#define TEND_JOB_H

#include <sys/types.h>

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <ev.h>
#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/tunables.h"
#include "base/wlist.h"
#include "exitstatus.h"
#include "store/record.h"
#include "sys/cgroup.h"
#include "sys/spawn.h"

enum job_state {
	JOB_RUNNING,	/* alive, or its end not yet settled (the kind's) */
	JOB_EXITED,	/* ended: told once, its final status written */
	JOB_ERROR	/* lost: its boot ended before it did (on disk) */
};

/* What a watcher of one job is told. */
enum job_event {
	JOB_EV_OUTPUT,	/* new bytes or records in the store */
	JOB_EV_EXIT,	/* the root was reaped (a process's) */
	JOB_EV_END,	/* ended (the kind says when) */
	JOB_EV_EOF,	/* every output fd reached its end (a process's) */
	JOB_EV_GONE,	/* being removed: the watch is already off */
	JOB_EV_FROZEN	/* its cgroup's frozen state changed */
};

/* What a table subscriber is told, of any job. */
enum jobtab_event {
	JOBTAB_EV_START,	/* launched and in the table */
	JOBTAB_EV_END,		/* ended */
	JOBTAB_EV_REMOVE	/* out of the table: freed after the call */
};

struct job;
struct jobtab;

/*
 * A party interested in one job, embedded in its owner.  In fn a
 * watcher may remove any watch, free it, add one; not remove the job
 * (job_delete): the table's own removals wait for the loop for that
 * reason.  job is NULL once the watch is removed.
 */
struct job_watch {
	struct wlist_link	 link;
	struct job		*job;
	void			(*fn)(struct job_watch *, enum job_event);
};

/* A party interested in every job of a table. */
struct jobtab_sub {
	struct wlist_link	 link;
	struct jobtab		*tab;
	void			(*fn)(struct jobtab_sub *, struct job *,
				    enum jobtab_event);
};

/* What differs between kinds of job: asked by the engine. */
struct job_kind {
	const char	*ev_removed;	/* log event names */
	const char	*ev_remove_failed;
	/* Its status (live: a reply, else status.json), or NULL. */
	cJSON	*(*status)(struct job *, bool live);
	/*
	 * A drain of stream s is over: grew, new bytes or records are in
	 * the store; closed, the stream reached its end in this drain.
	 */
	void	(*drained)(struct job *, int s, bool grew, bool closed);
	/* A read error that is not the end (a pty's first EIO); or NULL. */
	bool	(*read_again)(int err, bool *seen);
	/* sig to every process of the job (its group, its session). */
	void	(*signal)(struct job *, int sig);
	/* End it now: reaped, its end not yet settled (shutdown). */
	void	(*end)(struct job *);
	/* Free the kind's part and the memory (the job's is freed). */
	void	(*free)(struct job *);
	enum cgroup_kind cgkind;	/* where its cgroup is made */
	/*
	 * Its cgroup emptied while it runs (its root reaped or not): the
	 * kind may end it now.  NULL: the kind ends it on its own terms.
	 */
	void	(*emptied)(struct job *);
	/* Frozen or thawed (a timeout pauses meanwhile); or NULL. */
	void	(*frozen)(struct job *, bool);
	/*
	 * Shutdown begins (jobtab_signal_all): end what no signal would (a
	 * record between two runs); or NULL.
	 */
	void	(*stop)(struct job *);
};

struct job {
	struct job	*next, *prev;	/* launch order */
	struct job	*idnext;	/* its ID's bucket */
	struct job	*pidnext;	/* its pid's bucket, until reaped */
	struct jobtab	*tab;
	const struct job_kind *kind;
	char		 id[PROC_ID_MAX + 1];
	pid_t		 pid;		/* the root: its group's, session's */
	enum job_state	 state;
	char		**argv;
	char		*cwd;
	int64_t		 started_ms, ended_ms;
	bool		 reaped;	/* the root's exit is known */
	struct exit_status exit;	/* the root's, once reaped */
	struct record	 rec;		/* its files, its stored output */
	int		 nout;		/* output streams (fds below) */
	int		 out[LS_NSTREAMS];	/* read ends, -1 at the end */
	ev_io		 outio[LS_NSTREAMS];
	ev_timer	 outwait[LS_NSTREAMS];	/* after a small read */
	int		 in;		/* input fd, -1 when none or closed */
	bool		 in_shared;	/* in is out[0] (a pty's master) */
	bool		 in_close;	/* close once inbuf is written */
	struct buf	 inbuf;
	ev_io		 inio;
	void		*in_writer;	/* the held writer, if any */
	void		(*in_wake)(struct job *, void *, int);
	ev_timer	 grace;		/* -> KILL everything (job_signal) */
	struct wlist_link *watchers;
	/* Containment: its cgroup (fd -1: none), asked limits, figures. */
	struct cgroup	 cg;
	struct cgroup_limits limits;
	struct cgroup_usage usage;	/* final once ended (has_usage) */
	bool		 has_usage;
	bool		 frozen;	/* asked to be (cg.frozen: it is) */
	uint64_t	 oom_seen;	/* OOM kills of its cgroup told so far */
	uint64_t	 sigsent;	/* signals tend sent it (1 << n) */
};

struct jobtab {
	struct ev_loop	*loop;
	char		 boot[33];
	int		 statefd;	/* state dir */
	struct record_dir recs;		/* the boot's records' directory, or
					   fd -1 while the state dir refuses */
	struct job	*head, *tail;	/* launch order */
	struct job	*byid[PROC_HASH];	/* every job, by ID */
	struct job	*bypid[PROC_HASH];	/* roots not reaped, by pid */
	int		 nlive;		/* not yet ended */
	int		 nended;
	int		 maxlive;
	int		 keep;		/* ended jobs kept (job_trim) */
	bool		 trim_at_end;	/* job_ended trims, off the loop */
	bool		 stopping;	/* jobtab_signal_all: all of them end */
	ev_prepare	 trim;
	char		**baseenv;	/* children's environment: no TEND_* */
	const struct spawn_limits *limits;	/* what children get */
	const struct cgroup_limits *dflt_limits;	/* --default-limits */
	struct wlist_link *subs;	/* jobtab_subscribe */
	/* metrics */
	uint64_t	 started, ended, stored, dropped;
	uint64_t	 cpu_usec;	/* of ended jobs' cgroups */
	uint64_t	 oom_killed;	/* jobs the OOM killer ended */
	int		 nfrozen;	/* running jobs frozen now */
};

/* ---- the exit ---- */

/* The root's exit: NULL until it is reaped. */
const struct exit_status *job_exit(struct job *);
const char *job_id(struct job *);

/* 0 while it runs, else -1 and ESRCH: a signal's or a resize's check. */
static inline int
job_running(const struct job *j)
{
	if (j->state == JOB_RUNNING)
		return 0;
	errno = ESRCH;
	return -1;
}

/* ---- the table ---- */

void	 jobtab_init(struct jobtab *, struct ev_loop *, const char *boot,
	    int statefd);
/* Every job freed, every subscriber let go. */
void	 jobtab_free(struct jobtab *);
void	 jobtab_subscribe(struct jobtab *, struct jobtab_sub *,
	    void (*)(struct jobtab_sub *, struct job *, enum jobtab_event));
void	 jobtab_unsubscribe(struct jobtab_sub *);
void	 jobtab_tell(struct jobtab *, struct job *, enum jobtab_event);
struct job *job_find(struct jobtab *, const char *id);
/* The job whose root is pid and not yet reaped, or NULL. */
struct job *job_by_pid(struct jobtab *, pid_t);
/* sig to every job still running (kind->signal): shutdown. */
void	 jobtab_signal_all(struct jobtab *, int sig);
/* End (kind->end) every running job whose root was reaped: shutdown. */
void	 jobtab_finalize(struct jobtab *);
/* Remove ended jobs past tab->keep, the oldest first. */
void	 job_trim(struct jobtab *);

/* ---- a job's life ---- */

/*
 * A new job in memory, not yet in the table: its ID (id, else one made
 * of prefix and random hex, not taken), argv and cwd (NULL: the
 * agent's) copied.  -1 and errno (ENOMEM): job_free frees what was made
 * (the tab and kind are set first).
 */
int	 job_init(struct job *, struct jobtab *, const struct job_kind *,
	    const char *id, char prefix, char **argv, const char *cwd);
/*
 * Spawn its root: so's argv, cwd, fds, user and confinement set by the
 * kind; the environment (the table's, env over it, extra unless env sets
 * it), a session of its own, no fd of the agent's, the table's limits
 * added here.  -1 and errno (*failed: the exec or chdir failed).
 */
int	 job_spawn(struct job *, struct spawn_opts *, char **env,
	    const char *extra, bool *failed);
/* Launched: running, in the table (not yet told: JOBTAB_EV_START). */
void	 job_begin(struct job *);
/* The next run of a job still running, spawned (job_spawn): its root's. */
void	 job_rerun(struct job *);
/* Stream s's fd, drained from now on. */
void	 job_out_start(struct job *, int s, int fd);
/* The input fd (shared: out[0], written and read). */
void	 job_in_start(struct job *, int fd, bool shared);
/* The root reaped: its exit recorded, out of the pid hash. */
void	 job_reap(struct job *, int wstatus);
/* Ended: counted, its state and time (the kind writes its status). */
void	 job_ended(struct job *);
/* Told: watchers, then subscribers; trimming after (trim_at_end). */
void	 job_tell_end(struct job *);
/* The grace: KILL everything after s seconds; started once. */
void	 job_grace_init(struct job *, double s);
void	 job_grace_start(struct job *);
/*
 * sig to everything of the job: every member of its cgroup (KILL:
 * cgroup.kill), else the kind's group or session.
 */
void	 job_signal(struct job *, int sig);
/*
 * Freeze (on) or thaw its cgroup: -1 and errno (EOPNOTSUPP: it has no
 * cgroup; ESRCH: ended).  Frozen for sure once cg.frozen (JOB_EV_FROZEN).
 */
int	 job_freeze(struct job *, bool on);
/* The cgroup's figures into a status: "resources", "frozen", "cgroup". */
void	 job_status_cgroup(struct job *, cJSON *);
/* Its limits as JSON (meta.json's options), or none added. */
void	 job_limits_json(const struct cgroup_limits *, cJSON *obj);
/*
 * The agent's one function for sys/cgroup's watch: a job's cgroup
 * events changed.
 */
void	 job_cgroup_changed(struct cgroup *);
/* Signal the root alone: -1 ESRCH once reaped (or never spawned). */
int	 job_kill_root(struct job *, int sig);

/* sig was sent by tend (a run it ends is not restarted). */
static inline void
job_sent(struct job *j, int sig)
{
	if (sig > 0 && sig < 64)
		j->sigsent |= (uint64_t)1 << sig;
}

/*
 * Remove the files, then the job; a job still running is killed
 * (kind->signal KILL, and the root).  -1 and errno when the files stay:
 * then the job stays as it was.
 */
int	 job_delete(struct job *);
/* Out of the table and freed; its files are not touched. */
void	 job_forget(struct job *);
/* Freed: not in the table (the kind's part by kind->free). */
void	 job_free(struct job *);

/* ---- who is told ---- */

void	 job_watch_add(struct job *, struct job_watch *,
	    void (*)(struct job_watch *, enum job_event));
void	 job_watch_del(struct job_watch *);
void	 job_notify(struct job *, enum job_event);

/* ---- files and status ---- */

/* The stored output, its files reopened if need be; NULL+errno. */
struct logstore *job_store(struct job *);
/*
 * An ended job whose output reached its end and that nobody watches
 * gives its files back: kept ones would fill the fd table, and every
 * spawn pays for its size.  job_store reopens them.
 */
bool	 job_release_fds(struct job *);
/* status.json of now (kind->status), written.  -1 and errno. */
int	 job_put_status(struct job *);
/* meta.json's and status's shared fields: argv or command, cwd... */
cJSON	*job_meta_json(struct job *, char **env, const char *user);
/* ... and its end: created_at, bootId; printed (NULL: no memory). */
char	*job_meta_text(struct job *, cJSON *);
cJSON	*job_status_head(struct job *);

/* ---- output ---- */

/*
 * Move what stream s holds into the store, at most rounds reads (so
 * that one chatty job does not starve the loop); kind->drained is told
 * once per call.  The bytes taken.
 */
size_t	 job_drain(struct job *, int s, int rounds);
/* Stream s ends now, read or not (an input on its fd with it). */
void	 job_out_end(struct job *, int s);
/* Every stream, all it holds now. */
void	 job_drain_now(struct job *);
/* Every output fd at its end. */
bool	 job_output_done(struct job *);

/* ---- input ---- */

/* Queue bytes; close after them if close.  -1: EPIPE when closed. */
int	 job_input(struct job *, const void *, size_t, bool close);
bool	 job_input_full(struct job *);
size_t	 job_input_queued(struct job *);
/*
 * The one writer held while the queue is above PROC_STDIN_HIGH (its
 * body paused, or its reply deferred): wake is called once (err 0 when
 * the child took the queue below half of that, or all of it and the
 * input closed as asked; EPIPE when the input closed with bytes queued,
 * which are discarded; ENOENT when the job is removed).  A writer that
 * goes away first calls job_input_unhold.  EBUSY while another writer
 * is held.  The caller recovers its process or terminal from the job
 * (proc_of, term_of).
 */
int	 job_input_hold(struct job *, void *writer,
	    void (*wake)(struct job *, void *writer, int err));
void	 job_input_unhold(struct job *);
void	*job_input_writer(struct job *);
/* Close the input (what is queued is moot: the writer hears EPIPE). */
void	 job_input_close(struct job *);

/* ---- the agent's handover (job_handover.c) ---- */

/*
 * The engine's part of a job as JSON for the manifest (core/handover.c),
 * and a job taken up from it by the next agent: in the table, its
 * output drained, its input and timers as they were (grace_s: its
 * kind's grace).  -1 and errno: job_free frees what was made.
 */
cJSON	*job_handover_save(struct job *);
int	 job_adopt(struct job *, struct jobtab *, const struct job_kind *,
	    const cJSON *, double grace_s);
/* A timer's absolute deadline (monotonic ms; -1: not running), and back. */
double	 job_deadline(struct ev_loop *, ev_timer *);
void	 job_deadline_start(struct ev_loop *, ev_timer *, double deadline);
double	 job_get_num(const cJSON *, const char *key, double dflt);
bool	 job_get_bool(const cJSON *, const char *key);

#endif
