/*
 * The one check runner for every lib/ module's suite.
 * CK_FORK=no to debug a test under gdb.
 */
#include <check.h>
#include <stdlib.h>

#include "suites.h"

#define X(name) Suite *name##_suite(void);
TEND_SUITES
#undef X

int
main(void)
{
	SRunner	*sr;
	int	 failed;

	sr = srunner_create(NULL);
#define X(name) srunner_add_suite(sr, name##_suite());
	TEND_SUITES
#undef X
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
