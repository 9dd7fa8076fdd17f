/*
 * api_envd_entry.c: EntryInfo.  See api_envd_entry.h.
 */
#include <sys/stat.h>
#include <sys/xattr.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api/api.h"
#include "api/api_files.h"
#include "api_envd_entry.h"
#include "base/codec.h"
#include "base/jsonstr.h"
#include "base/tunables.h"
#include "core/files.h"
#include "envd.h"
#include "sys/user.h"

static const char *api_envd_entry_owner(struct api_envd_entry_names *, uid_t);
static const char *api_envd_entry_group(struct api_envd_entry_names *, gid_t);
static const char *api_envd_entry_type(mode_t);

void
api_envd_entry_perm(mode_t m, char out[24])
{
	static const char	rwx[] = "rwxrwxrwx";
	char	*o = out;
	int	 i;

	/* Go's type letters, in its order: d L D p S u g c t. */
	if (S_ISDIR(m))
		*o++ = 'd';
	if (S_ISLNK(m))
		*o++ = 'L';
	if (S_ISBLK(m) || S_ISCHR(m))
		*o++ = 'D';
	if (S_ISFIFO(m))
		*o++ = 'p';
	if (S_ISSOCK(m))
		*o++ = 'S';
	if (m & S_ISUID)
		*o++ = 'u';
	if (m & S_ISGID)
		*o++ = 'g';
	if (S_ISCHR(m))
		*o++ = 'c';
	if (m & S_ISVTX)
		*o++ = 't';
	if (o == out)
		*o++ = '-';
	for (i = 0; i < 9; i++)
		*o++ = (m & (1 << (8 - i))) ? rwx[i] : '-';
	*o = '\0';
}

static const char *
api_envd_entry_owner(struct api_envd_entry_names *nm, uid_t uid)
{
	struct user_id	id;
	int		i;

	for (i = 0; i < nm->nu; i++)
		if (nm->u[i].id == uid)
			return nm->u[i].name;
	i = nm->nu < ENVD_ENTRY_NAMES ? nm->nu++ :
	    (int)(uid % ENVD_ENTRY_NAMES);
	nm->u[i].id = uid;
	if (user_by_uid(NULL, uid, &id) == 0 && id.name[0] != '\0')
		snprintf(nm->u[i].name, sizeof(nm->u[i].name), "%s", id.name);
	else
		snprintf(nm->u[i].name, sizeof(nm->u[i].name), "%u",
		    (unsigned)uid);
	return nm->u[i].name;
}

static const char *
api_envd_entry_group(struct api_envd_entry_names *nm, gid_t gid)
{
	int	i;

	for (i = 0; i < nm->ng; i++)
		if (nm->g[i].id == gid)
			return nm->g[i].name;
	i = nm->ng < ENVD_ENTRY_NAMES ? nm->ng++ :
	    (int)(gid % ENVD_ENTRY_NAMES);
	nm->g[i].id = gid;
	if (user_group_name(NULL, gid, nm->g[i].name,
	    sizeof(nm->g[i].name)) == -1)
		snprintf(nm->g[i].name, sizeof(nm->g[i].name), "%u",
		    (unsigned)gid);
	return nm->g[i].name;
}

static const char *
api_envd_entry_type(mode_t m)
{
	if (S_ISREG(m))
		return "FILE_TYPE_FILE";
	if (S_ISDIR(m))
		return "FILE_TYPE_DIRECTORY";
	if (S_ISLNK(m))
		return "FILE_TYPE_SYMLINK";
	return "FILE_TYPE_UNSPECIFIED";
}

cJSON *
api_envd_entry_meta(int fd)
{
	static char	 names[ENVD_META_LIST_MAX], value[ENVD_META_READ_MAX + 1];
	const size_t	 plen = sizeof(ENVD_META_PREFIX) - 1;
	char		 fdname[64];
	const char	*n, *key;
	ssize_t		 len, vlen;
	size_t		 total = 0;
	cJSON		*j = NULL;

	/* The fd's /proc link: listxattr(2) takes an O_PATH fd this way. */
	snprintf(fdname, sizeof(fdname), "/proc/self/fd/%d", fd);
	if ((len = listxattr(fdname, names, sizeof(names))) <= 0)
		return NULL;
	for (n = names; n < names + len; n += strlen(n) + 1) {
		if (strncmp(n, ENVD_META_PREFIX, plen) != 0)
			continue;
		key = n + plen;
		vlen = getxattr(fdname, n, value, sizeof(value) - 1);
		if (vlen < 0 || !codec_utf8_valid(key, strlen(key)) ||
		    !codec_utf8_valid(value, (size_t)vlen) ||
		    memchr(value, '\0', (size_t)vlen) != NULL ||
		    total + (size_t)vlen > ENVD_META_READ_MAX)
			continue;
		total += (size_t)vlen;
		value[vlen] = '\0';
		if ((j == NULL && (j = cJSON_CreateObject()) == NULL) ||
		    cJSON_AddStringToObject(j, key, value) == NULL)
			break;
	}
	return j;
}

/*
 * The entry of p, as envd fills it: the name itself (lstat), but for a
 * link the type and permission bits of what it leads to (followed
 * inside the root; a dangling one, or one leading out, is unspecified)
 * and symlinkTarget, the target's path resolved (the link's own text
 * when it cannot be).  NULL with errno.
 */
cJSON *
api_envd_entry(const struct files_root *root, const struct api_envd_req_path *p,
    struct api_envd_entry_names *nm)
{
	struct stat	 st, tst;
	char		 perm[24], ts[TIME_MAX], size[24], fdname[64];
	char		 target[PATH_MAX];
	const char	*name, *type;
	mode_t		 mode;
	ssize_t		 n = -1;
	int		 fd, tfd;
	cJSON		*j, *meta = NULL;

	if (files_stat(root, p->rel, false, &st) == -1)
		return NULL;
	type = api_envd_entry_type(st.st_mode);
	mode = st.st_mode & 0777;
	/*
	 * What the name leads to (inside the root): a link's target, and
	 * whose metadata envd reads (its getxattr follows links too).
	 */
	tfd = files_open(root, p->rel, O_PATH, 0);
	if (tfd != -1 && fstat(tfd, &tst) == 0 && (S_ISREG(tst.st_mode) ||
	    S_ISDIR(tst.st_mode)))
		meta = api_envd_entry_meta(tfd);
	if (S_ISLNK(st.st_mode)) {
		type = "FILE_TYPE_UNSPECIFIED";
		mode = 0;
		if ((fd = tfd) != -1) {
			snprintf(fdname, sizeof(fdname), "/proc/self/fd/%d",
			    fd);
			if (fstat(fd, &tst) == 0) {
				type = api_envd_entry_type(tst.st_mode);
				mode = tst.st_mode & 0777;
			}
			n = readlink(fdname, target, sizeof(target) - 1);
		}
		if (n < 0 && (fd = files_open(root, p->rel, O_PATH |
		    O_NOFOLLOW, 0)) != -1) {
			n = readlinkat(fd, "", target, sizeof(target) - 1);
			close(fd);
		}
		target[n >= 0 ? n : 0] = '\0';
	}
	if (tfd != -1)
		close(tfd);
	name = strrchr(p->abs, '/');
	name = name != NULL && name[1] != '\0' ? name + 1 : p->abs;
	api_envd_entry_perm(st.st_mode, perm);
	codec_time(ts, (int64_t)st.st_mtim.tv_sec * 1000 +
	    st.st_mtim.tv_nsec / 1000000);
	snprintf(size, sizeof(size), "%lld", (long long)st.st_size);
	if ((j = cJSON_CreateObject()) == NULL ||
	    jsonstr_add(j, "name", name) == NULL ||
	    cJSON_AddStringToObject(j, "type", type) == NULL ||
	    jsonstr_add(j, "path", p->abs) == NULL ||
	    cJSON_AddStringToObject(j, "size", size) == NULL ||
	    cJSON_AddNumberToObject(j, "mode", mode) == NULL ||
	    cJSON_AddStringToObject(j, "permissions", perm) == NULL ||
	    jsonstr_add(j, "owner", api_envd_entry_owner(nm, st.st_uid)) ==
	    NULL ||
	    jsonstr_add(j, "group", api_envd_entry_group(nm, st.st_gid)) ==
	    NULL ||
	    cJSON_AddStringToObject(j, "modifiedTime", ts) == NULL ||
	    (S_ISLNK(st.st_mode) &&
	    jsonstr_add(j, "symlinkTarget", target) == NULL)) {
		cJSON_Delete(j);
		cJSON_Delete(meta);
		errno = ENOMEM;
		return NULL;
	}
	/* Only when there is some: the SDK tells "none" by its absence. */
	if (meta != NULL)
		cJSON_AddItemToObject(j, "metadata", meta);
	return j;
}

/* {"entry": EntryInfo of p}, or the error of its stat. */
void
api_envd_entry_reply(struct http_conn *c, const char *what,
    const struct api_envd_req_path *p)
{
	struct api_envd_entry_names	*nm;
	struct envd_err			 e;
	cJSON				*j = NULL, *ent = NULL;
	int				 err = ENOMEM;

	if ((nm = calloc(1, sizeof(*nm))) != NULL &&
	    (ent = api_envd_entry(&api_of(c)->files->root, p, nm)) == NULL)
		err = errno;
	free(nm);
	if (ent == NULL || (j = cJSON_CreateObject()) == NULL) {
		cJSON_Delete(ent);
		api_envd_req_fail(&e, err, what, p->abs);
		envd_reply_err(c, &e);
		return;
	}
	cJSON_AddItemToObject(j, "entry", ent);
	envd_reply(c, j);
}
