/*
 * ports.c: the listening TCP sockets (socket diagnostics, else
 * /proc/net) and a resumable walk of the fd tables for their holders.
 */
#include <sys/socket.h>
#include <sys/types.h>

#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ports.h"

static int	ports_cmp(const void *, const void *);
static int	ports_add(struct port_sock **, size_t *, size_t *, size_t,
		    bool *, const struct port_sock *);
static int	ports_diag(int family, struct port_sock **, size_t *,
		    size_t *, size_t, bool *);
static int	ports_proc_file(const char *, int family, struct port_sock **,
		    size_t *, size_t *, size_t, bool *);
static int	ports_inode_cmp(const void *, const void *);
static int	ports_proc_read(pid_t, const char *, char *, size_t);

void
ports_addr_str(const struct port_sock *s, char *buf, size_t n)
{
	if (inet_ntop(s->family, s->addr, buf, (socklen_t)n) == NULL)
		snprintf(buf, n, "?");
}

static int
ports_cmp(const void *a, const void *b)
{
	const struct port_sock	*x = a, *y = b;

	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (x->family != y->family)
		return x->family < y->family ? -1 : 1;
	return memcmp(x->addr, y->addr, sizeof(x->addr));
}

/* One more into the array (grown by doubling); past max: truncated. */
static int
ports_add(struct port_sock **a, size_t *n, size_t *cap, size_t max,
    bool *truncated, const struct port_sock *s)
{
	struct port_sock	*g;
	size_t			 c;

	if (*n >= max) {
		*truncated = true;
		return 0;
	}
	if (*n == *cap) {
		c = *cap ? *cap * 2 : 64;
		if ((g = realloc(*a, c * sizeof(*g))) == NULL)
			return -1;
		*a = g;
		*cap = c;
	}
	(*a)[(*n)++] = *s;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Socket diagnostics */

/* One family's TCP_LISTEN dump.  -1 and errno: netlink refused. */
static int
ports_diag(int family, struct port_sock **a, size_t *n, size_t *cap,
    size_t max, bool *truncated)
{
	struct {
		struct nlmsghdr		nh;
		struct inet_diag_req_v2	req;
	} q;
	struct sockaddr_nl	 sa = { .nl_family = AF_NETLINK };
	struct inet_diag_msg	*m;
	struct nlmsghdr		*h;
	struct port_sock	 s;
	char			 buf[16384];
	ssize_t			 got;
	int			 fd, rc = -1, done = 0, err;

	if ((fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC,
	    NETLINK_SOCK_DIAG)) == -1)
		return -1;
	memset(&q, 0, sizeof(q));
	q.nh.nlmsg_len = sizeof(q);
	q.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	q.nh.nlmsg_seq = 1;
	q.req.sdiag_family = (uint8_t)family;
	q.req.sdiag_protocol = IPPROTO_TCP;
	q.req.idiag_states = 1u << TCP_LISTEN;
	if (sendto(fd, &q, sizeof(q), 0, (struct sockaddr *)&sa,
	    sizeof(sa)) == -1)
		goto out;
	while (!done) {
		if ((got = recv(fd, buf, sizeof(buf), 0)) == -1) {
			if (errno == EINTR)
				continue;
			goto out;
		}
		if (got == 0) {
			errno = EPROTO;
			goto out;
		}
		for (h = (struct nlmsghdr *)(void *)buf;
		    NLMSG_OK(h, (size_t)got); h = NLMSG_NEXT(h, got)) {
			if (h->nlmsg_type == NLMSG_DONE) {
				done = 1;
				break;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(h);

				err = e->error < 0 ? -e->error : EPROTO;
				/* No IPv6 in this kernel: none listen. */
				if (err == ENOENT || err == EAFNOSUPPORT) {
					done = 1;
					break;
				}
				errno = err;
				goto out;
			}
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
				continue;
			m = NLMSG_DATA(h);
			if (m->idiag_state != TCP_LISTEN)
				continue;
			memset(&s, 0, sizeof(s));
			s.family = m->idiag_family;
			s.port = ntohs(m->id.idiag_sport);
			s.inode = m->idiag_inode;
			memcpy(s.addr, m->id.idiag_src,
			    s.family == AF_INET ? 4 : 16);
			if (ports_add(a, n, cap, max, truncated, &s) == -1)
				goto out;
		}
	}
	rc = 0;
out:
	err = errno;
	close(fd);
	errno = err;
	return rc;
}

/* ------------------------------------------------------------------ */
/* /proc/net */

/* Hex text of an address as the kernel prints it: 32-bit words in host order. */
static int
ports_hex_addr(const char *h, size_t len, uint8_t *out)
{
	uint32_t	w;
	size_t		i;
	char		word[9];

	if (len != 8 && len != 32)
		return -1;
	for (i = 0; i < len / 8; i++) {
		memcpy(word, h + i * 8, 8);
		word[8] = '\0';
		w = (uint32_t)strtoul(word, NULL, 16);
		memcpy(out + i * 4, &w, 4);
	}
	return 0;
}

/*
 * One file's LISTEN (0A) rows: "sl local rem st tx:rx tr:when retr uid
 * timeout inode ...", the local "ADDR:PORT" in hex.
 */
static int
ports_proc_file(const char *path, int family, struct port_sock **a,
    size_t *n, size_t *cap, size_t max, bool *truncated)
{
	struct port_sock	 s;
	unsigned long long	 inode;
	unsigned int		 port, st;
	char			 line[512], local[64];
	char			*colon;
	FILE			*f;

	if ((f = fopen(path, "re")) == NULL)
		return errno == ENOENT ? 0 : -1;	/* no IPv6 here */
	while (fgets(line, sizeof(line), f) != NULL) {
		if (sscanf(line, " %*s %63s %*s %x %*s %*s %*s %*s %*s %llu",
		    local, &st, &inode) != 3 || st != TCP_LISTEN ||
		    (colon = strchr(local, ':')) == NULL)
			continue;
		memset(&s, 0, sizeof(s));
		s.family = (uint8_t)family;
		if (ports_hex_addr(local, (size_t)(colon - local), s.addr) == -1 ||
		    sscanf(colon + 1, "%x", &port) != 1)
			continue;
		s.port = (uint16_t)port;
		s.inode = inode;
		if (ports_add(a, n, cap, max, truncated, &s) == -1) {
			fclose(f);
			return -1;
		}
	}
	fclose(f);
	return 0;
}

int
ports_list_proc(struct port_sock **out, size_t *n, size_t max,
    bool *truncated)
{
	size_t	cap = 0;

	*out = NULL;
	*n = 0;
	*truncated = false;
	if (ports_proc_file("/proc/net/tcp", AF_INET, out, n, &cap, max,
	    truncated) == -1 ||
	    ports_proc_file("/proc/net/tcp6", AF_INET6, out, n, &cap, max,
	    truncated) == -1) {
		free(*out);
		*out = NULL;
		*n = 0;
		return -1;
	}
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), ports_cmp);
	return 0;
}

int
ports_list(struct port_sock **out, size_t *n, size_t max, bool *truncated)
{
	size_t	cap = 0;

	*out = NULL;
	*n = 0;
	*truncated = false;
	if (ports_diag(AF_INET, out, n, &cap, max, truncated) == -1 ||
	    ports_diag(AF_INET6, out, n, &cap, max, truncated) == -1) {
		free(*out);
		return ports_list_proc(out, n, max, truncated);
	}
	if (*n > 1)
		qsort(*out, *n, sizeof(**out), ports_cmp);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Holders */

struct ports_scan {
	struct port_sock	 *socks;
	struct port_sock	**byino;	/* sorted by inode */
	size_t			  n;
	size_t			  left;		/* not yet found */
	DIR			 *proc;		/* /proc */
	DIR			 *fds;		/* the current /proc/PID/fd */
	pid_t			  pid;		/* its pid */
};

static int
ports_inode_cmp(const void *a, const void *b)
{
	const struct port_sock	*x = *(struct port_sock *const *)a;
	const struct port_sock	*y = *(struct port_sock *const *)b;

	return x->inode < y->inode ? -1 : x->inode > y->inode;
}

struct ports_scan *
ports_scan_new(struct port_sock *socks, size_t n)
{
	struct ports_scan	*sc;
	size_t			 i;

	if ((sc = calloc(1, sizeof(*sc))) == NULL)
		return NULL;
	if (n > 0 && (sc->byino = calloc(n, sizeof(*sc->byino))) == NULL) {
		free(sc);
		return NULL;
	}
	sc->socks = socks;
	for (i = 0; i < n; i++)
		if (socks[i].pid == 0 && socks[i].inode != 0)
			sc->byino[sc->n++] = &socks[i];
	sc->left = sc->n;
	if (sc->n > 1)
		qsort(sc->byino, sc->n, sizeof(*sc->byino), ports_inode_cmp);
	return sc;
}

/* A "socket:[N]" link's sock among those looked for, or NULL. */
static struct port_sock *
ports_scan_find(struct ports_scan *sc, const char *link)
{
	struct port_sock	 key, *kp = &key, **hit;
	char			*end;

	if (sc->n == 0 || strncmp(link, "socket:[", 8) != 0)
		return NULL;
	key.inode = strtoull(link + 8, &end, 10);
	if (*end != ']')
		return NULL;
	hit = bsearch(&kp, sc->byino, sc->n, sizeof(*sc->byino),
	    ports_inode_cmp);
	return hit != NULL ? *hit : NULL;
}

/* The next process's fd directory: 0, or -1 when /proc is done. */
static int
ports_scan_next_pid(struct ports_scan *sc, unsigned *budget)
{
	struct dirent	*de;
	char		 path[64];
	int		 fd;

	while (*budget > 0) {
		(*budget)--;
		if ((de = readdir(sc->proc)) == NULL)
			return -1;
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (strlen(de->d_name) > 20)
			continue;
		snprintf(path, sizeof(path), "%.20s/fd", de->d_name);
		if ((fd = openat(dirfd(sc->proc), path,
		    O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
			continue;	/* gone, or not ours to read */
		if ((sc->fds = fdopendir(fd)) == NULL) {
			close(fd);
			continue;
		}
		sc->pid = (pid_t)strtol(de->d_name, NULL, 10);
		return 0;
	}
	return 0;
}

int
ports_scan_step(struct ports_scan *sc, unsigned budget)
{
	struct port_sock	*s;
	struct dirent		*de;
	char			 link[64];
	ssize_t			 k;

	if (sc->left == 0)
		return 1;
	if (sc->proc == NULL && (sc->proc = opendir("/proc")) == NULL)
		return 1;
	while (budget > 0 && sc->left > 0) {
		if (sc->fds == NULL) {
			if (ports_scan_next_pid(sc, &budget) == -1)
				return 1;
			continue;
		}
		budget--;
		if ((de = readdir(sc->fds)) == NULL) {
			closedir(sc->fds);
			sc->fds = NULL;
			continue;
		}
		if (de->d_name[0] == '.')
			continue;
		if ((k = readlinkat(dirfd(sc->fds), de->d_name, link,
		    sizeof(link) - 1)) <= 0)
			continue;
		link[k] = '\0';
		if ((s = ports_scan_find(sc, link)) != NULL && s->pid == 0) {
			s->pid = sc->pid;
			sc->left--;
		}
	}
	return sc->left == 0;
}

void
ports_scan_free(struct ports_scan *sc)
{
	if (sc == NULL)
		return;
	if (sc->fds != NULL)
		closedir(sc->fds);
	if (sc->proc != NULL)
		closedir(sc->proc);
	free(sc->byino);
	free(sc);
}

/* ------------------------------------------------------------------ */
/* A process's place */

/* /proc/PID/NAME's first size - 1 bytes, a string: 0, or -1. */
static int
ports_proc_read(pid_t pid, const char *name, char *buf, size_t size)
{
	char	 path[64];
	ssize_t	 k;
	int	 fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	k = read(fd, buf, size - 1);
	close(fd);
	if (k <= 0)
		return -1;
	buf[k] = '\0';
	return 0;
}

pid_t
ports_ppid(pid_t pid)
{
	char	 buf[512], *p;
	long	 pp;

	if (ports_proc_read(pid, "stat", buf, sizeof(buf)) == -1)
		return -1;
	/* "pid (comm) S ppid ...": comm may hold anything, even ")". */
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %*c %ld", &pp) != 1)
		return -1;
	return (pid_t)pp;
}

int
ports_cgroup_of(pid_t pid, char *kind, unsigned *n)
{
	static const char *const	 dirs[2] = { "/procs/", "/terms/" };
	char				 buf[1024], *p, *best = NULL;
	char				*end;
	unsigned long			 v;
	int				 i;

	if (ports_proc_read(pid, "cgroup", buf, sizeof(buf)) == -1)
		return -1;
	/* v2's line is "0::/path"; the first procs/ or terms/ is tend's. */
	if ((p = strstr(buf, "0::")) == NULL)
		return -1;
	if ((end = strchr(p, '\n')) != NULL)
		*end = '\0';
	for (i = 0; i < 2; i++) {
		char *q = strstr(p, dirs[i]);

		if (q != NULL && (best == NULL || q < best)) {
			best = q;
			*kind = i == 0 ? 'p' : 't';
		}
	}
	if (best == NULL)
		return -1;
	best += strlen(dirs[0]);
	if (!isdigit((unsigned char)*best))
		return -1;
	v = strtoul(best, &end, 10);
	if ((*end != '\0' && *end != '/') || v > 0xffffffffUL)
		return -1;
	*n = (unsigned)v;
	return 0;
}
