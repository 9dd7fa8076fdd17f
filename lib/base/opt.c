/*
 * opt.c: option tables (opt.h): getopt_long's tables and the help made
 * from rows, and the one parser of each kind of value.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "codec.h"
#include "opt.h"

/* A long option's val: its row's index, above every letter. */
#define OPT_VAL0	256

static void	opt_bad(const struct opt *, const char *, struct buf *);

/*
 * getopt_long's tables from ntabs tables of rows, in their order: the
 * order ambiguous abbreviations are listed in by glibc.  More rows than
 * OPT_MAX is the program's own mistake.
 */
void
opt_getopt(struct opt_getopt *g, const struct opt *const *tabs, int ntabs,
    int flags)
{
	const struct opt	*o;
	size_t			 nso = 0;
	int			 t;

	g->n = 0;
	if (flags & OPT_ORDERED)
		g->so[nso++] = '+';	/* the rest is the program's argv */
	if (flags & OPT_QUIET)
		g->so[nso++] = ':';	/* tell a missing argument apart */
	for (t = 0; t < ntabs; t++) {
		for (o = tabs[t]; o->name != NULL; o++) {
			if (g->n == OPT_MAX)
				abort();
			g->row[g->n] = o;
			g->lo[g->n].name = o->name;
			g->lo[g->n].has_arg = o->arg ? required_argument :
			    no_argument;
			g->lo[g->n].flag = NULL;
			g->lo[g->n].val = OPT_VAL0 + g->n;
			g->n++;
			if (o->letter) {
				g->so[nso++] = (char)o->letter;
				if (o->arg)
					g->so[nso++] = ':';
			}
		}
	}
	memset(&g->lo[g->n], 0, sizeof(g->lo[g->n]));
	g->so[nso] = '\0';
}

/* The row getopt_long's ch stands for; NULL for '?' and ':'. */
const struct opt *
opt_row(const struct opt_getopt *g, int ch)
{
	int	i;

	if (ch >= OPT_VAL0 && ch < OPT_VAL0 + g->n)
		return g->row[ch - OPT_VAL0];
	for (i = 0; i < g->n; i++)
		if (g->row[i]->letter != 0 && g->row[i]->letter == ch)
			return g->row[i];
	return NULL;
}

/*
 * Parse arg as row o says and store it in base.  0; -1 for a bad value,
 * its message appended to err; -2 when an OPT_FUNC row ran out of memory.
 */
int
opt_set(const struct opt *o, void *base, const char *arg, struct buf *err)
{
	char	*p = (char *)base + o->off;
	int64_t	 n;
	double	 d;

	switch (o->kind) {
	case OPT_FLAG:
		*(int *)p = o->val ? o->val : 1;
		return 0;
	case OPT_STR:
		*(const char **)p = arg;
		return 0;
	case OPT_INT:
	case OPT_INT64:
		if ((n = opt_count(arg)) == -1 || n < o->min || n > o->max)
			break;
		if (o->kind == OPT_INT)
			*(int *)p = (int)n;
		else
			*(int64_t *)p = n;
		return 0;
	case OPT_SECONDS:
	case OPT_MS:
		if (opt_seconds(arg, &d) == -1 || (o->min > 0 && d == 0))
			break;
		if (o->kind == OPT_SECONDS) {
			*(double *)p = d;
			return 0;
		}
		/* A positive duration stays positive: 0 may mean none. */
		n = (int64_t)(d * 1000 + 0.5);
		*(int64_t *)p = n == 0 && d > 0 ? 1 : n;
		return 0;
	case OPT_FUNC:
		return o->set(o, base, arg, err);
	case OPT_ACTION:
		return 0;
	}
	opt_bad(o, arg, err);
	return -1;
}

static void
opt_bad(const struct opt *o, const char *arg, struct buf *err)
{
	if (o->want != NULL)
		(void)buf_printf(err, "bad --%s '%s': %s", o->name, arg,
		    o->want);
	else
		(void)buf_printf(err, "--%s: invalid value '%s'", o->name,
		    arg);
}

/*
 * "  -e, --env K=V  help" a row, the left column width wide; a help's
 * further lines are indented as its first.  Hidden rows are left out.
 */
void
opt_help(FILE *f, const struct opt *o, int width)
{
	const char	*h;
	char		 left[64];

	for (; o->name != NULL; o++) {
		if (o->help == NULL)
			continue;
		if (o->letter)
			snprintf(left, sizeof(left), "-%c, --%s%s%s",
			    o->letter, o->name, o->arg ? " " : "",
			    o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name,
			    o->arg ? " " : "", o->arg ? o->arg : "");
		fprintf(f, "  %-*s ", width, left);
		for (h = o->help; *h != '\0'; h++)
			if (*h == '\n')
				fprintf(f, "\n%*s", width + 3, "");
			else
				fputc(*h, f);
		fputc('\n', f);
	}
}

/* A decimal count, digits only (no sign, space or suffix), or -1. */
int64_t
opt_count(const char *s)
{
	uint64_t	n;

	if (codec_parse_u64(s, &n) == -1 || n > INT64_MAX)
		return -1;
	return (int64_t)n;
}

/* Seconds, fractions allowed, from 0 to OPT_SECONDS_MAX; 0 or -1. */
int
opt_seconds(const char *s, double *secs)
{
	char	*end;
	double	 d;

	errno = 0;
	d = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !isfinite(d) ||
	    d < 0 || d > OPT_SECONDS_MAX)
		return -1;
	*secs = d;
	return 0;
}
