/*
 * jsonstr.c: system bytes as JSON strings.  See jsonstr.h; the rule on
 * the wire is proto/README.md's (§2, "Names that are not UTF-8").
 *
 * cJSON copies a string's bytes as they are, so the check is made here,
 * once per string; the common case, valid UTF-8, costs a scan and no
 * copy.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "codec.h"
#include "jsonstr.h"

/* Room for "<key>Bytes": the keys are short field names. */
#define JSONSTR_KEY_MAX	64

static int	jsonstr_valid(const char *);
static cJSON	*jsonstr_b64(const char *);

static int
jsonstr_valid(const char *s)
{
	return codec_utf8_valid(s, strlen(s));
}

cJSON *
jsonstr_text(const char *s)
{
	struct buf	 b = { 0 };
	cJSON		*j;

	if (jsonstr_valid(s))
		return cJSON_CreateString(s);
	if (codec_utf8_repair(&b, s, strlen(s)) == -1 ||
	    buf_add(&b, "", 1) == -1) {
		buf_free(&b);
		errno = ENOMEM;
		return NULL;
	}
	j = cJSON_CreateString(buf_head(&b));
	buf_free(&b);
	return j;
}

cJSON *
jsonstr_add(cJSON *o, const char *key, const char *s)
{
	cJSON	*j;

	if ((j = jsonstr_text(s)) == NULL)
		return NULL;
	if (!cJSON_AddItemToObject(o, key, j)) {
		cJSON_Delete(j);
		errno = ENOMEM;
		return NULL;
	}
	return j;
}

/* A string item of the base64 of s's bytes.  NULL on ENOMEM. */
static cJSON *
jsonstr_b64(const char *s)
{
	struct buf	 b = { 0 };
	cJSON		*j = NULL;

	if (codec_b64_encode(&b, s, strlen(s)) == 0 &&
	    buf_add(&b, "", 1) == 0)
		j = cJSON_CreateString(buf_head(&b));
	buf_free(&b);
	if (j == NULL)
		errno = ENOMEM;
	return j;
}

int
jsonstr_add_bytes(cJSON *o, const char *key, const char *s)
{
	char	 bkey[JSONSTR_KEY_MAX];
	cJSON	*j;

	if (jsonstr_add(o, key, s) == NULL)
		return -1;
	if (jsonstr_valid(s))
		return 0;
	/* A key too long is a caller's bug: the text alone, not a cut key. */
	if (snprintf(bkey, sizeof(bkey), "%sBytes", key) >=
	    (int)sizeof(bkey)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((j = jsonstr_b64(s)) == NULL)
		return -1;
	if (!cJSON_AddItemToObject(o, bkey, j)) {
		cJSON_Delete(j);
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

int
jsonstr_add_strv(cJSON *o, const char *key, char *const *v)
{
	char	 bkey[JSONSTR_KEY_MAX];
	cJSON	*a, *b = NULL, *j;
	size_t	 i;
	int	 valid = 1;

	if ((a = cJSON_AddArrayToObject(o, key)) == NULL)
		goto nomem;
	for (i = 0; v[i] != NULL; i++) {
		if ((j = jsonstr_text(v[i])) == NULL ||
		    !cJSON_AddItemToArray(a, j)) {
			cJSON_Delete(j);
			goto nomem;
		}
		valid &= jsonstr_valid(v[i]);
	}
	if (valid)
		return 0;
	if (snprintf(bkey, sizeof(bkey), "%sBytes", key) >=
	    (int)sizeof(bkey)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((b = cJSON_AddArrayToObject(o, bkey)) == NULL)
		goto nomem;
	for (i = 0; v[i] != NULL; i++) {
		if ((j = jsonstr_b64(v[i])) == NULL ||
		    !cJSON_AddItemToArray(b, j)) {
			cJSON_Delete(j);
			goto nomem;
		}
	}
	return 0;
nomem:
	errno = ENOMEM;
	return -1;
}
