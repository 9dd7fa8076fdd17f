/*
 * exitstatus.c: how a child ended, as the reaper's wait status gives it
 * (exitstatus_set), as a status tells it (exitstatus_json), and as an
 * earlier boot's status.json is read back into it (exitstatus_parse).
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <string.h>

#include "exitstatus.h"

void
exitstatus_set(struct exit_status *e, int wstatus)
{
	if (WIFSIGNALED(wstatus)) {
		e->signal = WTERMSIG(wstatus);
		e->code = 128 + e->signal;
	} else {
		e->signal = 0;
		e->code = WEXITSTATUS(wstatus);
	}
}

cJSON *
exitstatus_json(const struct exit_status *e, bool timed)
{
	cJSON	*j;

	if ((j = cJSON_CreateObject()) == NULL)
		return NULL;
	cJSON_AddNumberToObject(j, "code", e->code);
	if (e->signal)
		cJSON_AddNumberToObject(j, "signal", e->signal);
	if (timed)
		cJSON_AddBoolToObject(j, "timedOut", e->timed_out);
	/* Absent unless true: the field comes when it can be known. */
	if (e->oom_killed)
		cJSON_AddBoolToObject(j, "oomKilled", true);
	return j;
}

int
exitstatus_parse(struct exit_status *e, const cJSON *x)
{
	const cJSON	*code, *sig;

	memset(e, 0, sizeof(*e));
	if (!cJSON_IsObject(x))
		return -1;
	code = cJSON_GetObjectItemCaseSensitive(x, "code");
	e->code = cJSON_IsNumber(code) ? code->valueint : -1;
	sig = cJSON_GetObjectItemCaseSensitive(x, "signal");
	if (cJSON_IsNumber(sig))
		e->signal = sig->valueint;
	e->timed_out = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x,
	    "timedOut"));
	e->oom_killed = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x,
	    "oomKilled"));
	return 0;
}

