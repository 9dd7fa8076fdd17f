/*
 * boot: IDs, the boot directory and boot.json, and what a new boot does
 * to the boots before it: records left running become "lost", and only
 * the newest few boots are kept.  A boot.json that cannot be written
 * leaves nothing open (the agent retries), and links planted in the state
 * dir are never written through.
 */
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <linux/filter.h>
#include <linux/seccomp.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/fsutil.h"
#include "store/boot.h"
#include "testutil.h"

Suite *boot_suite(void);

#define CUR	"cccccccccccccccccccccccccccccccc"
#define OLD1	"11111111111111111111111111111111"	/* newest earlier */
#define OLD2	"22222222222222222222222222222222"
#define OLD3	"33333333333333333333333333333333"
#define NOJSON	"44444444444444444444444444444444"	/* no boot.json */

static char	state_path[64];
static int	statefd = -1;

static void	setup(void);
static void	teardown(void);
static void	fake_boot(const char *, const char *);
static void	fake_rec(const char *, const char *, const char *);
static cJSON	*status(const char *, const char *);
static const char *str(cJSON *, const char *);
static void	assert_lost(const char *, const char *);

static void
setup(void)
{
	statefd = tu_tmpdir(state_path, sizeof(state_path), "/tmp/tend-boot-");
}

static void
teardown(void)
{
	close(statefd);
	statefd = -1;
	tu_rmtree(state_path);
}

/* An earlier boot as an agent leaves it; started NULL: no boot.json. */
static void
fake_boot(const char *id, const char *started)
{
	char	path[128], json[256];

	snprintf(path, sizeof(path), "boots/%s/procs", id);
	ck_assert_int_eq(fsutil_mkdirs(statefd, path), 0);
	if (started == NULL)
		return;
	snprintf(path, sizeof(path), "boots/%s/boot.json", id);
	snprintf(json, sizeof(json), "{\"boot_id\":\"%s\",\"started_at\":\"%s\","
	    "\"pid\":1}", id, started);
	tu_put(statefd, path, json);
}

/* A record of boot; st NULL: the directory without a status.json. */
static void
fake_rec(const char *boot, const char *rec, const char *st)
{
	char	path[160];

	snprintf(path, sizeof(path), "boots/%s/procs/%s", boot, rec);
	ck_assert_int_eq(fsutil_mkdirs(statefd, path), 0);
	snprintf(path, sizeof(path), "boots/%s/procs/%s/stdout", boot, rec);
	tu_put(statefd, path, "output stays\n");
	if (st == NULL)
		return;
	snprintf(path, sizeof(path), "boots/%s/procs/%s/status.json", boot, rec);
	tu_put(statefd, path, st);
}

static cJSON *
status(const char *boot, const char *rec)
{
	char	path[160];

	snprintf(path, sizeof(path), "boots/%s/procs/%s/status.json", boot, rec);
	return tu_json(statefd, path);
}

static const char *
str(cJSON *j, const char *key)
{
	cJSON	*v = cJSON_GetObjectItemCaseSensitive(j, key);

	ck_assert_msg(cJSON_IsString(v), "%s: not a string", key);
	return v->valuestring;
}

/* state "error", error.code "lost", an endedAt; the rest as it was. */
static void
assert_lost(const char *boot, const char *rec)
{
	cJSON	*j, *e;

	j = status(boot, rec);
	ck_assert_str_eq(str(j, "state"), "error");
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	ck_assert(cJSON_IsObject(e));
	ck_assert_str_eq(str(e, "code"), "lost");
	ck_assert_ptr_nonnull(strstr(str(e, "message"), boot));
	ck_assert_uint_eq(strlen(str(j, "endedAt")), 24);
	ck_assert_int_eq(str(j, "endedAt")[23], 'Z');
	ck_assert_str_eq(str(j, "id"), rec);
	cJSON_Delete(j);
}

/* ------------------------------------------------------------------ */

START_TEST(new_id_is_lowercase_hex)
{
	char	a[BOOT_ID_LEN + 1], b[BOOT_ID_LEN + 1];
	size_t	i;

	memset(a, 'X', sizeof(a));
	ck_assert_int_eq(boot_new_id(a), 0);
	ck_assert_uint_eq(strlen(a), BOOT_ID_LEN);
	for (i = 0; i < BOOT_ID_LEN; i++)
		ck_assert_msg(strchr("0123456789abcdef", a[i]) != NULL,
		    "%s: not lowercase hex", a);
	ck_assert(boot_id_valid(a));
	ck_assert_int_eq(boot_new_id(b), 0);
	ck_assert_str_ne(a, b);
}
END_TEST

/*
 * Two boot IDs made in a child under a seccomp filter that takes the
 * kernel's random bytes away: GRND_INSECURE refused as an old kernel
 * does (EINVAL), or getrandom and every open refused (no getrandom, no
 * /dev).  The child writes them to a pipe.
 */
enum { OLD_KERNEL, NO_RANDOM };

static void
ids_filtered(int how, char ids[2][BOOT_ID_LEN + 1])
{
	struct sock_filter	old[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrandom, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, args[2])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, GRND_INSECURE, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EINVAL),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_filter	none[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
		    offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getrandom, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_open, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOENT),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog	prog;
	char			buf[2 * (BOOT_ID_LEN + 1)];
	int			p[2], st;
	pid_t			pid;

	if (how == OLD_KERNEL)
		prog = (struct sock_fprog){ sizeof(old) / sizeof(old[0]), old };
	else
		prog = (struct sock_fprog){ sizeof(none) / sizeof(none[0]),
		    none };
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_ne(pid = fork(), -1);
	if (pid == 0) {
		close(p[0]);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) == -1)
			_exit(2);
		/* The filter does what it says. */
		errno = 0;
		if (how == OLD_KERNEL ? getrandom(buf, 1, GRND_INSECURE) != -1 ||
		    errno != EINVAL : getrandom(buf, 1, GRND_NONBLOCK) != -1 ||
		    errno != ENOSYS || open("/dev/urandom", O_RDONLY) != -1)
			_exit(5);
		if (boot_new_id(buf) == -1 ||
		    boot_new_id(buf + BOOT_ID_LEN + 1) == -1)
			_exit(3);
		_exit(write(p[1], buf, sizeof(buf)) == (ssize_t)sizeof(buf) ?
		    0 : 4);
	}
	close(p[1]);
	ck_assert_int_eq(read(p[0], buf, sizeof(buf)), sizeof(buf));
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_int_eq(st, 0);
	memcpy(ids[0], buf, BOOT_ID_LEN + 1);
	memcpy(ids[1], buf + BOOT_ID_LEN + 1, BOOT_ID_LEN + 1);
}

/* Without GRND_INSECURE (before Linux 5.6) an ID still comes. */
START_TEST(new_id_on_an_old_kernel)
{
	char	ids[2][BOOT_ID_LEN + 1];

	ids_filtered(OLD_KERNEL, ids);
	ck_assert(boot_id_valid(ids[0]));
	ck_assert(boot_id_valid(ids[1]));
	ck_assert_str_ne(ids[0], ids[1]);
}
END_TEST

/* With no random bytes from the kernel at all, unique IDs still. */
START_TEST(new_id_without_random_bytes)
{
	char	a[2][BOOT_ID_LEN + 1], b[2][BOOT_ID_LEN + 1];

	ids_filtered(NO_RANDOM, a);
	ids_filtered(NO_RANDOM, b);
	ck_assert(boot_id_valid(a[0]));
	ck_assert(boot_id_valid(a[1]));
	ck_assert_str_ne(a[0], a[1]);
	ck_assert_str_ne(a[0], b[0]);
	ck_assert_str_ne(a[1], b[1]);
}
END_TEST

START_TEST(id_valid_vectors)
{
	static const char *const good[] = {
		"0123456789abcdef0123456789abcdef",
		"00000000000000000000000000000000",
		"ffffffffffffffffffffffffffffffff",
	};
	static const char *const bad[] = {
		"",
		"0123456789abcdef0123456789abcde",	/* 31 */
		"0123456789abcdef0123456789abcdef0",	/* 33 */
		"0123456789ABCDEF0123456789abcdef",	/* upper case */
		"0123456789abcdef0123456789abcdeg",
		"0123456789abcdef 123456789abcdef",
		"../../../../../../../../../../etc",
		"0123456789abcdef0123456789abcde/",
		"-123456789abcdef0123456789abcdef",
	};
	size_t	i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(boot_id_valid(good[i]), "%s refused", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!boot_id_valid(bad[i]), "%s accepted", bad[i]);
}
END_TEST

START_TEST(create_makes_dirs_and_json)
{
	struct stat	 a, b;
	cJSON		*j, *pid;
	const char	*t;
	int		 procsfd = -1;

	ck_assert_int_eq(boot_create(statefd, CUR, &procsfd), 0);
	ck_assert_int_ge(procsfd, 0);
	ck_assert_int_eq(fstatat(statefd, "boots/" CUR "/procs", &a, 0), 0);
	ck_assert(S_ISDIR(a.st_mode));
	ck_assert_int_eq(fstat(procsfd, &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	ck_assert_uint_eq(a.st_dev, b.st_dev);
	ck_assert(!tu_exists(statefd, "boots/" CUR "/boot.json.tmp"));

	j = tu_json(statefd, "boots/" CUR "/boot.json");
	ck_assert_str_eq(str(j, "boot_id"), CUR);
	t = str(j, "started_at");
	/* RFC 3339 UTC with milliseconds, this year or later. */
	ck_assert_uint_eq(strlen(t), 24);
	ck_assert_int_eq(t[4], '-');
	ck_assert_int_eq(t[10], 'T');
	ck_assert_int_eq(t[19], '.');
	ck_assert_int_eq(t[23], 'Z');
	ck_assert_int_ge(atoi(t), 2024);
	ck_assert_uint_gt(strlen(str(j, "version")), 0);
	pid = cJSON_GetObjectItemCaseSensitive(j, "pid");
	ck_assert(cJSON_IsNumber(pid));
	ck_assert_int_eq(pid->valueint, getpid());
	cJSON_Delete(j);

	/* The procs fd is usable for records. */
	ck_assert_int_eq(mkdirat(procsfd, "rec", 0700), 0);
	ck_assert(tu_exists(statefd, "boots/" CUR "/procs/rec"));
	close(procsfd);
}
END_TEST

START_TEST(create_fails_cleanly)
{
	int	procsfd = -1;

	/* "boots" is a file: nothing can be created beneath it. */
	tu_put(statefd, "boots", "not a directory");
	ck_assert_int_eq(boot_create(statefd, CUR, &procsfd), -1);
	ck_assert_int_eq(errno, ENOTDIR);
}
END_TEST

START_TEST(create_retries_after_refusal)
{
	int	procsfd = 7;

	/* boot.json's temp cannot be made: the write is refused. */
	ck_assert_int_eq(fsutil_mkdirs(statefd, "boots/" CUR "/boot.json.tmp"),
	    0);
	errno = 0;
	ck_assert_int_eq(boot_create(statefd, CUR, &procsfd), -1);
	ck_assert_int_eq(errno, EEXIST);
	ck_assert_int_eq(procsfd, -1);
	ck_assert(!tu_exists(statefd, "boots/" CUR "/boot.json"));
	/* Called again once the state dir takes it. */
	ck_assert_int_eq(unlinkat(statefd, "boots/" CUR "/boot.json.tmp",
	    AT_REMOVEDIR), 0);
	ck_assert_int_eq(boot_create(statefd, CUR, &procsfd), 0);
	ck_assert_int_ge(procsfd, 0);
	ck_assert(tu_exists(statefd, "boots/" CUR "/boot.json"));
	close(procsfd);

	/* A link on the way is refused, not followed. */
	ck_assert_int_eq(fsutil_mkdirs(statefd, "elsewhere"), 0);
	ck_assert_int_eq(symlinkat("../elsewhere", statefd, "boots/" OLD1), 0);
	ck_assert_int_eq(boot_create(statefd, OLD1, &procsfd), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert(!tu_exists(statefd, "elsewhere/procs"));
}
END_TEST

START_TEST(scan_writes_through_no_link)
{
	cJSON	*j;
	char	*v;

	ck_assert_int_eq(fsutil_mkdirs(statefd, "outside/x"), 0);
	tu_put(statefd, "outside/x/status.json", "{\"state\":\"running\"}");
	tu_put(statefd, "victim", "precious");
	fake_boot(OLD1, "2021-01-01T00:00:00.000Z");
	/* A record that is a link; a record whose temp is one. */
	ck_assert_int_eq(symlinkat("../../../outside", statefd,
	    "boots/" OLD1 "/procs/evil"), 0);
	fake_rec(OLD1, "run", "{\"id\":\"run\",\"state\":\"running\"}");
	ck_assert_int_eq(symlinkat("../../../../victim", statefd,
	    "boots/" OLD1 "/procs/run/status.json.tmp"), 0);
	/* A boot whose procs directory is a link. */
	ck_assert_int_eq(fsutil_mkdirs(statefd, "boots/" OLD2), 0);
	tu_put(statefd, "boots/" OLD2 "/boot.json",
	    "{\"started_at\":\"2020-01-01T00:00:00.000Z\"}");
	ck_assert_int_eq(symlinkat("../../outside", statefd,
	    "boots/" OLD2 "/procs"), 0);

	boot_scan(statefd, CUR, 3);
	ck_assert(!tu_exists(statefd, "outside/status.json"));
	j = tu_json(statefd, "outside/x/status.json");
	ck_assert_str_eq(str(j, "state"), "running");
	cJSON_Delete(j);
	v = tu_slurp(statefd, "victim", NULL);
	ck_assert_str_eq(v, "precious");
	free(v);
	assert_lost(OLD1, "run");
	errno = 0;
	ck_assert_int_eq(boot_open_procs(statefd, OLD2), -1);
	ck_assert_int_eq(errno, ELOOP);
}
END_TEST

START_TEST(scan_marks_lost)
{
	char	*before, *after;
	cJSON	*j, *pid;
	int	 procsfd;

	ck_assert_int_eq(boot_create(statefd, CUR, &procsfd), 0);
	close(procsfd);
	/* The current boot's running record is alive: never touched. */
	fake_rec(CUR, "live", "{\"id\":\"live\",\"state\":\"running\"}");

	fake_boot(OLD1, "2021-01-01T00:00:00.000Z");
	fake_rec(OLD1, "run", "{\"id\":\"run\",\"pid\":123,\"state\":\"running\","
	    "\"bootId\":\"" OLD1 "\",\"tags\":{\"k\":\"v\"}}");
	fake_rec(OLD1, "done", "{\"id\":\"done\",\"state\":\"exited\","
	    "\"exit\":{\"code\":3,\"signal\":null,\"timedOut\":false},"
	    "\"endedAt\":\"2021-01-01T00:00:01.000Z\"}");
	fake_rec(OLD1, "nostatus", NULL);
	fake_rec(OLD1, "frometa", NULL);
	tu_put(statefd, "boots/" OLD1 "/procs/frometa/meta.json",
	    "{\"argv\":[\"sleep\",\"9\"],\"cwd\":\"/w\",\"env\":[\"SECRET\"],"
	    "\"created_at\":\"2021-01-01T00:00:00.500Z\",\"tags\":{\"a\":\"b\"},"
	    "\"bootId\":\"" OLD1 "\"}");
	fake_rec(OLD1, "garbage", "{\"id\":\"garb");
	before = tu_slurp(statefd, "boots/" OLD1 "/procs/done/status.json",
	    NULL);

	boot_scan(statefd, CUR, 3);

	assert_lost(OLD1, "run");
	j = status(OLD1, "run");
	pid = cJSON_GetObjectItemCaseSensitive(j, "pid");
	ck_assert(cJSON_IsNumber(pid));
	ck_assert_int_eq(pid->valueint, 123);
	ck_assert_str_eq(str(j, "bootId"), OLD1);
	ck_assert(cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j, "tags")));
	/* Byte counts come from the files, which outlived the last status. */
	ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(j, "stdoutBytes")->valueint,
	    13);
	cJSON_Delete(j);

	assert_lost(OLD1, "nostatus");
	j = status(OLD1, "nostatus");
	ck_assert_str_eq(str(j, "bootId"), OLD1);
	cJSON_Delete(j);
	assert_lost(OLD1, "garbage");

	/* A record that never got a status is described by its meta.json. */
	assert_lost(OLD1, "frometa");
	j = status(OLD1, "frometa");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j,
	    "command")), 2);
	ck_assert_str_eq(str(j, "cwd"), "/w");
	ck_assert_str_eq(str(j, "startedAt"), "2021-01-01T00:00:00.500Z");
	ck_assert_str_eq(str(cJSON_GetObjectItemCaseSensitive(j, "tags"), "a"),
	    "b");
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(j, "env"));
	cJSON_Delete(j);

	after = tu_slurp(statefd, "boots/" OLD1 "/procs/done/status.json",
	    NULL);
	ck_assert_str_eq(after, before);
	free(after);
	free(before);

	/* Output files are kept; no temporary is left behind. */
	ck_assert(tu_exists(statefd, "boots/" OLD1 "/procs/run/stdout"));
	ck_assert(!tu_exists(statefd,
	    "boots/" OLD1 "/procs/run/status.json.tmp"));

	j = status(CUR, "live");
	ck_assert_str_eq(str(j, "state"), "running");
	cJSON_Delete(j);
}
END_TEST

START_TEST(scan_marks_lost_once)
{
	struct timespec	 ms = { 0, 20 * 1000 * 1000 };
	char		*first, *second;
	int		 procsfd;

	ck_assert_int_eq(boot_create(statefd, CUR, &procsfd), 0);
	close(procsfd);
	fake_boot(OLD1, "2021-01-01T00:00:00.000Z");
	fake_rec(OLD1, "run", "{\"id\":\"run\",\"state\":\"running\"}");
	boot_scan(statefd, CUR, 3);
	first = tu_slurp(statefd, "boots/" OLD1 "/procs/run/status.json",
	    NULL);
	nanosleep(&ms, NULL);
	/* A later agent (another current boot) sees it already lost. */
	boot_scan(statefd, "dddddddddddddddddddddddddddddddd", 5);
	second = tu_slurp(statefd, "boots/" OLD1 "/procs/run/status.json",
	    NULL);
	ck_assert_str_eq(first, second);
	free(first);
	free(second);
}
END_TEST

START_TEST(scan_keeps_newest)
{
	int	procsfd;

	ck_assert_int_eq(boot_create(statefd, CUR, &procsfd), 0);
	close(procsfd);
	/* Directory order is not age order: the newest is in the middle. */
	fake_boot(OLD2, "2020-06-01T00:00:00.000Z");
	fake_boot(OLD1, "2020-06-01T00:00:00.001Z");
	fake_boot(OLD3, "2019-12-31T23:59:59.999Z");
	fake_boot(NOJSON, NULL);
	fake_rec(OLD1, "run", "{\"id\":\"run\",\"state\":\"running\"}");
	fake_rec(OLD2, "run", "{\"id\":\"run\",\"state\":\"running\"}");
	/* Not a boot: left alone. */
	ck_assert_int_eq(fsutil_mkdirs(statefd, "boots/not-a-boot"), 0);

	boot_scan(statefd, CUR, 2);

	ck_assert(tu_exists(statefd, "boots/" CUR "/procs"));
	ck_assert(tu_exists(statefd, "boots/" CUR "/boot.json"));
	ck_assert(tu_exists(statefd, "boots/" OLD1));
	assert_lost(OLD1, "run");
	ck_assert(!tu_exists(statefd, "boots/" OLD2));
	ck_assert(!tu_exists(statefd, "boots/" OLD3));
	ck_assert(!tu_exists(statefd, "boots/" NOJSON));
	ck_assert(tu_exists(statefd, "boots/not-a-boot"));
}
END_TEST

START_TEST(scan_keep_one_keeps_only_current)
{
	int	procsfd;

	ck_assert_int_eq(boot_create(statefd, CUR, &procsfd), 0);
	close(procsfd);
	fake_boot(OLD1, "2021-01-01T00:00:00.000Z");
	fake_boot(OLD2, "2020-01-01T00:00:00.000Z");
	boot_scan(statefd, CUR, 1);
	ck_assert(!tu_exists(statefd, "boots/" OLD1));
	ck_assert(!tu_exists(statefd, "boots/" OLD2));
	ck_assert(tu_exists(statefd, "boots/" CUR "/procs"));

	/* Nothing to do, and no "boots" at all, are both fine. */
	boot_scan(statefd, CUR, 3);
	ck_assert(tu_exists(statefd, "boots/" CUR "/procs"));
	ck_assert_int_eq(fsutil_rmtree(statefd, "boots"), 0);
	boot_scan(statefd, CUR, 3);
}
END_TEST

START_TEST(open_procs)
{
	struct stat	a, b;
	int		fd, procsfd;

	ck_assert_int_eq(boot_create(statefd, CUR, &procsfd), 0);
	fd = boot_open_procs(statefd, CUR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &a), 0);
	ck_assert_int_eq(fstat(procsfd, &b), 0);
	ck_assert_uint_eq(a.st_ino, b.st_ino);
	close(fd);
	close(procsfd);

	fake_boot(OLD1, "2021-01-01T00:00:00.000Z");
	fd = boot_open_procs(statefd, OLD1);
	ck_assert_int_ge(fd, 0);
	close(fd);

	errno = 0;
	ck_assert_int_eq(boot_open_procs(statefd, OLD2), -1);
	ck_assert_int_eq(errno, ENOENT);
	/*
	 * An ID that is not one never reaches the file system: "boots/../procs"
	 * exists, and must not be opened.
	 */
	ck_assert_int_eq(fsutil_mkdirs(statefd, "procs"), 0);
	errno = 0;
	ck_assert_int_eq(boot_open_procs(statefd, ".."), -1);
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_int_eq(boot_open_procs(statefd, "CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC"),
	    -1);
	ck_assert_int_eq(errno, ENOENT);

	/* A removed boot is gone. */
	boot_scan(statefd, CUR, 1);
	errno = 0;
	ck_assert_int_eq(boot_open_procs(statefd, OLD1), -1);
	ck_assert_int_eq(errno, ENOENT);
}
END_TEST

Suite *
boot_suite(void)
{
	Suite	*s = suite_create("boot");
	TCase	*tc;

	tc = tcase_create("id");
	tcase_add_test(tc, new_id_is_lowercase_hex);
	tcase_add_test(tc, new_id_on_an_old_kernel);
	tcase_add_test(tc, new_id_without_random_bytes);
	tcase_add_test(tc, id_valid_vectors);
	suite_add_tcase(s, tc);

	tc = tcase_create("create");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, create_makes_dirs_and_json);
	tcase_add_test(tc, create_fails_cleanly);
	tcase_add_test(tc, create_retries_after_refusal);
	tcase_add_test(tc, open_procs);
	suite_add_tcase(s, tc);

	tc = tcase_create("scan");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, scan_marks_lost);
	tcase_add_test(tc, scan_marks_lost_once);
	tcase_add_test(tc, scan_keeps_newest);
	tcase_add_test(tc, scan_keep_one_keeps_only_current);
	tcase_add_test(tc, scan_writes_through_no_link);
	suite_add_tcase(s, tc);
	return s;
}
