/*
 * envd: paths resolved as envd resolves them, the environment built in
 * its order with later names replacing earlier ones, /init's fields
 * applied or refused whole, users looked up.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/envd/envd.h"

Suite *envd_suite(void);

static struct envd		d;
static struct envd_user		u;

static void
setup(void)
{
	ck_assert_int_eq(envd_init(&d, NULL, "/bin:/usr/bin"), 0);
	memset(&u, 0, sizeof(u));
	strcpy(u.name, "alice");
	strcpy(u.home, "/home/alice");
}

static void
teardown(void)
{
	envd_free(&d);
}

START_TEST(paths)
{
	static const struct {
		const char	*in;
		const char	*out;
	} cases[] = {
		{ "/etc/passwd",	"/etc/passwd" },
		{ "a/b",		"/home/alice/a/b" },
		{ "~",			"/home/alice" },
		{ "~/x/./y",		"/home/alice/x/y" },
		{ "../../../..",	"/" },
		{ "/a//b/../c/",	"/a/c" },
		{ "",			"/home/alice" },
		{ ".",			"/home/alice" },
	};
	struct envd_err	e;
	char		out[64];
	size_t		i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(envd_path(&d, &u, cases[i].in, true, out,
		    sizeof(out), &e), 0);
		ck_assert_str_eq(out, cases[i].out);
	}
	ck_assert_int_eq(envd_path(&d, &u, "", false, out, sizeof(out), &e), 0);
	ck_assert_str_eq(out, "");
	ck_assert_int_eq(envd_path(&d, &u, "~bob/x", true, out, sizeof(out),
	    &e), -1);
	ck_assert_str_eq(e.code, "invalid_argument");
	ck_assert_int_eq(envd_path(&d, &u, "/0123456789/0123456789/0123456789/"
	    "0123456789/0123456789/0123456789", true, out, sizeof(out), &e), -1);
}
END_TEST

/* /init's workdir is the default cwd; a relative one is in the home. */
START_TEST(paths_init_workdir)
{
	struct envd_err	 e;
	char		 out[64];
	cJSON		*j = cJSON_Parse("{\"defaultWorkdir\":\"proj\"}");

	ck_assert_int_eq(envd_apply_init(&d, j, &e), 0);
	ck_assert_int_eq(envd_path(&d, &u, "", true, out, sizeof(out), &e), 0);
	ck_assert_str_eq(out, "/home/alice/proj");
	ck_assert_int_eq(envd_path(&d, &u, "x", true, out, sizeof(out), &e), 0);
	ck_assert_str_eq(out, "/home/alice/x");
	cJSON_Delete(j);
}
END_TEST

/* The value of name in v, or NULL; and how often the name is there. */
static const char *
env_get(char **v, const char *name, int *count)
{
	const char	*val = NULL;
	size_t		 n = strlen(name), i;

	*count = 0;
	for (i = 0; v[i] != NULL; i++)
		if (strncmp(v[i], name, n) == 0 && v[i][n] == '=') {
			val = v[i] + n + 1;
			(*count)++;
		}
	return val;
}

START_TEST(environ_order)
{
	struct envd_err	 e;
	cJSON		*init = cJSON_Parse("{\"envVars\":{\"A\":\"init\","
	    "\"B\":\"init\",\"HOME\":\"/init\"}}");
	cJSON		*req = cJSON_Parse("{\"B\":\"req\",\"USER\":\"bob\"}");
	char		**v;
	int		  n;

	ck_assert_int_eq(envd_apply_init(&d, init, &e), 0);
	ck_assert_ptr_nonnull(v = envd_environ(&d, &u, req, &e));
	ck_assert_str_eq(v[0], "PATH=/bin:/usr/bin");
	ck_assert_str_eq(env_get(v, "HOME", &n), "/init");
	ck_assert_int_eq(n, 1);
	ck_assert_str_eq(env_get(v, "USER", &n), "bob");
	ck_assert_str_eq(env_get(v, "LOGNAME", &n), "alice");
	ck_assert_str_eq(env_get(v, "A", &n), "init");
	ck_assert_str_eq(env_get(v, "B", &n), "req");
	ck_assert_int_eq(n, 1);
	envd_env_free(v);
	cJSON_Delete(init);
	cJSON_Delete(req);
}
END_TEST

START_TEST(environ_refused)
{
	static const char *const bad[] = {
		"{\"A\":1}", "{\"\":\"x\"}", "{\"A=B\":\"x\"}", "[\"A\"]",
	};
	struct envd_err	 e;
	cJSON		*j;
	size_t		 i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		j = cJSON_Parse(bad[i]);
		ck_assert_ptr_null(envd_environ(&d, &u, j, &e));
		ck_assert_str_eq(e.code, "invalid_argument");
		cJSON_Delete(j);
	}
}
END_TEST

/* A bad field refuses the whole body: nothing of it is applied. */
START_TEST(init_refused_whole)
{
	struct envd_err	 e;
	cJSON		*j = cJSON_Parse("{\"envVars\":{\"A\":\"1\"},"
	    "\"defaultUser\":\"no-such-user-here\"}");
	char		**v;
	int		  n;

	ck_assert_int_eq(envd_apply_init(&d, j, &e), -1);
	ck_assert_str_eq(e.code, "invalid_argument");
	ck_assert_str_eq(d.user, "root");
	v = envd_environ(&d, &u, NULL, &e);
	ck_assert_ptr_null(env_get(v, "A", &n));
	envd_env_free(v);
	cJSON_Delete(j);
	j = cJSON_Parse("{\"envVars\":{\"A\":5}}");
	ck_assert_int_eq(envd_apply_init(&d, j, &e), -1);
	cJSON_Delete(j);
	j = cJSON_Parse("{\"default_user\":\"root\",\"accessToken\":\"x\","
	    "\"env_vars\":{\"C\":\"3\"}}");
	ck_assert_int_eq(envd_apply_init(&d, j, &e), 0);
	v = envd_environ(&d, &u, NULL, &e);
	ck_assert_str_eq(env_get(v, "C", &n), "3");
	envd_env_free(v);
	cJSON_Delete(j);
}
END_TEST

/* An /init body of n vars NAMEi (from first) whose values are len bytes. */
static cJSON *
init_body(int first, int n, size_t len)
{
	cJSON	*j = cJSON_CreateObject(), *vars;
	char	 name[32], *val = malloc(len + 1);
	int	 i;

	ck_assert_ptr_nonnull(val);
	memset(val, 'v', len);
	val[len] = '\0';
	vars = cJSON_AddObjectToObject(j, "envVars");
	for (i = first; i < first + n; i++) {
		(void)snprintf(name, sizeof(name), "V%d", i);
		ck_assert_ptr_nonnull(cJSON_AddStringToObject(vars, name, val));
	}
	free(val);
	return j;
}

static int
init_apply(int first, int n, size_t len, struct envd_err *e)
{
	cJSON	*j = init_body(first, n, len);
	int	 rc = envd_apply_init(&d, j, e);

	cJSON_Delete(j);
	return rc;
}

/*
 * The byte limit holds across calls: one name replaced again and again
 * with a big value is taken, a second big name refused.
 */
START_TEST(init_bytes_in_all)
{
	struct envd_err	e;
	size_t		big = ENVD_INIT_ENV_BYTES * 3 / 4, left;
	int		i;

	for (i = 0; i < 20; i++)
		ck_assert_int_eq(init_apply(0, 1, big - i, &e), 0);
	ck_assert_uint_eq(d.vars_bytes, strlen("V0") + big - 19);
	ck_assert_int_eq(init_apply(1, 1, big, &e), -1);
	ck_assert_str_eq(e.code, "invalid_argument");
	ck_assert_int_eq(d.nvars, 1);
	left = ENVD_INIT_ENV_BYTES - d.vars_bytes - strlen("V1");
	ck_assert_int_eq(init_apply(1, 1, left + 1, &e), -1);
	ck_assert_int_eq(init_apply(1, 1, left, &e), 0);
	ck_assert_uint_eq(d.vars_bytes, ENVD_INIT_ENV_BYTES);
}
END_TEST

/*
 * Entries are counted once per name: the same set re-sent is taken; a
 * set of ENVD_INIT_ENV_MAX still leaves a process its PATH, HOME, USER
 * and LOGNAME; one more is refused.
 */
START_TEST(init_entries_in_all)
{
	struct envd_err	  e;
	char		**v;
	int		  n;

	ck_assert_int_eq(init_apply(0, ENVD_INIT_ENV_MAX, 1, &e), 0);
	ck_assert_int_eq(init_apply(0, ENVD_INIT_ENV_MAX, 2, &e), 0);
	ck_assert_int_eq(d.nvars, ENVD_INIT_ENV_MAX);
	ck_assert_ptr_nonnull(v = envd_environ(&d, &u, NULL, &e));
	ck_assert_str_eq(env_get(v, "LOGNAME", &n), "alice");
	ck_assert_str_eq(env_get(v, "V0", &n), "vv");
	envd_env_free(v);
	ck_assert_int_eq(init_apply(ENVD_INIT_ENV_MAX, 1, 1, &e), -1);
	ck_assert_str_eq(e.code, "invalid_argument");
}
END_TEST

static void *
no_malloc(size_t n)
{
	(void)n;
	return NULL;
}

/* An empty unary body is {}; memory short for it is resource_exhausted. */
START_TEST(unary_body_out_of_memory)
{
	cJSON_Hooks	 fail = { no_malloc, free }, dflt = { NULL, NULL };
	struct http_req	 r;
	struct envd_err	 e = { NULL, "" };
	cJSON		*j;

	memset(&r, 0, sizeof(r));
	ck_assert_ptr_nonnull(j = envd_unary_body(&r, &e));
	ck_assert(cJSON_IsObject(j));
	cJSON_Delete(j);
	cJSON_InitHooks(&fail);
	j = envd_unary_body(&r, &e);
	cJSON_InitHooks(&dflt);
	ck_assert_ptr_null(j);
	ck_assert_ptr_nonnull(e.code);
	ck_assert_str_eq(e.code, "resource_exhausted");
}
END_TEST

START_TEST(users)
{
	struct envd_err		e;
	struct envd_user	r;

	ck_assert_int_eq(envd_user_lookup("root", &r, &e), 0);
	ck_assert_int_eq(r.uid, 0);
	ck_assert_str_eq(r.home, "/root");
	ck_assert_int_eq(envd_user_lookup("0", &r, &e), 0);
	ck_assert_str_eq(r.name, "root");
	ck_assert_int_eq(envd_user_lookup("no-such-user-here", &r, &e), -1);
	ck_assert_str_eq(e.code, "unauthenticated");
	ck_assert_int_eq(envd_user_lookup("0:0", &r, &e), -1);
	ck_assert_int_eq(envd_user_lookup("", &r, &e), -1);
}
END_TEST

Suite *
envd_suite(void)
{
	Suite	*s = suite_create("envd");
	TCase	*tc = tcase_create("context");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, paths);
	tcase_add_test(tc, paths_init_workdir);
	tcase_add_test(tc, environ_order);
	tcase_add_test(tc, environ_refused);
	tcase_add_test(tc, init_refused_whole);
	tcase_add_test(tc, init_bytes_in_all);
	tcase_add_test(tc, init_entries_in_all);
	tcase_add_test(tc, unary_body_out_of_memory);
	tcase_add_test(tc, users);
	suite_add_tcase(s, tc);
	return s;
}
