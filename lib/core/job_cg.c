/*
 * job_cg.c: the engine's containment (see job.h, sys/cgroup.h) — a
 * job's cgroup made with its limits before its child exists, the signal
 * that reaches every member, the OOM killer's part in its exit, freeze
 * and thaw, and the figures of its status, live and final.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>

#include "base/util.h"
#include "events.h"
#include "job.h"
#include "job_int.h"

/* What a launch did not ask for, the agent's default gives. */
static void
job_limits_default(struct cgroup_limits *l, const struct cgroup_limits *d)
{
	if (d == NULL)
		return;
	if (l->memory == 0)
		l->memory = d->memory;
	if (l->memory_high == 0)
		l->memory_high = d->memory_high;
	if (l->pids == 0)
		l->pids = d->pids;
	if (l->cpu == 0)
		l->cpu = d->cpu;
}

int
job_cg_make(struct job *j, struct spawn_opts *so)
{
	job_limits_default(&j->limits, j->tab->dflt_limits);
	/*
	 * Its cgroup, with its limits, before it exists: it is born there.
	 * Limits that cannot be had refuse the launch (EOPNOTSUPP).  A
	 * record's next run is born in the same one.
	 */
	if (cgroups_on() && j->cg.fd == -1 && cgroup_make(&j->cg,
	    j->kind->cgkind, &j->limits) == -1)
		return -1;
	if (!cgroups_on() && cgroups_lacks(&j->limits) != NULL) {
		errno = EOPNOTSUPP;
		return -1;
	}
	so->in_cgroup = j->cg.fd != -1;
	so->cgroup_fd = j->cg.fd;
	return 0;
}

/*
 * The OOM killer's work, told from any other KILL by its count: a kill
 * since the last one told (a record's earlier run).
 */
void
job_cg_reaped(struct job *j)
{
	int64_t	n;

	if (j->cg.fd == -1 || !(cgroups_controllers() & (1u << CG_MEMORY)))
		return;
	n = cgroup_oom_kills(&j->cg);
	j->exit.oom_killed = n > 0 && (uint64_t)n > j->oom_seen;
	if (n > 0)
		j->oom_seen = (uint64_t)n;
}

/* Nothing of it outlives it: what is left is killed, then removed. */
void
job_cg_free(struct job *j)
{
	if (j->frozen)
		j->tab->nfrozen--;
	if (j->cg.fd != -1) {
		if (cgroup_events(&j->cg) == -1 || j->cg.populated)
			(void)cgroup_kill(&j->cg);
		(void)cgroup_remove(&j->cg);
	}
}

/*
 * The final figures, read while the cgroup is there; it goes once empty
 * (else when job_cgroup_changed hears that it emptied).
 */
void
job_cgroup_final(struct job *j)
{
	int64_t	cpu0 = j->has_usage ? j->usage.cpu_usec : 0;
	bool	oom0 = j->exit.oom_killed;

	if (j->cg.fd == -1)
		return;
	/* Once at the end, once more if members outlived it: counted once. */
	cgroup_usage(&j->cg, &j->usage);
	j->has_usage = true;
	if (j->usage.oom_kills > 0 && (uint64_t)j->usage.oom_kills > j->oom_seen)
		j->exit.oom_killed = true;
	if (j->usage.cpu_usec > cpu0)
		j->tab->cpu_usec += (uint64_t)(j->usage.cpu_usec - cpu0);
	if (j->exit.oom_killed && !oom0)
		j->tab->oom_killed++;
	if (j->frozen) {
		j->frozen = false;
		j->tab->nfrozen--;
	}
	if (cgroup_events(&j->cg) == 0 && !j->cg.populated)
		(void)cgroup_remove(&j->cg);
}

void
job_cgroup_changed(struct cgroup *c)
{
	struct job	*j = container_of(c, struct job, cg);

	if (j->state == JOB_RUNNING) {
		if (!c->populated && j->kind->emptied != NULL)
			j->kind->emptied(j);
		else
			job_notify(j, JOB_EV_FROZEN);
		return;
	}
	/* Ended, with members left then (a terminal's): gone now. */
	if (!c->populated) {
		job_cgroup_final(j);
		(void)job_put_status(j);
	}
}

void
job_signal(struct job *j, int sig)
{
	job_sent(j, sig);
	if (j->cg.fd == -1)
		j->kind->signal(j, sig);
	else if (sig == SIGKILL)
		(void)cgroup_kill(&j->cg);
	else
		(void)cgroup_signal(&j->cg, sig);
}

/* process.frozen, terminal.thawed...: asked and written. */
static void
job_tell_frozen(struct job *j, bool on)
{
	char	 type[32];
	cJSON	*o;

	if ((o = cJSON_CreateObject()) == NULL)
		return;
	cJSON_AddStringToObject(o, "id", j->id);
	snprintf(type, sizeof(type), "%s.%s", j->kind->cgkind == CG_PROC ?
	    "process" : "terminal", on ? "frozen" : "thawed");
	events_emit(type, o);
}

int
job_freeze(struct job *j, bool on)
{
	if (job_running(j) == -1)
		return -1;
	if (j->cg.fd == -1) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (j->frozen == on)
		return 0;
	if (cgroup_freeze(&j->cg, on) == -1)
		return -1;
	j->frozen = on;
	j->tab->nfrozen += on ? 1 : -1;
	if (j->kind->frozen != NULL)
		j->kind->frozen(j, on);
	job_tell_frozen(j, on);
	(void)cgroup_events(&j->cg);
	return 0;
}

void
job_limits_json(const struct cgroup_limits *l, cJSON *obj)
{
	cJSON	*o;

	if (l->memory <= 0 && l->memory_high <= 0 && l->pids <= 0 &&
	    l->cpu <= 0)
		return;
	if ((o = cJSON_AddObjectToObject(obj, "limits")) == NULL)
		return;
	if (l->memory > 0)
		cJSON_AddNumberToObject(o, "memory", (double)l->memory);
	if (l->memory_high > 0)
		cJSON_AddNumberToObject(o, "memoryHigh",
		    (double)l->memory_high);
	if (l->pids > 0)
		cJSON_AddNumberToObject(o, "pids", (double)l->pids);
	if (l->cpu > 0)
		cJSON_AddNumberToObject(o, "cpu", l->cpu);
}

static void
job_usage_add(cJSON *o, const char *name, int64_t v)
{
	if (v >= 0)
		cJSON_AddNumberToObject(o, name, (double)v);
}

void
job_status_cgroup(struct job *j, cJSON *st)
{
	struct cgroup_usage	 now;
	const struct cgroup_usage *u = &j->usage;
	char			 path[PATH_MAX];
	cJSON			*o;

	job_limits_json(&j->limits, st);
	if (j->cg.fd == -1 && !j->has_usage)
		return;
	/* Where it was, once removed: the figures are that cgroup's. */
	cgroup_path(&j->cg, path, sizeof(path));
	cJSON_AddStringToObject(st, "cgroup", path);
	if (j->state == JOB_RUNNING) {
		cgroup_usage(&j->cg, &now);
		u = &now;
		if (j->cg.frozen)
			cJSON_AddBoolToObject(st, "frozen", true);
	}
	if ((o = cJSON_AddObjectToObject(st, "resources")) == NULL)
		return;
	job_usage_add(o, "cpuUsec", u->cpu_usec);
	job_usage_add(o, "memoryCurrent", u->mem_current);
	job_usage_add(o, "memoryPeak", u->mem_peak);
	job_usage_add(o, "pidsCurrent", u->pids_current);
}
