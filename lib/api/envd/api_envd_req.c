/*
 * api_envd_req.c: a filesystem request's user, fields, paths and errors.
 * See api_envd_req.h.
 *
 * Every path goes the same way: the message's string, resolved as envd
 * resolves it for the request's user, normalised, then made relative to
 * the files root (outside it: permission_denied) and opened from there by
 * lib/core/files.c, in the kernel, so that no link leads out.  Errors
 * are errno values until the reply, where api_errno names them as
 * Connect codes (as the HTTP statuses of /files).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/api_errno.h"
#include "api/api_files.h"
#include "api_envd_req.h"
#include "base/fsutil.h"
#include "connect.h"
#include "core/fileops.h"
#include "core/files.h"
#include "envd.h"

void
api_envd_req_fail(struct envd_err *e, int err, const char *what,
    const char *abs)
{
	if (err == ELOOP)
		envd_err_set(e, "permission_denied", "%s '%s': outside the "
		    "files root", what, abs);
	else
		envd_err_set(e, api_errno(err)->connect, "%s '%s': %s", what,
		    abs, strerror(err));
}

/* s as envd resolves it for u, then relative to the files root. */
int
api_envd_req_resolve(struct http_conn *c, const struct envd_user *u,
    const char *s, struct api_envd_req_path *p, struct envd_err *e)
{
	const struct files_root	*root = &api_of(c)->files->root;

	if (envd_path(api_of(c)->envd, u, s, true, p->abs, sizeof(p->abs),
	    e) == -1)
		return -1;
	if (files_normalize(p->abs) == -1 ||
	    files_rel(root, p->abs, p->rel, sizeof(p->rel)) == -1) {
		api_envd_req_fail(e, errno == EINVAL || errno == ENAMETOOLONG ?
		    errno : ELOOP, "path", p->abs);
		return -1;
	}
	return 0;
}

/* name in dir ("": dir itself); -1: ENAMETOOLONG. */
int
api_envd_req_child(const struct api_envd_req_path *dir, const char *name,
    struct api_envd_req_path *out)
{
	bool	top = strcmp(dir->rel, ".") == 0;

	if (fsutil_join(out->abs, sizeof(out->abs), dir->abs, name) == -1 ||
	    snprintf(out->rel, sizeof(out->rel), "%s%s%s", top && *name ? "" :
	    dir->rel, top || *name == '\0' ? "" : "/", name) >=
	    (int)sizeof(out->rel)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

/*
 * rel and its missing parents, made for the user: owned by it when the
 * agent is root (else by the agent), mode 0755.
 */
int
api_envd_req_mkdirs(const struct files_root *root, const char *rel,
    const struct envd_user *u)
{
	return fileops_mkdirs_owned(root, rel, 0755, geteuid() == 0 ? u->uid :
	    (uid_t)-1, u->gid);
}

/* The parents of rel made, owned by u as envd makes them. */
int
api_envd_req_mkparents(const struct files_root *root, const char *rel,
    const struct envd_user *u)
{
	char	parent[PATH_MAX], *slash;

	snprintf(parent, sizeof(parent), "%s", rel);
	if ((slash = strrchr(parent, '/')) == NULL)
		return 0;
	*slash = '\0';
	return api_envd_req_mkdirs(root, parent, u);
}

/* The message's string field (absent: "", proto3's default), resolved. */
int
api_envd_req_field(struct http_conn *c, const struct envd_user *u,
    const cJSON *j, const char *name, struct api_envd_req_path *p,
    struct envd_err *e)
{
	const cJSON	*f = connect_field(j, name);

	if (f != NULL && !cJSON_IsString(f)) {
		envd_err_set(e, "invalid_argument", "%s: must be a string",
		    name);
		return -1;
	}
	return api_envd_req_resolve(c, u, f != NULL ? f->valuestring : "", p,
	    e);
}

/* A bool field: true, or "true" as some encoders write it. */
bool
api_envd_req_bool(const cJSON *j, const char *name)
{
	const cJSON	*f = connect_field(j, name);

	return cJSON_IsTrue(f) || (cJSON_IsString(f) &&
	    strcmp(f->valuestring, "true") == 0);
}

cJSON *
api_envd_req_unary(struct http_conn *c, struct http_req *r, struct envd_user *u,
    struct envd_err *e)
{
	if (envd_request_user(api_of(c)->envd, r, u, e) == -1)
		return NULL;
	return envd_unary_body(r, e);
}
