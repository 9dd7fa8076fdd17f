/*
 * api.c: the route table, health, and the process routes (launch, list,
 * status, kill, stdin, wait, delete).  Output routes live in logs.c.
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "api_bridge.h"
#include "boot.h"
#include "codec.h"
#include "log.h"
#include "record.h"
#include "shimctl.h"
#include "util.h"


/* body_error of a stdin request refused while another one is held */
#define API_STDIN_BUSY		1	/* before any of its bytes */
#define API_STDIN_BUSY_PART	2	/* after some were written */

static void	api_health_state(cJSON *, struct proctab *);
static void	api_health(struct http_conn *, struct http_req *);
static void	api_launch(struct http_conn *, struct http_req *);
static void	api_list(struct http_conn *, struct http_req *);
static void	api_status(struct http_conn *, struct http_req *);
static void	api_kill(struct http_conn *, struct http_req *);
static void	api_stdin_body(struct http_conn *, struct http_req *,
		    const char *, size_t);
static void	api_stdin(struct http_conn *, struct http_req *);
static void	api_wait(struct http_conn *, struct http_req *);
static void	api_delete(struct http_conn *, struct http_req *);

const struct http_route api_routes[] = {
	{ "GET",	"/v1/health",			api_health, NULL },
	{ "GET",	"/v1/metrics",			logs_metrics, NULL },
	{ "POST",	"/v1/processes",		api_launch, NULL },
	{ "GET",	"/v1/processes",		api_list, NULL },
	{ "GET",	"/v1/processes/{}",		api_status, NULL },
	{ "DELETE",	"/v1/processes/{}",		api_delete, NULL },
	{ "POST",	"/v1/processes/{}/kill",	api_kill, NULL },
	{ "POST",	"/v1/processes/{}/stdin",	api_stdin, api_stdin_body },
	{ "POST",	"/v1/processes/{}/wait",	api_wait, NULL },
	{ "GET",	"/v1/processes/{}/stdout",	logs_raw, NULL },
	{ "GET",	"/v1/processes/{}/stderr",	logs_raw, NULL },
	{ "GET",	"/v1/processes/{}/logs",	logs_get, NULL },
	{ "POST",	"/v1/exec",			logs_exec, NULL },
	{ NULL, NULL, NULL, NULL }
};

int
api_listen(struct api *a, struct ev_loop *loop, const char *path,
    int maxconns)
{
	if ((a->srv = http_server_new(loop, path, api_routes, a,
	    maxconns)) == NULL)
		return -1;
	http_server_map(a->srv, api_bridge_map);
	return 0;
}

struct api *
api_of(struct http_conn *c)
{
	return http_conn_ctx(c);
}

/* ------------------------------------------------------------------ */
/* Shared helpers */

/* The boot a request names (header, then query), or NULL. */
static const char *
api_boot_named(struct http_req *r, char *q, size_t n)
{
	const char	*h;

	if ((h = http_header(r, "Tend-Boot")) == NULL &&
	    http_query(r, "boot", q, n) != 0)
		h = q;
	return h;
}

static bool
api_pinned_elsewhere(struct http_conn *c, struct http_req *r)
{
	const char	*h;
	char		 q[64];

	h = api_boot_named(r, q, sizeof(q));
	return h != NULL && strcmp(h, proctab_boot(api_of(c)->tab)) != 0;
}

int
api_pin(struct http_conn *c, struct http_req *r, bool readonly, int *procsfd)
{
	struct api	*a = api_of(c);
	const char	*h;
	char		 q[64];

	*procsfd = -1;
	h = api_boot_named(r, q, sizeof(q));
	if (h == NULL || strcmp(h, proctab_boot(a->tab)) == 0)
		return 0;
	if (readonly && (*procsfd = boot_open_procs(proctab_statefd(a->tab),
	    h)) != -1)
		return 1;
	http_reply_error(c, 410, "stale_boot", boot_id_valid(h) ?
	    "boot %s is not the current boot" : "boot '%.40s' is not known", h);
	return -1;
}

struct proc *
api_proc(struct http_conn *c, struct http_req *r)
{
	struct proc	*p;

	if ((p = proc_find(api_of(c)->tab, r->param[0])) == NULL)
		http_reply_error(c, 404, "not_found",
		    "no process '%.128s' in this boot", r->param[0]);
	return p;
}

static void
api_reply_status(struct http_conn *c, struct proc *p)
{
	http_reply_json(c, 200, proc_status_json(p));
}

void
api_invalid(struct http_conn *c, const char *field, const char *why)
{
	cJSON	*j = http_error_obj("invalid_request", "%s: %s", field, why);

	cJSON_AddStringToObject(j, "field", field);
	http_reply_json(c, 400, j);
}

bool
api_integer(const cJSON *n, double lo, double hi)
{
	return cJSON_IsNumber(n) && n->valuedouble == floor(n->valuedouble) &&
	    n->valuedouble >= lo && n->valuedouble <= hi;
}

/*
 * Parse the body of POST /v1/processes (and /v1/exec).  Field rules are
 * the bridge's: argv a non-empty array of strings with a non-empty
 * argv[0]; env an object of strings; timeout a positive number of ms.
 */
int
api_launch_opts(struct http_conn *c, cJSON *j, bool exec,
    struct proc_opts *o, char ***argvbuf, char ***envbuf)
{
	const cJSON	*f, *e;
	struct passwd	*pw;
	char		**v, *end;
	int		  n, i;
	long		  uid;

	memset(o, 0, sizeof(*o));
	*argvbuf = *envbuf = NULL;
	o->grace_s = PROC_KILL_GRACE_MS / 1000.0;
	if (!cJSON_IsObject(j)) {
		api_invalid(c, "body", "must be a JSON object");
		return -1;
	}

	f = cJSON_GetObjectItemCaseSensitive(j, "argv");
	if (!cJSON_IsArray(f) || (n = cJSON_GetArraySize(f)) == 0) {
		api_invalid(c, "argv", "must be a non-empty array of strings");
		return -1;
	}
	if (n > PROC_MAX_ARGV) {
		http_reply_error(c, 413, "too_large", "argv: more than %d "
		    "elements", PROC_MAX_ARGV);
		return -1;
	}
	if ((v = calloc(n + 1, sizeof(char *))) == NULL)
		goto nomem;
	*argvbuf = v;
	i = 0;
	cJSON_ArrayForEach(e, f) {
		if (!cJSON_IsString(e)) {
			api_invalid(c, "argv", "every element must be a string");
			return -1;
		}
		v[i++] = e->valuestring;
	}
	if (v[0][0] == '\0') {
		api_invalid(c, "argv", "argv[0] must not be empty");
		return -1;
	}
	o->argv = v;

	if ((f = cJSON_GetObjectItemCaseSensitive(j, "cwd")) != NULL) {
		if (!cJSON_IsString(f) || f->valuestring[0] == '\0') {
			api_invalid(c, "cwd", "must be a non-empty string");
			return -1;
		}
		o->cwd = f->valuestring;
	}

	if ((f = cJSON_GetObjectItemCaseSensitive(j, "env")) != NULL) {
		if (!cJSON_IsObject(f)) {
			api_invalid(c, "env", "must be an object of strings");
			return -1;
		}
		n = cJSON_GetArraySize(f);
		if (n > PROC_MAX_ENV) {
			http_reply_error(c, 413, "too_large", "env: more than "
			    "%d entries", PROC_MAX_ENV);
			return -1;
		}
		if ((v = calloc(n + 1, sizeof(char *))) == NULL)
			goto nomem;
		*envbuf = v;
		i = 0;
		cJSON_ArrayForEach(e, f) {
			if (!cJSON_IsString(e)) {
				api_invalid(c, "env", "values must be strings");
				return -1;
			}
			if (e->string[0] == '\0' || strchr(e->string, '=')) {
				api_invalid(c, "env", "names must be non-empty "
				    "and contain no '='");
				return -1;
			}
			if (asprintf(&v[i], "%s=%s", e->string,
			    e->valuestring) == -1) {
				v[i] = NULL;
				goto nomem;
			}
			i++;
		}
		o->env = v;
	}

	if ((f = cJSON_GetObjectItemCaseSensitive(j, "timeout")) != NULL) {
		if (!cJSON_IsNumber(f) || !(f->valuedouble > 0) ||
		    f->valuedouble > PROC_MS_MAX) {
			api_invalid(c, "timeout", "must be a positive number "
			    "of milliseconds");
			return -1;
		}
		o->timeout_s = f->valuedouble / 1000.0;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "killGrace")) != NULL) {
		if (!cJSON_IsNumber(f) || !(f->valuedouble >= 0) ||
		    f->valuedouble > PROC_MS_MAX) {
			api_invalid(c, "killGrace", "must be a number of "
			    "milliseconds >= 0");
			return -1;
		}
		o->grace_s = f->valuedouble / 1000.0;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "id")) != NULL) {
		if (!cJSON_IsString(f) || !proc_id_valid(f->valuestring)) {
			api_invalid(c, "id", "must match "
			    "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$");
			return -1;
		}
		o->id = f->valuestring;
	}
	if (!exec && (f = cJSON_GetObjectItemCaseSensitive(j, "stdin")) != NULL) {
		if (!cJSON_IsString(f) || (strcmp(f->valuestring, "pipe") != 0 &&
		    strcmp(f->valuestring, "null") != 0)) {
			api_invalid(c, "stdin", "must be \"null\" or \"pipe\"");
			return -1;
		}
		o->stdin_pipe = strcmp(f->valuestring, "pipe") == 0;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "maxLogBytes")) != NULL) {
		if (!api_integer(f, 1, 9007199254740992.0)) {
			api_invalid(c, "maxLogBytes", "must be a positive "
			    "integer");
			return -1;
		}
		o->maxlog = (uint64_t)f->valuedouble;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "tags")) != NULL) {
		cJSON	*tl;
		size_t	 len = 0;

		if (!cJSON_IsObject(f)) {
			api_invalid(c, "tags", "must be an object of strings");
			return -1;
		}
		n = 0;
		cJSON_ArrayForEach(e, f) {
			if (!cJSON_IsString(e)) {
				api_invalid(c, "tags", "values must be strings");
				return -1;
			}
			n++;
			len += strlen(e->string) + strlen(e->valuestring);
		}
		/* Every kept record holds its tags: they are labels, not data. */
		if (n > PROC_MAX_TAGS || len > PROC_MAX_TAGS_BYTES) {
			tl = http_error_obj("too_large", "tags: at most %d "
			    "entries and %d bytes of names and values",
			    PROC_MAX_TAGS, PROC_MAX_TAGS_BYTES);
			cJSON_AddStringToObject(tl, "field", "tags");
			http_reply_json(c, 413, tl);
			return -1;
		}
		o->tags = (cJSON *)f;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "user")) != NULL) {
		pw = NULL;
		if (cJSON_IsString(f) && f->valuestring[0] != '\0') {
			uid = strtol(f->valuestring, &end, 10);
			if (*end == '\0' && uid >= 0)
				pw = getpwuid((uid_t)uid);
			else
				pw = getpwnam(f->valuestring);
		} else if (api_integer(f, 0, 4294967294.0)) {
			uid = (long)f->valuedouble;
			pw = getpwuid((uid_t)uid);
		} else {
			api_invalid(c, "user", "must be a user name or uid");
			return -1;
		}
		if (pw == NULL) {
			api_invalid(c, "user", "no such user");
			return -1;
		}
		o->has_user = true;
		o->uid = pw->pw_uid;
		o->gid = pw->pw_gid;
		/* initgroups wants the name; keep it past getpw*'s buffer. */
		if (snprintf(o->user_name, sizeof(o->user_name), "%s",
		    pw->pw_name) >= (int)sizeof(o->user_name)) {
			api_invalid(c, "user", "user name too long");
			return -1;
		}
		o->user = o->user_name;
	}
	return 0;
nomem:
	http_reply_error(c, 503, "busy", "out of memory");
	return -1;
}

/*
 * Does a JSON text hold "\u0000", or a raw byte below 0x20, inside a
 * string?  cJSON would cut the string at a NUL silently (a NUL cannot
 * reach argv, env or a path), and it takes the raw control bytes that
 * RFC 8259 forbids there.
 */
static bool
api_has_ctl(const char *s, size_t n)
{
	bool	instr = false;
	size_t	i;

	for (i = 0; i < n; i++) {
		if (!instr) {
			instr = s[i] == '"';
			continue;
		}
		if ((unsigned char)s[i] < 0x20)
			return true;
		if (s[i] == '"')
			instr = false;
		else if (s[i] == '\\') {
			if (i + 5 < n && s[i + 1] == 'u' &&
			    strncmp(s + i + 2, "0000", 4) == 0)
				return true;
			if (i + 1 < n && (unsigned char)s[i + 1] < 0x20)
				return true;
			i++;
		}
	}
	return false;
}

cJSON *
api_parse_body(struct http_conn *c, struct http_req *r)
{
	const char	*end = NULL;
	cJSON		*j;

	if (!codec_utf8_valid(r->body.data, r->body.len)) {
		http_reply_error(c, 400, "invalid_request",
		    "body is not valid UTF-8");
		return NULL;
	}
	if (api_has_ctl(r->body.data, r->body.len)) {
		http_reply_error(c, 400, "invalid_request", "strings must not "
		    "contain NUL (\\u0000) or raw control characters");
		return NULL;
	}
	j = cJSON_ParseWithLengthOpts(r->body.data, r->body.len, &end, 0);
	if (j != NULL)
		while (end < r->body.data + r->body.len &&
		    strchr(" \t\r\n", *end) != NULL && *end != '\0')
			end++;
	if (j == NULL || end != r->body.data + r->body.len) {
		cJSON_Delete(j);
		http_reply_error(c, 400, "invalid_request",
		    "body is not valid JSON");
		return NULL;
	}
	return j;
}

void
api_reply_spawn_error(struct http_conn *c, bool spawn_failed, int err,
    const char *id)
{
	cJSON	*j;

	if (spawn_failed) {
		j = http_error_obj("spawn_failed", "spawn failed: %s",
		    strerror(err));
		cJSON_AddStringToObject(j, "errno", codec_errno_name(err));
		http_reply_json(c, 422, j);
	} else if (err == EEXIST)
		http_reply_error(c, 409, "id_taken", "id '%s' is already "
		    "taken in this boot", id ? id : "");
	else if (err == EAGAIN)
		http_reply_error(c, 503, "busy", "process limit reached or "
		    "fork failed; try again");
	else if (err == EMFILE || err == ENFILE || err == ENOMEM ||
	    err == ENOSPC || err == EDQUOT)
		http_reply_error(c, 503, "busy", "cannot launch now: %s",
		    strerror(err));
	else
		http_reply_error(c, 500, "internal", "cannot launch: %s",
		    strerror(err));
}

static void
api_free_vec(char **argv, char **env)
{
	size_t	i;

	free(argv);
	for (i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
}

/* ------------------------------------------------------------------ */
/* Handlers */

/*
 * "state":"ok", or "degraded" with why, while the state dir refuses what
 * the agent must write (see proctab_state_error).
 */
static void
api_health_state(cJSON *j, struct proctab *t)
{
	cJSON	*d;
	bool	 bootdir;
	int	 err, pending;

	if ((err = proctab_state_error(t, &bootdir, &pending)) == 0) {
		cJSON_AddStringToObject(j, "state", "ok");
		return;
	}
	cJSON_AddStringToObject(j, "state", "degraded");
	d = cJSON_AddObjectToObject(j, "degraded");
	cJSON_AddStringToObject(d, "reason", "state_dir_unwritable");
	cJSON_AddStringToObject(d, "error", strerror(err));
	cJSON_AddBoolToObject(d, "bootDir", bootdir);
	cJSON_AddNumberToObject(d, "pendingWrites", pending);
}

static void
api_health(struct http_conn *c, struct http_req *r)
{
	struct api		*a = api_of(c);
	struct proctab_stats	 st;
	cJSON			*j, *p;

	(void)r;
	proctab_stats(a->tab, &st);
	j = cJSON_CreateObject();
	/* "status" is liveness (the agent answers); "state" is storage. */
	cJSON_AddStringToObject(j, "status", "ok");
	api_health_state(j, a->tab);
	cJSON_AddStringToObject(j, "bootId", proctab_boot(a->tab));
	cJSON_AddStringToObject(j, "version", TEND_VERSION);
	cJSON_AddNumberToObject(j, "apiVersion", TEND_API_VERSION);
	cJSON_AddNumberToObject(j, "pid", getpid());
	cJSON_AddNumberToObject(j, "uptimeMs",
	    (double)(codec_mono_ms() - a->started_mono));
	p = cJSON_AddObjectToObject(j, "processes");
	cJSON_AddNumberToObject(p, "running", st.running);
	cJSON_AddNumberToObject(p, "total", st.kept);
	cJSON_AddNumberToObject(j, "terminals", 0);
	shimctl_health(j);
	http_reply_json(c, 200, j);
}

static void
api_launch(struct http_conn *c, struct http_req *r)
{
	struct proc_opts	 o;
	struct proc		*p;
	char			**argv, **env;
	cJSON			*j;
	bool			 failed;
	int			 fd, err;

	if (api_pin(c, r, false, &fd) != 0)
		return;
	if ((j = api_parse_body(c, r)) == NULL)
		return;
	if (api_launch_opts(c, j, false, &o, &argv, &env) == 0) {
		p = proc_spawn(api_of(c)->tab, &o, &failed, &err);
		if (p == NULL)
			api_reply_spawn_error(c, failed, err, o.id);
		else
			api_reply_status(c, p);
	}
	api_free_vec(argv, env);
	cJSON_Delete(j);
}

static void
api_list(struct http_conn *c, struct http_req *r)
{
	struct proc	*p;
	char		 want[16];
	cJSON		*a;
	int		 fd, pinned;

	if ((pinned = api_pin(c, r, true, &fd)) == -1)
		return;
	switch (http_query(r, "state", want, sizeof(want))) {
	case 0:
		want[0] = '\0';
		break;
	case 1:
		if (strcmp(want, "running") == 0 || strcmp(want, "exited") == 0 ||
		    strcmp(want, "error") == 0)
			break;
		/* FALLTHROUGH */
	default:
		api_invalid(c, "state", "must be running, exited or error");
		return;
	}
	if (pinned == 1) {
		http_reply_json(c, 200, record_list(fd, want));
		close(fd);
		return;
	}
	a = cJSON_CreateArray();
	for (p = proctab_first(api_of(c)->tab); p != NULL; p = proc_next(p))
		if (want[0] == '\0' ||
		    strcmp(want, proc_state_name(proc_state(p))) == 0)
			cJSON_AddItemToArray(a, proc_status_json(p));
	http_reply_json(c, 200, a);
}

static void
api_status(struct http_conn *c, struct http_req *r)
{
	struct proc	*p;
	char		*s;
	size_t		 len;
	int		 fd;

	switch (api_pin(c, r, true, &fd)) {
	case 0:
		if ((p = api_proc(c, r)) != NULL)
			api_reply_status(c, p);
		return;
	case 1:
		/* An earlier boot: its last status, as written. */
		if (proc_id_valid(r->param[0]) &&
		    (s = record_status_text(fd, r->param[0], &len)) != NULL) {
			http_reply(c, 200, "application/json", s, len);
			free(s);
		} else
			http_reply_error(c, 404, "not_found", "no process "
			    "'%.128s' in that boot", r->param[0]);
		close(fd);
		return;
	}
}

static void
api_kill(struct http_conn *c, struct http_req *r)
{
	struct proc	*p;
	const cJSON	*f;
	cJSON		*j = NULL;
	bool		 group = true;
	int		 sig = SIGTERM, fd;

	if (api_pin(c, r, false, &fd) != 0)
		return;
	if (r->body.len > 0) {
		if ((j = api_parse_body(c, r)) == NULL)
			return;
		if (!cJSON_IsObject(j)) {
			api_invalid(c, "body", "must be a JSON object");
			goto out;
		}
		if ((f = cJSON_GetObjectItemCaseSensitive(j, "signal")) != NULL) {
			if (!api_integer(f, 1, 64)) {
				api_invalid(c, "signal", "must be an integer "
				    "from 1 to 64");
				goto out;
			}
			sig = (int)f->valuedouble;
		}
		if ((f = cJSON_GetObjectItemCaseSensitive(j, "group")) != NULL) {
			if (!cJSON_IsBool(f)) {
				api_invalid(c, "group", "must be a boolean");
				goto out;
			}
			group = cJSON_IsTrue(f);
		}
	}
	if ((p = api_proc(c, r)) == NULL)
		goto out;
	if (proc_kill(p, sig, group) == -1) {
		if (errno == ESRCH)
			http_reply_error(c, 409, "not_running",
			    "process '%s' is not running", proc_id(p));
		else
			http_reply_error(c, 403, "forbidden", "kill: %s",
			    strerror(errno));
		goto out;
	}
	log_info("event=process_signalled id=%s signal=%d group=%d",
	    proc_id(p), sig, group);
	http_reply(c, 204, NULL, NULL, 0);
out:
	cJSON_Delete(j);
}

/*
 * Stdin bodies are streamed into the process's pipe buffer as they
 * arrive.  The queue is bounded across requests, not only within one: a
 * writer whose bytes leave it above PROC_STDIN_HIGH is held until the
 * process has taken half of it — mid-body its reading pauses, after its
 * body its reply waits — and while one is held, other writers are
 * refused.  A client sending one request after another is so paced like
 * one long body, and the queue holds at most the bound and one read.
 */

/* The connection of a held writer closed: the process forgets it. */
static void
api_stdin_closed(struct http_conn *c, void *owner)
{
	(void)c;
	proc_stdin_unhold(owner);
}

/* Held mid-body: read on; the rest of the body learns what happened. */
static void
api_stdin_resume(struct proc *p, void *writer, int err)
{
	struct http_conn	*c = writer;

	(void)p;
	(void)err;
	http_conn_own(c, NULL, NULL, NULL);
	http_conn_resume_read(c);
}

/* Held after its body: the reply it was waiting for. */
static void
api_stdin_answer(struct proc *p, void *writer, int err)
{
	struct http_conn	*c = writer;

	http_conn_own(c, NULL, NULL, NULL);
	if (err == ENOENT)
		http_reply_error(c, 404, "not_found", "the process was removed");
	else if (err != 0)
		http_reply_error(c, 409, "conflict", "stdin of '%s' was closed "
		    "before the queued bytes were written", proc_id(p));
	else
		http_reply(c, 204, NULL, NULL, 0);
}

/* -1 (EBUSY) while another writer is held. */
static int
api_stdin_hold(struct proc *p, struct http_conn *c,
    void (*wake)(struct proc *, void *, int))
{
	if (proc_stdin_hold(p, c, wake) == -1)
		return -1;
	http_conn_own(c, p, NULL, api_stdin_closed);
	return 0;
}

static void
api_stdin_body(struct http_conn *c, struct http_req *r, const char *d,
    size_t n)
{
	struct proc	*p;

	if (r->body_error)
		return;
	if (api_pinned_elsewhere(c, r)) {
		r->body_error = 410;
		return;
	}
	if ((p = proc_find(api_of(c)->tab, r->param[0])) == NULL) {
		r->body_error = 404;
		return;
	}
	if (!proc_stdin_open(p)) {
		r->body_error = 409;
		return;
	}
	/*
	 * While another request is held (the queue is full), this one is
	 * refused before any of its bytes are queued: nothing of a refused
	 * body reaches the process, and the queue does not grow.
	 */
	if (proc_stdin_writer(p) != NULL && proc_stdin_writer(p) != c) {
		r->body_error = r->streamed == 0 ? API_STDIN_BUSY :
		    API_STDIN_BUSY_PART;
		return;
	}
	if (proc_stdin(p, d, n, false) == -1) {
		r->body_error = 409;
		return;
	}
	if (proc_stdin_full(p) && api_stdin_hold(p, c, api_stdin_resume) == 0)
		http_conn_pause_read(c);
}

static void
api_stdin(struct http_conn *c, struct http_req *r)
{
	struct proc	*p;
	int		 fd, close_after;

	if (api_pin(c, r, false, &fd) != 0 || (p = api_proc(c, r)) == NULL)
		return;
	if (proc_stdin_writer(p) == c) {
		proc_stdin_unhold(p);
		api_stdin_resume(p, c, 0);
	}
	close_after = http_query_bool(r, "close", 0);
	if (close_after == -1) {
		api_invalid(c, "close", "must be 1, true, 0 or false");
		return;
	}
	if (r->body_error == API_STDIN_BUSY ||
	    r->body_error == API_STDIN_BUSY_PART) {
		http_reply_error(c, 409, "conflict", "stdin of '%s' is busy with "
		    "another request; %s", proc_id(p),
		    r->body_error == API_STDIN_BUSY ? "nothing of this body was "
		    "written" : "only the start of this body was written");
		return;
	}
	if (r->body_error != 0 || !proc_stdin_piped(p) || !proc_stdin_open(p)) {
		http_reply_error(c, 409, "conflict", proc_stdin_piped(p) ?
		    "stdin of '%s' is closed" : "process '%s' was not started "
		    "with stdin \"pipe\"", proc_id(p));
		return;
	}
	if (close_after && proc_stdin(p, "", 0, true) == -1) {
		http_reply_error(c, 409, "conflict", "stdin of '%s' is closed",
		    proc_id(p));
		return;
	}
	/* Its bytes left the queue full: the reply waits for room. */
	if (r->streamed > 0 && proc_stdin_full(p) &&
	    api_stdin_hold(p, c, api_stdin_answer) == 0)
		return;
	http_reply(c, 204, NULL, NULL, 0);
}

/*
 * A waiter holds a wait request until the process leaves "running" or the
 * wait times out; either way the reply is the status at that moment.
 */
struct api_waiter {
	struct proc_watch	 w;
	ev_timer		 timer;
	struct http_conn	*c;
	struct ev_loop		*loop;
};

static void
api_waiter_free(struct api_waiter *wt)
{
	proc_watch_del(&wt->w);
	ev_timer_stop(wt->loop, &wt->timer);
	free(wt);
}

static void
api_waiter_done(struct api_waiter *wt, struct proc *p)
{
	struct http_conn	*c = wt->c;

	http_conn_own(c, NULL, NULL, NULL);
	api_waiter_free(wt);
	if (p != NULL)
		api_reply_status(c, p);
	else
		http_reply_error(c, 404, "not_found", "the process was removed");
}

static void
api_waiter_event(struct proc_watch *w, enum proc_event ev)
{
	struct api_waiter	*wt = container_of(w, struct api_waiter, w);

	if (ev == PROC_EV_END)
		api_waiter_done(wt, w->proc);
	else if (ev == PROC_EV_GONE)
		api_waiter_done(wt, NULL);
}

static void
api_waiter_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct api_waiter	*wt = container_of(t, struct api_waiter, timer);

	(void)loop;
	(void)revents;
	api_waiter_done(wt, wt->w.proc);
}

static void
api_waiter_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_waiter_free(owner);
}

static void
api_wait(struct http_conn *c, struct http_req *r)
{
	struct api_waiter	*wt;
	struct proc		*p;
	uint64_t		 ms = 0;
	int			 fd;

	if (api_pin(c, r, false, &fd) != 0)
		return;
	if (http_query_u64(r, "timeout", &ms) == -1 || ms > PROC_MS_MAX) {
		api_invalid(c, "timeout", "must be a number of milliseconds");
		return;
	}
	if ((p = api_proc(c, r)) == NULL)
		return;
	if (proc_ended(p, PROC_END_STATE)) {
		api_reply_status(c, p);
		return;
	}
	if ((wt = calloc(1, sizeof(*wt))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	wt->c = c;
	wt->loop = proctab_loop(api_of(c)->tab);
	proc_watch_add(p, &wt->w, api_waiter_event);
	ev_timer_init(&wt->timer, api_waiter_timer, ms / 1000.0, 0.);
	if (ms > 0)
		ev_timer_start(wt->loop, &wt->timer);
	http_conn_own(c, wt, NULL, api_waiter_closed);
}

static void
api_delete(struct http_conn *c, struct http_req *r)
{
	struct proc	*p;
	int		 fd, force;

	if (api_pin(c, r, false, &fd) != 0 || (p = api_proc(c, r)) == NULL)
		return;
	if ((force = http_query_bool(r, "force", 0)) == -1) {
		api_invalid(c, "force", "must be 1, true, 0 or false");
		return;
	}
	if (!proc_ended(p, PROC_END_STATE) && !force) {
		http_reply_error(c, 409, "conflict", "process '%s' is running; "
		    "kill it first or use ?force=1", proc_id(p));
		return;
	}
	/* Files that cannot be removed keep the record (and its group). */
	if (proc_delete(p) == -1) {
		http_reply_error(c, 500, "internal", "cannot remove the files "
		    "of '%s': %s; the record is kept", proc_id(p),
		    strerror(errno));
		return;
	}
	http_reply(c, 204, NULL, NULL, 0);
}
