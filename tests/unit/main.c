/*
 * The check runner of one suite: the Makefile builds this file once per
 * suite with -DSUITE=name, into build/unit-name, linked with that module
 * and its dependencies only.  Its last line is the suite's summary,
 * skipped tests counted apart (see tu_skip).  Exit 0 when nothing failed.
 * CK_FORK=no to debug a test under gdb; CK_RUN_CASE=name for one tcase.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "testutil.h"

#ifndef SUITE
#error "build with -DSUITE=name (see the Makefile)"
#endif
#define SUITE_FN_(s)	s##_suite
#define SUITE_FN(s)	SUITE_FN_(s)
#define STR_(s)		#s
#define STR(s)		STR_(s)

Suite	*SUITE_FN(SUITE)(void);

static void	print_failures(SRunner *);

int
main(void)
{
	SRunner	*sr;
	int	 run, failed;

	tu_runner_init(STR(SUITE));
	sr = srunner_create(SUITE_FN(SUITE)());
	srunner_run_all(sr, CK_SILENT);
	print_failures(sr);
	run = srunner_ntests_run(sr);
	failed = srunner_ntests_failed(sr);
	printf("%s: %d%%: Checks: %d, Failures: %d, Skipped: %d\n",
	    STR(SUITE), run ? 100 * (run - failed) / run : 0, run, failed,
	    tu_skipped());
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* As check's CK_NORMAL prints them: file:line:kind:tcase: message. */
static void
print_failures(SRunner *sr)
{
	TestResult	**tr;
	int		  i, n;

	n = srunner_ntests_failed(sr);
	if ((tr = srunner_failures(sr)) == NULL)
		return;
	for (i = 0; i < n; i++)
		printf("%s:%d:%c:%s: %s\n", tr_lfile(tr[i]), tr_lno(tr[i]),
		    tr_rtype(tr[i]) == CK_ERROR ? 'E' : 'F',
		    tr_tcname(tr[i]), tr_msg(tr[i]));
	free(tr);
}
