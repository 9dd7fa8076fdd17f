/*
 * util.h: the few macros every module may use.
 */
#ifndef TEND_UTIL_H
#define TEND_UTIL_H

#include <stddef.h>

/* The struct of type t whose member m is at p (a watcher in its owner). */
#define container_of(p, t, m)	((t *)((char *)(p) - offsetof(t, m)))

#define nitems(a)		(sizeof(a) / sizeof((a)[0]))

#endif
