/*
 * watch.c: inotify watches and their event rings.  See watch.h.
 *
 * One inotify instance per watch: two watches of the same directory
 * from one instance would share a watch descriptor and its mask.  Each
 * watched directory is a struct watch_dir, kept sorted by wd (the kernel
 * hands wds out increasing, so new ones append), which makes that array
 * the queue of a breadth-first scan as well.
 */
#include <sys/inotify.h>
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/codec.h"
#include "base/tunables.h"
#include "base/turn.h"
#include "base/util.h"
#include "files.h"
#include "watch.h"

/* The longest event: a read with less room left may have cut one off. */
#define WATCH_EV_MAX	(sizeof(struct inotify_event) + NAME_MAX + 1)

#define WATCH_MASK	(IN_CREATE | IN_MOVED_TO | IN_MODIFY | IN_ATTRIB | \
			 IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | \
			 IN_ONLYDIR | IN_EXCL_UNLINK)

struct watch_dir {
	int		 wd;
	dev_t		 dev;
	ino_t		 ino;
	char		*path;		/* relative to the watch; "" itself */
	bool		 report;	/* its scan tells what it holds */
};

struct watch {
	ev_io			 io;		/* the inotify fd */
	ev_timer		 linger;	/* after the last reference */
	struct turn		 scan_resume;	/* a scan's next share */
	struct watchtab		*tab;
	struct watch		*next;
	int			 refs;
	bool			 recursive;
	bool			 gone;
	bool			 full;		/* a truncated for the dirs limit */
	bool			 lost;		/* a truncated: not shared now */
	bool			 opening;	/* in watch_new: no reader yet */
	char			*owed;		/* its truncated, for the next turn */
	uint64_t		 id;
	char			*rel;		/* the directory, to the root */
	struct watch_dir	*dirs;
	int			 ndirs, capdirs;
	int			 scan_next;	/* dirs[scan_next..]: unscanned */
	int			 scan_left;	/* of this read's budget */
	struct watch_event	 ring[WATCH_RING_EVENTS];
	uint64_t		 first, next_seq;	/* kept: [first, next) */
	uint64_t		 batch;		/* first seq of this read */
	size_t			 bytes;		/* of the kept paths */
	char			 held[WATCH_EV_MAX];	/* a MOVED_FROM ... */
	size_t			 nheld;		/* ... for the next wakeup */
	struct wlist_link	*subs;
};

struct watchtab {
	struct ev_loop		*loop;
	const struct files_root	*root;
	struct watch		*head;
	int			 n;
};

static char	watch_buf[WATCH_READ_BUF]
		    __attribute__((aligned(__alignof__(struct inotify_event))));

static struct watch *watch_find(struct watchtab *, const char *, bool);
static struct watch *watch_new(struct watchtab *, const char *, bool);
static void	watch_free(struct watch *);
static void	watch_close_later(struct watch *);
static void	watch_linger_cb(struct ev_loop *, ev_timer *, int);
static void	watch_io_cb(struct ev_loop *, ev_io *, int);
static void	watch_tell(struct wlist_link *, void *);
static int	watch_join(char *, size_t, const char *, const char *);
static int	watch_add_dir(struct watch *, const char *);
static int	watch_dir_find(const struct watch *, int);
static void	watch_dir_drop(struct watch *, int);
static int	watch_scan(struct watch *, int);
static void	watch_scan_resume(struct ev_loop *, ev_check *, int);
static void	watch_scan_dir(struct watch *, int, bool);
static void	watch_subtree_move(struct watch *, const char *, const char *);
static void	watch_subtree_drop(struct watch *, const char *);
static bool	watch_under(const char *, const char *);
static void	watch_push(struct watch *, enum watch_type, const char *);
static void	watch_evict(struct watch *);
static size_t	watch_handle(struct watch *, const char *, size_t, bool);
static bool	watch_has_bytes(const struct watch *, const char *);
static void	watch_event(struct watch *, const struct inotify_event *,
		    const struct inotify_event *, bool *);
static bool	watch_is_tmp(const struct watch_dir *, const char *,
		    enum files_tmp_state *);
static void	watch_subdir(struct watch *, const char *);
static void	watch_moved(struct watch *, const struct watch_dir *,
		    const struct inotify_event *, const struct inotify_event *);

/* ------------------------------------------------------------------ */
/* The table */

struct watchtab *
watchtab_new(struct ev_loop *loop, const struct files_root *root)
{
	struct watchtab	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->loop = loop;
	t->root = root;
	return t;
}

void
watchtab_free(struct watchtab *t)
{
	if (t == NULL)
		return;
	while (t->head != NULL)
		watch_free(t->head);
	free(t);
}

/*
 * A watch that has lost events is not shared with a new reader: the
 * reader would start after the truncated that told its readers so, and
 * go on missing what the watch misses.  It gets a new watch, whose own
 * losses it is told of as they happen.
 */
static struct watch *
watch_find(struct watchtab *t, const char *rel, bool recursive)
{
	struct watch	*w;

	for (w = t->head; w != NULL; w = w->next)
		if (!w->gone && !w->lost && w->recursive == recursive &&
		    strcmp(w->rel, rel) == 0)
			return w;
	return NULL;
}

struct watch *
watch_open(struct watchtab *t, const char *rel, bool recursive)
{
	struct watch	*w;

	if ((w = watch_find(t, rel, recursive)) == NULL &&
	    (w = watch_new(t, rel, recursive)) == NULL)
		return NULL;
	w->refs++;
	ev_timer_stop(t->loop, &w->linger);
	return w;
}

void
watch_close(struct watch *w)
{
	if (w == NULL || --w->refs > 0)
		return;
	watch_close_later(w);
}

/*
 * Freed from the loop, never here: the last reader may close it while
 * being told of its events.  A gone directory has nothing more to say
 * to a resumer, nor has a watch that lost events (no reader joins it):
 * at once.
 */
static void
watch_close_later(struct watch *w)
{
	ev_timer_stop(w->tab->loop, &w->linger);
	ev_timer_set(&w->linger, w->gone || w->lost ? 0. : WATCH_LINGER,
	    0.);
	ev_timer_start(w->tab->loop, &w->linger);
}

static void
watch_linger_cb(struct ev_loop *loop, ev_timer *tm, int revents)
{
	(void)loop;
	(void)revents;
	watch_free(container_of(tm, struct watch, linger));
}

void
watch_subscribe(struct watch *w, struct watch_sub *s)
{
	wlist_add(&w->subs, &s->link);
}

void
watch_unsubscribe(struct watch *w, struct watch_sub *s)
{
	wlist_del(&w->subs, &s->link);
}

/* ------------------------------------------------------------------ */
/* A watch */

static struct watch *
watch_new(struct watchtab *t, const char *rel, bool recursive)
{
	struct watch	*w;
	int		 fd, saved;

	if (t->n >= WATCH_MAX) {
		errno = EMFILE;
		return NULL;
	}
	if ((fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC)) == -1)
		return NULL;
	if ((w = calloc(1, sizeof(*w))) == NULL ||
	    (w->rel = strdup(rel)) == NULL) {
		free(w);
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	w->tab = t;
	w->recursive = recursive;
	w->id = ((uint64_t)arc4random() << 32 | arc4random()) >> 1;
	ev_io_init(&w->io, watch_io_cb, fd, EV_READ);
	ev_timer_init(&w->linger, watch_linger_cb, WATCH_LINGER, 0.);
	turn_init(&w->scan_resume, watch_scan_resume);
	if (watch_add_dir(w, "") != 0) {
		saved = errno;
		free(w->dirs);
		free(w->rel);
		free(w);
		close(fd);
		errno = saved;
		return NULL;
	}
	w->next = t->head;
	t->head = w;
	t->n++;
	ev_io_start(t->loop, &w->io);
	if (recursive) {
		/*
		 * Its first reader takes the head once this returns: a loss
		 * found now is pushed at the next turn, after that head.
		 */
		w->opening = true;
		(void)watch_scan(w, WATCH_SCAN_BUDGET);	/* big: later */
		w->opening = false;
		if (w->owed != NULL)
			turn_start(t->loop, &w->scan_resume);
	}
	return w;
}

/* Readers still subscribed are told nothing: they hold no reference. */
static void
watch_free(struct watch *w)
{
	struct watchtab	 *t = w->tab;
	struct watch	**pp;
	int		  i;

	for (pp = &t->head; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			t->n--;
			break;
		}
	ev_io_stop(t->loop, &w->io);
	ev_timer_stop(t->loop, &w->linger);
	turn_stop(t->loop, &w->scan_resume);
	close(w->io.fd);
	for (i = 0; i < w->ndirs; i++)
		free(w->dirs[i].path);
	free(w->dirs);
	while (w->first < w->next_seq)
		watch_evict(w);
	free(w->owed);
	free(w->rel);
	free(w);
}

const struct watch_event *
watch_next(struct watch *w, uint64_t *cursor, bool *gap)
{
	const struct watch_event	*e;

	*gap = false;
	if (*cursor < w->first) {
		*gap = true;
		*cursor = w->first;
	}
	if (*cursor >= w->next_seq)
		return NULL;
	e = &w->ring[*cursor % WATCH_RING_EVENTS];
	(*cursor)++;
	return e;
}

uint64_t
watch_head(const struct watch *w)
{
	return w->next_seq;
}

uint64_t
watch_id(const struct watch *w)
{
	return w->id;
}

bool
watch_gone(const struct watch *w)
{
	return w->gone;
}

int
watch_ndirs(const struct watch *w)
{
	return w->ndirs;
}

const char *
watch_type_name(enum watch_type t)
{
	static const char *const names[] = {
		[WATCH_CREATE] = "create",
		[WATCH_WRITE] = "write",
		[WATCH_REMOVE] = "remove",
		[WATCH_RENAME] = "rename",
		[WATCH_CHMOD] = "chmod",
		[WATCH_TRUNCATED] = "truncated"
	};

	return (unsigned)t < nitems(names) ? names[t] : "unknown";
}

/* ------------------------------------------------------------------ */
/* The ring */

static void
watch_evict(struct watch *w)
{
	struct watch_event	*e = &w->ring[w->first % WATCH_RING_EVENTS];

	w->bytes -= strlen(e->path) + 1;
	free(e->path);
	e->path = NULL;
	w->first++;
}

/*
 * Append an event, the oldest dropped to stay within both bounds.  A
 * write or chmod that repeats the last event of this read is that
 * event: nobody has seen it yet.  Out of memory: a truncated (whose ""
 * needs no allocation but one byte, tried last).  A truncated marks the
 * watch lost (watch_find); while it is being made, the first one waits
 * for the next turn (watch_new).
 */
static void
watch_push(struct watch *w, enum watch_type type, const char *path)
{
	struct watch_event	*e;
	size_t			 len = strlen(path) + 1;
	char			*copy;

	if (type == WATCH_TRUNCATED) {
		w->lost = true;
		if (w->opening) {
			if (w->owed == NULL && (w->owed = strdup(path)) == NULL)
				w->owed = strdup("");
			return;
		}
	}

	if (w->next_seq > w->batch && (type == WATCH_WRITE ||
	    type == WATCH_CHMOD)) {
		e = &w->ring[(w->next_seq - 1) % WATCH_RING_EVENTS];
		if (e->type == type && strcmp(e->path, path) == 0) {
			e->ms = codec_now_ms();
			return;
		}
	}
	if ((copy = strdup(path)) == NULL) {
		if (type == WATCH_TRUNCATED || (copy = strdup("")) == NULL)
			return;
		type = WATCH_TRUNCATED;
		len = 1;
	}
	while (w->first < w->next_seq && (w->next_seq - w->first >=
	    WATCH_RING_EVENTS || w->bytes + len > WATCH_RING_BYTES))
		watch_evict(w);
	e = &w->ring[w->next_seq % WATCH_RING_EVENTS];
	e->seq = w->next_seq++;
	e->ms = codec_now_ms();
	e->type = type;
	e->path = copy;
	w->bytes += len;
	/* Nobody reads it, nobody will join it: no linger. */
	if (type == WATCH_TRUNCATED && w->refs == 0)
		watch_close_later(w);
}

/* ------------------------------------------------------------------ */
/* Directories */

/* a "/" b, or whichever is not "" (cap bytes); -1: ENAMETOOLONG. */
static int
watch_join(char *out, size_t cap, const char *a, const char *b)
{
	int	n;

	if (*a == '\0')
		n = snprintf(out, cap, "%s", b);
	else if (*b == '\0')
		n = snprintf(out, cap, "%s", a);
	else
		n = snprintf(out, cap, "%s/%s", a, b);
	if (n < 0 || (size_t)n >= cap) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return 0;
}

static int
watch_dir_find(const struct watch *w, int wd)
{
	int	lo = 0, hi = w->ndirs - 1, mid;

	while (lo <= hi) {
		mid = lo + (hi - lo) / 2;
		if (w->dirs[mid].wd == wd)
			return mid;
		if (w->dirs[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/*
 * Watch the directory path (relative to the watch), its index in dirs
 * returned (EEXIST: held already).  It is opened through the
 * files root as every file route opens (never following a last link,
 * so a link swapped in is not watched), then handed to inotify by its
 * fd's /proc name, so that what is watched is what was opened.  Without
 * /proc, by its path (the small race that leaves is documented).
 */
static int
watch_add_dir(struct watch *w, const char *path)
{
	struct watch_dir	*d;
	struct stat		 st;
	char			 rel[PATH_MAX], name[64], abs[PATH_MAX];
	int			 fd, wd, i, saved;

	if (w->ndirs >= (w->recursive ? WATCH_DIRS_MAX : 1)) {
		errno = ENOSPC;
		return -1;
	}
	if (watch_join(rel, sizeof(rel), strcmp(w->rel, ".") == 0 ? "" :
	    w->rel, path) == -1)
		return -1;
	fd = files_open(w->tab->root, rel[0] ? rel : ".", O_PATH |
	    O_DIRECTORY | (path[0] ? O_NOFOLLOW : 0), 0);
	if (fd == -1)
		return -1;
	if (fstat(fd, &st) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	wd = inotify_add_watch(w->io.fd, name, WATCH_MASK);
	if (wd == -1 && errno == ENOENT && watch_join(abs, sizeof(abs),
	    w->tab->root->path, rel) == 0)
		wd = inotify_add_watch(w->io.fd, abs, WATCH_MASK | IN_DONT_FOLLOW);
	saved = errno;
	close(fd);
	errno = saved;
	if (wd == -1)
		return -1;
	if (watch_dir_find(w, wd) != -1) {
		errno = EEXIST;		/* a bind mount of one we hold */
		return -1;
	}
	if (w->ndirs == w->capdirs) {
		i = w->capdirs ? 2 * w->capdirs : 16;
		if ((d = reallocarray(w->dirs, i, sizeof(*d))) == NULL)
			goto nomem;
		w->dirs = d;
		w->capdirs = i;
	}
	/* Kept sorted by wd: the kernel's are increasing, mostly appended. */
	for (i = w->ndirs; i > 0 && w->dirs[i - 1].wd > wd; i--)
		;
	d = &w->dirs[i];
	memmove(d + 1, d, (w->ndirs - i) * sizeof(*d));
	if ((d->path = strdup(path)) == NULL) {
		memmove(d, d + 1, (w->ndirs - i) * sizeof(*d));
		goto nomem;
	}
	d->wd = wd;
	d->report = false;
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	w->ndirs++;
	return i;
nomem:
	(void)inotify_rm_watch(w->io.fd, wd);
	errno = ENOMEM;
	return -1;
}

static void
watch_dir_drop(struct watch *w, int i)
{
	free(w->dirs[i].path);
	memmove(&w->dirs[i], &w->dirs[i + 1], (w->ndirs - i - 1) *
	    sizeof(w->dirs[0]));
	w->ndirs--;
	if (i < w->scan_next)
		w->scan_next--;
}

/*
 * Add the directories below dirs[scan_next..] as found, breadth first:
 * each one added joins the end of the array (wds only grow) and is
 * scanned in turn, budget of them now (returned: how many) and
 * WATCH_SCAN_BUDGET at each next loop turn (turn.h),
 * so that a big tree never stalls the loop.  A directory's report: what
 * is found in it is told as created (a directory made since the watch
 * began), and so in the directories found below it.
 */
static int
watch_scan(struct watch *w, int budget)
{
	struct ev_loop	*loop = w->tab->loop;
	int		 i, n;

	for (n = 0; n < budget && w->scan_next < w->ndirs && !w->gone;
	    n++) {
		i = w->scan_next++;
		watch_scan_dir(w, i, w->dirs[i].report);
	}
	if ((w->scan_next < w->ndirs && !w->gone) || w->owed != NULL)
		turn_start(loop, &w->scan_resume);
	else
		turn_stop(loop, &w->scan_resume);
	return n;
}

static void
watch_scan_resume(struct ev_loop *loop, ev_check *c, int revents)
{
	struct watch	*w = container_of(c, struct watch, scan_resume.check);
	uint64_t	 batch = w->next_seq;

	(void)loop;
	(void)revents;
	w->batch = batch;
	if (w->owed != NULL) {
		watch_push(w, WATCH_TRUNCATED, w->owed);
		free(w->owed);
		w->owed = NULL;
	}
	(void)watch_scan(w, WATCH_SCAN_BUDGET);
	if (w->next_seq > batch)
		(void)wlist_walk(&w->subs, watch_tell, NULL);
}

static void
watch_scan_dir(struct watch *w, int i, bool report)
{
	struct dirent	*de;
	DIR		*dp;
	char		 rel[PATH_MAX], sub[PATH_MAX], *dpath;
	int		 fd, j, n = 0;

	if ((dpath = strdup(w->dirs[i].path)) == NULL)
		return;
	if (watch_join(rel, sizeof(rel), strcmp(w->rel, ".") == 0 ? "" :
	    w->rel, dpath) == -1 || (fd = files_open(w->tab->root,
	    rel[0] ? rel : ".", O_RDONLY | O_DIRECTORY | O_NOFOLLOW, 0)) == -1) {
		free(dpath);
		return;
	}
	if ((dp = fdopendir(fd)) == NULL) {
		close(fd);
		free(dpath);
		return;
	}
	while ((de = readdir(dp)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (++n > WATCH_SCAN_MAX || watch_join(sub, sizeof(sub), dpath,
		    de->d_name) == -1) {
			watch_push(w, WATCH_TRUNCATED, dpath);
			break;
		}
		if (report)
			watch_push(w, WATCH_CREATE, sub);
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if ((j = watch_add_dir(w, sub)) >= 0)
			w->dirs[j].report = report;
		else if (errno != ENOTDIR && errno != ENOENT &&
		    errno != ELOOP && errno != EEXIST && !w->full) {
			/* Past the limit: one truncated says so. */
			w->full = errno == ENOSPC;
			watch_push(w, WATCH_TRUNCATED, sub);
		}
	}
	closedir(dp);
	free(dpath);
}

/* path is dir or below it. */
static bool
watch_under(const char *path, const char *dir)
{
	size_t	n = strlen(dir);

	return strncmp(path, dir, n) == 0 && (path[n] == '\0' ||
	    path[n] == '/');
}

/* A directory moved within the watch: its subtree's paths follow. */
static void
watch_subtree_move(struct watch *w, const char *from, const char *to)
{
	char	buf[PATH_MAX], *p;
	int	i;

	for (i = 0; i < w->ndirs; i++) {
		if (w->dirs[i].path[0] == '\0' ||
		    !watch_under(w->dirs[i].path, from))
			continue;
		if (watch_join(buf, sizeof(buf), to, w->dirs[i].path +
		    strlen(from) + (w->dirs[i].path[strlen(from)] == '/')) ==
		    -1 || (p = strdup(buf)) == NULL)
			continue;
		free(w->dirs[i].path);
		w->dirs[i].path = p;
	}
}

/* A directory moved out of the watch: its subtree is not ours now. */
static void
watch_subtree_drop(struct watch *w, const char *dir)
{
	int	i;

	for (i = w->ndirs - 1; i >= 0; i--)
		if (w->dirs[i].path[0] != '\0' &&
		    watch_under(w->dirs[i].path, dir)) {
			(void)inotify_rm_watch(w->io.fd, w->dirs[i].wd);
			watch_dir_drop(w, i);
		}
	if (w->full && w->ndirs < WATCH_DIRS_MAX)
		w->full = false;
}

/* ------------------------------------------------------------------ */
/* Reading the kernel's queue */

static void
watch_io_cb(struct ev_loop *loop, ev_io *io, int revents)
{
	struct watch	*w = container_of(io, struct watch, io);
	ssize_t		 n;
	size_t		 left = w->nheld;
	int		 reads, avail;

	(void)loop;
	(void)revents;
	w->batch = w->next_seq;
	w->scan_left = WATCH_SCAN_BUDGET;
	memcpy(watch_buf, w->held, w->nheld);
	w->nheld = 0;
	for (reads = 0; reads < WATCH_READS && !w->gone; reads++) {
		n = read(io->fd, watch_buf + left, sizeof(watch_buf) - left);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		/*
		 * A MOVED_FROM held back (left): its pair may come next,
		 * when the kernel had more than this read had room for.
		 */
		left = watch_handle(w, watch_buf, left + n,
		    sizeof(watch_buf) - (left + n) < WATCH_EV_MAX);
	}
	/* At the budget with more queued: held for the next wakeup. */
	if (left > 0 && reads == WATCH_READS && !w->gone &&
	    ioctl(io->fd, FIONREAD, &avail) == 0 && avail > 0) {
		memcpy(w->held, watch_buf, left);
		w->nheld = left;
	} else if (left > 0)
		(void)watch_handle(w, watch_buf, left, false);
	if (w->gone) {
		ev_io_stop(w->tab->loop, io);
		if (w->refs == 0)
			watch_close_later(w);
	}
	if (w->next_seq > w->batch)
		(void)wlist_walk(&w->subs, watch_tell, NULL);
}

static void
watch_tell(struct wlist_link *l, void *arg)
{
	struct watch_sub	*s = container_of(l, struct watch_sub, link);

	(void)arg;
	s->notify(s);
}

/*
 * The events in buf[0, n).  A MOVED_FROM is paired with the MOVED_TO
 * that follows it (the kernel queues the two together); when it is the
 * last event of a read that had no room for one more (hold), its pair
 * may be in the next read: it is moved to the front of buf and its
 * length returned (else 0).
 */
static size_t
watch_handle(struct watch *w, const char *buf, size_t n, bool hold)
{
	const struct inotify_event	*ev, *nx;
	size_t				 off = 0, len, nlen;
	bool				 paired;

	while (off + sizeof(*ev) <= n && !w->gone) {
		ev = (const struct inotify_event *)(buf + off);
		len = sizeof(*ev) + ev->len;
		if (off + len > n)
			break;
		nx = NULL;
		if (off + len + sizeof(*nx) <= n) {
			nx = (const struct inotify_event *)(buf + off + len);
			nlen = sizeof(*nx) + nx->len;
			if (off + len + nlen > n)
				nx = NULL;
		}
		if ((ev->mask & IN_MOVED_FROM) && nx == NULL && hold &&
		    off > 0) {
			memmove(watch_buf, buf + off, n - off);
			return n - off;
		}
		paired = false;
		watch_event(w, ev, nx, &paired);
		off += len;
		if (paired)
			off += sizeof(*nx) + nx->len;
	}
	return 0;
}

/* name in d is one of tend's temp files (*state: what it is now). */
static bool
watch_is_tmp(const struct watch_dir *d, const char *name,
    enum files_tmp_state *state)
{
	*state = FILES_TMP_NONE;
	if (!files_tmp_name(name))
		return false;
	*state = files_tmp_state(d->dev, d->ino, name);
	return *state != FILES_TMP_NONE;
}

/* The file at path (in the watch) is not empty now. */
static bool
watch_has_bytes(const struct watch *w, const char *path)
{
	struct stat	st;
	char		rel[PATH_MAX];

	return watch_join(rel, sizeof(rel), strcmp(w->rel, ".") == 0 ? "" :
	    w->rel, path) == 0 && files_stat(w->tab->root, rel, false,
	    &st) == 0 && st.st_size > 0;
}

static void
watch_event(struct watch *w, const struct inotify_event *ev,
    const struct inotify_event *nx, bool *paired)
{
	enum files_tmp_state	 st;
	struct watch_dir	*d;
	char			 path[PATH_MAX];
	int			 i;

	if (ev->mask & IN_Q_OVERFLOW) {
		watch_push(w, WATCH_TRUNCATED, "");
		return;
	}
	if ((i = watch_dir_find(w, ev->wd)) == -1)
		return;			/* a watch dropped, its last words */
	d = &w->dirs[i];
	if (ev->mask & (IN_IGNORED | IN_DELETE_SELF)) {
		if (d->path[0] == '\0') {
			watch_push(w, WATCH_REMOVE, "");
			w->gone = true;
		} else if (ev->mask & IN_IGNORED)
			watch_dir_drop(w, i);
		return;
	}
	if (ev->len == 0 || watch_join(path, sizeof(path), d->path,
	    ev->name) == -1)
		return;
	if (ev->mask & IN_MOVED_FROM) {
		*paired = nx != NULL && (nx->mask & IN_MOVED_TO) &&
		    nx->cookie == ev->cookie;
		watch_moved(w, d, ev, *paired ? nx : NULL);
		return;
	}
	/* A temp of tend's own: its create, writes, mode, abort are silent. */
	if (watch_is_tmp(d, ev->name, &st))
		return;
	if (ev->mask & (IN_CREATE | IN_MOVED_TO)) {
		watch_push(w, WATCH_CREATE, path);
		if ((ev->mask & IN_ISDIR) && w->recursive)
			watch_subdir(w, path);
	} else if (ev->mask & IN_MODIFY)
		watch_push(w, WATCH_WRITE, path);
	else if (ev->mask & IN_ATTRIB)
		watch_push(w, WATCH_CHMOD, path);
	else if (ev->mask & IN_DELETE) {
		watch_push(w, WATCH_REMOVE, path);
		if (ev->mask & IN_ISDIR)
			watch_subtree_drop(w, path);
	}
}

/*
 * A rename: from (ev, in d) to (to: its MOVED_TO, NULL when the name
 * left the watch).  tend's temp renamed over its name is told as envd's
 * write in place would be: a new name's create and, when it holds
 * bytes, its write; a replaced file's write.  Anything else is a rename of the old name and a
 * create of the new one, a directory's subtree following it.
 */
static void
watch_moved(struct watch *w, const struct watch_dir *d,
    const struct inotify_event *ev, const struct inotify_event *to)
{
	enum files_tmp_state	 st;
	const struct watch_dir	*td = NULL;
	char			 from[PATH_MAX], dst[PATH_MAX];
	int			 i;

	if (watch_join(from, sizeof(from), d->path, ev->name) == -1)
		return;
	if (to != NULL && (i = watch_dir_find(w, to->wd)) != -1)
		td = &w->dirs[i];
	if (td != NULL && watch_join(dst, sizeof(dst), td->path,
	    to->name) == -1)
		td = NULL;
	if (watch_is_tmp(d, ev->name, &st)) {
		if (td == NULL)
			return;
		if (st != FILES_TMP_REPLACED)
			watch_push(w, WATCH_CREATE, dst);
		if (st == FILES_TMP_REPLACED || watch_has_bytes(w, dst))
			watch_push(w, WATCH_WRITE, dst);
		return;
	}
	watch_push(w, WATCH_RENAME, from);
	if (td == NULL) {
		if (ev->mask & IN_ISDIR)
			watch_subtree_drop(w, from);
		return;
	}
	watch_push(w, WATCH_CREATE, dst);
	if (!(ev->mask & IN_ISDIR) || !w->recursive)
		return;
	watch_subtree_move(w, from, dst);
	for (i = 0; i < w->ndirs; i++)
		if (strcmp(w->dirs[i].path, dst) == 0)
			return;
	/* Moved in from a directory the watch does not hold. */
	watch_subdir(w, dst);
}

/*
 * A directory made or moved in: watched, and what it holds told, now
 * (before its create is) while this read's WATCH_SCAN_BUDGET lasts: a
 * bigger tree moved in, or many at once, later from the loop.
 */
static void
watch_subdir(struct watch *w, const char *path)
{
	int	i;

	if ((i = watch_add_dir(w, path)) >= 0) {
		w->dirs[i].report = true;
		w->scan_left -= watch_scan(w, w->scan_left);
	} else if (!w->full && errno != ENOENT && errno != ENOTDIR &&
	    errno != EEXIST) {
		w->full = errno == ENOSPC;
		watch_push(w, WATCH_TRUNCATED, path);
	}
}
