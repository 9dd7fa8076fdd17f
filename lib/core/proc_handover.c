/*
 * proc_handover.c: a process in the agent's handover (core/handover.c):
 * what the manifest holds of it — the engine's part (job_handover.c),
 * its timers by their absolute deadlines, its restart policy and its
 * readiness — and the process taken up again by the next agent.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proc_int.h"
#include "ready.h"

/*
 * A process as the manifest holds it: the engine's part (job.c) and the
 * process's own — its timers by their absolute deadlines.
 */
cJSON *
proc_handover_save(struct proc *p)
{
	struct ev_loop	*loop = p->job.tab->loop;
	cJSON		*o;

	if ((o = job_handover_save(&p->job)) == NULL)
		return NULL;
	cJSON_AddStringToObject(o, "tags", p->tags);
	cJSON_AddBoolToObject(o, "stdinPipe", p->stdin_pipe);
	cJSON_AddBoolToObject(o, "statusWritten", p->status_written);
	cJSON_AddNumberToObject(o, "timeoutDeadline",
	    job_deadline(loop, &p->timeout));
	cJSON_AddNumberToObject(o, "timeoutLeft", p->timeout_left);
	cJSON_AddNumberToObject(o, "timeoutS", p->timeout_s);
	cJSON_AddNumberToObject(o, "graceS", p->grace_s);
	cJSON_AddBoolToObject(o, "timeoutKill", p->timeout_kill);
	if (p->rs != NULL)
		proc_restart_save(p, o);
	if (p->ready != NULL)
		ready_handover_save(p->ready, cJSON_AddObjectToObject(o,
		    "ready"));
	return o;
}

/* A process the agent before this one ran, taken up; NULL and errno. */
struct proc *
proc_adopt(struct proctab *t, const cJSON *o)
{
	struct ev_loop	*loop = t->jobs.loop;
	const cJSON	*tags = cJSON_GetObjectItemCaseSensitive(o, "tags");
	const cJSON	*r;
	struct proc	*p;
	int		 err;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return NULL;
	p->grace_s = job_get_num(o, "graceS",
	    PROC_KILL_GRACE_MS / 1000.);
	p->timeout_kill = job_get_bool(o, "timeoutKill");
	p->stdin_pipe = job_get_bool(o, "stdinPipe");
	p->status_written = job_get_bool(o, "statusWritten");
	p->timeout_left = job_get_num(o, "timeoutLeft", 0);
	p->timeout_s = job_get_num(o, "timeoutS", 0);
	p->tags = strdup(cJSON_IsString(tags) ? tags->valuestring : "{}");
	proc_timers_init(p);
	if (job_adopt(&p->job, &t->jobs, &proc_kind, o, p->grace_s) == -1 ||
	    p->tags == NULL || ((r = cJSON_GetObjectItemCaseSensitive(o,
	    "restart")) != NULL && proc_restart_adopt(p, r) == -1) ||
	    ((r = cJSON_GetObjectItemCaseSensitive(o, "ready")) != NULL &&
	    (p->ready = ready_adopt(r, &p->job)) == NULL)) {
		err = errno;
		job_free(&p->job);	/* not in the table yet */
		errno = err;
		return NULL;
	}
	job_deadline_start(loop, &p->timeout,
	    job_get_num(o, "timeoutDeadline", -1));
	if (p->job.state == JOB_RUNNING) {
		if (!p->status_written)
			ev_timer_start(loop, &p->first_status);
		if (p->job.reaped)
			proc_check_settled(p);
	}
	return p;
}
