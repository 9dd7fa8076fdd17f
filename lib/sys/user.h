/*
 * user: the account a child runs as, from a request's "user" or the
 * agent's --default-user: a name, a uid or "uid:gid"; its supplementary
 * groups; a group by name or number; a login shell.  Everything is read
 * from /etc/passwd and /etc/group themselves (fgetpwent, fgetgrent),
 * never through NSS, so that the static build finds the same accounts
 * and needs no shared library at run time.
 */
#ifndef TEND_USER_H
#define TEND_USER_H

#include <sys/types.h>

#include <stddef.h>

#include "base/tunables.h"

/* The files read; NULL (for the whole struct or one field): the system's. */
struct user_files {
	const char	*passwd;	/* USER_PASSWD */
	const char	*group;		/* USER_GROUP */
};

struct user_id {
	uid_t	uid;
	gid_t	gid;
	/* The passwd name, for user_groups; "" when none (or uid:gid). */
	char	name[USER_NAME_MAX];
	/* Its home directory; "/" when it has no entry. */
	char	home[USER_HOME_MAX];
};

/*
 * spec as a name, decimal uid or "uid:gid" into *u.  A uid with no
 * passwd entry runs with the gid of the same number; "uid:gid" takes no
 * supplementary groups.  -1 and errno: EINVAL (not of that form, or
 * (uid_t)-1), ENOENT (no such name), or what reading the file said.
 */
int	user_parse(const struct user_files *, const char *spec,
	    struct user_id *u);
/* A uid as a number of the JSON (0..API_UID_MAX): as user_parse. */
int	user_by_uid(const struct user_files *, uid_t uid, struct user_id *u);
/* spec as a group name or decimal gid: as user_parse (ENOENT, EINVAL). */
int	user_group(const struct user_files *, const char *spec, gid_t *gid);
/*
 * What initgroups would set for name: gid first, then every group that
 * lists name as a member, each once, into list (max entries).  Their
 * number, or -1 and errno (ENOSPC: more than max).  No group file: gid
 * alone.
 */
int	user_groups(const struct user_files *, const char *name, gid_t gid,
	    gid_t *list, size_t max);
/* uid's login shell from its passwd entry into buf (n bytes): ENOENT
 * when it has no entry or an empty shell, ENAMETOOLONG. */
int	user_shell(const struct user_files *, uid_t uid, char *buf, size_t n);

/*
 * The name of group gid, read from /etc/group itself (fgetgrent, no
 * NSS), into out (n bytes): 0, or -1 with errno (ENOENT: no entry).
 */
int	user_group_name(const struct user_files *, gid_t gid, char *out,
	    size_t n);

#endif
