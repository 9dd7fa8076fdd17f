/*
 * buf.c: growable byte buffers for connection input and output.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"

/*
 * Make room for n more bytes after len.  Consumed space at the front is
 * reclaimed first so that a buffer used as a queue does not creep.
 */
char *
buf_reserve(struct buf *b, size_t n)
{
	size_t	 ncap;
	char	*p;

	if (b->off > 0 && b->cap - b->len < n) {
		memmove(b->data, b->data + b->off, b->len - b->off);
		b->len -= b->off;
		b->off = 0;
	}
	if (b->cap - b->len >= n)
		return b->data + b->len;
	if (n > ((size_t)-1) / 2 - b->len) {
		errno = ENOMEM;
		return NULL;
	}
	ncap = b->cap ? b->cap : 256;
	while (ncap - b->len < n)
		ncap *= 2;
	if ((p = realloc(b->data, ncap)) == NULL)
		return NULL;
	b->data = p;
	b->cap = ncap;
	return b->data + b->len;
}

int
buf_add(struct buf *b, const void *d, size_t n)
{
	char	*p;

	if (n == 0)
		return 0;
	if ((p = buf_reserve(b, n)) == NULL)
		return -1;
	memcpy(p, d, n);
	b->len += n;
	return 0;
}

int
buf_addstr(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int
buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list	ap;
	char	*p;
	int	 n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -1;
	if ((p = buf_reserve(b, (size_t)n + 1)) == NULL)
		return -1;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
	return 0;
}

void
buf_consume(struct buf *b, size_t n)
{
	if (n > buf_avail(b))
		n = buf_avail(b);
	b->off += n;
	if (b->off == b->len)
		b->off = b->len = 0;
}

void
buf_reset(struct buf *b)
{
	b->off = b->len = 0;
}

void
buf_free(struct buf *b)
{
	free(b->data);
	b->data = NULL;
	b->off = b->len = b->cap = 0;
}
