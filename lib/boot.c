/*
 * boot.c: boot IDs, boot.json, and the earlier boots in the state dir.
 */
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "boot.h"
#include "codec.h"
#include "fsutil.h"
#include "tunables.h"
#include "log.h"

struct boot_ent {
	char	id[BOOT_ID_LEN + 1];
	char	started[TIME_MAX];
};

static void	boot_mark_lost(int procsfd, const char *boot);
static int	boot_cmp(const void *, const void *);
static void	boot_set_size(cJSON *, int, const char *, const char *);
static cJSON	*boot_status_from_meta(int, const char *, const char *);

int
boot_new_id(char out[BOOT_ID_LEN + 1])
{
	unsigned char	r[16];
	size_t		got = 0;
	ssize_t		n;

	while (got < sizeof(r)) {
		n = getrandom(r + got, sizeof(r) - got, 0);
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			return -1;
		got += n;
	}
	codec_hex(out, r, sizeof(r));
	return 0;
}

bool
boot_id_valid(const char *s)
{
	size_t	i;

	for (i = 0; i < BOOT_ID_LEN; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[i] == '\0';
}

int
boot_create(int statefd, const char *id, int *procsfd)
{
	char		 path[64], now[TIME_MAX], kboot[64] = "";
	char		*s, *k;
	cJSON		*j;
	int		 bfd, rc, saved;

	*procsfd = -1;
	snprintf(path, sizeof(path), "boots/%s", id);
	if ((bfd = fsutil_opendirs(statefd, path)) == -1)
		return -1;
	if ((*procsfd = fsutil_opendirs(bfd, "procs")) == -1) {
		saved = errno;
		close(bfd);
		errno = saved;
		return -1;
	}
	if ((k = fsutil_read(AT_FDCWD, "/proc/sys/kernel/random/boot_id",
	    sizeof(kboot) - 1, NULL)) != NULL) {
		snprintf(kboot, sizeof(kboot), "%.*s", (int)strcspn(k, "\n"), k);
		free(k);
	}
	codec_time(now, codec_now_ms());
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "boot_id", id);
	cJSON_AddStringToObject(j, "started_at", now);
	cJSON_AddStringToObject(j, "kernel_boot_id", kboot);
	cJSON_AddStringToObject(j, "version", TEND_VERSION);
	cJSON_AddNumberToObject(j, "pid", getpid());
	s = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	if (s == NULL)
		errno = ENOMEM;
	rc = s ? fsutil_write_atomic(bfd, "boot.json", s, strlen(s), true) : -1;
	saved = errno;
	free(s);
	close(bfd);
	if (rc == -1) {
		close(*procsfd);
		*procsfd = -1;
	}
	errno = saved;
	return rc;
}

int
boot_open_procs(int statefd, const char *id)
{
	char	path[64];

	if (!boot_id_valid(id)) {
		errno = ENOENT;
		return -1;
	}
	snprintf(path, sizeof(path), "boots/%s/procs", id);
	return fsutil_open(statefd, path, O_RDONLY | O_DIRECTORY, 0);
}

static int
boot_cmp(const void *a, const void *b)
{
	const struct boot_ent	*x = a, *y = b;

	/* Newest first; RFC 3339 strings of one format sort as times. */
	return strcmp(y->started, x->started);
}

void
boot_scan(int statefd, const char *current, int keep)
{
	struct boot_ent	*ents = NULL, *e;
	struct dirent	*de;
	DIR		*d;
	char		 path[64], *s;
	cJSON		*j, *st;
	size_t		 n = 0, cap = 0, i;
	int		 bootsfd, procsfd;

	if ((bootsfd = fsutil_open(statefd, "boots", O_RDONLY | O_DIRECTORY,
	    0)) == -1)
		return;
	if ((d = fdopendir(bootsfd)) == NULL) {
		close(bootsfd);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (!boot_id_valid(de->d_name) || strcmp(de->d_name, current) == 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			if ((e = realloc(ents, cap * sizeof(*ents))) == NULL)
				break;
			ents = e;
		}
		e = &ents[n++];
		memcpy(e->id, de->d_name, sizeof(e->id));	/* valid: 32+NUL */
		e->started[0] = '\0';
		snprintf(path, sizeof(path), "%s/boot.json", e->id);
		if ((s = fsutil_read(bootsfd, path, 4096, NULL)) != NULL) {
			j = cJSON_Parse(s);
			st = cJSON_GetObjectItemCaseSensitive(j, "started_at");
			if (cJSON_IsString(st))
				snprintf(e->started, sizeof(e->started), "%s",
				    st->valuestring);
			cJSON_Delete(j);
			free(s);
		}
	}
	if (n > 1)
		qsort(ents, n, sizeof(*ents), boot_cmp);
	for (i = 0; i < n; i++) {
		if (keep <= 0 || i + 1 >= (size_t)keep) {
			log_info("event=boot_removed boot=%s", ents[i].id);
			if (fsutil_rmtree(bootsfd, ents[i].id) == -1)
				log_warn("event=boot_remove_failed boot=%s",
				    ents[i].id);
			continue;
		}
		if ((procsfd = boot_open_procs(statefd, ents[i].id)) == -1)
			continue;
		boot_mark_lost(procsfd, ents[i].id);
		close(procsfd);
	}
	free(ents);
	closedir(d);
}

static void
boot_set_size(cJSON *j, int dfd, const char *file, const char *field)
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
boot_status_from_meta(int dfd, const char *id, const char *boot)
{
	static const struct {
		const char	*meta, *status;
	} fields[] = {
		{ "argv", "command" }, { "cwd", "cwd" },
		{ "created_at", "startedAt" }, { "tags", "tags" },
	};
	const cJSON	*x;
	cJSON		*j, *m;
	char		*s;
	size_t		 i;

	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "id", id);
	s = fsutil_read(dfd, "meta.json", 1 << 20, NULL);
	m = s ? cJSON_Parse(s) : NULL;
	free(s);
	for (i = 0; m != NULL && i < sizeof(fields) / sizeof(fields[0]); i++)
		if ((x = cJSON_GetObjectItemCaseSensitive(m, fields[i].meta)))
			cJSON_AddItemToObject(j, fields[i].status,
			    cJSON_Duplicate(x, 1));
	cJSON_Delete(m);
	cJSON_AddStringToObject(j, "bootId", boot);
	cJSON_AddNumberToObject(j, "droppedBytes", 0);
	return j;
}

/*
 * A record whose boot ended while it was running (or before its first
 * status was written) can never get a real exit: say so, once.
 */
static void
boot_mark_lost(int procsfd, const char *boot)
{
	struct dirent	*de;
	DIR		*d;
	char		*s, msg[160], now[TIME_MAX];
	cJSON		*j, *state, *err;
	int		 fd, dfd;

	if ((fd = dup(procsfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return;
	}
	codec_time(now, codec_now_ms());
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		/* A link planted as a record is none: never written through. */
		if ((dfd = fsutil_open(procsfd, de->d_name, O_RDONLY |
		    O_DIRECTORY, 0)) == -1)
			continue;
		s = fsutil_read(dfd, "status.json", 1 << 20, NULL);
		j = s ? cJSON_Parse(s) : NULL;
		free(s);
		state = cJSON_GetObjectItemCaseSensitive(j, "state");
		if (j != NULL && cJSON_IsString(state) &&
		    strcmp(state->valuestring, "running") != 0) {
			cJSON_Delete(j);
			close(dfd);
			continue;
		}
		if (j == NULL)
			j = boot_status_from_meta(dfd, de->d_name, boot);
		snprintf(msg, sizeof(msg), "the agent of boot %s stopped "
		    "before the process ended; its exit is unknown", boot);
		cJSON_DeleteItemFromObjectCaseSensitive(j, "state");
		cJSON_AddStringToObject(j, "state", "error");
		err = cJSON_CreateObject();
		cJSON_AddStringToObject(err, "code", "lost");
		cJSON_AddStringToObject(err, "message", msg);
		cJSON_DeleteItemFromObjectCaseSensitive(j, "error");
		cJSON_AddItemToObject(j, "error", err);
		cJSON_DeleteItemFromObjectCaseSensitive(j, "endedAt");
		cJSON_AddStringToObject(j, "endedAt", now);
		/* The last status may predate the output: count the files. */
		boot_set_size(j, dfd, "stdout", "stdoutBytes");
		boot_set_size(j, dfd, "stderr", "stderrBytes");
		if ((s = cJSON_PrintUnformatted(j)) != NULL) {
			if (fsutil_write_atomic(dfd, "status.json", s, strlen(s),
			    true) == -1)
				log_warn("event=lost_write_failed boot=%s id=%s",
				    boot, de->d_name);
			else
				log_info("event=process_lost boot=%s id=%s",
				    boot, de->d_name);
		}
		free(s);
		cJSON_Delete(j);
		close(dfd);
	}
	closedir(d);
}
