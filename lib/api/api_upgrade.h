/*
 * api_upgrade: POST /v1/upgrade {"path"} — the agent replaced by another
 * binary as the same process (core/handover.h).  The binary is checked
 * first by a child (`PATH handover-check`, bounded, off the loop); a
 * refusal is 409 upgrade_refused and changes nothing; a binary that
 * passes gets 202, then the handover.
 */
#ifndef TEND_API_UPGRADE_H
#define TEND_API_UPGRADE_H

#include <sys/types.h>

#include "net/http.h"

extern const struct http_route api_upgrade_routes[];

/*
 * What the handover needs of the agent: its argv (from its subcommand
 * on: "agent" and its options, the new binary runs the same) and its
 * wrapped command's pid (read at the handover).
 */
void	api_upgrade_setup(char *const *argv, const pid_t *main_pid);

#endif
