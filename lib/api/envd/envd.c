/*
 * envd.c: the envd API's context and its Connect replies.
 *
 * envd runs every request as a user — the Basic credentials' name, else
 * its default — and derives from that user the home a relative path is
 * joined to, the default working directory and a process's HOME, USER
 * and LOGNAME.  POST /init changes the defaults for later requests.
 * The environment values /init gives are kept in memory only: secrets
 * are never written down.
 */
#include <sys/stat.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/api.h"
#include "base/codec.h"
#include "base/util.h"
#include "connect.h"
#include "envd.h"
#include "sys/user.h"

/* What a child gets when the agent itself has no PATH. */
#define ENVD_PATH_DEFAULT \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

int
envd_init(struct envd *d, const char *user, const char *path)
{
	memset(d, 0, sizeof(*d));
	if (user == NULL)
		user = "root";
	(void)snprintf(d->user, sizeof(d->user), "%s", user);
	if ((d->vars = cJSON_CreateObject()) == NULL ||
	    asprintf(&d->path, "PATH=%s", path != NULL ? path :
	    ENVD_PATH_DEFAULT) == -1) {
		d->path = NULL;
		envd_free(d);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

void
envd_free(struct envd *d)
{
	free(d->workdir);
	free(d->path);
	cJSON_Delete(d->vars);
	memset(d, 0, sizeof(*d));
}

void
envd_err_set(struct envd_err *e, const char *code, const char *fmt, ...)
{
	va_list	ap;

	e->code = code;
	va_start(ap, fmt);
	(void)vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Users */

/*
 * root without a passwd entry (a minimal image has no /etc/passwd):
 * still uid 0, its home /root when there is one.
 */
static int
envd_user_root(struct user_id *id)
{
	struct stat	st;

	memset(id, 0, sizeof(*id));
	(void)snprintf(id->name, sizeof(id->name), "root");
	(void)snprintf(id->home, sizeof(id->home), "%s",
	    stat("/root", &st) == 0 && S_ISDIR(st.st_mode) ? "/root" : "/");
	return 0;
}

int
envd_user_lookup(const char *name, struct envd_user *u, struct envd_err *e)
{
	struct user_id	id;
	int		saved;

	/* "uid:gid" is tend's spelling, not a name envd would look up. */
	errno = EINVAL;
	if (name[0] == '\0' || strchr(name, ':') != NULL ||
	    (user_parse(NULL, name, &id) == -1 && (errno != ENOENT ||
	    strcmp(name, "root") != 0 || envd_user_root(&id) == -1))) {
		saved = errno;
		envd_err_set(e, "unauthenticated", "invalid username: '%.64s'",
		    name);
		errno = saved;
		return -1;
	}
	u->uid = id.uid;
	u->gid = id.gid;
	memcpy(u->name, id.name, sizeof(u->name));
	memcpy(u->home, id.home, sizeof(u->home));
	return 0;
}

int
envd_request_user(const struct envd *d, struct http_req *r,
    struct envd_user *u, struct envd_err *e)
{
	const char	*h;
	struct buf	 dec = { 0 };
	char		*colon;
	int		 rc;

	h = http_header(r, "Authorization");
	if (h == NULL || strncasecmp(h, "Basic ", 6) != 0)
		return envd_user_lookup(d->user, u, e);
	for (h += 6; *h == ' '; h++)
		;
	if (codec_b64_decode(&dec, h, strlen(h)) == -1 ||
	    buf_add(&dec, "", 1) == -1 ||
	    (colon = memchr(dec.data, ':', dec.len)) == NULL ||
	    memchr(dec.data, '\0', dec.len - 1) != NULL) {
		buf_free(&dec);
		envd_err_set(e, "unauthenticated", "malformed Basic "
		    "credentials");
		return -1;
	}
	*colon = '\0';
	rc = envd_user_lookup(dec.data, u, e);
	buf_free(&dec);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Paths */

/*
 * Append seg (len bytes) to the absolute path in out (o bytes used),
 * "." and ".." resolved: the new length, or -1 when it does not fit.
 */
static int
envd_path_seg(char *out, size_t o, size_t n, const char *seg, size_t len)
{
	if (len == 0 || (len == 1 && seg[0] == '.'))
		return (int)o;
	if (len == 2 && seg[0] == '.' && seg[1] == '.') {
		while (o > 1 && out[o - 1] != '/')
			o--;
		if (o > 1)
			o--;
		out[o] = '\0';
		return (int)o;
	}
	if (o + (o > 1) + len + 1 > n)
		return -1;
	if (o > 1)
		out[o++] = '/';
	memcpy(out + o, seg, len);
	o += len;
	out[o] = '\0';
	return (int)o;
}

/* base then rel (either may be NULL), as one normalised absolute path. */
static int
envd_path_join(const char *base, const char *rel, char *out, size_t n)
{
	const char	*parts[2] = { base, rel }, *s, *end;
	int		 o = 1, i;

	if (n < 2)
		return -1;
	out[0] = '/';
	out[1] = '\0';
	for (i = 0; i < 2; i++)
		for (s = parts[i]; s != NULL && *s != '\0'; s = end) {
			while (*s == '/')
				s++;
			end = s + strcspn(s, "/");
			if ((o = envd_path_seg(out, (size_t)o, n, s,
			    (size_t)(end - s))) == -1)
				return -1;
		}
	return 0;
}

int
envd_path(const struct envd *d, const struct envd_user *u, const char *path,
    bool dflt, char *out, size_t n, struct envd_err *e)
{
	const char	*base = NULL;

	if (path[0] == '\0') {
		if (!dflt) {
			out[0] = '\0';
			return 0;
		}
		path = d->workdir != NULL ? d->workdir : u->home;
	}
	if (path[0] == '~') {
		if (path[1] != '\0' && path[1] != '/') {
			envd_err_set(e, "invalid_argument", "cannot expand "
			    "user-specific home dir in '%.128s'", path);
			return -1;
		}
		path++;
		base = u->home;
	} else if (path[0] != '/')
		base = u->home;
	if (envd_path_join(base, path, out, n) == -1) {
		envd_err_set(e, "invalid_argument", "path too long");
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The environment */

/* Set name=value in v (*nv used, max room), replacing one of the name. */
static int
envd_env_set(char **v, int *nv, int max, const char *name,
    const char *value)
{
	size_t	len = strlen(name);
	char	*s;
	int	 i;

	if (asprintf(&s, "%s=%s", name, value) == -1)
		return -1;
	for (i = 0; i < *nv; i++)
		if (strncmp(v[i], name, len) == 0 && v[i][len] == '=') {
			free(v[i]);
			v[i] = s;
			return 0;
		}
	if (*nv == max) {
		free(s);
		errno = E2BIG;
		return -1;
	}
	v[(*nv)++] = s;
	return 0;
}

/* An object of strings, each name non-empty and without '='. */
static int
envd_env_check(const cJSON *o, const char *what, struct envd_err *e)
{
	const cJSON	*el;

	if (!cJSON_IsObject(o)) {
		envd_err_set(e, "invalid_argument", "%s: must be an object of "
		    "strings", what);
		return -1;
	}
	cJSON_ArrayForEach(el, o)
		if (!cJSON_IsString(el) || el->string[0] == '\0' ||
		    strchr(el->string, '=') != NULL) {
			envd_err_set(e, "invalid_argument", "%s: values must "
			    "be strings, names non-empty without '='", what);
			return -1;
		}
	return 0;
}

/* o's entries into v. */
static int
envd_env_merge(char **v, int *nv, int max, const cJSON *o)
{
	const cJSON	*el;

	cJSON_ArrayForEach(el, o)
		if (envd_env_set(v, nv, max, el->string, el->valuestring) == -1)
			return -1;
	return 0;
}

char **
envd_environ(const struct envd *d, const struct envd_user *u,
    const cJSON *envs, struct envd_err *e)
{
	const char	*name = u->name[0] != '\0' ? u->name : "";
	char		**v;
	int		  nv = 0, max = PROC_MAX_ENV;

	if (envs != NULL && envd_env_check(envs, "envs", e) == -1)
		return NULL;
	if ((v = calloc(max + 1, sizeof(char *))) == NULL) {
		envd_err_set(e, "resource_exhausted", "out of memory");
		return NULL;
	}
	if ((v[nv++] = strdup(d->path)) == NULL ||
	    envd_env_set(v, &nv, max, "HOME", u->home) == -1 ||
	    envd_env_set(v, &nv, max, "USER", name) == -1 ||
	    envd_env_set(v, &nv, max, "LOGNAME", name) == -1 ||
	    envd_env_merge(v, &nv, max, d->vars) == -1 ||
	    (envs != NULL && envd_env_merge(v, &nv, max, envs) == -1)) {
		envd_err_set(e, errno == E2BIG ? "invalid_argument" :
		    "resource_exhausted", errno == E2BIG ? "envs: more than "
		    "%d entries" : "out of memory", max);
		envd_env_free(v);
		return NULL;
	}
	return v;
}

void
envd_env_free(char **v)
{
	size_t	i;

	for (i = 0; v != NULL && v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/* ------------------------------------------------------------------ */
/* POST /init */

/* The bytes an entry of envVars holds against ENVD_INIT_ENV_BYTES. */
static size_t
envd_var_bytes(const cJSON *el)
{
	return strlen(el->string) + strlen(el->valuestring);
}

/*
 * envVars: bounded in entries and bytes in all, those kept included, as
 * they stay in memory.  A name kept already counts once, its new value
 * instead of the old: a client re-sending its whole set is not refused.
 */
static int
envd_init_vars(const struct envd *d, const cJSON *vars, struct envd_err *e)
{
	const cJSON	*el, *old;
	size_t		 bytes = d->vars_bytes;
	int		 n = d->nvars;

	if (envd_env_check(vars, "envVars", e) == -1)
		return -1;
	cJSON_ArrayForEach(el, vars) {
		if ((old = cJSON_GetObjectItemCaseSensitive(d->vars,
		    el->string)) != NULL) {
			bytes -= envd_var_bytes(old);
			n--;
		}
		bytes += envd_var_bytes(el);
		n++;
	}
	if (n > ENVD_INIT_ENV_MAX || bytes > ENVD_INIT_ENV_BYTES) {
		envd_err_set(e, "invalid_argument", "envVars: at most %d "
		    "entries and %d bytes in all", ENVD_INIT_ENV_MAX,
		    ENVD_INIT_ENV_BYTES);
		return -1;
	}
	return 0;
}

/* name=value into the vars, replacing one of the name; counted. */
static void
envd_var_set(struct envd *d, const char *name, const char *value)
{
	cJSON	*old, *el;

	if ((old = cJSON_DetachItemFromObjectCaseSensitive(d->vars,
	    name)) != NULL) {
		d->vars_bytes -= envd_var_bytes(old);
		d->nvars--;
		cJSON_Delete(old);
	}
	if ((el = cJSON_AddStringToObject(d->vars, name, value)) != NULL) {
		d->vars_bytes += envd_var_bytes(el);
		d->nvars++;
	}
}

/* A string field, or NULL; -1 when it is there and not a string. */
static int
envd_init_str(const cJSON *j, const char *name, const char **out,
    struct envd_err *e)
{
	const cJSON	*f = connect_field(j, name);

	*out = NULL;
	if (f == NULL)
		return 0;
	if (!cJSON_IsString(f)) {
		envd_err_set(e, "invalid_argument", "%s: must be a string",
		    name);
		return -1;
	}
	*out = f->valuestring;
	return 0;
}

int
envd_apply_init(struct envd *d, const cJSON *j, struct envd_err *e)
{
	const cJSON		*vars, *el;
	const char		*user, *wd;
	struct envd_user	 u;
	char			*nwd = NULL;

	vars = connect_field(j, "envVars");
	if ((vars != NULL && envd_init_vars(d, vars, e) == -1) ||
	    envd_init_str(j, "defaultUser", &user, e) == -1 ||
	    envd_init_str(j, "defaultWorkdir", &wd, e) == -1)
		return -1;
	if (user != NULL && user[0] != '\0' &&
	    envd_user_lookup(user, &u, e) == -1) {
		envd_err_set(e, "invalid_argument", "defaultUser: no such "
		    "user '%.64s'", user);
		return -1;
	}
	if (wd != NULL && wd[0] != '\0' && (nwd = strdup(wd)) == NULL) {
		envd_err_set(e, "resource_exhausted", "out of memory");
		return -1;
	}
	cJSON_ArrayForEach(el, vars)
		envd_var_set(d, el->string, el->valuestring);
	if (user != NULL && user[0] != '\0')
		(void)snprintf(d->user, sizeof(d->user), "%s", user);
	if (nwd != NULL) {
		free(d->workdir);
		d->workdir = nwd;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Replies */

void
envd_reply_err(struct http_conn *c, const struct envd_err *e)
{
	cJSON	*j = connect_error_json(e->code, e->message);

	if (j == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	http_reply_json(c, connect_http_status(e->code), j);
}

void
envd_reply(struct http_conn *c, cJSON *j)
{
	if (j == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	http_reply_json(c, 200, j);
}

/* JSON text as a message: an object, or invalid_argument. */
static cJSON *
envd_parse(const char *d, size_t n, struct envd_err *e)
{
	struct api_err	 ae;
	cJSON		*j;

	if ((j = api_parse_body(d, n, &ae)) == NULL) {
		envd_err_set(e, "invalid_argument", "%s", ae.message);
		return NULL;
	}
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		envd_err_set(e, "invalid_argument", "the message must be a "
		    "JSON object");
		return NULL;
	}
	return j;
}

cJSON *
envd_unary_body(struct http_req *r, struct envd_err *e)
{
	cJSON	*j;

	if (r->body.len > 0)
		return envd_parse(r->body.data, r->body.len, e);
	if ((j = cJSON_CreateObject()) == NULL)
		envd_err_set(e, "resource_exhausted", "out of memory");
	return j;
}

cJSON *
envd_stream_body(struct http_req *r, struct envd_err *e)
{
	struct connect_env	env;

	if (connect_request(r->body.data, r->body.len, &env, &e->code,
	    e->message, sizeof(e->message)) == -1)
		return NULL;
	return envd_parse(env.data, env.len, e);
}

int
envd_stream_begin(struct http_conn *c)
{
	return http_stream_begin(c, 200, CONNECT_CTYPE_STREAM,
	    HTTP_FRAME_CHUNKED, "Cache-Control: no-cache\r\n");
}

int
envd_stream_msg(struct http_conn *c, const char *json)
{
	struct buf	b = { 0 };
	int		rc;

	if (connect_env_add(&b, json, strlen(json)) == -1) {
		buf_free(&b);
		http_conn_abort(c);
		return -1;
	}
	rc = http_stream_write(c, b.data, b.len);
	buf_free(&b);
	return rc;
}

void
envd_stream_end(struct http_conn *c, const struct envd_err *e)
{
	struct buf	b = { 0 };

	if (connect_end_add(&b, e != NULL ? e->code : NULL, e != NULL ?
	    e->message : NULL) == -1) {
		buf_free(&b);
		http_conn_abort(c);
		return;
	}
	if (http_stream_write(c, b.data, b.len) == 0)
		http_stream_end(c);
	buf_free(&b);
}

void
envd_stream_fail(struct http_conn *c, const struct envd_err *e)
{
	if (envd_stream_begin(c) == 0)
		envd_stream_end(c, e);
}

double
envd_keepalive(struct http_req *r)
{
	const char	*h = http_header(r, "Keepalive-Ping-Interval");
	uint64_t	 s;

	if (h == NULL || codec_parse_u64(h, &s) == -1 || s == 0)
		return ENVD_KEEPALIVE_DEFAULT;
	return s > ENVD_KEEPALIVE_MAX ? ENVD_KEEPALIVE_MAX : (double)s;
}

int
envd_timeout(struct http_req *r, uint64_t *ms, struct envd_err *e)
{
	*ms = 0;
	if (connect_timeout_ms(http_header(r, "Connect-Timeout-Ms"), ms) ==
	    -1) {
		envd_err_set(e, "invalid_argument", "Connect-Timeout-Ms: 1 to "
		    "%d digits", CONNECT_TIMEOUT_DIGITS);
		return -1;
	}
	return 0;
}

void
envd_unimplemented(struct http_conn *c, struct http_req *r)
{
	struct envd_err	e;

	envd_err_set(&e, "unimplemented", "%.128s is not implemented",
	    r->path);
	envd_reply_err(c, &e);
}

/* ------------------------------------------------------------------ */
/* A stream's timers */

static void
envd_timers_keep(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct envd_timers	*t = container_of(w, struct envd_timers, keep);

	(void)loop;
	(void)revents;
	(void)envd_stream_msg(t->c, t->ping);	/* -1: closed, t freed */
}

/* The stream's own deadline: it ends; what it reads from goes on. */
static void
envd_timers_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct envd_timers	*t = container_of(w, struct envd_timers,
				    deadline);
	struct envd_err		 e;

	(void)loop;
	(void)revents;
	envd_err_set(&e, "deadline_exceeded", "the stream's deadline "
	    "(Connect-Timeout-Ms) passed");
	envd_stream_finish(t, &e);
}

void
envd_timers_init(struct envd_timers *t, struct ev_loop *loop,
    struct http_conn *c, struct http_req *r, const char *ping,
    void (*release)(void *), void *owner)
{
	double	keep = envd_keepalive(r);

	ev_timer_init(&t->keep, envd_timers_keep, keep, keep);
	ev_timer_init(&t->deadline, envd_timers_deadline, 0., 0.);
	t->loop = loop;
	t->c = c;
	t->ping = ping;
	t->release = release;
	t->owner = owner;
}

void
envd_timers_start(struct envd_timers *t, uint64_t deadline_ms)
{
	ev_timer_again(t->loop, &t->keep);
	if (deadline_ms > 0) {
		ev_timer_set(&t->deadline, deadline_ms / 1000.0, 0.);
		ev_timer_start(t->loop, &t->deadline);
	}
}

void
envd_timers_touch(struct envd_timers *t)
{
	ev_timer_again(t->loop, &t->keep);
}

void
envd_timers_stop(struct envd_timers *t)
{
	ev_timer_stop(t->loop, &t->keep);
	ev_timer_stop(t->loop, &t->deadline);
}

void
envd_stream_finish(struct envd_timers *t, const struct envd_err *e)
{
	struct http_conn	*c = t->c;

	http_conn_own(c, NULL, NULL, NULL);
	t->release(t->owner);
	envd_stream_end(c, e);
}
