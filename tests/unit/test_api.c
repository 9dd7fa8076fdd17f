/*
 * api: the route modules' validators, called alone — the JSON body
 * (UTF-8, one value, no NUL or raw control bytes in strings), every
 * launch field's accepted and refused values (tags' bounds included),
 * exec's own fields, the query checks, and the error values they fill
 * (status, code, field, message) instead of replying.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api.h"
#include "api/api_exec.h"
#include "api/api_output.h"
#include "api/api_proc.h"

Suite *api_suite(void);

/* The error a launch body gets, or status 0 when it is accepted. */
static struct api_err
launch(const char *body, bool exec)
{
	struct proc_opts	 o;
	struct api_err		 e;
	char			**argv, **env;
	cJSON			*j;

	memset(&e, 0, sizeof(e));
	if ((j = api_parse_body(body, strlen(body), &e)) == NULL) {
		ck_assert_int_ne(e.status, 0);
		return e;
	}
	if (api_launch_opts(j, exec, NULL, &o, &argv, &env, &e) == 0)
		e.status = 0;
	api_launch_free(argv, env);
	cJSON_Delete(j);
	return e;
}

static void
refused(const char *body, int status, const char *field)
{
	struct api_err	e = launch(body, false);

	ck_assert_msg(e.status == status, "%s: status %d, not %d", body,
	    e.status, status);
	if (field == NULL)
		ck_assert_ptr_null(e.field);
	else {
		ck_assert_ptr_nonnull(e.field);
		ck_assert_str_eq(e.field, field);
	}
	ck_assert_ptr_nonnull(e.code);
	ck_assert(e.message[0] != '\0');
}

static void
accepted(const char *body)
{
	struct api_err	e = launch(body, false);

	ck_assert_msg(e.status == 0, "%s: refused %d %s", body, e.status,
	    e.message);
}

/* A body and what it gets: status 0 for accepted. */
struct vec {
	const char	*body;
	int		 status;
	const char	*field;
};

static void
check_vecs(const struct vec *v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (v[i].status == 0)
			accepted(v[i].body);
		else
			refused(v[i].body, v[i].status, v[i].field);
}

START_TEST(body_must_be_one_json_value)
{
	struct api_err	 e;
	cJSON		*j;
	static const char nul[] = "{\"argv\":[\"a\0b\"]}";

	ck_assert_ptr_null(api_parse_body("{} {}", 5, &e));
	ck_assert_int_eq(e.status, 400);
	ck_assert_str_eq(e.code, "invalid_request");
	ck_assert_str_eq(e.message, "body is not valid JSON");
	ck_assert_ptr_null(e.field);
	ck_assert_ptr_null(api_parse_body("{\"a\":", 5, &e));
	ck_assert_ptr_null(api_parse_body("\xff{}", 3, &e));
	ck_assert_str_eq(e.message, "body is not valid UTF-8");
	/* A raw control byte, an escaped NUL, a NUL byte in a string. */
	ck_assert_ptr_null(api_parse_body("[\"a\tb\"]", 7, &e));
	ck_assert_str_eq(e.code, "invalid_request");
	ck_assert_ptr_null(api_parse_body("[\"a\\u0000\"]", 11, &e));
	ck_assert_ptr_null(api_parse_body(nul, sizeof(nul) - 1, &e));
	ck_assert_int_eq(e.status, 400);
	/* Escapes of control bytes are fine, and trailing white space. */
	ck_assert_ptr_nonnull(j = api_parse_body("[\"a\\tb\\u0001\"] \n", 16,
	    &e));
	cJSON_Delete(j);
}
END_TEST

START_TEST(argv_vectors)
{
	char	*big;
	size_t	 i, n;

	accepted("{\"argv\":[\"true\"]}");
	accepted("{\"argv\":[\"/bin/echo\",\"\",\"x\"]}");
	refused("[]", 400, "body");
	refused("{}", 400, "argv");
	refused("{\"argv\":[]}", 400, "argv");
	refused("{\"argv\":\"true\"}", 400, "argv");
	refused("{\"argv\":[1]}", 400, "argv");
	refused("{\"argv\":[\"\"]}", 400, "argv");
	n = PROC_MAX_ARGV + 1;
	ck_assert_ptr_nonnull(big = malloc(16 + n * 4));
	strcpy(big, "{\"argv\":[");
	for (i = 0; i < n; i++)
		strcat(big, i ? ",\"a\"" : "\"a\"");
	strcat(big, "]}");
	refused(big, 413, NULL);
	free(big);
}
END_TEST

START_TEST(env_cwd_id_stdin_vectors)
{
	static const struct vec	v[] = {
		{ "{\"argv\":[\"a\"],\"env\":{\"A\":\"1\",\"B\":\"\"}}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"env\":[\"A=1\"]}", 400, "env" },
		{ "{\"argv\":[\"a\"],\"env\":{\"A\":1}}", 400, "env" },
		{ "{\"argv\":[\"a\"],\"env\":{\"\":\"1\"}}", 400, "env" },
		{ "{\"argv\":[\"a\"],\"env\":{\"A=B\":\"1\"}}", 400, "env" },
		{ "{\"argv\":[\"a\"],\"cwd\":\"/tmp\"}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"cwd\":\"\"}", 400, "cwd" },
		{ "{\"argv\":[\"a\"],\"cwd\":7}", 400, "cwd" },
		{ "{\"argv\":[\"a\"],\"id\":\"job-1.x_y\"}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"id\":\"-x\"}", 400, "id" },
		{ "{\"argv\":[\"a\"],\"id\":\"a/b\"}", 400, "id" },
		{ "{\"argv\":[\"a\"],\"stdin\":\"pipe\"}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"stdin\":\"null\"}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"stdin\":\"file\"}", 400, "stdin" },
	};

	check_vecs(v, sizeof(v) / sizeof(v[0]));
	/* exec: stdin is data, not a mode. */
	ck_assert_int_eq(launch("{\"argv\":[\"a\"],\"stdin\":\"aGk=\"}",
	    true).status, 0);
}
END_TEST

START_TEST(times_and_bounds_vectors)
{
	static const struct vec	v[] = {
		{ "{\"argv\":[\"a\"],\"timeout\":1.5,\"killGrace\":0}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"timeout\":0}", 400, "timeout" },
		{ "{\"argv\":[\"a\"],\"timeout\":-1}", 400, "timeout" },
		{ "{\"argv\":[\"a\"],\"timeout\":\"1\"}", 400, "timeout" },
		{ "{\"argv\":[\"a\"],\"timeout\":1e13}", 400, "timeout" },
		{ "{\"argv\":[\"a\"],\"killGrace\":-0.5}", 400, "killGrace" },
		{ "{\"argv\":[\"a\"],\"maxLogBytes\":9007199254740992}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"maxLogBytes\":9007199254740994}", 400, "maxLogBytes" },
		{ "{\"argv\":[\"a\"],\"maxLogBytes\":0}", 400, "maxLogBytes" },
		{ "{\"argv\":[\"a\"],\"maxLogBytes\":1.5}", 400, "maxLogBytes" },
	};

	check_vecs(v, sizeof(v) / sizeof(v[0]));
}
END_TEST

START_TEST(tags_vectors)
{
	char	body[PROC_MAX_TAGS_BYTES + 256];
	int	i, k;

	accepted("{\"argv\":[\"a\"],\"tags\":{\"team\":\"x\",\"empty\":\"\"}}");
	refused("{\"argv\":[\"a\"],\"tags\":[]}", 400, "tags");
	refused("{\"argv\":[\"a\"],\"tags\":{\"a\":1}}", 400, "tags");
	/* PROC_MAX_TAGS entries pass; one more is 413 naming the field. */
	k = snprintf(body, sizeof(body), "{\"argv\":[\"a\"],\"tags\":{");
	for (i = 0; i < PROC_MAX_TAGS; i++)
		k += snprintf(body + k, sizeof(body) - k, "%s\"t%d\":\"v\"",
		    i ? "," : "", i);
	snprintf(body + k, sizeof(body) - k, "}}");
	accepted(body);
	snprintf(body + k, sizeof(body) - k, ",\"one\":\"more\"}}");
	refused(body, 413, "tags");
	/* Names and values over PROC_MAX_TAGS_BYTES in all. */
	k = snprintf(body, sizeof(body), "{\"argv\":[\"a\"],\"tags\":{\"n\":\"");
	memset(body + k, 'v', PROC_MAX_TAGS_BYTES);
	snprintf(body + k + PROC_MAX_TAGS_BYTES, sizeof(body) - k -
	    PROC_MAX_TAGS_BYTES, "\"}}");
	refused(body, 413, "tags");
	body[k + PROC_MAX_TAGS_BYTES - 1] = '"';
	snprintf(body + k + PROC_MAX_TAGS_BYTES, 4, "}}");
	accepted(body);
}
END_TEST

START_TEST(user_vectors)
{
	struct proc_opts	 o;
	struct api_err		 e;
	char			**argv, **env;
	cJSON			*j;

	accepted("{\"argv\":[\"a\"],\"user\":0}");
	accepted("{\"argv\":[\"a\"],\"user\":\"0\"}");
	accepted("{\"argv\":[\"a\"],\"user\":\"root\"}");
	refused("{\"argv\":[\"a\"],\"user\":\"\"}", 400, "user");
	refused("{\"argv\":[\"a\"],\"user\":-1}", 400, "user");
	refused("{\"argv\":[\"a\"],\"user\":4294967295}", 400, "user");
	refused("{\"argv\":[\"a\"],\"user\":true}", 400, "user");
	refused("{\"argv\":[\"a\"],\"user\":\"no-such-user-here\"}", 400,
	    "user");
	j = cJSON_Parse("{\"argv\":[\"a\"],\"user\":\"root\"}");
	ck_assert_int_eq(api_launch_opts(j, false, NULL, &o, &argv, &env, &e), 0);
	ck_assert(o.has_user);
	ck_assert_int_eq(o.uid, 0);
	ck_assert_str_eq(o.user, "root");
	api_launch_free(argv, env);
	/* Named: it wins over the default. */
	ck_assert_int_eq(api_launch_opts(j, false, "12345:1", &o, &argv, &env,
	    &e), 0);
	ck_assert_int_eq(o.uid, 0);
	api_launch_free(argv, env);
	cJSON_Delete(j);
	/* uid:gid with no passwd entry; the default when none is named. */
	j = cJSON_Parse("{\"argv\":[\"a\"]}");
	ck_assert_int_eq(api_launch_opts(j, false, "4000000:4000001", &o, &argv,
	    &env, &e), 0);
	ck_assert(o.has_user);
	ck_assert_int_eq(o.uid, 4000000);
	ck_assert_int_eq(o.gid, 4000001);
	ck_assert_ptr_null(o.user);
	api_launch_free(argv, env);
	ck_assert_int_eq(api_launch_opts(j, false, NULL, &o, &argv, &env, &e), 0);
	ck_assert(!o.has_user);
	api_launch_free(argv, env);
	cJSON_Delete(j);
}
END_TEST

START_TEST(confine_vectors)
{
	static const struct vec v[] = {
		{ "{\"argv\":[\"a\"],\"user\":\"4000000\"}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"user\":\"4000000:0\"}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"user\":\"1:\"}", 400, "user" },
		{ "{\"argv\":[\"a\"],\"user\":\":1\"}", 400, "user" },
		{ "{\"argv\":[\"a\"],\"user\":\"1:2:3\"}", 400, "user" },
		{ "{\"argv\":[\"a\"],\"user\":\"1:-2\"}", 400, "user" },
		{ "{\"argv\":[\"a\"],\"user\":\"4294967295\"}", 400, "user" },
		{ "{\"argv\":[\"a\"],\"user\":\"99999999999999999999\"}", 400,
		    "user" },
		{ "{\"argv\":[\"a\"],\"noNewPrivs\":true}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"noNewPrivs\":false}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"noNewPrivs\":1}", 400, "noNewPrivs" },
		{ "{\"argv\":[\"a\"],\"seccomp\":\"default\"}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"seccomp\":\"Default\"}", 400, "seccomp" },
		{ "{\"argv\":[\"a\"],\"seccomp\":null}", 400, "seccomp" },
		{ "{\"argv\":[\"a\"],\"network\":\"none\"}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"network\":\"host\"}", 400, "network" },
		{ "{\"argv\":[\"a\"],\"rlimits\":{}}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"rlimits\":{\"nofile\":0,\"nproc\":1,"
		    "\"as\":9007199254740992,\"cpu\":2,\"fsize\":3}}", 0, NULL },
		{ "{\"argv\":[\"a\"],\"rlimits\":[1]}", 400, "rlimits" },
		{ "{\"argv\":[\"a\"],\"rlimits\":{\"core\":1}}", 400, "rlimits" },
		{ "{\"argv\":[\"a\"],\"rlimits\":{\"cpu\":-1}}", 400, "rlimits" },
		{ "{\"argv\":[\"a\"],\"rlimits\":{\"cpu\":0.5}}", 400, "rlimits" },
		{ "{\"argv\":[\"a\"],\"rlimits\":{\"as\":1e300}}", 400,
		    "rlimits" },
	};
	struct api_confine	 c;
	struct api_err		 e;
	cJSON			*j;

	check_vecs(v, sizeof(v) / sizeof(v[0]));
	j = cJSON_Parse("{\"seccomp\":\"default\",\"network\":\"none\","
	    "\"noNewPrivs\":true,\"rlimits\":{\"fsize\":10}}");
	ck_assert_int_eq(api_confine_opts(j, NULL, &c, &e), 0);
	ck_assert(c.sc.seccomp && c.sc.nonet && c.sc.nonewprivs);
	ck_assert(!c.has_user);
	ck_assert(c.sc.has_rlim[SPAWN_RLIM_FSIZE]);
	ck_assert(!c.sc.has_rlim[SPAWN_RLIM_CPU]);
	ck_assert_int_eq(c.sc.rlim[SPAWN_RLIM_FSIZE], 10);
	cJSON_Delete(j);
}
END_TEST

START_TEST(exec_fields)
{
	struct api_err	 e;
	struct buf	 in = { 0 };
	uint64_t	 max;
	cJSON		*j;

	j = cJSON_Parse("{\"stdin\":\"aGk=\",\"maxOutputBytes\":1e14}");
	ck_assert_int_eq(api_exec_opts(j, &in, &max, &e), 0);
	ck_assert_uint_eq(in.len, 2);
	ck_assert_uint_eq(max, EXEC_MAX_OUTPUT_CAP);
	cJSON_Delete(j);
	buf_free(&in);
	j = cJSON_Parse("{\"stdin\":\"not base64!\"}");
	ck_assert_int_eq(api_exec_opts(j, &in, &max, &e), -1);
	ck_assert_str_eq(e.field, "stdin");
	cJSON_Delete(j);
	buf_free(&in);
	j = cJSON_Parse("{\"maxOutputBytes\":-1}");
	ck_assert_int_eq(api_exec_opts(j, &in, &max, &e), -1);
	ck_assert_str_eq(e.field, "maxOutputBytes");
	ck_assert_int_eq(e.status, 400);
	cJSON_Delete(j);
	j = cJSON_Parse("{}");
	ck_assert_int_eq(api_exec_opts(j, &in, &max, &e), 0);
	ck_assert_uint_eq(max, EXEC_MAX_OUTPUT);
	cJSON_Delete(j);
}
END_TEST

static struct http_req
req(char *query)
{
	struct http_req	r;

	memset(&r, 0, sizeof(r));
	r.query = query;
	return r;
}

START_TEST(query_checks)
{
	struct api_err	 e;
	struct http_req	 r;
	const char	*since;
	char		 q[64], want[16];
	char		 bad_flag[] = "force=maybe", ok_flag[] = "force=true";
	char		 st[] = "state=exited", st_bad[] = "state=zombie";
	char		 raw[] = "follow=1&offset=12", raw_bad[] = "offset=-1";
	char		 lim0[] = "limitBytes=0", limbig[] = "limitBytes=1e9",
			 limcap[] = "limitBytes=999999999999";
	char		 sq[] = "since=12-abcdef01&replay=no";
	char		 to[] = "timeout=1000000000001";
	int		 v, follow, replay;
	uint64_t	 u;

	r = req(ok_flag);
	ck_assert_int_eq(api_query_flag(&r, "force", 0, &v, &e), 0);
	ck_assert_int_eq(v, 1);
	r = req(bad_flag);
	ck_assert_int_eq(api_query_flag(&r, "force", 0, &v, &e), -1);
	ck_assert_int_eq(e.status, 400);
	ck_assert_str_eq(e.field, "force");
	ck_assert_str_eq(e.message, "force: must be 1, true, 0 or false");
	r = req(st);
	ck_assert_int_eq(api_proc_state_query(&r, want, &e), 0);
	ck_assert_str_eq(want, "exited");
	r = req(st_bad);
	ck_assert_int_eq(api_proc_state_query(&r, want, &e), -1);
	ck_assert_str_eq(e.field, "state");
	r = req(to);
	ck_assert_int_eq(api_proc_timeout_query(&r, &u, &e), -1);
	ck_assert_str_eq(e.field, "timeout");
	r = req(raw);
	ck_assert_int_eq(api_output_raw_query(&r, &follow, &u, &e), 0);
	ck_assert_int_eq(follow, 1);
	ck_assert_uint_eq(u, 12);
	r = req(raw_bad);
	ck_assert_int_eq(api_output_raw_query(&r, &follow, &u, &e), -1);
	ck_assert_ptr_null(e.field);
	ck_assert_str_eq(e.message, "offset: must be a non-negative integer");
	r = req(lim0);
	ck_assert_int_eq(api_output_limit_query(&r, &u, &e), -1);
	r = req(limbig);
	ck_assert_int_eq(api_output_limit_query(&r, &u, &e), -1);
	r = req(limcap);
	ck_assert_int_eq(api_output_limit_query(&r, &u, &e), 0);
	ck_assert_uint_eq(u, LOGS_JSON_LIMIT_CAP);
	r = req(sq);
	ck_assert_int_eq(api_output_since_query(&r, &replay, &follow, &since,
	    q, sizeof(q), &e), -1);
	ck_assert_str_eq(e.message,
	    "replay and follow take true, false, 1 or 0");
}
END_TEST

static void *
no_malloc(size_t n)
{
	(void)n;
	return NULL;
}

/*
 * The bridge's exit_code of a reaped process, as a shell says it: the
 * code, 128 + N for signal N, 124 for a timeout; memory short for JSON
 * does not change it (it reads the exit, not a JSON built from it).
 */
START_TEST(bridge_exit_code)
{
	cJSON_Hooks	 fail = { no_malloc, free }, dflt = { NULL, NULL };
	struct proc	 p;

	memset(&p, 0, sizeof(p));
	p.job.reaped = true;
	p.job.exit.code = 3;
	ck_assert_int_eq(api_output_bridge_code(&p), 3);
	cJSON_InitHooks(&fail);
	ck_assert_int_eq(api_output_bridge_code(&p), 3);
	cJSON_InitHooks(&dflt);
	p.job.exit.signal = 9;
	p.job.exit.code = 137;
	ck_assert_int_eq(api_output_bridge_code(&p), 137);
	p.job.exit.timed_out = true;
	ck_assert_int_eq(api_output_bridge_code(&p), 124);
}
END_TEST

START_TEST(error_values)
{
	struct api_err	e;
	char		long_field[API_ERR_MSG_MAX * 2];

	api_err_invalid(&e, "cwd", "must be a non-empty string");
	ck_assert_int_eq(e.status, 400);
	ck_assert_str_eq(e.code, "invalid_request");
	ck_assert_str_eq(e.field, "cwd");
	ck_assert_str_eq(e.message, "cwd: must be a non-empty string");
	api_err_nomem(&e);
	ck_assert_int_eq(e.status, 503);
	ck_assert_str_eq(e.code, "busy");
	ck_assert_ptr_null(e.field);
	/* A long message is cut, never overrun. */
	memset(long_field, 'f', sizeof(long_field) - 1);
	long_field[sizeof(long_field) - 1] = '\0';
	api_err_invalid(&e, long_field, "x");
	ck_assert_uint_eq(strlen(e.message), API_ERR_MSG_MAX - 1);
}
END_TEST

Suite *
api_suite(void)
{
	Suite	*s = suite_create("api");
	TCase	*tc = tcase_create("validators");

	tcase_add_test(tc, body_must_be_one_json_value);
	tcase_add_test(tc, argv_vectors);
	tcase_add_test(tc, env_cwd_id_stdin_vectors);
	tcase_add_test(tc, times_and_bounds_vectors);
	tcase_add_test(tc, tags_vectors);
	tcase_add_test(tc, user_vectors);
	tcase_add_test(tc, confine_vectors);
	tcase_add_test(tc, exec_fields);
	tcase_add_test(tc, query_checks);
	tcase_add_test(tc, error_values);
	tcase_add_test(tc, bridge_exit_code);
	suite_add_tcase(s, tc);
	return s;
}
