/*
 * cursor: an opaque, URL-safe position in one process's output.
 *
 * Text form "<seq>-<tag>": seq is the decimal index sequence number of the
 * last chunk delivered (0 = before the first), tag is 8 lowercase hex
 * digits of SHA-256("<bootId>/<id>"), so a cursor of another boot or ID is
 * refused.  Only [0-9a-f-] are used.
 */
#ifndef TEND_CURSOR_H
#define TEND_CURSOR_H

#include <stdint.h>

#define CURSOR_MAX	40

void	cursor_format(char out[CURSOR_MAX], const char *boot, const char *id,
	    uint64_t seq);
/* 0 and *seq, or -1 (malformed, or of another boot or id). */
int	cursor_parse(const char *, const char *boot, const char *id,
	    uint64_t *seq);

#endif
