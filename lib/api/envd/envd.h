/*
 * envd: what envd's API (E2B's in-sandbox daemon, served by
 * lib/api_envd*.c) keeps between requests and derives for each one —
 * the default user, workdir and environment (--envd-user, POST /init),
 * the user a request runs as (Authorization: Basic base64("user:")),
 * its paths and a process's environment — and the Connect replies over
 * HTTP that every envd route module sends (unary errors, streams).
 */
#ifndef TEND_ENVD_H
#define TEND_ENVD_H

#include <sys/types.h>

#include <stdbool.h>
#include <cjson/cJSON.h>

#include "base/tunables.h"
#include "net/http.h"

struct envd {
	char		 user[USER_NAME_MAX];	/* default user */
	char		*workdir;	/* /init's defaultWorkdir, or NULL */
	cJSON		*vars;		/* /init's envVars: name -> value */
	size_t		 vars_bytes;	/* their names' and values' bytes */
	int		 nvars;		/* their entries */
	char		*path;		/* PATH=..., the agent's, for children */
};

/* The account a request runs as. */
struct envd_user {
	uid_t		 uid;
	gid_t		 gid;
	char		 name[USER_NAME_MAX];	/* "" for a bare uid */
	char		 home[USER_HOME_MAX];
};

/* A refusal, as envd's: the Connect code and a message. */
struct envd_err {
	const char	*code;
	char		 message[API_ERR_MSG_MAX];
};

/*
 * user: --envd-user (NULL: root; looked up per request, so that a passwd
 * edited later counts); path: the agent's PATH (NULL: a default).  -1
 * and errno when memory is short.
 */
int	envd_init(struct envd *, const char *user, const char *path);
void	envd_free(struct envd *);

void	envd_err_set(struct envd_err *, const char *code, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));

/*
 * The user of a request: the Basic credentials' name, else the default.
 * -1 with unauthenticated (a name not known, a malformed header).
 */
int	envd_request_user(const struct envd *, struct http_req *,
	    struct envd_user *, struct envd_err *);
/*
 * name (a name or a uid) as an account; "root" is uid 0 even without a
 * passwd entry.  -1 with unauthenticated, errno EINVAL (not a name or
 * uid), ENOENT (no such user) or what reading the file said.
 */
int	envd_user_lookup(const char *name, struct envd_user *,
	    struct envd_err *);

/*
 * A path of a request, as envd resolves it: "" is the default workdir
 * (/init's, else the user's home), "~" and "~/..." the home, a relative
 * path joined to the home; "." and ".." resolved lexically.  -1 with
 * invalid_argument ("~user", too long).  dflt: an empty path takes the
 * default workdir; else it stays "" (the caller refuses it).
 */
int	envd_path(const struct envd *, const struct envd_user *,
	    const char *path, bool dflt, char *out, size_t n,
	    struct envd_err *);

/*
 * A process's environment, "K=V" each, NULL-ended, later entries
 * replacing earlier ones of the same name: PATH, HOME, USER, LOGNAME,
 * then /init's vars, then envs (an object of strings, or NULL).  NULL
 * with invalid_argument (a value not a string, a bad name) or
 * resource_exhausted.  Free with envd_env_free.
 */
char	**envd_environ(const struct envd *, const struct envd_user *,
	    const cJSON *envs, struct envd_err *);
void	envd_env_free(char **);

/*
 * POST /init's body (envVars merged into the vars, defaultUser,
 * defaultWorkdir; accessToken and the rest ignored): 0, or -1 with
 * invalid_argument and nothing changed.
 */
int	envd_apply_init(struct envd *, const cJSON *, struct envd_err *);

/* ------------------------------------------------------------------ */
/* Replies */

/* A unary error: the code's HTTP status and {"code","message"}. */
void	envd_reply_err(struct http_conn *, const struct envd_err *);
/* A unary reply: 200 and the message (freed). */
void	envd_reply(struct http_conn *, cJSON *);
/*
 * A unary request's message: the body as a JSON object ("" reads as
 * {}).  NULL with invalid_argument or resource_exhausted.
 */
cJSON	*envd_unary_body(struct http_req *, struct envd_err *);
/*
 * A server stream's request message (one envelope).  NULL with the
 * error the stream is to end with.
 */
cJSON	*envd_stream_body(struct http_req *, struct envd_err *);

/* The stream's head: 200 application/connect+json.  -1: dead. */
int	envd_stream_begin(struct http_conn *);
/* One message (json, NUL-terminated).  -1: dead (or out of memory). */
int	envd_stream_msg(struct http_conn *, const char *json);
/* The end-stream frame (e NULL: {}), and the response's end. */
void	envd_stream_end(struct http_conn *, const struct envd_err *);
/* A stream refused before its first message: head, error frame, end. */
void	envd_stream_fail(struct http_conn *, const struct envd_err *);
/*
 * Keepalive-Ping-Interval in seconds (ENVD_KEEPALIVE_DEFAULT when
 * absent or malformed, at most ENVD_KEEPALIVE_MAX).
 */
double	envd_keepalive(struct http_req *);
/*
 * Connect-Timeout-Ms into *ms (0 when absent): 0, or -1 with
 * invalid_argument when it is not 1 to CONNECT_TIMEOUT_DIGITS digits.
 */
int	envd_timeout(struct http_req *, uint64_t *ms, struct envd_err *);

/*
 * A server stream's timers, inside the struct that owns the stream: a
 * keepalive message (ping) after Keepalive-Ping-Interval seconds without
 * one, and the stream's own deadline (Connect-Timeout-Ms), at which it
 * ends with deadline_exceeded.  release frees the owner (its timers
 * stopped with envd_timers_stop): at envd_stream_finish, and so at the
 * deadline.
 */
struct envd_timers {
	ev_timer	  keep;
	ev_timer	  deadline;
	struct ev_loop	 *loop;
	struct http_conn *c;
	const char	 *ping;		/* the keepalive message, static */
	void		(*release)(void *);
	void		 *owner;
};

void	envd_timers_init(struct envd_timers *, struct ev_loop *,
	    struct http_conn *, struct http_req *, const char *ping,
	    void (*release)(void *), void *owner);
/* After the stream's first message; deadline_ms 0: none. */
void	envd_timers_start(struct envd_timers *, uint64_t deadline_ms);
/* A message went out: the keepalive waits a whole interval again. */
void	envd_timers_touch(struct envd_timers *);
void	envd_timers_stop(struct envd_timers *);
/*
 * The stream is over: the connection disowned, the owner released, the
 * end-stream frame (e NULL: {}) and the response's end.
 */
void	envd_stream_finish(struct envd_timers *, const struct envd_err *);

/* Unknown RPCs of an envd service: unimplemented, as Connect says. */
void	envd_unimplemented(struct http_conn *, struct http_req *);

#endif
