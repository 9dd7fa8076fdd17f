/*
 * handover.c: the agent replaced by another binary as the same process
 * (see handover.h).  Writing: the manifest, built from each part's own
 * save; the memfd sealed; close-on-exec cleared on the fds the manifest
 * names; execve.  Reading: the memfd parsed and checked, its fds made
 * close-on-exec again at once (so that no child inherits them), then
 * each part taken up by its owner.
 */
#include <sys/mman.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/codec.h"
#include "base/log.h"
#include "base/tunables.h"
#include "handover.h"
#include "proc.h"
#include "shimctl.h"
#include "store/boot.h"
#include "sys/cgroup.h"

extern char **environ;

static bool	handover_fd_key(const char *, bool *);
static void	handover_fds(const cJSON *, void (*)(int, void *), void *);
static void	handover_cloexec(int, void *);
static void	handover_count(int, void *);
static cJSON	*handover_table(struct jobtab *);
static cJSON	*handover_cg_save(const struct cgroups_handed *);
static cJSON	*handover_recs_save(const struct record_dir *);
static void	handover_recs_load(struct record_dir *, const cJSON *);
static cJSON	*handover_manifest(const struct handover *);
static int	handover_memfd(const char *);
static char	**handover_envp(int, char *, size_t);
static void	handover_undo(const struct handover *);
static void	handover_fail(const char *, const char *);
static char	*handover_read(int);
static void	handover_table_load(struct jobtab *, const cJSON *);

static struct {
	uint64_t	 upgrades;
	const char	*state;		/* "none", "resumed", "failed" */
	char		 reason[256];
	char		 from[64];
} ho = { 0, "none", "", "" };

void
handover_check_print(void)
{
	printf("{\"version\":\"%s\",\"apiVersion\":%d,\"handover\":\"%d.%d\"}\n",
	    TEND_VERSION, TEND_API_VERSION, HANDOVER_MAJOR, HANDOVER_MINOR);
}

uint64_t
handover_upgrades(void)
{
	return ho.upgrades;
}

const char *
handover_state(void)
{
	return ho.state;
}

void
handover_health(cJSON *j)
{
	cJSON	*o;

	cJSON_AddNumberToObject(j, "upgrades", (double)ho.upgrades);
	if ((o = cJSON_AddObjectToObject(j, "handover")) == NULL)
		return;
	cJSON_AddStringToObject(o, "state", ho.state);
	if (ho.from[0] != '\0')
		cJSON_AddStringToObject(o, "from", ho.from);
	if (ho.reason[0] != '\0')
		cJSON_AddStringToObject(o, "reason", ho.reason);
}

/* ------------------------------------------------------------------ */
/* The fds a manifest names */

static bool
handover_fd_key(const char *k, bool *list)
{
	size_t	n = k != NULL ? strlen(k) : 0;

	*list = n >= 3 && strcmp(k + n - 3, "Fds") == 0;
	return *list || (n >= 2 && strcmp(k + n - 2, "Fd") == 0);
}

/* fn(fd, arg) for every fd the tree names (-1s and stdio left out). */
static void
handover_fds(const cJSON *o, void (*fn)(int, void *), void *arg)
{
	const cJSON	*c, *e;
	bool		 list;

	cJSON_ArrayForEach(c, o) {
		if (cJSON_IsObject(c) || (cJSON_IsArray(c) &&
		    !handover_fd_key(c->string, &list))) {
			handover_fds(c, fn, arg);
			continue;
		}
		if (!handover_fd_key(c->string, &list))
			continue;
		if (list) {
			cJSON_ArrayForEach(e, c)
				if (cJSON_IsNumber(e) && e->valueint > 2)
					fn(e->valueint, arg);
		} else if (cJSON_IsNumber(c) && c->valueint > 2)
			fn(c->valueint, arg);
	}
}

static void
handover_cloexec(int fd, void *arg)
{
	int	on = *(int *)arg, fl;

	if ((fl = fcntl(fd, F_GETFD)) == -1)
		return;
	(void)fcntl(fd, F_SETFD, on ? fl | FD_CLOEXEC : fl & ~FD_CLOEXEC);
}

static void
handover_count(int fd, void *arg)
{
	(void)fd;
	(*(int *)arg)++;
}

/* ------------------------------------------------------------------ */
/* Writing */

static cJSON *
handover_table(struct jobtab *t)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddNumberToObject(o, "started", (double)t->started);
	cJSON_AddNumberToObject(o, "ended", (double)t->ended);
	cJSON_AddNumberToObject(o, "stored", (double)t->stored);
	cJSON_AddNumberToObject(o, "dropped", (double)t->dropped);
	cJSON_AddNumberToObject(o, "cpuUsec", (double)t->cpu_usec);
	cJSON_AddNumberToObject(o, "oomKilled", (double)t->oom_killed);
	return o;
}

static cJSON *
handover_cg_save(const struct cgroups_handed *c)
{
	cJSON	*o, *a;
	int	 k;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddBoolToObject(o, "on", c->on);
	cJSON_AddBoolToObject(o, "made", c->made);
	cJSON_AddStringToObject(o, "root", c->root);
	cJSON_AddStringToObject(o, "origin", c->origin);
	a = cJSON_AddArrayToObject(o, "next");
	for (k = 0; k < CG_NKINDS; k++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(c->next[k]));
	return o;
}

/*
 * The records' directories made ahead (struct record_dir): handed over
 * as they are, the pool's child included (the next agent reaps it as
 * the pool's), since removing and making them again would cost the
 * handover more than anything else it does.
 */
static cJSON *
handover_recs_save(const struct record_dir *d)
{
	const struct record_pool	*q = &d->pool;
	const struct record_spare	*p = &d->spare;
	cJSON				*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	if (q->made) {
		cJSON_AddNumberToObject(o, "poolFd", q->fd);
		cJSON_AddBoolToObject(o, "poolOff", q->off);
		cJSON_AddNumberToObject(o, "poolNext", q->next);
		cJSON_AddNumberToObject(o, "poolFrom", q->from);
		cJSON_AddNumberToObject(o, "poolEnd", q->end);
		cJSON_AddNumberToObject(o, "poolPid", q->pid);
	}
	if (p->made) {
		cJSON_AddNumberToObject(o, "spareParentFd", p->parentfd);
		cJSON_AddNumberToObject(o, "spareDirFd", p->dirfd);
		cJSON_AddBoolToObject(o, "spareOff", p->off);
		cJSON_AddBoolToObject(o, "spareMeta", p->meta);
		cJSON_AddBoolToObject(o, "spareStatus", p->status);
	}
	return o;
}

static void
handover_recs_load(struct record_dir *d, const cJSON *o)
{
	struct record_pool	*q = &d->pool;
	struct record_spare	*p = &d->spare;

	if (cJSON_GetObjectItemCaseSensitive(o, "poolFd") != NULL &&
	    !q->made) {
		q->made = true;
		q->fd = (int)job_get_num(o, "poolFd", -1);
		q->off = job_get_bool(o, "poolOff");
		q->next = (unsigned)job_get_num(o, "poolNext", 0);
		q->from = (unsigned)job_get_num(o, "poolFrom", 0);
		q->end = (unsigned)job_get_num(o, "poolEnd", 0);
		q->pid = (pid_t)job_get_num(o, "poolPid", 0);
	}
	if (cJSON_GetObjectItemCaseSensitive(o, "spareDirFd") != NULL &&
	    !p->made) {
		p->made = true;
		p->parentfd = (int)job_get_num(o, "spareParentFd", -1);
		p->dirfd = (int)job_get_num(o, "spareDirFd", -1);
		p->off = job_get_bool(o, "spareOff");
		p->meta = job_get_bool(o, "spareMeta");
		p->status = job_get_bool(o, "spareStatus");
	}
}

static cJSON *
handover_manifest(const struct handover *h)
{
	struct cgroups_handed	 cgh;
	struct job		*j;
	cJSON			*m, *a, *e;
	char			 v[16];

	if ((m = cJSON_CreateObject()) == NULL)
		return NULL;
	snprintf(v, sizeof(v), "%d.%d", HANDOVER_MAJOR, HANDOVER_MINOR);
	cJSON_AddStringToObject(m, "handover", v);
	cJSON_AddStringToObject(m, "version", TEND_VERSION);
	cJSON_AddStringToObject(m, "boot", h->tab->jobs.boot);
	cJSON_AddNumberToObject(m, "upgrades", (double)(ho.upgrades + 1));
	cJSON_AddNumberToObject(m, "listenFd", h->listen_fd);
	cJSON_AddNumberToObject(m, "mainPid", h->main_pid);
	cJSON_AddNumberToObject(m, "startedMono", (double)h->started_mono);
	cJSON_AddNumberToObject(m, "orphans", (double)h->tab->orphans);
	if (events_current() != NULL)
		cJSON_AddItemToObject(m, "events",
		    events_handover_save(events_current()));
	if ((e = shimctl_handover_save()) != NULL)
		cJSON_AddItemToObject(m, "shim", e);
	cJSON_AddItemToObject(m, "procTable", handover_table(&h->tab->jobs));
	cJSON_AddItemToObject(m, "procDir",
	    handover_recs_save(&h->tab->jobs.recs));
	cJSON_AddItemToObject(m, "termTable",
	    handover_table(&h->terms->jobs));
	a = cJSON_AddArrayToObject(m, "procs");
	for (j = h->tab->jobs.head; j != NULL; j = j->next)
		if ((e = proc_handover_save(proc_of(j))) == NULL)
			goto fail;
		else
			cJSON_AddItemToArray(a, e);
	a = cJSON_AddArrayToObject(m, "terms");
	for (j = h->terms->jobs.head; j != NULL; j = j->next)
		if ((e = term_handover_save(term_of(j))) == NULL)
			goto fail;
		else
			cJSON_AddItemToArray(a, e);
	/* Last: its spares are given back, made again if the exec fails. */
	cgroups_handover_out(&cgh);
	cJSON_AddItemToObject(m, "cgroups", handover_cg_save(&cgh));
	return m;
fail:
	cJSON_Delete(m);
	errno = ENOMEM;
	return NULL;
}

/* The manifest's text in a sealed memfd (not close-on-exec): its fd. */
static int
handover_memfd(const char *s)
{
	size_t	n = strlen(s), off = 0;
	ssize_t	w;
	int	fd, err;

	if ((fd = memfd_create("tend-handover", MFD_ALLOW_SEALING)) == -1)
		return -1;
	while (off < n) {
		if ((w = write(fd, s + off, n - off)) == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		off += (size_t)w;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW |
	    F_SEAL_WRITE | F_SEAL_SEAL) == -1 || lseek(fd, 0, SEEK_SET) == -1)
		goto fail;
	return fd;
fail:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/* environ with HANDOVER_ENV=fd in place of any it had. */
static char **
handover_envp(int fd, char *var, size_t n)
{
	char	**envp;
	size_t	  i, k = 0;

	for (i = 0; environ[i] != NULL; i++)
		;
	if ((envp = calloc(i + 2, sizeof(*envp))) == NULL)
		return NULL;
	for (i = 0; environ[i] != NULL; i++)
		if (strncmp(environ[i], HANDOVER_ENV "=",
		    sizeof(HANDOVER_ENV)) != 0)
			envp[k++] = environ[i];
	snprintf(var, n, "%s=%d", HANDOVER_ENV, fd);
	envp[k] = var;
	return envp;
}

/*
 * Every signal held from the 202 on: one that comes after the client
 * heard of the upgrade stays pending across the exec, for the next
 * agent.  (Taken by this agent's handlers instead, it would be lost: its
 * loop never runs again.)
 */
static sigset_t	handover_mask;	/* as it was before */
static bool	handover_held;

void
handover_hold_signals(void)
{
	sigset_t	all;

	if (handover_held)
		return;
	sigfillset(&all);
	(void)sigprocmask(SIG_BLOCK, &all, &handover_mask);
	handover_held = true;
}

void
handover_release_signals(void)
{
	if (!handover_held)
		return;
	handover_held = false;
	(void)sigprocmask(SIG_SETMASK, &handover_mask, NULL);
}

/* The exec failed: the signals let go, the spare cgroups made again. */
static void
handover_undo(const struct handover *h)
{
	handover_release_signals();
	cgroups_handover_undo();
	proctab_spare_soon(h->tab);
}

int
handover_exec(const struct handover *h, const char *path, char *const argv[])
{
	int64_t	 t0 = codec_mono_ms();
	cJSON	*m;
	char	*s, **envp, var[64];
	int	 fd, err, on, nfds = 0;
	size_t	 slen;

	handover_hold_signals();	/* held since the 202 as a rule */
	ev_idle_stop(h->tab->jobs.loop, &h->tab->spare);
	if ((m = handover_manifest(h)) == NULL) {
		err = errno;
		handover_undo(h);
		errno = err;
		return -1;
	}
	s = cJSON_PrintUnformatted(m);
	slen = s != NULL ? strlen(s) : 0;
	fd = s != NULL ? handover_memfd(s) : -1;
	err = errno;
	free(s);
	if (fd == -1 || (envp = handover_envp(fd, var, sizeof(var))) == NULL) {
		err = fd == -1 ? err : ENOMEM;
		if (fd != -1)
			close(fd);
		cJSON_Delete(m);
		handover_undo(h);
		errno = err;
		return -1;
	}
	handover_fds(m, handover_count, &nfds);
	on = 0;
	handover_fds(m, handover_cloexec, &on);
	log_info("event=handover_exec path=%s fds=%d processes=%d "
	    "terminals=%d bytes=%zu ms=%lld", path, nfds, h->tab->jobs.nlive,
	    h->terms->jobs.nlive, slen, (long long)(codec_mono_ms() - t0));
	log_flush();
	(void)execve(path, argv, envp);
	err = errno;
	/* Nothing was lost: the fds close-on-exec again, serving goes on. */
	on = 1;
	handover_fds(m, handover_cloexec, &on);
	close(fd);
	free(envp);
	cJSON_Delete(m);
	handover_undo(h);
	log_warnx("event=handover_exec_failed path=%s err=\"%s\"", path,
	    strerror(err));
	errno = err;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Reading */

static void
handover_fail(const char *fmt, const char *arg)
{
	ho.state = "failed";
	snprintf(ho.reason, sizeof(ho.reason), fmt, arg);
	log_warnx("event=handover_failed reason=\"%s\" msg=\"the processes "
	    "of the agent before are orphans this agent reaps\"", ho.reason);
}

static char *
handover_read(int fd)
{
	struct stat	 st;
	char		*s;
	size_t		 off = 0;
	ssize_t		 n;

	if (fstat(fd, &st) == -1 || st.st_size <= 0 ||
	    st.st_size > HANDOVER_MAX_BYTES ||
	    (s = malloc((size_t)st.st_size + 1)) == NULL)
		return NULL;
	while (off < (size_t)st.st_size) {
		n = pread(fd, s + off, (size_t)st.st_size - off, (off_t)off);
		if (n <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			free(s);
			return NULL;
		}
		off += (size_t)n;
	}
	s[off] = '\0';
	return s;
}

cJSON *
handover_take(void)
{
	const char	*v = getenv(HANDOVER_ENV), *ver;
	cJSON		*m;
	char		*s, *end;
	long		 fd;
	int		 on = 1;

	if (v == NULL)
		return NULL;
	fd = strtol(v, &end, 10);
	if (*v == '\0' || *end != '\0' || fd < 3 || fd > INT32_MAX) {
		unsetenv(HANDOVER_ENV);
		handover_fail("%s is not an fd", HANDOVER_ENV);
		return NULL;
	}
	unsetenv(HANDOVER_ENV);
	s = handover_read((int)fd);
	(void)close((int)fd);
	if (s == NULL) {
		handover_fail("the manifest could not be read: %s",
		    strerror(errno));
		return NULL;
	}
	m = cJSON_Parse(s);
	free(s);
	if (m == NULL) {
		handover_fail("%s", "the manifest is not JSON");
		return NULL;
	}
	/* Whatever follows, no child inherits these. */
	handover_fds(m, handover_cloexec, &on);
	ver = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m,
	    "handover"));
	if (ver == NULL || atoi(ver) != HANDOVER_MAJOR ||
	    handover_boot(m) == NULL) {
		/* Said before the tree goes: ver is in it. */
		handover_fail("manifest format %s not understood",
		    ver != NULL ? ver : "(none)");
		cJSON_Delete(m);
		return NULL;
	}
	ho.state = "resumed";
	ho.upgrades = (uint64_t)job_get_num(m, "upgrades", 1);
	snprintf(ho.from, sizeof(ho.from), "%s",
	    handover_from(m) != NULL ? handover_from(m) : "");
	return m;
}

const char *
handover_boot(const cJSON *m)
{
	const char	*b = cJSON_GetStringValue(
			    cJSON_GetObjectItemCaseSensitive(m, "boot"));

	return b != NULL && boot_id_valid(b) ? b : NULL;
}

const char *
handover_from(const cJSON *m)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m,
	    "version"));
}

int
handover_listen_fd(const cJSON *m)
{
	return (int)job_get_num(m, "listenFd", -1);
}

const cJSON *
handover_shim(const cJSON *m)
{
	return cJSON_GetObjectItemCaseSensitive(m, "shim");
}

void
handover_cgroups(const cJSON *m)
{
	const cJSON		*o = cJSON_GetObjectItemCaseSensitive(m,
				    "cgroups"), *e;
	struct cgroups_handed	 c;
	const char		*v;
	int			 k = 0;

	memset(&c, 0, sizeof(c));
	if (!job_get_bool(o, "on"))
		return;
	c.on = true;
	c.made = job_get_bool(o, "made");
	if ((v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o,
	    "root"))) != NULL)
		snprintf(c.root, sizeof(c.root), "%s", v);
	if ((v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o,
	    "origin"))) != NULL)
		snprintf(c.origin, sizeof(c.origin), "%s", v);
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "next"))
		if (k < CG_NKINDS && cJSON_IsNumber(e))
			c.next[k++] = (unsigned)e->valuedouble;
	if (c.root[0] == '/')
		cgroups_resume(&c);
}

struct events *
handover_events(const cJSON *m, int statefd, const char *boot,
    uint64_t maxbytes)
{
	const cJSON	*o = cJSON_GetObjectItemCaseSensitive(m, "events");

	if (o == NULL)
		return events_open(NULL, statefd, boot, maxbytes);
	return events_adopt(statefd, boot, maxbytes, o);
}

static void
handover_table_load(struct jobtab *t, const cJSON *o)
{
	t->started = (uint64_t)job_get_num(o, "started", (double)t->started);
	t->ended = (uint64_t)job_get_num(o, "ended", (double)t->ended);
	t->stored = (uint64_t)job_get_num(o, "stored", 0);
	t->dropped = (uint64_t)job_get_num(o, "dropped", 0);
	t->cpu_usec = (uint64_t)job_get_num(o, "cpuUsec", 0);
	t->oom_killed = (uint64_t)job_get_num(o, "oomKilled", 0);
}

void
handover_resume(const cJSON *m, struct handover *h)
{
	const cJSON	*e;
	int		 np = 0, nt = 0, bad = 0;

	h->main_pid = (pid_t)job_get_num(m, "mainPid", -1);
	h->started_mono = (int64_t)job_get_num(m, "startedMono", 0);
	h->tab->orphans = (uint64_t)job_get_num(m, "orphans", 0);
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(m, "procs"))
		if (proc_adopt(h->tab, e) != NULL)
			np++;
		else
			bad++;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(m, "terms"))
		if (term_adopt(h->terms, e) != NULL)
			nt++;
		else
			bad++;
	handover_table_load(&h->tab->jobs,
	    cJSON_GetObjectItemCaseSensitive(m, "procTable"));
	handover_recs_load(&h->tab->jobs.recs,
	    cJSON_GetObjectItemCaseSensitive(m, "procDir"));
	handover_table_load(&h->terms->jobs,
	    cJSON_GetObjectItemCaseSensitive(m, "termTable"));
	if (bad > 0) {
		snprintf(ho.reason, sizeof(ho.reason), "%d records not taken "
		    "up: their processes are orphans this agent reaps", bad);
		log_warnx("event=handover_partial records=%d", bad);
	}
	log_info("event=handover_resumed from=%s processes=%d terminals=%d "
	    "upgrades=%llu", ho.from, np, nt, (unsigned long long)ho.upgrades);
}
