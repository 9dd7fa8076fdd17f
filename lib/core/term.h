/*
 * term: the terminal table.  Each terminal is a job (job.h) whose child
 * is in a session of its own on the slave of a pty (lib/pty.h), its
 * output drained from the master into a record (boots/<boot>/terms/<id>/,
 * one stream "output"), its input queued for the master.  The structs are term's own: other
 * modules use the functions below.
 *
 * The end of a terminal is its session leader reaped AND the master
 * drained to EIO (every byte the session wrote is stored).  The exit of
 * the controlling process hangs the terminal up, so EIO follows at once;
 * a leader that gave the terminal up (TIOCNOTTY) leaves a descendant's
 * slave open, and then the end comes TERM_END_WAIT after the reap.  Watchers are
 * told TERM_EV_END only then: output written just before the exit is in
 * the store before anyone hears of the end.
 *
 * A follower (the connect pass) attaches with job_watch_add, reads
 * term_store() from its cursor on TERM_EV_OUTPUT, and sends the exit on
 * TERM_EV_END (term_ended() true, term_exit_json()): by then nothing
 * more will be stored.
 */
#ifndef TEND_TERM_H
#define TEND_TERM_H

#include <sys/types.h>

#include <stdbool.h>
#include <stdint.h>
#include <ev.h>
#include <cjson/cJSON.h>

#include "job.h"

struct term;
struct termtab;

enum term_state {
	TERM_RUNNING = JOB_RUNNING,	/* the leader alive, or its output
					   not all read */
	TERM_EXITED = JOB_EXITED,	/* reaped and drained (or the end wait
					   ran out) */
	TERM_ERROR = JOB_ERROR		/* lost: its boot ended before it did
					   (on disk) */
};

/*
 * What a watcher of a terminal is told (job_watch_add on term_job(t)):
 * three of the job's events, by a terminal's names (a terminal tells no
 * EXIT and no EOF).  In fn a watcher may remove any watch, free it, add
 * one; not delete the terminal.
 */
enum term_event {
	TERM_EV_OUTPUT = JOB_EV_OUTPUT,	/* new bytes in the store */
	TERM_EV_END = JOB_EV_END,	/* ended: every byte it will have is
					   stored */
	TERM_EV_GONE = JOB_EV_GONE	/* being removed: the watch is already
					   off */
};

struct term_opts {
	char		**argv;		/* NULL: the user's login shell */
	const char	*cwd;		/* NULL: the agent's */
	char		**env;		/* "K=V", NULL-terminated, or NULL */
	const char	*id;		/* NULL: generated */
	unsigned int	 cols, rows;	/* 0: 80x24 */
	bool		 has_user;
	uid_t		 uid;
	gid_t		 gid;
	const char	*user;		/* for user_groups, or NULL */
	struct spawn_confine confine;
	struct cgroup_limits limits;	/* 0s: none */
	uint64_t	 keep;		/* bufferSize; 0: TERM_KEEP_BYTES */
};

/* A table of terminals: a table of jobs (job.h). */
struct termtab {
	struct jobtab	 jobs;
	struct ev_loop	*loop;		/* jobs.loop, for route modules that
					   read it here */
};

/* baseenv and limits are borrowed (the process table's). */
int	termtab_init(struct termtab *, struct ev_loop *, const char *boot,
	    int statefd, char **baseenv, const struct spawn_limits *);
void	termtab_free(struct termtab *);
int	termtab_live(struct termtab *);
int	termtab_maxlive(struct termtab *);	/* TERM_MAX_LIVE */
const char *termtab_boot(struct termtab *);
int	termtab_statefd(struct termtab *);
struct term *termtab_first(struct termtab *);
#define term_next(t)	term_of(term_job(t)->next)
/* Subscribers of every terminal: jobtab_subscribe on &tt->jobs. */
/* sig to every process of every live terminal's session (shutdown). */
void	termtab_signal_all(struct termtab *, int sig);
/* Final statuses of what is left (shutdown). */
void	termtab_finalize(struct termtab *);

/*
 * Create.  NULL with *err: EEXIST for a taken ID, EAGAIN at
 * TERM_MAX_LIVE, the errno of a failed exec or chdir (*spawn_failed
 * true), or another errno.
 */
struct term *term_create(struct termtab *, const struct term_opts *,
	    bool *spawn_failed, int *err);
struct term *term_find(struct termtab *, const char *id);
/* A pid reaped by the agent's one reap loop: ours, or ignored. */
void	term_reaped(struct termtab *, pid_t, int wstatus);

/* The engine's part, for what serves processes and terminals alike. */
struct job *term_job(struct term *);
/* The terminal of a job of a terminal table (its first member). */
#define term_of(j)	((struct term *)(void *)(j))
#define term_id(t)	job_id(term_job(t))
int64_t	term_created_ms(struct term *);	/* names its cursors */
pid_t	term_pid(struct term *);	/* the session leader's */
bool	term_ended(struct term *);
cJSON	*term_status_json(struct term *);
/* The leader's exit once the terminal has ended, else NULL. */
const struct exit_status *term_exit(struct term *);
/* {"code","signal"} of an ended terminal's leader, else NULL. */
cJSON	*term_exit_json(struct term *);
/* The stored output (stream 0), files reopened if need be; NULL+errno. */
struct logstore *term_store(struct term *);

/* SIGINT to the foreground process group.  -1, errno (ESRCH: ended). */
int	term_interrupt(struct term *);
/*
 * HUP, then TERM, to every process of the session; KILL after
 * TERM_KILL_GRACE to what is left.  -1 and ESRCH when it has ended.
 */
int	term_terminate(struct term *);
/*
 * sig to every process of the session now: the leader's group, the
 * foreground group, and background jobs (found by their session in
 * /proc).  The number of processes found by the scan.
 */
int	term_signal_session(struct term *, int sig);
int	term_resize(struct term *, unsigned int cols, unsigned int rows);

/*
 * Input: queued and written to the master as it accepts it.  -1 and
 * EPIPE when the terminal has ended.  Past TERM_INPUT_HIGH one writer is
 * held: job_input_hold and the rest on term_job(t) (job.h), whose wake
 * hears EPIPE when the terminal ended with bytes queued.
 */
int	term_input(struct term *, const void *, size_t);

/* Kill the session (KILL), remove the files and the record.  -1, errno. */
#define term_delete(t)	job_delete(term_job(t))


/*
 * The agent's handover (core/handover.c): a terminal as the manifest
 * holds it, and one the agent before this one ran, taken up.  NULL and
 * errno.
 */
cJSON	*term_handover_save(struct term *);
struct term *term_adopt(struct termtab *, const cJSON *);

#endif
