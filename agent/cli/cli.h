/*
 * cli: the operator's command line (tend ps, run, logs, ...), a client of
 * the agent's unix socket.  agent/main.c hands it every subcommand other
 * than "agent" through cli_main; the rest of this header is what the
 * CLI's own files share:
 *
 *	cli.c		help, parsing, failures and cli_main
 *	cli_grammar.c	the grammar: commands, their option rows, exit codes
 *	cli_cmd.c	the commands' handlers, but for run and help
 *	cli_run.c	run: exec's stream and the signals passed on
 *	cli_ready.c	start --ready-port, --ready-log
 *	cli_http.c	calls to the agent, their replies and errors
 *	cli_sse.c	the event stream of a process's output
 *	cli_fmt.c	what replies hold and how they print
 *	cli_files.c	cat, put, ls, persist, hydrate, watch: the file routes
 *	cli_term.c	term: a terminal attached over the connect route
 *	cli_events.c	events: the boot's lifecycle events
 */
#ifndef TEND_CLI_H
#define TEND_CLI_H

#include <regex.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/opt.h"
#include "base/tunables.h"

/*
 * argv[0] is the program name, argv[1] global options or the subcommand.
 * Returns the exit code: 0 ok, 1 refused by the agent, 2 usage, 3 agent
 * unreachable; run and wait return the process's exit code.
 */
int	cli_main(int argc, char **argv);

/* The exit codes; cli_exits lists them for the operator. */
enum {
	CLI_OK = 0,
	CLI_REFUSED = 1,	/* the agent replied with an error */
	CLI_USAGE = 2,
	CLI_UNREACHABLE = 3,	/* no agent, or the connection broke */
	CLI_NOSUCH = 4,		/* 404 for a process or path it names */
	CLI_TAKEN = 5,		/* id_taken: someone else claimed the ID */
	CLI_NOTREADY = 6,	/* start --ready-*: it ended first */
	CLI_NOTUPGRADED = 7,	/* upgrade: accepted, the new agent not seen */
	CLI_TIMEDOUT = 124,	/* wait/ready timeout ran out, as timeout(1) */
};

#define STREAM_OUT	0x1
#define STREAM_ERR	0x2

#define CLI_SOCKET	"/run/tend.sock"

#define CMD_ORDERED	0x1	/* options end at the first argument (argv) */
#define CMD_LAUNCH	0x2	/* takes the launch options */
#define CMD_PROCEXIT	0x4	/* exits with the process's exit code */
#define CMD_PATH	0x8	/* its argument is a path, not an ID */

struct cli;

/* A subcommand: a row of cli_cmds. */
struct cli_cmd {
	const char		*name;
	int			(*run)(struct cli *);
	const struct opt	*opts;		/* rows into struct cli */
	const char		*synopsis;	/* after "tend NAME" */
	int			 minargs;
	int			 maxargs;	/* -1: any number */
	int			 flags;
	const char		*summary;	/* one line, for tend --help */
	const char		*help;		/* a paragraph */
};

/* Everything the command line said. */
struct cli {
	const struct cli_cmd	*cmd;
	const char		*sock;
	const char		*boot;		/* --boot: Tend-Boot header */
	const char		*id;		/* --id */
	const char		*cwd;
	const char		*user;
	const char		*since;
	int			 signo;		/* kill -s */
	cJSON			*env;		/* -e K=V, an object */
	int64_t			 timeout_ms;	/* -1: none */
	int			 all;
	int			 json;
	int			 follow;
	int			 with_stdin;	/* --stdin */
	int			 close;
	int			 force;
	int			 streams;	/* STREAM_*, 0: both */
	int			 terminals;	/* ps --terminals */
	int			 resources;	/* ps --resources */
	int64_t			 memory;	/* --memory, bytes; 0: none */
	int64_t			 memory_high;	/* --memory-high, bytes; 0: none */
	int64_t			 pids;		/* --pids; 0: none */
	double			 cpus;		/* --cpus; 0: none */
	int64_t			 limit_bytes;	/* logs --limit-bytes; -1: none */
	int			 ready_port;	/* start --ready-port; 0: none */
	int			 ready_log;	/* ready_re holds --ready-log */
	regex_t			 ready_re;
	const char		*ready_text;	/* --ready-log as given */
	int64_t			 ready_ms;	/* --ready-timeout; -1: unset */
	const char		*restart;	/* start --restart POLICY */
	int64_t			 max_restarts;	/* --max-restarts; -1: unset */
	int64_t			 backoff_ms;	/* --backoff; -1: unset */
	int64_t			 max_backoff_ms;	/* --max-backoff; -1: unset */
	const char		*range;		/* cat --range A-B */
	const char		*mode;		/* put --mode */
	int			 append;	/* put --append */
	int			 depth;		/* ls --depth, -R; 0: unset */
	struct buf		 excludes;	/* persist --exclude, comma-joined */
	struct buf		 types;		/* events --type, comma-joined */
	char			**args;		/* positional arguments */
	int			 nargs;
};

/* One HTTP call to the agent and its reply. */
struct cli_http {
	const char	*method;
	struct buf	 target;	/* path and query, percent-encoded */
	const char	*accept;
	const char	*boot;		/* Tend-Boot, or NULL */
	const char	*header;	/* one more "Name: value", or NULL */
	cJSON		*json;		/* request body, or NULL */
	int		 bodyfd;	/* -1, or a chunked body from this fd */
	int		 quiet;		/* the caller reports error replies */
	int		 silent;	/* nor is unreachable reported (a poll) */
	int		 named;		/* the target names a process: 404 is 4 */
	int		 wakefd;	/* -1, or polled: wake(arg) */
	int		(*wake)(void *);
	int		(*head)(void *, struct cli_http *);
	/* A 2xx body goes to stream if set, else into reply. */
	int		(*stream)(void *, const char *, size_t);
	void		*arg;
	int		 failcode;	/* exit code when stream stopped */
	int		 status;
	char		 ctype[CLI_CTYPE_MAX];	/* its Content-Type */
	struct buf	 reply;
};

/* A Server-Sent Events stream of a process's output; zeroed to start. */
struct cli_sse {
	struct buf	 line;		/* a line in pieces */
	struct buf	 data;		/* the event's data field */
	char		 cursor[CLI_CURSOR_MAX];	/* last "id:" */
	int		 streams;	/* STREAM_* to print */
	int		 ended;		/* the terminal event came */
	int		 code;		/* its exit code; -1: error state */
	/* Set: every event goes here instead (tend watch), with arg. */
	int		(*event)(struct cli_sse *, cJSON *);
	void		*arg;
};

/* cli_grammar.c: the commands, the options every one takes, exit codes. */
extern const struct cli_cmd	cli_cmds[];
extern const size_t		cli_ncmds;
extern const struct opt		cli_opts_common[];
extern const char		cli_exits[];

/* cli.c: failures, as a line or (--json) as the agent's error shape. */
void	cli_warnx(const char *, ...)
	    __attribute__((format(printf, 1, 2)));
void	cli_report(const struct cli *, const char *, const char *, ...)
	    __attribute__((format(printf, 3, 4)));
/* cli.c: tend help [COMMAND], the grammar's own command. */
int	cli_help(struct cli *);

/* cli_cmd.c: the handlers the grammar names, and start's and run's body. */
int	cli_cmd_health(struct cli *);
/* cli_upgrade.c */
int	cli_cmd_upgrade(struct cli *);
int	cli_cmd_ps(struct cli *);
int	cli_cmd_start(struct cli *);
int	cli_cmd_logs(struct cli *);
int	cli_cmd_status(struct cli *);
int	cli_cmd_wait(struct cli *);
int	cli_cmd_kill(struct cli *);
int	cli_cmd_send(struct cli *);
int	cli_cmd_rm(struct cli *);
int	cli_cmd_freeze(struct cli *);
int	cli_cmd_thaw(struct cli *);
cJSON	*cli_cmd_launch_body(struct cli *, const char *);

/* cli_term.c */
int	cli_term(struct cli *);

/* cli_files.c */
int	cli_files_cat(struct cli *);
int	cli_files_put(struct cli *);
int	cli_files_ls(struct cli *);
int	cli_files_persist(struct cli *);
int	cli_files_hydrate(struct cli *);
int	cli_files_watch(struct cli *);

/* cli_events.c */
int	cli_events(struct cli *);

/* cli_run.c */
int	cli_run(struct cli *);

/* cli_ready.c */
int	cli_ready_body(struct cli *, cJSON *);
int	cli_ready_wait(struct cli *, const char *, struct cli_http *);
int	cli_ports(struct cli *);

/* cli_http.c */
void	cli_http_init(struct cli_http *, const char *);
void	cli_http_free(struct cli_http *);
int	cli_http_proc_target(struct cli_http *, const char *, const char *);
int	cli_http_query(struct cli_http *, const char *, const char *);
int	cli_http_path_target(struct cli_http *, const char *, const char *);
int	cli_http_call(struct cli *, struct cli_http *);
void	cli_http_print_error(const struct cli *, const struct cli_http *);
cJSON	*cli_http_json(const struct cli_http *);
void	cli_http_print_reply(const struct cli_http *);
int	cli_http_wait(struct cli *, const char *, int64_t, struct cli_http *,
	    cJSON **, int *);
int	cli_http_poll(struct cli *, const char *, const char *, int64_t,
	    struct cli_http *);

/* cli_sse.c */
int	cli_sse_feed(void *, const char *, size_t);
void	cli_sse_free(struct cli_sse *);

/* cli_fmt.c */
const char *cli_fmt_str(const cJSON *, const char *);
int	cli_fmt_int(const cJSON *, const char *, int);
int	cli_fmt_exit_code(const cJSON *, const char *);
int	cli_fmt_b64(int, const char *);
void	cli_fmt_raw(FILE *, const char *, size_t);
void	cli_fmt_json(const char *, size_t);
void	cli_fmt_health(const cJSON *);
int	cli_fmt_ps(const cJSON *, int);

#endif
