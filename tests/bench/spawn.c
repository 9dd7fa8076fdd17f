/*
 * spawnbench: the timing half of scripts/bench, where a Python client's own
 * overhead would blur the figure.  Every time is CLOCK_MONOTONIC, printed
 * in microseconds on one line of "key=value" pairs on stdout.
 *
 *   spawnbench spawn N WARM PATH
 *	posix_spawn(PATH) + waitpid, WARM untimed then N timed: the bare cost
 *	the agent's exec is compared with.
 *
 *   spawnbench exec SOCKET N WARM JSON [PATH]
 *	POST /v1/exec with body JSON, WARM untimed then N timed, all on ONE
 *	keep-alive connection; each time is write of the request to the end
 *	of the reply body (Content-Length).  Every reply must be 200 with
 *	"code":0.  With PATH, each request is followed by one timed bare
 *	posix_spawn(PATH) + waitpid: both figures then share the same
 *	moments of a noisy machine (a second line, keys prefixed "bare_").
 *
 *   spawnbench run N WARM ARGV...
 *	posix_spawn ARGV (ARGV[0] a path; stdout to /dev/null) + waitpid,
 *	WARM untimed then N timed: the floor of the start-to-ready figure.
 *
 *   spawnbench serve SOCKET PATH [DIR [thread]]
 *	The least an exec server on a unix socket can do, as the floor of
 *	the agent's exec: accept one connection at a time; for each
 *	request (a head, then Content-Length bytes) posix_spawn(PATH) in
 *	a process group of its own, stdout and stderr on pipes; wait in
 *	epoll for both pipes' EOF and SIGCHLD (signalfd), reap, reply 200
 *	with {"code":0}.  No JSON, no IDs, no logs.  With DIR, what the
 *	agent's record asks of the disk too, in the agent's order: the
 *	child's oom_score_adj raised and DIR/meta.json written (a new
 *	temp, renamed over it) while it runs; after the reply a
 *	sched_yield, then DIR/status.json the same way.  (The agent's
 *	temps and directory are made ahead by a child: it creates no inode
 *	on its loop, where this makes two per exec.)  With "thread", the
 *	two files are written by a thread of their own, in order, and the
 *	loop goes on at once (the OOM score and the yield stay on the
 *	loop); a connection's close waits until the thread has done all it
 *	was given.  Runs until killed; prints "ready" once it listens.
 *
 *   spawnbench ready SOCKET LOG ARGV...
 *	posix_spawn ARGV (stdout and stderr to LOG), then connect to SOCKET
 *	and GET /v1/health until a 200 comes back: the time from spawn to
 *	that reply.  Then SIGTERM to ARGV's child (the agent under unshare),
 *	and wait for ARGV to end (SIGKILL after 5 s).
 *
 * Exit 0 on success, 1 on any error (message on stderr).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void
die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void
die(const char *fmt, ...)
{
	va_list	ap;
	int	saved = errno;

	fputs("spawnbench: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (saved != 0 && fmt[strlen(fmt) - 1] == ':')
		fprintf(stderr, " %s", strerror(saved));
	fputc('\n', stderr);
	/* Not exit: the writer thread (serve) may die too. */
	fflush(stdout);
	_exit(1);
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* Nearest-rank percentile of a sorted array. */
static double
pct(const int64_t *v, size_t n, double p)
{
	size_t	i = (size_t)(p / 100.0 * (double)n + 0.5);

	if (i > 0)
		i--;
	if (i >= n)
		i = n - 1;
	return (double)v[i] / 1000.0;
}

/* One line of key=value pairs, each key prefixed by pfx ("" or "bare_"). */
static void
report(const char *pfx, int64_t *v, size_t n)
{
	double	sum = 0;
	size_t	i;

	qsort(v, n, sizeof(*v), cmp_i64);
	for (i = 0; i < n; i++)
		sum += (double)v[i];
	printf("%sn=%zu %sp50_us=%.1f %sp90_us=%.1f %sp99_us=%.1f "
	    "%smin_us=%.1f %smax_us=%.1f %smean_us=%.1f\n", pfx, n,
	    pfx, pct(v, n, 50), pfx, pct(v, n, 90), pfx, pct(v, n, 99),
	    pfx, (double)v[0] / 1000.0, pfx, (double)v[n - 1] / 1000.0,
	    pfx, sum / (double)n / 1000.0);
}

static long
count(const char *s, long min)
{
	char	*end;
	long	 n;

	errno = 0;
	n = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || end == s || n < min)
		die("bad count '%s'", s);
	return n;
}

/* ------------------------------------------------------------ spawn */

/* One posix_spawn of argv (with fa) and its waitpid: the time taken. */
static int64_t
spawn_argv(char **argv, const posix_spawn_file_actions_t *fa)
{
	int64_t	 t0, dt;
	pid_t	 pid;
	int	 st, rc;

	t0 = now_ns();
	if ((rc = posix_spawn(&pid, argv[0], fa, NULL, argv, environ)) != 0) {
		errno = rc;
		die("posix_spawn %s:", argv[0]);
	}
	if (waitpid(pid, &st, 0) == -1)
		die("waitpid:");
	dt = now_ns() - t0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		die("%s: exit status %#x", argv[0], st);
	return dt;
}

static int64_t
spawn_once(const char *path)
{
	char	*argv[] = { (char *)path, NULL };

	return spawn_argv(argv, NULL);
}

/* argv (with fa) WARM times untimed, then N timed: its report. */
static int
spawn_times(long n, long warm, char **argv,
    const posix_spawn_file_actions_t *fa)
{
	int64_t	*t;
	long	 i;

	if ((t = calloc((size_t)n, sizeof(*t))) == NULL)
		die("calloc:");
	for (i = -warm; i < n; i++) {
		int64_t dt = spawn_argv(argv, fa);

		if (i >= 0)
			t[i] = dt;
	}
	report("", t, (size_t)n);
	free(t);
	return 0;
}

/* run: argv, its stdout to /dev/null. */
static int
cmd_run(long n, long warm, char **argv)
{
	posix_spawn_file_actions_t fa;
	int	rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
	rc = spawn_times(n, warm, argv, &fa);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

static int
cmd_spawn(long n, long warm, const char *path)
{
	char	*argv[] = { (char *)path, NULL };

	return spawn_times(n, warm, argv, NULL);
}

/* ------------------------------------------------------------ HTTP */

static int
unix_connect(const char *path)
{
	struct sockaddr_un sun;
	int	fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sun.sun_path, path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		int saved = errno;

		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

static void
write_all(int fd, const char *p, size_t len)
{
	ssize_t	w;

	while (len > 0) {
		if ((w = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			die("write:");
		}
		p += w;
		len -= (size_t)w;
	}
}

struct reply {
	int	 status;
	char	*body;		/* NUL-terminated, inside buf */
	size_t	 bodylen;
};

/*
 * The head at the start of buf (NUL-terminated): its length with the
 * blank line, 0 while it is not whole; *body its Content-Length, -1
 * without one.  Header names are case-insensitive.
 */
static size_t
http_head(const char *buf, long *body)
{
	const char	*eoh, *cl;

	if ((eoh = strstr(buf, "\r\n\r\n")) == NULL)
		return 0;
	cl = strcasestr(buf, "\r\nContent-Length:");
	*body = cl != NULL && cl < eoh ? (long)strtoul(cl + 17, NULL, 10) : -1;
	return (size_t)(eoh - buf) + 4;
}

/*
 * Read one Content-Length response into buf (cap bytes).  Anything past it
 * would be a pipelined reply we never asked for: an error.  -1 on EOF
 * before a whole head.
 */
static int
read_reply(int fd, char *buf, size_t cap, struct reply *r)
{
	size_t	have = 0, headlen = 0, total = 0;
	ssize_t	n;
	long	body;

	for (;;) {
		if (have + 1 >= cap)
			die("reply larger than %zu bytes", cap);
		n = read(fd, buf + have, cap - 1 - have);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			die("read:");
		}
		if (n == 0)
			return -1;
		have += (size_t)n;
		buf[have] = '\0';
		if (headlen == 0) {
			if ((headlen = http_head(buf, &body)) == 0)
				continue;
			if (sscanf(buf, "HTTP/1.1 %d", &r->status) != 1)
				die("bad status line: %.60s", buf);
			if (body < 0)
				die("reply without Content-Length: %.200s",
				    buf);
			total = headlen + (size_t)body;
		}
		if (have >= total)
			break;
	}
	if (have > total)
		die("unexpected bytes after the reply");
	r->body = buf + headlen;
	r->bodylen = total - headlen;
	return 0;
}

/* ------------------------------------------------------------ exec */

static int
cmd_exec(const char *sock, long n, long warm, const char *json,
    const char *bare)
{
	static char buf[4 * 1024 * 1024];
	struct reply r;
	char	*req;
	int64_t	*t, *b, t0, dt;
	size_t	 reqlen;
	long	 i;
	int	 fd, len;

	len = asprintf(&req, "POST /v1/exec HTTP/1.1\r\nHost: tend\r\n"
	    "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
	    strlen(json), json);
	if (len < 0)
		die("asprintf:");
	reqlen = (size_t)len;
	if ((t = calloc((size_t)n, sizeof(*t))) == NULL ||
	    (b = calloc((size_t)n, sizeof(*b))) == NULL)
		die("calloc:");
	if ((fd = unix_connect(sock)) == -1)
		die("connect %s:", sock);
	for (i = -warm; i < n; i++) {
		t0 = now_ns();
		write_all(fd, req, reqlen);
		if (read_reply(fd, buf, sizeof(buf), &r) == -1)
			die("connection closed by the agent after %ld "
			    "requests", i + warm);
		if (i >= 0)
			t[i] = now_ns() - t0;
		if (r.status != 200 || strstr(r.body, "\"code\":0") == NULL)
			die("exec reply %d: %.300s", r.status, r.body);
		/* Paired: the bare figure a moment later, same noise. */
		if (bare != NULL) {
			dt = spawn_once(bare);
			if (i >= 0)
				b[i] = dt;
		}
	}
	close(fd);
	report("", t, (size_t)n);
	if (bare != NULL)
		report("bare_", b, (size_t)n);
	free(t);
	free(b);
	free(req);
	return 0;
}

/* ------------------------------------------------------------ rtt */

/*
 * A request that starts nothing (GET path on one keep-alive connection,
 * any status): the socket's round trip and the agent's parse and reply,
 * the part of an exec's cost that no launch can save.
 */
static int
cmd_rtt(const char *sock, long n, long warm, const char *path)
{
	static char buf[64 * 1024];
	struct reply r;
	char	*req;
	int64_t	*t, t0;
	long	 i;
	int	 fd, len;

	if ((len = asprintf(&req, "GET %s HTTP/1.1\r\nHost: tend\r\n\r\n",
	    path)) < 0)
		die("asprintf:");
	if ((t = calloc((size_t)n, sizeof(*t))) == NULL)
		die("calloc:");
	if ((fd = unix_connect(sock)) == -1)
		die("connect %s:", sock);
	for (i = -warm; i < n; i++) {
		t0 = now_ns();
		write_all(fd, req, (size_t)len);
		if (read_reply(fd, buf, sizeof(buf), &r) == -1)
			die("connection closed by the agent after %ld "
			    "requests", i + warm);
		if (i >= 0)
			t[i] = now_ns() - t0;
	}
	close(fd);
	report("", t, (size_t)n);
	free(t);
	free(req);
	return 0;
}

/* ------------------------------------------------------------ serve */

struct serve {
	const char	*path, *dir;	/* the program; the record's dir or NULL */
	int		 ep, ls, sfd;	/* epoll, listener, signalfd */
	int		 c;		/* the one connection, or -1 */
	char		 buf[64 * 1024];	/* its unread bytes, NUL after */
	size_t		 have;
	pid_t		 pid;		/* the child; 0 reaped; -1 none */
	int		 pipes;		/* its pipes not at EOF yet */
	posix_spawnattr_t attr;
};

static void
serve_watch(struct serve *v, int fd, int op)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (epoll_ctl(v->ep, op, fd, &ev) == -1)
		die("epoll_ctl:");
}

/* A write handed to the writer thread, which frees it. */
struct put {
	const char	*dir, *name;
	size_t		 n;
	char		 d[];
};

static int	put_pipe[2] = { -1, -1 };	/* of struct put pointers */
static unsigned long put_queued, put_done;	/* __atomic */

static void	put_file_now(const char *, const char *, const void *,
		    size_t);

static void *
put_writer(void *arg)
{
	struct put	*p;

	(void)arg;
	for (;;) {
		if (read(put_pipe[0], &p, sizeof(p)) != (ssize_t)sizeof(p))
			die("the writer's read:");
		put_file_now(p->dir, p->name, p->d, p->n);
		free(p);
		__atomic_add_fetch(&put_done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* Until the writer has done all it was given: none left to spill over. */
static void
put_drain(void)
{
	struct timespec	nap = { 0, 100 * 1000 };

	while (__atomic_load_n(&put_done, __ATOMIC_ACQUIRE) != put_queued)
		nanosleep(&nap, NULL);
}

/* The writer thread, signals blocked (they are the loop's). */
static void
put_thread_start(void)
{
	sigset_t	all, old;
	pthread_t	t;

	if (pipe2(put_pipe, O_CLOEXEC) == -1)
		die("pipe2:");
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if ((errno = pthread_create(&t, NULL, put_writer, NULL)) != 0)
		die("pthread_create:");
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* dir/name written now, or by the writer thread once it runs. */
static void
put_file(const char *dir, const char *name, const void *d, size_t n)
{
	struct put	*p;

	if (put_pipe[1] == -1) {
		put_file_now(dir, name, d, n);
		return;
	}
	if ((p = malloc(sizeof(*p) + n)) == NULL)
		die("malloc:");
	p->dir = dir;
	p->name = name;
	p->n = n;
	memcpy(p->d, d, n);
	put_queued++;
	write_all(put_pipe[1], (const char *)&p, sizeof(p));
}

/* n bytes of d into dir/name, through a temp renamed over it. */
static void
put_file_now(const char *dir, const char *name, const void *d, size_t n)
{
	char	tmp[4096], path[4096];
	int	fd;

	snprintf(tmp, sizeof(tmp), "%s/%s.tmp", dir, name);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0640)) == -1)
		die("open %s:", tmp);
	write_all(fd, d, n);
	close(fd);
	if (rename(tmp, path) == -1)
		die("rename %s:", tmp);
}

/* The length of the whole request at the head of buf, or 0. */
static size_t
request_len(const char *buf, size_t have)
{
	size_t	len;
	long	body;

	if ((len = http_head(buf, &body)) == 0)
		return 0;
	len += body > 0 ? (size_t)body : 0;
	return have >= len ? len : 0;
}

/* A whole request and no child: start one, stdout and stderr on pipes. */
static void
serve_start(struct serve *v)
{
	posix_spawn_file_actions_t fa;
	char	*argv[] = { (char *)v->path, NULL }, f[64];
	size_t	 len;
	int	 out[2], err[2], rc, fd;

	if (v->pid != -1 || (len = request_len(v->buf, v->have)) == 0)
		return;
	if (pipe2(out, O_CLOEXEC) == -1 || pipe2(err, O_CLOEXEC) == -1)
		die("pipe2:");
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, out[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err[1], 2);
	if ((rc = posix_spawn(&v->pid, v->path, &fa, &v->attr, argv,
	    environ)) != 0) {
		errno = rc;
		die("posix_spawn %s:", v->path);
	}
	posix_spawn_file_actions_destroy(&fa);
	if (v->dir != NULL) {
		snprintf(f, sizeof(f), "/proc/%d/oom_score_adj", (int)v->pid);
		if ((fd = open(f, O_WRONLY | O_CLOEXEC)) != -1) {
			(void)!write(fd, "100", 3);
			close(fd);
		}
		put_file(v->dir, "meta.json", v->buf, len);
	}
	memmove(v->buf, v->buf + len, v->have - len + 1);
	v->have -= len;
	close(out[1]);
	close(err[1]);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	serve_watch(v, out[0], EPOLL_CTL_ADD);
	serve_watch(v, err[0], EPOLL_CTL_ADD);
	v->pipes = 2;
}

/* Reaped and both pipes at EOF: the reply, then the next request. */
static void
serve_done(struct serve *v)
{
	static const char reply[] = "HTTP/1.1 200 OK\r\nContent-Type: "
	    "application/json\r\nContent-Length: 10\r\n\r\n{\"code\":0}";

	if (v->pid != 0 || v->pipes > 0)
		return;
	v->pid = -1;
	if (v->c != -1)
		write_all(v->c, reply, sizeof(reply) - 1);
	if (v->dir != NULL) {
		sched_yield();
		put_file(v->dir, "status.json", reply, sizeof(reply) - 1);
	}
	serve_start(v);
}

/* One connection at a time: the listener rests while one is open. */
static void
serve_conn(struct serve *v, int fd)
{
	ssize_t	n;

	if (fd == v->ls) {
		if ((v->c = accept4(v->ls, NULL, NULL, SOCK_CLOEXEC)) == -1)
			return;
		v->have = 0;
		v->buf[0] = '\0';
		serve_watch(v, v->ls, EPOLL_CTL_DEL);
		serve_watch(v, v->c, EPOLL_CTL_ADD);
		return;
	}
	if ((n = read(v->c, v->buf + v->have, sizeof(v->buf) - 1 -
	    v->have)) <= 0) {
		close(v->c);
		v->c = -1;
		put_drain();
		serve_watch(v, v->ls, EPOLL_CTL_ADD);
		return;
	}
	v->have += (size_t)n;
	v->buf[v->have] = '\0';
	serve_start(v);
}

/* A pipe's bytes thrown away; at EOF it is closed. */
static void
serve_pipe(struct serve *v, int fd)
{
	char	d[4096];
	ssize_t	n;

	while ((n = read(fd, d, sizeof(d))) > 0)
		;
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n == -1)
		die("read pipe:");
	serve_watch(v, fd, EPOLL_CTL_DEL);
	close(fd);
	v->pipes--;
}

static void
serve_reap(struct serve *v)
{
	struct signalfd_siginfo si;
	int	st;

	while (read(v->sfd, &si, sizeof(si)) > 0)
		;
	if (v->pid > 0 && waitpid(v->pid, &st, WNOHANG) == v->pid)
		v->pid = 0;
}

static int
cmd_serve(const char *sock, const char *path, const char *dir, bool thread)
{
	static struct serve v;
	struct sockaddr_un sun;
	struct epoll_event evs[8];
	sigset_t mask, none;
	int	 n, i, fd;

	v.path = path;
	v.dir = dir;
	v.c = v.pid = -1;
	if (thread)
		put_thread_start();
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigemptyset(&none);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	posix_spawnattr_init(&v.attr);
	posix_spawnattr_setflags(&v.attr, POSIX_SPAWN_SETPGROUP |
	    POSIX_SPAWN_SETSIGMASK);
	posix_spawnattr_setsigmask(&v.attr, &none);
	if ((v.sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) == -1 ||
	    (v.ep = epoll_create1(EPOLL_CLOEXEC)) == -1 ||
	    (v.ls = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		die("setup:");
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", sock);
	unlink(sock);
	if (bind(v.ls, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(v.ls, 16) == -1)
		die("listen %s:", sock);
	serve_watch(&v, v.sfd, EPOLL_CTL_ADD);
	serve_watch(&v, v.ls, EPOLL_CTL_ADD);
	printf("ready\n");	/* line-buffered: see main */
	for (;;) {
		if ((n = epoll_wait(v.ep, evs, 8, -1)) == -1) {
			if (errno == EINTR)
				continue;
			die("epoll_wait:");
		}
		for (i = 0; i < n; i++) {
			fd = evs[i].data.fd;
			if (fd == v.sfd)
				serve_reap(&v);
			else if (fd == v.ls || fd == v.c)
				serve_conn(&v, fd);
			else
				serve_pipe(&v, fd);
			serve_done(&v);
		}
	}
}

/* ------------------------------------------------------------ ready */

static int
health_ok(const char *sock)
{
	static const char req[] = "GET /v1/health HTTP/1.1\r\nHost: tend\r\n"
	    "Connection: close\r\n\r\n";
	static char buf[64 * 1024];
	struct reply r;
	int	fd, ok;

	if ((fd = unix_connect(sock)) == -1)
		return 0;
	write_all(fd, req, sizeof(req) - 1);
	ok = read_reply(fd, buf, sizeof(buf), &r) == 0 && r.status == 200;
	close(fd);
	return ok;
}

/* The first child of pid (the agent under unshare), or -1. */
static pid_t
first_child(pid_t pid)
{
	char	 path[64];
	FILE	*f;
	long	 c = -1;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid,
	    (int)pid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	if (fscanf(f, "%ld", &c) != 1)
		c = -1;
	fclose(f);
	return (pid_t)c;
}

static int
cmd_ready(const char *sock, const char *log, char **argv)
{
	posix_spawn_file_actions_t fa;
	struct timespec nap = { 0, 50 * 1000 };
	int64_t	 t0, dt, deadline;
	pid_t	 pid, agent, w;
	int	 rc, st;

	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, log,
	    O_WRONLY | O_CREAT | O_APPEND, 0644);
	posix_spawn_file_actions_adddup2(&fa, 1, 2);

	t0 = now_ns();
	if ((rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ)) !=
	    0) {
		errno = rc;
		die("posix_spawnp %s:", argv[0]);
	}
	deadline = t0 + 5LL * 1000000000;
	for (;;) {
		if (health_ok(sock))
			break;
		if (waitpid(pid, &st, WNOHANG) == pid)
			die("%s ended (status %#x) before it was healthy; "
			    "see %s", argv[0], st, log);
		if (now_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			die("not healthy after 5 s; see %s", log);
		}
		nanosleep(&nap, NULL);
	}
	dt = now_ns() - t0;

	agent = first_child(pid);
	kill(agent > 0 ? agent : pid, SIGTERM);
	deadline = now_ns() + 5LL * 1000000000;
	while ((w = waitpid(pid, &st, WNOHANG)) == 0) {
		if (now_ns() > deadline) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			break;
		}
		nanosleep(&nap, NULL);
	}
	printf("ready_us=%.1f pid=%d agent=%d\n", (double)dt / 1000.0,
	    (int)pid, (int)agent);
	posix_spawn_file_actions_destroy(&fa);
	return 0;
}

int
main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (argc == 5 && strcmp(argv[1], "spawn") == 0)
		return cmd_spawn(count(argv[2], 1), count(argv[3], 0), argv[4]);
	if ((argc == 6 || argc == 7) && strcmp(argv[1], "exec") == 0)
		return cmd_exec(argv[2], count(argv[3], 1), count(argv[4], 0),
		    argv[5], argc == 7 ? argv[6] : NULL);
	if (argc == 6 && strcmp(argv[1], "rtt") == 0)
		return cmd_rtt(argv[2], count(argv[3], 1), count(argv[4], 0),
		    argv[5]);
	if ((argc == 4 || argc == 5 || (argc == 6 &&
	    strcmp(argv[5], "thread") == 0)) && strcmp(argv[1], "serve") == 0)
		return cmd_serve(argv[2], argv[3], argc >= 5 ? argv[4] : NULL,
		    argc == 6);
	if (argc >= 5 && strcmp(argv[1], "ready") == 0)
		return cmd_ready(argv[2], argv[3], argv + 4);
	if (argc >= 5 && strcmp(argv[1], "run") == 0)
		return cmd_run(count(argv[2], 1), count(argv[3], 0), argv + 4);
	fprintf(stderr, "usage: spawnbench spawn N WARM PATH\n"
	    "       spawnbench run N WARM ARGV...\n"
	    "       spawnbench exec SOCKET N WARM JSON [PATH]\n"
	    "       spawnbench rtt SOCKET N WARM PATH\n"
	    "       spawnbench serve SOCKET PATH [DIR [thread]]\n"
	    "       spawnbench ready SOCKET LOG ARGV...\n");
	return 2;
}
