/*
 * cursor.c: "<seq>-<tag>" positions in one process's output.
 *
 * The tag binds a cursor to one boot and one ID so that a client that
 * kept a cursor across an agent restart, or mixed up two processes, is
 * told so instead of being given the wrong bytes.  It is a check, not a
 * secret: 32 bits of SHA-256 are plenty to catch mistakes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <nettle/sha2.h>

#include "base/codec.h"
#include "cursor.h"

#define CURSOR_TAGLEN	8	/* hex digits */
#define CURSOR_SEQMAX	20	/* digits of UINT64_MAX */

static void	cursor_tag(char[CURSOR_TAGLEN + 1], const char *, const char *);

static void
cursor_tag(char tag[CURSOR_TAGLEN + 1], const char *boot, const char *id)
{
	struct sha256_ctx	ctx;
	uint8_t			d[SHA256_DIGEST_SIZE];

	sha256_init(&ctx);
	sha256_update(&ctx, strlen(boot), (const uint8_t *)boot);
	sha256_update(&ctx, 1, (const uint8_t *)"/");
	sha256_update(&ctx, strlen(id), (const uint8_t *)id);
	sha256_digest(&ctx, sizeof(d), d);
	codec_hex(tag, d, CURSOR_TAGLEN / 2);
}

void
cursor_format(char out[CURSOR_MAX], const char *boot, const char *id,
    uint64_t seq)
{
	char	tag[CURSOR_TAGLEN + 1];

	cursor_tag(tag, boot, id);
	snprintf(out, CURSOR_MAX, "%llu-%s", (unsigned long long)seq, tag);
}

/*
 * Only the exact text cursor_format makes is accepted: no sign, no
 * leading zero, no upper-case tag, nothing after the tag.  One spelling
 * per position keeps Last-Event-ID comparisons trivial.
 */
int
cursor_parse(const char *s, const char *boot, const char *id, uint64_t *seq)
{
	char		 num[CURSOR_SEQMAX + 1], tag[CURSOR_TAGLEN + 1];
	const char	*dash;
	size_t		 len, nlen;
	uint64_t	 v;

	if (s == NULL)
		goto bad;
	len = strnlen(s, CURSOR_MAX);
	if (len == CURSOR_MAX || (dash = memchr(s, '-', len)) == NULL)
		goto bad;
	nlen = dash - s;
	if (nlen == 0 || nlen > CURSOR_SEQMAX)
		goto bad;
	if (nlen > 1 && s[0] == '0')
		goto bad;
	if (len - nlen - 1 != CURSOR_TAGLEN)
		goto bad;
	memcpy(num, s, nlen);
	num[nlen] = '\0';
	if (codec_parse_u64(num, &v) == -1)
		goto bad;
	cursor_tag(tag, boot, id);
	if (memcmp(dash + 1, tag, CURSOR_TAGLEN) != 0)
		goto bad;
	*seq = v;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}
