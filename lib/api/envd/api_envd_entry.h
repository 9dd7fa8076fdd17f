/*
 * api_envd_entry: envd's EntryInfo of a path under the files root, as
 * envd fills it (Stat, MakeDir, Move, ListDir, WatchDir's entries).
 */
#ifndef TEND_API_ENVD_ENTRY_H
#define TEND_API_ENVD_ENTRY_H

#include <sys/stat.h>

#include <stdbool.h>

#include <cjson/cJSON.h>

#include "api_envd_req.h"
#include "base/tunables.h"
#include "core/files.h"
#include "net/http.h"
#include "sys/user.h"

/* Owner and group names met in one reply: a listing asks again and again. */
struct api_envd_entry_names {
	struct {
		unsigned	 id;
		bool		 used;
		char		 name[USER_NAME_MAX];
	}		 u[ENVD_ENTRY_NAMES], g[ENVD_ENTRY_NAMES];
	int		 nu, ng;
};

/*
 * Go's os.FileMode.String() of m, as envd's "permissions" shows it:
 * "-rw-r--r--", "drwxr-xr-x", "Lrwxrwxrwx", "dtrwxrwxrwx", "urwxr-xr-x".
 */
void	api_envd_entry_perm(mode_t m, char out[24]);
/*
 * The entry of p, as envd fills it: the name itself (lstat), but for a
 * link the type and permission bits of what it leads to (followed
 * inside the root; a dangling one, or one leading out, is unspecified)
 * and symlinkTarget, the target's path resolved (the link's own text
 * when it cannot be).  Owner and group names through nm.  NULL with
 * errno.
 */
cJSON	*api_envd_entry(const struct files_root *,
	    const struct api_envd_req_path *p, struct api_envd_entry_names *nm);
/*
 * The file's metadata, its user.e2b.<key> extended attributes, as
 * envd's EntryInfo.metadata {"key":"value"} (fd: any open fd of the
 * file, O_PATH too); NULL when it has none, or they cannot be read (a
 * file system without them).  A name or value that is not UTF-8, or a
 * value past ENVD_META_READ_MAX of them in all, is left out (envd
 * leaves out what its JSON cannot carry).
 */
cJSON	*api_envd_entry_meta(int fd);
/* {"entry": EntryInfo of p}, or the error of its stat (what). */
void	api_envd_entry_reply(struct http_conn *, const char *what,
	    const struct api_envd_req_path *p);

#endif
