/*
 * api_exec.c: POST /v1/exec.  The JSON reply waits for the root to exit,
 * then takes what the pipes hold now: a background descendant keeping a
 * pipe open does not hold the reply.  With Accept: text/event-stream the
 * output is streamed instead (api_output_exec_stream).
 */
#include <stdlib.h>
#include <string.h>

#include "api_exec.h"
#include "api_output.h"
#include "base/codec.h"
#include "base/util.h"

struct api_execwait {
	struct job_watch	 w;
	struct http_conn	*c;
	uint64_t		 max;
	int64_t			 t0;
};

/* Pieces of a multiple of 3 bytes: no base64 padding inside the text. */
static char	api_exec_piece[LOG_CHUNK / 3 * 3];

static void	api_exec(struct http_conn *, struct http_req *);

const struct http_route api_exec_routes[] = {
	{ "POST",	"/v1/exec",			api_exec, NULL },
	{ NULL, NULL, NULL, NULL }
};

/* At most max bytes of stream s from its start, as base64; -1 on ENOMEM. */
static int
api_exec_stream_text(struct logstore *ls, int s, uint64_t max,
    struct buf *b64, bool *truncated)
{
	uint64_t	want, off = ls->start[s];
	ssize_t		n;
	int		rc = 0;

	want = ls->end[s] - off;
	if (off > 0 || want > max)
		*truncated = true;
	if (want > max)
		want = max;
	while (want > 0 && rc == 0) {
		n = logstore_pread(ls, s, api_exec_piece,
		    want < sizeof(api_exec_piece) ? want :
		    sizeof(api_exec_piece), off);
		if (n <= 0)
			break;
		rc = codec_b64_encode(b64, api_exec_piece, n);
		off += n;
		want -= n;
	}
	return rc | buf_add(b64, "", 1);
}

static void
api_exec_forget(struct api_execwait *x)
{
	http_conn_own(x->c, NULL, NULL, NULL);
	job_watch_del(&x->w);
	free(x);
}

static void
api_exec_reply(struct api_execwait *x, struct proc *p)
{
	struct http_conn	*c = x->c;
	struct logstore		*ls = proc_store(p);	/* watched: open */
	struct buf		 b64 = { 0 };
	bool			 truncated = false;
	cJSON			*j;
	int			 s, rc = 0;

	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "id", proc_id(p));
	cJSON_AddItemToObject(j, "exit", proc_exit_json(p));
	for (s = 0; s < LS_NSTREAMS && rc == 0; s++) {
		buf_reset(&b64);
		rc = api_exec_stream_text(ls, s, x->max, &b64, &truncated);
		if (rc == 0)
			cJSON_AddStringToObject(j, api_output_streams[s],
			    b64.data);
	}
	buf_free(&b64);
	/* Bytes the disk refused are missing from the reply as well. */
	cJSON_AddNumberToObject(j, "droppedBytes", (double)ls->dropped);
	cJSON_AddBoolToObject(j, "truncated", truncated || ls->dropped > 0);
	cJSON_AddNumberToObject(j, "durationMs",
	    (double)(codec_mono_ms() - x->t0));
	api_exec_forget(x);
	if (rc != 0) {
		cJSON_Delete(j);
		http_reply_error(c, 503, "busy", "out of memory");
	} else
		http_reply_json(c, 200, j);
}

static void
api_exec_event(struct job_watch *w, enum job_event ev)
{
	struct api_execwait	*x = container_of(w, struct api_execwait, w);
	struct http_conn	*c = x->c;

	if (ev == JOB_EV_GONE) {
		api_exec_forget(x);
		http_reply_error(c, 404, "not_found", "the process was removed");
	} else if (ev == JOB_EV_EXIT)
		api_exec_reply(x, proc_of(w->job));
}

static void
api_exec_closed(struct http_conn *c, void *owner)
{
	struct api_execwait	*x = owner;

	(void)c;
	job_watch_del(&x->w);
	free(x);
}

int
api_exec_opts(const cJSON *j, struct buf *in, uint64_t *max,
    struct api_err *e)
{
	const cJSON	*f;

	*max = EXEC_MAX_OUTPUT;
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "stdin")) != NULL &&
	    (!cJSON_IsString(f) || codec_b64_decode(in, f->valuestring,
	    strlen(f->valuestring)) == -1)) {
		api_err_invalid(e, "stdin", "must be base64 data");
		return -1;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "maxOutputBytes")) != NULL) {
		if (!api_integer(f, 0, EXEC_MAX_OUTPUT_ASK)) {
			api_err_invalid(e, "maxOutputBytes", "must be an "
			    "integer >= 0");
			return -1;
		}
		*max = (uint64_t)f->valuedouble;
		if (*max > EXEC_MAX_OUTPUT_CAP)
			*max = EXEC_MAX_OUTPUT_CAP;	/* built in memory */
	}
	return 0;
}

/* Wait for the root's exit, then reply with its output. */
static void
api_exec_wait(struct http_conn *c, struct proc *p, uint64_t max, int64_t t0)
{
	struct api_execwait	*x;

	if ((x = calloc(1, sizeof(*x))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	x->c = c;
	x->max = max;
	x->t0 = t0;
	job_watch_add(proc_job(p), &x->w, api_exec_event);
	http_conn_own(c, x, NULL, api_exec_closed);
	if (proc_ended(p, PROC_END_ROOT))
		api_exec_reply(x, p);
}

/* POST /v1/exec */
static void
api_exec(struct http_conn *c, struct http_req *r)
{
	struct proc_opts	 o;
	struct api_err		 e;
	struct proc		*p;
	struct buf		 in = { 0 };
	const char		*accept;
	char			**argv = NULL, **env = NULL;
	uint64_t		 max;
	cJSON			*j = NULL;
	bool			 failed;
	int			 fd, err;
	int64_t			 t0 = codec_mono_ms();

	if (api_pin(api_of(c), r, false, &fd, &e) != 0 ||
	    (j = api_parse_body(r->body.data, r->body.len, &e)) == NULL ||
	    api_launch_opts(j, true, api_of(c)->default_user, &o, &argv, &env,
	    &e) == -1 ||
	    api_exec_opts(j, &in, &max, &e) == -1) {
		api_reply_err(c, &e);
		goto out;
	}
	o.stdin_pipe = in.len > 0;
	if ((p = proc_spawn(api_of(c)->tab, &o, &failed, &err)) == NULL) {
		api_reply_spawn_error(c, failed, err, o.id);
		goto out;
	}
	if (in.len > 0)
		(void)proc_stdin(p, in.data, in.len, true);
	accept = http_header(r, "Accept");
	if (accept != NULL && strstr(accept, "text/event-stream") != NULL)
		api_output_exec_stream(c, p);
	else
		api_exec_wait(c, p, max, t0);
out:
	buf_free(&in);
	api_launch_free(argv, env);
	cJSON_Delete(j);
}
