/*
 * api_errno: the one table of what an errno means to a client, in HTTP
 * (status, tend's code) and in Connect's codes as envd answers.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>

#include "api/api_errno.h"

Suite *api_errno_suite(void);

START_TEST(errno_mapping)
{
	static const struct {
		int		 err, status;
		const char	*code;
		bool		 outside;
	} t[] = {
		{ ENOENT, 404, "not_found", false },
		{ EACCES, 403, "forbidden", false },
		{ EPERM, 403, "forbidden", false },
		{ ELOOP, 403, "forbidden", true },
		{ EEXIST, 409, "conflict", false },
		{ ENOTEMPTY, 409, "conflict", false },
		{ EXDEV, 409, "cross_device", false },
		{ ENOSPC, 507, "no_space", false },
		{ EISDIR, 400, "invalid_request", false },
		{ ENOTDIR, 400, "invalid_request", false },
		{ EINVAL, 400, "invalid_request", false },
		{ EMFILE, 503, "busy", false },
		{ EIO, 500, "internal", false },
	};
	const struct api_errno	*e;
	size_t			i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		e = api_errno(t[i].err);
		ck_assert_int_eq(e->status, t[i].status);
		ck_assert_str_eq(e->code, t[i].code);
		ck_assert(e->outside == t[i].outside);
	}
}
END_TEST

START_TEST(connect_codes)
{
	static const struct {
		int		 err;
		const char	*code;
	} t[] = {
		{ ENOENT, "not_found" },
		{ EEXIST, "already_exists" },
		{ ELOOP, "permission_denied" },
		{ EACCES, "permission_denied" },
		{ EPERM, "permission_denied" },
		{ EROFS, "permission_denied" },
		{ EISDIR, "invalid_argument" },
		{ ENOTDIR, "invalid_argument" },
		{ EINVAL, "invalid_argument" },
		{ ENAMETOOLONG, "invalid_argument" },
		{ ENOTEMPTY, "failed_precondition" },
		{ EBUSY, "failed_precondition" },
		{ EXDEV, "failed_precondition" },
		{ ENOSPC, "resource_exhausted" },
		{ EDQUOT, "resource_exhausted" },
		{ EMFILE, "resource_exhausted" },
		{ ENFILE, "resource_exhausted" },
		{ ENOMEM, "resource_exhausted" },
		{ EAGAIN, "resource_exhausted" },
		{ ETXTBSY, "internal" },
		{ EIO, "internal" },
	};
	size_t	i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_str_eq(api_errno(t[i].err)->connect, t[i].code);
	/* /files' statuses are the same table's: the disk full is 507. */
	ck_assert_int_eq(api_errno(ENOSPC)->status, 507);
	ck_assert_int_eq(api_errno(EDQUOT)->status, 507);
}
END_TEST

Suite *
api_errno_suite(void)
{
	Suite	*s = suite_create("api_errno");
	TCase	*tc;

	tc = tcase_create("table");
	tcase_add_test(tc, errno_mapping);
	tcase_add_test(tc, connect_codes);
	suite_add_tcase(s, tc);
	return s;
}
