/*
 * multipart.c: the form-data parser.  See multipart.h.
 *
 * The delimiter is CRLF "--" boundary; the body's first one has no CRLF
 * before it, so the parser starts as if that CRLF had been matched.  A
 * boundary holds no CR (RFC 2046's bchars), so a delimiter matched in
 * part can only restart at a CR: on a mismatch the bytes matched so far
 * are content (emitted from the delimiter itself, which is why a match
 * that spans two pieces needs no buffer) and the byte is looked at
 * again.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/codec.h"
#include "multipart.h"

static int	mp_emit(struct multipart *, const char *, size_t);
static size_t	mp_scan(struct multipart *, const char *, size_t, bool *,
		    int *);
static int	mp_head_byte(struct multipart *, char);
static int	mp_head_parse(struct multipart *);
static int	mp_head_line(struct multipart *, char *);
static int	mp_disposition(struct multipart_part *, const char *);
static const char *mp_param(const char *, char *, size_t, char *, size_t,
		    int *);
static int	mp_unpct(char *, bool);

static const char mp_bchars[] = "0123456789abcdefghijklmnopqrstuvwxyz"
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ";

int
multipart_boundary(const char *ctype, char *out, size_t cap)
{
	char		 key[32], val[MULTIPART_BOUNDARY_MAX + 2];
	const char	*p;
	size_t		 n;
	int		 err = 0;

	if (ctype == NULL || strncasecmp(ctype, "multipart/form-data", 19) != 0 ||
	    (ctype[19] != ';' && ctype[19] != ' ' && ctype[19] != '\0'))
		goto bad;
	for (p = strchr(ctype, ';'); p != NULL && *p != '\0'; ) {
		p = mp_param(p, key, sizeof(key), val, sizeof(val), &err);
		if (err != 0)
			goto bad;
		if (strcasecmp(key, "boundary") != 0)
			continue;
		n = strlen(val);
		if (n == 0 || n > MULTIPART_BOUNDARY_MAX || n >= cap ||
		    strspn(val, mp_bchars) != n || val[n - 1] == ' ')
			goto bad;
		memcpy(out, val, n + 1);
		return 0;
	}
bad:
	errno = EINVAL;
	return -1;
}

int
multipart_init(struct multipart *mp, const char *boundary,
    const struct multipart_cb *cb, void *arg)
{
	size_t	n = strlen(boundary);

	if (n == 0 || n > MULTIPART_BOUNDARY_MAX ||
	    strspn(boundary, mp_bchars) != n) {
		errno = EINVAL;
		return -1;
	}
	memset(mp, 0, sizeof(*mp));
	mp->cb = cb;
	mp->arg = arg;
	mp->dlen = (size_t)snprintf(mp->delim, sizeof(mp->delim), "\r\n--%s",
	    boundary);
	mp->state = MP_PREAMBLE;
	mp->match = 2;		/* the body's first delimiter has no CRLF */
	return 0;
}

/* Content, outside the preamble. */
static int
mp_emit(struct multipart *mp, const char *d, size_t n)
{
	if (n == 0 || mp->state != MP_BODY)
		return 0;
	return mp->cb->data(mp->arg, d, n);
}

/*
 * Scan for the delimiter: the bytes consumed, all of them or up to and
 * with a whole delimiter (*found).  Content is handed on in runs of the
 * piece, as long as possible (a CR that starts no delimiter does not cut
 * a run): only the part of a failed match that came in an earlier piece
 * is emitted from the delimiter itself.  *err: a callback failed.
 */
static size_t
mp_scan(struct multipart *mp, const char *d, size_t n, bool *found,
    int *err)
{
	const char	*cr;
	size_t		 i = 0, held = mp->match, mstart = 0;
	bool		 here = false;	/* the match began in d, at mstart */

	while (i < n) {
		if (mp->match == 0) {
			if ((cr = memchr(d + i, '\r', n - i)) == NULL) {
				i = n;
				break;
			}
			mstart = cr - d;
			i = mstart + 1;
			here = true;
			mp->match = 1;
			continue;
		}
		if (d[i] == mp->delim[mp->match]) {
			i++;
			if (++mp->match < mp->dlen)
				continue;
			mp->match = 0;
			*found = true;
			if (here && mp_emit(mp, d, mstart) == -1)
				goto fail;
			return i;
		}
		/* Not a delimiter: what matched is content; look again. */
		if (!here && mp_emit(mp, mp->delim, held) == -1)
			goto fail;
		here = false;
		mp->match = 0;
	}
	/* The run so far, up to a match still in progress. */
	if (mp->match == 0 && mp_emit(mp, d, n) == -1)
		goto fail;
	if (mp->match > 0 && here && mp_emit(mp, d, mstart) == -1)
		goto fail;
	return n;
fail:
	*err = errno != 0 ? errno : EIO;
	return n;
}

int
multipart_feed(struct multipart *mp, const char *d, size_t n)
{
	size_t	i = 0;
	bool	found;
	int	err = 0;
	char	c;

	while (i < n && err == 0) {
		switch (mp->state) {
		case MP_PREAMBLE:
		case MP_BODY:
			found = false;
			i += mp_scan(mp, d + i, n - i, &found, &err);
			if (err != 0 || !found)
				break;
			if (mp->state == MP_BODY && mp->cb->end(mp->arg) == -1)
				err = errno != 0 ? errno : EIO;
			mp->state = MP_AFTER;
			break;
		case MP_AFTER:
			c = d[i++];
			if (c == '-')
				mp->state = MP_DASH;
			else if (c == '\r')
				mp->state = MP_AFTER_LF;
			else if (c != ' ' && c != '\t')
				err = EINVAL;
			break;
		case MP_AFTER_LF:
			if (d[i++] != '\n')
				err = EINVAL;
			else if (++mp->nparts > MULTIPART_PARTS_MAX)
				err = E2BIG;
			else {
				mp->state = MP_HEAD;
				mp->hlen = 0;
			}
			break;
		case MP_DASH:
			if (d[i++] != '-')
				err = EINVAL;
			else
				mp->state = MP_DONE;
			break;
		case MP_HEAD:
			if (mp_head_byte(mp, d[i++]) == -1)
				err = errno;
			break;
		case MP_DONE:
			return 0;
		}
	}
	if (err != 0) {
		mp->state = MP_DONE;
		mp->cb = NULL;
		errno = err;
		return -1;
	}
	return 0;
}

int
multipart_finish(const struct multipart *mp)
{
	if (mp->state != MP_DONE || mp->cb == NULL) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* A part's headers */

static int
mp_head_byte(struct multipart *mp, char c)
{
	if (mp->hlen >= sizeof(mp->head) - 1) {
		errno = EMSGSIZE;
		return -1;
	}
	mp->head[mp->hlen++] = c;
	if (c != '\n')
		return 0;
	if (mp->hlen < 2 || mp->head[mp->hlen - 2] != '\r') {
		errno = EINVAL;		/* a bare LF */
		return -1;
	}
	/* The empty line: the headers end (none at all is allowed). */
	if (mp->hlen == 2 || (mp->hlen >= 4 &&
	    memcmp(mp->head + mp->hlen - 4, "\r\n\r\n", 4) == 0)) {
		mp->head[mp->hlen] = '\0';
		if (mp_head_parse(mp) == -1)
			return -1;
		mp->state = MP_BODY;
		mp->match = 0;
		return mp->cb->begin(mp->arg, &mp->part);
	}
	return 0;
}

static int
mp_head_parse(struct multipart *mp)
{
	char	*line, *next;

	memset(&mp->part, 0, sizeof(mp->part));
	if (memchr(mp->head, '\0', mp->hlen) != NULL) {
		errno = EINVAL;
		return -1;
	}
	for (line = mp->head; *line != '\0'; line = next) {
		next = strstr(line, "\r\n");
		*next = '\0';
		next += 2;
		if (*line != '\0' && mp_head_line(mp, line) == -1)
			return -1;
	}
	return 0;
}

static int
mp_head_line(struct multipart *mp, char *line)
{
	char	*v = strchr(line, ':');

	if (v == NULL || v == line) {
		errno = EINVAL;
		return -1;
	}
	*v++ = '\0';
	v += strspn(v, " \t");
	if (strcasecmp(line, "Content-Disposition") == 0)
		return mp_disposition(&mp->part, v);
	if (strcasecmp(line, "Content-Type") == 0)
		snprintf(mp->part.ctype, sizeof(mp->part.ctype), "%s", v);
	return 0;
}

/*
 * form-data; name="file"; filename="/a/b": filename* (RFC 5987,
 * charset''pct-encoded) wins over filename; a plain filename has the
 * quotes and line breaks WHATWG's FormData encodes as %22, %0D, %0A
 * decoded (what browsers and Node send), nothing else.
 */
static int
mp_disposition(struct multipart_part *p, const char *v)
{
	char		 key[32], val[PATH_MAX], *q;
	const char	*s = strchr(v, ';');
	bool		 star = false;
	int		 err = 0;

	if (strncasecmp(v, "form-data", 9) != 0) {
		errno = EINVAL;
		return -1;
	}
	while (s != NULL && *s != '\0') {
		s = mp_param(s, key, sizeof(key), val, sizeof(val), &err);
		if (err != 0) {
			errno = err;
			return -1;
		}
		if (strcasecmp(key, "name") == 0) {
			if (strlen(val) >= sizeof(p->name)) {
				errno = ENAMETOOLONG;
				return -1;
			}
			memcpy(p->name, val, strlen(val) + 1);
		}
		else if (strcasecmp(key, "filename*") == 0) {
			if ((q = strstr(val, "''")) == NULL ||
			    mp_unpct(q + 2, true) == -1)
				continue;
			snprintf(p->filename, sizeof(p->filename), "%s", q + 2);
			p->has_filename = star = true;
		} else if (strcasecmp(key, "filename") == 0 && !star) {
			if (mp_unpct(val, false) == -1)
				return -1;
			snprintf(p->filename, sizeof(p->filename), "%s", val);
			p->has_filename = true;
		}
	}
	return 0;
}

/*
 * One ";key=value" at s (value a token or a quoted string with \
 * escapes): the position after it.  *err: EINVAL (malformed),
 * ENAMETOOLONG (too long).
 */
static const char *
mp_param(const char *s, char *key, size_t kcap, char *val, size_t vcap,
    int *err)
{
	size_t	k = 0, n = 0;

	s += strspn(s, "; \t");
	while (*s != '\0' && *s != '=' && *s != ';' && *s != ' ') {
		if (k + 1 >= kcap) {
			*err = ENAMETOOLONG;
			return NULL;
		}
		key[k++] = *s++;
	}
	key[k] = '\0';
	s += strspn(s, " \t");
	val[0] = '\0';
	if (*s != '=')
		return s;	/* a bare flag: no value */
	s++;
	s += strspn(s, " \t");
	if (*s == '"') {
		for (s++; *s != '"'; s++) {
			if (*s == '\0') {
				*err = EINVAL;
				return NULL;
			}
			if (*s == '\\' && s[1] != '\0')
				s++;
			if (n + 1 >= vcap) {
				*err = ENAMETOOLONG;
				return NULL;
			}
			val[n++] = *s;
		}
		s++;
	} else
		while (*s != '\0' && *s != ';' && *s != ' ' && *s != '\t') {
			if (n + 1 >= vcap) {
				*err = ENAMETOOLONG;
				return NULL;
			}
			val[n++] = *s++;
		}
	val[n] = '\0';
	return s;
}


/* In place: every %XX (all), or only %22 %0D %0A; a NUL is EINVAL. */
static int
mp_unpct(char *s, bool all)
{
	char	*w = s;
	int	 hi, lo, c;

	for (; *s != '\0'; s++) {
		c = (unsigned char)*s;
		if (c == '%' && (hi = codec_hexval(s[1])) != -1 &&
		    (lo = codec_hexval(s[2])) != -1) {
			c = hi << 4 | lo;
			if (all || c == '"' || c == '\r' || c == '\n')
				s += 2;
			else
				c = '%';
		}
		if (c == '\0') {
			errno = EINVAL;
			return -1;
		}
		*w++ = (char)c;
	}
	*w = '\0';
	return 0;
}
