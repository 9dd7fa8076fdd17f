/*
 * api_bridge: the /v1/sandbox/{sandboxId} rewrite alone, on paths
 * as the server hands them over (query removed, in a buffer of its own),
 * and the sandbox's lifecycle state as the map moves it.
 * What the server does with the result is test_http's (route_namespace).
 */
#include <check.h>
#include <stdbool.h>
#include <string.h>

#include "api/bridge/api_bridge.h"

Suite *api_bridge_suite(void);

/* Rewrite path in a buffer of its own: where it lies; *out the result. */
static enum api_bridge_ns
map(const char *path, char *b, size_t n, char **out)
{
	ck_assert_uint_lt(strlen(path), n);
	strcpy(b, path);
	*out = b;
	return api_bridge_rewrite(out);
}

START_TEST(prefix_routed_as_api)
{
	static const char *const cases[][2] = {
		{ "/v1/sandbox/sb-1/processes/abc", "/v1/processes/abc" },
		{ "/v1/sandbox/x/echo/1/x/2", "/v1/echo/1/x/2" },
		{ "/v1/sandbox/a-much-longer-sandbox-id/files/f",
		  "/v1/files/f" },
		{ "/v1/sandbox/s/processes/k1/kill", "/v1/processes/k1/kill" },
		{ "/v1/sandbox/A.b_c-9/running", "/v1/running" },
		/* No path after the ID: the API's "/v1", which has no route. */
		{ "/v1/sandbox/sb", "/v1" },
		{ "/v1/sandbox/sb/hello", "/v1/hello" },
	};
	char	b[128], *p;
	size_t	i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_msg(map(cases[i][0], b, sizeof(b), &p) ==
		    API_BRIDGE_IN, "%s: not mapped", cases[i][0]);
		ck_assert_str_eq(p, cases[i][1]);
		/* In place and never longer, as http_map_fn requires. */
		ck_assert(p >= b && p + strlen(p) == b + strlen(cases[i][0]));
	}
}
END_TEST

START_TEST(outside_untouched)
{
	static const char *const paths[] = {
		"/v1/processes/abc", "/v1/sandbox", "/v1/sandboxes/x/processes",
		"/v2/sandbox/x/processes", "/", "",
	};
	char	b[128], *p;
	size_t	i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		ck_assert_msg(map(paths[i], b, sizeof(b), &p) ==
		    API_BRIDGE_OUTSIDE, "%s", paths[i]);
		ck_assert_ptr_eq(p, b);
		ck_assert_str_eq(p, paths[i]);
	}
}
END_TEST

/* A bad ID, whatever follows it, is routed as the 400's path. */
START_TEST(bad_id_routed_to_400)
{
	static const char *const paths[] = {
		"/v1/sandbox//processes/p", "/v1/sandbox/", "/v1/sandbox/a;b",
		"/v1/sandbox/a%20b/exec", "/v1/sandbox/$(id)/running",
		"/v1/sandbox/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
		"aaaaaaaaaaaaaaaaa/running",		/* 129 */
	};
	char	b[256], *p;
	size_t	i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		ck_assert_msg(map(paths[i], b, sizeof(b), &p) ==
		    API_BRIDGE_BAD_ID, "%s", paths[i]);
		ck_assert_str_eq(p, API_BRIDGE_BAD_PATH);
	}
	/* 128 is the longest. */
	memset(b, 'a', 128);
	b[128] = '\0';
	ck_assert(api_bridge_id_valid(b, 128));
	ck_assert(!api_bridge_id_valid(b, 0));
}
END_TEST

/* A DELETED sandbox: only a path that uses it revives it (FREE). */
START_TEST(deleted_revived_by_use)
{
	static const struct {
		const char	*path;
		bool		 revives;
	} cases[] = {
		{ "/v1/sandbox/sb/running", false },	/* asking */
		{ "/v1/sandbox/sb", false },		/* DELETE again */
		{ "/v1/sandbox/a;b/exec", false },	/* a bad ID: 400 */
		{ "/v1/processes", false },		/* not the bridge's */
		{ "/v1/sandbox", false },		/* POST: its handler's */
		{ "/v1/sandbox/sb/running/x", true },
		{ "/v1/sandbox/sb/exec", true },
		{ "/v1/sandbox/other/file/workspace/a", true },
	};
	char	b[128], *p;
	size_t	i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		api_bridge_set_life(API_BRIDGE_DELETED);
		strcpy(b, cases[i].path);
		p = b;
		(void)api_bridge_map(&p);
		ck_assert_msg(api_bridge_life() == (cases[i].revives ?
		    API_BRIDGE_FREE : API_BRIDGE_DELETED), "%s", cases[i].path);
	}
	/* A CREATED one stays so: only POST and DELETE change it. */
	api_bridge_set_life(API_BRIDGE_CREATED);
	strcpy(b, "/v1/sandbox/sb/exec");
	p = b;
	ck_assert(api_bridge_map(&p));
	ck_assert_int_eq(api_bridge_life(), API_BRIDGE_CREATED);
	api_bridge_set_life(API_BRIDGE_FREE);
}
END_TEST

Suite *
api_bridge_suite(void)
{
	Suite	*s = suite_create("api_bridge");
	TCase	*tc = tcase_create("map");

	tcase_add_test(tc, prefix_routed_as_api);
	tcase_add_test(tc, outside_untouched);
	tcase_add_test(tc, bad_id_routed_to_400);
	tcase_add_test(tc, deleted_revived_by_use);
	suite_add_tcase(s, tc);
	return s;
}
