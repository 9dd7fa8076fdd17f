/*
 * fuzz_events: what the event log reads that it did not write itself —
 * an earlier boot's log as the disk holds it (damaged, cut, forged), and
 * the filters of a query — against its contracts.
 *
 * Input: a first line is the ?types= filter, a second the ?id= filter,
 * then the events file's bytes.  The index is made from the file's
 * lines (a record a line, as the agent writes them), byte 0 of the input
 * choosing, by its low bits, records of a wrong length or offset too.
 * The log is read whole by a reader that does not follow.  Contracts:
 * events_types_valid agrees with a reference; every item a reader hands
 * over is a line of the file that begins {"type":"<its type>", ends with
 * '}', passes the type filter, and carries a cursor of this boot that
 * grows; the reader ends, within a bounded number of loop turns.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ev.h>

#include "base/tunables.h"
#include "core/events.h"
#include "store/logstore.h"

#define FZ_BOOT	"0123456789abcdef0123456789abcdef"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct fz {
	const char	*types;
	uint64_t	 last;
	bool		 ended;
	int		 n;
};

static void
fz_fail(const char *what)
{
	fprintf(stderr, "fuzz_events: %s\n", what);
	abort();
}

static bool
fz_types_ref(const char *s)
{
	size_t	i, n = strlen(s), run = 0;

	if (n == 0)
		return false;
	for (i = 0; i < n; i++) {
		if (s[i] == ',') {
			if (run == 0)
				return false;
			run = 0;
		} else if (strchr("abcdefghijklmnopqrstuvwxyz0123456789._",
		    s[i]) == NULL)
			return false;
		else
			run++;
	}
	return run > 0;
}

static int
fz_event(void *ctx, const struct events_item *it)
{
	struct fz	*f = ctx;
	uint64_t	 seq;
	char		 head[EVENTS_TYPE_MAX + 16];

	if (cursor_parse(it->cursor, FZ_BOOT, EVENTS_CURSOR_ID, &seq) == -1)
		fz_fail("a cursor not of this boot");
	if (seq <= f->last)
		fz_fail("a cursor that does not grow");
	f->last = seq;
	if (it->json == NULL) {
		if (strcmp(it->type, "events.truncated") != 0 ||
		    it->skipped == 0)
			fz_fail("a gap that is not events.truncated");
		return 0;
	}
	snprintf(head, sizeof(head), "{\"type\":\"%s\"", it->type);
	if (it->len < strlen(head) + 1 ||
	    memcmp(it->json, head, strlen(head)) != 0 ||
	    it->json[it->len - 1] != '}' ||
	    memchr(it->json, '\n', it->len) != NULL)
		fz_fail("an event that is not a line of its type");
	if (!events_type_match(f->types, it->type))
		fz_fail("an event the type filter refuses");
	f->n++;
	return 0;
}

static void
fz_end(void *ctx, const char *cursor)
{
	struct fz	*f = ctx;

	(void)cursor;
	f->ended = true;
}

static size_t
fz_pending(void *ctx)
{
	(void)ctx;
	return 0;
}

static const struct events_sink fz_sink = {
	fz_event, fz_end, NULL, fz_pending, 1
};

/* One line of the input, NUL-ended into out; the rest after it. */
static const uint8_t *
fz_line(const uint8_t *d, size_t *n, char *out, size_t cap)
{
	const uint8_t	*nl = memchr(d, '\n', *n);
	size_t		 k = nl != NULL ? (size_t)(nl - d) : *n;

	if (k >= cap)
		k = cap - 1;
	memcpy(out, d, k);
	out[k] = '\0';
	k = nl != NULL ? (size_t)(nl - d) + 1 : *n;
	*n -= k;
	return d + k;
}

int
LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
	static char		 dir[] = "/tmp/fuzz-events-XXXXXX";
	static bool		 made;
	static struct ev_loop	*loop;
	struct events_filter	 flt = { 0 };
	struct events_reader	*r;
	struct events		*ev;
	struct ls_rec		 rec;
	struct fz		 f = { 0 };
	char			 types[EVENTS_TYPES_Q_MAX], id[PROC_ID_MAX + 2];
	uint64_t		 off = 0, seq = 0;
	size_t			 i, start;
	uint8_t			 mode;
	int			 dfd, efd, ifd, turns;

	if (n < 1)
		return 0;
	mode = d[0];
	d++;
	n--;
	if (!made) {
		if (mkdtemp(dir) == NULL)
			fz_fail("mkdtemp");
		loop = ev_loop_new(EVFLAG_AUTO);
		made = true;
	}
	d = fz_line(d, &n, types, sizeof(types));
	d = fz_line(d, &n, id, sizeof(id));
	if (events_types_valid(types) != fz_types_ref(types))
		fz_fail("events_types_valid disagrees with the reference");
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	(void)mkdirat(dfd, EVENTS_DIR, 0700);
	efd = openat(dfd, EVENTS_DIR "/" EVENTS_FILE, O_CREAT | O_TRUNC |
	    O_WRONLY, 0600);
	ifd = openat(dfd, EVENTS_DIR "/index", O_CREAT | O_TRUNC | O_WRONLY,
	    0600);
	if (dfd == -1 || efd == -1 || ifd == -1)
		fz_fail("open");
	if (n > 0 && write(efd, d, n) != (ssize_t)n)
		fz_fail("write");
	for (i = 0, start = 0; i < n; i++) {
		if (d[i] != '\n' && i + 1 < n)
			continue;
		memset(&rec, 0, sizeof(rec));
		rec.seq = ++seq;
		rec.offset = off;
		rec.len = (uint32_t)(i + 1 - start);
		if ((mode & 1) && seq % 3 == 0)
			rec.len += 7;		/* past its line */
		if ((mode & 2) && seq % 4 == 0)
			rec.offset += 1;	/* inside its line */
		if ((mode & 4) && seq % 5 == 0)
			rec.seq = 0;		/* a hole */
		if (write(ifd, &rec, sizeof(rec)) != (ssize_t)sizeof(rec))
			fz_fail("write");
		off += i + 1 - start;
		start = i + 1;
	}
	close(efd);
	close(ifd);
	if ((ev = events_open_ro(dfd, FZ_BOOT)) != NULL) {
		if (events_types_valid(types))
			flt.types = types;
		if (id[0] != '\0')
			flt.id = id;
		f.types = flt.types;
		if ((r = events_reader_new(ev, loop, &flt, false, 0)) == NULL)
			fz_fail("out of memory");
		if (events_reader_seek(r, (mode & 8) ? "end" : NULL) == -1)
			fz_fail("a seek without a cursor refused");
		events_reader_start(r, &fz_sink, &f);
		for (turns = 0; !f.ended && turns < 100000; turns++)
			ev_run(loop, EVRUN_NOWAIT);
		if (!f.ended)
			fz_fail("the reader never ended");
		events_reader_free(r);
		events_close(ev);
	}
	close(dfd);
	return 0;
}
