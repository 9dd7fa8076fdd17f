/*
 * api_files: the listing's entries (names, types, sizes, modes, times,
 * link targets; depth and the FILES_LIST_MAX bound), the type names, and
 * a file's reply through a server: a Range is answered with its
 * Content-Range, and a header line that cannot be made (memory) is a 503,
 * never a 206 or 416 without it.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <ev.h>

#include "api/api.h"
#include "api/api_files.h"
#include "base/tunables.h"
#include "core/files.h"
#include "testutil.h"

Suite *api_files_suite(void);

static char			base_path[64];
static char			root_path[96];
static char			sock_path[96];
static int			base = -1;	/* holds root/ */
static struct files_root	root;
static struct ev_loop		*loop;
static struct http_server	*srv;
static struct proctab		tab;
static struct api		api;
static int			fail_reallocs;	/* the next n fail */
static int			arm;		/* fail_reallocs, in h_send */
static void			*(*next_realloc)(void *, size_t);

static void	setup(void);
static void	teardown(void);
static void	h_send(struct http_conn *, struct http_req *);
static void	get(const char *, char *, size_t);

static const struct http_route routes[] = {
	{ "GET",	"/f",	h_send, NULL },
	{ NULL, NULL, NULL, NULL }
};

/*
 * Allocation failure, injected: realloc is what buf grows with, and the
 * handler arms it just before api_files_send, so that the reply's first
 * header line is the one that cannot be made.  Otherwise the next
 * realloc in the link order does the work: libc's, or a sanitizer's.
 */
void *
realloc(void *p, size_t n)
{
	if (fail_reallocs > 0) {
		fail_reallocs--;
		errno = ENOMEM;
		return NULL;
	}
	if (next_realloc == NULL)
		*(void **)&next_realloc = dlsym(RTLD_NEXT, "realloc");
	return next_realloc(p, n);
}

static void
setup(void)
{
	signal(SIGPIPE, SIG_IGN);
	base = tu_tmpdir(base_path, sizeof(base_path), "/tmp/tend-apif-");
	ck_assert_int_eq(mkdirat(base, "root", 0755), 0);
	snprintf(root_path, sizeof(root_path), "%s/root", base_path);
	snprintf(sock_path, sizeof(sock_path), "%s/sock", base_path);
	ck_assert_int_eq(files_root_open(&root, root_path), 0);
	loop = ev_loop_new(EVFLAG_AUTO);
	ck_assert_ptr_nonnull(loop);
	tab.loop = loop;
	api.tab = &tab;
	srv = http_server_new(loop, sock_path, routes, &api, 8);
	ck_assert_ptr_nonnull(srv);
	fail_reallocs = arm = 0;
}

static void
teardown(void)
{
	http_close_all(srv);
	ev_run(loop, EVRUN_NOWAIT);
	http_server_free(srv);
	ev_loop_destroy(loop);
	files_root_close(&root);
	close(base);
	base = -1;
	tu_rmtree(base_path);
}

/* The file root/f, sent as api_files_send sends it. */
static void
h_send(struct http_conn *c, struct http_req *r)
{
	struct stat	st;
	int		fd;

	fd = openat(base, "root/f", O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &st), 0);
	fail_reallocs = arm;
	api_files_send(c, r, fd, &st);
	fail_reallocs = 0;
}

/* GET /f with extra header lines: the reply's head into out. */
static void
get(const char *extra, char *out, size_t cap)
{
	struct sockaddr_un	 sun;
	char			 req[256];
	size_t			 len = 0;
	double			 end = tu_now() + 5;
	ssize_t			 n;
	int			 fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sun, sizeof(sun)),
	    0);
	ck_assert_int_eq(fcntl(fd, F_SETFL, O_NONBLOCK), 0);
	snprintf(req, sizeof(req), "GET /f HTTP/1.1\r\nHost: x\r\n%s\r\n",
	    extra);
	ck_assert_int_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	out[0] = '\0';
	while (strstr(out, "\r\n\r\n") == NULL && tu_now() < end) {
		ev_run(loop, EVRUN_NOWAIT);
		n = read(fd, out + len, cap - 1 - len);
		if (n > 0) {
			len += (size_t)n;
			out[len] = '\0';
		} else if (n == 0 || len == cap - 1)
			break;
	}
	close(fd);
	ck_assert_msg(strstr(out, "\r\n\r\n") != NULL, "no reply: %s", out);
}

/* ------------------------------------------------------------------ */
/* A file's reply */

START_TEST(range_reply_has_its_content_range)
{
	char	head[4096];

	tu_put(base, "root/f", "0123456789");
	get("Range: bytes=2-4\r\n", head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 206 ", 13) == 0, "%s", head);
	ck_assert_msg(strstr(head, "Content-Range: bytes 2-4/10\r\n") != NULL,
	    "%s", head);
	get("Range: bytes=20-\r\n", head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 416 ", 13) == 0, "%s", head);
	ck_assert_msg(strstr(head, "Content-Range: bytes */10\r\n") != NULL,
	    "%s", head);
}
END_TEST

/* The Content-Range line cannot be made: 503, not a reply without it. */
START_TEST(range_reply_out_of_memory)
{
	char	head[4096];

	tu_put(base, "root/f", "0123456789");
	arm = 1;
	get("Range: bytes=2-4\r\n", head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 503 ", 13) == 0, "%s", head);
	get("Range: bytes=20-\r\n", head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 503 ", 13) == 0, "%s", head);
	/* Memory back: the same requests answer as they should. */
	arm = 0;
	get("Range: bytes=2-4\r\n", head, sizeof(head));
	ck_assert_msg(strncmp(head, "HTTP/1.1 206 ", 13) == 0, "%s", head);
}
END_TEST

START_TEST(type_names)
{
	ck_assert_str_eq(api_files_type(S_IFLNK), "symlink");
	ck_assert_str_eq(api_files_type(S_IFDIR), "dir");
	ck_assert_str_eq(api_files_type(S_IFREG), "file");
	ck_assert_str_eq(api_files_type(S_IFIFO), "fifo");
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
		ck_assert_int_eq(api_files_list(&root, ".", t[k].depth, arr,
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
	ck_assert_int_eq(api_files_list(&root, ".", 1, arr, &trunc), 0);
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
	ck_assert_int_eq(api_files_list(&root, "a/empty", 1, arr, &trunc), 0);
	ck_assert_int_eq(cJSON_GetArraySize(arr), 0);
	ck_assert_int_eq(api_files_list(&root, "a", 2, arr, &trunc), 0);
	ck_assert_int_eq(cJSON_GetArraySize(arr), 3);
	cJSON_Delete(arr);
	ck_assert_int_eq(unlinkat(base, "root/a/empty", AT_REMOVEDIR), 0);

	/* A subdirectory, through a link; bad depths; not a directory. */
	ck_assert_int_eq(symlinkat("a", base, "root/la"), 0);
	arr = cJSON_CreateArray();
	ck_assert_int_eq(api_files_list(&root, "la", 2, arr, &trunc), 0);
	ck_assert_int_eq(cJSON_GetArraySize(arr), 2);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 1),
	    "name")->valuestring, "b/c");
	errno = 0;
	ck_assert_int_eq(api_files_list(&root, ".", 0, arr, &trunc), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(api_files_list(&root, ".", FILES_LIST_DEPTH_MAX + 1, arr,
	    &trunc), -1);
	ck_assert_int_eq(errno, EINVAL);
	errno = 0;
	ck_assert_int_eq(api_files_list(&root, "f", 1, arr, &trunc), -1);
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
	ck_assert_int_eq(api_files_list(&root, "many", 1, arr, &trunc), 0);
	ck_assert(trunc);
	ck_assert_int_eq(cJSON_GetArraySize(arr), FILES_LIST_MAX);
	cJSON_Delete(arr);
	/* Exactly the bound is not truncated. */
	for (i = FILES_LIST_MAX; i < FILES_LIST_MAX + 3; i++) {
		snprintf(name, sizeof(name), "root/many/%05d", i);
		ck_assert_int_eq(unlinkat(base, name, 0), 0);
	}
	arr = cJSON_CreateArray();
	ck_assert_int_eq(api_files_list(&root, "many", 1, arr, &trunc), 0);
	ck_assert(!trunc);
	ck_assert_int_eq(cJSON_GetArraySize(arr), FILES_LIST_MAX);
	cJSON_Delete(arr);
}
END_TEST

Suite *
api_files_suite(void)
{
	Suite	*s = suite_create("api_files");
	TCase	*tc;

	tc = tcase_create("reply");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, range_reply_has_its_content_range);
	tcase_add_test(tc, range_reply_out_of_memory);
	tcase_add_test(tc, type_names);
	suite_add_tcase(s, tc);

	tc = tcase_create("listing");
	tcase_add_checked_fixture(tc, setup, teardown);
	/* list_bounded makes FILES_LIST_MAX files: slow under sanitizers. */
	tcase_set_timeout(tc, 20);
	tcase_add_test(tc, list_depth);
	tcase_add_test(tc, list_bounded);
	suite_add_tcase(s, tc);
	return s;
}
