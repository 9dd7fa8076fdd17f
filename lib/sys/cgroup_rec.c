/*
 * cgroup_rec.c: the records' cgroups (cgroup.h) — made ahead as spares,
 * given their limits, read, signalled, frozen, removed (a populated one
 * by the module once it empties), and their cgroup.events watched.
 * The hierarchy they live in is cgroup.c's.
 */
#include <sys/inotify.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/tunables.h"
#include "cgroup_int.h"

static void	cg_watch_add(struct cgroup *);
static void	cg_watch_del(struct cgroup *);
static void	cg_recheck(void);

/* ------------------------------------------------------------------ */
/* Spares: the next cgroups of a kind, made off a launch's path */

int
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
void
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

void
cgroup_adopt(struct cgroup *c, enum cgroup_kind k, unsigned n, int fd)
{
	cgroup_init(c);
	if (fd == -1)
		return;
	c->kind = k;
	c->n = n;
	c->fd = fd;
	(void)cgroup_events(c);
	cg_watch_add(c);
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
	u->oom_kills = cgroup_oom_kills(c);
}

int64_t
cgroup_oom_kills(struct cgroup *c)
{
	char	buf[512];
	int64_t	n, g;

	if (c->fd == -1 ||
	    cg_read(c->fd, "memory.events", buf, sizeof(buf)) <= 0)
		return -1;
	n = cg_key(buf, "oom_kill");
	g = cg_key(buf, "oom_group_kill");
	return g > n ? g : n;
}

void
cgroup_path(const struct cgroup *c, char *buf, size_t n)
{
	size_t	m = strlen(cg.mount);

	snprintf(buf, n, "%s/%s/%u", strncmp(cg.root, cg.mount, m) == 0 ?
	    cg.root + m : cg.root, cg_kind_dirs[c->kind], c->n);
}

int
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

void
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

void
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

void
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
