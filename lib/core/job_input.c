/*
 * job_input.c: a job's input — the bounded queue to its stdin pipe or
 * pty master, written as the fd takes it, and the one writer held while
 * the queue is full and woken when it drains or the input ends.
 */
#include <errno.h>
#include <unistd.h>

#include "base/util.h"
#include "job_int.h"

static void	job_in_cb(struct ev_loop *, ev_io *, int);
static void	job_input_flush(struct job *);

void
job_in_start(struct job *j, int fd, bool shared)
{
	j->in = fd;
	j->in_shared = shared;
	ev_io_init(&j->inio, job_in_cb, fd, EV_WRITE);
}

int
job_input(struct job *j, const void *d, size_t n, bool close_after)
{
	if (j->in == -1) {
		errno = EPIPE;
		return -1;
	}
	if (buf_add(&j->inbuf, d, n) == -1)
		return -1;
	if (close_after)
		j->in_close = true;
	job_input_flush(j);
	return 0;
}

/*
 * Write what the fd takes.  The held writer is woken here, whoever
 * called: a queue written out on the spot (the child reads fast) stops
 * the watcher, which then would never wake it.
 */
static void
job_input_flush(struct job *j)
{
	struct ev_loop	*loop = j->tab->loop;
	ssize_t		 n;

	while (j->in != -1 && buf_avail(&j->inbuf) > 0) {
		n = write(j->in, buf_head(&j->inbuf), buf_avail(&j->inbuf));
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 && errno == EAGAIN) {
			ev_io_start(loop, &j->inio);
			break;
		}
		if (n == -1 && !j->in_shared) {
			/* EPIPE: the reader is gone; what is left is moot. */
			job_input_close(j);
			return;
		}
		if (n == -1) {
			/* A pty's EIO: the slave is gone; the drain says so. */
			ev_io_stop(loop, &j->inio);
			buf_free(&j->inbuf);
			job_input_wake(j, EPIPE);
			return;
		}
		buf_consume(&j->inbuf, (size_t)n);
		if (j->in_shared)
			job_out_wake(j);
	}
	if (j->in != -1 && buf_avail(&j->inbuf) == 0) {
		ev_io_stop(loop, &j->inio);
		if (j->in_close) {
			job_input_close(j);
			return;
		}
	}
	if (buf_avail(&j->inbuf) < PROC_STDIN_HIGH / 2)
		job_input_wake(j, 0);
}

static void
job_in_cb(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	job_input_flush(container_of(w, struct job, inio));
}

bool
job_input_full(struct job *j)
{
	return j->in != -1 && buf_avail(&j->inbuf) > PROC_STDIN_HIGH;
}

size_t
job_input_queued(struct job *j)
{
	return buf_avail(&j->inbuf);
}

int
job_input_hold(struct job *j, void *writer,
    void (*wake)(struct job *, void *, int))
{
	if (j->in_writer != NULL && j->in_writer != writer) {
		errno = EBUSY;
		return -1;
	}
	j->in_writer = writer;
	j->in_wake = wake;
	return 0;
}

void
job_input_unhold(struct job *j)
{
	j->in_writer = NULL;
	j->in_wake = NULL;
}

void *
job_input_writer(struct job *j)
{
	return j->in_writer;
}

/* The held writer may go on: forgotten first, so that it may hold again. */
void
job_input_wake(struct job *j, int err)
{
	void	*writer = j->in_writer;
	void	(*wake)(struct job *, void *, int) = j->in_wake;

	if (writer == NULL)
		return;
	job_input_unhold(j);
	wake(j, writer, err);
}

void
job_input_close(struct job *j)
{
	int	err = buf_avail(&j->inbuf) > 0 ? EPIPE : 0;

	if (j->in != -1) {
		ev_io_stop(j->tab->loop, &j->inio);
		if (!j->in_shared)
			close(j->in);
		j->in = -1;
	}
	buf_free(&j->inbuf);
	job_input_wake(j, err);
}
