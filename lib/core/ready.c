/*
 * ready.c: a launch's readiness condition, watched until it settles.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/codec.h"
#include "base/tunables.h"
#include "base/util.h"
#include "events.h"
#include "portwatch.h"
#include "ready.h"
#include "store/logstore.h"

#define READY_STR_(x)	#x
#define READY_STR(x)	READY_STR_(x)

struct ready {
	struct job_watch	 w;
	struct job		*job;		/* NULL until started */
	struct ready		*pnext, *pprev;	/* awaiting a port */
	bool			 on_ports;
	enum ready_state	 state;
	int			 port;
	bool			 port_ok, log_ok;
	char			*log;
	size_t			 loglen;
	unsigned		 streams;
	uint64_t		 timeout_ms;
	int64_t			 ready_ms;	/* epoch */
	uint64_t		 off[LS_NSTREAMS];	/* read up to */
	char			*tail[LS_NSTREAMS];	/* last loglen-1 bytes */
	size_t			 ntail[LS_NSTREAMS];
	ev_timer		 timer;
	struct ready_wait	*waits;
};

static struct ready	*ready_ports;	/* awaiting a port */

static void	ready_settle(struct ready *, enum ready_state);

const char *
ready_state_name(enum ready_state s)
{
	switch (s) {
	case READY_WAITING:
		return "waiting";
	case READY_READY:
		return "ready";
	case READY_TIMEOUT:
		return "timeout";
	case READY_EXITED:
		return "exited";
	}
	return "?";
}

int
ready_opts_parse(const cJSON *j, struct ready_opts *o, const char **why)
{
	const cJSON	*f;

	memset(o, 0, sizeof(*o));
	o->streams = 1u << LS_STDOUT | 1u << LS_STDERR;
	if (!cJSON_IsObject(j)) {
		*why = "ready: must be an object";
		return -1;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "port")) != NULL) {
		if (!cJSON_IsNumber(f) || !(f->valuedouble >= 1 &&
		    f->valuedouble <= 65535) ||
		    f->valuedouble != (int)f->valuedouble) {
			*why = "ready.port: must be an integer from 1 to 65535";
			return -1;
		}
		o->port = (int)f->valuedouble;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "log")) != NULL) {
		if (!cJSON_IsString(f) || f->valuestring[0] == '\0' ||
		    strlen(f->valuestring) > READY_LOG_MAX) {
			*why = "ready.log: must be a non-empty string of at "
			    "most " READY_STR(READY_LOG_MAX) " bytes";
			return -1;
		}
		o->log = f->valuestring;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "stream")) != NULL) {
		if (!cJSON_IsString(f) || o->log == NULL ||
		    (strcmp(f->valuestring, "stdout") != 0 &&
		    strcmp(f->valuestring, "stderr") != 0 &&
		    strcmp(f->valuestring, "both") != 0)) {
			*why = "ready.stream: must be stdout, stderr or both, "
			    "with ready.log";
			return -1;
		}
		if (strcmp(f->valuestring, "stdout") == 0)
			o->streams = 1u << LS_STDOUT;
		else if (strcmp(f->valuestring, "stderr") == 0)
			o->streams = 1u << LS_STDERR;
	}
	if ((f = cJSON_GetObjectItemCaseSensitive(j, "timeoutMs")) != NULL) {
		if (!cJSON_IsNumber(f) || !(f->valuedouble >= 1 &&
		    f->valuedouble <= PROC_MS_MAX) ||
		    f->valuedouble != (double)(uint64_t)f->valuedouble) {
			*why = "ready.timeoutMs: must be a positive number of "
			    "milliseconds";
			return -1;
		}
		o->timeout_ms = (uint64_t)f->valuedouble;
	}
	if (o->port == 0 && o->log == NULL) {
		*why = "ready: needs port or log";
		return -1;
	}
	o->on = true;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Ports */

static void
ready_ports_del(struct ready *r)
{
	if (!r->on_ports)
		return;
	if (r->pprev != NULL)
		r->pprev->pnext = r->pnext;
	else
		ready_ports = r->pnext;
	if (r->pnext != NULL)
		r->pnext->pprev = r->pprev;
	r->pnext = r->pprev = NULL;
	r->on_ports = false;
	portwatch_fast(-1);
}

/* After each refresh while a port is awaited (portwatch_hook). */
static void
ready_ports_check(void)
{
	struct ready	*r, *next;

	for (r = ready_ports; r != NULL; r = next) {
		next = r->pnext;
		if (!portwatch_owns(r->port, r->job))
			continue;
		r->port_ok = true;
		ready_ports_del(r);
		if (r->log_ok)
			ready_settle(r, READY_READY);
	}
}

/* ------------------------------------------------------------------ */
/* Output */

/* New bytes of stream s against the substring: true on a match. */
static bool
ready_log_stream(struct ready *r, struct logstore *ls, int s)
{
	char	 buf[READY_READ + READY_LOG_MAX];
	size_t	 keep = r->loglen - 1, have;
	ssize_t	 got;

	if (r->off[s] < ls->start[s]) {		/* released: lost to us */
		r->off[s] = ls->start[s];
		r->ntail[s] = 0;
	}
	while (r->off[s] < ls->end[s]) {
		if ((have = r->ntail[s]) > 0)
			memcpy(buf, r->tail[s], have);
		if ((got = logstore_pread(ls, s, buf + have, READY_READ,
		    r->off[s])) <= 0)
			return false;
		r->off[s] += (uint64_t)got;
		have += (size_t)got;
		if (memmem(buf, have, r->log, r->loglen) != NULL)
			return true;
		if ((r->ntail[s] = have < keep ? have : keep) > 0)
			memcpy(r->tail[s], buf + have - r->ntail[s],
			    r->ntail[s]);
	}
	return false;
}

static void
ready_log_check(struct ready *r)
{
	struct logstore	*ls;
	int		 s;

	if (r->log_ok || r->log == NULL || r->job == NULL ||
	    (ls = job_store(r->job)) == NULL)
		return;
	for (s = 0; s < LS_NSTREAMS && !r->log_ok; s++)
		if (r->streams & (1u << s))
			r->log_ok = ready_log_stream(r, ls, s);
	if (r->log_ok && r->port_ok)
		ready_settle(r, READY_READY);
}

/* ------------------------------------------------------------------ */
/* Settling */

static void
ready_settle(struct ready *r, enum ready_state st)
{
	struct ready_wait	*w;
	cJSON			*o;

	if (r->state != READY_WAITING)
		return;
	r->state = st;
	ready_ports_del(r);
	ev_timer_stop(r->job->tab->loop, &r->timer);
	if (r->w.job != NULL)
		job_watch_del(&r->w);
	if (st == READY_READY) {
		r->ready_ms = codec_now_ms();
		if ((o = cJSON_CreateObject()) != NULL) {
			cJSON_AddStringToObject(o, "id", r->job->id);
			cJSON_AddNumberToObject(o, "pid", (double)r->job->pid);
			cJSON_AddNumberToObject(o, "readyAt",
			    (double)r->ready_ms);
			events_emit("process.ready", o);
		}
	}
	while ((w = r->waits) != NULL) {
		r->waits = w->next;
		w->next = NULL;
		w->fn(w);
	}
}

static void
ready_watch_cb(struct job_watch *w, enum job_event e)
{
	struct ready	*r = container_of(w, struct ready, w);

	switch (e) {
	case JOB_EV_OUTPUT:
		ready_log_check(r);
		break;
	case JOB_EV_END:
		ready_log_check(r);	/* what it wrote last may be it */
		if (r->state == READY_WAITING)
			ready_settle(r, READY_EXITED);
		break;
	case JOB_EV_GONE:
		ready_settle(r, READY_EXITED);
		break;
	default:
		break;
	}
}

static void
ready_timer_cb(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct ready	*r = container_of(t, struct ready, timer);

	(void)loop;
	(void)revents;
	ready_log_check(r);
	if (r->state == READY_WAITING)
		ready_settle(r, READY_TIMEOUT);
}

/* ------------------------------------------------------------------ */
/* Interface */

struct ready *
ready_new(const struct ready_opts *o)
{
	struct ready	*r;
	int		 s;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->port = o->port;
	r->port_ok = o->port == 0;
	r->log_ok = o->log == NULL;
	r->streams = o->streams;
	r->timeout_ms = o->timeout_ms;
	if (o->log != NULL) {
		r->loglen = strlen(o->log);
		if ((r->log = strdup(o->log)) == NULL)
			goto fail;
		for (s = 0; s < LS_NSTREAMS; s++)
			if (r->loglen > 1 &&
			    (r->tail[s] = malloc(r->loglen - 1)) == NULL)
				goto fail;
	}
	return r;
fail:
	ready_free(r);
	errno = ENOMEM;
	return NULL;
}

void
ready_start(struct ready *r, struct job *j)
{
	r->job = j;
	ev_timer_init(&r->timer, ready_timer_cb, r->timeout_ms / 1e3, 0.);
	if (r->timeout_ms > 0)
		ev_timer_start(j->tab->loop, &r->timer);
	job_watch_add(j, &r->w, ready_watch_cb);
	if (!r->port_ok) {
		r->pnext = ready_ports;
		if (ready_ports != NULL)
			ready_ports->pprev = r;
		ready_ports = r;
		r->on_ports = true;
		portwatch_hook(ready_ports_check);
		portwatch_fast(1);
	}
}

void
ready_free(struct ready *r)
{
	int	s;

	if (r == NULL)
		return;
	ready_ports_del(r);
	if (r->job != NULL)
		ev_timer_stop(r->job->tab->loop, &r->timer);
	if (r->w.job != NULL)
		job_watch_del(&r->w);
	for (s = 0; s < LS_NSTREAMS; s++)
		free(r->tail[s]);
	free(r->log);
	free(r);
}

enum ready_state
ready_state(const struct ready *r)
{
	return r->state;
}

void
ready_status(const struct ready *r, cJSON *st)
{
	cJSON_AddBoolToObject(st, "ready", r->state == READY_READY);
	if (r->state == READY_READY)
		cJSON_AddNumberToObject(st, "readyAt", (double)r->ready_ms);
	cJSON_AddStringToObject(st, "readiness", ready_state_name(r->state));
}

void
ready_wait_add(struct ready *r, struct ready_wait *w,
    void (*fn)(struct ready_wait *))
{
	w->fn = fn;
	w->next = r->waits;
	r->waits = w;
}

void
ready_wait_del(struct ready *r, struct ready_wait *w)
{
	struct ready_wait	**pp;

	for (pp = &r->waits; *pp != NULL; pp = &(*pp)->next)
		if (*pp == w) {
			*pp = w->next;
			w->next = NULL;
			return;
		}
}
