/*
 * portwatch.c: the listening set, refreshed in slices, its owners, its
 * changes as events, and the parties waiting for a refresh.
 */
#include <sys/socket.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/tunables.h"
#include "events.h"
#include "portwatch.h"
#include "sys/ports.h"

/* A socket of the set, with its owner's ID (NULL: not tend's, unknown). */
struct portwatch_ent {
	struct port_sock	 s;
	char			*id;
	char			 kind;		/* id's table: 'p' procs, 't' terms */
	bool			 resolved;	/* its holder was looked for */
	bool			 told;		/* port.listening was emitted */
};

/* A holder's owner, remembered for one refresh. */
struct portwatch_memo {
	pid_t			 pid;
	const struct job	*j;
};

static struct {
	struct ev_loop		*loop;
	struct jobtab		*procs, *terms;
	struct jobtab_sub	 sub_procs, sub_terms;
	ev_timer		 poll;		/* the next refresh */
	ev_timer		 slice;		/* a refresh's scan, carried on */
	ev_timer		 kick;		/* a refresh asked: the next turn */
	double			 pace;		/* s, of the poll armed */
	bool			 on;
	bool			 failed;	/* the listing under way failed */
	bool			 warned;	/* ... and it was said */
	/* The last complete refresh, by port. */
	struct portwatch_ent	*set;
	size_t			 nset;
	bool			 truncated;
	/* The refresh under way (scan non-NULL while it walks /proc). */
	bool			 busy;
	struct port_sock	*next;
	size_t			 nnext;
	bool			 next_trunc;
	struct ports_scan	*scan;
	/* Waiters: served by the refresh under way; by the one after it. */
	struct portwatch_wait	*now, *later;
	int			 fast;
	void			(*hook)(void);
	bool			 once_more;	/* a refresh after the last end */
	struct portwatch_memo	 memo[PORTS_MEMO];
} pw;

static void	portwatch_refresh(void);
static void	portwatch_finish(void);
static void	portwatch_arm(void);

/* ------------------------------------------------------------------ */
/* Owners */

static const struct job *
portwatch_root(pid_t pid)
{
	struct job	*j;

	if ((j = job_by_pid(pw.procs, pid)) != NULL ||
	    (j = job_by_pid(pw.terms, pid)) != NULL)
		return j;
	return NULL;
}

static const struct job *
portwatch_cgroup_owner(pid_t pid)
{
	struct jobtab	*t;
	struct job	*j;
	unsigned	 n;
	char		 kind;

	if (ports_cgroup_of(pid, &kind, &n) == -1)
		return NULL;
	t = kind == 'p' ? pw.procs : pw.terms;
	for (j = t->head; j != NULL; j = j->next)
		if (j->cg.fd != -1 && j->cg.n == n)
			return j;
	return NULL;
}

/* A process's and a terminal's IDs may be the same: which table. */
static char
portwatch_kind(const struct job *j)
{
	return j->tab == pw.procs ? 'p' : 't';
}

/* The record a holder belongs to, or NULL (see portwatch.h). */
static const struct job *
portwatch_owner(pid_t pid)
{
	struct portwatch_memo	*m = &pw.memo[(unsigned)pid % PORTS_MEMO];
	const struct job	*j;
	pid_t			 p;
	int			 depth;

	if (pid <= 0)
		return NULL;
	if (m->pid == pid)
		return m->j;
	if ((j = portwatch_root(pid)) == NULL &&
	    (j = portwatch_cgroup_owner(pid)) == NULL)
		for (p = pid, depth = 0; depth < PORTS_PPID_DEPTH &&
		    (p = ports_ppid(p)) > 1; depth++)
			if ((j = portwatch_root(p)) != NULL)
				break;
	m->pid = pid;
	m->j = j;
	return j;
}

/* ------------------------------------------------------------------ */
/* The set */

static int
portwatch_ino_cmp(const void *a, const void *b)
{
	const struct portwatch_ent	*x = a, *y = b;

	return x->s.inode < y->s.inode ? -1 : x->s.inode > y->s.inode;
}

/* An entry of a set sorted by inode, or NULL. */
static struct portwatch_ent *
portwatch_by_ino(struct portwatch_ent *byino, size_t n, uint64_t ino)
{
	struct portwatch_ent	key;

	if (n == 0)
		return NULL;	/* byino may be NULL then: bsearch wants none */
	key.s.inode = ino;
	return bsearch(&key, byino, n, sizeof(*byino), portwatch_ino_cmp);
}

static cJSON *
portwatch_ent_json(const struct portwatch_ent *e)
{
	char	 a[PORTS_ADDR_STR];
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	ports_addr_str(&e->s, a, sizeof(a));
	cJSON_AddNumberToObject(o, "port", e->s.port);
	cJSON_AddStringToObject(o, "address", a);
	if (e->s.pid > 0)
		cJSON_AddNumberToObject(o, "pid", (double)e->s.pid);
	else
		cJSON_AddNullToObject(o, "pid");
	if (e->id != NULL)
		cJSON_AddStringToObject(o, "id", e->id);
	else
		cJSON_AddNullToObject(o, "id");
	return o;
}

static void
portwatch_set_free(struct portwatch_ent *set, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(set[i].id);
	free(set);
}

/* The list of now into the set: old entries carried over by inode. */
static void
portwatch_install(bool emit)
{
	struct portwatch_ent	*old = pw.set, *ne, *o;
	size_t			 nold = pw.nset, i;
	const struct job	*j;

	if ((ne = calloc(pw.nnext ? pw.nnext : 1, sizeof(*ne))) == NULL) {
		log_warnx("event=ports_failed error=\"out of memory\"");
		return;
	}
	if (nold > 1)
		qsort(old, nold, sizeof(*old), portwatch_ino_cmp);
	memset(pw.memo, 0, sizeof(pw.memo));
	for (i = 0; i < pw.nnext; i++) {
		ne[i].s = pw.next[i];
		if ((o = portwatch_by_ino(old, nold, ne[i].s.inode)) != NULL &&
		    o->resolved) {
			ne[i].s.pid = o->s.pid;
			ne[i].id = o->id;
			ne[i].kind = o->kind;
			ne[i].resolved = true;
			ne[i].told = o->told;
			o->id = NULL;
			o->s.port = 0;		/* taken: not closed */
			continue;
		}
		/* The baseline's holders are looked for by the first refresh. */
		if (ne[i].s.pid < 0)
			ne[i].s.pid = 0;
		if (!(ne[i].resolved = emit))
			continue;
		if ((j = portwatch_owner(ne[i].s.pid)) != NULL) {
			ne[i].id = strdup(j->id);
			ne[i].kind = portwatch_kind(j);
		}
		/*
		 * One of the baseline (o, not yet resolved) is never told;
		 * nor one whose holder is out of sight (another PID
		 * namespace that shares the network namespace).
		 */
		if (emit && o == NULL && ne[i].s.pid > 0) {
			events_emit("port.listening", portwatch_ent_json(&ne[i]));
			ne[i].told = true;
		}
	}
	for (i = 0; emit && i < nold; i++)
		if (old[i].told && old[i].s.port != 0)
			events_emit("port.closed", portwatch_ent_json(&old[i]));
	portwatch_set_free(old, nold);
	pw.set = ne;
	pw.nset = pw.nnext;
	pw.truncated = pw.next_trunc;
}

/* ------------------------------------------------------------------ */
/* Refreshes */

static void
portwatch_slice_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop;
	(void)t;
	(void)revents;
	if (ports_scan_step(pw.scan, PORTS_SCAN_BUDGET) == 0) {
		ev_timer_start(pw.loop, &pw.slice);
		return;
	}
	portwatch_finish();
}

/* Only inodes the set does not know yet are looked for. */
static bool
portwatch_known(void)
{
	struct portwatch_ent	*byino;
	struct portwatch_ent	*o;
	size_t			 i;
	bool			 all = true;

	if ((byino = malloc((pw.nset ? pw.nset : 1) * sizeof(*byino))) ==
	    NULL)
		return false;
	if (pw.nset > 0)
		memcpy(byino, pw.set, pw.nset * sizeof(*byino));
	if (pw.nset > 1)
		qsort(byino, pw.nset, sizeof(*byino), portwatch_ino_cmp);
	for (i = 0; i < pw.nnext; i++) {
		o = portwatch_by_ino(byino, pw.nset, pw.next[i].inode);
		if (o != NULL && o->resolved)	/* -1: looked for, not found */
			pw.next[i].pid = o->s.pid > 0 ? o->s.pid : -1;
		else
			all = false;
	}
	free(byino);
	return all;
}

static void
portwatch_refresh(void)
{
	if (pw.busy)
		return;
	pw.busy = true;
	if ((pw.failed = ports_list(&pw.next, &pw.nnext, PORTS_MAX,
	    &pw.next_trunc) == -1)) {
		if (!pw.warned)		/* once, not every refresh */
			log_warn("event=ports_failed");
		pw.warned = true;
		pw.next = NULL;
		pw.nnext = 0;
	} else
		pw.warned = false;
	/* Known inodes keep their holder: the scan skips them. */
	if (pw.failed || portwatch_known()) {
		portwatch_finish();
		return;
	}
	if ((pw.scan = ports_scan_new(pw.next, pw.nnext)) == NULL) {
		portwatch_finish();
		return;
	}
	ev_timer_start(pw.loop, &pw.slice);
}

static void
portwatch_finish(void)
{
	struct portwatch_wait	*w;

	ports_scan_free(pw.scan);
	pw.scan = NULL;
	if (!pw.failed)		/* the set stays as it was */
		portwatch_install(true);
	free(pw.next);
	pw.next = NULL;
	pw.nnext = 0;
	pw.busy = false;
	while ((w = pw.now) != NULL) {
		pw.now = w->next;
		w->queued = false;
		w->next = NULL;
		w->fn(w);
	}
	pw.now = pw.later;
	pw.later = NULL;
	if (pw.hook != NULL && pw.fast > 0)
		pw.hook();
	if (pw.now != NULL)
		portwatch_refresh();
}

static bool
portwatch_needed(void)
{
	return pw.on && (pw.fast > 0 || pw.procs->nlive > 0 ||
	    pw.terms->nlive > 0);
}

static void
portwatch_kick_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop;
	(void)t;
	(void)revents;
	portwatch_refresh();
}

static void
portwatch_poll_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop;
	(void)t;
	(void)revents;
	portwatch_refresh();
	if (portwatch_needed() || pw.once_more) {
		pw.once_more = portwatch_needed();
		portwatch_arm();
	}
}

/* The poll, at the pace needed now (restarted). */
static void
portwatch_arm(void)
{
	double	s = (pw.fast > 0 ? PORTS_READY_POLL_MS : PORTS_POLL_MS) / 1e3;

	if (!pw.on)
		return;
	if (ev_is_active(&pw.poll) && pw.pace <= s)
		return;
	ev_timer_stop(pw.loop, &pw.poll);
	ev_timer_set(&pw.poll, s, 0.);
	pw.pace = s;
	ev_timer_start(pw.loop, &pw.poll);
}

static void
portwatch_job_cb(struct jobtab_sub *s, struct job *j, enum jobtab_event e)
{
	(void)s;
	(void)j;
	if (e == JOBTAB_EV_START || e == JOBTAB_EV_END) {
		pw.once_more = true;
		portwatch_arm();
	}
}

/* ------------------------------------------------------------------ */
/* Interface */

void
portwatch_init(struct ev_loop *loop, struct jobtab *procs,
    struct jobtab *terms)
{
	memset(&pw, 0, sizeof(pw));
	pw.loop = loop;
	pw.procs = procs;
	pw.terms = terms;
	ev_timer_init(&pw.poll, portwatch_poll_cb, 0., 0.);
	ev_timer_init(&pw.slice, portwatch_slice_cb, 0., 0.);
	ev_timer_init(&pw.kick, portwatch_kick_cb, 0., 0.);
	/* The baseline: what listens before any job is not told. */
	if (ports_list(&pw.next, &pw.nnext, PORTS_MAX, &pw.next_trunc) == 0)
		portwatch_install(false);
	free(pw.next);
	pw.next = NULL;
	pw.nnext = 0;
	pw.on = true;
	jobtab_subscribe(procs, &pw.sub_procs, portwatch_job_cb);
	jobtab_subscribe(terms, &pw.sub_terms, portwatch_job_cb);
}

void
portwatch_stop(void)
{
	if (!pw.on)
		return;
	pw.on = false;
	ev_timer_stop(pw.loop, &pw.poll);
	ev_timer_stop(pw.loop, &pw.slice);
	ev_timer_stop(pw.loop, &pw.kick);
	jobtab_unsubscribe(&pw.sub_procs);
	jobtab_unsubscribe(&pw.sub_terms);
	ports_scan_free(pw.scan);
	pw.scan = NULL;
	free(pw.next);
	pw.next = NULL;
	portwatch_set_free(pw.set, pw.nset);
	pw.set = NULL;
	pw.nset = 0;
}

void
portwatch_want(struct portwatch_wait *w, void (*fn)(struct portwatch_wait *))
{
	w->fn = fn;
	w->queued = true;
	if (pw.busy) {
		w->next = pw.later;
		pw.later = w;
		return;
	}
	w->next = pw.now;
	pw.now = w;
	ev_timer_start(pw.loop, &pw.kick);	/* fn never runs in this call */
}

void
portwatch_unwant(struct portwatch_wait *w)
{
	struct portwatch_wait	**pp;

	if (!w->queued)
		return;
	for (pp = &pw.now; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	for (pp = &pw.later; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			break;
		}
	w->queued = false;
}

cJSON *
portwatch_json(void)
{
	cJSON	*a, *o;
	size_t	 i;

	if ((a = cJSON_CreateArray()) == NULL)
		return NULL;
	for (i = 0; i < pw.nset; i++)
		if ((o = portwatch_ent_json(&pw.set[i])) != NULL)
			cJSON_AddItemToArray(a, o);
	return a;
}

bool
portwatch_truncated(void)
{
	return pw.truncated;
}

void
portwatch_fast(int delta)
{
	pw.fast += delta;
	if (pw.fast > 0)
		portwatch_arm();
}

void
portwatch_hook(void (*hook)(void))
{
	pw.hook = hook;
}

bool
portwatch_owns(int port, const struct job *j)
{
	size_t	i;

	for (i = 0; i < pw.nset; i++)
		if (pw.set[i].s.port == port && pw.set[i].id != NULL &&
		    pw.set[i].kind == portwatch_kind(j) &&
		    strcmp(pw.set[i].id, j->id) == 0)
			return true;
	return false;
}
