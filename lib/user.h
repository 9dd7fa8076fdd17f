/*
 * user: the account a child runs as, from a request's "user" or the
 * agent's --default-user: a name, a uid or "uid:gid".  Names are looked
 * up in /etc/passwd itself (fgetpwent), not through NSS, so that a
 * static build finds the same accounts.
 */
#ifndef TEND_USER_H
#define TEND_USER_H

#include <sys/types.h>

#include <stddef.h>

#include "tunables.h"

struct user_id {
	uid_t	uid;
	gid_t	gid;
	/* The passwd name, for initgroups; "" when it has none (or uid:gid). */
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
int	user_parse(const char *spec, struct user_id *u);
/* A uid as a number of the JSON (0..API_UID_MAX): as user_parse. */
int	user_by_uid(uid_t uid, struct user_id *u);

/*
 * The name of group gid, read from /etc/group itself (fgetgrent, no
 * NSS), into out (n bytes): 0, or -1 with errno (ENOENT: no entry).
 */
int	user_group_name(gid_t gid, char *out, size_t n);

#endif
