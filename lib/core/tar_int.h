/*
 * tar_int.h: what the parts of the tar module (tar.c, tar_in.c) share;
 * private to them.
 */
#ifndef TEND_TAR_INT_H
#define TEND_TAR_INT_H

#include <stdarg.h>

/*
 * The child's one report ("<errno>[:<entries>] <message>\n") on errfd
 * and its exit with code; entries -1 when it is not told.
 */
_Noreturn void	tar_vreport(int errfd, int code, int err, long long entries,
		    const char *fmt, va_list ap)
		    __attribute__((format(printf, 5, 0)));
_Noreturn void	tar_report(int errfd, int code, int err, const char *fmt, ...)
		    __attribute__((format(printf, 4, 5)));
/* The hydrate child: the archive on fd extracted below rootfd. */
_Noreturn void	tar_hydrate_child(int rootfd, int fd, int errfd);

#endif
