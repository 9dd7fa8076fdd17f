/*
 * cgroup_int: what the files of the cgroup module share and no one else
 * reads (callers see cgroup.h).  cgroup.c finds and prepares the
 * hierarchy; cgroup_rec.c owns the records' cgroups and their watch.
 */
#ifndef TEND_CGROUP_INT_H
#define TEND_CGROUP_INT_H

#include <sys/types.h>

#include <limits.h>
#include <stdint.h>

#include "base/tunables.h"
#include "cgroup.h"

extern const char *const cg_kind_dirs[CG_NKINDS];

/* The spares of a kind: made n in [next, end), taken from next. */
struct cg_spares {
	int		 fd[CGROUP_SPARES];	/* by n % CGROUP_SPARES */
	unsigned	 next, end;
};

struct cg_state {
	bool		 on;
	char		 reason[CGROUP_REASON_MAX];
	char		 mount[PATH_MAX];	/* the cgroup2 mount point */
	char		 mroot[PATH_MAX];	/* the hierarchy's path it shows */
	char		 root[PATH_MAX];	/* the subtree */
	char		 origin[PATH_MAX];	/* the agent's cgroup at start */
	bool		 made;		/* root made by this agent */
	int		 rootfd;
	int		 kindfd[CG_NKINDS];
	struct cg_spares spares[CG_NKINDS];
	unsigned	 ctrl;		/* bits: what records get */
	int		 inofd;
	struct cgroup	*bywd[CGROUP_WD_HASH];
	struct cgroup	*doomed;	/* removed by their owner, not empty */
	struct ev_loop	*loop;
	ev_io		 inoio;
	ev_idle		 fill;
	void		(*changed)(struct cgroup *);
};
extern struct cg_state cg;

/* Files of cgroupfs: small, read or written whole. */
int	 cg_write(int dirfd, const char *name, const char *);
/* The file, NUL-terminated: its length, or -1 and errno. */
ssize_t	 cg_read(int dirfd, const char *name, char *, size_t);
/* In "key value" lines (or words), key's number; -2: not there. */
int64_t	 cg_key(const char *text, const char *key);

/* One spare of kind k made: 1, 0 when all are, -1 on failure. */
int	 cg_spare_make(enum cgroup_kind);
void	 cg_fill_cb(struct ev_loop *, ev_idle *, int);
void	 cg_ino_cb(struct ev_loop *, ev_io *, int);
/* A cgroup's directory removed (rmdir): -1 and errno. */
int	 cg_rmdir(struct cgroup *);
/* Its watch and fd let go. */
void	 cg_release(struct cgroup *);
/* A doomed one emptied: removed and freed. */
void	 cg_doomed_gone(struct cgroup *);

#endif
