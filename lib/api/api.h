/*
 * api: the bridge protocol's route table, its dispatch, and the helpers
 * the route modules share (the boot a request is pinned to, the process
 * it names, the launch body, errors as values).
 *
 * Each resource's routes live in their own module (api_proc, api_output,
 * api_exec, api_health, ...), which exports its table; the agent lists
 * the modules (agent_routes) and api_listen joins them, so that the
 * dependencies run one way: agent -> api_* -> api.
 * Validators do not reply: they fill a struct api_err and return -1 (or
 * NULL), and the handler replies with api_reply_err — so tests and
 * fuzzers call them without a server.
 */
#ifndef TEND_API_H
#define TEND_API_H

#include <stdbool.h>
#include <stdint.h>

#include "core/proc.h"
#include "core/term.h"
#include "net/http.h"

struct api_files;
struct watchtab;
struct envd;

struct api {
	struct proctab		*tab;
	struct api_files	*files;		/* api_files.c's roots */
	struct watchtab		*watches;	/* lib/watch.c's, on the files root */
	struct envd		*envd;		/* envd's defaults (lib/envd.h) */
	struct termtab		*terms;
	struct http_server	*srv;
	const char		*default_user;	/* --default-user, or NULL */
	int64_t			 started_mono;	/* ms */
	uint64_t		 followers;	/* active log streams */
};

/* A refusal: the reply's status and {"error","code"[,"field"]}. */
struct api_err {
	int		 status;
	const char	*code;
	const char	*field;		/* NULL: no "field" in the reply */
	char		 message[API_ERR_MSG_MAX];
};

/*
 * A second namespace, handed in by whoever serves one (the agent hands in
 * the bridge's): rewrite changes a path of the namespace in place (never
 * longer) to the path its routes match and answers true, and leaves any
 * other path alone; routes (NULL-ended) are matched for a rewritten path.
 */
struct api_ns {
	bool				  (*rewrite)(char **path);
	const struct http_route *const	 *routes;
};

/*
 * The agent's server on path: the routes of modules (NULL-ended, in the
 * order they are matched; at most API_ROUTES_MAX in all), with ns's
 * namespace mapped before them if ns is not NULL.  -1 with errno set.
 */
int	api_listen(struct api *, struct ev_loop *, const char *path,
	    int maxconns, const struct http_route *const *modules,
	    const struct api_ns *ns);
/* api_listen serves on fd, already listening, instead of binding path. */
void	api_listen_handed(int fd);
struct api	*api_of(struct http_conn *);

/* Errors as values. */
void	api_err_set(struct api_err *, int status, const char *code,
	    const char *field, const char *fmt, ...)
	    __attribute__((format(printf, 5, 6)));
/* 400 invalid_request "field: why", naming the field. */
void	api_err_invalid(struct api_err *, const char *field, const char *why);
void	api_reply_err(struct http_conn *, const struct api_err *);
/* 503 busy: out of memory. */
void	api_err_nomem(struct api_err *);

/*
 * The boot a request is pinned to: 0 for the current one; 1 for a
 * retained earlier boot (*procsfd opened) when the call only reads; -1
 * with 410 stale_boot.
 */
int	api_pin(struct api *, struct http_req *, bool readonly, int *procsfd,
	    struct api_err *);
/* The boot a request names (header, then ?boot= into q), or NULL. */
const char *api_boot_named(struct http_req *, char *q, size_t n);
/* The current boot's process named by the route's first {}, or 404. */
struct proc *api_proc(struct api *, struct http_req *, struct api_err *);
/*
 * Parse a launch body into opts (pointers into j; *envbuf and *argvbuf
 * to be freed with api_launch_free, also after -1).  exec: "stdin" is
 * data, not a mode.  defuser: the user when the body names none, or NULL.
 */
int	api_launch_opts(const cJSON *j, bool exec, const char *defuser,
	    struct proc_opts *, char ***argvbuf, char ***envbuf,
	    struct api_err *);

/* The account and confinement a body asks for (launch, exec, terminals). */
struct api_confine {
	bool			 has_user;
	uid_t			 uid;
	gid_t			 gid;
	char			 user[USER_NAME_MAX];	/* its name, or "" */
	struct spawn_confine	 sc;
	struct cgroup_limits	 limits;
};
/*
 * j's "user" (or defuser when it has none), "noNewPrivs", "seccomp",
 * "network", "rlimits" and "limits" into *c: 0, or -1 with 400 naming
 * the field (422 limits_unavailable for a limit that cannot be had).
 */
int	api_confine_opts(const cJSON *j, const char *defuser,
	    struct api_confine *c, struct api_err *);
void	api_launch_free(char **argv, char **env);
/*
 * A request body as JSON: well-formed UTF-8, one JSON value and nothing
 * after it, no NUL inside strings.  NULL with 400.
 */
cJSON	*api_parse_body(const char *, size_t, struct api_err *);
/* A JSON number that is a whole number within [lo, hi]. */
bool	api_integer(const cJSON *, double lo, double hi);
/* A boolean query flag: 0 and *v (dflt when absent), or -1 with 400. */
int	api_query_flag(struct http_req *, const char *key, int dflt, int *v,
	    struct api_err *);
void	api_reply_spawn_error(struct http_conn *, bool spawn_failed, int err,
	    const char *id);

#endif
