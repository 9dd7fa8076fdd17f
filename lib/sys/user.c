/*
 * user.c: the account a child runs as.
 *
 * Reads /etc/passwd and /etc/group with fgetpwent and fgetgrent rather
 * than getpwnam, getgrnam or initgroups: the agent is PID 1 of a
 * container whose NSS configuration is whatever the image ships, and a
 * static build has no NSS at all (glibc's would dlopen the libnss_*
 * modules of the very version it was linked with); the files are what
 * every image has.  A numeric uid needs no entry: sandboxes run programs
 * as ids nobody wrote down.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "user.h"

static FILE	*user_open(const struct user_files *, bool);
static int	 user_close(FILE *, bool);
static int	 user_copy(char *, size_t, const char *);
static int	 user_find(const struct user_files *, const char *, uid_t,
		    struct user_id *, char *, size_t);
static int	 user_number(const char *, const char *, unsigned long *);
static bool	 user_member(char *const *, const char *);

/*
 * The file as fget*ent reads it: with a newline after a last line that
 * has none.  musl's fgetpwent and fgetgrent (the static build's) cut the
 * last character off every line, newline or not, so a file ending
 * without one lost its last field's last character ("bob:...:" no longer
 * parsed, a last member "alice" became "alic").  Read with pread at the
 * stream's own offset, seekable: glibc's fgetpwent takes the position
 * (fgetpos) to read a long line again.
 */
struct user_file {
	int	 fd;
	off_t	 pos, size;	/* size: the file's, the newline added */
};

static ssize_t
user_file_read(void *cookie, char *buf, size_t n)
{
	struct user_file	*uf = cookie;
	ssize_t			 got;

	if (uf->pos >= uf->size || n == 0)
		return 0;
	if ((got = pread(uf->fd, buf, n, uf->pos)) == -1)
		return -1;
	if (got == 0) {
		buf[0] = '\n';		/* past the file: the added newline */
		got = 1;
	}
	uf->pos += got;
	return got;
}

static int
user_file_seek(void *cookie, off_t *off, int whence)
{
	struct user_file	*uf = cookie;
	off_t			 to;

	to = whence == SEEK_SET ? *off : whence == SEEK_CUR ?
	    uf->pos + *off : uf->size + *off;
	if (to < 0) {
		errno = EINVAL;
		return -1;
	}
	*off = uf->pos = to;
	return 0;
}

static int
user_file_close(void *cookie)
{
	struct user_file	*uf = cookie;
	int			 rc = close(uf->fd);

	free(uf);
	return rc;
}

/* The passwd (group false) or group file; NULL and errno. */
static FILE *
user_open(const struct user_files *f, bool group)
{
	static const cookie_io_functions_t io = {
		.read = user_file_read, .seek = user_file_seek,
		.close = user_file_close,
	};
	struct user_file	*uf;
	struct stat		 st;
	const char		*path;
	FILE			*fp = NULL;
	char			 last;
	int			 saved;

	if (group)
		path = f != NULL && f->group != NULL ? f->group : USER_GROUP;
	else
		path = f != NULL && f->passwd != NULL ? f->passwd : USER_PASSWD;
	if ((uf = calloc(1, sizeof(*uf))) == NULL)
		return NULL;
	if ((uf->fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		free(uf);
		return NULL;
	}
	if (fstat(uf->fd, &st) == 0) {
		uf->size = st.st_size;
		if (st.st_size > 0 && (pread(uf->fd, &last, 1, st.st_size - 1) !=
		    1 || last != '\n'))
			uf->size++;
		fp = fopencookie(uf, "r", io);
	}
	if (fp == NULL) {
		saved = errno;
		(void)user_file_close(uf);
		errno = saved;
	}
	return fp;
}

/*
 * Close a file read to its end with fget*ent: -1 and EIO when it stopped
 * on a read error rather than at the end (done: it stopped on a match).
 */
static int
user_close(FILE *fp, bool done)
{
	bool	bad = !done && ferror(fp);

	(void)fclose(fp);
	if (bad) {
		errno = EIO;
		return -1;
	}
	return 0;
}

static int
user_copy(char *dst, size_t n, const char *src)
{
	if (strlen(src) >= n) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(dst, src, strlen(src) + 1);
	return 0;
}

/*
 * The passwd entry named name (or, name NULL, of uid) into *u, and its
 * shell into shell (n bytes) when shell is not NULL: 1 found, 0 not, -1
 * when the file cannot be read (a missing file is "not found").
 */
static int
user_find(const struct user_files *f, const char *name, uid_t uid,
    struct user_id *u, char *shell, size_t n)
{
	struct passwd	*pw;
	FILE		*fp;
	int		 rc = 0;

	if ((fp = user_open(f, false)) == NULL)
		return errno == ENOENT ? 0 : -1;
	while ((pw = fgetpwent(fp)) != NULL) {
		if (name != NULL ? strcmp(pw->pw_name, name) != 0 :
		    pw->pw_uid != uid)
			continue;
		rc = 1;
		u->uid = pw->pw_uid;
		u->gid = pw->pw_gid;
		if (user_copy(u->name, sizeof(u->name), pw->pw_name) == -1 ||
		    user_copy(u->home, sizeof(u->home), pw->pw_dir != NULL &&
		    pw->pw_dir[0] == '/' ? pw->pw_dir : "/") == -1 ||
		    (shell != NULL && user_copy(shell, n, pw->pw_shell != NULL ?
		    pw->pw_shell : "") == -1))
			rc = -1;
		break;
	}
	if (rc == -1) {
		(void)fclose(fp);
		errno = ENAMETOOLONG;
		return -1;
	}
	return user_close(fp, rc == 1) == -1 ? -1 : rc;
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
user_by_uid(const struct user_files *f, uid_t uid, struct user_id *u)
{
	int	rc;

	if (uid == (uid_t)-1) {
		errno = EINVAL;
		return -1;
	}
	if ((rc = user_find(f, NULL, uid, u, NULL, 0)) == -1)
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
user_parse(const struct user_files *f, const char *spec, struct user_id *u)
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
		return user_by_uid(f, (uid_t)uid, u);
	if (*spec == '\0') {
		errno = EINVAL;
		return -1;
	}
	if ((rc = user_find(f, spec, 0, u, NULL, 0)) == 0)
		errno = ENOENT;
	return rc == 1 ? 0 : -1;
}

int
user_shell(const struct user_files *f, uid_t uid, char *buf, size_t n)
{
	struct user_id	u;
	int		rc;

	if ((rc = user_find(f, NULL, uid, &u, buf, n)) == -1)
		return -1;
	if (rc == 0 || buf[0] == '\0') {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Groups */

int
user_group(const struct user_files *f, const char *spec, gid_t *gid)
{
	struct group	*gr;
	unsigned long	 g;
	FILE		*fp;

	if (user_number(spec, NULL, &g) == 0) {
		*gid = (gid_t)g;
		return 0;
	}
	if (*spec == '\0' || strchr(spec, ':') != NULL) {
		errno = EINVAL;
		return -1;
	}
	/* No group file: no such group (ENOENT). */
	if ((fp = user_open(f, true)) == NULL)
		return -1;
	while ((gr = fgetgrent(fp)) != NULL)
		if (strcmp(gr->gr_name, spec) == 0)
			break;
	if (gr != NULL)
		*gid = gr->gr_gid;
	if (user_close(fp, gr != NULL) == -1)
		return -1;
	if (gr == NULL)
		errno = ENOENT;
	return gr != NULL ? 0 : -1;
}

static bool
user_member(char *const *mem, const char *name)
{
	for (; mem != NULL && *mem != NULL; mem++)
		if (strcmp(*mem, name) == 0)
			return true;
	return false;
}

int
user_groups(const struct user_files *f, const char *name, gid_t gid,
    gid_t *list, size_t max)
{
	struct group	*gr;
	FILE		*fp;
	size_t		 n = 0, i;

	if (max == 0) {
		errno = ENOSPC;
		return -1;
	}
	list[n++] = gid;
	if ((fp = user_open(f, true)) == NULL)
		return errno == ENOENT ? 1 : -1;
	while ((gr = fgetgrent(fp)) != NULL) {
		if (!user_member(gr->gr_mem, name))
			continue;
		for (i = 0; i < n && list[i] != gr->gr_gid; i++)
			;
		if (i < n)
			continue;
		if (n == max) {
			(void)fclose(fp);
			errno = ENOSPC;
			return -1;
		}
		list[n++] = gr->gr_gid;
	}
	if (user_close(fp, false) == -1)
		return -1;
	return (int)n;
}

int
user_group_name(const struct user_files *f, gid_t gid, char *out, size_t n)
{
	struct group	*gr;
	FILE		*fp;

	if ((fp = user_open(f, true)) == NULL)
		return -1;
	while ((gr = fgetgrent(fp)) != NULL)
		if (gr->gr_gid == gid)
			break;
	if (gr != NULL && user_copy(out, n, gr->gr_name) == -1) {
		(void)fclose(fp);
		return -1;
	}
	if (user_close(fp, gr != NULL) == -1)
		return -1;
	if (gr == NULL)
		errno = ENOENT;
	return gr != NULL ? 0 : -1;
}
