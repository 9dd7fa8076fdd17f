/*
 * ports: the listening TCP sockets of the agent's network namespace,
 * and which process holds each.
 *
 * The list comes from the kernel's socket diagnostics (NETLINK_SOCK_DIAG,
 * a dump of the TCP_LISTEN sockets of AF_INET and AF_INET6), or from
 * /proc/net/tcp and tcp6 where netlink is refused; either gives each
 * socket's local address, port and inode.  Who holds an inode is only
 * told by the processes' fd tables (/proc/PID/fd/N -> "socket:[inode]"),
 * which may be large: a scan walks them in slices of a budget of
 * readlinks, resumable, so that the caller spreads it over loop turns.
 */
#ifndef TEND_PORTS_H
#define TEND_PORTS_H

#include <sys/types.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One listening socket. */
struct port_sock {
	uint64_t	 inode;
	uint16_t	 port;
	uint8_t		 family;	/* AF_INET or AF_INET6 */
	uint8_t		 addr[16];	/* network order; 4 bytes for AF_INET */
	pid_t		 pid;		/* holder, 0 while unknown */
};

/* Text of an address: "127.0.0.1", "::" (at least 46 bytes). */
#define PORTS_ADDR_STR	46
void	ports_addr_str(const struct port_sock *, char *, size_t);

/*
 * The listening sockets now, at most max of them (*truncated when there
 * were more), sorted by port, then address; pids are 0.  -1 and errno
 * when neither netlink nor /proc/net answered.
 */
int	ports_list(struct port_sock **out, size_t *n, size_t max,
	    bool *truncated);
/* The same from /proc/net alone (the fallback; tests call it). */
int	ports_list_proc(struct port_sock **out, size_t *n, size_t max,
	    bool *truncated);

/* A walk of /proc/[0-9]*\/fd for the holders of some inodes. */
struct ports_scan;

/*
 * A scan for the holders of socks[0..n) (pid 0 ones; the array must
 * stay put until the scan is freed).  NULL: out of memory.
 */
struct ports_scan *ports_scan_new(struct port_sock *socks, size_t n);
/*
 * At most budget /proc entries looked at: 1 when done (every sock found
 * or every process looked at), 0 when more is left.
 */
int	ports_scan_step(struct ports_scan *, unsigned budget);
void	ports_scan_free(struct ports_scan *);

/* A process's parent (/proc/PID/stat), or -1. */
pid_t	ports_ppid(pid_t);
/*
 * The n of ".../procs/<n>" (kind 'p') or ".../terms/<n>" ('t') of a
 * process's cgroup v2 path: 0, or -1 when it is in neither.
 */
int	ports_cgroup_of(pid_t, char *kind, unsigned *n);

#endif
