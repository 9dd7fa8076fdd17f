/*
 * logstore_json.c: a live store as JSON and back, for the agent's
 * handover (core/handover.c): its counters, and its files by fd number,
 * which an execve keeps.  Records still pending are written and every
 * record is made final first, so that nothing but numbers and open
 * files needs to cross.
 */
#include <cjson/cJSON.h>

#include "logstore.h"

static void	ls_num(cJSON *, const char *, uint64_t);
static void	ls_pair(cJSON *, const char *, const uint64_t[LS_NSTREAMS]);
static uint64_t	ls_get(const cJSON *, const char *);
static int	ls_getfd(const cJSON *, const char *);
static void	ls_getpair(const cJSON *, const char *, uint64_t[LS_NSTREAMS]);

/* A number as JSON holds it exactly (counters stay far below 2^53). */
static void
ls_num(cJSON *o, const char *k, uint64_t v)
{
	cJSON_AddNumberToObject(o, k, (double)v);
}

static void
ls_pair(cJSON *o, const char *k, const uint64_t v[LS_NSTREAMS])
{
	cJSON	*a;
	int	 i;

	if ((a = cJSON_AddArrayToObject(o, k)) == NULL)
		return;
	for (i = 0; i < LS_NSTREAMS; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
}

cJSON *
logstore_save(struct logstore *ls)
{
	cJSON	*o, *fds;
	int	 i;

	if (!ls->ro)
		(void)logstore_flush(ls);
	logstore_seal(ls);
	if ((o = cJSON_CreateObject()) == NULL)
		return NULL;
	/* Keys ending in Fd or Fds name fds handed over (handover.c). */
	if ((fds = cJSON_AddArrayToObject(o, "streamFds")) != NULL)
		for (i = 0; i < LS_NSTREAMS; i++)
			cJSON_AddItemToArray(fds,
			    cJSON_CreateNumber(ls->fd[i]));
	cJSON_AddNumberToObject(o, "indexFd", ls->idxfd);
	cJSON_AddNumberToObject(o, "dirFd", ls->dirfd);
	cJSON_AddNumberToObject(o, "nstreams", ls->nstreams);
	ls_pair(o, "start", ls->start);
	ls_pair(o, "end", ls->end);
	ls_pair(o, "punched", ls->punched);
	ls_num(o, "dropped", ls->dropped);
	ls_num(o, "nrec", ls->nrec);
	ls_num(o, "maxbytes", ls->maxbytes);
	cJSON_AddBoolToObject(o, "ro", ls->ro);
	ls_num(o, "handed", ls->handed);
	ls_num(o, "igone", ls->igone);
	ls_pair(o, "ibase", ls->ibase);
	ls_num(o, "irel", ls->irel);
	ls_pair(o, "irelbase", ls->irelbase);
	ls_num(o, "ipunched", ls->ipunched);
	cJSON_AddBoolToObject(o, "itrim", ls->itrim);
	cJSON_AddBoolToObject(o, "inopunch", ls->inopunch);
	ls_num(o, "tailSeq", ls->tail.seq);
	ls_num(o, "tailOffset", ls->tail.offset);
	ls_num(o, "tailLen", ls->tail.len);
	ls_num(o, "tailStream", ls->tail.stream);
	ls_num(o, "tailTs", (uint64_t)ls->tail.ts_ms);
	return o;
}

static uint64_t
ls_get(const cJSON *o, const char *k)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) && v->valuedouble > 0 ?
	    (uint64_t)v->valuedouble : 0;
}

static int
ls_getfd(const cJSON *o, const char *k)
{
	const cJSON	*v = cJSON_GetObjectItemCaseSensitive(o, k);

	return cJSON_IsNumber(v) ? v->valueint : -1;
}

static void
ls_getpair(const cJSON *o, const char *k, uint64_t v[LS_NSTREAMS])
{
	const cJSON	*a = cJSON_GetObjectItemCaseSensitive(o, k), *e;
	int		 i = 0;

	cJSON_ArrayForEach(e, a) {
		if (i >= LS_NSTREAMS)
			break;
		v[i++] = cJSON_IsNumber(e) && e->valuedouble > 0 ?
		    (uint64_t)e->valuedouble : 0;
	}
}

int
logstore_load(struct logstore *ls, const cJSON *o)
{
	const cJSON	*fds, *e;
	int		 i = 0, n;

	if (!cJSON_IsObject(o))
		return -1;
	n = (int)ls_get(o, "nstreams");
	if (n != ls->nstreams)
		return -1;
	fds = cJSON_GetObjectItemCaseSensitive(o, "streamFds");
	cJSON_ArrayForEach(e, fds) {
		if (i >= LS_NSTREAMS)
			break;
		ls->fd[i++] = cJSON_IsNumber(e) ? e->valueint : -1;
	}
	ls->idxfd = ls_getfd(o, "indexFd");
	ls->dirfd = ls_getfd(o, "dirFd");
	ls_getpair(o, "start", ls->start);
	ls_getpair(o, "end", ls->end);
	ls_getpair(o, "punched", ls->punched);
	ls->dropped = ls_get(o, "dropped");
	ls->nrec = ls_get(o, "nrec");
	ls->maxbytes = ls_get(o, "maxbytes");
	ls->ro = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "ro"));
	ls->handed = ls_get(o, "handed");
	ls->igone = ls_get(o, "igone");
	ls_getpair(o, "ibase", ls->ibase);
	ls->irel = ls_get(o, "irel");
	ls_getpair(o, "irelbase", ls->irelbase);
	ls->ipunched = ls_get(o, "ipunched");
	ls->itrim = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "itrim"));
	ls->inopunch = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o,
	    "inopunch"));
	ls->tail.seq = ls_get(o, "tailSeq");
	ls->tail.offset = ls_get(o, "tailOffset");
	ls->tail.len = (uint32_t)ls_get(o, "tailLen");
	ls->tail.stream = (uint32_t)ls_get(o, "tailStream");
	ls->tail.ts_ms = (int64_t)ls_get(o, "tailTs");
	ls->npend = 0;
	ls->reopen_len = 0;
	return 0;
}
