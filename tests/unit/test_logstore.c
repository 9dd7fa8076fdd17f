/*
 * logstore: draining pipes into files and index, the bound on disk use,
 * disks that refuse bytes, and reopening a record read-only.
 */
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/codec.h"
#include "base/tunables.h"
#include "store/logstore.h"
#include "testutil.h"

Suite *logstore_suite(void);

static const char *const names2[] = { "stdout", "stderr" };
static const char *const names1[] = { "output" };

static char	base_path[64];		/* one per tcase, made by the runner */
static char	tdir_path[96];		/* one per test, inside base_path */
static int	tdir = -1;

static void	base_setup(void);
static void	base_teardown(void);
static void	setup(void);
static void	teardown(void);
static void	mkpipe(int[2]);
static void	fill(char *, size_t, unsigned);
static uint64_t	pump(struct logstore *, int, int[2], const char *, size_t);
static void	replace_fd(int *, const char *, int);
static bool	punch_works(void);
static void	append_recs(struct logstore *, int, uint64_t, size_t);

/*
 * The runner's own fixture: a failed test skips its checked teardown,
 * so whatever it left is removed here.
 */
static void
base_setup(void)
{
	tu_mkdtemp(base_path, sizeof(base_path), "/tmp/tend-logstore-");
}

static void
base_teardown(void)
{
	tu_rmtree(base_path);
}

static void
setup(void)
{
	char	prefix[80];

	snprintf(prefix, sizeof(prefix), "%s/t", base_path);
	tdir = tu_tmpdir(tdir_path, sizeof(tdir_path), prefix);
}

static void
teardown(void)
{
	static const char *const files[] = {
		"stdout", "stderr", "output", "index", "probe",
	};
	size_t	i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		(void)unlinkat(tdir, files[i], 0);
	close(tdir);
	tdir = -1;
	ck_assert_int_eq(rmdir(tdir_path), 0);
}

static void
mkpipe(int p[2])
{
	ck_assert_int_eq(pipe2(p, O_NONBLOCK | O_CLOEXEC), 0);
}

/* Bytes that differ from one position and one call to the next. */
static void
fill(char *d, size_t n, unsigned seed)
{
	size_t	i;

	for (i = 0; i < n; i++)
		d[i] = (char)((i * 131 + seed * 7 + (i >> 9)) & 0xff);
}

/*
 * Push n bytes through the pipe p into stream s, draining whenever the
 * pipe is full, as the agent's loop would.  Returns bytes drained.
 */
static uint64_t
pump(struct logstore *ls, int s, int p[2], const char *d, size_t n)
{
	uint64_t	taken = 0;
	size_t		done = 0;
	ssize_t		w, r;

	while (done < n) {
		w = write(p[1], d + done, n - done);
		if (w > 0)
			done += (size_t)w;
		else
			ck_assert_int_eq(errno, EAGAIN);
		while ((r = logstore_drain(ls, s, p[0])) > 0)
			taken += (uint64_t)r;
		ck_assert_int_eq(r, -1);
		ck_assert_int_eq(errno, EAGAIN);
	}
	return taken;
}

/* Swap a store's fd for the file name opened with flags. */
static void
replace_fd(int *fd, const char *name, int flags)
{
	close(*fd);
	*fd = openat(tdir, name, flags | O_CLOEXEC);
	ck_assert_int_ge(*fd, 0);
}

static bool
punch_works(void)
{
	char	d[8192];
	int	fd, r;

	fd = openat(tdir, "probe", O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	memset(d, 'x', sizeof(d));
	ck_assert_int_eq(pwrite(fd, d, sizeof(d), 0), (ssize_t)sizeof(d));
	r = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096);
	close(fd);
	return r == 0;
}

START_TEST(create_makes_files)
{
	struct logstore	ls;
	struct stat	st;
	mode_t		um;
	const char	*bad[] = { "stdout", "index" };
	const char	*slash[] = { "a/b" };

	um = umask(022);
	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	umask(um);
	ck_assert_int_eq(ls.nstreams, 2);
	ck_assert_int_ge(ls.fd[0], 0);
	ck_assert_int_ge(ls.fd[1], 0);
	ck_assert_int_ge(ls.idxfd, 0);
	ck_assert(!ls.ro);
	ck_assert_uint_eq(ls.nrec + ls.dropped + ls.end[0] + ls.end[1], 0);
	ck_assert_int_eq(fstatat(tdir, "stdout", &st, 0), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0640);
	ck_assert_int_eq(fstatat(tdir, "stderr", &st, 0), 0);
	ck_assert_int_eq(fstatat(tdir, "index", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(fcntl(ls.fd[0], F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	logstore_close(&ls);
	ck_assert_int_eq(ls.fd[0], -1);
	ck_assert_int_eq(ls.fd[1], -1);
	ck_assert_int_eq(ls.idxfd, -1);
	logstore_close(&ls);		/* twice is harmless */

	ck_assert_int_eq(logstore_create(&ls, tdir, 0, names2, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(logstore_create(&ls, tdir, 3, names2, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(logstore_create(&ls, tdir, 2, bad, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(ls.fd[0], -1);		/* nothing left open */
	ck_assert_int_eq(logstore_create(&ls, tdir, 1, slash, 0), -1);
	ck_assert_int_eq(logstore_create(&ls, -1, 2, names2, 0), -1);
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

START_TEST(create_truncates)
{
	struct logstore	ls;
	struct stat	st;

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "old", 3), 0);
	logstore_close(&ls);
	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	ck_assert_int_eq(fstatat(tdir, "stdout", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(fstatat(tdir, "index", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 0);
	logstore_close(&ls);
}
END_TEST

START_TEST(drain_pipe)
{
	struct logstore	 ls;
	struct ls_rec	 r;
	static char	 big[LOG_CHUNK + 1000], got[2 * LOG_CHUNK];
	int		 p[2];
	int64_t		 t0;
	ssize_t		 n;

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	mkpipe(p);
	t0 = codec_now_ms();
	ck_assert_int_eq(write(p[1], "hello\n", 6), 6);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), 6);
	ck_assert_uint_eq(ls.nrec, 1);
	ck_assert_uint_eq(ls.end[LS_STDOUT], 6);
	ck_assert_int_eq(logstore_rec(&ls, 1, &r), 0);
	ck_assert_uint_eq(r.seq, 1);
	ck_assert_uint_eq(r.offset, 0);
	ck_assert_uint_eq(r.len, 6);
	ck_assert_uint_eq(r.stream, LS_STDOUT);
	ck_assert(r.ts_ms >= t0 && r.ts_ms <= codec_now_ms());

	/* Nothing readable: EAGAIN, no record. */
	errno = 0;
	ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_uint_eq(ls.nrec, 1);

	/*
	 * More than a chunk waiting: one call may take several, but each
	 * record holds at most LOG_CHUNK bytes.
	 */
	ck_assert_int_eq(fcntl(p[1], F_SETPIPE_SZ, 4 * LOG_CHUNK) >= 0, 1);
	fill(big, sizeof(big), 1);
	ck_assert_int_eq(write(p[1], big, sizeof(big)), (ssize_t)sizeof(big));
	n = logstore_drain(&ls, LS_STDOUT, p[0]);
	ck_assert_int_ge(n, LOG_CHUNK);
	if (n < (ssize_t)sizeof(big))
		ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]),
		    (ssize_t)sizeof(big) - n);
	ck_assert_int_eq(logstore_rec(&ls, 2, &r), 0);
	ck_assert_uint_eq(r.offset, 6);
	ck_assert_uint_eq(r.len, LOG_CHUNK);
	ck_assert_int_eq(logstore_rec(&ls, 3, &r), 0);
	ck_assert_uint_eq(r.seq, 3);
	ck_assert_uint_eq(r.offset, 6 + LOG_CHUNK);
	ck_assert_uint_eq(r.len, 1000);
	ck_assert_int_eq(logstore_rec(&ls, 4, &r), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(logstore_rec(&ls, 0, &r), -1);
	ck_assert_int_eq(errno, ENOENT);

	/* Records wait in memory until flushed, in one write. */
	ck_assert_uint_eq(tu_read(tdir, "index", got, sizeof(got)), 0);
	ck_assert_int_eq(logstore_flush(&ls), 0);
	ck_assert_int_eq(ls.npend, 0);

	/* The file holds exactly the bytes, the index exactly 3 records. */
	n = (ssize_t)tu_read(tdir, "stdout", got, sizeof(got));
	ck_assert_int_eq(n, 6 + (ssize_t)sizeof(big));
	ck_assert_int_eq(memcmp(got, "hello\n", 6), 0);
	ck_assert_int_eq(memcmp(got + 6, big, sizeof(big)), 0);
	ck_assert_uint_eq(tu_read(tdir, "index", got, sizeof(got)),
	    3 * sizeof(struct ls_rec));
	ck_assert_uint_eq(tu_read(tdir, "stderr", got, sizeof(got)), 0);
	ck_assert_uint_eq(ls.dropped, 0);

	/* EOF once the writer is gone; again and again. */
	close(p[1]);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), 0);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), 0);
	ck_assert_uint_eq(ls.nrec, 3);
	close(p[0]);
	logstore_close(&ls);
}
END_TEST

START_TEST(drain_data_then_eof)
{
	struct logstore	ls;
	char		got[16];
	int		p[2];

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	mkpipe(p);
	ck_assert_int_eq(write(p[1], "last words", 10), 10);
	close(p[1]);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDERR, p[0]), 10);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDERR, p[0]), 0);
	ck_assert_int_eq(logstore_pread(&ls, LS_STDERR, got, sizeof(got), 0),
	    10);
	ck_assert_int_eq(memcmp(got, "last words", 10), 0);
	close(p[0]);
	logstore_close(&ls);
}
END_TEST

START_TEST(interleaved_order)
{
	static const struct {
		int		 s;
		const char	*text;
	} seq[] = {
		{ LS_STDOUT, "out one\n" },
		{ LS_STDERR, "err one\n" },
		{ LS_STDERR, "err two, longer\n" },
		{ LS_STDOUT, "out two\n" },
		{ LS_STDERR, "e3\n" },
		{ LS_STDOUT, "o3\n" },
	};
	struct logstore	ls;
	struct ls_rec	r;
	char		got[64], out[256] = "", err[256] = "";
	uint64_t	off[2] = { 0, 0 };
	int		p[2][2];
	size_t		i, len;

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	mkpipe(p[0]);
	mkpipe(p[1]);
	for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		len = strlen(seq[i].text);
		ck_assert_int_eq(write(p[seq[i].s][1], seq[i].text, len),
		    (ssize_t)len);
		ck_assert_int_eq(logstore_drain(&ls, seq[i].s,
		    p[seq[i].s][0]), (ssize_t)len);
		logstore_seal(&ls);	/* as a follower would: no merging */
		strcat(seq[i].s == LS_STDOUT ? out : err, seq[i].text);
	}
	ck_assert_uint_eq(ls.nrec, 6);
	/* Replaying the index in seq order gives back the writes' order. */
	for (i = 0; i < sizeof(seq) / sizeof(seq[0]); i++) {
		len = strlen(seq[i].text);
		ck_assert_int_eq(logstore_rec(&ls, i + 1, &r), 0);
		ck_assert_uint_eq(r.seq, i + 1);
		ck_assert_uint_eq(r.stream, (unsigned)seq[i].s);
		ck_assert_uint_eq(r.offset, off[seq[i].s]);
		ck_assert_uint_eq(r.len, len);
		ck_assert_int_eq(logstore_pread(&ls, (int)r.stream, got,
		    r.len, r.offset), (ssize_t)len);
		ck_assert_int_eq(memcmp(got, seq[i].text, len), 0);
		off[seq[i].s] += len;
	}
	ck_assert_uint_eq(ls.end[LS_STDOUT], strlen(out));
	ck_assert_uint_eq(ls.end[LS_STDERR], strlen(err));
	ck_assert_uint_eq(tu_read(tdir, "stdout", got, sizeof(got)),
	    strlen(out));
	ck_assert_int_eq(memcmp(got, out, strlen(out)), 0);
	ck_assert_uint_eq(tu_read(tdir, "stderr", got, sizeof(got)),
	    strlen(err));
	ck_assert_int_eq(memcmp(got, err, strlen(err)), 0);
	for (i = 0; i < 2; i++) {
		close(p[i][0]);
		close(p[i][1]);
	}
	logstore_close(&ls);
}
END_TEST

/* Not a pipe: a socket (a terminal's, say) drains the same way. */
START_TEST(drain_from_socket)
{
	struct logstore	ls;
	struct ls_rec	r;
	char		got[32];
	int		sv[2];

	ck_assert_int_eq(logstore_create(&ls, tdir, 1, names1, 0), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0, sv), 0);
	ck_assert_int_eq(logstore_drain(&ls, 0, sv[0]), -1);
	ck_assert_int_eq(errno, EAGAIN);
	ck_assert_int_eq(write(sv[1], "terminal", 8), 8);
	ck_assert_int_eq(logstore_drain(&ls, 0, sv[0]), 8);
	logstore_seal(&ls);
	ck_assert_int_eq(write(sv[1], " bytes", 6), 6);
	ck_assert_int_eq(logstore_drain(&ls, 0, sv[0]), 6);
	ck_assert_int_eq(logstore_rec(&ls, 2, &r), 0);
	ck_assert_uint_eq(r.offset, 8);
	ck_assert_uint_eq(r.len, 6);
	ck_assert_uint_eq(tu_read(tdir, "output", got, sizeof(got)), 14);
	ck_assert_int_eq(memcmp(got, "terminal bytes", 14), 0);
	close(sv[1]);
	ck_assert_int_eq(logstore_drain(&ls, 0, sv[0]), 0);
	/* One stream only. */
	ck_assert_int_eq(logstore_drain(&ls, 1, sv[0]), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(logstore_append(&ls, -1, "x", 1), -1);
	ck_assert_int_eq(errno, EINVAL);
	close(sv[0]);
	logstore_close(&ls);
}
END_TEST

/* A stream file opened O_APPEND (pwrite appends there) still gets it all. */
START_TEST(drain_into_append_file)
{
	struct logstore	ls;
	char		got[32];
	int		p[2];

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	replace_fd(&ls.fd[LS_STDOUT], "stdout", O_WRONLY | O_APPEND);
	mkpipe(p);
	ck_assert_int_eq(write(p[1], "abc", 3), 3);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), 3);
	logstore_seal(&ls);
	ck_assert_int_eq(write(p[1], "defg", 4), 4);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), 4);
	ck_assert_uint_eq(ls.dropped, 0);
	ck_assert_uint_eq(ls.nrec, 2);
	ck_assert_uint_eq(ls.end[LS_STDOUT], 7);
	ck_assert_uint_eq(tu_read(tdir, "stdout", got, sizeof(got)), 7);
	ck_assert_int_eq(memcmp(got, "abcdefg", 7), 0);
	close(p[0]);
	close(p[1]);
	logstore_close(&ls);
}
END_TEST

START_TEST(append_splits_chunks)
{
	struct logstore	 ls;
	struct ls_rec	 r;
	static char	 d[150000], got[150000];

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	fill(d, sizeof(d), 3);
	ck_assert_int_eq(logstore_append(&ls, LS_STDERR, d, sizeof(d)), 0);
	ck_assert_int_eq(logstore_append(&ls, LS_STDERR, d, 0), 0);
	ck_assert_uint_eq(ls.nrec, 3);
	ck_assert_int_eq(logstore_rec(&ls, 1, &r), 0);
	ck_assert_uint_eq(r.len, LOG_CHUNK);
	ck_assert_int_eq(logstore_rec(&ls, 3, &r), 0);
	ck_assert_uint_eq(r.offset, 2 * LOG_CHUNK);
	ck_assert_uint_eq(r.len, sizeof(d) - 2 * LOG_CHUNK);
	ck_assert_uint_eq(r.stream, LS_STDERR);
	ck_assert_uint_eq(tu_read(tdir, "stderr", got, sizeof(got)), sizeof(d));
	ck_assert_int_eq(memcmp(got, d, sizeof(d)), 0);
	logstore_close(&ls);
}
END_TEST

/*
 * The handover's round trip (logstore_json.c): a live store saved and
 * loaded into an empty one of the same streams appends where the first
 * stopped, on the same files, and reads all of it back.
 */
START_TEST(save_load_goes_on)
{
	struct logstore	 ls, ls2;
	struct ls_rec	 r;
	static char	 d[3000], got[6000];
	cJSON		*j;

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	fill(d, sizeof(d), 5);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, d, 1000), 0);
	ck_assert_int_eq(logstore_append(&ls, LS_STDERR, d, 10), 0);
	ls.dropped = 7;
	ck_assert_ptr_nonnull(j = logstore_save(&ls));
	logstore_create_none(&ls2, 2, names2, 0);
	ck_assert_int_eq(logstore_load(&ls2, j), 0);
	cJSON_Delete(j);
	ck_assert_int_eq(ls2.fd[0], ls.fd[0]);
	ck_assert_int_eq(ls2.idxfd, ls.idxfd);
	ck_assert_uint_eq(ls2.end[LS_STDOUT], 1000);
	ck_assert_uint_eq(ls2.end[LS_STDERR], 10);
	ck_assert_uint_eq(ls2.nrec, 2);
	ck_assert_uint_eq(ls2.dropped, 7);
	ck_assert(!ls2.ro);
	ck_assert_int_eq(logstore_append(&ls2, LS_STDOUT, d + 1000, 2000), 0);
	ck_assert_uint_eq(ls2.nrec, 3);
	ck_assert_int_eq(logstore_rec(&ls2, 3, &r), 0);
	ck_assert_uint_eq(r.offset, 1000);
	ck_assert_uint_eq(tu_read(tdir, "stdout", got, sizeof(got)), 3000);
	ck_assert_int_eq(memcmp(got, d, 3000), 0);
	/* Another store's shape is refused. */
	ck_assert_ptr_nonnull(j = logstore_save(&ls2));
	logstore_create_none(&ls, 1, names1, 0);
	ck_assert_int_eq(logstore_load(&ls, j), -1);
	cJSON_Delete(j);
	logstore_close(&ls2);
}
END_TEST

START_TEST(pread_bounds)
{
	struct logstore	ls;
	char		got[16];

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "0123456789", 10), 0);
	ck_assert_int_eq(logstore_pread(&ls, LS_STDOUT, got, 16, 4), 6);
	ck_assert_int_eq(memcmp(got, "456789", 6), 0);
	ck_assert_int_eq(logstore_pread(&ls, LS_STDOUT, got, 16, 10), 0);
	ck_assert_int_eq(logstore_pread(&ls, LS_STDOUT, got, 16, 1000), 0);
	ck_assert_int_eq(logstore_pread(&ls, LS_STDERR, got, 16, 0), 0);
	ck_assert_int_eq(logstore_pread(&ls, 2, got, 16, 0), -1);
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_int_eq(logstore_pread(&ls, -1, got, 16, 0), -1);
	logstore_close(&ls);
}
END_TEST

/*
 * 10 x 100 KiB through a pipe with a 128 KiB bound: the oldest bytes go,
 * offsets stay absolute, and the disk space comes back.
 */
START_TEST(maxbytes_bound)
{
	struct logstore	 ls;
	struct stat	 st;
	static char	 d[10][100 * 1024], got[128 * 1024];
	const uint64_t	 max = 128 * 1024, total = sizeof(d);
	uint64_t	 start, off;
	ssize_t		 n;
	int		 p[2], i;
	bool		 punch;

	punch = punch_works();
	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, max), 0);
	mkpipe(p);
	for (i = 0; i < 10; i++) {
		fill(d[i], sizeof(d[i]), (unsigned)i + 10);
		ck_assert_uint_eq(pump(&ls, LS_STDOUT, p, d[i],
		    sizeof(d[i])), sizeof(d[i]));
		ck_assert_uint_le(ls.end[LS_STDOUT] - ls.start[LS_STDOUT],
		    max);
	}
	start = total - max;
	ck_assert_uint_eq(ls.end[LS_STDOUT], total);
	ck_assert_uint_eq(ls.start[LS_STDOUT], start);
	ck_assert_uint_eq(ls.dropped, 0);
	ck_assert_uint_eq(ls.start[LS_STDERR], 0);

	/* Gone: below start, whatever the file still holds. */
	ck_assert_int_eq(logstore_pread(&ls, LS_STDOUT, got, 10, 0), -1);
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_int_eq(logstore_pread(&ls, LS_STDOUT, got, 10, start - 1),
	    -1);
	ck_assert_int_eq(errno, ERANGE);

	/* Retained: byte-exact, at absolute offsets. */
	n = logstore_pread(&ls, LS_STDOUT, got, sizeof(got), start);
	ck_assert_int_eq(n, (ssize_t)max);
	ck_assert_int_eq(memcmp(got, (char *)d + start, max), 0);
	off = total - 1;
	ck_assert_int_eq(logstore_pread(&ls, LS_STDOUT, got, 10, off), 1);
	ck_assert_int_eq(got[0], d[9][sizeof(d[9]) - 1]);

	/* The file keeps its size; its blocks shrink to about the bound. */
	ck_assert_int_eq(fstat(ls.fd[LS_STDOUT], &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, total);
	if (punch)
		ck_assert_msg((uint64_t)st.st_blocks * 512 <= 2 * max,
		    "%lld bytes still allocated",
		    (long long)st.st_blocks * 512);
	else
		TU_SKIP("no hole punching here: the space and start checks");
	close(p[0]);
	close(p[1]);
	logstore_close(&ls);

	/* Reopened, the punched prefix (whole 64 KiB steps) is the start. */
	ck_assert_int_eq(logstore_open(&ls, tdir, 2, names2), 0);
	if (punch)
		ck_assert_uint_eq(ls.start[LS_STDOUT], start & ~65535ULL);
	ck_assert_uint_le(ls.start[LS_STDOUT], start);
	logstore_close(&ls);
}
END_TEST

/*
 * A disk that refuses every write: the pipe must still be emptied, the
 * call must succeed, and the bytes must be counted.  An fd opened
 * read-only stands in for the full disk (pwrite gets EBADF).
 */
START_TEST(storage_error_drops)
{
	struct logstore	 ls;
	static char	 d[3 * LOG_CHUNK];
	uint64_t	 taken;
	int		 p[2];

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "kept", 4), 0);
	replace_fd(&ls.fd[LS_STDOUT], "stdout", O_RDONLY);
	mkpipe(p);
	ck_assert_int_eq(write(p[1], "lost", 4), 4);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), 4);
	ck_assert_uint_eq(ls.dropped, 4);
	ck_assert_uint_eq(ls.nrec, 1);
	ck_assert_uint_eq(ls.end[LS_STDOUT], 4);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), -1);
	ck_assert_int_eq(errno, EAGAIN);

	/* Far more than the pipe holds: the writer never stays blocked. */
	fill(d, sizeof(d), 5);
	taken = pump(&ls, LS_STDOUT, p, d, sizeof(d));
	ck_assert_uint_eq(taken, sizeof(d));
	ck_assert_uint_eq(ls.dropped, 4 + sizeof(d));
	ck_assert_uint_eq(ls.nrec, 1);

	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "more", 4), 0);
	ck_assert_uint_eq(ls.dropped, 8 + sizeof(d));
	ck_assert_uint_eq(ls.nrec, 1);

	/* The other stream is unaffected and seqs stay consecutive. */
	ck_assert_int_eq(logstore_append(&ls, LS_STDERR, "fine", 4), 0);
	ck_assert_uint_eq(ls.nrec, 2);
	close(p[1]);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), 0);
	close(p[0]);
	logstore_close(&ls);
}
END_TEST

/*
 * The index refuses the record: the data was written but no reader
 * could find it, so it is cut off again and counted as dropped.  Once
 * the index works again the next chunk takes the same offset and seq.
 */
START_TEST(index_error_drops)
{
	/* (the records are written by logstore_flush; see drain_pipe) */
	struct logstore	ls;
	struct ls_rec	r;
	struct stat	st;
	char		got[16];
	int		p[2];

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	replace_fd(&ls.idxfd, "index", O_RDONLY);
	mkpipe(p);
	ck_assert_int_eq(write(p[1], "orphan", 6), 6);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), 6);
	ck_assert_int_eq(logstore_flush(&ls), -1);
	ck_assert_uint_eq(ls.dropped, 6);
	ck_assert_uint_eq(ls.nrec, 0);
	ck_assert_uint_eq(ls.end[LS_STDOUT], 0);
	ck_assert_int_eq(fstatat(tdir, "stdout", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 0);

	replace_fd(&ls.idxfd, "index", O_RDWR);
	ck_assert_int_eq(write(p[1], "found", 5), 5);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), 5);
	ck_assert_int_eq(logstore_flush(&ls), 0);
	ck_assert_int_eq(logstore_rec(&ls, 1, &r), 0);
	ck_assert_uint_eq(r.offset, 0);
	ck_assert_uint_eq(r.len, 5);
	ck_assert_uint_eq(tu_read(tdir, "stdout", got, sizeof(got)), 5);
	ck_assert_int_eq(memcmp(got, "found", 5), 0);
	close(p[0]);
	close(p[1]);
	logstore_close(&ls);
}
END_TEST

/*
 * A file that takes only part of a chunk (RLIMIT_FSIZE makes the kernel
 * write up to the limit, then EFBIG): the stored part gets a record, the
 * rest is dropped.
 */
START_TEST(partial_write)
{
	struct logstore	 ls;
	struct ls_rec	 r1, r2;
	struct rlimit	 old, lim;
	static char	 d[3000], got[4000];
	uint64_t	 taken = 0;
	ssize_t		 n;
	void		 (*oldsig)(int);
	int		 p[2], rc;

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	mkpipe(p);
	fill(d, sizeof(d), 7);
	ck_assert_int_eq(write(p[1], d, sizeof(d)), (ssize_t)sizeof(d));

	/* No check assertion while the limit holds: check writes files. */
	ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
	oldsig = signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = 1000;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	rc = logstore_append(&ls, LS_STDERR, d, sizeof(d));
	while ((n = logstore_drain(&ls, LS_STDOUT, p[0])) > 0)
		taken += (uint64_t)n;
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, oldsig);

	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(n, -1);
	ck_assert_uint_eq(taken, sizeof(d));
	ck_assert_uint_eq(ls.end[LS_STDERR], 1000);
	ck_assert_uint_eq(ls.end[LS_STDOUT], 1000);
	ck_assert_uint_eq(ls.dropped, 2 * (sizeof(d) - 1000));
	ck_assert_uint_eq(ls.nrec, 2);
	ck_assert_int_eq(logstore_rec(&ls, 1, &r1), 0);
	ck_assert_int_eq(logstore_rec(&ls, 2, &r2), 0);
	ck_assert_uint_eq(r1.stream, LS_STDERR);
	ck_assert_uint_eq(r1.len, 1000);
	ck_assert_uint_eq(r2.stream, LS_STDOUT);
	ck_assert_uint_eq(r2.len, 1000);
	ck_assert_uint_eq(tu_read(tdir, "stdout", got, sizeof(got)), 1000);
	ck_assert_int_eq(memcmp(got, d, 1000), 0);
	ck_assert_uint_eq(tu_read(tdir, "stderr", got, sizeof(got)), 1000);
	ck_assert_int_eq(memcmp(got, d, 1000), 0);
	close(p[0]);
	close(p[1]);
	logstore_close(&ls);
}
END_TEST

START_TEST(open_recovers)
{
	struct logstore	 w, ro;
	struct ls_rec	 r;
	static char	 d[40000], got[40000];
	const uint64_t	 max = 16384;
	char		 buf[8];
	int		 p[2];
	bool		 punch;

	punch = punch_works();
	ck_assert_int_eq(logstore_create(&w, tdir, 2, names2, max), 0);
	fill(d, sizeof(d), 9);
	ck_assert_int_eq(logstore_append(&w, LS_STDOUT, d, 10000), 0);
	ck_assert_int_eq(logstore_append(&w, LS_STDERR, "err", 3), 0);
	ck_assert_int_eq(logstore_append(&w, LS_STDOUT, d + 10000, 30000), 0);
	ck_assert_uint_eq(w.start[LS_STDOUT], 40000 - max);
	logstore_close(&w);

	ck_assert_int_eq(logstore_open(&ro, tdir, 2, names2), 0);
	ck_assert(ro.ro);
	ck_assert_uint_eq(ro.nrec, 3);
	ck_assert_uint_eq(ro.end[LS_STDOUT], 40000);
	ck_assert_uint_eq(ro.end[LS_STDERR], 3);
	ck_assert_uint_eq(ro.start[LS_STDERR], 0);
	/*
	 * The punched prefix ends at start rounded down to a 64 KiB step:
	 * nothing is punched yet here, so the recovered start is 0 (what
	 * lies between it and the true start is still real output).
	 */
	(void)punch;
	ck_assert_uint_eq(ro.start[LS_STDOUT], 0);
	ck_assert_uint_le(ro.start[LS_STDOUT], 40000 - max);
	ck_assert_int_eq(logstore_rec(&ro, 3, &r), 0);
	ck_assert_uint_eq(r.offset, 10000);
	ck_assert_uint_eq(r.len, 30000);
	ck_assert_int_eq(logstore_pread(&ro, LS_STDOUT, got, sizeof(got),
	    40000 - max), (ssize_t)max);
	ck_assert_int_eq(memcmp(got, d + 40000 - max, max), 0);
	ck_assert_int_eq(logstore_pread(&ro, LS_STDERR, buf, 8, 0), 3);
	ck_assert_int_eq(memcmp(buf, "err", 3), 0);

	/* Read-only: nothing is written, not even from a pipe. */
	ck_assert_int_eq(logstore_append(&ro, LS_STDOUT, "x", 1), -1);
	ck_assert_int_eq(errno, EROFS);
	mkpipe(p);
	ck_assert_int_eq(write(p[1], "y", 1), 1);
	ck_assert_int_eq(logstore_drain(&ro, LS_STDOUT, p[0]), -1);
	ck_assert_int_eq(errno, EROFS);
	ck_assert_uint_eq(ro.nrec, 3);
	close(p[0]);
	close(p[1]);
	logstore_close(&ro);
}
END_TEST

START_TEST(open_empty_and_missing)
{
	struct logstore	ls;
	char		buf_scratch[4];

	/* Missing files are a lazy store that never stored: empty. */
	ck_assert_int_eq(logstore_open(&ls, tdir, 2, names2), 0);
	ck_assert_int_eq(ls.fd[0], -1);
	ck_assert_int_eq(ls.idxfd, -1);
	ck_assert_uint_eq(ls.end[0] + ls.end[1] + ls.nrec, 0);
	ck_assert_int_eq(logstore_pread(&ls, LS_STDOUT, buf_scratch, 1, 0), 0);
	logstore_close(&ls);
	ck_assert_int_eq(logstore_open(&ls, -1, 2, names2), -1);

	ck_assert_int_eq(logstore_create(&ls, tdir, 1, names1, 0), 0);
	logstore_close(&ls);
	ck_assert_int_eq(logstore_open(&ls, tdir, 1, names1), 0);
	ck_assert_uint_eq(ls.start[0], 0);
	ck_assert_uint_eq(ls.end[0], 0);
	ck_assert_uint_eq(ls.nrec, 0);
	logstore_close(&ls);
}
END_TEST

START_TEST(lazy_creates_on_first_byte)
{
	struct logstore	ls, ro;
	struct stat	st;
	int		p[2];

	ck_assert_int_eq(logstore_create_lazy(&ls, tdir, 2, names2, 0), 0);
	ck_assert_int_eq(fstatat(tdir, "stdout", &st, 0), -1);
	ck_assert_int_eq(fstatat(tdir, "index", &st, 0), -1);
	ck_assert_int_eq(logstore_create_lazy(&ls, -1, 2, names2, 0), -1);
	ck_assert_int_eq(logstore_create_lazy(&ls, tdir, 2, names2, 0), 0);

	mkpipe(p);
	ck_assert_int_eq(write(p[1], "err", 3), 3);
	ck_assert_int_eq(logstore_drain(&ls, LS_STDERR, p[0]), 3);
	ck_assert_int_eq(logstore_flush(&ls), 0);
	/* Only what stored a byte exists, and the index with it. */
	ck_assert_int_eq(fstatat(tdir, "stdout", &st, 0), -1);
	ck_assert_int_eq(fstatat(tdir, "stderr", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 3);
	ck_assert_int_eq(fstatat(tdir, "index", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 32);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "out", 3), 0);
	ck_assert_int_eq(fstatat(tdir, "stdout", &st, 0), 0);
	ck_assert_uint_eq(ls.nrec, 2);
	logstore_close(&ls);

	ck_assert_int_eq(logstore_open(&ro, tdir, 2, names2), 0);
	ck_assert_uint_eq(ro.end[LS_STDOUT], 3);
	ck_assert_uint_eq(ro.end[LS_STDERR], 3);
	ck_assert_uint_eq(ro.nrec, 2);
	logstore_close(&ro);
	close(p[0]);
	close(p[1]);
}
END_TEST

/*
 * Small writes nobody has read yet grow the last record instead of adding
 * one each; a record handed to a reader is final.
 */
START_TEST(small_writes_merge_until_read)
{
	struct logstore	ls, ro;
	struct ls_rec	r;
	static char	big[LOG_CHUNK];
	uint64_t	n0, i, sum = 0;
	int64_t		t0, ms;
	int		p[2];

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	mkpipe(p);
	t0 = codec_mono_ms();
	for (i = 0; i < 1000; i++) {
		ck_assert_int_eq(write(p[1], "x", 1), 1);
		ck_assert_int_eq(logstore_drain(&ls, LS_STDOUT, p[0]), 1);
		if (i == 500)
			ck_assert_int_eq(logstore_flush(&ls), 0);
	}
	ms = codec_mono_ms() - t0;
	/* One record per 20 ms of writing at most, not one per write. */
	n0 = ls.nrec;
	ck_assert_uint_le(n0, 2 + (uint64_t)ms / 20);
	ck_assert_uint_lt(n0, 1000);
	ck_assert_uint_eq(ls.end[LS_STDOUT], 1000);
	/* Another stream is another record; back on stdout, a new one. */
	ck_assert_int_eq(logstore_append(&ls, LS_STDERR, "e", 1), 0);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "y", 1), 0);
	ck_assert_uint_eq(ls.nrec, n0 + 2);
	/* Read: final.  The next byte starts a record of its own. */
	ck_assert_int_eq(logstore_rec(&ls, n0 + 2, &r), 0);
	ck_assert_uint_eq(r.len, 1);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "z", 1), 0);
	ck_assert_uint_eq(ls.nrec, n0 + 3);
	/* No record grows past LOG_CHUNK. */
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, big, sizeof(big)), 0);
	ck_assert_uint_eq(ls.nrec, n0 + 4);
	ck_assert_int_eq(logstore_rec(&ls, n0 + 3, &r), 0);
	ck_assert_uint_eq(r.len, 1);
	close(p[0]);
	close(p[1]);
	logstore_close(&ls);

	/* On disk too: merged records were rewritten with their lengths. */
	ck_assert_int_eq(logstore_open(&ro, tdir, 2, names2), 0);
	ck_assert_uint_eq(ro.nrec, n0 + 4);
	for (i = 1; i <= n0; i++) {
		ck_assert_int_eq(logstore_rec(&ro, i, &r), 0);
		ck_assert_uint_eq(r.offset, sum);
		sum += r.len;
	}
	ck_assert_uint_eq(sum, 1000);
	ck_assert_int_eq(logstore_rec(&ro, n0 + 2, &r), 0);
	ck_assert_uint_eq(r.offset, 1000);
	logstore_close(&ro);
}
END_TEST

/*
 * A written record taken back to grow, then an index that refuses the
 * write: the record keeps what it had (on disk too); only the growth is
 * dropped.
 */
START_TEST(merge_then_index_error_keeps_the_old_record)
{
	struct logstore	ls, ro;
	struct ls_rec	r;
	struct stat	st;

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "abc", 3), 0);
	ck_assert_int_eq(ls.npend, 0);			/* written */
	replace_fd(&ls.idxfd, "index", O_RDONLY);	/* the index refuses */
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "def", 3), 0);
	ck_assert_uint_eq(ls.nrec, 1);
	ck_assert_uint_eq(ls.end[LS_STDOUT], 3);
	ck_assert_uint_eq(ls.dropped, 3);
	ck_assert_int_eq(logstore_rec(&ls, 1, &r), 0);
	ck_assert_uint_eq(r.len, 3);
	logstore_close(&ls);
	ck_assert_int_eq(fstatat(tdir, "stdout", &st, 0), 0);
	ck_assert_int_eq(st.st_size, 3);
	ck_assert_int_eq(logstore_open(&ro, tdir, 2, names2), 0);
	ck_assert_uint_eq(ro.nrec, 1);
	ck_assert_int_eq(logstore_rec(&ro, 1, &r), 0);
	ck_assert_uint_eq(r.len, 3);
	logstore_close(&ro);
}
END_TEST

/* A damaged record (a length past its chunk or its stream) is refused. */
START_TEST(damaged_record_refused)
{
	struct logstore	ls, ro;
	struct ls_rec	r;
	uint32_t	bad;
	int		fd;

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "abc", 3), 0);
	logstore_seal(&ls);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "def", 3), 0);
	logstore_close(&ls);
	fd = openat(tdir, "index", O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	bad = 250000;		/* > LOG_CHUNK: would overrun a reader's buffer */
	ck_assert_int_eq(pwrite(fd, &bad, sizeof(bad), 16), (ssize_t)sizeof(bad));
	bad = 4;		/* 3 + 4 > the 6 bytes stored */
	ck_assert_int_eq(pwrite(fd, &bad, sizeof(bad), 32 + 16),
	    (ssize_t)sizeof(bad));
	close(fd);
	ck_assert_int_eq(logstore_open(&ro, tdir, 2, names2), 0);
	errno = 0;
	ck_assert_int_eq(logstore_rec(&ro, 1, &r), -1);
	ck_assert_int_eq(errno, EIO);
	ck_assert_int_eq(logstore_rec(&ro, 2, &r), -1);
	ck_assert_int_eq(errno, EIO);
	logstore_close(&ro);
}
END_TEST

/* n records of len bytes each on stream s, none merged. */
static void
append_recs(struct logstore *ls, int s, uint64_t n, size_t len)
{
	static char	d[1024];
	uint64_t	i;

	memset(d, 'r', sizeof(d));
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(logstore_append(ls, s, d, len), 0);
		logstore_seal(ls);
	}
}

/*
 * Records whose bytes the bound released leave the index in steps of
 * LS_ISTEP: they read back as ERANGE, the file's space is returned, and
 * a reopened store finds how many bytes they held in the base record.
 */
START_TEST(index_released_with_its_bytes)
{
	struct logstore	 ls, ro;
	struct ls_rec	 r;
	struct stat	 st;
	uint64_t	 n = 3 * LS_ISTEP + 100, gone, bytes[LS_NSTREAMS];

	if (!punch_works()) {
		/* Nothing is released without hole punching. */
		TU_SKIP("no hole punching on this file system");
		return;
	}
	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 4096), 0);
	append_recs(&ls, LS_STDOUT, n, 100);
	gone = logstore_gone(&ls, bytes);
	ck_assert_uint_eq(gone % LS_ISTEP, 0);
	ck_assert_uint_ge(gone, 2 * LS_ISTEP);
	ck_assert_uint_eq(bytes[LS_STDOUT], gone * 100);
	ck_assert_uint_eq(bytes[LS_STDERR], 0);
	ck_assert_int_eq(logstore_rec(&ls, gone, &r), -1);
	ck_assert_int_eq(errno, ERANGE);
	ck_assert_int_eq(logstore_rec(&ls, gone + 1, &r), 0);
	ck_assert_uint_eq(r.offset, gone * 100);
	/* The records kept are those of retained bytes, within a step. */
	ck_assert_int_eq(fstatat(tdir, "index", &st, 0), 0);
	ck_assert_int_eq(st.st_size, (off_t)(n * 32));
	ck_assert_int_lt(st.st_blocks * 512, (n - gone) * 32 + 2 * 4096);
	logstore_close(&ls);

	ck_assert_int_eq(logstore_open(&ro, tdir, 2, names2), 0);
	ck_assert_uint_eq(ro.nrec, n);
	ck_assert_uint_eq(logstore_gone(&ro, bytes), gone);
	ck_assert_uint_eq(bytes[LS_STDOUT], gone * 100);
	ck_assert_int_eq(logstore_rec(&ro, gone, &r), -1);
	ck_assert_int_eq(logstore_rec(&ro, gone + 1, &r), 0);
	ck_assert_uint_eq(r.offset, gone * 100);
	ck_assert_int_eq(logstore_rec(&ro, n, &r), 0);
	ck_assert_uint_eq(r.offset + r.len, n * 100);
	logstore_close(&ro);
}
END_TEST

/* Both streams: the base keeps each one's count. */
START_TEST(index_base_counts_both_streams)
{
	struct logstore	 ls, ro;
	uint64_t	 gone, bytes[LS_NSTREAMS], i;

	if (!punch_works()) {
		TU_SKIP("no hole punching on this file system");
		return;
	}
	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 2048), 0);
	for (i = 0; i < 2 * LS_ISTEP; i++)
		append_recs(&ls, i % 2 ? LS_STDERR : LS_STDOUT, 1, i % 2 ? 10 : 30);
	gone = logstore_gone(&ls, bytes);
	ck_assert_uint_eq(gone, LS_ISTEP);
	ck_assert_uint_eq(bytes[LS_STDOUT], LS_ISTEP / 2 * 30);
	ck_assert_uint_eq(bytes[LS_STDERR], LS_ISTEP / 2 * 10);
	logstore_close(&ls);
	ck_assert_int_eq(logstore_open(&ro, tdir, 2, names2), 0);
	ck_assert_uint_eq(logstore_gone(&ro, bytes), LS_ISTEP);
	ck_assert_uint_eq(bytes[LS_STDOUT], LS_ISTEP / 2 * 30);
	ck_assert_uint_eq(bytes[LS_STDERR], LS_ISTEP / 2 * 10);
	logstore_close(&ro);
}
END_TEST

/* A record of a stream that keeps its bytes keeps the records after it. */
START_TEST(quiet_stream_holds_the_index)
{
	struct logstore	 ls;
	uint64_t	 bytes[LS_NSTREAMS];

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 4096), 0);
	append_recs(&ls, LS_STDERR, 1, 5);
	append_recs(&ls, LS_STDOUT, 2 * LS_ISTEP + 10, 100);
	ck_assert_uint_eq(logstore_gone(&ls, bytes), 0);
	logstore_close(&ls);
}
END_TEST

/* An index full of zeros has no base: nothing counts as released. */
START_TEST(zeroed_index_is_not_a_base)
{
	struct logstore	 ro;
	uint64_t	 bytes[LS_NSTREAMS];
	static char	 z[4 * LS_ISTEP * 32];
	int		 fd;

	fd = openat(tdir, "index", O_CREAT | O_WRONLY | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, z, sizeof(z)), (ssize_t)sizeof(z));
	close(fd);
	ck_assert_int_eq(logstore_open(&ro, tdir, 2, names2), 0);
	ck_assert_uint_eq(ro.nrec, 4 * LS_ISTEP);
	ck_assert_uint_eq(logstore_gone(&ro, bytes), 0);
	logstore_close(&ro);
}
END_TEST

/*
 * The last record stays open for merging for LS_MERGE_MS (20 ms) after
 * its first read, unless a reader was handed it.
 */
START_TEST(tail_open_while_it_may_grow)
{
	struct logstore	 ls, ro;
	struct ls_rec	 r;
	int64_t		 ms;

	ck_assert_int_eq(logstore_create(&ls, tdir, 2, names2, 0), 0);
	ck_assert_int_eq(logstore_tail_open(&ls), 0);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "a", 1), 0);
	ms = logstore_tail_open(&ls);
	ck_assert_int_gt(ms, 0);
	ck_assert_int_le(ms, 21);
	ck_assert_int_eq(logstore_rec(&ls, 1, &r), 0);	/* handed: final */
	ck_assert_int_eq(logstore_tail_open(&ls), 0);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "b", 1), 0);
	ck_assert_uint_eq(ls.nrec, 2);
	ck_assert_int_gt(logstore_tail_open(&ls), 0);
	usleep(30 * 1000);
	ck_assert_int_eq(logstore_tail_open(&ls), 0);
	ck_assert_int_eq(logstore_append(&ls, LS_STDOUT, "c", 1), 0);
	ck_assert_uint_eq(ls.nrec, 3);		/* closed by time: not merged */
	logstore_close(&ls);
	ck_assert_int_eq(logstore_open(&ro, tdir, 2, names2), 0);
	ck_assert_int_eq(logstore_tail_open(&ro), 0);	/* read-only */
	logstore_close(&ro);
}
END_TEST

/* No directory: every byte dropped and counted, nothing created. */
START_TEST(none_drops_everything)
{
	struct logstore	ls;
	char		b[8];

	logstore_create_none(&ls, 2, names2, 100);
	ck_assert_int_eq(ls.fd[0], -1);
	ck_assert_int_eq(ls.idxfd, -1);
	ck_assert_uint_eq(ls.maxbytes, 100);
	ck_assert_int_eq(logstore_append(&ls, 0, "abc", 3), 0);
	ck_assert_int_eq(logstore_append(&ls, 1, "de", 2), 0);
	ck_assert_uint_eq(ls.dropped, 5);
	ck_assert_uint_eq(ls.end[0] + ls.end[1], 0);
	ck_assert_uint_eq(ls.nrec, 0);
	ck_assert_int_eq(logstore_pread(&ls, 0, b, sizeof(b), 0), 0);
	ck_assert(!tu_exists(tdir, "stdout"));
	logstore_close(&ls);
}
END_TEST

/*
 * A closed lazy store gets its files back read-only, with what it
 * counted (the drops are not on disk); a store without names cannot.
 */
START_TEST(reopen_keeps_counts)
{
	struct logstore	ls, none;
	char		b[16];

	ck_assert_int_eq(logstore_create_lazy(&ls, tdir, 2, names2, 0), 0);
	ck_assert_int_eq(logstore_append(&ls, 0, "hello", 5), 0);
	ck_assert_int_eq(logstore_append(&ls, 1, "err", 3), 0);
	ls.dropped = 9;
	logstore_close(&ls);
	ck_assert_int_eq(ls.fd[0], -1);
	ck_assert_int_eq(logstore_reopen(&ls, tdir), 0);
	ck_assert(ls.ro);
	ck_assert_int_ge(ls.fd[0], 0);
	ck_assert_int_ge(ls.idxfd, 0);
	ck_assert_uint_eq(ls.end[0], 5);
	ck_assert_uint_eq(ls.end[1], 3);
	ck_assert_uint_eq(ls.nrec, 2);
	ck_assert_uint_eq(ls.dropped, 9);
	ck_assert_int_eq(logstore_pread(&ls, 1, b, sizeof(b), 0), 3);
	ck_assert_int_eq(memcmp(b, "err", 3), 0);
	/* Read-only now. */
	ck_assert_int_eq(logstore_append(&ls, 0, "x", 1), -1);
	logstore_close(&ls);

	ck_assert_int_eq(logstore_create(&none, tdir, 2, names2, 0), 0);
	logstore_close(&none);
	errno = 0;
	ck_assert_int_eq(logstore_reopen(&none, tdir), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

Suite *
logstore_suite(void)
{
	Suite	*s = suite_create("logstore");
	TCase	*tc;

	tc = tcase_create("store");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, create_makes_files);
	tcase_add_test(tc, create_truncates);
	tcase_add_test(tc, drain_pipe);
	tcase_add_test(tc, drain_data_then_eof);
	tcase_add_test(tc, interleaved_order);
	tcase_add_test(tc, drain_from_socket);
	tcase_add_test(tc, drain_into_append_file);
	tcase_add_test(tc, append_splits_chunks);
	tcase_add_test(tc, pread_bounds);
	suite_add_tcase(s, tc);

	tc = tcase_create("hostile");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, maxbytes_bound);
	tcase_add_test(tc, storage_error_drops);
	tcase_add_test(tc, index_error_drops);
	tcase_add_test(tc, partial_write);
	suite_add_tcase(s, tc);

	tc = tcase_create("reopen");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, open_recovers);
	tcase_add_test(tc, open_empty_and_missing);
	tcase_add_test(tc, lazy_creates_on_first_byte);
	tcase_add_test(tc, damaged_record_refused);
	tcase_add_test(tc, small_writes_merge_until_read);
	tcase_add_test(tc, merge_then_index_error_keeps_the_old_record);
	tcase_add_test(tc, tail_open_while_it_may_grow);
	tcase_add_test(tc, zeroed_index_is_not_a_base);
	tcase_add_test(tc, none_drops_everything);
	tcase_add_test(tc, reopen_keeps_counts);
	suite_add_tcase(s, tc);

	tc = tcase_create("index_bound");
	tcase_add_unchecked_fixture(tc, base_setup, base_teardown);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, index_released_with_its_bytes);
	tcase_add_test(tc, index_base_counts_both_streams);
	tcase_add_test(tc, quiet_stream_holds_the_index);
	tcase_add_test(tc, save_load_goes_on);
	suite_add_tcase(s, tc);
	return s;
}
