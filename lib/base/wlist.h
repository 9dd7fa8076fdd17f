/*
 * wlist: a list of parties that may change while it is told (watchers of
 * a process or a terminal, subscribers of a table).  In its callback a
 * party may remove itself or any other, or add one (at the head: told
 * from the next time).  The entry is embedded in its owner, which is
 * recovered with container_of.
 */
#ifndef TEND_WLIST_H
#define TEND_WLIST_H

#include <stdbool.h>

struct wlist_link {
	struct wlist_link	*next, *prev;
	bool			 linked;
	bool			 mark;	/* a walk's place, not a party */
};

void	wlist_add(struct wlist_link **head, struct wlist_link *);
/* Unlink; a no-op for an entry that is not on a list. */
void	wlist_del(struct wlist_link **head, struct wlist_link *);
/*
 * Call tell for every party.  false when the mark was unlinked in a
 * callback (the list's owner went away: wlist_del of every entry, the
 * mark included): the caller must not touch the owner then.
 */
bool	wlist_walk(struct wlist_link **head,
	    void (*tell)(struct wlist_link *, void *), void *arg);

#endif
