/*
 * api_files: the file routes — /v1/file/{path} (GET, HEAD, PUT, DELETE,
 * POST ?op=mkdir|move), /v1/persist and /v1/hydrate against the files
 * root, and the bridge's forms of each under /v1/sandbox/{id}/ against
 * the workspace.  The work is lib/files.c's and lib/tar.c's; this module
 * moves bytes between them and the connection, through the loop, one
 * budgeted share per callback, in constant memory.
 */
#ifndef TEND_API_FILES_H
#define TEND_API_FILES_H

#include <limits.h>
#include <stdbool.h>

#include "core/files.h"
#include "net/http.h"

struct api_files {
	struct files_root	root;		/* --files-root */
	struct files_root	ws;		/* --workspace; fd -1 until it exists */
	char			ws_path[PATH_MAX];
};

/*
 * Open the files root (it must exist) and, if it exists, the workspace
 * (a bridge write makes it later).  -1 with errno.
 */
int	api_files_init(struct api_files *, const char *root,
	    const char *workspace);

/* The workspace's path, normalised: bridge launches' cwd stays in it. */
const char *api_files_workspace(const struct api_files *);
/* path (normalised in place) lies in the workspace. */
bool	api_files_in_workspace(const struct api_files *, char *path);

/*
 * A regular file's bytes as the reply to r, fd (opened by files_open_read,
 * now the reply's) and st its own: Range honoured (206, 416), sent by
 * sendfile in budgeted shares.  For other routes serving files (envd's
 * GET /files).
 */
void	api_files_send(struct http_conn *, struct http_req *, int fd,
	    const struct stat *);

/* tend's routes on the files root; the bridge's on the workspace. */
extern const struct http_route api_files_routes[];
extern const struct http_route api_files_bridge_routes[];

#endif
