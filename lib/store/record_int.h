/*
 * record_int: what the files of the record module share and no one
 * else reads (callers see record.h): the names of a record's files and
 * what differs between the kinds of records.
 *
 * record.c owns a live record's files and reads an earlier boot's;
 * record_pool.c the directories made ahead by a child; record_lost.c
 * the marking of records whose boot ended under them.
 */
#ifndef TEND_RECORD_INT_H
#define TEND_RECORD_INT_H

#include <dirent.h>

#include <cjson/cJSON.h>

#include "record.h"

#define RECORD_META	"meta.json"
#define RECORD_STATUS	"status.json"

/* What differs between the kinds of records: their streams and fields. */
struct record_kind_desc {
	const char *const *streams;
	int		 nstreams;
	const char	*state;		/* the status field of the state */
	const char	*size[LS_NSTREAMS];	/* fields of stream sizes */
	const char	*created;	/* meta's created_at as a status field */
	const char	*what;
};

/* By enum record_kind. */
extern const struct record_kind_desc record_kinds[];

/* record_pool.c: the pool's next directory, renamed to r's ID. */
int	record_pool_take(struct record *);

/* record.c: an earlier boot's records. */
/* A record's directory under procsfd, never through a link. */
int	record_opendir(int procsfd, const char *id);
/* The records of a procs directory, for readdir. */
DIR	*record_opendirs(int procsfd);
/* A file of the record parsed, or NULL. */
cJSON	*record_read_json(int dfd, const char *name);

#endif
