/*
 * api_sandbox: the routes only the bridge has — POST /v1/sandbox,
 * GET /health, .../running, DELETE /v1/sandbox/{id}, the stable exec
 * (SSE), mount/unmount (501), a bad {sandboxId} (400) — the bridge's
 * process launch and terminal create (cwd confined to the workspace), and GET
 * /v1/openapi.json and /v1/openapi.html.
 */
#ifndef TEND_API_SANDBOX_H
#define TEND_API_SANDBOX_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"

/* In the API's namespace; in the bridge's (paths as rewritten). */
extern const struct http_route api_sandbox_routes[];
extern const struct http_route api_sandbox_bridge_routes[];

/* The container's name, POST /v1/sandbox's "id": its host name's. */
void	api_sandbox_name(char *out, size_t n);
/* o->cwd absolute and in the workspace once normalised (into buf), or 403. */
int	api_sandbox_cwd(const struct api_files *, struct proc_opts *,
	    char buf[PATH_MAX], struct api_err *);
/*
 * Where a namespace command without a cwd runs: the workspace, made if
 * missing; NULL (the agent's directory) if it cannot be made.
 */
const char	*api_sandbox_default_cwd(const struct api_files *);
/* The same for *cwd (NULL: nothing to check), which then points into buf. */
int	api_sandbox_cwd_path(const struct api_files *, const char **cwd,
	    char buf[PATH_MAX], struct api_err *);
/* The stable exec's body: launch fields, timeout_ms, cwd; -1 with e. */
int	api_sandbox_exec_opts(struct api *, const cJSON *, struct proc_opts *,
	    char ***argv, char ***env, char cwd[PATH_MAX], struct api_err *);
/* A mount (or unmount) body: -1 always, 400 or 501 not_supported. */
int	api_sandbox_mount_body(const cJSON *, bool mount, struct api_err *);

#endif
