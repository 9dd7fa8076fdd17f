/*
 * api_pty.c: the bridge's /pty (see api_pty.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>

#include "api/api.h"
#include "api/api_term_src.h"
#include "api/api_term_ws.h"
#include "api_bridge.h"
#include "api_pty.h"
#include "api_sandbox.h"
#include "api_session.h"
#include "core/term.h"
#include "store/record.h"

/* The terminal a /pty request names (header, then query), or NULL. */
static const char *
api_pty_id(struct http_req *r, char *q, size_t n)
{
	const char	*h;

	if ((h = http_header(r, "Terminal-Id")) != NULL && h[0] != '\0')
		return h;
	if (http_query(r, "terminalId", q, n) == 1 && q[0] != '\0')
		return q;
	return NULL;
}

/*
 * The session a /pty names (Session-Id, which wins, or session): a fresh
 * terminal starts from its cwd and env, as the bridge scopes the PTY to
 * the session.  None named, or an unknown one: *cwd and *env NULL.
 */
static int
api_pty_session(struct http_req *r, const char **cwd, char buf[PATH_MAX],
    char ***env, struct api_err *e)
{
	const char	*sid;
	char		 q[API_BRIDGE_ID_MAX + 2];
	int		 rc;

	if ((sid = http_header(r, "Session-Id")) == NULL) {
		/* One too long for the buffer is too long for an ID. */
		if ((rc = http_query(r, "session", q, sizeof(q))) == -1) {
			api_err_set(e, 400, "invalid_request", NULL,
			    "Invalid session ID format");
			return -1;
		}
		if (rc == 1 && q[0] != '\0')
			sid = q;
	}
	return api_session_term(sid, cwd, buf, env, e);
}

/*
 * The query's cwd confined to the workspace, as the bridge's exec's:
 * the normalised copy in buf, or when there is none and the terminal is
 * a new one the session's (scwd) or the default (the workspace); NULL
 * for a reattach; -1 with 403.  One too long for a path is not in the
 * workspace either.
 */
static int
api_pty_cwd(struct api *a, struct http_req *r, bool reattach,
    const char *scwd, const char **cwd, char buf[PATH_MAX], struct api_err *e)
{
	char	q[PATH_MAX];
	int	rc;

	*cwd = NULL;
	if ((rc = http_query(r, "cwd", q, sizeof(q))) == 0 ||
	    (rc == 1 && q[0] == '\0')) {
		if (!reattach)
			*cwd = scwd != NULL ? scwd :
			    api_sandbox_default_cwd(a->files);
		return 0;
	}
	*cwd = rc == 1 ? q : "";
	return api_sandbox_cwd_path(a->files, cwd, buf, e);
}

/* A terminal for /pty: the named one, or a new one (shell, cwd, env, size). */
static struct term *
api_pty_term(struct http_req *r, struct termtab *tt, const char *id,
    const char *cwd, char **env, unsigned int cols, unsigned int rows,
    struct api_err *e)
{
	struct term_opts	 o = { 0 };
	struct term		*t;
	char			 shell[PATH_MAX], *argv[2];
	bool			 failed;
	int			 err;

	if (id != NULL && (t = term_find(tt, id)) != NULL)
		return t;
	if (id != NULL && !record_id_valid(id)) {
		api_err_set(e, 400, "invalid_request", "terminalId",
		    "terminalId: must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$");
		return NULL;
	}
	if (http_query(r, "shell", shell, sizeof(shell)) == 1 &&
	    shell[0] != '\0') {
		argv[0] = shell;
		argv[1] = NULL;
		o.argv = argv;
	}
	o.cwd = cwd;
	o.env = env;
	o.id = id;
	o.cols = cols;
	o.rows = rows;
	if ((t = term_create(tt, &o, &failed, &err)) != NULL)
		return t;
	if (err == EAGAIN)
		api_err_set(e, 503, "busy", NULL, "terminal limit reached");
	else
		api_err_set(e, failed ? 400 : 500, failed ? "spawn_failed" :
		    "internal", NULL, "cannot start the terminal: %s",
		    strerror(err));
	return NULL;
}

/*
 * The boot a /pty request reads: a named terminal may be an earlier
 * boot's (its record into the session's source: 1); a fresh one is
 * always this boot's (0).  -1 with e.
 */
static int
api_pty_boot(struct api *a, struct http_req *r, const char *id,
    struct api_term_ws *s, struct api_err *e)
{
	int	fd;

	if (id != NULL)
		return api_term_src_open(a, r, id, api_term_ws_src(s), e);
	return api_pin(a, r, false, &fd, e);
}

/*
 * The bridge's GET /v1/sandbox/{id}/pty?cols=&rows=&shell=&cwd=&terminalId=
 * &session= (routed as /v1/pty).
 */
static void
api_pty_get(struct http_conn *c, struct http_req *r)
{
	struct api		*a = api_of(c);
	struct api_err		 e;
	struct api_term_ws	*s;
	struct term		*t = NULL;
	const char		*id, *cwd, *scwd;
	unsigned int		 cols, rows;
	char			 hdr[64], q[PROC_ID_MAX + 2], buf[PATH_MAX];
	char			 sbuf[PATH_MAX], **env = NULL;
	bool			 found;
	int			 rc;

	if ((s = api_term_ws_new(c, a->terms, true)) == NULL)
		return;
	id = api_pty_id(r, q, sizeof(q));
	found = id != NULL && term_find(a->terms, id) != NULL;
	if ((rc = api_pty_boot(a, r, id, s, &e)) == -1 ||
	    api_term_ws_dims(r, &cols, &rows, &e) == -1 ||
	    api_term_ws_handshake(r, hdr, sizeof(hdr), &e) == -1 ||
	    api_pty_session(r, &scwd, sbuf, &env, &e) == -1 ||
	    api_pty_cwd(a, r, found || rc != 0, scwd, &cwd, buf, &e) == -1) {
		api_term_ws_refuse(c, s, &e);
		goto out;
	}
	/* An earlier boot's record (rc 1) is read as it is: no terminal. */
	if (rc == 0 && (t = api_pty_term(r, a->terms, id, cwd, env, cols, rows,
	    &e)) == NULL) {
		api_term_ws_refuse(c, s, &e);
		goto out;
	}
	api_term_ws_set_term(s, t, id == NULL);
	if (api_term_ws_follow(s, NULL, &e) == -1) {
		api_term_ws_refuse(c, s, &e);
		goto out;
	}
	if (rc == 0 && found && cols != 0 && rows != 0 && !term_ended(t))
		(void)term_resize(t, cols, rows);
	api_term_ws_attach(c, s, hdr);
out:
	api_launch_free(NULL, env);
}

const struct http_route api_pty_bridge_routes[] = {
	{ "GET",	"/v1/pty",		api_pty_get, NULL },
	{ NULL, NULL, NULL, NULL }
};
