/*
 * api_envd.c: envd's process.Process over tend's process and terminal
 * tables — its unary RPCs, the selector and the events every RPC shares
 * — and POST /init.  Start and Connect, the streams, are
 * api_envd_stream.c's.
 *
 * The selector's pid is looked up among the current boot's records: a
 * running one, else the newest ended one (pids are reused; an ended
 * record still answers Connect with its exit).
 */
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_envd.h"
#include "base/codec.h"
#include "base/util.h"
#include "connect.h"
#include "envd.h"

/*
 * The names of a Start's envs (its values are never kept), for List:
 * one per record, dropped when the table removes the record.
 */
struct envd_names {
	struct envd_names	*next;
	const void		*rec;		/* a struct proc or term */
	char			*json;		/* {"NAME":"",...} */
};

static struct envd_names	*api_envd_names;
static struct jobtab_sub	 api_envd_psub;
static struct jobtab_sub	 api_envd_tsub;

static void	api_envd_list(struct http_conn *, struct http_req *);
static void	api_envd_input(struct http_conn *, struct http_req *);
static void	api_envd_signal(struct http_conn *, struct http_req *);
static void	api_envd_close_stdin(struct http_conn *, struct http_req *);
static void	api_envd_update(struct http_conn *, struct http_req *);
static void	api_envd_init(struct http_conn *, struct http_req *);

const struct http_route api_envd_routes[] = {
	{ "POST",	"/process.Process/List",	api_envd_list, NULL },
	{ "POST",	"/process.Process/SendInput",	api_envd_input, NULL },
	{ "POST",	"/process.Process/SendSignal",	api_envd_signal, NULL },
	{ "POST",	"/process.Process/CloseStdin",	api_envd_close_stdin,
	    NULL },
	{ "POST",	"/process.Process/Update",	api_envd_update, NULL },
	{ "POST",	"/process.Process/*",	envd_unimplemented, NULL },
	{ "POST",	"/init",		api_envd_init, NULL },
	{ NULL, NULL, NULL, NULL }
};

/* ------------------------------------------------------------------ */
/* Env names kept for List */

static void
api_envd_names_drop(const void *rec)
{
	struct envd_names	**pp, *n;

	for (pp = &api_envd_names; (n = *pp) != NULL; pp = &n->next)
		if (n->rec == rec) {
			*pp = n->next;
			free(n->json);
			free(n);
			return;
		}
}

/* A process or terminal removed: its names go (they are its job's). */
static void
api_envd_job_removed(struct jobtab_sub *s, struct job *j,
    enum jobtab_event ev)
{
	(void)s;
	if (ev == JOBTAB_EV_REMOVE)
		api_envd_names_drop(j);
}

void
api_envd_names_add(struct api *a, const void *rec, const cJSON *envs)
{
	struct envd_names	*n;
	const cJSON		*el;
	cJSON			*j;

	if (api_envd_psub.tab == NULL) {
		jobtab_subscribe(&a->tab->jobs, &api_envd_psub,
		    api_envd_job_removed);
		jobtab_subscribe(&a->terms->jobs, &api_envd_tsub,
		    api_envd_job_removed);
	}
	if (envs == NULL || (n = calloc(1, sizeof(*n))) == NULL)
		return;
	j = cJSON_CreateObject();
	cJSON_ArrayForEach(el, envs)
		cJSON_AddStringToObject(j, el->string, "");
	n->json = j != NULL ? cJSON_PrintUnformatted(j) : NULL;
	cJSON_Delete(j);
	if (n->json == NULL) {
		free(n);
		return;
	}
	n->rec = rec;
	n->next = api_envd_names;
	api_envd_names = n;
}

static cJSON *
api_envd_names_json(const void *rec)
{
	struct envd_names	*n;

	for (n = api_envd_names; n != NULL; n = n->next)
		if (n->rec == rec)
			return cJSON_Parse(n->json);
	return cJSON_CreateObject();
}

/* ------------------------------------------------------------------ */
/* Selectors */

bool
api_envd_ended(const struct envd_target *t)
{
	return t->p != NULL ? proc_ended(t->p, PROC_END_STATE) :
	    term_ended(t->t);
}

/* The running record with pid, else the newest ended one. */
static void
api_envd_by_pid(struct api *a, pid_t pid, struct envd_target *t)
{
	struct proc	*p, *endp = NULL;
	struct term	*tm, *endt = NULL;

	for (p = proctab_first(a->tab); p != NULL; p = proc_next(p))
		if (proc_pid(p) == pid) {
			if (!proc_ended(p, PROC_END_STATE)) {
				t->p = p;
				return;
			}
			endp = p;	/* launch order: the last is the newest */
		}
	for (tm = termtab_first(a->terms); tm != NULL; tm = term_next(tm))
		if (term_pid(tm) == pid) {
			if (!term_ended(tm)) {
				t->t = tm;
				return;
			}
			endt = tm;
		}
	if (endp != NULL && (endt == NULL ||
	    proc_started_ms(endp) >= term_created_ms(endt)))
		t->p = endp;
	else
		t->t = endt;
}

/* A uint32 of proto3 JSON: a number, or a decimal string. */
static int
api_envd_uint(const cJSON *f, uint64_t max, uint64_t *v)
{
	if (cJSON_IsString(f))
		return codec_parse_u64(f->valuestring, v) == -1 || *v > max ?
		    -1 : 0;
	if (!api_integer(f, 0, (double)max))
		return -1;
	*v = (uint64_t)f->valuedouble;
	return 0;
}

int
api_envd_select(struct api *a, const cJSON *j, struct envd_target *t,
    struct envd_err *e)
{
	const cJSON	*sel, *pid, *tag;
	uint64_t	 v;

	memset(t, 0, sizeof(*t));
	sel = connect_field(j, "process");
	pid = cJSON_IsObject(sel) ? connect_field(sel, "pid") : NULL;
	tag = cJSON_IsObject(sel) ? connect_field(sel, "tag") : NULL;
	if (cJSON_IsString(tag)) {
		if (proc_id_valid(tag->valuestring) &&
		    (t->p = proc_find(a->tab, tag->valuestring)) == NULL)
			t->t = term_find(a->terms, tag->valuestring);
		if (t->p == NULL && t->t == NULL) {
			envd_err_set(e, "not_found", "process with tag "
			    "'%.128s' not found", tag->valuestring);
			return -1;
		}
		return 0;
	}
	if (pid == NULL || api_envd_uint(pid, INT_MAX, &v) == -1) {
		envd_err_set(e, "invalid_argument", "process: a selector "
		    "{\"pid\": N} or {\"tag\": \"...\"} is required");
		return -1;
	}
	api_envd_by_pid(a, (pid_t)v, t);
	if (t->p == NULL && t->t == NULL) {
		envd_err_set(e, "not_found", "process with pid %llu not found",
		    (unsigned long long)v);
		return -1;
	}
	return 0;
}

/* The selector, of a record still running: an ended one is not_found. */
static int
api_envd_select_live(struct api *a, const cJSON *j, struct envd_target *t,
    struct envd_err *e)
{
	if (api_envd_select(a, j, t, e) == -1)
		return -1;
	if (api_envd_ended(t)) {
		envd_err_set(e, "not_found", "process '%s' has ended",
		    t->p != NULL ? proc_id(t->p) : term_id(t->t));
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Events */

/*
 * Go's names of a signal (its syscall package's, Linux), which envd's
 * status carries and the SDK shows: "killed", "terminated"; "signal N"
 * past them, as Go's Signal.String.  A table, not strsignal: glibc's and
 * musl's texts differ from Go's and from each other.
 */
static void
api_envd_signame(int sig, char *out, size_t n)
{
	static const char *const names[] = {
		[SIGHUP] = "hangup", [SIGINT] = "interrupt",
		[SIGQUIT] = "quit", [SIGILL] = "illegal instruction",
		[SIGTRAP] = "trace/breakpoint trap", [SIGABRT] = "aborted",
		[SIGBUS] = "bus error", [SIGFPE] = "floating point exception",
		[SIGKILL] = "killed", [SIGUSR1] = "user defined signal 1",
		[SIGSEGV] = "segmentation fault",
		[SIGUSR2] = "user defined signal 2", [SIGPIPE] = "broken pipe",
		[SIGALRM] = "alarm clock", [SIGTERM] = "terminated",
		[SIGSTKFLT] = "stack fault", [SIGCHLD] = "child exited",
		[SIGCONT] = "continued", [SIGSTOP] = "stopped (signal)",
		[SIGTSTP] = "stopped", [SIGTTIN] = "stopped (tty input)",
		[SIGTTOU] = "stopped (tty output)",
		[SIGURG] = "urgent I/O condition",
		[SIGXCPU] = "CPU time limit exceeded",
		[SIGXFSZ] = "file size limit exceeded",
		[SIGVTALRM] = "virtual timer expired",
		[SIGPROF] = "profiling timer expired",
		[SIGWINCH] = "window changed", [SIGIO] = "I/O possible",
		[SIGPWR] = "power failure", [SIGSYS] = "bad system call",
	};

	if (sig > 0 && (size_t)sig < nitems(names) && names[sig] != NULL)
		(void)snprintf(out, n, "%s", names[sig]);
	else
		(void)snprintf(out, n, "signal %d", sig);
}

/*
 * The end event of an ended record, as envd sends it: exitCode,
 * exited, status and error (proto3: zero values omitted).  *timed_out:
 * its lifetime ran out.
 */
char *
api_envd_end_json(const struct envd_target *t, bool *timed_out)
{
	const struct exit_status	*x;
	cJSON				*j, *end;
	char				 status[96], name[64];
	char				*s;
	int				 code, sig;

	x = t->p != NULL ? proc_exit(t->p) : term_exit(t->t);
	code = x != NULL ? x->code : -1;
	sig = x != NULL ? x->signal : 0;
	*timed_out = x != NULL && x->timed_out;
	if (sig != 0) {
		api_envd_signame(sig, name, sizeof(name));
		(void)snprintf(status, sizeof(status), "signal: %s", name);
		code = -1;
	} else
		(void)snprintf(status, sizeof(status), "exit status %d", code);
	j = cJSON_CreateObject();
	end = cJSON_AddObjectToObject(cJSON_AddObjectToObject(j, "event"),
	    "end");
	if (code != 0)
		cJSON_AddNumberToObject(end, "exitCode", code);
	if (sig == 0)
		cJSON_AddBoolToObject(end, "exited", true);
	cJSON_AddStringToObject(end, "status", status);
	if (code != 0)
		cJSON_AddStringToObject(end, "error", status);
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return s;
}

int
api_envd_start_msg(struct http_conn *c, pid_t pid)
{
	char	m[64];

	(void)snprintf(m, sizeof(m), "{\"event\":{\"start\":{\"pid\":%d}}}",
	    (int)pid);
	return envd_stream_msg(c, m);
}

/* ------------------------------------------------------------------ */
/* Sizes */

int
api_envd_pty_size(const cJSON *pty, unsigned int *cols, unsigned int *rows,
    struct envd_err *e)
{
	const cJSON	*size, *f;
	uint64_t	 v[2] = { 0, 0 };

	if (!cJSON_IsObject(pty) || ((size = connect_field(pty, "size")) !=
	    NULL && !cJSON_IsObject(size)))
		goto bad;
	if (size != NULL && (((f = connect_field(size, "cols")) != NULL &&
	    api_envd_uint(f, PTY_MAX_DIM, &v[0]) == -1) ||
	    ((f = connect_field(size, "rows")) != NULL &&
	    api_envd_uint(f, PTY_MAX_DIM, &v[1]) == -1)))
		goto bad;
	*cols = (unsigned int)v[0];
	*rows = (unsigned int)v[1];
	return 0;
bad:
	envd_err_set(e, "invalid_argument", "pty: {\"size\":{\"cols\":N,"
	    "\"rows\":N}}, each at most %d", PTY_MAX_DIM);
	return -1;
}


/* ------------------------------------------------------------------ */
/* List */

/* ProcessInfo of a status (proc or term): config{cmd,args,envs,cwd}. */
static cJSON *
api_envd_info(cJSON *st, const void *rec)
{
	const cJSON	*cmd, *el, *f;
	cJSON		*j, *cfg, *args;
	int		 i = 0;

	j = cJSON_CreateObject();
	cfg = cJSON_AddObjectToObject(j, "config");
	cmd = cJSON_GetObjectItemCaseSensitive(st, "command");
	args = cJSON_AddArrayToObject(cfg, "args");
	cJSON_ArrayForEach(el, cmd)
		if (i++ == 0)
			cJSON_AddStringToObject(cfg, "cmd", el->valuestring);
		else
			cJSON_AddItemToArray(args,
			    cJSON_CreateString(el->valuestring));
	cJSON_AddItemToObject(cfg, "envs", api_envd_names_json(rec));
	if (cJSON_IsString(f = cJSON_GetObjectItemCaseSensitive(st, "cwd")))
		cJSON_AddStringToObject(cfg, "cwd", f->valuestring);
	if ((f = cJSON_GetObjectItemCaseSensitive(st, "pid")) != NULL)
		cJSON_AddNumberToObject(j, "pid", f->valuedouble);
	if (cJSON_IsString(f = cJSON_GetObjectItemCaseSensitive(st, "id")))
		cJSON_AddStringToObject(j, "tag", f->valuestring);
	cJSON_Delete(st);
	return j;
}

/* POST /process.Process/List: running processes and terminals. */
static void
api_envd_list(struct http_conn *c, struct http_req *r)
{
	struct api	*a = api_of(c);
	struct envd_err	 e;
	struct proc	*p;
	struct term	*t;
	cJSON		*j, *reply, *list;

	if ((j = envd_unary_body(r, &e)) == NULL) {
		envd_reply_err(c, &e);
		return;
	}
	cJSON_Delete(j);
	reply = cJSON_CreateObject();
	list = cJSON_AddArrayToObject(reply, "processes");
	for (p = proctab_first(a->tab); p != NULL; p = proc_next(p))
		if (proc_state(p) == PROC_RUNNING)
			cJSON_AddItemToArray(list,
			    api_envd_info(proc_status_json(p), &p->job));
	for (t = termtab_first(a->terms); t != NULL; t = term_next(t))
		if (!term_ended(t))
			cJSON_AddItemToArray(list,
			    api_envd_info(term_status_json(t), term_job(t)));
	envd_reply(c, reply);
}

/* ------------------------------------------------------------------ */
/* Input */

static void
api_envd_ok(struct http_conn *c)
{
	envd_reply(c, cJSON_CreateObject());
}

/* A held SendInput's answer: the queue took it, or the input closed. */
static void
api_envd_input_answer(struct http_conn *c, int err)
{
	struct envd_err	e;

	http_conn_own(c, NULL, NULL, NULL);
	if (err == 0) {
		api_envd_ok(c);
		return;
	}
	envd_err_set(&e, err == ENOENT ? "not_found" : "failed_precondition",
	    err == ENOENT ? "the process was removed" : "the input was "
	    "closed before it was written");
	envd_reply_err(c, &e);
}

/* A held writer of a process's stdin or a terminal's input: one job's. */
static void
api_envd_input_wake(struct job *j, void *writer, int err)
{
	(void)j;
	api_envd_input_answer(writer, err);
}

static void
api_envd_input_gone(struct http_conn *c, void *owner)
{
	(void)c;
	job_input_unhold(owner);
}

/*
 * Bytes to a process's stdin: 0 when replied or held (the reply waits
 * for room in the queue, as /v1's stdin does), -1 with e.
 */
static int
api_envd_to_stdin(struct http_conn *c, struct proc *p, const struct buf *d,
    struct envd_err *e)
{
	if (!proc_stdin_piped(p) || !proc_stdin_open(p)) {
		envd_err_set(e, "failed_precondition", "stdin of '%s' is not "
		    "open (started with stdin false, or closed)", proc_id(p));
		return -1;
	}
	if (job_input_writer(&p->job) != NULL) {
		envd_err_set(e, "unavailable", "stdin of '%s' is busy with "
		    "another writer", proc_id(p));
		return -1;
	}
	if (proc_stdin(p, d->data, d->len, false) == -1) {
		envd_err_set(e, "failed_precondition", "stdin of '%s': %s",
		    proc_id(p), strerror(errno));
		return -1;
	}
	if (job_input_full(&p->job) && job_input_hold(&p->job, c,
	    api_envd_input_wake) == 0) {
		http_conn_own(c, &p->job, NULL, api_envd_input_gone);
		return 0;
	}
	api_envd_ok(c);
	return 0;
}

static int
api_envd_to_tty(struct http_conn *c, struct term *t, const struct buf *d,
    struct envd_err *e)
{
	if (job_input_writer(term_job(t)) != NULL) {
		envd_err_set(e, "unavailable", "input of '%s' is busy with "
		    "another writer", term_id(t));
		return -1;
	}
	if (term_input(t, d->data, d->len) == -1) {
		envd_err_set(e, "not_found", "terminal '%s' has ended",
		    term_id(t));
		return -1;
	}
	if (job_input_full(term_job(t)) && job_input_hold(term_job(t), c,
	    api_envd_input_wake) == 0) {
		http_conn_own(c, term_job(t), NULL, api_envd_input_gone);
		return 0;
	}
	api_envd_ok(c);
	return 0;
}

/* input{stdin|pty}: the bytes, and whether they are for a pty. */
static int
api_envd_input_bytes(const cJSON *j, struct buf *d, bool *pty,
    struct envd_err *e)
{
	const cJSON	*in, *f;

	in = connect_field(j, "input");
	f = cJSON_IsObject(in) ? connect_field(in, "stdin") : NULL;
	*pty = f == NULL;
	if (f == NULL && cJSON_IsObject(in))
		f = connect_field(in, "pty");
	if (!cJSON_IsString(f) || codec_b64_decode(d, f->valuestring,
	    strlen(f->valuestring)) == -1) {
		envd_err_set(e, "invalid_argument", "input: {\"stdin\": "
		    "base64} or {\"pty\": base64}");
		return -1;
	}
	return 0;
}

/* POST /process.Process/SendInput */
static void
api_envd_input(struct http_conn *c, struct http_req *r)
{
	struct envd_target	 t;
	struct envd_err		 e;
	struct buf		 d = { 0 };
	cJSON			*j;
	bool			 pty;
	int			 rc = -1;

	if ((j = envd_unary_body(r, &e)) != NULL &&
	    api_envd_select_live(api_of(c), j, &t, &e) == 0 &&
	    api_envd_input_bytes(j, &d, &pty, &e) == 0) {
		if (pty != (t.t != NULL))
			envd_err_set(&e, "failed_precondition", pty ?
			    "not a pty: input goes to stdin" : "a pty: input "
			    "goes to pty, not stdin");
		else if (t.p != NULL)
			rc = api_envd_to_stdin(c, t.p, &d, &e);
		else
			rc = api_envd_to_tty(c, t.t, &d, &e);
	}
	if (rc == -1)
		envd_reply_err(c, &e);
	buf_free(&d);
	cJSON_Delete(j);
}

/* ------------------------------------------------------------------ */
/* Signals, stdin's close, resize */

/* signal: SIGNAL_SIGTERM or SIGNAL_SIGKILL (name or number). */
static int
api_envd_signum(const cJSON *j, int *sig, struct envd_err *e)
{
	const cJSON	*f = connect_field(j, "signal");

	if (cJSON_IsString(f) && strcmp(f->valuestring, "SIGNAL_SIGTERM") == 0)
		*sig = SIGTERM;
	else if (cJSON_IsString(f) &&
	    strcmp(f->valuestring, "SIGNAL_SIGKILL") == 0)
		*sig = SIGKILL;
	else if (api_integer(f, SIGKILL, SIGKILL) ||
	    api_integer(f, SIGTERM, SIGTERM))
		*sig = f->valueint;
	else {
		envd_err_set(e, "invalid_argument", "signal: SIGNAL_SIGTERM "
		    "or SIGNAL_SIGKILL");
		return -1;
	}
	return 0;
}

/* POST /process.Process/SendSignal: to the group (the session's). */
static void
api_envd_signal(struct http_conn *c, struct http_req *r)
{
	struct envd_target	 t;
	struct envd_err		 e;
	cJSON			*j;
	int			 sig;

	if ((j = envd_unary_body(r, &e)) == NULL ||
	    api_envd_signum(j, &sig, &e) == -1 ||
	    api_envd_select_live(api_of(c), j, &t, &e) == -1)
		envd_reply_err(c, &e);
	else if (t.p != NULL && proc_kill(t.p, sig, true) == -1) {
		envd_err_set(&e, errno == ESRCH ? "not_found" : "internal",
		    "signal to '%s': %s", proc_id(t.p), strerror(errno));
		envd_reply_err(c, &e);
	} else {
		if (t.t != NULL)
			(void)term_signal_session(t.t, sig);
		api_envd_ok(c);
	}
	cJSON_Delete(j);
}

/* POST /process.Process/CloseStdin (a pty has none: send Ctrl-D). */
static void
api_envd_close_stdin(struct http_conn *c, struct http_req *r)
{
	struct envd_target	 t;
	struct envd_err		 e;
	cJSON			*j;

	if ((j = envd_unary_body(r, &e)) == NULL ||
	    api_envd_select_live(api_of(c), j, &t, &e) == -1)
		envd_reply_err(c, &e);
	else if (t.t != NULL) {
		envd_err_set(&e, "failed_precondition", "a pty has no stdin to "
		    "close: send Ctrl-D (0x04) as pty input");
		envd_reply_err(c, &e);
	} else {
		/* Not piped, or closed already: nothing to do, as envd. */
		if (proc_stdin_open(t.p))
			(void)proc_stdin(t.p, "", 0, true);
		api_envd_ok(c);
	}
	cJSON_Delete(j);
}

/* An UpdateRequest's resize: 0, or -1 with e. */
static int
api_envd_resize(const cJSON *j, const struct envd_target *t,
    struct envd_err *e)
{
	const cJSON	*pty = connect_field(j, "pty");
	unsigned int	 cols = 0, rows = 0;

	if (pty == NULL)
		return 0;
	if (api_envd_pty_size(pty, &cols, &rows, e) == -1)
		return -1;
	if (t->t == NULL) {
		envd_err_set(e, "failed_precondition", "'%s' is not a pty",
		    proc_id(t->p));
		return -1;
	}
	if (cols == 0 || rows == 0) {
		envd_err_set(e, "invalid_argument", "pty.size: cols and rows "
		    "must be positive");
		return -1;
	}
	if (term_resize(t->t, cols, rows) == -1) {
		envd_err_set(e, "not_found", "terminal '%s' has ended",
		    term_id(t->t));
		return -1;
	}
	return 0;
}

/* POST /process.Process/Update: a pty's size. */
static void
api_envd_update(struct http_conn *c, struct http_req *r)
{
	struct envd_target	 t;
	struct envd_err		 e;
	cJSON			*j;

	if ((j = envd_unary_body(r, &e)) == NULL ||
	    api_envd_select_live(api_of(c), j, &t, &e) == -1 ||
	    api_envd_resize(j, &t, &e) == -1)
		envd_reply_err(c, &e);
	else
		api_envd_ok(c);
	cJSON_Delete(j);
}

/* ------------------------------------------------------------------ */
/* POST /init */

/* 204, as envd answers it; the defaults hold for later requests. */
static void
api_envd_init(struct http_conn *c, struct http_req *r)
{
	struct envd_err	 e;
	cJSON		*j;

	if ((j = envd_unary_body(r, &e)) == NULL) {
		envd_reply_err(c, &e);
		return;
	}
	if (envd_apply_init(api_of(c)->envd, j, &e) == -1)
		envd_reply_err(c, &e);
	else
		http_reply(c, 204, NULL, NULL, 0);
	cJSON_Delete(j);
}

