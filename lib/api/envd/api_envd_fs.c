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
#include "base/turn.h"
#include "base/util.h"
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
 * A ListDir walked FILES_LIST_TURN entries a loop turn (a deep listing
 * of "/" meets its FILES_LIST_MAX entries only after many), owned by the
 * connection meanwhile.
 */
struct api_envd_fs_listing {
	struct http_conn		*c;
	struct ev_loop			*loop;
	struct turn			 turn;
	struct api_envd_req_path	 p;
	struct api_envd_fs_lister	 l;
	cJSON				*out;
	struct fileops_walk		 w;
};

static void
api_envd_fs_listing_free(struct api_envd_fs_listing *x)
{
	turn_stop(x->loop, &x->turn);
	fileops_walk_close(&x->w);
	cJSON_Delete(x->out);
	free(x->l.nm);
	free(x);
}

static void
api_envd_fs_listing_closed(struct http_conn *c, void *owner)
{
	(void)c;
	api_envd_fs_listing_free(owner);
}

/* A share of the walk; the reply once it is over.  true: over. */
static bool
api_envd_fs_listing_step(struct api_envd_fs_listing *x)
{
	struct envd_err	 e;
	cJSON		*out;
	int		 rc;

	rc = fileops_walk_step(&x->w, FILES_LIST_TURN, api_envd_fs_list_one,
	    &x->l);
	if (rc == 1)
		return false;
	http_conn_own(x->c, NULL, NULL, NULL);
	if (rc == -1)
		api_envd_req_fail(&e, errno, "list", x->l.failed.abs[0] !=
		    '\0' ? x->l.failed.abs : x->p.abs);
	else if (x->w.truncated)
		envd_err_set(&e, "resource_exhausted", "list '%s': more than "
		    "%d entries; list less deep", x->p.abs, FILES_LIST_MAX);
	if (rc == -1 || x->w.truncated)
		envd_reply_err(x->c, &e);
	else {
		out = x->out;
		x->out = NULL;
		envd_reply(x->c, out);
	}
	api_envd_fs_listing_free(x);
	return true;
}

static void
api_envd_fs_listing_cb(struct ev_loop *loop, ev_check *w, int revents)
{
	struct api_envd_fs_listing	*x = container_of(w,
					    struct api_envd_fs_listing,
					    turn.check);

	(void)loop;
	(void)revents;
	(void)api_envd_fs_listing_step(x);
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
	struct api_envd_fs_listing	*x;
	struct envd_user		 u;
	struct envd_err			 e;
	struct stat			 st;
	const cJSON			*d;
	cJSON				*j;
	double				 depth = 1;

	if ((x = calloc(1, sizeof(*x))) == NULL) {
		envd_err_set(&e, "resource_exhausted", "out of memory");
		envd_reply_err(c, &e);
		return;
	}
	x->c = c;
	x->loop = api_of(c)->tab->loop;
	turn_init(&x->turn, api_envd_fs_listing_cb);
	if ((j = api_envd_req_unary(c, r, &u, &e)) == NULL ||
	    api_envd_req_field(c, &u, j, "path", &x->p, &e) == -1)
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
	if (files_stat(root, x->p.rel, true, &st) == -1) {
		api_envd_req_fail(&e, errno, "list", x->p.abs);
		goto fail;
	}
	if (!S_ISDIR(st.st_mode)) {
		envd_err_set(&e, "invalid_argument", "path is not a "
		    "directory: %s", x->p.abs);
		goto fail;
	}
	x->l.root = root;
	x->l.dir = &x->p;
	if ((x->l.nm = calloc(1, sizeof(*x->l.nm))) == NULL ||
	    (x->out = cJSON_CreateObject()) == NULL ||
	    (x->l.ents = cJSON_AddArrayToObject(x->out, "entries")) == NULL) {
		api_envd_req_fail(&e, ENOMEM, "list", x->p.abs);
		goto fail;
	}
	if (fileops_walk_open(&x->w, root, x->p.rel, (int)depth) == -1) {
		api_envd_req_fail(&e, errno, "list", x->p.abs);
		goto fail;
	}
	cJSON_Delete(j);
	if (api_envd_fs_listing_step(x))
		return;
	http_conn_own(c, x, NULL, api_envd_fs_listing_closed);
	turn_start(x->loop, &x->turn);
	return;
fail:
	cJSON_Delete(j);
	api_envd_fs_listing_free(x);
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
