/*
 * Logging to stderr, one line per event, key=value fields.
 * Never pass environment values to these functions.
 */
#ifndef TEND_LOG_H
#define TEND_LOG_H

#define LOG_FMT(a, b)	__attribute__((format(printf, a, b)))

void	log_init(const char *prog, int verbose);
void	log_info(const char *, ...) LOG_FMT(1, 2);
void	log_debug(const char *, ...) LOG_FMT(1, 2);
void	log_warn(const char *, ...) LOG_FMT(1, 2);	/* appends err=strerror */
void	log_warnx(const char *, ...) LOG_FMT(1, 2);
_Noreturn void fatal(const char *, ...) LOG_FMT(1, 2);
_Noreturn void fatalx(const char *, ...) LOG_FMT(1, 2);

#endif
