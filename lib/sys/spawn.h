/*
 * spawn: starting a child program.  The program looked up along the
 * PATH of the child's own environment, the child's stdio, session, cwd,
 * user and limits, default signals; posix_spawn where it can do all of
 * that, fork (with an errno handshake) where it cannot.
 */
#ifndef TEND_SPAWN_H
#define TEND_SPAWN_H

#include <spawn.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <cjson/cJSON.h>

/* What a child gets that the agent does not have. */
struct spawn_limits {
	int		oom_adj;	/* its oom_score_adj */
	struct rlimit	nofile;		/* the fd limit the agent started with */
	bool		nofile_raised;	/* the agent's own is higher now */
};

/* The rlimits a request may set, in the order of spawn_rlimit_names. */
enum spawn_rlim {
	SPAWN_RLIM_NOFILE,
	SPAWN_RLIM_NPROC,
	SPAWN_RLIM_AS,
	SPAWN_RLIM_CPU,
	SPAWN_RLIM_FSIZE,
	SPAWN_NRLIM
};
extern const char *const spawn_rlimit_names[SPAWN_NRLIM];

/*
 * Confinement a request asks for, applied by the child between fork and
 * exec in this order: network namespace, rlimits, no_new_privs, seccomp
 * filter (before the user: still privileged, it needs no no_new_privs),
 * user.
 */
struct spawn_confine {
	bool		 nonewprivs;	/* PR_SET_NO_NEW_PRIVS */
	bool		 seccomp;	/* the default deny-list (EPERM) */
	bool		 nonet;		/* own network namespace, lo up */
	bool		 has_rlim[SPAWN_NRLIM];
	rlim_t		 rlim[SPAWN_NRLIM];	/* soft = hard = this */
};

struct spawn_opts {
	char *const	*argv;		/* NULL-terminated; argv[0] non-empty */
	char *const	*envp;		/* the child's whole environment */
	const char	*cwd;		/* NULL: the agent's */
	int		 fd[3];		/* the child's 0, 1, 2; -1: the agent's */
	bool		 setsid;	/* its own session and process group */
	bool		 closefds;	/* no other fd of the agent stays open */
	/* Run as this user: its groups (user_groups), setgid, setuid. */
	bool		 has_user;
	uid_t		 uid;
	gid_t		 gid;
	const char	*user;		/* for user_groups, or NULL */
	/*
	 * A controlling terminal, the slave of a pty by name: the child
	 * makes its own session, opens it as its 0, 1 and 2 (fd[] is not
	 * used) and takes it with TIOCSCTTY.
	 */
	const char	*ctty;
	const struct spawn_limits *limits;	/* NULL: none */
	const struct spawn_confine *confine;	/* NULL: none */
	/*
	 * A cgroup v2 directory the child is born in (clone3 into it), so
	 * that nothing it starts is ever outside; its fd, when in_cgroup.
	 */
	bool		 in_cgroup;
	int		 cgroup_fd;
};

/*
 * Lower the agent's own oom score (where it may) and raise its soft fd
 * limit to the hard one; *l gets what children are to have instead.
 */
void	spawn_limits_init(struct spawn_limits *l);
/*
 * Apply l to a child: from the child itself (pid 0, between fork and
 * exec: async-signal-safe) or from the parent right after it started.
 */
void	spawn_child_limits(const struct spawn_limits *l, pid_t pid);

/*
 * Start o->argv.  The child's pid, or -1 and errno: *failed is then true
 * when the program could not be run (not found, not executable, its cwd
 * or user refused; errno says why), false when the agent could not make
 * a process now (EAGAIN) or set one up (ENOMEM, EBADF...), and false with
 * EOPNOTSUPP when the agent cannot isolate it as asked (no capability for
 * a network namespace, no kernel support): it never runs unconfined.
 */
pid_t	spawn_start(const struct spawn_opts *o, bool *failed);

/*
 * name as execvp would find it, but along the PATH of envp and with a
 * relative PATH entry taken from cwd: into out (n bytes).  -1 and ENOENT,
 * or EACCES when only files that are not executable have that name.
 */
int	spawn_which(char *const *envp, const char *cwd, const char *name,
	    char *out, size_t n);

/*
 * Default dispositions and an empty mask, as a program expects to start
 * with: for a child before exec, and for the agent itself at start.
 */
void	spawn_reset_signals(void);

/*
 * The child-side confinement steps, each -1 and errno, async-signal-
 * safe (for a child between fork and exec; the tests call them in one).
 * spawn_child_nonet: a network namespace of its own with lo up.
 * spawn_child_seccomp: installs the filter spawn_filter built.
 */
int	spawn_child_nonet(void);
int	spawn_child_rlimits(const struct spawn_confine *);
int	spawn_child_seccomp(void);
/*
 * Build the default deny-list as BPF, once, in the agent (libseccomp
 * allocates; a child may not): 0, or -1 and errno.  spawn_start calls it.
 */
int	spawn_filter(void);
/*
 * The confinement (and the ids run as, when has_user) as fields of
 * meta.json's options object: "uid", "gid", "noNewPrivs", "seccomp",
 * "network", "rlimits" — only those asked for.
 */
void	spawn_confine_json(cJSON *options, const struct spawn_confine *,
	    bool has_user, uid_t, gid_t);

/*
 * Close every fd but the n in keep (sorted in place).  Async-signal-
 * safe, for a child.
 */
void	spawn_close_except(int *keep, int n);
/*
 * fork for a helper of the agent's own that does its work and _exits:
 * in the child (0), default signals (spawn_reset_signals) and every fd
 * closed but the n in keep, so that no socket or pipe of the agent stays
 * open in it (a client would never see EOF).  As fork otherwise.
 */
pid_t	spawn_helper(int *keep, int n);

/* A copy of a NULL-terminated vector and its strings; NULL: ENOMEM. */
char	**spawn_strvdup(char **);
/*
 * A child's environment (the strings borrowed, the array the caller's to
 * free): base, with add's entries replacing those of the same name, and
 * dflt ("K=V" or NULL) replacing base's K unless add sets K.
 */
char	**spawn_envp(char **base, char **add, const char *dflt);

#endif
