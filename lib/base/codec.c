/*
 * codec.c: the small encodings of the wire protocol.
 *
 * Base64 is nettle's; this file adds the strictness the protocol wants:
 * a client's bytes are either exactly valid or refused, never "mostly
 * decoded".
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nettle/base64.h>

#include "codec.h"

/* 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z */
#define CODEC_TIME_MIN	(-62167219200000LL)
#define CODEC_TIME_MAX	(253402300799999LL)

static int	codec_b64_shape(const char *, size_t);

static const struct {
	int		 err;
	const char	*name;
} codec_errnos[] = {
	{ EPERM,	"EPERM" },
	{ ENOENT,	"ENOENT" },
	{ ESRCH,	"ESRCH" },
	{ EINTR,	"EINTR" },
	{ EIO,		"EIO" },
	{ ENXIO,	"ENXIO" },
	{ E2BIG,	"E2BIG" },
	{ ENOEXEC,	"ENOEXEC" },
	{ EBADF,	"EBADF" },
	{ ECHILD,	"ECHILD" },
	{ EAGAIN,	"EAGAIN" },
	{ ENOMEM,	"ENOMEM" },
	{ EACCES,	"EACCES" },
	{ EFAULT,	"EFAULT" },
	{ EBUSY,	"EBUSY" },
	{ EEXIST,	"EEXIST" },
	{ EXDEV,	"EXDEV" },
	{ ENODEV,	"ENODEV" },
	{ ENOTDIR,	"ENOTDIR" },
	{ EISDIR,	"EISDIR" },
	{ EINVAL,	"EINVAL" },
	{ ENFILE,	"ENFILE" },
	{ EMFILE,	"EMFILE" },
	{ ENOTTY,	"ENOTTY" },
	{ ETXTBSY,	"ETXTBSY" },
	{ EFBIG,	"EFBIG" },
	{ ENOSPC,	"ENOSPC" },
	{ ESPIPE,	"ESPIPE" },
	{ EROFS,	"EROFS" },
	{ EMLINK,	"EMLINK" },
	{ EPIPE,	"EPIPE" },
	{ ERANGE,	"ERANGE" },
	{ EDEADLK,	"EDEADLK" },
	{ ENAMETOOLONG,	"ENAMETOOLONG" },
	{ ENOSYS,	"ENOSYS" },
	{ ENOTEMPTY,	"ENOTEMPTY" },
	{ ELOOP,	"ELOOP" },
	{ EOVERFLOW,	"EOVERFLOW" },
	{ ENOTSUP,	"ENOTSUP" },
	{ ECONNREFUSED,	"ECONNREFUSED" },
	{ ECONNRESET,	"ECONNRESET" },
	{ ETIMEDOUT,	"ETIMEDOUT" },
	{ EDQUOT,	"EDQUOT" },
	{ ECANCELED,	"ECANCELED" },
};

/*
 * Append the padded base64 of d.  The length check keeps the output size
 * computation from wrapping.
 */
int
codec_b64_encode(struct buf *b, const void *d, size_t n)
{
	char	*p;
	size_t	 len;

	if (n > (SIZE_MAX / 4 - 1) * 3) {
		errno = ENOMEM;
		return -1;
	}
	len = BASE64_ENCODE_RAW_LENGTH(n);
	if (len == 0)
		return 0;
	if ((p = buf_reserve(b, len)) == NULL)
		return -1;
	base64_encode_raw(p, n, d);
	b->len += len;
	return 0;
}

/*
 * nettle skips white space and accepts a partial run of '=': check the
 * shape first.  Only the standard alphabet; at most two '=', only at the
 * end and only to complete a group of four; without padding, a lone last
 * character (6 bits, not a byte) is refused.
 */
static int
codec_b64_shape(const char *s, size_t n)
{
	size_t	 i, data;
	char	 c;

	for (data = 0; data < n && s[data] != '='; data++) {
		c = s[data];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '+' || c == '/'))
			return -1;
	}
	for (i = data; i < n; i++)
		if (s[i] != '=')
			return -1;
	if (n - data > 2)
		return -1;
	if (n - data > 0 && n % 4 != 0)
		return -1;
	if (data % 4 == 1)
		return -1;
	return 0;
}

/*
 * Decode into b.  Unpadded input is completed with the '=' it lacks and
 * handed to nettle, which refuses non-zero leftover bits ("Zm9=" is not
 * the canonical form of "fo").  On error b is left as it was.
 */
int
codec_b64_decode(struct buf *b, const char *s, size_t n)
{
	struct base64_decode_ctx	 ctx;
	uint8_t				*p;
	size_t				 len, oldlen;
	int				 i;

	if (n > SIZE_MAX / 8 || codec_b64_shape(s, n) == -1) {
		errno = EINVAL;
		return -1;
	}
	if (n == 0)
		return 0;
	oldlen = b->len;
	if ((p = (uint8_t *)buf_reserve(b, BASE64_DECODE_LENGTH(n))) == NULL)
		return -1;
	base64_decode_init(&ctx);
	if (!base64_decode_update(&ctx, &len, p, n, s))
		goto bad;
	for (i = 0; i < 2 && !base64_decode_final(&ctx); i++)
		if (base64_decode_single(&ctx, p + len, '=') != 0)
			goto bad;
	if (!base64_decode_final(&ctx))
		goto bad;
	b->len = oldlen + len;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int64_t
codec_now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
codec_mono_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Floor division so that times before 1970 keep a positive millisecond
 * field.  RFC 3339 has four-digit years: a time outside them is clamped
 * to the nearest one it has.
 */
void
codec_time(char out[TIME_MAX], int64_t ms)
{
	struct tm	tm;
	time_t		t;
	int64_t		sec, frac;
	char		tmp[96];
	size_t		n;

	if (ms < CODEC_TIME_MIN)
		ms = CODEC_TIME_MIN;
	if (ms > CODEC_TIME_MAX)
		ms = CODEC_TIME_MAX;
	sec = ms / 1000;
	frac = ms % 1000;
	if (frac < 0) {
		frac += 1000;
		sec--;
	}
	t = (time_t)sec;
	gmtime_r(&t, &tm);
	/* Via tmp: the compiler cannot know tm's fields are two digits. */
	snprintf(tmp, sizeof(tmp), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
	    tm.tm_hour, tm.tm_min, tm.tm_sec, (int)frac);
	n = strnlen(tmp, TIME_MAX - 1);
	memcpy(out, tmp, n);
	out[n] = '\0';
}

int
codec_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

void
codec_hex(char *out, const void *d, size_t n)
{
	static const char	 digits[] = "0123456789abcdef";
	const unsigned char	*p = d;
	size_t			 i;

	for (i = 0; i < n; i++) {
		out[2 * i] = digits[p[i] >> 4];
		out[2 * i + 1] = digits[p[i] & 0xf];
	}
	out[2 * n] = '\0';
}

/*
 * Digits only: strtoull would take a sign, white space and a wrapped
 * negative number.  Leading zeros are accepted.
 */
int
codec_parse_u64(const char *s, uint64_t *v)
{
	uint64_t	 n = 0;
	unsigned	 d;

	if (s == NULL || *s == '\0') {
		errno = EINVAL;
		return -1;
	}
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9') {
			errno = EINVAL;
			return -1;
		}
		d = (unsigned)(*s - '0');
		if (n > (UINT64_MAX - d) / 10) {
			errno = ERANGE;
			return -1;
		}
		n = n * 10 + d;
	}
	*v = n;
	return 0;
}

const char *
codec_errno_name(int err)
{
	size_t	i;

	for (i = 0; i < sizeof(codec_errnos) / sizeof(codec_errnos[0]); i++)
		if (codec_errnos[i].err == err)
			return codec_errnos[i].name;
	return "EUNKNOWN";
}

/*
 * Length of the well-formed UTF-8 sequence at s (no overlongs, no
 * surrogates, <= U+10FFFF), or 0 when it is not one.
 */
static size_t
codec_utf8_seq(const unsigned char *s, size_t n)
{
	size_t		 k, len;
	uint32_t	 cp, min;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1f;
		min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0f;
		min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07;
		min = 0x10000;
	} else
		return 0;
	if (n < len)
		return 0;
	for (k = 1; k < len; k++) {
		if ((s[k] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[k] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

int
codec_utf8_valid(const char *str, size_t n)
{
	const unsigned char	*s = (const unsigned char *)str;
	size_t			 i = 0, len;

	while (i < n) {
		if ((len = codec_utf8_seq(s + i, n - i)) == 0)
			return 0;
		i += len;
	}
	return 1;
}

/*
 * Each byte that does not start a well-formed sequence becomes one U+FFFD
 * and the scan goes on at the next byte, so a message that quotes a
 * client's bytes stays readable and valid.
 */
int
codec_utf8_repair(struct buf *b, const char *str, size_t n)
{
	static const char	 fffd[] = "\xef\xbf\xbd";
	const unsigned char	*s = (const unsigned char *)str;
	size_t			 i = 0, run, len;

	while (i < n) {
		for (run = 0; i + run < n &&
		    (len = codec_utf8_seq(s + i + run, n - i - run)) != 0;
		    run += len)
			;
		if (run > 0 && buf_add(b, s + i, run) == -1)
			return -1;
		i += run;
		if (i < n) {
			if (buf_add(b, fffd, sizeof(fffd) - 1) == -1)
				return -1;
			i++;
		}
	}
	return 0;
}

/* A size: bytes, or with a binary suffix K M G T ("256M", "1KiB"). */
int
codec_parse_size(const char *s, int64_t *out)
{
	char		*end;
	long double	 v;
	int		 shift = 0;

	errno = 0;
	v = strtold(s, &end);
	if (end == s || errno != 0 || v < 0 || !isdigit((unsigned char)*s))
		goto bad;
	switch (toupper((unsigned char)*end)) {
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	case 'T': shift = 40; end++; break;
	}
	if (shift != 0 && (*end == 'i' || *end == 'I'))
		end++;
	if (shift != 0 && (*end == 'b' || *end == 'B'))
		end++;
	if (*end != '\0')
		goto bad;
	v *= (long double)(1ULL << shift);
	if (v >= 9.2e18L || v < 1)
		goto bad;
	*out = (int64_t)v;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}
