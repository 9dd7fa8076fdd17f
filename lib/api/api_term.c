/*
 * api_term.c: the terminal resources' REST routes — create (and
 * reattach), list, status, delete, interrupt, terminate, resize, input.
 * The engine is term.c; connect and the output stream are not here.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "api_input.h"
#include "api_term.h"
#include "base/log.h"
#include "core/term.h"
#include "store/boot.h"
#include "store/record.h"

static int	api_term_err(struct api_err *, int, const char *,
		    const char *, const char *);
static int	api_term_dims(const cJSON *, unsigned int *, unsigned int *,
		    struct api_err *);
static int	api_term_strv(const cJSON *, char ***, struct api_err *);
static int	api_term_env(const cJSON *, char ***, struct api_err *);
static int	api_term_opts(const cJSON *, const char *, struct term_opts *,
		    char ***, char ***, struct api_confine *, struct api_err *);
static struct termtab *api_terms(struct http_conn *);
static struct term *api_term_of(struct http_conn *, struct http_req *);
static int	api_term_pinned(struct http_conn *, struct http_req *);

static void	api_term_create(struct http_conn *, struct http_req *);
static void	api_term_list(struct http_conn *, struct http_req *);
static void	api_term_get(struct http_conn *, struct http_req *);
static void	api_term_delete(struct http_conn *, struct http_req *);
static void	api_term_interrupt(struct http_conn *, struct http_req *);
static void	api_term_terminate(struct http_conn *, struct http_req *);
static void	api_term_resize(struct http_conn *, struct http_req *);
static void	api_term_input(struct http_conn *, struct http_req *);
static void	api_term_input_body(struct http_conn *, struct http_req *,
		    const char *, size_t);

/* api_pin, replying when it refuses: -1 then. */
static int
api_term_pin(struct http_conn *c, struct http_req *r, bool readonly, int *fd)
{
	struct api_err	e;
	int		rc;

	if ((rc = api_pin(api_of(c), r, readonly, fd, &e)) == -1)
		api_reply_err(c, &e);
	return rc;
}

/* The JSON body, or NULL after replying 400. */
static cJSON *
api_term_body(struct http_conn *c, struct http_req *r)
{
	struct api_err	 e;
	cJSON		*j;

	if ((j = api_parse_body(r->body.data, r->body.len, &e)) == NULL)
		api_reply_err(c, &e);
	return j;
}

/* ------------------------------------------------------------------ */
/* Validation: an error value, never a reply */

/* api_err_set as "field: msg", and -1 to return. */
static int
api_term_err(struct api_err *e, int status, const char *code,
    const char *field, const char *msg)
{
	api_err_set(e, status, code, field, "%s%s%s", field ? field : "",
	    field ? ": " : "", msg);
	return -1;
}

/* "cols" and "rows" of j, each optional: integers 1..PTY_MAX_DIM. */
static int
api_term_dims(const cJSON *j, unsigned int *cols, unsigned int *rows,
    struct api_err *e)
{
	static const char *const names[2] = { "cols", "rows" };
	unsigned int	*out[2] = { cols, rows };
	const cJSON	*f;
	int		 i;

	for (i = 0; i < 2; i++) {
		if ((f = cJSON_GetObjectItemCaseSensitive(j, names[i])) == NULL)
			continue;
		if (!api_integer(f, 1, PTY_MAX_DIM))
			return api_term_err(e, 400, "invalid_request", names[i],
			    "must be a positive integer <= 10000");
		*out[i] = (unsigned int)f->valuedouble;
	}
	return 0;
}

/* argv: a non-empty array of strings, argv[0] non-empty. */
static int
api_term_strv(const cJSON *f, char ***argvbuf, struct api_err *e)
{
	const cJSON	*x;
	char		**v;
	int		  n, i = 0;

	if (!cJSON_IsArray(f) || (n = cJSON_GetArraySize(f)) == 0)
		return api_term_err(e, 400, "invalid_request", "argv",
		    "must be a non-empty array of strings");
	if (n > PROC_MAX_ARGV)
		return api_term_err(e, 413, "too_large", "argv",
		    "too many elements");
	if ((v = calloc(n + 1, sizeof(char *))) == NULL)
		return api_term_err(e, 503, "busy", NULL, "out of memory");
	*argvbuf = v;
	cJSON_ArrayForEach(x, f) {
		if (!cJSON_IsString(x))
			return api_term_err(e, 400, "invalid_request", "argv",
			    "must be a non-empty array of strings");
		v[i++] = x->valuestring;
	}
	if (v[0][0] == '\0')
		return api_term_err(e, 400, "invalid_request", "argv",
		    "argv[0] must not be empty");
	return 0;
}

/* env: an object of strings, as "K=V" entries. */
static int
api_term_env(const cJSON *f, char ***envbuf, struct api_err *e)
{
	const cJSON	*x;
	char		**v;
	int		  n, i = 0;

	if (!cJSON_IsObject(f))
		return api_term_err(e, 400, "invalid_request", "env",
		    "must be an object of strings");
	if ((n = cJSON_GetArraySize(f)) > PROC_MAX_ENV)
		return api_term_err(e, 413, "too_large", "env",
		    "too many entries");
	if ((v = calloc(n + 1, sizeof(char *))) == NULL)
		return api_term_err(e, 503, "busy", NULL, "out of memory");
	*envbuf = v;
	cJSON_ArrayForEach(x, f) {
		if (!cJSON_IsString(x))
			return api_term_err(e, 400, "invalid_request", "env",
			    "values must be strings");
		if (x->string[0] == '\0' || strchr(x->string, '=') != NULL)
			return api_term_err(e, 400, "invalid_request", "env",
			    "names must be non-empty and contain no '='");
		if (asprintf(&v[i], "%s=%s", x->string, x->valuestring) == -1) {
			v[i] = NULL;
			return api_term_err(e, 503, "busy", NULL,
			    "out of memory");
		}
		i++;
	}
	return 0;
}

/*
 * The body of POST /v1/terminals: {"argv","cwd","env","cols","rows"}
 * (the bridge's rules), tend's "id" and "bufferSize", and "user" with
 * the confinement fields by the rules of a launch (api_confine_opts).
 */
static int
api_term_opts(const cJSON *j, const char *defuser, struct term_opts *o,
    char ***argvbuf, char ***envbuf, struct api_confine *c,
    struct api_err *e)
{
	const cJSON	*f;

	memset(o, 0, sizeof(*o));
	*argvbuf = *envbuf = NULL;
	if (!cJSON_IsObject(j))
		return api_term_err(e, 400, "invalid_request", "body",
		    "must be a JSON object");
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "argv")) != NULL &&
	    !cJSON_IsNull(f)) {
		if (api_term_strv(f, argvbuf, e) == -1)
			return -1;
		o->argv = *argvbuf;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "cwd")) != NULL) {
		if (!cJSON_IsString(f) || f->valuestring[0] == '\0')
			return api_term_err(e, 400, "invalid_request", "cwd",
			    "must be a non-empty string");
		o->cwd = f->valuestring;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "env")) != NULL) {
		if (api_term_env(f, envbuf, e) == -1)
			return -1;
		o->env = *envbuf;
	}
	if (api_term_dims(j, &o->cols, &o->rows, e) == -1)
		return -1;
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "id")) != NULL) {
		if (!cJSON_IsString(f) || !record_id_valid(f->valuestring))
			return api_term_err(e, 400, "invalid_request", "id",
			    "must match ^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$");
		o->id = f->valuestring;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "bufferSize")) != NULL) {
		if (!api_integer(f, 1, (double)TERM_KEEP_BYTES_CAP))
			return api_term_err(e, 400, "invalid_request",
			    "bufferSize", "must be a positive integer of bytes "
			    "within the agent's cap");
		o->keep = (uint64_t)f->valuedouble;
	}
	if (api_confine_opts(j, defuser, c, e) == -1)
		return -1;
	o->has_user = c->has_user;
	o->uid = c->uid;
	o->gid = c->gid;
	o->user = c->user[0] != '\0' ? c->user : NULL;
	o->confine = c->sc;
	o->limits = c->limits;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Shared */

static struct termtab *
api_terms(struct http_conn *c)
{
	return api_of(c)->terms;
}

static struct term *
api_term_of(struct http_conn *c, struct http_req *r)
{
	struct term	*t;

	if ((t = term_find(api_terms(c), r->param[0])) == NULL)
		http_reply_error(c, 404, "not_found",
		    "no terminal '%.128s' in this boot", r->param[0]);
	return t;
}

int
api_term_pinned_dir(struct api *a, struct http_req *r, int *termsfd,
    struct api_err *e)
{
	const char	*h;
	char		 q[API_BOOT_Q_MAX];
	int		 fd, rc;

	*termsfd = -1;
	if ((rc = api_pin(a, r, true, &fd, e)) != 1)
		return rc;
	close(fd);
	h = api_boot_named(r, q, sizeof(q));
	*termsfd = boot_open_terms(termtab_statefd(a->terms), h, false);
	return 1;
}

/*
 * A read pinned to an earlier boot: the terms directory of that boot
 * (api_pin checked it is a retained one), or -1 when it has none (a
 * boot of an agent without terminals).  -2 after api_pin replied; -3
 * for the current boot.
 */
static int
api_term_pinned(struct http_conn *c, struct http_req *r)
{
	struct api_err	e;
	int		fd;

	switch (api_term_pinned_dir(api_of(c), r, &fd, &e)) {
	case -1:
		api_reply_err(c, &e);
		return -2;
	case 0:
		return -3;
	}
	return fd;
}

/* ------------------------------------------------------------------ */
/* Handlers */

static void
api_term_create(struct http_conn *c, struct http_req *r)
{
	api_term_create_cwd(c, r, NULL);
}

/*
 * An ID of a live terminal is a reattach: 200 with it, whatever else
 * the body asks.  An ended one keeps its ID: 409.
 */
void
api_term_create_cwd(struct http_conn *c, struct http_req *r, const char *cwd)
{
	struct api_err	 e;
	struct term_opts	 o;
	struct term		*t;
	struct api_confine	 ac;
	char			**argv, **env;
	cJSON			*j;
	bool			 failed;
	int			 fd, err;

	if (api_term_pin(c, r, false, &fd) != 0 || (j = api_term_body(c, r)) == NULL)
		return;
	if (api_term_opts(j, api_of(c)->default_user, &o, &argv, &env, &ac,
	    &e) == -1) {
		api_reply_err(c, &e);
		goto out;
	}
	if (cwd != NULL)
		o.cwd = cwd;		/* the bridge's, normalised */
	if (o.id != NULL && (t = term_find(api_terms(c), o.id)) != NULL) {
		if (term_ended(t))
			http_reply_error(c, 409, "id_taken", "terminal '%s' has "
			    "ended; its ID stays taken in this boot", o.id);
		else
			http_reply_json(c, 200, term_status_json(t));
	} else if ((t = term_create(api_terms(c), &o, &failed, &err)) != NULL)
		http_reply_json(c, 200, term_status_json(t));
	else if (err == EAGAIN)
		http_reply_error(c, 503, "busy", "terminal limit reached (%d "
		    "live)", termtab_maxlive(api_terms(c)));
	else
		api_reply_spawn_error(c, failed, err, o.id);
out:
	api_launch_free(argv, env);
	cJSON_Delete(j);
}

static void
api_term_list(struct http_conn *c, struct http_req *r)
{
	struct term	*t;
	cJSON		*a;
	int		 fd;

	switch ((fd = api_term_pinned(c, r))) {
	case -2:
		return;
	case -3:
		a = cJSON_CreateArray();
		for (t = termtab_first(api_terms(c)); t != NULL;
		    t = term_next(t))
			cJSON_AddItemToArray(a, term_status_json(t));
		http_reply_json(c, 200, a);
		return;
	case -1:
		http_reply_json(c, 200, cJSON_CreateArray());
		return;
	}
	http_reply_json(c, 200, record_list(fd, ""));
	close(fd);
}

static void
api_term_get(struct http_conn *c, struct http_req *r)
{
	struct term	*t;
	char		*s = NULL;
	size_t		 len;
	int		 fd;

	switch ((fd = api_term_pinned(c, r))) {
	case -2:
		return;
	case -3:
		if ((t = api_term_of(c, r)) != NULL)
			http_reply_json(c, 200, term_status_json(t));
		return;
	}
	/* An earlier boot: the last status, as written (lost, say). */
	if (fd != -1 && record_id_valid(r->param[0]))
		s = record_status_text(fd, r->param[0], &len);
	if (s != NULL)
		http_reply(c, 200, "application/json", s, len);
	else
		http_reply_error(c, 404, "not_found", "no terminal '%.128s' in "
		    "that boot", r->param[0]);
	free(s);
	if (fd != -1)
		close(fd);
}

static void
api_term_delete(struct http_conn *c, struct http_req *r)
{
	struct term	*t;
	char		 id[PROC_ID_MAX + 1];
	int		 fd;

	if (api_term_pin(c, r, false, &fd) != 0 || (t = api_term_of(c, r)) == NULL)
		return;
	snprintf(id, sizeof(id), "%s", term_id(t));
	if (term_delete(t) == -1) {
		http_reply_error(c, 500, "internal", "cannot remove the files "
		    "of '%s': %s; the terminal is kept", id, strerror(errno));
		return;
	}
	http_reply(c, 204, NULL, NULL, 0);
}

static void
api_term_not_running(struct http_conn *c, struct term *t, const char *what)
{
	if (errno == ESRCH)
		http_reply_error(c, 409, "not_running", "terminal '%s' has "
		    "ended", term_id(t));
	else
		http_reply_error(c, 500, "internal", "%s: %s", what,
		    strerror(errno));
}

static void
api_term_interrupt(struct http_conn *c, struct http_req *r)
{
	struct term	*t;
	int		 fd;

	if (api_term_pin(c, r, false, &fd) != 0 || (t = api_term_of(c, r)) == NULL)
		return;
	if (term_interrupt(t) == -1)
		api_term_not_running(c, t, "interrupt");
	else
		http_reply(c, 204, NULL, NULL, 0);
}

static void
api_term_terminate(struct http_conn *c, struct http_req *r)
{
	struct term	*t;
	int		 fd;

	if (api_term_pin(c, r, false, &fd) != 0 || (t = api_term_of(c, r)) == NULL)
		return;
	if (term_terminate(t) == -1)
		api_term_not_running(c, t, "terminate");
	else
		http_reply(c, 204, NULL, NULL, 0);
}

static void
api_term_resize(struct http_conn *c, struct http_req *r)
{
	struct api_err	 e;
	struct term		*t;
	unsigned int		 cols = 0, rows = 0;
	cJSON			*j;
	int			 fd;

	if (api_term_pin(c, r, false, &fd) != 0 || (j = api_term_body(c, r)) == NULL)
		return;
	if (!cJSON_IsObject(j))
		api_reply_err(c, (api_term_err(&e, 400, "invalid_request",
		    "body", "must be a JSON object"), &e));
	else if (api_term_dims(j, &cols, &rows, &e) == -1)
		api_reply_err(c, &e);
	else if (cols == 0 || rows == 0)
		api_reply_err(c, (api_term_err(&e, 400, "invalid_request",
		    cols == 0 ? "cols" : "rows", "is required"), &e));
	else if ((t = api_term_of(c, r)) == NULL)
		;
	else if (term_resize(t, cols, rows) == -1)
		api_term_not_running(c, t, "resize");
	else
		http_reply(c, 204, NULL, NULL, 0);
	cJSON_Delete(j);
}

/*
 * Input bodies are streamed to the master as they arrive, bounded as
 * stdin is (api_input.h).
 */

static const struct api_input_says api_term_input_says = {
	"input", "the terminal was removed", "not_running",
	"terminal '%s' ended before the queued input was written"
};

/* Held after its body: the reply it was waiting for. */
static void
api_term_input_answer(struct job *j, void *writer, int err)
{
	api_input_answer(writer, j, err, &api_term_input_says);
}

static void
api_term_input_body(struct http_conn *c, struct http_req *r, const char *d,
    size_t n)
{
	struct termtab	*tt = api_terms(c);
	struct term	*t = term_find(tt, r->param[0]);

	api_input_body(c, r, termtab_boot(tt), t != NULL ? term_job(t) : NULL,
	    d, n);
}

static void
api_term_input(struct http_conn *c, struct http_req *r)
{
	struct term	*t;
	int		 fd;

	if (api_term_pin(c, r, false, &fd) != 0 || (t = api_term_of(c, r)) == NULL)
		return;
	api_input_done(c, term_job(t));
	if (api_input_busy(c, r, term_job(t), &api_term_input_says))
		return;
	if (r->body_error != 0 || term_ended(t)) {
		http_reply_error(c, 409, "not_running", "terminal '%s' has "
		    "ended", term_id(t));
		return;
	}
	if (api_input_wait(c, r, term_job(t), api_term_input_answer))
		return;
	http_reply(c, 204, NULL, NULL, 0);
}

const struct http_route api_term_routes[] = {
	{ "POST",	"/v1/terminals",		api_term_create, NULL },
	{ "GET",	"/v1/terminals",		api_term_list, NULL },
	{ "GET",	"/v1/terminals/{}",		api_term_get, NULL },
	{ "DELETE",	"/v1/terminals/{}",		api_term_delete, NULL },
	{ "POST",	"/v1/terminals/{}/interrupt",	api_term_interrupt, NULL },
	{ "POST",	"/v1/terminals/{}/terminate",	api_term_terminate, NULL },
	{ "POST",	"/v1/terminals/{}/resize",	api_term_resize, NULL },
	{ "POST",	"/v1/terminals/{}/input",	api_term_input,
	    api_term_input_body },
	{ NULL, NULL, NULL, NULL }
};
