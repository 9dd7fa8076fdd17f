/*
 * fuzz_codec: the wire encodings, each against a property.
 *
 * - cursor_parse accepts exactly what cursor_format makes: a cursor it
 *   accepts formats back to the same text, and any formatted cursor
 *   parses back to its sequence number (and not under another id).
 * - codec_b64_decode: decode(encode(x)) == x; decoding arbitrary text
 *   never crashes, leaves the buffer as it was on error, and accepts only
 *   the canonical spelling (encode(decode(s)) == s padded with '=').
 * - codec_utf8_valid agrees with a table-driven reference (Unicode 15,
 *   table 3-7: well-formed byte sequences).
 * - codec_parse_u64 agrees with strtoull on digit strings and refuses
 *   everything else.
 * The whole input is given to each.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "store/cursor.h"

#define FZ_BOOT	"0123456789abcdef0123456789abcdef"
#define FZ_ID	"job-1"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void	fz_fail(const char *, const uint8_t *, size_t)
		    __attribute__((noreturn));
static void	fz_cursor(const char *, const uint8_t *, size_t);
static void	fz_b64(const uint8_t *, size_t);
static int	fz_utf8_ref(const uint8_t *, size_t);
static void	fz_u64(const char *, size_t);

static void
fz_fail(const char *what, const uint8_t *d, size_t n)
{
	size_t	i;

	fprintf(stderr, "fuzz_codec: %s; input (%zu):", what, n);
	for (i = 0; i < n && i < 256; i++)
		fprintf(stderr, " %02x", d[i]);
	fputc('\n', stderr);
	abort();
}

static void
fz_cursor(const char *s, const uint8_t *d, size_t n)
{
	char		out[CURSOR_MAX];
	uint64_t	seq, v = 0;
	size_t		i;

	if (cursor_parse(s, FZ_BOOT, FZ_ID, &seq) == 0) {
		cursor_format(out, FZ_BOOT, FZ_ID, seq);
		if (strcmp(out, s) != 0)
			fz_fail("cursor_parse accepted a second spelling", d, n);
	}
	for (i = 0; i < n && i < 8; i++)
		v = v << 8 | d[i];
	cursor_format(out, FZ_BOOT, FZ_ID, v);
	if (cursor_parse(out, FZ_BOOT, FZ_ID, &seq) != 0 || seq != v)
		fz_fail("a formatted cursor does not parse back", d, n);
	if (cursor_parse(out, FZ_BOOT, "job-2", &seq) == 0)
		fz_fail("a cursor of another id was accepted", d, n);
}

static void
fz_b64(const uint8_t *d, size_t n)
{
	struct buf	enc = { 0 }, dec = { 0 }, re = { 0 };
	size_t		pad, i;

	/* Round trip of the input as raw bytes. */
	if (codec_b64_encode(&enc, d, n) == -1 ||
	    codec_b64_decode(&dec, enc.data, enc.len) == -1)
		fz_fail("encoded bytes do not decode", d, n);
	if (dec.len != n || (n > 0 && memcmp(dec.data, d, n) != 0))
		fz_fail("decode(encode(x)) != x", d, n);

	/* The input as text, appended after bytes already there. */
	buf_reset(&dec);
	if (buf_add(&dec, "xy", 2) == -1)
		abort();
	if (codec_b64_decode(&dec, (const char *)d, n) == -1) {
		if (dec.len != 2 || memcmp(dec.data, "xy", 2) != 0)
			fz_fail("a refused decode changed the buffer", d, n);
	} else {
		if (dec.len < 2 || memcmp(dec.data, "xy", 2) != 0)
			fz_fail("decode did not append", d, n);
		if (codec_b64_encode(&re, dec.data + 2, dec.len - 2) == -1)
			abort();
		pad = (4 - n % 4) % 4;
		if (re.len != n + pad || (n > 0 && memcmp(re.data, d, n) != 0))
			fz_fail("decode accepted a non-canonical spelling", d, n);
		for (i = n; i < re.len; i++)
			if (re.data[i] != '=')
				fz_fail("decode accepted a non-canonical spelling", d, n);
	}
	buf_free(&enc);
	buf_free(&dec);
	buf_free(&re);
}

/* Unicode table 3-7, as ranges of the second byte per lead byte. */
static int
fz_utf8_ref(const uint8_t *s, size_t n)
{
	size_t	i = 0, k, len;
	uint8_t	lo, hi;

	while (i < n) {
		uint8_t	b = s[i];

		lo = 0x80;
		hi = 0xbf;
		if (b <= 0x7f) {
			i++;
			continue;
		} else if (b >= 0xc2 && b <= 0xdf)
			len = 2;
		else if (b == 0xe0) {
			len = 3;
			lo = 0xa0;
		} else if ((b >= 0xe1 && b <= 0xec) || b == 0xee || b == 0xef)
			len = 3;
		else if (b == 0xed) {
			len = 3;
			hi = 0x9f;
		} else if (b == 0xf0) {
			len = 4;
			lo = 0x90;
		} else if (b >= 0xf1 && b <= 0xf3)
			len = 4;
		else if (b == 0xf4) {
			len = 4;
			hi = 0x8f;
		} else
			return 0;
		if (n - i < len || s[i + 1] < lo || s[i + 1] > hi)
			return 0;
		for (k = 2; k < len; k++)
			if (s[i + k] < 0x80 || s[i + k] > 0xbf)
				return 0;
		i += len;
	}
	return 1;
}

static void
fz_u64(const char *s, size_t len)
{
	unsigned long long	 ref;
	uint64_t		 v = 12345;
	int			 rc, err, digits;

	digits = len > 0 && strspn(s, "0123456789") == len;
	errno = 0;
	rc = codec_parse_u64(s, &v);
	err = errno;
	if (!digits) {
		/* errno may be ERANGE: digits overflow before the junk. */
		if (rc != -1 || (err != EINVAL && err != ERANGE))
			fz_fail("codec_parse_u64 took a non-digit string",
			    (const uint8_t *)s, len);
		return;
	}
	errno = 0;
	ref = strtoull(s, NULL, 10);
	if (errno == ERANGE) {
		if (rc != -1 || err != ERANGE)
			fz_fail("codec_parse_u64 took an overflowing number",
			    (const uint8_t *)s, len);
	} else if (rc != 0 || v != ref)
		fz_fail("codec_parse_u64 disagrees with strtoull",
		    (const uint8_t *)s, len);
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	char	*s;
	size_t	 len;

	if ((s = malloc(n + 1)) == NULL)
		return 0;
	memcpy(s, d, n);
	s[n] = '\0';
	len = strlen(s);

	fz_cursor(s, d, n);
	fz_b64(d, n);
	if (codec_utf8_valid((const char *)d, n) != fz_utf8_ref(d, n))
		fz_fail("codec_utf8_valid disagrees with table 3-7", d, n);
	fz_u64(s, len);
	free(s);
	return 0;
}
