/*
 * hclient.c: a blocking HTTP/1.1 client over a unix socket, for the
 * command-line client.  The agent never uses it: the agent's loop must
 * not block.
 */
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <http_parser.h>

#include "base/buf.h"
#include "hclient.h"

#define HCLIENT_IO	(64 * 1024)	/* one read of the socket or body */

static int	hclient_fail(struct hclient *, int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static int	hclient_write(struct hclient *, const struct iovec *, int);
static int	hclient_head(struct hclient *, const struct hclient_req *,
		    struct buf *, const char *);
static int	hclient_flush_header(struct hclient *);
static int	hclient_on_hfield(http_parser *, const char *, size_t);
static int	hclient_on_hvalue(http_parser *, const char *, size_t);
static int	hclient_on_headers_complete(http_parser *);
static int	hclient_on_body(http_parser *, const char *, size_t);
static int	hclient_on_message_complete(http_parser *);
static int	hclient_feed(struct hclient *, const char *, size_t);

static const http_parser_settings hclient_settings = {
	.on_header_field = hclient_on_hfield,
	.on_header_value = hclient_on_hvalue,
	.on_headers_complete = hclient_on_headers_complete,
	.on_body = hclient_on_body,
	.on_message_complete = hclient_on_message_complete,
};

/* Record why the last call failed; returns -1 with errno = err. */
static int
hclient_fail(struct hclient *hc, int err, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(hc->err, sizeof(hc->err), fmt, ap);
	va_end(ap);
	errno = err;
	return -1;
}

const char *
hclient_error(const struct hclient *hc)
{
	return hc->err[0] ? hc->err : "no error";
}

int
hclient_open(struct hclient *hc, const char *path)
{
	struct sockaddr_un	sun;
	int			err;

	memset(hc, 0, sizeof(*hc));
	hc->fd = -1;
	hc->wakefd = -1;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path))
		return hclient_fail(hc, ENAMETOOLONG, "%s",
		    strerror(ENAMETOOLONG));
	strcpy(sun.sun_path, path);
	if ((hc->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return hclient_fail(hc, errno, "%s", strerror(errno));
	while (connect(hc->fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		if (errno == EINTR)
			continue;
		err = errno;
		close(hc->fd);
		hc->fd = -1;
		return hclient_fail(hc, err, "%s", strerror(err));
	}
	return 0;
}

void
hclient_close(struct hclient *hc)
{
	int	saved = errno;

	if (hc->fd != -1)
		close(hc->fd);
	hc->fd = -1;
	buf_free(&hc->hname);
	buf_free(&hc->hvalue);
	errno = saved;
}

/*
 * Write every byte of iov.  MSG_NOSIGNAL: a server that hangs up must not
 * kill the caller with SIGPIPE.
 */
static int
hclient_write(struct hclient *hc, const struct iovec *iov, int iovcnt)
{
	struct iovec	v[8];
	struct msghdr	msg;
	ssize_t		n;
	int		i;

	if (iovcnt > 8)
		return hclient_fail(hc, EINVAL, "too many pieces");
	memcpy(v, iov, sizeof(*iov) * iovcnt);
	i = 0;
	while (i < iovcnt) {
		if (v[i].iov_len == 0) {
			i++;
			continue;
		}
		memset(&msg, 0, sizeof(msg));
		msg.msg_iov = v + i;
		msg.msg_iovlen = iovcnt - i;
		if ((n = sendmsg(hc->fd, &msg, MSG_NOSIGNAL)) == -1) {
			if (errno == EINTR)
				continue;
			return hclient_fail(hc, errno, "%s", strerror(errno));
		}
		while (i < iovcnt && (size_t)n >= v[i].iov_len) {
			n -= v[i].iov_len;
			i++;
		}
		if (i < iovcnt) {
			v[i].iov_base = (char *)v[i].iov_base + n;
			v[i].iov_len -= n;
		}
	}
	return 0;
}

/*
 * The request line and headers into b.  framing is the body's framing
 * header line, or NULL for none.
 */
static int
hclient_head(struct hclient *hc, const struct hclient_req *req,
    struct buf *b, const char *framing)
{
	const char *const	*h;

	if (req->method == NULL || req->target == NULL ||
	    strpbrk(req->target, " \r\n") != NULL)
		return hclient_fail(hc, EINVAL, "bad request target");
	if (buf_printf(b, "%s %s HTTP/1.1\r\nHost: localhost\r\n",
	    req->method, req->target) == -1)
		goto nomem;
	for (h = req->headers; h != NULL && *h != NULL; h++) {
		if (strpbrk(*h, "\r\n") != NULL)
			return hclient_fail(hc, EINVAL, "bad header line");
		if (buf_printf(b, "%s\r\n", *h) == -1)
			goto nomem;
	}
	if (framing != NULL && buf_printf(b, "%s\r\n", framing) == -1)
		goto nomem;
	if (buf_addstr(b, "\r\n") == -1)
		goto nomem;
	hc->head_only = strcmp(req->method, "HEAD") == 0;
	hc->status = 0;
	hc->complete = 0;
	hc->replied = 0;
	return 0;
 nomem:
	return hclient_fail(hc, ENOMEM, "%s", strerror(ENOMEM));
}

int
hclient_send(struct hclient *hc, const struct hclient_req *req)
{
	struct buf	 b = { 0 };
	struct iovec	 iov[2];
	char		 framing[48];
	const char	*fr = NULL;
	int		 rv;

	/*
	 * A body-less POST or DELETE still says Content-Length: 0, or the
	 * server could not tell where the request ends.
	 */
	if (req->body != NULL || (req->method != NULL &&
	    strcmp(req->method, "GET") != 0 &&
	    strcmp(req->method, "HEAD") != 0)) {
		snprintf(framing, sizeof(framing), "Content-Length: %zu",
		    req->body != NULL ? req->bodylen : 0);
		fr = framing;
	}
	if (hclient_head(hc, req, &b, fr) == -1) {
		buf_free(&b);
		return -1;
	}
	iov[0].iov_base = buf_head(&b);
	iov[0].iov_len = buf_avail(&b);
	iov[1].iov_base = (void *)req->body;
	iov[1].iov_len = req->body != NULL ? req->bodylen : 0;
	rv = hclient_write(hc, iov, 2);
	buf_free(&b);
	return rv;
}

int
hclient_send_fd(struct hclient *hc, const struct hclient_req *req, int fd)
{
	struct buf	 b = { 0 };
	struct pollfd	 pfd[2];
	struct iovec	 iov[3];
	char		 data[HCLIENT_IO], size[24];
	ssize_t		 n;
	int		 rv;

	rv = hclient_head(hc, req, &b, "Transfer-Encoding: chunked");
	if (rv == 0) {
		iov[0].iov_base = buf_head(&b);
		iov[0].iov_len = buf_avail(&b);
		rv = hclient_write(hc, iov, 1);
	}
	buf_free(&b);
	if (rv == -1)
		goto sent;

	for (;;) {
		/*
		 * Watch the socket too: a server that refuses the request
		 * replies at once, and the body may never end (a terminal).
		 */
		pfd[0].fd = fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = hc->fd;
		pfd[1].events = POLLIN;
		if (poll(pfd, 2, -1) == -1) {
			if (errno == EINTR)
				continue;
			return hclient_fail(hc, errno, "%s", strerror(errno));
		}
		if (pfd[1].revents != 0) {
			hc->replied = 1;
			return 0;
		}
		if (pfd[0].revents == 0)
			continue;
		if ((n = read(fd, data, sizeof(data))) == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return hclient_fail(hc, errno, "reading the body: %s",
			    strerror(errno));
		}
		if (n == 0)
			break;
		snprintf(size, sizeof(size), "%zx\r\n", (size_t)n);
		iov[0].iov_base = size;
		iov[0].iov_len = strlen(size);
		iov[1].iov_base = data;
		iov[1].iov_len = n;
		iov[2].iov_base = "\r\n";
		iov[2].iov_len = 2;
		if ((rv = hclient_write(hc, iov, 3)) == -1)
			goto sent;
	}
	iov[0].iov_base = "0\r\n\r\n";
	iov[0].iov_len = 5;
	rv = hclient_write(hc, iov, 1);
 sent:
	/* The server may have refused and hung up: its reply is readable. */
	if (rv == -1 && (errno == EPIPE || errno == ECONNRESET)) {
		hc->replied = 1;
		return 0;
	}
	return rv;
}

/* ---------------------------------------------------------------------
 * Reply parsing: http_parser callbacks.
 */

/* Hand the header assembled from pieces to the caller. */
static int
hclient_flush_header(struct hclient *hc)
{
	int	rv = 0;

	if (buf_avail(&hc->hname) == 0)
		return 0;
	if (buf_add(&hc->hname, "", 1) == -1 ||
	    buf_add(&hc->hvalue, "", 1) == -1) {
		hc->stoperr = ENOMEM;
		return -1;
	}
	if (hc->cb->header != NULL &&
	    hc->cb->header(hc->arg, buf_head(&hc->hname),
	    buf_head(&hc->hvalue)) == -1) {
		hc->stoperr = ECANCELED;
		rv = -1;
	}
	buf_reset(&hc->hname);
	buf_reset(&hc->hvalue);
	hc->hinvalue = 0;
	return rv;
}

static int
hclient_on_hfield(http_parser *p, const char *at, size_t len)
{
	struct hclient	*hc = p->data;

	if (hc->hinvalue && hclient_flush_header(hc) == -1)
		return -1;
	if (buf_add(&hc->hname, at, len) == -1) {
		hc->stoperr = ENOMEM;
		return -1;
	}
	return 0;
}

static int
hclient_on_hvalue(http_parser *p, const char *at, size_t len)
{
	struct hclient	*hc = p->data;

	hc->hinvalue = 1;
	if (buf_add(&hc->hvalue, at, len) == -1) {
		hc->stoperr = ENOMEM;
		return -1;
	}
	return 0;
}

static int
hclient_on_headers_complete(http_parser *p)
{
	struct hclient	*hc = p->data;

	if (hclient_flush_header(hc) == -1)
		return -1;
	/* An interim reply (100 Continue): the real one follows. */
	if (p->status_code / 100 == 1)
		return 0;
	hc->status = p->status_code;
	if (hc->cb->head != NULL && hc->cb->head(hc->arg, hc->status) == -1) {
		hc->stoperr = ECANCELED;
		return -1;
	}
	/* 1 tells http_parser that the reply has no body. */
	return hc->head_only ? 1 : 0;
}

static int
hclient_on_body(http_parser *p, const char *at, size_t len)
{
	struct hclient	*hc = p->data;

	if (hc->cb->body != NULL && hc->cb->body(hc->arg, at, len) == -1) {
		hc->stoperr = ECANCELED;
		return -1;
	}
	return 0;
}

static int
hclient_on_message_complete(http_parser *p)
{
	struct hclient	*hc = p->data;

	if (hc->status == 0)
		return 0;		/* the end of an interim reply */
	hc->complete = 1;
	/* Stop here: whatever follows belongs to a later reply. */
	http_parser_pause(p, 1);
	return 0;
}

/* Parse n bytes (0: the server closed the connection). */
static int
hclient_feed(struct hclient *hc, const char *d, size_t n)
{
	enum http_errno	e;

	http_parser_execute(&hc->parser, &hclient_settings, d, n);
	if (hc->stoperr != 0)
		return hclient_fail(hc, hc->stoperr, "%s",
		    hc->stoperr == ECANCELED ? "stopped" :
		    strerror(hc->stoperr));
	/* At the end of input http_parser's complaint is the early EOF. */
	if (n == 0 && !hc->complete)
		return hclient_fail(hc, ECONNRESET, "%s",
		    hc->status == 0 ? "connection closed without a reply" :
		    "connection closed before the reply ended");
	e = HTTP_PARSER_ERRNO(&hc->parser);
	if (e != HPE_OK && e != HPE_PAUSED)
		return hclient_fail(hc, EPROTO, "bad reply: %s",
		    http_errno_description(e));
	return 0;
}

int
hclient_recv(struct hclient *hc, const struct hclient_cb *cb, void *arg)
{
	static const struct hclient_cb	 none;
	struct pollfd			 pfd[2];
	char				 data[HCLIENT_IO];
	ssize_t				 n;
	int				 npfd;

	hc->cb = cb != NULL ? cb : &none;
	hc->arg = arg;
	hc->stoperr = 0;
	hc->status = 0;
	hc->complete = 0;
	hc->hinvalue = 0;
	buf_reset(&hc->hname);
	buf_reset(&hc->hvalue);
	http_parser_init(&hc->parser, HTTP_RESPONSE);
	hc->parser.data = hc;

	while (!hc->complete) {
		npfd = 1;
		pfd[0].fd = hc->fd;
		pfd[0].events = POLLIN;
		if (hc->wakefd != -1 && hc->cb->wake != NULL) {
			pfd[1].fd = hc->wakefd;
			pfd[1].events = POLLIN;
			npfd = 2;
		}
		if (poll(pfd, npfd, -1) == -1) {
			if (errno == EINTR)
				continue;
			return hclient_fail(hc, errno, "%s", strerror(errno));
		}
		if (npfd == 2 && pfd[1].revents != 0 &&
		    hc->cb->wake(hc->arg) == -1)
			return hclient_fail(hc, ECANCELED, "stopped");
		if (pfd[0].revents == 0)
			continue;
		if ((n = read(hc->fd, data, sizeof(data))) == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return hclient_fail(hc, errno, "%s", strerror(errno));
		}
		if (hclient_feed(hc, data, n) == -1)
			return -1;
		if (n == 0)
			break;
	}
	return 0;
}
