/*
 * api_envd_fs.c: envd's unary filesystem calls and the service's route
 * table.  See api_envd_fs.h; the wire facts are proto/README.md's (the
 * envd namespace, "Files and watching").
 */
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "api/api.h"
#include "api/api_files.h"
#include "api_envd_entry.h"
#include "api_envd_files.h"
#include "api_envd_fs.h"
#include "api_envd_req.h"
#include "api_envd_watch.h"
#include "base/tunables.h"
#include "connect.h"
#include "core/fileops.h"
#include "core/files.h"
#include "envd.h"

static void	api_envd_fs_stat(struct http_conn *, struct http_req *);
static void	api_envd_fs_makedir(struct http_conn *, struct http_req *);
static void	api_envd_fs_move(struct http_conn *, struct http_req *);
static int	api_envd_fs_list_one(void *, const char *, const struct stat *,
		    const char *);
static void	api_envd_fs_listdir(struct http_conn *, struct http_req *);
static void	api_envd_fs_remove(struct http_conn *, struct http_req *);

static void
api_envd_fs_stat(struct http_conn *c, struct http_req *r)
{
	struct envd_user		 u;
	struct envd_err			 e;
	struct api_envd_req_path	 p;
	cJSON				*j;

	if ((j = api_envd_req_unary(c, r, &u, &e)) == NULL ||
	    api_envd_req_field(c, &u, j, "path", &p, &e) == -1) {
		cJSON_Delete(j);
		envd_reply_err(c, &e);
		return;
	}
	cJSON_Delete(j);
	api_envd_entry_reply(c, "stat", &p);
}

/* mkdir -p, the directories made the user's; an existing one is refused. */
static void
api_envd_fs_makedir(struct http_conn *c, struct http_req *r)
{
	const struct files_root		*root = &api_of(c)->files->root;
	struct envd_user		 u;
	struct envd_err			 e;
	struct api_envd_req_path	 p;
	struct stat			 st;
	cJSON				*j;

	if ((j = api_envd_req_unary(c, r, &u, &e)) == NULL ||
	    api_envd_req_field(c, &u, j, "path", &p, &e) == -1)
		goto fail;
	if (files_stat(root, p.rel, true, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			envd_err_set(&e, "already_exists", "directory already "
			    "exists: %s", p.abs);
		else
			envd_err_set(&e, "invalid_argument", "path already "
			    "exists but it is not a directory: %s", p.abs);
		goto fail;
	}
	if (api_envd_req_mkdirs(root, p.rel, &u) == -1) {
		api_envd_req_fail(&e, errno, "make directory", p.abs);
		goto fail;
	}
	cJSON_Delete(j);
	api_envd_entry_reply(c, "stat", &p);
	return;
fail:
	cJSON_Delete(j);
	envd_reply_err(c, &e);
}

/* rename(2), replacing, the destination's parents made for the user. */
static void
api_envd_fs_move(struct http_conn *c, struct http_req *r)
{
	const struct files_root		*root = &api_of(c)->files->root;
	struct envd_user		 u;
	struct envd_err			 e;
	struct api_envd_req_path	 from, to;
	cJSON				*j;

	if ((j = api_envd_req_unary(c, r, &u, &e)) == NULL ||
	    api_envd_req_field(c, &u, j, "source", &from, &e) == -1 ||
	    api_envd_req_field(c, &u, j, "destination", &to, &e) == -1)
		goto fail;
	if (api_envd_req_mkparents(root, to.rel, &u) == -1) {
		api_envd_req_fail(&e, errno, "move to", to.abs);
		goto fail;
	}
	if (fileops_move(root, from.rel, to.rel, true) == -1) {
		api_envd_req_fail(&e, errno, "move", errno == ENOENT ?
		    from.abs : to.abs);
		goto fail;
	}
	cJSON_Delete(j);
	api_envd_entry_reply(c, "stat", &to);
	return;
fail:
	cJSON_Delete(j);
	envd_reply_err(c, &e);
}

/* A ListDir on its way: the directory, the entries made so far. */
struct api_envd_fs_lister {
	const struct files_root		*root;
	const struct api_envd_req_path	*dir;
	struct api_envd_entry_names	*nm;
	cJSON				*ents;
	struct api_envd_req_path failed;	/* the entry that failed */
};

/* One entry the walk met, as a full EntryInfo; gone since: skipped. */
static int
api_envd_fs_list_one(void *arg, const char *name, const struct stat *st,
    const char *target)
{
	struct api_envd_fs_lister	*l = arg;
	struct api_envd_req_path	 sub;
	cJSON				*ent;

	(void)st;
	(void)target;
	if (api_envd_req_child(l->dir, name, &sub) == -1)
		return 0;
	if ((ent = api_envd_entry(l->root, &sub, l->nm)) == NULL) {
		if (errno == ENOENT)
			return 0;	/* gone since the walk */
		l->failed = sub;
		return -1;
	}
	cJSON_AddItemToArray(l->ents, ent);
	return 0;
}

/*
 * The entries under a directory (through a link), depth levels deep
 * (0: 1; at most FILES_LIST_DEPTH_MAX), as fileops_list walks them: each
 * a full EntryInfo.  More than FILES_LIST_MAX is resource_exhausted,
 * never a silently shorter list.
 */
static void
api_envd_fs_listdir(struct http_conn *c, struct http_req *r)
{
	const struct files_root		*root = &api_of(c)->files->root;
	struct api_envd_fs_lister	 l;
	struct envd_user		 u;
	struct envd_err			 e;
	struct api_envd_req_path	 p;
	struct stat			 st;
	const cJSON			*d;
	cJSON				*j, *out = NULL;
	double				 depth = 1;
	bool				 truncated = false;

	memset(&l, 0, sizeof(l));
	if ((j = api_envd_req_unary(c, r, &u, &e)) == NULL ||
	    api_envd_req_field(c, &u, j, "path", &p, &e) == -1)
		goto fail;
	if ((d = connect_field(j, "depth")) != NULL) {
		if (cJSON_IsString(d))
			depth = strtod(d->valuestring, NULL);
		else if (cJSON_IsNumber(d))
			depth = d->valuedouble;
		else {
			envd_err_set(&e, "invalid_argument", "depth: must be "
			    "a number");
			goto fail;
		}
	}
	/* Written so that NaN ("nan") is 1 too: its casts are undefined. */
	depth = !(depth >= 1) ? 1 : depth > FILES_LIST_DEPTH_MAX ?
	    FILES_LIST_DEPTH_MAX : depth;
	if (files_stat(root, p.rel, true, &st) == -1) {
		api_envd_req_fail(&e, errno, "list", p.abs);
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		envd_err_set(&e, "invalid_argument", "path is not a "
		    "directory: %s", p.abs);
		goto fail;
	}
	l.root = root;
	l.dir = &p;
	if ((l.nm = calloc(1, sizeof(*l.nm))) == NULL ||
	    (out = cJSON_CreateObject()) == NULL ||
	    (l.ents = cJSON_AddArrayToObject(out, "entries")) == NULL) {
		api_envd_req_fail(&e, ENOMEM, "list", p.abs);
		goto fail;
	}
	if (fileops_list(root, p.rel, (int)depth, api_envd_fs_list_one, &l,
	    &truncated) == -1) {
		api_envd_req_fail(&e, errno, "list", l.failed.abs[0] != '\0' ?
		    l.failed.abs : p.abs);
		goto fail;
	}
	if (truncated) {
		envd_err_set(&e, "resource_exhausted", "list '%s': more than "
		    "%d entries; list less deep", p.abs, FILES_LIST_MAX);
		goto fail;
	}
	cJSON_Delete(j);
	free(l.nm);
	envd_reply(c, out);
	return;
fail:
	cJSON_Delete(j);
	cJSON_Delete(out);
	free(l.nm);
	envd_reply_err(c, &e);
}

static void
api_envd_fs_removed(struct http_conn *c, int err, void *arg)
{
	struct api_envd_req_path	*p = arg;
	struct envd_err			 e;

	if (err != 0 && err != ENOENT) {
		api_envd_req_fail(&e, err, "remove", p->abs);
		envd_reply_err(c, &e);
	} else
		envd_reply(c, cJSON_CreateObject());
	free(p);
}

/*
 * rm -rf; a path that is not there is removed already (os.RemoveAll).
 * A directory's tree goes in a helper child (api_files_delete_run).
 */
static void
api_envd_fs_remove(struct http_conn *c, struct http_req *r)
{
	struct envd_user		 u;
	struct envd_err			 e;
	struct api_envd_req_path	*p;
	cJSON				*j;

	if ((p = malloc(sizeof(*p))) == NULL) {
		envd_err_set(&e, "resource_exhausted", "out of memory");
		envd_reply_err(c, &e);
		return;
	}
	if ((j = api_envd_req_unary(c, r, &u, &e)) == NULL ||
	    api_envd_req_field(c, &u, j, "path", p, &e) == -1) {
		cJSON_Delete(j);
		free(p);
		envd_reply_err(c, &e);
		return;
	}
	cJSON_Delete(j);
	if (api_files_delete_run(c, &api_of(c)->files->root, p->rel, true,
	    api_envd_fs_removed, p) == -1) {
		api_envd_req_fail(&e, errno, "remove", p->abs);
		free(p);
		envd_reply_err(c, &e);
	}
}

/* ------------------------------------------------------------------ */
/* The routes */

const struct http_route api_envd_fs_routes[] = {
	{ "POST",	"/filesystem.Filesystem/Stat",
	    api_envd_fs_stat, NULL },
	{ "POST",	"/filesystem.Filesystem/MakeDir",
	    api_envd_fs_makedir, NULL },
	{ "POST",	"/filesystem.Filesystem/Move",
	    api_envd_fs_move, NULL },
	{ "POST",	"/filesystem.Filesystem/ListDir",
	    api_envd_fs_listdir, NULL },
	{ "POST",	"/filesystem.Filesystem/Remove",
	    api_envd_fs_remove, NULL },
	{ "POST",	"/filesystem.Filesystem/WatchDir",
	    api_envd_watch_dir, NULL },
	{ "POST",	"/filesystem.Filesystem/CreateWatcher",
	    api_envd_watch_create, NULL },
	{ "POST",	"/filesystem.Filesystem/GetWatcherEvents",
	    api_envd_watch_events, NULL },
	{ "POST",	"/filesystem.Filesystem/RemoveWatcher",
	    api_envd_watch_remove, NULL },
	{ "POST",	"/filesystem.Filesystem/*",
	    envd_unimplemented, NULL },
	{ "GET",	"/files",	api_envd_files_get, NULL },
	{ "HEAD",	"/files",	api_envd_files_get, NULL },
	{ "POST",	"/files",	api_envd_files_post,
	    api_envd_files_post_body },
	{ NULL, NULL, NULL, NULL }
};
