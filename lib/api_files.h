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

#include "files.h"
#include "http.h"

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

/* tend's routes: the files root. */
void	api_files_get(struct http_conn *, struct http_req *);	/* and HEAD */
void	api_files_put(struct http_conn *, struct http_req *);
void	api_files_put_body(struct http_conn *, struct http_req *,
	    const char *, size_t);
void	api_files_delete(struct http_conn *, struct http_req *);
void	api_files_post(struct http_conn *, struct http_req *);
void	api_files_persist(struct http_conn *, struct http_req *);
void	api_files_hydrate(struct http_conn *, struct http_req *);
void	api_files_hydrate_body(struct http_conn *, struct http_req *,
	    const char *, size_t);

/* The bridge's: the workspace, the bridge's replies and error vocabulary. */
void	api_files_bridge_get(struct http_conn *, struct http_req *);
void	api_files_bridge_put(struct http_conn *, struct http_req *);
void	api_files_bridge_put_body(struct http_conn *, struct http_req *,
	    const char *, size_t);
void	api_files_bridge_delete(struct http_conn *, struct http_req *);
void	api_files_bridge_post(struct http_conn *, struct http_req *);
void	api_files_bridge_persist(struct http_conn *, struct http_req *);
void	api_files_bridge_hydrate(struct http_conn *, struct http_req *);
void	api_files_bridge_hydrate_body(struct http_conn *, struct http_req *,
	    const char *, size_t);

#endif
