/*
 * api_health.c: the agent's own state, read only — health (liveness,
 * the state dir's, the table's counts) and metrics.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "api.h"
#include "api_health.h"
#include "base/codec.h"
#include "base/log.h"
#include "core/handover.h"
#include "core/shimctl.h"
#include "core/term.h"
#include "sys/cgroup.h"

static void	api_health(struct http_conn *, struct http_req *);
static void	api_metrics(struct http_conn *, struct http_req *);

const struct http_route api_health_routes[] = {
	{ "GET",	"/v1/health",			api_health, NULL },
	{ "GET",	"/v1/metrics",			api_metrics, NULL },
	{ NULL, NULL, NULL, NULL }
};

/*
 * "state":"ok", or "degraded" with why, while the state dir refuses what
 * the agent must write (see proctab_state_error).
 */
static void
api_health_state(cJSON *j, struct proctab *t)
{
	cJSON	*d;
	bool	 bootdir;
	int	 err, pending;

	if ((err = proctab_state_error(t, &bootdir, &pending)) == 0) {
		cJSON_AddStringToObject(j, "state", "ok");
		return;
	}
	cJSON_AddStringToObject(j, "state", "degraded");
	d = cJSON_AddObjectToObject(j, "degraded");
	cJSON_AddStringToObject(d, "reason", "state_dir_unwritable");
	cJSON_AddStringToObject(d, "error", strerror(err));
	cJSON_AddBoolToObject(d, "bootDir", bootdir);
	cJSON_AddNumberToObject(d, "pendingWrites", pending);
}

/* "cgroups": the containment the records get, or why none. */
static void
api_health_cgroups(cJSON *j)
{
	cJSON	*o, *a;
	int	 k;

	o = cJSON_AddObjectToObject(j, "cgroups");
	cJSON_AddStringToObject(o, "mode", cgroups_on() ? "v2" : "none");
	if (cgroups_on())
		cJSON_AddStringToObject(o, "root", cgroups_root());
	else
		cJSON_AddNullToObject(o, "root");
	a = cJSON_AddArrayToObject(o, "controllers");
	for (k = 0; k < CG_NCTRL; k++)
		if (cgroups_controllers() & (1u << k))
			cJSON_AddItemToArray(a,
			    cJSON_CreateString(cgroup_ctrl_names[k]));
	if (cgroups_on())
		cJSON_AddNullToObject(o, "reason");
	else
		cJSON_AddStringToObject(o, "reason", cgroups_reason());
}

static void
api_health(struct http_conn *c, struct http_req *r)
{
	struct api		*a = api_of(c);
	struct proctab_stats	 st;
	cJSON			*j, *p;

	(void)r;
	proctab_stats(a->tab, &st);
	j = cJSON_CreateObject();
	/* "status" is liveness (the agent answers); "state" is storage. */
	cJSON_AddStringToObject(j, "status", "ok");
	api_health_state(j, a->tab);
	cJSON_AddStringToObject(j, "bootId", proctab_boot(a->tab));
	cJSON_AddStringToObject(j, "version", TEND_VERSION);
	cJSON_AddNumberToObject(j, "apiVersion", TEND_API_VERSION);
	cJSON_AddNumberToObject(j, "pid", getpid());
	cJSON_AddNumberToObject(j, "uptimeMs",
	    (double)(codec_mono_ms() - a->started_mono));
	p = cJSON_AddObjectToObject(j, "processes");
	cJSON_AddNumberToObject(p, "running", st.running);
	cJSON_AddNumberToObject(p, "total", st.kept);
	cJSON_AddNumberToObject(j, "terminals", termtab_live(a->terms));
	api_health_cgroups(j);
	shimctl_health(j);
	handover_health(j);
	http_reply_json(c, 200, j);
}

static void
api_metrics(struct http_conn *c, struct http_req *r)
{
	struct api		*a = api_of(c);
	struct proctab		*t = a->tab;
	struct proctab_stats	 st;
	struct buf		 b = { 0 };
	int			 rc;

	(void)r;
	proctab_stats(t, &st);
	rc = buf_printf(&b,
	    "# HELP tend_processes_started_total Processes launched.\n"
	    "# TYPE tend_processes_started_total counter\n"
	    "tend_processes_started_total %llu\n"
	    "# HELP tend_processes_running Processes whose group has not settled.\n"
	    "# TYPE tend_processes_running gauge\n"
	    "tend_processes_running %d\n"
	    "# HELP tend_processes_exited_total Processes that ended.\n"
	    "# TYPE tend_processes_exited_total counter\n"
	    "tend_processes_exited_total %llu\n"
	    "# HELP tend_orphans_reaped_total Processes reaped that tend did not launch.\n"
	    "# TYPE tend_orphans_reaped_total counter\n"
	    "tend_orphans_reaped_total %llu\n"
	    "# HELP tend_bytes_stored_total Output bytes stored.\n"
	    "# TYPE tend_bytes_stored_total counter\n"
	    "tend_bytes_stored_total %llu\n"
	    "# HELP tend_bytes_dropped_total Output bytes that could not be stored.\n"
	    "# TYPE tend_bytes_dropped_total counter\n"
	    "tend_bytes_dropped_total %llu\n"
	    "# HELP tend_connections Open client connections.\n"
	    "# TYPE tend_connections gauge\n"
	    "tend_connections %d\n"
	    "# HELP tend_followers Active output streams.\n"
	    "# TYPE tend_followers gauge\n"
	    "tend_followers %llu\n",
	    (unsigned long long)st.started, st.running,
	    (unsigned long long)st.exited, (unsigned long long)st.orphans,
	    (unsigned long long)st.stored, (unsigned long long)st.dropped,
	    http_server_nconns(a->srv), (unsigned long long)a->followers);
	if (rc == -1 || buf_printf(&b,
	    "# HELP tend_log_lines_dropped_total Agent log lines stderr could not take.\n"
	    "# TYPE tend_log_lines_dropped_total counter\n"
	    "tend_log_lines_dropped_total %llu\n"
	    "# HELP tend_state_degraded 1 while the state dir refuses writes "
	    "(see /v1/health).\n"
	    "# TYPE tend_state_degraded gauge\n"
	    "tend_state_degraded %d\n"
	    "# HELP tend_cgroups 1 when each process and terminal has a cgroup "
	    "(see /v1/health).\n"
	    "# TYPE tend_cgroups gauge\n"
	    "tend_cgroups %d\n"
	    "# HELP tend_cgroup_cpu_seconds_total CPU time of ended processes "
	    "and terminals, from their cgroups.\n"
	    "# TYPE tend_cgroup_cpu_seconds_total counter\n"
	    "tend_cgroup_cpu_seconds_total %.6f\n"
	    "# HELP tend_oom_killed_total Processes and terminals the OOM "
	    "killer ended.\n"
	    "# TYPE tend_oom_killed_total counter\n"
	    "tend_oom_killed_total %llu\n"
	    "# HELP tend_frozen Processes and terminals frozen now.\n"
	    "# TYPE tend_frozen gauge\n"
	    "tend_frozen %d\n",
	    (unsigned long long)log_dropped(),
	    proctab_state_error(t, NULL, NULL) != 0, cgroups_on(),
	    (double)(t->jobs.cpu_usec + a->terms->jobs.cpu_usec) / 1e6,
	    (unsigned long long)(t->jobs.oom_killed +
	    a->terms->jobs.oom_killed),
	    t->jobs.nfrozen + a->terms->jobs.nfrozen) == -1) {
		buf_free(&b);
		http_reply_error(c, 503, "busy", "out of memory");
		return;
	}
	http_reply(c, 200, "text/plain; version=0.0.4", b.data, b.len);
	buf_free(&b);
}
