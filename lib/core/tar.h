/*
 * tar: a tree written as a tar stream (persist), and a tar stream
 * extracted into a tree (hydrate), through libarchive, each in a child
 * process joined to the agent by pipes: PID 1 never waits on the disk
 * for a whole archive, it only moves bytes when a pipe is ready.
 *
 * Contract for the route author
 * -----------------------------
 * - rootfd: the directory to archive or fill (an O_PATH fd will do; for
 *   the files root, files_open(&root, rel, O_PATH | O_DIRECTORY, 0)).
 *   The child resolves every name under it itself, so the agent opens
 *   nothing else.
 * - Each spawn returns the child's pid and the agent's ends of its pipes,
 *   O_NONBLOCK | O_CLOEXEC.  Register the pid with the one reap loop; its
 *   exit status is the result (codes below).  The child has default
 *   signals, an empty mask, and no fd of the agent but the ones passed.
 * - persist: check each exclude with tar_exclude_valid first (EINVAL:
 *   400 naming it).  Read outfd until EOF and send it as the body
 *   (application/octet-stream).  Exit 0: the archive is whole;
 *   TAR_EXIT_PARTIAL: whole, but entries that could not be read were
 *   left out (errfd says how many and the first); any other status: the
 *   stream stopped short, so end the reply without its last chunk (close
 *   the connection), the client must not take it for a whole archive.
 *   Closing outfd early kills the child (SIGPIPE).
 *   Kept: regular files, directories (empty ones too), symlinks as
 *   links, modes, owners, mtimes.  Left out: sockets, FIFOs, devices;
 *   hard links are stored as separate files.  Not crossing into other
 *   file systems is not done: the whole tree is archived.
 * - hydrate: write the request body to infd as it arrives (EAGAIN: wait
 *   for writable), close infd at its end.  Read errfd (< TAR_ERR_MAX,
 *   one line) until EOF and parse it with tar_report_parse.  Exit
 *   statuses: 0 → 200 {"ok":true}; TAR_EXIT_EMPTY (no bytes at all) →
 *   400 "Empty tar payload"; TAR_EXIT_BAD (a refused entry, or not a tar
 *   stream) → 400 with the report's message; TAR_EXIT_IO → api_errno
 *   of the report's errno (ENOSPC 507); a signal → 500.  The child stops
 *   at the first bad entry and then reads no more: EPIPE on infd after
 *   that is expected (stop writing; the exit status says why).  Entries
 *   before the bad one stay extracted, and the report's entries counts
 *   them (the archive's first ones, in its order); the entry it stopped
 *   at leaves nothing: a file is written to a temp and renamed over its
 *   name only once whole, the temp removed on failure.  A tar stream holding no entry
 *   (only its end blocks) is success with nothing written.
 *   Refused: absolute names, ".." anywhere in a name, any name whose
 *   directories include a symlink (each parent opened with openat2
 *   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS, fsutil_open, not libarchive's
 *   own extraction), a hard link whose target is absolute, has "..", or
 *   goes through a symlink, device nodes, FIFOs and sockets.  A name
 *   that exists is replaced (a link there is removed, never written
 *   through); a directory in the way of a file is refused.  gzip input
 *   is accepted too.  Modes are kept (setuid/setgid only when the agent
 *   is root), owners when the agent is root, mtimes always; directory
 *   modes and mtimes are set after the last entry, as GNU tar does.
 */
#ifndef TEND_TAR_H
#define TEND_TAR_H

#include <sys/types.h>

#include <stddef.h>

#include "base/tunables.h"

/* The tar child's exit statuses. */
#define TAR_EXIT_OK		0
#define TAR_EXIT_BAD		1	/* a refused entry, or not tar */
#define TAR_EXIT_EMPTY		2	/* no byte of input */
#define TAR_EXIT_IO		3	/* reading, writing, the disk: errno */
#define TAR_EXIT_PARTIAL	4	/* persist: unreadable entries left out */

/*
 * The report a child writes on errfd: "<errno>[:<entries>] <message>\n";
 * hydrate's tells the entries extracted whole before it stopped.
 */
struct tar_report {
	int		err;
	long long	entries;	/* -1: not told */
	char		msg[TAR_ERR_MAX];
};

/*
 * An exclude: a relative path (leading "./" and trailing '/' allowed)
 * that names an entry and all below it.  EINVAL if empty, absolute, or
 * holding a ".." component.
 */
int	tar_exclude_valid(const char *);
/*
 * Fork the persist child: a tar of rootfd's tree (names relative to it,
 * without the excluded paths: excludes is NULL-terminated, may be NULL,
 * each valid) to *outfd.  errfd may be NULL.  0, or -1 and errno.
 */
int	tar_persist_spawn(int rootfd, const char *const *excludes, pid_t *pid,
	    int *outfd, int *errfd);
/* Fork the hydrate child: a tar read from *infd extracted under rootfd. */
int	tar_hydrate_spawn(int rootfd, pid_t *pid, int *infd, int *errfd);
/* What a child wrote on errfd (n bytes).  -1 (EINVAL) if malformed. */
int	tar_report_parse(const char *s, size_t n, struct tar_report *);

#endif
