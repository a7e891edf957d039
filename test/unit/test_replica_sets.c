/*
 * test_replica_sets.c — the coordinator's choice of replicas for each
 * shard (replica_sets.h): spread evenly, never on the home's region nor
 * twice on one, as many as there are regions; a replica counts once its
 * filling is done; losing a region removes its replicas, promotes a
 * complete replica in place of a lost home, or makes the shard wait when
 * none is complete; epochs only grow; regions renumbered after a removal.
 */
#include <stdbool.h>
#include <stdint.h>

#include <criterion/criterion.h>

#include "replication/replica_sets.h"
#include "unit_helpers.h"

#define MAXS 32
#define MAXR 6

struct world {
	struct replica_set sets[MAXS];
	uint32_t nshards;
	bool takes[MAXR];
	struct replica_sets_view view;
	uint64_t epoch;
	struct replica_add adds[MAXS * REPLICA_SETS_MAX];
	struct replica_change changes[MAXS];
	size_t n;
};

/* nshards shards homed round robin over nregions regions, all taking
 * copies, no replicas yet. */
static void init(struct world *w, uint32_t nshards, size_t nregions)
{
	cr_assert_leq(nshards, MAXS);
	cr_assert_leq(nregions, MAXR);
	w->nshards = nshards;
	for (uint32_t s = 0; s < nshards; s++) {
		replica_set_init(&w->sets[s]);
		w->sets[s].home = (int32_t)(s % nregions);
	}
	for (size_t r = 0; r < MAXR; r++)
		w->takes[r] = r < nregions;
	w->view = (struct replica_sets_view){nregions, w->takes};
	w->epoch = 100;
	w->n = 0;
}

static void fill(struct world *w, uint32_t want)
{
	cr_assert_eq(replica_sets_fill(w->sets, w->nshards, &w->view, want, &w->epoch, w->adds, &w->n), 0);
}

static void lose(struct world *w, int32_t region)
{
	cr_assert_eq(replica_sets_region_lost(w->sets, w->nshards, region, &w->epoch, w->changes, &w->n), 0);
}

/* Copies (homes and replicas) on each region. */
static void copies(const struct world *w, uint32_t out[MAXR])
{
	for (size_t r = 0; r < MAXR; r++)
		out[r] = 0;
	for (uint32_t s = 0; s < w->nshards; s++) {
		if (w->sets[s].home >= 0)
			out[w->sets[s].home]++;
		for (uint8_t k = 0; k < w->sets[s].nreplicas; k++)
			out[w->sets[s].replica[k]]++;
	}
}

/* No region twice in a set, the home never among its replicas. */
static void assert_distinct(const struct world *w)
{
	for (uint32_t s = 0; s < w->nshards; s++) {
		const struct replica_set *set = &w->sets[s];
		for (uint8_t k = 0; k < set->nreplicas; k++) {
			cr_assert_neq(set->replica[k], set->home, "shard %u", s);
			for (uint8_t j = 0; j < k; j++)
				cr_assert_neq(set->replica[k], set->replica[j], "shard %u", s);
		}
	}
}

Test(replica_sets, an_empty_set)
{
	struct replica_set s;
	replica_set_init(&s);
	cr_assert_eq(s.home, -1);
	cr_assert_eq(s.nreplicas, 0);
	cr_assert_eq(s.epoch, 0);
	cr_assert_not(s.waiting);
	for (size_t k = 0; k < REPLICA_SETS_MAX; k++)
		cr_assert_eq(s.replica[k], -1);
}

Test(replica_sets, one_replica_each_spread_evenly_never_on_the_home)
{
	struct world w;
	init(&w, 12, 3);
	fill(&w, 1);
	cr_assert_eq(w.n, 12);
	assert_distinct(&w);
	uint32_t c[MAXR];
	copies(&w, c);
	for (size_t r = 0; r < 3; r++)
		cr_assert_eq(c[r], 8, "region %zu holds %u copies", r, c[r]);
	/* Each add is a replica being filled, under an epoch of its own that
	 * only grows; the shard's set carries it. */
	for (size_t k = 0; k < w.n; k++) {
		const struct replica_set *s = &w.sets[w.adds[k].shard];
		cr_assert_eq(s->nreplicas, 1);
		cr_assert_eq(s->replica[0], w.adds[k].region);
		cr_assert_not(s->complete[0]);
		cr_assert_eq(s->epoch, w.adds[k].epoch);
		cr_assert_eq(w.adds[k].epoch, 101 + k);
	}
	cr_assert_eq(w.epoch, 112);
}

Test(replica_sets, the_same_state_gives_the_same_choice)
{
	struct world a, b;
	init(&a, 10, 4);
	init(&b, 10, 4);
	fill(&a, 2);
	fill(&b, 2);
	cr_assert_eq(a.n, b.n);
	for (size_t k = 0; k < a.n; k++) {
		cr_assert_eq(a.adds[k].shard, b.adds[k].shard);
		cr_assert_eq(a.adds[k].region, b.adds[k].region);
	}
	/* Lowest shard first, to the region with the fewest copies: regions
	 * 0 and 1 home three shards, 2 and 3 two, so shard 0 (home 0) gets
	 * region 2 (the lower of the tie with 3) first. */
	cr_assert_eq(a.adds[0].shard, 0);
	cr_assert_eq(a.adds[0].region, 2);
}

Test(replica_sets, as_many_replicas_as_there_are_other_regions)
{
	struct world w;
	init(&w, 4, 2);
	fill(&w, 2);
	cr_assert_eq(w.n, 4, "two regions: one replica each, not two");
	for (uint32_t s = 0; s < 4; s++)
		cr_assert_eq(w.sets[s].nreplicas, 1);
	assert_distinct(&w);
	/* One region alone: none. */
	init(&w, 4, 1);
	fill(&w, 1);
	cr_assert_eq(w.n, 0);
	cr_assert_eq(w.epoch, 100, "no change, no epoch");
}

Test(replica_sets, filling_again_adds_nothing_and_regions_that_take_none_get_none)
{
	struct world w;
	init(&w, 6, 3);
	fill(&w, 1);
	fill(&w, 1);
	cr_assert_eq(w.n, 0);
	/* Region 2 stops taking copies: a larger set goes to 0 and 1 only. */
	init(&w, 6, 3);
	w.takes[2] = false;
	fill(&w, 2);
	for (size_t k = 0; k < w.n; k++)
		cr_assert_neq(w.adds[k].region, 2);
	assert_distinct(&w);
}

Test(replica_sets, shards_without_a_home_or_waiting_get_no_replica)
{
	struct world w;
	init(&w, 3, 3);
	w.sets[1].home = -1;
	w.sets[2].waiting = true;
	fill(&w, 1);
	cr_assert_eq(w.n, 1);
	cr_assert_eq(w.adds[0].shard, 0);
	cr_assert_eq(w.sets[1].nreplicas, 0);
	cr_assert_eq(w.sets[2].nreplicas, 0);
}

Test(replica_sets, more_replicas_than_the_most_is_refused)
{
	struct world w;
	init(&w, 2, 5);
	w.n = 7;
	cr_assert_eq(replica_sets_fill(w.sets, w.nshards, &w.view, REPLICA_SETS_MAX + 1, &w.epoch, w.adds, &w.n),
		     -EINVAL);
	cr_assert_eq(w.n, 0);
	cr_assert_eq(w.sets[0].nreplicas, 0);
}

Test(replica_sets, a_replica_counts_once_filled)
{
	struct world w;
	init(&w, 1, 3);
	fill(&w, 2);
	struct replica_set *s = &w.sets[0];
	uint64_t before = s->epoch;
	uint64_t e = replica_sets_completed(s, s->replica[1], &w.epoch);
	cr_assert_gt(e, before);
	cr_assert_eq(s->epoch, e);
	cr_assert(s->complete[1]);
	cr_assert_not(s->complete[0]);
	/* Again, or for a region not in the set: nothing. */
	cr_assert_eq(replica_sets_completed(s, s->replica[1], &w.epoch), 0);
	cr_assert_eq(replica_sets_completed(s, 5, &w.epoch), 0);
	cr_assert_eq(replica_sets_completed(s, s->home, &w.epoch), 0);
	cr_assert_eq(s->epoch, e);
}

Test(replica_sets, losing_a_replica_removes_it_and_fill_replaces_it)
{
	struct world w;
	init(&w, 6, 3);
	fill(&w, 1);
	for (uint32_t s = 0; s < 6; s++)
		(void)replica_sets_completed(&w.sets[s], w.sets[s].replica[0], &w.epoch);
	uint64_t before = w.epoch;
	lose(&w, 2);
	/* Region 2 homed shards 2 and 5 and was a replica of two others. */
	size_t replicas = 0, promoted = 0;
	for (size_t k = 0; k < w.n; k++) {
		cr_assert_gt(w.changes[k].epoch, before);
		cr_assert_eq(w.sets[w.changes[k].shard].epoch, w.changes[k].epoch);
		replicas += w.changes[k].what == REPLICA_LOSS_REPLICA;
		promoted += w.changes[k].what == REPLICA_LOSS_PROMOTED;
	}
	cr_assert_eq(replicas, 2);
	cr_assert_eq(promoted, 2);
	for (uint32_t s = 0; s < 6; s++) {
		cr_assert_neq(w.sets[s].home, 2);
		for (uint8_t k = 0; k < w.sets[s].nreplicas; k++)
			cr_assert_neq(w.sets[s].replica[k], 2);
	}
	/* Fill gives the shards that lost a copy a new one, on 0 or 1. */
	w.takes[2] = false;
	fill(&w, 1);
	cr_assert_eq(w.n, 4);
	for (uint32_t s = 0; s < 6; s++)
		cr_assert_eq(w.sets[s].nreplicas, 1);
	assert_distinct(&w);
}

Test(replica_sets, a_lost_home_is_replaced_by_a_complete_replica_the_least_loaded)
{
	struct world w;
	init(&w, 4, 4);
	/* Shard 0: home 0, replicas 1 and 2, both complete; region 1 already
	 * homes shard 1, region 2 homes shard 2: a tie, to the lower. Make
	 * region 1 home one more so region 2 wins. */
	w.sets[3].home = 1;
	struct replica_set *s = &w.sets[0];
	s->replica[0] = 1;
	s->replica[1] = 2;
	s->complete[0] = s->complete[1] = true;
	s->nreplicas = 2;
	lose(&w, 0);
	cr_assert_eq(w.n, 1);
	cr_assert_eq(w.changes[0].shard, 0);
	cr_assert_eq(w.changes[0].what, REPLICA_LOSS_PROMOTED);
	cr_assert_eq(w.changes[0].home, 2);
	cr_assert_eq(s->home, 2);
	cr_assert_eq(s->nreplicas, 1);
	cr_assert_eq(s->replica[0], 1, "the other replica stays");
	cr_assert(s->complete[0]);
}

Test(replica_sets, a_replica_still_filling_is_never_promoted)
{
	struct world w;
	init(&w, 1, 3);
	struct replica_set *s = &w.sets[0];
	s->replica[0] = 1;
	s->replica[1] = 2;
	s->complete[1] = true;
	s->nreplicas = 2;
	lose(&w, 0);
	cr_assert_eq(s->home, 2, "the complete one, though region 1 is the lower");
	cr_assert_eq(s->replica[0], 1);
	cr_assert_not(s->complete[0]);
}

Test(replica_sets, without_a_complete_copy_the_shard_waits_and_is_never_started_empty)
{
	struct world w;
	init(&w, 3, 3);
	fill(&w, 1); /* filling, none complete */
	lose(&w, 0);
	/* Region 0 homed shard 0 and was the replica of shards 1 and 2 (the
	 * fewest copies, ties to the lowest). */
	cr_assert_eq(w.n, 3);
	const struct replica_set *s = &w.sets[0];
	cr_assert(s->waiting);
	cr_assert_eq(s->home, 0, "its last home stays recorded");
	cr_assert_eq(s->nreplicas, 0, "partial copies are of no use");
	bool saw = false;
	for (size_t k = 0; k < w.n; k++)
		if (w.changes[k].shard == 0) {
			cr_assert_eq(w.changes[k].what, REPLICA_LOSS_WAITING);
			cr_assert_eq(w.changes[k].home, 0);
			saw = true;
		}
	cr_assert(saw);
	/* Nothing gives it replicas or touches it while it waits. */
	uint64_t e = s->epoch;
	w.takes[0] = false;
	fill(&w, 1);
	for (size_t k = 0; k < w.n; k++)
		cr_assert_neq(w.adds[k].shard, 0);
	lose(&w, 1);
	cr_assert_eq(s->epoch, e);
	cr_assert(s->waiting);
}

Test(replica_sets, epochs_only_grow_over_every_change)
{
	struct world w;
	init(&w, 8, 4);
	uint64_t last = w.epoch;
	fill(&w, 2);
	for (size_t k = 0; k < w.n; k++) {
		cr_assert_gt(w.adds[k].epoch, last);
		last = w.adds[k].epoch;
	}
	for (uint32_t s = 0; s < 8; s++) {
		uint64_t e = replica_sets_completed(&w.sets[s], w.sets[s].replica[0], &w.epoch);
		cr_assert_gt(e, last);
		last = e;
	}
	lose(&w, 3);
	for (size_t k = 0; k < w.n; k++) {
		cr_assert_gt(w.changes[k].epoch, last);
		last = w.changes[k].epoch;
	}
}

Test(replica_sets, renumbering_after_a_removal)
{
	struct world w;
	init(&w, 3, 4);
	w.sets[0].home = 3;
	w.sets[0].replica[0] = 1;
	w.sets[0].replica[1] = 0;
	w.sets[0].nreplicas = 2;
	w.sets[1].home = 2;
	w.sets[1].waiting = true;
	w.sets[2].home = 0;
	replica_sets_renumber(w.sets, w.nshards, 2);
	cr_assert_eq(w.sets[0].home, 2);
	cr_assert_eq(w.sets[0].replica[0], 1);
	cr_assert_eq(w.sets[0].replica[1], 0);
	cr_assert_eq(w.sets[1].home, -1, "waiting for a region that is gone");
	cr_assert(w.sets[1].waiting);
	cr_assert_eq(w.sets[2].home, 0);
}

/* ---- a new coordinator's sets from the regions' reports ---- */

#define REPORT(sh, reg, is_home, done, ep) \
	((struct replica_report){.shard = (sh), .region = (reg), .home = (is_home), .complete = (done), .epoch = (ep), .set_home = -1})

Test(replica_sets, rebuilt_from_the_reports_of_the_highest_epoch)
{
	struct world w;
	init(&w, 3, 4);
	for (uint32_t s = 0; s < 3; s++)
		replica_set_init(&w.sets[s]);
	w.epoch = 1;
	const struct replica_report r[] = {
		/* shard 0: home 2 with replicas 3 (complete) and 0 (filling) at
		 * epoch 40; region 1 was its home at 30, before a move. */
		REPORT(0, 1, true, true, 30),
		REPORT(0, 3, false, true, 40),
		REPORT(0, 2, true, true, 40),
		REPORT(0, 0, false, false, 40),
		/* shard 1: home 1 alone at 7. */
		REPORT(1, 1, true, true, 7),
	};
	cr_assert_eq(replica_sets_rebuild(w.sets, w.nshards, r, SN_ARRAY_LEN(r), &w.epoch), 2);
	const struct replica_set *s0 = &w.sets[0];
	cr_assert_eq(s0->home, 2, "the home of the highest epoch, not the older one");
	cr_assert_eq(s0->epoch, 40);
	cr_assert_eq(s0->nreplicas, 2);
	cr_assert_eq(s0->replica[0], 0, "lowest region first");
	cr_assert_not(s0->complete[0]);
	cr_assert_eq(s0->replica[1], 3);
	cr_assert(s0->complete[1]);
	cr_assert_eq(w.sets[1].home, 1);
	cr_assert_eq(w.sets[1].epoch, 7);
	cr_assert_eq(w.sets[2].home, -1, "nobody reported it: left as it was");
	cr_assert_eq(w.epoch, 40, "the counter goes on above every reported epoch");
}

Test(replica_sets, rebuilt_without_its_home_a_complete_replica_is_promoted)
{
	struct world w;
	init(&w, 1, 4);
	w.epoch = 50;
	const struct replica_report r[] = {
		REPORT(0, 3, false, true, 60),
		REPORT(0, 1, false, false, 60),
		REPORT(0, 2, false, true, 60),
	};
	cr_assert_eq(replica_sets_rebuild(w.sets, w.nshards, r, SN_ARRAY_LEN(r), &w.epoch), 1);
	const struct replica_set *s = &w.sets[0];
	cr_assert_eq(s->home, 2, "the complete replica in the lowest region, not the filling one");
	cr_assert_eq(s->epoch, 61, "a promotion takes a new epoch");
	cr_assert_eq(w.epoch, 61);
	cr_assert_eq(s->nreplicas, 2);
	cr_assert_eq(s->replica[0], 1);
	cr_assert_eq(s->replica[1], 3);
	cr_assert_not(s->waiting);
}

Test(replica_sets, rebuilt_with_no_complete_copy_the_shard_waits)
{
	struct world w;
	init(&w, 1, 3);
	const struct replica_report r[] = {
		REPORT(0, 1, false, false, 9),
		/* A full copy, but of an older epoch: it may miss writes. */
		REPORT(0, 2, true, true, 8),
	};
	cr_assert_eq(replica_sets_rebuild(w.sets, w.nshards, r, SN_ARRAY_LEN(r), &w.epoch), 1);
	const struct replica_set *s = &w.sets[0];
	cr_assert(s->waiting);
	cr_assert_eq(s->home, -1);
	cr_assert_eq(s->nreplicas, 0);
	cr_assert_eq(s->epoch, 9);
	/* Nothing fills it while it waits. */
	fill(&w, 1);
	cr_assert_eq(w.n, 0);
}

Test(replica_sets, rebuilt_the_same_whatever_the_order_of_the_reports)
{
	const struct replica_report fwd[] = {
		REPORT(0, 0, true, true, 5), REPORT(0, 1, false, true, 5), REPORT(0, 2, false, false, 5),
		REPORT(1, 2, true, true, 3), REPORT(1, 0, false, true, 3),
	};
	struct replica_report rev[SN_ARRAY_LEN(fwd)];
	for (size_t k = 0; k < SN_ARRAY_LEN(fwd); k++)
		rev[k] = fwd[SN_ARRAY_LEN(fwd) - 1 - k];
	struct world a, b;
	init(&a, 2, 3);
	init(&b, 2, 3);
	(void)replica_sets_rebuild(a.sets, a.nshards, fwd, SN_ARRAY_LEN(fwd), &a.epoch);
	(void)replica_sets_rebuild(b.sets, b.nshards, rev, SN_ARRAY_LEN(rev), &b.epoch);
	for (uint32_t s = 0; s < 2; s++) {
		cr_assert_eq(a.sets[s].home, b.sets[s].home);
		cr_assert_eq(a.sets[s].epoch, b.sets[s].epoch);
		cr_assert_eq(a.sets[s].nreplicas, b.sets[s].nreplicas);
		for (uint8_t k = 0; k < a.sets[s].nreplicas; k++) {
			cr_assert_eq(a.sets[s].replica[k], b.sets[s].replica[k]);
			cr_assert_eq(a.sets[s].complete[k], b.sets[s].complete[k]);
		}
	}
}

#define NONE_REPORT(sh, reg, ep) \
	((struct replica_report){.shard = (sh), .region = (reg), .none = true, .epoch = (ep), .set_home = -1})

Test(replica_sets, a_region_with_no_copy_tells_how_new_the_last_set_is)
{
	struct world w;
	init(&w, 1, 3);
	w.epoch = 0;
	/* Region 2 heard of a set of epoch 9 that does not name it: the
	 * complete copy of epoch 7 may miss that set's writes. */
	const struct replica_report r[] = {
		REPORT(0, 1, false, true, 7),
		NONE_REPORT(0, 2, 9),
	};
	cr_assert_eq(replica_sets_rebuild(w.sets, w.nshards, r, SN_ARRAY_LEN(r), &w.epoch), 1);
	const struct replica_set *s = &w.sets[0];
	cr_assert(s->waiting);
	cr_assert_eq(s->wait_epoch, 9);
	cr_assert_eq(s->nreplicas, 0, "a region without a copy is no replica");
	cr_assert_eq(w.epoch, 9);
}

Test(replica_sets, a_waiting_shard_takes_a_copy_of_its_last_set_back)
{
	struct world w;
	init(&w, 1, 3);
	w.epoch = 0;
	const struct replica_report r[] = {NONE_REPORT(0, 0, 9)};
	replica_sets_rebuild(w.sets, w.nshards, r, SN_ARRAY_LEN(r), &w.epoch);
	struct replica_set *s = &w.sets[0];
	cr_assert(s->waiting);
	const struct replica_report older = REPORT(0, 1, false, true, 8);
	const struct replica_report filling = REPORT(0, 1, false, false, 9);
	const struct replica_report none = NONE_REPORT(0, 1, 12);
	cr_assert_not(replica_sets_copy_returned(s, 1, &older, &w.epoch), "an older copy may miss writes");
	cr_assert_not(replica_sets_copy_returned(s, 1, &filling, &w.epoch), "a copy being filled holds too little");
	cr_assert_not(replica_sets_copy_returned(s, 1, &none, &w.epoch));
	cr_assert(s->waiting);
	const struct replica_report back = REPORT(0, 2, true, true, 9);
	cr_assert(replica_sets_copy_returned(s, 2, &back, &w.epoch));
	cr_assert_not(s->waiting);
	cr_assert_eq(s->home, 2);
	cr_assert_eq(s->epoch, 10, "under a new epoch");
	cr_assert_not(replica_sets_copy_returned(s, 1, &back, &w.epoch), "only a waiting shard");
}

Test(replica_sets, a_lost_home_is_waited_for_at_its_own_epoch)
{
	struct world w;
	init(&w, 1, 3);
	w.sets[0].home = 0;
	w.sets[0].epoch = w.epoch = 5;
	lose(&w, 0);
	struct replica_set *s = &w.sets[0];
	cr_assert(s->waiting);
	cr_assert_eq(s->wait_epoch, 5, "the copy its home had");
	cr_assert_gt(s->epoch, 5);
	const struct replica_report home_back = REPORT(0, 0, true, true, 5);
	cr_assert(replica_sets_copy_returned(s, 0, &home_back, &w.epoch));
	cr_assert_eq(s->home, 0);
}

/* A coordinator active for a moment (two members each counting itself the
 * oldest) told a set at epoch 12 — home region 2, region 1 a new replica —
 * and only region 1 took it. Region 2, the home it names, reports the
 * shard at 11: it never took the set, so nothing was written under it,
 * and the shard continues on its copies of 11 instead of waiting for good. */
Test(replica_sets, a_set_its_home_never_took_does_not_make_the_shard_wait)
{
	struct world w;
	init(&w, 2, 3);
	struct replica_report filling = REPORT(0, 1, false, false, 12), absent = NONE_REPORT(1, 1, 12);
	filling.set_home = 2;
	absent.set_home = 2;
	const struct replica_report r[] = {
		REPORT(0, 0, true, true, 11), REPORT(0, 2, false, true, 11), filling,
		REPORT(1, 0, true, true, 11), absent, /* region 2 holds nothing of shard 1 */
	};
	cr_assert_eq(replica_sets_rebuild(w.sets, w.nshards, r, SN_ARRAY_LEN(r), &w.epoch), 2);
	for (uint32_t sh = 0; sh < 2; sh++) {
		cr_assert_not(w.sets[sh].waiting, "shard %u", sh);
		cr_assert_eq(w.sets[sh].home, 0, "shard %u", sh);
		cr_assert_eq(w.sets[sh].epoch, 11, "shard %u", sh);
	}
	cr_assert_eq(w.sets[0].nreplicas, 1, "the half-filled copy of 12 is no replica of 11");
	cr_assert_eq(w.sets[0].replica[0], 2);
	cr_assert_geq(w.epoch, 12, "the next set is newer than the one never taken");
}

/* The same reports, but the home named took the set (it reports 12), or
 * named no home, or a home that did not report (-1): the shard waits, as a
 * copy of the newest set may hold writes nobody else has. */
Test(replica_sets, a_set_its_home_took_still_makes_the_shard_wait)
{
	for (int k = 0; k < 2; k++) {
		struct world w;
		init(&w, 1, 3);
		struct replica_report filling = REPORT(0, 1, false, false, 12);
		filling.set_home = k == 0 ? 2 : -1;
		const struct replica_report r[] = {
			REPORT(0, 0, true, true, 11),
			k == 0 ? NONE_REPORT(0, 2, 12) : REPORT(0, 2, false, true, 11),
			filling,
		};
		cr_assert_eq(replica_sets_rebuild(w.sets, w.nshards, r, SN_ARRAY_LEN(r), &w.epoch), 1);
		cr_assert(w.sets[0].waiting, "case %d", k);
		cr_assert_eq(w.sets[0].epoch, 12, "case %d", k);
	}
}

