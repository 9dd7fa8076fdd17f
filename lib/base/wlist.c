/*
 * wlist.c: lists of parties that may change while they are told.
 *
 * The walk keeps its place with a mark linked after the party being
 * told: the next party is the mark's next, whatever was removed
 * meanwhile.  Other walks (a callback that causes another notification)
 * step over marks.
 */
#include <stddef.h>

#include "wlist.h"

void
wlist_add(struct wlist_link **head, struct wlist_link *l)
{
	l->prev = NULL;
	l->next = *head;
	if (*head != NULL)
		(*head)->prev = l;
	*head = l;
	l->linked = true;
}

void
wlist_del(struct wlist_link **head, struct wlist_link *l)
{
	if (!l->linked)
		return;
	if (l->prev != NULL)
		l->prev->next = l->next;
	else
		*head = l->next;
	if (l->next != NULL)
		l->next->prev = l->prev;
	l->next = l->prev = NULL;
	l->linked = false;
}

bool
wlist_walk(struct wlist_link **head, void (*tell)(struct wlist_link *,
    void *), void *arg)
{
	struct wlist_link	 mark = { .mark = true }, *l = *head;

	while (l != NULL) {
		if (l->mark) {
			l = l->next;
			continue;
		}
		mark.prev = l;
		mark.next = l->next;
		if (l->next != NULL)
			l->next->prev = &mark;
		l->next = &mark;
		mark.linked = true;
		tell(l, arg);
		if (!mark.linked)
			return false;
		l = mark.next;
		wlist_del(head, &mark);
	}
	return true;
}
