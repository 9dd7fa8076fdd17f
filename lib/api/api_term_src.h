/*
 * api_term_src: where a read of a terminal's output comes from — this
 * boot's terminal, or an earlier boot's record opened read-only.  An
 * earlier boot's record can never grow, so a read of it ends with how it
 * ended, as its status says (exited, or lost).  The readers are the
 * WebSocket session (api_term_ws) and the output SSE (api_term_sse).
 */
#ifndef TEND_API_TERM_SRC_H
#define TEND_API_TERM_SRC_H

#include <stdbool.h>

#include "api.h"
#include "core/exitstatus.h"
#include "core/follow.h"
#include "store/logstore.h"

/* An earlier boot's terminal, as its reader holds it. */
struct api_term_src {
	struct logstore	 ro;		/* its output, read-only */
	cJSON		*final;		/* its last status; NULL: this boot's */
	struct exit_status exit;	/* final's "exit", read once */
	bool		 exited;	/* ... which it has */
	char		 boot[API_BOOT_Q_MAX];
	char		 id[PROC_ID_MAX + 1];
};

void	api_term_src_init(struct api_term_src *);
void	api_term_src_free(struct api_term_src *);
/* Whether src holds an earlier boot's record (else: this boot's). */
bool	api_term_src_earlier(const struct api_term_src *);
/*
 * Where a read of terminal id goes, by the boot it is pinned to: 0, the
 * current boot (the caller looks id up); 1, an earlier one, id's record
 * opened read-only into src; -1 with e (410 for a boot not retained,
 * 404 for an id that boot did not have).
 */
int	api_term_src_open(struct api *, struct http_req *, const char *id,
	    struct api_term_src *, struct api_err *);
/*
 * The terminal the route's {} names, for a read: this boot's (*tp), or
 * an earlier boot's record opened into src (*tp NULL).  -1 with e.
 */
int	api_term_src_named(struct http_conn *, struct http_req *,
	    struct term **tp, struct api_term_src *, struct api_err *);
/* A cJSON string field of j, or "". */
const char *api_term_src_str(const cJSON *j, const char *name);
/*
 * How the terminal ended, when it is known: the live one's exit (t; NULL
 * while it runs), or the earlier boot's status's.
 */
const struct exit_status *api_term_src_exit(const struct api_term_src *,
	    struct term *t);
/*
 * How the terminal ended, into j: "exit" {"code","signal"} when it is
 * known (api_term_src_exit), and the earlier boot's status's "error"
 * (lost).
 */
void	api_term_src_ending(const struct api_term_src *, struct term *t,
	    cJSON *j);
/*
 * A follow from since (NULL: the start) of t's output, or, t NULL, of
 * the earlier boot's record in src (which the follow reads until the
 * reader frees it; it never grows, so the follow ends when caught up).
 */
struct follow *api_term_src_follow(struct termtab *, struct term *t,
	    struct api_term_src *, bool follow, const char *since, bool replay,
	    struct api_err *);

#endif
