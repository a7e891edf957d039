/*
 * test_membership_digest.c — the member list's digest, which a member
 * sends every tick instead of its whole list (membership_internal.h): the
 * same for two lists that hold the same entries in any order, and another
 * for any change gossip would carry (an up-number, a status, a version, a
 * type, the protocol a member states), none for what is not gossiped.
 */
#include <criterion/criterion.h>
#include <string.h>

#include "cluster/member_protocol.h"
#include "cluster/membership_internal.h"

static void set_member(struct member *e, const char *node, uint32_t up, enum member_status status, uint32_t version)
{
	memset(e, 0, sizeof *e);
	snprintf(e->node, sizeof e->node, "%s", node);
	e->up_number = up;
	e->status = status;
	e->version = version;
	snprintf(e->types[0], sizeof e->types[0], "counter");
	e->ntypes = 1;
	e->protocol = MEMBER_PROTOCOL;
}

/* A list of three members: a, b, c, in the order `order` names them. */
static void make_list(struct membership *m, struct member *slots, const char *order)
{
	memset(m, 0, sizeof *m);
	m->members = slots;
	for (size_t k = 0; order[k] != '\0'; k++) {
		char node[32];
		snprintf(node, sizeof node, "%c@127.0.0.1", order[k]);
		set_member(&slots[k], node, (uint32_t)(order[k] - 'a' + 1), MEMBER_UP, 3);
	}
	m->n = m->cap = strlen(order);
}

Test(membership_digest, the_same_entries_in_any_order_have_the_same_digest)
{
	struct member s1[3], s2[3];
	struct membership a, b;
	make_list(&a, s1, "abc");
	make_list(&b, s2, "cab");
	uint64_t d = membership_digest(&a);
	cr_assert_neq(d, 0);
	cr_assert_eq(membership_digest(&b), d);
}

Test(membership_digest, every_gossiped_change_changes_it_and_nothing_else_does)
{
	struct member s1[3], s2[3];
	struct membership a, b;
	make_list(&a, s1, "abc");
	uint64_t d = membership_digest(&a);
	for (int change = 0; change < 6; change++) {
		make_list(&b, s2, "abc");
		switch (change) {
		case 0: s2[1].up_number++; break;
		case 1: s2[1].status = MEMBER_LEAVING; break;
		case 2: s2[1].version++; break;
		case 3: snprintf(s2[1].types[0], sizeof s2[1].types[0], "kv"); break;
		case 4: s2[1].protocol = MEMBER_PROTOCOL_OLDEST; break;
		default: b.n = 2; break; /* c left the list */
		}
		cr_assert_neq(membership_digest(&b), d, "change %d", change);
	}
	/* What this member has seen of another is not gossiped. */
	make_list(&b, s2, "abc");
	s2[1].unreachable = true;
	s2[1].last_heard = 12345;
	s2[1].down_at = 7;
	cr_assert_eq(membership_digest(&b), d);
}
