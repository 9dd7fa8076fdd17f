/*
 * log.c: the agent's log lines on stderr.
 *
 * Format: "tend[pid]: level=warn msg... err=..." so that a line can be
 * grepped by field.  Writes are single write(2) calls so lines from
 * concurrent writers (the agent and a forked child before exec) do not mix.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static const char	*log_prog = "tend";
static int		 log_verbose;

static void	log_vline(const char *, const char *, va_list, int)
		    __attribute__((format(printf, 2, 0)));

void
log_init(const char *prog, int verbose)
{
	log_prog = prog;
	log_verbose = verbose;
}

static void
log_vline(const char *level, const char *fmt, va_list ap, int err)
{
	char	line[1024];
	int	n, m;

	n = snprintf(line, sizeof(line), "%s: level=%s ", log_prog, level);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	m = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	if (m < 0)
		return;
	n += m;
	if ((size_t)n >= sizeof(line) - 64)
		n = sizeof(line) - 64;
	if (err)
		n += snprintf(line + n, sizeof(line) - n, " err=\"%s\"",
		    strerror(err));
	line[n++] = '\n';
	(void)!write(STDERR_FILENO, line, n);
}

#define LOG_BODY(level, err) do {		\
	int	saved = errno;			\
	va_list	ap;				\
	va_start(ap, fmt);			\
	log_vline(level, fmt, ap, err);		\
	va_end(ap);				\
	errno = saved;				\
} while (0)

void
log_info(const char *fmt, ...)
{
	LOG_BODY("info", 0);
}

void
log_debug(const char *fmt, ...)
{
	if (log_verbose)
		LOG_BODY("debug", 0);
}

void
log_warn(const char *fmt, ...)
{
	LOG_BODY("warn", errno);
}

void
log_warnx(const char *fmt, ...)
{
	LOG_BODY("warn", 0);
}

void
fatal(const char *fmt, ...)
{
	LOG_BODY("fatal", errno);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	LOG_BODY("fatal", 0);
	exit(1);
}
