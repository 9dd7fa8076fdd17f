/*
 * api_input.c: a job's input written by HTTP requests — the held
 * writer, the busy refusal, and the reply that waits for room.  What
 * differs between a process's stdin and a terminal's input (how the job
 * is found, what its closed input is called) stays in the route module.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "api_input.h"

/* The connection of a held writer closed: the job forgets it. */
static void
api_input_closed(struct http_conn *c, void *owner)
{
	(void)c;
	job_input_unhold(owner);
}

/* Held mid-body: read on; the rest of the body learns what happened. */
static void
api_input_resume(struct job *j, void *writer, int err)
{
	struct http_conn	*c = writer;

	(void)j;
	(void)err;
	http_conn_own(c, NULL, NULL, NULL);
	http_conn_resume_read(c);
}

/* -1 (EBUSY) while another writer is held. */
static int
api_input_hold(struct job *j, struct http_conn *c,
    void (*wake)(struct job *, void *, int))
{
	if (job_input_hold(j, c, wake) == -1)
		return -1;
	http_conn_own(c, j, NULL, api_input_closed);
	return 0;
}

/* The request names another boot than boot. */
static bool
api_input_elsewhere(struct http_req *r, const char *boot)
{
	const char	*h;
	char		 q[API_BOOT_Q_MAX];

	h = api_boot_named(r, q, sizeof(q));
	return h != NULL && strcmp(h, boot) != 0;
}

void
api_input_body(struct http_conn *c, struct http_req *r, const char *boot,
    struct job *j, const char *d, size_t n)
{
	if (r->body_error)
		return;
	if (api_input_elsewhere(r, boot)) {
		r->body_error = 410;
		return;
	}
	if (j == NULL) {
		r->body_error = 404;
		return;
	}
	/*
	 * While another request is held (the queue is full), this one is
	 * refused before any of its bytes are queued: nothing of a refused
	 * body reaches the job, and the queue does not grow.
	 */
	if (job_input_writer(j) != NULL && job_input_writer(j) != c) {
		r->body_error = r->streamed == 0 ? API_INPUT_BUSY :
		    API_INPUT_BUSY_PART;
		return;
	}
	if (job_input(j, d, n, false) == -1) {
		r->body_error = 409;
		return;
	}
	if (job_input_full(j) && api_input_hold(j, c, api_input_resume) == 0)
		http_conn_pause_read(c);
}

void
api_input_done(struct http_conn *c, struct job *j)
{
	if (job_input_writer(j) == c) {
		job_input_unhold(j);
		api_input_resume(j, c, 0);
	}
}

bool
api_input_busy(struct http_conn *c, struct http_req *r, struct job *j,
    const struct api_input_says *says)
{
	if (r->body_error != API_INPUT_BUSY &&
	    r->body_error != API_INPUT_BUSY_PART)
		return false;
	http_reply_error(c, 409, "conflict", "%s of '%s' is busy with "
	    "another request; %s", says->what, job_id(j),
	    r->body_error == API_INPUT_BUSY ? "nothing of this body was "
	    "written" : "only the start of this body was written");
	return true;
}

bool
api_input_wait(struct http_conn *c, struct http_req *r, struct job *j,
    void (*answer)(struct job *, void *, int))
{
	return r->streamed > 0 && job_input_full(j) &&
	    api_input_hold(j, c, answer) == 0;
}

void
api_input_answer(struct http_conn *c, struct job *j, int err,
    const struct api_input_says *says)
{
	http_conn_own(c, NULL, NULL, NULL);
	if (err == ENOENT)
		http_reply_error(c, 404, "not_found", "%s", says->gone);
	else if (err != 0)
		http_reply_error(c, 409, says->code, says->closed, job_id(j));
	else
		http_reply(c, 204, NULL, NULL, 0);
}
