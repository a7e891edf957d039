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
#include "etf/term_digest.h"

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

/* Change number `change` of a field gossip carries: the up-number, the
 * status, the version, a type, the protocol, one type more. */
#define GOSSIPED_CHANGES 6
static void change_gossiped_field(struct member *e, int change)
{
	switch (change) {
	case 0: e->up_number += 7; break;
	case 1: e->status = MEMBER_LEAVING; break;
	case 2: e->version++; break;
	case 3: snprintf(e->types[0], sizeof e->types[0], "kv"); break;
	case 4: e->protocol = MEMBER_PROTOCOL_OLDEST; break;
	default:
		snprintf(e->types[1], sizeof e->types[1], "echo");
		e->ntypes = 2;
		break;
	}
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

/* Every change gossip carries changes the digest, on a fresh list as in
 * place after a digest: each entry's part is kept between digests
 * (membership_list.c), and a field changed after one changes the next to
 * what a fresh list with the same change gives; changed back, the digest
 * is the first one again. Nothing else changes it. */
Test(membership_digest, every_gossiped_change_changes_it_fresh_or_in_place_and_nothing_else_does)
{
	struct member s1[3], s2[3];
	struct membership a, b;
	make_list(&a, s1, "abc");
	uint64_t first = membership_digest(&a);
	for (int change = 0; change < GOSSIPED_CHANGES; change++) {
		make_list(&b, s2, "abc");
		change_gossiped_field(&s2[2], change);
		uint64_t fresh = membership_digest(&b);
		cr_assert_neq(fresh, first, "change %d", change);
		change_gossiped_field(&s1[2], change);
		cr_assert_eq(membership_digest(&a), fresh, "change %d", change);
		/* Back as it was, keeping the part of its changed self. */
		uint64_t part = s1[2].digest_part, of = s1[2].digest_part_of;
		make_list(&b, s2, "abc");
		s1[2] = s2[2];
		s1[2].digest_part = part;
		s1[2].digest_part_of = of;
		cr_assert_eq(membership_digest(&a), first, "change %d", change);
	}
	make_list(&b, s2, "abc");
	b.n = 2; /* c left the list */
	cr_assert_neq(membership_digest(&b), first);
	/* What this member has seen of another is not gossiped. */
	make_list(&b, s2, "abc");
	s2[1].unreachable = true;
	s2[1].last_heard = 12345;
	s2[1].down_at = 7;
	cr_assert_eq(membership_digest(&b), first);
}

/* A gossiped list digested as it came (term_digest_of_list)
 * is the sender's own digest of that list: what push-pull compares with
 * ours once merged. Another list, or one entry changed, digests otherwise;
 * what is not a list says nothing (0). */
Test(membership_digest, a_gossiped_list_digests_as_its_sender_digests_it)
{
	struct member s1[3], s2[3];
	struct membership a, b;
	make_list(&a, s1, "abc");
	make_list(&b, s2, "cab");
	ei_x_buff x;
	cr_assert_eq(ei_x_new(&x), 0);
	cr_assert_eq(membership_encode_list(&a, &x), 0);
	cr_assert_eq(term_digest_of_list(x.buff, 0), membership_digest(&a));
	cr_assert_eq(term_digest_of_list(x.buff, 0), membership_digest(&b), "order does not count");
	s2[1].version++;
	cr_assert_neq(term_digest_of_list(x.buff, 0), membership_digest(&b));
	b.n = 2;
	x.index = 0;
	cr_assert_eq(membership_encode_list(&b, &x), 0);
	cr_assert_eq(term_digest_of_list(x.buff, 0), membership_digest(&b));
	cr_assert_neq(term_digest_of_list(x.buff, 0), membership_digest(&a), "an entry fewer");
	x.index = 0;
	cr_assert_eq(ei_x_encode_atom(&x, "gossip"), 0);
	cr_assert_eq(term_digest_of_list(x.buff, 0), 0);
	ei_x_free(&x);
}
