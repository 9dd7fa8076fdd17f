/*
 * api_files: the file routes — /v1/file/{path} (GET, HEAD, PUT, DELETE,
 * POST ?op=mkdir|move) against the files root, and the bridge's forms
 * under /v1/sandbox/{id}/ against the workspace — and what the routes
 * on those roots share (api_tar's /v1/persist and /v1/hydrate too): the
 * two roots, a request's path in them, the error replies.  The work is
 * lib/core's (files.h, upload.h, fileops.h); this module moves bytes
 * between it and the connection, through the loop, one budgeted share
 * per callback, in constant memory.
 */
#ifndef TEND_API_FILES_H
#define TEND_API_FILES_H

#include <sys/stat.h>

#include <limits.h>
#include <stdbool.h>

#include "core/files.h"
#include "net/http.h"

struct cJSON;

struct api_files {
	struct files_root	root;		/* --files-root */
	struct files_root	ws;		/* --workspace; fd -1 until it exists */
	char			ws_path[PATH_MAX];
};

/*
 * A file route's argument (http_req_route_arg): the namespace it serves.
 * Every route on these roots has one.
 */
struct api_files_ns {
	bool	 bridge;	/* the workspace, in the bridge's vocabulary */
};
extern const struct api_files_ns api_files_ns_root, api_files_ns_bridge;

/* What a request names: its root, and the path in it. */
struct api_files_req {
	const struct files_root	*root;
	bool			 bridge;
	char			 abs[PATH_MAX];	/* decoded, normalised */
	char			 rel[PATH_MAX];	/* to the root */
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

/* The request's route is the bridge's (its api_files_ns). */
bool	api_files_bridge(struct http_req *);
/*
 * The root of the namespace: the files root, or the workspace, opened
 * the first time it exists (made first when create: a bridge write).
 * NULL with errno.
 */
const struct files_root *api_files_root(struct http_conn *, bool bridge,
	    bool create);

/*
 * The error reply of errno err (api_errno's status and code) for q's
 * path: the bridge's vocabulary in its namespace, "errno" as a detail;
 * what names the operation ("read", "write", ...).
 */
void	api_files_fail(struct http_conn *, const struct api_files_req *q,
	    int err, const char *what);
/* 400 invalid_request "field: why", naming the field. */
void	api_files_invalid(struct http_conn *, const char *field,
	    const char *why);
/* 200 {"ok":true}, the bridge's success. */
void	api_files_reply_ok(struct http_conn *);

/*
 * A regular file's bytes as the reply to r, fd (opened by files_open_read,
 * now the reply's) and st its own: Range honoured (206, 416), sent by
 * sendfile in budgeted shares.  For other routes serving files (envd's
 * GET /files).
 */
void	api_files_send(struct http_conn *, struct http_req *, int fd,
	    const struct stat *);

/* "file", "dir", "symlink", "fifo", "socket", "char", "block". */
const char *api_files_type(mode_t);
/*
 * A listing entry: {"name","type","size","mode","mtime","target"?}, mode
 * the permission bits as a number, mtime RFC 3339, target for a link.
 * NULL on ENOMEM.
 */
struct cJSON *api_files_entry(const char *name, const struct stat *,
	    const char *target);
/*
 * Append to arr the entries fileops_list walks under rel (depth levels,
 * names relative to rel), as api_files_entry makes them.  -1 with errno;
 * *truncated: there were more than FILES_LIST_MAX.
 */
int	api_files_list(const struct files_root *, const char *rel, int depth,
	    struct cJSON *arr, bool *truncated);

/*
 * fileops_delete(rel, recursive) for c: a recursive delete of a
 * directory runs in a helper child (fileops_delete_spawn) and done is
 * called from the loop when it ends, any other delete at once; done gets
 * 0 or the errno, and arg (the caller's, freed by it in done).  The
 * connection owns the child meanwhile: a client gone first kills it (the
 * delete stops part way, as an interrupted rm -r) and done is not called
 * (arg is freed).  -1 (errno): not started, done not called.
 */
typedef void	(*api_files_done_fn)(struct http_conn *, int err, void *arg);
int	api_files_delete_run(struct http_conn *, const struct files_root *,
	    const char *rel, bool recursive, api_files_done_fn done,
	    void *arg);

/* tend's routes on the files root; the bridge's on the workspace. */
extern const struct http_route api_files_routes[];
extern const struct http_route api_files_bridge_routes[];

#endif
