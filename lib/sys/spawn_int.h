/*
 * spawn_int: what the files of the spawn module share and no one else
 * reads (callers see spawn.h).  spawn.c starts children and runs the
 * forked child's side; spawn_clone.c makes a child in a cgroup.
 */
#ifndef TEND_SPAWN_INT_H
#define TEND_SPAWN_INT_H

#include <sys/types.h>

#include <stdbool.h>

#include "base/tunables.h"
#include "spawn.h"

/* The supplementary groups a child takes, looked up before fork. */
struct spawn_groups {
	gid_t	list[USER_GROUPS_MAX];
	int	n;
};

/*
 * In the child, between fork (or clone) and exec: sets it up and execs,
 * or reports its stage and errno on errfd and _exits 127.  joinfd, if
 * not -1, is a cgroup.procs it writes itself into first.
 */
_Noreturn void	spawn_child(const struct spawn_opts *,
		    const struct spawn_groups *, int errfd, int joinfd);
/* Confinement asked that posix_spawn cannot give. */
bool	spawn_confined(const struct spawn_confine *);
/*
 * fork, into o's cgroup when it has one (see spawn_clone.c): the child's
 * pid, 0 in a forked child, -1 and errno; *joinfd as spawn_child takes.
 */
pid_t	spawn_clone(const struct spawn_opts *, const struct spawn_groups *,
	    int errfd, int *joinfd);

#endif
