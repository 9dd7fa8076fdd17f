/*
 * job_handover.c: a job across the agent's handover (core/handover.c).
 * What the engine holds of a job, as JSON for the manifest, and taken
 * up again by the next agent: the same ID, pid and record, its output
 * fds and input (the bytes still queued with it), its cgroup, its
 * timers at their absolute deadlines.  Fds cross by number (an execve
 * keeps them); keys ending in Fd or Fds name them.  The kinds add their
 * own part (proc_handover_save, term_handover_save) around this one.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/codec.h"
#include "base/log.h"
#include "job_int.h"

static void	job_save_limits(cJSON *, const struct cgroup_limits *);
static void	job_save_usage(cJSON *, const struct cgroup_usage *);
static cJSON	*job_save_record(struct record *);
static void	job_load_limits(const cJSON *, struct cgroup_limits *);
static void	job_load_usage(const cJSON *, struct cgroup_usage *);
static int	job_load_record(struct job *, const cJSON *);

/* ---- timers by their absolute (monotonic) deadline ---- */

double
job_deadline(struct ev_loop *loop, ev_timer *w)
{
	if (!ev_is_active(w))
		return -1;
	/*
	 * The loop's clock is that of its last wakeup: brought to now, so
	 * that what remains is counted from the same moment as the clock.
	 */
	ev_now_update(loop);
	return (double)codec_mono_ms() + ev_timer_remaining(loop, w) * 1e3;
}

void
job_deadline_start(struct ev_loop *loop, ev_timer *w, double deadline)
{
	double	left;

	if (deadline < 0)
		return;
	/* A loop not yet run counts from its creation: brought to now. */
	ev_now_update(loop);
	left = (deadline - (double)codec_mono_ms()) / 1e3;
	/* Past it already: at once (0 would be "no timeout" to libev's set). */
	ev_timer_set(w, left > 0 ? left : 1e-6, 0.);
	ev_timer_start(loop, w);
}

double
job_get_num(const cJSON *o, const char *k, double dflt)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valuedouble : dflt;
}

bool
job_get_bool(const cJSON *o, const char *k)
{
	return cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, k));
}

/* ---- saving ---- */

static void
job_save_limits(cJSON *o, const struct cgroup_limits *l)
{
	cJSON_AddNumberToObject(o, "memory", (double)l->memory);
	cJSON_AddNumberToObject(o, "memoryHigh", (double)l->memory_high);
	cJSON_AddNumberToObject(o, "pids", (double)l->pids);
	cJSON_AddNumberToObject(o, "cpu", l->cpu);
}

static void
job_save_usage(cJSON *o, const struct cgroup_usage *u)
{
	cJSON_AddNumberToObject(o, "cpuUsec", (double)u->cpu_usec);
	cJSON_AddNumberToObject(o, "memCurrent", (double)u->mem_current);
	cJSON_AddNumberToObject(o, "memPeak", (double)u->mem_peak);
	cJSON_AddNumberToObject(o, "pidsCurrent", (double)u->pids_current);
	cJSON_AddNumberToObject(o, "oomKills", (double)u->oom_kills);
}

static cJSON *
job_save_record(struct record *r)
{
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	/* Owed meta.json goes with the record, as text. */
	if (r->meta != NULL)
		cJSON_AddStringToObject(o, "meta", r->meta);
	cJSON_AddNumberToObject(o, "dirFd", r->dirfd);
	cJSON_AddBoolToObject(o, "nodir", r->nodir);
	cJSON_AddBoolToObject(o, "fdsOpen", r->fds_open);
	cJSON_AddBoolToObject(o, "statusFailed", r->status_failed);
	cJSON_AddBoolToObject(o, "metatmp", r->metatmp);
	cJSON_AddBoolToObject(o, "statustmp", r->statustmp);
	cJSON_AddItemToObject(o, "store", logstore_save(&r->ls));
	return o;
}

cJSON *
job_handover_save(struct job *j)
{
	struct ev_loop	*loop = j->tab->loop;
	struct buf	 b = { 0 };
	char		 sent[24];
	cJSON		*o, *a;
	size_t		 i;
	int		 s;

	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "id", j->id);
	cJSON_AddNumberToObject(o, "pid", j->pid);
	cJSON_AddNumberToObject(o, "state", j->state);
	a = cJSON_AddArrayToObject(o, "argv");
	for (i = 0; j->argv != NULL && j->argv[i] != NULL; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(j->argv[i]));
	cJSON_AddStringToObject(o, "cwd", j->cwd);
	cJSON_AddNumberToObject(o, "startedMs", (double)j->started_ms);
	cJSON_AddNumberToObject(o, "endedMs", (double)j->ended_ms);
	cJSON_AddBoolToObject(o, "reaped", j->reaped);
	cJSON_AddNumberToObject(o, "exitCode", j->exit.code);
	cJSON_AddNumberToObject(o, "exitSignal", j->exit.signal);
	cJSON_AddBoolToObject(o, "timedOut", j->exit.timed_out);
	cJSON_AddBoolToObject(o, "oomKilled", j->exit.oom_killed);
	cJSON_AddNumberToObject(o, "oomSeen", (double)j->oom_seen);
	snprintf(sent, sizeof(sent), "%llx", (unsigned long long)j->sigsent);
	cJSON_AddStringToObject(o, "sigsent", sent);
	cJSON_AddItemToObject(o, "record", job_save_record(&j->rec));
	a = cJSON_AddArrayToObject(o, "outFds");
	for (s = 0; s < j->nout; s++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(j->out[s]));
	if (j->in != -1) {
		if (!j->in_shared)
			cJSON_AddNumberToObject(o, "inFd", j->in);
		cJSON_AddBoolToObject(o, "inShared", j->in_shared);
		cJSON_AddBoolToObject(o, "inClose", j->in_close);
		/* The queue goes with it: bounded, and a client's to lose. */
		if (buf_avail(&j->inbuf) > 0 && codec_b64_encode(&b,
		    buf_head(&j->inbuf), buf_avail(&j->inbuf)) == 0 &&
		    buf_add(&b, "", 1) == 0)
			cJSON_AddStringToObject(o, "input", buf_head(&b));
		buf_free(&b);
	}
	cJSON_AddNumberToObject(o, "graceDeadline",
	    job_deadline(loop, &j->grace));
	if (j->cg.fd != -1) {
		cJSON_AddNumberToObject(o, "cgroupFd", j->cg.fd);
		cJSON_AddNumberToObject(o, "cgroupN", j->cg.n);
	}
	job_save_limits(cJSON_AddObjectToObject(o, "limits"), &j->limits);
	if (j->has_usage)
		job_save_usage(cJSON_AddObjectToObject(o, "usage"), &j->usage);
	cJSON_AddBoolToObject(o, "frozen", j->frozen);
	return o;
}

/* ---- taking it up ---- */

static void
job_load_limits(const cJSON *o, struct cgroup_limits *l)
{
	l->memory = (int64_t)job_get_num(o, "memory", 0);
	l->memory_high = (int64_t)job_get_num(o, "memoryHigh", 0);
	l->pids = (int64_t)job_get_num(o, "pids", 0);
	l->cpu = job_get_num(o, "cpu", 0);
}

static void
job_load_usage(const cJSON *o, struct cgroup_usage *u)
{
	u->cpu_usec = (int64_t)job_get_num(o, "cpuUsec", -1);
	u->mem_current = (int64_t)job_get_num(o, "memCurrent", -1);
	u->mem_peak = (int64_t)job_get_num(o, "memPeak", -1);
	u->pids_current = (int64_t)job_get_num(o, "pidsCurrent", -1);
	u->oom_kills = (int64_t)job_get_num(o, "oomKills", -1);
}

static int
job_load_record(struct job *j, const cJSON *o)
{
	struct record	*r = &j->rec;
	const cJSON	*m = cJSON_GetObjectItemCaseSensitive(o, "meta");

	record_adopt(r, &j->tab->recs, j->id);
	if (logstore_load(&r->ls, cJSON_GetObjectItemCaseSensitive(o,
	    "store")) == -1)
		return -1;
	r->dirfd = (int)job_get_num(o, "dirFd", -1);
	r->nodir = job_get_bool(o, "nodir");
	r->fds_open = job_get_bool(o, "fdsOpen");
	r->status_failed = job_get_bool(o, "statusFailed");
	r->metatmp = job_get_bool(o, "metatmp");
	r->statustmp = job_get_bool(o, "statustmp");
	if (cJSON_IsString(m) && (r->meta = strdup(m->valuestring)) == NULL)
		return -1;
	return 0;
}

int
job_adopt(struct job *j, struct jobtab *t, const struct job_kind *k,
    const cJSON *o, double grace_s)
{
	const cJSON	*id = cJSON_GetObjectItemCaseSensitive(o, "id");
	const cJSON	*argv = cJSON_GetObjectItemCaseSensitive(o, "argv");
	const cJSON	*cwd = cJSON_GetObjectItemCaseSensitive(o, "cwd");
	const cJSON	*e, *in;
	struct buf	 b = { 0 };
	char		**v;
	size_t		 n = 0;
	int		 fd;

	job_blank(j, t, k);
	if (!cJSON_IsString(id) || !record_id_valid(id->valuestring) ||
	    !cJSON_IsArray(argv) || !cJSON_IsString(cwd) ||
	    job_find(t, id->valuestring) != NULL) {
		errno = EINVAL;
		return -1;
	}
	snprintf(j->id, sizeof(j->id), "%s", id->valuestring);
	if ((v = calloc((size_t)cJSON_GetArraySize(argv) + 1,
	    sizeof(*v))) == NULL)
		return -1;
	j->argv = v;
	cJSON_ArrayForEach(e, argv)
		if (!cJSON_IsString(e) ||
		    (v[n++] = strdup(e->valuestring)) == NULL)
			return -1;
	if ((j->cwd = strdup(cwd->valuestring)) == NULL)
		return -1;
	j->pid = (pid_t)job_get_num(o, "pid", 0);
	j->state = (enum job_state)job_get_num(o, "state", JOB_RUNNING);
	j->started_ms = (int64_t)job_get_num(o, "startedMs", 0);
	j->ended_ms = (int64_t)job_get_num(o, "endedMs", 0);
	j->reaped = job_get_bool(o, "reaped");
	j->exit.code = (int)job_get_num(o, "exitCode", 0);
	j->exit.signal = (int)job_get_num(o, "exitSignal", 0);
	j->exit.timed_out = job_get_bool(o, "timedOut");
	j->exit.oom_killed = job_get_bool(o, "oomKilled");
	j->oom_seen = (uint64_t)job_get_num(o, "oomSeen", 0);
	e = cJSON_GetObjectItemCaseSensitive(o, "sigsent");
	j->sigsent = cJSON_IsString(e) ? strtoull(e->valuestring, NULL, 16) : 0;
	if (job_load_record(j, cJSON_GetObjectItemCaseSensitive(o,
	    "record")) == -1) {
		errno = EINVAL;
		return -1;
	}
	job_load_limits(cJSON_GetObjectItemCaseSensitive(o, "limits"),
	    &j->limits);
	if ((e = cJSON_GetObjectItemCaseSensitive(o, "usage")) != NULL) {
		j->has_usage = true;
		job_load_usage(e, &j->usage);
	}
	j->frozen = job_get_bool(o, "frozen");
	cgroup_adopt(&j->cg, k->cgkind, (unsigned)job_get_num(o, "cgroupN", 0),
	    (int)job_get_num(o, "cgroupFd", -1));

	/* In the table, as job_begin puts it; its pid hashed until reaped. */
	job_link(j);
	if (j->reaped)
		job_pid_unhash(j);
	if (j->state == JOB_RUNNING)
		t->nlive++;
	else
		t->nended++;
	if (j->cg.frozen && j->state == JOB_RUNNING)
		t->nfrozen++;

	n = 0;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "outFds")) {
		if (n >= LS_NSTREAMS)
			break;
		fd = cJSON_IsNumber(e) ? e->valueint : -1;
		if (fd != -1)
			job_out_start(j, (int)n, fd);
		else if (j->nout <= (int)n)
			j->nout = (int)n + 1;
		n++;
	}
	if (job_get_bool(o, "inShared") && j->out[0] != -1)
		job_in_start(j, j->out[0], true);
	else if ((fd = (int)job_get_num(o, "inFd", -1)) != -1)
		job_in_start(j, fd, false);
	if (j->in != -1) {
		in = cJSON_GetObjectItemCaseSensitive(o, "input");
		if (cJSON_IsString(in) && codec_b64_decode(&b, in->valuestring,
		    strlen(in->valuestring)) == 0 && buf_avail(&b) > 0)
			(void)job_input(j, buf_head(&b), buf_avail(&b), false);
		buf_free(&b);
		if (job_get_bool(o, "inClose"))
			(void)job_input(j, "", 0, true);
	}
	job_grace_init(j, grace_s);
	job_deadline_start(t->loop, &j->grace,
	    job_get_num(o, "graceDeadline", -1));
	return 0;
}
