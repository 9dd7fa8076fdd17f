/*
 * cgroup: containment on cgroup v2 — the agent's subtree, found and
 * prepared once at start, and a cgroup per supervised child in it.
 *
 * The agent owns one hierarchy per process (this module's state is
 * global, as the agent is one).  At start it finds the cgroup2 mount and
 * its own cgroup; when it is alone there (a container's PID 1, a
 * machine's init) that cgroup is its subtree, else it makes one named
 * after its boot beside its own (tend-<boot>) so that agents sharing a
 * hierarchy never collide.  In the subtree:
 *
 *	agent/		the agent and its helpers (the shim): a leaf, so
 *			that controllers may be enabled for the rest
 *	procs/<n>	a process record's cgroup
 *	terms/<n>	a terminal's
 *
 * <n> counts up over the boot: cgroup v2 cannot rename a directory, so a
 * record's cgroup is made ahead under its number (a spare) and the
 * record says which it has.  A child joins its cgroup before it runs
 * (clone3 into it: sys/spawn).  Where there is no writable cgroup2 mount
 * everything works as without cgroups, and cgroups_reason says why.
 */
#ifndef TEND_CGROUP_H
#define TEND_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <ev.h>

#define CGROUP_PATH_MAX	4096	/* PATH_MAX, without limits.h here */

/* The controllers the agent enables for its records, as bits. */
enum cgroup_ctrl {
	CG_CPU,
	CG_IO,
	CG_MEMORY,
	CG_PIDS,
	CG_NCTRL
};
extern const char *const cgroup_ctrl_names[CG_NCTRL];

/* What a launch asks for: 0 is "no limit" for each. */
struct cgroup_limits {
	int64_t		 memory;	/* memory.max, bytes */
	int64_t		 memory_high;	/* memory.high, bytes */
	int64_t		 pids;		/* pids.max */
	double		 cpu;		/* cpu.max, CPUs (0.5: half of one) */
};

/* Figures of a cgroup: -1 where its controller (or file) is missing. */
struct cgroup_usage {
	int64_t		 cpu_usec;	/* cpu.stat usage_usec */
	int64_t		 mem_current;	/* memory.current */
	int64_t		 mem_peak;	/* memory.peak */
	int64_t		 pids_current;	/* pids.current */
	int64_t		 oom_kills;	/* memory.events oom_kill */
};

enum cgroup_kind {
	CG_PROC,
	CG_TERM,
	CG_NKINDS
};

/* A record's cgroup, embedded in its owner. */
struct cgroup {
	struct cgroup	*wdnext;	/* its inotify watch's bucket */
	struct cgroup	*dnext;		/* the doomed, while doomed */
	int		 fd;		/* its directory; -1: none */
	int		 wd;		/* watch on cgroup.events, or -1 */
	enum cgroup_kind kind;
	unsigned	 n;		/* its name under procs/ or terms/ */
	bool		 populated;	/* cgroup.events, as last read */
	bool		 frozen;
	bool		 doomed;	/* removed, members left: our own */
};

/*
 * Find and prepare the hierarchy: root (NULL: the agent's own cgroup)
 * and boot (the subtree's name when the agent is not alone).  off: the
 * operator's --no-cgroups.  Never fails: without cgroups, cgroups_on is
 * false and cgroups_reason says why.
 */
void	 cgroups_init(const char *root, bool off, const char *boot);
bool	 cgroups_on(void);
/* The subtree's path (the filesystem's), or NULL. */
const char *cgroups_root(void);
/* Why cgroups are off ("" when on). */
const char *cgroups_reason(void);
/* The controllers a record gets (bits of enum cgroup_ctrl). */
unsigned cgroups_controllers(void);
/*
 * The controller that l needs and records do not get, or NULL: a limit
 * is refused, never dropped.
 */
const char *cgroups_lacks(const struct cgroup_limits *l);
/*
 * Watch records' cgroup.events on loop: changed is called with a record
 * whose events changed (read: populated, frozen).  Spares are made on
 * the loop's idle turns from then on.
 */
void	 cgroups_start(struct ev_loop *, void (*changed)(struct cgroup *));
/*
 * At exit: the records' cgroups that are empty and the spares removed,
 * the agent back where it started and its subtree removed when it made
 * one.
 */
void	 cgroups_stop(void);

/*
 * The agent's handover (core/handover.c).  What the next agent needs to
 * take up the subtree where this one leaves it: out gives back the
 * spares (removed) and says where the names go on; undo makes spares
 * again (the exec failed).  resume, before cgroups_init, makes it take
 * up that subtree as it is (records' cgroups kept, names going on);
 * cgroup_adopt then takes each record's cgroup back by its fd.
 */
struct cgroups_handed {
	bool		 on;
	bool		 made;
	char		 root[CGROUP_PATH_MAX];
	char		 origin[CGROUP_PATH_MAX];
	unsigned	 next[CG_NKINDS];
};
void	 cgroups_handover_out(struct cgroups_handed *);
void	 cgroups_handover_undo(void);
void	 cgroups_resume(const struct cgroups_handed *);
void	 cgroup_adopt(struct cgroup *, enum cgroup_kind, unsigned n, int fd);

void	 cgroup_init(struct cgroup *);
/*
 * A cgroup for a record of kind k (a spare if one is made), with limits
 * l (NULL: none) written; its events watched.  -1 and errno (EOPNOTSUPP
 * when cgroups are off or a controller is missing).
 */
int	 cgroup_make(struct cgroup *, enum cgroup_kind k,
	    const struct cgroup_limits *l);
/* Read cgroup.events into populated and frozen.  -1 and errno. */
int	 cgroup_events(struct cgroup *);
/* Every member KILLed (cgroup.kill). */
int	 cgroup_kill(struct cgroup *);
/* sig to every member (cgroup.procs): the number signalled, or -1. */
int	 cgroup_signal(struct cgroup *, int sig);
/* Freeze or thaw (cgroup.freeze); frozen is known from the events. */
int	 cgroup_freeze(struct cgroup *, bool);
/* The figures now. */
void	 cgroup_usage(struct cgroup *, struct cgroup_usage *);
/* memory.events' oom_kill (or oom_group_kill), or -1 without it. */
int64_t	 cgroup_oom_kills(struct cgroup *);
/* Its path under the cgroup2 mount ("/tend-.../procs/7"), into buf. */
void	 cgroup_path(const struct cgroup *, char *buf, size_t n);
/*
 * Removed (rmdir); while members are left (a KILL takes its time) the
 * module removes it once its events say it emptied.  The struct is free
 * to go either way; -1 and errno only when it could not be done (the
 * directory stays to cgroups_stop).
 */
int	 cgroup_remove(struct cgroup *);

#endif
