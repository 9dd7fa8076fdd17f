/*
 * ready: a process's readiness, asked at its launch ("ready" of POST
 * /v1/processes) — a TCP port it (or a descendant) listens on, a
 * substring of its output, or both — watched by the agent so that every
 * client gets it.
 *
 * It hangs on the job through a job_watch: JOB_EV_OUTPUT reads what the
 * store gained on the streams asked and looks for the substring, the
 * last len-1 bytes of each stream kept so that a match across two
 * writes is found; JOB_EV_END before it is ready settles it as exited.
 * The port is asked of portwatch after each of its refreshes (quick ones
 * while a port is awaited).  timeoutMs, if given, settles it as timeout
 * (the process keeps running).  Settled once: ready, timeout or exited;
 * process.ready is emitted when it is ready.
 */
#ifndef TEND_READY_H
#define TEND_READY_H

#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "job.h"

enum ready_state {
	READY_WAITING,
	READY_READY,
	READY_TIMEOUT,	/* timeoutMs passed first */
	READY_EXITED	/* the process ended first */
};

/* What a launch asks (on: "ready" was given). */
struct ready_opts {
	bool		 on;
	int		 port;		/* 0: none */
	const char	*log;		/* substring, or NULL (borrowed) */
	unsigned	 streams;	/* bits 1 << LS_STDOUT, LS_STDERR */
	uint64_t	 timeout_ms;	/* 0: none */
};

/* A party told once it settles, embedded in its owner. */
struct ready_wait {
	struct ready_wait	*next;
	void			(*fn)(struct ready_wait *);
};

struct ready;

/*
 * A launch body's "ready" (j, an object) into o: 0, or -1 with *why
 * naming the fault ("ready.port: ...").  o->log points into j.
 */
int	ready_opts_parse(const cJSON *j, struct ready_opts *o,
	    const char **why);
/* A readiness for a job not yet started (o copied); NULL: no memory. */
struct ready *ready_new(const struct ready_opts *);
/* The job runs: watch it. */
void	ready_start(struct ready *, struct job *);
void	ready_free(struct ready *);
enum ready_state ready_state(const struct ready *);
const char *ready_state_name(enum ready_state);
/* "ready", "readyAt" (ms, once ready), "readiness" into a status. */
void	ready_status(const struct ready *, cJSON *);
/* fn once settled (at once, in the call, when it is already). */
void	ready_wait_add(struct ready *, struct ready_wait *,
	    void (*fn)(struct ready_wait *));
void	ready_wait_del(struct ready *, struct ready_wait *);

#endif
