/*
 * hclient: a small blocking HTTP/1.1 client over a unix socket.
 *
 * One request at a time on one connection: hclient_send (a body in
 * memory) or hclient_send_fd (a body streamed from an fd with chunked
 * transfer-coding), then hclient_recv, which parses the reply with
 * http_parser and hands the status, each header and each piece of the
 * decoded body to callbacks as they arrive.  A reply without a length
 * (an SSE stream) ends when the server closes the connection.
 *
 * Functions return -1 with errno set on failure; hclient_error() then
 * describes it in words (a parse error has errno EPROTO).
 */
#ifndef TEND_HCLIENT_H
#define TEND_HCLIENT_H

#include <stddef.h>

#include <http_parser.h>

#include "base/buf.h"

/*
 * Callbacks, each optional.  Returning -1 stops hclient_recv, which then
 * returns -1 with errno ECANCELED.
 */
struct hclient_cb {
	/* One response header, name and value complete and NUL-ended. */
	int	(*header)(void *arg, const char *name, const char *value);
	/* All headers are in; status is the final (non-1xx) status. */
	int	(*head)(void *arg, int status);
	/* A piece of the body, transfer-coding removed. */
	int	(*body)(void *arg, const char *data, size_t len);
	/* hclient.wakefd became readable while waiting for the reply. */
	int	(*wake)(void *arg);
};

struct hclient_req {
	const char		*method;
	const char		*target;	/* path?query, encoded */
	const char *const	*headers;	/* "Name: value", NULL-ended */
	const void		*body;		/* hclient_send only, or NULL */
	size_t			 bodylen;
};

struct hclient {
	int			 fd;
	int			 wakefd;	/* -1, or polled during recv */
	http_parser		 parser;
	const struct hclient_cb	*cb;
	void			*arg;
	struct buf		 hname;		/* header being assembled */
	struct buf		 hvalue;
	int			 hinvalue;	/* last piece was a value */
	int			 head_only;	/* reply to HEAD: no body */
	int			 status;	/* final status; 0: not yet */
	int			 complete;	/* the reply has ended */
	int			 stoperr;	/* errno: a callback stopped */
	int			 replied;	/* reply came before the body */
	char			 err[160];
};

/* Connect to the unix socket at path.  0, or -1 and errno. */
int	hclient_open(struct hclient *, const char *path);
void	hclient_close(struct hclient *);

/* Send a request with its body (if any) from memory. */
int	hclient_send(struct hclient *, const struct hclient_req *);

/*
 * Send a request whose body is read from fd until EOF and sent in chunks
 * as it arrives.  Stops early, without error, if the server starts to
 * reply (a refusal need not wait for the body); hc->replied then is 1.
 */
int	hclient_send_fd(struct hclient *, const struct hclient_req *, int fd);

/*
 * Read and parse the reply, calling cb with arg.  0 once the reply has
 * ended, -1 otherwise (ECONNRESET: closed before the end; EPROTO: not
 * HTTP; ECANCELED: a callback stopped it).
 */
int	hclient_recv(struct hclient *, const struct hclient_cb *, void *arg);

/* Words for the last failure. */
const char *hclient_error(const struct hclient *);

#endif
