/*
 * Every limit tend enforces, in one place.
 */
#ifndef TEND_TUNABLES_H
#define TEND_TUNABLES_H

#define TEND_VERSION		"0.1.0"
#define TEND_API_VERSION	1

#define HTTP_MAX_HEAD		(16 * 1024)	/* request line + headers */
#define HTTP_MAX_BODY		(1024 * 1024)	/* buffered (JSON) bodies */
#define HTTP_MAX_HEADERS	64
#define HTTP_MAX_CONNS		512
#define HTTP_OUT_HIGH		(64 * 1024)	/* pause a stream above this */
#define HTTP_OUT_READ_MAX	(256 * 1024)	/* no next request above this */
#define HTTP_IDLE_TIMEOUT	120.0		/* s, idle keep-alive connection */
#define HTTP_STUCK_TIMEOUT	60.0		/* s, output not moving at all */
#define HTTP_HEAD_TIMEOUT	10.0		/* s, from a head's first byte to its end */
#define HTTP_PAUSE_TIMEOUT	60.0		/* s, a request body not read */
#define HTTP_HUP_CHECK		1.0		/* s, hang-up check while paused */
#define SSE_HEARTBEAT		10.0		/* s, at most 15 by contract */

#define PROC_ID_MAX		128
#define PROC_MAX_LIVE		4096
#define PROC_MAX_ARGV		4096		/* elements */
#define PROC_MAX_ENV		4096		/* entries */
#define PROC_KILL_GRACE_MS	5000
#define PROC_KEEP_EXITED	1000
#define PROC_MAX_TAGS		64		/* entries */
#define PROC_MAX_TAGS_BYTES	4096		/* names and values, in all */
#define PROC_STDIN_HIGH		(1024 * 1024)	/* pause the writer above this */

/* An agent log line, newline included; <= PIPE_BUF: a pipe takes it whole. */
#define LOG_LINE_MAX		1024
#define LOG_MAX_BYTES		(64ULL * 1024 * 1024)	/* per stream */
#define LOG_CHUNK		(64 * 1024)	/* most bytes one index record holds */
#define LOG_READ_SMALL		4096		/* a read this short ... */
#define LOG_READ_WAIT		0.005		/* s, ... waits before the next */

#define EXEC_MAX_OUTPUT		(1024 * 1024)	/* per stream in the reply */
#define EXEC_MAX_OUTPUT_CAP	(16 * 1024 * 1024)	/* largest one asked */
#define LOGS_JSON_LIMIT		(1024 * 1024)
#define LOGS_JSON_LIMIT_CAP	(16 * 1024 * 1024)	/* largest one asked */
/*
 * What one reader does in one callback before it lets the loop serve the
 * others: chunk bytes sent (SSE, raw), index records looked at (SSE, JSON
 * poll; a damaged or released run is crossed in steps of this many).
 */
#define LOGS_PUMP_BYTES		(256 * 1024)
#define LOGS_SCAN_MAX		4096

#define BOOT_KEEP		3
#define STATE_RETRY_S		1.0		/* s, refused state writes */
#define AGENT_GRACE		8.0		/* s */

/* The command line (agent/cli*.c). */
#define CLI_WAIT_PIECE		60000		/* ms asked of one wait call */
#define CLI_ERRBODY_MAX		(64 * 1024)	/* kept of an error reply */
#define CLI_SSE_LINE_MAX	(16 * 1024 * 1024)
#define CLI_CURSOR_MAX		160		/* kept of a cursor the agent sent */
#define CLI_CTYPE_MAX		64		/* of a media type, NUL included */
#define CLI_BOOT_MAX		144		/* of a --boot ID */
#define CLI_MSG_MAX		512		/* one failure reported */
#define CLI_MAX_OPTS		24		/* options of one command */
#define CLI_SECONDS_MAX		1e12		/* largest SECONDS taken */
#define CLI_READY_POLL		20		/* ms between readiness checks */
#define CLI_READY_TIMEOUT	60000		/* ms, default --ready-timeout */
#define CLI_READY_LINE_MAX	(64 * 1024)	/* of a line matched whole */
#define CLI_NETLINE_MAX		512		/* of a /proc/net/tcp line */
#define CLI_MAX_PENDING		16		/* signals before the reply */
#define CLI_STDIN_CHUNK		(64 * 1024)	/* run --stdin, one read */
/* run --stdin travels as base64 (4/3) in a JSON body of HTTP_MAX_BODY. */
#define CLI_RUN_STDIN_MAX	(720 * 1024)

/* Children (lib/spawn.c). */
#define SPAWN_AGENT_OOM_ADJ	(-500)	/* the agent's own oom_score_adj */
#define SPAWN_CHILD_OOM_RAISE	100	/* a child's: the agent's + this */
/* Without close_range (Linux < 5.9) a child closes the fds below this. */
#define SPAWN_CLOSE_MAX		65536

/* The process table (lib/proc.c). */
#define PROC_DRAIN_ROUNDS	16	/* pipe reads per wakeup, then yield */
/* "All that is readable now", bounded against a writer that never stops. */
#define PROC_DRAIN_ALL		4096
#define PROC_PIPE_SIZE		(1024 * 1024)	/* stdout pipe, best effort */
#define PROC_SETTLE_POLL	0.1	/* s, a group's members left */
#define PROC_SETTLE_SOON	0.005	/* s, after an orphan of a group died */
#define PROC_FIRST_STATUS	0.1	/* s, delay of the first status.json */
#define PROC_SYNC_DELAY		1.0	/* s, final statuses reach the disk */
#define PROC_SWEEP		5.0	/* s, ended records' files closed */
#define PROC_MS_MAX		1e12	/* ms, largest timeout, killGrace, wait */
#define EXEC_MAX_OUTPUT_ASK	1e15	/* largest maxOutputBytes taken, then
					   capped at EXEC_MAX_OUTPUT_CAP */

/* The record on disk (lib/record.c). */
#define RECORD_READ_MAX		(1024 * 1024)	/* meta.json, status.json */
#define BOOT_READ_MAX		4096		/* an earlier boot's boot.json */

#endif
