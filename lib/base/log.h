/*
 * Logging to stderr, one line per event, key=value fields.
 * Never pass environment values to these functions.
 */
#ifndef TEND_LOG_H
#define TEND_LOG_H

#include <stdint.h>

#define LOG_FMT(a, b)	__attribute__((format(printf, a, b)))

void	log_init(const char *prog, int verbose);
void	log_info(const char *, ...) LOG_FMT(1, 2);
void	log_debug(const char *, ...) LOG_FMT(1, 2);
void	log_warn(const char *, ...) LOG_FMT(1, 2);	/* appends err=strerror */
void	log_warnx(const char *, ...) LOG_FMT(1, 2);
/*
 * Lines go to fd without ever blocking (log_init: stderr); a line that
 * does not fit now is dropped and counted.  When a write is refused for
 * want of room, the hook gets the descriptor: call log_flush when it is
 * writable, until it returns 0, so the rest of a cut line and the count
 * of dropped ones go out without waiting for the next line.
 */
void	log_open(int fd);
void	log_set_blocked_hook(void (*)(int fd));
int	log_flush(void);		/* 0: nothing pending; -1 and errno */
uint64_t log_dropped(void);		/* lines dropped since start */
_Noreturn void fatal(const char *, ...) LOG_FMT(1, 2);
_Noreturn void fatalx(const char *, ...) LOG_FMT(1, 2);

#endif
