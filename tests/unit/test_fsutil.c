/*
 * fsutil: atomic replacement leaves whole files and no debris, a new
 * file is never written over an old one, a write the disk refuses keeps
 * the old file, rmtree removes trees without following links (and its
 * flat walk does so with fds and memory the depth does not grow, passing
 * over what it cannot remove), mkdirs is
 * mkdir -p, read stops at its bound, and nothing under a directory fd
 * goes through a link (with openat2, and with the walk used without it).
 */
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <linux/fs.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "testutil.h"

Suite *fsutil_suite(void);

static char	tdir_path[64];
static int	tdir = -1;

static void	setup(void);
static void	teardown(void);
static void	fsize_limit(rlim_t);
static void	check_links_refused(void);

static void
setup(void)
{
	tdir = tu_tmpdir(tdir_path, sizeof(tdir_path), "/tmp/tend-fsutil-");
}

static void
teardown(void)
{
	close(tdir);
	tdir = -1;
	tu_rmtree(tdir_path);
}

/*
 * Files may grow to n bytes at most (RLIMIT_FSIZE; RLIM_INFINITY lifts
 * it): a write past it fails with EFBIG, as a full disk fails one.
 */
static void
fsize_limit(rlim_t n)
{
	struct rlimit	rl;

	signal(SIGXFSZ, SIG_IGN);
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &rl), 0);
	rl.rlim_cur = n == RLIM_INFINITY ? rl.rlim_max : n;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
}

/* ------------------------------------------------------------------ */

START_TEST(write_atomic_replaces)
{
	char	*s;
	size_t	 len;

	ck_assert_int_eq(fsutil_write_atomic(tdir, "f", "first version", 13,
	    false), 0);
	s = tu_slurp(tdir, "f", NULL);
	ck_assert_str_eq(s, "first version");
	free(s);
	ck_assert(!tu_exists(tdir, "f.tmp"));

	/* Shorter content: nothing of the old file may survive. */
	ck_assert_int_eq(fsutil_write_atomic(tdir, "f", "2nd", 3, true), 0);
	s = tu_slurp(tdir, "f", &len);
	ck_assert_str_eq(s, "2nd");
	free(s);
	ck_assert_uint_eq(len, 3);
	ck_assert(!tu_exists(tdir, "f.tmp"));

	/* Empty content is a file of size 0, not a failure. */
	ck_assert_int_eq(fsutil_write_atomic(tdir, "f", "", 0, false), 0);
	free(tu_slurp(tdir, "f", &len));
	ck_assert_uint_eq(len, 0);
}
END_TEST

START_TEST(write_atomic_is_a_rename)
{
	struct stat	 before, after;
	char		*s;
	int		 fd;

	tu_put(tdir, "f", "old");
	ck_assert_int_eq(fstatat(tdir, "f", &before, 0), 0);
	/* A reader holding the old file keeps reading the old bytes. */
	fd = openat(tdir, "f", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fsutil_write_atomic(tdir, "f", "new", 3, false), 0);
	ck_assert_int_eq(fstatat(tdir, "f", &after, 0), 0);
	ck_assert_uint_ne(before.st_ino, after.st_ino);
	{
		char	b[8] = "";

		ck_assert_int_eq(read(fd, b, sizeof(b)), 3);
		ck_assert_int_eq(memcmp(b, "old", 3), 0);
	}
	close(fd);
	s = tu_slurp(tdir, "f", NULL);
	ck_assert_str_eq(s, "new");
	free(s);
}
END_TEST

START_TEST(write_atomic_failure_cleans_up)
{
	char	name[NAME_MAX + 1];

	/* rename(file, directory) fails: the temporary must not remain. */
	ck_assert_int_eq(mkdirat(tdir, "d", 0700), 0);
	ck_assert_int_eq(fsutil_write_atomic(tdir, "d", "x", 1, false), -1);
	ck_assert_int_eq(errno, EISDIR);
	ck_assert(!tu_exists(tdir, "d.tmp"));

	/* A name whose ".tmp" sibling cannot exist. */
	memset(name, 'n', NAME_MAX - 2);
	name[NAME_MAX - 2] = '\0';
	ck_assert_int_eq(fsutil_write_atomic(tdir, name, "x", 1, false), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);

	/* A missing directory. */
	ck_assert_int_eq(fsutil_write_atomic(tdir, "nodir/f", "x", 1, false),
	    -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(write_atomic_over_stale_tmp)
{
	char	*s;

	/* A crash left a longer temporary behind: none of it may show. */
	tu_put(tdir, "f.tmp",
	    "stale bytes from a crash, longer than the new content");
	ck_assert_int_eq(fsutil_write_atomic(tdir, "f", "fresh", 5, false), 0);
	s = tu_slurp(tdir, "f", NULL);
	ck_assert_str_eq(s, "fresh");
	free(s);
	ck_assert(!tu_exists(tdir, "f.tmp"));
}
END_TEST

/* A temp made ahead is the file written: opened, not created. */
START_TEST(write_through_tmp_made_ahead)
{
	struct stat	 st, st2;
	char		*s;

	ck_assert_int_eq(fsutil_tmp_make(tdir, "f"), 0);
	ck_assert_int_eq(fstatat(tdir, "f.tmp", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(fsutil_write_atomic_tmp(tdir, "f", true, "one", 3,
	    0, false), 0);
	ck_assert_int_eq(fstatat(tdir, "f", &st2, 0), 0);
	ck_assert_uint_eq(st2.st_ino, st.st_ino);
	ck_assert(!tu_exists(tdir, "f.tmp"));

	ck_assert_int_eq(fsutil_tmp_make(tdir, "g"), 0);
	ck_assert_int_eq(fstatat(tdir, "g.tmp", &st, 0), 0);
	ck_assert_int_eq(fsutil_write_new_tmp(tdir, "g", true, "two", 3), 0);
	ck_assert_int_eq(fstatat(tdir, "g", &st2, 0), 0);
	ck_assert_uint_eq(st2.st_ino, st.st_ino);
	s = tu_slurp(tdir, "g", NULL);
	ck_assert_str_eq(s, "two");
	free(s);

	/* Gone since it was made: made anew, the write still whole. */
	ck_assert_int_eq(fsutil_tmp_make(tdir, "h"), 0);
	ck_assert_int_eq(unlinkat(tdir, "h.tmp", 0), 0);
	ck_assert_int_eq(fsutil_write_atomic_tmp(tdir, "h", true, "three", 5,
	    0, false), 0);
	s = tu_slurp(tdir, "h", NULL);
	ck_assert_str_eq(s, "three");
	free(s);
	/* A link planted in its place is not written through. */
	ck_assert_int_eq(fsutil_tmp_make(tdir, "i"), 0);
	ck_assert_int_eq(unlinkat(tdir, "i.tmp", 0), 0);
	tu_put(tdir, "victim", "precious");
	ck_assert_int_eq(symlinkat("victim", tdir, "i.tmp"), 0);
	ck_assert_int_eq(fsutil_write_atomic_tmp(tdir, "i", true, "four", 4,
	    0, false), 0);
	s = tu_slurp(tdir, "victim", NULL);
	ck_assert_str_eq(s, "precious");
	free(s);
	s = tu_slurp(tdir, "i", NULL);
	ck_assert_str_eq(s, "four");
	free(s);
}
END_TEST

/*
 * Room kept past a file (its size unchanged) takes a longer write in
 * place; nothing is written through a second name.
 */
START_TEST(write_inplace_into_room_kept)
{
	struct stat	 st;
	char		*s;

	ck_assert_int_eq(fsutil_write_atomic_tmp(tdir, "k", false, "short", 5,
	    8192, false), 0);
	ck_assert_int_eq(fstatat(tdir, "k", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 5);
	if (st.st_blocks * 512 < 8192)
		fprintf(stderr, "fsutil: no room kept on this file system\n");
	ck_assert_int_eq(fsutil_write_inplace(tdir, "k", "a longer text", 13),
	    0);
	s = tu_slurp(tdir, "k", NULL);
	ck_assert_str_eq(s, "a longer text");
	free(s);
	ck_assert_int_eq(fsutil_write_inplace(tdir, "k", "cut", 3), 0);
	s = tu_slurp(tdir, "k", NULL);
	ck_assert_str_eq(s, "cut");
	free(s);
	ck_assert_int_eq(linkat(tdir, "k", tdir, "k2", 0), 0);
	ck_assert_int_eq(fsutil_write_inplace(tdir, "k", "no", 2), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(fsutil_write_inplace(tdir, "absent", "no", 2), -1);
	ck_assert_int_eq(errno, ENOENT);
	s = tu_slurp(tdir, "k2", NULL);
	ck_assert_str_eq(s, "cut");
	free(s);
}
END_TEST

START_TEST(write_refused_keeps_old)
{
	char	*s;

	tu_put(tdir, "f", "old content");
	fsize_limit(4);
	errno = 0;
	ck_assert_int_eq(fsutil_write_atomic(tdir, "f", "a longer new content",
	    20, true), -1);
	ck_assert_int_eq(errno, EFBIG);
	errno = 0;
	ck_assert_int_eq(fsutil_write_new(tdir, "n", "a longer new content",
	    20), -1);
	ck_assert_int_eq(errno, EFBIG);
	fsize_limit(RLIM_INFINITY);
	s = tu_slurp(tdir, "f", NULL);
	ck_assert_str_eq(s, "old content");
	free(s);
	/* No temp, and no part of a new file. */
	ck_assert(!tu_exists(tdir, "f.tmp"));
	ck_assert(!tu_exists(tdir, "n"));
	ck_assert(!tu_exists(tdir, "n.tmp"));
	ck_assert_int_eq(fsutil_write_new(tdir, "n", "whole", 5), 0);
}
END_TEST

START_TEST(write_through_no_link)
{
	struct stat	 st;
	char		*s;
	const char	*names[] = { "f", "g", "h" };
	size_t		 i;

	tu_put(tdir, "victim", "precious");
	/* Links planted as the temps, and as a name to replace. */
	ck_assert_int_eq(symlinkat("victim", tdir, "f.tmp"), 0);
	ck_assert_int_eq(symlinkat("victim", tdir, "g.tmp"), 0);
	ck_assert_int_eq(symlinkat("victim", tdir, "h"), 0);
	ck_assert_int_eq(fsutil_write_atomic(tdir, "f", "new", 3, false), 0);
	ck_assert_int_eq(fsutil_write_new(tdir, "g", "new", 3), 0);
	ck_assert_int_eq(fsutil_write_atomic(tdir, "h", "new", 3, true), 0);
	s = tu_slurp(tdir, "victim", NULL);
	ck_assert_str_eq(s, "precious");
	free(s);
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		ck_assert_int_eq(fstatat(tdir, names[i], &st,
		    AT_SYMLINK_NOFOLLOW), 0);
		ck_assert(S_ISREG(st.st_mode));
		s = tu_slurp(tdir, names[i], NULL);
		ck_assert_str_eq(s, "new");
		free(s);
	}
	ck_assert(!tu_exists(tdir, "f.tmp"));
	ck_assert(!tu_exists(tdir, "g.tmp"));
}
END_TEST

START_TEST(write_new_refuses_existing)
{
	char	*s;
	size_t	 len;

	ck_assert_int_eq(fsutil_write_new(tdir, "n", "first", 5), 0);
	s = tu_slurp(tdir, "n", &len);
	ck_assert_str_eq(s, "first");
	free(s);
	ck_assert_uint_eq(len, 5);
	ck_assert(!tu_exists(tdir, "n.tmp"));
	errno = 0;
	ck_assert_int_eq(fsutil_write_new(tdir, "n", "second", 6), -1);
	ck_assert_int_eq(errno, EEXIST);
	s = tu_slurp(tdir, "n", NULL);
	ck_assert_str_eq(s, "first");
	free(s);
	/* Nor through a link planted in its place. */
	ck_assert_int_eq(symlinkat("target", tdir, "lnk"), 0);
	errno = 0;
	ck_assert_int_eq(fsutil_write_new(tdir, "lnk", "x", 1), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert(!tu_exists(tdir, "target"));
	ck_assert_int_eq(fsutil_write_new(tdir, "empty", "", 0), 0);
	free(tu_slurp(tdir, "empty", &len));
	ck_assert_uint_eq(len, 0);
}
END_TEST

START_TEST(rmtree_nested)
{
	ck_assert_int_eq(fsutil_mkdirs(tdir, "a/b/c/d"), 0);
	ck_assert_int_eq(mkdirat(tdir, "a/empty", 0700), 0);
	tu_put(tdir, "a/top", "1");
	tu_put(tdir, "a/b/mid", "2");
	tu_put(tdir, "a/b/c/d/deep", "3");
	ck_assert_int_eq(fsutil_rmtree(tdir, "a"), 0);
	ck_assert(!tu_exists(tdir, "a"));
	/* A single file is a tree too. */
	tu_put(tdir, "plain", "x");
	ck_assert_int_eq(fsutil_rmtree(tdir, "plain"), 0);
	ck_assert(!tu_exists(tdir, "plain"));
}
END_TEST

START_TEST(rmtree_flat_nested)
{
	char	*s;

	ck_assert_int_eq(fsutil_mkdirs(tdir, "a/b/c/d"), 0);
	ck_assert_int_eq(mkdirat(tdir, "a/empty", 0700), 0);
	tu_put(tdir, "a/top", "1");
	tu_put(tdir, "a/b/mid", "2");
	tu_put(tdir, "a/b/c/d/deep", "3");
	ck_assert_int_eq(fsutil_mkdirs(tdir, "outside"), 0);
	tu_put(tdir, "outside/keep", "precious");
	ck_assert_int_eq(symlinkat("../../outside", tdir, "a/b/link"), 0);
	ck_assert_int_eq(fsutil_rmtree_flat(tdir, "a"), 0);
	ck_assert(!tu_exists(tdir, "a"));
	s = tu_slurp(tdir, "outside/keep", NULL);
	ck_assert_str_eq(s, "precious");
	free(s);
	tu_put(tdir, "plain", "x");
	ck_assert_int_eq(fsutil_rmtree_flat(tdir, "plain"), 0);
	ck_assert(!tu_exists(tdir, "plain"));
	ck_assert_int_eq(fsutil_rmtree_flat(tdir, "never-was"), 0);
	ck_assert_int_eq(symlinkat("outside", tdir, "dirlink"), 0);
	ck_assert_int_eq(fsutil_rmtree_flat(tdir, "dirlink"), 0);
	ck_assert(!tu_exists(tdir, "dirlink"));
	ck_assert(tu_exists(tdir, "outside/keep"));
}
END_TEST

/*
 * 3,000 levels with 32 fds allowed: the walk holds a fixed few, where
 * one per level would run out.
 */
START_TEST(rmtree_flat_deep)
{
	struct rlimit	rl, low;
	int		fd, nfd, i;

	ck_assert_int_eq(mkdirat(tdir, "deep", 0700), 0);
	fd = openat(tdir, "deep", O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(fd, 0);
	for (i = 0; i < 3000; i++) {
		ck_assert_int_eq(mkdirat(fd, "d", 0700), 0);
		if (i % 100 == 0)
			tu_put(fd, "f", "x");
		nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY);
		ck_assert_int_ge(nfd, 0);
		close(fd);
		fd = nfd;
	}
	tu_put(fd, "leaf", "x");
	close(fd);
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	low = rl;
	low.rlim_cur = 32;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	i = fsutil_rmtree_flat(tdir, "deep");
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	ck_assert_int_eq(i, 0);
	ck_assert(!tu_exists(tdir, "deep"));
}
END_TEST

START_TEST(rmtree_flat_wide)
{
	char	name[32];
	int	i, j;

	ck_assert_int_eq(mkdirat(tdir, "wide", 0700), 0);
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "wide/d%d", i);
		ck_assert_int_eq(mkdirat(tdir, name, 0700), 0);
		for (j = 0; j < 10; j++) {
			snprintf(name, sizeof(name), "wide/d%d/f%d", i, j);
			tu_put(tdir, name, "x");
		}
		snprintf(name, sizeof(name), "wide/f%d", i);
		tu_put(tdir, name, "x");
	}
	ck_assert_int_eq(fsutil_rmtree_flat(tdir, "wide"), 0);
	ck_assert(!tu_exists(tdir, "wide"));
}
END_TEST

/* The immutable flag on dir/name set (on) or cleared; -1 where none is. */
static int
immutable(const char *name, bool on)
{
	int	fd, fl, rc = -1;

	if ((fd = openat(tdir, name, O_RDONLY | O_NONBLOCK)) == -1)
		return -1;
	if (ioctl(fd, FS_IOC_GETFLAGS, &fl) == 0) {
		fl = on ? fl | FS_IMMUTABLE_FL : fl & ~FS_IMMUTABLE_FL;
		rc = ioctl(fd, FS_IOC_SETFLAGS, &fl);
	}
	close(fd);
	return rc;
}

/*
 * An entry that cannot go (an immutable file, two levels down among
 * others) stays with the directories above it; everything else goes, the
 * walk ends, and says it failed.  Once the entry can go, so does all.
 */
START_TEST(rmtree_flat_passes_over_what_stays)
{
	char	name[32];
	int	i;

	ck_assert_int_eq(fsutil_mkdirs(tdir, "t/a/b/c"), 0);
	ck_assert_int_eq(fsutil_mkdirs(tdir, "t/z/y"), 0);
	for (i = 0; i < 50; i++) {
		snprintf(name, sizeof(name), "t/a/b/f%d", i);
		tu_put(tdir, name, "x");
		snprintf(name, sizeof(name), "t/z/f%d", i);
		tu_put(tdir, name, "x");
	}
	tu_put(tdir, "t/a/b/stays", "x");
	tu_put(tdir, "t/a/b/c/g", "x");
	tu_put(tdir, "t/top", "x");
	if (immutable("t/a/b/stays", true) == -1) {
		TU_SKIP("no immutable flag here (%s)", strerror(errno));
		return;
	}
	errno = 0;
	i = fsutil_rmtree_flat(tdir, "t");
	ck_assert_int_eq(immutable("t/a/b/stays", false), 0);
	ck_assert_int_eq(i, -1);
	ck_assert_int_eq(errno, ENOTEMPTY);
	ck_assert(tu_exists(tdir, "t/a/b/stays"));
	ck_assert(!tu_exists(tdir, "t/a/b/f0"));
	ck_assert(!tu_exists(tdir, "t/a/b/f49"));
	ck_assert(!tu_exists(tdir, "t/a/b/c"));
	ck_assert(!tu_exists(tdir, "t/z"));
	ck_assert(!tu_exists(tdir, "t/top"));
	ck_assert_int_eq(fsutil_rmtree_flat(tdir, "t"), 0);
	ck_assert(!tu_exists(tdir, "t"));
}
END_TEST

/*
 * A directory moved out of the tree while the walk is below it: the step
 * up out of it reaches another directory, and the walk stops there (its
 * new parent, outside the tree, untouched).  A forked renamer moves level
 * 10 once the leaf at the bottom is gone, while the walk climbs; on a
 * loaded machine the walk may outrun it, so a few tries.
 */
START_TEST(rmtree_flat_stops_when_moved_away)
{
	char	path[64];
	double	end;
	pid_t	pid;
	int	fd, nfd, i, st, rc, try;

	tu_put(tdir, "sentinel", "x");
	strcpy(path, "deep");
	for (i = 0; i < 10; i++)
		strcat(path, "/d");
	for (try = 0; try < 5; try++) {
		ck_assert_int_eq(mkdirat(tdir, "deep", 0700), 0);
		fd = openat(tdir, "deep", O_RDONLY | O_DIRECTORY);
		ck_assert_int_ge(fd, 0);
		for (i = 0; i < 3000; i++) {
			ck_assert_int_eq(mkdirat(fd, "d", 0700), 0);
			nfd = openat(fd, "d", O_RDONLY | O_DIRECTORY);
			ck_assert_int_ge(nfd, 0);
			close(fd);
			fd = nfd;
		}
		tu_put(fd, "leaf", "x");
		if ((pid = fork()) == 0) {
			end = tu_now() + 10;
			while (faccessat(fd, "leaf", F_OK,
			    AT_SYMLINK_NOFOLLOW) == 0 && tu_now() < end)
				;
			_exit(renameat(tdir, path, tdir, "moved") == 0 ? 0 : 1);
		}
		ck_assert_int_gt(pid, 0);
		close(fd);
		errno = 0;
		rc = fsutil_rmtree_flat(tdir, "deep");
		ck_assert_int_eq(waitpid(pid, &st, 0), pid);
		ck_assert(WIFEXITED(st));
		if (WEXITSTATUS(st) == 0)
			break;
		/* Too late: the walk was past level 10 and removed it all. */
		ck_assert_int_eq(rc, 0);
		ck_assert(!tu_exists(tdir, "deep"));
	}
	if (try == 5) {
		TU_SKIP("the walk outran the renamer %d times", try);
		return;
	}
	ck_assert_int_eq(rc, -1);
	ck_assert_int_eq(errno, ESTALE);
	ck_assert(tu_exists(tdir, "sentinel"));
	ck_assert(tu_exists(tdir, "moved"));
	ck_assert(tu_exists(tdir, "deep"));
	ck_assert_int_eq(fsutil_rmtree_flat(tdir, "moved"), 0);
	ck_assert_int_eq(fsutil_rmtree_flat(tdir, "deep"), 0);
}
END_TEST

/* The check each step up makes: a directory moved away is told apart. */
START_TEST(rmtree_flat_same_dir)
{
	struct stat	st;
	int		a, b, f;

	ck_assert_int_eq(fsutil_mkdirs(tdir, "x/a"), 0);
	ck_assert_int_eq(fsutil_mkdirs(tdir, "x/b"), 0);
	tu_put(tdir, "x/f", "x");
	a = openat(tdir, "x/a", O_RDONLY | O_DIRECTORY);
	b = openat(tdir, "x/b", O_RDONLY | O_DIRECTORY);
	f = openat(tdir, "x/f", O_RDONLY);
	ck_assert(a >= 0 && b >= 0 && f >= 0);
	ck_assert_int_eq(fstat(a, &st), 0);
	ck_assert(fsutil_same_dir(a, st.st_dev, st.st_ino));
	ck_assert(!fsutil_same_dir(b, st.st_dev, st.st_ino));
	ck_assert(!fsutil_same_dir(a, st.st_dev + 1, st.st_ino));
	ck_assert_int_eq(fstat(f, &st), 0);
	ck_assert(!fsutil_same_dir(f, st.st_dev, st.st_ino));
	close(a);
	close(b);
	close(f);
}
END_TEST

START_TEST(rmtree_enoent_is_success)
{
	errno = 0;
	ck_assert_int_eq(fsutil_rmtree(tdir, "never-was"), 0);
	ck_assert_int_eq(fsutil_rmtree(tdir, "never/was/either"), 0);
}
END_TEST

START_TEST(rmtree_does_not_follow_links)
{
	char	*s;

	ck_assert_int_eq(fsutil_mkdirs(tdir, "outside"), 0);
	tu_put(tdir, "outside/keep", "precious");
	ck_assert_int_eq(fsutil_mkdirs(tdir, "victim/sub"), 0);
	ck_assert_int_eq(symlinkat("../outside", tdir, "victim/link"), 0);
	ck_assert_int_eq(symlinkat("../../outside/keep", tdir,
	    "victim/sub/filelink"), 0);
	ck_assert_int_eq(fsutil_rmtree(tdir, "victim"), 0);
	ck_assert(!tu_exists(tdir, "victim"));
	s = tu_slurp(tdir, "outside/keep", NULL);
	ck_assert_str_eq(s, "precious");
	free(s);
	/* A link named directly is removed, not its target. */
	ck_assert_int_eq(symlinkat("outside", tdir, "dirlink"), 0);
	ck_assert_int_eq(fsutil_rmtree(tdir, "dirlink"), 0);
	ck_assert(!tu_exists(tdir, "dirlink"));
	ck_assert(tu_exists(tdir, "outside/keep"));
}
END_TEST

/* Made anew whatever was under the name; a link is removed, not followed. */
START_TEST(mkdir_anew_replaces)
{
	struct stat	st;
	int		fd;

	fd = fsutil_mkdir_anew(tdir, "fresh");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(st.st_mode & 0777, 0700);
	close(fd);
	tu_put(tdir, "fresh/old", "1");
	ck_assert_int_ge(fd = fsutil_mkdir_anew(tdir, "fresh"), 0);
	close(fd);
	ck_assert(tu_exists(tdir, "fresh"));
	ck_assert(!tu_exists(tdir, "fresh/old"));
	tu_put(tdir, "file", "x");
	ck_assert_int_ge(fd = fsutil_mkdir_anew(tdir, "file"), 0);
	close(fd);
	ck_assert_int_eq(fstatat(tdir, "file", &st, 0), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_int_eq(fsutil_mkdirs(tdir, "outside"), 0);
	tu_put(tdir, "outside/keep", "precious");
	ck_assert_int_eq(symlinkat("outside", tdir, "link"), 0);
	ck_assert_int_ge(fd = fsutil_mkdir_anew(tdir, "link"), 0);
	close(fd);
	ck_assert(tu_exists(tdir, "outside/keep"));
	ck_assert_int_eq(fstatat(tdir, "link", &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISDIR(st.st_mode));
	errno = 0;
	ck_assert_int_eq(fsutil_mkdir_anew(tdir, "no/such/parent"), -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(mkdirs_nested_idempotent)
{
	struct stat	 st;
	mode_t		 old;
	char		*s;

	old = umask(0);
	ck_assert_int_eq(fsutil_mkdirs(tdir, "x/y/z"), 0);
	umask(old);
	ck_assert_int_eq(fstatat(tdir, "x/y/z", &st, 0), 0);
	ck_assert(S_ISDIR(st.st_mode));
	ck_assert_uint_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(fstatat(tdir, "x", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0700);

	tu_put(tdir, "x/y/z/file", "kept");
	ck_assert_int_eq(fsutil_mkdirs(tdir, "x/y/z"), 0);
	ck_assert_int_eq(fsutil_mkdirs(tdir, "x/y"), 0);
	ck_assert_int_eq(fsutil_mkdirs(tdir, "x/y/z/"), 0);
	s = tu_slurp(tdir, "x/y/z/file", NULL);
	ck_assert_str_eq(s, "kept");
	free(s);
	ck_assert_int_eq(fsutil_mkdirs(tdir, "x/y/w"), 0);
	ck_assert(tu_exists(tdir, "x/y/w"));
}
END_TEST

START_TEST(mkdirs_absolute_and_failures)
{
	struct stat	st;
	char		path[128];

	snprintf(path, sizeof(path), "%s/abs/one/two", tdir_path);
	ck_assert_int_eq(fsutil_mkdirs(AT_FDCWD, path), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert(S_ISDIR(st.st_mode));

	/* A file in the way. */
	tu_put(tdir, "file", "x");
	ck_assert_int_eq(fsutil_mkdirs(tdir, "file/sub"), -1);
	ck_assert_int_eq(errno, ENOTDIR);
	ck_assert(!tu_exists(tdir, "file/sub"));

	/* A relative path under a missing directory fd. */
	ck_assert_int_eq(fsutil_mkdirs(-1, "rel"), -1);
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

START_TEST(read_whole_and_bounded)
{
	char	*s;
	size_t	 len = 99;

	tu_put(tdir, "f", "0123456789");
	s = fsutil_read(tdir, "f", 100, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "0123456789");
	ck_assert_uint_eq(len, 10);
	free(s);

	/* Exactly max: all of it. */
	s = fsutil_read(tdir, "f", 10, &len);
	ck_assert_str_eq(s, "0123456789");
	ck_assert_uint_eq(len, 10);
	free(s);

	/* Truncated at max, still NUL-terminated. */
	s = fsutil_read(tdir, "f", 4, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(len, 4);
	ck_assert_str_eq(s, "0123");
	free(s);

	/* len is optional. */
	s = fsutil_read(tdir, "f", 3, NULL);
	ck_assert_str_eq(s, "012");
	free(s);

	tu_put(tdir, "empty", "");
	s = fsutil_read(tdir, "empty", 16, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, "");
	ck_assert_uint_eq(len, 0);
	free(s);
}
END_TEST

START_TEST(read_refuses_links_under_dirfd)
{
	char	 path[128], *s;

	ck_assert_int_eq(fsutil_mkdirs(tdir, "d"), 0);
	tu_put(tdir, "d/f", "x");
	ck_assert_int_eq(symlinkat("d", tdir, "ld"), 0);
	ck_assert_int_eq(symlinkat("f", tdir, "d/lf"), 0);
	s = fsutil_read(tdir, "d/f", 16, NULL);
	ck_assert_str_eq(s, "x");
	free(s);
	errno = 0;
	ck_assert_ptr_null(fsutil_read(tdir, "ld/f", 16, NULL));
	ck_assert_int_eq(errno, ELOOP);
	errno = 0;
	ck_assert_ptr_null(fsutil_read(tdir, "d/lf", 16, NULL));
	ck_assert_int_eq(errno, ELOOP);
	/* System files (AT_FDCWD): only the last component is checked. */
	snprintf(path, sizeof(path), "%s/ld/f", tdir_path);
	s = fsutil_read(AT_FDCWD, path, 16, NULL);
	ck_assert_str_eq(s, "x");
	free(s);
	snprintf(path, sizeof(path), "%s/d/lf", tdir_path);
	ck_assert_ptr_null(fsutil_read(AT_FDCWD, path, 16, NULL));
}
END_TEST

START_TEST(read_binary_and_errors)
{
	static const char	bin[] = { 'a', '\0', 'b', '\n', '\0' };
	char			*s;
	size_t			 len;

	ck_assert_int_eq(fsutil_write_atomic(tdir, "bin", bin, sizeof(bin),
	    false), 0);
	s = fsutil_read(tdir, "bin", 64, &len);
	ck_assert_ptr_nonnull(s);
	ck_assert_uint_eq(len, sizeof(bin));
	ck_assert_int_eq(memcmp(s, bin, sizeof(bin)), 0);
	ck_assert_int_eq(s[len], '\0');
	free(s);

	errno = 0;
	ck_assert_ptr_null(fsutil_read(tdir, "missing", 64, &len));
	ck_assert_int_eq(errno, ENOENT);

	ck_assert_int_eq(mkdirat(tdir, "dir", 0700), 0);
	errno = 0;
	ck_assert_ptr_null(fsutil_read(tdir, "dir", 64, &len));
	ck_assert_int_eq(errno, EISDIR);
}
END_TEST

/* ------------------------------------------------------------------ */

static void
check_links_refused(void)
{
	int	fd;

	ck_assert_int_eq(fsutil_mkdirs(tdir, "d/e"), 0);
	ck_assert_int_eq(fsutil_mkdirs(tdir, "out"), 0);
	tu_put(tdir, "d/e/f", "x");
	ck_assert_int_eq(symlinkat("d", tdir, "ld"), 0);
	ck_assert_int_eq(symlinkat("f", tdir, "d/e/lf"), 0);
	ck_assert_int_eq(symlinkat("../out", tdir, "d/lo"), 0);

	fd = fsutil_open(tdir, "d/e/f", O_RDONLY, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	fd = fsutil_open(tdir, "d//e/", O_RDONLY | O_DIRECTORY, 0);
	ck_assert_int_ge(fd, 0);
	close(fd);

	/* A link anywhere on the way, or last. */
	errno = 0;
	ck_assert_int_eq(fsutil_open(tdir, "ld/e/f", O_RDONLY, 0), -1);
	ck_assert_int_eq(errno, ELOOP);
	errno = 0;
	ck_assert_int_eq(fsutil_open(tdir, "d/e/lf", O_RDONLY, 0), -1);
	ck_assert_int_eq(errno, ELOOP);
	errno = 0;
	ck_assert_int_eq(fsutil_open(tdir, "ld", O_RDONLY | O_DIRECTORY, 0),
	    -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert_int_eq(fsutil_open(tdir, "d/lo/new", O_WRONLY | O_CREAT,
	    0600), -1);
	ck_assert(!tu_exists(tdir, "out/new"));
	/* Out of the directory. */
	errno = 0;
	ck_assert_int_eq(fsutil_open(tdir, "../x", O_RDONLY, 0), -1);
	ck_assert_int_eq(errno, EXDEV);
	errno = 0;
	ck_assert_int_eq(fsutil_open(tdir, "/etc/passwd", O_RDONLY, 0), -1);
	ck_assert_int_eq(errno, EXDEV);

	/* Creating, and mkdir -p, refuse the same. */
	fd = fsutil_open(tdir, "d/e/new", O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert(tu_exists(tdir, "d/e/new"));
	fd = fsutil_opendirs(tdir, "d/x/y");
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(mkdirat(fd, "z", 0700), 0);
	close(fd);
	ck_assert(tu_exists(tdir, "d/x/y/z"));
	ck_assert_int_eq(fsutil_opendirs(tdir, "d/lo/sub"), -1);
	ck_assert_int_eq(fsutil_mkdirs(tdir, "ld/sub"), -1);
	ck_assert_int_eq(fsutil_opendirs(tdir, "../up"), -1);
	ck_assert(!tu_exists(tdir, "out/sub"));
	ck_assert(!tu_exists(tdir, "d/sub"));
}

START_TEST(open_refuses_links)
{
	check_links_refused();
}
END_TEST

START_TEST(open_refuses_links_without_openat2)
{
	tu_no_openat2();
	check_links_refused();
}
END_TEST

Suite *
fsutil_suite(void)
{
	Suite	*s = suite_create("fsutil");
	TCase	*tc;

	tc = tcase_create("write_atomic");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, write_atomic_replaces);
	tcase_add_test(tc, write_atomic_is_a_rename);
	tcase_add_test(tc, write_atomic_failure_cleans_up);
	tcase_add_test(tc, write_atomic_over_stale_tmp);
	tcase_add_test(tc, write_new_refuses_existing);
	tcase_add_test(tc, write_through_tmp_made_ahead);
	tcase_add_test(tc, write_inplace_into_room_kept);
	tcase_add_test(tc, write_refused_keeps_old);
	tcase_add_test(tc, write_through_no_link);
	suite_add_tcase(s, tc);

	tc = tcase_create("open");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, open_refuses_links);
	tcase_add_test(tc, open_refuses_links_without_openat2);
	suite_add_tcase(s, tc);

	tc = tcase_create("rmtree");
	tcase_add_checked_fixture(tc, setup, teardown);
	/* 3,000-deep chains on a disk shared with other work. */
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, rmtree_nested);
	tcase_add_test(tc, rmtree_enoent_is_success);
	tcase_add_test(tc, rmtree_does_not_follow_links);
	tcase_add_test(tc, rmtree_flat_nested);
	tcase_add_test(tc, rmtree_flat_deep);
	tcase_add_test(tc, rmtree_flat_wide);
	tcase_add_test(tc, rmtree_flat_passes_over_what_stays);
	tcase_add_test(tc, rmtree_flat_same_dir);
	tcase_add_test(tc, rmtree_flat_stops_when_moved_away);
	suite_add_tcase(s, tc);

	tc = tcase_create("mkdirs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, mkdir_anew_replaces);
	tcase_add_test(tc, mkdirs_nested_idempotent);
	tcase_add_test(tc, mkdirs_absolute_and_failures);
	suite_add_tcase(s, tc);

	tc = tcase_create("read");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, read_whole_and_bounded);
	tcase_add_test(tc, read_binary_and_errors);
	tcase_add_test(tc, read_refuses_links_under_dirfd);
	suite_add_tcase(s, tc);
	return s;
}
