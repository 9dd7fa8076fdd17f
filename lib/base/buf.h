/*
 * A growable byte buffer with a read position: bytes are appended at the
 * end and consumed from the front.
 */
#ifndef TEND_BUF_H
#define TEND_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct buf {
	char	*data;
	size_t	 off;		/* first unconsumed byte */
	size_t	 len;		/* end of valid bytes */
	size_t	 cap;
};

#define buf_avail(b)	((b)->len - (b)->off)
#define buf_head(b)	((b)->data + (b)->off)

int	buf_add(struct buf *, const void *, size_t);
int	buf_addstr(struct buf *, const char *);
int	buf_printf(struct buf *, const char *, ...)
	    __attribute__((format(printf, 2, 3)));
char	*buf_reserve(struct buf *, size_t);	/* room for n more bytes */
void	buf_consume(struct buf *, size_t);
void	buf_reset(struct buf *);
void	buf_free(struct buf *);

#endif
