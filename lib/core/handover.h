/*
 * handover: the agent replaced by another binary as the same process
 * (POST /v1/upgrade; proto/README.md "Live upgrade").  The old agent
 * writes a manifest of what lives on — the process and terminal tables,
 * the event log, the cgroups, the shim, the listening socket, the boot —
 * to a sealed memfd, clears close-on-exec on exactly the fds it names,
 * and execs the new binary with HANDOVER_ENV naming the memfd; the new
 * one reads it before it claims anything and takes each part up again.
 * Each kind of job writes and reads its own part (proc_handover_save and
 * proc_adopt, term_handover_save and term_adopt); the engine's common
 * part is job_handover_save and job_adopt.  In the manifest, every number
 * under a key ending in "Fd" (or in an array under one ending in "Fds")
 * is an fd handed over: nothing else crosses the exec.
 */
#ifndef TEND_HANDOVER_H
#define TEND_HANDOVER_H

#include <sys/types.h>
#include <stdbool.h>
#include <stdint.h>
#include <cjson/cJSON.h>

#include "events.h"
#include "proctab.h"
#include "term.h"

/*
 * The manifest's format: a new minor only adds fields an older reader
 * may ignore; a new major is refused by the check (HANDOVER_CHECK_ARG).
 */
#define HANDOVER_MAJOR		1
#define HANDOVER_MINOR		0
#define HANDOVER_ENV		"TEND_HANDOVER_FD"
/* `tend handover-check`: prints {version, apiVersion, handover}. */
#define HANDOVER_CHECK_ARG	"handover-check"

/* What the agent hands over beyond the tables. */
struct handover {
	struct proctab	*tab;
	struct termtab	*terms;
	int		 listen_fd;	/* the API's socket */
	pid_t		 main_pid;	/* wrapper mode's command, or -1 */
	int64_t		 started_mono;	/* ms: the first agent's start, for
					   uptime (the monotonic clock goes on
					   across the exec) */
};

/* The handshake's line, for `tend handover-check`. */
void	 handover_check_print(void);

/*
 * From the 202 to the exec every signal is held (blocked), so that one
 * sent after it stays pending for the next agent; let go again when the
 * exec does not happen.
 */
void	 handover_hold_signals(void);
void	 handover_release_signals(void);

/*
 * Exec path as this process with argv, handing over h.  Returns only if
 * the exec failed: -1 and errno, everything as it was before the call
 * (the fds close-on-exec again, the spares made again).
 */
int	 handover_exec(const struct handover *, const char *path,
	    char *const argv[]);

/*
 * At start: the manifest HANDOVER_ENV names, read and its fds made
 * close-on-exec again (the variable unset); NULL when there is none, or
 * when it could not be read (then handover_state() says "failed" and
 * why, and the processes of the agent before are orphans this one
 * reaps).
 */
cJSON	*handover_take(void);
/* The boot the manifest continues (BOOT_ID_LEN characters). */
const char *handover_boot(const cJSON *);
/* Before cgroups_init: take up the subtree as the old agent left it. */
void	 handover_cgroups(const cJSON *);
/* The event log, appending after the old agent's last event. */
struct events *handover_events(const cJSON *, int statefd,
	    const char *boot, uint64_t maxbytes);
/* The tables' records and terminals, their counters; h's pids and start set. */
void	 handover_resume(const cJSON *, struct handover *h);
/* The listening socket's fd, or -1. */
int	 handover_listen_fd(const cJSON *);
/* The shim's saved state (shimctl_adopt), or NULL. */
const cJSON *handover_shim(const cJSON *);
/* The version the old agent ran, or NULL. */
const char *handover_from(const cJSON *);

/* Upgrades this boot has seen (carried across them). */
uint64_t handover_upgrades(void);
/* "none", "resumed" or "failed" */
const char *handover_state(void);
/* "handover":{state, upgrades, from, reason} into a health object. */
void	 handover_health(cJSON *);

#endif
