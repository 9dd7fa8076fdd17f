/*
 * jsonstr: bytes from the system (a file name, a link's text, a path, an
 * argv element, a cwd) as JSON strings.  Such bytes need not be UTF-8,
 * and JSON text must be: a raw 0xff makes a whole reply unparsable to a
 * strict client.  So each ill-formed byte is shown as U+FFFD, and where
 * the exact bytes matter the caller also asks for "<key>Bytes", their
 * base64, present only when the bytes were not valid UTF-8.
 */
#ifndef TEND_JSONSTR_H
#define TEND_JSONSTR_H

#include <cjson/cJSON.h>

/* A string item of s, each ill-formed byte as U+FFFD.  NULL on ENOMEM. */
cJSON	*jsonstr_text(const char *s);
/* Add s to o under key as jsonstr_text makes it: the item, or NULL. */
cJSON	*jsonstr_add(cJSON *o, const char *key, const char *s);
/*
 * As jsonstr_add, and when s is not valid UTF-8 a sibling "<key>Bytes",
 * the base64 of s's exact bytes.  -1 with errno: ENOMEM, or ENAMETOOLONG
 * for a key of 59 bytes or more (o may hold key then).
 */
int	 jsonstr_add_bytes(cJSON *o, const char *key, const char *s);
/*
 * The NULL-terminated v as an array of texts under key; when any element
 * is not valid UTF-8, a sibling "<key>Bytes" array with the base64 of
 * every element, index for index.  -1 with errno as jsonstr_add_bytes.
 */
int	 jsonstr_add_strv(cJSON *o, const char *key, char *const *v);

#endif
