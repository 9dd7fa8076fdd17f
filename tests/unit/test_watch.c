/*
 * watch: the events a directory's changes make, as watch.h lists them;
 * tend's own atomic writes are one create or write of the name; other
 * programs' renames are renames; recursive watches follow new and moved
 * directories; the ring drops its oldest and says so to a reader behind
 * it; the kernel's queue overflowing and the directory limit are a
 * truncated event, never a silent gap; watches are shared and confined.
 */
#include <sys/stat.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "base/tunables.h"
#include "core/files.h"
#include "core/upload.h"
#include "core/watch.h"
#include "testutil.h"

Suite *watch_suite(void);

static char			base_path[64];
static int			base = -1;
static struct files_root	root;
static struct ev_loop		*loop;
static struct watchtab		*tab;

struct reader {
	struct watch_sub	 sub;
	struct watch		*w;
	uint64_t		 cursor;
	int			 told;
	char			 log[64 * 1024];	/* "type path\n" each */
	bool			 gap;
};

static void	setup(void);
static void	teardown(void);
static void	reader_notify(struct watch_sub *);
static void	reader_open(struct reader *, const char *, bool);
static void	reader_drain(struct reader *);
static bool	told(void *);
static void	settle(struct reader *);
static void	put(const char *, const char *);

static void
setup(void)
{
	base = tu_tmpdir(base_path, sizeof(base_path), "/tmp/tend-watch-");
	ck_assert_int_eq(files_root_open(&root, base_path), 0);
	loop = ev_loop_new(EVFLAG_AUTO);
	ck_assert_ptr_nonnull(tab = watchtab_new(loop, &root));
}

static void
teardown(void)
{
	watchtab_free(tab);
	ev_loop_destroy(loop);
	files_root_close(&root);
	close(base);
	tu_rmtree(base_path);
}

static void
reader_notify(struct watch_sub *s)
{
	struct reader	*r = (struct reader *)s;

	r->told++;
	reader_drain(r);
}

static void
reader_open(struct reader *r, const char *rel, bool recursive)
{
	memset(r, 0, sizeof(*r));
	ck_assert_ptr_nonnull(r->w = watch_open(tab, rel, recursive));
	r->sub.notify = reader_notify;
	r->cursor = 0;
	watch_subscribe(r->w, &r->sub);
}

static void
reader_drain(struct reader *r)
{
	const struct watch_event	*e;
	size_t				 n;
	bool				 gap;

	while ((e = watch_next(r->w, &r->cursor, &gap)) != NULL) {
		r->gap |= gap;
		n = strlen(r->log);
		snprintf(r->log + n, sizeof(r->log) - n, "%s %s\n",
		    watch_type_name(e->type), e->path);
	}
}

static bool
told(void *arg)
{
	(void)arg;
	return false;
}

/* Run the loop a while: the kernel's events are read and told. */
static void
settle(struct reader *r)
{
	(void)tu_run_until(loop, told, r, 0.2);
	reader_drain(r);
}

static void
put(const char *rel, const char *s)
{
	struct upload		p;
	bool			created;

	ck_assert_int_eq(upload_begin(&p, &root, rel, UPLOAD_PARENTS,
	    UPLOAD_MODE_KEEP), 0);
	ck_assert_int_eq(upload_write(&p, s, strlen(s)), 0);
	ck_assert_int_eq(upload_commit(&p, &created), 0);
}

START_TEST(events_of_a_directory)
{
	struct reader	r;

	mkdirat(base, "d", 0755);
	reader_open(&r, "d", false);
	tu_put(base, "d/a", "x");		/* create, write (open O_TRUNC) */
	settle(&r);
	ck_assert_ptr_nonnull(strstr(r.log, "create a\n"));
	r.log[0] = '\0';
	ck_assert_int_eq(fchmodat(base, "d/a", 0640, 0), 0);
	ck_assert_int_eq(renameat(base, "d/a", base, "d/b"), 0);
	ck_assert_int_eq(unlinkat(base, "d/b", 0), 0);
	settle(&r);
	ck_assert_str_eq(r.log, "chmod a\nrename a\ncreate b\nremove b\n");
	ck_assert_int_gt(r.told, 0);
	ck_assert(!r.gap);
	watch_unsubscribe(r.w, &r.sub);
	watch_close(r.w);
}
END_TEST

/* Consecutive writes of one read are one event; a new read, a new one. */
START_TEST(writes_coalesce)
{
	struct reader	r;
	int		fd, i;

	mkdirat(base, "d", 0755);
	tu_put(base, "d/f", "");
	reader_open(&r, "d", false);
	fd = openat(base, "d/f", O_WRONLY | O_APPEND);
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(write(fd, "x", 1), 1);
	settle(&r);
	ck_assert_str_eq(r.log, "write f\n");
	ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
	settle(&r);
	ck_assert_str_eq(r.log, "write f\nwrite f\n");
	watch_unsubscribe(r.w, &r.sub);
	watch_close(r.w);
}
END_TEST

/*
 * tend's temp + rename, told as envd's write in place: a new file's
 * create then write (create alone when empty), a replaced one's write;
 * an abort: nothing.
 */
START_TEST(tend_writes_as_envd_writes)
{
	struct upload		p;
	struct reader		r;

	mkdirat(base, "d", 0755);
	reader_open(&r, "d", true);
	put("d/new", "hello");
	settle(&r);
	ck_assert_str_eq(r.log, "create new\nwrite new\n");
	put("d/new", "again");
	settle(&r);
	ck_assert_str_eq(r.log, "create new\nwrite new\nwrite new\n");
	ck_assert_int_eq(upload_begin(&p, &root, "d/gone", 0,
	    UPLOAD_MODE_KEEP), 0);
	ck_assert_int_eq(upload_write(&p, "x", 1), 0);
	upload_abort(&p);
	settle(&r);
	ck_assert_str_eq(r.log, "create new\nwrite new\nwrite new\n");
	put("d/empty", "");
	settle(&r);
	ck_assert_str_eq(r.log, "create new\nwrite new\nwrite new\n"
	    "create empty\n");
	/*
	 * Parents made on the way are creates too; the file, there before
	 * its directory's watch, is found by that directory's scan: a
	 * create.
	 */
	r.log[0] = '\0';
	put("d/x/y/z", "deep");
	settle(&r);
	ck_assert_str_eq(r.log, "create x\ncreate x/y\ncreate x/y/z\n");
	watch_unsubscribe(r.w, &r.sub);
	watch_close(r.w);
}
END_TEST

/* Another program's file with a temp-like name: reported as it is. */
START_TEST(other_renames_are_renames)
{
	struct reader	r;

	mkdirat(base, "d", 0755);
	reader_open(&r, "d", false);
	tu_put(base, "d/.f.abcdef", "");
	ck_assert_int_eq(renameat(base, "d/.f.abcdef", base, "d/f"), 0);
	settle(&r);
	ck_assert_ptr_nonnull(strstr(r.log, "create .f.abcdef\n"));
	ck_assert_ptr_nonnull(strstr(r.log, "rename .f.abcdef\ncreate f\n"));
	watch_unsubscribe(r.w, &r.sub);
	watch_close(r.w);
}
END_TEST

START_TEST(recursive_follows_directories)
{
	struct reader	r;

	mkdirat(base, "d", 0755);
	mkdirat(base, "d/old", 0755);
	mkdirat(base, "out", 0755);
	reader_open(&r, "d", true);
	ck_assert_int_eq(watch_ndirs(r.w), 2);
	tu_put(base, "d/old/f", "");
	settle(&r);
	ck_assert_ptr_nonnull(strstr(r.log, "create old/f\n"));
	r.log[0] = '\0';
	/* Moved within: its events carry the new path. */
	ck_assert_int_eq(renameat(base, "d/old", base, "d/new"), 0);
	settle(&r);
	tu_put(base, "d/new/g", "");
	settle(&r);
	ck_assert_ptr_nonnull(strstr(r.log, "rename old\ncreate new\n"));
	ck_assert_ptr_nonnull(strstr(r.log, "create new/g\n"));
	ck_assert_ptr_null(strstr(r.log, "old/g"));
	/* Moved out: no longer watched; moved in: watched, contents told. */
	r.log[0] = '\0';
	ck_assert_int_eq(renameat(base, "d/new", base, "out/new"), 0);
	settle(&r);
	ck_assert_int_eq(watch_ndirs(r.w), 1);
	tu_put(base, "out/new/h", "");
	mkdirat(base, "out/in", 0755);
	tu_put(base, "out/in/k", "");
	ck_assert_int_eq(renameat(base, "out/in", base, "d/in"), 0);
	settle(&r);
	ck_assert_ptr_null(strstr(r.log, "h\n"));
	ck_assert_ptr_nonnull(strstr(r.log, "rename new\n"));
	ck_assert_ptr_nonnull(strstr(r.log, "create in\ncreate in/k\n"));
	ck_assert_int_eq(watch_ndirs(r.w), 2);
	watch_unsubscribe(r.w, &r.sub);
	watch_close(r.w);
}
END_TEST

/*
 * A rename whose MOVED_FROM ends a read that its MOVED_TO no longer fits
 * in (1023 events of 64 bytes and one of 32: 65504 bytes, not a full
 * buffer) is still one move: the directory's subtree follows it, its
 * content is not scanned again as new.
 */
START_TEST(rename_split_across_reads)
{
	struct reader	r;
	char		name[64], to[64];
	int		i, fd;

	ck_assert_int_eq(WATCH_READ_BUF, 65536);
	mkdirat(base, "d", 0755);
	mkdirat(base, "d/a", 0755);
	tu_put(base, "d/a/f", "");
	reader_open(&r, "d", true);
	ck_assert_int_eq(watch_ndirs(r.w), 2);
	for (i = 0; i < 1023; i++) {
		/* 47 bytes: a 48-byte name, a 64-byte event. */
		snprintf(name, sizeof(name), "d/%046d", i);
		ck_assert_int_ge(fd = openat(base, name, O_CREAT | O_WRONLY,
		    0644), 0);
		close(fd);
	}
	snprintf(to, sizeof(to), "d/%046d", 9999);
	ck_assert_int_eq(renameat(base, "d/a", base, to), 0);
	settle(&r);
	snprintf(name, sizeof(name), "rename a\ncreate %046d\n", 9999);
	ck_assert_ptr_nonnull(strstr(r.log, name));
	snprintf(name, sizeof(name), "%046d/f\n", 9999);
	ck_assert_ptr_null(strstr(r.log, name));
	ck_assert_int_eq(watch_ndirs(r.w), 2);
	watch_unsubscribe(r.w, &r.sub);
	watch_close(r.w);
}
END_TEST

/* A directory made and filled before its watch was added: not silent. */
START_TEST(recursive_new_tree_not_silent)
{
	struct reader	r;

	mkdirat(base, "d", 0755);
	reader_open(&r, "d", true);
	mkdirat(base, "d/a", 0755);
	mkdirat(base, "d/a/b", 0755);
	tu_put(base, "d/a/b/c", "");
	settle(&r);
	ck_assert_ptr_nonnull(strstr(r.log, "create a\n"));
	ck_assert_ptr_nonnull(strstr(r.log, "create a/b\n"));
	ck_assert_ptr_nonnull(strstr(r.log, "create a/b/c\n"));
	ck_assert_int_eq(watch_ndirs(r.w), 3);
	watch_unsubscribe(r.w, &r.sub);
	watch_close(r.w);
}
END_TEST

/* A reader behind the ring is told of the gap and goes on. */
START_TEST(ring_drops_oldest)
{
	const struct watch_event	*e;
	struct watch			*w;
	char				 name[32];
	uint64_t			 cursor;
	bool				 gap;
	int				 i;

	mkdirat(base, "d", 0755);
	ck_assert_ptr_nonnull(w = watch_open(tab, "d", false));
	cursor = watch_head(w);
	for (i = 0; i < WATCH_RING_EVENTS + 10; i++) {
		snprintf(name, sizeof(name), "d/f%d", i);
		ck_assert_int_eq(mkdirat(base, name, 0755), 0);
		if (i % 1000 == 0)
			(void)tu_run_until(loop, told, NULL, 0.05);
	}
	(void)tu_run_until(loop, told, NULL, 0.3);
	ck_assert_uint_ge(watch_head(w), WATCH_RING_EVENTS + 10);
	ck_assert_ptr_nonnull(e = watch_next(w, &cursor, &gap));
	ck_assert(gap);
	ck_assert_uint_gt(e->seq, 0);
	ck_assert_ptr_nonnull(e = watch_next(w, &cursor, &gap));
	ck_assert(!gap);
	watch_close(w);
}
END_TEST

/* More events than the kernel queues: a truncated, not a silent gap. */
START_TEST(overflow_is_truncated)
{
	struct reader	r;
	char		name[32];
	int		i, n = 16384 + 100;
	FILE		*f;

	if ((f = fopen("/proc/sys/fs/inotify/max_queued_events", "r")) != NULL) {
		if (fscanf(f, "%d", &n) == 1)
			n += 100;
		fclose(f);
	}
	if (n > 70000) {
		TU_SKIP("max_queued_events %d: too many files to make", n);
		return;
	}
	mkdirat(base, "d", 0755);
	reader_open(&r, "d", false);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "d/%d", i);
		ck_assert_int_eq(mkdirat(base, name, 0755), 0);
	}
	settle(&r);
	settle(&r);
	ck_assert(strstr(r.log, "truncated \n") != NULL || r.gap);
	ck_assert_ptr_nonnull(strstr(r.log, "truncated \n"));
	watch_unsubscribe(r.w, &r.sub);
	watch_close(r.w);
}
END_TEST

static bool
all_dirs(void *arg)
{
	struct reader	*r = arg;

	return watch_ndirs(r->w) == WATCH_DIRS_MAX;
}

/* More directories than a watch holds: one truncated says so. */
START_TEST(dirs_limit_is_truncated)
{
	struct reader	r;
	char		name[32];
	int		i, j;

	/* Spread out: a directory's own scan stops at WATCH_SCAN_MAX. */
	mkdirat(base, "d", 0755);
	for (i = 0; i * 100 < WATCH_DIRS_MAX + 100; i++) {
		snprintf(name, sizeof(name), "d/%d", i);
		ck_assert_int_eq(mkdirat(base, name, 0755), 0);
		for (j = 0; j < 100; j++) {
			snprintf(name, sizeof(name), "d/%d/%d", i, j);
			ck_assert_int_eq(mkdirat(base, name, 0755), 0);
		}
	}
	reader_open(&r, "d", true);
	/* The scan goes on from the loop, a share at each turn. */
	ck_assert_int_lt(watch_ndirs(r.w), WATCH_DIRS_MAX);
	ck_assert(tu_run_until(loop, all_dirs, &r, 10.));
	ck_assert_int_eq(watch_ndirs(r.w), WATCH_DIRS_MAX);
	reader_drain(&r);
	ck_assert_ptr_nonnull(strstr(r.log, "truncated "));
	watch_unsubscribe(r.w, &r.sub);
	watch_close(r.w);
}
END_TEST

/* One watch per directory and flag; outside the root: ELOOP. */
START_TEST(shared_and_confined)
{
	struct watch	*a, *b, *c;
	char		 out[128];

	mkdirat(base, "d", 0755);
	mkdirat(base, "f", 0755);
	ck_assert_ptr_nonnull(a = watch_open(tab, "d", false));
	ck_assert_ptr_nonnull(b = watch_open(tab, "d", false));
	ck_assert_ptr_eq(a, b);
	ck_assert_ptr_nonnull(c = watch_open(tab, "d", true));
	ck_assert_ptr_ne(a, c);
	ck_assert_uint_ne(watch_id(a), watch_id(c));
	watch_close(a);
	watch_close(b);
	watch_close(c);
	ck_assert_ptr_null(watch_open(tab, "missing", false));
	ck_assert_int_eq(errno, ENOENT);
	tu_put(base, "file", "");
	ck_assert_ptr_null(watch_open(tab, "file", false));
	ck_assert_int_eq(errno, ENOTDIR);
	snprintf(out, sizeof(out), "%s", "/tmp");
	ck_assert_int_eq(symlinkat(out, base, "link"), 0);
	ck_assert_ptr_null(watch_open(tab, "link", false));
	ck_assert_int_eq(errno, ELOOP);
}
END_TEST

/* The watched directory removed: a remove of "", and the watch is gone. */
START_TEST(directory_removed)
{
	struct reader	r;

	mkdirat(base, "d", 0755);
	reader_open(&r, "d", false);
	ck_assert_int_eq(unlinkat(base, "d", AT_REMOVEDIR), 0);
	settle(&r);
	ck_assert_ptr_nonnull(strstr(r.log, "remove \n"));
	ck_assert(watch_gone(r.w));
	watch_unsubscribe(r.w, &r.sub);
	watch_close(r.w);
	/* Freed from the loop (ASan sees a use after it). */
	(void)tu_run_until(loop, told, NULL, 0.05);
	ck_assert_ptr_nonnull(r.w = watch_open(tab, ".", false));
	watch_close(r.w);
}
END_TEST

Suite *
watch_suite(void)
{
	Suite	*s = suite_create("watch");
	TCase	*tc;

	tc = tcase_create("events");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, events_of_a_directory);
	tcase_add_test(tc, writes_coalesce);
	tcase_add_test(tc, tend_writes_as_envd_writes);
	tcase_add_test(tc, other_renames_are_renames);
	tcase_add_test(tc, recursive_follows_directories);
	tcase_add_test(tc, recursive_new_tree_not_silent);
	tcase_add_test(tc, rename_split_across_reads);
	tcase_add_test(tc, directory_removed);
	tcase_add_test(tc, shared_and_confined);
	suite_add_tcase(s, tc);

	tc = tcase_create("limits");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, ring_drops_oldest);
	tcase_add_test(tc, overflow_is_truncated);
	tcase_add_test(tc, dirs_limit_is_truncated);
	suite_add_tcase(s, tc);
	return s;
}
