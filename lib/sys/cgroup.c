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
#include "cgroup_int.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC	0x63677270
#endif

const char *const cgroup_ctrl_names[CG_NCTRL] = {
	"cpu", "io", "memory", "pids"
};
const char *const cg_kind_dirs[CG_NKINDS] = { "procs", "terms" };

struct cg_state cg = { .rootfd = -1, .kindfd = { -1, -1 }, .inofd = -1 };

static void	cg_off(const char *, ...) __attribute__((format(printf, 1, 2)));
static int	cg_find_mount(void);
static int	cg_own(char *, size_t);
static bool	cg_alone(const char *);
static int	cg_join(const char *dir);
static void	cg_enable(int dirfd, const char *offered);
static void	cg_clear(int dirfd);
static void	cg_sweep(const char *dir);
static int	cg_rmtree(int dirfd, const char *name);
static void	cg_rmleaf(int dirfd, const char *name);

/* ------------------------------------------------------------------ */
/* Finding and preparing the hierarchy */

/* cgroups_resume's: the subtree the agent before this one left. */
static struct cgroups_handed cg_resume;
static bool cg_resuming;

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
	if (cg_resuming)
		root = cg_resume.root;
	if (off && !cg_resuming) {
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
	snprintf(cg.origin, sizeof(cg.origin), "%s",
	    cg_resuming ? cg_resume.origin : own);
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
	if (cg_resuming || cg_alone(own)) {
		snprintf(cg.root, sizeof(cg.root), "%s", own);
		cg.made = cg_resuming && cg_resume.made;
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
		/*
		 * An earlier agent's records in this subtree: gone now,
		 * unless this agent takes them over.
		 */
		if (!cg_resuming)
			cg_clear(cg.kindfd[k]);
		else
			cg.spares[k].next = cg.spares[k].end =
			    cg_resume.next[k];
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
/* The agent's handover */

void
cgroups_handover_out(struct cgroups_handed *h)
{
	struct cg_spares	*s;
	char			 name[16];
	int			 k;

	memset(h, 0, sizeof(*h));
	h->on = cg.on;
	if (!cg.on)
		return;
	h->made = cg.made;
	snprintf(h->root, sizeof(h->root), "%s", cg.root);
	snprintf(h->origin, sizeof(h->origin), "%s", cg.origin);
	if (cg.loop != NULL)
		ev_idle_stop(cg.loop, &cg.fill);
	for (k = 0; k < CG_NKINDS; k++) {
		s = &cg.spares[k];
		/* The names given back are not used again: end goes on. */
		for (; s->next < s->end; s->next++) {
			close(s->fd[s->next % CGROUP_SPARES]);
			snprintf(name, sizeof(name), "%u", s->next);
			(void)unlinkat(cg.kindfd[k], name, AT_REMOVEDIR);
		}
		h->next[k] = s->end;
	}
}

void
cgroups_handover_undo(void)
{
	if (cg.on && cg.loop != NULL)
		ev_idle_start(cg.loop, &cg.fill);
}

void
cgroups_resume(const struct cgroups_handed *h)
{
	cg_resume = *h;
	cg_resuming = h->on;
}

/* ------------------------------------------------------------------ */
/* Files */

int
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
ssize_t
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
int64_t
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
