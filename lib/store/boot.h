/*
 * boot: the agent's boot identity and the boots kept in the state dir.
 */
#ifndef TEND_BOOT_H
#define TEND_BOOT_H

#include <stdbool.h>

#define BOOT_ID_LEN	32

/* 128 random bits as 32 lowercase hex characters. */
int	boot_new_id(char out[BOOT_ID_LEN + 1]);
/*
 * n bytes that make IDs unique (a boot's, a record's), never waiting
 * for the kernel's random pool (see boot.c); never for a secret.
 */
void	boot_random(void *, size_t n);
bool	boot_id_valid(const char *);
/*
 * Create boots/<id>/procs (or find it) and write boots/<id>/boot.json
 * (a temp renamed, not synced: the caller's syncfs makes it durable);
 * *procsfd is the procs directory.  On failure (a full or read-only
 * state dir) nothing is left open, *procsfd is -1, and errno says why;
 * calling again later is how a degraded agent recovers.
 */
int	boot_create(int statefd, const char *id, int *procsfd);
/*
 * Earlier boots: records without a final status become state "error"
 * with error.code "lost" (once); only the newest `keep` boots (the
 * current one included) are kept.
 */
void	boot_scan(int statefd, const char *current, int keep);
/* The newest earlier boot boot_scan found (started before), or NULL. */
const char *boot_previous(void);
/* The procs directory of a retained boot, or -1 (ENOENT). */
int	boot_open_procs(int statefd, const char *id);
/* Its terms directory (made when create is set), or -1 and errno. */
int	boot_open_terms(int statefd, const char *id, bool create);

#endif
