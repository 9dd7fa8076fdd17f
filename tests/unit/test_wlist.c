/*
 * wlist: parties removed, freed or added while the list is told.
 */
#include <check.h>
#include <stdlib.h>

#include "base/util.h"
#include "base/wlist.h"

Suite *wlist_suite(void);

struct party {
	struct wlist_link	 link;
	struct wlist_link	**head;
	struct party		*victim;	/* removed and freed when told */
	int			 told;
	bool			 heap;
	bool			 drop_all;	/* the owner goes away */
};

static void
tell(struct wlist_link *l, void *arg)
{
	struct party	*p = container_of(l, struct party, link);
	struct wlist_link *x;

	(void)arg;
	p->told++;
	if (p->victim != NULL) {
		wlist_del(p->head, &p->victim->link);
		if (p->victim->heap)
			free(p->victim);
		p->victim = NULL;
	}
	if (p->drop_all)
		while ((x = *p->head) != NULL)
			wlist_del(p->head, x);
}

START_TEST(removal_while_told)
{
	struct wlist_link	*head = NULL;
	struct party		 a = { 0 }, c = { 0 }, *b;

	ck_assert_ptr_nonnull(b = calloc(1, sizeof(*b)));
	b->heap = true;
	/* Told in the order c, b, a: c frees b, which is next. */
	a.head = b->head = c.head = &head;
	wlist_add(&head, &a.link);
	wlist_add(&head, &b->link);
	wlist_add(&head, &c.link);
	c.victim = b;
	ck_assert(wlist_walk(&head, tell, NULL));
	ck_assert_int_eq(c.told, 1);
	ck_assert_int_eq(a.told, 1);
	/* Only a and c are left, and a second walk tells both again. */
	ck_assert(wlist_walk(&head, tell, NULL));
	ck_assert_int_eq(c.told + a.told, 4);
	wlist_del(&head, &a.link);
	wlist_del(&head, &a.link);	/* twice: a no-op */
	ck_assert_ptr_eq(head, &c.link);
}
END_TEST

START_TEST(owner_gone_ends_the_walk)
{
	struct wlist_link	*head = NULL;
	struct party		 a = { 0 }, b = { 0 };

	a.head = b.head = &head;
	wlist_add(&head, &a.link);
	wlist_add(&head, &b.link);
	b.drop_all = true;
	ck_assert(!wlist_walk(&head, tell, NULL));
	ck_assert_int_eq(b.told, 1);
	ck_assert_int_eq(a.told, 0);
	ck_assert_ptr_null(head);
}
END_TEST

Suite *
wlist_suite(void)
{
	Suite	*s = suite_create("wlist");
	TCase	*tc = tcase_create("walk");

	tcase_add_test(tc, removal_while_told);
	tcase_add_test(tc, owner_gone_ends_the_walk);
	suite_add_tcase(s, tc);
	return s;
}
