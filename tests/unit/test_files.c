/*
 * files, with the operations on its paths (upload, fileops): paths are
 * decoded once, normalised and judged against the root; nothing reaches
 * outside it through "..", a link, a magic link, or a link swapped in
 * between calls (with openat2 and with the walk used without it), in any
 * operation; puts are atomic and leave no temp; mkdir, delete, move and
 * append follow their rules and errnos; the Range helper answers as
 * documented.  The listing's entries and the errno table are the api
 * layer's (test_api_files.c, test_api_errno.c).
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

#include "base/tunables.h"
#include "core/fileops.h"
#include "core/files.h"
#include "core/upload.h"
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
static int	list_none(void *, const char *, const struct stat *,
		    const char *);

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

/* PUT rel holding s, whole, through the upload calls. */
static void
put_all(const char *rel, const char *s, int mode, bool *created)
{
	struct upload		p;

	ck_assert_int_eq(upload_begin(&p, &root, rel, UPLOAD_PARENTS,
	    mode), 0);
	ck_assert_int_eq(upload_write(&p, s, strlen(s)), 0);
	ck_assert_int_eq(upload_commit(&p, created), 0);
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

/* A listing's entries, not looked at: confinement is what is tested. */
static int
list_none(void *arg, const char *name, const struct stat *st,
    const char *target)
{
	(void)arg;
	(void)name;
	(void)st;
	(void)target;
	return 0;
}

static void
check_confined(void)
{
	struct upload		p;
	struct stat		st;
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
	ck_assert_int_eq(upload_begin(&p, &root, "rel/new",
	    UPLOAD_PARENTS, UPLOAD_MODE_KEEP), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(upload_begin(&p, &root, "abs/x/y/new",
	    UPLOAD_PARENTS, UPLOAD_MODE_KEEP), -1);
	ck_assert_int_eq(upload_begin(&p, &root, "sub/up",
	    UPLOAD_APPEND, UPLOAD_MODE_KEEP), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(fileops_mkdir(&root, "rel/d", false, 0755), -1);
	ck_assert_int_eq(fileops_mkdir(&root, "abs/d/e", true, 0755), -1);
	ck_assert_int_eq(fileops_delete(&root, "rel/secret", false), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(fileops_move(&root, "sub/f", "rel/stolen", true), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(fileops_move(&root, "rel/secret", "got", true), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(fileops_list(&root, "rel", 1, list_none, NULL, &trunc),
	    -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert(!tu_exists(base, "outside/new"));
	ck_assert(!tu_exists(base, "outside/x"));
	ck_assert(!tu_exists(base, "outside/d"));
	ck_assert(!tu_exists(base, "outside/stolen"));
	ck_assert(tu_exists(base, "outside/secret"));
	ck_assert(!tu_exists(base, "root/got"));
	ck_assert_int_eq(files_stat(&root, "sub/f", true, &st), 0);

	/* Deleting a link out removes the link, not what it points to. */
	ck_assert_int_eq(fileops_delete(&root, "rel", true), 0);
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
	struct upload	 p;
	struct stat		 st;
	char			 abs[256], b[16] = "";
	bool			 created;
	int			 fd;

	ck_assert_int_eq(mkdirat(base, "root/d", 0755), 0);
	tu_put(base, "root/d/old", "old");
	ck_assert_int_eq(upload_begin(&p, &root, "d/f", 0,
	    UPLOAD_MODE_KEEP), 0);
	fd = files_open_read(&root, "d/old", &st);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(renameat(base, "root/d", base, "root/d2"), 0);
	snprintf(abs, sizeof(abs), "%s/outside", base_path);
	ck_assert_int_eq(symlinkat(abs, base, "root/d"), 0);
	ck_assert_int_eq(upload_write(&p, "data", 4), 0);
	ck_assert_int_eq(upload_commit(&p, &created), 0);
	ck_assert(created);
	ck_assert(tu_exists(base, "root/d2/f"));
	ck_assert(!tu_exists(base, "outside/f"));
	ck_assert_int_eq(read(fd, b, sizeof(b)), 3);
	ck_assert_str_eq(b, "old");
	close(fd);
	errno = 0;
	ck_assert_int_eq(files_stat(&root, "d/f", true, &st), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(upload_begin(&p, &root, "d/g", 0,
	    UPLOAD_MODE_KEEP), -1);
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

	put_all("f", "first", UPLOAD_MODE_KEEP, &created);
	ck_assert(created);
	ck_assert_int_eq(fstatat(base, "root/f", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0644);
	put_all("f", "2nd", UPLOAD_MODE_KEEP, &created);
	ck_assert(!created);
	s = tu_slurp(base, "root/f", NULL);
	ck_assert_str_eq(s, "2nd");
	free(s);
	/* A mode given is the mode, umask or not; KEEP keeps it. */
	put_all("f", "3", 0600, &created);
	ck_assert_int_eq(fstatat(base, "root/f", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	put_all("f", "4", UPLOAD_MODE_KEEP, &created);
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
	struct upload	 p;
	char			*s;
	bool			 created;

	errno = 0;
	ck_assert_int_eq(upload_begin(&p, &root, "f", 0, 010000), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(upload_begin(&p, &root, "f", 0, -2), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert(!tu_exists(base, "root/f"));
	/* Without PARENTS a missing directory is ENOENT. */
	errno = 0;
	ck_assert_int_eq(upload_begin(&p, &root, "no/f", 0,
	    UPLOAD_MODE_KEEP), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* A directory there, or the root: EISDIR before any byte. */
	ck_assert_int_eq(mkdirat(base, "root/dir", 0755), 0);
	errno = 0;
	ck_assert_int_eq(upload_begin(&p, &root, "dir", UPLOAD_PARENTS,
	    UPLOAD_MODE_KEEP), -1);
	ck_assert_int_eq(errno, EISDIR);
	ck_assert_int_eq(upload_begin(&p, &root, ".", 0, UPLOAD_MODE_KEEP),
	    -1);
	ck_assert_int_eq(errno, EISDIR);
	/* A file where a parent should be. */
	tu_put(base, "root/plain", "x");
	errno = 0;
	ck_assert_int_eq(upload_begin(&p, &root, "plain/f",
	    UPLOAD_PARENTS, UPLOAD_MODE_KEEP), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	/* A link at the name is replaced; its target stays as it was. */
	tu_put(base, "root/target", "target");
	ck_assert_int_eq(symlinkat("target", base, "root/link"), 0);
	put_all("link", "new", UPLOAD_MODE_KEEP, &created);
	ck_assert(!created);
	s = tu_slurp(base, "root/target", NULL);
	ck_assert_str_eq(s, "target");
	free(s);
	s = tu_slurp(base, "root/link", NULL);
	ck_assert_str_eq(s, "new");
	free(s);
	/* A directory made at the name meanwhile: EISDIR, no temp left. */
	ck_assert_int_eq(upload_begin(&p, &root, "late", 0,
	    UPLOAD_MODE_KEEP), 0);
	ck_assert_int_eq(upload_write(&p, "x", 1), 0);
	ck_assert_int_eq(mkdirat(base, "root/late", 0755), 0);
	tu_put(base, "root/late/keep", "k");
	errno = 0;
	ck_assert_int_eq(upload_commit(&p, &created), -1);
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
	struct upload	 p;
	char			*s;
	int			 rootfd;

	tu_put(base, "root/f", "old");
	ck_assert_int_eq(upload_begin(&p, &root, "f", 0, UPLOAD_MODE_KEEP),
	    0);
	ck_assert_int_eq(upload_write(&p, "half of a new", 13), 0);
	rootfd = openat(base, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(temps_in(rootfd), 1);
	upload_abort(&p);
	upload_abort(&p);	/* twice is harmless */
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
put_mib(struct upload *p, size_t n)
{
	static char	chunk[1024 * 1024];
	size_t		i;

	memset(chunk, 'q', sizeof(chunk));
	for (i = 0; i < n; i++)
		ck_assert_int_eq(upload_write(p, chunk, sizeof(chunk)), 0);
}

START_TEST(put_flushed_by_a_child)
{
	struct upload	 p;
	bool			 created;
	size_t			 mib = 1024 * 1024;
	pid_t			 first, second;
	int			 st, fd;
	struct stat		 sb;

	ck_assert_int_eq(upload_begin(&p, &root, "big", 0,
	    UPLOAD_MODE_KEEP), 0);
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
	ck_assert_int_eq(upload_commit(&p, &created), 0);
	ck_assert(created);
	ck_assert_int_eq(fstatat(base, "root/big", &sb, 0), 0);
	ck_assert_int_eq(sb.st_size,
	    (off_t)(2 * FILES_PUT_FLUSH + FILES_PUT_BEHIND));

	/* A flush that failed (its exit status says EIO): no commit. */
	ck_assert_int_eq(upload_begin(&p, &root, "big", 0,
	    UPLOAD_MODE_KEEP), 0);
	put_mib(&p, FILES_PUT_FLUSH / mib);
	ck_assert_int_gt(first = p.flusher, 0);
	ck_assert_int_eq(waitpid(first, &st, 0), first);
	ck_assert(child_reaped(first, EIO << 8));
	ck_assert_int_eq(upload_commit(&p, &created), -1);
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
	struct upload	 p;
	char			 chunk[8192];
	int			 i, rc = 0, fd;

	if (!small_fs("small")) {
		/* EFBIG (put_too_large) covers the refusal, not ENOSPC. */
		TU_SKIP("no tmpfs mount here (needs root)");
		return;
	}
	tu_put(base, "root/small/f", "old");
	memset(chunk, 'x', sizeof(chunk));
	ck_assert_int_eq(upload_begin(&p, &root, "small/f", 0,
	    UPLOAD_MODE_KEEP), 0);
	for (i = 0; i < 64 && rc == 0; i++)
		rc = upload_write(&p, chunk, sizeof(chunk));
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(errno, ENOSPC);
	upload_abort(&p);
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
	struct upload		p;
	struct rlimit		rl = { 4, RLIM_INFINITY };
	int			rootfd;

	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = 4;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	ck_assert_int_eq(upload_begin(&p, &root, "f", 0, UPLOAD_MODE_KEEP),
	    0);
	ck_assert_int_eq(upload_write(&p, "0123456789", 10), -1);
	ck_assert_int_eq(errno, EFBIG);
	upload_abort(&p);
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
	put_all("f", "", UPLOAD_MODE_KEEP, &created);
	{
		struct upload	p;

		ck_assert_int_eq(upload_begin(&p, &root, "f", 0,
		    UPLOAD_MODE_KEEP), 0);
		ck_assert_int_eq(upload_write(&p, buf, SIZE), 0);
		ck_assert_int_eq(upload_commit(&p, &created), 0);
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
		struct upload	p;

		memset(buf, i % 2 ? 'A' : 'B', SIZE);
		ck_assert_int_eq(upload_begin(&p, &root, "f", 0,
		    UPLOAD_MODE_KEEP), 0);
		for (j = 0; j < SIZE; j += CHUNK)
			ck_assert_int_eq(upload_write(&p, buf + j, CHUNK), 0);
		ck_assert_int_eq(upload_commit(&p, &created), 0);
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
	struct upload	 p;
	struct stat		 st;
	char			*s;
	bool			 created;

	tu_put(base, "root/log", "one\n");
	ck_assert_int_eq(fstatat(base, "root/log", &st, 0), 0);
	ck_assert_int_eq(upload_begin(&p, &root, "log", UPLOAD_APPEND,
	    UPLOAD_MODE_KEEP), 0);
	ck_assert_int_eq(upload_write(&p, "two\n", 4), 0);
	ck_assert_int_eq(upload_commit(&p, &created), 0);
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
	ck_assert_int_eq(upload_begin(&p, &root, "new/log",
	    UPLOAD_APPEND | UPLOAD_PARENTS, 0600), 0);
	ck_assert_int_eq(upload_write(&p, "x", 1), 0);
	ck_assert_int_eq(upload_commit(&p, &created), 0);
	ck_assert(created);
	ck_assert_int_eq(fstatat(base, "root/new/log", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0600);
	/* Through a link inside: the target grows. */
	ck_assert_int_eq(symlinkat("log", base, "root/ln"), 0);
	ck_assert_int_eq(upload_begin(&p, &root, "ln", UPLOAD_APPEND,
	    UPLOAD_MODE_KEEP), 0);
	ck_assert_int_eq(upload_write(&p, "3\n", 2), 0);
	upload_abort(&p);	/* what was appended stays */
	s = tu_slurp(base, "root/log", NULL);
	ck_assert_str_eq(s, "one\ntwo\n3\n");
	free(s);
	/* A link to nothing: not created through, a conflict. */
	ck_assert_int_eq(symlinkat("nowhere", base, "root/dangling"), 0);
	errno = 0;
	ck_assert_int_eq(upload_begin(&p, &root, "dangling",
	    UPLOAD_APPEND, UPLOAD_MODE_KEEP), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert(!tu_exists(base, "root/nowhere"));
	/* A directory, a FIFO (which must not block): refused. */
	ck_assert_int_eq(mkdirat(base, "root/dir", 0755), 0);
	errno = 0;
	ck_assert_int_eq(upload_begin(&p, &root, "dir", UPLOAD_APPEND,
	    UPLOAD_MODE_KEEP), -1);
	ck_assert_int_eq(errno, EISDIR);
	ck_assert_int_eq(mkfifoat(base, "root/fifo", 0600), 0);
	errno = 0;
	ck_assert_int_eq(upload_begin(&p, &root, "fifo", UPLOAD_APPEND,
	    UPLOAD_MODE_KEEP), -1);
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
	ck_assert_int_eq(fileops_mkdir(&root, "a", false, 0755), 0);
	errno = 0;
	ck_assert_int_eq(fileops_mkdir(&root, "a", false, 0755), -1);
	ck_assert_int_eq(errno, EEXIST);
	errno = 0;
	ck_assert_int_eq(fileops_mkdir(&root, "b/c/d", false, 0755), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(fileops_mkdir(&root, "b/c/d", true, 0755), 0);
	ck_assert_int_eq(fileops_mkdir(&root, "b/c/d", true, 0755), 0);
	ck_assert_int_eq(fileops_mkdir(&root, ".", true, 0755), 0);
	ck_assert_int_eq(fileops_mkdir(&root, ".", false, 0755), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(symlinkat("b/c", base, "root/lc"), 0);
	ck_assert_int_eq(fileops_mkdir(&root, "lc/e/f", true, 0755), 0);
	ck_assert_int_eq(fstatat(base, "root/b/c/e/f", &st, 0), 0);
	ck_assert(S_ISDIR(st.st_mode));
	tu_put(base, "root/file", "x");
	errno = 0;
	ck_assert_int_eq(fileops_mkdir(&root, "file/sub", true, 0755), -1);
	ck_assert_int_eq(errno, ENOTDIR);

	/* delete */
	tu_put(base, "root/b/c/d/deep", "1");
	errno = 0;
	ck_assert_int_eq(fileops_delete(&root, "b", false), -1);
	ck_assert_int_eq(errno, ENOTEMPTY);
	ck_assert(tu_exists(base, "root/b/c/d/deep"));
	ck_assert_int_eq(fileops_delete(&root, "lc", true), 0);	/* the link */
	ck_assert(tu_exists(base, "root/b/c/d/deep"));
	ck_assert_int_eq(fileops_delete(&root, "b", true), 0);
	ck_assert(!tu_exists(base, "root/b"));
	ck_assert_int_eq(fileops_delete(&root, "a", false), 0);
	ck_assert_int_eq(fileops_delete(&root, "file", false), 0);
	errno = 0;
	ck_assert_int_eq(fileops_delete(&root, "file", false), -1);
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_int_eq(fileops_delete(&root, ".", true), -1);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert(tu_exists(base, "root"));

	/* move */
	tu_put(base, "root/m1", "one");
	tu_put(base, "root/m2", "two");
	errno = 0;
	ck_assert_int_eq(fileops_move(&root, "m1", "m2", false), -1);
	ck_assert_int_eq(errno, EEXIST);
	s = tu_slurp(base, "root/m2", NULL);
	ck_assert_str_eq(s, "two");
	free(s);
	ck_assert_int_eq(fileops_move(&root, "m1", "m2", true), 0);
	s = tu_slurp(base, "root/m2", NULL);
	ck_assert_str_eq(s, "one");
	free(s);
	ck_assert(!tu_exists(base, "root/m1"));
	ck_assert_int_eq(fileops_move(&root, "m2", "m3", false), 0);
	errno = 0;
	ck_assert_int_eq(fileops_move(&root, "m3", "nodir/m", false), -1);
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_int_eq(fileops_move(&root, "gone", "m4", false), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(fileops_mkdir(&root, "p/q", true, 0755), 0);
	errno = 0;
	ck_assert_int_eq(fileops_move(&root, "p", "p/q/p", false), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fileops_move(&root, ".", "x", false), -1);
	ck_assert_int_eq(errno, EBUSY);
	ck_assert_int_eq(fileops_move(&root, "m3", ".", true), -1);
	ck_assert_int_eq(errno, EBUSY);
	/* A file over a directory and back. */
	errno = 0;
	ck_assert_int_eq(fileops_move(&root, "m3", "p", true), -1);
	ck_assert_int_eq(errno, EISDIR);
	errno = 0;
	ck_assert_int_eq(fileops_move(&root, "p", "m3", true), -1);
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

/* Names a listing gives, one line each, appended to a buffer. */
static int
list_names(void *arg, const char *name, const struct stat *st,
    const char *target)
{
	char	*out = arg;
	size_t	 len = strlen(out);

	(void)st;
	(void)target;
	snprintf(out + len, 4096 - len, "%s\n", name);
	return 0;
}

/* A walk in shares of one entry gives what one whole listing gives. */
START_TEST(walk_in_shares)
{
	struct fileops_walk	*w;
	static char		 whole[4096], shares[4096];
	bool			 trunc;
	int			 rc, steps = 0;

	ck_assert_int_eq(fileops_mkdir(&root, "t/a/b/c", true, 0755), 0);
	ck_assert_int_eq(fileops_mkdir(&root, "t/d", true, 0755), 0);
	tu_put(base, "root/t/a/f", "1");
	tu_put(base, "root/t/z", "1");
	ck_assert_int_eq(symlinkat("a", base, "root/t/ln"), 0);
	whole[0] = shares[0] = '\0';
	ck_assert_int_eq(fileops_list(&root, "t", 32, list_names, whole,
	    &trunc), 0);
	ck_assert(!trunc);
	ck_assert_str_eq(whole, "a\na/b\na/b/c\na/f\nd\nln\nz\n");
	ck_assert_ptr_nonnull(w = malloc(sizeof(*w)));
	ck_assert_int_eq(fileops_walk_open(w, &root, "t", 32), 0);
	while ((rc = fileops_walk_step(w, 1, list_names, shares)) == 1)
		steps++;
	ck_assert_int_eq(rc, 0);
	ck_assert(!w->truncated);
	fileops_walk_close(w);
	ck_assert_str_eq(shares, whole);
	ck_assert_int_eq(steps, 6);	/* the seventh share ends the walk */
	/* Closed part way: nothing left held. */
	ck_assert_int_eq(fileops_walk_open(w, &root, "t", 32), 0);
	ck_assert_int_eq(fileops_walk_step(w, 2, list_names, shares), 1);
	fileops_walk_close(w);
	ck_assert_int_eq(w->nlev, 0);
	errno = 0;
	ck_assert_int_eq(fileops_walk_open(w, &root, "t", 33), -1);
	ck_assert_int_eq(errno, EINVAL);
	free(w);
}
END_TEST

/*
 * mkdir -p walks down from each parent's fd (links on the way followed,
 * confined); a recursive delete in its child says how it ended.
 */
START_TEST(mkdirs_walk_and_delete_child)
{
	struct stat	st;
	pid_t		pid;
	int		wstatus, fd;

	ck_assert_int_eq(symlinkat("../outside", base, "root/out"), 0);
	errno = 0;
	ck_assert_int_eq(fileops_mkdir(&root, "out/x/y", true, 0755), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert(!tu_exists(base, "outside/x"));
	fd = files_mkdirs_owned(&root, "w/x/y", 0755, getuid(), getgid());
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	close(fd);
	ck_assert(tu_exists(base, "root/w/x/y"));

	tu_put(base, "root/w/x/f", "1");
	ck_assert_int_gt(pid = fileops_delete_spawn(&root, "w"), 0);
	ck_assert_int_eq(waitpid(pid, &wstatus, 0), pid);
	ck_assert_int_eq(fileops_delete_status(wstatus), 0);
	ck_assert(!tu_exists(base, "root/w"));
	ck_assert_int_gt(pid = fileops_delete_spawn(&root, "w"), 0);
	ck_assert_int_eq(waitpid(pid, &wstatus, 0), pid);
	errno = 0;
	ck_assert_int_eq(fileops_delete_status(wstatus), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert(tu_exists(base, "outside"));
}
END_TEST

START_TEST(move_across_file_systems)
{
	if (!small_fs("other")) {
		TU_SKIP("no tmpfs mount here (needs root)");
		return;
	}
	tu_put(base, "root/f", "data");
	errno = 0;
	ck_assert_int_eq(fileops_move(&root, "f", "other/f", false), -1);
	ck_assert_int_eq(errno, EXDEV);
	ck_assert(tu_exists(base, "root/f"));
	ck_assert(!tu_exists(base, "root/other/f"));
}
END_TEST

/* ------------------------------------------------------------------ */
/* Range and errors */

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
	tcase_add_test(tc, mkdir_delete_move);
	tcase_add_test(tc, mkdir_delete_move_without_openat2);
	tcase_add_test(tc, move_across_file_systems);
	tcase_add_test(tc, mkdirs_walk_and_delete_child);
	tcase_add_test(tc, walk_in_shares);
	suite_add_tcase(s, tc);
	return s;
}
