/*
 * pty: pseudo-terminals for terminal resources.  The module opens and
 * sizes the pair, sets a forked child up on the slave, and reads the
 * master; spawning, reaping and signalling stay with the caller.
 *
 * Order of use:
 *
 *	pty_open(cols, rows, &m, name, sizeof(name));	   master, sized
 *	fork();
 *	  child:  (reset signals) setsid(); pty_child_setup(name); execve();
 *	  parent: watch m for reading; pty_read() until PTY_READ_CLOSED
 *
 * The master is O_CLOEXEC and O_NONBLOCK, and has O_NOCTTY: the agent
 * never gets a controlling terminal.  The window size is set before any
 * child exists, so the first thing it runs (stty size, a shell's
 * prompt) sees it.  Until a child opens the slave, reading the master
 * finds nothing (PTY_READ_AGAIN), not an end.
 *
 * The end: once the last descriptor of the slave is closed (the session
 * exited, and any background job that kept it too), the master yields
 * what is still buffered, then EIO: PTY_READ_CLOSED means every byte of
 * output has been read.  A child that exits while a descendant holds the
 * slave leaves the master open: the caller must not wait for this end
 * to report an exit.
 *
 * Functions return -1 with errno unless said otherwise; cols and rows
 * are 1..PTY_MAX_DIM (else EINVAL).
 */
#ifndef TEND_PTY_H
#define TEND_PTY_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>

#include "base/tunables.h"

#define PTY_NAME_MAX	64	/* "/dev/pts/N" */

enum pty_read_result {
	PTY_READ_DATA,		/* *got > 0 bytes */
	PTY_READ_AGAIN,		/* nothing now: wait until readable */
	PTY_READ_CLOSED,	/* the slave is closed and all output read */
	PTY_READ_ERROR		/* errno */
};

/* A master of cols x rows; the slave's path into name (n bytes). */
int	pty_open(unsigned int cols, unsigned int rows, int *masterfd,
	    char *name, size_t n);
/* New size; the kernel sends SIGWINCH to the foreground group. */
int	pty_resize(int masterfd, unsigned int cols, unsigned int rows);
/* The foreground process group of the slave (for SIGINT), or -1. */
pid_t	pty_foreground(int masterfd);
/* Up to n bytes into d, *got set. */
enum pty_read_result pty_read(int masterfd, void *d, size_t n, size_t *got);
/*
 * An EIO from the master: the end only if the read before it (seen,
 * false to begin with) was an EIO too, else read once more.
 */
bool	pty_eio_is_end(bool *seen);

/*
 * In a forked child after setsid(), before exec: open the slave, which
 * becomes the controlling terminal, and make it fds 0, 1 and 2.  Only
 * async-signal-safe calls; -1 and errno for the child to report.
 */
int	pty_child_setup(const char *name);

/* The login shell of uid from the passwd database, else "/bin/sh". */
int	pty_default_shell(uid_t uid, char *buf, size_t n);

#endif
