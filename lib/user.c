/*
 * user.c: the account a child runs as.
 *
 * Reads /etc/passwd with fgetpwent rather than getpwnam: the agent is
 * PID 1 of a container whose NSS configuration is whatever the image
 * ships, and a static build has no NSS at all; the file is what every
 * image has.  A numeric uid needs no entry: sandboxes run programs as
 * ids nobody wrote down.
 */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "user.h"

static int	user_find(const char *, uid_t, struct user_id *);
static int	user_number(const char *, const char *, unsigned long *);

/*
 * The passwd entry named name (or, name NULL, of uid) into *u: 1 found,
 * 0 not, -1 when the file cannot be read (a missing file is "not found").
 */
static int
user_find(const char *name, uid_t uid, struct user_id *u)
{
	struct passwd	*pw;
	FILE		*f;
	int		 rc = 0, err = 0;

	if ((f = fopen(USER_PASSWD, "re")) == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((pw = fgetpwent(f)) != NULL) {
		if (name != NULL ? strcmp(pw->pw_name, name) != 0 :
		    pw->pw_uid != uid)
			continue;
		rc = 1;
		u->uid = pw->pw_uid;
		u->gid = pw->pw_gid;
		if (snprintf(u->name, sizeof(u->name), "%s", pw->pw_name) >=
		    (int)sizeof(u->name) || snprintf(u->home, sizeof(u->home),
		    "%s", pw->pw_dir[0] == '/' ? pw->pw_dir : "/") >=
		    (int)sizeof(u->home))
			rc = -1, err = ENAMETOOLONG;
		break;
	}
	if (pw == NULL && ferror(f))
		rc = -1, err = EIO;
	(void)fclose(f);
	if (rc == -1)
		errno = err;
	return rc;
}

/* Decimal digits from s up to end (or its NUL), below (uid_t)-1. */
static int
user_number(const char *s, const char *end, unsigned long *v)
{
	char	*e;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoul(s, &e, 10);
	if (errno != 0 || e != (end != NULL ? end : s + strlen(s)) ||
	    *v >= (unsigned long)(uid_t)-1)
		return -1;
	return 0;
}

int
user_by_uid(uid_t uid, struct user_id *u)
{
	int	rc;

	if (uid == (uid_t)-1) {
		errno = EINVAL;
		return -1;
	}
	if ((rc = user_find(NULL, uid, u)) == -1)
		return -1;
	if (rc == 0) {
		u->uid = uid;
		u->gid = (gid_t)uid;
		u->name[0] = '\0';
		(void)snprintf(u->home, sizeof(u->home), "/");
	}
	return 0;
}

int
user_parse(const char *spec, struct user_id *u)
{
	unsigned long	 uid, gid;
	const char	*colon;
	int		 rc;

	memset(u, 0, sizeof(*u));
	if ((colon = strchr(spec, ':')) != NULL) {
		if (user_number(spec, colon, &uid) == -1 ||
		    user_number(colon + 1, NULL, &gid) == -1) {
			errno = EINVAL;
			return -1;
		}
		u->uid = (uid_t)uid;
		u->gid = (gid_t)gid;
		(void)snprintf(u->home, sizeof(u->home), "/");
		return 0;
	}
	if (user_number(spec, NULL, &uid) == 0)
		return user_by_uid((uid_t)uid, u);
	if (*spec == '\0') {
		errno = EINVAL;
		return -1;
	}
	if ((rc = user_find(spec, 0, u)) == 0)
		errno = ENOENT;
	return rc == 1 ? 0 : -1;
}

int
user_group_name(gid_t gid, char *out, size_t n)
{
	struct group	*gr;
	FILE		*f;
	int		 rc = -1, saved;

	if ((f = fopen(USER_GROUP, "re")) == NULL)
		return -1;
	errno = ENOENT;
	while ((gr = fgetgrent(f)) != NULL)
		if (gr->gr_gid == gid) {
			if (snprintf(out, n, "%s", gr->gr_name) < (int)n)
				rc = 0;
			else
				errno = ENAMETOOLONG;
			break;
		}
	saved = errno;
	fclose(f);
	errno = saved;
	return rc;
}
