/*
 * tar: persist → hydrate restores a tree (files, modes, mtimes, symlinks
 * as links, empty directories); excludes leave paths out; hostile
 * archives are refused at their first bad entry with nothing written
 * outside the root; an empty payload is its own error; GNU tar's
 * archives extract and ours list with GNU tar; the children hold no fd
 * of the caller but their own.  Children are waited for directly here
 * (in the agent the reap loop does it).
 */
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/tar.h"
#include "testutil.h"

Suite *tar_suite(void);

static char	base_path[64];
static int	base = -1;	/* src/, dst/, outside/ */
static int	src = -1, dst = -1;

/* An entry of an archive built by a test. */
struct ent {
	const char	*name;
	mode_t		 type;		/* AE_IF*; 0: a hard link */
	const char	*data;		/* a file's bytes, a link's target */
};

static void	setup(void);
static void	teardown(void);
static int	blocking(int);
static size_t	drain(int, int, char *, size_t);
static int	persist(int, const char *const *, const char *, char *,
		    size_t);
static int	hydrate(int, const void *, size_t, struct tar_report *);
static int	hydrate_file(int, const char *, struct tar_report *);
static size_t	mk_tar(const struct ent *, size_t, char *, size_t);
static void	make_tree(int);
static void	check_tree(int);
static void	check_same(int, int, const char *);
static int	refused(const struct ent *, size_t, const char *);
static int	sh(const char *, ...) __attribute__((format(printf, 1, 2)));

static void
setup(void)
{
	base = tu_tmpdir(base_path, sizeof(base_path), "/tmp/tend-tar-");
	ck_assert_int_eq(mkdirat(base, "src", 0755), 0);
	ck_assert_int_eq(mkdirat(base, "dst", 0755), 0);
	ck_assert_int_eq(mkdirat(base, "outside", 0755), 0);
	tu_put(base, "outside/secret", "secret");
	src = openat(base, "src", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	dst = openat(base, "dst", O_PATH | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(src, 0);
	ck_assert_int_ge(dst, 0);
	/* A child gone early must fail a write, not kill the test. */
	signal(SIGPIPE, SIG_IGN);
}

static void
teardown(void)
{
	close(src);
	close(dst);
	close(base);
	src = dst = base = -1;
	tu_rmtree(base_path);
}

/* The test reads and writes the pipes plainly: O_NONBLOCK off. */
static int
blocking(int fd)
{
	ck_assert_int_eq(fcntl(fd, F_SETFL, 0), 0);
	return fd;
}

/* Everything from fd (closed) to out (-1: none), the first cap to buf. */
static size_t
drain(int fd, int out, char *buf, size_t cap)
{
	char	b[65536];
	size_t	got = 0;
	ssize_t	n;

	blocking(fd);
	while ((n = read(fd, b, sizeof(b))) > 0) {
		if (out != -1)
			ck_assert_int_eq(write(out, b, n), n);
		if (buf != NULL && got < cap) {
			size_t	k = (size_t)n < cap - got ? (size_t)n : cap - got;

			memcpy(buf + got, b, k);
		}
		got += n;
	}
	close(fd);
	if (buf != NULL)
		buf[got < cap ? got : cap - 1] = '\0';
	return got;
}

/* Persist rootfd into base/file: the child's wait status; errfd to err. */
static int
persist(int rootfd, const char *const *ex, const char *file, char *err,
    size_t cap)
{
	pid_t	pid;
	int	outfd, errfd, fd, status;

	fd = openat(base, file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(tar_persist_spawn(rootfd, ex, &pid, &outfd, &errfd),
	    0);
	ck_assert(fcntl(outfd, F_GETFL) & O_NONBLOCK);
	drain(outfd, fd, NULL, 0);
	close(fd);
	drain(errfd, -1, err, cap);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return status;
}

/* Hydrate rootfd from n bytes: the wait status, the report in *r. */
static int
hydrate(int rootfd, const void *d, size_t n, struct tar_report *r)
{
	char	line[TAR_ERR_MAX + 1];
	size_t	got;
	pid_t	pid;
	int	infd, errfd, status;
	ssize_t	w;

	ck_assert_int_eq(tar_hydrate_spawn(rootfd, &pid, &infd, &errfd), 0);
	blocking(infd);
	for (size_t off = 0; off < n; off += w)
		if ((w = write(infd, (const char *)d + off, n - off)) == -1) {
			ck_assert_int_eq(errno, EPIPE);	/* it stopped */
			break;
		}
	close(infd);
	got = drain(errfd, -1, line, sizeof(line));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	memset(r, 0, sizeof(*r));
	if (got > 0)
		ck_assert_int_eq(tar_report_parse(line, got, r), 0);
	return status;
}

static int
hydrate_file(int rootfd, const char *file, struct tar_report *r)
{
	size_t	 n;
	char	*d = tu_slurp(base, file, &n);
	int	 status = hydrate(rootfd, d, n, r);

	free(d);
	return status;
}

/* An archive of v (pax, as any writer could make it), into out. */
static size_t
mk_tar(const struct ent *v, size_t n, char *out, size_t cap)
{
	struct archive		*a = archive_write_new();
	struct archive_entry	*e;
	size_t			 used = 0, i, len;

	ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
	ck_assert_int_eq(archive_write_open_memory(a, out, cap, &used),
	    ARCHIVE_OK);
	for (i = 0; i < n; i++) {
		e = archive_entry_new();
		archive_entry_set_pathname(e, v[i].name);
		archive_entry_set_perm(e, 0644);
		archive_entry_set_mtime(e, 1600000000, 0);
		len = 0;
		if (v[i].type == 0) {
			archive_entry_set_filetype(e, AE_IFREG);
			archive_entry_set_hardlink(e, v[i].data);
		} else
			archive_entry_set_filetype(e, v[i].type);
		if (v[i].type == AE_IFREG)
			len = strlen(v[i].data);
		if (v[i].type == AE_IFLNK)
			archive_entry_set_symlink(e, v[i].data);
		if (v[i].type == AE_IFCHR)
			archive_entry_set_rdev(e, makedev(1, 3));
		archive_entry_set_size(e, len);
		ck_assert_int_eq(archive_write_header(a, e), ARCHIVE_OK);
		if (len > 0)
			ck_assert_int_eq(archive_write_data(a, v[i].data, len),
			    (la_ssize_t)len);
		archive_entry_free(e);
	}
	ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
	archive_write_free(a);
	return used;
}

/* A shell command, formatted: its exit status. */
static int
sh(const char *fmt, ...)
{
	char	cmd[1024];
	va_list	ap;
	int	st;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* ------------------------------------------------------------------ */
/* The tree both ways */

static void
make_tree(int d)
{
	struct timespec	ts[2];
	static char	big[200000];
	int		fd, i;

	tu_put(d, "a.txt", "alpha\n");
	ck_assert_int_eq(fchmodat(d, "a.txt", 0640, 0), 0);
	ck_assert_int_eq(mkdirat(d, "bin", 0755), 0);
	tu_put(d, "bin/run.sh", "#!/bin/sh\necho hi\n");
	ck_assert_int_eq(fchmodat(d, "bin/run.sh", 0755, 0), 0);
	ck_assert_int_eq(mkdirat(d, "empty", 0700), 0);
	ck_assert_int_eq(mkdirat(d, "deep", 0755), 0);
	ck_assert_int_eq(mkdirat(d, "deep/x", 0750), 0);
	for (i = 0; i < (int)sizeof(big); i++)
		big[i] = (char)('a' + i % 23);
	fd = openat(d, "deep/x/big", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_eq(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
	close(fd);
	ck_assert_int_eq(symlinkat("a.txt", d, "link"), 0);
	ck_assert_int_eq(symlinkat("bin", d, "dlink"), 0);
	ck_assert_int_eq(symlinkat("/nonexistent/abs", d, "deep/abs"), 0);
	static const char *const	names[] = {
		"a.txt", "bin/run.sh", "deep/x/big", "link", "deep/abs",
		"empty", "deep/x", "bin", "deep",
	};
	for (i = 0; i < (int)(sizeof(names) / sizeof(names[0])); i++) {
		ts[0].tv_sec = ts[1].tv_sec = 1500000000 + 1000 * i;
		ts[0].tv_nsec = ts[1].tv_nsec = 0;
		ck_assert_int_eq(utimensat(d, names[i], ts,
		    AT_SYMLINK_NOFOLLOW), 0);
	}
}

/* a/rel and b/rel alike (type, mode, size, mtime, bytes, link text). */
static void
check_same(int a, int b, const char *rel)
{
	struct stat	 sa, sb;
	char		 la[PATH_MAX], lb[PATH_MAX];
	ssize_t		 na, nb;

	ck_assert_msg(fstatat(a, rel, &sa, AT_SYMLINK_NOFOLLOW) == 0, "%s", rel);
	ck_assert_msg(fstatat(b, rel, &sb, AT_SYMLINK_NOFOLLOW) == 0,
	    "%s: missing after the round trip", rel);
	ck_assert_msg((sa.st_mode & S_IFMT) == (sb.st_mode & S_IFMT), "%s", rel);
	ck_assert_msg((sa.st_mode & 07777) == (sb.st_mode & 07777) ||
	    S_ISLNK(sa.st_mode), "%s: mode %o, not %o", rel,
	    sb.st_mode & 07777, sa.st_mode & 07777);
	ck_assert_msg(sa.st_mtim.tv_sec == sb.st_mtim.tv_sec,
	    "%s: mtime %lld, not %lld", rel, (long long)sb.st_mtim.tv_sec,
	    (long long)sa.st_mtim.tv_sec);
	if (S_ISLNK(sa.st_mode)) {
		na = readlinkat(a, rel, la, sizeof(la) - 1);
		nb = readlinkat(b, rel, lb, sizeof(lb) - 1);
		ck_assert(na >= 0 && na == nb);
		ck_assert_int_eq(memcmp(la, lb, na), 0);
	} else if (S_ISREG(sa.st_mode)) {
		char	*ca, *cb;
		size_t	 za, zb;

		ca = tu_slurp(a, rel, &za);
		cb = tu_slurp(b, rel, &zb);
		ck_assert_msg(za == zb && memcmp(ca, cb, za) == 0, "%s", rel);
		free(ca);
		free(cb);
	}
}

/* The tree of make_tree, whole, at d (from src). */
static void
check_tree(int d)
{
	static const char *const	names[] = {
		"a.txt", "bin", "bin/run.sh", "empty", "deep", "deep/x",
		"deep/x/big", "link", "dlink", "deep/abs",
	};
	size_t				i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		check_same(src, d, names[i]);
}

START_TEST(round_trip)
{
	struct tar_report	r;
	char			err[256];
	int			st;

	make_tree(src);
	ck_assert_int_eq(mkfifoat(src, "fifo", 0600), 0);	/* left out */
	st = persist(src, NULL, "t.tar", err, sizeof(err));
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == TAR_EXIT_OK,
	    "persist: %#x %s", st, err);
	ck_assert_str_eq(err, "");
	st = hydrate_file(dst, "t.tar", &r);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == TAR_EXIT_OK,
	    "hydrate: %#x %s", st, r.msg);
	{
		int	d = openat(base, "dst", O_RDONLY | O_DIRECTORY);

		check_tree(d);
		ck_assert(!tu_exists(d, "fifo"));
		close(d);
	}
	/* Into a tree that has the files already: replaced, same result. */
	tu_put(base, "dst/a.txt", "something else, longer than alpha");
	st = hydrate_file(dst, "t.tar", &r);
	ck_assert_int_eq(WEXITSTATUS(st), TAR_EXIT_OK);
	{
		int	d = openat(base, "dst", O_RDONLY | O_DIRECTORY);

		check_same(src, d, "a.txt");
		close(d);
	}
}
END_TEST

START_TEST(excludes)
{
	char	err[256], *names;
	int	st;

	tu_put(src, "keep", "k");
	ck_assert_int_eq(mkdirat(src, "skip", 0755), 0);
	tu_put(src, "skip/inner", "s");
	ck_assert_int_eq(mkdirat(src, "a", 0755), 0);
	ck_assert_int_eq(mkdirat(src, "a/b", 0755), 0);
	tu_put(src, "a/b/x", "x");
	tu_put(src, "a/bc", "bc");
	tu_put(src, "c", "c");
	const char *const	ex[] = { "skip", "a/b/", "./c", NULL };

	st = persist(src, ex, "t.tar", err, sizeof(err));
	ck_assert_int_eq(WEXITSTATUS(st), TAR_EXIT_OK);
	ck_assert_int_eq(sh("tar -tf %s/t.tar | sort > %s/list", base_path,
	    base_path), 0);
	names = tu_slurp(base, "list", NULL);
	ck_assert_str_eq(names, "a/\na/bc\nkeep\n");
	free(names);

	ck_assert_int_eq(tar_exclude_valid("a/b"), 0);
	ck_assert_int_eq(tar_exclude_valid("./a/"), 0);
	ck_assert_int_eq(tar_exclude_valid("a/..b"), 0);
	ck_assert_int_eq(tar_exclude_valid("..a"), 0);
	static const char *const	bad[] = {
		"/abs", "..", "../x", "a/..", "a/../b", "", "./", ".", "/",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		ck_assert_msg(tar_exclude_valid(bad[i]) == -1, "%s", bad[i]);
		ck_assert_int_eq(errno, EINVAL);
	}
}
END_TEST

/* ------------------------------------------------------------------ */
/* Hostile archives */

/* v must be refused (TAR_EXIT_BAD), its report naming why: its errno. */
static int
refused(const struct ent *v, size_t n, const char *why)
{
	static char		buf[1 << 20];
	struct tar_report	r;
	size_t			len = mk_tar(v, n, buf, sizeof(buf));
	int			st = hydrate(dst, buf, len, &r);

	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == TAR_EXIT_BAD,
	    "%s: status %#x: %s", v[n - 1].name, st, r.msg);
	ck_assert_msg(strstr(r.msg, why) != NULL, "'%s' lacks '%s'", r.msg,
	    why);
	ck_assert(!tu_exists(base, "evil"));
	ck_assert(!tu_exists(base, "outside/x"));
	ck_assert(!tu_exists(base, "outside/pwned"));
	ck_assert(!tu_exists(base, "dst/after"));
	{
		struct stat	st2;
		char		*s;

		ck_assert_int_eq(fstatat(base, "outside/secret", &st2, 0), 0);
		ck_assert_uint_eq(st2.st_nlink, 1);
		s = tu_slurp(base, "outside/secret", NULL);
		ck_assert_str_eq(s, "secret");
		free(s);
	}
	return r.err;
}

START_TEST(hostile_refused)
{
	char	abs_x[128], abs_out[128], abs_secret[128];

	snprintf(abs_x, sizeof(abs_x), "%s/outside/x", base_path);
	snprintf(abs_out, sizeof(abs_out), "%s/outside", base_path);
	snprintf(abs_secret, sizeof(abs_secret), "%s/outside/secret",
	    base_path);
	{
		const struct ent	v[] = {
			{ "first", AE_IFREG, "1" }, { "../evil", AE_IFREG, "e" },
			{ "after", AE_IFREG, "a" },
		};
		ck_assert_int_eq(refused(v, 3, "'..'"), EXDEV);
		/* What came before the bad entry stays. */
		ck_assert(tu_exists(base, "dst/first"));
	}
	{
		const struct ent	v[] = {
			{ "d/../../evil", AE_IFREG, "e" }, { "after", AE_IFREG, "" },
		};
		refused(v, 2, "'..'");
	}
	{
		const struct ent	v[] = { { abs_x, AE_IFREG, "x" } };
		ck_assert_int_eq(refused(v, 1, "absolute"), EXDEV);
	}
	{
		const struct ent	v[] = {
			{ "link", AE_IFLNK, abs_out },
			{ "link/pwned", AE_IFREG, "p" }, { "after", AE_IFREG, "" },
		};
		ck_assert_int_eq(refused(v, 3, "symlink"), ELOOP);
		ck_assert(tu_exists(base, "dst/link"));	/* as a link */
	}
	{
		const struct ent	v[] = {
			{ "rl", AE_IFLNK, "../outside" },
			{ "rl/sub/pwned", AE_IFREG, "p" },
		};
		refused(v, 2, "symlink");
		ck_assert(!tu_exists(base, "outside/sub"));
	}
	{
		const struct ent	v[] = { { "hl", 0, "../outside/secret" } };
		refused(v, 1, "hard link");
	}
	{
		const struct ent	v[] = { { "hl", 0, abs_secret } };
		refused(v, 1, "hard link");
	}
	{
		const struct ent	v[] = {
			{ "so", AE_IFLNK, abs_out }, { "hl", 0, "so/secret" },
		};
		refused(v, 2, "hard link");
	}
	ck_assert(!tu_exists(base, "dst/hl"));
	{
		const struct ent	v[] = { { "dev", AE_IFCHR, NULL } };
		ck_assert_int_eq(refused(v, 1, "device"), EPERM);
	}
	{
		const struct ent	v[] = { { "fifo", AE_IFIFO, NULL } };
		refused(v, 1, "FIFO");
	}
	ck_assert(!tu_exists(base, "dst/dev"));
	ck_assert(!tu_exists(base, "dst/fifo"));
}
END_TEST

START_TEST(links_never_written_through)
{
	static char		buf[1 << 16];
	struct tar_report	r;
	struct stat		st;
	char			abs_secret[128], *s;
	size_t			len;
	int			status;

	/* A link, then a file of the same name: the link is replaced. */
	snprintf(abs_secret, sizeof(abs_secret), "%s/outside/secret",
	    base_path);
	const struct ent	v[] = {
		{ "f", AE_IFLNK, abs_secret }, { "f", AE_IFREG, "mine" },
		{ "g", AE_IFREG, "g" }, { "hg", 0, "g" },
	};
	len = mk_tar(v, 4, buf, sizeof(buf));
	status = hydrate(dst, buf, len, &r);
	ck_assert_msg(WEXITSTATUS(status) == TAR_EXIT_OK, "%s", r.msg);
	s = tu_slurp(base, "outside/secret", NULL);
	ck_assert_str_eq(s, "secret");
	free(s);
	ck_assert_int_eq(fstatat(base, "dst/f", &st, AT_SYMLINK_NOFOLLOW), 0);
	ck_assert(S_ISREG(st.st_mode));
	/* A hard link inside the archive is kept as one. */
	ck_assert_int_eq(fstatat(base, "dst/hg", &st, 0), 0);
	ck_assert_uint_eq(st.st_nlink, 2);
}
END_TEST

START_TEST(empty_and_garbage)
{
	static char		buf[1 << 16];
	struct tar_report	r;
	int			st;

	st = hydrate(dst, "", 0, &r);
	ck_assert_int_eq(WEXITSTATUS(st), TAR_EXIT_EMPTY);
	ck_assert_str_eq(r.msg, "Empty tar payload");
	st = hydrate(dst, "this is not a tar archive at all", 32, &r);
	ck_assert_int_eq(WEXITSTATUS(st), TAR_EXIT_BAD);
	ck_assert_ptr_nonnull(strstr(r.msg, "not a tar archive"));
	/* Only the end blocks: a valid archive of nothing. */
	memset(buf, 0, 10240);
	st = hydrate(dst, buf, 10240, &r);
	ck_assert_int_eq(WEXITSTATUS(st), TAR_EXIT_OK);
	/* Cut short in a file's data. */
	{
		static char	big[8192];
		const struct ent	v[] = { { "f", AE_IFREG, big } };
		size_t		len;

		memset(big, 'b', sizeof(big) - 1);
		len = mk_tar(v, 1, buf, sizeof(buf));
		st = hydrate(dst, buf, 512 + 1000, &r);
		ck_assert_int_eq(WEXITSTATUS(st), TAR_EXIT_BAD);
		(void)len;
	}
}
END_TEST

START_TEST(disk_full_is_io)
{
	struct tar_report	r;
	char			path[128], err[256];
	static char		big[300000];
	int			st, fd, small;

	snprintf(path, sizeof(path), "%s/small", base_path);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	if (unshare(CLONE_NEWNS) == -1 ||
	    mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1 ||
	    mount("tend-test", path, "tmpfs", 0, "size=64k") == -1) {
		TU_SKIP("no tmpfs mount here (needs root)");
		return;
	}
	memset(big, 'z', sizeof(big));
	fd = openat(src, "big", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ck_assert_int_eq(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
	close(fd);
	st = persist(src, NULL, "t.tar", err, sizeof(err));
	ck_assert_int_eq(WEXITSTATUS(st), TAR_EXIT_OK);
	small = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	st = hydrate_file(small, "t.tar", &r);
	ck_assert_msg(WEXITSTATUS(st) == TAR_EXIT_IO, "%#x %s", st, r.msg);
	ck_assert_int_eq(r.err, ENOSPC);
	close(small);
}
END_TEST

/* ------------------------------------------------------------------ */
/* GNU tar both ways */

START_TEST(gnu_tar_extracts)
{
	struct tar_report	r;
	char			longname[300];
	int			st, d;

	make_tree(src);
	/* A long name: GNU's own extension ('L' records). */
	memset(longname, 'n', 150);
	longname[150] = '\0';
	tu_put(src, longname, "long");
	ck_assert_int_eq(sh("tar --format=gnu -C %s/src -cf %s/gnu.tar .",
	    base_path, base_path), 0);
	st = hydrate_file(dst, "gnu.tar", &r);
	ck_assert_msg(WEXITSTATUS(st) == TAR_EXIT_OK, "%s", r.msg);
	d = openat(base, "dst", O_RDONLY | O_DIRECTORY);
	check_tree(d);
	check_same(src, d, longname);
	close(d);
}
END_TEST

START_TEST(persisted_lists_with_gnu_tar)
{
	char	err[256], *list;
	int	st, d;

	make_tree(src);
	st = persist(src, NULL, "t.tar", err, sizeof(err));
	ck_assert_int_eq(WEXITSTATUS(st), TAR_EXIT_OK);
	ck_assert_int_eq(sh("tar -tvf %s/t.tar > %s/list", base_path,
	    base_path), 0);
	list = tu_slurp(base, "list", NULL);
	ck_assert_ptr_nonnull(strstr(list, " a.txt\n"));
	ck_assert_ptr_nonnull(strstr(list, " link -> a.txt\n"));
	ck_assert_ptr_nonnull(strstr(list, " empty/\n"));
	ck_assert_ptr_nonnull(strstr(list, " deep/x/big\n"));
	ck_assert_ptr_nonnull(strstr(list, "-rwxr-xr-x"));
	free(list);
	/* And GNU tar extracts it to the same tree. */
	ck_assert_int_eq(mkdirat(base, "gnu", 0755), 0);
	ck_assert_int_eq(sh("tar -C %s/gnu -xpf %s/t.tar", base_path,
	    base_path), 0);
	d = openat(base, "gnu", O_RDONLY | O_DIRECTORY);
	check_tree(d);
	close(d);
}
END_TEST

/* ------------------------------------------------------------------ */
/* The children */

START_TEST(child_holds_only_its_fds)
{
	struct tar_report	 r;
	struct dirent		*de;
	DIR			*dir;
	char			 path[64];
	pid_t			 pid;
	int			 infd, errfd, extra[2], n = 0, st;

	/* An fd of ours without O_CLOEXEC: the child must still not hold it. */
	ck_assert_int_eq(pipe(extra), 0);
	ck_assert_int_eq(tar_hydrate_spawn(dst, &pid, &infd, &errfd), 0);
	/* It waits for input: its fds are settled once it reads. */
	for (int i = 0; i < 200; i++) {
		char	stat[512] = "";
		int	fd;

		snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
		if ((fd = open(path, O_RDONLY)) != -1) {
			(void)!read(fd, stat, sizeof(stat) - 1);
			close(fd);
		}
		if (strstr(stat, "pipe") != NULL)
			break;
		usleep(10000);
	}
	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	ck_assert_ptr_nonnull(dir);
	while ((de = readdir(dir)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	ck_assert_int_eq(n, 3);		/* the root, its input, its report */
	close(extra[1]);
	close(infd);
	drain(errfd, -1, r.msg, sizeof(r.msg));
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(st), TAR_EXIT_EMPTY);
	close(extra[0]);
}
END_TEST

START_TEST(persist_reader_gone)
{
	static char	big[1 << 20];
	pid_t		pid;
	int		outfd, st, fd;

	memset(big, 'q', sizeof(big));
	for (int i = 0; i < 4; i++) {
		char	name[16];

		snprintf(name, sizeof(name), "f%d", i);
		fd = openat(src, name, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		ck_assert_int_eq(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
		close(fd);
	}
	ck_assert_int_eq(tar_persist_spawn(src, NULL, &pid, &outfd, NULL), 0);
	close(outfd);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGPIPE);
}
END_TEST

START_TEST(report_parse)
{
	struct tar_report	r;

	ck_assert_int_eq(tar_report_parse("28 No space left\n", 17, &r), 0);
	ck_assert_int_eq(r.err, 28);
	ck_assert_str_eq(r.msg, "No space left");
	ck_assert_int_eq(tar_report_parse("22 x", 4, &r), 0);
	ck_assert_str_eq(r.msg, "x");
	errno = 0;
	ck_assert_int_eq(tar_report_parse("nonsense", 8, &r), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(tar_report_parse(" 22 x", 5, &r), -1);
	ck_assert_int_eq(tar_report_parse("", 0, &r), -1);
	ck_assert_int_eq(tar_report_parse("99999999999 x", 13, &r), -1);
}
END_TEST

Suite *
tar_suite(void)
{
	Suite	*s = suite_create("tar");
	TCase	*tc;

	tc = tcase_create("round_trip");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, excludes);
	tcase_add_test(tc, gnu_tar_extracts);
	tcase_add_test(tc, persisted_lists_with_gnu_tar);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, hostile_refused);
	tcase_add_test(tc, links_never_written_through);
	tcase_add_test(tc, empty_and_garbage);
	tcase_add_test(tc, disk_full_is_io);
	suite_add_tcase(s, tc);

	tc = tcase_create("children");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, child_holds_only_its_fds);
	tcase_add_test(tc, persist_reader_gone);
	tcase_add_test(tc, report_parse);
	suite_add_tcase(s, tc);
	return s;
}
