/*
 * api_input: a job's input written by HTTP requests, for the process
 * stdin route (api_proc.c) and the terminal input route (api_term.c).
 * Bodies are streamed into the job's queue as they arrive.  The queue
 * is bounded across requests, not only within one: a writer whose bytes
 * leave it above PROC_STDIN_HIGH is held until the job has taken half of
 * it — mid-body its reading pauses, after its body its reply waits — and
 * while one is held, other writers are refused before any of their
 * bytes are queued.  A client sending one request after another is so
 * paced like one long body, and the queue holds at most the bound and
 * one read.
 */
#ifndef TEND_API_INPUT_H
#define TEND_API_INPUT_H

#include <stddef.h>

#include "api.h"
#include "core/job.h"
#include "net/http.h"

/* What a route's input is called in its replies. */
struct api_input_says {
	const char	*what;		/* "stdin", "input" */
	const char	*gone;		/* 404: the job was removed */
	const char	*code;		/* 409: its input closed with bytes */
	const char	*closed;	/* ... queued: the message, %s its ID */
};

/* body_error of a request refused while another writer is held */
#define API_INPUT_BUSY		1	/* before any of its bytes */
#define API_INPUT_BUSY_PART	2	/* after some were written */

/*
 * A body's bytes for j (NULL: the route found none), of this boot: the
 * first refusal sets r->body_error and the rest of the body is dropped —
 * 410 for a request that names another boot (its bytes reach no job),
 * 404, the busy codes, 409 for an input that is closed.  A full queue
 * holds the writer and pauses its reading.
 */
void	api_input_body(struct http_conn *, struct http_req *, const char *boot,
	    struct job *, const char *, size_t);
/* The body is over: a writer held mid-body is let go. */
void	api_input_done(struct http_conn *, struct job *);
/*
 * A busy refusal replied: 409 "conflict", "<what> of '<id>' is busy
 * with another request", and how much of the body was written.  false
 * when the request was not refused as busy.
 */
bool	api_input_busy(struct http_conn *, struct http_req *, struct job *,
	    const struct api_input_says *);
/*
 * The bytes left the queue full: the reply waits for room, made by
 * answer(j, c, err) (job_input_hold's wake).  false when it need not
 * wait (then the route replies).
 */
bool	api_input_wait(struct http_conn *, struct http_req *, struct job *,
	    void (*answer)(struct job *, void *, int));
/*
 * The reply of a writer held after its body, from the wake's err: 204,
 * 404 (removed), or 409 (its input closed with bytes queued).
 */
void	api_input_answer(struct http_conn *, struct job *, int err,
	    const struct api_input_says *);

#endif
