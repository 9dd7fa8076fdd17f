/*
 * api_errno: what an errno of the engine means to a client, in one
 * table for every front-end: the HTTP status and tend's code that the
 * file and watch routes (and envd's /files) answer with, and the Connect
 * code of envd's filesystem service.  The engine speaks errno (files.h,
 * tar.h, watch.h); only the api layer names it.
 */
#ifndef TEND_API_ERRNO_H
#define TEND_API_ERRNO_H

#include <stdbool.h>

struct api_errno {
	int		 err;
	int		 status;	/* HTTP */
	const char	*code;		/* tend's "code" */
	const char	*connect;	/* Connect's, as envd's answers go */
	bool		 outside;	/* ELOOP: out of the root (files.h) */
};

/*
 * err's row.  An errno not in the table is 500 internal (Connect
 * internal); the route adds "errno": codec_errno_name(err).
 */
const struct api_errno *api_errno(int err);

#endif
