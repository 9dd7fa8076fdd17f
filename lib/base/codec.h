/*
 * codec: small encodings used on the wire (base64, RFC 3339 time, hex).
 */
#ifndef TEND_CODEC_H
#define TEND_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"

#define TIME_MAX	32	/* "2026-07-08T00:00:00.000Z" + NUL */

/* Append the base64 (standard alphabet, padded) of d to b.  -1 on ENOMEM. */
int	codec_b64_encode(struct buf *b, const void *d, size_t n);
/* Decode s (standard alphabet, padding optional) into b. -1 if invalid. */
int	codec_b64_decode(struct buf *b, const char *s, size_t n);

/* Milliseconds since the epoch, wall clock / monotonic. */
int64_t	codec_now_ms(void);
int64_t	codec_mono_ms(void);
/* RFC 3339 UTC with milliseconds. */
void	codec_time(char out[TIME_MAX], int64_t ms);

/* The value of hex digit c (either case), or -1. */
int	codec_hexval(int c);
/* Lowercase hex of n bytes into out (2n+1 bytes). */
void	codec_hex(char *out, const void *d, size_t n);

/* Non-negative decimal integer without sign or junk; -1 otherwise. */
int	codec_parse_u64(const char *, uint64_t *);
/* "256M" (binary suffixes K M G T, "Ki"/"B" allowed; > 0): 0, or -1 EINVAL. */
int	codec_parse_size(const char *, int64_t *);

/* Well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF)? */
int	codec_utf8_valid(const char *, size_t);
/* Append s to b, each byte of an ill-formed sequence as U+FFFD.  -1: ENOMEM. */
int	codec_utf8_repair(struct buf *b, const char *s, size_t n);

/* Symbolic errno name ("ENOENT"), or "EUNKNOWN". */
const char *codec_errno_name(int);

#endif
