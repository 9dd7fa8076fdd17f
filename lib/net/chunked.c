/*
 * chunked.c: the strict check of chunked framing (see chunked.h).
 *
 *	chunked-body = *chunk last-chunk trailer-section CRLF
 *	chunk        = chunk-size [ chunk-ext ] CRLF chunk-data CRLF
 *
 * A line ends in CR LF, never a bare LF or CR; a chunk extension starts
 * with ";" or blanks and holds no control byte but HTAB; chunk data is
 * followed by CR LF exactly; a trailer line holds no control byte but
 * HTAB.
 */
#include "base/codec.h"
#include "chunked.h"

enum {
	CH_HEAD_LF,	/* the LF that ends the head */
	CH_SIZE0,	/* the first hex digit of a chunk's size */
	CH_SIZE,	/* more digits, an extension or CR */
	CH_EXT,		/* a chunk extension, up to CR */
	CH_SIZE_LF,	/* the LF of the size line */
	CH_DATA,	/* chunk data: left bytes */
	CH_DATA_CR,	/* the CR after the data */
	CH_DATA_LF,	/* and its LF */
	CH_TRAILER0,	/* the start of a trailer line, or the final CR */
	CH_TRAILER,	/* a trailer line, up to CR */
	CH_TRAILER_LF,	/* its LF */
	CH_END_LF,	/* the LF of the empty line that ends the body */
	CH_DONE,
	CH_BAD
};

/* A control byte other than HTAB: never in an extension or a field. */
static int
chunked_ctl(unsigned char ch)
{
	return (ch < 0x20 && ch != '\t') || ch == 0x7f;
}


void
chunked_init(struct chunked *c, bool head_lf)
{
	c->state = head_lf ? CH_HEAD_LF : CH_SIZE0;
	c->left = 0;
}

bool
chunked_done(const struct chunked *c)
{
	return c->state == CH_DONE;
}

bool
chunked_bad(const struct chunked *c)
{
	return c->state == CH_BAD;
}

size_t
chunked_scan(struct chunked *c, const char *p, size_t n)
{
	size_t		i, k;
	unsigned char	ch;
	int		v;

	for (i = 0; i < n; i++) {
		ch = (unsigned char)p[i];
		switch (c->state) {
		case CH_HEAD_LF:
			c->state = ch == '\n' ? CH_SIZE0 : CH_BAD;
			break;
		case CH_SIZE0:
			if ((v = codec_hexval(ch)) == -1)
				c->state = CH_BAD;
			else {
				c->left = (uint64_t)v;
				c->state = CH_SIZE;
			}
			break;
		case CH_SIZE:
			if ((v = codec_hexval(ch)) != -1) {
				/* The parser refuses it too: no wrap here. */
				if (c->left > (UINT64_MAX - 15) / 16)
					c->state = CH_BAD;
				else
					c->left = c->left * 16 + (uint64_t)v;
			} else if (ch == '\r')
				c->state = CH_SIZE_LF;
			else if (ch == ';' || ch == ' ' || ch == '\t')
				c->state = CH_EXT;
			else
				c->state = CH_BAD;
			break;
		case CH_EXT:
			if (ch == '\r')
				c->state = CH_SIZE_LF;
			else if (chunked_ctl(ch))
				c->state = CH_BAD;
			break;
		case CH_SIZE_LF:
			if (ch != '\n')
				c->state = CH_BAD;
			else
				c->state = c->left == 0 ? CH_TRAILER0 : CH_DATA;
			break;
		case CH_DATA:
			k = n - i < c->left ? n - i : (size_t)c->left;
			c->left -= k;
			i += k - 1;
			if (c->left == 0)
				c->state = CH_DATA_CR;
			break;
		case CH_DATA_CR:
			c->state = ch == '\r' ? CH_DATA_LF : CH_BAD;
			break;
		case CH_DATA_LF:
			c->state = ch == '\n' ? CH_SIZE0 : CH_BAD;
			break;
		case CH_TRAILER0:
			if (ch == '\r')
				c->state = CH_END_LF;
			else if (chunked_ctl(ch))
				c->state = CH_BAD;
			else
				c->state = CH_TRAILER;
			break;
		case CH_TRAILER:
			if (ch == '\r')
				c->state = CH_TRAILER_LF;
			else if (chunked_ctl(ch))
				c->state = CH_BAD;
			break;
		case CH_TRAILER_LF:
			c->state = ch == '\n' ? CH_TRAILER0 : CH_BAD;
			break;
		case CH_END_LF:
			if (ch != '\n')
				c->state = CH_BAD;
			else {
				c->state = CH_DONE;
				return i + 1;
			}
			break;
		default:
			return i;
		}
		if (c->state == CH_BAD)
			return i;
	}
	return n;
}
