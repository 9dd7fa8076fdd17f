/*
 * opt: a program's options as a table of rows, bgpctl's habit.  A row
 * names an option (long name, short letter, its argument's name), says
 * what kind of value it takes and where the value goes (offsetof into the
 * program's options struct), and carries its help.  getopt_long's tables
 * and the help text are both made from the rows, and every value goes
 * through the one parser of its kind, so help, parsing and checking
 * cannot drift apart between `tend agent`, `tend shim` and the CLI.
 *
 * The program keeps its own loop over getopt_long (each has its own
 * messages for an unknown option and its own help around the rows):
 *
 *	opt_getopt(&g, tabs, ntabs, flags);
 *	while ((ch = getopt_long(argc, argv, g.so, g.lo, NULL)) != -1) {
 *		if ((o = opt_row(&g, ch)) == NULL) ... unknown, or no argument
 *		if (o->kind == OPT_ACTION) ... help, and the like
 *		else if (opt_set(o, &opts, optarg, &msg) != 0) ...
 *	}
 */
#ifndef TEND_OPT_H
#define TEND_OPT_H

#include <getopt.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tunables.h"

enum opt_kind {
	OPT_FLAG,	/* int = val, or 1 when val is 0 */
	OPT_STR,	/* const char * = the argument, as given */
	OPT_INT,	/* int: a decimal count in [min, max] */
	OPT_INT64,	/* int64_t: a decimal count in [min, max] */
	OPT_SECONDS,	/* double: seconds, fractions allowed */
	OPT_MS,		/* int64_t: seconds, fractions allowed, as ms */
	OPT_FUNC,	/* the row's set function decides */
	OPT_ACTION,	/* the caller acts at once (help): nothing is set */
};

struct opt;

struct buf;

/*
 * An OPT_FUNC row's own parser: base is the whole options struct.  0, or
 * -1 with the message appended to err (a bad value: a usage error), or
 * -2 when it failed for want of memory.
 */
typedef int	opt_set_fn(const struct opt *, void *base, const char *arg,
		    struct buf *err);

struct opt {
	const char	*name;		/* long name */
	int		 letter;	/* short letter, or 0 */
	const char	*arg;		/* the argument's name; NULL: a flag */
	enum opt_kind	 kind;
	size_t		 off;		/* offsetof the value in the struct */
	/*
	 * OPT_INT, OPT_INT64: the range.  OPT_SECONDS, OPT_MS: min 0 takes
	 * zero, min 1 wants more than zero; at most OPT_SECONDS_MAX.
	 */
	int64_t		 min, max;
	int		 val;		/* OPT_FLAG, OPT_FUNC, OPT_ACTION: its own */
	opt_set_fn	*set;		/* OPT_FUNC */
	/*
	 * A bad value's message: "bad --NAME 'ARG': want"; NULL: "--NAME:
	 * invalid value 'ARG'".
	 */
	const char	*want;
	const char	*help;		/* lines split by '\n'; NULL: hidden */
};

/* The end of a table. */
#define OPT_END		{ .name = NULL }

#define OPT_ORDERED	0x1	/* options end at the first argument */
#define OPT_QUIET	0x2	/* ':' leads: a missing argument is ':' */

/* getopt_long's tables, made from rows; val of a long option: its row. */
struct opt_getopt {
	struct option		 lo[OPT_MAX + 1];
	char			 so[OPT_MAX * 2 + 3];
	const struct opt	*row[OPT_MAX];
	int			 n;
};

void	opt_getopt(struct opt_getopt *, const struct opt *const *, int, int);
const struct opt *opt_row(const struct opt_getopt *, int);
int	opt_set(const struct opt *, void *, const char *, struct buf *);
void	opt_help(FILE *, const struct opt *, int);
int64_t	opt_count(const char *);
int	opt_seconds(const char *, double *);

#endif
