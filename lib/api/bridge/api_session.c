/*
 * api_session.c: the bridge's execution sessions (see api_session.h).
 * The table lives as long as the agent, or until DELETE /v1/sandbox/{id}
 * ends everything; it is small (BRIDGE_SESSIONS_MAX) and searched in
 * order.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_files.h"
#include "api_bridge.h"
#include "api_session.h"
#include "base/tunables.h"
#include "store/boot.h"

struct api_session {
	char	 id[API_BRIDGE_ID_MAX + 1];	/* "": a free slot */
	char	 cwd[PATH_MAX];			/* in the workspace */
	cJSON	*env;				/* an object of strings, or NULL */
};

static struct api_session	api_sessions[BRIDGE_SESSIONS_MAX];

static struct api_session *
api_session_find(const char *id)
{
	size_t	i;

	for (i = 0; i < BRIDGE_SESSIONS_MAX; i++)
		if (api_sessions[i].id[0] != '\0' &&
		    strcmp(api_sessions[i].id, id) == 0)
			return &api_sessions[i];
	return NULL;
}

static void
api_session_free(struct api_session *s)
{
	cJSON_Delete(s->env);
	memset(s, 0, sizeof(*s));
}

void
api_session_clear(void)
{
	size_t	i;

	for (i = 0; i < BRIDGE_SESSIONS_MAX; i++)
		api_session_free(&api_sessions[i]);
}

/*
 * The env as a launch takes it, checked by the launch's own rules: a
 * body {"argv":["true"],"env":env} must pass api_launch_opts.
 */
static int
api_session_env_ok(const cJSON *env, struct api_err *e)
{
	struct proc_opts	 o;
	char			**argv = NULL, **ev = NULL;
	cJSON			*j, *a;
	int			 rc = -1;

	if ((j = cJSON_CreateObject()) == NULL ||
	    (a = cJSON_AddArrayToObject(j, "argv")) == NULL ||
	    !cJSON_AddItemToArray(a, cJSON_CreateString("true")) ||
	    !cJSON_AddItemToObject(j, "env", cJSON_Duplicate(env, true)))
		api_err_nomem(e);
	else
		rc = api_launch_opts(j, false, NULL, &o, &argv, &ev, e);
	api_launch_free(argv, ev);
	cJSON_Delete(j);
	return rc;
}

/* {"id"?, "cwd"?, "env"?} into s; -1 with e. */
static int
api_session_opts(struct api *a, const cJSON *j, struct api_session *s,
    struct api_err *e)
{
	const cJSON	*f;
	char		 id[sizeof(s->id)];

	/* The slot stays free (its id "") until all is checked. */
	f = cJSON_GetObjectItemCaseSensitive(j, "id");
	if (f == NULL || cJSON_IsNull(f)) {
		if (boot_new_id(id) == -1) {
			api_err_nomem(e);
			return -1;
		}
	} else if (!cJSON_IsString(f) || !api_bridge_id_valid(f->valuestring,
	    strlen(f->valuestring))) {
		api_err_set(e, 400, "invalid_request", "id", "Invalid session "
		    "ID format");
		return -1;
	} else
		(void)snprintf(id, sizeof(id), "%s", f->valuestring);
	if (api_session_find(id) != NULL) {
		api_err_set(e, 409, "id_taken", "id", "session '%s' already "
		    "exists", id);
		return -1;
	}
	/* Without one, the workspace (where a bridge exec starts). */
	f = cJSON_GetObjectItemCaseSensitive(j, "cwd");
	if (f == NULL || cJSON_IsNull(f))
		(void)snprintf(s->cwd, sizeof(s->cwd), "%s",
		    api_files_workspace(a->files));
	else if (!cJSON_IsString(f)) {
		api_err_invalid(e, "cwd", "must be a string");
		return -1;
	} else if (snprintf(s->cwd, sizeof(s->cwd), "%s", f->valuestring) >=
	    (int)sizeof(s->cwd) || !api_files_in_workspace(a->files, s->cwd)) {
		/* As the exec's own cwd is refused (api_sandbox_cwd). */
		api_err_set(e, 403, "invalid_request", "cwd", "cwd must be "
		    "within %s", api_files_workspace(a->files));
		return -1;
	}
	f = cJSON_GetObjectItemCaseSensitive(j, "env");
	if (f != NULL && !cJSON_IsNull(f)) {
		if (api_session_env_ok(f, e) == -1)
			return -1;
		if ((s->env = cJSON_Duplicate(f, true)) == NULL) {
			api_err_nomem(e);
			return -1;
		}
	}
	memcpy(s->id, id, sizeof(s->id));
	return 0;
}

/* POST /v1/sandbox/{id}/session: 200 {"id"}; an empty body is {}. */
void
api_session_create(struct http_conn *c, struct http_req *r)
{
	struct api_session	*s = NULL;
	struct api_err		 e;
	cJSON			*j = NULL, *out;
	size_t			 i;

	for (i = 0; i < BRIDGE_SESSIONS_MAX && s == NULL; i++)
		if (api_sessions[i].id[0] == '\0')
			s = &api_sessions[i];
	if (r->body.len == 0)
		j = cJSON_CreateObject();
	else if ((j = api_parse_body(r->body.data, r->body.len, &e)) == NULL)
		goto refuse;
	if (j == NULL) {
		api_err_nomem(&e);
		goto refuse;
	}
	if (!cJSON_IsObject(j)) {
		api_err_invalid(&e, "body", "must be a JSON object");
		goto refuse;
	}
	if (s == NULL) {
		api_err_set(&e, 503, "busy", NULL, "%d sessions already",
		    BRIDGE_SESSIONS_MAX);
		goto refuse;
	}
	if (api_session_opts(api_of(c), j, s, &e) == -1) {
		api_session_free(s);
		goto refuse;
	}
	cJSON_Delete(j);
	out = cJSON_CreateObject();
	cJSON_AddStringToObject(out, "id", s->id);
	http_reply_json(c, 200, out);
	return;
refuse:
	cJSON_Delete(j);
	api_reply_err(c, &e);
}

/* DELETE /v1/sandbox/{id}/session/{sid} */
void
api_session_delete(struct http_conn *c, struct http_req *r)
{
	struct api_session	*s;
	cJSON			*out;

	if ((s = api_session_find(r->param[0])) == NULL) {
		http_reply_error(c, 404, "not_found", "no session '%.128s'",
		    r->param[0]);
		return;
	}
	out = cJSON_CreateObject();
	cJSON_AddBoolToObject(out, "success", true);
	cJSON_AddStringToObject(out, "sessionId", s->id);
	api_session_free(s);
	http_reply_json(c, 200, out);
}

/* The session a request names: NULL and 0 for none or an unknown one. */
static int
api_session_named(const char *sid, struct api_session **s, struct api_err *e)
{
	*s = NULL;
	if (sid == NULL)
		return 0;
	if (!api_bridge_id_valid(sid, strlen(sid))) {
		api_err_set(e, 400, "invalid_request", NULL, "Invalid session "
		    "ID format");
		return -1;
	}
	*s = api_session_find(sid);
	return 0;
}

int
api_session_term(const char *sid, const char **cwd, char buf[PATH_MAX],
    char ***env, struct api_err *e)
{
	struct api_session	*s;
	const cJSON		*el;
	char			**v;
	size_t			  i = 0;

	*cwd = NULL;
	*env = NULL;
	if (api_session_named(sid, &s, e) == -1)
		return -1;
	if (s == NULL)
		return 0;
	memcpy(buf, s->cwd, sizeof(s->cwd));
	*cwd = buf;
	if (s->env == NULL)
		return 0;
	/* Checked as a launch's env when the session was made. */
	if ((v = calloc((size_t)cJSON_GetArraySize(s->env) + 1,
	    sizeof(*v))) == NULL)
		goto nomem;
	*env = v;
	cJSON_ArrayForEach(el, s->env) {
		if (asprintf(&v[i], "%s=%s", el->string, el->valuestring) == -1) {
			v[i] = NULL;
			goto nomem;
		}
		i++;
	}
	return 0;
nomem:
	api_err_nomem(e);
	return -1;
}

int
api_session_apply(const char *sid, cJSON *j, struct api_err *e)
{
	struct api_session	*s;
	const cJSON		*el;
	cJSON			*env;

	if (sid == NULL || !cJSON_IsObject(j))
		return 0;
	if (api_session_named(sid, &s, e) == -1)
		return -1;
	if (s == NULL)
		return 0;
	if (cJSON_GetObjectItemCaseSensitive(j, "cwd") == NULL &&
	    cJSON_AddStringToObject(j, "cwd", s->cwd) == NULL)
		goto nomem;
	if (s->env == NULL)
		return 0;
	if ((env = cJSON_GetObjectItemCaseSensitive(j, "env")) == NULL) {
		if (!cJSON_AddItemToObject(j, "env",
		    cJSON_Duplicate(s->env, true)))
			goto nomem;
		return 0;
	}
	/* The request's own entries win; a bad env is refused later. */
	if (!cJSON_IsObject(env))
		return 0;
	cJSON_ArrayForEach(el, s->env)
		if (cJSON_GetObjectItemCaseSensitive(env, el->string) == NULL &&
		    !cJSON_AddItemToObject(env, el->string,
		    cJSON_Duplicate(el, true)))
			goto nomem;
	return 0;
nomem:
	api_err_nomem(e);
	return -1;
}
