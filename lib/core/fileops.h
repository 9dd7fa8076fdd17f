/*
 * fileops: what the file routes do to names under a root (files.h)
 * besides reading and uploading (upload.h): list, mkdir, delete, move.
 * Each resolves its paths again from the root, as files.h's contract
 * says; -1 with errno.
 */
#ifndef TEND_FILEOPS_H
#define TEND_FILEOPS_H

#include <sys/stat.h>
#include <sys/types.h>

#include <limits.h>
#include <stdbool.h>

#include "base/tunables.h"

#include "files.h"

/*
 * One entry of a listing: name relative to the listed directory ("a/b"
 * below depth 1), its lstat, target the text of a link (else NULL).
 * -1 (errno set) ends the listing with that failure.
 */
typedef int	(*fileops_list_fn)(void *arg, const char *name,
		    const struct stat *, const char *target);

/*
 * The entries under directory rel (through links), depth levels deep
 * (1: its children; at most FILES_LIST_DEPTH_MAX, else EINVAL), sorted
 * by name, a directory's entries after it, each given to fn.  Links are
 * listed, never descended.  At most FILES_LIST_MAX entries: *truncated
 * says there were more.  ENOTDIR: rel is not a directory.
 */
int	fileops_list(const struct files_root *, const char *rel, int depth,
	    fileops_list_fn fn, void *arg, bool *truncated);

/*
 * fileops_list in shares, for a caller that answers from a loop: the
 * walk's state (at most FILES_LIST_DEPTH_MAX directories open, each
 * with its sorted names), one walk a struct.  fileops_walk_open as
 * fileops_list begins (-1 with errno, nothing held); fileops_walk_step
 * gives at most budget more entries to fn: 1 when there are more, 0 when
 * the walk is over (truncated says as fileops_list's *truncated does),
 * -1 (errno) for a failure; fileops_walk_close lets go of what is held,
 * after any of them.
 */
struct fileops_level {
	void		 *d;		/* DIR * */
	char		**names;
	size_t		  n, i;		/* names, the next one */
	size_t		  plen;		/* of the prefix in path */
	int		  depth;	/* levels listed from here */
};
struct fileops_walk {
	int			 nlev;
	int			 count;		/* entries given */
	bool			 truncated;
	struct fileops_level	 lev[FILES_LIST_DEPTH_MAX];
	char			 path[PATH_MAX];	/* the entry's name */
};
int	fileops_walk_open(struct fileops_walk *, const struct files_root *,
	    const char *rel, int depth);
int	fileops_walk_step(struct fileops_walk *, int budget,
	    fileops_list_fn fn, void *arg);
void	fileops_walk_close(struct fileops_walk *);

/*
 * mkdir of rel (mode less the umask).  parents: missing parents made,
 * an existing directory is success; else an existing name is EEXIST.
 */
int	fileops_mkdir(const struct files_root *, const char *rel,
	    bool parents, mode_t mode);
/*
 * mkdir -p of rel, each directory it makes (mode less the umask) given
 * to uid:gid (uid (uid_t)-1: left to the agent), those on the way taken
 * as they are (ENOTDIR: something else is on the way).
 */
int	fileops_mkdirs_owned(const struct files_root *, const char *rel,
	    mode_t mode, uid_t uid, gid_t gid);
/*
 * Remove rel (a link itself, never its target).  A non-empty directory
 * is ENOTEMPTY unless recursive (then removed whole, links not
 * followed).  The root itself: EBUSY.
 */
int	fileops_delete(const struct files_root *, const char *rel,
	    bool recursive);
/*
 * fileops_delete(rel, recursive) in a helper child (spawn_helper), for a
 * tree of any size off the caller's loop: its pid (the caller watches
 * it), or -1 (errno).  fileops_delete_status of its wait status: 0, or
 * -1 with the errno the delete failed with (EINTR: the child was killed).
 */
pid_t	fileops_delete_spawn(const struct files_root *, const char *rel);
int	fileops_delete_status(int wstatus);
/*
 * rename(2) of from to to, both under the root, to's directory existing.
 * Without overwrite an existing to is EEXIST (RENAME_NOREPLACE); across
 * file systems EXDEV (nothing is copied).  The root itself: EBUSY.
 */
int	fileops_move(const struct files_root *, const char *from,
	    const char *to, bool overwrite);

#endif
