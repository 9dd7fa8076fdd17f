/*
 * user: names, uids and "uid:gid" resolved from a passwd file, groups by
 * name or number and the supplementary groups of an account from a
 * group file, a login shell; numbers need no entry, a missing file is
 * "no such name", and a malformed line does not hide the lines after it.
 * Fixture files in a scratch directory stand in for /etc/passwd and
 * /etc/group; one test reads the system's (root is in every passwd).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sys/user.h"
#include "testutil.h"

Suite *user_suite(void);

static char		tdir_path[64];
static int		tdir = -1;
static char		passwd_path[128], group_path[128];
static struct user_files files = { passwd_path, group_path };

static void	setup(void);
static void	teardown(void);

static const char passwd_fixture[] =
    "root:x:0:0:root:/root:/bin/sh\n"
    "alice:x:1001:1001:Alice:/home/alice:/bin/bash\n"
    "this line is not an entry\n"
    "bob:x:1002:100::/home/bob:\n"
    "five:x:5:55::/:/bin/false\n";

static const char group_fixture[] =
    "root:x:0:\n"
    "wheel:x:10:alice,bob\n"
    "users:x:100:\n"
    "broken line\n"
    "docker:x:998:carol,alice\n"
    "alice:x:1001:alice\n"
    "alicia:x:2000:alicia,malice\n"
    "wheel2:x:10:alice\n";

static void
setup(void)
{
	tdir = tu_tmpdir(tdir_path, sizeof(tdir_path), "/tmp/tend-user-");
	tu_put(tdir, "passwd", passwd_fixture);
	tu_put(tdir, "group", group_fixture);
	snprintf(passwd_path, sizeof(passwd_path), "%s/passwd", tdir_path);
	snprintf(group_path, sizeof(group_path), "%s/group", tdir_path);
}

static void
teardown(void)
{
	close(tdir);
	tdir = -1;
	tu_rmtree(tdir_path);
}

START_TEST(parse_name_takes_the_entry)
{
	struct user_id	u;

	ck_assert_int_eq(user_parse(&files, "alice", &u), 0);
	ck_assert_uint_eq(u.uid, 1001);
	ck_assert_uint_eq(u.gid, 1001);
	ck_assert_str_eq(u.name, "alice");
	/* Past the malformed line. */
	ck_assert_int_eq(user_parse(&files, "five", &u), 0);
	ck_assert_uint_eq(u.uid, 5);
	ck_assert_uint_eq(u.gid, 55);
}
END_TEST

START_TEST(parse_numbers_need_no_entry)
{
	struct user_id	u;

	/* A uid with an entry takes its group and name. */
	ck_assert_int_eq(user_parse(&files, "1002", &u), 0);
	ck_assert_uint_eq(u.gid, 100);
	ck_assert_str_eq(u.name, "bob");
	/* Without one: gid = uid, no name (so no supplementary groups). */
	ck_assert_int_eq(user_parse(&files, "4242", &u), 0);
	ck_assert_uint_eq(u.uid, 4242);
	ck_assert_uint_eq(u.gid, 4242);
	ck_assert_str_eq(u.name, "");
	/* uid:gid is taken as it is, even where an entry exists. */
	ck_assert_int_eq(user_parse(&files, "5:6", &u), 0);
	ck_assert_uint_eq(u.uid, 5);
	ck_assert_uint_eq(u.gid, 6);
	ck_assert_str_eq(u.name, "");
	ck_assert_int_eq(user_by_uid(&files, 1001, &u), 0);
	ck_assert_str_eq(u.name, "alice");
}
END_TEST

START_TEST(parse_refuses)
{
	static const char *const bad[] = { "", "1:", ":1", "1:x", "x:1",
	    "1:2:3", "4294967295", "0:4294967295", "-1", "+1", " 1" };
	struct user_id	u;
	size_t		i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		ck_assert_msg(user_parse(&files, bad[i], &u) == -1, "%s",
		    bad[i]);
		/* A string that is not a number is a name: not found. */
		ck_assert_msg(errno == EINVAL || errno == ENOENT, "%s: %d",
		    bad[i], errno);
	}
	errno = 0;
	ck_assert_int_eq(user_parse(&files, "nosuch", &u), -1);
	ck_assert_int_eq(errno, ENOENT);
	/* A prefix of a name is not that name. */
	ck_assert_int_eq(user_parse(&files, "ali", &u), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(user_parse(&files, "", &u), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(user_by_uid(&files, (uid_t)-1, &u), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

START_TEST(no_files_means_no_names)
{
	struct user_files	none = { "/nonexistent/passwd",
	    "/nonexistent/group" };
	struct user_id		u;
	gid_t			g[4];

	ck_assert_int_eq(user_parse(&none, "root", &u), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(user_parse(&none, "0", &u), 0);
	ck_assert_uint_eq(u.gid, 0);
	ck_assert_str_eq(u.name, "");
	ck_assert_int_eq(user_group(&none, "wheel", &g[0]), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(user_group(&none, "7", &g[0]), 0);
	ck_assert_uint_eq(g[0], 7);
	ck_assert_int_eq(user_groups(&none, "alice", 1001, g, 4), 1);
	ck_assert_uint_eq(g[0], 1001);
}
END_TEST

START_TEST(long_name_refused)
{
	char		line[USER_NAME_MAX + 64], name[USER_NAME_MAX + 1];
	struct user_id	u;

	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	snprintf(line, sizeof(line), "%s:x:7:7::/:/bin/sh\n", name);
	tu_put(tdir, "passwd", line);
	ck_assert_int_eq(user_parse(&files, name, &u), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
}
END_TEST

/*
 * Files whose last line has no newline read as if it had one: the last
 * field whole (musl's fget*ent cut a character off such a line).
 */
START_TEST(last_line_without_newline)
{
	struct user_id	u;
	gid_t		list[8];
	char		sh[64];
	int		n;

	tu_put(tdir, "passwd", "root:x:0:0:root:/root:/bin/sh\n"
	    "bob:x:1002:100::/home/bob:");
	tu_put(tdir, "group", "users:x:100:\nstaff:x:50:bob,alice");
	ck_assert_int_eq(user_parse(&files, "bob", &u), 0);
	ck_assert_uint_eq(u.uid, 1002);
	ck_assert_int_eq(user_groups(&files, "alice", 7, list, 8), 2);
	ck_assert_uint_eq(list[1], 50);
	tu_put(tdir, "passwd", "five:x:5:55::/:/bin/sh");
	ck_assert_int_eq(user_shell(&files, 5, sh, sizeof(sh)), 0);
	ck_assert_str_eq(sh, "/bin/sh");
	/* An empty file is no entry, not a line. */
	tu_put(tdir, "passwd", "");
	ck_assert_int_eq(user_parse(&files, "bob", &u), -1);
	n = user_groups(&files, "nobody-here", 9, list, 8);
	ck_assert_int_eq(n, 1);
}
END_TEST

START_TEST(group_by_name_or_number)
{
	gid_t	g = 0;

	ck_assert_int_eq(user_group(&files, "docker", &g), 0);
	ck_assert_uint_eq(g, 998);
	/* Past the malformed line, and the first of two with one name. */
	ck_assert_int_eq(user_group(&files, "wheel", &g), 0);
	ck_assert_uint_eq(g, 10);
	ck_assert_int_eq(user_group(&files, "31337", &g), 0);
	ck_assert_uint_eq(g, 31337);
	ck_assert_int_eq(user_group(&files, "nosuch", &g), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(user_group(&files, "", &g), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(user_group(&files, "4294967295", &g), -1);
}
END_TEST

START_TEST(groups_as_initgroups)
{
	gid_t	g[8];

	/*
	 * The primary group first, then each group naming alice, in file
	 * order, each gid once (1001 lists her, wheel2 repeats gid 10);
	 * alicia's "malice" is not alice.
	 */
	ck_assert_int_eq(user_groups(&files, "alice", 1001, g, 8), 3);
	ck_assert_uint_eq(g[0], 1001);
	ck_assert_uint_eq(g[1], 10);
	ck_assert_uint_eq(g[2], 998);
	ck_assert_int_eq(user_groups(&files, "bob", 100, g, 8), 2);
	ck_assert_uint_eq(g[0], 100);
	ck_assert_uint_eq(g[1], 10);
	ck_assert_int_eq(user_groups(&files, "five", 55, g, 8), 1);
	ck_assert_uint_eq(g[0], 55);
	/* More than fit: refused, not cut short. */
	ck_assert_int_eq(user_groups(&files, "alice", 1001, g, 2), -1);
	ck_assert_int_eq(errno, ENOSPC);
	ck_assert_int_eq(user_groups(&files, "alice", 1001, g, 3), 3);
	ck_assert_int_eq(user_groups(&files, "alice", 1001, g, 0), -1);
}
END_TEST

START_TEST(shell_of_the_entry)
{
	char	sh[PATH_MAX];

	ck_assert_int_eq(user_shell(&files, 1001, sh, sizeof(sh)), 0);
	ck_assert_str_eq(sh, "/bin/bash");
	/* bob's is empty, 4242 has no entry. */
	ck_assert_int_eq(user_shell(&files, 1002, sh, sizeof(sh)), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(user_shell(&files, 4242, sh, sizeof(sh)), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(user_shell(&files, 1001, sh, 9), -1);
	ck_assert_int_eq(errno, ENAMETOOLONG);
	ck_assert_int_eq(user_shell(&files, 1001, sh, 10), 0);
}
END_TEST

START_TEST(system_files)
{
	struct user_id	u;
	gid_t		g[USER_GROUPS_MAX];

	/* NULL: /etc/passwd and /etc/group, where root is uid 0. */
	ck_assert_int_eq(user_by_uid(NULL, 0, &u), 0);
	ck_assert_str_eq(u.name, "root");
	ck_assert_int_eq(user_parse(NULL, "root", &u), 0);
	ck_assert_uint_eq(u.uid, 0);
	ck_assert_int_ge(user_groups(NULL, "root", u.gid, g, USER_GROUPS_MAX),
	    1);
	ck_assert_uint_eq(g[0], u.gid);
}
END_TEST

Suite *
user_suite(void)
{
	Suite	*s = suite_create("user");
	TCase	*tc;

	tc = tcase_create("passwd");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, parse_name_takes_the_entry);
	tcase_add_test(tc, parse_numbers_need_no_entry);
	tcase_add_test(tc, parse_refuses);
	tcase_add_test(tc, no_files_means_no_names);
	tcase_add_test(tc, long_name_refused);
	tcase_add_test(tc, shell_of_the_entry);
	tcase_add_test(tc, last_line_without_newline);
	suite_add_tcase(s, tc);

	tc = tcase_create("group");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, group_by_name_or_number);
	tcase_add_test(tc, groups_as_initgroups);
	suite_add_tcase(s, tc);

	tc = tcase_create("system");
	tcase_add_test(tc, system_files);
	suite_add_tcase(s, tc);
	return s;
}
