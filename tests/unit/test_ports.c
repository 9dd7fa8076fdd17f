/*
 * ports: the listening sockets of this network namespace — a socket of
 * the test's own (IPv4 and IPv6, found by its inode with netlink and
 * with /proc/net), the list cut at max, the scan that finds the test as
 * the holder however small its budget, and a process's parent and
 * cgroup as /proc tells them.
 */
#include <sys/socket.h>
#include <sys/stat.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/tunables.h"
#include "sys/ports.h"
#include "testutil.h"

Suite *ports_suite(void);

/* A socket listening on an ephemeral loopback port: fd, *port, *ino. */
static int
listener(int family, uint16_t *port, uint64_t *ino)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_in	*in = (struct sockaddr_in *)&ss;
	struct sockaddr_in6	*in6 = (struct sockaddr_in6 *)&ss;
	socklen_t		 len;
	struct stat		 st;
	int			 fd;

	memset(&ss, 0, sizeof(ss));
	if ((fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	if (family == AF_INET) {
		in->sin_family = AF_INET;
		in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof(*in);
	} else {
		in6->sin6_family = AF_INET6;
		in6->sin6_addr = in6addr_loopback;
		len = sizeof(*in6);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) == -1 ||
	    listen(fd, 4) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &len) == -1) {
		close(fd);
		return -1;
	}
	*port = ntohs(family == AF_INET ? in->sin_port : in6->sin6_port);
	ck_assert_int_eq(fstat(fd, &st), 0);
	*ino = st.st_ino;
	return fd;
}

static struct port_sock *
find(struct port_sock *a, size_t n, uint64_t ino)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (a[i].inode == ino)
			return &a[i];
	return NULL;
}

static void
check_listed(int family, const char *addr, bool proc)
{
	struct port_sock	*a, *s;
	uint64_t		 ino;
	uint16_t		 port;
	size_t			 n, i;
	bool			 cut;
	char			 txt[PORTS_ADDR_STR];
	int			 fd;

	if ((fd = listener(family, &port, &ino)) == -1) {
		TU_SKIP("no loopback for family %d: %s", family,
		    strerror(errno));
		return;
	}
	ck_assert_int_eq((proc ? ports_list_proc : ports_list)(&a, &n,
	    PORTS_MAX, &cut), 0);
	ck_assert(!cut);
	ck_assert_ptr_nonnull(s = find(a, n, ino));
	ck_assert_uint_eq(s->port, port);
	ck_assert_uint_eq(s->family, family);
	ck_assert_int_eq(s->pid, 0);
	ports_addr_str(s, txt, sizeof(txt));
	ck_assert_str_eq(txt, addr);
	for (i = 1; i < n; i++)		/* by port */
		ck_assert_uint_le(a[i - 1].port, a[i].port);
	free(a);
	close(fd);
	/* Closed: gone from the list. */
	ck_assert_int_eq((proc ? ports_list_proc : ports_list)(&a, &n,
	    PORTS_MAX, &cut), 0);
	ck_assert_ptr_null(find(a, n, ino));
	free(a);
}

START_TEST(lists_ipv4)
{
	check_listed(AF_INET, "127.0.0.1", false);
	check_listed(AF_INET, "127.0.0.1", true);
}
END_TEST

START_TEST(lists_ipv6)
{
	check_listed(AF_INET6, "::1", false);
	check_listed(AF_INET6, "::1", true);
}
END_TEST

START_TEST(cut_at_max)
{
	struct port_sock	*a;
	uint64_t		 ino;
	uint16_t		 port;
	size_t			 n;
	bool			 cut;
	int			 fd, fd2;

	ck_assert_int_ne(fd = listener(AF_INET, &port, &ino), -1);
	ck_assert_int_ne(fd2 = listener(AF_INET, &port, &ino), -1);
	ck_assert_int_eq(ports_list(&a, &n, 1, &cut), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert(cut);
	free(a);
	ck_assert_int_eq(ports_list_proc(&a, &n, 1, &cut), 0);
	ck_assert_uint_eq(n, 1);
	ck_assert(cut);
	free(a);
	close(fd);
	close(fd2);
}
END_TEST

/* Many fds of ours before the socket: found in steps of one entry. */
START_TEST(scan_finds_holder_in_slices)
{
	struct port_sock	*a, *s;
	struct ports_scan	*sc;
	uint64_t		 ino;
	uint16_t		 port;
	size_t			 n;
	bool			 cut;
	int			 fd, fds[64], i, steps = 0, rv;

	for (i = 0; i < 64; i++)
		ck_assert_int_ne(fds[i] = dup(0), -1);
	ck_assert_int_ne(fd = listener(AF_INET, &port, &ino), -1);
	ck_assert_int_eq(ports_list(&a, &n, PORTS_MAX, &cut), 0);
	ck_assert_ptr_nonnull(s = find(a, n, ino));
	ck_assert_ptr_nonnull(sc = ports_scan_new(a, n));
	while ((rv = ports_scan_step(sc, 1)) == 0)
		steps++;
	ck_assert_int_eq(rv, 1);
	ck_assert_int_gt(steps, 64);
	ck_assert_int_eq(s->pid, getpid());
	ports_scan_free(sc);
	/* Nothing to look for: done at once. */
	ck_assert_ptr_nonnull(sc = ports_scan_new(a, 0));
	ck_assert_int_eq(ports_scan_step(sc, 1), 1);
	ports_scan_free(sc);
	free(a);
	close(fd);
	for (i = 0; i < 64; i++)
		close(fds[i]);
}
END_TEST

START_TEST(parent_and_cgroup)
{
	char		kind = 0;
	unsigned	n = 0;

	ck_assert_int_eq(ports_ppid(getpid()), getppid());
	ck_assert_int_eq(ports_ppid(0x7ffffff0), -1);
	ck_assert_int_eq(ports_cgroup_of(0x7ffffff0, &kind, &n), -1);
	/* The test runs in no record's cgroup (unless under a tend). */
	if (ports_cgroup_of(getpid(), &kind, &n) == 0)
		ck_assert(kind == 'p' || kind == 't');
}
END_TEST

Suite *
ports_suite(void)
{
	Suite	*s = suite_create("ports");
	TCase	*tc = tcase_create("list");

	tcase_add_test(tc, lists_ipv4);
	tcase_add_test(tc, lists_ipv6);
	tcase_add_test(tc, cut_at_max);
	suite_add_tcase(s, tc);
	tc = tcase_create("holders");
	tcase_add_test(tc, scan_finds_holder_in_slices);
	tcase_add_test(tc, parent_and_cgroup);
	suite_add_tcase(s, tc);
	return s;
}
