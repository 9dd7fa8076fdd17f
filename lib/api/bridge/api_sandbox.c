/*
 * api_sandbox.c: the routes only the bridge has — its lifecycle, its
 * stable exec, the mounts it refuses, the bad sandbox ID — the bridge's
 * form of a process launch and a terminal's create (cwd in the
 * workspace), and the OpenAPI
 * document with its page, embedded at build time (build/gen/openapi.c).
 */
#include <sys/types.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "api/api_files.h"
#include "api/api_output.h"
#include "api/api_proc.h"
#include "api/api_term.h"
#include "api_bridge.h"
#include "api_sandbox.h"
#include "api_session.h"
#include "base/fsutil.h"
#include "base/util.h"

/* The generated document and page (scripts/openapi, the Makefile). */
extern const unsigned char	tend_openapi_json[], tend_openapi_html[];
extern const size_t		tend_openapi_json_zlen, tend_openapi_html_zlen;
extern const size_t		tend_openapi_json_len, tend_openapi_html_len;

/* A DELETE waiting for every process and terminal of the boot to end. */
struct api_sandbox_del {
	struct http_conn	*c;
	struct api		*api;
	ev_timer		 poll;
	ev_tstamp		 deadline;
};

static void	api_sandbox_create(struct http_conn *, struct http_req *);
static void	api_sandbox_health(struct http_conn *, struct http_req *);
static void	api_sandbox_openapi(struct http_conn *, struct http_req *);
static void	api_sandbox_page(struct http_conn *, struct http_req *);
static void	api_sandbox_bad_id(struct http_conn *, struct http_req *);
static void	api_sandbox_running(struct http_conn *, struct http_req *);
static void	api_sandbox_delete(struct http_conn *, struct http_req *);
static void	api_sandbox_exec(struct http_conn *, struct http_req *);
static void	api_sandbox_launch(struct http_conn *, struct http_req *);
static void	api_sandbox_term_create(struct http_conn *, struct http_req *);
static void	api_sandbox_mount(struct http_conn *, struct http_req *);
static void	api_sandbox_unmount(struct http_conn *, struct http_req *);
static bool	api_sandbox_all_ended(struct api *);

const struct http_route api_sandbox_routes[] = {
	{ "POST",	"/v1/sandbox",		api_sandbox_create, NULL },
	{ "GET",	"/health",		api_sandbox_health, NULL },
	{ "GET",	"/v1/openapi.json",	api_sandbox_openapi, NULL },
	{ "GET",	"/v1/openapi.html",	api_sandbox_page, NULL },
	{ NULL, NULL, NULL, NULL }
};

/* Paths as api_bridge_rewrite leaves them: "/v1/sandbox/{id}/x" is "/v1/x". */
const struct http_route api_sandbox_bridge_routes[] = {
	{ "GET",	API_BRIDGE_BAD_PATH,	api_sandbox_bad_id, NULL },
	{ "HEAD",	API_BRIDGE_BAD_PATH,	api_sandbox_bad_id, NULL },
	{ "POST",	API_BRIDGE_BAD_PATH,	api_sandbox_bad_id, NULL },
	{ "PUT",	API_BRIDGE_BAD_PATH,	api_sandbox_bad_id, NULL },
	{ "PATCH",	API_BRIDGE_BAD_PATH,	api_sandbox_bad_id, NULL },
	{ "DELETE",	API_BRIDGE_BAD_PATH,	api_sandbox_bad_id, NULL },
	{ "OPTIONS",	API_BRIDGE_BAD_PATH,	api_sandbox_bad_id, NULL },
	{ "DELETE",	"/v1",			api_sandbox_delete, NULL },
	{ "GET",	"/v1/running",		api_sandbox_running, NULL },
	{ "POST",	"/v1/exec",		api_sandbox_exec, NULL },
	{ "POST",	"/v1/processes",	api_sandbox_launch, NULL },
	{ "POST",	"/v1/terminals",	api_sandbox_term_create, NULL },
	{ "POST",	"/v1/mount",		api_sandbox_mount, NULL },
	{ "POST",	"/v1/unmount",		api_sandbox_unmount, NULL },
	{ "POST",	"/v1/session",		api_session_create, NULL },
	{ "DELETE",	"/v1/session/{}",	api_session_delete, NULL },
	{ NULL, NULL, NULL, NULL }
};

/* ------------------------------------------------------------------ */
/* Lifecycle */

/*
 * The container's name: its host name (a container's is set at its
 * start and stays), cut to the bridge's ID alphabet; "tend" if none is
 * left.  The container already runs: nothing is created.
 */
void
api_sandbox_name(char *out, size_t n)
{
	char	host[BRIDGE_NAME_MAX + 1];
	size_t	i, k = 0;

	if (gethostname(host, sizeof(host)) == -1)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';
	for (i = 0; host[i] != '\0' && k + 1 < n; i++)
		if (api_bridge_id_valid(&host[i], 1))
			out[k++] = host[i];
	out[k] = '\0';
	if (k == 0)
		(void)snprintf(out, n, "tend");
}

/*
 * POST /v1/sandbox: one container, one sandbox, so one ID.  "existing"
 * says whether an earlier POST, not deleted since, handed it out already:
 * a client that means to make a second sandbox learns it shares this one,
 * while a client that creates again (after a restart, say) still works.
 */
static void
api_sandbox_create(struct http_conn *c, struct http_req *r)
{
	char	name[BRIDGE_NAME_MAX + 1];
	cJSON	*j;

	(void)r;
	api_sandbox_name(name, sizeof(name));
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "id", name);
	cJSON_AddBoolToObject(j, "existing",
	    api_bridge_life() == API_BRIDGE_CREATED);
	api_bridge_set_life(API_BRIDGE_CREATED);
	http_reply_json(c, 200, j);
}

static void
api_sandbox_ok(struct http_conn *c, const char *field)
{
	cJSON	*j = cJSON_CreateObject();

	cJSON_AddBoolToObject(j, field, true);
	http_reply_json(c, 200, j);
}

/* GET /health: the bridge Worker's, unauthenticated through the shim. */
static void
api_sandbox_health(struct http_conn *c, struct http_req *r)
{
	(void)r;
	api_sandbox_ok(c, "ok");
}

/*
 * GET /v1/sandbox/{id}/running: the container answers, so it runs, unless
 * a DELETE ended the sandbox, nothing has needed it since and nothing
 * (started through the API's own routes, say) runs in it.
 */
static void
api_sandbox_running(struct http_conn *c, struct http_req *r)
{
	cJSON	*j = cJSON_CreateObject();

	(void)r;
	cJSON_AddBoolToObject(j, "running",
	    api_bridge_life() != API_BRIDGE_DELETED ||
	    !api_sandbox_all_ended(api_of(c)));
	http_reply_json(c, 200, j);
}

/* Any method on /v1/sandbox/{bad}/...: before the route is looked at. */
static void
api_sandbox_bad_id(struct http_conn *c, struct http_req *r)
{
	(void)r;
	http_reply_error(c, 400, "invalid_request", "Invalid sandbox ID "
	    "format");
}

static bool
api_sandbox_all_ended(struct api *a)
{
	struct proctab_stats	st;

	proctab_stats(a->tab, &st);
	return st.running == 0 && termtab_live(a->terms) == 0;
}

static void
api_sandbox_del_free(struct api_sandbox_del *d)
{
	ev_timer_stop(proctab_loop(d->api->tab), &d->poll);
	free(d);
}

static void
api_sandbox_del_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_sandbox_del_free(owner);
}

static void
api_sandbox_del_poll(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct api_sandbox_del	*d = container_of(w, struct api_sandbox_del,
				    poll);
	struct http_conn	*c = d->c;

	(void)revents;
	if (!api_sandbox_all_ended(d->api) && ev_now(loop) < d->deadline)
		return;
	http_conn_own(c, NULL, NULL, NULL);
	api_sandbox_del_free(d);
	http_reply(c, 204, NULL, NULL, 0);
}

/*
 * TERM every running process's group and every terminal's session, KILL
 * after each one's grace; the records stay.  The longest grace, in s.
 */
static double
api_sandbox_terminate_all(struct api *a)
{
	struct proc	*p;
	struct term	*t;
	double		 longest = 0;

	for (p = proctab_first(a->tab); p != NULL; p = proc_next(p))
		if (proc_terminate(p) == 0 && proc_grace(p) > longest)
			longest = proc_grace(p);
	for (t = termtab_first(a->terms); t != NULL; t = term_next(t))
		if (term_terminate(t) == 0 && TERM_KILL_GRACE > longest)
			longest = TERM_KILL_GRACE;
	return longest;
}

/*
 * DELETE /v1/sandbox/{id}: 204 when all have ended, or past the grace.
 * The bridge destroys the container; tend, its PID 1, ends everything in
 * it instead and answers running:false until the sandbox is needed again.
 */
static void
api_sandbox_delete(struct http_conn *c, struct http_req *r)
{
	struct api		*a = api_of(c);
	struct api_sandbox_del	*d;
	struct ev_loop		*loop = proctab_loop(a->tab);
	double			 grace;

	(void)r;
	api_bridge_set_life(API_BRIDGE_DELETED);
	api_session_clear();
	grace = api_sandbox_terminate_all(a);
	if (api_sandbox_all_ended(a)) {
		http_reply(c, 204, NULL, NULL, 0);
		return;
	}
	if ((d = calloc(1, sizeof(*d))) == NULL) {
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	d->c = c;
	d->api = a;
	d->deadline = ev_now(loop) + grace + BRIDGE_DELETE_SLACK;
	ev_timer_init(&d->poll, api_sandbox_del_poll, BRIDGE_DELETE_POLL,
	    BRIDGE_DELETE_POLL);
	ev_timer_start(loop, &d->poll);
	http_conn_own(c, d, NULL, api_sandbox_del_closed);
}

/* ------------------------------------------------------------------ */
/* Exec and launch: cwd in the workspace */

/*
 * A cwd must be absolute and, normalised, inside the workspace: *cwd
 * then points at the normalised copy in buf.  -1 with 403.
 */
int
api_sandbox_cwd_path(const struct api_files *f, const char **cwd,
    char buf[PATH_MAX], struct api_err *e)
{
	if (*cwd == NULL)
		return 0;
	if (snprintf(buf, PATH_MAX, "%s", *cwd) >= PATH_MAX ||
	    !api_files_in_workspace(f, buf)) {
		api_err_set(e, 403, "invalid_request", "cwd", "cwd must be "
		    "within %s", api_files_workspace(f));
		return -1;
	}
	*cwd = buf;
	return 0;
}

/*
 * Without a cwd a command runs in the workspace, as in the bridge's
 * container (its sessions start there), made first if it is missing as a
 * bridge write makes it; if it cannot be made, in the agent's directory.
 */
const char *
api_sandbox_default_cwd(const struct api_files *f)
{
	return fsutil_mkdirs(AT_FDCWD, api_files_workspace(f)) == 0 ?
	    api_files_workspace(f) : NULL;
}

/* A launch's cwd confined (api_sandbox_cwd_path), else the default. */
int
api_sandbox_cwd(const struct api_files *f, struct proc_opts *o,
    char buf[PATH_MAX], struct api_err *e)
{
	if (o->cwd == NULL) {
		o->cwd = api_sandbox_default_cwd(f);
		return 0;
	}
	return api_sandbox_cwd_path(f, &o->cwd, buf, e);
}

/* timeout_ms: a positive whole number of ms, the stable line's timeout. */
static int
api_sandbox_timeout(const cJSON *j, struct proc_opts *o, struct api_err *e)
{
	const cJSON	*f;

	if ((f = cJSON_GetObjectItemCaseSensitive(j, "timeout_ms")) == NULL ||
	    cJSON_IsNull(f))
		return 0;
	if (!api_integer(f, 1, PROC_MS_MAX)) {
		api_err_invalid(e, "timeout_ms", "must be a positive integer");
		return -1;
	}
	o->timeout_s = f->valuedouble / 1000.0;
	return 0;
}

/* The body of the stable exec; the bridge's wording for a bad argv. */
int
api_sandbox_exec_opts(struct api *a, const cJSON *j, struct proc_opts *o,
    char ***argv, char ***env, char cwd[PATH_MAX], struct api_err *e)
{
	if (api_launch_opts(j, true, a->default_user, o, argv, env, e) == -1) {
		if (e->field != NULL && strcmp(e->field, "argv") == 0 &&
		    e->status == 400)
			api_err_set(e, 400, "invalid_request", "argv", "argv "
			    "must be a non-empty array of strings");
		return -1;
	}
	if (api_sandbox_timeout(j, o, e) == -1)
		return -1;
	return api_sandbox_cwd(a->files, o, cwd, e);
}

/* POST /v1/sandbox/{id}/exec */
static void
api_sandbox_exec(struct http_conn *c, struct http_req *r)
{
	struct api		*a = api_of(c);
	struct proc_opts	 o;
	struct api_err		 e;
	struct proc		*p;
	char			**argv = NULL, **env = NULL, cwd[PATH_MAX];
	cJSON			*j = NULL;
	bool			 failed;
	int			 fd, err;

	/* A Session-Id's session gives the cwd and env the body does not. */
	if (api_pin(a, r, false, &fd, &e) != 0 ||
	    (j = api_parse_body(r->body.data, r->body.len, &e)) == NULL ||
	    api_session_apply(http_header(r, "Session-Id"), j, &e) == -1 ||
	    api_sandbox_exec_opts(a, j, &o, &argv, &env, cwd, &e) == -1) {
		api_reply_err(c, &e);
		goto out;
	}
	if ((p = proc_spawn(a->tab, &o, &failed, &err)) == NULL) {
		if (failed)
			api_output_bridge_exec_failed(c, o.argv[0], err);
		else
			api_reply_spawn_error(c, failed, err, o.id);
		goto out;
	}
	api_output_bridge_exec_stream(c, p);
out:
	api_launch_free(argv, env);
	cJSON_Delete(j);
}

/*
 * The body's cwd, if it is a non-empty string, confined to the workspace
 * (normalised into buf): 0 and *cwd (NULL: none to confine), or -1 after
 * a 403.  With dflt, a body without one (or null) gets the default cwd.
 * A body the handler refuses is refused there, as it always was.
 */
static int
api_sandbox_body_cwd(struct http_conn *c, struct http_req *r, bool dflt,
    const char **cwd, char buf[PATH_MAX])
{
	const struct api_files	*files = api_of(c)->files;
	struct api_err		 e;
	const cJSON		*f;
	cJSON			*j;
	int			 rc = 0;

	*cwd = NULL;
	if ((j = api_parse_body(r->body.data, r->body.len, &e)) == NULL)
		return 0;
	f = cJSON_GetObjectItemCaseSensitive(j, "cwd");
	if (cJSON_IsString(f) && f->valuestring[0] != '\0') {
		*cwd = f->valuestring;
		if ((rc = api_sandbox_cwd_path(files, cwd, buf, &e)) == -1)
			api_reply_err(c, &e);
	} else if (dflt && (f == NULL || cJSON_IsNull(f)))
		*cwd = api_sandbox_default_cwd(files);
	cJSON_Delete(j);
	return rc;
}

/* POST /v1/sandbox/{id}/processes: the API's launch, cwd checked first. */
static void
api_sandbox_launch(struct http_conn *c, struct http_req *r)
{
	const char	*cwd;
	char		 buf[PATH_MAX];

	if (api_sandbox_body_cwd(c, r, true, &cwd, buf) == 0)
		api_proc_launch_cwd(c, r, cwd);
}

/* POST /v1/sandbox/{id}/terminals: the API's create, cwd checked first. */
static void
api_sandbox_term_create(struct http_conn *c, struct http_req *r)
{
	const char	*cwd;
	char		 buf[PATH_MAX];

	if (api_sandbox_body_cwd(c, r, true, &cwd, buf) == 0)
		api_term_create_cwd(c, r, cwd);
}

/* ------------------------------------------------------------------ */
/* Mounts: checked as the bridge checks them, then refused */

static int
api_sandbox_mount_path(const cJSON *j, struct api_err *e)
{
	const cJSON	*f = cJSON_GetObjectItemCaseSensitive(j, "mountPath");

	if (!cJSON_IsString(f) || f->valuestring[0] != '/') {
		api_err_invalid(e, "mountPath", "must be an absolute path");
		return -1;
	}
	return 0;
}

int
api_sandbox_mount_body(const cJSON *j, bool mount, struct api_err *e)
{
	const cJSON	*f;

	if (!cJSON_IsObject(j)) {
		api_err_invalid(e, "body", "must be a JSON object");
		return -1;
	}
	if (mount) {
		f = cJSON_GetObjectItemCaseSensitive(j, "bucket");
		if (!cJSON_IsString(f) || f->valuestring[0] == '\0') {
			api_err_invalid(e, "bucket", "must be a non-empty "
			    "string");
			return -1;
		}
	}
	if (api_sandbox_mount_path(j, e) == -1)
		return -1;
	f = cJSON_GetObjectItemCaseSensitive(j, "options");
	if (mount && f != NULL && !cJSON_IsObject(f)) {
		api_err_invalid(e, "options", "must be an object");
		return -1;
	}
	api_err_set(e, 501, "not_supported", NULL, "%s is not supported: "
	    "S3 mounts are not tend's job", mount ? "mount" : "unmount");
	return -1;
}

static void
api_sandbox_mounts(struct http_conn *c, struct http_req *r, bool mount)
{
	struct api_err	 e;
	cJSON		*j;

	if ((j = api_parse_body(r->body.data, r->body.len, &e)) != NULL)
		(void)api_sandbox_mount_body(j, mount, &e);
	cJSON_Delete(j);
	api_reply_err(c, &e);
}

static void
api_sandbox_mount(struct http_conn *c, struct http_req *r)
{
	api_sandbox_mounts(c, r, true);
}

static void
api_sandbox_unmount(struct http_conn *c, struct http_req *r)
{
	api_sandbox_mounts(c, r, false);
}

/* ------------------------------------------------------------------ */
/* The OpenAPI document and its page */

/*
 * An embedded document, inflated for the reply (it is stored compressed
 * so that an agent that is never asked for it does not hold it): len
 * bytes from zlen.  500 internal if it does not inflate to that size.
 */
static void
api_sandbox_doc(struct http_conn *c, const char *ctype,
    const unsigned char *z, size_t zlen, size_t len)
{
	struct api_err	 e;
	uLongf		 n = len;
	char		*s;

	if ((s = malloc(len)) == NULL || uncompress((Bytef *)s, &n, z,
	    zlen) != Z_OK || n != len) {
		free(s);
		api_err_set(&e, 500, "internal", NULL, "the embedded document "
		    "does not inflate");
		api_reply_err(c, &e);
		return;
	}
	http_reply(c, 200, ctype, s, len);
	free(s);
}

static void
api_sandbox_openapi(struct http_conn *c, struct http_req *r)
{
	(void)r;
	api_sandbox_doc(c, "application/json", tend_openapi_json,
	    tend_openapi_json_zlen, tend_openapi_json_len);
}

static void
api_sandbox_page(struct http_conn *c, struct http_req *r)
{
	(void)r;
	api_sandbox_doc(c, "text/html; charset=utf-8", tend_openapi_html,
	    tend_openapi_html_zlen, tend_openapi_html_len);
}
