/*
 * api_session: the bridge's execution sessions, POST
 * /v1/sandbox/{id}/session and DELETE .../session/{sid}.  tend runs
 * every command on its own, so a session is only what an exec naming it
 * in Session-Id starts from: a working directory and an environment.
 */
#ifndef TEND_API_SESSION_H
#define TEND_API_SESSION_H

#include <limits.h>

#include "api/api.h"

void	api_session_create(struct http_conn *, struct http_req *);
void	api_session_delete(struct http_conn *, struct http_req *);
/*
 * An exec body j with Session-Id sid (NULL: none): the session's cwd when
 * j has none, its env under j's.  An unknown session adds nothing; an ID
 * outside the bridge's alphabet is -1 with 400.
 */
int	api_session_apply(const char *sid, cJSON *j, struct api_err *);
/*
 * A fresh terminal's start in session sid (NULL: none): its cwd into buf
 * (*cwd then points at it; NULL when there is no such session) and its
 * env as "K=V" entries into *env (NULL without one; freed with
 * api_launch_free).  An ID outside the bridge's alphabet is -1 with 400.
 */
int	api_session_term(const char *sid, const char **cwd, char buf[PATH_MAX],
	    char ***env, struct api_err *);
/* Every session gone (DELETE /v1/sandbox/{id}). */
void	api_session_clear(void);

#endif
