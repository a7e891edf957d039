/*
 * test_coordinator_members.c — a coordinator's decisions on what it knows
 * of the members, through the interleavings of joins and restarts that
 * once left a cluster serving nothing: which regions stay registered,
 * which may get shards, whose report allocation waits for, and which
 * unknown regions it answers.
 */
#include <stdint.h>

#include <criterion/criterion.h>

#include "coordinator/coordinator_members.h"
#include "unit_helpers.h"

/* Membership after a change: owners (up), joining, downed. */
static void members(struct coordinator_members *cm, const char *const *owners, size_t nowners,
		    const char *const *joining, size_t njoining)
{
	cr_assert_eq(coordinator_members_set(cm, CM_OWNERS, owners, nowners), 0);
	cr_assert_eq(coordinator_members_set(cm, CM_JOINING, joining, njoining), 0);
}

Test(coordinator_members, a_region_registered_while_joining_stays_through_the_next_join)
{
	struct coordinator_members cm = {0};
	/* n2 joins: its region registers at once, holding nothing. */
	const char *up1[] = {"n1"}, *joining1[] = {"n2"};
	members(&cm, up1, 1, joining1, 1);
	cr_assert(coordinator_members_keeps(&cm, "n2", 0));
	cr_assert(!coordinator_members_may_get_shards(&cm, "n2"), "not before it is up");
	/* n5 joins before n2 is admitted: n2's region must stay, or it never
	 * registers again and the coordinator waits for its report for ever. */
	const char *joining2[] = {"n2", "n5"};
	members(&cm, up1, 1, joining2, 2);
	cr_assert(coordinator_members_keeps(&cm, "n2", 0));
	cr_assert(coordinator_members_keeps(&cm, "n5", 0));
	/* n2 is admitted: it counts, and may get shards once it reported. */
	const char *up2[] = {"n1", "n2"}, *joining3[] = {"n5"};
	members(&cm, up2, 2, joining3, 1);
	cr_assert(coordinator_members_keeps(&cm, "n2", 0));
	cr_assert(coordinator_members_may_get_shards(&cm, "n2"));
	const char *reported1[] = {"n1"}, *reported2[] = {"n1", "n2", "n5"};
	cr_assert(!coordinator_members_all_reported(&cm, reported1, 1), "n2's report is awaited");
	cr_assert(coordinator_members_all_reported(&cm, reported2, 3), "a joiner's report is not needed, but fine");
	coordinator_members_free(&cm);
}

Test(coordinator_members, an_earlier_incarnation_with_shards_is_forgotten)
{
	struct coordinator_members cm = {0};
	/* n4 crashed and rejoins under its name before it was found gone:
	 * the region the coordinator knows of it holds shards, so it is the
	 * old incarnation's; the new one's holds none. */
	const char *up[] = {"n1", "n2", "n3"}, *joining[] = {"n4"};
	members(&cm, up, 3, joining, 1);
	cr_assert(!coordinator_members_keeps(&cm, "n4", 7));
	cr_assert(coordinator_members_keeps(&cm, "n4", 0));
	coordinator_members_free(&cm);
}

Test(coordinator_members, a_region_whose_node_left_or_is_unknown_goes)
{
	struct coordinator_members cm = {0};
	const char *up[] = {"n1", "n2"};
	members(&cm, up, 2, NULL, 0);
	cr_assert(!coordinator_members_keeps(&cm, "n3", 0), "not a member: left, or released after a down");
	cr_assert(!coordinator_members_keeps(&cm, "n3", 4));
	cr_assert(coordinator_members_keeps(&cm, "n2", 4));
	coordinator_members_free(&cm);
}

Test(coordinator_members, draining_and_downed_get_no_shards)
{
	struct coordinator_members cm = {0};
	const char *up[] = {"n1", "n2", "n3"}, *draining[] = {"n2"}, *downed[] = {"n3"};
	members(&cm, up, 3, NULL, 0);
	cr_assert_eq(coordinator_members_set(&cm, CM_DRAINING, draining, 1), 0);
	cr_assert_eq(coordinator_members_set(&cm, CM_DOWNED, downed, 1), 0);
	cr_assert(coordinator_members_may_get_shards(&cm, "n1"));
	cr_assert(!coordinator_members_may_get_shards(&cm, "n2"), "leaving");
	cr_assert(!coordinator_members_may_get_shards(&cm, "n3"), "downed, lease not yet run out");
	cr_assert(coordinator_members_keeps(&cm, "n3", 5), "it keeps its shards until its lease has run out");
	cr_assert_eq(coordinator_members_count(&cm, CM_OWNERS), 3);
	coordinator_members_free(&cm);
}

Test(coordinator_members, unknown_regions_are_answered_unless_downed)
{
	struct coordinator_members cm = {0};
	const char *up[] = {"n1"}, *downed[] = {"n9"};
	members(&cm, up, 1, NULL, 0);
	cr_assert_eq(coordinator_members_set(&cm, CM_DOWNED, downed, 1), 0);
	cr_assert_eq(coordinator_members_unknown_region(&cm, "n2"), CM_ACCEPT,
		     "a member the coordinator has not heard of yet registers, or is told to register again");
	cr_assert_eq(coordinator_members_unknown_region(&cm, "n9"), CM_IGNORE, "its node stops once it hears");
	coordinator_members_free(&cm);
}

Test(coordinator_members, empty_sets_and_replacing_them)
{
	struct coordinator_members cm = {0};
	cr_assert(coordinator_members_all_reported(&cm, NULL, 0), "no owner: nobody to wait for");
	cr_assert(!coordinator_members_may_get_shards(&cm, "n1"));
	const char *a[] = {"a", "b"}, *b[] = {"c"};
	cr_assert_eq(coordinator_members_set(&cm, CM_OWNERS, a, 2), 0);
	cr_assert_eq(coordinator_members_set(&cm, CM_OWNERS, b, 1), 0);
	cr_assert(!coordinator_members_in(&cm, CM_OWNERS, "a"), "replaced, not added to");
	cr_assert(coordinator_members_in(&cm, CM_OWNERS, "c"));
	cr_assert_eq(coordinator_members_set(&cm, CM_OWNERS, NULL, 0), 0);
	cr_assert_eq(coordinator_members_count(&cm, CM_OWNERS), 0);
	coordinator_members_free(&cm);
	coordinator_members_free(&cm); /* idempotent */
}
