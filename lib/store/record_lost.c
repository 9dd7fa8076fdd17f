/*
 * record_lost.c: an earlier boot's records that never got a final status
 * (running when their agent stopped, or before their first status was
 * written) are marked "lost", once: their status edited to say so, or
 * made from their meta.json when they have none.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/codec.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "record_int.h"

static cJSON	*record_status_from_meta(const struct record_kind_desc *,
		    int, const char *, const char *);
static cJSON	*record_lost_status(const struct record_kind_desc *, int,
		    const char *, const char *, const char *, cJSON *);
static void	record_lose(const struct record_kind_desc *, int,
		    const char *, const char *, const char *, cJSON *);
static void	record_set_size(cJSON *, int, const char *, const char *);

/* ------------------------------------------------------------------ */
/* Lost records */

/*
 * A record whose boot ended while it was running (or before its first
 * status was written) can never get a real exit: say so, once.
 */
void
record_mark_lost(int procsfd, const char *boot)
{
	record_mark_lost_kind(RECORD_PROC, procsfd, boot);
}

void
record_mark_lost_kind(enum record_kind kind, int procsfd, const char *boot)
{
	const struct record_kind_desc *k = &record_kinds[kind];
	struct dirent	*de;
	const cJSON	*state;
	char		 now[TIME_MAX];
	cJSON		*j;
	DIR		*d;
	int		 dfd;

	if ((d = record_opendirs(procsfd)) == NULL)
		return;
	codec_time(now, codec_now_ms());
	while ((de = readdir(d)) != NULL) {
		/* A link planted as a record is none: never written through. */
		if ((dfd = record_opendir(procsfd, de->d_name)) == -1)
			continue;
		j = record_read_json(dfd, RECORD_STATUS);
		state = cJSON_GetObjectItemCaseSensitive(j, k->state);
		if (j != NULL && cJSON_IsString(state) &&
		    strcmp(state->valuestring, "running") != 0)
			cJSON_Delete(j);
		else
			record_lose(k, dfd, de->d_name, boot, now, j);
		close(dfd);
	}
	closedir(d);
}

/*
 * The lost status of one record: its last status j edited (NULL: one
 * made from its meta) to say that its exit is unknown, and its streams'
 * sizes counted from the files, which its last status may predate.
 */
static cJSON *
record_lost_status(const struct record_kind_desc *k, int dfd, const char *id,
    const char *boot, const char *now, cJSON *j)
{
	char	 msg[160];
	cJSON	*err, *pol;
	int	 i;

	if (j == NULL)
		j = record_status_from_meta(k, dfd, id, boot);
	snprintf(msg, sizeof(msg), "the agent of boot %s stopped before the "
	    "%s ended; its exit is unknown", boot, k->what);
	cJSON_DeleteItemFromObjectCaseSensitive(j, k->state);
	cJSON_AddStringToObject(j, k->state, "error");
	err = cJSON_CreateObject();
	cJSON_AddStringToObject(err, "code", "lost");
	cJSON_AddStringToObject(err, "message", msg);
	cJSON_DeleteItemFromObjectCaseSensitive(j, "error");
	cJSON_AddItemToObject(j, "error", err);
	cJSON_DeleteItemFromObjectCaseSensitive(j, "endedAt");
	cJSON_AddStringToObject(j, "endedAt", now);
	/* A restart policy is said, not taken up: no next run, no wait. */
	if (cJSON_IsObject(pol = cJSON_GetObjectItemCaseSensitive(j,
	    "restart"))) {
		cJSON_DeleteItemFromObjectCaseSensitive(pol, "state");
		cJSON_DeleteItemFromObjectCaseSensitive(pol, "nextRestartAt");
		cJSON_AddStringToObject(pol, "state", "lost");
	}
	for (i = 0; i < k->nstreams; i++)
		record_set_size(j, dfd, k->streams[i], k->size[i]);
	return j;
}

void	(*record_lost_hook)(const char *, const char *, const char *);

/* Write the lost status of one record: from its last status j, or its meta. */
static void
record_lose(const struct record_kind_desc *k, int dfd, const char *id,
    const char *boot, const char *now, cJSON *j)
{
	char	*s;

	j = record_lost_status(k, dfd, id, boot, now, j);
	if ((s = cJSON_PrintUnformatted(j)) != NULL) {
		if (fsutil_write_atomic(dfd, RECORD_STATUS, s, strlen(s),
		    true) == -1)
			log_warn("event=lost_write_failed boot=%s id=%s", boot,
			    id);
		else {
			log_info("event=%s_lost boot=%s id=%s", k->what, boot,
			    id);
			if (record_lost_hook != NULL)
				record_lost_hook(k->what, boot, id);
		}
	}
	free(s);
	cJSON_Delete(j);
}

static void
record_set_size(cJSON *j, int dfd, const char *file, const char *field)
{
	struct stat	st;

	/* A link planted as the file tells nothing of the record. */
	if (fstatat(dfd, file, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !S_ISREG(st.st_mode))
		return;
	cJSON_DeleteItemFromObjectCaseSensitive(j, field);
	cJSON_AddNumberToObject(j, field, (double)st.st_size);
}

/*
 * A record that never got its first status (its agent died within the
 * first moments): what meta.json says of it.
 */
static cJSON *
record_status_from_meta(const struct record_kind_desc *k, int dfd,
    const char *id, const char *boot)
{
	const struct {
		const char	*meta, *status;
	} fields[] = {
		{ "argv", "command" }, { "cwd", "cwd" },
		{ "argvBytes", "commandBytes" }, { "cwdBytes", "cwdBytes" },
		{ "created_at", k->created }, { "tags", "tags" },
	};
	const cJSON	*x;
	cJSON		*j, *m;
	size_t		 i;

	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "id", id);
	m = record_read_json(dfd, RECORD_META);
	for (i = 0; m != NULL && i < sizeof(fields) / sizeof(fields[0]); i++)
		if ((x = cJSON_GetObjectItemCaseSensitive(m, fields[i].meta)))
			cJSON_AddItemToObject(j, fields[i].status,
			    cJSON_Duplicate(x, 1));
	cJSON_Delete(m);
	cJSON_AddStringToObject(j, "bootId", boot);
	if (k == &record_kinds[RECORD_PROC])
		cJSON_AddNumberToObject(j, "droppedBytes", 0);
	return j;
}
