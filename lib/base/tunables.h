/*
 * Every limit tend enforces, in one place.
 */
#ifndef TEND_TUNABLES_H
#define TEND_TUNABLES_H

#ifndef TEND_VERSION		/* a test build names another */
#define TEND_VERSION		"0.1.0"
#endif
#define TEND_API_VERSION	1

/* Live upgrade (core/handover.c, api/api_upgrade.c). */
#define HANDOVER_MAX_BYTES	(256 * 1024 * 1024)	/* a manifest read */
#define UPGRADE_CHECK_TIMEOUT	5.0	/* s for the new binary's handshake */
#define UPGRADE_CHECK_MAX	4096	/* bytes of its answer */
#define UPGRADE_FLUSH_WAIT	1.0	/* s for the 202 to leave, at most */

#define HTTP_MAX_HEAD		(16 * 1024)	/* request line + headers */
#define HTTP_MAX_BODY		(1024 * 1024)	/* buffered (JSON) bodies */
#define HTTP_MAX_HEADERS	64
#define HTTP_MAX_CONNS		512
#define HTTP_DIRECT_SHARE	8		/* 1/N of the slots (1 at least) kept from the shim */
#define HTTP_BACKLOG		4096		/* listen(2); the kernel caps it at somaxconn */
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
#define PROC_HASH		256		/* ID and pid lookup buckets (2^n) */
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
/*
 * A reader whose client does not read (envd's Start and Connect streams,
 * the JSON poll) holds at most LOGS_OUT_HIGH of output queued in the
 * agent plus one piece: it writes only while its queue is below the mark,
 * a piece of at most LOGS_PIECE stored bytes at a time read from the
 * files, and goes on when the queue drains.  The files are the buffer;
 * the socket's own buffer keeps a reader that does read busy.
 */
#define LOGS_OUT_HIGH		(16 * 1024)
#define LOGS_PIECE		(12 * 1024)	/* base64: 16 KiB */

/* WebSocket (RFC 6455) server side and terminals (pseudo-terminals). */
#define WS_MAX_MESSAGE		(1024 * 1024)	/* all fragments of one */
#define WS_MAX_FRAME_HEADER	14		/* 2 + 8 (length) + 4 (mask) */
#define WS_MSG_KEEP		(64 * 1024)	/* a bigger message buffer: freed */
#define WS_PING_INTERVAL	30.0		/* s; proxies cut idle ones at 45-60 s */
#define WS_OUT_HIGH		(64 * 1024)	/* a streaming owner pauses above */
#define WS_OUT_MAX		(256 * 1024)	/* queued output: dropped past it */
#define WS_STUCK_TIMEOUT	HTTP_STUCK_TIMEOUT	/* s, output not moving */
#define WS_CLOSE_TIMEOUT	5.0		/* s, for the peer's close */
#define WS_READ_CHUNK		(16 * 1024)	/* one read(2) of a socket */
#define WS_INPUT_RETRY		0.05		/* s, input held by another writer */
#define PTY_MAX_DIM		10000		/* cols, rows */
#define TERM_MAX_LIVE		64
#define TERM_KEEP_BYTES		(1024 * 1024)	/* bufferSize by default */
#define TERM_KEEP_BYTES_CAP	LOG_MAX_BYTES	/* largest bufferSize asked */
#define TERM_INPUT_HIGH		PROC_STDIN_HIGH	/* input queued: pause above */

#define BOOT_KEEP		3
#define STATE_RETRY_S		1.0		/* s, refused state writes */
#define AGENT_GRACE		8.0		/* s */

/* Option tables (base/opt): the agent's, the shim's, the CLI's. */
#define OPT_MAX			32		/* rows of one command */
#define OPT_SECONDS_MAX		1e12		/* largest SECONDS taken */

/* The command line (agent/cli*.c). */
#define CLI_WAIT_PIECE		60000		/* ms asked of one wait call */
#define CLI_ERRBODY_MAX		(64 * 1024)	/* kept of an error reply */
#define CLI_SSE_LINE_MAX	(16 * 1024 * 1024)
#define CLI_CURSOR_MAX		160		/* kept of a cursor the agent sent */
#define CLI_CTYPE_MAX		64		/* of a media type, NUL included */
#define CLI_BOOT_MAX		144		/* of a --boot ID */
#define CLI_MSG_MAX		512		/* one failure reported */
#define CLI_READY_POLL		20		/* ms between readiness checks */
#define CLI_READY_TIMEOUT	60000		/* ms, default --ready-timeout */
#define CLI_READY_LINE_MAX	(64 * 1024)	/* of a line matched whole */
#define CLI_MAX_PENDING		16		/* signals before the reply */
#define CLI_STDIN_CHUNK		(64 * 1024)	/* run --stdin, one read */
/* run --stdin travels as base64 (4/3) in a JSON body of HTTP_MAX_BODY. */
#define CLI_RUN_STDIN_MAX	(720 * 1024)

/* Files and tar (core/files, fileops, upload, tar; the walk in base/fsutil). */
#define FILES_MAX_LINKS		40		/* links in one lookup, as the kernel */
#define FILES_WALK_DEPTH	256		/* directories held by the openat2-less walk */
#define FILES_LIST_MAX		10000		/* entries in one listing */
#define FILES_LIST_DEPTH_MAX	32		/* ?depth= */
#define FILES_LIST_TURN		256		/* entries envd's ListDir walks per loop turn */
#define FILES_TMP_TRIES		16		/* names tried for a PUT's temp file */
#define FILES_PUT_FLUSH		(16 * 1024 * 1024)	/* an upload made stable every this many bytes */
#define FILES_PUT_BEHIND	(4 * FILES_PUT_FLUSH)	/* not stable yet: the loop flushes */
#define FILES_IO_CHUNK		(64 * 1024)	/* one read of a file or tar pipe */
#define FILES_PUMP_BYTES	(256 * 1024)	/* one transfer's share of a callback */
#define FILES_EXCLUDES_MAX	256		/* persist ?excludes= entries */
#define TAR_BLOCK		(64 * 1024)	/* archive I/O unit in the tar child */
#define TAR_PIPE_BYTES		(1024 * 1024)	/* asked pipe size to/from the tar child */
#define TAR_ERR_MAX		512		/* the tar child's report, <= PIPE_BUF */

/* The HTTP server's own (net/http). */
#define HTTP_READ_CHUNK		(64 * 1024)	/* one read of a request */
#define HTTP_BODY_READ_CHUNK	(256 * 1024)	/* one read of a streamed body */
#define HTTP_TICK		5.0		/* s, longest connection timer period */
#define HTTP_KEEP_BUF		(256 * 1024)	/* drained buffers above are freed */
#define HTTP_ACCEPT_BACKOFF	0.1		/* s, no accept after EMFILE */
#define HTTP_ERROR_MSG_MAX	512		/* of an error message, NUL included */
#define HTTP_QUERY_U64_MAX	24		/* of a number in a query, NUL included */

/* Children (sys/spawn). */
#define SPAWN_AGENT_OOM_ADJ	(-500)	/* the agent's own oom_score_adj */
#define SPAWN_CHILD_OOM_RAISE	100	/* a child's: the agent's + this */
/* Without close_range (Linux < 5.9) a child closes the fds below this. */
#define SPAWN_CLOSE_MAX		65536
#define MUSL_INHERITED_MAX	64		/* fds inherited without CLOEXEC, remembered (static/musl.c) */
/* A seccomp filter as BPF: the default deny-list takes well under this. */
#define SPAWN_FILTER_MAX	(64 * 1024)
/* The stack of a child that shares the agent's memory until its exec. */
#define SPAWN_VM_STACK		(64 * 1024)

/* Containment (sys/cgroup). */
#define CGROUP_SPARES		16	/* cgroups made ahead per kind */
#define CGROUP_REASON_MAX	256	/* why cgroups are off, NUL included */
#define CGROUP_WD_HASH		256	/* buckets of the watches by wd */
#define CGROUP_INOTIFY_BUF	4096	/* one read of cgroup.events changes */
#define CGROUP_AGENT_MEMORY_MIN	(16 * 1024 * 1024)	/* the agent's memory.min */
#define CGROUP_AGENT_CPU_WEIGHT	1000	/* the agent's cpu.weight (default 100) */
#define CGROUP_CPU_PERIOD	100000	/* cpu.max's period, us */
#define CGROUP_STOP_WAIT_MS	500	/* at exit, for helpers killed in the agent's leaf */
#define CGROUP_SWEEP_AGE	2	/* s: a younger tend-* subtree is not swept */
#define CGROUP_FREEZE_WAIT	2.0	/* s a freeze waits for frozen 1 */
#define API_FREEZE_POLL		0.005	/* s between looks at cgroup.events */

/* Accounts (sys/user). */
#define USER_NAME_MAX		256	/* of a user name, NUL included */
#define USER_PASSWD		"/etc/passwd"	/* read with fgetpwent, no NSS */
#define USER_GROUP		"/etc/group"	/* with fgetgrent, no NSS */
/* Supplementary groups of a child (on the stack of spawn's fork path). */
#define USER_GROUPS_MAX		1024

/* The reap loop (sys/child). */
/*
 * s: an orphan reaped this soon after another (or two in one pass) is a
 * burst; until a pass reaps none, passes are this far apart, not one
 * per SIGCHLD.
 */
#define CHILD_REAP_HOLDOFF	0.005

/* The process table (core/job, proc, proctab). */
#define PROC_DRAIN_ROUNDS	16	/* pipe reads per wakeup, then yield */
/* "All that is readable now", bounded against a writer that never stops. */
#define PROC_DRAIN_ALL		4096
#define PROC_PIPE_SIZE		(1024 * 1024)	/* stdout pipe, best effort */
#define PROC_SETTLE_POLL	0.1	/* s, a group's members left */
#define PROC_SETTLE_SOON	0.005	/* s, after an orphan of a group died */
#define PROC_FIRST_STATUS	0.1	/* s, delay of the first status.json */
#define PROC_SYNC_DELAY		1.0	/* s, final statuses reach the disk */

/* Restart policy (proc_restart.c). */
#define RESTART_BACKOFF_MS	500	/* the first wait, by default */
#define RESTART_MAX_BACKOFF_MS	30000	/* the doubling's cap, by default */
#define RESTART_RESET_S		10.0	/* a run this long resets the backoff */
#define RESTART_WINDOW_N	10	/* the breaker: this many restarts... */
#define RESTART_WINDOW_S	300.0	/* ...in this long, and no more */
#define RESTART_RUNS_KEPT	16	/* runs a status lists, the last ones */
#define PROC_SWEEP		5.0	/* s, ended records' files closed */
#define PROC_MS_MAX		1e12	/* ms, largest timeout, killGrace, wait */
#define EXEC_MAX_OUTPUT_ASK	1e15	/* largest maxOutputBytes taken, then
					   capped at EXEC_MAX_OUTPUT_CAP */

/* Terminals (core/term). */
#define TERM_END_WAIT		1.0	/* s after the leader is reaped with
					   the slave still open: the end anyway */
#define TERM_KILL_GRACE		2.0	/* s, terminate: HUP+TERM, then KILL */
#define TERM_KEEP_ENDED		256	/* ended terminals kept per boot */

/* The record on disk (store/record). */
#define RECORD_POOL		32	/* records' directories a child makes */
#define RECORD_POOL_LOW		16	/* left in the pool: the next child */
#define RECORD_POOL_RETRY	10.0	/* s, after a child that failed */
#define RECORD_POOL_NICE	10	/* the child's, behind the launches */
#define RECORD_READ_MAX		(1024 * 1024)	/* meta.json, status.json */
#define RECORD_STATUS_ROOM	1024	/* bytes kept past a status.json for
					   the next, longer one on a full disk */
#define BOOT_READ_MAX		4096		/* an earlier boot's boot.json */

/* The routes (api/). */
#define API_ERR_MSG_MAX		HTTP_ERROR_MSG_MAX	/* an api_err's message */
#define API_ROUTES_MAX		96	/* of all route modules, together */
#define API_MAXLOG_MAX		9007199254740992.0	/* 2^53: maxLogBytes, exact in a double */
#define API_UID_MAX		4294967294.0	/* (uid_t)-1 is "no user" */
#define API_RLIMIT_MAX		9007199254740992.0	/* 2^53: exact in a double */
#define API_CPUS_MAX		4096.0	/* of a "limits" cpu, CPUs */
#define API_CPUS_MIN		0.01	/* cpu.max's least quota: 1 ms per 100 ms */
#define API_SIGNAL_MAX		64	/* kill's signal: 1..this */
#define API_BOOT_Q_MAX		64	/* of ?boot=, NUL included */

/* The TCP shim (net/shim, shimhead, agent/shim.c) and its supervision (core/shimctl). */
#define SHIM_MAX_CONNS		HTTP_MAX_CONNS	/* client connections at most */
#define SHIM_BUF		(256 * 1024)	/* bytes in flight, each way */
#define SHIM_IN_BUF		(64 * 1024)	/* client bytes not yet looked at */
#define SHIM_HEAD_TIMEOUT	HTTP_HEAD_TIMEOUT	/* s, a head, or no agent yet */
#define SHIM_FIRST_TIMEOUT	3.0		/* s, from accept to a first whole head */
#define SHIM_PEER_PENDING	64		/* unauthenticated connections of one address */
#define SHIM_PENDING_SHARE	2		/* unauthenticated: 1/N of --max-conns at most */
#define SHIM_ACCEPT_BATCH	16		/* accepts a loop turn: heads are read between */
#define SHIM_TOKEN_MAX		4096		/* bytes of a token */
#define SHIM_BACKOFF_MIN	1.0		/* s, first restart delay */
#define SHIM_BACKOFF_MAX	30.0		/* s, the doubling stops here */
#define SHIM_BACKOFF_RESET	30.0		/* s up: the next delay is the first */
/* The shim's proxy to the container's ports. */
#define SHIM_PROXY_EXTRA	64		/* bytes a proxied head may grow by */
#define SHIM_PROXY_EOF_WAIT	30.0		/* s, a port's silence after the client's EOF */
#define SHIM_PROXY_PIPE		(1024 * 1024)	/* bytes of a port's reply in flight: fewer turns a MiB */

/* The bridge's namespace (api/bridge/, the exec sink). */
#define BRIDGE_EXIT_TIMEOUT	124	/* exec's exit_code after its timeout */
#define BRIDGE_EXIT_NOT_EXEC	126	/* a command that cannot be executed */
#define BRIDGE_EXIT_NOT_FOUND	127	/* a command that is not there */
#define BRIDGE_NAME_MAX		64	/* POST /v1/sandbox's id, from the host name */
#define BRIDGE_DELETE_POLL	0.02	/* s, DELETE looks whether all ended */
#define BRIDGE_DELETE_SLACK	1.0	/* s past the longest grace: reply anyway */
#define BRIDGE_SESSIONS_MAX	64	/* POST .../session: live sessions at most */

/* envd's Connect API (api/envd/). */
#define CONNECT_MSG_MAX		HTTP_MAX_BODY	/* one request message */
#define CONNECT_NAME_MAX	64	/* a field name, snake_case, NUL included */
#define CONNECT_TIMEOUT_DIGITS	10	/* Connect-Timeout-Ms, by the protocol */
#define ENVD_KEEPALIVE_DEFAULT	50	/* s, without Keepalive-Ping-Interval */
#define ENVD_KEEPALIVE_MAX	3600	/* s, the largest interval taken */
/* POST /init's envVars, in all; PROC_MAX_ENV less PATH, HOME, USER, LOGNAME. */
#define ENVD_INIT_ENV_MAX	(PROC_MAX_ENV - 4)
#define ENVD_INIT_ENV_BYTES	(256 * 1024)	/* ... names and values, in all */
/*
 * File metadata (POST /files' X-Metadata-<key>, the xattr user.e2b.<key>),
 * as envd bounds it: a key fits the kernel's 255-byte xattr name with the
 * prefix; names with the prefix and values, in all, fit one ext4 block.
 * The count follows from the bytes (a one-byte key, an empty value).
 */
#define ENVD_META_PREFIX	"user.e2b."
#define ENVD_META_KEY_MAX	(255 - (int)sizeof(ENVD_META_PREFIX) + 1)
#define ENVD_META_BYTES_MAX	4096
#define ENVD_META_MAX		(ENVD_META_BYTES_MAX / \
				    ((int)sizeof(ENVD_META_PREFIX) - 1 + 1))
/*
 * Read back (EntryInfo.metadata): one file's values, in all; what would
 * pass it is left out (a listing stays bounded whatever others set).
 */
#define ENVD_META_READ_MAX	(64 * 1024)
/* A file's list of attribute names: the kernel's most (XATTR_LIST_MAX). */
#define ENVD_META_LIST_MAX	(64 * 1024)
#define USER_HOME_MAX		1024	/* of a home directory, NUL included */

/* Watching (core/watch, api/api_watch) and envd's files (api/envd/, net/multipart). */
#define FILES_TMP_KEPT		256	/* tend's newest temp files a watcher can tell */
#define WATCH_MAX		32	/* watches (inotify instances) at once */
#define WATCH_DIRS_MAX		8192	/* directories one recursive watch holds */
#define WATCH_RING_EVENTS	4096	/* events a watch keeps for resumers */
#define WATCH_RING_BYTES	(512 * 1024)	/* their paths, together */
#define WATCH_READ_BUF		(64 * 1024)	/* one read of an inotify fd */
#define WATCH_READS		16	/* reads per wakeup, then yield */
#define WATCH_LINGER		30.0	/* s a watch outlives its last reader */
#define WATCH_SCAN_MAX		4096	/* entries scanned per new directory */
#define WATCH_SCAN_BUDGET	8	/* directories scanned per loop turn */
#define WATCH_PUMP_EVENTS	256	/* events per stream turn and per poll */
#define WATCH_POLL_MAX		64	/* envd polling watchers (CreateWatcher) */
#define WATCH_POLL_IDLE		600.0	/* s, an unpolled polling watcher is dropped */
#define MULTIPART_BOUNDARY_MAX	70	/* RFC 2046 */
#define MULTIPART_HEAD_MAX	(8 * 1024)	/* of one part's headers */
#define MULTIPART_PARTS_MAX	1000	/* parts of one upload */
#define MULTIPART_PARTS_TURN	2	/* parts one upload begins per loop turn */
#define MULTIPART_SLICE		256	/* bytes fed to the parser at a time */
#define ENVD_ENTRY_NAMES	8	/* owner and group names per reply */

/* The lifecycle event log (core/events, api/api_events, the CLI's events). */
#define EVENTS_MAX_BYTES	(16ULL * 1024 * 1024)	/* kept per boot */
#define EVENTS_LINE_MAX		(16 * 1024)	/* one event; longer ones are cut */
#define EVENTS_TYPE_MAX		64		/* of a type, NUL included */
#define EVENTS_TYPES_Q_MAX	1024		/* of ?types=, NUL included */
#define EVENTS_PUMP_EVENTS	256		/* looked at per reader and loop turn */
#define EVENTS_PAGE_MAX		1000		/* events in one JSON page, by default */
#define EVENTS_PAGE_CAP		10000		/* largest ?limit= */
#define EVENTS_ARGV0_MAX	256		/* of argv[0] in an event */
#define EVENTS_HELD_MAX		64		/* refused by the disk, held for the next try */

/* Listening ports and readiness (sys/ports, core/portwatch, core/ready, api/api_ports). */
#define PORTS_MAX		4096	/* sockets listed; past it the list is cut */
#define PORTS_SCAN_BUDGET	256	/* /proc entries looked at per loop turn */
#define PORTS_PPID_DEPTH	64	/* ancestors looked at for an owner */
#define PORTS_MEMO		64	/* holders' owners remembered per refresh */
#define PORTS_POLL_MS		500	/* between refreshes while a job runs */
#define PORTS_READY_POLL_MS	20	/* ... while a readiness awaits a port */
#define READY_LOG_MAX		1024	/* of a ready.log substring */
#define READY_READ		(16 * 1024)	/* output read at a time for it */

#endif
