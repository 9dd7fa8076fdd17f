/*
 * record: a live record's files (meta once, status replaced, both owed
 * while the state dir refuses them), a record made in memory and given a
 * directory later, a procs directory remade under it, links planted as
 * records, files given back and reopened, earlier boots' records read
 * only, lost marking, the read cap, and the syncfs child.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/fsutil.h"
#include "base/tunables.h"
#include "store/record.h"
#include "testutil.h"

Suite *record_suite(void);

static char		 tdir_path[64];
static int		 tdir = -1;	/* the "procs" directory's parent */
static struct record_dir dir;
static int		 remakes;

static void	setup(void);
static void	teardown(void);
static int	remake(struct record_dir *);
static const char *str(cJSON *, const char *);

static void
setup(void)
{
	tdir = tu_tmpdir(tdir_path, sizeof(tdir_path), "/tmp/tend-record-");
	ck_assert_int_eq(mkdirat(tdir, "procs", 0700), 0);
	memset(&dir, 0, sizeof(dir));
	dir.fd = openat(tdir, "procs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_ge(dir.fd, 0);
	dir.remake = remake;
	remakes = 0;
}

static void
teardown(void)
{
	if (dir.fd != -1)
		close(dir.fd);
	close(tdir);
	tu_rmtree(tdir_path);
}

/* As the table does: make procs again. */
static int
remake(struct record_dir *d)
{
	remakes++;
	if (d->fd != -1)
		close(d->fd);
	if (mkdirat(tdir, "procs", 0700) == -1 && errno != EEXIST)
		return -1;
	d->fd = openat(tdir, "procs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return d->fd == -1 ? -1 : 0;
}

static const char *
str(cJSON *j, const char *key)
{
	cJSON	*v = cJSON_GetObjectItemCaseSensitive(j, key);

	ck_assert_msg(cJSON_IsString(v), "%s: not a string", key);
	return v->valuestring;
}

/* ------------------------------------------------------------------ */
/* A live record */

START_TEST(open_meta_status)
{
	struct record	 r;
	char		*s;
	size_t		 len;

	ck_assert_int_eq(record_open(&r, &dir, "a1", 100), 0);
	ck_assert(tu_exists(dir.fd, "a1"));
	/* Lazy: no output, no files. */
	ck_assert(!tu_exists(dir.fd, "a1/stdout"));
	ck_assert_int_eq(logstore_append(&r.ls, 0, "out", 3), 0);
	ck_assert(tu_exists(dir.fd, "a1/stdout"));
	ck_assert_uint_eq(r.ls.maxbytes, 100);

	ck_assert_int_eq(record_set_meta(&r, strdup("{\"m\":1}")), 0);
	ck_assert(!record_owed(&r));
	s = tu_slurp(dir.fd, "a1/meta.json", NULL);
	ck_assert_str_eq(s, "{\"m\":1}");
	free(s);
	/* Written once: a meta.json already there is the one. */
	ck_assert_int_eq(record_set_meta(&r, strdup("{\"m\":2}")), 0);
	s = tu_slurp(dir.fd, "a1/meta.json", NULL);
	ck_assert_str_eq(s, "{\"m\":1}");
	free(s);

	ck_assert_int_eq(record_put_status(&r, "{\"state\":\"running\"}"), 0);
	ck_assert_int_eq(record_put_status(&r, "{\"state\":\"exited\"}"), 0);
	ck_assert(!record_status_failed(&r));
	s = record_status_text(dir.fd, "a1", &len);
	ck_assert_str_eq(s, "{\"state\":\"exited\"}");
	ck_assert_uint_eq(len, strlen(s));
	free(s);
	ck_assert(!tu_exists(dir.fd, "a1/status.json.tmp"));

	ck_assert_int_eq(record_remove(&r), 0);
	ck_assert(!tu_exists(dir.fd, "a1"));
	record_free(&r);
}
END_TEST

/* The spare, made a step at a time, becomes the next record. */
START_TEST(spare_taken_by_open)
{
	struct record	 r;
	struct stat	 sp, st;
	char		*s;
	int		 n = 0;

	while (record_spare_make(&dir) == 1)
		n++;
	ck_assert_int_eq(n, 2);		/* directory, meta temp, status temp */
	ck_assert(record_spare_ready(&dir));
	ck_assert(tu_exists(tdir, ".spare/meta.json.tmp"));
	ck_assert(tu_exists(tdir, ".spare/status.json.tmp"));
	ck_assert_int_eq(fstatat(tdir, ".spare", &sp, 0), 0);
	ck_assert_int_eq(record_spare_make(&dir), 0);	/* whole: nothing */

	ck_assert_int_eq(record_open(&r, &dir, "s1", 100), 0);
	ck_assert(!tu_exists(tdir, ".spare"));
	ck_assert(!record_spare_ready(&dir));
	ck_assert_int_eq(fstatat(dir.fd, "s1", &st, 0), 0);
	ck_assert_uint_eq(st.st_ino, sp.st_ino);
	ck_assert_int_eq(record_set_meta(&r, strdup("{\"m\":1}")), 0);
	ck_assert_int_eq(record_put_status(&r, "{\"state\":\"running\"}"), 0);
	ck_assert_int_eq(record_put_status(&r, "{\"state\":\"exited\"}"), 0);
	ck_assert(!tu_exists(dir.fd, "s1/meta.json.tmp"));
	ck_assert(!tu_exists(dir.fd, "s1/status.json.tmp"));
	s = tu_slurp(dir.fd, "s1/meta.json", NULL);
	ck_assert_str_eq(s, "{\"m\":1}");
	free(s);
	s = tu_slurp(dir.fd, "s1/status.json", NULL);
	ck_assert_str_eq(s, "{\"state\":\"exited\"}");
	free(s);
	record_free(&r);

	/* Half made: the launch makes the rest itself. */
	ck_assert_int_eq(record_spare_make(&dir), 1);
	ck_assert_int_eq(record_spare_make(&dir), 1);
	ck_assert_int_eq(record_open(&r, &dir, "s2", 100), 0);
	ck_assert(tu_exists(dir.fd, "s2/meta.json.tmp"));
	ck_assert(!tu_exists(dir.fd, "s2/status.json.tmp"));
	ck_assert_int_eq(record_put_status(&r, "{\"state\":\"exited\"}"), 0);
	ck_assert(tu_exists(dir.fd, "s2/status.json"));
	/* An unused temp goes with the record's files. */
	record_free(&r);
	ck_assert(!tu_exists(dir.fd, "s2/meta.json.tmp"));
	record_spare_drop(&dir);
}
END_TEST

/* A name taken keeps the spare; a procs directory removed drops it. */
START_TEST(spare_kept_or_dropped)
{
	struct record	 r;
	char		 procs[96];

	while (record_spare_make(&dir) == 1)
		;
	ck_assert_int_eq(symlinkat("/tmp", dir.fd, "evil"), 0);
	ck_assert_int_eq(record_open(&r, &dir, "evil", 100), -1);
	ck_assert_int_eq(errno, ELOOP);
	ck_assert(record_spare_ready(&dir));
	ck_assert(tu_exists(tdir, ".spare"));

	snprintf(procs, sizeof(procs), "%s/procs", tdir_path);
	tu_rmtree(procs);
	ck_assert_int_eq(record_open(&r, &dir, "after", 100), 0);
	ck_assert_int_eq(remakes, 1);
	ck_assert(!tu_exists(tdir, ".spare"));
	ck_assert(tu_exists(dir.fd, "after"));
	record_free(&r);

	while (record_spare_make(&dir) == 1)
		;
	ck_assert(tu_exists(tdir, ".spare"));
	record_spare_drop(&dir);
	ck_assert(!tu_exists(tdir, ".spare"));
	ck_assert(!record_spare_ready(&dir));
}
END_TEST

/* A record removed while no spare is made becomes the spare, emptied. */
START_TEST(spare_recycled_from_removed)
{
	struct record	 r;
	struct stat	 d0, m0, s0, st;
	char		*s;

	ck_assert_int_eq(record_open(&r, &dir, "old", 100), 0);
	ck_assert_int_eq(record_set_meta(&r, strdup("{\"m\":\"old\"}")), 0);
	ck_assert_int_eq(record_put_status(&r, "{\"state\":\"exited\"}"), 0);
	ck_assert_int_eq(logstore_append(&r.ls, 0, "out", 3), 0);
	tu_put(dir.fd, "old/planted", "x");
	ck_assert_int_eq(fstatat(dir.fd, "old", &d0, 0), 0);
	ck_assert_int_eq(fstatat(dir.fd, "old/meta.json", &m0, 0), 0);
	ck_assert_int_eq(fstatat(dir.fd, "old/status.json", &s0, 0), 0);
	ck_assert_int_eq(record_remove(&r), 0);
	record_free(&r);
	ck_assert(!tu_exists(dir.fd, "old"));
	ck_assert(record_spare_ready(&dir));
	ck_assert_int_eq(fstatat(tdir, ".spare", &st, 0), 0);
	ck_assert_uint_eq(st.st_ino, d0.st_ino);
	ck_assert_int_eq(fstatat(tdir, ".spare/meta.json.tmp", &st, 0), 0);
	ck_assert_uint_eq(st.st_ino, m0.st_ino);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(fstatat(tdir, ".spare/status.json.tmp", &st, 0), 0);
	ck_assert_uint_eq(st.st_ino, s0.st_ino);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert(!tu_exists(tdir, ".spare/stdout"));
	ck_assert(!tu_exists(tdir, ".spare/index"));
	ck_assert(!tu_exists(tdir, ".spare/planted"));

	/* The next record is it, with nothing of the old one. */
	ck_assert_int_eq(record_open(&r, &dir, "new", 100), 0);
	ck_assert_int_eq(fstatat(dir.fd, "new", &st, 0), 0);
	ck_assert_uint_eq(st.st_ino, d0.st_ino);
	ck_assert_int_eq(record_set_meta(&r, strdup("{}")), 0);
	s = tu_slurp(dir.fd, "new/meta.json", NULL);
	ck_assert_str_eq(s, "{}");
	free(s);
	ck_assert(!tu_exists(dir.fd, "new/stdout"));

	/* A spare already made: removed as usual. */
	while (record_spare_make(&dir) == 1)
		;
	ck_assert_int_eq(fstatat(tdir, ".spare", &d0, 0), 0);
	ck_assert_int_eq(record_remove(&r), 0);
	record_free(&r);
	ck_assert(!tu_exists(dir.fd, "new"));
	ck_assert_int_eq(fstatat(tdir, ".spare", &st, 0), 0);
	ck_assert_uint_eq(st.st_ino, d0.st_ino);
	record_spare_drop(&dir);
}
END_TEST

/* Another link to a record's file keeps its bytes. */
START_TEST(spare_recycle_spares_other_links)
{
	struct record	 r;
	char		*s;

	ck_assert_int_eq(record_open(&r, &dir, "ln", 100), 0);
	ck_assert_int_eq(record_set_meta(&r, strdup("{\"keep\":1}")), 0);
	ck_assert_int_eq(linkat(dir.fd, "ln/meta.json", tdir, "copy", 0), 0);
	ck_assert_int_eq(record_remove(&r), 0);
	record_free(&r);
	s = tu_slurp(tdir, "copy", NULL);
	ck_assert_str_eq(s, "{\"keep\":1}");
	free(s);
	ck_assert(record_spare_ready(&dir));
	ck_assert(tu_exists(tdir, ".spare/meta.json.tmp"));
	record_spare_drop(&dir);
}
END_TEST

/* A status that cannot be made is owed like one the disk refused. */
START_TEST(status_unmade_is_owed)
{
	struct record	r;

	ck_assert_int_eq(record_open(&r, &dir, "a1", 0), 0);
	ck_assert_int_eq(record_put_status(&r, NULL), -1);
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert(record_status_failed(&r));
	ck_assert(record_owed(&r));
	ck_assert_int_eq(record_put_status(&r, "{}"), 0);
	ck_assert(!record_owed(&r));
	record_free(&r);
}
END_TEST

/*
 * Without the procs directory the record lives in memory: its output is
 * dropped and counted, its files are owed; once the directory is back,
 * the first write makes the record's own, which it keeps.
 */
START_TEST(in_memory_then_made)
{
	struct record	r;
	int		fd = dir.fd;

	dir.fd = -1;
	dir.err = EROFS;
	errno = 0;
	ck_assert_int_eq(record_open(&r, &dir, "m", 0), 1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert(record_in_memory(&r));
	ck_assert_int_eq(logstore_append(&r.ls, 0, "lost", 4), 0);
	ck_assert_uint_eq(r.ls.dropped, 4);
	ck_assert_int_eq(record_set_meta(&r, strdup("{}")), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_int_eq(record_put_status(&r, "{\"n\":1}"), -1);
	ck_assert(record_status_failed(&r));
	ck_assert(record_owed(&r));
	/* Nothing to give back, nothing to remove. */
	ck_assert(!record_release(&r));
	ck_assert_int_eq(record_remove(&r), 0);

	dir.fd = fd;
	dir.err = 0;
	ck_assert_int_eq(record_put_meta(&r), 0);
	ck_assert_int_eq(record_put_status(&r, "{\"n\":2}"), 0);
	ck_assert(!record_owed(&r));
	ck_assert(!record_in_memory(&r));
	ck_assert(tu_exists(dir.fd, "m/meta.json"));
	ck_assert(tu_exists(dir.fd, "m/status.json"));
	/* Its output stays dropped: the store had no files to take it. */
	ck_assert_int_eq(logstore_append(&r.ls, 0, "more", 4), 0);
	ck_assert(!tu_exists(dir.fd, "m/stdout"));
	ck_assert_int_eq(record_remove(&r), 0);
	ck_assert(!tu_exists(dir.fd, "m"));
	record_free(&r);
}
END_TEST

START_TEST(procs_dir_remade)
{
	struct record	r;

	tu_rmtree(tdir_path);	/* all of it, procs included */
	ck_assert_int_eq(mkdir(tdir_path, 0700), 0);
	close(tdir);
	tdir = open(tdir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ck_assert_int_eq(record_open(&r, &dir, "again", 0), 0);
	ck_assert_int_eq(remakes, 1);
	ck_assert(tu_exists(tdir, "procs/again"));
	record_free(&r);
}
END_TEST

/* A link planted under the ID is never written through. */
START_TEST(planted_link_refused)
{
	struct record	r;

	ck_assert_int_eq(mkdirat(tdir, "elsewhere", 0700), 0);
	ck_assert_int_eq(symlinkat("../elsewhere", dir.fd, "evil"), 0);
	ck_assert_int_eq(record_open(&r, &dir, "evil", 0), -1);
	ck_assert_int_ne(errno, 0);
	record_free(&r);
	/* The link stays, and nothing reached its target. */
	ck_assert(tu_exists(dir.fd, "evil"));
	ck_assert_ptr_null(record_status_text(dir.fd, "evil", NULL));
	{
		struct logstore	 ls;
		cJSON		*st;

		ck_assert_int_eq(record_open_ro(dir.fd, "evil", &ls, &st), -1);
	}
}
END_TEST

START_TEST(release_and_reopen)
{
	struct logstore	*ls;
	struct record	 r;
	char		 b[16];

	ck_assert_int_eq(record_open(&r, &dir, "rel", 0), 0);
	ck_assert_int_eq(logstore_append(&r.ls, 0, "hello", 5), 0);
	ck_assert_int_eq(logstore_append(&r.ls, 1, "err", 3), 0);
	r.ls.dropped = 7;	/* as if the disk had refused some */
	ck_assert(record_release(&r));
	ck_assert(!record_release(&r));
	ck_assert_int_eq(r.ls.fd[0], -1);
	ck_assert_int_eq(r.dirfd, -1);

	ls = record_store(&r);
	ck_assert_ptr_eq(ls, &r.ls);
	ck_assert(ls->ro);
	ck_assert_uint_eq(ls->end[0], 5);
	ck_assert_uint_eq(ls->end[1], 3);
	ck_assert_uint_eq(ls->nrec, 2);
	ck_assert_uint_eq(ls->dropped, 7);
	ck_assert_int_eq(logstore_pread(ls, 0, b, sizeof(b), 0), 5);
	ck_assert_int_eq(memcmp(b, "hello", 5), 0);
	/* Open now: asked again, the same store. */
	ck_assert_ptr_eq(record_store(&r), ls);

	/* Gone under us: NULL, and the store stays given back. */
	ck_assert(record_release(&r));
	ck_assert_int_eq(record_remove(&r), 0);
	ck_assert_ptr_null(record_store(&r));
	ck_assert_int_eq(errno, ENOENT);
	record_free(&r);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Earlier boots' records */

START_TEST(open_ro_and_status)
{
	struct logstore	 ls;
	cJSON		*st;

	ck_assert_int_eq(mkdirat(dir.fd, "old", 0700), 0);
	tu_put(dir.fd, "old/stdout", "abc");
	tu_put(dir.fd, "old/status.json", "{\"state\":\"exited\"}");
	ck_assert_int_eq(record_open_ro(dir.fd, "old", &ls, &st), 0);
	ck_assert(ls.ro);
	ck_assert_uint_eq(ls.end[0], 3);
	ck_assert_uint_eq(ls.end[1], 0);
	ck_assert_str_eq(str(st, "state"), "exited");
	cJSON_Delete(st);
	logstore_close(&ls);

	/* No status: the output all the same. */
	ck_assert_int_eq(mkdirat(dir.fd, "nost", 0700), 0);
	ck_assert_int_eq(record_open_ro(dir.fd, "nost", &ls, &st), 0);
	ck_assert_ptr_null(st);
	logstore_close(&ls);

	ck_assert_int_eq(record_open_ro(dir.fd, "none", &ls, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(record_open_ro(dir.fd, "../procs/old", &ls, &st), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(record_status_text(dir.fd, ".", NULL));

	/* The read cap: no more than RECORD_READ_MAX of a status.json. */
	ck_assert_int_eq(mkdirat(dir.fd, "huge", 0700), 0);
	{
		int	fd = openat(dir.fd, "huge/status.json", O_WRONLY |
			    O_CREAT | O_CLOEXEC, 0600);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, RECORD_READ_MAX + 1), 0);
		close(fd);
	}
	{
		size_t	 len = 0;
		char	*s = record_status_text(dir.fd, "huge", &len);

		ck_assert_ptr_nonnull(s);
		ck_assert_uint_eq(len, RECORD_READ_MAX);
		free(s);
	}
	ck_assert_int_eq(mkdirat(dir.fd, "cap", 0700), 0);
	{
		int	fd = openat(dir.fd, "cap/status.json", O_WRONLY |
			    O_CREAT | O_CLOEXEC, 0600);
		char	*s;

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(ftruncate(fd, RECORD_READ_MAX), 0);
		close(fd);
		ck_assert_ptr_nonnull(s = record_status_text(dir.fd, "cap",
		    NULL));
		free(s);
	}
}
END_TEST

START_TEST(list_filters)
{
	cJSON	*a, *e;
	int	 n = 0;

	ck_assert_int_eq(mkdirat(dir.fd, "r1", 0700), 0);
	ck_assert_int_eq(mkdirat(dir.fd, "r2", 0700), 0);
	ck_assert_int_eq(mkdirat(dir.fd, "r3", 0700), 0);	/* no status */
	ck_assert_int_eq(mkdirat(dir.fd, "bad name", 0700), 0);
	tu_put(dir.fd, "r1/status.json", "{\"id\":\"r1\",\"state\":\"exited\"}");
	tu_put(dir.fd, "r2/status.json", "{\"id\":\"r2\",\"state\":\"error\"}");
	tu_put(dir.fd, "bad name/status.json", "{\"state\":\"exited\"}");

	a = record_list(dir.fd, "");
	ck_assert_int_eq(cJSON_GetArraySize(a), 2);
	cJSON_Delete(a);
	a = record_list(dir.fd, "exited");
	ck_assert_int_eq(cJSON_GetArraySize(a), 1);
	cJSON_ArrayForEach(e, a) {
		ck_assert_str_eq(str(e, "id"), "r1");
		n++;
	}
	ck_assert_int_eq(n, 1);
	cJSON_Delete(a);
	a = record_list(dir.fd, "running");
	ck_assert_int_eq(cJSON_GetArraySize(a), 0);
	cJSON_Delete(a);
}
END_TEST

START_TEST(mark_lost)
{
	cJSON	*j, *e;

	ck_assert_int_eq(mkdirat(dir.fd, "run", 0700), 0);
	ck_assert_int_eq(mkdirat(dir.fd, "done", 0700), 0);
	ck_assert_int_eq(mkdirat(dir.fd, "young", 0700), 0);
	tu_put(dir.fd, "run/status.json", "{\"id\":\"run\",\"state\":\"running\","
	    "\"stdoutBytes\":1}");
	tu_put(dir.fd, "run/stdout", "12345");
	tu_put(dir.fd, "done/status.json", "{\"id\":\"done\",\"state\":\"exited\"}");
	tu_put(dir.fd, "young/meta.json", "{\"argv\":[\"sleep\",\"9\"],"
	    "\"cwd\":\"/\",\"created_at\":\"2024-01-01T00:00:00.000Z\","
	    "\"tags\":{\"k\":\"v\"},\"env\":[]}");

	record_mark_lost(dir.fd, "b00t");
	j = tu_json(dir.fd, "run/status.json");
	ck_assert_str_eq(str(j, "state"), "error");
	e = cJSON_GetObjectItemCaseSensitive(j, "error");
	ck_assert_str_eq(str(e, "code"), "lost");
	ck_assert_ptr_nonnull(strstr(str(e, "message"), "b00t"));
	ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(j,
	    "stdoutBytes")->valueint, 5);
	cJSON_Delete(j);
	j = tu_json(dir.fd, "done/status.json");
	ck_assert_str_eq(str(j, "state"), "exited");
	cJSON_Delete(j);
	/* No status yet: what meta.json says, as a status. */
	j = tu_json(dir.fd, "young/status.json");
	ck_assert_str_eq(str(j, "state"), "error");
	ck_assert_str_eq(str(j, "id"), "young");
	ck_assert_str_eq(str(j, "bootId"), "b00t");
	ck_assert_str_eq(str(j, "startedAt"), "2024-01-01T00:00:00.000Z");
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j,
	    "command"), 0)->valuestring, "sleep");
	ck_assert_str_eq(str(cJSON_GetObjectItemCaseSensitive(j, "tags"), "k"),
	    "v");
	cJSON_Delete(j);
}
END_TEST

/* A name that is not UTF-8: meta's exact bytes go into the status too. */
START_TEST(mark_lost_keeps_bytes)
{
	cJSON	*j;

	ck_assert_int_eq(mkdirat(dir.fd, "young", 0700), 0);
	tu_put(dir.fd, "young/meta.json", "{\"argv\":[\"ls\",\"\xef\xbf\xbd\"],"
	    "\"argvBytes\":[\"bHM=\",\"/w==\"],\"cwd\":\"/\xef\xbf\xbd\","
	    "\"cwdBytes\":\"L/8=\",\"env\":[]}");
	record_mark_lost(dir.fd, "b00t");
	j = tu_json(dir.fd, "young/status.json");
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j,
	    "commandBytes"), 1)->valuestring, "/w==");
	ck_assert_str_eq(str(j, "cwdBytes"), "L/8=");
	cJSON_Delete(j);
}
END_TEST

START_TEST(id_vectors)
{
	static const char *const good[] = { "a", "Z9", "a.b_c-d", "0" };
	static const char *const bad[] = { "", ".", "..", ".a", "-a", "_a",
	    "a/b", "a b", "a\n" };
	char	 longest[PROC_ID_MAX + 2];
	size_t	 i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ck_assert_msg(record_id_valid(good[i]), "%s", good[i]);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!record_id_valid(bad[i]), "%s", bad[i]);
	memset(longest, 'a', sizeof(longest));
	longest[PROC_ID_MAX] = '\0';
	ck_assert(record_id_valid(longest));
	longest[PROC_ID_MAX] = 'a';
	longest[PROC_ID_MAX + 1] = '\0';
	ck_assert(!record_id_valid(longest));
}
END_TEST

/* ------------------------------------------------------------------ */
/* The pool made by a child */

/* Its child reaped as the table's reaper would hand it over. */
static int
pool_reap(double now)
{
	pid_t	pid = dir.pool.pid;
	int	st;

	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(record_pool_reaped(&dir, pid, st, now));
	ck_assert_int_eq(dir.pool.pid, 0);
	return st;
}

static bool
pool_has(unsigned n)
{
	char	name[64];

	snprintf(name, sizeof(name), ".spares/%u/meta.json.tmp", n);
	if (!tu_exists(tdir, name))
		return false;
	snprintf(name, sizeof(name), ".spares/%u/status.json.tmp", n);
	return tu_exists(tdir, name);
}

static ino_t
ino_at(int dfd, const char *name)
{
	struct stat	st;

	ck_assert_int_eq(fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW), 0);
	return st.st_ino;
}

START_TEST(pool_made_by_a_child)
{
	struct record	 r[4 * RECORD_POOL];
	char		 id[16], name[32], *s2;
	ino_t		 ino;
	int		 i, n = 0, st, fd;

	ck_assert_int_eq(record_pool_want(&dir, 0), 1);
	ck_assert_int_eq(record_pool_fill(&dir, 0), 0);
	ck_assert_int_eq(record_pool_want(&dir, 0), 0);	/* its child works */
	st = pool_reap(0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert(!record_pool_reaped(&dir, getpid(), 0, 0));	/* not it */
	for (i = 0; i < RECORD_POOL; i++)
		ck_assert_msg(pool_has(i), "%d not whole", i);
	ck_assert(!tu_exists(tdir, ".spares/32"));
	ck_assert(!tu_exists(tdir, ".spares/new/0"));

	/* A spare of the loop's own (a recycled one) goes first. */
	while (record_spare_make(&dir) == 1)
		;
	ino = ino_at(tdir, ".spare");
	ck_assert_int_eq(record_open(&r[n++], &dir, "s", 0), 0);
	ck_assert_uint_eq(ino_at(dir.fd, "s"), ino);
	ck_assert(pool_has(0));

	/* Then the pool, in order, temps and all, until it is low. */
	for (i = 0; i < RECORD_POOL - RECORD_POOL_LOW; i++) {
		ck_assert_int_eq(record_pool_want(&dir, 0), 0);
		snprintf(name, sizeof(name), ".spares/%d", i);
		ino = ino_at(tdir, name);
		snprintf(id, sizeof(id), "p%d", i);
		ck_assert_int_eq(record_open(&r[n++], &dir, id, 0), 0);
		ck_assert_uint_eq(ino_at(dir.fd, id), ino);
		ck_assert(!tu_exists(tdir, name));
	}
	ck_assert_int_eq(record_pool_want(&dir, 0), 1);
	ck_assert_int_eq(record_set_meta(&r[1], strdup("{\"m\":1}")), 0);
	ck_assert_int_eq(record_put_status(&r[1], "{\"s\":1}"), 0);
	ck_assert(!tu_exists(dir.fd, "p0/meta.json.tmp"));
	ck_assert(!tu_exists(dir.fd, "p0/status.json.tmp"));
	ck_assert(tu_exists(dir.fd, "p0/meta.json"));
	ck_assert(tu_exists(dir.fd, "p0/status.json"));

	/* The next child names on from the last. */
	ck_assert_int_eq(record_pool_fill(&dir, 0), 0);
	st = pool_reap(0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert(pool_has(RECORD_POOL - RECORD_POOL_LOW));
	ck_assert(pool_has(2 * RECORD_POOL - 1));

	/* One gone from the pool: passed over, and only it. */
	ck_assert_int_eq(fsutil_rmtree(tdir, ".spares/17"), 0);
	ck_assert_int_eq(record_open(&r[n++], &dir, "q", 0), 0);	/* 16 */
	ck_assert_int_eq(record_open(&r[n++], &dir, "q2", 0), 0);	/* made */
	ck_assert(!tu_exists(dir.fd, "q2/meta.json.tmp"));
	ino = ino_at(tdir, ".spares/18");
	ck_assert_int_eq(record_open(&r[n++], &dir, "q3", 0), 0);
	ck_assert_uint_eq(ino_at(dir.fd, "q3"), ino);
	ck_assert(tu_exists(dir.fd, "q3/meta.json.tmp"));

	/* A child that fails: none for a while; what was made is taken. */
	ck_assert_int_eq(unlinkat(tdir, ".spares/new", AT_REMOVEDIR), 0);
	fd = openat(tdir, ".spares/new", O_WRONLY | O_CREAT | O_EXCL |
	    O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_int_eq(record_pool_fill(&dir, 100), 0);
	st = pool_reap(100);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == ENOTDIR);
	ck_assert_uint_eq(dir.pool.end, 2 * RECORD_POOL);	/* it made none */
	ck_assert_int_eq(record_pool_want(&dir, 100), -1);
	ck_assert_int_eq(record_pool_want(&dir, 100 + RECORD_POOL_RETRY), 0);
	ino = ino_at(tdir, ".spares/19");
	ck_assert_int_eq(record_open(&r[n++], &dir, "t", 0), 0);
	ck_assert_uint_eq(ino_at(dir.fd, "t"), ino);
	while (dir.pool.next < 2 * RECORD_POOL) {
		snprintf(id, sizeof(id), "u%d", n);
		ck_assert_int_eq(record_open(&r[n++], &dir, id, 0), 0);
		ck_assert(r[n - 1].metatmp);
	}
	ck_assert_int_eq(record_open(&r[n++], &dir, "v", 0), 0);
	ck_assert(!tu_exists(dir.fd, "v/meta.json.tmp"));
	ck_assert_int_eq(record_pool_want(&dir, 100 + RECORD_POOL_RETRY), 1);
	/* A directory a failed child left half made is made anew. */
	ck_assert_int_eq(unlinkat(tdir, ".spares/new", 0), 0);
	ck_assert_int_eq(mkdirat(tdir, ".spares/new", 0700), 0);
	ck_assert_int_eq(mkdirat(tdir, ".spares/new/64", 0700), 0);
	fd = openat(tdir, ".spares/new/64/meta.json.tmp", O_WRONLY | O_CREAT |
	    O_EXCL | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
	ck_assert_int_eq(record_pool_fill(&dir, 100 + RECORD_POOL_RETRY), 0);
	ck_assert_int_eq(record_pool_fill(&dir, 100 + RECORD_POOL_RETRY), -1);
	ck_assert_int_eq(errno, EBUSY);		/* one at a time */
	st = pool_reap(100 + RECORD_POOL_RETRY);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert(pool_has(2 * RECORD_POOL));
	s2 = tu_slurp(tdir, ".spares/64/meta.json.tmp", NULL);
	ck_assert_str_eq(s2, "");
	free(s2);

	/* The pool removed under us: made anew by the next fill. */
	ck_assert_int_eq(fsutil_rmtree(tdir, ".spares"), 0);
	ck_assert_int_eq(record_pool_fill(&dir, 100 + RECORD_POOL_RETRY), 0);
	st = pool_reap(100 + RECORD_POOL_RETRY);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert(pool_has(3 * RECORD_POOL));
	ck_assert_int_eq(record_open(&r[n++], &dir, "w", 0), 0);
	ck_assert(tu_exists(dir.fd, "w/meta.json.tmp"));

	record_pool_drop(&dir);
	ck_assert(!tu_exists(tdir, ".spares"));
	ck_assert_int_eq(record_pool_want(&dir, 1000), -1);
	record_spare_drop(&dir);
	while (n > 0)
		record_free(&r[--n]);
}
END_TEST

/* Taken while its child still makes them: each one whole. */
START_TEST(pool_taken_while_made)
{
	struct record	 r;
	char		 id[16], path[64];
	pid_t		 pid;
	int		 i, st, taken = 0;

	ck_assert_int_eq(record_pool_fill(&dir, 0), 0);
	pid = dir.pool.pid;
	for (i = 0; i < 5000 && !tu_exists(tdir, ".spares/0"); i++)
		usleep(1000);
	ck_assert_msg(tu_exists(tdir, ".spares/0"), "the child made none");
	for (i = 0; i < 100000; i++) {
		unsigned next = dir.pool.next;

		snprintf(id, sizeof(id), "w%d", i);
		ck_assert_int_eq(record_open(&r, &dir, id, 0), 0);
		if (dir.pool.next != next)
			taken++;
		snprintf(path, sizeof(path), "%s/meta.json.tmp", id);
		ck_assert(tu_exists(dir.fd, path) == r.metatmp);
		snprintf(path, sizeof(path), "%s/status.json.tmp", id);
		ck_assert(tu_exists(dir.fd, path) == r.statustmp);
		record_free(&r);
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
	}
	ck_assert_msg(i < 100000, "the child did not end");
	ck_assert(record_pool_reaped(&dir, pid, st, 0));
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ck_assert_int_gt(taken, 0);
	record_pool_drop(&dir);
}
END_TEST

START_TEST(sync_child)
{
	int	st;
	pid_t	pid;

	pid = record_sync(dir.fd);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
}
END_TEST

Suite *
record_suite(void)
{
	Suite	*s = suite_create("record");
	TCase	*tc;

	tc = tcase_create("live");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, open_meta_status);
	tcase_add_test(tc, status_unmade_is_owed);
	tcase_add_test(tc, in_memory_then_made);
	tcase_add_test(tc, procs_dir_remade);
	tcase_add_test(tc, planted_link_refused);
	tcase_add_test(tc, release_and_reopen);
	tcase_add_test(tc, spare_taken_by_open);
	tcase_add_test(tc, spare_kept_or_dropped);
	tcase_add_test(tc, spare_recycled_from_removed);
	tcase_add_test(tc, spare_recycle_spares_other_links);
	tcase_add_test(tc, pool_made_by_a_child);
	tcase_add_test(tc, pool_taken_while_made);
	suite_add_tcase(s, tc);

	tc = tcase_create("stored");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, open_ro_and_status);
	tcase_add_test(tc, list_filters);
	tcase_add_test(tc, mark_lost);
	tcase_add_test(tc, mark_lost_keeps_bytes);
	tcase_add_test(tc, id_vectors);
	tcase_add_test(tc, sync_child);
	suite_add_tcase(s, tc);
	return s;
}
