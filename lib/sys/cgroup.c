/*
 * cgroup: the agent's cgroup v2 subtree and its records' cgroups (see
 * cgroup.h for the layout).  Every file of cgroupfs is small and read or
 * written whole: one read or write each, at an fd of the cgroup's
 * directory.
 */
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/tunables.h"
#include "base/util.h"
#include "cgroup.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC	0x63677270
#endif

const char *const cgroup_ctrl_names[CG_NCTRL] = {
	"cpu", "io", "memory", "pids"
};
static const char *const cg_kind_dirs[CG_NKINDS] = { "procs", "terms" };

/* The spares of a kind: made n in [next, end), taken from next. */
struct cg_spares {
	int		 fd[CGROUP_SPARES];	/* by n % CGROUP_SPARES */
	unsigned	 next, end;
};

static struct {
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
} cg = { .rootfd = -1, .kindfd = { -1, -1 }, .inofd = -1 };

static void	cg_off(const char *, ...) __attribute__((format(printf, 1, 2)));
static int	cg_find_mount(void);
static int	cg_own(char *, size_t);
static bool	cg_alone(const char *);
static int	cg_write(int dirfd, const char *name, const char *);
static ssize_t	cg_read(int dirfd, const char *name, char *, size_t);
static int64_t	cg_key(const char *text, const char *key);
static int	cg_join(const char *dir);
static void	cg_enable(int dirfd, const char *offered);
static void	cg_clear(int dirfd);
static void	cg_sweep(const char *dir);
static int	cg_rmtree(int dirfd, const char *name);
static void	cg_rmleaf(int dirfd, const char *name);
static int	cg_spare_make(enum cgroup_kind);
static void	cg_watch_add(struct cgroup *);
static void	cg_watch_del(struct cgroup *);
static void	cg_doomed_gone(struct cgroup *);
static void	cg_recheck(void);
static int	cg_rmdir(struct cgroup *);
static void	cg_release(struct cgroup *);
static void	cg_ino_cb(struct ev_loop *, ev_io *, int);
static void	cg_fill_cb(struct ev_loop *, ev_idle *, int);

/* ------------------------------------------------------------------ */
/* Finding and preparing the hierarchy */

static void
cg_off(const char *fmt, ...)
{
	va_list	ap;

	cg.on = false;
	va_start(ap, fmt);
	vsnprintf(cg.reason, sizeof(cg.reason), fmt, ap);
	va_end(ap);
}

void
cgroups_init(const char *root, bool off, const char *boot)
{
	char		 own[PATH_MAX], ctrls[256], dir[PATH_MAX + 64];
	struct statfs	 sf;
	int		 k, fd;

	cg.on = false;
	cg.reason[0] = '\0';
	if (off) {
		cg_off("turned off (--no-cgroups)");
		goto out;
	}
	if (root != NULL) {
		if (statfs(root, &sf) == -1) {
			cg_off("%s: %s", root, strerror(errno));
			goto out;
		}
		if (sf.f_type != CGROUP2_SUPER_MAGIC) {
			cg_off("%s is not in a cgroup2 filesystem", root);
			goto out;
		}
		snprintf(own, sizeof(own), "%s", root);
		/* For the paths records name (cgroup_path), if it is there. */
		if (cg_find_mount() == -1) {
			cg.mount[0] = '\0';
			cg.reason[0] = '\0';
		}
	} else {
		if (cg_find_mount() == -1)
			goto out;
		if (cg_own(own, sizeof(own)) == -1)
			goto out;
	}
	snprintf(cg.origin, sizeof(cg.origin), "%s", own);
	if (access(own, W_OK) == -1) {
		cg_off("%s is not writable: %s", own, strerror(errno));
		goto out;
	}
	/*
	 * Alone, the agent's cgroup is its subtree: it leaves it for a leaf
	 * of its own (cgroup v2 enables controllers only for cgroups
	 * without members).  Not alone, it makes one beside its own and
	 * sweeps those of agents that are gone.
	 */
	if (cg_alone(own)) {
		snprintf(cg.root, sizeof(cg.root), "%s", own);
	} else {
		cg_sweep(own);
		if ((size_t)snprintf(cg.root, sizeof(cg.root), "%s/tend-%s",
		    own, boot) >= sizeof(cg.root)) {
			cg_off("%s: path too long", own);
			goto out;
		}
		if (mkdir(cg.root, 0755) == -1 && errno != EEXIST) {
			cg_off("%s: %s", cg.root, strerror(errno));
			goto out;
		}
		cg.made = true;
	}
	if ((cg.rootfd = open(cg.root, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		cg_off("%s: %s", cg.root, strerror(errno));
		goto fail;
	}
	snprintf(dir, sizeof(dir), "%s/agent", cg.root);
	if ((mkdir(dir, 0755) == -1 && errno != EEXIST) || cg_join(dir) == -1) {
		cg_off("%s: %s", dir, strerror(errno));
		goto fail;
	}
	if (cg_read(cg.rootfd, "cgroup.controllers", ctrls,
	    sizeof(ctrls)) == -1)
		ctrls[0] = '\0';
	cg_enable(cg.rootfd, ctrls);
	for (k = 0; k < CG_NKINDS; k++) {
		if ((mkdirat(cg.rootfd, cg_kind_dirs[k], 0755) == -1 &&
		    errno != EEXIST) || (cg.kindfd[k] = openat(cg.rootfd,
		    cg_kind_dirs[k], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
			cg_off("%s/%s: %s", cg.root, cg_kind_dirs[k],
			    strerror(errno));
			goto fail;
		}
		/* The root of a hierarchy has none: a child's tells. */
		if (faccessat(cg.kindfd[k], "cgroup.kill", F_OK, 0) == -1) {
			cg_off("%s/%s has no cgroup.kill (Linux 5.14 or later "
			    "needed)", cg.root, cg_kind_dirs[k]);
			goto fail;
		}
		/* An earlier agent's records in this subtree: gone now. */
		cg_clear(cg.kindfd[k]);
		cg_enable(cg.kindfd[k], ctrls);
	}
	/* What the records get: what their parent passes down. */
	cg.ctrl = 0;
	if (cg_read(cg.kindfd[CG_PROC], "cgroup.subtree_control", ctrls,
	    sizeof(ctrls)) > 0)
		for (k = 0; k < CG_NCTRL; k++)
			if (cg_key(ctrls, cgroup_ctrl_names[k]) != -2)
				cg.ctrl |= 1u << k;
	/*
	 * PID 1 is protected from its children: memory they cannot take
	 * and a larger share of the CPU when they compete for it.
	 */
	if ((fd = openat(cg.rootfd, "agent", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) != -1) {
		snprintf(ctrls, sizeof(ctrls), "%d", CGROUP_AGENT_MEMORY_MIN);
		if (faccessat(fd, "memory.min", F_OK, 0) == 0 &&
		    cg_write(fd, "memory.min", ctrls) == -1)
			log_warn("event=cgroup_memory_min_failed");
		snprintf(ctrls, sizeof(ctrls), "%d", CGROUP_AGENT_CPU_WEIGHT);
		if (faccessat(fd, "cpu.weight", F_OK, 0) == 0 &&
		    cg_write(fd, "cpu.weight", ctrls) == -1)
			log_warn("event=cgroup_cpu_weight_failed");
		close(fd);
	}
	cg.on = true;
	for (k = 0; k < CG_NKINDS; k++)
		(void)cg_spare_make(k);
	goto out;

fail:
	cgroups_stop();
out:
	if (cg.on)
		log_info("event=cgroups mode=v2 root=%s controllers=%#x",
		    cg.root, cg.ctrl);
	else
		log_info("event=cgroups mode=none reason=\"%s\"", cg.reason);
}

/*
 * The cgroup2 mount in mountinfo: "id parent dev root point opts ... -
 * fstype source superopts".  The last one listed (a mount over another
 * comes after it); a read-only one is refused here with the reason
 * (Docker's default).
 */
static int
cg_find_mount(void)
{
	char	 line[PATH_MAX * 2], root[PATH_MAX], point[PATH_MAX], opts[256];
	char	*dash, fstype[32];
	FILE	*f;
	bool	 found = false, ro = false;

	if ((f = fopen("/proc/self/mountinfo", "re")) == NULL) {
		cg_off("/proc/self/mountinfo: %s", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if ((dash = strstr(line, " - ")) == NULL ||
		    sscanf(dash + 3, "%31s", fstype) != 1 ||
		    strcmp(fstype, "cgroup2") != 0)
			continue;
		if (sscanf(line, "%*s %*s %*s %4095s %4095s %255s", root,
		    point, opts) != 3)
			continue;
		/*
		 * A mount of a part of the hierarchy outside this cgroup
		 * namespace ("/.."): the agent's cgroup is not under it.
		 */
		if (strncmp(root, "/..", 3) == 0)
			continue;
		snprintf(cg.mount, sizeof(cg.mount), "%s", point);
		snprintf(cg.mroot, sizeof(cg.mroot), "%s", root);
		ro = strncmp(opts, "ro", 2) == 0 &&
		    (opts[2] == ',' || opts[2] == '\0');
		found = true;
	}
	fclose(f);
	if (!found) {
		cg_off("no cgroup2 filesystem is mounted (cgroup v1 only, "
		    "or none)");
		return -1;
	}
	if (ro) {
		cg_off("%s is mounted read-only", cg.mount);
		return -1;
	}
	return 0;
}

/* The agent's own cgroup, "0::PATH" in /proc/self/cgroup, as a path. */
static int
cg_own(char *out, size_t n)
{
	char	 line[PATH_MAX + 8], *nl, *p;
	size_t	 m;
	FILE	*f;
	bool	 found = false;

	if ((f = fopen("/proc/self/cgroup", "re")) == NULL) {
		cg_off("/proc/self/cgroup: %s", strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			found = true;
			break;
		}
	fclose(f);
	if (!found) {
		cg_off("the agent is in no cgroup v2 (no 0:: line in "
		    "/proc/self/cgroup)");
		return -1;
	}
	if ((nl = strchr(line, '\n')) != NULL)
		*nl = '\0';
	/*
	 * The path is the namespace's; the mount shows the hierarchy from
	 * its root field down.  " (deleted)", or a cgroup outside what the
	 * mount shows: not usable.
	 */
	p = line + 3;
	m = strcmp(cg.mroot, "/") == 0 ? 0 : strlen(cg.mroot);
	if (m > 0 && (strncmp(p, cg.mroot, m) != 0 ||
	    (p[m] != '/' && p[m] != '\0'))) {
		cg_off("the agent's cgroup %s is outside the cgroup2 mount "
		    "(%s of the hierarchy)", p, cg.mroot);
		return -1;
	}
	p += m;
	if (strchr(p, ' ') != NULL || (size_t)snprintf(out, n, "%s%s",
	    cg.mount, strcmp(p, "/") == 0 ? "" : p) >= n) {
		cg_off("the agent's cgroup %s cannot be used", line + 3);
		return -1;
	}
	if (access(out, F_OK) == -1) {
		/* A cgroup namespace's view that the mount does not show. */
		cg_off("%s: %s", out, strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * No other process in dir than the agent and kernel threads (which stay
 * in the root when the agent is a machine's init).  A process of another
 * PID namespace reads as 0: not alone.
 */
static bool
cg_alone(const char *dir)
{
	char	 path[PATH_MAX + 32], st[512], *p;
	FILE	*f;
	long	 pid, flags;
	int	 fd, i;
	ssize_t	 n;
	bool	 alone = true;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	if ((f = fopen(path, "re")) == NULL)
		return false;
	while (alone && fscanf(f, "%ld", &pid) == 1) {
		if (pid == (long)getpid())
			continue;
		/* PF_KTHREAD in the flags, the 9th field of stat. */
		snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
		alone = false;
		if (pid <= 0 || (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			break;
		n = read(fd, st, sizeof(st) - 1);
		close(fd);
		if (n <= 0)
			break;
		st[n] = '\0';
		if ((p = strrchr(st, ')')) == NULL)
			break;
		for (i = 0; i < 7 && p != NULL; i++)
			p = strchr(p + 1, ' ');
		if (p == NULL)
			break;
		flags = strtol(p + 1, NULL, 10);
		alone = (flags & 0x00200000) != 0;
	}
	fclose(f);
	return alone;
}

/* Move the agent into dir. */
static int
cg_join(const char *dir)
{
	int	fd, rc;

	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	rc = cg_write(fd, "cgroup.procs", "0");
	close(fd);
	return rc;
}

/* Enable for dirfd's children each controller of ours that is offered. */
static void
cg_enable(int dirfd, const char *offered)
{
	char	what[32];
	int	k;

	for (k = 0; k < CG_NCTRL; k++) {
		if (cg_key(offered, cgroup_ctrl_names[k]) == -2)
			continue;
		snprintf(what, sizeof(what), "+%s", cgroup_ctrl_names[k]);
		if (cg_write(dirfd, "cgroup.subtree_control", what) == -1)
			log_warn("event=cgroup_enable_failed controller=%s",
			    cgroup_ctrl_names[k]);
	}
}

/* Every cgroup under dirfd killed and removed (an earlier agent's). */
static void
cg_clear(int dirfd)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd;

	if ((fd = dup(dirfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		(void)cg_rmtree(dirfd, de->d_name);
	}
	closedir(d);
}

/*
 * Beside the agent's own cgroup, the subtrees of agents that are gone
 * (nothing populated in them): removed, so that agents killed without
 * their stop do not leave them behind.
 */
static void
cg_sweep(const char *dir)
{
	struct dirent	*de;
	struct stat	 sb;
	DIR		*d;
	char		 ev[128];
	int		 fd, sub;

	if ((d = opendir(dir)) == NULL)
		return;
	fd = dirfd(d);
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "tend-", 5) != 0)
			continue;
		if ((sub = openat(fd, de->d_name, O_RDONLY | O_DIRECTORY |
		    O_CLOEXEC)) == -1)
			continue;
		/*
		 * A young one may be an agent's that has not joined it yet
		 * (it makes the directory, then moves in).
		 */
		if (fstat(sub, &sb) == 0 &&
		    time(NULL) - sb.st_mtime < CGROUP_SWEEP_AGE) {
			close(sub);
			continue;
		}
		if (cg_read(sub, "cgroup.events", ev, sizeof(ev)) > 0 &&
		    cg_key(ev, "populated") == 0)
			(void)cg_rmtree(fd, de->d_name);
		close(sub);
	}
	closedir(d);
}

/* rmdir a leaf, its members KILLed and waited for (bounded) first. */
static void
cg_rmleaf(int dirfd, const char *name)
{
	struct timespec	 ts = { 0, 5 * 1000 * 1000 };
	char		 ev[128];
	int		 fd, i;

	if ((fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return;
	for (i = 0; i * 5 < CGROUP_STOP_WAIT_MS; i++) {
		if (cg_read(fd, "cgroup.events", ev, sizeof(ev)) <= 0 ||
		    cg_key(ev, "populated") != 1)
			break;
		if (i == 0)
			(void)cg_write(fd, "cgroup.kill", "1");
		nanosleep(&ts, NULL);
	}
	close(fd);
	(void)unlinkat(dirfd, name, AT_REMOVEDIR);
}

/*
 * rmdir name under dirfd, its children first; its members KILLed first
 * (removal waits for none: a populated one stays, EBUSY).
 */
static int
cg_rmtree(int dirfd, const char *name)
{
	struct dirent	*de;
	DIR		*d;
	int		 fd, sub;

	if ((fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1)
		return -1;
	(void)cg_write(fd, "cgroup.kill", "1");
	if ((sub = dup(fd)) != -1 && (d = fdopendir(sub)) != NULL) {
		while ((de = readdir(d)) != NULL)
			if (de->d_type == DT_DIR && de->d_name[0] != '.')
				(void)cg_rmtree(fd, de->d_name);
		closedir(d);
	} else if (sub != -1)
		close(sub);
	close(fd);
	return unlinkat(dirfd, name, AT_REMOVEDIR);
}

bool
cgroups_on(void)
{
	return cg.on;
}

const char *
cgroups_root(void)
{
	return cg.on ? cg.root : NULL;
}

const char *
cgroups_reason(void)
{
	return cg.on ? "" : cg.reason;
}

unsigned
cgroups_controllers(void)
{
	return cg.on ? cg.ctrl : 0;
}

const char *
cgroups_lacks(const struct cgroup_limits *l)
{
	unsigned	need = 0;
	int		k;

	if (l->memory > 0 || l->memory_high > 0)
		need |= 1u << CG_MEMORY;
	if (l->pids > 0)
		need |= 1u << CG_PIDS;
	if (l->cpu > 0)
		need |= 1u << CG_CPU;
	for (k = 0; k < CG_NCTRL; k++)
		if ((need & (1u << k)) && !(cgroups_controllers() &
		    (1u << k)))
			return cgroup_ctrl_names[k];
	return NULL;
}

void
cgroups_start(struct ev_loop *loop, void (*changed)(struct cgroup *))
{
	if (!cg.on || cg.loop != NULL)
		return;
	cg.loop = loop;
	cg.changed = changed;
	if ((cg.inofd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1)
		log_warn("event=cgroup_inotify_failed");
	else {
		ev_io_init(&cg.inoio, cg_ino_cb, cg.inofd, EV_READ);
		ev_io_start(loop, &cg.inoio);
	}
	ev_idle_init(&cg.fill, cg_fill_cb);
	ev_idle_start(loop, &cg.fill);
}

void
cgroups_stop(void)
{
	struct cgroup	 *d;
	struct cg_spares *s;
	char		  name[16];
	int		  k;

	if (cg.loop != NULL) {
		ev_idle_stop(cg.loop, &cg.fill);
		if (cg.inofd != -1)
			ev_io_stop(cg.loop, &cg.inoio);
		cg.loop = NULL;
	}
	while ((d = cg.doomed) != NULL) {
		cg.doomed = d->dnext;
		(void)cg_rmdir(d);
		cg_release(d);
		free(d);
	}
	if (cg.inofd != -1)
		close(cg.inofd);
	cg.inofd = -1;
	for (k = 0; k < CG_NKINDS; k++) {
		if (cg.kindfd[k] == -1)
			continue;
		s = &cg.spares[k];
		for (; s->next < s->end; s->next++) {
			close(s->fd[s->next % CGROUP_SPARES]);
			snprintf(name, sizeof(name), "%u", s->next);
			(void)unlinkat(cg.kindfd[k], name, AT_REMOVEDIR);
		}
		cg_clear(cg.kindfd[k]);
		close(cg.kindfd[k]);
		cg.kindfd[k] = -1;
		if (cg.made)
			(void)unlinkat(cg.rootfd, cg_kind_dirs[k],
			    AT_REMOVEDIR);
	}
	if (cg.made) {
		/*
		 * Back where it started: then its subtree can go, with any
		 * helper of its own still in its leaf (killed: it would
		 * outlive the agent anyway, and hold the subtree).
		 */
		if (cg_join(cg.origin) == -1)
			log_warn("event=cgroup_leave_failed dir=%s", cg.origin);
		else if (cg.rootfd != -1)
			cg_rmleaf(cg.rootfd, "agent");
		if (rmdir(cg.root) == -1 && errno != ENOENT)
			log_warn("event=cgroup_remove_failed dir=%s", cg.root);
		cg.made = false;
	}
	if (cg.rootfd != -1)
		close(cg.rootfd);
	cg.rootfd = -1;
	if (cg.on)
		cg_off("stopped");
}

/* ------------------------------------------------------------------ */
/* Files */

static int
cg_write(int dirfd, const char *name, const char *s)
{
	ssize_t	n;
	int	fd, err;

	if ((fd = openat(dirfd, name, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	n = write(fd, s, strlen(s));
	err = errno;
	close(fd);
	errno = err;
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

/* The file, NUL-terminated: its length, or -1 and errno. */
static ssize_t
cg_read(int dirfd, const char *name, char *buf, size_t n)
{
	ssize_t	r;
	int	fd, err;

	if ((fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	r = read(fd, buf, n - 1);
	err = errno;
	close(fd);
	if (r == -1) {
		errno = err;
		return -1;
	}
	buf[r] = '\0';
	return r;
}

/*
 * In text of "key value" lines (or of space-separated words), key's
 * number: -2 when key is not there, -1 when its value is not a number
 * (a word alone counts as there, -1).
 */
static int64_t
cg_key(const char *text, const char *key)
{
	size_t		 n = strlen(key);
	const char	*p;
	char		*end;
	long long	 v;

	for (p = text; (p = strstr(p, key)) != NULL; p += n) {
		if ((p != text && !isspace((unsigned char)p[-1])) ||
		    (p[n] != '\0' && !isspace((unsigned char)p[n])))
			continue;
		if (p[n] != ' ')
			return -1;
		v = strtoll(p + n + 1, &end, 10);
		return end == p + n + 1 ? -1 : (int64_t)v;
	}
	return -2;
}

/* ------------------------------------------------------------------ */
/* Spares: the next cgroups of a kind, made off a launch's path */

static int
cg_spare_make(enum cgroup_kind k)
{
	struct cg_spares	*s = &cg.spares[k];
	char			 name[16];
	int			 fd;

	if (s->end - s->next >= CGROUP_SPARES)
		return 0;
	snprintf(name, sizeof(name), "%u", s->end);
	if (mkdirat(cg.kindfd[k], name, 0755) == -1 ||
	    (fd = openat(cg.kindfd[k], name, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		log_warn("event=cgroup_make_failed kind=%s n=%u",
		    cg_kind_dirs[k], s->end);
		(void)unlinkat(cg.kindfd[k], name, AT_REMOVEDIR);
		s->end++;	/* the name is not tried again */
		s->next = s->end;
		return -1;
	}
	s->fd[s->end % CGROUP_SPARES] = fd;
	s->end++;
	return 1;
}

/* One spare per idle turn, until each kind has all of its own. */
static void
cg_fill_cb(struct ev_loop *loop, ev_idle *w, int revents)
{
	int	k;

	(void)revents;
	for (k = 0; k < CG_NKINDS; k++)
		if (cg.spares[k].end - cg.spares[k].next < CGROUP_SPARES) {
			(void)cg_spare_make(k);
			return;
		}
	ev_idle_stop(loop, w);
}

/* ------------------------------------------------------------------ */
/* A record's cgroup */

void
cgroup_init(struct cgroup *c)
{
	memset(c, 0, sizeof(*c));
	c->fd = c->wd = -1;
}

static int
cg_limit(int fd, const char *name, int64_t v)
{
	char	buf[32];

	snprintf(buf, sizeof(buf), "%lld", (long long)v);
	return cg_write(fd, name, buf);
}

int
cgroup_make(struct cgroup *c, enum cgroup_kind k,
    const struct cgroup_limits *l)
{
	struct cg_spares	*s = &cg.spares[k];
	char			 buf[64];
	int			 err;

	if (!cg.on || (l != NULL && cgroups_lacks(l) != NULL)) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (s->next == s->end && cg_spare_make(k) == -1)
		return -1;
	c->kind = k;
	c->n = s->next++;
	c->fd = s->fd[c->n % CGROUP_SPARES];
	c->populated = c->frozen = false;
	if (cg.loop != NULL && !ev_is_active(&cg.fill))
		ev_idle_start(cg.loop, &cg.fill);
	if (l != NULL && ((l->memory > 0 &&
	    cg_limit(c->fd, "memory.max", l->memory) == -1) ||
	    (l->memory_high > 0 &&
	    cg_limit(c->fd, "memory.high", l->memory_high) == -1) ||
	    (l->pids > 0 && cg_limit(c->fd, "pids.max", l->pids) == -1)))
		goto fail;
	if (l != NULL && l->cpu > 0) {
		snprintf(buf, sizeof(buf), "%lld %d",
		    (long long)(l->cpu * CGROUP_CPU_PERIOD + 0.5),
		    CGROUP_CPU_PERIOD);
		if (cg_write(c->fd, "cpu.max", buf) == -1)
			goto fail;
	}
	cg_watch_add(c);
	return 0;
fail:
	err = errno;
	(void)cgroup_remove(c);
	errno = err;
	return -1;
}

int
cgroup_events(struct cgroup *c)
{
	char	buf[128];

	if (c->fd == -1) {
		errno = ESRCH;
		return -1;
	}
	if (cg_read(c->fd, "cgroup.events", buf, sizeof(buf)) == -1)
		return -1;
	c->populated = cg_key(buf, "populated") == 1;
	c->frozen = cg_key(buf, "frozen") == 1;
	return 0;
}

int
cgroup_kill(struct cgroup *c)
{
	if (c->fd == -1) {
		errno = ESRCH;
		return -1;
	}
	return cg_write(c->fd, "cgroup.kill", "1");
}

int
cgroup_signal(struct cgroup *c, int sig)
{
	char	 buf[4096], *p, *end;
	long	 pid;
	ssize_t	 n;
	size_t	 have = 0;
	int	 fd, found = 0;

	if (c->fd == -1) {
		errno = ESRCH;
		return -1;
	}
	if ((fd = openat(c->fd, "cgroup.procs", O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	/* Pids, one per line; a line cut by the buffer carries over. */
	while ((n = read(fd, buf + have, sizeof(buf) - 1 - have)) > 0) {
		have += (size_t)n;
		buf[have] = '\0';
		for (p = buf; (end = strchr(p, '\n')) != NULL; p = end + 1) {
			pid = strtol(p, NULL, 10);
			/* 0: another PID namespace's, not ours to name. */
			if (pid > 0 && kill((pid_t)pid, sig) == 0)
				found++;
		}
		have = strlen(p);
		memmove(buf, p, have);
	}
	close(fd);
	return found;
}

int
cgroup_freeze(struct cgroup *c, bool on)
{
	if (c->fd == -1) {
		errno = ESRCH;
		return -1;
	}
	return cg_write(c->fd, "cgroup.freeze", on ? "1" : "0");
}

void
cgroup_usage(struct cgroup *c, struct cgroup_usage *u)
{
	char	buf[1024];

	u->cpu_usec = u->mem_current = u->mem_peak = u->pids_current =
	    u->oom_kills = -1;
	if (c->fd == -1)
		return;
	if (cg_read(c->fd, "cpu.stat", buf, sizeof(buf)) > 0)
		u->cpu_usec = cg_key(buf, "usage_usec");
	if (cg_read(c->fd, "memory.current", buf, sizeof(buf)) > 0)
		u->mem_current = strtoll(buf, NULL, 10);
	if (cg_read(c->fd, "memory.peak", buf, sizeof(buf)) > 0)
		u->mem_peak = strtoll(buf, NULL, 10);
	if (cg_read(c->fd, "pids.current", buf, sizeof(buf)) > 0)
		u->pids_current = strtoll(buf, NULL, 10);
	if (cg_read(c->fd, "memory.events", buf, sizeof(buf)) > 0) {
		u->oom_kills = cg_key(buf, "oom_kill");
		if (cg_key(buf, "oom_group_kill") > u->oom_kills)
			u->oom_kills = cg_key(buf, "oom_group_kill");
	}
}

void
cgroup_path(const struct cgroup *c, char *buf, size_t n)
{
	size_t	m = strlen(cg.mount);

	snprintf(buf, n, "%s/%s/%u", strncmp(cg.root, cg.mount, m) == 0 ?
	    cg.root + m : cg.root, cg_kind_dirs[c->kind], c->n);
}

static int
cg_rmdir(struct cgroup *c)
{
	char	name[16];

	snprintf(name, sizeof(name), "%u", c->n);
	if (cg.kindfd[c->kind] != -1 &&
	    unlinkat(cg.kindfd[c->kind], name, AT_REMOVEDIR) == -1 &&
	    errno != ENOENT)
		return -1;
	return 0;
}

static void
cg_release(struct cgroup *c)
{
	cg_watch_del(c);
	close(c->fd);
	c->fd = -1;
}

int
cgroup_remove(struct cgroup *c)
{
	struct cgroup	*d;

	if (c->fd == -1)
		return 0;
	if (cg_rmdir(c) == 0) {
		cg_release(c);
		return 0;
	}
	/*
	 * Members left (a KILL takes its time): the cgroup is removed when
	 * its events say it emptied, by a copy that outlives the owner.
	 */
	if (errno != EBUSY || c->wd == -1 || (d = malloc(sizeof(*d))) ==
	    NULL) {
		log_warn("event=cgroup_remove_failed n=%u", c->n);
		cg_release(c);
		return -1;
	}
	cg_watch_del(c);
	*d = *c;
	d->doomed = true;
	cg_watch_add(d);
	d->dnext = cg.doomed;
	cg.doomed = d;
	c->fd = -1;
	/* It may have emptied before the watch. */
	if (cgroup_events(d) == 0 && !d->populated)
		cg_doomed_gone(d);
	return 0;
}

static void
cg_doomed_gone(struct cgroup *d)
{
	struct cgroup	**pp;

	if (cg_rmdir(d) == -1)
		return;
	cg_release(d);
	for (pp = &cg.doomed; *pp != NULL; pp = &(*pp)->dnext)
		if (*pp == d) {
			*pp = d->dnext;
			break;
		}
	free(d);
}

/* ------------------------------------------------------------------ */
/* Events: inotify on each record's cgroup.events */

static struct cgroup **
cg_wd_bucket(int wd)
{
	return &cg.bywd[(unsigned)wd % CGROUP_WD_HASH];
}

static void
cg_watch_add(struct cgroup *c)
{
	char		 path[PATH_MAX + 64];
	struct cgroup	**b;

	if (cg.inofd == -1)
		return;
	snprintf(path, sizeof(path), "%s/%s/%u/cgroup.events", cg.root,
	    cg_kind_dirs[c->kind], c->n);
	if ((c->wd = inotify_add_watch(cg.inofd, path, IN_MODIFY)) == -1) {
		log_warn("event=cgroup_watch_failed path=%s", path);
		return;
	}
	b = cg_wd_bucket(c->wd);
	c->wdnext = *b;
	*b = c;
}

static void
cg_watch_del(struct cgroup *c)
{
	struct cgroup	**pp;

	if (c->wd == -1)
		return;
	for (pp = cg_wd_bucket(c->wd); *pp != NULL; pp = &(*pp)->wdnext)
		if (*pp == c) {
			*pp = c->wdnext;
			break;
		}
	(void)inotify_rm_watch(cg.inofd, c->wd);
	c->wd = -1;
}

/*
 * The kernel's queue overflowed: events were lost, so every watched
 * cgroup is read again (one whose state did not change is told anyway,
 * which its owner takes as news of nothing).
 */
static void
cg_recheck(void)
{
	struct cgroup	*c, *next;
	size_t		 i;

	log_warnx("event=cgroup_events_overflow");
	for (i = 0; i < CGROUP_WD_HASH; i++)
		for (c = cg.bywd[i]; c != NULL; c = next) {
			next = c->wdnext;
			if (cgroup_events(c) == -1)
				continue;
			if (c->doomed) {
				if (!c->populated)
					cg_doomed_gone(c);
			} else if (cg.changed != NULL)
				cg.changed(c);
		}
}

static void
cg_ino_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	char				 buf[CGROUP_INOTIFY_BUF]
	    __attribute__((aligned(__alignof__(struct inotify_event))));
	const struct inotify_event	*ie;
	struct cgroup			*c;
	ssize_t				 n;
	char				*p;

	(void)loop;
	(void)w;
	(void)revents;
	/* One buffer per turn: a flood of events waits for the next. */
	if ((n = read(cg.inofd, buf, sizeof(buf))) <= 0)
		return;
	for (p = buf; p < buf + n; p += sizeof(*ie) + ie->len) {
		ie = (const struct inotify_event *)(void *)p;
		if (ie->mask & IN_Q_OVERFLOW) {
			cg_recheck();
			continue;
		}
		if (ie->mask & IN_IGNORED)
			continue;
		for (c = *cg_wd_bucket(ie->wd); c != NULL; c = c->wdnext)
			if (c->wd == ie->wd)
				break;
		if (c == NULL || cgroup_events(c) == -1)
			continue;
		if (c->doomed) {
			if (!c->populated)
				cg_doomed_gone(c);
		} else if (cg.changed != NULL)
			cg.changed(c);
	}
}
