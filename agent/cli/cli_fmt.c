/*
 * cli_fmt.c: what the agent's replies hold and how the CLI prints them —
 * fields read from JSON, the exit code a status stands for, output in
 * base64 written out, replies printed as they came or indented, the
 * health summary and the ps table (durations, sizes, argv as a shell
 * would need it typed).  Nothing here talks to the agent.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "base/buf.h"
#include "base/codec.h"
#include "base/fsutil.h"

#include "cli.h"

/* The table columns, in order; CPU to PIDS with --resources only. */
enum {
	PS_ID, PS_PID, PS_STATE, PS_EXIT, PS_AGE,
	PS_CPU, PS_MEM, PS_PEAK, PS_PIDS,
	PS_COMMAND, PS_NCOLS
};

/* One cell's text before it is copied into the table. */
#define PS_CELL_MAX	64

static void	cli_fmt_duration(char *, size_t, int64_t);
static void	cli_fmt_size(char *, size_t, const cJSON *);
static void	cli_fmt_cgroups(const cJSON *);
static void	cli_fmt_ps_resources(char **, const cJSON *);
static int64_t	cli_fmt_time(const char *);
static int	cli_fmt_command(struct buf *, const cJSON *);
static void	cli_fmt_ps_exit(char *, size_t, const cJSON *);
static void	cli_fmt_ps_row(char **, const cJSON *, int64_t,
		    struct buf *);
static void	cli_fmt_ps_print(char **, int, int);

/* ---------------------------------------------------------------------
 * Reading replies.
 */

const char *
cli_fmt_str(const cJSON *j, const char *key)
{
	const cJSON	*v;

	v = cJSON_GetObjectItemCaseSensitive(j, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

int
cli_fmt_int(const cJSON *j, const char *key, int def)
{
	const cJSON	*v;

	v = cJSON_GetObjectItemCaseSensitive(j, key);
	return cJSON_IsNumber(v) ? v->valueint : def;
}

/*
 * The exit code a ProcessStatus or terminal event stands for: exit.code
 * (already 128+N when killed by signal N).  An error state (a lost
 * process) is reported and becomes -1.
 */
int
cli_fmt_exit_code(const cJSON *j, const char *id)
{
	const cJSON	*ex, *code, *err;
	const char	*state, *msg;

	state = cli_fmt_str(j, "state");
	ex = cJSON_GetObjectItemCaseSensitive(j, "exit");
	code = cJSON_GetObjectItemCaseSensitive(ex, "code");
	if (state != NULL && strcmp(state, "exited") == 0 &&
	    cJSON_IsNumber(code))
		return code->valueint < 0 || code->valueint > 255 ? 255 :
		    code->valueint;
	err = cJSON_GetObjectItemCaseSensitive(j, "error");
	msg = cli_fmt_str(err, "message");
	if (msg == NULL)
		msg = cli_fmt_str(err, "code");
	if (id != NULL)
		cli_warnx("process '%s' ended in error: %s", id,
		    msg ? msg : "no exit status");
	else
		cli_warnx("the process ended in error: %s",
		    msg ? msg : "no exit status");
	return -1;
}

/* ---------------------------------------------------------------------
 * Printing.
 */

/* Output that came in base64, decoded onto fd. */
int
cli_fmt_b64(int fd, const char *s)
{
	struct buf	b = { 0 };
	int		rv = 0;

	if (codec_b64_decode(&b, s, strlen(s)) == -1) {
		cli_warnx("bad reply from the agent: output that is not "
		    "base64");
		rv = -1;
	} else if (fsutil_write_all(fd, buf_head(&b), buf_avail(&b)) == -1) {
		cli_warnx("writing the output: %s", strerror(errno));
		rv = -1;
	}
	buf_free(&b);
	return rv;
}

/* A reply as it came, and a newline: what --json prints. */
void
cli_fmt_raw(FILE *f, const char *d, size_t n)
{
	fwrite(d, 1, n, f);
	if (n == 0 || d[n - 1] != '\n')
		fputc('\n', f);
}

/* JSON indented for a reader; what cannot be parsed, as it came. */
void
cli_fmt_json(const char *d, size_t n)
{
	cJSON	*j;
	char	*s;

	if ((j = cJSON_ParseWithLength(d, n)) != NULL &&
	    (s = cJSON_Print(j)) != NULL) {
		puts(s);
		free(s);
	} else {
		fwrite(d, 1, n, stdout);
		if (n > 0 && d[n - 1] != '\n')
			putchar('\n');
	}
	cJSON_Delete(j);
}

/* The health reply, a field a line; what is missing reads "?" or 0. */
void
cli_fmt_health(const cJSON *j)
{
	const cJSON	*p, *n;
	const char	*s;
	char		 up[32];

	printf("status     %s\n", (s = cli_fmt_str(j, "status")) ? s : "?");
	printf("boot       %s\n", (s = cli_fmt_str(j, "bootId")) ? s : "?");
	printf("version    %s (api %d)\n",
	    (s = cli_fmt_str(j, "version")) ? s : "?",
	    cli_fmt_int(j, "apiVersion", 0));
	printf("pid        %d\n", cli_fmt_int(j, "pid", 0));
	n = cJSON_GetObjectItemCaseSensitive(j, "uptimeMs");
	cli_fmt_duration(up, sizeof(up), cJSON_IsNumber(n) ?
	    (int64_t)n->valuedouble : 0);
	printf("uptime     %s\n", up);
	p = cJSON_GetObjectItemCaseSensitive(j, "processes");
	printf("processes  %d running, %d in all\n",
	    cli_fmt_int(p, "running", 0), cli_fmt_int(p, "total", 0));
	printf("terminals  %d\n", cli_fmt_int(j, "terminals", 0));
	cli_fmt_cgroups(cJSON_GetObjectItemCaseSensitive(j, "cgroups"));
}

/*
 * "cgroups    v2 ROOT (cpu memory pids)", "... (no controllers)", or
 * "cgroups    none (why)"; nothing from an agent that does not say.
 */
static void
cli_fmt_cgroups(const cJSON *cg)
{
	const cJSON	*a, *el;
	const char	*mode, *s;
	int		 n = 0;

	if ((mode = cli_fmt_str(cg, "mode")) == NULL)
		return;
	printf("cgroups    %s", mode);
	if ((s = cli_fmt_str(cg, "root")) != NULL)
		printf(" %s", s);
	if ((s = cli_fmt_str(cg, "reason")) != NULL) {
		printf(" (%s)\n", s);
		return;
	}
	a = cJSON_GetObjectItemCaseSensitive(cg, "controllers");
	cJSON_ArrayForEach(el, a)
		if (cJSON_IsString(el))
			printf("%s%s", n++ == 0 ? " (" : " ", el->valuestring);
	printf("%s\n", n > 0 ? ")" : " (no controllers)");
}

/* "45s", "3m12s", "5h02m", "2d04h". */
static void
cli_fmt_duration(char *out, size_t len, int64_t ms)
{
	int64_t	s = ms < 0 ? 0 : ms / 1000;

	if (s < 60)
		snprintf(out, len, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(out, len, "%lldm%02llds", (long long)(s / 60),
		    (long long)(s % 60));
	else if (s < 86400)
		snprintf(out, len, "%lldh%02lldm", (long long)(s / 3600),
		    (long long)(s / 60 % 60));
	else
		snprintf(out, len, "%lldd%02lldh", (long long)(s / 86400),
		    (long long)(s / 3600 % 24));
}

/* Bytes as "512B", "1.5K", "12M", "2.0G" (binary); "-" if not a number. */
static void
cli_fmt_size(char *out, size_t len, const cJSON *v)
{
	static const char	 unit[] = "BKMGTPE";
	double			 d;
	int			 u = 0;

	if (!cJSON_IsNumber(v) || v->valuedouble < 0) {
		snprintf(out, len, "-");
		return;
	}
	for (d = v->valuedouble; d >= 1024 && u < (int)sizeof(unit) - 2; u++)
		d /= 1024;
	if (u == 0)
		snprintf(out, len, "%.0fB", d);
	else if (d < 9.95)
		snprintf(out, len, "%.1f%c", d, unit[u]);
	else
		snprintf(out, len, "%.0f%c", d, unit[u]);
}

/* RFC 3339 UTC ("2026-07-08T00:00:00.000Z") to ms; -1 if not that. */
static int64_t
cli_fmt_time(const char *s)
{
	struct tm	tm;
	int		ms = 0, n = 0;
	time_t		t;

	memset(&tm, 0, sizeof(tm));
	if (s == NULL || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year,
	    &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min, &tm.tm_sec,
	    &n) != 6)
		return -1;
	if (s[n] == '.')
		sscanf(s + n, ".%3d", &ms);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	if ((t = timegm(&tm)) == (time_t)-1)
		return -1;
	return (int64_t)t * 1000 + ms;
}

/*
 * argv as a shell would need it typed, plain words bare, others quoted,
 * NUL-ended.  -1 on ENOMEM.
 */
static int
cli_fmt_command(struct buf *b, const cJSON *argv)
{
	static const char	 plain[] = "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%";
	const cJSON		*a;
	const char		*p;
	int			 rv = 0;

	cJSON_ArrayForEach(a, argv) {
		if (!cJSON_IsString(a))
			continue;
		if (buf_avail(b) > 0)
			rv |= buf_add(b, " ", 1);
		p = a->valuestring;
		if (*p != '\0' && strspn(p, plain) == strlen(p)) {
			rv |= buf_addstr(b, p);
			continue;
		}
		rv |= buf_add(b, "'", 1);
		for (; *p != '\0'; p++)
			rv |= *p == '\'' ? buf_addstr(b, "'\\''") :
			    buf_add(b, p, 1);
		rv |= buf_add(b, "'", 1);
	}
	rv |= buf_add(b, "", 1);
	return rv ? -1 : 0;
}

/* ---------------------------------------------------------------------
 * The ps table.
 */

/*
 * EXIT: "0", "143 (TERM)", "137 (KILL) timeout", "137 (OOM)" (the OOM
 * killer's KILL), an error code, or "-".
 */
static void
cli_fmt_ps_exit(char *tmp, size_t len, const cJSON *p)
{
	const cJSON	*ex, *v;
	const char	*sig;

	ex = cJSON_GetObjectItemCaseSensitive(p, "exit");
	v = cJSON_GetObjectItemCaseSensitive(ex, "code");
	if (cJSON_IsNumber(v)) {
		snprintf(tmp, len, "%d", v->valueint);
		v = cJSON_GetObjectItemCaseSensitive(ex, "signal");
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ex,
		    "oomKilled")))
			snprintf(tmp + strlen(tmp), len - strlen(tmp),
			    " (OOM)");
		else if (cJSON_IsNumber(v) &&
		    (sig = sigabbrev_np(v->valueint)) != NULL)
			snprintf(tmp + strlen(tmp), len - strlen(tmp),
			    " (%s)", sig);
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ex,
		    "timedOut")))
			snprintf(tmp + strlen(tmp), len - strlen(tmp),
			    " timeout");
	} else if ((v = cJSON_GetObjectItemCaseSensitive(p, "error")) != NULL &&
	    cli_fmt_str(v, "code") != NULL)
		snprintf(tmp, len, "%s", cli_fmt_str(v, "code"));
	else
		snprintf(tmp, len, "-");
}

/* CPU, MEM, PEAK, PIDS of a status's "resources"; "-" for what is absent. */
static void
cli_fmt_ps_resources(char **row, const cJSON *p)
{
	const cJSON	*r, *v;
	char		 tmp[PS_CELL_MAX];

	r = cJSON_GetObjectItemCaseSensitive(p, "resources");
	v = cJSON_GetObjectItemCaseSensitive(r, "cpuUsec");
	if (cJSON_IsNumber(v))
		snprintf(tmp, sizeof(tmp), "%.2fs", v->valuedouble / 1e6);
	else
		snprintf(tmp, sizeof(tmp), "-");
	row[PS_CPU] = strdup(tmp);
	cli_fmt_size(tmp, sizeof(tmp), cJSON_GetObjectItemCaseSensitive(r,
	    "memoryCurrent"));
	row[PS_MEM] = strdup(tmp);
	cli_fmt_size(tmp, sizeof(tmp), cJSON_GetObjectItemCaseSensitive(r,
	    "memoryPeak"));
	row[PS_PEAK] = strdup(tmp);
	v = cJSON_GetObjectItemCaseSensitive(r, "pidsCurrent");
	snprintf(tmp, sizeof(tmp), cJSON_IsNumber(v) ? "%.0f" : "-",
	    cJSON_IsNumber(v) ? v->valuedouble : 0);
	row[PS_PIDS] = strdup(tmp);
}

/* One status's cells, each strdup'ed; one left NULL is out of memory. */
static void
cli_fmt_ps_row(char **row, const cJSON *p, int64_t now, struct buf *cmd)
{
	const cJSON	*v;
	const char	*state;
	char		 tmp[PS_CELL_MAX];
	int64_t		 t;

	row[PS_ID] = strdup(cli_fmt_str(p, "id") ? cli_fmt_str(p, "id") : "?");
	v = cJSON_GetObjectItemCaseSensitive(p, "pid");
	snprintf(tmp, sizeof(tmp), cJSON_IsNumber(v) ? "%d" : "-",
	    cJSON_IsNumber(v) ? v->valueint : 0);
	row[PS_PID] = strdup(tmp);
	state = cli_fmt_str(p, "state");
	/* Between two runs of its restart policy: no process, a wait. */
	v = cJSON_GetObjectItemCaseSensitive(p, "restart");
	if (state != NULL && strcmp(state, "running") == 0 &&
	    cli_fmt_str(v, "state") != NULL &&
	    strcmp(cli_fmt_str(v, "state"), "waiting") == 0)
		state = "waiting";
	row[PS_STATE] = strdup(state ? state : "?");
	cli_fmt_ps_exit(tmp, sizeof(tmp), p);
	row[PS_EXIT] = strdup(tmp);
	t = cli_fmt_time(cli_fmt_str(p, "startedAt"));
	if (t >= 0)
		cli_fmt_duration(tmp, sizeof(tmp), now - t);
	else
		snprintf(tmp, sizeof(tmp), "-");
	row[PS_AGE] = strdup(tmp);
	cli_fmt_ps_resources(row, p);
	buf_reset(cmd);
	if (cli_fmt_command(cmd, cJSON_GetObjectItemCaseSensitive(p,
	    "command")) == 0)
		row[PS_COMMAND] = strdup(buf_head(cmd));
}

/*
 * Columns as wide as their widest cell; COMMAND last, not padded.  The
 * usage columns only when resources.
 */
static void
cli_fmt_ps_print(char **cell, int nrow, int resources)
{
	size_t	w[PS_NCOLS];
	int	r, k;

	memset(w, 0, sizeof(w));
	for (r = 0; r < nrow; r++)
		for (k = 0; k < PS_NCOLS; k++)
			if (strlen(cell[r * PS_NCOLS + k]) > w[k])
				w[k] = strlen(cell[r * PS_NCOLS + k]);
	for (r = 0; r < nrow; r++) {
		for (k = 0; k < PS_NCOLS - 1; k++)
			if (resources || k < PS_CPU || k > PS_PIDS)
				printf("%-*s  ", (int)w[k],
				    cell[r * PS_NCOLS + k]);
		printf("%s\n", cell[r * PS_NCOLS + PS_COMMAND]);
	}
}

/*
 * The table of a JSON array of statuses, with the usage columns when
 * resources.  The cells are filled first: the widths depend on all of
 * them.  -1 (nothing printed) when out of memory.
 */
int
cli_fmt_ps(const cJSON *j, int resources)
{
	static const char *const	 title[PS_NCOLS] = {
		"ID", "PID", "STATE", "EXIT", "AGE", "CPU", "MEM", "PEAK",
		"PIDS", "COMMAND"
	};
	struct buf			 cmd = { 0 };
	const cJSON			*p;
	char				**cell;
	int64_t				 now;
	int				 nrow, r, k, rv = 0;

	nrow = cJSON_GetArraySize(j) + 1;
	if ((cell = calloc((size_t)nrow * PS_NCOLS, sizeof(*cell))) == NULL)
		return -1;
	for (k = 0; k < PS_NCOLS; k++)
		cell[k] = strdup(title[k]);
	now = codec_now_ms();
	r = 1;
	cJSON_ArrayForEach(p, j)
		cli_fmt_ps_row(cell + r++ * PS_NCOLS, p, now, &cmd);
	for (k = 0; k < nrow * PS_NCOLS; k++)
		if (cell[k] == NULL)
			rv = -1;
	if (rv == 0)
		cli_fmt_ps_print(cell, nrow, resources);
	for (k = 0; k < nrow * PS_NCOLS; k++)
		free(cell[k]);
	free(cell);
	buf_free(&cmd);
	return rv;
}
