/*
 * test_downing.c — whom the leader downs on the cluster-wide reachability
 * view: a clean split, an isolated node, a crash, one cut link, one lossy
 * node, and who the leader is (docs/contract.md lists the same cases). Each case is a five-member cluster n1..n5
 * (n1 the oldest) seen from one member.
 */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cluster/downing.h"
#include "cluster/watch_ring.h"
#include "unit_helpers.h"

static const struct downing_member five[] = {
	{"n1@h", 1, 0}, {"n2@h", 2, 0}, {"n3@h", 3, 0}, {"n4@h", 4, 0}, {"n5@h", 5, 0},
};

#define E(o, s) {"n" #o "@h", "n" #s "@h"}

struct downing_case {
	const char *name;
	size_t decider;                    /* index into five */
	struct downing_edge edges[24];
	size_t nedges;
	enum downing_verdict verdict;
	size_t down[5];                 /* indexes, in the order chosen */
	size_t ndown;
};

static const struct downing_case cases[] = {
	{"no records: nothing to do", 0, {{0}}, 0, DOWNING_NONE, {0}, 0},
	{"a crash of n5: the leader downs it", 0, {E(1, 5), E(2, 5), E(3, 5), E(4, 5)}, 4, DOWNING_OTHERS, {4}, 1},
	{"a crash of n5 seen from n2: nobody n2 hears hears n5 either, so n2 downs it too", 1,
	 {E(1, 5), E(2, 5), E(3, 5), E(4, 5)}, 4, DOWNING_OTHERS, {4}, 1},
	{"a crash of n5 before n3 noticed: n2 waits (n3 still hears it); n1 leads and downs it", 1,
	 {E(1, 5), E(2, 5), E(4, 5)}, 3, DOWNING_NONE, {0}, 0},
	{"a crash of the oldest: n2 leads and downs n1", 1, {E(2, 1), E(3, 1), E(4, 1), E(5, 1)}, 4,
	 DOWNING_OTHERS, {0}, 1},
	{"a clean split {1,2} | {3,4,5}, majority side: n3 downs n1 and n2", 2,
	 {E(3, 1), E(3, 2), E(4, 1), E(4, 2), E(5, 1), E(5, 2)}, 6, DOWNING_OTHERS, {0, 1}, 2},
	{"a clean split {1,2} | {3,4,5}, minority side: n1 downs itself", 0,
	 {E(1, 3), E(1, 4), E(1, 5), E(2, 3), E(2, 4), E(2, 5)}, 6, DOWNING_SELF, {0}, 0},
	{"the oldest isolated, seen by the rest: n2 downs n1", 1,
	 {E(2, 1), E(3, 1), E(4, 1), E(5, 1)}, 4, DOWNING_OTHERS, {0}, 1},
	{"the oldest isolated, its own view: it downs itself", 0,
	 {E(1, 2), E(1, 3), E(1, 4), E(1, 5)}, 4, DOWNING_SELF, {0}, 0},
	{"one cut link n1-n3: n2 leads and downs n3 alone (the younger)", 1, {E(1, 3), E(3, 1)}, 2,
	 DOWNING_OTHERS, {2}, 1},
	{"one cut link n4-n5: n1 leads and downs n5 alone", 0, {E(4, 5), E(5, 4)}, 2, DOWNING_OTHERS, {4}, 1},
	{"one way only (n3 cannot hear n1, n1 hears n3): n2 leads and downs n3, the younger", 1, {E(3, 1)}, 1,
	 DOWNING_OTHERS, {2}, 1},
	{"a lossy n3 that cannot hear n2 and n4: n1 downs n3, never n2 or n4", 0, {E(3, 2), E(3, 4)}, 2,
	 DOWNING_OTHERS, {2}, 1},
	{"a lossy n3 that lost only n4 (one record): n3, the one that reports, goes, not n4", 0, {E(3, 4)}, 1,
	 DOWNING_OTHERS, {2}, 1},
	{"a lossy n4 that lost only n3 (one record): n4 goes, not n3", 0, {E(4, 3)}, 1, DOWNING_OTHERS, {3}, 1},
	{"a lossy leader n1 that lost only n3, whom the others hear: n1 goes itself, not n3", 0, {E(1, 3)}, 1,
	 DOWNING_SELF, {0}, 0},
	{"a lossy leader n1 that lost n2 and n3: n1 goes itself", 0, {E(1, 2), E(1, 3)}, 2, DOWNING_SELF, {0}, 0},
	{"a lossy n3, heard badly both ways: n1 downs n3 alone", 0,
	 {E(3, 2), E(3, 4), E(2, 3), E(4, 3), E(5, 3)}, 5, DOWNING_OTHERS, {2}, 1},
	{"a lossy n3 that the leader cannot hear: keep-majority downs it", 0, {E(1, 3), E(3, 2)}, 2,
	 DOWNING_OTHERS, {2}, 1},
	{"two cut links through n4 (n2-n4, n4-n5): n4 alone goes", 0, {E(2, 4), E(4, 2), E(4, 5), E(5, 4)}, 4,
	 DOWNING_OTHERS, {3}, 1},
	{"two separate cut links (n2-n3, n4-n5): one member each", 0, {E(2, 3), E(3, 2), E(4, 5), E(5, 4)}, 4,
	 DOWNING_OTHERS, {4, 2}, 2},
	{"a crash of n5 and a cut link n2-n3: n5, then n3", 0,
	 {E(1, 5), E(2, 5), E(3, 5), E(4, 5), E(2, 3), E(3, 2)}, 6, DOWNING_OTHERS, {4, 2}, 2},
	{"n3 cut off, then gone, its last records (n1, n2 unreachable) late: n2 downs n3", 1,
	 {E(3, 1), E(3, 2), E(1, 3), E(2, 3), E(4, 3), E(5, 3)}, 6, DOWNING_OTHERS, {2}, 1},
	{"records of a non-member are ignored", 0, {{"x@h", "n2@h"}, {"n3@h", "x@h"}}, 2, DOWNING_NONE, {0}, 0},
	{"everyone unheard by someone: no leader, nobody decides", 0,
	 {E(1, 2), E(2, 3), E(3, 4), E(4, 5), E(5, 1)}, 5, DOWNING_NONE, {0}, 0},
};

Test(downing, the_cases)
{
	for (size_t c = 0; c < SN_ARRAY_LEN(cases); c++) {
		const struct downing_case *k = &cases[c];
		size_t out[5], nout = 99;
		enum downing_verdict v = downing_decide(five, 5, k->decider, 4, k->edges, k->nedges, out, &nout);
		cr_assert_eq(v, k->verdict, "%s: verdict %d", k->name, v);
		cr_assert_eq(nout, k->ndown, "%s: %zu downed", k->name, nout);
		for (size_t d = 0; d < nout; d++)
			cr_assert_eq(out[d], k->down[d], "%s: #%zu is n%zu", k->name, d, out[d] + 1);
	}
}

Test(downing, a_cut_link_costs_one_member_whoever_leads)
{
	/* Every link of five members cut in turn, seen by every member: only
	 * the leader acts, it downs exactly one of the two ends, and never
	 * itself or a member outside the link. */
	for (size_t a = 0; a < 5; a++) {
		for (size_t b = a + 1; b < 5; b++) {
			struct downing_edge edges[] = {{five[a].node, five[b].node}, {five[b].node, five[a].node}};
			size_t acting = 0;
			for (size_t decider = 0; decider < 5; decider++) {
				size_t out[5], nout;
				enum downing_verdict v = downing_decide(five, 5, decider, 4, edges, 2, out, &nout);
				if (v == DOWNING_NONE)
					continue;
				acting++;
				cr_assert_eq(v, DOWNING_OTHERS);
				cr_assert_eq(nout, 1, "link n%zu-n%zu", a + 1, b + 1);
				cr_assert(out[0] == a || out[0] == b);
				cr_assert_neq(out[0], decider);
			}
			cr_assert_eq(acting, 1, "link n%zu-n%zu: one decider", a + 1, b + 1);
		}
	}
}

Test(downing, one_pair_left_of_a_lossy_member_downs_the_one_named_more_often)
{
	/* A lossy n3 whose records came and went with n1, n2 and n4; the
	 * view then holds one record each way between n3 and n5: the count
	 * and the reports tie, and age alone would down n5, the healthy one. */
	struct downing_member members[5];
	memcpy(members, five, sizeof members);
	struct downing_edge edges[] = {E(3, 5), E(5, 3)};
	size_t out[5], nout;
	members[2].times_named = 5;
	members[4].times_named = 2;
	cr_assert_eq(downing_decide(members, 5, 0, 4, edges, 2, out, &nout), DOWNING_OTHERS);
	cr_assert_eq(nout, 1);
	cr_assert_eq(out[0], 2, "n3 goes, not n%zu", out[0] + 1);
	/* The same history on a lasting cut link (each end named once): the
	 * younger goes, as without a history. */
	members[2].times_named = 1;
	members[4].times_named = 1;
	cr_assert_eq(downing_decide(members, 5, 0, 4, edges, 2, out, &nout), DOWNING_OTHERS);
	cr_assert_eq(out[0], 4);
	/* The history decides only a tie: a member named in more records
	 * left goes first whatever its past. */
	struct downing_edge more[] = {E(3, 5), E(5, 3), E(4, 5)};
	members[2].times_named = 50;
	cr_assert_eq(downing_decide(members, 5, 0, 4, more, 3, out, &nout), DOWNING_OTHERS);
	cr_assert_eq(out[0], 4);
}

Test(downing, the_leader_is_the_oldest_nobody_reports)
{
	cr_assert_eq(downing_leader(five, 5, NULL, 0), 0);
	struct downing_edge e1[] = {E(2, 1)};
	cr_assert_eq(downing_leader(five, 5, e1, 1), 1);
	struct downing_edge e2[] = {E(1, 2), E(3, 1)};
	cr_assert_eq(downing_leader(five, 5, e2, 2), 2, "n1 and n2 are both reported");
	struct downing_edge e3[] = {{"gone@h", "n1@h"}};
	cr_assert_eq(downing_leader(five, 5, e3, 1), 0, "a non-member's record does not count");
	/* Age is the up-number, not the name. */
	const struct downing_member m[] = {{"z@h", 1, 0}, {"a@h", 2, 0}};
	cr_assert_eq(downing_leader(m, 2, NULL, 0), 0);
	cr_assert_eq(downing_leader(m, 0, NULL, 0), -1);
}

Test(downing, a_tie_on_half_goes_to_the_lowest_name)
{
	/* Four members split two and two: the side with the lowest name wins. */
	const struct downing_member four[] = {{"n1@h", 1, 0}, {"n2@h", 2, 0}, {"n3@h", 3, 0}, {"n4@h", 4, 0}};
	struct downing_edge lowside[] = {E(1, 3), E(1, 4), E(2, 3), E(2, 4)};
	size_t out[4], nout;
	cr_assert_eq(downing_decide(four, 4, 0, 3, lowside, 4, out, &nout), DOWNING_OTHERS);
	cr_assert_eq(nout, 2);
	cr_assert_eq(out[0], 2);
	cr_assert_eq(out[1], 3);
	struct downing_edge highside[] = {E(3, 1), E(3, 2), E(4, 1), E(4, 2)};
	cr_assert_eq(downing_decide(four, 4, 2, 3, highside, 4, out, &nout), DOWNING_SELF);
	cr_assert_eq(nout, 0);
}

/* ---- twelve members, each watched by three (watch_ring.h) ---- */

#define TWELVE 12
#define WATCHERS 3

struct sparse_cluster {
	char names[TWELVE][32];
	struct downing_member members[TWELVE];
	struct watch_ring ring;
	struct downing_edge edges[TWELVE * TWELVE];
	size_t nedges;
};

static void sparse_cluster_init(struct sparse_cluster *c)
{
	const char *names[TWELVE];
	for (size_t i = 0; i < TWELVE; i++) {
		snprintf(c->names[i], sizeof c->names[i], "n%zu@h", i + 1);
		c->members[i] = (struct downing_member){c->names[i], (uint32_t)(i + 1), 0};
		names[i] = c->names[i];
	}
	cr_assert_eq(watch_ring_build(&c->ring, names, TWELVE), 0);
	c->nedges = 0;
}

/* The records observer o makes when it hears only the members for which
 * hears(o, s) is true: it walks the ring from itself, reporting each
 * member it cannot hear, until it has found WATCHERS it hears (a watcher
 * whose watched members go silent watches further, as membership does). */
static void watch_as_membership_does(struct sparse_cluster *c, size_t o, bool (*hears)(size_t, size_t))
{
	size_t heard = 0;
	for (size_t d = 1; d < TWELVE && heard < WATCHERS; d++) {
		size_t s = watch_ring_after(&c->ring, o, d);
		if (hears(o, s))
			heard++;
		else
			c->edges[c->nedges++] = (struct downing_edge){c->names[o], c->names[s]};
	}
}

static size_t crashed;
static bool all_but_the_crashed(size_t o, size_t s) { (void)o; return s != crashed; }

Test(downing, a_crash_among_sparse_watchers_is_downed_by_every_member)
{
	struct sparse_cluster c;
	sparse_cluster_init(&c);
	for (crashed = 0; crashed < TWELVE; crashed++) {
		c.nedges = 0;
		for (size_t o = 0; o < TWELVE; o++)
			if (o != crashed)
				watch_as_membership_does(&c, o, all_but_the_crashed);
		cr_assert_eq(c.nedges, WATCHERS, "only its watchers report n%zu", crashed + 1);
		for (size_t decider = 0; decider < TWELVE; decider++) {
			if (decider == crashed)
				continue;
			size_t out[TWELVE], nout;
			enum downing_verdict v =
				downing_decide(c.members, TWELVE, decider, WATCHERS, c.edges, c.nedges, out, &nout);
			cr_assert_eq(v, DOWNING_OTHERS, "n%zu on the crash of n%zu", decider + 1, crashed + 1);
			cr_assert_eq(nout, 1);
			cr_assert_eq(out[0], crashed);
		}
	}
	watch_ring_free(&c.ring);
}

/* A split: members 1, 4, 7 and 10 (index % 3 == 0) on one side. */
static bool side_of(size_t i) { return i % 3 == 0; }
static bool same_side(size_t o, size_t s) { return side_of(o) == side_of(s); }

Test(downing, a_split_among_sparse_watchers_goes_to_the_majority)
{
	struct sparse_cluster c;
	sparse_cluster_init(&c);
	for (size_t decider = 0; decider < TWELVE; decider++) {
		/* A side sees only its own records. */
		c.nedges = 0;
		for (size_t o = 0; o < TWELVE; o++)
			if (same_side(o, decider))
				watch_as_membership_does(&c, o, same_side);
		size_t out[TWELVE], nout;
		enum downing_verdict v = downing_decide(c.members, TWELVE, decider, WATCHERS, c.edges, c.nedges, out, &nout);
		if (side_of(decider)) {
			cr_assert_eq(v, DOWNING_SELF, "n%zu is on the side of four", decider + 1);
			continue;
		}
		cr_assert_eq(v, DOWNING_OTHERS, "n%zu is on the side of eight", decider + 1);
		cr_assert_eq(nout, 4, "n%zu downs the other side, %zu members", decider + 1, nout);
		for (size_t d = 0; d < nout; d++)
			cr_assert(side_of(out[d]));
	}
	watch_ring_free(&c.ring);
}

/* The oldest member deaf: it hears nobody and nobody hears it. */
static bool deaf_oldest(size_t o, size_t s) { return o != 0 && s != 0; }

Test(downing, a_deaf_member_that_reports_everyone_costs_only_itself)
{
	struct sparse_cluster c;
	sparse_cluster_init(&c);
	for (size_t o = 0; o < TWELVE; o++)
		watch_as_membership_does(&c, o, deaf_oldest);
	cr_assert_eq(c.nedges, (TWELVE - 1) + WATCHERS, "it reports all eleven; its three watchers report it");
	for (size_t decider = 0; decider < TWELVE; decider++) {
		size_t out[TWELVE], nout;
		enum downing_verdict v = downing_decide(c.members, TWELVE, decider, WATCHERS, c.edges, c.nedges, out, &nout);
		if (decider == 0) {
			cr_assert_eq(v, DOWNING_SELF, "the deaf one downs itself");
			continue;
		}
		cr_assert_eq(v, DOWNING_OTHERS, "n%zu: verdict %d", decider + 1, v);
		cr_assert_eq(nout, 1, "n%zu downs %zu", decider + 1, nout);
		cr_assert_eq(out[0], 0);
	}
	watch_ring_free(&c.ring);
}
