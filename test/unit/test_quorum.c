/*
 * test_quorum.c — keep-majority arithmetic: who wins a split, and until when
 * this node's heartbeat leases let it deliver to its entities.
 */
#include <stdint.h>

#include <criterion/criterion.h>

#include "cluster/quorum.h"
#include "unit_helpers.h"

Test(quorum, more_than_half_wins)
{
	cr_assert(quorum_wins(2, 3, false));
	cr_assert(quorum_wins(3, 5, false));
	cr_assert(!quorum_wins(1, 3, true));
	cr_assert(!quorum_wins(2, 5, true));
	cr_assert(quorum_wins(1, 1, false));
}

Test(quorum, exactly_half_wins_only_with_the_lowest_node)
{
	cr_assert(quorum_wins(1, 2, true));
	cr_assert(!quorum_wins(1, 2, false));
	cr_assert(quorum_wins(2, 4, true));
	cr_assert(!quorum_wins(2, 4, false));
}

Test(quorum, an_empty_cluster_needs_nothing)
{
	cr_assert(quorum_wins(0, 0, false));
	cr_assert_eq(quorum_until(NULL, 0, NULL), UINT64_MAX);
}

static uint64_t until(const struct quorum_member *m, size_t n)
{
	struct quorum_member scratch[16];
	cr_assert(n <= SN_ARRAY_LEN(scratch));
	return quorum_until(m, n, scratch);
}

Test(quorum, alone_needs_no_lease)
{
	struct quorum_member m[] = {{"a@h", UINT64_MAX}};
	cr_assert_eq(until(m, 1), UINT64_MAX);
}

Test(quorum, three_members_need_the_second_longest_lease)
{
	/* Self plus one more is a majority: the longer of the two leases. */
	struct quorum_member m[] = {{"b@h", 500}, {"a@h", UINT64_MAX}, {"c@h", 900}};
	cr_assert_eq(until(m, 3), 900);
	m[2].lease_until = 100;
	cr_assert_eq(until(m, 3), 500);
}

Test(quorum, a_member_that_never_answered_gives_no_lease)
{
	struct quorum_member m[] = {{"a@h", UINT64_MAX}, {"b@h", 0}, {"c@h", 0}};
	cr_assert_eq(until(m, 3), 0);
}

Test(quorum, two_members_the_lowest_goes_on_alone)
{
	struct quorum_member low_self[] = {{"a@h", UINT64_MAX}, {"b@h", 0}};
	cr_assert_eq(until(low_self, 2), UINT64_MAX);
	struct quorum_member high_self[] = {{"b@h", UINT64_MAX}, {"a@h", 700}};
	cr_assert_eq(until(high_self, 2), 700);
}

Test(quorum, four_members_half_with_the_lowest_is_enough)
{
	/* Self is d; a (lowest) has the shorter lease of the two it needs. */
	struct quorum_member m[] = {{"d@h", UINT64_MAX}, {"a@h", 300}, {"b@h", 800}, {"c@h", 600}};
	/* {d, b} is half without a; {d, b, c} is a majority until 600;
	 * {d, a} would be half with the lowest until 300. Best: 600. */
	cr_assert_eq(until(m, 4), 600);
	m[1].lease_until = 900; /* now {d, a} wins until 900 */
	cr_assert_eq(until(m, 4), 900);
}

Test(quorum, members_tied_on_a_lease_count_together)
{
	/* b and a run out together at 400: until then {d, b, a} holds a. */
	struct quorum_member m[] = {{"d@h", UINT64_MAX}, {"b@h", 400}, {"a@h", 400}, {"c@h", 0}};
	cr_assert_eq(until(m, 4), 400);
}

Test(quorum, the_input_is_left_as_it_was)
{
	struct quorum_member m[] = {{"c@h", 5}, {"a@h", UINT64_MAX}, {"b@h", 9}};
	until(m, 3);
	cr_assert_str_eq(m[0].node, "c@h");
	cr_assert_eq(m[0].lease_until, 5);
	cr_assert_eq(m[2].lease_until, 9);
}
