/*
 * api_envd_req: what a request of envd's filesystem service carries, as
 * its handlers read it (api_envd_fs, api_envd_watch, api_envd_files):
 * its user and unary body, its fields, its paths resolved as envd
 * resolves them (envd_path: "~", relative to the home), then confined
 * to the files root, and errors as Connect's (api_errno).
 */
#ifndef TEND_API_ENVD_REQ_H
#define TEND_API_ENVD_REQ_H

#include <sys/types.h>

#include <limits.h>
#include <stdbool.h>

#include <cjson/cJSON.h>

#include "core/files.h"
#include "envd.h"
#include "net/http.h"

/* A path of a request: as the client wrote it resolved, and to the root. */
struct api_envd_req_path {
	char	abs[PATH_MAX];
	char	rel[PATH_MAX];
};

/* e: errno err of what on abs, in Connect's codes (ELOOP: outside). */
void	api_envd_req_fail(struct envd_err *e, int err, const char *what,
	    const char *abs);
/* s as envd resolves it for u, then relative to the files root. */
int	api_envd_req_resolve(struct http_conn *, const struct envd_user *u,
	    const char *s, struct api_envd_req_path *, struct envd_err *);
/* name in dir ("": dir itself); -1: ENAMETOOLONG. */
int	api_envd_req_child(const struct api_envd_req_path *dir,
	    const char *name, struct api_envd_req_path *out);
/*
 * rel and its missing parents, made for the user: owned by it when the
 * agent is root (else by the agent), mode 0755.
 */
int	api_envd_req_mkdirs(const struct files_root *, const char *rel,
	    const struct envd_user *);
/* The parents of rel made, owned by u as envd makes them. */
int	api_envd_req_mkparents(const struct files_root *, const char *rel,
	    const struct envd_user *u);
/* The message's string field (absent: "", proto3's default), resolved. */
int	api_envd_req_field(struct http_conn *, const struct envd_user *,
	    const cJSON *j, const char *name, struct api_envd_req_path *,
	    struct envd_err *);
/* A bool field: true, or "true" as some encoders write it. */
bool	api_envd_req_bool(const cJSON *j, const char *name);
/* A unary call's user and body; NULL with e filled. */
cJSON	*api_envd_req_unary(struct http_conn *, struct http_req *,
	    struct envd_user *, struct envd_err *e);

#endif
