/*
 * files: paths are decoded once, normalised and judged against the root;
 * nothing reaches outside it through "..", a link, a magic link, or a
 * link swapped in between calls (with openat2 and with the walk used
 * without it); puts are atomic and leave no temp; mkdir, delete, move,
 * append and listing follow their rules and errnos; the Range helper and
 * the errno mapping answer as documented.
 */
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/tunables.h"
#include "core/files.h"
#include "sys/child.h"
#include "testutil.h"

Suite *files_suite(void);

static char			base_path[64];
static char			root_path[128];
static int			base = -1;	/* holds root/ and outside/ */
static struct files_root	root;

static void	setup(void);
static void	teardown(void);
static void	put_all(const char *, const char *, int, bool *);
static int	temps_in(int);
static bool	small_fs(const char *);
static void	check_confined(void);
static void	check_swap(void);
static void	check_rules(void);

static void
setup(void)
{
	base = tu_tmpdir(base_path, sizeof(base_path), "/tmp/tend-files-");
	ck_assert_int_eq(mkdirat(base, "root", 0755), 0);
	ck_assert_int_eq(mkdirat(base, "outside", 0755), 0);
	tu_put(base, "outside/secret", "secret");
	snprintf(root_path, sizeof(root_path), "%s/root", base_path);
	ck_assert_int_eq(files_root_open(&root, root_path), 0);
}

static void
teardown(void)
{
	files_root_close(&root);
	close(base);
	base = -1;
	tu_rmtree(base_path);
}

/* PUT rel holding s, whole, through the files_put calls. */
static void
put_all(const char *rel, const char *s, int mode, bool *created)
{
	struct files_put	p;

	ck_assert_int_eq(files_put_begin(&p, &root, rel, FILES_PUT_PARENTS,
	    mode), 0);
	ck_assert_int_eq(files_put_write(&p, s, strlen(s)), 0);
	ck_assert_int_eq(files_put_commit(&p, created), 0);
}

/* Names starting with '.' (temps) in directory rel of base. */
static int
temps_in(int dfd)
{
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	d = fdopendir(dup(dfd));
	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] == '.' && strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			n++;
	closedir(d);
	return n;
}

/*
 * A 64 KiB tmpfs at base/root/<name>, in a mount namespace of this test
 * process alone: a real full disk and a real second file system.  False
 * where mounting is not allowed.
 */
static bool
small_fs(const char *name)
{
	char	path[256];

	snprintf(path, sizeof(path), "%s/%s", root_path, name);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	if (unshare(CLONE_NEWNS) == -1 ||
	    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1 ||
	    mount("tend-test", path, "tmpfs", 0, "size=64k") == -1)
		return false;
	/* fds opened before hold the old namespace's mounts: open again. */
	close(base);
	base = open(base_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(base, 0);
	files_root_close(&root);
	ck_assert_int_eq(files_root_open(&root, root_path), 0);
	return true;
}

/* ------------------------------------------------------------------ */
/* Paths */

START_TEST(decode_once)
{
	char	out[16];

	ck_assert_int_eq(files_decode("/a%2e%2e/%41+b", 14, out, sizeof(out)),
	    0);
	ck_assert_str_eq(out, "/a../A+b");
	/* Once: "%252e" is "%2e", not ".". */
	ck_assert_int_eq(files_decode("%252e", 5, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "%2e");
	errno = 0;
	ck_assert_int_eq(files_decode("/a%00b", 6, out, sizeof(out)), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(files_decode("/a\0b", 4, out, sizeof(out)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(files_decode("/a%2", 4, out, sizeof(out)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(files_decode("/a%", 3, out, sizeof(out)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(files_decode("/%zz", 4, out, sizeof(out)), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(files_decode("/0123456789abcdef", 17, out,
	    sizeof(out)), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_int_eq(files_decode("/0123456789abcd", 15, out, sizeof(out)),
	    0);
}
END_TEST

START_TEST(normalize_lexical)
{
	static const char *const	v[][2] = {
		{ "/a/../b", "/b" },
		{ "/workspace/a/../b", "/workspace/b" },
		{ "/workspace/../tmp/secret", "/tmp/secret" },
		{ "/../x", "/x" },
		{ "//a//./b/", "/a/b" },
		{ "/", "/" },
		{ "/a/..", "/" },
		{ "/a/b/../../..", "/" },
		{ "/a/./.../b", "/a/.../b" },
		{ "/..a/b..", "/..a/b.." },
	};
	char				buf[64];
	size_t				i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		snprintf(buf, sizeof(buf), "%s", v[i][0]);
		ck_assert_int_eq(files_normalize(buf), 0);
		ck_assert_msg(strcmp(buf, v[i][1]) == 0, "%s: %s, not %s",
		    v[i][0], buf, v[i][1]);
	}
	strcpy(buf, "relative/path");
	errno = 0;
	ck_assert_int_eq(files_normalize(buf), -1);
	ck_assert_int_eq(errno, EINVAL);
	buf[0] = '\0';
	ck_assert_int_eq(files_normalize(buf), -1);
}
END_TEST

START_TEST(path_judged_against_root)
{
	struct files_root	sys;
	char			enc[256], rel[PATH_MAX];

#define PATH(fmt, ...) (snprintf(enc, sizeof(enc), fmt, __VA_ARGS__), \
	files_path(&root, enc, strlen(enc), rel, sizeof(rel)))
	ck_assert_int_eq(PATH("%s/a/../b", root_path), 0);
	ck_assert_str_eq(rel, "b");
	ck_assert_int_eq(PATH("%s", root_path), 0);
	ck_assert_str_eq(rel, ".");
	ck_assert_int_eq(PATH("%s/", root_path), 0);
	ck_assert_str_eq(rel, ".");
	ck_assert_int_eq(PATH("%s/sub%%2Fx", root_path), 0);
	ck_assert_str_eq(rel, "sub/x");
	/* Out: "..", encoded or not, and a sibling sharing the prefix. */
	errno = 0;
	ck_assert_int_eq(PATH("%s/../outside/secret", root_path), -1);
	ck_assert_int_eq(errno, ELOOP);
	errno = 0;
	ck_assert_int_eq(PATH("%s/%%2e%%2e/outside/secret", root_path), -1);
	ck_assert_int_eq(errno, ELOOP);
	errno = 0;
	ck_assert_int_eq(PATH("%s/a/%%2E%%2E/%%2e%%2e/outside", root_path), -1);
	ck_assert_int_eq(errno, ELOOP);
	errno = 0;
	ck_assert_int_eq(PATH("%sx/f", root_path), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(PATH("%s", "/etc/passwd"), -1);
	ck_assert_int_eq(errno, ELOOP);
	/* Malformed: 400. */
	errno = 0;
	ck_assert_int_eq(PATH("%s", "relative"), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(files_path(&root, "", 0, rel, sizeof(rel)), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(PATH("%s/a%%00b", root_path), -1);
	ck_assert_int_eq(errno, EINVAL);
#undef PATH
	/* The system root: everything is inside. */
	ck_assert_int_eq(files_root_open(&sys, "/"), 0);
	ck_assert_int_eq(files_path(&sys, "/etc/hosts", 10, rel, sizeof(rel)),
	    0);
	ck_assert_str_eq(rel, "etc/hosts");
	ck_assert_int_eq(files_path(&sys, "/../..", 6, rel, sizeof(rel)), 0);
	ck_assert_str_eq(rel, ".");
	files_root_close(&sys);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Confinement */

static void
check_confined(void)
{
	struct files_put	p;
	struct stat		st;
	cJSON			*arr;
	char			 abs[256];
	bool			 trunc;
	int			 fd;

	ck_assert_int_eq(mkdirat(base, "root/sub", 0755), 0);
	tu_put(base, "root/sub/f", "inside");
	ck_assert_int_eq(symlinkat("../outside", base, "root/rel"), 0);
	snprintf(abs, sizeof(abs), "%s/outside", base_path);
	ck_assert_int_eq(symlinkat(abs, base, "root/abs"), 0);
	ck_assert_int_eq(symlinkat("../../outside/secret", base,
	    "root/sub/up"), 0);
	ck_assert_int_eq(symlinkat("sub", base, "root/in"), 0);
	ck_assert_int_eq(symlinkat("../sub/f", base, "root/sub/same"), 0);

	/* Links that stay inside work, ".." within the root included. */
	fd = files_open(&root, "in/f", O_RDONLY, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = files_open(&root, "sub/same", O_RDONLY, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);
	fd = files_open(&root, "sub/../in/./f", O_RDONLY, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);

	/* "..", relative and absolute links out: ELOOP, all of them. */
	static const char *const	out[] = {
		"../outside/secret", "sub/../../outside/secret", "rel/secret",
		"abs/secret", "sub/up", "rel", "abs",
	};
	for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
		errno = 0;
		ck_assert_int_eq(files_open(&root, out[i], O_RDONLY, 0), -1);
		ck_assert_msg(errno == ELOOP, "%s: %s", out[i], strerror(errno));
		errno = 0;
		ck_assert_int_eq(files_stat(&root, out[i], true, &st), -1);
		ck_assert_int_eq(errno, ELOOP);
		ck_assert_int_eq(files_open_read(&root, out[i], &st), -1);
		ck_assert_int_eq(errno, ELOOP);
	}
	/* The link itself may be looked at. */
	ck_assert_int_eq(files_stat(&root, "abs", false, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));

	/* Nothing is made out there either. */
	errno = 0;
	ck_assert_int_eq(files_put_begin(&p, &root, "rel/new",
	    FILES_PUT_PARENTS, FILES_MODE_KEEP), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(files_put_begin(&p, &root, "abs/x/y/new",
	    FILES_PUT_PARENTS, FILES_MODE_KEEP), -1);
	ck_assert_int_eq(files_put_begin(&p, &root, "sub/up",
	    FILES_PUT_APPEND, FILES_MODE_KEEP), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(files_mkdir(&root, "rel/d", false, 0755), -1);
	ck_assert_int_eq(files_mkdir(&root, "abs/d/e", true, 0755), -1);
	ck_assert_int_eq(files_delete(&root, "rel/secret", false), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(files_move(&root, "sub/f", "rel/stolen", true), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(files_move(&root, "rel/secret", "got", true), -1);
	ck_assert_int_eq(errno, ELOOP);
	arr = cJSON_CreateArray();
	ck_assert_int_eq(files_list(&root, "rel", 1, arr, &trunc), -1);
	ck_assert_int_eq(errno, ELOOP);
	cJSON_Delete(arr);
	ck_assert(!tu_exists(base, "outside/new"));
	ck_assert(!tu_exists(base, "outside/x"));
	ck_assert(!tu_exists(base, "outside/d"));
	ck_assert(!tu_exists(base, "outside/stolen"));
	ck_assert(tu_exists(base, "outside/secret"));
	ck_assert(!tu_exists(base, "root/got"));
	ck_assert_int_eq(files_stat(&root, "sub/f", true, &st), 0);

	/* Deleting a link out removes the link, not what it points to. */
	ck_assert_int_eq(files_delete(&root, "rel", true), 0);
	ck_assert(!tu_exists(base, "root/rel"));
	ck_assert(tu_exists(base, "outside/secret"));
}

START_TEST(confined_openat2)
{
	check_confined();
}
END_TEST

START_TEST(confined_without_openat2)
{
	tu_no_openat2();
	check_confined();
}
END_TEST

START_TEST(system_root_in_root_without_openat2)
{
	struct files_root	sys;
	struct stat		st, want;
	char			rel[128];

	tu_no_openat2();
	ck_assert_int_eq(files_root_open(&sys, "/"), 0);
	snprintf(rel, sizeof(rel), "%s/outside/secret", base_path);
	ck_assert_int_eq(symlinkat(rel, base, "root/abs-secret"), 0);
	snprintf(rel, sizeof(rel), "%s/root/abs-secret", base_path + 1);
	ck_assert_int_eq(files_stat(&sys, rel, true, &st), 0);
	ck_assert_int_eq(fstatat(base, "outside/secret", &want, 0), 0);
	ck_assert_uint_eq(st.st_ino, want.st_ino);
	ck_assert_int_eq(files_stat(&sys, "../../proc/..", true, &st), 0);
	ck_assert_int_eq(stat("/", &want), 0);
	ck_assert_uint_eq(st.st_ino, want.st_ino);
	files_root_close(&sys);
}
END_TEST

START_TEST(system_root_in_root)
{
	struct files_root	sys;
	struct stat		st, want;
	char			rel[128];
	int			fd, ofd;

	/* Under "/", an absolute link means what it means to everyone. */
	ck_assert_int_eq(files_root_open(&sys, "/"), 0);
	snprintf(rel, sizeof(rel), "%s/outside/secret", base_path);
	ck_assert_int_eq(symlinkat(rel, base, "root/abs-secret"), 0);
	snprintf(rel, sizeof(rel), "%s/root/abs-secret", base_path + 1);
	ck_assert_int_eq(files_stat(&sys, rel, true, &st), 0);
	ck_assert_int_eq(fstatat(base, "outside/secret", &want, 0), 0);
	ck_assert_uint_eq(st.st_ino, want.st_ino);
	/* And ".." above "/" stays at "/", as it always does. */
	ck_assert_int_eq(files_stat(&sys, "../../proc/..", true, &st), 0);
	ck_assert_int_eq(stat("/", &want), 0);
	ck_assert_uint_eq(st.st_ino, want.st_ino);
	/* A magic link is not: /proc/self/fd/N would jump anywhere. */
	ofd = openat(base, "outside/secret", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(ofd, 0);
	snprintf(rel, sizeof(rel), "proc/self/fd/%d", ofd);
	errno = 0;
	fd = files_open(&sys, rel, O_RDONLY, 0);
	ck_assert_int_eq(fd, -1);
	ck_assert_int_eq(errno, ELOOP);
	close(ofd);
	files_root_close(&sys);
}
END_TEST

/*
 * A directory swapped for a link out while a call holds it: the put
 * lands in the directory it resolved, a read keeps its file, and every
 * later call resolves again and is refused.
 */
static void
check_swap(void)
{
	struct files_put	 p;
	struct stat		 st;
	char			 abs[256], b[16] = "";
	bool			 created;
	int			 fd;

	ck_assert_int_eq(mkdirat(base, "root/d", 0755), 0);
	tu_put(base, "root/d/old", "old");
	ck_assert_int_eq(files_put_begin(&p, &root, "d/f", 0,
	    FILES_MODE_KEEP), 0);
	fd = files_open_read(&root, "d/old", &st);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(renameat(base, "root/d", base, "root/d2"), 0);
	snprintf(abs, sizeof(abs), "%s/outside", base_path);
	ck_assert_int_eq(symlinkat(abs, base, "root/d"), 0);
	ck_assert_int_eq(files_put_write(&p, "data", 4), 0);
	ck_assert_int_eq(files_put_commit(&p, &created), 0);
	ck_assert(created);
	ck_assert(tu_exists(base, "root/d2/f"));
	ck_assert(!tu_exists(base, "outside/f"));
	ck_assert_int_eq(read(fd, b, sizeof(b)), 3);
	ck_assert_str_eq(b, "old");
	close(fd);
	errno = 0;
	ck_assert_int_eq(files_stat(&root, "d/f", true, &st), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(files_put_begin(&p, &root, "d/g", 0,
	    FILES_MODE_KEEP), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert(!tu_exists(base, "outside/g"));
}

START_TEST(swap_between_calls)
{
	check_swap();
}
END_TEST

START_TEST(swap_between_calls_without_openat2)
{
	tu_no_openat2();
	check_swap();
}
END_TEST

/* ------------------------------------------------------------------ */
/* Put */

START_TEST(put_created_replaced)
{
	struct stat	 st;
	char		*s;
	bool		 created = false;
	int		 rootfd;

	put_all("f", "first", FILES_MODE_KEEP, &created);
	ck_assert(created);
	ck_assert_int_eq(fstatat(base, "root/f", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	put_all("f", "2nd", FILES_MODE_KEEP, &created);
	ck_assert(!created);
	s = tu_slurp(base, "root/f", NULL);
	ck_assert_str_eq(s, "2nd");
	free(s);
	/* A mode given is the mode, umask or not; KEEP keeps it. */
	put_all("f", "3", 0600, &created);
	ck_assert_int_eq(fstatat(base, "root/f", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	put_all("f", "4", FILES_MODE_KEEP, &created);
	ck_assert_int_eq(fstatat(base, "root/f", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	/* Parents made; an empty body is a file of size 0. */
	put_all("x/y/z", "", 0640, &created);
	ck_assert(created);
	ck_assert_int_eq(fstatat(base, "root/x/y/z", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(fstatat(base, "root/x/y", &st, 0), 0);
	ck_assert(S_ISDIR(st.st_mode));
	rootfd = openat(base, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(temps_in(rootfd), 0);
	close(rootfd);
}
END_TEST

START_TEST(put_rules)
{
	struct files_put	 p;
	char			*s;
	bool			 created;

	errno = 0;
	ck_assert_int_eq(files_put_begin(&p, &root, "f", 0, 010000), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(files_put_begin(&p, &root, "f", 0, -2), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert(!tu_exists(base, "root/f"));
	/* Without PARENTS a missing directory is ENOENT. */
	errno = 0;
	ck_assert_int_eq(files_put_begin(&p, &root, "no/f", 0,
	    FILES_MODE_KEEP), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* A directory there, or the root: EISDIR before any byte. */
	ck_assert_int_eq(mkdirat(base, "root/dir", 0755), 0);
	errno = 0;
	ck_assert_int_eq(files_put_begin(&p, &root, "dir", FILES_PUT_PARENTS,
	    FILES_MODE_KEEP), -1);
	ck_assert_int_eq(errno, EISDIR);
	ck_assert_int_eq(files_put_begin(&p, &root, ".", 0, FILES_MODE_KEEP),
	    -1);
	ck_assert_int_eq(errno, EISDIR);
	/* A file where a parent should be. */
	tu_put(base, "root/plain", "x");
	errno = 0;
	ck_assert_int_eq(files_put_begin(&p, &root, "plain/f",
	    FILES_PUT_PARENTS, FILES_MODE_KEEP), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	/* A link at the name is replaced; its target stays as it was. */
	tu_put(base, "root/target", "target");
	ck_assert_int_eq(symlinkat("target", base, "root/link"), 0);
	put_all("link", "new", FILES_MODE_KEEP, &created);
	ck_assert(!created);
	s = tu_slurp(base, "root/target", NULL);
	ck_assert_str_eq(s, "target");
	free(s);
	s = tu_slurp(base, "root/link", NULL);
	ck_assert_str_eq(s, "new");
	free(s);
	/* A directory made at the name meanwhile: EISDIR, no temp left. */
	ck_assert_int_eq(files_put_begin(&p, &root, "late", 0,
	    FILES_MODE_KEEP), 0);
	ck_assert_int_eq(files_put_write(&p, "x", 1), 0);
	ck_assert_int_eq(mkdirat(base, "root/late", 0755), 0);
	tu_put(base, "root/late/keep", "k");
	errno = 0;
	ck_assert_int_eq(files_put_commit(&p, &created), -1);
	ck_assert(errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST);
	ck_assert(tu_exists(base, "root/late/keep"));
	{
		int	rootfd = openat(base, "root", O_RDONLY | O_DIRECTORY);

		ck_assert_int_eq(temps_in(rootfd), 0);
		close(rootfd);
	}
}
END_TEST

START_TEST(put_abort_keeps_old)
{
	struct files_put	 p;
	char			*s;
	int			 rootfd;

	tu_put(base, "root/f", "old");
	ck_assert_int_eq(files_put_begin(&p, &root, "f", 0, FILES_MODE_KEEP),
	    0);
	ck_assert_int_eq(files_put_write(&p, "half of a new", 13), 0);
	rootfd = openat(base, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(temps_in(rootfd), 1);
	files_put_abort(&p);
	files_put_abort(&p);	/* twice is harmless */
	ck_assert_int_eq(temps_in(rootfd), 0);
	close(rootfd);
	s = tu_slurp(base, "root/f", NULL);
	ck_assert_str_eq(s, "old");
	free(s);
}
END_TEST

/*
 * Past FILES_PUT_FLUSH bytes a child makes the upload stable (fdatasync)
 * while the writes go on; while it works, writes do not wait for it
 * until FILES_PUT_BEHIND is not stable, then the caller flushes itself.
 * Once reaped (the reap loop's offer, made here by hand) the next range
 * gets a child of its own; a child that failed fails the commit, which
 * leaves the old file.  The file is whole at a commit that succeeds.
 */
static void
put_mib(struct files_put *p, size_t n)
{
	static char	chunk[1024 * 1024];
	size_t		i;

	memset(chunk, 'q', sizeof(chunk));
	for (i = 0; i < n; i++)
		ck_assert_int_eq(files_put_write(p, chunk, sizeof(chunk)), 0);
}

START_TEST(put_flushed_by_a_child)
{
	struct files_put	 p;
	bool			 created;
	size_t			 mib = 1024 * 1024;
	pid_t			 first, second;
	int			 st, fd;
	struct stat		 sb;

	ck_assert_int_eq(files_put_begin(&p, &root, "big", 0,
	    FILES_MODE_KEEP), 0);
	put_mib(&p, FILES_PUT_FLUSH / mib);
	ck_assert_int_gt(first = p.flusher, 0);
	/* Nobody reaps yet: the child looks busy and the writes go on... */
	put_mib(&p, FILES_PUT_BEHIND / mib - 1);
	ck_assert_uint_eq(p.unflushed, FILES_PUT_BEHIND - mib);
	/* ...until FILES_PUT_BEHIND is unflushed: the caller flushes. */
	put_mib(&p, 1);
	ck_assert_uint_eq(p.unflushed, 0);
	ck_assert_int_eq(p.flusher, first);
	ck_assert_int_eq(waitpid(first, &st, 0), first);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert(child_reaped(first, st));
	ck_assert_int_eq(p.flusher, 0);
	put_mib(&p, FILES_PUT_FLUSH / mib);
	ck_assert_int_gt(second = p.flusher, 0);
	ck_assert_int_ne(second, first);
	ck_assert_int_eq(waitpid(second, &st, 0), second);
	ck_assert(child_reaped(second, st));
	ck_assert_int_eq(files_put_commit(&p, &created), 0);
	ck_assert(created);
	ck_assert_int_eq(fstatat(base, "root/big", &sb, 0), 0);
	ck_assert_int_eq(sb.st_size,
	    (off_t)(2 * FILES_PUT_FLUSH + FILES_PUT_BEHIND));

	/* A flush that failed (its exit status says EIO): no commit. */
	ck_assert_int_eq(files_put_begin(&p, &root, "big", 0,
	    FILES_MODE_KEEP), 0);
	put_mib(&p, FILES_PUT_FLUSH / mib);
	ck_assert_int_gt(first = p.flusher, 0);
	ck_assert_int_eq(waitpid(first, &st, 0), first);
	ck_assert(child_reaped(first, EIO << 8));
	ck_assert_int_eq(files_put_commit(&p, &created), -1);
	ck_assert_int_eq(errno, EIO);
	fd = openat(base, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(temps_in(fd), 0);
	close(fd);
	ck_assert_int_eq(fstatat(base, "root/big", &sb, 0), 0);
	ck_assert_int_eq(sb.st_size,
	    (off_t)(2 * FILES_PUT_FLUSH + FILES_PUT_BEHIND));
}
END_TEST

START_TEST(put_full_disk)
{
	struct files_put	 p;
	struct files_err	 e;
	char			 chunk[8192];
	int			 i, rc = 0, fd;

	if (!small_fs("small")) {
		/* EFBIG (put_too_large) covers the refusal, not ENOSPC. */
		TU_SKIP("no tmpfs mount here (needs root)");
		return;
	}
	tu_put(base, "root/small/f", "old");
	memset(chunk, 'x', sizeof(chunk));
	ck_assert_int_eq(files_put_begin(&p, &root, "small/f", 0,
	    FILES_MODE_KEEP), 0);
	for (i = 0; i < 64 && rc == 0; i++)
		rc = files_put_write(&p, chunk, sizeof(chunk));
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(errno, ENOSPC);
	e = files_errmap(errno);
	ck_assert_int_eq(e.status, 507);
	files_put_abort(&p);
	fd = openat(base, "root/small", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(temps_in(fd), 0);
	close(fd);
	{
		char	*s = tu_slurp(base, "root/small/f", NULL);

		ck_assert_str_eq(s, "old");
		free(s);
	}
}
END_TEST

START_TEST(put_file_too_big)
{
	struct files_put	p;
	struct rlimit		rl = { 4, RLIM_INFINITY };
	int			rootfd;

	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = 4;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	ck_assert_int_eq(files_put_begin(&p, &root, "f", 0, FILES_MODE_KEEP),
	    0);
	ck_assert_int_eq(files_put_write(&p, "0123456789", 10), -1);
	ck_assert_int_eq(errno, EFBIG);
	files_put_abort(&p);
	rootfd = openat(base, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(temps_in(rootfd), 0);
	close(rootfd);
	ck_assert(!tu_exists(base, "root/f"));
}
END_TEST

/*
 * A reader opening the file over and over while it is replaced 200
 * times: each read is all of the old or all of the new, never a mix
 * and never short.
 */
START_TEST(put_atomic_for_readers)
{
	enum { SIZE = 65536, CHUNK = 4096 };
	static char	 buf[SIZE];
	bool		 created;
	pid_t		 pid;
	int		 ctl[2], status, i, j;

	memset(buf, 'A', SIZE);
	tu_put(base, "root/f", "");
	put_all("f", "", FILES_MODE_KEEP, &created);
	{
		struct files_put	p;

		ck_assert_int_eq(files_put_begin(&p, &root, "f", 0,
		    FILES_MODE_KEEP), 0);
		ck_assert_int_eq(files_put_write(&p, buf, SIZE), 0);
		ck_assert_int_eq(files_put_commit(&p, &created), 0);
	}
	ck_assert_int_eq(pipe(ctl), 0);
	if ((pid = fork()) == 0) {
		char	got[SIZE + 1];
		int	reads = 0, bad = 0, fd;
		ssize_t	n, len;

		close(ctl[1]);
		fcntl(ctl[0], F_SETFL, O_NONBLOCK);
		while (read(ctl[0], got, 1) == -1 && errno == EAGAIN) {
			if ((fd = openat(base, "root/f", O_RDONLY)) == -1)
				_exit(3);
			for (len = 0; (n = read(fd, got + len,
			    sizeof(got) - len)) > 0; len += n)
				;
			close(fd);
			if (len != SIZE || memchr(got, got[0] == 'A' ? 'B' :
			    'A', SIZE) != NULL)
				bad++;
			reads++;
		}
		_exit(bad ? 1 : reads == 0 ? 2 : 0);
	}
	close(ctl[0]);
	for (i = 0; i < 200; i++) {
		struct files_put	p;

		memset(buf, i % 2 ? 'A' : 'B', SIZE);
		ck_assert_int_eq(files_put_begin(&p, &root, "f", 0,
		    FILES_MODE_KEEP), 0);
		for (j = 0; j < SIZE; j += CHUNK)
			ck_assert_int_eq(files_put_write(&p, buf + j, CHUNK), 0);
		ck_assert_int_eq(files_put_commit(&p, &created), 0);
		ck_assert(!created);
	}
	close(ctl[1]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "reader: status %#x", status);
}
END_TEST

START_TEST(append_in_place)
{
	struct files_put	 p;
	struct stat		 st;
	char			*s;
	bool			 created;

	tu_put(base, "root/log", "one\n");
	ck_assert_int_eq(fstatat(base, "root/log", &st, 0), 0);
	ck_assert_int_eq(files_put_begin(&p, &root, "log", FILES_PUT_APPEND,
	    FILES_MODE_KEEP), 0);
	ck_assert_int_eq(files_put_write(&p, "two\n", 4), 0);
	ck_assert_int_eq(files_put_commit(&p, &created), 0);
	ck_assert(!created);
	s = tu_slurp(base, "root/log", NULL);
	ck_assert_str_eq(s, "one\ntwo\n");
	free(s);
	{
		struct stat	now;

		ck_assert_int_eq(fstatat(base, "root/log", &now, 0), 0);
		ck_assert_uint_eq(now.st_ino, st.st_ino);	/* no rename */
	}
	/* Missing: made, with the mode asked; parents too. */
	ck_assert_int_eq(files_put_begin(&p, &root, "new/log",
	    FILES_PUT_APPEND | FILES_PUT_PARENTS, 0600), 0);
	ck_assert_int_eq(files_put_write(&p, "x", 1), 0);
	ck_assert_int_eq(files_put_commit(&p, &created), 0);
	ck_assert(created);
	ck_assert_int_eq(fstatat(base, "root/new/log", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	/* Through a link inside: the target grows. */
	ck_assert_int_eq(symlinkat("log", base, "root/ln"), 0);
	ck_assert_int_eq(files_put_begin(&p, &root, "ln", FILES_PUT_APPEND,
	    FILES_MODE_KEEP), 0);
	ck_assert_int_eq(files_put_write(&p, "3\n", 2), 0);
	files_put_abort(&p);	/* what was appended stays */
	s = tu_slurp(base, "root/log", NULL);
	ck_assert_str_eq(s, "one\ntwo\n3\n");
	free(s);
	/* A link to nothing: not created through, a conflict. */
	ck_assert_int_eq(symlinkat("nowhere", base, "root/dangling"), 0);
	errno = 0;
	ck_assert_int_eq(files_put_begin(&p, &root, "dangling",
	    FILES_PUT_APPEND, FILES_MODE_KEEP), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert(!tu_exists(base, "root/nowhere"));
	/* A directory, a FIFO (which must not block): refused. */
	ck_assert_int_eq(mkdirat(base, "root/dir", 0755), 0);
	errno = 0;
	ck_assert_int_eq(files_put_begin(&p, &root, "dir", FILES_PUT_APPEND,
	    FILES_MODE_KEEP), -1);
	ck_assert_int_eq(errno, EISDIR);
	ck_assert_int_eq(mkfifoat(base, "root/fifo", 0600), 0);
	errno = 0;
	ck_assert_int_eq(files_put_begin(&p, &root, "fifo", FILES_PUT_APPEND,
	    FILES_MODE_KEEP), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(read_regular_or_dir)
{
	struct stat	st;
	char		b[8] = "";
	int		fd;

	tu_put(base, "root/f", "abc");
	fd = files_open_read(&root, "f", &st);
	ck_assert_int_ge(fd, 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(st.st_size, 3);
	ck_assert_int_eq(read(fd, b, sizeof(b)), 3);
	close(fd);
	fd = files_open_read(&root, ".", &st);
	ck_assert_int_ge(fd, 0);
	ck_assert(S_ISDIR(st.st_mode));
	close(fd);
	/* Never opened: a FIFO would block, a device could act. */
	ck_assert_int_eq(mkfifoat(base, "root/fifo", 0600), 0);
	errno = 0;
	ck_assert_int_eq(files_open_read(&root, "fifo", &st), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(files_open_read(&root, "missing", &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* stat: the file behind a link, or the link. */
	ck_assert_int_eq(symlinkat("f", base, "root/l"), 0);
	ck_assert_int_eq(files_stat(&root, "l", true, &st), 0);
	ck_assert(S_ISREG(st.st_mode));
	ck_assert_int_eq(files_stat(&root, "l", false, &st), 0);
	ck_assert(S_ISLNK(st.st_mode));
	ck_assert_str_eq(files_type(st.st_mode), "symlink");
	ck_assert_str_eq(files_type(S_IFDIR), "dir");
	ck_assert_str_eq(files_type(S_IFREG), "file");
	ck_assert_str_eq(files_type(S_IFIFO), "fifo");
}
END_TEST

/* ------------------------------------------------------------------ */
/* mkdir, delete, move */

static void
check_rules(void)
{
	struct stat	 st;
	char		*s;

	/* mkdir */
	ck_assert_int_eq(files_mkdir(&root, "a", false, 0755), 0);
	errno = 0;
	ck_assert_int_eq(files_mkdir(&root, "a", false, 0755), -1);
	ck_assert_int_eq(errno, EEXIST);
	errno = 0;
	ck_assert_int_eq(files_mkdir(&root, "b/c/d", false, 0755), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(files_mkdir(&root, "b/c/d", true, 0755), 0);
	ck_assert_int_eq(files_mkdir(&root, "b/c/d", true, 0755), 0);
	ck_assert_int_eq(files_mkdir(&root, ".", true, 0755), 0);
	ck_assert_int_eq(files_mkdir(&root, ".", false, 0755), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(symlinkat("b/c", base, "root/lc"), 0);
	ck_assert_int_eq(files_mkdir(&root, "lc/e/f", true, 0755), 0);
	ck_assert_int_eq(fstatat(base, "root/b/c/e/f", &st, 0), 0);
	ck_assert(S_ISDIR(st.st_mode));
	tu_put(base, "root/file", "x");
	errno = 0;
	ck_assert_int_eq(files_mkdir(&root, "file/sub", true, 0755), -1);
	ck_assert_int_eq(errno, ENOTDIR);

	/* delete */
	tu_put(base, "root/b/c/d/deep", "1");
	errno = 0;
	ck_assert_int_eq(files_delete(&root, "b", false), -1);
	ck_assert_int_eq(errno, ENOTEMPTY);
	ck_assert(tu_exists(base, "root/b/c/d/deep"));
	ck_assert_int_eq(files_delete(&root, "lc", true), 0);	/* the link */
	ck_assert(tu_exists(base, "root/b/c/d/deep"));
	ck_assert_int_eq(files_delete(&root, "b", true), 0);
	ck_assert(!tu_exists(base, "root/b"));
	ck_assert_int_eq(files_delete(&root, "a", false), 0);
	ck_assert_int_eq(files_delete(&root, "file", false), 0);
	errno = 0;
	ck_assert_int_eq(files_delete(&root, "file", false), -1);
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_int_eq(files_delete(&root, ".", true), -1);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert(tu_exists(base, "root"));

	/* move */
	tu_put(base, "root/m1", "one");
	tu_put(base, "root/m2", "two");
	errno = 0;
	ck_assert_int_eq(files_move(&root, "m1", "m2", false), -1);
	ck_assert_int_eq(errno, EEXIST);
	s = tu_slurp(base, "root/m2", NULL);
	ck_assert_str_eq(s, "two");
	free(s);
	ck_assert_int_eq(files_move(&root, "m1", "m2", true), 0);
	s = tu_slurp(base, "root/m2", NULL);
	ck_assert_str_eq(s, "one");
	free(s);
	ck_assert(!tu_exists(base, "root/m1"));
	ck_assert_int_eq(files_move(&root, "m2", "m3", false), 0);
	errno = 0;
	ck_assert_int_eq(files_move(&root, "m3", "nodir/m", false), -1);
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_int_eq(files_move(&root, "gone", "m4", false), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(files_mkdir(&root, "p/q", true, 0755), 0);
	errno = 0;
	ck_assert_int_eq(files_move(&root, "p", "p/q/p", false), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(files_move(&root, ".", "x", false), -1);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_int_eq(files_move(&root, "m3", ".", true), -1);
	ck_assert_int_eq(errno, EBUSY);
	/* A file over a directory and back. */
	errno = 0;
	ck_assert_int_eq(files_move(&root, "m3", "p", true), -1);
	ck_assert_int_eq(errno, EISDIR);
	errno = 0;
	ck_assert_int_eq(files_move(&root, "p", "m3", true), -1);
	ck_assert_int_eq(errno, ENOTDIR);
}

START_TEST(mkdir_delete_move)
{
	check_rules();
}
END_TEST

START_TEST(mkdir_delete_move_without_openat2)
{
	tu_no_openat2();
	check_rules();
}
END_TEST

START_TEST(move_across_file_systems)
{
	struct files_err	e;

	if (!small_fs("other")) {
		TU_SKIP("no tmpfs mount here (needs root)");
		return;
	}
	tu_put(base, "root/f", "data");
	errno = 0;
	ck_assert_int_eq(files_move(&root, "f", "other/f", false), -1);
	ck_assert_int_eq(errno, EXDEV);
	e = files_errmap(errno);
	ck_assert_int_eq(e.status, 409);
	ck_assert_str_eq(e.code, "cross_device");
	ck_assert(tu_exists(base, "root/f"));
	ck_assert(!tu_exists(base, "root/other/f"));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Listing */

START_TEST(list_depth)
{
	struct timespec	 ts[2] = { { 1700000000, 123000000 },
			    { 1700000000, 123000000 } };
	cJSON		*arr, *e;
	bool		 trunc = true;
	int		 i;

	ck_assert_int_eq(mkdirat(base, "root/a", 0750), 0);
	ck_assert_int_eq(mkdirat(base, "root/a/b", 0755), 0);
	tu_put(base, "root/a/b/c", "c");
	tu_put(base, "root/f", "12345");
	ck_assert_int_eq(utimensat(base, "root/f", ts, 0), 0);
	ck_assert_int_eq(symlinkat("f", base, "root/l"), 0);

	static const char *const	want1[] = { "a", "f", "l" };
	static const char *const	want2[] = { "a", "a/b", "f", "l" };
	static const char *const	want3[] = { "a", "a/b", "a/b/c", "f", "l" };
	static const struct { int depth; int n; const char *const *v; } t[] = {
		{ 1, 3, want1 }, { 2, 4, want2 }, { 3, 5, want3 },
		{ 32, 5, want3 },
	};
	for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		arr = cJSON_CreateArray();
		ck_assert_int_eq(files_list(&root, ".", t[k].depth, arr,
		    &trunc), 0);
		ck_assert(!trunc);
		ck_assert_int_eq(cJSON_GetArraySize(arr), t[k].n);
		for (i = 0; i < t[k].n; i++) {
			e = cJSON_GetArrayItem(arr, i);
			ck_assert_str_eq(cJSON_GetObjectItem(e, "name")->
			    valuestring, t[k].v[i]);
		}
		cJSON_Delete(arr);
	}
	arr = cJSON_CreateArray();
	ck_assert_int_eq(files_list(&root, ".", 1, arr, &trunc), 0);
	e = cJSON_GetArrayItem(arr, 0);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "type")->valuestring, "dir");
	ck_assert_int_eq(cJSON_GetObjectItem(e, "mode")->valueint, 0750);
	ck_assert_ptr_null(cJSON_GetObjectItem(e, "target"));
	e = cJSON_GetArrayItem(arr, 1);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "type")->valuestring, "file");
	ck_assert_int_eq(cJSON_GetObjectItem(e, "size")->valueint, 5);
	ck_assert_int_eq(cJSON_GetObjectItem(e, "mode")->valueint, 0600);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "mtime")->valuestring,
	    "2023-11-14T22:13:20.123Z");
	e = cJSON_GetArrayItem(arr, 2);
	ck_assert_str_eq(cJSON_GetObjectItem(e, "type")->valuestring,
	    "symlink");
	ck_assert_str_eq(cJSON_GetObjectItem(e, "target")->valuestring, "f");
	cJSON_Delete(arr);

	/* An empty directory, listed or entered, is no failure. */
	ck_assert_int_eq(mkdirat(base, "root/a/empty", 0755), 0);
	arr = cJSON_CreateArray();
	ck_assert_int_eq(files_list(&root, "a/empty", 1, arr, &trunc), 0);
	ck_assert_int_eq(cJSON_GetArraySize(arr), 0);
	ck_assert_int_eq(files_list(&root, "a", 2, arr, &trunc), 0);
	ck_assert_int_eq(cJSON_GetArraySize(arr), 3);
	cJSON_Delete(arr);
	ck_assert_int_eq(unlinkat(base, "root/a/empty", AT_REMOVEDIR), 0);

	/* A subdirectory, through a link; bad depths; not a directory. */
	ck_assert_int_eq(symlinkat("a", base, "root/la"), 0);
	arr = cJSON_CreateArray();
	ck_assert_int_eq(files_list(&root, "la", 2, arr, &trunc), 0);
	ck_assert_int_eq(cJSON_GetArraySize(arr), 2);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 1),
	    "name")->valuestring, "b/c");
	errno = 0;
	ck_assert_int_eq(files_list(&root, ".", 0, arr, &trunc), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(files_list(&root, ".", FILES_LIST_DEPTH_MAX + 1, arr,
	    &trunc), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(files_list(&root, "f", 1, arr, &trunc), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	cJSON_Delete(arr);
}
END_TEST

START_TEST(list_bounded)
{
	cJSON	*arr;
	char	 name[32];
	bool	 trunc = false;
	int	 i, fd;

	ck_assert_int_eq(mkdirat(base, "root/many", 0755), 0);
	for (i = 0; i < FILES_LIST_MAX + 3; i++) {
		snprintf(name, sizeof(name), "root/many/%05d", i);
		fd = openat(base, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		ck_assert_int_ge(fd, 0);
		close(fd);
	}
	arr = cJSON_CreateArray();
	ck_assert_int_eq(files_list(&root, "many", 1, arr, &trunc), 0);
	ck_assert(trunc);
	ck_assert_int_eq(cJSON_GetArraySize(arr), FILES_LIST_MAX);
	cJSON_Delete(arr);
	/* Exactly the bound is not truncated. */
	for (i = FILES_LIST_MAX; i < FILES_LIST_MAX + 3; i++) {
		snprintf(name, sizeof(name), "root/many/%05d", i);
		ck_assert_int_eq(unlinkat(base, name, 0), 0);
	}
	arr = cJSON_CreateArray();
	ck_assert_int_eq(files_list(&root, "many", 1, arr, &trunc), 0);
	ck_assert(!trunc);
	ck_assert_int_eq(cJSON_GetArraySize(arr), FILES_LIST_MAX);
	cJSON_Delete(arr);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Range and errors */

START_TEST(range_helper)
{
	static const struct {
		const char		*h;
		uint64_t		 size;
		enum files_range	 want;
		uint64_t		 first, last;
	} t[] = {
		{ NULL, 10, FILES_RANGE_FULL, 0, 0 },
		{ "bytes=0-4", 10, FILES_RANGE_PART, 0, 4 },
		{ "bytes=2-", 10, FILES_RANGE_PART, 2, 9 },
		{ "bytes=5-100", 10, FILES_RANGE_PART, 5, 9 },
		{ "bytes=-3", 10, FILES_RANGE_PART, 7, 9 },
		{ "bytes=-30", 10, FILES_RANGE_PART, 0, 9 },
		{ "BYTES= 9-9 ", 10, FILES_RANGE_PART, 9, 9 },
		{ "bytes=10-", 10, FILES_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=10-20", 10, FILES_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=-0", 10, FILES_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=0-", 0, FILES_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=-5", 0, FILES_RANGE_UNSATISFIABLE, 0, 0 },
		{ "bytes=5-2", 10, FILES_RANGE_FULL, 0, 0 },
		{ "bytes=0-1,3-4", 10, FILES_RANGE_FULL, 0, 0 },
		{ "bytes=a-b", 10, FILES_RANGE_FULL, 0, 0 },
		{ "bytes=-", 10, FILES_RANGE_FULL, 0, 0 },
		{ "bytes=1+2-3", 10, FILES_RANGE_FULL, 0, 0 },
		{ "bytes=99999999999999999999-", 10, FILES_RANGE_FULL, 0, 0 },
		{ "items=0-1", 10, FILES_RANGE_FULL, 0, 0 },
		{ "bytes=0-18446744073709551615", 10, FILES_RANGE_PART, 0, 9 },
	};
	uint64_t	first, last;
	size_t		i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		first = last = 777;
		ck_assert_msg(files_range(t[i].h, t[i].size, &first, &last) ==
		    t[i].want, "%s", t[i].h ? t[i].h : "NULL");
		if (t[i].want == FILES_RANGE_PART)
			ck_assert_msg(first == t[i].first && last == t[i].last,
			    "%s: %llu-%llu", t[i].h, (unsigned long long)first,
			    (unsigned long long)last);
	}
}
END_TEST

START_TEST(errno_mapping)
{
	static const struct {
		int		 err, status;
		const char	*code;
		bool		 outside;
	} t[] = {
		{ ENOENT, 404, "not_found", false },
		{ EACCES, 403, "forbidden", false },
		{ EPERM, 403, "forbidden", false },
		{ ELOOP, 403, "forbidden", true },
		{ EEXIST, 409, "conflict", false },
		{ ENOTEMPTY, 409, "conflict", false },
		{ EXDEV, 409, "cross_device", false },
		{ ENOSPC, 507, "no_space", false },
		{ EISDIR, 400, "invalid_request", false },
		{ ENOTDIR, 400, "invalid_request", false },
		{ EINVAL, 400, "invalid_request", false },
		{ EMFILE, 503, "busy", false },
		{ EIO, 500, "internal", false },
	};
	struct files_err	e;
	size_t			i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		e = files_errmap(t[i].err);
		ck_assert_int_eq(e.status, t[i].status);
		ck_assert_str_eq(e.code, t[i].code);
		ck_assert(e.outside == t[i].outside);
	}
}
END_TEST

Suite *
files_suite(void)
{
	Suite	*s = suite_create("files");
	TCase	*tc;

	tc = tcase_create("paths");
	tcase_add_test(tc, decode_once);
	tcase_add_test(tc, normalize_lexical);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, path_judged_against_root);
	tcase_add_test(tc, range_helper);
	tcase_add_test(tc, errno_mapping);
	suite_add_tcase(s, tc);

	tc = tcase_create("confinement");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, confined_openat2);
	tcase_add_test(tc, confined_without_openat2);
	tcase_add_test(tc, system_root_in_root);
	tcase_add_test(tc, system_root_in_root_without_openat2);
	tcase_add_test(tc, swap_between_calls);
	tcase_add_test(tc, swap_between_calls_without_openat2);
	suite_add_tcase(s, tc);

	tc = tcase_create("put");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, put_created_replaced);
	tcase_add_test(tc, put_rules);
	tcase_add_test(tc, put_abort_keeps_old);
	tcase_add_test(tc, put_flushed_by_a_child);
	tcase_add_test(tc, put_full_disk);
	tcase_add_test(tc, put_file_too_big);
	tcase_add_test(tc, put_atomic_for_readers);
	tcase_add_test(tc, append_in_place);
	tcase_add_test(tc, read_regular_or_dir);
	suite_add_tcase(s, tc);

	tc = tcase_create("ops");
	tcase_add_checked_fixture(tc, setup, teardown);
	/* list_bounded makes FILES_LIST_MAX files: slow under sanitizers. */
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, mkdir_delete_move);
	tcase_add_test(tc, mkdir_delete_move_without_openat2);
	tcase_add_test(tc, move_across_file_systems);
	tcase_add_test(tc, list_depth);
	tcase_add_test(tc, list_bounded);
	suite_add_tcase(s, tc);
	return s;
}
