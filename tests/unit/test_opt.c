/*
 * opt: option rows made into getopt_long's tables and into help, and each
 * kind's parser: strict counts and ranges, seconds and their rounding to
 * milliseconds, a set function's verdicts passed on, hidden rows.
 */
#include <check.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/opt.h"

Suite *opt_suite(void);

struct opts {
	int		 flag;
	int		 level;
	const char	*str;
	int		 n;
	int64_t		 big;
	double		 secs;
	int64_t		 ms;
	int		 calls;
};

#define OFF(f)	offsetof(struct opts, f)

/* OPT_FUNC: "oom" runs out of memory, "bad" is refused, the rest counts. */
static int
set_fn(const struct opt *o, void *base, const char *arg, struct buf *err)
{
	struct opts	*x = base;

	if (strcmp(arg, "oom") == 0)
		return -2;
	if (strcmp(arg, "bad") == 0) {
		(void)buf_printf(err, "--%s: no '%s' here", o->name, arg);
		return -1;
	}
	x->calls += o->val;
	return 0;
}

static const struct opt rows[] = {
	{ "flag", 'f', NULL, OPT_FLAG, OFF(flag), .help = "a flag" },
	{ "level", 0, NULL, OPT_FLAG, OFF(level), .val = 32,
	    .help = "sets 32" },
	{ "str", 's', "S", OPT_STR, OFF(str), .help = "two\nlines" },
	{ "n", 0, "N", OPT_INT, OFF(n), 1, 10, .want = "want 1 to 10",
	    .help = "a count" },
	{ "big", 0, "N", OPT_INT64, OFF(big), 0, INT64_MAX, .help = "big" },
	{ "secs", 0, "S", OPT_SECONDS, OFF(secs), 1, 0, .help = "> 0" },
	{ "ms", 'm', "S", OPT_MS, OFF(ms), 0, 0, .want = "want seconds",
	    .help = "ms" },
	{ "fn", 0, "X", OPT_FUNC, .set = set_fn, .val = 2, .help = "fn" },
	{ "hidden", 0, NULL, OPT_ACTION, .val = 7 },
	OPT_END
};

static const struct opt more[] = {
	{ "help", 'h', NULL, OPT_ACTION, .val = 1, .help = "this text" },
	OPT_END
};

/* Set row name of rows to arg: opt_set's verdict, and err as a string. */
static int
set(struct opts *x, const char *name, const char *arg, char *msg, size_t n)
{
	const struct opt	*o;
	struct buf		 err = { 0 };
	int			 rv;

	for (o = rows; o->name != NULL; o++)
		if (strcmp(o->name, name) == 0)
			break;
	ck_assert_ptr_nonnull(o->name);
	rv = opt_set(o, x, arg, &err);
	snprintf(msg, n, "%.*s", (int)buf_avail(&err), buf_avail(&err) ?
	    buf_head(&err) : "");
	buf_free(&err);
	return rv;
}

START_TEST(tables_from_rows)
{
	const struct opt *const	 tabs[2] = { rows, more };
	struct opt_getopt	 g;
	int			 i;

	opt_getopt(&g, tabs, 2, OPT_ORDERED | OPT_QUIET);
	ck_assert_str_eq(g.so, "+:fs:m:h");
	ck_assert_int_eq(g.n, 10);
	for (i = 0; i < g.n; i++) {
		ck_assert_ptr_eq(opt_row(&g, g.lo[i].val), g.row[i]);
		ck_assert_str_eq(g.lo[i].name, g.row[i]->name);
		ck_assert_int_eq(g.lo[i].has_arg, g.row[i]->arg ?
		    required_argument : no_argument);
	}
	ck_assert_ptr_null(g.lo[g.n].name);
	ck_assert_str_eq(opt_row(&g, 'f')->name, "flag");
	ck_assert_str_eq(opt_row(&g, 'h')->name, "help");
	ck_assert_ptr_null(opt_row(&g, '?'));
	ck_assert_ptr_null(opt_row(&g, ':'));
	ck_assert_ptr_null(opt_row(&g, 'x'));

	opt_getopt(&g, tabs, 1, 0);
	ck_assert_str_eq(g.so, "fs:m:");
}
END_TEST

/* getopt_long over the tables: a long val and a short letter alike. */
START_TEST(getopt_finds_rows)
{
	const struct opt *const	 tabs[1] = { rows };
	char			*argv[] = { "t", "--str=a", "-f", "--n", "3",
				    "-m1.5", "--", "-x", NULL };
	const struct opt	*o;
	struct opt_getopt	 g;
	struct opts		 x = { 0 };
	struct buf		 err = { 0 };
	int			 ch;

	opt_getopt(&g, tabs, 1, OPT_ORDERED | OPT_QUIET);
	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(8, argv, g.so, g.lo, NULL)) != -1) {
		ck_assert_ptr_nonnull(o = opt_row(&g, ch));
		ck_assert_int_eq(opt_set(o, &x, optarg, &err), 0);
	}
	ck_assert_int_eq(optind, 7);
	ck_assert_str_eq(x.str, "a");
	ck_assert_int_eq(x.flag, 1);
	ck_assert_int_eq(x.n, 3);
	ck_assert_int_eq(x.ms, 1500);
	buf_free(&err);
}
END_TEST

START_TEST(flags_and_strings)
{
	struct opts	x = { 0 };
	char		msg[128];

	ck_assert_int_eq(set(&x, "flag", NULL, msg, sizeof(msg)), 0);
	ck_assert_int_eq(x.flag, 1);
	ck_assert_int_eq(set(&x, "level", NULL, msg, sizeof(msg)), 0);
	ck_assert_int_eq(x.level, 32);
	ck_assert_int_eq(set(&x, "str", "", msg, sizeof(msg)), 0);
	ck_assert_str_eq(x.str, "");
}
END_TEST

static const struct {
	const char	*arg;
	int		 ok;
	int		 n;
} counts[] = {
	{ "1", 1, 1 },
	{ "10", 1, 10 },
	{ "010", 1, 10 },
	{ "0", 0, 0 },
	{ "11", 0, 0 },
	{ "", 0, 0 },
	{ "+5", 0, 0 },
	{ " 5", 0, 0 },
	{ "5 ", 0, 0 },
	{ "-1", 0, 0 },
	{ "-0", 0, 0 },
	{ "5k", 0, 0 },
	{ "0x5", 0, 0 },
	{ "99999999999999999999", 0, 0 },
};

START_TEST(counts_strict_in_range)
{
	struct opts	x = { .n = -7 };
	char		msg[128], want[128];
	int		rv;

	rv = set(&x, "n", counts[_i].arg, msg, sizeof(msg));
	if (counts[_i].ok) {
		ck_assert_int_eq(rv, 0);
		ck_assert_int_eq(x.n, counts[_i].n);
		ck_assert_str_eq(msg, "");
	} else {
		ck_assert_int_eq(rv, -1);
		ck_assert_int_eq(x.n, -7);	/* untouched */
		snprintf(want, sizeof(want), "bad --n '%s': want 1 to 10",
		    counts[_i].arg);
		ck_assert_str_eq(msg, want);
	}
}
END_TEST

START_TEST(counts_64_bits)
{
	struct opts	x = { 0 };
	char		msg[128];

	ck_assert_int_eq(set(&x, "big", "9223372036854775807", msg,
	    sizeof(msg)), 0);
	ck_assert(x.big == INT64_MAX);
	ck_assert_int_eq(set(&x, "big", "9223372036854775808", msg,
	    sizeof(msg)), -1);
	/* No want: the agent's shape of message. */
	ck_assert_str_eq(msg, "--big: invalid value '9223372036854775808'");
	ck_assert_int_eq(set(&x, "big", "0", msg, sizeof(msg)), 0);
	ck_assert(x.big == 0);
}
END_TEST

START_TEST(seconds_and_ms)
{
	static const char *const bad[] = {
		"", "x", "1x", "-1", "nan", "inf", "-inf", "1e400", "1e-400",
		"1e13", " ",
	};
	struct opts	x = { 0 };
	char		msg[128];
	size_t		i;

	ck_assert_int_eq(set(&x, "ms", "1.5", msg, sizeof(msg)), 0);
	ck_assert(x.ms == 1500);
	ck_assert_int_eq(set(&x, "ms", "0", msg, sizeof(msg)), 0);
	ck_assert(x.ms == 0);
	/* A positive duration is never rounded to none. */
	ck_assert_int_eq(set(&x, "ms", "0.0001", msg, sizeof(msg)), 0);
	ck_assert(x.ms == 1);
	ck_assert_int_eq(set(&x, "ms", "0.0005", msg, sizeof(msg)), 0);
	ck_assert(x.ms == 1);
	ck_assert_int_eq(set(&x, "ms", "0.0016", msg, sizeof(msg)), 0);
	ck_assert(x.ms == 2);
	ck_assert_int_eq(set(&x, "ms", "1e12", msg, sizeof(msg)), 0);
	ck_assert(x.ms == 1000000000000000LL);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		x.ms = -7;
		ck_assert_int_eq(set(&x, "ms", bad[i], msg, sizeof(msg)), -1);
		ck_assert(x.ms == -7);
		ck_assert_ptr_nonnull(strstr(msg, "': want seconds"));
	}
	/* min 1: more than zero, a fraction of a millisecond too. */
	ck_assert_int_eq(set(&x, "secs", "0", msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "--secs: invalid value '0'");
	ck_assert_int_eq(set(&x, "secs", "-0", msg, sizeof(msg)), -1);
	ck_assert_int_eq(set(&x, "secs", "0.00001", msg, sizeof(msg)), 0);
	ck_assert(x.secs == 0.00001);
}
END_TEST

START_TEST(set_function_verdicts)
{
	struct opts	x = { 0 };
	char		msg[128];

	ck_assert_int_eq(set(&x, "fn", "a", msg, sizeof(msg)), 0);
	ck_assert_int_eq(x.calls, 2);		/* the row's val */
	ck_assert_int_eq(set(&x, "fn", "bad", msg, sizeof(msg)), -1);
	ck_assert_str_eq(msg, "--fn: no 'bad' here");
	ck_assert_int_eq(set(&x, "fn", "oom", msg, sizeof(msg)), -2);
	ck_assert_str_eq(msg, "");
	/* An action sets nothing. */
	ck_assert_int_eq(set(&x, "hidden", NULL, msg, sizeof(msg)), 0);
	ck_assert_int_eq(x.calls, 2);
}
END_TEST

/* A message holds all of a long argument: nothing is cut. */
START_TEST(long_argument_whole)
{
	struct opts	 x = { 0 };
	struct buf	 err = { 0 };
	char		*arg;

	ck_assert_ptr_nonnull(arg = malloc(100001));
	memset(arg, '9', 100000);
	arg[100000] = '\0';
	ck_assert_int_eq(opt_set(&rows[3], &x, arg, &err), -1);
	ck_assert_uint_eq(buf_avail(&err), strlen("bad --n '': want 1 to 10")
	    + 100000);
	buf_free(&err);
	free(arg);
}
END_TEST

START_TEST(help_from_rows)
{
	char	*s = NULL;
	size_t	 n = 0;
	FILE	*f;

	ck_assert_ptr_nonnull(f = open_memstream(&s, &n));
	opt_help(f, rows, 12);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_str_eq(s,
	    "  -f, --flag   a flag\n"
	    "      --level  sets 32\n"
	    "  -s, --str S  two\n"
	    "               lines\n"
	    "      --n N    a count\n"
	    "      --big N  big\n"
	    "      --secs S > 0\n"
	    "  -m, --ms S   ms\n"
	    "      --fn X   fn\n");	/* --hidden is not listed */
	free(s);
}
END_TEST

Suite *
opt_suite(void)
{
	Suite	*s = suite_create("opt");
	TCase	*tc;

	tc = tcase_create("tables");
	tcase_add_test(tc, tables_from_rows);
	tcase_add_test(tc, getopt_finds_rows);
	tcase_add_test(tc, help_from_rows);
	suite_add_tcase(s, tc);

	tc = tcase_create("values");
	tcase_add_test(tc, flags_and_strings);
	tcase_add_loop_test(tc, counts_strict_in_range, 0,
	    sizeof(counts) / sizeof(counts[0]));
	tcase_add_test(tc, counts_64_bits);
	tcase_add_test(tc, seconds_and_ms);
	tcase_add_test(tc, set_function_verdicts);
	tcase_add_test(tc, long_argument_whole);
	suite_add_tcase(s, tc);
	return s;
}
