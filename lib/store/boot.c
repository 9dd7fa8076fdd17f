/*
 * boot.c: boot IDs, boots/<id>/boot.json and its procs directory, and
 * the scan of earlier boots at start: the newest kept, their records
 * marked lost where they ended unfinished (record_mark_lost), the rest
 * removed.  What a record holds is record's.
 */
#include <sys/random.h>
#include <sys/utsname.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "boot.h"
#include "base/codec.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/tunables.h"
#include "record.h"

struct boot_ent {
	char	id[BOOT_ID_LEN + 1];
	char	started[TIME_MAX];
};

static int	boot_cmp(const void *, const void *);

#ifndef GRND_INSECURE
#define GRND_INSECURE	0x0004
#endif

/* n bytes of getrandom(2) with flags; -1 with errno on the first failure. */
static int
boot_getrandom(unsigned char *r, size_t n, unsigned flags)
{
	size_t	got = 0;
	ssize_t	k;

	while (got < n) {
		k = getrandom(r + got, n - got, flags);
		if (k == -1 && errno == EINTR)
			continue;
		if (k == -1)
			return -1;
		got += (size_t)k;
	}
	return 0;
}

/* n bytes of /dev/urandom, which never waits for the pool; -1 if none. */
static int
boot_urandom(unsigned char *r, size_t n)
{
	size_t	got = 0;
	ssize_t	k;
	int	fd;

	if ((fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	while (got < n) {
		k = read(fd, r + got, n - got);
		if (k == -1 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	(void)close(fd);
	return got == n ? 0 : -1;
}

static uint64_t
boot_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/*
 * The last resort, where the kernel gives no random bytes at all: the
 * wall clock in ns, the monotonic clock, the pid and a count of calls,
 * mixed.  Unique, which is all an ID needs, across boots and processes.
 */
static void
boot_clock(unsigned char r[16])
{
	static uint64_t	calls;
	struct timespec	rt, mono;
	uint64_t	x[2];

	(void)clock_gettime(CLOCK_REALTIME, &rt);
	(void)clock_gettime(CLOCK_MONOTONIC, &mono);
	calls++;
	x[0] = boot_mix((uint64_t)rt.tv_sec * 1000000000u +
	    (uint64_t)rt.tv_nsec + calls);
	x[1] = boot_mix(((uint64_t)mono.tv_sec * 1000000000u +
	    (uint64_t)mono.tv_nsec) ^ ((uint64_t)getpid() << 40) ^ calls);
	memcpy(r, x, 16);
}

/*
 * A boot ID (and a bridge session's) needs to be unique, not secret, so
 * it does not wait for the kernel's pool to be seeded: as a machine's
 * init, early in a boot with no hardware RNG, that wait is most of a
 * second, all of it before the agent is ready.  GRND_INSECURE (Linux
 * 5.6) never waits; an older kernel refuses it (EINVAL) and
 * GRND_NONBLOCK serves once the pool is seeded, /dev/urandom before;
 * with neither (no getrandom, no /dev), the clocks.
 */
void
boot_random(void *buf, size_t n)
{
	unsigned char	*p = buf, r[16];
	size_t		 off;

	if (boot_getrandom(p, n, GRND_INSECURE) == 0 ||
	    boot_getrandom(p, n, GRND_NONBLOCK) == 0 || boot_urandom(p, n) == 0)
		return;
	for (off = 0; off < n; off += sizeof(r)) {
		boot_clock(r);
		memcpy(p + off, r, n - off < sizeof(r) ? n - off : sizeof(r));
	}
}

int
boot_new_id(char out[BOOT_ID_LEN + 1])
{
	unsigned char	r[16];

	boot_random(r, sizeof(r));
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

/*
 * A boot taken up again (the agent's live upgrade) keeps the time it
 * started: boot.json is rewritten for the new binary's version and pid.
 */
static void
boot_started_at(int bfd, char now[TIME_MAX])
{
	const char	*t;
	char		*s;
	cJSON		*j;

	if ((s = fsutil_read(bfd, "boot.json", 4096, NULL)) == NULL)
		return;
	j = cJSON_Parse(s);
	free(s);
	t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(j,
	    "started_at"));
	if (t != NULL && strlen(t) < TIME_MAX)
		memcpy(now, t, strlen(t) + 1);
	cJSON_Delete(j);
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
	boot_started_at(bfd, now);
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
	/* Not synced here: the caller's first syncfs makes it durable. */
	rc = s ? fsutil_write_atomic(bfd, "boot.json", s, strlen(s), false) : -1;
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

int
boot_open_terms(int statefd, const char *id, bool create)
{
	char	path[64];

	if (!boot_id_valid(id)) {
		errno = ENOENT;
		return -1;
	}
	snprintf(path, sizeof(path), "boots/%s/terms", id);
	if (create)
		return fsutil_opendirs(statefd, path);
	return fsutil_open(statefd, path, O_RDONLY | O_DIRECTORY, 0);
}

/* Records of one kind under a retained boot become lost, if they must. */
static void
boot_lose(int statefd, const char *id)
{
	int	fd;

	if ((fd = boot_open_procs(statefd, id)) != -1) {
		record_mark_lost(fd, id);
		close(fd);
	}
	if ((fd = boot_open_terms(statefd, id, false)) != -1) {
		record_mark_lost_kind(RECORD_TERM, fd, id);
		close(fd);
	}
}

static int
boot_cmp(const void *a, const void *b)
{
	const struct boot_ent	*x = a, *y = b;

	/* Newest first; RFC 3339 strings of one format sort as times. */
	return strcmp(y->started, x->started);
}

static char	boot_prev[BOOT_ID_LEN + 1];

const char *
boot_previous(void)
{
	return boot_prev[0] != '\0' ? boot_prev : NULL;
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
	int		 bootsfd;

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
		if ((s = fsutil_read(bootsfd, path, BOOT_READ_MAX, NULL)) != NULL) {
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
	if (n > 0)
		memcpy(boot_prev, ents[0].id, sizeof(boot_prev));
	for (i = 0; i < n; i++) {
		if (keep <= 0 || i + 1 >= (size_t)keep) {
			log_info("event=boot_removed boot=%s", ents[i].id);
			if (fsutil_rmtree(bootsfd, ents[i].id) == -1)
				log_warn("event=boot_remove_failed boot=%s",
				    ents[i].id);
			continue;
		}
		boot_lose(statefd, ents[i].id);
	}
	free(ents);
	closedir(d);
}
