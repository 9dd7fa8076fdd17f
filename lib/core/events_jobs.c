/*
 * events_jobs.c: the events of processes and terminals, told by their
 * tables (jobtab_subscribe): started, exited, removed; opened, closed.
 *
 * process.exited waits for the record's end as a reader of its output
 * sees it: the final status written and every pipe drained to its end.
 * The table tells the end once the group is gone and the final status is
 * written; if a pipe is still open then (a process that left the group
 * holds it), the event waits for the pipes' end (JOB_EV_EOF, told after
 * the status is written again), or for the record's removal.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "base/tunables.h"
#include "base/util.h"
#include "events.h"
#include "events_jobs.h"
#include "proc.h"
#include "term.h"

/* A process.exited that waits for the pipes' end. */
struct events_wait {
	struct job_watch	 w;
	struct job		*j;	/* w.job is NULL once gone */
};

static struct jobtab_sub	events_procs, events_terms;
static cJSON			*events_lost;	/* told before the log opens */

static void
events_argv0(cJSON *o, struct job *j)
{
	char	a[EVENTS_ARGV0_MAX + 1];

	if (j->argv == NULL || j->argv[0] == NULL)
		return;
	snprintf(a, sizeof(a), "%s", j->argv[0]);
	cJSON_AddStringToObject(o, "argv0", a);
}

static cJSON *
events_subject(struct job *j)
{
	cJSON	*o = cJSON_CreateObject();

	if (o != NULL)
		cJSON_AddStringToObject(o, "id", j->id);
	return o;
}

static void
events_started(struct job *j, bool proc)
{
	cJSON	*o = events_subject(j);

	if (o == NULL)
		return;
	cJSON_AddNumberToObject(o, "pid", (double)j->pid);
	events_argv0(o, j);
	if (proc)
		cJSON_AddRawToObject(o, "tags", proc_of(j)->tags);
	events_emit(proc ? "process.started" : "terminal.opened", o);
}

static void
events_ended(struct job *j, bool proc)
{
	cJSON	*o = events_subject(j);

	if (o == NULL)
		return;
	cJSON_AddItemToObject(o, "exit", proc ? proc_exit_json(proc_of(j)) :
	    term_exit_json((struct term *)(void *)j));
	cJSON_AddNumberToObject(o, "durationMs",
	    (double)(j->ended_ms - j->started_ms));
	if (proc && proc_run(proc_of(j)) > 0)	/* the last of its runs */
		cJSON_AddNumberToObject(o, "run", proc_run(proc_of(j)));
	events_emit(proc ? "process.exited" : "terminal.closed", o);
}

static void
events_wait_cb(struct job_watch *w, enum job_event e)
{
	struct events_wait	*ew = container_of(w, struct events_wait, w);

	if (e != JOB_EV_EOF && e != JOB_EV_GONE)
		return;
	/* Removed before its pipes ended: told now, before the removal. */
	events_ended(ew->j, true);
	job_watch_del(w);
	free(ew);
}

static void
events_proc_cb(struct jobtab_sub *s, struct job *j, enum jobtab_event e)
{
	struct events_wait	*ew;

	(void)s;
	switch (e) {
	case JOBTAB_EV_START:
		events_started(j, true);
		break;
	case JOBTAB_EV_END:
		if (proc_output_done(proc_of(j)) ||
		    (ew = calloc(1, sizeof(*ew))) == NULL) {
			events_ended(j, true);
			break;
		}
		ew->j = j;
		job_watch_add(j, &ew->w, events_wait_cb);
		break;
	case JOBTAB_EV_REMOVE:
		events_emit("process.removed", events_subject(j));
		break;
	}
}

static void
events_term_cb(struct jobtab_sub *s, struct job *j, enum jobtab_event e)
{
	(void)s;
	switch (e) {
	case JOBTAB_EV_START:
		events_started(j, false);
		break;
	case JOBTAB_EV_END:
		events_ended(j, false);
		break;
	case JOBTAB_EV_REMOVE:
		events_emit("terminal.removed", events_subject(j));
		break;
	}
}

/*
 * An earlier boot's record marked lost: the boot scan runs before this
 * boot's log exists, so the events wait for events_jobs_start.
 */
void
events_jobs_lost(const char *what, const char *boot, const char *id)
{
	cJSON	*o;
	char	 type[EVENTS_TYPE_MAX];

	if (events_lost == NULL && (events_lost = cJSON_CreateArray()) == NULL)
		return;
	snprintf(type, sizeof(type), "%s.lost", what);
	if ((o = cJSON_CreateObject()) == NULL)
		return;
	cJSON_AddStringToObject(o, "type", type);
	cJSON_AddStringToObject(o, "id", id);
	cJSON_AddStringToObject(o, "boot", boot);
	cJSON_AddItemToArray(events_lost, o);
}

void
events_jobs_start(struct jobtab *procs, struct jobtab *terms)
{
	cJSON	*o, *t;
	char	 type[EVENTS_TYPE_MAX];

	while (events_lost != NULL &&
	    (o = cJSON_DetachItemFromArray(events_lost, 0)) != NULL) {
		t = cJSON_GetObjectItemCaseSensitive(o, "type");
		snprintf(type, sizeof(type), "%s", cJSON_IsString(t) ?
		    t->valuestring : "process.lost");
		events_emit(type, o);	/* its "type" is the event's */
	}
	cJSON_Delete(events_lost);
	events_lost = NULL;
	jobtab_subscribe(procs, &events_procs, events_proc_cb);
	jobtab_subscribe(terms, &events_terms, events_term_cb);
}
