/*
 * upload: a file written under a root (files.h), whole or appended.
 *
 * upload_begin opens the temp file ".NAME.XXXXXX" in the target's
 * directory (O_EXCL, never through a link) with the final mode;
 * upload_write appends to it; upload_commit fsyncs it and renames it
 * over NAME (readers see the old file or the new one, never part of
 * one), *created telling 201 from 204; upload_abort (after any failure,
 * or a client gone) removes the temp.  The directory is held open from
 * begin to commit: a link swapped in for it meanwhile changes nothing.
 * A directory at NAME is EISDIR at begin.  With UPLOAD_APPEND the file
 * itself is opened (through links, created if missing) and written in
 * place: an abort keeps what was appended.  mode: 0..07777 (else
 * EINVAL), applied as given (no umask), or UPLOAD_MODE_KEEP.  A crash of
 * the agent mid-upload leaves the temp.  Watchers are told the temp is
 * tend's (files_tmp_state): they report the upload as its name's.
 */
#ifndef TEND_UPLOAD_H
#define TEND_UPLOAD_H

#include <sys/types.h>

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "files.h"

#define UPLOAD_PARENTS		0x1	/* create missing parents, 0755 */
#define UPLOAD_APPEND		0x2	/* append in place, no temp, no rename */
#define UPLOAD_MODE_KEEP	(-1)	/* an old file's mode, a new one 0644 */

struct upload {
	int	 dirfd;		/* the target's directory */
	int	 slot;		/* in files_tmp's table, or -1 */
	int	 fd;		/* the temp file (the file itself: append) */
	int	 flags;
	bool	 created;	/* append: the file was made by begin */
	uint64_t unflushed;	/* bytes since the last flush */
	pid_t	 flusher;	/* the child making them stable, or 0 */
	int	 flusherr;	/* a flush failed: errno, the commit fails */
	uint64_t off;
	char	 name[NAME_MAX + 1];
	char	 tmp[NAME_MAX + 1];
};

int	upload_begin(struct upload *, const struct files_root *,
	    const char *rel, int flags, int mode);
int	upload_write(struct upload *, const void *, size_t);
int	upload_commit(struct upload *, bool *created);
void	upload_abort(struct upload *);

#endif
