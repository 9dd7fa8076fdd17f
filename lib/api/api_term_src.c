/*
 * api_term_src.c: where a read of a terminal's output comes from (see
 * api_term_src.h).
 */
#include <sys/types.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api_term.h"
#include "api_term_src.h"
#include "base/codec.h"
#include "core/term.h"
#include "store/record.h"

void
api_term_src_init(struct api_term_src *src)
{
	src->ro.fd[0] = src->ro.fd[1] = src->ro.idxfd = -1;
	src->final = NULL;
}

void
api_term_src_free(struct api_term_src *src)
{
	logstore_close(&src->ro);
	cJSON_Delete(src->final);
	src->final = NULL;
}

bool
api_term_src_earlier(const struct api_term_src *src)
{
	return src->final != NULL;
}

int
api_term_src_open(struct api *a, struct http_req *r, const char *id,
    struct api_term_src *src, struct api_err *e)
{
	const char	*boot;
	int		 fd, rc;

	if ((rc = api_term_pinned_dir(a, r, &fd, e)) != 1)
		return rc;
	boot = api_boot_named(r, src->boot, sizeof(src->boot));
	if (boot != src->boot)
		snprintf(src->boot, sizeof(src->boot), "%s", boot);
	snprintf(src->id, sizeof(src->id), "%.128s", id);
	rc = fd != -1 && record_id_valid(id) ? record_open_ro_kind(RECORD_TERM,
	    fd, id, &src->ro, &src->final) : -1;
	if (fd != -1)
		close(fd);
	if (rc == -1) {
		api_err_set(e, 404, "not_found", NULL, "no terminal '%.128s' "
		    "in that boot", id);
		return -1;
	}
	/* No status at all: how it ended is unknown, as a lost one's. */
	if (src->final == NULL && (src->final = cJSON_CreateObject()) == NULL) {
		api_err_nomem(e);
		return -1;
	}
	src->exited = exitstatus_parse(&src->exit,
	    cJSON_GetObjectItemCaseSensitive(src->final, "exit")) == 0;
	return 1;
}

int
api_term_src_named(struct http_conn *c, struct http_req *r, struct term **tp,
    struct api_term_src *src, struct api_err *e)
{
	int	rc;

	*tp = NULL;
	if ((rc = api_term_src_open(api_of(c), r, r->param[0], src, e)) != 0)
		return rc == 1 ? 0 : -1;
	if ((*tp = term_find(api_of(c)->terms, r->param[0])) == NULL) {
		api_err_set(e, 404, "not_found", NULL, "no terminal '%.128s' "
		    "in this boot", r->param[0]);
		return -1;
	}
	return 0;
}

const char *
api_term_src_str(const cJSON *j, const char *name)
{
	const cJSON	*f = cJSON_GetObjectItemCaseSensitive(j, name);

	return cJSON_IsString(f) ? f->valuestring : "";
}

const struct exit_status *
api_term_src_exit(const struct api_term_src *src, struct term *t)
{
	if (t != NULL)
		return term_exit(t);
	return src->exited ? &src->exit : NULL;
}

void
api_term_src_ending(const struct api_term_src *src, struct term *t, cJSON *j)
{
	const struct exit_status	*x = api_term_src_exit(src, t);
	const cJSON			*err;

	if (x != NULL)
		cJSON_AddItemToObject(j, "exit", exitstatus_json(x, false));
	if (t == NULL && (err = cJSON_GetObjectItemCaseSensitive(src->final,
	    "error")) != NULL && !cJSON_IsNull(err))
		cJSON_AddItemToObject(j, "error", cJSON_Duplicate(err, 1));
}

struct follow *
api_term_src_follow(struct termtab *tt, struct term *t,
    struct api_term_src *src, bool follow, const char *since, bool replay,
    struct api_err *e)
{
	struct follow_opts	 o = { 0 };
	struct follow_src	 fs = { 0 };
	struct follow		*f;
	char			 ts[TIME_MAX];

	if (t == NULL) {
		fs.ls = &src->ro;
		fs.boot = src->boot;
		fs.id = src->id;
		fs.started = api_term_src_str(src->final, "createdAt");
	} else if ((fs.ls = term_store(t)) == NULL) {
		api_err_set(e, 500, "internal", NULL, "cannot open the output "
		    "of '%s': %s", term_id(t), strerror(errno));
		return NULL;
	} else {
		codec_time(ts, term_created_ms(t));
		fs.term = t;
		fs.boot = termtab_boot(tt);
		fs.id = term_id(t);
		fs.started = ts;
	}
	o.walk = FOLLOW_RECORDS;
	o.follow = follow;
	o.eager = true;		/* keystroke echo: no merge wait */
	if ((f = follow_new(tt->loop, &fs, &o)) == NULL) {
		api_err_nomem(e);
		return NULL;
	}
	if (follow_seek(f, since, replay) == -1) {
		follow_free(f);
		api_err_set(e, 400, "invalid_request", "cursor", "cursor: not "
		    "a cursor of terminal '%.128s' in %s boot", fs.id,
		    t != NULL ? "this" : "that");
		return NULL;
	}
	return f;
}
