/*
 * api.c: the route table (the modules' tables, joined: the route modules
 * call down into this file, never the other way), the server it is
 * served by, and the helpers the route modules share: errors as values,
 * the boot a request is pinned to, the process it names, the launch body
 * and the JSON body.  No route's handler lives here.
 */
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base/codec.h"
#include "base/util.h"
#include "store/boot.h"
#include "sys/cgroup.h"
#include "sys/user.h"

static struct http_route	api_routes[API_ROUTES_MAX + 1];
static struct http_route	api_ns_routes[API_ROUTES_MAX + 1];
static bool			(*api_ns_rewrite)(char **);

static const struct http_route *api_map(void *, char **);

/* The modules' tables, joined into one; -1 if they do not fit. */
static int
api_join(struct http_route *out, const struct http_route *const *modules)
{
	const struct http_route	*rt;
	size_t			 n = 0;

	for (; *modules != NULL; modules++)
		for (rt = *modules; rt->method != NULL; rt++) {
			if (n == API_ROUTES_MAX) {
				errno = E2BIG;
				return -1;
			}
			out[n++] = *rt;
		}
	memset(&out[n], 0, sizeof(out[n]));
	return 0;
}

/* A listening socket handed over (api_listen_handed), or -1. */
static int api_handed_fd = -1;

void
api_listen_handed(int fd)
{
	api_handed_fd = fd;
}

int
api_listen(struct api *a, struct ev_loop *loop, const char *path,
    int maxconns, const struct http_route *const *modules,
    const struct api_ns *ns)
{
	if (api_join(api_routes, modules) == -1 ||
	    (ns != NULL && api_join(api_ns_routes, ns->routes) == -1))
		return -1;
	if (api_handed_fd != -1)
		a->srv = http_server_new_fd(loop, api_handed_fd, api_routes, a,
		    maxconns);
	else
		a->srv = http_server_new(loop, path, api_routes, a, maxconns);
	if (a->srv == NULL)
		return -1;
	if (ns != NULL) {
		api_ns_rewrite = ns->rewrite;
		http_server_map(a->srv, api_map);
	}
	return 0;
}

/* The second namespace's routes for its paths, rewritten. */
static const struct http_route *
api_map(void *ctx, char **path)
{
	(void)ctx;
	return api_ns_rewrite(path) ? api_ns_routes : NULL;
}

struct api *
api_of(struct http_conn *c)
{
	return http_conn_ctx(c);
}

/* ------------------------------------------------------------------ */
/* Errors as values */

void
api_err_set(struct api_err *e, int status, const char *code,
    const char *field, const char *fmt, ...)
{
	va_list	ap;

	e->status = status;
	e->code = code;
	e->field = field;
	va_start(ap, fmt);
	(void)vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

void
api_err_invalid(struct api_err *e, const char *field, const char *why)
{
	api_err_set(e, 400, "invalid_request", field, "%s: %s", field, why);
}

void
api_err_nomem(struct api_err *e)
{
	api_err_set(e, 503, "busy", NULL, "out of memory");
}

void
api_reply_err(struct http_conn *c, const struct api_err *e)
{
	cJSON	*j = http_error_obj(e->code, "%s", e->message);

	if (e->field != NULL)
		cJSON_AddStringToObject(j, "field", e->field);
	http_reply_json(c, e->status, j);
}

/* ------------------------------------------------------------------ */
/* What a request names */

const char *
api_boot_named(struct http_req *r, char *q, size_t n)
{
	const char	*h;

	if ((h = http_header(r, "Tend-Boot")) == NULL &&
	    http_query(r, "boot", q, n) != 0)
		h = q;		/* one too long for q reads as "": unknown */
	return h;
}

int
api_pin(struct api *a, struct http_req *r, bool readonly, int *procsfd,
    struct api_err *e)
{
	const char	*h;
	char		 q[API_BOOT_Q_MAX];

	*procsfd = -1;
	h = api_boot_named(r, q, sizeof(q));
	if (h == NULL || strcmp(h, proctab_boot(a->tab)) == 0)
		return 0;
	if (readonly && (*procsfd = boot_open_procs(proctab_statefd(a->tab),
	    h)) != -1)
		return 1;
	api_err_set(e, 410, "stale_boot", NULL, boot_id_valid(h) ?
	    "boot %s is not the current boot" : "boot '%.40s' is not known", h);
	return -1;
}

struct proc *
api_proc(struct api *a, struct http_req *r, struct api_err *e)
{
	struct proc	*p;

	if ((p = proc_find(a->tab, r->param[0])) == NULL)
		api_err_set(e, 404, "not_found", NULL,
		    "no process '%.128s' in this boot", r->param[0]);
	return p;
}

bool
api_integer(const cJSON *n, double lo, double hi)
{
	return cJSON_IsNumber(n) && n->valuedouble == floor(n->valuedouble) &&
	    n->valuedouble >= lo && n->valuedouble <= hi;
}

int
api_query_flag(struct http_req *r, const char *key, int dflt, int *v,
    struct api_err *e)
{
	if ((*v = http_query_bool(r, key, dflt)) == -1) {
		api_err_invalid(e, key, "must be 1, true, 0 or false");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The launch body */

/* A NULL-ended vector for n strings: NULL with 413 above max, or 503. */
static char **
api_vec_new(int n, int max, const char *name, const char *unit,
    struct api_err *e)
{
	char	**v;

	if (n > max) {
		api_err_set(e, 413, "too_large", NULL, "%s: more than %d %s",
		    name, max, unit);
		return NULL;
	}
	if ((v = calloc(n + 1, sizeof(char *))) == NULL)
		api_err_nomem(e);
	return v;
}

/* argv: a non-empty array of strings with a non-empty argv[0]. */
static int
api_opt_argv(const cJSON *j, struct proc_opts *o, char ***argvbuf,
    struct api_err *e)
{
	const cJSON	*f, *el;
	char		**v;
	int		  n, i = 0;

	f = cJSON_GetObjectItemCaseSensitive(j, "argv");
	if (!cJSON_IsArray(f) || (n = cJSON_GetArraySize(f)) == 0) {
		api_err_invalid(e, "argv", "must be a non-empty array of strings");
		return -1;
	}
	if ((*argvbuf = v = api_vec_new(n, PROC_MAX_ARGV, "argv",
	    "elements", e)) == NULL)
		return -1;
	cJSON_ArrayForEach(el, f) {
		if (!cJSON_IsString(el)) {
			api_err_invalid(e, "argv", "every element must be a string");
			return -1;
		}
		v[i++] = el->valuestring;
	}
	if (v[0][0] == '\0') {
		api_err_invalid(e, "argv", "argv[0] must not be empty");
		return -1;
	}
	o->argv = v;
	return 0;
}

/* env: an object of strings, each name non-empty and without '='. */
static int
api_opt_env(const cJSON *f, struct proc_opts *o, char ***envbuf,
    struct api_err *e)
{
	const cJSON	*el;
	char		**v;
	int		  n, i = 0;

	if (!cJSON_IsObject(f)) {
		api_err_invalid(e, "env", "must be an object of strings");
		return -1;
	}
	n = cJSON_GetArraySize(f);
	if ((*envbuf = v = api_vec_new(n, PROC_MAX_ENV, "env", "entries",
	    e)) == NULL)
		return -1;
	cJSON_ArrayForEach(el, f) {
		if (!cJSON_IsString(el)) {
			api_err_invalid(e, "env", "values must be strings");
			return -1;
		}
		if (el->string[0] == '\0' || strchr(el->string, '=')) {
			api_err_invalid(e, "env", "names must be non-empty "
			    "and contain no '='");
			return -1;
		}
		if (asprintf(&v[i], "%s=%s", el->string,
		    el->valuestring) == -1) {
			v[i] = NULL;
			api_err_nomem(e);
			return -1;
		}
		i++;
	}
	o->env = v;
	return 0;
}

/* tags: an object of strings, bounded: they are labels, not data. */
static int
api_opt_tags(const cJSON *f, struct proc_opts *o, struct api_err *e)
{
	const cJSON	*el;
	size_t		 len = 0;
	int		 n = 0;

	if (!cJSON_IsObject(f)) {
		api_err_invalid(e, "tags", "must be an object of strings");
		return -1;
	}
	cJSON_ArrayForEach(el, f) {
		if (!cJSON_IsString(el)) {
			api_err_invalid(e, "tags", "values must be strings");
			return -1;
		}
		n++;
		len += strlen(el->string) + strlen(el->valuestring);
	}
	/* Every kept record holds its tags. */
	if (n > PROC_MAX_TAGS || len > PROC_MAX_TAGS_BYTES) {
		api_err_set(e, 413, "too_large", "tags", "tags: at most %d "
		    "entries and %d bytes of names and values",
		    PROC_MAX_TAGS, PROC_MAX_TAGS_BYTES);
		return -1;
	}
	o->tags = (cJSON *)f;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Confinement: launch, exec and terminals */

/*
 * user: a name, a uid or "uid:gid" (string), or a uid (number); a
 * numeric one needs no passwd entry.  Absent: defuser, if any.
 */
static int
api_opt_user(const cJSON *j, const char *defuser, struct api_confine *c,
    struct api_err *e)
{
	const cJSON	*f;
	struct user_id	 u;
	int		 rc;

	f = cJSON_GetObjectItemCaseSensitive(j, "user");
	if (f == NULL && defuser == NULL)
		return 0;
	if (f == NULL)
		rc = user_parse(NULL, defuser, &u);
	else if (cJSON_IsString(f))
		rc = user_parse(NULL, f->valuestring, &u);
	else if (api_integer(f, 0, API_UID_MAX))
		rc = user_by_uid(NULL, (uid_t)f->valuedouble, &u);
	else
		rc = -1, errno = EINVAL;
	if (rc == -1) {
		api_err_invalid(e, "user", errno == ENOENT ? "no such user" :
		    errno == EINVAL ? "must be a user name, uid or uid:gid" :
		    strerror(errno));
		return -1;
	}
	c->has_user = true;
	c->uid = u.uid;
	c->gid = u.gid;
	memcpy(c->user, u.name, sizeof(c->user));
	return 0;
}

/* "rlimits": {"nofile","nproc","as","cpu","fsize"}, whole numbers >= 0. */
static int
api_opt_rlimits(const cJSON *f, struct spawn_confine *sc, struct api_err *e)
{
	const cJSON	*el;
	int		 i;

	if (!cJSON_IsObject(f)) {
		api_err_invalid(e, "rlimits", "must be an object of numbers");
		return -1;
	}
	cJSON_ArrayForEach(el, f) {
		for (i = 0; i < SPAWN_NRLIM; i++)
			if (strcmp(el->string, spawn_rlimit_names[i]) == 0)
				break;
		if (i == SPAWN_NRLIM) {
			api_err_set(e, 400, "invalid_request", "rlimits",
			    "rlimits: unknown limit '%.64s' (nofile, nproc, "
			    "as, cpu, fsize)", el->string);
			return -1;
		}
		if (!api_integer(el, 0, API_RLIMIT_MAX)) {
			api_err_set(e, 400, "invalid_request", "rlimits",
			    "rlimits: %s must be a whole number >= 0",
			    el->string);
			return -1;
		}
		sc->has_rlim[i] = true;
		sc->rlim[i] = (rlim_t)el->valuedouble;
	}
	return 0;
}

/* "noNewPrivs", "seccomp", "network", "rlimits". */
static int
api_opt_confine(const cJSON *j, struct spawn_confine *sc, struct api_err *e)
{
	const cJSON	*f;

	if ((f = cJSON_GetObjectItemCaseSensitive(j, "noNewPrivs")) != NULL) {
		if (!cJSON_IsBool(f)) {
			api_err_invalid(e, "noNewPrivs", "must be a boolean");
			return -1;
		}
		sc->nonewprivs = cJSON_IsTrue(f);
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "seccomp")) != NULL) {
		if (!cJSON_IsString(f) || strcmp(f->valuestring, "default")) {
			api_err_invalid(e, "seccomp", "must be \"default\"");
			return -1;
		}
		sc->seccomp = true;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "network")) != NULL) {
		if (!cJSON_IsString(f) || strcmp(f->valuestring, "none")) {
			api_err_invalid(e, "network", "must be \"none\"");
			return -1;
		}
		sc->nonet = true;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "rlimits")) != NULL &&
	    api_opt_rlimits(f, sc, e) == -1)
		return -1;
	return 0;
}

/*
 * "limits": {"memory","memoryHigh","pids","cpu"}: bytes, a count and a
 * fraction of CPUs, each > 0.  A limit whose controller the records do
 * not get is refused (422), never dropped.
 */
static int
api_opt_limits(const cJSON *f, struct cgroup_limits *l, struct api_err *e)
{
	const cJSON	*el;
	const char	*miss;

	if (!cJSON_IsObject(f)) {
		api_err_invalid(e, "limits", "must be an object of numbers");
		return -1;
	}
	cJSON_ArrayForEach(el, f) {
		if (strcmp(el->string, "cpu") == 0) {
			if (!cJSON_IsNumber(el) ||
			    !(el->valuedouble >= API_CPUS_MIN) ||
			    el->valuedouble > API_CPUS_MAX) {
				api_err_invalid(e, "limits", "limits: cpu must "
				    "be a number of CPUs from 0.01 to 4096");
				return -1;
			}
			l->cpu = el->valuedouble;
			continue;
		}
		if (strcmp(el->string, "memory") != 0 &&
		    strcmp(el->string, "memoryHigh") != 0 &&
		    strcmp(el->string, "pids") != 0) {
			api_err_set(e, 400, "invalid_request", "limits",
			    "limits: unknown limit '%.64s' (memory, memoryHigh, "
			    "pids, cpu)", el->string);
			return -1;
		}
		if (!api_integer(el, 1, API_RLIMIT_MAX)) {
			api_err_set(e, 400, "invalid_request", "limits",
			    "limits: %s must be a whole number > 0",
			    el->string);
			return -1;
		}
		if (strcmp(el->string, "memory") == 0)
			l->memory = (int64_t)el->valuedouble;
		else if (strcmp(el->string, "memoryHigh") == 0)
			l->memory_high = (int64_t)el->valuedouble;
		else
			l->pids = (int64_t)el->valuedouble;
	}
	if ((miss = cgroups_lacks(l)) != NULL) {
		api_err_set(e, 422, "limits_unavailable", "limits",
		    "the %s controller is not available to the agent's "
		    "records (%s)", miss, cgroups_on() ? "not offered by "
		    "the cgroup the agent runs in" : cgroups_reason());
		return -1;
	}
	return 0;
}

int
api_confine_opts(const cJSON *j, const char *defuser, struct api_confine *c,
    struct api_err *e)
{
	const cJSON	*f;

	memset(c, 0, sizeof(*c));
	if (api_opt_user(j, defuser, c, e) == -1)
		return -1;
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "limits")) != NULL &&
	    !cJSON_IsNull(f) && api_opt_limits(f, &c->limits, e) == -1)
		return -1;
	return api_opt_confine(j, &c->sc, e);
}

/* ------------------------------------------------------------------ */
/* The launch body, continued */

/* A time in ms: > 0 (timeout) or >= 0 (killGrace), at most PROC_MS_MAX. */
static int
api_opt_ms(const cJSON *j, const char *name, bool zero, double *s,
    const char *why, struct api_err *e)
{
	const cJSON	*f;

	if ((f = cJSON_GetObjectItemCaseSensitive(j, name)) == NULL)
		return 0;
	if (!cJSON_IsNumber(f) || !(zero ? f->valuedouble >= 0 :
	    f->valuedouble > 0) || f->valuedouble > PROC_MS_MAX) {
		api_err_invalid(e, name, why);
		return -1;
	}
	*s = f->valuedouble / 1000.0;
	return 0;
}

static int
api_opt_cwd(const cJSON *j, struct proc_opts *o, struct api_err *e)
{
	const cJSON	*f;

	if ((f = cJSON_GetObjectItemCaseSensitive(j, "cwd")) == NULL)
		return 0;
	if (!cJSON_IsString(f) || f->valuestring[0] == '\0') {
		api_err_invalid(e, "cwd", "must be a non-empty string");
		return -1;
	}
	o->cwd = f->valuestring;
	return 0;
}

/* The scalar fields: id, stdin (a mode, not for exec), maxLogBytes. */
static int
api_opt_scalars(const cJSON *j, bool exec, struct proc_opts *o,
    struct api_err *e)
{
	const cJSON	*f;

	if ((f = cJSON_GetObjectItemCaseSensitive(j, "id")) != NULL) {
		if (!cJSON_IsString(f) || !proc_id_valid(f->valuestring)) {
			api_err_invalid(e, "id", "must match "
			    "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$");
			return -1;
		}
		o->id = f->valuestring;
	}
	if (!exec && (f = cJSON_GetObjectItemCaseSensitive(j, "stdin")) != NULL) {
		if (!cJSON_IsString(f) || (strcmp(f->valuestring, "pipe") != 0 &&
		    strcmp(f->valuestring, "null") != 0)) {
			api_err_invalid(e, "stdin", "must be \"null\" or \"pipe\"");
			return -1;
		}
		o->stdin_pipe = strcmp(f->valuestring, "pipe") == 0;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "maxLogBytes")) != NULL) {
		if (!api_integer(f, 1, API_MAXLOG_MAX)) {
			api_err_invalid(e, "maxLogBytes", "must be a positive "
			    "integer");
			return -1;
		}
		o->maxlog = (uint64_t)f->valuedouble;
	}
	return 0;
}

/* "ready" (core/ready): its message names the field within. */
static int
api_opt_ready(const cJSON *f, struct proc_opts *o, struct api_err *e)
{
	const char	*why;

	if (ready_opts_parse(f, &o->ready, &why) == 0)
		return 0;
	api_err_set(e, 400, "invalid_request", "ready", "%s", why);
	return -1;
}

/*
 * "restart": {"policy","maxRestarts","backoffMs","maxBackoffMs"}, a
 * record's (not exec's: its reply is its one run).
 */
static int
api_opt_restart(const cJSON *j, bool exec, struct proc_opts *o,
    struct api_err *e)
{
	static const char *const names[] = { "no", "on-failure", "always" };
	struct proc_restart_opts *r = &o->restart;
	const cJSON	*f, *v;
	size_t		 i;

	r->max = -1;
	r->backoff_s = RESTART_BACKOFF_MS / 1000.0;
	r->max_backoff_s = RESTART_MAX_BACKOFF_MS / 1000.0;
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "restart")) == NULL)
		return 0;
	if (exec) {
		api_err_invalid(e, "restart", "is for a record (POST "
		    "/v1/processes), not exec");
		return -1;
	}
	v = cJSON_GetObjectItemCaseSensitive(f, "policy");
	for (i = 0; cJSON_IsString(v) && i < nitems(names); i++)
		if (strcmp(v->valuestring, names[i]) == 0)
			break;
	if (!cJSON_IsObject(f) || !cJSON_IsString(v) || i == nitems(names)) {
		api_err_invalid(e, "restart", "must be an object with a "
		    "\"policy\": \"no\", \"on-failure\" or \"always\"");
		return -1;
	}
	r->policy = (enum proc_policy)i;
	if ((v = cJSON_GetObjectItemCaseSensitive(f, "maxRestarts")) != NULL) {
		if (!api_integer(v, 0, INT_MAX)) {
			api_err_invalid(e, "restart", "maxRestarts must be an "
			    "integer >= 0");
			return -1;
		}
		r->max = (int)v->valuedouble;
	}
	if (api_opt_ms(f, "backoffMs", true, &r->backoff_s, "must be a "
	    "number of milliseconds >= 0", e) == -1 ||
	    api_opt_ms(f, "maxBackoffMs", true, &r->max_backoff_s, "must be a "
	    "number of milliseconds >= 0", e) == -1)
		return -1;
	if (r->max_backoff_s < r->backoff_s)
		r->max_backoff_s = r->backoff_s;
	return 0;
}

/*
 * The body of POST /v1/processes (and /v1/exec).  Field rules are the
 * bridge's; the fields are checked in the order they always were, so a
 * body with several faults is refused for the same one.
 */
int
api_launch_opts(const cJSON *j, bool exec, const char *defuser,
    struct proc_opts *o, char ***argvbuf, char ***envbuf, struct api_err *e)
{
	struct api_confine	 c;
	const cJSON		*f;

	memset(o, 0, sizeof(*o));
	*argvbuf = *envbuf = NULL;
	o->grace_s = PROC_KILL_GRACE_MS / 1000.0;
	if (!cJSON_IsObject(j)) {
		api_err_invalid(e, "body", "must be a JSON object");
		return -1;
	}
	if (api_opt_argv(j, o, argvbuf, e) == -1)
		return -1;
	if (api_opt_cwd(j, o, e) == -1)
		return -1;
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "env")) != NULL &&
	    api_opt_env(f, o, envbuf, e) == -1)
		return -1;
	if (api_opt_ms(j, "timeout", false, &o->timeout_s, "must be a "
	    "positive number of milliseconds", e) == -1 ||
	    api_opt_ms(j, "killGrace", true, &o->grace_s, "must be a number "
	    "of milliseconds >= 0", e) == -1)
		return -1;
	if (api_opt_scalars(j, exec, o, e) == -1)
		return -1;
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "tags")) != NULL &&
	    api_opt_tags(f, o, e) == -1)
		return -1;
	if (api_opt_restart(j, exec, o, e) == -1)
		return -1;
	if (!exec && (f = cJSON_GetObjectItemCaseSensitive(j, "ready")) !=
	    NULL && api_opt_ready(f, o, e) == -1)
		return -1;
	if (api_confine_opts(j, defuser, &c, e) == -1)
		return -1;
	o->has_user = c.has_user;
	o->uid = c.uid;
	o->gid = c.gid;
	memcpy(o->user_name, c.user, sizeof(o->user_name));
	o->user = o->user_name[0] != '\0' ? o->user_name : NULL;
	o->confine = c.sc;
	o->limits = c.limits;
	return 0;
}

void
api_launch_free(char **argv, char **env)
{
	size_t	i;

	free(argv);
	for (i = 0; env != NULL && env[i] != NULL; i++)
		free(env[i]);
	free(env);
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
api_parse_body(const char *d, size_t n, struct api_err *e)
{
	const char	*end = NULL;
	cJSON		*j;

	if (!codec_utf8_valid(d, n)) {
		api_err_set(e, 400, "invalid_request", NULL,
		    "body is not valid UTF-8");
		return NULL;
	}
	if (api_has_ctl(d, n)) {
		api_err_set(e, 400, "invalid_request", NULL, "strings must not "
		    "contain NUL (\\u0000) or raw control characters");
		return NULL;
	}
	j = cJSON_ParseWithLengthOpts(d, n, &end, 0);
	if (j != NULL)
		while (end < d + n && strchr(" \t\r\n", *end) != NULL &&
		    *end != '\0')
			end++;
	if (j == NULL || end != d + n) {
		cJSON_Delete(j);
		api_err_set(e, 400, "invalid_request", NULL,
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
	} else if (err == EOPNOTSUPP)
		http_reply_error(c, 422, "isolation_unavailable", "the agent "
		    "cannot confine the process as asked (network namespace or "
		    "seccomp: no capability or no kernel support); not run");
	else if (err == EEXIST)
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
