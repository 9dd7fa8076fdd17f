/*
 * fuzz_multipart: the form-data parser against a property: a body gives
 * the same parts and bytes (and the same verdict) whole, cut in two at
 * any point, and byte by byte; nothing it is fed crashes it.  The first
 * input byte picks the cut; the rest is the body, its boundary "XyZ".
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/multipart.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* What the callbacks saw, as a transcript. */
struct fz_seen {
	char	*out;
	size_t	 n, cap;
};

static void	fz_add(struct fz_seen *, const void *, size_t);
static int	fz_begin(void *, const struct multipart_part *);
static int	fz_data(void *, const char *, size_t);
static int	fz_end(void *);
static int	fz_parse(const char *, size_t, size_t, size_t,
		    struct fz_seen *);

static const struct multipart_cb fz_cb = { fz_begin, fz_data, fz_end };

static void
fz_add(struct fz_seen *s, const void *d, size_t n)
{
	if (s->n + n > s->cap) {
		s->cap = (s->n + n) * 2 + 64;
		if ((s->out = realloc(s->out, s->cap)) == NULL)
			abort();
	}
	memcpy(s->out + s->n, d, n);
	s->n += n;
}

static int
fz_begin(void *arg, const struct multipart_part *p)
{
	fz_add(arg, "[", 1);
	fz_add(arg, p->name, strlen(p->name));
	fz_add(arg, "|", 1);
	fz_add(arg, p->filename, strlen(p->filename));
	fz_add(arg, "]", 1);
	return 0;
}

static int
fz_data(void *arg, const char *d, size_t n)
{
	if (n == 0)
		abort();		/* never called with nothing */
	fz_add(arg, d, n);
	return 0;
}

static int
fz_end(void *arg)
{
	fz_add(arg, ".", 1);
	return 0;
}

/* [0, cut) then the rest in pieces of step: the verdict (0 or errno). */
static int
fz_parse(const char *d, size_t n, size_t cut, size_t step,
    struct fz_seen *s)
{
	struct multipart	*mp = malloc(sizeof(*mp));
	size_t			 i, k;
	int			 rc = 0;

	if (mp == NULL || multipart_init(mp, "XyZ", &fz_cb, s) == -1)
		abort();
	if (multipart_feed(mp, d, cut) == -1)
		rc = errno;
	for (i = cut; rc == 0 && i < n; i += k) {
		k = n - i < step ? n - i : step;
		if (multipart_feed(mp, d + i, k) == -1)
			rc = errno;
	}
	if (rc == 0 && multipart_finish(mp) == -1)
		rc = errno;
	free(mp);
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_seen	 a = { 0 }, b = { 0 }, c = { 0 };
	const char	*d = (const char *)data + 1;
	size_t		 n, cut;
	int		 ra, rb, rc;

	if (size < 1)
		return 0;
	n = size - 1;
	cut = n == 0 ? 0 : data[0] % (n + 1);
	ra = fz_parse(d, n, n, n ? n : 1, &a);
	rb = fz_parse(d, n, cut, n ? n : 1, &b);
	rc = fz_parse(d, n, 0, 1, &c);
	/* A refusal may come at another point, after more was told. */
	if (ra != rb || ra != rc)
		abort();
	if (ra == 0 && (a.n != b.n || a.n != c.n || (a.n > 0 &&
	    (memcmp(a.out, b.out, a.n) != 0 || memcmp(a.out, c.out, a.n) != 0))))
		abort();
	free(a.out);
	free(b.out);
	free(c.out);
	return 0;
}
