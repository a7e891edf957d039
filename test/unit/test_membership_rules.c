/*
 * test_membership_rules.c — membership's decisions on the member list:
 * merging a gossiped entry with ours (statuses, versions, up-numbers,
 * incarnations), a seed's answer to a join, who leads, and whom the leader
 * admits with which up-number, through the interleavings that matter: a
 * member up on one side and leaving on the other, a joiner from an earlier
 * incarnation, two joiners at once, the leader changing while a joiner
 * waits.
 */
#include <stdint.h>

#include <criterion/criterion.h>

#include "cluster/membership_rules.h"
#include "unit_helpers.h"

static struct member_facts F(const char *node, uint32_t up, enum member_status status, uint32_t version)
{
	return (struct member_facts){.node = node, .up_number = up, .status = status, .version = version};
}

static enum member_merge_verdict V(struct member_facts in, struct member_facts have)
{
	return membership_rules_merge(&in, &have, false).verdict;
}

/* ---- merging ---- */

Test(membership_rules_merge, an_entry_we_lack_is_taken_and_greeted_unless_down)
{
	struct member_facts in = F("n2", 2, MEMBER_UP, 3);
	struct member_merge d = membership_rules_merge(&in, NULL, false);
	cr_assert_eq(d.verdict, MEMBER_MERGE_TAKE);
	cr_assert(d.greet, "a heartbeat at once, so its lease comes soon");
	cr_assert(!d.joining_now && !d.note_down && !d.forget_seen);

	in = F("n2", 0, MEMBER_JOINING, 2);
	d = membership_rules_merge(&in, NULL, false);
	cr_assert_eq(d.verdict, MEMBER_MERGE_TAKE);
	cr_assert(d.joining_now, "admission waits for acks from now");
	cr_assert(d.greet);

	in = F("n2", 2, MEMBER_DOWN, 4);
	d = membership_rules_merge(&in, NULL, false);
	cr_assert_eq(d.verdict, MEMBER_MERGE_TAKE);
	cr_assert(d.note_down);
	cr_assert(!d.greet, "a downed member is not greeted");

	in = F("n2", 2, MEMBER_REMOVED, 5);
	d = membership_rules_merge(&in, NULL, false);
	cr_assert(d.note_down && !d.greet);

	in = F("me", 1, MEMBER_UP, 1);
	d = membership_rules_merge(&in, NULL, true);
	cr_assert_eq(d.verdict, MEMBER_MERGE_TAKE);
	cr_assert(!d.greet, "we do not greet ourselves");
}

Test(membership_rules_merge, within_an_incarnation_the_higher_version_then_the_later_status_wins)
{
	cr_assert_eq(V(F("n", 2, MEMBER_UP, 5), F("n", 2, MEMBER_UP, 4)), MEMBER_MERGE_TAKE);
	cr_assert_eq(V(F("n", 2, MEMBER_UP, 4), F("n", 2, MEMBER_UP, 5)), MEMBER_MERGE_KEEP);
	cr_assert_eq(V(F("n", 2, MEMBER_UP, 4), F("n", 2, MEMBER_UP, 4)), MEMBER_MERGE_KEEP, "the same entry");
	cr_assert_eq(V(F("n", 2, MEMBER_EXITING, 4), F("n", 2, MEMBER_LEAVING, 4)), MEMBER_MERGE_TAKE);
	cr_assert_eq(V(F("n", 2, MEMBER_LEAVING, 4), F("n", 2, MEMBER_EXITING, 4)), MEMBER_MERGE_KEEP);
	/* A version beats a later status: a types change after a leave. */
	cr_assert_eq(V(F("n", 2, MEMBER_UP, 6), F("n", 2, MEMBER_LEAVING, 5)), MEMBER_MERGE_TAKE);
	struct member_facts in = F("n", 2, MEMBER_UP, 5), have = F("n", 2, MEMBER_UP, 4);
	struct member_merge d = membership_rules_merge(&in, &have, false);
	cr_assert(!d.forget_seen && !d.joining_now && !d.note_down && !d.greet,
		  "a newer version of the same incarnation keeps what we saw of it");
}

Test(membership_rules_merge, up_on_one_side_and_leaving_on_the_other_converges_to_leaving)
{
	/* n2 left (version 6); a member that missed it gossips the up entry
	 * (version 5), and gets the leaving one back. */
	struct member_facts up = F("n2", 2, MEMBER_UP, 5), leaving = F("n2", 2, MEMBER_LEAVING, 6);
	cr_assert_eq(V(up, leaving), MEMBER_MERGE_KEEP);
	cr_assert_eq(V(leaving, up), MEMBER_MERGE_TAKE);
	/* Both sides bumped to the same version (a types change on one, the
	 * leave on the other): the later status wins on both. */
	up.version = 6;
	cr_assert_eq(V(up, leaving), MEMBER_MERGE_KEEP);
	cr_assert_eq(V(leaving, up), MEMBER_MERGE_TAKE);
}

Test(membership_rules_merge, nobody_un_leaves_us)
{
	struct member_facts mine = F("me", 1, MEMBER_LEAVING, 3);
	struct member_facts in = F("me", 1, MEMBER_UP, 9);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_KEEP,
		     "a higher version from the others does not undo our leave");
	in = F("me", 0, MEMBER_JOINING, 9);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_KEEP);
	in = F("me", 1, MEMBER_LEAVING, 4);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_TAKE,
		     "the same status at a higher version is taken");
	in = F("me", 1, MEMBER_DOWN, 4);
	struct member_merge d = membership_rules_merge(&in, &mine, true);
	cr_assert_eq(d.verdict, MEMBER_MERGE_TAKE, "a down from the others still reaches us");
	cr_assert(d.note_down);
	/* Not ours: the same entry is taken. */
	in = F("me", 1, MEMBER_UP, 9);
	cr_assert_eq(membership_rules_merge(&in, &mine, false).verdict, MEMBER_MERGE_TAKE);
	/* Ours, but up: a higher version is taken. */
	struct member_facts up = F("me", 1, MEMBER_UP, 3);
	cr_assert_eq(membership_rules_merge(&in, &up, true).verdict, MEMBER_MERGE_TAKE);
}

Test(membership_rules_merge, a_higher_up_number_is_a_later_incarnation_whatever_the_version)
{
	cr_assert_eq(V(F("n", 7, MEMBER_UP, 2), F("n", 3, MEMBER_LEAVING, 40)), MEMBER_MERGE_TAKE);
	cr_assert_eq(V(F("n", 3, MEMBER_LEAVING, 40), F("n", 7, MEMBER_UP, 2)), MEMBER_MERGE_KEEP);
	/* A joining entry has no up-number: the version decides. */
	cr_assert_eq(V(F("n", 0, MEMBER_JOINING, 9), F("n", 3, MEMBER_UP, 8)), MEMBER_MERGE_TAKE);
	cr_assert_eq(V(F("n", 0, MEMBER_JOINING, 8), F("n", 3, MEMBER_UP, 8)), MEMBER_MERGE_KEEP,
		     "equal versions: up is the later status");
	cr_assert_eq(V(F("n", 3, MEMBER_UP, 8), F("n", 0, MEMBER_JOINING, 8)), MEMBER_MERGE_TAKE,
		     "the admission reaches a member that still lists the joiner");
}

Test(membership_rules_merge, a_restart_listed_joining_replaces_the_up_entry_and_forgets_what_was_seen)
{
	/* n3 restarted; its seed listed it joining at version 5 + 2. */
	struct member_facts in = F("n3", 0, MEMBER_JOINING, 7), have = F("n3", 3, MEMBER_UP, 5);
	struct member_merge d = membership_rules_merge(&in, &have, false);
	cr_assert_eq(d.verdict, MEMBER_MERGE_TAKE);
	cr_assert(d.forget_seen, "unreachable, lease and down of the old one do not count");
	cr_assert(d.joining_now);
	cr_assert(!d.greet && !d.note_down);
	/* A newer joining entry over a joining one: nothing is reset. */
	have = F("n3", 0, MEMBER_JOINING, 6);
	d = membership_rules_merge(&in, &have, false);
	cr_assert_eq(d.verdict, MEMBER_MERGE_TAKE);
	cr_assert(!d.forget_seen && !d.joining_now, "its joining started when we first heard of it");
}

Test(membership_rules_merge, within_an_incarnation_a_down_is_final)
{
	struct member_facts down = F("n4", 4, MEMBER_DOWN, 7);
	cr_assert_eq(V(F("n4", 4, MEMBER_UP, 30), down), MEMBER_MERGE_KEEP, "the downed node bumps its version in vain");
	cr_assert_eq(V(F("n4", 4, MEMBER_LEAVING, 30), down), MEMBER_MERGE_KEEP);
	cr_assert_eq(V(F("n4", 3, MEMBER_UP, 30), down), MEMBER_MERGE_KEEP, "an older incarnation");
	struct member_facts removed = F("n4", 4, MEMBER_REMOVED, 8);
	cr_assert_eq(V(F("n4", 4, MEMBER_EXITING, 30), removed), MEMBER_MERGE_KEEP);
	/* Down to removed, and back: version, then status. */
	cr_assert_eq(V(removed, down), MEMBER_MERGE_TAKE);
	cr_assert_eq(V(down, removed), MEMBER_MERGE_KEEP);
	cr_assert_eq(V(F("n4", 4, MEMBER_REMOVED, 7), down), MEMBER_MERGE_TAKE, "same version: the later status");
}

Test(membership_rules_merge, a_joiner_replaces_the_down_only_from_its_version_on)
{
	struct member_facts down = F("n4", 4, MEMBER_DOWN, 7);
	struct member_facts in = F("n4", 0, MEMBER_JOINING, 9);
	struct member_merge d = membership_rules_merge(&in, &down, false);
	cr_assert_eq(d.verdict, MEMBER_MERGE_NEW_INCARNATION);
	cr_assert(d.forget_seen && d.joining_now);
	cr_assert(!d.note_down && !d.greet);
	cr_assert_eq(V(F("n4", 0, MEMBER_JOINING, 8), down), MEMBER_MERGE_NEW_INCARNATION);
	cr_assert_eq(V(F("n4", 0, MEMBER_JOINING, 7), down), MEMBER_MERGE_NEW_INCARNATION,
		     "at the down's version: the down was made from another entry (see below)");
	cr_assert_eq(V(F("n4", 0, MEMBER_JOINING, 3), down), MEMBER_MERGE_KEEP);
	/* Admitted elsewhere already: the higher up-number is the new one. */
	in = F("n4", 9, MEMBER_UP, 2);
	d = membership_rules_merge(&in, &down, false);
	cr_assert_eq(d.verdict, MEMBER_MERGE_NEW_INCARNATION);
	cr_assert(d.forget_seen);
	cr_assert(!d.joining_now, "it is up already");
	cr_assert_eq(V(F("n4", 4, MEMBER_UP, 2), down), MEMBER_MERGE_KEEP, "the same up-number: the downed one");
}

Test(membership_rules_merge, a_late_down_of_an_earlier_incarnation_does_not_reach_a_later_one)
{
	struct member_facts up = F("n4", 4, MEMBER_UP, 7);
	struct member_merge d;
	struct member_facts in = F("n4", 4, MEMBER_DOWN, 3);
	d = membership_rules_merge(&in, &up, false);
	cr_assert_eq(d.verdict, MEMBER_MERGE_TAKE, "a down is taken at any version");
	cr_assert(d.note_down && !d.forget_seen && !d.greet);
	cr_assert_eq(V(F("n4", 5, MEMBER_REMOVED, 1), up), MEMBER_MERGE_TAKE, "a down of a later incarnation");
	cr_assert_eq(V(F("n4", 3, MEMBER_DOWN, 99), up), MEMBER_MERGE_KEEP,
		     "the down of an earlier incarnation, gossiped late");
	/* A joining entry (no up-number yet): the version decides. */
	struct member_facts joining = F("n4", 0, MEMBER_JOINING, 9);
	cr_assert_eq(V(F("n4", 4, MEMBER_DOWN, 10), joining), MEMBER_MERGE_TAKE);
	cr_assert_eq(V(F("n4", 4, MEMBER_DOWN, 9), joining), MEMBER_MERGE_KEEP);
	cr_assert_eq(V(F("n4", 4, MEMBER_DOWN, 8), joining), MEMBER_MERGE_KEEP);
}

Test(membership_rules_merge, a_joining_node_ignores_the_down_of_its_earlier_incarnation)
{
	struct member_facts mine = F("me", 0, MEMBER_JOINING, 9);
	struct member_facts in = F("me", 2, MEMBER_DOWN, 40);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_KEEP);
	cr_assert_eq(membership_rules_merge(&in, &mine, false).verdict, MEMBER_MERGE_TAKE,
		     "another node's joining entry takes the newer down");
	/* Once up, a down of this incarnation reaches us. */
	mine = F("me", 6, MEMBER_UP, 10);
	in = F("me", 6, MEMBER_DOWN, 11);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_TAKE);
	/* And our admission is taken while we wait. */
	mine = F("me", 0, MEMBER_JOINING, 9);
	in = F("me", 6, MEMBER_UP, 10);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_TAKE);
}

/* A node started again asks its cluster to let it join; a member that has
 * not heard of the restart yet gossips the old incarnation's entry of it,
 * up. The node refuses it (its up-number is at or below the one the node
 * had, read from data_dir/members), and takes its new admission. */
Test(membership_rules_merge, a_node_started_again_refuses_its_old_incarnations_entry)
{
	struct member_facts mine = F("me", 0, MEMBER_JOINING, 0);
	mine.old_up_number = 3;
	struct member_facts in = F("me", 3, MEMBER_UP, 7);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_KEEP);
	in = F("me", 2, MEMBER_LEAVING, 9);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_KEEP);
	in = F("me", 3, MEMBER_EXITING, 12);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_KEEP);
	/* listed joining again, then admitted with a new up-number */
	in = F("me", 0, MEMBER_JOINING, 9);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_TAKE);
	mine = F("me", 0, MEMBER_JOINING, 9);
	mine.old_up_number = 3;
	in = F("me", 5, MEMBER_UP, 10);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_TAKE);
	/* Once up in the new incarnation, the old one's entry loses on its
	 * up-number, as any older incarnation's does. */
	mine = F("me", 5, MEMBER_UP, 10);
	mine.old_up_number = 3;
	in = F("me", 3, MEMBER_UP, 30);
	cr_assert_eq(membership_rules_merge(&in, &mine, true).verdict, MEMBER_MERGE_KEEP);
	/* Others' entries of us are not ours to judge so. */
	mine = F("me", 0, MEMBER_JOINING, 0);
	mine.old_up_number = 3;
	in = F("me", 3, MEMBER_UP, 7);
	cr_assert_eq(membership_rules_merge(&in, &mine, false).verdict, MEMBER_MERGE_TAKE);
}

/* A member that formed the cluster from a lower version than a seed gave
 * its join is listed joining there at a higher version: it keeps its own
 * up entry and refutes the other (raises its version above it), so that
 * its entry wins everywhere; at a lower version there is nothing to
 * refute. Others' entries of it are merged by the usual rules. */
Test(membership_rules_merge, a_member_refutes_an_entry_listing_it_joining)
{
	struct member_facts mine = F("me", 2, MEMBER_UP, 1);
	struct member_facts in = F("me", 0, MEMBER_JOINING, 2);
	struct member_merge d = membership_rules_merge(&in, &mine, true);
	cr_assert_eq(d.verdict, MEMBER_MERGE_KEEP);
	cr_assert(d.refute);
	mine.version = 3;
	d = membership_rules_merge(&in, &mine, true);
	cr_assert_eq(d.verdict, MEMBER_MERGE_KEEP);
	cr_assert(!d.refute, "ours is already newer");
	mine = F("me", 2, MEMBER_LEAVING, 1);
	d = membership_rules_merge(&in, &mine, true);
	cr_assert(d.verdict == MEMBER_MERGE_KEEP && d.refute);
	mine = F("me", 2, MEMBER_UP, 1);
	cr_assert_eq(membership_rules_merge(&in, &mine, false).verdict, MEMBER_MERGE_TAKE,
		     "another node's entry: a restart listed again");
}

/* Two members holding different entries of one node converge: exactly one
 * of the two merges takes, whoever gossips first. Every pair of entries
 * over a small grid of up-numbers, statuses and versions. */
Test(membership_rules_merge, two_entries_converge_whichever_way_they_meet)
{
	struct member_facts grid[6 * 3 * 3];
	size_t n = 0;
	for (int s = MEMBER_JOINING; s <= MEMBER_REMOVED; s++)
		for (uint32_t up = 0; up < 3; up++)
			for (uint32_t v = 4; v < 7; v++)
				grid[n++] = F("n", s == MEMBER_JOINING ? 0 : up + 1, (enum member_status)s, v);
	size_t pairs = 0;
	for (size_t a = 0; a < n; a++) {
		for (size_t b = 0; b < n; b++) {
			struct member_facts x = grid[a], y = grid[b];
			if (x.up_number == y.up_number && x.status == y.status && x.version == y.version)
				continue;
			bool x_takes = V(x, y) != MEMBER_MERGE_KEEP, y_takes = V(y, x) != MEMBER_MERGE_KEEP;
			cr_assert(x_takes != y_takes, "up %u %d v%u against up %u %d v%u: %d %d", x.up_number, x.status,
				  x.version, y.up_number, y.status, y.version, x_takes, y_takes);
			pairs++;
		}
	}
	cr_assert_gt(pairs, 2000u);
}

Test(membership_rules_merge, a_joining_entry_beats_a_down_at_the_same_version)
{
	/* A seed listed the rejoin at its down's version + 2, and another
	 * member downed the old incarnation from an entry two versions newer:
	 * both at 8. The joining entry is the newer incarnation (a down made
	 * from a joining entry is a version above it), and had neither side
	 * taken the other's, the two would never agree. */
	struct member_facts joining = F("n4", 0, MEMBER_JOINING, 8), removed = F("n4", 4, MEMBER_REMOVED, 8);
	cr_assert_eq(V(joining, removed), MEMBER_MERGE_NEW_INCARNATION);
	cr_assert_eq(V(removed, joining), MEMBER_MERGE_KEEP);
	struct member_facts down = F("n4", 4, MEMBER_DOWN, 8);
	cr_assert_eq(V(joining, down), MEMBER_MERGE_NEW_INCARNATION);
	cr_assert_eq(V(down, joining), MEMBER_MERGE_KEEP);
	/* A down made from this joining entry is a version above it, and wins. */
	cr_assert_eq(V(F("n4", 0, MEMBER_DOWN, 9), joining), MEMBER_MERGE_TAKE);
	cr_assert_eq(V(joining, F("n4", 0, MEMBER_DOWN, 9)), MEMBER_MERGE_KEEP);
}

/* ---- joins ---- */

Test(membership_rules_join, who_is_listed_again)
{
	uint32_t version = 12345;
	cr_assert_eq(membership_rules_join(NULL, &version), MEMBER_JOIN_LIST);
	cr_assert_eq(version, 2, "above a removed entry others may hold at 1");

	struct member_facts e = F("n2", 0, MEMBER_JOINING, 4);
	version = 12345;
	cr_assert_eq(membership_rules_join(&e, &version), MEMBER_JOIN_TELL_AGAIN, "its join was heard already");
	cr_assert_eq(version, 12345, "untouched");
	e.unreachable = true;
	cr_assert_eq(membership_rules_join(&e, &version), MEMBER_JOIN_TELL_AGAIN);

	e = F("n2", 2, MEMBER_UP, 4);
	cr_assert_eq(membership_rules_join(&e, &version), MEMBER_JOIN_TELL_AGAIN, "up and heard: it missed our gossip");
	e.unreachable = true;
	cr_assert_eq(membership_rules_join(&e, &version), MEMBER_JOIN_LIST, "up but silent: it restarted");
	cr_assert_eq(version, 6);

	const enum member_status gone[] = {MEMBER_LEAVING, MEMBER_EXITING, MEMBER_DOWN, MEMBER_REMOVED};
	for (size_t k = 0; k < SN_ARRAY_LEN(gone); k++) {
		e = F("n2", 2, gone[k], 10 + (uint32_t)k);
		version = 0;
		cr_assert_eq(membership_rules_join(&e, &version), MEMBER_JOIN_LIST, "status %d", gone[k]);
		cr_assert_eq(version, 12 + (uint32_t)k);
	}
}

/* Three members started again at once: each lists the others joining from
 * their joins, and none hears back (quiet until listed). The one that forms
 * the cluster must win over those listings, or each admitted member counts
 * itself the oldest for a moment. */
Test(membership_rules_join, the_formed_entry_replaces_the_joining_one_others_listed_from_a_join)
{
	for (uint32_t own = 0; own < 6; own++) {
		struct member_facts formed = F("n1", 2, MEMBER_UP, membership_rules_formed_version(own));
		uint32_t listed = 0;
		cr_assert_eq(membership_rules_join(NULL, &listed), MEMBER_JOIN_LIST);
		struct member_facts joining = F("n1", 0, MEMBER_JOINING, listed);
		cr_assert_eq(V(formed, joining), MEMBER_MERGE_TAKE, "own %u: listed from a join at %u", own, listed);
		/* listed again from an entry of ours it had, at most ours */
		struct member_facts had = F("n1", 1, MEMBER_REMOVED, own);
		cr_assert_eq(membership_rules_join(&had, &listed), MEMBER_JOIN_LIST);
		joining = F("n1", 0, MEMBER_JOINING, listed);
		cr_assert_eq(V(formed, joining), MEMBER_MERGE_TAKE, "own %u: listed from ours at %u", own, listed);
	}
}

Test(membership_rules_join, the_rejoin_after_a_down_replaces_the_removed_entry_others_hold)
{
	/* The seed holds the down (7); another member already removed the
	 * node (8). The joining entry the seed lists wins at both. */
	struct member_facts down = F("n4", 4, MEMBER_DOWN, 7), removed = F("n4", 4, MEMBER_REMOVED, 8);
	uint32_t version = 0;
	cr_assert_eq(membership_rules_join(&down, &version), MEMBER_JOIN_LIST);
	struct member_facts joining = F("n4", 0, MEMBER_JOINING, version);
	cr_assert_eq(V(joining, down), MEMBER_MERGE_NEW_INCARNATION);
	cr_assert_eq(V(joining, removed), MEMBER_MERGE_NEW_INCARNATION);
	cr_assert_eq(V(down, joining), MEMBER_MERGE_KEEP, "the late down of the old one does not undo it");
	cr_assert_eq(V(removed, joining), MEMBER_MERGE_KEEP);
}

/* ---- the leader ---- */

Test(membership_rules_leader, the_oldest_voting_member)
{
	cr_assert_eq(membership_rules_leader(NULL, 0), -1, "nobody");
	struct member_facts none[] = {F("a", 0, MEMBER_JOINING, 1), F("b", 1, MEMBER_EXITING, 3),
				      F("c", 2, MEMBER_DOWN, 3), F("d", 3, MEMBER_REMOVED, 4)};
	cr_assert_eq(membership_rules_leader(none, SN_ARRAY_LEN(none)), -1, "nobody votes");
	struct member_facts m[] = {F("n5", 5, MEMBER_UP, 1), F("n1", 1, MEMBER_DOWN, 9), F("n3", 3, MEMBER_LEAVING, 2),
				   F("n2", 2, MEMBER_EXITING, 3), F("n0", 0, MEMBER_JOINING, 2)};
	cr_assert_eq(membership_rules_leader(m, SN_ARRAY_LEN(m)), 2, "a leaving member still leads");
	m[2].status = MEMBER_EXITING;
	cr_assert_eq(membership_rules_leader(m, SN_ARRAY_LEN(m)), 0, "then the next oldest");
}

Test(membership_rules_leader, a_tie_on_the_up_number_goes_to_the_lowest_name)
{
	/* Two clusters started alone (both up-number 1) and merged. */
	struct member_facts m[] = {F("zed", 1, MEMBER_UP, 1), F("abe", 1, MEMBER_UP, 1), F("kim", 1, MEMBER_UP, 1)};
	cr_assert_eq(membership_rules_leader(m, 3), 1);
}

Test(membership_rules_leader, next_up_number_is_above_everything_seen)
{
	cr_assert_eq(membership_rules_next_up_number(NULL, 0, 0), 1, "the first member of a new cluster");
	cr_assert_eq(membership_rules_next_up_number(NULL, 0, 7), 8);
	struct member_facts m[] = {F("a", 3, MEMBER_UP, 1), F("b", 9, MEMBER_REMOVED, 1), F("c", 0, MEMBER_JOINING, 1)};
	cr_assert_eq(membership_rules_next_up_number(m, 3, 4), 10, "a removed member's number is not reused");
	cr_assert_eq(membership_rules_next_up_number(m, 3, 20), 21, "nor one of an entry since reset for a rejoin");
}

/* ---- admission ---- */

#define TIMEOUT 1000u

/* Admission by members[self] at loop time `now` (the clock reads the same). */
static size_t admit(const struct member_facts *m, size_t n, size_t self, uint32_t top, uint64_t now, uint32_t *up)
{
	struct quorum_member scratch[32];
	cr_assert_leq(2 * n, SN_ARRAY_LEN(scratch));
	struct membership_admission a = {
		.self = self, .top_up_number = top, .now_ms = now, .clock_ms = now, .failure_timeout_ms = TIMEOUT};
	return membership_rules_admit(m, n, &a, scratch, up);
}

/* A joiner that asked at `since` and was heard at `heard`. */
static struct member_facts joiner(const char *node, uint64_t since, uint64_t heard)
{
	struct member_facts e = F(node, 0, MEMBER_JOINING, 2);
	e.joining_since = since;
	e.last_heard = heard;
	return e;
}

/* A voter whose last ack was of a heartbeat sent at `sent` (0: none). */
static struct member_facts voter(const char *node, uint32_t up_number, uint64_t sent)
{
	struct member_facts e = F(node, up_number, MEMBER_UP, 1);
	e.lease_until = sent ? sent + TIMEOUT : 0;
	e.last_heard = sent;
	return e;
}

Test(membership_rules_admit, a_leader_alone_admits_a_joiner_it_hears)
{
	struct member_facts m[] = {voter("n1", 1, 0), joiner("n2", 5000, 5000)};
	uint32_t up[2] = {99, 99};
	cr_assert_eq(admit(m, 2, 0, 1, 5000, up), 1);
	cr_assert_eq(up[0], 0, "the leader is not admitted");
	cr_assert_eq(up[1], 2);
}

Test(membership_rules_admit, only_the_leader_admits)
{
	struct member_facts m[] = {voter("n1", 1, 4900), voter("n2", 2, 4900), joiner("n3", 4800, 5000)};
	uint32_t up[3] = {99, 99, 99};
	cr_assert_eq(admit(m, 3, 1, 2, 5000, up), 0, "n2 is not the oldest");
	cr_assert_eq(up[0] | up[1] | up[2], 0, "every entry is written");
	cr_assert_eq(admit(m, 3, 0, 2, 5000, up), 1);
	cr_assert_eq(up[2], 3);
	struct member_facts lone[] = {joiner("me", 0, 0)};
	cr_assert_eq(admit(lone, 1, 0, 0, 5000, up), 0, "a joining node leads nobody, itself included");
	cr_assert_eq(admit(NULL, 0, 0, 0, 5000, up), 0, "an empty list");
}

Test(membership_rules_admit, a_joiner_waits_for_a_majority_of_acks_sent_since_it_asked)
{
	/* Three voters; n2 and n3 last acked heartbeats sent before the join
	 * at 5000: n1 may be cut off from them, so it waits. */
	struct member_facts m[] = {voter("n1", 1, 0), voter("n2", 2, 4900), voter("n3", 3, 4999),
				   joiner("n4", 5000, 5100)};
	uint32_t up[4];
	cr_assert_eq(admit(m, 4, 0, 3, 5100, up), 0);
	m[2].lease_until = 5000 + TIMEOUT; /* n3 acked the heartbeat sent at 5000 */
	cr_assert_eq(admit(m, 4, 0, 3, 5100, up), 1, "n1 and n3 are two of three");
	cr_assert_eq(up[3], 4);
	/* The clock has passed n3's lease: it no longer counts. */
	cr_assert_eq(admit(m, 4, 0, 3, 5000 + TIMEOUT, up), 0);
	cr_assert_eq(admit(m, 4, 0, 3, 5000 + TIMEOUT - 1, up), 1, "one ms earlier it does");
}

Test(membership_rules_admit, a_joiner_silent_longer_than_the_failure_timeout_waits)
{
	struct member_facts m[] = {voter("n1", 1, 0), joiner("n2", 1000, 1000)};
	uint32_t up[2];
	cr_assert_eq(admit(m, 2, 0, 1, 1000 + TIMEOUT, up), 1, "exactly the timeout: still heard");
	cr_assert_eq(admit(m, 2, 0, 1, 1000 + TIMEOUT + 1, up), 0);
	cr_assert_eq(up[1], 0);
}

Test(membership_rules_admit, two_joiners_at_once_get_consecutive_up_numbers_in_join_order)
{
	/* Listed joining at the same moment: the lower name first, wherever
	 * the list holds them. */
	struct member_facts m[] = {joiner("n3", 100, 100), voter("n1", 1, 0), joiner("n2", 100, 100)};
	uint32_t up[3];
	cr_assert_eq(admit(m, 3, 1, 1, 100, up), 2);
	cr_assert_eq(up[2], 2);
	cr_assert_eq(up[0], 3);
	/* A higher number remembered from an entry reset for a rejoin. */
	cr_assert_eq(admit(m, 3, 1, 7, 100, up), 2);
	cr_assert_eq(up[2], 8);
	cr_assert_eq(up[0], 9);
	/* n3 listed first: started first, it is the older, though admitted
	 * in the same pass (ticks on the same instant admit joiners in
	 * batches). */
	m[0].joining_since = 90;
	cr_assert_eq(admit(m, 3, 1, 1, 100, up), 2);
	cr_assert_eq(up[0], 2);
	cr_assert_eq(up[2], 3);
}

Test(membership_rules_admit, the_second_joiner_counts_the_first_as_a_voter)
{
	/* Leader "n9" alone, joiners "n1" then "n2" that have acked nothing
	 * sent since they asked. n1 is admitted; for n2 the voters are then
	 * n9 and n1, and n9 alone is half without the lowest name: n2 waits
	 * for n1's ack. */
	struct member_facts m[] = {voter("n9", 1, 0), joiner("n1", 100, 100), joiner("n2", 100, 100)};
	uint32_t up[3];
	cr_assert_eq(admit(m, 3, 0, 1, 100, up), 1);
	cr_assert_eq(up[1], 2);
	cr_assert_eq(up[2], 0);
	/* n1 acked a heartbeat sent after n2 asked: both go at once. */
	m[1].lease_until = 100 + TIMEOUT;
	cr_assert_eq(admit(m, 3, 0, 1, 100, up), 2);
	cr_assert_eq(up[2], 3);
	/* A leader with the lowest name wins the tie alone. */
	m[0].node = "n0";
	m[1].lease_until = 0;
	cr_assert_eq(admit(m, 3, 0, 1, 100, up), 2);
}

Test(membership_rules_admit, the_leader_changing_while_a_joiner_waits)
{
	/* n1 led when n4 asked, then started leaving: it still leads. */
	struct member_facts m[] = {voter("n1", 1, 0), voter("n2", 2, 0), voter("n3", 3, 0), joiner("n4", 100, 150)};
	m[0].status = MEMBER_LEAVING;
	m[1].lease_until = m[2].lease_until = 100 + TIMEOUT;
	uint32_t up[4];
	cr_assert_eq(admit(m, 4, 1, 3, 150, up), 0, "n2 is not the leader yet");
	cr_assert_eq(admit(m, 4, 0, 3, 150, up), 1);
	cr_assert_eq(up[3], 4);
	/* n1 exits: n2 leads, and admits with the acks it holds itself. */
	m[0].status = MEMBER_EXITING;
	m[0].lease_until = 0;
	cr_assert_eq(admit(m, 4, 0, 3, 150, up), 0, "n1 leads no more");
	cr_assert_eq(admit(m, 4, 1, 3, 150, up), 1);
	cr_assert_eq(up[3], 4, "above n3's number and n1's");
	/* n2 learns that n1 admitted n4 meanwhile (up-number 4): nothing
	 * is left to admit. */
	m[3] = F("n4", 4, MEMBER_UP, 3);
	cr_assert_eq(admit(m, 4, 1, 3, 150, up), 0);
	/* Without n3's ack, n2 holds one of two voters: enough while n2 is
	 * the lowest name of the two, not otherwise (quorum.h). */
	m[2].lease_until = 0;
	m[3] = joiner("n5", 100, 150);
	cr_assert_eq(admit(m, 4, 1, 3, 150, up), 1, "half with the lowest name wins");
	m[1].node = "n6"; /* now the leader is not the lowest name */
	cr_assert_eq(admit(m, 4, 1, 3, 150, up), 0, "half without it loses: nobody admitted");
}

Test(membership_rules_admit, a_downed_or_removed_voter_does_not_count)
{
	struct member_facts m[] = {voter("n1", 1, 0), voter("n2", 2, 0), voter("n3", 3, 0), joiner("n4", 100, 100)};
	m[1].status = MEMBER_DOWN;
	m[2].status = MEMBER_REMOVED;
	uint32_t up[4];
	cr_assert_eq(admit(m, 4, 0, 3, 100, up), 1, "n1 alone is every voter");
	cr_assert_eq(up[3], 4);
}

/* ---- a downed member's lease ---- */

Test(membership_rules_lease, our_lease_lapses_failure_timeout_and_the_margin_after_our_last_ack)
{
	/* acked at 10 000, failure_timeout 5 000, margin 1 000 */
	cr_assert(!membership_rules_lease_lapsed(10000, 10000, 5000, 1000));
	cr_assert(!membership_rules_lease_lapsed(10000, 16000, 5000, 1000), "the lease could last till 15 000, and drift");
	cr_assert(membership_rules_lease_lapsed(10000, 16001, 5000, 1000));
	cr_assert(membership_rules_lease_lapsed(0, 6001, 5000, 1000), "never acked: nothing to wait for but the margin");
	/* a crash noticed at 15 s and downed at 25 s: lapsed long before */
	cr_assert(membership_rules_lease_lapsed(10000, 35000, 5000, 1000));
}

Test(membership_rules_lease, a_downed_member_is_released_when_every_member_not_down_said_its_lease_lapsed)
{
	struct member_facts ms[] = {F("a", 1, MEMBER_UP, 1), F("b", 2, MEMBER_DOWN, 2), F("c", 3, MEMBER_UP, 1),
				    F("d", 4, MEMBER_LEAVING, 1), F("e", 0, MEMBER_JOINING, 1)};
	bool lapsed[] = {true, false, true, true, true};
	cr_assert(membership_rules_downed_lease_over(ms, 5, 1, lapsed));
	/* the downed member's own flag means nothing */
	lapsed[1] = true;
	cr_assert(membership_rules_downed_lease_over(ms, 5, 1, lapsed));
	/* any one silent member that is not down holds it: leaving, joining, us */
	for (size_t k = 0; k < 5; k++) {
		if (k == 1)
			continue;
		lapsed[k] = false;
		cr_assert(!membership_rules_downed_lease_over(ms, 5, 1, lapsed), "member %zu has not said", k);
		lapsed[k] = true;
	}
}

Test(membership_rules_lease, members_down_themselves_are_not_waited_for_and_only_a_down_member_is_released)
{
	struct member_facts ms[] = {F("a", 1, MEMBER_UP, 1), F("b", 2, MEMBER_DOWN, 2), F("c", 3, MEMBER_REMOVED, 3),
				    F("d", 4, MEMBER_UP, 1), F("e", 5, MEMBER_EXITING, 1)};
	bool lapsed[] = {true, false, false, true, true};
	cr_assert(membership_rules_downed_lease_over(ms, 5, 1, lapsed), "c is removed after a down: not asked");
	cr_assert(membership_rules_downed_lease_over(ms, 5, 2, lapsed), "nor b, for c");
	lapsed[4] = false;
	cr_assert(!membership_rules_downed_lease_over(ms, 5, 1, lapsed), "an exiting member still acks heartbeats");
	cr_assert(!membership_rules_downed_lease_over(ms, 5, 0, lapsed), "a is up: nothing to release");
	cr_assert(!membership_rules_downed_lease_over(ms, 5, 9, lapsed), "out of range");
}

/* ---- push-pull ---- */

/* A gossiped list (one that differs from ours once merged: the caller's
 * check) may be answered with ours once an interval at most per sender,
 * and only to a sender that compares digests; one that could not be read
 * is not. */
Test(membership_rules_gossip, a_list_that_lacks_something_is_answered_once_an_interval)
{
	const uint32_t interval = 1000;
	cr_assert(membership_rules_may_answer_gossip(7, true, 5000, 0, interval), "never answered");
	cr_assert(!membership_rules_may_answer_gossip(0, true, 5000, 0, interval), "unreadable: says nothing");
	cr_assert(!membership_rules_may_answer_gossip(7, false, 5000, 0, interval), "v0.1.0 gets ours each tick");
	cr_assert(!membership_rules_may_answer_gossip(7, true, 5999, 5000, interval), "answered within the interval");
	cr_assert(membership_rules_may_answer_gossip(7, true, 6000, 5000, interval), "an interval later");
}
