/*
 * exitstatus: how a supervised child ended, one struct for the engine
 * (job.h) and its readers: set from the reaper's wait status, told as
 * the "exit" of a status, and parsed once from an earlier boot's
 * status.json, so that no reader reads an exit back out of JSON.
 */
#ifndef TEND_EXITSTATUS_H
#define TEND_EXITSTATUS_H

#include <stdbool.h>
#include <cjson/cJSON.h>

/* How a child ended. */
struct exit_status {
	int	 code;		/* exit code; 128+N when signal N killed it */
	int	 signal;	/* N, or 0 when no signal killed it */
	bool	 timed_out;	/* its timeout ran out (a process's) */
	bool	 oom_killed;	/* the OOM killer ended it (not yet known) */
};

/* code and signal from waitpid's status; the rest is left as it is. */
void	 exitstatus_set(struct exit_status *, int wstatus);
/*
 * {"code","signal","timedOut"}: "signal" absent, not null, unless
 * signalled (schema-validating clients); "timedOut" only when timed (a
 * process's shape; a terminal's has none).  NULL when out of memory.
 */
cJSON	*exitstatus_json(const struct exit_status *, bool timed);
/*
 * A status.json's "exit" object read into the struct: 0, or -1 when x
 * is no object (then *e is zeroed).  A "code" that is no number reads
 * -1: the exit is known, its code is not.
 */
int	 exitstatus_parse(struct exit_status *, const cJSON *x);

#endif
