/*
 * api_errno.c: the errno table.  See api_errno.h.
 */
#include <errno.h>
#include <stddef.h>

#include "api_errno.h"

/*
 * Grouped by what the client can do about it: look elsewhere (404), not
 * here (403), not now or not so (409), free space (507), send less
 * (413), ask otherwise (400), retry (503).  ETXTBSY and EFBIG have no
 * Connect code of their own in envd's answers: internal, as envd says.
 */
static const struct api_errno	api_errnos[] = {
	{ ENOENT,	404, "not_found",	"not_found",		false },
	{ ELOOP,	403, "forbidden",	"permission_denied",	true },
	{ EACCES,	403, "forbidden",	"permission_denied",	false },
	{ EPERM,	403, "forbidden",	"permission_denied",	false },
	{ EROFS,	403, "forbidden",	"permission_denied",	false },
	{ EEXIST,	409, "conflict",	"already_exists",	false },
	{ ENOTEMPTY,	409, "conflict",	"failed_precondition",	false },
	{ EBUSY,	409, "conflict",	"failed_precondition",	false },
	{ ETXTBSY,	409, "conflict",	"internal",		false },
	{ EXDEV,	409, "cross_device",	"failed_precondition",	false },
	{ ENOSPC,	507, "no_space",	"resource_exhausted",	false },
	{ EDQUOT,	507, "no_space",	"resource_exhausted",	false },
	{ EFBIG,	413, "too_large",	"internal",		false },
	{ EISDIR,	400, "invalid_request",	"invalid_argument",	false },
	{ ENOTDIR,	400, "invalid_request",	"invalid_argument",	false },
	{ EINVAL,	400, "invalid_request",	"invalid_argument",	false },
	{ ENAMETOOLONG,	400, "invalid_request",	"invalid_argument",	false },
	{ EMFILE,	503, "busy",		"resource_exhausted",	false },
	{ ENFILE,	503, "busy",		"resource_exhausted",	false },
	{ ENOMEM,	503, "busy",		"resource_exhausted",	false },
	{ EAGAIN,	503, "busy",		"resource_exhausted",	false },
};

static const struct api_errno	api_errno_other = {
	0, 500, "internal", "internal", false
};

const struct api_errno *
api_errno(int err)
{
	size_t	i;

	for (i = 0; i < sizeof(api_errnos) / sizeof(api_errnos[0]); i++)
		if (api_errnos[i].err == err)
			return &api_errnos[i];
	return &api_errno_other;
}
