/*
 * cgroup: sizes as the CLI takes them; the fallbacks (turned off, a root
 * that is not cgroup2) with their reasons and limits refused; and, where
 * the host has a writable cgroup2 hierarchy, the real thing on it: the
 * test process in its leaf, a child born in a record's cgroup (spawn's
 * clone3), its events, signal, freeze, kill, figures and removal, and
 * the subtree gone at the stop.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sys/cgroup.h"
#include "sys/spawn.h"
#include "testutil.h"

Suite *cgroup_suite(void);

START_TEST(sizes)
{
	static const struct { const char *s; int64_t v; } ok[] = {
		{ "512", 512 }, { "1K", 1024 }, { "1k", 1024 },
		{ "256M", 256LL << 20 }, { "1G", 1LL << 30 },
		{ "2T", 2LL << 40 }, { "1.5K", 1536 }, { "1KiB", 1024 },
		{ "64MB", 64LL << 20 }
	};
	static const char *const bad[] = {
		"", "0", "-1", "M", "12X", "1KK", " 1", "1e30", "0.1"
	};
	int64_t	v;
	size_t	i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ck_assert_msg(cgroup_parse_size(ok[i].s, &v) == 0, "%s",
		    ok[i].s);
		ck_assert_int_eq(v, ok[i].v);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(cgroup_parse_size(bad[i], &v) == -1, "'%s'",
		    bad[i]);
		ck_assert_int_eq(errno, EINVAL);
	}
}
END_TEST

START_TEST(off_says_why)
{
	struct cgroup_limits	none = { 0 }, mem = { .memory = 1 << 20 };
	struct cgroup_limits	cpu = { .cpu = 0.5 };
	struct cgroup		c;

	cgroups_init(NULL, true, "unit");
	ck_assert(!cgroups_on());
	ck_assert_ptr_null(cgroups_root());
	ck_assert_ptr_nonnull(strstr(cgroups_reason(), "--no-cgroups"));
	ck_assert_uint_eq(cgroups_controllers(), 0);
	ck_assert_ptr_null(cgroups_lacks(&none));
	ck_assert_str_eq(cgroups_lacks(&mem), "memory");
	ck_assert_str_eq(cgroups_lacks(&cpu), "cpu");
	cgroup_init(&c);
	ck_assert_int_eq(cgroup_make(&c, CG_PROC, NULL), -1);
	ck_assert_int_eq(errno, EOPNOTSUPP);
	ck_assert_int_eq(c.fd, -1);

	cgroups_init("/tmp", false, "unit");
	ck_assert(!cgroups_on());
	ck_assert_ptr_nonnull(strstr(cgroups_reason(), "not in a cgroup2"));
	cgroups_init("/nonexistent-dir", false, "unit");
	ck_assert(!cgroups_on());
	ck_assert_ptr_nonnull(strstr(cgroups_reason(), "/nonexistent-dir"));
}
END_TEST

/* The line "0::PATH" of pid's /proc/PID/cgroup, into buf. */
static void
own_cgroup(pid_t pid, char *buf, size_t n)
{
	char	 path[64], line[4096];
	FILE	*f;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	buf[0] = '\0';
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(buf, n, "%s", line + 3);
		}
	fclose(f);
}

static bool
wait_events(struct cgroup *c, bool populated, bool frozen)
{
	struct timespec	ts = { 0, 5 * 1000 * 1000 };
	int		i;

	for (i = 0; i < 400; i++) {
		ck_assert_int_eq(cgroup_events(c), 0);
		if (c->populated == populated && c->frozen == frozen)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

START_TEST(real_hierarchy)
{
	char			 boot[64], before[4096], now[4096], path[4096];
	char			 root[2048];
	char *const		 argv[] = { "sleep", "30", NULL };
	char *const		 envp[] = { "PATH=/bin:/usr/bin", NULL };
	struct spawn_opts	 so;
	struct cgroup		 c;
	struct cgroup_usage	 u;
	struct stat		 sb;
	bool			 failed;
	pid_t			 pid;
	int			 status;

	snprintf(boot, sizeof(boot), "unit%d", (int)getpid());
	own_cgroup(getpid(), before, sizeof(before));
	cgroups_init(NULL, false, boot);
	if (!cgroups_on()) {
		TU_SKIP("no writable cgroup2 hierarchy: %s", cgroups_reason());
		return;
	}
	snprintf(root, sizeof(root), "%s", cgroups_root());
	ck_assert_int_eq(stat(root, &sb), 0);
	/* The test process is in the subtree's leaf now. */
	own_cgroup(getpid(), now, sizeof(now));
	ck_assert_ptr_nonnull(strstr(now, "/agent"));

	cgroup_init(&c);
	ck_assert_int_eq(cgroup_make(&c, CG_PROC, NULL), 0);
	ck_assert_int_ge(c.fd, 0);
	memset(&so, 0, sizeof(so));
	so.argv = argv;
	so.envp = envp;
	so.fd[0] = so.fd[1] = so.fd[2] = -1;
	so.setsid = true;
	so.in_cgroup = true;
	so.cgroup_fd = c.fd;
	ck_assert_int_gt(pid = spawn_start(&so, &failed), 0);
	/* Born inside: its cgroup is the record's. */
	own_cgroup(pid, now, sizeof(now));
	cgroup_path(&c, path, sizeof(path));
	ck_assert_str_eq(now, path);
	ck_assert_ptr_nonnull(strstr(path, "/procs/"));
	ck_assert(wait_events(&c, true, false));

	/* Frozen, then thawed. */
	ck_assert_int_eq(cgroup_freeze(&c, true), 0);
	ck_assert(wait_events(&c, true, true));
	ck_assert_int_eq(cgroup_freeze(&c, false), 0);
	ck_assert(wait_events(&c, true, false));

	cgroup_usage(&c, &u);
	ck_assert_int_ge(u.cpu_usec, 0);
	/* Removal refused while a member is left: the module keeps it. */
	ck_assert_int_eq(cgroup_signal(&c, SIGTERM), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	ck_assert(wait_events(&c, false, false));

	/* KILL reaches a member that left the group and the session. */
	ck_assert_int_gt(pid = spawn_start(&so, &failed), 0);
	ck_assert(wait_events(&c, true, false));
	ck_assert_int_eq(cgroup_kill(&c), 0);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	ck_assert(wait_events(&c, false, false));
	ck_assert_int_eq(cgroup_remove(&c), 0);
	ck_assert_int_eq(c.fd, -1);
	snprintf(now, sizeof(now), "%s/procs/%u", root, c.n);
	ck_assert_int_eq(stat(now, &sb), -1);

	cgroups_stop();
	ck_assert(!cgroups_on());
	ck_assert_int_eq(stat(root, &sb), -1);
	own_cgroup(getpid(), now, sizeof(now));
	ck_assert_str_eq(now, before);
}
END_TEST

Suite *
cgroup_suite(void)
{
	Suite	*s = suite_create("cgroup");
	TCase	*tc = tcase_create("cgroup");

	tcase_add_test(tc, sizes);
	tcase_add_test(tc, off_says_why);
	tcase_add_test(tc, real_hierarchy);
	suite_add_tcase(s, tc);
	return s;
}
